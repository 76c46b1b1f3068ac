//! CoDel (include/net/codel_impl.h, net/sched/sch_codel.c): control-law arithmetic,
//! the drop schedule, ECN and ce_threshold marking, the re-entry rule, parameters,
//! and a conservation property test.
//!
//! Times: codel time is `ns >> 10`; `at(t)` = `t << 10` ns is the instant whose codel
//! time is exactly `t`. target 5 ms = 4882, interval 100 ms = 97656.

use darkbuf_model::params::{ParamValue, Params};
use darkbuf_model::qdisc::codel::{
    codel_control_law, codel_newton_step, Codel, CodelVars, MinBacklog, CODEL_DISABLED_THRESHOLD,
};
use darkbuf_model::qdisc::{build, DevInfo, EnqueueVerdict, Qdisc};
use darkbuf_model::Skb;
use proptest::prelude::*;
use std::collections::HashMap;

mod common;

const INTERVAL: u32 = 97656;


fn s(v: &str) -> ParamValue {
    ParamValue::Str(v.into())
}

fn codel(kv: &[(&str, ParamValue)]) -> Codel {
    Codel::from_params(Params::from_pairs(kv), &DevInfo::default()).unwrap()
}

fn pkt(id: u32, len: u32, ecn: u8) -> Skb {
    Skb { id, flow: 1, len, ecn, ..Skb::default() }
}

fn at(t: u32) -> u64 {
    (t as u64) << 10
}

fn xstat(q: &dyn Qdisc, name: &str) -> u64 {
    q.xstats().into_iter().find(|(k, _)| *k == name).map(|(_, v)| v).unwrap()
}

/// `interval * rec_inv_sqrt / 2^16` as the control law adds it.
fn step(rec: u16) -> u32 {
    codel_control_law(0, INTERVAL, rec)
}

#[test]
fn defaults_and_tc_units() {
    let c = codel(&[]).config();
    assert_eq!(c.limit, 1000);
    assert_eq!((c.params.target, c.params.interval), (4882, 97656));
    assert_eq!((c.params.ecn, c.params.ce_threshold, c.params.mtu), (false, CODEL_DISABLED_THRESHOLD, 1514));
    assert_eq!(c.params.min_backlog, MinBacklog::Mtu);

    // tc passes whole microseconds; the kernel converts (us * 1000) >> 10.
    let c = codel(&[
        ("limit", ParamValue::Int(50)),
        ("target", s("2ms")),
        ("interval", s("30ms")),
        ("ecn", ParamValue::Bool(true)),
        ("ce_threshold", s("1ms")),
    ])
    .config();
    assert_eq!((c.limit, c.params.target, c.params.interval), (50, 1953, 29296));
    assert_eq!((c.params.ecn, c.params.ce_threshold), (true, 976));
    // "1500ns" is 1 us for tc: (1000 >> 10) = 0 codel units.
    assert_eq!(codel(&[("ce_threshold", s("1500ns"))]).config().params.ce_threshold, 0);
    // tc does not send zero limit/target/interval: the defaults stay.
    let c = codel(&[("limit", ParamValue::Int(0)), ("target", s("0ms")), ("interval", s("0.5us"))]).config();
    assert_eq!((c.limit, c.params.target, c.params.interval), (1000, 4882, 97656));
    // mtu = clamp(psched_mtu, 256, 1 MiB).
    let small = DevInfo { mtu_l2: 100, ..DevInfo::default() };
    assert_eq!(Codel::from_params(Params::from_pairs(&[]), &small).unwrap().config().params.mtu, 256);
    let huge = DevInfo { mtu_l2: 9_000_000, ..DevInfo::default() };
    assert_eq!(Codel::from_params(Params::from_pairs(&[]), &huge).unwrap().config().params.mtu, 1 << 20);

    let bad = |kv: &[(&str, ParamValue)]| Codel::from_params(Params::from_pairs(kv), &DevInfo::default()).is_err();
    assert!(bad(&[("flows", ParamValue::Int(4))]));
    assert!(bad(&[("target", s("5"))]), "a duration needs a unit");
    assert!(bad(&[("target", s("5000s"))]), "beyond tc's u32 microseconds");
    assert!(bad(&[("limit", ParamValue::Int(-1))]));
    assert!(bad(&[("min_backlog", s("bytes"))]));
    assert!(build("codel", Params::from_pairs(&[]), &DevInfo::default()).is_ok());
}

