//! COBALT, cake's per-flow AQM: CoDel and BLUE run side by side. Mirrors
//! `cobalt_newton_step()`, `cobalt_invsqrt()`, `cobalt_control()`, `cobalt_queue_full()`,
//! `cobalt_queue_empty()` and `cobalt_should_drop()` in net/sched/sch_cake.c (the
//! version with `inv_sqrt_cache[]` as constants and drop reasons, 6.x).
//!
//! Differences from reference CoDel (`include/net/codel_impl.h`), all kept on purpose:
//! - time is `ktime_t` nanoseconds, not 1.024 µs units;
//! - `1/sqrt(count)` is Q0.32 (not Q0.16) and comes from a 16-entry table for
//!   `count < 16`, one Newton step above;
//! - `count` never resets: leaving the dropping state lets it decay by one per
//!   `interval/sqrt(count)` instead (the `while (next_due)` loop and
//!   [`cobalt_queue_empty`]);
//! - over target also needs `sojourn > 4 * mtu_time` (and, in ingress mode,
//!   `> 2 * mtu_time * bulk_flows`), so low rates do not drop on one packet's
//!   serialisation time;
//! - `drop_next` doubles as an activity timeout (`now + interval` while `count == 0`).
//!
//! A kernel quirk the model keeps: `cobalt_vars_init()` zeroes `rec_inv_sqrt`, and
//! `count` goes 0 -> 1 without `cobalt_invsqrt()`, so on a queue's *first* congestion
//! episode `cobalt_control(now, interval, 0)` puts `drop_next` at `now`: the first
//! drop (or mark) hits the second over-target packet instead of one interval later.
//! Once `count` has decayed back to 0 through `cobalt_invsqrt()`, `rec_inv_sqrt` is
//! `inv_sqrt_cache[0]` (~1.0) and later episodes wait the full interval.

use crate::skb::reciprocal_scale;
use crate::Skb;

/// `ktime_t`: signed nanoseconds. Differences are taken with wrapping arithmetic and
/// read as signed, as `ktime_sub()` does.
pub type Ktime = i64;

/// `REC_INV_SQRT_CACHE`.
pub const REC_INV_SQRT_CACHE: u32 = 16;

/// `inv_sqrt_cache[]`: `1/sqrt(count)` in Q0.32 for `count < 16`; entries 0 and 1 are
/// `~0`, as close to 1.0 as Q0.32 allows.
pub const INV_SQRT_CACHE: [u32; REC_INV_SQRT_CACHE as usize] = [
    !0, !0, 3037000500, 2479700525, 2147483647, 1920767767, 1753413056, 1623345051, 1518500250,
    1431655765, 1358187914, 1294981364, 1239850263, 1191209601, 1147878294, 1108955788,
];

/// `struct cobalt_params`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CobaltParams {
    /// CoDel interval (ns): the first signal's delay and the control law's scale.
    pub interval: u64,
    /// Maximum persistent sojourn time (ns), also BLUE's update period.
    pub target: u64,
    /// Serialisation time of an MTU-sized packet at the tin's rate (ns; 0 unshaped).
    pub mtu_time: u64,
    /// BLUE increment of `p_drop` (Q0.32): 1/256.
    pub p_inc: u32,
    /// BLUE decrement of `p_drop` (Q0.32): 1/4096.
    pub p_dec: u32,
}

/// `struct cobalt_vars`, zeroed by `cobalt_vars_init()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CobaltVars {
    /// CoDel's drop count (signalling frequency).
    pub count: u32,
    /// `1/sqrt(count)`, Q0.32.
    pub rec_inv_sqrt: u32,
    /// Time of the next signal, or of the last activity.
    pub drop_next: Ktime,
    /// Time of the last BLUE update.
    pub blue_timer: Ktime,
    /// BLUE drop probability, Q0.32.
    pub p_drop: u32,
    pub dropping: bool,
    /// The last packet [`cobalt_should_drop`] looked at was CE-marked.
    pub ecn_marked: bool,
}

/// What [`cobalt_should_drop`] decided (the kernel's `enum skb_drop_reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CobaltVerdict {
    /// `SKB_NOT_DROPPED_YET`: deliver (possibly CE-marked: see `ecn_marked`).
    Deliver,
    /// `SKB_DROP_REASON_QDISC_CONGESTED`: CoDel signalled and the packet is not ECN-capable.
    Congested,
    /// `SKB_DROP_REASON_CAKE_FLOOD`: BLUE's random drop (ECN deliberately ignored).
    Flood,
}

