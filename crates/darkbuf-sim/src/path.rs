//! The wire and what lies beyond it: a link carries what a NIC's port has finished
//! serializing to the far NIC, after a fixed one-way propagation delay (netem's
//! `delay` without jitter, so frames arrive in order). Entries with a `path_delay` of
//! their own go on a link of that delay beside the shared one: each link stays in
//! order, and packets of different delays overtake each other as they would behind
//! per-host netems. With `path.loss`, each link loses frames as a netem of its own
//! would (`loss_event()` in sch_netem.c: random, the 4-state GI model or
//! Gilbert-Elliott, each with its own state per link), drawing from a stream of the
//! path's own so the costs' draws do not move.
//!
//! A netem beyond the wire sees frames, not skbs: the NIC cut each TSO skb into
//! MSS-sized frames. Without path keys the model carries a TSO skb whole, as the far
//! NIC's GRO would hand it up. With a loss, a rate or a limit, the skb meets the netem
//! frame by frame (`link_send_frames()`), each at the time its last bit left the port.

use crate::arena::PktInfo;
use crate::cpu::DevId;
use crate::drivers::nic::WIRE_OVERHEAD;
use crate::event::Event;
use crate::sock::tcp::TCP_HDR;
use crate::world::World;
use darkbuf_scenario::PathLoss;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// A link id: an index into `World::links`.
pub type LinkId = u16;

/// One direction of a wire plus the path beyond it.
pub struct Link {
    /// The receiving device.
    pub to: DevId,
    pub delay_ns: u64,
    /// The link's netem loss model and its state (`None`: lossless).
    pub loss: Option<LossState>,
    /// netem's `rate` in bytes/s (`q->rate`); 0 = none.
    pub rate: u64,
    /// netem's `sch->limit`: frames on the link (its tfifo) before it drops arrivals;
    /// `u32::MAX` = unlimited.
    pub limit: u32,
    /// Packets on the way, with their arrival times, in order.
    pub in_flight: VecDeque<(u64, u32)>,
    /// The frames those packets are (`q->t_len`, which the limit counts): a run of a
    /// TSO skb's frames travels as one packet, as the far end's GRO would merge it.
    pub frames: u32,
}

impl Link {
    pub fn new(to: DevId, delay_ns: u64, loss: Option<LossState>, rate: u64, limit: u32) -> Link {
        Link { to, delay_ns, loss, rate, limit, in_flight: VecDeque::new(), frames: 0 }
    }

    /// Whether the link's netem acts on single frames (a loss, a rate or a limit), so a
    /// TSO skb must meet it as the frames the NIC sends.
    pub fn sees_frames(&self) -> bool {
        self.loss.is_some() || self.rate != 0 || self.limit != u32::MAX
    }
}

impl World {
    /// The last bit of packet `id` left the port now: it reaches the far device after
    /// the link's delay (and, with a rate, its turn at the rate).
    pub fn link_send(&mut self, link: LinkId, id: u32) {
        if self.links[link as usize].loss.is_some() && self.path_lost(link) {
            if self.measuring() {
                self.metrics.path_drops += 1;
            }
            self.kfree_skb(id);
            return;
        }
        let frames = (self.pkts.get(id).segs as u32).max(1);
        if !self.netem_enqueue(link, id, frames, self.now) {
            self.kfree_skb(id);
        }
    }

    /// netem's `netem_enqueue()` of a packet of `frames` frames whose last bit left the
    /// port at `t` (at most now): false when the limit drops it. Its arrival time
    /// is `t` + delay, or with a rate its turn behind the last packet queued; no earlier
    /// than now, where the simulation stands.
    fn netem_enqueue(&mut self, link: LinkId, id: u32, frames: u32, t: u64) -> bool {
        let len = self.pkts.get(id).len as u64;
        let l = &mut self.links[link as usize];
        if l.frames >= l.limit {
            // netem_enqueue(): "q->t_len >= sch->limit" drops the arrival.
            if self.measuring() {
                self.metrics.path_limit_drops += frames as u64;
            }
            return false;
        }
        let mut at = t + l.delay_ns;
        if l.rate != 0 {
            // netem_enqueue() with a rate: the last frame queued is the reference
            // point, its time to send the earliest this one starts, and the frame's
            // own time at the rate comes on top (packet_time_ns()).
            if let Some(&(last, _)) = l.in_flight.back() {
                at = at.max(last);
            }
            at += ((len as u128 * 1_000_000_000) / l.rate as u128) as u64;
        }
        let at = at.max(self.now);
        l.frames += frames;
        l.in_flight.push_back((at, id));
        self.events.push(at, Event::LinkArrival(link));
        true
    }

