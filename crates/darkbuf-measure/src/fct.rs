//! Flow completion times of short flows (`kind = "web"`), for every backend: the
//! `web.*` metrics from each completed flow's size, FCT and ideal FCT (docs/web.md).
//!
//! - FCT: from the application's `connect()` to the receiving application having the
//!   flow's last byte (the pFabric and Homa definition: the whole flow delivered).
//! - Slowdown: FCT over the ideal FCT of the same size on the idle path (its
//!   computation is the backend's; `None` where the path has no rate to compute it).
//! - Percentiles are nearest-rank ([`crate::percentile`]), overall and per size bucket.

use crate::Out;

/// One completed flow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fct {
    pub size: u64,
    pub fct_ns: u64,
    /// The ideal FCT of its size, ns (`None`: not computable on this path).
    pub ideal_ns: Option<u64>,
}

/// What the backend counted of its connections in the measured window.
#[derive(Clone, Debug, Default)]
pub struct FctCounts {
    /// Connections opened (`connect()`) in the measured window.
    pub started: u64,
    /// Of them, still open at its end (not all data read yet).
    pub open: u64,
    /// Bytes of the flows started in the window (their drawn sizes).
    pub started_bytes: u64,
    /// The most connections open at once, the run's warmup included.
    pub open_peak: u64,
}

/// The nearest-rank percentile `p` of ascending `sorted` values.
fn percentile_f64(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p.clamp(0.0, 100.0) / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    Some(sorted[rank.min(sorted.len()) - 1])
}

/// The FCT and slowdown percentiles of `flows` as metrics `{prefix}fct_p50_ms`,
/// `fct_p99_ms`, `fct_avg_ms`, `slowdown_p50`, `slowdown_p99` and `flows_completed`.
fn fct_stats(out: &mut Out, prefix: &str, flows: &[Fct], no_ideal: &str) {
    out.set(&format!("{prefix}flows_completed"), flows.len() as f64);
    let mut fct: Vec<u64> = flows.iter().map(|f| f.fct_ns).collect();
    fct.sort_unstable();
    let none = "no flow of this kind completed in the measured window";
    for p in [50, 99] {
        match crate::percentile(&fct, p as f64) {
            Some(v) => out.set(&format!("{prefix}fct_p{p}_ms"), v / 1e6),
            None => out.none(&format!("{prefix}fct_p{p}_ms"), none),
        }
    }
    match fct.len() {
        0 => out.none(&format!("{prefix}fct_avg_ms"), none),
        n => out.set(&format!("{prefix}fct_avg_ms"), fct.iter().sum::<u64>() as f64 / n as f64 / 1e6),
    }
    let mut slow: Vec<f64> = flows.iter().filter_map(|f| f.ideal_ns.filter(|&i| i > 0).map(|i| f.fct_ns as f64 / i as f64)).collect();
    slow.sort_unstable_by(f64::total_cmp);
    for p in [50, 99] {
        let k = format!("{prefix}slowdown_p{p}");
        match percentile_f64(&slow, p as f64) {
            Some(v) => out.set(&k, v),
            None if fct.is_empty() => out.none(&k, none),
            None => out.none(&k, no_ideal),
        }
    }
}

/// The `web.*` metrics of a run: counts, then the FCT and slowdown percentiles over
/// all completed flows and per size bucket (`edges`: the buckets' upper edges, bytes;
/// bucket N is `edges[N-1] < size <= edges[N]`, the last unbounded above).
/// `window_ns` is the measured window; `no_ideal` the reason a slowdown is unknown.
pub fn web_metrics(out: &mut Out, counts: &FctCounts, flows: &[Fct], edges: &[u64], window_ns: u64, no_ideal: &str) {
    out.set("web.flows_started", counts.started as f64);
    out.set("web.flows_open", counts.open as f64);
    out.set("web.open_peak", counts.open_peak as f64);
    out.set("web.offered_mbps", counts.started_bytes as f64 * 8.0 / window_ns.max(1) as f64 * 1e3);
    fct_stats(out, "web.", flows, no_ideal);
    let mut by_bucket: Vec<Vec<Fct>> = vec![Vec::new(); edges.len() + 1];
    for f in flows {
        let b = edges.iter().position(|&e| f.size <= e).unwrap_or(edges.len());
        by_bucket[b].push(*f);
    }
    for (n, fs) in by_bucket.iter().enumerate() {
        let prefix = format!("web.bucket.{n}.");
        out.set(&format!("{prefix}size_min_bytes"), if n == 0 { 1.0 } else { (edges[n - 1] + 1) as f64 });
        match edges.get(n) {
            Some(&e) => out.set(&format!("{prefix}size_max_bytes"), e as f64),
            None => out.none(&format!("{prefix}size_max_bytes"), "the last bucket has no upper edge"),
        }
        fct_stats(out, &prefix, fs, no_ideal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_split_at_their_upper_edges() {
        let flows: Vec<Fct> = [(10, 1_000_000), (10, 3_000_000), (11, 2_000_000), (1000, 8_000_000)].iter().map(|&(size, fct_ns)| Fct { size, fct_ns, ideal_ns: Some(1_000_000) }).collect();
        let mut out = Out::default();
        let counts = FctCounts { started: 5, open: 1, started_bytes: 1031, open_peak: 2 };
        web_metrics(&mut out, &counts, &flows, &[10, 100], 1_000_000_000, "-");
        let m = |k: &str| out.m.get(k).copied().flatten();
        assert_eq!(m("web.flows_completed"), Some(4.0));
        assert_eq!(m("web.fct_p50_ms"), Some(2.0));
        assert_eq!(m("web.fct_p99_ms"), Some(8.0));
        assert_eq!(m("web.bucket.0.flows_completed"), Some(2.0));
        assert_eq!(m("web.bucket.0.fct_p99_ms"), Some(3.0));
        assert_eq!(m("web.bucket.1.slowdown_p50"), Some(2.0));
        assert_eq!(m("web.bucket.1.size_min_bytes"), Some(11.0));
        assert_eq!(m("web.bucket.2.fct_p50_ms"), Some(8.0));
        assert_eq!(m("web.bucket.2.size_max_bytes"), None);
        assert!(out.why.contains_key("web.bucket.2.size_max_bytes"));
    }
}
