//! Results as a flent data file (`.flent.gz`), so `flent -i FILE -p ping_cdf` plots
//! darkbuf's probes next to flent's own measurements.
//!
//! The format is flent's `ResultSet.serialise()` (flent/resultset.py, file format
//! version 4): a gzipped JSON object with the top-level keys
//!
//! - `metadata`: the test's settings. flent loads the test named by `NAME` to know its
//!   plots; darkbuf writes `NAME = "ping"` (flent/tests/ping.conf), whose `ping` plot
//!   draws every series matching `Ping (ms) *` and whose `ping_cdf` plot is its CDF.
//!   `TIME` and `T0` are UTC timestamps in flent's `%Y-%m-%dT%H:%M:%S.%fZ` form; `T0`
//!   is subtracted from the raw values' `t` to place them on the time axis.
//!   `LENGTH`, `TOTAL_LENGTH`, `STEP_SIZE` (s), `HOST(S)`, `TITLE`, `NOTE`,
//!   `IP_VERSION` and `SERIES_META` (`UNITS`, `MEAN_VALUE`, `MIN_VALUE`, `MAX_VALUE`
//!   per series) are what flent itself records.
//! - `version`: 4.
//! - `x_values`: the common time axis, seconds from the start, `STEP_SIZE` apart.
//! - `results`: series name -> one value per `x_values` entry (`null` = no value).
//! - `raw_values`: series name -> the measured points `{"t": unix time, "val": ms,
//!   "seq": n}`. flent's plots read these (a file with empty `raw_values` loads but
//!   plots nothing), so every answered probe is listed; lost probes are omitted, as
//!   flent's ping runner omits them.
//!
//! The probes come from each run's `ping.rtt_ms` time series (one point per probe);
//! with several pingers, pinger k > 0 (`ping.k.rtt_ms`) is one more extra host,
//! `ping.k`.
//! ping.conf's plots draw the data sets its config defines: `Ping (ms) ICMP`, and
//! through ping.inc one `Ping (ms) ICMP <host> (extra)` per entry of the test
//! parameter `ping_hosts` (a comma-separated list in `metadata.TEST_PARAMETERS`). So:
//!
//! - a run: the first run is `Ping (ms) ICMP`; run k > 1 is the extra "host"
//!   `seed N`, so `ping_cdf` draws one CDF per run;
//! - a sweep: one extra "host" per point, named by its label, holding the point's
//!   runs back to back (run k shifted by k × (LENGTH + STEP_SIZE), as `flent
//!   --concatenate` joins runs), so `ping_cdf` draws one CDF per configuration;
//!   [`flent_point`] writes a point as a file of its own, like a run's.
//!
//! A host name loses the characters flent's list and globs would misread (`,` `:` `*`
//! `?` `[` `]`).
//!
//! Serialised like flent's `json.dumps(..., indent=2, sort_keys=True)`.

use crate::cdf::{pinger_series, points, PING_RTT_SERIES};
use crate::results::{Results, RunRecord, SweepResults};
use serde_json::{json, Map, Value};
use std::io::Write;

/// The flent test whose plots fit darkbuf's probes (flent/tests/ping.conf).
pub const FLENT_TEST_NAME: &str = "ping";
/// The series flent's `ping` and `ping_cdf` plots draw (ping.conf's ICMP data set).
pub const FLENT_PING_SERIES: &str = "Ping (ms) ICMP";
/// flent's `FILEFORMAT_VERSION` (flent/resultset.py).
pub const FLENT_FILEFORMAT_VERSION: u32 = 4;
/// flent's default `STEP_SIZE`, used when the probes do not say their interval.
pub const FLENT_DEFAULT_STEP_S: f64 = 0.2;

/// The longest `x_values` written.
const MAX_GRID: usize = 2_000_000;

/// Probe points: `(t in seconds, rtt ms or lost)`.
type Points = Vec<(f64, Option<f64>)>;

/// One exported probe series: `host` `None` is ping.conf's own `Ping (ms) ICMP`,
/// `Some(h)` the extra `Ping (ms) ICMP h (extra)`; points are `(t in seconds from the
/// start, rtt ms or lost)`.
struct ProbeSeries {
    host: Option<String>,
    points: Points,
}

impl ProbeSeries {
    fn name(&self) -> String {
        match &self.host {
            None => FLENT_PING_SERIES.to_string(),
            Some(h) => format!("{FLENT_PING_SERIES} {h} (extra)"),
        }
    }
}

/// A run's probes, `(t s, rtt ms)`; `None` without a `ping.rtt_ms` series.
fn run_points(run: &RunRecord) -> Option<Points> {
    Some(seconds(run.timeseries.get(PING_RTT_SERIES)?))
}

