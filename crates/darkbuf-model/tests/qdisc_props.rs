//! Property tests for every qdisc `darkbuf_model::qdisc::build()` can construct:
//! packet conservation, byte accounting and no duplication under random
//! enqueue/dequeue interleavings, and `build()` never panicking on any parameters.

use darkbuf_model::params::{ParamValue, Params};
use darkbuf_model::qdisc::{build, ArrivalDrop, DevInfo, EnqueueVerdict, Qdisc, BUILDABLE_KINDS};
use darkbuf_model::Skb;
use proptest::prelude::*;
use std::collections::HashMap;

mod common;

fn params(kv: Vec<(&'static str, ParamValue)>) -> Params {
    Params::from_pairs(&kv)
}

/// Valid parameters for `kind` (a few combinations may still be rejected by the
/// kernel's rules, e.g. an sfq limit that clamps to 1; such cases are skipped).
fn valid_params(kind: &'static str) -> BoxedStrategy<Params> {
    match kind {
        "pfifo" | "pfifo_head_drop" => fifo_params(),
        "bfifo" => bfifo_params(),
        "pfifo_fast" => pfifo_fast_params(),
        "sfq" => sfq_params(),
        "codel" => codel_params(),
        "fq_codel" => fq_codel_params(),
        "cake" => cake_params(),
        "tbf" => tbf_params(),
        "htb" => htb_params(),
        "pie" | "fq_pie" => pie_params(kind),
        "netem" => netem_params(),
        // fq has its own parameter proptest in tests/qdisc_fq.rs: defaults here.
        "fq" => Just(Params::default()).boxed(),
        other => panic!("no parameter generator for buildable kind {other}; add one"),
    }
}

fn fifo_params() -> BoxedStrategy<Params> {
    prop::option::of(0i64..60)
        .prop_map(|l| {
            params(
                l.map(|l| ("limit", ParamValue::Int(l)))
                    .into_iter()
                    .collect(),
            )
        })
        .boxed()
}

fn bfifo_params() -> BoxedStrategy<Params> {
    prop::option::of((0i64..30_000, any::<bool>()))
        .prop_map(|l| {
            params(
                l.map(|(l, s)| {
                    let v = if s {
                        ParamValue::Str(format!("{l}b"))
                    } else {
                        ParamValue::Int(l)
                    };
                    ("limit", v)
                })
                .into_iter()
                .collect(),
            )
        })
        .boxed()
}

fn pfifo_fast_params() -> BoxedStrategy<Params> {
    prop::option::of(prop::sample::select(vec!["per-band", "total"]))
        .prop_map(|m| {
            params(
                m.map(|m| ("limit_mode", ParamValue::Str(m.into())))
                    .into_iter()
                    .collect(),
            )
        })
        .boxed()
}

fn sfq_params() -> BoxedStrategy<Params> {
    (
        prop::option::of(prop_oneof![Just(0i64), 2i64..300]),
        prop::option::of(0i64..140),
        prop::option::of(0i64..200),
        prop::option::of(prop::sample::select(vec![0i64, 1, 2, 4, 16, 64, 1024])),
        prop::option::of(prop_oneof![Just(0i64), 1i64..4000]),
        (
            prop::option::of(any::<bool>()),
            prop::option::of(0i64..3),
            prop::option::of(any::<bool>()),
        ),
    )
        .prop_map(
            |(limit, depth, flows, divisor, quantum, (headdrop, perturb, scaled))| {
                let mut kv = Vec::new();
                if let Some(v) = limit {
                    kv.push(("limit", ParamValue::Int(v)));
                }
                if let Some(v) = depth {
                    kv.push(("depth", ParamValue::Int(v)));
                }
                if let Some(v) = flows {
                    kv.push(("flows", ParamValue::Int(v)));
                }
                if let Some(v) = divisor {
                    kv.push(("divisor", ParamValue::Int(v)));
                }
                if let Some(v) = quantum {
                    kv.push(("quantum", ParamValue::Int(v)));
                }
                if let Some(v) = headdrop {
                    kv.push(("headdrop", ParamValue::Bool(v)));
                }
                if let Some(v) = perturb {
                    kv.push(("perturb", ParamValue::Int(v)));
                }
                if let Some(v) = scaled {
                    let m = if v { "scaled" } else { "bytes" };
                    kv.push(("allot_mode", ParamValue::Str(m.into())));
                }
                params(kv)
            },
        )
        .boxed()
}

fn codel_params() -> BoxedStrategy<Params> {
    (
        prop::option::of(0i64..60),
        prop::option::of(0u64..20_000),
        prop::option::of(0u64..200_000),
        prop::option::of(any::<bool>()),
        prop::option::of(0u64..10_000),
    )
        .prop_map(|(limit, target, interval, ecn, ce)| {
            let mut kv = Vec::new();
            if let Some(v) = limit {
                kv.push(("limit", ParamValue::Int(v)));
            }
            if let Some(v) = target {
                kv.push(("target", ParamValue::Str(format!("{v}us"))));
            }
            if let Some(v) = interval {
                kv.push(("interval", ParamValue::Str(format!("{v}us"))));
            }
            if let Some(v) = ecn {
                kv.push(("ecn", ParamValue::Bool(v)));
            }
            if let Some(v) = ce {
                kv.push(("ce_threshold", ParamValue::Str(format!("{v}us"))));
            }
            params(kv)
        })
        .boxed()
}

fn fq_codel_params() -> BoxedStrategy<Params> {
    (
        prop::option::of(0i64..60),
        prop::option::of(prop::sample::select(vec![0i64, 1, 2, 16, 1024])),
        prop::option::of(prop_oneof![Just(0i64), 1i64..3000]),
        prop::option::of(0i64..80),
        prop::option::of(0i64..100_000),
        prop::option::of(0u64..20_000),
    )
        .prop_map(|(limit, flows, quantum, drop_batch, memory_limit, target)| {
            let mut kv = Vec::new();
            if let Some(v) = limit {
                kv.push(("limit", ParamValue::Int(v)));
            }
            if let Some(v) = flows {
                kv.push(("flows", ParamValue::Int(v)));
            }
            if let Some(v) = quantum {
                kv.push(("quantum", ParamValue::Int(v)));
            }
            if let Some(v) = drop_batch {
                kv.push(("drop_batch", ParamValue::Int(v)));
            }
            if let Some(v) = memory_limit {
                kv.push(("memory_limit", ParamValue::Int(v)));
            }
            if let Some(v) = target {
                kv.push(("target", ParamValue::Str(format!("{v}us"))));
            }
            params(kv)
        })
        .boxed()
}

fn cake_params() -> BoxedStrategy<Params> {
    (
        prop::option::of(prop::sample::select(vec!["unlimited", "20mbit", "1gbit"])),
        prop::option::of(prop::sample::select(vec!["diffserv3", "besteffort", "diffserv4", "diffserv8", "precedence"])),
        prop::option::of(prop::sample::select(vec!["triple-isolate", "flows", "flowblind", "dual-srchost", "hosts"])),
        prop::option::of(0i64..100_000),
    )
        .prop_map(|(bw, ds, fm, mem)| {
            let mut kv = Vec::new();
            if let Some(v) = bw {
                kv.push(("bandwidth", ParamValue::Str(v.into())));
            }
            if let Some(v) = ds {
                kv.push(("diffserv", ParamValue::Str(v.into())));
            }
            if let Some(v) = fm {
                kv.push(("flow_mode", ParamValue::Str(v.into())));
            }
            if let Some(v) = mem {
                kv.push(("memlimit", ParamValue::Int(v)));
            }
            params(kv)
        })
        .boxed()
}

fn tbf_params() -> BoxedStrategy<Params> {
    (prop::sample::select(vec!["1mbit", "20mbit", "1gbit"]), 1514i64..40_000, 1i64..60_000)
        .prop_map(|(r, b, l)| {
            params(vec![
                ("rate", ParamValue::Str(r.into())),
                ("burst", ParamValue::Int(b)),
                ("limit", ParamValue::Int(l)),
            ])
        })
        .boxed()
}

fn htb_params() -> BoxedStrategy<Params> {
    prop::sample::select(vec!["0", "10"])
        .prop_map(|d| {
            let c = |kv: Vec<(&str, ParamValue)>| Params::from_pairs(&kv);
            params(vec![
                ("default", ParamValue::Str(d.into())),
                (
                    "class",
                    ParamValue::Tables(vec![
                        c(vec![("classid", ParamValue::Str("1:1".into())), ("rate", ParamValue::Str("10mbit".into()))]),
                        c(vec![
                            ("classid", ParamValue::Str("1:10".into())),
                            ("parent", ParamValue::Str("1:1".into())),
                            ("rate", ParamValue::Str("2mbit".into())),
                            ("ceil", ParamValue::Str("10mbit".into())),
                        ]),
                    ]),
                ),
            ])
        })
        .boxed()
}

fn pie_params(kind: &'static str) -> BoxedStrategy<Params> {
    (
        prop::option::of(0i64..60),
        prop::option::of(0u64..40_000),
        prop::option::of(0u64..40_000),
        prop::option::of((0i64..=32, 0i64..=32)),
        prop::option::of((any::<bool>(), any::<bool>(), any::<bool>())),
        prop::option::of(prop::sample::select(vec![1i64, 2, 16, 1024, 4096])),
    )
        .prop_map(move |(limit, target, tupdate, ab, flags, flows)| {
            let mut kv = Vec::new();
            if let Some(v) = limit {
                kv.push(("limit", ParamValue::Int(v)));
            }
            if let Some(v) = target {
                kv.push(("target", ParamValue::Str(format!("{v}us"))));
            }
            if let Some(v) = tupdate {
                kv.push(("tupdate", ParamValue::Str(format!("{v}us"))));
            }
            if let Some((a, b)) = ab {
                kv.push(("alpha", ParamValue::Int(a)));
                kv.push(("beta", ParamValue::Int(b)));
            }
            if let Some((ecn, bytemode, est)) = flags {
                kv.push(("ecn", ParamValue::Bool(ecn)));
                kv.push(("bytemode", ParamValue::Bool(bytemode)));
                kv.push(("dq_rate_estimator", ParamValue::Bool(est)));
            }
            if let (Some(v), "fq_pie") = (flows, kind) {
                kv.push(("flows", ParamValue::Int(v)));
            }
            params(kv)
        })
        .boxed()
}

/// netem without duplication (its clones are the caller's to make): delay,
/// jitter, loss, reordering, rate, corruption (linear packets: a flag only),
/// slot, limit, and sometimes a child.
fn netem_params() -> BoxedStrategy<Params> {
    (
        prop::option::of(0i64..1500),
        prop::option::of((0u64..20_000, 0u64..20_000)),
        prop::option::of(prop::sample::select(vec!["1%", "30%", "random 10% 50%", "state 5% 30%", "gemodel 5% 40% 70% 1%"])),
        prop::option::of((prop::sample::select(vec!["25%", "100% 50%"]), 1i64..5)),
        prop::option::of(prop::sample::select(vec!["1mbit", "50mbit 20 48 5", "1gbit -4"])),
        prop::option::of(prop::sample::select(vec!["5%", "1ms 3ms packets 3", "2ms bytes 3000"])),
        prop::option::of(prop::sample::select(vec!["pfifo", "fq_codel", "tbf"])),
    )
        .prop_map(|(limit, delay, loss, reorder, rate, extra, child)| {
            let mut kv = Vec::new();
            if let Some(v) = limit {
                kv.push(("limit", ParamValue::Int(v)));
            }
            if let Some((d, j)) = delay {
                kv.push(("delay", ParamValue::Str(format!("{}us", d + 1))));
                kv.push(("jitter", ParamValue::Str(format!("{j}us"))));
                if let Some((p, g)) = reorder {
                    kv.push(("reorder", ParamValue::Str(p.into())));
                    kv.push(("gap", ParamValue::Int(g)));
                }
            }
            if let Some(v) = loss {
                kv.push(("loss", ParamValue::Str(v.into())));
            }
            if let Some(v) = rate {
                kv.push(("rate", ParamValue::Str(v.into())));
            }
            match extra {
                Some(c) if c.ends_with('%') => kv.push(("corrupt", ParamValue::Str(c.into()))),
                Some(slot) => kv.push(("slot", ParamValue::Str(slot.into()))),
                None => {}
            }
            let mut p = params(kv);
            if let Some(kind) = child {
                let mut c = Params::default();
                if kind == "tbf" {
                    c = Params::from_pairs(&[("rate", ParamValue::Str("20mbit".into())), ("burst", ParamValue::Int(3000)), ("limit", ParamValue::Int(30_000))]);
                }
                c.insert("kind", ParamValue::Str(kind.into()));
                p.insert("child", ParamValue::Table(c));
            }
            p
        })
        .boxed()
}


#[derive(Clone, Debug)]
enum Op {
    Enqueue {
        flow: u32,
        len: u32,
        priority: u32,
    },
    Dequeue,
    /// Advance the clock (ns).
    Wait(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u32..12, prop_oneof![Just(66u32), Just(1514), 1u32..9000], 0u32..16)
            .prop_map(|(flow, len, priority)| Op::Enqueue { flow, len, priority }),
        3 => Just(Op::Dequeue),
        1 => (0u64..1_500_000_000).prop_map(Op::Wait),
    ]
}

