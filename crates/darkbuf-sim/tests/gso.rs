//! `device.tso = false` (`ethtool -K eth0 tso off`): the stack segments GSO skbs in
//! front of the driver (`validate_xmit_skb()` -> `tcp_gso_segment()`), so the ring and
//! BQL see MSS-sized frames and TCP Small Queues gets its budget back segment by
//! segment at TX completion.

mod common;

use common::{m, run_text};

fn nic_tcp(tso: bool, flows: &str) -> String {
    format!(
        r#"duration = "3s"
warmup = "1s"
[device]
driver = "nic"
rate = "100Mbit"
tso = {tso}
[qdisc]
kind = "fq_codel"
[path]
delay = "5ms"
{flows}
[[traffic]]
kind = "ping"
interval = "20ms"
"#
    )
}

const CUBIC: &str = "[[traffic]]\nkind = \"tcp\"\ncc = \"cubic\"\n";

/// The same flow with and without TSO: the wire carries the same frames (the NIC counts
/// segments either way), but without TSO every frame is its own ring entry and BQL
/// object. DQL then sizes its limit to what one 250 µs completion interval drains at
/// 100 Mbit/s (3.1 KB) plus slack, not to whole TSO skbs of 10 segments (15 KB, 1.2 ms
/// of wire each): the limit falls below a third, and the probe waits less.
#[test]
fn segments_reach_the_ring_one_by_one() {
    let tso = run_text(&nic_tcp(true, CUBIC), &[]);
    let gso = run_text(&nic_tcp(false, CUBIC), &[]);
    let (a, b) = (m(&tso, "nic.tx_packets"), m(&gso, "nic.tx_packets"));
    assert!((a - b).abs() / a < 0.01, "frames on the wire: tso {a}, gso {b}");
    assert!(m(&gso, "tcp.goodput_mbps") >= 93.0);
    // Ring entries: skbs of ~10 segments with TSO, frames without.
    assert!(m(&gso, "ring.occupancy_avg") > 4.0 * m(&tso, "ring.occupancy_avg"));
    let (la, lb) = (m(&tso, "bql.limit_avg"), m(&gso, "bql.limit_avg"));
    assert!(lb < la / 3.0, "BQL limit: tso {la} B, gso {lb} B");
    assert!(m(&gso, "ping.rtt_avg_ms") < m(&tso, "ping.rtt_avg_ms"));
}

/// BBR and a CUBIC flow that joins 2 s later, through BQL + fq_codel without TSO: fq_codel
/// serves both flows' queues round robin, and each flow's TSQ budget comes back frame by
/// frame, so both keep a backlog and each gets half the line (94.1 Mbit/s of payload),
/// within 20%, over the 4 s after the join.
#[test]
fn bbr_and_cubic_share_without_tso() {
    let flows = "[[traffic]]\nkind = \"tcp\"\ncc = \"bbr\"\n[[traffic]]\nkind = \"tcp\"\ncc = \"cubic\"\nstart = \"2s\"\n";
    let r = run_text(&nic_tcp(false, flows), &["warmup=3s", "duration=4s"]);
    for f in 0..2 {
        let g = m(&r, &format!("tcp.flow.{f}.goodput_mbps"));
        assert!((0.8 * 47.05..1.2 * 47.05).contains(&g), "flow {f}: {g} Mbit/s");
    }
}

/// Conservation and TSQ's bound hold with software GSO on both hosts, for uploads,
/// downloads and several flows (run_text fails on any invariant finding), and the
/// results are the same for the same seed.
#[test]
fn software_gso_keeps_the_invariants() {
    for (cc, dir, n) in [("cubic", "up", 3), ("bbr", "down", 2), ("reno", "up", 1)] {
        let flows = format!("[[traffic]]\nkind = \"tcp\"\ncc = \"{cc}\"\ndirection = \"{dir}\"\nflows = {n}\n");
        let a = run_text(&nic_tcp(false, &flows), &["duration=1s"]);
        let b = run_text(&nic_tcp(false, &flows), &["duration=1s"]);
        assert!(m(&a, "tcp.goodput_mbps") > 80.0, "{cc} {dir} x{n}");
        assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
    }
}
