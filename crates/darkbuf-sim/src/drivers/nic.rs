//! A physical NIC: per TX queue a descriptor ring, one port serializing frames onto the
//! wire at line rate, TX-completion interrupts with ethtool's coalescing, and a NAPI
//! poll per channel that reclaims completions and receives frames. Mirrors the shape
//! of igb's `igb_xmit_frame_ring()` / `igb_clean_tx_irq()` / `igb_poll()` and mlx5e's
//! `mlx5e_xmit()` / `mlx5e_poll_tx_cq()` / `mlx5e_napi_poll()`, with bcmgenet's BQL
//! hooks (drivers/net/ethernet/broadcom/genet/bcmgenet.c):
//!
//! - `ndo_start_xmit` posts the skb's descriptors (`1 + nr_frags`), charges BQL in
//!   bytes (`__netdev_tx_sent_queue()`: with `xmit_more` only `dql_queued()`), stops
//!   the queue (DRV_XOFF) when fewer than `DESC_NEEDED` = MAX_SKB_FRAGS + 4
//!   descriptors are free (igb's `igb_maybe_stop_tx()`), and rings the doorbell on the
//!   bulk's last skb: only then does the NIC see the descriptors.
//! - The port sends one skb at a time, its frames back to back, each taking
//!   (frame + FCS 4 + preamble/SFD 8 + IFG 12 bytes) x 8 / rate; TX queues with
//!   visible descriptors share it round-robin per skb (mlx5's per-WQE arbitration, an
//!   assumption: the arbitration is not documented). The port clock is kept in
//!   picoseconds, so back-to-back frames do not drift.
//! - A finished skb writes a completion. The channel's interrupt fires when
//!   `tx_frames` completions are pending, or once `tx_usecs` have passed since the
//!   last interrupt (igb's ITR throttle, mlx5's default EQE-based period) or since the
//!   first pending completion (`cqe_mode`, mlx5's `tx_cqe_moder`); 0 = at once. It
//!   stays masked until its NAPI poll completes. RX frames interrupt when the
//!   interrupt is armed, at once (rx-usecs 0, the default here), or once `rx_frames`
//!   are pending or `rx_usecs` after the first of them: the same vector serves the
//!   channel's TX and RX queue (mlx5's channels, igb's queue pairs), so a returning
//!   ACK's interrupt reaps the TX completions written before it.
//! - Adaptive moderation (`adaptive_tx`): igb's dynamic ITR (`igb_update_ring_itr()`
//!   after each poll, written at the next interrupt) and mlx5e's TX DIM (`net_dim()`
//!   after each poll, applied at once) set each channel's period and count.
//!   `adaptive_rx`: mlx5e's RX DIM (`mlx5e_handle_rx_dim()`) sets each channel's RX
//!   period and count the same way, from the RX profiles in CQE mode.
//! - The poll reclaims up to `MLX5E_TX_CQ_POLL_BUDGET` = 128 completions (the skb's
//!   destructor runs here, on the IRQ CPU), calls `netdev_tx_completed_queue()` once
//!   with their bytes, wakes a stopped queue once `2 * DESC_NEEDED` descriptors are
//!   free (`TX_WAKE_THRESHOLD`), then receives up to its budget; more completions than
//!   128 keep the NAPI scheduled (returns the budget).
//!
//! Channel i is TX queue i with RX queue i, one NAPI and one IRQ on `irq_cpus[i]`.
//! The CPU cost of the hard interrupt is charged at the start of the poll it schedules.

use crate::arena::PktInfo;
use crate::id::{CpuId, DevId, HostId, LinkId, NapiId};
use crate::dev::Xps;
use crate::dev::NetdevTx;
use crate::drivers::Driver;
use crate::event::Event;
use crate::path::Link;
use crate::setup::{Builder, SetupError};
use crate::sock::ping::ReplyPath;
use crate::world::{Net, World};
use darkbuf_model::Skb;
use darkbuf_scenario::{NicSpec, NicWire, QdiscSpec};
use std::collections::{BTreeMap, VecDeque};

/// `MAX_SKB_FRAGS`.
const MAX_SKB_FRAGS: u32 = darkbuf_scenario::MAX_SKB_FRAGS;
/// igb's `DESC_NEEDED`: the free descriptors below which the queue is stopped.
pub const DESC_NEEDED: u32 = MAX_SKB_FRAGS + 4;
/// igb's `TX_WAKE_THRESHOLD`: the free descriptors at which a stopped queue is woken.
pub const TX_WAKE_THRESHOLD: u32 = 2 * DESC_NEEDED;
/// `MLX5E_TX_CQ_POLL_BUDGET`: completions one poll reclaims at most.
pub const TX_CQ_POLL_BUDGET: usize = 128;
use crate::wire::{ETH_ZLEN, WIRE_OVERHEAD};
/// The rx ring size (ethtool -g rx): what the far end buffers before it drops.
pub const RX_RING_SIZE: usize = 1024;

/// One posted skb.
#[derive(Clone, Copy, Debug)]
struct TxEntry {
    id: u32,
    descs: u32,
    /// What BQL was charged: the bytes `netdev_tx_sent_queue()` got.
    bytes: u32,
    /// Serialization time of all its frames, ps.
    wire_ps: u64,
}

/// A TX descriptor ring (`struct igb_ring`, mlx5's SQ).
pub struct TxRing {
    free: u32,
    /// Posted skbs, oldest first, until reclaimed. The first `done` have been sent
    /// (their completions written); the first `visible` were announced by a doorbell.
    ring: VecDeque<TxEntry>,
    done: usize,
    visible: usize,
}

