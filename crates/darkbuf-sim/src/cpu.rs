//! CPUs as serial executors, softirqs, and tasks.
//!
//! A CPU runs one *frame stack* at a time: a task's unit of work (one `sendmsg`, one
//! threaded NAPI poll) or a softirq handler, with nested calls (`__dev_queue_xmit` ->
//! `__qdisc_run`) as pushed frames. Each step of the top frame does its work at the
//! current time and keeps the CPU busy for the step's cost; the next step runs when
//! that time has passed. Effects are therefore visible to the other CPUs in the order
//! the kernel would make them visible, at the granularity of one packet operation.
//!
//! Pending softirqs run when a task's unit ends, as `local_bh_enable()` would run them
//! at the end of `dev_queue_xmit()` or after each threaded `__napi_poll()`; after
//! `MAX_SOFTIRQ_RESTART` (10) rounds or 2 ms they are deferred to ksoftirqd, which
//! competes with the other tasks (kernel/softirq.c `__do_softirq`).

use std::collections::VecDeque;

/// Softirq bits (`NET_TX_SOFTIRQ`, `NET_RX_SOFTIRQ`).
pub const NET_TX_SOFTIRQ: u8 = 1 << 0;
pub const NET_RX_SOFTIRQ: u8 = 1 << 1;
/// `TASKLET_SOFTIRQ`: here, the sockets' deferred work (TCP Small Queues' tasklet, and
/// the TCP timers that end in `tcp_tsq_handler()` or send an ACK).
pub const TASKLET_SOFTIRQ: u8 = 1 << 2;

/// `MAX_SOFTIRQ_RESTART` and `MAX_SOFTIRQ_TIME` in kernel/softirq.c.
pub const MAX_SOFTIRQ_RESTART: u32 = 10;
pub const MAX_SOFTIRQ_TIME_NS: u64 = 2_000_000;

use crate::id::{CpuId, DevId, HostId, NapiId, QdiscId, SockId, TaskId};

/// What a task is: the scheduler runs its unit of work without knowing more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskKind {
    /// The process that owns socket n and sends on it (a flood, the pinger, iperf).
    Proc(SockId),
    /// The threaded-NAPI kthread of NAPI instance n (`napi/<dev>-<id>`).
    NapiThread(NapiId),
    /// `ksoftirqd/<cpu>`.
    Ksoftirqd,
    /// A driver's consumer of one of its queues (the tun reader, the vhost-net worker).
    DevWorker { dev: DevId, queue: u16 },
    /// A TCP receiving application reading sockets `first..first + n`, starting each
    /// unit with a `poll()` or blocked in `read()` on its one socket (its sockets'
    /// `RcvApp::poll` says which).
    TcpReader { first: SockId, n: u32 },
}

/// One schedulable entity, pinned to its CPU (taskset, kthread affinity).
#[derive(Clone, Copy, Debug)]
pub struct Task {
    pub kind: TaskKind,
    pub state: TaskState,
    pub cpu: CpuId,
    /// CFS lets a task that sleeps most of the time (the pinger) preempt at wake-up:
    /// it goes to the front of the run queue.
    pub wake_preempt: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    Sleeping,
    Runnable,
    /// Running its unit; `woken` records a wake-up that arrived meanwhile.
    Running { woken: bool },
}

/// Phases of a TCP receiving application's unit of work (`Frame::TcpRead`,
/// `sock/tcp/reader.rs`): where a reader's unit of work is.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadPhase {
    /// `poll()` over the connections (the `poll` reader's unit starts here).
    Poll,
    /// A `read()` of connection `conn`.
    Read,
    /// The same read after its copy: `tcp_cleanup_rbuf()` and `release_sock()`.
    Release,
    /// Past its last connection: the unit ends.
    End,
}

/// Phases of a NAPI poll (`__napi_poll` -> `veth_poll`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollPhase {
    Start,
    Rcv,
    AfterRcv,
    Complete,
    FullBudget,
    End,
}

