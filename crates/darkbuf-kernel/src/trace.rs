//! Counting NAPI polls with the `napi:napi_poll` tracepoint, through tracefs.
//!
//! No event is ever read: each count gets its own tracing instance with a filter on the
//! event, in overwrite mode, and the number of events written on a CPU is that CPU's
//! `entries + overrun` in `per_cpu/cpuN/stats` (ring_buffer_entries_cpu() is
//! entries - overrun - read; nothing reads). One instance counts every poll of the
//! device, a second only the polls that used the whole budget (`work >= 64`, veth's
//! NAPI_POLL_WEIGHT). The packets per poll then come from the device's packet counter.
//!
//! tracefs is mounted at /sys/kernel/tracing if it is not mounted anywhere, and
//! unmounted again when the counter is dropped.

use std::path::{Path, PathBuf};

/// Where tracefs is mounted, from /proc/mounts.
pub fn tracefs_mount() -> Option<PathBuf> {
    let m = std::fs::read_to_string("/proc/mounts").ok()?;
    for line in m.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 3 && f[2] == "tracefs" {
            return Some(PathBuf::from(f[1]));
        }
    }
    None
}

const DEFAULT_MOUNT: &str = "/sys/kernel/tracing";

/// Marker files `/run/darkbuf-tracefs.<pid>`: this pid mounted tracefs and has not
/// unmounted it yet (a killed run leaves one; `darkbuf check --cleanup` unmounts).
pub const MOUNT_MARKER_PREFIX: &str = "/run/darkbuf-tracefs.";

/// (pid, marker path) of every tracefs mount marker.
pub fn mount_markers() -> Vec<(u32, PathBuf)> {
    let mut v = Vec::new();
    let (dir, prefix) = MOUNT_MARKER_PREFIX.rsplit_once('/').unwrap_or(("/run", "darkbuf-tracefs."));
    if let Ok(rd) = std::fs::read_dir(if dir.is_empty() { "/" } else { dir }) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix(prefix).and_then(|p| p.parse::<u32>().ok()) {
                v.push((pid, e.path()));
            }
        }
    }
    v.sort();
    v
}

/// Unmounts tracefs at `root` (lazily).
pub fn unmount(root: &Path) {
    if let Ok(t) = std::ffi::CString::new(root.to_string_lossy().as_bytes()) {
        // SAFETY: valid path string. MNT_DETACH so a busy mount still goes away.
        unsafe {
            libc::umount2(t.as_ptr(), libc::MNT_DETACH);
        }
    }
}

/// A hold on the process's tracefs mount, ours or pre-existing. Every `Tracefs` of the
/// process shares one mount: a mount of ours goes when the last holder drops (a run's
/// NAPI poll counter is dropped on a thread of its own while the probe trace is still
/// read, and an unmount under the reader was "No such file or directory").
pub struct Tracefs {
    pub root: PathBuf,
    mounted_by_us: bool,
}

/// The process's mount: its holders, its root, and whether this process mounted it.
static MOUNT: std::sync::Mutex<(usize, Option<(PathBuf, bool)>)> = std::sync::Mutex::new((0, None));

impl Tracefs {
    /// The existing mount, or a new one at /sys/kernel/tracing.
    pub fn get() -> Result<Tracefs, String> {
        let mut m = MOUNT.lock().unwrap_or_else(|p| p.into_inner());
        if let (n, Some((root, ours))) = &mut *m {
            *n += 1;
            return Ok(Tracefs { root: root.clone(), mounted_by_us: *ours });
        }
        let (root, ours) = match tracefs_mount() {
            Some(root) => (root, false),
            None => (Self::mount()?, true),
        };
        *m = (1, Some((root.clone(), ours)));
        Ok(Tracefs { root, mounted_by_us: ours })
    }

    fn mount() -> Result<PathBuf, String> {
        let target = std::ffi::CString::new(DEFAULT_MOUNT).map_err(|e| e.to_string())?;
        let src = std::ffi::CString::new("nodev").map_err(|e| e.to_string())?;
        let fstype = std::ffi::CString::new("tracefs").map_err(|e| e.to_string())?;
        // SAFETY: valid NUL-terminated strings, no data argument.
        let rc = unsafe { libc::mount(src.as_ptr(), target.as_ptr(), fstype.as_ptr(), 0, std::ptr::null()) };
        if rc != 0 {
            return Err(format!("cannot mount tracefs at {DEFAULT_MOUNT}: {}", std::io::Error::last_os_error()));
        }
        let _ = std::fs::write(format!("{MOUNT_MARKER_PREFIX}{}", std::process::id()), DEFAULT_MOUNT);
        Ok(PathBuf::from(DEFAULT_MOUNT))
    }

