//! Running the system's network tools (`ip`, `tc`, `ethtool`, `nft`, ...), always bounded
//! in time, with their output captured.
//!
//! Commands inside a namespace use the tool's own `-n NS` option where it has one (`ip`,
//! `tc`: a plain setns, cheap) and `ip netns exec NS` otherwise (`ethtool`, `nft`, sysfs
//! reads and writes: that also remounts /sys so /sys/class/net shows the namespace's
//! devices).

use crate::error::{KernelError, Result};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long any single tool invocation may take before it is killed.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// A finished command.
#[derive(Debug, Clone)]
pub struct Output {
    /// The exit code; -1 when killed by a signal or by the timeout.
    pub status: i32,
    /// The signal that killed it (`WTERMSIG`), if one did.
    pub signal: Option<i32>,
    /// Killed by darkbuf after [`COMMAND_TIMEOUT`].
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn ok(&self) -> bool {
        self.status == 0
    }

    /// How it ended, for messages: `exit 3`, `killed by SIGSEGV` (a crash: nft loading
    /// millions of rules), or killed after the timeout.
    pub fn ended(&self) -> String {
        match (self.timed_out, self.signal) {
            (true, _) => format!("killed after {} s, the longest a command may take", COMMAND_TIMEOUT.as_secs()),
            (false, Some(libc::SIGKILL)) => "killed by SIGKILL (the kernel's OOM killer, if `dmesg` says so)".into(),
            (false, Some(s)) => format!("killed by {}", crate::signals::name(s)),
            (false, None) => format!("exit {}", self.status),
        }
    }

    /// What it said on stderr, or that it said nothing.
    pub fn reason(&self) -> &str {
        match self.stderr.trim() {
            "" => "no message on stderr",
            m => m,
        }
    }
}

/// The command line as a shell would show it, for messages.
pub fn show(prog: &str, args: &[&str]) -> String {
    let mut s = prog.to_string();
    for a in args {
        s.push(' ');
        if a.is_empty() || a.contains(|c: char| c.is_whitespace() || c == '"' || c == '\'') {
            s.push_str(&format!("'{a}'"));
        } else {
            s.push_str(a);
        }
    }
    s
}

/// Runs `prog args`, feeding `stdin` if given; kills it after [`COMMAND_TIMEOUT`].
/// Err only when the program cannot be started (e.g. not installed).
pub fn run_with(prog: &str, args: &[&str], stdin: Option<&str>) -> std::io::Result<Output> {
    let mut child = Command::new(prog)
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("LC_ALL", "C")
        .spawn()?;
    if let Some(text) = stdin {
        if let Some(mut pipe) = child.stdin.take() {
            // A writer thread, so a child that fills its stdout pipe cannot deadlock us.
            let body = text.to_string();
            std::thread::spawn(move || {
                let _ = pipe.write_all(body.as_bytes());
            });
        }
    }
    let mut out_pipe = child.stdout.take();
    let mut err_pipe = child.stderr.take();
    let out_t = std::thread::spawn(move || {
        let mut s = Vec::new();
        if let Some(p) = out_pipe.as_mut() {
            let _ = p.read_to_end(&mut s);
        }
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = Vec::new();
        if let Some(p) = err_pipe.as_mut() {
            let _ = p.read_to_end(&mut s);
        }
        s
    });
    let start = Instant::now();
    let (status, signal, timed_out) = loop {
        match child.try_wait()? {
            Some(st) => {
                use std::os::unix::process::ExitStatusExt;
                break (st.code().unwrap_or(-1), st.signal(), false);
            }
            None if start.elapsed() > COMMAND_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                break (-1, None, true);
            }
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    };
    let stdout = String::from_utf8_lossy(&out_t.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err_t.join().unwrap_or_default()).into_owned();
    Ok(Output { status, signal, timed_out, stdout, stderr })
}

pub fn run(prog: &str, args: &[&str]) -> std::io::Result<Output> {
    run_with(prog, args, None)
}

