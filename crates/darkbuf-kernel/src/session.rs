//! Long-lived helpers in a run's namespaces, so that a run's many small reads and writes
//! do not each cost a fork and exec of `ip netns exec`, a shell and the tool.
//!
//! - [`NsThread`]: one thread of darkbuf's own per namespace for the whole run, inside
//!   the namespace as `ip netns exec` puts a command (setns, /sys remounted). Sysfs and
//!   procfs are read and written by the thread (no exec at all); `ethtool` is one exec
//!   started from it. (It replaced one `ip netns exec NS sh` per namespace: two execs,
//!   about half a second in a TCG guest.)
//! - [`Batch`]: one `tc -n NS -s -j -batch -` or `ip -n NS -s -j -batch -` for the whole
//!   run, fed one command a line; each answer is one line of JSON (iproute2 flushes its
//!   JSON writer after each batch command).
//!
//! Natively an exec costs about a millisecond; in a TCG guest (`--backend vm`) a fork and
//! exec of `ip` or `tc` took 150-240 ms, of `ip netns exec NS true` 295 ms, and a run's
//! setup made about 40 of them.

use crate::cmd::{self, Output};
use crate::error::{KernelError, Result};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a [`Batch`] answer may take before the batch is given up (its caller then
/// runs the tool once instead).
const BATCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Quotes `s` for sh: `'...'`, a `'` inside as `'\''`.
pub fn sh_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c)) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// A child's output, a line at a time, from a reader thread (so a wait can be bounded).
fn lines_of(r: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(r);
        loop {
            let mut l = String::new();
            match r.read_line(&mut l) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if tx.send(l).is_err() {
                        break;
                    }
                }
            }
        }
    });
    rx
}

struct Proc {
    child: Child,
    stdin: Option<ChildStdin>,
    out: Receiver<String>,
    err: Option<Receiver<String>>,
    /// Lines written to stdin so far (iproute2 numbers a batch's lines from 1).
    lines: usize,
}

impl Proc {
    fn spawn(prog: &str, args: &[&str], keep_stderr: bool) -> std::io::Result<Proc> {
        Self::spawn_cmd(Command::new(prog), args, keep_stderr)
    }

    fn spawn_cmd(mut cmd: Command, args: &[&str], keep_stderr: bool) -> std::io::Result<Proc> {
        let mut child = cmd
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if keep_stderr { Stdio::piped() } else { Stdio::null() })
            .env("LC_ALL", "C")
            .spawn()?;
        let stdin = child.stdin.take();
        let out = lines_of(child.stdout.take().expect("piped stdout"));
        let err = child.stderr.take().map(lines_of);
        Ok(Proc { child, stdin, out, err, lines: 0 })
    }

    /// Closes stdin (the shell or batch ends at EOF) and reaps the child, killing it
    /// after a second.
    fn close(&mut self) {
        self.stdin = None;
        let end = Instant::now() + Duration::from_secs(1);
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) if Instant::now() >= end => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// One thread of this process inside a namespace for a whole run (see the module
/// docs): it entered the namespace as `ip netns exec` does (iproute2's
/// `netns_switch()`: setns, its own mount namespace, /sys remounted so that
/// /sys/class/net shows the namespace's devices), reads and writes sysfs and procfs
/// itself, and starts `ethtool` from there (a child inherits the thread's namespaces).
pub struct NsThread {
    ns: String,
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    handle: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// Enters namespace `ns` in the calling thread the way `ip netns exec` does
/// (iproute2 lib/namespace.c, `netns_switch()`): setns(2) into /run/netns/NS, then a
/// mount namespace of the thread's own whose mounts do not propagate back
/// (`MS_SLAVE | MS_REC` on /), and a sysfs of the namespace on /sys. Nothing outside
/// the thread (and the children it starts) sees the new mounts; they go with it.
fn enter_like_ip_netns_exec(ns: &str) -> std::io::Result<()> {
    use std::ffi::CString;
    let cvt = |r: libc::c_int, what: &str| {
        if r == 0 {
            Ok(())
        } else {
            let e = std::io::Error::last_os_error();
            Err(std::io::Error::new(e.kind(), format!("{what}: {e}")))
        }
    };
    crate::load::enter_netns(ns)?;
    // SAFETY: plain system calls on this thread, with NUL-terminated strings that outlive them.
    unsafe {
        cvt(libc::unshare(libc::CLONE_NEWNS), "unshare(CLONE_NEWNS)")?;
        let root = CString::new("/").expect("no NUL");
        let none = CString::new("none").expect("no NUL");
        let empty = CString::new("").expect("no NUL");
        cvt(
            libc::mount(empty.as_ptr(), root.as_ptr(), none.as_ptr(), libc::MS_SLAVE | libc::MS_REC, std::ptr::null()),
            "making / a slave mount",
        )?;
        let sys = CString::new("/sys").expect("no NUL");
        let sysfs = CString::new("sysfs").expect("no NUL");
        let name = CString::new(ns).map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "NUL in a namespace name"))?;
        let mut flags = 0;
        if libc::umount2(sys.as_ptr(), libc::MNT_DETACH) != 0 {
            // As iproute2: no sysfs there, or one that cannot be unmounted; a read-only
            // one cannot be shadowed by a read-write one.
            let mut st: libc::statvfs = std::mem::zeroed();
            if libc::statvfs(sys.as_ptr(), &mut st) == 0 && st.f_flag & libc::ST_RDONLY != 0 {
                flags = libc::MS_RDONLY;
            }
        }
        cvt(libc::mount(name.as_ptr(), sys.as_ptr(), sysfs.as_ptr(), flags, std::ptr::null()), "mounting the namespace's sysfs on /sys")?;
    }
    Ok(())
}

