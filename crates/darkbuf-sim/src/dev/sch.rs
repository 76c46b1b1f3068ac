//! The generic qdisc layer around the algorithms: mirrors `__qdisc_run()` /
//! `qdisc_restart()` / `dequeue_skb()` / `sch_direct_xmit()` / `dev_requeue_skb()` /
//! `__netif_schedule()` and the qdisc watchdog in net/sched/sch_generic.c and
//! net/sched/sch_api.c.
//!
//! Requeues happen exactly where the kernel counts them: a driver that returns
//! NETDEV_TX_BUSY, a TX queue found stopped between dequeue and the TX lock, or
//! DRV_XOFF set in the middle of a bulk. A root qdisc over several TX queues (not
//! TCQ_F_ONETXQUEUE) dequeues without looking at the queue state and bulks up to 8
//! more packets (`try_bulk_dequeue_skb_slow`), so a BQL-stopped queue requeues the
//! whole bulk; a ONETXQUEUE qdisc (single-queue device, mq child) checks first and
//! bulks by the BQL budget (`try_bulk_dequeue_skb`).

use crate::cpu::{Step, NET_TX_SOFTIRQ};

use crate::id::{CpuId, DevId, QdiscId};
use crate::dev::NetdevTx;
use crate::event::Event;
use crate::world::{Net, World};
use darkbuf_model::qdisc::{AnyQdisc, Qdisc};
use darkbuf_model::Skb;
use std::collections::VecDeque;

/// `dev_tx_weight` = `weight_p` (64) * `dev_weight_tx_bias` (1).
pub const DEV_TX_WEIGHT: i32 = 64;
/// The most packets one `qdisc_restart()` hands to the driver: 1 + 8 slow-bulk, or the
/// BQL budget for ONETXQUEUE qdiscs (capped here as 0345552a653c caps it, at the quota).
pub const MAX_BULK: usize = DEV_TX_WEIGHT as usize;

/// `QdiscInst::gso_head_txq` with nothing requeued.
const NO_TXQ: u16 = u16::MAX;

/// The counters `tc -s qdisc` prints for a qdisc, at one instant.
#[derive(Clone, Copy, Debug, Default)]
pub struct TcCounters {
    pub sent_pkts: u64,
    pub drops: u64,
    pub requeues: u64,
    pub overlimits: u64,
}

/// One `struct Qdisc` as the run loop sees it.
pub struct QdiscInst {
    pub q: Option<AnyQdisc>,
    /// The device whose TX queues it feeds.
    pub dev: DevId,
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
    /// `TCQ_F_CAN_BYPASS` in `sch->flags`, set once from the algorithm's
    /// `can_bypass()` as its `init()` sets it. A flag beside `running`, as in
    /// `struct Qdisc`, so that `__dev_xmit_skb()` tests it with one load: asking the
    /// algorithm went through its enum's tag and a jump table on every send.
    pub can_bypass: bool,
    /// `__QDISC_STATE_SCHED`.
    pub sched: bool,
    /// `TCQ_F_ONETXQUEUE`, with the one TX queue it feeds.
    pub onetxqueue: bool,
    pub dev_queue: Option<u16>,
    /// `bstats` (kept by the run loop, not the algorithm: packets count a GSO skb's
    /// segments, as `bstats_update()` does) and `qstats.requeues`.
    pub sent_pkts: u64,
    pub sent_bytes: u64,
    pub requeues: u64,
    /// Counters at the start of the measured window.
    pub base: TcCounters,
    /// The algorithm's xstats at the start of the measured window.
    pub xbase: Vec<(&'static str, u64)>,
    /// `q->watchdog`: when the armed hrtimer fires, and on which CPU it was armed.
    pub watchdog_at: Option<u64>,
    pub watchdog_cpu: CpuId,
    /// The algorithm's own work per packet beyond a FIFO's, ns (the profile's
    /// `fq_pkt_ns` for fq, else 0), charged at dequeue for its enqueue and dequeue.
    pub pkt_ns: f64,
    /// On the measured device (`tc -s qdisc show dev eth0`): its packets count in
    /// `qdisc.backlog_avg_pkts`, the peer's (ACKs, echo replies) do not.
    pub measured: bool,
    /// The algorithm asks for work of the stack (`Qdisc::has_stack_ops()`: a netem in
    /// the tree, cake's split-gso), set once at construction, so the hot path tests one
    /// flag.
    pub stack_ops: bool,
    /// A netem is in the tree (`Qdisc::has_netem()`).
    pub netem: bool,
}

impl QdiscInst {
    /// The measured window starts: `tc -s`'s counters and the xstats now are its base.
    pub fn start_window(&mut self) {
        self.base = self.tc_counters();
        self.xbase = self.q.as_ref().map_or_else(Vec::new, darkbuf_model::qdisc::Qdisc::xstats);
    }

