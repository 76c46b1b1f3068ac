//! Scenario tests for the behaviours issues 3 and 5 ask the simulator to show, run from
//! the repository's scenario files (shortened; every claim is a steady state).

mod common;

use common::{m, run, run_text, scenario_text};

/// Stock tap: the ring tail-drops, the qdisc stays empty, and the flood's packets wait
/// about ring size / reader rate (a probe rarely finds a free slot in the full ring, so
/// the delay is the flood's one-way delay, as the kernel notes' tapreader measures it).
#[test]
fn tap_stock_drops_in_the_ring() {
    let r = run("tap-reader.toml", &["duration=3s", "warmup=1s"]);
    assert!(m(&r, "ring.drops") > 0.0);
    assert_eq!(m(&r, "qdisc.drops"), 0.0);
    assert!(m(&r, "qdisc.backlog_avg_pkts") < 1.0);
    let expected_ms = 1000.0 / m(&r, "consumer.pps") * 1e3;
    let owd = m(&r, "sink.owd_avg_ms");
    assert!((owd / expected_ms - 1.0).abs() < 0.15, "one-way delay {owd} ms vs ring/rate {expected_ms} ms");
}

/// IFF_BACKPRESSURE with a qdisc: no ring drops, the drops move into the qdisc, and the
/// reader keeps its rate (within 10% of stock).
#[test]
fn tap_backpressure_moves_drops_into_the_qdisc() {
    let stock = run("tap-reader.toml", &["duration=3s", "warmup=1s"]);
    let bp = run("tap-reader.toml", &["duration=3s", "warmup=1s", "device.backpressure=true"]);
    assert_eq!(m(&bp, "ring.drops"), 0.0);
    assert!(m(&bp, "qdisc.drops") > 0.0);
    assert!(m(&bp, "txq.drv_xoff") > 0.0);
    let (a, b) = (m(&stock, "consumer.pps"), m(&bp, "consumer.pps"));
    assert!((b / a - 1.0).abs() < 0.10, "reader {b} pps with backpressure vs {a} stock");
}

/// The wake threshold trades stop/wake cycles against ring occupancy: waking on any
/// free slot keeps the ring full and stops the queue most often.
#[test]
fn tap_wake_threshold_trade_off() {
    let early = run("tap-wake-threshold.toml", &["duration=1s", "device.wake_threshold=0.0"]);
    let late = run("tap-wake-threshold.toml", &["duration=1s", "device.wake_threshold=1.0"]);
    assert!(m(&early, "txq.drv_xoff") > 3.0 * m(&late, "txq.drv_xoff"));
    assert!(m(&early, "ring.occupancy_avg") > m(&late, "ring.occupancy_avg"));
    assert!(m(&early, "ping.wait_ring_ms") > m(&late, "ping.wait_ring_ms"));
}

/// The seeds' central claim: fq_codel with 13,000 rules, BQL cuts ping RTT at least 5x
/// and the drops happen in the qdisc, where the AQM acts.
#[test]
fn fq_codel_with_bql_at_13000_rules() {
    let no_bql = run("fq_codel-13000.toml", &["duration=4s", "device.bql.limit_min=1073741824"]);
    let bql = run("fq_codel-13000.toml", &["duration=4s"]);
    let (a, b) = (m(&no_bql, "ping.rtt_avg_ms"), m(&bql, "ping.rtt_avg_ms"));
    assert!(a >= 5.0 * b, "RTT {a} ms without BQL vs {b} ms with");
    assert!(m(&bql, "qdisc.drops") > 0.0);
    assert_eq!(m(&bql, "ring.drops"), 0.0);
    assert!(m(&no_bql, "ping.wait_ring_ms") > m(&no_bql, "ping.wait_qdisc_ms"));
    assert!(m(&bql, "ping.wait_ring_ms") < m(&bql, "ping.wait_qdisc_ms"));
}

/// A tbf shaper at 20mbit below the consumer's rate delivers 20 Mbit/s of L2 frames
/// (1400 B payload = 1442 B frames), within 7%.
#[test]
fn tbf_20mbit_shapes_the_bottleneck() {
    let r = run(
        "veth-bql.toml",
        &["duration=3s", "qdisc.kind=tbf", "qdisc.rate=20mbit", "qdisc.burst=32kb", "qdisc.latency=50ms"],
    );
    let bits = m(&r, "sink.pps") * 1442.0 * 8.0;
    assert!((bits / 20e6 - 1.0).abs() < 0.07, "{bits} bit/s through a 20mbit tbf");
    assert!(m(&r, "qdisc.overlimits") > 0.0);
}

