//! Names of everything the backend creates, and finding what a killed run left behind.
//!
//! Namespaces are `dkb-<pid>-<seq>-tx` / `-rx` (and `-lan`, a `[lan]` client's); devices
//! `dkb<pid36><seq36><role>` (role `s` sender veth, `r` receiving peer, `t` tap, `c` the
//! `[lan]` client's veth, `l` the router's end of it). Device names are kept to 10 characters
//! so that the threaded-NAPI kthread's name, `napi/<dev>-<napi id>` cut to the 15
//! characters of `TASK_COMM_LEN`, still contains the whole device name. Tracing
//! instances are `dkb-<pid>-<seq>-<what>`. The pid makes names unique between
//! concurrent darkbuf processes, and tells `check` whether the owner is still alive.

use crate::cmd;
use serde::Serialize;

/// Prefix of every namespace and tracing instance darkbuf creates.
pub const NS_PREFIX: &str = "dkb-";
/// Prefix of every device darkbuf creates.
pub const DEV_PREFIX: &str = "dkb";

fn base36(mut v: u64) -> String {
    const D: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if v == 0 {
        return "0".into();
    }
    let mut s = Vec::new();
    while v > 0 {
        s.push(D[(v % 36) as usize]);
        v /= 36;
    }
    s.reverse();
    String::from_utf8(s).unwrap_or_default()
}

/// The names of one run's objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Names {
    /// `dkb-<pid>-<seq>`: prefix of the namespaces and tracing instances.
    pub tag: String,
    pub ns_tx: String,
    pub ns_rx: String,
    pub dev_tx: String,
    pub dev_rx: String,
    pub tap: String,
    /// `[lan]` on veth: the client's namespace, its veth and the router's (`ns_tx`'s)
    /// end of that pair.
    pub ns_lan: String,
    pub dev_lan_client: String,
    pub dev_lan_router: String,
}

impl Names {
    pub fn new(pid: u32, seq: u32) -> Names {
        let tag = format!("{NS_PREFIX}{pid}-{seq}");
        let dev = format!("{DEV_PREFIX}{}{}", base36(pid as u64), base36((seq % 36) as u64));
        Names {
            ns_tx: format!("{tag}-tx"),
            ns_rx: format!("{tag}-rx"),
            dev_tx: format!("{dev}s"),
            dev_rx: format!("{dev}r"),
            tap: format!("{dev}t"),
            ns_lan: format!("{tag}-lan"),
            dev_lan_client: format!("{dev}c"),
            dev_lan_router: format!("{dev}l"),
            tag,
        }
    }

    /// Names for this process's `seq`-th run.
    pub fn for_run(seq: u32) -> Names {
        Names::new(std::process::id(), seq)
    }

    /// A glob, as tracefs event filters read `~`, that matches device `dev` of this
    /// process's every run: the run's sequence character (the second last) as `?`.
    /// `None` for a name that is not one of ours.
    pub fn any_run_glob(dev: &str) -> Option<String> {
        let n = dev.len();
        (dev.starts_with(DEV_PREFIX) && n >= DEV_PREFIX.len() + 3 && dev.is_ascii()).then(|| format!("{}?{}", &dev[..n - 2], &dev[n - 1..]))
    }
}

/// The pid in a namespace or instance name `dkb-<pid>-...`.
pub fn owner_pid(name: &str) -> Option<u32> {
    name.strip_prefix(NS_PREFIX)?.split('-').next()?.parse().ok()
}

/// Whether `pid` is a running darkbuf process (its comm starts with "darkbuf", as the CLI
/// and this crate's test binaries do). A pid reused by another program counts as dead.
pub fn owner_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    // A killed process may linger as a zombie until it is reaped: that is dead too.
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|t| t.rfind(')').map(|i| t[i + 1..].trim_start().starts_with(['Z', 'X'])))
        .unwrap_or(true);
    if zombie {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/comm")) {
        Ok(c) => c.trim().starts_with("darkbuf"),
        Err(_) => false,
    }
}

