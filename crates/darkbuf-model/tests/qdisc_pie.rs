//! pie and fq_pie against values worked out from sch_pie.c / sch_fq_pie.c (6.18): the
//! controller's update in the kernel's fixed point, the timer's schedule on the timer
//! wheel, the burst allowance, the drain-rate estimator, fq_pie's per-flow state and
//! its counters.

use darkbuf_model::params::{ParamValue, Params};
use darkbuf_model::qdisc::fq_pie::FqPie;
use darkbuf_model::qdisc::pie::{
    pie_calculate_probability, pie_drop_early, pie_process_dequeue, Pie, PieParams, PieVars, MAX_PROB,
};
use darkbuf_model::qdisc::{build, DevInfo, EnqueueVerdict, Qdisc};
use darkbuf_model::Skb;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

const MS: u64 = 1_000_000;
/// 1 ms in psched ticks (64 ns): 15625 exactly.
const TICKS_PER_MS: u64 = 15_625;

fn dev(hz: u32) -> DevInfo {
    DevInfo { hz, ..DevInfo::default() }
}

fn pie(kv: &[(&str, ParamValue)], hz: u32) -> Pie {
    Pie::from_params(Params::from_pairs(kv), &dev(hz)).unwrap()
}

fn skb(id: u32, flow: u32, len: u32) -> Skb {
    Skb { id, flow, len, truesize: len + 512, ..Skb::default() }
}

fn str(s: &str) -> ParamValue {
    ParamValue::Str(s.into())
}

/// The first updates of a controller that sees a 30 ms delay from a probability of 0:
/// alpha = 2/16 and beta = 20/16 in units of `MAX_PROB / PSCHED_TICKS_PER_SEC`
/// (576,460,752 and 5,764,607,522), halved below 10% and quartered for each decade
/// below 1%: at a probability under 1e-6 both are 1/2048 of that (281,474 and
/// 2,814,749). The first update adds 281,474 x (468,750 - 234,375) + 2,814,749 x
/// 468,750; later ones, with the delay steady, the alpha term alone.
const STEADY_30MS: [u64; 3] = [1_385_384_062_500, 2_440_915_078_125, 3_496_446_093_750];

#[test]
fn controller_update_in_the_kernels_fixed_point() {
    let p = PieParams::init(250);
    assert_eq!(p.target, 15 * TICKS_PER_MS);
    let mut v = PieVars { qdelay: 30 * TICKS_PER_MS, ..PieVars::default() };
    for want in STEADY_30MS {
        pie_calculate_probability(&p, &mut v, 100 * 1514);
        assert_eq!(v.prob, want);
    }
    assert_eq!((v.qdelay, v.qdelay_old), (30 * TICKS_PER_MS, 30 * TICKS_PER_MS));

    // Above 250 ms the update adds 2% on top ("non-linear drop"): 1,455,599,455,602,308
    // from 0, then the scaling changes as the probability crosses 1% and 10%.
    let mut v = PieVars { qdelay: 300 * TICKS_PER_MS, ..PieVars::default() };
    let mut seen = Vec::new();
    for _ in 0..3 {
        pie_calculate_probability(&p, &mut v, 1000);
        seen.push(v.prob);
    }
    assert_eq!(seen, [1_455_599_455_602_308, 4_180_277_229_485_866, 6_904_955_003_369_424]);

    // No delay for two updates in a row: the probability falls to 63/64 of itself
    // after the alpha term (unscaled at 50%): 35,332,850,139,116,874.
    let mut v = PieVars { prob: MAX_PROB / 2, ..PieVars::default() };
    pie_calculate_probability(&p, &mut v, 0);
    assert_eq!(v.prob, 35_332_850_139_116_874);
}

/// fq_pie's timer skips empty flows in their initial state: the update must leave
/// such a flow exactly as it is, with and without the rate estimator.
#[test]
fn an_idle_flow_is_a_fixed_point_of_the_update() {
    for est in [false, true] {
        let p = PieParams { dq_rate_estimator: est, ..PieParams::init(250) };
        let mut v = PieVars::default();
        pie_calculate_probability(&p, &mut v, 0);
        assert_eq!(v, PieVars::default());
    }
}

