//! tbf: mirrors net/sched/sch_tbf.c (`tbf_enqueue()`, `tbf_dequeue()`, `tbf_change()`),
//! with the parameter handling of iproute2's tc/q_tbf.c, and the rate arithmetic both
//! shapers share: `psched_ratecfg_precompute()` (net/sched/sch_generic.c),
//! `psched_l2t_ns()` (include/net/sch_generic.h), `psched_ns_t2l()` (sch_tbf.c) and
//! tc's `tc_calc_xmittime()` (tc/tc_core.c).
//!
//! A token bucket whose tokens are nanoseconds of transmission time at `rate`:
//! the bucket holds at most `buffer` = L2T(burst) ns, so after an idle period `burst`
//! bytes leave back to back; afterwards packets leave at `rate`. An optional second
//! bucket (`peakrate`, depth `mtu`) limits the rate at which the first one is emptied.
//! Packets wait in a child qdisc, by default a bfifo of `limit` bytes.
//!
//! Kernel behaviours kept on purpose:
//! - `tbf_dequeue()` peeks the child's head and only takes it when both buckets have
//!   the tokens (never reordering); otherwise it arms the watchdog at
//!   `now + max(-toks, -ptoks)` and counts `overlimits`, once per refused dequeue;
//! - tokens are computed with the kernel's integer `mult`/`shift` reciprocal, so a
//!   packet costs exactly what it costs in the kernel (e.g. 605600 ns for 1514 B at
//!   20mbit);
//! - a packet longer than `max_size` (the burst, or the peak bucket's `mtu` if smaller)
//!   is dropped at enqueue, as `tbf_enqueue()` does for non-GSO packets (GSO
//!   segmentation is not modelled);
//! - tc converts `latency` into a byte `limit` (`rate * latency + burst`, or the peak
//!   bucket's figure if smaller) and always sends the burst in bytes (`TCA_TBF_BURST`),
//!   which the kernel turns back into `buffer = psched_l2t_ns(rate, burst)`.
//!
//! The child: the default bfifo is kept inline, with the kernel's `qdisc_peek_head()`
//! (the head stays in the fifo and counts against its byte limit). Any other child
//! (`qdisc = "fq_codel"`, built with its defaults as a grafted `tc qdisc add ... parent
//! 1:1` would be) is peeked with `qdisc_peek_dequeued()` semantics: the packet is
//! dequeued from the child into a one-slot stash (the child's `gso_skb`), still counted
//! in this qdisc's qlen and backlog, and handed out by the next successful dequeue.
//! Deviation: the kernel also counts the stashed packet in the child's own qlen (and so
//! against the child's limit); the model's child no longer sees it.
//!
//! Drops: every packet the child drops (at enqueue, or an AQM child at dequeue, which
//! the kernel reports to tbf through `qdisc_tree_reduce_backlog()`) is counted in
//! `stats().drops`, as are oversized packets.
//!
//! Version notes: `mpu` is applied by the kernel since "net_sched: restore "mpu xxx"
//! handling" (5.16, also in stable); older kernels ignore it, which is the same as
//! leaving `mpu` unset. Not modelled: `burst BYTES/CELL` cell sizes (the kernel no
//! longer uses rate tables), rates given in percent of the link speed, offload.

use super::{BuildError, DevInfo, EnqueueVerdict, Qdisc, QdiscStats};
use crate::params::{ParamError, Params};
use crate::Skb;
use std::collections::VecDeque;

pub const NSEC_PER_SEC: u64 = 1_000_000_000;
/// `PSCHED_SHIFT`: a psched tick is 1 << 6 = 64 ns.
pub const PSCHED_SHIFT: u32 = 6;
/// tc's `tick_in_usec` on any kernel since 2.6.24: `/proc/net/psched` reports
/// t2us = NSEC_PER_USEC = 1000, us2t = PSCHED_TICKS2NS(1) = 64 and clock_res = 1000000,
/// so `tc_core_init()` computes 1000 / 64 * 1 = 15.625 ticks per microsecond.
pub const TC_TICK_IN_USEC: f64 = 1000.0 / 64.0;
/// tc's `TIME_UNITS_PER_SEC`: tc counts time in microseconds.
pub const TC_TIME_UNITS_PER_SEC: f64 = 1_000_000.0;

