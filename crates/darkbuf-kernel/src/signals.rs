//! SIGINT / SIGTERM / SIGHUP: the handler only records the signal; the run loop sees it,
//! stops the load threads and tears everything down (see [`crate::topo`]).
//!
//! The handler stays installed, so a second Ctrl-C during teardown does not kill the
//! process half way; teardown is bounded (every command has a timeout).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static SIGNALLED: AtomicI32 = AtomicI32::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    // Async-signal-safe: a single atomic store.
    SIGNALLED.store(sig, Ordering::SeqCst);
}

/// Installs the handler for SIGINT, SIGTERM and SIGHUP (once per process).
pub fn install() {
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction with a plain handler and an empty mask is valid;
        // the handler only stores to an atomic.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// The signal received since [`install`], if any.
pub fn received() -> Option<i32> {
    match SIGNALLED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The name of signal `sig` as `kill -l` spells it (`SIGSEGV`), for the signals a
/// process is stopped or killed by.
pub fn name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        _ => "a signal",
    }
}

/// Sleeps up to `d`, returning early (false) when a signal arrives or `stop` is set.
pub fn sleep_unless_signalled(d: std::time::Duration, stop: &AtomicBool) -> bool {
    let end = std::time::Instant::now() + d;
    loop {
        if received().is_some() || stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = std::time::Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep((end - now).min(std::time::Duration::from_millis(10)));
    }
}
