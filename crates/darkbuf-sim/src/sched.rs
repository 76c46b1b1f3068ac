//! The executor: CPUs run their frame stacks step by step, tasks are picked and put
//! to sleep as the scheduler would, softirqs run when a task's unit ends
//! (`local_bh_enable()`) and are deferred to ksoftirqd past `__do_softirq()`'s limits.
//!
//! The executor knows tasks, frames and ids; what a socket, a driver or a NAPI does is
//! dispatched to their modules.

use crate::cpu::{Frame, PollPhase, ReadPhase, Step, TaskKind, TaskState};

use crate::id::{CpuId, TaskId};
use crate::cpu::{MAX_SOFTIRQ_RESTART, MAX_SOFTIRQ_TIME_NS};
use crate::world::World;

impl World {
    /// `wake_up_process()`: make a sleeping task runnable on its CPU (a wake-up that
    /// arrives while it runs is remembered).
    pub fn wake_task(&mut self, ti: TaskId) {
        let t = &mut self.sched.tasks[ti];
        match t.state {
            TaskState::Sleeping => {
                t.state = TaskState::Runnable;
                let (cpu, preempt) = (t.cpu, t.wake_preempt);
                let c = &mut self.sched.cpus[cpu];
                if preempt {
                    c.runnable.push_front(ti);
                } else {
                    c.runnable.push_back(ti);
                }
                let delay = self.cost(self.profile.costs.wakeup_ns);
                self.cpu_kick(cpu, delay);
            }
            TaskState::Running { .. } => t.state = TaskState::Running { woken: true },
            TaskState::Runnable => {}
        }
    }

    /// A task's timer fired (a socket's next send is due): wake it.
    pub(crate) fn task_timer(&mut self, ti: TaskId) {
        if let TaskKind::Proc(s) = self.sched.tasks[ti].kind {
            self.sock_timer(s);
        }
        self.wake_task(ti);
    }

