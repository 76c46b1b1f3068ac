//! From the jobs' outputs to the results contract, and the results JSON.

use crate::plan::{Point, RunOut};
use crate::Error;
use darkbuf_report::{Environment, Results, SweepPoint, SweepResults};
use darkbuf_scenario::Scenario;
use darkbuf_measure::Profile;
use serde::Serialize;
use std::collections::BTreeMap;

/// The scenario's machine profile (built-in name or path). A profile that does not
/// load is bad input at the scenario's `machine.profile` (its file, line and column, or
/// its `--set`).
pub fn profile_of(scn: &Scenario) -> Result<Profile, Error> {
    Profile::load(&scn.machine.profile_source()).map_err(|e| Error::Scenario(scn.machine.profile_error(&e.to_string())))
}

/// Every point's profile, loaded before anything runs.
pub fn profiles_of(points: &[Point]) -> Result<Vec<Profile>, Error> {
    points.iter().map(|p| profile_of(&p.scenario)).collect()
}

/// The results' `environment` on the simulator.
pub fn environment(scn: &Scenario, p: &Profile) -> Environment {
    Environment {
        kernel: "sim".into(),
        cpu: format!("simulated: {} CPUs, HZ={}", scn.machine.cpus, scn.machine.hz),
        profile: p.identity(),
        darkbuf_version: env!("CARGO_PKG_VERSION").into(),
        vm: None,
    }
}

/// A point's results from its runs' outputs, in run order.
pub fn results_of(scn: &Scenario, p: &Profile, runs: Vec<RunOut>) -> Results {
    let mut unavailable = BTreeMap::new();
    let mut records = Vec::new();
    for (r, why) in runs {
        unavailable.extend(why);
        records.push(r);
    }
    let scenario = serde_json::to_value(scn).expect("scenario serializes");
    Results::from_runs(scenario, "sim", environment(scn, p), records, unavailable)
}

/// A sweep's results from the outputs of [`crate::jobs_of`]'s jobs, in job order; the
/// sweep is named after its first point's scenario.
pub fn sweep_results(points: &[Point], profiles: &[Profile], outs: Vec<RunOut>) -> SweepResults {
    let name = points.first().map(|p| p.scenario.name.clone()).unwrap_or_default();
    let mut outs = outs.into_iter();
    let mut sweep = SweepResults { provenance: None, name, points: Vec::new() };
    for (pt, p) in points.iter().zip(profiles) {
        let runs: Vec<_> = outs.by_ref().take(pt.scenario.runs as usize).collect();
        let results = results_of(&pt.scenario, p, runs);
        sweep.points.push(SweepPoint { label: pt.label.clone(), set: pt.set.clone(), results });
    }
    sweep
}

/// The results JSON `--format json` prints and `--out` writes: pretty, keys sorted
/// (through `serde_json::Value`, whose objects are ordered maps), one final newline.
pub fn results_json<T: Serialize>(results: &T) -> Result<String, serde_json::Error> {
    value_json(&serde_json::to_value(results)?)
}

/// [`results_json`] of a tree that is JSON already (no copy of it): pretty, keys sorted
/// (its objects are ordered maps), one final newline.
pub fn value_json(value: &serde_json::Value) -> Result<String, serde_json::Error> {
    Ok(serde_json::to_string_pretty(value)? + "\n")
}

/// The results of a run or of a sweep.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    Run(Results),
    Sweep(SweepResults),
}

impl Output {
    /// `--format json`.
    pub fn json(&self) -> String {
        match self {
            Output::Run(r) => results_json(r),
            Output::Sweep(s) => results_json(s),
        }
        .expect("results serialize")
    }

    /// `--format csv`.
    pub fn csv(&self) -> String {
        match self {
            Output::Run(r) => darkbuf_report::run_csv(r),
            Output::Sweep(s) => darkbuf_report::sweep_csv(s),
        }
    }
}