/// rec_inv_sqrt for count 1..=10 and the control-law step for each.
/// count 2 by hand: see `newton_step_by_hand` in codel.rs (0xFFFF -> 0x8001).
/// count 3 by hand from 0x8001: invsqrt = 0x80010000, invsqrt2 = 0x40010001,
/// val = 0x3_0000_0000 - 3 * 0x40010001 = 0x2_3FFC_FFFD, >> 2 = 0x8FFF_3FFF,
/// (0x8FFF_3FFF * 0x80010000) >> 31 = 0x9000_5FFD, >> 16 = 0x9000;
/// step = 97656 * 0x90000000 >> 32 = 97656 * 9 / 16 = 54931.5 -> 54931.
#[test]
fn newton_and_control_law_exact_values() {
    let rec: [u16; 10] = [0xffff, 0x8001, 0x9000, 0x7ce0, 0x7107, 0x6771, 0x600c, 0x59fd, 0x54f2, 0x50a7];
    let steps: [u32; 10] = [97654, 48829, 54931, 47635, 43116, 39459, 36638, 34327, 32403, 30766];
    let mut v = CodelVars { count: 1, rec_inv_sqrt: 0xffff, ..CodelVars::default() };
    for c in 1..=10u32 {
        if c > 1 {
            v.count = c;
            codel_newton_step(&mut v);
        }
        assert_eq!(v.rec_inv_sqrt, rec[c as usize - 1], "rec_inv_sqrt at count {c}");
        assert_eq!(step(v.rec_inv_sqrt), steps[c as usize - 1], "step at count {c}");
    }
}

/// For count 1..=100000 the fixed-point control law tracks the same Newton recursion
/// done in f64 (x' = x/2 (3 - n x^2), one step per count) within 3 codel units, and
/// approaches interval / sqrt(count): the one-step Newton start is poor (count 2
/// gives 0.5 instead of 0.707), then the error falls under 2.5% from count 4 and
/// under 0.8% from count 16 (the floor is the Q0.16 truncation of rec_inv_sqrt).
#[test]
fn control_law_approximates_interval_over_sqrt_count() {
    let mut v = CodelVars { count: 1, rec_inv_sqrt: 0xffff, ..CodelVars::default() };
    let mut x = 1.0f64;
    let mut worst_newton = 0.0f64;
    for c in 1..=100_000u32 {
        if c > 1 {
            v.count = c;
            codel_newton_step(&mut v);
            x = x / 2.0 * (3.0 - c as f64 * x * x);
        }
        let got = step(v.rec_inv_sqrt) as f64;
        let newton = INTERVAL as f64 * x;
        worst_newton = worst_newton.max((got - newton).abs());
        assert!((got - newton).abs() <= 3.0, "count {c}: {got} vs f64 Newton {newton}");
        let exact = INTERVAL as f64 / (c as f64).sqrt();
        let rel = (got - exact).abs() / exact;
        let tol = match c {
            1 => 1e-4,
            2 | 3 => 0.30,
            4..=15 => 0.025,
            _ => 0.008,
        };
        assert!(rel <= tol, "count {c}: {got} vs {exact} ({rel})");
    }
    assert!(worst_newton > 0.0);
}

