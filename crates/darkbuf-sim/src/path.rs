//! The wire and what lies beyond it: a link carries what a NIC's port has finished
//! serializing to the far NIC through a netem of its own (`netem_enqueue()` in
//! net/sched/sch_netem.c), each way:
//! - a one-way delay, fixed, or drawn per frame with a jitter (`tabledist()`, uniform or
//!   from one of tc's tables), in which case frames may overtake each other (the
//!   tfifo sorts them by time to send);
//! - a loss model (`loss_event()`: random with its correlation, the 4-state GI model
//!   or Gilbert-Elliott), which with `ecn` marks ECN-capable frames CE instead;
//! - reordering (`reorder P [C] [gap G]`: a frame sent at once, ahead of the others);
//! - a bottleneck rate and a limit on the frames held.
//!
//! Entries with a `path_delay` of their own go on a link of that delay beside the
//! shared one, as per-host netems would. Every draw comes from a stream of the path's
//! own, so the costs' draws do not move.
//!
//! A netem beyond the wire sees frames, not skbs: the NIC cut each TSO skb into
//! MSS-sized frames. Without path keys the model carries a TSO skb whole, as the far
//! NIC's GRO would hand it up. With a loss, a rate, a limit, a jitter or reordering,
//! the skb meets the netem frame by frame (`link_send_frames()`), each at the time its
//! last bit left the port.

use crate::arena::PktInfo;
use crate::id::{DevId, LinkId};
use crate::wire::WIRE_OVERHEAD;
use crate::event::Event;
use crate::wire::TCP_HDR;
use crate::world::World;
use darkbuf_model::netem::{CrndState, LossModel, LossState, NetemJitter, NetemRate, Tfifo};
use darkbuf_model::Skb;
use darkbuf_scenario::{PathLoss, PathSpec};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;


/// One direction of a wire plus the path beyond it.
pub struct Link {
    /// The receiving device.
    pub to: DevId,
    /// netem's `latency`: the one-way delay, ns (the mean, with a jitter).
    pub delay_ns: u64,
    /// The link's netem loss model and its state (`None`: lossless).
    pub loss: Option<LossState>,
    /// netem's `ecn`: a loss marks an ECN-capable frame CE instead of dropping it.
    pub ecn: bool,
    /// netem's `rate` in bytes/s (`q->rate`); 0 = none.
    pub rate: u64,
    /// netem's `sch->limit`: frames on the link before it drops arrivals;
    /// `u32::MAX` = unlimited.
    pub limit: u32,
    /// netem's jitter and reordering (`None`: a fixed delay, frames stay in order).
    pub delay: Option<Box<NetemJitter>>,
    /// The tfifo: packets on the way by time to send (netem's `time_to_send`, ns, which
    /// a jitter wider than the delay may put before now), equal times in arrival order
    /// (`tfifo_enqueue()`).
    pub in_flight: Tfifo<u32>,
    /// `sch->q`: packets `reorder` sent ahead, due at once, the last queued first
    /// (`__qdisc_enqueue_head()`), with their time to send.
    pub head: VecDeque<(u64, u32)>,
    /// The frames those packets are (`sch->q.qlen`, which the limit counts): a run of a
    /// TSO skb's frames travels as one packet, as the far end's GRO would merge it.
    pub frames: u32,
}

/// The path's loss model as netem's (`darkbuf_model::netem`).
pub fn loss_model(l: PathLoss) -> LossModel {
    match l {
        PathLoss::Random { loss, corr } => LossModel::Random { loss, corr },
        PathLoss::State { p13, p31, p32, p23, p14 } => LossModel::State { p13, p31, p32, p23, p14 },
        PathLoss::Gemodel { p, r, h, k1 } => LossModel::Gemodel { p, r, h, k1 },
    }
}

impl Link {
    pub fn new(to: DevId, delay_ns: u64, loss: Option<LossState>, rate: u64, limit: u32) -> Link {
        Link { to, delay_ns, loss, ecn: false, rate, limit, delay: None, in_flight: Tfifo::default(), head: VecDeque::new(), frames: 0 }
    }

