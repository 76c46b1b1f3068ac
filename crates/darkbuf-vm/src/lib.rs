//! The VM backend (`--backend vm`): the kernel backend, unchanged, inside a kernel
//! booted under QEMU by virtme-ng: a stock distro kernel with every qdisc, or a user's
//! patched kernel.
//!
//! One boot serves every point and run of one command: the host writes a plan (the
//! scenarios as text with their overrides), boots, and the guest agent
//! ([`guest`], `darkbuf vm-guest`) runs them one after the other, writing each result
//! into the scratch directory as soon as it has it ([`protocol`]). The host adds what it
//! knows of the VM ([`annotate`]): `backend = "vm"`, `environment.vm`, `vm.cpu_bound`
//! and `vm.rate_accuracy`, and warnings for points a slow guest may have limited.
//!
//! - [`tools`]: vng, QEMU and busybox on PATH, or exit 3 with the install line;
//! - [`image`]: which kernel (`--kernel`, or the newest under /boot);
//! - [`launch`]: the QEMU process, its time limits, Ctrl-C, the scratch directory;
//! - [`calib`]: the boot's calibration;
//! - [`suite`]: the differential suite's cases and verdicts (`darkbuf validate`).

pub mod calib;
pub mod guest;
pub mod image;
pub mod launch;
pub mod protocol;
pub mod suite;
pub mod tools;

pub use launch::Accel;

use darkbuf_kernel::{KernelError, Result};
use darkbuf_report::{Results, VmCalibration, VmEnvironment};
pub use protocol::{ProfileAsk, ProfileOutcome};
use protocol::{Boot, Job, JobOutcome, Plan};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The VM's settings (`--kernel`, `--kernel-modules`, `--vm-accel`, `--vm-cpus`,
/// `--vm-memory`).
#[derive(Clone, Debug)]
pub struct VmOpts {
    pub kernel: Option<PathBuf>,
    pub modules: Option<PathBuf>,
    pub accel: Accel,
    /// vCPUs (default: the host's CPU count).
    pub cpus: Option<u32>,
    /// MiB (default [`DEFAULT_MEMORY_MIB`]).
    pub memory_mib: Option<u64>,
}

pub const DEFAULT_MEMORY_MIB: u64 = 2048;
/// The host's other processes above this (% of one CPU) while a point ran: a warning,
/// as the kernel backend notes its own machine's (`machine.other_cpu_pct`).
pub const HOST_BUSY_PCT: f64 = 10.0;

/// A guest CPU at least this busy in the measured window makes the point `vm.cpu_bound`.
pub const CPU_BOUND_PCT: f64 = 95.0;
/// Below this calibration accuracy, or this share of a flood's asked rate, a point is
/// warned about.
pub const RATE_SHORTFALL: f64 = 0.9;

/// What one boot gave: the guest, its calibration, and the VM's environment.
#[derive(Clone, Debug)]
pub struct Booted {
    pub boot: Boot,
    pub env: VmEnvironment,
    /// `darkbuf check` in the guest, when the plan asked for it.
    pub check: Option<serde_json::Value>,
    /// `darkbuf calibrate` in the guest, when the plan asked for it, with the host's
    /// other processes' load while it ran (% of one CPU).
    pub profile: Option<(ProfileOutcome, Option<f64>)>,
    /// Remarks for stderr (`darkbuf: vm: ...`).
    pub notes: Vec<String>,
}

/// Per-job limit: setup under TCG is slow (namespaces, tc, a check took 36 s in a
/// 6.1 guest), then the runs.
fn job_limit(warmup_ns: u64, duration_ns: u64, runs: u32) -> Duration {
    let per_run = Duration::from_nanos(warmup_ns.saturating_add(duration_ns)).mul_f64(4.0) + Duration::from_secs(90);
    Duration::from_secs(60) + per_run * runs.max(1)
}

/// A job for `scn_text` (the scenario file's text) with `overrides`.
pub fn job(name_for_errors: &str, text: &str, overrides: Vec<String>, label: &str, runs: Option<u32>, seed: Option<u64>, probe_trace: bool) -> Job {
    Job { name_for_errors: name_for_errors.into(), text: text.into(), overrides, label: label.into(), runs, seed, probe_trace }
}

/// What one boot does before its jobs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Steps {
    /// The guest's `darkbuf check`.
    pub check: bool,
    /// The boot's calibration ([`calib`]: can this guest deliver a rate at all?).
    pub calibrate: bool,
    /// `darkbuf calibrate` in the guest: a machine profile for the simulator.
    pub profile: Option<ProfileAsk>,
}

