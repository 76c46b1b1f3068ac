//! veth: mirrors `veth_xmit()`, `veth_xdp_rx()`, `__veth_xdp_flush()`, `veth_poll()`
//! and `veth_xdp_rcv()` in drivers/net/veth.c, with the >= 6.16 qdisc backpressure
//! (dc82a33297fc + 5442a9da6978) and the veth BQL series.
//!
//! `veth_xmit()` produces the skb into the peer's RX queue of the same index
//! (`priv->rq`, a 256-entry ptr_ring) and schedules that queue's NAPI; the peer's poll
//! consumes the ring, completes BQL on the sending TX queue (one unit per packet, per
//! packet / per poll / coalesced as the series' versions did it) and wakes that queue
//! when backpressure stopped it.
//!
//! The device modelled is the sending end. The peer's RX queues it feeds are kept in
//! its driver state (`peer_rqs`), with the NAPI instances that poll them: the
//! per-packet path then touches one device. The peer end gets a device of its own
//! when its TX path is modelled.
//!
//! Without a NAPI on the peer (GRO and XDP off: `rq->napi` is NULL), `veth_xmit()`
//! takes `veth_forward_skb()` -> `__dev_forward_skb()` -> `__netif_rx()`:
//! `enqueue_to_backlog()` puts the skb on the backlog of the CPU that sends (no RPS),
//! dropping it past `netdev_max_backlog`, and `process_backlog()` takes it up the
//! peer's stack in that CPU's NET_RX softirq; the txq is never stopped. Such a
//! device ([`Veth::netif_rx`]) keeps one backlog per CPU of its host as its
//! `peer_rqs`. `[lan]` on veth joins the client namespace to this host (the router)
//! by two of them ([`Builder::veth_lan`]), as the kernel backend sets that pair up.

use crate::id::{CpuId, DevId, HostId, NapiId};
use crate::dev::bql::CompletionBatch;
use crate::dev::NetDev;
use crate::dev::NetdevTx;
use crate::drivers::Driver;
use crate::setup::{Builder, SetupError};
use crate::world::{Net, World};
use darkbuf_model::ptr_ring::PtrRing;
use darkbuf_model::Skb;

/// `SMP_CACHE_BYTES` on x86_64: sets ptr_ring's consumer batch (16 pointers).
const SMP_CACHE_BYTES: usize = 64;

/// `net.core.netdev_max_backlog` (default 1000): `enqueue_to_backlog()` takes a
/// packet while the backlog holds at most this many.
pub const NETDEV_MAX_BACKLOG: usize = 1000;
/// `net.core.dev_weight` (64) as `dev_rx_weight`: `process_backlog()`'s quota.
pub const DEV_RX_WEIGHT: u32 = 64;
/// `[lan]` on veth: the client namespace's host and the peer namespace's (neither
/// has CPUs of its own: they share this host's, as the kernel's namespaces do).
pub const LAN_CLIENT_HOST: HostId = HostId(1);
pub const LAN_PEER_HOST: HostId = HostId(2);

/// The sending end of a veth pair (`struct veth_priv`).
pub struct Veth {
    /// The peer's RX queues (`peer_priv->rq`) that this end's `veth_xmit()` fills;
    /// with [`Veth::netif_rx`], the backlogs of the host's CPUs, by CPU.
    pub peer_rqs: Vec<VethRq>,
    /// The peer has no NAPI (`rq->napi` NULL: GRO and XDP off): `veth_xmit()` goes
    /// through `__netif_rx()`.
    pub netif_rx: bool,
    /// The host's first CPU (the backlogs are indexed from it).
    pub cpu0: CpuId,
}

/// One RX queue (`struct veth_rq`) with its NAPI instance.
pub struct VethRq {
    /// `rq->xdp_ring`.
    pub ring: PtrRing,
    /// `rq->rx_notify_masked`.
    pub rx_notify_masked: bool,
    pub napi: NapiId,
    /// When the BQL charge of consumed entries is completed on the peer's TX queue.
    pub bql: CompletionBatch,
}

impl VethRq {
    pub fn new(ring_size: usize, napi: NapiId, bql: CompletionBatch) -> Self {
        VethRq { ring: PtrRing::new(ring_size, SMP_CACHE_BYTES), rx_notify_masked: false, napi, bql }
    }
}

impl Net {
    #[inline(always)]
    fn veth_mut(&mut self, dev: DevId) -> &mut Veth {
        match &mut self.devs[dev].driver {
            Driver::Veth(v) => v,
            _ => unreachable!("device {dev} is a veth"),
        }
    }
}