/// `PSCHED_TICKS2NS()`.
pub fn psched_ticks2ns(ticks: u32) -> i64 {
    (ticks as i64) << PSCHED_SHIFT
}

/// `PSCHED_NS2TICKS()`.
pub fn psched_ns2ticks(ns: i64) -> i64 {
    ns >> PSCHED_SHIFT
}

/// tc's `tc_calc_xmittime(rate, size)`: the time to send `size` bytes at `rate` bytes/s
/// in psched ticks, rounded up, saturating at `UINT_MAX` (which tc then rejects as
/// "burst out of range"). The double arithmetic is tc's, operation for operation.
pub fn tc_calc_xmittime(rate: u64, size: u64) -> u32 {
    let val = ((TC_TIME_UNITS_PER_SEC * (size as f64 / rate as f64)) * TC_TICK_IN_USEC).ceil();
    if val.is_nan() || val > u32::MAX as f64 {
        u32::MAX
    } else {
        val as u32
    }
}

/// `TC_LINKLAYER_*`: how `psched_l2t_ns()` turns a length into wire bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkLayer {
    /// `TC_LINKLAYER_ETHERNET`: the length as is.
    Ethernet,
    /// `TC_LINKLAYER_ATM`: rounded up to 48-byte ATM cell payloads, each sent as 53 bytes.
    Atm,
}

impl LinkLayer {
    /// tc's `get_linklayer()` words: "ethernet", "atm" or "adsl" (= atm).
    pub fn from_tc(word: &str) -> LinkLayer {
        match word {
            "atm" | "adsl" => LinkLayer::Atm,
            _ => LinkLayer::Ethernet,
        }
    }
}

/// `struct psched_ratecfg`: a rate with the reciprocal that turns lengths into ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PschedRatecfg {
    pub rate_bytes_ps: u64,
    pub mult: u32,
    pub overhead: u16,
    pub mpu: u16,
    pub linklayer: LinkLayer,
    pub shift: u8,
}

impl PschedRatecfg {
    /// `psched_ratecfg_precompute()` / `psched_ratecfg_precompute__()`: the largest
    /// `mult` = (NSEC_PER_SEC << shift) / rate with bit 31 set (or until the factor's
    /// bit 63 is set), so `(len * mult) >> shift` approximates `len * 1e9 / rate` from
    /// below. A zero rate gives mult 1, shift 0.
    pub fn precompute(rate_bytes_ps: u64, overhead: u16, mpu: u16, linklayer: LinkLayer) -> Self {
        let mut r = PschedRatecfg {
            rate_bytes_ps,
            mult: 1,
            overhead,
            mpu,
            linklayer,
            shift: 0,
        };
        if rate_bytes_ps == 0 {
            return r;
        }
        let mut factor: u64 = NSEC_PER_SEC;
        loop {
            // div64_u64() stored into the u32 `mult`.
            r.mult = (factor / rate_bytes_ps) as u32;
            if r.mult & (1 << 31) != 0 || factor & (1 << 63) != 0 {
                break;
            }
            factor <<= 1;
            r.shift += 1;
        }
        r
    }

    /// `psched_l2t_ns()`: ns to send `len` bytes (`unsigned int` arithmetic for the
    /// length, as in the kernel): overhead added, then raised to `mpu`, then ATM cells.
    pub fn l2t_ns(&self, len: u32) -> u64 {
        let mut len = len.wrapping_add(self.overhead as u32);
        if len < self.mpu as u32 {
            len = self.mpu as u32;
        }
        let wire = match self.linklayer {
            LinkLayer::Atm => len.div_ceil(48).wrapping_mul(53),
            LinkLayer::Ethernet => len,
        };
        ((wire as u64) * (self.mult as u64)) >> self.shift
    }