/// Boots once and runs `jobs` (each with its resolved scenario's warmup, duration and
/// runs, for its time limit), calling `each(i, outcome)` as each finishes, after the
/// `steps` (check, the boot's calibration, a machine profile, in that order). `say`
/// gets progress lines for stderr. `each` also gets the VM's environment (known once
/// the boot and calibration are done, before the first job).
pub fn run(
    opts: &VmOpts,
    jobs: Vec<(Job, (u64, u64, u32))>,
    steps: Steps,
    mut say: impl FnMut(&str),
    mut each: impl FnMut(usize, JobOutcome, &VmEnvironment) -> Result<()>,
) -> Result<Booted> {
    darkbuf_kernel::signals::install();
    // A bad --kernel is the user's input (exit 2), told before missing tools (exit 3).
    let image = image::select(opts.kernel.as_deref(), Path::new("/boot"))?;
    let tools = tools::find(&std::env::var("PATH").unwrap_or_default())?;
    if opts.accel == Accel::Kvm && !tools::kvm_accessible(Path::new("/dev/kvm")) {
        return Err(KernelError::Unavailable("--vm-accel kvm: /dev/kvm cannot be opened read-write (no KVM, or not in the kvm group)".into()));
    }
    let exe = std::env::current_exe().map_err(|e| KernelError::Internal(format!("cannot find darkbuf's own binary: {e}")))?;
    let cpus = opts.cpus.unwrap_or(darkbuf_kernel::online_cpus() as u32).max(1);
    let memory_mib = opts.memory_mib.unwrap_or(DEFAULT_MEMORY_MIB);
    let scratch = launch::Scratch::new(&std::env::temp_dir())?;
    let limits: Vec<Duration> = jobs.iter().map(|(_, (w, d, r))| job_limit(*w, *d, *r)).collect();
    let Steps { check, calibrate, profile } = steps;
    let plan = Plan {
        calibrate,
        check,
        profile,
        jobs: jobs.into_iter().map(|(j, _)| j).collect(),
        modules: opts.modules.as_ref().map(|m| std::fs::canonicalize(m).unwrap_or_else(|_| m.clone()).to_string_lossy().into_owned()),
        timing: std::env::var_os(darkbuf_kernel::backend::TIMING_ENV).is_some(),
        fresh_topology: std::env::var_os(darkbuf_kernel::backend::FRESH_TOPOLOGY_ENV).is_some(),
    };
    let plan_timing = plan.timing;
    protocol::write_json(&scratch.path, protocol::PLAN, &plan).map_err(|e| KernelError::Internal(format!("plan.json: {e}")))?;
    let t0 = Instant::now();
    let mut notes = Vec::new();
    let mut accel = opts.accel;
    // A distro kernel cannot boot on a PVM /dev/kvm: skip the probe's 25 s. A kernel of
    // the user's may be a PVM guest, so it still gets the probe.
    if accel == Accel::Auto && opts.kernel.is_none() && tools::kvm_accessible(Path::new("/dev/kvm")) {
        if let Some(why) = tools::kvm_unusable_for_stock_kernels(Path::new("/sys/module")) {
            let n = format!("TCG without a KVM probe boot: {why}");
            say(&n);
            notes.push(n);
            accel = Accel::Tcg;
        }
    }
    let (mut vm, boot) = boot(&tools, &image, accel, cpus, memory_mib, &scratch.path, &exe, &mut say, &mut notes)?;
    let check = if check { Some(wait_file::<serde_json::Value>(&mut vm, &scratch.path, protocol::CHECK, TCG_STEP, "while the guest ran darkbuf check")?) } else { None };
    let calibration: Option<VmCalibration> = if calibrate {
        say("calibrating the guest (a shaped TCP flow, a UDP flood)");
        let c: VmCalibration = wait_file(&mut vm, &scratch.path, protocol::CALIBRATION, TCG_STEP, "while the guest calibrated")?;
        say(&calibration_line(&c));
        Some(c)
    } else {
        None
    };
    let profile = match profile {
        Some(ask) => {
            say(if ask.quick { "fitting a machine profile to the guest (darkbuf calibrate --quick)" } else { "fitting a machine profile to the guest (darkbuf calibrate)" });
            let before = HostLoad::now(&vm);
            let p: ProfileOutcome = wait_file(&mut vm, &scratch.path, protocol::PROFILE, PROFILE_STEP, "while the guest fitted a profile")?;
            Some((p, before.and_then(|b| b.other_cpu_pct_since(&vm))))
        }
        None => None,
    };
    let env = VmEnvironment {
        kernel: boot.release.clone(),
        image: image.run_arg.display().to_string(),
        accel: vm.accel.name().into(),
        cpus: boot.cpus,
        memory_mib: boot.memory_mib,
        boot_s: t0.elapsed().as_secs_f64(),
        calibration,
        tools: [tools::version_line(&tools.vng), tools::version_line(&tools.qemu)].join("; "),
        host_other_cpu_pct: None,
    };
    for (i, limit) in limits.iter().enumerate() {
        let before = HostLoad::now(&vm);
        let out: JobOutcome = wait_file(&mut vm, &scratch.path, &protocol::job_file(i), *limit, &format!("during job {}", i + 1))?;
        let job_env = VmEnvironment { host_other_cpu_pct: before.and_then(|b| b.other_cpu_pct_since(&vm)), ..env.clone() };
        each(i, out, &job_env)?;
    }
    let t_finish = Instant::now();
    vm.finish(Duration::from_secs(60));
    if plan_timing {
        say(&format!("timing: the VM was stopped {:.2} s after the last job's results", t_finish.elapsed().as_secs_f64()));
    }
    Ok(Booted { boot, env, check, profile, notes })
}

