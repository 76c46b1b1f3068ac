//! The calibration's TCP step: a paced flow over the idle veth, several connections one
//! after the other, whose minimum RTTs (`tcpi_min_rtt`, `tcp_min_rtt()`: the least RTT
//! sample of a connection, its handshake's included) the TCP costs are fitted to
//! through the simulator. The median over the connections: one connection's minimum is
//! an extreme of its samples, and moves by +-10% from one to the next in a TCG guest
//! (0.41-0.52 ms over six), where the fit's factor moves by 2-4x.
//!
//! Why: `tcp_tso_autosize()` adds `sk_gso_max_size >> (min_rtt_us >> tcp_tso_rtt_log)`
//! to each TSO skb, so a machine's own TCP round trip decides how large its skbs are
//! (64 KB under 512 us, 32 KB under 1 ms, ...). A TCG guest's is 0.55-0.7 ms, seed-vm's
//! TCP costs give the simulator 0.04-0.3 ms: its skbs were twice the guest's.
//!
//! Fitted: `tcp_xmit_ns`, `tcp_ack_ns` and `tcp_rcv_ns`, the per-skb and per-ACK costs on
//! a segment's round trip, as seed-vm's three times one factor. The factor is found by
//! bisection (on its logarithm) so that the simulator, with every other cost the
//! calibration fitted, gives the flow the kernel's minimum RTT. One figure fits one
//! factor: the split between the three stays seed-vm's, and is named as assumed.

use crate::backend::{self, RunOpts};
use crate::error::{KernelError, Result};
use crate::rules::RuleScope;
use darkbuf_measure::profile::{Costs, Profile};

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
/// The factor's bounds: seed-vm's costs / 16 to x 4096 (a TCG guest needs about 150).
const FACTOR_MIN: f64 = 1.0 / 16.0;
const FACTOR_MAX: f64 = 4096.0;
/// Bisection steps on log2 of the factor: 16 halvings of 16 leave 1/4096 of a
/// doubling, under 0.02% of the factor.
const STEPS: u32 = 16;

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

/// `c` with its three TCP costs at `factor` times `base`'s.
fn scaled(c: &Costs, base: &Costs, factor: f64) -> Costs {
    Costs { tcp_xmit_ns: base.tcp_xmit_ns * factor, tcp_ack_ns: base.tcp_ack_ns * factor, tcp_rcv_ns: base.tcp_rcv_ns * factor, ..c.clone() }
}

