//! htb (net/sched/sch_htb.c): classification and the direct queue, priority order,
//! DRR by quantum, borrowing up to ceil with the lends/borrows counters, overlimits,
//! long-run rates, tc's defaults and errors, and a conservation property test driven by
//! `next_wakeup()`.

use darkbuf_model::params::{ParamError, ParamValue, Params};
use darkbuf_model::qdisc::htb::{Htb, HtbMode};
use darkbuf_model::qdisc::{build, DevInfo, EnqueueVerdict, Qdisc};
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

fn class(kv: &[(&str, ParamValue)]) -> Params {
    Params::from_pairs(kv)
}

fn htb_params(top: &[(&str, ParamValue)], classes: Vec<Params>) -> Params {
    let mut kv = top.to_vec();
    kv.push(("class", ParamValue::Tables(classes)));
    Params::from_pairs(&kv)
}

fn htb(top: &[(&str, ParamValue)], classes: Vec<Params>) -> Htb {
    Htb::from_params(htb_params(top, classes), &DevInfo::default()).unwrap()
}

fn htb_err(top: &[(&str, ParamValue)], classes: Vec<Params>) -> ParamError {
    match Htb::from_params(htb_params(top, classes), &DevInfo::default()) {
        Err(e) => e,
        Ok(_) => panic!("accepted"),
    }
}

fn pkt(id: u32, len: u32, priority: u32) -> Skb {
    Skb {
        id,
        len,
        priority,
        ..Skb::default()
    }
}

fn drain_at(q: &mut Htb, now: u64) -> Vec<Skb> {
    let mut drops = Vec::new();
    let mut out = Vec::new();
    while let Some(s) = q.dequeue(now, &mut drops) {
        out.push(s);
    }
    assert!(drops.is_empty());
    out
}

fn stat(q: &Htb, name: &str) -> u64 {
    q.xstats()
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no xstat {name}"))
}

const C1: u32 = 0x10001;
const C10: u32 = 0x10010;
const C20: u32 = 0x10020;

/// A root 1:1 with leaves 1:10 and 1:20 under it.
fn two_leaves(
    root: &[(&str, ParamValue)],
    a: &[(&str, ParamValue)],
    b: &[(&str, ParamValue)],
) -> Vec<Params> {
    let mut r = vec![("classid", s("1:1"))];
    r.extend_from_slice(root);
    let mut x = vec![("classid", s("1:10")), ("parent", s("1:1"))];
    x.extend_from_slice(a);
    let mut y = vec![("classid", s("1:20")), ("parent", s("1:1"))];
    y.extend_from_slice(b);
    vec![class(&r), class(&x), class(&y)]
}

#[test]
fn tc_defaults_and_kernel_clamps() {
    let q = htb(
        &[],
        vec![
            class(&[("classid", s("1:1")), ("rate", s("10mbit"))]),
            class(&[
                ("classid", s("1:10")),
                ("parent", s("1:1")),
                ("rate", s("10kbit")),
                ("prio", int(9)),
            ]),
            class(&[
                ("classid", s("1:20")),
                ("parent", s("1:")),
                ("rate", s("1gbit")),
                ("quantum", int(3000)),
            ]),
            class(&[
                ("classid", s("1:30")),
                ("parent", s("1:1")),
                ("rate", s("8gbit")),
            ]),
        ],
    );
    let c = q.class_stats();
    assert_eq!(
        c.iter().map(|c| c.classid).collect::<Vec<_>>(),
        [C1, C10, C20, 0x10030]
    );
    // 1:1 became an inner class at level 7 (a root class); the others are leaves.
    assert_eq!(c.iter().map(|c| c.level).collect::<Vec<_>>(), [7, 0, 0, 0]);
    assert_eq!((c[2].parent, c[1].parent), (None, Some(C1)));
    // burst = rate / HZ + mtu with HZ = 1e9: 1600 B, at 10mbit 1.28 ms = 20000 ticks.
    assert_eq!((c[0].buffer, c[0].cbuffer), (1_280_000, 1_280_000));
    assert_eq!((c[0].tokens, c[0].ctokens), (1_280_000, 1_280_000));
    // 8gbit: 1e9 B/s / 1e9 + 1600 = 1601 B, 1601 ns = ceil(25.015625) ticks = 26 -> 1664 ns.
    assert_eq!(c[3].buffer, 1664);
    // ceil defaults to rate.
    assert_eq!(c[1].ceil_bytes_ps, 1250);
    // quantum = rate / r2q clamped to 1000..200000; an explicit one is kept.
    assert_eq!(
        (c[1].quantum, c[2].quantum, c[3].quantum),
        (1000, 3000, 200_000)
    );
    // prio above 7 becomes 7.
    assert_eq!(c[1].prio, 7);
    assert!(c.iter().all(|c| c.mode == HtbMode::CanSend));
    assert_eq!(
        q.warnings(),
        [
            "quantum of class 10010 is small. Consider r2q change.",
            "quantum of class 10030 is big. Consider r2q change."
        ]
    );
    // r2q changes the quantum; 0 counts as 1.
    let q = htb(
        &[("r2q", int(0))],
        vec![class(&[("classid", s("1:10")), ("rate", s("80kbit"))])],
    );
    assert_eq!(q.class_stats()[0].quantum, 10_000);
}

