//! CSV for spreadsheets and scripts (RFC 4180 quoting, `\n` line ends).
//!
//! Numbers are written with Rust's shortest round-trip representation, so a value
//! read back is bit-identical; a null is an empty cell. Metrics are in name order.

use crate::results::{Results, SweepResults};
use std::collections::BTreeSet;

/// Quote a field per RFC 4180 when it contains a comma, a quote or a line break.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A number cell: Rust's shortest round trip; not finite is an empty cell.
pub fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        String::new()
    }
}

/// One CSV line of already quoted fields, with its `\n`.
pub fn line(fields: impl IntoIterator<Item = String>) -> String {
    let mut s = fields.into_iter().collect::<Vec<_>>().join(",");
    s.push('\n');
    s
}

/// `metric,mean,ci95,min,max,n`, one line per metric of the summary or
/// `unavailable`; a null metric has empty cells.
pub fn run_csv(r: &Results) -> String {
    let names: BTreeSet<&str> = r.summary.keys().chain(r.unavailable.keys()).map(|k| &**k).collect();
    let mut out = String::from("metric,mean,ci95,min,max,n\n");
    for m in names {
        let cells = match r.summary.get(m).copied().flatten() {
            Some(s) => vec![
                num(s.mean),
                num(s.ci95),
                num(s.min),
                num(s.max),
                s.n.to_string(),
            ],
            None => vec![String::new(); 5],
        };
        out.push_str(&line(std::iter::once(csv_field(m)).chain(cells)));
    }
    out
}

/// `metric,<label1>,<label2>,...`, one line per metric of any point, the mean in
/// each cell (empty where the point has no value).
pub fn sweep_csv(s: &SweepResults) -> String {
    let mut v = Vec::new();
    write_sweep_csv(&mut v, s).expect("writing to a Vec cannot fail");
    String::from_utf8(v).expect("the CSV is made of str")
}

/// [`sweep_csv`] written to `w` a line at a time (10,000 points of 200 metrics are
/// megabytes).
pub fn write_sweep_csv(w: &mut dyn std::io::Write, s: &SweepResults) -> std::io::Result<()> {
    // Inserted one at a time: `collect()` gathers every point's names into a Vec first
    // (10,000 points of 250 metrics: 40 MB).
    let mut names: BTreeSet<&str> = BTreeSet::new();
    for p in &s.points {
        names.extend(p.results.summary.keys().chain(p.results.unavailable.keys()).map(|k| &**k));
    }
    w.write_all(line(std::iter::once("metric".to_string()).chain(s.points.iter().map(|p| csv_field(&p.label)))).as_bytes())?;
    for m in names {
        let cells = s
            .points
            .iter()
            .map(|p| match p.results.summary.get(m).copied().flatten() {
                Some(sm) => num(sm.mean),
                None => String::new(),
            });
        w.write_all(line(std::iter::once(csv_field(m)).chain(cells)).as_bytes())?;
    }
    Ok(())
}

/// `run,seed,<metric...>`, one line per run (`run` counts from 1), every metric of
/// any run as a column; empty where a run has no value.
pub fn runs_csv(r: &Results) -> String {
    let names: BTreeSet<&String> = r.runs.iter().flat_map(|run| run.metrics.keys()).collect();
    let mut out = line(
        ["run".to_string(), "seed".to_string()]
            .into_iter()
            .chain(names.iter().map(|m| csv_field(m))),
    );
    for (i, run) in r.runs.iter().enumerate() {
        let cells = names
            .iter()
            .map(|m| match run.metrics.get(*m).copied().flatten() {
                Some(v) => num(v),
                None => String::new(),
            });
        out.push_str(&line(
            [(i + 1).to_string(), run.seed.to_string()]
                .into_iter()
                .chain(cells),
        ));
    }
    out
}
