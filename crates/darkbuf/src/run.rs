//! `darkbuf run` and `darkbuf sweep` on the simulator.

use crate::output::{errln, outln};
use crate::plot_check::{check_plot_metrics_measured, check_plot_metrics_planned};
use crate::results_json::parse_results;
use crate::{Backend, Common, Format, Rows};
use darkbuf_report::{Results, RunRecord, SweepResults};
use darkbuf_scenario::Scenario;
use darkbuf_measure::Profile;
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
    /// Stopped by a signal (SIGINT, SIGTERM, SIGHUP): exit 128 + the signal's number, as
    /// a shell reports a process the signal killed (130 for Ctrl-C, 143 for SIGTERM).
    Interrupted { signal: i32, message: String },
}

impl Failure {
    pub fn code(&self) -> u8 {
        match self {
            Failure::Input(_) => 2,
            Failure::Backend(_) => 3,
            Failure::Internal(_) => 1,
            Failure::Interrupted { signal, .. } => (128 + signal).clamp(129, 255) as u8,
        }
    }

    pub fn interrupted(signal: i32, what: &str) -> Failure {
        let message = format!("interrupted by {}{what}", darkbuf_kernel::signals::name(signal));
        Failure::Interrupted { signal, message }
    }
}

/// A simulation's error as an exit code: a scenario that reached one of the simulator's
/// bounds while it ran (`SimError::Limit`: a web entry's arrivals outpacing the path) is
/// the input's, 2; a scenario the simulator cannot set up is the backend's, 3.
fn sim_failure(e: darkbuf_sim::SimError) -> Failure {
    match e {
        darkbuf_sim::SimError::Limit(m) => Failure::Input(m),
        e => Failure::Backend(e.to_string()),
    }
}

/// The shared orchestration's errors as exit codes: bad scenario or profile, or a run
/// that reached a simulator bound, 2; a simulator that cannot set the scenario up 3;
/// anything else 1.
impl From<darkbuf_run::Error> for Failure {
    fn from(e: darkbuf_run::Error) -> Self {
        match e {
            darkbuf_run::Error::Scenario(_) | darkbuf_run::Error::Profile(_) | darkbuf_run::Error::Limit(_) => Failure::Input(e.to_string()),
            darkbuf_run::Error::Sim(_) => Failure::Backend(e.to_string()),
            darkbuf_run::Error::Internal(_) => Failure::Internal(e.to_string()),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Input(m) | Failure::Backend(m) | Failure::Internal(m) => f.write_str(m),
            Failure::Interrupted { message, .. } => f.write_str(message),
        }
    }
}

/// The scenario `run` (and `compare`) runs, with `set` applied, from one read of the
/// file. It runs without the file's `[[variant]]`s and `[sweep]`: their entries are
/// checked all the same (an unknown key there is an error, as in `sweep`), and a note
/// on stderr says what was left out.
pub(crate) fn load(path: &Path, set: &[String]) -> Result<Scenario, Failure> {
    let input = |d: darkbuf_scenario::Diagnostic| Failure::Input(d.to_string());
    darkbuf_scenario::sweep::refuse_run_plan_sets(set).map_err(input)?;
    let (name, text) = darkbuf_scenario::read_scenario(path).map_err(input)?;
    let scn = darkbuf_scenario::load_str(&name, &text, set).map_err(|d| {
        // `--set KEY=V1,V2` is a list of points, which `sweep` runs; `run` took it for
        // one value, which the key refused.
        let lists: Vec<&String> = set.iter().filter(|s| darkbuf_scenario::sweep::is_sweep_set(s)).collect();
        match lists.first() {
            Some(l) => Failure::Input(format!(
                "{d}\nhint: a list of values belongs to `darkbuf sweep`, which runs one point per value: darkbuf sweep {} --set {l}",
                path.display()
            )),
            None => input(d),
        }
    })?;
    let shape = darkbuf_scenario::check_plan_entries(&name, &text).map_err(input)?;
    let mut parts = Vec::new();
    if shape.variants > 0 {
        parts.push(format!("{} variant{}", shape.variants, if shape.variants == 1 { "" } else { "s" }));
    }
    if shape.sweep_points > 0 {
        parts.push(format!("a [sweep] of {} point{}", shape.sweep_points, if shape.sweep_points == 1 { "" } else { "s" }));
    }
    if !parts.is_empty() {
        errln!(
            "darkbuf: note: {} has {}; `darkbuf run` runs the scenario without them, `darkbuf sweep` runs them",
            path.display(),
            parts.join(" and ")
        );
    }
    for w in darkbuf_scenario::path_warnings(&scn) {
        errln!("darkbuf: warning: {w}");
    }
    Ok(scn)
}