#[test]
fn invalid_parameters_are_keyed_by_class() {
    let key = |e: ParamError| e.key().to_string();
    assert_eq!(
        key(htb_err(&[], vec![class(&[("classid", s("1:10"))])])),
        "class[0].rate"
    );
    assert_eq!(
        key(htb_err(&[], vec![class(&[("rate", s("1mbit"))])])),
        "class[0].classid"
    );
    assert_eq!(
        key(htb_err(
            &[],
            vec![class(&[("classid", s("2:10")), ("rate", s("1mbit"))])]
        )),
        "class[0].classid"
    );
    assert_eq!(
        key(htb_err(
            &[],
            vec![class(&[("classid", s("1:0")), ("rate", s("1mbit"))])]
        )),
        "class[0].classid"
    );
    assert_eq!(
        key(htb_err(
            &[],
            vec![
                class(&[("classid", s("1:10")), ("rate", s("1mbit"))]),
                class(&[
                    ("classid", s("1:20")),
                    ("parent", s("1:5")),
                    ("rate", s("1mbit"))
                ]),
            ]
        )),
        "class[1].parent"
    );
    assert_eq!(
        key(htb_err(
            &[],
            vec![
                class(&[("classid", s("1:10")), ("rate", s("1mbit"))]),
                class(&[("classid", s("1:10")), ("rate", s("1mbit"))]),
            ]
        )),
        "class[1].classid"
    );
    assert_eq!(
        key(htb_err(
            &[],
            vec![
                class(&[
                    ("classid", s("1:1")),
                    ("rate", s("1mbit")),
                    ("qdisc", s("sfq"))
                ]),
                class(&[
                    ("classid", s("1:10")),
                    ("parent", s("1:1")),
                    ("rate", s("1mbit"))
                ]),
            ]
        )),
        "class[0].qdisc"
    );
    match htb_err(
        &[],
        vec![class(&[
            ("classid", s("1:10")),
            ("rate", s("1mbit")),
            ("bogus", int(1)),
        ])],
    ) {
        ParamError::Unknown { key, valid } => {
            assert_eq!(key, "class[0].bogus");
            assert!(valid.contains(&"cburst"));
        }
        e => panic!("{e:?}"),
    }
    assert_eq!(key(htb_err(&[("default", s("xyz"))], vec![])), "default");
    assert_eq!(key(htb_err(&[("defualt", s("10"))], vec![])), "defualt");
    assert_eq!(
        key(htb_err(&[("overlimits_mode", s("sometimes"))], vec![])),
        "overlimits_mode"
    );
    // Eight levels at most: 1:1 (7) > 1:2 (6) > ... > 1:7 (1) > leaf; one more is too deep.
    let mut chain = vec![class(&[("classid", s("1:1")), ("rate", s("1mbit"))])];
    for i in 2..=8 {
        chain.push(class(&[
            ("classid", s(&format!("1:{i}"))),
            ("parent", s(&format!("1:{}", i - 1))),
            ("rate", s("1mbit")),
        ]));
    }
    let q = htb(&[], chain.clone());
    assert_eq!(
        q.class_stats().iter().map(|c| c.level).collect::<Vec<_>>(),
        [7, 6, 5, 4, 3, 2, 1, 0]
    );
    chain.push(class(&[
        ("classid", s("1:9")),
        ("parent", s("1:8")),
        ("rate", s("1mbit")),
    ]));
    assert_eq!(key(htb_err(&[], chain)), "class[8].parent");
}

