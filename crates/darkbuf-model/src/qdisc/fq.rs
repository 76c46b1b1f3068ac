//! fq: mirrors net/sched/sch_fq.c, the Fair Queue packet scheduler with per-flow pacing.
//!
//! Functions mirrored: `fq_enqueue()`, `fq_classify()`, `fq_fastpath_check()`, `fq_gc()`,
//! `fq_gc_candidate()`, `flow_queue_add()`, `fq_peek()`, `fq_dequeue_skb()`,
//! `fq_dequeue()`, `fq_pband_head_select()`, `fq_check_throttled()`,
//! `fq_flow_set_throttled()`, `fq_flow_unset_throttled()`, `fq_flow_add_tail()`,
//! `fq_flow_set_detached()`, `fq_init()` / `fq_change()` (parameters), `fq_dump_stats()`
//! (xstats), and `qdisc_watchdog_schedule_range_ns()` (net/sched/sch_api.c) for the
//! pacing timer.
//!
//! # The algorithm
//! Every socket (`skb->sk`, [`Skb::sk`]) is a flow. A packet without a socket is an
//! "orphan" and is classified by its flow hash: `((hash & orphan_mask) << 1) | 1`, so at
//! most `orphan_mask + 1` pseudo-flows (the odd value never equals a socket pointer). Flows
//! are found through `buckets` hash buckets (`hash_ptr(sk, buckets_log)`), each an rb-tree
//! in the kernel; a flow is created on first use with `credit = initial_quantum` and is
//! *detached* (on no list). Active flows sit on a `new_flows` or `old_flows` list and
//! are served by deficit round robin with `quantum` bytes per round; a new flow gets
//! its first round from the new list, ahead of the old flows. A flow idle (detached)
//! longer than `refill_delay` gets `credit = max(credit, quantum)` when it comes back.
//!
//! Pacing: each packet has a `time_to_send`, its EDT stamp ([`Skb::edt`]) or the
//! enqueue time. A flow whose head packet (or whose `time_next_packet`) lies in the
//! future is *throttled*: taken off its list and put in the `delayed` tree ordered by
//! `time_next_packet`, and the watchdog is armed for the earliest one
//! (`time_next_delayed_flow`). After a packet is sent, `time_next_packet` is pushed
//! ahead by `len / rate`, where `rate` is `maxrate` and, for a packet without an EDT
//! stamp, also the socket's pacing rate ([`Skb::pacing_rate`]). Without an EDT stamp
//! the delay is charged once per `quantum` of credit (`plen = max(len, quantum)`,
//! skipped while `credit > 0`), except below `low_rate_threshold` where every packet
//! is paced (`credit = 0`). An EDT stamp beyond `now + horizon` is dropped
//! (`horizon_drop`, counted in `horizon_drops`) or capped to `now + horizon`
//! (`horizon_cap`, `horizon_caps`). Packets whose lateness exceeds `ce_threshold` are
//! CE-marked.
//!
//! # Kernel versions (`version`)
//! - `"6.7"` (default): the 6.7+ design as in the current torvalds/linux sch_fq.c:
//!   three bands (`prio2band[skb->priority & 15]`, tc's `priomap`) each with its own
//!   new/old lists, served by weighted round robin with `weights` bytes of band credit
//!   per turn (`fq_pband_head_select()`); `limit` applies per band (`band_pkt_count`,
//!   `bandN_drops`); `inactive_flows` counts flows with no packets; the flow GC runs on
//!   every classification; and the `fq_fastpath_check()` fast path: a packet that may
//!   leave now, arriving while nothing else is eligible, goes to the `internal` FIFO,
//!   which `fq_dequeue()` serves before any flow (`fastpath_packets`). The fast path
//!   matters for ordering (a fast-path packet overtakes every throttled flow) and for
//!   flow state (a fast-path packet creates no flow and spends no credit), so it is
//!   modelled. Later fixes included: the fast path also refuses while a delayed flow is
//!   due; a band whose refilled credit is still <= 0 does not count as a retry; the
//!   unthrottle-latency EWMA ignores zero samples; the GC frees every candidate on the
//!   search path (the 6.7 release still stopped at `FQ_GC_MAX` = 8, a cap that needs
//!   nine idle flows on one search path, i.e. hundreds of flows in one bucket).
//! - `"6.6"`: before the bands: one new/old list pair; the total `limit`
//!   (`qlen >= limit` drops); `TC_PRIO_CONTROL` packets (priority 7) go to the `internal`
//!   high-priority FIFO, served first with no flow limit (`highprio_packets`);
//!   `inactive_flows` counts detached flows; an emptied flow on the new list moves to the
//!   old list only if the old list is not empty (else it is detached); the GC runs only
//!   when `flows >= 2 * buckets` and more than half the flows are inactive, at most 8 per
//!   pass; no fast path. `bands`, `priomap`, `weights` and `offload_horizon` do not exist.
//!
//! # Kernel quirks kept on purpose
//! - `fq_enqueue()` links a detached flow onto the new list of `f->band` *before* it sets
//!   `f->band` to the arriving packet's band: a brand-new flow starts its first round in
//!   band 0's new list (the zeroed `band`), and a flow that changes band makes its first
//!   round in its previous band.
//! - `f->credit = max_t(u32, f->credit, quantum)` compares as unsigned: a flow that
//!   went idle with negative credit keeps it after `refill_delay`.
//! - Flow and band credits are C `int`s and wrap (the kernel builds with
//!   `-fno-strict-overflow`).
//! - The `max(time_to_send, time_next_packet)` of the packet that was sent becomes the
//!   reference for CE marking (`now - time_next_packet > ce_threshold`), and
//!   `ce_mark` counts even when the packet is Not-ECT (`INET_ECN_set_ce()` fails).
//!
//! # Watchdog
//! `qdisc_watchdog_schedule_range_ns(time_next_delayed_flow, timer_slack)` starts an
//! hrtimer with soft expiry `t` and hard expiry `t + timer_slack`. The clock event
//! device is programmed for the hard expiry; only another interrupt inside the window
//! would run it earlier. [`Qdisc::next_wakeup`] therefore reports the hard expiry
//! `t + timer_slack` (10 us by default), and the drift compensation in `fq_dequeue()`
//! (`len -= min(len / 2, now - time_next_packet)`) then keeps the long-term rate. An
//! already queued timer whose soft expiry lies in `[t, t + slack]` is kept, as in the
//! kernel; a timer is considered fired once a dequeue runs at or after its hard expiry.
//!
//! # Not modelled (and why)
//! - The exact rb-tree shapes: which idle flows `fq_gc()` meets depends on the tree
//!   shape, itself a function of socket pointer values and insertion history that have
//!   no counterpart here. A bucket is a vector sorted by flow key, and the GC visits the
//!   nodes a binary search visits (a balanced search tree over the same keys), so GC
//!   stays lazy and local to the bucket being searched, as in the kernel.
//! - Socket state: [`Skb`] has no `sk_state` or protocol. A non-zero `sk` is taken as a
//!   connected full socket (listeners, TIME_WAIT and unconnected `TCP_CLOSE` sockets,
//!   which the kernel classifies by hash, are not distinguishable), and a non-zero
//!   `pacing_rate` on a socket stands for a non-TCP socket's `SO_MAX_PACING_RATE`, which
//!   keeps its packets off the fast path. `sk_hash` (socket reuse) and
//!   `sk_pacing_status` are not modelled; allocation never fails (`allocation_errors`
//!   stays 0).
//! - `offload_horizon` needs `dev->max_pacing_offload_horizon`, which is 0 for every
//!   device without EDT offload (veth, tun): only 0 is accepted, as the kernel does.
//! - `fq_change()` on a live qdisc (re-limiting, `fq_resize()` rehash): parameters are
//!   set once, at init.

