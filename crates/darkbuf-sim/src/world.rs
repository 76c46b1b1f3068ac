//! The simulated machine: CPUs, the sender's device (TX queues and qdiscs), the peer's
//! RX queues (rings and NAPI), the traffic, and the main event loop.

use crate::arena::Arena;
use crate::cpu::*;
use crate::dev::QdiscInst;
use crate::event::{Event, EventQueue};
use crate::metrics::Metrics;
use crate::profile::Profile;
use crate::traffic::{Pinger, Sender};
use crate::tun::TunQueue;
use crate::veth::VethRq;
use darkbuf_model::dql::Dql;
use darkbuf_model::qdisc::{self, DevInfo, Qdisc};
use darkbuf_model::txq::NetdevQueue;
use darkbuf_report::Finding;
use darkbuf_scenario::{Completion, NapiMode, Scenario};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// `INITIAL_JIFFIES`: jiffies start 300 s before the 32-bit wrap, so wrap bugs show early.
pub fn initial_jiffies(hz: u32) -> u64 {
    (0u32.wrapping_sub(300u32.wrapping_mul(hz))) as u64
}

/// Scenario settings the hot path reads, resolved once.
pub struct Config {
    pub hz: u32,
    /// ns per jiffy (1e9 / HZ).
    pub jiffy_ns: u64,
    pub napi_threaded: bool,
    pub napi_weight: u32,
    pub netdev_budget: i32,
    pub netdev_budget_jiffies: u64,
    pub gro_normal_batch: usize,
    pub backpressure: bool,
    pub bql: bool,
    pub bql_unit_packet: bool,
    pub completion: Completion,
    /// tx-usecs window in ns (0 = per-packet completion).
    pub bql_flush_ns: u64,
    pub xps_txq: Option<u16>,
    pub tx_queues: u16,
    /// Per-packet stack cost of the consumer: base + rules + application (ns).
    pub consumer_pkt_ns: f64,
    /// The same for a probe (an echo request: no application; the rules only if
    /// `consumer.rules_match = "all"`).
    pub probe_pkt_ns: f64,
    pub start: u64,
    pub end: u64,
    /// Time-series sampling interval (ns); 0 = none.
    pub sample_interval: u64,
    /// driver = "tun": the sender device is a tun/tap.
    pub tun: bool,
    /// tun: the consumer is vhost-net (else a user-space reader).
    pub tun_vhost: bool,
    /// tun backpressure: entries consumed after a stop before the queue is woken.
    pub tun_wake_cnt: u32,
    /// The receiving application's extra per-packet cost (ns).
    pub app_cost_ns: f64,
}

pub struct World {
    pub now: u64,
    pub cfg: Config,
    pub profile: Profile,
    pub events: EventQueue,
    pub cpus: Vec<Cpu>,
    pub tasks: Vec<(Task, TaskState, u16)>,
    /// Where each task sits in `tasks` (the hot path looks tasks up on every wake-up).
    task_ix: TaskIndex,
    /// `jiffies()`: start of the current tick (ns) and its jiffies value.
    jiffy_cache: std::cell::Cell<(u64, u64)>,
    pub pkts: Arena,
    /// The sender device's TX queues (veth: index i feeds the peer's RX queue i).
    pub txqs: Vec<NetdevQueue>,
    /// Qdisc instances; `txq_qdisc[i]` is TX queue i's (`None` = noqueue).
    pub qdiscs: Vec<QdiscInst>,
    pub txq_qdisc: Vec<Option<u16>>,
    pub rqs: Vec<VethRq>,
    /// driver = "tun": the tun queues (`rqs` is empty then).
    pub tunqs: Vec<TunQueue>,
    /// TX queue counters at the start of the measured window.
    pub txq_base: Vec<darkbuf_model::txq::TxqStats>,
    pub senders: Vec<Sender>,
    pub pinger: Option<Pinger>,
    pub metrics: Metrics,
    pub rng: ChaCha8Rng,
    /// `cost()`'s noise factor as 1 - noise + u * (2 * noise / 2^32).
    noise_floor: f64,
    noise_per_u32: f64,
    /// Reused buffer for packets a qdisc drops.
    pub drops: Vec<darkbuf_model::Skb>,
    /// Reused buffer for the skb chain one `qdisc_restart()` hands to the driver.
    pub bulk: Vec<darkbuf_model::Skb>,
    /// Packets created, delivered and dropped since time 0, for the conservation check.
    pub created: u64,
    pub delivered: u64,
    pub dropped: u64,
}

