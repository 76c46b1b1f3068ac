//! A network device as the stack sees it (`struct net_device` with its
//! `netdev_queue`s): TX queues with their DQL and state bits, the qdisc on each, the
//! XPS map, and the driver behind them. Mirrors `netdev_pick_tx()` /
//! `netdev_core_pick_tx()` and `__dev_queue_xmit()` / `__dev_xmit_skb()` in
//! net/core/dev.c and the BQL hooks of include/linux/netdevice.h; the qdisc run loop
//! is in [`sch`].

pub mod bql;
pub mod gso;
pub mod sch;
pub mod stack_ops;

use crate::id::{CpuId, DevId, QdiscId};
use crate::drivers::Driver;
use crate::world::World;
use darkbuf_model::qdisc::{EnqueueVerdict, Qdisc};
use darkbuf_model::skb::flow_hash;
use darkbuf_model::txq::{NetdevQueue, TxqStats};
use darkbuf_model::Skb;

/// Transmit packet steering: how `netdev_pick_tx()` maps the sending CPU to a TX queue.
/// `repr(u8)`: a tag byte of its own, not a niche each `match` decodes (see `SockKind`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Xps {
    /// No XPS map: `skb_tx_hash()` spreads flows over the queues.
    Hash,
    /// Every CPU's `xps_cpus` mask names this one queue (the veth selftest's setup).
    Queue(u16),
    /// `xps_cpus_map`: per CPU, the TX queues whose `xps_cpus` mask holds it.
    CpuMap(Vec<Vec<u16>>),
}

impl Xps {
    /// The map that puts CPU `cpus_of_queues[i]` in TX queue i's `xps_cpus`.
    pub fn from_queue_cpus(cpus_of_queues: impl Iterator<Item = u32>, ncpu: usize) -> Xps {
        let mut map = vec![Vec::new(); ncpu];
        for (q, c) in cpus_of_queues.enumerate() {
            map[c as usize].push(q as u16);
        }
        Xps::CpuMap(map)
    }
}

/// Work put off to a time inside a CPU's step; it runs as part of that step on `cpu`.
#[derive(Clone, Copy, Debug)]
pub enum Deferred {
    /// A transmit; for a TCP data segment, `tcp` says how `tcp_write_xmit()` sent it
    /// (the default for any other packet).
    Xmit { cpu: CpuId, dev: DevId, skb: Skb, tcp: TcpSent },
    /// A forwarded packet's transmit: no local sender learns its verdict.
    Forward { cpu: CpuId, dev: DevId, skb: Skb },
    Deliver { cpu: CpuId, id: u32 },
    /// A TCP transmit taken back before its time (`tcp_unsend_burst()`): the slot
    /// waits for its event and then frees.
    Cancelled,
}

/// How `tcp_write_xmit()` sent a data segment, for its deferred transmit.
#[derive(Clone, Copy, Debug, Default)]
pub struct TcpSent {
    /// The socket's TSQ_THROTTLED when the segment was sent.
    pub tsq_throttled: bool,
    /// The `tcp_write_xmit()` call that sent it (`TcpSock::xmit_burst`).
    pub burst: u32,
}

/// `netdev_tx_t` (include/linux/netdevice.h): what a driver's `ndo_start_xmit`
/// returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetdevTx {
    /// `NETDEV_TX_OK`: the driver took the skb.
    Ok,
    /// `NETDEV_TX_BUSY`: the driver's queue was full; the skb is requeued.
    Busy,
}

/// One network device.
pub struct NetDev {
    /// `dev->_tx`: the TX queues (`real_num_tx_queues` of them).
    pub txqs: Vec<NetdevQueue>,
    /// The qdisc attached to each TX queue (`txq->qdisc`); `None` = noqueue.
    pub txq_qdisc: Vec<Option<crate::id::QdiscId>>,
    /// TX queue counters at the start of the measured window.
    pub txq_base: Vec<TxqStats>,
    pub xps: Xps,
    /// BQL is enabled on the TX queues, and charges one unit per packet (veth's
    /// `VETH_BQL_UNIT`) or `skb->len` bytes.
    pub bql: bool,
    pub bql_unit_packet: bool,
    /// The driver stops its queue on a full ring instead of dropping (veth >= 6.16,
    /// tun IFF_BACKPRESSURE).
    pub backpressure: bool,
    /// The driver's `ndo_start_xmit` per skb, ns (the profile's cost for this driver).
    pub xmit_ns: f64,
    /// NETIF_F_TSO: the driver takes GSO skbs whole; without it the stack segments
    /// them in front of the driver ([`gso`]).
    pub tso: bool,
    /// The key of `skb_tx_hash()`'s flow hash (fixed: a flow keeps its queue across
    /// runs and seeds).
    pub txhash_key: u32,
    pub driver: Driver,
}