    pub fn has_event(&self, system: &str, event: &str) -> bool {
        self.root.join("events").join(system).join(event).is_dir()
    }

    pub fn mounted_by_us(&self) -> bool {
        self.mounted_by_us
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        let mut m = MOUNT.lock().unwrap_or_else(|p| p.into_inner());
        m.0 = m.0.saturating_sub(1);
        if m.0 > 0 {
            return;
        }
        m.1 = None;
        if self.mounted_by_us {
            unmount(&self.root);
            let _ = std::fs::remove_file(format!("{MOUNT_MARKER_PREFIX}{}", std::process::id()));
        }
    }
}

/// A tracing instance's enabled events cost every packet of the machine a filter
/// evaluation for as long as the instance lives, and a SIGKILL cannot be caught: a
/// small `sh` in its own session waits on a pipe only this process holds, and when the
/// pipe closes (this process ended, however it ended) turns the instance's events off
/// and removes it. After a normal end the instance is already gone and it does nothing.
pub struct InstanceReaper {
    pipe: Option<std::process::ChildStdin>,
    child: std::process::Child,
}

/// The reaper's script; `$1` is the instance directory, `$2` how many times to try its
/// removal. The pipe can close before the dying process has closed its other files: an
/// instance file it still holds open makes the kernel's `__remove_instance()` refuse
/// with EBUSY, so the removal is tried again every 0.1 s.
const REAPER_SCRIPT: &str = "read _ignored; i=0; while [ -d \"$1\" ] && [ $i -lt \"$2\" ]; do \
     echo 0 > \"$1/tracing_on\"; echo 0 > \"$1/events/enable\"; rmdir \"$1\" && exit 0; \
     i=$((i+1)); sleep 0.1; done 2>/dev/null";

impl InstanceReaper {
    /// Creates the tracing instance `dir` with its reaper already watching it: the
    /// reaper starts first, so a SIGKILL at any point leaves either no instance or one
    /// that is watched (created first, a kill before the reaper's exec left it behind).
    /// When the directory cannot be made, the reaper is stopped before it could act, so
    /// an instance of that name that exists already is left alone.
    pub fn create(dir: &Path) -> Result<InstanceReaper, String> {
        InstanceReaper::create_with_tries(dir, 50)
    }

    fn create_with_tries(dir: &Path, tries: u32) -> Result<InstanceReaper, String> {
        let reaper = InstanceReaper::spawn_with_tries(dir, tries)?;
        if let Err(e) = std::fs::create_dir(dir) {
            reaper.disarm();
            return Err(format!("cannot create tracing instance {}: {e}", dir.display()));
        }
        Ok(reaper)
    }

