//! fq_codel (net/sched/sch_fq_codel.c): parameters and clamps, overflow drops from
//! the fattest flow, new/old flow scheduling, byte DRR, memory_limit by truesize,
//! CoDel per flow against the qdisc-wide backlog, and a conservation property test.

use darkbuf_model::params::{ParamValue, Params};
use darkbuf_model::qdisc::codel::Codel;
use darkbuf_model::qdisc::fq_codel::FqCodel;
use darkbuf_model::qdisc::{build, DevInfo, EnqueueVerdict, Qdisc};
use darkbuf_model::skb::truesize_for_len;
use darkbuf_model::Skb;
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};

mod common;


fn s(v: &str) -> ParamValue {
    ParamValue::Str(v.into())
}

fn int(v: i64) -> ParamValue {
    ParamValue::Int(v)
}

fn fq(kv: &[(&str, ParamValue)]) -> FqCodel {
    FqCodel::from_params(Params::from_pairs(kv), &DevInfo::default()).unwrap()
}

fn pkt(id: u32, flow: u32, len: u32) -> Skb {
    Skb { id, flow, len, truesize: truesize_for_len(len), ..Skb::default() }
}

fn xstat(q: &dyn Qdisc, name: &str) -> u64 {
    q.xstats().into_iter().find(|(k, _)| *k == name).map(|(_, v)| v).unwrap()
}

/// The first `n` flow ids that land in distinct buckets, in increasing bucket order.
fn distinct_flows(q: &FqCodel, n: usize) -> Vec<u32> {
    let mut seen = HashSet::new();
    let mut flows = Vec::new();
    for f in 1.. {
        if seen.insert(q.flow_index(&Skb { flow: f, ..Skb::default() })) {
            flows.push(f);
            if flows.len() == n {
                break;
            }
        }
    }
    flows.sort_by_key(|&f| q.flow_index(&Skb { flow: f, ..Skb::default() }));
    flows
}

fn idx(q: &FqCodel, flow: u32) -> u32 {
    q.flow_index(&Skb { flow, ..Skb::default() })
}

fn drain_ids(q: &mut FqCodel, now: u64) -> Vec<u32> {
    let mut drops = Vec::new();
    std::iter::from_fn(|| q.dequeue(now, &mut drops)).map(|s| s.id).collect()
}

#[test]
fn defaults_and_clamps() {
    let c = fq(&[]).config();
    assert_eq!((c.limit, c.flows, c.quantum, c.drop_batch, c.memory_limit), (10240, 1024, 1514, 64, 32 << 20));
    assert_eq!((c.params.target, c.params.interval, c.params.ecn, c.params.mtu), (4882, 97656, true, 1514));

    let c = fq(&[
        ("limit", int(500)),
        ("flows", int(16)),
        ("quantum", int(100)),
        ("drop_batch", int(8)),
        ("memory_limit", s("4Mb")),
        ("target", s("1ms")),
        ("interval", s("20ms")),
        ("ecn", ParamValue::Bool(false)),
        ("ce_threshold", s("2ms")),
        ("ce_threshold_selector", s("0x01/0x03")),
    ])
    .config();
    assert_eq!((c.limit, c.flows, c.quantum, c.drop_batch, c.memory_limit), (500, 16, 256, 8, 4 << 20));
    assert_eq!((c.params.target, c.params.interval, c.params.ecn, c.params.ce_threshold), (976, 19531, false, 1953));
    assert_eq!((c.params.ce_threshold_selector, c.params.ce_threshold_mask), (1, 3));
    // 0 keeps the defaults (tc does not send it); memory_limit is capped at 2^31.
    let c = fq(&[("limit", int(0)), ("flows", int(0)), ("quantum", int(0)), ("drop_batch", int(0))]).config();
    assert_eq!((c.limit, c.flows, c.quantum, c.drop_batch), (10240, 1024, 1514, 64));
    assert_eq!(fq(&[("memory_limit", s("3gb"))]).config().memory_limit, 1 << 31);
    assert_eq!(fq(&[("memory_limit", int(0))]).config().memory_limit, 0);
    assert_eq!(fq(&[("quantum", int(1 << 20))]).config().quantum, 1 << 20);
    // selector 0xff is tc's "unset": nothing is sent.
    let c = fq(&[("ce_threshold_selector", s("255/3"))]).config();
    assert_eq!((c.params.ce_threshold_selector, c.params.ce_threshold_mask), (0, 0));
    // Default quantum = psched_mtu clamped to 256..=1 MiB.
    let dev = DevInfo { mtu_l2: 68, ..DevInfo::default() };
    assert_eq!(FqCodel::from_params(Params::from_pairs(&[]), &dev).unwrap().config().quantum, 256);

    let bad = |kv: &[(&str, ParamValue)]| FqCodel::from_params(Params::from_pairs(kv), &DevInfo::default()).is_err();
    assert!(bad(&[("flows", int(65537))]));
    assert!(bad(&[("quantum", int((1 << 20) + 1))]));
    assert!(bad(&[("memory_limit", s("4gb"))]));
    assert!(bad(&[("ce_threshold_selector", s("1"))]));
    assert!(bad(&[("ce_threshold_selector", s("1/256"))]));
    assert!(bad(&[("perturb", int(1))]));
    assert!(!bad(&[("flows", int(65536))]));
    assert!(build("fq_codel", Params::from_pairs(&[]), &DevInfo::default()).is_ok());
}

