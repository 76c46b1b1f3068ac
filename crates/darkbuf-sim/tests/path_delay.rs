//! netem's delay beyond the wire, drawn per frame: `path.jitter` with tc's
//! distributions (`tabledist()`), `path.reorder` (a frame sent ahead of the delayed
//! ones), `path.ecn` (a loss marks instead of dropping), and random loss with its
//! correlation.

mod common;

use common::{m, run_text};

/// A 100 Mbit NIC, 20 ms each way, a ping every 10 ms, nothing else; 10 s.
const PING: &str = r#"duration = "10s"
warmup = "1s"
[device]
driver = "nic"
rate = "100Mbit"
[qdisc]
kind = "fq_codel"
[path]
delay = "20ms"
jitter = "5ms"
[[traffic]]
kind = "ping"
interval = "10ms"
"#;

/// Uniform jitter: each way's delay is 20 ms ± 5 ms, so the RTT lies in 30..50 ms
/// (plus the hosts' microseconds), averages 40 and has a triangular shape (p99 near
/// 50 - 10 x sqrt(0.02) = 48.6 ms; measured 30.5 / 40.2 / 48.6 / 49.6 ms). A normal
/// table (tc's normal.dist) spreads it as N(40, 7.07): beyond the uniform bounds
/// (measured p99 56.4 ms, min 16.9). Nothing is lost and no invariant breaks.
#[test]
fn jitter_spreads_the_delay_as_the_distribution_says() {
    let uni = run_text(PING, &[]);
    assert!(uni.findings.is_empty(), "{:?}", uni.findings);
    let (min, avg, p99, max) = (m(&uni, "ping.rtt_min_ms"), m(&uni, "ping.rtt_avg_ms"), m(&uni, "ping.rtt_p99_ms"), m(&uni, "ping.rtt_max_ms"));
    assert!(min >= 30.0 && max < 50.5, "uniform: {min}..{max}");
    assert!((39.0..41.0).contains(&avg), "uniform avg {avg}");
    assert!((47.5..49.8).contains(&p99), "uniform p99 {p99}");
    let normal = run_text(PING, &["path.distribution=normal"]);
    let (avg, p99) = (m(&normal, "ping.rtt_avg_ms"), m(&normal, "ping.rtt_p99_ms"));
    assert!((39.0..41.0).contains(&avg), "normal avg {avg}");
    assert!((54.0..59.0).contains(&p99), "normal p99 {p99}: 40 + 2.33 x 7.07 = 56.5");
    assert!(m(&normal, "ping.rtt_min_ms") < 30.0 && m(&normal, "ping.rtt_max_ms") > 50.0);
    assert_eq!(m(&normal, "ping.loss_pct"), 0.0);
}

/// `reorder 25%` (gap 1): a quarter of the frames each way skip the delay
/// (`path.reordered`, netem's requeues). A probe reordered both ways comes back in
/// microseconds, one reordered one way in 20 ms.
#[test]
fn reorder_sends_a_share_of_frames_ahead() {
    let r = run_text(PING, &["path.jitter=0ms", "path.reorder=25%"]);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    // Each probe is two frames, a request and a reply (measured: 524 of 1992).
    let share = m(&r, "path.reordered") / (2.0 * m(&r, "ping.probes"));
    assert!((0.21..0.29).contains(&share), "reordered share {share}");
    assert!(m(&r, "ping.rtt_min_ms") < 1.0);
    let avg = m(&r, "ping.rtt_avg_ms");
    // 0.75 x 40 ms on average: 30 ms.
    assert!((28.0..32.0).contains(&avg), "avg {avg}");
}

/// netem's `ecn`: with an ECN-capable TCP, a loss marks the data frames CE instead of
/// dropping them (`path.marks`), so nothing is retransmitted; only the ACKs (Not-ECT)
/// are dropped. Without it the same draws drop data and TCP retransmits.
#[test]
fn ecn_marks_what_the_loss_would_drop() {
    let tcp = PING.replace("jitter = \"5ms\"\n", "loss = \"1%\"\n").replace("kind = \"ping\"\ninterval = \"10ms\"", "kind = \"tcp\"\necn = true");
    let marked = run_text(&tcp, &["path.ecn=true"]);
    assert!(marked.findings.is_empty(), "{:?}", marked.findings);
    assert!(m(&marked, "path.marks") > 10.0);
    assert_eq!(m(&marked, "tcp.retrans"), 0.0);
    let dropped = run_text(&tcp, &[]);
    assert!(!dropped.metrics.contains_key("path.marks"));
    assert!(m(&dropped, "tcp.retrans") > 10.0);
}