    /// `psched_ns_t2l()` (sch_tbf.c): bytes sendable in `ns`, ATM cells and overhead
    /// taken off. The product wraps in u64 as in the kernel.
    pub fn ns_t2l(&self, ns: u64) -> u64 {
        let mut len = ns.wrapping_mul(self.rate_bytes_ps) / NSEC_PER_SEC;
        if self.linklayer == LinkLayer::Atm {
            len = len / 53 * 48;
        }
        // `if (len > r->overhead) len -= r->overhead; else len = 0;`
        len.saturating_sub(self.overhead as u64)
    }
}

/// Bits per second (as the scenario's rate strings give them) to tc's bytes per second:
/// `get_rate64()` divides by 8 and truncates.
pub fn tc_rate_bytes(bits_per_sec: u64) -> u64 {
    bits_per_sec / 8
}

fn invalid(key: &str, message: impl Into<String>, expected: impl Into<String>) -> ParamError {
    ParamError::Invalid {
        key: key.into(),
        message: message.into(),
        expected: expected.into(),
    }
}

/// Which of tc's alias names (`burst`/`buffer`/`maxburst`) is present; tc rejects a
/// second one as a duplicate specification.
pub(crate) fn which_alias(
    params: &Params,
    names: &[&'static str],
) -> Result<Option<&'static str>, ParamError> {
    let present: Vec<&'static str> = names
        .iter()
        .copied()
        .filter(|n| params.iter().any(|(k, _)| k == n))
        .collect();
    match present.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one)),
        [_, second, ..] => Err(invalid(
            second,
            format!("duplicate \"{}\" specification", names.join("/")),
            format!("only one of {}", names.join(", ")),
        )),
    }
}

/// Builds a child qdisc of `kind` with its defaults (`qdisc_create_dflt()` /
/// a grafted `tc qdisc add ... <kind>` without parameters); errors are keyed `key`.
pub(crate) fn build_child(
    kind: &str,
    key: &str,
    dev: &DevInfo,
) -> Result<Box<dyn Qdisc>, ParamError> {
    build_child_with(kind, None, key, dev)
}

/// [`build_child`] with the child's own parameters (`qdisc_params`, whose errors are
/// keyed `params_key.KEY`), as `tc qdisc add ... parent X KIND PARAMS` would build it.
pub(crate) fn build_child_with(
    kind: &str,
    params: Option<(Params, &str)>,
    key: &str,
    dev: &DevInfo,
) -> Result<Box<dyn Qdisc>, ParamError> {
    let (params, params_key) = match params {
        Some((p, k)) => (p, Some(k)),
        None => (Params::default(), None),
    };
    match super::build(kind, params, dev) {
        Err(BuildError::Param(e)) if params_key.is_some() => Err(e.nested_in(params_key.unwrap_or_default())),
        Ok(q) => Ok(Box::new(q)),
        Err(BuildError::NotModelled(k)) => Err(invalid(
            key,
            format!("qdisc \"{k}\" is not modelled yet"),
            format!("one of {}", super::BUILDABLE_KINDS.join(", ")),
        )),
        Err(BuildError::UnknownKind(k)) => Err(invalid(
            key,
            format!("\"{k}\" is not a qdisc"),
            format!("one of {}", super::BUILDABLE_KINDS.join(", ")),
        )),
        Err(BuildError::Param(e)) => Err(invalid(
            key,
            format!("qdisc \"{kind}\" cannot be built with its defaults: {e}"),
            "a qdisc kind that needs no parameters",
        )),
    }
}

/// The child qdisc (`q->qdisc`).
enum TbfChild {
    /// The default bfifo (`fifo_create_dflt(sch, &bfifo_qdisc_ops, limit)`), inline so
    /// that `peek` is the kernel's `qdisc_peek_head()`.
    Bfifo {
        q: VecDeque<Skb>,
        backlog: u64,
        limit: u32,
    },
    /// Any other qdisc, peeked through `qdisc_peek_dequeued()` into `stash`.
    Other {
        q: Box<dyn Qdisc>,
        stash: Option<Skb>,
    },
}

