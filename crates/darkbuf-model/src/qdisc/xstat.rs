//! What each qdisc xstat is: a counter, a gauge, or a time averaged over queues.
//!
//! The kernel dumps a qdisc's private statistics (`->dump_stats()`, e.g.
//! `fq_dump_stats()` filling `struct tc_fq_qd_stats`) as one blob, and `tc -s` prints
//! them below the basic counters. Some of them count events since the qdisc was created
//! (fq's `throttled`, fq_codel's `drop_overlimit`); others describe the state at the
//! moment of the dump (fq's `flows`, fq_codel's `new_flows_len`, cake's `memory_used`).
//! Both backends read them at the edges of the measured window: a counter is reported
//! as its difference over the window, a gauge as its value at the window's end. This
//! module is the one place that says which is which, by the simulator's names
//! ([`crate::qdisc::Qdisc::xstats`]), so that the simulator and the kernel backend
//! report the same metric the same way.

/// How an xstat becomes a metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XstatKind {
    /// Counts events since the qdisc was created: reported as the difference over the
    /// measured window, summed over the qdiscs of the device.
    Counter,
    /// A state at the moment of the dump: reported as the value at the window's end,
    /// summed over the qdiscs of the device (mq's children each hold their own flows).
    Gauge,
    /// One qdisc's time (fq's unthrottle-latency EWMA, codel's last sojourn, pie's drop
    /// probability and delay): a gauge averaged, not summed, over the qdiscs that sent
    /// in the window.
    Mean,
}

/// Gauges by the simulator's name (cake's per-tin ones are in [`TIN_GAUGES`]).
const GAUGES: &[&str] = &[
    "maxpacket", "count", "lastcount", "drop_next", "new_flows_len", "old_flows_len",
    "memory_used", "memory_limit", "flows", "inactive_flows", "throttled_flows",
    "time_next_delayed_flow", "capacity_estimate", "max_pkt_len", "flow_quantum",
    "sparse_flows", "bulk_flows", "unresponsive_flows", "tokens", "ctokens", "dropping",
    "band0_pkts", "band1_pkts", "band2_pkts", "maxq",
    // cake_dump_stats(): lifetime minima and maxima, the rate and an average.
    "min_network_size", "max_network_size", "min_adj_size", "max_adj_size", "avg_hdr_offset",
    "threshold_rate",
];

/// Times of one qdisc, averaged over queues rather than summed.
const MEANS: &[&str] = &["unthrottle_latency_ns", "ldelay", "prob", "delay"];

/// cake's per-tin stats (`tinN_<name>`) that are states, not counts
/// (`cake_dump_stats()`'s `TCA_CAKE_TIN_STATS_*` other than the packet, byte, drop,
/// mark and hash counters).
const TIN_GAUGES: &[&str] = &[
    "threshold_rate", "backlog_bytes", "target_us", "interval_us", "peak_delay_us",
    "avg_delay_us", "base_delay_us", "sparse_flows", "bulk_flows", "unresponsive_flows",
    "max_pkt_len", "flow_quantum",
];

/// Whether the xstat `name` (the simulator's name, as [`crate::qdisc::Qdisc::xstats`]
/// gives it) is a counter, a gauge or a mean.
pub fn xstat_kind(name: &str) -> XstatKind {
    if MEANS.contains(&name) {
        return XstatKind::Mean;
    }
    if GAUGES.contains(&name) {
        return XstatKind::Gauge;
    }
    if let Some(rest) = name.strip_prefix("tin") {
        let field = rest.trim_start_matches(|c: char| c.is_ascii_digit());
        if let Some(field) = field.strip_prefix('_') {
            if TIN_GAUGES.contains(&field) {
                return XstatKind::Gauge;
            }
        }
    }
    XstatKind::Counter
}

/// The metric name of an xstat (after `qdisc.`): tc's, where it differs from the
/// kernel's struct field (`tc -s qdisc` prints fq's `unthrottle_latency_ns` as
/// `latency`, in ns).
pub fn xstat_metric(name: &str) -> &str {
    match name {
        "unthrottle_latency_ns" => "latency_ns",
        other => other,
    }
}

/// An xstat's value as a metric: pie's `prob` is the kernel's fixed point (a fraction
/// of 2^64) and is reported as the fraction `tc -s` prints.
pub fn xstat_value(name: &str, v: u64) -> f64 {
    match name {
        "prob" => v as f64 / u64::MAX as f64,
        _ => v as f64,
    }
}

/// The xstats of a qdisc with children (htb's leaves, tbf's and netem's child) as the
/// backends report a device's: `tc -s qdisc show` dumps each child as a qdisc of its
/// own, and a device's xstats are summed over its qdiscs, a [`XstatKind::Mean`]
/// averaged over the qdiscs that have it (the kernel backend's
/// `qdisc_xstat_metrics()`). `own` is the parent's; a child's xstat of the same name as
/// another child's adds to it.
pub fn with_children<'a>(mut own: Vec<(&'static str, u64)>, children: impl IntoIterator<Item = &'a dyn super::Qdisc>) -> Vec<(&'static str, u64)> {
    // (name, sum, qdiscs): pie's `prob` is a fraction of 2^64, so sum in u128.
    let mut means: Vec<(&'static str, u128, u128)> = Vec::new();
    for child in children {
        for (name, v) in child.xstats() {
            if xstat_kind(name) == XstatKind::Mean {
                match means.iter_mut().find(|(n, ..)| *n == name) {
                    Some(m) => (m.1, m.2) = (m.1 + v as u128, m.2 + 1),
                    None => means.push((name, v as u128, 1)),
                }
            } else {
                match own.iter_mut().find(|(n, _)| *n == name) {
                    Some(o) => o.1 += v,
                    None => own.push((name, v)),
                }
            }
        }
    }
    own.extend(means.into_iter().map(|(name, sum, n)| (name, (sum / n) as u64)));
    own
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        assert_eq!(xstat_kind("throttled"), XstatKind::Counter);
        assert_eq!(xstat_kind("flows_plimit"), XstatKind::Counter);
        assert_eq!(xstat_kind("flows"), XstatKind::Gauge);
        assert_eq!(xstat_kind("unthrottle_latency_ns"), XstatKind::Mean);
        assert_eq!(xstat_kind("tin0_sent_packets"), XstatKind::Counter);
        assert_eq!(xstat_kind("tin3_avg_delay_us"), XstatKind::Gauge);
        assert_eq!(xstat_kind("tin7_way_collisions"), XstatKind::Counter);
        assert_eq!(xstat_kind("class 1:10 lends"), XstatKind::Counter);
        assert_eq!(xstat_kind("min_network_size"), XstatKind::Gauge);
        assert_eq!(xstat_metric("unthrottle_latency_ns"), "latency_ns");
        assert_eq!(xstat_value("prob", u64::MAX), 1.0);
    }
}
