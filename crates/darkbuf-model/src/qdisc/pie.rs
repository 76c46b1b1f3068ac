//! pie: mirrors net/sched/sch_pie.c and include/net/pie.h (6.x), RFC 8033.
//!
//! PIE drops (or marks) arriving packets with a probability that a controller updates
//! every `tupdate` from the queueing delay: up by `alpha` per unit of delay above
//! `target`, and by `beta` per unit of delay growth since the last update. The three
//! functions sch_pie.c exports for fq_pie are here as free functions over
//! [`PieParams`] and [`PieVars`]: [`pie_drop_early`] on enqueue,
//! [`pie_process_dequeue`] on dequeue (the delay: the head packet's sojourn by
//! default, or Little's law over a measured drain rate with `dq_rate_estimator`),
//! and [`pie_calculate_probability`], which the `adapt_timer` runs.
//!
//! - Arithmetic as the kernel's: times in psched ticks (64 ns, `PSCHED_SHIFT` 6),
//!   probabilities as fractions of `MAX_PROB` (2^56 - 1), the same `u32` truncations
//!   (`dtime`, the rate estimator's `count`, `backlog << PIE_SCALE`) and the signed
//!   update computed modulo 2^64.
//! - **The timer.** `pie_init()` arms `adapt_timer` for `HZ / 2` and each run re-arms
//!   it for `tupdate` jiffies later, on the timer wheel ([`crate::jiffies`]): at
//!   HZ 250 the first run is at 512 ms and the default 15 ms `tupdate` (4 jiffies)
//!   becomes a run every 5 jiffies, 20 ms. The callback reads only state that
//!   enqueue and dequeue change, so the model runs each due tick just before the next
//!   operation on the qdisc ([`Qdisc::run_timers`] brings it up to date for a
//!   report): the same results as a timer event, with no event per tick. The qdisc is
//!   created at time 0, jiffy 0. The time the callback takes on a CPU is not booked.
//! - **Randomness.** `get_random_bytes()` in [`pie_drop_early`] draws from a ChaCha8
//!   stream of the qdisc's own, seeded from [`DevInfo::hash_key`], so a run stays
//!   deterministic and the simulator's other draws do not move. (The children of one
//!   `mq` share the key, so their streams start alike.)
//! - `skb->len` is [`Skb::len`], the L2 length: for a GSO skb that also counts each
//!   segment's headers, which the kernel's `skb->len` does not.
//!
//! Defaults (`pie_params_init()`): limit 1000 packets (not `tx_queue_len`), target
//! 15 ms, tupdate 15 ms, alpha 2, beta 20 (in sixteenths: 0.125 and 1.25), no ECN,
//! no bytemode, delay from timestamps. Not modelled: `pie_change()` on a running
//! qdisc (the scenario configures it once).

use super::tc_print::{g, time};
use super::{DevInfo, EnqueueVerdict, Qdisc, QdiscStats};
use crate::jiffies::{jiffies_to_usecs, jiffy_start_ns, timer_expiry, usecs_to_jiffies};
use crate::params::{ParamError, Params};
use crate::Skb;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// `MAX_PROB`: a probability of 1.
pub const MAX_PROB: u64 = u64::MAX >> 8;
/// `DTIME_INVALID`.
const DTIME_INVALID: u64 = u64::MAX;
/// `QUEUE_THRESHOLD`: bytes of backlog before the drain rate is measured.
pub const QUEUE_THRESHOLD: u32 = 16384;
/// `DQCOUNT_INVALID` (-1 in a `u64`).
const DQCOUNT_INVALID: u64 = u64::MAX;
/// `PIE_SCALE`.
const PIE_SCALE: u32 = 8;
/// `PSCHED_SHIFT`: a psched tick is 64 ns.
const PSCHED_SHIFT: u32 = 6;
/// `PSCHED_TICKS_PER_SEC`.
pub const PSCHED_TICKS_PER_SEC: u64 = 1_000_000_000 >> PSCHED_SHIFT;
/// alpha and beta as tc takes them: 0..=32 sixteenths (`ALPHA_MAX`, `BETA_MAX`).
const ALPHA_BETA_MAX: u32 = 32;

