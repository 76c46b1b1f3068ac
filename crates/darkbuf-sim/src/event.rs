//! The event queue, ordered by (time, insertion sequence), so events at the same
//! nanosecond run in the order they were scheduled and runs are deterministic.
//!
//! Each CPU has at most one pending [`Event::Cpu`] (its next step), and CPUs hand the
//! turn back and forth on nearly every step; those events live in a short list of the
//! busy CPUs instead of the heap, which then holds only timers. The order is the same as
//! one heap over everything: the list's entries carry the same sequence numbers.
//!
//! A TCP socket re-arms its retransmission timer on nearly every ACK, and the kernel's
//! `mod_timer()` moves the one timer; here each arm is an event, and the ones a later
//! arm superseded fire and are ignored (`World::tcp_timer`). At 100G that is tens of
//! thousands of stale entries, and a heap that deep made heap operations half of a
//! TCP run's time. So the arms of one timer wait in a lane of their own, sorted by
//! (time, sequence), and only the lane's first is sure to be in the heap; the next
//! enters when the first pops. Every entry still pops at the same (time, sequence)
//! place as in one heap over everything: nothing in a lane sorts before its first,
//! which is in the heap. A link's arrivals (one per packet on the wire, in order) wait
//! in a lane the same way.

use crate::id::{CpuId, DevId, LinkId, QdiscId};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// CPU `n` finished its current step.
    Cpu(CpuId),
    /// A sleeping task's timer (rate-limited sender, pinger interval) fired.
    TaskTimer(crate::id::TaskId),
    /// Warmup is over: snapshot the counters the measured window is reported against.
    Warmup,
    /// Take one sample of the time series.
    Sample,
    /// Qdisc `n`'s watchdog (`qdisc_watchdog`) fired: schedule it again.
    QdiscWatchdog(QdiscId),
    /// Device `n`'s port finished serializing its current skb.
    Wire(DevId),
    /// The interrupt moderation timer of device `n`'s channel fired.
    NicIrqTimer(DevId, u16),
    /// The oldest packet on link `n` arrives at its far end.
    LinkArrival(LinkId),
    /// The transmit or delivery in slot `n` of `Net::deferred` is due.
    Deferred(u32),
    /// Timer `kind` of TCP socket `n` (`sock::tcp::timer`) fired.
    TcpTimer(crate::id::SockId, u8),
    /// A whole second of the run: iperf3's interval report reads every TCP sender.
    Interval,
    /// CPU `n` stalls (`stall.rs`).
    Stall(CpuId),
    /// A timer of request/response connection `n` (`sock/rr.rs`) may be due.
    RrTimer(crate::id::SockId),
    /// The next connection of web generator `n` opens (`sock/tcp/web.rs`).
    WebArrival(u16),
}

/// The timer kinds a socket has (TCP's `sock::tcp::timer`, which asserts it fits): a
/// socket's timers take lanes `2 * (s * SOCK_TIMER_KINDS + kind)`, one per kind. A lane
/// holds only the keys of its arms and pops each as the event of the one before, so
/// two timers must never share one.
pub const SOCK_TIMER_KINDS: usize = 4;

impl Event {
    /// The lane of a timer's arms (see the module docs), or `None` for an event that
    /// goes straight into the heap. A link's arrivals take a lane too (odd numbers): a
    /// fixed delay keeps them in order, and a long fat path has thousands in flight.
    #[inline]
    fn lane(self) -> Option<usize> {
        match self {
            Event::TcpTimer(s, kind) => Some(2 * (s.idx() * SOCK_TIMER_KINDS + kind as usize)),
            Event::LinkArrival(link) => Some(2 * link.idx() + 1),
            _ => None,
        }
    }
}

const EMPTY: (u64, u64) = (u64::MAX, u64::MAX);

/// A timer in the heap. Ordered by (time, seq) alone, packed in one integer: one
/// comparison per heap level instead of a tuple's chain (that chain, and the event in
/// it, made a push cost about 100 instructions on a heap of a dozen).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Timer {
    /// time << 64 | seq.
    key: u128,
    ev: Event,
}

impl Timer {
    #[inline]
    fn new((at, seq): (u64, u64), ev: Event) -> Self {
        Timer { key: (at as u128) << 64 | seq as u128, ev }
    }

