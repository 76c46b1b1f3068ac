//! Exact-output tests of the report formats: tables, CSV, bpftrace histograms, JSON.

use darkbuf_report::*;
use std::collections::BTreeMap;

fn run(seed: u64, metrics: &[(&str, Option<f64>)]) -> RunRecord {
    RunRecord {
        seed,
        metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        ..Default::default()
    }
}

fn reasons(r: &[(&str, &str)]) -> BTreeMap<String, String> {
    r.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn env() -> Environment {
    Environment {
        kernel: "sim".into(),
        cpu: "sim".into(),
        profile: "seed-vm".into(),
        darkbuf_version: "0.1.0".into(),
        vm: None,
    }
}

fn results(runs: Vec<RunRecord>, unavailable: &[(&str, &str)]) -> Results {
    Results::from_runs(
        serde_json::json!({"name": "veth-bql-sfq", "seed": 1}),
        "sim",
        env(),
        runs,
        reasons(unavailable),
    )
}

/// Three runs; `txq.drv_xoff` is never measured, `ring.drops` is missing in run 2.
fn three_runs() -> Results {
    let runs = (1..=3)
        .map(|i| {
            let f = i as f64;
            run(
                i,
                &[
                    ("ping.rtt_avg_ms", Some(f)),
                    ("qdisc.requeues", Some(100.0 * f)),
                    ("bql.limit_last", Some(2.0)),
                    ("txq.drv_xoff", None),
                    ("ring.drops", if i == 2 { None } else { Some(0.0) }),
                    ("napi.polls", Some(10.0 * f)),
                ],
            )
        })
        .collect();
    results(runs, &[("txq.drv_xoff", "veth has no driver xoff counter")])
}

fn one_run() -> Results {
    results(
        vec![run(
            7,
            &[
                ("ping.rtt_avg_ms", Some(6.7312)),
                ("consumer.pps", Some(6712.5)),
                ("qdisc.requeues", Some(454123.0)),
                ("bql.limit_last", None),
            ],
        )],
        &[("bql.limit_last", "BQL disabled")],
    )
}

fn sweep() -> SweepResults {
    let no_bql = results(
        vec![run(
            1,
            &[
                ("bql.limit_last", None),
                ("ping.rtt_avg_ms", Some(37.8)),
                ("qdisc.requeues", Some(12900.0)),
                ("consumer.pps", Some(6700.0)),
            ],
        )],
        &[("bql.limit_last", "BQL disabled")],
    );
    let limit2 = results(
        vec![
            run(
                1,
                &[
                    ("bql.limit_last", Some(2.0)),
                    ("ping.rtt_avg_ms", Some(4.4)),
                    ("qdisc.requeues", Some(93000.0)),
                    ("consumer.pps", Some(6600.0)),
                ],
            ),
            run(
                2,
                &[
                    ("bql.limit_last", Some(2.0)),
                    ("ping.rtt_avg_ms", Some(4.6)),
                    ("qdisc.requeues", Some(93000.0)),
                    ("consumer.pps", Some(6800.0)),
                ],
            ),
        ],
        &[],
    );
    SweepResults {
        provenance: None,
        name: "veth-bql-sfq".into(),
        points: vec![
            SweepPoint {
                label: "No BQL".into(),
                set: vec!["device.bql.enabled=false".into()],
                results: no_bql,
            },
            SweepPoint {
                label: "limit=2".into(),
                set: vec!["device.bql.limit_min=2".into()],
                results: limit2,
            },
        ],
    }
}

#[test]
fn from_runs_summarizes_and_fills_reasons() {
    let r = three_runs();
    assert_eq!(r.backend, "sim");
    let s = r.metric("ping.rtt_avg_ms").unwrap();
    assert_eq!(s, summarize(&[1.0, 2.0, 3.0]));
    assert_eq!(s.ci95, 4.302652729749464 / 3f64.sqrt());
    assert_eq!(r.summary["txq.drv_xoff"], None);
    assert_eq!(r.metric("ring.drops").unwrap().n, 2);
    assert_eq!(
        &*r.unavailable["txq.drv_xoff"],
        "veth has no driver xoff counter"
    );

    // A metric null everywhere without a reason gets one.
    let r = results(vec![run(1, &[("napi.polls", None)])], &[]);
    assert_eq!(&*r.unavailable["napi.polls"], NO_REASON_GIVEN);
}

#[test]
fn run_table_several_runs() {
    let want = "\
| metric          | mean | ± ci95 | min | max | n | note                            |
|-----------------|-----:|-------:|----:|----:|--:|---------------------------------|
| ping.rtt_avg_ms |  2.0 |   ±2.5 | 1.0 | 3.0 | 3 |                                 |
| qdisc.requeues  |  200 |   ±248 | 100 | 300 | 3 |                                 |
| bql.limit_last  |    2 |     ±0 |   2 |   2 | 3 |                                 |
| txq.drv_xoff    |  n/a |        |     |     | 0 | veth has no driver xoff counter |
| napi.polls      |   20 |    ±25 |  10 |  30 | 3 |                                 |
| ring.drops      |    0 |     ±0 |   0 |   0 | 2 | null in 1 of 3 runs             |
± = half-width of the 95% confidence interval of the mean (Student t over 3 runs; n = the runs that measured the metric)
";
    assert_eq!(run_table(&three_runs()), want);
}

#[test]
fn run_table_one_run() {
    let want = "\
| metric          |  value | note         |
|-----------------|-------:|--------------|
| ping.rtt_avg_ms |  6.731 |              |
| qdisc.requeues  | 454123 |              |
| bql.limit_last  |    n/a | BQL disabled |
| consumer.pps    |   6712 |              |
";
    assert_eq!(run_table(&one_run()), want);
}

#[test]
fn run_table_without_nulls_has_no_note_column() {
    let r = results(vec![run(1, &[("sink.pps", Some(841000.0))])], &[]);
    let want = "\
| metric   |  value |
|----------|-------:|
| sink.pps | 841000 |
";
    assert_eq!(run_table(&r), want);
}

#[test]
fn sweep_table_seed_layout() {
    let rows = [
        SeedRow {
            label: "BQL limit",
            metric: "bql.limit_last",
            format: CellFormat::Int,
        },
        SeedRow {
            label: "Ping RTT avg",
            metric: "ping.rtt_avg_ms",
            format: CellFormat::Ms,
        },
        SeedRow {
            label: "requeues",
            metric: "qdisc.requeues",
            format: CellFormat::Count,
        },
        SeedRow {
            label: "Consumer pps",
            metric: "consumer.pps",
            format: CellFormat::Count,
        },
        SeedRow {
            label: "ring drops",
            metric: "ring.drops",
            format: CellFormat::Count,
        },
    ];
    let want = "\
| Metric       | No BQL  | limit=2        |
|--------------|---------|----------------|
| BQL limit    | n/a     | 2 ±0.0         |
| Ping RTT avg | 37.80ms | 4.50ms ±1.27ms |
| requeues     | 12.9K   | 93.0K ±0.0     |
| Consumer pps | 6.7K    | 6.7K ±1.3K     |
| ring drops   | n/a     | n/a            |
± = half-width of the 95% confidence interval of the mean (Student t over each point's runs)
";
    assert_eq!(sweep_table(&sweep(), &rows), want);
}

#[test]
fn sweep_table_default_rows() {
    let rows = default_rows();
    let labels: Vec<&str> = rows.iter().map(|r| r.label).collect();
    assert_eq!(
        labels,
        [
            "BQL limit",
            "BQL inflight",
            "BQL inflight p50",
            "Ping RTT avg",
            "Ping RTT min",
            "Ping RTT p99",
            "requeues",
            "NAPI avg_work",
            "NAPI polls",
            "Consumer pps",
            "Sink pps",
            "qdisc drops",
            "ring drops"
        ]
    );
    assert_eq!(rows[5].metric, "ping.rtt_p99_ms");
    assert_eq!(rows[5].format, CellFormat::Ms);
    let t = sweep_table(&sweep(), &rows);
    // Header, separator, the rows, and what ± is (a point has several runs).
    assert_eq!(t.lines().count(), 2 + rows.len() + 1);
    assert!(
        t.contains("| Ping RTT min     | n/a     | n/a            |"),
        "{t}"
    );
}

#[test]
fn sweep_table_all_metrics() {
    let want = "\
| Metric          | No BQL  | limit=2        |
|-----------------|---------|----------------|
| ping.rtt_avg_ms | 37.80ms | 4.50ms ±1.27ms |
| qdisc.requeues  | 12900   | 93000 ±0       |
| bql.limit_last  | n/a     | 2 ±0           |
| consumer.pps    | 6700    | 6700 ±1271     |
± = half-width of the 95% confidence interval of the mean (Student t over each point's runs)
";
    assert_eq!(sweep_table_all(&sweep()), want);
}

#[test]
fn run_csv_exact() {
    let want = "\
metric,mean,ci95,min,max,n
bql.limit_last,2,0,2,2,3
napi.polls,20,24.841377117503313,10,30,3
ping.rtt_avg_ms,2,2.484137711750331,1,3,3
qdisc.requeues,200,248.4137711750331,100,300,3
ring.drops,0,0,0,0,2
txq.drv_xoff,,,,,
";
    assert_eq!(run_csv(&three_runs()), want);
}

#[test]
fn runs_csv_exact() {
    let want = "\
run,seed,bql.limit_last,napi.polls,ping.rtt_avg_ms,qdisc.requeues,ring.drops,txq.drv_xoff
1,1,2,10,1,100,0,
2,2,2,20,2,200,,
3,3,2,30,3,300,0,
";
    assert_eq!(runs_csv(&three_runs()), want);
}

#[test]
fn sweep_csv_exact_with_quoting() {
    let mut s = sweep();
    s.points[1].label = "limit=2, \"min\"".into();
    let want = "\
metric,No BQL,\"limit=2, \"\"min\"\"\"
bql.limit_last,,2
consumer.pps,6700,6700
ping.rtt_avg_ms,37.8,4.5
qdisc.requeues,12900,93000
";
    assert_eq!(sweep_csv(&s), want);
}

#[test]
fn csv_field_quoting() {
    assert_eq!(csv_field("plain"), "plain");
    assert_eq!(csv_field("a,b"), "\"a,b\"");
    assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
}

#[test]
fn histogram_in_bpftrace_format() {
    // The seed's BQL inflight histogram (PERF-2651), plus empty buckets around it.
    let mut r = RunRecord::default();
    r.histograms.insert(
        "bql_inflight".into(),
        Log2Hist {
            buckets: vec![0, 15, 21193, 63615, 80116, 4709, 0, 0],
        },
    );
    r.histograms.insert(
        "napi_work".into(),
        Log2Hist {
            buckets: vec![0, 0, 3, 0, 1],
        },
    );
    let want = "\
@bql_inflight:
[1]                   15 |                                                    |
[2, 4)             21193 |@@@@@@@@@@@@@                                       |
[4, 8)             63615 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@           |
[8, 16)            80116 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[16, 32)            4709 |@@@                                                 |

@napi_work:
[2, 4)                 3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[4, 8)                 0 |                                                    |
[8, 16)                1 |@@@@@@@@@@@@@@@@@                                   |

";
    assert_eq!(histograms_text(&r), want);
}

#[test]
fn histogram_zero_bucket_and_suffixes() {
    let mut h = Log2Hist::default();
    h.record(0);
    h.record(0);
    h.record(1500); // [1K, 2K)
    h.record(3_000_000); // [2M, 4M)
    let want = "\
@lat:
[0]                    2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[1]                    0 |                                                    |
[2, 4)                 0 |                                                    |
[4, 8)                 0 |                                                    |
[8, 16)                0 |                                                    |
[16, 32)               0 |                                                    |
[32, 64)               0 |                                                    |
[64, 128)              0 |                                                    |
[128, 256)             0 |                                                    |
[256, 512)             0 |                                                    |
[512, 1K)              0 |                                                    |
[1K, 2K)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |
[2K, 4K)               0 |                                                    |
[4K, 8K)               0 |                                                    |
[8K, 16K)              0 |                                                    |
[16K, 32K)             0 |                                                    |
[32K, 64K)             0 |                                                    |
[64K, 128K)            0 |                                                    |
[128K, 256K)           0 |                                                    |
[256K, 512K)           0 |                                                    |
[512K, 1M)             0 |                                                    |
[1M, 2M)               0 |                                                    |
[2M, 4M)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |

";
    assert_eq!(hist_text("lat", &h), want);
    // A count wider than 8 columns pushes the bar right, as bpftrace's setw does.
    let big = Log2Hist {
        buckets: vec![0, 123_456_789],
    };
    assert_eq!(
        hist_lines(&big),
        "[1]             123456789 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
    );
}

#[test]
fn json_round_trip() {
    let mut r = three_runs();
    r.runs[0]
        .metrics
        .insert("ping.rtt_p99_ms".into(), Some(0.1 + 0.2));
    r.runs[0].histograms.insert(
        "napi_work".into(),
        Log2Hist {
            buckets: vec![0, 1, 2],
        },
    );
    r.runs[1].findings.push(Finding {
        time_ns: 1_500_000_000,
        invariant: "dql-completed-le-queued".into(),
        detail: "completed 3 > queued 2".into(),
    });
    let r = Results::from_runs(r.scenario, r.backend, r.environment, r.runs, r.unavailable.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
    let json = serde_json::to_string_pretty(&r).unwrap();
    let back: Results = serde_json::from_str(&json).unwrap();
    assert_eq!(back, r);
    // And byte-identical when written again.
    assert_eq!(serde_json::to_string_pretty(&back).unwrap(), json);

    let s = sweep();
    let back: SweepResults = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back, s);
}

#[test]
fn null_metrics_are_json_null_and_their_summary_an_empty_one() {
    let r = three_runs();
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(
        v["runs"][0]["metrics"]["txq.drv_xoff"],
        serde_json::Value::Null
    );
    assert!(v["runs"][0]["metrics"]
        .as_object()
        .unwrap()
        .contains_key("txq.drv_xoff"));
    // DESIGN.md: `summary` is `{mean, ci95, min, max, n}` for every metric; one that
    // no run measured has null statistics and n 0 (it was `null`, so
    // `summary[m]["n"]` failed on it), and reads back as no summary.
    assert_eq!(
        v["summary"]["txq.drv_xoff"],
        serde_json::json!({"mean": null, "ci95": null, "min": null, "max": null, "n": 0})
    );
    let back: Results = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(back.summary["txq.drv_xoff"], None);
    let mut old = v.clone();
    old["summary"]["txq.drv_xoff"] = serde_json::Value::Null;
    let back: Results = serde_json::from_value(old).unwrap();
    assert_eq!(back.summary["txq.drv_xoff"], None, "results written with null still read");
    assert_eq!(
        v["runs"][1]["metrics"]["ring.drops"],
        serde_json::Value::Null
    );
    let s = serde_json::to_string(&r.runs[0]).unwrap();
    assert!(s.contains("\"txq.drv_xoff\":null"), "{s}");
    assert_eq!(
        serde_json::to_string(&r.summary["ping.rtt_avg_ms"]).unwrap(),
        "{\"mean\":2.0,\"ci95\":2.484137711750331,\"min\":1.0,\"max\":3.0,\"n\":3}"
    );
    // Empty histograms and findings are omitted from a run.
    assert!(!s.contains("histograms"));
    assert!(!s.contains("findings"));
}
