//! Entering a named network namespace, and the thread scaffolding every tool uses:
//! a named thread that enters the namespace, optionally pins itself to a CPU, sets
//! up its sockets and tells the spawner it is ready.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::mpsc;
use std::thread::JoinHandle;

use super::sys;

/// Directory where `ip netns add NAME` bind-mounts the namespace file.
pub const NETNS_RUN_DIR: &str = "/run/netns";

/// `setns(fd, CLONE_NEWNET)` of `/run/netns/NAME` for the calling thread only
/// (setns changes the network namespace of the calling thread, not the process).
/// Sockets opened afterwards by this thread live in that namespace; sockets opened
/// before keep theirs.
pub fn enter_netns(name: &str) -> io::Result<()> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("invalid netns name {name:?}")));
    }
    let path = format!("{NETNS_RUN_DIR}/{name}");
    let f = File::open(&path).map_err(|e| io::Error::new(e.kind(), format!("open {path}: {e}")))?;
    // SAFETY: f is an open namespace file descriptor.
    sys::cvt(unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) })
        .map_err(|e| io::Error::new(e.kind(), format!("setns {path}: {e}")))?;
    Ok(())
}

/// Enters `netns` unless it is empty (empty = stay in the caller's namespace, e.g.
/// loopback tests that need no privileges).
pub(crate) fn enter_netns_opt(netns: &str) -> io::Result<()> {
    if netns.is_empty() {
        Ok(())
    } else {
        enter_netns(netns)
    }
}

/// Handed to a tool's body; `signal()` tells the spawner that setup is done (sockets
/// bound, device created). Dropping it without signalling (setup failed, or the
/// body returned early) also releases the spawner.
pub(crate) struct Ready<R: Send = ()> {
    tx: Option<mpsc::SyncSender<R>>,
}

impl<R: Send> Ready<R> {
    pub(crate) fn signal(&mut self, r: R) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(r);
        }
    }
}

/// Spawns a tool thread: enter `netns`, pin to `cpu` when given, tighten the timer
/// slack, then run `body`. Returns once `body` signalled readiness (or failed), so
/// when a sink or echo server's `spawn_*` returns, its socket is already bound.
/// The value passed to `signal` is returned beside the handle (None when the body
/// ended without signalling; then its error is in the join result).
pub(crate) fn spawn_tool<T, R, F>(name: &str, netns: String, cpu: Option<usize>, body: F) -> (Option<R>, JoinHandle<io::Result<T>>)
where
    T: Send + 'static,
    R: Send + 'static,
    F: FnOnce(&mut Ready<R>) -> io::Result<T> + Send + 'static,
{
    let (tx, rx) = mpsc::sync_channel::<R>(1);
    let run = move || -> io::Result<T> {
        let mut ready = Ready { tx: Some(tx) };
        enter_netns_opt(&netns)?;
        if let Some(c) = cpu {
            sys::pin_to_cpu(c)?;
        }
        sys::tight_timer_slack();
        body(&mut ready)
    };
    let handle = match std::thread::Builder::new().name(name.to_string()).spawn(run) {
        Ok(h) => h,
        Err(e) => {
            // Could not create the thread: hand back a handle that reports it.
            return (None, std::thread::spawn(move || Err(e)));
        }
    };
    (rx.recv().ok(), handle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_names() {
        for n in ["", ".", "..", "a/b", "../x"] {
            assert_eq!(enter_netns(n).unwrap_err().kind(), io::ErrorKind::InvalidInput, "{n}");
        }
        // A name that does not exist is an error, never a silent no-op.
        assert!(enter_netns("darkbuf-no-such-netns-xyz").is_err());
    }

    #[test]
    fn spawn_tool_reports_setup_failure() {
        let (r, h) = spawn_tool::<(), (), _>("t", "darkbuf-no-such-netns-xyz".into(), None, |_r| Ok(()));
        assert!(r.is_none());
        assert!(h.join().unwrap().is_err());
        let (r, h) = spawn_tool::<u32, u8, _>("t", String::new(), None, |r| {
            r.signal(7);
            Ok(3)
        });
        assert_eq!(r, Some(7));
        assert_eq!(h.join().unwrap().unwrap(), 3);
    }
}