/// `PSCHED_NS2TICKS()`.
pub const fn psched_ns2ticks(ns: u64) -> u64 {
    ns >> PSCHED_SHIFT
}

/// `PSCHED_TICKS2NS()`.
pub const fn psched_ticks2ns(ticks: u64) -> u64 {
    ticks << PSCHED_SHIFT
}

/// `struct pie_params`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PieParams {
    /// Target delay, psched ticks.
    pub target: u64,
    /// Jiffies between probability updates.
    pub tupdate: u32,
    /// Packets (pie: `sch->limit` as well).
    pub limit: u32,
    /// Sixteenths.
    pub alpha: u32,
    pub beta: u32,
    pub ecn: bool,
    pub bytemode: bool,
    pub dq_rate_estimator: bool,
}

impl PieParams {
    /// `pie_params_init()`.
    pub fn init(hz: u32) -> Self {
        PieParams {
            target: psched_ns2ticks(15_000_000),
            tupdate: usecs_to_jiffies(15_000, hz) as u32,
            limit: 1000,
            alpha: 2,
            beta: 20,
            ecn: false,
            bytemode: false,
            dq_rate_estimator: false,
        }
    }

    /// `target` in µs, as `pie_dump()` reports it.
    pub fn target_us(&self) -> u32 {
        (psched_ticks2ns(self.target) as u32) / 1000
    }
}

/// `struct pie_vars`: one controller's state (the qdisc's, or one fq_pie flow's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PieVars {
    /// Current queue delay, psched ticks.
    pub qdelay: u64,
    pub qdelay_old: u64,
    /// Burst allowance left, psched ticks.
    pub burst_time: u64,
    pub dq_tstamp: u64,
    /// Drop probability, a fraction of [`MAX_PROB`].
    pub prob: u64,
    pub accu_prob: u64,
    pub dq_count: u64,
    /// Bytes per psched tick, scaled by 2^`PIE_SCALE`.
    pub avg_dq_rate: u32,
    pub backlog_old: u32,
}

impl Default for PieVars {
    /// Zeroed (`kvcalloc`), then `pie_vars_init()`.
    fn default() -> Self {
        let mut v = PieVars {
            qdelay: 0,
            qdelay_old: 0,
            burst_time: 0,
            dq_tstamp: 0,
            prob: 0,
            accu_prob: 0,
            dq_count: 0,
            avg_dq_rate: 0,
            backlog_old: 0,
        };
        v.init();
        v
    }
}

impl PieVars {
    /// `pie_vars_init()`: a new measurement cycle. The probability and the delays
    /// are kept.
    pub fn init(&mut self) {
        self.burst_time = psched_ns2ticks(150_000_000);
        self.dq_tstamp = DTIME_INVALID;
        self.accu_prob = 0;
        self.dq_count = DQCOUNT_INVALID;
        self.avg_dq_rate = 0;
    }

    /// The probability as a fraction, as tc prints it.
    pub fn prob_fraction(&self) -> f64 {
        (self.prob << 8) as f64 / u64::MAX as f64
    }

    /// The delay in µs, as `pie_dump_stats()` reports it (through a `u32` of ns).
    pub fn delay_us(&self) -> u32 {
        psched_ticks2ns(self.qdelay) as u32 / 1000
    }
}

/// `struct pie_stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PieStats {
    pub packets_in: u32,
    pub dropped: u32,
    pub overlimit: u32,
    pub ecn_mark: u32,
    pub maxq: u32,
}