/// 200 packets of 1000 B queued at t = 0. The first dequeue with sojourn >= target
/// arms first_above_time = now + interval; the first drop is at the first dequeue
/// strictly after it; then drop k+1 is due at drop_next = t_k + interval*rec(k)/2^16:
/// 107422, 205076, 253905, 308836, 356471, 399587, 439046, 475684, 510011, 542414.
/// Each is exact: one codel unit earlier, nothing is dropped.
#[test]
fn drop_schedule_follows_the_control_law() {
    let mut q = codel(&[]);
    let mut drops = Vec::new();
    for i in 0..200 {
        assert_eq!(q.enqueue(pkt(i, 1000, 0), 0, &mut drops), EnqueueVerdict::Success);
    }
    // 10 ms = 9765 units: above target, arms first_above_time = 9765 + 97656.
    assert!(q.dequeue(10_000_000, &mut drops).is_some());
    assert_eq!(q.vars().first_above_time, 107421);
    assert!(q.dequeue(at(107421), &mut drops).is_some());
    assert!(drops.is_empty(), "not strictly after first_above_time");

    let sched = [107422u32, 205076, 253905, 308836, 356471, 399587, 439046, 475684, 510011, 542414, 573180];
    for k in 0..10 {
        if k > 0 {
            assert!(q.dequeue(at(sched[k] - 1), &mut drops).is_some());
            assert_eq!(drops.len(), k, "no drop one unit before drop {}", k + 1);
        }
        let out = q.dequeue(at(sched[k]), &mut drops).unwrap();
        assert_eq!(drops.len(), k + 1, "drop {} at {}", k + 1, sched[k]);
        // The dropped packet is the head; the next one is delivered.
        assert_eq!(out.id, drops[k] + 1);
        assert_eq!(q.vars().count, k as u32 + 1);
        assert_eq!(q.vars().drop_next, sched[k + 1]);
        assert!(q.vars().dropping);
    }
    assert_eq!(q.vars().lastcount, 1);
    assert_eq!(q.stats().drops, 10);
    assert_eq!(q.qlen() as usize + drops.len() + 2 + 19, 200);
    // xstats: drop_next is 30766 units = 31504 us after the last dequeue time.
    assert_eq!(xstat(&q, "drop_next"), 31504);
    assert_eq!((xstat(&q, "count"), xstat(&q, "lastcount"), xstat(&q, "dropping")), (10, 1, 1));
    assert_eq!(xstat(&q, "maxpacket"), 1000);
    assert_eq!(q.drop_next_us(at(573180 + 1000)), -1024);
}

/// Steady state: one 1500 B packet enqueued and one dequeued per millisecond, with
/// 4 (then 6) packets standing in the queue. Sojourn 4 ms (< target) never drops, however long;
/// sojourn 6 ms arms first_above_time at the first dequeue (tick 6, codel time 5859)
/// and drops first at tick 107, the first tick whose codel time exceeds
/// 5859 + 97656 = 103515 (tick 106 is 103515.6 -> 103515).
#[test]
fn sojourn_below_target_never_drops_and_above_drops_after_an_interval() {
    for (depth, first_drop_tick) in [(4u64, None), (6, Some(107u64))] {
        let mut q = codel(&[]);
        let mut drops = Vec::new();
        let mut first = None;
        for k in 0..10_000u64 {
            let now = k * 1_000_000;
            q.enqueue(pkt(k as u32, 1500, 0), now, &mut drops);
            if k >= depth {
                q.dequeue(now, &mut drops);
                if first.is_none() && !drops.is_empty() {
                    first = Some(k);
                }
            }
        }
        assert_eq!(first, first_drop_tick, "depth {depth}");
        if depth == 4 {
            assert_eq!((q.stats().drops, q.vars().count, q.vars().first_above_time), (0, 0, 0));
            assert_eq!(xstat(&q, "ldelay"), 3999); // 3906 units
        }
    }
}

