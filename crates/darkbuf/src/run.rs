//! `darkbuf run` and `darkbuf sweep` on the simulator.

use crate::{Backend, Common, Format, Rows};
use darkbuf_report::{Results, RunRecord, SweepPoint, SweepResults};
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

/// The shared orchestration's errors as exit codes: bad scenario or profile 2, a
/// simulator that cannot set the scenario up 3, anything else 1.
impl From<darkbuf_run::Error> for Failure {
    fn from(e: darkbuf_run::Error) -> Self {
        match e {
            darkbuf_run::Error::Scenario(_) | darkbuf_run::Error::Profile(_) => Failure::Input(e.to_string()),
            darkbuf_run::Error::Sim(_) => Failure::Backend(e.to_string()),
            darkbuf_run::Error::Internal(_) => Failure::Internal(e.to_string()),
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


/// How long work runs before its progress bar appears.
const SHOW_PROGRESS_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// A progress bar on stderr for `total` jobs. It appears only once the work has run
/// for [`SHOW_PROGRESS_AFTER`] (short runs print nothing) and never when stderr is not
/// a terminal (scripts and CI see no bar).
pub(crate) fn progress(total: u64, what: &str) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::with_draw_target(Some(total), indicatif::ProgressDrawTarget::hidden());
    pb.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} {elapsed}")
            .expect("template")
            .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    let bar = pb.clone();
    // A watcher: it returns as soon as the bar finishes, or shows it after the delay.
    std::thread::spawn(move || {
        let start = std::time::Instant::now();
        while start.elapsed() < SHOW_PROGRESS_AFTER {
            if bar.is_finished() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        if !bar.is_finished() {
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            bar.enable_steady_tick(std::time::Duration::from_millis(200));
            if bar.is_finished() {
                // Finished while being shown: take the line away again.
                bar.finish_and_clear();
            }
        }
    });
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
    Ok(darkbuf_run::profile_of(scn)?)
}

pub(crate) fn apply_common(scn: &mut Scenario, c: &Common) {
    darkbuf_run::apply_runs_seed(scn, c.runs, c.seed);
}

pub(crate) use darkbuf_run::results_of;

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
        print_run_table(&results, hist);
    })
}

/// Writes `--out` files and prints the results in the chosen format (`table` via `table`).
///
/// `--out` gets results.json and results.csv and, when `results` is a run's
/// [`Results`] or a [`SweepResults`], everything [`write_artifacts`] writes (sweeps
/// plot [`darkbuf_report::DEFAULT_SWEEP_METRICS`]).
pub(crate) fn emit<T: serde::Serialize>(c: &Common, results: &T, csv: String, table: impl FnOnce()) -> Result<(), Failure> {
    emit_with(c, results, csv, &[], table)
}

/// [`emit`], plotting `sweep_metrics` (empty: the default ones) for a sweep.
pub(crate) fn emit_with<T: serde::Serialize>(
    c: &Common,
    results: &T,
    csv: String,
    sweep_metrics: &[String],
    table: impl FnOnce(),
) -> Result<(), Failure> {
    let value = serde_json::to_value(results).map_err(|e| Failure::Internal(e.to_string()))?;
    let json = darkbuf_run::results_json(&value).map_err(|e| Failure::Internal(e.to_string()))?;
    if let Some(dir) = &c.out {
        write_out(dir, &json, &csv)?;
        if let Some(any) = AnyResults::from_value(value) {
            write_artifacts(dir, &any, sweep_metrics)?;
        }
    }
    match c.format {
        Format::Json => print!("{json}"),
        Format::Csv => print!("{csv}"),
        Format::Table => table(),
    }
    Ok(())
}

/// A results file of either command.
pub(crate) enum AnyResults {
    Run(Results),
    Sweep(SweepResults),
}

impl AnyResults {
    /// The results in `v`: a run's (`runs` and `summary`) or a sweep's (`points`).
    pub(crate) fn from_value(v: serde_json::Value) -> Option<AnyResults> {
        if v.get("points").is_some() {
            serde_json::from_value(v).ok().map(AnyResults::Sweep)
        } else {
            serde_json::from_value(v).ok().map(AnyResults::Run)
        }
    }

