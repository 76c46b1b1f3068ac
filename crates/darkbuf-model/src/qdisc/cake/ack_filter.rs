//! cake's ACK filter: mirrors `cake_ack_filter()`, `cake_tcph_may_drop()`,
//! `cake_tcph_sack_compare()` and `cake_tcph_get_tstamp()` in net/sched/sch_cake.c.
//!
//! When an ACK is queued at the tail of a flow queue, an older pure ACK of the same
//! connection that it makes redundant is taken out of the queue and dropped (counted
//! in the tin's `ack_drops`). `ack-filter` drops one only when it finds two such ACKs
//! (and drops the one nearest the head); `ack-filter-aggressive` also drops a single
//! one when it sits right before the new ACK with the same ECE/CWR bits.
//!
//! The model's packets carry a [`TcpHdr`] instead of the wire header: a connection is
//! identified by `Skb::flow` (the 5-tuple the kernel compares), and the options are
//! timestamps and SACK blocks only (a Linux ACK carries no other; MSS, window scale
//! and SACK-permitted ride on SYNs, which the filter never drops).

use super::{Cake, PktNode, NIL};
use crate::skb::TcpHdr;

/// `q->ack_filter`: `CAKE_ACK_NONE`, `CAKE_ACK_FILTER`, `CAKE_ACK_AGGRESSIVE`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AckFilter {
    #[default]
    None,
    Filter,
    Aggressive,
}

impl AckFilter {
    /// tc's keyword.
    pub fn name(self) -> &'static str {
        match self {
            AckFilter::None => "no-ack-filter",
            AckFilter::Filter => "ack-filter",
            AckFilter::Aggressive => "ack-filter-aggressive",
        }
    }
}

/// `before()` on 32-bit sequence numbers.
fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// `after()`.
fn after(a: u32, b: u32) -> bool {
    before(b, a)
}

/// The flags `cake_tcph_may_drop()` requires clear: all but ACK and ECE/CWR (the
/// reserved bits of the flag word are never set in the model).
const NOT_DROPPABLE: u8 = TcpHdr::FIN | TcpHdr::SYN | TcpHdr::RST | TcpHdr::PSH | TcpHdr::URG;

/// `cake_tcph_may_drop()`: a pure ACK (ACK set, FIN/SYN/RST/PSH/URG clear) whose
/// options are all droppable and whose timestamps are not newer than the triggering
/// ACK's (`tsval_new`, `tsecr_new`; 0 when it has none).
pub fn cake_tcph_may_drop(h: &TcpHdr, tsval_new: u32, tsecr_new: u32) -> bool {
    if h.flags & (NOT_DROPPABLE | TcpHdr::ACK) != TcpHdr::ACK {
        return false;
    }
    !(h.has_ts && (after(h.tsval, tsval_new) || after(h.tsecr, tsecr_new)))
}

/// `cake_tcph_sack_compare()`: -1 when `a` SACKs something `b` does not (or carries a
/// D-SACK, a block below its own cumulative ACK), 1 when `b` SACKs everything `a` does
/// and more bytes, 0 when they SACK the same.
pub fn cake_tcph_sack_compare(a: &TcpHdr, b: &TcpHdr) -> i32 {
    let (sa, sb) = (a.sacks(), b.sacks());
    match (sa.is_empty(), sb.is_empty()) {
        (false, true) => return -1,
        (true, false) => return 1,
        (true, true) => return 0,
        (false, false) => {}
    }
    let (mut bytes_a, mut bytes_b) = (0u32, 0u32);
    let mut first = true;
    for &(start_a, end_a) in sa {
        // DSACK; always considered greater to prevent dropping.
        if before(start_a, a.ack_seq) {
            return -1;
        }
        bytes_a = bytes_a.wrapping_add(end_a.wrapping_sub(start_a));
        let mut found = false;
        for &(start_b, end_b) in sb {
            // First time through, count b's total.
            if first {
                bytes_b = bytes_b.wrapping_add(end_b.wrapping_sub(start_b));
            }
            if !after(start_b, start_a) && !before(end_b, end_a) {
                found = true;
                if !first {
                    break;
                }
            }
        }
        if !found {
            return -1;
        }
        first = false;
    }
    // Every range a SACKs is covered by b: equal, or b SACKs more.
    i32::from(bytes_b > bytes_a)
}

