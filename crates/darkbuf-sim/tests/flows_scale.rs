//! Flows at scale (issue 54): the per-flow goodput's spread (nearest-rank percentiles
//! and Jain's index) from ten flows up, and the per-flow series and metrics left out
//! above their documented counts while the aggregates stay.

mod common;

use common::{m, run_text};
use darkbuf_scenario::limits::{PER_FLOW_METRICS_MAX, PER_FLOW_SERIES_MAX};

fn flows(n: u32, duration: &str) -> String {
    format!(
        r#"duration = "{duration}"
warmup = "100ms"
[device]
driver = "nic"
rate = "100Mbit"
[qdisc]
kind = "fq_codel"
[path]
delay = "2ms"
[[traffic]]
kind = "tcp"
flows = {n}
"#
    )
}

/// The aggregates are what the per-flow metrics give: the nearest-rank percentiles of
/// the flows' goodput and (sum x)^2 / (n sum x^2), for any number of flows.
#[test]
fn aggregates_are_the_per_flow_goodputs_spread() {
    let r = run_text(&flows(12, "1s"), &[]);
    let mut g: Vec<f64> = (0..12).map(|i| m(&r, &format!("tcp.flow.{i}.goodput_mbps"))).collect();
    g.sort_by(f64::total_cmp);
    // Nearest rank of 12: p1 -> 1st, p10 -> 2nd, p50 -> 6th, p90 -> 11th, p99 -> 12th.
    for (p, rank) in [(1, 1), (10, 2), (50, 6), (90, 11), (99, 12)] {
        assert_eq!(m(&r, &format!("tcp.flow_goodput_p{p}_mbps")), g[rank - 1], "p{p}");
    }
    let (sum, sq): (f64, f64) = (g.iter().sum(), g.iter().map(|x| x * x).sum());
    let jain = m(&r, "tcp.flow_jain");
    assert!((jain - sum * sum / (12.0 * sq)).abs() < 1e-12, "{jain}");
    assert!(jain > 1.0 / 12.0 && jain <= 1.0, "{jain}");
    assert!(g[0] > 0.0, "every flow sends: {g:?}");

    // Four flows: nearest rank of 4, p10 -> 1st (the slowest), p50 -> 2nd, p90 -> 4th
    // (the fastest); one flow: its own goodput everywhere and Jain's index 1.
    let r = run_text(&flows(4, "300ms"), &[]);
    let mut g: Vec<f64> = (0..4).map(|i| m(&r, &format!("tcp.flow.{i}.goodput_mbps"))).collect();
    g.sort_by(f64::total_cmp);
    for (p, rank) in [(10, 1), (50, 2), (90, 4)] {
        assert_eq!(m(&r, &format!("tcp.flow_goodput_p{p}_mbps")), g[rank - 1], "p{p}");
    }
    let r = run_text(&flows(1, "300ms"), &[]);
    assert_eq!(m(&r, "tcp.flow_goodput_p50_mbps"), m(&r, "tcp.flow.0.goodput_mbps"));
    assert_eq!(m(&r, "tcp.flow_jain"), 1.0);
}

/// Past PER_FLOW_SERIES_MAX flows no flow has its series (the metrics stay); past
/// PER_FLOW_METRICS_MAX no flow has its metrics either, and the aggregates describe
/// them all.
#[test]
fn per_flow_series_and_metrics_stop_at_their_counts() {
    let n = PER_FLOW_SERIES_MAX + 1;
    let r = run_text(&flows(n, "200ms"), &[]);
    assert!(r.metrics.contains_key(&format!("tcp.flow.{}.goodput_mbps", n - 1)));
    assert!(!r.timeseries.keys().any(|k| k.starts_with("tcp.flow.")), "no per-flow series");
    assert!(r.timeseries.contains_key("bql.limit"), "the sampled series stay");

    let n = PER_FLOW_METRICS_MAX + 1;
    let r = run_text(&flows(n, "100ms"), &[]);
    assert!(!r.metrics.keys().any(|k| k.starts_with("tcp.flow.")), "no per-flow metrics");
    for k in ["tcp.goodput_mbps", "tcp.flow_goodput_p50_mbps", "tcp.flow_jain", "tcp.retrans"] {
        assert!(r.metrics.contains_key(k), "{k}");
    }
}

