//! Results people read and share (issue 6): runs with confidence intervals, `--out`
//! files (JSON, CSV, .flent.gz, SVG, HTML), sweeps with one column per point, and
//! `darkbuf report`. Short scenarios (1 s measured after 0.2 s warmup).

mod common;

use common::{gunzip_json, repo};
use std::path::Path;
use std::process::Output;

/// A fresh directory for one test.
fn tmp(name: &str) -> common::TmpDir {
    common::tmp("report-cli", name)
}

const SHORT: [&str; 4] = ["--set", "duration=1s", "--set", "warmup=200ms"];

/// `darkbuf ARGS`, which must succeed.
fn darkbuf(args: &[&str]) -> Output {
    let o = common::darkbuf(args);
    assert!(o.status.success(), "darkbuf {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    o
}

fn run_short(extra: &[&str]) -> Output {
    let scn = repo("scenarios/veth-bql.toml");
    let mut args = vec!["run", scn.as_str()];
    args.extend(SHORT);
    args.extend(extra);
    darkbuf(&args)
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The page has `min_svg` plots, tables, and asks for nothing over the network.
fn check_html(html: &str, min_svg: usize) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.matches("<svg").count() >= min_svg, "{} plots", html.matches("<svg").count());
    assert!(html.contains("<table"));
    assert!(!html.contains("http://") && !html.contains("https://"));
    assert!(!html.contains("<script") && !html.contains("<link") && !html.contains("<img"));
    for attr in ["src=", "href="] {
        for (i, _) in html.match_indices(attr) {
            assert!(html[i + attr.len()..].starts_with("\"#"), "non-local {attr}");
        }
    }
}

/// flent's data file: its top-level keys, and every series as long as `x_values`.
fn check_flent(v: &serde_json::Value) {
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["metadata", "raw_values", "results", "version", "x_values"]);
    assert_eq!(v["metadata"]["NAME"], "ping");
    assert_eq!(v["version"], 4);
    let n = v["x_values"].as_array().unwrap().len();
    let results = v["results"].as_object().unwrap();
    assert!(!results.is_empty());
    for (name, s) in results {
        assert_eq!(s.as_array().unwrap().len(), n, "{name}");
        assert!(!v["raw_values"][name].as_array().unwrap().is_empty(), "{name}");
    }
}

#[test]
fn three_runs_give_mean_ci_min_max_and_n_3_for_every_metric() {
    let o = run_short(&["--runs", "3", "--format", "json"]);
    assert!(o.stderr.is_empty(), "no progress bar when stderr is not a terminal: {}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let seeds: Vec<u64> = v["runs"].as_array().unwrap().iter().map(|r| r["seed"].as_u64().unwrap()).collect();
    assert_eq!(seeds, [1, 2, 3], "different seeds");
    let summary = v["summary"].as_object().unwrap();
    let mut measured = 0;
    for (m, s) in summary {
        if s.is_null() {
            assert!(v["unavailable"][m].is_string(), "{m} is null without a reason");
            continue;
        }
        measured += 1;
        let keys: Vec<&String> = s.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["ci95", "max", "mean", "min", "n"], "{m}");
        assert_eq!(s["n"], 3, "{m}");
        let (mean, ci, min, max) = (s["mean"].as_f64().unwrap(), s["ci95"].as_f64().unwrap(), s["min"].as_f64().unwrap(), s["max"].as_f64().unwrap());
        assert!(min <= mean && mean <= max && ci >= 0.0, "{m}: {s}");
    }
    assert!(measured >= 20, "{measured} metrics");

    // The table shows mean ± ci and n, then the histograms summed over the runs.
    let out = String::from_utf8(run_short(&["--runs", "3"]).stdout).unwrap();
    assert!(out.contains("| metric ") && out.contains("± ci95") && out.contains("| n |"), "{out}");
    assert!(out.contains("histograms, 3 runs summed:") && out.contains("@napi_work:"), "{out}");
}

#[test]
fn out_writes_json_csv_flent_plots_and_a_report() {
    let dir = tmp("run");
    let d = dir.to_str().unwrap();
    let o = run_short(&["--runs", "2", "--out", d]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("| metric"));

    let json: serde_json::Value = serde_json::from_str(&read(&dir.join("results.json"))).unwrap();
    assert_eq!(json["runs"].as_array().unwrap().len(), 2);
    assert!(read(&dir.join("results.csv")).starts_with("metric,mean,ci95,min,max,n\n"));
    let flent = gunzip_json(&dir.join("results.flent.gz"));
    check_flent(&flent);
    assert!(flent["results"]["Ping (ms) ICMP"].is_array());
    for svg in ["ping_cdf.svg", "probe_time.svg"] {
        let s = read(&dir.join(svg));
        assert!(s.starts_with("<svg") && s.contains("</svg>"), "{svg}");
    }
    let html = read(&dir.join("report.html"));
    check_html(&html, 3);

    // `report` rebuilds the same page from the JSON, and prints the table without --html.
    let again = dir.join("again/report.html");
    darkbuf(&["report", &format!("{d}/results.json"), "--html", again.to_str().unwrap()]);
    assert_eq!(read(&again), html);
    // The printouts say which window they count (issue 48: not the table's).
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("# seed 1: tc -s qdisc show dev veth0\n# (whole run: 0.2 s warmup + 1 s measured; the table above: the measured window only)\n"),
        "{out}"
    );
    let table = String::from_utf8(darkbuf(&["report", &format!("{d}/results.json")]).stdout).unwrap();
    assert!(table.starts_with("| metric") && table.contains("ping.rtt_avg_ms"), "{table}");
}

