//! Building the world from a scenario: the hosts and their CPUs, the devices with
//! their TX queues, BQL and qdiscs, the NAPI instances, the links, the sockets and
//! their processes, and where each task runs.
//!
//! - veth: one host; the sending end (dev 0) keeps the peer's RX rings, polled by
//!   NAPI instances in the peer namespace (the same CPUs).
//! - tun: one host; the device (dev 0) and its queues' reader or vhost tasks.
//! - nic: this host's NIC (dev 0), a wire each way (links 0 and 1; with `[[traffic]]
//!   path_delay`s, a link per distinct delay each way) and the far host (`[peer]`, its
//!   CPUs after this host's) with its own NIC (dev 1), whose RX path receives the
//!   traffic and whose TX path sends the echo replies back.
//!
//! Placement is the scenario's: each sending process on its `cpu` (taskset; default
//! 0), queue i's consumer (threaded NAPI kthread, tun reader, vhost worker, NIC IRQ
//! and NAPI) on `irq_cpus[i % len]` (default CPU 1 + i % (cpus - 1), away from the
//! senders), and the XPS map that `netdev_pick_tx()` follows from the sending CPU.

use crate::arena::Arena;
use crate::cpu::{Cpu, Task, TaskKind, TaskState};
use crate::id::{CpuId, DevId, HostId, IdRange, LinkId, NapiId, QdiscId, SockId, TaskId};
use crate::table::Table;
use crate::dev::sch::{QdiscInst, MAX_BULK};
use crate::dev::{NetDev, Xps};
use crate::drivers::Driver;
use crate::event::{Event, EventQueue};
use crate::host::Host;
use crate::metrics::Metrics;
use crate::napi::{Napi, RxStack};
use crate::path::Link;
use darkbuf_measure::Profile;
use crate::sock::ping::ReplyPath;
use crate::sock::{PingSock, UdpSock};
use crate::world::{initial_jiffies, msecs_to_jiffies, usecs_to_jiffies, Config, Net, Rand, Sched, Scratch, Sockets, World};
use darkbuf_model::dql::Dql;
use darkbuf_model::qdisc::{self, DevInfo};
use darkbuf_model::txq::NetdevQueue;
use darkbuf_scenario::{
    BqlUnit, Driver as DriverKind, DriverSettings, NapiMode, QdiscSpec, RulesMatch, Scenario, Traffic, XpsSpec,
};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The key `skb_tx_hash()` hashes flows with (fixed across seeds: a flow keeps its queue).
const TXHASH_KEY: u32 = 0x5eed;

/// The simulator could not be set up for this scenario.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("{0}")]
    Unsupported(String),
}

/// What construction accumulates before the world exists. Each driver builds its
/// device(s) from it in its own file (`drivers/veth.rs`: `Builder::veth()`, ...).
pub(crate) struct Builder<'a> {
    pub(crate) scn: &'a Scenario,
    pub(crate) profile: &'a Profile,
    hz: u32,
    jiffies0: u64,
    /// The qdiscs' hash perturbation key, drawn from the seed.
    qdisc_hash_key: u32,
    /// The run's seed.
    pub(crate) seed: u64,
    pub(crate) hosts: Table<HostId, Host>,
    tasks: Table<TaskId, Task>,
    pub(crate) devs: Table<DevId, NetDev>,
    qdiscs: Table<QdiscId, QdiscInst>,
    napis: Table<NapiId, Napi>,
    socks: Table<SockId, crate::sock::Sock>,
    pub(crate) links: Table<LinkId, Link>,
    /// The distinct `[[traffic]] path_delay`s, 0 first: a NIC's wire has a link for each.
    pub(crate) path_delays: Vec<u64>,
    /// Per socket, its entry's index in `path_delays`.
    sock_link: Vec<u16>,
    /// Per socket, its `[[traffic]]` entry.
    pub(crate) sock_traffic: Vec<u16>,
    /// How the pinger's echo replies come back.
    pub(crate) reply: ReplyPath,
    /// Processes that start later: (time, task).
    starts: Vec<(u64, TaskId)>,
    /// The web entries' generators, each with its first (idle) connection slot.
    web: Vec<crate::sock::tcp::web::WebGen>,
    /// Where the near end of the traffic runs: its host, its first CPU and the device
    /// it sends by (this host and dev 0; the client and its NIC with `[lan]`).
    pub(crate) near: Near,
    /// On veth with downloads: the peer namespace's end of the pair, which the
    /// downloads' senders send by ([`Builder::veth_peer`]).
    veth_peer: Option<DevId>,
}

/// Where a TCP entry's connections send from ([`Builder::tcp_route`]).
struct TcpRoute {
    dev: DevId,
    ack_dev: Option<DevId>,
    cpu0: CpuId,
    mtu: u32,
    fq: bool,
}

/// The near end of the traffic: the host, CPU numbering and device of the senders of
/// uploads, the pinger and the receivers of downloads.
#[derive(Clone, Copy)]
pub(crate) struct Near {
    pub(crate) host: HostId,
    pub(crate) cpu0: CpuId,
    pub(crate) dev: DevId,
}

