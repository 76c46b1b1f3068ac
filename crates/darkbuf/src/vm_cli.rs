//! `--backend vm` for `run`, `sweep`, `compare` and `check`: the kernel backend in a
//! kernel booted under QEMU (crates/darkbuf-vm). One boot serves every point and run of
//! the command. This file builds the jobs, maps errors to exit codes and prints.

use crate::run::{self, Failure};
use crate::output::errln;
use crate::{Common, Format, VmArgs};
use darkbuf_kernel::KernelError;
use darkbuf_report::Results;
use darkbuf_vm::protocol::JobOutcome;
use std::path::Path;

pub(crate) fn failure(e: KernelError) -> Failure {
    match e {
        KernelError::Input(m) => Failure::Input(m),
        KernelError::Unavailable(m) => Failure::Backend(m),
        KernelError::Internal(m) => Failure::Internal(m),
        KernelError::Interrupted { signal, message } => Failure::Interrupted { signal, message },
    }
}

/// `--vm-memory SIZE` in MiB ("2G", "2048M", "4GiB"; bare numbers are MiB, as QEMU's -m).
pub fn parse_memory_mib(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let mib = if t.chars().all(|c| c.is_ascii_digit()) && !t.is_empty() {
        t.parse::<u64>().map_err(|e| e.to_string())?
    } else {
        let norm = match t.chars().last() {
            Some('G' | 'g' | 'M' | 'm' | 'K' | 'k') => format!("{t}iB"),
            _ => t.to_string(),
        };
        darkbuf_model::units::parse_size_bytes(&norm).map_err(|e| format!("{e}"))? / (1024 * 1024)
    };
    if !(256..=1024 * 1024).contains(&mib) {
        return Err(format!("{mib} MiB: the VM needs 256 MiB to 1 TiB"));
    }
    Ok(mib)
}

pub(crate) fn opts(v: &VmArgs) -> darkbuf_vm::VmOpts {
    darkbuf_vm::VmOpts {
        kernel: v.kernel.clone(),
        modules: v.kernel_modules.clone(),
        accel: v.vm_accel.into(),
        cpus: v.vm_cpus,
        memory_mib: v.vm_memory,
    }
}

fn say(line: &str) {
    errln!("darkbuf: vm: {line}");
}

/// A job's results, or its failure as the CLI's.
pub(crate) fn outcome_results(out: JobOutcome, env: &darkbuf_report::VmEnvironment) -> Result<Results, Failure> {
    for n in &out.notes {
        errln!("darkbuf: vm: kernel: {n}");
    }
    if let Some(e) = out.error {
        return Err(guest_failure(e.code, format!("in the VM ({}): {}", env.kernel, e.message)));
    }
    let v = out.results.ok_or_else(|| Failure::Internal("the guest returned no results".into()))?;
    serde_json::from_value::<Results>(v).map_err(|e| Failure::Internal(format!("the guest's results: {e}")))
}

/// A step's failure in the guest (its exit code class) as the CLI's.
fn guest_failure(code: u8, message: String) -> Failure {
    match code {
        2 => Failure::Input(message),
        3 => Failure::Backend(message),
        c if c > 128 => Failure::Interrupted { signal: (c - 128) as i32, message },
        _ => Failure::Internal(message),
    }
}

/// The scenario file's name and text, as the guest resolves them.
fn text_of(path: &Path) -> Result<(String, String), Failure> {
    darkbuf_scenario::read_scenario(path).map_err(|d| Failure::Input(d.to_string()))
}

/// Runs `points` (scenario text + overrides + label, with the resolved scenario for
/// its time limit) in one boot; returns each point's results in order, stopping at the
/// first failure or signal (`Err` then carries what finished).
pub fn run_points(
    vm: &VmArgs,
    c: &Common,
    name: &str,
    text: &str,
    points: &[(Vec<String>, String, &darkbuf_scenario::Scenario)],
) -> Result<(Vec<Results>, darkbuf_report::VmEnvironment, Option<Failure>), Failure> {
    let jobs = points
        .iter()
        .map(|(over, label, scn)| {
            (darkbuf_vm::job(name, text, over.clone(), label, c.runs, c.seed, c.probe_trace), (scn.warmup_ns, scn.duration_ns, scn.runs))
        })
        .collect();
    let mut results = Vec::new();
    let mut stop = None;
    let mut env_seen = None;
    let booted = darkbuf_vm::run(&opts(vm), jobs, darkbuf_vm::Steps { calibrate: true, ..Default::default() }, say, |_, out, env| {
        if env_seen.is_none() {
            say(&format!("booted {} ({}) in {:.1} s", env.kernel, env.accel, env.boot_s));
            env_seen = Some(env.clone());
        }
        say(&format!("point {} of {} done in {:.1} s (guest wall time)", results.len() + 1, points.len(), out.wall_s));
        if stop.is_none() {
            match outcome_results(out, env) {
                Ok(r) => results.push(darkbuf_vm::annotate(r, env)),
                Err(f) => stop = Some(f),
            }
        }
        Ok(())
    });
    match (booted, env_seen) {
        (Ok(b), _) => Ok((results, b.env, stop)),
        // A failure (a signal, a guest that stopped answering) after some points: keep them.
        (Err(e), Some(env)) if !results.is_empty() => Ok((results, env, Some(failure(e)))),
        (Err(e), _) => Err(failure(e)),
    }
}