    #[inline]
    fn time(&self) -> u64 {
        (self.key >> 64) as u64
    }

    #[inline]
    fn seq(&self) -> u64 {
        self.key as u64
    }
}

/// A binary min-heap of timers by key.
///
/// `std`'s `BinaryHeap::pop()` swaps the last element with the root before sifting,
/// and its swap writes the 32-byte root in 8-byte parts that the next read takes in
/// 16: a store-to-load forwarding stall on every pop, about 4% of the 100G host's run
/// (`perf annotate`). Here the root is read out and the last element sifted down from
/// the hole, so every element moves whole. The keys are unique (the sequence number),
/// so the pops come in the same order from any correct heap.
struct TimerHeap {
    data: Vec<Timer>,
}

impl TimerHeap {
    fn new() -> Self {
        TimerHeap { data: Vec::new() }
    }

    #[inline]
    fn peek(&self) -> Option<&Timer> {
        self.data.first()
    }

    #[inline]
    fn push(&mut self, t: Timer) {
        let mut hole = self.data.len();
        self.data.push(t);
        while hole > 0 {
            let parent = (hole - 1) / 2;
            if self.data[parent].key <= t.key {
                break;
            }
            self.data[hole] = self.data[parent];
            hole = parent;
        }
        self.data[hole] = t;
    }

    #[inline]
    fn pop(&mut self) -> Option<Timer> {
        let last = self.data.pop()?;
        let Some(&top) = self.data.first() else { return Some(last) };
        let n = self.data.len();
        let mut hole = 0;
        loop {
            let mut child = 2 * hole + 1;
            if child >= n {
                break;
            }
            if child + 1 < n && self.data[child + 1].key < self.data[child].key {
                child += 1;
            }
            if self.data[child].key >= last.key {
                break;
            }
            self.data[hole] = self.data[child];
            hole = child;
        }
        self.data[hole] = last;
        Some(top)
    }
}

pub struct EventQueue {
    heap: TimerHeap,
    /// The pending CPU steps, one per CPU at most, as ((time, seq), CPU), unordered:
    /// a host with many CPUs has few busy at once, and finding the next is a scan of
    /// those only.
    cpu: Vec<((u64, u64), CpuId)>,
    /// The earliest pending CPU step: its index in `cpu` and (time, seq), or `EMPTY`;
    /// kept up to date on every push and pop, so peeking costs nothing.
    first: (usize, (u64, u64)),
    /// Time of the heap's earliest timer (`u64::MAX` if none), kept on every heap push
    /// and pop: `peek_time()` runs after every step.
    heap_first: u64,
    seq: u64,
    /// Per timer lane: its arms not yet popped, as ((time, seq), in the heap), sorted;
    /// the first is in the heap (and so may be arms that were first before an earlier
    /// one came).
    lanes: Vec<VecDeque<((u64, u64), bool)>>,
}

impl EventQueue {
    pub fn new(ncpu: usize) -> Self {
        EventQueue {
            heap: TimerHeap::new(),
            cpu: Vec::with_capacity(ncpu),
            first: (0, EMPTY),
            heap_first: u64::MAX,
            seq: 0,
            lanes: Vec::new(),
        }
    }

    #[inline(always)]
    pub fn push(&mut self, at: u64, ev: Event) {
        self.seq += 1;
        match ev {
            Event::Cpu(c) => {
                debug_assert!(self.cpu.iter().all(|&(_, p)| p != c), "one pending step per CPU");
                let k = (at, self.seq);
                self.cpu.push((k, c));
                if k < self.first.1 {
                    self.first = (self.cpu.len() - 1, k);
                }
            }
            _ => {
                let k = (at, self.seq);
                match ev.lane() {
                    Some(l) => self.lane_push(l, k, ev),
                    None => self.heap_push(k, ev),
                }
            }
        }
    }

    /// A timer's arm joins its lane, in its sorted place; into the heap if it is first.
    #[inline(never)]
    fn lane_push(&mut self, l: usize, k: (u64, u64), ev: Event) {
        if l >= self.lanes.len() {
            self.lanes.resize_with(l + 1, VecDeque::new);
        }
        let lane = &mut self.lanes[l];
        match lane.back() {
            // Arms come nearly in time order (now + RTO): most go at the back.
            Some(&(last, _)) if last < k => lane.push_back((k, false)),
            _ => {
                // An earlier arm (the RTO shrank): its sorted place is near the back,
                // where inserting moves little.
                let i = lane.partition_point(|&(e, _)| e < k);
                lane.insert(i, (k, i == 0));
                if i == 0 {
                    self.heap_push(k, ev);
                }
            }
        }
    }

