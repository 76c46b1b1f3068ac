//! Tests of the fq model (net/sched/sch_fq.c) with exact expected values worked out
//! from the kernel's algorithm, plus the packet-conservation property test.
//!
//! Conventions: `DevInfo::default()` (MTU 1514, HZ 250: one jiffy = 4 ms), so quantum
//! = 3028, initial_quantum = 15140, refill_delay = 10 jiffies, timer_slack = 10 us.
//! Packets stamped `edt = now + 1` are not eligible for the 6.7 fast path (their
//! `time_to_send` is in the future), which lets a test exercise the flows themselves.

use darkbuf_model::params::{ParamValue, Params};
use darkbuf_model::qdisc::fq::{Fq, FqVersion, FQ_DEFAULT_PRIO2BAND, FQ_DEFAULT_WEIGHTS};
use darkbuf_model::qdisc::{DevInfo, EnqueueVerdict, Qdisc};
use darkbuf_model::Skb;
use proptest::prelude::*;
use std::collections::HashMap;

mod common;


fn s(v: &str) -> ParamValue {
    ParamValue::Str(v.into())
}

fn int(v: i64) -> ParamValue {
    ParamValue::Int(v)
}

fn fq(kv: &[(&str, ParamValue)]) -> Fq {
    Fq::from_params(Params::from_pairs(kv), &DevInfo::default()).unwrap()
}

fn err(kv: &[(&str, ParamValue)]) -> bool {
    Fq::from_params(Params::from_pairs(kv), &DevInfo::default()).is_err()
}

fn pkt(id: u32, sk: u32, len: u32) -> Skb {
    Skb { id, sk, len, flow: sk, ..Skb::default() }
}

fn xs(q: &Fq, name: &str) -> u64 {
    q.xstats().into_iter().find(|(k, _)| *k == name).unwrap_or_else(|| panic!("no xstat {name}")).1
}

fn enq(q: &mut Fq, skb: Skb, now: u64) -> EnqueueVerdict {
    let mut drops = Vec::new();
    let v = q.enqueue(skb, now, &mut drops);
    assert_eq!(v == EnqueueVerdict::Dropped, drops.len() == 1);
    v
}

/// Drives the qdisc like the simulator: dequeue until None, then jump to the
/// watchdog's wake-up. Returns (time, packet id) of every packet, in order.
fn run(q: &mut Fq, start: u64) -> Vec<(u64, u32)> {
    let mut out = Vec::new();
    let mut drops = Vec::new();
    let mut now = start;
    for _ in 0..100_000 {
        while let Some(p) = q.dequeue(now, &mut drops) {
            out.push((now, p.id));
        }
        if q.qlen() == 0 {
            return out;
        }
        let t = q.next_wakeup().expect("a throttled fq arms its watchdog");
        assert!(t > now);
        now = t;
    }
    panic!("did not drain");
}

/// Lengths of runs of consecutive equal values.
fn runs<T: PartialEq + Copy>(v: &[T]) -> Vec<(T, usize)> {
    let mut r: Vec<(T, usize)> = Vec::new();
    for &x in v {
        match r.last_mut() {
            Some((y, n)) if *y == x => *n += 1,
            _ => r.push((x, 1)),
        }
    }
    r
}

// ---------------------------------------------------------------- parameters

#[test]
fn defaults_follow_fq_init() {
    let q = fq(&[]);
    let c = q.config();
    assert_eq!(c.version, FqVersion::V6_7);
    assert_eq!((c.limit, c.flow_plimit, c.quantum, c.initial_quantum), (10_000, 100, 3028, 15_140));
    assert_eq!(c.flow_refill_delay, 10); // msecs_to_jiffies(40) at HZ 250
    assert_eq!(c.flow_max_rate, u64::MAX);
    assert_eq!((c.buckets_log, c.orphan_mask, c.low_rate_threshold), (10, 1023, 68_750));
    assert!(c.rate_enable && c.horizon_drop);
    assert_eq!(c.ce_threshold_ns, u32::MAX as u64 * 1000);
    assert_eq!((c.timer_slack_ns, c.horizon_ns, c.offload_horizon_ns), (10_000, 10_000_000_000, 0));
    assert_eq!(c.weights, FQ_DEFAULT_WEIGHTS);
    assert_eq!(c.weights, [589_824, 196_608, 65_536]);
    assert_eq!(c.prio2band, FQ_DEFAULT_PRIO2BAND);
    assert!(!q.can_bypass());
    assert_eq!(q.kind(), "fq");
}

#[test]
fn parameters_in_tc_units() {
    let q = fq(&[
        ("maxrate", s("12.112mbit")),
        ("low_rate_threshold", s("1mbit")),
        ("buckets", int(1000)),
        ("quantum", s("1514b")),
        ("initial_quantum", int(0)),
        ("refill_delay", s("41ms")),
        ("ce_threshold", s("2.5ms")),
        ("timer_slack", s("123ns")),
        ("horizon", s("1500us")),
        ("horizon_cap", ParamValue::Bool(true)),
        ("nopacing", ParamValue::Bool(true)),
        ("orphan_mask", int(63)),
        ("bands", int(3)),
        ("priomap", s("0 0 0 0 1 1 1 1 2 2 2 2 0 0 0 0")),
        ("weights", s("16384 32768 65536")),
        ("offload_horizon", s("0us")),
    ]);
    let c = q.config();
    assert_eq!(c.flow_max_rate, 1_514_000); // bytes/s
    assert_eq!(c.low_rate_threshold, 125_000);
    assert_eq!(c.buckets_log, 10); // tc rounds 1000 up to 1024
    assert_eq!((c.quantum, c.initial_quantum), (1514, 0));
    assert_eq!(c.flow_refill_delay, 11); // usecs_to_jiffies(41000) = ceil(41000 / 4000)
    assert_eq!(c.ce_threshold_ns, 2_500_000);
    assert_eq!((c.timer_slack_ns, c.horizon_ns), (123, 1_500_000));
    assert!(!c.horizon_drop && !c.rate_enable);
    assert_eq!(c.orphan_mask, 63);
    assert_eq!(c.prio2band, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 0]);
    assert_eq!(c.weights, [16_384, 32_768, 65_536]);
    // maxrate equal to ~0U bytes/s means unlimited, as the kernel maps it.
    let q = fq(&[("maxrate", s("34359738360bit"))]);
    assert_eq!(q.config().flow_max_rate, u64::MAX);
    let q = fq(&[("buckets", int(262_144)), ("version", s("6.6"))]);
    assert_eq!((q.config().buckets_log, q.config().version), (18, FqVersion::V6_6));
    assert!(!fq(&[("pacing", ParamValue::Bool(false))]).config().rate_enable);
    assert!(!fq(&[("horizon_drop", ParamValue::Bool(false))]).config().horizon_drop);
}

