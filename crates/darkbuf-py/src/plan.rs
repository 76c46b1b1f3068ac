//! Plans, jobs and results across the Python boundary.

use crate::errors::{limit_error, scenario_error, to_py};
use darkbuf_run::{Job, JobOutput, Output, PlanKind, Source};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::path::Path;

/// Reads a scenario file: `(name, text)`, the name as diagnostics show it.
#[pyfunction]
pub fn read_source(py: Python<'_>, path: &str) -> PyResult<(String, String)> {
    let s = Source::read(Path::new(path)).map_err(|d| scenario_error(py, &d))?;
    Ok((s.name, s.text))
}

/// `darkbuf sweep`'s `--set`s as `(sweeps, fixed)`: `K=V1,V2` sweeps, `K=V` fixes.
#[pyfunction]
pub fn split_sets(set: Vec<String>) -> (Vec<String>, Vec<String>) {
    darkbuf_run::split_sets(&set)
}

/// A checked plan: every point loaded and its profile found, nothing run yet.
#[pyclass(module = "darkbuf._darkbuf", frozen)]
pub struct Plan {
    plan: darkbuf_run::Plan,
}

/// `darkbuf run`'s plan for scenario text (`name` is what diagnostics call it).
#[pyfunction]
#[pyo3(signature = (name, text, set, runs=None, seed=None))]
pub fn plan_run(py: Python<'_>, name: String, text: String, set: Vec<String>, runs: Option<u32>, seed: Option<u64>) -> PyResult<Plan> {
    let plan = py.detach(|| darkbuf_run::Plan::run(Source::text(name, text), &set, runs, seed));
    plan.map_err(|e| to_py(py, e)).and_then(|plan| checked(py, plan))
}

/// The plan if the whole command is within `darkbuf run|sweep`'s bounds (at most 10 000
/// runs, summed over the points, and what they record), as the CLI checks them.
fn checked(py: Python<'_>, plan: darkbuf_run::Plan) -> PyResult<Plan> {
    darkbuf_scenario::limits::check_total(plan.points.iter().map(|p| &p.scenario)).map_err(|m| limit_error(py, m))?;
    Ok(Plan { plan })
}

/// `darkbuf sweep`'s plan: `sweeps` as `KEY=V1,V2,...`, `fixed` as `KEY=VALUE`.
#[pyfunction]
#[pyo3(signature = (name, text, fixed, sweeps, runs=None, seed=None))]
pub fn plan_sweep(
    py: Python<'_>,
    name: String,
    text: String,
    fixed: Vec<String>,
    sweeps: Vec<String>,
    runs: Option<u32>,
    seed: Option<u64>,
) -> PyResult<Plan> {
    let plan = py.detach(|| darkbuf_run::Plan::sweep(Source::text(name, text), &fixed, &sweeps, runs, seed));
    plan.map_err(|e| to_py(py, e)).and_then(|plan| checked(py, plan))
}

#[pymethods]
impl Plan {
    /// "run" or "sweep".
    #[getter]
    fn kind(&self) -> &'static str {
        match self.plan.kind {
            PlanKind::Run => "run",
            PlanKind::Sweep => "sweep",
        }
    }

    /// What the user should be told before the plan runs (a value that replaces what
    /// a variant sets), as `darkbuf sweep` prints on stderr.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.plan.warnings.clone()
    }

    /// The points' labels, in order.
    #[getter]
    fn labels(&self) -> Vec<String> {
        self.plan.points.iter().map(|p| p.label.clone()).collect()
    }

    /// The points' `KEY=VALUE`s (the results JSON's `set`).
    #[getter]
    fn sets(&self) -> Vec<Vec<String>> {
        self.plan.points.iter().map(|p| p.set.clone()).collect()
    }

    /// The name of the first point's scenario (a sweep's name).
    #[getter]
    fn name(&self) -> String {
        self.plan.points.first().map(|p| p.scenario.name.clone()).unwrap_or_default()
    }

    fn __len__(&self) -> usize {
        self.plan.job_count()
    }

    /// The jobs as JSON strings, for [`run_job`] wherever it runs.
    fn jobs(&self) -> Vec<String> {
        self.plan.jobs().iter().map(Job::to_json).collect()
    }

    /// The results from [`run_job`]'s outputs, one per job in job order.
    fn assemble(&self, py: Python<'_>, outputs: Vec<String>) -> PyResult<RawResults> {
        let out = py.detach(|| {
            let outs = outputs.iter().map(|s| JobOutput::from_json(s)).collect::<Result<Vec<_>, _>>()?;
            self.plan.assemble(outs)
        });
        let out = out.map_err(|e| to_py(py, e))?;
        let json = py.detach(|| out.json());
        Ok(RawResults { out, json })
    }
}

/// Runs one job (a string from `Plan.jobs()`) without holding the GIL, so jobs on
/// several threads run in parallel; returns its output as a JSON string.
#[pyfunction]
pub fn run_job(py: Python<'_>, job: &str) -> PyResult<String> {
    let out = py.detach(|| Job::from_json(job).and_then(|j| j.run()).map(|o| JobOutput::to_json(&o)));
    out.map_err(|e| to_py(py, e))
}

/// A run's or a sweep's results: the CLI's JSON, CSV and tables.
#[pyclass(module = "darkbuf._darkbuf", frozen)]
pub struct RawResults {
    out: Output,
    json: String,
}

#[pymethods]
impl RawResults {
    /// "run" or "sweep".
    #[getter]
    fn kind(&self) -> &'static str {
        match self.out {
            Output::Run(_) => "run",
            Output::Sweep(_) => "sweep",
        }
    }

    /// `--format json`.
    fn json(&self) -> &str {
        &self.json
    }

    /// `--format csv`.
    fn csv(&self) -> String {
        self.out.csv()
    }

    /// A markdown table: a run's metrics, or a sweep's with one column per point
    /// (`rows`: "seed" for the seed report's rows, "all" for every metric).
    #[pyo3(signature = (rows="seed"))]
    fn table(&self, rows: &str) -> PyResult<String> {
        match (&self.out, rows) {
            (Output::Run(r), _) => Ok(darkbuf_report::run_table(r)),
            (Output::Sweep(s), "seed") => Ok(darkbuf_report::sweep_table(s, &darkbuf_report::default_rows())),
            (Output::Sweep(s), "all") => Ok(darkbuf_report::sweep_table_all(s)),
            (_, other) => Err(PyValueError::new_err(format!("rows = {other:?}: valid are \"seed\" and \"all\""))),
        }
    }
}
