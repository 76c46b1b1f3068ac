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

/// A standard error that cannot be written (`2>/dev/full`) loses the warnings, not the
/// run: exit 0 and the table on stdout, where eprintln! panicked (exit 101).
#[test]
fn stderr_on_a_full_disk_loses_the_warnings_not_the_run() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    // 10 ms answer fewer than 16 probes: the run warns on stderr.
    let o = Command::new(env!("CARGO_BIN_EXE_darkbuf"))
        .args(["run", &repo("scenarios/veth-bql.toml"), "--set", "duration=10ms"])
        .stderr(Stdio::from(full))
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(0), "{:?}", o.status);
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("veth-bql (1 run, sim, profile seed-vm)\n"));
}

/// The README's busy machine: a profile `calibrate --force` wrote from disturbed steps
/// is warned about wherever it is used, once per file however many points load it.
#[test]
fn a_profile_calibrated_on_a_busy_machine_is_warned_about_once() {
    let text = std::fs::read_to_string(repo("profiles/seed-vm.toml")).unwrap();
    let at = text.find("description = \"").unwrap() + "description = \"".len();
    let busy = format!("{}{}, see the warning in this file): {}", &text[..at], darkbuf_kernel::calibrate::DISTURBED_MARK, &text[at..]);
    let d = tmp("issue48", "busy-profile");
    let prof = d.join("busy.toml");
    std::fs::write(&prof, busy).unwrap();
    let set = format!("machine.profile={}", prof.display());
    let scn = repo("scenarios/veth-bql.toml");
    let warning = format!("darkbuf: warning: machine profile seed-vm ({}, fnv1a64 ", prof.display());
    for args in [
        vec!["run", &scn, "--set", "duration=10ms", "--set", &set],
        vec!["sweep", &scn, "--set", "duration=10ms", "--set", &set, "--set", "consumer.nrules=0,10,20"],
    ] {
        let o = darkbuf(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{err}");
        assert_eq!(err.matches(&warning).count(), 1, "{err}");
        assert!(err.contains("was calibrated on a busy machine (calibrate --force; its header lists the disturbed steps)"), "{err}");
    }
    // The profile as calibrate writes it on a quiet machine: no warning.
    let o = darkbuf(&["run", &scn, "--set", "duration=10ms", "--set", "machine.profile=seed-vm"]);
    assert!(!stderr(&o).contains("busy machine"), "{}", stderr(&o));
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

/// Item 15: "strings need quotes" only where a bare word is the error.
#[test]
fn toml_syntax_errors_hint_at_quotes_only_for_a_bare_word() {
    let p = common::write("issue48", "bare.toml", "name = \"x\"\nduration = 10s\n[[traffic]]\nkind = \"udp\"\n");
    let o = darkbuf(&["run", &p]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(":2:14: TOML syntax error"), "{err}");
    assert!(err.contains("strings need quotes: duration = \"10s\""), "{err}");
    let p = common::write("issue48", "kind.toml", "[qdisc]\nkind = sfq\n");
    assert!(stderr(&darkbuf(&["run", &p])).contains("strings need quotes: kind = \"sfq\""));
    for (name, text) in [("unclosed.toml", "name = \"x\nduration = \"1s\"\n"), ("header.toml", "name = \"x\"\n[device\n"), ("dup.toml", "x = 1e5\nx = 1e5\n")] {
        let p = common::write("issue48", name, text);
        let o = darkbuf(&["run", &p]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("TOML syntax error") && err.contains("see https://toml.io"), "{name}: {err}");
        assert!(!err.contains("quotes"), "{name}: {err}");
    }
}

#[test]
fn out_naming_a_file_is_not_a_directory() {
    let f = common::write("issue48", "a-file", "x");
    let o = darkbuf(&["run", &repo("scenarios/veth-bql.toml"), "--set", "duration=10ms", "--out", &f]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("darkbuf: --out {f}: is not a directory")), "{err}");
}

#[test]
fn a_list_given_to_run_points_to_sweep() {
    let scn = repo("scenarios/veth-bql.toml");
    for set in ["consumer.nrules=0,3500", "qdisc.kind=sfq,pfifo"] {
        let o = darkbuf(&["run", &scn, "--set", set]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(&format!("hint: a list of values belongs to `darkbuf sweep`, which runs one point per value: darkbuf sweep {scn} --set {set}")), "{err}");
    }
    // A bad single value gets no such hint.
    assert!(!stderr(&darkbuf(&["run", &scn, "--set", "consumer.nrules=x"])).contains("darkbuf sweep"));
}

#[test]
fn two_hours_is_refused_naming_the_one_hour_bound() {
    let o = darkbuf(&["run", &repo("scenarios/veth-bql.toml"), "--set", "duration=2h"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("is longer than the 1 hour (3600 s) a run may take"), "{err}");
}

#[test]
fn priority_16_is_refused() {
    let o = darkbuf(&["run", &repo("scenarios/veth-bql.toml"), "--set", "traffic.0.priority=16"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("0..=15"), "{}", stderr(&o));
}

/// Item 15: a jitter larger than the delay warns, with what netem does; a sweep says it
/// once for all the points that share it.
#[test]
fn a_jitter_beyond_the_delay_warns() {
    let scn = repo("scenarios/tcp-100mbit.toml");
    let o = darkbuf(&["run", &scn, "--set", "duration=10ms", "--set", "warmup=0s", "--set", "path.delay=1ms", "--set", "path.jitter=5ms"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("darkbuf: warning: path.jitter (5ms) reaches below zero from path.delay (1ms): netem draws each frame's delay uniformly in delay ± jitter (-4 to 6 ms here) and sends a frame whose draw is negative at once, with no delay; 40.0% of the frames each way"),
        "{err}"
    );
    let o = darkbuf(&["run", &scn, "--set", "duration=10ms", "--set", "warmup=0s", "--set", "path.delay=5ms", "--set", "path.jitter=5ms"]);
    assert!(!stderr(&o).contains("path.jitter"), "{}", stderr(&o));
    let o = darkbuf(&["sweep", &scn, "--set", "duration=10ms", "--set", "warmup=0s", "--set", "path.delay=1ms", "--set", "path.jitter=5ms"]);
    let err = stderr(&o);
    assert_eq!(err.matches("path.jitter (5ms)").count(), 1, "{err}");
    assert!(err.contains("darkbuf: warning in points \"no BQL + pfifo_fast\", \"BQL + fq_codel\", \"cake 95Mbit\": path.jitter"), "{err}");
}

/// all-keys-nic.toml runs as it is (its keys are all-keys.toml's commented block).
#[test]
fn all_keys_nic_runs() {
    let o = darkbuf(&["run", &repo("scenarios/examples/all-keys-nic.toml"), "--set", "duration=300ms", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Item 14: a warning every point gives is said once, with how many points gave it.
#[test]
fn a_sweep_folds_a_warning_repeated_per_point() {
    let o = darkbuf(&["sweep", &repo("scenarios/veth-bql.toml"), "--set", "duration=1ms", "--set", "warmup=0s", "--set", "consumer.nrules=0,1,2,3,4"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(err.matches("no probe was answered").count(), 1, "{err}");
    assert!(err.contains("darkbuf: warning in 5 points (\"consumer.nrules=0\", \"consumer.nrules=1\", \"consumer.nrules=2\", ...): no probe was answered"), "{err}");
}

/// Item 14: results.json is written a point at a time; it is still the pretty JSON of the
/// whole sweep, and `--format json` prints the same without the provenance.
#[test]
fn a_streamed_sweep_json_is_the_whole_sweeps_json() {
    let d = tmp("issue48", "stream");
    let out = d.to_string_lossy().into_owned();
    let o = darkbuf(&["sweep", &repo("scenarios/veth-bql.toml"), "--set", "duration=100ms", "--set", "consumer.nrules=0,3500,15000", "--runs", "2", "--format", "json", "--out", &out]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let file = std::fs::read_to_string(d.join("results.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&file).unwrap();
    assert_eq!(serde_json::to_string_pretty(&v).unwrap() + "\n", file);
    assert_eq!(v["points"].as_array().unwrap().len(), 3);
    v.as_object_mut().unwrap().remove("provenance").expect("the file has the provenance");
    assert_eq!(serde_json::to_string_pretty(&v).unwrap() + "\n", common::stdout(&o));
    assert!(!d.join("results.json.partial").exists());
    assert_eq!(std::fs::read_dir(d.join("flent")).unwrap().count(), 3);
}

/// Item 13: more netfilter rules than the kernel backend loads is bad input (exit 2)
/// before anything is created, root or not; a sweep checks every point first.
#[test]
fn too_many_rules_on_the_kernel_backend_is_exit_2() {
    let scn = repo("crates/darkbuf-kernel/scenarios/veth-pfifo-rules.toml");
    let o = darkbuf(&["run", &scn, "--backend", "kernel", "--set", "consumer.nrules=5000000"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("consumer.nrules = 5,000,000: the kernel backend loads at most 500,000 rules"), "{err}");
    let o = darkbuf(&["sweep", &scn, "--backend", "kernel", "--set", "consumer.nrules=0,100000000"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("consumer.nrules = 100,000,000: the kernel backend loads at most 500,000 rules"), "{err}");
}

/// The tracing instances of darkbuf process `pid` (`dkb-<pid>-*`), if tracefs is mounted.
fn trace_instances_of(pid: u32) -> Vec<String> {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let Some(root) = mounts.lines().map(|l| l.split_whitespace().collect::<Vec<_>>()).find(|f| f.len() > 2 && f[2] == "tracefs").map(|f| f[1].to_string()) else {
        return Vec::new();
    };
    let prefix = format!("dkb-{pid}-");
    std::fs::read_dir(format!("{root}/instances"))
        .map(|rd| rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with(&prefix)).collect())
        .unwrap_or_default()
}

/// Item 11: a SIGKILLed `--probe-trace` run leaves no tracing instance (so no enabled
/// tracepoint or filter) behind: each instance's reaper removes it when the run dies.
/// Needs root (skips otherwise, or when the run cannot trace here).
#[test]
fn a_killed_probe_trace_run_leaves_no_tracepoint_enabled() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root");
        return;
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_darkbuf"))
        .args(["run", &repo("crates/darkbuf-kernel/scenarios/veth-pfifo-rules.toml"), "--backend", "kernel", "--probe-trace"])
        .args(["--set", "consumer.nrules=0", "--set", "duration=60s"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let start = std::time::Instant::now();
    while !trace_instances_of(pid).iter().any(|n| n.ends_with("-probe")) {
        if child.try_wait().expect("try_wait").is_some() || start.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            let o = child.wait_with_output().expect("wait");
            eprintln!("skipped: the run made no probe trace here: {}", stderr(&o));
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    // The reapers run when the run's pipe closes: give them up to 10 s.
    let start = std::time::Instant::now();
    while !trace_instances_of(pid).is_empty() && start.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let left = trace_instances_of(pid);
    // The namespaces the killed run left are check --cleanup's (and the next run's).
    let _ = darkbuf(&["check", "--cleanup"]);
    assert_eq!(left, Vec::<String>::new());
}
