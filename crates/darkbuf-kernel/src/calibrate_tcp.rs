//! The calibration's TCP step: a paced flow over the idle veth, several connections one
//! after the other, and their minimum RTTs (`tcpi_min_rtt`, `tcp_min_rtt()`: the least
//! RTT sample of a connection, its handshake's included), next to what the simulator
//! gives the same connections with the profile just fitted. A check, not a fit: the
//! profile's TCP costs stay seed-vm's.
//!
//! Why it matters: `tcp_tso_autosize()` adds `sk_gso_max_size >> (min_rtt_us >>
//! tcp_tso_rtt_log)` to each TSO skb, so a machine's own TCP round trip decides how
//! large its skbs are (64 KB under 512 us, 32 KB under 1 ms). Why it is not fitted: a
//! factor on the three TCP costs fitted to these connections (tried 2026-12-03,
//! docs/validation.md) gave the Debian 6.1 TCG guest factors of 36-171 from one boot to
//! the next, and the suite in the same boot came out worse than with seed-vm's costs.
//! A bulk flow's minimum RTT in that guest (0.55-1.17 ms through htb) is not a paced
//! flow's (0.33-0.47 ms): the bulk flow takes it from an initial-window sample in its
//! first milliseconds, while the guest's first round trips still take 4-14 ms, and never
//! sees an idle path again (traced with bpftrace, docs/validation.md, "Through fq_codel,
//! and where a bulk flow's minimum RTT comes from"). A steady cost fitted to it would fit
//! that transient.

use crate::backend::{self, RunOpts};
use crate::error::{KernelError, Result};
use crate::rules::RuleScope;
use darkbuf_measure::profile::Profile;

/// Simulates a scenario (TOML text, with its `runs`) with a profile and returns the
/// median over its runs of the flow's minimum RTT, us ([`median_us`] of
/// `tcp.flow.0.min_rtt_ms`). The kernel crate has no simulator: the caller (the
/// `darkbuf` binary, on the host or in a guest) provides it.
pub type Predict<'a> = &'a dyn Fn(&Profile, &str) -> std::result::Result<f64, String>;

/// The median of per-run minimum RTTs given in ms, in us (nearest rank, the project's
/// percentile over whole microseconds); `None` for none.
pub fn median_us(min_rtts_ms: &[f64]) -> Option<f64> {
    let mut us: Vec<u64> = min_rtts_ms.iter().filter(|v| v.is_finite() && **v > 0.0).map(|v| (v * 1e3).round() as u64).collect();
    us.sort_unstable();
    darkbuf_measure::percentile(&us, 50.0)
}

/// The flow's rate: far below what the veth carries, so that nothing queues and the
/// samples are the machine's round trip.
const RATE: &str = "5mbit";

/// The step's scenario: one cubic flow at [`RATE`] over a veth with threaded NAPI and a
/// pfifo, `grow_skb` as `grow` (the running kernel's), for `duration`, `runs` times (a
/// connection each).
pub fn scenario_text(duration: &str, runs: u32, backpressure: bool, grow: bool) -> String {
    format!(
        "name = \"calibrate-tcp\"\nduration = \"{duration}\"\nwarmup = \"1s\"\nsample_interval = \"0s\"\nruns = {runs}\n\n\
         [device]\ndriver = \"veth\"\ntx_queues = 1\nnapi = \"threaded\"\nbackpressure = {backpressure}\n\n\
         [qdisc]\nkind = \"pfifo\"\nlimit = 1000\n\n\
         [[traffic]]\nkind = \"tcp\"\ncc = \"cubic\"\nrate = \"{RATE}\"\ngrow_skb = {grow}\n"
    )
}

/// What the step measured: the median minimum RTT (us), each connection's (ms), and the
/// scenario that ran.
pub struct Measured {
    pub median_us: f64,
    pub runs_ms: Vec<f64>,
    pub text: String,
}