/// `pie_drop_early()`: whether to drop (or mark) an arriving packet of `packet_size`
/// bytes with `backlog` bytes queued. `mtu` is `psched_mtu(dev)`; `rng` stands for
/// `get_random_bytes()`.
pub fn pie_drop_early(
    params: &PieParams,
    vars: &mut PieVars,
    backlog: u32,
    packet_size: u32,
    mtu: u32,
    rng: &mut ChaCha8Rng,
) -> bool {
    // If there is still burst allowance left skip random early drop.
    if vars.burst_time > 0 {
        return false;
    }
    // If current delay is less than half of target, and if drop prob is low
    // already, disable early_drop.
    if vars.qdelay < params.target / 2 && vars.prob < MAX_PROB / 5 {
        return false;
    }
    // Fewer than 2 MTU-sized packets: no early drop, similar to min_th in RED.
    if backlog < 2u32.wrapping_mul(mtu) {
        return false;
    }
    let local_prob = if params.bytemode && packet_size <= mtu {
        (packet_size as u64).wrapping_mul(vars.prob / mtu as u64)
    } else {
        vars.prob
    };
    if local_prob == 0 {
        vars.accu_prob = 0;
    } else {
        vars.accu_prob = vars.accu_prob.wrapping_add(local_prob);
    }
    if vars.accu_prob < (MAX_PROB / 100) * 85 {
        return false;
    }
    if vars.accu_prob >= (MAX_PROB / 2) * 17 {
        return true;
    }
    let rnd = rng.next_u64();
    if (rnd >> 8) < local_prob {
        vars.accu_prob = 0;
        return true;
    }
    false
}

/// `pie_process_dequeue()` for a packet of `len` bytes enqueued at psched tick
/// `enqueue_time`, leaving `backlog` bytes, at psched tick `now`.
pub fn pie_process_dequeue(len: u32, enqueue_time: u64, params: &PieParams, vars: &mut PieVars, backlog: u32, now: u64) {
    let dtime: u32;
    if !params.dq_rate_estimator {
        // Without the estimator, the delay is the packet's sojourn.
        vars.qdelay = if backlog != 0 { now.wrapping_sub(enqueue_time) } else { 0 };
        let d = if vars.dq_tstamp != DTIME_INVALID { now.wrapping_sub(vars.dq_tstamp) as u32 } else { 0 };
        vars.dq_tstamp = now;
        if d == 0 {
            return;
        }
        dtime = d;
    } else {
        // About 10 packets queued and no cycle running: start measuring the drain rate.
        if backlog >= QUEUE_THRESHOLD && vars.dq_count == DQCOUNT_INVALID {
            vars.dq_tstamp = now;
            vars.dq_count = 0;
        }
        if vars.dq_count == DQCOUNT_INVALID {
            return;
        }
        vars.dq_count = vars.dq_count.wrapping_add(len as u64);
        if vars.dq_count < QUEUE_THRESHOLD as u64 {
            return;
        }
        let d = now.wrapping_sub(vars.dq_tstamp) as u32;
        if d == 0 {
            return;
        }
        let count = ((vars.dq_count << PIE_SCALE) as u32) / d;
        vars.avg_dq_rate = if vars.avg_dq_rate == 0 {
            count
        } else {
            (vars.avg_dq_rate - (vars.avg_dq_rate >> 3)).wrapping_add(count >> 3)
        };
        // Below the threshold, hold on to the last rate; else measure again.
        if backlog < QUEUE_THRESHOLD {
            vars.dq_count = DQCOUNT_INVALID;
        } else {
            vars.dq_count = 0;
            vars.dq_tstamp = now;
        }
        dtime = d;
    }
    // burst_allowance_reduction:
    if vars.burst_time > 0 {
        vars.burst_time = vars.burst_time.saturating_sub(dtime as u64);
    }
}

