//! CUBIC v2.3 with HyStart: mirrors net/ipv4/tcp_cubic.c (`bictcp_update()`,
//! `cubictcp_cong_avoid()`, `cubictcp_recalc_ssthresh()`, `cubictcp_state()`,
//! `hystart_update()`, `cubictcp_acked()`), behind [`TcpCongestionOps`].
//!
//! Times are the kernel's: `tcp_jiffies32` for the epoch, microseconds for delays.

use super::cc::{AckCtx, HystartMib, TcpCongestionOps, Window};
use darkbuf_scenario::HystartRoundStart;
use super::{after, CaState, TcpSock};

const BICTCP_BETA_SCALE: u32 = 1024;
const BICTCP_HZ: u32 = 10;
const BETA: u32 = 717;
const BIC_SCALE: u32 = 41;
/// `8 * (BICTCP_BETA_SCALE + beta) / 3 / (BICTCP_BETA_SCALE - beta)`.
const BETA_SCALE: u32 = 8 * (BICTCP_BETA_SCALE + BETA) / 3 / (BICTCP_BETA_SCALE - BETA);
const CUBE_RTT_SCALE: u64 = BIC_SCALE as u64 * 10;
/// `2^40 / (bic_scale * 10)`.
const CUBE_FACTOR: u64 = (1u64 << (10 + 3 * BICTCP_HZ)) / (BIC_SCALE as u64 * 10);
const HYSTART_LOW_WINDOW: u32 = 16;
const HYSTART_ACK_DELTA_US: u32 = 2000;
const HYSTART_MIN_SAMPLES: u8 = 8;

/// `struct bictcp`.
#[derive(Clone, Debug, Default)]
pub struct Cubic {
    pub cnt: u32,
    last_max_cwnd: u32,
    last_cwnd: u32,
    last_time: u32,
    bic_origin_point: u32,
    bic_k: u32,
    /// min delay (µs).
    pub delay_min: u32,
    epoch_start: u32,
    ack_cnt: u32,
    tcp_cwnd: u32,
    sample_cnt: u8,
    /// HyStart found the exit point.
    pub found: bool,
    round_start: u32,
    end_seq: u32,
    last_ack: u32,
    curr_rtt: u32,
    /// HyStart's exits so far: the namespace's MIB in the kernel, kept here per
    /// socket (and across `cubictcp_state()`'s reset) for the report to sum.
    mib: HystartMib,
    /// Which kernel's round start (`bictcp_hystart_reset()`'s caller); the module's code,
    /// kept across `cubictcp_state()`'s reset.
    round_start_at: HystartRoundStart,
}

/// `cubic_root()`: the table lookup and one Newton-Raphson step of tcp_cubic.c.
pub fn cubic_root(a: u64) -> u32 {
    const V: [u8; 64] = [
        0, 54, 54, 54, 118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156, 157, 161, 164, 168, 170, 173, 176,
        179, 181, 185, 187, 190, 192, 194, 197, 199, 200, 202, 204, 206, 209, 211, 213, 215, 217, 219, 221, 222, 224,
        225, 227, 229, 231, 232, 234, 236, 237, 239, 240, 242, 244, 245, 246, 248, 250, 251, 252, 254,
    ];
    let b = 64 - a.leading_zeros();
    if b < 7 {
        return (V[a as usize] as u32 + 35) >> 6;
    }
    let b = ((b * 84) >> 8) - 1;
    let shift = (a >> (b * 3)) as usize;
    let x = ((V[shift] as u32 + 10) << b) >> 6;
    let x = 2 * x + (a / (x as u64 * (x as u64 - 1))) as u32;
    ((x as u64 * 341) >> 10) as u32
}

impl Cubic {
    /// `cubictcp_init()`'s state, with the HyStart round start of `round_start_at`'s
    /// kernel.
    pub fn new(round_start_at: HystartRoundStart) -> Cubic {
        Cubic { round_start_at, ..Cubic::default() }
    }

    fn hystart_reset(&mut self, ctx: &AckCtx) {
        self.round_start = ctx.now_us;
        self.last_ack = ctx.now_us;
        self.end_seq = ctx.snd_nxt;
        self.curr_rtt = u32::MAX;
        self.sample_cnt = 0;
    }