/// Positions in `World::tasks`, by task kind. The floods' tasks are contiguous, so a
/// sender's position (looked up twice per sendmsg) is one addition.
#[derive(Default)]
struct TaskIndex {
    /// Position of `Sender(0)`; `Sender(s)` is at `sender_base + s`.
    sender_base: u16,
    pinger: u16,
    /// NapiThread(i), Reader(i) or Vhost(i): the task of queue i.
    per_queue: Vec<u16>,
    /// ksoftirqd, by CPU.
    ksoftirqd: Vec<u16>,
}

impl TaskIndex {
    fn new(tasks: &[(Task, TaskState, u16)]) -> Self {
        let mut ix = TaskIndex::default();
        let put = |v: &mut Vec<u16>, at: u16, i: usize| {
            if v.len() <= at as usize {
                v.resize(at as usize + 1, u16::MAX);
            }
            v[at as usize] = i as u16;
        };
        for (i, &(task, _, cpu)) in tasks.iter().enumerate() {
            match task {
                Task::Sender(0) => ix.sender_base = i as u16,
                Task::Sender(s) => assert_eq!(i, (ix.sender_base + s) as usize, "floods' tasks are contiguous"),
                Task::Pinger => ix.pinger = i as u16,
                Task::NapiThread(q) | Task::Reader(q) | Task::Vhost(q) => put(&mut ix.per_queue, q, i),
                Task::Ksoftirqd => put(&mut ix.ksoftirqd, cpu, i),
            }
        }
        ix
    }
}

/// The simulator could not be set up for this scenario.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("{0}")]
    Unsupported(String),
}