/// The validated configuration `tbf_change()` commits (what `tc -d qdisc show` shows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TbfConfig {
    /// Bytes of the child bfifo (`q->limit`).
    pub limit: u32,
    /// Largest packet accepted (`q->max_size`).
    pub max_size: u32,
    /// Bucket depth in ns (`q->buffer`).
    pub buffer: i64,
    /// Peak bucket depth in ns (`q->mtu`; 0 without peakrate).
    pub mtu: i64,
    pub rate: PschedRatecfg,
    pub peak: Option<PschedRatecfg>,
}

/// The tbf qdisc (`struct tbf_sched_data`).
pub struct Tbf {
    cfg: TbfConfig,
    /// Tokens of the rate bucket, in ns (`q->tokens`).
    tokens: i64,
    /// Tokens of the peak bucket, in ns (`q->ptokens`).
    ptokens: i64,
    /// Time of the last dequeue (`q->t_c`).
    t_c: i64,
    child: TbfChild,
    stats: QdiscStats,
    /// Expiry of the armed watchdog, while the last dequeue was refused for tokens.
    watchdog: Option<u64>,
    warnings: Vec<String>,
}

const TBF_PARAMS: &[&str] = &[
    "rate",
    "burst",
    "buffer",
    "maxburst",
    "limit",
    "latency",
    "peakrate",
    "mtu",
    "minburst",
    "mpu",
    "overhead",
    "linklayer",
    "qdisc",
];

/// What tc's `tbf_parse_opt()` sends the kernel: the rates in bytes/s, the burst, the
/// limit (given, or computed from `latency` as tc does), and the size table's inputs.
struct TbfOpt {
    rate64: u64,
    buffer64: u64,
    /// The key the burst was given under (`burst`, `buffer` or `maxburst`), for errors.
    burst_key: &'static str,
    limit: u32,
    /// `qopt->buffer`: the burst's transmit time at the rate, in psched ticks.
    opt_buffer: u32,
    prate64: u64,
    mtu: u32,
    mpu: u16,
    overhead: u16,
    linklayer: LinkLayer,
    /// `qdisc` (model only): the child's kind instead of the default bfifo.
    child_kind: Option<String>,
}

/// tc's `tbf_parse_opt()`: the parameters, and tc's checks in its order.
fn tbf_parse_opt(mut params: Params) -> Result<TbfOpt, ParamError> {
    let rate64 = tc_rate_bytes(params.take_rate_bps("rate", None)?.unwrap_or(0));
    let burst_key = which_alias(&params, &["burst", "buffer", "maxburst"])?.unwrap_or("burst");
    let buffer64 = params.take_size(burst_key, 0, 0, u64::MAX)?;
    let limit_given = params.take_size("limit", 0, 0, u32::MAX as u64)? as u32;
    let latency_us = params.take_time_ns("latency", 0, 0, u32::MAX as u64 * 1000)? / 1000;
    let prate64 = tc_rate_bytes(params.take_rate_bps("peakrate", None)?.unwrap_or(0));
    let mtu_key = which_alias(&params, &["mtu", "minburst"])?.unwrap_or("mtu");
    let mtu = params.take_size(mtu_key, 0, 0, u32::MAX as u64)? as u32;
    let mpu = params.take_size("mpu", 0, 0, u16::MAX as u64)? as u16;
    let overhead = params.take_u32("overhead", 0, 0, u16::MAX as u32)? as u16;
    let linklayer = LinkLayer::from_tc(params.take_choice(
        "linklayer",
        "ethernet",
        &["ethernet", "atm", "adsl"],
    )?);
    let child_kind = params.take_str("qdisc")?;
    params.finish(TBF_PARAMS)?;

    // tc's checks, in its order.
    if rate64 == 0 {
        return Err(invalid(
            "rate",
            "the \"rate\" parameter is mandatory",
            "a rate of at least 8bit",
        ));
    }
    if buffer64 == 0 {
        return Err(invalid(
            burst_key,
            "the \"burst\" parameter is mandatory",
            "a size in bytes, e.g. \"15kb\"",
        ));
    }
    if prate64 != 0 && mtu == 0 {
        return Err(invalid(
            "mtu",
            "when \"peakrate\" is specified, \"mtu\" must also be specified",
            "the peak bucket's size in bytes, e.g. 1514",
        ));
    }
    if limit_given != 0 && latency_us != 0 {
        return Err(invalid(
            "latency",
            "specifying both \"latency\" and \"limit\" is not allowed",
            "one of limit, latency",
        ));
    }
    if limit_given == 0 && latency_us == 0 {
        return Err(invalid(
            "limit",
            "either \"limit\" or \"latency\" is required",
            "limit = bytes, or latency = \"50ms\"",
        ));
    }
    let limit = if limit_given != 0 {
        limit_given
    } else {
        // tc: lim = rate * latency / TIME_UNITS_PER_SEC + burst, in doubles.
        let mut lim =
            rate64 as f64 * latency_us as f64 / TC_TIME_UNITS_PER_SEC + buffer64 as f64;
        if prate64 != 0 {
            let lim2 = prate64 as f64 * latency_us as f64 / TC_TIME_UNITS_PER_SEC + mtu as f64;
            if lim2 < lim {
                lim = lim2;
            }
        }
        if lim >= 4_294_967_296.0 {
            return Err(invalid(
                "latency",
                format!("the limit it implies ({lim:.0} bytes) does not fit 32 bits"),
                "a shorter latency",
            ));
        }
        lim as u32
    };
    let opt_buffer = tc_calc_xmittime(rate64, buffer64);
    if opt_buffer == u32::MAX {
        return Err(invalid(
            burst_key,
            "burst out of range",
            "a burst that takes less than 274 s at the rate",
        ));
    }

    Ok(TbfOpt { rate64, buffer64, burst_key, limit, opt_buffer, prate64, mtu, mpu, overhead, linklayer, child_kind })
}

