//! CoDel: the shared algorithm of include/net/codel.h + include/net/codel_impl.h, and
//! the `codel` qdisc of net/sched/sch_codel.c.
//!
//! The core (shared with [`super::fq_codel`], as the kernel shares codel_impl.h):
//! - [`codel_get_time`]: `codel_time_t` = `(u32)(ns >> CODEL_SHIFT)`, 1.024 µs units,
//!   compared with RFC 1982 serial arithmetic ([`codel_time_after`] & co.);
//! - [`codel_newton_step`]: `codel_Newton_step()`, one Newton iteration of the
//!   reciprocal square root of `count`, kept as a u16 (Q0.16) and widened to Q0.32;
//! - [`codel_control_law`]: `codel_control_law()`, `t + interval / sqrt(count)` as
//!   `t + reciprocal_scale(interval, rec_inv_sqrt << 16)`;
//! - [`codel_should_drop`]: `codel_should_drop()`, sojourn above `target` (and backlog
//!   above one MTU) continuously for more than `interval`;
//! - [`codel_dequeue`]: `codel_dequeue()`, the dropping state machine with `drop_next`,
//!   `count`/`lastcount` and the re-entry rule "`count - lastcount > 1` and
//!   `now - drop_next < 16 * interval`", ECN marking instead of dropping, and the
//!   `ce_threshold` marking (with the 5.16+ `ce_threshold_selector`/`mask`).
//!
//! All arithmetic uses the kernel's widths and wraps where the kernel wraps (u32
//! codel time, u16 `rec_inv_sqrt`, u64 Newton intermediate, u32 counters).
//!
//! The qdisc ([`Codel`]) mirrors `codel_init()`/`codel_change()`,
//! `codel_qdisc_enqueue()` (tail drop at `limit` packets, counted in
//! `drop_overlimit`), `codel_qdisc_dequeue()` and `codel_dump_stats()`.
//!
//! Kernel-version option (`min_backlog`): `codel_should_drop()` does not start a
//! drop episode while the qdisc's byte backlog (after removing the packet) is at most
//! one MTU — `params->mtu` in every kernel with codel_impl.h (default, `"mtu"`); the
//! original 2012 codel.h compared the backlog with `stats->maxpacket`, the largest
//! packet seen so far (`"maxpacket"`).
//!
//! Not modelled: `CODEL_MAX_DROPS_PER_DEQUEUE` (256), which the newest codel.h
//! defines as a cap on drops per `codel_dequeue()` call; its use in codel_impl.h was
//! not available to check, so the loop is uncapped as in every codel_impl.h seen.

use super::{DevInfo, EnqueueVerdict, Qdisc, QdiscStats};
use crate::params::{ParamError, Params};
use crate::Skb;
use std::collections::VecDeque;

/// `CODEL_SHIFT`: codel time counts 1 << 10 ns.
pub const CODEL_SHIFT: u32 = 10;
/// `codel_time_t`.
pub type CodelTime = u32;
/// `REC_INV_SQRT_SHIFT` = 32 - 16: widens the u16 `rec_inv_sqrt` to Q0.32.
pub const REC_INV_SQRT_SHIFT: u32 = 16;
/// `CODEL_DISABLED_THRESHOLD` (INT_MAX): `ce_threshold` off.
pub const CODEL_DISABLED_THRESHOLD: CodelTime = i32::MAX as u32;
/// `DEFAULT_CODEL_LIMIT` (sch_codel.c), packets.
pub const DEFAULT_CODEL_LIMIT: u32 = 1000;

/// `MS2TIME(a)` = `(a * NSEC_PER_MSEC) >> CODEL_SHIFT`.
pub const fn ms2time(ms: u64) -> CodelTime {
    ((ms * 1_000_000) >> CODEL_SHIFT) as u32
}

/// `codel_get_time()` at simulated time `now_ns`: `(u32)(ns >> CODEL_SHIFT)`.
pub fn codel_get_time(now_ns: u64) -> CodelTime {
    (now_ns >> CODEL_SHIFT) as u32
}

