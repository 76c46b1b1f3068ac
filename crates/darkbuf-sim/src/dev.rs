//! The generic qdisc layer around the algorithms: mirrors `__dev_queue_xmit()` /
//! `__dev_xmit_skb()` / `net_tx_action()` in net/core/dev.c and `__qdisc_run()` /
//! `qdisc_restart()` / `dequeue_skb()` / `sch_direct_xmit()` / `dev_requeue_skb()` in
//! net/sched/sch_generic.c.
//!
//! Requeues happen exactly where the kernel counts them: a driver that returns
//! NETDEV_TX_BUSY, a TX queue found stopped between dequeue and the TX lock, or
//! DRV_XOFF set in the middle of a bulk. A root qdisc over several TX queues (not
//! TCQ_F_ONETXQUEUE) dequeues without looking at the queue state and bulks up to 8
//! more packets (`try_bulk_dequeue_skb_slow`), so a BQL-stopped queue requeues the
//! whole bulk; a ONETXQUEUE qdisc (single-queue device, mq child) checks first and
//! bulks by the BQL budget (`try_bulk_dequeue_skb`).

use crate::arena::Origin;
use crate::cpu::{Frame, Step, NET_TX_SOFTIRQ};
use crate::veth::NetdevTx;
use crate::world::World;
use darkbuf_model::qdisc::{AnyQdisc, EnqueueVerdict, Qdisc};
use darkbuf_model::Skb;
use std::collections::VecDeque;

/// `dev_tx_weight` = `weight_p` (64) * `dev_weight_tx_bias` (1).
pub const DEV_TX_WEIGHT: i32 = 64;
/// The most packets one `qdisc_restart()` hands to the driver: 1 + 8 slow-bulk, or the
/// BQL budget for ONETXQUEUE qdiscs (capped here as 0345552a653c caps it, at the quota).
pub const MAX_BULK: usize = DEV_TX_WEIGHT as usize;

/// `QdiscInst::gso_head_txq` with nothing requeued.
const NO_TXQ: u16 = u16::MAX;

/// One `struct Qdisc` as the run loop sees it.
pub struct QdiscInst {
    pub q: Option<AnyQdisc>,
    /// `q->gso_skb`: requeued packets, retried first.
    pub gso_skb: VecDeque<Skb>,
    /// The TX queue of `gso_skb`'s head (`NO_TXQ` when empty): the run loop's first
    /// check reads it on every send under backpressure, one load instead of a chase
    /// through the deque.
    gso_head_txq: u16,
    /// `q->skb_bad_txq`: a slow-bulk packet for another TX queue.
    pub bad_txq: VecDeque<Skb>,
    /// `qdisc_run_begin()` succeeded somewhere (the RUNNING state).
    pub running: bool,
    /// `__QDISC_STATE_SCHED`.
    pub sched: bool,
    /// `TCQ_F_ONETXQUEUE`, with the one TX queue it feeds.
    pub onetxqueue: bool,
    pub dev_queue: Option<u16>,
    pub sent_pkts: u64,
    pub sent_bytes: u64,
    pub requeues: u64,
    /// Counters at the start of the measured window.
    pub base: [u64; 4],
    /// The algorithm's xstats at the start of the measured window.
    pub xbase: Vec<(&'static str, u64)>,
    /// `q->watchdog`: when the armed hrtimer fires, and on which CPU it was armed.
    pub watchdog_at: Option<u64>,
    pub watchdog_cpu: u16,
}

impl QdiscInst {
    pub fn new(q: Option<AnyQdisc>, onetxqueue: bool, dev_queue: Option<u16>) -> Self {
        QdiscInst {
            q,
            gso_skb: VecDeque::with_capacity(MAX_BULK),
            gso_head_txq: NO_TXQ,
            bad_txq: VecDeque::with_capacity(1),
            running: false,
            sched: false,
            onetxqueue,
            dev_queue,
            sent_pkts: 0,
            sent_bytes: 0,
            requeues: 0,
            base: [0; 4],
            xbase: Vec::new(),
            watchdog_at: None,
            watchdog_cpu: 0,
        }
    }

