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
    /// Device `n`'s port finished serializing its current skb.
    Wire(u16),
    /// The interrupt moderation timer of device `n`'s channel fired.
    NicIrqTimer(u16, u16),
    /// The oldest packet on link `n` arrives at its far end.
    LinkArrival(u16),
    /// The transmit or delivery in slot `n` of `World::deferred` is due.
    Deferred(u32),
    /// Timer `kind` of TCP socket `n` (`sock::tcp::timer`) fired.
    TcpTimer(u16, u8),
    /// A whole second of the run: iperf3's interval report reads every TCP sender.
    Interval,
}

const EMPTY: (u64, u64) = (u64::MAX, u64::MAX);

pub struct EventQueue {
    heap: BinaryHeap<Reverse<(u64, u64, Event)>>,
    /// Per CPU: (time, seq) of its pending step, or `EMPTY`.
    cpu: Vec<(u64, u64)>,
    /// The earliest CPU slot: its index and (time, seq); kept up to date on every
    /// push and pop, so peeking costs nothing.
    first: (usize, (u64, u64)),
    /// Time of the heap's earliest timer (`u64::MAX` if none), kept on every heap push
    /// and pop: `peek_time()` runs after every step.
    heap_first: u64,
    seq: u64,
}

impl EventQueue {
    pub fn new(ncpu: usize) -> Self {
        EventQueue { heap: BinaryHeap::new(), cpu: vec![EMPTY; ncpu], first: (0, EMPTY), heap_first: u64::MAX, seq: 0 }
    }

    #[inline]
    pub fn push(&mut self, at: u64, ev: Event) {
        self.seq += 1;
        match ev {
            Event::Cpu(c) => {
                debug_assert_eq!(self.cpu[c as usize], EMPTY, "one pending step per CPU");
                let k = (at, self.seq);
                self.cpu[c as usize] = k;
                if k < self.first.1 {
                    self.first = (c as usize, k);
                }
            }
            _ => {
                self.heap.push(Reverse((at, self.seq, ev)));
                self.heap_first = self.heap_first.min(at);
            }
        }
    }

    /// Time of the earliest pending event (`u64::MAX` if none).
    #[inline]
    pub fn peek_time(&self) -> u64 {
        self.heap_first.min(self.first.1 .0)
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        let (c, k) = self.first;
        let cpu_first = match self.heap.peek() {
            None => k != EMPTY,
            Some(Reverse((t, s, _))) => k < (*t, *s),
        };
        if !cpu_first {
            let popped = self.heap.pop().map(|Reverse((t, _, ev))| (t, ev));
            self.heap_first = self.heap.peek().map_or(u64::MAX, |Reverse((t, _, _))| *t);
            return popped;
        }
        self.cpu[c] = EMPTY;
        self.first = (0, EMPTY);
        for (i, &k) in self.cpu.iter().enumerate() {
            if k < self.first.1 {
                self.first = (i, k);
            }
        }
        Some((k.0, Event::Cpu(c as u16)))
    }
}
