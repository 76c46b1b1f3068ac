//! `darkbuf validate`: the differential suite. Every case of `validation/suite.toml`
//! on the simulator and on a kernel booted in a VM (one boot for all), and one table
//! per metric: sim, kernel, the simulator's error, the tolerance, and the verdict.

use crate::run::{self, Failure};
use crate::output::errln;
use crate::{Format, VmArgs};
use darkbuf_vm::suite::{self, Case, Verdict};
use std::path::{Path, PathBuf};

/// `darkbuf validate`'s flags.
#[derive(clap::Args, Clone, Debug)]
pub struct ValidateArgs {
    /// The suite file.
    #[arg(long, value_name = "FILE", default_value = "validation/suite.toml")]
    pub suite_file: PathBuf,
    /// full: every case; ci: the cases marked `ci = true`.
    #[arg(long, value_enum, default_value_t = SuiteKind::Full)]
    pub suite: SuiteKind,
    /// Only the cases whose name contains this (repeatable).
    #[arg(long, value_name = "TEXT")]
    pub only: Vec<String>,
    /// Runs per case on each side (seeds 1..=N on the simulator); a case that asks for
    /// more (`runs` in the suite) gets its own.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=suite::MAX_RUNS as i64))]
    pub runs: u32,
    /// Exit 1 when a judged metric is outside its tolerance.
    #[arg(long)]
    pub strict: bool,
    /// table (the markdown page), json, or csv (a line per case and metric) on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Also write validation.md (the tables, with the commit and the kernel),
    /// validation.json and validation.csv here.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The simulator's machine profile for every case (`machine.profile`), e.g. the
    /// guest's own from `darkbuf calibrate --backend vm --out FILE`; the kernel side
    /// is unchanged. Default: each case's scenario's.
    #[arg(long, value_name = "FILE.toml")]
    pub profile: Option<PathBuf>,
    #[command(flatten)]
    pub vm: VmArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SuiteKind {
    Full,
    Ci,
}

/// One case, resolved.
struct Planned<'a> {
    case: &'a Case,
    file: PathBuf,
    text: String,
    overrides: Vec<String>,
    scn: darkbuf_scenario::Scenario,
}

fn plan<'a>(args: &ValidateArgs, suite: &'a suite::Suite, dir: &Path, backpressure: bool) -> Result<Vec<Planned<'a>>, Failure> {
    let mut out = Vec::new();
    for case in &suite.cases {
        if args.suite == SuiteKind::Ci && !case.ci {
            continue;
        }
        if !args.only.is_empty() && !args.only.iter().any(|o| case.name.contains(o.as_str())) {
            continue;
        }
        let file = dir.join(&case.scenario);
        let (name, text) = darkbuf_scenario::read_scenario(&file).map_err(|d| Failure::Input(format!("case {}: {d}", case.name)))?;
        let mut overrides = case.set.clone();
        let probe = darkbuf_scenario::load_str(&name, &text, &overrides).map_err(|d| Failure::Input(format!("case {}: {d}", case.name)))?;
        // veth's ring backpressure is the guest kernel's (6.16+), not a choice.
        if probe.device.driver() == darkbuf_scenario::Driver::Veth {
            overrides.push(format!("device.backpressure={backpressure}"));
        }
        overrides.push(format!("runs={}", case.runs(args.runs)));
        // The simulator's side alone gets --profile: the kernel is the machine itself.
        let mut sim_overrides = overrides.clone();
        if let Some(p) = &args.profile {
            let abs = std::path::absolute(p).unwrap_or_else(|_| p.clone());
            sim_overrides.push(format!("machine.profile={:?}", abs.display().to_string()));
        }
        let scn = darkbuf_scenario::load_str(&name, &text, &sim_overrides).map_err(|d| Failure::Input(format!("case {}: {d}", case.name)))?;
        out.push(Planned { case, file, text, overrides, scn });
    }
    if out.is_empty() {
        return Err(Failure::Input(format!("no case of {} matches (--suite, --only)", args.suite_file.display())));
    }
    Ok(out)
}

