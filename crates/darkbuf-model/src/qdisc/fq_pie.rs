//! fq_pie: mirrors net/sched/sch_fq_pie.c (6.x): fq_codel's flow queueing with a PIE
//! controller per flow ([`super::pie`]) instead of CoDel.
//!
//! - Classification (`fq_pie_classify()`): `reciprocal_scale(skb_get_hash(skb),
//!   flows_cnt)` with the qdisc's hash key, as fq_codel; `skb->priority` classes and
//!   tc filters are not modelled (the model's qdiscs have no handle).
//! - Enqueue (`fq_pie_qdisc_enqueue()`): over `limit` packets the arrival is dropped
//!   (`overlimit`). Otherwise the flow's PIE decides on the flow's own byte backlog
//!   ([`super::pie::pie_drop_early`]); with `ecn`, an ECN-capable packet is marked
//!   instead while the flow's probability is at most `ecn_prob` percent. A drop
//!   returns NET_XMIT_CN. Memory: `memory_usage > memory_limit + truesize` only counts
//!   `overmemory`, it drops nothing (as in the kernel). A flow on no list joins the
//!   tail of `new_flows` with `deficit = quantum`.
//! - Dequeue (`fq_pie_qdisc_dequeue()`): fq_codel's DRR over `new_flows` then
//!   `old_flows`; the packet served goes through the flow's
//!   [`super::pie::pie_process_dequeue`] with the flow's backlog after it. No drops at
//!   dequeue.
//! - The timer (`fq_pie_timer()`): updates the probability of up to 2048 flows per
//!   run, every flow in turn; after the last it re-arms for `tupdate` jiffies, before
//!   it for the next jiffy. Run lazily, as pie's ([`super::pie`] module doc).
//!
//! Defaults (`fq_pie_init()`): limit 10240 packets, 1024 flows, quantum =
//! `psched_mtu()`, memory_limit 32 MiB, ecn_prob 10, and PIE's: target 15 ms,
//! tupdate 15 ms, alpha 2, beta 20, no ECN.

use super::flow_list::{FlowLists, Link, ListId, Linked};
use super::pie::{
    check_hz, pie_calculate_probability, pie_drop_early, pie_process_dequeue, pie_rng, psched_ns2ticks,
    take_pie_params, tc_pie_flags, tc_pie_params, AdaptTimer, PieParams, PieStats, PieVars, MAX_PROB,
};
use super::skb_list::{SkbList, SkbSlab, NIL};
use super::tc_print::size;
use super::{DevInfo, EnqueueVerdict, Qdisc, QdiscStats};
use crate::params::{ParamError, Params};
use crate::skb::{flow_hash, reciprocal_scale};
use crate::Skb;
use rand_chacha::ChaCha8Rng;

/// Default `sch->limit`.
pub const FQ_PIE_DEFAULT_LIMIT: u32 = 10 * 1024;
/// Default `flows_cnt`.
pub const FQ_PIE_DEFAULT_FLOWS: u32 = 1024;
/// Largest `flows` `fq_pie_change()` accepts.
pub const FQ_PIE_MAX_FLOWS: u32 = 65536;
/// `fq_pie_q_range`: the quantum netlink accepts.
pub const FQ_PIE_QUANTUM_MAX: u32 = 1 << 20;
/// Default `memory_limit`: `SZ_32M`.
pub const FQ_PIE_DEFAULT_MEMORY_LIMIT: u32 = 32 << 20;
/// Flows whose probability one timer run updates ("Limit this expensive loop").
const FQ_PIE_FLOWS_PER_RUN: u32 = 2048;

const FQ_PIE_PARAMS: &[&str] = &[
    "limit", "flows", "target", "tupdate", "alpha", "beta", "quantum", "memory_limit", "ecn_prob", "ecn", "bytemode",
    "dq_rate_estimator",
];

/// `struct fq_pie_flow`.
#[derive(Clone, Copy, Debug)]
struct Flow {
    vars: PieVars,
    deficit: i32,
    backlog: u32,
    qlen: u32,
    chain: Link,
    skbs: SkbList,
}

impl Linked for Flow {
    fn link(&mut self) -> &mut Link {
        &mut self.chain
    }
}