#[test]
fn invalid_parameters_are_rejected() {
    assert!(err(&[("quantum", int(0))]));
    assert!(err(&[("quantum", int((1 << 20) + 1))]));
    assert!(!err(&[("quantum", int(1 << 20))]));
    assert!(err(&[("initial_quantum", int(i32::MAX as i64 + 1))]));
    assert!(err(&[("buckets", int(1))])); // buckets_log 0
    assert!(err(&[("buckets", int(262_145))])); // buckets_log 19
    assert!(err(&[("weights", s("16383 65536 65536"))]));
    assert!(err(&[("weights", s("65536 65536"))]));
    assert!(err(&[("priomap", s("0 1 2 3 0 0 0 0 0 0 0 0 0 0 0 0"))]));
    assert!(err(&[("bands", int(4))]));
    assert!(err(&[("offload_horizon", s("1us"))]));
    assert!(err(&[("maxrate", s("40gbit"))])); // beyond tc's 32-bit bytes/s
    assert!(err(&[("pacing", ParamValue::Bool(true)), ("nopacing", ParamValue::Bool(true))]));
    assert!(err(&[("horizon_drop", ParamValue::Bool(true)), ("horizon_cap", ParamValue::Bool(true))]));
    assert!(!err(&[("pacing", ParamValue::Bool(false)), ("nopacing", ParamValue::Bool(true))]));
    assert!(err(&[("refill_delay", int(40))])); // a duration needs a unit
    assert!(err(&[("version", s("6.8"))]));
    assert!(err(&[("version", ParamValue::Float(6.8))]));
    assert_eq!(fq(&[("version", ParamValue::Float(6.6))]).config().version, FqVersion::V6_6);
    assert_eq!(fq(&[("version", ParamValue::Float(6.7))]).config().version, FqVersion::V6_7);
    assert!(err(&[("defrate", s("1mbit"))]));
    assert!(err(&[("flows", int(10))]));
    // Bands do not exist before 6.7.
    assert!(err(&[("version", s("6.6")), ("priomap", s("0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"))]));
    assert!(err(&[("version", s("6.6")), ("weights", s("65536 65536 65536"))]));
    // A device MTU of 0 gives quantum 0 (DRR would never progress); HZ 0 has no jiffies.
    let dev = DevInfo { mtu_l2: 0, ..DevInfo::default() };
    assert!(Fq::from_params(Params::from_pairs(&[]), &dev).is_err());
    assert!(Fq::from_params(Params::from_pairs(&[("quantum", int(1514))]), &dev).is_ok());
    let dev = DevInfo { mtu_l2: u32::MAX, ..DevInfo::default() };
    assert!(Fq::from_params(Params::from_pairs(&[]), &dev).is_err());
    let dev = DevInfo { hz: 0, ..DevInfo::default() };
    assert!(Fq::from_params(Params::from_pairs(&[]), &dev).is_err());
}

// ---------------------------------------------------------------- pacing

/// 1514 B at maxrate 12.112 Mbit/s = 1,514,000 B/s: 1514e9 / 1514000 = 1,000,000 ns.
/// EDT-stamped packets (due now) are paced per packet by maxrate.
///
/// - t = 1000: packet 0 leaves; time_next_packet = 1000 + 1 ms = 1,001,000.
/// - Next dequeue: throttled (throttled = 1), watchdog range [1,001,000, +10 us]: the
///   hrtimer fires at its hard expiry, 1,011,000.
/// - t = 1,011,000: packet 1; delay 1 ms - min(0.5 ms, 1,011,000 - 1,001,000) = 990 us,
///   so time_next_packet = 2,001,000 and the next wake-up is 2,011,000; and so on.
///
/// Each unthrottle is 10 us late: the EWMA (gain 1/8) goes 1250, 2344, 3301, 4139.
#[test]
fn maxrate_paces_edt_packets_one_ms_apart() {
    let mut q = fq(&[("maxrate", s("12.112mbit"))]);
    for id in 0..5 {
        let mut p = pkt(id, 1, 1514);
        p.edt = 1000;
        assert_eq!(enq(&mut q, p, 1000), EnqueueVerdict::Success);
    }
    let mut drops = Vec::new();
    assert_eq!(q.dequeue(1000, &mut drops).map(|p| p.id), Some(0));
    assert!(q.dequeue(1000, &mut drops).is_none());
    assert_eq!(q.time_next_delayed_flow(), 1_001_000);
    assert_eq!(q.next_wakeup(), Some(1_011_000));
    assert_eq!((q.throttled_flows(), xs(&q, "throttled")), (1, 1));
    assert_eq!(xs(&q, "time_next_delayed_flow"), 1_010_000); // tc's next_packet_delay
    // Nothing leaves before time_next_packet; the armed timer (soft expiry within
    // [1,001,000, +10 us]) is kept, not re-armed.
    assert!(q.dequeue(1_000_999, &mut drops).is_none());
    assert_eq!(q.next_wakeup(), Some(1_011_000));
    // A dequeue between time_next_packet and the timer (e.g. after another enqueue)
    // sends at once: pacing is a lower bound, the watchdog only the fallback.
    let out = run(&mut q, 1_000_999);
    assert_eq!(
        out,
        [(1_011_000, 1), (2_011_000, 2), (3_011_000, 3), (4_011_000, 4)]
    );
    assert_eq!(xs(&q, "throttled"), 4);
    assert_eq!(xs(&q, "unthrottle_latency_ns"), 4139);
    assert_eq!(xs(&q, "fastpath_packets"), 0); // maxrate disables the fast path
}

/// With timer_slack 0 the watchdog fires exactly at time_next_packet and the gap is
/// exactly 1 ms from the first packet on; zero-lateness samples leave the 6.7+ EWMA at 0.
#[test]
fn maxrate_gap_without_timer_slack() {
    let mut q = fq(&[("maxrate", s("12.112mbit")), ("timer_slack", s("0us"))]);
    for id in 0..4 {
        let mut p = pkt(id, 1, 1514);
        p.edt = 1000;
        enq(&mut q, p, 1000);
    }
    let out = run(&mut q, 1000);
    assert_eq!(out, [(1000, 0), (1_001_000, 1), (2_001_000, 2), (3_001_000, 3)]);
    assert_eq!(xs(&q, "unthrottle_latency_ns"), 0);
    // 6.6 decays the EWMA on zero samples too (still 0 here) and paces identically.
    let mut q = fq(&[("maxrate", s("12.112mbit")), ("timer_slack", s("0us")), ("version", s("6.6"))]);
    for id in 0..4 {
        let mut p = pkt(id, 1, 1514);
        p.edt = 1000;
        enq(&mut q, p, 1000);
    }
    assert_eq!(run(&mut q, 1000), [(1000, 0), (1_001_000, 1), (2_001_000, 2), (3_001_000, 3)]);
}

