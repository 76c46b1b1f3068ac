//! netperf's TCP_RR / UDP_RR figures from per-connection transaction records: the
//! transaction rate and the latency distribution (netperf's omni output selectors
//! `TRANSACTION_RATE`, `MEAN_LATENCY`, `P50_LATENCY`, `P90_LATENCY`, `P99_LATENCY`),
//! and the `rr.*` metrics over them. The simulator records the true times of its
//! transactions, the kernel backend its clients' `CLOCK_MONOTONIC` readings; both report
//! through [`rr_report`], so every figure is defined once.

use crate::percentile;
use crate::Out;
use std::collections::BTreeMap;

/// One connection's record: its completed transactions and its timeouts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RrLog {
    /// Each completed transaction: when its request's `send()` began and when its
    /// response was read whole (ns, one clock).
    pub done: Vec<(u64, u64)>,
    /// When a timer expired on a transaction: UDP_RR's receive timeout (the transaction
    /// is lost, the next one starts), TCP_RR's loss probe or retransmission timeout
    /// (the transaction goes on) (ns).
    pub timeouts: Vec<u64>,
}

/// What one entry's (or all entries') transactions that completed in a window show.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RrSummary {
    /// Latencies of the transactions completed in the window (ns), sorted.
    pub latency: Vec<u64>,
    pub timeouts: u64,
}

impl RrSummary {
    /// The transactions of `logs` completed in `start..=end` (netperf counts a
    /// transaction when its response is read), and the timeouts in it.
    pub fn of<'a>(logs: impl Iterator<Item = &'a RrLog>, start: u64, end: u64) -> RrSummary {
        let mut s = RrSummary::default();
        for l in logs {
            s.latency.extend(l.done.iter().filter(|d| (start..=end).contains(&d.1)).map(|d| d.1 - d.0));
            s.timeouts += l.timeouts.iter().filter(|&&t| (start..=end).contains(&t)).count() as u64;
        }
        s.latency.sort_unstable();
        s
    }

    fn merge(&mut self, o: &RrSummary) {
        self.latency.extend_from_slice(&o.latency);
        self.latency.sort_unstable();
        self.timeouts += o.timeouts;
    }
}

/// The metrics of the request/response entries, one slice of connection logs per entry
/// in scenario order: `rr.*` over all of them and, with more than one entry, each
/// entry's `rr.N.*`; over `start..end` (ns, the logs' clock), with the reason of each
/// `null`. Nothing without an entry.
pub fn rr_report<'a>(entries: impl Iterator<Item = &'a [RrLog]>, start: u64, end: u64) -> (BTreeMap<String, Option<f64>>, BTreeMap<String, String>) {
    let mut out = Out::default();
    let per: Vec<RrSummary> = entries.map(|logs| RrSummary::of(logs.iter(), start, end)).collect();
    if per.is_empty() {
        return (out.m, out.why);
    }
    let secs = end.saturating_sub(start) as f64 / 1e9;
    let mut all = RrSummary::default();
    for (n, s) in per.iter().enumerate() {
        if per.len() > 1 {
            rr_set(&mut out, &format!("rr.{n}."), s, secs);
        }
        all.merge(s);
    }
    rr_set(&mut out, "rr.", &all, secs);
    (out.m, out.why)
}

/// The metrics after `prefix` (`rr.` or `rr.N.`) of one summary over a window of `secs`.
fn rr_set(out: &mut Out, prefix: &str, s: &RrSummary, secs: f64) {
    let k = |m: &str| format!("{prefix}{m}");
    out.set(&k("transactions"), s.latency.len() as f64);
    if secs > 0.0 {
        out.set(&k("transactions_per_s"), s.latency.len() as f64 / secs);
    } else {
        out.none(&k("transactions_per_s"), "the measured window is empty");
    }
    out.set(&k("timeouts"), s.timeouts as f64);
    let lat = &s.latency;
    let why = "no transaction completed in the measured window";
    match lat.is_empty() {
        true => {
            for m in ["latency_mean_us", "latency_min_us", "latency_p50_us", "latency_p90_us", "latency_p99_us", "latency_max_us"] {
                out.none(&k(m), why);
            }
        }
        false => {
            let us = |ns: f64| ns / 1e3;
            out.set(&k("latency_mean_us"), us(lat.iter().map(|&l| l as f64).sum::<f64>() / lat.len() as f64));
            out.set(&k("latency_min_us"), us(lat[0] as f64));
            out.set(&k("latency_max_us"), us(lat[lat.len() - 1] as f64));
            for (m, p) in [("latency_p50_us", 50.0), ("latency_p90_us", 90.0), ("latency_p99_us", 99.0)] {
                if let Some(v) = percentile(lat, p) {
                    out.set(&k(m), us(v));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_rate_and_nearest_rank_percentiles() {
        // Four transactions of 10, 20, 30, 40 us; the first completes before the window.
        let log = RrLog { done: vec![(0, 10_000), (100_000, 120_000), (200_000, 230_000), (300_000, 340_000)], timeouts: vec![50_000, 2_000_000] };
        let (m, why) = rr_report([&[log][..]].into_iter(), 100_000, 1_100_000);
        assert_eq!(m["rr.transactions"], Some(3.0));
        assert_eq!(m["rr.transactions_per_s"], Some(3000.0));
        assert_eq!(m["rr.timeouts"], Some(0.0));
        assert_eq!(m["rr.latency_mean_us"], Some(30.0));
        assert_eq!(m["rr.latency_p50_us"], Some(30.0));
        assert_eq!(m["rr.latency_p99_us"], Some(40.0));
        assert_eq!(m["rr.latency_min_us"], Some(20.0));
        assert!(why.is_empty());
        assert!(!m.contains_key("rr.0.transactions"), "rr.N.* only with several entries");
    }

    #[test]
    fn per_entry_metrics_and_nulls_with_reasons() {
        let a = RrLog { done: vec![(0, 5_000)], timeouts: vec![] };
        let b = RrLog { done: vec![], timeouts: vec![7_000] };
        let (m, why) = rr_report([&[a][..], &[b][..]].into_iter(), 0, 1_000_000_000);
        assert_eq!(m["rr.0.transactions"], Some(1.0));
        assert_eq!(m["rr.1.transactions"], Some(0.0));
        assert_eq!(m["rr.1.timeouts"], Some(1.0));
        assert_eq!(m["rr.1.latency_p50_us"], None);
        assert!(why.contains_key("rr.1.latency_p50_us"));
        assert_eq!(m["rr.transactions"], Some(1.0));
        assert_eq!(m["rr.latency_p50_us"], Some(5.0));
    }
}
