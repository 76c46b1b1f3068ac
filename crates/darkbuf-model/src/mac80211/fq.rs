//! mac80211's shared flow queue: `struct fq` of include/net/fq.h with the functions of
//! include/net/fq_impl.h as the current kernel has them, and CoDel per flow as
//! net/mac80211/tx.c runs it (`fq_tin_dequeue_func()` -> `codel_dequeue()`).
//!
//! - One radio-wide array of `flows_cnt` (4096) flows. A packet's hash is scaled into
//!   it (`fq_flow_idx()`: `reciprocal_scale(skb_get_hash(skb), flows_cnt)`); a slot
//!   owned by another TXQ (`flow->tin != tin`) sends the packet to its own TXQ's
//!   `default_flow` and counts a collision (`fq_flow_classify()`).
//! - Each TXQ is a `fq_tin` (one per station and TID) with DRR++ over its flows
//!   (`new_flows`, `old_flows`, `quantum` bytes, `fq_tin_dequeue()`).
//! - `fq_tin_enqueue()`: over `limit` packets or `memory_limit` truesize bytes,
//!   `fq_find_fattest_flow()` (the flows in bitmap order, then the TXQs' default
//!   flows in `tin_backlog` order, strictly larger wins) loses
//!   `max(1, min(32, qlen / 2))` head packets (`fq_flow_drop()`), counted in its
//!   TXQ's and the radio's `overlimit` (and `overmemory`). The victim may belong to any
//!   station.
//! - CoDel per flow: `local->cvars[idx]` for a flow of the array, the TXQ's
//!   `def_cvars` for its default flow; the flow's own byte backlog is `*backlog`; the
//!   parameters are `local->cparams` (target 20 ms, interval 100 ms, ECN; `mtu` 0:
//!   `codel_params_init()` never sets it and `local` is zeroed) or, before 2025, the
//!   station's `sta->cparams` (the caller passes the ones that apply).

use crate::qdisc::codel::{codel_dequeue, CodelParams, CodelQueue, CodelStats, CodelVars};
use crate::Skb;
use std::collections::VecDeque;

/// `fq_init(fq, 4096)` in `ieee80211_txq_setup_flows()`.
pub const FQ_FLOWS_CNT: u32 = 4096;
/// `fq_init()`: `quantum = 300`.
pub const FQ_DEFAULT_QUANTUM: u32 = 300;
/// `fq_init()`: `limit = 8192` packets.
pub const FQ_DEFAULT_LIMIT: u32 = 8192;
/// `fq_init()`: `memory_limit = 16 << 20`; `ieee80211_txq_setup_flows()` lowers it to
/// `4 << 20` when no band supports VHT ("4 Mbytes is 64 max-size aggregates in 802.11n").
pub const FQ_DEFAULT_MEMORY_LIMIT: u32 = 16 << 20;
pub const FQ_NO_VHT_MEMORY_LIMIT: u32 = 4 << 20;

const NO_TIN: u32 = u32::MAX;

/// `struct fq_flow` with its CoDel state (`local->cvars[idx]` or `txqi->def_cvars`).
#[derive(Default)]
struct FqFlow {
    tin: Option<u32>,
    queue: VecDeque<Skb>,
    /// Bytes queued.
    backlog: u32,
    deficit: i32,
    /// `!list_empty(&flow->flowchain)`: on its TXQ's new_flows or old_flows.
    on_list: bool,
    cvars: CodelVars,
}

/// `struct fq_tin` plus the `txq_info` counters the debugfs `aqm` file prints.
#[derive(Default, Clone, Debug)]
pub struct FqTin {
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    pub backlog_bytes: u32,
    pub backlog_packets: u32,
    pub flows: u32,
    pub overlimit: u32,
    pub collisions: u32,
    pub tx_bytes: u32,
    pub tx_packets: u32,
    /// `txqi->cstats`: CoDel's drops and ECN marks in this TXQ.
    pub cstats: CodelStats,
    /// CoDel drops, cumulative (cstats.drop_count is per dequeue in the qdiscs; mac80211
    /// never zeroes it, so it is this).
    pub codel_drops: u64,
}

