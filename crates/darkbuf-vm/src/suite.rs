//! The differential suite (`darkbuf validate`): cases from `validation/suite.toml`,
//! each run on the simulator and on the VM's kernel, compared metric by metric against
//! a tolerance. This module holds the suite's file format and the verdict tables; the
//! command (crates/darkbuf/src/validate.rs) runs the cases.

use darkbuf_report::Results;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;

/// `validation/suite.toml`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    #[serde(rename = "case")]
    pub cases: Vec<Case>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    /// The scenario file, relative to the suite file.
    pub scenario: String,
    /// `--set` overrides.
    #[serde(default)]
    pub set: Vec<String>,
    /// In the CI subset (`--suite ci`).
    #[serde(default)]
    pub ci: bool,
    /// At least this many runs on each side (seeds 1..=N on the simulator), whatever
    /// `--runs` asks: for a case whose kernel outcome varies from run to run (random
    /// loss, CUBIC's slow-start exit), so that its verdict compares means. 1 to 20.
    #[serde(default)]
    pub runs: Option<u32>,
    /// Metric -> tolerance.
    pub metrics: BTreeMap<String, Tolerance>,
}

/// A metric's tolerance: relative (0.10 = the simulator within 10% of the kernel), in
/// points for `*_pct` metrics, or `"info"`: shown, not judged.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Tolerance {
    Within(f64),
    Info,
}

