//! Request/response (`kind = "rr"`, netperf's TCP_RR and UDP_RR) on the simulator:
//! transaction latency is the path's round trip plus what the stacks add, exactly; the
//! connection is never idle (time = latencies + timeouts + the client's own work);
//! TCP's lost segments come back after the kernel's timers; under load the latency
//! follows the queueing delay the ping sees; deterministic results.

mod common;

use common::{m, run_text};
use darkbuf_measure::Profile;
use darkbuf_report::RunRecord;

/// An idle 100 Mbit NIC, 5 ms each way, one rr connection and a 10 ms ping.
fn nic(rr: &str, extra: &str) -> String {
    format!(
        "duration = \"2s\"\nwarmup = \"1s\"\n[device]\ndriver = \"nic\"\nrate = \"100Mbit\"\n[qdisc]\nkind = \"pfifo_fast\"\n\
         [path]\ndelay = \"5ms\"\n{extra}\n[[traffic]]\nkind = \"rr\"\n{rr}\n[[traffic]]\nkind = \"ping\"\ninterval = \"10ms\"\n"
    )
}

/// Runs scenario text on the seed-vm profile without cost noise: every transaction of
/// an idle path takes the same time.
fn run_exact(text: &str, set: &[&str]) -> RunRecord {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let scn = darkbuf_scenario::load_str("test.toml", text, &set).unwrap_or_else(|d| panic!("{d}"));
    let mut profile = Profile::load(&scn.machine.profile_source()).unwrap();
    profile.noise = 0.0;
    let (rec, _) = darkbuf_sim::simulate(&scn, &profile, scn.seed).expect("simulates");
    assert!(rec.findings.is_empty(), "invariant findings: {:?}", rec.findings);
    rec
}

/// Bits of `bytes` on the wire at 100 Mbit, in µs.
fn wire_us(bytes: f64) -> f64 {
    bytes * 8.0 / 100.0
}

/// Without noise every transaction on the idle path takes the same time, and the
/// window holds as many as fit back to back.
#[test]
fn idle_path_every_transaction_alike() {
    for proto in ["tcp", "udp"] {
        let r = run_exact(&nic(&format!("proto = \"{proto}\""), ""), &[]);
        let (min, max) = (m(&r, "rr.latency_min_us"), m(&r, "rr.latency_max_us"));
        assert_eq!(min, max, "{proto}: {min} .. {max}");
        // 10 ms of propagation plus both frames on the wire, plus the stacks (tens of us).
        assert!((10_000.0..10_100.0).contains(&min), "{proto}: {min}");
        let n = m(&r, "rr.transactions");
        // The client sends the next request a few us after the last response: 2 s of
        // back-to-back transactions, counted when they complete.
        let fit = (2e6 / min).floor();
        assert!(n == fit || n == fit + 1.0, "{proto}: {n} transactions of {min} us in 2 s ({fit})");
        assert_eq!(m(&r, "rr.timeouts"), 0.0);
    }
}

/// What each leg adds, exactly: a `path_delay` of 20 ms adds 40 ms (both legs); 1000
/// more response bytes add their time on the far host's 100 Mbit wire (80 us); TCP's
/// frames are 24 bytes longer than UDP's each way (66 bytes of headers against 42).
/// Messages of 100 bytes keep every frame above Ethernet's 60-byte minimum (a 1-byte
/// UDP request is padded from 43 to 60 bytes).
#[test]
fn latency_is_the_sum_of_its_legs() {
    let p50 = |rr: &str| m(&run_exact(&nic(rr, ""), &[]), "rr.latency_p50_us");
    let base = p50("proto = \"udp\"\nrequest = 100\nresponse = 100");
    let far = p50("proto = \"udp\"\nrequest = 100\nresponse = 100\npath_delay = \"20ms\"");
    assert_eq!(far - base, 40_000.0);
    let big = p50("proto = \"udp\"\nrequest = 100\nresponse = 1100");
    assert!((big - base - wire_us(1000.0)).abs() < 0.002, "{big} - {base} != {}", wire_us(1000.0));
    let tcp = p50("proto = \"tcp\"\nrequest = 100\nresponse = 100");
    assert!((tcp - base - 2.0 * wire_us(24.0)).abs() < 0.002, "tcp {tcp} - udp {base} != {}", 2.0 * wire_us(24.0));
    let padded = p50("proto = \"udp\"\nrequest = 1\nresponse = 1");
    assert!((base - padded - 2.0 * wire_us(142.0 - 60.0)).abs() < 0.002, "100-byte messages {base}, 1-byte {padded}");
}

