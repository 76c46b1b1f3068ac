//! mac80211's transmit queueing (net/mac80211/, include/net/fq*.h): the shared flow
//! queue with CoDel per flow ([`fq`]), the airtime-fair TXQ scheduler with Airtime
//! Queue Limits ([`sched`]) and the airtime of 802.11 exchanges ([`airtime`]).

pub mod airtime;
pub mod fq;
pub mod sched;

/// `ieee80211_ac_from_tid()`: TID -> AC in mac80211's order (VO 0, VI 1, BE 2, BK 3).
pub fn ac_from_tid(tid: u8) -> usize {
    [2, 3, 3, 2, 1, 1, 0, 0][(tid & 7) as usize]
}

/// The TID of an skb's priority (`skb->priority & 7`, as `ieee80211_select_queue()`
/// leaves it after `cfg80211_classify8021d()` with no DSCP: priority 0 -> TID 0).
pub fn tid_from_priority(priority: u32) -> u8 {
    (priority & 7) as u8
}