/// Without an EDT stamp, pacing is charged once per quantum: plen = max(1514, 3028)
/// and no delay while credit > 0. A new flow has initial_quantum = 15140 of credit:
/// 10 packets leave at once (credit 15140 - 10 * 1514 = 0); the 10th sets
/// time_next_packet = 0 + 3028e9 / 1514000 = 2 ms. Then each round refills 3028:
/// two packets per 2 ms, at the watchdog's hard expiry (+10 us), with the second
/// packet's delay shortened by the 10 us lateness (next at 4,000,000).
#[test]
fn initial_quantum_burst_then_pacing_per_quantum() {
    let mut q = fq(&[("maxrate", s("12.112mbit"))]);
    for id in 0..14 {
        enq(&mut q, pkt(id, 1, 1514), 0);
    }
    let out = run(&mut q, 0);
    let mut expected: Vec<(u64, u32)> = (0..10).map(|id| (0, id)).collect();
    expected.extend([(2_010_000, 10), (2_010_000, 11), (4_010_000, 12), (4_010_000, 13)]);
    assert_eq!(out, expected);
    // A smaller initial_quantum shortens the burst: 3028 lets 2 packets go first.
    let mut q = fq(&[("maxrate", s("12.112mbit")), ("initial_quantum", int(3028))]);
    for id in 0..4 {
        enq(&mut q, pkt(id, 1, 1514), 0);
    }
    assert_eq!(run(&mut q, 0), [(0, 0), (0, 1), (2_010_000, 2), (2_010_000, 3)]);
}

/// Socket pacing rate below low_rate_threshold (68750 B/s): every packet is paced
/// (credit forced to 0). 1000 B at 50000 B/s = 20 ms per packet; the first one leaves
/// at once, then at 20 ms + 10 us (slack), then at 40 ms + 10 us (20 ms minus the 10 us
/// lateness, plus the slack). Above the threshold (100000 B/s) the initial credit
/// covers all three packets: no delay at all.
#[test]
fn low_rate_threshold_paces_every_packet() {
    let mut q = fq(&[]);
    for id in 0..3 {
        let mut p = pkt(id, 1, 1000);
        p.pacing_rate = 50_000;
        enq(&mut q, p, 0);
    }
    assert_eq!(xs(&q, "fastpath_packets"), 0); // SO_MAX_PACING_RATE keeps it off the fast path
    assert_eq!(run(&mut q, 0), [(0, 0), (20_010_000, 1), (40_010_000, 2)]);

    let mut q = fq(&[]);
    for id in 0..3 {
        let mut p = pkt(id, 1, 1000);
        p.pacing_rate = 100_000;
        enq(&mut q, p, 0);
    }
    assert_eq!(run(&mut q, 0), [(0, 0), (0, 1), (0, 2)]);
}

/// A delay above 1 s is clamped to 1 s and counted: 1514 B at 1000 B/s = 1.514 s.
#[test]
fn pkts_too_long_clamps_to_one_second() {
    let mut q = fq(&[]);
    for id in 0..2 {
        let mut p = pkt(id, 1, 1514);
        p.pacing_rate = 1000;
        enq(&mut q, p, 0);
    }
    assert_eq!(run(&mut q, 0), [(0, 0), (1_000_010_000, 1)]);
    assert_eq!(xs(&q, "pkts_too_long"), 2);
}

/// `nopacing`: maxrate is ignored for pacing (but still keeps packets off the fast
/// path); EDT stamps are still honoured.
#[test]
fn nopacing_ignores_rates_but_not_edt() {
    let mut q = fq(&[("maxrate", s("1mbit")), ("nopacing", ParamValue::Bool(true))]);
    for id in 0..3 {
        enq(&mut q, pkt(id, 1, 1514), 0);
    }
    let mut p = pkt(3, 1, 1514);
    p.edt = 5_000_000;
    enq(&mut q, p, 0);
    assert_eq!(xs(&q, "fastpath_packets"), 0);
    assert_eq!(run(&mut q, 0), [(0, 0), (0, 1), (0, 2), (5_010_000, 3)]);
}

/// EDT stamps out of order within one flow: an earlier stamp than the tail's goes to
/// the flow's time-ordered tree, and fq_peek() takes the earliest. Stamps 5, 3, 4 ms
/// leave at 3, 4, 5 ms, each at the watchdog's hard expiry (+10 us).
#[test]
fn edt_out_of_order_within_a_flow() {
    let mut q = fq(&[]);
    for (id, edt) in [(0u32, 5_000_000u64), (1, 3_000_000), (2, 4_000_000)] {
        let mut p = pkt(id, 1, 1514);
        p.edt = edt;
        enq(&mut q, p, 0);
    }
    assert_eq!(run(&mut q, 0), [(3_010_000, 1), (4_010_000, 2), (5_010_000, 0)]);
    assert_eq!(xs(&q, "throttled"), 3);
}

// ---------------------------------------------------------------- horizon, CE

/// horizon 10 s: an EDT beyond now + 10 s is dropped (horizon_drop, the default);
/// exactly now + 10 s is accepted. With horizon_cap the stamp is capped to now + 10 s.
#[test]
fn horizon_drop_versus_cap() {
    let now = 1000;
    let mut q = fq(&[]);
    let mut far = pkt(1, 1, 1514);
    far.edt = now + 10_000_000_001;
    assert_eq!(enq(&mut q, far, now), EnqueueVerdict::Dropped);
    let mut edge = pkt(2, 1, 1514);
    edge.edt = now + 10_000_000_000;
    assert_eq!(enq(&mut q, edge, now), EnqueueVerdict::Success);
    assert_eq!((xs(&q, "horizon_drops"), xs(&q, "horizon_caps"), q.stats().drops), (1, 0, 1));
    assert_eq!(q.qlen(), 1);

    let mut q = fq(&[("horizon_cap", ParamValue::Bool(true))]);
    assert_eq!(enq(&mut q, far, now), EnqueueVerdict::Success);
    assert_eq!((xs(&q, "horizon_drops"), xs(&q, "horizon_caps"), q.stats().drops), (0, 1, 0));
    let mut drops = Vec::new();
    assert!(q.dequeue(now, &mut drops).is_none());
    assert_eq!(q.next_wakeup(), Some(10_000_011_000));
    let p = q.dequeue(10_000_011_000, &mut drops).unwrap();
    assert_eq!((p.id, p.edt), (1, 10_000_001_000)); // the capped stamp

    // A shorter horizon.
    let mut q = fq(&[("horizon", s("1ms"))]);
    let mut p = pkt(3, 1, 100);
    p.edt = 1_000_001;
    assert_eq!(enq(&mut q, p, 0), EnqueueVerdict::Dropped);
}