/// Prints each distinct warning once, on stderr: `(label, warning)` pairs, one per
/// sweep point that gave it; a warning several points gave names how many and which
/// (the first few), rather than repeating itself per point.
pub(crate) fn warn_folded(kind: &str, items: Vec<(String, String)>) {
    // Warnings that differ only in their figures (the probes each point answered, its
    // seeds) are one warning: said once, with the first point's figures.
    let key = |w: &str| {
        let mut k = String::with_capacity(w.len());
        for c in w.chars() {
            match (c.is_ascii_digit(), k.ends_with('#')) {
                (true, true) => {}
                (true, false) => k.push('#'),
                (false, _) => k.push(c),
            }
        }
        k
    };
    let mut order: Vec<String> = Vec::new();
    let mut by: BTreeMap<String, (String, bool, Vec<String>)> = BTreeMap::new();
    for (label, w) in items {
        let k = key(&w);
        match by.get_mut(&k) {
            Some((first, same, labels)) => {
                *same &= *first == w;
                labels.push(label);
            }
            None => {
                order.push(k.clone());
                by.insert(k, (w, true, vec![label]));
            }
        }
    }
    const NAMED: usize = 3;
    for k in order {
        let (w, same, labels) = &by[&k];
        let w = if *same { w.clone() } else { format!("{w} (the figures are point \"{}\"'s)", labels[0]) };
        let at = match labels.len() {
            1 => format!(" in point \"{}\"", labels[0]),
            n if n <= NAMED => format!(" in points {}", labels.iter().map(|l| format!("\"{l}\"")).collect::<Vec<_>>().join(", ")),
            n => format!(
                " in {} points ({}, ...)",
                darkbuf_scenario::limits::thousands(n as u64),
                labels.iter().take(NAMED).map(|l| format!("\"{l}\"")).collect::<Vec<_>>().join(", ")
            ),
        };
        errln!("darkbuf: {kind}{at}: {w}");
    }
}

/// How long work runs before its progress bar appears.
const SHOW_PROGRESS_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// A progress bar on stderr for `total` runs, with the time left once a run has
/// finished. It appears only once the work has run for [`SHOW_PROGRESS_AFTER`] (short
/// runs print nothing) and never when stderr is not a terminal (scripts and CI see no
/// bar).
pub(crate) fn progress(total: u64, what: &str) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::with_draw_target(Some(total), indicatif::ProgressDrawTarget::hidden());
    // One run has no estimate before it ends (the simulator reports no progress of its
    // own); several runs do, from the runs already done.
    let template = if total > 1 {
        "{spinner} {msg} [{bar:30}] {pos}/{len} runs, {elapsed} elapsed, about {eta} left"
    } else {
        "{spinner} {msg}: one run, {elapsed} elapsed"
    };
    pb.set_style(indicatif::ProgressStyle::with_template(template).expect("template").progress_chars("=> "));
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

/// The number of simulations run at once: `--jobs`, else one per CPU.
pub(crate) fn jobs_of(c: &Common) -> usize {
    c.jobs.map_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()), |j| j as usize)
}

/// One run's output: its record and, for every null metric, the reason.
pub(crate) type RunOutput = (RunRecord, BTreeMap<String, String>);

/// A point to simulate: its scenario (`runs` runs, seeds `seed..seed+runs`) and profile.
pub(crate) type SimPoint = (Scenario, Profile);

/// What [`run_points`] got done.
pub(crate) struct Done {
    /// Per point, its runs in seed order, when every run of the point finished.
    pub points: Vec<Option<Vec<RunOutput>>>,
    /// The signal that stopped the work early, if one did.
    pub signal: Option<i32>,
}

impl Done {
    /// The points that finished, with their index.
    pub fn finished(self) -> impl Iterator<Item = (usize, Vec<RunOutput>)> {
        self.points.into_iter().enumerate().filter_map(|(i, p)| p.map(|p| (i, p)))
    }
}

/// [`run_points_streamed`], keeping every point's runs.
pub(crate) fn run_points(points: std::sync::Arc<Vec<SimPoint>>, jobs: usize, pb: &indicatif::ProgressBar) -> Result<Done, Failure> {
    let mut out: Vec<Option<Vec<RunOutput>>> = (0..points.len()).map(|_| None).collect();
    let signal = run_points_streamed(points, jobs, pb, &mut |i, runs| {
        out[i] = Some(runs);
        Ok(())
    })?;
    Ok(Done { points: out, signal })
}