    /// `qdisc_qlen()` including the requeue slot, as `tc -s` shows it.
    pub fn qlen(&self) -> u32 {
        self.q.as_ref().map_or(0, |q| q.qlen()) + (self.gso_skb.len() + self.bad_txq.len()) as u32
    }

    pub fn drops(&self) -> u64 {
        self.q.as_ref().map_or(0, |q| q.stats().drops)
    }

    pub fn overlimits(&self) -> u64 {
        self.q.as_ref().map_or(0, |q| q.stats().overlimits)
    }
}


impl World {
    /// `netdev_core_pick_tx()`: XPS sends all local traffic to one queue; otherwise the
    /// flow hash picks (`skb_tx_hash`), fixed per flow.
    pub fn pick_tx(&self, flow: u32) -> u16 {
        match self.cfg.xps_txq {
            // tun picks its queue itself (tun_select_queue: flow hash), never by XPS.
            Some(q) if !self.cfg.tun => q,
            _ => (darkbuf_model::skb::flow_hash(flow, 0x5eed) % self.cfg.tx_queues as u32) as u16,
        }
    }

    /// `__dev_queue_xmit()` for `skb` (already in the arena as `skb.id`) from a task on
    /// `cpu`. Returns the frame to run next (the qdisc run loop), if any, and the cost of
    /// what was done inline.
    pub fn dev_queue_xmit(&mut self, cpu: u16, skb: Skb) -> (u64, Option<Frame>) {
        let id = skb.id;
        let txq = skb.queue_mapping;
        let Some(qi) = self.txq_qdisc[txq as usize] else {
            // noqueue: straight to the driver if the queue runs; a busy driver drops.
            let cost = self.cost(self.profile.costs.xmit_ns);
            if self.txqs[txq as usize].xmit_stopped() || self.ndo_start_xmit(cpu, skb, false) == NetdevTx::Busy {
                self.metrics_noqueue_drop();
                self.drop_pkt(id);
            }
            return (cost, None);
        };
        let now = self.now;
        let q = &mut self.qdiscs[qi as usize];
        let can_bypass = q.q.as_ref().expect("qdisc").can_bypass();
        if can_bypass && q.qlen() == 0 && !q.running {
            // TCQ_F_CAN_BYPASS: an empty idle qdisc hands the packet straight to the driver.
            q.running = true;
            q.sent_pkts += 1;
            q.sent_bytes += skb.len as u64;
            let mut list = std::mem::take(&mut self.bulk);
            list.clear();
            // Stamped like an enqueued packet: if the driver pushes it back, it joins
            // the backlog from now.
            list.push(Skb { tstamp: now, ..skb });
            let cost = self.cost(self.profile.costs.xmit_ns);
            let ok = self.sch_direct_xmit(cpu, qi, &list);
            self.bulk = list;
            if ok {
                return (cost, Some(Frame::QdiscRun { q: qi, quota: DEV_TX_WEIGHT }));
            }
            self.qdiscs[qi as usize].running = false;
            return (cost, None);
        }
        let mut stamped = skb;
        stamped.tstamp = now;
        self.drops.clear();
        self.metrics.qdisc_backlog.enter(now);
        // The verdict matters to the sender only (NET_XMIT_CN/DROP); drops are freed below.
        let _verdict: EnqueueVerdict = q.q.as_mut().expect("qdisc").enqueue(stamped, now, &mut self.drops);
        self.free_drops();
        let q = &mut self.qdiscs[qi as usize];
        if !q.running {
            q.running = true;
            return (0, Some(Frame::QdiscRun { q: qi, quota: DEV_TX_WEIGHT }));
        }
        (0, None)
    }