impl World {
    pub fn new(scn: &Scenario, profile: Profile, seed: u64) -> Result<World, SetupError> {
        use rand::SeedableRng;
        let d = &scn.device;
        let tun = d.driver == darkbuf_scenario::Driver::Tun;
        let hz = scn.machine.hz;
        let jiffies0 = initial_jiffies(hz);
        let cfg = Config {
            hz,
            jiffy_ns: 1_000_000_000 / hz as u64,
            napi_threaded: d.napi == NapiMode::Threaded,
            napi_weight: d.napi_weight,
            netdev_budget: d.netdev_budget as i32,
            netdev_budget_jiffies: usecs_to_jiffies(d.netdev_budget_usecs, hz),
            gro_normal_batch: d.gro_normal_batch.max(1) as usize,
            backpressure: d.backpressure,
            bql: d.bql.enabled,
            bql_unit_packet: d.bql.unit == darkbuf_scenario::BqlUnit::Packet,
            completion: d.bql.completion,
            bql_flush_ns: d.bql.tx_usecs as u64 * 1000,
            xps_txq: d.xps_txq.map(|x| x as u16),
            tx_queues: d.tx_queues as u16,
            consumer_pkt_ns: profile.consumer_cost_ns(scn.consumer.nrules) + scn.consumer.app_cost_ns as f64,
            probe_pkt_ns: match scn.consumer.rules_match {
                darkbuf_scenario::RulesMatch::All => profile.consumer_cost_ns(scn.consumer.nrules),
                _ => profile.consumer_cost_ns(0),
            },
            start: scn.warmup_ns,
            sample_interval: scn.sample_interval_ns,
            tun,
            tun_vhost: scn.consumer.kind == darkbuf_scenario::ConsumerKind::Vhost,
            // wake_threshold 0 = on any free slot; 1 = only once the ring is empty.
            tun_wake_cnt: ((d.wake_threshold * d.ring_size as f64).ceil() as u32).clamp(1, d.ring_size.max(1)),
            app_cost_ns: scn.consumer.app_cost_ns as f64,
            end: scn.warmup_ns.saturating_add(scn.duration_ns),
        };
        let ncpu = scn.machine.cpus.max(2) as usize;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let hash_key: u32 = rng.gen();

        // TX queues with BQL as the veth BQL series sets it up (dql_init(HZ), limits via sysfs).
        let hold_jiffies = msecs_to_jiffies(d.bql.hold_time_ns / 1_000_000, hz);
        let txqs = (0..d.tx_queues)
            .map(|_| {
                let dql = cfg.bql.then(|| {
                    let mut dql = Dql::new(hold_jiffies, jiffies0);
                    dql.set_min_limit(d.bql.limit_min);
                    dql.max_limit = d.bql.limit_max;
                    dql
                });
                NetdevQueue::new(dql)
            })
            .collect();

        // Qdiscs: noqueue, one root over all TX queues, or mq with a child per queue.
        let dev = DevInfo { tx_queue_len: d.txqueuelen, mtu_l2: 1514, hash_key, hz };
        let mut qdiscs = Vec::new();
        let mut txq_qdisc = vec![None; d.tx_queues as usize];
        let build = |spec: &darkbuf_scenario::QdiscSpec| {
            qdisc::build(&spec.kind, spec.params.clone(), &dev)
                .map_err(|e| SetupError::Unsupported(format!("qdisc {}: {e:?}", spec.kind)))
        };
        match scn.qdisc.kind.as_str() {
            "noqueue" => {}
            "mq" => {
                let default_child = darkbuf_scenario::QdiscSpec {
                    kind: "pfifo_fast".into(),
                    params: Default::default(),
                    child: None,
                };
                let child = scn.qdisc.child.as_deref().unwrap_or(&default_child);
                for (i, slot) in txq_qdisc.iter_mut().enumerate() {
                    // mq children have TCQ_F_ONETXQUEUE: they may bulk-dequeue by BQL budget.
                    qdiscs.push(QdiscInst::new(Some(build(child)?), true, Some(i as u16)));
                    *slot = Some(i as u16);
                }
            }
            _ => {
                // qdisc_create(): TCQ_F_ONETXQUEUE only if !netif_is_multiqueue(dev), i.e. one
                // TX queue *allocated* (veth allocates num_possible_cpus() by default).
                let onetx = d.num_tx_queues == 1;
                qdiscs.push(QdiscInst::new(Some(build(&scn.qdisc)?), onetx, onetx.then_some(0)));
                txq_qdisc.iter_mut().for_each(|s| *s = Some(0));
            }
        }

        let mut tasks = Vec::new();
        let mut tunqs = Vec::new();
        if tun {
            for i in 0..d.tx_queues {
                // The reader (or vhost worker) runs away from the sender, as NAPI does.
                let cpu = 1 + (i as usize % (ncpu - 1)) as u16;
                let task = if cfg.tun_vhost { Task::Vhost(i as u16) } else { Task::Reader(i as u16) };
                tasks.push((task, TaskState::Sleeping, cpu));
                tunqs.push(TunQueue::new(d.ring_size as usize, cpu));
            }
        }
        let rqs: Vec<VethRq> = (0..if tun { 0 } else { d.tx_queues })
            .map(|i| {
                // Threaded NAPI kthreads are pinned away from the sender (CPU 0).
                let cpu = 1 + (i as usize % (ncpu - 1)) as u16;
                tasks.push((Task::NapiThread(i as u16), TaskState::Sleeping, cpu));
                VethRq::new(d.ring_size as usize, cpu, cfg.gro_normal_batch)
            })
            .collect();

        let mut senders = Vec::new();
        let mut pinger = None;
        for (i, t) in scn.traffic.iter().enumerate() {
            match t {
                darkbuf_scenario::Traffic::Udp(u) => {
                    let s = Sender::new(i as u16, senders.len() as u16, u);
                    tasks.push((Task::Sender(s.index), TaskState::Runnable, 0));
                    senders.push(s);
                }
                darkbuf_scenario::Traffic::Ping(p) => {
                    if pinger.is_none() {
                        pinger = Some(Pinger::new(p));
                    }
                }
            }
        }
        if pinger.is_some() {
            tasks.push((Task::Pinger, TaskState::Sleeping, 0));
        }
        for c in 0..ncpu {
            tasks.push((Task::Ksoftirqd, TaskState::Sleeping, c as u16));
        }
        let profile_noise = profile.noise;
        let metrics = Metrics { sink_pkts: vec![0; senders.len()], ..Default::default() };
        let mut w = World {
            now: 0,
            cfg,
            profile,
            events: EventQueue::new(ncpu),
            cpus: (0..ncpu).map(|_| Cpu::new(tasks.len())).collect(),
            task_ix: TaskIndex::new(&tasks),
            jiffy_cache: std::cell::Cell::new((0, jiffies0)),
            tasks,
            pkts: Arena::with_capacity(4096),
            txqs,
            qdiscs,
            txq_qdisc,
            txq_base: vec![Default::default(); d.tx_queues as usize],
            rqs,
            tunqs,
            senders,
            pinger,
            metrics,
            rng,
            noise_floor: 1.0 - profile_noise,
            noise_per_u32: 2.0 * profile_noise / 4294967296.0,
            drops: Vec::with_capacity(64),
            bulk: Vec::with_capacity(crate::dev::MAX_BULK),
            created: 0,
            delivered: 0,
            dropped: 0,
        };
        // Senders start runnable on CPU 0; the pinger's first probe comes at a random
        // phase within its interval so runs with different seeds sample differently.
        for i in 0..w.senders.len() {
            w.cpus[0].runnable.push_back(Task::Sender(i as u16));
        }
        w.cpu_kick(0, 0);
        w.events.push(w.cfg.start, Event::Warmup);
        if w.cfg.sample_interval > 0 {
            w.events.push(w.cfg.start, Event::Sample);
        }
        if let Some(p) = &w.pinger {
            let phase = w.rng.gen_range(0..p.interval_ns.max(1));
            let ti = w.task_index(Task::Pinger);
            w.events.push(phase, Event::TaskTimer(ti));
        }
        Ok(w)
    }