/// One channel: a TX ring, an RX ring, their NAPI and interrupt.
pub struct Channel {
    pub tx: TxRing,
    pub rx: VecDeque<u32>,
    pub napi: NapiId,
    pub irq_cpu: CpuId,
    /// The interrupt is enabled (not masked by a scheduled NAPI).
    armed: bool,
    /// When the armed moderation timer fires (ns), if one is: the earlier of the TX
    /// side's and the RX side's.
    timer_at: Option<u64>,
    /// When the RX side's moderation is due (rx-usecs after the first frame pending
    /// since the last interrupt), if frames are pending under rx-usecs.
    rx_due: Option<u64>,
    /// When the interrupt last fired (ns).
    last_irq: u64,
    /// The hard interrupt's cost is still to be charged to the poll it scheduled.
    irq_cost_due: bool,
    /// The last poll reclaimed its whole TX budget (`mlx5e_poll_tx_cq()` returned busy).
    tx_busy: bool,
    /// The channel's moderation now: period (ns) and completion count.
    period_ns: u64,
    frames: u32,
    moder: Adaptive,
    /// The RX side's moderation now: period from the first pending frame (ns) and
    /// frame count (0 = none), and its DIM when `adaptive_rx` moves them.
    rx_period_ns: u64,
    rx_frames: u32,
    rx_dim: Option<Box<RxDim>>,
}

/// mlx5e's RX DIM of one receive queue, with the queue's counters (`rq->stats`,
/// `rq->cq.event_ctr`).
pub struct RxDim {
    dim: darkbuf_model::dim::Dim,
    packets: u32,
    bytes: u32,
    events: u16,
    /// Frames received over the run (which channel `peer.rx_usecs` reports).
    total: u64,
}

/// A channel's adaptive moderation (`ethtool -C adaptive-tx on`).
pub enum Adaptive {
    Off,
    /// igb's dynamic ITR, and a new value to write at the next interrupt.
    Igb { itr: darkbuf_model::igb_itr::IgbItr, pending_ns: Option<u64>, gigabit: bool },
    /// mlx5e's TX DIM with the send queue's counters (`sq->stats`, `cq.event_ctr`).
    Dim { dim: Box<darkbuf_model::dim::Dim>, cqe_mode: bool, packets: u32, bytes: u32, events: u16 },
}

/// ethtool -S style counters, cumulative.
#[derive(Clone, Copy, Debug, Default)]
pub struct NicStats {
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub tx_xmit_more: u64,
    pub tx_queue_stopped: u64,
    pub tx_queue_wake: u64,
    /// Completions reclaimed by the TX NAPI polls.
    pub tx_cqes: u64,
    /// Interrupts that found TX completions pending.
    pub tx_irqs: u64,
    pub irqs: u64,
    pub rx_packets: u64,
    /// Frames the full RX ring dropped (mlx5 `rx_out_of_buffer`, igb `rx_fifo_errors`).
    pub rx_dropped: u64,
    /// ps the port spent serializing (measured window: see `busy_ps_in`).
    pub busy_ps: u64,
}

impl NicStats {
    /// The counters accumulated since `base`.
    pub fn since(&self, base: &NicStats) -> NicStats {
        NicStats {
            tx_packets: self.tx_packets - base.tx_packets,
            tx_bytes: self.tx_bytes - base.tx_bytes,
            tx_xmit_more: self.tx_xmit_more - base.tx_xmit_more,
            tx_queue_stopped: self.tx_queue_stopped - base.tx_queue_stopped,
            tx_queue_wake: self.tx_queue_wake - base.tx_queue_wake,
            tx_cqes: self.tx_cqes - base.tx_cqes,
            tx_irqs: self.tx_irqs - base.tx_irqs,
            irqs: self.irqs - base.irqs,
            rx_packets: self.rx_packets - base.rx_packets,
            rx_dropped: self.rx_dropped - base.rx_dropped,
            busy_ps: self.busy_ps - base.busy_ps,
        }
    }
}

/// The NIC's port: one frame at a time.
#[derive(Default)]
struct Port {
    /// The TX queue whose ring head (`done`) is on the wire.
    busy: Option<u16>,
    /// When the wire is free again, ps.
    free_at_ps: u64,
    /// Round robin: the queue to look at first.
    next: u16,
}

/// A physical NIC's private state.
pub struct Nic {
    pub rate_bps: u64,
    pub chans: Vec<Channel>,
    port: Port,
    /// Where this port's wire leads.
    pub link: LinkId,
    /// The wire is several links, one per `[[traffic]] path_delay` (`link` + the
    /// packet's socket's `Sockets::link`), as per-host netem delays would be.
    pub flow_links: bool,
    pub tx_usecs: u32,
    pub tx_frames: u32,
    pub cqe_mode: bool,
    pub adaptive_tx: bool,
    pub adaptive_rx: bool,
    /// `ethtool -C rx-usecs` (ns here) and `rx-frames`: the RX side of each channel's
    /// interrupt, as set (RX DIM moves each channel's own); 0 ns = a frame interrupts at
    /// once.
    pub rx_period_ns: u64,
    pub rx_frames: u32,
    pub model: darkbuf_scenario::NicModel,
    pub stats: NicStats,
    pub base: NicStats,
}

