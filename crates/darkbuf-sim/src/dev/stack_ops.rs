//! What a qdisc asks of the stack around it (`darkbuf_model::qdisc::StackOp`), carried
//! out after its enqueue or dequeue returns. netem's, from net/sched/sch_netem.c's
//! `netem_enqueue()`: `skb_orphan_partial()` of a delayed packet, `skb_clone()` of a
//! duplicate and `rootq->enqueue()` of the clone, `netem_segment()` of a GSO skb chosen
//! for corruption (`skb_gso_segment()`, here `tcp_gso_segment()`), and the flipped bit
//! (`skb->data[get_random_u32_below(skb_headlen(skb))] ^= 1 << ...`), whose effect the
//! receiving stack decides; and cake's split-gso (`skb_gso_segment()` in
//! net/sched/sch_cake.c's `cake_enqueue()`).

use super::sch::QdiscInst;
use crate::arena::{Destructor, PktInfo, Proto};
use crate::id::QdiscId;
use crate::wire::TCP_HDR;
use crate::world::World;
use darkbuf_model::qdisc::{Qdisc, StackOp};
use darkbuf_model::Skb;

/// Bytes 6..12 of a frame: the source MAC, which no check at the receiver covers.
const SRC_MAC: std::ops::Range<u64> = 6..12;

impl World {
    /// Carries out every [`StackOp`] qdisc `qi` (the root of a TX queue) has collected,
    /// including those of the packets it re-enqueues (a clone's corruption).
    #[inline(never)]
    pub(crate) fn qdisc_stack_ops(&mut self, qi: QdiscId) {
        let mut ops = std::mem::take(&mut self.scratch.stack_ops);
        loop {
            ops.clear();
            self.net.qdiscs[qi].q.as_mut().expect("qdisc").take_stack_ops(&mut ops);
            if ops.is_empty() {
                break;
            }
            for &op in ops.iter() {
                match op {
                    StackOp::Orphan(id) => self.skb_orphan(id),
                    StackOp::Corrupt { id, byte_rnd, bit } => self.netem_corrupt(id, byte_rnd, bit),
                    StackOp::Clone(skb) => {
                        // skb_clone(): the data shared, no socket, not charged to BQL.
                        let info = *self.pkts.get(skb.id);
                        self.metrics.fate.created += 1;
                        let id = self.pkts.alloc(PktInfo { destructor: Destructor::None, bql_charged: false, netem_clone: true, ..info });
                        self.root_enqueue(qi, Skb { id, ..skb });
                    }
                    StackOp::SegmentCorrupt(skb) => self.segment_through_root(qi, skb, Skb::NETEM_CORRUPT_SEG),
                    StackOp::GsoSegment(skb) => self.segment_through_root(qi, skb, 0),
                }
            }
        }
        self.scratch.stack_ops = ops;
    }

    /// `rootq->enqueue()` of a packet a qdisc put back into the tree (a clone, a
    /// segment), its drops freed.
    fn root_enqueue(&mut self, qi: QdiscId, skb: Skb) {
        let now = self.now;
        let q: &mut QdiscInst = &mut self.net.qdiscs[qi];
        let measured = q.measured;
        let mut drops = std::mem::take(&mut self.scratch.drops);
        drops.clear();
        self.metrics.qdisc_enter(measured, now);
        q.q.as_mut().expect("qdisc").enqueue(Skb { tstamp: now, ..skb }, now, &mut drops);
        self.scratch.drops = drops;
        self.free_drops(measured);
    }

    /// A GSO skb a qdisc cut in its enqueue leaves the qdisc as its segments, each
    /// through the root (the kernel enqueues them into that qdisc itself, which the
    /// root's classification reaches again):
    /// - `netem_segment()`: the first segment is marked `first_mark`
    ///   ([`Skb::NETEM_CORRUPT_SEG`]) to be corrupted where it was;
    /// - cake's split-gso (`skb_gso_segment()` in `cake_enqueue()`): no mark.
    fn segment_through_root(&mut self, qi: QdiscId, skb: Skb, first_mark: u8) {
        let measured = self.net.qdiscs[qi].measured;
        self.metrics.qdisc_leave(measured, self.now);
        let mut segs = std::mem::take(&mut self.scratch.gso2);
        segs.clear();
        self.tcp_gso_segment(skb, &mut segs);
        for (i, &seg) in segs.iter().enumerate() {
            let mark = if i == 0 { first_mark } else { 0 };
            self.root_enqueue(qi, Skb { netem_mark: seg.netem_mark | mark, ..seg });
        }
        self.scratch.gso2 = segs;
    }

    /// The flipped bit: byte `get_random_u32_below(skb_headlen())` of the draw, bit
    /// `bit`. The linear part is the whole frame for UDP and ICMP (built linear) and
    /// the headers for TCP (the payload sits in page frags). The frame survives only a
    /// bit in the source MAC, or the destination's group bit for UDP and ICMP
    /// (`eth_type_trans()` calls it multicast, `ip_rcv_core()` keeps it, `tcp_v4_rcv()`
    /// drops what is not PACKET_HOST); any other bit fails the IP header checksum, the
    /// L4 checksum, or names another host or EtherType.
    fn netem_corrupt(&mut self, id: u32, byte_rnd: u32, bit: u8) {
        let info = self.pkts.get_mut(id);
        let headlen = if info.proto == Proto::Tcp { TCP_HDR.min(info.len) } else { info.len } as u64;
        let byte = (byte_rnd as u64 * headlen) >> 32;
        let survives = SRC_MAC.contains(&byte) || (byte == 0 && bit == 0 && info.proto != Proto::Tcp);
        info.corrupt |= !survives;
    }
}
