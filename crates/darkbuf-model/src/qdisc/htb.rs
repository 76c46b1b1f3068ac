//! htb: mirrors net/sched/sch_htb.c (the feed-tree HTB of 6.x), with the parameter
//! handling of iproute2's tc/q_htb.c (`htb_parse_opt()`, `htb_parse_class_opt()`).
//!
//! Classes form a tree (`[[qdisc.class]]` tables, in `tc class add` order). Each class
//! has two token buckets in ns of transmission time: `tokens` at `rate` (depth
//! `buffer`) and `ctokens` at `ceil` (depth `cbuffer`). Its mode (`htb_class_mode()`):
//! CANT_SEND when `ctokens < 0`, else CAN_SEND when `tokens >= 0`, else MAY_BORROW.
//! Leaves with packets are *active*: a CAN_SEND class sits in the row of its level
//! (`q->hlevel[level].hprio[prio].row`), a MAY_BORROW class in its parent's feed
//! (`clprio[prio].feed`), so a leaf is reachable from the row of the first ancestor (or
//! itself) that can send (`htb_activate_prios()` / `htb_deactivate_prios()`).
//! `htb_dequeue()` serves the direct queue first, then levels 0..7 (a leaf's own rate
//! before any borrowing), priorities 0..7 within a level, and within a row/feed a
//! deficit round robin in classid order (`htb_lookup_leaf()`, `htb_dequeue_tree()`,
//! `deficit[level]` and `quantum`). Each sent packet is charged to the leaf and all its
//! ancestors (`htb_charge_class()`): `ctokens` everywhere, `tokens` only at the level it
//! was served from and above (the classes below record a borrow). Mode changes in the
//! future are events in a per-level wait queue ordered by time (`htb_do_events()`);
//! when nothing can be sent the watchdog fires at the earliest one (at most 5 s ahead).
//!
//! The kernel's red-black trees are sorted vectors here (classid order for rows and
//! feeds, time then insertion order for the wait queues), with the same `ptr` /
//! `last_ptr_id` cursor semantics, so the order of service is the kernel's. All
//! vectors are allocated at configuration time with their final capacity.
//!
//! Classification (`htb_classify()` without filters): `skb->priority` equal to the
//! qdisc handle 1:0 goes to the direct queue; naming a leaf class (`1:10` = 0x10010)
//! goes to that class; anything else to the `default` class if it is a leaf, otherwise
//! to the direct queue, which is **unshaped** and served before every class (the
//! `default 0` trap; `direct_packets_stat` counts its packets).
//!
//! Named options (module parameters and version differences):
//! - `hysteresis` (default false, the `htb_hysteresis` module parameter): mode
//!   thresholds at `-cbuffer` / `-buffer` instead of 0;
//! - `overlimits_mode`: `"transition"` (default; since "sch_htb: redefine htb qdisc
//!   overlimits", net-next May 2019, about 5.2: the qdisc's `overlimits` is the sum of
//!   the classes', each counting its transitions to CANT_SEND) or `"dequeue"` (before:
//!   the qdisc counts every dequeue that found nothing to send; classes still count
//!   transitions, as since 3c75f6ee139d "add per class overlimits counter", 2018).
//!
//! tc defaults mirrored: `r2q 10`, `default 0`, `direct_qlen = txqueuelen`; per class
//! `ceil = rate`, `burst = rate / HZ + mtu`, `cburst = ceil / HZ + mtu` with tc's
//! `get_hz()` = 1e9 (read from /proc/net/psched on high-resolution-timer kernels) and
//! `mtu 1600`, so about 1600 bytes; bursts are sent as psched ticks
//! (`tc_calc_xmittime()`, 64 ns each), as tc does. `quantum = rate / r2q` clamped to
//! 1000..200000 with the kernel's warning (see [`Htb::warnings`]) unless given;
//! `prio` above 7 becomes 7. Leaf qdisc: pfifo with `limit = txqueuelen`
//! (`qdisc_create_dflt()`), or `qdisc = "<kind>"` with that kind's defaults.
//!
//! Drops: every packet a leaf qdisc drops (at enqueue, or an AQM leaf at dequeue,
//! reported by the kernel through `qdisc_tree_reduce_backlog()`) and every direct-queue
//! overflow is counted in `stats().drops`; per class, `drops` counts failed enqueues.
//!
//! Deviations: no filters (classification by `skb->priority` only); a `parent` must be
//! a class defined earlier (the kernel silently makes a class with an unknown parent a
//! root class); a class with children cannot name a leaf `qdisc`; no offload, no rate
//! estimators, no `giants` (never counted by current kernels).

use super::tbf::{
    build_child_with, psched_ns2ticks, psched_ticks2ns, tc_calc_xmittime, tc_rate_bytes, which_alias,
    LinkLayer, PschedRatecfg, NSEC_PER_SEC,
};
use super::{DevInfo, EnqueueVerdict, Qdisc, QdiscStats};
use crate::params::{ParamError, ParamValue, Params};
use crate::Skb;
use std::collections::{BTreeSet, VecDeque};
use std::sync::{Mutex, OnceLock};

/// `TC_HTB_MAXDEPTH`: levels 0 (leaves) to 7 (root classes with children).
pub const TC_HTB_MAXDEPTH: usize = 8;
/// `TC_HTB_NUMPRIO`.
pub const TC_HTB_NUMPRIO: usize = 8;
/// The qdisc's handle, `1:` (classes are `1:minor`).
pub const HTB_HANDLE: u32 = 0x0001_0000;
/// tc's `get_hz()` on kernels with high-resolution timers: the fourth field of
/// /proc/net/psched, NSEC_PER_SEC / hrtimer_resolution.
pub const TC_PSCHED_HZ: u64 = 1_000_000_000;
/// tc's default `mtu` for the default bursts ("eth packet len").
pub const HTB_DEFAULT_MTU: u32 = 1600;
/// `cl->mbuffer`: token accounting is capped at one minute of idle time.
const HTB_MBUFFER_NS: i64 = 60 * NSEC_PER_SEC as i64;

/// `enum htb_cmode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum HtbMode {
    /// `HTB_CANT_SEND`: over ceil, cannot send nor borrow.
    CantSend,
    /// `HTB_MAY_BORROW`: over rate, may borrow from an ancestor.
    MayBorrow,
    /// `HTB_CAN_SEND`: within rate.
    CanSend,
}

/// How the qdisc-level `overlimits` counter moves (version option).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OverlimitsMode {
    /// 5.2+: each class transition to CANT_SEND.
    Transition,
    /// Before 5.2: each dequeue that returned nothing.
    Dequeue,
}

/// An rb-tree of classes sorted by classid (`htb_add_to_id_tree()`), as a sorted
/// vector of (classid, class index).
#[derive(Debug, Default)]
struct IdTree {
    items: Vec<(u32, usize)>,
}

type Node = (u32, usize);