    /// The link of `path` to `to` with `delay_ns`, its netem's correlated streams
    /// started from `init` (the kernel's `init_crandom()` draws `get_random_u32()`).
    pub fn netem(to: DevId, delay_ns: u64, path: &PathSpec, init: &mut ChaCha8Rng) -> Link {
        let mut crnd = |rho: u32| CrndState::new(rho, if rho == 0 { 0 } else { init.next_u32() });
        let loss = path.loss.map(|m| LossState::new(loss_model(m), &mut crnd));
        let delay = (path.jitter_ns != 0 || path.reorder.is_some()).then(|| {
            let r = path.reorder.unwrap_or(darkbuf_scenario::PathReorder { probability: 0, correlation: 0, gap: 0 });
            Box::new(NetemJitter {
                jitter: path.jitter_ns.min(i32::MAX as u64) as i32,
                delay_cor: crnd(path.delay_corr),
                dist: path.distribution.and_then(|d| d.table()).map(Vec::into_boxed_slice),
                reorder: r.probability,
                reorder_cor: crnd(r.correlation),
                gap: r.gap,
                counter: 0,
            })
        });
        let rate = path.rate_bps.map_or(0, |b| b / 8);
        let limit = path.limit.unwrap_or(u32::MAX);
        Link { ecn: path.ecn, delay, ..Link::new(to, delay_ns, loss, rate, limit) }
    }

    /// A plain delay line: a fixed delay, no rate, no limit, no reordering, so each
    /// packet goes to the tfifo's tail (a loss may still come first).
    fn is_delay_line(&self) -> bool {
        self.delay.is_none() && self.rate == 0 && self.limit == u32::MAX
    }

    /// Whether the link's netem acts on single frames, so a TSO skb must meet it as the
    /// frames the NIC sends.
    pub fn sees_frames(&self) -> bool {
        self.loss.is_some() || !self.is_delay_line()
    }

    /// Packets on the link.
    pub fn held(&self) -> usize {
        self.in_flight.len() + self.head.len()
    }
}

/// What the path's netem did to a frame's loss draw.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    Pass,
    /// `ecn`: marked CE instead of lost.
    Marked,
    Lost,
}

impl World {
    /// The last bit of packet `id` left the port now: it meets the link's netem.
    pub fn link_send(&mut self, link: LinkId, id: u32) {
        if self.net.links[link].loss.is_some() {
            let ecn = self.pkts.get(id).ecn;
            match self.path_fate(link, ecn) {
                Fate::Lost => {
                    self.kfree_skb(id);
                    return;
                }
                Fate::Marked => self.pkts.get_mut(id).ecn = Skb::ECN_CE,
                Fate::Pass => {}
            }
        }
        let frames = (self.pkts.get(id).segs as u32).max(1);
        let l = &mut self.net.links[link];
        if l.is_delay_line() {
            let at = self.now + l.delay_ns;
            l.frames += frames;
            l.in_flight.enqueue(at, id);
            self.events.push(at, Event::LinkArrival(link));
            return;
        }
        if !self.netem_enqueue(link, id, frames, self.now) {
            self.kfree_skb(id);
        }
    }

    /// netem's loss draw for a frame with IP ECN bits `ecn`, counted in the metrics:
    /// `loss_event()`, then with `ecn` `INET_ECN_set_ce()`, which fails on Not-ECT.
    fn path_fate(&mut self, link: LinkId, ecn: u8) -> Fate {
        let l = &mut self.net.links[link];
        let (Some(rng), Some(loss)) = (self.rand.path.as_deref_mut(), l.loss.as_mut()) else {
            return Fate::Pass;
        };
        if !loss.loss_event(rng) {
            return Fate::Pass;
        }
        let fate = if l.ecn && ecn != Skb::ECN_NOT_ECT { Fate::Marked } else { Fate::Lost };
        if self.measuring() {
            match fate {
                Fate::Marked => self.metrics.path_marks += 1,
                _ => self.metrics.path_drops += 1,
            }
        }
        fate
    }