impl Nic {
    pub fn new(rate_bps: u64, link: LinkId, model: darkbuf_scenario::NicModel, c: &darkbuf_scenario::Coalesce) -> Nic {
        Nic {
            rate_bps,
            chans: Vec::new(),
            port: Port::default(),
            link,
            flow_links: false,
            tx_usecs: c.tx_usecs,
            tx_frames: c.tx_frames,
            cqe_mode: c.cqe_mode,
            adaptive_tx: c.adaptive_tx,
            adaptive_rx: c.adaptive_rx,
            rx_period_ns: c.rx_usecs as u64 * 1000,
            rx_frames: c.rx_frames,
            model,
            stats: NicStats::default(),
            base: NicStats::default(),
        }
    }

    /// Adds channel i with its NAPI and IRQ CPU.
    pub fn add_channel(&mut self, ring_size: u32, napi: NapiId, irq_cpu: CpuId) {
        use darkbuf_model::{dim, igb_itr::IgbItr};
        let (period_ns, frames, moder) = match (self.adaptive_tx, self.model) {
            (false, _) => (self.tx_usecs as u64 * 1000, self.tx_frames, Adaptive::Off),
            (true, darkbuf_scenario::NicModel::Igb) => {
                // tx-usecs 3: the conservative dynamic mode, from IGB_START_ITR.
                let itr = IgbItr::new(true);
                (itr.interval_ns(), 0, Adaptive::Igb { itr, pending_ns: None, gigabit: self.rate_bps == 1_000_000_000 })
            }
            (true, darkbuf_scenario::NicModel::Mlx5) => {
                let m = dim::tx_moderation(self.cqe_mode, dim::DEF_PROFILE);
                let d = Box::new(dim::Dim::new(dim::DEF_PROFILE));
                (m.usec as u64 * 1000, m.pkts, Adaptive::Dim { dim: d, cqe_mode: self.cqe_mode, packets: 0, bytes: 0, events: 0 })
            }
        };
        // RX DIM in CQE mode (cq_period_start_from_cqe), from its default profile.
        let (rx_period_ns, rx_frames, rx_dim) = if self.adaptive_rx {
            let m = dim::rx_moderation(true, dim::DEF_PROFILE);
            let d = RxDim { dim: dim::Dim::new(dim::DEF_PROFILE), packets: 0, bytes: 0, events: 0, total: 0 };
            (m.usec as u64 * 1000, m.pkts, Some(Box::new(d)))
        } else {
            (self.rx_period_ns, self.rx_frames, None)
        };
        self.chans.push(Channel {
            tx: TxRing { free: ring_size, ring: VecDeque::with_capacity(ring_size as usize), done: 0, visible: 0 },
            rx: VecDeque::with_capacity(RX_RING_SIZE),
            napi,
            irq_cpu,
            armed: true,
            timer_at: None,
            rx_due: None,
            last_irq: 0,
            irq_cost_due: false,
            tx_busy: false,
            period_ns,
            frames,
            moder,
            rx_period_ns,
            rx_frames,
            rx_dim,
        });
    }

    /// Channel `ch`'s moderation period now, µs (what `ethtool -c` shows).
    pub fn tx_usecs_now(&self, ch: usize) -> f64 {
        self.chans[ch].period_ns as f64 / 1000.0
    }

    /// With RX DIM (`adaptive_rx`), the RX period now of the channel that received the
    /// most frames, µs (what `ethtool -c` shows for it); `None` without.
    pub fn rx_usecs_now(&self) -> Option<f64> {
        let busiest = self.chans.iter().filter_map(|c| c.rx_dim.as_ref().map(|d| (d.total, c.rx_period_ns))).max_by_key(|&(n, _)| n)?;
        Some(busiest.1 as f64 / 1000.0)
    }

    /// Serialization time of an skb of `len` L2 bytes in `segs` frames (a TSO skb's
    /// `len` counts every segment's headers), ps.
    fn frames_ps(&self, len: u32, segs: u32) -> u64 {
        let bytes = if segs <= 1 { len.max(ETH_ZLEN) + WIRE_OVERHEAD } else { len + segs * WIRE_OVERHEAD };
        bytes as u64 * 8_000_000_000_000 / self.rate_bps
    }

    /// skbs posted to TX queue `q` and not yet sent (the one on the wire included).
    pub fn unsent(&self, q: usize) -> usize {
        self.chans.get(q).map_or(0, |c| c.tx.ring.len() - c.tx.done)
    }

    /// Packets the NIC holds: posted and not reclaimed, and received and not polled.
    pub fn held(&self) -> u64 {
        self.chans.iter().map(|c| (c.tx.ring.len() + c.rx.len()) as u64).sum()
    }
}

impl Net {
    #[inline(always)]
    fn nic_mut(&mut self, dev: DevId) -> &mut Nic {
        match self.devs[dev].driver.rx_nic_mut() {
            Some(n) => n,
            None => unreachable!("device {dev} is a NIC"),
        }
    }
}

