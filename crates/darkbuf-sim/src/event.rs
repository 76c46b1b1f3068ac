//! The event queue, ordered by (time, insertion sequence), so events at the same
//! nanosecond run in the order they were scheduled and runs are deterministic.
//!
//! Each CPU has at most one pending [`Event::Cpu`] (its next step), and CPUs hand the
//! turn back and forth on nearly every step; those events live in one slot per CPU
//! instead of the heap, which then holds only timers. The order is the same as one heap
//! over everything: the slots carry the same sequence numbers.

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
    /// Take one sample of the time series.
    Sample,
    /// Qdisc `n`'s watchdog (`qdisc_watchdog`) fired: schedule it again.
    QdiscWatchdog(u16),
}

const EMPTY: (u64, u64) = (u64::MAX, u64::MAX);

pub struct EventQueue {
    heap: BinaryHeap<Reverse<(u64, u64, Event)>>,
    /// Per CPU: (time, seq) of its pending step, or `EMPTY`.
    cpu: Vec<(u64, u64)>,
    seq: u64,
}

impl EventQueue {
    pub fn new(ncpu: usize) -> Self {
        EventQueue { heap: BinaryHeap::new(), cpu: vec![EMPTY; ncpu], seq: 0 }
    }

    pub fn push(&mut self, at: u64, ev: Event) {
        self.seq += 1;
        match ev {
            Event::Cpu(c) => {
                debug_assert_eq!(self.cpu[c as usize], EMPTY, "one pending step per CPU");
                self.cpu[c as usize] = (at, self.seq);
            }
            _ => self.heap.push(Reverse((at, self.seq, ev))),
        }
    }

    /// The CPU whose step is earliest, with its (time, seq).
    #[inline]
    fn first_cpu(&self) -> Option<(usize, (u64, u64))> {
        let mut best: Option<(usize, (u64, u64))> = None;
        for (i, &k) in self.cpu.iter().enumerate() {
            if k != EMPTY && best.is_none_or(|(_, b)| k < b) {
                best = Some((i, k));
            }
        }
        best
    }

    /// Time of the earliest pending event (`u64::MAX` if none).
    #[inline]
    pub fn peek_time(&self) -> u64 {
        let heap = self.heap.peek().map_or(u64::MAX, |Reverse((t, _, _))| *t);
        let cpu = self.cpu.iter().map(|&(t, _)| t).min().unwrap_or(u64::MAX);
        heap.min(cpu)
    }

    pub fn pop(&mut self) -> Option<(u64, Event)> {
        let heap = self.heap.peek().map(|Reverse((t, s, _))| (*t, *s));
        match (self.first_cpu(), heap) {
            (Some((c, k)), h) if h.is_none_or(|h| k < h) => {
                self.cpu[c] = EMPTY;
                Some((k.0, Event::Cpu(c as u16)))
            }
            _ => self.heap.pop().map(|Reverse((t, _, ev))| (t, ev)),
        }
    }
}
