//! netem as a qdisc (net/sched/sch_netem.c): exact values worked out from the
//! algorithm. Times are ns; `seed` fixes the netem's stream, so a jitter's draws are the
//! stream's values (`tabledist()`: `(rnd % 2σ) + μ - σ`).

use darkbuf_model::params::{ParamValue, Params};
use darkbuf_model::qdisc::{build, AnyQdisc, DevInfo, EnqueueVerdict, Qdisc, StackOp};
use darkbuf_model::Skb;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

const MS: u64 = 1_000_000;

fn s(v: &str) -> ParamValue {
    ParamValue::Str(v.into())
}

fn netem(kv: &[(&str, ParamValue)]) -> AnyQdisc {
    build("netem", Params::from_pairs(kv), &DevInfo::default()).expect("netem builds")
}

fn pkt(id: u32, len: u32) -> Skb {
    Skb { id, flow: 1, len, ..Skb::default() }
}

/// Everything `q` lets out at `now`, by id.
fn drain(q: &mut AnyQdisc, now: u64) -> Vec<u32> {
    let mut drops = Vec::new();
    std::iter::from_fn(|| q.dequeue(now, &mut drops).map(|s| s.id)).collect()
}

#[test]
fn a_packet_enqueued_at_t_leaves_at_t_plus_delay() {
    let mut q = netem(&[("delay", s("10ms"))]);
    let mut drops = Vec::new();
    let t = 5 * MS + 123;
    assert_eq!(q.enqueue(pkt(1, 1000), t, &mut drops), EnqueueVerdict::Success);
    assert_eq!((q.qlen(), q.backlog()), (1, 1000));
    assert_eq!(q.dequeue(t + 10 * MS - 1, &mut drops), None);
    assert_eq!(q.next_wakeup(), Some(t + 10 * MS));
    assert_eq!(q.dequeue(t + 10 * MS, &mut drops).map(|s| s.id), Some(1));
    assert_eq!((q.qlen(), q.backlog(), q.next_wakeup()), (0, 0, None));
    // A delayed packet is orphaned on entry (skb_orphan_partial()).
    let mut ops = Vec::new();
    q.take_stack_ops(&mut ops);
    assert_eq!(ops, [StackOp::Orphan(1)]);
}

/// Without a delay, a jitter or a rate nothing is held for a time: no orphaning, and
/// the packet leaves at once.
#[test]
fn no_delay_leaves_at_once_and_keeps_the_owner() {
    let mut q = netem(&[("limit", ParamValue::Int(5))]);
    let mut drops = Vec::new();
    q.enqueue(pkt(7, 100), 42, &mut drops);
    assert_eq!(drain(&mut q, 42), [7]);
    let mut ops = Vec::new();
    q.take_stack_ops(&mut ops);
    assert!(ops.is_empty());
}

/// `delay 10ms 4ms` with seed 99: each packet's delay is `(r % 8ms) + 10ms - 4ms` for the
/// stream's next value r, and the tfifo lets them out by time to send, equal times in
/// arrival order.
#[test]
fn jitter_orders_the_tfifo_by_time_to_send() {
    let mut q = netem(&[("delay", s("10ms")), ("jitter", s("4ms")), ("seed", ParamValue::Int(99))]);
    let mut r = ChaCha8Rng::seed_from_u64(99);
    let mut drops = Vec::new();
    let mut want: Vec<(u64, u32)> = Vec::new();
    for id in 0..50u32 {
        let t = id as u64 * 100_000; // one packet every 0.1 ms
        q.enqueue(pkt(id, 500), t, &mut drops);
        let d = (r.next_u32() % (8 * MS as u32)) as u64 + 10 * MS - 4 * MS;
        want.push((t + d, id));
    }
    want.sort_by_key(|&(at, _)| at); // stable: equal times keep arrival order
    let mut got = Vec::new();
    let mut now = 0;
    while q.qlen() > 0 {
        match q.dequeue(now, &mut drops) {
            Some(skb) => got.push((now, skb.id)),
            None => now = q.next_wakeup().expect("a watchdog while packets are held"),
        }
    }
    assert_eq!(got, want);
    assert!(drops.is_empty());
}

/// `rate 1mbit` (125,000 B/s): 1000-byte packets enqueued together leave 8 ms apart
/// (`packet_time_ns()`), each behind the last one queued; with `packetoverhead 20
/// cellsize 48 celloverhead 5`: 1020 bytes are 22 cells of 53 bytes, 1166 bytes,
/// 9.328 ms each.
#[test]
fn rate_spaces_packets_by_their_time_at_the_rate() {
    for (rate, each) in [("1mbit", 8 * MS), ("1mbit 20 48 5", 9_328_000)] {
        let mut q = netem(&[("rate", s(rate))]);
        let mut drops = Vec::new();
        for id in 0..4 {
            q.enqueue(pkt(id, 1000), 0, &mut drops);
        }
        let mut times = Vec::new();
        let mut now = 0;
        while q.qlen() > 0 {
            match q.dequeue(now, &mut drops) {
                Some(_) => times.push(now),
                None => now = q.next_wakeup().unwrap(),
            }
        }
        assert_eq!(times, [each, 2 * each, 3 * each, 4 * each], "rate {rate}");
    }
    // A delay with the rate: the first waits delay + its time; later ones queue behind.
    let mut q = netem(&[("rate", s("1mbit")), ("delay", s("50ms"))]);
    let mut drops = Vec::new();
    q.enqueue(pkt(0, 1000), 0, &mut drops);
    q.enqueue(pkt(1, 1000), 20 * MS, &mut drops);
    assert_eq!(q.next_wakeup(), Some(58 * MS));
    assert_eq!(drain(&mut q, 58 * MS), [0]);
    // Packet 1: max(20 + 50, 58) + 8 = 78 ms.
    assert_eq!(q.next_wakeup(), Some(78 * MS));
}

