//! fq_codel: mirrors net/sched/sch_fq_codel.c (6.x), with the CoDel core of
//! [`super::codel`] (include/net/codel_impl.h) run per flow.
//!
//! - Classification (`fq_codel_classify()` / `fq_codel_hash()`): packets are hashed
//!   into `flows` buckets, `reciprocal_scale(skb_get_hash(skb), flows_cnt)`, with the
//!   qdisc's hash key ([`DevInfo::hash_key`]). Classification by `skb->priority` equal
//!   to `<qdisc handle>:<minor>` and tc filters are not modelled (the model's
//!   qdiscs have no handle; priorities 0..15 have major 0, never a qdisc's handle).
//! - Enqueue (`fq_codel_enqueue()`): stamp, append to the flow, and if the flow is on
//!   no list, put it at the tail of `new_flows` with `deficit = quantum`
//!   (`new_flow_count++`). A flow that is empty but still listed is not new. Memory is
//!   charged by `skb->truesize`. Over `limit` packets or `memory_limit` bytes,
//!   `fq_codel_drop()` drops from the head of the fattest flow (largest byte backlog,
//!   first maximum in index order) until `drop_batch` packets are gone or half of that
//!   flow's backlog is, at least one packet; the flow's CoDel `count` grows by the
//!   number dropped ("increase signal strength"); `drop_overlimit` (and
//!   `drop_overmemory` when memory triggered it) count them. NET_XMIT_CN when the
//!   victim flow is the arriving packet's.
//! - Dequeue (`fq_codel_dequeue()`): serve the head of `new_flows`, else of
//!   `old_flows`. A flow whose deficit is used up (`<= 0`) gets `quantum` more bytes
//!   and moves to the tail of `old_flows`. Otherwise CoDel dequeues from it (its
//!   sojourn check uses the whole qdisc's backlog); if the flow turns out empty, a
//!   flow from `new_flows` moves to the tail of `old_flows` when `old_flows` is not
//!   empty ("force a pass through old_flows to prevent starvation"), otherwise it
//!   leaves the lists; then start over. A packet served costs its length in deficit.
//! - `overlimits` is never counted by fq_codel; drops (overflow and CoDel) are.
//!
//! Defaults (`fq_codel_init()`): limit 10240 packets, 1024 flows, quantum =
//! `psched_mtu()` clamped to 256..=1 MiB (also CoDel's `mtu`), target 5 ms, interval
//! 100 ms, ECN on, ce_threshold off, memory_limit 32 MiB (the x86_64 value; other
//! architectures use 4 MiB), drop_batch 64.
//!
//! Packets live in one [`SkbSlab`] of index-linked nodes (the kernel's `skb->next`
//! lists), reused through a free list, so enqueue and dequeue do not allocate once the
//! slab has grown to the peak queue length.
//!
//! Kernel-version notes: `min_backlog` as in [`super::codel`]. Older 4.x kernels
//! counted batch drops in a per-flow `dropped` field instead of raising
//! `cvars.count`; only the current behaviour is modelled. Before 4.7 there was no
//! `drop_batch` / `memory_limit` (one packet dropped per overflow); not modelled.

use super::codel::{
    clamped_mtu, codel_dequeue, codel_time_to_us, drop_next_us, take_codel_params, CodelParams,
    CodelQueue, CodelStats, CodelVars,
};
use super::flow_list::{FlowLists, Link, Linked, ListId};
use super::skb_list::{SkbList, SkbSlab, NIL};
use super::{DevInfo, EnqueueVerdict, Qdisc, QdiscStats};
use crate::params::{ParamError, Params};
use crate::skb::{flow_hash, reciprocal_scale};
use crate::Skb;

/// `FQ_CODEL_QUANTUM_MAX`.
pub const FQ_CODEL_QUANTUM_MAX: u32 = 1 << 20;
/// Default `sch->limit`: 10 * 1024 packets.
pub const FQ_CODEL_DEFAULT_LIMIT: u32 = 10 * 1024;
/// Default `flows_cnt`.
pub const FQ_CODEL_DEFAULT_FLOWS: u32 = 1024;
/// Largest `flows` `fq_codel_change()` accepts.
pub const FQ_CODEL_MAX_FLOWS: u32 = 65536;
/// Default `memory_limit` on x86_64: 32 MiB.
pub const FQ_CODEL_DEFAULT_MEMORY_LIMIT: u32 = 32 << 20;
/// Default `drop_batch_size`.
pub const FQ_CODEL_DEFAULT_DROP_BATCH: u32 = 64;

