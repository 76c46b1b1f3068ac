//! The agent inside the VM (`darkbuf vm-guest DIR`, started by the host through
//! `vng --exec`): it loads the modules the kernel backend wants, reports the guest,
//! calibrates, runs `darkbuf check` if asked, fits a machine profile to the guest if
//! asked (`darkbuf calibrate --backend vm`), and runs each job with the kernel
//! backend, writing one file per step into the scratch directory DIR (see
//! [`crate::protocol`]). It is the kernel backend unchanged, in a guest it owns.

use crate::protocol::{self, Boot, Job, JobError, JobOutcome, Plan, ProfileAsk, ProfileOutcome};
use darkbuf_kernel::backend::{self, RunOpts};
use darkbuf_kernel::KernelError;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the agent's heartbeat line goes into guest.log.
const HEARTBEAT: Duration = Duration::from_secs(15);
/// The heartbeat's "no job running" mark.
const NO_JOB: usize = usize::MAX;

/// Modules the agent loads before anything runs, so that `check` lists them and the
/// first run does not pay for loading them: the TCP congestion controls (only loaded
/// ones appear in tcp_available_congestion_control), the devices, and the qdiscs and
/// classifiers (tc would load these on first use).
pub const MODULES: &[&str] = &[
    "tcp_bbr", "tcp_dctcp", "tcp_vegas", "tcp_htcp", "veth", "tun", "ifb", "sch_netem", "sch_fq", "sch_fq_codel",
    "sch_cake", "sch_pie", "sch_fq_pie", "sch_codel", "sch_sfq", "sch_htb", "sch_tbf", "sch_ingress", "cls_u32",
    "cls_matchall", "cls_fw", "cls_flow", "act_mirred", "act_skbedit",
];

/// Runs the agent; returns the process's exit code (0 when every step was attempted;
/// a job's own failure is in its outcome file, not the exit code). `predict` is the
/// simulator for the profile step's TCP check ([`darkbuf_kernel::calibrate_tcp`]).
pub fn main(dir: &Path, predict: darkbuf_kernel::calibrate_tcp::Predict) -> i32 {
    // Before any thread: the kernel backend then leaves the host's VM leftovers alone.
    std::env::set_var(darkbuf_kernel::names::VM_GUEST_ENV, "1");
    let mut log = std::fs::OpenOptions::new().create(true).append(true).open(dir.join(protocol::GUEST_LOG)).ok();
    let mut say = |m: &str| {
        if let Some(f) = log.as_mut() {
            let _ = writeln!(f, "{m}");
        }
    };
    let plan: Plan = match protocol::read_json(dir, protocol::PLAN) {
        Ok(Some(p)) => p,
        Ok(None) => {
            say("no plan.json in the scratch directory");
            return 2;
        }
        Err(e) => {
            say(&format!("plan.json: {e}"));
            return 2;
        }
    };
    if plan.timing {
        std::env::set_var(darkbuf_kernel::backend::TIMING_ENV, "1");
    }
    if plan.fresh_topology {
        std::env::set_var(darkbuf_kernel::backend::FRESH_TOPOLOGY_ENV, "1");
    }
    let current = Arc::new(AtomicUsize::new(NO_JOB));
    heartbeat(dir, Arc::clone(&current));
    let boot = prepare(&plan, &mut say);
    if let Err(e) = protocol::write_json(dir, protocol::BOOT, &boot) {
        say(&format!("cannot write boot.json: {e}"));
        return 1;
    }
    if plan.check {
        let body = match darkbuf_kernel::caps::check(false) {
            Ok(c) => serde_json::json!({
                "capabilities": serde_json::to_value(&c).unwrap_or_default(),
                "table": darkbuf_kernel::caps::render_table(&c),
            }),
            Err(e) => serde_json::json!({ "error": { "code": e.code(), "message": e.message() } }),
        };
        if let Err(e) = protocol::write_json(dir, protocol::CHECK, &body) {
            say(&format!("cannot write check.json: {e}"));
        }
    }
    if plan.calibrate {
        let cal = crate::calib::calibrate(&mut say);
        if let Err(e) = protocol::write_json(dir, protocol::CALIBRATION, &cal) {
            say(&format!("cannot write calibration.json: {e}"));
        }
    }
    if let Some(ask) = plan.profile {
        let out = fit_profile(dir, ask, predict, &mut say);
        if let Err(e) = protocol::write_json(dir, protocol::PROFILE, &out) {
            say(&format!("cannot write profile.json: {e}"));
        }
    }
    for (i, job) in plan.jobs.iter().enumerate() {
        current.store(i, Ordering::Relaxed);
        let out = run_job(job);
        current.store(NO_JOB, Ordering::Relaxed);
        if let Err(e) = protocol::write_json(dir, &protocol::job_file(i), &out) {
            say(&format!("cannot write job {i}: {e}"));
        }
        if matches!(&out.error, Some(e) if e.code > 128) {
            break;
        }
    }
    // The last run's namespaces, kept for a next run that did not come.
    for e in darkbuf_kernel::topo::Topology::release_parked() {
        say(&format!("teardown: {e}"));
    }
    let _ = protocol::write_atomic(dir, protocol::DONE, b"");
    0
}

