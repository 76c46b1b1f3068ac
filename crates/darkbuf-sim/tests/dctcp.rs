//! DCTCP in whole runs (issue 50's proof of the congestion-control interface):
//! `scenarios/dctcp-100mbit.toml`, one queue marking CE above 1 ms of sojourn under htb
//! at 100 Mbit/s, 1 ms each way, checked against the DCTCP analysis (Alizadeh, Javanmard
//! and Prabhakar, SIGMETRICS 2011, section 3): with N synchronized flows, link rate C
//! and marking threshold K (packets), each window settles around W* = (C RTT + K) / N
//! and the queue oscillates just above K. Every expected figure below is computed from
//! the scenario's own settings or from the same run's counters, none typed in from a
//! run. (The analysis's alpha ~ sqrt(2 / W*) is not checked: docs/dctcp.md says why
//! the model's is lower.)

mod common;

use common::{m, run};

/// C in packets per second: 100 Mbit/s of 1514-byte frames (htb counts the frame).
const C_PPS: f64 = 100e6 / 8.0 / 1514.0;
/// The path's round trip without queueing: 1 ms each way.
const RTT_S: f64 = 2e-3;
/// K: 1 ms of sojourn at C.
const K_PKTS: f64 = 1e-3 * C_PPS;

/// One DCTCP flow: the link stays full (goodput at least 97% of the 95.6 Mbit/s that
/// 1448-byte payloads in 1514-byte frames give), the window is W* = C RTT + K = 24.8
/// packets within 15%, and the queue a ping meets is near the 1 ms threshold (0.5-2 ms
/// above the path's 2 ms). Alpha is the moving average of the per-window CE fraction
/// F, so its time average is the run's fraction of CE-echoed deliveries
/// (`tcp.delivered_ce` over the packets delivered) within 25%.
#[test]
fn one_flow_keeps_the_link_full_and_the_queue_at_the_threshold() {
    let r = run("dctcp-100mbit.toml", &["duration=5s", "warmup=2s"]);
    let payload_mbps = 100.0 * 1448.0 / 1514.0;
    let goodput = m(&r, "tcp.goodput_mbps");
    assert!(goodput > 0.97 * payload_mbps, "goodput {goodput} Mbit/s");
    let w_star = C_PPS * RTT_S + K_PKTS;
    let cwnd = m(&r, "tcp.cwnd_avg_pkts");
    assert!((cwnd / w_star - 1.0).abs() < 0.15, "cwnd {cwnd} against W* {w_star:.1}");
    let delivered = goodput * 1e6 * 5.0 / 8.0 / 1448.0;
    let f = m(&r, "tcp.delivered_ce") / delivered;
    let alpha = m(&r, "tcp.dctcp_alpha_avg");
    assert!(f > 0.0 && (alpha / f - 1.0).abs() < 0.25, "alpha {alpha} against F {f:.4}");
    let queue_ms = m(&r, "ping.rtt_avg_ms") - RTT_S * 1e3;
    assert!((0.5..2.0).contains(&queue_ms), "queueing {queue_ms} ms");
    assert_eq!(m(&r, "tcp.retrans"), 0.0, "marks, not drops, keep the queue");
}

/// Four DCTCP flows share the window W* among them (6.2 packets each, within 15%)
/// and still fill the link; reno with classic ECN at the same threshold halves on
/// each window of marks and leaves at least 10% of the link idle.
#[test]
fn flows_share_w_star_and_classic_ecn_underuses_the_link() {
    let short = ["duration=5s", "warmup=2s"];
    let four = run("dctcp-100mbit.toml", &[&short[..], &["traffic.0.flows=4"]].concat());
    let w_star = (C_PPS * RTT_S + K_PKTS) / 4.0;
    let cwnd = m(&four, "tcp.cwnd_avg_pkts");
    assert!((cwnd / w_star - 1.0).abs() < 0.15, "cwnd {cwnd} against W*/N {w_star:.1}");
    let payload_mbps = 100.0 * 1448.0 / 1514.0;
    assert!(m(&four, "tcp.goodput_mbps") > 0.97 * payload_mbps);
    let reno = run("dctcp-100mbit.toml", &[&short[..], &["traffic.0.cc=reno", "traffic.0.ecn=true"]].concat());
    let g = m(&reno, "tcp.goodput_mbps");
    assert!(g < 0.9 * payload_mbps, "reno + ECN {g} Mbit/s");
    assert!(!reno.metrics.contains_key("tcp.dctcp_alpha_avg"), "alpha is DCTCP's own figure");
}