/// The kernel's `tbf_change()`: the rate tables, the bucket sizes in ns, the peak rate
/// and `max_size`, with the warning `tbf_change()` prints for a burst below the MTU.
fn tbf_change(opt: &TbfOpt, dev: &DevInfo) -> Result<(TbfConfig, Vec<String>), ParamError> {
    let TbfOpt { rate64, buffer64, burst_key, limit, opt_buffer, prate64, mtu, mpu, overhead, linklayer, .. } = *opt;
    let rate = PschedRatecfg::precompute(rate64, overhead, mpu, linklayer);
    let (mut max_size, buffer) = if buffer64 < (1 << 32) {
        // TCA_TBF_BURST.
        (buffer64, rate.l2t_ns(buffer64 as u32) as i64)
    } else {
        let b = (psched_ticks2ns(opt_buffer) as u64).min(u32::MAX as u64);
        (
            rate.ns_t2l(b).min(u32::MAX as u64),
            psched_ticks2ns(opt_buffer),
        )
    };
    let (peak, q_mtu) = if prate64 != 0 {
        let peak = PschedRatecfg::precompute(prate64, overhead, mpu, linklayer);
        if peak.rate_bytes_ps <= rate.rate_bytes_ps {
            return Err(invalid(
                "peakrate",
                format!(
                    "peakrate {} B/s is lower than or equal to rate {} B/s",
                    peak.rate_bytes_ps, rate.rate_bytes_ps
                ),
                "a peakrate above the rate",
            ));
        }
        // tc always sends TCA_TBF_PBURST = mtu, so the kernel ignores qopt->mtu.
        max_size = max_size.min(mtu as u64);
        (Some(peak), peak.l2t_ns(mtu) as i64)
    } else {
        (None, 0)
    };
    let mut warnings = Vec::new();
    if max_size < dev.mtu_l2 as u64 {
        warnings.push(format!(
            "sch_tbf: burst {max_size} is lower than device mtu ({}) !",
            dev.mtu_l2
        ));
    }
    if max_size == 0 {
        return Err(invalid(
            burst_key,
            "the burst allows no packet at all",
            "a burst of at least one byte",
        ));
    }
    let cfg = TbfConfig {
        limit,
        max_size: max_size as u32,
        buffer,
        mtu: q_mtu,
        rate,
        peak,
    };
    Ok((cfg, warnings))
}