/// `darkbuf run SCENARIO --backend vm`.
pub fn run(path: &Path, c: &Common, hist: bool) -> Result<(), Failure> {
    let mut scn = run::load(path, &c.set)?;
    run::apply_common(&mut scn, c)?;
    darkbuf_scenario::limits::check_total([&scn]).map_err(Failure::Input)?;
    run::check_out(c)?;
    let (name, text) = text_of(path)?;
    let (mut results, _env, stop) = run_points(&c.vm, c, &name, &text, &[(c.set.clone(), String::new(), &scn)])?;
    if let Some(f) = stop {
        return Err(f);
    }
    let mut results = results.pop().ok_or_else(|| Failure::Internal("the guest returned no results".into()))?;
    results.provenance = Some(run::provenance(path));
    run::warn_findings("", &results);
    run::emit(c, &results, darkbuf_report::run_csv(&results), || {
        let vm = results.environment.vm.as_ref();
        let mut s = format!(
            "{} ({} run{}, kernel {} in a VM, {})\n",
            scn.name,
            scn.runs,
            if scn.runs == 1 { "" } else { "s" },
            results.environment.kernel,
            vm.map_or("", |v| v.accel.as_str())
        );
        s.push_str(&darkbuf_report::run_table(&results));
        if hist {
            for r in &results.runs {
                s.push_str(&format!("\nhistograms, seed {}:\n", r.seed));
                s.push_str(&darkbuf_report::histograms_text(r));
            }
        }
        s + &run::printouts_text(&results, hist)
    })
}

/// `darkbuf check --backend vm`: the guest kernel's capabilities.
pub fn check(vm: &VmArgs, format: Format) -> Result<(), Failure> {
    if format == Format::Csv {
        return Err(Failure::Input("check prints a table or JSON (--format table|json)".into()));
    }
    let booted = darkbuf_vm::run(&opts(vm), Vec::new(), darkbuf_vm::Steps { check: true, ..Default::default() }, say, |_, _, _| Ok(())).map_err(failure)?;
    let check = booted.check.unwrap_or_default();
    if let Some(e) = check.get("error") {
        return Err(Failure::Backend(format!("darkbuf check in the VM: {}", e.get("message").and_then(|m| m.as_str()).unwrap_or("failed"))));
    }
    let env = &booted.env;
    let text = match format {
        Format::Json => {
            let mut caps = check.get("capabilities").cloned().unwrap_or_default();
            if let Some(o) = caps.as_object_mut() {
                o.insert("vm".into(), serde_json::to_value(env).unwrap_or_default());
                o.insert("vm_modules_missing".into(), serde_json::to_value(&booted.boot.modules_missing).unwrap_or_default());
            }
            serde_json::to_string_pretty(&caps).map_err(|e| Failure::Internal(e.to_string()))? + "\n"
        }
        _ => format!(
            "VM: kernel {} ({}), {} vCPUs, {} MiB, {} booted in {:.1} s\n{}{}",
            env.kernel,
            env.image,
            env.cpus,
            env.memory_mib,
            env.accel,
            env.boot_s,
            check.get("table").and_then(|t| t.as_str()).unwrap_or(""),
            if booted.boot.modules_missing.is_empty() {
                String::new()
            } else {
                format!("\nmodules the guest could not load: {}\n", booted.boot.modules_missing.join("; "))
            }
        ),
    };
    crate::output::stdout(&text)
}

/// `darkbuf calibrate --backend vm --out FILE`: `darkbuf calibrate` inside the guest,
/// the profile written to FILE here. The guest's own stalls are its machine's (kept
/// in the profile); what disturbs it is other processes, in the guest or on this host
/// (above [`darkbuf_vm::HOST_BUSY_PCT`] of a CPU): exit 3 without `--force`.
pub fn calibrate(out: &Path, vm: &VmArgs, quick: bool, force: bool) -> Result<(), Failure> {
    // The --out path first: a bad one is exit 2 before a boot of minutes.
    std::fs::OpenOptions::new().create(true).append(true).open(out).map_err(|e| Failure::Input(format!("--out {}: {e}", out.display())))?;
    let quick = quick || darkbuf_kernel::calibrate::quick_from_env();
    let steps = darkbuf_vm::Steps { profile: Some(darkbuf_vm::ProfileAsk { quick, force }), ..Default::default() };
    let booted = darkbuf_vm::run(&opts(vm), Vec::new(), steps, say, |_, _, _| Ok(()));
    let booted = booted.map_err(|e| {
        let _ = remove_if_empty(out);
        failure(e)
    })?;
    let g = guest_profile(booted.profile, &booted.env, force).inspect_err(|_| {
        let _ = remove_if_empty(out);
    })?;
    std::fs::write(out, &g.toml).map_err(|e| Failure::Input(format!("cannot write {}: {e}", out.display())))?;
    let (p, host_busy) = (g.outcome, g.host_busy);
    for d in &p.disturbed {
        errln!("darkbuf: warning: calibrated on a busy guest (--force): step {d}");
    }
    if let Some(h) = host_busy {
        errln!("darkbuf: warning: other processes on this host used {h:.0}% of a CPU while the guest calibrated (--force)");
    }
    let env = &booted.env;
    // The guest's summary names its scratch copy on its first line: name ours instead.
    let rest = p.summary.split_once('\n').map_or("", |(_, r)| r);
    let summary = format!(
        "wrote {} (kernel {}, {} vCPUs under {}; the guest calibrated in {:.0} s){}\n{rest}",
        out.display(),
        env.kernel,
        env.cpus,
        env.accel,
        p.wall_s,
        if p.disturbed.is_empty() && host_busy.is_none() { "" } else { " (DISTURBED: measured on a busy machine, --force)" }
    );
    crate::output::stdout(&summary)
}