/// `ip netns exec NS prog args...`
pub fn run_in(ns: &str, prog: &str, args: &[&str], stdin: Option<&str>) -> std::io::Result<Output> {
    let mut v = vec!["netns", "exec", ns, prog];
    v.extend_from_slice(args);
    run_with("ip", &v, stdin)
}

pub(crate) fn not_installed(prog: &str, e: std::io::Error) -> KernelError {
    if e.kind() == std::io::ErrorKind::NotFound {
        KernelError::Unavailable(format!(
            "`{prog}` is not installed (the kernel backend needs iproute2, ethtool and nftables or iptables; \
             on Debian: apt-get install iproute2 ethtool nftables)"
        ))
    } else {
        KernelError::Internal(format!("cannot run `{prog}`: {e}"))
    }
}

/// Runs a command that must succeed; a failure is an internal error naming the
/// command and its stderr.
pub fn must(prog: &str, args: &[&str]) -> Result<Output> {
    let o = run(prog, args).map_err(|e| not_installed(prog, e))?;
    if !o.ok() {
        return Err(KernelError::Internal(format!("`{}` failed ({}): {}", show(prog, args), o.ended(), o.reason())));
    }
    Ok(o)
}

/// As [`must`], inside namespace `ns` via `ip netns exec`.
pub fn must_in(ns: &str, prog: &str, args: &[&str], stdin: Option<&str>) -> Result<Output> {
    let o = run_in(ns, prog, args, stdin).map_err(|e| not_installed("ip", e))?;
    if o.status == 255 && o.stderr.contains("exec of") {
        return Err(not_installed(prog, std::io::Error::from(std::io::ErrorKind::NotFound)));
    }
    if !o.ok() {
        return Err(KernelError::Internal(format!("`ip netns exec {ns} {}` failed ({}): {}", show(prog, args), o.ended(), o.reason())));
    }
    Ok(o)
}

/// Whether `prog` is on PATH (or an absolute path that exists).
pub fn which(prog: &str) -> Option<String> {
    if prog.contains('/') {
        return std::path::Path::new(prog).exists().then(|| prog.to_string());
    }
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/sbin:/usr/bin:/sbin:/bin".into());
    for dir in path.split(':').chain(["/usr/sbin", "/sbin"]) {
        let p = std::path::Path::new(dir).join(prog);
        if p.is_file() {
            return Some(p.to_string_lossy().into_owned());
        }
    }
    None
}

/// Writes `value` to a sysfs/procfs file as seen inside namespace `ns` (a fresh /sys).
pub fn write_file_in(ns: &str, path: &str, value: &str) -> Result<()> {
    let o = run_in(ns, "tee", &[path], Some(value)).map_err(|e| not_installed("ip", e))?;
    if !o.ok() {
        return Err(KernelError::Internal(format!(
            "cannot write `{value}` to {path} in namespace {ns}: {}",
            o.stderr.trim().trim_start_matches("tee: ")
        )));
    }
    Ok(())
}

/// Writes each `(path, value)` as seen inside namespace `ns`, in order, with one exec
/// (`ip netns exec NS sh -c ...`, the paths and values as the shell's arguments, never
/// parsed by it); stops at the first file that cannot be written and names it.
pub fn write_files_in(ns: &str, files: &[(String, String)]) -> Result<()> {
    const SCRIPT: &str = r#"while [ $# -gt 1 ]; do printf '%s' "$2" > "$1" || { printf 'cannot write `%s` to %s\n' "$2" "$1" >&2; exit 1; }; shift 2; done"#;
    let mut args: Vec<&str> = vec!["-c", SCRIPT, "sh"];
    for (p, v) in files {
        args.push(p);
        args.push(v);
    }
    let o = run_in(ns, "sh", &args, None).map_err(|e| not_installed("ip", e))?;
    if !o.ok() {
        return Err(KernelError::Internal(format!("in namespace {ns}: {}", o.stderr.trim().replace("\n", "; "))));
    }
    Ok(())
}