impl Cake {
    /// `cake_ack_filter()`: after `flow_queue_add()` put an skb at the tail of queue
    /// `idx` of tin `tin`, the older ACK it makes redundant, unlinked from the queue
    /// (its slab node freed), or `None`.
    pub(super) fn cake_ack_filter(&mut self, tin: usize, idx: usize) -> Option<PktNode> {
        let aggressive = self.cfg.ack_filter == AckFilter::Aggressive;
        let flow = &self.tins[tin].flows[idx];
        // No other possible ACKs to filter.
        if flow.head == flow.tail {
            return None;
        }
        let (head, tail) = (flow.head, flow.tail);
        let skb = self.pkts[tail as usize].skb;
        let tcph = skb.tcp;
        if tcph.flags == 0 {
            return None;
        }
        let (tsval, tsecr) = if tcph.has_ts { (tcph.tsval, tcph.tsecr) } else { (0, 0) };
        // The triggering packet need only have ACK set, and not SYN.
        if tcph.flags & (TcpHdr::ACK | TcpHdr::SYN) != TcpHdr::ACK {
            return None;
        }
        const ECN_FLAGS: u8 = TcpHdr::ECE | TcpHdr::CWR;
        let (mut elig, mut elig_prev, mut elig_flags) = (NIL, NIL, 0u8);
        let mut num_found = 0i32;
        let (mut prev, mut cur) = (NIL, head);
        let mut found = false;
        while cur != NIL && cur != tail {
            let check = &self.pkts[cur as usize];
            let (c, next) = (check.skb.tcp, check.next);
            // Only TCP packets of the same connection.
            if c.flags != 0 && check.skb.flow == skb.flow {
                // ECE/CWR changed since the eligible ACK: dropping it would lose them.
                if elig != NIL && c.flags & ECN_FLAGS != elig_flags {
                    elig = NIL;
                    elig_prev = NIL;
                    num_found -= 1;
                }
                let eligible = cake_tcph_may_drop(&c, tsval, tsecr) && !c.data && !after(c.ack_seq, tcph.ack_seq) && {
                    let sack_comp = cake_tcph_sack_compare(&c, &tcph);
                    !(sack_comp < 0 || (c.ack_seq == tcph.ack_seq && sack_comp == 0))
                };
                if eligible {
                    // Keep the one nearest the head; the second one found decides.
                    if elig == NIL {
                        elig = cur;
                        elig_prev = prev;
                        elig_flags = c.flags & ECN_FLAGS;
                    }
                    num_found += 1;
                    if num_found > 1 {
                        found = true;
                        break;
                    }
                }
            }
            prev = cur;
            cur = next;
        }
        // One eligible ACK: aggressive mode drops it if it is right before the new
        // one with the same ECE/CWR.
        if !found
            && !(elig != NIL && aggressive && self.pkts[elig as usize].next == tail && elig_flags == tcph.flags & ECN_FLAGS)
        {
            return None;
        }
        let next = self.pkts[elig as usize].next;
        if elig_prev != NIL {
            self.pkts[elig_prev as usize].next = next;
        } else {
            self.tins[tin].flows[idx].head = next;
        }
        let node = self.pkts[elig as usize];
        self.pkts[elig as usize].next = self.free;
        self.free = elig;
        Some(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{ParamValue, Params};
    use crate::qdisc::{DevInfo, Qdisc};
    use crate::Skb;

    /// Unlimited cake with one queue for everything (`flowblind`), so a packet of
    /// another connection can sit between two ACKs.
    fn cake(mode: &str) -> Cake {
        let p = Params::from_pairs(&[("ack_filter", ParamValue::Str(mode.into())), ("flow_mode", ParamValue::Str("flowblind".into()))]);
        Cake::from_params(p, &DevInfo::default()).unwrap()
    }

    /// A pure ACK of connection 7 (66 bytes: Ethernet, IP, TCP with timestamps).
    fn ack(id: u32, ack_seq: u32) -> Skb {
        let tcp = TcpHdr { flags: TcpHdr::ACK, has_ts: true, ack_seq, tsval: 100, tsecr: 5, ..TcpHdr::default() };
        Skb { id, flow: 7, len: 66, truesize: 834, tcp, ..Skb::default() }
    }

    fn with_sacks(mut s: Skb, blocks: &[(u32, u32)]) -> Skb {
        s.tcp.n_sacks = blocks.len() as u8;
        s.tcp.sacks[..blocks.len()].copy_from_slice(blocks);
        s
    }

    /// Enqueues `pkts` in order; the ids the filter dropped, in order.
    fn run(q: &mut Cake, pkts: &[Skb]) -> Vec<u32> {
        let mut drops = Vec::new();
        for &p in pkts {
            q.enqueue(p, 1_000, &mut drops);
        }
        drops
    }

    /// `ack-filter` waits for two redundant ACKs and drops the one nearest the head:
    /// nothing at ACK 2, ACK 1 at ACK 3, ACK 2 at ACK 4.
    #[test]
    fn filter_drops_the_oldest_of_two_redundant_acks() {
        let mut q = cake("ack-filter");
        assert_eq!(run(&mut q, &[ack(1, 1000), ack(2, 2000)]), Vec::<u32>::new());
        assert_eq!(run(&mut q, &[ack(3, 3000)]), [1]);
        assert_eq!(run(&mut q, &[ack(4, 4000)]), [2]);
        assert_eq!((q.qlen(), q.backlog(), q.stats().drops), (2, 132, 2));
        let x: std::collections::BTreeMap<_, _> = q.xstats().into_iter().collect();
        // diffserv3: tin1 is Best Effort, where DSCP 0 goes. `sent` counts all four.
        assert_eq!((x["ack_drops"], x["tin1_ack_drops"], x["tin1_sent_packets"], x["tin1_sent_bytes"]), (2, 2, 4, 264));
        assert_eq!(q.buffer_used, 2 * 834);
        assert!(q.tc_options().contains(" ack-filter split-gso"), "{}", q.tc_options());
    }

    /// `ack-filter-aggressive` drops a single redundant ACK right before the new one.
    #[test]
    fn aggressive_drops_the_ack_just_before() {
        let mut q = cake("ack-filter-aggressive");
        assert_eq!(run(&mut q, &[ack(1, 1000), ack(2, 2000), ack(3, 3000)]), [1, 2]);
        assert_eq!(q.qlen(), 1);
        assert!(q.tc_options().contains(" ack-filter-aggressive "), "{}", q.tc_options());
    }

    /// Aggressive mode needs the ACKs adjacent: another connection's packet between
    /// them saves the old one; the conservative filter then needs a second one.
    #[test]
    fn a_packet_between_keeps_the_single_ack() {
        let other = Skb { id: 9, flow: 9, len: 1442, truesize: 2304, ..Skb::default() };
        let mut q = cake("ack-filter-aggressive");
        assert_eq!(run(&mut q, &[ack(1, 1000), other, ack(2, 2000)]), Vec::<u32>::new());
        assert_eq!(run(&mut q, &[ack(3, 3000)]), [1]);
    }

    /// An ACK that SACKs what the new one does not, a newer timestamp, or a higher
    /// cumulative ACK is never dropped; one whose SACK the new ACK covers with more
    /// bytes is.
    #[test]
    fn sack_timestamps_and_cumulative_ack_protect_an_ack() {
        let mut q = cake("ack-filter-aggressive");
        // ACK 1 SACKs 3000..4000, ACK 2 nothing: ACK 1 stays.
        assert_eq!(run(&mut q, &[with_sacks(ack(1, 1000), &[(3000, 4000)]), ack(2, 1000)]), Vec::<u32>::new());
        // ACK 3 SACKs 3000..5000: covers ACK 1 with more bytes and ACK 2 too: two
        // eligible, the first goes.
        assert_eq!(run(&mut q, &[with_sacks(ack(3, 1000), &[(3000, 5000)])]), [1]);

        let mut q = cake("ack-filter-aggressive");
        let newer_ts = Skb { tcp: TcpHdr { tsval: 101, ..ack(1, 1000).tcp }, ..ack(1, 1000) };
        assert_eq!(run(&mut q, &[newer_ts, ack(2, 2000)]), Vec::<u32>::new());

        let mut q = cake("ack-filter-aggressive");
        assert_eq!(run(&mut q, &[ack(1, 2000), ack(2, 1000)]), Vec::<u32>::new());
        // The same ACK again, no SACK: nothing new, nothing dropped.
        let mut q = cake("ack-filter-aggressive");
        assert_eq!(run(&mut q, &[ack(1, 1000), ack(2, 1000)]), Vec::<u32>::new());
    }

    /// An ECE change between eligible ACKs restarts the count: ECE on ACK 1, off on
    /// ACKs 2..4; at ACK 4 the first two eligible without a change are 2 and 3.
    #[test]
    fn ece_change_restarts_the_search() {
        let mut q = cake("ack-filter");
        let ece = Skb { tcp: TcpHdr { flags: TcpHdr::ACK | TcpHdr::ECE, ..ack(1, 1000).tcp }, ..ack(1, 1000) };
        assert_eq!(run(&mut q, &[ece, ack(2, 2000), ack(3, 3000)]), Vec::<u32>::new());
        assert_eq!(run(&mut q, &[ack(4, 4000)]), [2]);
    }

    /// No filter: every ACK stays, and no `ack_drops` sum is reported.
    #[test]
    fn no_filter_keeps_every_ack() {
        let mut q = cake("no-ack-filter");
        assert!(run(&mut q, &[ack(1, 1000), ack(2, 2000), ack(3, 3000)]).is_empty());
        assert_eq!(q.qlen(), 3);
        assert!(!q.xstats().iter().any(|(n, _)| *n == "ack_drops"));
    }

    #[test]
    fn sack_compare() {
        let h = |ack_seq: u32, blocks: &[(u32, u32)]| with_sacks(ack(0, ack_seq), blocks).tcp;
        assert_eq!(cake_tcph_sack_compare(&h(1000, &[]), &h(1000, &[])), 0);
        assert_eq!(cake_tcph_sack_compare(&h(1000, &[(2000, 3000)]), &h(1000, &[])), -1);
        assert_eq!(cake_tcph_sack_compare(&h(1000, &[]), &h(1000, &[(2000, 3000)])), 1);
        assert_eq!(cake_tcph_sack_compare(&h(1000, &[(2000, 3000)]), &h(1000, &[(2000, 3000)])), 0);
        assert_eq!(cake_tcph_sack_compare(&h(1000, &[(2000, 3000)]), &h(1000, &[(5000, 6000), (1500, 3500)])), 1);
        assert_eq!(cake_tcph_sack_compare(&h(1000, &[(2000, 3000), (4000, 4100)]), &h(1000, &[(2000, 3000)])), -1);
        // A D-SACK (a block below the cumulative ACK) is never dropped.
        assert_eq!(cake_tcph_sack_compare(&h(1000, &[(500, 1000)]), &h(1000, &[(500, 2000)])), -1);
        // Sequence numbers wrap.
        assert_eq!(cake_tcph_sack_compare(&h(u32::MAX - 10, &[(5, 20)]), &h(u32::MAX - 10, &[(0, 30)])), 1);
    }

    #[test]
    fn may_drop_only_pure_acks() {
        let a = ack(0, 1000).tcp;
        assert!(cake_tcph_may_drop(&a, 100, 5));
        assert!(!cake_tcph_may_drop(&a, 99, 5), "its TSval is newer");
        assert!(!cake_tcph_may_drop(&a, 100, 4), "its TSecr is newer");
        for f in [TcpHdr::FIN, TcpHdr::SYN, TcpHdr::RST, TcpHdr::PSH, TcpHdr::URG] {
            assert!(!cake_tcph_may_drop(&TcpHdr { flags: TcpHdr::ACK | f, ..a }, 100, 5), "{f:#x}");
        }
        assert!(cake_tcph_may_drop(&TcpHdr { flags: TcpHdr::ACK | TcpHdr::ECE | TcpHdr::CWR, ..a }, 100, 5));
        assert!(!cake_tcph_may_drop(&TcpHdr { flags: TcpHdr::ECE, ..a }, 100, 5), "no ACK flag");
    }
}
