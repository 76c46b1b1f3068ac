//! The simulated world: the clock, the event queue, the CPUs and their tasks, the
//! hosts with their devices, qdiscs, NAPI instances and sockets, the packet arena, and
//! the main event loop. Construction from a scenario is in `setup.rs`, the executor
//! that runs the CPUs in `sched.rs`.

use crate::arena::Arena;
use crate::cpu::{Cpu, Task};
use crate::id::{CpuId, DevId, HostId, LinkId, NapiId, QdiscId, SockId, TaskId};
use crate::dev::sch::QdiscInst;
use crate::dev::NetDev;
use crate::event::{Event, EventQueue};
use crate::host::Host;
use crate::metrics::Metrics;
use crate::napi::Napi;
use darkbuf_measure::profile::Profile;
use crate::sock::Sock;
use crate::table::Table;
use darkbuf_report::Finding;
use rand_chacha::ChaCha8Rng;

/// `INITIAL_JIFFIES`: jiffies start 300 s before the 32-bit wrap, so wrap bugs show early.
pub fn initial_jiffies(hz: u32) -> u64 {
    (0u32.wrapping_sub(300u32.wrapping_mul(hz))) as u64
}

/// The run's clock settings, resolved once.
pub struct Config {
    pub hz: u32,
    /// ns per jiffy (1e9 / HZ).
    pub jiffy_ns: u64,
    /// The measured window: warmup end and run end (ns).
    pub start: u64,
    pub end: u64,
    /// Time-series sampling interval (ns); 0 = none.
    pub sample_interval: u64,
}

/// The simulated machine and everything in it, grouped by subsystem: the clock and
/// its event queue here, the rest in [`Sched`] (CPUs, tasks), [`Net`] (hosts,
/// devices, qdiscs, NAPI, links), [`Sockets`], the packet arena, [`Metrics`], the
/// run's random streams ([`Rand`]) and the hot paths' reused buffers ([`Scratch`]).
/// The simulator's functions are methods on `World` because, as the kernel's, most of
/// them touch several subsystems at once (a transmit reads the socket, the qdisc, the
/// device and the CPU); a method that touches one group is that group's.
pub struct World {
    pub now: u64,
    pub cfg: Config,
    pub profile: Profile,
    /// The timers: every pending event (`event.rs`).
    pub events: EventQueue,
    /// `jiffies()`: start of the current tick (ns) and its jiffies value.
    pub(crate) jiffy_cache: std::cell::Cell<(u64, u64)>,
    pub sched: Sched,
    pub net: Net,
    pub socks: Sockets,
    pub pkts: Arena,
    pub metrics: Metrics,
    pub rand: Rand,
    pub scratch: Scratch,
    /// Sends run by `flood_drop_burst()`, and whether it may run: the tests compare
    /// runs without it.
    #[cfg(test)]
    pub burst_sends: u64,
    #[cfg(test)]
    pub drop_bursts: bool,
}

/// The CPUs, the tasks that run on them, and the machine's stalls (`cpu.rs`,
/// `sched.rs`, `stall.rs`).
pub struct Sched {
    pub cpus: Table<CpuId, Cpu>,
    pub tasks: Table<TaskId, Task>,
    /// `ksoftirqd/N` is task `ksoftirqd_base + N`.
    pub ksoftirqd_base: TaskId,
    /// The CPU executing now (what a destructor run from a driver's poll sees as
    /// `smp_processor_id()`).
    pub current_cpu: CpuId,
    /// The machine's stalls (the profile's `[[stalls]]`).
    pub stalls: crate::stall::Stalls,
}

impl Sched {
    /// `ksoftirqd/<cpu>`'s task.
    #[inline]
    pub fn ksoftirqd(&self, cpu: CpuId) -> TaskId {
        TaskId(self.ksoftirqd_base.0 + cpu.0 as u32)
    }
}

/// The network side: the hosts (network namespaces) and their devices, qdiscs, NAPI
/// instances and links, and the transmits put off to a later time.
pub struct Net {
    pub hosts: Table<HostId, Host>,
    pub devs: Table<DevId, NetDev>,
    pub qdiscs: Table<QdiscId, QdiscInst>,
    pub napis: Table<NapiId, Napi>,
    pub links: Table<LinkId, crate::path::Link>,
    /// Some host forwards (`[lan]`): receive paths look the route up.
    pub forwarding: bool,
    /// Some host shapes its ingress through an ifb (`Host::ingress`).
    pub ingress: bool,
    /// Transmits put off to a time inside a step (`dev_queue_xmit_at`); freed slots
    /// are `None` and reused.
    pub deferred: Vec<Option<crate::dev::Deferred>>,
}

impl Net {
    /// The measured window starts: each qdisc and device snapshots its counters.
    fn start_window(&mut self) {
        self.qdiscs.iter_mut().for_each(QdiscInst::start_window);
        self.devs.iter_mut().for_each(NetDev::start_window);
    }

    /// Brings the qdiscs that run their timers lazily (pie, fq_pie) up to `now`, so
    /// their state is what the kernel's would be when a report reads it.
    fn run_qdisc_timers(&mut self, now: u64) {
        for q in &mut self.qdiscs {
            if let Some(a) = q.q.as_mut() {
                darkbuf_model::qdisc::Qdisc::run_timers(a, now);
            }
        }
    }
}

/// The sockets (indexable by [`SockId`] as the table they are), with what belongs to
/// sockets as a whole.
pub struct Sockets {
    pub(crate) all: Table<SockId, Sock>,
    /// Per socket, which of its wire's links its packets take (`[[traffic]]
    /// path_delay`): 0, the shared path, unless its entry adds a delay of its own.
    pub link: Vec<u16>,
    /// The `kind = "web"` entries' connection generators (`sock/tcp/web.rs`).
    pub(crate) web: Vec<crate::sock::tcp::web::WebGen>,
}

