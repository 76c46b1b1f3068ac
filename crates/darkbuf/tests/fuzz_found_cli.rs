//! Bad input a fuzzer found the CLI mishandling: each case must end in a clear error
//! with exit code 2 (file, line, column where there is one, and what would be valid).

mod common;

use common::{darkbuf, repo, stderr};
use std::process::Output;

/// A fresh directory for one test.
fn tmp(name: &str) -> common::TmpDir {
    common::tmp("fuzz-cli", name)
}

const SHORT: [&str; 4] = ["--set", "duration=300ms", "--set", "warmup=50ms"];

/// Exit code 2 and the stderr, which must be one `darkbuf: ...` line.
fn bad_input(o: &Output) -> String {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.starts_with("darkbuf: "), "{e}");
    e
}

/// `darkbuf run` (or `sweep`) of veth-bql, shortened, as parsed JSON.
fn results_json(cmd: &str, extra: &[&str]) -> serde_json::Value {
    let scn = repo("scenarios/veth-bql.toml");
    let mut args = vec![cmd, scn.as_str(), "--format", "json"];
    args.extend(SHORT);
    args.extend(extra);
    let o = darkbuf(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Writes `v` pretty-printed; the 1-based line of the first line containing `needle`.
fn write_pretty(path: &std::path::Path, v: &serde_json::Value, needle: &str) -> usize {
    let text = serde_json::to_string_pretty(v).unwrap();
    std::fs::write(path, &text).unwrap();
    text.lines().position(|l| l.contains(needle)).expect("needle") + 1
}

// --- 1. `darkbuf report`: where in the results JSON, and at which field ---

#[test]
fn report_wrong_type_names_file_line_column_and_field_path() {
    let dir = tmp("wrong-type");
    let mut v = results_json("run", &[]);
    v["summary"]["ping.rtt_avg_ms"]["mean"] = serde_json::json!("x");
    let p = dir.join("min2.json");
    let line = write_pretty(&p, &v, "\"mean\": \"x\"");
    let e = bad_input(&darkbuf(&["report", p.to_str().unwrap()]));
    let at = format!("min2.json:{line}:");
    assert!(e.contains(&at), "{at} in {e}");
    assert!(e.contains("summary.\"ping.rtt_avg_ms\".mean: invalid type: string \"x\", expected f64"), "{e}");
    assert!(e.contains("a run results JSON"), "{e}");
    assert!(!e.contains("neither a run nor a sweep"), "the file is a run's: {e}");
}

#[test]
fn report_missing_field_names_its_object_and_position() {
    let dir = tmp("missing");
    let mut v = results_json("run", &[]);
    v["summary"]["ping.rtt_avg_ms"].as_object_mut().unwrap().remove("mean");
    let p = dir.join("miss.json");
    write_pretty(&p, &v, "\"mean\"");
    let e = bad_input(&darkbuf(&["report", p.to_str().unwrap()]));
    // The position is where serde_json noticed: the end of the object.
    assert!(regex_like_location(&e, "miss.json"), "{e}");
    assert!(e.contains("summary.\"ping.rtt_avg_ms\": missing field `mean`"), "{e}");
}

#[test]
fn report_sweep_error_is_reported_as_a_sweep_with_the_point_index() {
    let dir = tmp("sweep");
    let mut v = results_json("sweep", &["--set", "consumer.nrules=0,1"]);
    v["points"][1]["results"]["runs"][0]["seed"] = serde_json::json!(-1);
    let p = dir.join("sweep.json");
    let line = write_pretty(&p, &v, "\"seed\": -1");
    let e = bad_input(&darkbuf(&["report", p.to_str().unwrap()]));
    assert!(e.contains(&format!("sweep.json:{line}:")), "{e}");
    assert!(e.contains("points[1].results.runs[0].seed: invalid value: integer `-1`, expected u64"), "{e}");
    assert!(e.contains("sweep results JSON"), "{e}");
}

#[test]
fn report_of_neither_shape_says_what_is_expected() {
    let dir = tmp("neither");
    let p = dir.join("x.json");
    std::fs::write(&p, "{\"hello\": 1}").unwrap();
    let e = bad_input(&darkbuf(&["report", p.to_str().unwrap()]));
    assert!(e.contains("x.json:1:1: neither a run nor a sweep results JSON"), "{e}");
    assert!(e.contains("`hello`") && e.contains("`points`") && e.contains("`summary`"), "{e}");

    std::fs::write(&p, "[1,\n").unwrap();
    let e = bad_input(&darkbuf(&["report", p.to_str().unwrap()]));
    assert!(e.contains("x.json:2:1: not JSON: EOF while parsing"), "{e}");
}

/// `NAME:LINE:COLUMN: ` with numbers, somewhere in `e`.
fn regex_like_location(e: &str, name: &str) -> bool {
    e.split(&format!("{name}:")).skip(1).any(|rest| {
        let mut it = rest.splitn(3, ':');
        let (l, c) = (it.next().unwrap_or(""), it.next().unwrap_or(""));
        !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()) && !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit())
    })
}