/// Runs several shell commands inside namespace `ns` in one exec and returns each one's
/// stdout; `None` where the command failed. One `ip netns exec` costs a few ms (it
/// remounts /sys), so counters are read in batches.
pub fn sections_in(ns: &str, cmds: &[String]) -> Result<Vec<Option<String>>> {
    if cmds.is_empty() {
        return Ok(Vec::new());
    }
    let mut script = String::new();
    for (i, c) in cmds.iter().enumerate() {
        script.push_str(&format!("echo '@@dkb {i}'; {{ {c} ; }} 2>/dev/null || echo '@@dkb-failed'\n"));
    }
    let o = run_in(ns, "sh", &["-c", &script], None).map_err(|e| not_installed("ip", e))?;
    Ok(split_sections(&o.stdout, cmds.len()))
}

/// Splits `@@dkb N` delimited output into `n` sections (see [`sections_in`]).
pub fn split_sections(stdout: &str, n: usize) -> Vec<Option<String>> {
    let mut out: Vec<Option<String>> = vec![None; n];
    let mut cur: Option<usize> = None;
    let mut buf = String::new();
    let mut failed = false;
    let flush = |cur: Option<usize>, buf: &mut String, failed: &mut bool, out: &mut Vec<Option<String>>| {
        if let Some(i) = cur {
            if !*failed {
                out[i] = Some(std::mem::take(buf));
            }
        }
        buf.clear();
        *failed = false;
    };
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("@@dkb ") {
            flush(cur, &mut buf, &mut failed, &mut out);
            cur = rest.trim().parse().ok().filter(|&i: &usize| i < n);
        } else if line == "@@dkb-failed" {
            failed = true;
        } else {
            buf.push_str(line);
            buf.push('\n');
        }
    }
    flush(cur, &mut buf, &mut failed, &mut out);
    out
}

/// Reads several files inside namespace `ns` in one exec; a missing file gives `None`.
pub fn read_files_in(ns: &str, paths: &[String]) -> Result<Vec<Option<String>>> {
    let cmds: Vec<String> = paths.iter().map(|p| format!("cat '{}'", p.replace('\'', ""))).collect();
    sections_in(ns, &cmds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn show_quotes_spaces() {
        assert_eq!(show("tc", &["qdisc", "add", "a b"]), "tc qdisc add 'a b'");
    }

    #[test]
    fn run_captures_output_and_status() {
        let o = run("sh", &["-c", "echo out; echo err >&2; exit 3"]).unwrap();
        assert_eq!(o.status, 3);
        assert_eq!(o.stdout, "out\n");
        assert_eq!(o.stderr, "err\n");
        let o = run_with("cat", &[], Some("fed")).unwrap();
        assert_eq!(o.stdout, "fed");
    }

    /// Item 13 of issue 48: a crashed tool is named by its signal, never "exit -1"
    /// with an empty reason.
    #[test]
    fn a_signal_is_reported_by_name() {
        let o = run("sh", &["-c", "kill -SEGV $$"]).unwrap();
        assert_eq!((o.status, o.signal, o.timed_out), (-1, Some(libc::SIGSEGV), false));
        assert_eq!(o.ended(), "killed by SIGSEGV");
        let e = must("sh", &["-c", "kill -SEGV $$"]).unwrap_err();
        assert_eq!(e.message(), "`sh -c 'kill -SEGV $$'` failed (killed by SIGSEGV): no message on stderr");
        assert_eq!(run("sh", &["-c", "exit 3"]).unwrap().ended(), "exit 3");
    }

    #[test]
    fn sections_split() {
        let out = "@@dkb 0\na\nb\n@@dkb 1\n@@dkb-failed\n@@dkb 2\nc\n";
        assert_eq!(split_sections(out, 3), vec![Some("a\nb\n".into()), None, Some("c\n".into())]);
        assert_eq!(split_sections("", 1), vec![None]);
    }

    #[test]
    fn missing_program_is_unavailable() {
        let e = must("darkbuf-no-such-tool", &[]).unwrap_err();
        assert_eq!(e.code(), 3);
    }
}