/// `pie_calculate_probability()`: one run of the controller, with `backlog` bytes
/// queued.
pub fn pie_calculate_probability(params: &PieParams, vars: &mut PieVars, backlog: u32) {
    let (qdelay, qdelay_old);
    if params.dq_rate_estimator {
        qdelay_old = vars.qdelay;
        vars.qdelay_old = vars.qdelay;
        qdelay = if vars.avg_dq_rate > 0 { (backlog.wrapping_shl(PIE_SCALE) / vars.avg_dq_rate) as u64 } else { 0 };
    } else {
        qdelay = vars.qdelay;
        qdelay_old = vars.qdelay_old;
    }
    // qdelay 0 with a backlog: the backlog is very small, no update this round.
    let mut update_prob = !(qdelay == 0 && backlog != 0);

    // alpha and beta arrive in sixteenths (0..32) and have units of HZ.
    let mut alpha = (params.alpha as u64).wrapping_mul(MAX_PROB / PSCHED_TICKS_PER_SEC) >> 4;
    let mut beta = (params.beta as u64).wrapping_mul(MAX_PROB / PSCHED_TICKS_PER_SEC) >> 4;
    // Scaled by how heavy the congestion is (RFC 8033).
    if vars.prob < MAX_PROB / 10 {
        alpha >>= 1;
        beta >>= 1;
        let mut power: u64 = 100;
        while vars.prob < MAX_PROB / power && power <= 1_000_000 {
            alpha >>= 2;
            beta >>= 2;
            power *= 10;
        }
    }
    // s64 arithmetic on u64 operands: two's complement, modulo 2^64.
    let mut delta: i64 = 0;
    delta = delta.wrapping_add(alpha.wrapping_mul(qdelay.wrapping_sub(params.target)) as i64);
    delta = delta.wrapping_add(beta.wrapping_mul(qdelay.wrapping_sub(qdelay_old)) as i64);

    let oldprob = vars.prob;
    // Increase in steps of no more than 2%.
    if delta > (MAX_PROB / (100 / 2)) as i64 && vars.prob >= MAX_PROB / 10 {
        delta = ((MAX_PROB / 100) * 2) as i64;
    }
    // Non-linear drop: grow quickly at high delays (>= 250 ms).
    if qdelay > psched_ns2ticks(250_000_000) {
        delta = delta.wrapping_add((MAX_PROB / (100 / 2)) as i64);
    }
    vars.prob = vars.prob.wrapping_add(delta as u64);
    if delta > 0 {
        // prevent overflow
        if vars.prob < oldprob {
            vars.prob = MAX_PROB;
            // Already at the maximum: skip the non-linear reduction below.
            update_prob = false;
        }
    } else if vars.prob > oldprob {
        // prevent underflow
        vars.prob = 0;
    }
    // Delay 0 for two consecutive updates: reduce the probability quickly (to 98.4%).
    if qdelay == 0 && qdelay_old == 0 && update_prob {
        vars.prob -= vars.prob / 64;
    }
    vars.qdelay = qdelay;
    vars.backlog_old = backlog;
    // Restart the measurement cycle when the delay has been low for two updates,
    // the probability is zero, and (with the estimator) a rate has been measured.
    if vars.qdelay < params.target / 2
        && vars.qdelay_old < params.target / 2
        && vars.prob == 0
        && (!params.dq_rate_estimator || vars.avg_dq_rate > 0)
    {
        vars.init();
    }
    if !params.dq_rate_estimator {
        vars.qdelay_old = qdelay;
    }
}

/// `adapt_timer`, run lazily (see the module doc): the jiffy and the time of its next
/// run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AdaptTimer {
    hz: u32,
    next_jiffy: u64,
    /// When it runs next; `u64::MAX` once it is no longer armed.
    pub next_ns: u64,
}

impl AdaptTimer {
    /// `mod_timer(&q->adapt_timer, jiffies + HZ / 2)` in `*_init()`, at jiffy 0.
    pub fn armed_at_init(hz: u32) -> Self {
        let j = timer_expiry((hz / 2) as u64, 0);
        AdaptTimer { hz, next_jiffy: j, next_ns: jiffy_start_ns(j, hz) }
    }

    /// The run due now has happened; the callback re-armed the timer with
    /// `mod_timer(jiffies + delta)`, or did not (`None`).
    pub fn rearm(&mut self, delta: Option<u64>) {
        match delta {
            Some(d) => {
                let j = self.next_jiffy;
                self.next_jiffy = timer_expiry(j + d, j + 1);
                self.next_ns = jiffy_start_ns(self.next_jiffy, self.hz);
            }
            None => self.next_ns = u64::MAX,
        }
    }
}