    pub fn jiffies(&self) -> u64 {
        // The tick that began at `from` is still current on nearly every call; the
        // division is done only when the clock has moved to another tick.
        let (from, j) = self.jiffy_cache.get();
        if self.now.wrapping_sub(from) < self.cfg.jiffy_ns {
            return j;
        }
        let n = self.now / self.cfg.jiffy_ns;
        let j = initial_jiffies(self.cfg.hz) + n;
        self.jiffy_cache.set((n * self.cfg.jiffy_ns, j));
        j
    }

    pub fn measuring(&self) -> bool {
        self.now >= self.cfg.start
    }

    /// A step's cost with the profile's seeded noise.
    #[inline]
    pub fn cost(&mut self, ns: f64) -> u64 {
        if self.noise_per_u32 == 0.0 {
            return (ns as i64).max(0) as u64;
        }
        // factor = 1 - noise + 2 * noise * u, u uniform in [0, 1) from 32 seeded bits.
        let u = rand::RngCore::next_u32(&mut self.rng) as f64;
        // Through i64: one conversion instruction; the same value for any cost below 2^63.
        ((ns * (self.noise_floor + u * self.noise_per_u32)) as i64).max(0) as u64
    }

    pub fn finding(&mut self, invariant: &str, detail: String) {
        if self.metrics.findings.len() < 100 {
            self.metrics.findings.push(Finding { time_ns: self.now, invariant: invariant.into(), detail });
        }
    }

