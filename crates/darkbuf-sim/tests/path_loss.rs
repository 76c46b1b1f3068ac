//! `path.loss`: netem's random loss beyond the wire, each way. A loss-based TCP's
//! throughput then follows Mathis et al. (1997), MSS / RTT x sqrt(3/2) / sqrt(p),
//! which the model was not fitted to; BBR v1 does not take loss as a congestion
//! signal and keeps the link full.

mod common;

use common::{m, run, run_text};

/// One flow through the 100 Mbit NIC of `scenarios/tcp-100mbit.toml` (5 ms each way,
/// fq_codel, TSO off so that a frame is an skb), 20 s.
fn lossy(cc: &str, loss: &str) -> darkbuf_report::RunRecord {
    lossy_tso(cc, loss, false)
}

/// `lossy()` with TSO on or off.
fn lossy_tso(cc: &str, loss: &str, tso: bool) -> darkbuf_report::RunRecord {
    let set = [
        &format!("device.tso={tso}"),
        "qdisc.kind=fq_codel",
        "traffic.0.flows=1",
        "duration=20s",
        &format!("traffic.0.cc={cc}"),
        &format!("path.loss={loss}"),
    ];
    let r = run("tcp-100mbit.toml", &set);
    // Packet conservation and the other invariants hold with frames lost on the way.
    assert!(r.findings.is_empty(), "{cc} at {loss}: {:?}", r.findings);
    r
}

/// Mathis's throughput, Mbit/s, for loss `p` and the run's own smoothed RTT.
fn mathis_mbps(r: &darkbuf_report::RunRecord, p: f64) -> f64 {
    let rtt = m(r, "tcp.srtt_avg_ms") / 1e3;
    1448.0 * 8.0 / rtt * (1.5f64).sqrt() / p.sqrt() / 1e6
}

/// Reno and CUBIC (in its Reno-friendly region at a 10 ms RTT) at 0.1%, 1% and 2%
/// loss: within 35% of Mathis's rate (measured: 0.81-1.18 of it). The two directions
/// lose frames alike: the lost data frames are retransmitted, the lost ACKs are not.
#[test]
fn loss_based_tcp_follows_the_mathis_rate() {
    for cc in ["reno", "cubic"] {
        for (loss, p) in [("0.1%", 0.001), ("1%", 0.01), ("2", 0.02)] {
            let r = lossy(cc, loss);
            let (got, want) = (m(&r, "tcp.goodput_mbps"), mathis_mbps(&r, p));
            assert!((0.65 * want..=1.35 * want).contains(&got), "{cc} at {loss}: {got} Mbit/s, Mathis {want}");
            let (drops, retrans) = (m(&r, "path.drops"), m(&r, "tcp.retrans"));
            assert!(drops > 0.0 && retrans > 0.0 && retrans <= drops, "{cc} at {loss}: {drops} lost, {retrans} retransmitted");
            // At least about p of the data frames (ACK losses come on top).
            let data = m(&r, "nic.tx_packets");
            assert!(drops >= 0.5 * p * data, "{cc} at {loss}: {drops} lost of {data} data frames");
        }
    }
}

/// BBR v1 at 1% loss: still above 85 Mbit/s on the 100 Mbit link, where Reno has 12.
#[test]
fn bbr_keeps_the_link_full_through_random_loss() {
    let r = lossy("bbr", "1%");
    assert!(m(&r, "tcp.goodput_mbps") > 85.0, "bbr {}", m(&r, "tcp.goodput_mbps"));
    assert!(m(&r, "path.drops") > 1000.0);
}

/// Without `path.loss` there is no `path.drops`, a run with loss 0 is the run without
/// the key, and a UDP flow loses frames too. (The key's errors: darkbuf-scenario's
/// `path_loss_is_netems_random_loss`.)
#[test]
fn no_loss_is_the_lossless_path() {
    let base = run("tcp-100mbit.toml", &["duration=2s", "device.tso=false"]);
    let zero = run("tcp-100mbit.toml", &["duration=2s", "device.tso=false", "path.loss=0%"]);
    assert!(!base.metrics.contains_key("path.drops"));
    assert_eq!(serde_json::to_string(&base).unwrap(), serde_json::to_string(&zero).unwrap());
    let text = "duration = \"1s\"\n[device]\ndriver = \"nic\"\nrate = \"100Mbit\"\ntso = false\n[path]\nloss = \"1%\"\n[[traffic]]\nkind = \"udp\"\nrate = \"10mbit\"\n";
    let r = run_text(text, &[]);
    assert!(m(&r, "path.drops") > 0.0);
}

/// The same mean loss in bursts (Gilbert-Elliott, "gemodel 1% 10% 70% 0.1%": 6.45% of
/// frames, in bursts of about 10 frames at 70%) costs Reno fewer loss events than
/// random loss at 6.45%: more than 1.5 times the goodput (measured 2.1).
#[test]
fn bursty_loss_costs_reno_less_than_random_loss_of_the_same_rate() {
    let random = lossy("reno", "6.45%");
    let bursty = lossy("reno", "gemodel 1% 10% 70% 0.1%");
    let g = |r: &darkbuf_report::RunRecord| m(r, "tcp.goodput_mbps");
    assert!(g(&bursty) > 1.5 * g(&random), "bursty {} vs random {}", g(&bursty), g(&random));
}

/// With TSO on, the NIC cuts each TSO skb into frames, and the path's netem meets them
/// one by one. With every frame lost, the losses are the segments the NIC sent
/// (`nic.tx_packets`), not its skbs (`nic.tx_cqes`, fewer). At 1%, Reno and CUBIC stay
/// in the Mathis band and within 15% of their goodput with TSO off (measured: 13.34
/// against 12.45 Mbit/s, 11.21 against 11.89).
#[test]
fn tso_skbs_meet_the_loss_as_frames() {
    // Started established: at 100% the SYN would be lost too, and no data ever sent.
    let set = ["device.tso=true", "traffic.0.flows=1", "duration=3s", "warmup=0s", "path.loss=100%", "traffic.0.handshake=false"];
    let all = run("tcp-100mbit.toml", &set);
    assert!(all.findings.is_empty(), "{:?}", all.findings);
    assert!(m(&all, "nic.tx_cqes") < m(&all, "nic.tx_packets"), "some skb was a TSO skb");
    assert_eq!(m(&all, "path.drops"), m(&all, "nic.tx_packets"));
    for cc in ["reno", "cubic"] {
        let (on, off) = (lossy_tso(cc, "1%", true), lossy(cc, "1%"));
        let g = |r: &darkbuf_report::RunRecord| m(r, "tcp.goodput_mbps");
        let want = mathis_mbps(&on, 0.01);
        assert!((0.65 * want..=1.35 * want).contains(&g(&on)), "{cc}: {} Mbit/s, Mathis {want}", g(&on));
        assert!((g(&on) - g(&off)).abs() < 0.15 * g(&off), "{cc}: TSO on {} against off {}", g(&on), g(&off));
        let (drops, retrans) = (m(&on, "path.drops"), m(&on, "tcp.retrans"));
        assert!(retrans > 0.0 && retrans <= drops, "{cc}: {drops} lost, {retrans} retransmitted");
    }
}