impl World {
    /// `ndo_start_xmit`: post `skb` on TX queue `skb.queue_mapping`.
    pub fn nic_xmit(&mut self, dev: DevId, skb: Skb, more: bool) -> NetdevTx {
        let q = skb.queue_mapping as usize;
        let jiffies = self.jiffies();
        let now = self.now;
        let d = &mut self.net.devs[dev];
        let Driver::Nic(nic) = &mut d.driver else { unreachable!("device {dev} is a NIC") };
        // A descriptor for the headers and one per 32 KB page fragment of the payload.
        let descs = 1 + (skb.segs() > 1) as u32 * skb.len.div_ceil(32768);
        if nic.chans[q].tx.free < descs {
            // The queue should have been stopped: the driver's "BUG! Tx Ring full".
            d.txqs[q].tx_stop_queue(jiffies);
            return NetdevTx::Busy;
        }
        let bytes = skb.len.max(ETH_ZLEN);
        let entry = TxEntry { id: skb.id, descs, bytes, wire_ps: nic.frames_ps(skb.len, skb.segs()) };
        if let Adaptive::Dim { packets, bytes: b, .. } = &mut nic.chans[q].moder {
            // mlx5e_xmit(): the send queue's packets (segments) and bytes.
            *packets = packets.wrapping_add(skb.segs());
            *b = b.wrapping_add(bytes);
        }
        let tx = &mut nic.chans[q].tx;
        tx.ring.push_back(entry);
        tx.free -= descs;
        nic.stats.tx_packets += skb.segs() as u64;
        nic.stats.tx_bytes += bytes as u64;
        nic.stats.tx_xmit_more += more as u64;
        // igb_maybe_stop_tx(): stop while a maximal skb might not fit.
        if tx.free < DESC_NEEDED {
            d.txqs[q].tx_stop_queue(jiffies);
            nic.stats.tx_queue_stopped += 1;
        }
        let doorbell = match d.txqs[q].netdev_tx_sent_queue_more(bytes, more, jiffies) {
            Ok(ring) => ring,
            Err(e) => {
                self.finding("dql_queued object too large", format!("{e:?}"));
                true
            }
        };
        // The skb as the qdisc left it: a CE mark by an AQM travels in the IP header.
        self.pkts.get_mut(skb.id).ecn = skb.ecn;
        self.pkts.stamp(skb.id, |p| &mut p.t_xmit, now);
        if self.is_measured_txq(dev, q as u16) {
            self.metrics.ring.enter(now);
        }
        self.bql_sample(dev, q, false);
        if doorbell {
            let nic = self.net.nic_mut(dev);
            let tx = &mut nic.chans[q].tx;
            tx.visible = tx.ring.len();
            if nic.port.busy.is_none() {
                let from_ps = nic.port.free_at_ps.max(now * 1000);
                self.port_start(dev, from_ps);
            }
        }
        NetdevTx::Ok
    }

    /// The port is idle: start the next visible skb at `start_ps`, round robin over the
    /// TX queues.
    fn port_start(&mut self, dev: DevId, start_ps: u64) {
        let nic = self.net.nic_mut(dev);
        let n = nic.chans.len();
        let Some(q) = (0..n).map(|i| (nic.port.next as usize + i) % n).find(|&q| nic.chans[q].tx.visible > nic.chans[q].tx.done) else {
            return;
        };
        nic.port.next = ((q + 1) % n) as u16;
        nic.port.busy = Some(q as u16);
        let e = nic.chans[q].tx.ring[nic.chans[q].tx.done];
        let end_ps = start_ps + e.wire_ps;
        nic.port.free_at_ps = end_ps;
        nic.stats.busy_ps += e.wire_ps;
        let start = start_ps.div_ceil(1000);
        self.pkts.stamp(e.id, |p| &mut p.t_wire, start);
        if self.is_measured_txq(dev, q as u16) {
            self.metrics.ring.leave(start.max(self.now));
        }
        self.events.push(end_ps.div_ceil(1000), Event::Wire(dev));
    }

    /// `Event::Wire`: the skb on the wire is sent. Its frames go down the link as a
    /// copy (the far end's own skb), its completion is written, and the next one starts.
    pub fn nic_wire_done(&mut self, dev: DevId) {
        let nic = self.net.nic_mut(dev);
        let q = nic.port.busy.take().expect("the port was sending") as usize;
        let tx = &mut nic.chans[q].tx;
        let id = tx.ring[tx.done].id;
        tx.done += 1;
        let (link, flow_links) = (nic.link, nic.flow_links);
        let (end_ps, rate_bps) = (nic.port.free_at_ps, nic.rate_bps);
        let copy: PktInfo = *self.pkts.get(id);
        let link = if flow_links { LinkId(link.0 + self.socks.link.get(copy.sock.idx()).copied().unwrap_or(0)) } else { link };
        let rx_id = self.pkts.alloc(PktInfo { destructor: crate::arena::Destructor::None, bql_charged: false, ..copy });
        self.pkts.copy_probe_times(id, rx_id);
        self.metrics.fate.created += 1;
        if copy.segs > 1 && copy.proto == crate::arena::Proto::Tcp && self.net.links[link].sees_frames() {
            self.link_send_frames(link, rx_id, end_ps, rate_bps);
        } else {
            self.link_send(link, rx_id);
        }
        self.nic_completion(dev, q);
        // Back to back: the next frame starts when this one's last bit left.
        let from_ps = self.net.nic_mut(dev).port.free_at_ps;
        self.port_start(dev, from_ps);
    }