#[test]
fn probability_saturates_and_resets_the_cycle_when_idle() {
    let p = PieParams::init(250);
    // Near 100% with the delay above 250 ms the probability goes past MAX_PROB: the
    // kernel clamps only when the u64 sum wraps ("prevent overflow").
    let mut v = PieVars { prob: MAX_PROB - 1, qdelay: 400 * TICKS_PER_MS, ..PieVars::default() };
    pie_calculate_probability(&p, &mut v, 1000);
    assert_eq!(v.prob, 74_939_897_799_445_050);
    let mut v = PieVars { prob: u64::MAX - 5, qdelay: 400 * TICKS_PER_MS, ..PieVars::default() };
    pie_calculate_probability(&p, &mut v, 1000);
    assert_eq!(v.prob, MAX_PROB);
    // Falling below 0 clamps to 0; with both delays under target/2 the measurement
    // cycle restarts (pie_vars_init(): burst allowance back to 150 ms).
    let mut v = PieVars { prob: 10, burst_time: 0, accu_prob: 7, ..PieVars::default() };
    pie_calculate_probability(&p, &mut v, 0);
    assert_eq!(v.prob, 0);
    assert_eq!((v.burst_time, v.accu_prob), (150 * TICKS_PER_MS, 0));
}

#[test]
fn early_drop_needs_delay_backlog_and_accumulated_probability() {
    let p = PieParams::init(250);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let busy = PieVars { burst_time: 0, qdelay: 20 * TICKS_PER_MS, prob: MAX_PROB / 10, ..PieVars::default() };
    // Burst allowance left: never.
    let mut v = PieVars { burst_time: 1, ..busy };
    assert!(!pie_drop_early(&p, &mut v, 100_000, 1514, 1514, &mut rng));
    // Under two MTUs queued: never.
    let mut v = busy;
    assert!(!pie_drop_early(&p, &mut v, 2 * 1514 - 1, 1514, 1514, &mut rng));
    // Delay under target/2 and probability under 20%: never.
    let mut v = PieVars { qdelay: 7 * TICKS_PER_MS, ..busy };
    assert!(!pie_drop_early(&p, &mut v, 100_000, 1514, 1514, &mut rng));
    // At 10%, the first eight arrivals accumulate 0.8 < 0.85: no drop, whatever the
    // random draws (de-randomisation).
    let mut v = busy;
    for _ in 0..8 {
        assert!(!pie_drop_early(&p, &mut v, 100_000, 1514, 1514, &mut rng));
    }
    assert_eq!(v.accu_prob, 8 * (MAX_PROB / 10));
    // From 8.5 accumulated: a drop without a draw.
    let mut v = PieVars { accu_prob: (MAX_PROB / 2) * 17, ..busy };
    assert!(pie_drop_early(&p, &mut v, 100_000, 1514, 1514, &mut rng));
    // At 100%, the draw always drops, and the accumulator restarts.
    let mut v = PieVars { prob: MAX_PROB, ..busy };
    assert!(pie_drop_early(&p, &mut v, 100_000, 1514, 1514, &mut rng));
    assert_eq!(v.accu_prob, 0);
    // bytemode: a 100-byte packet counts 100/1514 of the probability.
    let pb = PieParams { bytemode: true, ..p };
    let mut v = busy;
    pie_drop_early(&pb, &mut v, 100_000, 100, 1514, &mut rng);
    assert_eq!(v.accu_prob, 100 * ((MAX_PROB / 10) / 1514));
}

#[test]
fn burst_allowance_drains_with_time_between_dequeues() {
    let p = PieParams::init(250);
    let mut v = PieVars::default();
    // One dequeue a millisecond, the first only starts the clock.
    for k in 0..11u64 {
        pie_process_dequeue(1514, 0, &p, &mut v, 10_000, k * TICKS_PER_MS);
    }
    assert_eq!(v.burst_time, 150 * TICKS_PER_MS - 10 * TICKS_PER_MS);
    // The delay is the packet's sojourn while packets remain, else 0.
    assert_eq!(v.qdelay, 10 * TICKS_PER_MS);
    pie_process_dequeue(1514, 0, &p, &mut v, 0, 11 * TICKS_PER_MS);
    assert_eq!(v.qdelay, 0);
}

