//! The three-way handshake (`handshake = true`, `sock/tcp/connect.rs`): the SYN's
//! round trip over an idle path is each flow's `tcp_min_rtt()`, so every flow builds
//! full-size TSO skbs (`tcp_tso_autosize()` with `tcp_tso_rtt_log`) and TSQ lets each
//! keep two of them in a shared FIFO: the queue grows with the number of flows, as the
//! kernel's does (issue 51, item 9: 5.38, 10.11 and 19.56 skbs in htb's pfifo for 1,
//! 2 and 4 cubic flows on this host's 6.18 kernel).

mod common;

use common::{m, run_text};

fn fifo(flows: u32, handshake: bool) -> String {
    format!(
        r#"duration = "4s"
warmup = "1s"
[device]
driver = "veth"
tx_queues = 1
napi = "threaded"
backpressure = true
[qdisc]
kind = "htb"
default = "10"
[[qdisc.class]]
classid = "1:10"
rate = "20mbit"
qdisc = "pfifo"
[[traffic]]
kind = "tcp"
cc = "cubic"
flows = {flows}
handshake = {handshake}
[[traffic]]
kind = "ping"
interval = "20ms"
"#
    )
}

/// With the handshake, four flows keep about four times one flow's skbs in the FIFO
/// (each flow's TSQ share is the same two 64 KB skbs); started established, the later
/// flows took their first RTT sample behind the others' initial windows, built smaller
/// skbs and kept a fraction of that.
#[test]
fn each_flow_keeps_its_own_share_of_a_shared_fifo() {
    let one = m(&run_text(&fifo(1, true), &[]), "qdisc.backlog_avg_pkts");
    let four = run_text(&fifo(4, true), &[]);
    let (four_q, four_ping) = (m(&four, "qdisc.backlog_avg_pkts"), m(&four, "ping.rtt_avg_ms"));
    assert!(four_q >= 3.3 * one && four_q <= 4.2 * one, "4 flows {four_q} skbs against 1 flow's {one}");
    // 19.6 skbs of about 30 KB at 20 Mbit: the ping waits over 200 ms.
    assert!(four_ping > 200.0, "ping {four_ping} ms behind four flows");
    let established = m(&run_text(&fifo(4, false), &[]), "qdisc.backlog_avg_pkts");
    assert!(established < 2.5 * one, "started established: {established} skbs against {one}");
    // The handshake changes nothing for one flow: its first data ACK's RTT is also
    // that of an idle path.
    let one_established = m(&run_text(&fifo(1, false), &[]), "qdisc.backlog_avg_pkts");
    assert!((one_established - one).abs() < 0.05 * one, "1 flow: {one_established} and {one}");
}

/// A handshake run is deterministic, and its flows carry data (the SYN-ACK woke them).
#[test]
fn handshake_runs_are_deterministic() {
    let a = run_text(&fifo(2, true), &[]);
    let b = run_text(&fifo(2, true), &[]);
    assert_eq!(format!("{:?}", a.metrics), format!("{:?}", b.metrics));
    assert!(m(&a, "tcp.goodput_mbps") > 18.0, "{}", m(&a, "tcp.goodput_mbps"));
}

/// `tcp.flow.N.min_rtt_ms` (ss -ti's minrtt:) is what sizes the skbs: with the
/// handshake every flow's is the SYN's idle round trip on this veth (under 0.1 ms:
/// `tcp_min_rtt() >> tcp_tso_rtt_log` is 0, the full 64 KB bonus); started
/// established, the later flows' first sample waited behind the others' initial
/// windows (milliseconds at 20 Mbit/s).
#[test]
fn min_rtt_is_the_syns_round_trip() {
    let hs = run_text(&fifo(4, true), &[]);
    let est = run_text(&fifo(4, false), &[]);
    for f in 0..4 {
        let v = m(&hs, &format!("tcp.flow.{f}.min_rtt_ms"));
        assert!(v > 0.0 && v < 0.1, "flow {f}: min RTT {v} ms with the handshake");
    }
    let later = (1..4).map(|f| m(&est, &format!("tcp.flow.{f}.min_rtt_ms"))).fold(0.0, f64::max);
    assert!(later > 1.0, "started established, the later flows' min RTT: {later} ms");
}
