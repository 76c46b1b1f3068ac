//! The sending application's hold on its socket: `lock_sock()` and `release_sock()`
//! around each `write()` (`tcp_sendmsg()`), `tcp_add_backlog()` for the ACKs that
//! come meanwhile, `__release_sock()` and `tcp_release_cb()` (net/core/sock.c,
//! net/ipv4/tcp_ipv4.c, tcp_output.c; 6.18).
//!
//! - **Owned.** From its `lock_sock()` to its `release_sock()` the writer owns the
//!   socket (`sock_owned_by_user()`). Softirq work for the socket does not run then:
//!   an ACK waits in the socket's backlog (`tcp_v4_rcv()` -> `tcp_add_backlog()`), and
//!   TSQ's tasklet, the pacing timer and the retransmit timer set a deferred flag
//!   (`TCP_TSQ_DEFERRED`, `TCP_WRITE_TIMER_DEFERRED`) instead of their work.
//! - **Released.** `release_sock()` runs on the writer's CPU: `__release_sock()` takes
//!   the whole backlog and processes it (`tcp_v4_do_rcv()`: `tcp_ack()` and the
//!   transmits it clocks), again until the backlog is empty, the socket still owned;
//!   then `tcp_release_cb()` runs the deferred work, and the socket is free.
//! - **The spinlock.** Softirq work on a socket holds `sk_lock.slock`
//!   (`bh_lock_sock()`) for its whole time, and so does `release_sock()`. Whoever
//!   comes while it is held spins: an ACK on another CPU, TSQ's tasklet, and the
//!   writer's `lock_sock()`. `slock_until` is when it is free again.
//!
//! Without this (`lock_sock = false`, the simulator's earlier model), every ACK is
//! processed on the CPU it arrives on, at once. Two CPUs then computed transmits of
//! one socket over overlapping times, and the later sequence could reach the qdisc
//! first (docs/fq-100g.md).
//!
//! `tcp_add_backlog()` coalesces an ACK with the backlog's last one when their TCP
//! options are the same bytes (timestamps and SACK blocks) and their ECE is the same
//! (`TcpExtTCPBacklogCoalesce`): the tail takes the newer cumulative ACK and window.
//! The backlog's limit (`sk_rcvbuf` x 2 + `sk_sndbuf` / 2 + 64 KB, `TCPBacklogDrop`)
//! is far above what a write's worth of ACKs holds and is not modelled.
//!
//! Also not modelled, each small at these writes:
//! - `sk_flush_backlog()` inside `tcp_sendmsg_locked()`, after every 16 new skbs of one
//!   write: a 128 KB write makes two or three;
//! - the writer's spin on the spinlock counts as owned already (an ACK that comes
//!   during the spin waits in the backlog; in the kernel it may win the spinlock);
//! - softirqs on the writer's own CPU run between its steps (`sched.rs`), never inside
//!   its write, so only ACKs on other CPUs meet the owned socket;
//! - TSecr is the ms of the echoed segment's `skb_mstamp_ns` (`recv.rs`), the kernel's
//!   `ts_recent` without its random per-connection offset, which moves no ms boundary.

use super::recv::AckRec;
use super::{before, work};
use crate::cpu::Step;
use crate::id::{CpuId, SockId};
use crate::world::World;

/// The sender's socket lock and its backlog.
pub struct SockLock {
    /// The scenario's `lock_sock`: off, nothing below is used.
    pub enabled: bool,
    /// `sock_owned_by_user()`: the writer is between `lock_sock()` and the end of
    /// `release_sock()`.
    pub owned: bool,
    /// When `sk_lock.slock` is free again (ns): softirq work or `tcp_release_cb()`
    /// holds it until then.
    pub slock_until: u64,
    /// `sk_backlog`: the ACKs that came while the writer owned the socket.
    backlog: Vec<AckRec>,
    /// Work bits (`work::*`) deferred to `tcp_release_cb()`.
    pub deferred: u8,
    /// ACKs added to the backlog, those coalesced included, and those coalesced
    /// (`TcpExtTCPBacklogCoalesce`); work deferred to `tcp_release_cb()`.
    pub backlog_acks: u64,
    pub backlog_coalesce: u64,
    pub deferred_work: u64,
}

