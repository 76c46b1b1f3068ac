//! BBR v1: mirrors net/ipv4/tcp_bbr.c (`bbr_main()` and what it calls) and the
//! windowed max filter of lib/win_minmax.c (`minmax_running_max()`).
//!
//! BBR replaces the congestion avoidance and the pacing-rate update
//! (`ca_ops->cong_control`): on each ACK it updates its model of the path (the
//! bottleneck bandwidth as the max of the delivery-rate samples over 10 round trips,
//! the min RTT over 10 s) and sets the pacing rate (`pacing_gain` x bw) and cwnd
//! (`cwnd_gain` x BDP plus the ACK-aggregation allowance and the TSO quantization
//! budget). Its modes: STARTUP (gain 2/ln 2) until the bandwidth stops growing 25% in
//! three rounds, DRAIN, PROBE_BW's eight-phase gain cycle (5/4, 3/4, then six 1.0),
//! and PROBE_RTT (cwnd 4 for 200 ms and a round when the min RTT is 10 s old).
//! It asks for pacing (`SK_PACING_NEEDED`): fq paces it if present, TCP's own
//! hrtimer otherwise.
//!
//! Not modelled, stated: the long-term ("policer") bandwidth sampling
//! (`bbr_lt_bw_sampling()`: `lt_use_bw` stays 0; it engages only at loss rates of
//! 20% and more over several intervals), and the idle restart (`bbr_cwnd_event()`:
//! darkbuf's senders are bulk or rate-capped writers that never go idle with nothing
//! in flight in the measured window).

use super::cc::{AckCtx, TcpCongestionOps, Window};
use super::rate::RateSample;
use super::{CaState, Pacing, TcpSock};
use rand::RngCore;
use rand_chacha::ChaCha8Rng;

/// Bandwidth is packets per µs << BW_SCALE; gains are fractions << BBR_SCALE.
const BW_SCALE: u32 = 24;
const BW_UNIT: u64 = 1 << BW_SCALE;
const BBR_SCALE: u32 = 8;
const BBR_UNIT: u32 = 1 << BBR_SCALE;
const CYCLE_LEN: u32 = 8;
/// `bbr_bw_rtts`: the max filter's window in round trips.
const BBR_BW_RTTS: u32 = CYCLE_LEN + 2;
/// `bbr_min_rtt_win_sec`, `bbr_probe_rtt_mode_ms`.
const BBR_MIN_RTT_WIN_SEC: u32 = 10;
const BBR_PROBE_RTT_MODE_MS: u32 = 200;
/// `bbr_min_tso_rate` (bit/s).
const BBR_MIN_TSO_RATE: u64 = 1_200_000;
const BBR_PACING_MARGIN_PERCENT: u64 = 1;
/// `bbr_high_gain` = 2/ln(2), `bbr_drain_gain` = its inverse, `bbr_cwnd_gain`.
const BBR_HIGH_GAIN: u32 = BBR_UNIT * 2885 / 1000 + 1;
const BBR_DRAIN_GAIN: u32 = BBR_UNIT * 1000 / 2885;
const BBR_CWND_GAIN: u32 = BBR_UNIT * 2;
const BBR_PACING_GAIN: [u32; CYCLE_LEN as usize] =
    [BBR_UNIT * 5 / 4, BBR_UNIT * 3 / 4, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT];
/// `bbr_cycle_rand`: PROBE_BW starts at a random phase other than the 3/4 one.
const BBR_CYCLE_RAND: u32 = 7;
const BBR_CWND_MIN_TARGET: u32 = 4;
/// `bbr_full_bw_thresh` (5/4) and `bbr_full_bw_cnt`.
const BBR_FULL_BW_THRESH: u64 = BBR_UNIT as u64 * 5 / 4;
const BBR_FULL_BW_CNT: u32 = 3;
const BBR_EXTRA_ACKED_GAIN: u32 = BBR_UNIT;
const BBR_EXTRA_ACKED_WIN_RTTS: u32 = 5;
const BBR_ACK_EPOCH_ACKED_RESET_THRESH: u32 = 1 << 20;
const BBR_EXTRA_ACKED_MAX_US: u64 = 100 * 1000;
/// `TCP_INIT_CWND`; `GSO_MAX_SIZE - 1 - MAX_TCP_HEADER`.
const TCP_INIT_CWND: u32 = 10;
const GSO_BYTES: u64 = 65536 - 1 - 320;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BbrMode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// `struct minmax` (lib/win_minmax.c): the best three samples of a sliding window.
#[derive(Clone, Copy, Debug, Default)]
pub struct MinMax {
    s: [(u32, u32); 3],
}

