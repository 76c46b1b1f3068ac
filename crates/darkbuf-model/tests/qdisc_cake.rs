//! cake (net/sched/sch_cake.c): shaper rate, DRR++ fairness, sparse-flow priority,
//! diffserv3 tins, the COBALT signalling schedule, fattest-flow overflow drops, and
//! packet conservation under random use.

use darkbuf_model::params::{ParamValue, Params};
use darkbuf_model::qdisc::cake::Cake;
use darkbuf_model::qdisc::{self, DevInfo, EnqueueVerdict, Qdisc};
use darkbuf_model::skb::truesize_for_len;
use darkbuf_model::Skb;
use proptest::prelude::*;
use std::collections::HashMap;

mod common;


fn s(v: &str) -> ParamValue {
    ParamValue::Str(v.into())
}

fn cake(kv: &[(&str, ParamValue)]) -> Cake {
    Cake::from_params(
        Params::from_pairs(kv),
        &DevInfo {
            hash_key: 0x1234_5678,
            ..DevInfo::default()
        },
    )
    .unwrap()
}

fn xstat(q: &dyn Qdisc, name: &str) -> u64 {
    q.xstats()
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no xstat {name}"))
        .1
}

fn pkt(id: u32, flow: u32, len: u32) -> Skb {
    Skb {
        id,
        flow,
        len,
        truesize: truesize_for_len(len),
        ..Skb::default()
    }
}

/// A constant-rate packet source.
#[derive(Clone, Copy)]
struct Source {
    flow: u32,
    dscp: u8,
    len: u32,
    /// Time between packets (ns).
    gap: u64,
}

/// Per-flow delivery totals inside the measurement window.
#[derive(Default, Debug)]
struct Delivered {
    bytes: HashMap<u32, u64>,
    pkts: HashMap<u32, u64>,
    /// Delivery times of all packets (whole run).
    times: Vec<u64>,
}

/// Drives `q` as the kernel would with an infinitely fast device: sources enqueue at
/// their times, the queue is run after every enqueue and whenever its watchdog
/// ([`Qdisc::next_wakeup`]) fires, until `end`. Counts what is dequeued in
/// `[from, end)`.
fn drive(q: &mut dyn Qdisc, sources: &[Source], from: u64, end: u64) -> Delivered {
    let mut next_arrival: Vec<u64> = vec![0; sources.len()];
    let mut out = Delivered::default();
    let mut drops = Vec::new();
    let mut id = 0u32;
    let mut now = 0u64;
    while now < end {
        for (i, src) in sources.iter().enumerate() {
            while next_arrival[i] <= now {
                let skb = Skb {
                    dscp: src.dscp,
                    ..pkt(id, src.flow, src.len)
                };
                id += 1;
                q.enqueue(skb, now, &mut drops);
                next_arrival[i] += src.gap;
            }
        }
        while let Some(skb) = q.dequeue(now, &mut drops) {
            out.times.push(now);
            if now >= from {
                *out.bytes.entry(skb.flow).or_default() += skb.len as u64;
                *out.pkts.entry(skb.flow).or_default() += 1;
            }
        }
        drops.clear();
        let mut next = *next_arrival.iter().min().unwrap_or(&end);
        if let Some(w) = q.next_wakeup() {
            assert!(w > now, "watchdog {w} not in the future of {now}");
            next = next.min(w);
        }
        now = next;
    }
    out
}

fn mbit(bytes: u64, ns: u64) -> f64 {
    bytes as f64 * 8.0 / (ns as f64 / 1e9) / 1e6
}

fn assert_close(got: f64, want: f64, rel: f64, what: &str) {
    assert!(
        ((got - want) / want).abs() <= rel,
        "{what}: got {got:.4}, want {want:.4} (±{:.1}%)",
        rel * 100.0
    );
}

#[test]
fn shaper_holds_20mbit_exactly() {
    let mut q = cake(&[("bandwidth", s("20mbit")), ("diffserv", s("besteffort"))]);
    // 1514 B every 500 µs = 24.2 Mbit/s offered.
    let src = [Source {
        flow: 1,
        dscp: 0,
        len: 1514,
        gap: 500_000,
    }];
    let d = drive(&mut q, &src, 0, 1_000_000_001);
    // 20 Mbit/s = 400 ns per byte: one 1514 B packet every 605.6 µs, from t = 0, every
    // one exactly on the global clock (COBALT drops do not advance it on egress).
    let n = d.times.len() as u64;
    assert_eq!(n, 1_000_000_000 / 605_600 + 1);
    for (k, &t) in d.times.iter().enumerate() {
        assert_eq!(t, k as u64 * 605_600);
    }
    // Long run: within 1% of 20 Mbit/s over 2 s after 0.1 s.
    let mut q = cake(&[("bandwidth", s("20mbit")), ("diffserv", s("besteffort"))]);
    let d = drive(&mut q, &src, 100_000_000, 2_100_000_000);
    assert_close(mbit(d.bytes[&1], 2_000_000_000), 20.0, 0.01, "shaped rate");
    assert!(q.stats().overlimits > 0);
    assert!(
        q.stats().drops > 0,
        "the 4.2 Mbit/s excess is dropped by COBALT/overflow"
    );
    assert_eq!(xstat(&q, "capacity_estimate"), 2_500_000);
}