    /// A TX completion is pending on channel `ch` (just written, or left when the
    /// interrupt was re-armed): interrupt now, or arm the moderation timer.
    fn nic_completion(&mut self, dev: DevId, ch: usize) {
        let now = self.now;
        let nic = self.net.nic_mut(dev);
        let cqe_mode = nic.cqe_mode;
        let c = &mut nic.chans[ch];
        let (frames, period) = (c.frames, c.period_ns);
        if !c.armed {
            return;
        }
        let pending = c.tx.done as u32;
        if period == 0 || (frames > 0 && pending >= frames) {
            self.nic_irq(dev, ch);
            return;
        }
        if c.timer_at.is_some() && c.rx_due.is_none() {
            return;
        }
        // The period runs from the first pending completion (CQE mode, this one: the
        // timer is armed now) or from the last interrupt.
        let due = if cqe_mode { now + period } else { c.last_irq + period };
        if due <= now {
            self.nic_irq(dev, ch);
        } else {
            self.nic_arm_timer(dev, ch, due);
        }
    }

    /// Arms channel `ch`'s one moderation timer for `due`, unless it fires earlier
    /// already (the interrupt serves both sides whichever side armed it).
    fn nic_arm_timer(&mut self, dev: DevId, ch: usize, due: u64) {
        let c = &mut self.net.nic_mut(dev).chans[ch];
        if c.timer_at.is_some_and(|t| t <= due) {
            return;
        }
        c.timer_at = Some(due);
        self.events.push(due, Event::NicIrqTimer(dev, ch as u16));
    }

    /// Frames are pending on channel `ch`'s RX ring and the interrupt is armed: it
    /// fires at once (rx-usecs 0), when `rx-frames` are pending, or rx-usecs after the
    /// first of them. Its poll then also reaps the TX completions written meanwhile:
    /// with RX moderation a returning ACK no longer reaps them at once.
    fn nic_rx_pending(&mut self, dev: DevId, ch: usize) {
        let now = self.now;
        let c = &mut self.net.nic_mut(dev).chans[ch];
        let (period, frames) = (c.rx_period_ns, c.rx_frames);
        if period == 0 || (frames > 0 && c.rx.len() >= frames as usize) {
            self.nic_irq(dev, ch);
            return;
        }
        let due = *c.rx_due.get_or_insert(now + period);
        self.nic_arm_timer(dev, ch, due);
    }

    /// `Event::NicIrqTimer`: the moderation timer expired (unless it was cancelled or
    /// re-armed since).
    pub fn nic_irq_timer(&mut self, dev: DevId, ch: u16) {
        let now = self.now;
        let c = &mut self.net.nic_mut(dev).chans[ch as usize];
        if c.timer_at != Some(now) {
            return;
        }
        c.timer_at = None;
        if c.armed {
            self.nic_irq(dev, ch as usize);
        }
    }

    /// The channel's interrupt fires on its IRQ CPU: mask it and schedule the NAPI there.
    fn nic_irq(&mut self, dev: DevId, ch: usize) {
        let now = self.now;
        let nic = self.net.nic_mut(dev);
        let c = &mut nic.chans[ch];
        c.armed = false;
        c.timer_at = None;
        c.rx_due = None;
        c.irq_cost_due = true;
        c.last_irq = now;
        let tx = c.tx.done > 0;
        match &mut c.moder {
            // igb_write_itr(): the ITR computed after the last poll takes effect now.
            Adaptive::Igb { pending_ns, .. } => {
                if let Some(ns) = pending_ns.take() {
                    c.period_ns = ns;
                }
            }
            // mlx5e_completion_event(): the CQ's event counter.
            Adaptive::Dim { events, .. } if tx => *events = events.wrapping_add(1),
            _ => {}
        }
        // The receive queue's CQ has its own event counter.
        if let (Some(d), false) = (c.rx_dim.as_mut(), c.rx.is_empty()) {
            d.events = d.events.wrapping_add(1);
        }
        let (napi, cpu) = (c.napi, c.irq_cpu);
        nic.stats.irqs += 1;
        nic.stats.tx_irqs += tx as u64;
        if self.napi_schedule_prep(napi) {
            self.napi_schedule(cpu, napi);
            self.cpu_kick(cpu, 0);
        }
    }

    /// A frame arrived from the link: into the RX ring of its flow's channel (RSS), or
    /// dropped when the ring is full; the RX interrupt fires if it is armed.
    pub fn nic_rx(&mut self, dev: DevId, id: u32) {
        let now = self.now;
        let flow = self.pkts.get(id).flow;
        let d = &mut self.net.devs[dev];
        let hash = darkbuf_model::skb::flow_hash(flow, d.txhash_key);
        let Some(nic) = d.driver.rx_nic_mut() else { unreachable!("device {dev} is a NIC") };
        // RSS: the flow's hash picks the RX queue.
        let ch = hash as usize % nic.chans.len();
        if nic.chans[ch].rx.len() >= RX_RING_SIZE {
            nic.stats.rx_dropped += 1;
            self.kfree_skb(id);
            return;
        }
        nic.chans[ch].rx.push_back(id);
        nic.stats.rx_packets += 1;
        let armed = nic.chans[ch].armed;
        // The skb the driver builds around its receive buffers: from here on the
        // packet is charged what the driver allocated, not what the sender did (a
        // router's qdisc memory, the receiver's sk_rmem_alloc and scaling_ratio).
        let model = nic.model;
        let p = self.pkts.get_mut(id);
        p.truesize = rx_truesize(model, p.len, p.segs);
        self.pkts.stamp(id, |p| &mut p.t_arrive, now);
        if armed {
            self.nic_rx_pending(dev, ch);
        }
    }