impl NsThread {
    /// Starts the thread and waits until it is inside `ns`.
    pub fn start(ns: &str) -> Result<NsThread> {
        let (tx, rx) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::sync_channel::<std::io::Result<()>>(1);
        let name = ns.to_string();
        let handle = std::thread::Builder::new()
            .name(format!("ns {ns}"))
            .spawn(move || {
                let r = enter_like_ip_netns_exec(&name);
                let ok = r.is_ok();
                let _ = ready_tx.send(r);
                if ok {
                    while let Ok(job) = rx.recv() {
                        job();
                    }
                }
            })
            .map_err(|e| KernelError::Internal(format!("cannot start a thread for namespace {ns}: {e}")))?;
        let entered = ready_rx.recv().unwrap_or_else(|_| Err(std::io::Error::other("the thread ended")));
        if let Err(e) = entered {
            let _ = handle.join();
            return Err(KernelError::Unavailable(format!("cannot enter network namespace {ns} as `ip netns exec` does: {e}")));
        }
        Ok(NsThread { ns: ns.to_string(), jobs: Mutex::new(Some(tx)), handle: Mutex::new(Some(handle)) })
    }

    pub fn ns(&self) -> &str {
        &self.ns
    }

    /// Runs `f` in the namespace's thread and returns its value; Err when the thread
    /// has ended.
    pub fn call<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> std::io::Result<T> {
        let gone = || std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the namespace's thread has ended");
        let (rtx, rrx) = mpsc::sync_channel(1);
        {
            let g = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
            let tx = g.as_ref().ok_or_else(gone)?;
            tx.send(Box::new(move || {
                let _ = rtx.send(f());
            }))
            .map_err(|_| gone())?;
        }
        rrx.recv().map_err(|_| gone())
    }

    /// `prog args...` in the namespace (bounded by [`cmd::COMMAND_TIMEOUT`], as every command).
    pub fn run(&self, prog: &str, args: &[&str]) -> std::io::Result<Output> {
        let prog = prog.to_string();
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        self.call(move || {
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            cmd::run(&prog, &a)
        })?
    }

    /// As [`cmd::must_in`]: `prog args` must succeed; its failure names the command.
    pub fn must(&self, prog: &str, args: &[&str]) -> Result<Output> {
        let o = match self.run(prog, args) {
            Ok(o) => o,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(cmd::not_installed(prog, e)),
            Err(e) => return Err(KernelError::Internal(format!("in namespace {}: {e}", self.ns))),
        };
        if !o.ok() {
            return Err(KernelError::Internal(format!(
                "`ip netns exec {} {}` failed ({}): {}",
                self.ns,
                cmd::show(prog, args),
                o.ended(),
                o.reason()
            )));
        }
        Ok(o)
    }

    /// Writes each `(path, value)` in order; stops at the first file that cannot be
    /// written and names it, as [`cmd::write_files_in`].
    pub fn write_files(&self, files: &[(String, String)]) -> Result<()> {
        if files.is_empty() {
            return Ok(());
        }
        let list = files.to_vec();
        let r = self
            .call(move || {
                for (p, v) in &list {
                    if let Err(e) = write_sysfs(p, v) {
                        return Err(format!("cannot write `{v}` to {p}: {e}"));
                    }
                }
                Ok(())
            })
            .map_err(|e| KernelError::Internal(format!("in namespace {}: {e}", self.ns)))?;
        r.map_err(|m| KernelError::Internal(format!("{m} (in namespace {})", self.ns)))
    }

    /// Writes one file, as [`cmd::write_file_in`].
    pub fn write_file(&self, path: &str, value: &str) -> Result<()> {
        self.write_files(&[(path.to_string(), value.to_string())])
    }