#[test]
fn overhead_and_mpu_charge_the_shaper() {
    // overhead 38 (Ethernet preamble + IFG + FCS): 1514 - 14 + 38 = 1538 B charged.
    let mut q = cake(&[
        ("bandwidth", s("20mbit")),
        ("diffserv", s("besteffort")),
        ("overhead", ParamValue::Int(38)),
    ]);
    let src = [Source {
        flow: 1,
        dscp: 0,
        len: 1514,
        gap: 500_000,
    }];
    let d = drive(&mut q, &src, 0, 1_000_000_001);
    assert_eq!(d.times[1], 1538 * 400);
    assert_eq!(d.times.len() as u64, 1_000_000_000 / (1538 * 400) + 1);
    assert_eq!(xstat(&q, "max_adj_size"), 1538);
    assert_eq!(xstat(&q, "max_network_size"), 1500);
    assert_eq!(xstat(&q, "avg_hdr_offset"), 14);
    // mpu 200 with 100 B frames: each charged 200 B = 80 µs.
    let mut q = cake(&[
        ("bandwidth", s("20mbit")),
        ("diffserv", s("besteffort")),
        ("mpu", ParamValue::Int(200)),
    ]);
    let src = [Source {
        flow: 1,
        dscp: 0,
        len: 100,
        gap: 10_000,
    }];
    let d = drive(&mut q, &src, 0, 1_000_000);
    assert_eq!(&d.times[..4], &[0, 80_000, 160_000, 240_000]);
}

#[test]
fn watchdog_and_overlimits() {
    let mut q = cake(&[("bandwidth", s("10mbit")), ("diffserv", s("besteffort"))]);
    let mut drops = Vec::new();
    assert_eq!(
        q.enqueue(pkt(0, 1, 1000), 0, &mut drops),
        EnqueueVerdict::Success
    );
    assert_eq!(
        q.enqueue(pkt(1, 1, 1000), 0, &mut drops),
        EnqueueVerdict::Success
    );
    assert_eq!(q.dequeue(0, &mut drops).map(|p| p.id), Some(0));
    // 10 Mbit/s = 800 ns/byte: the next packet is due at 800 µs.
    assert_eq!(q.next_wakeup(), Some(800_000));
    assert!(q.dequeue(799_999, &mut drops).is_none());
    assert_eq!(q.stats().overlimits, 1);
    assert_eq!(q.next_wakeup(), Some(800_000));
    assert_eq!(q.dequeue(800_000, &mut drops).map(|p| p.id), Some(1));
    assert_eq!(q.next_wakeup(), None);
    // Enqueueing into the idle qdisc while the clock is still ahead arms the watchdog
    // and counts an overlimit, as cake_enqueue() does.
    q.enqueue(pkt(2, 1, 1000), 1_000_000, &mut drops);
    assert_eq!(q.stats().overlimits, 2);
    assert_eq!(q.next_wakeup(), Some(1_600_000));
    assert!(drops.is_empty());
}

/// Rates of `n` overloaded flows through a 20 Mbit/s cake.
fn share(n: u32, flow_mode: &str) -> Vec<f64> {
    let mut q = cake(&[
        ("bandwidth", s("20mbit")),
        ("diffserv", s("besteffort")),
        ("flow_mode", s(flow_mode)),
    ]);
    // Each flow offers 1514 B every 400 µs (30 Mbit/s).
    let srcs: Vec<Source> = (0..n)
        .map(|f| Source {
            flow: 100 + f,
            dscp: 0,
            len: 1514,
            gap: 400_000,
        })
        .collect();
    let d = drive(&mut q, &srcs, 500_000_000, 3_500_000_000);
    assert_eq!(xstat(&q, "bulk_flows"), n as u64);
    (0..n)
        .map(|f| mbit(d.bytes[&(100 + f)], 3_000_000_000))
        .collect()
}

#[test]
fn drr_shares_equally_between_2_and_4_bulk_flows() {
    for mode in ["flows", "triple-isolate"] {
        for n in [2u32, 4] {
            let rates = share(n, mode);
            let total: f64 = rates.iter().sum();
            assert_close(total, 20.0, 0.01, "total");
            for r in &rates {
                assert_close(*r, 20.0 / n as f64, 0.01, &format!("{mode}, {n} flows"));
            }
        }
    }
}