/// Appends a line to guest.log every [`HEARTBEAT`] while the agent runs: the guest's
/// uptime and load, the job running, each of the agent's threads with its state and
/// kernel wait channel (`/proc/self/task/*/stat`, `wchan`), and any other task of the
/// guest in D or R state with its kernel stack. When the host stops waiting
/// for a job, its error carries guest.log's tail: heartbeats that stopped say the guest
/// kernel stopped running; heartbeats that go on name the call a thread is stuck in.
fn heartbeat(dir: &Path, current: Arc<AtomicUsize>) {
    let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(dir.join(protocol::GUEST_LOG)) else {
        return;
    };
    let spawned = std::thread::Builder::new().name("heartbeat".into()).spawn(move || loop {
        std::thread::sleep(HEARTBEAT);
        let job = match current.load(Ordering::Relaxed) {
            NO_JOB => "no job".to_string(),
            i => format!("job {}", i + 1),
        };
        let uptime = read_first_word("/proc/uptime");
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        let load = load.split_whitespace().take(3).collect::<Vec<_>>().join(" ");
        let others = other_busy_tasks();
        let others = if others.is_empty() { String::new() } else { format!("; other tasks in D or R: {others}") };
        let _ = writeln!(f, "heartbeat: uptime {uptime} s, load {load}, {job}; threads: {}{others}", threads());
    });
    drop(spawned);
}

fn read_first_word(path: &str) -> String {
    std::fs::read_to_string(path).ok().and_then(|t| t.split_whitespace().next().map(str::to_string)).unwrap_or_else(|| "?".into())
}

/// The agent's threads as `comm:state:wchan`, with `[kernel stack]` for a thread in D or
/// R state, the heartbeat thread left out.
fn threads() -> String {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return "?".into();
    };
    let mut out = Vec::new();
    for e in dir.flatten() {
        match task(&e.path()) {
            Some((comm, _, _)) if comm == "heartbeat" => {}
            Some((_, _, line)) => out.push(line),
            None => {}
        }
    }
    out.join(" ")
}

/// Every other task of the guest in D or R state, as [`threads`] shows them (at most 12):
/// a stall whose load average climbs while the agent's threads sleep is in another
/// process or a kernel thread (an `ip`, a kworker in `cleanup_net()`).
fn other_busy_tasks() -> String {
    let me = std::process::id().to_string();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return String::new();
    };
    let mut out = Vec::new();
    for p in procs.flatten() {
        let name = p.file_name();
        let name = name.to_string_lossy();
        if name == me || !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(tasks) = std::fs::read_dir(p.path().join("task")) else { continue };
        for t in tasks.flatten() {
            if let Some((_, state, line)) = task(&t.path()) {
                if (state == "D" || state == "R") && out.len() < 12 {
                    out.push(line);
                }
            }
        }
    }
    out.join(" ")
}

/// One task's (comm, state, `comm:state:wchan[kernel stack]`) from its /proc directory;
/// the stack only for D or R.
fn task(p: &Path) -> Option<(String, String, String)> {
    let stat = std::fs::read_to_string(p.join("stat")).ok()?;
    // comm is in parentheses and may hold spaces; the state follows it.
    let (a, b) = (stat.find('(')?, stat.rfind(')')?);
    if b <= a {
        return None;
    }
    let (comm, rest) = (&stat[a + 1..b], &stat[b + 1..]);
    let state = rest.split_whitespace().next().unwrap_or("?");
    let wchan = std::fs::read_to_string(p.join("wchan")).unwrap_or_default();
    let mut t = format!("{comm}:{state}:{}", if wchan.is_empty() { "-" } else { wchan.trim() });
    // A task in uninterruptible sleep or running: its kernel stack (root reads it),
    // innermost first, which names the kernel path a stuck job waits in.
    if state == "D" || state == "R" {
        if let Ok(stack) = std::fs::read_to_string(p.join("stack")) {
            let frames: Vec<&str> = stack.lines().filter_map(|l| l.split_whitespace().nth(1)).map(|f| f.split('+').next().unwrap_or(f)).take(12).collect();
            if !frames.is_empty() {
                t.push_str(&format!("[{}]", frames.join("<")));
            }
        }
    }
    Some((comm.to_string(), state.to_string(), t))
}