    /// The plots: a run's, or a sweep's with `sweep_metrics` (empty: the defaults)
    /// against the swept parameter.
    pub(crate) fn plots(&self, sweep_metrics: &[String]) -> Result<Vec<darkbuf_report::Plot>, Failure> {
        let r = match self {
            AnyResults::Run(r) => darkbuf_report::run_plots(r),
            AnyResults::Sweep(s) => {
                let metrics: Vec<&str> = if sweep_metrics.is_empty() {
                    darkbuf_report::DEFAULT_SWEEP_METRICS.to_vec()
                } else {
                    sweep_metrics.iter().map(String::as_str).collect()
                };
                darkbuf_report::sweep_plots(s, &metrics)
            }
        };
        r.map_err(|e| Failure::Internal(format!("plotting failed: {e}")))
    }

    pub(crate) fn html(&self, plots: &[darkbuf_report::Plot]) -> String {
        match self {
            AnyResults::Run(r) => darkbuf_report::run_html(r, plots),
            AnyResults::Sweep(s) => darkbuf_report::sweep_html(s, plots),
        }
    }
}

/// Now as Unix seconds, for the flent file's `TIME`; `SOURCE_DATE_EPOCH` (the
/// reproducible-builds convention) overrides it so files can be made byte-identical.
fn now_unix_s() -> f64 {
    if let Some(t) = std::env::var("SOURCE_DATE_EPOCH").ok().and_then(|v| v.trim().parse::<u64>().ok()) {
        return t as f64;
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| (d.as_micros() as f64) / 1e6)
}

fn write_file(path: &Path, body: &[u8]) -> Result<(), Failure> {
    std::fs::write(path, body).map_err(|e| Failure::Input(format!("cannot write {}: {e}", path.display())))
}

/// A file name for a sweep point: `03-consumer.nrules_3500` (index from 1, then the
/// label's letters, digits, `.`, `-`, `_`, `=`; anything else becomes `_`).
fn point_file_stem(i: usize, label: &str) -> String {
    let slug: String = label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '=') { c } else { '_' })
        .take(80)
        .collect();
    if slug.is_empty() {
        format!("{:02}", i + 1)
    } else {
        format!("{:02}-{slug}", i + 1)
    }
}

/// Writes into `dir` (which exists): results.flent.gz, one SVG per plot, report.html;
/// for a sweep also `flent/NN-<label>.flent.gz` per point, so `flent -i
/// DIR/flent/*.flent.gz -p ping_cdf` compares the points the way flent compares runs.
pub(crate) fn write_artifacts(dir: &Path, results: &AnyResults, sweep_metrics: &[String]) -> Result<(), Failure> {
    let now = now_unix_s();
    let gz = |v: &serde_json::Value| darkbuf_report::flent_gz(v).map_err(|e| Failure::Internal(format!("gzip failed: {e}")));
    match results {
        AnyResults::Run(r) => write_file(&dir.join("results.flent.gz"), &gz(&darkbuf_report::flent_run(r, now))?)?,
        AnyResults::Sweep(s) => {
            write_file(&dir.join("results.flent.gz"), &gz(&darkbuf_report::flent_sweep(s, now))?)?;
            let sub = dir.join("flent");
            std::fs::create_dir_all(&sub).map_err(|e| Failure::Input(format!("cannot create {}: {e}", sub.display())))?;
            for (i, p) in s.points.iter().enumerate() {
                if let Some(v) = darkbuf_report::flent_point(s, i, now) {
                    write_file(&sub.join(format!("{}.flent.gz", point_file_stem(i, &p.label))), &gz(&v)?)?;
                }
            }
        }
    }
    let plots = results.plots(sweep_metrics)?;
    for p in &plots {
        write_file(&dir.join(format!("{}.svg", p.name)), p.svg.as_bytes())?;
    }
    write_file(&dir.join("report.html"), results.html(&plots).as_bytes())
}

