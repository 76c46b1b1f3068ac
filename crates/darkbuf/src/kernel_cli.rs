//! The kernel backend's commands: `run --backend kernel`, `check`, `calibrate`, `compare`.
//! The work is in the darkbuf-kernel crate; this file maps its errors to exit codes and
//! prints.

use crate::output::{errln, outln};
use crate::run::{self, Failure};
use crate::{Common, Format};
use darkbuf_kernel::KernelError;
use std::path::Path;

fn failure(e: KernelError) -> Failure {
    match e {
        KernelError::Input(m) => Failure::Input(m),
        KernelError::Unavailable(m) => Failure::Backend(m),
        KernelError::Internal(m) => Failure::Internal(m),
        KernelError::Interrupted { signal, message } => Failure::Interrupted { signal, message },
    }
}

/// While the kernel backend holds namespaces and devices, a closed stdout or stderr
/// must not kill the process before it tears them down: SIGPIPE is ignored for the
/// guard's lifetime (a failed write then unwinds through the teardown), and its
/// default action (quiet exit, see `main`) comes back for printing the results.
struct SigpipeIgnored;

impl SigpipeIgnored {
    fn new() -> SigpipeIgnored {
        // SAFETY: signal() with SIG_IGN has no preconditions.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        }
        SigpipeIgnored
    }
}

impl Drop for SigpipeIgnored {
    fn drop(&mut self) {
        // SAFETY: as above, restoring the default action.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
}

fn print_notes(notes: &[String]) {
    for n in notes {
        errln!("darkbuf: kernel: {n}");
    }
}

/// `darkbuf run SCENARIO --backend kernel`.
pub fn run(path: &Path, c: &Common, hist: bool) -> Result<(), Failure> {
    let mut scn = run::load(path, &c.set)?;
    run::apply_common(&mut scn, c)?;
    darkbuf_scenario::limits::check_total([&scn]).map_err(Failure::Input)?;
    run::check_out(c)?;
    let opts = darkbuf_kernel::backend::RunOpts { probe_trace: c.probe_trace, ..darkbuf_kernel::backend::RunOpts::for_scenario(&scn) };
    let pb = run::progress(scn.runs as u64, &scn.name);
    let guard = SigpipeIgnored::new();
    let (mut results, notes) = darkbuf_kernel::backend::run_scenario(&scn, &opts, |_| pb.inc(1)).map_err(failure)?;
    drop(guard);
    pb.finish_and_clear();
    print_notes(&notes);
    results.provenance = Some(run::provenance(path));
    run::warn_findings("", &results);
    run::emit(c, &results, darkbuf_report::run_csv(&results), || {
        let mut s = String::new();
        outln!(
            s,
            "{} ({} run{}, kernel {})",
            scn.name,
            scn.runs,
            if scn.runs == 1 { "" } else { "s" },
            results.environment.kernel
        );
        s.push_str(&darkbuf_report::run_table(&results));
        if hist {
            for r in &results.runs {
                outln!(s, "\nhistograms, seed {}:", r.seed);
                s.push_str(&darkbuf_report::histograms_text(r));
            }
        }
        s + &run::printouts_text(&results, hist)
    })
}

/// Checks every point of a kernel sweep for what the kernel backend refuses as input
/// (exit 2) before the first one runs.
pub fn check_points<'a>(scns: impl IntoIterator<Item = &'a darkbuf_scenario::Scenario>) -> Result<(), Failure> {
    for scn in scns {
        darkbuf_kernel::rules::check_count(scn.consumer.nrules).map_err(failure)?;
    }
    Ok(())
}

/// One sweep point on the kernel backend (`darkbuf sweep --backend kernel`).
pub fn run_point(scn: &darkbuf_scenario::Scenario, probe_trace: bool) -> Result<darkbuf_report::Results, Failure> {
    let opts = darkbuf_kernel::backend::RunOpts { probe_trace, ..darkbuf_kernel::backend::RunOpts::for_scenario(scn) };
    let guard = SigpipeIgnored::new();
    let (results, notes) = darkbuf_kernel::backend::run_scenario(scn, &opts, |_| {}).map_err(failure)?;
    drop(guard);
    print_notes(&notes);
    Ok(results)
}

/// `darkbuf check [--cleanup] [--format table|json]`.
pub fn check(cleanup: bool, format: Format) -> Result<(), Failure> {
    if format == Format::Csv {
        return Err(Failure::Input("check prints a table or JSON (--format table|json)".into()));
    }
    let guard = SigpipeIgnored::new();
    let caps = darkbuf_kernel::caps::check(cleanup).map_err(failure)?;
    drop(guard);
    let text = match format {
        Format::Json => serde_json::to_string_pretty(&caps).map_err(|e| Failure::Internal(e.to_string()))? + "\n",
        _ => darkbuf_kernel::caps::render_table(&caps),
    };
    crate::output::stdout(&text)?;
    if !caps.cleanup_errors.is_empty() {
        return Err(Failure::Internal(format!("could not remove: {}", caps.cleanup_errors.join("; "))));
    }
    Ok(())
}