impl NetDev {
    /// The measured window starts: each TX queue's counters and the driver's now are
    /// its base.
    pub fn start_window(&mut self) {
        self.txq_base = self.txqs.iter().map(|q| q.stats.clone()).collect();
        if let crate::drivers::Driver::Nic(n) = &mut self.driver {
            n.base = n.stats;
        }
    }

    /// The BQL charge of a packet of `len` bytes.
    #[inline]
    pub fn bql_units(&self, len: u32) -> u32 {
        Self::bql_units_of(self.bql_unit_packet, len)
    }

    /// The same rule from the flag alone, for a caller that holds a borrow of the
    /// device's driver state (`veth_rcv_one()`).
    #[inline]
    pub fn bql_units_of(unit_packet: bool, len: u32) -> u32 {
        if unit_packet {
            1
        } else {
            len
        }
    }

    /// `skb_tx_hash()`: the flow's hash, scaled to the TX queues.
    #[inline]
    pub fn skb_tx_hash(&self, skb: &Skb) -> u16 {
        (flow_hash(skb.flow, self.txhash_key) % self.txqs.len() as u32) as u16
    }
}

impl World {
    /// `netdev_core_pick_tx()` for `skb` sent from `cpu` on `dev`: the driver's own
    /// choice, else `get_xps_queue()` on the sending CPU's XPS entry (one of its queues
    /// by the flow hash when it has several), else `skb_tx_hash()` (fixed per flow).
    #[inline(always)]
    pub fn netdev_pick_tx(&self, dev: DevId, skb: &Skb, cpu: CpuId) -> u16 {
        if let Some(q) = self.ndo_select_queue(dev, skb) {
            return q;
        }
        let d = &self.net.devs[dev];
        match &d.xps {
            Xps::Queue(q) => *q,
            Xps::Hash => d.skb_tx_hash(skb),
            Xps::CpuMap(map) => match map[cpu.idx()].as_slice() {
                [] => d.skb_tx_hash(skb),
                [q] => *q,
                qs => qs[darkbuf_model::skb::reciprocal_scale(flow_hash(skb.flow, d.txhash_key), qs.len() as u32) as usize],
            },
        }
    }

