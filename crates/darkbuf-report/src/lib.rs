//! darkbuf results: the JSON contract, statistics, and the formats people read.
//!
//! - [`results`]: the contract types (`Results`, `SweepResults`, ...).
//! - [`stats`]: mean and Student-t 95% confidence intervals over runs.
//! - [`table`]: markdown tables in the seed reports' layout.
//! - [`hist`]: log2 histograms in bpftrace's `hist()` text format.
//! - [`csv`]: CSV of a run's summary, its runs, and a sweep.
//! - [`cdf`]: the probes' RTT samples and their empirical CDF.
//! - [`flent`]: `.flent.gz` files in flent's data format.
//! - [`plot`]: SVG plots (CDF, time series, probe time, sweep metric with CI band).
//! - [`html`]: the self-contained HTML report.
//! - [`glossary`]: every metric's meaning and unit.
//! - [`families`]: the headline metrics and the indexed families (`tcp.flow.N.*`) the page groups.
//!
//! All functions are pure: they return `String`s and iterate `BTreeMap`s only, so
//! the same results always print the same bytes.

pub mod cdf;
pub mod csv;
pub mod families;
pub mod flent;
pub mod flent_plots;
pub mod flent_test;
pub mod format;
pub mod glossary;
pub mod hist;
pub mod html;
pub mod plot;
pub mod results;
pub mod stats;
pub mod table;

pub use cdf::{ecdf, ping_prefixes, probe_rtts_ms};
pub use csv::{csv_field, run_csv, runs_csv, sweep_csv, write_sweep_csv};
pub use flent::{flent_gz, flent_point, flent_run, flent_sweep};
pub use format::{fmt_human, fmt_mean_ci, format_for_metric, CellFormat};
pub use hist::{
    bucket_label, hist_lines, hist_text, histograms_text, hists_text, merge_hist, merged_histograms,
};
pub use html::{run_html, sweep_html};
pub use plot::{run_plots, sweep_plots, Plot, DEFAULT_SWEEP_METRICS};
pub use results::*;
pub use stats::{summarize, summarize_runs, t_critical_975};
pub use table::{
    default_rows, metric_names, printouts_window, run_table, sweep_metric_names, sweep_table, sweep_table_all,
    sweep_table_all_fit, sweep_table_fit, SeedRow,
};
