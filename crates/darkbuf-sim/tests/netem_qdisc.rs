//! netem as a qdisc on this host's device (`[qdisc] kind = "netem"`): the work it asks
//! of the stack (orphaning, clones, corruption) carried out, packets conserved, and
//! the setups of issue 53.

mod common;

use common::{m, run_text};

/// A veth with `qdisc`, a UDP flood of `rate` (1400-byte payloads, 1442-byte frames)
/// and a pinger, 5 s.
fn veth(qdisc: &str, rate: &str) -> darkbuf_report::RunRecord {
    let text = format!(
        "name = \"n\"\nduration = \"5s\"\nwarmup = \"1s\"\n[device]\ndriver = \"veth\"\n{qdisc}\n\
         [[traffic]]\nkind = \"udp\"\nsize = 1400\nrate = \"{rate}\"\n[[traffic]]\nkind = \"ping\"\ninterval = \"100ms\"\n"
    );
    let r = run_text(&text, &[]);
    assert!(r.findings.is_empty(), "{qdisc}: {:?}", r.findings);
    r
}

/// `netem loss 0.25% limit 1000` with a child `tbf rate 1mbit burst 2048 latency
/// 100ms`, under a 2 Mbit/s flood: due packets move into the tbf at once, so its
/// 14548-byte limit (ten 1442-byte frames) holds the queue, not netem's 1000; the tbf
/// sends 1 Mbit/s (86.7 frames/s) and about half the flood is dropped.
#[test]
fn a_tbf_child_governs_the_queue() {
    let r = veth(
        "[qdisc]\nkind = \"netem\"\nloss = \"0.25%\"\nlimit = 1000\n[qdisc.child]\nkind = \"tbf\"\nrate = \"1mbit\"\nburst = 2048\nlatency = \"100ms\"",
        "2Mbit",
    );
    let backlog = m(&r, "qdisc.backlog_avg_pkts");
    assert!((9.0..=11.0).contains(&backlog), "backlog {backlog} packets");
    // 125,000 B/s less the probes' 10 x 98 B, in 1442-byte frames.
    let sink = m(&r, "sink.pps");
    assert!((85.0..=87.5).contains(&sink), "{sink} frames/s out of the tbf");
    let offered = 2e6 / (1442.0 * 8.0) + 10.0; // the flood and the pings
    let dropped = m(&r, "qdisc.drops") / 5.0 / offered;
    assert!((0.45..=0.55).contains(&dropped), "{dropped} of the offered packets dropped");
    // The pings wait behind ten frames: 10 x 1442 x 8 / 1 Mbit/s = 115 ms at most.
    assert!(m(&r, "ping.rtt_max_ms") < 120.0, "{}", m(&r, "ping.rtt_max_ms"));
}

/// `duplicate 100%` at a fixed rate: every packet arrives twice (the clone is not
/// duplicated again), and the pinger counts each probe once.
#[test]
fn duplicates_reach_the_receiver() {
    let once = veth("[qdisc]\nkind = \"netem\"", "1kpps");
    let r = veth("[qdisc]\nkind = \"netem\"\nduplicate = \"100%\"", "1kpps");
    assert_eq!(m(&r, "sink.pps"), 2.0 * m(&once, "sink.pps"));
    assert_eq!(m(&r, "qdisc.sent_pkts"), 2.0 * m(&once, "qdisc.sent_pkts"));
    assert_eq!((m(&r, "ping.loss_pct"), m(&r, "ping.probes")), (0.0, 50.0));
}

/// `corrupt 100%`: the receiver drops every UDP packet but those whose flipped bit is
/// in the source MAC (6 of 1442 bytes) or the destination's group bit (1 in 11536
/// bits): 0.42% of them. Every probe is lost but for the same few.
#[test]
fn corrupted_packets_die_at_the_receiver() {
    let r = veth("[qdisc]\nkind = \"netem\"\ncorrupt = \"100%\"", "2kpps");
    let sink = m(&r, "sink.pps");
    let want = 2000.0 * (6.0 / 1442.0 + 1.0 / 11536.0);
    assert!((0.6 * want..=1.5 * want).contains(&sink), "{sink} packets/s survive, about {want} expected");
    // The flood's and the probes' (10/s), per second of the 5 s window.
    let dropped = m(&r, "netem.corrupt_drops") / 5.0;
    assert!((1980.0..=2010.0).contains(&dropped), "{dropped}");
    assert!(m(&r, "ping.loss_pct") > 80.0);
}