/// IFF_BACKPRESSURE with fq_codel: the ring holds between half and all of txqueuelen, so
/// its delay is ~0.5-1x txqueuelen / reader rate whatever the qdisc does. At txqueuelen 16
/// the queue moves into fq_codel: the sparse probe skips it (it waits at most one stop
/// period, half a ring, for the wake, then behind at most a ring), CoDel's target sets the
/// flood's delay (a flood a few % over the reader, 30 ms interval, as the scenario explains),
/// and the reader keeps its rate. At tap's default 1000 the ring's wait dominates the probe's.
#[test]
fn tap_fq_codel_with_backpressure_delay_follows_the_qdisc_at_a_small_ring() {
    let t5 = run("tap-fq_codel.toml", &["duration=2s", "warmup=1s"]);
    let t20 = run("tap-fq_codel.toml", &["duration=2s", "warmup=1s", "qdisc.target=20ms"]);
    let stock = run("tap-fq_codel.toml", &["duration=2s", "warmup=1s", "device.backpressure=false"]);
    let pps = m(&t5, "consumer.pps");
    let ring_full_ms = 16.0 / pps * 1e3;
    let stop_ms = ring_full_ms / 2.0;
    let stock_1000_ms = 1000.0 / pps * 1e3;
    for (r, target) in [(&t5, 5.0), (&t20, 20.0)] {
        assert_eq!(m(r, "ring.drops"), 0.0);
        assert!(m(r, "qdisc.drops") > 0.0);
        let occ = m(r, "ring.occupancy_avg");
        assert!((8.0..=16.0).contains(&occ), "ring holds {occ} of 16");
        let (wq, wr) = (m(r, "ping.wait_qdisc_ms"), m(r, "ping.wait_ring_ms"));
        assert!(wq < stop_ms, "probe waits {wq} ms in the qdisc, a stop period is {stop_ms} ms");
        assert!(wr < ring_full_ms, "probe waits {wr} ms in the ring, a full ring is {ring_full_ms} ms");
        let p50 = m(r, "ping.rtt_p50_ms");
        assert!(p50 < 1.5 * ring_full_ms + 0.3, "ping p50 {p50} ms vs ring {ring_full_ms} ms");
        assert!(p50 < stock_1000_ms / 20.0, "ping p50 {p50} ms vs {stock_1000_ms} ms at stock txqueuelen");
        // The flood's qdisc share: at least target, at most 1.5x target plus a stop period.
        let ring_ms = occ / pps * 1e3;
        let q = m(r, "sink.owd_avg_ms") - ring_ms;
        assert!(q >= target && q <= 1.5 * target + stop_ms, "flood waits {q} ms in fq_codel at target {target} ms");
        assert!(ring_ms < 0.25 * m(r, "sink.owd_avg_ms"));
    }
    let d = m(&t20, "sink.owd_avg_ms") - m(&t5, "sink.owd_avg_ms");
    assert!((d / 15.0 - 1.0).abs() < 0.3, "15 ms more target adds {d} ms to the flood's delay");
    assert!(m(&stock, "ring.drops") > 0.0);
    let (a, b) = (m(&stock, "consumer.pps"), pps);
    assert!((b / a - 1.0).abs() < 0.01, "reader {b} pps with backpressure at txqueuelen 16 vs {a} stock");

    let big = run("tap-fq_codel.toml", &["duration=2s", "warmup=5s", "device.txqueuelen=1000"]);
    let (wq, wr) = (m(&big, "ping.wait_qdisc_ms"), m(&big, "ping.wait_ring_ms"));
    assert!(wr > 2.0 * wq, "at txqueuelen 1000 the probe waits {wr} ms in the ring, {wq} ms in the qdisc");
    assert!(wr > 0.4 * 1000.0 / m(&big, "consumer.pps") * 1e3);
}

