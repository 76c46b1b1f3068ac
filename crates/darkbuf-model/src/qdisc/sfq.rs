//! sfq: mirrors net/sched/sch_sfq.c (the 3.3+ design, with the 2024-2025 changes).
//!
//! Stochastic Fairness Queueing: packets are hashed into `divisor` buckets; each
//! active bucket owns a slot (a FIFO) taken from `maxflows` slots. Active slots form a
//! ring served by deficit round robin with `quantum` credit per round. When the qdisc
//! holds more than `limit` packets, `sfq_drop()` drops from the longest slot, found in
//! O(1) through the depth lists `dep[]` (slots linked by queue length) and `cur_depth`.
//!
//! Kernel behaviours kept on purpose:
//! - a new flow is linked after `tail` and becomes the tail, so it waits behind the
//!   flows already active (`sfq_enqueue()`);
//! - free slots and the longest-slot victim are taken from the head of the `dep[]`
//!   lists, which are LIFO, so ties resolve exactly as in the kernel;
//! - the perturbation rehash walks slots in index order, and its drops are not added
//!   to this qdisc's `drops` (the kernel reports them only to parents through
//!   `qdisc_tree_reduce_backlog()`); they are still pushed to the caller's drop list
//!   and counted in [`Sfq::rehash_drops`].
//!
//! Not modelled: RED mode (`redflowlimit`, `min`, `max`, `probability`, `ecn`,
//! `harddrop` are rejected as unknown parameters), tc filters, and classification by
//! `skb->priority` as a `major:minor` handle (priorities here are 0..15, whose major
//! is 0 and never equals the qdisc handle, so the kernel would not use it either).
//!
//! Allot accounting (`allot_mode`):
//! - `"bytes"` (default): since "net_sched: sch_sfq: handle bigger packets" (6.13,
//!   backported to stable), `allot` is an `int` counted in bytes.
//! - `"scaled"`: before that, `allot` was a `short` counted in 8-byte units
//!   (`SFQ_ALLOT_SIZE(x)` = ceil(x / 8)), refilled with `scaled_quantum` =
//!   `SFQ_ALLOT_SIZE(quantum)`; rounding each packet up to 8 bytes makes small
//!   packets cost more.

use super::skb_list::{SkbList, SkbSlab};
use super::{ArrivalDrop, DevInfo, EnqueueVerdict, Qdisc, QdiscStats};
use crate::params::{ParamError, Params};
use crate::skb::flow_hash;
use crate::Skb;

/// `SFQ_MAX_DEPTH`: max packets per flow.
pub const SFQ_MAX_DEPTH: u32 = 127;
/// `SFQ_DEFAULT_FLOWS`.
pub const SFQ_DEFAULT_FLOWS: u32 = 128;
/// `SFQ_MAX_FLOWS` = 0x10000 - SFQ_MAX_DEPTH - 1: slot indices below this are slots,
/// the SFQ_MAX_DEPTH + 1 values above are the `dep[]` list heads.
pub const SFQ_MAX_FLOWS: u32 = 0x10000 - SFQ_MAX_DEPTH - 1;
/// `SFQ_EMPTY_SLOT`: a hash bucket without a slot.
const SFQ_EMPTY_SLOT: u16 = 0xffff;
/// `SFQ_DEFAULT_HASH_DIVISOR`.
pub const SFQ_DEFAULT_HASH_DIVISOR: u32 = 1024;
/// Largest divisor `sfq_change()` accepts.
const SFQ_MAX_DIVISOR: u32 = 65536;
/// `SFQ_ALLOT_SHIFT` (pre-6.13): allot counted in 1 << 3 = 8-byte units.
const SFQ_ALLOT_SHIFT: u32 = 3;

/// `SFQ_ALLOT_SIZE(x)` = `DIV_ROUND_UP(x, 1 << SFQ_ALLOT_SHIFT)`.
fn sfq_allot_size(x: u32) -> u32 {
    ((x as u64 + (1 << SFQ_ALLOT_SHIFT) - 1) >> SFQ_ALLOT_SHIFT) as u32
}

/// `sfq_index`: a slot number, or (>= SFQ_MAX_FLOWS) a `dep[]` head.
type SfqIndex = u16;

/// Every value of an [`SfqIndex`]: the slots, then the `dep[]` heads.
const SFQ_INDEX_SPACE: usize = 1 << 16;
const _: () = assert!(SFQ_MAX_FLOWS as usize + SFQ_MAX_DEPTH as usize + 1 == SFQ_INDEX_SPACE);

/// How `slot->allot` is counted; see the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllotMode {
    /// 6.13+: `int` bytes.
    Bytes,
    /// Before 6.13: `short`, 8-byte units.
    Scaled,
}

/// `struct sfq_head`.
#[derive(Clone, Copy, Debug, Default)]
struct SfqHead {
    next: SfqIndex,
    prev: SfqIndex,
}

/// `struct sfq_slot`; its skb list is linked through the qdisc's [`SkbSlab`].
#[derive(Clone, Copy, Debug, Default)]
struct SfqSlot {
    skbs: SkbList,
    /// Number of skbs; moved only by `sfq_inc()` / `sfq_dec()`, as in the kernel.
    qlen: u16,
    /// Next slot in the round-robin ring.
    next: SfqIndex,
    /// Index in `ht[]`.
    hash: u32,
    /// DRR credit.
    allot: i32,
    backlog: u64,
}

pub struct Sfq {
    /// Total packets allowed.
    limit: u32,
    /// Hash buckets (power of two).
    divisor: u32,
    headdrop: bool,
    /// Max packets per slot.
    maxdepth: u32,
    /// Number of slots.
    maxflows: u32,
    /// Bytes per round (`q->quantum`).
    quantum: u32,
    allot_mode: AllotMode,
    /// Hash key (`q->perturbation`).
    perturbation: u32,
    /// `perturb_period` in ns (0 = off) and the next timer expiry.
    perturb_period_ns: u64,
    perturb_next_ns: u64,
    perturb_count: u32,
    /// Depth of the longest slot.
    cur_depth: u32,
    /// Hash table: bucket -> slot or SFQ_EMPTY_SLOT.
    ht: Vec<SfqIndex>,
    slots: Vec<SfqSlot>,
    /// The nodes every slot's skb list is linked through.
    skbs: SkbSlab,
    /// Every `sfq_head` by its `sfq_index`: slot `x`'s anchor in the `dep[qlen]` list
    /// at `x` (`slots[x].dep`), and the head of `dep[d]` (the slots holding `d` packets;
    /// `dep[0]` is the free list) at `SFQ_MAX_FLOWS + d`. One array over the whole
    /// index space is `sfq_dep_head()` without its branch: linking a slot, which
    /// `sfq_inc()` and `sfq_dec()` do twice per packet, is plain loads and stores, and
    /// a `u16` index needs no bounds check. 256 KB, written once at setup; a run
    /// touches only the entries of the slots in use and of the `dep[]` heads.
    heads: Box<[SfqHead; SFQ_INDEX_SPACE]>,
    /// Current slot in the round (`q->tail`); `tail.next` is served next.
    tail: Option<SfqIndex>,
    qlen: u32,
    backlog: u64,
    stats: QdiscStats,
    rehash_drops: u64,
    /// Scratch list for `sfq_rehash()`, kept to avoid allocating.
    rehash_list: Vec<Skb>,
}