    /// Frees every packet the qdisc put in `self.drops`: each leaves the backlog.
    pub fn free_drops(&mut self) {
        for i in 0..self.drops.len() {
            let id = self.drops[i].id;
            self.metrics.qdisc_backlog.leave(self.now);
            self.drop_pkt(id);
        }
        self.drops.clear();
    }

    /// One `qdisc_restart()` inside `__qdisc_run()`.
    ///
    /// The common case under backpressure is checked here, inline in the callers: the
    /// requeued head waits for its stopped queue, so `dequeue_skb()` returns nothing and
    /// the run ends. The rest is out of line.
    #[inline(always)]
    pub fn qdisc_run_step(&mut self, cpu: u16, qi: u16, quota: &mut i32) -> Step {
        let head_txq = self.qdiscs[qi as usize].gso_head_txq;
        if head_txq != NO_TXQ && self.txqs[head_txq as usize].xmit_frozen_or_stopped() {
            self.qdiscs[qi as usize].running = false;
            return Step::Done(0);
        }
        self.qdisc_restart(cpu, qi, quota)
    }

    /// `qdisc_restart()` past the stopped-head check: dequeue and hand to the driver.
    #[inline(never)]
    fn qdisc_restart(&mut self, cpu: u16, qi: u16, quota: &mut i32) -> Step {
        // The skb chain handed to the driver lives in a buffer reused across steps.
        let mut list = std::mem::take(&mut self.bulk);
        list.clear();
        let from_queue = self.dequeue_skb(cpu, qi, &mut list);
        let n = list.len();
        if n == 0 {
            self.bulk = list;
            self.qdiscs[qi as usize].running = false;
            return Step::Done(0);
        }
        let c = &self.profile.costs;
        let ns = n as f64 * (c.xmit_ns + if from_queue { c.dequeue_ns } else { 0.0 });
        let cost = self.cost(ns);
        let ok = self.sch_direct_xmit(cpu, qi, &list);
        self.bulk = list;
        if !ok {
            self.qdiscs[qi as usize].running = false;
            return Step::Done(cost);
        }
        *quota -= n as i32;
        if *quota <= 0 {
            self.netif_schedule(cpu, qi);
            self.qdiscs[qi as usize].running = false;
            return Step::Done(cost);
        }
        Step::Continue(cost)
    }