/// ce_threshold 1 ms: a packet is marked when now - time_next_packet > 1 ms, i.e. for
/// time_to_send 1 when dequeued at 1,000,002 or later. ce_mark counts even when the
/// packet is Not-ECT (INET_ECN_set_ce() fails, the counter does not care).
#[test]
fn ce_threshold_marks_late_packets() {
    let mut drops = Vec::new();
    for (at, marked) in [(1_000_001u64, false), (1_000_002, true)] {
        let mut q = fq(&[("ce_threshold", s("1ms"))]);
        let mut p = pkt(1, 1, 1514);
        p.edt = 1;
        p.ecn = Skb::ECN_ECT0;
        enq(&mut q, p, 0);
        let out = q.dequeue(at, &mut drops).unwrap();
        assert_eq!(out.ecn == Skb::ECN_CE, marked);
        assert_eq!(xs(&q, "ce_mark"), marked as u64);
    }
    let mut q = fq(&[("ce_threshold", s("1ms"))]);
    let mut p = pkt(1, 1, 1514);
    p.edt = 1;
    enq(&mut q, p, 0);
    let out = q.dequeue(5_000_000, &mut drops).unwrap();
    assert_eq!((out.ecn, xs(&q, "ce_mark")), (Skb::ECN_NOT_ECT, 1));
}

// ---------------------------------------------------------------- flows

/// The 6.7 fast path: into an empty fq, packets that may leave now go to the internal
/// FIFO while no flow is eligible and it holds fewer than 8 packets. The 9th packet
/// finds 8 there and creates the socket's flow; from then on the flow has packets
/// (flows != inactive + throttled) and no packet takes the fast path. With
/// flow_limit 3 the flow takes packets 8, 9, 10 and drops 11 and 12 (flows_plimit).
/// The internal FIFO is served first.
/// The fix of 2024-11-22 ("sch_fq: don't follow the fast path if Tx is behind now"): a
/// packet that may leave now does not take the fast path while a delayed flow is
/// already due and not yet served. Before it (`fastpath_when_behind`), the packet goes
/// to the internal queue and overtakes the due flow's older packet: the reordering
/// behind that fix's TCP retransmissions. Neither key exists before 6.7.
#[test]
fn fastpath_when_behind_overtakes_a_due_flow() {
    for (behind, order, fast) in [(false, [0, 1], 0), (true, [1, 0], 1)] {
        let mut q = fq(&[("fastpath_when_behind", ParamValue::Bool(behind))]);
        enq(&mut q, Skb { edt: 1_000, ..pkt(0, 1, 100) }, 0);
        assert!(q.dequeue(0, &mut Vec::new()).is_none(), "throttled until 1 us");
        // At 2 us the flow is due, and nothing has dequeued yet.
        enq(&mut q, Skb { edt: 2_000, ..pkt(1, 1, 100) }, 2_000);
        let ids: Vec<u32> = run(&mut q, 2_000).iter().map(|&(_, id)| id).collect();
        assert_eq!(ids, order, "fastpath_when_behind = {behind}");
        assert_eq!(xs(&q, "fastpath_packets"), fast);
    }
    assert!(err(&[("version", s("6.6")), ("fastpath_when_behind", ParamValue::Bool(true))]));
}

#[test]
fn fastpath_then_flow_limit() {
    let mut q = fq(&[("flow_limit", int(3))]);
    let verdicts: Vec<EnqueueVerdict> = (0..13).map(|id| enq(&mut q, pkt(id, 1, 100), 0)).collect();
    assert!(verdicts[..11].iter().all(|v| *v == EnqueueVerdict::Success));
    assert_eq!(verdicts[11..], [EnqueueVerdict::Dropped, EnqueueVerdict::Dropped]);
    assert_eq!(xs(&q, "fastpath_packets"), 8);
    assert_eq!((xs(&q, "flows_plimit"), q.stats().drops), (2, 2));
    assert_eq!((q.flows(), q.inactive_flows(), q.qlen(), q.backlog()), (1, 0, 11, 1100));
    let ids: Vec<u32> = run(&mut q, 0).iter().map(|&(_, id)| id).collect();
    assert_eq!(ids, (0..11).collect::<Vec<_>>());
    assert_eq!(q.inactive_flows(), 1);
}

/// Default flow_limit 100 counts per socket: a second socket is unaffected.
#[test]
fn flow_limit_is_per_socket() {
    let mut q = fq(&[("maxrate", s("1gbit"))]); // no fast path
    let mut dropped = 0;
    for id in 0..120 {
        if enq(&mut q, pkt(id, 1, 100), 0) == EnqueueVerdict::Dropped {
            dropped += 1;
        }
    }
    assert_eq!(dropped, 20);
    assert_eq!(enq(&mut q, pkt(500, 2, 100), 0), EnqueueVerdict::Success);
    assert_eq!((xs(&q, "flows_plimit"), q.flows(), q.qlen()), (20, 2, 101));
}

/// Fairness by quantum between a 1514 B socket (A) and a 66 B socket (B), both
/// backlogged, quantum 3028, initial_quantum 15140, no pacing limit.
///
/// Both start on the new list (A first): A sends 10 packets (15140 / 1514), then B
/// 230 (15140 / 66 = 229.4, served while credit > 0; B ends at -40). Then each round
/// adds 3028: A 2 packets; B starts at 2988 -> 46 packets (-48), 2980 -> 46 (-56),
/// 2972 -> 46 (-64), 2964 -> 45 (-6), 3022 -> 46 (-14): about 3028 bytes each.
#[test]
fn per_socket_fairness_by_quantum() {
    let mut q = fq(&[("flow_limit", int(1000))]);
    let mut id = 0;
    for _ in 0..30 {
        let mut p = pkt(id, 1, 1514);
        p.edt = 1;
        enq(&mut q, p, 0);
        id += 1;
    }
    for _ in 0..600 {
        let mut p = pkt(id, 2, 66);
        p.edt = 1;
        enq(&mut q, p, 0);
        id += 1;
    }
    let mut drops = Vec::new();
    let socks: Vec<u32> = std::iter::from_fn(|| q.dequeue(1, &mut drops)).map(|p| p.sk).collect();
    let r = runs(&socks);
    assert_eq!(
        r[..11],
        [(1, 10), (2, 230), (1, 2), (2, 46), (1, 2), (2, 46), (1, 2), (2, 46), (1, 2), (2, 45), (1, 2)]
    );
    assert_eq!(r[11], (2, 46));
}