impl MinMax {
    pub fn get(&self) -> u32 {
        self.s[0].1
    }

    pub fn reset(&mut self, t: u32, v: u32) -> u32 {
        self.s = [(t, v); 3];
        v
    }

    /// `minmax_running_max()`.
    pub fn running_max(&mut self, win: u32, t: u32, v: u32) -> u32 {
        let val = (t, v);
        if v >= self.s[0].1 || t.wrapping_sub(self.s[2].0) > win {
            return self.reset(t, v);
        }
        if v >= self.s[1].1 {
            self.s[2] = val;
            self.s[1] = val;
        } else if v >= self.s[2].1 {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }

    /// `minmax_subwin_update()`: age the choices as the window slides.
    fn subwin_update(&mut self, win: u32, val: (u32, u32)) -> u32 {
        let dt = val.0.wrapping_sub(self.s[0].0);
        if dt > win {
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.0.wrapping_sub(self.s[0].0) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = val;
        }
        self.s[0].1
    }
}

/// `struct bbr`.
pub struct Bbr {
    pub mode: BbrMode,
    min_rtt_us: u32,
    min_rtt_stamp: u32,
    probe_rtt_done_stamp: u32,
    bw: MinMax,
    rtt_cnt: u32,
    next_rtt_delivered: u32,
    cycle_mstamp: u64,
    prev_ca_state: CaState,
    packet_conservation: bool,
    round_start: bool,
    probe_rtt_round_done: bool,
    has_seen_rtt: bool,
    pub full_bw_reached: bool,
    full_bw: u32,
    full_bw_cnt: u32,
    cycle_idx: u32,
    pub pacing_gain: u32,
    pub cwnd_gain: u32,
    prior_cwnd: u32,
    ack_epoch_mstamp: u64,
    ack_epoch_acked: u32,
    extra_acked: [u32; 2],
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    /// `prandom_u32_max()`'s source, seeded per socket from the run's seed.
    rng: ChaCha8Rng,
}

/// The clocks an ACK is processed at: `tcp_jiffies32`, HZ, `tcp_clock_cache` (ns).
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    pub jiffies: u32,
    pub hz: u32,
    pub now_ns: u64,
}

impl Bbr {
    /// `bbr_undo_cwnd()`: a spurious recovery undone restarts the search for the
    /// pipe's full bandwidth (long-term sampling is not engaged here).
    pub fn undo(&mut self) {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
    }

    /// `bbr_init()` for a socket about to send its first segment.
    pub fn new(rng: ChaCha8Rng) -> Bbr {
        Bbr {
            mode: BbrMode::Startup,
            min_rtt_us: u32::MAX,
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: 0,
            bw: MinMax::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: 0,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            probe_rtt_round_done: false,
            has_seen_rtt: false,
            full_bw_reached: false,
            full_bw: 0,
            full_bw_cnt: 0,
            cycle_idx: 0,
            pacing_gain: BBR_HIGH_GAIN,
            cwnd_gain: BBR_HIGH_GAIN,
            prior_cwnd: 0,
            ack_epoch_mstamp: 0,
            ack_epoch_acked: 0,
            extra_acked: [0; 2],
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            rng,
        }
    }

    /// The rest of `bbr_init()` once the socket exists: the first pacing rate from
    /// the initial window and a nominal 1 ms RTT, the min RTT clock.
    pub fn init(&mut self, tp: &mut TcpSock, clock: Clock) {
        self.min_rtt_us = tp.min_rtt_us;
        self.min_rtt_stamp = clock.jiffies;
        self.ack_epoch_mstamp = clock.now_ns / 1000;
        tp.w.ssthresh = u32::MAX;
        self.init_pacing_rate_from_rtt(tp);
    }