impl<'a> Builder<'a> {
    /// An empty world of `scn`: no host, device or socket yet; `qdisc_hash_key` is the
    /// run's first draw (the qdiscs' `get_random_u32()` perturbation).
    fn new(scn: &'a Scenario, profile: &'a Profile, seed: u64, qdisc_hash_key: u32) -> Self {
        // The distinct `[[traffic]] path_delay`s, 0 (the shared path) first.
        let mut path_delays = vec![0];
        for d in scn.traffic.iter().map(Traffic::path_delay_ns) {
            if !path_delays.contains(&d) {
                path_delays.push(d);
            }
        }
        Builder {
            scn,
            profile,
            hz: scn.machine.hz,
            jiffies0: initial_jiffies(scn.machine.hz),
            qdisc_hash_key,
            seed,
            hosts: Table::default(),
            tasks: Table::default(),
            devs: Table::default(),
            qdiscs: Table::default(),
            napis: Table::default(),
            socks: Table::default(),
            links: Table::default(),
            path_delays,
            sock_link: Vec::new(),
            sock_traffic: Vec::new(),
            reply: ReplyPath::Constant,
            starts: Vec::new(),
            web: Vec::new(),
            near: Near { host: HostId(0), cpu0: CpuId(0), dev: DevId(0) },
            veth_peer: None,
        }
    }

    pub(crate) fn task(&mut self, kind: TaskKind, state: TaskState, cpu: CpuId) -> TaskId {
        self.tasks.push(Task { kind, state, cpu, wake_preempt: false });
        TaskId::from_index(self.tasks.len() - 1)
    }

    /// A host of `ncpu` CPUs after the ones that exist, with the scenario's sysctls.
    pub(crate) fn host(&mut self, ncpu: u32) -> HostId {
        let first = self.hosts.last().map_or(CpuId(0), |h| h.cpus.end);
        let d = &self.scn.device;
        self.hosts.push(Host {
            cpus: IdRange { start: first, end: first.add(ncpu) },
            netdev_budget: d.netdev_budget as i32,
            netdev_budget_jiffies: usecs_to_jiffies(d.netdev_budget_usecs, self.hz),
            fib: Vec::new(),
            ingress: None,
        });
        HostId::from_index(self.hosts.len() - 1)
    }

    /// The stack's per-packet receive cost where the consumer's rules apply (the
    /// flood's sink), and where none do (the pinger's own host).
    pub(crate) fn rx_stack(&self, with_rules: bool) -> RxStack {
        let c = &self.scn.consumer;
        let p = self.profile;
        if !with_rules {
            return RxStack { pkt_ns: p.consumer_cost_ns(0), probe_ns: p.consumer_cost_ns(0) };
        }
        RxStack {
            pkt_ns: p.consumer_cost_ns(c.nrules) + c.app_cost_ns as f64,
            probe_ns: match c.rules_match {
                RulesMatch::All => p.consumer_cost_ns(c.nrules),
                _ => p.consumer_cost_ns(0),
            },
        }
    }

    /// A NAPI instance for RX queue `queue` of `dev`, with its kthread pinned to `cpu`
    /// (created in softirq mode too, where it never runs).
    pub(crate) fn napi(&mut self, dev: DevId, queue: u16, cpu: CpuId, rx_stack: RxStack, measured: bool) -> NapiId {
        let d = &self.scn.device;
        let n = NapiId::from_index(self.napis.len());
        let task = self.task(TaskKind::NapiThread(n), TaskState::Sleeping, cpu);
        let gro_batch = d.gro_normal_batch.max(1) as usize;
        let host = self.host_of(cpu);
        self.napis.push(Napi {
            sched: false,
            missed: false,
            threaded: d.napi == NapiMode::Threaded,
            task,
            weight: d.napi_weight,
            dev,
            queue,
            gro_list: Vec::with_capacity(gro_batch.max(64)),
            gro_batch,
            rx_stack,
            measured,
            host,
        });
        n
    }

    /// The host whose CPUs include `cpu`.
    fn host_of(&self, cpu: CpuId) -> HostId {
        HostId::from_index(self.hosts.iter().position(|h| h.cpus.contains(cpu)).expect("every CPU has its host"))
    }

    /// `softnet_data.backlog`, the per-CPU NAPI instance of `process_backlog()` that
    /// `__netif_rx()` schedules on the CPU it runs on, for receive queue `queue` of
    /// `dev` (kept in its driver state): always polled by NET_RX there, never
    /// threaded, with `dev_rx_weight` as its quota; delivering into host `host`.
    pub(crate) fn backlog_napi(&mut self, dev: DevId, queue: u16, cpu: CpuId, host: HostId) -> NapiId {
        let rx = self.rx_stack(false);
        let n = self.napi(dev, queue, cpu, rx, false);
        let napi = &mut self.napis[n];
        napi.threaded = false;
        napi.weight = crate::drivers::veth::DEV_RX_WEIGHT;
        napi.host = host;
        n
    }

    /// Sets the host that NAPI `n` delivers into.
    pub(crate) fn set_napi_host(&mut self, n: NapiId, host: HostId) {
        self.napis[n].host = host;
    }

