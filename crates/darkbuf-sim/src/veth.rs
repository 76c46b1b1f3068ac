//! veth and its NAPI consumer: mirrors `veth_xmit()`, `veth_xdp_rx()`,
//! `__veth_xdp_flush()`, `veth_poll()` and `veth_xdp_rcv()` in drivers/net/veth.c (with
//! the >= 6.16 qdisc backpressure, dc82a33297fc + 5442a9da6978, and the veth BQL
//! series), and the NAPI core it relies on: `napi_schedule_prep()`,
//! `__napi_schedule()`, `napi_complete_done()`, `__napi_poll()` and `net_rx_action()`
//! in net/core/dev.c.

use crate::arena::Origin;
use crate::cpu::{Frame, PollPhase, Step, Task, NET_RX_SOFTIRQ};
use crate::metrics::ProbeSample;
use crate::world::World;
use darkbuf_model::ptr_ring::PtrRing;
use darkbuf_model::Skb;
use darkbuf_scenario::Completion;

/// What `ndo_start_xmit` returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetdevTx {
    Ok,
    Busy,
}

/// `SMP_CACHE_BYTES` on x86_64: sets ptr_ring's consumer batch (16 pointers).
const SMP_CACHE_BYTES: usize = 64;

/// One peer RX queue (`struct veth_rq`) with its NAPI instance.
pub struct VethRq {
    /// `rq->xdp_ring`.
    pub ring: PtrRing,
    /// `rq->rx_notify_masked`.
    pub rx_notify_masked: bool,
    /// NAPI_STATE_SCHED / NAPI_STATE_MISSED.
    pub napi_sched: bool,
    pub napi_missed: bool,
    /// The CPU whose kthread polls it (threaded NAPI).
    pub cpu: u16,
    /// GRO's `rx_list`: packets waiting to go up the stack together.
    pub gro_list: Vec<u32>,
    /// Per-poll BQL completion: charged entries consumed in this poll.
    pub bql_poll_count: u32,
    /// tx-usecs coalescing state kept across polls: window start and pending count.
    pub bql_time: u64,
    pub bql_pending: u32,
}

impl VethRq {
    pub fn new(ring_size: usize, cpu: u16, gro_batch: usize) -> Self {
        VethRq {
            ring: PtrRing::new(ring_size, SMP_CACHE_BYTES),
            rx_notify_masked: false,
            napi_sched: false,
            napi_missed: false,
            cpu,
            gro_list: Vec::with_capacity(gro_batch.max(64)),
            bql_poll_count: 0,
            bql_time: 0,
            bql_pending: 0,
        }
    }
}

impl World {
    /// `veth_xmit()` of `skb` on the sender's TX queue `skb.queue_mapping`, into the
    /// peer's RX queue of the same index.
    pub fn veth_xmit(&mut self, cpu: u16, skb: Skb, _xmit_more: bool) -> NetdevTx {
        let rqi = skb.queue_mapping as usize;
        let txq = skb.queue_mapping as usize;
        let id = skb.id;
        let has_qdisc = self.txq_qdisc[txq].is_some();
        let jiffies = self.jiffies();
        // veth_xdp_rx(): produce under the producer lock, or report a full ring.
        if self.rqs[rqi].ring.full() {
            if self.cfg.backpressure && has_qdisc {
                // Stop the queue and push the skb back to the qdisc (NETDEV_TX_BUSY), then
                // always flush so the consumer cannot miss the stop (5442a9da6978).
                self.txqs[txq].tx_stop_queue(jiffies);
                self.veth_xdp_flush(cpu, rqi as u16);
                return NetdevTx::Busy;
            }
            // Stock, or no qdisc to push back to: the skb is dropped (tx_dropped).
            if self.measuring() {
                self.metrics.ring_drops += 1;
            }
            self.drop_pkt(id);
            return NetdevTx::Ok;
        }
        // BQL charge only when a qdisc is attached (!qdisc_txq_has_no_queue), before
        // producing, one unit per packet for veth; the ring pointer is tagged charged.
        let charged = self.cfg.bql && has_qdisc;
        if charged {
            let units = self.bql_charge(&skb);
            if let Err(e) = self.txqs[txq].netdev_tx_sent_queue(units, jiffies) {
                self.finding("dql_queued object too large", format!("{e:?}"));
            }
            self.bql_sample(txq, false);
        }
        let now = self.now;
        let info = self.pkts.get_mut(id);
        info.bql_charged = charged;
        info.t_xmit = now;
        self.rqs[rqi].ring.produce(id).expect("ring checked not full");
        if self.is_main_txq(rqi) {
            self.metrics.ring.enter(now);
        }
        self.veth_xdp_flush(cpu, rqi as u16);
        NetdevTx::Ok
    }