/// Binds the modules directory if one was given, loads [`MODULES`] and describes the
/// guest.
fn prepare(plan: &Plan, say: &mut impl FnMut(&str)) -> Boot {
    let release = darkbuf_kernel::uname_release();
    if let Some(m) = &plan.modules {
        let target = format!("/lib/modules/{release}");
        let src = modules_dir(Path::new(m), &release);
        let ok = std::fs::create_dir_all(&target).is_ok()
            && darkbuf_kernel::cmd::run("mount", &["--bind", &src.to_string_lossy(), &target]).is_ok_and(|o| o.ok());
        say(&format!("modules {} on {target}: {}", src.display(), if ok { "bound" } else { "could not bind" }));
    }
    say(&tools_in_memory());
    let (mut loaded, mut missing) = (Vec::new(), Vec::new());
    for m in MODULES {
        match darkbuf_kernel::cmd::run("modprobe", &[m]) {
            Ok(o) if o.ok() => loaded.push(m.to_string()),
            Ok(o) => missing.push(format!("{m}: {}", o.stderr.lines().next().unwrap_or("").trim())),
            Err(e) => missing.push(format!("{m}: {e}")),
        }
    }
    let uptime_s = std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|t| t.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0.0);
    let memory_mib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| t.lines().find(|l| l.starts_with("MemTotal:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok()))
        .map_or(0, |kb| kb / 1024);
    Boot { release, uptime_s, cpus: darkbuf_kernel::online_cpus() as u32, memory_mib, modules_loaded: loaded, modules_missing: missing }
}

/// The tools each run starts (and the dynamic loader and libraries they load).
pub const TOOLS: &[&str] = &["ip", "tc", "ethtool", "nft", "iptables-restore", "sh"];

/// Where [`tools_in_memory`] keeps its copies (a tmpfs of its own).
const TOOLS_DIR: &str = "/tmp/darkbuf-tools";

/// Puts [`TOOLS`], their libraries and the dynamic loader (as `ldd` lists them) on a
/// tmpfs and binds each copy over its original, so that an exec in the guest reads
/// them from memory. virtme-ng exports the host's root over 9p without a cache, so
/// every exec read its binary and libraries over 9p again: a third of an exec's
/// 60-300 ms under TCG (`ip -n X link show` 213 ms from 9p, 173 from a tmpfs). Only the
/// guest's mounts change (the host's files are read-only to it). Returns what it did,
/// for guest.log.
fn tools_in_memory() -> String {
    let bins: Vec<String> = TOOLS
        .iter()
        .filter_map(|t| darkbuf_kernel::cmd::which(t))
        .filter_map(|p| std::fs::canonicalize(&p).ok().map(|c| c.to_string_lossy().into_owned()))
        .collect();
    if bins.is_empty() {
        return "tools in memory: none of the tools found".into();
    }
    let args: Vec<&str> = bins.iter().map(String::as_str).collect();
    let libs = match darkbuf_kernel::cmd::run("ldd", &args) {
        Ok(o) => ldd_paths(&o.stdout),
        Err(e) => return format!("tools in memory: ldd: {e}"),
    };
    let mut files: Vec<String> = bins.clone();
    for l in libs {
        if let Ok(c) = std::fs::canonicalize(&l) {
            let c = c.to_string_lossy().into_owned();
            if !files.contains(&c) {
                files.push(c);
            }
        }
    }
    if std::fs::create_dir_all(TOOLS_DIR).is_err() || mount(Some("tmpfs"), TOOLS_DIR, Some("tmpfs"), 0).is_err() {
        return format!("tools in memory: cannot mount a tmpfs on {TOOLS_DIR}");
    }
    let mut done = 0;
    let mut failed = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let name = Path::new(f).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let copy = format!("{TOOLS_DIR}/{i}-{name}");
        match std::fs::copy(f, &copy).and_then(|_| mount(Some(&copy), f, None, libc::MS_BIND)) {
            Ok(()) => done += 1,
            Err(e) => failed.push(format!("{f}: {e}")),
        }
    }
    let mut m = format!("tools in memory: {done} of {} files on {TOOLS_DIR}, bound over the originals", files.len());
    if !failed.is_empty() {
        m.push_str(&format!(" (not: {})", failed.join("; ")));
    }
    m
}

/// The files `ldd` lists: `lib => /path (0x...)` and the loader's `/path (0x...)`.
pub fn ldd_paths(out: &str) -> Vec<String> {
    let mut v = Vec::new();
    for l in out.lines() {
        let l = l.trim();
        if l.ends_with(':') {
            continue;
        }
        let path = l.split_once("=>").map_or(l, |(_, r)| r.trim());
        let path = path.split_once(" (").map_or(path, |(p, _)| p).trim();
        if path.starts_with('/') && !v.iter().any(|x| x == path) {
            v.push(path.to_string());
        }
    }
    v
}

