//! The files people share: `.flent.gz`, SVG plots, the HTML report. Built from
//! hand-made results with time series, so they do not depend on the simulator.

use darkbuf_report::flent::{iso8601_utc, FLENT_PING_SERIES};
use darkbuf_report::plot::{swept_parameter, SweepPlotPoint};
use darkbuf_report::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;

/// 2026-01-01T00:00:00Z.
const T: f64 = 1_767_225_600.0;

fn ts(unit: &str, t_ms: Vec<f64>, values: Vec<Option<f64>>) -> TimeSeries {
    TimeSeries {
        unit: unit.into(),
        t_ms,
        values,
    }
}

/// A run with every time series: probes every 50 ms from t = 10 ms (the third lost),
/// samples every 100 ms.
fn run(seed: u64, scale: f64) -> RunRecord {
    let mut r = RunRecord {
        seed,
        ..Default::default()
    };
    let probes = 20;
    let t: Vec<f64> = (0..probes).map(|i| 10.0 + 50.0 * i as f64).collect();
    let rtt: Vec<Option<f64>> = (0..probes)
        .map(|i| {
            if i == 2 {
                None
            } else {
                Some(scale * (1.0 + (i % 5) as f64 * 0.25))
            }
        })
        .collect();
    let answered: Vec<f64> = rtt.iter().flatten().copied().collect();
    let avg = answered.iter().sum::<f64>() / answered.len() as f64;
    r.timeseries.insert("ping.rtt_ms".into(), ts("ms", t, rtt));
    let st: Vec<f64> = (0..10).map(|i| 100.0 * i as f64).collect();
    for (name, unit, base) in [
        ("bql.limit", "packets", 8.0),
        ("bql.inflight", "packets", 6.0),
        ("qdisc.backlog_pkts", "packets", 100.0 * scale),
        ("ring.occupancy", "entries", 200.0),
    ] {
        let v = (0..10).map(|i| Some(base + (i % 3) as f64)).collect();
        r.timeseries.insert(name.into(), ts(unit, st.clone(), v));
    }
    for (k, v) in [
        ("ping.rtt_avg_ms", avg),
        ("ping.wait_qdisc_ms", avg * 0.6),
        ("ping.wait_ring_ms", avg * 0.2),
        ("ping.wait_consumer_ms", avg * 0.1),
        ("consumer.pps", 6700.0 + seed as f64 * 10.0),
        ("bql.limit_last", 8.0),
    ] {
        r.metrics.insert(k.into(), Some(v));
    }
    r.metrics.insert("txq.drv_xoff".into(), None);
    r.histograms.insert(
        "bql_inflight".into(),
        Log2Hist {
            buckets: vec![0, 2, 5, 9],
        },
    );
    r
}

fn env() -> Environment {
    Environment {
        kernel: "sim".into(),
        cpu: "simulated: 2 CPUs".into(),
        profile: "seed-vm".into(),
        darkbuf_version: "0.1.0".into(),
        vm: None,
    }
}

fn results(name: &str, scale: f64, runs: u64) -> Results {
    let reasons: BTreeMap<String, String> = [(
        "txq.drv_xoff".to_string(),
        "veth has no driver xoff <counter>".to_string(),
    )]
    .into();
    Results::from_runs(
        serde_json::json!({"name": name, "duration_ns": 1_000_000_000u64, "seed": 1}),
        "sim",
        env(),
        (1..=runs).map(|s| run(s, scale)).collect(),
        reasons,
    )
}

fn sweep() -> SweepResults {
    SweepResults {
        provenance: None,
        name: "nrules".into(),
        points: [0u32, 3500, 15000]
            .iter()
            .enumerate()
            .map(|(i, n)| SweepPoint {
                label: format!("consumer.nrules={n}"),
                set: vec![format!("consumer.nrules={n}")],
                results: results("nrules", 1.0 + 4.0 * i as f64, 2),
            })
            .collect(),
    }
}