/// `codel_time_after(a, b)`: `(s32)(a - b) > 0`.
pub fn codel_time_after(a: CodelTime, b: CodelTime) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// `codel_time_after_eq(a, b)`: `(s32)(a - b) >= 0`.
pub fn codel_time_after_eq(a: CodelTime, b: CodelTime) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

/// `codel_time_before(a, b)` = `codel_time_after(b, a)`.
pub fn codel_time_before(a: CodelTime, b: CodelTime) -> bool {
    codel_time_after(b, a)
}

/// `codel_time_to_us()`: `((u64)val << CODEL_SHIFT) / NSEC_PER_USEC`, as a u32.
pub fn codel_time_to_us(val: CodelTime) -> u32 {
    (((val as u64) << CODEL_SHIFT) / 1000) as u32
}

/// The enqueue timestamp `codel_set_enqueue_time()` stores in the skb's cb: codel
/// time at enqueue. The model keeps `skb.tstamp` in ns and truncates the same way.
pub fn codel_get_enqueue_time(skb: &Skb) -> CodelTime {
    codel_get_time(skb.tstamp)
}

/// `skb_get_dsfield()` for an IP packet: the whole TOS / traffic class byte.
pub fn skb_dsfield(skb: &Skb) -> u8 {
    (skb.dscp << 2) | (skb.ecn & 3)
}

/// What `codel_should_drop()` compares the backlog with (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MinBacklog {
    /// `*backlog <= params->mtu` (codel_impl.h, every kernel since it exists).
    Mtu,
    /// `sch->qstats.backlog <= stats->maxpacket` (the original 2012 codel.h).
    Maxpacket,
}

/// `struct codel_params`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodelParams {
    /// Target queue delay (codel time).
    pub target: CodelTime,
    /// Sojourn above which packets are CE-marked (`CODEL_DISABLED_THRESHOLD` = off).
    pub ce_threshold: CodelTime,
    /// Width of the moving time window (codel time).
    pub interval: CodelTime,
    /// Device MTU: no drop episode starts with at most this many bytes queued.
    pub mtu: u32,
    /// Mark ECT packets instead of dropping them.
    pub ecn: bool,
    /// `ce_threshold` applies only to packets whose dsfield & mask == selector.
    pub ce_threshold_selector: u8,
    /// 0 = `ce_threshold` applies to every packet.
    pub ce_threshold_mask: u8,
    /// Kernel-version option, see the module docs.
    pub min_backlog: MinBacklog,
}

impl CodelParams {
    /// `codel_params_init()`: interval 100 ms, target 5 ms, no ce_threshold, ECN off;
    /// `mtu` is set by the qdisc's init.
    pub fn init(mtu: u32) -> Self {
        CodelParams {
            target: ms2time(5),
            ce_threshold: CODEL_DISABLED_THRESHOLD,
            interval: ms2time(100),
            mtu,
            ecn: false,
            ce_threshold_selector: 0,
            ce_threshold_mask: 0,
            min_backlog: MinBacklog::Mtu,
        }
    }
}

/// `struct codel_vars` (per queue; per flow in fq_codel). `codel_vars_init()` = all 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodelVars {
    /// Drops (or marks) since entering the dropping state.
    pub count: u32,
    /// `count` at entry to the dropping state.
    pub lastcount: u32,
    pub dropping: bool,
    /// 1/sqrt(count) in Q0.16.
    pub rec_inv_sqrt: u16,
    /// When sojourn went (or will have been) above target for `interval`; 0 = unset.
    pub first_above_time: CodelTime,
    /// Time of the next drop, or of the last one.
    pub drop_next: CodelTime,
    /// Sojourn time of the last dequeued packet.
    pub ldelay: CodelTime,
}

