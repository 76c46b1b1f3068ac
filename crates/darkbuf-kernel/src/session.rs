//! Long-lived helpers in a run's namespaces, so that a run's many small reads and writes
//! do not each cost a fork and exec of `ip netns exec`, a shell and the tool.
//!
//! - [`Shell`]: one `ip netns exec NS sh` per namespace for the whole run (so /sys is the
//!   namespace's, as `ip netns exec` remounts it). Sysfs and procfs are read and written
//!   by the shell's builtins (no exec at all); `ethtool` is one exec.
//! - [`Batch`]: one `tc -n NS -s -j -batch -` or `ip -n NS -s -j -batch -` for the whole
//!   run, fed one command a line; each answer is one line of JSON (iproute2 flushes its
//!   JSON writer after each batch command).
//!
//! Natively an exec costs about a millisecond; in a TCG guest (`--backend vm`) a fork and
//! exec of `ip` or `tc` took 150-240 ms, of `ip netns exec NS true` 295 ms, and a run's
//! setup made about 40 of them.

use crate::cmd::{self, Output, COMMAND_TIMEOUT};
use crate::error::{KernelError, Result};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a [`Batch`] answer may take before the batch is given up (its caller then
/// runs the tool once instead).
const BATCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The end of one answer of a [`Shell`], on stdout with the status and on stderr.
const END: &str = "@@dkb-end";

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
}

impl Proc {
    fn spawn(prog: &str, args: &[&str], keep_stderr: bool) -> std::io::Result<Proc> {
        let mut child = Command::new(prog)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if keep_stderr { Stdio::piped() } else { Stdio::null() })
            .env("LC_ALL", "C")
            .spawn()?;
        let stdin = child.stdin.take();
        let out = lines_of(child.stdout.take().expect("piped stdout"));
        let err = child.stderr.take().map(lines_of);
        Ok(Proc { child, stdin, out, err })
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

/// Collects lines from `rx` up to the line that starts with [`END`]; returns the text
/// before it (without the newline the end marker was written after) and the marker's
/// rest. None at the deadline or when the child is gone.
fn until_end(rx: &Receiver<String>, deadline: Instant) -> std::result::Result<(String, String), RecvTimeoutError> {
    let mut text = String::new();
    loop {
        let l = rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))?;
        if let Some(rest) = l.strip_prefix(END) {
            // The marker is printed after a newline of its own: drop that one.
            if text.ends_with('\n') {
                text.pop();
            }
            return Ok((text, rest.trim().to_string()));
        }
        text.push_str(&l);
    }
}

/// One `sh` inside a namespace for a whole run (see the module docs).
pub struct Shell {
    ns: String,
    p: Mutex<Option<Proc>>,
}

impl Shell {
    /// Starts `ip netns exec NS sh`.
    pub fn start(ns: &str) -> Result<Shell> {
        let p = Proc::spawn("ip", &["netns", "exec", ns, "sh"], true)
            .map_err(|e| KernelError::Unavailable(format!("cannot run `ip netns exec {ns} sh`: {e}")))?;
        Ok(Shell { ns: ns.to_string(), p: Mutex::new(Some(p)) })
    }

    pub fn ns(&self) -> &str {
        &self.ns
    }

    /// Runs one shell command line (its stdin is /dev/null); Err when the shell is gone.
    pub fn script(&self, line: &str) -> std::io::Result<Output> {
        let mut g = self.p.lock().unwrap_or_else(|e| e.into_inner());
        let gone = || std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the namespace's shell has ended");
        let p = g.as_mut().ok_or_else(gone)?;
        let req = format!("{{ {line}\n}} </dev/null; printf '\\n{END} %d\\n' \"$?\"; printf '\\n{END}\\n' >&2\n");
        let stdin = p.stdin.as_mut().ok_or_else(gone)?;
        stdin.write_all(req.as_bytes()).and_then(|_| stdin.flush())?;
        let deadline = Instant::now() + COMMAND_TIMEOUT;
        let out = until_end(&p.out, deadline);
        let err = match (&out, p.err.as_ref()) {
            (Ok(_), Some(e)) => until_end(e, deadline).map(|(t, _)| t),
            _ => Ok(String::new()),
        };
        match (out, err) {
            (Ok((stdout, status)), Ok(stderr)) => {
                let status = status.parse().unwrap_or(-1);
                Ok(Output { status, signal: None, timed_out: false, stdout, stderr })
            }
            (Err(RecvTimeoutError::Timeout), _) | (_, Err(RecvTimeoutError::Timeout)) => {
                // The shell is stuck in a command: it cannot serve the run any more.
                if let Some(mut p) = g.take() {
                    let _ = p.child.kill();
                    p.close();
                }
                Ok(Output { status: -1, signal: None, timed_out: true, stdout: String::new(), stderr: String::new() })
            }
            _ => {
                *g = None;
                Err(gone())
            }
        }
    }