    /// `bictcp_update()`.
    fn update(&mut self, cwnd: u32, acked: u32, ctx: &AckCtx) {
        self.ack_cnt += acked;
        if self.last_cwnd == cwnd && (ctx.jiffies.wrapping_sub(self.last_time) as i32) <= (ctx.hz / 32) as i32 {
            return;
        }
        if !(self.epoch_start != 0 && ctx.jiffies == self.last_time) {
            self.last_cwnd = cwnd;
            self.last_time = ctx.jiffies;
            if self.epoch_start == 0 {
                self.epoch_start = ctx.jiffies;
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                if self.last_max_cwnd <= cwnd {
                    self.bic_k = 0;
                    self.bic_origin_point = cwnd;
                } else {
                    self.bic_k = cubic_root(CUBE_FACTOR * (self.last_max_cwnd - cwnd) as u64);
                    self.bic_origin_point = self.last_max_cwnd;
                }
            }
            let mut t = ctx.jiffies.wrapping_sub(self.epoch_start) as i32 as i64 as u64;
            t += (self.delay_min as u64 * ctx.hz as u64).div_ceil(1_000_000);
            t = (t << BICTCP_HZ) / ctx.hz as u64;
            let offs = (self.bic_k as u64).abs_diff(t);
            let delta = ((CUBE_RTT_SCALE * offs * offs * offs) >> (10 + 3 * BICTCP_HZ)) as u32;
            let target = if t < self.bic_k as u64 {
                self.bic_origin_point.wrapping_sub(delta)
            } else {
                self.bic_origin_point.wrapping_add(delta)
            };
            self.cnt = if target > cwnd { cwnd / (target - cwnd) } else { 100 * cwnd };
            if self.last_max_cwnd == 0 && self.cnt > 20 {
                self.cnt = 20;
            }
        }
        // TCP friendliness.
        let delta = (cwnd * BETA_SCALE) >> 3;
        while delta > 0 && self.ack_cnt > delta {
            self.ack_cnt -= delta;
            self.tcp_cwnd += 1;
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            self.cnt = self.cnt.min(max_cnt);
        }
        self.cnt = self.cnt.max(2);
    }

    /// `cubictcp_recalc_ssthresh()` with fast convergence.
    fn recalc_ssthresh(&mut self, cwnd: u32) -> u32 {
        self.epoch_start = 0;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd {
            cwnd * (BICTCP_BETA_SCALE + BETA) / (2 * BICTCP_BETA_SCALE)
        } else {
            cwnd
        };
        (cwnd * BETA / BICTCP_BETA_SCALE).max(2)
    }

    /// `cubictcp_acked()`: track the minimum delay; HyStart in slow start.
    fn acked(&mut self, rtt_us: u32, w: &mut Window, ctx: &AckCtx) {
        if self.epoch_start != 0 && (ctx.jiffies.wrapping_sub(self.epoch_start) as i32) < ctx.hz as i32 {
            return;
        }
        let delay = rtt_us.max(1);
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
        // Before v6.14 the low-window test was here, so that no round started below it.
        let low = self.round_start_at != HystartRoundStart::V6_14 && w.cwnd < HYSTART_LOW_WINDOW;
        if !self.found && w.in_slow_start() && !low {
            self.hystart_update(delay, w, ctx);
        }
    }

    /// `hystart_update()`: the ACK-train and the delay detectors.
    fn hystart_update(&mut self, delay: u32, w: &mut Window, ctx: &AckCtx) {
        if self.round_start_at != HystartRoundStart::V5_15 && after(ctx.snd_una, self.end_seq) {
            self.hystart_reset(ctx);
        }
        if w.cwnd < HYSTART_LOW_WINDOW {
            return;
        }
        if (ctx.now_us.wrapping_sub(self.last_ack) as i32) <= HYSTART_ACK_DELTA_US as i32 {
            self.last_ack = ctx.now_us;
            // hystart_ack_delay(): TSO/GRO aggregation, at most 1 ms.
            let ack_delay =
                (ctx.gso_max_size as u64 * 4 * 1_000_000).checked_div(ctx.pacing_rate).map_or(0, |d| d.min(1000) as u32);
            let mut threshold = self.delay_min + ack_delay;
            if !ctx.paced {
                threshold >>= 1;
            }
            if (ctx.now_us.wrapping_sub(self.round_start) as i32) > threshold as i32 {
                self.found = true;
                self.mib.train_detect += 1;
                self.mib.train_cwnd += w.cwnd as u64;
                w.ssthresh = w.cwnd;
            }
        }
        self.curr_rtt = self.curr_rtt.min(delay);
        if self.sample_cnt < HYSTART_MIN_SAMPLES {
            self.sample_cnt += 1;
        } else if self.curr_rtt > self.delay_min + (self.delay_min >> 3).clamp(4000, 16000) {
            self.found = true;
            self.mib.delay_detect += 1;
            self.mib.delay_cwnd += w.cwnd as u64;
            w.ssthresh = w.cwnd;
        }
    }
}