/// The validated configuration `sfq_change()` commits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SfqConfig {
    pub limit: u32,
    pub divisor: u32,
    pub headdrop: bool,
    pub maxdepth: u32,
    pub maxflows: u32,
    pub quantum: u32,
    pub perturb_period_s: u32,
    pub allot_mode: AllotMode,
}

const SFQ_PARAMS: &[&str] = &[
    "limit",
    "quantum",
    "perturb",
    "divisor",
    "flows",
    "depth",
    "headdrop",
    "allot_mode",
];

impl Sfq {
    /// Mirrors `sfq_init()` + `sfq_change()`. As with tc's `tc_sfq_qopt`, a zero
    /// `limit`, `quantum`, `flows`, `divisor` or `depth` keeps the default (127, the
    /// device's MTU, 128, 1024, 127). Clamps, in the kernel's order:
    /// `maxflows = min(flows, SFQ_MAX_FLOWS)`, `maxflows = min(maxflows, divisor)`,
    /// `maxdepth = min(depth, 127)`, and only when `limit` is given:
    /// `limit = min(limit, maxdepth * maxflows)`, `maxflows = min(maxflows, limit)`.
    /// Rejected: a divisor that is not a power of two or exceeds 65536, a final limit of
    /// 1 (2025 kernels), `perturb` above `INT_MAX / HZ` seconds, a quantum above
    /// `INT_MAX` (bytes mode) or whose 8-byte units exceed `SHRT_MAX` (scaled mode).
    pub fn from_params(mut params: Params, dev: &DevInfo) -> Result<Self, ParamError> {
        let invalid = |key: &str, message: String, expected: &str| ParamError::Invalid {
            key: key.into(),
            message,
            expected: expected.into(),
        };
        let ctl_limit = params.take_u32("limit", 0, 0, u32::MAX)?;
        let ctl_quantum = params.take_size("quantum", 0, 0, u32::MAX as u64)? as u32;
        let hz = dev.hz.max(1);
        let max_perturb = (i32::MAX as u32 / hz) as u64;
        let perturb = params.take_u64("perturb", 0, 0, max_perturb)? as u32;
        let ctl_divisor = params.take_u32("divisor", 0, 0, u32::MAX)?;
        let ctl_flows = params.take_u32("flows", 0, 0, u32::MAX)?;
        let ctl_depth = params.take_u32("depth", 0, 0, u32::MAX)?;
        let headdrop = params.take_bool("headdrop", false)?;
        let allot_mode = match params.take_choice("allot_mode", "bytes", &["bytes", "scaled"])? {
            "scaled" => AllotMode::Scaled,
            _ => AllotMode::Bytes,
        };
        params.finish(SFQ_PARAMS)?;

        if ctl_divisor != 0 && (!ctl_divisor.is_power_of_two() || ctl_divisor > SFQ_MAX_DIVISOR) {
            return Err(invalid(
                "divisor",
                format!("{ctl_divisor} is not a power of two up to {SFQ_MAX_DIVISOR}"),
                "a power of two in 1..=65536 (0 keeps the default 1024)",
            ));
        }
        match allot_mode {
            AllotMode::Bytes if ctl_quantum > i32::MAX as u32 => {
                return Err(invalid(
                    "quantum",
                    format!("{ctl_quantum} is invalid"),
                    "at most 2147483647 bytes",
                ));
            }
            AllotMode::Scaled
                if ctl_quantum != 0 && sfq_allot_size(ctl_quantum) > i16::MAX as u32 =>
            {
                return Err(invalid(
                    "quantum",
                    format!("{ctl_quantum} does not fit the 16-bit scaled allot"),
                    "at most 262136 bytes with allot_mode = \"scaled\"",
                ));
            }
            _ => {}
        }

        // sfq_init() defaults, then sfq_change()'s updates in the kernel's order.
        let mut cfg = SfqConfig {
            limit: SFQ_MAX_DEPTH,
            divisor: SFQ_DEFAULT_HASH_DIVISOR,
            headdrop,
            maxdepth: SFQ_MAX_DEPTH,
            maxflows: SFQ_DEFAULT_FLOWS,
            quantum: dev.mtu_l2,
            perturb_period_s: perturb,
            allot_mode,
        };
        if ctl_quantum != 0 {
            cfg.quantum = ctl_quantum;
        }
        if ctl_flows != 0 {
            cfg.maxflows = ctl_flows.min(SFQ_MAX_FLOWS);
        }
        if ctl_divisor != 0 {
            cfg.divisor = ctl_divisor;
            cfg.maxflows = cfg.maxflows.min(cfg.divisor);
        }
        if ctl_depth != 0 {
            cfg.maxdepth = ctl_depth.min(SFQ_MAX_DEPTH);
        }
        if ctl_limit != 0 {
            cfg.limit = ctl_limit.min(cfg.maxdepth * cfg.maxflows);
            cfg.maxflows = cfg.maxflows.min(cfg.limit);
        }
        if cfg.limit == 1 {
            return Err(invalid(
                "limit",
                "a limit of 1 packet is invalid".into(),
                "0 (default 127) or at least 2",
            ));
        }
        if cfg.quantum == 0 || cfg.quantum > i32::MAX as u32 {
            // Only reachable through the default (the device's MTU): psched_mtu() is
            // never 0 or beyond INT_MAX on a real device, and DRR needs quantum > 0.
            return Err(invalid(
                "quantum",
                format!(
                    "the device MTU {} is not a usable default quantum",
                    cfg.quantum
                ),
                "an explicit quantum in 1..=2147483647 bytes",
            ));
        }
        if cfg.allot_mode == AllotMode::Scaled && sfq_allot_size(cfg.quantum) > i16::MAX as u32 {
            // The default quantum (the device MTU) must fit the 16-bit allot too.
            return Err(invalid(
                "allot_mode",
                format!(
                    "the device MTU {} does not fit the 16-bit scaled allot",
                    cfg.quantum
                ),
                "allot_mode = \"bytes\", or an explicit quantum",
            ));
        }
        Ok(Self::with_config(cfg, dev.hash_key))
    }

