//! Measures the machine's stalls for a profile's `[[stalls]]`: one busy thread pinned
//! to each CPU reads the monotonic clock in a loop, and every gap of at least
//! [`MIN_GAP_US`] between two reads is time the CPU was taken from it (a hypervisor's
//! steal, the host's interrupts, other tasks). The gaps are counted in classes of
//! 0.1-0.2-0.5-1-2-5... ms; each class seen becomes one `[[stalls]]` entry: its rate
//! per CPU and the shortest and longest gap seen in it.
//!
//! Gaps shorter than 100 µs are left out: they are mostly the guest kernel's own timer
//! tick and interrupts, which the model books as costs where it models them.
//! All CPUs are measured at once, busy, so a vCPU cannot borrow an idle sibling's
//! time: the figure is what a loaded machine gets.

use darkbuf_measure::profile::Stall;
use std::time::{Duration, Instant};

/// The shortest gap counted as a stall.
pub const MIN_GAP_US: u64 = 100;

/// Class bounds (µs): [100, 200), [200, 500), ... [50 ms, 1 s].
const BOUNDS_US: [u64; 10] = [100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 1_000_000];

/// The classes [`BOUNDS_US`] delimits.
const CLASSES: usize = BOUNDS_US.len() - 1;

/// Per class: gaps seen, the shortest and the longest, and their sum (ns).
#[derive(Clone, Copy, Default)]
struct Class {
    n: u64,
    min_ns: u64,
    max_ns: u64,
    sum_ns: u64,
}

impl Class {
    /// Takes in the gaps `o` counted (one gap is a class of one).
    fn merge(&mut self, o: Class) {
        if o.n == 0 {
            return;
        }
        self.min_ns = if self.n == 0 { o.min_ns } else { self.min_ns.min(o.min_ns) };
        self.max_ns = self.max_ns.max(o.max_ns);
        self.sum_ns += o.sum_ns;
        self.n += o.n;
    }
}

fn class_of(gap_ns: u64) -> Option<usize> {
    let us = gap_ns / 1000;
    if us < MIN_GAP_US {
        return None;
    }
    Some(BOUNDS_US.windows(2).position(|w| us < w[1]).unwrap_or(CLASSES - 1))
}

/// Spins on `cpu` for `run`, recording the gaps; returns them and the time it spun (at
/// least `run`: a gap that ends after `run` is counted whole).
fn spin(cpu: usize, run: Duration) -> ([Class; CLASSES], Duration) {
    // Pinning may fail (a restricted cpuset): the thread then measures wherever it runs.
    let _ = crate::topo::pin(0, cpu);
    let mut classes = [Class::default(); CLASSES];
    let start = Instant::now();
    let mut prev = start;
    loop {
        let now = Instant::now();
        let gap = now.duration_since(prev).as_nanos() as u64;
        prev = now;
        if let Some(i) = class_of(gap) {
            classes[i].merge(Class { n: 1, min_ns: gap, max_ns: gap, sum_ns: gap });
        }
        let spun = now.duration_since(start);
        if spun >= run {
            return (classes, spun);
        }
    }
}

/// What [`measure`] saw.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// The classes seen, as `[[stalls]]` entries (rates per second per CPU, averaged
    /// over the CPUs).
    pub stalls: Vec<Stall>,
    /// The share of the CPUs' time the gaps took (%, over all CPUs): what the machine
    /// took from a busy loop. A quiet machine loses little (the 2-vCPU development VM's
    /// stalls in docs/examples/seed-vm-stalls.toml add up to 1.5 %); another process
    /// spinning takes its share of a CPU.
    pub stolen_pct: f64,
}

/// Measures `cpus` CPUs for `run` each, all at once.
pub fn measure(cpus: usize, run: Duration) -> Measured {
    let threads: Vec<_> = (0..cpus).map(|cpu| std::thread::spawn(move || spin(cpu, run))).collect();
    let mut total = [Class::default(); CLASSES];
    // Rates and the stolen share are over the time actually spun: on a loaded machine
    // the last gap may end well after `run` (a 200 ms preemption in a 50 ms
    // measurement), and over `run` alone the share would pass 100%.
    let mut spun = 0.0;
    for t in threads {
        let Ok((per_cpu, took)) = t.join() else { continue };
        spun += took.as_secs_f64();
        for (sum, c) in total.iter_mut().zip(per_cpu) {
            sum.merge(c);
        }
    }
    let secs = if spun > 0.0 { spun } else { run.as_secs_f64() * cpus.max(1) as f64 };
    let stolen_ns: u64 = total.iter().map(|c| c.sum_ns).sum();
    let stalls = total
        .iter()
        .filter(|c| c.n > 0)
        .map(|c| Stall {
            per_s: (c.n as f64 / secs * 1000.0).round() / 1000.0,
            min_us: ((c.min_ns as f64 / 100.0).round() / 10.0).min(1e6),
            max_us: ((c.max_ns as f64 / 100.0).round() / 10.0).min(1e6),
        })
        .collect();
    Measured { stalls, stolen_pct: 100.0 * stolen_ns as f64 / 1e9 / secs }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_fall_in_their_classes() {
        assert_eq!(class_of(99_999), None);
        assert_eq!(class_of(100_000), Some(0));
        assert_eq!(class_of(199_999), Some(0));
        assert_eq!(class_of(200_000), Some(1));
        assert_eq!(class_of(4_999_999), Some(4));
        assert_eq!(class_of(5_000_000), Some(5));
        // Beyond the last bound: the last class.
        assert_eq!(class_of(3_000_000_000), Some(8));
    }

    #[test]
    fn a_short_measurement_gives_valid_entries() {
        let m = measure(1, Duration::from_millis(50));
        assert!((0.0..=100.0).contains(&m.stolen_pct), "{m:?}");
        for s in m.stalls {
            assert!(s.per_s > 0.0 && s.min_us >= MIN_GAP_US as f64 && s.min_us <= s.max_us, "{s:?}");
        }
    }
}