/// The host's CPU time at an instant, all of it and this process's and the VM's: the
/// rest is what the guest competed with. From the CPUs' totals (/proc/stat), so a
/// short-lived process (a compiler) that exits before the next read still counts.
#[derive(Clone, Copy, Debug)]
struct HostLoad {
    at: Instant,
    busy_ticks: u64,
    ours_ticks: u64,
}

impl HostLoad {
    fn now(vm: &launch::Vm) -> Option<HostLoad> {
        let pgid = vm.pgid()?;
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let busy_ticks = darkbuf_kernel::counters::parse_proc_stat(&stat).iter().map(|(b, _)| b).sum();
        let ours_ticks = darkbuf_kernel::counters::own_and_group_ticks(std::process::id(), pgid);
        Some(HostLoad { at: Instant::now(), busy_ticks, ours_ticks })
    }

    /// The host's busy time since `self` that was neither this process's nor the VM's,
    /// % of one CPU.
    fn other_cpu_pct_since(&self, vm: &launch::Vm) -> Option<f64> {
        let now = HostLoad::now(vm)?;
        let secs = now.at.duration_since(self.at).as_secs_f64();
        let busy = now.busy_ticks.saturating_sub(self.busy_ticks);
        let ours = now.ours_ticks.saturating_sub(self.ours_ticks);
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        (secs > 0.0).then(|| 100.0 * busy.saturating_sub(ours) as f64 / hz / secs)
    }
}

/// Time limit for the check and the calibration.
const TCG_STEP: Duration = Duration::from_secs(600);
/// Time limit for `darkbuf calibrate` in the guest: 17 runs of 4 s (about 1.5 min
/// natively), each with a TCG guest's setup (namespaces, tc, nft: 20-40 s).
const PROFILE_STEP: Duration = Duration::from_secs(1500);