fn gunzip(b: &[u8]) -> Value {
    let mut s = String::new();
    flate2::read::GzDecoder::new(b)
        .read_to_string(&mut s)
        .unwrap();
    serde_json::from_str(&s).unwrap()
}

/// flent's layout, and every series one of ping.conf's data sets: `Ping (ms) ICMP` or
/// an extra host listed in `TEST_PARAMETERS.ping_hosts`.
fn check_flent_shape(v: &Value) {
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["metadata", "raw_values", "results", "version", "x_values"]
    );
    assert_eq!(v["version"], 4);
    let md = &v["metadata"];
    assert_eq!(md["NAME"], "ping");
    for k in [
        "TIME",
        "T0",
        "LENGTH",
        "TOTAL_LENGTH",
        "STEP_SIZE",
        "HOST",
        "TITLE",
        "SERIES_META",
        "TEST_PARAMETERS",
    ] {
        assert!(!md[k].is_null(), "metadata {k}");
    }
    let hosts: Vec<&str> = md["TEST_PARAMETERS"]["ping_hosts"]
        .as_str()
        .map_or(vec![], |h| h.split(',').collect());
    let n = v["x_values"].as_array().unwrap().len();
    assert!(n > 0);
    for (name, series) in v["results"].as_object().unwrap() {
        assert_eq!(
            series.as_array().unwrap().len(),
            n,
            "series {name} vs x_values"
        );
        let ok = name == FLENT_PING_SERIES
            || hosts
                .iter()
                .any(|h| *name == format!("{FLENT_PING_SERIES} {h} (extra)"));
        assert!(
            ok,
            "{name} is not a data set of flent's ping test (hosts {hosts:?})"
        );
        assert!(!name.contains(':'), "{name}");
        assert!(v["raw_values"][name].is_array(), "raw values of {name}");
        assert_eq!(md["SERIES_META"][name]["UNITS"], "ms");
    }
}

fn series_names(v: &Value) -> Vec<&String> {
    v["results"].as_object().unwrap().keys().collect()
}

#[test]
fn flent_run_file_has_flents_layout() {
    let r = results("veth-bql", 1.0, 3);
    let v = flent_run(&r, T);
    check_flent_shape(&v);
    let md = &v["metadata"];
    assert_eq!(md["TIME"], "2026-01-01T00:00:00.000000Z");
    assert_eq!(md["T0"], md["TIME"]);
    assert_eq!(md["STEP_SIZE"], 0.05);
    assert_eq!(md["LENGTH"], 1.0);
    assert_eq!(md["TITLE"], "veth-bql");
    // One series per run: the first is the plain ICMP series, the others extra hosts.
    assert_eq!(md["TEST_PARAMETERS"]["ping_hosts"], "seed 2,seed 3");
    assert_eq!(
        series_names(&v),
        [
            "Ping (ms) ICMP",
            "Ping (ms) ICMP seed 2 (extra)",
            "Ping (ms) ICMP seed 3 (extra)"
        ]
    );
    // Probes at 10 + 50i ms land on grid slots round(t / 0.05) = i; the last at 960 ms
    // -> slot 19, so 20 x values 0.05 s apart.
    let x = v["x_values"].as_array().unwrap();
    assert_eq!(x.len(), 20);
    assert_eq!(x[1], 0.05);
    assert_eq!(x[19], 0.95);
    let s = v["results"][FLENT_PING_SERIES].as_array().unwrap();
    assert_eq!(s[0], 1.0);
    assert_eq!(s[1], 1.25);
    assert!(s[2].is_null(), "the lost probe");
    // Raw values: answered probes only, absolute times from T0.
    let raw = v["raw_values"][FLENT_PING_SERIES].as_array().unwrap();
    assert_eq!(raw.len(), 19);
    assert_eq!(raw[0]["t"], T + 0.01);
    assert_eq!(raw[0]["val"], 1.0);
    assert_eq!(raw[2]["seq"], 4.0);
    let meta = &md["SERIES_META"][FLENT_PING_SERIES];
    assert_eq!(meta["MIN_VALUE"], 1.0);
    assert_eq!(meta["MAX_VALUE"], 2.0);

    // The gzip bytes decode to the same object.
    let gz = flent_gz(&v).unwrap();
    assert_eq!(&gz[..2], &[0x1f, 0x8b]);
    assert_eq!(gunzip(&gz), v);

    // One run: no extra hosts.
    let v = flent_run(&results("one", 1.0, 1), T);
    check_flent_shape(&v);
    assert_eq!(series_names(&v), ["Ping (ms) ICMP"]);
    assert_eq!(v["metadata"]["TEST_PARAMETERS"], serde_json::json!({}));
}

