//! A host that routes (`[lan]`): the queue that fills in the bufferbloat tests is a
//! forwarding hop's. `scenarios/router-100mbit.toml`: 100 Mbit, 5 ms each way, a
//! 1000-packet pfifo over a 256-descriptor ring, one TCP upload from a client on a
//! gigabit LAN, TSO/GSO/GRO off.

mod common;
use common::{m, run, run_text, scenario_text};

/// The run length of these tests: 10 s after a 3 s warmup (cubic's first loss and
/// recovery are over by then).
const SHORT: [&str; 2] = ["duration=10s", "warmup=3s"];

fn router(set: &[&str]) -> darkbuf_report::RunRecord {
    let all: Vec<&str> = SHORT.iter().chain(set).copied().collect();
    run("router-100mbit.toml", &all)
}

/// The FIFO's and the ring's drain time at 100 Mbit plus the 10 ms base RTT, ms:
/// 1000 and 256 frames of 1514 bytes.
fn fifo_ring_base_ms() -> (f64, f64) {
    let drain = (1000.0 + 256.0) * 1514.0 * 8.0 / 100e6 * 1e3;
    (drain, 10.0)
}

/// Behind the router the FIFO fills: ping RTT between 60% and 110% of the FIFO's and
/// the ring's drain time (152 ms) plus the base RTT, at line rate. The same sender on
/// this host keeps the same FIFO short (TCP Small Queues: about two skbs of its own in
/// the qdisc and the ring).
#[test]
fn a_routers_fifo_fills_and_a_local_senders_does_not() {
    let r = router(&["device.bql.enabled=false"]);
    let (drain, base) = fifo_ring_base_ms();
    let rtt = m(&r, "ping.rtt_avg_ms");
    assert!(rtt >= 0.6 * drain + base && rtt <= 1.1 * drain + base, "ping {rtt} ms, drain {drain} ms");
    assert!(m(&r, "qdisc.backlog_avg_pkts") > 300.0);
    assert!(m(&r, "tcp.goodput_mbps") >= 93.0, "goodput {}", m(&r, "tcp.goodput_mbps"));
    // One loss per sawtooth, each recovered by one retransmission (SACK at MSS
    // granularity: no segment of a partly SACKed skb is sent twice).
    assert!(m(&r, "tcp.retrans") <= 2.0 * m(&r, "qdisc.drops") + 2.0);

    let local: String = scenario_text("router-100mbit.toml").replace("[lan]\nrate = \"1Gbit\"\n", "");
    assert!(!local.contains("\n[lan]\n"), "the [lan] section is gone");
    let set: Vec<&str> = SHORT.iter().copied().chain(["device.bql.enabled=false"]).collect();
    let l = run_text(&local, &set);
    assert!(m(&l, "qdisc.backlog_avg_pkts") < 50.0, "local backlog {}", m(&l, "qdisc.backlog_avg_pkts"));
    assert!(m(&l, "ping.rtt_avg_ms") < 0.2 * rtt);
}

/// The talk's comparison on the router: BQL + fq_codel cuts the RTT under load at
/// least 8x at nearly the same goodput, and BBR keeps the FIFO at least 3x shorter
/// than cubic.
#[test]
fn bql_fq_codel_and_bbr_keep_the_routers_queue_short() {
    let fifo = router(&["device.bql.enabled=false"]);
    let aqm = router(&["qdisc.kind=fq_codel"]);
    let bbr = router(&["device.bql.enabled=false", "traffic.0.cc=bbr"]);
    let rtt = |r| m(r, "ping.rtt_avg_ms");
    assert!(rtt(&fifo) >= 8.0 * rtt(&aqm), "fifo {} vs fq_codel {}", rtt(&fifo), rtt(&aqm));
    assert!(m(&aqm, "tcp.goodput_mbps") >= 90.0);
    assert!(rtt(&fifo) >= 3.0 * rtt(&bbr), "cubic {} vs bbr {}", rtt(&fifo), rtt(&bbr));
}

/// A download crosses the router the other way: data forwarded to the LAN, ACKs to the
/// far host. It reaches line rate, and every packet is accounted for (the run checks
/// conservation across the three hosts).
#[test]
fn a_download_crosses_the_router() {
    let r = router(&["traffic.0.direction=down"]);
    assert!(m(&r, "tcp.goodput_mbps") >= 93.0, "goodput {}", m(&r, "tcp.goodput_mbps"));
    // The far host's queue is the bottleneck now; this host forwards at 1 Gbit.
    assert!(m(&r, "qdisc.backlog_avg_pkts") < 1.0);
}