/// refill_delay: a flow detached for more than refill_delay (10 jiffies = 40 ms at
/// HZ 250) gets credit = max(credit, quantum) back when it returns.
///
/// A (sk 1) sends 9 x 1514 B: credit 15140 - 13626 = 1514. B (sk 2) has one packet due
/// at 10 ms, which keeps the qdisc non-empty, so the next dequeue walks past the empty
/// A (new list -> old list -> detached at jiffy 0, age = 0 | 1 = 1) and throttles B.
/// A returns at T: refilled iff jiffies(T) is after age + 10 = 11, i.e. from jiffy 12
/// (48 ms) on; at 44 ms (jiffy 11) it keeps its 1514.
#[test]
fn refill_delay_restores_quantum() {
    for (t, credit) in [(44_000_000u64, 1514), (48_000_000, 3028)] {
        let mut q = fq(&[]);
        for id in 0..9 {
            let mut p = pkt(id, 1, 1514);
            p.edt = 1;
            enq(&mut q, p, 0);
        }
        let mut b = pkt(100, 2, 100);
        b.edt = 10_000_000;
        enq(&mut q, b, 0);
        let out = run(&mut q, 1);
        assert_eq!(out.len(), 10);
        assert_eq!(out[9], (10_010_000, 100));
        let a = q.flow_key(&pkt(0, 1, 0));
        assert_eq!(q.flow_credit(a), Some(1514));
        let mut p = pkt(200, 1, 1514);
        p.edt = t + 1; // not eligible for the fast path: goes through the flow
        enq(&mut q, p, t);
        assert_eq!(q.flow_credit(a), Some(credit), "return at {t}");
    }
}

/// Orphans (no socket) are classified by flow hash & orphan_mask: with orphan_mask 0
/// every orphan shares one flow, so flow_limit applies to all of them together.
#[test]
fn orphans_share_flows_by_orphan_mask() {
    let mut q = fq(&[("maxrate", s("1gbit")), ("orphan_mask", int(0)), ("flow_limit", int(2))]);
    let v: Vec<EnqueueVerdict> = (0..3)
        .map(|i| {
            let mut p = pkt(i, 0, 100);
            p.flow = 1000 + i;
            enq(&mut q, p, 0)
        })
        .collect();
    assert_eq!(v[2], EnqueueVerdict::Dropped);
    assert_eq!(q.flows(), 1);
    let mut q = fq(&[("maxrate", s("1gbit")), ("flow_limit", int(2))]);
    let mut keys = std::collections::BTreeSet::new();
    for i in 0..3 {
        let mut p = pkt(i, 0, 100);
        p.flow = 1000 + i;
        keys.insert(q.flow_key(&p));
        assert_eq!(enq(&mut q, p, 0), EnqueueVerdict::Success);
    }
    assert_eq!(q.flows() as usize, keys.len());
    assert!(keys.iter().all(|k| k & 1 == 1 && (k >> 1) <= 1023));
}

// ---------------------------------------------------------------- throttling, GC

/// GC (6.7+: on every classification): a detached flow idle for more than 3 s
/// (FQ_GC_AGE = 750 jiffies) is freed when a lookup in its bucket passes it.
///
/// A (sk 1) sends one packet; B (sk 2) one due at 10 ms keeps the qdisc busy so A is
/// detached at jiffy 0 (age 1). A flow is a candidate once jiffies is after 751, i.e.
/// from 3.008 s. A packet of a socket in another bucket at 3.1 s does not touch A (GC
/// is lazy and local to the bucket); a packet of a socket C in A's bucket at 3.004 s
/// (jiffy 751) does not free it either; at 3.2 s one does (gc_flows 1).
#[test]
fn gc_frees_idle_flows_in_the_searched_bucket() {
    let q0 = fq(&[]);
    let key = |sk: u32| q0.flow_key(&pkt(0, sk, 0));
    let bucket_a = q0.bucket_of_key(key(1));
    let c_sk = (3..100_000).find(|&sk| q0.bucket_of_key(key(sk)) == bucket_a).unwrap();
    let d_sk = (3..).find(|&sk| q0.bucket_of_key(key(sk)) != bucket_a).unwrap();

    let setup = || {
        let mut q = fq(&[]);
        let mut a = pkt(1, 1, 1514);
        a.edt = 1;
        enq(&mut q, a, 0);
        let mut b = pkt(2, 2, 100);
        b.edt = 10_000_000;
        enq(&mut q, b, 0);
        assert_eq!(run(&mut q, 1), [(1, 1), (10_010_000, 2)]);
        assert_eq!((q.flows(), q.inactive_flows(), xs(&q, "throttled")), (2, 2, 1));
        q
    };
    // Packets with edt = now + 1 skip the fast path and go through fq_classify().
    let send = |q: &mut Fq, sk: u32, now: u64| {
        let mut p = pkt(9, sk, 100);
        p.edt = now + 1;
        enq(q, p, now);
    };

    let mut q = setup();
    send(&mut q, d_sk, 3_100_000_000);
    assert_eq!((xs(&q, "gc_flows"), q.flows()), (0, 3));
    send(&mut q, c_sk, 3_200_000_000);
    assert_eq!((xs(&q, "gc_flows"), q.flows()), (1, 3));
    assert_eq!(q.flow_credit(key(1)), None);

    let mut q = setup();
    send(&mut q, c_sk, 3_004_000_000);
    assert_eq!((xs(&q, "gc_flows"), q.flows()), (0, 3));

    // 6.6 runs the GC only with flows >= 2 * buckets: never here.
    let mut q = fq(&[("version", s("6.6"))]);
    let mut a = pkt(1, 1, 1514);
    a.edt = 1;
    enq(&mut q, a, 0);
    let mut b = pkt(2, 2, 100);
    b.edt = 10_000_000;
    enq(&mut q, b, 0);
    run(&mut q, 1);
    send(&mut q, c_sk, 3_200_000_000);
    assert_eq!((xs(&q, "gc_flows"), q.flows()), (0, 3));
}