    /// A TSO skb (`id`, the far end's copy, `segs` > 1) on a link whose netem sees
    /// frames. The NIC cut it into MSS-sized frames (`tcp_gso_segment()`'s cut, done by
    /// the hardware) sent back to back at `rate_bps`, the last ending at `end_ps`. Each
    /// frame meets the netem when its last bit leaves: a loss draw, then the limit.
    /// Without a rate, the frames that pass arrive back to back, and the far NIC's GRO
    /// merges each unbroken run into one skb (`tcp_gro_receive()` flushes at a gap in
    /// the sequence); a run travels as one packet of its frames. With a rate they
    /// arrive one bottleneck slot apart, one per NAPI poll, so each goes alone.
    pub fn link_send_frames(&mut self, link: LinkId, id: u32, end_ps: u64, rate_bps: u64) {
        let info = *self.pkts.get(id);
        let n = info.segs as u32;
        let mss = self.tcp(info.sock).mss;
        let payload = info.len - n * TCP_HDR;
        let wire_ps = |bytes: u64| bytes * 8_000_000_000_000 / rate_bps;
        let start_ps = end_ps - wire_ps((info.len + n * WIRE_OVERHEAD) as u64);
        let singles = self.links[link as usize].rate != 0;
        // The run being merged: its first byte's offset, its frames, the end of its
        // last frame (ns); and whether `id` has been used for a piece yet.
        let (mut run_off, mut run_frames, mut run_end) = (0u32, 0u32, 0u64);
        let mut id_used = false;
        let (mut off, mut wire_bytes) = (0u32, 0u64);
        for _ in 0..n {
            let seg_payload = mss.min(payload - off);
            wire_bytes += (seg_payload + TCP_HDR + WIRE_OVERHEAD) as u64;
            let t = (start_ps + wire_ps(wire_bytes)).div_ceil(1000);
            let lost = self.links[link as usize].loss.is_some() && self.path_lost(link);
            let l = &self.links[link as usize];
            let full = !lost && !singles && l.frames + run_frames >= l.limit;
            if lost || full {
                if self.measuring() {
                    if lost {
                        self.metrics.path_drops += 1;
                    } else {
                        self.metrics.path_limit_drops += 1;
                    }
                }
                if run_frames > 0 {
                    self.path_piece(link, id, &mut id_used, &info, (run_off, off - run_off, run_frames), run_end);
                    run_frames = 0;
                }
            } else if singles {
                self.path_piece(link, id, &mut id_used, &info, (off, seg_payload, 1), t);
            } else {
                if run_frames == 0 {
                    run_off = off;
                }
                run_frames += 1;
                run_end = t;
            }
            off += seg_payload;
        }
        if run_frames > 0 {
            self.path_piece(link, id, &mut id_used, &info, (run_off, off - run_off, run_frames), run_end);
        }
        if !id_used {
            self.kfree_skb(id);
        }
    }