    /// Builds the qdisc from an already validated configuration (`sfq_init()`).
    pub fn with_config(cfg: SfqConfig, hash_key: u32) -> Self {
        let mut q = Sfq {
            limit: cfg.limit,
            divisor: cfg.divisor,
            headdrop: cfg.headdrop,
            maxdepth: cfg.maxdepth,
            maxflows: cfg.maxflows,
            quantum: cfg.quantum,
            allot_mode: cfg.allot_mode,
            perturbation: hash_key,
            perturb_period_ns: cfg.perturb_period_s as u64 * 1_000_000_000,
            perturb_next_ns: cfg.perturb_period_s as u64 * 1_000_000_000,
            perturb_count: 0,
            cur_depth: 0,
            ht: vec![SFQ_EMPTY_SLOT; cfg.divisor as usize],
            slots: vec![SfqSlot::default(); cfg.maxflows as usize],
            skbs: SkbSlab::with_capacity((cfg.limit as usize + 1).min(16_384)),
            heads: vec![SfqHead::default(); SFQ_INDEX_SPACE]
                .into_boxed_slice()
                .try_into()
                .expect("SFQ_INDEX_SPACE heads"),
            tail: None,
            qlen: 0,
            backlog: 0,
            stats: QdiscStats::default(),
            rehash_drops: 0,
            rehash_list: Vec::new(),
        };
        for d in 0..=SFQ_MAX_DEPTH {
            let head = (d + SFQ_MAX_FLOWS) as SfqIndex;
            q.heads[head as usize] = SfqHead {
                next: head,
                prev: head,
            };
        }
        for i in 0..cfg.maxflows {
            q.sfq_link(i as SfqIndex);
        }
        q
    }

    /// The configuration in effect (what `tc -d qdisc show` would print).
    pub fn config(&self) -> SfqConfig {
        SfqConfig {
            limit: self.limit,
            divisor: self.divisor,
            headdrop: self.headdrop,
            maxdepth: self.maxdepth,
            maxflows: self.maxflows,
            quantum: self.quantum,
            perturb_period_s: (self.perturb_period_ns / 1_000_000_000) as u32,
            allot_mode: self.allot_mode,
        }
    }

    /// Packets dropped by perturbation rehashes (not in `stats().drops`).
    pub fn rehash_drops(&self) -> u64 {
        self.rehash_drops
    }

    /// Number of active slots (flows with packets).
    pub fn active_flows(&self) -> usize {
        self.slots.iter().filter(|s| s.qlen > 0).count()
    }

    /// The hash bucket of `skb` under the current perturbation (`sfq_hash()`).
    pub fn bucket_of(&self, skb: &Skb) -> u32 {
        flow_hash(skb.flow, self.perturbation) & (self.divisor - 1)
    }

    /// The refill added to `allot` per round: `quantum` bytes, or `scaled_quantum`.
    fn allot_quantum(&self) -> i32 {
        match self.allot_mode {
            AllotMode::Bytes => self.quantum as i32,
            AllotMode::Scaled => sfq_allot_size(self.quantum) as i32,
        }
    }

    /// Adds `delta` to a slot's allot with the width of the kernel's field: `int` in
    /// bytes mode, `short` in scaled mode.
    fn allot_add(&self, allot: i32, delta: i32) -> i32 {
        match self.allot_mode {
            AllotMode::Bytes => allot.wrapping_add(delta),
            AllotMode::Scaled => (allot.wrapping_add(delta)) as i16 as i32,
        }
    }

    /// What one packet costs: `qdisc_pkt_len(skb)` or `SFQ_ALLOT_SIZE(len)`.
    fn allot_cost(&self, len: u32) -> i32 {
        match self.allot_mode {
            AllotMode::Bytes => len as i32,
            AllotMode::Scaled => sfq_allot_size(len) as i32,
        }
    }

    // ---- dep[] lists (sfq_dep_head, sfq_link, sfq_unlink, sfq_inc, sfq_dec) ----

    /// `sfq_dep_head()`: the `sfq_head` of any index, a slot's or a `dep[]` head's.
    fn head_mut(&mut self, val: SfqIndex) -> &mut SfqHead {
        &mut self.heads[val as usize]
    }

    /// The head of `dep[d]`, the list of slots holding `d` packets.
    fn dep(&self, d: u32) -> SfqHead {
        self.heads[(SFQ_MAX_FLOWS + d) as usize]
    }

    /// `sfq_link()`: puts slot `x` at the head of `dep[slot.qlen]`.
    fn sfq_link(&mut self, x: SfqIndex) {
        let qlen = self.slots[x as usize].qlen as u32;
        let p = (qlen + SFQ_MAX_FLOWS) as SfqIndex;
        let n = self.head_mut(p).next;
        *self.head_mut(x) = SfqHead { next: n, prev: p };
        self.head_mut(p).next = x;
        self.head_mut(n).prev = x;
    }

    /// `sfq_unlink()`: returns (next, prev) of the removed anchor.
    fn sfq_unlink(&mut self, x: SfqIndex) -> (SfqIndex, SfqIndex) {
        let SfqHead { next: n, prev: p } = *self.head_mut(x);
        self.head_mut(p).next = n;
        self.head_mut(n).prev = p;
        (n, p)
    }

    /// `sfq_dec()`.
    fn sfq_dec(&mut self, x: SfqIndex) {
        let (n, p) = self.sfq_unlink(x);
        let d = self.slots[x as usize].qlen as u32;
        self.slots[x as usize].qlen -= 1;
        if n == p && self.cur_depth == d {
            self.cur_depth -= 1;
        }
        self.sfq_link(x);
    }

    /// `sfq_inc()`.
    fn sfq_inc(&mut self, x: SfqIndex) {
        self.sfq_unlink(x);
        self.slots[x as usize].qlen += 1;
        let d = self.slots[x as usize].qlen as u32;
        if self.cur_depth < d {
            self.cur_depth = d;
        }
        self.sfq_link(x);
    }

    /// Links a slot that just became active after `tail` and makes it the tail, with
    /// a fresh quantum (`sfq_enqueue()` and `sfq_rehash()`).
    fn activate(&mut self, x: SfqIndex) {
        match self.tail {
            None => self.slots[x as usize].next = x,
            Some(t) => {
                self.slots[x as usize].next = self.slots[t as usize].next;
                self.slots[t as usize].next = x;
            }
        }
        // A new flow waits behind the old ones ("we could endup servicing new flows
        // only, and freeze old ones").
        self.tail = Some(x);
        self.slots[x as usize].allot = self.allot_quantum();
    }

