//! Running scenarios on the simulator into the results contract: the orchestration
//! the `darkbuf` CLI and the Python package (`crates/darkbuf-py`) share, so that both
//! plan the same points, run the same jobs and print the same bytes.
//!
//! The pieces, in the order a command uses them:
//!
//! - [`Source`]: a scenario's text and the name its diagnostics show;
//! - [`plan`]: which scenarios to run ([`Point`]s of a run or a sweep) and the
//!   (scenario, seed) jobs they make; [`Job`] is one such job in a self-contained,
//!   serializable form for executors on other processes or machines (Ray tasks);
//! - [`assemble`]: from the jobs' outputs to [`Results`](darkbuf_report::Results) and
//!   [`SweepResults`](darkbuf_report::SweepResults), and [`results_json`], the one
//!   serialization `--format json` prints.
//!
//! Who runs the jobs (the CLI's thread pool, Python threads, Ray) is the caller's
//! choice: results are assembled in job order, so any executor gives the same bytes.

// A Diagnostic is returned rarely (once, before anything runs); boxing it buys nothing.
#![allow(clippy::result_large_err)]

pub mod assemble;
mod error;
pub mod job;
pub mod plan;
mod source;

pub use assemble::{environment, profile_of, profiles_of, results_json, results_of, sweep_results, value_json, Output};
pub use error::Error;
pub use job::{Job, JobOutput};
pub use plan::{apply_runs_seed, jobs_of, run_point, split_sets, sweep_points, Plan, PlanKind, Point, RunOut};
pub use source::Source;