impl IdTree {
    fn with_capacity(n: usize) -> Self {
        IdTree {
            items: Vec::with_capacity(n),
        }
    }
    fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    fn insert(&mut self, node: Node) {
        let pos = self.items.partition_point(|&(id, _)| id < node.0);
        if self.items.get(pos).map(|n| n.0) != Some(node.0) {
            self.items.insert(pos, node);
        }
    }
    /// `htb_safe_rb_erase()`: tolerates a node that is not in the tree.
    fn remove(&mut self, id: u32) {
        if let Ok(pos) = self.items.binary_search_by_key(&id, |&(i, _)| i) {
            self.items.remove(pos);
        }
    }
    /// Leftmost node.
    fn first(&self) -> Option<Node> {
        self.items.first().copied()
    }
    /// `rb_next()`: the node after `id`.
    fn next(&self, id: u32) -> Option<Node> {
        let pos = self.items.partition_point(|&(i, _)| i <= id);
        self.items.get(pos).copied()
    }
    /// `htb_id_find_next_upper()`: the node with the smallest classid >= `id`.
    fn find_next_upper(&self, id: u32) -> Option<Node> {
        let pos = self.items.partition_point(|&(i, _)| i < id);
        self.items.get(pos).copied()
    }
}

/// `struct htb_prio`: a row (per level) or a feed (per inner class), with its DRR cursor.
#[derive(Debug, Default)]
struct HtbPrio {
    tree: IdTree,
    /// `ptr`: the node served next.
    ptr: Option<Node>,
    /// `last_ptr_id`: where `ptr` was when its node left the feed.
    last_ptr_id: u32,
}

/// `struct htb_level`.
#[derive(Debug)]
struct HtbLevel {
    /// `wait_pq`: (pq_key, class) sorted by time, equal times in insertion order.
    wait_pq: Vec<(i64, usize)>,
    hprio: [HtbPrio; TC_HTB_NUMPRIO],
}

/// `struct htb_class`.
struct HtbClass {
    classid: u32,
    parent: Option<usize>,
    /// 0 for leaves; inner classes 7 (root) downwards.
    level: usize,
    children: u32,
    rate: PschedRatecfg,
    ceil: PschedRatecfg,
    buffer: i64,
    cbuffer: i64,
    mbuffer: i64,
    prio: u32,
    quantum: i32,
    tokens: i64,
    ctokens: i64,
    t_c: i64,
    /// Leaf: DRR deficit per level it is served from.
    deficit: [i32; TC_HTB_MAXDEPTH],
    /// Leaf: its qdisc.
    leaf: Option<Box<dyn Qdisc>>,
    /// Inner: feeds per prio.
    clprio: [HtbPrio; TC_HTB_NUMPRIO],
    pq_key: i64,
    prio_activity: u32,
    cmode: HtbMode,
    // struct tc_htb_xstats and class qstats.
    lends: u64,
    borrows: u64,
    giants: u64,
    overlimits: u64,
    drops: u64,
    /// `cl->bstats`: bytes and packets (GSO segments) sent through the class.
    bytes: u64,
    packets: u64,
    /// Interned xstats names ("class 1:10 lends", ...).
    names: [&'static str; 4],
}

/// A snapshot of one class, as `tc -s class show` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HtbClassStats {
    pub classid: u32,
    pub parent: Option<u32>,
    pub level: u8,
    pub mode: HtbMode,
    pub rate_bytes_ps: u64,
    pub ceil_bytes_ps: u64,
    /// Bucket depths in ns.
    pub buffer: i64,
    pub cbuffer: i64,
    pub prio: u32,
    pub quantum: i32,
    /// Current tokens in ns (tc prints them in 64 ns ticks).
    pub tokens: i64,
    pub ctokens: i64,
    pub lends: u64,
    pub borrows: u64,
    pub giants: u64,
    pub overlimits: u64,
    pub drops: u64,
    /// `Sent` bytes and packets (GSO segments) through the class.
    pub bytes: u64,
    pub packets: u64,
    /// Leaf qdisc qlen / backlog (0 for inner classes).
    pub qlen: u32,
    pub backlog: u64,
}

/// Where `htb_classify()` sends a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Direct,
    Leaf(usize),
}

/// A row or feed, named so the DRR walk can hold a stack of them (`stk[]`).
#[derive(Clone, Copy, Debug)]
enum PrioRef {
    Row(usize, usize),
    Feed(usize, usize),
}

/// The htb qdisc (`struct htb_sched`).
pub struct Htb {
    classes: Vec<HtbClass>,
    /// (classid, index) sorted: `htb_find()`.
    by_id: Vec<(u32, usize)>,
    defcls: u32,
    rate2quantum: u32,
    direct_qlen: u32,
    hysteresis: bool,
    overlimits_mode: OverlimitsMode,
    direct_queue: VecDeque<Skb>,
    direct_pkts: u64,
    /// `q->now`: the cached dequeue time.
    now: i64,
    near_ev_cache: [i64; TC_HTB_MAXDEPTH],
    row_mask: [u32; TC_HTB_MAXDEPTH],
    hlevel: Vec<HtbLevel>,
    qlen: u32,
    backlog: u64,
    stats: QdiscStats,
    watchdog: Option<u64>,
    warnings: Vec<String>,
}

const HTB_PARAMS: &[&str] = &[
    "default",
    "r2q",
    "direct_qlen",
    "class",
    "hysteresis",
    "overlimits_mode",
];
const HTB_CLASS_PARAMS: &[&str] = &[
    "classid",
    "parent",
    "rate",
    "ceil",
    "burst",
    "buffer",
    "maxburst",
    "cburst",
    "cbuffer",
    "cmaxburst",
    "mtu",
    "mpu",
    "overhead",
    "linklayer",
    "prio",
    "quantum",
    "qdisc",
    "qdisc_params",
];

fn invalid(key: &str, message: impl Into<String>, expected: impl Into<String>) -> ParamError {
    ParamError::Invalid {
        key: key.into(),
        message: message.into(),
        expected: expected.into(),
    }
}

/// tc's way of printing a handle: `1:10` (hex).
pub fn format_classid(classid: u32) -> String {
    format!("{:x}:{:x}", classid >> 16, classid & 0xffff)
}

/// A process-wide interner for xstats names, so building many qdiscs with the same
/// class ids does not keep allocating `&'static str`s.
fn intern(s: String) -> &'static str {
    static NAMES: OnceLock<Mutex<BTreeSet<&'static str>>> = OnceLock::new();
    let mut set = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(&n) = set.get(s.as_str()) {
        return n;
    }
    let leaked: &'static str = Box::leak(s.into_boxed_str());
    set.insert(leaked);
    leaked
}

/// A class handle as tc's `get_tc_classid()` reads it: `root`, `MAJOR:MINOR` in hex
/// (an empty major means this qdisc's), or a raw hex handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Handle {
    Root,
    Id(u32),
}

fn parse_handle(s: &str) -> Option<Handle> {
    let s = s.trim();
    if s == "root" {
        return Some(Handle::Root);
    }
    let hex = |t: &str| -> Option<u32> {
        let t = t
            .strip_prefix("0x")
            .or_else(|| t.strip_prefix("0X"))
            .unwrap_or(t);
        if t.is_empty() {
            None
        } else {
            u32::from_str_radix(t, 16).ok()
        }
    };
    match s.split_once(':') {
        Some((maj, min)) => {
            let maj = if maj.is_empty() {
                HTB_HANDLE >> 16
            } else {
                hex(maj)?
            };
            let min = if min.is_empty() { 0 } else { hex(min)? };
            (maj < 1 << 16 && min < 1 << 16).then_some(Handle::Id(maj << 16 | min))
        }
        None => hex(s).map(Handle::Id),
    }
}

