//! ptr_ring: mirrors include/linux/ptr_ring.h, the single-producer/single-consumer
//! ring veth and tun/tap use between the transmitting device and the receive side.
//!
//! The ring has no shared index: a slot is free when it holds NULL. The producer writes
//! at `producer` if that slot is NULL; the consumer reads at `consumer_head` but only
//! NULLs consumed slots in batches (`__ptr_ring_discard_one`), so the producer sees
//! consumed slots come back `batch` at a time, or at the end of the array (the wrap
//! flush). Up to `batch - 1` consumed slots can be invisible to the producer, so the
//! capacity it sees fluctuates between `size - (batch - 1)` and `size`.
//!
//! Entries are `u32` handles (e.g. indices into the simulator's packet arena);
//! `u32::MAX` is the NULL sentinel and must never be produced.

/// The NULL pointer of a slot.
const NULL: u32 = u32::MAX;

/// `struct ptr_ring` with explicit slots.
#[derive(Clone, Debug)]
pub struct PtrRing {
    /// Next slot the producer writes.
    producer: usize,
    /// Next valid entry for the consumer.
    consumer_head: usize,
    /// Next consumed slot to invalidate (NULL) for the producer.
    consumer_tail: usize,
    size: usize,
    batch: usize,
    queue: Vec<u32>,
}

impl PtrRing {
    /// Mirrors `ptr_ring_init()` + `__ptr_ring_set_size()`: `batch` is
    /// `SMP_CACHE_BYTES * 2 / sizeof(void *)` (16 with 64-byte lines on 64-bit), and 1
    /// when that is more than half the ring or 0.
    pub fn new(size: usize, cache_line_bytes: usize) -> Self {
        let ptr_size = std::mem::size_of::<u64>(); // sizeof(void *) on a 64-bit kernel
        let mut batch = cache_line_bytes * 2 / ptr_size;
        if batch > size / 2 || batch == 0 {
            batch = 1;
        }
        PtrRing {
            producer: 0,
            consumer_head: 0,
            consumer_tail: 0,
            size,
            batch,
            queue: vec![NULL; size],
        }
    }

    /// Mirrors `__ptr_ring_check_produce() == 0`: true when the producer slot is free.
    #[inline]
    pub fn check_produce(&self) -> bool {
        self.size != 0 && self.queue[self.producer] == NULL
    }

    /// Mirrors `__ptr_ring_produce()`: stores `v`, or returns it back (`-ENOSPC`) when
    /// the producer slot still holds an entry (unconsumed, or consumed but not yet
    /// released by the consumer's batched zeroing).
    #[inline]
    pub fn produce(&mut self, v: u32) -> Result<(), u32> {
        debug_assert_ne!(v, NULL, "u32::MAX is the NULL sentinel");
        if !self.check_produce() {
            return Err(v);
        }
        self.queue[self.producer] = v;
        self.producer += 1;
        if self.producer >= self.size {
            self.producer = 0;
        }
        Ok(())
    }

    /// Mirrors `__ptr_ring_full()`: the producer slot is not NULL. (A zero-size ring,
    /// which the kernel never reads here, counts as full.)
    #[inline]
    pub fn full(&self) -> bool {
        !self.check_produce()
    }

    /// Mirrors `__ptr_ring_empty()`: the consumer head slot is NULL.
    #[inline]
    pub fn empty(&self) -> bool {
        self.size == 0 || self.queue[self.consumer_head] == NULL
    }

    /// Mirrors `__ptr_ring_peek()`.
    pub fn peek(&self) -> Option<u32> {
        if self.empty() {
            None
        } else {
            Some(self.queue[self.consumer_head])
        }
    }

    /// Mirrors `__ptr_ring_consume()`: takes the entry at `consumer_head`, then
    /// `__ptr_ring_discard_one()`.
    #[inline]
    pub fn consume(&mut self) -> Option<u32> {
        let v = self.peek()?;
        self.discard_one();
        Some(v)
    }

    /// Mirrors `__ptr_ring_discard_one()`: advances `consumer_head`; once `batch`
    /// entries are consumed, or at the end of the array, NULLs them all in reverse
    /// order (the slot the producer may be reading last) and moves `consumer_tail`.
    #[inline]
    fn discard_one(&mut self) {
        let mut consumer_head = self.consumer_head;
        let head = consumer_head;
        consumer_head += 1;
        if consumer_head - self.consumer_tail >= self.batch || consumer_head >= self.size {
            for slot in self.queue[self.consumer_tail..=head].iter_mut().rev() {
                *slot = NULL;
            }
            self.consumer_tail = consumer_head;
        }
        if consumer_head >= self.size {
            consumer_head = 0;
            self.consumer_tail = 0;
        }
        self.consumer_head = consumer_head;
    }