    /// `__dev_queue_xmit()` of `skb` (already in the arena as `skb.id`) on `dev` from a
    /// task on `cpu`. Returns the cost of what was done inline, the qdisc whose run it
    /// started (`qdisc_run_begin()` succeeded: the caller runs `__qdisc_run()` next), if
    /// any, and the enqueue verdict for the socket. Inlined: its hot caller is
    /// `send_msg` (out of line: +0.5% instructions there).
    ///
    /// The qdisc's id, not a ready-made `Frame::QdiscRun`: a frame passed along in
    /// registers is stored in pieces that do not line up with its fields, and the
    /// reads of the stored frame then stalled on store forwarding (seed-nrules15000).
    #[inline(always)]
    pub fn dev_queue_xmit(&mut self, cpu: CpuId, dev: DevId, skb: Skb) -> (u64, Option<QdiscId>, EnqueueVerdict) {
        let id = skb.id;
        let txq = skb.queue_mapping as usize;
        let Some(qi) = self.net.devs[dev].txq_qdisc[txq] else {
            // noqueue: straight to the driver if the queue runs; a busy driver drops.
            if !self.net.devs[dev].tso && skb.segs() > 1 {
                return self.noqueue_xmit_segments(cpu, dev, skb);
            }
            let cost = self.cost(self.net.devs[dev].xmit_ns);
            if self.net.devs[dev].txqs[txq].xmit_stopped()
                || self.ndo_start_xmit(cpu, dev, skb, false) == NetdevTx::Busy
            {
                if self.measuring() {
                    self.metrics.noqueue_drops += 1;
                }
                self.kfree_skb(id);
                return (cost, None, EnqueueVerdict::Dropped);
            }
            return (cost, None, EnqueueVerdict::Success);
        };
        let now = self.now;
        let q = &mut self.net.qdiscs[qi];
        if q.can_bypass && q.qlen() == 0 && !q.running {
            // TCQ_F_CAN_BYPASS: an empty idle qdisc hands the packet straight to the driver.
            q.running = true;
            // bstats_update(): a GSO skb counts its segments, as tc shows them.
            q.sent_pkts += skb.segs() as u64;
            q.sent_bytes += skb.len as u64;
            let mut list = std::mem::take(&mut self.scratch.bulk);
            list.clear();
            // Stamped like an enqueued packet: if the driver pushes it back, it joins
            // the backlog from now.
            list.push(Skb { tstamp: now, ..skb });
            if !self.net.devs[dev].tso {
                self.validate_xmit_skb_list(dev, &mut list);
            }
            let cost = self.cost(self.net.devs[dev].xmit_ns * list.len() as f64);
            let ok = self.sch_direct_xmit(cpu, qi, &list);
            self.scratch.bulk = list;
            if ok {
                return (cost, Some(qi), EnqueueVerdict::Success);
            }
            self.net.qdiscs[qi].running = false;
            return (cost, None, EnqueueVerdict::Success);
        }
        let mut stamped = skb;
        stamped.tstamp = now;
        self.scratch.drops.clear();
        let measured = q.measured;
        self.metrics.qdisc_enter(measured, now);
        let verdict = q.q.as_mut().expect("qdisc").enqueue(stamped, now, &mut self.scratch.drops);
        self.free_drops(measured);
        if self.net.qdiscs[qi].stack_ops {
            self.qdisc_stack_ops(qi);
        }
        let q = &mut self.net.qdiscs[qi];
        if !q.running {
            q.running = true;
            return (0, Some(qi), verdict);
        }
        (0, None, verdict)
    }

    /// noqueue with a GSO skb for a driver without TSO: `validate_xmit_skb()` segments
    /// it and `dev_hard_start_xmit()` sends the segments while the queue runs; what
    /// the driver does not take is freed (`kfree_skb_list()`), each counted as a drop.
    #[inline(never)]
    fn noqueue_xmit_segments(&mut self, cpu: CpuId, dev: DevId, skb: Skb) -> (u64, Option<QdiscId>, EnqueueVerdict) {
        let mut list = std::mem::take(&mut self.scratch.bulk);
        list.clear();
        list.push(skb);
        self.validate_xmit_skb_list(dev, &mut list);
        let txq = skb.queue_mapping as usize;
        let cost = self.cost(self.net.devs[dev].xmit_ns * list.len() as f64);
        let mut verdict = EnqueueVerdict::Success;
        for i in 0..list.len() {
            let seg = list[i];
            let sent = !self.net.devs[dev].txqs[txq].xmit_stopped()
                && self.ndo_start_xmit(cpu, dev, seg, i + 1 < list.len()) != NetdevTx::Busy;
            if !sent {
                if self.measuring() {
                    self.metrics.noqueue_drops += 1;
                }
                self.kfree_skb(seg.id);
                verdict = EnqueueVerdict::Dropped;
            }
        }
        self.scratch.bulk = list;
        (cost, None, verdict)
    }

    /// `__dev_queue_xmit()` from softirq context at time `t` inside the current step
    /// (an echo reply built while a GRO batch goes up the stack): it happens at `t`, by
    /// `Event::DeferredXmit`. A qdisc run it starts is left to NET_TX on `cpu`.
    pub fn dev_queue_xmit_at(&mut self, t: u64, cpu: CpuId, dev: DevId, skb: Skb) {
        self.defer(t, Deferred::Xmit { cpu, dev, skb, tcp: TcpSent::default() });
    }

    /// `__tcp_transmit_skb()`'s `queue_xmit` of a data segment at `t` from `cpu`, with
    /// how `tcp_write_xmit()` sent it.
    pub fn tcp_queue_xmit_at(&mut self, t: u64, cpu: CpuId, dev: DevId, skb: Skb, tcp: TcpSent) {
        self.defer(t, Deferred::Xmit { cpu, dev, skb, tcp });
    }