/// One activation record on a CPU.
///
/// Eight bytes with a plain one-byte tag at offset 0: the dispatcher reads the tag on
/// every step, and a frame is copied as one word. State that does not fit lives in
/// [`Cpu`].
#[derive(Clone, Copy, Debug)]
#[repr(u8)]
pub enum Frame {
    /// The bottom of a task's unit: runs pending softirqs, then decides whether the
    /// task stays runnable.
    TaskEnd(TaskId),
    /// One `sendmsg()` on a socket by its process.
    SendMsg(SockId),
    /// `release_sock()` of a TCP socket by its writer, after its `write()`
    /// (`crate::sock::tcp`'s `lock.rs`).
    ReleaseSock(SockId),
    /// `__qdisc_run()` of qdisc `q` with its remaining quota.
    QdiscRun { q: QdiscId, quota: i32 },
    /// `net_tx_action()`.
    NetTxAction { started: bool },
    /// `net_rx_action()` (its budget and time limit are in [`Cpu`]: softirqs do not
    /// nest, so a CPU runs at most one).
    NetRxAction { started: bool, awaiting: Option<NapiId> },
    /// The sockets' deferred work on this CPU (`tsq_tasklet_func()` and the TCP timers).
    SockWork { started: bool },
    /// `__napi_poll()` of NAPI instance `napi` (the driver's poll function); `done` is
    /// at most the weight (256).
    NapiPoll { phase: PollPhase, flush_pending: bool, napi: NapiId, done: u16 },
    /// A driver's work item run by its worker task on queue `queue` of device `dev`
    /// (the tun reader's `read()`, vhost-net's `handle_rx()`), `done` frames so far.
    DevWork { dev: DevId, queue: u16, done: u16 },
    /// A TCP receiving application's unit: a `poll()`, then `read()`s of its sockets,
    /// `s` the one it is at (its range is its task's, `TaskKind::TcpReader`;
    /// `crate::sock::tcp::reader`).
    TcpRead { phase: ReadPhase, s: SockId },
}

/// What a step did.
///
/// Every variant carries at most one `u64`, so a `Step` is a (tag, cost) pair that
/// comes back from the out-of-line handlers in two registers. With the called frame
/// inside (`Call(u64, Frame)`) it was returned through memory: the handler wrote the
/// tag and the cost separately and the dispatcher read them back as one 16-byte
/// load, which cannot be forwarded from two stores and stalled on every step (about
/// a tenth of the 100G host's dispatch loop). The called frame waits in
/// [`Cpu::call`] instead (`World::call()` puts it there).
#[derive(Clone, Copy)]
pub enum Step {
    /// The frame stays; the CPU is busy for this many ns.
    Continue(u64),
    /// The frame is finished; the CPU is busy for this many ns.
    Done(u64),
    /// The frame stays and the frame in [`Cpu::call`] is pushed on top after this many
    /// ns. (A tail call overwrites the frame it was given and returns `Continue`.)
    Call(u64),
    /// The frame stays and the pending softirqs' handlers run on top of it now.
    Softirqs,
}

// `repr(u8)` fixes Frame's layout, so its size is a guarantee, not a hope.
const _: () = assert!(std::mem::size_of::<Frame>() == 8);

pub struct Cpu {
    /// The host (machine) this CPU belongs to.
    pub host: HostId,
    pub frames: Vec<Frame>,
    /// The frame a step that returned [`Step::Call`] calls.
    pub call: Frame,
    /// A `Event::Cpu` is pending for this CPU (it is executing or about to).
    pub busy: bool,
    pub softirq_pending: u8,
    /// Rounds of softirq processing since the current task unit ended.
    pub softirq_rounds: u32,
    pub softirq_burst_start: u64,
    /// `softnet_data.output_queue`: qdiscs scheduled by `__netif_schedule` on this CPU.
    pub output_queue: VecDeque<QdiscId>,
    /// `net_tx_action`'s spliced list.
    pub tx_local: VecDeque<QdiscId>,
    /// `softnet_data.poll_list`: NAPIs scheduled on this CPU in softirq mode.
    pub poll_list: VecDeque<NapiId>,
    pub rx_local: VecDeque<NapiId>,
    pub rx_repoll: VecDeque<NapiId>,
    /// Sockets with deferred work on this CPU (the TSQ tasklet's list).
    pub sock_work: VecDeque<SockId>,
    /// Tasks ready to run here, in order.
    pub runnable: RunQueue,
    /// Return registers for a finished NAPI poll: packets done and whether to repoll.
    pub ret_work: u32,
    pub ret_repoll: bool,
    /// The running `net_rx_action()`'s remaining budget and its time limit (jiffies).
    pub rx_budget: i32,
    pub rx_time_limit: u64,
    /// ns spent busy (measured window only).
    pub busy_ns: u64,
    /// ns of `busy_ns` spent in softirq handlers, by vector (`sched::SOFTIRQ_*`).
    pub softirq_ns: [u64; 3],
    /// `busy_ns` when the running softirq handler started.
    pub softirq_mark: u64,
    pub time_squeeze: u64,
}