/// Placement is data: the flood's process runs where `traffic.N.cpu` puts it, and with
/// the driver's XPS map its packets leave by that CPU's queue, whose NAPI runs on the
/// queue's IRQ CPU.
#[test]
fn placement_moves_the_work_between_cpus() {
    let base = ["duration=500ms", "warmup=100ms", "machine.cpus=4", "device.tx_queues=4", "qdisc.kind=mq", "consumer.nrules=0"];
    let on = |extra: &[&str]| {
        let mut set: Vec<&str> = base.to_vec();
        set.extend_from_slice(extra);
        run("veth-bql.toml", &set)
    };
    // The file steers to tx-1 (xps_txq = 1), whose NAPI runs on irq_cpus[1]: CPU 2.
    let r = on(&[]);
    assert!(m(&r, "cpu.0.busy_pct") > 50.0 && m(&r, "cpu.2.busy_pct") > 50.0, "{:?}", r.metrics);
    assert!(m(&r, "cpu.1.busy_pct") < 1.0 && m(&r, "cpu.3.busy_pct") < 1.0);
    // The flood on CPU 3 with XPS by CPU: queue 3, polled on irq_cpus[3] = CPU 1.
    let text = scenario_text("veth-bql.toml").replace("xps_txq = 1", "xps = \"cpu\"");
    let mut set: Vec<&str> = base.to_vec();
    set.push("traffic.0.cpu=3");
    let r = run_text(&text, &set);
    assert!(m(&r, "cpu.3.busy_pct") > 50.0 && m(&r, "cpu.1.busy_pct") > 50.0, "{:?}", r.metrics);
    assert!(m(&r, "cpu.0.busy_pct") < 1.0 && m(&r, "cpu.2.busy_pct") < 1.0);
    assert!(m(&r, "bql.limit_avg") > 0.0, "the measured queue is the one XPS picked");
}

/// Probes that never come back are lost, not "0% loss of 0 probes": a tap reader that
/// takes 50 ms a frame behind a backpressured 1000-entry ring holds a probe for ~50 s,
/// so every probe sent more than the prober's 2 s timeout before the end is lost. (The
/// queue stays stopped longer than the TX watchdog's 5 s, a finding of its own.)
#[test]
fn unanswered_probes_are_lost_after_the_timeout() {
    let set: Vec<String> = ["device.backpressure=true", "consumer.app_cost=50ms", "traffic.0.sndbuf=64KiB"].map(String::from).to_vec();
    let scn = darkbuf_scenario::load(&common::scenario_path("tap-reader.toml"), &set).unwrap();
    let (r, _) = darkbuf_sim::simulate(&scn, &darkbuf_measure::Profile::load("seed-vm").unwrap(), 1).unwrap();
    assert_eq!(m(&r, "ping.loss_pct"), 100.0);
    assert!(m(&r, "ping.probes") >= 25.0, "{}", m(&r, "ping.probes"));
}

/// A flood's `flows` are sockets, each with its own send buffer, as the kernel
/// backend's flood opens them (one `SO_SNDBUF` per socket): four flows keep four times
/// one flow's skbs in a queue that only the send buffers bound. Each socket sends while
/// `sk_wmem_alloc` < sndbuf (2 x 100,000 bytes = 87 skbs of truesize 2,304) and, once
/// blocked, sleeps until it falls under half (`sock_writeable()`), so one socket keeps
/// between 44 and 87 skbs in the qdisc; htb at 10 Mbit drains what a 20 Mbit/s flood
/// asks to send. Before, the flows shared one send buffer and four kept what one keeps.
#[test]
fn each_flow_of_a_flood_has_its_own_send_buffer() {
    let text = |flows: u32| {
        format!(
            "name = \"f\"\nduration = \"2s\"\nwarmup = \"1s\"\n[device]\ndriver = \"veth\"\n[qdisc]\nkind = \"htb\"\ndefault = \"10\"\n\
             [[qdisc.class]]\nclassid = \"1:10\"\nrate = \"10mbit\"\nqdisc = \"pfifo\"\nqdisc_params = {{ limit = 10000 }}\n\
             [[traffic]]\nkind = \"udp\"\nsize = 1400\nrate = \"20Mbit\"\nflows = {flows}\nsndbuf = 100000\n"
        )
    };
    let one = m(&run_text(&text(1), &[]), "qdisc.backlog_avg_pkts");
    let four = run_text(&text(4), &[]);
    assert!((44.0..=87.0).contains(&one), "one socket: {one} skbs");
    let b4 = m(&four, "qdisc.backlog_avg_pkts");
    assert!((b4 / one - 4.0).abs() < 0.1, "four sockets: {b4} skbs, one: {one}");
    assert_eq!(m(&four, "qdisc.drops"), 0.0);
}