impl<'de> Deserialize<'de> for Tolerance {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Tolerance;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a tolerance: a number (0.1 = 10%) or \"info\"")
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Tolerance, E> {
                Ok(Tolerance::Within(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Tolerance, E> {
                Ok(Tolerance::Within(v as f64))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Tolerance, E> {
                Ok(Tolerance::Within(v as f64))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Tolerance, E> {
                match v {
                    "info" => Ok(Tolerance::Info),
                    _ => Err(E::custom(format!("a tolerance is a number (0.1 = 10%) or \"info\", not \"{v}\""))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// The most runs a case or `--runs` asks for.
pub const MAX_RUNS: u32 = 20;

impl Case {
    /// The runs on each side: `--runs`, or the case's own `runs` if more.
    pub fn runs(&self, asked: u32) -> u32 {
        asked.max(self.runs.unwrap_or(1))
    }
}

/// Parses the suite; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<Suite, String> {
    let s: Suite = toml::from_str(text).map_err(|e| format!("{file}: {e}"))?;
    let mut seen = std::collections::BTreeSet::new();
    for c in &s.cases {
        if !seen.insert(c.name.as_str()) {
            return Err(format!("{file}: two cases are named \"{}\"", c.name));
        }
        if c.runs.is_some_and(|r| !(1..=MAX_RUNS).contains(&r)) {
            return Err(format!("{file}: case \"{}\": runs must be 1 to {MAX_RUNS}", c.name));
        }
        if let Some((m, _)) = c.metrics.iter().find(|(_, t)| matches!(t, Tolerance::Within(v) if !(v.is_finite() && *v >= 0.0))) {
            return Err(format!("{file}: case \"{}\": the tolerance of {m} must be a number >= 0", c.name));
        }
    }
    Ok(s)
}

/// One metric of one case on both sides.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Verdict {
    pub case: String,
    pub metric: String,
    pub sim: Option<f64>,
    pub kernel: Option<f64>,
    /// (sim - kernel) / |kernel|, or sim - kernel in points for `*_pct` metrics.
    pub error: Option<f64>,
    pub tolerance: Tolerance,
    /// None for "info", and when a side is missing.
    pub within: Option<bool>,
    /// Why a side is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The runs the kernel's mean is over (the simulator ran as many seeds).
    pub runs: usize,
}

/// The kernel side of one metric: its mean over `runs` runs, or why it is missing
/// ("kernel: ...").
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelSide {
    pub value: Option<f64>,
    pub missing: Option<String>,
    pub runs: usize,
}

/// The verdicts of one case.
pub fn judge(case: &Case, sim: &Results, kernel: &Results) -> Vec<Verdict> {
    judge_with(case, sim, |m| KernelSide {
        value: kernel.metric(m).map(|x| x.mean),
        missing: kernel.unavailable.get(m).map(|r| format!("kernel: {r}")),
        runs: kernel.runs.len(),
    })
}

/// The verdicts of one case, the kernel's side of each metric from `kernel` (a run's
/// results, or an earlier run's saved verdicts: `darkbuf validate --rejudge`).
pub fn judge_with(case: &Case, sim: &Results, kernel: impl Fn(&str) -> KernelSide) -> Vec<Verdict> {
    case.metrics
        .iter()
        .map(|(m, tol)| {
            let ks = kernel(m);
            let s = sim.metric(m).map(|x| x.mean);
            let k = ks.value;
            let pct = darkbuf_kernel::compare::is_percentage(m);
            let error = if pct { s.zip(k).map(|(s, k)| s - k) } else { darkbuf_kernel::compare::rel_error(s, k) };
            let within = match (tol, error) {
                (Tolerance::Within(t), Some(e)) => Some(e.abs() <= *t + 1e-12),
                _ => None,
            };
            let note = match (s, k) {
                (_, None) => ks.missing.or_else(|| Some("kernel: not reported".into())),
                (None, _) => sim.unavailable.get(m.as_str()).map(|r| format!("sim: {r}")).or_else(|| Some("sim: not reported".into())),
                _ => None,
            };
            Verdict { case: case.name.clone(), metric: m.clone(), sim: s, kernel: k, error, tolerance: *tol, within, note, runs: ks.runs }
        })
        .collect()
}

fn num(v: Option<f64>) -> String {
    match v {
        None => "n/a".into(),
        Some(v) if v == 0.0 => "0".into(),
        Some(v) if v.abs() >= 1000.0 => format!("{v:.0}"),
        Some(v) if v.abs() >= 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.3}"),
    }
}

fn err_cell(v: &Verdict) -> String {
    match v.error {
        None => "n/a".into(),
        Some(e) if darkbuf_kernel::compare::is_percentage(&v.metric) => format!("{e:+.1} pts"),
        Some(e) => format!("{:+.1}%", 100.0 * e),
    }
}

fn tol_cell(v: &Verdict) -> String {
    match v.tolerance {
        Tolerance::Info => "info".into(),
        Tolerance::Within(t) if darkbuf_kernel::compare::is_percentage(&v.metric) => format!("±{t} pts"),
        Tolerance::Within(t) => format!("±{:.0}%", 100.0 * t),
    }
}

fn ok_cell(v: &Verdict) -> &'static str {
    match v.within {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "",
    }
}

/// One markdown table per metric (rows: cases), in the order the metrics first appear.
pub fn tables(verdicts: &[Verdict]) -> String {
    let mut metrics: Vec<&str> = Vec::new();
    for v in verdicts {
        if !metrics.contains(&v.metric.as_str()) {
            metrics.push(&v.metric);
        }
    }
    let mut out = String::new();
    for m in metrics {
        let _ = writeln!(out, "### {m}\n\n| case | sim | kernel | sim error | tolerance | within |\n|---|---|---|---|---|---|");
        for v in verdicts.iter().filter(|v| v.metric == m) {
            let case = if v.runs > 1 { format!("{} ({} runs)", v.case, v.runs) } else { v.case.clone() };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                case,
                num(v.sim),
                num(v.kernel),
                err_cell(v),
                tol_cell(v),
                if v.within.is_none() { v.note.as_deref().map_or("", |_| "n/a") } else { ok_cell(v) }
            );
        }
        out.push('\n');
    }
    out
}

/// `--format csv`: one line per verdict, `case,metric,sim,kernel,error,tolerance,within,runs,note`
/// (RFC 4180 quoting; numbers as Rust's shortest round trip; `error` is the fraction,
/// or points for `*_pct` metrics; `tolerance` a number or `info`; `within` true, false
/// or empty when not judged; a missing value is an empty cell).
pub fn verdicts_csv(verdicts: &[Verdict]) -> String {
    use darkbuf_report::csv::{csv_field, line, num};
    let cell = |v: Option<f64>| v.map_or(String::new(), num);
    let mut out = String::from("case,metric,sim,kernel,error,tolerance,within,runs,note\n");
    for v in verdicts {
        let tol = match v.tolerance {
            Tolerance::Within(t) => num(t),
            Tolerance::Info => "info".into(),
        };
        out.push_str(&line([
            csv_field(&v.case),
            csv_field(&v.metric),
            cell(v.sim),
            cell(v.kernel),
            cell(v.error),
            tol,
            v.within.map_or(String::new(), |w| w.to_string()),
            v.runs.to_string(),
            csv_field(v.note.as_deref().unwrap_or("")),
        ]));
    }
    out
}

/// "N of M judged metrics within tolerance", and the ones that are not.
pub fn summary(verdicts: &[Verdict]) -> String {
    let judged: Vec<&Verdict> = verdicts.iter().filter(|v| v.within.is_some()).collect();
    let ok = judged.iter().filter(|v| v.within == Some(true)).count();
    let missing = verdicts.iter().filter(|v| matches!(v.tolerance, Tolerance::Within(_)) && v.within.is_none()).count();
    let mut s = format!("{ok} of {} judged metrics within tolerance", judged.len());
    if missing > 0 {
        let _ = write!(s, "; {missing} not measured on one side");
    }
    let bad: Vec<String> = judged.iter().filter(|v| v.within == Some(false)).map(|v| format!("{} {} ({})", v.case, v.metric, err_cell(v))).collect();
    if !bad.is_empty() {
        let _ = write!(s, "\noutside: {}", bad.join("; "));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use darkbuf_report::{Environment, RunRecord};

    fn results(m: &[(&str, f64)]) -> Results {
        let run = RunRecord { seed: 1, metrics: m.iter().map(|(k, v)| (k.to_string(), Some(*v))).collect(), ..Default::default() };
        Results::from_runs(serde_json::json!({}), "x", Environment::default(), vec![run], BTreeMap::new())
    }

    #[test]
    fn parses_and_judges() {
        let text = r#"
[[case]]
name = "a"
scenario = "udp-htb.toml"
set = ["qdisc.class.0.qdisc=fq_codel"]
ci = true
metrics = { "sink.pps" = 0.1, "ping.loss_pct" = 2.0, "qdisc.drops" = "info", "tcp.retrans" = 0.5 }
"#;
        let s = parse("suite.toml", text).unwrap();
        assert_eq!(s.cases.len(), 1);
        let c = &s.cases[0];
        assert!(c.ci);
        assert_eq!(c.metrics["qdisc.drops"], Tolerance::Info);
        let sim = results(&[("sink.pps", 860.0), ("ping.loss_pct", 5.0), ("qdisc.drops", 3.0)]);
        let ker = results(&[("sink.pps", 800.0), ("ping.loss_pct", 2.0), ("qdisc.drops", 9.0)]);
        let v = judge(c, &sim, &ker);
        let get = |m: &str| v.iter().find(|x| x.metric == m).unwrap().clone();
        assert_eq!(get("sink.pps").within, Some(true)); // +7.5%
        assert!((get("sink.pps").error.unwrap() - 0.075).abs() < 1e-12);
        assert_eq!(get("ping.loss_pct").within, Some(false)); // +3 points > 2
        assert_eq!(get("qdisc.drops").within, None);
        assert_eq!(get("tcp.retrans").within, None);
        assert!(get("tcp.retrans").note.is_some());
        // The CSV: a header, a line per verdict in order, an unjudged or missing cell empty.
        let csv = verdicts_csv(&v);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "case,metric,sim,kernel,error,tolerance,within,runs,note");
        assert_eq!(lines.len(), 1 + v.len());
        let row = |m: &str| *lines.iter().find(|l| l.starts_with(&format!("a,{m},"))).unwrap();
        assert_eq!(row("sink.pps"), "a,sink.pps,860,800,0.075,0.1,true,1,");
        assert_eq!(row("ping.loss_pct"), "a,ping.loss_pct,5,2,3,2,false,1,");
        assert_eq!(row("qdisc.drops"), "a,qdisc.drops,3,9,-0.6666666666666666,info,,1,");
        assert!(row("tcp.retrans").starts_with("a,tcp.retrans,,,,0.5,,1,"), "{}", row("tcp.retrans"));
        let t = tables(&v);
        assert!(t.contains("| a | 860.0 | 800.0 | +7.5% | ±10% | yes |"), "{t}");
        assert!(t.contains("+3.0 pts"), "{t}");
        let sum = summary(&v);
        assert!(sum.starts_with("1 of 2 judged metrics within tolerance; 1 not measured on one side"), "{sum}");
        assert!(sum.contains("a ping.loss_pct (+3.0 pts)"), "{sum}");
    }

    #[test]
    fn bad_suites() {
        assert!(parse("s", "[[case]]\nname = \"a\"\nscenario = \"x\"\nmetrics = { m = \"maybe\" }\n").unwrap_err().contains("\"info\""));
        assert!(parse("s", "[[case]]\nname = \"a\"\nscenario = \"x\"\nmetrics = { m = -1.0 }\n").unwrap_err().contains(">= 0"));
        let two = "[[case]]\nname = \"a\"\nscenario = \"x\"\nmetrics = {}\n[[case]]\nname = \"a\"\nscenario = \"y\"\nmetrics = {}\n";
        assert!(parse("s", two).unwrap_err().contains("two cases"));
        assert!(parse("s", "[[case]]\nname = \"a\"\nscenario = \"x\"\nmetric = {}\n").is_err());
        assert!(parse("s", "[[case]]\nname = \"a\"\nscenario = \"x\"\nruns = 0\nmetrics = {}\n").unwrap_err().contains("runs must be 1 to 20"));
        assert!(parse("s", "[[case]]\nname = \"a\"\nscenario = \"x\"\nruns = 21\nmetrics = {}\n").unwrap_err().contains("runs must be 1 to 20"));
    }

    /// A case's own `runs` is a floor under `--runs`.
    #[test]
    fn a_case_runs_at_least_its_own_runs() {
        let s = parse("s", "[[case]]\nname = \"a\"\nscenario = \"x\"\nruns = 4\nmetrics = {}\n[[case]]\nname = \"b\"\nscenario = \"x\"\nmetrics = {}\n").unwrap();
        assert_eq!((s.cases[0].runs(1), s.cases[0].runs(6), s.cases[1].runs(1), s.cases[1].runs(3)), (4, 6, 1, 3));
        let run = |v: f64| darkbuf_report::RunRecord { seed: 1, metrics: [("sink.pps".to_string(), Some(v))].into_iter().collect(), ..Default::default() };
        let three = |v: f64| Results::from_runs(serde_json::json!({}), "x", Environment::default(), vec![run(v), run(v), run(v)], BTreeMap::new());
        let c = Case { metrics: [("sink.pps".to_string(), Tolerance::Within(0.1))].into_iter().collect(), ..s.cases[0].clone() };
        let v = judge(&c, &three(100.0), &three(100.0));
        assert_eq!(v[0].runs, 3);
        assert!(tables(&v).contains("| a (3 runs) | 100.0 | 100.0 |"), "{}", tables(&v));
    }

    #[test]
    fn the_shipped_suite_parses() {
        let text = include_str!("../../../validation/suite.toml");
        let s = parse("validation/suite.toml", text).unwrap();
        assert!(s.cases.iter().filter(|c| c.ci).count() >= 3);
        for c in &s.cases {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../validation").join(&c.scenario);
            let scn = darkbuf_scenario::load(&path, &c.set).unwrap_or_else(|d| panic!("case {}: {d}", c.name));
            assert!(scn.duration_ns > 0, "{}", c.name);
        }
    }
}