/// `darkbuf validate`.
pub fn validate(args: &ValidateArgs) -> Result<(), Failure> {
    let text = std::fs::read_to_string(&args.suite_file).map_err(|e| {
        Failure::Input(format!("{}: {e} (run from the darkbuf repository, or pass --suite-file)", args.suite_file.display()))
    })?;
    let suite = suite::parse(&args.suite_file.display().to_string(), &text).map_err(Failure::Input)?;
    let dir = args.suite_file.parent().unwrap_or(Path::new("."));
    // The guest's release decides veth backpressure; the VM reports the same image.
    let image = darkbuf_vm::image::select(args.vm.kernel.as_deref(), Path::new("/boot")).ok();
    let release = image.as_ref().map(|i| i.release.clone()).unwrap_or_default();
    let kv = darkbuf_kernel::KernelVersion::parse(&release).unwrap_or_default();
    // Bad input (a case, a scenario, an override) is exit 2 before anything else.
    let planned = plan(args, &suite, dir, kv >= darkbuf_kernel::caps::VETH_BACKPRESSURE_SINCE)?;
    if args.profile.is_some() {
        run::profile_of(&planned[0].scn)?;
    }
    // The tools before the simulator's minutes: a machine without them is told at once.
    darkbuf_vm::tools::find(&std::env::var("PATH").unwrap_or_default()).map_err(crate::vm_cli::failure)?;
    if let Some(d) = &args.out {
        std::fs::create_dir_all(d).map_err(|e| Failure::Input(format!("--out {}: {e}", d.display())))?;
    }
    errln!("darkbuf: validate: {} case(s), simulator first", planned.len());
    let mut sims = Vec::new();
    let mut profile_line = String::from("each case's scenario's (`machine.profile`)");
    for p in &planned {
        let prof = run::profile_of(&p.scn)?;
        if args.profile.is_some() {
            profile_line = format!("{} ({})", prof.name, prof.description);
        }
        let (runs, signal) = run::simulate_runs(&p.scn, &prof, rayon::current_num_threads(), &indicatif::ProgressBar::hidden())?;
        if let Some(s) = signal {
            return Err(Failure::interrupted(s, " while simulating"));
        }
        sims.push(run::results_of(&p.scn, &prof, runs));
    }
    let jobs = planned
        .iter()
        .map(|p| {
            let name = p.file.display().to_string();
            (darkbuf_vm::job(&name, &p.text, p.overrides.clone(), &p.case.name, None, None, false), (p.scn.warmup_ns, p.scn.duration_ns, p.scn.runs))
        })
        .collect();
    let mut verdicts: Vec<Verdict> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    // The host's other work while each case ran in the guest (% of one CPU).
    let mut host_load: Vec<(String, Option<f64>)> = Vec::new();
    let opts = crate::vm_cli::opts(&args.vm);
    let booted = darkbuf_vm::run(&opts, jobs, darkbuf_vm::Steps { calibrate: true, ..Default::default() }, |l| errln!("darkbuf: vm: {l}"), |i, out, env| {
        let p = &planned[i];
        errln!("darkbuf: vm: case {} ({} of {}) done in {:.1} s", p.case.name, i + 1, planned.len(), out.wall_s);
        if let Some(h) = env.host_other_cpu_pct.filter(|h| *h > darkbuf_vm::HOST_BUSY_PCT) {
            errln!("darkbuf: vm: warning: case {}: other processes on the host used {h:.0}% of a CPU while it ran (vm.host_other_cpu_pct)", p.case.name);
        }
        host_load.push((p.case.name.clone(), env.host_other_cpu_pct));
        match crate::vm_cli::outcome_results(out, env) {
            Ok(k) => verdicts.extend(suite::judge(p.case, &sims[i], &darkbuf_vm::annotate(k, env))),
            Err(Failure::Interrupted { signal, message }) => return Err(darkbuf_kernel::KernelError::Interrupted { signal, message }),
            Err(f) => failures.push(format!("{}: {f}", p.case.name)),
        }
        Ok(())
    });
    let booted = booted.map_err(crate::vm_cli::failure)?;
    let md = markdown(&booted.env, &verdicts, &failures, &host_load, args, &profile_line);
    let text = match args.format {
        Format::Json => {
            let v = serde_json::json!({ "vm": booted.env, "sim_profile": profile_line, "verdicts": verdicts, "failures": failures, "host_other_cpu_pct": host_load });
            serde_json::to_string_pretty(&v).map_err(|e| Failure::Internal(e.to_string()))? + "\n"
        }
        Format::Csv => suite::verdicts_csv(&verdicts),
        Format::Table => md.clone(),
    };
    if let Some(d) = &args.out {
        let json = serde_json::json!({ "vm": booted.env, "sim_profile": profile_line, "verdicts": verdicts, "failures": failures, "host_other_cpu_pct": host_load });
        let files = [
            ("validation.md", md.clone()),
            ("validation.json", serde_json::to_string_pretty(&json).unwrap_or_default() + "\n"),
            ("validation.csv", suite::verdicts_csv(&verdicts)),
        ];
        for (f, body) in files {
            std::fs::write(d.join(f), body).map_err(|e| Failure::Internal(format!("{}: {e}", d.join(f).display())))?;
        }
    }
    crate::output::stdout(&text)?;
    if !failures.is_empty() {
        return Err(Failure::Backend(format!("{} case(s) did not run in the VM: {}", failures.len(), failures.join("; "))));
    }
    if args.strict && verdicts.iter().any(|v| v.within == Some(false)) {
        return Err(Failure::Internal("--strict: some metrics are outside their tolerance (above)".into()));
    }
    Ok(())
}