#[test]
fn sparse_flow_is_served_ahead_of_bulk_flows() {
    let mut q = cake(&[
        ("bandwidth", s("20mbit")),
        ("diffserv", s("besteffort")),
        ("flow_mode", s("flows")),
    ]);
    let mut drops = Vec::new();
    for i in 0..20 {
        q.enqueue(pkt(i, 1, 1514), 0, &mut drops);
        q.enqueue(pkt(100 + i, 2, 1514), 0, &mut drops);
    }
    // Both flows start sparse (new_flows); a flow turns bulk when it runs out of deficit.
    assert_eq!((xstat(&q, "sparse_flows"), xstat(&q, "bulk_flows")), (2, 0));
    let mut now = 0;
    let mut served = Vec::new();
    for _ in 0..6 {
        served.push(q.dequeue(now, &mut drops).unwrap().flow);
        now = q.next_wakeup().unwrap();
    }
    // DRR++: flow 1 (deficit 609 = 610 * 65535 >> 16) sends one 1514 B packet and goes
    // negative; so does flow 2; both move to old_flows with +610 per round.
    assert_eq!(served, vec![1, 2, 1, 2, 1, 2]);
    assert_eq!((xstat(&q, "sparse_flows"), xstat(&q, "bulk_flows")), (0, 2));
    // A new packet of a third flow goes to new_flows and is sent next.
    q.enqueue(pkt(999, 3, 100), now, &mut drops);
    assert_eq!((xstat(&q, "sparse_flows"), xstat(&q, "bulk_flows")), (1, 2));
    assert_eq!(q.dequeue(now, &mut drops).map(|p| p.id), Some(999));
    assert!(drops.is_empty());
}

#[test]
fn diffserv3_classifies_by_dscp() {
    let mut q = cake(&[("bandwidth", s("20mbit"))]);
    let mut drops = Vec::new();
    // (dscp, internal tin): BE 0, Bulk 1, Voice 2.
    let cases = [
        (0u8, 0),
        (10, 0),
        (18, 0),
        (34, 0),
        (40, 0),
        (8, 1),
        (1, 1),
        (4, 2),
        (44, 2),
        (46, 2),
        (48, 2),
        (56, 2),
    ];
    for (i, (dscp, _)) in cases.iter().enumerate() {
        q.enqueue(
            Skb {
                dscp: *dscp,
                ..pkt(i as u32, i as u32, 500)
            },
            0,
            &mut drops,
        );
    }
    // tc dumps diffserv3 tins as Bulk, Best Effort, Voice.
    let count = |tin| cases.iter().filter(|c| c.1 == tin).count() as u64;
    assert_eq!(xstat(&q, "tin0_sent_packets"), count(1));
    assert_eq!(xstat(&q, "tin1_sent_packets"), count(0));
    assert_eq!(xstat(&q, "tin2_sent_packets"), count(2));
    // Thresholds: 100%, 1/16 and 1/4 of 2.5 MB/s.
    assert_eq!(xstat(&q, "tin0_threshold_rate"), 156_250);
    assert_eq!(xstat(&q, "tin1_threshold_rate"), 2_500_000);
    assert_eq!(xstat(&q, "tin2_threshold_rate"), 625_000);
    assert_eq!(xstat(&q, "tin1_flow_quantum"), 610);
    assert_eq!(xstat(&q, "tin0_target_us"), 14_534);
    // besteffort puts everything in one tin.
    let mut q = cake(&[("diffserv", s("besteffort"))]);
    for (i, (dscp, _)) in cases.iter().enumerate() {
        q.enqueue(
            Skb {
                dscp: *dscp,
                ..pkt(i as u32, i as u32, 500)
            },
            0,
            &mut drops,
        );
    }
    assert_eq!(xstat(&q, "tin0_sent_packets"), cases.len() as u64);
    assert!(q.xstats().iter().all(|(n, _)| !n.starts_with("tin1_")));
}

#[test]
fn diffserv3_tins_get_their_threshold_under_load() {
    // Each tin is served first while it is within its threshold rate (its own clock
    // at or behind now), so a saturating Voice flow gets rate/4, a Bulk one rate/16.
    for (dscp, want) in [(46u8, 5.0), (8, 1.25)] {
        let mut q = cake(&[("bandwidth", s("20mbit"))]);
        let srcs = [
            Source {
                flow: 1,
                dscp: 0,
                len: 1514,
                gap: 400_000,
            },
            Source {
                flow: 2,
                dscp,
                len: 1514,
                gap: 400_000,
            },
        ];
        let d = drive(&mut q, &srcs, 500_000_000, 3_500_000_000);
        assert_close(
            mbit(d.bytes[&2], 3_000_000_000),
            want,
            0.01,
            &format!("dscp {dscp} tin"),
        );
        assert_close(
            mbit(d.bytes[&1], 3_000_000_000),
            20.0 - want,
            0.01,
            "best effort",
        );
    }
}

