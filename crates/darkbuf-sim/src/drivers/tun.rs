//! tun/tap and its consumers: mirrors `tun_net_xmit()`, `tun_ring_recv()` /
//! `tun_do_read()` and the IFF_BACKPRESSURE series' `__tun_wake_queue()` in
//! drivers/net/tun.c, and vhost-net's batched consume (`vhost_net_buf_produce()`,
//! `handle_rx()` in drivers/vhost/net.c).
//!
//! The ring is the queue's `tfile->tx_ring`, a ptr_ring of `txqueuelen` entries with
//! the consumer's batched slot release. `tun_net_xmit()` orphans the skb (the sender's
//! socket gets its memory back at once, so a tap never blocks a UDP sender) and
//! produces it. Stock: a full ring tail-drops (`tx_dropped`), the qdisc never sees a
//! queue. With `backpressure` (IFF_BACKPRESSURE) and a qdisc attached, the produce that
//! fills the ring stops the TX queue (DRV_XOFF); the consumer counts consumed entries in
//! `cons_cnt` and wakes the queue once `wake_threshold` of the ring has been consumed. A
//! produce that still finds the ring full (the lltx race) drops; tun never returns
//! NETDEV_TX_BUSY, so requeues stay near 0.
//!
//! `cons_cnt` counts from the moment the queue was stopped; the series' exact wake body
//! was not retrieved (kernel-txpath reference §6), this is its description.

use crate::cpu::{Step, TaskKind, TaskState};

use crate::id::{CpuId, DevId, HostId, TaskId};
use crate::dev::NetdevTx;
use crate::drivers::Driver;
use crate::setup::{Builder, SetupError};
use crate::world::{Net, World};
use darkbuf_model::ptr_ring::PtrRing;
use darkbuf_model::Skb;
use darkbuf_scenario::ConsumerKind;
use std::collections::VecDeque;

/// vhost-net's batch: `VHOST_NET_BATCH` entries per `ptr_ring_consume_batched()`.
pub const VHOST_NET_BATCH: usize = 64;
/// `VHOST_NET_PKT_WEIGHT`: packets one `handle_rx()` run may move before requeueing.
pub const VHOST_NET_PKT_WEIGHT: u32 = 256;

/// A tun/tap device (`struct tun_struct`) and its queues' consumers.
pub struct Tun {
    pub queues: Vec<TunQueue>,
    /// The consumer is vhost-net (else a user-space reader).
    pub vhost: bool,
    /// Backpressure: entries consumed after a stop before the queue is woken.
    pub wake_cnt: u32,
    /// The reader's (or guest's) own per-packet cost, ns.
    pub app_cost_ns: f64,
}

/// One tun queue (`struct tun_file`) and its consumer.
pub struct TunQueue {
    /// `tfile->tx_ring`.
    pub ring: PtrRing,
    /// Entries consumed since the TX queue was stopped (`tfile->cons_cnt`).
    pub cons_cnt: u32,
    /// The consumer sleeps on the socket's wait queue (empty ring).
    pub waiting: bool,
    /// vhost-net's private batch (`nvq->rxq`), consumed from the ring 64 at a time.
    pub vhost_buf: VecDeque<u32>,
    /// The consumer task (reader process or vhost worker).
    pub task: TaskId,
}

impl TunQueue {
    pub fn new(size: usize, task: TaskId) -> Self {
        TunQueue {
            ring: PtrRing::new(size, 64),
            cons_cnt: 0,
            waiting: true,
            vhost_buf: VecDeque::with_capacity(VHOST_NET_BATCH),
            task,
        }
    }
}

impl Net {
    fn tun_mut(&mut self, dev: DevId) -> &mut Tun {
        match &mut self.devs[dev].driver {
            Driver::Tun(t) => t,
            _ => unreachable!("device {dev} is a tun"),
        }
    }
}

