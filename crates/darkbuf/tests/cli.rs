//! The command-line contract: exit codes, error positions, output formats.

mod common;

use common::{darkbuf, gunzip_json, repo, stderr};
use std::process::Command;

fn write(name: &str, text: &str) -> String {
    common::write("cli", name, text)
}

const SHORT: [&str; 4] = ["--set", "duration=300ms", "--set", "warmup=50ms"];

#[test]
fn run_prints_json_with_the_contract_metrics() {
    let mut args = vec!["run", &repo("scenarios/veth-bql.toml")[..], "--format", "json"].into_iter().map(String::from).collect::<Vec<_>>();
    args.extend(SHORT.iter().map(|s| s.to_string()));
    let o = Command::new(env!("CARGO_BIN_EXE_darkbuf")).args(&args).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for k in ["scenario", "backend", "environment", "runs", "summary", "unavailable"] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    for m in [
        "ping.rtt_avg_ms", "ping.rtt_p99_ms", "ping.loss_pct", "consumer.pps", "sink.pps", "qdisc.requeues",
        "qdisc.backlog_avg_pkts", "bql.limit_avg", "bql.inflight_max", "txq.stack_xoff", "txq.drv_xoff",
        "napi.polls", "napi.avg_work", "napi.full_budget_polls", "ring.drops", "ping.wait_ring_ms",
    ] {
        let s = &v["summary"][m];
        assert!(s["mean"].is_number() && s["n"] == 1, "summary of {m}: {s}");
    }
    assert_eq!(v["backend"], "sim");
}

#[test]
fn unknown_key_is_exit_2_with_position_and_suggestion() {
    let p = write("typo.toml", "duration = \"1s\"\n[device.bql]\nenabled = true\nlimit_mn = 8\n[qdisc]\nkind = \"pfifo\"\n[[traffic]]\nkind = \"udp\"\n");
    let o = darkbuf(&["run", &p]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("typo.toml:4:1"), "{e}");
    assert!(e.contains("limit_min"), "{e}");
}

#[test]
fn bad_duration_unit_is_exit_2() {
    let p = write("parsecs.toml", "duration = \"10 parsecs\"\n[[traffic]]\nkind = \"udp\"\n");
    let o = darkbuf(&["run", &p]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("parsecs.toml:1:12") && e.contains("parsecs"), "{e}");
}

#[test]
fn bql_without_qdisc_is_exit_2() {
    let p = write("noq.toml", "[device.bql]\nenabled = true\n[qdisc]\nkind = \"noqueue\"\n[[traffic]]\nkind = \"udp\"\n");
    let o = darkbuf(&["run", &p]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("noq.toml:2:"), "{}", stderr(&o));
}