/// limit 10: A holds 8 x 1000 B, B 2 x 1000 B. B's third packet makes 11 > 10:
/// fq_codel_drop() picks A (8000 B), threshold 8000 >> 1 = 4000, drops A's head
/// packets until 4000 B are gone: A1..A4. A's CoDel count grows by 4. The victim is
/// not the arriving flow: NET_XMIT_SUCCESS.
#[test]
fn overflow_drops_half_of_the_fattest_flow() {
    let mut q = fq(&[("limit", int(10))]);
    let f = distinct_flows(&q, 2);
    let (a, b) = (f[0], f[1]);
    let mut drops = Vec::new();
    for i in 1..=8 {
        q.enqueue(pkt(i, a, 1000), 0, &mut drops);
    }
    q.enqueue(pkt(101, b, 1000), 0, &mut drops);
    q.enqueue(pkt(102, b, 1000), 0, &mut drops);
    assert!(drops.is_empty());
    assert_eq!(q.enqueue(pkt(103, b, 1000), 0, &mut drops), EnqueueVerdict::Success);
    assert_eq!(drops.clone(), [1, 2, 3, 4]);
    assert_eq!((q.qlen(), q.backlog(), q.stats().drops, q.stats().overlimits), (7, 7000, 4, 0));
    assert_eq!((xstat(&q, "drop_overlimit"), xstat(&q, "drop_overmemory")), (4, 0));
    let fa = q.flow_stats(idx(&q, a), 0).unwrap();
    assert_eq!((fa.count, fa.qlen, fa.backlog), (4, 4, 4000));

    // The arriving packet's own flow is the fattest: NET_XMIT_CN. A holds A5..A8 and
    // gets 9, 10, 11 (qlen 10), then 12: qlen 11, A 8000 B vs B 3000 B, threshold
    // 4000: A5..A8 go, the arriving 12 stays.
    for i in 9..=11 {
        assert_eq!(q.enqueue(pkt(i, a, 1000), 0, &mut drops), EnqueueVerdict::Success);
    }
    assert_eq!(q.enqueue(pkt(12, a, 1000), 0, &mut drops), EnqueueVerdict::Congested);
    assert_eq!(drops.clone(), [1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(q.flow_stats(idx(&q, a), 0).unwrap().count, 8);
    assert_eq!((xstat(&q, "drop_overlimit"), q.stats().drops), (8, 8));
    let mut out = drain_ids(&mut q, 0);
    out.sort();
    assert_eq!(out, [9, 10, 11, 12, 101, 102, 103]);
}

/// drop_batch caps the batch: with drop_batch 2, only A1 and A2 go.
#[test]
fn drop_batch_caps_the_batch() {
    let mut q = fq(&[("limit", int(10)), ("drop_batch", int(2))]);
    let f = distinct_flows(&q, 2);
    let mut drops = Vec::new();
    for i in 1..=8 {
        q.enqueue(pkt(i, f[0], 1000), 0, &mut drops);
    }
    for i in 101..=103 {
        q.enqueue(pkt(i, f[1], 1000), 0, &mut drops);
    }
    assert_eq!(drops.clone(), [1, 2]);
    assert_eq!((q.qlen(), xstat(&q, "drop_overlimit")), (9, 2));
}

/// Equal backlogs: the scan keeps the first maximum (lowest flow index). A packet
/// that alone makes its flow the fattest is dropped on arrival (CN).
#[test]
fn ties_go_to_the_lowest_index_and_a_fat_arrival_drops_itself() {
    let mut q = fq(&[("limit", int(10))]);
    let f = distinct_flows(&q, 3); // bucket order
    let mut drops = Vec::new();
    for i in 0..5 {
        q.enqueue(pkt(10 + i, f[1], 1000), 0, &mut drops);
        q.enqueue(pkt(20 + i, f[2], 1000), 0, &mut drops);
    }
    q.enqueue(pkt(30, f[0], 100), 0, &mut drops);
    // f[1] and f[2] both hold 5000 B: f[1] (lower index) loses 10, 11, 12 (3000 >= 2500).
    assert_eq!(drops.clone(), [10, 11, 12]);

    let mut q = fq(&[("limit", int(1))]);
    let mut drops = Vec::new();
    assert_eq!(q.enqueue(pkt(1, f[0], 500), 0, &mut drops), EnqueueVerdict::Success);
    assert_eq!(q.enqueue(pkt(2, f[1], 1500), 0, &mut drops), EnqueueVerdict::Congested);
    assert_eq!(drops.clone(), [2]);
    assert_eq!((q.qlen(), q.backlog()), (1, 500));
}

/// A sparse flow is served ahead of a bulk one. Bulk A (1514 B packets) has used its
/// first quantum and sits on old_flows; B's single packet arrives, goes to
/// new_flows, and is sent next. Then B (empty, still on new_flows) is moved to
/// old_flows behind A ("force a pass through old_flows"), A's exhausted deficit
/// sends A to the tail, B is found empty on old_flows and removed: A3 follows.
#[test]
fn sparse_flow_goes_ahead_of_bulk() {
    let mut q = fq(&[]);
    let f = distinct_flows(&q, 2);
    let (a, b) = (f[0], f[1]);
    let mut drops = Vec::new();
    for i in 1..=10 {
        q.enqueue(pkt(i, a, 1514), 0, &mut drops);
    }
    assert_eq!((xstat(&q, "new_flows_len"), xstat(&q, "old_flows_len")), (1, 0));
    assert_eq!(q.dequeue(0, &mut drops).unwrap().id, 1);
    assert_eq!(q.dequeue(0, &mut drops).unwrap().id, 2);
    assert_eq!((xstat(&q, "new_flows_len"), xstat(&q, "old_flows_len")), (0, 1));
    q.enqueue(pkt(100, b, 100), 0, &mut drops);
    assert_eq!(xstat(&q, "new_flow_count"), 2);
    assert_eq!(q.dequeue(0, &mut drops).unwrap().id, 100);
    assert_eq!((xstat(&q, "new_flows_len"), xstat(&q, "old_flows_len")), (1, 1));
    assert_eq!(q.flow_stats(idx(&q, b), 0).unwrap().deficit, 1414);
    assert_eq!(q.dequeue(0, &mut drops).unwrap().id, 3);
    assert_eq!((xstat(&q, "new_flows_len"), xstat(&q, "old_flows_len")), (0, 1));
    // B comes back after leaving the lists: a new flow again.
    q.enqueue(pkt(101, b, 100), 0, &mut drops);
    assert_eq!(xstat(&q, "new_flow_count"), 3);
    assert_eq!(q.dequeue(0, &mut drops).unwrap().id, 101);
    assert!(drops.is_empty());
}

/// A flow that emptied but is still on new_flows is not new when it sends again: no
/// new_flow_count, no fresh quantum, and it keeps its place at the head.
#[test]
fn empty_but_listed_flow_is_not_new() {
    let mut q = fq(&[]);
    let f = distinct_flows(&q, 2);
    let (a, b) = (f[0], f[1]);
    let mut drops = Vec::new();
    q.enqueue(pkt(1, b, 400), 0, &mut drops);
    for i in 0..3 {
        q.enqueue(pkt(10 + i, a, 1514), 0, &mut drops);
    }
    assert_eq!(q.dequeue(0, &mut drops).unwrap().id, 1); // B first (new_flows head)
    q.enqueue(pkt(2, b, 400), 0, &mut drops);
    assert_eq!(xstat(&q, "new_flow_count"), 2);
    assert_eq!(q.flow_stats(idx(&q, b), 0).unwrap().deficit, 1114);
    assert_eq!(q.dequeue(0, &mut drops).unwrap().id, 2);
    assert_eq!(q.flow_stats(idx(&q, b), 0).unwrap().deficit, 714);
}

/// Byte DRR, quantum 1514: A sends 1514 B packets, B 300 B, both backlogged, A first
/// on new_flows. A serves one packet (deficit 1514 -> 0), then goes to old_flows
/// with a refill. B is served while its deficit is > 0: 1514 -> 14 after five,
/// a sixth takes it to -286. Refilled to 1228: five (-272); 1242: five (-258);
/// 1256: five (-244); ... B gets 1514 B per round on average, as A does.
#[test]
fn deficit_round_robin_in_bytes() {
    let mut q = fq(&[("quantum", int(1514))]);
    let f = distinct_flows(&q, 2);
    let (a, b) = (f[0], f[1]);
    let mut drops = Vec::new();
    for i in 0..20 {
        q.enqueue(pkt(i, a, 1514), 0, &mut drops);
    }
    for i in 0..200 {
        q.enqueue(pkt(1000 + i, b, 300), 0, &mut drops);
    }
    let mut out = Vec::new();
    for _ in 0..40 {
        out.push(q.dequeue(0, &mut drops).unwrap().flow);
    }
    let mut expected = vec![a];
    expected.extend([b; 6]);
    for _ in 0..5 {
        expected.push(a);
        expected.extend([b; 5]);
    }
    assert_eq!(out[..expected.len()], expected[..]);
    // Entries 38..40: A (B refilled to 1298 and moved behind it), B, B.
    assert_eq!(out[37..], [a, b, b]);
    assert_eq!(q.flow_stats(idx(&q, b), 0).unwrap().deficit, 1514 * 7 - 300 * 33);
    // Bytes sent: A 7 x 1514 = 10598, B 33 x 300 = 9900, within a quantum.
    let bytes = |fl: u32, len: u64| out.iter().filter(|&&x| x == fl).count() as u64 * len;
    assert_eq!((bytes(a, 1514), bytes(b, 300)), (10598, 9900));
}

/// memory_limit counts truesize, not length: 1442 B frames have truesize 2304, so
/// with memory_limit 10000 the 5th packet (11520 B of truesize) triggers a drop of
/// half the flow's 7210 B: 3 packets (4326 >= 3605); memory_used 4608.
/// 100 B packets with the same truesize overflow at the same point (500 B queued).
#[test]
fn memory_limit_counts_truesize() {
    assert_eq!(truesize_for_len(1442), 2304);
    for len in [1442u32, 100] {
        let mut q = fq(&[("memory_limit", int(10_000))]);
        let mut drops = Vec::new();
        for i in 0..4 {
            let skb = Skb { truesize: 2304, ..pkt(i, 7, len) };
            assert_eq!(q.enqueue(skb, 0, &mut drops), EnqueueVerdict::Success);
        }
        assert_eq!(xstat(&q, "memory_used"), 9216);
        let skb = Skb { truesize: 2304, ..pkt(4, 7, len) };
        assert_eq!(q.enqueue(skb, 0, &mut drops), EnqueueVerdict::Congested);
        assert_eq!(drops.clone(), [0, 1, 2]);
        assert_eq!((q.qlen(), q.backlog(), q.memory_usage()), (2, 2 * len as u64, 4608));
        assert_eq!((xstat(&q, "drop_overlimit"), xstat(&q, "drop_overmemory")), (3, 3));
        drain_ids(&mut q, 0);
        assert_eq!(xstat(&q, "memory_used"), 0);
    }
}

/// CoDel in a flow looks at the whole qdisc's backlog: B holds one packet at a time
/// (its own backlog after the dequeue is 0), but A's 10000 B keep the qdisc above
/// one MTU, so B's second packet, 185547 units after the first dequeue armed
/// first_above_time, is dropped (Not-ECT) or CE-marked (ECT, ECN on by default).
#[test]
fn codel_per_flow_uses_the_qdisc_backlog() {
    for (ecn, dropped) in [(Skb::ECN_NOT_ECT, true), (Skb::ECN_ECT0, false)] {
        let mut q = fq(&[]);
        let f = distinct_flows(&q, 2);
        let (a, b) = (f[0], f[1]);
        let mut drops = Vec::new();
        q.enqueue(Skb { ecn, ..pkt(1, b, 1000) }, 0, &mut drops);
        for i in 0..10 {
            q.enqueue(pkt(10 + i, a, 1000), 0, &mut drops);
        }
        assert_eq!(q.dequeue(10_000_000, &mut drops).unwrap().id, 1);
        assert_eq!(q.flow_vars(idx(&q, b)).unwrap().first_above_time, 9765 + 97656);
        q.enqueue(Skb { ecn, ..pkt(2, b, 1000) }, 10_000_000, &mut drops);
        let out = q.dequeue(200_000_000, &mut drops).unwrap();
        if dropped {
            assert_eq!(drops.clone(), [2]);
            assert_eq!(out.id, 10); // B turned out empty and left the lists; A sends
            assert_eq!((q.stats().drops, xstat(&q, "ecn_mark")), (1, 0));
        } else {
            assert_eq!((out.id, out.ecn), (2, Skb::ECN_CE));
            assert_eq!((q.stats().drops, xstat(&q, "ecn_mark")), (0, 1));
        }
        let vb = q.flow_vars(idx(&q, b)).unwrap();
        assert_eq!((vb.count, vb.lastcount, vb.dropping), (1, 1, true));
        assert_eq!(xstat(&q, "maxpacket"), 1000);
    }
}

/// With a single flow bucket, fq_codel's drop decisions are CoDel's: the same load
/// through `codel` and `fq_codel flows 1` (ECN off, no overflow) delivers and drops
/// the same packets at the same times.
#[test]
fn one_flow_behaves_like_codel() {
    let dev = DevInfo::default();
    let mut c = Codel::from_params(Params::from_pairs(&[("limit", int(100_000))]), &dev).unwrap();
    let mut f = FqCodel::from_params(
        Params::from_pairs(&[("flows", int(1)), ("ecn", ParamValue::Bool(false)), ("limit", int(100_000))]),
        &dev,
    )
    .unwrap();
    let (mut dc, mut df) = (Vec::new(), Vec::new());
    let mut seed = 12345u64;
    let mut rnd = || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) as u32
    };
    let mut id = 0u32;
    let (mut out_c, mut out_f) = (Vec::new(), Vec::new());
    // 5 s: 1.25 packets arrive per 100 us tick on average, one leaves per tick.
    for tick in 0..50_000u64 {
        let now = tick * 100_000;
        let arrivals = [0, 1, 1, 3][(rnd() % 4) as usize];
        for _ in 0..arrivals {
            let skb = Skb { id, flow: rnd(), len: 200 + rnd() % 1300, ..Skb::default() };
            id += 1;
            c.enqueue(skb, now, &mut dc);
            f.enqueue(skb, now, &mut df);
        }
        out_c.push(c.dequeue(now, &mut dc).map(|s| s.id));
        out_f.push(f.dequeue(now, &mut df).map(|s| s.id));
    }
    assert_eq!(out_c, out_f);
    assert_eq!(dc, df);
    assert!(dc.len() > 100, "the load must make CoDel drop ({} drops)", dc.len());
    assert_eq!(c.vars(), f.flow_vars(0).unwrap());
    assert_eq!(c.codel_stats().maxpacket, f.codel_stats().maxpacket);
}

