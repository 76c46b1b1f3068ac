//! Tables people read: one run's metrics, and sweeps in the seed reports' layout
//! (metrics as rows, configurations as columns).
//!
//! Output is markdown, padded to column width, so it reads well in a terminal and
//! pastes into a report or a mail unchanged.

pub use crate::format::CellFormat;
use crate::format::{
    ci_footnote, fmt_human, fmt_mean_ci, format_for_metric, mean_ci_decimals, markdown_table, md_escape, metric_sort_key, Align,
};
pub use crate::hist::histograms_text;
use crate::results::{Results, SweepResults};
use std::collections::BTreeSet;

/// Every metric named in `r`'s summary or `unavailable`, in display order
/// (grouped by prefix, see [`crate::format::metric_sort_key`]).
pub fn metric_names(r: &Results) -> Vec<String> {
    let set: BTreeSet<&str> = r.summary.keys().chain(r.unavailable.keys()).map(|k| &**k).collect();
    let mut v: Vec<String> = set.into_iter().map(str::to_string).collect();
    v.sort_by(|a, b| metric_sort_key(a).cmp(&metric_sort_key(b)));
    v
}

/// The note for a metric: why it is null, or in how many runs it was null.
pub(crate) fn note(r: &Results, metric: &str) -> String {
    let reason = r.unavailable.get(metric).map(|r| &**r).unwrap_or("");
    let runs = r.runs.len() as u32;
    match r.summary.get(metric).copied().flatten() {
        None => reason.to_string(),
        Some(s) if runs > s.n => {
            let partial = format!("null in {} of {} runs", runs - s.n, runs);
            if reason.is_empty() {
                partial
            } else {
                format!("{partial}: {reason}")
            }
        }
        Some(_) => reason.to_string(),
    }
}

/// One run's (or several runs') metrics, one row per metric, grouped by prefix
/// (`ping.`, `qdisc.`, `bql.`, `txq.`, `napi.`, `ring.`, `consumer.`, `sink.`, others).
///
/// With more than one run the columns are `metric | mean | ± ci95 | min | max | n`;
/// with one run `metric | value`. Numbers use [`fmt_human`] (counts as plain
/// integers). A null metric shows `n/a`; when any metric is null or partly null a
/// trailing `note` column gives the reason from `unavailable`.
pub fn run_table(r: &Results) -> String {
    let (names, folded) = fold_families(metric_names(r));
    let multi = r.runs.len() > 1;
    let notes: Vec<String> = names.iter().map(|m| note(r, m)).collect();
    let with_note = notes.iter().any(|n| !n.is_empty());

    let mut headers: Vec<String> = if multi {
        ["metric", "mean", "± ci95", "min", "max", "n"]
            .map(String::from)
            .to_vec()
    } else {
        ["metric", "value"].map(String::from).to_vec()
    };
    let mut align = vec![Align::Left];
    align.resize(headers.len(), Align::Right);
    if with_note {
        headers.push("note".into());
        align.push(Align::Left);
    }

    let rows: Vec<Vec<String>> = names
        .iter()
        .zip(&notes)
        .map(|(m, note)| {
            let s = r.summary.get(m.as_str()).copied().flatten();
            let mut row = vec![md_escape(m)];
            match (s, multi) {
                // One run measured it: no interval, the value as a single run shows it.
                (Some(s), true) if s.n <= 1 => {
                    row.extend([fmt_human(s.mean), String::new(), fmt_human(s.min), fmt_human(s.max), s.n.to_string()])
                }
                (Some(s), true) => {
                    // One precision per row: min and max at the mean's decimals.
                    let (mean, ci) = fmt_mean_ci(s.mean, s.ci95);
                    let d = mean_ci_decimals(s.mean, s.ci95);
                    let at = |v: f64| if v.is_finite() { crate::format::fmt_fixed(v, d) } else { fmt_human(v) };
                    row.extend([mean, format!("±{ci}"), at(s.min), at(s.max), s.n.to_string()])
                }
                (None, true) => row.extend(["n/a", "", "", "", "0"].map(String::from)),
                (Some(s), false) => row.push(fmt_human(s.mean)),
                (None, false) => row.push("n/a".into()),
            }
            if with_note {
                row.push(md_escape(note));
            }
            row
        })
        .collect();
    let mut out = markdown_table(&headers, &align, &rows);
    out.push_str(&folded);
    if multi {
        out.push_str(&ci_footnote(&format!("{} runs; n = the runs that measured the metric", r.runs.len())));
    }
    out
}