/// mount(2).
fn mount(src: Option<&str>, target: &str, fstype: Option<&str>, flags: libc::c_ulong) -> std::io::Result<()> {
    use std::ffi::CString;
    let c = |s: &str| CString::new(s).map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "NUL in a path"));
    let (src, target, fstype) = (src.map(c).transpose()?, c(target)?, fstype.map(c).transpose()?);
    let ptr = |o: &Option<CString>| o.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: NUL-terminated strings (or null where mount(2) allows it) that outlive the call.
    if unsafe { libc::mount(ptr(&src), target.as_ptr(), ptr(&fstype), flags, std::ptr::null()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// `--kernel-modules DIR`: DIR itself when it holds modules.dep, else
/// DIR/lib/modules/RELEASE (an INSTALL_MOD_PATH), else DIR/RELEASE.
pub fn modules_dir(dir: &Path, release: &str) -> std::path::PathBuf {
    [dir.to_path_buf(), dir.join("lib/modules").join(release), dir.join(release)]
        .into_iter()
        .find(|d| d.join("modules.dep").is_file() || d.join("modules.order").is_file())
        .unwrap_or_else(|| dir.to_path_buf())
}

/// `darkbuf calibrate` on the guest's kernel: the profile goes into the scratch
/// directory's `profile.toml` (the simulator loads what was written there before it is
/// handed back), and its text, summary and any refusal into [`ProfileOutcome`].
fn fit_profile(dir: &Path, ask: ProfileAsk, predict: darkbuf_kernel::calibrate_tcp::Predict, say: &mut impl FnMut(&str)) -> ProfileOutcome {
    let t0 = Instant::now();
    let path = dir.join("profile.toml");
    match darkbuf_kernel::calibrate::calibrate(&path, ask.quick, ask.force, Some(predict), |l| say(&format!("profile: {l}"))) {
        Ok(cal) => ProfileOutcome {
            toml: Some(cal.profile_toml.clone()),
            summary: darkbuf_kernel::calibrate::summary(&cal, &path),
            disturbed: cal.disturbed.iter().map(|d| format!("{}: {}", d.step, d.seen)).collect(),
            error: None,
            wall_s: t0.elapsed().as_secs_f64(),
        },
        Err(e) => ProfileOutcome {
            error: Some(JobError { code: e.code(), message: e.message().to_string() }),
            wall_s: t0.elapsed().as_secs_f64(),
            ..Default::default()
        },
    }
}

/// One job: the scenario resolved from its text and overrides, then every run on this
/// kernel.
fn run_job(job: &Job) -> JobOutcome {
    let t0 = Instant::now();
    let fail = |code: u8, message: String| JobOutcome { results: None, notes: Vec::new(), error: Some(JobError { code, message }), wall_s: t0.elapsed().as_secs_f64() };
    let mut scn = match darkbuf_scenario::load_str(&job.name_for_errors, &job.text, &job.overrides) {
        Ok(s) => s,
        Err(d) => return fail(2, d.to_string()),
    };
    scn.label = job.label.clone();
    if let Some(r) = job.runs {
        scn.runs = r;
    }
    if let Some(s) = job.seed {
        scn.seed = s;
    }
    let opts = RunOpts { probe_trace: job.probe_trace, ..RunOpts::for_scenario(&scn) };
    match backend::run_scenario(&scn, &opts, |_| {}) {
        Ok((results, notes)) => JobOutcome {
            results: serde_json::to_value(&results).ok(),
            notes,
            error: None,
            wall_s: t0.elapsed().as_secs_f64(),
        },
        Err(e) => {
            let code = e.code();
            let message = match e {
                KernelError::Interrupted { message, .. } => message,
                e => e.message().to_string(),
            };
            fail(code, message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_output() {
        let out = "/usr/sbin/ip:\n\tlinux-vdso.so.1 (0x00007ffd)\n\tlibbpf.so.1 => /lib/x86_64-linux-gnu/libbpf.so.1 (0x00007f12)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f34)\n/usr/sbin/tc:\n\tlibbpf.so.1 => /lib/x86_64-linux-gnu/libbpf.so.1 (0x00007f12)\n\tlibfoo.so => not found\n";
        assert_eq!(ldd_paths(out), ["/lib/x86_64-linux-gnu/libbpf.so.1", "/lib64/ld-linux-x86-64.so.2"]);
    }

    /// A task reading its own /proc directory is running: its line has its comm, the
    /// state R and (root reads it) a kernel stack.
    #[test]
    fn a_running_task_is_shown_with_its_state() {
        let (comm, state, line) = task(Path::new("/proc/thread-self")).expect("our own task");
        assert_eq!(state, "R");
        assert!(line.starts_with(&format!("{comm}:R:")), "{line}");
        assert!(task(Path::new("/proc/no-such-task")).is_none());
    }
}
