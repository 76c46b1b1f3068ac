//! What a run measures, accumulated only inside the measured window
//! (`warmup .. warmup + duration`).

use darkbuf_report::{Finding, Log2Hist};

/// A time-weighted average of a piecewise-constant quantity (queue depths, limits).
#[derive(Clone, Debug, Default)]
pub struct TimeAvg {
    last_t: u64,
    last_v: f64,
    acc: f64,
    pub max: f64,
}

impl TimeAvg {
    /// The quantity changes to `v` at time `now`; only time at or after `start` counts.
    #[inline]
    pub fn set(&mut self, now: u64, start: u64, v: f64) {
        if now > start {
            let from = self.last_t.max(start);
            if now > from {
                self.acc += self.last_v * (now - from) as f64;
            }
            if v > self.max {
                self.max = v;
            }
        }
        self.last_t = now;
        self.last_v = v;
    }

    pub fn mean(&self, start: u64, end: u64) -> f64 {
        let mut acc = self.acc;
        let from = self.last_t.max(start);
        if end > from {
            acc += self.last_v * (end - from) as f64;
        }
        if end > start {
            acc / (end - start) as f64
        } else {
            0.0
        }
    }

    pub fn last(&self) -> f64 {
        self.last_v
    }
}

/// One answered probe: round trip and where its time went (ns).
#[derive(Clone, Copy, Debug)]
pub struct ProbeSample {
    pub rtt: u64,
    pub wait_qdisc: u64,
    pub wait_ring: u64,
    pub wait_consumer: u64,
}

#[derive(Default)]
pub struct Metrics {
    pub consumer_pkts: u64,
    /// Flood packets delivered to the sink, per flood.
    pub sink_pkts: Vec<u64>,
    pub probes: Vec<ProbeSample>,
    pub probes_sent: u64,
    pub probes_lost: u64,
    pub ring_drops: u64,
    pub noqueue_drops: u64,
    pub napi_polls: u64,
    pub napi_work: u64,
    pub napi_full_budget: u64,
    pub bql_completions: u64,
    pub hist_inflight: Log2Hist,
    pub hist_napi_work: Log2Hist,
    pub hist_rtt_us: Log2Hist,
    pub bql_limit: TimeAvg,
    pub bql_inflight: TimeAvg,
    pub qdisc_backlog: TimeAvg,
    pub ring_occupancy: TimeAvg,
    pub findings: Vec<Finding>,
}