/// `struct codel_stats` (shared by every flow of a qdisc). u32 as in the kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodelStats {
    /// Largest packet seen by `codel_should_drop()`.
    pub maxpacket: u32,
    /// Packets dropped in the current dequeue (the qdisc reports them to its parents
    /// and zeroes this).
    pub drop_count: u32,
    /// Bytes dropped in the current dequeue.
    pub drop_len: u32,
    /// Packets ECN-marked instead of dropped.
    pub ecn_mark: u32,
    /// Packets CE-marked because their sojourn exceeded `ce_threshold`.
    pub ce_mark: u32,
}

/// `codel_Newton_step()`: `new = (invsqrt / 2) * (3 - count * invsqrt^2)` in fixed
/// point, with the kernel's u32/u64 widths (the u64 subtraction and multiply wrap).
pub fn codel_newton_step(vars: &mut CodelVars) {
    let invsqrt: u32 = (vars.rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT;
    let invsqrt2: u32 = ((invsqrt as u64 * invsqrt as u64) >> 32) as u32;
    let mut val: u64 = (3u64 << 32).wrapping_sub((vars.count as u64).wrapping_mul(invsqrt2 as u64));
    val >>= 2; // avoid overflow in the following multiply
    val = val.wrapping_mul(invsqrt as u64) >> (32 - 2 + 1);
    vars.rec_inv_sqrt = (val >> REC_INV_SQRT_SHIFT) as u16;
}

/// `codel_control_law()`: `t + reciprocal_scale(interval, rec_inv_sqrt << 16)`.
pub fn codel_control_law(t: CodelTime, interval: CodelTime, rec_inv_sqrt: u16) -> CodelTime {
    let scale = (rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT;
    t.wrapping_add(((interval as u64 * scale as u64) >> 32) as u32)
}

/// The queue `codel_dequeue()` works on: its `dequeue_func`, `drop_func` and the
/// `*backlog` it reads (the whole qdisc's byte backlog, also in fq_codel).
pub trait CodelQueue {
    /// `dequeue_func()`: removes the head packet, updating qlen and backlog.
    fn dequeue_func(&mut self) -> Option<Skb>;
    /// `*backlog`: the qdisc's byte backlog (after the packets already removed).
    fn backlog(&self) -> u64;
    /// `drop_func()`: frees a packet CoDel dropped and counts it in the qdisc's drops.
    fn drop_func(&mut self, skb: Skb);
}

/// `codel_should_drop()`.
pub fn codel_should_drop(
    skb: Option<&Skb>,
    backlog: u64,
    vars: &mut CodelVars,
    params: &CodelParams,
    stats: &mut CodelStats,
    now: CodelTime,
) -> bool {
    let Some(skb) = skb else {
        vars.first_above_time = 0;
        return false;
    };
    let skb_len = skb.len;
    vars.ldelay = now.wrapping_sub(codel_get_enqueue_time(skb));
    if skb_len > stats.maxpacket {
        stats.maxpacket = skb_len;
    }
    let floor = match params.min_backlog {
        MinBacklog::Mtu => params.mtu,
        MinBacklog::Maxpacket => stats.maxpacket,
    };
    if codel_time_before(vars.ldelay, params.target) || backlog <= floor as u64 {
        // went below - stay below for at least interval
        vars.first_above_time = 0;
        return false;
    }
    let mut ok_to_drop = false;
    if vars.first_above_time == 0 {
        // just went above from below: if we stay above for at least interval,
        // it is OK to drop
        vars.first_above_time = now.wrapping_add(params.interval);
    } else if codel_time_after(now, vars.first_above_time) {
        ok_to_drop = true;
    }
    ok_to_drop
}

/// `codel_dequeue()` at simulated time `now_ns` (the kernel reads the clock once per
/// call). Returns the packet to send, possibly ECN/CE-marked; dropped packets went to
/// `q.drop_func()` and are counted in `stats.drop_count` / `drop_len`.
pub fn codel_dequeue<Q: CodelQueue>(
    q: &mut Q,
    params: &CodelParams,
    vars: &mut CodelVars,
    stats: &mut CodelStats,
    now_ns: u64,
) -> Option<Skb> {
    let mut skb = q.dequeue_func();
    if skb.is_none() {
        vars.dropping = false;
        return None;
    }
    let now = codel_get_time(now_ns);
    let drop = codel_should_drop(skb.as_ref(), q.backlog(), vars, params, stats, now);
    if vars.dropping {
        if !drop {
            // sojourn time below target - leave dropping state
            vars.dropping = false;
        } else if codel_time_after_eq(now, vars.drop_next) {
            // Time for the next drop: drop the current packet and dequeue the next,
            // which may take us out of the dropping state; if not, schedule the next
            // drop. A large backlog may make the next drop due now, hence the loop.
            while vars.dropping && codel_time_after_eq(now, vars.drop_next) {
                let Some(cur) = skb.as_mut() else { break };
                vars.count = vars.count.wrapping_add(1);
                codel_newton_step(vars);
                if params.ecn && cur.set_ce() {
                    stats.ecn_mark = stats.ecn_mark.wrapping_add(1);
                    vars.drop_next = codel_control_law(vars.drop_next, params.interval, vars.rec_inv_sqrt);
                    break; // goto end
                }
                let dropped = *cur;
                stats.drop_len = stats.drop_len.wrapping_add(dropped.len);
                q.drop_func(dropped);
                stats.drop_count = stats.drop_count.wrapping_add(1);
                skb = q.dequeue_func();
                if !codel_should_drop(skb.as_ref(), q.backlog(), vars, params, stats, now) {
                    // leave dropping state
                    vars.dropping = false;
                } else {
                    // and schedule the next drop
                    vars.drop_next = codel_control_law(vars.drop_next, params.interval, vars.rec_inv_sqrt);
                }
            }
        }
    } else if drop {
        let marked = match skb.as_mut() {
            Some(cur) => params.ecn && cur.set_ce(),
            None => false,
        };
        if marked {
            stats.ecn_mark = stats.ecn_mark.wrapping_add(1);
        } else if let Some(dropped) = skb.take() {
            stats.drop_len = stats.drop_len.wrapping_add(dropped.len);
            q.drop_func(dropped);
            stats.drop_count = stats.drop_count.wrapping_add(1);
            skb = q.dequeue_func();
            // The kernel stores this in `drop` and never reads it; the call still
            // updates ldelay, maxpacket and first_above_time.
            let _ = codel_should_drop(skb.as_ref(), q.backlog(), vars, params, stats, now);
        }
        vars.dropping = true;
        // If min went above target close to when we last went below it, assume that
        // the drop rate that controlled the queue on the last cycle is a good
        // starting point to control it now.
        let delta = vars.count.wrapping_sub(vars.lastcount);
        if delta > 1
            && codel_time_before(
                now.wrapping_sub(vars.drop_next),
                params.interval.wrapping_mul(16),
            )
        {
            vars.count = delta;
            // an imprecise rec_inv_sqrt is fine: the next Newton steps correct it
            codel_newton_step(vars);
        } else {
            vars.count = 1;
            vars.rec_inv_sqrt = (!0u32 >> REC_INV_SQRT_SHIFT) as u16;
        }
        vars.lastcount = vars.count;
        vars.drop_next = codel_control_law(now, params.interval, vars.rec_inv_sqrt);
    }
    // end:
    if let Some(cur) = skb.as_mut() {
        if codel_time_after(vars.ldelay, params.ce_threshold) {
            let set_ce = params.ce_threshold_mask == 0
                || (skb_dsfield(cur) & params.ce_threshold_mask) == params.ce_threshold_selector;
            if set_ce && cur.set_ce() {
                stats.ce_mark = stats.ce_mark.wrapping_add(1);
            }
        }
    }
    skb
}

// ---- tc parameter parsing shared by codel and fq_codel ----

/// Largest duration tc can pass: a u32 count of microseconds.
const TC_TIME_MAX_NS: u64 = u32::MAX as u64 * 1000 + 999;

/// A tc `TIME` parameter (`get_time()`): whole microseconds in a u32 (tc truncates).
/// `None` when the key is absent.
pub(crate) fn take_tc_time_us(params: &mut Params, key: &str) -> Result<Option<u32>, ParamError> {
    let ns = params.take_time_ns(key, u64::MAX, 0, TC_TIME_MAX_NS)?;
    Ok((ns != u64::MAX).then_some((ns / 1000) as u32))
}

/// tc usec -> codel time: `((u64)usec * NSEC_PER_USEC) >> CODEL_SHIFT`.
pub fn us_to_codel_time(us: u32) -> CodelTime {
    ((us as u64 * 1000) >> CODEL_SHIFT) as u32
}

/// Parses the CoDel parameters both qdiscs share, applying them as `*_change()`
/// does: tc sends `target` and `interval` only when non-zero (so "0ms" keeps the
/// default) and `ce_threshold` unless it equals tc's "unset" value ~0U µs.
pub(crate) fn take_codel_params(params: &mut Params, cp: &mut CodelParams) -> Result<(), ParamError> {
    if let Some(us) = take_tc_time_us(params, "target")? {
        if us != 0 {
            cp.target = us_to_codel_time(us);
        }
    }
    if let Some(us) = take_tc_time_us(params, "interval")? {
        if us != 0 {
            cp.interval = us_to_codel_time(us);
        }
    }
    if let Some(us) = take_tc_time_us(params, "ce_threshold")? {
        if us != u32::MAX {
            cp.ce_threshold = us_to_codel_time(us);
        }
    }
    cp.ecn = params.take_bool("ecn", cp.ecn)?;
    cp.min_backlog = match params.take_choice("min_backlog", "mtu", &["mtu", "maxpacket"])? {
        "maxpacket" => MinBacklog::Maxpacket,
        _ => MinBacklog::Mtu,
    };
    Ok(())
}

/// The kernel's clamp of the device MTU used as `params.mtu` (and fq_codel's default
/// quantum): `clamp_t(u32, psched_mtu(dev), 256, 1 << 20)`.
pub(crate) fn clamped_mtu(dev: &DevInfo) -> u32 {
    dev.mtu_l2.clamp(256, 1 << 20)
}

// ---- the codel qdisc (sch_codel.c) ----

const CODEL_PARAMS: &[&str] = &["limit", "target", "interval", "ecn", "ce_threshold", "min_backlog"];

/// The configuration `codel_change()` commits (what `tc -d qdisc show` prints).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodelConfig {
    /// `sch->limit`, packets.
    pub limit: u32,
    pub params: CodelParams,
}

/// The `codel` qdisc: one FIFO under CoDel (`struct codel_sched_data`).
pub struct Codel {
    limit: u32,
    params: CodelParams,
    vars: CodelVars,
    cstats: CodelStats,
    drop_overlimit: u32,
    q: VecDeque<Skb>,
    backlog: u64,
    stats: QdiscStats,
    /// Last time the qdisc ran, for `drop_next` in xstats (the kernel reads the clock).
    last_now: u64,
}

/// `dequeue_func()` / `drop_func()` of sch_codel.c over the FIFO and its counters.
struct FifoCtx<'a> {
    q: &'a mut VecDeque<Skb>,
    backlog: &'a mut u64,
    qdisc_drops: &'a mut u64,
    drops: &'a mut Vec<u32>,
}