/// The parameters pie and fq_pie share, as tc sends them (`*_change()`): `target`,
/// `tupdate`, `alpha` and `beta` only when non-zero (0 keeps the default), the flags
/// when given. tc refuses alpha and beta above 32.
pub(crate) fn take_pie_params(params: &mut Params, p: &mut PieParams, hz: u32) -> Result<(), ParamError> {
    use super::codel::take_tc_time_us;
    if let Some(us) = take_tc_time_us(params, "target")? {
        if us != 0 {
            p.target = psched_ns2ticks(us as u64 * 1000);
        }
    }
    if let Some(us) = take_tc_time_us(params, "tupdate")? {
        if us != 0 {
            p.tupdate = usecs_to_jiffies(us as u64, hz) as u32;
        }
    }
    let alpha = params.take_u32("alpha", 0, 0, ALPHA_BETA_MAX)?;
    if alpha != 0 {
        p.alpha = alpha;
    }
    let beta = params.take_u32("beta", 0, 0, ALPHA_BETA_MAX)?;
    if beta != 0 {
        p.beta = beta;
    }
    p.ecn = params.take_bool("ecn", p.ecn)?;
    p.bytemode = params.take_bool("bytemode", p.bytemode)?;
    p.dq_rate_estimator = params.take_bool("dq_rate_estimator", p.dq_rate_estimator)?;
    Ok(())
}

/// Both qdiscs count jiffies.
pub(crate) fn check_hz(dev: &DevInfo) -> Result<(), ParamError> {
    if dev.hz == 0 {
        return Err(ParamError::Invalid {
            key: "tupdate".into(),
            message: "the device's HZ is 0; pie's timer counts jiffies".into(),
            expected: "a machine profile with hz > 0".into(),
        });
    }
    Ok(())
}

/// The options pie and fq_pie print alike: `target`, `tupdate` (`jiffies_to_usecs()`),
/// `alpha` and `beta`.
pub(crate) fn tc_pie_params(p: &PieParams, hz: u32) -> String {
    format!(
        "target {} tupdate {} alpha {} beta {}",
        time(p.target_us()),
        time(jiffies_to_usecs(p.tupdate as u64, hz) as u32),
        p.alpha,
        p.beta
    )
}

/// The flags that are on, each with a leading space, as both print them last.
pub(crate) fn tc_pie_flags(p: &PieParams) -> String {
    let mut s = String::new();
    for (on, name) in [(p.ecn, "ecn"), (p.bytemode, "bytemode"), (p.dq_rate_estimator, "dq_rate_estimator")] {
        if on {
            s.push(' ');
            s.push_str(name);
        }
    }
    s
}

/// The seed of a qdisc's `get_random_bytes()` stream.
pub(crate) fn pie_rng(dev: &DevInfo) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(0x7069_6500_0000_0000 | dev.hash_key as u64)
}

const PIE_PARAMS: &[&str] = &["limit", "target", "tupdate", "alpha", "beta", "ecn", "bytemode", "dq_rate_estimator"];

/// The `pie` qdisc (`struct pie_sched_data`): one FIFO under one controller.
pub struct Pie {
    params: PieParams,
    vars: PieVars,
    pstats: PieStats,
    timer: AdaptTimer,
    hz: u32,
    mtu: u32,
    rng: ChaCha8Rng,
    q: VecDeque<Skb>,
    backlog: u64,
    stats: QdiscStats,
}

impl Pie {
    /// Mirrors `pie_init()` + `pie_change()` under tc's parameter names.
    pub fn from_params(mut params: Params, dev: &DevInfo) -> Result<Self, ParamError> {
        check_hz(dev)?;
        let mut p = PieParams::init(dev.hz);
        let limit = params.take_u32("limit", 0, 0, u32::MAX)?;
        if limit != 0 {
            p.limit = limit;
        }
        take_pie_params(&mut params, &mut p, dev.hz)?;
        params.finish(PIE_PARAMS)?;
        Ok(Self::with_params(p, dev))
    }