/// `sch->q.qlen >= sch->limit` drops the arrival (NET_XMIT_DROP).
#[test]
fn limit_drops_arrivals() {
    let mut q = netem(&[("delay", s("1ms")), ("limit", ParamValue::Int(3))]);
    let mut drops = Vec::new();
    let v: Vec<EnqueueVerdict> = (0..5).map(|id| q.enqueue(pkt(id, 100), 0, &mut drops)).collect();
    assert_eq!(v[..3], [EnqueueVerdict::Success; 3]);
    assert_eq!(v[3..], [EnqueueVerdict::Dropped; 2]);
    assert_eq!(drops, [3, 4]);
    assert_eq!((q.qlen(), q.stats().drops), (3, 2));
    // limit 0 holds nothing (the kernel's sch->limit = 0).
    let mut q = netem(&[("limit", ParamValue::Int(0))]);
    assert_eq!(q.enqueue(pkt(9, 100), 0, &mut drops), EnqueueVerdict::Dropped);
}

/// Loss drops the packet whole (a GSO skb too) and the sender sees success
/// (`NET_XMIT_SUCCESS | __NET_XMIT_BYPASS`); with `ecn`, an ECN-capable packet is
/// marked CE instead, and the mark counts as a drop as the kernel counts it.
#[test]
fn loss_drops_whole_skbs_silently_and_ecn_marks() {
    let mut q = netem(&[("loss", s("100%"))]);
    let mut drops = Vec::new();
    let gso = Skb { gso_segs: 44, ..pkt(1, 64_000) };
    assert_eq!(q.enqueue(gso, 0, &mut drops), EnqueueVerdict::Success);
    assert_eq!((drops.as_slice(), q.qlen(), q.stats().drops), (&[1u32][..], 0, 1));
    let mut q = netem(&[("loss", s("100%")), ("ecn", ParamValue::Bool(true))]);
    drops.clear();
    q.enqueue(Skb { ecn: Skb::ECN_ECT0, ..pkt(2, 100) }, 0, &mut drops);
    q.enqueue(Skb { ecn: Skb::ECN_NOT_ECT, ..pkt(3, 100) }, 0, &mut drops);
    assert_eq!(drops, [3]);
    let out = q.dequeue(0, &mut drops).unwrap();
    assert_eq!((out.id, out.ecn), (2, Skb::ECN_CE));
    assert_eq!(q.stats().drops, 2);
}

/// `reorder 100% gap 3` with a delay: `q->counter` counts delayed packets; at gap - 1
/// the next goes to the head, due at once (a requeue), and the count restarts.
#[test]
fn reorder_with_a_gap_sends_every_third_packet_ahead() {
    let mut q = netem(&[("delay", s("10ms")), ("reorder", s("100%")), ("gap", ParamValue::Int(3))]);
    let mut drops = Vec::new();
    for id in 0..9 {
        q.enqueue(pkt(id, 100), 0, &mut drops);
    }
    assert_eq!(drain(&mut q, 0), [8, 5, 2], "the last reordered first (__qdisc_enqueue_head)");
    assert_eq!(q.stats().requeues, 3);
    assert_eq!(drain(&mut q, 10 * MS), [0, 1, 3, 4, 6, 7]);
}

/// `duplicate 100%`: the clone goes to the root (a `StackOp`), marked so that it is
/// not duplicated again; the original is queued.
#[test]
fn duplicate_asks_for_a_clone_once() {
    let mut q = netem(&[("duplicate", s("100%"))]);
    let mut drops = Vec::new();
    q.enqueue(pkt(4, 100), 0, &mut drops);
    let mut ops = Vec::new();
    q.take_stack_ops(&mut ops);
    let [StackOp::Clone(c)] = ops[..] else { panic!("{ops:?}") };
    assert_eq!((c.id, c.netem_mark), (4, Skb::NETEM_CLONE));
    // The caller gives the clone an id of its own and enqueues it: no second clone.
    q.enqueue(Skb { id: 5, ..c }, 0, &mut drops);
    ops.clear();
    q.take_stack_ops(&mut ops);
    assert!(ops.is_empty());
    assert_eq!(drain(&mut q, 0), [4, 5]);
}

