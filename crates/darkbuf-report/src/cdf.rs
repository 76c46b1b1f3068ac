//! Probe round trips as distributions: the samples of a run's `ping.rtt_ms` time
//! series and their empirical CDF (what flent's `ping_cdf` plot draws).

use crate::results::{RunRecord, TimeSeries};

/// The time series name of the probes' round trips: one point per probe, `null` = lost.
pub const PING_RTT_SERIES: &str = "ping.rtt_ms";

/// The time series the simulator samples every `sample_interval` (and the kernel
/// backend where it can), in display order.
pub const SAMPLED_SERIES: [&str; 4] = [
    "bql.limit",
    "bql.inflight",
    "qdisc.backlog_pkts",
    "ring.occupancy",
];

/// The answered probes' round trips (ms) of `run`, in probe order: the finite values of
/// its `ping.rtt_ms` time series. Empty when the run has no such series.
pub fn probe_rtts_ms(run: &RunRecord) -> Vec<f64> {
    run.timeseries
        .get(PING_RTT_SERIES)
        .map(finite_values)
        .unwrap_or_default()
}

/// The number of lost probes (`null` points) of `run`'s `ping.rtt_ms` series.
pub fn probes_lost(run: &RunRecord) -> usize {
    run.timeseries.get(PING_RTT_SERIES).map_or(0, lost_points)
}

/// The lost probes (`null` points) of a probe series.
pub fn lost_points(ts: &TimeSeries) -> usize {
    ts.values.iter().filter(|v| v.is_none()).count()
}

/// The metric prefixes of pinger `k` of a run's `pingers`: `ping.` for the first
/// (`ping.*` are its figures), and `ping.k.` for each one when there are several. Both
/// backends name their figures and series (`PREFIX` + `rtt_ms`) by it.
pub fn ping_prefixes(k: usize, pingers: usize) -> Vec<String> {
    let mut v = Vec::with_capacity(2);
    if k == 0 {
        v.push("ping.".to_string());
    }
    if pingers > 1 {
        v.push(format!("ping.{k}."));
    }
    v
}

/// With more than one pinger, each one's round-trip series (`ping.N.rtt_ms`), by N;
/// empty with one pinger (whose series is `ping.rtt_ms`) or none.
pub fn pinger_series(run: &RunRecord) -> Vec<(usize, &TimeSeries)> {
    let mut v: Vec<(usize, &TimeSeries)> = run
        .timeseries
        .iter()
        .filter_map(|(k, ts)| Some((k.strip_prefix("ping.")?.strip_suffix(".rtt_ms")?.parse().ok()?, ts)))
        .collect();
    v.sort_by_key(|(n, _)| *n);
    v
}

/// The finite values of a time series, in order (`null`, NaN and ±inf are skipped).
pub fn finite_values(ts: &TimeSeries) -> Vec<f64> {
    ts.values
        .iter()
        .flatten()
        .copied()
        .filter(|v| v.is_finite())
        .collect()
}

/// The `(t_ms, value)` points of a time series with a finite time and value, in order.
/// Extra times or values (the two vectors of different lengths) are ignored.
pub fn points(ts: &TimeSeries) -> Vec<(f64, Option<f64>)> {
    ts.t_ms
        .iter()
        .zip(&ts.values)
        .filter(|(t, _)| t.is_finite())
        .map(|(&t, v)| (t, v.filter(|v| v.is_finite())))
        .collect()
}

/// The empirical distribution function of `values`: for each distinct value `x` in
/// ascending order, `(x, F(x))` with `F(x)` the fraction of values `<= x`.
///
/// Ties collapse into one step (`[1, 2, 2, 3]` gives `(1, 0.25), (2, 0.75), (3, 1)`);
/// non-finite values are ignored; an empty input gives an empty CDF. The last point is
/// always exactly 1.
pub fn ecdf(values: &[f64]) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (i, &x) in v.iter().enumerate() {
        let f = (i + 1) as f64 / n as f64;
        match out.last_mut() {
            Some(last) if last.0 == x => last.1 = f,
            _ => out.push((x, f)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecdf_steps_and_ties() {
        assert_eq!(
            ecdf(&[3.0, 1.0, 2.0, 2.0]),
            vec![(1.0, 0.25), (2.0, 0.75), (3.0, 1.0)]
        );
        assert_eq!(ecdf(&[]), vec![]);
        assert_eq!(ecdf(&[f64::NAN, 5.0, f64::INFINITY]), vec![(5.0, 1.0)]);
        // Ten values: F steps by 0.1 and ends at exactly 1.
        let v: Vec<f64> = (0..10).rev().map(f64::from).collect();
        let c = ecdf(&v);
        assert_eq!(c.len(), 10);
        assert_eq!(c[0], (0.0, 0.1));
        assert_eq!(c[4], (4.0, 0.5));
        assert_eq!(c[9], (9.0, 1.0));
    }

    #[test]
    fn probe_samples_skip_losses() {
        let mut run = RunRecord::default();
        run.timeseries.insert(
            PING_RTT_SERIES.into(),
            TimeSeries {
                unit: "ms".into(),
                t_ms: vec![0.0, 50.0, 100.0, 150.0],
                values: vec![Some(0.5), None, Some(0.25), Some(f64::NAN)],
            },
        );
        assert_eq!(probe_rtts_ms(&run), vec![0.5, 0.25]);
        assert_eq!(probes_lost(&run), 1);
        assert_eq!(
            points(&run.timeseries[PING_RTT_SERIES]),
            vec![
                (0.0, Some(0.5)),
                (50.0, None),
                (100.0, Some(0.25)),
                (150.0, None)
            ]
        );
        assert!(probe_rtts_ms(&RunRecord::default()).is_empty());
    }

    #[test]
    fn ping_prefixes_name_the_first_pinger_twice_when_there_are_several() {
        assert_eq!(ping_prefixes(0, 1), ["ping."]);
        assert_eq!(ping_prefixes(0, 3), ["ping.", "ping.0."]);
        assert_eq!(ping_prefixes(2, 3), ["ping.2."]);
    }

    #[test]
    fn each_pingers_series_by_its_number() {
        let ts = |v: f64| TimeSeries { unit: "ms".into(), t_ms: vec![0.0], values: vec![Some(v)] };
        let mut run = RunRecord::default();
        for (k, v) in [("ping.rtt_ms", 1.0), ("ping.10.rtt_ms", 3.0), ("ping.2.rtt_ms", 2.0), ("ping.x.rtt_ms", 9.0), ("irtt.0.rtt_ms", 9.0)] {
            run.timeseries.insert(k.into(), ts(v));
        }
        let got: Vec<(usize, Option<f64>)> = pinger_series(&run).into_iter().map(|(n, t)| (n, t.values[0])).collect();
        assert_eq!(got, [(2, Some(2.0)), (10, Some(3.0))]);
    }
}