impl Tbf {
    /// Mirrors tc's `tbf_parse_opt()` then the kernel's `tbf_init()` / `tbf_change()`.
    ///
    /// tc parameters: `rate` (mandatory), `burst` (aliases `buffer`, `maxburst`;
    /// mandatory), `limit` bytes or `latency` (exactly one), `peakrate` with `mtu`
    /// (alias `minburst`, mandatory with peakrate), `mpu`, `overhead`, `linklayer`
    /// (ethernet, atm, adsl). `qdisc` (model only) replaces the default bfifo child by a
    /// qdisc of that kind with its default parameters. As in tc, a zero value of
    /// `rate`, `burst`, `limit`, `latency`, `peakrate` or `mtu` counts as not given.
    pub fn from_params(params: Params, dev: &DevInfo) -> Result<Self, ParamError> {
        let opt = tbf_parse_opt(params)?;
        let (cfg, warnings) = tbf_change(&opt, dev)?;
        let limit = cfg.limit;
        let child = match opt.child_kind {
            None => TbfChild::Bfifo {
                q: VecDeque::with_capacity((limit / dev.mtu_l2.max(64)).clamp(16, 4096) as usize),
                backlog: 0,
                limit,
            },
            Some(kind) => TbfChild::Other {
                q: build_child(&kind, "qdisc", dev)?,
                stash: None,
            },
        };
        Ok(Tbf {
            tokens: cfg.buffer,
            ptokens: cfg.mtu,
            cfg,
            t_c: 0,
            child,
            stats: QdiscStats::default(),
            watchdog: None,
            warnings,
        })
    }

    /// The configuration in effect.
    pub fn config(&self) -> TbfConfig {
        self.cfg
    }

    /// Current tokens of the rate and peak buckets, in ns.
    pub fn tokens(&self) -> (i64, i64) {
        (self.tokens, self.ptokens)
    }

    /// The warnings the kernel would have logged at configuration time.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// `q->qdisc->ops->peek()`: the length of the head packet, if any. For a non-fifo
    /// child this is `qdisc_peek_dequeued()`, which may make the child drop (AQM).
    fn peek_len(&mut self, now: u64, drops: &mut Vec<u32>) -> Option<u32> {
        match &mut self.child {
            TbfChild::Bfifo { q, .. } => q.front().map(|s| s.len),
            TbfChild::Other { q, stash } => {
                if stash.is_none() {
                    let before = drops.len();
                    *stash = q.dequeue(now, drops);
                    self.stats.drops += (drops.len() - before) as u64;
                }
                stash.map(|s| s.len)
            }
        }
    }

    /// `qdisc_dequeue_peeked()`.
    fn take_peeked(&mut self) -> Option<Skb> {
        match &mut self.child {
            TbfChild::Bfifo { q, backlog, .. } => {
                let skb = q.pop_front()?;
                *backlog -= skb.len as u64;
                Some(skb)
            }
            TbfChild::Other { stash, .. } => stash.take(),
        }
    }
}

