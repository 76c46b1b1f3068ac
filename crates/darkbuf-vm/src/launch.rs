//! Booting the VM with virtme-ng and waiting on it, bounded in time, interruptible, and
//! with nothing left behind.
//!
//! `vng` becomes QEMU (it execs it), in a process group of its own, with
//! `PR_SET_PDEATHSIG` set: a signal darkbuf catches (Ctrl-C) makes it kill the group and
//! wait for it, and a darkbuf killed outright takes QEMU with it. The guest sees the
//! host's root file system read-only (virtme-ng's 9p export, with tmpfs overlays for
//! /etc, /tmp, /var, ... inside the guest) and one writable directory, the scratch
//! directory this module creates and removes.

use crate::protocol;
use crate::tools::Tools;
use darkbuf_kernel::{signals, KernelError, Result};
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How QEMU executes the guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accel {
    /// KVM if a probe boot comes up within [`KVM_PROBE`], else TCG.
    Auto,
    Kvm,
    /// QEMU's software emulation: slow (the guest kernel runs many times slower than
    /// native), but it needs nothing from the host.
    Tcg,
}

impl Accel {
    pub fn name(self) -> &'static str {
        match self {
            Accel::Auto => "auto",
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// How long a KVM boot may take before `auto` gives up on KVM. A distro kernel boots
/// to the agent in 2-5 s under KVM; on the development machines a stock kernel hung
/// at boot under KVM, which this bounds.
pub const KVM_PROBE: Duration = Duration::from_secs(25);
/// How long a TCG boot may take to reach the agent (measured: 36-49 s on a 2-core
/// machine, with other work running).
pub const TCG_BOOT: Duration = Duration::from_secs(300);

/// A running VM.
pub struct Vm {
    child: Option<Child>,
    pub accel: Accel,
    scratch: PathBuf,
}

/// The vng command line for one boot.
pub fn vng_command(tools: &Tools, run_arg: &Path, accel: Accel, cpus: u32, memory_mib: u64, scratch: &Path, exe: &Path) -> Command {
    let mut c = Command::new(&tools.vng);
    c.arg("--run").arg(run_arg);
    if accel == Accel::Tcg {
        c.arg("--disable-kvm");
    }
    // 9p straight away: virtme-ng otherwise tries virtiofsd first and waits for it.
    c.arg("--force-9p");
    c.arg("--cpus").arg(cpus.to_string());
    c.arg("--memory").arg(format!("{memory_mib}M"));
    c.arg("--qemu").arg(&tools.qemu);
    c.arg(format!("--rwdir={}", scratch.display()));
    c.arg("--user").arg("root");
    // QEMU's -name: `darkbuf check` finds the VM of a darkbuf killed outright by it.
    c.arg("--name").arg(darkbuf_kernel::names::vm_name(std::process::id()));
    c.arg("--exec").arg(format!("{} vm-guest {}", shell_quote(&exe.to_string_lossy()), shell_quote(&scratch.to_string_lossy())));
    c
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

impl Vm {
    /// Starts `cmd` (from [`vng_command`]) with its output in the scratch directory's
    /// console log.
    pub fn spawn(mut cmd: Command, accel: Accel, scratch: &Path) -> Result<Vm> {
        let log = File::create(scratch.join(protocol::CONSOLE_LOG)).map_err(|e| KernelError::Internal(format!("console log: {e}")))?;
        let log2 = log.try_clone().map_err(|e| KernelError::Internal(format!("console log: {e}")))?;
        cmd.stdin(Stdio::null()).stdout(log).stderr(log2).process_group(0);
        // vng runs virtme-run, which forks QEMU: when they exit before QEMU (on SIGTERM),
        // QEMU is reparented to this process, which then reaps it (`stop()`).
        // SAFETY: prctl(PR_SET_CHILD_SUBREAPER) only sets a flag on this process.
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0);
        }
        // SAFETY: prctl(PR_SET_PDEATHSIG) is async-signal-safe and touches no memory
        // of the parent; it runs in the child between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|e| KernelError::Unavailable(format!("cannot start vng: {e}")))?;
        Ok(Vm { child: Some(child), accel, scratch: scratch.to_path_buf() })
    }

    /// Waits until the guest has written `name` into the scratch directory, the VM
    /// exits, `limit` passes or a signal arrives.
    pub fn wait_for(&mut self, name: &str, limit: Duration, what: &str) -> Result<WaitOutcome> {
        let end = Instant::now() + limit;
        loop {
            if self.scratch.join(name).exists() {
                return Ok(WaitOutcome::Ready);
            }
            if let Some(sig) = signals::received() {
                self.stop();
                return Err(KernelError::Interrupted {
                    signal: sig,
                    message: format!("interrupted by {} {what}; the VM was stopped", signals::name(sig)),
                });
            }
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(status)) = c.try_wait() {
                    reap_group(c.id() as libc::pid_t, Duration::from_secs(5));
                    self.child = None;
                    // The file may have landed just before the exit.
                    if self.scratch.join(name).exists() {
                        return Ok(WaitOutcome::Ready);
                    }
                    return Ok(WaitOutcome::Exited(format!("{status}")));
                }
            }
            if Instant::now() >= end {
                self.stop();
                return Ok(WaitOutcome::TimedOut);
            }
            // A file's latency here adds to every job's wall time.
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits for the guest agent's `done` (or for QEMU to exit by itself), then stops the
    /// VM; stops it anyway after `limit`.
    pub fn finish(&mut self, limit: Duration) {
        let end = Instant::now() + limit;
        while let Some(c) = self.child.as_mut() {
            match c.try_wait() {
                Ok(Some(_)) | Err(_) => {
                    reap_group(c.id() as libc::pid_t, Duration::from_secs(5));
                    self.child = None;
                }
                // The agent has said it is done (its files are written): the guest's
                // power-off (a third of a second under TCG) is not waited for.
                Ok(None) if self.scratch.join(protocol::DONE).exists() => self.stop(),
                Ok(None) if Instant::now() >= end || signals::received().is_some() => self.stop(),
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }

    /// SIGTERM to the VM's process group, SIGKILL after 3 s, and reaps it.
    pub fn stop(&mut self) {
        let Some(mut c) = self.child.take() else { return };
        let pgid = c.id() as libc::pid_t;
        // SAFETY: kill(2) on our own child's process group.
        unsafe {
            libc::kill(-pgid, libc::SIGTERM);
        }
        let end = Instant::now() + Duration::from_secs(3);
        loop {
            match c.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if Instant::now() >= end => {
                    // SAFETY: as above.
                    unsafe {
                        libc::kill(-pgid, libc::SIGKILL);
                    }
                    let _ = c.wait();
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
        // What is left of the group (QEMU forked by virtme-run), killed and reaped: with
        // this process as their subreaper they are our children now.
        // SAFETY: as above; ESRCH when the group is gone is fine.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        reap_group(pgid, Duration::from_secs(5));
    }

    /// The VM's process group (vng's pid: QEMU and the helpers virtme-ng starts are in
    /// it), while it runs.
    pub fn pgid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// The last `n` lines of the console log, for an error message.
    pub fn console_tail(&self, n: usize) -> String {
        console_tail(&self.scratch, n)
    }
}

/// Waits for every process of group `pgid` that is this process's child, up to `limit`.
fn reap_group(pgid: libc::pid_t, limit: Duration) {
    let end = Instant::now() + limit;
    loop {
        let mut status = 0;
        // SAFETY: waitpid on our own process group with WNOHANG.
        let r = unsafe { libc::waitpid(-pgid, &mut status, libc::WNOHANG) };
        if r < 0 || Instant::now() >= end {
            return; // ECHILD: nothing of the group is left.
        }
        if r == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Vm {
    fn drop(&mut self) {
        self.stop();
    }
}

pub fn console_tail(scratch: &Path, n: usize) -> String {
    let mut out = String::new();
    for f in [protocol::CONSOLE_LOG, protocol::GUEST_LOG] {
        let text = std::fs::read_to_string(scratch.join(f)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = &lines[lines.len().saturating_sub(n)..];
        if !tail.is_empty() {
            out.push_str(&format!("\n--- {f} (last {} lines) ---\n{}", tail.len(), tail.join("\n")));
        }
    }
    out
}

/// How a wait ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WaitOutcome {
    Ready,
    /// The VM exited first (its exit status).
    Exited(String),
    TimedOut,
}

/// The scratch directory: created empty (mode 0700) under `base`, removed with
/// everything the guest wrote when dropped (unless `DARKBUF_VM_KEEP=1`).
pub struct Scratch {
    pub path: PathBuf,
}

impl Scratch {
    pub fn new(base: &Path) -> Result<Scratch> {
        use std::os::unix::fs::DirBuilderExt;
        static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = base.join(format!("darkbuf-vm-{}-{n}", std::process::id()));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|e| KernelError::Internal(format!("cannot create {}: {e}", path.display())))?;
        Ok(Scratch { path })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::env::var_os("DARKBUF_VM_KEEP").is_some_and(|v| v == "1") {
            eprintln!("darkbuf: vm: kept {} (DARKBUF_VM_KEEP=1)", self.path.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
