//! `darkbuf run` and `darkbuf sweep` on the simulator.

use crate::{Backend, Common, Format, Rows};
use darkbuf_report::{Environment, Results, RunRecord, SweepPoint, SweepResults};
use darkbuf_scenario::Scenario;
use darkbuf_sim::Profile;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::Path;

/// A failed command, with its exit code.
#[derive(Debug)]
pub enum Failure {
    /// Bad input: exit 2.
    Input(String),
    /// Backend unavailable: exit 3.
    Backend(String),
    /// Internal error: exit 1.
    Internal(String),
}

impl Failure {
    pub fn code(&self) -> u8 {
        match self {
            Failure::Input(_) => 2,
            Failure::Backend(_) => 3,
            Failure::Internal(_) => 1,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Input(m) | Failure::Backend(m) | Failure::Internal(m) => f.write_str(m),
        }
    }
}

pub(crate) fn load(path: &Path, set: &[String]) -> Result<Scenario, Failure> {
    darkbuf_scenario::load(path, set).map_err(|d| Failure::Input(d.to_string()))
}

fn check_backend(c: &Common) -> Result<(), Failure> {
    match c.backend {
        Backend::Sim => Ok(()),
        Backend::Kernel => Err(Failure::Backend(
            "the kernel backend is not built yet; run with --backend sim (the default)".into(),
        )),
    }
}

pub(crate) fn progress(total: u64, what: &str) -> indicatif::ProgressBar {
    // Quiet unless stderr is a terminal (scripts and CI see no bar).
    if !std::io::stderr().is_terminal() || total <= 1 {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new(total);
    pb.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} {elapsed}")
            .expect("template")
            .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    pb
}

/// Runs every (scenario, seed) job on up to two threads, results in job order.
pub(crate) fn run_jobs(jobs: &[(Scenario, u64)], profiles: &[Profile], pb: &indicatif::ProgressBar) -> Result<Vec<(RunRecord, BTreeMap<String, String>)>, Failure> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let out: std::sync::Mutex<Vec<Option<Result<_, String>>>> = std::sync::Mutex::new(vec![None; 0]);
    out.lock().unwrap().resize_with(jobs.len(), || None);
    std::thread::scope(|s| {
        for _ in 0..threads.min(jobs.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= jobs.len() {
                    break;
                }
                let (scn, seed) = &jobs[i];
                let r = darkbuf_sim::simulate(scn, &profiles[i], *seed).map_err(|e| e.to_string());
                out.lock().unwrap()[i] = Some(r);
                pb.inc(1);
            });
        }
    });
    pb.finish_and_clear();
    out.into_inner()
        .unwrap()
        .into_iter()
        .map(|r| r.expect("every job ran").map_err(Failure::Backend))
        .collect()
}

pub(crate) fn profile_of(scn: &Scenario) -> Result<Profile, Failure> {
    Profile::load(&scn.machine.profile).map_err(|e| Failure::Input(e.to_string()))
}

fn environment(scn: &Scenario, p: &Profile) -> Environment {
    Environment {
        kernel: "sim".into(),
        cpu: format!("simulated: {} CPUs, HZ={}", scn.machine.cpus, scn.machine.hz),
        profile: p.name.clone(),
        darkbuf_version: env!("CARGO_PKG_VERSION").into(),
    }
}

pub(crate) fn apply_common(scn: &mut Scenario, c: &Common) {
    if let Some(r) = c.runs {
        scn.runs = r.max(1);
    }
    if let Some(s) = c.seed {
        scn.seed = s;
    }
}

pub(crate) fn results_of(scn: &Scenario, p: &Profile, runs: Vec<(RunRecord, BTreeMap<String, String>)>) -> Results {
    let mut unavailable = BTreeMap::new();
    let mut records = Vec::new();
    for (r, why) in runs {
        unavailable.extend(why);
        records.push(r);
    }
    let scenario = serde_json::to_value(scn).expect("scenario serializes");
    Results::from_runs(scenario, "sim", environment(scn, p), records, unavailable)
}

pub(crate) fn warn_findings(label: &str, r: &Results) {
    for run in &r.runs {
        for f in &run.findings {
            eprintln!(
                "darkbuf: finding{label} (seed {}): invariant \"{}\" broken at t={} ns: {}",
                run.seed, f.invariant, f.time_ns, f.detail
            );
        }
    }
}

pub(crate) fn write_out(dir: &Path, json: &str, csv: &str) -> Result<(), Failure> {
    std::fs::create_dir_all(dir).map_err(|e| Failure::Input(format!("cannot create {}: {e}", dir.display())))?;
    for (name, body) in [("results.json", json), ("results.csv", csv)] {
        let p = dir.join(name);
        std::fs::write(&p, body).map_err(|e| Failure::Input(format!("cannot write {}: {e}", p.display())))?;
    }
    Ok(())
}

