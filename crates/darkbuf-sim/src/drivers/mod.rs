//! Device drivers behind one enum, dispatched here and nowhere else, as the kernel
//! dispatches through `net_device_ops` (`ndo_start_xmit`, `ndo_select_queue`) and the
//! NAPI poll function a driver registers.
//!
//! Adding a driver is its own file (its state, its transmit and poll functions, its
//! builder: `impl Builder { fn <driver>() }`, its metrics), one [`Driver`] variant
//! and one arm in each match below (the compiler lists the ones missing), one arm in
//! `World::new()` (setup.rs), and its scenario keys (`darkbuf_scenario::Driver` and
//! `resolve.rs`), plus a glossary entry per new metric name. The kernel backend
//! refuses any driver but veth and tun by itself. (Measured by adding the kernel's
//! `dummy` driver on a scratch branch: 7 files, 156 lines, 68 of them its own file.)

pub mod ifb;
pub mod nic;
pub mod tun;
pub mod veth;
pub mod wifi;

use crate::cpu::Step;

use crate::dev::NetdevTx;
use crate::id::{CpuId, DevId, NapiId};
use crate::world::{Net, World};
use darkbuf_model::Skb;

pub use ifb::Ifb;
pub use nic::Nic;
pub use tun::Tun;
pub use veth::Veth;
pub use wifi::Wifi;

/// A device's driver and its private state (`netdev_priv()`). `repr(u8)`: a tag byte
/// of its own, not a niche each `match` decodes (see `SockKind`).
#[repr(u8)]
pub enum Driver {
    Veth(Veth),
    Tun(Tun),
    Nic(Nic),
    Ifb(Ifb),
    Wifi(Box<Wifi>),
}

impl Driver {
    /// Why a path through this driver has no NAPI poll to report (`napi.*` are null).
    pub fn no_napi_reason(&self) -> &'static str {
        match self {
            Driver::Tun(_) => "tun/tap: the reader or vhost-net consumes the ring, no NAPI poll on this path",
            Driver::Veth(_) | Driver::Nic(_) | Driver::Ifb(_) | Driver::Wifi(_) => "no NAPI instance polls this path",
        }
    }

    /// The interface name a user would type for the device (`tc -s qdisc show dev
    /// ...`), as the kernel backend names its own.
    pub fn ifname(&self) -> &'static str {
        match self {
            Driver::Veth(_) => "veth0",
            Driver::Tun(_) => "tap0",
            Driver::Nic(_) => "eth0",
            Driver::Ifb(_) => "ifb0",
            Driver::Wifi(_) => "wlan0",
        }
    }

    /// The NIC whose receive side (rings, channels, NAPI) this device has: a NIC's own,
    /// a radio's.
    #[inline(always)]
    pub fn rx_nic_mut(&mut self) -> Option<&mut Nic> {
        match self {
            Driver::Nic(n) => Some(n),
            Driver::Wifi(w) => Some(&mut w.nic),
            _ => None,
        }
    }
}

impl Net {
    /// Packets in the ring that TX queue `q` of `dev` feeds (what `ring.occupancy`
    /// samples; a NIC's: posted and not yet sent).
    pub fn drv_ring_len(&self, dev: DevId, q: u16) -> usize {
        match &self.devs[dev].driver {
            Driver::Veth(v) => v.peer_rqs.get(q as usize).map_or(0, |r| r.ring.len()),
            Driver::Tun(t) => t.queues.get(q as usize).map_or(0, |t| t.ring.len()),
            Driver::Nic(n) => n.unsent(q as usize),
            Driver::Ifb(_) => 0,
            Driver::Wifi(w) => w.hw_frames(q as usize),
        }
    }

    /// Packets the driver holds (rings, private batches), for the conservation check.
    pub fn drv_held(&self, dev: DevId) -> u64 {
        match &self.devs[dev].driver {
            Driver::Veth(v) => v.peer_rqs.iter().map(|r| r.ring.len() as u64).sum(),
            Driver::Tun(t) => t.queues.iter().map(|q| (q.ring.len() + q.vhost_buf.len()) as u64).sum(),
            Driver::Nic(n) => n.held(),
            Driver::Ifb(_) => 0,
            Driver::Wifi(w) => w.held(),
        }
    }

    #[inline(always)]
    fn napi_owner(&self, n: NapiId) -> (DevId, u16) {
        let napi = &self.napis[n];
        (napi.dev, napi.queue)
    }
}

