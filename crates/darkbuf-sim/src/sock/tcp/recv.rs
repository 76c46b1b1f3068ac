//! The receiver: mirrors `tcp_rcv_established()`'s data path (`tcp_data_queue()`,
//! `tcp_ofo_queue()`), `__tcp_ack_snd_check()` with quick ACKs and the delayed-ACK
//! timer (`tcp_send_delayed_ack()`), and `tcp_send_ack()` with SACK blocks
//! (`tcp_sack_new_ofo_skb()`) in net/ipv4/tcp_input.c and tcp_output.c.
//!
//! The receiving application reads at once (iperf3's server), so the window it
//! advertises stays at half its receive buffer (`tcp_adv_win_scale` = 1).

use super::{after, before, TCP_HDR};
use crate::arena::{Destructor, Dir, PktInfo};
use crate::cpu::{CpuId, SockId};
use crate::event::Event;
use crate::world::World;
use darkbuf_model::Skb;

/// `TCP_DELACK_MIN` (HZ/25) as time: the delayed-ACK timer.
const TCP_DELACK_MIN_NS: u64 = 40_000_000;
/// `TCP_MAX_QUICKACKS`.
const TCP_MAX_QUICKACKS: u32 = 16;
/// ACK records kept for the ACKs in flight (a power of two).
const ACK_RING: usize = 1 << 14;

/// What one ACK carried: the cumulative ACK, up to 3 SACK blocks, ECE.
#[derive(Clone, Copy, Debug, Default)]
pub struct AckRec {
    pub ack: u32,
    pub sacks: [(u32, u32); 3],
    pub n_sacks: u8,
    pub ece: bool,
}

pub struct Receiver {
    pub rcv_nxt: u32,
    /// `rcv_wup`: `rcv_nxt` at the last ACK sent.
    rcv_wup: u32,
    mss: u32,
    /// The out-of-order queue as sorted, disjoint ranges (the SACK scoreboard).
    ooo: Vec<(u32, u32)>,
    /// The most recently changed out-of-order range (reported first).
    last_ooo: Option<(u32, u32)>,
    quickack: u32,
    /// A CE mark was received and not yet echoed by a CWR (`TCP_ECN_DEMAND_CWR`).
    ece: bool,
    pub delack_at: Option<u64>,
    /// The CPU its softirq runs on (where the delayed ACK is sent from).
    pub cpu: CpuId,
    acks: Vec<AckRec>,
    next_ack: u32,
}

impl Receiver {
    pub fn new(mss: u32) -> Receiver {
        Receiver {
            rcv_nxt: 0,
            rcv_wup: 0,
            mss,
            ooo: Vec::new(),
            last_ooo: None,
            quickack: TCP_MAX_QUICKACKS,
            ece: false,
            delack_at: None,
            cpu: 0,
            acks: vec![AckRec::default(); ACK_RING],
            next_ack: 0,
        }
    }

    /// The ACK with record `id`.
    pub fn ack(&self, id: u32) -> AckRec {
        self.acks[id as usize & (ACK_RING - 1)]
    }

    /// Adds `start..end` to the out-of-order ranges, merging neighbours.
    fn ooo_insert(&mut self, start: u32, end: u32) {
        let (mut s, mut e) = (start, end);
        self.ooo.retain(|&(a, b)| {
            if !after(a, e) && !before(b, s) {
                if before(a, s) {
                    s = a;
                }
                if after(b, e) {
                    e = b;
                }
                false
            } else {
                true
            }
        });
        let pos = self.ooo.partition_point(|&(a, _)| before(a, s));
        self.ooo.insert(pos, (s, e));
        self.last_ooo = Some((s, e));
    }

    /// `tcp_ofo_queue()`: ranges now in order move up `rcv_nxt`.
    fn ooo_drain(&mut self) {
        while let Some(&(a, b)) = self.ooo.first() {
            if after(a, self.rcv_nxt) {
                break;
            }
            if after(b, self.rcv_nxt) {
                self.rcv_nxt = b;
            }
            self.ooo.remove(0);
        }
        if self.ooo.is_empty() {
            self.last_ooo = None;
        }
    }
}