impl CodelQueue for FifoCtx<'_> {
    fn dequeue_func(&mut self) -> Option<Skb> {
        let skb = self.q.pop_front()?;
        *self.backlog -= skb.len as u64;
        Some(skb)
    }

    fn backlog(&self) -> u64 {
        *self.backlog
    }

    fn drop_func(&mut self, skb: Skb) {
        *self.qdisc_drops += 1;
        self.drops.push(skb.id);
    }
}

impl Codel {
    /// Mirrors `codel_init()` + `codel_change()`: limit 1000 packets, target 5 ms,
    /// interval 100 ms, ECN off, ce_threshold off, `mtu` = the device's
    /// `psched_mtu()` clamped to 256..=1 MiB. tc sends `limit`, `target` and
    /// `interval` only when non-zero, so 0 keeps the default.
    pub fn from_params(mut params: Params, dev: &DevInfo) -> Result<Self, ParamError> {
        let limit = params.take_u32("limit", 0, 0, u32::MAX)?;
        let mut cp = CodelParams::init(clamped_mtu(dev));
        take_codel_params(&mut params, &mut cp)?;
        params.finish(CODEL_PARAMS)?;
        let limit = if limit == 0 { DEFAULT_CODEL_LIMIT } else { limit };
        Ok(Self::with_config(CodelConfig { limit, params: cp }))
    }

