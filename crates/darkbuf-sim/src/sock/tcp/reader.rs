//! The receiving application of `receiver = "poll" | "blocking"`: a task that reads
//! its connections with `recvmsg()`.
//!
//! - `poll`: one thread `poll()`s all of a traffic entry's connections and reads each
//!   in turn until EAGAIN (iperf3 before 3.16; the kernel backend's receiver). It runs
//!   again at once while any connection has data (the next `poll()` returns at once),
//!   and sleeps otherwise until `sk_data_ready()` wakes it.
//! - `blocking`: one thread per connection, blocked in `read()` (`sk_wait_data()`).
//!
//! One `read()` mirrors the user side of `tcp_recvmsg()`: `lock_sock()` (segments that
//! come now wait in the backlog), the copy of up to [`APP_READ`] bytes
//! (`tcp_recvmsg_locked()`: `tcp_rcv_space_adjust()` as the copy goes, whole skbs
//! eaten), `tcp_cleanup_rbuf()` (maybe an ACK), then `release_sock()` (the backlog,
//! then `tcp_release_cb()`'s deferred ACK). The copy is one step: the socket is held
//! for its time. The poll reader's read that finds nothing (EAGAIN) still takes the
//! syscall's time; the blocking reader's sleeps and copies when woken, in the same
//! syscall. Either processes the backlog.
//!
//! The connections of one traffic entry are consecutive sockets, so a reader is the
//! range `first..first + n`.

use crate::cpu::{Frame, ReadPhase, Step};

use crate::id::{CpuId, SockId};
use crate::world::World;

/// One `read()`: iperf3's and the kernel backend's 128 KiB buffer.
pub const APP_READ: u32 = 128 * 1024;

impl World {
    /// The sockets `first..first + n` of the reader that reads socket `s`.
    fn tcp_reader_range(&mut self, s: SockId) -> (SockId, u32) {
        let reader = self.socks.tcp(s).rcv.app.as_ref().expect("a modelled receiver").reader;
        match self.sched.tasks[reader].kind {
            crate::cpu::TaskKind::TcpReader { first, n } => (first, n),
            _ => unreachable!("a reader task"),
        }
    }

    /// One step of a reader (`frame` is its `Frame::TcpRead`).
    #[inline(never)]
    pub(crate) fn tcp_read_step(&mut self, cpu: CpuId, frame: &mut Frame) -> Step {
        let Frame::TcpRead { s: at, phase } = frame else { unreachable!("a TcpRead frame") };
        match *phase {
            ReadPhase::Poll => {
                *phase = ReadPhase::Read;
                let (first, n) = self.tcp_reader_range(*at);
                *at = first;
                let c = &self.profile.costs;
                let ns = c.tcp_poll_ns + c.tcp_poll_fd_ns * n as f64;
                Step::Continue(self.cost(ns))
            }
            ReadPhase::End => Step::Done(0),
            ReadPhase::Read => {
                let s = *at;
                let (cost, copied) = self.tcp_recvmsg_copy(s);
                if copied > 0 {
                    *phase = ReadPhase::Release;
                    return Step::Continue(cost);
                }
                // EAGAIN, or the blocking reader goes to sleep (sk_wait_data() releases
                // the socket): the lock taken and released all the same. The poll
                // reader goes on to its next connection; the blocking one has no other,
                // and its unit ends.
                let cost = cost + self.tcp_release_sock(cpu, s, self.now + cost);
                let (first, n) = self.tcp_reader_range(s);
                if s.add(1) >= first.add(n) {
                    *phase = ReadPhase::End;
                } else {
                    *at = s.add(1);
                }
                Step::Continue(cost)
            }
            ReadPhase::Release => {
                let s = *at;
                let now = self.now;
                let tp = self.socks.tcp(s);
                let app = tp.rcv.app.as_ref().expect("a modelled receiver");
                let ack = app.buf.cleanup_rbuf_wants_ack(app.last_copied, app.ack_scheduled, tp.rcv.rcv_wup, tp.rcv.rcv_nxt);
                let mut cost = 0;
                if ack {
                    cost += self.tcp_send_ack(cpu, s, now);
                }
                cost += self.tcp_release_sock(cpu, s, now + cost);
                // Read again until EAGAIN.
                *phase = ReadPhase::Read;
                Step::Continue(cost)
            }
        }
    }

    /// The copy of one `read()` on socket `s`: holds the socket, copies what is queued
    /// in order (at most [`APP_READ`]), eats the skbs read whole, lets DRS measure,
    /// and counts the goodput when the read returns. Returns the CPU time (the
    /// syscall's, and the copy's if any) and the bytes copied.
    fn tcp_recvmsg_copy(&mut self, s: SockId) -> (u64, u32) {
        let (now, start, end) = (self.now, self.cfg.start, self.cfg.end);
        let tp = self.socks.tcp(s);
        let rcv_nxt = tp.rcv.rcv_nxt;
        let app = tp.rcv.app.as_mut().expect("a modelled receiver");
        app.owned = true;
        let copied = rcv_nxt.wrapping_sub(app.buf.copied_seq).min(APP_READ);
        app.last_copied = copied;
        if copied > 0 {
            let to = app.buf.copied_seq.wrapping_add(copied);
            app.eat_to(to);
            app.buf.rcv_space_adjust(rcv_nxt, now / 1000);
        }
        // A blocking read() that finds nothing sleeps in sk_wait_data() and, woken,
        // copies within the same syscall: its cost is the read's that follows.
        let cost = if copied > 0 || app.poll {
            let c = &self.profile.costs;
            self.cost(c.tcp_recvmsg_ns + c.recv_copy_ns_per_kb() * copied as f64 / 1024.0)
        } else {
            0
        };
        // The application has the bytes when read() returns.
        let done = now + cost;
        if copied > 0 && done >= start && done <= end {
            self.socks.tcp(s).stats.goodput(copied as u64, (done - start) / super::SERIES_STEP_NS);
        }
        (cost, copied)
    }

    /// Whether the reader of `first..first + n` runs again at the end of its unit: a
    /// connection has data, or segments in its backlog (`poll()` would return at once;
    /// a blocked `read()` would not have slept).
    #[inline(never)]
    pub(crate) fn tcp_reader_wants_cpu(&mut self, first: SockId, n: u32) -> bool {
        first.run(n).iter().any(|s| {
            let r = &self.socks.tcp(s).rcv;
            r.unread() > 0 || r.app.as_ref().is_some_and(|a| a.has_backlog())
        })
    }
}