/// The connection is never idle: over the whole run (no warmup) its time is its
/// transactions' latencies, its timeouts and the client's own work between a response
/// and the next request (a wake-up and a send, a few us each). With 5% loss each way,
/// UDP_RR waits out `timeout` for every lost request or response.
#[test]
fn time_is_latencies_plus_timeouts() {
    let text = nic("proto = \"udp\"\ntimeout = \"100ms\"", "loss = \"5%\"");
    let r = run_text(&text, &["warmup=0s", "duration=20s"]);
    let (n, mean, timeouts) = (m(&r, "rr.transactions"), m(&r, "rr.latency_mean_us"), m(&r, "rr.timeouts"));
    assert!(timeouts > 10.0, "{timeouts}");
    let busy = n * mean + timeouts * 100_000.0;
    let slack = 20e6 - busy;
    // At most one transaction in flight at the end, and < 50 us of client work per transaction.
    assert!(slack >= 0.0 && slack < mean + 100_000.0 + (n + timeouts) * 50.0, "busy {busy} us of 20 s");
}

/// TCP_RR over 10% loss: a lost request or response is resent by its sender's timer,
/// the kernel's loss probe at min(2 srtt + 200 ms, RTO), RTO = srtt + max(4 mdev,
/// TCP_RTO_MIN): a transaction that lost a segment takes at least 200 ms more than one
/// that did not (srtt is 10 ms on the client; the server's grows with the late ACKs a
/// lost request brings it, as the kernel's does); nothing is ever given up.
#[test]
fn tcp_loss_costs_an_rto() {
    let r = run_exact(&nic("proto = \"tcp\"", "loss = \"10%\""), &["duration=20s"]);
    let p50 = m(&r, "rr.latency_p50_us");
    assert!((10_000.0..10_100.0).contains(&p50), "{p50}");
    let p90 = m(&r, "rr.latency_p90_us");
    assert!((200_000.0..260_000.0).contains(&(p90 - p50)), "p90 {p90} is one timer after p50 {p50}");
    assert!(m(&r, "rr.timeouts") > 0.0);
}

/// Queueing under load (issue 54's check): TCP_RR beside a bulk TCP upload through a
/// router whose 100 Mbit egress is the bottleneck. Behind a 1000-packet FIFO without
/// BQL the transaction latency is the ping's RTT, some 130 ms; with BQL and fq_codel
/// both stay near the 10 ms path, and the rate follows 1 / latency.
#[test]
fn loaded_link_latency_follows_the_ping() {
    let text = "duration = \"10s\"\nwarmup = \"5s\"\n[device]\ndriver = \"nic\"\nrate = \"100Mbit\"\nring_size = 256\ntso = false\n\
                [qdisc]\nkind = \"pfifo\"\nlimit = 1000\n[path]\ndelay = \"5ms\"\n[lan]\nrate = \"1Gbit\"\n\
                [[traffic]]\nkind = \"tcp\"\n[[traffic]]\nkind = \"ping\"\ninterval = \"10ms\"\n[[traffic]]\nkind = \"rr\"\n";
    let fifo = run_text(text, &["device.bql.enabled=false"]);
    let fq = run_text(text, &["qdisc.kind=fq_codel"]);
    for (r, lo, hi) in [(&fifo, 80.0, 200.0), (&fq, 10.0, 12.0)] {
        let (ping, rr) = (m(r, "ping.rtt_p50_ms"), m(r, "rr.latency_p50_us") / 1e3);
        assert!((lo..hi).contains(&ping), "ping {ping} ms");
        assert!((rr - ping).abs() < 0.05 * ping, "rr p50 {rr} ms follows ping p50 {ping} ms");
        let rate = m(r, "rr.transactions_per_s");
        let expect = 1e6 / m(r, "rr.latency_mean_us");
        assert!((rate - expect).abs() < 0.05 * expect, "{rate}/s at a mean latency of {} us", m(r, "rr.latency_mean_us"));
    }
    assert!(m(&fifo, "rr.latency_p50_us") > 8.0 * m(&fq, "rr.latency_p50_us"));
}

