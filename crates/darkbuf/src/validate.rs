//! `darkbuf validate`: the differential suite. Every case of `validation/suite.toml`
//! on the simulator and on a kernel booted in a VM (one boot for all), and one table
//! per metric: sim, kernel, the simulator's error, the tolerance, and the verdict.

use crate::run::{self, Failure};
use crate::output::errln;
use crate::{Format, VmArgs};
use darkbuf_report::Results;
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
    /// The simulator's machine profile for every case (`machine.profile`): a profile
    /// file (e.g. from `darkbuf calibrate --backend vm --out FILE`), or `guest`, which
    /// fits the guest's own in the same boot before the cases (`darkbuf calibrate` in
    /// it, about 2 min under TCG; kept as guest-profile.toml with --out; `./guest`
    /// names a file). The kernel side is unchanged. Default: each case's scenario's.
    #[arg(long, value_name = "FILE.toml|guest")]
    pub profile: Option<PathBuf>,
    /// Judge the simulator again against the kernel side of an earlier run (the
    /// validation.json its --out wrote), without a VM: the suite's cases that run has,
    /// each with its number of runs; the tolerances are the suite's now. With
    /// `--profile guest`, the guest-profile.toml beside that file.
    #[arg(long, value_name = "validation.json")]
    pub rejudge: Option<PathBuf>,
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

/// `--profile guest`: the guest's own profile, fitted in the same boot.
pub const GUEST_PROFILE: &str = "guest";