    /// Entries produced and not yet consumed (not a kernel function; for metrics and
    /// time series, read per sample, not per packet).
    pub fn len(&self) -> usize {
        if self.size == 0 {
            return 0;
        }
        if self.producer == self.consumer_head {
            // Either empty or every slot holds an unconsumed entry: the head slot is
            // never a consumed-but-unreleased one.
            if self.queue[self.consumer_head] == NULL {
                0
            } else {
                self.size
            }
        } else {
            (self.producer + self.size - self.consumer_head) % self.size
        }
    }

    /// True when no entry is waiting (same as [`PtrRing::empty`]).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.empty()
    }

    /// `consumer_head - consumer_tail`: consumed slots not yet returned to the
    /// producer (always `< batch`).
    pub fn consumed_unreleased(&self) -> usize {
        self.consumer_head - self.consumer_tail
    }

    /// Slots the producer could fill right now.
    pub fn free_for_producer(&self) -> usize {
        self.size - self.len() - self.consumed_unreleased()
    }

    /// `r->size`.
    pub fn size(&self) -> usize {
        self.size
    }

    /// `r->batch`.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// `r->producer`: the slot the next entry goes to (lets a user keep per-slot data
    /// beside the ring, as pfifo_fast keeps the skbs of its `skb_array` bands).
    pub fn producer_index(&self) -> usize {
        self.producer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Produces until the ring refuses; returns how many went in.
    fn fill(r: &mut PtrRing, next: &mut u32) -> usize {
        let mut n = 0;
        while r.produce(*next).is_ok() {
            *next += 1;
            n += 1;
        }
        n
    }

    #[test]
    fn batch_sizes() {
        // veth: VETH_RING_SIZE 256, 64-byte lines: 64 * 2 / 8 = 16.
        assert_eq!(PtrRing::new(256, 64).batch(), 16);
        // tun default tx_queue_len 500.
        assert_eq!(PtrRing::new(500, 64).batch(), 16);
        // 16 > size / 2 -> 1.
        assert_eq!(PtrRing::new(31, 64).batch(), 1);
        assert_eq!(PtrRing::new(32, 64).batch(), 16);
        assert_eq!(PtrRing::new(4, 64).batch(), 1);
        // 128-byte lines (e.g. some arm64/POWER configs): 32.
        assert_eq!(PtrRing::new(256, 128).batch(), 32);
    }

    #[test]
    fn producer_sees_consumed_slots_sixteen_at_a_time() {
        let mut r = PtrRing::new(256, 64);
        let mut next = 0;
        assert_eq!(fill(&mut r, &mut next), 256);
        assert!(r.full());
        for i in 0..15 {
            assert_eq!(r.consume(), Some(i));
        }
        // 15 consumed, none released: still full for the producer.
        assert!(r.full());
        assert!(!r.check_produce());
        assert_eq!(
            (r.len(), r.consumed_unreleased(), r.free_for_producer()),
            (241, 15, 0)
        );
        // The 16th consume releases slots 0..15 at once.
        assert_eq!(r.consume(), Some(15));
        assert_eq!(
            (r.len(), r.consumed_unreleased(), r.free_for_producer()),
            (240, 0, 16)
        );
        assert_eq!(fill(&mut r, &mut next), 16);
        assert!(r.full());
        assert_eq!(r.len(), 256);
    }

    /// tun's 500-slot ring: 500 = 31 * 16 + 4, so the last 4 slots come back only via
    /// the wrap flush when the consumer reaches the end of the array.
    #[test]
    fn wrap_flush_at_end_of_ring() {
        let mut r = PtrRing::new(500, 64);
        let mut next = 0;
        assert_eq!(fill(&mut r, &mut next), 500);
        for i in 0..499 {
            assert_eq!(r.consume(), Some(i));
        }
        // 31 batches (slots 0..496) released; 496..499 consumed but held.
        assert_eq!(r.consumed_unreleased(), 3);
        assert_eq!(fill(&mut r, &mut next), 496);
        // Consuming slot 499 reaches the end: flush 496..=499, head = tail = 0.
        assert_eq!(r.consume(), Some(499));
        assert_eq!(r.consumed_unreleased(), 0);
        assert_eq!(fill(&mut r, &mut next), 4);
        assert_eq!(r.len(), 500);
        // FIFO order continues across the wrap.
        assert_eq!(r.consume(), Some(500));
    }

    #[test]
    fn tiny_ring_has_batch_one() {
        let mut r = PtrRing::new(8, 64);
        assert_eq!(r.batch(), 1);
        let mut next = 0;
        assert_eq!(fill(&mut r, &mut next), 8);
        assert_eq!(r.consume(), Some(0));
        // Released immediately.
        assert!(r.check_produce());
        assert_eq!(r.produce(100), Ok(()));
        assert_eq!(r.produce(101), Err(101));
    }

    #[test]
    fn zero_size_ring_refuses_everything() {
        let mut r = PtrRing::new(0, 64);
        assert_eq!(r.produce(1), Err(1));
        assert!(r.full());
        assert!(r.empty());
        assert_eq!(r.consume(), None);
        assert_eq!(r.len(), 0);
    }
}