use super::{DevInfo, EnqueueVerdict, Qdisc, QdiscStats};
use crate::jiffies::{jiffies_at, usecs_to_jiffies};
use crate::params::{ParamError, ParamValue, Params};
use crate::skb::flow_hash;
use crate::Skb;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// `FQ_BANDS`.
pub const FQ_BANDS: usize = 3;
/// `FQ_MIN_WEIGHT`: the smallest band weight `fq_load_weights()` accepts.
pub const FQ_MIN_WEIGHT: u32 = 16384;
/// Default band weights set by `fq_init()`: 9, 3 and 1 times 64 KiB.
pub const FQ_DEFAULT_WEIGHTS: [u32; FQ_BANDS] = [9 << 16, 3 << 16, 1 << 16];
/// `sch_default_prio2band` (the pfifo_fast map), fq's default `priomap`.
pub const FQ_DEFAULT_PRIO2BAND: [u8; 16] = [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];
/// `FQ_GC_MAX` (6.6 and the 6.7 release; gone from the current code): flows freed per
/// `fq_gc()` pass at most.
const FQ_GC_MAX: usize = 8;
/// Internal (fast-path) queue length at which `fq_fastpath_check()` refuses.
const FQ_FASTPATH_MAX_QLEN: u32 = 8;
/// Largest `buckets_log` `fq_change()` accepts: `ilog2(256 * 1024)`.
const FQ_MAX_BUCKETS_LOG: u32 = 18;
/// `TC_PRIO_MAX`.
const TC_PRIO_MAX: u32 = 15;
/// `TC_PRIO_CONTROL`.
const TC_PRIO_CONTROL: u32 = 7;
const NSEC_PER_SEC: u64 = 1_000_000_000;
const NSEC_PER_USEC: u64 = 1_000;
/// `GOLDEN_RATIO_64` (include/linux/hash.h), for `hash_ptr()`.
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;
/// `~0UL`: no rate limit.
const RATE_UNLIMITED: u64 = u64::MAX;
/// End of a flow list (`NULL`).
const NIL: u32 = u32::MAX;
/// `&throttled`: the `next` value of a flow in the `delayed` tree.
const THROTTLED: u32 = u32::MAX - 1;

/// Which kernel generation of sch_fq to follow; see the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FqVersion {
    /// 6.7 and later (current): bands, per-band limit, fast path, always-on GC.
    V6_7,
    /// 6.6 and earlier (5.7+, with horizon): one list pair, high-priority FIFO.
    V6_6,
}

/// The validated configuration (`fq_init()` defaults after `fq_change()`), in the
/// kernel's units.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FqConfig {
    pub version: FqVersion,
    /// `sch->limit`: packets per band (6.7+) or in total (6.6).
    pub limit: u32,
    /// `flow_plimit` (tc `flow_limit`): packets per flow.
    pub flow_plimit: u32,
    /// Bytes of flow credit per DRR round.
    pub quantum: u32,
    /// Credit of a new flow.
    pub initial_quantum: u32,
    /// `flow_refill_delay` in jiffies.
    pub flow_refill_delay: u64,
    /// `flow_max_rate` (tc `maxrate`) in bytes/s; `u64::MAX` (`~0UL`) = unlimited.
    pub flow_max_rate: u64,
    /// `fq_trees_log`: log2 of the number of buckets.
    pub buckets_log: u32,
    pub orphan_mask: u32,
    /// Bytes/s at or below which every packet is paced.
    pub low_rate_threshold: u32,
    /// tc `pacing` / `nopacing`.
    pub rate_enable: bool,
    pub ce_threshold_ns: u64,
    pub timer_slack_ns: u64,
    pub horizon_ns: u64,
    pub horizon_drop: bool,
    pub offload_horizon_ns: u64,
    /// The model's `fastpath_when_behind` (6.7+): the fast path is taken while a
    /// delayed flow is already due, as from 6.7 until the fix of 2024-11-22 ("sch_fq:
    /// don't follow the fast path if Tx is behind now", Fixes 076433bd78d7): a packet
    /// that arrives then overtakes the due flow's packets. `false` (the default) is the
    /// fixed kernel.
    pub fastpath_when_behind: bool,
    /// tc `priomap` (6.7+).
    pub prio2band: [u8; 16],
    /// tc `weights`: band quanta in bytes (6.7+).
    pub weights: [u32; FQ_BANDS],
    /// CONFIG_HZ, for the jiffies fields (`age`, `flow_refill_delay`, GC age).
    pub hz: u32,
}

/// A queued packet with its `fq_skb_cb`.
#[derive(Clone, Copy, Debug)]
struct FqPkt {
    skb: Skb,
    time_to_send: u64,
    band: u8,
}

/// A flow's packets: the FIFO `head..tail` list for packets in time order, and
/// `t_root` (an rb-tree in the kernel) for packets whose `time_to_send` is earlier
/// than the tail's, kept sorted by time with ties in arrival order.
#[derive(Clone, Debug, Default)]
struct FlowQueue {
    list: VecDeque<FqPkt>,
    t_root: VecDeque<FqPkt>,
}

impl FlowQueue {
    /// `flow_queue_add()`.
    fn add(&mut self, p: FqPkt) {
        match self.list.back() {
            Some(tail) if p.time_to_send < tail.time_to_send => {
                // rb-tree insertion goes right on >=: after every equal key.
                let pos = self.t_root.partition_point(|x| x.time_to_send <= p.time_to_send);
                self.t_root.insert(pos, p);
            }
            _ => self.list.push_back(p),
        }
    }

    /// `fq_peek()`: the earlier of the tree's first and the list head (the head on a tie).
    /// Returns `true` in the flag when the packet is the tree's.
    fn peek(&self) -> Option<(FqPkt, bool)> {
        match (self.t_root.front(), self.list.front()) {
            (None, None) => None,
            (None, Some(h)) => Some((*h, false)),
            (Some(t), None) => Some((*t, true)),
            (Some(t), Some(h)) => {
                if t.time_to_send < h.time_to_send {
                    Some((*t, true))
                } else {
                    Some((*h, false))
                }
            }
        }
    }

    /// `fq_erase_head()` of the packet `peek()` returned.
    fn erase_head(&mut self, from_tree: bool) -> Option<FqPkt> {
        if from_tree {
            self.t_root.pop_front()
        } else {
            self.list.pop_front()
        }
    }
}

/// `struct fq_flow`.
#[derive(Clone, Debug, Default)]
struct FqFlow {
    queue: FlowQueue,
    /// `f->sk`: the socket "pointer" (`sk << 1`, even) or the orphan key (odd).
    key: u64,
    /// Packets in the flow.
    qlen: u32,
    credit: i32,
    band: u8,
    /// Next flow in its RR list, `NIL`, or `THROTTLED`.
    next: u32,
    /// `fq_flow_is_detached()`: on no list (the low bit of `age` in the kernel).
    detached: bool,
    /// `f->age`: `jiffies | 1` when detached.
    age: u64,
    time_next_packet: u64,
    in_use: bool,
}

/// `struct fq_flow_head`.
#[derive(Clone, Copy, Debug)]
struct FlowHead {
    first: u32,
    last: u32,
}

impl Default for FlowHead {
    fn default() -> Self {
        FlowHead { first: NIL, last: NIL }
    }
}

/// `struct fq_perband_flows`.
#[derive(Clone, Copy, Debug, Default)]
struct PerBand {
    new_flows: FlowHead,
    old_flows: FlowHead,
    credit: i32,
    quantum: i32,
}

/// Where `fq_classify()` put a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// `&q->internal`: the fast path (6.7+) or the high-priority FIFO (6.6).
    Internal,
    Flow(u32),
}