    /// NAPI poll hook: reclaim up to 128 completions of the channel's TX ring, complete
    /// their BQL bytes once, and wake the queue if it was stopped. Returns the CPU time.
    pub(super) fn nic_poll_begin(&mut self, cpu: CpuId, dev: DevId, ch: u16) -> f64 {
        let costs = (self.profile.costs.nic_tx_clean_ns, self.profile.costs.nic_irq_ns);
        let c = &mut self.net.nic_mut(dev).chans[ch as usize];
        let irq_ns = if std::mem::take(&mut c.irq_cost_due) { costs.1 } else { 0.0 };
        let n = c.tx.done.min(TX_CQ_POLL_BUDGET);
        let mut bytes = 0u32;
        let mut frames = 0u64;
        for _ in 0..n {
            let tx = &mut self.net.nic_mut(dev).chans[ch as usize].tx;
            let e = tx.ring.pop_front().expect("a sent entry");
            tx.free += e.descs;
            tx.done -= 1;
            tx.visible -= 1;
            bytes += e.bytes;
            frames += self.pkts.get(e.id).segs.max(1) as u64;
            // napi_consume_skb(): the destructor (sock_wfree, tcp_wfree) runs here.
            self.skb_orphan(e.id);
            self.pkts.free(e.id);
            self.metrics.fate.transmitted += 1;
        }
        let nic = self.net.nic_mut(dev);
        nic.stats.tx_cqes += n as u64;
        if let Adaptive::Igb { itr, .. } = &mut nic.chans[ch as usize].moder {
            // igb_clean_tx_irq(): total_bytes and total_packets (segments).
            itr.tx_bytes += bytes as u64;
            itr.tx_packets += frames;
        }
        nic.chans[ch as usize].tx_busy = n == TX_CQ_POLL_BUDGET;
        // One netdev_tx_completed_queue() per poll, with everything it reclaimed.
        self.bql_complete(cpu, dev, ch, bytes);
        let d = &mut self.net.devs[dev];
        let Some(nic) = d.driver.rx_nic_mut() else { unreachable!("device {dev} is a NIC") };
        let txq = &mut d.txqs[ch as usize];
        if nic.chans[ch as usize].tx.free >= TX_WAKE_THRESHOLD && txq.tx_queue_stopped() && txq.tx_wake_queue() {
            nic.stats.tx_queue_wake += 1;
            if let Some(qi) = d.txq_qdisc[ch as usize] {
                self.netif_schedule(cpu, qi);
            }
        }
        irq_ns + n as f64 * costs.0
    }

    /// NAPI poll hook: one received frame off the RX ring, with its cost.
    #[inline]
    pub(super) fn nic_rcv_one(&mut self, dev: DevId, ch: u16) -> Option<(u32, f64)> {
        let c = &mut self.net.nic_mut(dev).chans[ch as usize];
        let id = c.rx.pop_front()?;
        let len = self.pkts.get(id).len;
        let c = &mut self.net.nic_mut(dev).chans[ch as usize];
        if let Some(d) = c.rx_dim.as_mut() {
            // rq->stats: packets and bytes as the CQEs report them.
            d.packets = d.packets.wrapping_add(1);
            d.bytes = d.bytes.wrapping_add(len);
            d.total += 1;
        }
        if let Adaptive::Igb { itr, .. } = &mut c.moder {
            itr.rx_bytes += len as u64;
            itr.rx_packets += 1;
        }
        self.pkts.stamp(id, |p| &mut p.t_consume, self.now);
        Some((id, self.profile.costs.nic_rx_ns))
    }

    /// NAPI poll hook: a TX reclaim that used its whole budget keeps the NAPI busy
    /// (what arrives during a shorter one waits for the next interrupt).
    pub(super) fn nic_poll_busy(&mut self, dev: DevId, ch: u16) -> bool {
        self.net.nic_mut(dev).chans[ch as usize].tx_busy
    }

    /// NAPI poll hook, after `napi_complete_done()`: unmask the interrupt; what
    /// arrived meanwhile interrupts again (RX at once, TX completions by moderation).
    pub(super) fn nic_rearm(&mut self, dev: DevId, ch: u16) {
        let now = self.now;
        let c = &mut self.net.nic_mut(dev).chans[ch as usize];
        match &mut c.moder {
            Adaptive::Off => {}
            Adaptive::Igb { itr, pending_ns, gigabit } => {
                if itr.update_ring_itr(*gigabit).is_some() {
                    *pending_ns = Some(itr.interval_ns());
                }
            }
            Adaptive::Dim { dim, cqe_mode, packets, bytes, events } => {
                let sample = darkbuf_model::dim::Sample { time_ns: now, pkt_ctr: *packets, byte_ctr: *bytes, event_ctr: *events };
                // mlx5e_tx_dim_work(): the new profile.
                if let Some(ix) = dim.net_dim_applied(sample) {
                    let m = darkbuf_model::dim::tx_moderation(*cqe_mode, ix);
                    c.period_ns = m.usec as u64 * 1000;
                    c.frames = m.pkts;
                }
            }
        }
        if let Some(d) = c.rx_dim.as_mut() {
            // mlx5e_handle_rx_dim(), then mlx5e_rx_dim_work(): the new profile.
            let sample = darkbuf_model::dim::Sample { time_ns: now, pkt_ctr: d.packets, byte_ctr: d.bytes, event_ctr: d.events };
            if let Some(ix) = d.dim.net_dim_applied(sample) {
                let m = darkbuf_model::dim::rx_moderation(true, ix);
                c.rx_period_ns = m.usec as u64 * 1000;
                c.rx_frames = m.pkts;
            }
        }
        c.armed = true;
        let (rx, tx) = (!c.rx.is_empty(), c.tx.done > 0);
        if rx {
            self.nic_rx_pending(dev, ch as usize);
        }
        if tx && self.net.nic_mut(dev).chans[ch as usize].armed {
            self.nic_completion(dev, ch as usize);
        }
    }
}