    pub fn with_params(params: PieParams, dev: &DevInfo) -> Self {
        Pie {
            params,
            vars: PieVars::default(),
            pstats: PieStats::default(),
            timer: AdaptTimer::armed_at_init(dev.hz.max(1)),
            hz: dev.hz.max(1),
            mtu: dev.mtu_l2,
            rng: pie_rng(dev),
            q: VecDeque::new(),
            backlog: 0,
            stats: QdiscStats::default(),
        }
    }

    pub fn params(&self) -> &PieParams {
        &self.params
    }

    pub fn vars(&self) -> &PieVars {
        &self.vars
    }

    pub fn pie_stats(&self) -> &PieStats {
        &self.pstats
    }

    /// `pie_timer()` for every run due by `now`.
    #[inline]
    fn catch_up(&mut self, now: u64) {
        while self.timer.next_ns <= now {
            pie_calculate_probability(&self.params, &mut self.vars, self.backlog as u32);
            self.timer.rearm((self.params.tupdate != 0).then_some(self.params.tupdate as u64));
        }
    }
}

impl Qdisc for Pie {
    fn kind(&self) -> &'static str {
        "pie"
    }

    /// `pie_dump()` as iproute2's `pie_print_opt()` prints it.
    fn tc_options(&self) -> String {
        format!("limit {}p {}{}", self.params.limit, tc_pie_params(&self.params, self.hz), tc_pie_flags(&self.params))
    }

    /// `pie_qdisc_enqueue()`. Both drops return NET_XMIT_DROP (`qdisc_drop_reason()`).
    fn enqueue(&mut self, mut skb: Skb, now: u64, drops: &mut Vec<u32>) -> EnqueueVerdict {
        self.catch_up(now);
        let qlen = self.q.len() as u32;
        if qlen >= self.params.limit {
            self.pstats.overlimit = self.pstats.overlimit.wrapping_add(1);
        } else {
            let mut enqueue = false;
            if !pie_drop_early(&self.params, &mut self.vars, self.backlog as u32, skb.len, self.mtu, &mut self.rng) {
                enqueue = true;
            } else if self.params.ecn && self.vars.prob <= MAX_PROB / 10 && skb.set_ce() {
                // ECN-capable: mark while the probability is below 10%, else drop.
                self.pstats.ecn_mark = self.pstats.ecn_mark.wrapping_add(1);
                enqueue = true;
            }
            if enqueue {
                if !self.params.dq_rate_estimator {
                    skb.tstamp = now; // pie_set_enqueue_time()
                }
                self.pstats.packets_in = self.pstats.packets_in.wrapping_add(1);
                if qlen > self.pstats.maxq {
                    self.pstats.maxq = qlen;
                }
                self.backlog += skb.len as u64;
                self.q.push_back(skb);
                return EnqueueVerdict::Success;
            }
        }
        self.pstats.dropped = self.pstats.dropped.wrapping_add(1);
        self.vars.accu_prob = 0;
        self.stats.drops += 1;
        drops.push(skb.id);
        EnqueueVerdict::Dropped
    }

    /// `pie_qdisc_dequeue()`.
    fn dequeue(&mut self, now: u64, _drops: &mut Vec<u32>) -> Option<Skb> {
        self.catch_up(now);
        let skb = self.q.pop_front()?;
        self.backlog -= skb.len as u64;
        pie_process_dequeue(
            skb.len,
            psched_ns2ticks(skb.tstamp),
            &self.params,
            &mut self.vars,
            self.backlog as u32,
            psched_ns2ticks(now),
        );
        Some(skb)
    }

    fn qlen(&self) -> u32 {
        self.q.len() as u32
    }

    fn backlog(&self) -> u64 {
        self.backlog
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    /// `pie_dump_stats()` under tc's names. `prob` is the kernel's xstat (`prob << 8`,
    /// a fraction of 2^64), `delay` in µs, `avg_dq_rate` in bytes/s (0 without the
    /// estimator, which tc then does not print).
    fn xstats(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("prob", self.vars.prob << 8),
            ("delay", self.vars.delay_us() as u64),
            ("avg_dq_rate", self.avg_dq_rate_bytes()),
            ("pkts_in", self.pstats.packets_in as u64),
            ("overlimit", self.pstats.overlimit as u64),
            ("dropped", self.pstats.dropped as u64),
            ("maxq", self.pstats.maxq as u64),
            ("ecn_mark", self.pstats.ecn_mark as u64),
        ]
    }

    /// As iproute2's `pie_print_xstats()` prints it.
    fn tc_xstats(&self) -> String {
        let mut s = format!(
            "  prob {} delay {}",
            g(self.vars.prob_fraction()),
            time(self.vars.delay_us())
        );
        if self.params.dq_rate_estimator {
            s.push_str(&format!(" avg_dq_rate {}", self.avg_dq_rate_bytes()));
        }
        let p = &self.pstats;
        s.push_str(&format!(
            "\n  pkts_in {} overlimit {} dropped {} maxq {} ecn_mark {}",
            p.packets_in, p.overlimit, p.dropped, p.maxq, p.ecn_mark
        ));
        s
    }

    fn run_timers(&mut self, now: u64) {
        self.catch_up(now);
    }

}