/// The fq qdisc (`struct fq_sched_data`).
pub struct Fq {
    cfg: FqConfig,
    /// Flow slab: `kmem_cache` of `fq_flow`; freed entries are reused (their packet
    /// queues keep their capacity, so a recycled flow does not allocate).
    flows: Vec<FqFlow>,
    free_flows: Vec<u32>,
    /// `fq_root[]`: each bucket's flows, sorted by key.
    fq_root: Vec<Vec<u32>>,
    /// `q->internal`: its queue and `qlen`.
    internal: FlowQueue,
    internal_qlen: u32,
    band_flows: [PerBand; FQ_BANDS],
    /// `band_nr`: the band being served.
    band_nr: usize,
    /// `delayed`: throttled flows by (`time_next_packet`, insertion order).
    delayed: BinaryHeap<Reverse<(u64, u64, u32)>>,
    delayed_seq: u64,
    time_next_delayed_flow: u64,
    unthrottle_latency_ns: u64,
    band_pkt_count: [u32; FQ_BANDS],
    /// `q->flows`, `q->inactive_flows`, `q->throttled_flows`.
    nr_flows: u32,
    inactive_flows: u32,
    throttled_flows: u32,
    stat_throttled: u64,
    stat_gc_flows: u64,
    stat_internal_packets: u64,
    stat_fastpath_packets: u64,
    stat_band_drops: [u64; FQ_BANDS],
    stat_ce_mark: u64,
    stat_horizon_drops: u64,
    stat_horizon_caps: u64,
    stat_flows_plimit: u64,
    stat_pkts_too_long: u64,
    stat_allocation_errors: u64,
    /// The armed watchdog hrtimer: (soft expiry, hard expiry).
    watchdog: Option<(u64, u64)>,
    /// The latest time seen, for the relative `time_next_delayed_flow` xstat.
    last_now: u64,
    hash_key: u32,
    qlen: u32,
    backlog: u64,
    stats: QdiscStats,
    /// Scratch list for `fq_gc()`, kept to avoid allocating.
    gc_scratch: Vec<u32>,
}

const FQ_PARAMS_6_6: &[&str] = &[
    "version",
    "limit",
    "flow_limit",
    "quantum",
    "initial_quantum",
    "maxrate",
    "buckets",
    "pacing",
    "nopacing",
    "refill_delay",
    "low_rate_threshold",
    "orphan_mask",
    "timer_slack",
    "ce_threshold",
    "horizon",
    "horizon_drop",
    "horizon_cap",
];

/// Keys that exist only since 6.7 (bands) or later (offload_horizon).
const FQ_KEYS_6_7_ONLY: &[&str] = &["bands", "priomap", "weights", "offload_horizon", "fastpath_when_behind"];

/// `hash_ptr(ptr, bits)` on 64-bit: `hash_64()`.
fn hash_ptr(key: u64, bits: u32) -> usize {
    (key.wrapping_mul(GOLDEN_RATIO_64) >> (64 - bits)) as usize
}

/// `time_after(a, b)`: `a` is later than `b` (wrapping).
fn time_after(a: u64, b: u64) -> bool {
    (b.wrapping_sub(a) as i64) < 0
}


/// tc's `ilog2()` in q_fq.c: log2 rounded up (`buckets 1000` gives 10).
fn tc_ilog2(mut val: u32) -> u32 {
    let mut res = 0;
    val = val.wrapping_sub(1);
    while val != 0 {
        res += 1;
        val >>= 1;
    }
    res
}

fn invalid(key: &str, message: String, expected: &str) -> ParamError {
    ParamError::Invalid { key: key.into(), message, expected: expected.into() }
}

/// A tc time parameter that the kernel receives in microseconds (`get_time()` truncates).
fn take_usecs(params: &mut Params, key: &str, default_us: u32) -> Result<u32, ParamError> {
    let ns = params.take_time_ns(key, default_us as u64 * NSEC_PER_USEC, 0, u32::MAX as u64 * NSEC_PER_USEC + 999)?;
    Ok((ns / NSEC_PER_USEC) as u32)
}

/// A tc rate parameter (`get_rate()`: bits/s to bytes/s, a 32-bit value).
fn take_rate_bytes(params: &mut Params, key: &str) -> Result<Option<u32>, ParamError> {
    match params.take_rate_bps(key, None)? {
        None => Ok(None),
        Some(bps) => {
            let bytes = bps / 8;
            if bytes > u32::MAX as u64 {
                return Err(invalid(
                    key,
                    format!("{bps} bit/s does not fit tc's 32-bit byte rate"),
                    "a rate up to 34.35 Gbit/s (4294967295 bytes/s)",
                ));
            }
            Ok(Some(bytes as u32))
        }
    }
}

/// Two tc flags that are each other's negation (`pacing`/`nopacing`,
/// `horizon_drop`/`horizon_cap`): `positive = true` or `negative = false` sets it.
fn take_flag_pair(params: &mut Params, positive: &str, negative: &str, default: bool) -> Result<bool, ParamError> {
    let p = if params.iter().any(|(k, _)| k == positive) { Some(params.take_bool(positive, default)?) } else { None };
    let n = if params.iter().any(|(k, _)| k == negative) { Some(!params.take_bool(negative, !default)?) } else { None };
    match (p, n) {
        (Some(a), Some(b)) if a != b => Err(invalid(
            negative,
            format!("contradicts `{positive}`"),
            &format!("either `{positive}` or `{negative}`, not both with opposite meanings"),
        )),
        (Some(a), _) | (None, Some(a)) => Ok(a),
        (None, None) => Ok(default),
    }
}

/// The model's `version` ("6.7" default, "6.6"; a number from `--set` too), and
/// 6.7's keys refused for 6.6.
fn fq_version(params: &mut Params) -> Result<FqVersion, ParamError> {
    // `--set qdisc.version=6.6` arrives as a number: accept 6.6 and 6.7 as numbers too.
    let numeric = params.iter().find(|(k, _)| k.as_str() == "version").and_then(|(_, v)| match v {
        ParamValue::Float(f) if *f == 6.6 => Some(FqVersion::V6_6),
        ParamValue::Float(f) if *f == 6.7 => Some(FqVersion::V6_7),
        _ => None,
    });
    let version = match numeric {
        Some(v) => {
            *params = Params::new(
                params.iter().filter(|(k, _)| k.as_str() != "version").map(|(k, v)| (k.clone(), v.clone())).collect(),
            );
            v
        }
        None => match params.take_choice("version", "6.7", &["6.7", "6.6"])? {
            "6.6" => FqVersion::V6_6,
            _ => FqVersion::V6_7,
        },
    };
    if version == FqVersion::V6_6 {
        if let Some(k) = FQ_KEYS_6_7_ONLY.iter().find(|k| params.iter().any(|(p, _)| p == *k)) {
            return Err(invalid(
                k,
                format!("`{k}` does not exist before Linux 6.7"),
                "version = \"6.7\", or none of bands, priomap, weights, offload_horizon and fastpath_when_behind",
            ));
        }
    }
    Ok(version)
}

