//! Dynamic queue limits: mirrors lib/dynamic_queue_limits.c and
//! include/linux/dynamic_queue_limits.h.
//!
//! DQL sizes a producer/consumer queue (for BQL: the bytes handed to a driver ring) to
//! the smallest limit that does not starve the consumer. The producer charges objects
//! with [`Dql::queued`] and stops when [`Dql::avail`] goes negative; the completion path
//! retires them with [`Dql::completed`], which grows the limit at once on starvation
//! and shrinks it by the smallest slack seen once per hold window.
//!
//! All counters are `u32` and wrap exactly as the kernel's `unsigned int` do; every
//! comparison between counters is a signed difference, as the kernel's `POSDIFF` and
//! `AFTER_EQ` macros make it. Time is in jiffies, supplied by the caller.
//!
//! Not modelled: the stall detector added in v6.9 (`stall_thrs`, `history[]`,
//! `dql_check_stall()`, `stall_cnt`/`stall_max`). It only feeds statistics and never
//! changes the limit, so leaving it out cannot change queueing behaviour.

/// `DQL_MAX_OBJECT` = `UINT_MAX / 16`: the largest count one `dql_queued()` may charge.
pub const DQL_MAX_OBJECT: u32 = u32::MAX / 16;
/// `DQL_MAX_LIMIT` = `(UINT_MAX / 2) - DQL_MAX_OBJECT`: the default `max_limit`.
pub const DQL_MAX_LIMIT: u32 = (u32::MAX / 2) - DQL_MAX_OBJECT;

/// What the kernel would `BUG()`/`WARN()` on, reported instead of panicking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DqlError {
    /// `dql_completed()` with `count` larger than what is in flight (the kernel's
    /// `BUG_ON(count > num_queued - num_completed)`). State is left unchanged.
    Overcomplete { count: u32, inflight: u32 },
    /// `dql_queued()` with `count > DQL_MAX_OBJECT` (kernel: `WARN_ON_ONCE` and return,
    /// older kernels `BUG_ON`). State is left unchanged.
    ObjectTooLarge { count: u32 },
}

impl std::fmt::Display for DqlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DqlError::Overcomplete { count, inflight } => {
                write!(f, "dql_completed({count}) with only {inflight} in flight")
            }
            DqlError::ObjectTooLarge { count } => {
                write!(
                    f,
                    "dql_queued({count}) exceeds DQL_MAX_OBJECT ({DQL_MAX_OBJECT})"
                )
            }
        }
    }
}

impl std::error::Error for DqlError {}

/// `POSDIFF(a, b)`: `a - b` if positive as a signed 32-bit difference, else 0.
#[inline]
fn posdiff(a: u32, b: u32) -> u32 {
    let d = a.wrapping_sub(b);
    if (d as i32) > 0 {
        d
    } else {
        0
    }
}

/// `AFTER_EQ(a, b)`: `(int)(a - b) >= 0`.
#[inline]
fn after_eq(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

/// `time_after(a, b)` for jiffies: true if `a` is strictly later than `b`, with wrap.
#[inline]
fn time_after(a: u64, b: u64) -> bool {
    (b.wrapping_sub(a) as i64) < 0
}

/// `struct dql`. Field names and meanings are the kernel's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dql {
    // Enqueue side (dql_queued).
    /// Total ever queued (wraps).
    pub num_queued: u32,
    /// `limit + num_completed`, written by the completion path.
    pub adj_limit: u32,
    /// Count of the last `dql_queued()`.
    pub last_obj_cnt: u32,

    // Completion side (dql_completed).
    /// Current limit.
    pub limit: u32,
    /// Total ever completed (wraps).
    pub num_completed: u32,
    /// Over-limit amount seen by the previous completion.
    pub prev_ovlimit: u32,
    /// `num_queued` at the previous completion.
    pub prev_num_queued: u32,
    /// `last_obj_cnt` at the previous completion.
    pub prev_last_obj_cnt: u32,
    /// Lowest slack seen in the current hold window (`u32::MAX` = none yet).
    pub lowest_slack: u32,
    /// Start of the current hold window (jiffies).
    pub slack_start_time: u64,

    // Configuration.
    pub max_limit: u32,
    pub min_limit: u32,
    /// Hold window in jiffies (the core uses `HZ`, i.e. one second).
    pub slack_hold_time: u64,

    /// Model option, not a kernel field: use the very old kernels' strict test
    /// `all_prev_completed = POSDIFF(completed, prev_num_queued)` instead of the current
    /// `AFTER_EQ(completed, prev_num_queued)`. Default false (current kernels).
    pub strict_prev_completed: bool,
}