/// A delay on a UDP flood: the sender's buffer is freed when netem takes the packet
/// (`skb_orphan_partial()`), so the flood fills netem's limit instead of blocking on
/// its send buffer, and the probes wait behind 1000 packets.
#[test]
fn a_delayed_flood_fills_netems_limit() {
    let r = veth("[qdisc]\nkind = \"netem\"\ndelay = \"20ms\"\nlimit = 200", "max");
    let backlog = m(&r, "qdisc.backlog_avg_pkts");
    assert!((199.0..=202.0).contains(&backlog), "backlog {backlog}");
    assert!(m(&r, "qdisc.drops") > 0.0);
}

/// One cubic flow through `tcp-100mbit.toml`'s NIC (5 ms each way) with `netem` at the
/// root of the sender's device, 20 s.
fn tcp(netem: &[&str]) -> darkbuf_report::RunRecord {
    let mut set = vec!["qdisc.kind=netem", "traffic.0.flows=1", "duration=20s"];
    set.extend_from_slice(netem);
    let r = common::run("tcp-100mbit.toml", &set);
    assert!(r.findings.is_empty(), "{netem:?}: {:?}", r.findings);
    r
}

/// `netem loss 1%` under one cubic flow: netem drops whole TSO skbs, about one in a
/// hundred (the sender sees none of it: NET_XMIT_SUCCESS | __NET_XMIT_BYPASS), and the
/// flow's rate follows the loss-based response for its RTT (Mathis et al., CUBIC in
/// its Reno-friendly region at 10 ms): within 35% of MSS / RTT x sqrt(3/2) / sqrt(p)
/// for the segment loss rate p.
#[test]
fn cubic_under_netem_loss_follows_its_response() {
    let r = tcp(&["qdisc.loss=1%"]);
    let (drops, segs) = (m(&r, "qdisc.drops"), m(&r, "qdisc.sent_pkts"));
    let retrans = m(&r, "tcp.retrans");
    assert!(drops > 50.0 && retrans >= drops, "{drops} skbs lost, {retrans} segments retransmitted");
    let p = retrans / (segs + retrans);
    let rtt = m(&r, "tcp.srtt_avg_ms") / 1e3;
    let want = 1448.0 * 8.0 / rtt * 1.5f64.sqrt() / p.sqrt() / 1e6;
    let got = m(&r, "tcp.goodput_mbps");
    assert!((0.65 * want..=1.35 * want).contains(&got), "{got} Mbit/s, response {want} at p = {p}");
}

/// Everything at once on TCP with TSO (64 KB skbs): delay with jitter and reordering,
/// loss, duplicates (TCP data and ACK clones), corruption (TSO skbs cut by
/// `netem_segment()`), a rate and a slot. Packets are conserved and no invariant
/// breaks; some data is corrupted and retransmitted.
#[test]
fn every_netem_feature_on_tcp_keeps_the_invariants() {
    let r = tcp(&[
        "qdisc.delay=2ms",
        "qdisc.jitter=1ms",
        "qdisc.reorder=5%",
        "qdisc.loss=0.5%",
        "qdisc.duplicate=2%",
        "qdisc.corrupt=1%",
        "qdisc.rate=60mbit",
        "qdisc.slot=1ms 2ms packets 40",
    ]);
    assert!(m(&r, "netem.corrupt_drops") > 0.0);
    assert!(m(&r, "tcp.goodput_mbps") > 1.0);
}

/// The profile's `hrtimer_ns`: netem's watchdog fires on a CPU that is idle between
/// pings, so each echo request leaves netem that much later, and every ping's RTT
/// grows by exactly it (no cost noise). 0, the default, adds nothing.
#[test]
fn an_idle_cpu_takes_hrtimer_ns_to_run_a_qdisc_watchdog() {
    use darkbuf_measure::profile::Profile;
    let text = "name = \"n\"\nduration = \"3s\"\nwarmup = \"1s\"\n[device]\ndriver = \"veth\"\n\
                [qdisc]\nkind = \"netem\"\ndelay = \"10ms\"\n[[traffic]]\nkind = \"ping\"\ninterval = \"100ms\"\n";
    let scn = darkbuf_scenario::load_str("n.toml", text, &[]).unwrap_or_else(|d| panic!("{d}"));
    let rtt = |hrtimer_ns: f64| {
        let mut profile = Profile::load("seed-vm").unwrap();
        profile.noise = 0.0;
        profile.costs.hrtimer_ns = hrtimer_ns;
        let (rec, _) = darkbuf_sim::simulate(&scn, &profile, scn.seed).expect("simulates");
        assert!(rec.findings.is_empty(), "{:?}", rec.findings);
        (m(&rec, "ping.rtt_min_ms"), m(&rec, "ping.rtt_max_ms"))
    };
    let (min0, max0) = rtt(0.0);
    assert_eq!(min0, max0, "an idle path without noise: every ping alike");
    let (min, max) = rtt(150_000.0);
    assert_eq!((min, max), (min0 + 0.150, max0 + 0.150), "{min0} -> {min} .. {max}");
}