/// 6.6's GC: with buckets 2 (buckets_log 1) it runs once flows >= 4 and more than half
/// the flows are inactive (detached), and frees the idle flows the lookup passes.
///
/// Seven sockets c0 < c1 < ... < c6 hash to bucket 0 (keys sorted as the ids). c1..c5
/// send one packet each at t = 0 and are drained: each flow found empty on the new
/// list while the old list is empty is detached (c1..c4); c5 stays on the new list,
/// since dequeue returns at qlen 0. flows 5, inactive 4.
///
/// At 4 s (idle > 3 s) c6 arrives: the search over [k1..k5] visits k3 (idle: freed),
/// then k5 (not detached). Then c0 arrives: the search over [k1, k2, k4, k5, k6] visits
/// k4, k2, k1, all idle: three more freed.
#[test]
fn gc_6_6_needs_many_inactive_flows() {
    let mut q = fq(&[("version", s("6.6")), ("buckets", int(2))]);
    let c: Vec<u32> = (1..).filter(|&sk| q.bucket_of_key(q.flow_key(&pkt(0, sk, 0))) == 0).take(7).collect();
    for &sk in &c[1..6] {
        enq(&mut q, pkt(sk, sk, 100), 0);
    }
    let mut drops = Vec::new();
    while q.dequeue(0, &mut drops).is_some() {}
    assert_eq!((q.flows(), q.inactive_flows()), (5, 4));
    enq(&mut q, pkt(100, c[6], 100), 4_000_000_000);
    assert_eq!((xs(&q, "gc_flows"), q.flows(), q.inactive_flows()), (1, 5, 3));
    assert_eq!(q.flow_credit(q.flow_key(&pkt(0, c[3], 0))), None);
    enq(&mut q, pkt(101, c[0], 100), 4_000_000_000);
    assert_eq!((xs(&q, "gc_flows"), q.flows(), q.inactive_flows()), (4, 3, 0));
    for gone in [c[1], c[2], c[4]] {
        assert_eq!(q.flow_credit(q.flow_key(&pkt(0, gone, 0))), None);
    }
    // With 1024 buckets (flows < 2048) the same history frees nothing.
    let mut q = fq(&[("version", s("6.6"))]);
    for &sk in &c[1..6] {
        enq(&mut q, pkt(sk, sk, 100), 0);
    }
    while q.dequeue(0, &mut drops).is_some() {}
    enq(&mut q, pkt(100, c[6], 100), 4_000_000_000);
    assert_eq!((xs(&q, "gc_flows"), q.flows()), (0, 6));
}

// ---------------------------------------------------------------- bands (6.7+)

/// Band WRR with equal weights (16384 each), flow X in band 0 (priority 6) and flow Y
/// in band 2 (priority 1), 1514 B packets, initial_quantum = quantum = 3028.
///
/// Both flows start on band 0's new list: fq_enqueue() links a detached flow by its
/// old `band` (0 for a new flow) before setting the packet's band. Band 0 (credit 16384):
/// X 2 packets, Y 2 packets (Y is then requeued on band 2's old list), X 7 more
/// (16384 - 4 * 1514 = 10328 > 0 for 7 packets, ending at -270). Band 2 (16384): Y 11
/// (ends at -270). Band 0 (-270 + 16384 = 16114): X 11 (ends at -540). Band 2: Y 11.
#[test]
fn band_wrr_equal_weights() {
    let mut q = fq(&[
        ("weights", s("16384 16384 16384")),
        ("initial_quantum", int(3028)),
        ("flow_limit", int(1000)),
    ]);
    for i in 0..100 {
        let mut x = pkt(i, 1, 1514);
        x.priority = 6;
        x.edt = 1;
        enq(&mut q, x, 0);
        let mut y = pkt(1000 + i, 2, 1514);
        y.priority = 1;
        y.edt = 1;
        enq(&mut q, y, 0);
    }
    assert_eq!((xs(&q, "band0_pkts"), xs(&q, "band1_pkts"), xs(&q, "band2_pkts")), (100, 0, 100));
    let mut drops = Vec::new();
    let socks: Vec<u32> = std::iter::from_fn(|| q.dequeue(1, &mut drops)).map(|p| p.sk).collect();
    assert_eq!(runs(&socks)[..6], [(1, 2), (2, 2), (1, 7), (2, 11), (1, 11), (2, 11)]);
}

/// Default weights 589824 : 65536 (9 : 1), default initial_quantum 15140. Both flows
/// start on band 0's new list: X 10 packets, Y 10 packets (each 15140 / 1514). Band 0
/// then has 589824 - 20 * 1514 = 559544: X sends ceil(559544 / 1514) = 370 (ends at
/// -636); band 2 has 65536: Y 44 (-1080); band 0: 589188 -> 390 (-1272); band 2:
/// 64456 -> 43.
#[test]
fn band_wrr_default_weights() {
    let mut q = fq(&[("flow_limit", int(1000))]);
    for i in 0..1000 {
        let mut x = pkt(i, 1, 1514);
        x.priority = 6;
        x.edt = 1;
        enq(&mut q, x, 0);
        let mut y = pkt(10_000 + i, 2, 1514);
        y.priority = 1;
        y.edt = 1;
        enq(&mut q, y, 0);
    }
    let mut drops = Vec::new();
    let socks: Vec<u32> = std::iter::from_fn(|| q.dequeue(1, &mut drops)).map(|p| p.sk).collect();
    assert_eq!(runs(&socks)[..6], [(1, 10), (2, 10), (1, 370), (2, 44), (1, 390), (2, 43)]);
}

// ---------------------------------------------------------------- 6.6 vs 6.7

/// TC_PRIO_CONTROL: 6.6 sends priority-7 packets to the high-priority FIFO, served
/// before every flow (highprio_packets); 6.7 maps priority 7 to band 0 like any other
/// and, into an idle fq, all four packets take the fast path in arrival order.
#[test]
fn control_priority_6_6_versus_6_7() {
    let feed = |q: &mut Fq| {
        for id in 0..3 {
            enq(q, pkt(id, 1, 1514), 0);
        }
        let mut c = pkt(3, 2, 66);
        c.priority = 7;
        enq(q, c, 0);
    };
    let mut old = fq(&[("version", s("6.6"))]);
    feed(&mut old);
    let ids: Vec<u32> = run(&mut old, 0).iter().map(|&(_, id)| id).collect();
    assert_eq!(ids, [3, 0, 1, 2]);
    assert_eq!(xs(&old, "highprio_packets"), 1);
    assert!(old.xstats().iter().all(|(k, _)| *k != "fastpath_packets"));

    let mut new = fq(&[]);
    feed(&mut new);
    let ids: Vec<u32> = run(&mut new, 0).iter().map(|&(_, id)| id).collect();
    assert_eq!(ids, [0, 1, 2, 3]);
    assert_eq!((xs(&new, "highprio_packets"), xs(&new, "fastpath_packets")), (0, 4));
}