/// With at most one MTU (1514 B) queued after the dequeue, no drop however long the
/// sojourn. 700 B packets, one in and one out every 200 ms: with one packet standing
/// (700 B left) neither variant drops; with two (1400 B left) `min_backlog = "mtu"`
/// still does not, while the pre-codel_impl.h `"maxpacket"` rule (1400 > 700) does.
#[test]
fn no_drop_with_at_most_one_mtu_queued() {
    for (standing, mode, expect_drops) in
        [(1u64, "mtu", false), (1, "maxpacket", false), (2, "mtu", false), (2, "maxpacket", true)]
    {
        let mut q = codel(&[("min_backlog", s(mode))]);
        let mut drops = Vec::new();
        for k in 0..100u64 {
            let now = k * 200_000_000;
            q.enqueue(pkt(k as u32, 700, 0), now, &mut drops);
            if k >= standing {
                q.dequeue(now, &mut drops);
            }
        }
        assert_eq!(!drops.is_empty(), expect_drops, "{standing} standing, {mode}");
        if !expect_drops {
            assert_eq!(q.vars().first_above_time, 0);
            assert_eq!(xstat(&q, "ldelay"), ((200_000_000u64 * standing) >> 10) * 1024 / 1000);
        }
    }
}

/// ECN on: at each point where the schedule above drops, an ECT packet is CE-marked
/// and delivered instead; the schedule (count, drop_next) is the same and nothing is
/// dropped. A Not-ECT packet at such a point is dropped even with ECN on: in the
/// dropping loop the failed mark drops it, the next packet is dequeued, and (still
/// above target) only schedules the next drop, without being marked.
#[test]
fn ecn_marks_instead_of_dropping() {
    let mut q = codel(&[("ecn", ParamValue::Bool(true))]);
    let mut drops = Vec::new();
    for i in 0..100 {
        let ecn = if i == 9 { Skb::ECN_NOT_ECT } else { Skb::ECN_ECT0 };
        q.enqueue(pkt(i, 1000, ecn), 0, &mut drops);
    }
    assert!(q.dequeue(10_000_000, &mut drops).is_some());
    let sched = [107422u32, 205076, 253905, 308836];
    for (k, &t) in sched.iter().enumerate() {
        let out = q.dequeue(at(t), &mut drops).unwrap();
        assert_eq!((out.id, out.ecn), (2 * k as u32 + 1, Skb::ECN_CE));
        assert_eq!(q.vars().count, k as u32 + 1);
        assert_eq!(q.vars().drop_next, [205076, 253905, 308836, 356471][k]);
        // the packet between two marks is untouched
        assert_eq!(q.dequeue(at(t + 1), &mut drops).unwrap().ecn, Skb::ECN_ECT0);
    }
    assert!(drops.is_empty());
    assert_eq!(xstat(&q, "ecn_mark"), 4);
    // 5th signal at 356471 falls on packet 9 (Not-ECT): dropped; packet 10 delivered.
    let out = q.dequeue(at(356471), &mut drops).unwrap();
    assert_eq!((out.id, out.ecn), (10, Skb::ECN_ECT0));
    assert_eq!(drops.clone(), [9]);
    assert_eq!((q.vars().count, q.vars().drop_next), (5, 399587));
    assert_eq!((xstat(&q, "ecn_mark"), q.stats().drops), (4, 1));
}

/// ce_threshold: a delivered packet whose sojourn exceeds it is CE-marked if it is
/// ECN-capable (`ce_mark` counts it), independently of the drop state machine.
#[test]
fn ce_threshold_marks_ect_packets_over_threshold() {
    let mut q = codel(&[("ce_threshold", s("1ms"))]); // 976 units
    let mut drops = Vec::new();
    q.enqueue(pkt(1, 100, Skb::ECN_ECT1), 0, &mut drops);
    q.enqueue(pkt(2, 100, Skb::ECN_NOT_ECT), 0, &mut drops);
    q.enqueue(pkt(3, 100, Skb::ECN_ECT0), 0, &mut drops);
    q.enqueue(pkt(4, 100, Skb::ECN_CE), 0, &mut drops);
    // 976 units is not above the threshold; 977 is.
    assert_eq!(q.dequeue(at(976), &mut drops).unwrap().ecn, Skb::ECN_ECT1);
    assert_eq!(q.dequeue(at(977), &mut drops).unwrap().ecn, Skb::ECN_NOT_ECT);
    assert_eq!(q.dequeue(at(977), &mut drops).unwrap().ecn, Skb::ECN_CE);
    assert_eq!(q.dequeue(at(977), &mut drops).unwrap().ecn, Skb::ECN_CE);
    // INET_ECN_set_ce succeeds on an already-CE packet and it is counted again.
    assert_eq!(xstat(&q, "ce_mark"), 2);
    assert!(drops.is_empty());
}