    /// `dequeue_skb()`: the requeue slot first, else the algorithm, with bulking.
    /// Returns whether the packets came from the algorithm. The caller has already
    /// returned if the requeued head's queue is stopped (`qdisc_run_step`'s first check).
    fn dequeue_skb(&mut self, cpu: u16, qi: u16, list: &mut Vec<Skb>) -> bool {
        let now = self.now;
        let q = &mut self.qdiscs[qi as usize];
        if let Some(head) = q.gso_skb.pop_front() {
            q.gso_head_txq = q.gso_skb.front().map_or(NO_TXQ, |s| s.queue_mapping);
            // Requeued skbs were validated already; no bulking from gso_skb.
            list.push(head);
            self.metrics.qdisc_backlog.leave(now);
            return false;
        }
        if q.onetxqueue {
            let txq = q.dev_queue.expect("ONETXQUEUE qdisc has its queue") as usize;
            if self.txqs[txq].xmit_frozen_or_stopped() {
                return false;
            }
        }
        // qdisc_dequeue_skb_bad_txq(): only if its queue runs.
        let mut first = None;
        if let Some(head) = q.bad_txq.front() {
            if !self.txqs[head.queue_mapping as usize].xmit_frozen_or_stopped() {
                first = q.bad_txq.pop_front();
                self.metrics.qdisc_backlog.leave(now);
            }
        }
        self.drops.clear();
        let algo = q.q.as_mut().expect("qdisc");
        let first = match first {
            Some(s) => Some(s),
            None => {
                let s = algo.dequeue(now, &mut self.drops);
                if let Some(s) = s {
                    q.sent_pkts += 1;
                    q.sent_bytes += s.len as u64;
                    self.metrics.qdisc_backlog.leave(now);
                }
                s
            }
        };
        let Some(first) = first else {
            // A shaper or pacer holding packets back arms its watchdog
            // (qdisc_watchdog_schedule_ns()) for when the next one may go.
            let wake = if algo.qlen() > 0 { algo.next_wakeup() } else { None };
            self.free_drops();
            if let Some(at) = wake {
                self.qdisc_watchdog_schedule(cpu, qi, at);
            }
            return true;
        };
        list.push(first);
        if q.onetxqueue {
            // try_bulk_dequeue_skb(): as many as the BQL budget allows (none without BQL:
            // dql_avail() is 0 when the driver never charges).
            let txq = q.dev_queue.expect("queue") as usize;
            let avail = self.txqs[txq].dql.as_ref().map_or(0, |d| d.avail());
            let unit_packet = self.cfg.bql_unit_packet;
            let mut bytelimit = avail - bql_units(unit_packet, &first) as i32;
            while bytelimit > 0 && list.len() < MAX_BULK {
                let Some(s) = algo.dequeue(now, &mut self.drops) else { break };
                q.sent_pkts += 1;
                q.sent_bytes += s.len as u64;
                self.metrics.qdisc_backlog.leave(now);
                bytelimit -= bql_units(unit_packet, &s) as i32;
                list.push(s);
            }
        } else {
            // try_bulk_dequeue_skb_slow(): up to 8 more for the same TX queue.
            let mapping = first.queue_mapping;
            let mut cnt = 0;
            while cnt < 8 {
                let Some(s) = algo.dequeue(now, &mut self.drops) else { break };
                q.sent_pkts += 1;
                q.sent_bytes += s.len as u64;
                if s.queue_mapping != mapping {
                    // Out of the algorithm, but still held by the qdisc.
                    q.bad_txq.push_back(s);
                    break;
                }
                self.metrics.qdisc_backlog.leave(now);
                list.push(s);
                cnt += 1;
            }
        }
        self.free_drops();
        true
    }

    /// `sch_direct_xmit()`: hands the list to the driver under the TX lock; whatever the
    /// driver does not take is requeued. Returns false to stop `__qdisc_run()`.
    pub fn sch_direct_xmit(&mut self, cpu: u16, qi: u16, list: &[Skb]) -> bool {
        let txq = list[0].queue_mapping as usize;
        if self.txqs[txq].xmit_frozen_or_stopped() {
            self.dev_requeue_skb(cpu, qi, list);
            return false;
        }
        // dev_hard_start_xmit(): xmit_more for all but the last; stop on BUSY, or when
        // the driver stopped the queue (DRV_XOFF only) with packets left.
        for i in 0..list.len() {
            let more = i + 1 < list.len();
            if self.ndo_start_xmit(cpu, list[i], more) == NetdevTx::Busy {
                self.dev_requeue_skb(cpu, qi, &list[i..]);
                return false;
            }
            if more && self.txqs[txq].tx_queue_stopped() {
                self.dev_requeue_skb(cpu, qi, &list[i + 1..]);
                return false;
            }
        }
        true
    }

    /// `ndo_start_xmit()` of the device: veth or tun.
    #[inline]
    fn ndo_start_xmit(&mut self, cpu: u16, skb: Skb, more: bool) -> NetdevTx {
        if self.cfg.tun {
            self.tun_net_xmit(skb)
        } else {
            self.veth_xmit(cpu, skb, more)
        }
    }

    /// `dev_requeue_skb()`: every skb of the list goes back to `gso_skb`, each counted.
    fn dev_requeue_skb(&mut self, cpu: u16, qi: u16, skbs: &[Skb]) {
        let q = &mut self.qdiscs[qi as usize];
        if let (true, Some(first)) = (q.gso_skb.is_empty(), skbs.first()) {
            q.gso_head_txq = first.queue_mapping;
        }
        for s in skbs {
            q.gso_skb.push_back(*s);
            q.requeues += 1;
            // Handed to the driver at this instant and pushed back: in the backlog all along.
            self.metrics.qdisc_backlog.enter(self.now);
        }
        self.netif_schedule(cpu, qi);
    }