// --- 3. one range for every seed, and no run's seed wraps around ---

const MAX_SEED: &str = "9223372036854775807";

#[test]
fn seed_flag_has_the_scenario_keys_range() {
    let scn = repo("scenarios/veth-bql.toml");
    for args in [vec!["--seed", "18446744073709551615"], vec!["--seed", "9223372036854775808"]] {
        let mut a = vec!["run", scn.as_str()];
        a.extend(args);
        let o = darkbuf(&a);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{e}");
        assert!(e.contains(&format!("is not in 0..={MAX_SEED}")), "{e}");
    }
    // The scenario's key says the same range.
    let e = bad_input(&darkbuf(&["run", &scn, "--set", "seed=9223372036854775808"]));
    assert!(e.contains(&format!("0..={MAX_SEED}")), "{e}");
}

#[test]
fn seed_plus_runs_past_the_largest_seed_is_refused_not_wrapped() {
    let scn = repo("scenarios/veth-bql.toml");
    let e = bad_input(&darkbuf(&["run", &scn, "--seed", MAX_SEED, "--runs", "3"]));
    assert!(e.contains(&format!("darkbuf: --seed {MAX_SEED}: with 3 runs the last run's seed would be 9223372036854775809")), "{e}");
    assert!(e.contains("expected a seed in 0..=9223372036854775805 for 3 runs"), "{e}");

    // --runs over the scenario's seed blames --runs.
    let e = bad_input(&darkbuf(&["sweep", &scn, "--set", "seed=9223372036854775806", "--set", "consumer.nrules=0,1", "--runs", "3"]));
    assert!(e.contains("darkbuf: --runs 3: the scenario's seed is 9223372036854775806"), "{e}");
    assert!(e.contains("expected at most 2 runs"), "{e}");

    // seed and runs both in the file: the file's `seed`, with its position.
    let dir = tmp("seed-runs");
    let p = dir.join("s.toml");
    std::fs::write(&p, "name = \"s\"\nruns = 2\nseed = 9223372036854775807\n[[traffic]]\nkind = \"udp\"\n").unwrap();
    let e = bad_input(&darkbuf(&["run", p.to_str().unwrap()]));
    assert!(e.contains("s.toml:3:8: `seed` = 9223372036854775807: with 2 runs"), "{e}");
    assert!(e.contains("expected a seed in 0..=9223372036854775806 for 2 runs"), "{e}");
}

