//! Property tests for `darkbuf_model::ptr_ring` (include/linux/ptr_ring.h).

use darkbuf_model::ptr_ring::PtrRing;
use proptest::prelude::*;
use std::collections::VecDeque;

proptest! {
    #[test]
    fn entries_are_conserved_in_fifo_order(
        size in 0usize..300,
        cache_line in prop::sample::select(vec![0usize, 8, 32, 64, 128]),
        ops in prop::collection::vec(any::<bool>(), 1..2000),
    ) {
        let mut r = PtrRing::new(size, cache_line);
        let batch = r.batch();
        prop_assert!(batch >= 1);
        let mut model: VecDeque<u32> = VecDeque::new();
        let mut next = 0u32;
        for produce in ops {
            if produce {
                // The producer sees room exactly when the slot at `producer` is NULL:
                // everything not yet consumed plus consumed-but-unreleased slots.
                let room = size > 0 && model.len() + r.consumed_unreleased() < size;
                prop_assert_eq!(r.check_produce(), room);
                match r.produce(next) {
                    Ok(()) => {
                        prop_assert!(room);
                        model.push_back(next);
                    }
                    Err(v) => {
                        prop_assert!(!room);
                        prop_assert_eq!(v, next);
                    }
                }
                next += 1;
            } else {
                prop_assert_eq!(r.consume(), model.pop_front());
            }
            prop_assert_eq!(r.len(), model.len());
            prop_assert_eq!(r.empty(), model.is_empty());
            if size > 0 {
                // Capacity as the producer sees it: size - (batch - 1) ..= size.
                let capacity = size - r.consumed_unreleased();
                prop_assert!(capacity + (batch - 1) >= size && capacity <= size,
                    "capacity {} size {} batch {}", capacity, size, batch);
                prop_assert_eq!(r.free_for_producer(), capacity - model.len());
            }
        }
        while let Some(v) = r.consume() {
            prop_assert_eq!(Some(v), model.pop_front());
        }
        prop_assert!(model.is_empty());
    }
}
