//! Property tests for `darkbuf_model::dql` (lib/dynamic_queue_limits.c).

use darkbuf_model::dql::{Dql, DqlError, DQL_MAX_LIMIT};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    /// dql_queued(count)
    Queue(u32),
    /// dql_completed() of this fraction (per mille) of what is in flight.
    Complete(u16),
    /// Let jiffies pass.
    Tick(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u32..20_000).prop_map(Op::Queue),
        (0u16..=1000).prop_map(Op::Complete),
        any::<u8>().prop_map(Op::Tick),
    ]
}

/// A fresh DQL whose counters start at `base` (to cross the u32 wrap) and whose
/// jiffies start at `t0` (to cross the u64 wrap).
fn dql_at(base: u32, t0: u64, hold: u64, min_limit: u32, max_limit: u32) -> Dql {
    let mut d = Dql::new(hold, t0);
    d.num_queued = base;
    d.num_completed = base;
    d.prev_num_queued = base;
    d.adj_limit = base;
    d.set_min_limit(min_limit);
    d.max_limit = max_limit;
    d
}

proptest! {
    #[test]
    fn random_sequences_keep_invariants(
        base in any::<u32>(),
        t0 in any::<u64>(),
        hold in 0u64..300,
        min_limit in 0u32..5000,
        extra in 0u32..100_000,
        strict in any::<bool>(),
        ops in prop::collection::vec(op(), 1..300),
    ) {
        let max_limit = (min_limit + extra).min(DQL_MAX_LIMIT);
        let mut d = dql_at(base, t0, hold, min_limit, max_limit);
        d.strict_prev_completed = strict;
        let mut now = t0;
        let (mut queued, mut completed) = (0u64, 0u64);
        let mut any_completion = false;
        for op in ops {
            match op {
                Op::Queue(c) => {
                    d.queued(c).unwrap();
                    queued += c as u64;
                }
                Op::Complete(permille) => {
                    let c = (d.inflight() as u64 * permille as u64 / 1000) as u32;
                    prop_assert_eq!(d.completed(c, now), Ok(()));
                    completed += c as u64;
                    any_completion = true;
                }
                Op::Tick(j) => now = now.wrapping_add(j as u64),
            }
            prop_assert_eq!(d.inflight(), d.num_queued.wrapping_sub(d.num_completed));
            prop_assert_eq!(d.inflight() as u64, queued - completed);
            if any_completion {
                prop_assert!(d.limit >= min_limit && d.limit <= max_limit, "limit {}", d.limit);
                prop_assert_eq!(d.adj_limit, d.limit.wrapping_add(d.num_completed));
            }
        }
    }

    #[test]
    fn over_completion_always_errors(
        base in any::<u32>(),
        queue in prop::collection::vec(0u32..10_000, 0..20),
        done_permille in 0u32..=1000,
        excess in 1u32..1_000_000,
    ) {
        let mut d = dql_at(base, 0, 250, 0, DQL_MAX_LIMIT);
        for c in queue {
            d.queued(c).unwrap();
        }
        let c = (d.inflight() as u64 * done_permille as u64 / 1000) as u32;
        d.completed(c, 1).unwrap();
        let before = d.clone();
        let inflight = d.inflight();
        let count = inflight.saturating_add(excess);
        prop_assert_eq!(d.completed(count, 2), Err(DqlError::Overcomplete { count, inflight }));
        prop_assert_eq!(d, before);
    }
}