/// The cases to run, each resolved twice: the kernel's overrides, and the simulator's
/// scenario with `sim_profile` as its `machine.profile` when given. Both follow guest
/// kernel `kv` where the model has its versions ([`kernel_version_overrides`]).
fn plan<'a>(
    args: &ValidateArgs,
    suite: &'a suite::Suite,
    dir: &Path,
    kv: darkbuf_kernel::KernelVersion,
    sim_profile: Option<&Path>,
    runs: &dyn Fn(&Case) -> Option<u32>,
) -> Result<Vec<Planned<'a>>, Failure> {
    let mut out = Vec::new();
    for case in &suite.cases {
        if args.suite == SuiteKind::Ci && !case.ci {
            continue;
        }
        if !args.only.is_empty() && !args.only.iter().any(|o| case.name.contains(o.as_str())) {
            continue;
        }
        let Some(case_runs) = runs(case) else { continue };
        let file = dir.join(&case.scenario);
        let (name, text) = darkbuf_scenario::read_scenario(&file).map_err(|d| Failure::Input(format!("case {}: {d}", case.name)))?;
        let mut overrides = case.set.clone();
        let probe = darkbuf_scenario::load_str(&name, &text, &overrides).map_err(|d| Failure::Input(format!("case {}: {d}", case.name)))?;
        overrides.extend(kernel_version_overrides(&probe, kv));
        overrides.push(format!("runs={case_runs}"));
        // The simulator's side alone gets --profile: the kernel is the machine itself.
        let mut sim_overrides = overrides.clone();
        if let Some(p) = sim_profile {
            let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
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

/// What guest kernel `kv` decides and the model has as a choice, as `--set`s for a case
/// whose scenario (with the case's own `--set`s) resolved to `probe`:
/// - veth's ring backpressure (6.16+, `VETH_BACKPRESSURE_SINCE`), whatever the case says;
/// - each TCP entry's `grow_skb` that neither the scenario nor the case gives
///   (`tcp_grow_skb()`, 6.10+): a 6.1 guest sends the rest of a 64 KB skb cut to the
///   TSO goal as an skb of its own.
fn kernel_version_overrides(probe: &darkbuf_scenario::Scenario, kv: darkbuf_kernel::KernelVersion) -> Vec<String> {
    let mut out = Vec::new();
    if probe.device.driver() == darkbuf_scenario::Driver::Veth {
        out.push(format!("device.backpressure={}", kv >= darkbuf_kernel::caps::VETH_BACKPRESSURE_SINCE));
    }
    let grow = darkbuf_kernel::tcp::kernel_grow_skb(kv);
    for (i, t) in probe.traffic.iter().enumerate() {
        if matches!(t, darkbuf_scenario::Traffic::Tcp(f) if !f.grow_skb_given) {
            out.push(format!("traffic.{i}.grow_skb={grow}"));
        }
    }
    out
}

/// `darkbuf validate`.
pub fn validate(args: &ValidateArgs) -> Result<(), Failure> {
    let text = std::fs::read_to_string(&args.suite_file).map_err(|e| {
        Failure::Input(format!("{}: {e} (run from the darkbuf repository, or pass --suite-file)", args.suite_file.display()))
    })?;
    let suite = suite::parse(&args.suite_file.display().to_string(), &text).map_err(Failure::Input)?;
    let dir = args.suite_file.parent().unwrap_or(Path::new("."));
    if let Some(saved) = &args.rejudge {
        return rejudge(args, &suite, dir, saved);
    }
    // The guest's release decides what follows the kernel version; the VM reports the same image.
    let image = darkbuf_vm::image::select(args.vm.kernel.as_deref(), Path::new("/boot")).ok();
    let release = image.as_ref().map(|i| i.release.clone()).unwrap_or_default();
    let kv = darkbuf_kernel::KernelVersion::parse(&release).unwrap_or_default();
    // Bad input (a case, a scenario, an override) is exit 2 before anything else.
    let guest = args.profile.as_deref() == Some(Path::new(GUEST_PROFILE));
    let file_profile = args.profile.as_deref().filter(|_| !guest);
    let all_cases = |c: &Case| Some(c.runs(args.runs));
    let planned = plan(args, &suite, dir, kv, file_profile, &all_cases)?;
    if file_profile.is_some() {
        run::profile_of(&planned[0].scn)?;
    }
    // The tools before the simulator's minutes: a machine without them is told at once.
    darkbuf_vm::tools::find(&std::env::var("PATH").unwrap_or_default()).map_err(crate::vm_cli::failure)?;
    if let Some(d) = &args.out {
        std::fs::create_dir_all(d).map_err(|e| Failure::Input(format!("--out {}: {e}", d.display())))?;
    }
    // The simulator first when its profile is known, so its errors come before a boot.
    let mut sims = Vec::new();
    let mut profile_line = String::from("each case's scenario's (`machine.profile`)");
    if guest {
        errln!("darkbuf: validate: {} case(s), the guest's profile and the kernel first", planned.len());
    } else {
        errln!("darkbuf: validate: {} case(s), simulator first", planned.len());
        (sims, profile_line) = simulate(&planned, file_profile.is_some(), profile_line)?;
    }
    let jobs = planned
        .iter()
        .map(|p| {
            let name = p.file.display().to_string();
            (darkbuf_vm::job(&name, &p.text, p.overrides.clone(), &p.case.name, None, None, false), (p.scn.warmup_ns, p.scn.duration_ns, p.scn.runs))
        })
        .collect();
    // Each case's kernel results, judged once the simulator's side is known too.
    let mut kernel: Vec<Option<Results>> = vec![None; planned.len()];
    let mut failures: Vec<String> = Vec::new();
    // The host's other work while each case ran in the guest (% of one CPU).
    let mut host_load: Vec<(String, Option<f64>)> = Vec::new();
    let opts = crate::vm_cli::opts(&args.vm);
    // The guest's own profile is fitted even on a busy guest (`force`): the page says so.
    let steps = darkbuf_vm::Steps { calibrate: true, profile: guest.then_some(darkbuf_vm::ProfileAsk { quick: false, force: true }), ..Default::default() };
    let booted = darkbuf_vm::run(&opts, jobs, steps, |l| errln!("darkbuf: vm: {l}"), |i, out, env| {
        let p = &planned[i];
        errln!("darkbuf: vm: case {} ({} of {}) done in {:.1} s", p.case.name, i + 1, planned.len(), out.wall_s);
        if let Some(h) = env.host_other_cpu_pct.filter(|h| *h > darkbuf_vm::HOST_BUSY_PCT) {
            errln!("darkbuf: vm: warning: case {}: other processes on the host used {h:.0}% of a CPU while it ran (vm.host_other_cpu_pct)", p.case.name);
        }
        host_load.push((p.case.name.clone(), env.host_other_cpu_pct));
        match crate::vm_cli::outcome_results(out, env) {
            Ok(k) => kernel[i] = Some(darkbuf_vm::annotate(k, env)),
            Err(Failure::Interrupted { signal, message }) => return Err(darkbuf_kernel::KernelError::Interrupted { signal, message }),
            Err(f) => failures.push(format!("{}: {f}", p.case.name)),
        }
        Ok(())
    });
    let mut booted = booted.map_err(crate::vm_cli::failure)?;
    // Kept until the page is written: it names the file.
    let _profile_file;
    if guest {
        match crate::vm_cli::guest_profile(booted.profile.take(), &booted.env, true) {
            Ok(g) => {
                let (s, line, file) = simulate_on_guest_profile(args, &suite, dir, kv, g)?;
                (sims, profile_line, _profile_file) = (s, line, file);
            }
            Err(f @ Failure::Interrupted { .. }) => return Err(f),
            // The kernel side took minutes: judge it with each case's own profile rather
            // than lose it, and say why on the page.
            Err(f) => {
                errln!("darkbuf: warning: the guest's profile could not be fitted ({f}); the simulator runs each case's scenario's profile");
                (sims, profile_line) = simulate(&planned, false, format!("each case's scenario's (`machine.profile`): the guest's own could not be fitted ({f})"))?;
            }
        }
    }
    let verdicts: Vec<Verdict> =
        (kernel.iter().enumerate()).filter_map(|(i, k)| k.as_ref().map(|k| suite::judge(planned[i].case, &sims[i], k))).flatten().collect();
    finish(args, &booted.env, &verdicts, &failures, &host_load, &profile_line)
}

/// The page, the JSON or the CSV on stdout, the three files in --out, and the exit:
/// Backend when cases did not run in the VM, Internal with --strict when a judged
/// metric is outside its tolerance.
fn finish(
    args: &ValidateArgs,
    env: &darkbuf_report::VmEnvironment,
    verdicts: &[Verdict],
    failures: &[String],
    host_load: &[(String, Option<f64>)],
    profile_line: &str,
) -> Result<(), Failure> {
    let md = markdown(env, verdicts, failures, host_load, args, profile_line);
    let text = match args.format {
        Format::Json => {
            let v = serde_json::json!({ "vm": env, "sim_profile": profile_line, "verdicts": verdicts, "failures": failures, "host_other_cpu_pct": host_load });
            serde_json::to_string_pretty(&v).map_err(|e| Failure::Internal(e.to_string()))? + "\n"
        }
        Format::Csv => suite::verdicts_csv(verdicts),
        Format::Table => md.clone(),
    };
    if let Some(d) = &args.out {
        let json = serde_json::json!({ "vm": env, "sim_profile": profile_line, "verdicts": verdicts, "failures": failures, "host_other_cpu_pct": host_load });
        let files = [
            ("validation.md", md.clone()),
            ("validation.json", serde_json::to_string_pretty(&json).unwrap_or_default() + "\n"),
            ("validation.csv", suite::verdicts_csv(verdicts)),
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

/// What `--rejudge` reads of an earlier run's validation.json.
#[derive(serde::Deserialize)]
struct Saved {
    vm: darkbuf_report::VmEnvironment,
    verdicts: Vec<SavedVerdict>,
    #[serde(default)]
    failures: Vec<String>,
    #[serde(default)]
    host_other_cpu_pct: Vec<(String, Option<f64>)>,
}

#[derive(serde::Deserialize)]
struct SavedVerdict {
    case: String,
    metric: String,
    kernel: Option<f64>,
    note: Option<String>,
    runs: usize,
}

/// `--rejudge FILE`: every case FILE has (and --only picks) on the simulator again, each
/// with the saved run's number of runs, judged by the suite's tolerances against the
/// kernel side FILE holds. No VM; the page is the one a run writes, with the saved boot.
fn rejudge(args: &ValidateArgs, suite: &suite::Suite, dir: &Path, saved_path: &Path) -> Result<(), Failure> {
    let at = saved_path.display();
    let text = std::fs::read_to_string(saved_path).map_err(|e| Failure::Input(format!("--rejudge {at}: {e}")))?;
    let saved: Saved = serde_json::from_str(&text).map_err(|e| {
        Failure::Input(format!("--rejudge {at}:{}:{}: {e} (expected the validation.json of `darkbuf validate --out DIR`)", e.line(), e.column()))
    })?;
    let kv = darkbuf_kernel::KernelVersion::parse(&saved.vm.kernel).unwrap_or_default();
    // The saved run's runs per case (its simulator ran as many seeds); a case it lacks is left out.
    let runs_of = |c: &Case| saved.verdicts.iter().filter(|v| v.case == c.name).map(|v| v.runs.max(1) as u32).max();
    let guest = args.profile.as_deref() == Some(Path::new(GUEST_PROFILE));
    let beside = saved_path.parent().unwrap_or(Path::new(".")).join("guest-profile.toml");
    if guest && !beside.exists() {
        return Err(Failure::Input(format!(
            "--profile guest --rejudge {at}: no {} beside it (the saved run did not fit the guest's profile, or ran without --out)",
            beside.display()
        )));
    }
    let sim_profile = if guest { Some(beside.as_path()) } else { args.profile.as_deref() };
    let planned = plan(args, suite, dir, kv, sim_profile, &runs_of)?;
    if sim_profile.is_some() {
        run::profile_of(&planned[0].scn)?;
    }
    if let Some(d) = &args.out {
        std::fs::create_dir_all(d).map_err(|e| Failure::Input(format!("--out {}: {e}", d.display())))?;
    }
    errln!("darkbuf: validate: {} case(s) on the simulator, judged against the kernel side of {at}", planned.len());
    let (sims, line) = simulate(&planned, sim_profile.is_some(), String::from("each case's scenario's (`machine.profile`)"))?;
    let profile_line = if guest { format!("the guest's own, fitted in the saved run's boot ({}): {line}", beside.display()) } else { line };
    let kernel_side = |case: &str, m: &str| match saved.verdicts.iter().find(|v| v.case == case && v.metric == m) {
        Some(v) => suite::KernelSide { value: v.kernel, missing: v.note.clone().filter(|n| n.starts_with("kernel:")), runs: v.runs },
        None => suite::KernelSide { value: None, missing: Some("kernel: not in the saved run (--rejudge)".into()), runs: 0 },
    };
    let verdicts: Vec<Verdict> =
        planned.iter().zip(&sims).flat_map(|(p, sim)| suite::judge_with(p.case, sim, |m| kernel_side(&p.case.name, m))).collect();
    let ran = |c: &str| planned.iter().any(|p| p.case.name == c);
    let host_load: Vec<(String, Option<f64>)> = saved.host_other_cpu_pct.iter().filter(|(c, _)| ran(c)).cloned().collect();
    let failures: Vec<String> =
        saved.failures.iter().filter(|f| f.split_once(": ").is_some_and(|(c, _)| ran(c))).map(|f| format!("{f} (in the saved run)")).collect();
    finish(args, &saved.vm, &verdicts, &failures, &host_load, &profile_line)
}

/// Every case on the simulator, and the profile line for the page: `line` unless
/// `named` (one profile for every case), then that profile's name and description.
fn simulate(planned: &[Planned], named: bool, mut line: String) -> Result<(Vec<Results>, String), Failure> {
    let mut sims = Vec::new();
    for p in planned {
        let prof = run::profile_of(&p.scn)?;
        if named {
            line = format!("{} ({})", prof.name, prof.description);
        }
        let (runs, signal) = run::simulate_runs(&p.scn, &prof, rayon::current_num_threads(), &indicatif::ProgressBar::hidden())?;
        if let Some(s) = signal {
            return Err(Failure::interrupted(s, " while simulating"));
        }
        sims.push(run::results_of(&p.scn, &prof, runs));
    }
    Ok((sims, line))
}

/// `--profile guest`, once the boot is over: the guest's profile written out, every
/// case on the simulator with it, and the page's profile line.
fn simulate_on_guest_profile(
    args: &ValidateArgs,
    suite: &suite::Suite,
    dir: &Path,
    kv: darkbuf_kernel::KernelVersion,
    g: crate::vm_cli::GuestProfile,
) -> Result<(Vec<Results>, String, GuestProfileFile), Failure> {
    let file = GuestProfileFile::write(args.out.as_deref(), &g.toml)?;
    let planned = plan(args, suite, dir, kv, Some(&file.path), &|c: &Case| Some(c.runs(args.runs)))?;
    let (sims, named) = simulate(&planned, true, String::new())?;
    for d in &g.outcome.disturbed {
        errln!("darkbuf: warning: the guest's profile was fitted on a busy guest: step {d}");
    }
    if let Some(h) = g.host_busy {
        errln!("darkbuf: warning: other processes on this host used {h:.0}% of a CPU while the guest calibrated");
    }
    let disturbed = !g.outcome.disturbed.is_empty() || g.host_busy.is_some();
    let line = format!(
        "the guest's own, fitted in this boot (`darkbuf calibrate` in the guest, {:.0} s{}{}): {named}",
        g.outcome.wall_s,
        if disturbed { ", DISTURBED: measured on a busy machine" } else { "" },
        if file.keep { format!("; {}", file.path.display()) } else { String::new() }
    );
    Ok((sims, line, file))
}

/// The guest's profile as a file the simulator's scenarios name: `guest-profile.toml`
/// in `--out`, kept; otherwise a file in the temporary directory, removed on drop.
struct GuestProfileFile {
    path: PathBuf,
    keep: bool,
}

impl GuestProfileFile {
    fn write(out: Option<&Path>, toml: &str) -> Result<Self, Failure> {
        let (path, keep) = match out {
            Some(d) => (d.join("guest-profile.toml"), true),
            None => (std::env::temp_dir().join(format!("darkbuf-guest-profile-{}.toml", std::process::id())), false),
        };
        std::fs::write(&path, toml).map_err(|e| Failure::Internal(format!("cannot write {}: {e}", path.display())))?;
        Ok(GuestProfileFile { path, keep })
    }
}

impl Drop for GuestProfileFile {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
    }
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
    if let Some(r) = &args.rejudge {
        s.push_str(&format!("rejudged: the simulator now ({}), against the kernel side saved in {}\n", env!("DARKBUF_COMMIT"), r.display()));
    }
    s.push_str(&format!("the simulator's machine profile: {}\n", profile_line));
    s.push_str(&format!("{}\n\n", follows_line(&env.kernel)));
    s.push_str(&suite::summary(verdicts));
    s.push_str("\n\n");
    s.push_str(&host_load_line(host_load));
    for f in failures {
        s.push_str(&format!("did not run: {f}\n"));
    }
    s.push_str(&suite::tables(verdicts));
    s
}

/// What the simulator takes from the guest kernel's version (`kernel_version_overrides`).
fn follows_line(release: &str) -> String {
    let kv = darkbuf_kernel::KernelVersion::parse(release).unwrap_or_default();
    format!(
        "the simulator follows kernel {kv}: veth backpressure = {} (6.16+), TCP grow_skb = {} (tcp_grow_skb(), 6.10+)",
        kv >= darkbuf_kernel::caps::VETH_BACKPRESSURE_SINCE,
        darkbuf_kernel::tcp::kernel_grow_skb(kv)
    )
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
    use super::{host_load_line, kernel_version_overrides, GuestProfileFile};
    use darkbuf_kernel::KernelVersion;

    const TWO_TCP: &str = "name = \"t\"\n[device]\ndriver = \"veth\"\n[[traffic]]\nkind = \"tcp\"\n[[traffic]]\nkind = \"ping\"\n[[traffic]]\nkind = \"tcp\"\n";

    /// A 6.1 guest: no ring stop, no tcp_grow_skb() on either TCP entry (the ping has
    /// none); 6.18 has both; a key the case sets, or the scenario file itself, stays.
    #[test]
    fn the_kernel_version_decides_backpressure_and_grow_skb() {
        let s = darkbuf_scenario::load_str("t", TWO_TCP, &[]).unwrap();
        assert_eq!(kernel_version_overrides(&s, KernelVersion(6, 1, 0)), ["device.backpressure=false", "traffic.0.grow_skb=false", "traffic.2.grow_skb=false"]);
        assert_eq!(kernel_version_overrides(&s, KernelVersion(6, 18, 0)), ["device.backpressure=true", "traffic.0.grow_skb=true", "traffic.2.grow_skb=true"]);
        let set = darkbuf_scenario::load_str("t", TWO_TCP, &["traffic.2.grow_skb = true".to_string()]).unwrap();
        assert_eq!(kernel_version_overrides(&set, KernelVersion(6, 9, 0)), ["device.backpressure=false", "traffic.0.grow_skb=false"]);
        let in_file = darkbuf_scenario::load_str("t", &format!("{TWO_TCP}grow_skb = true\n"), &[]).unwrap();
        assert_eq!(kernel_version_overrides(&in_file, KernelVersion(6, 1, 0)), ["device.backpressure=false", "traffic.0.grow_skb=false"]);
    }

    /// The guest's profile is kept in --out and removed from the temporary directory
    /// once the simulator is done with it.
    #[test]
    fn the_guest_profile_file_is_kept_only_in_out() {
        let d = std::env::temp_dir().join(format!("darkbuf-validate-gp-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let kept = GuestProfileFile::write(Some(&d), "name = \"g\"\n").unwrap();
        let path = kept.path.clone();
        assert_eq!(path, d.join("guest-profile.toml"));
        drop(kept);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "name = \"g\"\n");
        let temp = GuestProfileFile::write(None, "name = \"g\"\n").unwrap();
        let path = temp.path.clone();
        assert!(path.starts_with(std::env::temp_dir()) && path.exists());
        drop(temp);
        assert!(!path.exists(), "{} left behind", path.display());
        std::fs::remove_dir_all(&d).unwrap();
    }

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