/// A probe series' points, `(t s, rtt ms)`.
fn seconds(ts: &crate::results::TimeSeries) -> Points {
    points(ts).into_iter().map(|(t_ms, v)| (t_ms / 1e3, v)).collect()
}

/// A name flent's `ping_hosts` list and globs read back unchanged.
fn host_name(s: &str) -> String {
    let h: String = s
        .chars()
        .map(|c| {
            if matches!(c, ',' | ':' | '*' | '?' | '[' | ']') || c.is_control() {
                ' '
            } else {
                c
            }
        })
        .collect();
    h.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The probe interval: the median spacing of consecutive probes within each run,
/// rounded to a microsecond; [`FLENT_DEFAULT_STEP_S`] with fewer than two probes.
fn step_size<'a>(runs: impl Iterator<Item = &'a [(f64, Option<f64>)]>) -> f64 {
    let mut gaps: Vec<f64> = runs
        .flat_map(|p| p.windows(2).map(|w| w[1].0 - w[0].0))
        .filter(|g| g.is_finite() && *g > 0.0)
        .collect();
    if gaps.is_empty() {
        return FLENT_DEFAULT_STEP_S;
    }
    gaps.sort_by(f64::total_cmp);
    let median = gaps[gaps.len() / 2];
    let rounded = (median * 1e6).round() / 1e6;
    if rounded > 0.0 {
        rounded
    } else {
        median
    }
}

/// `unix_s` as flent writes UTC times: `2026-01-31T12:00:00.000000Z`.
pub fn iso8601_utc(unix_s: f64) -> String {
    let unix_s = if unix_s.is_finite() {
        unix_s.max(0.0)
    } else {
        0.0
    };
    let micros_total = (unix_s * 1e6).round() as u64;
    let secs = micros_total / 1_000_000;
    let micros = micros_total % 1_000_000;
    let days = (secs / 86_400) as i64;
    let sod = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}Z",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    )
}

/// What the file is about, for flent's metadata.
struct Header<'a> {
    title: String,
    backend: &'a str,
    scenario: &'a Value,
    environment: Value,
}

fn duration_s(scenario: &Value) -> Option<f64> {
    scenario
        .get("duration_ns")
        .and_then(Value::as_f64)
        .map(|ns| ns / 1e9)
        .filter(|d| d.is_finite() && *d > 0.0)
}

/// Builds the flent object from probe series spaced `step` seconds apart.
fn build(h: &Header, series: &[ProbeSeries], step: f64, time_unix_s: f64) -> Value {
    let t_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(0.0f64, f64::max);
    // The grid spans the last probe's time, bounded (an hour of 2 ms probes) against
    // absurd inputs; probes past it stay in raw_values only.
    let n = ((t_max / step).round() as usize)
        .saturating_add(1)
        .min(MAX_GRID);
    let x_values: Vec<Value> = (0..n)
        .map(|i| json!((i as f64 * step * 1e6).round() / 1e6))
        .collect();

    let mut results = Map::new();
    let mut raw = Map::new();
    let mut series_meta = Map::new();
    let mut hosts: Vec<String> = Vec::new();
    for s in series {
        let mut grid: Vec<Value> = vec![Value::Null; n];
        let mut raw_points = Vec::new();
        let (mut sum, mut count, mut min, mut max) =
            (0.0, 0usize, f64::INFINITY, f64::NEG_INFINITY);
        for (seq, &(t, v)) in s.points.iter().enumerate() {
            if let Some(v) = v {
                let i = (t / step).round();
                if i >= 0.0 && (i as usize) < n && grid[i as usize].is_null() {
                    grid[i as usize] = json!(v);
                }
                raw_points.push(json!({"t": time_unix_s + t, "val": v, "seq": (seq + 1) as f64}));
                sum += v;
                count += 1;
                min = min.min(v);
                max = max.max(v);
            }
        }
        let mut meta = Map::new();
        meta.insert("UNITS".into(), json!("ms"));
        if count > 0 {
            meta.insert("MEAN_VALUE".into(), json!(sum / count as f64));
            meta.insert("MIN_VALUE".into(), json!(min));
            meta.insert("MAX_VALUE".into(), json!(max));
        }
        let name = s.name();
        results.insert(name.clone(), Value::Array(grid));
        raw.insert(name.clone(), Value::Array(raw_points));
        series_meta.insert(name, Value::Object(meta));
        hosts.extend(s.host.clone());
    }

    let mut test_parameters = Map::new();
    if !hosts.is_empty() {
        test_parameters.insert("ping_hosts".into(), json!(hosts.join(",")));
    }
    let length = duration_s(h.scenario).unwrap_or(t_max);
    let time = iso8601_utc(time_unix_s);
    let metadata = json!({
        "NAME": FLENT_TEST_NAME,
        "TITLE": h.title,
        "NOTE": format!("darkbuf {} backend: probe round trips from each run's {PING_RTT_SERIES} time series; flent -i FILE -p ping_cdf", h.backend),
        "TIME": time,
        "T0": time,
        "LENGTH": length,
        "TOTAL_LENGTH": t_max.max(length),
        "STEP_SIZE": step,
        "HOST": h.backend,
        "HOSTS": [h.backend],
        "LOCAL_HOST": "darkbuf",
        "IP_VERSION": 4,
        "DATA_FILENAME": "results.flent.gz",
        "TEST_PARAMETERS": test_parameters,
        "SERIES_META": series_meta,
        "DARKBUF_VERSION": env!("CARGO_PKG_VERSION"),
        "DARKBUF_ENVIRONMENT": h.environment,
        "DARKBUF_SCENARIO": h.scenario,
    });
    json!({
        "metadata": metadata,
        "version": FLENT_FILEFORMAT_VERSION,
        "x_values": x_values,
        "results": results,
        "raw_values": raw,
    })
}