/// `struct fq`: the radio's flows and TXQs.
pub struct Fq {
    /// `flows_cnt` flows of the array, then one default flow per TXQ.
    flows: Vec<FqFlow>,
    pub tins: Vec<FqTin>,
    /// `fq->tin_backlog`: TXQs whose default flow has a backlog, most recent first.
    tin_backlog: Vec<u32>,
    pub flows_cnt: u32,
    pub quantum: u32,
    pub limit: u32,
    pub memory_limit: u32,
    /// Packets queued (all TXQs).
    pub backlog: u32,
    pub memory_usage: u32,
    pub overlimit: u32,
    pub overmemory: u32,
    pub collisions: u32,
}

/// The flow a [`Fq`] is dequeuing from, as CoDel's queue.
struct FlowQueue<'a> {
    fq: &'a mut Fq,
    flow: u32,
    drops: &'a mut Vec<Skb>,
}

impl CodelQueue for FlowQueue<'_> {
    fn dequeue_func(&mut self) -> Option<Skb> {
        self.fq.fq_flow_dequeue(self.flow)
    }
    fn backlog(&self) -> u64 {
        self.fq.flows[self.flow as usize].backlog as u64
    }
    fn drop_func(&mut self, skb: Skb) {
        self.drops.push(skb);
    }
}

impl Fq {
    /// `fq_init(fq, flows_cnt)` with `ntins` TXQs (`fq_tin_init()` each).
    pub fn new(flows_cnt: u32, ntins: u32, quantum: u32, limit: u32, memory_limit: u32) -> Fq {
        let flows_cnt = flows_cnt.max(1);
        let mut flows = Vec::with_capacity((flows_cnt + ntins) as usize);
        flows.resize_with((flows_cnt + ntins) as usize, FqFlow::default);
        Fq {
            flows,
            tins: vec![FqTin::default(); ntins as usize],
            tin_backlog: Vec::new(),
            flows_cnt,
            quantum,
            limit,
            memory_limit,
            backlog: 0,
            memory_usage: 0,
            overlimit: 0,
            overmemory: 0,
            collisions: 0,
        }
    }

    fn default_flow(&self, tin: u32) -> u32 {
        self.flows_cnt + tin
    }

    /// `fq_flow_idx()`: `reciprocal_scale(hash, flows_cnt)`.
    pub fn fq_flow_idx(&self, hash: u32) -> u32 {
        ((hash as u64 * self.flows_cnt as u64) >> 32) as u32
    }

    /// `__fq_adjust_removal()`.
    fn adjust_removal(&mut self, flow: u32, packets: u32, bytes: u32, truesize: u32) {
        let tin = self.flows[flow as usize].tin.expect("a flow with packets has its TXQ");
        let t = &mut self.tins[tin as usize];
        t.backlog_bytes -= bytes;
        t.backlog_packets -= packets;
        self.flows[flow as usize].backlog -= bytes;
        self.backlog -= packets;
        self.memory_usage -= truesize;
        if self.flows[flow as usize].backlog == 0 && flow == self.default_flow(tin) {
            self.tin_backlog.retain(|&x| x != tin);
        }
    }

    /// `fq_flow_dequeue()`.
    fn fq_flow_dequeue(&mut self, flow: u32) -> Option<Skb> {
        let skb = self.flows[flow as usize].queue.pop_front()?;
        self.adjust_removal(flow, 1, skb.len, skb.truesize);
        Some(skb)
    }

    /// `fq_flow_drop()`: `max(1, min(32, qlen / 2))` packets off the flow's head into
    /// `drops`. Returns how many.
    fn fq_flow_drop(&mut self, flow: u32, drops: &mut Vec<Skb>) -> u32 {
        let pending = 32.min(self.flows[flow as usize].queue.len() as u32 / 2);
        let (mut packets, mut bytes, mut truesize) = (0u32, 0u32, 0u32);
        loop {
            let Some(skb) = self.flows[flow as usize].queue.pop_front() else { break };
            packets += 1;
            bytes += skb.len;
            truesize += skb.truesize;
            drops.push(skb);
            if packets >= pending {
                break;
            }
        }
        if packets > 0 {
            self.adjust_removal(flow, packets, bytes, truesize);
        }
        packets
    }

    /// `fq_find_fattest_flow()`.
    fn fq_find_fattest_flow(&self) -> Option<u32> {
        let mut best = None;
        let mut len = 0;
        for i in 0..self.flows_cnt {
            let b = self.flows[i as usize].backlog;
            if b > len {
                best = Some(i);
                len = b;
            }
        }
        for &tin in &self.tin_backlog {
            let f = self.default_flow(tin);
            let b = self.flows[f as usize].backlog;
            if b > len {
                best = Some(f);
                len = b;
            }
        }
        best
    }