/// Something a darkbuf run left behind.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Leftover {
    /// "netns", "device" (in the root namespace), "trace-instance", "napi-thread" or
    /// "vm" (a `--backend vm` QEMU whose darkbuf is gone).
    pub kind: String,
    pub name: String,
    /// The pid in its name, if any.
    pub owner_pid: Option<u32>,
    /// Whether that process is still running (then it is in use, not a leftover).
    pub owner_alive: bool,
    /// What it costs while it stays (a tracing instance's enabled tracepoints).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<String>,
}

/// Set in the environment of darkbuf's agent inside a `--backend vm` guest.
pub const VM_GUEST_ENV: &str = "DARKBUF_VM_GUEST";

/// QEMU's `-name` for a `--backend vm` boot of darkbuf process PID.
pub fn vm_name(pid: u32) -> String {
    format!("darkbuf-vm-{pid}")
}

/// Scratch directories of `--backend vm` boots (`darkbuf-vm-PID-N` under `tmp`), with
/// the darkbuf pid in their name.
pub fn darkbuf_vm_scratch_dirs(tmp: &std::path::Path) -> Vec<(String, u32)> {
    let Ok(rd) = std::fs::read_dir(tmp) else { return Vec::new() };
    let mut out: Vec<(String, u32)> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let pid = name.strip_prefix("darkbuf-vm-")?.split('-').next()?.parse::<u32>().ok()?;
            e.path().is_dir().then(|| (e.path().display().to_string(), pid))
        })
        .collect();
    out.sort();
    out
}

/// QEMU processes of `--backend vm` boots, with the darkbuf pid their `-name` carries:
/// (qemu pid, darkbuf pid). A darkbuf killed with SIGKILL cannot stop its VM.
pub fn darkbuf_vm_processes() -> Vec<(u32, u32)> {
    let Ok(rd) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut out = Vec::new();
    for e in rd.filter_map(|e| e.ok()) {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { continue };
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        if !args.first().is_some_and(|a| a.ends_with(b"qemu-system-x86_64")) {
            continue;
        }
        // A zombie is dead already (its parent reaps it).
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')) {
            continue;
        }
        let owner = args
            .windows(2)
            .find(|w| w[0] == b"-name")
            .and_then(|w| std::str::from_utf8(w[1]).ok()?.strip_prefix("darkbuf-vm-")?.parse::<u32>().ok());
        if let Some(owner) = owner {
            out.push((pid, owner));
        }
    }
    out.sort();
    out
}

/// Namespaces named `dkb-*` (from /run/netns).
pub fn darkbuf_namespaces() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/run/netns")
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(NS_PREFIX))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Devices named `dkb*` in the root namespace (darkbuf never creates any there; a
/// veth could only be there if a run was killed between creating and moving it).
pub fn darkbuf_root_devices() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/sys/class/net")
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(DEV_PREFIX))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Threaded-NAPI kthreads of darkbuf devices: (pid, comm). They go away with their
/// device; one that outlives its namespace by more than a moment is a kernel leak, not
/// something darkbuf can remove.
pub fn darkbuf_napi_threads() -> Vec<(u32, String)> {
    napi_threads_matching(&format!("napi/{DEV_PREFIX}"))
}

/// kthreads whose comm starts with `prefix`.
pub fn napi_threads_matching(prefix: &str) -> Vec<(u32, String)> {
    let mut v = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
            if let Ok(c) = std::fs::read_to_string(format!("/proc/{pid}/comm")) {
                let c = c.trim();
                if c.starts_with(prefix) {
                    v.push((pid, c.to_string()));
                }
            }
        }
    }
    v.sort();
    v
}