#[test]
fn drain_rate_estimator_measures_16_kib_at_a_time() {
    // 20 packets of 1000 bytes, one dequeued every 8 µs (125 bytes/µs). The cycle
    // starts at the first dequeue (backlog 19,000 >= 16,384; tick 125) and counts
    // that packet too: 17,000 bytes at the 17th (t = 136 µs, tick 2125), so
    // count = (17,000 << 8) / 2000 = 2176. The backlog is then 3000: the cycle ends.
    let mut q = pie(&[("dq_rate_estimator", ParamValue::Bool(true))], 250);
    let mut drops = Vec::new();
    for i in 0..20 {
        assert_eq!(q.enqueue(skb(i, 1, 1000), 0, &mut drops), EnqueueVerdict::Success);
    }
    for k in 1..=17u64 {
        q.dequeue(k * 8_000, &mut drops).unwrap();
    }
    assert_eq!(q.vars().avg_dq_rate, 2176);
    let x: std::collections::HashMap<_, _> = q.xstats().into_iter().collect();
    // 2176 x 15,625,000 >> 8 bytes/s (17,000 bytes over 2000 ticks of 64 ns).
    assert_eq!(x["avg_dq_rate"], 132_812_500);
    assert!(q.tc_xstats().contains(" avg_dq_rate 132812500"), "{}", q.tc_xstats());
    // The controller's delay by Little's law: (3000 << 8) / 2176 = 352 ticks. That is
    // under target/2 with the probability 0, so the cycle restarts and the rate is
    // forgotten (pie_vars_init()).
    q.run_timers(512 * MS);
    assert_eq!(q.vars().qdelay, 352);
    assert_eq!(q.vars().avg_dq_rate, 0);
}

/// A pie qdisc with 100 packets queued at time 0 and one dequeued at 30 ms: the
/// controller sees a 30 ms delay from its first run on.
fn standing_queue(hz: u32) -> Pie {
    let mut q = pie(&[], hz);
    let mut drops = Vec::new();
    for i in 0..100 {
        assert_eq!(q.enqueue(skb(i, 1, 1514), 0, &mut drops), EnqueueVerdict::Success);
    }
    q.dequeue(30 * MS, &mut drops).unwrap();
    assert_eq!(q.vars().qdelay, 30 * TICKS_PER_MS);
    q
}

#[test]
fn timer_runs_on_the_wheels_ticks() {
    // HZ 250: armed for HZ/2 = 125 jiffies at init, rounded up to level 1's 8-jiffy
    // granularity: jiffy 128, 512 ms. Then tupdate = usecs_to_jiffies(15 ms) = 4
    // jiffies, one more at level 0: every 5 jiffies, 20 ms.
    let mut q = standing_queue(250);
    let at = |q: &mut Pie, ms_ns: u64| {
        q.run_timers(ms_ns);
        q.vars().prob
    };
    assert_eq!(at(&mut q, 512 * MS - 1), 0);
    assert_eq!(at(&mut q, 512 * MS), STEADY_30MS[0]);
    assert_eq!(at(&mut q, 532 * MS - 1), STEADY_30MS[0]);
    assert_eq!(at(&mut q, 532 * MS), STEADY_30MS[1]);
    // Runs due while nobody touched the qdisc all happen, in order.
    assert_eq!(at(&mut q, 552 * MS), STEADY_30MS[2]);

    // HZ 1000: 500 jiffies round up to 504; 15 jiffies + 1: every 16 ms.
    let mut q = standing_queue(1000);
    assert_eq!(at(&mut q, 504 * MS - 1), 0);
    assert_eq!(at(&mut q, 504 * MS), STEADY_30MS[0]);
    assert_eq!(at(&mut q, 520 * MS - 1), STEADY_30MS[0]);
    assert_eq!(at(&mut q, 520 * MS), STEADY_30MS[1]);
    // An enqueue runs the due timers first, as the softirq would have.
    let mut drops = Vec::new();
    q.enqueue(skb(1000, 1, 1514), 536 * MS, &mut drops);
    assert_eq!(q.vars().prob, STEADY_30MS[2]);
}