    /// `bbr_max_bw()`, `bbr_bw()` (no long-term bandwidth: see the module doc).
    fn bw(&self) -> u32 {
        self.bw.get()
    }

    /// `bbr_min_tso_segs()`.
    pub fn min_tso_segs(pacing_rate: u64) -> u32 {
        if pacing_rate < BBR_MIN_TSO_RATE >> 3 {
            1
        } else {
            2
        }
    }

    /// `bbr_tso_segs_goal()`: ~1 ms of data at the pacing rate, ignoring the device's
    /// GSO limit.
    fn tso_segs_goal(tp: &TcpSock) -> u32 {
        let bytes = (tp.pacing_rate >> super::output::PACING_SHIFT).min(GSO_BYTES) as u32;
        (bytes / tp.mss).max(Bbr::min_tso_segs(tp.pacing_rate)).min(0x7F)
    }

    /// `bbr_rate_bytes_per_sec()`, then `bbr_bw_to_pacing_rate()` (no `SO_MAX_PACING_RATE`).
    fn bw_to_pacing_rate(tp: &TcpSock, bw: u64, gain: u32) -> u64 {
        let mut rate = bw * tp.mss as u64;
        rate *= gain as u64;
        rate >>= BBR_SCALE;
        rate *= 1_000_000 / 100 * (100 - BBR_PACING_MARGIN_PERCENT);
        (rate >> BW_SCALE).min(tp.max_pacing_rate)
    }

    /// `bbr_init_pacing_rate_from_rtt()`.
    fn init_pacing_rate_from_rtt(&mut self, tp: &mut TcpSock) {
        let rtt_us = if tp.srtt_us != 0 {
            self.has_seen_rtt = true;
            (tp.srtt_us >> 3).max(1)
        } else {
            1000
        };
        let bw = tp.w.cwnd as u64 * BW_UNIT / rtt_us as u64;
        tp.pacing_rate = Bbr::bw_to_pacing_rate(tp, bw, BBR_HIGH_GAIN);
    }

    /// `bbr_set_pacing_rate()`: never lower before the pipe is full.
    fn set_pacing_rate(&mut self, tp: &mut TcpSock, bw: u32, gain: u32) {
        let rate = Bbr::bw_to_pacing_rate(tp, bw as u64, gain);
        if !self.has_seen_rtt && tp.srtt_us != 0 {
            self.init_pacing_rate_from_rtt(tp);
        }
        if self.full_bw_reached || rate > tp.pacing_rate {
            tp.pacing_rate = rate;
        }
    }

    /// `bbr_save_cwnd()`: the last good cwnd, restored after recovery or PROBE_RTT.
    fn save_cwnd(&mut self, cwnd: u32) {
        if self.prev_ca_state < CaState::Recovery && self.mode != BbrMode::ProbeRtt {
            self.prior_cwnd = cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(cwnd);
        }
    }

    /// `bbr_bdp()`: ceil(bw x min_rtt x gain) packets.
    fn bdp(&self, bw: u32, gain: u32) -> u32 {
        if self.min_rtt_us == u32::MAX {
            return TCP_INIT_CWND;
        }
        let w = bw as u64 * self.min_rtt_us as u64;
        ((w * gain as u64) >> BBR_SCALE).div_ceil(BW_UNIT) as u32
    }