/// `corrupt 100%`: a linear packet gets its bit flipped in place; a GSO skb is handed
/// to the stack to be cut (`netem_segment()`), and its first segment, coming back
/// marked, is corrupted and queued without new draws.
#[test]
fn corrupt_flips_a_bit_or_segments_a_gso_skb() {
    let mut q = netem(&[("corrupt", s("100%")), ("delay", s("1ms"))]);
    let mut drops = Vec::new();
    let mut ops = Vec::new();
    q.enqueue(pkt(1, 1500), 0, &mut drops);
    q.take_stack_ops(&mut ops);
    assert!(matches!(ops[..], [StackOp::Orphan(1), StackOp::Corrupt { id: 1, bit, .. }] if bit < 8), "{ops:?}");
    ops.clear();
    let gso = Skb { gso_segs: 3, ..pkt(2, 4000) };
    assert_eq!(q.enqueue(gso, 0, &mut drops), EnqueueVerdict::Success);
    q.take_stack_ops(&mut ops);
    assert_eq!(ops[..], [StackOp::Orphan(2), StackOp::SegmentCorrupt(gso)]);
    assert_eq!(q.qlen(), 1, "the GSO skb is not queued");
    ops.clear();
    let first = Skb { gso_segs: 0, len: 1514, netem_mark: Skb::NETEM_CORRUPT_SEG, ..gso };
    q.enqueue(first, 0, &mut drops);
    q.take_stack_ops(&mut ops);
    assert!(matches!(ops[..], [StackOp::Corrupt { id: 2, .. }]), "{ops:?}");
    assert_eq!(drain(&mut q, MS), [1, 2]);
}

/// `slot 10ms packets 2`: the first slot is open from the configuration; two packets
/// leave, then the next slot opens 10 ms later (min = max: no draw matters).
#[test]
fn slot_releases_packets_in_bursts() {
    let mut q = netem(&[("slot", s("10ms packets 2"))]);
    let mut drops = Vec::new();
    for id in 0..5 {
        q.enqueue(pkt(id, 100), 0, &mut drops);
    }
    assert_eq!(drain(&mut q, 0), [0, 1]);
    assert_eq!(q.next_wakeup(), Some(10 * MS));
    assert_eq!(drain(&mut q, 10 * MS), [2, 3]);
    assert_eq!(drain(&mut q, 20 * MS), [4]);
}

/// The case: `netem loss 0.25% limit 1000` with a child `tbf rate 1mbit burst
/// 2048 latency 100ms`. Due packets move into the tbf at each dequeue, so the tbf's
/// limit governs (1mbit x 100 ms + 2048 = 14548 bytes: ten 1442-byte packets), and
/// netem's own queue does not build. Loss off here, so the counts are exact.
#[test]
fn a_tbf_child_holds_the_queue() {
    let mut child = Params::from_pairs(&[("rate", s("1mbit")), ("burst", ParamValue::Int(2048)), ("latency", s("100ms"))]);
    child.insert("kind", s("tbf"));
    let mut q = netem(&[("limit", ParamValue::Int(1000)), ("child", ParamValue::Table(child))]);
    let mut drops = Vec::new();
    for id in 0..100 {
        q.enqueue(pkt(id, 1442), 0, &mut drops);
    }
    assert_eq!(q.qlen(), 100, "the child's packets count in netem's qlen");
    // One dequeue moves all 100 into the tbf, which keeps 10 and sends the first.
    assert_eq!(q.dequeue(0, &mut drops).map(|s| s.id), Some(0));
    assert_eq!(drops, (10..100).collect::<Vec<u32>>());
    assert_eq!((q.qlen(), q.backlog(), q.stats().drops), (9, 9 * 1442, 90));
    // The run loop's next dequeue finds the tbf out of tokens; its watchdog: 1442 bytes
    // at 8000 ns a byte less the 606 bytes left of the 2048-byte burst.
    assert_eq!(q.dequeue(0, &mut drops), None);
    assert_eq!(q.stats().drops, 90);
    assert_eq!(q.next_wakeup(), Some((1442 - 606) * 8000));
}

/// tc's refusals.
#[test]
fn tc_refuses_what_tc_refuses() {
    let e = |kv: &[(&str, ParamValue)]| build("netem", Params::from_pairs(kv), &DevInfo::default()).err().map(|e| format!("{e:?}")).unwrap_or_default();
    assert!(e(&[("reorder", s("10%"))]).contains("reordering not possible without specifying some delay"));
    assert!(e(&[("gap", ParamValue::Int(5)), ("delay", s("1ms"))]).contains("gap specified without reorder probability"));
    assert!(e(&[("ecn", ParamValue::Bool(true))]).contains("ecn requested without loss model"));
    assert!(e(&[("distribution", s("normal")), ("delay", s("1ms"))]).contains("distribution specified but no latency and jitter"));
    assert!(e(&[("loss", s("state"))]).contains("needs its first probability"));
    assert!(e(&[("slot", s("20ms 10ms"))]).contains("slot min delay greater than max delay"));
    assert!(e(&[("bogus", ParamValue::Int(1))]).contains("Unknown"));
}