/// `struct fq_codel_flow`.
#[derive(Clone, Copy, Debug)]
struct Flow {
    /// The flow's packets (`head`, `tail`).
    skbs: SkbList,
    /// Packets held (the kernel counts them by walking the list for class stats).
    qlen: u32,
    deficit: i32,
    cvars: CodelVars,
    chain: Link,
}

impl Default for Flow {
    fn default() -> Self {
        Flow { skbs: SkbList::EMPTY, qlen: 0, deficit: 0, cvars: CodelVars::default(), chain: Link::UNLINKED }
    }
}

impl Linked for Flow {
    fn link(&mut self) -> &mut Link {
        &mut self.chain
    }
}

/// The configuration `fq_codel_change()` commits (what `tc -d qdisc show` prints).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FqCodelConfig {
    /// `sch->limit`, packets.
    pub limit: u32,
    /// `flows_cnt`.
    pub flows: u32,
    /// DRR quantum, bytes.
    pub quantum: u32,
    /// `drop_batch_size`.
    pub drop_batch: u32,
    /// Bytes of truesize allowed.
    pub memory_limit: u32,
    pub params: CodelParams,
}

/// Per-flow class stats (`fq_codel_dump_class_stats()`, `tc -s class show`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FqCodelFlowStats {
    pub deficit: i32,
    /// µs.
    pub ldelay: u32,
    pub count: u32,
    pub lastcount: u32,
    pub dropping: bool,
    /// µs from the given time (negative if overdue), 0 when not dropping.
    pub drop_next: i32,
    pub qlen: u32,
    pub backlog: u64,
}

/// The `fq_codel` qdisc (`struct fq_codel_sched_data`).
pub struct FqCodel {
    limit: u32,
    flows_cnt: u32,
    quantum: u32,
    drop_batch_size: u32,
    memory_limit: u32,
    cparams: CodelParams,
    cstats: CodelStats,
    /// Sum of the queued packets' truesize.
    memory_usage: u64,
    drop_overmemory: u32,
    drop_overlimit: u32,
    new_flow_count: u32,
    flows: Vec<Flow>,
    /// Byte backlog per flow (`backlogs[]`).
    backlogs: Vec<u64>,
    lists: FlowLists,
    slab: SkbSlab,
    hash_key: u32,
    qlen: u32,
    backlog: u64,
    stats: QdiscStats,
}

const FQ_CODEL_PARAMS: &[&str] = &[
    "limit",
    "flows",
    "quantum",
    "target",
    "interval",
    "ecn",
    "ce_threshold",
    "ce_threshold_selector",
    "memory_limit",
    "drop_batch",
    "min_backlog",
];

/// tc's `get_u8(.., 0)` (strtoul base 0): decimal, 0x hex or 0 octal, at most 255.
fn parse_u8_base0(s: &str) -> Option<u8> {
    let s = s.trim();
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u32::from_str_radix(h, 16).ok()?
    } else if s.len() > 1 && s.starts_with('0') {
        u32::from_str_radix(&s[1..], 8).ok()?
    } else {
        s.parse::<u32>().ok()?
    };
    u8::try_from(v).ok()
}

/// `dequeue_func()` / `drop_func()` of sch_fq_codel.c for one flow: removes the head
/// of the flow and charges it to the flow's and the qdisc's counters.
struct FlowCtx<'a> {
    slab: &'a mut SkbSlab,
    skbs: &'a mut SkbList,
    flow_qlen: &'a mut u32,
    flow_backlog: &'a mut u64,
    qlen: &'a mut u32,
    backlog: &'a mut u64,
    memory_usage: &'a mut u64,
    qdisc_drops: &'a mut u64,
    drops: &'a mut Vec<u32>,
}