    pub fn task_index(&self, t: Task) -> u16 {
        self.task_index_on(t, 0)
    }

    /// Index of `t` in `tasks` (`cpu` picks the ksoftirqd).
    #[inline]
    fn task_index_on(&self, t: Task, cpu: u16) -> u16 {
        let ix = &self.task_ix;
        // Floods first: on the sendmsg path this is a compare, not the match's jump table.
        if let Task::Sender(s) = t {
            return ix.sender_base + s;
        }
        match t {
            Task::Sender(s) => ix.sender_base + s,
            Task::Pinger => ix.pinger,
            Task::NapiThread(q) | Task::Reader(q) | Task::Vhost(q) => ix.per_queue[q as usize],
            Task::Ksoftirqd => ix.ksoftirqd[cpu as usize],
        }
    }

    /// Runs the simulation to the end of the measured window.
    pub fn run(&mut self) {
        while let Some((t, ev)) = self.events.pop() {
            if t > self.cfg.end {
                break;
            }
            self.now = t;
            match ev {
                Event::Cpu(c) => self.cpu_run(c),
                Event::TaskTimer(ti) => self.task_timer(ti),
                Event::Warmup => self.warmup_done(),
                Event::Sample => self.sample(),
                Event::QdiscWatchdog(q) => self.qdisc_watchdog(q),
            }
        }
        self.now = self.cfg.end;
    }

    fn warmup_done(&mut self) {
        for q in &mut self.qdiscs {
            q.base = [q.sent_pkts, q.drops(), q.requeues, q.overlimits()];
            q.xbase = q.q.as_ref().map_or_else(Vec::new, |a| a.xstats());
        }
        self.txq_base = self.txqs.iter().map(|q| q.stats.clone()).collect();
        let (m, now) = (&mut self.metrics, self.now);
        for avg in [&mut m.bql_limit, &mut m.bql_inflight] {
            avg.start_window(now);
        }
        for avg in [&mut m.qdisc_backlog, &mut m.ring] {
            avg.start_window(now);
        }
    }

    /// Makes an idle CPU start executing after `delay` ns.
    pub fn cpu_kick(&mut self, cpu: u16, delay: u64) {
        let c = &mut self.cpus[cpu as usize];
        if !c.busy {
            c.busy = true;
            self.events.push(self.now + delay, Event::Cpu(cpu));
        }
    }

    /// `raise_softirq()` on `cpu` (always the CPU executing the caller).
    pub fn raise_softirq(&mut self, cpu: u16, bit: u8) {
        self.cpus[cpu as usize].softirq_pending |= bit;
    }

    /// `wake_up_process()`: make a task runnable on its CPU.
    pub fn wake_task(&mut self, task: Task, on_cpu: u16) {
        let ti = self.task_index_on(task, on_cpu) as usize;
        let cpu = self.tasks[ti].2;
        match self.tasks[ti].1 {
            TaskState::Sleeping => {
                self.tasks[ti].1 = TaskState::Runnable;
                let c = &mut self.cpus[cpu as usize];
                // The pinger sleeps most of the time, so CFS lets it preempt at wake-up.
                if task == Task::Pinger {
                    c.runnable.push_front(task);
                } else {
                    c.runnable.push_back(task);
                }
                let delay = self.cost(self.profile.costs.wakeup_ns);
                self.cpu_kick(cpu, delay);
            }
            TaskState::Running { .. } => self.tasks[ti].1 = TaskState::Running { woken: true },
            TaskState::Runnable => {}
        }
    }

    fn task_timer(&mut self, ti: u16) {
        let (task, _, cpu) = self.tasks[ti as usize];
        if let Task::Pinger = task {
            if let Some(p) = self.pinger.as_mut() {
                p.due += 1;
            }
            self.pinger_rearm();
        }
        self.wake_task(task, cpu);
    }