/// `darkbuf calibrate --out PROFILE.toml [--quick] [--force]`: `--quick` (or
/// `DARKBUF_CALIBRATE_QUICK=1`) shortens the matrix to about 30 s; a busy machine is
/// exit 3 unless `--force`, which writes the profile with a warning.
pub fn calibrate(out: &Path, quick: bool, force: bool) -> Result<(), Failure> {
    darkbuf_kernel::error::require_root().map_err(failure)?;
    let quick = quick || darkbuf_kernel::calibrate::quick_from_env();
    let guard = SigpipeIgnored::new();
    let cal = darkbuf_kernel::calibrate::calibrate(out, quick, force, Some(&simulated_min_rtt_us), |line| errln!("darkbuf: {line}")).map_err(failure)?;
    drop(guard);
    for d in &cal.disturbed {
        errln!("darkbuf: warning: calibrated on a busy machine (--force): step {}: {}", d.step, d.seen);
    }
    if !cal.disturbed.is_empty() {
        errln!("darkbuf: warning: {} was written from disturbed measurements; comparisons made with it describe the load, not this machine", out.display());
    }
    crate::output::stdout(&darkbuf_kernel::calibrate::summary(&cal, out))
}

/// The calibration's TCP step as the simulator sees it ([`darkbuf_kernel::calibrate_tcp`]):
/// scenario `text` simulated with profile `p`, one run per seed of its `runs`, and the
/// median of the runs' minimum RTTs, us. Errors: the text does not load, a run stops,
/// no run has an RTT.
pub fn simulated_min_rtt_us(p: &darkbuf_measure::profile::Profile, text: &str) -> Result<f64, String> {
    let scn = darkbuf_scenario::load_str("calibrate-tcp.toml", text, &[]).map_err(|d| d.to_string())?;
    let mut runs_ms = Vec::new();
    for i in 0..scn.runs.max(1) as u64 {
        let (rec, _) = darkbuf_sim::simulate(&scn, p, scn.seed.wrapping_add(i)).map_err(|e| e.to_string())?;
        runs_ms.extend(rec.metrics.get("tcp.flow.0.min_rtt_ms").copied().flatten());
    }
    darkbuf_kernel::calibrate_tcp::median_us(&runs_ms).ok_or_else(|| "the simulated flow has no minimum RTT".into())
}

/// `darkbuf compare SCENARIO`: the simulator, then the kernel, on the same scenario.
pub fn compare(path: &Path, c: &Common) -> Result<(), Failure> {
    let mut scn = run::load(path, &c.set)?;
    run::apply_common(&mut scn, c)?;
    darkbuf_scenario::limits::check_total([&scn]).map_err(Failure::Input)?;
    run::check_out(c)?;
    let opts = darkbuf_kernel::backend::RunOpts { probe_trace: c.probe_trace, ..darkbuf_kernel::backend::RunOpts::for_scenario(&scn) };
    // The kernel side first: it is the one that can be unavailable (exit 3).
    let guard = SigpipeIgnored::new();
    let kernel = if c.backend == crate::Backend::Vm {
        crate::vm_cli::compare_kernel(path, c, &scn)?
    } else {
        let (kernel, notes) = darkbuf_kernel::backend::run_scenario(&scn, &opts, |_| {}).map_err(failure)?;
        print_notes(&notes);
        kernel
    };
    drop(guard);
    follow_kernel_defaults(&mut scn, &kernel);
    let p = run::profile_of(&scn)?;
    let (runs, signal) = run::simulate_runs(&scn, &p, run::jobs_of(c), &indicatif::ProgressBar::hidden())?;
    if let Some(s) = signal {
        return Err(Failure::interrupted(s, " while simulating; the kernel side had finished"));
    }
    let sim = run::results_of(&scn, &p, runs);
    run::warn_findings(" (sim)", &sim);
    let rows = darkbuf_kernel::compare::rows(&sim, &kernel);
    let cmp = darkbuf_kernel::compare::Comparison { scenario: kernel.scenario.clone(), rows, sim, kernel };
    let csv = compare_csv(&cmp.rows);
    if let Some(dir) = &c.out {
        // emit() creates the directory; the two flent files go beside its results.
        std::fs::create_dir_all(dir).map_err(|e| Failure::Input(format!("cannot create {}: {e}", dir.display())))?;
        run::write_backend_flent(dir, &cmp.sim)?;
        run::write_backend_flent(dir, &cmp.kernel)?;
    }
    run::emit(c, &cmp, csv, || {
        let mut s = String::new();
        outln!(
            s,
            "{}: sim (profile {}) vs kernel {} ({} run{} each)",
            scn.name,
            p.name,
            cmp.kernel.environment.kernel,
            scn.runs,
            if scn.runs == 1 { "" } else { "s" }
        );
        s + &darkbuf_kernel::compare::render_table(&cmp.rows)
    })
}