    /// `fq_tin_enqueue()` of `skb` with flow hash `hash` into TXQ `tin`; what the limits
    /// drop goes to `drops` (the caller frees them: `fq_skb_free_func()`).
    pub fn fq_tin_enqueue(&mut self, tin: u32, hash: u32, skb: Skb, drops: &mut Vec<Skb>) {
        let idx = self.fq_flow_idx(hash);
        // fq_flow_classify()
        let mut flow = idx;
        if self.flows[idx as usize].tin.is_some_and(|t| t != tin) {
            flow = self.default_flow(tin);
            self.tins[tin as usize].collisions += 1;
            self.collisions += 1;
        }
        let f = &mut self.flows[flow as usize];
        if f.tin.is_none() {
            self.tins[tin as usize].flows += 1;
        }
        if f.backlog == 0 && flow == self.default_flow(tin) && !self.tin_backlog.contains(&tin) {
            self.tin_backlog.insert(0, tin);
        }
        let f = &mut self.flows[flow as usize];
        f.tin = Some(tin);
        f.backlog += skb.len;
        let t = &mut self.tins[tin as usize];
        t.backlog_bytes += skb.len;
        t.backlog_packets += 1;
        self.memory_usage += skb.truesize;
        self.backlog += 1;
        let f = &mut self.flows[flow as usize];
        if !f.on_list {
            f.deficit = self.quantum as i32;
            f.on_list = true;
            self.tins[tin as usize].new_flows.push_back(flow);
        }
        self.flows[flow as usize].queue.push_back(skb);
        let mut oom = self.memory_usage > self.memory_limit;
        while self.backlog > self.limit || oom {
            let Some(fat) = self.fq_find_fattest_flow() else { return };
            let victim_tin = self.flows[fat as usize].tin.unwrap_or(NO_TIN);
            if self.fq_flow_drop(fat, drops) == 0 {
                return;
            }
            self.tins[victim_tin as usize].overlimit += 1;
            self.overlimit += 1;
            if oom {
                self.overmemory += 1;
                oom = self.memory_usage > self.memory_limit;
            }
        }
    }

    /// `fq_tin_dequeue()` of TXQ `tin` with mac80211's `fq_tin_dequeue_func()`:
    /// DRR++ over the TXQ's flows, each flow's head through CoDel with `params` at
    /// `now_ns`. CoDel's drops go to `drops`.
    pub fn fq_tin_dequeue(&mut self, tin: u32, params: &CodelParams, now_ns: u64, drops: &mut Vec<Skb>) -> Option<Skb> {
        loop {
            let t = &self.tins[tin as usize];
            let (flow, from_new) = match (t.new_flows.front(), t.old_flows.front()) {
                (Some(&f), _) => (f, true),
                (None, Some(&f)) => (f, false),
                (None, None) => return None,
            };
            if self.flows[flow as usize].deficit <= 0 {
                self.flows[flow as usize].deficit += self.quantum as i32;
                self.list_move_tail_old(tin, from_new);
                continue;
            }
            let mut cvars = self.flows[flow as usize].cvars;
            let mut cstats = self.tins[tin as usize].cstats;
            let before = cstats.drop_count;
            let skb = {
                let mut q = FlowQueue { fq: self, flow, drops };
                codel_dequeue(&mut q, params, &mut cvars, &mut cstats, now_ns)
            };
            self.flows[flow as usize].cvars = cvars;
            let t = &mut self.tins[tin as usize];
            t.codel_drops += cstats.drop_count.wrapping_sub(before) as u64;
            t.cstats = cstats;
            let Some(skb) = skb else {
                // force a pass through old_flows to prevent starvation
                if from_new && !self.tins[tin as usize].old_flows.is_empty() {
                    self.list_move_tail_old(tin, true);
                } else {
                    let t = &mut self.tins[tin as usize];
                    if from_new {
                        t.new_flows.pop_front();
                    } else {
                        t.old_flows.pop_front();
                    }
                    let f = &mut self.flows[flow as usize];
                    f.on_list = false;
                    f.tin = None;
                }
                continue;
            };
            self.flows[flow as usize].deficit -= skb.len as i32;
            let t = &mut self.tins[tin as usize];
            t.tx_bytes = t.tx_bytes.wrapping_add(skb.len);
            t.tx_packets = t.tx_packets.wrapping_add(1);
            return Some(skb);
        }
    }