    /// `tx_queues` TX queues, with DQL as the BQL series sets it up (`dql_init(HZ)`,
    /// limits via sysfs) when BQL is enabled.
    pub(crate) fn txqs(&self, tx_queues: u32) -> Vec<NetdevQueue> {
        let bql = &self.scn.device.bql;
        let hold_jiffies = msecs_to_jiffies(bql.hold_time_ns / 1_000_000, self.hz);
        (0..tx_queues)
            .map(|_| {
                let dql = bql.enabled.then(|| {
                    let mut dql = Dql::new(hold_jiffies, self.jiffies0);
                    dql.set_min_limit(bql.limit_min);
                    dql.max_limit = bql.limit_max;
                    dql
                });
                NetdevQueue::new(dql)
            })
            .collect()
    }

    /// The qdiscs of device `dev` (`tx_queues` of `num_tx_queues` allocated): noqueue,
    /// one root over all TX queues, or mq with a child per queue. Returns each TX
    /// queue's qdisc.
    pub(crate) fn qdiscs(&mut self, spec: &QdiscSpec, dev: DevId, tx_queues: u32, num_tx_queues: u32) -> Result<Vec<Option<QdiscId>>, SetupError> {
        self.qdiscs_of(spec, dev, tx_queues, num_tx_queues, self.scn.device.txqueuelen)
    }

    /// [`Self::qdiscs`] on a device whose `tx_queue_len` is `tx_queue_len` (an ifb's).
    pub(crate) fn qdiscs_of(&mut self, spec: &QdiscSpec, dev: DevId, tx_queues: u32, num_tx_queues: u32, tx_queue_len: u32) -> Result<Vec<Option<QdiscId>>, SetupError> {
        let d = &self.scn.device;
        let info = DevInfo { tx_queue_len, mtu_l2: d.mtu_l2(), hash_key: self.qdisc_hash_key, hz: self.hz };
        let build = |spec: &QdiscSpec| {
            qdisc::build(&spec.kind, spec.model_params(), &info)
                .map_err(|e| SetupError::Unsupported(format!("qdisc {}: {e:?}", spec.kind)))
        };
        let mut txq_qdisc = vec![None; tx_queues as usize];
        let first = QdiscId::from_index(self.qdiscs.len());
        match spec.kind.as_str() {
            "noqueue" => {}
            "mq" => {
                let default_child = QdiscSpec { kind: "pfifo_fast".into(), params: Default::default(), child: None };
                let child = spec.child.as_deref().unwrap_or(&default_child);
                for (i, slot) in txq_qdisc.iter_mut().enumerate() {
                    // mq children have TCQ_F_ONETXQUEUE: they may bulk-dequeue by BQL budget.
                    self.qdiscs.push(QdiscInst::new(Some(build(child)?), dev, true, Some(i as u16)));
                    *slot = Some(QdiscId::from_index(self.qdiscs.len() - 1));
                }
            }
            _ => {
                // qdisc_create(): TCQ_F_ONETXQUEUE only if !netif_is_multiqueue(dev), i.e.
                // one TX queue *allocated* (veth allocates num_possible_cpus() by default).
                let onetx = num_tx_queues == 1;
                self.qdiscs.push(QdiscInst::new(Some(build(spec)?), dev, onetx, onetx.then_some(0)));
                let root = QdiscId::from_index(self.qdiscs.len() - 1);
                txq_qdisc.iter_mut().for_each(|s| *s = Some(root));
            }
        }
        for q in self.qdiscs.from_mut(first) {
            if matches!(q.q, Some(darkbuf_model::qdisc::AnyQdisc::Fq(_))) {
                q.pkt_ns = self.profile.costs.fq_pkt_ns;
            }
        }
        Ok(txq_qdisc)
    }

    /// A device with the scenario's BQL and XPS settings.
    pub(crate) fn netdev(&self, txqs: Vec<NetdevQueue>, txq_qdisc: Vec<Option<QdiscId>>, xps: Xps, xmit_ns: f64, driver: Driver) -> NetDev {
        let d = &self.scn.device;
        NetDev {
            txq_base: vec![Default::default(); txqs.len()],
            txqs,
            txq_qdisc,
            xps,
            bql: d.bql.enabled,
            bql_unit_packet: d.bql.unit == BqlUnit::Packet,
            backpressure: d.backpressure,
            xmit_ns,
            // Only a NIC can turn TSO off (`device.tso`); veth and tun keep it.
            tso: d.nic().map(|n| n.tso).unwrap_or(true),
            txhash_key: TXHASH_KEY,
            driver,
        }
    }

    /// The XPS map of this host's device, over its `ncpu` CPUs.
    pub(crate) fn xps(&self, ncpu: usize) -> Xps {
        let d = &self.scn.device;
        match (&d.xps, d.xps_txq) {
            (_, Some(q)) => Xps::Queue(q as u16),
            (XpsSpec::None, None) => Xps::Hash,
            // The driver's map (mlx5e sets channel i's xps_cpus to its CPU): one queue per core.
            (XpsSpec::Cpu, None) => Xps::CpuMap((0..ncpu as u32).map(|c| vec![(c % d.tx_queues) as u16]).collect()),
            (XpsSpec::Cpus(cpus), None) => Xps::from_queue_cpus(cpus.iter().copied(), ncpu),
        }
    }