    /// `netem_enqueue()` of a packet of `frames` frames whose last bit left the port at
    /// `t` (at most now), after its loss draw: false when the limit drops it. Then
    /// either reordered (`reorder`: to the head of `sch->q`, due at once) or delayed:
    /// `tabledist()`'s delay from `t`, and with a rate its turn behind the last packet
    /// queued plus its own time at the rate (`packet_time_ns()`). It arrives at that
    /// time to send, or now if that has passed.
    #[inline]
    fn netem_enqueue(&mut self, link: LinkId, id: u32, frames: u32, t: u64) -> bool {
        let len = self.pkts.get(id).len as u64;
        let l = &mut self.net.links[link];
        if l.frames >= l.limit {
            // "sch->q.qlen >= sch->limit" drops the arrival.
            if self.measuring() {
                self.metrics.path_limit_drops += frames as u64;
            }
            return false;
        }
        l.frames += frames;
        let mut delay = l.delay_ns as i64;
        if let Some(d) = l.delay.as_deref_mut() {
            let rng = self.rand.path.as_deref_mut().expect("a netem with a jitter or reordering has the path's stream");
            if d.reorder_now(rng) {
                l.head.push_front((t, id));
                if self.measuring() {
                    self.metrics.path_reordered += 1;
                }
                self.events.push(t.max(self.now), Event::LinkArrival(link));
                return true;
            }
            delay = d.delay(delay, rng);
        }
        let mut at = t as i64 + delay;
        if l.rate != 0 {
            // The last packet queued is the reference point: this one's delay counts
            // from its time to send, if later (delay -= last - now, at least 0). The
            // last is the later of `sch->q`'s tail and the tfifo's last.
            let last = l.head.back().map(|e| e.0).into_iter().chain(l.in_flight.last_time_to_send()).max();
            if let Some(last) = last {
                at = at.max(last as i64);
            }
            at += NetemRate { rate: l.rate, ..NetemRate::default() }.packet_time_ns(len) as i64;
        }
        let at = at.max(0) as u64;
        l.in_flight.enqueue(at, id);
        self.events.push(at.max(self.now), Event::LinkArrival(link));
        true
    }

    /// A TSO skb (`id`, the far end's copy, `segs` > 1) on a link whose netem sees
    /// frames. The NIC cut it into MSS-sized frames (`tcp_gso_cut()`, as
    /// `tcp_gso_segment()` cuts, done by the hardware) sent back to back at `rate_bps`, the last ending at `end_ps`. Each
    /// frame meets the netem when its last bit leaves: a loss draw, then the limit.
    /// With only a loss, a limit or `ecn`, the frames that pass arrive back to back, and
    /// the far NIC's GRO merges each unbroken run into one skb (`tcp_gro_receive()`
    /// flushes at a gap in the sequence, `inet_gro_receive()` at a change of the ECN
    /// bits); a run travels as one packet of its frames. With a rate they arrive one
    /// bottleneck slot apart, one per NAPI poll, and with a jitter or reordering each
    /// has its own time: each goes alone.
    pub fn link_send_frames(&mut self, link: LinkId, id: u32, end_ps: u64, rate_bps: u64) {
        let info = *self.pkts.get(id);
        let n = info.segs as u32;
        let mss = self.socks.tcp(info.sock).mss();
        let wire_ps = |bytes: u64| bytes * 8_000_000_000_000 / rate_bps;
        let start_ps = end_ps - wire_ps((info.len + n * WIRE_OVERHEAD) as u64);
        let singles = self.net.links[link].rate != 0 || self.net.links[link].delay.is_some();
        // The run being merged: its first byte's offset, its frames, their ECN bits,
        // the end of its last frame (ns); and whether `id` has been used for a piece.
        let (mut run_off, mut run_frames, mut run_ecn, mut run_end) = (0u32, 0u32, info.ecn, 0u64);
        let mut id_used = false;
        let mut wire_bytes = 0u64;
        for (off, seg_payload) in crate::dev::gso::tcp_gso_cut(info.len, n, mss) {
            wire_bytes += (seg_payload + TCP_HDR + WIRE_OVERHEAD) as u64;
            let t = (start_ps + wire_ps(wire_bytes)).div_ceil(1000);
            let fate = self.path_fate(link, info.ecn);
            let ecn = if fate == Fate::Marked { Skb::ECN_CE } else { info.ecn };
            let l = &self.net.links[link];
            let full = fate != Fate::Lost && !singles && l.frames + run_frames >= l.limit;
            if full && self.measuring() {
                self.metrics.path_limit_drops += 1;
            }
            if run_frames > 0 && (fate == Fate::Lost || full || ecn != run_ecn) {
                self.path_piece(link, id, &mut id_used, &info, (run_off, off - run_off, run_frames, run_ecn), run_end);
                run_frames = 0;
            }
            let passes = fate != Fate::Lost && !full;
            if passes && singles {
                self.path_piece(link, id, &mut id_used, &info, (off, seg_payload, 1, ecn), t);
            } else if passes {
                if run_frames == 0 {
                    (run_off, run_ecn) = (off, ecn);
                }
                run_frames += 1;
                run_end = t;
            }
        }
        if run_frames > 0 {
            let whole = info.len - n * TCP_HDR;
            self.path_piece(link, id, &mut id_used, &info, (run_off, whole - run_off, run_frames, run_ecn), run_end);
        }
        if !id_used {
            self.kfree_skb(id);
        }
    }

