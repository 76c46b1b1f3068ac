//! What a shaper guarantees a flow at best: the token buckets its packets pass and the
//! least delay they are given ([`super::Qdisc::shaping`]). Nothing here runs in the
//! simulation; it gives the ideal completion time of a short flow (`web.slowdown_*`) on
//! a path whose only rate is a qdisc's (veth and tun have no line rate): at most
//! `depth + t` of tokens can be spent in any `t` after an idle start, whatever the
//! traffic, so a flow's packets cannot all have left sooner than their cost minus the
//! depth.
//!
//! Each shaper charges a packet as its own kernel code does:
//! - tbf (`tbf_dequeue()`) and htb (`htb_charge_class()`): `psched_l2t_ns()` of the
//!   packet's `qdisc_pkt_len()` with the class's `overhead`, `mpu` and `linklayer`;
//! - cake (`cake_advance_shaper()`): `len * rate_ns >> rate_shft` of the length
//!   `cake_overhead()` adjusts;
//! - netem (`netem_enqueue()`'s `packet_time_ns()`): with its packet and cell overheads.

use super::tbf::PschedRatecfg;
use crate::netem::NetemRate;

/// A packet's cost in a bucket, ns, by the shaper's own arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketCost {
    /// tbf's and htb's `psched_l2t_ns()`.
    Psched(PschedRatecfg),
    /// cake's global shaper.
    Cake(CakeCost),
    /// netem's `rate`.
    Netem(NetemRate),
}

impl PacketCost {
    /// What a packet of `len` bytes (`qdisc_pkt_len()`) costs, ns.
    pub fn ns(&self, len: u32) -> u64 {
        match self {
            PacketCost::Psched(r) => r.l2t_ns(len),
            PacketCost::Cake(c) => c.ns(len),
            PacketCost::Netem(r) => r.packet_time_ns(len as u64),
        }
    }
}

/// cake's shaper rate and length adjustment (`q->rate_ns`, `q->rate_shft`,
/// `cake_calc_overhead()`'s parameters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CakeCost {
    pub rate_ns: u64,
    pub rate_shft: u32,
    pub overhead_flag: bool,
    pub rate_overhead: i32,
    pub rate_mpu: u32,
    pub atm_mode: super::cake::AtmMode,
}

impl CakeCost {
    /// `cake_advance_shaper()`'s global duration of a packet of `len` bytes.
    pub fn ns(&self, len: u32) -> u64 {
        let (_, adj) = super::cake::cake_calc_len(len, self.overhead_flag, self.rate_overhead, self.rate_mpu, self.atm_mode);
        (adj as u64).wrapping_mul(self.rate_ns) >> self.rate_shft
    }
}

/// One token bucket: `depth_ns` of credit after an idle time, refilled one ns per ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenBucket {
    pub cost: PacketCost,
    pub depth_ns: u64,
    /// Whether a packet leaves while the bucket holds any credit, its own cost taken
    /// after (htb's `htb_class_mode()` tests the tokens before `htb_charge_class()`;
    /// cake sends at `time_next_packet` and then advances it), rather than only once
    /// the bucket holds its cost (tbf, netem's rate).
    pub overdraw: bool,
}

impl TokenBucket {
    /// The earliest time after an idle start at which the last of `n` packets of `len`
    /// bytes and then one of `last` bytes can leave, ns (0 when the depth covers them).
    pub fn min_time_ns(&self, n: u64, len: u32, last: u32) -> u64 {
        let last_cost = if self.overdraw { 0 } else { self.cost.ns(last) };
        let cost = (n as u128 * self.cost.ns(len) as u128 + last_cost as u128).min(u64::MAX as u128) as u64;
        cost.saturating_sub(self.depth_ns)
    }
}

/// What a qdisc (and its children) hold one class of packets to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shaping {
    /// Every bucket the packets pass, in the order they pass them.
    pub buckets: Vec<TokenBucket>,
    /// The least delay the qdisc adds to each packet, ns (netem's `delay` less its
    /// jitter's reach).
    pub min_delay_ns: u64,
}

impl Shaping {
    /// This shaping followed by `inner`'s (a child qdisc's).
    pub fn then(mut self, inner: Shaping) -> Shaping {
        self.buckets.extend(inner.buckets);
        self.min_delay_ns += inner.min_delay_ns;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::tbf::LinkLayer;

    /// 20 Mbit/s is 2,500,000 bytes/s: a 1514-byte frame costs 605,600 ns.
    #[test]
    fn a_bucket_lets_its_depth_go_ahead_of_the_rate() {
        let rate = PschedRatecfg::precompute(2_500_000, 0, 0, LinkLayer::Ethernet);
        assert_eq!(rate.l2t_ns(1514), 605_600);
        let b = TokenBucket { cost: PacketCost::Psched(rate), depth_ns: 1_000_000, overdraw: false };
        // tbf: ten frames cost 6,056,000 ns, one ms of it in the bucket.
        assert_eq!(b.min_time_ns(9, 1514, 1514), 5_056_000);
        // htb: the last frame leaves on credit.
        assert_eq!(TokenBucket { overdraw: true, ..b }.min_time_ns(9, 1514, 1514), 4_450_400);
        // A flow the bucket holds leaves at once.
        assert_eq!(b.min_time_ns(0, 1514, 1000), 0);
    }
}