    /// `sfq_drop()`: drops one packet from the longest slot (its tail, or its head with
    /// headdrop); if every slot holds one packet, drops the slot after `tail` and
    /// unlinks it. Returns the dropped length (0 if nothing was held).
    fn sfq_drop(&mut self, drops: &mut Vec<u32>) -> u32 {
        let d = self.cur_depth;
        let x = if d > 1 {
            self.dep(d).next
        } else if d == 1 {
            // "It is difficult to believe, but ALL THE SLOTS HAVE LENGTH 1."
            let t = self.tail.expect("active slots imply a tail");
            let x = self.slots[t as usize].next;
            self.slots[t as usize].next = self.slots[x as usize].next;
            let h = self.slots[x as usize].hash;
            self.ht[h as usize] = SFQ_EMPTY_SLOT;
            if x == t {
                // Only reachable with limit 1, which sfq_change() rejects since 2025
                // (older kernels left `tail` pointing at the emptied slot).
                self.tail = None;
            }
            x
        } else {
            return 0;
        };
        let slot = &mut self.slots[x as usize];
        let skb = if self.headdrop {
            self.skbs.pop_head(&mut slot.skbs)
        } else {
            self.skbs.pop_tail(&mut slot.skbs)
        }
        .expect("a slot in dep[d >= 1] holds packets");
        let len = skb.len;
        slot.backlog -= len as u64;
        self.sfq_dec(x);
        self.qlen -= 1;
        self.backlog -= len as u64;
        self.stats.drops += 1;
        drops.push(skb.id);
        len
    }

    /// `sfq_enqueue()` from its `enqueue:` label: link the packet into slot `x`, and
    /// at the limit drop from the longest slot.
    #[inline(always)]
    fn enqueue_to_slot(&mut self, x: SfqIndex, skb: Skb, drops: &mut Vec<u32>) -> EnqueueVerdict {
        self.backlog += skb.len as u64;
        let slot = &mut self.slots[x as usize];
        slot.backlog += skb.len as u64;
        self.skbs.push_tail(&mut slot.skbs, skb);
        self.sfq_inc(x);
        if self.slots[x as usize].qlen == 1 {
            self.activate(x);
        }
        self.qlen += 1;
        if self.qlen <= self.limit {
            return EnqueueVerdict::Success;
        }

        let qlen = self.slots[x as usize].qlen;
        self.sfq_drop(drops);
        // Congestion notification only if the victim came from this flow.
        if qlen != self.slots[x as usize].qlen {
            EnqueueVerdict::Congested
        } else {
            EnqueueVerdict::Success
        }
    }

    /// Whether `sfq_enqueue()` of one more packet to the active slot `x` would end in
    /// `sfq_drop()` taking that very packet back: the qdisc is at its limit, the drop
    /// takes the tail (no headdrop), and `x` becomes the longest slot, whose anchor
    /// `sfq_inc()` puts at the head of `dep[qlen + 1]`, where `sfq_drop()` looks
    /// (`qlen + 1 >= 2`, so not the "all slots have length 1" case). A flood into a
    /// full sfq takes this path on every send.
    #[inline(always)]
    fn arrival_is_the_victim(&self, x: SfqIndex) -> bool {
        let q = self.slots[x as usize].qlen as u32;
        self.qlen >= self.limit && !self.headdrop && q >= 1 && q + 1 >= self.cur_depth
    }

    /// The end state of `sfq_enqueue()` when [`Self::arrival_is_the_victim`], besides
    /// the drop itself (counted, the packet freed, `NET_XMIT_CN`: the victim came from
    /// this flow): the qdisc is as before except for what `sfq_inc()` + `sfq_dec()`
    /// leave behind, `x`'s anchor moved to the head of `dep[qlen]` and `cur_depth` as
    /// `sfq_dec()` sets it (`qlen` when `dep[qlen + 1]` holds no other slot). The
    /// packet's own link and unlink in the slot's list leave it as it was.
    /// `tests::arrival_victim_shortcut_matches_the_kernel_sequence` checks the state
    /// against the full sequence.
    #[inline(always)]
    fn relink_own_victim(&mut self, x: SfqIndex) {
        let q = self.slots[x as usize].qlen as u32;
        // Already at the head of dep[q] (a flood's drops, one after another): the
        // relink would leave every link as it is.
        if self.dep(q).next != x {
            self.sfq_unlink(x);
            self.sfq_link(x);
        }
        let deeper = self.dep(q + 1);
        self.cur_depth = if deeper.next == (SFQ_MAX_FLOWS + q + 1) as SfqIndex { q } else { q + 1 };
    }

    /// Whether `sfq_enqueue()` drops an arrival in the allocated slot `x` and nothing
    /// else, with the perturbation timer not due: the slot is at its depth
    /// (`congestion_drop`, no headdrop), or [`Sfq::arrival_is_the_victim`].
    #[inline(always)]
    fn slot_drops_arrival(&self, x: SfqIndex) -> Option<ArrivalDrop> {
        let verdict = if self.slots[x as usize].qlen as u32 >= self.maxdepth {
            (!self.headdrop).then_some(EnqueueVerdict::Dropped)
        } else {
            self.arrival_is_the_victim(x).then_some(EnqueueVerdict::Congested)
        };
        verdict.map(|verdict| ArrivalDrop { verdict, hint: x as u32 })
    }

    /// The perturbation timer has fallen due: the next enqueue rehashes first.
    #[inline(always)]
    fn perturbation_due(&self, now: u64) -> bool {
        self.perturb_period_ns != 0 && now >= self.perturb_next_ns
    }

    /// The perturbation timer (`sfq_perturbation()`), run lazily: every period that
    /// has elapsed by `now` re-keys the hash and, if packets are queued, rehashes them.
    /// The timer is armed at time 0 (qdisc creation) and rearmed every period.
    #[inline]
    fn run_perturb_timer(&mut self, now: u64, drops: &mut Vec<u32>) {
        if self.perturbation_due(now) {
            self.perturb_expired(now, drops);
        }
    }

    #[cold]
    fn perturb_expired(&mut self, now: u64, drops: &mut Vec<u32>) {
        while now >= self.perturb_next_ns {
            self.perturb_count = self.perturb_count.wrapping_add(1);
            // A deterministic stand-in for get_random_bytes(&q->perturbation).
            self.perturbation = flow_hash(self.perturbation, self.perturb_count);
            if self.tail.is_some() {
                self.sfq_rehash(drops);
            }
            self.perturb_next_ns += self.perturb_period_ns;
        }
    }