    /// Whether `path` is a directory in the namespace's view.
    pub fn is_dir(&self, path: &str) -> bool {
        let p = path.to_string();
        self.call(move || std::path::Path::new(&p).is_dir()).unwrap_or(false)
    }

    /// A file in the namespace's view (/sys is the namespace's).
    pub fn read(&self, path: &str) -> Option<String> {
        let p = path.to_string();
        self.call(move || std::fs::read_to_string(&p).ok()).ok().flatten()
    }

    /// A file of the namespace's /proc/net (`/proc/thread-self/net`: /proc/net is the
    /// process's leader's).
    pub fn read_proc_net(&self, file: &str) -> Option<String> {
        self.read(&format!("/proc/thread-self/net/{file}"))
    }

    /// Ends the thread (after what it is doing) and waits for it: a thread left in a
    /// namespace keeps the namespace alive.
    pub fn close(&self) {
        self.jobs.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(h) = self.handle.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = h.join();
        }
    }
}

impl Drop for NsThread {
    fn drop(&mut self) {
        self.close();
    }
}

/// Writes `value` to a sysfs or procfs file in one write(2), as the shell's `printf >`
/// did.
fn write_sysfs(path: &str, value: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().write(true).truncate(true).open(path)?;
    f.write_all(value.as_bytes())
}

/// One `tc` or `ip` in batch mode for a whole run (see the module docs).
pub struct Batch {
    p: Mutex<Option<Proc>>,
}

impl Batch {
    /// Starts `prog -n NS -s -j -batch -`; None when it cannot be started.
    pub fn start(prog: &str, ns: &str) -> Option<Batch> {
        Proc::spawn(prog, &["-n", ns, "-s", "-j", "-batch", "-"], true).ok().map(|p| Batch { p: Mutex::new(Some(p)) })
    }

    /// Runs `lines` (commands that print nothing when they succeed: the run's setup),
    /// then `probe`, a command whose one line of JSON says the lines before it are done.
    /// On a failure: the index of the line that failed (from iproute2's "Command failed
    /// -:N") and what the tool said; the batch has then ended (iproute2 stops a batch at
    /// its first failure), and later queries fall back to one exec each.
    pub fn exec(&self, lines: &[String], probe: &str) -> std::result::Result<(), (usize, String)> {
        let mut g = self.p.lock().unwrap_or_else(|e| e.into_inner());
        let Some(p) = g.as_mut() else {
            return Err((0, "the batch had ended before".into()));
        };
        // Warnings of earlier commands are not this failure's.
        if let Some(e) = &p.err {
            while e.try_recv().is_ok() {}
        }
        let first = p.lines + 1;
        let mut input = lines.join("\n");
        input.push('\n');
        input.push_str(probe);
        input.push('\n');
        p.lines += lines.len() + 1;
        let sent = p.stdin.as_mut().is_some_and(|s| s.write_all(input.as_bytes()).and_then(|_| s.flush()).is_ok());
        let deadline = Instant::now() + BATCH_TIMEOUT;
        while sent {
            match p.out.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(l) if l.trim_start().starts_with('[') => return Ok(()),
                Ok(_) => {}
                Err(_) => break,
            }
        }
        // Ended (or stuck): what it said on stderr, up to its end.
        let mut p = g.take().expect("checked above");
        let mut said = String::new();
        if let Some(e) = &p.err {
            let end = Instant::now() + Duration::from_secs(1);
            while let Ok(l) = e.recv_timeout(end.saturating_duration_since(Instant::now())) {
                said.push_str(&l);
            }
        }
        let _ = p.child.kill();
        p.close();
        let n = said
            .lines()
            .find_map(|l| l.trim().strip_prefix("Command failed -:").and_then(|n| n.trim().parse::<usize>().ok()))
            .map_or(lines.len().saturating_sub(1), |n| n.saturating_sub(first).min(lines.len().saturating_sub(1)));
        let why: Vec<&str> = said.lines().filter(|l| !l.trim().starts_with("Command failed -:")).collect();
        let why = match why.join("\n").trim() {
            "" if !sent => "could not write to the batch".to_string(),
            "" => "no message on stderr".to_string(),
            m => m.to_string(),
        };
        Err((n, why))
    }

    /// Sends one command; its answer (one line of JSON), or None, after which the batch
    /// is given up.
    pub fn query(&self, command: &str) -> Option<String> {
        self.query_after_text(command).map(|(_, json)| json)
    }

    /// Sends `command` (its answer is lines of text: tc has no JSON for `class show`)
    /// and then one whose answer is a line of JSON; returns both. The JSON line ends
    /// the text, which is how its end is known.
    pub fn query_after_text(&self, commands: &str) -> Option<(String, String)> {
        let mut g = self.p.lock().unwrap_or_else(|e| e.into_inner());
        let p = g.as_mut()?;
        let sent = p.stdin.as_mut().is_some_and(|s| s.write_all(format!("{commands}\n").as_bytes()).and_then(|_| s.flush()).is_ok());
        p.lines += commands.lines().count();
        let deadline = Instant::now() + BATCH_TIMEOUT;
        let mut text = String::new();
        let mut answer = None;
        while sent {
            match p.out.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(l) if l.trim_start().starts_with('[') => {
                    answer = l.trim_end().ends_with(']').then_some(l);
                    break;
                }
                Ok(l) => text.push_str(&l),
                Err(_) => break,
            }
        }
        match answer {
            Some(json) => Some((text, json)),
            None => {
                if let Some(mut p) = g.take() {
                    let _ = p.child.kill();
                    p.close();
                }
                None
            }
        }
    }

    pub fn pid(&self) -> Option<u32> {
        self.p.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|p| p.child.id())
    }

    /// Whether the tool is still running.
    pub fn alive(&self) -> bool {
        self.p.lock().unwrap_or_else(|e| e.into_inner()).as_mut().is_some_and(|p| matches!(p.child.try_wait(), Ok(None)))
    }

    pub fn close(&self) {
        if let Some(mut p) = self.p.lock().unwrap_or_else(|e| e.into_inner()).take() {
            p.close();
        }
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        self.close();
    }
}

