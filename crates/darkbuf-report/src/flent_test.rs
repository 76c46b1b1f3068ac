//! A run of a flent test preset (`test = "rrul"`, ...) as flent's own data file for that
//! test: `metadata.NAME` is the test, and every series carries the name of flent's data
//! set (`TCP upload BE`, `Ping (ms) UDP EF`, `Ping (ms) ICMP`), so flent's plots for the
//! test (`all_scaled`, `totals`, `ping_cdf`, `box_totals`, ...) draw it.
//!
//! The scenario's `[[traffic]]` entries carry the data-set names (`name`); their series
//! are, in order, `tcp.flow.K.goodput_mbps` (one per TCP connection; an entry with
//! `flows = n > 1` becomes flent's duplicates `NAME::1..n`), `irtt.K.rtt_ms` and the
//! first pinger's `ping.rtt_ms`. flent computes the aggregates of a test (`TCP upload
//! sum`, `TCP upload avg`, `TCP totals`, `Ping (ms) avg`, ...) at run time from the
//! grid; they are computed here the same way, per time step over the series that have
//! a value (flent's `sum` and `average` runners).
//!
//! Time: flent's axis starts with the test (the run's time 0, warmup included); darkbuf
//! measures only after the warmup, so the series start at `warmup` and the grid is
//! `null` before it. `DELAY`, `LENGTH` and `TOTAL_LENGTH` are flent's: `TOTAL_LENGTH` =
//! warmup + duration, `LENGTH` = `TOTAL_LENGTH - 2 * DELAY`. The first run is written
//! (flent's file holds one test run); `flent -i a.flent.gz b.flent.gz` compares runs.

use crate::flent::{iso8601_utc, FLENT_FILEFORMAT_VERSION};
use crate::results::{Results, RunRecord, TimeSeries};
use serde_json::{json, Map, Value};

/// flent's `STEP_SIZE`: the goodput step and the probes' interval in the presets.
const STEP: f64 = 0.2;

/// One data set: flent's name, its unit, and its points `(t s since the run's start, value)`.
struct DataSet {
    name: String,
    unit: &'static str,
    points: Vec<(f64, Option<f64>)>,
}

/// The aggregates flent's test definition adds: (name, runner, the data sets it applies to).
fn aggregates(test: &str, names: &[String]) -> Vec<(String, &'static str, Vec<String>)> {
    let pick = |prefix: &str| -> Vec<String> { names.iter().filter(|n| n.starts_with(prefix)).cloned().collect() };
    // The average and the sum of each direction's flows (data sets named `up...`,
    // `down...`); `None` leaves a direction out.
    let avg_sum = |up: Option<&str>, down: Option<&str>| -> Vec<(String, &'static str, Vec<String>)> {
        [("TCP upload", up), ("TCP download", down)]
            .into_iter()
            .filter_map(|(dir, prefix)| Some((dir, pick(prefix?))))
            .flat_map(|(dir, sets)| [(format!("{dir} avg"), "average", sets.clone()), (format!("{dir} sum"), "sum", sets)])
            .collect()
    };
    // rrul's: both directions' avg and sum, TCP totals over every flow, Ping (ms) avg.
    let rrul = |up: Option<&str>, down: Option<&str>| -> Vec<(String, &'static str, Vec<String>)> {
        let mut v = avg_sum(up, down);
        let flows = names.iter().filter(|n| n.starts_with("TCP upload") || n.starts_with("TCP download")).cloned().collect();
        v.push(("TCP totals".into(), "sum", flows));
        v.push(("Ping (ms) avg".into(), "average", pick("Ping (ms)")));
        v
    };
    // The rtt_fair tests': avg and sum of the directions they run, with Jain's fairness
    // index of each if `fairness`, and Ping (ms) avg over the hosts' pings.
    let rtt_fair = |up: bool, down: bool, fairness: bool| -> Vec<(String, &'static str, Vec<String>)> {
        let mut v = avg_sum(up.then_some("TCP upload"), down.then_some("TCP download"));
        if fairness {
            for (dir, on) in [("TCP upload", up), ("TCP download", down)] {
                if on {
                    v.push((format!("{dir} fairness"), "fairness", pick(dir)));
                }
            }
        }
        v.push(("Ping (ms) avg".into(), "average", pick("Ping (ms)")));
        v
    };
    match test {
        "rrul" | "rrul_be" | "rrul_cs8" => rrul(Some("TCP upload"), Some("TCP download")),
        // rrul_up.conf deletes rrul's download data sets and their aggregates.
        "rrul_up" => rrul(Some("TCP upload"), None),
        "rrul_be_nflows" => rrul(Some("TCP upload BE::"), Some("TCP download BE::")),
        // tcp_nup.conf and tcp_ndown.conf, and the tcp_Nup / tcp_Ndown that set their N.
        "tcp_nup" | "tcp_2up" | "tcp_4up" | "tcp_6up" | "tcp_8up" | "tcp_12up" => avg_sum(Some("TCP upload::"), None),
        "tcp_ndown" | "tcp_2down" | "tcp_4down" | "tcp_6down" | "tcp_8down" | "tcp_12down" => avg_sum(None, Some("TCP download::")),
        // rtt_fair.conf, rtt_fair4be.conf and rtt_fair6be.conf: each direction's avg and
        // sum, Ping (ms) avg;
        // rtt_fair_up.conf and rtt_fair_var*.conf also Jain's fairness index per direction.
        // cubic_bbr.conf and cubic_reno.conf define the same: avg and sum each way,
        // Ping (ms) avg.
        "rtt_fair" | "rtt_fair4be" | "rtt_fair6be" | "cubic_bbr" | "cubic_reno" => rtt_fair(true, true, false),
        "rtt_fair_up" | "rtt_fair_var_up" => rtt_fair(true, false, true),
        "rtt_fair_var_down" => rtt_fair(false, true, true),
        "rtt_fair_var" => rtt_fair(true, true, true),
        _ => Vec::new(),
    }
}