    /// Builds the qdisc from an already validated configuration.
    pub fn with_config(cfg: CodelConfig) -> Self {
        Codel {
            limit: cfg.limit,
            params: cfg.params,
            vars: CodelVars::default(),
            cstats: CodelStats::default(),
            drop_overlimit: 0,
            q: VecDeque::with_capacity(cfg.limit.min(4096) as usize),
            backlog: 0,
            stats: QdiscStats::default(),
            last_now: 0,
        }
    }

    pub fn config(&self) -> CodelConfig {
        CodelConfig { limit: self.limit, params: self.params }
    }

    /// The CoDel state (`q->vars`).
    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }

    /// The CoDel counters (`q->stats`).
    pub fn codel_stats(&self) -> &CodelStats {
        &self.cstats
    }

    /// `drop_next` as `codel_dump_stats()` reports it at time `now_ns`: microseconds
    /// from now (negative if overdue), 0 when not dropping.
    pub fn drop_next_us(&self, now_ns: u64) -> i32 {
        drop_next_us(&self.vars, now_ns)
    }
}

/// `codel_dump_stats()`'s `drop_next`: signed µs from `now` to `vars.drop_next`.
pub fn drop_next_us(vars: &CodelVars, now_ns: u64) -> i32 {
    if !vars.dropping {
        return 0;
    }
    let delta = vars.drop_next.wrapping_sub(codel_get_time(now_ns)) as i32;
    if delta >= 0 {
        codel_time_to_us(delta as u32) as i32
    } else {
        (codel_time_to_us(delta.wrapping_neg() as u32) as i32).wrapping_neg()
    }
}