/// Leaving and re-entering the dropping state: with count 5 and lastcount 1 when
/// the episode ended, a new episode within 16 intervals of drop_next starts at
/// count = 5 - 1 = 4, with one Newton step from rec(5) = 0x7107 at count 4 (0x7D79,
/// step 47863); later than 16 intervals it restarts at count 1 (0xFFFF).
#[test]
fn reentry_reuses_the_previous_drop_rate() {
    for (gap, expect_count, expect_rec) in [(200_000u32, 4u32, 0x7d79u16), (1_700_000, 1, 0xffff)] {
        let mut q = codel(&[]);
        let mut drops = Vec::new();
        for i in 0..40 {
            q.enqueue(pkt(i, 1000, 0), 0, &mut drops);
        }
        q.dequeue(10_000_000, &mut drops);
        for t in [107422u32, 205076, 253905, 308836, 356471] {
            q.dequeue(at(t), &mut drops);
        }
        assert_eq!((q.vars().count, q.vars().lastcount, q.vars().drop_next), (5, 1, 399587));
        // Drain at t5: once the backlog left is within one MTU, the state is left.
        while q.dequeue(at(356471), &mut drops).is_some() {}
        assert!(!q.vars().dropping);
        assert_eq!(drops.len(), 5);

        let t0 = 356471 + gap;
        for i in 0..40 {
            q.enqueue(pkt(100 + i, 1000, 0), at(t0), &mut drops);
        }
        q.dequeue(at(t0 + 10_000), &mut drops); // arms first_above_time
        let t_enter = t0 + 10_000 + INTERVAL + 1;
        q.dequeue(at(t_enter), &mut drops);
        assert_eq!(drops.len(), 6);
        let v = q.vars();
        assert_eq!((v.count, v.lastcount, v.rec_inv_sqrt), (expect_count, expect_count, expect_rec));
        assert_eq!(v.drop_next, t_enter + step(expect_rec));
    }
    // now - drop_next at the second re-entry: 356471 + 1_700_000 + 107657 - 399587
    // = 1_764_541 >= 16 * 97656 = 1_562_496; the first: 264_541 < 1_562_496.
    assert_eq!(step(0x7d79), 47863);
}

#[test]
fn limit_tail_drops_and_counts_drop_overlimit() {
    let mut q = codel(&[("limit", ParamValue::Int(3))]);
    let mut drops = Vec::new();
    for i in 0..3 {
        assert_eq!(q.enqueue(pkt(i, 100, 0), 0, &mut drops), EnqueueVerdict::Success);
    }
    assert_eq!(q.enqueue(pkt(3, 100, 0), 0, &mut drops), EnqueueVerdict::Dropped);
    assert_eq!(drops.clone(), [3]);
    assert_eq!((q.qlen(), q.backlog(), q.stats().drops, q.stats().overlimits), (3, 300, 1, 0));
    assert_eq!(xstat(&q, "drop_overlimit"), 1);
    assert!(q.can_bypass());
}

fn codel_params() -> impl Strategy<Value = Params> {
    (
        prop::option::of(0i64..40),
        prop::option::of(0u64..20_000),
        prop::option::of(0u64..200_000),
        prop::option::of(any::<bool>()),
        prop::option::of(0u64..20_000),
        prop::option::of(prop::sample::select(vec!["mtu", "maxpacket"])),
    )
        .prop_map(|(limit, target, interval, ecn, ce, mode)| {
            let mut kv: Vec<(&str, ParamValue)> = Vec::new();
            if let Some(v) = limit {
                kv.push(("limit", ParamValue::Int(v)));
            }
            if let Some(v) = target {
                kv.push(("target", s(&format!("{v}us"))));
            }
            if let Some(v) = interval {
                kv.push(("interval", s(&format!("{v}us"))));
            }
            if let Some(v) = ecn {
                kv.push(("ecn", ParamValue::Bool(v)));
            }
            if let Some(v) = ce {
                kv.push(("ce_threshold", s(&format!("{v}us"))));
            }
            if let Some(v) = mode {
                kv.push(("min_backlog", s(v)));
            }
            Params::from_pairs(&kv)
        })
}