    /// Ingress shaping: an ifb (the next device) with one TX queue, no BQL and the
    /// ingress tree as its qdisc; what arrives on this host from the far host (host 1,
    /// which `nic()` made), or on veth from the peer namespace, is redirected to it.
    pub(crate) fn ifb(&mut self, ing: &darkbuf_scenario::IngressSpec) -> Result<(), SetupError> {
        let dev = DevId::from_index(self.devs.len());
        let txq_qdisc = self.qdiscs_of(&ing.qdisc, dev, 1, 1, darkbuf_scenario::IFB_TX_QUEUE_LEN)?;
        let mut netdev = self.netdev(vec![NetdevQueue::new(None)], txq_qdisc, Xps::Hash, 0.0, Driver::Ifb(crate::drivers::Ifb));
        // ifb_setup(): IFB_FEATURES (GSO, TSO) and no BQL.
        netdev.bql = false;
        netdev.tso = true;
        self.devs.push(netdev);
        let from = match self.scn.device.driver() {
            DriverKind::Veth => {
                // The peer's replies must arrive as packets for the hook to meet them:
                // after the constant, on this host (`ReplyPath::Forwarded`).
                self.reply = ReplyPath::Forwarded;
                crate::host::IngressFrom::VethPeer(self.veth_peer)
            }
            _ => crate::host::IngressFrom::Host(HostId(1)),
        };
        self.hosts[HostId(0)].ingress = Some((dev, from));
        Ok(())
    }

    /// The CPU of this host's queue i's consumer: its IRQ CPU.
    pub(crate) fn irq_cpu(&self, i: u32) -> CpuId {
        let cpus = &self.scn.device.irq_cpus;
        CpuId::from_index(cpus[i as usize % cpus.len()] as usize)
    }

    /// `[lan]`: the client (host 2) with its NIC (dev 2), this host's LAN NIC (dev 3) and
    /// a wire each way (the two links after the path's). This host routes between dev 3 and dev 0; the
    /// traffic's near end moves to the client. Both NICs mirror the device's (model,
    /// MTU, TSO, ring, coalescing, BQL) at the LAN's rate, with one TX queue each.
    fn lan(&mut self, lan: &darkbuf_scenario::LanSpec) -> Result<(), SetupError> {
        // [lan] is of the device's driver: a NIC's (whose settings the LAN NICs mirror)
        // or veth's.
        let DriverSettings::Nic(wire) = &self.scn.device.settings else { return self.veth_lan(lan) };
        let nic = &wire.nic;
        let client = self.host(lan.cpus);
        let client_cpu0 = self.hosts[client].cpus.start;
        let (to_router, to_client) = (LinkId::from_index(self.links.len()), LinkId::from_index(self.links.len() + 1));
        // The client's NIC, its interrupt on the client's CPU 1 (CPU 0 if it has only
        // one), as on the far host: the senders run on CPU 0 unless told otherwise.
        let cpu = client_cpu0.add(1 % lan.cpus);
        let client_dev = self.nic_dev(nic, lan.rate_bps, to_router, &[cpu], false, &lan.qdisc, 1, Xps::Hash)?;
        // This host's LAN NIC: its interrupt where the device's queue 0 has its own.
        let cpu = self.irq_cpu(0);
        let router_dev = self.nic_dev(nic, lan.rate_bps, to_client, &[cpu], false, &lan.qdisc, 1, Xps::Hash)?;
        self.links.push(Link::new(router_dev, lan.delay_ns, None, 0, u32::MAX));
        self.links.push(Link::new(client_dev, lan.delay_ns, None, 0, u32::MAX));
        // This host's FIB: the far host by the measured device, the client by its LAN NIC.
        let mut fib = vec![None; self.hosts.len()];
        fib[1] = Some(DevId(0));
        fib[client.idx()] = Some(router_dev);
        self.hosts[HostId(0)].fib = fib;
        self.near = Near { host: client, cpu0: client_cpu0, dev: client_dev };
        Ok(())
    }

    /// Each socket's far end: the far host for what the near end sends, the near end
    /// for what the far host sends (downloads); one host on veth and tun.
    /// With `[lan]` on veth the near end is the client namespace and the far end the
    /// peer namespace, which share this host's CPUs.
    fn far_hosts(&mut self) {
        let nic = self.scn.device.wire().is_some();
        let veth_lan = self.scn.lan.is_some() && self.scn.device.driver() == DriverKind::Veth;
        let ids: Vec<SockId> = self.socks.ids().collect();
        for k in ids {
            let host = self.host_of(self.tasks[self.socks[k].task].cpu);
            let sk = &mut self.socks[k];
            (sk.host, sk.far_host) = match (veth_lan, nic, host) {
                (true, _, _) => (self.near.host, crate::drivers::veth::LAN_PEER_HOST),
                (false, false, _) => (host, host),
                (false, true, HostId(1)) => (host, self.near.host),
                (false, true, _) => (host, HostId(1)),
            };
        }
    }