/// Runs the step on this kernel: `runs` connections of `duration` each.
pub fn measure(duration: &str, runs: u32, progress: &mut dyn FnMut(&str)) -> Result<Measured> {
    let kv = crate::KernelVersion::running();
    let text = scenario_text(duration, runs, kv >= crate::caps::VETH_BACKPRESSURE_SINCE, crate::tcp::kernel_grow_skb(kv));
    progress(&format!("calibrate: tcp ({runs} cubic connections at {RATE} over the idle veth: their minimum RTTs)"));
    let scn = darkbuf_scenario::load_str("calibrate-tcp.toml", &text, &[]).map_err(|d| KernelError::Internal(format!("calibration scenario: {d}")))?;
    let opts = RunOpts { rule_scope: RuleScope::All, netns_sysctls: Vec::new(), sender_tso: false, probe_trace: false };
    let (r, _notes) = backend::run_scenario(&scn, &opts, |_| {})?;
    let runs_ms: Vec<f64> = r.runs.iter().filter_map(|run| run.metrics.get("tcp.flow.0.min_rtt_ms").copied().flatten()).collect();
    match median_us(&runs_ms) {
        Some(median_us) => Ok(Measured { median_us, runs_ms, text }),
        None => Err(KernelError::Internal("the TCP step measured no minimum RTT".into())),
    }
}

/// The profile header's line for the step: the kernel's median minimum RTT over its
/// connections, and the simulator's with `profile` (`predict`), or why either is missing.
pub fn check(profile: &Profile, measured: Result<Measured>, predict: Option<Predict>, notes: &mut Vec<String>) {
    let Measured { median_us, runs_ms, text } = match measured {
        Ok(m) => m,
        Err(e) => {
            notes.push(format!("tcp step: failed: {}", e.message()));
            return;
        }
    };
    let each: Vec<String> = runs_ms.iter().map(|ms| format!("{:.0}", ms * 1e3)).collect();
    let sim = match predict.map(|p| p(profile, &text)) {
        Some(Ok(us)) => format!("the simulator with this profile {us:.0} us"),
        Some(Err(e)) => format!("the simulator could not run it: {e}"),
        None => "no simulator at hand".into(),
    };
    notes.push(format!(
        "tcp step: {} cubic connections at {RATE} over the idle veth, median minimum RTT {median_us:.0} us (the kernel's {} us); {sim}. \
         TCP's costs are seed-vm's, not fitted to it (docs/validation.md, \"The 6.1 guest's TSO skbs\")",
        runs_ms.len(),
        each.join(", ")
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The note has the kernel's median and each connection, and the simulator's
    /// figure or why it is missing.
    #[test]
    fn the_check_puts_kernel_and_simulator_side_by_side() {
        let profile = Profile::load("seed-vm").unwrap();
        let m = || Ok(Measured { median_us: 441.0, runs_ms: vec![0.228, 0.485, 0.411, 0.508, 0.441], text: String::new() });
        let sim = |p: &Profile, _: &str| Ok(100.0 + p.costs.tcp_xmit_ns / 10.0);
        let mut notes = Vec::new();
        check(&profile, m(), Some(&sim), &mut notes);
        assert!(notes[0].starts_with("tcp step: 5 cubic connections at 5mbit over the idle veth, median minimum RTT 441 us (the kernel's 228, 485, 411, 508, 441 us); the simulator with this profile 160 us."), "{notes:?}");
        let fails = |_: &Profile, _: &str| Err("no".to_string());
        check(&profile, m(), Some(&fails), &mut notes);
        assert!(notes[1].contains("the simulator could not run it: no"), "{notes:?}");
        check(&profile, m(), None, &mut notes);
        assert!(notes[2].contains("no simulator at hand"), "{notes:?}");
        check(&profile, Err(KernelError::Internal("the TCP step measured no minimum RTT".into())), Some(&sim), &mut notes);
        assert_eq!(notes[3], "tcp step: failed: the TCP step measured no minimum RTT");
    }

    /// The median of an odd count is the middle one, of an even count the lower middle
    /// (nearest rank); runs without a figure are left out.
    #[test]
    fn the_median_of_the_connections() {
        assert_eq!(median_us(&[0.465, 0.452, 0.43, 0.515, 0.447]), Some(452.0));
        assert_eq!(median_us(&[0.465, 0.452, 0.43, 0.515, 0.447, 0.411]), Some(447.0));
        assert_eq!(median_us(&[f64::NAN, 0.5]), Some(500.0));
        assert_eq!(median_us(&[]), None);
    }

    /// The step's scenario loads, and carries the running kernel's `grow_skb`.
    #[test]
    fn the_step_scenario_loads() {
        for grow in [false, true] {
            let s = darkbuf_scenario::load_str("t", &scenario_text("2s", 5, false, grow), &[]).unwrap();
            assert_eq!(s.runs, 5);
            match &s.traffic[0] {
                darkbuf_scenario::Traffic::Tcp(f) => assert_eq!((f.grow_skb, f.rate), (grow, darkbuf_model::units::Rate::Bps(5_000_000))),
                t => panic!("{t:?}"),
            }
        }
    }
}