#[allow(clippy::too_many_arguments)]
fn boot(
    tools: &tools::Tools,
    image: &image::KernelImage,
    accel: Accel,
    cpus: u32,
    memory_mib: u64,
    scratch: &Path,
    exe: &Path,
    say: &mut impl FnMut(&str),
    notes: &mut Vec<String>,
) -> Result<(launch::Vm, Boot)> {
    let try_kvm = match accel {
        Accel::Kvm => true,
        Accel::Tcg => false,
        Accel::Auto => tools::kvm_accessible(Path::new("/dev/kvm")),
    };
    let what = format!("{} ({}, {cpus} vCPUs, {memory_mib} MiB)", image.run_arg.display(), if image.release.is_empty() { "release unknown" } else { &image.release });
    if try_kvm {
        say(&format!("booting {what} with KVM"));
        let limit = if accel == Accel::Auto { launch::KVM_PROBE } else { launch::TCG_BOOT };
        let cmd = launch::vng_command(tools, &image.run_arg, Accel::Kvm, cpus, memory_mib, scratch, exe);
        let mut vm = launch::Vm::spawn(cmd, Accel::Kvm, scratch)?;
        match vm.wait_for(protocol::BOOT, limit, "while the VM booted")? {
            launch::WaitOutcome::Ready => {
                let b = read_boot(scratch, &vm)?;
                return Ok((vm, b));
            }
            outcome if accel == Accel::Kvm => return Err(boot_failed(&vm, &outcome, limit)),
            outcome => {
                let why = match outcome {
                    launch::WaitOutcome::Exited(s) => format!("QEMU exited ({s})"),
                    _ => format!("no guest within {} s", limit.as_secs()),
                };
                let n = format!("the KVM probe boot failed ({why}); booting with TCG (software emulation) instead");
                say(&n);
                notes.push(n);
                drop(vm);
                let _ = std::fs::remove_file(scratch.join(protocol::CONSOLE_LOG));
            }
        }
    }
    say(&format!("booting {what} with TCG (software emulation; about 40 s)"));
    let cmd = launch::vng_command(tools, &image.run_arg, Accel::Tcg, cpus, memory_mib, scratch, exe);
    let mut vm = launch::Vm::spawn(cmd, Accel::Tcg, scratch)?;
    match vm.wait_for(protocol::BOOT, launch::TCG_BOOT, "while the VM booted")? {
        launch::WaitOutcome::Ready => {
            let b = read_boot(scratch, &vm)?;
            Ok((vm, b))
        }
        outcome => Err(boot_failed(&vm, &outcome, launch::TCG_BOOT)),
    }
}

fn read_boot(scratch: &Path, vm: &launch::Vm) -> Result<Boot> {
    protocol::read_json::<Boot>(scratch, protocol::BOOT)
        .map_err(|e| KernelError::Internal(format!("{e}{}", vm.console_tail(20))))?
        .ok_or_else(|| KernelError::Internal("boot.json vanished".into()))
}

fn boot_failed(vm: &launch::Vm, outcome: &launch::WaitOutcome, limit: Duration) -> KernelError {
    let why = match outcome {
        launch::WaitOutcome::Exited(s) => format!("QEMU exited ({s}) before the guest agent started"),
        _ => format!("the guest agent did not start within {} s; the VM was stopped", limit.as_secs()),
    };
    KernelError::Unavailable(format!("the VM did not boot: {why}{}", vm.console_tail(25)))
}

/// Waits for the guest's `name` and reads it.
fn wait_file<T: for<'de> serde::Deserialize<'de>>(vm: &mut launch::Vm, scratch: &Path, name: &str, limit: Duration, what: &str) -> Result<T> {
    match vm.wait_for(name, limit, what)? {
        launch::WaitOutcome::Ready => protocol::read_json::<T>(scratch, name)
            .map_err(|e| KernelError::Internal(format!("{e}{}", vm.console_tail(20))))?
            .ok_or_else(|| KernelError::Internal(format!("{name} vanished"))),
        launch::WaitOutcome::Exited(s) => Err(KernelError::Internal(format!("the VM exited ({s}) {what}{}", vm.console_tail(25)))),
        launch::WaitOutcome::TimedOut => Err(KernelError::Internal(format!(
            "no answer from the guest {what} within {} s; the VM was stopped{}",
            limit.as_secs(),
            vm.console_tail(25)
        ))),
    }
}

/// The calibration as one line for stderr.
pub fn calibration_line(c: &VmCalibration) -> String {
    let pct = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{:.0}%", 100.0 * v));
    format!(
        "calibration: TCP {} of htb's {:.2} Mbit/s ({}), UDP {} of the {:.0} pps asked ({}; the flood sent {}, ring drops {}/s, socket drops {}/s); vm.rate_accuracy {}",
        c.tcp_goodput_mbps.map_or("n/a".into(), |g| format!("{g:.2} Mbit/s")),
        c.tcp_shaped_mbps,
        pct(c.tcp_accuracy),
        c.udp_sink_pps.map_or("n/a".into(), |p| format!("{p:.0} pps")),
        c.udp_asked_pps,
        pct(c.udp_accuracy),
        c.udp_flood_pps.map_or("n/a".into(), |p| format!("{p:.0} pps")),
        c.udp_ring_drops.map_or("n/a".into(), |p| format!("{p:.0}")),
        c.udp_rcvbuf_errors.map_or("n/a".into(), |p| format!("{p:.0}")),
        c.rate_accuracy.map_or("n/a".into(), |a| format!("{a:.2}")),
    )
}