/// The run table, then the log2 histograms summed over the runs (and, with `per_run`,
/// each run's), as bpftrace prints them.
pub(crate) fn print_run_table(results: &Results, per_run: bool) {
    print!("{}", darkbuf_report::run_table(results));
    let merged = darkbuf_report::merged_histograms(&results.runs);
    if !merged.is_empty() {
        let n = results.runs.len();
        if n == 1 {
            println!("\nhistograms:");
        } else {
            println!("\nhistograms, {n} runs summed:");
        }
        print!("{}", darkbuf_report::hists_text(&merged));
    }
    if per_run && results.runs.len() > 1 {
        for r in &results.runs {
            println!("\nhistograms, seed {}:", r.seed);
            print!("{}", darkbuf_report::histograms_text(r));
        }
    }
}

pub fn sweep(path: &Path, c: &Common, rows: Rows, plot: &[String], hist: bool) -> Result<(), Failure> {
    // `--set K=V` fixes a key for every point; `--set K=V1,V2` sweeps it.
    let source = darkbuf_run::Source::read(path).map_err(|d| Failure::Input(d.to_string()))?;
    let points = darkbuf_run::sweep_points(&source, &c.set, c.runs, c.seed).map_err(|d| Failure::Input(d.to_string()))?;
    let name = points.first().map(|p| p.scenario.name.clone()).unwrap_or_default();
    let mut sweep = SweepResults { name: name.clone(), points: Vec::new() };
    let backend = match c.backend {
        Backend::Kernel => {
            // One point after the other on the real kernel (they share its CPUs).
            for pt in &points {
                let results = crate::kernel_cli::run_point(&pt.scenario)?;
                sweep.points.push(SweepPoint { label: pt.label.clone(), set: pt.set.clone(), results });
            }
            "kernel"
        }
        Backend::Sim => {
            let point_profiles = darkbuf_run::profiles_of(&points)?;
            let (jobs, profiles) = darkbuf_run::jobs_of(&points, &point_profiles);
            let pb = progress(jobs.len() as u64, &name);
            sweep = darkbuf_run::sweep_results(&points, &point_profiles, run_jobs(&jobs, &profiles, &pb)?);
            for p in &sweep.points {
                warn_findings(&format!(" in point \"{}\"", p.label), &p.results);
            }
            "sim"
        }
    };
    emit_with(c, &sweep, darkbuf_report::sweep_csv(&sweep), plot, || {
        println!("{name}: {} points ({backend})", sweep.points.len());
        match rows {
            Rows::Seed => print!("{}", darkbuf_report::sweep_table(&sweep, &darkbuf_report::default_rows())),
            Rows::All => print!("{}", darkbuf_report::sweep_table_all(&sweep)),
        }
        if hist {
            for p in &sweep.points {
                let merged = darkbuf_report::merged_histograms(&p.results.runs);
                if !merged.is_empty() {
                    let n = p.results.runs.len();
                    println!("\nhistograms, {} ({n} run{} summed):", p.label, if n == 1 { "" } else { "s" });
                    print!("{}", darkbuf_report::hists_text(&merged));
                }
            }
        }
    })
}

/// `darkbuf report RESULTS.json [--html OUT.html]`: the table on stdout, or the HTML page.
pub fn report(path: &Path, html: Option<&Path>, plot: &[String]) -> Result<(), Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| Failure::Input(format!("cannot read {}: {e}", path.display())))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Failure::Input(format!("{} is not JSON: {e}", path.display())))?;
    let results = if value.get("points").is_some() {
        serde_json::from_value::<SweepResults>(value).map(AnyResults::Sweep)
    } else {
        serde_json::from_value::<Results>(value).map(AnyResults::Run)
    }
    .map_err(|e| Failure::Input(format!("{} is neither a run nor a sweep results JSON: {e}", path.display())))?;
    if let Some(out) = html {
        let plots = results.plots(plot)?;
        let page = results.html(&plots);
        if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| Failure::Input(format!("cannot create {}: {e}", parent.display())))?;
        }
        return write_file(out, page.as_bytes());
    }
    match &results {
        AnyResults::Run(r) => print_run_table(r, false),
        AnyResults::Sweep(s) => print!("{}", darkbuf_report::sweep_table_all(s)),
    }
    Ok(())
}