    /// `ip_forward()`'s transmit of `skb` on `dev` at `t`, from softirq on `cpu`.
    pub fn dev_forward_at(&mut self, t: u64, cpu: CpuId, dev: DevId, skb: Skb) {
        self.defer(t, Deferred::Forward { cpu, dev, skb });
    }

    /// Packet `id` reaches its socket's handler at `t` on `cpu` by a way back that is
    /// not modelled (the profile's constant for veth and tun).
    pub fn deliver_at(&mut self, t: u64, cpu: CpuId, id: u32) {
        self.defer(t, Deferred::Deliver { cpu, id });
    }

    fn defer(&mut self, t: u64, what: Deferred) {
        let slot = match self.net.deferred.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                self.net.deferred.push(None);
                self.net.deferred.len() - 1
            }
        };
        self.net.deferred[slot] = Some(what);
        self.events.push(t, crate::event::Event::Deferred(slot as u32));
    }

    /// `Event::Deferred`: what `dev_queue_xmit_at()`, `dev_forward_at()` or
    /// `deliver_at()` put off.
    pub fn deferred(&mut self, slot: u32) {
        let what = self.net.deferred[slot as usize].take().expect("a deferred item");
        // The work is part of a step of `cpu`: what it frees runs its destructor there
        // (`tcp_wfree()` queues TSQ work on `smp_processor_id()`), not on whichever CPU
        // ran the last step, which may be another host's.
        let (Deferred::Xmit { cpu, .. } | Deferred::Forward { cpu, .. } | Deferred::Deliver { cpu, .. }) = what else {
            return; // Cancelled: nothing left to do
        };
        let stale = std::mem::replace(&mut self.sched.current_cpu, cpu);
        match what {
            Deferred::Xmit { cpu, dev, skb, tcp } => {
                let info = *self.pkts.get(skb.id);
                if info.proto == crate::arena::Proto::Tcp && info.dir == crate::arena::Dir::Out {
                    self.tcp_deferred_xmit(cpu, dev, skb, &info, tcp);
                } else {
                    self.dev_queue_xmit_softirq(cpu, dev, skb);
                }
            }
            Deferred::Forward { cpu, dev, skb } => {
                self.dev_queue_xmit_softirq(cpu, dev, skb);
            }
            Deferred::Deliver { cpu, id } => {
                let here = self.sched.cpus[cpu].host;
                self.deliver(cpu, here, id, self.now);
            }
            Deferred::Cancelled => unreachable!("returned above"),
        }
        self.sched.current_cpu = stale;
    }


    /// Takes back socket `s`'s transmits of `tcp_write_xmit()` call `burst` that the
    /// loop sent after the dropped segment at `seq` and that are not yet due, newest
    /// first: each goes back to the socket as unsent data (or an unsent
    /// retransmission), its skb freed without `tcp_wfree()` (the kernel never built its
    /// clone). A loop sends in sequence order (retransmissions, then new data), so
    /// "after" is a later sequence number, whatever the transmits' costs.
    pub(crate) fn tcp_unsend_burst(&mut self, s: crate::id::SockId, burst: u32, seq: u32) {
        let mut later = std::mem::take(&mut self.scratch.unsend);
        for (slot, d) in self.net.deferred.iter().enumerate() {
            if let Some(Deferred::Xmit { skb, tcp, .. }) = d {
                let info = self.pkts.get(skb.id);
                let ours = info.proto == crate::arena::Proto::Tcp && info.dir == crate::arena::Dir::Out && info.sock == s;
                let ahead = info.seq.wrapping_sub(seq);
                if ours && tcp.burst == burst && ahead != 0 && ahead < 1 << 31 {
                    later.push((ahead as u64, slot));
                }
            }
        }
        later.sort_unstable_by(|a, b| b.cmp(a));
        for &(_, slot) in &later {
            let Some(Deferred::Xmit { skb, .. }) = self.net.deferred[slot].replace(Deferred::Cancelled) else { unreachable!() };
            let (seq, segs) = (self.pkts.get(skb.id).seq, self.pkts.get(skb.id).segs);
            self.socks[s].wmem_alloc -= skb.truesize as u64;
            self.pkts.free(skb.id);
            self.metrics.fate.created -= 1;
            self.tcp_unsend(s, seq, segs as u32);
        }
        later.clear();
        self.scratch.unsend = later;
    }

    /// `__dev_queue_xmit()` from softirq: a qdisc run it would start is left to
    /// NET_TX on `cpu` (the deferred event is not a step of that CPU).
    pub(crate) fn dev_queue_xmit_softirq(&mut self, cpu: CpuId, dev: DevId, skb: Skb) -> EnqueueVerdict {
        let (_, next, verdict) = self.dev_queue_xmit(cpu, dev, skb);
        if let Some(q) = next {
            self.net.qdiscs[q].running = false;
            self.netif_schedule(cpu, q);
            self.cpu_kick(cpu, 0);
        }
        verdict
    }

    /// `netdev_tx_completed_queue()` of `units` on `dev`'s TX queue `txq`; a cleared
    /// STACK_XOFF schedules the qdisc on THIS (the completing) CPU.
    #[inline(always)]
    pub(crate) fn bql_complete(&mut self, cpu: CpuId, dev: DevId, txq: u16, units: u32) {
        if units == 0 {
            return;
        }
        let jiffies = self.jiffies();
        match self.net.devs[dev].txqs[txq as usize].netdev_tx_completed_queue(units, jiffies) {
            Ok(schedule) => {
                if self.measuring() {
                    self.metrics.bql_completions += 1;
                    if dev == self.metrics.measured_txq.0 {
                        self.metrics.bql_txq[txq as usize].completions += 1;
                    }
                }
                self.bql_sample(dev, txq as usize, true);
                if schedule {
                    if let Some(qi) = self.net.devs[dev].txq_qdisc[txq as usize] {
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

    /// Samples BQL in-flight units of TX queue `txq` of the measured device, and its
    /// limit after a completion (`dql_queued()` never moves the limit); the device's
    /// aggregate follows: in-flight summed over its queues, the largest limit.
    #[inline]
    pub fn bql_sample(&mut self, dev: DevId, txq: usize, completed: bool) {
        if dev != self.metrics.measured_txq.0 {
            return;
        }
        let Some(dql) = self.net.devs[dev].txqs[txq].dql.as_ref() else { return };
        let (limit, inflight) = (dql.limit as u64, dql.inflight() as u64);
        let now = self.now;
        let m = &mut self.metrics;
        let q = &mut m.bql_txq[txq];
        let (old_limit, old_inflight) = (q.limit.last(), q.inflight.last());
        q.inflight.set(now, inflight);
        q.inflight_hist.set(now, inflight);
        if completed {
            q.limit.set(now, limit);
            let max = m.bql_limit.last();
            let max = if limit >= max {
                limit
            } else if old_limit == max {
                // This queue held the maximum and went below it.
                m.bql_txq.iter().map(|q| q.limit.last()).max().unwrap_or(0)
            } else {
                max
            };
            m.bql_limit.set(now, max);
        }
        let sum = m.bql_inflight.last() - old_inflight + inflight;
        m.bql_inflight.set(now, sum);
        m.bql_inflight_hist.set(now, sum);
        if now >= self.cfg.start {
            m.hist_inflight.record(sum);
        }
    }

    /// Whether TX queue `q` of `dev` is the one the BQL and ring metrics describe.
    #[inline]
    pub(crate) fn is_measured_txq(&self, dev: DevId, q: u16) -> bool {
        (dev, q) == self.metrics.measured_txq
    }

    /// `kfree_skb()`: a packet is dropped anywhere; its destructor runs and its slot is
    /// freed. A dropped probe counts as lost.
    pub fn kfree_skb(&mut self, id: u32) {
        self.skb_orphan(id);
        let (t_send, proto, sock, clone) = {
            let info = self.pkts.get(id);
            (info.t_send, info.proto, info.sock, info.netem_clone)
        };
        self.metrics.fate.dropped += 1;
        if clone {
            // A netem's duplicate: the probe itself may still arrive.
            self.pkts.free(id);
            return;
        }
        if t_send >= self.cfg.start && proto == crate::arena::Proto::Icmp {
            self.ping_dropped(sock, t_send);
        }
        if let crate::sock::SockKind::Irtt(_) = self.socks[sock].kind {
            let info = *self.pkts.get(id);
            self.irtt_dropped(&info);
        }
        if let crate::sock::SockKind::Voip(_) = self.socks[sock].kind {
            let info = *self.pkts.get(id);
            self.voip_dropped(&info);
        }
        self.pkts.free(id);
    }
}

#[cfg(test)]
mod tests {
    use crate::id::{CpuId, DevId};
    use darkbuf_measure::Profile;
    use crate::world::World;

    #[test]
    fn overcompletion_is_a_finding_with_time_not_a_panic() {
        let text = "[device.bql]\nenabled = true\n[qdisc]\nkind = \"pfifo\"\n[[traffic]]\nkind = \"udp\"\n";
        let scn = darkbuf_scenario::load_str("t.toml", text, &[]).unwrap();
        let mut w = World::new(&scn, Profile::load("seed-vm").unwrap(), 1).unwrap();
        w.now = 12_345;
        // Nothing was queued on txq 0: completing 5 units is what dql_completed BUG()s on.
        w.bql_complete(CpuId(1), DevId(0), 0, 5);
        let f = &w.metrics.findings;
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].time_ns, 12_345);
        assert!(f[0].invariant.contains("no more than was queued"), "{f:?}");
        assert!(f[0].detail.contains("dql_completed(5)"), "{f:?}");
        // And the queue state is untouched.
        assert_eq!(w.net.devs[DevId(0)].txqs[0].dql.as_ref().unwrap().num_completed, 0);
    }
}

/// `bql.*` over a device's TX queues and `bql.txq.N.*` per queue.
#[cfg(test)]
mod bql_tests {
    use crate::id::DevId;
    use darkbuf_measure::Profile;
    use crate::world::World;

    fn world(device: &str) -> World {
        let text = format!("[device]\n{device}\n[device.bql]\nenabled = true\n[qdisc]\nkind = \"pfifo\"\n[[traffic]]\nkind = \"udp\"\n");
        let scn = darkbuf_scenario::load_str("t.toml", &text, &[]).unwrap();
        World::new(&scn, Profile::load("seed-vm").unwrap(), 1).unwrap()
    }

    /// Sets queue `q`'s DQL to `limit` and `inflight` units at `t`, and samples it.
    fn at(w: &mut World, t: u64, q: usize, limit: u32, inflight: u32, completed: bool) {
        w.now = t;
        let dql = w.net.devs[DevId(0)].txqs[q].dql.as_mut().unwrap();
        dql.limit = limit;
        dql.num_queued = dql.num_completed + inflight;
        w.bql_sample(DevId(0), q, completed);
    }

    /// By hand over the window 0..500: the device's limit is 0, 10, 30 (queue 1's),
    /// then 10 again when queue 1's drops to 2; its in-flight is 0, 4, 13, 6. A limit
    /// moves only at a completion (t = 300 does not move it).
    #[test]
    fn device_is_the_largest_limit_and_the_summed_inflight() {
        let mut w = world("tx_queues = 2");
        w.cfg.start = 0;
        at(&mut w, 100, 0, 10, 4, true);
        at(&mut w, 200, 1, 30, 0, true);
        at(&mut w, 300, 1, 99, 9, false);
        at(&mut w, 400, 1, 2, 2, true);
        let m = &w.metrics;
        assert_eq!(m.bql_limit.mean(0, 500), 8000.0 / 500.0);
        assert_eq!(m.bql_limit.last(), 10);
        assert_eq!(m.bql_inflight.mean(0, 500), 2700.0 / 500.0);
        assert_eq!(m.bql_inflight.max, 13);
        assert_eq!(m.bql_txq[1].limit.mean(0, 500), 6200.0 / 500.0);
        assert_eq!(m.bql_txq[1].inflight.max, 9);
        assert_eq!(m.bql_txq[0].inflight.mean(0, 500), 1600.0 / 500.0);
        // One histogram sample per queue sample, of the device's sum.
        // Sums 4, 4, 13, 6: buckets [4, 8) three times, [8, 16) once.
        let h = m.hist_inflight.to_log2();
        assert_eq!((h.buckets.iter().sum::<u64>(), h.buckets[3], h.buckets[4]), (4, 3, 1));
    }

    /// A whole run on four queues with flows hashed over them: every queue's keys, the
    /// completions add up, and the device's in-flight is the queues' sum. One queue:
    /// no per-queue keys.
    #[test]
    fn a_run_reports_every_queue() {
        let text = "duration = \"50ms\"\nwarmup = \"10ms\"\n[machine]\ncpus = 4\n[device]\ntx_queues = 4\n[device.bql]\nenabled = true\n[qdisc]\nkind = \"pfifo\"\n[[traffic]]\nkind = \"udp\"\nflows = 8\n";
        let run = |t: &str| {
            let scn = darkbuf_scenario::load_str("t.toml", t, &[]).unwrap();
            crate::report::simulate(&scn, &Profile::load("seed-vm").unwrap(), 1).unwrap().0.metrics
        };
        let m = run(text);
        let g = |k: &str| m[k].unwrap_or_else(|| panic!("{k} is null"));
        let sum = |col: &str| (0..4).map(|n| g(&format!("bql.txq.{n}.{col}"))).sum::<f64>();
        assert_eq!(sum("completions"), g("bql.completions"));
        assert!(g("bql.completions") > 0.0);
        assert!((sum("inflight_avg") - g("bql.inflight_avg")).abs() < 1e-9 * g("bql.inflight_avg").max(1.0));
        let max_last = (0..4).map(|n| g(&format!("bql.txq.{n}.limit_last"))).fold(0.0, f64::max);
        assert_eq!(max_last, g("bql.limit_last"));
        assert_eq!(g("bql.txq.3.limit_max"), 1_879_048_192.0);
        assert_eq!(m.keys().filter(|k| k.starts_with("bql.txq.")).count(), 4 * 9);
        for n in 0..4 {
            assert!(g(&format!("bql.txq.{n}.inflight_p50")) <= g(&format!("bql.txq.{n}.inflight_p99")));
            assert!(g(&format!("bql.txq.{n}.inflight_p99")) <= g(&format!("bql.txq.{n}.inflight_max")));
        }
        let one = run(&text.replace("tx_queues = 4", "tx_queues = 1"));
        assert!(!one.keys().any(|k| k.starts_with("bql.txq.")));
        assert!(one["bql.completions"].unwrap() > 0.0);
    }
}

#[cfg(test)]
mod xps_tests {
    use crate::id::{CpuId, DevId};
    use darkbuf_measure::Profile;
    use crate::world::World;
    use darkbuf_model::Skb;

    fn world(device: &str) -> World {
        let text = format!("[machine]\ncpus = 4\n[device]\n{device}\n[[traffic]]\nkind = \"udp\"\n");
        let scn = darkbuf_scenario::load_str("t.toml", &text, &[]).unwrap();
        World::new(&scn, Profile::load("seed-vm").unwrap(), 1).unwrap()
    }

    fn flow(f: u32) -> Skb {
        Skb { flow: f, ..Skb::default() }
    }

    /// The driver's map: CPU c sends on queue c % 2, whatever the flow.
    #[test]
    fn xps_cpu_follows_the_sending_cpu() {
        let w = world("tx_queues = 2\nxps = \"cpu\"");
        for f in 0..8 {
            let picked: Vec<u16> = (0..4).map(|cpu| w.netdev_pick_tx(DevId(0), &flow(f), CpuId(cpu))).collect();
            assert_eq!(picked, [0, 1, 0, 1], "flow {f}");
        }
    }

    /// A CPU in no queue's mask falls back to the flow hash; a CPU in two masks picks
    /// one of them by the flow hash; a CPU in one mask always gets it.
    #[test]
    fn xps_list_maps_cpus_to_queues() {
        let w = world("tx_queues = 3\nxps = [1, 1, 2]");
        let hashed = world("tx_queues = 3");
        let mut seen = std::collections::BTreeSet::new();
        for f in 0..64 {
            assert_eq!(w.netdev_pick_tx(DevId(0), &flow(f), CpuId(0)), hashed.netdev_pick_tx(DevId(0), &flow(f), CpuId(0)), "CPU 0: no map");
            assert_eq!(w.netdev_pick_tx(DevId(0), &flow(f), CpuId(2)), 2);
            let q = w.netdev_pick_tx(DevId(0), &flow(f), CpuId(1));
            assert!(q < 2, "CPU 1 is in tx-0 and tx-1 only: {q}");
            seen.insert(q);
        }
        assert_eq!(seen.len(), 2, "flows spread over both of CPU 1's queues");
    }
}