impl World {
    /// A data skb reached the receiver at `t` on `cpu`. Returns the CPU time of the
    /// receive processing and of an ACK it sends.
    pub(crate) fn tcp_data_rcv(&mut self, cpu: CpuId, info: &PktInfo, t: u64) -> u64 {
        let s = info.sock;
        let (start, window) = (self.cfg.start, (self.cfg.start, self.cfg.end));
        let tp = self.tcp(s);
        let payload = info.len - info.segs as u32 * TCP_HDR;
        let (seq, end) = (info.seq, info.seq.wrapping_add(payload));
        let r = &mut tp.rcv;
        r.cpu = cpu;
        // tcp_ecn_accept_cwr(): the sender has reduced; stop echoing, and ACK at once
        // (its cwnd may be tiny). Then __tcp_ecn_check_ce(): a CE mark starts the echo,
        // with two quick ACKs when it is a new one ("sender can have a very low cwnd").
        let mut now_ack = info.cwr && payload > 0;
        if info.cwr {
            r.ece = false;
        }
        if info.ecn == Skb::ECN_CE {
            if !r.ece {
                r.quickack = r.quickack.max(2);
            }
            r.ece = true;
        }
        let before_nxt = r.rcv_nxt;
        if seq == r.rcv_nxt {
            r.rcv_nxt = end;
            if !r.ooo.is_empty() {
                r.ooo_drain();
                // Filling a hole: ACK at once so the sender sees the new cumulative ACK.
                now_ack = true;
            }
        } else if after(seq, r.rcv_nxt) {
            r.ooo_insert(seq, end);
            r.quickack = r.quickack.max(1);
            now_ack = true;
        } else {
            // Old data (a spurious retransmission): a duplicate ACK at once.
            now_ack = true;
        }
        // The application reads what is now in order.
        let read = r.rcv_nxt.wrapping_sub(before_nxt) as u64;
        if read > 0 && t >= window.0 && t <= window.1 {
            let step = ((t - start) / super::SERIES_STEP_NS) as usize;
            let st = &mut tp.stats;
            if st.goodput_steps.len() <= step {
                st.goodput_steps.resize(step + 1, 0);
            }
            st.goodput_steps[step] += read;
            st.goodput_bytes += read;
        }
        let r = &mut tp.rcv;
        // __tcp_ack_snd_check(): more than one full segment unacked, quick ACK mode,
        // or out of order: now; otherwise the delayed-ACK timer.
        if r.rcv_nxt.wrapping_sub(r.rcv_wup) > r.mss || r.quickack > 0 || now_ack {
            let rcv_cost = self.cost(self.profile.costs.tcp_rcv_ns);
            return rcv_cost + self.tcp_send_ack(cpu, s, t + rcv_cost);
        }
        if r.delack_at.is_none() {
            let at = t + TCP_DELACK_MIN_NS;
            r.delack_at = Some(at);
            self.events.push(at, Event::TcpTimer(s, super::timer::DELACK));
        }
        self.cost(self.profile.costs.tcp_rcv_ns)
    }

    /// `tcp_send_ack()` at `t` from `cpu`: the cumulative ACK, the SACK blocks (the most
    /// recent first), ECE; through the far host's device, or by the constant way back.
    pub(crate) fn tcp_send_ack(&mut self, cpu: CpuId, s: SockId, t: u64) -> u64 {
        let tp = self.tcp(s);
        let (ack_dev, flow) = (tp.ack_dev, (tp.traffic_index as u32) << 16 | tp.flow_index as u32);
        let r = &mut tp.rcv;
        r.delack_at = None;
        r.rcv_wup = r.rcv_nxt;
        r.quickack = r.quickack.saturating_sub(1);
        let mut rec = AckRec { ack: r.rcv_nxt, ece: r.ece, ..AckRec::default() };
        let mut n = 0;
        if let Some(b) = r.last_ooo {
            rec.sacks[0] = b;
            n = 1;
        }
        for &b in r.ooo.iter().rev() {
            if n == 3 {
                break;
            }
            if Some(b) != r.last_ooo {
                rec.sacks[n] = b;
                n += 1;
            }
        }
        rec.n_sacks = n as u8;
        let id = r.next_ack;
        r.next_ack = r.next_ack.wrapping_add(1);
        r.acks[id as usize & (ACK_RING - 1)] = rec;
        let len = TCP_HDR + if rec.n_sacks > 0 { 4 + 8 * rec.n_sacks as u32 } else { 0 };
        let mut skb = Skb { flow, sk: 0x1_0000 + s as u32, len, truesize: len + 768, ..Skb::default() };
        let cost = self.cost(self.profile.costs.tcp_ack_ns);
        match ack_dev {
            Some(dev) => {
                skb.queue_mapping = self.netdev_pick_tx(dev, &skb, cpu);
                self.sock_alloc_skb(s, &mut skb, super::PROTO, Destructor::None, Dir::Back, id);
                self.pkts.get_mut(skb.id).t_send = t;
                self.dev_queue_xmit_at(t + cost, cpu, dev, skb);
            }
            None => {
                self.sock_alloc_skb(s, &mut skb, super::PROTO, Destructor::None, Dir::Back, id);
                let back = self.cost(self.profile.costs.ping_reply_ns);
                self.deliver_at(t + cost + back, cpu, skb.id);
            }
        }
        cost
    }
}