impl World {
    /// `ops->ndo_start_xmit()` of device `dev` for `skb` on TX queue
    /// `skb.queue_mapping`; `more` is `netdev_xmit_more()`. Inlined into the qdisc's
    /// transmit: a call per packet was 1% of a tun flood (`tap_vhost`).
    #[inline(always)]
    pub fn ndo_start_xmit(&mut self, cpu: CpuId, dev: DevId, skb: Skb, more: bool) -> NetdevTx {
        match self.net.devs[dev].driver {
            Driver::Veth(_) => self.veth_xmit(cpu, dev, skb, more),
            Driver::Tun(_) => self.tun_net_xmit(dev, skb),
            Driver::Nic(_) => self.nic_xmit(dev, skb, more),
            Driver::Ifb(_) => self.ifb_xmit(cpu, skb),
            Driver::Wifi(_) => self.wifi_xmit(dev, skb),
        }
    }

    /// `ops->ndo_select_queue()`: the driver's own TX queue choice, if it has one
    /// (tun's `tun_select_queue()` hashes the flow and never follows XPS).
    #[inline]
    pub fn ndo_select_queue(&self, dev: DevId, skb: &Skb) -> Option<u16> {
        let d = &self.net.devs[dev];
        match d.driver {
            Driver::Veth(_) | Driver::Nic(_) | Driver::Ifb(_) => None,
            Driver::Tun(_) => Some(d.skb_tx_hash(skb)),
            Driver::Wifi(_) => Some(World::wifi_select_queue(skb)),
        }
    }

    /// One step of the work item of a driver's worker task on `queue` (the tun reader,
    /// vhost-net).
    pub fn dev_work(&mut self, cpu: CpuId, dev: DevId, queue: u16, done: &mut u16) -> Step {
        match &self.net.devs[dev].driver {
            Driver::Tun(t) if t.vhost => self.vhost_handle_rx(cpu, dev, queue, done),
            Driver::Tun(_) => self.tun_read(cpu, dev, queue),
            Driver::Veth(_) | Driver::Nic(_) | Driver::Ifb(_) | Driver::Wifi(_) => unreachable!("no worker task"),
        }
    }

    /// Whether a driver's worker task on `queue` has more work (stays runnable).
    pub fn dev_worker_wants_cpu(&mut self, dev: DevId, queue: u16) -> bool {
        match self.net.devs[dev].driver {
            Driver::Tun(_) => self.tun_consumer_wants_cpu(dev, queue),
            Driver::Veth(_) | Driver::Nic(_) | Driver::Ifb(_) | Driver::Wifi(_) => false,
        }
    }

    /// NAPI poll hook: the driver's poll starts; returns the CPU time of what it does
    /// first (a NIC reclaims its TX completions), ns.
    #[inline]
    pub fn drv_poll_begin(&mut self, cpu: CpuId, n: NapiId) -> f64 {
        let (dev, q) = self.net.napi_owner(n);
        match self.net.devs[dev].driver {
            Driver::Veth(_) => {
                self.veth_poll_begin(dev, q);
                0.0
            }
            Driver::Nic(_) | Driver::Wifi(_) => self.nic_poll_begin(cpu, dev, q),
            Driver::Tun(_) | Driver::Ifb(_) => unreachable!("tun and ifb have no NAPI poll here"),
        }
    }

    /// NAPI poll hook: take one received packet off the driver, with the per-packet
    /// cost (ns) of doing so; `None` when there is none.
    #[inline(always)]
    pub fn drv_rx_one(&mut self, cpu: CpuId, n: NapiId) -> Option<(u32, f64)> {
        let (dev, q) = self.net.napi_owner(n);
        match self.net.devs[dev].driver {
            Driver::Veth(_) => self.veth_rcv_one(cpu, dev, q),
            Driver::Nic(_) | Driver::Wifi(_) => self.nic_rcv_one(dev, q),
            Driver::Tun(_) | Driver::Ifb(_) => unreachable!("tun and ifb have no NAPI poll here"),
        }
    }

    /// NAPI poll hook: the driver's receive loop is over. Returns whether the driver
    /// has work left regardless of the receive budget (a NIC's TX completions beyond
    /// its TX budget): the poll then claims its whole budget and is polled again.
    pub fn drv_poll_rx_end(&mut self, cpu: CpuId, n: NapiId) -> bool {
        let (dev, q) = self.net.napi_owner(n);
        match self.net.devs[dev].driver {
            Driver::Veth(_) => {
                self.veth_poll_rx_end(cpu, dev, q);
                false
            }
            Driver::Nic(_) | Driver::Wifi(_) => self.nic_poll_busy(dev, q),
            Driver::Tun(_) | Driver::Ifb(_) => unreachable!("tun and ifb have no NAPI poll here"),
        }
    }