fn header(r: &Results, title: String) -> Header<'_> {
    Header {
        title,
        backend: &r.backend,
        scenario: &r.scenario,
        environment: serde_json::to_value(&r.environment).unwrap_or(Value::Null),
    }
}

fn scenario_name(r: &Results) -> String {
    r.scenario
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("darkbuf")
        .to_string()
}

/// One series per run: the first plain, the others the extra hosts `seed N`. With
/// several pingers, pinger k > 0 of a run is one more extra host, `ping.k` (`seed N
/// ping.k` for the later runs).
fn per_run(r: &Results, title: String, time_unix_s: f64) -> Value {
    let runs: Vec<(&RunRecord, Points)> = r
        .runs
        .iter()
        .filter_map(|run| Some((run, run_points(run)?)))
        .collect();
    let step = step_size(runs.iter().map(|(_, p)| p.as_slice()));
    let series: Vec<ProbeSeries> = runs
        .into_iter()
        .enumerate()
        .flat_map(|(i, (run, points))| {
            let host = (i > 0).then(|| format!("seed {}", run.seed));
            let others = pinger_series(run).into_iter().skip(1).map(|(k, ts)| ProbeSeries {
                host: Some(host.as_ref().map_or_else(|| format!("ping.{k}"), |h| format!("{h} ping.{k}"))),
                points: seconds(ts),
            });
            std::iter::once(ProbeSeries { host: host.clone(), points }).chain(others.collect::<Vec<_>>())
        })
        .collect();
    build(&header(r, title), &series, step, time_unix_s)
}

/// A run's results as a flent data set (see the module doc), dated `time_unix_s`; a
/// run of a test preset (`test = "rrul"`) as that flent test's data file
/// ([`crate::flent_test`]).
pub fn flent_run(r: &Results, time_unix_s: f64) -> Value {
    if let Some(v) = crate::flent_test::flent_test_run(r, time_unix_s) {
        return v;
    }
    per_run(r, scenario_name(r), time_unix_s)
}

/// One sweep point as a flent data set of its own (laid out like a run's), titled with
/// the point's label, so `flent -i a.flent.gz b.flent.gz -p ping_cdf` compares points
/// the way flent compares test runs. `None` past the last point.
pub fn flent_point(s: &SweepResults, index: usize, time_unix_s: f64) -> Option<Value> {
    let p = s.points.get(index)?;
    let title = if p.label.is_empty() {
        s.name.clone()
    } else {
        format!("{} {}", s.name, p.label)
    };
    Some(per_run(&p.results, title, time_unix_s))
}

