//! `darkbuf._darkbuf`: the Rust half of the `darkbuf` Python package (python/darkbuf).
//!
//! It plans runs and sweeps, runs one job, and assembles results with the same code as
//! the `darkbuf` CLI (crates/darkbuf-run), so `to_json()` is the CLI's JSON byte for
//! byte. The Python half decides where jobs run (threads, Ray tasks) and builds the
//! pandas frames; jobs cross that boundary as JSON strings so they can travel to other
//! processes and machines.

// A darkbuf_run::Error holds a Diagnostic and is returned once, before or after all the
// work; boxing it buys nothing (as in the scenario crate).
#![allow(clippy::result_large_err)]

mod errors;
mod plan;
mod values;

use pyo3::prelude::*;

#[pymodule]
mod _darkbuf {
    #[pymodule_export]
    use crate::plan::{plan_run, plan_sweep, read_source, run_job, split_sets, Plan, RawResults};
    #[pymodule_export]
    use crate::values::{dict_to_toml, override_text, set_values};

    use pyo3::prelude::*;

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        // `darkbuf run|sweep`'s bounds, for the Python side's own checks.
        m.add("MAX_RUNS", darkbuf_scenario::limits::MAX_RUNS)?;
        m.add("MAX_TOTAL_RUNS", darkbuf_scenario::limits::MAX_TOTAL_RUNS)?;
        m.add("MAX_SEED", darkbuf_scenario::seeds::MAX_SEED)
    }
}
