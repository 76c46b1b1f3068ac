//! One (scenario point, seed) run in a self-contained, serializable form, for
//! executors in other processes or on other machines (Ray tasks), which may have
//! neither the scenario file nor the profile file.

use crate::plan::{point_scenario, RunOut};
use crate::{Error, Source};
use darkbuf_report::RunRecord;
use darkbuf_scenario::{Diagnostic, Scenario};
use darkbuf_measure::Profile;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A job carries the scenario's text and overrides rather than the resolved scenario:
/// the worker resolves it with the same code the planner used
/// ([`crate::plan::point_scenario`]), so the scenario it runs is the planner's. The
/// profile travels resolved, since a path to it would not resolve on another machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub source: Source,
    pub overrides: Vec<String>,
    pub label: String,
    /// `--runs` and `--seed`, applied after loading as on the planning side.
    pub runs: Option<u32>,
    pub seed: Option<u64>,
    pub profile: Profile,
    /// This run's seed.
    pub run_seed: u64,
}

/// A job's output on the wire.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobOutput {
    pub record: RunRecord,
    /// Why each `None` metric is `None`.
    pub unavailable: BTreeMap<String, String>,
}

impl Job {
    /// The scenario this job runs.
    pub fn scenario(&self) -> Result<Scenario, Diagnostic> {
        point_scenario(&self.source, &self.overrides, &self.label, self.runs, self.seed)
    }

    /// Simulates the job.
    pub fn run(&self) -> Result<RunOut, Error> {
        let scn = self.scenario()?;
        darkbuf_sim::simulate(&scn, &self.profile, self.run_seed).map_err(|e| match e {
            darkbuf_sim::SimError::Limit(m) => Error::Limit(m),
            e => Error::Sim(e.to_string()),
        })
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a job serializes")
    }

    pub fn from_json(s: &str) -> Result<Job, Error> {
        serde_json::from_str(s).map_err(|e| Error::Internal(format!("not a darkbuf job: {e}")))
    }
}

impl JobOutput {
    /// The output on the wire. JSON carries every value of a [`RunRecord`] exactly
    /// (floats round-trip; a non-finite metric, which JSON writes as `null`, is one the
    /// summary already treats as missing), so results assembled from decoded outputs
    /// print the same bytes as results assembled in place.
    pub fn to_json(out: &RunOut) -> String {
        #[derive(Serialize)]
        struct Ref<'a> {
            record: &'a RunRecord,
            unavailable: &'a BTreeMap<String, String>,
        }
        serde_json::to_string(&Ref { record: &out.0, unavailable: &out.1 }).expect("a run record serializes")
    }

    pub fn from_json(s: &str) -> Result<RunOut, Error> {
        let o: JobOutput = serde_json::from_str(s).map_err(|e| Error::Internal(format!("not a darkbuf job output: {e}")))?;
        Ok((o.record, o.unavailable))
    }
}
