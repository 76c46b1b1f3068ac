//! Issue 18, tried as a new user would: no crash, no lost results, output a person can
//! read. Each test failed before the fix it names.

mod common;

use common::{repo, stderr, stdout};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn darkbuf() -> Command {
    Command::new(env!("CARGO_BIN_EXE_darkbuf"))
}

/// `darkbuf ARGS` started with its stdin, stdout and stderr piped, for [`signal_when`].
fn spawn_piped(args: &[&str]) -> std::process::Child {
    darkbuf().args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

fn run(args: &[&str]) -> Output {
    common::darkbuf(args)
}

fn tmp(name: &str) -> common::TmpDir {
    common::tmp("issue18", name)
}

fn no_panic(o: &Output) {
    assert!(!stderr(o).contains("panicked"), "{}", stderr(o));
    assert_ne!(o.status.code(), Some(101), "{}", stderr(o));
    assert_ne!(o.status.code(), Some(134), "{}", stderr(o));
}

#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    // `darkbuf run ... | head -1` panicked on EPIPE (exit 101).
    let mut child = darkbuf()
        .args(["run", &repo("scenarios/tap-reader.toml"), "--set", "duration=200ms", "--set", "warmup=50ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away before anything is written
    let o = child.wait_with_output().unwrap();
    no_panic(&o);
    use std::os::unix::process::ExitStatusExt;
    assert!(o.status.success() || o.status.signal() == Some(libc_sigpipe()), "{:?}", o.status);
}

fn libc_sigpipe() -> i32 {
    13
}

#[test]
fn runs_zero_is_rejected_like_the_files_runs_zero() {
    let o = run(&["run", &repo("scenarios/veth-bql.toml"), "--runs", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("1..=1000"), "{}", stderr(&o));
    let o = run(&["run", &repo("scenarios/veth-bql.toml"), "--runs", "1000000"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn an_unknown_plot_metric_is_an_error_before_the_sweep_runs() {
    // A sweep of two one-hour points: only an up-front check can answer at once.
    let o = run(&["sweep", &repo("scenarios/veth-bql.toml"), "--set", "duration=3600s,3599s", "--plot", "nosuch.metric"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--plot nosuch.metric"), "{}", stderr(&o));
    let o = run(&["report", &repo("README.md"), "--plot", "ping.rtt_avg_mss"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("did you mean `ping.rtt_avg_ms`"), "{}", stderr(&o));
}

#[test]
fn an_unwritable_out_is_found_before_the_run() {
    // A regular file where the directory should be: cannot be created (also as root).
    let d = tmp("unwritable");
    let file = d.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let out = file.join("results");
    let o = run(&["run", &repo("scenarios/veth-bql.toml"), "--set", "duration=3600s", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--out"), "{}", stderr(&o));
}

#[test]
fn bounds_are_exit_2_with_the_bound() {
    for (set, bound) in [
        ("sample_interval=1ns", "100,000"),
        ("traffic.0.flows=100001", "100000"),
        ("duration=7200s", "3600"),
        ("machine.profile=/dev/zero", "not a regular file"),
    ] {
        let o = run(&["run", &repo("scenarios/veth-bql.toml"), "--set", set]);
        assert_eq!(o.status.code(), Some(2), "{set}: {}", stderr(&o));
        assert!(stderr(&o).contains(bound), "{set}: {}", stderr(&o));
    }
    let o = run(&["run", &repo("scenarios/tap-reader.toml"), "--set", "device.txqueuelen=4000000000"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("524288"), "{}", stderr(&o));
    let o = run(&["run", "/dev/zero"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = run(&["report", "/dev/zero"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a results file"), "{}", stderr(&o));
    let many_dir = tmp("many");
    let many = many_dir.join("many.toml");
    std::fs::write(&many, "[[traffic]]\nkind = \"ping\"\n".repeat(65536 / 8)).unwrap();
    let o = run(&["run", many.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("at most 64"), "{}", stderr(&o));
    // A sweep whose points add up to too many runs.
    let o = run(&["sweep", &repo("scenarios/veth-bql.toml"), "--set", "seed=1,2,3,4,5,6,7,8,9,10,11", "--runs", "1000"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("10,000"), "{}", stderr(&o));
}

/// Sends `sig` to `child` once `ready` holds (polled), then waits for it.
fn signal_when(mut child: std::process::Child, sig: &str, ready: impl Fn() -> bool) -> Output {
    let start = std::time::Instant::now();
    while !ready() && start.elapsed() < std::time::Duration::from_secs(120) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = Command::new("kill").args([sig, &child.id().to_string()]).status();
    let _ = child.stdin.take();
    child.wait_with_output().unwrap()
}

/// A `ready` for [`signal_when`]: true once process `pid`'s simulation threads have
/// been up for `wait`.
fn sim_threads_up_for(pid: u32, wait: std::time::Duration) -> impl Fn() -> bool {
    let seen = std::cell::Cell::new(None::<std::time::Instant>);
    move || {
        if seen.get().is_none() && sim_threads(pid) > 0 {
            seen.set(Some(std::time::Instant::now()));
        }
        seen.get().is_some_and(|t| t.elapsed() > wait)
    }
}

/// The CPU time (clock ticks) a process's threads named `darkbuf-sim-*` have used,
/// and how many such threads have exited: a sign that simulations have run.
fn sim_threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|rd| {
            rd.flatten()
                .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with("darkbuf-sim")))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn ctrl_c_during_a_sweep_keeps_the_points_that_finished() {
    // The first point simulates 100 ms, the second an hour: Ctrl-C once the sweep is
    // busy with the second keeps the first, written to --out and printed, exit 130.
    let d = tmp("sigint");
    let out = d.join("out");
    let child = spawn_piped(&[
        "sweep",
        &repo("scenarios/tap-reader.toml"),
        "--set",
        "duration=100ms,3600s",
        "--set",
        "warmup=10ms",
        "--jobs",
        "1",
        "--format",
        "json",
        "--out",
        out.to_str().unwrap(),
    ]);
    let pid = child.id();
    // Ready: the simulation thread is up, and then a few seconds for the 100 ms point
    // (it takes well under one); the hour-long point cannot finish meanwhile.
    let o = signal_when(child, "-INT", sim_threads_up_for(pid, std::time::Duration::from_secs(3)));
    no_panic(&o);
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(stderr(&o).contains("kept the 1 of 2 points"), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 1);
    assert_eq!(points[0]["results"]["scenario"]["duration_ns"], 100_000_000);
    let printed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(printed["points"].as_array().unwrap().len(), 1);
}

#[test]
fn sigterm_is_exit_143() {
    let child = spawn_piped(&["run", &repo("scenarios/tap-reader.toml"), "--set", "duration=3600s"]);
    let pid = child.id();
    let o = signal_when(child, "-TERM", || sim_threads(pid) > 0);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(143), "{}", stderr(&o));
    assert!(stderr(&o).contains("interrupted by SIGTERM"), "{}", stderr(&o));
}

#[test]
fn sigterm_stops_many_short_runs_at_once() {
    // Found by the CLI fuzz: 1000 runs of a 50 ms simulation (about 14 ms of CPU each,
    // so a run finishes well within every 50 ms wait for one) ran to the end and
    // exited 0 after a SIGTERM, as the signal was looked at only when no run had
    // finished for 50 ms. Now it stops at once and keeps the runs that finished.
    let child = spawn_piped(&[
        "run",
        &repo("scenarios/examples/all-keys.toml"),
        "--set",
        "duration=50ms",
        "--set",
        "warmup=10ms",
        "--runs",
        "1000",
        "--jobs",
        "1",
    ]);
    let pid = child.id();
    let o = signal_when(child, "-TERM", sim_threads_up_for(pid, std::time::Duration::from_millis(300)));
    no_panic(&o);
    assert_eq!(o.status.code(), Some(143), "{}", stderr(&o));
    assert!(stderr(&o).contains("interrupted by SIGTERM"), "{}", stderr(&o));
    assert!(stdout(&o).contains(" of 1000, interrupted"), "{}", stdout(&o));
}

#[test]
fn rtt_statistics_from_a_handful_of_probes_come_with_a_warning() {
    // tap-reader: the stock ring tail-drops nearly every probe; one of 50 is answered.
    let o = run(&["run", &repo("scenarios/tap-reader.toml"), "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("very few answered probes: 1 (seed 1)"), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["warnings"][0].as_str().unwrap().contains("very few answered probes"), "{v}");
}

#[test]
fn tables_say_what_plus_minus_is() {
    let o = run(&["run", &repo("scenarios/veth-bql.toml"), "--set", "duration=200ms", "--set", "warmup=50ms", "--runs", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("± = half-width of the 95% confidence interval of the mean (Student t over 2 runs"), "{}", stdout(&o));
    // A fraction shows at most 2 significant digits of an interval (not ±0.00000177)
    // and at most 5 of a value (4, or 5 where min and max share the mean's decimals).
    for word in stdout(&o).split_whitespace() {
        let ci = word.starts_with('±');
        let w = word.trim_start_matches('±').trim_start_matches('<');
        if w.contains('.') && w.parse::<f64>().is_ok() {
            let sig = w.replace('.', "").trim_start_matches(['0', '-']).len();
            assert!(sig <= if ci { 2 } else { 5 }, "{word} in\n{}", stdout(&o));
        }
    }
}

#[test]
fn sweep_tables_wrap_to_the_terminal_width() {
    let o = darkbuf()
        .args(["sweep", &repo("scenarios/seed-nrules3500.toml"), "--set", "duration=100ms", "--set", "warmup=20ms"])
        .env("COLUMNS", "70")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(widest <= 70, "{widest} columns:\n{text}");
    // Every point is still there, each in some table's header.
    for label in ["No BQL", "Per-pkt", "limit=4", "limit=8", "limit=16", "Batched"] {
        assert!(text.lines().any(|l| l.starts_with("| Metric") && l.contains(label)), "{label} missing:\n{text}");
    }
    // Without a terminal (or COLUMNS) one table, as before.
    let o = run(&["sweep", &repo("scenarios/seed-nrules3500.toml"), "--set", "duration=100ms", "--set", "warmup=20ms"]);
    assert_eq!(stdout(&o).lines().filter(|l| l.starts_with("| Metric")).count(), 1);
}

#[test]
fn the_report_page_says_how_to_reproduce_and_what_each_metric_means() {
    let d = tmp("report");
    let out = d.join("out");
    let o = run(&[
        "run",
        &repo("scenarios/veth-bql.toml"),
        "--set",
        "duration=200ms",
        "--set",
        "warmup=50ms",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let toml = std::fs::read_to_string(repo("scenarios/veth-bql.toml")).unwrap();
    let first_comment = toml.lines().find(|l| l.starts_with('#')).expect("the scenario has a comment");
    for page in [out.join("report.html"), d.join("rebuilt.html")] {
        if !page.exists() {
            let o = run(&["report", out.join("results.json").to_str().unwrap(), "--html", page.to_str().unwrap()]);
            assert!(o.status.success(), "{}", stderr(&o));
        }
        let html = std::fs::read_to_string(&page).unwrap();
        assert!(html.contains("duration=200ms") && html.contains("--out"), "the command line");
        let escaped = first_comment.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;");
        assert!(html.contains(&escaped), "the scenario file as written: {first_comment}");
        assert!(html.contains("commit <code>"), "the commit");
        assert!(html.contains(&format!("darkbuf {}", env!("CARGO_PKG_VERSION"))));
        assert!(html.contains("<section id=\"glossary\">"));
        assert!(!html.contains("not in darkbuf’s glossary"), "every metric is explained");
        assert!(html.contains("<tr><th>consumer.pps</th><td>packets/s</td>"));
    }
}

#[test]
fn every_metric_of_every_scenario_is_in_the_glossary() {
    let mut scenarios: Vec<PathBuf> = Vec::new();
    for dir in ["scenarios", "scenarios/examples", "crates/darkbuf-kernel/scenarios"] {
        for e in std::fs::read_dir(repo(dir)).unwrap().flatten() {
            if e.path().extension().is_some_and(|x| x == "toml") {
                scenarios.push(e.path());
            }
        }
    }
    assert!(scenarios.len() >= 10);
    let mut missing = std::collections::BTreeSet::new();
    for s in &scenarios {
        let mut args = vec!["sweep", s.to_str().unwrap(), "--set", "duration=100ms", "--set", "warmup=20ms", "--set", "runs=1", "--format", "json"];
        // A flent test preset's flows run between test_delay and test_delay before the end
        // (tcp_4up_squarewave: from 0 to 5 test_delays, each 6 test_delays short of the run).
        if std::fs::read_to_string(s).unwrap().lines().any(|l| l.starts_with("test = ")) {
            args.extend(["--set", "test_delay=15ms"]);
        }
        let o = run(&args);
        assert!(o.status.success(), "{}: {}", s.display(), stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        for p in v["points"].as_array().unwrap() {
            let r = &p["results"];
            let names = r["summary"].as_object().unwrap().keys().chain(r["runs"][0]["timeseries"].as_object().map_or(Vec::new(), |t| t.keys().collect()));
            for m in names {
                if darkbuf_report::glossary::lookup(m).is_none() {
                    missing.insert(m.clone());
                }
            }
        }
    }
    assert!(missing.is_empty(), "not in the glossary: {missing:?}");
}

#[test]
fn seed_compare_keeps_the_hand_written_discussion() {
    // `python3 tools/seed_compare.py > docs/seed-comparison.md` (the shell truncates the
    // file first) deleted the document's hand-written section.
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("seed_compare: skipped: no python3");
        return;
    }
    let o = Command::new("python3")
        .args([&repo("tools/seed_compare.py"), "--quick"])
        .env("DARKBUF", env!("CARGO_BIN_EXE_darkbuf"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let notes = std::fs::read_to_string(repo("docs/seed-comparison-notes.md")).unwrap();
    assert!(notes.contains("### Reading the differences"));
    assert!(stdout(&o).ends_with(&notes), "the script's output ends with the notes");
    let doc = std::fs::read_to_string(repo("docs/seed-comparison.md")).unwrap();
    assert!(doc.ends_with(&notes), "docs/seed-comparison.md ends with the notes");
}

#[test]
fn readme_and_docs_stand_alone() {
    // A clone has no ../shared: nothing a reader is sent to may be outside the repository.
    let mut files = vec![repo("README.md"), repo("crates/darkbuf-kernel/README.md")];
    for dir in ["docs", "docs/reference", "scenarios", "tools"] {
        for e in std::fs::read_dir(repo(dir)).unwrap().flatten() {
            if e.path().is_file() {
                files.push(e.path().to_string_lossy().into_owned());
            }
        }
    }
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(!text.contains("../shared"), "{f} refers to ../shared");
    }
    let readme = std::fs::read_to_string(repo("README.md")).unwrap();
    assert!(readme.contains("apt-get install iproute2 ethtool nftables iptables"), "kernel prerequisites");
}

#[test]
fn compare_and_check_help_say_what_the_error_is() {
    let o = run(&["compare", "--help"]);
    assert!(stdout(&o).contains("(sim - kernel) / kernel"), "{}", stdout(&o));
}

#[test]
fn long_runs_show_progress_and_the_time_left_on_a_terminal() {
    // `--runs N` showed nothing while it ran. On a terminal (script(1) gives the command
    // one) a bar shows the runs done and an estimate of the time left. It appears after
    // a second, so the runs must take longer than that: 6 x 20 s simulated of
    // veth-bql take about 4 s (31x real time at d9f0da5, 2026-11-26; 2 s each were
    // enough at 8x, 10 s at 22x).
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("progress: skipped: no script(1) to give darkbuf a terminal");
        return;
    }
    let cmd = format!(
        "{} run {} --runs 6 --jobs 1 --set duration=20s --set warmup=100ms --format csv > /dev/null",
        env!("CARGO_BIN_EXE_darkbuf"),
        repo("scenarios/veth-bql.toml")
    );
    let o = Command::new("script").args(["-qefc", &cmd, "/dev/null"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let screen = String::from_utf8_lossy(&o.stdout);
    assert!(screen.contains("/6 runs") && screen.contains("left"), "{screen}");
}