/// `limit` is per band in 6.7 (band_pkt_count, bandN_drops) and total in 6.6.
#[test]
fn limit_per_band_6_7_total_6_6() {
    let feed = |q: &mut Fq| -> Vec<EnqueueVerdict> {
        // Priorities 6, 0, 1 map to bands 0, 1, 2: two packets each, then one more in band 1.
        [6u32, 6, 0, 0, 1, 1, 0]
            .iter()
            .enumerate()
            .map(|(i, &prio)| {
                let mut p = pkt(i as u32, 10 + i as u32, 100);
                p.priority = prio;
                p.edt = 1;
                enq(q, p, 0)
            })
            .collect()
    };
    let mut new = fq(&[("limit", int(2))]);
    let v = feed(&mut new);
    assert_eq!(v.iter().filter(|v| **v == EnqueueVerdict::Dropped).count(), 1);
    assert_eq!(v[6], EnqueueVerdict::Dropped);
    assert_eq!((xs(&new, "band0_drops"), xs(&new, "band1_drops"), xs(&new, "band2_drops")), (0, 1, 0));
    assert_eq!(new.qlen(), 6);

    let mut old = fq(&[("limit", int(2)), ("version", s("6.6"))]);
    let v = feed(&mut old);
    assert_eq!(v.iter().filter(|v| **v == EnqueueVerdict::Dropped).count(), 5);
    assert_eq!((old.qlen(), old.stats().drops), (2, 5));
}

/// `inactive_flows`: 6.7 counts flows with no packets, 6.6 counts detached flows.
///
/// A sends 1 packet, B 3 (EDT 1 ns ahead, so 6.7 skips the fast path). After A's
/// packet: 6.7 counts A inactive (qlen 0); 6.6 does not (A is still on the new list).
/// The next dequeue finds A empty: 6.7 moves it to the old list ("force a pass through
/// old_flows"), 6.6 detaches it because the old list is empty (inactive 1). When B's
/// last packet leaves, dequeue stops at qlen 0: B stays on its list, so 6.7 counts 2
/// inactive flows and 6.6 only A.
#[test]
fn inactive_flows_6_6_versus_6_7() {
    for (version, after_first, at_end) in [("6.7", 1u32, 2u32), ("6.6", 0, 1)] {
        let mut q = fq(&[("version", s(version))]);
        let mut a = pkt(0, 1, 1514);
        a.edt = 1;
        enq(&mut q, a, 0);
        for i in 0..3 {
            let mut b = pkt(100 + i, 2, 1514);
            b.edt = 1;
            enq(&mut q, b, 0);
        }
        assert_eq!(q.inactive_flows(), 0, "{version}");
        let mut drops = Vec::new();
        assert_eq!(q.dequeue(1, &mut drops).map(|p| p.id), Some(0));
        assert_eq!(q.inactive_flows(), after_first, "{version}");
        let rest: Vec<u32> = std::iter::from_fn(|| q.dequeue(1, &mut drops)).map(|p| p.id).collect();
        assert_eq!(rest, [100, 101, 102]);
        assert_eq!((q.flows(), q.inactive_flows()), (2, at_end), "{version}");
        assert_eq!(xs(&q, "inactive_flows"), at_end as u64);
    }
}

// ---------------------------------------------------------------- conservation

#[derive(Clone, Debug)]
enum Op {
    Enqueue { sk: u32, flow: u32, len: u32, priority: u32, edt_ahead: Option<u64>, pacing_rate: u64 },
    Dequeue,
    Wait(u64),
    /// Jump to the watchdog's wake-up, as the simulator would.
    Wakeup,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (
            0u32..6,
            0u32..40,
            prop_oneof![Just(66u32), Just(1514), 1u32..9000],
            0u32..16,
            prop::option::of(prop_oneof![0u64..2_000_000, Just(20_000_000_000u64)]),
            prop_oneof![Just(0u64), 1_000u64..10_000_000],
        )
            .prop_map(|(sk, flow, len, priority, edt_ahead, pacing_rate)| Op::Enqueue {
                sk, flow, len, priority, edt_ahead, pacing_rate
            }),
        4 => Just(Op::Dequeue),
        1 => prop_oneof![0u64..5_000_000, 0u64..5_000_000_000].prop_map(Op::Wait),
        1 => Just(Op::Wakeup),
    ]
}

fn fq_params() -> impl Strategy<Value = Params> {
    (
        prop::option::of(prop::sample::select(vec!["6.7", "6.6"])),
        prop::option::of(0i64..40),
        prop::option::of(0i64..30),
        prop::option::of(prop::sample::select(vec![66i64, 1514, 3028, 1 << 20])),
        prop::option::of(0i64..40_000),
        prop::option::of(prop::sample::select(vec!["100kbit", "12.112mbit", "1gbit"])),
        prop::option::of(prop::sample::select(vec![2i64, 4, 16, 1024])),
        (
            prop::option::of(any::<bool>()),
            prop::option::of(prop::sample::select(vec!["0us", "1ms", "40ms"])),
            prop::option::of(prop::sample::select(vec![0i64, 3, 1023])),
            prop::option::of(prop::sample::select(vec!["0us", "10us", "1ms"])),
            prop::option::of(prop::sample::select(vec!["0us", "1ms"])),
            prop::option::of(prop::sample::select(vec!["1ms", "10s"])),
            prop::option::of(any::<bool>()),
            prop::option::of(prop::sample::select(vec!["16384 16384 16384", "589824 196608 65536"])),
        ),
    )
        .prop_map(|(version, limit, flow_limit, quantum, iq, maxrate, buckets, rest)| {
            let (pacing, refill, mask, slack, ce, horizon, hdrop, weights) = rest;
            let mut kv: Vec<(&str, ParamValue)> = Vec::new();
            let v66 = version == Some("6.6");
            if let Some(v) = version {
                kv.push(("version", s(v)));
            }
            if let Some(v) = limit {
                kv.push(("limit", int(v)));
            }
            if let Some(v) = flow_limit {
                kv.push(("flow_limit", int(v)));
            }
            if let Some(v) = quantum {
                kv.push(("quantum", int(v)));
            }
            if let Some(v) = iq {
                kv.push(("initial_quantum", int(v)));
            }
            if let Some(v) = maxrate {
                kv.push(("maxrate", s(v)));
            }
            if let Some(v) = buckets {
                kv.push(("buckets", int(v)));
            }
            if let Some(v) = pacing {
                kv.push(("pacing", ParamValue::Bool(v)));
            }
            if let Some(v) = refill {
                kv.push(("refill_delay", s(v)));
            }
            if let Some(v) = mask {
                kv.push(("orphan_mask", int(v)));
            }
            if let Some(v) = slack {
                kv.push(("timer_slack", s(v)));
            }
            if let Some(v) = ce {
                kv.push(("ce_threshold", s(v)));
            }
            if let Some(v) = horizon {
                kv.push(("horizon", s(v)));
            }
            if let Some(v) = hdrop {
                kv.push(("horizon_drop", ParamValue::Bool(v)));
            }
            if let (Some(v), false) = (weights, v66) {
                kv.push(("weights", s(v)));
            }
            Params::from_pairs(&kv)
        })
}

