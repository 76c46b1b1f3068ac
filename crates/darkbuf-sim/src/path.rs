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
use crate::cpu::DevId;
use crate::drivers::nic::WIRE_OVERHEAD;
use crate::event::Event;
use crate::sock::tcp::TCP_HDR;
use crate::world::World;
use darkbuf_model::netem::{tabledist, CrndState};
use darkbuf_model::Skb;
use darkbuf_scenario::{PathLoss, PathSpec};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// A link id: an index into `World::links`.
pub type LinkId = u16;

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
    pub delay: Option<Box<NetemDelay>>,
    /// The tfifo: packets on the way by time to send (netem's `time_to_send`, ns, which
    /// a jitter wider than the delay may put before now), equal times in arrival order
    /// (`tfifo_enqueue()`).
    pub in_flight: VecDeque<(u64, u32)>,
    /// `sch->q`: packets `reorder` sent ahead, due at once, the last queued first
    /// (`__qdisc_enqueue_head()`), with their time to send.
    pub head: VecDeque<(u64, u32)>,
    /// The frames those packets are (`sch->q.qlen`, which the limit counts): a run of a
    /// TSO skb's frames travels as one packet, as the far end's GRO would merge it.
    pub frames: u32,
}

/// netem's random delay and reordering on one link.
pub struct NetemDelay {
    /// `q->jitter`, ns (netem caps it at `INT_MAX`), and `q->delay_cor`.
    pub jitter: i32,
    pub delay_cor: CrndState,
    /// `q->delay_dist` (`None`: uniform).
    pub dist: Option<Box<[i16]>>,
    /// `q->reorder`, `q->reorder_cor`, `q->gap` (0: no reordering) and `q->counter`.
    pub reorder: u32,
    pub reorder_cor: CrndState,
    pub gap: u32,
    pub counter: u32,
}

impl Link {
    pub fn new(to: DevId, delay_ns: u64, loss: Option<LossState>, rate: u64, limit: u32) -> Link {
        Link { to, delay_ns, loss, ecn: false, rate, limit, delay: None, in_flight: VecDeque::new(), head: VecDeque::new(), frames: 0 }
    }

