//! `darkbuf compare`: the simulator's and the kernel's results for one scenario, metric
//! by metric, with the simulator's error against the kernel: relative,
//! (sim - kernel) / |kernel|, for quantities; in percentage points, sim - kernel, for
//! metrics that are percentages (`*_pct`), whose relative error misleads (93% against
//! 3% loss is "+3000%", when the model is 90 points off).

use darkbuf_report::Results;
use serde::Serialize;
use std::collections::BTreeSet;

/// One metric on both backends (summary means).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Row {
    pub metric: String,
    pub sim: Option<f64>,
    pub kernel: Option<f64>,
    /// (sim - kernel) / |kernel|; None when either is missing, kernel is 0, or the
    /// metric is a percentage (see `diff_pts`).
    pub rel_error: Option<f64>,
    /// sim - kernel in percentage points, for metrics that are percentages (`*_pct`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff_pts: Option<f64>,
    /// Why a side is missing (from that backend's `unavailable`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What `darkbuf compare --format json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub scenario: serde_json::Value,
    pub rows: Vec<Row>,
    pub sim: Results,
    pub kernel: Results,
}

/// The contract's metrics first, in DESIGN.md's order, then the others by name.
pub const ORDER: &[&str] = &[
    "ping.rtt_avg_ms", "ping.rtt_min_ms", "ping.rtt_p50_ms", "ping.rtt_p99_ms", "ping.rtt_max_ms", "ping.loss_pct",
    "consumer.pps", "sink.pps", "qdisc.sent_pkts", "qdisc.drops", "qdisc.requeues", "qdisc.overlimits",
    "qdisc.backlog_avg_pkts", "bql.limit_avg", "bql.limit_last", "bql.inflight_avg", "bql.inflight_p50", "bql.inflight_max",
    "txq.stack_xoff", "txq.drv_xoff", "napi.polls", "napi.avg_work", "napi.full_budget_polls", "ring.drops",
    "ping.wait_qdisc_ms", "ping.wait_ring_ms", "ping.wait_consumer_ms",
];

pub fn rel_error(sim: Option<f64>, kernel: Option<f64>) -> Option<f64> {
    let (s, k) = (sim?, kernel?);
    if k == 0.0 {
        return if s == 0.0 { Some(0.0) } else { None };
    }
    Some((s - k) / k.abs())
}

/// Whether `metric` is a percentage (`ping.loss_pct`, `cpu.0.busy_pct`): compared in
/// points, not relatively.
pub fn is_percentage(metric: &str) -> bool {
    metric.ends_with("_pct")
}

/// Rows for every metric either backend measured.
pub fn rows(sim: &Results, kernel: &Results) -> Vec<Row> {
    let mut names: Vec<String> = ORDER.iter().map(|s| s.to_string()).collect();
    let rest: BTreeSet<String> = sim.summary.keys().chain(kernel.summary.keys()).filter(|k| !ORDER.contains(&&***k)).map(|k| k.to_string()).collect();
    names.extend(rest);
    let mut out = Vec::new();
    for m in names {
        let m = m.as_str();
        let s = sim.metric(m).map(|x| x.mean);
        let k = kernel.metric(m).map(|x| x.mean);
        let in_either = sim.summary.contains_key(m) || kernel.summary.contains_key(m);
        if !in_either {
            continue;
        }
        let note = match (s, k) {
            (Some(_), None) => kernel.unavailable.get(m).map(|r| format!("kernel: {r}")),
            (None, Some(_)) => sim.unavailable.get(m).map(|r| format!("sim: {r}")),
            (None, None) => kernel.unavailable.get(m).or(sim.unavailable.get(m)).map(|r| r.to_string()),
            _ => None,
        };
        let (rel, pts) = if is_percentage(m) { (None, s.zip(k).map(|(s, k)| s - k)) } else { (rel_error(s, k), None) };
        out.push(Row { rel_error: rel, diff_pts: pts, metric: m.to_string(), sim: s, kernel: k, note });
    }
    out
}

fn cell(v: Option<f64>) -> String {
    match v {
        None => "n/a".into(),
        Some(x) => darkbuf_report::fmt_human(x),
    }
}

/// What the difference column is, printed under the table.
pub const DIFFERENCE_NOTE: &str = "sim vs kernel: (sim - kernel) / kernel in percent; for metrics that are percentages (*_pct), sim - kernel in percentage points (pts)";