#[test]
fn the_largest_seeds_that_fit_still_run() {
    let scn = repo("scenarios/veth-bql.toml");
    let mut args = vec!["run", scn.as_str(), "--seed", "9223372036854775805", "--runs", "3", "--format", "json"];
    args.extend(SHORT);
    let o = darkbuf(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let seeds: Vec<u64> = v["runs"].as_array().unwrap().iter().map(|r| r["seed"].as_u64().unwrap()).collect();
    assert_eq!(seeds, [9223372036854775805, 9223372036854775806, 9223372036854775807]);
}

// --- 2. `--plot METRIC` of a known kind that these results do not have ---

/// `darkbuf sweep` of veth-bql (UDP and ping, 2 CPUs) over two rule counts.
fn sweep_veth(extra: &[&str]) -> Output {
    let scn = repo("scenarios/veth-bql.toml");
    let mut args = vec!["sweep", scn.as_str(), "--set", "consumer.nrules=0,1"];
    args.extend(SHORT);
    args.extend(extra);
    darkbuf(&args)
}

#[test]
fn plot_of_a_kind_the_scenario_lacks_is_refused_before_the_sweep_runs() {
    let dir = tmp("plot-up-front");
    let out = dir.join("D");
    let d = out.to_str().unwrap();
    let e = bad_input(&sweep_veth(&["--plot", "tcp.goodput_mbps", "--out", d]));
    assert!(e.contains("--plot tcp.goodput_mbps: not in these results: the scenario has no TCP traffic"), "{e}");
    let e = bad_input(&sweep_veth(&["--plot", "cpu.99.busy_pct", "--out", d]));
    assert!(e.contains("--plot cpu.99.busy_pct: not in these results: the scenario has 2 CPUs (cpu.0 .. cpu.1)"), "{e}");
    // Refused before anything ran: --out was not even made.
    assert!(!out.exists());

    let tcp = repo("scenarios/tcp-100mbit.toml");
    let e = bad_input(&darkbuf(&["sweep", &tcp, "--set", "path.delay=5ms,10ms", "--plot", "tcp.flow.63.goodput_mbps", "--out", d]));
    assert!(e.contains("--plot tcp.flow.63.goodput_mbps: not in these results: the scenario has 4 TCP flows (tcp.flow.0 .. tcp.flow.3)"), "{e}");
    assert!(e.contains("e.g. tcp.flow.3.goodput_mbps"), "{e}");

    let p = dir.join("noping.toml");
    std::fs::write(&p, "name = \"noping\"\n[[traffic]]\nkind = \"udp\"\n").unwrap();
    let e = bad_input(&darkbuf(&["sweep", p.to_str().unwrap(), "--set", "consumer.nrules=0,1", "--plot", "ping.rtt_avg_ms", "--out", d]));
    assert!(e.contains("--plot ping.rtt_avg_ms: not in these results: the scenario has no ping traffic"), "{e}");
    // ping.N.* are per pinger, with two or more.
    let p = dir.join("pings.toml");
    std::fs::write(&p, "name = \"pings\"\n[[traffic]]\nkind = \"ping\"\n").unwrap();
    let e = bad_input(&darkbuf(&["sweep", p.to_str().unwrap(), "--set", "consumer.nrules=0,1", "--plot", "ping.0.rtt_avg_ms", "--out", d]));
    assert!(e.contains("--plot ping.0.rtt_avg_ms: not in these results: ping.N.* are per pinger with more than one ping entry"), "{e}");
    assert!(e.contains("plot ping.rtt_avg_ms"), "{e}");
    std::fs::write(&p, "name = \"pings\"\n[[traffic]]\nkind = \"ping\"\n[[traffic]]\nkind = \"ping\"\n").unwrap();
    let e = bad_input(&darkbuf(&["sweep", p.to_str().unwrap(), "--set", "consumer.nrules=0,1", "--plot", "ping.2.loss_pct", "--out", d]));
    assert!(e.contains("--plot ping.2.loss_pct: not in these results: the scenario has 2 pingers (ping.0 .. ping.1)"), "{e}");
    assert!(e.contains("e.g. ping.1.loss_pct"), "{e}");
    assert!(!out.exists());
}

#[test]
fn plot_no_point_measured_fails_after_the_sweep_and_keeps_its_results() {
    let dir = tmp("plot-after");
    let out = dir.join("D");
    // Under mq, TX queue 0's qdisc sends nothing here (XPS puts the flood on queue 1),
    // so it has no per-queue counters, which only the results can tell.
    let o = sweep_veth(&["--set", "qdisc.kind=mq", "--plot", "qdisc.txq.0.sent_pkts", "--plot", "consumer.pps", "--out", out.to_str().unwrap()]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("--plot qdisc.txq.0.sent_pkts: not in these results: no point measured it; these results have qdisc.txq.1.sent_pkts"), "{e}");
    assert!(e.contains("the other results are in"), "{e}");
    assert!(out.join("results.json").exists() && out.join("sweep_consumer_pps.svg").exists());
    assert!(!out.join("sweep_qdisc_txq_0_sent_pkts.svg").exists());

    // `report` of those results: refused before the page is written.
    let page = dir.join("x.html");
    let results = out.join("results.json");
    let e = bad_input(&darkbuf(&["report", results.to_str().unwrap(), "--plot", "tcp.flow.77.goodput_mbps", "--html", page.to_str().unwrap()]));
    assert!(e.contains("--plot tcp.flow.77.goodput_mbps: not in these results: no point measured it; they have no tcp.* metric at all"), "{e}");
    assert!(e.contains("metrics in these results: ") && e.contains("consumer.pps"), "{e}");
    assert!(!page.exists());
    // A metric that is there still plots.
    let o = darkbuf(&["report", results.to_str().unwrap(), "--plot", "cpu.1.net_tx_pct", "--html", page.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&page).unwrap().contains("id=\"plot-sweep_cpu_1_net_tx_pct\""));
}

// --- 4. a sweep's `--set K="a,b"` is one value, not a list ---

#[test]
fn sweep_set_of_a_quoted_string_with_a_comma_fixes_it() {
    // `--set 'name="x,y"'` was taken for a list and swept the points `name="x` and
    // `name=y"`, each named with a stray quote.
    let v = results_json("sweep", &["--set", "name=\"x,y\"", "--set", "consumer.nrules=0,1"]);
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "{}", serde_json::to_string_pretty(&v["points"]).unwrap());
    for p in points {
        assert_eq!(p["results"]["scenario"]["name"], "x,y");
    }
    assert_eq!(points[1]["label"], "consumer.nrules=1");
}

/// A web entry whose arrivals outpace the path reaches the simulator's bound on open
/// connections (`MAX_WEB_OPEN`) while it runs: the scenario's inputs are to change, so
/// exit 2, not 3 (a backend that is unavailable). Found by a newcomer's try.
#[test]
fn web_arrivals_past_the_open_connections_bound_are_bad_input() {
    let dir = tmp("web-open");
    let f = dir.join("web.toml");
    std::fs::write(&f, "name = \"web\"\nduration = \"1s\"\nwarmup = \"0s\"\n[device]\ndriver = \"nic\"\nrate = \"10Mbit\"\n[[traffic]]\nkind = \"web\"\narrivals = \"1000000/s\"\n").unwrap();
    let e = bad_input(&darkbuf(&["run", f.to_str().unwrap()]));
    assert!(e.contains("connections open at") && e.contains("MAX_WEB_OPEN") && e.contains("lower `arrivals`"), "{e}");
}