fn fq_params() -> impl Strategy<Value = Params> {
    (
        prop::option::of(0i64..48),
        prop::option::of(prop::sample::select(vec![0i64, 1, 2, 3, 16, 1024])),
        prop::option::of(prop_oneof![Just(0i64), 1i64..3000]),
        prop::option::of(0i64..80),
        prop::option::of(0i64..60_000),
        (
            prop::option::of(0u64..20_000),
            prop::option::of(0u64..200_000),
            prop::option::of(any::<bool>()),
            prop::option::of(0u64..10_000),
            prop::option::of(prop::sample::select(vec!["mtu", "maxpacket"])),
            prop::option::of((0u8..255, any::<u8>())),
        ),
    )
        .prop_map(|(limit, flows, quantum, batch, mem, (target, interval, ecn, ce, mode, sel))| {
            let mut kv: Vec<(&str, ParamValue)> = Vec::new();
            if let Some(v) = limit {
                kv.push(("limit", int(v)));
            }
            if let Some(v) = flows {
                kv.push(("flows", int(v)));
            }
            if let Some(v) = quantum {
                kv.push(("quantum", int(v)));
            }
            if let Some(v) = batch {
                kv.push(("drop_batch", int(v)));
            }
            if let Some(v) = mem {
                kv.push(("memory_limit", int(v)));
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
            if let Some((v, m)) = sel {
                kv.push(("ce_threshold_selector", s(&format!("{v:#x}/{m}"))));
            }
            Params::from_pairs(&kv)
        })
}

#[derive(Clone, Debug)]
enum Op {
    Enqueue { flow: u32, len: u32, ecn: u8, dscp: u8 },
    Dequeue,
    Wait(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0u32..10, prop_oneof![Just(66u32), Just(1514), 0u32..9000], 0u8..4, 0u8..64)
            .prop_map(|(flow, len, ecn, dscp)| Op::Enqueue { flow, len, ecn, dscp }),
        3 => Just(Op::Dequeue),
        2 => prop_oneof![0u64..2_000_000, 0u64..300_000_000].prop_map(Op::Wait),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// At every step: enqueued = dequeued + dropped + qlen; backlog and memory_used
    /// equal the bytes and truesize held; every packet leaves exactly once; every
    /// flow holding packets is on new_flows or old_flows; draining empties it all.
    #[test]
    fn conservation(
        p in fq_params(),
        hash_key in any::<u32>(),
        ops in prop::collection::vec(op(), 1..700),
    ) {
        let dev = DevInfo { hash_key, ..DevInfo::default() };
        let mut q = FqCodel::from_params(p, &dev).unwrap();
        let mut held: HashMap<u32, Skb> = HashMap::new();
        let (mut enq, mut deq, mut dropped) = (0u64, 0u64, 0u64);
        let mut drops = Vec::new();
        let mut now = 0u64;
        for (id, op) in ops.into_iter().enumerate() {
            drops.clear();
            match op {
                Op::Enqueue { flow, len, ecn, dscp } => {
                    let skb = Skb { ecn, dscp, ..pkt(id as u32, flow, len) };
                    enq += 1;
                    held.insert(skb.id, skb);
                    let v = q.enqueue(skb, now, &mut drops);
                    let self_dropped = drops.contains(&skb.id);
                    prop_assert!(v != EnqueueVerdict::Dropped);
                    if v == EnqueueVerdict::Success {
                        prop_assert!(!self_dropped);
                    } else {
                        prop_assert!(!drops.is_empty());
                    }
                }
                Op::Dequeue => {
                    if let Some(skb) = q.dequeue(now, &mut drops) {
                        deq += 1;
                        prop_assert_eq!(held.remove(&skb.id).map(|h| (h.len, h.flow)), Some((skb.len, skb.flow)));
                    }
                }
                Op::Wait(ns) => now += ns,
            }
            common::take_dropped(&mut held, &drops)?;
            dropped += drops.len() as u64;
            prop_assert_eq!(q.stats().drops, dropped);
            prop_assert_eq!(q.stats().overlimits, 0);
            prop_assert_eq!(enq, deq + dropped + q.qlen() as u64);
            prop_assert_eq!(q.backlog(), held.values().map(|s| s.len as u64).sum::<u64>());
            prop_assert_eq!(q.memory_usage(), held.values().map(|s| s.truesize as u64).sum::<u64>());
            let busy: HashSet<u32> = held.values().map(|s| q.flow_index(s)).collect();
            let listed = q.new_flows_len() + q.old_flows_len();
            prop_assert!(listed as usize >= busy.len());
            prop_assert!(listed <= q.config().flows);
            for &i in &busy {
                let fs = q.flow_stats(i, now).unwrap();
                let want: Vec<&Skb> = held.values().filter(|s| q.flow_index(s) == i).collect();
                prop_assert_eq!(fs.qlen as usize, want.len());
                prop_assert_eq!(fs.backlog, want.iter().map(|s| s.len as u64).sum::<u64>());
            }
        }
        loop {
            drops.clear();
            let out = q.dequeue(now, &mut drops);
            common::take_dropped(&mut held, &drops)?;
            match out {
                Some(skb) => prop_assert!(held.remove(&skb.id).is_some()),
                None => break,
            }
        }
        prop_assert!(held.is_empty());
        prop_assert_eq!((q.qlen(), q.backlog(), q.memory_usage()), (0, 0, 0));
        prop_assert_eq!((q.new_flows_len(), q.old_flows_len()), (0, 0));
    }
}

/// `tc -s qdisc show` of fq_codel reads as iproute2 prints it: the defaults on a
/// 1000-packet Ethernet device, `ecn` only when set, and the xstats lines with
/// memory_used once packets are held.
#[test]
fn tc_layout() {
    let mut q = fq(&[]);
    assert_eq!(
        q.tc_options(),
        "limit 10240p flows 1024 quantum 1514 target 5ms interval 100ms memory_limit 32Mb ecn drop_batch 64"
    );
    assert!(!fq(&[("ecn", ParamValue::Bool(false))]).tc_options().contains("ecn "));
    let mut drops = Vec::new();
    q.enqueue(pkt(1, 7, 1514), 0, &mut drops);
    let t = truesize_for_len(1514);
    assert_eq!(
        q.tc_xstats(),
        format!("  maxpacket 0 drop_overlimit 0 new_flow_count 1 ecn_mark 0 memory_used {t}\n  new_flows_len 1 old_flows_len 0")
    );
}