#[test]
fn unlimited_tins_share_by_drr_weight() {
    // Without a rate, tins take turns by deficit round robin with tin_quantum
    // 1024 (BE) : 64 (Bulk) : 256 (Voice). Keep every tin backlogged at time 0.
    let mut q = cake(&[]);
    let mut drops = Vec::new();
    let dscps = [0u8, 8, 46];
    let mut id = 0;
    for (f, &dscp) in dscps.iter().enumerate() {
        for _ in 0..50 {
            q.enqueue(
                Skb {
                    dscp,
                    truesize: 512,
                    ..pkt(id, f as u32, 1514)
                },
                0,
                &mut drops,
            );
            id += 1;
        }
    }
    let mut bytes = [0u64; 3];
    for _ in 0..60_000 {
        let p = q.dequeue(0, &mut drops).unwrap();
        bytes[p.flow as usize] += p.len as u64;
        q.enqueue(
            Skb {
                dscp: dscps[p.flow as usize],
                truesize: 512,
                ..pkt(id, p.flow, 1514)
            },
            0,
            &mut drops,
        );
        id += 1;
    }
    assert!(drops.is_empty());
    let total: u64 = bytes.iter().sum();
    for (i, w) in [1024.0, 64.0, 256.0].iter().enumerate() {
        assert_close(
            bytes[i] as f64 / total as f64,
            w / 1344.0,
            0.01,
            &format!("tin of dscp {}", dscps[i]),
        );
    }
}

/// Dequeues one packet every millisecond from a single flow whose packets were all
/// enqueued at 0 (so the sojourn time is `now`); returns the times of COBALT's drops
/// and of CE marks.
fn cobalt_episode(ecn: u8) -> (Vec<u64>, Vec<u64>, Cake) {
    let mut q = cake(&[("diffserv", s("besteffort")), ("flow_mode", s("flows"))]);
    let mut drops = Vec::new();
    for i in 0..400 {
        q.enqueue(
            Skb {
                ecn,
                ..pkt(i, 7, 1000)
            },
            0,
            &mut drops,
        );
    }
    let (mut dropped_at, mut marked_at) = (Vec::new(), Vec::new());
    for ms in 0..=280u64 {
        let now = ms * 1_000_000;
        drops.clear();
        let p = q.dequeue(now, &mut drops).unwrap();
        dropped_at.extend(drops.iter().map(|_| now));
        if p.ecn == Skb::ECN_CE {
            marked_at.push(now);
        }
    }
    (dropped_at, marked_at, q)
}

#[test]
fn cobalt_signals_on_codels_control_law() {
    // Target 5 ms, interval 100 ms, unshaped (mtu_time 0). Sojourn first exceeds 5 ms at
    // 6 ms: COBALT enters dropping with drop_next = 6 ms + interval * rec_inv_sqrt,
    // and rec_inv_sqrt of a fresh queue is 0 (kernel quirk), so the first signal is the
    // next packet (7 ms). Then drop_next advances from its previous value by
    // interval / sqrt(count) (reciprocal_scale with the Q0.32 inverse-sqrt table):
    //   count 2: +70.710678 ms -> 76.710678, signal at 77 ms
    //   count 3: +57.735026 ms -> 134.445704, at 135 ms
    //   count 4: +49.999999 ms -> 184.445703, at 185 ms
    //   count 5: +44.721359 ms -> 229.167062, at 230 ms
    //   count 6: +40.824829 ms -> 269.991891, at 270 ms
    let want: Vec<u64> = [7u64, 77, 135, 185, 230, 270]
        .iter()
        .map(|ms| ms * 1_000_000)
        .collect();
    let (dropped, marked, q) = cobalt_episode(Skb::ECN_NOT_ECT);
    assert_eq!(dropped, want);
    assert!(marked.is_empty());
    assert_eq!(q.stats().drops, 6);
    assert_eq!(xstat(&q, "drops"), 6);
    // ECN-capable packets are marked on the same schedule instead of dropped.
    let (dropped, marked, q) = cobalt_episode(Skb::ECN_ECT0);
    assert!(dropped.is_empty());
    assert_eq!(marked, want);
    assert_eq!(xstat(&q, "ecn_mark"), 6);
    assert_eq!(q.stats().drops, 0);
}