    /// `__veth_xdp_flush()`: schedule the peer's NAPI unless notifications are masked.
    pub fn veth_xdp_flush(&mut self, cpu: u16, rq: u16) {
        if !self.rqs[rq as usize].rx_notify_masked && self.napi_schedule_prep(rq) {
            self.rqs[rq as usize].rx_notify_masked = true;
            self.napi_schedule(cpu, rq);
        }
    }

    /// `napi_schedule_prep()`: claim NAPI_STATE_SCHED, or note MISSED if it is taken.
    pub fn napi_schedule_prep(&mut self, rq: u16) -> bool {
        let r = &mut self.rqs[rq as usize];
        if r.napi_sched {
            r.napi_missed = true;
            false
        } else {
            r.napi_sched = true;
            true
        }
    }

    /// `__napi_schedule()`: wake the NAPI kthread (threaded) or put the NAPI on THIS
    /// CPU's poll list and raise NET_RX (softirq mode).
    pub fn napi_schedule(&mut self, cpu: u16, rq: u16) {
        if self.cfg.napi_threaded {
            let on = self.rqs[rq as usize].cpu;
            self.wake_task(Task::NapiThread(rq), on);
        } else {
            self.cpus[cpu as usize].poll_list.push_back(rq);
            self.raise_softirq(cpu, NET_RX_SOFTIRQ);
        }
    }