/// One `ip -j -batch -` in darkbuf's own namespaces for the whole process: it adds and
/// deletes the runs' namespaces, so that a sweep's points pay no exec for them.
static PROCESS_IP: Mutex<Option<Batch>> = Mutex::new(None);

/// Runs `lines` (`netns add` / `netns del`) through the process's `ip -batch`,
/// started on first use and again after a failure (iproute2 ends a batch at its first
/// failing line). Err when `ip` cannot be started; Ok(Err((line index, what ip said)))
/// when a line failed. (`ip netns add` goes back to the namespace it started in after
/// each add, iproute2's netns_restore(), so the process never stays in a run's
/// namespace.)
pub fn process_ip(lines: &[String]) -> std::io::Result<std::result::Result<(), (usize, String)>> {
    let mut g = PROCESS_IP.lock().unwrap_or_else(|e| e.into_inner());
    // One that has ended (a Ctrl-C reaches the whole process group) is replaced first.
    if g.as_ref().is_some_and(|b| !b.alive()) {
        *g = None;
    }
    if g.is_none() {
        // In a session of its own, so that a Ctrl-C (sent to darkbuf's process group)
        // leaves it to delete the interrupted run's namespaces; it ends at EOF, when
        // darkbuf ends however it ends.
        let mut cmd = Command::new("ip");
        // SAFETY: setsid() is async-signal-safe.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        let p = Proc::spawn_cmd(cmd, &["-j", "-batch", "-"], true)?;
        *g = Some(Batch { p: Mutex::new(Some(p)) });
    }
    let r = g.as_ref().expect("started above").exec(lines, "link show dev lo");
    if r.is_err() {
        *g = None;
    }
    Ok(r)
}

/// Runs `lines` through `prog -n NS -batch -` in one exec (`tc` or `ip`); on a failure,
/// the index of the line that failed (from iproute2's "Command failed -:N") and the
/// output. Err when the program cannot be started.
pub fn batch_once(prog: &str, ns: Option<&str>, lines: &[String]) -> std::io::Result<std::result::Result<Output, (usize, Output)>> {
    let mut args: Vec<&str> = Vec::new();
    if let Some(ns) = ns {
        args.extend(["-n", ns]);
    }
    args.extend(["-batch", "-"]);
    let mut input = lines.join("\n");
    input.push('\n');
    let o = cmd::run_with(prog, &args, Some(&input))?;
    if o.ok() {
        return Ok(Ok(o));
    }
    let n = o
        .stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("Command failed -:").and_then(|n| n.trim().parse::<usize>().ok()))
        .map_or(lines.len().saturating_sub(1), |n| n.saturating_sub(1).min(lines.len().saturating_sub(1)));
    Ok(Err((n, o)))
}

/// The stderr of a failed batch without iproute2's "Command failed" lines.
pub fn batch_reason(o: &Output) -> String {
    let s: Vec<&str> = o.stderr.lines().filter(|l| !l.trim().starts_with("Command failed -:")).collect();
    match s.join("\n").trim() {
        "" => "no message on stderr".into(),
        m => m.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(sh_quote("dkb-1-0-tx"), "dkb-1-0-tx");
        assert_eq!(sh_quote("/sys/class/net/a/threaded"), "/sys/class/net/a/threaded");
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), "'it'\\''s'");
        assert_eq!(sh_quote(""), "''");
    }
}