#[test]
fn flent_sweep_file_has_a_series_per_point() {
    let s = sweep();
    let v = flent_sweep(&s, T);
    check_flent_shape(&v);
    assert_eq!(
        v["metadata"]["TEST_PARAMETERS"]["ping_hosts"],
        "consumer.nrules=0,consumer.nrules=3500,consumer.nrules=15000"
    );
    assert_eq!(
        series_names(&v),
        [
            "Ping (ms) ICMP consumer.nrules=0 (extra)",
            "Ping (ms) ICMP consumer.nrules=15000 (extra)",
            "Ping (ms) ICMP consumer.nrules=3500 (extra)",
        ]
    );
    // A point's two runs back to back: run 2 starts LENGTH + STEP = 1.05 s later, so
    // the grid reaches 1.05 + 0.96 s -> slot 40.
    assert_eq!(v["x_values"].as_array().unwrap().len(), 41);
    let raw = v["raw_values"]["Ping (ms) ICMP consumer.nrules=0 (extra)"]
        .as_array()
        .unwrap();
    assert_eq!(raw.len(), 38);
    assert_eq!(raw[19]["t"], T + 1.05 + 0.01);
    // Per point: a file of its own with the plain series, titled with the label.
    let p = flent_point(&s, 1, T).unwrap();
    check_flent_shape(&p);
    assert_eq!(p["metadata"]["TITLE"], "nrules consumer.nrules=3500");
    assert_eq!(
        series_names(&p),
        ["Ping (ms) ICMP", "Ping (ms) ICMP seed 2 (extra)"]
    );
    assert!(flent_point(&s, 3, T).is_none());
}

#[test]
fn flent_without_probes_is_still_loadable() {
    let mut r = results("quiet", 1.0, 1);
    r.runs[0].timeseries.clear();
    let v = flent_run(&r, T);
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["metadata", "raw_values", "results", "version", "x_values"]
    );
    assert_eq!(v["results"].as_object().unwrap().len(), 0);
    assert_eq!(v["x_values"].as_array().unwrap().len(), 1);
}

#[test]
fn dates_are_flents() {
    assert_eq!(iso8601_utc(T + 0.25), "2026-01-01T00:00:00.250000Z");
}

#[test]
fn run_plots_cover_cdf_probe_time_and_series() {
    let r = results("veth-bql", 1.0, 3);
    let plots = run_plots(&r).unwrap();
    let names: Vec<&str> = plots.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "ping_cdf",
            "probe_time",
            "ts_bql_limit",
            "ts_bql_inflight",
            "ts_qdisc_backlog_pkts",
            "ts_ring_occupancy",
            "ts_ping_rtt_ms"
        ]
    );
    for p in &plots {
        assert!(
            p.svg.starts_with("<svg") && p.svg.trim_end().ends_with("</svg>"),
            "{}",
            p.name
        );
    }
    // One CDF line per run, named by seed, the loss in the legend.
    let cdf = &plots[0].svg;
    assert!(
        cdf.contains("seed 1 (1 lost)") && cdf.contains("seed 3 (1 lost)"),
        "{cdf}"
    );
    // The probe-time bars: one per run and the mean, with the four parts in the legend.
    let bars = &plots[1].svg;
    for s in [
        "seed 2",
        "mean of 3 runs",
        "qdisc",
        "driver ring",
        "consumer",
        "rest of the round trip",
    ] {
        assert!(bars.contains(s), "{s}");
    }
    // Deterministic.
    assert_eq!(run_plots(&r).unwrap(), plots);
}