/// Turns the kernel backend's results from the guest into the VM backend's:
/// `backend = "vm"`, `environment.vm`, and per run `vm.cpu_bound` (a guest CPU at least
/// [`CPU_BOUND_PCT`] busy in the measured window) and `vm.rate_accuracy` (the boot's
/// calibration), with warnings for what a slow guest may have limited.
pub fn annotate(mut r: Results, env: &VmEnvironment) -> Results {
    let accuracy = env.calibration.as_ref().and_then(|c| c.rate_accuracy);
    let mut warnings = std::mem::take(&mut r.warnings);
    let mut unavailable: std::collections::BTreeMap<String, String> =
        std::mem::take(&mut r.unavailable).into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let scenario = r.scenario.clone();
    let mut runs = std::mem::take(&mut r.runs);
    for run in &mut runs {
        let busiest = run
            .metrics
            .iter()
            .filter(|(k, _)| k.starts_with("cpu.") && k.ends_with(".busy_pct"))
            .filter_map(|(k, v)| v.map(|v| (k.clone(), v)))
            .fold(None::<(String, f64)>, |best, (k, v)| match best {
                Some((_, b)) if b >= v => best,
                _ => Some((k, v)),
            });
        match &busiest {
            Some((k, v)) => {
                let bound = *v >= CPU_BOUND_PCT;
                run.metrics.insert("vm.cpu_bound".into(), Some(if bound { 1.0 } else { 0.0 }));
                if bound {
                    push_unique(&mut warnings, format!(
                        "vm: {} was {v:.0}% busy in run seed {}: the guest's CPU may have limited this point, not the scenario ({} guest)",
                        k.trim_end_matches(".busy_pct"),
                        run.seed,
                        env.accel
                    ));
                }
            }
            None => {
                run.metrics.insert("vm.cpu_bound".into(), None);
                unavailable.insert("vm.cpu_bound".into(), "the guest's per-CPU busy time (cpu.N.busy_pct) was not measured".into());
            }
        }
        run.metrics.insert("vm.rate_accuracy".into(), accuracy);
        run.metrics.insert("vm.host_other_cpu_pct".into(), env.host_other_cpu_pct);
        shortfall_warnings(&scenario, run, &mut warnings);
    }
    match env.host_other_cpu_pct {
        None => {
            unavailable.insert("vm.host_other_cpu_pct".into(), "the host's processes were not read while the point ran".into());
        }
        Some(p) if p > HOST_BUSY_PCT => push_unique(&mut warnings, format!(
            "vm: other processes on the host used {p:.0}% of a CPU while this point ran: a {} guest's timers then fire late, and what they pace moves with them (docs/validation.md: CUBIC's HyStart exit)",
            env.accel
        )),
        Some(_) => {}
    }
    if accuracy.is_none() {
        unavailable.insert("vm.rate_accuracy".into(), "the boot's calibration did not measure a rate".into());
    } else if let Some(a) = accuracy.filter(|a| *a < RATE_SHORTFALL) {
        push_unique(&mut warnings, format!(
            "vm: this boot's calibration delivered {:.0}% of its configured rate (vm.rate_accuracy {a:.2}): rates in this guest fall short of what is asked",
            100.0 * a
        ));
    }
    let mut env_all = r.environment.clone();
    env_all.vm = Some(env.clone());
    let mut out = Results::from_runs(scenario, "vm", env_all, runs, unavailable);
    out.warnings = warnings;
    out.provenance = r.provenance;
    out
}

fn push_unique(v: &mut Vec<String>, s: String) {
    if !v.contains(&s) {
        v.push(s);
    }
}

/// Floods that reached less than [`RATE_SHORTFALL`] of their asked rate, and drops at
/// the guest's receive side.
fn shortfall_warnings(scenario: &serde_json::Value, run: &darkbuf_report::RunRecord, warnings: &mut Vec<String>) {
    let asked: f64 = scenario
        .get("traffic")
        .and_then(|t| t.as_array())
        .map(|a| a.iter().filter_map(asked_pps).sum())
        .unwrap_or(0.0);
    let flood = run.metrics.get("flood.pps").copied().flatten();
    if let (true, Some(f)) = (asked > 0.0, flood) {
        if f < RATE_SHORTFALL * asked {
            push_unique(warnings, format!(
                "vm: run seed {}: the floods sent {f:.0} pps of the {asked:.0} asked ({:.0}%): the guest's load generator fell short",
                run.seed,
                100.0 * f / asked
            ));
        }
    }
    if let Some(Some(d)) = run.metrics.get("ring.drops") {
        if *d > 0.0 {
            push_unique(warnings, format!(
                "vm: run seed {}: the guest's receive ring dropped {d:.0} packets (ring.drops): a slow guest consumer drops where a native one may not",
                run.seed
            ));
        }
    }
}

