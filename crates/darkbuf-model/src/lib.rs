//! The Linux transmit path's algorithms, one kernel file per module.
//!
//! Nothing here owns a clock or does I/O: every function takes the current time
//! (nanoseconds, or jiffies where the kernel uses jiffies) from its caller, so the
//! simulator can drive it deterministically and unit tests can drive it by hand.
//!
//! | module | mirrors |
//! |---|---|
//! | [`dql`] | lib/dynamic_queue_limits.c, include/linux/dynamic_queue_limits.h |
//! | [`ptr_ring`] | include/linux/ptr_ring.h |
//! | [`txq`] | the `netdev_queue` state bits and BQL hooks of include/linux/netdevice.h |
//! | [`qdisc`] | net/sched/sch_*.c |
//! | [`dim`] | lib/dim/net_dim.c (mlx5e's adaptive TX moderation) |
//! | [`igb_itr`] | igb's dynamic ITR (`igb_update_ring_itr()`) |
//! | [`netem`] | net/sched/sch_netem.c's `tabledist()` and `get_crandom()`; iproute2's netem/*.c tables |
//! | [`mac80211`] | net/mac80211/tx.c, sta_info.c, airtime.c; include/net/fq_impl.h |
//! | [`jiffies`] | include/linux/jiffies.h conversions, kernel/time/timer.c's wheel rounding |

pub mod dim;
pub mod dql;
pub mod igb_itr;
pub mod jiffies;
pub mod mac80211;
pub mod netem;
pub mod params;
pub mod ptr_ring;
pub mod qdisc;
pub mod skb;
pub mod txq;
pub mod units;

pub use skb::Skb;