/// tc's `get_u32(..., 16)` for `default`: hex digits, optional 0x; an integer value in
/// the scenario is taken as the number it is (write 0x10 for tc's "10").
fn take_defcls(params: &mut Params) -> Result<u32, ParamError> {
    let expected = "the default class's minor id in hex as tc takes it, e.g. \"10\" (or an integer such as 0x10)";
    let value = params
        .iter()
        .find(|(k, _)| k.as_str() == "default")
        .map(|(_, v)| v.clone());
    match value {
        None => Ok(0),
        Some(ParamValue::Int(_)) => params.take_u32("default", 0, 0, u32::MAX),
        Some(ParamValue::Str(s)) => {
            params.take_str("default")?;
            let t = s.trim();
            let t = t
                .strip_prefix("0x")
                .or_else(|| t.strip_prefix("0X"))
                .unwrap_or(t);
            u32::from_str_radix(t, 16)
                .map_err(|_| invalid("default", format!("\"{s}\" is not a hex number"), expected))
        }
        Some(other) => Err(invalid(
            "default",
            format!("{other} is not valid"),
            expected,
        )),
    }
}

/// One `tc class add ... htb` line after tc's parsing (`struct tc_htb_opt` + 64-bit
/// rates) and the model's extras.
struct ClassOpt {
    classid: u32,
    parent: Option<u32>,
    rate64: u64,
    ceil64: u64,
    /// Bucket depths in psched ticks (`hopt->buffer`, `hopt->cbuffer`).
    buffer: u32,
    cbuffer: u32,
    mpu: u16,
    overhead: u16,
    linklayer: LinkLayer,
    prio: u32,
    quantum: u32,
    qdisc: Option<String>,
    /// The leaf qdisc's own parameters (`qdisc_params = { limit = 300, ecn = true }`).
    qdisc_params: Option<Params>,
}

/// tc's refusal of a rate that was given but is too low: below 8 bit/s it is 0
/// bytes/s, which tc refuses as if no rate were given ("HTB: rate must be specified");
/// and with the default burst (`default_burst`: none given), `rate / PSCHED_HZ + mtu`
/// must take less than 274 s at the rate, or tc says "burst out of range" about a
/// burst never written.
fn check_given_rate(bits: u64, rate64: u64, default_burst: bool, mtu: u32) -> Result<(), ParamError> {
    let min = if default_burst { min_rate_for_default_burst(mtu as u64) } else { 1 };
    let too_low = rate64 == 0 || (default_burst && rate64 < min);
    if too_low {
        let why = if rate64 == 0 {
            "below 1 byte/s, and tc keeps rates in bytes per second".to_string()
        } else {
            format!("the default burst (rate / {TC_PSCHED_HZ} + mtu = {} bytes) would take over 274 s to send", rate64 / TC_PSCHED_HZ + mtu as u64)
        };
        let with = if default_burst { format!(" with mtu = {mtu} and no burst") } else { String::new() };
        return Err(invalid(
            "rate",
            format!("{bits}bit is too low: {why}"),
            format!("a rate of at least {}bit{with}, e.g. \"10mbit\"", min * 8),
        ));
    }
    Ok(())
}

/// `htb_parse_class_opt()`.
fn parse_class(mut p: Params) -> Result<ClassOpt, ParamError> {
    let classid_s = p.take_str("classid")?;
    let parent_s = p.take_str("parent")?;
    let rate_bits = p.take_rate_bps("rate", None)?;
    let rate64 = tc_rate_bytes(rate_bits.unwrap_or(0));
    let ceil_given = tc_rate_bytes(p.take_rate_bps("ceil", None)?.unwrap_or(0));
    let burst_key = which_alias(&p, &["burst", "buffer", "maxburst"])?.unwrap_or("burst");
    let mut buffer64 = p.take_size(burst_key, 0, 0, u64::MAX)?;
    let cburst_key = which_alias(&p, &["cburst", "cbuffer", "cmaxburst"])?.unwrap_or("cburst");
    let mut cbuffer = p.take_size(cburst_key, 0, 0, u32::MAX as u64)? as u32;
    let mtu = p.take_u32("mtu", HTB_DEFAULT_MTU, 0, u32::MAX)?;
    let mpu = p.take_u32("mpu", 0, 0, u16::MAX as u32)? as u16;
    let overhead = p.take_u32("overhead", 0, 0, u16::MAX as u32)? as u16;
    let linklayer =
        LinkLayer::from_tc(p.take_choice("linklayer", "ethernet", &["ethernet", "atm", "adsl"])?);
    let prio = p.take_u32("prio", 0, 0, u32::MAX)?;
    let quantum = p.take_size("quantum", 0, 0, i32::MAX as u64)? as u32;
    let qdisc = p.take_str("qdisc")?;
    let qdisc_params = p.take_table("qdisc_params")?;
    p.finish(HTB_CLASS_PARAMS)?;

    let classid = match classid_s.as_deref().map(parse_handle) {
        None => {
            return Err(invalid(
                "classid",
                "every class needs a classid",
                "a handle such as \"1:10\"",
            ))
        }
        Some(Some(Handle::Id(id))) if id >> 16 == HTB_HANDLE >> 16 && id & 0xffff != 0 => id,
        Some(_) => {
            return Err(invalid(
                "classid",
                format!(
                    "\"{}\" is not a class of this qdisc",
                    classid_s.unwrap_or_default()
                ),
                "1:MINOR with MINOR in hex, 1..ffff (the qdisc's handle is 1:)",
            ))
        }
    };
    let parent = match parent_s.as_deref().map(parse_handle) {
        None | Some(Some(Handle::Root)) => None,
        // "1:" / "1:0" is the qdisc itself: a root class.
        Some(Some(Handle::Id(HTB_HANDLE))) => None,
        Some(Some(Handle::Id(id))) if id >> 16 == HTB_HANDLE >> 16 => Some(id),
        Some(_) => {
            return Err(invalid(
                "parent",
                format!(
                    "\"{}\" is not this qdisc or one of its classes",
                    parent_s.unwrap_or_default()
                ),
                "\"root\", \"1:\" or a class handle such as \"1:1\"",
            ))
        }
    };
    if let Some(bits) = rate_bits {
        check_given_rate(bits, rate64, buffer64 == 0, mtu)?;
    }
    if rate64 == 0 {
        return Err(invalid(
            "rate",
            "\"rate\" is required",
            "a rate of at least 8bit, e.g. \"10mbit\"",
        ));
    }
    // "if ceil params are missing, use the same as rate".
    let ceil64 = if ceil_given == 0 { rate64 } else { ceil_given };
    // "compute minimal allowed burst from rate; mtu is added here to make sure that
    // buffer is larger than mtu and to have some safeguard space".
    if buffer64 == 0 {
        buffer64 = rate64 / TC_PSCHED_HZ + mtu as u64;
    }
    if cbuffer == 0 {
        cbuffer = (ceil64 / TC_PSCHED_HZ + mtu as u64) as u32;
    }
    let buffer = tc_calc_xmittime(rate64, buffer64);
    if buffer == u32::MAX {
        return Err(invalid(
            burst_key,
            "htb: burst out of range",
            "a burst that takes less than 274 s at the rate",
        ));
    }
    let cbuffer = tc_calc_xmittime(ceil64, cbuffer as u64);
    Ok(ClassOpt {
        classid,
        parent,
        rate64,
        ceil64,
        buffer,
        cbuffer,
        mpu,
        overhead,
        linklayer,
        prio,
        quantum,
        qdisc,
        qdisc_params,
    })
}