    /// NAPI poll hook: `napi_complete_done()` cleared SCHED; the driver re-enables its
    /// notifications (interrupts) and catches what arrived meanwhile.
    pub fn drv_napi_rearm(&mut self, cpu: CpuId, n: NapiId) {
        let (dev, q) = self.net.napi_owner(n);
        match self.net.devs[dev].driver {
            Driver::Veth(_) => self.veth_napi_rearm(cpu, dev, q),
            Driver::Nic(_) | Driver::Wifi(_) => self.nic_rearm(dev, q),
            Driver::Tun(_) | Driver::Ifb(_) => unreachable!("tun and ifb have no NAPI poll here"),
        }
    }

    /// NAPI poll hook: the last act of the driver's poll, whether it completed or
    /// used its whole budget.
    pub fn drv_poll_end(&mut self, cpu: CpuId, n: NapiId) {
        let (dev, q) = self.net.napi_owner(n);
        match self.net.devs[dev].driver {
            Driver::Veth(_) => self.veth_wake_peer_txq(cpu, dev, q),
            Driver::Nic(_) | Driver::Wifi(_) => {}
            Driver::Tun(_) | Driver::Ifb(_) => unreachable!("tun and ifb have no NAPI poll here"),
        }
    }



    /// The driver's own metrics for the results (the NIC's `ethtool -S` counters), over
    /// a measured window of `window_ns`.
    pub(crate) fn drv_metrics(&self, m: &mut std::collections::BTreeMap<String, Option<f64>>, window_ns: u64) {
        match self.net.devs[self.metrics.measured_txq.0].driver {
            Driver::Nic(_) => self.nic_metrics(m, window_ns),
            Driver::Wifi(_) => self.wifi_metrics(m, window_ns),
            Driver::Veth(_) | Driver::Tun(_) | Driver::Ifb(_) => {}
        }
    }

    /// The driver's own printouts at the end of the run (a radio's `iw station dump`
    /// and mac80211's debugfs files), by the command line that prints them.
    pub(crate) fn drv_printouts(&self, dev: DevId, out: &mut std::collections::BTreeMap<String, String>) {
        match self.net.devs[dev].driver {
            Driver::Wifi(_) => self.wifi_printouts(dev, out),
            Driver::Veth(_) | Driver::Tun(_) | Driver::Nic(_) | Driver::Ifb(_) => {}
        }
    }

    /// `World::check_ids()` for the ids driver `dev` stores: its NAPI instances, its
    /// worker tasks, its IRQ CPUs.
    pub(crate) fn drv_check_ids(&self, dev: DevId) {
        match &self.net.devs[dev].driver {
            Driver::Veth(v) => v.peer_rqs.iter().for_each(|rq| self.net.napis.check(rq.napi, "veth NAPI")),
            Driver::Tun(t) => t.queues.iter().for_each(|q| self.sched.tasks.check(q.task, "tun reader")),
            Driver::Nic(n) => n.chans.iter().for_each(|c| {
                self.net.napis.check(c.napi, "NIC channel NAPI");
                self.sched.cpus.check(c.irq_cpu, "NIC IRQ CPU");
            }),
            Driver::Wifi(w) => w.nic.chans.iter().for_each(|c| {
                self.net.napis.check(c.napi, "radio channel NAPI");
                self.sched.cpus.check(c.irq_cpu, "radio IRQ CPU");
            }),
            Driver::Ifb(_) => {}
        }
    }

    /// A frame off a link arrives at device `dev`: a NIC's port receives it; a radio's
    /// comes from its stations' side and first contends for the air.
    pub fn drv_link_rx(&mut self, dev: DevId, id: u32) {
        match self.net.devs[dev].driver {
            Driver::Wifi(_) => self.wifi_link_rx(dev, id),
            _ => self.nic_rx(dev, id),
        }
    }

    /// `Event::Wire`: a NIC's port finished an skb; a radio's exchange on the air is over.
    pub fn drv_wire_done(&mut self, dev: DevId) {
        match self.net.devs[dev].driver {
            Driver::Wifi(_) => self.wifi_air_done(dev),
            _ => self.nic_wire_done(dev),
        }
    }

}