/// The NAPI kthreads of device `dev` (comm `napi/<dev>-<id>`, cut at 15 characters).
pub fn napi_threads_of(dev: &str) -> Vec<u32> {
    let full = format!("napi/{dev}-");
    let cut: String = full.chars().take(15).collect();
    napi_threads_matching(&format!("napi/{dev}"))
        .into_iter()
        .filter(|(_, c)| c.starts_with(&cut) || full.starts_with(c.as_str()) && c.len() >= 15)
        .map(|(p, _)| p)
        .collect()
}

/// Tracing instances named `dkb-*` under the tracefs mount `root`.
pub fn darkbuf_trace_instances(root: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root.join("instances"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(NS_PREFIX))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn from_base36(s: &str) -> Option<u64> {
    let mut v: u64 = 0;
    for c in s.chars() {
        v = v.checked_mul(36)?.checked_add(c.to_digit(36)? as u64)?;
    }
    Some(v)
}

/// The pid encoded in a device name `dkb<pid36><seq36><role>`.
pub fn dev_owner_pid(dev: &str) -> Option<u32> {
    let rest = dev.strip_prefix(DEV_PREFIX)?;
    if rest.len() < 3 || !rest.is_ascii() {
        return None;
    }
    u32::try_from(from_base36(&rest[..rest.len() - 2])?).ok()
}

/// Everything named like darkbuf's, with whether its owner still runs.
pub fn find_leftovers() -> Vec<Leftover> {
    let mut out = Vec::new();
    let mk = |kind: &str, name: String| {
        let owner = owner_pid(&name);
        Leftover { kind: kind.into(), owner_alive: owner.is_some_and(owner_alive), owner_pid: owner, name, cost: None }
    };
    for n in darkbuf_namespaces() {
        out.push(mk("netns", n));
    }
    for n in darkbuf_root_devices() {
        // A running darkbuf has its veth pair here for a moment, between creating and
        // moving it: the pid in the name tells.
        let owner = dev_owner_pid(&n);
        out.push(Leftover { kind: "device".into(), owner_alive: owner.is_some_and(owner_alive), owner_pid: owner, name: n, cost: None });
    }
    if let Some(root) = crate::trace::tracefs_mount() {
        for n in darkbuf_trace_instances(&root) {
            let cost = instance_cost(&root.join("instances").join(&n));
            out.push(Leftover { cost, ..mk("trace-instance", n) });
        }
    }
    for (pid, marker) in crate::trace::mount_markers() {
        let mnt = std::fs::read_to_string(&marker).unwrap_or_default();
        out.push(Leftover {
            kind: "tracefs-mount".into(),
            name: format!("{} (mounted by darkbuf pid {pid})", mnt.trim()),
            owner_pid: Some(pid),
            owner_alive: owner_alive(pid),
            cost: None,
        });
    }
    // Inside a --backend vm guest the host's processes and scratch directories are
    // not ours to judge: the guest sees the host's /tmp, but not its processes.
    let in_guest = std::env::var_os(VM_GUEST_ENV).is_some();
    for (pid, owner) in darkbuf_vm_processes().into_iter().filter(|_| !in_guest) {
        out.push(Leftover { kind: "vm".into(), name: format!("qemu pid {pid}"), owner_pid: Some(owner), owner_alive: owner_alive(owner), cost: None });
    }
    for (dir, owner) in darkbuf_vm_scratch_dirs(&std::env::temp_dir()).into_iter().filter(|_| !in_guest) {
        out.push(Leftover { kind: "vm-scratch".into(), name: dir, owner_pid: Some(owner), owner_alive: owner_alive(owner), cost: None });
    }
    for (pid, comm) in darkbuf_napi_threads() {
        // comm = "napi/<dev>-<id>", cut at 15 characters.
        let dev = comm.trim_start_matches("napi/").split('-').next().unwrap_or("");
        let owner = dev_owner_pid(dev);
        out.push(Leftover {
            kind: "napi-thread".into(),
            name: format!("{comm} (pid {pid})"),
            owner_alive: owner.is_some_and(owner_alive),
            owner_pid: owner,
            cost: None,
        });
    }
    out
}

/// What a tracing instance costs while it stays: its enabled events, each a filter
/// the kernel evaluates on every packet that passes the tracepoint on any device of
/// the machine (an enabled event in any instance turns its tracepoint on system-wide).
/// `None` when none is enabled (then it only holds its ring buffer's memory).
fn instance_cost(dir: &std::path::Path) -> Option<String> {
    let mut on = Vec::new();
    for sys in std::fs::read_dir(dir.join("events")).ok()?.flatten() {
        for ev in std::fs::read_dir(sys.path()).into_iter().flatten().flatten() {
            let enabled = std::fs::read_to_string(ev.path().join("enable")).is_ok_and(|t| t.trim() == "1");
            if enabled {
                on.push(format!("{}:{}", sys.file_name().to_string_lossy(), ev.file_name().to_string_lossy()));
            }
        }
    }
    if on.is_empty() {
        return None;
    }
    on.sort();
    let n = on.len();
    let mut cost = format!(
        "{n} tracepoint{} enabled ({}): {} on every device of this machine and {} a filter every time \
         (net:* on every packet, napi:napi_poll on every NAPI poll) until the instance is removed",
        if n == 1 { "" } else { "s" },
        on.join(", "),
        if n == 1 { "it fires" } else { "they fire" },
        if n == 1 { "runs" } else { "each runs" },
    );
    if on.iter().any(|e| e.starts_with("net:")) {
        // crates/darkbuf-kernel/README.md, "--probe-trace": measured with these three.
        cost.push_str("; --probe-trace's three cost a 270k packets/s consumer a tenth of its rate on the development VM");
    }
    Some(cost)
}

/// Pids of other darkbuf processes that have namespaces or devices right now: runs
/// that are active (they load the same CPUs and kernel, and disturb this one).
pub fn other_active_runs() -> Vec<u32> {
    let me = std::process::id();
    let mut pids: Vec<u32> = darkbuf_namespaces()
        .iter()
        .filter_map(|n| owner_pid(n))
        .chain(darkbuf_root_devices().iter().filter_map(|d| dev_owner_pid(d)))
        .filter(|&p| p != me && owner_alive(p))
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Removes the leftovers whose owner is not running. Returns (removed, errors).
pub fn remove_leftovers(items: &[Leftover]) -> (Vec<String>, Vec<String>) {
    let mut removed = Vec::new();
    let mut errors = Vec::new();
    for l in items.iter().filter(|l| !l.owner_alive) {
        let r = match l.kind.as_str() {
            "netns" => cmd::run("ip", &["netns", "del", &l.name]).map(|o| (o.ok(), o.stderr)),
            "device" => cmd::run("ip", &["link", "del", &l.name]).map(|o| (o.ok(), o.stderr)),
            "trace-instance" => match crate::trace::tracefs_mount() {
                Some(root) => {
                    let dir = root.join("instances").join(&l.name);
                    crate::trace::disable_instance(&dir);
                    Ok(match std::fs::remove_dir(&dir) {
                        Ok(()) => (true, String::new()),
                        Err(e) => (false, e.to_string()),
                    })
                }
                None => Ok((false, "tracefs is not mounted".into())),
            },
            "tracefs-mount" => {
                let pid = l.owner_pid.unwrap_or(0);
                let marker = format!("{}{pid}", crate::trace::MOUNT_MARKER_PREFIX);
                let mnt = std::fs::read_to_string(&marker).unwrap_or_default();
                let mnt = mnt.trim();
                // Another running darkbuf may be using the same mount.
                let in_use = crate::trace::mount_markers().iter().any(|(p, _)| *p != pid && owner_alive(*p));
                if !in_use && !mnt.is_empty() && crate::trace::tracefs_mount().is_some_and(|m| m == std::path::Path::new(mnt)) {
                    crate::trace::unmount(std::path::Path::new(mnt));
                }
                Ok(match std::fs::remove_file(&marker) {
                    Ok(()) => (true, String::new()),
                    Err(e) => (false, e.to_string()),
                })
            }
            "vm" => {
                let pid = l.name.trim_start_matches("qemu pid ").parse::<i32>().unwrap_or(0);
                // SAFETY: kill(2) on a QEMU darkbuf started (its -name says so).
                let r = if pid > 0 { unsafe { libc::kill(pid, libc::SIGKILL) } } else { -1 };
                let err = std::io::Error::last_os_error().to_string();
                // Gone (or a zombie for its parent to reap) within a second.
                let end = std::time::Instant::now() + std::time::Duration::from_secs(2);
                while r == 0 && darkbuf_vm_processes().iter().any(|(p, _)| *p as i32 == pid) && std::time::Instant::now() < end {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Ok(if r == 0 { (true, String::new()) } else { (false, err) })
            }
            "vm-scratch" => Ok(match std::fs::remove_dir_all(&l.name) {
                Ok(()) => (true, String::new()),
                Err(e) => (false, e.to_string()),
            }),
            // A NAPI kthread goes away with its device; nothing to remove directly.
            _ => continue,
        };
        match r {
            Ok((true, _)) => removed.push(format!("{} {}", l.kind, l.name)),
            Ok((false, e)) => errors.push(format!("{} {}: {}", l.kind, l.name, e.trim())),
            Err(e) => errors.push(format!("{} {}: {e}", l.kind, l.name)),
        }
    }
    (removed, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_device_glob_matches_every_run_of_the_process_and_no_other() {
        let (a, b, c) = (Names::new(4242, 3), Names::new(4242, 17), Names::new(4243, 3));
        let g = Names::any_run_glob(&a.dev_rx).unwrap();
        let m = |name: &str| name.len() == g.len() && g.chars().zip(name.chars()).all(|(p, x)| p == '?' || p == x);
        assert!(m(&a.dev_rx) && m(&b.dev_rx), "{g}");
        assert!(!m(&a.dev_tx) && !m(&c.dev_rx), "{g}");
        assert_eq!(Names::any_run_glob("eth0"), None);
    }

    #[test]
    fn names_fit_ifnamsiz_and_comm() {
        let n = Names::new(4_194_304, 999);
        assert_eq!(n.ns_tx, "dkb-4194304-999-tx");
        assert_eq!(n.ns_rx, "dkb-4194304-999-rx");
        // 4194304 = "2hwcg" in base 36 (2*36^4 + 17*36^3 + 32*36^2 + 12*36 + 16), 999 % 36 = 27 = "r".
        assert_eq!(n.dev_tx, "dkb2hwcgrs");
        assert_eq!(n.dev_rx, "dkb2hwcgrr");
        assert_eq!(n.tap, "dkb2hwcgrt");
        for d in [&n.dev_tx, &n.dev_rx, &n.tap] {
            assert!(d.len() <= 10, "{d}");
        }
        assert_eq!(owner_pid(&n.ns_rx), Some(4_194_304));
        assert_eq!(dev_owner_pid(&n.dev_rx), Some(4_194_304));
        assert_eq!(dev_owner_pid(&Names::new(77, 3).tap), Some(77));
        assert_eq!(dev_owner_pid("eth0"), None);
        assert_eq!(owner_pid("dkb-x-1-tx"), None);
        assert_eq!(owner_pid("other"), None);
    }

    #[test]
    fn base36_digits() {
        assert_eq!(base36(0), "0");
        assert_eq!(base36(35), "z");
        assert_eq!(base36(36), "10");
    }

    #[test]
    fn this_process_is_alive() {
        assert!(owner_alive(std::process::id()));
        assert!(!owner_alive(u32::MAX));
    }
}