impl World {
    /// `tun_net_xmit()` on queue `skb.queue_mapping`. The reader is woken on its own
    /// CPU, so the caller's CPU does not matter (unlike veth's NAPI schedule).
    pub fn tun_net_xmit(&mut self, dev: DevId, skb: Skb) -> NetdevTx {
        let qi = skb.queue_mapping as usize;
        let id = skb.id;
        // skb_orphan(): the sender's socket is credited now, not when the reader frees it.
        self.skb_orphan(id);
        let d = &self.net.devs[dev];
        let backpressure = d.backpressure && d.txq_qdisc[qi].is_some();
        if self.net.tun_mut(dev).queues[qi].ring.produce(id).is_err() {
            // Stock: a full ring drops (tx_dropped, SKB_DROP_REASON_FULL_RING); with
            // backpressure only a produce racing into a ring that just filled gets here.
            if self.measuring() {
                self.metrics.ring_drops += 1;
            }
            self.kfree_skb(id);
            return NetdevTx::Ok;
        }
        let now = self.now;
        self.pkts.get_mut(id).ecn = skb.ecn;
        self.pkts.stamp(id, |p| &mut p.t_xmit, now);
        if self.is_measured_txq(dev, qi as u16) {
            self.metrics.ring.enter(now);
        }
        if backpressure && !self.net.tun_mut(dev).queues[qi].ring.check_produce() {
            // The produce filled the ring: stop the queue until the consumer makes room.
            let jiffies = self.jiffies();
            self.net.devs[dev].txqs[qi].tx_stop_queue(jiffies);
            self.net.tun_mut(dev).queues[qi].cons_cnt = 0;
        }
        // Wake the reader (sk_data_ready / wake_up_interruptible_poll).
        let tq = &mut self.net.tun_mut(dev).queues[qi];
        if tq.waiting {
            tq.waiting = false;
            let task = tq.task;
            self.wake_task(task);
        }
        NetdevTx::Ok
    }

    /// `__tun_wake_queue()`: after the consumer took `consumed` entries, wake a TX queue
    /// stopped on a full ring once enough of it has been consumed. The qdisc is
    /// rescheduled on the consumer's CPU.
    fn tun_wake_queue(&mut self, cpu: CpuId, dev: DevId, q: u16, consumed: u32) {
        let qi = q as usize;
        if !self.net.devs[dev].txqs[qi].tx_queue_stopped() {
            return;
        }
        let t = self.net.tun_mut(dev);
        let wake_cnt = t.wake_cnt;
        let tq = &mut t.queues[qi];
        tq.cons_cnt += consumed;
        // An empty ring always wakes: entries consumed before the stop but not yet
        // released (ptr_ring's batching) mean fewer than ring-size entries may follow it.
        if (tq.cons_cnt >= wake_cnt && !tq.ring.full()) || tq.ring.is_empty() {
            tq.cons_cnt = 0;
            let d = &mut self.net.devs[dev];
            if d.txqs[qi].tx_wake_queue() {
                if let Some(qd) = d.txq_qdisc[qi] {
                    self.netif_schedule(cpu, qd);
                }
            }
        }
    }

    /// A frame left the ring for the consumer.
    fn tun_consumed(&mut self, dev: DevId, q: u16, id: u32) {
        self.pkts.stamp(id, |p| &mut p.t_consume, self.now);
        if self.is_measured_txq(dev, q) {
            self.metrics.ring.leave(self.now);
        }
    }

    /// One `read()` by the user-space reader of queue `q` (`tun_do_read` ->
    /// `tun_ring_recv`): a frame, or sleep on an empty ring.
    pub(super) fn tun_read(&mut self, cpu: CpuId, dev: DevId, q: u16) -> Step {
        let qi = q as usize;
        let Some(id) = self.net.tun_mut(dev).queues[qi].ring.consume() else {
            self.net.tun_mut(dev).queues[qi].waiting = true;
            return Step::Done(0);
        };
        self.tun_consumed(dev, q, id);
        self.tun_wake_queue(cpu, dev, q, 1);
        let app = self.net.tun_mut(dev).app_cost_ns;
        let cost = self.cost(self.profile.costs.tun_read_ns + app);
        self.deliver(cpu, self.sched.cpus[cpu].host, id, self.now + cost);
        Step::Done(cost)
    }