    /// `sfq_rehash()`: pulls every queued packet out (slot index order, each slot head
    /// to tail) and re-inserts it under the new hash, without touching counters except
    /// for packets that no longer fit (no free slot, or the slot is at `maxdepth`).
    fn sfq_rehash(&mut self, drops: &mut Vec<u32>) {
        let mut list = std::mem::take(&mut self.rehash_list);
        list.clear();
        for i in 0..self.maxflows as usize {
            if self.slots[i].qlen == 0 {
                continue;
            }
            while self.slots[i].qlen > 0 {
                let skb = self
                    .skbs
                    .pop_head(&mut self.slots[i].skbs)
                    .expect("qlen matches the list");
                self.sfq_dec(i as SfqIndex);
                list.push(skb);
            }
            self.slots[i].backlog = 0;
            let h = self.slots[i].hash;
            self.ht[h as usize] = SFQ_EMPTY_SLOT;
        }
        self.tail = None;

        for &skb in &list {
            let hash = self.bucket_of(&skb);
            let mut x = self.ht[hash as usize];
            let fits = if x == SFQ_EMPTY_SLOT {
                x = self.dep(0).next;
                if (x as u32) < SFQ_MAX_FLOWS {
                    self.ht[hash as usize] = x;
                    self.slots[x as usize].hash = hash;
                    true
                } else {
                    false
                }
            } else {
                true
            };
            if !fits || self.slots[x as usize].qlen as u32 >= self.maxdepth {
                self.backlog -= skb.len as u64;
                self.qlen -= 1;
                self.rehash_drops += 1;
                drops.push(skb.id);
                continue;
            }
            let slot = &mut self.slots[x as usize];
            self.skbs.push_tail(&mut slot.skbs, skb);
            slot.backlog += skb.len as u64;
            self.sfq_inc(x);
            if self.slots[x as usize].qlen == 1 {
                self.activate(x);
            }
        }
        self.rehash_list = list;
    }
}

