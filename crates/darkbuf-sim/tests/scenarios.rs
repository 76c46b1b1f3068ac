//! Scenario tests for the behaviours issues 3 and 5 ask the simulator to show, run from
//! the repository's scenario files (shortened; every claim is a steady state).

use darkbuf_report::RunRecord;
use darkbuf_sim::{simulate, Profile};
use std::path::PathBuf;

fn run(file: &str, set: &[&str]) -> RunRecord {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(file);
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let scn = darkbuf_scenario::load(&path, &set).expect("scenario loads");
    let profile = Profile::load(&scn.machine.profile).unwrap();
    let (rec, _) = simulate(&scn, &profile, scn.seed).expect("simulates");
    assert!(rec.findings.is_empty(), "invariant findings: {:?}", rec.findings);
    rec
}

fn m(r: &RunRecord, k: &str) -> f64 {
    r.metrics.get(k).copied().flatten().unwrap_or_else(|| panic!("metric {k} missing"))
}

/// Stock tap: the ring tail-drops, the qdisc stays empty, and the flood's packets wait
/// about ring size / reader rate (a probe rarely finds a free slot in the full ring, so
/// the delay is the flood's one-way delay, as the kernel notes' tapreader measures it).
#[test]
fn tap_stock_drops_in_the_ring() {
    let r = run("tap-reader.toml", &["duration=3s", "warmup=1s"]);
    assert!(m(&r, "ring.drops") > 0.0);
    assert_eq!(m(&r, "qdisc.drops"), 0.0);
    assert!(m(&r, "qdisc.backlog_avg_pkts") < 1.0);
    let expected_ms = 1000.0 / m(&r, "consumer.pps") * 1e3;
    let owd = m(&r, "sink.owd_avg_ms");
    assert!((owd / expected_ms - 1.0).abs() < 0.15, "one-way delay {owd} ms vs ring/rate {expected_ms} ms");
}

/// IFF_BACKPRESSURE with a qdisc: no ring drops, the drops move into the qdisc, and the
/// reader keeps its rate (within 10% of stock).
#[test]
fn tap_backpressure_moves_drops_into_the_qdisc() {
    let stock = run("tap-reader.toml", &["duration=3s", "warmup=1s"]);
    let bp = run("tap-reader.toml", &["duration=3s", "warmup=1s", "device.backpressure=true"]);
    assert_eq!(m(&bp, "ring.drops"), 0.0);
    assert!(m(&bp, "qdisc.drops") > 0.0);
    assert!(m(&bp, "txq.drv_xoff") > 0.0);
    let (a, b) = (m(&stock, "consumer.pps"), m(&bp, "consumer.pps"));
    assert!((b / a - 1.0).abs() < 0.10, "reader {b} pps with backpressure vs {a} stock");
}

/// The wake threshold trades stop/wake cycles against ring occupancy: waking on any
/// free slot keeps the ring full and stops the queue most often.
#[test]
fn tap_wake_threshold_trade_off() {
    let early = run("tap-wake-threshold.toml", &["duration=1s", "device.wake_threshold=0.0"]);
    let late = run("tap-wake-threshold.toml", &["duration=1s", "device.wake_threshold=1.0"]);
    assert!(m(&early, "txq.drv_xoff") > 3.0 * m(&late, "txq.drv_xoff"));
    assert!(m(&early, "ring.occupancy_avg") > m(&late, "ring.occupancy_avg"));
    assert!(m(&early, "ping.wait_ring_ms") > m(&late, "ping.wait_ring_ms"));
}

/// The seeds' central claim: fq_codel with 13,000 rules, BQL cuts ping RTT at least 5x
/// and the drops happen in the qdisc, where the AQM acts.
#[test]
fn fq_codel_with_bql_at_13000_rules() {
    let no_bql = run("fq_codel-13000.toml", &["duration=4s", "device.bql.limit_min=1073741824"]);
    let bql = run("fq_codel-13000.toml", &["duration=4s"]);
    let (a, b) = (m(&no_bql, "ping.rtt_avg_ms"), m(&bql, "ping.rtt_avg_ms"));
    assert!(a >= 5.0 * b, "RTT {a} ms without BQL vs {b} ms with");
    assert!(m(&bql, "qdisc.drops") > 0.0);
    assert_eq!(m(&bql, "ring.drops"), 0.0);
    assert!(m(&no_bql, "ping.wait_ring_ms") > m(&no_bql, "ping.wait_qdisc_ms"));
    assert!(m(&bql, "ping.wait_ring_ms") < m(&bql, "ping.wait_qdisc_ms"));
}

/// A tbf shaper at 20mbit below the consumer's rate delivers 20 Mbit/s of L2 frames
/// (1400 B payload = 1442 B frames), within 7%.
#[test]
fn tbf_20mbit_shapes_the_bottleneck() {
    let r = run(
        "veth-bql.toml",
        &["duration=3s", "qdisc.kind=tbf", "qdisc.rate=20mbit", "qdisc.burst=32kb", "qdisc.latency=50ms"],
    );
    let bits = m(&r, "sink.pps") * 1442.0 * 8.0;
    assert!((bits / 20e6 - 1.0).abs() < 0.07, "{bits} bit/s through a 20mbit tbf");
    assert!(m(&r, "qdisc.overlimits") > 0.0);
}