    /// One step of `__napi_poll()` -> `veth_poll()` on RX queue `rq`.
    #[inline(never)]
    pub fn napi_poll_step(
        &mut self,
        cpu: u16,
        rq: u16,
        phase: &mut PollPhase,
        done: &mut u16,
        flush_pending: &mut bool,
    ) -> Step {
        let budget = self.cfg.napi_weight;
        let r = rq as usize;
        match *phase {
            PollPhase::Start => {
                if !self.rqs[r].napi_sched {
                    // Woken without NAPI_STATE_SCHED: nothing to poll.
                    self.cpus[cpu as usize].ret_work = 0;
                    self.cpus[cpu as usize].ret_repoll = false;
                    return Step::Done(0);
                }
                *phase = PollPhase::Rcv;
                self.rqs[r].bql_poll_count = 0;
                Step::Continue(self.cost(self.profile.costs.napi_poll_ns))
            }
            // Packets come off the ring one step each; while no other event falls
            // between two of them, the next one is taken here without a dispatch.
            PollPhase::Rcv => loop {
                if *flush_pending {
                    // A full GRO batch goes up the stack now, as a call of this poll
                    // (what pushing a GroFlush frame would do, without the dispatch).
                    *flush_pending = false;
                    let cost = self.gro_flush(cpu, rq);
                    if !self.advance_inline(cpu, cost) {
                        return Step::Continue(cost);
                    }
                    continue;
                }
                // veth_xdp_rcv(): consume until the budget is used or the ring is empty.
                if *done as u32 >= budget {
                    *phase = PollPhase::AfterRcv;
                    return Step::Continue(0);
                }
                let Some(id) = self.rqs[r].ring.consume() else {
                    *phase = PollPhase::AfterRcv;
                    return Step::Continue(0);
                };
                *done += 1;
                let now = self.now;
                let measured_ring = self.is_main_txq(r);
                let info = self.pkts.get_mut(id);
                info.t_consume = now;
                if measured_ring {
                    self.metrics.ring.leave(now);
                }
                if info.bql_charged {
                    let units = if self.cfg.bql_unit_packet { 1 } else { info.len };
                    self.bql_consumed(cpu, rq, units);
                }
                self.rqs[r].gro_list.push(id);
                if self.rqs[r].gro_list.len() >= self.cfg.gro_normal_batch {
                    *flush_pending = true;
                }
                let cost = self.cost(self.profile.costs.consume_ns);
                if !self.advance_inline(cpu, cost) {
                    return Step::Continue(cost);
                }
            },
            PollPhase::AfterRcv => {
                let work = *done as u32;
                if self.measuring() {
                    self.metrics.napi_polls += 1;
                    self.metrics.napi_work += work as u64;
                    self.metrics.hist_napi_work.record(work as u64);
                    if work >= budget {
                        self.metrics.napi_full_budget += 1;
                    }
                }
                self.bql_poll_end(cpu, rq);
                if work < budget {
                    // napi_complete_done(): pass the GRO list up first, then clear SCHED.
                    *phase = PollPhase::Complete;
                    if !self.rqs[r].gro_list.is_empty() {
                        return Step::Call(0, Frame::GroFlush { rq });
                    }
                    Step::Continue(0)
                } else {
                    *phase = PollPhase::FullBudget;
                    Step::Continue(0)
                }
            }
            PollPhase::Complete => {
                let rqs = &mut self.rqs[r];
                let completed = if rqs.napi_missed {
                    // MISSED: keep SCHED and poll again.
                    rqs.napi_missed = false;
                    false
                } else {
                    rqs.napi_sched = false;
                    true
                };
                if completed {
                    rqs.rx_notify_masked = false;
                    if !rqs.ring.empty() && self.napi_schedule_prep(rq) {
                        self.rqs[r].rx_notify_masked = true;
                        self.napi_schedule(cpu, rq);
                    }
                } else {
                    self.napi_schedule(cpu, rq);
                }
                self.veth_wake_peer_txq(cpu, rq);
                self.cpus[cpu as usize].ret_work = *done as u32;
                self.cpus[cpu as usize].ret_repoll = false;
                Step::Done(0)
            }
            PollPhase::FullBudget => {
                // veth_poll() returns the budget; its last act is the backpressure wake.
                self.veth_wake_peer_txq(cpu, rq);
                *phase = PollPhase::End;
                if !self.rqs[r].gro_list.is_empty() {
                    // __napi_poll(): gro_normal_list() before the repoll.
                    return Step::Call(0, Frame::GroFlush { rq });
                }
                Step::Continue(0)
            }
            PollPhase::End => {
                self.cpus[cpu as usize].ret_work = *done as u32;
                self.cpus[cpu as usize].ret_repoll = true;
                Step::Done(0)
            }
        }
    }

    /// End of `veth_poll()`: wake the peer TX queue the producer stopped on a full ring.
    fn veth_wake_peer_txq(&mut self, cpu: u16, rq: u16) {
        let txq = rq as usize;
        if self.txqs[txq].tx_queue_stopped() && self.txqs[txq].tx_wake_queue() {
            if let Some(qi) = self.txq_qdisc[txq] {
                self.netif_schedule(cpu, qi);
            }
        }
    }

    /// A BQL-charged entry was consumed: complete it per the configured mode.
    fn bql_consumed(&mut self, cpu: u16, rq: u16, units: u32) {
        let r = rq as usize;
        match self.cfg.completion {
            Completion::PerPacket => self.bql_complete(cpu, rq, units),
            Completion::PerPoll => self.rqs[r].bql_poll_count += units,
            Completion::Coalesced if self.cfg.bql_flush_ns == 0 => self.bql_complete(cpu, rq, units),
            Completion::Coalesced => {
                // veth BQL v7 5/5: flush when the window has elapsed, or when more than
                // the current limit is pending (strictly: the producer may overshoot by one).
                let now = self.now;
                let rqs = &mut self.rqs[r];
                if rqs.bql_pending == 0 {
                    rqs.bql_time = now;
                }
                rqs.bql_pending += units;
                let limit = self.txqs[r].dql.as_ref().map_or(0, |d| d.limit);
                let rqs = &self.rqs[r];
                if rqs.bql_time + self.cfg.bql_flush_ns <= now || rqs.bql_pending > limit {
                    let n = std::mem::take(&mut self.rqs[r].bql_pending);
                    self.bql_complete(cpu, rq, n);
                }
            }
        }
    }