impl World {
    /// `veth_xmit()` of `skb` on `dev`'s TX queue `skb.queue_mapping`, into the peer's
    /// RX queue of the same index.
    pub fn veth_xmit(&mut self, cpu: CpuId, dev: DevId, skb: Skb, _xmit_more: bool) -> NetdevTx {
        let q = skb.queue_mapping;
        let txq = q as usize;
        let id = skb.id;
        let jiffies = self.jiffies();
        let d = &mut self.net.devs[dev];
        let has_qdisc = d.txq_qdisc[txq].is_some();
        let Driver::Veth(v) = &mut d.driver else { unreachable!("device {dev} is a veth") };
        if v.netif_rx {
            return self.veth_netif_rx(cpu, dev, skb);
        }
        // veth_xdp_rx(): produce under the producer lock, or report a full ring.
        if v.peer_rqs[txq].ring.full() {
            if d.backpressure && has_qdisc {
                // Stop the queue and push the skb back to the qdisc (NETDEV_TX_BUSY), then
                // always flush so the consumer cannot miss the stop (5442a9da6978).
                d.txqs[txq].tx_stop_queue(jiffies);
                self.veth_xdp_flush(cpu, dev, q);
                return NetdevTx::Busy;
            }
            // Stock, or no qdisc to push back to: the skb is dropped (tx_dropped).
            if self.measuring() {
                self.metrics.ring_drops += 1;
            }
            self.kfree_skb(id);
            return NetdevTx::Ok;
        }
        // BQL charge only when a qdisc is attached (!qdisc_txq_has_no_queue), before
        // producing, one unit per packet for veth; the ring pointer is tagged charged.
        let charged = d.bql && has_qdisc;
        if charged {
            let units = d.bql_units(skb.len);
            if let Err(e) = d.txqs[txq].netdev_tx_sent_queue(units, jiffies) {
                self.finding("dql_queued object too large", format!("{e:?}"));
            }
            self.bql_sample(dev, txq, false);
        }
        let now = self.now;
        // Produce, and read what the flush needs, in one lookup of the peer's RX queue:
        // each lookup is a chain of loads through the device table, and the compiler
        // cannot reuse one across the stores into the packet's record below.
        let rq = &mut self.net.veth_mut(dev).peer_rqs[txq];
        rq.ring.produce(id).expect("ring checked not full");
        let (masked, napi) = (rq.rx_notify_masked, rq.napi);
        let info = self.pkts.get_mut(id);
        info.bql_charged = charged;
        info.ecn = skb.ecn;
        self.pkts.stamp(id, |p| &mut p.t_xmit, now);
        if self.is_measured_txq(dev, q) {
            self.metrics.ring.enter(now);
        }
        // __veth_xdp_flush(), with what was read above.
        if !masked {
            self.veth_rq_schedule(cpu, dev, q, napi);
        }
        NetdevTx::Ok
    }

    /// `veth_forward_skb()` without a peer NAPI: `__netif_rx()` ->
    /// `enqueue_to_backlog()` on this CPU's backlog, whose NAPI (`process_backlog()`)
    /// is scheduled here unless it already is; a full backlog drops the skb
    /// (`priv->dropped`) and veth still returns NETDEV_TX_OK.
    #[inline(never)]
    fn veth_netif_rx(&mut self, cpu: CpuId, dev: DevId, skb: Skb) -> NetdevTx {
        let id = skb.id;
        let v = self.net.veth_mut(dev);
        let q = (cpu.idx() - v.cpu0.idx()) as u16;
        let rq = &mut v.peer_rqs[q as usize];
        if rq.ring.len() > NETDEV_MAX_BACKLOG {
            self.kfree_skb(id);
            return NetdevTx::Ok;
        }
        rq.ring.produce(id).expect("the backlog has a slot past netdev_max_backlog");
        let (masked, napi) = (rq.rx_notify_masked, rq.napi);
        let info = self.pkts.get_mut(id);
        info.bql_charged = false;
        info.ecn = skb.ecn;
        if !masked {
            self.veth_rq_schedule(cpu, dev, q, napi);
        }
        NetdevTx::Ok
    }

    /// `__veth_xdp_flush()` on the peer's RX queue `q`: schedule its NAPI unless
    /// notifications are masked.
    #[inline(always)]
    fn veth_xdp_flush(&mut self, cpu: CpuId, dev: DevId, q: u16) {
        let rq = &mut self.net.veth_mut(dev).peer_rqs[q as usize];
        if rq.rx_notify_masked {
            return;
        }
        let napi = rq.napi;
        self.veth_rq_schedule(cpu, dev, q, napi);
    }

    /// `napi_schedule_prep()` -> `__napi_schedule()` of the peer's RX queue `q`
    /// (its NAPI `napi`), masking the queue's notifications when it schedules.
    #[inline(always)]
    fn veth_rq_schedule(&mut self, cpu: CpuId, dev: DevId, q: u16, napi: NapiId) {
        if self.napi_schedule_prep(napi) {
            self.net.veth_mut(dev).peer_rqs[q as usize].rx_notify_masked = true;
            self.napi_schedule(cpu, napi);
        }
    }