    /// `prog args...` in the namespace.
    pub fn run(&self, prog: &str, args: &[&str]) -> std::io::Result<Output> {
        let mut line = sh_quote(prog);
        for a in args {
            line.push(' ');
            line.push_str(&sh_quote(a));
        }
        self.script(&line)
    }

    /// As [`cmd::must_in`]: `prog args` must succeed; its failure names the command.
    pub fn must(&self, prog: &str, args: &[&str]) -> Result<Output> {
        let o = self.run(prog, args).map_err(|e| KernelError::Internal(format!("in namespace {}: {e}", self.ns)))?;
        if o.status == 127 && o.stderr.contains("not found") {
            return Err(cmd::not_installed(prog, std::io::Error::from(std::io::ErrorKind::NotFound)));
        }
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

    /// Writes each `(path, value)` in order with the shell's `printf` (no exec); stops at
    /// the first file that cannot be written and names it, as [`cmd::write_files_in`].
    pub fn write_files(&self, files: &[(String, String)]) -> Result<()> {
        if files.is_empty() {
            return Ok(());
        }
        let mut s = String::new();
        for (i, (p, v)) in files.iter().enumerate() {
            let (pq, vq) = (sh_quote(p), sh_quote(v));
            s.push_str(if i == 0 { "if " } else { "elif " });
            s.push_str(&format!("! printf '%s' {vq} > {pq}; then echo {}; false\n", sh_quote(&format!("@@dkb-write {i}"))));
        }
        s.push_str("fi");
        let o = self.script(&s).map_err(|e| KernelError::Internal(format!("in namespace {}: {e}", self.ns)))?;
        if !o.ok() {
            let i = o.stdout.lines().find_map(|l| l.strip_prefix("@@dkb-write ")?.trim().parse::<usize>().ok());
            let why = o.stderr.trim().trim_start_matches("sh: 1: ").to_string();
            return Err(KernelError::Internal(match i.and_then(|i| files.get(i)) {
                Some((p, v)) => format!("cannot write `{v}` to {p} in namespace {}: {why}", self.ns),
                None => format!("in namespace {}: {}", self.ns, o.reason()),
            }));
        }
        Ok(())
    }

    /// Writes one file, as [`cmd::write_file_in`].
    pub fn write_file(&self, path: &str, value: &str) -> Result<()> {
        self.write_files(&[(path.to_string(), value.to_string())])
    }

    /// Whether `path` is a directory in the namespace's view.
    pub fn is_dir(&self, path: &str) -> bool {
        self.script(&format!("[ -d {} ]", sh_quote(path))).is_ok_and(|o| o.ok())
    }

    /// Several commands in one round trip, as [`cmd::sections_in`] (its output format).
    pub fn sections(&self, cmds: &[String]) -> std::io::Result<Vec<Option<String>>> {
        let mut script = String::new();
        for (i, c) in cmds.iter().enumerate() {
            script.push_str(&format!("echo '@@dkb {i}'; {{ {c} ; }} 2>/dev/null || echo '@@dkb-failed'\n"));
        }
        let o = self.script(&script)?;
        Ok(cmd::split_sections(&o.stdout, cmds.len()))
    }

    /// Ends the shell (EOF on its stdin); later calls fail.
    pub fn close(&self) {
        let mut g = self.p.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(mut p) = g.take() {
            p.close();
        }
    }

    /// The shell's pid (its CPU time is the run's own, not another process's).
    pub fn pid(&self) -> Option<u32> {
        self.p.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|p| p.child.id())
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        self.close();
    }
}

/// A shell command that prints a file with the shell's builtins only (no `cat`).
pub fn cat_builtin(path: &str) -> String {
    format!("while IFS= read -r l || [ -n \"$l\" ]; do printf '%s\\n' \"$l\"; done < {}", sh_quote(path))
}

/// One `tc` or `ip` in batch mode for a whole run (see the module docs).
pub struct Batch {
    p: Mutex<Option<Proc>>,
}

impl Batch {
    /// Starts `prog -n NS -s -j -batch -`; None when it cannot be started.
    pub fn start(prog: &str, ns: &str) -> Option<Batch> {
        Proc::spawn(prog, &["-n", ns, "-s", "-j", "-batch", "-"], false).ok().map(|p| Batch { p: Mutex::new(Some(p)) })
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

    #[test]
    fn end_marker_strips_its_own_newline() {
        let (tx, rx) = mpsc::channel();
        for l in ["abc\n", "\n", "@@dkb-end 3\n"] {
            tx.send(l.to_string()).unwrap();
        }
        assert_eq!(until_end(&rx, Instant::now() + Duration::from_secs(1)).unwrap(), ("abc\n".to_string(), "3".to_string()));
        for l in ["abc\n", "@@dkb-end 0\n"] {
            tx.send(l.to_string()).unwrap();
        }
        assert_eq!(until_end(&rx, Instant::now() + Duration::from_secs(1)).unwrap(), ("abc".to_string(), "0".to_string()));
    }
}