/// A whole sweep in one flent data set: each point an extra host named by its label,
/// its runs back to back, so flent's `ping_cdf` draws one CDF per point.
pub fn flent_sweep(s: &SweepResults, time_unix_s: f64) -> Value {
    let step = step_size(
        s.points
            .iter()
            .flat_map(|p| p.results.runs.iter())
            .filter_map(run_points)
            .collect::<Vec<_>>()
            .iter()
            .map(Vec::as_slice),
    );
    let mut used: Vec<String> = Vec::new();
    let mut series = Vec::new();
    for (i, p) in s.points.iter().enumerate() {
        let mut host = host_name(&p.label);
        if host.is_empty() {
            host = format!("point {}", i + 1);
        }
        if used.contains(&host) {
            host = format!("{host} #{}", i + 1);
        }
        used.push(host.clone());
        let length = duration_s(&p.results.scenario);
        let mut points = Vec::new();
        let mut offset = 0.0;
        for run in &p.results.runs {
            let Some(pts) = run_points(run) else { continue };
            let end = pts.iter().map(|x| x.0).fold(0.0f64, f64::max);
            points.extend(pts.into_iter().map(|(t, v)| (t + offset, v)));
            offset += length.unwrap_or(end) + step;
        }
        if !points.is_empty() {
            series.push(ProbeSeries {
                host: Some(host),
                points,
            });
        }
    }
    let (backend, scenario, environment) = match s.points.first() {
        Some(p) => (
            p.results.backend.as_str(),
            &p.results.scenario,
            serde_json::to_value(&p.results.environment).unwrap_or(Value::Null),
        ),
        None => ("sim", &Value::Null, Value::Null),
    };
    let h = Header {
        title: s.name.clone(),
        backend,
        scenario,
        environment,
    };
    build(&h, &series, step, time_unix_s)
}

/// gzip `data` (RFC 1952, the pure-Rust deflate backend).
pub fn gzip(data: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(data)?;
    enc.finish()
}

/// A flent object serialised as flent does (2-space indent, sorted keys) and gzipped:
/// the bytes of a `.flent.gz` file.
pub fn flent_gz(v: &Value) -> std::io::Result<Vec<u8>> {
    // serde_json's maps are BTreeMaps here: keys come out sorted, as with sort_keys=True.
    let text = serde_json::to_string_pretty(v).map_err(std::io::Error::other)?;
    gzip(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_pinger_after_the_first_is_an_extra_host() {
        use crate::results::{Environment, TimeSeries};
        let ts = |v: f64| TimeSeries { unit: "ms".into(), t_ms: vec![0.0, 200.0], values: vec![Some(v), Some(v)] };
        let run = |seed: u64| {
            let mut run = RunRecord { seed, ..RunRecord::default() };
            for (k, v) in [("ping.rtt_ms", 1.0), ("ping.0.rtt_ms", 1.0), ("ping.1.rtt_ms", 2.0)] {
                run.timeseries.insert(k.into(), ts(v));
            }
            run
        };
        let r = Results::from_runs(json!({"name": "p"}), "sim", Environment::default(), vec![run(1), run(2)], Default::default());
        let v = per_run(&r, "p".into(), 0.0);
        let names: Vec<&String> = v["results"].as_object().unwrap().keys().collect();
        let want = ["Ping (ms) ICMP", "Ping (ms) ICMP ping.1 (extra)", "Ping (ms) ICMP seed 2 (extra)", "Ping (ms) ICMP seed 2 ping.1 (extra)"];
        assert_eq!(names, want);
        assert_eq!(v["metadata"]["TEST_PARAMETERS"]["ping_hosts"], "ping.1,seed 2,seed 2 ping.1");
        assert_eq!(v["metadata"]["SERIES_META"]["Ping (ms) ICMP seed 2 ping.1 (extra)"]["MEAN_VALUE"], 2.0);
    }

    #[test]
    fn utc_dates() {
        assert_eq!(iso8601_utc(0.0), "1970-01-01T00:00:00.000000Z");
        // 2000-02-29 (a leap day), 12:34:56.5
        assert_eq!(iso8601_utc(951_827_696.5), "2000-02-29T12:34:56.500000Z");
        assert_eq!(iso8601_utc(1_767_225_600.0), "2026-01-01T00:00:00.000000Z");
        assert_eq!(iso8601_utc(f64::NAN), "1970-01-01T00:00:00.000000Z");
    }

    #[test]
    fn step_is_the_median_gap() {
        let a = [
            (0.01, Some(1.0)),
            (0.06, None),
            (0.11, Some(1.0)),
            (0.5, Some(1.0)),
        ];
        let b = [(0.0, Some(1.0)), (0.05, None)];
        assert_eq!(step_size([&a[..], &b[..]].into_iter()), 0.05);
        assert_eq!(step_size(std::iter::empty()), FLENT_DEFAULT_STEP_S);
    }

    #[test]
    fn host_names_survive_flents_lists_and_globs() {
        assert_eq!(host_name("No BQL"), "No BQL");
        assert_eq!(host_name("a=1,b=2: [x]*?"), "a=1 b=2 x");
        assert_eq!(host_name(" \t"), "");
    }

    #[test]
    fn gzip_round_trips() {
        use std::io::Read;
        let gz = gzip(b"hello flent").unwrap();
        assert_eq!(&gz[..2], &[0x1f, 0x8b]);
        let mut out = String::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(out, "hello flent");
    }
}