#[test]
fn unclassified_traffic_takes_the_unshaped_direct_queue() {
    let classes = two_leaves(
        &[("rate", s("1mbit"))],
        &[("rate", s("1mbit"))],
        &[("rate", s("1mbit"))],
    );
    // default 0 (absent): priority 0 and the qdisc's own handle go direct.
    let mut q = htb(&[], classes.clone());
    let mut drops = Vec::new();
    q.enqueue(pkt(0, 1000, C10), 0, &mut drops);
    for i in 1..6 {
        q.enqueue(
            pkt(i, 1000, if i % 2 == 0 { 0 } else { 0x10000 }),
            0,
            &mut drops,
        );
    }
    // A packet naming an inner class falls back to the default: direct too.
    q.enqueue(pkt(6, 1000, C1), 0, &mut drops);
    assert_eq!(q.direct_packets_stat(), 6);
    assert_eq!(stat(&q, "direct_packets_stat"), 6);
    // Direct packets leave first and are never shaped: all six at t=0, then the class's.
    let out = drain_at(&mut q, 0);
    assert_eq!(
        out.iter().map(|p| p.id).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5, 6, 0]
    );
    assert_eq!(q.stats().overlimits, 0);

    // default "20" (hex, as tc reads it) or 0x20: priority 0 goes to 1:20 and is shaped.
    for default in [s("20"), int(0x20)] {
        let mut q = htb(&[("default", default)], classes.clone());
        for i in 0..4 {
            q.enqueue(pkt(i, 1000, 0), 0, &mut drops);
        }
        assert_eq!(q.direct_packets_stat(), 0);
        assert_eq!(q.class(C20).unwrap().qlen, 4);
        // 1mbit, 1600 B bursts (12.8 ms): two 1000 B packets, then 1:20 and 1:1 are
        // 3.2 ms in debt.
        assert_eq!(drain_at(&mut q, 0).len(), 2);
        assert_eq!(q.next_wakeup(), Some(3_200_000));
        assert_eq!(drain_at(&mut q, 3_200_000).len(), 1);
    }

    // direct_qlen bounds the direct queue.
    let mut q = htb(&[("direct_qlen", int(2))], classes);
    let mut drops = Vec::new();
    for i in 0..3 {
        q.enqueue(pkt(i, 100, 0), 0, &mut drops);
    }
    assert_eq!(drops.clone(), [2]);
    assert_eq!(
        (
            q.stats().drops,
            q.qlen(),
            q.backlog(),
            q.direct_packets_stat()
        ),
        (1, 2, 200, 2)
    );
}