#[derive(Clone, Debug)]
enum Op {
    Enqueue { len: u32, ecn: u8 },
    Dequeue,
    Wait(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (prop_oneof![Just(66u32), Just(1514), 0u32..9000], 0u8..4)
            .prop_map(|(len, ecn)| Op::Enqueue { len, ecn }),
        3 => Just(Op::Dequeue),
        2 => prop_oneof![0u64..2_000_000, 0u64..300_000_000].prop_map(Op::Wait),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// enqueued = dequeued + dropped + qlen and backlog = bytes held, at every step;
    /// every packet leaves once; draining empties the queue.
    #[test]
    fn conservation(p in codel_params(), ops in prop::collection::vec(op(), 1..700)) {
        let mut q = codel_from(p);
        let mut held: HashMap<u32, u32> = HashMap::new();
        let (mut enq, mut deq, mut dropped) = (0u64, 0u64, 0u64);
        let mut drops = Vec::new();
        let mut now = 0u64;
        for (id, op) in ops.into_iter().enumerate() {
            drops.clear();
            match op {
                Op::Enqueue { len, ecn } => {
                    enq += 1;
                    held.insert(id as u32, len);
                    let v = q.enqueue(pkt(id as u32, len, ecn), now, &mut drops);
                    prop_assert_eq!(v == EnqueueVerdict::Dropped, !drops.is_empty());
                }
                Op::Dequeue => {
                    if let Some(skb) = q.dequeue(now, &mut drops) {
                        deq += 1;
                        prop_assert_eq!(held.remove(&skb.id), Some(skb.len));
                    }
                }
                Op::Wait(ns) => now += ns,
            }
            common::take_dropped(&mut held, &drops)?;
            dropped += drops.len() as u64;
            prop_assert_eq!(q.stats().drops, dropped);
            prop_assert_eq!(enq, deq + dropped + q.qlen() as u64);
            prop_assert_eq!(q.backlog(), held.values().map(|&l| l as u64).sum::<u64>());
            prop_assert_eq!(q.stats().overlimits, 0);
        }
        loop {
            drops.clear();
            let out = q.dequeue(now, &mut drops);
            common::take_dropped(&mut held, &drops)?;
            match out {
                Some(skb) => prop_assert_eq!(held.remove(&skb.id), Some(skb.len)),
                None => break,
            }
        }
        prop_assert!(held.is_empty());
        prop_assert_eq!((q.qlen(), q.backlog()), (0, 0));
        prop_assert!(!q.vars().dropping);
    }
}

fn codel_from(p: Params) -> Codel {
    Codel::from_params(p, &DevInfo::default()).unwrap()
}

/// `tc -s qdisc show` of codel reads as iproute2 prints it: the kernel's times in µs
/// (`codel_time_to_us()`, so 5 ms of 1024 ns units prints as 5ms), `ce_threshold` and
/// `ecn` only when set, and the two xstats lines.
#[test]
fn tc_layout() {
    let mut q = codel(&[]);
    assert_eq!(q.tc_options(), "limit 1000p target 5ms interval 100ms");
    assert_eq!(codel(&[("ecn", ParamValue::Bool(true))]).tc_options(), "limit 1000p target 5ms interval 100ms ecn");
    // 1 ms is 976 units of 1024 ns, which the kernel reports as 999 µs.
    assert!(codel(&[("ce_threshold", s("1ms"))]).tc_options().contains("target 5ms ce_threshold 999us interval"));
    let mut drops = Vec::new();
    q.enqueue(pkt(1, 1514, 0), 0, &mut drops);
    assert_eq!(q.tc_xstats(), "  count 0 lastcount 0 ldelay 0us drop_next 0us\n  maxpacket 0 ecn_mark 0 drop_overlimit 0");
}