impl Qdisc for Codel {
    fn kind(&self) -> &'static str {
        "codel"
    }

    /// `codel_dump()` as iproute2's `codel_print_opt()` prints it.
    fn tc_options(&self) -> String {
        use super::tc_print::time;
        let p = &self.params;
        let mut s = format!("limit {}p target {} ", self.limit, time(codel_time_to_us(p.target)));
        if p.ce_threshold != CODEL_DISABLED_THRESHOLD {
            s.push_str(&format!("ce_threshold {} ", time(codel_time_to_us(p.ce_threshold))));
        }
        s.push_str(&format!("interval {}", time(codel_time_to_us(p.interval))));
        if p.ecn {
            s.push_str(" ecn");
        }
        s
    }

    /// `codel_dump_stats()` as iproute2's `codel_print_xstats()` prints it (`drop_next`
    /// from the last time the qdisc ran).
    fn tc_xstats(&self) -> String {
        use super::tc_print::time;
        let v = &self.vars;
        let mut s = format!("  count {} lastcount {} ldelay {}", v.count, v.lastcount, time(codel_time_to_us(v.ldelay)));
        if v.dropping {
            s.push_str(" dropping");
        }
        let next = self.drop_next_us(self.last_now);
        let sign = if next < 0 { "-" } else { "" };
        s.push_str(&format!(" drop_next {sign}{}", time(next.unsigned_abs())));
        s.push_str(&format!(
            "\n  maxpacket {} ecn_mark {} drop_overlimit {}",
            self.cstats.maxpacket, self.cstats.ecn_mark, self.drop_overlimit
        ));
        if self.cstats.ce_mark > 0 {
            s.push_str(&format!(" ce_mark {}", self.cstats.ce_mark));
        }
        s
    }

    /// `codel_qdisc_enqueue()`.
    fn enqueue(&mut self, mut skb: Skb, now: u64, drops: &mut Vec<u32>) -> EnqueueVerdict {
        self.last_now = now;
        if (self.q.len() as u64) < self.limit as u64 {
            skb.tstamp = now; // codel_set_enqueue_time()
            self.backlog += skb.len as u64;
            self.q.push_back(skb);
            return EnqueueVerdict::Success;
        }
        self.drop_overlimit = self.drop_overlimit.wrapping_add(1);
        self.stats.drops += 1;
        drops.push(skb.id);
        EnqueueVerdict::Dropped
    }

    /// `codel_qdisc_dequeue()`: `codel_dequeue()`, then `codel_dequeue_drop()` reports
    /// the batch of drops to the parents and zeroes `drop_count` / `drop_len`.
    fn dequeue(&mut self, now: u64, drops: &mut Vec<u32>) -> Option<Skb> {
        self.last_now = now;
        let mut ctx = FifoCtx {
            q: &mut self.q,
            backlog: &mut self.backlog,
            qdisc_drops: &mut self.stats.drops,
            drops,
        };
        let skb = codel_dequeue(&mut ctx, &self.params, &mut self.vars, &mut self.cstats, now);
        self.cstats.drop_count = 0;
        self.cstats.drop_len = 0;
        skb
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

    /// `codel_dump_stats()` under tc's names. `ldelay` and `drop_next` are in µs;
    /// `drop_next` is measured from the last time the qdisc ran and reads 0 when not
    /// dropping or overdue (the exact signed value: [`Codel::drop_next_us`]).
    fn xstats(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("count", self.vars.count as u64),
            ("lastcount", self.vars.lastcount as u64),
            ("ldelay", codel_time_to_us(self.vars.ldelay) as u64),
            ("dropping", self.vars.dropping as u64),
            ("drop_next", self.drop_next_us(self.last_now).max(0) as u64),
            ("maxpacket", self.cstats.maxpacket as u64),
            ("ecn_mark", self.cstats.ecn_mark as u64),
            ("drop_overlimit", self.drop_overlimit as u64),
            ("ce_mark", self.cstats.ce_mark as u64),
        ]
    }

    /// `codel_init()`: `TCQ_F_CAN_BYPASS` when `limit >= 1`.
    fn can_bypass(&self) -> bool {
        self.limit >= 1
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_units() {
        assert_eq!(ms2time(5), 4882);
        assert_eq!(ms2time(100), 97656);
        assert_eq!(us_to_codel_time(5000), 4882);
        assert_eq!(codel_time_to_us(4882), 4999);
        assert_eq!(codel_get_time(1023), 0);
        assert_eq!(codel_get_time(1024), 1);
        // u32 wrap: time after 2^32 units is still "after" in serial arithmetic.
        assert!(codel_time_after(5, u32::MAX - 5));
        assert!(codel_time_before(u32::MAX - 5, 5));
        assert!(codel_time_after_eq(7, 7) && !codel_time_after(7, 7));
    }

    /// count 2 from rec_inv_sqrt 0xFFFF, by hand:
    /// invsqrt = 0xFFFF0000; invsqrt2 = (0xFFFF0000^2) >> 32 = 0xFFFE0001;
    /// val = 0x3_0000_0000 - 2 * 0xFFFE0001 = 0x1_0003_FFFE; val >>= 2 -> 0x4000_FFFF;
    /// val = (0x4000_FFFF * 0xFFFF0000) >> 31 = 0x8001_7FFC; rec = val >> 16 = 0x8001.
    #[test]
    fn newton_step_by_hand() {
        let mut v = CodelVars { count: 2, rec_inv_sqrt: 0xFFFF, ..CodelVars::default() };
        codel_newton_step(&mut v);
        assert_eq!(v.rec_inv_sqrt, 0x8001);
        // control law: 97656 * 0x80010000 >> 32 = 48829.
        assert_eq!(codel_control_law(0, 97656, 0x8001), 48829);
        assert_eq!(codel_control_law(0, 97656, 0xFFFF), 97654);
    }
}