#[test]
fn sweep_plots_have_the_metric_against_the_parameter() {
    let s = sweep();
    assert_eq!(
        swept_parameter(&s),
        Some(("consumer.nrules".to_string(), vec![0.0, 3500.0, 15000.0]))
    );
    let plots = sweep_plots(&s, &["ping.rtt_avg_ms", "no.such_metric"]).unwrap();
    let names: Vec<&str> = plots.iter().map(|p| p.name.as_str()).collect();
    assert!(names.contains(&"ping_cdf") && names.contains(&"probe_time"));
    assert!(names.contains(&"sweep_ping_rtt_avg_ms"));
    assert!(
        !names.contains(&"sweep_no_such_metric"),
        "a metric no point has is not plotted"
    );
    let p = plots
        .iter()
        .find(|p| p.name == "sweep_ping_rtt_avg_ms")
        .unwrap();
    assert!(
        p.svg.contains("consumer.nrules") && p.svg.contains("95% CI") && p.svg.contains("<polygon")
    );
}

#[test]
fn swept_parameter_needs_one_numeric_key() {
    let mut s = sweep();
    s.points[1].set = vec!["device.bql.limit_min=8".into()];
    assert_eq!(swept_parameter(&s), None, "two keys vary");
    let mut s = sweep();
    s.points[2].set = vec!["consumer.nrules=lots".into()];
    assert_eq!(swept_parameter(&s), None, "not a number");
    // Categorical axes still plot.
    let pts: Vec<SweepPlotPoint> = ["No BQL", "limit=2"]
        .iter()
        .map(|l| SweepPlotPoint {
            label: l.to_string(),
            x: None,
            mean: 1.0,
            ci95: 0.5,
        })
        .collect();
    let svg = plot::sweep_metric_svg("t", "configuration", "ms", &pts)
        .unwrap()
        .unwrap();
    assert!(svg.contains("No BQL") && svg.contains("limit=2"));
}

/// Every `src`/`href`/`url(` in `html` is local (a fragment), and nothing names a
/// network scheme.
fn assert_self_contained(html: &str) {
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "a network URL"
    );
    assert!(!html.contains("<script") && !html.contains("<link") && !html.contains("<img"));
    assert!(!html.contains("@import") && !html.contains("url("));
    for attr in ["src=", "href="] {
        for (i, _) in html.match_indices(attr) {
            let v = &html[i + attr.len()..];
            assert!(
                v.starts_with("\"#"),
                "non-local {attr}{}",
                &v[..v.len().min(40)]
            );
        }
    }
}

#[test]
fn run_html_is_one_self_contained_page() {
    let r = results("veth-bql <&>", 1.0, 3);
    let plots = run_plots(&r).unwrap();
    let html = run_html(&r, &plots);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.matches("<svg").count() >= 3);
    assert_eq!(html.matches("<svg").count(), plots.len());
    assert!(html.contains("<table class=\"summary\">"));
    assert!(html.contains("Content-Security-Policy"));
    assert_self_contained(&html);
    // Escaped, and the summary shows mean ± ci with n = 3.
    assert!(html.contains("veth-bql &lt;&amp;&gt;") && !html.contains("veth-bql <&>"));
    assert!(html.contains("veth has no driver xoff &lt;counter&gt;"));
    assert!(
        html.contains("<tr><th>consumer.pps</th><td class=\"num\">6720 ± 25</td>"),
        "{html}"
    );
    // Histograms in bpftrace's format, summed over the runs (2+2+2 in bucket 1).
    assert!(
        html.contains("@bql_inflight:\n[1]                    6 |"),
        "{html}"
    );
    // The scenario and the environment.
    assert!(html.contains("&quot;duration_ns&quot;: 1000000000"));
    assert!(html.contains("<th>profile</th><td>seed-vm</td>"));
    assert_eq!(run_html(&r, &plots), html, "deterministic");
    assert!(!html.contains("id=\"printouts\""), "no printouts, no section");
}

