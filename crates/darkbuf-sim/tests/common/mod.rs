//! Helpers the simulator's integration tests share: loading the repository's scenarios,
//! running them, and reading metrics.
#![allow(dead_code)]

use darkbuf_report::RunRecord;
use darkbuf_measure::Profile;
use darkbuf_sim::simulate;
use std::path::PathBuf;

/// `scenarios/<file>` of the repository.
pub fn scenario_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(file)
}

/// The text of `scenarios/<file>`.
pub fn scenario_text(file: &str) -> String {
    std::fs::read_to_string(scenario_path(file)).expect("scenario file")
}

/// Runs scenario text with `--set` overrides at its own seed; no invariant finding.
pub fn run_text(text: &str, set: &[&str]) -> RunRecord {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let scn = darkbuf_scenario::load_str("test.toml", text, &set).unwrap_or_else(|d| panic!("{d}"));
    let profile = Profile::load(&scn.machine.profile_source()).unwrap();
    let (rec, _) = simulate(&scn, &profile, scn.seed).expect("simulates");
    assert!(rec.findings.is_empty(), "invariant findings: {:?}", rec.findings);
    rec
}

/// Runs `scenarios/<file>` with `--set` overrides.
pub fn run(file: &str, set: &[&str]) -> RunRecord {
    run_text(&scenario_text(file), set)
}

/// A metric that must be present.
pub fn m(r: &RunRecord, k: &str) -> f64 {
    r.metrics.get(k).copied().flatten().unwrap_or_else(|| panic!("metric {k} missing"))
}