    /// Executes steps on `cpu` until one takes time or the CPU goes idle.
    ///
    /// The top frame is held in a local while the CPU executes (`frames` keeps the ones
    /// below it): the common steps, which keep or replace the top, then never touch
    /// the stack in memory.
    fn cpu_run(&mut self, cpu: u16) {
        let ci = cpu as usize;
        'idle: loop {
            let Some(mut top) = self.cpus[ci].frames.pop() else {
                if !self.pick_next(cpu) {
                    self.cpus[ci].busy = false;
                    return;
                }
                continue;
            };
            loop {
                let step = self.step(cpu, &mut top);
                let (cost, empty) = match step {
                    Step::Continue(c) => (c, false),
                    Step::Done(c) => match self.cpus[ci].frames.pop() {
                        Some(f) => {
                            top = f;
                            (c, false)
                        }
                        None => (c, true),
                    },
                    Step::Call(c, child) => {
                        self.cpus[ci].frames.push(top);
                        top = child;
                        (c, false)
                    }
                    Step::Softirqs => {
                        self.cpus[ci].frames.push(top);
                        self.push_softirqs(cpu);
                        top = self.cpus[ci].frames.pop().expect("softirq frame");
                        (0, false)
                    }
                };
                if !self.advance_inline(cpu, cost) {
                    if self.now >= self.cfg.start {
                        self.cpus[ci].busy_ns += cost;
                    }
                    if !empty {
                        self.cpus[ci].frames.push(top);
                    }
                    self.events.push(self.now + cost, Event::Cpu(cpu));
                    return;
                }
                if empty {
                    continue 'idle;
                }
            }
        }
    }

    /// The executor's conservative lookahead after a step of `cost` ns on `cpu`: if
    /// the CPU's next step comes strictly before every pending event, the queue would
    /// hand it straight back (an event pushed now sorts after all existing ones at the
    /// same time), so it runs now: books `cost`, moves the clock past it and returns
    /// true. Same order of effects, without the heap traffic. Otherwise books nothing
    /// and returns false.
    ///
    /// Handlers that loop (a sender's sendmsg loop, the NAPI receive loop) call it too
    /// and go on in place on true, returning `Step::Continue(cost)` on false.
    #[inline]
    pub fn advance_inline(&mut self, cpu: u16, cost: u64) -> bool {
        let next = self.now + cost;
        if cost > 0 && !(next < self.events.peek_time() && next <= self.cfg.end) {
            return false;
        }
        if self.now >= self.cfg.start {
            self.cpus[cpu as usize].busy_ns += cost;
        }
        self.now = next;
        true
    }

    /// Nothing on the stack: run pending softirqs or the next runnable task.
    fn pick_next(&mut self, cpu: u16) -> bool {
        let c = &mut self.cpus[cpu as usize];
        if c.softirq_pending != 0 {
            self.push_softirqs(cpu);
            return true;
        }
        let Some(task) = c.runnable.pop_front() else { return false };
        let ti = self.task_index_on(task, cpu) as usize;
        self.tasks[ti].1 = TaskState::Running { woken: false };
        let c = &mut self.cpus[cpu as usize];
        c.softirq_rounds = 0;
        c.frames.push(Frame::TaskEnd(task));
        if task != Task::Ksoftirqd {
            c.frames.push(Self::unit_frame(task));
        }
        true
    }

    /// The first frame of a task's unit of work (ksoftirqd has none: its `TaskEnd` runs
    /// the pending softirqs).
    fn unit_frame(task: Task) -> Frame {
        match task {
            Task::Sender(_) | Task::Pinger => Frame::SendMsg(task),
            Task::NapiThread(rq) => Frame::NapiPoll { rq, phase: PollPhase::Start, done: 0, flush_pending: false },
            Task::Ksoftirqd => Frame::TaskEnd(task),
            Task::Reader(_) | Task::Vhost(_) => crate::tun::consumer_frame(task),
        }
    }

    /// `__do_softirq()`: clear the pending bits and push their handlers (NET_TX runs
    /// before NET_RX, by softirq number).
    pub fn push_softirqs(&mut self, cpu: u16) {
        let c = &mut self.cpus[cpu as usize];
        let pending = std::mem::take(&mut c.softirq_pending);
        if pending & NET_RX_SOFTIRQ != 0 {
            c.frames.push(Frame::NetRxAction { started: false, awaiting: None });
        }
        if pending & NET_TX_SOFTIRQ != 0 {
            c.frames.push(Frame::NetTxAction { started: false });
        }
    }

    /// The bottom frame of a task's unit: softirqs first (local_bh_enable), then the
    /// task's own decision to run again or sleep.
    #[inline(never)]
    fn task_end(&mut self, cpu: u16, mut task: Task, frame: &mut Frame) -> Step {
        // A sender's loop (sendmsg, the qdisc run it starts, the next sendmsg) goes on
        // here while no other event comes first: what the dispatcher would do next,
        // without the dispatches.
        loop {
            let cost = match self.task_end_once(cpu, task, frame) {
                // A sendmsg that did not start the qdisc: TaskEnd again after it.
                Step::Continue(c) => c,
                Step::Call(c, Frame::QdiscRun { q, mut quota }) => {
                    if !self.advance_inline(cpu, c) {
                        return Step::Call(c, Frame::QdiscRun { q, quota });
                    }
                    match self.qdisc_run_step(cpu, q, &mut quota) {
                        Step::Done(c) => c,
                        Step::Continue(c) => return Step::Call(c, Frame::QdiscRun { q, quota }),
                        _ => unreachable!("the qdisc run keeps or finishes its frame"),
                    }
                }
                other => return other,
            };
            if !self.advance_inline(cpu, cost) {
                return Step::Continue(cost);
            }
            let Frame::TaskEnd(next) = *frame else { unreachable!("a TaskEnd frame") };
            task = next;
        }
    }

    /// One pass of `task_end`: run softirqs, or decide whether the task runs again and
    /// start the next sendmsg in place when there is one.
    #[inline(always)]
    fn task_end_once(&mut self, cpu: u16, task: Task, frame: &mut Frame) -> Step {
        let c = &mut self.cpus[cpu as usize];
        if c.softirq_pending != 0 {
            if c.softirq_rounds == 0 {
                c.softirq_burst_start = self.now;
            }
            if c.softirq_rounds < MAX_SOFTIRQ_RESTART
                && self.now - c.softirq_burst_start < MAX_SOFTIRQ_TIME_NS
            {
                c.softirq_rounds += 1;
                return Step::Softirqs;
            }
            // Too long in softirq: leave the rest to ksoftirqd.
            self.wake_task(Task::Ksoftirqd, cpu);
        }
        let ti = self.task_index_on(task, cpu) as usize;
        let runnable = if let Task::Sender(i) = task {
            self.sender_wants_cpu(i)
        } else {
            self.task_wants_cpu(cpu, task, ti)
        };
        let c = &mut self.cpus[cpu as usize];
        if runnable && c.runnable.is_empty() && c.softirq_pending == 0 && task != Task::Ksoftirqd {
            // Alone on its CPU: the scheduler would pick this task again at once, so
            // start its next unit here (what pick_next() would do, without the round trip).
            self.tasks[ti].1 = TaskState::Running { woken: false };
            c.softirq_rounds = 0;
            return self.start_unit(cpu, task, frame);
        }
        // The unit is over and the stack would be empty: when pick_next() would start a
        // sender's or the pinger's next sendmsg, do it here, in place (the same effects
        // at the same time, one dispatch instead of three).
        let next = match c.runnable.front() {
            Some(next @ (Task::Sender(_) | Task::Pinger)) if c.softirq_pending == 0 => Some(next),
            _ => None,
        };
        match (next, runnable) {
            // This task to the back of the queue, the front one runs: one rotation.
            (Some(_), true) => _ = c.runnable.rotate(task),
            (Some(_), false) => _ = c.runnable.pop_front(),
            (None, true) => c.runnable.push_back(task),
            (None, false) => {}
        }
        self.tasks[ti].1 = if runnable { TaskState::Runnable } else { TaskState::Sleeping };
        if let Some(next) = next {
            let ni = self.task_index_on(next, cpu) as usize;
            self.tasks[ni].1 = TaskState::Running { woken: false };
            self.cpus[cpu as usize].softirq_rounds = 0;
            *frame = Frame::TaskEnd(next);
            return self.send_msg_step(cpu, next);
        }
        Step::Done(0)
    }

    /// Whether a task other than a flood stays runnable at the end of its unit.
    fn task_wants_cpu(&mut self, cpu: u16, task: Task, ti: usize) -> bool {
        match task {
            Task::Sender(i) => self.sender_wants_cpu(i),
            Task::Pinger => self.pinger.as_ref().map(|p| p.due > 0).unwrap_or(false),
            Task::NapiThread(_) => {
                self.cpus[cpu as usize].ret_repoll
                    || matches!(self.tasks[ti].1, TaskState::Running { woken: true })
            }
            Task::Reader(q) | Task::Vhost(q) => self.tun_consumer_wants_cpu(q),
            Task::Ksoftirqd => self.cpus[cpu as usize].softirq_pending != 0,
        }
    }

    /// Starts `task`'s next unit on top of its `TaskEnd` (which `frame` becomes). A
    /// sendmsg runs at once, in this step; other units are pushed.
    fn start_unit(&mut self, cpu: u16, task: Task, frame: &mut Frame) -> Step {
        *frame = Frame::TaskEnd(task);
        match Self::unit_frame(task) {
            Frame::SendMsg(t) => self.send_msg_step(cpu, t),
            f => Step::Call(0, f),
        }
    }

    /// A sendmsg on top of its task's `TaskEnd`: its cost, and the qdisc run it starts.
    #[inline(always)]
    fn send_msg_step(&mut self, cpu: u16, task: Task) -> Step {
        match self.send_msg(cpu, task) {
            (c, None) => Step::Continue(c),
            (c, Some(f)) => Step::Call(c, f),
        }
    }

    /// Dispatches one step of `frame` on `cpu`. The handlers it calls are kept out of
    /// line (`#[inline(never)]`): inlined, they made this dispatcher's prologue and
    /// epilogue, paid on every step, cost more than the calls.
    fn step(&mut self, cpu: u16, frame: &mut Frame) -> Step {
        match frame {
            Frame::TaskEnd(task) => {
                let task = *task;
                self.task_end(cpu, task, frame)
            }
            Frame::SendMsg(task) => match self.send_msg(cpu, *task) {
                (c, None) => Step::Done(c),
                (c, Some(next)) => {
                    // A tail call: the qdisc run replaces the sendmsg.
                    *frame = next;
                    Step::Continue(c)
                }
            },
            Frame::QdiscRun { q, quota } => self.qdisc_run_step(cpu, *q, quota),
            Frame::NetTxAction { started } => self.net_tx_action(cpu, started),
            Frame::NetRxAction { started, awaiting } => self.net_rx_action(cpu, started, awaiting),
            Frame::NapiPoll { phase, flush_pending, rq, done } => {
                self.napi_poll_step(cpu, *rq, phase, done, flush_pending)
            }
            Frame::GroFlush { rq } => Step::Done(self.gro_flush(cpu, *rq)),
            Frame::TunRead { q } => self.tun_read(cpu, *q),
            Frame::VhostRx { q, done } => self.vhost_handle_rx(cpu, *q, done),
        }
    }
}

/// `usecs_to_jiffies()`, rounding up.
pub fn usecs_to_jiffies(us: u64, hz: u32) -> u64 {
    (us * hz as u64).div_ceil(1_000_000)
}

/// `msecs_to_jiffies()`, rounding up.
pub fn msecs_to_jiffies(ms: u64, hz: u32) -> u64 {
    (ms * hz as u64).div_ceil(1000)
}

