//! darkbuf results: the JSON contract, statistics, and the formats people read.
//!
//! - [`results`]: the contract types (`Results`, `SweepResults`, ...).
//! - [`stats`]: mean and Student-t 95% confidence intervals over runs.
//! - [`table`]: markdown tables in the seed reports' layout.
//! - [`hist`]: log2 histograms in bpftrace's `hist()` text format.
//! - [`csv`]: CSV of a run's summary, its runs, and a sweep.
//!
//! All functions are pure: they return `String`s and iterate `BTreeMap`s only, so
//! the same results always print the same bytes.

pub mod csv;
pub mod format;
pub mod hist;
pub mod results;
pub mod stats;
pub mod table;

pub use csv::{csv_field, run_csv, runs_csv, sweep_csv};
pub use format::{fmt_human, format_for_metric, CellFormat};
pub use hist::{bucket_label, hist_lines, hist_text, histograms_text};
pub use results::*;
pub use stats::{summarize, summarize_runs, t_critical_975};
pub use table::{
    default_rows, metric_names, run_table, sweep_metric_names, sweep_table, sweep_table_all,
    SeedRow,
};