/// `names` without the rows of family indices at or past
/// [`crate::families::MAX_FAMILY_ROWS`], and the note that says which were left out
/// (empty when none were).
pub fn fold_families(names: Vec<String>) -> (Vec<String>, String) {
    let mut left: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    let mut kept = Vec::with_capacity(names.len());
    for n in names {
        match crate::families::folded(&n) {
            Some(pattern) => *left.entry(pattern).or_default() += 1,
            None => kept.push(n),
        }
    }
    let note: String = left
        .iter()
        .map(|(pattern, rows)| {
            format!(
                "{pattern}: rows for N < {} only ({rows} more rows in the JSON and CSV results)\n",
                crate::families::MAX_FAMILY_ROWS
            )
        })
        .collect();
    (kept, note)
}

/// The window the tools' printouts count, said next to them: `tc -s`, iperf3 and
/// bpftrace count from the start of the run (since the qdisc was created, the client
/// started, the probes were attached), warmup included, on both backends; every metric
/// counts only the measured window after the warmup. Returns the short form
/// (`whole run: 1 s warmup + 5 s measured`) and the sentence; `None` when the scenario
/// does not give both times.
pub fn printouts_window(scenario: &serde_json::Value) -> Option<(String, String)> {
    let secs = |k: &str| scenario.get(k).and_then(serde_json::Value::as_u64).map(|ns| fmt_human(ns as f64 / 1e9));
    let (w, d) = (secs("warmup_ns")?, secs("duration_ns")?);
    let short = format!("whole run: {w} s warmup + {d} s measured");
    let long = format!(
        "The printouts count the whole run, as the tools do (tc -s since the qdisc was created, iperf3 in whole seconds \
         from its start, bpftrace from its attach): the {w} s warmup and the {d} s measured window. The tables count the {d} s measured \
         window only, so a printout's counters are larger than the table's by what the warmup added."
    );
    Some((short, long))
}

/// One row of a sweep table: what it is called, which metric it shows, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeedRow {
    pub label: &'static str,
    pub metric: &'static str,
    pub format: CellFormat,
}

/// The rows of the seed's PERF-2651 tables, in the seed's order, plus the rows the
/// later tables add (p99, sink pps, drops).
pub fn default_rows() -> Vec<SeedRow> {
    use CellFormat::*;
    let row = |label, metric, format| SeedRow {
        label,
        metric,
        format,
    };
    vec![
        row("BQL limit", "bql.limit_last", Int),
        row("BQL inflight", "bql.inflight_avg", Float1),
        row("BQL inflight p50", "bql.inflight_p50", Int),
        row("Ping RTT avg", "ping.rtt_avg_ms", Ms),
        row("Ping RTT min", "ping.rtt_min_ms", Ms),
        row("Ping RTT p99", "ping.rtt_p99_ms", Ms),
        row("requeues", "qdisc.requeues", Count),
        row("NAPI avg_work", "napi.avg_work", Int),
        row("NAPI polls", "napi.polls", Count),
        row("Consumer pps", "consumer.pps", Count),
        row("Sink pps", "sink.pps", Count),
        row("qdisc drops", "qdisc.drops", Count),
        row("ring drops", "ring.drops", Count),
    ]
}

/// The cell of `metric` at one sweep point: the mean (plus ` ±ci` over more than one
/// run) or `n/a`.
fn sweep_cell(r: &Results, metric: &str, format: CellFormat) -> String {
    match r.summary.get(metric).copied().flatten() {
        Some(s) => format.cell(s.mean, s.ci95, s.n),
        None => "n/a".to_string(),
    }
}