    pub fn new(q: Option<AnyQdisc>, dev: DevId, onetxqueue: bool, dev_queue: Option<u16>) -> Self {
        QdiscInst {
            can_bypass: q.as_ref().is_some_and(|q| q.can_bypass()),
            stack_ops: q.as_ref().is_some_and(|q| q.has_stack_ops()),
            netem: q.as_ref().is_some_and(|q| q.has_netem()),
            q,
            dev,
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
            base: TcCounters::default(),
            xbase: Vec::new(),
            watchdog_at: None,
            watchdog_cpu: CpuId(0),
            pkt_ns: 0.0,
            measured: false,
        }
    }

    /// `qdisc_qlen()` including the requeue slot, as `tc -s` shows it.
    pub fn qlen(&self) -> u32 {
        self.q.as_ref().map_or(0, |q| q.qlen()) + (self.gso_skb.len() + self.bad_txq.len()) as u32
    }

    /// The `tc -s qdisc` counters now.
    pub fn tc_counters(&self) -> TcCounters {
        let stats = self.q.as_ref().map(|q| q.stats());
        TcCounters {
            sent_pkts: self.sent_pkts,
            drops: stats.map_or(0, |s| s.drops),
            requeues: self.requeues + stats.map_or(0, |s| s.requeues),
            overlimits: stats.map_or(0, |s| s.overlimits),
        }
    }
}

impl Net {
    /// `dequeue_skb()` returns nothing: the requeued head's TX queue is stopped.
    #[inline(always)]
    pub(crate) fn requeued_head_waits(&self, qi: QdiscId) -> bool {
        let q = &self.qdiscs[qi];
        let head_txq = q.gso_head_txq;
        head_txq != NO_TXQ && self.devs[q.dev].txqs[head_txq as usize].xmit_frozen_or_stopped()
    }
}

impl World {
    /// Frees every packet a qdisc put in `self.scratch.drops`: each leaves the backlog, which
    /// `measured` (the qdisc's `QdiscInst::measured`) says whether to count. Inlined,
    /// with the flag from the caller: it runs after every enqueue, and out of line,
    /// looking the qdisc up again, it cost +1.5% instructions on the nrules=0
    /// No-BQL run.
    #[inline]
    pub fn free_drops(&mut self, measured: bool) {
        for i in 0..self.scratch.drops.len() {
            let id = self.scratch.drops[i];
            self.metrics.qdisc_leave(measured, self.now);
            self.kfree_skb(id);
        }
        self.scratch.drops.clear();
    }

    /// One `qdisc_restart()` inside `__qdisc_run()`.
    ///
    /// The common case under backpressure is checked here, inline in the callers: the
    /// requeued head waits for its stopped queue, so `dequeue_skb()` returns nothing and
    /// the run ends. The rest is out of line.
    #[inline(always)]
    pub fn qdisc_run_step(&mut self, cpu: CpuId, qi: QdiscId, quota: &mut i32) -> Step {
        if self.net.requeued_head_waits(qi) {
            self.net.qdiscs[qi].running = false;
            return Step::Done(0);
        }
        self.qdisc_restart(cpu, qi, quota)
    }


    /// A run of qdisc `qi` would end at its first `qdisc_restart()`, with nothing
    /// dequeued and no time taken: `dequeue_skb()` finds the requeued head waiting for
    /// its stopped queue, or, with nothing requeued, the one queue of a
    /// `TCQ_F_ONETXQUEUE` qdisc stopped (a NIC driver stops its queue before the ring
    /// is full, so nothing is requeued).
    pub(crate) fn qdisc_run_ends_at_once(&self, qi: QdiscId) -> bool {
        let q = &self.net.qdiscs[qi];
        if !q.gso_skb.is_empty() {
            return self.net.requeued_head_waits(qi);
        }
        match q.dev_queue {
            Some(txq) if q.onetxqueue => self.net.devs[q.dev].txqs[txq as usize].xmit_frozen_or_stopped(),
            _ => false,
        }
    }

