//! The one write path to standard output: every command's tables, JSON, CSV, `check`'s
//! and `calibrate`'s text and clap's `--help` go through [`stdout`].
//!
//! A full disk or any other write error (`darkbuf run ... > /dev/full`) is a clear
//! message and exit 1 ("darkbuf: cannot write to standard output: No space left on
//! device"), never print!'s panic and its exit 101. A reader that has gone (`darkbuf
//! run ... | head -1`, EPIPE) ends the process quietly, as SIGPIPE's default action
//! does for other Unix tools.

use crate::run::Failure;
use std::io::Write;

/// An I/O error's reason without Rust's " (os error N)" suffix: "No space left on
/// device", as strerror(3) and other tools say it.
pub(crate) fn reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match (e.raw_os_error(), s.rfind(" (os error ")) {
        (Some(_), Some(i)) => s[..i].to_string(),
        _ => s,
    }
}

/// Writes `text` to standard output and flushes it.
pub(crate) fn stdout(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => quiet_exit_on_epipe(),
        Err(e) => Err(Failure::Internal(format!("cannot write to standard output: {}", reason(&e)))),
    }
}

/// The reader of stdout has gone while SIGPIPE was ignored (the kernel backend ignores
/// it while it holds namespaces): end as SIGPIPE's default action would have, quietly,
/// with the status a shell reports for it (141).
fn quiet_exit_on_epipe() -> ! {
    // SAFETY: signal() with SIG_DFL and raise() have no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    std::process::exit(128 + libc::SIGPIPE)
}

/// Appends a formatted line to a `String` (writing to a `String` cannot fail).
macro_rules! outln {
    ($s:expr) => { $s.push('\n') };
    ($s:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($s, $($arg)*);
    }};
}
pub(crate) use outln;

/// Writes a line to standard error, as eprintln! does, but a standard error that cannot
/// be written (`darkbuf run ... 2>/dev/full`) loses the line instead of panicking (exit
/// 101): a warning or note nobody can read does not stop the command or change its
/// exit code.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}
pub(crate) use errln;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_drops_the_os_error_suffix() {
        assert_eq!(reason(&std::io::Error::from_raw_os_error(libc::ENOSPC)), "No space left on device");
        let custom = std::io::Error::other("gzip failed");
        assert_eq!(reason(&custom), "gzip failed");
    }

    #[test]
    fn outln_appends_lines() {
        let mut s = String::new();
        outln!(s, "a {}", 1);
        outln!(s);
        assert_eq!(s, "a 1\n\n");
    }
}