impl Dql {
    /// Mirrors `dql_init()`: `max_limit = DQL_MAX_LIMIT`, `min_limit = 0`, the given
    /// hold time, then `dql_reset()`. `adj_limit` starts at 0 (zeroed allocation), so
    /// the first object makes `dql_avail()` negative until the first completion.
    pub fn new(hold_time_jiffies: u64, now_jiffies: u64) -> Self {
        let mut dql = Dql {
            num_queued: 0,
            adj_limit: 0,
            last_obj_cnt: 0,
            limit: 0,
            num_completed: 0,
            prev_ovlimit: 0,
            prev_num_queued: 0,
            prev_last_obj_cnt: 0,
            lowest_slack: u32::MAX,
            slack_start_time: now_jiffies,
            max_limit: DQL_MAX_LIMIT,
            min_limit: 0,
            slack_hold_time: hold_time_jiffies,
            strict_prev_completed: false,
        };
        dql.reset(now_jiffies);
        dql
    }

    /// Mirrors `dql_reset()`: clears the dynamic state. `adj_limit` is NOT reset (the
    /// kernel leaves it alone; only completions write it).
    pub fn reset(&mut self, now_jiffies: u64) {
        self.limit = 0;
        self.num_queued = 0;
        self.num_completed = 0;
        self.last_obj_cnt = 0;
        self.prev_num_queued = 0;
        self.prev_last_obj_cnt = 0;
        self.prev_ovlimit = 0;
        self.lowest_slack = u32::MAX;
        self.slack_start_time = now_jiffies;
    }

    /// Mirrors `dql_queued()`: records `count` objects handed to the queue. The caller
    /// is expected to have checked [`Dql::avail`] first (BQL checks it afterwards, so
    /// the object that crosses the limit is already queued).
    #[inline]
    pub fn queued(&mut self, count: u32) -> Result<(), DqlError> {
        if count > DQL_MAX_OBJECT {
            return Err(DqlError::ObjectTooLarge { count });
        }
        self.last_obj_cnt = count;
        self.num_queued = self.num_queued.wrapping_add(count);
        Ok(())
    }

    /// Mirrors `dql_avail()`: how many objects may still be queued; `< 0` means over
    /// the limit.
    #[inline]
    pub fn avail(&self) -> i32 {
        self.adj_limit.wrapping_sub(self.num_queued) as i32
    }

    /// `num_queued - num_completed`, as sysfs `byte_queue_limits/inflight` shows it.
    #[inline]
    pub fn inflight(&self) -> u32 {
        self.num_queued.wrapping_sub(self.num_completed)
    }