    /// One piece of a TSO skb that passed the netem's loss: `(offset, payload, frames,
    /// ECN bits)` of `info`, its last frame off the port at `t`. The first piece takes
    /// the skb's own arena slot, the others new ones; CWR rides on the first frame only
    /// (`tcp_gso_segment()`), the truesize is shared by payload.
    fn path_piece(&mut self, link: LinkId, id: u32, id_used: &mut bool, info: &PktInfo, piece: (u32, u32, u32, u8), t: u64) {
        let (off, payload, frames, ecn) = piece;
        let whole = info.len - info.segs as u32 * TCP_HDR;
        let p = PktInfo {
            len: payload + frames * TCP_HDR,
            truesize: (info.truesize as u64 * payload as u64 / whole.max(1) as u64) as u32,
            seq: info.seq.wrapping_add(off),
            segs: frames as u16,
            tcp_flags: if off == 0 { info.tcp_flags } else { info.tcp_flags & !PktInfo::TCPHDR_CWR },
            ecn,
            ..*info
        };
        let pid = if *id_used {
            self.metrics.fate.created += 1;
            self.pkts.alloc(p)
        } else {
            *id_used = true;
            *self.pkts.get_mut(id) = p;
            id
        };
        if !self.netem_enqueue(link, pid, frames, t) {
            self.kfree_skb(pid);
        }
    }

    /// `Event::LinkArrival`: the packet netem dequeues next arrives at its device: one
    /// reordered to the head first, else the tfifo's earliest.
    pub fn link_arrival(&mut self, link: LinkId) {
        let l = &mut self.net.links[link];
        let (at, id) = l.head.pop_front().or_else(|| l.in_flight.pop()).expect("an arrival per packet sent");
        debug_assert!(at <= self.now, "every packet on a link arrives at its time to send or later");
        let to = l.to;
        l.frames -= (self.pkts.get(id).segs as u32).max(1);
        self.drv_link_rx(to, id);
    }
}

/// The path's own random stream, when its netem draws (a loss, a jitter or
/// reordering): apart from the costs' stream, so a lossy path leaves every other draw
/// where it was.
pub fn path_rng(seed: u64, path: Option<&PathSpec>) -> Option<Box<ChaCha8Rng>> {
    let draws = path.is_some_and(|p| p.loss.is_some() || p.jitter_ns != 0 || p.reorder.is_some());
    draws.then(|| Box::new(ChaCha8Rng::seed_from_u64(seed ^ 0x7061_7468_0000_0000)))
}

/// The stream `init_crandom()`'s first values come from (the kernel's
/// `get_random_u32()`), apart from the path's draws.
pub fn crnd_init_rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed ^ 0x6372_6e64_0000_0000)
}