impl CodelQueue for FlowCtx<'_> {
    fn dequeue_func(&mut self) -> Option<Skb> {
        let skb = self.slab.pop_head(self.skbs)?;
        *self.flow_qlen -= 1;
        *self.flow_backlog -= skb.len as u64;
        *self.memory_usage -= skb.truesize as u64;
        *self.qlen -= 1;
        *self.backlog -= skb.len as u64;
        Some(skb)
    }

    /// `sch->qstats.backlog`: the whole qdisc's, not the flow's.
    fn backlog(&self) -> u64 {
        *self.backlog
    }

    fn drop_func(&mut self, skb: Skb) {
        *self.qdisc_drops += 1;
        self.drops.push(skb.id);
    }
}

impl FqCodel {
    /// Mirrors `fq_codel_init()` + `fq_codel_change()` under tc's parameter names.
    /// As tc sends them: `limit`, `flows`, `quantum`, `target`, `interval` and
    /// `drop_batch` of 0 keep the default; `memory_limit` and `ce_threshold` are sent
    /// unless equal to tc's "unset" ~0U; `ce_threshold_selector` is "VALUE/MASK"
    /// (u8s, decimal or 0x hex), sent unless VALUE is 0xff. Kernel clamps and checks:
    /// `flows` in 1..=65536, `quantum = max(256, quantum)` and at most 1 MiB,
    /// `drop_batch = max(1, drop_batch)`, `memory_limit = min(2^31, memory_limit)`.
    pub fn from_params(mut params: Params, dev: &DevInfo) -> Result<Self, ParamError> {
        let invalid = |key: &str, message: String, expected: &str| ParamError::Invalid {
            key: key.into(),
            message,
            expected: expected.into(),
        };
        let limit = params.take_u32("limit", 0, 0, u32::MAX)?;
        let flows = params.take_u32("flows", 0, 0, u32::MAX)?;
        let quantum = params.take_u32("quantum", 0, 0, u32::MAX)?;
        let drop_batch = params.take_u32("drop_batch", 0, 0, u32::MAX)?;
        let memory_limit = params.take_size("memory_limit", u64::MAX, 0, u32::MAX as u64)?;
        let selector = params.take_str("ce_threshold_selector")?;
        let mtu = clamped_mtu(dev);
        let mut cp = CodelParams::init(mtu);
        cp.ecn = true;
        take_codel_params(&mut params, &mut cp)?;
        params.finish(FQ_CODEL_PARAMS)?;

        let mut cfg = FqCodelConfig {
            limit: FQ_CODEL_DEFAULT_LIMIT,
            flows: FQ_CODEL_DEFAULT_FLOWS,
            quantum: mtu,
            drop_batch: FQ_CODEL_DEFAULT_DROP_BATCH,
            memory_limit: FQ_CODEL_DEFAULT_MEMORY_LIMIT,
            params: cp,
        };
        if flows != 0 {
            if flows > FQ_CODEL_MAX_FLOWS {
                return Err(invalid(
                    "flows",
                    format!("{flows} flows is invalid"),
                    "1..=65536 (0 keeps the default 1024)",
                ));
            }
            cfg.flows = flows;
        }
        if quantum != 0 {
            let q = quantum.max(256);
            if q > FQ_CODEL_QUANTUM_MAX {
                return Err(invalid(
                    "quantum",
                    format!("{quantum} is an invalid quantum"),
                    "at most 1048576 bytes (values below 256 become 256; 0 keeps the device MTU)",
                ));
            }
            cfg.quantum = q;
        }
        if let Some(s) = selector {
            let parsed = s
                .split_once('/')
                .and_then(|(v, m)| Some((parse_u8_base0(v)?, parse_u8_base0(m)?)));
            let Some((value, mask)) = parsed else {
                return Err(invalid(
                    "ce_threshold_selector",
                    format!("\"{s}\" is not VALUE/MASK"),
                    "\"VALUE/MASK\" with two u8 values, e.g. \"0x01/0x03\" (ECT(1) in the ECN bits)",
                ));
            };
            if value != 0xff {
                cfg.params.ce_threshold_selector = value;
                cfg.params.ce_threshold_mask = mask;
            }
        }
        if limit != 0 {
            cfg.limit = limit;
        }
        if drop_batch != 0 {
            cfg.drop_batch = drop_batch.max(1);
        }
        if memory_limit != u64::MAX && memory_limit != u32::MAX as u64 {
            cfg.memory_limit = (memory_limit as u32).min(1 << 31);
        }
        Ok(Self::with_config(cfg, dev.hash_key))
    }