/// A run's tool printouts go into the page under their command lines, escaped, with a
/// link in the navigation.
#[test]
fn run_html_shows_the_first_runs_printouts() {
    let mut r = results("x", 1.0, 2);
    r.runs[0].printouts.insert("tc -s qdisc show dev eth0".into(), "qdisc fq 0: parent :c <x>\n".into());
    let html = run_html(&r, &[]);
    assert!(html.contains("<a href=\"#printouts\">"), "nav link");
    assert!(html.contains("<details><summary><code>tc -s qdisc show dev eth0</code></summary>\n<pre>qdisc fq 0: parent :c &lt;x&gt;\n</pre>"), "{html}");
    // Issue 48: the printouts count the whole run, the tables the measured window;
    // the page says so next to them.
    r.scenario["warmup_ns"] = 1_000_000_000u64.into();
    r.scenario["duration_ns"] = 5_000_000_000u64.into();
    let html = run_html(&r, &[]);
    assert!(html.contains("<summary><code>tc -s qdisc show dev eth0</code> <small>(whole run: 1 s warmup + 5 s measured)</small></summary>"), "{html}");
    assert!(html.contains("the 1 s warmup and the 5 s measured window. The tables count the 5 s measured window only"), "{html}");
}

/// A run of eight TCP flows on a host of four CPUs and a far host of two, as rrul's:
/// per-flow metrics and 0.2 s series, per-CPU metrics.
fn flows_results() -> Results {
    let mut r = run(1, 1.0);
    let traffic: Vec<Value> = (0..8)
        .map(|i| serde_json::json!({"kind": "tcp", "name": format!("TCP {} {i}", if i < 4 { "upload" } else { "download" }), "flows": 1}))
        .collect();
    let t: Vec<f64> = (1..=25).map(|i| 200.0 * i as f64).collect();
    for f in 0..8 {
        for (k, unit) in [("cwnd_pkts", "packets"), ("goodput_mbps", "Mbit/s"), ("srtt_ms", "ms")] {
            let v = t.iter().map(|x| Some(f as f64 + x / 1e3)).collect();
            r.timeseries.insert(format!("tcp.flow.{f}.{k}"), ts(unit, t.clone(), v));
        }
        for k in ["goodput_mbps", "retrans", "cwnd_avg_pkts", "srtt_avg_ms"] {
            r.metrics.insert(format!("tcp.flow.{f}.{k}"), Some(10.0 + f as f64));
        }
    }
    r.metrics.insert("tcp.goodput_mbps".into(), Some(180.0));
    for (prefix, n) in [("cpu", 4), ("peer.cpu", 2)] {
        for c in 0..n {
            for k in ["busy_pct", "softirq_pct"] {
                r.metrics.insert(format!("{prefix}.{c}.{k}"), Some(c as f64));
            }
        }
    }
    Results::from_runs(serde_json::json!({"name": "rrul", "traffic": traffic}), "sim", env(), vec![r], BTreeMap::new())
}

