//! Software GSO in front of a driver without TSO (`ethtool -K eth0 tso off`, or a driver
//! that clears NETIF_F_TSO itself, as e1000e does at 10/100 Mbit/s). Mirrors
//! `validate_xmit_skb_list()` -> `validate_xmit_skb()` -> `skb_gso_segment()` ->
//! `tcp_gso_segment()` (net/core/dev.c, net/ipv4/tcp_offload.c).
//!
//! TCP still builds skbs of up to 64 KB (GSO stays on), the qdisc holds them whole, and
//! the stack cuts each into MSS-sized segments only when the qdisc hands it to the
//! driver. What changes below the qdisc:
//!
//! - the ring holds segments, each charged to BQL with its own bytes. A BQL stop
//!   (STACK_XOFF) does not cut the list short: `dev_hard_start_xmit()` checks only the
//!   driver's DRV_XOFF between segments, so BQL may overshoot by one GSO skb, and only
//!   a full ring requeues the rest (`dev_requeue_skb()` of the tail);
//! - each segment carries `tcp_wfree` and its own truesize, so TCP Small Queues gets its
//!   budget back segment by segment at TX completion, not when the whole skb is done.
//!   `tcp_gso_segment()` charges the socket the difference between the segments'
//!   truesizes and the GSO skb's (every segment has its own skb head).

use crate::arena::{Destructor, PktInfo, Proto};
use crate::id::DevId;
use crate::wire::TCP_HDR;
use crate::world::World;
use darkbuf_model::Skb;

/// The head of an skb built by `skb_segment()` (its `SKB_TRUESIZE()` beyond the payload
/// it references): the same overhead the model charges a TCP skb in `tcp_transmit_skb()`.
pub const SEGMENT_HEAD_TRUESIZE: u32 = 768;

impl World {
    /// `validate_xmit_skb_list()` for a list about to go to `dev`'s driver: every GSO skb
    /// is replaced by its segments when the device lacks TSO (callers test `tso` first,
    /// inline: this is off the hot path). Works through `Scratch::gso`, a reused
    /// buffer (no allocation in the steady state). Returns the segments added.
    #[inline(never)]
    pub fn validate_xmit_skb_list(&mut self, dev: DevId, list: &mut Vec<Skb>) -> usize {
        if self.net.devs[dev].tso || list.iter().all(|s| s.segs() <= 1) {
            return 0;
        }
        let mut scratch = std::mem::take(&mut self.scratch.gso);
        scratch.clear();
        scratch.extend_from_slice(list);
        list.clear();
        let mut added = 0;
        for &skb in scratch.iter() {
            let info = self.pkts.get(skb.id);
            // Only TCP builds GSO skbs here, and they carry tcp_wfree until completion.
            if skb.segs() <= 1 || info.proto != Proto::Tcp || info.destructor == Destructor::SockWfree {
                list.push(skb);
                continue;
            }
            added += self.tcp_gso_segment(skb, list) - 1;
        }
        self.scratch.gso = scratch;
        added
    }

    /// `tcp_gso_segment()` of one TSO skb: its segments, appended to `out`, in order.
    /// The first segment keeps the skb's arena slot; each gets `tcp_wfree` and its
    /// own truesize when the skb has it (`copy_destructor`), and the socket is charged
    /// the difference (`refcount_add(delta, &sk->sk_wmem_alloc)`). Returns the count.
    pub(crate) fn tcp_gso_segment(&mut self, skb: Skb, out: &mut Vec<Skb>) -> usize {
        let info = *self.pkts.get(skb.id);
        let n = skb.segs();
        // Only TCP skbs get here (validate_xmit_skb_list() checks the protocol).
        let mss = self.socks.tcp(info.sock).mss();
        let copy_destructor = info.destructor == Destructor::TcpWfree;
        let mut sum_truesize = 0u64;
        for (i, (off, seg_payload)) in tcp_gso_cut(skb.len, n, mss).enumerate() {
            let truesize = seg_payload + SEGMENT_HEAD_TRUESIZE;
            let seg_info = PktInfo {
                len: seg_payload + TCP_HDR,
                truesize: if copy_destructor { truesize } else { 0 },
                seq: info.seq.wrapping_add(off),
                segs: 1,
                destructor: if copy_destructor { Destructor::TcpWfree } else { Destructor::None },
                // SKB_GSO_TCP_ECN: CWR on the first segment only (tcp_gso_segment()).
                tcp_flags: if i == 0 { info.tcp_flags } else { info.tcp_flags & !PktInfo::TCPHDR_CWR },
                ..info
            };
            let id = if i == 0 {
                *self.pkts.get_mut(skb.id) = seg_info;
                skb.id
            } else {
                self.metrics.fate.created += 1;
                self.pkts.alloc(seg_info)
            };
            sum_truesize += truesize as u64;
            out.push(Skb { id, len: seg_payload + TCP_HDR, truesize, gso_segs: 0, ..skb });
        }
        if copy_destructor {
            // The segments' truesizes replace the GSO skb's in sk_wmem_alloc.
            let wmem = &mut self.socks[info.sock].wmem_alloc;
            *wmem = (*wmem + sum_truesize).saturating_sub(info.truesize as u64);
        }
        n as usize
    }
}

/// `tcp_gso_segment()`'s cut of a GSO skb of `len` L2 bytes in `segs` segments (each
/// counted with its headers, `TCP_HDR`): every segment's payload offset and length,
/// `mss` each but the last. The NIC's TSO cuts the same way on the wire.
pub fn tcp_gso_cut(len: u32, segs: u32, mss: u32) -> impl Iterator<Item = (u32, u32)> {
    let payload = len - segs * TCP_HDR;
    (0..segs).map(move |i| {
        let off = i * mss;
        (off, mss.min(payload - off))
    })
}