impl Sockets {
    pub fn new(all: Table<SockId, Sock>, link: Vec<u16>, web: Vec<crate::sock::tcp::web::WebGen>) -> Sockets {
        Sockets { all, link, web }
    }
}

impl std::ops::Deref for Sockets {
    type Target = Table<SockId, Sock>;
    fn deref(&self) -> &Self::Target {
        &self.all
    }
}

impl std::ops::DerefMut for Sockets {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.all
    }
}

impl<'a> IntoIterator for &'a Sockets {
    type Item = &'a Sock;
    type IntoIter = std::slice::Iter<'a, Sock>;
    fn into_iter(self) -> Self::IntoIter {
        self.all.iter()
    }
}

impl<'a> IntoIterator for &'a mut Sockets {
    type Item = &'a mut Sock;
    type IntoIter = std::slice::IterMut<'a, Sock>;
    fn into_iter(self) -> Self::IntoIter {
        self.all.iter_mut()
    }
}

/// The run's random streams, all seeded from the scenario's seed.
pub struct Rand {
    /// The main stream: cost noise, hashes, the radio's losses.
    pub rng: ChaCha8Rng,
    /// `path.loss`'s stream (`None` on a lossless path).
    pub path: Option<Box<ChaCha8Rng>>,
    /// `cost()`'s noise factor as 1 - noise + u * (2 * noise / 2^32).
    noise_floor: f64,
    noise_per_u32: f64,
}

impl Rand {
    /// `noise`: the profile's relative cost noise (0 = none).
    pub fn new(rng: ChaCha8Rng, path: Option<Box<ChaCha8Rng>>, noise: f64) -> Rand {
        Rand { rng, path, noise_floor: 1.0 - noise, noise_per_u32: 2.0 * noise / 4294967296.0 }
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
}

/// Buffers the hot paths reuse, so a packet's way allocates nothing.
#[derive(Default)]
pub struct Scratch {
    /// The ids of the packets a qdisc drops (the kernel's `to_free` list: pointers,
    /// not copies).
    pub drops: Vec<u32>,
    /// The skb chain one `qdisc_restart()` hands to the driver.
    pub bulk: Vec<darkbuf_model::Skb>,
    /// Software GSO's segments (`validate_xmit_skb_list()`).
    pub gso: Vec<darkbuf_model::Skb>,
    /// What a qdisc asks of the stack (`dev/stack_ops.rs`), and the segments of a GSO
    /// skb netem cuts.
    pub(crate) stack_ops: Vec<darkbuf_model::qdisc::StackOp>,
    pub(crate) gso2: Vec<darkbuf_model::Skb>,
    /// The (distance in sequence space, slot) of transmits a local drop takes back.
    pub(crate) unsend: Vec<(u64, usize)>,
}

impl Scratch {
    /// `bulk`: the longest chain one `qdisc_restart()` hands over.
    pub fn new(bulk: usize) -> Scratch {
        Scratch { drops: Vec::with_capacity(64), bulk: Vec::with_capacity(bulk), gso: Vec::with_capacity(bulk), ..Default::default() }
    }
}

impl World {
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

    /// A step's cost with the profile's seeded noise ([`Rand::cost`]).
    #[inline]
    pub fn cost(&mut self, ns: f64) -> u64 {
        self.rand.cost(ns)
    }

    pub fn finding(&mut self, invariant: &str, detail: String) {
        if self.metrics.findings.len() < 100 {
            self.metrics.findings.push(Finding { time_ns: self.now, invariant: invariant.into(), detail });
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
                Event::Wire(dev) => self.drv_wire_done(dev),
                Event::NicIrqTimer(dev, ch) => self.nic_irq_timer(dev, ch),
                Event::LinkArrival(link) => self.link_arrival(link),
                Event::Deferred(slot) => self.deferred(slot),
                Event::TcpTimer(s, kind) => self.tcp_timer(s, kind),
                Event::Interval => self.tcp_interval(),
                Event::Stall(c) => self.cpu_stall(c),
                Event::RrTimer(s) => self.rr_timer(s),
                Event::WebArrival(g) => self.web_arrival(g),
            }
        }
        self.now = self.cfg.end;
        self.net.run_qdisc_timers(self.now);
    }

    /// Snapshots the counters the measured window is reported against.
    fn warmup_done(&mut self) {
        self.net.run_qdisc_timers(self.now);
        // Each object snapshots its own counters; the time integrals start here too.
        self.net.start_window();
        for s in self.socks.ids() {
            if self.socks[s].start_window() {
                self.tcp_stats_tick(s);
            }
        }
        let (m, now) = (&mut self.metrics, self.now);
        for avg in [&mut m.bql_limit, &mut m.bql_inflight] {
            avg.start_window(now);
        }
        m.bql_inflight_hist.start_window(now);
        for q in &mut m.bql_txq {
            q.limit.start_window(now);
            q.inflight.start_window(now);
            q.inflight_hist.start_window(now);
        }
        for avg in [&mut m.qdisc_backlog, &mut m.ring] {
            avg.start_window(now);
        }
    }

    /// Makes an idle CPU start executing after `delay` ns.
    pub fn cpu_kick(&mut self, cpu: CpuId, delay: u64) {
        let c = &mut self.sched.cpus[cpu];
        if !c.busy {
            c.busy = true;
            // A CPU stalled while idle starts when the stall is over.
            let at = (self.now + delay).max(self.sched.stalls.until[cpu.idx()]);
            self.events.push(at, Event::Cpu(cpu));
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