/// `cobalt_newton_step()`: `invsqrt' = invsqrt/2 * (3 - count * invsqrt^2)` in Q0.32.
pub fn cobalt_newton_step(vars: &mut CobaltVars) {
    let invsqrt = vars.rec_inv_sqrt as u64;
    let invsqrt2 = (invsqrt * invsqrt) >> 32;
    let mut val = (3u64 << 32).wrapping_sub((vars.count as u64).wrapping_mul(invsqrt2));
    val >>= 2; // avoid overflow in the following multiply
    val = val.wrapping_mul(invsqrt) >> (32 - 2 + 1);
    vars.rec_inv_sqrt = val as u32;
}

/// `cobalt_invsqrt()`: the table below 16, one Newton step above.
pub fn cobalt_invsqrt(vars: &mut CobaltVars) {
    if vars.count < REC_INV_SQRT_CACHE {
        vars.rec_inv_sqrt = INV_SQRT_CACHE[vars.count as usize];
    } else {
        cobalt_newton_step(vars);
    }
}

/// `cobalt_control()`: CoDel's control law `t + interval / sqrt(count)`, with
/// `reciprocal_scale()` (whose `u32` argument truncates intervals above ~4.29 s).
pub fn cobalt_control(t: Ktime, interval: u64, rec_inv_sqrt: u32) -> Ktime {
    t.wrapping_add(reciprocal_scale(interval as u32, rec_inv_sqrt) as i64)
}

/// `ktime_to_ns(ktime_sub(a, b)) > p` with `p` a `u64`: C converts the signed
/// difference to `u64`, so a negative difference compares as huge (true).
fn elapsed_exceeds(now: Ktime, since: Ktime, p: u64) -> bool {
    (now.wrapping_sub(since) as u64) > p
}

/// `cobalt_queue_full()`: a packet had to be dropped on overflow. Raises BLUE's
/// `p_drop` (at most once per `target`) and forces the CoDel side into dropping with
/// `drop_next = now`. Returns true if BLUE went from quiescent to active.
pub fn cobalt_queue_full(vars: &mut CobaltVars, p: &CobaltParams, now: Ktime) -> bool {
    let mut up = false;
    if elapsed_exceeds(now, vars.blue_timer, p.target) {
        up = vars.p_drop == 0;
        vars.p_drop = vars.p_drop.wrapping_add(p.p_inc);
        if vars.p_drop < p.p_inc {
            vars.p_drop = !0;
        }
        vars.blue_timer = now;
    }
    vars.dropping = true;
    vars.drop_next = now;
    if vars.count == 0 {
        vars.count = 1;
    }
    up
}

/// `cobalt_queue_empty()`: the queue was serviced but was empty. Lowers `p_drop` (at
/// most once per `target`), leaves the dropping state, and decays `count` by one if
/// `drop_next` has passed. Returns true if BLUE went from active to quiescent.
pub fn cobalt_queue_empty(vars: &mut CobaltVars, p: &CobaltParams, now: Ktime) -> bool {
    let mut down = false;
    if vars.p_drop != 0 && elapsed_exceeds(now, vars.blue_timer, p.target) {
        if vars.p_drop < p.p_dec {
            vars.p_drop = 0;
        } else {
            vars.p_drop -= p.p_dec;
        }
        vars.blue_timer = now;
        down = vars.p_drop == 0;
    }
    vars.dropping = false;
    if vars.count != 0 && now.wrapping_sub(vars.drop_next) >= 0 {
        vars.count -= 1;
        cobalt_invsqrt(vars);
        vars.drop_next = cobalt_control(vars.drop_next, p.interval, vars.rec_inv_sqrt);
    }
    down
}