    /// `veth_poll()` begins: the per-poll BQL count starts from zero.
    pub(super) fn veth_poll_begin(&mut self, dev: DevId, q: u16) {
        self.net.veth_mut(dev).peer_rqs[q as usize].bql.poll_begin();
    }

    /// `veth_xdp_rcv()` for one entry: consume it, complete its BQL charge per the
    /// configured mode, and hand it to GRO (the caller); with its per-packet cost.
    #[inline(always)]
    pub(super) fn veth_rcv_one(&mut self, cpu: CpuId, dev: DevId, q: u16) -> Option<(u32, f64)> {
        let now = self.now;
        let measured_ring = self.is_measured_txq(dev, q);
        // One lookup of the device and its RX queue for the consume and the BQL count
        // (the packet's record is another table, so the two borrows are disjoint).
        let d = &mut self.net.devs[dev];
        // (A backlog's queue index is a CPU's, not a TX queue's: nothing it carries
        // was charged to BQL.)
        let limit = d.txqs.get(q as usize).and_then(|t| t.dql.as_ref()).map_or(0, |d| d.limit);
        let unit_packet = d.bql_unit_packet;
        let Driver::Veth(v) = &mut d.driver else { unreachable!("device {dev} is a veth") };
        let rq = &mut v.peer_rqs[q as usize];
        let id = rq.ring.consume()?;
        self.pkts.stamp(id, |p| &mut p.t_consume, now);
        let info = self.pkts.get(id);
        if measured_ring {
            self.metrics.ring.leave(now);
        }
        if info.bql_charged {
            let units = NetDev::bql_units_of(unit_packet, info.len);
            let n = rq.bql.consumed(units, now, limit);
            self.bql_complete(cpu, dev, q, n);
        }
        Some((id, self.profile.costs.consume_ns))
    }

    /// End of `veth_poll()`'s receive loop: the per-poll completion, and the
    /// coalescing window's time check.
    pub(super) fn veth_poll_rx_end(&mut self, cpu: CpuId, dev: DevId, q: u16) {
        if self.net.veth_mut(dev).netif_rx {
            return;
        }
        let now = self.now;
        let n = self.net.veth_mut(dev).peer_rqs[q as usize].bql.poll_end(now);
        self.bql_complete(cpu, dev, q, n);
    }

    /// After `napi_complete_done()`: unmask notifications, and reschedule at once if
    /// the producer filled the ring meanwhile.
    pub(super) fn veth_napi_rearm(&mut self, cpu: CpuId, dev: DevId, q: u16) {
        let rq = &mut self.net.veth_mut(dev).peer_rqs[q as usize];
        rq.rx_notify_masked = false;
        let napi = rq.napi;
        if !rq.ring.empty() {
            self.veth_rq_schedule(cpu, dev, q, napi);
        }
    }

    /// End of `veth_poll()`: wake the sending TX queue the producer stopped on a full
    /// ring, and schedule its qdisc on this CPU.
    pub(super) fn veth_wake_peer_txq(&mut self, cpu: CpuId, dev: DevId, q: u16) {
        if self.net.veth_mut(dev).netif_rx {
            return; // __netif_rx() never stops a txq
        }
        let d = &mut self.net.devs[dev];
        let txq = &mut d.txqs[q as usize];
        if txq.tx_queue_stopped() && txq.tx_wake_queue() {
            if let Some(qi) = d.txq_qdisc[q as usize] {
                self.netif_schedule(cpu, qi);
            }
        }
    }
}