/// One step of `arrival_dropped_again_answers_as_in_full`.
#[derive(Clone, Debug)]
enum FloodOp {
    /// The next send of flood `i` (modulo the number of floods).
    Send(usize),
    Dequeue,
    Wait(u64),
}

fn kind_and_params() -> impl Strategy<Value = (&'static str, Params)> {
    prop::sample::select(BUILDABLE_KINDS.to_vec()).prop_flat_map(|k| (Just(k), valid_params(k)))
}

/// Removes `skb` from the set of held packets; it must have been held (not lost, not
/// duplicated) and must be unchanged.
fn take_held(held: &mut HashMap<u32, Skb>, skb: &Skb) -> Result<(), TestCaseError> {
    match held.remove(&skb.id) {
        Some(orig) => {
            prop_assert_eq!(orig.len, skb.len);
            prop_assert_eq!(orig.flow, skb.flow);
            Ok(())
        }
        None => Err(TestCaseError::fail(format!(
            "packet {} left the qdisc twice or was never in it",
            skb.id
        ))),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn conservation_under_random_interleavings(
        (kind, p) in kind_and_params(),
        tx_queue_len in 1u32..64,
        hash_key in any::<u32>(),
        ops in prop::collection::vec(op(), 1..600),
    ) {
        let dev = DevInfo { tx_queue_len, mtu_l2: 1514, hash_key, hz: 250 };
        let Ok(mut q) = build(kind, p, &dev) else { return Ok(()) };
        prop_assert_eq!(q.kind(), kind);
        let mut held: HashMap<u32, Skb> = HashMap::new();
        let (mut enqueued, mut dequeued, mut dropped) = (0u64, 0u64, 0u64);
        let mut drops = Vec::new();
        let mut now = 0u64;
        let mut next_id = 0u32;
        for op in ops {
            drops.clear();
            match op {
                Op::Enqueue { flow, len, priority } => {
                    let skb = Skb { id: next_id, flow, len, priority, ..Skb::default() };
                    next_id += 1;
                    enqueued += 1;
                    held.insert(skb.id, skb);
                    let verdict = q.enqueue(skb, now, &mut drops);
                    let arrival_dropped = drops.contains(&skb.id);
                    match verdict {
                        // netem's loss is a drop the sender sees as a success
                        // (NET_XMIT_SUCCESS | __NET_XMIT_BYPASS).
                        EnqueueVerdict::Success => prop_assert!(!arrival_dropped || kind == "netem"),
                        EnqueueVerdict::Dropped => prop_assert!(arrival_dropped),
                        EnqueueVerdict::Congested => prop_assert!(!drops.is_empty()
                            || (kind == "pfifo_head_drop" && q.qlen() == 1)),
                    }
                }
                Op::Dequeue => {
                    if let Some(skb) = q.dequeue(now, &mut drops) {
                        dequeued += 1;
                        take_held(&mut held, &skb)?;
                    }
                }
                Op::Wait(ns) => now += ns,
            }
            common::take_dropped(&mut held, &drops)?;
            dropped += drops.len() as u64;
            prop_assert_eq!(enqueued, dequeued + dropped + q.qlen() as u64);
            prop_assert_eq!(q.qlen() as usize, held.len());
            prop_assert_eq!(q.backlog(), held.values().map(|s| s.len as u64).sum::<u64>());
        }
        // Draining returns everything still held, exactly once; a shaper or pacer that
        // holds packets back names the time to come back (its watchdog).
        for _ in 0..1_000_000 {
            drops.clear();
            let skb = q.dequeue(now, &mut drops);
            common::take_dropped(&mut held, &drops)?;
            match skb {
                Some(skb) => take_held(&mut held, &skb)?,
                None if drops.is_empty() && q.qlen() == 0 => break,
                None if drops.is_empty() => match q.next_wakeup() {
                    Some(t) => now = now.max(t),
                    None => return Err(TestCaseError::fail(format!("{kind} holds {} packets with no watchdog", q.qlen()))),
                },
                None => {}
            }
        }
        prop_assert!(held.is_empty());
        prop_assert_eq!((q.qlen(), q.backlog()), (0, 0));
    }

    /// `arrival_dropped()` says an enqueue drops the arrival alone only when it does:
    /// two copies of a qdisc take the same random operations, one enqueueing every
    /// packet, the other calling `drop_arrival()` instead whenever `arrival_dropped()`
    /// answers. Verdicts, drops, counters and every later dequeue must agree, and the
    /// shortcut must be taken (the floods fill small qdiscs).
    #[test]
    fn arrival_dropped_is_the_enqueue_it_replaces(
        (kind, p) in kind_and_params(),
        tx_queue_len in 1u32..64,
        hash_key in any::<u32>(),
        ops in prop::collection::vec(op(), 1..600),
    ) {
        let dev = DevInfo { tx_queue_len, mtu_l2: 1514, hash_key, hz: 250 };
        let (Ok(mut a), Ok(mut b)) = (build(kind, p.clone(), &dev), build(kind, p, &dev)) else { return Ok(()) };
        let (mut da, mut db) = (Vec::new(), Vec::new());
        let mut now = 0u64;
        for (id, op) in ops.into_iter().enumerate() {
            da.clear();
            db.clear();
            match op {
                Op::Enqueue { flow, len, priority } => {
                    let skb = Skb { id: id as u32, flow, len, priority, tstamp: now, ..Skb::default() };
                    let vb = b.enqueue(skb, now, &mut db);
                    match a.arrival_dropped(&skb, now) {
                        Some(drop) => {
                            a.drop_arrival(drop);
                            da.push(skb.id);
                            prop_assert_eq!(drop.verdict, vb);
                            prop_assert_eq!(&db, &vec![skb.id], "only the arrival is dropped");
                        }
                        None => prop_assert_eq!(a.enqueue(skb, now, &mut da), vb),
                    }
                }
                Op::Dequeue => prop_assert_eq!(a.dequeue(now, &mut da).map(|s| s.id), b.dequeue(now, &mut db).map(|s| s.id)),
                Op::Wait(ns) => now += ns,
            }
            prop_assert_eq!(&da, &db);
            prop_assert_eq!((a.qlen(), a.backlog(), a.stats()), (b.qlen(), b.backlog(), b.stats()));
        }
        loop {
            let (x, y) = (a.dequeue(now, &mut da).map(|s| s.id), b.dequeue(now, &mut db).map(|s| s.id));
            prop_assert_eq!(x, y);
            if x.is_none() {
                break;
            }
        }
        prop_assert_eq!(&da, &db);
    }

    /// `arrival_dropped_again()` from a flow's last answer gives what
    /// `arrival_dropped()` gives, while only `drop_arrival()`s have changed the qdisc
    /// since: a few floods (each a fixed flow, length and priority, as the simulator's
    /// drop loop sends them) into a small qdisc, with rare dequeues and waits (sfq's
    /// perturbation falls due). The shortcut is then taken as the loop takes it.
    #[test]
    fn arrival_dropped_again_answers_as_in_full(
        (kind, p) in kind_and_params(),
        tx_queue_len in 1u32..64,
        hash_key in any::<u32>(),
        floods in prop::collection::vec((0u32..6, prop_oneof![Just(66u32), Just(1514), 1u32..9000], 0u32..16), 1..4),
        ops in prop::collection::vec(prop_oneof![
            24 => (0usize..4).prop_map(FloodOp::Send),
            1 => Just(FloodOp::Dequeue),
            1 => (0u64..1_500_000_000).prop_map(FloodOp::Wait),
        ], 1..600),
    ) {
        let dev = DevInfo { tx_queue_len, mtu_l2: 1514, hash_key, hz: 250 };
        let Ok(mut q) = build(kind, p, &dev) else { return Ok(()) };
        let mut drops = Vec::new();
        let mut now = 0u64;
        // Each flood's last answer since the qdisc last changed otherwise.
        let mut answered: Vec<Option<ArrivalDrop>> = vec![None; floods.len()];
        for (id, op) in ops.into_iter().enumerate() {
            drops.clear();
            match op {
                FloodOp::Send(i) => {
                    let i = i % floods.len();
                    let (flow, len, priority) = floods[i];
                    let skb = Skb { id: id as u32, flow, len, priority, tstamp: now, ..Skb::default() };
                    let answer = q.arrival_dropped(&skb, now);
                    if let Some(prev) = answered[i] {
                        prop_assert_eq!(q.arrival_dropped_again(&skb, now, prev), answer, "{} again from {:?}", kind, prev);
                    }
                    match answer {
                        Some(drop) => {
                            q.drop_arrival(drop);
                            answered[i] = Some(drop);
                        }
                        None => {
                            q.enqueue(skb, now, &mut drops);
                            answered.fill(None);
                        }
                    }
                }
                FloodOp::Dequeue => {
                    q.dequeue(now, &mut drops);
                    answered.fill(None);
                }
                FloodOp::Wait(ns) => now += ns,
            }
        }
    }

    #[test]
    fn build_never_panics(
        kind in prop::sample::select(
            BUILDABLE_KINDS.iter().copied().chain(["noqueue", "fq_codel", "mq", "bogus"]).collect::<Vec<_>>()),
        kv in prop::collection::vec((
            prop::sample::select(vec![
                "limit", "quantum", "perturb", "divisor", "flows", "depth", "headdrop",
                "allot_mode", "limit_mode", "priomap", "redflowlimit", "ecn", "target", "x",
                "interval", "memory_limit", "drop_batch", "ce_threshold", "rate", "burst", "latency",
                "peakrate", "mtu", "bandwidth", "diffserv", "flow_mode", "rtt", "overhead", "mpu",
                "maxrate", "flow_limit", "initial_quantum", "horizon", "default", "r2q",
                "delay", "jitter", "loss", "duplicate", "corrupt", "reorder", "gap", "slot", "seed", "distribution",
            ]),
            prop_oneof![
                any::<i64>().prop_map(ParamValue::Int),
                (-5i64..70_000).prop_map(ParamValue::Int),
                any::<f64>().prop_map(ParamValue::Float),
                any::<bool>().prop_map(ParamValue::Bool),
                "[a-z0-9. -]{0,12}".prop_map(ParamValue::Str),
                prop::sample::select(vec!["per-band", "total", "bytes", "scaled", "1514b", "64k", "-1", "1e99kb"])
                    .prop_map(|s| ParamValue::Str(s.into())),
            ],
        ), 0..5),
        tx_queue_len in prop_oneof![0u32..3000, Just(u32::MAX)],
        mtu_l2 in prop_oneof![Just(1514u32), any::<u32>()],
        hz in prop_oneof![Just(250u32), Just(0), any::<u32>()],
    ) {
        let dev = DevInfo { tx_queue_len, mtu_l2, hash_key: 7, hz };
        let p = params(kv);
        if let Ok(mut q) = build(kind, p, &dev) {
            let mut drops = Vec::new();
            for i in 0..8u32 {
                q.enqueue(Skb { id: i, flow: i % 3, len: 100 + i, priority: i, ..Skb::default() }, 0, &mut drops);
            }
            let mut now = 0;
            for _ in 0..100_000 {
                if q.dequeue(now, &mut drops).is_some() {
                    continue;
                }
                match q.next_wakeup() {
                    Some(t) if q.qlen() > 0 => now = now.max(t),
                    _ => break,
                }
            }
            prop_assert_eq!(q.qlen(), 0);
        }
    }
}

/// A flood of one flow into a small qdisc of each kind that answers
/// `arrival_dropped()`: once full, every arrival is predicted dropped, with the verdict
/// `enqueue()` then returns (sfq: NET_XMIT_CN at its limit, the arrival's slot being
/// the longest; NET_XMIT_DROP once the slot is at its depth).
#[test]
fn arrival_dropped_answers_once_full() {
    let cases: [(&str, Vec<(&str, ParamValue)>, u32, EnqueueVerdict); 5] = [
        ("pfifo", vec![("limit", ParamValue::Int(3))], 3, EnqueueVerdict::Dropped),
        ("bfifo", vec![("limit", ParamValue::Int(3000))], 2, EnqueueVerdict::Dropped),
        ("pfifo_fast", vec![], 4, EnqueueVerdict::Dropped),
        ("sfq", vec![("limit", ParamValue::Int(5))], 5, EnqueueVerdict::Congested),
        ("sfq", vec![("limit", ParamValue::Int(50)), ("depth", ParamValue::Int(4))], 4, EnqueueVerdict::Dropped),
    ];
    for (kind, kv, held, verdict) in cases {
        let dev = DevInfo { tx_queue_len: 4, mtu_l2: 1514, hash_key: 7, hz: 250 };
        let mut q = build(kind, Params::from_pairs(&kv), &dev).unwrap();
        let mut drops = Vec::new();
        for id in 0..10u32 {
            let skb = Skb { id, flow: 1, len: 1400, ..Skb::default() };
            let predicted = q.arrival_dropped(&skb, 0).map(|d| d.verdict);
            assert_eq!(predicted, (id >= held).then_some(verdict), "{kind} {kv:?}: packet {id}");
            drops.clear();
            assert_eq!(q.enqueue(skb, 0, &mut drops), if id >= held { verdict } else { EnqueueVerdict::Success });
        }
        assert_eq!(q.qlen(), held, "{kind}");
    }
}
