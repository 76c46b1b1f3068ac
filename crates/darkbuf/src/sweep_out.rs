//! A sweep's output, point by point: each finished point goes to `--out` (its part of
//! results.json, its flent file) and to `--format json` on stdout as it comes, and only
//! what the tables, the plots and the report page need of it is kept.
//!
//! A 10,000-point sweep (the most a command runs) kept every run's record and then a
//! `serde_json::Value` of the whole sweep: 2.6 GB at its peak for 1 ms points (issue 48).
//! The files are the same bytes as before: results.json is the pretty JSON of
//! `darkbuf_run::results_json`, written a point at a time ([`JsonPoints`]).

use crate::output::outln;
use crate::run::{self, Failure};
use crate::Common;
use crate::Format;
use darkbuf_report::{Provenance, Results, Shared, SweepPoint, SweepResults};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The pretty JSON of a `SweepResults` (`{"name", "points", "provenance"}`, keys
/// sorted as `serde_json::Value` sorts them), written a point at a time.
pub(crate) struct JsonPoints {
    points: usize,
}

/// `text` with every line after the first indented by `by` spaces: a pretty JSON
/// value moved `by` deeper into its parent.
fn indent_rest(text: &str, by: usize) -> String {
    let pad = " ".repeat(by);
    text.replace('\n', &format!("\n{pad}"))
}

fn pretty<T: serde::Serialize>(v: &T) -> Result<String, Failure> {
    let value = serde_json::to_value(v).map_err(|e| Failure::Internal(e.to_string()))?;
    serde_json::to_string_pretty(&value).map_err(|e| Failure::Internal(e.to_string()))
}

impl JsonPoints {
    /// The opening, up to the points' `[`.
    pub(crate) fn start(name: &str) -> Result<(JsonPoints, String), Failure> {
        let name = serde_json::to_string(name).map_err(|e| Failure::Internal(e.to_string()))?;
        Ok((JsonPoints { points: 0 }, format!("{{\n  \"name\": {name},\n  \"points\": [")))
    }

    /// One point, after the ones before it.
    pub(crate) fn point(&mut self, p: &SweepPoint) -> Result<String, Failure> {
        let sep = if self.points == 0 { "\n    " } else { ",\n    " };
        self.points += 1;
        Ok(format!("{sep}{}", indent_rest(&pretty(p)?, 4)))
    }

    /// The closing: the points' `]`, the provenance if any, `}` and a newline.
    pub(crate) fn end(&self, provenance: Option<&Provenance>) -> Result<String, Failure> {
        let mut s = String::from(if self.points == 0 { "]" } else { "\n  ]" });
        if let Some(p) = provenance {
            s.push_str(&format!(",\n  \"provenance\": {}", indent_rest(&pretty(p)?, 2)));
        }
        s.push_str("\n}\n");
        Ok(s)
    }
}

/// Which of a finished point's parts the sweep's outputs at the end read (besides the
/// summary, the labels and the runs' seeds, which every output reads).
#[derive(Clone, Debug, Default)]
pub(crate) struct Keep {
    /// The point's whole scenario (the first point's; the others keep their duration).
    pub scenario: bool,
    /// `--out`: the plots, the flent file and report.html read the probes' RTT series
    /// of every run, the first run's other series, every run's findings, the reasons
    /// for the nulls and the warnings.
    pub out: bool,
    /// `--out` or `--hist`: every run's histograms.
    pub histograms: bool,
    /// The `--plot` metrics, whose reason a sweep that measured none of them names.
    pub plot: Vec<String>,
}

/// What a sweep keeps of a finished point: its summary, and of the rest what the
/// sweep's tables, plots, flent file and report page read (see [`Keep`]). Every run's
/// metrics and printouts go: the summary has them, and the files written per point had
/// them. Without `--out` the time series, findings, warnings and the reasons' text go
/// too (a null metric's name stays: the CSV and the full table list it): a
/// 10,000-point rrul sweep of 10 ms points kept 53 KB per point (issue 48).
///
/// The maps kept are rebuilt from their sorted entries, which packs their nodes (built
/// an insert at a time they are about half full), and the reasons lose their spare
/// capacity.
pub(crate) fn slim(mut r: Results, keep: &Keep, names: &mut Names) -> Results {
    if !keep.scenario {
        let duration = r.scenario.get("duration_ns").cloned().unwrap_or(serde_json::Value::Null);
        r.scenario = serde_json::json!({ "duration_ns": duration });
    }
    for (i, run) in r.runs.iter_mut().enumerate() {
        run.metrics = Default::default();
        run.printouts = Default::default();
        if !keep.histograms {
            run.histograms = Default::default();
        }
        if !keep.out {
            run.findings = Vec::new();
            run.timeseries = Default::default();
        } else {
            run.timeseries = std::mem::take(&mut run.timeseries)
                .into_iter()
                .map(|(name, mut ts)| {
                    if i > 0 && name != darkbuf_report::cdf::PING_RTT_SERIES {
                        // The name stays (the glossary lists every series of every run).
                        ts.t_ms = Vec::new();
                        ts.values = Vec::new();
                    }
                    ts.t_ms.shrink_to_fit();
                    ts.values.shrink_to_fit();
                    ts.unit.shrink_to_fit();
                    (name, ts)
                })
                .collect();
        }
    }
    if !keep.out {
        r.warnings = Vec::new();
    }
    r.summary = std::mem::take(&mut r.summary).into_iter().map(|(name, s)| (names.get(&name), s)).collect();
    r.unavailable = std::mem::take(&mut r.unavailable)
        .into_iter()
        .map(|(name, why)| {
            let why = if keep.out || keep.plot.iter().any(|p| **p == *name) { names.get(&why) } else { names.get("") };
            (names.get(&name), why)
        })
        .collect();
    r
}

/// One copy of each metric name and null reason the kept points share (a
/// [`darkbuf_report::Shared`] each): a 10,000-point rrul sweep has about 250 names and
/// a handful of reasons, which were a `String` per point each (issue 48).
#[derive(Default)]
pub(crate) struct Names(std::collections::HashSet<Shared>);

impl Names {
    /// The shared copy of `s`.
    pub(crate) fn get(&mut self, s: &str) -> Shared {
        if let Some(k) = self.0.get(s) {
            return k.clone();
        }
        let k: Shared = s.into();
        self.0.insert(k.clone());
        k
    }
}

/// The sweep's outputs while it runs, and what it keeps for the end.
pub(crate) struct SweepSink<'a> {
    c: &'a Common,
    /// results.json being written (as results.json.partial until the end).
    file: Option<(PathBuf, std::io::BufWriter<std::fs::File>)>,
    json: Option<JsonPoints>,
    /// `--format json`: the same JSON on stdout, without the provenance (its opening
    /// printed with the first point, so a sweep that fails before one prints nothing).
    stdout_json: Option<(JsonPoints, String)>,
    now: f64,
    /// What of each point the outputs at the end read.
    keep: Keep,
    pub(crate) sweep: SweepResults,
    /// (point label, warning) of every point, printed folded at the end.
    warnings: Vec<(String, String)>,
    /// The kept points' metric names and reasons.
    names: Names,
}