    /// Builds the qdisc from an already validated configuration (`fq_codel_init()`'s
    /// allocation of `flows` and `backlogs`). `flows` must be at least 1 and
    /// `quantum` positive; out-of-range values are clamped into 1..=65536 / 1..=1 MiB.
    pub fn with_config(mut cfg: FqCodelConfig, hash_key: u32) -> Self {
        cfg.flows = cfg.flows.clamp(1, FQ_CODEL_MAX_FLOWS);
        cfg.quantum = cfg.quantum.clamp(1, FQ_CODEL_QUANTUM_MAX);
        let n = cfg.flows as usize;
        FqCodel {
            limit: cfg.limit,
            flows_cnt: cfg.flows,
            quantum: cfg.quantum,
            drop_batch_size: cfg.drop_batch.max(1),
            memory_limit: cfg.memory_limit,
            cparams: cfg.params,
            cstats: CodelStats::default(),
            memory_usage: 0,
            drop_overmemory: 0,
            drop_overlimit: 0,
            new_flow_count: 0,
            flows: vec![Flow::default(); n],
            backlogs: vec![0; n],
            lists: FlowLists::default(),
            slab: SkbSlab::with_capacity((cfg.limit as usize).saturating_add(1).min(16_384)),
            hash_key,
            qlen: 0,
            backlog: 0,
            stats: QdiscStats::default(),
        }
    }

    pub fn config(&self) -> FqCodelConfig {
        FqCodelConfig {
            limit: self.limit,
            flows: self.flows_cnt,
            quantum: self.quantum,
            drop_batch: self.drop_batch_size,
            memory_limit: self.memory_limit,
            params: self.cparams,
        }
    }

    /// The flow (0-based bucket) `skb` is queued in: `fq_codel_hash()`.
    pub fn flow_index(&self, skb: &Skb) -> u32 {
        reciprocal_scale(flow_hash(skb.flow, self.hash_key), self.flows_cnt)
    }

    /// The shared CoDel counters (`q->cstats`).
    pub fn codel_stats(&self) -> &CodelStats {
        &self.cstats
    }

    /// Bytes of truesize held (`memory_usage`, tc's `memory_used`).
    pub fn memory_usage(&self) -> u64 {
        self.memory_usage
    }

    /// Flows on `new_flows` / `old_flows`.
    pub fn new_flows_len(&self) -> u32 {
        self.lists.new.len
    }

    pub fn old_flows_len(&self) -> u32 {
        self.lists.old.len
    }

    /// Class stats of flow `idx` (0-based) at time `now_ns`; `None` if out of range.
    pub fn flow_stats(&self, idx: u32, now_ns: u64) -> Option<FqCodelFlowStats> {
        let f = self.flows.get(idx as usize)?;
        Some(FqCodelFlowStats {
            deficit: f.deficit,
            ldelay: codel_time_to_us(f.cvars.ldelay),
            count: f.cvars.count,
            lastcount: f.cvars.lastcount,
            dropping: f.cvars.dropping,
            drop_next: drop_next_us(&f.cvars, now_ns),
            qlen: f.qlen,
            backlog: self.backlogs[idx as usize],
        })
    }

    /// The CoDel state of flow `idx`.
    pub fn flow_vars(&self, idx: u32) -> Option<&CodelVars> {
        self.flows.get(idx as usize).map(|f| &f.cvars)
    }