    /// `__netif_schedule()`: queue the qdisc on THIS CPU's output_queue and raise
    /// NET_TX there, unless it is already scheduled.
    pub fn netif_schedule(&mut self, cpu: u16, qi: u16) {
        let q = &mut self.qdiscs[qi as usize];
        if !q.sched {
            q.sched = true;
            self.cpus[cpu as usize].output_queue.push_back(qi);
            self.raise_softirq(cpu, NET_TX_SOFTIRQ);
        }
    }

    /// `qdisc_watchdog_schedule_range_ns()`: (re)arm the qdisc's hrtimer on this CPU;
    /// re-arming for the time already set is a no-op, as the kernel skips it.
    fn qdisc_watchdog_schedule(&mut self, cpu: u16, qi: u16, at: u64) {
        let at = at.max(self.now);
        let q = &mut self.qdiscs[qi as usize];
        if q.watchdog_at == Some(at) {
            return;
        }
        q.watchdog_at = Some(at);
        q.watchdog_cpu = cpu;
        self.events.push(at, crate::event::Event::QdiscWatchdog(qi));
    }

    /// `qdisc_watchdog()`: the hrtimer fired; `__netif_schedule()` the qdisc on the CPU
    /// the timer was armed on (its TX softirq runs when that CPU next can). A timer
    /// re-armed or cancelled since this event was queued is stale and ignored.
    pub fn qdisc_watchdog(&mut self, qi: u16) {
        let q = &mut self.qdiscs[qi as usize];
        if q.watchdog_at != Some(self.now) {
            return;
        }
        q.watchdog_at = None;
        let cpu = q.watchdog_cpu;
        self.netif_schedule(cpu, qi);
        self.cpu_kick(cpu, 0);
    }

    /// `net_tx_action()`: splice the output queue, then `qdisc_run()` each qdisc.
    #[inline(never)]
    pub fn net_tx_action(&mut self, cpu: u16, started: &mut bool) -> Step {
        let c = &mut self.cpus[cpu as usize];
        if !*started {
            *started = true;
            let mut oq = std::mem::take(&mut c.output_queue);
            c.tx_local.append(&mut oq);
            c.output_queue = oq;
            return Step::Continue(self.cost(self.profile.costs.softirq_ns));
        }
        let Some(qi) = c.tx_local.pop_front() else { return Step::Done(0) };
        let q = &mut self.qdiscs[qi as usize];
        q.sched = false;
        if q.running {
            // Another CPU runs it and will drain it (qdisc_run_begin() fails).
            return Step::Continue(0);
        }
        q.running = true;
        Step::Call(0, Frame::QdiscRun { q: qi, quota: DEV_TX_WEIGHT })
    }

    /// The BQL charge of one packet: veth's one unit, or its length.
    pub fn bql_charge(&self, skb: &Skb) -> u32 {
        bql_units(self.cfg.bql_unit_packet, skb)
    }

    fn metrics_noqueue_drop(&mut self) {
        if self.measuring() {
            self.metrics.noqueue_drops += 1;
        }
    }

    /// A packet is dropped anywhere: release its socket charge and its slot.
    pub fn drop_pkt(&mut self, id: u32) {
        let info = *self.pkts.get(id);
        if info.owns_wmem {
            self.sock_wfree(id);
        }
        self.dropped += 1;
        if info.t_send >= self.cfg.start {
            if info.origin == Origin::Ping {
                self.metrics.probes_lost += 1;
                self.metrics.lost_at.push(info.t_send);
            }
        }
        self.pkts.free(id);
    }
}

fn bql_units(unit_packet: bool, skb: &Skb) -> u32 {
    if unit_packet {
        1
    } else {
        skb.len
    }
}
