//! `path.rate`: a bottleneck beyond the wire, as a netem with `rate` and its default
//! 1000-frame limit would make it (the ISP link behind a fast NIC). The local qdisc
//! then never queues; the remote FIFO does, unless the host shapes below the rate.

mod common;

use common::{m, run_text};

/// A 1 Gbit NIC (TSO off) in front of a 20 Mbit path, 5 ms each way, one cubic upload
/// and a ping every 100 ms, fq_codel at home; 20 s after a 5 s warmup.
const REMOTE: &str = r#"duration = "20s"
warmup = "5s"
[device]
driver = "nic"
rate = "1Gbit"
tso = false
[qdisc]
kind = "fq_codel"
[path]
delay = "5ms"
rate = "20Mbit"
[[traffic]]
kind = "tcp"
cc = "cubic"
[[traffic]]
kind = "ping"
interval = "100ms"
"#;

/// The remote FIFO fills: the ping's worst RTT is the 1000 frames' drain time at
/// 20 Mbit/s (605.6 ms) plus the base RTT, the local fq_codel holds nothing, and the
/// flow gets the rate's payload share (20 x 1448 / 1514 = 19.13 Mbit/s). Shaping at
/// home with cake at 95% of the rate moves the queue where cake controls it: the RTT
/// falls to near the base and the path drops nothing.
#[test]
fn a_remote_bottleneck_bloats_until_the_host_shapes_below_it() {
    let fifo = run_text(REMOTE, &[]);
    assert!(fifo.findings.is_empty(), "{:?}", fifo.findings);
    let drain_ms = 1000.0 * 1514.0 * 8.0 / 20e6 * 1e3;
    let p99 = m(&fifo, "ping.rtt_p99_ms");
    assert!((0.9 * (drain_ms + 10.0)..=1.05 * (drain_ms + 10.0)).contains(&p99), "p99 {p99} ms");
    assert!(m(&fifo, "ping.rtt_avg_ms") > 300.0);
    assert!(m(&fifo, "qdisc.backlog_avg_pkts") < 1.0);
    assert!(m(&fifo, "path.limit_drops") > 0.0);
    let share = 20.0 * 1448.0 / 1514.0;
    assert!((m(&fifo, "tcp.goodput_mbps") - share).abs() < 0.01 * share, "goodput {}", m(&fifo, "tcp.goodput_mbps"));

    let shaped = run_text(REMOTE, &["qdisc.kind=cake", "qdisc.bandwidth=19Mbit"]);
    assert!(m(&shaped, "ping.rtt_avg_ms") < 15.0, "shaped ping {}", m(&shaped, "ping.rtt_avg_ms"));
    assert_eq!(m(&shaped, "path.limit_drops"), 0.0);
    assert!(m(&shaped, "tcp.goodput_mbps") > 0.9 * share);
}

/// Without `path.rate` or `path.limit` there is no `path.limit_drops`; a limit alone
/// bounds the delay line.
#[test]
fn a_limit_alone_bounds_the_delay_line() {
    let base = REMOTE.replace("rate = \"20Mbit\"\n", "");
    let r = run_text(&base, &["duration=2s", "warmup=1s"]);
    assert!(!r.metrics.contains_key("path.limit_drops"));
    // 1 Gbit for 5 ms is about 410 frames on the way: a 50-frame limit drops.
    let r = run_text(&base, &["duration=2s", "warmup=1s", "path.limit=50"]);
    assert!(m(&r, "path.limit_drops") > 0.0);
}

/// With TSO on, the path's netem takes the frames the NIC cut each TSO skb into: its
/// limit counts frames, and at the rate they go one by one. A 50-frame limit on the
/// 1 Gbit delay line caps the window near 50 frames per 10 ms RTT (58 Mbit/s) with TSO
/// on as with it off (measured: 48.9 and 49.2 Mbit/s); counted as skbs, 50 TSO skbs
/// would let several times that through. Behind the 20 Mbit rate the run keeps the
/// ping and the goodput of TSO off (measured equal to 0.1%).
#[test]
fn tso_skbs_meet_the_rate_and_the_limit_as_frames() {
    let base = REMOTE.replace("rate = \"20Mbit\"\n", "");
    let short = ["duration=3s", "warmup=1s", "device.tso=true", "path.limit=50"];
    let r = run_text(&base, &short);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    assert!(m(&r, "nic.tx_cqes") < 0.9 * m(&r, "nic.tx_packets"), "TSO skbs went out");
    assert!(m(&r, "path.limit_drops") > 0.0);
    assert!(m(&r, "tcp.goodput_mbps") < 60.0, "goodput {}", m(&r, "tcp.goodput_mbps"));
    let short = ["duration=5s", "warmup=1s"];
    let (on, off) = (run_text(REMOTE, &[short[0], short[1], "device.tso=true"]), run_text(REMOTE, &short));
    assert!(m(&on, "nic.tx_cqes") < 0.9 * m(&on, "nic.tx_packets"), "TSO skbs went out");
    for k in ["ping.rtt_avg_ms", "tcp.goodput_mbps"] {
        assert!((m(&on, k) - m(&off, k)).abs() < 0.01 * m(&off, k), "{k}: TSO on {} against off {}", m(&on, k), m(&off, k));
    }
}