/// The configuration `fq_pie_change()` commits (what `tc qdisc show` prints).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FqPieConfig {
    /// `sch->limit`, packets.
    pub limit: u32,
    pub flows: u32,
    /// DRR quantum, bytes.
    pub quantum: u32,
    /// Bytes of truesize before `overmemory` counts.
    pub memory_limit: u32,
    /// Percent: ECN marks while the flow's probability is at most this.
    pub ecn_prob: u32,
    pub params: PieParams,
}

/// The `fq_pie` qdisc (`struct fq_pie_sched_data`).
pub struct FqPie {
    cfg: FqPieConfig,
    flows: Vec<Flow>,
    lists: FlowLists,
    slab: SkbSlab,
    pstats: PieStats,
    new_flow_count: u32,
    memory_usage: u32,
    overmemory: u32,
    flows_cursor: u32,
    timer: AdaptTimer,
    hz: u32,
    mtu: u32,
    hash_key: u32,
    rng: ChaCha8Rng,
    qlen: u32,
    backlog: u64,
    stats: QdiscStats,
}

impl FqPie {
    /// Mirrors `fq_pie_init()` + `fq_pie_change()` under tc's parameter names. As tc
    /// sends them, `limit`, `flows`, `quantum`, `memory_limit` and `ecn_prob` of 0 keep
    /// the default. Refused as tc or the kernel refuses them: `flows` above 65536,
    /// `quantum` above 1 MiB (netlink's range), `ecn_prob` of 100 or more.
    pub fn from_params(mut params: Params, dev: &DevInfo) -> Result<Self, ParamError> {
        check_hz(dev)?;
        let limit = params.take_u32("limit", 0, 0, u32::MAX)?;
        let flows = params.take_u32("flows", 0, 0, FQ_PIE_MAX_FLOWS)?;
        let quantum = params.take_size("quantum", 0, 0, FQ_PIE_QUANTUM_MAX as u64)? as u32;
        let memory_limit = params.take_size("memory_limit", 0, 0, u32::MAX as u64)? as u32;
        let ecn_prob = params.take_u32("ecn_prob", 0, 0, 99)?;
        let mut p = PieParams::init(dev.hz);
        take_pie_params(&mut params, &mut p, dev.hz)?;
        params.finish(FQ_PIE_PARAMS)?;
        let mut cfg = FqPieConfig {
            limit: FQ_PIE_DEFAULT_LIMIT,
            flows: FQ_PIE_DEFAULT_FLOWS,
            quantum: dev.mtu_l2,
            memory_limit: FQ_PIE_DEFAULT_MEMORY_LIMIT,
            ecn_prob: 10,
            params: p,
        };
        for (v, field) in [(limit, &mut cfg.limit), (flows, &mut cfg.flows), (quantum, &mut cfg.quantum)] {
            if v != 0 {
                *field = v;
            }
        }
        for (v, field) in [(memory_limit, &mut cfg.memory_limit), (ecn_prob, &mut cfg.ecn_prob)] {
            if v != 0 {
                *field = v;
            }
        }
        cfg.params.limit = cfg.limit;
        Ok(Self::with_config(cfg, dev))
    }

    /// Builds the qdisc from a configuration; `flows` is clamped into 1..=65536 and
    /// `quantum` into 1..=1 MiB.
    pub fn with_config(mut cfg: FqPieConfig, dev: &DevInfo) -> Self {
        cfg.flows = cfg.flows.clamp(1, FQ_PIE_MAX_FLOWS);
        cfg.quantum = cfg.quantum.clamp(1, FQ_PIE_QUANTUM_MAX);
        let flow = Flow { vars: PieVars::default(), deficit: 0, backlog: 0, qlen: 0, chain: Link::UNLINKED, skbs: SkbList::EMPTY };
        FqPie {
            flows: vec![flow; cfg.flows as usize],
            lists: FlowLists::default(),
            slab: SkbSlab::with_capacity((cfg.limit as usize).saturating_add(1).min(16_384)),
            pstats: PieStats::default(),
            new_flow_count: 0,
            memory_usage: 0,
            overmemory: 0,
            flows_cursor: 0,
            timer: AdaptTimer::armed_at_init(dev.hz.max(1)),
            hz: dev.hz.max(1),
            mtu: dev.mtu_l2,
            hash_key: dev.hash_key,
            rng: pie_rng(dev),
            qlen: 0,
            backlog: 0,
            stats: QdiscStats::default(),
            cfg,
        }
    }