    /// `bbr_quantization_budget()`: room for three full TSO skbs (one in the qdisc,
    /// one in the NIC, one at the receiver), even, and +2 in the probing phase.
    fn quantization_budget(&self, tp: &TcpSock, cwnd: u32) -> u32 {
        let mut cwnd = cwnd + 3 * Bbr::tso_segs_goal(tp);
        cwnd = (cwnd + 1) & !1;
        if self.mode == BbrMode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    /// `bbr_inflight()`.
    fn inflight(&self, tp: &TcpSock, bw: u32, gain: u32) -> u32 {
        self.quantization_budget(tp, self.bdp(bw, gain))
    }

    /// `bbr_packets_in_net_at_edt()`: what will still be in flight when the next skb
    /// leaves at its EDT.
    fn packets_in_net_at_edt(&self, tp: &TcpSock, inflight_now: u32, now_ns: u64) -> u32 {
        let edt_ns = tp.wstamp_ns.max(now_ns);
        let interval_us = (edt_ns - now_ns) / 1000;
        let interval_delivered = ((self.bw() as u64 * interval_us) >> BW_SCALE) as u32;
        let mut at_edt = inflight_now;
        if self.pacing_gain > BBR_UNIT {
            at_edt += Bbr::tso_segs_goal(tp);
        }
        at_edt.saturating_sub(interval_delivered)
    }

    /// `bbr_ack_aggregation_cwnd()`.
    fn ack_aggregation_cwnd(&self) -> u32 {
        if !self.full_bw_reached {
            return 0;
        }
        let max_aggr = (self.bw() as u64 * BBR_EXTRA_ACKED_MAX_US / BW_UNIT) as u32;
        let aggr = (BBR_EXTRA_ACKED_GAIN * self.extra_acked[0].max(self.extra_acked[1])) >> BBR_SCALE;
        aggr.min(max_aggr)
    }

    /// `bbr_set_cwnd_to_recover_or_restore()`: packet conservation in the first
    /// round of Recovery, the saved cwnd back after it. Returns the cwnd and whether
    /// packet conservation decided it.
    fn set_cwnd_to_recover_or_restore(&mut self, tp: &TcpSock, rs: &RateSample, acked: u32) -> (u32, bool) {
        let (prev, state) = (self.prev_ca_state, tp.ca_state);
        let mut cwnd = tp.w.cwnd;
        if rs.losses > 0 {
            cwnd = (cwnd as i64 - rs.losses as i64).max(1) as u32;
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            self.packet_conservation = true;
            self.next_rtt_delivered = tp.rate.delivered;
            cwnd = tp.in_flight() + acked;
        } else if prev >= CaState::Recovery && state < CaState::Recovery {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(tp.in_flight() + acked), true);
        }
        (cwnd, false)
    }

    /// `bbr_set_cwnd()`: slow-start toward the target, or snap down to it once the
    /// pipe was full.
    fn set_cwnd(&mut self, tp: &mut TcpSock, rs: &RateSample, acked: u32, bw: u32, gain: u32) {
        let mut cwnd = tp.w.cwnd;
        if acked > 0 {
            let (c, conserving) = self.set_cwnd_to_recover_or_restore(tp, rs, acked);
            cwnd = c;
            if !conserving {
                let mut target = self.bdp(bw, gain);
                target += self.ack_aggregation_cwnd();
                target = self.quantization_budget(tp, target);
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || tp.rate.delivered < TCP_INIT_CWND {
                    cwnd += acked;
                }
                cwnd = cwnd.max(BBR_CWND_MIN_TARGET);
            }
        }
        tp.w.cwnd = cwnd.min(tp.w.clamp);
        if self.mode == BbrMode::ProbeRtt {
            tp.w.cwnd = tp.w.cwnd.min(BBR_CWND_MIN_TARGET);
        }
    }

    /// `bbr_is_next_cycle_phase()`.
    fn is_next_cycle_phase(&self, tp: &TcpSock, rs: &RateSample, now_ns: u64) -> bool {
        let is_full_length = tp.rate.delivered_mstamp as i64 - self.cycle_mstamp as i64 > self.min_rtt_us as i64;
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(tp, rs.prior_in_flight, now_ns);
        let bw = self.bw();
        if self.pacing_gain > BBR_UNIT {
            return is_full_length && (rs.losses > 0 || inflight >= self.inflight(tp, bw, self.pacing_gain));
        }
        is_full_length || inflight <= self.inflight(tp, bw, BBR_UNIT)
    }