/// Several entries and connections: `rr.N.*` per entry, `rr.*` their sum; connections
/// on an idle path do not slow each other.
#[test]
fn entries_and_connections() {
    let text = nic("proto = \"udp\"\nconnections = 4\n[[traffic]]\nkind = \"rr\"\nproto = \"tcp\"", "");
    let r = run_exact(&text, &[]);
    let (a, b) = (m(&r, "rr.0.transactions"), m(&r, "rr.1.transactions"));
    assert_eq!(m(&r, "rr.transactions"), a + b);
    let one = m(&run_exact(&nic("proto = \"udp\"", ""), &[]), "rr.transactions");
    assert!((a - 4.0 * one).abs() <= 4.0, "4 connections: {a}, one: {one}");
    assert!(!r.metrics.contains_key("rr.2.transactions"));
}

/// The same scenario and seed give the same results, byte for byte.
#[test]
fn deterministic() {
    let text = nic("proto = \"tcp\"\nconnections = 3", "loss = \"2%\"");
    let a = run_text(&text, &[]);
    let b = run_text(&text, &[]);
    assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
}

/// On veth the server's response comes back as a packet where something on this side
/// shapes it: through the ifb of ingress shaping, or forwarded by a `[lan]` router
/// through `[lan.qdisc]` to the client. A 1 Mbit tbf there (tokens enough for one
/// response) bounds TCP_RR by the response's frame: with 1 + 66 bytes, 1e6 / (8 x 67) =
/// 1865.67 transactions/s, each response crossing it once.
#[test]
fn a_veth_response_crosses_ingress_shaping_and_the_lan_router() {
    let tbf = "kind = \"tbf\"\nrate = \"1mbit\"\nburst = 3000\nlatency = \"100ms\"\n";
    let bound = 1e6 / (8.0 * 67.0);
    let rr = "[[traffic]]\nkind = \"rr\"\nproto = \"tcp\"\n";
    let ingress = run_text(&format!("duration = \"3s\"\nwarmup = \"500ms\"\n[device]\ndriver = \"veth\"\n[qdisc]\nkind = \"pfifo\"\n[ingress]\n{tbf}{rr}"), &[]);
    let tps = m(&ingress, "rr.transactions_per_s");
    assert!((tps - bound).abs() < 1.0, "{tps} against {bound}");
    let (sent, txns) = (m(&ingress, "ingress.qdisc.sent_pkts"), m(&ingress, "rr.transactions"));
    assert!((sent - txns).abs() <= 1.0, "ifb {sent}, transactions {txns}");
    // Behind the router the request also crosses a tbf (the client's end carries
    // [lan.qdisc] too): a 1000-byte response makes the response's the binding one,
    // 1e6 / (8 x 1066) = 117.26/s, where the request's alone would allow 1865.
    let lan = run_text(&format!("duration = \"3s\"\nwarmup = \"500ms\"\n[device]\ndriver = \"veth\"\n[qdisc]\nkind = \"pfifo\"\n[lan]\n[lan.qdisc]\n{tbf}{rr}response = 1000\n"), &[]);
    let (tps, bound) = (m(&lan, "rr.transactions_per_s"), 1e6 / (8.0 * 1066.0));
    assert!((tps - bound).abs() < 1.0, "{tps} against {bound}");
}