#[test]
fn pie_limit_counters_and_tc_lines() {
    let mut q = pie(&[("limit", ParamValue::Int(3))], 250);
    let mut drops = Vec::new();
    for i in 0..3 {
        assert_eq!(q.enqueue(skb(i, 1, 1000), 0, &mut drops), EnqueueVerdict::Success);
    }
    assert_eq!(q.enqueue(skb(3, 1, 1000), 0, &mut drops), EnqueueVerdict::Dropped);
    assert_eq!(drops, [3]);
    let s = q.pie_stats();
    assert_eq!((s.packets_in, s.overlimit, s.dropped, s.maxq), (3, 1, 1, 2));
    assert_eq!(q.stats().drops, 1);
    assert_eq!(q.stats().overlimits, 0);
    assert_eq!((q.qlen(), q.backlog()), (3, 3000));
    // HZ 250 reports tupdate as jiffies_to_usecs(4) = 16 ms.
    assert_eq!(q.tc_options(), "limit 3p target 15ms tupdate 16ms alpha 2 beta 20");
    assert_eq!(
        q.tc_xstats(),
        "  prob 0 delay 0us\n  pkts_in 3 overlimit 1 dropped 1 maxq 2 ecn_mark 0"
    );
    let q = pie(
        &[("target", str("5ms")), ("tupdate", str("30ms")), ("alpha", ParamValue::Int(4)), ("ecn", ParamValue::Bool(true))],
        1000,
    );
    assert_eq!(q.tc_options(), "limit 1000p target 5ms tupdate 30ms alpha 4 beta 20 ecn");
    assert_eq!(q.params().tupdate, 30);
}

#[test]
fn parameters_are_checked_as_tc_and_the_kernel_check_them() {
    let bad = |kind: &str, kv: &[(&str, ParamValue)]| build(kind, Params::from_pairs(kv), &dev(250)).is_err();
    assert!(bad("pie", &[("alpha", ParamValue::Int(33))]));
    assert!(bad("pie", &[("beta", ParamValue::Int(-1))]));
    assert!(bad("pie", &[("flows", ParamValue::Int(16))]));
    assert!(bad("fq_pie", &[("flows", ParamValue::Int(65537))]));
    assert!(bad("fq_pie", &[("quantum", ParamValue::Int(2 << 20))]));
    assert!(bad("fq_pie", &[("ecn_prob", ParamValue::Int(100))]));
    assert!(bad("fq_pie", &[("target", ParamValue::Int(5))]));
    assert!(build("pie", Params::default(), &dev(0)).is_err());
    assert!(!bad("fq_pie", &[("flows", ParamValue::Int(65536)), ("quantum", str("1514b"))]));
    // 0 keeps the default, as tc sends nothing for it.
    let q = FqPie::from_params(Params::from_pairs(&[("limit", ParamValue::Int(0)), ("ecn_prob", ParamValue::Int(0))]), &dev(250)).unwrap();
    assert_eq!((q.config().limit, q.config().ecn_prob, q.config().params.limit), (10240, 10, 10240));
}

#[test]
fn fq_pie_defaults_and_tc_lines() {
    let q = FqPie::from_params(Params::default(), &dev(250)).unwrap();
    assert_eq!(
        q.tc_options(),
        "limit 10240p flows 1024 target 15ms tupdate 16ms alpha 2 beta 20 quantum 1514b memory_limit 32Mb ecn_prob 10"
    );
    assert_eq!(
        q.tc_xstats(),
        "  pkts_in 0 overlimit 0 overmemory 0 dropped 0 ecn_mark 0\n  new_flow_count 0 new_flows_len 0 old_flows_len 0 memory_used 0"
    );
}

/// Two flow ids that fq_pie puts in different flows, the first's index below `split`
/// and the second's at or above it.
fn flows_across(q: &FqPie, split: u32) -> (u32, u32) {
    let idx = |f: u32| q.flow_index(&skb(0, f, 1));
    let lo = (1..).find(|&f| idx(f) < split).unwrap();
    let hi = (1..).find(|&f| idx(f) >= split).unwrap();
    (lo, hi)
}