/// The test's data sets from a run's series, by the scenario's traffic entries.
fn data_sets(scenario: &Value, run: &RunRecord, warmup_s: f64) -> Vec<DataSet> {
    let shift = |ts: &TimeSeries| -> Vec<(f64, Option<f64>)> { ts.t_ms.iter().zip(&ts.values).map(|(t, v)| (warmup_s + t / 1e3, *v)).collect() };
    let traffic = scenario.get("traffic").and_then(Value::as_array).cloned().unwrap_or_default();
    let (mut tcp, mut irtt, mut ping) = (0, 0, 0);
    let pingers = traffic.iter().filter(|t| t.get("kind").and_then(Value::as_str) == Some("ping")).count();
    let mut out = Vec::new();
    for (i, t) in traffic.iter().enumerate() {
        let name = t.get("name").and_then(Value::as_str).map_or_else(|| format!("traffic {i}"), str::to_string);
        match t.get("kind").and_then(Value::as_str) {
            Some("tcp") => {
                let flows = t.get("flows").and_then(Value::as_u64).unwrap_or(1);
                for f in 0..flows {
                    let series = run.timeseries.get(&format!("tcp.flow.{tcp}.goodput_mbps"));
                    tcp += 1;
                    let name = if flows > 1 { format!("{name}::{}", f + 1) } else { name.clone() };
                    out.push(DataSet { name, unit: "Mbits/s", points: series.map(shift).unwrap_or_default() });
                }
            }
            Some("irtt") => {
                let series = run.timeseries.get(&format!("irtt.{irtt}.rtt_ms"));
                irtt += 1;
                out.push(DataSet { name, unit: "ms", points: series.map(shift).unwrap_or_default() });
            }
            Some("ping") => {
                // Pinger k's own series: ping.k.rtt_ms with several, else ping.rtt_ms.
                let prefix = crate::cdf::ping_prefixes(ping, pingers).pop().unwrap_or_default();
                let key = format!("{prefix}rtt_ms");
                ping += 1;
                let series = run.timeseries.get(&key);
                out.push(DataSet { name, unit: "ms", points: series.map(shift).unwrap_or_default() });
            }
            _ => {}
        }
    }
    out
}

