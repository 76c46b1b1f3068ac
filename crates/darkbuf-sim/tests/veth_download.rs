//! Downloads on veth (the peer namespace sends) and ingress shaping on veth's own end
//! (issue 53): what the peer sends arrives through the sending CPU's backlog
//! (`veth_forward_skb()` -> `__netif_rx()`: this end has no GRO, so no NAPI), and with
//! an `[ingress]` tree it passes the ifb first, as SQM shapes a download.

mod common;

use common::{m, run_text};

fn veth(duration: &str, ingress: &str, traffic: &str) -> darkbuf_report::RunRecord {
    let text = format!("name = \"dl\"\nduration = \"{duration}\"\nwarmup = \"3s\"\n[device]\ndriver = \"veth\"\n[qdisc]\nkind = \"pfifo\"\n{ingress}\n{traffic}");
    run_text(&text, &[])
}

const HTB20: &str = "[ingress]\nkind = \"htb\"\ndefault = \"10\"\n[[ingress.class]]\nclassid = \"1:10\"\nrate = \"20mbit\"\nqdisc = \"pfifo\"\n";
const DOWN: &str = "[[traffic]]\nkind = \"tcp\"\ndirection = \"down\"\nreceiver = \"poll\"\n[[traffic]]\nkind = \"ping\"\ninterval = \"20ms\"\n";

/// htb at 20 Mbit on the ifb: the download's goodput is at most 20 Mbit/s of
/// 1514-byte frames' 1448 payload bytes (19.13 Mbit/s) and within 5% of it (measured
/// 19.09); the echo replies wait behind it in the ifb's pfifo. Without the ifb, the
/// download runs at what the CPUs give (tens of Gbit/s).
#[test]
fn the_ifb_shapes_a_veth_download() {
    let ideal = 20.0 * 1448.0 / 1514.0;
    let r = veth("10s", HTB20, DOWN);
    let g = m(&r, "tcp.goodput_mbps");
    assert!(g <= ideal * 1.001 && g >= 0.95 * ideal, "{g} Mbit/s against {ideal}");
    assert!(m(&r, "ping.rtt_avg_ms") > 20.0, "{}", m(&r, "ping.rtt_avg_ms"));
    assert!(m(&r, "ingress.qdisc.sent_pkts") > m(&r, "qdisc.sent_pkts"));
    let plain = veth("200ms", "", DOWN);
    assert!(m(&plain, "tcp.goodput_mbps") > 1000.0, "{}", m(&plain, "tcp.goodput_mbps"));
    assert!(plain.metrics.keys().all(|k| !k.starts_with("ingress.")));
}

/// On veth, what arrives on this end from the peer is every reply: a ping's echo
/// replies alone cross the ifb (one per request), and the requests do not (they
/// arrive at the peer, which the same host record models).
#[test]
fn echo_replies_cross_the_ifb_and_requests_do_not() {
    let r = veth("10s", "[ingress]\nkind = \"pfifo\"\n", "[[traffic]]\nkind = \"ping\"\ninterval = \"100ms\"\n");
    let (ifb, dev) = (m(&r, "ingress.qdisc.sent_pkts"), m(&r, "qdisc.sent_pkts"));
    assert_eq!(ifb, dev, "ifb {ifb}, device {dev}");
    assert!((99.0..=101.0).contains(&ifb), "{ifb} replies in 10 s at 100 ms");
}

/// An upload's ACKs come back through the ifb too; its data does not.
#[test]
fn an_uploads_acks_cross_the_ifb() {
    let r = veth("1s", "[ingress]\nkind = \"pfifo\"\n", "[[traffic]]\nkind = \"tcp\"\n");
    let (ifb, dev) = (m(&r, "ingress.qdisc.sent_pkts"), m(&r, "qdisc.sent_pkts"));
    assert!(ifb > 0.0 && ifb < dev, "ifb {ifb} ACKs, device {dev} data");
}

/// A voice call's down stream on veth comes from the peer namespace's end (before, the
/// simulator had no far sender on veth and reported it null): on an idle veth it
/// arrives in microseconds; behind a download shaped by htb at 10 Mbit on the ifb it
/// waits in the same queue as the download (the ping's replies see the same queue).
#[test]
fn a_calls_down_stream_crosses_the_ifb() {
    let call = "[[traffic]]\nkind = \"voip\"\n[[traffic]]\nkind = \"ping\"\ninterval = \"100ms\"\n";
    let idle = veth("2s", "", call);
    assert!(m(&idle, "voip.down.owd_p50_ms") < 0.1, "{}", m(&idle, "voip.down.owd_p50_ms"));
    assert_eq!(m(&idle, "voip.down.loss_pct"), 0.0);
    let htb10 = HTB20.replace("20mbit", "10mbit");
    let shaped = veth("8s", &htb10, &format!("[[traffic]]\nkind = \"tcp\"\ndirection = \"down\"\nreceiver = \"poll\"\n{call}"));
    let (owd, ping) = (m(&shaped, "voip.down.owd_p50_ms"), m(&shaped, "ping.rtt_p50_ms"));
    assert!(owd > 50.0 && owd < 1.5 * ping, "down OWD p50 {owd} ms, ping p50 {ping} ms");
    // The up stream does not cross the ifb.
    assert!(m(&shaped, "voip.up.owd_p50_ms") < 0.1, "{}", m(&shaped, "voip.up.owd_p50_ms"));
}

/// A veth download's skb keeps its sender's socket through the ifb until `ip_rcv_core()`
/// orphans it (`____dev_forward_skb()` has not orphaned since 5.4), so TCP Small Queues
/// bounds what waits in the ifb's qdisc. The peer sends 64 KB TSO skbs (its min RTT is
/// tens of microseconds: `tcp_tso_autosize()` adds the whole `gso_max_size`), 45
/// segments of 1448 bytes plus 45 x 66 bytes of headers = 68,130 bytes, 27.25 ms at 20
/// Mbit/s. TSQ's limit is 2 x truesize (2 x 65,928; the pacing rate's 1 ms is less), so
/// the sender stops at three skbs not yet orphaned: htb releases one, whose delivery
/// lets one more in behind the other two. Each skb waits for two before it (54.5 ms:
/// the srtt), no queue fills (no drop, no retransmission), and the receiver ACKs once
/// per skb: 20e6 / 8 / 68,130 = 367 ACKs in 10 s beside 500 echo requests. Measured on
/// this host's 6.18 kernel (`--backend kernel`, the same scenario): srtt 54.6 ms, 868
/// packets sent by the device's pfifo, no retransmission.
#[test]
fn tsq_holds_a_veth_download_to_three_skbs_in_the_ifb() {
    let r = veth("10s", HTB20, DOWN);
    let skb_ms = 68_130.0 * 8.0 / 20e6 * 1e3;
    let srtt = m(&r, "tcp.srtt_avg_ms");
    assert!(srtt >= 2.0 * skb_ms && srtt < 2.0 * skb_ms * 1.02, "srtt {srtt} ms, two skbs {}", 2.0 * skb_ms);
    assert_eq!(m(&r, "tcp.retrans"), 0.0);
    assert_eq!(m(&r, "ingress.qdisc.drops"), 0.0);
    let acks = m(&r, "qdisc.sent_pkts") - 500.0;
    let per_skb = 10.0 * 20e6 / 8.0 / 68_130.0;
    assert!((acks - per_skb).abs() <= 3.0, "{acks} ACKs, {per_skb} skbs");
}