/// Issue 48: the rrul page was 45,000 px tall. One plot per per-flow series with the
/// flows overlaid (labelled by their traffic entries), a headline table before
/// anything else, the rest folded, each indexed family a table with a row per index,
/// and each per-flow glossary entry once.
#[test]
fn per_flow_series_and_metrics_are_grouped() {
    let r = flows_results();
    let plots = run_plots(&r).unwrap();
    let names: Vec<&str> = plots.iter().map(|p| p.name.as_str()).collect();
    for n in ["ts_tcp_flow_n_cwnd_pkts", "ts_tcp_flow_n_goodput_mbps", "ts_tcp_flow_n_srtt_ms"] {
        assert_eq!(names.iter().filter(|x| **x == n).count(), 1, "{n} in {names:?}");
    }
    assert!(!names.iter().any(|n| n.starts_with("ts_tcp_flow_0")), "{names:?}");
    let cwnd = &plots.iter().find(|p| p.name == "ts_tcp_flow_n_cwnd_pkts").unwrap().svg;
    for f in 0..8 {
        let label = format!("{f}: TCP {} {f}", if f < 4 { "upload" } else { "download" });
        assert!(cwnd.contains(&label), "legend {label}");
    }
    assert_eq!(cwnd.matches("<circle").count(), 8 * 25, "every flow's 25 points marked");

    let html = run_html(&r, &plots);
    // The headline table comes first, before any folded part and the plots.
    let headline = html.find("<table class=\"summary headline\">").expect("headline table");
    assert!(headline < html.find("<details").unwrap() && headline < html.find("id=\"plots\"").unwrap());
    let head_table = &html[headline..headline + html[headline..].find("</table>").unwrap()];
    assert!(head_table.contains("<th>tcp.goodput_mbps</th>") && head_table.contains("<th>ping.rtt_avg_ms</th>"));
    assert!(!head_table.contains("tcp.flow.") && !head_table.contains("cpu."), "{head_table}");
    // Families: a folded table each, a row per index, labelled.
    assert!(html.contains("<summary>TCP flows (tcp.flow.N.*): 8 × 4 metrics</summary>"), "{html}");
    assert!(html.contains("<summary>The far host&#39;s CPUs (peer.cpu.N.*): 2 × 2 metrics</summary>"), "{html}");
    assert!(html.contains("<tr><th>7: TCP download 7</th>"));
    // The glossary: a per-flow metric once, with its indices.
    let glossary = &html[html.find("id=\"glossary\"").unwrap()..];
    assert_eq!(glossary.matches("<th>tcp.flow.N.cwnd_avg_pkts<br><small>N = 0..7</small></th>").count(), 1, "{glossary}");
    assert!(!glossary.contains("tcp.flow.3."));
    assert_eq!(glossary.matches("<th>peer.cpu.N.busy_pct").count(), 1);
    // Only the main plots are shown; the per-flow series are folded.
    let more = html.find("<details id=\"more-plots\">").expect("folded plots");
    assert!(html.find("id=\"plot-ts_tcp_flow_n_cwnd_pkts\"").unwrap() > more);
    assert!(html.find("id=\"plot-ping_cdf\"").unwrap() < more);
}

#[test]
fn sweep_html_has_a_column_per_point() {
    let s = sweep();
    let plots = sweep_plots(&s, &DEFAULT_SWEEP_METRICS).unwrap();
    let html = sweep_html(&s, &plots);
    assert!(html.matches("<svg").count() >= 4);
    assert_self_contained(&html);
    // Labels break after `.` and `=` (issue 48: a sweep's table was wider than the
    // page), and each table scrolls in a container of the page's width.
    let header = "<thead><tr><th>Metric</th><th>consumer.<wbr>nrules=<wbr>0</th><th>consumer.<wbr>nrules=<wbr>3500</th><th>consumer.<wbr>nrules=<wbr>15000</th></tr></thead>";
    assert_eq!(
        html.matches(header).count(),
        2,
        "the seed rows and every metric"
    );
    for class in ["sweep", "sweep-all", "points"] {
        assert!(html.contains(&format!("<div class=\"wide\"><table class=\"{class}\">")), "{class}");
    }
}

#[test]
fn html_without_plots_or_series_still_renders() {
    let r = Results::from_runs(
        serde_json::json!({}),
        "kernel",
        env(),
        vec![RunRecord::default()],
        BTreeMap::new(),
    );
    let plots = run_plots(&r).unwrap();
    assert!(plots.is_empty());
    let html = run_html(&r, &plots);
    // No plots: no Plots section and no link to one (wifi-anomaly's page had both).
    assert!(!html.contains("id=\"plots\"") && !html.contains("href=\"#plots\"") && html.contains("No histograms"));
    assert_self_contained(&html);
    let empty = SweepResults {
        provenance: None,
        name: String::new(),
        points: vec![],
    };
    let html = sweep_html(
        &empty,
        &sweep_plots(&empty, &DEFAULT_SWEEP_METRICS).unwrap(),
    );
    assert_self_contained(&html);
}