/// The work bits that take the sender's socket, which an owner defers: TSQ's handler
/// (and the pacing timer's), and the retransmit timer's three kinds.
const SENDER_WORK: u8 = work::TSQ | work::RTO | work::TLP | work::PROBE0 | work::REO;

/// Whether work `bits` take the sending socket (else only the receiving one's delayed
/// ACK, at the far end).
pub fn is_sender_work(bits: u8) -> bool {
    bits & SENDER_WORK != 0
}

impl SockLock {
    pub fn new(enabled: bool) -> SockLock {
        SockLock {
            enabled,
            owned: false,
            slock_until: 0,
            backlog: Vec::new(),
            deferred: 0,
            backlog_acks: 0,
            backlog_coalesce: 0,
            deferred_work: 0,
        }
    }

    /// `tcp_add_backlog()` of an ACK: coalesced with the backlog's last ACK when its
    /// options are the same bytes and its flags the same, else queued.
    pub fn tcp_add_backlog(&mut self, rec: AckRec) {
        self.backlog_acks += 1;
        if let Some(tail) = self.backlog.last_mut() {
            if tail.coalesces_with(&rec) {
                if !before(rec.ack, tail.ack) {
                    tail.ack = rec.ack;
                    tail.win = rec.win;
                }
                self.backlog_coalesce += 1;
                return;
            }
        }
        self.backlog.push(rec);
    }

    /// What a softirq handler that needs the socket does with work `bits` now: the
    /// bits it may run (the rest are deferred to `tcp_release_cb()` while the writer
    /// owns the socket).
    pub fn softirq_bits(&mut self, bits: u8) -> u8 {
        if !self.owned || bits & SENDER_WORK == 0 {
            return bits;
        }
        self.deferred |= bits & SENDER_WORK;
        self.deferred_work += 1;
        bits & !SENDER_WORK
    }

    /// How long work arriving at `t` spins on `sk_lock.slock` before it holds it.
    pub fn spin(&self, t: u64) -> u64 {
        self.slock_until.saturating_sub(t)
    }

    /// Softirq work held the spinlock from `t` for `cost` ns.
    pub fn hold(&mut self, t: u64, cost: u64) {
        if self.enabled {
            self.slock_until = self.slock_until.max(t + cost);
        }
    }
}

impl AckRec {
    /// Whether `tcp_add_backlog()` coalesces `next` into this ACK, the backlog's last:
    /// the same ECE (the flags ECE, CWR and AE must not differ) and the same option
    /// bytes (`memcmp()` of timestamps and SACK blocks, so also the same count). Pure
    /// ACKs from one receiver share their sequence and DSCP and carry no SYN, RST or
    /// URG, which the kernel checks too.
    fn coalesces_with(&self, next: &AckRec) -> bool {
        let n = self.n_sacks as usize;
        self.ece == next.ece
            && self.tsval_ms == next.tsval_ms
            && self.tsecr_ms == next.tsecr_ms
            && self.n_sacks == next.n_sacks
            && self.sacks[..n] == next.sacks[..n]
    }
}

impl World {
    /// `lock_sock()` by the writer of socket `s` at the start of its `write()`:
    /// returns how long it spins on the spinlock first. The socket is owned from now.
    pub(crate) fn tcp_lock_sock(&mut self, s: SockId) -> u64 {
        let now = self.now;
        let lock = &mut self.socks.tcp(s).lock;
        if !lock.enabled {
            return 0;
        }
        lock.owned = true;
        lock.spin(now)
    }