/// ECN end to end through the router: fq_codel marks instead of dropping, the receiver
/// echoes ECE until the sender's CWR, and the sender reduces once per round trip.
/// (Before the CE mark reached the packet and CWR ended the echo, the flow either saw
/// no mark or collapsed to cwnd 2 at 2 Mbit/s.)
#[test]
fn ecn_marks_replace_drops_through_the_router() {
    let r = router(&["device.bql.enabled=false", "qdisc.kind=fq_codel", "traffic.0.ecn=true"]);
    assert_eq!(m(&r, "qdisc.drops"), 0.0);
    assert_eq!(m(&r, "tcp.retrans"), 0.0);
    assert!(m(&r, "tcp.goodput_mbps") >= 93.0, "goodput {}", m(&r, "tcp.goodput_mbps"));
    // fq_codel keeps its own queue near its 5 ms target; the ring below it (no BQL)
    // holds up to 256 frames, 31 ms.
    assert!(m(&r, "qdisc.backlog_avg_pkts") < 60.0);
    assert!(m(&r, "ping.rtt_avg_ms") < 50.0);
}

/// Same scenario and seed, same results, with a router in the path.
#[test]
fn a_routed_run_is_deterministic() {
    let a = router(&["device.bql.enabled=false"]);
    let b = router(&["device.bql.enabled=false"]);
    assert_eq!(serde_json::to_string(&a.metrics).unwrap(), serde_json::to_string(&b.metrics).unwrap());
}

/// PIE on the router (BQL on): its controller holds the queueing delay near its
/// 15 ms target, where the FIFO of the same length sits near full; fq_pie holds the
/// bulk flow's queue there too, and the ping, a flow of its own, waits for none of it.
/// Without BQL the ring's 256 frames (31 ms) are a dark buffer PIE cannot see: the
/// qdisc's delay stays near the target and the RTT grows by the ring.
#[test]
fn pie_holds_the_routers_queue_near_its_target() {
    let fifo = router(&["qdisc.kind=pfifo"]);
    let pie = router(&["qdisc.kind=pie", "qdisc.limit=1000"]);
    let fq_pie = router(&["qdisc.kind=fq_pie", "qdisc.limit=1000"]);
    let dark = router(&["qdisc.kind=pie", "qdisc.limit=1000", "device.bql.enabled=false"]);
    let wait = |r| m(r, "ping.wait_qdisc_ms");
    assert!(wait(&fifo) > 60.0, "fifo {}", wait(&fifo));
    assert!((10.0..=20.0).contains(&wait(&pie)), "pie {}", wait(&pie));
    // The controller's own view: the last delay it used, µs, and a small probability.
    assert!((5_000.0..=30_000.0).contains(&m(&pie, "qdisc.delay")), "delay {}", m(&pie, "qdisc.delay"));
    assert!(m(&pie, "qdisc.prob") > 0.0 && m(&pie, "qdisc.prob") < 0.01, "prob {}", m(&pie, "qdisc.prob"));
    assert_eq!(m(&pie, "qdisc.dropped"), m(&pie, "qdisc.drops"));
    // 10-20 ms of 1514-byte frames at 100 Mbit/s: 83-165 packets.
    assert!((83.0..=165.0).contains(&m(&fq_pie, "qdisc.backlog_avg_pkts")), "fq_pie {}", m(&fq_pie, "qdisc.backlog_avg_pkts"));
    assert!(wait(&fq_pie) < 1.0, "fq_pie ping {}", wait(&fq_pie));
    for r in [&pie, &fq_pie] {
        assert!(m(r, "tcp.goodput_mbps") >= 93.0, "goodput {}", m(r, "tcp.goodput_mbps"));
    }
    // The controller over time, sampled with the other series: cubic's sawtooth
    // (delay up to about 19 ms, then a drop halves the window) and the probability
    // that follows it. Only pie has these series.
    let series = |r: &darkbuf_report::RunRecord, k: &str| -> Vec<f64> {
        r.timeseries.get(k).map_or_else(Vec::new, |ts| ts.values.iter().flatten().copied().collect())
    };
    let (prob, delay) = (series(&pie, "qdisc.prob"), series(&pie, "qdisc.delay_us"));
    assert_eq!(prob.len(), series(&pie, "qdisc.backlog_pkts").len());
    assert_eq!(delay.len(), prob.len());
    let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    assert!(max(&prob) > 1e-4 && max(&prob) < 0.01, "max prob {}", max(&prob));
    assert!((15_000.0..=30_000.0).contains(&max(&delay)), "max delay {}", max(&delay));
    assert!(prob.iter().any(|&p| p == 0.0), "the probability decays to 0 after a drop");
    assert!(!fifo.timeseries.contains_key("qdisc.prob") && !fq_pie.timeseries.contains_key("qdisc.prob"));
    let ring_ms = 256.0 * 1514.0 * 8.0 / 100e6 * 1e3;
    assert!((8.0..=20.0).contains(&wait(&dark)), "pie without BQL {}", wait(&dark));
    assert!(m(&dark, "ping.rtt_avg_ms") > m(&pie, "ping.rtt_avg_ms") + 0.5 * ring_ms);
}