/// Building the device from the scenario (`World::new`).
impl Builder<'_> {
    /// veth: the sending end, holding the peer's RX queues, each polled by its NAPI.
    pub(crate) fn veth(&mut self) -> Result<(), SetupError> {
        let d = &self.scn.device;
        let txqs = self.txqs(d.tx_queues);
        let txq_qdisc = self.qdiscs(&self.scn.qdisc.clone(), DevId(0), d.tx_queues, d.num_tx_queues)?;
        let rx = self.rx_stack(true);
        let peer_rqs = (0..d.tx_queues)
            .map(|i| {
                let napi = self.napi(DevId(0), i as u16, self.irq_cpu(i), rx, true);
                let completion = CompletionBatch::new(d.bql.completion, d.bql.tx_usecs);
                VethRq::new(d.ring_size as usize, napi, completion)
            })
            .collect();
        let xps = self.xps(self.hosts[HostId(0)].cpus.len());
        let cpu0 = self.hosts[HostId(0)].cpus.start;
        let dev = self.netdev(txqs, txq_qdisc, xps, self.profile.costs.xmit_ns, Driver::Veth(Veth { peer_rqs, netif_rx: false, cpu0 }));
        self.devs.push(dev);
        Ok(())
    }

    /// `[lan]` on veth: this host (namespace) routes between the client namespace
    /// (host 1) and the peer namespace (host 2), all three on this host's CPUs, as
    /// the kernel backend's `<tag>-tx` routes between `<tag>-lan` and `<tag>-rx`.
    /// dev 1 is this host's end of the LAN pair (toward the client), dev 2 the
    /// client's end (the near end's device); both carry `[lan.qdisc]`, one TX queue,
    /// no BQL, and no NAPI on their peers (GRO off): `__netif_rx()`. The packets of
    /// dev 0 are for the peer namespace, whose NAPI delivers there; what the peer
    /// answers comes back by the profile's constant, as on a host, to this host,
    /// which forwards it to the client by dev 1. Echo replies come back that way too.
    pub(crate) fn veth_lan(&mut self, lan: &darkbuf_scenario::LanSpec) -> Result<(), SetupError> {
        let client = self.host(0);
        let peer = self.host(0);
        debug_assert_eq!((client, peer), (LAN_CLIENT_HOST, LAN_PEER_HOST));
        let measured: Vec<NapiId> = match &self.devs[DevId(0)].driver {
            Driver::Veth(v) => v.peer_rqs.iter().map(|rq| rq.napi).collect(),
            _ => unreachable!("dev 0 is the veth"),
        };
        for n in measured {
            self.set_napi_host(n, peer);
        }
        // The LAN pair has TSO and GSO off, as the kernel backend sets it (`ethtool -K
        // tso off gso off gro off` on both ends): the client's TCP skbs are cut into
        // frames when they leave its qdisc (`validate_xmit_skb()`), so the router
        // receives, forwards and queues frames, and a packet limit at the router
        // counts frames.
        let router_dev = self.veth_netif_rx_dev(&lan.qdisc, client, false)?;
        let client_dev = self.veth_netif_rx_dev(&lan.qdisc, HostId(0), false)?;
        let mut fib = vec![None; self.hosts.len()];
        fib[peer.idx()] = Some(DevId(0));
        fib[client.idx()] = Some(router_dev);
        self.hosts[HostId(0)].fib = fib;
        self.reply = crate::sock::ping::ReplyPath::Forwarded;
        self.near = crate::setup::Near { host: client, cpu0: self.hosts[HostId(0)].cpus.start, dev: client_dev };
        Ok(())
    }

    /// The peer namespace's end of the pair, for downloads (`direction = "down"`): its
    /// sender's packets cross to this end, which has no NAPI (the kernel backend turns
    /// GRO on at the peer only), so `veth_xmit()` takes `__netif_rx()` into the
    /// backlog of the sending CPU, and `process_backlog()` delivers them here, where
    /// ingress shaping meets them. The peer keeps veth's defaults: `noqueue`, one TX
    /// queue, TSO and GSO on (the kernel backend turns them off at this end only).
    pub(crate) fn veth_peer(&mut self) -> Result<DevId, SetupError> {
        let noqueue = darkbuf_scenario::QdiscSpec { kind: "noqueue".into(), params: Default::default(), child: None };
        self.veth_netif_rx_dev(&noqueue, HostId(0), true)
    }

    /// A veth end whose peer, in host `peer_host`, has no NAPI: one TX queue with
    /// `qdisc`, no BQL, a backlog per CPU, and TSO/GSO as `tso` says (`ethtool -K`).
    fn veth_netif_rx_dev(&mut self, qdisc: &darkbuf_scenario::QdiscSpec, peer_host: HostId, tso: bool) -> Result<DevId, SetupError> {
        let dev = DevId::from_index(self.devs.len());
        let txq_qdisc = self.qdiscs(qdisc, dev, 1, 1)?;
        let cpus = self.hosts[HostId(0)].cpus;
        let completion = CompletionBatch::new(self.scn.device.bql.completion, self.scn.device.bql.tx_usecs);
        let peer_rqs = cpus
            .iter()
            .enumerate()
            .map(|(i, cpu)| {
                let napi = self.backlog_napi(dev, i as u16, cpu, peer_host);
                VethRq { ring: PtrRing::new(NETDEV_MAX_BACKLOG + 1, 0), rx_notify_masked: false, napi, bql: completion.clone() }
            })
            .collect();
        let driver = Driver::Veth(Veth { peer_rqs, netif_rx: true, cpu0: cpus.start });
        let mut netdev = self.netdev(vec![darkbuf_model::txq::NetdevQueue::new(None)], txq_qdisc, crate::dev::Xps::Hash, self.profile.costs.xmit_ns, driver);
        netdev.bql = false;
        netdev.tso = tso;
        self.devs.push(netdev);
        Ok(dev)
    }
}