impl<'a> SweepSink<'a> {
    pub(crate) fn new(c: &'a Common, name: &str, provenance: Option<Provenance>, keep: Keep) -> Result<SweepSink<'a>, Failure> {
        let mut sink = SweepSink {
            c,
            file: None,
            json: None,
            stdout_json: None,
            now: run::now_unix_s(),
            keep,
            sweep: SweepResults { provenance, name: name.to_string(), points: Vec::new() },
            warnings: Vec::new(),
            names: Names::default(),
        };
        if let Some(dir) = &c.out {
            let partial = dir.join("results.json.partial");
            let f = std::fs::File::create(&partial).map_err(|e| run::write_failure(&partial, &e))?;
            let (json, head) = JsonPoints::start(name)?;
            sink.file = Some((partial, std::io::BufWriter::new(f)));
            sink.json = Some(json);
            sink.write_file(&head)?;
        }
        if c.format == Format::Json {
            sink.stdout_json = Some(JsonPoints::start(name)?);
        }
        Ok(sink)
    }

    fn write_file(&mut self, text: &str) -> Result<(), Failure> {
        if let Some((path, f)) = &mut self.file {
            f.write_all(text.as_bytes()).map_err(|e| run::write_failure(path, &e))?;
        }
        Ok(())
    }

    /// A finished point, `index` in the plan: its findings on stderr, its JSON and
    /// flent file out, and its slim results kept.
    pub(crate) fn push(&mut self, index: usize, label: String, set: Vec<String>, results: Results) -> Result<(), Failure> {
        run::warn_point_findings(&format!(" in point \"{label}\""), &results);
        self.warnings.extend(results.warnings.iter().map(|w| (label.clone(), w.clone())));
        let point = SweepPoint { label, set, results };
        if let Some(json) = &mut self.json {
            let text = json.point(&point)?;
            self.write_file(&text)?;
        }
        if let Some((json, head)) = &mut self.stdout_json {
            let text = std::mem::take(head) + &json.point(&point)?;
            crate::output::stdout(&text)?;
        }
        let keep = Keep { scenario: self.sweep.points.is_empty(), ..self.keep.clone() };
        // The point's flent file is the sweep's flent_point() of it: a one-point sweep
        // of the same name, the file numbered by the point's place in the plan.
        let mut one = SweepResults { name: std::mem::take(&mut self.sweep.name), points: vec![point], provenance: None };
        let written = match &self.c.out {
            Some(dir) => run::write_point_flent(dir, index, &one, 0, self.now),
            None => Ok(()),
        };
        self.sweep.name = std::mem::take(&mut one.name);
        written?;
        if let Some(SweepPoint { label, set, results }) = one.points.pop() {
            self.sweep.points.push(SweepPoint { label, set, results: slim(results, &keep, &mut self.names) });
        }
        Ok(())
    }

    /// Ends the JSON, writes the rest of `--out` (results.csv, results.flent.gz, the
    /// plots, report.html) from what was kept, prints the folded warnings and, in table
    /// or CSV format, `table()`'s text or the CSV. Returns the kept sweep.
    pub(crate) fn finish(mut self, sweep_metrics: &[String], table: impl FnOnce(&SweepResults) -> String) -> Result<SweepResults, Failure> {
        run::warn_folded("warning", std::mem::take(&mut self.warnings));
        if let Some(json) = self.json.take() {
            let end = json.end(self.sweep.provenance.as_ref())?;
            self.write_file(&end)?;
        }
        if let Some((partial, f)) = self.file.take() {
            let f = f.into_inner().map_err(|e| run::write_failure(&partial, e.error()))?;
            f.sync_all().map_err(|e| run::write_failure(&partial, &e))?;
            let dir = partial.parent().unwrap_or(Path::new("."));
            let final_path = dir.join("results.json");
            std::fs::rename(&partial, &final_path).map_err(|e| run::write_failure(&final_path, &e))?;
        }
        if let Some(dir) = &self.c.out {
            run::write_streamed(&dir.join("results.csv"), |w| darkbuf_report::write_sweep_csv(w, &self.sweep))?;
            run::write_sweep_artifacts(dir, &self.sweep, sweep_metrics, self.now)?;
        }
        match self.c.format {
            Format::Json => {
                let (json, head) = match self.stdout_json.take() {
                    Some(j) => j,
                    None => JsonPoints::start(&self.sweep.name)?,
                };
                crate::output::stdout(&(head + &json.end(None)?))?;
            }
            Format::Csv => crate::output::stdout(&darkbuf_report::sweep_csv(&self.sweep))?,
            Format::Table => crate::output::stdout(&table(&self.sweep))?,
        }
        Ok(std::mem::replace(&mut self.sweep, SweepResults { name: String::new(), points: Vec::new(), provenance: None }))
    }
}

impl Drop for SweepSink<'_> {
    fn drop(&mut self) {
        // A sweep that failed leaves no half-written results.json.
        if let Some((partial, _)) = self.file.take() {
            let _ = std::fs::remove_file(partial);
        }
    }
}