/// The simulator's side of a comparison runs what the kernel's ran: a key the scenario
/// left at a default of another kernel generation, which the kernel backend ran as its
/// kernel has it (`darkbuf_kernel::topo::kernel_defaults()`), takes the kernel side's
/// value (veth's `device.backpressure` on a kernel before 6.16, TCP's `grow_skb` before
/// 6.10).
fn follow_kernel_defaults(scn: &mut darkbuf_scenario::Scenario, kernel: &darkbuf_report::Results) {
    let ran = kernel.scenario.pointer("/device/backpressure").and_then(serde_json::Value::as_bool);
    if let Some(bp) = ran.filter(|_| !scn.device.backpressure_given) {
        scn.device.backpressure = bp;
    }
    // grow_skb is in the results only when false (tcp_grow_skb()'s absence, before 6.10).
    for (i, t) in scn.traffic.iter_mut().enumerate() {
        if let darkbuf_scenario::Traffic::Tcp(f) = t {
            if !f.grow_skb_given && kernel.scenario.pointer(&format!("/traffic/{i}/kind")).is_some() {
                f.grow_skb = kernel.scenario.pointer(&format!("/traffic/{i}/grow_skb")).and_then(serde_json::Value::as_bool).unwrap_or(true);
            }
        }
    }
}

fn compare_csv(rows: &[darkbuf_kernel::compare::Row]) -> String {
    let f = |v: Option<f64>| v.map_or(String::new(), |x| x.to_string());
    let mut s = String::from("metric,sim,kernel,rel_error,diff_pts\n");
    for r in rows {
        s.push_str(&format!(
            "{},{},{},{},{}\n",
            darkbuf_report::csv_field(&r.metric),
            f(r.sim),
            f(r.kernel),
            f(r.rel_error),
            f(r.diff_pts)
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::follow_kernel_defaults;

    /// `compare`'s simulator side takes what the kernel backend ran for keys the scenario
    /// left unset (backpressure, grow_skb), and keeps the ones it gave.
    #[test]
    fn the_simulator_follows_what_the_kernel_ran() {
        let text = "[device]\ndriver = \"veth\"\n[[traffic]]\nkind = \"tcp\"\n[[traffic]]\nkind = \"tcp\"\ngrow_skb = true\n";
        let mut scn = darkbuf_scenario::load_str("t.toml", text, &[]).unwrap();
        let ran = serde_json::json!({ "device": { "backpressure": false }, "traffic": [ { "kind": "tcp", "grow_skb": false }, { "kind": "tcp", "grow_skb": false } ] });
        let kernel = darkbuf_report::Results::from_runs(ran, "vm", Default::default(), Vec::new(), Default::default());
        follow_kernel_defaults(&mut scn, &kernel);
        let grow: Vec<bool> = scn.traffic.iter().filter_map(|t| if let darkbuf_scenario::Traffic::Tcp(f) = t { Some(f.grow_skb) } else { None }).collect();
        assert_eq!((scn.device.backpressure, grow), (false, vec![false, true]));
        // A 6.10+ kernel's results leave grow_skb out (its default, true).
        let mut scn = darkbuf_scenario::load_str("t.toml", text, &["traffic.0.grow_skb=false".into()]).unwrap();
        let mut plain = darkbuf_scenario::load_str("t.toml", text, &[]).unwrap();
        let ran = serde_json::json!({ "device": { "backpressure": true }, "traffic": [ { "kind": "tcp" }, { "kind": "tcp" } ] });
        let kernel = darkbuf_report::Results::from_runs(ran, "vm", Default::default(), Vec::new(), Default::default());
        follow_kernel_defaults(&mut scn, &kernel);
        follow_kernel_defaults(&mut plain, &kernel);
        let g = |s: &darkbuf_scenario::Scenario| if let darkbuf_scenario::Traffic::Tcp(f) = &s.traffic[0] { f.grow_skb } else { unreachable!() };
        assert_eq!((g(&scn), g(&plain)), (false, true));
    }
}