    /// The link of `path` to `to` with `delay_ns`, its netem's correlated streams
    /// started from `init` (the kernel's `init_crandom()` draws `get_random_u32()`).
    pub fn netem(to: DevId, delay_ns: u64, path: &PathSpec, init: &mut ChaCha8Rng) -> Link {
        let mut crnd = |rho: u32| CrndState::new(rho, if rho == 0 { 0 } else { init.next_u32() });
        let loss = path.loss.map(|m| LossState::new(m, &mut crnd));
        let delay = (path.jitter_ns != 0 || path.reorder.is_some()).then(|| {
            let r = path.reorder.unwrap_or(darkbuf_scenario::PathReorder { probability: 0, correlation: 0, gap: 0 });
            Box::new(NetemDelay {
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
        if self.links[link as usize].loss.is_some() {
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
        let l = &mut self.links[link as usize];
        if l.is_delay_line() {
            let at = self.now + l.delay_ns;
            l.frames += frames;
            l.in_flight.push_back((at, id));
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
        let l = &mut self.links[link as usize];
        let (Some(rng), Some(loss)) = (self.path_rng.as_deref_mut(), l.loss.as_mut()) else {
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
        let l = &mut self.links[link as usize];
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
            let rng = self.path_rng.as_deref_mut().expect("a netem with a jitter or reordering has the path's stream");
            if !(d.gap == 0 || d.counter < d.gap - 1 || d.reorder < d.reorder_cor.get_crandom(rng)) {
                // "Do re-ordering by putting one out of N packets at the front".
                d.counter = 0;
                l.head.push_front((t, id));
                if self.measuring() {
                    self.metrics.path_reordered += 1;
                }
                self.events.push(t.max(self.now), Event::LinkArrival(link));
                return true;
            }
            delay = tabledist(delay, d.jitter, &mut d.delay_cor, rng, d.dist.as_deref());
            d.counter += 1;
        }
        let mut at = t as i64 + delay;
        if l.rate != 0 {
            // The last packet queued is the reference point: this one's delay counts
            // from its time to send, if later (delay -= last - now, at least 0).
            let last = l.in_flight.back().map(|e| e.0).into_iter().chain(l.head.iter().map(|e| e.0)).max();
            if let Some(last) = last {
                at = at.max(last as i64);
            }
            at += ((len as u128 * 1_000_000_000) / l.rate as u128) as i64;
        }
        let at = at.max(0) as u64;
        if l.in_flight.back().is_none_or(|e| e.0 <= at) {
            l.in_flight.push_back((at, id));
        } else {
            let i = l.in_flight.partition_point(|e| e.0 <= at);
            l.in_flight.insert(i, (at, id));
        }
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
        let mss = self.tcp(info.sock).mss;
        let wire_ps = |bytes: u64| bytes * 8_000_000_000_000 / rate_bps;
        let start_ps = end_ps - wire_ps((info.len + n * WIRE_OVERHEAD) as u64);
        let singles = self.links[link as usize].rate != 0 || self.links[link as usize].delay.is_some();
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
            let l = &self.links[link as usize];
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
            cwr: info.cwr && off == 0,
            ecn,
            ..*info
        };
        let pid = if *id_used {
            self.created += 1;
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
        let l = &mut self.links[link as usize];
        let (at, id) = l.head.pop_front().or_else(|| l.in_flight.pop_front()).expect("an arrival per packet sent");
        debug_assert!(at <= self.now, "every packet on a link arrives at its time to send or later");
        let to = l.to;
        l.frames -= (self.pkts.get(id).segs as u32).max(1);
        self.nic_rx(to, id);
    }
}

/// A netem's loss model with its `struct clgstate` and `loss_cor`.
#[derive(Clone, Copy, Debug)]
pub struct LossState {
    model: PathLoss,
    state: ClgState,
    cor: CrndState,
}

/// `clg->state`: the 4-state model's four, Gilbert-Elliott's two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClgState {
    TxInGapPeriod,
    TxInBurstPeriod,
    LostInGapPeriod,
    LostInBurstPeriod,
    GoodState,
    BadState,
}

impl LossState {
    /// `get_loss_clg()`: the 4-state model starts in TX_IN_GAP_PERIOD,
    /// Gilbert-Elliott in GOOD_STATE; random loss's correlation from `crnd(rho)`
    /// (`init_crandom()`).
    pub fn new(model: PathLoss, crnd: &mut impl FnMut(u32) -> CrndState) -> Self {
        let state = match model {
            PathLoss::Gemodel { .. } => ClgState::GoodState,
            _ => ClgState::TxInGapPeriod,
        };
        let cor = match model {
            PathLoss::Random { corr, .. } => crnd(corr),
            _ => CrndState::default(),
        };
        LossState { model, state, cor }
    }

    /// `loss_event()`: whether the next frame is lost.
    pub fn loss_event(&mut self, rng: &mut ChaCha8Rng) -> bool {
        match self.model {
            // "Random packet drop 0 => none, ~0 => all".
            PathLoss::Random { loss, .. } => loss != 0 && loss >= self.cor.get_crandom(rng),
            PathLoss::State { p13, p31, p32, p23, p14 } => self.loss_4state(rng.next_u32(), [p13, p31, p32, p14, p23]),
            PathLoss::Gemodel { p, r, h, k1 } => self.loss_gilb_ell(rng, [p, r, h, k1]),
        }
    }

    /// `loss_4state()` with `a` = `clg->a1..a5` (p13, p31, p32, p14, p23); the sums
    /// wrap as the kernel's `u32` additions do.
    fn loss_4state(&mut self, rnd: u32, a: [u32; 5]) -> bool {
        let [a1, a2, a3, a4, a5] = a;
        use ClgState::*;
        match self.state {
            TxInGapPeriod => {
                if rnd < a4 {
                    self.state = LostInGapPeriod;
                    return true;
                } else if rnd < a1.wrapping_add(a4) {
                    self.state = LostInBurstPeriod;
                    return true;
                }
            }
            TxInBurstPeriod => {
                if rnd < a5 {
                    self.state = LostInBurstPeriod;
                    return true;
                }
            }
            LostInBurstPeriod => {
                if rnd < a3 {
                    self.state = TxInBurstPeriod;
                } else if rnd < a2.wrapping_add(a3) {
                    self.state = TxInGapPeriod;
                } else {
                    return true;
                }
            }
            LostInGapPeriod => self.state = TxInGapPeriod,
            GoodState | BadState => {}
        }
        false
    }

    /// `loss_gilb_ell()` with `a` = `clg->a1..a4` (p, r, h, 1-k): a transition draw,
    /// then a loss draw.
    fn loss_gilb_ell(&mut self, rng: &mut ChaCha8Rng, a: [u32; 4]) -> bool {
        let [a1, a2, a3, a4] = a;
        match self.state {
            ClgState::BadState => {
                if rng.next_u32() < a2 {
                    self.state = ClgState::GoodState;
                }
                rng.next_u32() > a3
            }
            _ => {
                if rng.next_u32() < a1 {
                    self.state = ClgState::BadState;
                }
                rng.next_u32() < a4
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use darkbuf_scenario::set_percent;

    fn no_cor(rho: u32) -> CrndState {
        CrndState::new(rho, 0)
    }

    fn rng() -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(7)
    }

    /// The fraction of `n` frames `model` loses.
    fn loss_rate(model: PathLoss, n: u32) -> f64 {
        let (mut l, mut r) = (LossState::new(model, &mut |rho| CrndState::new(rho, 0)), rng());
        (0..n).filter(|_| l.loss_event(&mut r)).count() as f64 / n as f64
    }

    #[test]
    fn certain_transitions_give_exact_patterns() {
        let all = u32::MAX;
        // Gilbert-Elliott, p = r = 100%, h = 0, 1-k = 0: good and bad alternate, and
        // only the bad state loses.
        let mut ge = LossState::new(PathLoss::Gemodel { p: all, r: all, h: 0, k1: 0 }, &mut no_cor);
        let mut r = rng();
        let got: Vec<bool> = (0..8).map(|_| ge.loss_event(&mut r)).collect();
        assert_eq!(got, [false, true, false, true, false, true, false, true]);
        // 4-state, p13 = 100% with tc's default p31 = 0: into a burst, never out.
        let mut st = LossState::new(PathLoss::State { p13: all, p31: 0, p32: 0, p23: all, p14: 0 }, &mut no_cor);
        assert!((0..8).all(|_| st.loss_event(&mut r)));
        // ... and with p31 = 100%: a loss, then back to the gap, alternating.
        let mut st = LossState::new(PathLoss::State { p13: all, p31: all, p32: 0, p23: all, p14: 0 }, &mut no_cor);
        let got: Vec<bool> = (0..6).map(|_| st.loss_event(&mut r)).collect();
        assert_eq!(got, [true, false, true, false, true, false]);
        // Random 0 never loses, 100% always.
        let mut none = LossState::new(PathLoss::Random { loss: 0, corr: 0 }, &mut no_cor);
        let mut every = LossState::new(PathLoss::Random { loss: all, corr: 0 }, &mut no_cor);
        assert!((0..100).all(|_| !none.loss_event(&mut r) && every.loss_event(&mut r)));
    }

    /// The chains' long-run loss rates: random p; Gilbert-Elliott's
    /// p/(p+r) x (1-h) + r/(p+r) x (1-k) ("gemodel 1% 10% 70% 0.1%": 0.0645); the GI
    /// model with isolated losses only (p14) at p14/(1+p14).
    #[test]
    fn long_run_loss_rates_match_the_chains() {
        let n = 2_000_000;
        let close = |got: f64, want: f64| assert!((got - want).abs() < 0.03 * want, "{got} vs {want}");
        close(loss_rate(PathLoss::Random { loss: set_percent(0.01), corr: 0 }, n), 0.01);
        let (p, r, one_minus_h, k1) = (0.01, 0.10, 0.70, 0.001);
        let ge = PathLoss::Gemodel { p: set_percent(p), r: set_percent(r), h: u32::MAX - set_percent(one_minus_h), k1: set_percent(k1) };
        close(loss_rate(ge, n), p / (p + r) * one_minus_h + r / (p + r) * k1);
        let p14 = 0.02;
        let gi = PathLoss::State { p13: 0, p31: set_percent(1.0), p32: 0, p23: set_percent(1.0), p14: set_percent(p14) };
        close(loss_rate(gi, n), p14 / (1.0 + p14));
    }

    /// Random loss with a 100% correlation (rho + 1 = 2^32): every draw repeats the
    /// first `last`, so `init_crandom()`'s value decides every frame (`get_crandom()`).
    #[test]
    fn full_loss_correlation_repeats_the_first_decision() {
        let model = PathLoss::Random { loss: set_percent(0.5), corr: u32::MAX };
        let mut r = rng();
        let mut low = LossState::new(model, &mut |rho| CrndState::new(rho, 0));
        assert!((0..100).all(|_| low.loss_event(&mut r)));
        let mut high = LossState::new(model, &mut |rho| CrndState::new(rho, u32::MAX));
        assert!((0..100).all(|_| !high.loss_event(&mut r)));
    }
}