    /// `qdisc_restart()` past the stopped-head check: dequeue and hand to the driver.
    #[inline(never)]
    fn qdisc_restart(&mut self, cpu: CpuId, qi: QdiscId, quota: &mut i32) -> Step {
        // The skb chain handed to the driver lives in a buffer reused across steps.
        let mut list = std::mem::take(&mut self.scratch.bulk);
        list.clear();
        let from_queue = self.dequeue_skb(cpu, qi, &mut list);
        let n = list.len();
        if n == 0 {
            self.scratch.bulk = list;
            self.net.qdiscs[qi].running = false;
            return Step::Done(0);
        }
        let dev = self.net.qdiscs[qi].dev;
        if from_queue && !self.net.devs[dev].tso {
            // sch_direct_xmit(..., validate = true): GSO segmentation for a driver
            // without TSO. Requeued skbs were validated when first dequeued.
            self.validate_xmit_skb_list(dev, &mut list);
        }
        let q = &self.net.qdiscs[qi];
        let xmit_ns = self.net.devs[q.dev].xmit_ns;
        let dequeue_ns = if from_queue { self.profile.costs.dequeue_ns + q.pkt_ns } else { 0.0 };
        // The driver's work is per segment (the added term is 0.0 with TSO).
        let ns = n as f64 * (xmit_ns + dequeue_ns) + (list.len() - n) as f64 * xmit_ns;
        let cost = self.cost(ns);
        let ok = self.sch_direct_xmit(cpu, qi, &list);
        self.scratch.bulk = list;
        if !ok {
            self.net.qdiscs[qi].running = false;
            return Step::Done(cost);
        }
        *quota -= n as i32;
        if *quota <= 0 {
            self.netif_schedule(cpu, qi);
            self.net.qdiscs[qi].running = false;
            return Step::Done(cost);
        }
        Step::Continue(cost)
    }

    /// `dequeue_skb()`: the requeue slot first, else the algorithm, with bulking.
    /// Returns whether the packets came from the algorithm. The caller has already
    /// returned if the requeued head's queue is stopped (`qdisc_run_step`'s first check).
    fn dequeue_skb(&mut self, cpu: CpuId, qi: QdiscId, list: &mut Vec<Skb>) -> bool {
        let now = self.now;
        let q = &mut self.net.qdiscs[qi];
        let measured = q.measured;
        if let Some(head) = q.gso_skb.pop_front() {
            q.gso_head_txq = q.gso_skb.front().map_or(NO_TXQ, |s| s.queue_mapping);
            // Requeued skbs were validated already; no bulking from gso_skb.
            list.push(head);
            self.metrics.qdisc_leave(measured, now);
            return false;
        }
        let dev = &self.net.devs[q.dev];
        if q.onetxqueue {
            let txq = q.dev_queue.expect("ONETXQUEUE qdisc has its queue") as usize;
            if dev.txqs[txq].xmit_frozen_or_stopped() {
                return false;
            }
        }
        // qdisc_dequeue_skb_bad_txq(): only if its queue runs.
        let mut first = None;
        if let Some(head) = q.bad_txq.front() {
            if !dev.txqs[head.queue_mapping as usize].xmit_frozen_or_stopped() {
                first = q.bad_txq.pop_front();
                self.metrics.qdisc_leave(measured, now);
            }
        }
        self.scratch.drops.clear();
        let algo = q.q.as_mut().expect("qdisc");
        let first = match first {
            Some(s) => Some(s),
            None => {
                let s = algo.dequeue(now, &mut self.scratch.drops);
                if let Some(s) = s {
                    q.sent_pkts += s.segs() as u64;
                    q.sent_bytes += s.len as u64;
                    self.metrics.qdisc_leave(measured, now);
                }
                s
            }
        };
        let Some(first) = first else {
            // A shaper or pacer holding packets back arms its watchdog
            // (qdisc_watchdog_schedule_ns()) for when the next one may go.
            let wake = if algo.qlen() > 0 { algo.next_wakeup() } else { None };
            self.free_drops(measured);
            if let Some(at) = wake {
                self.qdisc_watchdog_schedule(cpu, qi, at);
            }
            if self.net.qdiscs[qi].stack_ops {
                self.qdisc_stack_ops(qi);
            }
            return true;
        };
        list.push(first);
        if q.onetxqueue {
            // try_bulk_dequeue_skb(): as many as the BQL budget allows (none without BQL:
            // dql_avail() is 0 when the driver never charges).
            let txq = q.dev_queue.expect("queue") as usize;
            let avail = dev.txqs[txq].dql.as_ref().map_or(0, |d| d.avail());
            let mut bytelimit = avail - dev.bql_units(first.len) as i32;
            while bytelimit > 0 && list.len() < MAX_BULK {
                let Some(s) = algo.dequeue(now, &mut self.scratch.drops) else { break };
                q.sent_pkts += s.segs() as u64;
                q.sent_bytes += s.len as u64;
                self.metrics.qdisc_leave(measured, now);
                bytelimit -= dev.bql_units(s.len) as i32;
                list.push(s);
            }
        } else {
            // try_bulk_dequeue_skb_slow(): up to 8 more for the same TX queue.
            let mapping = first.queue_mapping;
            let mut cnt = 0;
            while cnt < 8 {
                let Some(s) = algo.dequeue(now, &mut self.scratch.drops) else { break };
                q.sent_pkts += s.segs() as u64;
                q.sent_bytes += s.len as u64;
                if s.queue_mapping != mapping {
                    // Out of the algorithm, but still held by the qdisc.
                    q.bad_txq.push_back(s);
                    break;
                }
                self.metrics.qdisc_leave(measured, now);
                list.push(s);
                cnt += 1;
            }
        }
        self.free_drops(measured);
        if self.net.qdiscs[qi].stack_ops {
            self.qdisc_stack_ops(qi);
        }
        true
    }