#[test]
fn cobalt_waits_a_full_interval_once_count_has_decayed() {
    // Once `count` has decayed to 0 through cobalt_invsqrt(), rec_inv_sqrt is
    // inv_sqrt_cache[0] (~1.0), so a later episode's first signal comes a whole
    // interval after the sojourn time exceeds target, as in CoDel.
    let mut q = cake(&[("diffserv", s("besteffort")), ("flow_mode", s("flows"))]);
    let mut drops = Vec::new();
    let mut id = 0;
    let mut enq = |q: &mut Cake, n: u32, t: u64, drops: &mut Vec<u32>| {
        for _ in 0..n {
            q.enqueue(pkt(id, 7, 1000), t, drops);
            id += 1;
        }
    };
    // Episode 1: as in cobalt_signals_on_codels_control_law, first drop at 7 ms
    // (count 2, drop_next 76.710678 ms).
    enq(&mut q, 10, 0, &mut drops);
    for ms in 0..8u64 {
        q.dequeue(ms * 1_000_000, &mut drops);
    }
    assert_eq!(drops.len(), 1);
    while q.dequeue(8_000_000, &mut drops).is_some() {}
    drops.clear();
    // An empty qdisc is never serviced (cake_dequeue() returns at once when qlen is 0),
    // so the state waits for the next packet. Episode 2 starts at 20 s: the first
    // dequeue finds drop_next long past while not dropping and the `while (next_due)`
    // loop decays count 2 -> 1 -> 0 through the table (rec_inv_sqrt = ~0). Sojourn
    // exceeds target from 20.006 s; drop_next = that + reciprocal_scale(100 ms, ~0)
    // = +99.999999 ms, so the first drop is at the first 1 ms tick after
    // 20.105999999 s.
    let t0 = 20_000_000_000u64;
    enq(&mut q, 200, t0, &mut drops);
    let mut first_drop = None;
    for ms in 0..150u64 {
        let now = t0 + ms * 1_000_000;
        q.dequeue(now, &mut drops);
        if !drops.is_empty() && first_drop.is_none() {
            first_drop = Some(now);
        }
    }
    assert_eq!(first_drop, Some(t0 + 106_000_000));
}

#[test]
fn overflow_drops_the_head_of_the_fattest_flow() {
    // memlimit of 10 packets' truesize; truesize 2048 each.
    let mut q = cake(&[
        ("diffserv", s("besteffort")),
        ("flow_mode", s("flows")),
        ("memlimit", ParamValue::Int(10 * 2048)),
    ]);
    let mut drops = Vec::new();
    let p = |id: u32, flow: u32| Skb {
        truesize: 2048,
        ..pkt(id, flow, 1000)
    };
    for i in 0..6 {
        assert_eq!(q.enqueue(p(i, 1), 0, &mut drops), EnqueueVerdict::Success);
    }
    for i in 0..4 {
        assert_eq!(
            q.enqueue(p(10 + i, 2), 0, &mut drops),
            EnqueueVerdict::Success
        );
    }
    assert!(drops.is_empty());
    assert_eq!(xstat(&q, "memory_limit"), 20480);
    // The 11th packet (flow 2) overflows: flow 1 holds 6000 B, flow 2 5000 B; the head
    // of flow 1 goes, and the arriving packet's own queue was not hit.
    assert_eq!(
        q.enqueue(p(14, 2), 1000, &mut drops),
        EnqueueVerdict::Success
    );
    assert_eq!(drops.clone(), vec![0]);
    // Now 5000 vs 5000 B; a packet of flow 1 makes it the fattest again: its own head is
    // dropped and enqueue reports congestion (NET_XMIT_CN).
    drops.clear();
    assert_eq!(
        q.enqueue(p(6, 1), 2000, &mut drops),
        EnqueueVerdict::Congested
    );
    assert_eq!(drops.clone(), vec![1]);
    assert_eq!(q.stats().drops, 2);
    assert_eq!(xstat(&q, "drop_overlimit"), 2);
    // BLUE: the first overflow of flow 1 raised its p_drop (quiescent -> active);
    // the second, within `target`, did not raise it again.
    assert_eq!(xstat(&q, "unresponsive_flows"), 1);
    assert_eq!((q.qlen(), q.backlog()), (10, 10_000));
    assert_eq!(xstat(&q, "memory_used"), 11 * 2048);

    // Three flows of 3, 7 and 5 packets: the 7-packet flow loses its head.
    let mut q = cake(&[
        ("diffserv", s("besteffort")),
        ("flow_mode", s("flows")),
        ("memlimit", ParamValue::Int(15 * 2048)),
    ]);
    let mut id = 0;
    for (flow, n) in [(1u32, 3), (2, 7), (3, 5)] {
        for _ in 0..n {
            q.enqueue(p(id, flow), 0, &mut drops);
            id += 1;
        }
    }
    drops.clear();
    assert_eq!(q.enqueue(p(id, 1), 0, &mut drops), EnqueueVerdict::Success);
    assert_eq!(drops.len(), 1);
    // Packet 3, the head of flow 2 (the fattest).
    assert_eq!(drops, vec![3]);
}