/// Without the new keys nothing changes: a zero jitter and no reorder is the path
/// without them (the golden set covers the rest).
#[test]
fn a_path_without_jitter_is_unchanged() {
    let fixed = PING.replace("jitter = \"5ms\"\n", "");
    let a = run_text(&fixed, &["duration=2s"]);
    let b = run_text(&fixed, &["duration=2s", "path.jitter=0ms"]);
    assert_eq!(serde_json::to_string(&a.metrics).unwrap(), serde_json::to_string(&b.metrics).unwrap());
    assert!(!a.metrics.contains_key("path.reordered"));
}

/// One cubic flow through 10 ms ± 1 ms each way at 100 Mbit: the jitter is wider than
/// the frame spacing (121 us), so segments arrive out of order. TCP detects it
/// (`tcp.reord_seen`, `reordering` above 3), RACK then waits min_rtt/4 before it calls
/// a segment lost, and cwnd grows on SACKs too: nothing is retransmitted and the flow
/// fills the link (measured 94.1 Mbit/s, as without the jitter; 6.3 Mbit/s with 160
/// spurious retransmissions before the model had RACK's reordering window).
#[test]
fn tcp_tolerates_reordering_from_a_small_jitter() {
    let r = run_text(&tcp_through("jitter = \"1ms\"\n"), &[]);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    assert!(m(&r, "tcp.reord_seen") > 100.0);
    assert!(m(&r, "tcp.flow.0.reordering") > 3.0);
    assert_eq!(m(&r, "tcp.retrans"), 0.0);
    assert!(m(&r, "tcp.goodput_mbps") > 85.0, "goodput {}", m(&r, "tcp.goodput_mbps"));
}

/// A normal jitter of 5 ms each way reorders by up to about 30 ms, more than RACK's
/// window covers at first, so RACK retransmits what was only overtaken. The receiver
/// D-SACKs the copies that arrive twice (each adds a step to RACK's window), and a
/// recovery whose every retransmission was D-SACKed is undone (measured: 63
/// retransmits, 30 segments D-SACKed, 8 recoveries undone).
#[test]
fn spurious_retransmissions_are_dsacked_and_undone() {
    let r = run_text(&tcp_through("jitter = \"5ms\"\ndistribution = \"normal\"\n"), &[]);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    let (retrans, dsacks, undos) = (m(&r, "tcp.retrans"), m(&r, "tcp.dsack_dups"), m(&r, "tcp.undos"));
    assert!(retrans > 0.0 && dsacks > 0.0 && dsacks <= retrans, "{retrans} retransmitted, {dsacks} D-SACKed");
    assert!(undos > 0.0, "{undos} undone");
}

/// `reorder 25% gap 5`: a fifth of the frames jump the 10 ms delay. RACK's RTT is that
/// of the latest ACK's cumulatively ACKed segment, taken after its SACKs as the kernel
/// orders them, so an early SACK does not make RACK call the overtaken segments lost:
/// the flow keeps the link (measured 94.1 Mbit/s, no retransmission; 3.2 Mbit/s and 231
/// spurious retransmissions with the two in the other order).
#[test]
fn reordering_ahead_of_the_delay_costs_nothing() {
    let r = run_text(&tcp_through("reorder = \"25%\"\ngap = 5\n"), &[]);
    assert!(m(&r, "path.reordered") > 1000.0);
    assert!(m(&r, "tcp.goodput_mbps") > 90.0, "goodput {}", m(&r, "tcp.goodput_mbps"));
}

/// `PING`'s host with one cubic flow and no ping, through 10 ms each way and `extra`.
fn tcp_through(extra: &str) -> String {
    PING.replace("delay = \"20ms\"\njitter = \"5ms\"\n", &format!("delay = \"10ms\"\n{extra}")).replace("kind = \"ping\"\ninterval = \"10ms\"", "kind = \"tcp\"")
}