    /// One piece of a TSO skb that passed the netem: `(offset, payload, frames)` of
    /// `info`, its last frame off the port at `t`. The first piece takes the skb's own
    /// arena slot, the others new ones; CWR rides on the first frame only
    /// (`tcp_gso_segment()`), the truesize is shared by payload.
    fn path_piece(&mut self, link: LinkId, id: u32, id_used: &mut bool, info: &PktInfo, piece: (u32, u32, u32), t: u64) {
        let (off, payload, frames) = piece;
        let whole = info.len - info.segs as u32 * TCP_HDR;
        let p = PktInfo {
            len: payload + frames * TCP_HDR,
            truesize: (info.truesize as u64 * payload as u64 / whole.max(1) as u64) as u32,
            seq: info.seq.wrapping_add(off),
            segs: frames as u16,
            cwr: info.cwr && off == 0,
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

    /// `Event::LinkArrival`: the oldest packet on the link arrives at its device.
    pub fn link_arrival(&mut self, link: LinkId) {
        let l = &mut self.links[link as usize];
        let (at, id) = l.in_flight.pop_front().expect("an arrival per packet sent");
        debug_assert_eq!(at, self.now, "a fixed delay keeps arrivals in order");
        let to = l.to;
        l.frames -= (self.pkts.get(id).segs as u32).max(1);
        self.nic_rx(to, id);
    }

    /// netem's `loss_event()` on `link`.
    fn path_lost(&mut self, link: LinkId) -> bool {
        let (Some(rng), Some(l)) = (self.path_rng.as_deref_mut(), self.links[link as usize].loss.as_mut()) else {
            return false;
        };
        l.loss_event(rng)
    }
}

/// A netem's loss model with its `struct clgstate`.
#[derive(Clone, Copy, Debug)]
pub struct LossState {
    model: PathLoss,
    state: ClgState,
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
    /// Gilbert-Elliott in GOOD_STATE.
    pub fn new(model: PathLoss) -> Self {
        let state = match model {
            PathLoss::Gemodel { .. } => ClgState::GoodState,
            _ => ClgState::TxInGapPeriod,
        };
        LossState { model, state }
    }

    /// `loss_event()`: whether the next frame is lost.
    pub fn loss_event(&mut self, rng: &mut ChaCha8Rng) -> bool {
        match self.model {
            // "Random packet drop 0 => none, ~0 => all" (no correlation).
            PathLoss::Random { loss } => loss != 0 && loss >= rng.next_u32(),
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

/// The path's own random stream, when it loses frames: apart from the costs' stream,
/// so a lossy path leaves every other draw where it was.
pub fn path_rng(seed: u64, loss: Option<PathLoss>) -> Option<Box<ChaCha8Rng>> {
    loss.map(|_| Box::new(ChaCha8Rng::seed_from_u64(seed ^ 0x7061_7468_0000_0000)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use darkbuf_scenario::set_percent;

    fn rng() -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(7)
    }

    /// The fraction of `n` frames `model` loses.
    fn loss_rate(model: PathLoss, n: u32) -> f64 {
        let (mut l, mut r) = (LossState::new(model), rng());
        (0..n).filter(|_| l.loss_event(&mut r)).count() as f64 / n as f64
    }

    #[test]
    fn certain_transitions_give_exact_patterns() {
        let all = u32::MAX;
        // Gilbert-Elliott, p = r = 100%, h = 0, 1-k = 0: good and bad alternate, and
        // only the bad state loses.
        let mut ge = LossState::new(PathLoss::Gemodel { p: all, r: all, h: 0, k1: 0 });
        let mut r = rng();
        let got: Vec<bool> = (0..8).map(|_| ge.loss_event(&mut r)).collect();
        assert_eq!(got, [false, true, false, true, false, true, false, true]);
        // 4-state, p13 = 100% with tc's default p31 = 0: into a burst, never out.
        let mut st = LossState::new(PathLoss::State { p13: all, p31: 0, p32: 0, p23: all, p14: 0 });
        assert!((0..8).all(|_| st.loss_event(&mut r)));
        // ... and with p31 = 100%: a loss, then back to the gap, alternating.
        let mut st = LossState::new(PathLoss::State { p13: all, p31: all, p32: 0, p23: all, p14: 0 });
        let got: Vec<bool> = (0..6).map(|_| st.loss_event(&mut r)).collect();
        assert_eq!(got, [true, false, true, false, true, false]);
        // Random 0 never loses, 100% always.
        let mut none = LossState::new(PathLoss::Random { loss: 0 });
        let mut every = LossState::new(PathLoss::Random { loss: all });
        assert!((0..100).all(|_| !none.loss_event(&mut r) && every.loss_event(&mut r)));
    }

    /// The chains' long-run loss rates: random p; Gilbert-Elliott's
    /// p/(p+r) x (1-h) + r/(p+r) x (1-k) ("gemodel 1% 10% 70% 0.1%": 0.0645); the GI
    /// model with isolated losses only (p14) at p14/(1+p14).
    #[test]
    fn long_run_loss_rates_match_the_chains() {
        let n = 2_000_000;
        let close = |got: f64, want: f64| assert!((got - want).abs() < 0.03 * want, "{got} vs {want}");
        close(loss_rate(PathLoss::Random { loss: set_percent(0.01) }, n), 0.01);
        let (p, r, one_minus_h, k1) = (0.01, 0.10, 0.70, 0.001);
        let ge = PathLoss::Gemodel { p: set_percent(p), r: set_percent(r), h: u32::MAX - set_percent(one_minus_h), k1: set_percent(k1) };
        close(loss_rate(ge, n), p / (p + r) * one_minus_h + r / (p + r) * k1);
        let p14 = 0.02;
        let gi = PathLoss::State { p13: 0, p31: set_percent(1.0), p32: 0, p23: set_percent(1.0), p14: set_percent(p14) };
        close(loss_rate(gi, n), p14 / (1.0 + p14));
    }
}