/// A flood of 100,000 flows (issue 54: `flows` up to at least 100,000 in one entry) is
/// 100,000 sockets to fq, which keys its flows on `skb->sk`: an unlimited flood into a
/// 100 Mbit/s NIC whose fq may hold 200,000 packets, so that no datagram takes the
/// empty qdisc's fast path (6.7+) or meets a full one, and each flow's first datagram
/// creates its fq flow; none is collected (`fq_gc()` takes flows detached for 3 s).
#[test]
fn a_flood_of_100000_flows_is_100000_fq_flows() {
    let text = r#"duration = "2s"
warmup = "0s"
[device]
driver = "nic"
rate = "100Mbit"
[qdisc]
kind = "fq"
limit = 200000
[[traffic]]
kind = "udp"
sndbuf = 4096
flows = 100000
"#;
    let r = run_text(text, &[]);
    assert_eq!(m(&r, "qdisc.flows"), 100_000.0);
    let pps = m(&r, "sink.pps");
    assert!(pps > 0.95 * 100e6 / (1442.0 * 8.0), "the link is full: {pps}");
}

/// A TCP socket and a flood's flow are two fq flows: TCP's `skb->sk` (bit 31 with the
/// socket's index) is apart from every flood's (`flow_sk()`). It was `0x1_0000 + s`
/// until 2026-12-03, which `[[traffic]]` entry 1's flow `s - 1` shared: here the flood
/// (entry 1, flow 0) and TCP socket 1, one fq flow of 2.
#[test]
fn tcp_and_flood_sockets_are_apart_in_fq() {
    let text = r#"duration = "200ms"
warmup = "0s"
[device]
driver = "nic"
rate = "100Mbit"
[qdisc]
kind = "fq"
[[traffic]]
kind = "tcp"
flows = 2
[[traffic]]
kind = "udp"
rate = "10Mbit"
"#;
    let r = run_text(text, &[]);
    assert_eq!(m(&r, "qdisc.flows"), 3.0);
}

/// Issue 54: fq_codel's 1024 hashed buckets against cake's 1024 queues in 8-way sets
/// (`cake_hash()`), 300 bulk flows at 100 Mbit/s. Hashed directly, 300 flows in 1024
/// buckets leave about a quarter of them sharing one (1 - (1023/1024)^299 = 0.25): a
/// shared bucket's flows split one flow's share, and the spread shows it. In 128 sets of
/// 8, 300 flows (2.3 per set) find a free way every time: no collision, and every flow
/// its share.
#[test]
fn cakes_sets_keep_flows_apart_where_fq_codels_buckets_collide() {
    let text = |kind: &str| {
        format!(
            "duration = \"5s\"\nwarmup = \"1s\"\n[device]\ndriver = \"nic\"\nrate = \"100Mbit\"\n[qdisc]\nkind = \"{kind}\"\n\
             [path]\ndelay = \"5ms\"\n[[traffic]]\nkind = \"tcp\"\nflows = 300\n"
        )
    };
    let (fq_codel, cake) = (run_text(&text("fq_codel"), &[]), run_text(&text("cake"), &[]));
    assert_eq!(m(&cake, "qdisc.way_collisions"), 0.0);
    let (jain_fqc, jain_cake) = (m(&fq_codel, "tcp.flow_jain"), m(&cake, "tcp.flow_jain"));
    assert!(jain_cake > 0.99 && jain_fqc < jain_cake - 0.03, "Jain: fq_codel {jain_fqc}, cake {jain_cake}");
    let (p1_fqc, p1_cake) = (m(&fq_codel, "tcp.flow_goodput_p1_mbps"), m(&cake, "tcp.flow_goodput_p1_mbps"));
    assert!(p1_fqc < 0.5 * p1_cake, "the slowest 1%: fq_codel {p1_fqc}, cake {p1_cake} Mbit/s");
    assert!(m(&fq_codel, "qdisc.new_flow_count") > 0.0, "fq_codel's buckets empty and come back");
}