/// A markdown table: metric | sim | kernel | sim vs kernel | note, and what the
/// difference is under it.
pub fn render_table(rows: &[Row]) -> String {
    let mut t = vec![["metric".to_string(), "sim".into(), "kernel".into(), "sim vs kernel".into(), "note".into()]];
    for r in rows {
        if r.sim.is_none() && r.kernel.is_none() {
            continue;
        }
        let e = match (r.rel_error, r.diff_pts) {
            (_, Some(p)) => format!("{p:+.1} pts"),
            (Some(e), None) => format!("{:+.1}%", e * 100.0),
            (None, None) => String::new(),
        };
        t.push([r.metric.clone(), cell(r.sim), cell(r.kernel), e, r.note.clone().unwrap_or_default()]);
    }
    let mut w = [0usize; 5];
    for row in &t {
        for (i, c) in row.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut s = String::new();
    for (n, row) in t.iter().enumerate() {
        s.push('|');
        for (i, c) in row.iter().enumerate() {
            let pad = w[i] - c.chars().count();
            if i == 0 || i == 4 {
                s.push_str(&format!(" {c}{} |", " ".repeat(pad)));
            } else {
                s.push_str(&format!(" {}{c} |", " ".repeat(pad)));
            }
        }
        s.push('\n');
        if n == 0 {
            s.push('|');
            for (i, wi) in w.iter().enumerate() {
                if i == 0 || i == 4 {
                    s.push_str(&format!("{}|", "-".repeat(wi + 2)));
                } else {
                    s.push_str(&format!("{}:|", "-".repeat(wi + 1)));
                }
            }
            s.push('\n');
        }
    }
    s.push_str(DIFFERENCE_NOTE);
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use darkbuf_report::{Environment, RunRecord};
    use std::collections::BTreeMap;

    fn results(backend: &str, m: &[(&str, Option<f64>)]) -> Results {
        let rec = RunRecord { seed: 1, metrics: m.iter().map(|(k, v)| (k.to_string(), *v)).collect(), ..Default::default() };
        let mut why = BTreeMap::new();
        for (k, v) in m {
            if v.is_none() {
                why.insert(k.to_string(), format!("{backend} cannot"));
            }
        }
        Results::from_runs(serde_json::json!({}), backend, Environment::default(), vec![rec], why)
    }

    #[test]
    fn relative_error() {
        assert_eq!(rel_error(Some(110.0), Some(100.0)), Some(0.1));
        assert_eq!(rel_error(Some(90.0), Some(100.0)), Some(-0.1));
        assert_eq!(rel_error(Some(0.0), Some(0.0)), Some(0.0));
        assert_eq!(rel_error(Some(1.0), Some(0.0)), None);
        assert_eq!(rel_error(None, Some(1.0)), None);
    }

    #[test]
    fn rows_in_contract_order_with_reasons() {
        let s = results("sim", &[("consumer.pps", Some(1100.0)), ("ping.rtt_p50_ms", Some(2.0)), ("bql.limit_avg", Some(5.0)), ("zz.extra", Some(1.0))]);
        let k = results("kernel", &[("consumer.pps", Some(1000.0)), ("ping.rtt_p50_ms", Some(2.5)), ("bql.limit_avg", None)]);
        let r = rows(&s, &k);
        let names: Vec<&str> = r.iter().map(|r| r.metric.as_str()).collect();
        assert_eq!(names, ["ping.rtt_p50_ms", "consumer.pps", "bql.limit_avg", "zz.extra"]);
        assert_eq!(r[0].rel_error, Some(-0.2));
        assert!((r[1].rel_error.unwrap() - 0.1).abs() < 1e-12);
        assert_eq!(r[2].note.as_deref(), Some("kernel: kernel cannot"));
        let t = render_table(&r);
        assert!(t.contains("| consumer.pps "), "{t}");
        assert!(t.contains("+10.0%"), "{t}");
        assert!(t.contains("(sim - kernel) / kernel"), "{t}");
    }

    #[test]
    fn percentages_differ_in_points() {
        // Issue 18: 93% against 3% loss printed as +3000%.
        let s = results("sim", &[("ping.loss_pct", Some(93.0)), ("cpu.1.busy_pct", Some(50.0))]);
        let k = results("kernel", &[("ping.loss_pct", Some(3.0)), ("cpu.1.busy_pct", Some(60.0))]);
        let r = rows(&s, &k);
        assert_eq!((r[0].rel_error, r[0].diff_pts), (None, Some(90.0)));
        let t = render_table(&r);
        assert!(t.contains("+90.0 pts") && t.contains("-10.0 pts"), "{t}");
        assert!(!t.contains("3000"), "{t}");
    }
}
