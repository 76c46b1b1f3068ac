//! The NIC's receive side: what a driver charges for a received frame (a router's qdisc
//! memory), and RX interrupt moderation on the vector that also reaps TX completions.

mod common;
use common::{m, run, run_text};

/// A 10 Gbit mlx5 port under one cubic flow through pfifo_fast (unpaced: TCP Small
/// Queues holds `tcp_limit_output_bytes` per socket below the stack), TX completions
/// moderated to 400 µs from the first completion (CQE mode).
const LATE: &str = r#"
name = "late-completions"
duration = "600ms"
warmup = "200ms"
[machine]
cpus = 2
[device]
driver = "nic"
rate = "10Gbit"
model = "mlx5"
[device.coalesce]
tx_usecs = 400
tx_frames = 0
cqe_mode = true
[qdisc]
kind = "pfifo_fast"
[path]
delay = "50us"
[[traffic]]
kind = "tcp"
cc = "cubic"
limit_output_bytes = "128KiB"
"#;

/// TSQ with late completions (the 2015 netdev report behind "tcp: double default TSQ
/// output bytes limit"): a socket can have `tcp_limit_output_bytes` between the stack
/// and the completion, so it sends at most limit / completion latency: 128 KiB per
/// 400 µs is 2.62 Gbit/s. With rx-usecs 0 every returning ACK's interrupt reaps the
/// completions at once and the limit never binds; with rx-usecs 400 the vector fires
/// only by moderation, and the bound holds, for 256 KiB too (5.24 Gbit/s).
#[test]
fn late_tx_completions_bound_a_tsq_limited_flow() {
    let bound = |kib: f64| kib * 1024.0 * 8.0 / 400e-6 / 1e6;
    let at_once = run_text(LATE, &[]);
    assert!(m(&at_once, "tcp.goodput_mbps") > 9000.0, "rx-usecs 0: {}", m(&at_once, "tcp.goodput_mbps"));
    let late = run_text(LATE, &["device.coalesce.rx_usecs=400"]);
    let g = m(&late, "tcp.goodput_mbps");
    assert!(g <= bound(128.0) && g >= 0.8 * bound(128.0), "rx-usecs 400: {g} Mbit/s, bound {}", bound(128.0));
    let late256 = run_text(LATE, &["device.coalesce.rx_usecs=400", "traffic.0.limit_output_bytes=256KiB"]);
    let g256 = m(&late256, "tcp.goodput_mbps");
    assert!(g256 <= bound(256.0) && g256 >= 0.8 * bound(256.0), "256 KiB: {g256} Mbit/s, bound {}", bound(256.0));
    // Fewer interrupts, each reaping several completions.
    assert!(m(&late, "nic.tx_irqs_per_s") < 0.5 * m(&at_once, "nic.tx_irqs_per_s"));
}

/// rx-frames fires the interrupt before rx-usecs when that many frames are pending.
#[test]
fn rx_frames_interrupts_before_rx_usecs() {
    let usecs = run_text(LATE, &["device.coalesce.rx_usecs=400"]);
    let frames = run_text(LATE, &["device.coalesce.rx_usecs=400", "device.coalesce.rx_frames=1"]);
    assert!(m(&frames, "tcp.goodput_mbps") > 1.5 * m(&usecs, "tcp.goodput_mbps"));
}

/// The router's qdisc is charged the receive buffers its NIC filled (igb: half a 4 KiB
/// page per frame plus the sk_buff, 2304 bytes for a 1514-byte frame), not the sender's
/// truesize (1448 + 768 = 2216): with GRO and TSO off, fq_codel's memory_used is a
/// whole number of 2304-byte buffers.
#[test]
fn a_routers_qdisc_is_charged_the_receive_buffers() {
    let r = run("router-100mbit.toml", &["duration=3s", "warmup=1s", "qdisc.kind=fq_codel"]);
    let used = m(&r, "qdisc.memory_used");
    assert!(used > 0.0, "memory_used {used}");
    assert_eq!(used % 2304.0, 0.0, "memory_used {used} is not a whole number of 2304-byte buffers");
    assert_ne!(used % 2216.0, 0.0, "memory_used {used} is still the sender's truesize");
}

/// mlx5e's RX DIM (`adaptive_rx`): each receive queue starts at the CQE profile of 8 µs
/// and walks the RX profiles; the far host receiving a 10 Gbit flow is moved to one of
/// them (`peer.rx_usecs`), and without it the metric is absent. The same runs twice
/// give the same figures.
#[test]
fn rx_dim_walks_the_rx_profiles() {
    let on = run_text(LATE, &["device.coalesce.adaptive_rx=true"]);
    let again = run_text(LATE, &["device.coalesce.adaptive_rx=true"]);
    let off = run_text(LATE, &[]);
    let us = m(&on, "peer.rx_usecs");
    assert!([2.0, 8.0, 16.0, 32.0, 64.0].contains(&us), "peer.rx_usecs {us}");
    assert_eq!(us, m(&again, "peer.rx_usecs"));
    assert_eq!(m(&on, "tcp.goodput_mbps"), m(&again, "tcp.goodput_mbps"));
    assert!(!off.metrics.contains_key("peer.rx_usecs"));
}