#[test]
fn fq_pie_controls_each_flow_on_its_own() {
    let mut q = FqPie::from_params(Params::default(), &dev(250)).unwrap();
    let (bulk, sparse) = flows_across(&q, 512);
    let mut drops = Vec::new();
    for i in 0..50 {
        q.enqueue(skb(i, bulk, 1514), 0, &mut drops);
    }
    q.enqueue(skb(50, sparse, 100), 0, &mut drops);
    assert_eq!(q.xstats()[5], ("new_flow_count", 2));
    // DRR: the bulk flow's packet, then (its quantum used) the sparse one's.
    assert_eq!(q.dequeue(30 * MS, &mut drops).unwrap().flow, bulk);
    assert_eq!(q.dequeue(30 * MS, &mut drops).unwrap().flow, sparse);
    q.run_timers(512 * MS);
    let (b, s) = (q.flow_index(&skb(0, bulk, 1)), q.flow_index(&skb(0, sparse, 1)));
    // The bulk flow's controller saw 30 ms, exactly as pie's; the sparse flow's none.
    assert_eq!(q.flow_vars(b).unwrap().prob, STEADY_30MS[0]);
    assert_eq!(q.flow_vars(s).unwrap().prob, 0);
    assert_eq!(q.flow_backlog(b), Some(49 * 1514));
    assert_eq!(q.flow_backlog(s), Some(0));
}

#[test]
fn fq_pie_timer_takes_2048_flows_a_run() {
    // 4096 flows: the run at jiffy 128 updates flows 0..2047 and re-arms for the next
    // jiffy (mod_timer(jiffies + 0): past, so base->clk = 129); the run at 129 does
    // the rest and re-arms for 4 jiffies, which the wheel makes jiffy 134.
    let mut q = FqPie::from_params(Params::from_pairs(&[("flows", ParamValue::Int(4096))]), &dev(250)).unwrap();
    let (lo, hi) = flows_across(&q, 2048);
    let mut drops = Vec::new();
    for i in 0..10 {
        q.enqueue(skb(2 * i, lo, 1514), 0, &mut drops);
        q.enqueue(skb(2 * i + 1, hi, 1514), 0, &mut drops);
    }
    q.dequeue(30 * MS, &mut drops).unwrap();
    q.dequeue(30 * MS, &mut drops).unwrap();
    q.dequeue(30 * MS, &mut drops).unwrap();
    let (l, h) = (q.flow_index(&skb(0, lo, 1)), q.flow_index(&skb(0, hi, 1)));
    let probs = |q: &mut FqPie, t: u64| {
        q.run_timers(t);
        (q.flow_vars(l).unwrap().prob, q.flow_vars(h).unwrap().prob)
    };
    assert_eq!(probs(&mut q, 512 * MS), (STEADY_30MS[0], 0));
    assert_eq!(probs(&mut q, 516 * MS - 1), (STEADY_30MS[0], 0));
    assert_eq!(probs(&mut q, 516 * MS), (STEADY_30MS[0], STEADY_30MS[0]));
    assert_eq!(probs(&mut q, 536 * MS - 1), (STEADY_30MS[0], STEADY_30MS[0]));
    assert_eq!(probs(&mut q, 540 * MS), (STEADY_30MS[1], STEADY_30MS[1]));
}

#[test]
fn fq_pie_counts_memory_and_answers_cn_on_a_drop() {
    // memory_limit only counts: each arrival while memory_usage > limit + truesize.
    let mut q = FqPie::from_params(Params::from_pairs(&[("memory_limit", ParamValue::Int(1))]), &dev(250)).unwrap();
    let mut drops = Vec::new();
    for i in 0..4 {
        // truesize 2000 each: usage before = 0, 2000, 4000, 6000 against 2001.
        let s = Skb { id: i, flow: 7, len: 1000, truesize: 2000, ..Skb::default() };
        assert_eq!(q.enqueue(s, 0, &mut drops), EnqueueVerdict::Success);
    }
    let x: std::collections::HashMap<_, _> = q.xstats().into_iter().collect();
    assert_eq!((x["overmemory"], x["memory_used"], x["pkts_in"]), (2, 8000, 4));
    assert_eq!(q.qlen(), 4);
    // Over the packet limit: dropped, NET_XMIT_CN (fq_pie returns it for every drop).
    let mut q = FqPie::from_params(Params::from_pairs(&[("limit", ParamValue::Int(1))]), &dev(250)).unwrap();
    assert_eq!(q.enqueue(skb(0, 1, 100), 0, &mut drops), EnqueueVerdict::Success);
    drops.clear();
    assert_eq!(q.enqueue(skb(1, 2, 100), 0, &mut drops), EnqueueVerdict::Congested);
    assert_eq!(drops, [1]);
    let x: std::collections::HashMap<_, _> = q.xstats().into_iter().collect();
    assert_eq!((x["overlimit"], x["dropped"]), (1, 1));
    assert_eq!(q.stats().drops, 1);
}