    /// Stops the reaper without letting it act (SIGKILL, then reaped).
    fn disarm(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Watches instance `dir` for the life of this process (tries its removal for up to
    /// 5 s once this process is gone).
    pub fn spawn(dir: &Path) -> Result<InstanceReaper, String> {
        InstanceReaper::spawn_with_tries(dir, 50)
    }

    fn spawn_with_tries(dir: &Path, tries: u32) -> Result<InstanceReaper, String> {
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", REAPER_SCRIPT, "darkbuf-reaper"])
            .arg(dir)
            .arg(tries.to_string())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        // SAFETY: setsid() is async-signal-safe; in its own session the reaper gets
        // neither the terminal's SIGINT nor its SIGHUP, which are darkbuf's to handle.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|e| format!("cannot start the tracing instance's reaper (sh): {e}"))?;
        Ok(InstanceReaper { pipe: child.stdin.take(), child })
    }
}

impl Drop for InstanceReaper {
    fn drop(&mut self) {
        // Closing the pipe lets the reaper run (the instance is gone by now) and end;
        // waiting for it leaves no zombie behind a long kernel sweep.
        self.pipe.take();
        let _ = self.child.wait();
    }
}

/// Turns off every event of an instance directory (before removing it).
pub fn disable_instance(dir: &Path) {
    let _ = std::fs::write(dir.join("tracing_on"), "0");
    let _ = std::fs::write(dir.join("events/enable"), "0");
}

/// Counts of one filtered event in one instance.
struct Counter {
    dir: PathBuf,
    _reaper: Option<InstanceReaper>,
}

impl Counter {
    fn create(fs: &Tracefs, name: &str, filter: &str) -> Result<Counter, String> {
        let dir = fs.root.join("instances").join(name);
        let reaper = InstanceReaper::create(&dir)?;
        let c = Counter { dir, _reaper: Some(reaper) };
        // A small buffer: events are only counted, never read.
        let _ = std::fs::write(c.dir.join("buffer_size_kb"), "16");
        let _ = std::fs::write(c.dir.join("options/overwrite"), "1");
        c.filter(filter)?;
        let _ = std::fs::write(c.dir.join("tracing_on"), "1");
        Ok(c)
    }

    /// Counts the events that pass `filter` from now on (a new instance: there is no
    /// filter to replace, so nothing to wait for). Counts are cumulative over the
    /// instance's life: callers difference them.
    fn filter(&self, filter: &str) -> Result<(), String> {
        let ev = self.dir.join("events/napi/napi_poll");
        std::fs::write(ev.join("filter"), filter).map_err(|e| format!("cannot set the napi_poll filter `{filter}`: {e}"))?;
        std::fs::write(ev.join("enable"), "1").map_err(|e| format!("cannot enable napi:napi_poll: {e}"))
    }

    /// Events written so far, summed over CPUs.
    fn count(&self) -> Result<u64, String> {
        let mut total = 0u64;
        let rd = std::fs::read_dir(self.dir.join("per_cpu")).map_err(|e| e.to_string())?;
        for e in rd.flatten() {
            let text = std::fs::read_to_string(e.path().join("stats")).map_err(|e| e.to_string())?;
            total += parse_cpu_stats(&text);
        }
        Ok(total)
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        if self.dir.as_os_str().is_empty() {
            return; // moved into the pool
        }
        disable_instance(&self.dir);
        let _ = std::fs::write(self.dir.join("events/napi/napi_poll/filter"), "0");
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// `entries + overrun` of one `per_cpu/cpuN/stats` file.
pub fn parse_cpu_stats(text: &str) -> u64 {
    let mut n = 0;
    for line in text.lines() {
        let mut it = line.splitn(2, ':');
        let (k, v) = (it.next().unwrap_or("").trim(), it.next().unwrap_or("").trim());
        if k == "entries" || k == "overrun" {
            n += v.parse::<u64>().unwrap_or(0);
        }
    }
    n
}

/// NAPI poll counters for one device. Drop order: counters first, then the mount.
pub struct NapiPollCounter {
    all: Counter,
    full: Counter,
    _fs: Tracefs,
    /// The two filters (the pool's key).
    filters: (String, String),
}

/// Inside a `--backend vm` guest ([`crate::names::VM_GUEST_ENV`]) the counter's two
/// instances are made once and kept, their event on, for the agent's next runs. Making an
/// instance populates a copy of every event's directory (half a second per run in a TCG
/// guest, 6.1, before eventfs made them on demand), and removing one, replacing its
/// filter or turning its event off waits for an RCU grace period
/// (`tracepoint_synchronize_unregister()`, `tracepoint_probe_unregister()` ->
/// `cond_synchronize_rcu()`); in the guest such a wait (`__wait_rcu_gp`, seen in the
/// heartbeat's kernel stack) stalled a sweep for minutes, three times in thirteen sweeps. So
/// the filters match the receiving device of every run of the process
/// ([`crate::names::Names::any_run_glob`]; the runs are one at a time and each removes its
/// devices) and are never changed: a run after the first does nothing to tracefs. The
/// guest ends with the VM; on a host every run makes and removes its own, as before
/// (their reapers watch them either way).
static POOL: std::sync::Mutex<Option<Pooled>> = std::sync::Mutex::new(None);

/// What the pool keeps: the mount it holds, the two counters and their filters.
type Pooled = (Tracefs, Counter, Counter, (String, String));

/// Removes the pool's instances (a guest agent's end, or a test that played one).
pub fn release_pool() {
    let pooled = POOL.lock().unwrap_or_else(|p| p.into_inner()).take();
    drop(pooled);
}

fn pooling() -> bool {
    std::env::var_os(crate::names::VM_GUEST_ENV).is_some()
}

/// Moves `c` out, leaving an empty shell whose drop does nothing.
fn take_counter(c: &mut Counter) -> Counter {
    Counter { dir: std::mem::take(&mut c.dir), _reaper: c._reaper.take() }
}

impl Drop for NapiPollCounter {
    fn drop(&mut self) {
        if !pooling() {
            return;
        }
        // Left on: turning it off unregisters the probe, which waits for an RCU grace
        // period (`tracepoint_probe_unregister()` -> `cond_synchronize_rcu()`), and one
        // such wait never returned in a TCG guest. No device matches between runs.
        let mut pool = POOL.lock().unwrap_or_else(|p| p.into_inner());
        if pool.is_none() {
            if let Ok(fs) = Tracefs::get() {
                *pool = Some((fs, take_counter(&mut self.all), take_counter(&mut self.full), std::mem::take(&mut self.filters)));
            }
        }
    }
}

/// (polls, polls that used the whole budget).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PollCounts {
    pub polls: u64,
    pub full_budget: u64,
}

impl NapiPollCounter {
    /// Starts counting `napi:napi_poll` events of device `dev`. `tag` names the
    /// instances (`<tag>-polls`, `<tag>-full`); `budget` is the NAPI weight.
    pub fn start(dev: &str, tag: &str, budget: u32) -> Result<NapiPollCounter, String> {
        let pooling = pooling();
        let dev_filter = match crate::names::Names::any_run_glob(dev) {
            Some(g) if pooling => format!("dev_name ~ \"{g}\""),
            _ => format!("dev_name == \"{dev}\""),
        };
        let filters = (dev_filter.clone(), format!("{dev_filter} && work >= {budget}"));
        if pooling {
            // The pool's instances if their filters are these (others go: their drop
            // removes them).
            if let Some((fs, all, full, f)) = POOL.lock().unwrap_or_else(|p| p.into_inner()).take() {
                if f == filters {
                    return Ok(NapiPollCounter { all, full, _fs: fs, filters });
                }
            }
        }
        let fs = Tracefs::get()?;
        if !fs.has_event("napi", "napi_poll") {
            return Err("this kernel has no napi:napi_poll tracepoint".into());
        }
        if !fs.root.join("instances").is_dir() {
            return Err("tracefs has no instances directory".into());
        }
        // Both instances at once (each is a directory of ring buffers and a reaper's exec).
        let (all, full) = std::thread::scope(|sc| {
            let all = sc.spawn(|| Counter::create(&fs, &format!("{tag}-polls"), &filters.0));
            let full = Counter::create(&fs, &format!("{tag}-full"), &filters.1);
            (all.join().unwrap_or_else(|_| Err("the thread that made a tracing instance panicked".into())), full)
        });
        Ok(NapiPollCounter { all: all?, full: full?, _fs: fs, filters })
    }

    pub fn counts(&self) -> Result<PollCounts, String> {
        Ok(PollCounts { polls: self.all.count()?, full_budget: self.full.count()? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reaper does its work when the pipe closes, and only then (a plain directory
    /// stands in for the instance: tracing_on is written, the rest fails quietly).
    #[test]
    fn the_reaper_turns_the_instance_off_when_the_pipe_closes() {
        let dir = std::env::temp_dir().join(format!("darkbuf-reaper-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let reaper = InstanceReaper::spawn_with_tries(&dir, 1).unwrap();
        assert!(!dir.join("tracing_on").exists());
        drop(reaper);
        assert_eq!(std::fs::read_to_string(dir.join("tracing_on")).unwrap(), "0\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `create()` makes the directory with its reaper already watching it; when the
    /// directory exists already, it fails and its reaper is stopped before it could
    /// touch what is there (a plain directory stands in for the instance).
    #[test]
    fn create_watches_what_it_made_and_leaves_what_it_did_not() {
        let dir = std::env::temp_dir().join(format!("darkbuf-reaper-create-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let reaper = InstanceReaper::create_with_tries(&dir, 1).unwrap();
        assert!(dir.is_dir());
        drop(reaper);
        assert_eq!(std::fs::read_to_string(dir.join("tracing_on")).unwrap(), "0\n");
        std::fs::remove_file(dir.join("tracing_on")).unwrap();
        let err = InstanceReaper::create_with_tries(&dir, 1).err().expect("the directory exists");
        assert!(err.contains("cannot create tracing instance"), "{err}");
        assert!(!dir.join("tracing_on").exists(), "the disarmed reaper wrote into an instance it did not make");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// As root: every holder shares the process's mount, and a mount of ours stays
    /// while any holder does (a run drops its NAPI counter while the probe trace reads).
    #[test]
    fn tracefs_stays_mounted_while_a_holder_remains() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return;
        }
        let (Ok(a), Ok(b)) = (Tracefs::get(), Tracefs::get()) else { return };
        assert_eq!(a.root, b.root);
        assert_eq!(a.mounted_by_us(), b.mounted_by_us());
        let ours = a.mounted_by_us();
        drop(a);
        assert!(b.root.join("instances").is_dir(), "the mount went with the first holder");
        let root = b.root.clone();
        drop(b);
        if ours && MOUNT.lock().unwrap().0 == 0 {
            assert!(tracefs_mount().is_none_or(|r| r != root), "our mount outlived its last holder");
        }
    }

    #[test]
    fn cpu_stats_sum_entries_and_overrun() {
        let t = "entries: 12\noverrun: 30\ncommit overrun: 0\nbytes: 640\noldest event ts:  1.0\nnow ts:  2.0\ndropped events: 0\nread events: 0\n";
        assert_eq!(parse_cpu_stats(t), 42);
        assert_eq!(parse_cpu_stats(""), 0);
    }
}