    /// Mirrors `dql_completed()`: retires `count` objects and recomputes the limit.
    ///
    /// Starvation (the queue ran dry while over its limit, or everything queued by the
    /// previous completion is done while it was over the limit) grows the limit at once
    /// by what was queued and completed in the interval plus the previous overshoot.
    /// Otherwise, if the queue was busy for the whole interval, the slack (excess above
    /// what prevents starvation) is tracked, and once per hold window (strictly later
    /// than `slack_start_time + slack_hold_time`) the limit shrinks by the lowest
    /// slack seen.
    ///
    /// Completing more than is in flight returns [`DqlError::Overcomplete`] and changes
    /// nothing (the kernel would `BUG()`).
    #[inline]
    pub fn completed(&mut self, count: u32, now_jiffies: u64) -> Result<(), DqlError> {
        let num_queued = self.num_queued;
        let inflight = num_queued.wrapping_sub(self.num_completed);
        if count > inflight {
            return Err(DqlError::Overcomplete { count, inflight });
        }

        let completed = self.num_completed.wrapping_add(count);
        let mut limit = self.limit;
        let mut ovlimit = posdiff(inflight, limit);
        let inprogress = num_queued.wrapping_sub(completed);
        let prev_inprogress = self.prev_num_queued.wrapping_sub(self.num_completed);
        let all_prev_completed = if self.strict_prev_completed {
            posdiff(completed, self.prev_num_queued) != 0
        } else {
            after_eq(completed, self.prev_num_queued)
        };

        if (ovlimit != 0 && inprogress == 0) || (self.prev_ovlimit != 0 && all_prev_completed) {
            // Starved: grow by everything queued and completed in the last interval,
            // plus any previous over-limit.
            limit = limit
                .wrapping_add(posdiff(completed, self.prev_num_queued))
                .wrapping_add(self.prev_ovlimit);
            self.slack_start_time = now_jiffies;
            self.lowest_slack = u32::MAX;
        } else if inprogress != 0 && prev_inprogress != 0 && !all_prev_completed {
            // Busy for the whole interval: the limit may be decreased. Slack is the
            // larger of (limit + previous over-limit - 2 * completed) and the part of
            // the last queueing operation that was not over the limit.
            let slack = posdiff(limit.wrapping_add(self.prev_ovlimit), count.wrapping_mul(2));
            let slack_last_objs = if self.prev_ovlimit != 0 {
                posdiff(self.prev_last_obj_cnt, self.prev_ovlimit)
            } else {
                0
            };
            let slack = slack.max(slack_last_objs);
            if slack < self.lowest_slack {
                self.lowest_slack = slack;
            }
            if time_after(
                now_jiffies,
                self.slack_start_time.wrapping_add(self.slack_hold_time),
            ) {
                limit = posdiff(limit, self.lowest_slack);
                self.slack_start_time = now_jiffies;
                self.lowest_slack = u32::MAX;
            }
        }

        // Enforce bounds: clamp(limit, min_limit, max_limit) (min applied first, as the
        // kernel's clamp() = min(max(val, lo), hi)).
        limit = limit.max(self.min_limit).min(self.max_limit);

        if limit != self.limit {
            self.limit = limit;
            ovlimit = 0;
        }

        self.adj_limit = limit.wrapping_add(completed);
        self.prev_ovlimit = ovlimit;
        self.prev_last_obj_cnt = self.last_obj_cnt;
        self.num_completed = completed;
        self.prev_num_queued = num_queued;
        Ok(())
    }