impl Cpu {
    /// A CPU whose run queue has room for `ntasks` tasks (every task of the world).
    pub fn new(host: HostId, ntasks: usize) -> Self {
        Cpu {
            host,
            frames: Vec::with_capacity(16),
            // Read only after a step put a frame here and returned `Step::Call`.
            call: Frame::NetTxAction { started: false },
            busy: false,
            softirq_pending: 0,
            softirq_rounds: 0,
            softirq_burst_start: 0,
            output_queue: VecDeque::with_capacity(8),
            tx_local: VecDeque::with_capacity(8),
            poll_list: VecDeque::with_capacity(8),
            rx_local: VecDeque::with_capacity(8),
            rx_repoll: VecDeque::with_capacity(8),
            sock_work: VecDeque::with_capacity(8),
            runnable: RunQueue::with_room_for(ntasks),
            ret_work: 0,
            ret_repoll: false,
            rx_budget: 0,
            rx_time_limit: 0,
            busy_ns: 0,
            softirq_ns: [0; 3],
            softirq_mark: 0,
            time_squeeze: 0,
        }
    }
}

/// The tasks ready to run on one CPU, in the order they will run (the CFS run queue,
/// reduced to the FIFO order this model schedules in).
///
/// A ring with room for every task of the world: a task is in at most one run queue,
/// at most once (only a sleeping task is woken, only a running one is put back), so a
/// push never has to grow it. The senders' round robin (`rotate`) costs two stores.
pub struct RunQueue {
    buf: Box<[TaskId]>,
    /// `buf.len() - 1`; `buf.len()` is a power of two.
    mask: usize,
    head: usize,
    len: usize,
}

impl RunQueue {
    pub fn with_room_for(ntasks: usize) -> Self {
        let cap = ntasks.max(1).next_power_of_two();
        RunQueue { buf: vec![TaskId(0); cap].into_boxed_slice(), mask: cap - 1, head: 0, len: 0 }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Makes room for `ntasks` tasks (the world grew a task: a web connection's),
    /// keeping the queued ones in order.
    pub fn grow_to(&mut self, ntasks: usize) {
        if ntasks <= self.buf.len() {
            return;
        }
        let cap = ntasks.next_power_of_two();
        let mut buf = vec![TaskId(0); cap].into_boxed_slice();
        for (i, slot) in buf.iter_mut().enumerate().take(self.len) {
            *slot = self.buf[(self.head + i) & self.mask];
        }
        (self.buf, self.mask, self.head) = (buf, cap - 1, 0);
    }

    #[inline]
    pub fn front(&self) -> Option<TaskId> {
        (self.len > 0).then(|| self.buf[self.head])
    }

    #[inline]
    pub fn push_back(&mut self, task: TaskId) {
        assert!(self.len <= self.mask, "run queue overflow: a task queued twice");
        self.buf[(self.head + self.len) & self.mask] = task;
        self.len += 1;
    }

    /// A task that preempts the queue (the pinger at wake-up).
    #[inline]
    pub fn push_front(&mut self, task: TaskId) {
        assert!(self.len <= self.mask, "run queue overflow: a task queued twice");
        self.head = self.head.wrapping_sub(1) & self.mask;
        self.buf[self.head] = task;
        self.len += 1;
    }

    #[inline]
    pub fn pop_front(&mut self) -> Option<TaskId> {
        if self.len == 0 {
            return None;
        }
        let task = self.buf[self.head];
        self.head = (self.head + 1) & self.mask;
        self.len -= 1;
        Some(task)
    }

    /// `push_back(task)` then `pop_front()` on a non-empty queue, in place: `task` goes
    /// to the back and the front comes out.
    #[inline]
    pub fn rotate(&mut self, task: TaskId) -> TaskId {
        debug_assert!(self.len > 0);
        let front = self.buf[self.head];
        self.buf[(self.head + self.len) & self.mask] = task;
        self.head = (self.head + 1) & self.mask;
        front
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_queue_is_fifo_across_wrap_around() {
        let mut q = RunQueue::with_room_for(3); // 4 slots
        assert_eq!(q.pop_front(), None);
        for round in 0..5u32 {
            let (a, b, p, v) = (TaskId(10 + round), TaskId(20 + round), TaskId(1), TaskId(30 + round));
            q.push_back(a);
            q.push_back(b);
            q.push_front(p);
            assert_eq!(q.pop_front(), Some(p));
            assert_eq!(q.rotate(v), a);
            assert_eq!(q.front(), Some(b));
            assert_eq!(q.pop_front(), Some(b));
            assert_eq!(q.pop_front(), Some(v));
            assert!(q.is_empty());
        }
    }

    #[test]
    #[should_panic(expected = "run queue overflow")]
    fn run_queue_refuses_a_fifth_task_in_four_slots() {
        let mut q = RunQueue::with_room_for(4);
        for i in 0..5 {
            q.push_back(TaskId(i));
        }
    }
}