fn take_held(held: &mut HashMap<u32, Skb>, skb: &Skb) -> Result<(), TestCaseError> {
    match held.remove(&skb.id) {
        Some(orig) => {
            prop_assert_eq!((orig.len, orig.sk, orig.flow), (skb.len, skb.sk, skb.flow));
            Ok(())
        }
        None => Err(TestCaseError::fail(format!("packet {} left twice or was never queued", skb.id))),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Random parameters (both versions) and random enqueue / dequeue / time advance
    /// sequences: enqueued = dequeued + dropped + qlen at every step, backlog is the sum
    /// of the queued lengths, no packet is lost or duplicated, and running to the
    /// watchdog's wake-ups drains everything (a paced fq always has its timer armed).
    #[test]
    fn conservation_and_liveness(
        p in fq_params(),
        hash_key in any::<u32>(),
        hz in prop::sample::select(vec![100u32, 250, 1000]),
        ops in prop::collection::vec(op(), 1..500),
    ) {
        let dev = DevInfo { hz, hash_key, ..DevInfo::default() };
        let mut q = Fq::from_params(p, &dev).expect("generated parameters are valid");
        let mut held: HashMap<u32, Skb> = HashMap::new();
        let (mut enqueued, mut dequeued, mut dropped) = (0u64, 0u64, 0u64);
        let mut drops = Vec::new();
        let mut now = 0u64;
        let mut next_id = 0u32;
        for op in ops {
            drops.clear();
            match op {
                Op::Enqueue { sk, flow, len, priority, edt_ahead, pacing_rate } => {
                    let skb = Skb {
                        id: next_id, sk, flow, len, priority,
                        edt: edt_ahead.map_or(0, |a| now + a + 1),
                        pacing_rate,
                        ecn: Skb::ECN_ECT0,
                        ..Skb::default()
                    };
                    next_id += 1;
                    enqueued += 1;
                    held.insert(skb.id, skb);
                    let v = q.enqueue(skb, now, &mut drops);
                    let arrival_dropped = drops.contains(&skb.id);
                    prop_assert_eq!(v == EnqueueVerdict::Dropped, arrival_dropped);
                    prop_assert!(v != EnqueueVerdict::Congested);
                }
                Op::Dequeue => {
                    if let Some(skb) = q.dequeue(now, &mut drops) {
                        dequeued += 1;
                        take_held(&mut held, &skb)?;
                    } else if q.qlen() > 0 {
                        let t = q.next_wakeup();
                        prop_assert!(t.is_some_and(|t| t > now), "None with packets and no timer");
                    }
                }
                Op::Wait(ns) => now += ns,
                Op::Wakeup => {
                    if let Some(t) = q.next_wakeup() {
                        now = now.max(t);
                    }
                }
            }
            common::take_dropped(&mut held, &drops)?;
            dropped += drops.len() as u64;
            prop_assert_eq!(q.stats().drops, dropped);
            prop_assert_eq!(enqueued, dequeued + dropped + q.qlen() as u64);
            prop_assert_eq!(q.qlen() as usize, held.len());
            prop_assert_eq!(q.backlog(), held.values().map(|s| s.len as u64).sum::<u64>());
            prop_assert!(q.throttled_flows() <= q.flows());
            prop_assert!(q.inactive_flows() <= q.flows());
        }
        // Drain, following the watchdog.
        let mut steps = 0;
        while q.qlen() > 0 {
            drops.clear();
            match q.dequeue(now, &mut drops) {
                Some(skb) => take_held(&mut held, &skb)?,
                None => {
                    let t = q.next_wakeup();
                    prop_assert!(t.is_some_and(|t| t > now), "stuck at {} with {} packets", now, q.qlen());
                    now = t.unwrap();
                }
            }
            prop_assert!(drops.is_empty());
            steps += 1;
            prop_assert!(steps < 200_000);
        }
        prop_assert!(held.is_empty());
        prop_assert_eq!((q.qlen(), q.backlog()), (0, 0));
    }
}

/// `tc qdisc show` of a default fq on an MTU 9000 device (psched_mtu 9014) reads as
/// seed 001 printed it, character for character; and its xstats line, after one flow
/// hit its flow_limit, counts each such drop once in both `dropped` and `flows_plimit`.
#[test]
fn tc_layout_is_the_seeds() {
    let dev = DevInfo { mtu_l2: 9014, hz: 1000, ..DevInfo::default() };
    let mut q = Fq::from_params(Params::from_pairs(&[("flow_limit", int(3))]), &dev).unwrap();
    let default = Fq::from_params(Params::default(), &dev).unwrap();
    assert_eq!(
        default.tc_options(),
        "limit 10000p flow_limit 100p buckets 1024 orphan_mask 1023 quantum 18028b initial_quantum 90140b \
         low_rate_threshold 550Kbit refill_delay 40ms timer_slack 10us horizon 10s horizon_drop"
    );
    let mut drops = Vec::new();
    for i in 0..5 {
        // In the future: not the fast path, so they go to the flow and meet its limit.
        let mut p = pkt(i, 7, 9000);
        p.edt = 1_000;
        q.enqueue(p, 0, &mut drops);
    }
    assert_eq!((q.stats().drops, xs(&q, "flows_plimit")), (2, 2));
    assert_eq!(q.tc_xstats(), "  flows 1 (inactive 0 throttled 0)\n  gc 0 highprio 0 throttled 0 flows_plimit 2");
}