/// The value of each point on the grid `0, STEP, ..` of `n` steps (the first at a step).
fn on_grid(points: &[(f64, Option<f64>)], n: usize) -> Vec<Option<f64>> {
    let mut grid = vec![None; n];
    for &(t, v) in points {
        let i = (t / STEP).round();
        if let (Some(v), true) = (v, i >= 0.0 && (i as usize) < n) {
            grid[i as usize].get_or_insert(v);
        }
    }
    grid
}

/// flent's `sum` / `average` runners at each step, over the series with a value there.
fn combine(runner: &str, grids: &[&Vec<Option<f64>>], n: usize) -> Vec<Option<f64>> {
    (0..n)
        .map(|i| {
            let vals: Vec<f64> = grids.iter().filter_map(|g| g[i]).collect();
            match (vals.is_empty(), runner) {
                (true, _) => None,
                (false, "sum") => Some(vals.iter().sum()),
                // Jain's index, (sum x)^2 / (n sum x^2): 1 when all are equal, 1/n when
                // one has everything; none when all are 0 (flent's FairnessRunner).
                (false, "fairness") => {
                    let squares: f64 = vals.iter().map(|x| x * x).sum();
                    let sum: f64 = vals.iter().sum();
                    (squares > 0.0).then(|| sum * sum / (vals.len() as f64 * squares))
                }
                (false, _) => Some(vals.iter().sum::<f64>() / vals.len() as f64),
            }
        })
        .collect()
}

fn series_meta(unit: &str, vals: impl Iterator<Item = f64>) -> Value {
    let v: Vec<f64> = vals.collect();
    let mut m = Map::new();
    m.insert("UNITS".into(), json!(unit));
    if !v.is_empty() {
        m.insert("MEAN_VALUE".into(), json!(v.iter().sum::<f64>() / v.len() as f64));
        m.insert("MIN_VALUE".into(), json!(v.iter().copied().fold(f64::INFINITY, f64::min)));
        m.insert("MAX_VALUE".into(), json!(v.iter().copied().fold(f64::NEG_INFINITY, f64::max)));
    }
    Value::Object(m)
}

/// A test preset's first run, its data sets and each set on flent's time grid.
struct PresetRun<'a> {
    name: String,
    run: &'a RunRecord,
    total_s: f64,
    /// Grid points, `STEP` apart from the run's start.
    n: usize,
    sets: Vec<DataSet>,
    grids: Vec<Vec<Option<f64>>>,
}