/// `[lan]` on veth (drivers/veth.rs, `Builder::veth_lan`): one cubic flow from the client
/// namespace crosses the LAN veth pair (`__netif_rx()`), and the router forwards it into
/// htb 20 Mbit over a 5-packet pfifo on the measured veth. There the skb has no socket,
/// so a drop at the full pfifo is a loss the sender retransmits; the same flow sent from
/// the router itself is refused at enqueue (a local drop: CWR, no retransmission). The
/// probes and the ACKs come back through the router to the client, and every packet is
/// accounted for (`run_text` fails on an invariant finding).
#[test]
fn a_veth_routers_small_fifo_drops_what_it_forwards() {
    let text = "duration = \"3s\"\nwarmup = \"1s\"\n\
         [device]\ndriver = \"veth\"\ntx_queues = 1\ntxqueuelen = 5\nbackpressure = true\n\
         [qdisc]\nkind = \"htb\"\ndefault = \"10\"\n\
         [[qdisc.class]]\nclassid = \"1:10\"\nrate = \"20mbit\"\nqdisc = \"pfifo\"\n\
         [[traffic]]\nkind = \"tcp\"\ncc = \"cubic\"\n\
         [[traffic]]\nkind = \"ping\"\ninterval = \"10ms\"\n";
    let local = run_text(text, &[]);
    let fwd = run_text(&format!("{text}[lan]\n[lan.qdisc]\nkind = \"pfifo\"\nlimit = 1000\n"), &[]);
    for r in [&local, &fwd] {
        assert!(m(r, "tcp.goodput_mbps") > 0.0 && m(r, "tcp.goodput_mbps") < 20.0);
        assert!(m(r, "qdisc.drops") > 0.0);
        assert!(m(r, "ping.loss_pct") < 100.0, "no probe came back");
    }
    assert_eq!(m(&local, "tcp.retrans"), 0.0, "a local sender's drops are refused at enqueue");
    assert!(m(&fwd, "tcp.retrans") > 0.0, "the router's drops are losses the client retransmits");
    // The LAN pair has TSO and GSO off (as the kernel backend sets it), so the router
    // forwards frames: its 5-packet pfifo holds at most 5 x 1514 bytes, 3.03 ms at 20
    // Mbit/s, and an echo request waits at most that behind them (the kernel backend's
    // 6.1 guest: 3.3-3.5 ms with its emulated stack's own round trip). Before, the
    // client's 64 KB TSO skbs crossed the pair whole and the router queued up to five:
    // ping 40.8 ms.
    let fifo_ms = 5.0 * 1514.0 * 8.0 / 20e6 * 1e3;
    let ping = m(&fwd, "ping.rtt_avg_ms");
    assert!(ping < fifo_ms + 0.5, "ping {ping} ms behind a FIFO of {fifo_ms} ms");
    assert!(m(&fwd, "qdisc.backlog_avg_pkts") <= 5.0);
}

/// irtt behind a veth router (`[lan]`): the server's reply comes back to the router by
/// the far end's constant, as a pinger's echo reply does, and the router forwards it
/// to the client through `[lan.qdisc]`. Its down leg is then longer than a local
/// prober's, whose reply ends at the constant; before the reply crossed the router the
/// two were the same.
#[test]
fn an_irtt_reply_crosses_the_router_on_its_way_back() {
    let text = "duration = \"2s\"\nwarmup = \"500ms\"\n\
         [device]\ndriver = \"veth\"\ntx_queues = 1\n\
         [qdisc]\nkind = \"pfifo\"\n\
         [[traffic]]\nkind = \"irtt\"\ninterval = \"10ms\"\n";
    let local = run_text(text, &[]);
    let fwd = run_text(&format!("{text}[lan]\n[lan.qdisc]\nkind = \"pfifo\"\nlimit = 1000\n"), &[]);
    for r in [&local, &fwd] {
        assert!(m(r, "irtt.packets") >= 140.0, "{} requests", m(r, "irtt.packets"));
        assert_eq!(m(r, "irtt.loss_up_pct"), 0.0);
        assert_eq!(m(r, "irtt.loss_down_pct"), 0.0);
    }
    let (down_local, down_fwd) = (m(&local, "irtt.owd_down_avg_ms"), m(&fwd, "irtt.owd_down_avg_ms"));
    assert!(down_fwd > down_local, "down leg: forwarded {down_fwd} ms, local {down_local} ms");
    // The router's forwarding and the LAN pair's backlog are microseconds on an idle
    // path, not another constant.
    assert!(down_fwd < down_local + 1.0, "down leg: forwarded {down_fwd} ms, local {down_local} ms");
}