    /// `fq_codel_drop()`: drops up to `max_packets` from the head of the flow with the
    /// largest byte backlog, stopping once half of its backlog is gone; returns its
    /// index. If that flow holds no packets — only possible when every queued packet
    /// has length 0, where the kernel would dereference NULL — the first flow holding
    /// packets is used instead.
    fn fq_codel_drop(&mut self, max_packets: u32, drops: &mut Vec<u32>) -> u32 {
        let mut maxbacklog = 0u64;
        let mut idx = 0usize;
        for (i, &b) in self.backlogs.iter().enumerate() {
            if b > maxbacklog {
                maxbacklog = b;
                idx = i;
            }
        }
        if self.flows[idx].qlen == 0 {
            match self.flows.iter().position(|f| f.qlen > 0) {
                Some(i) => idx = i,
                None => return idx as u32,
            }
        }
        // Our goal is to drop half of this fat flow's backlog.
        let threshold = maxbacklog >> 1;
        let (mut len, mut mem, mut i) = (0u64, 0u64, 0u32);
        let flow = &mut self.flows[idx];
        while let Some(skb) = self.slab.pop_head(&mut flow.skbs) {
            flow.qlen -= 1;
            len += skb.len as u64;
            mem += skb.truesize as u64;
            drops.push(skb.id);
            i += 1;
            if !(i < max_packets && len < threshold) {
                break;
            }
        }
        // Tell codel to increase its signal strength also.
        flow.cvars.count = flow.cvars.count.wrapping_add(i);
        self.backlogs[idx] -= len;
        self.memory_usage -= mem;
        self.stats.drops += i as u64;
        self.backlog -= len;
        self.qlen -= i;
        idx as u32
    }
}

