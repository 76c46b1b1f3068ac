//! `--plot METRIC` that the results cannot or do not have: refused before a sweep
//! runs when the scenario makes it certain, else after, once the results are in.

use crate::run::Failure;
use crate::Backend;
use darkbuf_report::SweepResults;
use darkbuf_scenario::Scenario;

/// Why `metric` cannot be in the results of any of `points`, known before they run:
/// it is of a kind no point has (ping, TCP, irtt traffic), or its index is past the
/// points' TCP flows, irtt probers or (simulator) CPUs. `None` when it may be there:
/// [`check_plot_metrics_measured`] checks the rest once the results are in.
fn absent_up_front(metric: &str, points: &[&Scenario], backend: Backend) -> Option<(String, String)> {
    use darkbuf_scenario::Traffic;
    let mut parts = metric.split('.');
    let kind = parts.next()?;
    let index = |s: Option<&str>| s.and_then(|n| n.parse::<u64>().ok());
    // The largest count of a point, as "N things (name.0 .. name.N-1)".
    let bound = |count: &dyn Fn(&Scenario) -> u64, n: Option<u64>, what: &str, name: &str, example: &str| {
        let max = points.iter().map(|s| count(s)).max().unwrap_or(0);
        let n = n?;
        (n >= max).then(|| {
            let range = if max == 1 { format!("{name}.0") } else { format!("{name}.0 .. {name}.{}", max - 1) };
            (format!("the scenario has {max} {what} ({range})"), format!("e.g. {}", example.replace('N', &(max - 1).to_string())))
        })
    };
    let flows = |s: &Scenario| s.traffic.iter().map(|t| if let Traffic::Tcp(f) = t { f.flows as u64 } else { 0 }).sum::<u64>();
    let irtts = |s: &Scenario| s.traffic.iter().filter(|t| matches!(t, Traffic::Irtt(_))).count() as u64;
    let rest = metric.split_once('.').map_or("", |(_, r)| r);
    match kind {
        "ping" if !points.iter().any(|s| s.traffic.iter().any(|t| matches!(t, Traffic::Ping(_)))) => Some((
            "the scenario has no ping traffic".into(),
            "add a [[traffic]] of kind = \"ping\", or plot another metric".into(),
        )),
        // ping.N.* exist with two pingers or more; ping.* are the first one's.
        "ping" if index(parts.next()).is_some() => {
            let pings = |s: &Scenario| s.traffic.iter().filter(|t| matches!(t, Traffic::Ping(_))).count() as u64;
            let rest = rest.split_once('.').map_or("rtt_avg_ms", |r| r.1);
            if points.iter().all(|s| pings(s) < 2) {
                return Some(("ping.N.* are per pinger with more than one ping entry, and the scenario has one".into(), format!("plot ping.{rest}")));
            }
            bound(&pings, index(metric.split('.').nth(1)), "pingers", "ping", &format!("ping.N.{rest}"))
        }
        "tcp" if points.iter().all(|s| flows(s) == 0) => {
            Some(("the scenario has no TCP traffic".into(), "add a [[traffic]] of kind = \"tcp\", or plot another metric".into()))
        }
        "tcp" if parts.next() == Some("flow") => {
            let n = index(parts.next());
            let what = metric.splitn(4, '.').nth(3).unwrap_or("goodput_mbps");
            bound(&flows, n, "TCP flows", "tcp.flow", &format!("tcp.flow.N.{what}"))
        }
        "irtt" if points.iter().all(|s| irtts(s) == 0) => Some((
            "the scenario has no irtt traffic".into(),
            "add a [[traffic]] of kind = \"irtt\", or plot another metric".into(),
        )),
        "irtt" => {
            let n = index(parts.next())?;
            bound(&irtts, Some(n), "irtt probers", "irtt", &format!("irtt.N.{}", rest.split_once('.').map_or("rtt_avg_ms", |r| r.1)))
        }
        // The simulator's cpu.N.* are this host's CPUs (the far host's are peer.cpu.N.*,
        // a [lan] client's lan.cpu.N.*).
        "cpu" if backend == Backend::Sim => {
            let n = index(parts.next());
            let cpus = |s: &Scenario| s.machine.cpus as u64;
            bound(&cpus, n, "CPUs", "cpu", &format!("cpu.N.{}", rest.split_once('.').map_or("busy_pct", |r| r.1)))
        }
        _ => None,
    }
}

/// `--plot METRIC`s that no point of the sweep can have, before it runs (a sweep may
/// take hours; a metric that cannot be there should not cost them).
pub(crate) fn check_plot_metrics_planned(plot: &[String], points: &[&Scenario], backend: Backend) -> Result<(), Failure> {
    for m in plot {
        if let Some((why, valid)) = absent_up_front(m, points, backend) {
            return Err(Failure::Input(format!("--plot {m}: not in these results: {why}; {valid}")));
        }
    }
    Ok(())
}

/// `--plot METRIC`s that no point of `s` has a value for: the metric, why (the
/// results' own reason when they give one), and the metrics of its kind that are
/// there, else every metric that is.
pub(crate) fn check_plot_metrics_measured(plot: &[String], s: &SweepResults) -> Result<(), String> {
    for m in plot {
        if s.points.iter().any(|p| p.results.metric(m).is_some()) {
            continue;
        }
        let why = s
            .points
            .iter()
            .find_map(|p| p.results.unavailable.get(m.as_str()))
            .map_or_else(|| "no point measured it".to_string(), |r| format!("no point has a value for it ({r})"));
        let family = m.split('.').next().unwrap_or_default();
        let measured: std::collections::BTreeSet<&str> = s
            .points
            .iter()
            .flat_map(|p| p.results.summary.iter().filter(|(_, v)| v.is_some()).map(|(k, _)| &**k))
            .collect();
        let pattern = darkbuf_report::glossary::lookup(m).map(|e| e.name);
        let same: Vec<&str> = measured.iter().copied().filter(|k| pattern.is_some() && darkbuf_report::glossary::lookup(k).map(|e| e.name) == pattern).collect();
        let why = if !measured.iter().any(|k| k.split('.').next() == Some(family)) {
            format!("{why}; they have no {family}.* metric at all")
        } else {
            why
        };
        let valid = if !same.is_empty() {
            format!("these results have {}", same.join(", "))
        } else {
            let hint = darkbuf_scenario::diag::did_you_mean(m, measured.iter().copied()).map_or(String::new(), |d| format!("did you mean `{d}`? "));
            format!("{hint}metrics in these results: {}", measured.iter().copied().collect::<Vec<_>>().join(", "))
        };
        return Err(format!("--plot {m}: not in these results: {why}; {valid}"));
    }
    Ok(())
}
