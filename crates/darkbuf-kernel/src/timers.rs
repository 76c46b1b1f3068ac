//! Measures a profile's `hrtimer_ns`: how late a kernel hrtimer's handler runs on a CPU
//! that was idle. One thread, pinned to each CPU in turn with timer slack 1 ns
//! (`PR_SET_TIMERSLACK`), sleeps a fixed time in `clock_nanosleep()` again and again;
//! each sleep's overshoot is the hrtimer's interrupt on the idle CPU, its exit from
//! idle, and the sleeper's wakeup there (`hrtimer_wakeup()` -> `try_to_wake_up()`).
//! The calibration takes the median over every CPU's sleeps, less the profile's
//! `wakeup_ns`, which the model charges apart.
//!
//! A host's overshoot is a few microseconds (deeper C-states more); an emulated guest's
//! is hundreds: its vCPU thread sleeps in the host until QEMU's timer wakes it.

use std::time::{Duration, Instant};

/// Overshoots of `sleep`-long sleeps, `per_cpu` on each of `cpus` CPUs, ns, sorted.
/// A CPU the thread cannot be pinned to is measured unpinned (the figure is then the
/// scheduler's choice of CPU, still an idle one on a quiet machine).
pub fn overshoots(cpus: usize, per_cpu: usize, sleep: Duration) -> Vec<u64> {
    let sleep_ns = sleep.as_nanos() as u64;
    let mut all = std::thread::scope(|s| {
        s.spawn(|| {
            crate::load::sys::tight_timer_slack();
            let mut v = Vec::with_capacity(cpus * per_cpu);
            for cpu in 0..cpus.max(1) {
                let _ = crate::load::sys::pin_to_cpu(cpu);
                for _ in 0..per_cpu {
                    let t0 = Instant::now();
                    std::thread::sleep(sleep);
                    v.push((t0.elapsed().as_nanos() as u64).saturating_sub(sleep_ns));
                }
            }
            v
        })
        .join()
        .unwrap_or_default()
    });
    all.sort_unstable();
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sleep never ends early: every overshoot is counted from the requested time,
    /// one per sleep.
    #[test]
    fn overshoots_are_one_per_sleep_and_sorted() {
        let v = overshoots(1, 5, Duration::from_micros(200));
        assert_eq!(v.len(), 5);
        assert!(v.windows(2).all(|w| w[0] <= w[1]), "{v:?}");
    }
}