/// A UDP flood's asked packets per second from the resolved scenario's JSON (`None`
/// for other traffic and for `rate = "max"`).
fn asked_pps(t: &serde_json::Value) -> Option<f64> {
    if t.get("kind")?.as_str()? != "udp" {
        return None;
    }
    let rate = darkbuf_model::units::parse_rate(t.get("rate")?.as_str()?).ok()?;
    let size = t.get("size")?.as_u64()? as u32;
    let flows = t.get("flows").and_then(|f| f.as_u64()).unwrap_or(1) as f64;
    darkbuf_kernel::backend::rate_pps(&rate, size).map(|p| p * flows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use darkbuf_report::{Environment, RunRecord};
    use std::collections::BTreeMap;

    fn results(busy: &[f64]) -> Results {
        let mut m = BTreeMap::new();
        for (i, b) in busy.iter().enumerate() {
            m.insert(format!("cpu.{i}.busy_pct"), Some(*b));
        }
        let run = RunRecord { seed: 1, metrics: m, ..Default::default() };
        Results::from_runs(serde_json::json!({"traffic": []}), "kernel", Environment::default(), vec![run], BTreeMap::new())
    }

    /// The host's other work while the point ran: every run carries it, above 10% of a
    /// CPU with a warning; unread, it is null with its reason.
    #[test]
    fn host_load_is_each_runs_metric_and_warns_above_ten_percent() {
        let busy = VmEnvironment { accel: "tcg".into(), host_other_cpu_pct: Some(35.0), ..Default::default() };
        let r = annotate(results(&[40.0]), &busy);
        assert_eq!(r.runs[0].metrics["vm.host_other_cpu_pct"], Some(35.0));
        assert!(r.warnings.iter().any(|w| w.contains("used 35% of a CPU") && w.contains("tcg guest")), "{:?}", r.warnings);
        let quiet = VmEnvironment { host_other_cpu_pct: Some(4.0), ..Default::default() };
        assert!(!annotate(results(&[40.0]), &quiet).warnings.iter().any(|w| w.contains("of a CPU while")));
        let r = annotate(results(&[40.0]), &VmEnvironment::default());
        assert_eq!(r.runs[0].metrics["vm.host_other_cpu_pct"], None);
        assert!(r.unavailable.contains_key("vm.host_other_cpu_pct"));
    }

    #[test]
    fn cpu_bound_and_accuracy() {
        let env = VmEnvironment {
            accel: "tcg".into(),
            calibration: Some(calib::accuracy(Some(10.0), 19.0, Some(1700.0), 1733.0, 1.0)),
            ..Default::default()
        };
        let r = annotate(results(&[40.0, 97.0]), &env);
        assert_eq!(r.backend, "vm");
        assert_eq!(r.runs[0].metrics["vm.cpu_bound"], Some(1.0));
        let acc = r.runs[0].metrics["vm.rate_accuracy"].unwrap();
        assert!((acc - 10.0 / 19.0).abs() < 1e-12);
        assert!(r.warnings.iter().any(|w| w.contains("cpu.1 was 97% busy")), "{:?}", r.warnings);
        assert!(r.warnings.iter().any(|w| w.contains("vm.rate_accuracy 0.53")), "{:?}", r.warnings);
        assert_eq!(r.environment.vm.as_ref().unwrap().accel, "tcg");
        let r = annotate(results(&[40.0, 60.0]), &VmEnvironment::default());
        assert_eq!(r.runs[0].metrics["vm.cpu_bound"], Some(0.0));
        assert_eq!(r.runs[0].metrics["vm.rate_accuracy"], None);
        assert!(r.unavailable.contains_key("vm.rate_accuracy"));
        let r = annotate(results(&[]), &VmEnvironment::default());
        assert_eq!(r.runs[0].metrics["vm.cpu_bound"], None);
    }

    #[test]
    fn job_limits_grow_with_the_runs() {
        let one = job_limit(1_000_000_000, 10_000_000_000, 1);
        assert_eq!(one, Duration::from_secs(60 + 44 + 90));
        assert_eq!(job_limit(1_000_000_000, 10_000_000_000, 3), Duration::from_secs(60 + 3 * 134));
    }
}