    pub fn config(&self) -> FqPieConfig {
        self.cfg
    }

    /// The flow (0-based) `skb` is queued in: `fq_pie_hash()`.
    pub fn flow_index(&self, skb: &Skb) -> u32 {
        reciprocal_scale(flow_hash(skb.flow, self.hash_key), self.cfg.flows)
    }

    /// Flow `idx`'s PIE state.
    pub fn flow_vars(&self, idx: u32) -> Option<&PieVars> {
        self.flows.get(idx as usize).map(|f| &f.vars)
    }

    /// Flow `idx`'s byte backlog.
    pub fn flow_backlog(&self, idx: u32) -> Option<u32> {
        self.flows.get(idx as usize).map(|f| f.backlog)
    }

    pub fn pie_stats(&self) -> &PieStats {
        &self.pstats
    }

    /// `fq_pie_timer()` for every run due by `now`.
    #[inline]
    fn catch_up(&mut self, now: u64) {
        while self.timer.next_ns <= now {
            self.fq_pie_timer();
        }
    }

    fn fq_pie_timer(&mut self) {
        let max_cnt = (self.cfg.flows - self.flows_cursor).min(FQ_PIE_FLOWS_PER_RUN);
        let idle = PieVars::default();
        for _ in 0..max_cnt {
            let f = &mut self.flows[self.flows_cursor as usize];
            // An empty flow in its initial state is a fixed point of the update (a
            // test checks it): skipping it changes nothing, and most of the 1024 are.
            if !(f.backlog == 0 && f.vars == idle) {
                pie_calculate_probability(&self.cfg.params, &mut f.vars, f.backlog);
            }
            self.flows_cursor += 1;
        }
        let tupdate = self.cfg.params.tupdate as u64;
        let mut next = 0;
        if self.flows_cursor >= self.cfg.flows {
            self.flows_cursor = 0;
            next = tupdate;
        }
        self.timer.rearm((tupdate != 0).then_some(next));
    }
}