/// The factor on `base`'s TCP costs at which `predict` gives `measured_us` for `text`,
/// with `profile`'s other costs. `Ok(None)` when even [`FACTOR_MIN`] predicts more than
/// was measured (the machine is faster than the model can be made: nothing to fit);
/// at [`FACTOR_MAX`] when that still predicts less. The prediction is assumed to grow
/// with the factor (each cost is on the round trip).
pub fn fit_factor(profile: &Profile, base: &Costs, measured_us: f64, text: &str, predict: Predict) -> std::result::Result<Option<f64>, String> {
    let at = |f: f64| -> std::result::Result<f64, String> {
        let p = Profile { costs: scaled(&profile.costs, base, f), ..profile.clone() };
        predict(&p, text)
    };
    if at(FACTOR_MIN)? > measured_us {
        return Ok(None);
    }
    if at(FACTOR_MAX)? < measured_us {
        return Ok(Some(FACTOR_MAX));
    }
    let (mut lo, mut hi) = (FACTOR_MIN.log2(), FACTOR_MAX.log2());
    for _ in 0..STEPS {
        let mid = 0.5 * (lo + hi);
        if at(mid.exp2())? < measured_us {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(Some((0.5 * (lo + hi)).exp2()))
}

/// Fits the TCP costs of `c` (the calibration's costs so far; `base` is seed-vm's) to
/// the step's `measured_us`, or says in `notes` why they stay assumed.
pub fn fit(c: &mut Costs, profile: &Profile, base: &Costs, measured: Option<Measured>, predict: Option<Predict>, fitted: &mut Vec<String>, notes: &mut Vec<String>) {
    let Some(Measured { median_us: measured_us, runs_ms, text }) = measured else {
        notes.push("tcp_xmit_ns, tcp_ack_ns, tcp_rcv_ns kept assumed: the TCP step measured no minimum RTT".into());
        return;
    };
    let Some(predict) = predict else {
        notes.push(format!("tcp_xmit_ns, tcp_ack_ns, tcp_rcv_ns kept assumed: the TCP step's minimum RTT is {measured_us:.0} us, and no simulator was at hand to fit it"));
        return;
    };
    let p = Profile { costs: c.clone(), ..profile.clone() };
    match fit_factor(&p, base, measured_us, &text, predict) {
        Ok(Some(f)) => {
            let s = scaled(c, base, f);
            let simulated = predict(&Profile { costs: s.clone(), ..profile.clone() }, &text).unwrap_or(f64::NAN);
            c.tcp_xmit_ns = (s.tcp_xmit_ns * 100.0).round() / 100.0;
            c.tcp_ack_ns = (s.tcp_ack_ns * 100.0).round() / 100.0;
            c.tcp_rcv_ns = (s.tcp_rcv_ns * 100.0).round() / 100.0;
            fitted.extend(["tcp_xmit_ns", "tcp_ack_ns", "tcp_rcv_ns"].map(String::from));
            let each: Vec<String> = runs_ms.iter().map(|ms| format!("{:.0}", ms * 1e3)).collect();
            notes.push(format!(
                "tcp_xmit_ns, tcp_ack_ns, tcp_rcv_ns: seed-vm's x {f:.2}, so that the simulator gives the TCP step's flow (cubic at {RATE} over the idle veth) the kernel's minimum RTT, {measured_us:.0} us (simulated: {simulated:.0} us; medians over {} connections, the kernel's {} us); their split is seed-vm's (assumed){}",
                runs_ms.len(),
                each.join(", "),
                if f >= FACTOR_MAX { " (the factor's upper bound: the simulated RTT is still short)" } else { "" }
            ));
        }
        Ok(None) => notes.push(format!(
            "tcp_xmit_ns, tcp_ack_ns, tcp_rcv_ns kept assumed: the TCP step's minimum RTT, {measured_us:.0} us, is below what the simulator gives with seed-vm's TCP costs / 16"
        )),
        Err(e) => notes.push(format!("tcp_xmit_ns, tcp_ack_ns, tcp_rcv_ns kept assumed: the simulator could not run the TCP step: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A predictor linear in the TCP costs, as a round trip of one skb, one ACK built and
    /// one ACK taken is: 100 us + xmit + rcv + 2 x ack. seed-vm's 600 + 600 + 800 = 2 us per
    /// factor, so 0.7 ms is the factor 300.
    #[test]
    fn the_factor_is_where_the_prediction_meets_the_measurement() {
        let profile = Profile::load("seed-vm").unwrap();
        let base = profile.costs.clone();
        let lin = |p: &Profile, _: &str| Ok(100.0 + (p.costs.tcp_xmit_ns + p.costs.tcp_rcv_ns + 2.0 * p.costs.tcp_ack_ns) / 1e3);
        let f = fit_factor(&profile, &base, 700.0, "", &lin).unwrap().unwrap();
        assert!((f / 300.0 - 1.0).abs() < 1e-3, "{f}");
        // Faster than the model at / 16: nothing to fit.
        assert_eq!(fit_factor(&profile, &base, 100.0, "", &lin).unwrap(), None);
        // Slower than it at x 4096: the bound.
        assert_eq!(fit_factor(&profile, &base, 1e7, "", &lin).unwrap(), Some(FACTOR_MAX));
        let fails = |_: &Profile, _: &str| Err("no".to_string());
        assert_eq!(fit_factor(&profile, &base, 700.0, "", &fails), Err("no".into()));
    }

    /// fit() writes the three costs in seed-vm's ratio and names them fitted; without a
    /// simulator or a measurement they stay, with the reason.
    #[test]
    fn fit_scales_the_three_costs_or_says_why_not() {
        let profile = Profile::load("seed-vm").unwrap();
        let base = profile.costs.clone();
        let lin = |p: &Profile, _: &str| Ok(100.0 + (p.costs.tcp_xmit_ns + p.costs.tcp_rcv_ns + 2.0 * p.costs.tcp_ack_ns) / 1e3);
        let (mut c, mut fitted, mut notes) = (base.clone(), Vec::new(), Vec::new());
        let m = || Some(Measured { median_us: 700.0, runs_ms: vec![0.72, 0.7, 0.64], text: String::new() });
        fit(&mut c, &profile, &base, m(), Some(&lin), &mut fitted, &mut notes);
        assert_eq!(fitted, ["tcp_xmit_ns", "tcp_ack_ns", "tcp_rcv_ns"]);
        assert!((c.tcp_xmit_ns / 180_000.0 - 1.0).abs() < 1e-3 && (c.tcp_ack_ns / 120_000.0 - 1.0).abs() < 1e-3, "{c:?}");
        assert!(notes[0].contains("minimum RTT, 700 us (simulated: 700 us; medians over 3 connections, the kernel's 720, 700, 640 us)"), "{notes:?}");
        let (mut c, mut fitted, mut notes) = (base.clone(), Vec::new(), Vec::new());
        fit(&mut c, &profile, &base, m(), None, &mut fitted, &mut notes);
        assert!(fitted.is_empty() && c == base && notes[0].contains("no simulator"), "{notes:?}");
        fit(&mut c, &profile, &base, None, Some(&lin), &mut fitted, &mut notes);
        assert!(fitted.is_empty() && notes[1].contains("measured no minimum RTT"), "{notes:?}");
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