impl TcpCongestionOps for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn ssthresh(&mut self, tp: &TcpSock) -> u32 {
        self.recalc_ssthresh(tp.w.cwnd)
    }

    /// `cubictcp_cong_avoid()`.
    fn cong_avoid(&mut self, w: &mut Window, acked: u32, ctx: &AckCtx) {
        let mut acked = acked;
        if w.in_slow_start() {
            // Up to v5.15 a round started here, on a cwnd-limited ACK (`ack` is
            // `snd_una` after it).
            if self.round_start_at == HystartRoundStart::V5_15 && after(ctx.snd_una, self.end_seq) {
                self.hystart_reset(ctx);
            }
            acked = w.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        self.update(w.cwnd, acked, ctx);
        let cnt = self.cnt;
        w.cong_avoid_ai(cnt, acked);
    }

    /// `cubictcp_state()`: an RTO (TCP_CA_Loss) resets the curve and HyStart.
    fn set_state(&mut self, _tp: &mut TcpSock, new_state: CaState, ctx: &AckCtx) {
        if new_state == CaState::Loss {
            *self = Cubic { mib: self.mib, round_start_at: self.round_start_at, ..Cubic::default() };
            self.hystart_reset(ctx);
        }
    }

    fn pkts_acked(&mut self, rtt_us: Option<u32>, w: &mut Window, ctx: &AckCtx) {
        if let Some(rtt) = rtt_us {
            self.acked(rtt, w, ctx);
        }
    }

    /// `tcp_reno_undo_cwnd()`.
    fn undo_cwnd(&mut self, tp: &TcpSock) -> u32 {
        tp.w.cwnd.max(tp.prior_cwnd)
    }

    fn hystart_mib(&self) -> HystartMib {
        self.mib
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cubic_root()` within its documented 0.195% average error, on exact cubes.
    #[test]
    fn cubic_root_of_cubes() {
        for x in [2u64, 10, 100, 1000, 12345, 100_000] {
            let r = cubic_root(x * x * x) as f64;
            assert!((r / x as f64 - 1.0).abs() < 0.01, "cbrt({}^3) = {r}", x);
        }
    }

    /// CUBIC after a loss at W_max = 100: ssthresh 100 x 717 / 1024 = 70, and the
    /// window then grows back toward W_max as the cubic curve says: K = cbrt(W_max *
    /// (1 - beta) / C) = cbrt(30.2 / 0.4) = 4.2 s in the 100 ms-RTT units the constants
    /// are scaled for.
    #[test]
    fn cubic_reduces_to_seventy_percent_and_plans_k() {
        let mut c = Cubic::default();
        assert_eq!(c.recalc_ssthresh(100), 70);
        let ctx = AckCtx { jiffies: 1000, now_us: 0, hz: 1000, snd_una: 0, snd_nxt: 0, pacing_rate: 0, paced: false, gso_max_size: 65536 };
        c.update(70, 1, &ctx);
        let k_s = c.bic_k as f64 / 1024.0;
        assert!((k_s - 4.2).abs() < 0.2, "K = {k_s} s");
        assert_eq!(c.bic_origin_point, 100);
        assert!(c.cnt >= 2);
    }

    fn ctx(now_us: u32, snd_una: u32, snd_nxt: u32) -> AckCtx {
        AckCtx { jiffies: 5000, now_us, hz: 1000, snd_una, snd_nxt, pacing_rate: 0, paced: false, gso_max_size: 65536 }
    }

    /// The ACK train: delay_min 10 ms, an unpaced socket (threshold delay_min / 2 =
    /// 5 ms, `hystart_ack_delay()` 0 without a pacing rate), ACKs 1 ms apart from the
    /// round's start. The ACK at 6 ms is the first past 5 ms: slow start ends there at
    /// cwnd 20, counted as TCPHystartTrainDetect 1 / TCPHystartTrainCwnd 20.
    #[test]
    fn hystart_ack_train_exit_is_counted_with_its_cwnd() {
        let mut c = Cubic::default();
        let mut w = Window { cwnd: 20, ssthresh: u32::MAX, cwnd_cnt: 0, clamp: u32::MAX };
        for i in 0..=5 {
            c.acked(10_000, &mut w, &ctx(1_000_000 + i * 1000, 1, 100));
            assert!(!c.found, "no exit at {} ms", i);
        }
        c.acked(10_000, &mut w, &ctx(1_006_000, 1, 100));
        assert!(c.found);
        assert_eq!(w.ssthresh, 20);
        assert_eq!(c.hystart_mib(), HystartMib { train_detect: 1, train_cwnd: 20, delay_detect: 0, delay_cwnd: 0 });
    }

    /// The delay detector: ACKs 3 ms apart never make a train (`hystart_ack_delta_us`
    /// is 2 ms). delay_min 10 ms, so the threshold is 10 + clamp(10 / 8, 4, 16) = 14 ms.
    /// A new round (snd_una past end_seq) whose samples are all 15 ms ends slow start on
    /// its ninth ACK, after HYSTART_MIN_SAMPLES = 8: TCPHystartDelayDetect 1 at cwnd 30.
    #[test]
    fn hystart_delay_exit_is_counted_after_eight_samples() {
        let mut c = Cubic::default();
        let mut w = Window { cwnd: 30, ssthresh: u32::MAX, cwnd_cnt: 0, clamp: u32::MAX };
        c.acked(10_000, &mut w, &ctx(1_000_000, 1, 100));
        for i in 1..=8 {
            c.acked(15_000, &mut w, &ctx(1_000_000 + i * 3000, 101, 200));
            assert!(!c.found, "sample {i} is one of the round's first eight");
        }
        c.acked(15_000, &mut w, &ctx(1_027_000, 101, 200));
        assert!(c.found);
        assert_eq!(w.ssthresh, 30);
        assert_eq!(c.hystart_mib(), HystartMib { train_detect: 0, train_cwnd: 0, delay_detect: 1, delay_cwnd: 30 });
    }

    /// Where a HyStart round starts, by kernel. An ACK at cwnd 10 past `end_seq`:
    /// v6.14 starts a round there (`end_seq` = `snd_nxt` 100); v5.16 none, below
    /// `hystart_low_window`, and its first round starts at the first ACK at cwnd 16
    /// (`end_seq` 300); v5.15's `hystart_update()` starts none, its
    /// `cubictcp_cong_avoid()` does.
    #[test]
    fn hystart_round_start_by_kernel() {
        let mut w = Window { cwnd: 10, ssthresh: u32::MAX, cwnd_cnt: 0, clamp: u32::MAX };
        let mut new = Cubic::new(HystartRoundStart::V6_14);
        new.acked(10_000, &mut w, &ctx(1_000_000, 1, 100));
        assert_eq!((new.end_seq, new.round_start), (100, 1_000_000));
        let mut old = Cubic::new(HystartRoundStart::V5_16);
        old.acked(10_000, &mut w, &ctx(1_000_000, 1, 100));
        assert_eq!(old.end_seq, 0);
        w.cwnd = 16;
        old.acked(10_000, &mut w, &ctx(1_005_000, 50, 300));
        assert_eq!((old.end_seq, old.round_start), (300, 1_005_000));
        let mut v515 = Cubic::new(HystartRoundStart::V5_15);
        v515.acked(10_000, &mut w, &ctx(1_005_000, 50, 300));
        assert_eq!(v515.end_seq, 0);
        v515.cong_avoid(&mut w, 1, &ctx(1_005_000, 50, 300));
        assert_eq!((v515.end_seq, v515.round_start), (300, 1_005_000));
    }
}