/// A machine profile fitted in the guest (`darkbuf calibrate` inside it): its TOML, with
/// a warning line on top when the host was busy, and what the guest reported.
pub struct GuestProfile {
    pub toml: String,
    /// The host's other processes' load while the guest calibrated, % of one CPU, when
    /// it was above [`darkbuf_vm::HOST_BUSY_PCT`].
    pub host_busy: Option<f64>,
    pub outcome: darkbuf_vm::ProfileOutcome,
}

/// The profile the boot's `profile` step fitted. Errors: none reported (internal), the
/// guest's calibration failed (its exit code's failure), the host was busy while it
/// ran and `force` is false (exit 3: the costs would be the load's).
pub fn guest_profile(
    reported: Option<(darkbuf_vm::ProfileOutcome, Option<f64>)>,
    env: &darkbuf_report::VmEnvironment,
    force: bool,
) -> Result<GuestProfile, Failure> {
    let Some((p, host_other)) = reported else {
        return Err(Failure::Internal("the VM did not report a profile".into()));
    };
    if let Some(e) = &p.error {
        return Err(guest_failure(e.code, format!("darkbuf calibrate in the VM (kernel {}): {}", env.kernel, e.message)));
    }
    let host_busy = host_other.filter(|h| *h > darkbuf_vm::HOST_BUSY_PCT);
    if let (Some(h), false) = (host_busy, force) {
        return Err(Failure::Backend(format!(
            "other processes on this host used {h:.0}% of a CPU while the guest calibrated (bound {:.0}%): the guest's costs would be the load's. Stop the load and calibrate again, or pass --force",
            darkbuf_vm::HOST_BUSY_PCT
        )));
    }
    let mut toml = p.toml.clone().unwrap_or_default();
    if let Some(h) = host_busy {
        toml = format!("# WARNING: other processes on the host used {h:.0}% of a CPU while the guest calibrated.\n{toml}");
    }
    Ok(GuestProfile { toml, host_busy, outcome: p })
}

/// Removes `path` if it is an empty file (what the --out check created).
fn remove_if_empty(path: &Path) -> std::io::Result<()> {
    if std::fs::metadata(path)?.len() == 0 {
        std::fs::remove_file(path)?;
    }
    Ok(())
}

/// Results of a sweep's points in one boot, as `run.rs`'s sweep takes them: each
/// point's results, or the signal that stopped the boot.
pub fn sweep_points(
    path: &Path,
    c: &Common,
    points: &[(darkbuf_scenario::SweepPointSpec, darkbuf_scenario::Scenario)],
    fixed: &[String],
) -> Result<(Vec<Results>, Option<Failure>), Failure> {
    let (name, text) = text_of(path)?;
    let jobs: Vec<(Vec<String>, String, &darkbuf_scenario::Scenario)> =
        points.iter().map(|(spec, scn)| (darkbuf_scenario::point_overrides(fixed, spec), spec.label.clone(), scn)).collect();
    let (results, _env, stop) = run_points(&c.vm, c, &name, &text, &jobs)?;
    Ok((results, stop))
}

/// The kernel side of `compare --backend vm`.
pub fn compare_kernel(path: &Path, c: &Common, scn: &darkbuf_scenario::Scenario) -> Result<Results, Failure> {
    let (name, text) = text_of(path)?;
    let (mut results, _env, stop) = run_points(&c.vm, c, &name, &text, &[(c.set.clone(), String::new(), scn)])?;
    if let Some(f) = stop {
        return Err(f);
    }
    results.pop().ok_or_else(|| Failure::Internal("the guest returned no results".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sizes() {
        assert_eq!(parse_memory_mib("2G"), Ok(2048));
        assert_eq!(parse_memory_mib("2048"), Ok(2048));
        assert_eq!(parse_memory_mib("1536M"), Ok(1536));
        assert_eq!(parse_memory_mib("4GiB"), Ok(4096));
        assert!(parse_memory_mib("100M").is_err());
        assert!(parse_memory_mib("lots").is_err());
    }
}