/// Linux 6.7's band keys (`fq_change()`'s `TCA_FQ_PRIOMAP` and `TCA_FQ_WEIGHTS`):
/// `fastpath_when_behind` (the model's), `bands` (3 only), `priomap`, `weights` and
/// `offload_horizon`.
fn fq_6_7_params(params: &mut Params) -> Result<([u8; 16], [u32; FQ_BANDS], u64, bool), ParamError> {
    let mut prio2band = FQ_DEFAULT_PRIO2BAND;
    let mut weights = FQ_DEFAULT_WEIGHTS;
    let fastpath_when_behind = params.take_bool("fastpath_when_behind", false)?;
    params.take_u32("bands", FQ_BANDS as u32, FQ_BANDS as u32, FQ_BANDS as u32)?;
    if let Some(map) = params.take_list_u32("priomap", 16, FQ_BANDS as u32 - 1)? {
        for (d, s) in prio2band.iter_mut().zip(map) {
            *d = s as u8;
        }
    }
    if let Some(w) = params.take_list_u32("weights", FQ_BANDS, i32::MAX as u32)? {
        if let Some(bad) = w.iter().find(|&&x| x < FQ_MIN_WEIGHT) {
            return Err(invalid(
                "weights",
                format!("weight {bad} is less than the minimum {FQ_MIN_WEIGHT}"),
                "3 integers in 16384..=2147483647, space separated",
            ));
        }
        weights.copy_from_slice(&w);
    }
    let offload_horizon_ns = params.take_time_ns("offload_horizon", 0, 0, u64::MAX)?;
    if offload_horizon_ns != 0 {
        return Err(invalid(
            "offload_horizon",
            "the device has no EDT offload (max_pacing_offload_horizon is 0)".into(),
            "0us",
        ));
    }
    Ok((prio2band, weights, offload_horizon_ns, fastpath_when_behind))
}

impl Fq {
    /// Mirrors `fq_init()` + `fq_change()`, with tc's parameter names and units:
    /// `limit` and `flow_limit` in packets; `quantum` (1..=1 MiB) and `initial_quantum`
    /// (0..=INT_MAX) in bytes; `maxrate` and `low_rate_threshold` as rates (bytes/s
    /// internally, at most 32 bits); `buckets` rounded up to a power of two, 2..=262144
    /// (`buckets_log` 1..=18); `refill_delay`, `ce_threshold`, `horizon` and
    /// `offload_horizon` as durations (microseconds to the kernel); `timer_slack` as a
    /// duration (nanoseconds, 32 bits); `pacing`/`nopacing` and
    /// `horizon_drop`/`horizon_cap` as booleans; `bands` (must be 3), `priomap` (16 bands
    /// 0..=2, space separated) and `weights` (3 values >= 16384) for 6.7+; and the
    /// model's `version` (`"6.7"` default, `"6.6"`) and `fastpath_when_behind` (6.7+,
    /// default false).
    ///
    /// Defaults (`fq_init()`): limit 10000, flow_limit 100, quantum 2 * MTU, initial
    /// quantum 10 * MTU, refill_delay 40 ms, no maxrate, pacing on, 1024 buckets,
    /// orphan_mask 1023, low_rate_threshold 550 kbit, timer_slack 10 us, horizon 10 s
    /// with drop, ce_threshold `~0U` us (off), weights 589824 196608 65536.
    pub fn from_params(mut params: Params, dev: &DevInfo) -> Result<Self, ParamError> {
        let version = fq_version(&mut params)?;
        let hz = dev.hz;
        if hz == 0 {
            return Err(invalid(
                "refill_delay",
                "the device's HZ is 0; fq counts jiffies".into(),
                "a device with hz >= 1",
            ));
        }
        let mtu = dev.mtu_l2;
        let limit = params.take_u32("limit", 10_000, 0, u32::MAX)?;
        let flow_plimit = params.take_u32("flow_limit", 100, 0, u32::MAX)?;
        let default_quantum = mtu.saturating_mul(2);
        let quantum = params.take_size("quantum", default_quantum as u64, 1, 1 << 20)? as u32;
        if quantum == 0 || quantum > 1 << 20 {
            // Only reachable through the default 2 * MTU: DRR needs 0 < quantum, and
            // the credit arithmetic is 32-bit (no real device has an MTU above 512 KiB).
            return Err(invalid(
                "quantum",
                format!("the device MTU {mtu} gives a default quantum of {quantum}"),
                "an explicit quantum in 1..=1048576 bytes",
            ));
        }
        let initial_quantum = params.take_size(
            "initial_quantum",
            (mtu.saturating_mul(10)).min(i32::MAX as u32) as u64,
            0,
            i32::MAX as u64,
        )? as u32;
        let flow_max_rate = match take_rate_bytes(&mut params, "maxrate")? {
            None | Some(u32::MAX) => RATE_UNLIMITED,
            Some(r) => r as u64,
        };
        let buckets = params.take_u32("buckets", 0, 0, u32::MAX)?;
        let mut buckets_log = 10; // ilog2(1024)
        if buckets != 0 {
            let log = tc_ilog2(buckets);
            if !(1..=FQ_MAX_BUCKETS_LOG).contains(&log) {
                return Err(invalid(
                    "buckets",
                    format!("{buckets} buckets gives buckets_log {log}"),
                    "2..=262144 buckets (rounded up to a power of two)",
                ));
            }
            buckets_log = log;
        }
        let rate_enable = take_flag_pair(&mut params, "pacing", "nopacing", true)?;
        let refill_us = take_usecs(&mut params, "refill_delay", 40_000)?;
        let flow_refill_delay = usecs_to_jiffies(refill_us as u64, hz);
        let low_rate_threshold = take_rate_bytes(&mut params, "low_rate_threshold")?.unwrap_or(550_000 / 8);
        let orphan_mask = params.take_u32("orphan_mask", 1024 - 1, 0, u32::MAX)?;
        let timer_slack_ns = params.take_time_ns("timer_slack", 10 * NSEC_PER_USEC, 0, u32::MAX as u64)?;
        let ce_threshold_ns = take_usecs(&mut params, "ce_threshold", u32::MAX)? as u64 * NSEC_PER_USEC;
        let horizon_ns = take_usecs(&mut params, "horizon", 10_000_000)? as u64 * NSEC_PER_USEC;
        let horizon_drop = take_flag_pair(&mut params, "horizon_drop", "horizon_cap", true)?;
        let (prio2band, weights, offload_horizon_ns, fastpath_when_behind) = match version {
            FqVersion::V6_7 => fq_6_7_params(&mut params)?,
            FqVersion::V6_6 => (FQ_DEFAULT_PRIO2BAND, FQ_DEFAULT_WEIGHTS, 0, false),
        };
        params.finish(&match version {
            FqVersion::V6_7 => [FQ_PARAMS_6_6, FQ_KEYS_6_7_ONLY].concat(),
            FqVersion::V6_6 => FQ_PARAMS_6_6.to_vec(),
        })?;
        let cfg = FqConfig {
            version,
            limit,
            flow_plimit,
            quantum,
            initial_quantum,
            flow_refill_delay,
            flow_max_rate,
            buckets_log,
            orphan_mask,
            low_rate_threshold,
            rate_enable,
            ce_threshold_ns,
            timer_slack_ns,
            horizon_ns,
            horizon_drop,
            offload_horizon_ns,
            fastpath_when_behind,
            prio2band,
            weights,
            hz,
        };
        Ok(Self::with_config(cfg, dev.hash_key))
    }

