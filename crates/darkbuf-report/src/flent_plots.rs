//! flent's standard plots for a run of a test preset (`test = "rrul"`, ...), drawn from
//! the same data sets the `.flent.gz` carries ([`crate::flent_test::test_series`]):
//! `upload` and `download` (each TCP data set and flent's `avg`), `ping` (every
//! `Ping (ms)` data set), `totals` (`TCP upload sum`, `TCP download sum`, or the TCP
//! data sets of a test without sums; flent draws
//! `Ping (ms) avg` on a second axis, here it is the `ping` plot's), `fairness` (the
//! rtt_fair tests' Jain's index per direction) and `ping_cdf`.
//! The time axis is flent's: seconds since the run's start, warmup included.

use crate::flent_test::test_series;
use crate::plot::{cdf_svg, timeseries_svg, CdfSeries, Plot, TsSeries};
use crate::results::{Results, TimeSeries};

type Sets = Vec<(String, &'static str, TimeSeries)>;

fn pick<'a>(sets: &'a Sets, keep: impl Fn(&str) -> bool) -> Vec<TsSeries<'a>> {
    sets.iter().filter(|(n, _, _)| keep(n)).map(|(n, _, ts)| (n.clone(), ts)).collect()
}

fn push(out: &mut Vec<Plot>, name: &str, title: String, svg: Result<Option<String>, String>) -> Result<(), String> {
    if let Some(svg) = svg? {
        out.push(Plot { name: name.into(), title, svg });
    }
    Ok(())
}

/// The plots, named `flent_<plot>`; empty when the scenario names no test.
pub fn test_plots(r: &Results) -> Result<Vec<Plot>, String> {
    let Some((test, sets)) = test_series(r) else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    let is_sum = |n: &str| n.ends_with(" sum") || n == "TCP totals";
    for (plot, prefix) in [("upload", "TCP upload"), ("download", "TCP download")] {
        let lines = pick(&sets, |n| n.starts_with(prefix) && !is_sum(n) && !n.ends_with(" fairness"));
        let title = format!("{test}: {plot} (flent's {plot} plot)");
        push(&mut out, &format!("flent_{plot}"), title.clone(), timeseries_svg(&title, "Mbits/s", &lines))?;
    }
    // A test without sums (tcp_1up, tcp_bidirectional, tcp_2up_delay, squarewave's
    // `TCP bbr 1`, `TCP cubic 2`, ...) draws its TCP data sets themselves in `totals`.
    let sums = pick(&sets, is_sum);
    let lines = if sums.is_empty() { pick(&sets, |n| n.starts_with("TCP")) } else { sums };
    let title = format!("{test}: totals (flent's totals plot; its ping axis is the ping plot)");
    push(&mut out, "flent_totals", title.clone(), timeseries_svg(&title, "Mbits/s", &lines))?;
    // The rtt_fair tests' Jain's index per direction over time (flent's bar_fairness
    // draws its mean, one bar per file).
    let lines = pick(&sets, |n| n.ends_with(" fairness"));
    let title = format!("{test}: Jain's fairness index (flent's bar_fairness data sets)");
    push(&mut out, "flent_fairness", title.clone(), timeseries_svg(&title, "Idx", &lines))?;
    let lines = pick(&sets, |n| n.starts_with("Ping (ms)"));
    let title = format!("{test}: ping (flent's ping plot)");
    push(&mut out, "flent_ping", title.clone(), timeseries_svg(&title, "Latency (ms)", &lines))?;
    let cdfs: Vec<CdfSeries> = sets
        .iter()
        .filter(|(n, _, _)| n.starts_with("Ping (ms)") && n != "Ping (ms) avg")
        .map(|(n, _, ts)| (n.clone(), ts.values.iter().flatten().copied().collect()))
        .collect();
    let title = format!("{test}: ping CDF (flent's ping_cdf plot)");
    push(&mut out, "flent_ping_cdf", title.clone(), cdf_svg(&title, "Latency (ms)", &cdfs))?;
    Ok(out)
}