/// The results' `nic.*` metrics.
impl World {
    /// The NIC's counters as `ethtool -S` names them (this host's device), its wire's
    /// utilisation, and its TX interrupts.
    pub(crate) fn nic_metrics(&self, m: &mut BTreeMap<String, Option<f64>>, window_ns: u64) {
        let Driver::Nic(nic) = &self.net.devs[self.metrics.measured_txq.0].driver else { return };
        let s = nic.stats.since(&nic.base);
        let secs = window_ns as f64 / 1e9;
        m.insert("nic.tx_packets".into(), Some(s.tx_packets as f64));
        m.insert("nic.tx_bytes".into(), Some(s.tx_bytes as f64));
        m.insert("nic.tx_xmit_more".into(), Some(s.tx_xmit_more as f64));
        m.insert("nic.tx_queue_stopped".into(), Some(s.tx_queue_stopped as f64));
        m.insert("nic.tx_queue_wake".into(), Some(s.tx_queue_wake as f64));
        m.insert("nic.tx_cqes".into(), Some(s.tx_cqes as f64));
        m.insert("nic.tx_irqs".into(), Some(s.tx_irqs as f64));
        m.insert("nic.tx_irqs_per_s".into(), Some(s.tx_irqs as f64 / secs));
        let per_irq = if s.tx_irqs == 0 { 0.0 } else { s.tx_cqes as f64 / s.tx_irqs as f64 };
        m.insert("nic.completions_per_irq".into(), Some(per_irq));
        // ethtool -c's tx-usecs at the end of the run (adaptive moderation moves it).
        m.insert("nic.tx_usecs".into(), Some(nic.tx_usecs_now(self.metrics.measured_txq.1 as usize)));
        m.insert("wire.util_pct".into(), Some(100.0 * s.busy_ps as f64 / (window_ns as f64 * 1000.0)));
        if let Some(Driver::Nic(peer)) = self.net.devs.get(DevId(1)).map(|d| &d.driver) {
            let p = peer.stats.since(&peer.base);
            m.insert("peer.rx_packets".into(), Some(p.rx_packets as f64));
            m.insert("peer.rx_dropped".into(), Some(p.rx_dropped as f64));
            // ethtool -c's rx-usecs at the end of the run, of the busiest receive queue.
            if let Some(us) = peer.rx_usecs_now() {
                m.insert("peer.rx_usecs".into(), Some(us));
            }
        }
        if let Some(us) = nic.rx_usecs_now() {
            m.insert("nic.rx_usecs".into(), Some(us));
        }
    }
}

// The `sk_buff` a driver's `napi_build_skb()` adds to the buffer's truesize, and the
// `skb_shared_info` at the end of a linear buffer (x86_64, as for the sender's skbs).
use darkbuf_model::skb::{SHINFO_TRUESIZE, SKB_STRUCT_TRUESIZE};
/// mlx5e's `rq->buff.headroom` without an XDP program: `NET_SKB_PAD` + `NET_IP_ALIGN` (0 on x86).
const MLX5_RX_HEADROOM: u32 = 64;
/// igb's largest frame in a 2048-byte half-page buffer with build_skb:
/// `IGB_MAX_FRAME_BUILD_SKB` (`IGB_RXBUFFER_1536 - NET_IP_ALIGN`).
const IGB_MAX_FRAME_BUILD_SKB: u32 = 1536;

/// The truesize of the skb a driver builds for a received packet of `len` bytes on the
/// wire as `segs` frames (a TSO skb arrives as its frames and leaves GRO as one skb):
/// one `sk_buff` plus each frame's receive buffer, as `skb_gro_receive()` sums them
/// (a merged frame's head_frag adds its truesize less its own `sk_buff`).
///
/// - igb (`igb_build_skb()`, `igb_add_rx_frag()`, 4 KiB pages): half a page per frame,
///   `igb_rx_pg_size() / 2` = 2048 bytes, whatever the frame's length; frames over
///   `IGB_MAX_FRAME_BUILD_SKB` use the 3072-byte buffers of an 8 KiB page: 4096.
/// - mlx5 (`mlx5e_skb_from_cqe_mpwrq_linear()`, striding RQ, linear SKB):
///   `MLX5_SKB_FRAG_SZ(rx_headroom + cqe_bcnt)`, the frame's own length with headroom
///   and `skb_shared_info`, each 64-byte aligned: 1920 bytes for a 1514-byte frame.
///   Jumbo frames (non-linear) are approximated by the same formula.
///
/// A 1500-MTU GRO packet of n frames is therefore 256 + 2048 n (igb) or 256 + 1920 n
/// (mlx5) bytes, against the sender's payload + 768.
pub fn rx_truesize(model: darkbuf_scenario::NicModel, len: u32, segs: u16) -> u32 {
    let n = (segs as u32).max(1);
    let frame = len.div_ceil(n);
    let per_frame = match model {
        darkbuf_scenario::NicModel::Igb if frame <= IGB_MAX_FRAME_BUILD_SKB => 2048,
        darkbuf_scenario::NicModel::Igb => 4096,
        darkbuf_scenario::NicModel::Mlx5 => (MLX5_RX_HEADROOM + frame).next_multiple_of(64) + SHINFO_TRUESIZE,
    };
    SKB_STRUCT_TRUESIZE.saturating_add(per_frame.saturating_mul(n))
}