impl Qdisc for Tbf {
    fn kind(&self) -> &'static str {
        "tbf"
    }

    /// The rate bucket (`q->buffer` deep) and the peak bucket (`q->mtu` deep), each
    /// paid before the packet leaves (`tbf_dequeue()`), then the child's.
    fn shaping(&self, priority: u32) -> super::Shaping {
        use super::{PacketCost, TokenBucket};
        let c = &self.cfg;
        let mut buckets = vec![TokenBucket { cost: PacketCost::Psched(c.rate), depth_ns: c.buffer.max(0) as u64, overdraw: false }];
        if let Some(p) = c.peak {
            buckets.push(TokenBucket { cost: PacketCost::Psched(p), depth_ns: c.mtu.max(0) as u64, overdraw: false });
        }
        let s = super::Shaping { buckets, min_delay_ns: 0 };
        match &self.child {
            TbfChild::Other { q, .. } => s.then(q.shaping(priority)),
            TbfChild::Bfifo { .. } => s,
        }
    }

    /// `tbf_dump()` as iproute2's `tbf_print_opt()` prints it. The kernel dumps the
    /// bucket depths in ticks (`PSCHED_NS2TICKS()`, 64 ns) and tc turns them back into
    /// whole microseconds (`tc_core_tick2time()` truncates) before multiplying by the
    /// rate, so `burst 32k` at 200 Mbit/s prints as `32750b`; `lat` is what the limit
    /// holds beyond the burst, the larger of the rate's and the peak rate's.
    fn tc_options(&self) -> String {
        use super::tc_print::{rate, size, time};
        let c = &self.cfg;
        let ticks = |ns: i64| (ns.max(0) >> 6) as u32;
        // tc_core_tick2time() and tc_calc_xmitsize(), in tc's unsigned and double types.
        let tick2time = |tick: u32| (tick as f64 / TC_TICK_IN_USEC) as u32;
        let rate64 = c.rate.rate_bytes_ps;
        let mut s = format!("rate {} ", rate(rate64));
        if let Some(p) = &c.peak {
            s.push_str(&format!("peakrate {} ", rate(p.rate_bytes_ps)));
        }
        let buffer_us = tick2time(ticks(c.buffer));
        let burst = (rate64 as f64 * buffer_us as f64 / TC_TIME_UNITS_PER_SEC) as u32;
        s.push_str(&format!("burst {} ", size(burst as u64)));
        let mut latency = TC_TIME_UNITS_PER_SEC * (c.limit as f64 / rate64 as f64) - buffer_us as f64;
        if let Some(p) = &c.peak {
            let lat2 = TC_TIME_UNITS_PER_SEC * (c.limit as f64 / p.rate_bytes_ps as f64) - tick2time(ticks(c.mtu)) as f64;
            latency = latency.max(lat2);
        }
        if latency >= 0.0 {
            s.push_str(&format!("lat {}", time(latency as u32)));
        } else {
            s.push_str(&format!("limit {}", size(c.limit as u64)));
        }
        s
    }

    /// `tbf_enqueue()`.
    fn enqueue(&mut self, skb: Skb, now: u64, drops: &mut Vec<u32>) -> EnqueueVerdict {
        if skb.len > self.cfg.max_size {
            // Not GSO in the model: qdisc_drop().
            self.stats.drops += 1;
            drops.push(skb.id);
            return EnqueueVerdict::Dropped;
        }
        match &mut self.child {
            TbfChild::Bfifo { q, backlog, limit } => {
                // bfifo_enqueue().
                if *backlog + skb.len as u64 <= *limit as u64 {
                    *backlog += skb.len as u64;
                    q.push_back(skb);
                    EnqueueVerdict::Success
                } else {
                    self.stats.drops += 1;
                    drops.push(skb.id);
                    EnqueueVerdict::Dropped
                }
            }
            TbfChild::Other { q, .. } => {
                let before = drops.len();
                let verdict = q.enqueue(skb, now, drops);
                self.stats.drops += (drops.len() - before) as u64;
                verdict
            }
        }
    }

    /// `tbf_dequeue()`.
    fn dequeue(&mut self, now: u64, drops: &mut Vec<u32>) -> Option<Skb> {
        let Some(len) = self.peek_len(now, drops) else {
            self.watchdog = None;
            return None;
        };
        let now_ns = now.min(i64::MAX as u64) as i64;
        let mut toks = now_ns.saturating_sub(self.t_c).min(self.cfg.buffer);
        let mut ptoks: i64 = 0;
        if let Some(peak) = &self.cfg.peak {
            ptoks = toks.saturating_add(self.ptokens);
            if ptoks > self.cfg.mtu {
                ptoks = self.cfg.mtu;
            }
            ptoks = ptoks.saturating_sub(peak.l2t_ns(len) as i64);
        }
        toks = toks.saturating_add(self.tokens);
        if toks > self.cfg.buffer {
            toks = self.cfg.buffer;
        }
        toks = toks.saturating_sub(self.cfg.rate.l2t_ns(len) as i64);

        if (toks | ptoks) >= 0 {
            let skb = self.take_peeked()?;
            self.t_c = now_ns;
            self.tokens = toks;
            self.ptokens = ptoks;
            self.watchdog = None;
            return Some(skb);
        }
        // qdisc_watchdog_schedule_ns(): a new expiry replaces the armed one.
        let wait = (-toks).max(-ptoks).max(0) as u64;
        self.watchdog = Some(now.saturating_add(wait));
        self.stats.overlimits += 1;
        None
    }

    fn qlen(&self) -> u32 {
        match &self.child {
            TbfChild::Bfifo { q, .. } => q.len() as u32,
            TbfChild::Other { q, stash } => q.qlen() + stash.is_some() as u32,
        }
    }

    fn backlog(&self) -> u64 {
        match &self.child {
            TbfChild::Bfifo { backlog, .. } => *backlog,
            TbfChild::Other { q, stash } => q.backlog() + stash.map_or(0, |s| s.len as u64),
        }
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    /// tbf has no xstats of its own; a child qdisc's, as `tc -s qdisc show` dumps it.
    fn xstats(&self) -> Vec<(&'static str, u64)> {
        match &self.child {
            TbfChild::Other { q, .. } => super::xstat::with_children(Vec::new(), [q.as_ref()]),
            TbfChild::Bfifo { .. } => Vec::new(),
        }
    }

    /// The child's timers (a pie child's `adapt_timer`).
    fn run_timers(&mut self, now: u64) {
        if let TbfChild::Other { q, .. } = &mut self.child {
            q.run_timers(now);
        }
    }

    fn has_stack_ops(&self) -> bool {
        matches!(&self.child, TbfChild::Other { q, .. } if q.has_stack_ops())
    }

    fn take_stack_ops(&mut self, ops: &mut Vec<super::StackOp>) {
        if let TbfChild::Other { q, .. } = &mut self.child {
            q.take_stack_ops(ops);
        }
    }

    /// The watchdog armed by the last refused dequeue; otherwise, with packets held by
    /// a non-work-conserving child (e.g. a pacing fq), the child's own watchdog.
    fn next_wakeup(&self) -> Option<u64> {
        if self.qlen() == 0 {
            return None;
        }
        if self.watchdog.is_some() {
            return self.watchdog;
        }
        match &self.child {
            TbfChild::Other { q, stash: None } => q.next_wakeup(),
            _ => None,
        }
    }
}