    /// Sockets, each with its process: every flood and pinger. Returns each pinger's
    /// socket and interval.
    fn sockets(&mut self) -> Vec<(SockId, u64)> {
        let mut pingers = Vec::new();
        let near = self.near;
        for (i, t) in self.scn.traffic.iter().enumerate() {
            let s = SockId::from_index(self.socks.len());
            match t {
                Traffic::Udp(u) => {
                    // A station's flood (`direction = "up"` over a radio) is sent by the
                    // far host through the station's device, its frames contending for
                    // the air.
                    let (cpu, dev) = match (darkbuf_scenario::wifi::far_sends(self.scn.device.driver(), u.direction), self.reply) {
                        (true, ReplyPath::Modelled { dev }) => {
                            let far = self.hosts[HostId(1)].cpus;
                            (far.start.add(u.cpu % (far.end.0 - far.start.0) as u32), dev)
                        }
                        _ => (near.cpu0.add(u.cpu), near.dev),
                    };
                    let task = self.task(TaskKind::Proc(s), TaskState::Runnable, cpu);
                    self.socks.push(UdpSock::new_sock(i as u16, u, task, dev));
                }
                Traffic::Ping(p) => {
                    let task = self.task(TaskKind::Proc(s), TaskState::Sleeping, near.cpu0.add(p.cpu));
                    // The pinger sleeps most of the time, so CFS lets it preempt at wake-up.
                    self.tasks[task].wake_preempt = true;
                    self.socks.push(PingSock::new_sock(p, pingers.len() as u16, task, near.dev, self.reply));
                    pingers.push((s, p.interval_ns.max(1)));
                }
                Traffic::Tcp(f) => self.tcp_flows(i as u16, f),
                Traffic::Irtt(p) => self.irtt(p),
                Traffic::Voip(v) => self.voip(i as u16, v),
                Traffic::Rr(r) => self.rr_conns(i as u16, r),
                Traffic::Web(w) => self.web_flows(i as u16, w),
            }
            let class = self.path_delays.iter().position(|&d| d == t.path_delay_ns()).unwrap_or(0) as u16;
            self.sock_link.resize(self.socks.len(), class);
            self.sock_traffic.resize(self.socks.len(), i as u16);
        }
        pingers
    }

    /// An irtt client, sleeping until its first request at `start` (irtt sends the
    /// first at once, then every interval).
    fn irtt(&mut self, p: &darkbuf_scenario::Irtt) {
        let s = SockId::from_index(self.socks.len());
        let index = self.socks.iter().filter(|k| matches!(k.kind, crate::sock::SockKind::Irtt(_))).count() as u16;
        let task = self.task(TaskKind::Proc(s), TaskState::Sleeping, self.near.cpu0.add(p.cpu));
        self.tasks[task].wake_preempt = true;
        let end = self.scn.warmup_ns + self.scn.duration_ns;
        self.socks.push(crate::sock::IrttSock::new_sock(p, index, task, self.near.dev, self.reply, end));
        self.starts.push((p.start_ns, task));
    }

    /// A voip entry's streams, each with its sending process, sleeping until its first
    /// packet: call k starts `k * interval / calls` after `start` (independent phones
    /// are not in phase). The far host's stream is sent from the far host's CPU `cpu`
    /// (modulo its CPUs) through its device, on veth from the peer namespace's end;
    /// where that path is not modelled (a tap, a veth `[lan]` client) the stream's
    /// socket exists but never sends (`unmodelled`).
    fn voip(&mut self, traffic_index: u16, v: &darkbuf_scenario::Voip) {
        use crate::sock::voip::VoipSock;
        use crate::sock::SockKind;
        let entry = self.socks.iter().filter_map(|k| if let SockKind::Voip(x) = &k.kind { Some(x.entry + 1) } else { None }).max().unwrap_or(0);
        let end = self.scn.warmup_ns + self.scn.duration_ns;
        let driver = self.scn.device.driver();
        for call in 0..v.calls {
            let start = v.start_ns + (v.interval_ns as u128 * call as u128 / v.calls as u128) as u64;
            for (down, sends) in [(false, v.direction.sends_up()), (true, v.direction.sends_down())] {
                if !sends {
                    continue;
                }
                let dir = if down { darkbuf_scenario::Direction::Down } else { darkbuf_scenario::Direction::Up };
                let (cpu, dev, modelled) = match (darkbuf_scenario::wifi::far_sends(driver, dir), self.reply, self.veth_peer) {
                    (false, _, _) => (self.near.cpu0.add(v.cpu), self.near.dev, true),
                    (true, ReplyPath::Modelled { dev }, _) => {
                        let far = self.hosts[HostId(1)].cpus;
                        (far.start.add(v.cpu % (far.end.0 - far.start.0) as u32), dev, true)
                    }
                    // veth: the peer namespace sends by its end, on this host's CPUs.
                    (true, _, Some(peer)) => (self.near.cpu0.add(v.cpu), peer, true),
                    (true, _, None) => (self.near.cpu0.add(v.cpu), self.near.dev, false),
                };
                let s = SockId::from_index(self.socks.len());
                let task = self.task(TaskKind::Proc(s), TaskState::Sleeping, cpu);
                self.tasks[task].wake_preempt = true;
                let mut sock = VoipSock::new_sock(v, traffic_index, entry, call, down, start, task, dev, end);
                if let SockKind::Voip(x) = &mut sock.kind {
                    x.unmodelled = !modelled;
                }
                self.socks.push(sock);
                if modelled {
                    self.starts.push((start, task));
                }
            }
        }
    }

