//! The event queue: a binary heap ordered by (time, insertion sequence), so events at
//! the same nanosecond run in the order they were scheduled and runs are deterministic.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// CPU `n` finished its current step.
    Cpu(u16),
    /// A sleeping task's timer (rate-limited sender, pinger interval) fired.
    TaskTimer(u16),
    /// Warmup is over: snapshot the counters the measured window is reported against.
    Warmup,
}

#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<(u64, u64, Event)>>,
    seq: u64,
}

impl EventQueue {
    pub fn push(&mut self, at: u64, ev: Event) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    /// Time of the earliest pending event (`u64::MAX` if none).
    #[inline]
    pub fn peek_time(&self) -> u64 {
        self.heap.peek().map_or(u64::MAX, |Reverse((t, _, _))| *t)
    }

    pub fn pop(&mut self) -> Option<(u64, Event)> {
        self.heap.pop().map(|Reverse((t, _, ev))| (t, ev))
    }
}