/// Simulates every run of every point on a rayon pool of `jobs` threads, and hands each
/// point's runs (in seed order) to `on_point` as soon as it and every point before it
/// have finished, in point order; the caller keeps of them what it needs (a 10,000-point
/// sweep keeps a summary per point, not its runs).
///
/// The runs are independent (each has its own world and seed), so they run in any order
/// and on any thread; they are started in order (FIFO), and their outputs are put back
/// in (point, seed) order, so the results are byte-identical to a serial run's.
///
/// SIGINT, SIGTERM or SIGHUP stops the work at once: no new run starts, the runs under
/// way are abandoned (the caller exits), the points whose runs all finished are handed
/// over (in order, skipping the unfinished), and the signal is returned, so an
/// interrupted sweep keeps what it finished.
pub(crate) fn run_points_streamed(
    points: std::sync::Arc<Vec<SimPoint>>,
    jobs: usize,
    pb: &indicatif::ProgressBar,
    on_point: &mut dyn FnMut(usize, Vec<RunOutput>) -> Result<(), Failure>,
) -> Result<Option<i32>, Failure> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc::RecvTimeoutError;
    use std::sync::Arc;
    darkbuf_kernel::signals::install();
    let order: Vec<(usize, u64)> = points
        .iter()
        .enumerate()
        .flat_map(|(p, (scn, _))| (0..scn.runs as u64).map(move |i| (p, scn.seed.wrapping_add(i))))
        .collect();
    // The first job of each point: job j is run j - first[p] of point p.
    let mut first = Vec::with_capacity(points.len());
    let mut n = 0;
    for (scn, _) in points.iter() {
        first.push(n);
        n += scn.runs as usize;
    }
    let total = order.len();
    let threads = jobs.clamp(1, total.max(1));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("darkbuf-sim-{i}"))
        .build()
        .map_err(|e| Failure::Internal(format!("cannot start the simulation threads: {e}")))?;
    let cancel = Arc::new(AtomicBool::new(false));
    // Bounded: a run's output waits in its thread while this one is behind (writing a
    // point's JSON and flent file takes longer than simulating a 10 ms point), instead
    // of queueing: a 10,000-point rrul sweep of 10 ms points peaked 200 MB higher
    // with 2 threads than with 1 (issue 48). A send fails only when this thread has
    // returned (signal or error), which drops `rx`.
    let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, Result<RunOutput, Failure>)>(2 * threads);
    {
        let (points, cancel, order) = (points.clone(), cancel.clone(), order.clone());
        // The pool is driven from its own thread so that this one can watch for signals
        // and return at once, without joining the runs under way.
        std::thread::spawn(move || {
            pool.scope_fifo(|scope| {
                for (j, &(p, seed)) in order.iter().enumerate() {
                    let (tx, points, cancel) = (tx.clone(), &points, &cancel);
                    scope.spawn_fifo(move |_| {
                        if cancel.load(Ordering::Relaxed) {
                            return;
                        }
                        let (scn, profile) = &points[p];
                        let r = darkbuf_sim::simulate(scn, profile, seed).map_err(sim_failure);
                        let _ = tx.send((j, r));
                    });
                }
            });
        });
    }
    // The runs of the points under way, by point; points done but not yet handed over
    // (a later point finished before an earlier one).
    let mut partial: BTreeMap<usize, (usize, Vec<Option<RunOutput>>)> = BTreeMap::new();
    let mut ready: BTreeMap<usize, Vec<RunOutput>> = BTreeMap::new();
    let mut next = 0;
    let mut received = 0;
    let mut signal = None;
    let fail = |cancel: &AtomicBool, pb: &indicatif::ProgressBar, f: Failure| {
        cancel.store(true, Ordering::Relaxed);
        pb.finish_and_clear();
        Err(f)
    };
    while received < total {
        // Checked on every turn, not only when no run has finished for 50 ms: runs
        // shorter than that (`--runs 1000` of a 50 ms simulation) keep the channel
        // busy, and a signal seen only on a timeout would be ignored until the end.
        if let Some(s) = darkbuf_kernel::signals::received() {
            cancel.store(true, Ordering::Relaxed);
            signal = Some(s);
            break;
        }
        match rx.recv_timeout(std::time::Duration::from_millis(50)) {
            Ok((j, Ok(out))) => {
                received += 1;
                pb.inc(1);
                let p = order[j].0;
                let runs = points[p].0.runs as usize;
                let entry = partial.entry(p).or_insert_with(|| (0, (0..runs).map(|_| None).collect()));
                entry.1[j - first[p]] = Some(out);
                entry.0 += 1;
                if entry.0 == runs {
                    let (_, outs) = partial.remove(&p).unwrap_or_default();
                    ready.insert(p, outs.into_iter().flatten().collect());
                }
                while let Some(runs) = ready.remove(&next) {
                    if let Err(f) = on_point(next, runs) {
                        return fail(&cancel, pb, f);
                    }
                    next += 1;
                }
            }
            Ok((_, Err(f))) => return fail(&cancel, pb, f),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    pb.finish_and_clear();
    if received < total && signal.is_none() {
        // The pool ended without every run: a simulation panicked (its message is above).
        return Err(Failure::Internal(format!("{} of {total} simulations did not finish", total - received)));
    }
    // Stopped by a signal: the points that finished after an unfinished one.
    for (i, runs) in ready {
        on_point(i, runs)?;
    }
    Ok(signal)
}

/// Checks `--out DIR` before anything runs: it is created, and a file can be written
/// into it, so a long run or sweep never ends in "cannot write" with its results lost.
pub(crate) fn check_out(c: &Common) -> Result<(), Failure> {
    let Some(dir) = &c.out else { return Ok(()) };
    if dir.exists() && !dir.is_dir() {
        return Err(Failure::Input(format!(
            "--out {}: is not a directory (--out names a directory, created if missing, for results.json, the plots and report.html)",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| Failure::Input(format!("--out {}: cannot create the directory: {e}", dir.display())))?;
    let probe = dir.join(format!(".darkbuf-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| Failure::Input(format!("--out {}: cannot write into the directory: {e}", dir.display())))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// The scenario's machine profile. One that `calibrate --force` wrote on a busy machine
/// is warned about, once per file however many points load it: its costs and stalls
/// describe that load, and so does every figure the simulator gives with it.
pub(crate) fn profile_of(scn: &Scenario) -> Result<Profile, Failure> {
    static WARNED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let p = darkbuf_run::profile_of(scn)?;
    if darkbuf_kernel::calibrate::is_disturbed(&p.description) {
        let id = p.identity();
        let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
        if !warned.contains(&id) {
            errln!(
                "darkbuf: warning: machine profile {id} was calibrated on a busy machine (calibrate --force; its header lists the disturbed steps): \
                 the simulator's figures with it describe that load, not this machine, and so does a comparison; calibrate again on a quiet machine"
            );
            warned.push(id);
        }
    }
    Ok(p)
}

/// `--runs` and `--seed` over the scenario's `runs` and `seed` (`--runs` and `--seed`
/// are bounded like the file's `runs` and `seed` by their parsers), then the last
/// run's seed (seed + runs - 1) must be a seed too: no seed wraps around.
/// `--probe-trace` is the kernel backend's: say so when it would change nothing.
fn warn_kernel_only_flags(c: &Common) {
    if c.probe_trace && c.backend == Backend::Sim {
        errln!("darkbuf: warning: --probe-trace traces the kernel backend's probes; the simulator reports every stage without it");
    }
}

pub(crate) fn apply_common(scn: &mut Scenario, c: &Common) -> Result<(), Failure> {
    if let Some(r) = c.runs {
        scn.runs = r;
    }
    if let Some(s) = c.seed {
        scn.seed = s;
    }
    darkbuf_scenario::seeds::check_flags(scn, c.runs, c.seed).map_err(|d| Failure::Input(d.to_string()))
}

pub(crate) use darkbuf_run::results_of;

/// `arg` quoted for a POSIX shell when it needs it (`'a b'`, `'it'\''s'`).
fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty() && arg.chars().all(|c| c.is_ascii_alphanumeric() || "_./=:,+-@%".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// The results' [`Provenance`]: this process's command line, the scenario file as read,
/// and the darkbuf build (version and the commit `build.rs` recorded).
pub(crate) fn provenance(scenario: &Path) -> darkbuf_report::Provenance {
    let command = std::env::args_os().map(|a| shell_quote(&a.to_string_lossy())).collect::<Vec<_>>().join(" ");
    let scenario_toml = darkbuf_scenario::read_bounded(scenario, darkbuf_scenario::limits::MAX_FILE_BYTES)
        .ok()
        .flatten()
        .unwrap_or_default();
    darkbuf_report::Provenance {
        command,
        scenario_file: scenario.display().to_string(),
        scenario_toml,
        darkbuf_version: env!("CARGO_PKG_VERSION").into(),
        darkbuf_commit: env!("DARKBUF_COMMIT").into(),
    }
}

/// Prints what a reader of `r` must know: invariant findings and warnings (e.g. RTT
/// statistics from very few probes), each once, on stderr.
pub(crate) fn warn_findings(label: &str, r: &Results) {
    for w in &r.warnings {
        errln!("darkbuf: warning{label}: {w}");
    }
    warn_point_findings(label, r);
}

/// The invariant findings of `r`'s runs, on stderr.
pub(crate) fn warn_point_findings(label: &str, r: &Results) {
    for run in &r.runs {
        for f in &run.findings {
            errln!(
                "darkbuf: finding{label} (seed {}): invariant \"{}\" broken at t={} ns: {}",
                run.seed, f.invariant, f.time_ns, f.detail
            );
        }
    }
}

pub(crate) fn write_out(dir: &Path, json: &str, csv: &str) -> Result<(), Failure> {
    std::fs::create_dir_all(dir).map_err(|e| Failure::Input(format!("cannot create {}: {e}", dir.display())))?;
    for (name, body) in [("results.json", json), ("results.csv", csv)] {
        write_file(&dir.join(name), body.as_bytes())?;
    }
    Ok(())
}

/// Simulates `scn`'s runs (on up to `jobs` threads); the runs that finished and, if a
/// signal stopped them, the signal.
pub(crate) fn simulate_runs(scn: &Scenario, p: &Profile, jobs: usize, pb: &indicatif::ProgressBar) -> Result<(Vec<RunOutput>, Option<i32>), Failure> {
    // One point per run, so an interrupted --runs N keeps the runs that finished.
    let points: Vec<SimPoint> = (0..scn.runs as u64)
        .map(|i| {
            let mut one = scn.clone();
            one.runs = 1;
            one.seed = scn.seed.wrapping_add(i);
            (one, p.clone())
        })
        .collect();
    let done = run_points(std::sync::Arc::new(points), jobs, pb)?;
    let signal = done.signal;
    Ok((done.finished().flat_map(|(_, runs)| runs).collect(), signal))
}

pub fn run(path: &Path, c: &Common, hist: bool) -> Result<(), Failure> {
    warn_kernel_only_flags(c);
    let mut scn = load(path, &c.set)?;
    apply_common(&mut scn, c)?;
    darkbuf_scenario::limits::check_total([&scn]).map_err(Failure::Input)?;
    check_out(c)?;
    let p = profile_of(&scn)?;
    let pb = progress(scn.runs as u64, &scn.name);
    let (runs, signal) = simulate_runs(&scn, &p, jobs_of(c), &pb)?;
    let planned = scn.runs;
    if signal.is_some() && runs.is_empty() {
        return Err(Failure::interrupted(signal.unwrap_or(libc::SIGINT), "; no run had finished"));
    }
    let mut done = scn.clone();
    done.runs = runs.len() as u32;
    let mut results = results_of(&done, &p, runs);
    results.provenance = Some(provenance(path));
    warn_findings("", &results);
    emit(c, &results, darkbuf_report::run_csv(&results), || {
        let n = results.runs.len();
        let of = if signal.is_some() { format!(" of {planned}, interrupted") } else { String::new() };
        let mut s = String::new();
        outln!(s, "{} ({n} run{}{of}, sim, profile {})", scn.name, if n == 1 { "" } else { "s" }, p.name);
        s + &run_table_text(&results, hist)
    })?;
    match signal {
        Some(s) => Err(Failure::interrupted(s, &format!("; kept the {} of {planned} runs that finished", results.runs.len()))),
        None => Ok(()),
    }
}

/// Writes `--out` files and prints the results in the chosen format (`table`: the text
/// `table` makes), through [`crate::output::stdout`].
///
/// `--out` gets results.json and results.csv and, when `results` is a run's
/// [`Results`] or a [`SweepResults`], everything [`write_artifacts`] writes (sweeps
/// plot [`darkbuf_report::DEFAULT_SWEEP_METRICS`]).
pub(crate) fn emit<T: serde::Serialize>(c: &Common, results: &T, csv: String, table: impl FnOnce() -> String) -> Result<(), Failure> {
    emit_with(c, results, csv, &[], table)
}

/// [`emit`], plotting `sweep_metrics` (empty: the default ones) for a sweep.
pub(crate) fn emit_with<T: serde::Serialize>(
    c: &Common,
    results: &T,
    csv: String,
    sweep_metrics: &[String],
    table: impl FnOnce() -> String,
) -> Result<(), Failure> {
    // One tree of the results, serialized to text once per use, each text dropped when
    // written: with 10,000 flows' metrics the tree is about 60 MB and each text 30 MB,
    // and two copies of each (the run itself is about 60 MB) made the JSON most of a
    // run's peak memory (docs/flows-at-scale.md).
    // The table and the CSV need none of it.
    if c.out.is_none() && c.format != Format::Json {
        return crate::output::stdout(&if c.format == Format::Csv { csv } else { table() });
    }
    let internal = |e: serde_json::Error| Failure::Internal(e.to_string());
    let mut value = serde_json::to_value(results).map_err(internal)?;
    if let Some(dir) = &c.out {
        write_out(dir, &darkbuf_run::value_json(&value).map_err(internal)?, &csv)?;
    }
    // The printed JSON is the results contract alone: how the results were made (the
    // command line, the scenario's text, the commit) goes with the files --out
    // writes and the report page. The same results from the CLI and from the Python
    // package then print the same bytes.
    let json = match c.format {
        Format::Json => {
            let provenance = value.as_object_mut().and_then(|o| o.remove("provenance"));
            let json = darkbuf_run::value_json(&value).map_err(internal)?;
            if let (Some(p), Some(o)) = (provenance, value.as_object_mut()) {
                o.insert("provenance".into(), p);
            }
            json
        }
        _ => String::new(),
    };
    if let Some(dir) = &c.out {
        if let Some(any) = AnyResults::from_value(value) {
            write_artifacts(dir, &any, sweep_metrics)?;
        }
    }
    match c.format {
        Format::Json => crate::output::stdout(&json),
        Format::Csv => crate::output::stdout(&csv),
        Format::Table => crate::output::stdout(&table()),
    }
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

    /// Writes the report page to `path` as it is made.
    pub(crate) fn write_html(&self, path: &Path, plots: &[darkbuf_report::Plot]) -> Result<(), Failure> {
        write_streamed(path, |w| {
            let mut page = darkbuf_report::html::Page::new(w);
            match self {
                AnyResults::Run(r) => darkbuf_report::html::write_run_html(&mut page, r, plots),
                AnyResults::Sweep(s) => darkbuf_report::html::write_sweep_html(&mut page, s, plots),
            }
            page.finish()
        })
    }
}

/// Now as Unix seconds, for the flent file's `TIME`; `SOURCE_DATE_EPOCH` (the
/// reproducible-builds convention) overrides it so files can be made byte-identical.
pub(crate) fn now_unix_s() -> f64 {
    if let Some(t) = std::env::var("SOURCE_DATE_EPOCH").ok().and_then(|v| v.trim().parse::<u64>().ok()) {
        return t as f64;
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| (d.as_micros() as f64) / 1e6)
}

/// Writes a results file. A full disk (or quota, or an I/O error) is exit 1 with what
/// the system said; a path that cannot be written (permissions, a directory in the
/// way) is bad input, exit 2. `--out` is checked before anything runs, so the first
/// kind is what a long run can still meet.
pub(crate) fn write_file(path: &Path, body: &[u8]) -> Result<(), Failure> {
    use std::io::Write as _;
    // Opened first: a file that cannot be opened was not touched, and stays.
    let mut f = std::fs::File::create(path).map_err(|e| write_failure(path, &e))?;
    f.write_all(body).map_err(|e| {
        drop(f);
        remove_partial(path);
        write_failure(path, &e)
    })
}

/// After a failed write (a full disk): a regular file left half written is removed, so
/// that no truncated results file looks like a whole one. Anything else at `path` (a
/// device such as /dev/full, a FIFO) is left alone.
fn remove_partial(path: &Path) {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file()) {
        let _ = std::fs::remove_file(path);
    }
}

/// Writes `path` through a `BufWriter` as `make` produces it, so a large output (the
/// page of a 10,000-point sweep is over 100 MB) is never held whole; errors as
/// [`write_file`]'s.
pub(crate) fn write_streamed(path: &Path, make: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>) -> Result<(), Failure> {
    use std::io::Write as _;
    let f = std::fs::File::create(path).map_err(|e| write_failure(path, &e))?;
    let mut w = std::io::BufWriter::new(f);
    make(&mut w).and_then(|()| w.flush()).map_err(|e| {
        drop(w);
        remove_partial(path);
        write_failure(path, &e)
    })
}

/// [`write_file`]'s failure for an error `e` writing `path`.
pub(crate) fn write_failure(path: &Path, e: &std::io::Error) -> Failure {
    let m = format!("cannot write {}: {}", path.display(), crate::output::reason(e));
    match e.raw_os_error() {
        Some(libc::ENOSPC | libc::EDQUOT | libc::EIO | libc::EFBIG) => Failure::Internal(m),
        _ => Failure::Input(m),
    }
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
    match results {
        AnyResults::Run(r) => write_file(&dir.join("results.flent.gz"), &gz(&darkbuf_report::flent_run(r, now))?)?,
        AnyResults::Sweep(s) => {
            for i in 0..s.points.len() {
                write_point_flent(dir, i, s, i, now)?;
            }
            return write_sweep_artifacts(dir, s, sweep_metrics, now);
        }
    }
    let plots = results.plots(sweep_metrics)?;
    for p in &plots {
        write_file(&dir.join(format!("{}.svg", p.name)), p.svg.as_bytes())?;
    }
    results.write_html(&dir.join("report.html"), &plots)
}

fn gz(v: &serde_json::Value) -> Result<Vec<u8>, Failure> {
    darkbuf_report::flent_gz(v).map_err(|e| Failure::Internal(format!("gzip failed: {e}")))
}

/// Writes `dir/flent/NN-<label>.flent.gz` for point `at` of `s`, numbered as point
/// `index` of the sweep (a sweep writes each point's as it finishes, from a
/// one-point `s`).
pub(crate) fn write_point_flent(dir: &Path, index: usize, s: &SweepResults, at: usize, now: f64) -> Result<(), Failure> {
    let sub = dir.join("flent");
    std::fs::create_dir_all(&sub).map_err(|e| Failure::Input(format!("cannot create {}: {e}", sub.display())))?;
    match darkbuf_report::flent_point(s, at, now) {
        Some(v) => write_file(&sub.join(format!("{}.flent.gz", point_file_stem(index, &s.points[at].label))), &gz(&v)?),
        None => Ok(()),
    }
}

/// Writes a sweep's results.flent.gz, plots and report.html into `dir` (its points'
/// flent files are [`write_point_flent`]'s).
pub(crate) fn write_sweep_artifacts(dir: &Path, s: &SweepResults, sweep_metrics: &[String], now: f64) -> Result<(), Failure> {
    write_file(&dir.join("results.flent.gz"), &gz(&darkbuf_report::flent_sweep(s, now))?)?;
    let metrics: Vec<&str> = if sweep_metrics.is_empty() {
        darkbuf_report::DEFAULT_SWEEP_METRICS.to_vec()
    } else {
        sweep_metrics.iter().map(String::as_str).collect()
    };
    let plots = darkbuf_report::sweep_plots(s, &metrics).map_err(|e| Failure::Internal(format!("plotting failed: {e}")))?;
    for p in &plots {
        write_file(&dir.join(format!("{}.svg", p.name)), p.svg.as_bytes())?;
    }
    write_streamed(&dir.join("report.html"), |w| {
        let mut page = darkbuf_report::html::Page::new(w);
        darkbuf_report::html::write_sweep_html(&mut page, s, &plots);
        page.finish()
    })
}

/// Writes `dir/<backend>.flent.gz`: `r` as flent's data file, its title naming the
/// backend, so `flent -i DIR/sim.flent.gz DIR/kernel.flent.gz -p ping_cdf` (or a test
/// preset's `totals`, `all_scaled`) draws a `compare` run's two backends together, as
/// flent compares two test runs.
pub(crate) fn write_backend_flent(dir: &Path, r: &Results) -> Result<(), Failure> {
    let mut v = darkbuf_report::flent_run(r, now_unix_s());
    if let Some(m) = v.get_mut("metadata").and_then(serde_json::Value::as_object_mut) {
        let title = m.get("TITLE").and_then(serde_json::Value::as_str).unwrap_or("darkbuf").to_string();
        m.insert("TITLE".into(), serde_json::json!(format!("{title} ({})", r.backend)));
    }
    let body = darkbuf_report::flent_gz(&v).map_err(|e| Failure::Internal(format!("gzip failed: {e}")))?;
    write_file(&dir.join(format!("{}.flent.gz", r.backend)), &body)
}

/// The run table, then the log2 histograms summed over the runs (and, with `per_run`,
/// each run's), as bpftrace prints them.
pub(crate) fn run_table_text(results: &Results, per_run: bool) -> String {
    let mut s = darkbuf_report::run_table(results);
    let merged = darkbuf_report::merged_histograms(&results.runs);
    if !merged.is_empty() {
        let n = results.runs.len();
        if n == 1 {
            outln!(s, "\nhistograms:");
        } else {
            outln!(s, "\nhistograms, {n} runs summed:");
        }
        s.push_str(&darkbuf_report::hists_text(&merged));
    }
    if per_run && results.runs.len() > 1 {
        for r in &results.runs {
            outln!(s, "\nhistograms, seed {}:", r.seed);
            s.push_str(&darkbuf_report::histograms_text(r));
        }
    }
    s + &printouts_text(results, per_run)
}

/// The tools' own printouts: the first run's (every run's with `per_run`).
pub(crate) fn printouts_text(results: &Results, per_run: bool) -> String {
    let mut s = String::new();
    let shown = if per_run { results.runs.len() } else { 1 };
    // The window they count, which is not the table's (issue 48).
    let window = darkbuf_report::printouts_window(&results.scenario).map(|(short, _)| short);
    for r in results.runs.iter().take(shown) {
        for (cmd, text) in &r.printouts {
            outln!(s, "\n# seed {}: {cmd}", r.seed);
            if let Some(w) = &window {
                outln!(s, "# ({w}; the table above: the measured window only)");
            }
            s.push_str(text);
            if !text.ends_with('\n') {
                outln!(s);
            }
        }
    }
    s
}

pub fn sweep(path: &Path, c: &Common, rows: Rows, plot: &[String], hist: bool) -> Result<(), Failure> {
    warn_kernel_only_flags(c);
    // `--set K=V` fixes a key for every point; `--set K=V1,V2` sweeps it.
    let (sweeps, fixed) = darkbuf_run::split_sets(&c.set);
    let plan = darkbuf_scenario::sweep_plan_fixed(path, &fixed, &sweeps).map_err(|d| Failure::Input(d.to_string()))?;
    for w in &plan.warnings {
        errln!("darkbuf: warning: {w}");
    }
    let mut points = Vec::new();
    for spec in &plan.points {
        let mut scn = darkbuf_scenario::load_point(path, &fixed, spec).map_err(|d| Failure::Input(d.to_string()))?;
        apply_common(&mut scn, c)?;
        points.push((spec.clone(), scn));
    }
    warn_folded("warning", points.iter().flat_map(|(spec, scn)| darkbuf_scenario::path_warnings(scn).into_iter().map(|w| (spec.label.clone(), w))).collect());
    darkbuf_scenario::limits::check_total(points.iter().map(|(_, s)| s)).map_err(Failure::Input)?;
    check_plot_metrics(plot)?;
    check_plot_metrics_planned(plot, &points.iter().map(|(_, s)| s).collect::<Vec<_>>(), c.backend)?;
    check_out(c)?;
    let name = points.first().map(|(_, s)| s.name.clone()).unwrap_or_default();
    let planned = points.len();
    // Each point goes out (and is slimmed) as it finishes: see sweep_out.rs.
    let keep = crate::sweep_out::Keep { scenario: true, out: c.out.is_some(), histograms: c.out.is_some() || hist, plot: plot.to_vec() };
    let mut sink = crate::sweep_out::SweepSink::new(c, &name, Some(provenance(path)), keep)?;
    let mut signal = None;
    // A VM that failed after some points: they are printed and written, then this.
    let mut late_error: Option<Failure> = None;
    let backend = match c.backend {
        Backend::Kernel => {
            crate::kernel_cli::check_points(points.iter().map(|(_, s)| s))?;
            // One point after the other on the real kernel (they share its CPUs).
            for (i, (spec, scn)) in points.iter().enumerate() {
                match crate::kernel_cli::run_point(scn, c.probe_trace) {
                    Ok(results) => sink.push(i, spec.label.clone(), spec.set.clone(), results)?,
                    Err(Failure::Interrupted { signal: s, .. }) => {
                        signal = Some(s);
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
            "kernel"
        }
        Backend::Vm => {
            // One boot for every point, one point after the other in the guest.
            let (results, stop) = crate::vm_cli::sweep_points(path, c, &points, &fixed)?;
            for (i, ((spec, _), results)) in points.iter().zip(results).enumerate() {
                sink.push(i, spec.label.clone(), spec.set.clone(), results)?;
            }
            match stop {
                Some(Failure::Interrupted { signal: s, .. }) => signal = Some(s),
                Some(f) if sink.sweep.points.is_empty() => return Err(f),
                Some(f) => late_error = Some(f),
                None => {}
            }
            "vm"
        }
        Backend::Sim => {
            // The scenarios move to the simulation threads (not copied: 10,000 points).
            let (specs, sim_points): (Vec<_>, Vec<SimPoint>) = std::mem::take(&mut points)
                .into_iter()
                .map(|(spec, scn)| {
                    let p = profile_of(&scn)?;
                    Ok((spec, (scn, p)))
                })
                .collect::<Result<Vec<_>, Failure>>()?
                .into_iter()
                .unzip();
            let sim_points = std::sync::Arc::new(sim_points);
            let total_runs = sim_points.iter().map(|(s, _)| s.runs as u64).sum();
            let pb = progress(total_runs, &name);
            signal = run_points_streamed(sim_points.clone(), jobs_of(c), &pb, &mut |i, runs| {
                let (spec, (scn, p)) = (&specs[i], &sim_points[i]);
                sink.push(i, spec.label.clone(), spec.set.clone(), results_of(scn, p, runs))
            })?;
            "sim"
        }
    };
    if let (Some(s), true) = (signal, sink.sweep.points.is_empty()) {
        return Err(Failure::interrupted(s, "; no point had finished"));
    }
    let sweep = sink.finish(plot, |sweep| {
        let heading = crate::sweep_out::heading(&name, sweep.points.len(), planned, signal.is_some(), backend);
        heading + &sweep_text(sweep, rows, hist)
    })?;
    if let Some(f) = late_error {
        let kept = format!("; kept the {} of {planned} points that finished", sweep.points.len());
        return Err(match f {
            Failure::Input(m) => Failure::Input(m + &kept),
            Failure::Backend(m) => Failure::Backend(m + &kept),
            Failure::Internal(m) => Failure::Internal(m + &kept),
            f => f,
        });
    }
    match signal {
        Some(s) => Err(Failure::interrupted(s, &format!("; kept the {} of {planned} points that finished", sweep.points.len()))),
        // A --plot metric that could not be ruled out before the sweep but that no
        // point measured: the results are printed and written (the sweep's time is not
        // lost), the plot is missing, so the command fails.
        None => check_plot_metrics_measured(plot, &sweep).map_err(|m| {
            Failure::Input(match &c.out {
                Some(d) => format!(
                    "{m}; the other results are in {}: `darkbuf report {}/results.json --plot METRIC --html OUT.html` plots another metric",
                    d.display(),
                    d.display()
                ),
                None => m,
            })
        }),
    }
}

/// A sweep's table as stdout shows it (fitted to the terminal's width when there is one)
/// and, with `--hist`, each point's histograms summed over its runs.
fn sweep_text(sweep: &SweepResults, rows: Rows, hist: bool) -> String {
    let width = stdout_width();
    let mut s = match rows {
        Rows::Seed => match width {
            Some(w) => darkbuf_report::sweep_table_fit(sweep, &darkbuf_report::default_rows(), w),
            None => darkbuf_report::sweep_table(sweep, &darkbuf_report::default_rows()),
        },
        Rows::All => darkbuf_report::sweep_table_all_fit(sweep, width),
    };
    if hist {
        for p in &sweep.points {
            let merged = darkbuf_report::merged_histograms(&p.results.runs);
            if !merged.is_empty() {
                let n = p.results.runs.len();
                outln!(s, "\nhistograms, {} ({n} run{} summed):", p.label, if n == 1 { "" } else { "s" });
                s.push_str(&darkbuf_report::hists_text(&merged));
            }
        }
    }
    s
}

/// `--plot METRIC`s must be metrics darkbuf knows (checked before the sweep runs, so a
/// typo does not cost the sweep).
pub(crate) fn check_plot_metrics(plot: &[String]) -> Result<(), Failure> {
    for m in plot {
        if darkbuf_report::glossary::lookup(m).is_none() {
            let known = darkbuf_report::glossary::names();
            let hint = match darkbuf_scenario::diag::did_you_mean(m, known.iter().map(String::as_str)) {
                Some(s) => format!("did you mean `{s}`? "),
                None => String::new(),
            };
            return Err(Failure::Input(format!(
                "--plot {m}: no such metric; {hint}metrics: {}",
                known.join(", ")
            )));
        }
    }
    Ok(())
}

/// The width sweep tables wrap to: the terminal's, when stdout is one (`COLUMNS`
/// overrides it, as for other tools); `None` (no wrapping) when stdout is a file or a
/// pipe, so scripts get one table.
pub(crate) fn stdout_width() -> Option<usize> {
    if let Some(c) = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<usize>().ok()).filter(|&c| c > 0) {
        return Some(c);
    }
    if !std::io::stdout().is_terminal() {
        return None;
    }
    terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| w.0 as usize)
}

/// The largest results file `report` reads: what the bounds on a command
/// (`limits::MAX_TOTAL_POINTS` samples and probes) let a results JSON grow to.
const MAX_RESULTS_BYTES: u64 = 1 << 30;

/// A results file's text: a regular file or a pipe of at most [`MAX_RESULTS_BYTES`]
/// (`darkbuf report /dev/zero` is an error, not a read until the memory runs out).
fn read_results_file(path: &Path) -> Result<String, Failure> {
    use std::os::unix::fs::FileTypeExt;
    let cannot = |e: &dyn std::fmt::Display| Failure::Input(format!("cannot read {}: {e}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| cannot(&e))?;
    if !(meta.is_file() || meta.file_type().is_fifo()) {
        return Err(Failure::Input(format!("{} is not a results file (not a regular file or a pipe)", path.display())));
    }
    match darkbuf_scenario::read_bounded(path, MAX_RESULTS_BYTES) {
        Ok(Some(text)) => Ok(text),
        Ok(None) => Err(Failure::Input(format!(
            "{} is larger than {} bytes, more than any darkbuf results file",
            path.display(),
            darkbuf_scenario::limits::thousands(MAX_RESULTS_BYTES)
        ))),
        Err(e) => Err(cannot(&e)),
    }
}

/// `darkbuf report RESULTS.json [--html OUT.html]`: the table on stdout, or the HTML page.
pub fn report(path: &Path, html: Option<&Path>, plot: &[String]) -> Result<(), Failure> {
    let text = read_results_file(path)?;
    let results = parse_results(path, &text)?;
    if let AnyResults::Sweep(s) = &results {
        check_plot_metrics_measured(plot, s).map_err(Failure::Input)?;
    }
    if let Some(out) = html {
        let plots = results.plots(plot)?;
        if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| Failure::Input(format!("cannot create {}: {e}", parent.display())))?;
        }
        return results.write_html(out, &plots);
    }
    crate::output::stdout(&match &results {
        AnyResults::Run(r) => run_table_text(r, false),
        AnyResults::Sweep(s) => darkbuf_report::sweep_table_all_fit(s, stdout_width()),
    })
}