pub fn run(path: &Path, c: &Common, hist: bool) -> Result<(), Failure> {
    check_backend(c)?;
    let mut scn = load(path, &c.set)?;
    apply_common(&mut scn, c);
    let p = profile_of(&scn)?;
    let jobs: Vec<(Scenario, u64)> = (0..scn.runs as u64).map(|i| (scn.clone(), scn.seed.wrapping_add(i))).collect();
    let profiles = vec![p.clone(); jobs.len()];
    let pb = progress(jobs.len() as u64, &scn.name);
    let results = results_of(&scn, &p, run_jobs(&jobs, &profiles, &pb)?);
    warn_findings("", &results);
    emit(c, &results, darkbuf_report::run_csv(&results), || {
        println!("{} ({} run{}, sim, profile {})", scn.name, scn.runs, if scn.runs == 1 { "" } else { "s" }, p.name);
        print!("{}", darkbuf_report::run_table(&results));
        if hist {
            for r in &results.runs {
                println!("\nhistograms, seed {}:", r.seed);
                print!("{}", darkbuf_report::histograms_text(r));
            }
        }
    })
}

/// Writes `--out` files and prints the results in the chosen format (`table` via `table`).
pub(crate) fn emit<T: serde::Serialize>(c: &Common, results: &T, csv: String, table: impl FnOnce()) -> Result<(), Failure> {
    let json = serde_json::to_string_pretty(results).map_err(|e| Failure::Internal(e.to_string()))? + "\n";
    if let Some(dir) = &c.out {
        write_out(dir, &json, &csv)?;
    }
    match c.format {
        Format::Json => print!("{json}"),
        Format::Csv => print!("{csv}"),
        Format::Table => table(),
    }
    Ok(())
}

pub fn sweep(path: &Path, c: &Common, rows: Rows) -> Result<(), Failure> {
    check_backend(c)?;
    // `--set K=V` fixes a key for every point; `--set K=V1,V2` sweeps it.
    let (sweeps, fixed): (Vec<String>, Vec<String>) = c.set.iter().cloned().partition(|s| {
        s.split_once('=').is_some_and(|(_, v)| v.contains(',') && !v.trim_start().starts_with('['))
    });
    let plan = darkbuf_scenario::sweep_plan(path, &sweeps).map_err(|d| Failure::Input(d.to_string()))?;
    let mut points = Vec::new();
    for spec in &plan.points {
        let mut scn = darkbuf_scenario::load_point(path, &fixed, spec).map_err(|d| Failure::Input(d.to_string()))?;
        apply_common(&mut scn, c);
        let p = profile_of(&scn)?;
        points.push((spec.clone(), scn, p));
    }
    let mut jobs = Vec::new();
    let mut profiles = Vec::new();
    for (_, scn, p) in &points {
        for i in 0..scn.runs as u64 {
            jobs.push((scn.clone(), scn.seed.wrapping_add(i)));
            profiles.push(p.clone());
        }
    }
    let name = points.first().map(|(_, s, _)| s.name.clone()).unwrap_or_default();
    let pb = progress(jobs.len() as u64, &name);
    let mut outs = run_jobs(&jobs, &profiles, &pb)?.into_iter();
    let mut sweep = SweepResults { name: name.clone(), points: Vec::new() };
    for (spec, scn, p) in &points {
        let runs: Vec<_> = outs.by_ref().take(scn.runs as usize).collect();
        let results = results_of(scn, p, runs);
        warn_findings(&format!(" in point \"{}\"", spec.label), &results);
        sweep.points.push(SweepPoint { label: spec.label.clone(), set: spec.set.clone(), results });
    }
    emit(c, &sweep, darkbuf_report::sweep_csv(&sweep), || {
        println!("{name}: {} points (sim)", sweep.points.len());
        match rows {
            Rows::Seed => print!("{}", darkbuf_report::sweep_table(&sweep, &darkbuf_report::default_rows())),
            Rows::All => print!("{}", darkbuf_report::sweep_table_all(&sweep)),
        }
    })
}

pub fn report(path: &Path, html: Option<&Path>) -> Result<(), Failure> {
    if html.is_some() {
        return Err(Failure::Input("--html is not built yet; `darkbuf report RESULTS.json` prints the table".into()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| Failure::Input(format!("cannot read {}: {e}", path.display())))?;
    if let Ok(r) = serde_json::from_str::<Results>(&text) {
        print!("{}", darkbuf_report::run_table(&r));
        return Ok(());
    }
    let s: SweepResults = serde_json::from_str(&text)
        .map_err(|e| Failure::Input(format!("{} is neither a run nor a sweep results JSON: {e}", path.display())))?;
    print!("{}", darkbuf_report::sweep_table_all(&s));
    Ok(())
}