/// The page: what ran where, the summary, and the tables.
fn markdown(
    env: &darkbuf_report::VmEnvironment,
    verdicts: &[Verdict],
    failures: &[String],
    host_load: &[(String, Option<f64>)],
    args: &ValidateArgs,
    profile_line: &str,
) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "darkbuf {} ({}); kernel {} ({}), {} under {}, {} vCPUs, {} MiB; booted and calibrated in {:.0} s\n",
        env!("CARGO_PKG_VERSION"),
        env!("DARKBUF_COMMIT"),
        env.kernel,
        env.image,
        env.tools,
        env.accel,
        env.cpus,
        env.memory_mib,
        env.boot_s
    ));
    if let Some(c) = &env.calibration {
        s.push_str(&format!("{}\n", darkbuf_vm::calibration_line(c)));
    }
    s.push_str(&format!(
        "command: darkbuf validate --suite {} --runs {}{}{}\n",
        if args.suite == SuiteKind::Ci { "ci" } else { "full" },
        args.runs,
        args.only.iter().map(|o| format!(" --only {o}")).collect::<String>(),
        args.profile.as_ref().map(|p| format!(" --profile {}", p.display())).unwrap_or_default()
    ));
    s.push_str(&format!("the simulator's machine profile: {}\n\n", profile_line));
    s.push_str(&suite::summary(verdicts));
    s.push_str("\n\n");
    s.push_str(&host_load_line(host_load));
    for f in failures {
        s.push_str(&format!("did not run: {f}\n"));
    }
    s.push_str(&suite::tables(verdicts));
    s
}

/// One line on the host's other work while the cases ran: a TCG guest's timers, and what
/// they pace, move with it (docs/vm.md, `vm.host_other_cpu_pct`).
fn host_load_line(host_load: &[(String, Option<f64>)]) -> String {
    let read: Vec<f64> = host_load.iter().filter_map(|(_, h)| *h).collect();
    if read.is_empty() {
        return String::new();
    }
    let busy: Vec<String> = (host_load.iter())
        .filter_map(|(c, h)| h.filter(|h| *h > darkbuf_vm::HOST_BUSY_PCT).map(|h| format!("{c} {h:.0}%")))
        .collect();
    let max = read.iter().copied().fold(0.0, f64::max);
    if busy.is_empty() {
        format!("the host's other processes while the cases ran: at most {max:.0}% of a CPU\n\n")
    } else {
        format!("the host's other processes used more than {:.0}% of a CPU while these cases ran (their kernel side is suspect): {}\n\n", darkbuf_vm::HOST_BUSY_PCT, busy.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::host_load_line;

    /// The page's line on the host: the largest figure when no case passed 10% of a
    /// CPU, else each case that did; nothing when the host was never read.
    #[test]
    fn host_load_line_names_the_busy_cases() {
        let quiet = [("a".to_string(), Some(2.0)), ("b".to_string(), Some(7.4))];
        assert_eq!(host_load_line(&quiet), "the host's other processes while the cases ran: at most 7% of a CPU\n\n");
        let busy = [("a".to_string(), Some(2.0)), ("b".to_string(), Some(36.0)), ("c".to_string(), None)];
        let l = host_load_line(&busy);
        assert!(l.contains("more than 10% of a CPU") && l.ends_with(": b 36%\n\n"), "{l}");
        assert_eq!(host_load_line(&[("a".to_string(), None)]), "");
    }
}