#[test]
fn default_memlimit_bounds_truesize() {
    // 20 Mbit/s: memlimit = max(4 * 2.5 MB/s * 100 ms, 4 MiB) = 4 MiB of truesize.
    let mut q = cake(&[("bandwidth", s("20mbit"))]);
    let mut drops = Vec::new();
    let ts = truesize_for_len(1514) as u64;
    let fit = (4u64 << 20) / ts;
    for i in 0..fit as u32 {
        q.enqueue(pkt(i, i % 5, 1514), 0, &mut drops);
    }
    assert!(drops.is_empty());
    q.enqueue(pkt(fit as u32, 0, 1514), 0, &mut drops);
    assert_eq!(drops.len(), 1);
    assert_eq!(xstat(&q, "memory_limit"), 4 << 20);
}

#[test]
fn build_through_the_qdisc_registry() {
    let dev = DevInfo::default();
    let q = qdisc::build(
        "cake",
        Params::from_pairs(&[("bandwidth", s("unlimited")), ("rtt", s("internet"))]),
        &dev,
    )
    .unwrap();
    assert_eq!(q.kind(), "cake");
    assert!(qdisc::build("cake", Params::from_pairs(&[("bogus", ParamValue::Int(1))]), &dev).is_err());
}

// ---------------------------------------------------------------------------------
// Conservation property test.

fn cake_params() -> impl Strategy<Value = Params> {
    (
        prop::option::of(prop_oneof![
            Just("unlimited".to_string()),
            (1u64..2000).prop_map(|m| format!("{m}mbit")),
            (8u64..100_000).prop_map(|k| format!("{k}kbit")),
        ]),
        prop::option::of(prop::sample::select(vec![
            "diffserv3",
            "besteffort",
            "diffserv4",
            "diffserv8",
            "precedence",
        ])),
        prop::option::of(prop::sample::select(vec![
            "triple-isolate",
            "flowblind",
            "srchost",
            "dsthost",
            "hosts",
            "flows",
            "dual-srchost",
            "dual-dsthost",
        ])),
        prop::option::of(prop_oneof![
            (0u64..500).prop_map(|ms| format!("{ms}ms")),
            prop::sample::select(vec!["lan", "datacentre", "interplanetary"])
                .prop_map(String::from),
        ]),
        prop::option::of(-64i64..=256),
        prop::option::of(0i64..=256),
        prop::option::of(prop::sample::select(vec!["noatm", "atm", "ptm"])),
        prop::option::of(0i64..200_000),
        (
            prop::option::of(any::<bool>()),
            prop::option::of(any::<bool>()),
        ),
    )
        .prop_map(|(bw, ds, fm, rtt, oh, mpu, atm, mem, (wash, ingress))| {
            let mut kv: Vec<(&str, ParamValue)> = Vec::new();
            if let Some(v) = bw {
                kv.push(("bandwidth", ParamValue::Str(v)));
            }
            if let Some(v) = ds {
                kv.push(("diffserv", s(v)));
            }
            if let Some(v) = fm {
                kv.push(("flow_mode", s(v)));
            }
            if let Some(v) = rtt {
                kv.push(("rtt", ParamValue::Str(v)));
            }
            if let Some(v) = oh {
                kv.push(("overhead", ParamValue::Int(v)));
            }
            if let Some(v) = mpu {
                kv.push(("mpu", ParamValue::Int(v)));
            }
            if let Some(v) = atm {
                kv.push(("atm", s(v)));
            }
            if let Some(v) = mem {
                kv.push(("memlimit", ParamValue::Int(v)));
            }
            if let Some(v) = wash {
                kv.push(("wash", ParamValue::Bool(v)));
            }
            if let Some(v) = ingress {
                kv.push(("ingress", ParamValue::Bool(v)));
            }
            Params::from_pairs(&kv)
        })
}

#[derive(Clone, Debug)]
enum Op {
    Enqueue {
        flow: u32,
        len: u32,
        dscp: u8,
        ecn: u8,
        truesize: u32,
    },
    Dequeue,
    Wait(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0u32..40, prop_oneof![Just(64u32), Just(1514), 1u32..9000], 0u8..64, 0u8..4,
              prop_oneof![Just(0u32), 1u32..5000, Just(2304)])
            .prop_map(|(flow, len, dscp, ecn, truesize)| Op::Enqueue { flow, len, dscp, ecn, truesize }),
        4 => Just(Op::Dequeue),
        2 => prop_oneof![0u64..2_000_000, 0u64..300_000_000].prop_map(Op::Wait),
    ]
}

