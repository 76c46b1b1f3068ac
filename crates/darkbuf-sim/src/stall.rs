//! Stalls: the machine takes a CPU away from the kernel for a while.
//!
//! On a VM the hypervisor deschedules a vCPU (steal time); on any machine the host's
//! interrupts and other work preempt what runs. Nothing in the kernel decides when:
//! it is the machine's, so it comes from the profile (`[[stalls]]`, measured by
//! `darkbuf calibrate` as gaps in a pinned busy loop). None by default, and then no
//! event and no random draw: results are what they were without the feature.
//!
//! A stall delays everything on its CPU, task or softirq alike: a step in progress
//! ends `d` later, and an idle CPU takes up new work only when the stall is over. It
//! costs no CPU time (`busy_ns` does not count it), as steal is not the guest's.
//!
//! Why it matters: a flow's state can be metastable under the model's exact timing.
//! One cubic flow into htb at 100 Mbit sits on a half-cwnd plateau until a few
//! milliseconds of delay let it be cwnd-limited once (docs/tcp-small-fifo.md).
//!
//! Stalls draw from their own seeded stream (not `Rand::rng`), one Poisson process
//! per CPU: with or without stalls, every cost draw of the model is the same draw.

use crate::id::CpuId;
use crate::event::Event;
use darkbuf_measure::profile::Stall;
use crate::world::World;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The stall processes of a run: the profile's classes, their total rate, their
/// stream, and until when each CPU stays stalled once it went idle during a stall.
pub struct Stalls {
    classes: Vec<Stall>,
    per_s: f64,
    rng: ChaCha8Rng,
    pub(crate) until: Vec<u64>,
    /// The total length of the stalls that began in the measured window (ns).
    pub(crate) total_ns: u64,
}

impl Stalls {
    pub fn new(classes: &[Stall], seed: u64, ncpu: usize) -> Stalls {
        use rand::SeedableRng;
        let classes: Vec<Stall> = classes.iter().filter(|c| c.per_s > 0.0).cloned().collect();
        let per_s = classes.iter().map(|c| c.per_s).sum();
        // A stream of its own, apart from the seed's cost stream.
        let rng = ChaCha8Rng::seed_from_u64(seed ^ 0x7374_616c_6c73_0000);
        Stalls { classes, per_s, rng, until: vec![0; ncpu], total_ns: 0 }
    }

    pub fn enabled(&self) -> bool {
        self.per_s > 0.0
    }

    /// The gap to a CPU's next stall: exponential at the classes' total rate.
    fn next_gap(&mut self) -> u64 {
        let u: f64 = self.rng.gen::<f64>();
        (-(1.0 - u).ln() / self.per_s * 1e9) as u64
    }

    /// A stall's length: its class by rate, then log-uniform within the class.
    fn length(&mut self) -> u64 {
        let mut x = self.rng.gen::<f64>() * self.per_s;
        let last = self.classes.len() - 1;
        let class = self.classes.iter().position(|c| {
            x -= c.per_s;
            x < 0.0
        });
        let c = &self.classes[class.unwrap_or(last)];
        let u: f64 = self.rng.gen();
        (c.min_us * (c.max_us / c.min_us).powf(u) * 1e3) as u64
    }
}

impl World {
    /// Time 0: each CPU's first stall.
    pub(crate) fn stalls_start(&mut self) {
        if !self.sched.stalls.enabled() {
            return;
        }
        for c in 0..self.sched.cpus.len() {
            let at = self.sched.stalls.next_gap();
            self.events.push(at, Event::Stall(CpuId::from_index(c)));
        }
    }

    /// A stall of `cpu` begins now: its pending step, if any, moves later by the
    /// stall's length; an idle CPU takes up work after it (`cpu_kick()`). The next
    /// stall is queued.
    pub(crate) fn cpu_stall(&mut self, cpu: CpuId) {
        let d = self.sched.stalls.length();
        if !self.events.postpone_cpu(cpu, d) {
            self.sched.stalls.until[cpu.idx()] = self.now + d;
        }
        if self.measuring() {
            self.sched.stalls.total_ns += d;
        }
        // A rare class may put the next one past any run's end.
        let at = self.now.saturating_add(self.sched.stalls.next_gap());
        self.events.push(at, Event::Stall(cpu));
    }
}