impl<'a> PresetRun<'a> {
    /// `None` when the scenario names no test or has no run.
    fn new(r: &'a Results) -> Option<PresetRun<'a>> {
        let name = r.scenario.get("test")?.get("name")?.as_str()?.to_string();
        let run = r.runs.first()?;
        let ns = |k: &str| r.scenario.get(k).and_then(Value::as_f64).unwrap_or(0.0) / 1e9;
        let (warmup_s, total_s) = (ns("warmup_ns"), ns("warmup_ns") + ns("duration_ns"));
        let n = (total_s / STEP).round() as usize + 1;
        let sets = data_sets(&r.scenario, run, warmup_s);
        let grids = sets.iter().map(|s| on_grid(&s.points, n)).collect();
        Some(PresetRun { name, run, total_s, n, sets, grids })
    }
}

/// flent's aggregates of test `name` (sums and averages over its data sets) on the
/// grid: (name, unit, values).
fn aggregate_grids(name: &str, sets: &[DataSet], grids: &[Vec<Option<f64>>], n: usize) -> Vec<(String, &'static str, Vec<Option<f64>>)> {
    let names: Vec<String> = sets.iter().map(|s| s.name.clone()).collect();
    aggregates(name, &names)
        .into_iter()
        .map(|(agg, runner, over)| {
            let parts: Vec<&Vec<Option<f64>>> = over.iter().filter_map(|o| names.iter().position(|n| n == o)).map(|i| &grids[i]).collect();
            let g = combine(runner, &parts, n);
            // flent's units of its aggregates: the index is "Idx" (rtt_fair.inc).
            let unit = match runner {
                "fairness" => "Idx",
                _ if agg.starts_with("Ping") => "ms",
                _ => "Mbits/s",
            };
            (agg, unit, g)
        })
        .collect()
}

/// The scenario's `test.parameters` (`upload_streams`, ...) as flent's `TEST_PARAMETERS`.
fn test_parameters(scenario: &Value) -> Value {
    let params = scenario.get("test").and_then(|t| t.get("parameters")).and_then(Value::as_object);
    let mut out: Map<String, Value> = params.map_or_else(Map::new, |m| m.iter().map(|(k, v)| (k.clone(), json!(v.to_string()))).collect());
    let delays = host_delays_ns(scenario);
    if !delays.is_empty() {
        let text: Vec<String> = delays.iter().map(|&ns| if ns % 1_000_000 == 0 { format!("{}ms", ns / 1_000_000) } else { format!("{ns}ns") }).collect();
        out.insert("host_delays".into(), json!(text.join(",")));
    }
    Value::Object(out)
}

/// The scenario's `test.host_delays_ns` (the rtt_fair tests' hosts), else none.
fn host_delays_ns(scenario: &Value) -> Vec<u64> {
    let delays = scenario.get("test").and_then(|t| t.get("host_delays_ns")).and_then(Value::as_array);
    delays.map_or_else(Vec::new, |a| a.iter().filter_map(Value::as_u64).collect())
}

/// flent's `HOSTS`: the rtt_fair tests' `host1` .. `hostN` (the names in their data
/// sets; the scenario records a delay per host), else the backend as the one far end.
fn hosts(scenario: &Value, backend: &str) -> Vec<String> {
    match host_delays_ns(scenario).len() {
        0 => vec![backend.to_string()],
        n => (1..=n).map(|i| format!("host{i}")).collect(),
    }
}

/// The flent data file of a test preset's run, or `None` when the scenario names no
/// test (or has no run).
pub fn flent_test_run(r: &Results, time_unix_s: f64) -> Option<Value> {
    let delay_s = r.scenario.get("test")?.get("delay_ns").and_then(Value::as_f64).unwrap_or(0.0) / 1e9;
    let PresetRun { name, run, total_s, n, sets, grids } = PresetRun::new(r)?;
    let (mut results, mut raw, mut meta) = (Map::new(), Map::new(), Map::new());
    for (s, g) in sets.iter().zip(&grids) {
        results.insert(s.name.clone(), json!(g));
        let pts: Vec<Value> = s
            .points
            .iter()
            .enumerate()
            .filter_map(|(k, (t, v))| v.map(|v| json!({"t": time_unix_s + t, "val": v, "seq": (k + 1) as f64})))
            .collect();
        raw.insert(s.name.clone(), Value::Array(pts));
        meta.insert(s.name.clone(), series_meta(s.unit, s.points.iter().filter_map(|p| p.1)));
    }
    for (agg, unit, g) in aggregate_grids(&name, &sets, &grids, n) {
        meta.insert(agg.clone(), series_meta(unit, g.iter().flatten().copied()));
        results.insert(agg, json!(g));
    }
    let time = iso8601_utc(time_unix_s);
    let hosts = hosts(&r.scenario, &r.backend);
    let title = r.scenario.get("name").and_then(Value::as_str).unwrap_or("darkbuf").to_string();
    let metadata = json!({
        "NAME": name,
        "TITLE": title,
        "NOTE": format!("darkbuf {} backend, test preset {name}, run seed {}: series from the run's tcp.flow.N.goodput_mbps, irtt.N.rtt_ms and ping.rtt_ms", r.backend, run.seed),
        "TIME": time,
        "T0": time,
        "DELAY": delay_s,
        "LENGTH": (total_s - 2.0 * delay_s).max(0.0),
        "TOTAL_LENGTH": total_s,
        "STEP_SIZE": STEP,
        "HOST": hosts[0],
        "HOSTS": hosts,
        "LOCAL_HOST": "darkbuf",
        "IP_VERSION": 4,
        "DATA_FILENAME": "results.flent.gz",
        // flent keeps --test-parameter values as the strings it was given.
        "TEST_PARAMETERS": test_parameters(&r.scenario),
        "SERIES_META": meta,
        "DARKBUF_VERSION": env!("CARGO_PKG_VERSION"),
        "DARKBUF_ENVIRONMENT": serde_json::to_value(&r.environment).unwrap_or(Value::Null),
        "DARKBUF_SCENARIO": r.scenario,
    });
    let x_values: Vec<Value> = (0..n).map(|i| json!((i as f64 * STEP * 1e6).round() / 1e6)).collect();
    Some(json!({
        "metadata": metadata,
        "version": FLENT_FILEFORMAT_VERSION,
        "x_values": x_values,
        "results": results,
        "raw_values": raw,
    }))
}

/// A test preset's data sets and flent's aggregates as time series (t in ms since the
/// run's start, flent's axis), for the report's versions of flent's plots: (test name,
/// [(data-set name, unit, series)]). `None` when the scenario names no test.
#[allow(clippy::type_complexity)] // the (name, [(set, unit, series)]) its one caller destructures
pub fn test_series(r: &Results) -> Option<(String, Vec<(String, &'static str, TimeSeries)>)> {
    let PresetRun { name, n, sets, grids, .. } = PresetRun::new(r)?;
    let as_ts = |unit: &str, pts: Vec<(f64, Option<f64>)>| TimeSeries {
        unit: unit.into(),
        t_ms: pts.iter().map(|p| p.0 * 1e3).collect(),
        values: pts.iter().map(|p| p.1).collect(),
    };
    let mut out: Vec<(String, &'static str, TimeSeries)> =
        sets.iter().map(|s| (s.name.clone(), s.unit, as_ts(s.unit, s.points.clone()))).collect();
    for (agg, unit, g) in aggregate_grids(&name, &sets, &grids, n) {
        out.push((agg, unit, as_ts(unit, g.into_iter().enumerate().map(|(i, v)| (i as f64 * STEP, v)).collect())));
    }
    Some((name, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_and_flents_sum_and_average() {
        let a = on_grid(&[(0.2, Some(1.0)), (0.41, Some(2.0)), (0.6, None)], 4);
        assert_eq!(a, [None, Some(1.0), Some(2.0), None]);
        let b = on_grid(&[(0.0, Some(5.0)), (0.4, Some(4.0))], 4);
        assert_eq!(combine("sum", &[&a, &b], 4), [Some(5.0), Some(1.0), Some(6.0), None]);
        assert_eq!(combine("average", &[&a, &b], 4), [Some(5.0), Some(1.0), Some(3.0), None]);
    }

    #[test]
    fn rrul_aggregates_as_flent_defines_them() {
        let names: Vec<String> = ["TCP upload BE", "TCP upload BK", "TCP download BE", "Ping (ms) UDP EF", "Ping (ms) ICMP"].map(String::from).into();
        let a = aggregates("rrul", &names);
        let got: Vec<(&str, &str, usize)> = a.iter().map(|(n, r, o)| (n.as_str(), *r, o.len())).collect();
        assert_eq!(
            got,
            [
                ("TCP upload avg", "average", 2),
                ("TCP upload sum", "sum", 2),
                ("TCP download avg", "average", 1),
                ("TCP download sum", "sum", 1),
                ("TCP totals", "sum", 3),
                ("Ping (ms) avg", "average", 2)
            ]
        );
        assert!(aggregates("tcp_1up", &names).is_empty());
        assert_eq!(aggregates("rrul_cs8", &names), a);
        // rrul_up: no download data sets, so no download aggregates.
        let up_names: Vec<String> = names.iter().filter(|n| !n.starts_with("TCP download")).cloned().collect();
        let got: Vec<(String, usize)> = aggregates("rrul_up", &up_names).into_iter().map(|(n, _, o)| (n, o.len())).collect();
        let want = [("TCP upload avg", 2), ("TCP upload sum", 2), ("TCP totals", 2), ("Ping (ms) avg", 2)].map(|(n, k)| (n.to_string(), k));
        assert_eq!(got, want);
    }

    #[test]
    fn n_stream_aggregates_take_the_duplicates() {
        let names: Vec<String> = ["TCP download::1", "TCP download::2", "TCP download::3", "Ping (ms) ICMP"].map(String::from).into();
        for test in ["tcp_ndown", "tcp_12down"] {
            let a = aggregates(test, &names);
            let got: Vec<(&str, &str, usize)> = a.iter().map(|(n, r, o)| (n.as_str(), *r, o.len())).collect();
            assert_eq!(got, [("TCP download avg", "average", 3), ("TCP download sum", "sum", 3)]);
        }
        assert_eq!(aggregates("tcp_6up", &names)[1].2.len(), 0);
        let nflows: Vec<String> = ["TCP upload BE::1", "TCP download BE::1", "TCP download BE::2", "Ping (ms) UDP BE", "Ping (ms) ICMP"].map(String::from).into();
        let got: Vec<(String, usize)> = aggregates("rrul_be_nflows", &nflows).into_iter().map(|(n, _, o)| (n, o.len())).collect();
        let want = [("TCP upload avg", 1), ("TCP upload sum", 1), ("TCP download avg", 2), ("TCP download sum", 2), ("TCP totals", 3), ("Ping (ms) avg", 2)];
        assert_eq!(got, want.map(|(n, k)| (n.to_string(), k)));
        assert!(aggregates("tcp_bidirectional", &names).is_empty());
    }

    #[test]
    fn rtt_fair_aggregates_and_jains_index() {
        let names: Vec<String> = ["TCP upload BE host1", "Ping (ms) ICMP host1", "TCP upload BE host2", "Ping (ms) ICMP host2"].map(String::from).into();
        let got: Vec<(String, &str, usize)> = aggregates("rtt_fair_var_up", &names).into_iter().map(|(n, r, s)| (n, r, s.len())).collect();
        let want = [("TCP upload avg", "average", 2), ("TCP upload sum", "sum", 2), ("TCP upload fairness", "fairness", 2), ("Ping (ms) avg", "average", 2)];
        assert_eq!(got, want.map(|(n, r, k)| (n.to_string(), r, k)));
        // rtt_fair.conf has no fairness data sets, and cubic_bbr.conf defines the same as it.
        assert!(aggregates("rtt_fair", &names).iter().all(|(n, _, _)| !n.ends_with("fairness")));
        let cb: Vec<String> = ["TCP upload Cubic BE", "TCP upload BBR BE", "TCP download Cubic BE", "Ping (ms) UDP CS6", "Ping (ms) ICMP"].map(String::from).into();
        let got: Vec<(String, usize)> = aggregates("cubic_bbr", &cb).into_iter().map(|(n, _, s)| (n, s.len())).collect();
        let want = [("TCP upload avg", 2), ("TCP upload sum", 2), ("TCP download avg", 1), ("TCP download sum", 1), ("Ping (ms) avg", 2)];
        assert_eq!(got, want.map(|(n, k)| (n.to_string(), k)));
        // Jain's index: 1 when equal, 1/n when one flow has it all, (3+1)^2/(2*(9+1)) = 0.8,
        // none over zeros or nothing.
        let (a, b) = (vec![Some(3.0), Some(5.0), Some(3.0), Some(0.0), None], vec![Some(3.0), Some(0.0), Some(1.0), Some(0.0), None]);
        assert_eq!(combine("fairness", &[&a, &b], 5), [Some(1.0), Some(0.5), Some(0.8), None, None]);
    }

    #[test]
    fn rtt_fair_hosts_and_their_delays_in_the_metadata() {
        let scenario = json!({"test": {"name": "rtt_fair_var", "delay_ns": 1, "host_delays_ns": [0, 10_000_000, 1_500]}});
        assert_eq!(test_parameters(&scenario), json!({"host_delays": "0ms,10ms,1500ns"}));
        assert_eq!(hosts(&scenario, "sim"), ["host1", "host2", "host3"]);
        assert_eq!(hosts(&json!({"test": {"name": "rrul"}}), "kernel"), ["kernel"]);
    }

    #[test]
    fn test_parameters_are_flents_strings() {
        let scenario = json!({"test": {"name": "tcp_nup", "delay_ns": 1, "parameters": {"upload_streams": 3}}});
        assert_eq!(test_parameters(&scenario), json!({"upload_streams": "3"}));
        assert_eq!(test_parameters(&json!({"test": {"name": "rrul"}})), json!({}));
    }
}