/// `cobalt_should_drop()`: called with a freshly dequeued packet. CoDel marks
/// (ECT packets) or drops when due; BLUE drops with probability `p_drop`
/// (`random_u32()` is `get_random_u32()`, drawn only when `p_drop != 0` and CoDel did
/// not already drop). `bulk_flows` is the tin's bulk flow count in ingress mode, else 0.
pub fn cobalt_should_drop(
    vars: &mut CobaltVars,
    p: &CobaltParams,
    now: Ktime,
    skb: &mut Skb,
    enqueue_time: Ktime,
    bulk_flows: u32,
    random_u32: &mut dyn FnMut() -> u32,
) -> CobaltVerdict {
    let mut verdict = CobaltVerdict::Deliver;
    let sojourn = now.wrapping_sub(enqueue_time) as u64;
    let mut schedule = now.wrapping_sub(vars.drop_next);
    let over_target = sojourn > p.target
        && sojourn > p.mtu_time.wrapping_mul(bulk_flows as u64).wrapping_mul(2)
        && sojourn > p.mtu_time.wrapping_mul(4);
    let mut next_due = vars.count != 0 && schedule >= 0;

    vars.ecn_marked = false;

    if over_target {
        if !vars.dropping {
            vars.dropping = true;
            vars.drop_next = cobalt_control(now, p.interval, vars.rec_inv_sqrt);
        }
        if vars.count == 0 {
            vars.count = 1;
        }
    } else if vars.dropping {
        vars.dropping = false;
    }

    if next_due && vars.dropping {
        // Use ECN mark if possible, otherwise drop.
        vars.ecn_marked = skb.set_ce();
        if !vars.ecn_marked {
            verdict = CobaltVerdict::Congested;
        }
        vars.count = vars.count.wrapping_add(1);
        if vars.count == 0 {
            vars.count = vars.count.wrapping_sub(1);
        }
        cobalt_invsqrt(vars);
        vars.drop_next = cobalt_control(vars.drop_next, p.interval, vars.rec_inv_sqrt);
        schedule = now.wrapping_sub(vars.drop_next);
    } else {
        while next_due {
            vars.count -= 1;
            cobalt_invsqrt(vars);
            vars.drop_next = cobalt_control(vars.drop_next, p.interval, vars.rec_inv_sqrt);
            schedule = now.wrapping_sub(vars.drop_next);
            next_due = vars.count != 0 && schedule >= 0;
        }
    }

    // Simple BLUE implementation. Lack of ECN is deliberate.
    if vars.p_drop != 0 && verdict == CobaltVerdict::Deliver && random_u32() < vars.p_drop {
        verdict = CobaltVerdict::Flood;
    }

    // Overload the drop_next field as an activity timeout.
    if vars.count == 0 {
        vars.drop_next = now.wrapping_add(p.interval as i64);
    } else if schedule > 0 && verdict == CobaltVerdict::Deliver {
        vars.drop_next = now;
    }

    verdict
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> CobaltParams {
        CobaltParams {
            interval: 100_000_000,
            target: 5_000_000,
            mtu_time: 0,
            p_inc: 1 << 24,
            p_dec: 1 << 20,
        }
    }

    #[test]
    fn newton_step_agrees_with_the_table() {
        // One Newton step from the table entry for count - 1 lands close to the next
        // entry (the kernel relies on this above 16).
        for count in 8..16u32 {
            let mut v = CobaltVars {
                count,
                rec_inv_sqrt: INV_SQRT_CACHE[count as usize - 1],
                ..Default::default()
            };
            cobalt_newton_step(&mut v);
            let want = INV_SQRT_CACHE[count as usize] as f64;
            assert!(
                ((v.rec_inv_sqrt as f64 - want) / want).abs() < 0.01,
                "count {count}"
            );
        }
        // Above the table: count 16 from count 15's value is within 0.2% of 2^32/4.
        let mut v = CobaltVars {
            count: 16,
            rec_inv_sqrt: INV_SQRT_CACHE[15],
            ..Default::default()
        };
        cobalt_newton_step(&mut v);
        assert!(((v.rec_inv_sqrt as f64 - 1073741824.0) / 1073741824.0).abs() < 2e-3);
    }

    #[test]
    fn control_law_is_interval_over_sqrt_count() {
        assert_eq!(
            cobalt_control(0, 100_000_000, INV_SQRT_CACHE[2]),
            70_710_678
        );
        assert_eq!(
            cobalt_control(0, 100_000_000, INV_SQRT_CACHE[3]),
            57_735_026
        );
        assert_eq!(
            cobalt_control(0, 100_000_000, INV_SQRT_CACHE[4]),
            49_999_999
        );
        // rec_inv_sqrt 0 (fresh vars): no delay at all.
        assert_eq!(cobalt_control(5, 100_000_000, 0), 5);
    }

    #[test]
    fn blue_rises_once_per_target_and_decays() {
        let p = params();
        let mut v = CobaltVars::default();
        let t0 = 1_000_000_000_000;
        assert!(cobalt_queue_full(&mut v, &p, t0));
        assert_eq!(
            (v.p_drop, v.count, v.dropping, v.drop_next),
            (1 << 24, 1, true, t0)
        );
        // Within target of the last update: no further increase.
        assert!(!cobalt_queue_full(&mut v, &p, t0 + 5_000_000));
        assert_eq!(v.p_drop, 1 << 24);
        assert!(!cobalt_queue_full(&mut v, &p, t0 + 5_000_001));
        assert_eq!(v.p_drop, 2 << 24);
        // Decrease by 1/4096 per target; count decays since drop_next has passed.
        let t1 = t0 + 20_000_000;
        assert!(!cobalt_queue_empty(&mut v, &p, t1));
        assert_eq!(v.p_drop, (2 << 24) - (1 << 20));
        assert!(!v.dropping);
        assert_eq!(v.count, 0);
        assert_eq!(v.rec_inv_sqrt, !0);
    }

    #[test]
    fn saturating_p_drop() {
        let p = params();
        let mut v = CobaltVars {
            p_drop: u32::MAX - 5,
            ..Default::default()
        };
        cobalt_queue_full(&mut v, &p, 1_000_000_000_000);
        assert_eq!(v.p_drop, u32::MAX);
    }
}