/// Building the device from the scenario (`World::new`).
impl Builder<'_> {
    /// nic: this host's NIC (dev 0) with the line of `wire`, the far host and its NIC
    /// (dev 1), a link each way.
    pub(crate) fn nic(&mut self, wire: &NicWire) -> Result<(), SetupError> {
        let d = &self.scn.device;
        let NicWire { nic, path, peer } = wire;
        let rate_bps = nic.rate_bps;
        let num_tx_queues = d.num_tx_queues;
        let peer_host = self.host(peer.cpus);
        let peer_cpu0 = self.hosts[peer_host].cpus.start;
        // This host: its traffic's device; its RX path receives the replies.
        let irq_cpus: Vec<CpuId> = (0..d.tx_queues).map(|i| self.irq_cpu(i)).collect();
        let xps = self.xps(self.hosts[HostId(0)].cpus.len());
        let qdisc = self.scn.qdisc.clone();
        self.nic_dev(nic, rate_bps, LinkId(0), &irq_cpus, false, &qdisc, num_tx_queues, xps)?;
        // The far host's NIC: where the consumer's rules apply and its polls are the
        // napi.* metrics; its TX path (pfifo_fast unless [peer.qdisc]) sends the replies.
        let irq_cpus: Vec<CpuId> =
            (0..peer.tx_queues).map(|i| peer_cpu0.add(peer.irq_cpus[i as usize % peer.irq_cpus.len()])).collect();
        // Each way a link per distinct `path_delay` (the first the shared path's).
        let k = self.path_delays.len() as u16;
        self.nic_dev(nic, rate_bps, LinkId(k), &irq_cpus, true, &peer.qdisc, peer.tx_queues, Xps::Hash)?;
        // A netem per link, each with its own state; their correlated streams start
        // from draws of their own.
        let mut init = crate::path::crnd_init_rng(self.seed);
        for to in [DevId(1), DevId(0)] {
            for extra in &self.path_delays {
                self.links.push(Link::netem(to, path.delay_ns + extra, path, &mut init));
            }
        }
        if k > 1 {
            for dev in [DevId(0), DevId(1)] {
                if let Driver::Nic(n) = &mut self.devs[dev].driver {
                    n.flow_links = true;
                }
            }
        }
        self.reply = ReplyPath::Modelled { dev: DevId(1) };
        Ok(())
    }

    /// A NIC as the next device, with `spec`'s settings (the device's NIC) at `rate_bps`: its
    /// port sends on link `link`, channel i has its interrupt and NAPI on `irq_cpus[i]`
    /// (one TX queue each, under `qdisc`). The consumer's end (`consumer`) is where the
    /// consumer's rules apply and whose polls are the napi.* metrics. Returns its id.
    #[allow(clippy::too_many_arguments)] // the NIC settings, then one per setting that differs between the NICs it builds (device, peer, LAN)
    pub(crate) fn nic_dev(
        &mut self,
        spec: &NicSpec,
        rate_bps: u64,
        link: LinkId,
        irq_cpus: &[CpuId],
        consumer: bool,
        qdisc: &QdiscSpec,
        num_tx_queues: u32,
        xps: Xps,
    ) -> Result<DevId, SetupError> {
        let ring_size = self.scn.device.ring_size;
        let dev = DevId::from_index(self.devs.len());
        let mut nic = Nic::new(rate_bps, link, spec.model, &spec.coalesce);
        let rx = self.rx_stack(consumer);
        for (i, &cpu) in irq_cpus.iter().enumerate() {
            let napi = self.napi(dev, i as u16, cpu, rx, consumer);
            nic.add_channel(ring_size, napi, cpu);
        }
        let tx_queues = irq_cpus.len() as u32;
        let txqs = self.txqs(tx_queues);
        let txq_qdisc = self.qdiscs(qdisc, dev, tx_queues, num_tx_queues)?;
        let netdev = self.netdev(txqs, txq_qdisc, xps, self.profile.costs.nic_xmit_ns, Driver::Nic(nic));
        self.devs.push(netdev);
        Ok(dev)
    }
}

#[cfg(test)]
mod tests {
    use super::rx_truesize;
    use darkbuf_scenario::NicModel::{Igb, Mlx5};

    /// The receive truesize worked out by hand from the drivers' formulas: igb half a
    /// 4 KiB page per frame, mlx5 the 64-aligned headroom + frame plus shinfo, one
    /// 256-byte sk_buff per GRO packet.
    #[test]
    fn rx_truesize_follows_the_drivers_buffers() {
        assert_eq!(rx_truesize(Igb, 1514, 1), 256 + 2048);
        assert_eq!(rx_truesize(Igb, 66, 1), 256 + 2048);
        assert_eq!(rx_truesize(Igb, 45 * 1514, 45), 256 + 45 * 2048);
        assert_eq!(rx_truesize(Igb, 9014, 1), 256 + 4096);
        // 64 + 1514 = 1578 -> 1600, + 320.
        assert_eq!(rx_truesize(Mlx5, 1514, 1), 256 + 1920);
        // 64 + 66 = 130 -> 192, + 320.
        assert_eq!(rx_truesize(Mlx5, 66, 1), 256 + 512);
        assert_eq!(rx_truesize(Mlx5, 10 * 1514, 10), 256 + 10 * 1920);
    }
}
