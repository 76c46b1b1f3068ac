//! What a run measures, accumulated only inside the measured window
//! (`warmup .. warmup + duration`).

use darkbuf_report::{Finding, Log2Hist};

/// A time-weighted average of a piecewise-constant integer quantity (queue depths,
/// limits). Integer arithmetic, and nothing to do when the value did not change: it is
/// updated on every packet.
#[derive(Clone, Debug, Default)]
pub struct TimeAvg {
    last_t: u64,
    last_v: u64,
    /// Sum of value x ns over the measured window so far.
    acc: u128,
    pub max: u64,
}

impl TimeAvg {
    /// The quantity changes to `v` at time `now`. Before the measured window this
    /// accumulates too; [`TimeAvg::start_window`] discards it, so the per-packet path
    /// has no window test.
    #[inline]
    pub fn set(&mut self, now: u64, v: u64) {
        if v == self.last_v {
            return;
        }
        self.acc += self.last_v as u128 * (now - self.last_t) as u128;
        self.max = self.max.max(v);
        self.last_t = now;
        self.last_v = v;
    }

    /// Mean over `start..end`; [`TimeAvg::start_window`] ran at `start`.
    pub fn mean(&self, start: u64, end: u64) -> f64 {
        let acc = self.acc + self.last_v as u128 * end.saturating_sub(self.last_t) as u128;
        if end > start {
            acc as f64 / (end - start) as f64
        } else {
            0.0
        }
    }

    /// At the start of the measured window (`now`): what accumulated before is
    /// dropped, and the value held then counts for `max`.
    pub fn start_window(&mut self, now: u64) {
        self.acc = 0;
        self.last_t = now;
        self.max = self.last_v;
    }

    pub fn last(&self) -> u64 {
        self.last_v
    }
}

/// A log2 histogram with fixed buckets, so recording never allocates; turned into the
/// report's [`Log2Hist`] (same bucket rule) at the end.
#[derive(Clone, Debug)]
pub struct Hist {
    buckets: [u64; 65],
}

impl Default for Hist {
    fn default() -> Self {
        Hist { buckets: [0; 65] }
    }
}

impl Hist {
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.buckets[Log2Hist::bucket_of(v)] += 1;
    }

    pub fn to_log2(&self) -> Log2Hist {
        let used = self.buckets.iter().rposition(|&n| n > 0).map_or(0, |i| i + 1);
        Log2Hist { buckets: self.buckets[..used].to_vec() }
    }
}

/// One answered probe: round trip and where its time went (ns).
#[derive(Clone, Copy, Debug)]
pub struct ProbeSample {
    /// When the echo request was sent (ns since the start of the simulation).
    pub t_send: u64,
    pub rtt: u64,
    pub wait_qdisc: u64,
    pub wait_ring: u64,
    pub wait_consumer: u64,
}

/// The time series sampled every `sample_interval`: name and unit.
pub const SERIES: [(&str, &str); 4] = [
    ("bql.limit", "units"),
    ("bql.inflight", "units"),
    ("qdisc.backlog_pkts", "packets"),
    ("ring.occupancy", "packets"),
];

#[derive(Default)]
pub struct Metrics {
    pub consumer_pkts: u64,
    /// Flood packets delivered to the sink, per flood.
    pub sink_pkts: Vec<u64>,
    /// Sum of the flood packets' one-way delays (send to delivery), ns.
    pub sink_owd_ns: u128,
    pub probes: Vec<ProbeSample>,
    pub probes_sent: u64,
    pub probes_lost: u64,
    /// Send times of the lost probes (for the RTT time series).
    pub lost_at: Vec<u64>,
    /// The sampled time series (`sample_interval`): sample times and values.
    pub series_t: Vec<u64>,
    pub series: [Vec<u64>; SERIES.len()],
    pub ring_drops: u64,
    pub noqueue_drops: u64,
    pub napi_polls: u64,
    pub napi_work: u64,
    pub napi_full_budget: u64,
    pub bql_completions: u64,
    pub hist_inflight: Hist,
    pub hist_napi_work: Hist,
    pub hist_rtt_us: Hist,
    pub bql_limit: TimeAvg,
    pub bql_inflight: TimeAvg,
    pub qdisc_backlog: TimeAvg,
    pub ring_occupancy: TimeAvg,
    pub findings: Vec<Finding>,
}