    /// One step of `release_sock()` by the writer of `s` on `cpu`
    /// (`Frame::ReleaseSock`): the backlog as it is now, processed as
    /// `__release_sock()` does (`Continue`, and the next step looks again), or, once
    /// it is empty, `tcp_release_cb()` and the end of the ownership (`Done`).
    #[inline(never)]
    pub(crate) fn tcp_release_sock_step(&mut self, cpu: CpuId, s: SockId) -> Step {
        let now = self.now;
        if !self.socks.tcp(s).lock.backlog.is_empty() {
            // Out of the socket while tcp_ack() runs, back (empty, its capacity kept) after.
            let mut backlog = std::mem::take(&mut self.socks.tcp(s).lock.backlog);
            let mut cost = 0;
            for rec in backlog.drain(..) {
                cost += self.tcp_ack_rec(cpu, s, rec, now + cost);
            }
            self.socks.tcp(s).lock.backlog = backlog;
            return Step::Continue(cost);
        }
        // tcp_release_cb(): TCP_TSQ_DEFERRED (tcp_tsq_write()), then
        // TCP_WRITE_TIMER_DEFERRED (tcp_write_timer_handler()), under the spinlock.
        let bits = std::mem::take(&mut self.socks.tcp(s).lock.deferred);
        let cost = if bits != 0 { self.tcp_sock_work(cpu, s, bits, now) } else { 0 };
        let lock = &mut self.socks.tcp(s).lock;
        lock.owned = false;
        lock.hold(now, cost);
        Step::Done(cost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(ack: u32, tsval_ms: u32, sacks: &[(u32, u32)]) -> AckRec {
        let mut rec = AckRec { ack, tsval_ms, tsecr_ms: 7, n_sacks: sacks.len() as u8, ..AckRec::default() };
        rec.sacks[..sacks.len()].copy_from_slice(sacks);
        rec
    }

    #[test]
    fn acks_with_the_same_options_coalesce_into_the_newest() {
        let mut l = SockLock::new(true);
        l.tcp_add_backlog(AckRec { win: 100, ..ack(1000, 5, &[]) });
        l.tcp_add_backlog(AckRec { win: 200, ..ack(3000, 5, &[]) });
        // An older cumulative ACK coalesces but leaves the newer one and its window.
        l.tcp_add_backlog(AckRec { win: 50, ..ack(2000, 5, &[]) });
        assert_eq!(l.backlog.len(), 1);
        assert_eq!((l.backlog[0].ack, l.backlog[0].win), (3000, 200));
        assert_eq!((l.backlog_acks, l.backlog_coalesce), (3, 2));
    }

    #[test]
    fn a_changed_option_or_flag_starts_a_new_backlog_skb() {
        let mut l = SockLock::new(true);
        l.tcp_add_backlog(ack(1000, 5, &[]));
        // The receiver's clock moved on: TSval differs.
        l.tcp_add_backlog(ack(2000, 6, &[]));
        // TSecr differs.
        l.tcp_add_backlog(AckRec { tsecr_ms: 8, ..ack(3000, 6, &[]) });
        // A SACK block appears, then changes.
        l.tcp_add_backlog(AckRec { tsecr_ms: 8, ..ack(3000, 6, &[(5000, 6000)]) });
        l.tcp_add_backlog(AckRec { tsecr_ms: 8, ..ack(3000, 6, &[(5000, 7000)]) });
        // ECE differs.
        l.tcp_add_backlog(AckRec { tsecr_ms: 8, ece: true, ..ack(3000, 6, &[(5000, 7000)]) });
        // The same SACK block again, and ECE: coalesced.
        l.tcp_add_backlog(AckRec { tsecr_ms: 8, ece: true, ..ack(3000, 6, &[(5000, 7000)]) });
        assert_eq!(l.backlog.len(), 6);
        assert_eq!(l.backlog_coalesce, 1);
    }

    #[test]
    fn an_owner_defers_the_senders_work_and_not_the_receivers() {
        let mut l = SockLock::new(true);
        assert_eq!(l.softirq_bits(work::TSQ | work::DELACK), work::TSQ | work::DELACK);
        l.owned = true;
        assert_eq!(l.softirq_bits(work::TSQ | work::DELACK), work::DELACK);
        assert_eq!(l.softirq_bits(work::RTO), 0);
        assert_eq!(l.deferred, work::TSQ | work::RTO);
        assert_eq!(l.softirq_bits(work::DELACK), work::DELACK);
        assert_eq!(l.deferred_work, 2);
    }

    #[test]
    fn the_spinlock_is_held_until_the_latest_holder_ends() {
        let mut l = SockLock::new(true);
        l.hold(1_000, 500);
        assert_eq!((l.spin(1_200), l.spin(1_500), l.spin(2_000)), (300, 0, 0));
        // A shorter hold that ends earlier does not shorten it.
        l.hold(1_100, 100);
        assert_eq!(l.spin(1_200), 300);
        // Off, nothing is held.
        let mut off = SockLock::new(false);
        off.hold(1_000, 500);
        assert_eq!(off.spin(1_200), 0);
    }
}