fn sweep_table_rows<'a>(
    s: &SweepResults,
    rows: impl Iterator<Item = (&'a str, &'a str, CellFormat)>,
    width: Option<usize>,
) -> String {
    let rows: Vec<(&str, &str, CellFormat)> = rows.collect();
    let table = |points: &[&crate::results::SweepPoint]| {
        let mut headers = vec!["Metric".to_string()];
        headers.extend(points.iter().map(|p| md_escape(&p.label)));
        let align = vec![Align::Left; headers.len()];
        let body: Vec<Vec<String>> = rows
            .iter()
            .map(|&(label, metric, format)| {
                let mut row = vec![md_escape(label)];
                row.extend(points.iter().map(|p| md_escape(&sweep_cell(&p.results, metric, format))));
                row
            })
            .collect();
        markdown_table(&headers, &align, &body)
    };
    let all: Vec<&crate::results::SweepPoint> = s.points.iter().collect();
    let mut out = String::new();
    // Wrap: as many points per table as fit the width (at least one), the Metric
    // column repeated, so a wide sweep reads on a terminal instead of folding lines.
    let mut start = 0;
    while start < all.len() || (all.is_empty() && out.is_empty()) {
        let mut end = all.len();
        if let Some(w) = width {
            end = start + 1;
            while end < all.len() && table_width(&table(&all[start..=end])) <= w {
                end += 1;
            }
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&table(&all[start..end]));
        if all.is_empty() {
            break;
        }
        start = end;
    }
    if s.points.iter().any(|p| p.results.runs.len() > 1) {
        out.push_str(&ci_footnote("each point's runs"));
    }
    out
}

/// The widest line of a rendered table, in characters.
fn table_width(t: &str) -> usize {
    t.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// A sweep in the seed's layout: `| Metric | <point label> | ... |`, one row per
/// [`SeedRow`] with the mean of its metric at each point (` ±ci` when n > 1), `n/a`
/// where the point has no value.
pub fn sweep_table(s: &SweepResults, rows: &[SeedRow]) -> String {
    sweep_table_rows(s, rows.iter().map(|r| (r.label, r.metric, r.format)), None)
}

/// [`sweep_table`] wrapped to `width` characters: the points are split over several
/// tables (each with the Metric column) so that none is wider than `width` (a single
/// point's table may be).
pub fn sweep_table_fit(s: &SweepResults, rows: &[SeedRow], width: usize) -> String {
    sweep_table_rows(s, rows.iter().map(|r| (r.label, r.metric, r.format)), Some(width))
}

/// Every metric of any point as a row (named by its metric name, in display order),
/// points as columns; `*_ms` metrics as [`CellFormat::Ms`], others
/// [`CellFormat::Human`].
pub fn sweep_table_all(s: &SweepResults) -> String {
    sweep_table_all_fit(s, None)
}

/// [`sweep_table_all`], wrapped to `width` characters when given (see [`sweep_table_fit`]).
pub fn sweep_table_all_fit(s: &SweepResults, width: Option<usize>) -> String {
    let (names, folded) = fold_families(sweep_metric_names(s));
    let mut out = sweep_table_rows(
        s,
        names
            .iter()
            .map(|m| (m.as_str(), m.as_str(), format_for_metric(m))),
        width,
    );
    out.push_str(&folded);
    out
}

/// Every metric named at any point of a sweep, in display order.
pub fn sweep_metric_names(s: &SweepResults) -> Vec<String> {
    // Inserted one at a time: `collect()` gathers every point's names into a Vec first
    // (10,000 points of 250 metrics: 40 MB).
    let mut set: BTreeSet<&str> = BTreeSet::new();
    for p in &s.points {
        set.extend(p.results.summary.keys().chain(p.results.unavailable.keys()).map(|k| &**k));
    }
    let mut v: Vec<String> = set.into_iter().map(str::to_string).collect();
    v.sort_by(|a, b| metric_sort_key(a).cmp(&metric_sort_key(b)));
    v
}