/// The heading of a sweep's table.
pub(crate) fn heading(name: &str, n: usize, planned: usize, interrupted: bool, backend: &str) -> String {
    let mut s = String::new();
    let of = if interrupted { format!(" of {planned}, interrupted") } else { String::new() };
    outln!(s, "{name}: {n} point{}{of} ({backend})", if n == 1 { "" } else { "s" });
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use darkbuf_report::{Environment, RunRecord, TimeSeries};

    fn results(seed: u64, runs: usize) -> Results {
        let records = (0..runs as u64)
            .map(|i| {
                let mut r = RunRecord { seed: seed + i, ..Default::default() };
                r.metrics.insert("ping.rtt_avg_ms".into(), Some(1.5 + i as f64));
                r.metrics.insert("consumer.pps".into(), None);
                r.printouts.insert("tc -s qdisc".into(), "qdisc x\n".into());
                for name in ["ping.rtt_ms", "bql.limit"] {
                    r.timeseries.insert(name.into(), TimeSeries { unit: "ms".into(), t_ms: vec![0.0, 100.0], values: vec![Some(1.0), None] });
                }
                r
            })
            .collect();
        let env = Environment { kernel: "sim".into(), cpu: "c".into(), profile: "p".into(), darkbuf_version: "0".into(), ..Default::default() };
        let unavailable = [("consumer.pps".to_string(), "why \"quoted\"\nnewline".to_string())].into();
        Results::from_runs(serde_json::json!({"name": "n", "duration_ns": 1000000}), "sim", env, records, unavailable)
    }

    fn sweep(points: usize, provenance: Option<Provenance>) -> SweepResults {
        SweepResults {
            name: "a \"sweep\"".into(),
            points: (0..points).map(|i| SweepPoint { label: format!("p{i}"), set: vec![format!("k={i}")], results: results(i as u64, 2) }).collect(),
            provenance,
        }
    }

    fn streamed(s: &SweepResults) -> String {
        let (mut j, mut text) = JsonPoints::start(&s.name).unwrap();
        for p in &s.points {
            text += &j.point(p).unwrap();
        }
        text + &j.end(s.provenance.as_ref()).unwrap()
    }

    /// The streamed JSON is `results_json`'s, byte for byte: with and without
    /// provenance, with no point, one, and several.
    #[test]
    fn streamed_json_is_results_json() {
        let prov = Provenance {
            command: "darkbuf sweep 'a b'".into(),
            scenario_file: "x.toml".into(),
            scenario_toml: "name = \"x\"\n[sweep]\n".into(),
            darkbuf_version: "0.1.0".into(),
            darkbuf_commit: "abc".into(),
        };
        for n in [0, 1, 3] {
            for p in [None, Some(prov.clone())] {
                let s = sweep(n, p);
                assert_eq!(streamed(&s), darkbuf_run::results_json(&s).unwrap(), "{n} points");
            }
        }
    }

    #[test]
    fn slim_keeps_what_the_sweep_outputs_read() {
        let full = results(7, 3);
        let out = Keep { out: true, histograms: true, ..Default::default() };
        let kept = slim(full.clone(), &out, &mut Names::default());
        assert_eq!(kept.summary, full.summary);
        assert_eq!(kept.unavailable, full.unavailable);
        assert_eq!(kept.warnings, full.warnings);
        assert_eq!(kept.scenario, serde_json::json!({"duration_ns": 1000000}));
        assert_eq!(slim(full.clone(), &Keep { scenario: true, ..out.clone() }, &mut Names::default()).scenario, full.scenario);
        assert!(kept.runs.iter().all(|r| r.metrics.is_empty() && r.printouts.is_empty()));
        assert_eq!(kept.runs.iter().map(|r| r.seed).collect::<Vec<_>>(), vec![7, 8, 9]);
        assert_eq!(kept.runs[0].timeseries, full.runs[0].timeseries);
        assert_eq!(kept.runs[2].timeseries["ping.rtt_ms"], full.runs[2].timeseries["ping.rtt_ms"]);
        assert!(kept.runs[2].timeseries["bql.limit"].values.is_empty());
    }

    /// Two kept points share one copy of each metric name and reason (issue 48: a
    /// `String` per point was 30 KB of each rrul point).
    #[test]
    fn slim_shares_names_and_reasons_between_points() {
        let mut names = Names::default();
        let keep = Keep { out: true, ..Default::default() };
        let (a, b) = (slim(results(1, 1), &keep, &mut names), slim(results(2, 1), &keep, &mut names));
        assert_eq!(a.summary, results(1, 1).summary);
        for ((ka, _), (kb, _)) in a.summary.iter().zip(&b.summary) {
            assert!(std::sync::Arc::ptr_eq(ka, kb), "{ka}");
        }
        let (ra, rb) = (&a.unavailable["consumer.pps"], &b.unavailable["consumer.pps"]);
        assert!(std::sync::Arc::ptr_eq(ra, rb));
        assert_eq!(&**ra, "why \"quoted\"\nnewline");
    }

    /// Without `--out` (and `--hist`) a point keeps its summary, the names of its null
    /// metrics (the CSV and the full table list them) and its runs' seeds; the reason of
    /// a `--plot` metric stays (a sweep that measured none of them names it).
    #[test]
    fn slim_without_out_keeps_what_the_table_reads() {
        let mut full = results(7, 2);
        full.unavailable.insert("tcp.retrans".into(), "no TCP flow".into());
        let kept = slim(full.clone(), &Keep { plot: vec!["consumer.pps".into()], ..Default::default() }, &mut Names::default());
        assert_eq!(kept.summary, full.summary);
        assert_eq!(kept.unavailable.len(), 2);
        assert_eq!(kept.unavailable["consumer.pps"], full.unavailable["consumer.pps"]);
        assert_eq!(&*kept.unavailable["tcp.retrans"], "");
        assert_eq!(kept.runs.iter().map(|r| r.seed).collect::<Vec<_>>(), vec![7, 8]);
        assert!(kept.runs.iter().all(|r| r.timeseries.is_empty() && r.histograms.is_empty() && r.findings.is_empty()));
        assert!(kept.warnings.is_empty());
    }
}