    /// End of `veth_poll()`'s receive loop: the per-poll completion, and the
    /// coalescing window's time check.
    fn bql_poll_end(&mut self, cpu: u16, rq: u16) {
        let r = rq as usize;
        match self.cfg.completion {
            Completion::PerPoll => {
                let n = std::mem::take(&mut self.rqs[r].bql_poll_count);
                self.bql_complete(cpu, rq, n);
            }
            Completion::Coalesced => {
                let rqs = &self.rqs[r];
                if rqs.bql_pending > 0 && rqs.bql_time + self.cfg.bql_flush_ns <= self.now {
                    let n = std::mem::take(&mut self.rqs[r].bql_pending);
                    self.bql_complete(cpu, rq, n);
                }
            }
            Completion::PerPacket => {}
        }
    }

    /// `netdev_tx_completed_queue()` on the peer TX queue; a cleared STACK_XOFF
    /// schedules the qdisc on THIS (the consumer's) CPU.
    pub(crate) fn bql_complete(&mut self, cpu: u16, rq: u16, units: u32) {
        if units == 0 {
            return;
        }
        let txq = rq as usize;
        let jiffies = self.jiffies();
        match self.txqs[txq].netdev_tx_completed_queue(units, jiffies) {
            Ok(schedule) => {
                if self.measuring() {
                    self.metrics.bql_completions += 1;
                }
                self.bql_sample(txq, true);
                if schedule {
                    if let Some(qi) = self.txq_qdisc[txq] {
                        self.netif_schedule(cpu, qi);
                    }
                }
            }
            Err(e) => self.finding(
                "DQL completes no more than was queued",
                format!("txq {txq}: dql_completed({units}) refused: {e:?}"),
            ),
        }
    }

    /// Samples BQL in-flight units for the measured TX queue, and its limit after a
    /// completion (`dql_queued()` never moves the limit).
    pub fn bql_sample(&mut self, txq: usize, completed: bool) {
        if !self.is_main_txq(txq) {
            return;
        }
        let Some(dql) = self.txqs[txq].dql.as_ref() else { return };
        let (limit, inflight) = (dql.limit as u64, dql.inflight() as u64);
        let now = self.now;
        if completed {
            self.metrics.bql_limit.set(now, limit);
        }
        self.metrics.bql_inflight.set(now, inflight);
        if now >= self.cfg.start {
            self.metrics.hist_inflight.record(inflight);
        }
    }

    /// The TX queue the BQL and ring metrics describe: the XPS queue, else queue 0.
    pub fn main_txq(&self) -> Option<u16> {
        Some(self.cfg.xps_txq.unwrap_or(0))
    }

    /// Whether TX queue (and ring) `q` is [`World::main_txq`].
    #[inline]
    pub(crate) fn is_main_txq(&self, q: usize) -> bool {
        Some(q as u16) == self.main_txq()
    }

    /// `gro_normal_list()` -> `netif_receive_skb_list()`: each packet goes through
    /// ip_rcv (where it is orphaned from the sender's socket), the netfilter rules and
    /// the socket, one after another on this CPU. Returns the time that took (ns).
    #[inline(never)]
    pub fn gro_flush(&mut self, _cpu: u16, rq: u16) -> u64 {
        let r = rq as usize;
        let mut list = std::mem::take(&mut self.rqs[r].gro_list);
        let mut t = self.now;
        for &id in &list {
            // ip_rcv_core() orphans the skb: the sender's sndbuf is released here.
            if self.pkts.get(id).owns_wmem {
                self.sock_wfree(id);
            }
            let per_pkt = match self.pkts.get(id).origin {
                Origin::Ping => self.cfg.probe_pkt_ns,
                Origin::Flood(_) => self.cfg.consumer_pkt_ns,
            };
            t += self.cost(per_pkt);
            self.deliver(id, t);
        }
        list.clear();
        self.rqs[r].gro_list = list;
        t - self.now
    }

