//! Departure times set outside TCP's own pacing (issue 53): `max_pacing_rate`
//! (`SO_MAX_PACING_RATE`) on a UDP flood's sockets and on a TCP flow, and `txtime` (an EDT
//! rate limiter stamping `skb->tstamp`), into fq, where fq's `flows_plimit` and
//! `horizon_drops` report what they cost.

mod common;

use common::{m, run_text};

fn udp_fq(qdisc: &str, extra: &str) -> String {
    format!(
        r#"duration = "3s"
warmup = "1s"
[device]
driver = "veth"
tx_queues = 1
[qdisc]
kind = "{qdisc}"
[[traffic]]
kind = "udp"
size = 1400
rate = "100Mbit"
flows = 4
sndbuf = "8MiB"
{extra}
"#
    )
}

/// fq paces each of the four sockets at its SO_MAX_PACING_RATE (10 Mbit/s of
/// `qdisc_pkt_len()`, 1442-byte frames: 866.8 pps each), and the 25 Mbit/s each flow is
/// offered overflows its flow queue (`flow_limit` 100): `flows_plimit` counts the drops.
/// Under pfifo the rate means nothing (only fq and TCP read `sk_pacing_rate`).
#[test]
fn fq_paces_a_udp_socket_at_its_max_pacing_rate() {
    let r = run_text(&udp_fq("fq", "max_pacing_rate = \"10Mbit\""), &[]);
    let want = 4.0 * 10e6 / (1442.0 * 8.0);
    let pps = m(&r, "sink.pps");
    assert!((pps - want).abs() < 0.01 * want, "sink {pps} pps, paced {want}");
    assert!(m(&r, "qdisc.flows_plimit") > 0.0);
    assert!(m(&r, "qdisc.throttled") > 0.0);
    let fifo = run_text(&udp_fq("pfifo", "max_pacing_rate = \"10Mbit\""), &[]);
    assert!(m(&fifo, "sink.pps") > 2.0 * want, "pfifo does not pace: {} pps", m(&fifo, "sink.pps"));
}

/// With EDT stamps at 10 Mbit/s per flow and 25 Mbit/s offered, each flow's schedule runs
/// ahead of the clock by 1.5 s per second: fq's default 10 s horizon keeps everything (the
/// flow queue fills with far-future datagrams: flows_plimit), a 1 s horizon drops what is
/// stamped beyond it (`horizon_drops`) once the schedule is a second ahead.
#[test]
fn fq_holds_txtime_stamps_to_its_horizon() {
    let r = run_text(&udp_fq("fq", "txtime = \"10Mbit\""), &[]);
    assert_eq!(m(&r, "qdisc.horizon_drops"), 0.0);
    assert!(m(&r, "qdisc.flows_plimit") > 0.0);
    assert!(m(&r, "sink.owd_avg_ms") > 500.0, "datagrams wait for their stamps: {} ms", m(&r, "sink.owd_avg_ms"));
    let h = run_text(&udp_fq("fq", "txtime = \"10Mbit\""), &["qdisc.horizon=1s"]);
    assert!(m(&h, "qdisc.horizon_drops") > 0.0);
    // At the flood's own rate the stamps never run ahead: nothing is throttled for long.
    let even = run_text(&udp_fq("fq", "txtime = \"25Mbit\""), &[]);
    assert_eq!(m(&even, "qdisc.horizon_drops"), 0.0);
    assert_eq!(m(&even, "qdisc.flows_plimit"), 0.0);
}

/// A TCP flow's SO_MAX_PACING_RATE caps sk_pacing_rate: 50 Mbit/s of payload over a
/// 1 Gbit NIC, with fq (EDT) and, without fq, by TCP's own pacing (SK_PACING_NEEDED),
/// for CUBIC and BBR alike.
#[test]
fn tcp_max_pacing_rate_caps_the_flow() {
    for cc in ["cubic", "bbr"] {
        for qdisc in ["fq", "pfifo_fast"] {
            let text = format!(
                "duration = \"3s\"\nwarmup = \"1s\"\n[device]\ndriver = \"nic\"\nrate = \"1Gbit\"\n[qdisc]\nkind = \"{qdisc}\"\n\
                 [path]\ndelay = \"5ms\"\n[[traffic]]\nkind = \"tcp\"\ncc = \"{cc}\"\nmax_pacing_rate = \"50Mbit\"\n"
            );
            let r = run_text(&text, &[]);
            let g = m(&r, "tcp.goodput_mbps");
            assert!((49.0..=50.1).contains(&g), "{cc} {qdisc}: {g} Mbit/s");
        }
    }
}