/// The lowest rate (bytes/s) whose default burst (`rate / PSCHED_HZ + mtu`) takes
/// less than `tc_calc_xmittime()`'s 32 bits to send: a few bytes/s for mtu 1600.
fn min_rate_for_default_burst(mtu: u64) -> u64 {
    let fits = |r: u64| tc_calc_xmittime(r, r / TC_PSCHED_HZ + mtu) != u32::MAX;
    let (mut lo, mut hi) = (1u64, 1u64 << 40);
    if fits(lo) {
        return lo;
    }
    // fits(hi) holds for any u32 mtu; the time only falls as the rate grows.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

impl Htb {
    /// Mirrors tc's `htb_parse_opt()` + `htb_init()`, then `htb_change_class()` for each
    /// `[[qdisc.class]]` table in order (errors are keyed `class[i].key`).
    pub fn from_params(mut params: Params, dev: &DevInfo) -> Result<Self, ParamError> {
        let defcls = take_defcls(&mut params)?;
        let r2q = params.take_u32("r2q", 10, 0, u32::MAX)?;
        let direct_qlen = params.take_u32("direct_qlen", dev.tx_queue_len, 0, u32::MAX)?;
        let tables = params.take_tables("class")?;
        let hysteresis = params.take_bool("hysteresis", false)?;
        let overlimits_mode = match params.take_choice(
            "overlimits_mode",
            "transition",
            &["transition", "dequeue"],
        )? {
            "dequeue" => OverlimitsMode::Dequeue,
            _ => OverlimitsMode::Transition,
        };
        params.finish(HTB_PARAMS)?;

        let mut q = Htb {
            classes: Vec::with_capacity(tables.len()),
            by_id: Vec::with_capacity(tables.len()),
            defcls,
            // `if ((q->rate2quantum = gopt->rate2quantum) < 1) q->rate2quantum = 1;` (an int).
            rate2quantum: if r2q == 0 || r2q > i32::MAX as u32 {
                1
            } else {
                r2q
            },
            direct_qlen,
            hysteresis,
            overlimits_mode,
            direct_queue: VecDeque::with_capacity(direct_qlen.min(4096) as usize),
            direct_pkts: 0,
            now: 0,
            near_ev_cache: [0; TC_HTB_MAXDEPTH],
            row_mask: [0; TC_HTB_MAXDEPTH],
            hlevel: Vec::with_capacity(TC_HTB_MAXDEPTH),
            qlen: 0,
            backlog: 0,
            stats: QdiscStats::default(),
            watchdog: None,
            warnings: Vec::new(),
        };
        let mut leaf_kind_given = Vec::with_capacity(tables.len());
        for (i, t) in tables.into_iter().enumerate() {
            let opt = parse_class(t).map_err(|e| e.nested("class", i))?;
            leaf_kind_given.push(opt.qdisc.is_some() || opt.qdisc_params.is_some());
            q.add_class(opt, dev).map_err(|e| e.nested("class", i))?;
        }
        for (i, c) in q.classes.iter().enumerate() {
            if c.level > 0 && leaf_kind_given[i] {
                return Err(invalid(
                    "qdisc",
                    format!(
                        "class {} has children, so it has no leaf qdisc",
                        format_classid(c.classid)
                    ),
                    "a leaf qdisc only on classes without children",
                )
                .nested("class", i));
            }
        }
        q.allocate_trees();
        Ok(q)
    }

    /// The new-class branch of `htb_change_class()`.
    fn add_class(&mut self, opt: ClassOpt, dev: &DevInfo) -> Result<(), ParamError> {
        if self.find(opt.classid).is_some() {
            return Err(invalid(
                "classid",
                format!("class {} already exists", format_classid(opt.classid)),
                "a classid not used by an earlier class",
            ));
        }
        let parent = match opt.parent {
            None => None,
            Some(pid) => match self.find(pid) {
                Some(p) => Some(p),
                None => {
                    return Err(invalid(
                        "parent",
                        format!(
                            "class {} is not defined by an earlier [[qdisc.class]]",
                            format_classid(pid)
                        ),
                        "\"root\" or the classid of an earlier class",
                    ))
                }
            },
        };
        // "check maximal depth".
        if let Some(p) = parent {
            if let Some(gp) = self.classes[p].parent {
                if self.classes[gp].level < 2 {
                    return Err(invalid(
                        "parent",
                        "tree is too deep",
                        "at most 8 levels of classes",
                    ));
                }
            }
        }
        let kind = opt.qdisc.as_deref().unwrap_or("pfifo");
        let leaf: Box<dyn Qdisc> = build_child_with(kind, opt.qdisc_params.clone().map(|p| (p, "qdisc_params")), "qdisc", dev)?;
        if let Some(p) = parent {
            if self.classes[p].level == 0 {
                // "turn parent into inner node": its leaf qdisc (empty here) goes away.
                let gp_level = self.classes[p]
                    .parent
                    .map_or(TC_HTB_MAXDEPTH, |gp| self.classes[gp].level);
                let pc = &mut self.classes[p];
                pc.leaf = None;
                pc.level = gp_level - 1;
            }
            self.classes[p].children += 1;
        }
        let rate = PschedRatecfg::precompute(opt.rate64, opt.overhead, opt.mpu, opt.linklayer);
        let ceil = PschedRatecfg::precompute(opt.ceil64, opt.overhead, opt.mpu, opt.linklayer);
        // The class is a leaf when created: quantum and prio are set.
        let mut quantum =
            (rate.rate_bytes_ps / self.rate2quantum as u64).min(i32::MAX as u64) as i32;
        if opt.quantum == 0 && quantum < 1000 {
            quantum = 1000;
            self.warnings.push(format!(
                "quantum of class {:X} is small. Consider r2q change.",
                opt.classid
            ));
        }
        if opt.quantum == 0 && quantum > 200_000 {
            quantum = 200_000;
            self.warnings.push(format!(
                "quantum of class {:X} is big. Consider r2q change.",
                opt.classid
            ));
        }
        if opt.quantum != 0 {
            quantum = opt.quantum as i32;
        }
        let name = format_classid(opt.classid);
        let buffer = psched_ticks2ns(opt.buffer);
        let cbuffer = psched_ticks2ns(opt.cbuffer);
        let idx = self.classes.len();
        self.classes.push(HtbClass {
            classid: opt.classid,
            parent,
            level: 0,
            children: 0,
            rate,
            ceil,
            buffer,
            cbuffer,
            mbuffer: HTB_MBUFFER_NS,
            prio: opt.prio.min(TC_HTB_NUMPRIO as u32 - 1),
            quantum,
            tokens: buffer,
            ctokens: cbuffer,
            t_c: 0,
            deficit: [0; TC_HTB_MAXDEPTH],
            leaf: Some(leaf),
            clprio: Default::default(),
            pq_key: 0,
            prio_activity: 0,
            cmode: HtbMode::CanSend,
            lends: 0,
            borrows: 0,
            giants: 0,
            overlimits: 0,
            drops: 0,
            bytes: 0,
            packets: 0,
            names: [
                intern(format!("class {name} lends")),
                intern(format!("class {name} borrows")),
                intern(format!("class {name} overlimits")),
                intern(format!("class {name} dropped")),
            ],
        });
        let pos = self.by_id.partition_point(|&(id, _)| id < opt.classid);
        self.by_id.insert(pos, (opt.classid, idx));
        Ok(())
    }

    /// Gives every row, feed and wait queue its final capacity, so that activating and
    /// deactivating classes never allocates.
    fn allocate_trees(&mut self) {
        let mut per_level = [0usize; TC_HTB_MAXDEPTH];
        for c in &self.classes {
            per_level[c.level] += 1;
        }
        for &n in &per_level {
            self.hlevel.push(HtbLevel {
                wait_pq: Vec::with_capacity(n),
                hprio: std::array::from_fn(|_| HtbPrio {
                    tree: IdTree::with_capacity(n),
                    ptr: None,
                    last_ptr_id: 0,
                }),
            });
        }
        for c in &mut self.classes {
            if c.level > 0 {
                let n = c.children as usize;
                c.clprio = std::array::from_fn(|_| HtbPrio {
                    tree: IdTree::with_capacity(n),
                    ptr: None,
                    last_ptr_id: 0,
                });
            }
        }
    }

    /// Warnings the kernel would have returned through extack / the log.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// `q->direct_pkts` (`direct_packets_stat`).
    pub fn direct_packets_stat(&self) -> u64 {
        self.direct_pkts
    }

    /// Packets waiting in the direct queue.
    pub fn direct_qlen(&self) -> u32 {
        self.direct_queue.len() as u32
    }

    /// Every class in classid order (`tc -s class show`).
    pub fn class_stats(&self) -> Vec<HtbClassStats> {
        self.by_id
            .iter()
            .map(|&(_, i)| {
                let c = &self.classes[i];
                HtbClassStats {
                    classid: c.classid,
                    parent: c.parent.map(|p| self.classes[p].classid),
                    level: c.level as u8,
                    mode: c.cmode,
                    rate_bytes_ps: c.rate.rate_bytes_ps,
                    ceil_bytes_ps: c.ceil.rate_bytes_ps,
                    buffer: c.buffer,
                    cbuffer: c.cbuffer,
                    prio: c.prio,
                    quantum: c.quantum,
                    tokens: c.tokens,
                    ctokens: c.ctokens,
                    lends: c.lends,
                    borrows: c.borrows,
                    giants: c.giants,
                    overlimits: c.overlimits,
                    drops: c.drops,
                    bytes: c.bytes,
                    packets: c.packets,
                    qlen: c.leaf.as_ref().map_or(0, |l| l.qlen()),
                    backlog: c.leaf.as_ref().map_or(0, |l| l.backlog()),
                }
            })
            .collect()
    }

    /// One class by handle (e.g. 0x10010 for 1:10).
    pub fn class(&self, classid: u32) -> Option<HtbClassStats> {
        self.class_stats()
            .into_iter()
            .find(|c| c.classid == classid)
    }

    /// `htb_find()`.
    fn find(&self, classid: u32) -> Option<usize> {
        self.by_id
            .binary_search_by_key(&classid, |&(id, _)| id)
            .ok()
            .map(|p| self.by_id[p].1)
    }

    /// `htb_classify()` without filters.
    fn classify(&self, priority: u32) -> Target {
        if priority == HTB_HANDLE {
            return Target::Direct;
        }
        if let Some(c) = self.find(priority) {
            if self.classes[c].level == 0 {
                return Target::Leaf(c);
            }
        }
        match self.find((HTB_HANDLE & 0xffff_0000) | (self.defcls & 0xffff)) {
            Some(c) if self.classes[c].level == 0 => Target::Leaf(c),
            _ => Target::Direct,
        }
    }

    fn hp(&mut self, r: PrioRef) -> &mut HtbPrio {
        match r {
            PrioRef::Row(level, prio) => &mut self.hlevel[level].hprio[prio],
            PrioRef::Feed(cl, prio) => &mut self.classes[cl].clprio[prio],
        }
    }

    /// `htb_add_to_wait_tree()`.
    fn add_to_wait_tree(&mut self, cl: usize, delay: i64) {
        let now = self.now;
        let c = &mut self.classes[cl];
        c.pq_key = now.saturating_add(delay);
        if c.pq_key == now {
            c.pq_key += 1;
        }
        let (key, level) = (c.pq_key, c.level);
        if self.near_ev_cache[level] > key {
            self.near_ev_cache[level] = key;
        }
        let wq = &mut self.hlevel[level].wait_pq;
        let pos = wq.partition_point(|&(k, _)| k <= key);
        wq.insert(pos, (key, cl));
    }

    /// `htb_safe_rb_erase(&cl->pq_node, wait_pq)`.
    fn remove_from_wait_tree(&mut self, cl: usize) {
        let wq = &mut self.hlevel[self.classes[cl].level].wait_pq;
        if let Some(pos) = wq.iter().position(|&(_, c)| c == cl) {
            wq.remove(pos);
        }
    }

    /// `htb_add_class_to_row()`.
    fn add_class_to_row(&mut self, cl: usize, mut mask: u32) {
        let (level, id) = (self.classes[cl].level, self.classes[cl].classid);
        self.row_mask[level] |= mask;
        while mask != 0 {
            let prio = mask.trailing_zeros() as usize;
            mask &= !(1 << prio);
            self.hlevel[level].hprio[prio].tree.insert((id, cl));
        }
    }

    /// `htb_remove_class_from_row()`.
    fn remove_class_from_row(&mut self, cl: usize, mut mask: u32) {
        let (level, id) = (self.classes[cl].level, self.classes[cl].classid);
        let mut m = 0;
        while mask != 0 {
            let prio = mask.trailing_zeros() as usize;
            mask &= !(1 << prio);
            let hprio = &mut self.hlevel[level].hprio[prio];
            if hprio.ptr.map(|n| n.1) == Some(cl) {
                hprio.ptr = hprio.tree.next(id);
            }
            hprio.tree.remove(id);
            if hprio.tree.is_empty() {
                m |= 1 << prio;
            }
        }
        self.row_mask[level] &= !m;
    }

    /// `htb_activate_prios()`.
    fn activate_prios(&mut self, mut cl: usize) {
        let mut p = self.classes[cl].parent;
        let mut mask = self.classes[cl].prio_activity;
        while self.classes[cl].cmode == HtbMode::MayBorrow && mask != 0 {
            let Some(pi) = p else { break };
            let mut m = mask;
            let id = self.classes[cl].classid;
            while m != 0 {
                let prio = m.trailing_zeros() as usize;
                m &= !(1 << prio);
                let feed = &mut self.classes[pi].clprio[prio];
                if !feed.tree.is_empty() {
                    // "parent already has its feed in use so that reset bit in mask as
                    // parent is already ok".
                    mask &= !(1 << prio);
                }
                feed.tree.insert((id, cl));
            }
            self.classes[pi].prio_activity |= mask;
            cl = pi;
            p = self.classes[cl].parent;
        }
        if self.classes[cl].cmode == HtbMode::CanSend && mask != 0 {
            self.add_class_to_row(cl, mask);
        }
    }

    /// `htb_deactivate_prios()`.
    fn deactivate_prios(&mut self, mut cl: usize) {
        let mut p = self.classes[cl].parent;
        let mut mask = self.classes[cl].prio_activity;
        while self.classes[cl].cmode == HtbMode::MayBorrow && mask != 0 {
            let Some(pi) = p else { break };
            let mut m = mask;
            mask = 0;
            let id = self.classes[cl].classid;
            while m != 0 {
                let prio = m.trailing_zeros() as usize;
                m &= !(1 << prio);
                let feed = &mut self.classes[pi].clprio[prio];
                if feed.ptr.map(|n| n.1) == Some(cl) {
                    // "we are removing child which is pointed to from parent feed -
                    // forget the pointer but remember classid".
                    feed.last_ptr_id = id;
                    feed.ptr = None;
                }
                feed.tree.remove(id);
                if feed.tree.is_empty() {
                    mask |= 1 << prio;
                }
            }
            self.classes[pi].prio_activity &= !mask;
            cl = pi;
            p = self.classes[cl].parent;
        }
        if self.classes[cl].cmode == HtbMode::CanSend && mask != 0 {
            self.remove_class_from_row(cl, mask);
        }
    }

    /// `htb_lowater()`.
    fn lowater(&self, cl: usize) -> i64 {
        let c = &self.classes[cl];
        if self.hysteresis && c.cmode != HtbMode::CantSend {
            -c.cbuffer
        } else {
            0
        }
    }

    /// `htb_hiwater()`.
    fn hiwater(&self, cl: usize) -> i64 {
        let c = &self.classes[cl];
        if self.hysteresis && c.cmode == HtbMode::CanSend {
            -c.buffer
        } else {
            0
        }
    }

    /// `htb_class_mode()`: the mode at `t_c + diff`; for a mode other than CAN_SEND,
    /// `diff` becomes the time until the class changes mode.
    fn class_mode(&self, cl: usize, diff: &mut i64) -> HtbMode {
        let c = &self.classes[cl];
        let toks = c.ctokens.saturating_add(*diff);
        if toks < self.lowater(cl) {
            *diff = toks.saturating_neg();
            return HtbMode::CantSend;
        }
        let toks = c.tokens.saturating_add(*diff);
        if toks >= self.hiwater(cl) {
            return HtbMode::CanSend;
        }
        *diff = toks.saturating_neg();
        HtbMode::MayBorrow
    }

    /// `htb_change_class_mode()`.
    fn change_class_mode(&mut self, cl: usize, diff: &mut i64) {
        let new_mode = self.class_mode(cl, diff);
        let old = self.classes[cl].cmode;
        if new_mode == old {
            return;
        }
        if new_mode == HtbMode::CantSend {
            self.classes[cl].overlimits += 1;
            if self.overlimits_mode == OverlimitsMode::Transition {
                self.stats.overlimits += 1;
            }
        }
        if self.classes[cl].prio_activity != 0 {
            if old != HtbMode::CantSend {
                self.deactivate_prios(cl);
            }
            self.classes[cl].cmode = new_mode;
            if new_mode != HtbMode::CantSend {
                self.activate_prios(cl);
            }
        } else {
            self.classes[cl].cmode = new_mode;
        }
    }

    /// `htb_activate()`.
    fn activate(&mut self, cl: usize) {
        if self.classes[cl].prio_activity == 0 {
            self.classes[cl].prio_activity = 1 << self.classes[cl].prio;
            self.activate_prios(cl);
        }
    }

    /// `htb_deactivate()` (idempotent, as since the 2025 fix).
    fn deactivate(&mut self, cl: usize) {
        if self.classes[cl].prio_activity == 0 {
            return;
        }
        self.deactivate_prios(cl);
        self.classes[cl].prio_activity = 0;
    }

    /// `htb_accnt_tokens()` and `htb_accnt_ctokens()`.
    fn accnt(toks: i64, bucket: i64, cost: u64, mbuffer: i64, diff: i64) -> i64 {
        let mut toks = diff.saturating_add(toks);
        if toks > bucket {
            toks = bucket;
        }
        toks = toks.saturating_sub(cost.min(i64::MAX as u64) as i64);
        if toks <= -mbuffer {
            toks = 1 - mbuffer;
        }
        toks
    }

    /// `htb_charge_class()`: charges `bytes` (`segs` GSO segments) sent by leaf `cl`,
    /// served at `level`; every class on the way counts them in its `bstats` (the kernel
    /// updates the leaf's in `htb_dequeue_tree()`, the inner ones' here).
    fn charge_class(&mut self, mut cl: Option<usize>, level: usize, bytes: u32, segs: u16) {
        while let Some(i) = cl {
            let now = self.now;
            let c = &mut self.classes[i];
            let mut diff = now.saturating_sub(c.t_c).min(c.mbuffer);
            if c.level >= level {
                if c.level == level {
                    c.lends += 1;
                }
                c.tokens = Self::accnt(c.tokens, c.buffer, c.rate.l2t_ns(bytes), c.mbuffer, diff);
            } else {
                c.borrows += 1;
                // "we moved t_c; update tokens".
                c.tokens = c.tokens.saturating_add(diff);
            }
            c.ctokens = Self::accnt(c.ctokens, c.cbuffer, c.ceil.l2t_ns(bytes), c.mbuffer, diff);
            c.t_c = now;
            // bstats_update(): a GSO skb counts its segments.
            c.bytes += bytes as u64;
            c.packets += segs.max(1) as u64;

            let old_mode = c.cmode;
            diff = 0;
            self.change_class_mode(i, &mut diff);
            if old_mode != self.classes[i].cmode {
                if old_mode != HtbMode::CanSend {
                    self.remove_from_wait_tree(i);
                }
                if self.classes[i].cmode != HtbMode::CanSend {
                    self.add_to_wait_tree(i, diff);
                }
            }
            cl = self.classes[i].parent;
        }
    }

    /// `htb_do_events()`: applies the mode changes due at `q->now` on `level`; returns
    /// the time of the next one, 0 if none. (The kernel stops after 2 jiffies of work;
    /// the model spends no time, so every due event is applied.)
    fn do_events(&mut self, level: usize) -> i64 {
        loop {
            let Some(&(key, cl)) = self.hlevel[level].wait_pq.first() else {
                return 0;
            };
            if key > self.now {
                return key;
            }
            self.hlevel[level].wait_pq.remove(0);
            let c = &self.classes[cl];
            let mut diff = self.now.saturating_sub(c.t_c).min(c.mbuffer);
            self.change_class_mode(cl, &mut diff);
            if self.classes[cl].cmode != HtbMode::CanSend {
                self.add_to_wait_tree(cl, diff);
            }
        }
    }

    /// `htb_lookup_leaf()`: the next leaf in DRR order under a row.
    fn lookup_leaf(&mut self, level: usize, prio: usize) -> Option<usize> {
        if self.hlevel[level].hprio[prio].tree.is_empty() {
            return None;
        }
        let mut stk = [PrioRef::Row(level, prio); TC_HTB_MAXDEPTH];
        let mut sp = 0usize;
        for _ in 0..65535 {
            let hp = self.hp(stk[sp]);
            if hp.ptr.is_none() && hp.last_ptr_id != 0 {
                // "ptr was invalidated but id is valid - try to recover the original or
                // next ptr".
                hp.ptr = hp.tree.find_next_upper(hp.last_ptr_id);
            }
            hp.last_ptr_id = 0;
            match hp.ptr {
                None => {
                    // "we are at right end; rewind & go up".
                    hp.ptr = hp.tree.first();
                    hp.ptr?;
                    if sp > 0 {
                        sp -= 1;
                        let up = self.hp(stk[sp]);
                        let (id, _) = up.ptr?;
                        up.ptr = up.tree.next(id);
                    }
                }
                Some((_, cl)) => {
                    if self.classes[cl].level == 0 {
                        return Some(cl);
                    }
                    sp += 1;
                    if sp >= TC_HTB_MAXDEPTH {
                        return None;
                    }
                    stk[sp] = PrioRef::Feed(cl, prio);
                }
            }
        }
        None
    }

    /// `htb_next_rb_node()` on the cursor a leaf served at `level` was found through.
    fn advance_ptr(&mut self, cl: usize, level: usize, prio: usize) {
        let hp = match (level, self.classes[cl].parent) {
            (0, _) | (_, None) => &mut self.hlevel[0].hprio[prio],
            (_, Some(p)) => &mut self.classes[p].clprio[prio],
        };
        hp.ptr = hp.ptr.and_then(|(id, _)| hp.tree.next(id));
    }

    /// The leaf qdisc's dequeue with qlen/backlog/drops bookkeeping, and
    /// `htb_qlen_notify()` when the leaf emptied itself by dropping.
    fn leaf_dequeue(&mut self, cl: usize, drops: &mut Vec<u32>) -> Option<Skb> {
        let now = self.now.max(0) as u64;
        let leaf = self.classes[cl].leaf.as_mut()?;
        let (q0, b0, d0) = (leaf.qlen(), leaf.backlog(), drops.len());
        let skb = leaf.dequeue(now, drops);
        let (q1, b1) = (leaf.qlen(), leaf.backlog());
        self.adjust(q0, b0, q1, b1);
        let dropped = drops.len() - d0;
        self.stats.drops += dropped as u64;
        if dropped > 0 && q1 == 0 {
            self.deactivate(cl);
        }
        skb
    }

    fn adjust(&mut self, q0: u32, b0: u64, q1: u32, b1: u64) {
        self.qlen = (self.qlen as i64 + q1 as i64 - q0 as i64).max(0) as u32;
        self.backlog = (self.backlog as i128 + b1 as i128 - b0 as i128).max(0) as u64;
    }

    fn leaf_qlen(&self, cl: usize) -> u32 {
        self.classes[cl].leaf.as_ref().map_or(0, |l| l.qlen())
    }

    /// `htb_dequeue_tree()`.
    fn dequeue_tree(&mut self, prio: usize, level: usize, drops: &mut Vec<u32>) -> Option<Skb> {
        let mut start = self.lookup_leaf(level, prio);
        let mut cl = start;
        // The kernel's loop ends when the DRR walk comes back to `start`; the bound
        // only guards the model against a cursor cycle that never does.
        let mut budget = 4 * self.classes.len() + 16;
        let (c, skb) = loop {
            budget = budget.checked_sub(1)?;
            let c = cl?;
            if self.leaf_qlen(c) == 0 {
                // "class can be empty ... simply deactivate and skip such class".
                self.deactivate(c);
                if self.row_mask[level] & (1 << prio) == 0 {
                    return None;
                }
                let next = self.lookup_leaf(level, prio);
                if cl == start {
                    start = next;
                }
                cl = next;
                continue;
            }
            if let Some(skb) = self.leaf_dequeue(c, drops) {
                break (c, skb);
            }
            // qdisc_warn_nonwc(): the leaf holds packets it will not send yet.
            self.advance_ptr(c, level, prio);
            cl = self.lookup_leaf(level, prio);
            if cl == start {
                return None;
            }
        };
        let quantum = self.classes[c].quantum;
        let d = &mut self.classes[c].deficit[level];
        *d = d.wrapping_sub(skb.len as i32);
        if *d < 0 {
            *d = d.wrapping_add(quantum);
            self.advance_ptr(c, level, prio);
        }
        // "this used to be after charge_class but this constelation gives us slightly
        // better performance".
        if self.leaf_qlen(c) == 0 {
            self.deactivate(c);
        }
        self.charge_class(Some(c), level, skb.len, skb.gso_segs);
        Some(skb)
    }
}

impl Qdisc for Htb {
    fn kind(&self) -> &'static str {
        "htb"
    }

    /// `htb_dump()` as iproute2's `htb_print_opt()` prints it for the qdisc (its classes
    /// are `tc -s class show`); htb has no qdisc xstats.
    fn tc_options(&self) -> String {
        // C's `%#llx` prints 0 without the 0x.
        let default = if self.defcls == 0 { "0".to_string() } else { format!("{:#x}", self.defcls) };
        format!("r2q {} default {default} direct_packets_stat {} direct_qlen {}", self.rate2quantum, self.direct_pkts, self.direct_qlen)
    }

    /// The leaf classes' qdiscs, in the order the classes were made (tc numbers a
    /// default leaf's handle in that order).
    fn tc_leaves(&self) -> Vec<super::TcLeaf<'_>> {
        self.classes
            .iter()
            .filter_map(|c| c.leaf.as_deref().map(|q| super::TcLeaf { classid: c.classid, qdisc: q, bytes: c.bytes, packets: c.packets }))
            .collect()
    }

    /// `htb_enqueue()`.
    fn enqueue(&mut self, skb: Skb, now: u64, drops: &mut Vec<u32>) -> EnqueueVerdict {
        match self.classify(skb.priority) {
            Target::Direct => {
                if (self.direct_queue.len() as u64) < self.direct_qlen as u64 {
                    self.qlen += 1;
                    self.backlog += skb.len as u64;
                    self.direct_queue.push_back(skb);
                    self.direct_pkts += 1;
                    EnqueueVerdict::Success
                } else {
                    self.stats.drops += 1;
                    drops.push(skb.id);
                    EnqueueVerdict::Dropped
                }
            }
            Target::Leaf(cl) => {
                let Some(leaf) = self.classes[cl].leaf.as_mut() else {
                    self.stats.drops += 1;
                    drops.push(skb.id);
                    return EnqueueVerdict::Dropped;
                };
                let (q0, b0, d0) = (leaf.qlen(), leaf.backlog(), drops.len());
                let verdict = leaf.enqueue(skb, now, drops);
                let (q1, b1) = (leaf.qlen(), leaf.backlog());
                self.adjust(q0, b0, q1, b1);
                self.stats.drops += (drops.len() - d0) as u64;
                // net_xmit_drop_count(): NET_XMIT_CN and a drop the leaf reported as
                // success (netem's loss, NET_XMIT_SUCCESS | __NET_XMIT_BYPASS) count.
                if verdict != EnqueueVerdict::Success || drops[d0..].contains(&skb.id) {
                    self.classes[cl].drops += 1;
                }
                // htb_activate() on success; a leaf that kept packets after a CN is
                // (already) active too.
                if q1 > 0 {
                    self.activate(cl);
                }
                verdict
            }
        }
    }

    /// `htb_dequeue()`.
    fn dequeue(&mut self, now: u64, drops: &mut Vec<u32>) -> Option<Skb> {
        // "try to dequeue direct packets as high prio (!) to minimize cpu work".
        if let Some(skb) = self.direct_queue.pop_front() {
            self.qlen -= 1;
            self.backlog -= skb.len as u64;
            self.watchdog = None;
            return Some(skb);
        }
        if self.qlen == 0 {
            self.watchdog = None;
            return None;
        }
        self.now = now.min(i64::MAX as u64) as i64;
        let mut next_event = self.now.saturating_add(5 * NSEC_PER_SEC as i64);
        for level in 0..TC_HTB_MAXDEPTH {
            // "common case optimization - skip event handler quickly".
            let mut event = self.near_ev_cache[level];
            if self.now >= event {
                event = self.do_events(level);
                if event == 0 {
                    event = self.now.saturating_add(NSEC_PER_SEC as i64);
                }
                self.near_ev_cache[level] = event;
            }
            if next_event > event {
                next_event = event;
            }
            let mut m = self.row_mask[level];
            while m != 0 {
                let prio = m.trailing_zeros() as usize;
                m &= !(1 << prio);
                if let Some(skb) = self.dequeue_tree(prio, level, drops) {
                    // qlen and backlog already follow the leaf (leaf_dequeue()).
                    self.watchdog = None;
                    return Some(skb);
                }
            }
        }
        if self.overlimits_mode == OverlimitsMode::Dequeue {
            self.stats.overlimits += 1;
        }
        // qdisc_watchdog_schedule_ns(), or schedule_work() (an immediate rerun) when the
        // next event is not in the future.
        self.watchdog = Some(next_event.max(self.now) as u64);
        None
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

    /// `direct_packets_stat`, then the per-class xstats summed (`lends`, `borrows`,
    /// `giants`), then each class's by name: `class 1:10 lends`, `... borrows`,
    /// `... overlimits`, `... dropped`; then the leaf qdiscs' own, as `tc -s qdisc show`
    /// dumps the leaves beside the root ([`xstat::with_children`]).
    fn xstats(&self) -> Vec<(&'static str, u64)> {
        let mut v = Vec::with_capacity(4 + 4 * self.classes.len());
        v.push(("direct_packets_stat", self.direct_pkts));
        v.push(("lends", self.classes.iter().map(|c| c.lends).sum()));
        v.push(("borrows", self.classes.iter().map(|c| c.borrows).sum()));
        v.push(("giants", self.classes.iter().map(|c| c.giants).sum()));
        for &(_, i) in &self.by_id {
            let c = &self.classes[i];
            v.push((c.names[0], c.lends));
            v.push((c.names[1], c.borrows));
            v.push((c.names[2], c.overlimits));
            v.push((c.names[3], c.drops));
        }
        let leaves = self.classes.iter().filter_map(|c| c.leaf.as_deref());
        super::xstat::with_children(v, leaves)
    }

    /// The leaf qdiscs' timers (a pie leaf's `adapt_timer`).
    fn run_timers(&mut self, now: u64) {
        for leaf in self.classes.iter_mut().filter_map(|c| c.leaf.as_mut()) {
            leaf.run_timers(now);
        }
    }

    fn has_stack_ops(&self) -> bool {
        self.classes.iter().filter_map(|c| c.leaf.as_ref()).any(|l| l.has_stack_ops())
    }

    fn has_netem(&self) -> bool {
        self.classes.iter().filter_map(|c| c.leaf.as_ref()).any(|l| l.has_netem())
    }

    /// The ceil bucket of the leaf `htb_classify()` picks and of each class above it
    /// (`htb_class_mode()` lets no class past its `ctokens`, borrowed or not), then the
    /// leaf qdisc's own; the direct queue is unshaped.
    fn shaping(&self, priority: u32) -> super::Shaping {
        use super::{PacketCost, TokenBucket};
        let Target::Leaf(leaf) = self.classify(priority) else { return super::Shaping::default() };
        let mut s = super::Shaping::default();
        let mut cl = Some(leaf);
        while let Some(c) = cl {
            let k = &self.classes[c];
            s.buckets.push(TokenBucket { cost: PacketCost::Psched(k.ceil), depth_ns: k.cbuffer.max(0) as u64, overdraw: true });
            cl = k.parent;
        }
        match self.classes[leaf].leaf.as_deref() {
            Some(q) => s.then(q.shaping(priority)),
            None => s,
        }
    }

    fn take_stack_ops(&mut self, ops: &mut Vec<super::StackOp>) {
        for leaf in self.classes.iter_mut().filter_map(|c| c.leaf.as_mut()) {
            leaf.take_stack_ops(ops);
        }
    }

    /// The watchdog armed by the last dequeue that found nothing to send, or the
    /// earliest watchdog of a non-work-conserving leaf qdisc holding packets.
    fn next_wakeup(&self) -> Option<u64> {
        if self.qlen == 0 {
            return None;
        }
        let leaves = self
            .classes
            .iter()
            .filter_map(|c| c.leaf.as_ref())
            .filter(|l| l.qlen() > 0)
            .filter_map(|l| l.next_wakeup());
        self.watchdog.into_iter().chain(leaves).min()
    }
}