    /// A packet reached its socket at time `t`.
    pub(crate) fn deliver(&mut self, id: u32, t: u64) {
        let info = *self.pkts.get(id);
        if t >= self.cfg.start && t <= self.cfg.end {
            self.metrics.consumer_pkts += 1;
            match info.origin {
                Origin::Flood(i) => {
                    self.metrics.sink_pkts[i as usize] += 1;
                    self.metrics.sink_owd_ns += (t - info.t_send) as u128;
                }
                Origin::Ping => {}
            }
        }
        if info.origin == Origin::Ping && info.t_send >= self.cfg.start {
            let reply = self.cost(self.profile.costs.ping_reply_ns);
            let s = ProbeSample {
                t_send: info.t_send,
                rtt: t + reply - info.t_send,
                wait_qdisc: info.t_xmit - info.t_send,
                wait_ring: info.t_consume - info.t_xmit,
                wait_consumer: t - info.t_consume,
            };
            self.metrics.hist_rtt_us.record(s.rtt / 1000);
            self.metrics.probes.push(s);
        }
        self.delivered += 1;
        self.pkts.free(id);
    }

    /// `net_rx_action()`: poll the NAPIs on this CPU's list within the 300-packet and
    /// 2-jiffy budgets; leftovers and repolls go back on the list and re-raise NET_RX.
    #[inline(never)]
    pub fn net_rx_action(
        &mut self,
        cpu: u16,
        started: &mut bool,
        awaiting: &mut Option<u16>,
    ) -> Step {
        let ci = cpu as usize;
        if !*started {
            *started = true;
            let time_limit = self.jiffies() + self.cfg.netdev_budget_jiffies;
            let c = &mut self.cpus[ci];
            c.rx_budget = self.cfg.netdev_budget;
            c.rx_time_limit = time_limit;
            let mut pl = std::mem::take(&mut c.poll_list);
            c.rx_local.append(&mut pl);
            c.poll_list = pl;
            return Step::Continue(self.cost(self.profile.costs.softirq_ns));
        }
        if let Some(rq) = awaiting.take() {
            let c = &mut self.cpus[ci];
            c.rx_budget -= c.ret_work as i32;
            if c.ret_repoll {
                c.rx_repoll.push_back(rq);
            }
            let c = &self.cpus[ci];
            if c.rx_budget <= 0 || self.jiffies() >= c.rx_time_limit {
                self.cpus[ci].time_squeeze += 1;
                return self.net_rx_action_end(cpu);
            }
        }
        match self.cpus[ci].rx_local.pop_front() {
            Some(rq) => {
                *awaiting = Some(rq);
                Step::Call(0, Frame::NapiPoll { phase: PollPhase::Start, flush_pending: false, rq, done: 0 })
            }
            None => self.net_rx_action_end(cpu),
        }
    }

    fn net_rx_action_end(&mut self, cpu: u16) -> Step {
        let c = &mut self.cpus[cpu as usize];
        // poll_list = unpolled ++ newly scheduled ++ repoll.
        let mut newly = std::mem::take(&mut c.poll_list);
        let mut list = std::mem::take(&mut c.rx_local);
        list.append(&mut newly);
        list.append(&mut c.rx_repoll);
        c.poll_list = list;
        c.rx_local = newly;
        if !c.poll_list.is_empty() {
            c.softirq_pending |= NET_RX_SOFTIRQ;
        }
        Step::Done(0)
    }
}

#[cfg(test)]
mod tests {
    use crate::profile::Profile;
    use crate::world::World;

    #[test]
    fn overcompletion_is_a_finding_with_time_not_a_panic() {
        let text = "[device.bql]\nenabled = true\n[qdisc]\nkind = \"pfifo\"\n[[traffic]]\nkind = \"udp\"\n";
        let scn = darkbuf_scenario::load_str("t.toml", text, &[]).unwrap();
        let mut w = World::new(&scn, Profile::load("seed-vm").unwrap(), 1).unwrap();
        w.now = 12_345;
        // Nothing was queued on txq 0: completing 5 units is what dql_completed BUG()s on.
        w.bql_complete(1, 0, 5);
        let f = &w.metrics.findings;
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].time_ns, 12_345);
        assert!(f[0].invariant.contains("no more than was queued"), "{f:?}");
        assert!(f[0].detail.contains("dql_completed(5)"), "{f:?}");
        // And the queue state is untouched.
        assert_eq!(w.txqs[0].dql.as_ref().unwrap().num_completed, 0);
    }
}