#[test]
fn bad_set_is_exit_2_naming_the_flag() {
    let o = darkbuf(&["run", &repo("scenarios/veth-bql.toml"), "--set", "device.bql.limit_min=lots"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--set device.bql.limit_min=lots"), "{}", stderr(&o));
}

#[test]
fn kernel_backend_unavailable_is_exit_3() {
    let o = darkbuf(&["run", &repo("scenarios/veth-bql.toml"), "--backend", "kernel"]);
    assert_eq!(o.status.code(), Some(3));
}

/// The kernel backend has no radio: driver = "wifi" is unavailable there (exit 3),
/// before any root check, with what mac80211_hwsim could and could not check.
#[test]
fn kernel_backend_refuses_wifi_with_exit_3() {
    let o = darkbuf(&["run", &repo("scenarios/wifi-anomaly.toml"), "--backend", "kernel"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("mac80211_hwsim"), "{}", stderr(&o));
}

#[test]
fn sweep_prints_one_column_per_point() {
    let mut args: Vec<String> = ["sweep", &repo("scenarios/veth-bql.toml"), "--set", "consumer.nrules=0,3500,15000"]
        .iter().map(|s| s.to_string()).collect();
    args.extend(SHORT.iter().map(|s| s.to_string()));
    let o = Command::new(env!("CARGO_BIN_EXE_darkbuf")).args(&args).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let header = out.lines().find(|l| l.starts_with("| Metric")).expect("table header");
    assert_eq!(header.matches('|').count(), 5, "{header}");
    for n in ["0", "3500", "15000"] {
        assert!(header.contains(n), "{header}");
    }
}

#[test]
fn probe_trace_on_the_simulator_is_a_warning_and_changes_nothing() {
    let p = repo("scenarios/veth-bql.toml");
    let mut args = vec!["run".to_string(), p, "--format".into(), "json".into()];
    args.extend(SHORT.iter().map(|s| s.to_string()));
    let plain = Command::new(env!("CARGO_BIN_EXE_darkbuf")).args(&args).output().unwrap();
    args.push("--probe-trace".into());
    let traced = Command::new(env!("CARGO_BIN_EXE_darkbuf")).args(&args).output().unwrap();
    assert!(traced.status.success(), "{}", stderr(&traced));
    assert!(stderr(&traced).contains("warning: --probe-trace traces the kernel backend's probes"), "{}", stderr(&traced));
    assert!(!stderr(&plain).contains("--probe-trace"));
    assert_eq!(plain.stdout, traced.stdout);
}

#[test]
fn same_seed_same_json() {
    let p = repo("scenarios/veth-bql.toml");
    let mut args = vec!["run".to_string(), p, "--format".into(), "json".into(), "--runs".into(), "2".into()];
    args.extend(SHORT.iter().map(|s| s.to_string()));
    let a = Command::new(env!("CARGO_BIN_EXE_darkbuf")).args(&args).output().unwrap();
    let b = Command::new(env!("CARGO_BIN_EXE_darkbuf")).args(&args).output().unwrap();
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 2);
    assert_eq!(v["summary"]["consumer.pps"]["n"], 2);
}

#[test]
fn test_presets_bad_names_and_downloads_on_a_tap_are_exit_2() {
    let p = write("bad-test.toml", "test = \"rrl\"\n");
    let o = darkbuf(&["run", &p]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("bad-test.toml:1:8") && e.contains("did you mean \"rrul\"") && e.contains("\"tcp_4up_squarewave\""), "{e}");
    // A tap's far end is its reader, which sends nothing (veth's peer namespace and a
    // NIC's far host run the downloads).
    let p = write("rrul-tap.toml", "test = \"rrul\"\ntest_delay = \"1s\"\n[device]\ndriver = \"tun\"\n");
    let o = darkbuf(&["run", &p]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("device.driver = \"nic\" or \"veth\""), "{}", stderr(&o));
}

#[test]
fn irtt_over_a_tap_on_the_kernel_backend() {
    // The tap's reader answers irtt as the server does over veth. Without root the
    // backend is unavailable: exit 3.
    let p = write("irtt-kernel.toml", "duration = \"1s\"\nwarmup = \"200ms\"\n[device]\ndriver = \"tun\"\nbackpressure = false\n[[traffic]]\nkind = \"irtt\"\ninterval = \"20ms\"\n");
    let o = darkbuf(&["run", &p, "--backend", "kernel", "--format", "json"]);
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
        return;
    }
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rtt = &v["runs"][0]["metrics"]["irtt.rtt_avg_ms"];
    assert!(rtt.as_f64().is_some_and(|x| x > 0.0), "irtt.rtt_avg_ms = {rtt}; {}", stderr(&o));
}

#[test]
fn a_rrul_run_writes_flents_rrul_data_file() {
    let dir = common::tmp("cli", "rrul");
    let o = darkbuf(&["run", &repo("scenarios/rrul-100mbit.toml"), "--set", "duration=1s", "--out", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = gunzip_json(&dir.join("results.flent.gz"));
    assert_eq!(v["metadata"]["NAME"], "rrul");
    for s in ["TCP upload BE", "TCP download EF", "TCP upload sum", "TCP totals", "Ping (ms) UDP EF", "Ping (ms) ICMP", "Ping (ms) avg"] {
        assert!(v["results"].get(s).is_some(), "no {s}");
    }
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("ping_cdf plot)"), "the report has flent's ping_cdf");
}

/// `compare --out` writes each backend's flent file, titled by its backend, for flent
/// to draw together. Needs root (the kernel side); skipped without.
#[test]
fn compare_out_writes_a_flent_file_per_backend() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("compare --out: skipped: the kernel backend needs root");
        return;
    }
    let dir = common::tmp("cli", "compare-flent");
    let scn = repo("crates/darkbuf-kernel/scenarios/veth-htb-rrul_up.toml");
    let o = darkbuf(&["compare", &scn, "--set", "duration=2s", "--out", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    for backend in ["sim", "kernel"] {
        let v = gunzip_json(&dir.join(format!("{backend}.flent.gz")));
        assert_eq!(v["metadata"]["NAME"], "rrul_up");
        assert_eq!(v["metadata"]["TITLE"], format!("veth-htb-rrul_up ({backend})"));
        assert_eq!(v["metadata"]["HOST"], backend);
        let sum = v["metadata"]["SERIES_META"]["TCP upload sum"]["MEAN_VALUE"].as_f64().unwrap_or(0.0);
        assert!(sum > 10.0, "{backend}: the uploads moved data: {sum} Mbit/s");
    }
    assert!(dir.join("results.json").exists() && dir.join("results.csv").exists());
}

/// flent's `rtt_fair_var_up` to three hosts 0, 10 and 30 ms further away: each host's
/// upload and ping data set, its ping's RTT the host's distance, Jain's index, and the
/// hosts in the file's metadata.
#[test]
fn an_rtt_fair_run_writes_each_hosts_data_sets_and_the_fairness_index() {
    let dir = common::tmp("cli", "rtt_fair");
    let o = darkbuf(&[
        "run",
        &repo("scenarios/rtt-fair-100mbit.toml"),
        "--set",
        "test_parameters.host_delays=0ms,10ms,30ms",
        "--set",
        // 5 s: the 70 ms host's flow spends its first second TSQ-bound at 2-segment
        // skbs behind a 4 ms NIC ring, with cwnd at twice what it has out.
        "duration=5s",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = gunzip_json(&dir.join("results.flent.gz"));
    let md = &v["metadata"];
    assert_eq!((&md["NAME"], &md["HOSTS"]), (&"rtt_fair_var_up".into(), &serde_json::json!(["host1", "host2", "host3"])));
    assert_eq!(md["TEST_PARAMETERS"], serde_json::json!({"host_delays": "0ms,10ms,30ms"}));
    let mean = |s: &str| md["SERIES_META"][s]["MEAN_VALUE"].as_f64().unwrap_or_else(|| panic!("no {s}"));
    // Each host's ping is 2 x its delay further than host1's (5 ms each way shared).
    let near = mean("Ping (ms) ICMP host1");
    for (host, delay) in [("host2", 10.0), ("host3", 30.0)] {
        let rtt = mean(&format!("Ping (ms) ICMP {host}"));
        assert!((rtt - near - 2.0 * delay).abs() < 2.0, "{host}: {rtt} ms against {near} + 2 x {delay}");
    }
    // fq_codel shares the link out evenly once the 70 ms flow is out of slow start:
    // Jain's index near 1 over the last 2 s, in flent's unit (the whole run's mean is
    // lower: 0.92).
    let fair: Vec<f64> = v["results"]["TCP upload fairness"].as_array().expect("the index series").iter().filter_map(|x| x.as_f64()).collect();
    let tail = &fair[fair.len() - 10..];
    let tail_mean = tail.iter().sum::<f64>() / tail.len() as f64;
    assert!(tail_mean > 0.95, "{tail:?}");
    assert_eq!(md["SERIES_META"]["TCP upload fairness"]["UNITS"], "Idx");
    assert!(v["results"].get("TCP upload BE host3").is_some() && v["results"].get("TCP download BE host1").is_none());
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("results.json")).unwrap()).unwrap();
    assert!(r["summary"]["ping.2.rtt_avg_ms"]["mean"].as_f64().unwrap() > 70.0);
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("fairness index (flent"), "the report draws the index");
}

/// flent's `tcp_ndown` with `--test-parameter download_streams=3`: three download data
/// sets, flent's sum of them, and the parameter in the file's metadata.
#[test]
fn a_tcp_ndown_run_writes_its_streams_and_test_parameter() {
    let dir = common::tmp("cli", "ndown");
    let o = darkbuf(&[
        "run",
        &repo("scenarios/tcp_4up-100mbit.toml"),
        "--set",
        "test=tcp_ndown",
        "--set",
        "test_parameters.download_streams=3",
        "--set",
        "duration=2s",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = gunzip_json(&dir.join("results.flent.gz"));
    assert_eq!((&v["metadata"]["NAME"], &v["metadata"]["TEST_PARAMETERS"]), (&"tcp_ndown".into(), &serde_json::json!({"download_streams": "3"})));
    let mean = |s: &str| v["metadata"]["SERIES_META"][s]["MEAN_VALUE"].as_f64().unwrap_or_else(|| panic!("no {s}"));
    let streams: f64 = (1..=3).map(|i| mean(&format!("TCP download::{i}"))).sum();
    assert!(streams > 10.0, "the downloads moved data: {streams} Mbit/s");
    assert!(v["results"].get("TCP download::4").is_none() && v["results"].get("TCP upload::1").is_none());
    // flent's sum is per time step over the streams with a value there; over the whole
    // run its mean is the streams' means added wherever all three ran.
    assert!((mean("TCP download sum") - streams).abs() < 0.2 * streams, "{} against {streams}", mean("TCP download sum"));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("download plot)") && html.contains("totals (flent"), "the report has flent's download and totals plots");
}