    /// `bbr_advance_cycle_phase()`.
    fn advance_cycle_phase(&mut self, tp: &TcpSock) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.cycle_mstamp = tp.rate.delivered_mstamp;
    }

    /// `bbr_reset_probe_bw_mode()`: a random phase of the gain cycle.
    fn reset_probe_bw_mode(&mut self, tp: &TcpSock) {
        self.mode = BbrMode::ProbeBw;
        // prandom_u32_max(n): (u64)rand * n >> 32.
        let r = ((self.rng.next_u32() as u64 * BBR_CYCLE_RAND as u64) >> 32) as u32;
        self.cycle_idx = CYCLE_LEN - 1 - r;
        self.advance_cycle_phase(tp);
    }

    /// `bbr_reset_mode()`.
    fn reset_mode(&mut self, tp: &TcpSock) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(tp);
        } else {
            self.mode = BbrMode::Startup;
        }
    }

    /// `bbr_update_bw()`: round counting and the max filter of delivery rates.
    fn update_bw(&mut self, tp: &TcpSock, rs: &RateSample) {
        self.round_start = false;
        if rs.delivered < 0 || rs.interval_us <= 0 {
            return;
        }
        if !super::before(rs.prior_delivered, self.next_rtt_delivered) {
            self.next_rtt_delivered = tp.rate.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        let bw = (rs.delivered as u64 * BW_UNIT / rs.interval_us as u64).min(u32::MAX as u64) as u32;
        if !rs.is_app_limited || bw >= self.bw() {
            self.bw.running_max(BBR_BW_RTTS, self.rtt_cnt, bw);
        }
    }

    /// `bbr_update_ack_aggregation()`: the most data ACKed beyond bw x time in an
    /// epoch, as a max over 5-10 rounds.
    fn update_ack_aggregation(&mut self, tp: &TcpSock, rs: &RateSample) {
        if rs.acked_sacked == 0 || rs.delivered < 0 || rs.interval_us <= 0 {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1F);
            if self.extra_acked_win_rtts >= BBR_EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = tp.rate.delivered_mstamp.saturating_sub(self.ack_epoch_mstamp);
        let mut expected = (self.bw() as u64 * epoch_us / BW_UNIT) as u32;
        if self.ack_epoch_acked <= expected || self.ack_epoch_acked + rs.acked_sacked >= BBR_ACK_EPOCH_ACKED_RESET_THRESH {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = tp.rate.delivered_mstamp;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xFFFFF);
        let extra = (self.ack_epoch_acked - expected).min(tp.w.cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }

    /// `bbr_check_full_bw_reached()`: three rounds without 25% more bandwidth.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let thresh = ((self.full_bw as u64 * BBR_FULL_BW_THRESH) >> BBR_SCALE) as u32;
        if self.bw() >= thresh {
            self.full_bw = self.bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= BBR_FULL_BW_CNT;
    }

    /// `bbr_check_drain()`.
    fn check_drain(&mut self, tp: &mut TcpSock, now_ns: u64) {
        if self.mode == BbrMode::Startup && self.full_bw_reached {
            self.mode = BbrMode::Drain;
            tp.w.ssthresh = self.inflight(tp, self.bw(), BBR_UNIT);
        }
        if self.mode == BbrMode::Drain && self.packets_in_net_at_edt(tp, tp.in_flight(), now_ns) <= self.inflight(tp, self.bw(), BBR_UNIT) {
            self.reset_probe_bw_mode(tp);
        }
    }

    /// `bbr_check_probe_rtt_done()`.
    fn check_probe_rtt_done(&mut self, tp: &mut TcpSock, jiffies: u32) {
        if !(self.probe_rtt_done_stamp != 0 && super::after(jiffies, self.probe_rtt_done_stamp)) {
            return;
        }
        self.min_rtt_stamp = jiffies;
        tp.w.cwnd = tp.w.cwnd.max(self.prior_cwnd);
        self.reset_mode(tp);
    }

    /// `bbr_update_min_rtt()`: the 10 s min RTT filter and PROBE_RTT.
    fn update_min_rtt(&mut self, tp: &mut TcpSock, rs: &RateSample, clock: Clock) {
        let j = clock.jiffies;
        let filter_expired = super::after(j, self.min_rtt_stamp.wrapping_add(BBR_MIN_RTT_WIN_SEC * clock.hz));
        // No receiver delays its ACK by more than the delack timer here that this
        // filter must skip (`rs->is_ack_delayed` is taken as false).
        if rs.rtt_us >= 0 && (rs.rtt_us <= self.min_rtt_us as i64 || filter_expired) {
            self.min_rtt_us = rs.rtt_us as u32;
            self.min_rtt_stamp = j;
        }
        if filter_expired && self.mode != BbrMode::ProbeRtt {
            self.mode = BbrMode::ProbeRtt;
            self.save_cwnd(tp.w.cwnd);
            self.probe_rtt_done_stamp = 0;
        }
        if self.mode == BbrMode::ProbeRtt {
            // Low-rate samples of this mode are ignored.
            let mark = tp.rate.delivered.wrapping_add(tp.in_flight());
            tp.rate.app_limited = if mark == 0 { 1 } else { mark };
            if self.probe_rtt_done_stamp == 0 && tp.in_flight() <= BBR_CWND_MIN_TARGET {
                // msecs_to_jiffies(), rounding up.
                let dj = (BBR_PROBE_RTT_MODE_MS as u64 * clock.hz as u64).div_ceil(1000) as u32;
                self.probe_rtt_done_stamp = j.wrapping_add(dj);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = tp.rate.delivered;
            } else if self.probe_rtt_done_stamp != 0 {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(tp, j);
                }
            }
        }
    }

    /// `bbr_update_gains()`.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            BbrMode::Startup => (BBR_HIGH_GAIN, BBR_HIGH_GAIN),
            BbrMode::Drain => (BBR_DRAIN_GAIN, BBR_HIGH_GAIN),
            BbrMode::ProbeBw => (BBR_PACING_GAIN[self.cycle_idx as usize], BBR_CWND_GAIN),
            BbrMode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }

    /// `bbr_main()`: update the model, then the pacing rate and cwnd.
    pub fn main(&mut self, tp: &mut TcpSock, rs: &RateSample, clock: Clock) {
        self.update_bw(tp, rs);
        self.update_ack_aggregation(tp, rs);
        if self.mode == BbrMode::ProbeBw && self.is_next_cycle_phase(tp, rs, clock.now_ns) {
            self.advance_cycle_phase(tp);
        }
        self.check_full_bw_reached(rs);
        self.check_drain(tp, clock.now_ns);
        self.update_min_rtt(tp, rs, clock);
        self.update_gains();
        let bw = self.bw();
        self.set_pacing_rate(tp, bw, self.pacing_gain);
        self.set_cwnd(tp, rs, rs.acked_sacked, bw, self.cwnd_gain);
    }

    /// `bbr_ssthresh()`: entering recovery or CWR saves cwnd; ssthresh is unchanged.
    pub fn ssthresh(&mut self, w: &Window) -> u32 {
        self.save_cwnd(w.cwnd);
        w.ssthresh
    }

    /// `bbr_set_state(TCP_CA_Loss)`: an RTO ends the round and restarts the
    /// full-pipe detection.
    pub fn on_loss(&mut self) {
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0;
        self.round_start = true;
    }
}