fn take_held(held: &mut HashMap<u32, Skb>, skb: &Skb) -> Result<(), TestCaseError> {
    match held.remove(&skb.id) {
        Some(orig) => {
            prop_assert_eq!((orig.len, orig.flow), (skb.len, skb.flow));
            Ok(())
        }
        None => Err(TestCaseError::fail(format!(
            "packet {} left twice or was never in",
            skb.id
        ))),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn cake_conserves_packets(
        p in cake_params(),
        hash_key in any::<u32>(),
        mtu_l2 in prop_oneof![Just(1514u32), 68u32..70_000],
        ops in prop::collection::vec(op(), 1..700),
    ) {
        let dev = DevInfo { tx_queue_len: 1000, mtu_l2, hash_key, hz: 250 };
        let mut q = Cake::from_params(p, &dev).unwrap();
        let mut held: HashMap<u32, Skb> = HashMap::new();
        let (mut enqueued, mut dequeued, mut dropped) = (0u64, 0u64, 0u64);
        let mut drops = Vec::new();
        let mut now = 0u64;
        let mut id = 0u32;
        let check = |q: &Cake, held: &HashMap<u32, Skb>, e: u64, d: u64, x: u64| -> Result<(), TestCaseError> {
            prop_assert_eq!(e, d + x + q.qlen() as u64);
            prop_assert_eq!(q.qlen() as usize, held.len());
            prop_assert_eq!(q.backlog(), held.values().map(|s| s.len as u64).sum::<u64>());
            prop_assert_eq!(q.buffer_used(), held.values().map(|s| s.truesize as u64).sum::<u64>());
            prop_assert_eq!(q.stats().drops, x);
            Ok(())
        };
        for op in ops {
            drops.clear();
            match op {
                Op::Enqueue { flow, len, dscp, ecn, truesize } => {
                    let skb = Skb { id, flow, len, dscp, ecn, truesize, ..Skb::default() };
                    id += 1;
                    enqueued += 1;
                    held.insert(skb.id, skb);
                    let verdict = q.enqueue(skb, now, &mut drops);
                    let arrival_dropped = drops.contains(&skb.id);
                    match verdict {
                        EnqueueVerdict::Success => prop_assert!(!arrival_dropped),
                        EnqueueVerdict::Dropped => prop_assert!(arrival_dropped),
                        EnqueueVerdict::Congested => prop_assert!(!drops.is_empty()),
                    }
                    prop_assert!(q.buffer_used() <= q.buffer_limit() || q.qlen() == 0);
                }
                Op::Dequeue => {
                    match q.dequeue(now, &mut drops) {
                        Some(skb) => { dequeued += 1; take_held(&mut held, &skb)?; }
                        None => if q.qlen() > 0 {
                            // Only the shaper holds packets back, and it arms the watchdog.
                            let w = q.next_wakeup();
                            prop_assert!(w.is_some_and(|w| w > now), "None with qlen {} and wakeup {:?} at {}", q.qlen(), w, now);
                        },
                    }
                }
                Op::Wait(ns) => now += ns,
            }
            common::take_dropped(&mut held, &drops)?;
            dropped += drops.len() as u64;
            check(&q, &held, enqueued, dequeued, dropped)?;
        }
        // Drain, following the watchdog.
        let mut guard = 0;
        while q.qlen() > 0 {
            guard += 1;
            prop_assert!(guard < 1_000_000, "drain does not terminate");
            drops.clear();
            match q.dequeue(now, &mut drops) {
                Some(skb) => { dequeued += 1; take_held(&mut held, &skb)?; }
                None => {
                    if q.qlen() > 0 {
                        let w = q.next_wakeup();
                        prop_assert!(w.is_some_and(|w| w > now));
                        now = w.unwrap_or(now);
                    }
                }
            }
            common::take_dropped(&mut held, &drops)?;
            dropped += drops.len() as u64;
            check(&q, &held, enqueued, dequeued, dropped)?;
        }
        prop_assert!(held.is_empty());
        prop_assert_eq!((q.qlen(), q.backlog(), q.buffer_used()), (0, 0, 0));
        prop_assert_eq!(q.next_wakeup(), None);
    }
}

/// `tc qdisc show` of cake reads as iproute2's `cake_print_opt()` prints the kernel's
/// `cake_dump()`: every option, `raw` while no overhead is set, `noatm` only then.
#[test]
fn tc_option_line() {
    assert_eq!(
        cake(&[]).tc_options(),
        "bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead 0"
    );
    let q = cake(&[
        ("bandwidth", s("100mbit")),
        ("diffserv", s("diffserv4")),
        ("flow_mode", s("dual-dsthost")),
        ("overhead", ParamValue::Int(18)),
        ("mpu", ParamValue::Int(64)),
        ("wash", ParamValue::Bool(true)),
        ("ingress", ParamValue::Bool(true)),
        ("split_gso", ParamValue::Bool(false)),
        ("rtt", s("20ms")),
    ]);
    assert_eq!(
        q.tc_options(),
        "bandwidth 100Mbit diffserv4 dual-dsthost nonat wash ingress no-ack-filter no-split-gso rtt 20ms noatm overhead 18 mpu 64"
    );
    assert!(cake(&[("atm", s("atm")), ("overhead", ParamValue::Int(44))]).tc_options().ends_with("rtt 100ms atm overhead 44"));
}

/// `tc -s` of cake at 100 Mbit/s, diffserv3, as `cake_dump_stats()` and iproute2 give it:
/// - memory limit: rate x rtt / 4 = 12.5 MB/s x 100 ms / 4 = 5000000 bytes (above the
///   4 MiB floor; `sprint_size()` prints it in bytes, not a whole Kb or Mb);
/// - capacity estimate: the configured rate until traffic is seen;
/// - sizes: `~0` in the kernel's u16 minimum and 0 as the maximum, before any packet;
/// - tins in `tin_order` (Bulk, Best Effort, Voice) at rate / 16, rate and rate / 4
///   (`sprint_rate()`: 6.25 Mbit/s is `6250Kbit`), flow quantum rate >> 12 clamped
///   to 300..1514;
/// - one column per tin, 12 characters wide, `Tin N` headers for besteffort.
#[test]
fn tc_xstats_table() {
    let x = cake(&[("bandwidth", s("100mbit"))]).tc_xstats();
    let lines: Vec<&str> = x.lines().collect();
    assert_eq!(lines[0], " memory used: 0b of 5000000b");
    assert_eq!(lines[1], " capacity estimate: 100Mbit");
    assert_eq!(lines[2], " min/max network layer size:        65535 /       0");
    assert_eq!(lines[3], " min/max overhead-adjusted size:    65535 /       0");
    assert_eq!(lines[4], " average network hdr offset:            0");
    assert_eq!(lines[5], "");
    assert_eq!(lines[6], "                   Bulk  Best Effort        Voice");
    assert_eq!(lines[7], "  thresh       6250Kbit      100Mbit       25Mbit");
    assert_eq!(lines[8], "  target            5ms          5ms          5ms");
    assert_eq!(lines[9], "  interval        100ms        100ms        100ms");
    assert_eq!(lines[13], "  backlog            0b           0b           0b");
    assert_eq!(lines.len(), 7 + 20);
    assert_eq!(lines[26], "  quantum           300         1514          762");

    let mut q = cake(&[("diffserv", s("besteffort"))]);
    let mut drops = Vec::new();
    q.enqueue(pkt(1, 1, 1000), 0, &mut drops);
    assert!(q.dequeue(1_000, &mut drops).is_some());
    let x = q.tc_xstats();
    let lines: Vec<&str> = x.lines().collect();
    assert_eq!(lines[6], "                  Tin 0");
    assert_eq!(lines[14], "  pkts                1");
    assert_eq!(lines[15], "  bytes            1000");
    assert_eq!(lines.len(), 7 + 20);
}

/// split-gso (`cake_init()`'s default): a GSO skb is not queued as one packet; its
/// length goes into `max_skblen` and the skb to the stack to be cut
/// (`StackOp::GsoSegment`), whose segments then queue one by one. With
/// `no-split-gso` it queues whole.
#[test]
fn split_gso_hands_a_gso_skb_to_the_stack_and_queues_its_segments() {
    use darkbuf_model::qdisc::StackOp;
    let gso = Skb { gso_segs: 3, ..pkt(7, 1, 3 * 1514) };
    let mut q = cake(&[("bandwidth", s("20mbit"))]);
    assert!(q.has_stack_ops());
    let mut drops = Vec::new();
    assert_eq!(q.enqueue(gso, 0, &mut drops), EnqueueVerdict::Success);
    assert_eq!((q.qlen(), q.backlog(), drops.len()), (0, 0, 0));
    let mut ops = Vec::new();
    q.take_stack_ops(&mut ops);
    assert_eq!(ops, [StackOp::GsoSegment(gso)]);
    for i in 0..3 {
        assert_eq!(q.enqueue(pkt(7 + i * 100, 1, 1514), 0, &mut drops), EnqueueVerdict::Success);
    }
    q.take_stack_ops(&mut ops);
    assert_eq!(ops.len(), 1, "segments are not cut again");
    assert_eq!((q.qlen(), q.backlog()), (3, 3 * 1514));
    assert_eq!(xstat(&q, "tin1_max_pkt_len"), 3 * 1514, "max_skblen is the GSO skb's length");
    assert_eq!(xstat(&q, "max_network_size"), 1514, "cake_calc_overhead() saw the segments, not the GSO skb");

    let mut whole = cake(&[("bandwidth", s("20mbit")), ("split_gso", ParamValue::Bool(false))]);
    assert!(!whole.has_stack_ops());
    assert_eq!(whole.enqueue(gso, 0, &mut drops), EnqueueVerdict::Success);
    assert_eq!((whole.qlen(), whole.backlog()), (1, 3 * 1514));
}