    #[inline]
    fn heap_push(&mut self, k: (u64, u64), ev: Event) {
        self.heap.push(Timer::new(k, ev));
        self.heap_first = self.heap_first.min(k.0);
    }

    /// The first of lane `l`, `k`, popped: the next arm enters the heap.
    #[inline(never)]
    fn lane_popped(&mut self, l: usize, k: (u64, u64), ev: Event) {
        // Nothing in the lane sorts before its first, which is in the heap: what popped
        // is the first.
        let lane = &mut self.lanes[l];
        debug_assert_eq!(lane.front().map(|e| e.0), Some(k));
        lane.pop_front();
        if let Some((next, in_heap)) = lane.front_mut() {
            if !*in_heap {
                *in_heap = true;
                let next = *next;
                self.heap_push(next, ev);
            }
        }
    }

    /// Moves CPU `c`'s pending step `d` ns later (its place among steps at the new
    /// time is its push order, as for any step); false if it has none.
    pub fn postpone_cpu(&mut self, c: CpuId, d: u64) -> bool {
        let Some(e) = self.cpu.iter_mut().find(|e| e.1 == c) else { return false };
        e.0 .0 += d;
        self.find_first_cpu();
        true
    }

    /// `first` from a scan of the pending CPU steps.
    #[inline(always)]
    fn find_first_cpu(&mut self) {
        self.first = (0, EMPTY);
        for (i, &(k, _)) in self.cpu.iter().enumerate() {
            if k < self.first.1 {
                self.first = (i, k);
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
        let (i, k) = self.first;
        let cpu_first = match self.heap.peek() {
            None => k != EMPTY,
            Some(h) => k < (h.time(), h.seq()),
        };
        if !cpu_first {
            let h = self.heap.pop()?;
            let (t, seq, ev) = (h.time(), h.seq(), h.ev);
            self.heap_first = self.heap.peek().map_or(u64::MAX, Timer::time);
            if let Some(l) = ev.lane() {
                self.lane_popped(l, (t, seq), ev);
            }
            return Some((t, ev));
        }
        let (_, cpu) = self.cpu.swap_remove(i);
        self.find_first_cpu();
        Some((k.0, Event::Cpu(cpu)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::SockId;
    use proptest::prelude::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// What the queue must do: one heap over everything, by (time, push order).
    fn reference_order(pushes: &[(u64, Event)]) -> Vec<(u64, Event)> {
        let mut v: Vec<(u64, usize, Event)> = pushes.iter().enumerate().map(|(i, &(t, e))| (t, i, e)).collect();
        v.sort();
        v.into_iter().map(|(t, _, e)| (t, e)).collect()
    }

    /// A timer re-armed later, earlier, to the same time twice and back to an earlier
    /// value: stale arms pop where they always did, each in its place among the others.
    #[test]
    fn a_lane_pops_in_the_order_of_one_heap() {
        let rto = Event::TcpTimer(SockId(0), 0);
        let pushes = [
            (500, rto),
            (700, rto),
            (300, rto), // earlier than the lane's first: it becomes the first
            (700, Event::Sample),
            (700, rto), // the same time again: after the first 700 and the sample
            (600, Event::TcpTimer(SockId(1), 0)),
            (650, rto), // between waiting arms
            (300, Event::Interval),
        ];
        let mut q = EventQueue::new(1);
        for &(t, e) in &pushes {
            q.push(t, e);
        }
        let popped: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(popped, reference_order(&pushes));
        assert!(q.lanes.iter().all(VecDeque::is_empty));
    }

    /// Socket 0's SYN timer and socket 1's RTO have lanes of their own: each arm pops
    /// as the event it was pushed as. (With three kinds per socket, the SYN timer
    /// (kind 3) shared socket 1's RTO lane, and the RTO arms behind a SYN arm popped
    /// as socket 0's SYN timer: socket 1 never timed out.)
    #[test]
    fn each_timer_kind_of_each_socket_has_its_own_lane() {
        let syn0 = Event::TcpTimer(SockId(0), 3);
        let rto1 = Event::TcpTimer(SockId(1), 0);
        let pushes = [(1_000, syn0), (1_200, rto1), (1_300, rto1)];
        let mut q = EventQueue::new(1);
        for &(t, e) in &pushes {
            q.push(t, e);
        }
        let popped: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(popped, pushes);
    }

    /// A stall moves a CPU's pending step later, past a timer and another CPU's step
    /// it came before; a CPU without a pending step is left alone.
    #[test]
    fn a_postponed_step_pops_at_its_new_time() {
        let mut q = EventQueue::new(3);
        q.push(100, Event::Cpu(CpuId(0)));
        q.push(150, Event::Sample);
        q.push(200, Event::Cpu(CpuId(1)));
        assert!(q.postpone_cpu(CpuId(0), 100));
        assert!(!q.postpone_cpu(CpuId(2), 10));
        assert_eq!(q.peek_time(), 150);
        let popped: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        // Both steps at 200 now: they keep their push order, CPU 0's first.
        assert_eq!(popped, vec![(150, Event::Sample), (200, Event::Cpu(CpuId(0))), (200, Event::Cpu(CpuId(1)))]);
    }

    proptest! {
        /// The heap alone, deeper than the queue's tests make it (hundreds of timers,
        /// many at the same time): pops come out in key order.
        #[test]
        fn timer_heap_pops_in_key_order(
            ops in proptest::collection::vec((0u64..100, any::<bool>()), 1..600)
        ) {
            let mut heap = TimerHeap::new();
            let mut reference = BinaryHeap::new();
            for (seq, (t, pop)) in ops.into_iter().enumerate() {
                if pop {
                    prop_assert_eq!(heap.pop().map(|x| x.key), reference.pop().map(|Reverse(k)| k));
                } else {
                    let timer = Timer::new((t, seq as u64), Event::Sample);
                    heap.push(timer);
                    reference.push(Reverse(timer.key));
                }
                prop_assert_eq!(heap.peek().map(|x| x.key), reference.peek().map(|Reverse(k)| *k));
            }
            while let Some(Reverse(k)) = reference.pop() {
                prop_assert_eq!(heap.pop().map(|x| x.key), Some(k));
            }
            prop_assert!(heap.pop().is_none());
        }

        /// Pushes interleaved with pops, on a few timers, other events and CPU slots:
        /// the pops come out as one heap would give them.
        #[test]
        fn lanes_keep_the_order_of_one_heap(
            ops in proptest::collection::vec((0u8..9, 0u64..50, any::<bool>()), 1..200)
        ) {
            let mut q = EventQueue::new(2);
            let mut reference: BinaryHeap<Reverse<(u64, u64, Event)>> = BinaryHeap::new();
            let (mut now, mut seq, mut cpu_pending) = (0u64, 0u64, [false; 2]);
            let mut got = Vec::new();
            let mut want = Vec::new();
            for (kind, dt, pop) in ops {
                if pop {
                    if let Some((t, e)) = q.pop() {
                        now = t;
                        if let Event::Cpu(c) = e {
                            cpu_pending[c.idx()] = false;
                        }
                        got.push((t, e));
                    }
                    if let Some(Reverse((t, _, e))) = reference.pop() {
                        want.push((t, e));
                    }
                    continue;
                }
                let ev = match kind {
                    0..=2 => Event::TcpTimer(SockId(kind as u32), 0),
                    3 => Event::TcpTimer(SockId(0), 2),
                    4 | 5 => {
                        let c = kind - 4;
                        if cpu_pending[c as usize] {
                            continue;
                        }
                        cpu_pending[c as usize] = true;
                        Event::Cpu(CpuId(c as u16))
                    }
                    6 => Event::LinkArrival(LinkId(0)),
                    // Socket 0's SYN timer, the highest kind: its lane is its own.
                    7 => Event::TcpTimer(SockId(0), 3),
                    _ => Event::Sample,
                };
                seq += 1;
                q.push(now + dt, ev);
                reference.push(Reverse((now + dt, seq, ev)));
            }
            got.extend(std::iter::from_fn(|| q.pop()));
            want.extend(std::iter::from_fn(|| reference.pop().map(|Reverse((t, _, e))| (t, e))));
            prop_assert_eq!(got, want);
        }
    }
}
