//! Which scenarios to run, and the (scenario, seed) jobs they make.

use crate::{Error, Job, Output, Source};
use darkbuf_report::RunRecord;
use darkbuf_scenario::{Diagnostic, Scenario};
use darkbuf_measure::Profile;
use std::collections::BTreeMap;

/// What one job gives: the run's record and, for every metric that is `None`, why.
pub type RunOut = (RunRecord, BTreeMap<String, String>);

/// Splits `darkbuf sweep`'s `--set`s into (sweeps, fixed): `K=V1,V2,...` sweeps `K`,
/// `K=V` fixes it for every point, and a value that starts with `[` or a quote is one
/// array or string even with commas in it (see [`darkbuf_scenario::sweep::split_values`]).
pub fn split_sets(set: &[String]) -> (Vec<String>, Vec<String>) {
    set.iter().cloned().partition(|s| darkbuf_scenario::sweep::is_sweep_set(s))
}

/// `--runs N` (at least 1) and `--seed N`: they apply after loading, over the
/// scenario's own `runs` and `seed` ([`darkbuf_scenario::seeds::check_flags`] then
/// checks that every run's seed is in range).
pub fn apply_runs_seed(scn: &mut Scenario, runs: Option<u32>, seed: Option<u64>) {
    if let Some(r) = runs {
        scn.runs = r.max(1);
    }
    if let Some(s) = seed {
        scn.seed = s;
    }
}

/// The seeds of a scenario's runs: run i uses `seed + i`.
pub fn seeds(scn: &Scenario) -> impl Iterator<Item = u64> + '_ {
    (0..scn.runs as u64).map(|i| scn.seed.wrapping_add(i))
}

/// One configuration to run: a sweep point, or the one point of `darkbuf run`.
#[derive(Clone, Debug)]
pub struct Point {
    /// The sweep point's label (empty for a run).
    pub label: String,
    /// The point's own `KEY=VALUE`s, the results JSON's `set` (empty for a run).
    pub set: Vec<String>,
    /// Every override that makes the point from the source: `set`, then the fixed ones.
    pub overrides: Vec<String>,
    pub scenario: Scenario,
}

/// The one way a point's scenario is made from its source, by the planner and again by
/// a [`Job`] on a worker: load with `overrides`, label it, then `--runs`/`--seed`.
pub(crate) fn point_scenario(
    src: &Source,
    overrides: &[String],
    label: &str,
    runs: Option<u32>,
    seed: Option<u64>,
) -> Result<Scenario, Diagnostic> {
    let mut scn = darkbuf_scenario::load_str(&src.name, &src.text, overrides)?;
    scn.label = label.to_string();
    apply_runs_seed(&mut scn, runs, seed);
    darkbuf_scenario::seeds::check_flags(&scn, runs, seed)?;
    Ok(scn)
}

/// The point of `darkbuf run SRC --set ...`.
pub fn run_point(src: &Source, set: &[String], runs: Option<u32>, seed: Option<u64>) -> Result<Point, Diagnostic> {
    Ok(Point {
        label: String::new(),
        set: Vec::new(),
        overrides: set.to_vec(),
        scenario: point_scenario(src, set, "", runs, seed)?,
    })
}

/// The points of `darkbuf sweep SRC --set ...` (see [`split_sets`]), each checked.
pub fn sweep_points(src: &Source, set: &[String], runs: Option<u32>, seed: Option<u64>) -> Result<Vec<Point>, Diagnostic> {
    let (sweeps, fixed) = split_sets(set);
    sweep_points_split(src, &fixed, &sweeps, runs, seed)
}

/// The points of a sweep: the source's variants times the cross product of its
/// `[sweep]` and `sweeps` (`KEY=V1,V2,...`), with the `fixed` overrides on every point.
pub fn sweep_points_split(
    src: &Source,
    fixed: &[String],
    sweeps: &[String],
    runs: Option<u32>,
    seed: Option<u64>,
) -> Result<Vec<Point>, Diagnostic> {
    sweep_points_warned(src, fixed, sweeps, runs, seed).map(|(points, _)| points)
}