#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;


    fn s(v: &str) -> ParamValue {
        ParamValue::Str(v.into())
    }

    #[test]
    fn ratecfg_matches_hand_computation() {
        // 20mbit = 2_500_000 B/s: 1e9 / 2.5e6 = 400, doubled 23 times to pass 2^31.
        let r = PschedRatecfg::precompute(2_500_000, 0, 0, LinkLayer::Ethernet);
        assert_eq!((r.mult, r.shift), (3_355_443_200, 23));
        assert_eq!(r.l2t_ns(1514), 605_600);
        // 1 B/s: 1e9 and 2e9 are below 2^31, 4e9 is not: mult 4e9, shift 2.
        let r = PschedRatecfg::precompute(1, 0, 0, LinkLayer::Ethernet);
        assert_eq!((r.mult, r.shift), (4_000_000_000, 2));
        assert_eq!(r.l2t_ns(3), 3_000_000_000);
        // 0 B/s: mult 1, shift 0.
        let r = PschedRatecfg::precompute(0, 0, 0, LinkLayer::Ethernet);
        assert_eq!((r.mult, r.shift), (1, 0));
    }

    #[test]
    fn xmittime_is_tcs() {
        // 1514 B at 2.5e6 B/s = 605.6 us = 9462.5 ticks -> 9463.
        assert_eq!(tc_calc_xmittime(2_500_000, 1514), 9463);
        assert_eq!(tc_calc_xmittime(1, u64::MAX), u32::MAX);
    }

    #[test]
    fn latency_becomes_a_limit() {
        let dev = DevInfo::default();
        let q = Tbf::from_params(
            Params::from_pairs(&[
                ("rate", s("20mbit")),
                ("burst", s("15140")),
                ("latency", s("50ms")),
            ]),
            &dev,
        )
        .unwrap();
        // 2.5e6 B/s * 0.05 s + 15140 = 140140.
        assert_eq!(q.config().limit, 140_140);
        assert_eq!(q.config().max_size, 15_140);
        assert_eq!(q.config().buffer, 6_056_000);
    }
}
