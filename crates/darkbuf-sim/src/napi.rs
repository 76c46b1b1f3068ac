//! The NAPI core, driven by any driver's poll function: mirrors `napi_schedule_prep()`,
//! `__napi_schedule()`, `__napi_poll()`, `napi_complete_done()` and GRO's
//! `gro_normal_list()` -> `netif_receive_skb_list()` in net/core/dev.c and
//! net/core/gro.c.
//!
//! A poll is a frame ([`Frame::NapiPoll`]) in phases. The driver supplies what is its
//! own through the hooks in `drivers/mod.rs` (begin, take one received packet, end of
//! its receive loop, re-arm after `napi_complete_done()`, the tail of its poll); the
//! budget, the GRO batching, the SCHED/MISSED protocol and the delivery up the stack
//! are here, once.

use crate::arena::Proto;
use crate::cpu::{PollPhase, Step, NET_RX_SOFTIRQ};
use crate::id::{CpuId, DevId, NapiId, TaskId};
use crate::world::World;

/// Per-packet cost (ns) of the receive stack a NAPI instance delivers into: ip_rcv,
/// the namespace's netfilter rules, the socket and the receiving application.
#[derive(Clone, Copy, Debug)]
pub struct RxStack {
    /// A data packet (the rules, and the application's own cost).
    pub pkt_ns: f64,
    /// An ICMP probe: no application; the rules only when they match every packet.
    pub probe_ns: f64,
}

impl RxStack {
    #[inline]
    pub fn cost_ns(&self, proto: Proto) -> f64 {
        match proto {
            Proto::Icmp => self.probe_ns,
            Proto::Udp | Proto::Tcp => self.pkt_ns,
        }
    }
}

/// One NAPI instance (`struct napi_struct`).
pub struct Napi {
    /// NAPI_STATE_SCHED / NAPI_STATE_MISSED.
    pub sched: bool,
    pub missed: bool,
    /// Threaded NAPI (`/sys/class/net/DEV/threaded`): polled by its own kthread
    /// (`task`, pinned to its CPU); otherwise by NET_RX on the CPU that scheduled it.
    pub threaded: bool,
    pub task: TaskId,
    /// `napi->weight`: the poll's budget.
    pub weight: u32,
    /// The device whose driver state holds the RX queue this NAPI polls (veth: the
    /// sending end, which keeps the peer's rings), and the queue.
    pub dev: DevId,
    pub queue: u16,
    /// GRO's `rx_list`: packets waiting to go up the stack together, at most
    /// `gro_normal_batch` of them.
    pub gro_list: Vec<u32>,
    pub gro_batch: usize,
    pub rx_stack: RxStack,
    /// Its polls count in the `napi.*` metrics (the measured device's receive side).
    pub measured: bool,
    /// The host (network namespace) whose stack it delivers into: a router's decides
    /// by it whether a packet is its own (`ip_route_input()`).
    pub host: crate::id::HostId,
}

impl World {
    /// `napi_schedule_prep()`: claim NAPI_STATE_SCHED, or note MISSED if it is taken.
    pub fn napi_schedule_prep(&mut self, n: NapiId) -> bool {
        let napi = &mut self.net.napis[n];
        if napi.sched {
            napi.missed = true;
            false
        } else {
            napi.sched = true;
            true
        }
    }

    /// `__napi_schedule()`: wake the NAPI kthread (threaded) or put the NAPI on THIS
    /// CPU's poll list and raise NET_RX (softirq mode).
    pub fn napi_schedule(&mut self, cpu: CpuId, n: NapiId) {
        let napi = &self.net.napis[n];
        if napi.threaded {
            let task = napi.task;
            self.wake_task(task);
        } else {
            self.sched.cpus[cpu].poll_list.push_back(n);
            self.raise_softirq(cpu, NET_RX_SOFTIRQ);
        }
    }

    /// `napi_complete_done()`: with MISSED set the NAPI stays scheduled and is polled
    /// again (returns false); otherwise SCHED is cleared and the driver may re-arm.
    fn napi_complete_done(&mut self, cpu: CpuId, n: NapiId) -> bool {
        let napi = &mut self.net.napis[n];
        if napi.missed {
            napi.missed = false;
            self.napi_schedule(cpu, n);
            false
        } else {
            napi.sched = false;
            true
        }
    }