/// Classes with bursts large enough that nothing below runs out of tokens.
fn roomy(rate: &str, extra: &[(&'static str, ParamValue)]) -> Vec<(&'static str, ParamValue)> {
    let mut v = vec![
        ("rate", s(rate)),
        ("ceil", s("100mbit")),
        ("burst", s("1mb")),
        ("cburst", s("1mb")),
    ];
    v.extend_from_slice(extra);
    v
}

#[test]
fn lower_prio_numbers_are_served_first() {
    let root = roomy("100mbit", &[]);
    let a = roomy("10mbit", &[("prio", int(1))]);
    let b = roomy("10mbit", &[("prio", int(0))]);
    let mut q = htb(&[], two_leaves(&root, &a, &b));
    let mut drops = Vec::new();
    for i in 0..6 {
        q.enqueue(
            pkt(i, 1000, if i % 2 == 0 { C10 } else { C20 }),
            0,
            &mut drops,
        );
    }
    let out = drain_at(&mut q, 0);
    assert_eq!(
        out.iter().map(|p| p.id).collect::<Vec<_>>(),
        [1, 3, 5, 0, 2, 4]
    );
}

#[test]
fn drr_within_a_priority_follows_quantum_and_deficit() {
    let root = roomy("100mbit", &[]);
    let a = roomy("10mbit", &[("quantum", int(3000))]);
    let b = roomy("10mbit", &[("quantum", int(1500))]);
    let mut q = htb(&[], two_leaves(&root, &a, &b));
    let mut drops = Vec::new();
    for i in 0..40 {
        q.enqueue(pkt(i, 1000, if i < 20 { C10 } else { C20 }), 0, &mut drops);
    }
    let out = drain_at(&mut q, 0);
    let who: String = out
        .iter()
        .take(20)
        .map(|p| if p.priority == C10 { 'A' } else { 'B' })
        .collect();
    // A's deficit: 0 -1000 +3000 = 2000, then 3 packets per round; B's: 500, 1000,
    // then 0 (a second packet) and so on: 1, 1, 2, 1, 2 packets per round.
    assert_eq!(who, "ABAAABAAABBAAABAAABB");
    assert_eq!(out.len(), 40);
    // Every packet went at level 0 (the leaves' own rate): lends, no borrows.
    assert_eq!(
        (stat(&q, "class 1:10 lends"), stat(&q, "class 1:20 lends")),
        (20, 20)
    );
    assert_eq!((stat(&q, "borrows"), stat(&q, "class 1:1 lends")), (0, 0));
}

#[test]
fn lending_and_borrowing_counters_exact() {
    // Leaf 1:10: rate 1mbit (8 ms per 1000 B) with a one-packet burst, ceil 2mbit
    // (4 ms) with 5000 B; parent 1:1: 2mbit with 3000 B (12 ms) buckets.
    let classes = vec![
        class(&[
            ("classid", s("1:1")),
            ("rate", s("2mbit")),
            ("burst", int(3000)),
            ("cburst", int(3000)),
        ]),
        class(&[
            ("classid", s("1:10")),
            ("parent", s("1:1")),
            ("rate", s("1mbit")),
            ("burst", int(1000)),
            ("ceil", s("2mbit")),
            ("cburst", int(5000)),
        ]),
    ];
    let mut q = htb(&[], classes);
    let mut drops = Vec::new();
    for i in 0..5 {
        q.enqueue(pkt(i, 1000, C10), 0, &mut drops);
    }
    // 1, 2: on the leaf's own tokens (level 0); the second leaves it 8 ms in debt, so
    // it borrows. 3, 4: lent by 1:1 (level 7); the fourth takes 1:1 4 ms over its ceil.
    assert_eq!(drain_at(&mut q, 0).len(), 4);
    let leaf = q.class(C10).unwrap();
    let parent = q.class(C1).unwrap();
    assert_eq!(
        (leaf.lends, leaf.borrows, leaf.mode),
        (2, 2, HtbMode::MayBorrow)
    );
    assert_eq!((leaf.tokens, leaf.ctokens), (-8_000_000, 4_000_000));
    assert_eq!(
        (parent.lends, parent.borrows, parent.mode),
        (2, 0, HtbMode::CantSend)
    );
    assert_eq!((parent.tokens, parent.ctokens), (-4_000_000, -4_000_000));
    assert_eq!((parent.overlimits, q.stats().overlimits), (1, 1));
    assert_eq!(q.next_wakeup(), Some(4_000_000));
    // At 4 ms 1:1 can send again and lends the fifth packet.
    assert_eq!(drain_at(&mut q, 4_000_000).len(), 1);
    let leaf = q.class(C10).unwrap();
    let parent = q.class(C1).unwrap();
    assert_eq!(
        (leaf.lends, leaf.borrows, leaf.tokens, leaf.ctokens),
        (2, 3, -4_000_000, 4_000_000)
    );
    assert_eq!(
        (parent.lends, parent.overlimits, q.stats().overlimits),
        (3, 2, 2)
    );
    assert_eq!((stat(&q, "lends"), stat(&q, "borrows")), (5, 3));
    assert_eq!(
        (stat(&q, "class 1:1 lends"), stat(&q, "class 1:10 borrows")),
        (3, 3)
    );
    assert_eq!(q.next_wakeup(), None);
}

#[test]
fn overlimits_count_transitions_or_refused_dequeues() {
    // A single root leaf: 1mbit, 3000 B buckets = 3 packets of 1000 B, plus one more
    // that takes it 8 ms into debt.
    for (mode, qdisc_overlimits) in [("transition", 7), ("dequeue", 6)] {
        let mut q = htb(
            &[("overlimits_mode", s(mode))],
            vec![class(&[
                ("classid", s("1:10")),
                ("rate", s("1mbit")),
                ("burst", int(3000)),
                ("cburst", int(3000)),
            ])],
        );
        let mut drops = Vec::new();
        for i in 0..10 {
            q.enqueue(pkt(i, 1000, C10), 0, &mut drops);
        }
        let mut times = Vec::new();
        let mut now = 0;
        loop {
            times.extend(drain_at(&mut q, now).iter().map(|_| now / 1_000_000));
            if q.qlen() == 0 {
                break;
            }
            now = q.next_wakeup().unwrap();
        }
        assert_eq!(times, [0, 0, 0, 0, 8, 16, 24, 32, 40, 48]);
        assert_eq!(q.class(C10).unwrap().overlimits, 7, "{mode}");
        assert_eq!(q.stats().overlimits, qdisc_overlimits, "{mode}");
    }
}

/// Keeps the listed classes backlogged with 1514 B packets for `secs` seconds, waking
/// at `next_wakeup()`; returns bytes sent per class.
fn run_backlogged(q: &mut Htb, classes: &[u32], secs: u64) -> Vec<u64> {
    let end = secs * 1_000_000_000;
    let mut drops = Vec::new();
    let mut queued = vec![0u32; classes.len()];
    let mut bytes = vec![0u64; classes.len()];
    let (mut now, mut id) = (0u64, 0u32);
    while now <= end {
        for (i, &c) in classes.iter().enumerate() {
            while queued[i] < 20 {
                assert_eq!(
                    q.enqueue(pkt(id, 1514, c), now, &mut drops),
                    EnqueueVerdict::Success
                );
                id += 1;
                queued[i] += 1;
            }
        }
        while let Some(p) = q.dequeue(now, &mut drops) {
            let i = classes.iter().position(|&c| c == p.priority).unwrap();
            queued[i] -= 1;
            bytes[i] += p.len as u64;
        }
        let next = q.next_wakeup().expect("backlogged htb arms its watchdog");
        assert!(next > now);
        now = next;
    }
    assert!(drops.is_empty());
    bytes
}

fn assert_rate(bytes: u64, secs: u64, bits_per_sec: f64, tolerance: f64) {
    let rate = bytes as f64 * 8.0 / secs as f64;
    assert!(
        (rate / bits_per_sec - 1.0).abs() < tolerance,
        "{rate} bit/s, expected {bits_per_sec}"
    );
}

#[test]
fn a_class_borrows_the_parents_spare_rate_up_to_ceil() {
    // 1:1 10mbit; 1:10 2mbit ceil 10mbit; 1:20 8mbit idle.
    let classes = two_leaves(
        &[("rate", s("10mbit"))],
        &[("rate", s("2mbit")), ("ceil", s("10mbit"))],
        &[("rate", s("8mbit")), ("ceil", s("10mbit"))],
    );
    let mut q = htb(&[], classes.clone());
    let b = run_backlogged(&mut q, &[C10], 10);
    assert_rate(b[0], 10, 10e6, 0.01);
    let leaf = q.class(C10).unwrap();
    let parent = q.class(C1).unwrap();
    // Each packet is either sent on the leaf's own rate (its lends) or lent by 1:1.
    assert_eq!(leaf.lends + leaf.borrows, b[0] / 1514);
    assert_eq!(parent.lends, leaf.borrows);
    // About 8/10 of the packets are borrowed.
    let share = leaf.borrows as f64 / (b[0] / 1514) as f64;
    assert!((share - 0.8).abs() < 0.01, "{share}");
    assert_eq!(
        q.class(C20).unwrap().lends + q.class(C20).unwrap().borrows,
        0
    );

    // With ceil = rate there is nothing to borrow.
    let classes = two_leaves(
        &[("rate", s("10mbit"))],
        &[("rate", s("2mbit"))],
        &[("rate", s("8mbit"))],
    );
    let mut q = htb(&[], classes);
    let b = run_backlogged(&mut q, &[C10], 10);
    assert_rate(b[0], 10, 2e6, 0.01);
    assert_eq!(q.class(C10).unwrap().borrows, 0);
}

#[test]
fn two_backlogged_classes_get_their_rate_plus_an_equal_share_of_the_excess() {
    // Guaranteed 2 and 4 mbit; the 4 mbit excess of 1:1 is split by DRR at level 7
    // with equal quanta: 4 and 6 mbit.
    let classes = two_leaves(
        &[("rate", s("10mbit"))],
        &[
            ("rate", s("2mbit")),
            ("ceil", s("10mbit")),
            ("quantum", int(1514)),
        ],
        &[
            ("rate", s("4mbit")),
            ("ceil", s("10mbit")),
            ("quantum", int(1514)),
        ],
    );
    let mut q = htb(&[], classes);
    let b = run_backlogged(&mut q, &[C10, C20], 10);
    assert_rate(b[0] + b[1], 10, 10e6, 0.01);
    assert_rate(b[0], 10, 4e6, 0.02);
    assert_rate(b[1], 10, 6e6, 0.02);
}

#[test]
fn leaf_qdisc_kind_and_drops() {
    let dev = DevInfo {
        tx_queue_len: 3,
        ..DevInfo::default()
    };
    let p = htb_params(
        &[],
        vec![
            class(&[("classid", s("1:10")), ("rate", s("1mbit"))]),
            class(&[
                ("classid", s("1:20")),
                ("rate", s("1mbit")),
                ("qdisc", s("bfifo")),
            ]),
        ],
    );
    let mut q = build("htb", p, &dev).unwrap();
    let mut drops = Vec::new();
    // 1:10's default pfifo holds txqueuelen = 3 packets.
    for i in 0..4 {
        q.enqueue(pkt(i, 1000, C10), 0, &mut drops);
    }
    // 1:20's bfifo holds 3 * 1514 bytes.
    for i in 4..9 {
        q.enqueue(pkt(i, 1000, C20), 0, &mut drops);
    }
    assert_eq!(drops.clone(), [3, 8]);
    assert_eq!((q.stats().drops, q.qlen(), q.backlog()), (2, 7, 7000));
    let x = q.xstats();
    let get = |n: &str| x.iter().find(|(k, _)| *k == n).unwrap().1;
    assert_eq!(
        (get("class 1:10 dropped"), get("class 1:20 dropped")),
        (1, 1)
    );
    // A leaf qdisc is built with its defaults: tbf has none (rate is mandatory).
    let p = htb_params(
        &[],
        vec![class(&[
            ("classid", s("1:10")),
            ("rate", s("1mbit")),
            ("qdisc", s("tbf")),
        ])],
    );
    assert_eq!(
        Htb::from_params(p, &dev).err().map(|e| e.key().to_string()),
        Some("class[0].qdisc".into())
    );
}

// ---- property test ----

fn class_strategy() -> impl Strategy<Value = Vec<(&'static str, ParamValue)>> {
    (
        prop::sample::select(vec!["64kbit", "1mbit", "10mbit", "100mbit"]),
        prop::option::of(prop::sample::select(vec![
            "128kbit", "2mbit", "20mbit", "1gbit",
        ])),
        prop::option::of(1i64..20_000),
        prop::option::of(1i64..20_000),
        prop::option::of(0i64..10),
        prop::option::of(1i64..5000),
        prop::option::of(prop::sample::select(vec![
            "pfifo",
            "bfifo",
            "sfq",
            "pfifo_head_drop",
            "fq_codel",
            "codel",
            "fq",
        ])),
    )
        .prop_map(|(rate, ceil, burst, cburst, prio, quantum, qdisc)| {
            let mut kv = vec![("rate", s(rate))];
            if let Some(v) = ceil {
                kv.push(("ceil", s(v)));
            }
            if let Some(v) = burst {
                kv.push(("burst", int(v)));
            }
            if let Some(v) = cburst {
                kv.push(("cburst", int(v)));
            }
            if let Some(v) = prio {
                kv.push(("prio", int(v)));
            }
            if let Some(v) = quantum {
                kv.push(("quantum", int(v)));
            }
            if let Some(v) = qdisc {
                kv.push(("qdisc", s(v)));
            }
            kv
        })
}

/// A root class 1:1 with up to two inner classes 1:2, 1:3 and leaves 1:10.. below
/// them, plus an optional extra root leaf 1:40.
fn tree_strategy() -> impl Strategy<Value = Params> {
    (
        class_strategy(),
        prop::collection::vec((class_strategy(), 0usize..3), 1..5),
        prop::option::of(class_strategy()),
        prop::option::of(prop::sample::select(vec!["0", "10", "11", "1", "40", "99"])),
        prop::option::of(prop::sample::select(vec!["transition", "dequeue"])),
        any::<bool>(),
    )
        .prop_map(|(root, leaves, extra, default, mode, hysteresis)| {
            let mut classes = Vec::new();
            let strip = |kv: Vec<(&'static str, ParamValue)>| {
                kv.into_iter()
                    .filter(|(k, _)| *k != "qdisc")
                    .collect::<Vec<_>>()
            };
            let mut r = strip(root);
            r.push(("classid", s("1:1")));
            classes.push(class(&r));
            let uses: Vec<usize> = leaves.iter().map(|(_, p)| *p).collect();
            for inner in [2usize, 3] {
                if uses.contains(&(inner - 1)) {
                    let mut c = vec![
                        ("classid", s(&format!("1:{inner}"))),
                        ("parent", s("1:1")),
                        ("rate", s("5mbit")),
                    ];
                    c.push(("ceil", s("50mbit")));
                    classes.push(class(&c));
                }
            }
            for (i, (kv, p)) in leaves.into_iter().enumerate() {
                let mut kv = kv;
                kv.push(("classid", s(&format!("1:{:x}", 0x10 + i))));
                let parent = match p {
                    0 => "1:1".to_string(),
                    n => format!("1:{}", n + 1),
                };
                kv.push(("parent", s(&parent)));
                classes.push(class(&kv));
            }
            if let Some(kv) = extra {
                let mut kv = kv;
                kv.push(("classid", s("1:40")));
                classes.push(class(&kv));
            }
            let mut top = vec![("hysteresis", ParamValue::Bool(hysteresis))];
            if let Some(d) = default {
                top.push(("default", s(d)));
            }
            if let Some(m) = mode {
                top.push(("overlimits_mode", s(m)));
            }
            htb_params(&top, classes)
        })
}

#[derive(Clone, Debug)]
enum Op {
    Enqueue { len: u32, priority: u32 },
    Dequeue,
    Wait(u64),
    Wake,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (prop_oneof![Just(1514u32), Just(64), 1u32..3000],
              prop::sample::select(vec![0u32, 0x10000, 0x10001, 0x10002, 0x10010, 0x10011, 0x10012, 0x10013, 0x10040, 7]))
            .prop_map(|(len, priority)| Op::Enqueue { len, priority }),
        3 => Just(Op::Dequeue),
        1 => (0u64..30_000_000).prop_map(Op::Wait),
        2 => Just(Op::Wake),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn conserves_packets_and_drains_through_the_watchdog(
        p in tree_strategy(),
        tx_queue_len in 1u32..30,
        ops in prop::collection::vec(op(), 1..400),
    ) {
        let dev = DevInfo { tx_queue_len, ..DevInfo::default() };
        let mut q = match Htb::from_params(p, &dev) {
            Ok(q) => q,
            Err(e) => return Err(TestCaseError::fail(format!("valid tree rejected: {e}"))),
        };
        let mut held: HashMap<u32, Skb> = HashMap::new();
        let (mut enq, mut deq, mut dropped) = (0u64, 0u64, 0u64);
        let mut drops = Vec::new();
        let (mut now, mut id) = (0u64, 0u32);
        for op in ops {
            drops.clear();
            match op {
                Op::Enqueue { len, priority } => {
                    let skb = pkt(id, len, priority);
                    id += 1;
                    enq += 1;
                    held.insert(skb.id, skb);
                    let v = q.enqueue(skb, now, &mut drops);
                    let arrival_dropped = drops.contains(&skb.id);
                    if v == EnqueueVerdict::Dropped { prop_assert!(arrival_dropped); }
                    if v == EnqueueVerdict::Success { prop_assert!(!arrival_dropped); }
                }
                Op::Dequeue => match q.dequeue(now, &mut drops) {
                    Some(skb) => {
                        deq += 1;
                        prop_assert!(held.remove(&skb.id).is_some());
                    }
                    None if q.qlen() > 0 => {
                        let w = q.next_wakeup();
                        prop_assert!(w.is_some_and(|w| w > now), "stalled at {} with {:?}", now, w);
                    }
                    None => prop_assert_eq!(q.next_wakeup(), None),
                },
                Op::Wait(ns) => now += ns,
                Op::Wake => if let Some(t) = q.next_wakeup() { now = now.max(t) },
            }
            common::take_dropped(&mut held, &drops)?;
            dropped += drops.len() as u64;
            prop_assert_eq!(dropped, q.stats().drops);
            prop_assert_eq!(enq, deq + dropped + q.qlen() as u64);
            prop_assert_eq!(q.qlen() as usize, held.len());
            prop_assert_eq!(q.backlog(), held.values().map(|s| s.len as u64).sum::<u64>());
            let cs = q.class_stats();
            prop_assert_eq!(q.qlen(), q.direct_qlen() + cs.iter().map(|c| c.qlen).sum::<u32>());
            let lends: u64 = cs.iter().map(|c| c.lends).sum();
            prop_assert_eq!(q.xstats()[1], ("lends", lends));
        }
        for _ in 0..200_000 {
            if q.qlen() == 0 { break; }
            drops.clear();
            match q.dequeue(now, &mut drops) {
                Some(skb) => prop_assert!(held.remove(&skb.id).is_some()),
                None => if q.qlen() > 0 {
                    let t = q.next_wakeup();
                    prop_assert!(t.is_some_and(|t| t > now), "stalled at {} with {:?}", now, t);
                    now = t.unwrap_or(now);
                },
            }
            common::take_dropped(&mut held, &drops)?;
        }
        prop_assert!(held.is_empty());
        prop_assert_eq!((q.qlen(), q.backlog()), (0, 0));
    }
}

/// `tc qdisc show` of htb as iproute2 prints the qdisc's own options (`default` with C's
/// `%#llx`, so 0 prints bare), counting packets sent through the direct queue.
#[test]
fn tc_layout() {
    let leaf = || class(&[("classid", s("1:10")), ("rate", s("10mbit"))]);
    assert_eq!(htb(&[], vec![leaf()]).tc_options(), "r2q 10 default 0 direct_packets_stat 0 direct_qlen 1000");
    let mut q = htb(&[("default", s("10")), ("r2q", int(5))], vec![leaf()]);
    assert_eq!(q.tc_options(), "r2q 5 default 0x10 direct_packets_stat 0 direct_qlen 1000");
    // A packet for no class goes to the direct queue when there is no default class.
    let mut d = htb(&[], vec![leaf()]);
    let mut drops = Vec::new();
    d.enqueue(Skb { id: 1, flow: 1, len: 1000, ..Skb::default() }, 0, &mut drops);
    assert!(d.tc_options().contains("direct_packets_stat 1 "), "{}", d.tc_options());
    q.enqueue(Skb { id: 2, flow: 1, len: 1000, ..Skb::default() }, 0, &mut drops);
    assert!(q.tc_options().contains("direct_packets_stat 0 "));
}

/// The leaves' own xstats come with htb's, as `tc -s qdisc show` dumps the leaves beside
/// the root and the backends sum a device's qdiscs: two fq_codel leaves, one with
/// `limit 2` that must drop from its fattest flow (`fq_codel_drop()`).
#[test]
fn leaf_xstats_summed_into_htbs() {
    let small = Params::from_pairs(&[("limit", int(2))]);
    let p = htb_params(
        &[],
        vec![
            class(&[
                ("classid", s("1:10")),
                ("rate", s("1mbit")),
                ("qdisc", s("fq_codel")),
                ("qdisc_params", ParamValue::Table(small)),
            ]),
            class(&[("classid", s("1:20")), ("rate", s("1mbit")), ("qdisc", s("fq_codel"))]),
        ],
    );
    let mut q = build("htb", p, &DevInfo::default()).unwrap();
    let mut drops = Vec::new();
    // 1:10: three flows into a limit of 2, so one packet goes; 1:20: two flows.
    for (i, (flow, class)) in [(1, C10), (2, C10), (3, C10), (4, C20), (5, C20)].into_iter().enumerate() {
        q.enqueue(Skb { flow, ..pkt(i as u32, 1000, class) }, 0, &mut drops);
    }
    assert_eq!(drops.len(), 1);
    let x = q.xstats();
    let all = |n: &str| x.iter().filter(|(k, _)| *k == n).map(|(_, v)| *v).collect::<Vec<_>>();
    // Each name once, with both leaves' counts: 1 + 0 drops, 3 + 2 new flows.
    assert_eq!(all("drop_overlimit"), [1]);
    assert_eq!(all("new_flow_count"), [5]);
    assert_eq!(all("new_flows_len"), [5]);
    // htb's own come first, unchanged (a leaf's drop of another flow's packet returns
    // NET_XMIT_SUCCESS, so the class counts it only if the arrival's own flow lost it).
    assert_eq!(all("class 1:10 dropped").len(), 1);
    assert_eq!(x[0], ("direct_packets_stat", 0));
}

/// `tc -s qdisc show` lists a leaf qdisc under each leaf class, in the order the classes
/// were made, with what its class sent (`bstats`: bytes, and a GSO skb's segments);
/// the inner class 1:1 has no leaf, and its `bstats` hold both leaves' packets.
#[test]
fn leaves_are_listed_with_their_classes_sent_counters() {
    let root = roomy("100mbit", &[]);
    let a = roomy("10mbit", &[]);
    let b = roomy("10mbit", &[]);
    let mut q = htb(&[], two_leaves(&root, &a, &b));
    let mut drops = Vec::new();
    q.enqueue(pkt(0, 1000, C10), 0, &mut drops);
    q.enqueue(Skb { gso_segs: 3, ..pkt(1, 4344, C20) }, 0, &mut drops);
    q.enqueue(pkt(2, 500, C20), 0, &mut drops);
    assert_eq!(drain_at(&mut q, 0).len(), 3);
    let leaves = q.tc_leaves();
    let got: Vec<(u32, &str, u64, u64)> = leaves.iter().map(|l| (l.classid, l.qdisc.kind(), l.bytes, l.packets)).collect();
    assert_eq!(got, [(C10, "pfifo", 1000, 1), (C20, "pfifo", 4844, 4)]);
    let inner = q.class(C1).expect("1:1");
    assert_eq!((inner.bytes, inner.packets), (5844, 5));
}