impl Qdisc for FqPie {
    fn kind(&self) -> &'static str {
        "fq_pie"
    }

    /// `fq_pie_dump()` as iproute2's `fq_pie_print_opt()` prints it.
    fn tc_options(&self) -> String {
        let c = &self.cfg;
        format!(
            "limit {}p flows {} {} quantum {} memory_limit {} ecn_prob {}{}",
            c.limit,
            c.flows,
            tc_pie_params(&c.params, self.hz),
            size(c.quantum as u64),
            size(c.memory_limit as u64),
            c.ecn_prob,
            tc_pie_flags(&c.params)
        )
    }

    /// `fq_pie_qdisc_enqueue()`.
    fn enqueue(&mut self, mut skb: Skb, now: u64, drops: &mut Vec<u32>) -> EnqueueVerdict {
        self.catch_up(now);
        let idx = self.flow_index(&skb) as usize;
        // Would this packet exceed the memory limit? (Counted, not enforced.)
        let memory_limited = self.memory_usage > self.cfg.memory_limit.wrapping_add(skb.truesize);
        if self.qlen >= self.cfg.limit {
            self.pstats.overlimit = self.pstats.overlimit.wrapping_add(1);
        } else {
            if memory_limited {
                self.overmemory = self.overmemory.wrapping_add(1);
            }
            let p = &self.cfg.params;
            let flow = &mut self.flows[idx];
            let mut enqueue = false;
            if !pie_drop_early(p, &mut flow.vars, flow.backlog, skb.len, self.mtu, &mut self.rng) {
                enqueue = true;
            } else if p.ecn && flow.vars.prob <= (MAX_PROB / 100) * self.cfg.ecn_prob as u64 && skb.set_ce() {
                self.pstats.ecn_mark = self.pstats.ecn_mark.wrapping_add(1);
                enqueue = true;
            }
            if enqueue {
                if !p.dq_rate_estimator {
                    skb.tstamp = now; // pie_set_enqueue_time()
                }
                let len = skb.len;
                self.pstats.packets_in = self.pstats.packets_in.wrapping_add(1);
                self.memory_usage = self.memory_usage.wrapping_add(skb.truesize);
                self.backlog += len as u64;
                self.qlen += 1;
                self.slab.push_tail(&mut flow.skbs, skb);
                if flow.chain.list == ListId::None {
                    self.lists.add_tail(&mut self.flows, idx as u32, ListId::New);
                    self.new_flow_count = self.new_flow_count.wrapping_add(1);
                    let flow = &mut self.flows[idx];
                    flow.deficit = self.cfg.quantum as i32;
                    flow.qlen = 0;
                    flow.backlog = 0;
                }
                let flow = &mut self.flows[idx];
                flow.qlen += 1;
                flow.backlog = flow.backlog.wrapping_add(len);
                return EnqueueVerdict::Success;
            }
        }
        self.pstats.dropped = self.pstats.dropped.wrapping_add(1);
        self.flows[idx].vars.accu_prob = 0;
        self.stats.drops += 1;
        drops.push(skb.id);
        EnqueueVerdict::Congested
    }

    /// `fq_pie_qdisc_dequeue()`.
    fn dequeue(&mut self, now: u64, _drops: &mut Vec<u32>) -> Option<Skb> {
        self.catch_up(now);
        loop {
            let (which, idx) = if self.lists.new.head != NIL {
                (ListId::New, self.lists.new.head)
            } else if self.lists.old.head != NIL {
                (ListId::Old, self.lists.old.head)
            } else {
                return None;
            };
            let flow = &mut self.flows[idx as usize];
            // The flow has used up its credit.
            if flow.deficit <= 0 {
                flow.deficit = flow.deficit.wrapping_add(self.cfg.quantum as i32);
                self.lists.move_tail(&mut self.flows, idx, ListId::Old);
                continue;
            }
            let Some(skb) = self.slab.pop_head(&mut flow.skbs) else {
                // Force a pass through old_flows to prevent starvation.
                if which == ListId::New && self.lists.old.head != NIL {
                    self.lists.move_tail(&mut self.flows, idx, ListId::Old);
                } else {
                    self.lists.del_init(&mut self.flows, idx);
                }
                continue;
            };
            self.backlog -= skb.len as u64;
            self.qlen -= 1;
            flow.qlen -= 1;
            flow.deficit = flow.deficit.wrapping_sub(skb.len as i32);
            flow.backlog = flow.backlog.wrapping_sub(skb.len);
            self.memory_usage = self.memory_usage.wrapping_sub(skb.truesize);
            pie_process_dequeue(
                skb.len,
                psched_ns2ticks(skb.tstamp),
                &self.cfg.params,
                &mut flow.vars,
                flow.backlog,
                psched_ns2ticks(now),
            );
            return Some(skb);
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

    /// `fq_pie_dump_stats()` under tc's names.
    fn xstats(&self) -> Vec<(&'static str, u64)> {
        let p = &self.pstats;
        vec![
            ("pkts_in", p.packets_in as u64),
            ("overlimit", p.overlimit as u64),
            ("overmemory", self.overmemory as u64),
            ("dropped", p.dropped as u64),
            ("ecn_mark", p.ecn_mark as u64),
            ("new_flow_count", self.new_flow_count as u64),
            ("new_flows_len", self.lists.new.len as u64),
            ("old_flows_len", self.lists.old.len as u64),
            ("memory_used", self.memory_usage as u64),
        ]
    }

    /// As iproute2's `fq_pie_print_xstats()` prints it.
    fn tc_xstats(&self) -> String {
        let p = &self.pstats;
        format!(
            "  pkts_in {} overlimit {} overmemory {} dropped {} ecn_mark {}\n  new_flow_count {} new_flows_len {} old_flows_len {} memory_used {}",
            p.packets_in,
            p.overlimit,
            self.overmemory,
            p.dropped,
            p.ecn_mark,
            self.new_flow_count,
            self.lists.new.len,
            self.lists.old.len,
            self.memory_usage
        )
    }

    fn run_timers(&mut self, now: u64) {
        self.catch_up(now);
    }
}