#[test]
fn sweep_over_three_rule_counts_prints_one_column_per_point() {
    let dir = tmp("sweep");
    let d = dir.to_str().unwrap();
    let scn = repo("scenarios/veth-bql.toml");
    let mut args = vec!["sweep", scn.as_str(), "--set", "consumer.nrules=0,100,200", "--out", d];
    args.extend(SHORT);
    let o = darkbuf(&args);
    assert!(o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    let header = out.lines().find(|l| l.starts_with("| Metric")).expect("table header");
    let cells: Vec<&str> = header.split('|').map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(cells, ["Metric", "consumer.nrules=0", "consumer.nrules=100", "consumer.nrules=200"]);

    // The same layout as CSV and JSON (results.csv/json are what --format csv/json print).
    let csv = read(&dir.join("results.csv"));
    assert_eq!(csv.lines().next(), Some("metric,consumer.nrules=0,consumer.nrules=100,consumer.nrules=200"));
    let json: serde_json::Value = serde_json::from_str(&read(&dir.join("results.json"))).unwrap();
    assert_eq!(json["points"].as_array().unwrap().len(), 3);

    // One flent series per point in results.flent.gz, and a file per point.
    let flent = gunzip_json(&dir.join("results.flent.gz"));
    check_flent(&flent);
    assert_eq!(flent["results"].as_object().unwrap().len(), 3);
    for f in ["01-consumer.nrules=0", "02-consumer.nrules=100", "03-consumer.nrules=200"] {
        check_flent(&gunzip_json(&dir.join(format!("flent/{f}.flent.gz"))));
    }
    // The metric against the swept parameter, and the page.
    assert!(read(&dir.join("sweep_ping_rtt_avg_ms.svg")).contains("consumer.nrules"));
    check_html(&read(&dir.join("report.html")), 3);

    let page = dir.join("sweep.html");
    darkbuf(&["report", &format!("{d}/results.json"), "--html", page.to_str().unwrap(), "--plot", "qdisc.requeues"]);
    let html = read(&page);
    check_html(&html, 3);
    assert!(html.contains("id=\"plot-sweep_qdisc_requeues\""));
}

/// The `<rect>` elements of `svg` whose width or height is negative (invalid SVG: a
/// browser draws nothing), as `x,y,width,height` strings.
fn negative_rects(svg: &str) -> Vec<String> {
    let attr = |tag: &str, name: &str| -> f64 {
        let key = format!(" {name}=\"");
        tag.split_once(&key).and_then(|(_, r)| r.split_once('"')).map_or(0.0, |(v, _)| v.parse().unwrap_or(f64::NAN))
    };
    svg.split("<rect").skip(1).filter_map(|t| {
        let tag = t.split_once('>').map_or(t, |(a, _)| a);
        let (w, h) = (attr(tag, "width"), attr(tag, "height"));
        (!(w >= 0.0 && h >= 0.0)).then(|| format!("{},{},{w},{h}", attr(tag, "x"), attr(tag, "y")))
    }).collect()
}

/// Every SVG `--out` wrote to `dir` (its `.svg` files and the plots inlined in
/// `report.html`): no rectangle with a negative width or height, and as many SVGs in
/// the page as files.
fn check_rects(dir: &Path) -> usize {
    let mut files = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "svg") {
            let bad = negative_rects(&read(&p));
            assert!(bad.is_empty(), "{}: rects with a negative size: {bad:?}", p.display());
            files += 1;
        }
    }
    let html = read(&dir.join("report.html"));
    let bad = negative_rects(&html);
    assert!(bad.is_empty(), "report.html: rects with a negative size: {bad:?}");
    assert_eq!(html.matches("<svg").count(), files, "report.html inlines every plot");
    files
}

/// Issue 48: `probe_time.svg` of a single-configuration run drew its bars with negative
/// heights (nothing on the page). One run, several runs and a sweep: every plot valid.
#[test]
fn no_plot_has_a_rectangle_of_negative_size() {
    let one = tmp("rects-one");
    run_short(&["--out", one.to_str().unwrap()]);
    let probe = read(&one.join("probe_time.svg"));
    // The bar's four parts (qdisc, ring, consumer, rest) and the legend's four keys.
    assert_eq!(probe.matches("<rect").count(), 1 + 4 + 4, "{probe}");
    assert!(check_rects(&one) >= 3);
    let two = tmp("rects-two");
    run_short(&["--runs", "2", "--out", two.to_str().unwrap()]);
    assert!(check_rects(&two) >= 3);
    let sweep = tmp("rects-sweep");
    let scn = repo("scenarios/veth-bql.toml");
    let mut args = vec!["sweep", scn.as_str(), "--set", "consumer.nrules=0,100", "--out", sweep.to_str().unwrap()];
    args.extend(SHORT);
    darkbuf(&args);
    assert!(check_rects(&sweep) >= 3);
}

#[test]
fn report_rejects_what_is_not_results() {
    let dir = tmp("bad");
    let p = dir.join("x.json");
    std::fs::write(&p, "{\"hello\": 1}").unwrap();
    let o = common::darkbuf(&["report", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("neither a run nor a sweep"));
}