    /// Builds the qdisc from an already validated configuration (`fq_init()`).
    /// `hash_key` keys the flow hash of orphaned packets (`skb_get_hash()`). Values the
    /// kernel would reject are clamped (quantum to 1..=1 MiB, weights to
    /// 16384..=INT_MAX, buckets_log to 1..=18, hz to >= 1) so DRR always progresses.
    pub fn with_config(cfg: FqConfig, hash_key: u32) -> Self {
        let buckets_log = cfg.buckets_log.clamp(1, FQ_MAX_BUCKETS_LOG);
        let weights = cfg.weights.map(|w| w.clamp(FQ_MIN_WEIGHT, i32::MAX as u32));
        let mut band_flows = [PerBand::default(); FQ_BANDS];
        for (b, w) in band_flows.iter_mut().zip(weights) {
            b.quantum = w as i32;
        }
        Fq {
            fq_root: vec![Vec::new(); 1 << buckets_log],
            cfg: FqConfig {
                buckets_log,
                hz: cfg.hz.max(1),
                quantum: cfg.quantum.clamp(1, 1 << 20),
                weights,
                ..cfg
            },
            flows: Vec::new(),
            free_flows: Vec::new(),
            internal: FlowQueue::default(),
            internal_qlen: 0,
            band_flows,
            band_nr: 0,
            delayed: BinaryHeap::new(),
            delayed_seq: 0,
            time_next_delayed_flow: u64::MAX,
            unthrottle_latency_ns: 0,
            band_pkt_count: [0; FQ_BANDS],
            nr_flows: 0,
            inactive_flows: 0,
            throttled_flows: 0,
            stat_throttled: 0,
            stat_gc_flows: 0,
            stat_internal_packets: 0,
            stat_fastpath_packets: 0,
            stat_band_drops: [0; FQ_BANDS],
            stat_ce_mark: 0,
            stat_horizon_drops: 0,
            stat_horizon_caps: 0,
            stat_flows_plimit: 0,
            stat_pkts_too_long: 0,
            stat_allocation_errors: 0,
            watchdog: None,
            last_now: 0,
            hash_key,
            qlen: 0,
            backlog: 0,
            stats: QdiscStats::default(),
            gc_scratch: Vec::new(),
        }
    }

    /// The configuration in effect.
    pub fn config(&self) -> &FqConfig {
        &self.cfg
    }

    /// `q->flows`: flows allocated (active, idle or throttled).
    pub fn flows(&self) -> u32 {
        self.nr_flows
    }

    /// `q->inactive_flows`: flows with no packets (6.7+) or detached flows (6.6).
    pub fn inactive_flows(&self) -> u32 {
        self.inactive_flows
    }

    /// `q->throttled_flows`: flows waiting in the `delayed` tree.
    pub fn throttled_flows(&self) -> u32 {
        self.throttled_flows
    }

    /// `q->time_next_delayed_flow` (absolute ns; `u64::MAX` when no flow is throttled
    /// or no dequeue has looked since).
    pub fn time_next_delayed_flow(&self) -> u64 {
        self.time_next_delayed_flow
    }

    /// The flow key fq uses for `skb` (`fq_classify()`): the socket, or for an orphan
    /// `((hash & orphan_mask) << 1) | 1`.
    pub fn flow_key(&self, skb: &Skb) -> u64 {
        if skb.sk == 0 {
            let hash = flow_hash(skb.flow, self.hash_key) & self.cfg.orphan_mask;
            ((hash as u64) << 1) | 1
        } else {
            (skb.sk as u64) << 1
        }
    }

    /// The bucket (`hash_ptr(sk, buckets_log)`) a flow key lives in.
    pub fn bucket_of_key(&self, key: u64) -> usize {
        hash_ptr(key, self.cfg.buckets_log)
    }

    /// The credit of the flow with `key`, if it exists (for tests and traces).
    pub fn flow_credit(&self, key: u64) -> Option<i32> {
        self.lookup(key).map(|fi| self.flows[fi as usize].credit)
    }

    fn jiffies(&self, now: u64) -> u64 {
        jiffies_at(now, self.cfg.hz)
    }

    fn lookup(&self, key: u64) -> Option<u32> {
        let bucket = &self.fq_root[self.bucket_of_key(key)];
        bucket
            .binary_search_by(|&fi| self.flows[fi as usize].key.cmp(&key))
            .ok()
            .map(|i| bucket[i])
    }

    // ---- flow lists (fq_flow_add_tail, fq_flow_set_throttled, ...) ----

    fn head_mut(&mut self, band: usize, new: bool) -> &mut FlowHead {
        let pb = &mut self.band_flows[band];
        if new {
            &mut pb.new_flows
        } else {
            &mut pb.old_flows
        }
    }

    /// `fq_flow_add_tail()`: appends flow `fi` to the new or old list of `f->band`.
    fn flow_add_tail(&mut self, fi: u32, new: bool) {
        let band = self.flows[fi as usize].band as usize;
        let head = *self.head_mut(band, new);
        if head.first != NIL {
            self.flows[head.last as usize].next = fi;
        } else {
            self.head_mut(band, new).first = fi;
        }
        self.head_mut(band, new).last = fi;
        self.flows[fi as usize].next = NIL;
    }

    /// `head->first = f->next`: unlinks the first flow of a list.
    fn pop_first(&mut self, band: usize, new: bool) {
        let first = self.head_mut(band, new).first;
        let next = self.flows[first as usize].next;
        self.head_mut(band, new).first = next;
    }

    /// `fq_flow_set_throttled()`.
    fn flow_set_throttled(&mut self, fi: u32) {
        let t = self.flows[fi as usize].time_next_packet;
        self.delayed.push(Reverse((t, self.delayed_seq, fi)));
        self.delayed_seq += 1;
        self.throttled_flows += 1;
        self.stat_throttled += 1;
        self.flows[fi as usize].next = THROTTLED;
        if self.time_next_delayed_flow > t {
            self.time_next_delayed_flow = t;
        }
    }

    /// `fq_flow_set_detached()`.
    fn flow_set_detached(&mut self, fi: u32, now: u64) {
        let age = self.jiffies(now) | 1;
        let f = &mut self.flows[fi as usize];
        f.detached = true;
        f.age = age;
    }

    /// `fq_check_throttled()`: moves every due throttled flow to its band's old list.
    fn check_throttled(&mut self, now: u64) {
        let now = now.wrapping_add(self.cfg.offload_horizon_ns);
        if self.time_next_delayed_flow > now {
            return;
        }
        // Unthrottle latency EWMA (gain 1/8). 6.6 also decays on a zero sample.
        let sample = now.wrapping_sub(self.cfg.offload_horizon_ns).wrapping_sub(self.time_next_delayed_flow);
        if self.cfg.version == FqVersion::V6_6 || (sample as i64) > 0 {
            self.unthrottle_latency_ns -= self.unthrottle_latency_ns >> 3;
            self.unthrottle_latency_ns = self.unthrottle_latency_ns.wrapping_add(sample >> 3);
        }
        self.time_next_delayed_flow = u64::MAX;
        while let Some(&Reverse((t, _, fi))) = self.delayed.peek() {
            if t > now {
                self.time_next_delayed_flow = t;
                break;
            }
            self.delayed.pop();
            // fq_flow_unset_throttled()
            self.throttled_flows -= 1;
            self.flow_add_tail(fi, false);
        }
    }

    /// `qdisc_watchdog_schedule_range_ns()`: keeps a queued timer whose soft expiry lies
    /// in `[expires, expires + delta]`, else (re)starts it.
    fn watchdog_schedule_range(&mut self, expires: u64, delta: u64, now: u64) {
        if let Some((soft, hard)) = self.watchdog {
            if hard > now && soft.wrapping_sub(expires) <= delta {
                return;
            }
        }
        self.watchdog = Some((expires, expires.saturating_add(delta)));
    }

    // ---- classification (fq_classify, fq_fastpath_check, fq_gc) ----

    /// `fq_fastpath_check()` (6.7+).
    fn fastpath_check(&self, skb: &Skb, time_to_send: u64, now: u64) -> bool {
        let horizon_now = now.wrapping_add(self.cfg.offload_horizon_ns);
        if time_to_send > horizon_now {
            return false;
        }
        if self.qlen != 0 {
            // Some packets are queued: still fine if no flow is eligible and the
            // internal queue is short, unless a delayed flow is already due.
            if self.nr_flows != self.inactive_flows + self.throttled_flows {
                return false;
            }
            if self.internal_qlen >= FQ_FASTPATH_MAX_QLEN {
                return false;
            }
            if self.time_next_delayed_flow <= horizon_now && !self.cfg.fastpath_when_behind {
                return false;
            }
        }
        // A (non-TCP) socket with SO_MAX_PACING_RATE.
        if skb.sk != 0 && skb.pacing_rate != 0 {
            return false;
        }
        self.cfg.flow_max_rate == RATE_UNLIMITED
    }