/// The tokens of a class in psched ticks, as `tc -s class show` prints them.
pub fn tokens_in_ticks(ns: i64) -> i32 {
    psched_ns2ticks(ns).clamp(i32::MIN as i64, i32::MAX as i64) as i32
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_parse_like_tc() {
        assert_eq!(parse_handle("1:10"), Some(Handle::Id(0x10010)));
        assert_eq!(parse_handle(":10"), Some(Handle::Id(0x10010)));
        assert_eq!(parse_handle("1:"), Some(Handle::Id(0x10000)));
        assert_eq!(parse_handle("root"), Some(Handle::Root));
        assert_eq!(parse_handle("10010"), Some(Handle::Id(0x10010)));
        assert_eq!(parse_handle("1:10000"), None);
        assert_eq!(parse_handle("x:1"), None);
    }

    #[test]
    fn id_tree_cursor_moves_in_classid_order() {
        let mut t = IdTree::with_capacity(4);
        t.insert((0x10020, 1));
        t.insert((0x10010, 0));
        t.insert((0x10030, 2));
        assert_eq!(t.first(), Some((0x10010, 0)));
        assert_eq!(t.next(0x10010), Some((0x10020, 1)));
        assert_eq!(t.next(0x10030), None);
        assert_eq!(t.find_next_upper(0x10011), Some((0x10020, 1)));
        t.remove(0x10020);
        assert_eq!(t.next(0x10010), Some((0x10030, 2)));
        assert_eq!(t.next(0x10020), Some((0x10030, 2)));
    }
}