    /// One step of vhost-net's `handle_rx()` for queue `q`: refill the private batch
    /// from the ring when it is empty (waking the TX queue for the batch), then move one
    /// frame to the guest. `done` counts frames in this run, up to the packet weight.
    pub(super) fn vhost_handle_rx(&mut self, cpu: CpuId, dev: DevId, q: u16, done: &mut u16) -> Step {
        let qi = q as usize;
        let mut cost = 0;
        if self.net.tun_mut(dev).queues[qi].vhost_buf.is_empty() {
            let mut n = 0;
            while n < VHOST_NET_BATCH {
                let tq = &mut self.net.tun_mut(dev).queues[qi];
                let Some(id) = tq.ring.consume() else { break };
                tq.vhost_buf.push_back(id);
                self.tun_consumed(dev, q, id);
                n += 1;
            }
            if n == 0 {
                self.net.tun_mut(dev).queues[qi].waiting = true;
                return Step::Done(0);
            }
            self.tun_wake_queue(cpu, dev, q, n as u32);
            cost += self.cost(self.profile.costs.vhost_batch_ns);
        }
        let id = self.net.tun_mut(dev).queues[qi].vhost_buf.pop_front().expect("refilled");
        let app = self.net.tun_mut(dev).app_cost_ns;
        cost += self.cost(self.profile.costs.vhost_pkt_ns + app);
        self.deliver(cpu, self.sched.cpus[cpu].host, id, self.now + cost);
        *done += 1;
        if *done as u32 >= VHOST_NET_PKT_WEIGHT {
            // vhost_exceeds_weight(): requeue the work; the task stays runnable.
            return Step::Done(cost);
        }
        Step::Continue(cost)
    }

    /// Whether queue `q`'s consumer has work (its task stays runnable); if not, it goes
    /// to sleep on the socket's wait queue and the next produce wakes it.
    pub(super) fn tun_consumer_wants_cpu(&mut self, dev: DevId, q: u16) -> bool {
        let tq = &mut self.net.tun_mut(dev).queues[q as usize];
        let work = !tq.ring.is_empty() || !tq.vhost_buf.is_empty();
        tq.waiting = !work;
        work
    }
}

/// Building the device from the scenario (`World::new`).
impl Builder<'_> {
    /// tun/tap: the device and its queues' consumers (reader processes or vhost workers).
    pub(crate) fn tun(&mut self) -> Result<(), SetupError> {
        let d = &self.scn.device;
        let txqs = self.txqs(d.tx_queues);
        let txq_qdisc = self.qdiscs(&self.scn.qdisc.clone(), DevId(0), d.tx_queues, d.num_tx_queues)?;
        let vhost = self.scn.consumer.kind == ConsumerKind::Vhost;
        let queues = (0..d.tx_queues)
            .map(|i| {
                let task = self.task(TaskKind::DevWorker { dev: DevId(0), queue: i as u16 }, TaskState::Sleeping, self.irq_cpu(i));
                TunQueue::new(d.ring_size as usize, task)
            })
            .collect();
        // wake_threshold 0 = on any free slot; 1 = only once the ring is empty.
        let wake_cnt = ((d.wake_threshold * d.ring_size as f64).ceil() as u32).clamp(1, d.ring_size.max(1));
        let tun = Tun { queues, vhost, wake_cnt, app_cost_ns: self.scn.consumer.app_cost_ns as f64 };
        let xps = self.xps(self.hosts[HostId(0)].cpus.len());
        let dev = self.netdev(txqs, txq_qdisc, xps, self.profile.costs.xmit_ns, Driver::Tun(tun));
        self.devs.push(dev);
        Ok(())
    }
}