impl TcpCongestionOps for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    /// `bbr_init()`: also asks for pacing (`cmpxchg(&sk->sk_pacing_status,
    /// SK_PACING_NONE, SK_PACING_NEEDED)`): fq's pacing, if fq took the flow, stays.
    fn init(&mut self, tp: &mut TcpSock, clock: Clock) {
        Bbr::init(self, tp, clock);
        if tp.pacing == Pacing::None {
            tp.pacing = Pacing::Needed;
        }
    }

    fn ssthresh(&mut self, tp: &TcpSock) -> u32 {
        Bbr::ssthresh(self, &tp.w)
    }

    fn cong_avoid(&mut self, _w: &mut Window, _acked: u32, _ctx: &AckCtx) {
        unreachable!("BBR has cong_control, not cong_avoid")
    }

    fn has_cong_control(&self) -> bool {
        true
    }

    /// `bbr_main()`.
    fn cong_control(&mut self, tp: &mut TcpSock, rs: &RateSample, clock: Clock) {
        self.main(tp, rs, clock);
    }

    /// `bbr_set_state()`: only TCP_CA_Loss matters to it.
    fn set_state(&mut self, _tp: &mut TcpSock, new_state: CaState, _ctx: &AckCtx) {
        if new_state == CaState::Loss {
            self.on_loss();
        }
    }

    /// `bbr_undo_cwnd()`: the window stays.
    fn undo_cwnd(&mut self, tp: &TcpSock) -> u32 {
        self.undo();
        tp.w.cwnd
    }

    /// `bbr_min_tso_segs()`.
    fn min_tso_segs(&self, tp: &TcpSock) -> Option<u32> {
        Some(Bbr::min_tso_segs(tp.pacing_rate))
    }

    /// `bbr_sndbuf_expand()`: three windows.
    fn sndbuf_expand(&self) -> u32 {
        3
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The max filter keeps the best sample of the last `win` rounds, and falls back
    /// to the second and third choices as the best one ages out.
    #[test]
    fn minmax_running_max_ages_out() {
        let mut m = MinMax::default();
        m.reset(0, 0);
        assert_eq!(m.running_max(10, 1, 100), 100);
        assert_eq!(m.running_max(10, 2, 50), 100);
        // A quarter window later with no new max: 2nd choice from the 2nd quarter.
        assert_eq!(m.running_max(10, 4, 60), 100);
        assert_eq!(m.s[1], (4, 60));
        // Half a window on: a 3rd choice.
        assert_eq!(m.running_max(10, 7, 40), 100);
        assert_eq!(m.s[2], (7, 40));
        // Round 12: 100 (round 1) is 11 rounds old; 60 (round 4) takes over.
        assert_eq!(m.running_max(10, 12, 30), 60);
        // A new max replaces everything.
        assert_eq!(m.running_max(10, 13, 200), 200);
        assert_eq!(m.s, [(13, 200); 3]);
    }

    /// The gains: 2/ln 2 = 2.885 -> 739/256, its inverse 88/256.
    #[test]
    fn gains() {
        assert_eq!(BBR_HIGH_GAIN, 739);
        assert_eq!(BBR_DRAIN_GAIN, 88);
        assert_eq!(BBR_PACING_GAIN[0], 320);
        assert_eq!(BBR_PACING_GAIN[1], 192);
    }

    /// BDP at 100 Mbit/s of 1448-byte segments and a 10 ms min RTT: 8,633 pkt/s x
    /// 10 ms = 86.3 packets, rounded up; cwnd_gain 2 doubles it; the quantization
    /// budget adds 3 TSO goals (at 12.5 MB/s: 12,207 B per ms = 8 segments) and
    /// rounds to even.
    #[test]
    fn bdp_and_quantization_budget() {
        let mut b = Bbr::new(rand::SeedableRng::seed_from_u64(1));
        b.min_rtt_us = 10_000;
        // packets per µs << 24.
        let bw = (100e6 / 8.0 / 1448.0 / 1e6 * BW_UNIT as f64) as u32;
        assert_eq!(b.bdp(bw, BBR_UNIT), 87);
        assert_eq!(b.bdp(bw, BBR_CWND_GAIN), 173);
        let mut tp = crate::sock::tcp::tests::sock();
        tp.pacing_rate = 12_500_000;
        assert_eq!(Bbr::tso_segs_goal(&tp), 8);
        assert_eq!(b.inflight(&tp, bw, BBR_UNIT), 112);
        // Pacing: bw x mss x gain x 99%.
        let rate = Bbr::bw_to_pacing_rate(&tp, bw as u64, BBR_UNIT);
        assert!((rate as f64 / 12_375_000.0 - 1.0).abs() < 1e-3, "{rate}");
    }

    /// One ACK a round: `delivered` packets over 10 ms, an RTT sample of 10 ms (the
    /// first one) then 10.5 ms.
    fn round(b: &mut Bbr, tp: &mut TcpSock, delivered: u32, t_ms: u64) {
        let prior = tp.rate.delivered;
        tp.rate.delivered += delivered;
        tp.rate.delivered_mstamp = t_ms * 1000;
        let rs = RateSample {
            prior_delivered: prior,
            prior_mstamp: 1,
            delivered: delivered as i32,
            interval_us: 10_000,
            rtt_us: if prior == 0 { 10_000 } else { 10_500 },
            acked_sacked: delivered,
            prior_in_flight: tp.in_flight(),
            ..RateSample::default()
        };
        let clock = Clock { jiffies: (t_ms / 4) as u32, hz: 250, now_ns: t_ms * 1_000_000 };
        b.main(tp, &rs, clock);
    }

    /// STARTUP ends after three rounds without 25% more bandwidth (the first round
    /// sets `full_bw`), DRAIN lasts while more than one BDP is in flight, and
    /// PROBE_BW starts at a phase other than the 3/4 one.
    #[test]
    fn startup_drain_probe_bw() {
        let mut tp = crate::sock::tcp::tests::sock();
        let mut b = Bbr::new(rand::SeedableRng::seed_from_u64(7));
        b.init(&mut tp, Clock { jiffies: 0, hz: 250, now_ns: 0 });
        // Initial pacing: 10 packets per nominal 1 ms at 739/256 (less the 1% margin):
        // 10 x 1448 B / 1 ms x 2.887 x 0.99 = 41.38 MB/s.
        assert_eq!(tp.pacing_rate / 1000, 41_381);
        tp.packets_out = 1000;
        for (i, mode) in [BbrMode::Startup, BbrMode::Startup, BbrMode::Startup, BbrMode::Drain].into_iter().enumerate() {
            round(&mut b, &mut tp, 10, 10 * (i as u64 + 1));
            assert_eq!(b.mode, mode, "round {}", i + 1);
        }
        assert!(b.full_bw_reached);
        // 10 packets per 10 ms, 10 ms min RTT: a BDP of 10 packets, plus 3 TSO goals;
        // STARTUP never lowered the initial pacing rate, so a goal is 1 ms of it:
        // 41,381,000 >> 10 = 40,411 B = 27 segments. 10 + 81 = 91, rounded to even.
        assert_eq!(tp.w.ssthresh, 92);
        tp.packets_out = 10;
        round(&mut b, &mut tp, 10, 50);
        assert_eq!(b.mode, BbrMode::ProbeBw);
        assert_ne!(b.pacing_gain, BBR_UNIT * 3 / 4);
    }

    /// After 10 s without a lower RTT, PROBE_RTT caps cwnd at 4 packets for 200 ms
    /// and a round, then restores the saved cwnd.
    #[test]
    fn probe_rtt_every_ten_seconds() {
        let mut tp = crate::sock::tcp::tests::sock();
        let mut b = Bbr::new(rand::SeedableRng::seed_from_u64(7));
        b.init(&mut tp, Clock { jiffies: 0, hz: 250, now_ns: 0 });
        tp.packets_out = 10;
        let mut t = 0;
        let mut cwnd = 0;
        while b.mode != BbrMode::ProbeRtt && t < 20_000 {
            cwnd = tp.w.cwnd;
            t += 10;
            round(&mut b, &mut tp, 10, t);
        }
        // The min RTT (10 ms) was taken at t = 10 ms, jiffy 2; the filter expires after
        // jiffy 2 + 2,500, the first ACK at or after 10,012 ms.
        assert_eq!(t, 10_020);
        assert_eq!(tp.w.cwnd, BBR_CWND_MIN_TARGET);
        tp.packets_out = 4;
        let entered = t;
        while b.mode == BbrMode::ProbeRtt {
            t += 10;
            round(&mut b, &mut tp, 4, t);
        }
        // 200 ms = 50 jiffies, left at the first round end after the stamp has passed.
        assert!((t - entered) > 200 && (t - entered) <= 230, "{} ms", t - entered);
        assert_eq!(b.mode, BbrMode::ProbeBw);
        // The saved cwnd is back, then snapped to the target of the current model.
        assert_eq!(b.prior_cwnd, cwnd);
        assert!(tp.w.cwnd > BBR_CWND_MIN_TARGET);
    }
}