impl Qdisc for Sfq {
    fn kind(&self) -> &'static str {
        "sfq"
    }

    /// `sfq_dump()` as iproute2's `sfq_print_opt()` prints it (no RED: darkbuf's sfq
    /// has none). sfq has no qdisc xstats, only per-class `allot`.
    fn tc_options(&self) -> String {
        use super::tc_print::size;
        let mut s = format!("limit {}p quantum {} depth {} ", self.limit, size(self.quantum as u64), self.maxdepth);
        if self.headdrop {
            s.push_str("headdrop ");
        }
        s.push_str(&format!("divisor {}", self.divisor));
        let perturb_s = self.perturb_period_ns / 1_000_000_000;
        if perturb_s > 0 {
            s.push_str(&format!(" perturb {perturb_s}sec"));
        }
        s
    }

    /// `sfq_enqueue()`. Always inlined into `AnyQdisc`'s dispatch and so into the
    /// sender's path: it runs once per packet sent, and its call cost 1% of an sfq flood.
    #[inline(always)]
    fn enqueue(&mut self, skb: Skb, now: u64, drops: &mut Vec<u32>) -> EnqueueVerdict {
        self.run_perturb_timer(now, drops);
        let hash = self.bucket_of(&skb);
        let mut x = self.ht[hash as usize];
        if x == SFQ_EMPTY_SLOT {
            x = self.dep(0).next; // get a free slot
            if x as u32 >= SFQ_MAX_FLOWS {
                self.stats.drops += 1;
                drops.push(skb.id);
                return EnqueueVerdict::Dropped;
            }
            self.ht[hash as usize] = x;
            let slot = &mut self.slots[x as usize];
            slot.hash = hash;
            slot.backlog = 0;
        } else if let Some(drop) = self.slot_drops_arrival(x) {
            // congestion_drop without headdrop, or an arrival that is its own victim:
            // the arrival alone goes, with the bookkeeping of `drop_arrival()`.
            self.drop_arrival(drop);
            drops.push(skb.id);
            return drop.verdict;
        } else if self.slots[x as usize].qlen as u32 >= self.maxdepth {
            // congestion_drop with headdrop
            let slot = &mut self.slots[x as usize];
            let head = self.skbs.pop_head(&mut slot.skbs).expect("a full slot holds packets");
            slot.backlog = slot.backlog - head.len as u64 + skb.len as u64;
            self.skbs.push_tail(&mut slot.skbs, skb);
            self.backlog = self.backlog - head.len as u64 + skb.len as u64;
            self.stats.drops += 1;
            drops.push(head.id);
            return EnqueueVerdict::Congested;
        }

        self.enqueue_to_slot(x, skb, drops)
    }

    /// `sfq_dequeue()`: DRR over the ring starting at `tail.next`.
    #[inline]
    fn dequeue(&mut self, now: u64, drops: &mut Vec<u32>) -> Option<Skb> {
        self.run_perturb_timer(now, drops);
        let tail = self.tail?;
        let mut tail = tail;
        let a = loop {
            let a = self.slots[tail as usize].next;
            if self.slots[a as usize].allot <= 0 {
                tail = a;
                self.tail = Some(a);
                let allot = self.allot_add(self.slots[a as usize].allot, self.allot_quantum());
                self.slots[a as usize].allot = allot;
                continue;
            }
            break a;
        };
        let skb = self
            .skbs
            .pop_head(&mut self.slots[a as usize].skbs)
            .expect("an active slot holds packets");
        self.sfq_dec(a);
        self.qlen -= 1;
        self.backlog -= skb.len as u64;
        let slot = &mut self.slots[a as usize];
        slot.backlog -= skb.len as u64;
        if slot.qlen == 0 {
            let (h, next_a) = (slot.hash, slot.next);
            self.ht[h as usize] = SFQ_EMPTY_SLOT;
            if a == next_a {
                self.tail = None; // no more active slots
                return Some(skb);
            }
            self.slots[tail as usize].next = next_a;
        } else {
            let allot = slot.allot;
            self.slots[a as usize].allot = self.allot_add(allot, -self.allot_cost(skb.len));
        }
        Some(skb)
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

    /// `sfq_enqueue()`'s two ways of dropping the arrival alone, with the perturbation
    /// timer not due: its slot is full (`congestion_drop`, no headdrop), or
    /// [`Sfq::arrival_is_the_victim`].
    #[inline]
    fn arrival_dropped(&self, skb: &Skb, now: u64) -> Option<ArrivalDrop> {
        if self.perturbation_due(now) {
            return None;
        }
        let x = self.ht[self.bucket_of(skb) as usize];
        if x == SFQ_EMPTY_SLOT {
            return None;
        }
        self.slot_drops_arrival(x)
    }

    /// The flow's slot is `prev.hint`: `drop_arrival()` leaves every slot allocated
    /// (a slot at its depth keeps its packets; an arrival that is its own victim
    /// leaves its slot's length as it was), and only the perturbation rehashes.
    #[inline]
    fn arrival_dropped_again(&self, _skb: &Skb, now: u64, prev: ArrivalDrop) -> Option<ArrivalDrop> {
        if self.perturbation_due(now) {
            return None;
        }
        self.slot_drops_arrival(prev.hint as SfqIndex)
    }

    #[inline]
    fn drop_arrival(&mut self, drop: ArrivalDrop) {
        if drop.verdict == EnqueueVerdict::Congested {
            self.relink_own_victim(drop.hint as SfqIndex);
        }
        self.stats.drops += 1;
    }

    /// `sfq_init()`: `TCQ_F_CAN_BYPASS` when `limit >= 1`.
    fn can_bypass(&self) -> bool {
        self.limit >= 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;


    fn int(v: i64) -> ParamValue {
        ParamValue::Int(v)
    }

    fn sfq(kv: &[(&str, ParamValue)]) -> Sfq {
        Sfq::from_params(Params::from_pairs(kv), &DevInfo::default()).unwrap()
    }

    /// `tc qdisc show` of sfq as iproute2 prints it: the kernel's defaults on an
    /// Ethernet device, `headdrop` and `perturb` only when set.
    #[test]
    fn tc_layout() {
        assert_eq!(sfq(&[]).tc_options(), "limit 127p quantum 1514b depth 127 divisor 1024");
        let q = sfq(&[("headdrop", ParamValue::Bool(true)), ("perturb", int(10)), ("limit", int(64))]);
        assert_eq!(q.tc_options(), "limit 64p quantum 1514b depth 127 headdrop divisor 1024 perturb 10sec");
        assert_eq!(q.tc_xstats(), "");
    }

    /// Flows whose buckets differ under `q`'s hash, so tests do not depend on
    /// collisions: returns the first `n` flow ids with distinct buckets.
    fn distinct_flows(q: &Sfq, n: usize) -> Vec<u32> {
        let mut seen = Vec::new();
        let mut flows = Vec::new();
        for f in 1.. {
            let b = q.bucket_of(&Skb {
                flow: f,
                ..Skb::default()
            });
            if !seen.contains(&b) {
                seen.push(b);
                flows.push(f);
                if flows.len() == n {
                    break;
                }
            }
        }
        flows
    }

    fn pkt(id: u32, flow: u32, len: u32) -> Skb {
        Skb {
            id,
            flow,
            len,
            ..Skb::default()
        }
    }

    fn drain(q: &mut Sfq) -> Vec<Skb> {
        let mut drops = Vec::new();
        std::iter::from_fn(|| q.dequeue(0, &mut drops)).collect()
    }

    #[test]
    fn defaults_and_clamps() {
        let q = sfq(&[]);
        let c = q.config();
        assert_eq!(
            (
                c.limit,
                c.maxdepth,
                c.maxflows,
                c.divisor,
                c.quantum,
                c.perturb_period_s
            ),
            (127, 127, 128, 1024, 1514, 0)
        );
        // limit = min(limit, depth * flows); maxflows = min(flows, divisor, limit).
        let c = sfq(&[("limit", int(1000)), ("depth", int(10)), ("flows", int(20))]).config();
        assert_eq!((c.limit, c.maxdepth, c.maxflows), (200, 10, 20));
        let c = sfq(&[("limit", int(8)), ("divisor", int(16)), ("flows", int(64))]).config();
        assert_eq!((c.limit, c.maxflows, c.divisor), (8, 8, 16));
        let c = sfq(&[("depth", int(500)), ("flows", int(100_000))]).config();
        // The divisor clamp applies only when `divisor` itself is given (sfq_change()
        // runs `maxflows = min(maxflows, divisor)` inside `if (ctl->divisor)`).
        assert_eq!((c.maxdepth, c.maxflows), (127, SFQ_MAX_FLOWS));
        let c = sfq(&[("divisor", int(1024)), ("flows", int(100_000))]).config();
        assert_eq!(c.maxflows, 1024);
        // Likewise the limit clamps only when `limit` is given: the defaults keep
        // limit 127 with 128 slots.
        assert!(sfq(&[]).can_bypass());
    }

    #[test]
    fn invalid_params_are_rejected() {
        let dev = DevInfo::default();
        let bad = |kv: &[(&str, ParamValue)]| Sfq::from_params(Params::from_pairs(kv), &dev).is_err();
        assert!(bad(&[("limit", int(1))]));
        assert!(bad(&[
            ("limit", int(5)),
            ("depth", int(1)),
            ("flows", int(1))
        ])); // clamps to 1
        assert!(bad(&[("divisor", int(1000))]));
        assert!(bad(&[("divisor", int(131_072))]));
        assert!(bad(&[("perturb", int(-1))]));
        assert!(bad(&[("perturb", int(i32::MAX as i64 / 250 + 1))]));
        assert!(!bad(&[("perturb", int(i32::MAX as i64 / 250))]));
        assert!(bad(&[("quantum", int(i32::MAX as i64 + 1))]));
        assert!(bad(&[
            ("quantum", int(262_137)),
            ("allot_mode", ParamValue::Str("scaled".into()))
        ]));
        assert!(!bad(&[
            ("quantum", int(262_136)),
            ("allot_mode", ParamValue::Str("scaled".into()))
        ]));
        assert!(bad(&[("redflowlimit", int(10))]));
        assert!(bad(&[("ecn", ParamValue::Bool(true))]));
    }

    /// DRR with byte allot (6.13+), quantum 1514: flow A sends 1514 B packets, flow B
    /// 66 B packets, both backlogged; A enqueued first.
    ///
    /// A activates first (tail = A), B is linked after it and becomes the tail, so
    /// `tail.next` = A is served first. Each round a slot starts with allot > 0 and is
    /// served while allot > 0 before the pop:
    /// - A: 1514 -> pop -> 0: one packet per round, then refilled to 1514.
    /// - B round 1: 1514 - 66k > 0 for k = 0..=22 -> 23 packets, allot 1514 - 23*66
    ///   = -4. Round 2: -4 + 1514 = 1510 -> 23 packets (1510 - 22*66 = 58 > 0), -8.
    ///   Round 3: 1506 -> 23, -12. (B gets ceil(1514/66) = 23 packets per round; its
    ///   deficit grows by 4 bytes a round, so round 17 gets 22.)
    ///
    /// Order: A, B x23, A, B x23, A, B x23, ...
    #[test]
    fn byte_allot_drr_order() {
        let mut q = sfq(&[]);
        let f = distinct_flows(&q, 2);
        let (a, b) = (f[0], f[1]);
        let mut drops = Vec::new();
        for i in 0..5 {
            q.enqueue(pkt(i, a, 1514), 0, &mut drops);
        }
        for i in 0..100 {
            q.enqueue(pkt(100 + i, b, 66), 0, &mut drops);
        }
        assert!(drops.is_empty());
        let out: Vec<u32> = drain(&mut q).iter().map(|s| s.flow).collect();
        let mut expected = Vec::new();
        for _ in 0..3 {
            expected.push(a);
            expected.extend([b; 23]);
        }
        assert_eq!(&out[..expected.len()], &expected[..]);
        // Round 17 of B is the first with 22 packets (deficit 4 * 16 = 64 > 62).
        let runs: Vec<usize> = out.split(|&fl| fl == a).skip(1).map(|r| r.len()).collect();
        assert_eq!(runs[..4], [23, 23, 23, 23]);
    }

    /// The pre-6.13 scaled allot: quantum 1514 -> ceil(1514/8) = 190 units; A costs
    /// ceil(1514/8) = 190, B ceil(66/8) = 9 (8.25 rounded up).
    /// - B round 1: 190 - 9k > 0 for k = 0..=21 -> 22 packets, allot 190 - 198 = -8.
    /// - Round 2: 182 -> 182 - 9k > 0 for k = 0..=20 -> 21 packets, -7.
    /// - Round 3: 183 -> 21 packets, -6.
    ///
    /// So B gets 22, 21, 21 where byte allot gives 23, 23, 23: rounding small packets
    /// up to 8 bytes overcharges them.
    #[test]
    fn scaled_allot_differs() {
        let mut q = sfq(&[("allot_mode", ParamValue::Str("scaled".into()))]);
        let f = distinct_flows(&q, 2);
        let (a, b) = (f[0], f[1]);
        let mut drops = Vec::new();
        for i in 0..5 {
            q.enqueue(pkt(i, a, 1514), 0, &mut drops);
        }
        for i in 0..100 {
            q.enqueue(pkt(100 + i, b, 66), 0, &mut drops);
        }
        let out: Vec<u32> = drain(&mut q).iter().map(|s| s.flow).collect();
        let runs: Vec<usize> = out.split(|&fl| fl == a).skip(1).map(|r| r.len()).collect();
        assert_eq!(runs[..3], [22, 21, 21]);
        assert_eq!(out[0], a);
    }

    /// A flow that becomes active is linked after `tail`: it is served after every
    /// flow already in the ring, not before them.
    ///
    /// A x2, B x2 (1514 B): ring A -> B, tail = B. Dequeue A1 (A's allot 1514 -> 0).
    /// C arrives: C.next = tail.next (A), B.next = C, tail = C: ring A -> B -> C.
    /// Next dequeues: A has allot 0 -> tail = A, refill; B1; B exhausted -> C1 (C
    /// empties and is unlinked); A2; B2.
    #[test]
    fn new_flow_waits_behind_old_ones() {
        let mut q = sfq(&[]);
        let f = distinct_flows(&q, 3);
        let (a, b, c) = (f[0], f[1], f[2]);
        let mut drops = Vec::new();
        q.enqueue(pkt(1, a, 1514), 0, &mut drops);
        q.enqueue(pkt(2, a, 1514), 0, &mut drops);
        q.enqueue(pkt(3, b, 1514), 0, &mut drops);
        q.enqueue(pkt(4, b, 1514), 0, &mut drops);
        assert_eq!(q.dequeue(0, &mut drops).unwrap().id, 1);
        q.enqueue(pkt(5, c, 1514), 0, &mut drops);
        let order: Vec<u32> = drain(&mut q).iter().map(|s| s.id).collect();
        assert_eq!(order, [3, 5, 2, 4]);
    }

    /// At the limit, sfq_drop() takes the tail of the longest flow; CN only when that
    /// flow is the arriving packet's.
    #[test]
    fn drop_from_longest_flow_at_limit() {
        let mut q = sfq(&[("limit", int(4))]);
        let f = distinct_flows(&q, 2);
        let (a, b) = (f[0], f[1]);
        let mut drops = Vec::new();
        for id in 1..=3 {
            assert_eq!(
                q.enqueue(pkt(id, a, 100), 0, &mut drops),
                EnqueueVerdict::Success
            );
        }
        assert_eq!(
            q.enqueue(pkt(4, b, 100), 0, &mut drops),
            EnqueueVerdict::Success
        );
        // qlen 5 > 4: A (3 packets) is longest; its tail (3) goes; B's packet stays.
        assert_eq!(
            q.enqueue(pkt(5, b, 100), 0, &mut drops),
            EnqueueVerdict::Success
        );
        assert_eq!(drops.clone(), [3]);
        // Now A 2, B 2; A sends again: A 3 is longest, the arriving packet is dropped.
        assert_eq!(
            q.enqueue(pkt(6, a, 100), 0, &mut drops),
            EnqueueVerdict::Congested
        );
        assert_eq!(drops.clone(), [3, 6]);
        assert_eq!((q.qlen(), q.backlog(), q.stats().drops), (4, 400, 2));
        let order: Vec<u32> = drain(&mut q).iter().map(|s| s.id).collect();
        assert_eq!(order, [1, 2, 4, 5]);
    }

    #[test]
    fn headdrop_drops_the_oldest_of_the_longest_flow() {
        let mut q = sfq(&[("limit", int(4)), ("headdrop", ParamValue::Bool(true))]);
        let f = distinct_flows(&q, 2);
        let (a, b) = (f[0], f[1]);
        let mut drops = Vec::new();
        for id in 1..=3 {
            q.enqueue(pkt(id, a, 100), 0, &mut drops);
        }
        q.enqueue(pkt(4, b, 100), 0, &mut drops);
        assert_eq!(
            q.enqueue(pkt(5, a, 100), 0, &mut drops),
            EnqueueVerdict::Congested
        );
        assert_eq!(drops.clone(), [1]);
        let order: Vec<u32> = drain(&mut q).iter().map(|s| s.id).collect();
        assert_eq!(order, [2, 3, 5, 4]);
    }

    /// Per-flow depth: tail drop of the arriving packet, or with headdrop the flow's
    /// oldest packet goes and the arriving one is queued (CN).
    #[test]
    fn depth_limit_per_flow() {
        let mut q = sfq(&[("depth", int(2))]);
        let a = distinct_flows(&q, 1)[0];
        let mut drops = Vec::new();
        q.enqueue(pkt(1, a, 100), 0, &mut drops);
        q.enqueue(pkt(2, a, 100), 0, &mut drops);
        assert_eq!(
            q.enqueue(pkt(3, a, 100), 0, &mut drops),
            EnqueueVerdict::Dropped
        );
        let mut h = sfq(&[("depth", int(2)), ("headdrop", ParamValue::Bool(true))]);
        let mut hd = Vec::new();
        h.enqueue(pkt(1, a, 100), 0, &mut hd);
        h.enqueue(pkt(2, a, 100), 0, &mut hd);
        assert_eq!(
            h.enqueue(pkt(3, a, 300), 0, &mut hd),
            EnqueueVerdict::Congested
        );
        assert_eq!(hd.clone(), [1]);
        assert_eq!((h.qlen(), h.backlog()), (2, 400));
    }

    /// All flows at depth 1: the victim is the slot after `tail` (the oldest in the
    /// round), which is unlinked. With an explicit limit, `maxflows <= limit` makes
    /// this unreachable; the defaults (limit 127, 128 slots) reach it with 128 flows.
    #[test]
    fn all_flows_depth_one() {
        let mut q = sfq(&[]);
        let f = distinct_flows(&q, 128);
        let mut drops = Vec::new();
        for (i, &fl) in f.iter().enumerate() {
            assert_eq!(
                q.enqueue(pkt(i as u32 + 1, fl, 100), 0, &mut drops),
                EnqueueVerdict::Success
            );
        }
        // The 128th flow became the tail; tail.next is the first flow, whose only
        // packet is dropped and whose slot is unlinked.
        assert_eq!(drops.clone(), [1]);
        assert_eq!((q.active_flows(), q.qlen(), q.stats().drops), (127, 127, 1));
        let order: Vec<u32> = drain(&mut q).iter().map(|s| s.id).collect();
        assert_eq!(order, (2..=128).collect::<Vec<u32>>());
    }

    #[test]
    fn no_free_slot_drops_the_arrival() {
        let mut q = sfq(&[("flows", int(2))]);
        let f = distinct_flows(&q, 3);
        let mut drops = Vec::new();
        q.enqueue(pkt(1, f[0], 100), 0, &mut drops);
        q.enqueue(pkt(2, f[1], 100), 0, &mut drops);
        assert_eq!(
            q.enqueue(pkt(3, f[2], 100), 0, &mut drops),
            EnqueueVerdict::Dropped
        );
        assert_eq!(q.stats().drops, 1);
    }

    /// Perturbation re-keys the hash every period and rehashes queued packets without
    /// losing or reordering a flow's packets.
    #[test]
    fn perturbation_rehashes() {
        let mut q = sfq(&[("perturb", int(1))]);
        let f = distinct_flows(&q, 3);
        let mut drops = Vec::new();
        for i in 0..30u32 {
            q.enqueue(pkt(i, f[(i % 3) as usize], 100), 0, &mut drops);
        }
        let key0 = q.perturbation;
        let first = q.dequeue(999_999_999, &mut drops).unwrap();
        assert_eq!(q.perturbation, key0);
        let mut out = vec![first];
        while let Some(s) = q.dequeue(1_000_000_000, &mut drops) {
            out.push(s);
        }
        assert_ne!(q.perturbation, key0);
        assert_eq!(out.len() + drops.len(), 30);
        for fl in &f {
            let ids: Vec<u32> = out.iter().filter(|s| s.flow == *fl).map(|s| s.id).collect();
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "flow order kept");
        }
        assert_eq!(drops.len() as u64, q.rehash_drops());
        assert_eq!(q.stats().drops, 0);
    }

    /// Every observable part of the qdisc: counters, the ring, the hash table, each
    /// slot with its packets in order, and every `sfq_head` in use.
    fn state(q: &Sfq) -> String {
        let mut slab = q.skbs.clone();
        let slots: Vec<_> = q
            .slots
            .iter()
            .map(|sl| {
                let (mut list, mut ids) = (sl.skbs, Vec::new());
                while let Some(s) = slab.pop_head(&mut list) {
                    ids.push(s.id);
                }
                (sl.qlen, sl.next, sl.hash, sl.allot, sl.backlog, ids)
            })
            .collect();
        let heads: Vec<_> = q.heads[..q.maxflows as usize]
            .iter()
            .chain(&q.heads[SFQ_MAX_FLOWS as usize..])
            .map(|h| (h.next, h.prev))
            .collect();
        format!(
            "{} {} {:?} {} {:?} {:?} {slots:?} {heads:?}",
            q.qlen, q.backlog, q.stats, q.cur_depth, q.tail, q.ht
        )
    }

    proptest::proptest! {
        /// The arriving packet dropped at once (`drop_arrival()`) leaves the qdisc, the
        /// drop list and the verdict exactly as the kernel's sequence does: link it,
        /// `sfq_inc()`, then `sfq_drop()` from the longest slot. Random floods of a few
        /// flows into a small sfq, with dequeues between, on two copies: one takes the
        /// shortcut, the other `enqueue_to_slot()`, the kernel's whole path.
        #[test]
        fn arrival_victim_shortcut_matches_the_kernel_sequence(
            limit in 2i64..24,
            depth in 2i64..12,
            divisor in proptest::sample::select(vec![2i64, 4, 16, 1024]),
            ops in proptest::collection::vec((0u8..4, 0u32..6, 60u32..1500), 1..300),
        ) {
            let params = [("limit", int(limit)), ("depth", int(depth)), ("divisor", int(divisor)), ("flows", int(4))];
            let (mut a, mut b) = (sfq(&params), sfq(&params));
            let (mut da, mut db) = (Vec::new(), Vec::new());
            let mut shortcuts = 0;
            for (i, &(op, flow, len)) in ops.iter().enumerate() {
                if op == 0 {
                    proptest::prop_assert_eq!(a.dequeue(0, &mut da).map(|s| s.id), b.dequeue(0, &mut db).map(|s| s.id));
                } else {
                    let skb = pkt(i as u32, flow, len);
                    let x = b.ht[b.bucket_of(&skb) as usize];
                    let victim = x != SFQ_EMPTY_SLOT
                        && (b.slots[x as usize].qlen as u32) < b.maxdepth
                        && b.arrival_is_the_victim(x);
                    let vb = if victim { b.enqueue_to_slot(x, skb, &mut db) } else { b.enqueue(skb, 0, &mut db) };
                    shortcuts += victim as u32;
                    proptest::prop_assert_eq!(a.enqueue(skb, 0, &mut da), vb);
                }
                proptest::prop_assert_eq!(&da, &db);
                proptest::prop_assert_eq!(state(&a), state(&b));
            }
            // The floods fill the qdisc: most cases take the shortcut at least once.
            proptest::prop_assume!(shortcuts > 0);
        }
    }
}