    /// `sch_direct_xmit()`: hands the list to the driver under the TX lock; whatever the
    /// driver does not take is requeued. Returns false to stop `__qdisc_run()`.
    pub fn sch_direct_xmit(&mut self, cpu: CpuId, qi: QdiscId, list: &[Skb]) -> bool {
        let dev = self.net.qdiscs[qi].dev;
        let txq = list[0].queue_mapping as usize;
        if self.net.devs[dev].txqs[txq].xmit_frozen_or_stopped() {
            self.dev_requeue_skb(cpu, qi, list);
            return false;
        }
        // dev_hard_start_xmit(): xmit_more for all but the last; stop on BUSY, or when
        // the driver stopped the queue (DRV_XOFF only) with packets left.
        for i in 0..list.len() {
            let more = i + 1 < list.len();
            if self.ndo_start_xmit(cpu, dev, list[i], more) == NetdevTx::Busy {
                self.dev_requeue_skb(cpu, qi, &list[i..]);
                return false;
            }
            if more && self.net.devs[dev].txqs[txq].tx_queue_stopped() {
                self.dev_requeue_skb(cpu, qi, &list[i + 1..]);
                return false;
            }
        }
        true
    }

    /// `dev_requeue_skb()`: every skb of the list goes back to `gso_skb`, each counted.
    fn dev_requeue_skb(&mut self, cpu: CpuId, qi: QdiscId, skbs: &[Skb]) {
        let q = &mut self.net.qdiscs[qi];
        if let (true, Some(first)) = (q.gso_skb.is_empty(), skbs.first()) {
            q.gso_head_txq = first.queue_mapping;
        }
        for s in skbs {
            q.gso_skb.push_back(*s);
            q.requeues += 1;
            // Handed to the driver at this instant and pushed back: in the backlog all along.
            self.metrics.qdisc_enter(q.measured, self.now);
        }
        self.netif_schedule(cpu, qi);
    }

    /// `__netif_schedule()`: queue the qdisc on THIS CPU's output_queue and raise
    /// NET_TX there, unless it is already scheduled.
    pub fn netif_schedule(&mut self, cpu: CpuId, qi: QdiscId) {
        let q = &mut self.net.qdiscs[qi];
        if !q.sched {
            q.sched = true;
            self.sched.cpus[cpu].output_queue.push_back(qi);
            self.raise_softirq(cpu, NET_TX_SOFTIRQ);
        }
    }

    /// `qdisc_watchdog_schedule_range_ns()`: (re)arm the qdisc's hrtimer on this CPU;
    /// re-arming for the time already set is a no-op, as the kernel skips it.
    fn qdisc_watchdog_schedule(&mut self, cpu: CpuId, qi: QdiscId, at: u64) {
        let at = at.max(self.now);
        let q = &mut self.net.qdiscs[qi];
        if q.watchdog_at == Some(at) {
            return;
        }
        q.watchdog_at = Some(at);
        q.watchdog_cpu = cpu;
        self.events.push(at, Event::QdiscWatchdog(qi));
    }

    /// `qdisc_watchdog()`: the hrtimer fired; `__netif_schedule()` the qdisc on the CPU
    /// the timer was armed on (its TX softirq runs when that CPU next can). A timer
    /// re-armed or cancelled since this event was queued is stale and ignored.
    pub fn qdisc_watchdog(&mut self, qi: QdiscId) {
        let q = &mut self.net.qdiscs[qi];
        if q.watchdog_at != Some(self.now) {
            return;
        }
        q.watchdog_at = None;
        let cpu = q.watchdog_cpu;
        self.netif_schedule(cpu, qi);
        // An idle CPU takes the timer interrupt and leaves idle first (profile
        // `hrtimer_ns`; 0 draws nothing from the noise, so profiles without it run as before).
        let h = self.profile.costs.hrtimer_ns;
        let late = if h > 0.0 { self.cost(h) } else { 0 };
        self.cpu_kick(cpu, late);
    }
}