    /// One step of `__napi_poll()` -> the driver's poll of NAPI `n`.
    ///
    /// A phase that ends without taking time goes straight on to the next, in this
    /// call: returning `Step::Continue(0)` would have the executor book nothing and
    /// dispatch here again. Passing the GRO list up is a call of the poll, run in place
    /// as pushing a frame for it would (its time is the step's cost).
    #[inline(never)]
    pub fn napi_poll_step(
        &mut self,
        cpu: CpuId,
        n: NapiId,
        phase: &mut PollPhase,
        done: &mut u16,
        flush_pending: &mut bool,
    ) -> Step {
        let ni = n;
        loop {
            match *phase {
                PollPhase::Start => {
                    if !self.net.napis[ni].sched {
                        // Woken without NAPI_STATE_SCHED: nothing to poll.
                        self.sched.cpus[cpu].ret_work = 0;
                        self.sched.cpus[cpu].ret_repoll = false;
                        return Step::Done(0);
                    }
                    *phase = PollPhase::Rcv;
                    let driver_ns = self.drv_poll_begin(cpu, n);
                    return Step::Continue(self.cost(self.profile.costs.napi_poll_ns + driver_ns));
                }
                // Packets come off the driver one step each; while no other event falls
                // between two of them, the next one is taken here without a dispatch.
                PollPhase::Rcv => {
                    if let Some(step) = self.napi_rcv(cpu, n, phase, done, flush_pending) {
                        return step;
                    }
                }
                PollPhase::AfterRcv => {
                    let work = *done as u32;
                    let budget = self.net.napis[ni].weight;
                    if self.measuring() && self.net.napis[ni].measured {
                        self.metrics.napi_polls += 1;
                        self.metrics.napi_work += work as u64;
                        self.metrics.hist_napi_work.record(work as u64);
                        if work >= budget {
                            self.metrics.napi_full_budget += 1;
                        }
                    }
                    let busy = self.drv_poll_rx_end(cpu, n);
                    if work < budget && !busy {
                        // napi_complete_done(): pass the GRO list up first, then clear SCHED.
                        *phase = PollPhase::Complete;
                        if !self.net.napis[ni].gro_list.is_empty() {
                            return Step::Continue(self.gro_flush(cpu, n));
                        }
                    } else {
                        *phase = PollPhase::FullBudget;
                    }
                }
                PollPhase::Complete => {
                    if self.napi_complete_done(cpu, n) {
                        self.drv_napi_rearm(cpu, n);
                    }
                    self.drv_poll_end(cpu, n);
                    self.sched.cpus[cpu].ret_work = *done as u32;
                    self.sched.cpus[cpu].ret_repoll = false;
                    return Step::Done(0);
                }
                PollPhase::FullBudget => {
                    // The driver's poll returns the budget after its tail.
                    self.drv_poll_end(cpu, n);
                    *phase = PollPhase::End;
                    if !self.net.napis[ni].gro_list.is_empty() {
                        // __napi_poll(): gro_normal_list() before the repoll.
                        return Step::Continue(self.gro_flush(cpu, n));
                    }
                }
                PollPhase::End => {
                    self.sched.cpus[cpu].ret_work = *done as u32;
                    self.sched.cpus[cpu].ret_repoll = true;
                    return Step::Done(0);
                }
            }
        }
    }

    /// The receive phase of a poll: packets off the driver into GRO's list, full
    /// batches up the stack, until the budget or the driver's packets run out (the
    /// phase moves on and `None` is returned) or another event comes first (the step
    /// to return).
    #[inline(always)]
    fn napi_rcv(&mut self, cpu: CpuId, n: NapiId, phase: &mut PollPhase, done: &mut u16, flush_pending: &mut bool) -> Option<Step> {
        let ni = n;
        loop {
            if *flush_pending {
                // A full GRO batch goes up the stack now, as a call of this poll.
                *flush_pending = false;
                let cost = self.gro_flush(cpu, n);
                if !self.advance_inline(cpu, cost) {
                    return Some(Step::Continue(cost));
                }
                continue;
            }
            if *done as u32 >= self.net.napis[ni].weight {
                *phase = PollPhase::AfterRcv;
                return None;
            }
            let Some((id, cost_ns)) = self.drv_rx_one(cpu, n) else {
                *phase = PollPhase::AfterRcv;
                return None;
            };
            *done += 1;
            let napi = &mut self.net.napis[ni];
            napi.gro_list.push(id);
            if napi.gro_list.len() >= napi.gro_batch {
                *flush_pending = true;
            }
            let cost = self.cost(cost_ns);
            if !self.advance_inline(cpu, cost) {
                return Some(Step::Continue(cost));
            }
        }
    }

    /// `gro_normal_list()` -> `netif_receive_skb_list()`: each packet goes through
    /// the ingress hook, ip_rcv (where it is orphaned from the sender's socket: see
    /// [`World::deliver`]), the netfilter rules and the socket, one after another on
    /// this CPU. Returns the time that took (ns).
    #[inline(never)]
    pub fn gro_flush(&mut self, cpu: CpuId, n: NapiId) -> u64 {
        let ni = n;
        let mut list = std::mem::take(&mut self.net.napis[ni].gro_list);
        let (rx, here) = (self.net.napis[ni].rx_stack, self.net.napis[ni].host);
        let mut t = self.now;
        for &id in &list {
            // ip_rcv_core() orphans the skb: its sender's sndbuf is released here. With
            // ingress shaping on some host, the ingress hook comes first, and
            // `deliver()` orphans after it. (Orphaning here otherwise, before the
            // receive cost is drawn, keeps the order of the noise draws, and so every
            // earlier result, as it was.)
            if !self.net.ingress {
                self.skb_orphan(id);
            }
            let per_pkt = rx.cost_ns(self.pkts.get(id).proto);
            t += self.cost(per_pkt);
            t += self.deliver(cpu, here, id, t);
        }
        list.clear();
        self.net.napis[ni].gro_list = list;
        t - self.now
    }
}