impl Qdisc for FqCodel {
    fn kind(&self) -> &'static str {
        "fq_codel"
    }

    /// `fq_codel_dump()` as iproute2's `fq_codel_print_opt()` prints it (times from
    /// `codel_time_to_us()`, as the kernel reports them).
    fn tc_options(&self) -> String {
        use super::codel::{codel_time_to_us, CODEL_DISABLED_THRESHOLD};
        use super::tc_print::{size, time64};
        let us = |t| codel_time_to_us(t) as u64 * 1000;
        let c = &self.cparams;
        let mut s = format!("limit {}p flows {} quantum {} target {} ", self.limit, self.flows_cnt, self.quantum, time64(us(c.target)));
        if c.ce_threshold != CODEL_DISABLED_THRESHOLD {
            s.push_str(&format!("ce_threshold {} ", time64(us(c.ce_threshold))));
        }
        s.push_str(&format!("interval {} memory_limit {} ", time64(us(c.interval)), size(self.memory_limit as u64)));
        if c.ecn {
            s.push_str("ecn ");
        }
        s.push_str(&format!("drop_batch {}", self.drop_batch_size));
        s
    }

    /// `fq_codel_enqueue()`.
    fn enqueue(&mut self, mut skb: Skb, now: u64, drops: &mut Vec<u32>) -> EnqueueVerdict {
        let idx = self.flow_index(&skb);
        skb.tstamp = now; // codel_set_enqueue_time()
        let (len, truesize) = (skb.len as u64, skb.truesize as u64);
        {
            let f = &mut self.flows[idx as usize];
            self.slab.push_tail(&mut f.skbs, skb);
            f.qlen += 1;
        }
        self.backlogs[idx as usize] += len;
        self.backlog += len;
        if self.flows[idx as usize].chain.list == ListId::None {
            self.lists.add_tail(&mut self.flows, idx, ListId::New);
            self.new_flow_count = self.new_flow_count.wrapping_add(1);
            self.flows[idx as usize].deficit = self.quantum as i32;
        }
        self.memory_usage += truesize;
        let memory_limited = self.memory_usage > self.memory_limit as u64;
        self.qlen += 1;
        if self.qlen <= self.limit && !memory_limited {
            return EnqueueVerdict::Success;
        }
        let prev_qlen = self.qlen;
        // fq_codel_drop() is expensive (a linear scan of backlogs[]), so drop a batch
        // of up to half the fat flow's backlog instead of a single packet.
        let ret = self.fq_codel_drop(self.drop_batch_size, drops);
        let dropped = prev_qlen - self.qlen;
        self.drop_overlimit = self.drop_overlimit.wrapping_add(dropped);
        if memory_limited {
            self.drop_overmemory = self.drop_overmemory.wrapping_add(dropped);
        }
        if ret == idx && dropped > 0 {
            EnqueueVerdict::Congested
        } else {
            EnqueueVerdict::Success
        }
    }

    /// `fq_codel_dequeue()`: `__fq_codel_dequeue()`, then `fq_codel_dequeue_drop()`
    /// reports CoDel's drops to the parents and zeroes `drop_count` / `drop_len`.
    fn dequeue(&mut self, now: u64, drops: &mut Vec<u32>) -> Option<Skb> {
        let skb = loop {
            let (which, idx) = if self.lists.new.head != NIL {
                (ListId::New, self.lists.new.head)
            } else if self.lists.old.head != NIL {
                (ListId::Old, self.lists.old.head)
            } else {
                break None;
            };
            let flow = &mut self.flows[idx as usize];
            if flow.deficit <= 0 {
                flow.deficit = flow.deficit.wrapping_add(self.quantum as i32);
                self.lists.move_tail(&mut self.flows, idx, ListId::Old);
                continue;
            }
            let skb = {
                let FqCodel { flows, slab, backlogs, qlen, backlog, memory_usage, stats, cparams, cstats, .. } =
                    &mut *self;
                let Flow { skbs, qlen: flow_qlen, cvars, .. } = &mut flows[idx as usize];
                let mut ctx = FlowCtx {
                    slab,
                    skbs,
                    flow_qlen,
                    flow_backlog: &mut backlogs[idx as usize],
                    qlen,
                    backlog,
                    memory_usage,
                    qdisc_drops: &mut stats.drops,
                    drops: &mut *drops,
                };
                codel_dequeue(&mut ctx, cparams, cvars, cstats, now)
            };
            match skb {
                None => {
                    // force a pass through old_flows to prevent starvation
                    if which == ListId::New && self.lists.old.head != NIL {
                        self.lists.move_tail(&mut self.flows, idx, ListId::Old);
                    } else {
                        self.lists.del_init(&mut self.flows, idx);
                    }
                }
                Some(s) => {
                    let f = &mut self.flows[idx as usize];
                    f.deficit = f.deficit.wrapping_sub(s.len as i32);
                    break Some(s);
                }
            }
        };
        self.cstats.drop_count = 0;
        self.cstats.drop_len = 0;
        skb
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

    /// `fq_codel_dump_stats()` under tc's names (tc prints `ce_mark`, `memory_used`
    /// and `drop_overmemory` only when non-zero; they are always listed here).
    fn xstats(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("maxpacket", self.cstats.maxpacket as u64),
            ("drop_overlimit", self.drop_overlimit as u64),
            ("new_flow_count", self.new_flow_count as u64),
            ("ecn_mark", self.cstats.ecn_mark as u64),
            ("ce_mark", self.cstats.ce_mark as u64),
            ("memory_used", self.memory_usage),
            ("drop_overmemory", self.drop_overmemory as u64),
            ("new_flows_len", self.lists.new.len as u64),
            ("old_flows_len", self.lists.old.len as u64),
        ]
    }

    /// `fq_codel_dump_stats()` as iproute2's `fq_codel_print_xstats()` prints it.
    fn tc_xstats(&self) -> String {
        let mut s = format!(
            "  maxpacket {} drop_overlimit {} new_flow_count {} ecn_mark {}",
            self.cstats.maxpacket, self.drop_overlimit, self.new_flow_count, self.cstats.ecn_mark
        );
        if self.cstats.ce_mark > 0 {
            s.push_str(&format!(" ce_mark {}", self.cstats.ce_mark));
        }
        if self.memory_usage > 0 {
            s.push_str(&format!(" memory_used {}", self.memory_usage));
        }
        if self.drop_overmemory > 0 {
            s.push_str(&format!(" drop_overmemory {}", self.drop_overmemory));
        }
        s.push_str(&format!("\n  new_flows_len {} old_flows_len {}", self.lists.new.len, self.lists.old.len));
        s
    }

    /// `fq_codel_init()`: `TCQ_F_CAN_BYPASS` when `limit >= 1`.
    fn can_bypass(&self) -> bool {
        self.limit >= 1
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u8_base0() {
        assert_eq!(parse_u8_base0("0x03"), Some(3));
        assert_eq!(parse_u8_base0("010"), Some(8));
        assert_eq!(parse_u8_base0("255"), Some(255));
        assert_eq!(parse_u8_base0("256"), None);
        assert_eq!(parse_u8_base0("0"), Some(0));
        assert_eq!(parse_u8_base0("x"), None);
    }
}
