//! Issue 48: what a new user met on the README's own path (write errors, messages, bounds).

mod common;
use common::{darkbuf, repo, stderr, tmp};
use std::process::{Command, Output, Stdio};

/// Runs `darkbuf ARGS` with its standard output on /dev/full (a full disk).
fn to_dev_full(args: &[&str]) -> Output {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    Command::new(env!("CARGO_BIN_EXE_darkbuf"))
        .args(args)
        .stdout(Stdio::from(full))
        .output()
        .expect("runs")
}

fn assert_cannot_write_stdout(args: &[&str]) {
    let o = to_dev_full(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
    assert!(err.contains("darkbuf: cannot write to standard output: No space left on device\n"), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(!err.contains("os error"), "{args:?}: {err}");
}

#[test]
fn stdout_on_a_full_disk_is_exit_1_with_a_message_for_every_command() {
    let scn = repo("scenarios/veth-bql.toml");
    for format in ["table", "json", "csv"] {
        assert_cannot_write_stdout(&["run", &scn, "--set", "duration=10ms", "--format", format]);
        assert_cannot_write_stdout(&["sweep", &scn, "--set", "duration=10ms", "--set", "consumer.nrules=0,10", "--format", format]);
    }
    assert_cannot_write_stdout(&["--help"]);
    assert_cannot_write_stdout(&["--version"]);
    assert_cannot_write_stdout(&["run", "--help"]);
    assert_cannot_write_stdout(&["check"]);
    // `report` of a saved results file.
    let d = tmp("issue48", "report-full");
    let out = d.to_string_lossy().into_owned();
    let o = darkbuf(&["run", &scn, "--set", "duration=10ms", "--out", &out]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_cannot_write_stdout(&["report", &format!("{out}/results.json")]);
}

/// A closed pipe stays a quiet end (SIGPIPE's default action), not an error message.
#[test]
fn a_closed_pipe_is_quiet() {
    use std::os::unix::process::ExitStatusExt;
    let mut child = Command::new(env!("CARGO_BIN_EXE_darkbuf"))
        .args(["run", &repo("scenarios/veth-bql.toml"), "--set", "duration=10ms", "--runs", "3", "--hist"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.signal(), Some(13), "SIGPIPE expected, got {:?}: {err}", o.status);
    assert!(!err.contains("cannot write") && !err.contains("panicked"), "{err}");
}

/// `--out` on a full disk: every file goes through one writer, which names the file and
/// the reason, exit 1 (here results.json is a link to /dev/full).
#[test]
fn out_on_a_full_disk_is_exit_1_naming_the_file() {
    let d = tmp("issue48", "out-full");
    std::os::unix::fs::symlink("/dev/full", d.join("results.json")).unwrap();
    let out = d.to_string_lossy().into_owned();
    let o = darkbuf(&["run", &repo("scenarios/veth-bql.toml"), "--set", "duration=10ms", "--out", &out]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("darkbuf: cannot write {out}/results.json: No space left on device\n")), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