    /// Executes steps on `cpu` until one takes time or the CPU goes idle.
    ///
    /// The top frame is held in a local while the CPU executes (`frames` keeps the ones
    /// below it): the common steps, which keep or replace the top, then never touch
    /// the stack in memory.
    pub(crate) fn cpu_run(&mut self, cpu: CpuId) {
        let ci = cpu;
        self.sched.current_cpu = cpu;
        'idle: loop {
            let Some(mut top) = self.sched.cpus[ci].frames.pop() else {
                if !self.pick_next(cpu) {
                    self.sched.cpus[ci].busy = false;
                    return;
                }
                continue;
            };
            loop {
                let step = self.step(cpu, &mut top);
                let (cost, empty) = match step {
                    Step::Continue(c) => (c, false),
                    Step::Done(c) => match self.sched.cpus[ci].frames.pop() {
                        Some(f) => {
                            top = f;
                            (c, false)
                        }
                        None => (c, true),
                    },
                    Step::Call(c) => {
                        self.sched.cpus[ci].frames.push(top);
                        top = self.sched.cpus[ci].call;
                        (c, false)
                    }
                    Step::Softirqs => {
                        self.sched.cpus[ci].frames.push(top);
                        self.push_softirqs(cpu);
                        top = self.sched.cpus[ci].frames.pop().expect("softirq frame");
                        (0, false)
                    }
                };
                if !self.advance_inline(cpu, cost) {
                    if self.now >= self.cfg.start {
                        self.sched.cpus[ci].busy_ns += cost;
                    }
                    if !empty {
                        self.sched.cpus[ci].frames.push(top);
                    }
                    self.events.push(self.now + cost, crate::event::Event::Cpu(cpu));
                    return;
                }
                if empty {
                    continue 'idle;
                }
            }
        }
    }

    /// The executor's conservative lookahead after a step of `cost` ns on `cpu`: if
    /// the CPU's next step comes strictly before every pending event, the queue would
    /// hand it straight back (an event pushed now sorts after all existing ones at the
    /// same time), so it runs now: books `cost`, moves the clock past it and returns
    /// true. Same order of effects, without the heap traffic. Otherwise books nothing
    /// and returns false.
    ///
    /// Handlers that loop (a sender's sendmsg loop, the NAPI receive loop) call it too
    /// and go on in place on true, returning `Step::Continue(cost)` on false.
    #[inline]
    pub fn advance_inline(&mut self, cpu: CpuId, cost: u64) -> bool {
        let next = self.now + cost;
        if cost > 0 && !(next < self.events.peek_time() && next <= self.cfg.end) {
            return false;
        }
        if self.now >= self.cfg.start {
            self.sched.cpus[cpu].busy_ns += cost;
        }
        self.now = next;
        true
    }

    /// Nothing on the stack: run pending softirqs or the next runnable task.
    fn pick_next(&mut self, cpu: CpuId) -> bool {
        let c = &mut self.sched.cpus[cpu];
        if c.softirq_pending != 0 {
            self.push_softirqs(cpu);
            return true;
        }
        let Some(ti) = c.runnable.pop_front() else { return false };
        c.softirq_rounds = 0;
        c.frames.push(Frame::TaskEnd(ti));
        self.sched.tasks[ti].state = TaskState::Running { woken: false };
        if let Some(f) = self.unit_frame(ti) {
            self.sched.cpus[cpu].frames.push(f);
        }
        true
    }

    /// The first frame of a task's unit of work (ksoftirqd has none: its `TaskEnd` runs
    /// the pending softirqs).
    fn unit_frame(&self, ti: TaskId) -> Option<Frame> {
        match self.sched.tasks[ti].kind {
            TaskKind::Proc(s) => Some(Frame::SendMsg(s)),
            TaskKind::NapiThread(n) => {
                Some(Frame::NapiPoll { napi: n, phase: PollPhase::Start, done: 0, flush_pending: false })
            }
            TaskKind::DevWorker { dev, queue } => Some(Frame::DevWork { dev, queue, done: 0 }),
            TaskKind::TcpReader { first, .. } => {
                let poll = match &self.socks[first].kind {
                    crate::sock::SockKind::Tcp(t) => t.reader_polls(),
                    _ => false,
                };
                let phase = if poll { ReadPhase::Poll } else { ReadPhase::Read };
                Some(Frame::TcpRead { s: first, phase })
            }
            TaskKind::Ksoftirqd => None,
        }
    }

    /// The bottom frame of a task's unit: softirqs first (local_bh_enable), then the
    /// task's own decision to run again or sleep.
    #[inline(never)]
    fn task_end(&mut self, cpu: CpuId, frame: &mut Frame) -> Step {
        // A process's loop (sendmsg, the qdisc run it starts, the next sendmsg) goes on
        // here while no other event comes first: what the dispatcher would do next,
        // without the dispatches. Sends that the qdisc drops on arrival go through
        // `flood_drop_burst()`.
        loop {
            if let Some(step) = self.flood_drop_burst(cpu, frame) {
                return step;
            }
            let Frame::TaskEnd(ti) = *frame else { unreachable!("a TaskEnd frame") };
            let cost = match self.task_end_once(cpu, ti, frame) {
                // A sendmsg that did not start the qdisc: TaskEnd again after it.
                Step::Continue(c) => c,
                Step::Call(c) => {
                    let Frame::QdiscRun { q, mut quota } = self.sched.cpus[cpu].call else {
                        return Step::Call(c);
                    };
                    if !self.advance_inline(cpu, c) {
                        return Step::Call(c);
                    }
                    match self.qdisc_run_step(cpu, q, &mut quota) {
                        Step::Done(c) => c,
                        Step::Continue(c) => return self.call(cpu, c, Frame::QdiscRun { q, quota }),
                        _ => unreachable!("the qdisc run keeps or finishes its frame"),
                    }
                }
                other => return other,
            };
            if !self.advance_inline(cpu, cost) {
                return Step::Continue(cost);
            }
        }
    }

    /// One pass of `task_end`: run softirqs, or decide whether the task runs again and
    /// start the next sendmsg in place when there is one.
    #[inline(always)]
    fn task_end_once(&mut self, cpu: CpuId, ti: TaskId, frame: &mut Frame) -> Step {
        let c = &mut self.sched.cpus[cpu];
        if c.softirq_pending != 0 {
            if c.softirq_rounds == 0 {
                c.softirq_burst_start = self.now;
            }
            if c.softirq_rounds < MAX_SOFTIRQ_RESTART && self.now - c.softirq_burst_start < MAX_SOFTIRQ_TIME_NS {
                c.softirq_rounds += 1;
                return Step::Softirqs;
            }
            // Too long in softirq: leave the rest to ksoftirqd.
            self.wake_task(self.sched.ksoftirqd(cpu));
        }
        let kind = self.sched.tasks[ti].kind;
        let runnable = self.task_wants_cpu(cpu, ti, kind);
        let c = &mut self.sched.cpus[cpu];
        if runnable && c.runnable.is_empty() && c.softirq_pending == 0 && kind != TaskKind::Ksoftirqd {
            // Alone on its CPU: the scheduler would pick this task again at once, so
            // start its next unit here (what pick_next() would do, without the round trip).
            self.sched.tasks[ti].state = TaskState::Running { woken: false };
            c.softirq_rounds = 0;
            return self.start_unit(cpu, ti, frame);
        }
        // The unit is over and the stack would be empty: when pick_next() would start a
        // process's next sendmsg, do it here, in place (the same effects at the same
        // time, one dispatch instead of three).
        let next = match c.runnable.front() {
            Some(next) if c.softirq_pending == 0 => match self.sched.tasks[next].kind {
                TaskKind::Proc(s) => Some((next, s)),
                _ => None,
            },
            _ => None,
        };
        match (next, runnable) {
            // This task to the back of the queue, the front one runs: one rotation.
            (Some(_), true) => _ = c.runnable.rotate(ti),
            (Some(_), false) => _ = c.runnable.pop_front(),
            (None, true) => c.runnable.push_back(ti),
            (None, false) => {}
        }
        self.sched.tasks[ti].state = if runnable { TaskState::Runnable } else { TaskState::Sleeping };
        if let Some((next, s)) = next {
            self.sched.tasks[next].state = TaskState::Running { woken: false };
            self.sched.cpus[cpu].softirq_rounds = 0;
            *frame = Frame::TaskEnd(next);
            return self.send_msg(cpu, s);
        }
        Step::Done(0)
    }

    /// Whether a task stays runnable at the end of its unit.
    #[inline(always)]
    fn task_wants_cpu(&mut self, cpu: CpuId, ti: TaskId, kind: TaskKind) -> bool {
        match kind {
            TaskKind::Proc(s) => self.sock_wants_cpu(s),
            TaskKind::NapiThread(_) => {
                self.sched.cpus[cpu].ret_repoll
                    || matches!(self.sched.tasks[ti].state, TaskState::Running { woken: true })
            }
            TaskKind::DevWorker { dev, queue } => self.dev_worker_wants_cpu(dev, queue),
            TaskKind::TcpReader { first, n } => self.tcp_reader_wants_cpu(first, n),
            TaskKind::Ksoftirqd => self.sched.cpus[cpu].softirq_pending != 0,
        }
    }

    /// Starts task `ti`'s next unit on top of its `TaskEnd` (which `frame` becomes). A
    /// sendmsg runs at once, in this step; other units are pushed.
    fn start_unit(&mut self, cpu: CpuId, ti: TaskId, frame: &mut Frame) -> Step {
        *frame = Frame::TaskEnd(ti);
        match self.unit_frame(ti) {
            Some(Frame::SendMsg(s)) => self.send_msg(cpu, s),
            Some(f) => self.call(cpu, 0, f),
            None => unreachable!("ksoftirqd has no unit of its own"),
        }
    }

    /// `Step::Call(cost)` of `frame`: it waits in the CPU's call slot until the
    /// dispatcher pushes it.
    #[inline(always)]
    pub(crate) fn call(&mut self, cpu: CpuId, cost: u64, frame: Frame) -> Step {
        self.sched.cpus[cpu].call = frame;
        Step::Call(cost)
    }

    /// Dispatches one step of `frame` on `cpu`. The handlers it calls are kept out of
    /// line (`#[inline(never)]`): inlined, they made this dispatcher's prologue and
    /// epilogue, paid on every step, cost more than the calls.
    fn step(&mut self, cpu: CpuId, frame: &mut Frame) -> Step {
        match frame {
            Frame::TaskEnd(_) => self.task_end(cpu, frame),
            Frame::SendMsg(s) => match self.send_msg(cpu, *s) {
                Step::Continue(c) => Step::Done(c),
                Step::Call(c) => {
                    // A tail call: the qdisc run replaces the sendmsg.
                    *frame = self.sched.cpus[cpu].call;
                    Step::Continue(c)
                }
                _ => unreachable!("a sendmsg continues or calls the qdisc run"),
            },
            Frame::QdiscRun { q, quota } => self.qdisc_run_step(cpu, *q, quota),
            Frame::ReleaseSock(s) => self.tcp_release_sock_step(cpu, *s),
            Frame::NetTxAction { started } => {
                self.softirq_enter(cpu, *started);
                let step = self.net_tx_action(cpu, started);
                self.softirq_exit(cpu, step, SOFTIRQ_NET_TX)
            }
            Frame::NetRxAction { started, awaiting } => {
                self.softirq_enter(cpu, *started);
                let step = self.net_rx_action(cpu, started, awaiting);
                self.softirq_exit(cpu, step, SOFTIRQ_NET_RX)
            }
            Frame::NapiPoll { phase, flush_pending, napi, done } => {
                self.napi_poll_step(cpu, *napi, phase, done, flush_pending)
            }
            Frame::DevWork { dev, queue, done } => self.dev_work(cpu, *dev, *queue, done),
            Frame::TcpRead { .. } => self.tcp_read_step(cpu, frame),
            Frame::SockWork { started } => {
                self.softirq_enter(cpu, *started);
                let step = self.sock_work_step(cpu, started);
                self.softirq_exit(cpu, step, SOFTIRQ_TASKLET)
            }
        }
    }
}