    /// Sets the floor for the limit, as sysfs `limit_min` does (the kernel writes
    /// `dql->min_limit`; drivers use `netdev_queue_set_dql_min_limit()`, proposed as
    /// `dql_set_min_limit()`). Takes effect at the next completion.
    pub fn set_min_limit(&mut self, min_limit: u32) {
        self.min_limit = min_limit;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A producer that keeps the queue full with one-unit objects: it queues while
    /// `avail() >= 0`, so it overshoots the limit by exactly one object (as BQL does).
    fn fill(dql: &mut Dql) {
        while dql.avail() >= 0 {
            dql.queued(1).unwrap();
        }
    }

    /// Runs `n` completion steps of `min(batch, inflight)` objects, completion `k`
    /// (1-based) at jiffy `k`, refilling before each; returns the limit after each.
    fn run(dql: &mut Dql, batch: u32, n: usize) -> Vec<u32> {
        let mut limits = Vec::with_capacity(n);
        for k in 1..=n as u64 {
            fill(dql);
            let c = batch.min(dql.inflight());
            dql.completed(c, k).unwrap();
            limits.push(dql.limit);
        }
        limits
    }

    #[test]
    fn constants_match_kernel() {
        assert_eq!(DQL_MAX_OBJECT, 268_435_455);
        assert_eq!(DQL_MAX_LIMIT, 1_879_048_192);
    }

    /// (a) One-unit objects, completed one at a time, queue kept full; hold = 10
    /// jiffies, completion k at jiffy k.
    ///
    /// Derivation (nq = num_queued, nc = num_completed before the completion):
    /// - start: adj_limit 0, the producer queues 1 (avail 0 -> -1).
    /// - c1: nq=1 nc=0 limit 0: ovlimit=1, inprogress=0 -> starved:
    ///   limit += POSDIFF(1,0)=1 -> 1; adj=2; window starts at 1. Refill to nq=3.
    /// - c2: nq=3 nc=1: ovlimit=POSDIFF(2,1)=1, inprogress=1, prev_inprogress=0,
    ///   prev_ovlimit=0 -> neither branch; limit 1, prev_ovlimit=1; adj=3; nq=4.
    /// - c3: nq=4 nc=2: prev_ovlimit=1 and AFTER_EQ(3,3) -> starved:
    ///   limit += POSDIFF(3,3)=0 + prev_ovlimit 1 -> 2; window starts at 3; adj=5, nq=6.
    /// - c4: nq=6 nc=3: ovlimit=1, inprogress=2, all_prev=AFTER_EQ(4,4) but
    ///   prev_ovlimit=0 -> neither branch; limit 2; prev_ovlimit=1; nq=7.
    /// - c5..: inflight 3 before each completion (limit 2 + overshoot 1): ovlimit=1,
    ///   prev_inprogress=2, all_prev false -> slack = POSDIFF(2+1, 2*1) = 1,
    ///   slack_last = POSDIFF(1,1) = 0 -> lowest_slack 1.
    /// - c14 (jiffy 14 > 3 + 10): shrink limit = 2 - 1 = 1, window restarts at 14.
    ///   adj = 1 + 14 = 15 < nq = 16: the producer queues nothing.
    /// - c15: inflight 2: ovlimit=1, slack = POSDIFF(1+0, 2) = 0; limit stays 1,
    ///   prev_ovlimit=1; the producer queues one (nq=17).
    /// - c16: prev_ovlimit=1, AFTER_EQ(16,16) -> starved: limit 1 + 0 + 1 = 2, window
    ///   restarts at 16; then as c4.. again, next shrink at jiffy 27 (> 16 + 10).
    ///
    /// So the limit settles at 2, dipping to 1 for two completions every hold + 3.
    #[test]
    fn per_object_completion_settles_at_two() {
        let mut dql = Dql::new(10, 0);
        let limits = run(&mut dql, 1, 30);
        let expected: Vec<u32> = vec![
            1, 1, 2, 2, 2, 2, 2, 2, 2, 2, // c1..c10
            2, 2, 2, 1, 1, 2, 2, 2, 2, 2, // c11..c20
            2, 2, 2, 2, 2, 2, 1, 1, 2, 2, // c21..c30
        ];
        assert_eq!(limits, expected);
        // Between dips: inflight before a completion is limit + 1 = 3.
        assert_eq!(dql.limit, 2);
        fill(&mut dql);
        assert_eq!(dql.inflight(), 3);
    }

    /// (a') With the clock stopped, the hold window never expires, so the limit stays
    /// at exactly 2 once reached.
    #[test]
    fn per_object_completion_without_time_is_exactly_two() {
        let mut dql = Dql::new(10, 0);
        let mut limits = Vec::new();
        for _ in 0..50 {
            fill(&mut dql);
            dql.completed(1, 0).unwrap();
            limits.push(dql.limit);
        }
        assert_eq!(&limits[..3], &[1, 1, 2]);
        assert!(limits[2..].iter().all(|&l| l == 2));
    }

    /// (b) Completions of 64 (or all in flight when fewer), queue refilled to
    /// limit + 1 before each; hold = 1000 jiffies so no shrink happens in 40 steps.
    ///
    /// Derivation: while everything in flight is completed each time, the queue runs
    /// dry while over its limit (ovlimit=1, inprogress=0) and the limit grows by the
    /// whole interval, POSDIFF(completed, prev_num_queued) = inflight = limit + 1:
    /// 0 -> 1 (c1: 1 in flight), 1 -> 3 (c2: 2), 3 -> 7 (c3: 4), 7 -> 15, 15 -> 31,
    /// 31 -> 63 (c6: 32 in flight), 63 -> 127 (c7: 64 in flight, all completed).
    /// - c8: 128 in flight, 64 completed: inprogress=64, prev_inprogress=0,
    ///   prev_ovlimit=0 -> neither branch; limit 127, prev_ovlimit = POSDIFF(128,127)=1.
    /// - c9: nq=319 nc=191 completed=255 = prev_num_queued -> AFTER_EQ true and
    ///   prev_ovlimit=1 -> starved: limit += 0 + 1 -> 128.
    /// - c10: in flight 129, prev_ovlimit 0 -> neither branch; c11..: busy interval,
    ///   slack = POSDIFF(128 + 1, 2*64) = 1, limit stays 128 = 2 * 64 until the hold
    ///   window (1000 jiffies) expires.
    #[test]
    fn batched_completion_grows_to_twice_the_batch() {
        let mut dql = Dql::new(1000, 0);
        let limits = run(&mut dql, 64, 40);
        let mut expected = vec![1, 3, 7, 15, 31, 63, 127, 127, 128];
        expected.resize(40, 128);
        assert_eq!(limits, expected);
        assert_eq!(dql.lowest_slack, 1);
        assert_eq!(dql.slack_start_time, 9);
    }

    /// (b') Past the hold window the batched case dips to 127 for two completions and
    /// recovers to 128, exactly like (a) one level up: shrink at jiffy 1010 (> 9 +
    /// 1000), slack 0 at 1011, starvation via prev_ovlimit at 1012.
    #[test]
    fn batched_completion_dips_once_per_hold_window() {
        let mut dql = Dql::new(1000, 0);
        let limits = run(&mut dql, 64, 1015);
        assert_eq!(limits[1008], 128); // c1009 at jiffy 1009 = 9 + 1000: not after
        assert_eq!(limits[1009], 127); // c1010: shrink by lowest_slack 1
        assert_eq!(limits[1010], 127); // c1011
        assert_eq!(limits[1011], 128); // c1012: starvation, window restarts
        assert_eq!(dql.slack_start_time, 1012);
        assert_eq!(limits[1014], 128);
    }

    /// (c) min_limit as a floor: per-object completions would shrink the limit, but
    /// with limit_min 8 the clamp keeps it at 8.
    ///
    /// c1: starved, limit 0 + 1 = 1 -> clamped to 8; adj = 9, refill to 10 queued.
    /// From c3 on: inflight 9, slack = POSDIFF(8 + 1, 2) = 7; at each hold expiry the
    /// limit becomes POSDIFF(8, 7) = 1, clamped back to 8 (no change, ovlimit kept).
    #[test]
    fn min_limit_is_a_floor() {
        let mut dql = Dql::new(10, 0);
        dql.set_min_limit(8);
        let limits = run(&mut dql, 1, 99);
        assert!(limits.iter().all(|&l| l == 8), "{limits:?}");
        // The window (started by the starvation at jiffy 1) "shrinks" at jiffies 12,
        // 23, ..., 89, 100: the last one before jiffy 99 was at 89, and the lowest
        // slack seen since is 7.
        assert_eq!(dql.slack_start_time, 89);
        assert_eq!(dql.lowest_slack, 7);
        fill(&mut dql);
        assert_eq!(dql.inflight(), 9);
    }

    /// (d) The shrink needs `time_after(now, start + hold)`, strictly later; a
    /// starvation event restarts the window. Same traffic as (a), hold = 10.
    #[test]
    fn slack_hold_window_is_strict_and_restarts_on_starvation() {
        let mut dql = Dql::new(10, 0);
        let limits = run(&mut dql, 1, 13);
        // Window started by the starvation at jiffy 3; jiffy 13 = 3 + 10 is not after.
        assert_eq!(dql.slack_start_time, 3);
        assert_eq!(limits[12], 2);
        assert_eq!(dql.lowest_slack, 1);

        // Completion 14 at jiffy 14 shrinks and restarts the window.
        fill(&mut dql);
        dql.completed(1, 14).unwrap();
        assert_eq!(dql.limit, 1);
        assert_eq!(dql.slack_start_time, 14);
        assert_eq!(dql.lowest_slack, u32::MAX);

        // Completion 15: slack 0 recorded, no shrink.
        fill(&mut dql);
        dql.completed(1, 15).unwrap();
        assert_eq!((dql.limit, dql.lowest_slack), (1, 0));

        // Completion 16: starvation grows to 2 and restarts the window at 16 (the
        // lowest slack 0 seen at 15 is forgotten).
        fill(&mut dql);
        dql.completed(1, 16).unwrap();
        assert_eq!(
            (dql.limit, dql.slack_start_time, dql.lowest_slack),
            (2, 16, u32::MAX)
        );

        // Nothing shrinks through jiffy 26 = 16 + 10; jiffy 27 does.
        for k in 17..=26 {
            fill(&mut dql);
            dql.completed(1, k).unwrap();
            assert_eq!(dql.limit, 2, "jiffy {k}");
        }
        fill(&mut dql);
        dql.completed(1, 27).unwrap();
        assert_eq!(dql.limit, 1);
    }

    /// time_after() semantics survive jiffies wrap-around.
    #[test]
    fn hold_window_across_jiffies_wrap() {
        let start = u64::MAX - 5;
        let mut a = Dql::new(10, 0);
        let mut b = Dql::new(10, start);
        for k in 1..=40u64 {
            fill(&mut a);
            fill(&mut b);
            a.completed(1, k).unwrap();
            b.completed(1, start.wrapping_add(k)).unwrap();
            assert_eq!(a.limit, b.limit, "step {k}");
        }
    }

    /// (e) Over-completion is reported and changes nothing.
    #[test]
    fn overcomplete_is_an_error_and_changes_nothing() {
        let mut dql = Dql::new(10, 0);
        for _ in 0..5 {
            dql.queued(1).unwrap();
        }
        dql.completed(2, 1).unwrap();
        let before = dql.clone();
        assert_eq!(
            dql.completed(4, 2),
            Err(DqlError::Overcomplete {
                count: 4,
                inflight: 3
            })
        );
        assert_eq!(dql, before);
        assert_eq!(dql.completed(3, 2), Ok(()));
        assert_eq!(dql.inflight(), 0);
    }

    #[test]
    fn too_large_object_is_an_error_and_changes_nothing() {
        let mut dql = Dql::new(10, 0);
        let before = dql.clone();
        assert_eq!(
            dql.queued(DQL_MAX_OBJECT + 1),
            Err(DqlError::ObjectTooLarge {
                count: DQL_MAX_OBJECT + 1
            })
        );
        assert_eq!(dql, before);
        assert_eq!(dql.queued(DQL_MAX_OBJECT), Ok(()));
    }

    #[test]
    fn reset_keeps_adj_limit() {
        let mut dql = Dql::new(10, 0);
        fill(&mut dql);
        dql.completed(1, 1).unwrap();
        let adj = dql.adj_limit;
        dql.reset(7);
        assert_eq!(dql.adj_limit, adj);
        assert_eq!((dql.limit, dql.num_queued, dql.num_completed), (0, 0, 0));
        assert_eq!((dql.lowest_slack, dql.slack_start_time), (u32::MAX, 7));
    }

    /// (f) Counters near u32::MAX wrap during the run and every observable matches a
    /// run that starts at 0.
    #[test]
    fn u32_wrap_is_transparent() {
        for batch in [1u32, 64] {
            let base = u32::MAX - 100;
            let mut a = Dql::new(10, 0);
            let mut b = Dql::new(10, 0);
            b.num_queued = base;
            b.num_completed = base;
            b.prev_num_queued = base;
            b.adj_limit = base; // as a fresh queue: avail() == 0
            for k in 1..=200u64 {
                fill(&mut a);
                fill(&mut b);
                assert_eq!(a.avail(), b.avail());
                assert_eq!(a.inflight(), b.inflight());
                let ca = batch.min(a.inflight());
                let cb = batch.min(b.inflight());
                a.completed(ca, k).unwrap();
                b.completed(cb, k).unwrap();
                assert_eq!(
                    (
                        a.limit,
                        a.prev_ovlimit,
                        a.lowest_slack,
                        a.slack_start_time,
                        a.avail()
                    ),
                    (
                        b.limit,
                        b.prev_ovlimit,
                        b.lowest_slack,
                        b.slack_start_time,
                        b.avail()
                    ),
                    "batch {batch} step {k}"
                );
            }
            assert!(b.num_queued < base, "counters should have wrapped");
        }
    }

    /// The very old strict test differs when the completion lands exactly on
    /// prev_num_queued: in (a) c3 is no longer a starvation event.
    #[test]
    fn strict_prev_completed_variant() {
        let mut dql = Dql::new(10, 0);
        dql.strict_prev_completed = true;
        let limits = run(&mut dql, 1, 4);
        // c1: starved (ovlimit && !inprogress) -> 1. c2: neither. c3: completed == prev
        // -> POSDIFF 0 -> not all_prev_completed -> busy branch, slack POSDIFF(1+1,2)=0.
        assert_eq!(limits[..3], [1, 1, 1]);
    }
}