/// [`sweep_points_split`] with the plan's warnings (`darkbuf_scenario::SweepPlan`'s:
/// a command-line value that replaces what a variant sets).
pub fn sweep_points_warned(
    src: &Source,
    fixed: &[String],
    sweeps: &[String],
    runs: Option<u32>,
    seed: Option<u64>,
) -> Result<(Vec<Point>, Vec<String>), Diagnostic> {
    let plan = darkbuf_scenario::sweep_plan_str_fixed(&src.name, &src.text, fixed, sweeps)?;
    let points = plan
        .points
        .iter()
        .map(|spec| {
            let overrides = darkbuf_scenario::point_overrides(fixed, spec);
            let scenario = point_scenario(src, &overrides, &spec.label, runs, seed)?;
            Ok(Point { label: spec.label.clone(), set: spec.set.clone(), overrides, scenario })
        })
        .collect::<Result<_, Diagnostic>>()?;
    Ok((points, plan.warnings))
}

/// Every point's runs as (scenario, seed) jobs with their profiles, point after point:
/// the order [`crate::sweep_results`] expects the outputs in.
pub fn jobs_of(points: &[Point], profiles: &[Profile]) -> (Vec<(Scenario, u64)>, Vec<Profile>) {
    let mut jobs = Vec::new();
    let mut out_profiles = Vec::new();
    for (pt, p) in points.iter().zip(profiles) {
        for seed in seeds(&pt.scenario) {
            jobs.push((pt.scenario.clone(), seed));
            out_profiles.push(p.clone());
        }
    }
    (jobs, out_profiles)
}

/// Whether a plan is a run's (one point, a run's results) or a sweep's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanKind {
    Run,
    Sweep,
}

/// Everything checked before anything runs: the points and their profiles. An
/// executor runs [`Plan::jobs`] anywhere, in any order, and [`Plan::assemble`] puts
/// the outputs back in job order.
#[derive(Clone, Debug)]
pub struct Plan {
    pub kind: PlanKind,
    pub source: Source,
    pub runs: Option<u32>,
    pub seed: Option<u64>,
    pub points: Vec<Point>,
    pub profiles: Vec<Profile>,
    /// What the caller should tell the user before running (see
    /// [`sweep_points_warned`]).
    pub warnings: Vec<String>,
}

impl Plan {
    /// `darkbuf run`'s plan. The source's `[[variant]]`s and `[sweep]` are not run, but
    /// their entries are checked, as the CLI's `run` checks them.
    pub fn run(source: Source, set: &[String], runs: Option<u32>, seed: Option<u64>) -> Result<Plan, Error> {
        let points = vec![run_point(&source, set, runs, seed)?];
        darkbuf_scenario::check_plan_entries(&source.name, &source.text)?;
        Plan::new(PlanKind::Run, source, runs, seed, points, Vec::new())
    }

    /// `darkbuf sweep`'s plan, with the sweeps and the fixed overrides apart.
    pub fn sweep(
        source: Source,
        fixed: &[String],
        sweeps: &[String],
        runs: Option<u32>,
        seed: Option<u64>,
    ) -> Result<Plan, Error> {
        let (points, warnings) = sweep_points_warned(&source, fixed, sweeps, runs, seed)?;
        Plan::new(PlanKind::Sweep, source, runs, seed, points, warnings)
    }

    fn new(kind: PlanKind, source: Source, runs: Option<u32>, seed: Option<u64>, points: Vec<Point>, warnings: Vec<String>) -> Result<Plan, Error> {
        let profiles = crate::profiles_of(&points)?;
        Ok(Plan { kind, source, runs, seed, points, profiles, warnings })
    }

    /// Number of jobs: the points' runs.
    pub fn job_count(&self) -> usize {
        self.points.iter().map(|p| p.scenario.runs as usize).sum()
    }

    /// The jobs, self-contained, in the order [`Plan::assemble`] takes their outputs.
    pub fn jobs(&self) -> Vec<Job> {
        let mut out = Vec::with_capacity(self.job_count());
        for (pt, p) in self.points.iter().zip(&self.profiles) {
            for run_seed in seeds(&pt.scenario) {
                out.push(Job {
                    source: self.source.clone(),
                    overrides: pt.overrides.clone(),
                    label: pt.label.clone(),
                    runs: self.runs,
                    seed: self.seed,
                    profile: p.clone(),
                    run_seed,
                });
            }
        }
        out
    }

    /// The results, from one output per job in job order.
    pub fn assemble(&self, outs: Vec<RunOut>) -> Result<Output, Error> {
        if outs.len() != self.job_count() {
            return Err(Error::Internal(format!("{} job outputs for {} jobs", outs.len(), self.job_count())));
        }
        Ok(match self.kind {
            PlanKind::Run => Output::Run(crate::results_of(&self.points[0].scenario, &self.profiles[0], outs)),
            PlanKind::Sweep => Output::Sweep(crate::sweep_results(&self.points, &self.profiles, outs)),
        })
    }
}