impl Pie {
    /// `avg_dq_rate` unscaled to bytes per second: a 64-bit product stored in the
    /// xstat's `u32`, as `pie_dump_stats()` does.
    fn avg_dq_rate_bytes(&self) -> u64 {
        if !self.params.dq_rate_estimator {
            return 0;
        }
        ((self.vars.avg_dq_rate as u64 * PSCHED_TICKS_PER_SEC) >> PIE_SCALE) as u32 as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With `ecn`, an early drop of an ECN-capable packet becomes a CE mark while the
    /// probability is at most 10%; a Not-ECT packet is still dropped.
    #[test]
    fn ecn_marks_instead_of_dropping_below_ten_percent() {
        let dev = DevInfo { hz: 250, ..DevInfo::default() };
        let mut q = Pie::from_params(Params::from_pairs(&[("ecn", crate::params::ParamValue::Bool(true))]), &dev).unwrap();
        let mut drops = Vec::new();
        let pkt = |id, ecn| Skb { id, flow: 1, len: 1514, ecn, ..Skb::default() };
        for i in 0..3 {
            q.enqueue(pkt(i, Skb::ECN_NOT_ECT), 0, &mut drops);
        }
        // Past the burst allowance, delayed, and 8.5 accumulated: the next arrival is
        // an early drop without a random draw.
        q.vars = PieVars { burst_time: 0, qdelay: 20 * 15_625, prob: MAX_PROB / 10, accu_prob: (MAX_PROB / 2) * 17, ..q.vars };
        assert_eq!(q.enqueue(pkt(3, Skb::ECN_ECT0), MS, &mut drops), EnqueueVerdict::Success);
        assert_eq!(q.q.back().unwrap().ecn, Skb::ECN_CE);
        assert_eq!(q.enqueue(pkt(4, Skb::ECN_NOT_ECT), MS, &mut drops), EnqueueVerdict::Dropped);
        assert_eq!(drops, [4]);
        assert_eq!((q.pstats.ecn_mark, q.pstats.dropped, q.vars.accu_prob), (1, 1, 0));
        // Above 10%: dropped even when ECN-capable.
        q.vars = PieVars { prob: MAX_PROB / 10 + 1, accu_prob: (MAX_PROB / 2) * 17, ..q.vars };
        assert_eq!(q.enqueue(pkt(5, Skb::ECN_ECT0), MS, &mut drops), EnqueueVerdict::Dropped);
    }

    const MS: u64 = 1_000_000;
}
