//! The network softirqs: mirrors `raise_softirq()` and `__do_softirq()`'s handler order
//! in kernel/softirq.c, and `net_tx_action()` / `net_rx_action()` in net/core/dev.c.
//! When pending softirqs run (at the end of a task's unit, `local_bh_enable()`) and
//! when they are deferred to ksoftirqd is the executor's (`sched.rs`).

use crate::cpu::{Frame, PollPhase, Step, NET_RX_SOFTIRQ, NET_TX_SOFTIRQ, TASKLET_SOFTIRQ};

use crate::id::{CpuId, NapiId};
use crate::dev::sch::DEV_TX_WEIGHT;
use crate::world::World;
use std::collections::VecDeque;

/// `list_splice_tail_init()`: moves `src`'s entries to the back of `dst`. The lists hold
/// a few qdiscs or NAPIs, and are often empty: one by one is cheaper than
/// `VecDeque::append`'s general copy, which was 3% of a 100G run.
#[inline]
fn list_splice_tail_init<T>(src: &mut VecDeque<T>, dst: &mut VecDeque<T>) {
    while let Some(x) = src.pop_front() {
        dst.push_back(x);
    }
}

impl World {
    /// `raise_softirq()` on `cpu` (always the CPU executing the caller).
    pub fn raise_softirq(&mut self, cpu: CpuId, bit: u8) {
        self.sched.cpus[cpu].softirq_pending |= bit;
    }

    /// `__do_softirq()`: clear the pending bits and push their handlers (NET_TX runs
    /// before NET_RX, and NET_RX before TASKLET, by softirq number).
    pub fn push_softirqs(&mut self, cpu: CpuId) {
        let c = &mut self.sched.cpus[cpu];
        let pending = std::mem::take(&mut c.softirq_pending);
        if pending & TASKLET_SOFTIRQ != 0 {
            c.frames.push(Frame::SockWork { started: false });
        }
        if pending & NET_RX_SOFTIRQ != 0 {
            c.frames.push(Frame::NetRxAction { started: false, awaiting: None });
        }
        if pending & NET_TX_SOFTIRQ != 0 {
            c.frames.push(Frame::NetTxAction { started: false });
        }
    }

    /// `net_tx_action()`: splice the output queue, then `qdisc_run()` each qdisc.
    #[inline(never)]
    pub fn net_tx_action(&mut self, cpu: CpuId, started: &mut bool) -> Step {
        let c = &mut self.sched.cpus[cpu];
        if !*started {
            *started = true;
            list_splice_tail_init(&mut c.output_queue, &mut c.tx_local);
            return Step::Continue(self.cost(self.profile.costs.softirq_ns));
        }
        let Some(qi) = c.tx_local.pop_front() else { return Step::Done(0) };
        let q = &mut self.net.qdiscs[qi];
        q.sched = false;
        if q.running {
            // Another CPU runs it and will drain it (qdisc_run_begin() fails).
            return Step::Continue(0);
        }
        q.running = true;
        self.call(cpu, 0, Frame::QdiscRun { q: qi, quota: DEV_TX_WEIGHT })
    }

    /// `net_rx_action()`: poll the NAPIs on this CPU's list within the
    /// `netdev_budget` (300-packet) and `netdev_budget_usecs` (2-jiffy) budgets;
    /// leftovers and repolls go back on the list and re-raise NET_RX.
    #[inline(never)]
    pub fn net_rx_action(&mut self, cpu: CpuId, started: &mut bool, awaiting: &mut Option<NapiId>) -> Step {
        let ci = cpu;
        if !*started {
            *started = true;
            let host = &self.net.hosts[self.sched.cpus[ci].host];
            let (budget, budget_jiffies) = (host.netdev_budget, host.netdev_budget_jiffies);
            let time_limit = self.jiffies() + budget_jiffies;
            let c = &mut self.sched.cpus[ci];
            c.rx_budget = budget;
            c.rx_time_limit = time_limit;
            list_splice_tail_init(&mut c.poll_list, &mut c.rx_local);
            return Step::Continue(self.cost(self.profile.costs.softirq_ns));
        }
        if let Some(n) = awaiting.take() {
            let c = &mut self.sched.cpus[ci];
            c.rx_budget -= c.ret_work as i32;
            if c.ret_repoll {
                c.rx_repoll.push_back(n);
            }
            let c = &self.sched.cpus[ci];
            if c.rx_budget <= 0 || self.jiffies() >= c.rx_time_limit {
                self.sched.cpus[ci].time_squeeze += 1;
                return self.net_rx_action_end(cpu);
            }
        }
        match self.sched.cpus[ci].rx_local.pop_front() {
            Some(n) => {
                *awaiting = Some(n);
                self.call(cpu, 0, Frame::NapiPoll { phase: PollPhase::Start, flush_pending: false, napi: n, done: 0 })
            }
            None => self.net_rx_action_end(cpu),
        }
    }

    fn net_rx_action_end(&mut self, cpu: CpuId) -> Step {
        let c = &mut self.sched.cpus[cpu];
        // poll_list = unpolled ++ newly scheduled ++ repoll.
        let mut newly = std::mem::take(&mut c.poll_list);
        let mut list = std::mem::take(&mut c.rx_local);
        list_splice_tail_init(&mut newly, &mut list);
        list_splice_tail_init(&mut c.rx_repoll, &mut list);
        c.poll_list = list;
        c.rx_local = newly;
        if !c.poll_list.is_empty() {
            c.softirq_pending |= NET_RX_SOFTIRQ;
        }
        Step::Done(0)
    }
}