    /// The head flow of `tin`'s new (or old) list to the tail of its old list.
    fn list_move_tail_old(&mut self, tin: u32, from_new: bool) {
        let t = &mut self.tins[tin as usize];
        let f = if from_new { t.new_flows.pop_front() } else { t.old_flows.pop_front() };
        t.old_flows.extend(f);
    }

    /// Packets queued in TXQ `tin`.
    pub fn tin_packets(&self, tin: u32) -> u32 {
        self.tins[tin as usize].backlog_packets
    }

    /// The flows on TXQ `tin`'s new_flows list (the debugfs `aqm` file's new-flows).
    pub fn tin_new_flows(&self, tin: u32) -> usize {
        self.tins[tin as usize].new_flows.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skb(id: u32, len: u32) -> Skb {
        Skb { id, len, truesize: len + 768, ..Skb::default() }
    }

    fn params() -> CodelParams {
        CodelParams { mtu: 0, ecn: true, ..CodelParams::init(0) }
    }

    /// A flow slot taken by another TXQ sends the packet to the TXQ's default flow and
    /// counts a collision (`fq_flow_classify()`).
    #[test]
    fn a_slot_owned_by_another_txq_is_a_collision() {
        let mut fq = Fq::new(FQ_FLOWS_CNT, 2, FQ_DEFAULT_QUANTUM, FQ_DEFAULT_LIMIT, FQ_DEFAULT_MEMORY_LIMIT);
        let mut drops = Vec::new();
        fq.fq_tin_enqueue(0, 7 << 20, skb(1, 1500), &mut drops);
        fq.fq_tin_enqueue(1, 7 << 20, skb(2, 1500), &mut drops);
        assert_eq!((fq.collisions, fq.tins[1].collisions, fq.tins[0].collisions), (1, 1, 0));
        assert_eq!(fq.tins[1].flows, 1);
        assert_eq!(fq.fq_tin_dequeue(1, &params(), 0, &mut drops).map(|s| s.id), Some(2));
        assert_eq!(fq.fq_tin_dequeue(0, &params(), 0, &mut drops).map(|s| s.id), Some(1));
        assert!(drops.is_empty());
    }

    /// Over the packet limit the fattest flow of the radio, whichever TXQ it belongs to,
    /// loses min(32, qlen/2) (at least 1) head packets.
    #[test]
    fn over_the_limit_the_fattest_flow_loses_half_its_packets() {
        let mut fq = Fq::new(FQ_FLOWS_CNT, 2, FQ_DEFAULT_QUANTUM, 10, FQ_DEFAULT_MEMORY_LIMIT);
        let mut drops = Vec::new();
        for i in 0..8 {
            fq.fq_tin_enqueue(0, 1 << 20, skb(i, 1500), &mut drops);
        }
        for i in 8..11 {
            fq.fq_tin_enqueue(1, 3 << 28, skb(i, 100), &mut drops);
        }
        // 11 > 10: TXQ 0's flow (12000 bytes) loses 8 / 2 = 4 packets, ids 0..4.
        assert_eq!(drops.iter().map(|s| s.id).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
        assert_eq!((fq.backlog, fq.overlimit, fq.tins[0].overlimit, fq.tins[1].overlimit), (7, 1, 1, 0));
        assert_eq!(fq.tins[0].backlog_packets, 4);
    }

    /// DRR++ within a TXQ: a new flow goes first, each flow gets `quantum` bytes a round.
    #[test]
    fn drr_within_a_txq_alternates_flows_by_quantum() {
        let mut fq = Fq::new(FQ_FLOWS_CNT, 1, 300, FQ_DEFAULT_LIMIT, FQ_DEFAULT_MEMORY_LIMIT);
        let mut drops = Vec::new();
        for i in 0..3 {
            fq.fq_tin_enqueue(0, 1 << 20, skb(i, 1500), &mut drops);
        }
        for i in 10..13 {
            fq.fq_tin_enqueue(0, 3 << 30, skb(i, 1500), &mut drops);
        }
        let order: Vec<u32> = std::iter::from_fn(|| fq.fq_tin_dequeue(0, &params(), 0, &mut drops).map(|s| s.id)).collect();
        // A: deficit 300 -> -1200; B the same; then each needs 5 refills of 300 to turn
        // positive again (-1200 + 5*300 = 300), alternating.
        assert_eq!(order, vec![0, 10, 1, 11, 2, 12]);
        assert_eq!((fq.backlog, fq.memory_usage), (0, 0));
    }
}