    /// A request/response entry's connections, each a client process (netperf) on this
    /// host sleeping until `start`; the far host's netserver answers in its softirq.
    fn rr_conns(&mut self, index: u16, r: &darkbuf_scenario::Rr) {
        let end = self.scn.warmup_ns + self.scn.duration_ns;
        for conn in 0..r.connections {
            let s = SockId::from_index(self.socks.len());
            let task = self.task(TaskKind::Proc(s), TaskState::Sleeping, self.near.cpu0.add(r.cpu));
            self.tasks[task].wake_preempt = true;
            self.socks.push(crate::sock::RrSock::new_sock(r, index, conn, task, self.near.dev, self.reply, end));
            self.starts.push((r.start_ns, task));
        }
    }

    /// A TCP flow's connections, each with its sending process: on this host for an
    /// upload, on the far host for a download. The ACKs come back through the other
    /// host's device (a NIC), or by the profile's constant way back (veth, tun).
    fn tcp_flows(&mut self, traffic_index: u16, f: &darkbuf_scenario::TcpFlow) {
        let TcpRoute { dev, ack_dev, cpu0, mtu, fq } = self.tcp_route(f);
        let end = self.scn.warmup_ns + self.scn.duration_ns;
        let first = SockId::from_index(self.socks.len());
        for flow in 0..f.flows {
            let s = SockId::from_index(self.socks.len());
            let state = if f.start_ns == 0 { TaskState::Runnable } else { TaskState::Sleeping };
            let task = self.task(TaskKind::Proc(s), state, cpu0.add(f.cpu));
            // Each connection's own random stream (BBR's gain-cycle phase), from the
            // run's seed: adding a flow changes no other flow's draws.
            let sock_seed = self.seed ^ (s.0 as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let mut sock = crate::sock::tcp::TcpSock::new_sock(f, traffic_index, flow, task, dev, ack_dev, mtu, self.profile.max_tcp_header, end, sock_seed);
            if let crate::sock::SockKind::Tcp(t) = &mut sock.kind {
                if fq {
                    t.set_pacing_fq();
                }
            }
            self.socks.push(sock);
            if f.start_ns > 0 {
                self.starts.push((f.start_ns, task));
            }
        }
        self.tcp_readers(f, first);
    }

    /// Where a TCP flow's connections send from: the device, the device its ACKs come
    /// back by, the sending host's first CPU, the MTU, and whether sch_fq paces them.
    fn tcp_route(&self, f: &darkbuf_scenario::TcpFlow) -> TcpRoute {
        let nic = self.scn.device.wire().is_some();
        let near = self.near;
        let (dev, ack_dev, cpu0) = match (self.sends_from_far(f), self.veth_peer) {
            (false, _) => (near.dev, nic.then_some(DevId(1)), near.cpu0),
            // A download on veth: sent from the peer namespace, on this host's CPUs.
            (true, Some(peer)) => (peer, Some(near.dev), near.cpu0),
            (true, None) => (DevId(1), Some(near.dev), self.hosts[HostId(1)].cpus.start),
        };
        let mtu = self.scn.device.mtu();
        // sch_fq sets SK_PACING_FQ on a socket's first packet: EDT pacing from there on.
        let spec = match dev.0 {
            1 => self.scn.device.wire().map(|w| &w.peer.qdisc),
            0 => Some(&self.scn.qdisc),
            _ => self.scn.lan.as_ref().map(|l| &l.qdisc),
        };
        let spec = if self.veth_peer == Some(dev) { None } else { spec };
        let fq = spec.is_some_and(|q| q.kind == "fq" || q.child.as_deref().is_some_and(|c| c.kind == "fq"));
        TcpRoute { dev, ack_dev, cpu0, mtu, fq }
    }

    /// A web entry: its generator, and its first connection slot (idle, its task
    /// asleep until the first arrival), from which later slots copy their hosts.
    fn web_flows(&mut self, traffic_index: u16, w: &darkbuf_scenario::web::WebFlows) {
        let route = self.tcp_route(&w.tcp);
        let s = SockId::from_index(self.socks.len());
        let task = self.task(TaskKind::Proc(s), TaskState::Sleeping, route.cpu0.add(w.tcp.cpu));
        let end = self.scn.warmup_ns + self.scn.duration_ns;
        let mut sock = crate::sock::tcp::TcpSock::new_sock(&w.tcp, traffic_index, 0, task, route.dev, route.ack_dev, route.mtu, self.profile.max_tcp_header, end, self.seed);
        crate::sock::tcp::web::mark_idle(&mut sock);
        self.socks.push(sock);
        let generator = self.web.len() as u16;
        let ideal = crate::sock::tcp::web::IdealPath::of(self.scn, w, route.mtu);
        self.web.push(crate::sock::tcp::web::WebGen::new(generator, traffic_index, w, route.fq, route.mtu, ideal, s, self.seed));
    }

    /// Whether a TCP flow's sender is on the far host: a download, except over a radio,
    /// where a download is the AP (this host) sending to its station and an upload the
    /// station sending.
    fn sends_from_far(&self, f: &darkbuf_scenario::TcpFlow) -> bool {
        darkbuf_scenario::wifi::far_sends(self.scn.device.driver(), f.direction)
    }

    /// The receiving application of a flow's connections `first..`, with a modelled
    /// receiver: one `poll` thread for all, or a `blocking` thread each, sleeping until
    /// data comes. They run on the receiving host: `receiver_cpu`, or the CPU of the
    /// receiving device's first queue's NAPI (the kernel backend pins its receiver to
    /// its consumer's CPU, the same on two CPUs).
    fn tcp_readers(&mut self, f: &darkbuf_scenario::TcpFlow, first: SockId) {
        use darkbuf_scenario::TcpReceiver;
        let poll = match f.receiver {
            TcpReceiver::Instant => return,
            TcpReceiver::Poll => true,
            TcpReceiver::Blocking => false,
        };
        // The receiving host, and the device the data arrives at: the far host's NIC
        // for an upload over a NIC; this host's device (veth keeps its peer's rings
        // on dev 0) or a [lan] client's NIC otherwise.
        let nic = self.scn.device.wire().is_some();
        let (cpu0, rx_dev) = match self.sends_from_far(f) {
            false if nic => (self.hosts[HostId(1)].cpus.start, Some(DevId(1))),
            false => (self.near.cpu0, Some(DevId(0))),
            // A download on veth arrives through the sending CPU's backlog (this end has
            // no NAPI of its own): the reader sits on the IRQ CPU, where the kernel
            // backend pins it.
            true if self.veth_peer.is_some() => (self.near.cpu0, None),
            true => (self.near.cpu0, Some(self.near.dev)),
        };
        // Its first queue's NAPI CPU as built (tun has no NAPI: its IRQ CPU).
        let napi_cpu = self.napis.iter().find(|n| Some(n.dev) == rx_dev && n.queue == 0).map(|n| self.tasks[n.task].cpu);
        let cpu = match f.receiver_cpu {
            Some(c) => cpu0.add(c),
            None => napi_cpu.unwrap_or_else(|| cpu0.add(self.irq_cpu(0).0 as u32)),
        };
        let n = f.flows;
        let readers: Vec<(SockId, u32)> = if poll { vec![(first, n)] } else { first.run(n).iter().map(|s| (s, 1)).collect() };
        for (first, n) in readers {
            let task = self.task(TaskKind::TcpReader { first, n }, TaskState::Sleeping, cpu);
            for s in first.run(n).iter() {
                if let crate::sock::SockKind::Tcp(t) = &mut self.socks[s].kind {
                    t.set_reader(task, poll);
                }
            }
        }
    }
}

impl World {
    pub fn new(scn: &Scenario, profile: Profile, seed: u64) -> Result<World, SetupError> {
        use rand::SeedableRng;
        let hz = scn.machine.hz;
        let jiffies0 = initial_jiffies(hz);
        let cfg = Config {
            hz,
            jiffy_ns: 1_000_000_000 / hz as u64,
            start: scn.warmup_ns,
            end: scn.warmup_ns.saturating_add(scn.duration_ns),
            sample_interval: scn.sample_interval_ns,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut b = Builder::new(scn, &profile, seed, rng.gen());
        b.host(scn.machine.cpus.max(2));
        match &scn.device.settings {
            DriverSettings::Veth => b.veth()?,
            DriverSettings::Tun => b.tun()?,
            DriverSettings::Nic(wire) => b.nic(wire)?,
            DriverSettings::Wifi(wire, wifi) => b.wifi(wire, wifi)?,
        }
        if let Some(lan) = &scn.lan {
            b.lan(lan)?;
        }
        let download = |t: &Traffic| match t {
            Traffic::Tcp(f) => f.direction == darkbuf_scenario::Direction::Down,
            Traffic::Web(w) => w.tcp.direction == darkbuf_scenario::Direction::Down,
            Traffic::Voip(v) => v.direction.sends_down(),
            _ => false,
        };
        if scn.device.driver() == DriverKind::Veth && scn.lan.is_none() && scn.traffic.iter().any(download) {
            b.veth_peer = Some(b.veth_peer()?);
        }
        if let Some(i) = &scn.ingress {
            b.ifb(i)?;
        }
        let pingers = b.sockets();
        b.far_hosts();
        b.wifi_stations();
        let starts = std::mem::take(&mut b.starts);
        let web = std::mem::take(&mut b.web);
        let ncpu = b.hosts.last().map_or(0, |h| h.cpus.end.idx());
        let ksoftirqd_base = TaskId::from_index(b.tasks.len());
        for c in 0..ncpu {
            b.task(TaskKind::Ksoftirqd, TaskState::Sleeping, CpuId::from_index(c));
        }
        // A router's traffic leaves dev 0 from the CPU of its LAN NIC's NAPI.
        // (On veth the router forwards from the backlog of the CPU that sent into its
        // LAN veth: the sender's, as on a host.)
        let forward_cpu = (scn.lan.is_some() && scn.device.driver() == DriverKind::Nic).then(|| b.irq_cpu(0).idx());
        let measured_txq = match scn.device.wifi() {
            // The radio's traffic is best effort: AC BE, queue 2.
            Some(_) => (DevId(0), 2),
            None => (DevId(0), measured_queue(scn, &b.devs[DevId(0)].xps, forward_cpu)),
        };
        let ntasks = b.tasks.len();
        let cpus = b.hosts.iter().enumerate().flat_map(|(h, host)| host.cpus.iter().map(move |_| Cpu::new(HostId::from_index(h), ntasks)));
        let profile_noise = profile.noise;
        for q in &mut b.qdiscs {
            q.measured = q.dev == measured_txq.0;
        }
        let mut w = World {
            now: 0,
            cfg,
            events: EventQueue::new(ncpu),
            jiffy_cache: std::cell::Cell::new((0, jiffies0)),
            sched: Sched {
                cpus: cpus.collect(),
                tasks: b.tasks,
                ksoftirqd_base,
                current_cpu: CpuId(0),
                stalls: crate::stall::Stalls::new(&profile.stalls, seed, ncpu),
            },
            net: Net {
                hosts: b.hosts,
                devs: b.devs,
                qdiscs: b.qdiscs,
                napis: b.napis,
                links: b.links,
                forwarding: scn.lan.is_some(),
                ingress: scn.ingress.is_some(),
                deferred: Vec::new(),
            },
            socks: Sockets::new(b.socks, b.sock_link, web),
            pkts: Arena::with_capacity(4096),
            metrics: Metrics { measured_txq, ..Metrics::default() },
            rand: Rand::new(rng, crate::path::path_rng(seed, scn.device.wire().map(|w| &w.path)), profile_noise),
            scratch: Scratch::new(MAX_BULK),
            profile,
            #[cfg(test)]
            burst_sends: 0,
            #[cfg(test)]
            drop_bursts: true,
        };
        w.metrics.bql_txq = vec![Default::default(); w.net.devs[measured_txq.0].txqs.len()];
        w.check_ids();
        w.start(&pingers);
        for (at, task) in starts {
            w.events.push(at, Event::TaskTimer(task));
        }
        w.web_start();
        Ok(w)
    }

    /// Time 0: runnable processes start in task order on their CPUs, and the first
    /// events are queued.
    fn start(&mut self, pingers: &[(SockId, u64)]) {
        for ti in self.sched.tasks.ids() {
            let t = self.sched.tasks[ti];
            if t.state == TaskState::Runnable {
                self.sched.cpus[t.cpu].runnable.push_back(ti);
            }
        }
        for c in self.sched.cpus.ids() {
            if !self.sched.cpus[c].runnable.is_empty() {
                self.cpu_kick(c, 0);
            }
        }
        self.events.push(self.cfg.start, Event::Warmup);
        self.stalls_start();
        if self.cfg.sample_interval > 0 {
            self.events.push(self.cfg.start, Event::Sample);
        }
        let tcp = self.socks.iter().any(|s| matches!(s.kind, crate::sock::SockKind::Tcp(_)));
        if tcp && crate::sock::tcp::IPERF_INTERVAL_NS <= self.cfg.end {
            self.events.push(crate::sock::tcp::IPERF_INTERVAL_NS, Event::Interval);
        }
        // A pinger's first probe comes at a random phase within its interval, so runs
        // with different seeds sample differently (and pingers are not in step).
        for &(s, interval) in pingers {
            let phase = self.rand.rng.gen_range(0..interval);
            let task = self.socks[s].task;
            self.events.push(phase, Event::TaskTimer(task));
        }
    }
}

/// The TX queue the BQL and ring metrics describe: `xps_txq`, else the queue XPS
/// maps the first local sender's CPU to (its first one; a flood's, else an upload's),
/// or a router's forwarding CPU (`forward_cpu`), else queue 0.
fn measured_queue(scn: &Scenario, xps: &Xps, forward_cpu: Option<usize>) -> u16 {
    if let Some(q) = scn.device.xps_txq {
        return q as u16;
    }
    if let Some(c) = forward_cpu {
        return match xps {
            Xps::CpuMap(map) => map[c].first().copied().unwrap_or(0),
            _ => 0,
        };
    }
    // The first local sender's CPU: a flood's, else an upload's.
    let first_flood_cpu = scn
        .traffic
        .iter()
        .find_map(|t| match t {
            Traffic::Udp(u) => Some(u.cpu as usize),
            _ => None,
        })
        .or_else(|| {
            scn.traffic.iter().find_map(|t| match t {
                Traffic::Tcp(f) if f.direction == darkbuf_scenario::Direction::Up => Some(f.cpu as usize),
                _ => None,
            })
        });
    match (xps, first_flood_cpu) {
        (Xps::CpuMap(map), Some(c)) => map[c].first().copied().unwrap_or(0),
        _ => 0,
    }
}
