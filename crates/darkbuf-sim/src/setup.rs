//! Building the world from a scenario: the host and its CPUs, the devices (a veth
//! pair, or a tun/tap) with their TX queues, BQL and qdiscs, the NAPI instances, the
//! sockets and their processes, and where each task runs.
//!
//! Placement is the scenario's: each sending process on its `cpu` (taskset; default
//! 0), queue i's consumer (threaded NAPI kthread, tun reader, vhost worker) on
//! `irq_cpus[i % len]` (default CPU 1 + i % (cpus - 1), away from the senders), and
//! the XPS map that `netdev_pick_tx()` follows from the sending CPU.

use crate::arena::Arena;
use crate::cpu::{Cpu, CpuId, DevId, Task, TaskId, TaskKind, TaskState};
use crate::dev::bql::CompletionBatch;
use crate::dev::sch::{QdiscInst, MAX_BULK};
use crate::dev::{NetDev, Xps};
use crate::drivers::tun::{Tun, TunQueue};
use crate::drivers::veth::{Veth, VethRq};
use crate::drivers::Driver;
use crate::event::{Event, EventQueue};
use crate::host::Host;
use crate::metrics::Metrics;
use crate::napi::{Napi, RxStack};
use crate::profile::Profile;
use crate::sock::{PingSock, UdpSock};
use crate::world::{initial_jiffies, msecs_to_jiffies, usecs_to_jiffies, Config, World};
use darkbuf_model::dql::Dql;
use darkbuf_model::qdisc::{self, DevInfo};
use darkbuf_model::txq::NetdevQueue;
use darkbuf_scenario::{
    BqlUnit, ConsumerKind, Device, Driver as DriverKind, NapiMode, QdiscSpec, RulesMatch, Scenario, Traffic, XpsSpec,
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

/// What construction accumulates before the world exists.
#[derive(Default)]
struct Builder {
    tasks: Vec<Task>,
    devs: Vec<NetDev>,
    qdiscs: Vec<QdiscInst>,
    napis: Vec<Napi>,
    socks: Vec<crate::sock::Sock>,
}

impl Builder {
    fn task(&mut self, kind: TaskKind, state: TaskState, cpu: CpuId) -> TaskId {
        self.tasks.push(Task { kind, state, cpu, wake_preempt: false });
        (self.tasks.len() - 1) as TaskId
    }
}

impl World {
    pub fn new(scn: &Scenario, profile: Profile, seed: u64) -> Result<World, SetupError> {
        use rand::SeedableRng;
        let d = &scn.device;
        let hz = scn.machine.hz;
        let jiffies0 = initial_jiffies(hz);
        let cfg = Config {
            hz,
            jiffy_ns: 1_000_000_000 / hz as u64,
            start: scn.warmup_ns,
            end: scn.warmup_ns.saturating_add(scn.duration_ns),
            sample_interval: scn.sample_interval_ns,
        };
        let ncpu = scn.machine.cpus.max(2) as usize;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let qdisc_hash_key: u32 = rng.gen();
        let host = Host {
            cpus: 0..ncpu as CpuId,
            netdev_budget: d.netdev_budget as i32,
            netdev_budget_jiffies: usecs_to_jiffies(d.netdev_budget_usecs, hz),
        };
        let mut b = Builder::default();

        // The device the scenario's traffic leaves by: dev 0.
        let qdev = DevInfo { tx_queue_len: d.txqueuelen, mtu_l2: 1514, hash_key: qdisc_hash_key, hz };
        let txqs = bql_txqs(d, hz, jiffies0);
        let txq_qdisc = build_qdiscs(&mut b, scn, &qdev, 0)?;
        let bql_unit_packet = d.bql.unit == BqlUnit::Packet;
        let xps = match (&d.xps, d.xps_txq) {
            (_, Some(q)) => Xps::Queue(q as u16),
            (XpsSpec::None, None) => Xps::Hash,
            // The driver's map (mlx5e sets channel i's xps_cpus to its CPU): one queue per core.
            (XpsSpec::Cpu, None) => Xps::CpuMap((0..ncpu as u32).map(|c| vec![(c % d.tx_queues) as u16]).collect()),
            (XpsSpec::Cpus(cpus), None) => Xps::from_queue_cpus(cpus.iter().copied(), ncpu),
        };
        let netdev = |txqs: Vec<NetdevQueue>, txq_qdisc, xps, bql, driver| NetDev {
            txq_base: vec![Default::default(); txqs.len()],
            txqs,
            txq_qdisc,
            xps,
            bql,
            bql_unit_packet,
            backpressure: d.backpressure,
            txhash_key: TXHASH_KEY,
            driver,
        };
        // A queue's consumer (NAPI kthread, tun reader) on its IRQ CPU.
        let consumer_cpu = |i: u32| d.irq_cpus[i as usize % d.irq_cpus.len()] as CpuId;
        match d.driver {
            DriverKind::Veth => {
                // veth0 (this end, dev 0) and veth1 (the peer namespace's end, dev 1),
                // whose RX queues veth0's xmit fills and whose NAPI polls them.
                let rx = RxStack {
                    pkt_ns: profile.consumer_cost_ns(scn.consumer.nrules) + scn.consumer.app_cost_ns as f64,
                    probe_ns: match scn.consumer.rules_match {
                        RulesMatch::All => profile.consumer_cost_ns(scn.consumer.nrules),
                        _ => profile.consumer_cost_ns(0),
                    },
                };
                // The peer's RX queues, each polled by its NAPI on a consumer CPU.
                let peer_rqs = (0..d.tx_queues)
                    .map(|i| {
                        let napi = add_napi(&mut b, d, 0, i as u16, consumer_cpu(i), rx);
                        let completion = CompletionBatch::new(d.bql.completion, d.bql.tx_usecs);
                        VethRq::new(d.ring_size as usize, napi, completion)
                    })
                    .collect();
                b.devs.push(netdev(txqs, txq_qdisc, xps, d.bql.enabled, Driver::Veth(Veth { peer_rqs })));
            }
            DriverKind::Tun => {
                let vhost = scn.consumer.kind == ConsumerKind::Vhost;
                let queues = (0..d.tx_queues)
                    .map(|i| {
                        // The reader (or vhost worker) runs away from the sender, as NAPI does.
                        let task = b.task(TaskKind::DevWorker { dev: 0, queue: i as u16 }, TaskState::Sleeping, consumer_cpu(i));
                        TunQueue::new(d.ring_size as usize, task)
                    })
                    .collect();
                // wake_threshold 0 = on any free slot; 1 = only once the ring is empty.
                let wake_cnt = ((d.wake_threshold * d.ring_size as f64).ceil() as u32).clamp(1, d.ring_size.max(1));
                let tun = Tun { queues, vhost, wake_cnt, app_cost_ns: scn.consumer.app_cost_ns as f64 };
                b.devs.push(netdev(txqs, txq_qdisc, xps, d.bql.enabled, Driver::Tun(tun)));
            }
        }
        let xps_of_dev0 = b.devs[0].xps.clone();

        // Sockets, each with its process: every flood, and the first pinger.
        let mut pinger = None;
        for (i, t) in scn.traffic.iter().enumerate() {
            let s = b.socks.len() as u16;
            match t {
                Traffic::Udp(u) => {
                    let task = b.task(TaskKind::Proc(s), TaskState::Runnable, u.cpu as CpuId);
                    b.socks.push(UdpSock::new_sock(i as u16, u, task, 0));
                }
                Traffic::Ping(p) if pinger.is_none() => {
                    let task = b.task(TaskKind::Proc(s), TaskState::Sleeping, p.cpu as CpuId);
                    // The pinger sleeps most of the time, so CFS lets it preempt at wake-up.
                    b.tasks[task as usize].wake_preempt = true;
                    b.socks.push(PingSock::new_sock(p, task, 0));
                    pinger = Some((s, p.interval_ns.max(1)));
                }
                Traffic::Ping(_) => {}
            }
        }
        let ksoftirqd_base = b.tasks.len() as TaskId;
        for c in 0..ncpu {
            b.task(TaskKind::Ksoftirqd, TaskState::Sleeping, c as CpuId);
        }

        let profile_noise = profile.noise;
        let mut w = World {
            now: 0,
            cfg,
            profile,
            events: EventQueue::new(ncpu),
            cpus: host.cpus.clone().map(|_| Cpu::new(0, b.tasks.len())).collect(),
            ksoftirqd_base,
            jiffy_cache: std::cell::Cell::new((0, jiffies0)),
            tasks: b.tasks,
            hosts: vec![host],
            devs: b.devs,
            qdiscs: b.qdiscs,
            napis: b.napis,
            socks: b.socks,
            pkts: Arena::with_capacity(4096),
            measured_txq: (0, measured_queue(scn, &xps_of_dev0)),
            metrics: Metrics::default(),
            rng,
            noise_floor: 1.0 - profile_noise,
            noise_per_u32: 2.0 * profile_noise / 4294967296.0,
            drops: Vec::with_capacity(64),
            bulk: Vec::with_capacity(MAX_BULK),
            created: 0,
            delivered: 0,
            dropped: 0,
        };
        // Runnable processes start in task order on their CPUs.
        for ti in 0..w.tasks.len() {
            let t = w.tasks[ti];
            if t.state == TaskState::Runnable {
                w.cpus[t.cpu as usize].runnable.push_back(ti as TaskId);
            }
        }
        for c in 0..ncpu {
            if !w.cpus[c].runnable.is_empty() {
                w.cpu_kick(c as CpuId, 0);
            }
        }
        w.events.push(w.cfg.start, Event::Warmup);
        if w.cfg.sample_interval > 0 {
            w.events.push(w.cfg.start, Event::Sample);
        }
        // The pinger's first probe comes at a random phase within its interval, so runs
        // with different seeds sample differently.
        if let Some((s, interval)) = pinger {
            let phase = w.rng.gen_range(0..interval);
            let task = w.socks[s as usize].task;
            w.events.push(phase, Event::TaskTimer(task));
        }
        Ok(w)
    }
}

/// The TX queue the BQL and ring metrics describe: `xps_txq`, else the queue XPS
/// maps the first flood's CPU to (its first one), else queue 0.
fn measured_queue(scn: &Scenario, xps: &Xps) -> u16 {
    if let Some(q) = scn.device.xps_txq {
        return q as u16;
    }
    let first_flood_cpu = scn.traffic.iter().find_map(|t| match t {
        Traffic::Udp(u) => Some(u.cpu as usize),
        _ => None,
    });
    match (xps, first_flood_cpu) {
        (Xps::CpuMap(map), Some(c)) => map[c].first().copied().unwrap_or(0),
        _ => 0,
    }
}

/// The device's TX queues, with DQL as the veth BQL series sets it up (`dql_init(HZ)`,
/// limits via sysfs) when BQL is enabled.
fn bql_txqs(d: &Device, hz: u32, jiffies0: u64) -> Vec<NetdevQueue> {
    let hold_jiffies = msecs_to_jiffies(d.bql.hold_time_ns / 1_000_000, hz);
    (0..d.tx_queues)
        .map(|_| {
            let dql = d.bql.enabled.then(|| {
                let mut dql = Dql::new(hold_jiffies, jiffies0);
                dql.set_min_limit(d.bql.limit_min);
                dql.max_limit = d.bql.limit_max;
                dql
            });
            NetdevQueue::new(dql)
        })
        .collect()
}

/// The qdiscs of device `dev`: noqueue, one root over all TX queues, or mq with a child
/// per queue. Returns each TX queue's qdisc.
fn build_qdiscs(b: &mut Builder, scn: &Scenario, info: &DevInfo, dev: DevId) -> Result<Vec<Option<u16>>, SetupError> {
    let d = &scn.device;
    let mut txq_qdisc = vec![None; d.tx_queues as usize];
    let build = |spec: &QdiscSpec| {
        qdisc::build(&spec.kind, spec.params.clone(), info)
            .map_err(|e| SetupError::Unsupported(format!("qdisc {}: {e:?}", spec.kind)))
    };
    match scn.qdisc.kind.as_str() {
        "noqueue" => {}
        "mq" => {
            let default_child = QdiscSpec { kind: "pfifo_fast".into(), params: Default::default(), child: None };
            let child = scn.qdisc.child.as_deref().unwrap_or(&default_child);
            for (i, slot) in txq_qdisc.iter_mut().enumerate() {
                // mq children have TCQ_F_ONETXQUEUE: they may bulk-dequeue by BQL budget.
                b.qdiscs.push(QdiscInst::new(Some(build(child)?), dev, true, Some(i as u16)));
                *slot = Some((b.qdiscs.len() - 1) as u16);
            }
        }
        _ => {
            // qdisc_create(): TCQ_F_ONETXQUEUE only if !netif_is_multiqueue(dev), i.e. one
            // TX queue *allocated* (veth allocates num_possible_cpus() by default).
            let onetx = d.num_tx_queues == 1;
            b.qdiscs.push(QdiscInst::new(Some(build(&scn.qdisc)?), dev, onetx, onetx.then_some(0)));
            let root = (b.qdiscs.len() - 1) as u16;
            txq_qdisc.iter_mut().for_each(|s| *s = Some(root));
        }
    }
    Ok(txq_qdisc)
}

/// A NAPI instance for RX queue `queue` of `dev`, with its kthread pinned to `cpu`
/// (created in softirq mode too, where it never runs).
fn add_napi(b: &mut Builder, d: &Device, dev: DevId, queue: u16, cpu: CpuId, rx_stack: RxStack) -> u16 {
    let n = b.napis.len() as u16;
    let task = b.task(TaskKind::NapiThread(n), TaskState::Sleeping, cpu);
    let gro_batch = d.gro_normal_batch.max(1) as usize;
    b.napis.push(Napi {
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
        measured: true,
    });
    n
}