    /// `fq_gc()`: frees the detached flows idle for more than 3 s that the search for
    /// `key` in `bucket` passes (the binary-search path; see the module docs).
    fn gc(&mut self, bucket: usize, key: u64, now: u64) {
        let j = self.jiffies(now);
        let gc_age = 3 * self.cfg.hz as u64;
        let cap = match self.cfg.version {
            FqVersion::V6_6 => FQ_GC_MAX,
            FqVersion::V6_7 => usize::MAX,
        };
        self.gc_scratch.clear();
        let nodes = &self.fq_root[bucket];
        let (mut lo, mut hi) = (0usize, nodes.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let fi = nodes[mid];
            let f = &self.flows[fi as usize];
            if f.key == key {
                break;
            }
            if f.detached && time_after(j, f.age.wrapping_add(gc_age)) {
                self.gc_scratch.push(fi);
                if self.gc_scratch.len() == cap {
                    break;
                }
            }
            if key < f.key {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        if self.gc_scratch.is_empty() {
            return;
        }
        let scratch = std::mem::take(&mut self.gc_scratch);
        self.fq_root[bucket].retain(|fi| !scratch.contains(fi));
        for &fi in &scratch {
            let f = &mut self.flows[fi as usize];
            f.in_use = false;
            f.queue.list.clear();
            f.queue.t_root.clear();
            self.free_flows.push(fi);
        }
        let n = scratch.len() as u32;
        self.nr_flows -= n;
        self.inactive_flows -= n;
        self.stat_gc_flows += n as u64;
        self.gc_scratch = scratch;
    }

    /// `fq_classify()`.
    fn classify(&mut self, skb: &Skb, time_to_send: u64, now: u64) -> Target {
        let v67 = self.cfg.version == FqVersion::V6_7;
        if !v67 && (skb.priority & TC_PRIO_MAX) == TC_PRIO_CONTROL {
            // 6.6: "warning: no starvation prevention..."
            return Target::Internal;
        }
        let key = self.flow_key(skb);
        if v67 && self.fastpath_check(skb, time_to_send, now) {
            self.stat_fastpath_packets += 1;
            return Target::Internal;
        }
        let bucket = self.bucket_of_key(key);
        let gc = v67
            || (self.nr_flows as u64 >= (2u64 << self.cfg.buckets_log)
                && self.inactive_flows > self.nr_flows / 2);
        if gc {
            self.gc(bucket, key, now);
        }
        let pos = match self.fq_root[bucket].binary_search_by(|&fi| self.flows[fi as usize].key.cmp(&key)) {
            Ok(i) => return Target::Flow(self.fq_root[bucket][i]),
            Err(pos) => pos,
        };
        // A new flow: zeroed, detached, credit = initial_quantum.
        let age = self.jiffies(now) | 1;
        let fi = match self.free_flows.pop() {
            Some(fi) => fi,
            None => {
                self.flows.push(FqFlow::default());
                (self.flows.len() - 1) as u32
            }
        };
        let f = &mut self.flows[fi as usize];
        f.key = key;
        f.qlen = 0;
        f.credit = self.cfg.initial_quantum as i32;
        f.band = 0;
        f.next = NIL;
        f.detached = true;
        f.age = age;
        f.time_next_packet = 0;
        f.in_use = true;
        self.fq_root[bucket].insert(pos, fi);
        self.nr_flows += 1;
        self.inactive_flows += 1;
        Target::Flow(fi)
    }

    fn drop_skb(&mut self, skb: Skb, drops: &mut Vec<u32>) -> EnqueueVerdict {
        self.stats.drops += 1;
        drops.push(skb.id);
        EnqueueVerdict::Dropped
    }

    // ---- dequeue helpers ----

    /// Takes the internal queue's head, if any (both versions serve it first).
    fn dequeue_internal(&mut self) -> Option<Skb> {
        let (_, from_tree) = self.internal.peek()?;
        let p = self.internal.erase_head(from_tree)?;
        self.internal_qlen -= 1;
        self.qlen -= 1;
        self.backlog -= p.skb.len as u64;
        Some(p.skb)
    }

    /// Removes the packet `fq_peek()` found from flow `fi` (`fq_dequeue_skb()`), with the
    /// CE marking check against the flow's `time_next_packet` reference.
    fn dequeue_flow_pkt(&mut self, fi: u32, from_tree: bool, time_next_packet: u64, now: u64) -> Option<FqPkt> {
        let mut p = self.flows[fi as usize].queue.erase_head(from_tree)?;
        self.qlen -= 1;
        self.backlog -= p.skb.len as u64;
        if (now.wrapping_sub(time_next_packet).wrapping_sub(self.cfg.ce_threshold_ns) as i64) > 0 {
            p.skb.set_ce();
            self.stat_ce_mark += 1;
        }
        Some(p)
    }

    /// The pacing update at the end of `fq_dequeue()`.
    fn pace(&mut self, fi: u32, skb: &Skb, now: u64) {
        if !self.cfg.rate_enable {
            return;
        }
        let mut plen = skb.len;
        let mut rate = self.cfg.flow_max_rate;
        if skb.edt == 0 {
            // No EDT stamp: the socket's pacing rate applies.
            if skb.sk != 0 && skb.pacing_rate != 0 {
                rate = rate.min(skb.pacing_rate);
            }
            if rate <= self.cfg.low_rate_threshold as u64 {
                self.flows[fi as usize].credit = 0;
            } else {
                plen = plen.max(self.cfg.quantum);
                if self.flows[fi as usize].credit > 0 {
                    return;
                }
            }
        }
        if rate != RATE_UNLIMITED {
            // div64_ul() unless the rate is 0 (maxrate 0): then the undivided product,
            // which the clamp below turns into 1 s.
            let mut len = plen as u64 * NSEC_PER_SEC;
            len = len.checked_div(rate).unwrap_or(len);
            // The socket rate can change later: clamp the delay to 1 second.
            if len > NSEC_PER_SEC {
                len = NSEC_PER_SEC;
                self.stat_pkts_too_long += 1;
            }
            let f = &mut self.flows[fi as usize];
            // Compensate for timer and scheduling drift.
            if f.time_next_packet != 0 {
                len -= (len / 2).min(now.wrapping_sub(f.time_next_packet));
            }
            f.time_next_packet = now.wrapping_add(len);
        }
    }

    /// `fq_dequeue()` of 6.7+: internal queue, then band WRR over new/old flow lists.
    fn dequeue_6_7(&mut self, now: u64) -> Option<Skb> {
        if self.qlen == 0 {
            return None;
        }
        if let Some(skb) = self.dequeue_internal() {
            return Some(skb);
        }
        self.check_throttled(now);
        let mut retry = 0usize;
        let mut b = self.band_nr;
        loop {
            // fq_pband_head_select()
            let pb = &self.band_flows[b];
            let head = if pb.credit <= 0 {
                None
            } else if pb.new_flows.first != NIL {
                Some(true)
            } else if pb.old_flows.first != NIL {
                Some(false)
            } else {
                None
            };
            let Some(is_new) = head else {
                let mut next_band = false;
                loop {
                    retry += 1;
                    if retry > FQ_BANDS {
                        break;
                    }
                    self.band_nr = (self.band_nr + 1) % FQ_BANDS;
                    b = self.band_nr;
                    let pb = &mut self.band_flows[b];
                    pb.credit = pb.credit.wrapping_add(pb.quantum).min(pb.quantum);
                    if pb.credit > 0 {
                        next_band = true;
                        break;
                    }
                    retry = 0;
                }
                if next_band {
                    continue;
                }
                if self.time_next_delayed_flow != u64::MAX {
                    self.watchdog_schedule_range(self.time_next_delayed_flow, self.cfg.timer_slack_ns, now);
                }
                return None;
            };
            let fi = self.head_mut(b, is_new).first;
            retry = 0;
            if self.flows[fi as usize].credit <= 0 {
                let f = &mut self.flows[fi as usize];
                f.credit = f.credit.wrapping_add(self.cfg.quantum as i32);
                self.pop_first(b, is_new);
                self.flow_add_tail(fi, false);
                continue;
            }
            let Some((p, from_tree)) = self.flows[fi as usize].queue.peek() else {
                self.pop_first(b, is_new);
                // Force a pass through old_flows to prevent starvation.
                if is_new {
                    self.flow_add_tail(fi, false);
                } else {
                    self.flow_set_detached(fi, now);
                }
                continue;
            };
            let time_next_packet = p.time_to_send.max(self.flows[fi as usize].time_next_packet);
            if now.wrapping_add(self.cfg.offload_horizon_ns) < time_next_packet {
                self.pop_first(b, is_new);
                self.flows[fi as usize].time_next_packet = time_next_packet;
                self.flow_set_throttled(fi);
                continue;
            }
            let p = self.dequeue_flow_pkt(fi, from_tree, time_next_packet, now)?;
            let f = &mut self.flows[fi as usize];
            f.qlen -= 1;
            if f.qlen == 0 {
                self.inactive_flows += 1;
            }
            self.band_pkt_count[p.band as usize] -= 1;
            let plen = p.skb.len as i32;
            f.credit = f.credit.wrapping_sub(plen);
            let pb = &mut self.band_flows[b];
            pb.credit = pb.credit.wrapping_sub(plen);
            self.pace(fi, &p.skb, now);
            return Some(p.skb);
        }
    }

    /// `fq_dequeue()` of 6.6: internal (high-priority) queue, then DRR over one
    /// new/old list pair.
    fn dequeue_6_6(&mut self, now: u64) -> Option<Skb> {
        if self.qlen == 0 {
            return None;
        }
        if let Some(skb) = self.dequeue_internal() {
            return Some(skb);
        }
        self.check_throttled(now);
        loop {
            let pb = &self.band_flows[0];
            let is_new = if pb.new_flows.first != NIL {
                true
            } else if pb.old_flows.first != NIL {
                false
            } else {
                if self.time_next_delayed_flow != u64::MAX {
                    self.watchdog_schedule_range(self.time_next_delayed_flow, self.cfg.timer_slack_ns, now);
                }
                return None;
            };
            let fi = self.head_mut(0, is_new).first;
            if self.flows[fi as usize].credit <= 0 {
                let f = &mut self.flows[fi as usize];
                f.credit = f.credit.wrapping_add(self.cfg.quantum as i32);
                self.pop_first(0, is_new);
                self.flow_add_tail(fi, false);
                continue;
            }
            let Some((p, from_tree)) = self.flows[fi as usize].queue.peek() else {
                self.pop_first(0, is_new);
                if is_new && self.band_flows[0].old_flows.first != NIL {
                    self.flow_add_tail(fi, false);
                } else {
                    self.flow_set_detached(fi, now);
                    self.inactive_flows += 1;
                }
                continue;
            };
            let time_next_packet = p.time_to_send.max(self.flows[fi as usize].time_next_packet);
            if now < time_next_packet {
                self.pop_first(0, is_new);
                self.flows[fi as usize].time_next_packet = time_next_packet;
                self.flow_set_throttled(fi);
                continue;
            }
            let p = self.dequeue_flow_pkt(fi, from_tree, time_next_packet, now)?;
            let f = &mut self.flows[fi as usize];
            f.qlen -= 1;
            f.credit = f.credit.wrapping_sub(p.skb.len as i32);
            self.pace(fi, &p.skb, now);
            return Some(p.skb);
        }
    }
}


impl Qdisc for Fq {
    fn kind(&self) -> &'static str {
        "fq"
    }

    /// `fq_dump()` as iproute2's `fq_print_opt()` prints it (the layout of seed 001).
    fn tc_options(&self) -> String {
        use super::tc_print::{rate, size, time64};
        let c = &self.cfg;
        let mut s = format!(
            "limit {}p flow_limit {}p buckets {} orphan_mask {} ",
            c.limit,
            c.flow_plimit,
            1u32 << c.buckets_log,
            c.orphan_mask
        );
        if !c.rate_enable {
            s.push_str("nopacing ");
        }
        s.push_str(&format!("quantum {} initial_quantum {} ", size(c.quantum as u64), size(c.initial_quantum as u64)));
        if c.flow_max_rate != u64::MAX {
            s.push_str(&format!("maxrate {} ", rate(c.flow_max_rate)));
        }
        if c.low_rate_threshold != 0 {
            s.push_str(&format!("low_rate_threshold {} ", rate(c.low_rate_threshold as u64)));
        }
        let refill_ns = c.flow_refill_delay * 1_000_000_000 / c.hz.max(1) as u64;
        s.push_str(&format!("refill_delay {} ", time64(refill_ns)));
        if c.ce_threshold_ns != u64::MAX && c.ce_threshold_ns < u32::MAX as u64 * 1000 {
            s.push_str(&format!("ce_threshold {} ", time64(c.ce_threshold_ns)));
        }
        s.push_str(&format!("timer_slack {} horizon {} ", time64(c.timer_slack_ns), time64(c.horizon_ns)));
        s.push_str(if c.horizon_drop { "horizon_drop" } else { "horizon_cap" });
        s
    }

    /// `fq_dump_stats()` as iproute2's `fq_print_xstats()` prints it.
    fn tc_xstats(&self) -> String {
        use super::tc_print::time64;
        let mut s = format!(
            "  flows {} (inactive {} throttled {})",
            self.nr_flows, self.inactive_flows, self.throttled_flows
        );
        let next_delay = self.time_next_delayed_flow.wrapping_add(self.cfg.timer_slack_ns).wrapping_sub(self.last_now) as i64;
        if self.throttled_flows > 0 && next_delay > 0 {
            s.push_str(&format!(" next_packet_delay {}", time64(next_delay as u64)));
        }
        s.push_str(&format!("\n  gc {} highprio {} throttled {}", self.stat_gc_flows, self.stat_internal_packets, self.stat_throttled));
        if self.unthrottle_latency_ns > 0 {
            s.push_str(&format!(" latency {}", time64(self.unthrottle_latency_ns)));
        }
        if self.stat_ce_mark > 0 {
            s.push_str(&format!(" ce_mark {}", self.stat_ce_mark));
        }
        if self.stat_flows_plimit > 0 {
            s.push_str(&format!(" flows_plimit {}", self.stat_flows_plimit));
        }
        if self.stat_pkts_too_long > 0 || self.stat_allocation_errors > 0 {
            s.push_str(&format!("\n  pkts_too_long {} alloc_errors {}", self.stat_pkts_too_long, self.stat_allocation_errors));
        }
        s
    }

    /// `fq_enqueue()`.
    fn enqueue(&mut self, mut skb: Skb, now: u64, drops: &mut Vec<u32>) -> EnqueueVerdict {
        self.last_now = now;
        let v67 = self.cfg.version == FqVersion::V6_7;
        let band = self.cfg.prio2band[(skb.priority & TC_PRIO_MAX) as usize];
        if v67 {
            if self.band_pkt_count[band as usize] >= self.cfg.limit {
                self.stat_band_drops[band as usize] += 1;
                return self.drop_skb(skb, drops);
            }
        } else if self.qlen >= self.cfg.limit {
            return self.drop_skb(skb, drops);
        }
        let time_to_send = if skb.edt == 0 {
            now
        } else {
            // fq_packet_beyond_horizon(): signed comparison, as the kernel's.
            if (skb.edt as i64) > (now.wrapping_add(self.cfg.horizon_ns) as i64) {
                if self.cfg.horizon_drop {
                    self.stat_horizon_drops += 1;
                    return self.drop_skb(skb, drops);
                }
                self.stat_horizon_caps += 1;
                skb.edt = now.wrapping_add(self.cfg.horizon_ns);
            }
            skb.edt
        };
        let band = if v67 { band } else { 0 };
        let target = self.classify(&skb, time_to_send, now);
        let pkt = FqPkt { skb, time_to_send, band };
        match target {
            Target::Internal => {
                if !v67 {
                    self.stat_internal_packets += 1;
                }
                self.internal_qlen += 1;
                self.internal.add(pkt);
            }
            Target::Flow(fi) => {
                if self.flows[fi as usize].qlen >= self.cfg.flow_plimit {
                    self.stat_flows_plimit += 1;
                    return self.drop_skb(skb, drops);
                }
                if self.flows[fi as usize].detached {
                    // Linked by the flow's previous band (the kernel sets f->band after).
                    self.flow_add_tail(fi, true);
                    let j = self.jiffies(now);
                    let f = &mut self.flows[fi as usize];
                    if time_after(j, f.age.wrapping_add(self.cfg.flow_refill_delay)) {
                        // max_t(u32, ...): a negative credit compares as huge and stays.
                        f.credit = (f.credit as u32).max(self.cfg.quantum) as i32;
                    }
                    if !v67 {
                        self.inactive_flows -= 1;
                    }
                }
                let f = &mut self.flows[fi as usize];
                if v67 {
                    f.band = band;
                    self.band_pkt_count[band as usize] += 1;
                    if f.qlen == 0 {
                        self.inactive_flows -= 1;
                    }
                }
                f.qlen += 1;
                // Appending overwrites f->age: the flow is no longer detached.
                f.detached = false;
                f.queue.add(pkt);
            }
        }
        self.backlog += skb.len as u64;
        self.qlen += 1;
        EnqueueVerdict::Success
    }

    /// `fq_dequeue()`.
    fn dequeue(&mut self, now: u64, _drops: &mut Vec<u32>) -> Option<Skb> {
        self.last_now = now;
        if matches!(self.watchdog, Some((_, hard)) if hard <= now) {
            self.watchdog = None; // the hrtimer has fired
        }
        match self.cfg.version {
            FqVersion::V6_7 => self.dequeue_6_7(now),
            FqVersion::V6_6 => self.dequeue_6_6(now),
        }
    }

    fn qlen(&self) -> u32 {
        self.qlen
    }

    fn backlog(&self) -> u64 {
        self.backlog
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    /// `fq_dump_stats()` under `struct tc_fq_qd_stats`'s field names.
    /// `time_next_delayed_flow` is, as in the kernel, `time_next_delayed_flow +
    /// timer_slack - now` (tc's `next_packet_delay`), taken at the last enqueue or
    /// dequeue and shown as 0 when negative (no throttled flow); the absolute time is
    /// [`Fq::time_next_delayed_flow`].
    fn xstats(&self) -> Vec<(&'static str, u64)> {
        let next_delay = self
            .time_next_delayed_flow
            .wrapping_add(self.cfg.timer_slack_ns)
            .wrapping_sub(self.last_now) as i64;
        let mut v = vec![
            ("flows", self.nr_flows as u64),
            ("inactive_flows", self.inactive_flows as u64),
            ("throttled_flows", self.throttled_flows as u64),
            ("time_next_delayed_flow", next_delay.max(0) as u64),
            ("gc_flows", self.stat_gc_flows),
            ("highprio_packets", self.stat_internal_packets),
            ("throttled", self.stat_throttled),
            ("unthrottle_latency_ns", self.unthrottle_latency_ns.min(u32::MAX as u64)),
            ("ce_mark", self.stat_ce_mark),
            ("flows_plimit", self.stat_flows_plimit),
            ("pkts_too_long", self.stat_pkts_too_long),
            ("allocation_errors", self.stat_allocation_errors),
            ("horizon_drops", self.stat_horizon_drops),
            ("horizon_caps", self.stat_horizon_caps),
        ];
        if self.cfg.version == FqVersion::V6_7 {
            v.extend([
                ("fastpath_packets", self.stat_fastpath_packets),
                ("band0_pkts", self.band_pkt_count[0] as u64),
                ("band1_pkts", self.band_pkt_count[1] as u64),
                ("band2_pkts", self.band_pkt_count[2] as u64),
                ("band0_drops", self.stat_band_drops[0]),
                ("band1_drops", self.stat_band_drops[1]),
                ("band2_drops", self.stat_band_drops[2]),
            ]);
        }
        v
    }

    /// fq cannot use `TCQ_F_CAN_BYPASS`; its fast path (6.7+) is inside `enqueue`.
    fn can_bypass(&self) -> bool {
        false
    }

    /// The hard expiry of the armed watchdog (see the module docs).
    fn next_wakeup(&self) -> Option<u64> {
        self.watchdog.map(|(_, hard)| hard)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tc_ilog2_rounds_up() {
        assert_eq!([1, 2, 3, 1000, 1024, 1025, 262_144].map(tc_ilog2), [0, 1, 2, 10, 10, 11, 18]);
    }

    #[test]
    fn jiffies_conversions() {
        // msecs_to_jiffies(40) at HZ 250, 1000, 100, 300 (ceil(40 * 300 / 1000) = 12).
        assert_eq!([250, 1000, 100, 300].map(|hz| usecs_to_jiffies(40_000, hz)), [10, 40, 4, 12]);
        assert_eq!(usecs_to_jiffies(40_001, 250), 11);
        assert_eq!(usecs_to_jiffies(0, 250), 0);
        assert!(time_after(12, 11) && !time_after(11, 11) && !time_after(10, 11));
        assert!(time_after(1, u64::MAX)); // wraps like the kernel's
    }

    #[test]
    fn hash_ptr_stays_in_range() {
        for bits in [1, 10, 18] {
            for key in [1u64, 2, 3, 2046, u64::MAX] {
                assert!(hash_ptr(key, bits) < 1 << bits);
            }
        }
    }

    fn p(id: u32, t: u64) -> FqPkt {
        FqPkt { skb: Skb { id, ..Skb::default() }, time_to_send: t, band: 0 }
    }

    /// flow_queue_add(): in-order stamps append to the list; an earlier stamp goes to
    /// the tree after any equal stamp; fq_peek() prefers the list head on a tie.
    #[test]
    fn flow_queue_orders_by_time_to_send() {
        let mut q = FlowQueue::default();
        for (id, t) in [(0, 50), (1, 50), (2, 30), (3, 40), (4, 30), (5, 60), (6, 40)] {
            q.add(p(id, t));
        }
        let mut out = Vec::new();
        while let Some((_, from_tree)) = q.peek() {
            out.push(q.erase_head(from_tree).unwrap().skb.id);
        }
        assert_eq!(out, [2, 4, 3, 6, 0, 1, 5]);
        let mut q = FlowQueue::default();
        q.add(p(0, 20));
        q.add(p(1, 10));
        q.add(p(2, 10));
        assert_eq!(q.peek().map(|(x, t)| (x.skb.id, t)), Some((1, true)));
    }
}