/// Indices of [`crate::cpu::Cpu::softirq_ns`]: the vectors darkbuf runs.
pub const SOFTIRQ_NET_TX: usize = 0;
pub const SOFTIRQ_NET_RX: usize = 1;
pub const SOFTIRQ_TASKLET: usize = 2;

impl World {
    /// A softirq handler's first step: mark the CPU's busy time. Softirqs do not nest,
    /// and everything above the handler's frame runs inside it, so the busy time from
    /// here to its last step is the handler's time (`/proc/stat`'s softirq column with
    /// CONFIG_IRQ_TIME_ACCOUNTING, split by vector).
    #[inline]
    fn softirq_enter(&mut self, cpu: CpuId, started: bool) {
        if !started {
            let c = &mut self.sched.cpus[cpu];
            c.softirq_mark = c.busy_ns;
        }
    }

    #[inline]
    fn softirq_exit(&mut self, cpu: CpuId, step: Step, vector: usize) -> Step {
        if let Step::Done(cost) = step {
            let c = &mut self.sched.cpus[cpu];
            // The last step's own cost is booked after it returns.
            let spent = c.busy_ns - c.softirq_mark + if self.now >= self.cfg.start { cost } else { 0 };
            c.softirq_ns[vector] += spent;
        }
        step
    }
}
