//! The send buffer and the write queue's skbs.
//!
//! - Autotuning: `tcp_init_buffer_space()`'s first `sk_sndbuf`, and `tcp_check_space()`
//!   -> `tcp_new_space()` -> `tcp_should_expand_sndbuf()` -> `tcp_sndbuf_expand()`
//!   (net/ipv4/tcp_input.c). Without `SO_SNDBUF` (iperf3 without `-w`, darkbuf's own
//!   sender) the kernel keeps `sk_sndbuf` at twice the congestion window (BBR: three
//!   times) at a worst-case charge per segment, from `tcp_wmem[1]` up, and at most
//!   `tcp_wmem[2]` (the scenario's `sndbuf`). It grows only when the writer found the
//!   buffer full (`SOCK_NOSPACE`) and the window is not. `so_sndbuf` (iperf3 `-w`)
//!   fixes it at twice its value instead (`SOCK_SNDBUF_LOCK`).
//! - The writer: `tcp_sendmsg_locked()` (net/ipv4/tcp.c) fills the write queue's tail
//!   skb to the size goal (`tcp_xmit_size_goal()`) whatever the buffer holds, and starts
//!   a new skb only while `sk_wmem_queued < sk_sndbuf` (`sk_stream_memory_free()`): a
//!   write may overshoot the buffer by up to one skb. The process is woken once a third
//!   of the buffer is free (`sk_stream_write_space()`, `__sk_stream_is_writeable()`).
//! - The write queue's skbs as `tcp_sendmsg()` built them, which `tcp_write_xmit()` cuts
//!   (`tso_fragment()`) and grows (`tcp_grow_skb()`, net/ipv4/tcp_output.c).
//!
//! Why it matters: with the buffer at about three congestion windows of data, the
//! write queue can run down to its last skb between two writes of the application,
//! and `tcp_grow_skb()` cannot fill that one to the cwnd quota: it goes out short. A
//! kernel trace of one cubic flow at 100 Mbit (`docs/tcp-small-fifo.md`) shows it as
//! every fourth skb short; with `tcp_wmem[1]` at 4 MiB every skb is the quota.
//!
//! Stated simplification: `sk_wmem_queued` counts payload bytes, not the skbs'
//! truesize (the kernel adds each skb's head, about 1.5% of a 64 KB skb).

use super::rcvbuf::TCP_MSS_DEFAULT;
use super::TcpSock;
use crate::id::SockId;
use crate::sock::SockKind;
use crate::world::World;

/// `tcp_wmem[1]`: `sk_sndbuf` of a new socket (`tcp_init_sock()`).
pub const TCP_WMEM_DEFAULT: u64 = 16384;
/// The TCP header with the timestamp option (`tp->tcp_header_len`).
const TCP_HEADER_LEN: u32 = 32;

/// `tcp_sndbuf_expand()`'s charge per segment, one definition for both backends.
pub use darkbuf_model::skb::tcp_sndbuf_per_mss;

impl TcpSock {
    /// `tcp_sndbuf_expand()`: the send buffer for the current window, `sndbuf` if that
    /// is larger; at most `tcp_wmem[2]`.
    pub fn tcp_sndbuf_expand(&self, sndbuf: u64) -> u64 {
        let nr_segs = self.w.cwnd.max(super::TCP_INIT_CWND).max(self.reordering + 1);
        // ca_ops->sndbuf_expand, else two windows (BBR provisions three).
        let factor = self.ca().sndbuf_expand() as u64;
        let sndmem = factor * nr_segs as u64 * self.sndbuf_per_mss as u64;
        if sndbuf < sndmem {
            sndmem.min(self.sndbuf_max)
        } else {
            sndbuf
        }
    }

    /// `tcp_xmit_size_goal()`: what `tcp_sendmsg()` fills each skb to, `sk_gso_max_size`
    /// bounded to half the largest window the receiver advertised
    /// (`tcp_bound_to_half_wnd()`), in whole segments.
    pub fn tcp_xmit_size_goal(&self) -> u32 {
        let cutoff = if self.max_window > TCP_MSS_DEFAULT { self.max_window >> 1 } else { self.max_window };
        let goal = if cutoff > 0 && self.gso_max_size > cutoff { cutoff.max(68 - TCP_HEADER_LEN) } else { self.gso_max_size };
        (goal / self.mss).max(1) * self.mss
    }

    /// One `write()` of at most `len` bytes into the write queue: the tail skb is filled
    /// to the size goal, and new skbs are started while `sk_wmem_queued < sndbuf`.
    /// Returns the bytes taken (0: the writer gets `EAGAIN`).
    pub fn tcp_sendmsg_locked(&mut self, len: u32, sndbuf: u64) -> u32 {
        let goal = self.tcp_xmit_size_goal();
        let mut left = len;
        if let Some(tail_len) = self.tcp_write_queue_tail_len() {
            let copy = goal.saturating_sub(tail_len).min(left);
            let tail_end = self.write_queue.back_mut().expect("a tail");
            *tail_end = tail_end.wrapping_add(copy);
            left -= copy;
            self.wmem_queued += copy as u64;
        }
        while left > 0 && self.wmem_queued < sndbuf {
            let copy = goal.min(left);
            self.write_queue.push_back(self.write_seq.wrapping_add(len - left).wrapping_add(copy));
            left -= copy;
            self.wmem_queued += copy as u64;
        }
        let n = len - left;
        self.write_seq = self.write_seq.wrapping_add(n);
        n
    }

    /// Whether a `write()` would take anything now (see [`Self::tcp_sendmsg_locked`]).
    pub fn tcp_sendmsg_would_take(&self, sndbuf: u64) -> bool {
        if self.wmem_queued < sndbuf {
            return true;
        }
        self.tcp_write_queue_tail_len().is_some_and(|l| l < self.tcp_xmit_size_goal())
    }

    /// The length of the write queue's tail skb (the one `write()` appends to), if the
    /// write queue holds one: a skb that went out is on the retransmit queue, and the
    /// next write starts a new skb.
    fn tcp_write_queue_tail_len(&self) -> Option<u32> {
        let n = self.write_queue.len();
        let tail_end = *self.write_queue.back()?;
        let tail_start = if n > 1 { self.write_queue[n - 2] } else { self.snd_nxt };
        Some(tail_end.wrapping_sub(tail_start))
    }

    /// The write queue's head skb for a send of up to `want` bytes: `tcp_grow_skb()`
    /// first moves data from the next skb into it (never from the tail's future: a
    /// head that is the last skb stays short). Before v6.10 (`grow_skb = false`) the
    /// head stays as `tcp_sendmsg()` or the last `tso_fragment()` left it. Returns the
    /// head's length.
    pub fn tcp_grow_skb(&mut self, want: u32) -> u32 {
        let Some(&head_end) = self.write_queue.front() else { return 0 };
        let head_len = head_end.wrapping_sub(self.snd_nxt);
        if !self.grow_skb || want <= head_len || self.write_queue.len() < 2 {
            return head_len;
        }
        let next_len = self.write_queue[1].wrapping_sub(head_end);
        let n = (want - head_len).min(next_len);
        self.write_queue[0] = head_end.wrapping_add(n);
        if n == next_len {
            // tcp_eat_one_skb(): the next skb is empty.
            self.write_queue.remove(1);
        }
        head_len + n
    }

    /// `tso_fragment()` and `tcp_event_new_data_sent()`: `snd_nxt` moved to `end`; a head
    /// sent whole leaves the write queue, a head sent in part keeps its rest.
    pub fn tcp_write_queue_sent(&mut self, end: u32) {
        if self.write_queue.front() == Some(&end) {
            self.write_queue.pop_front();
        }
    }
}

impl World {
    /// `tcp_check_space()` after an ACK's transmissions: a writer that found the buffer
    /// full gets it grown to the window (`tcp_new_space()`: not while the window is
    /// full), and is woken once a third of it is free (`sk_stream_write_space()`).
    pub(super) fn tcp_check_space(&mut self, s: SockId) {
        let sk = &self.socks[s];
        let SockKind::Tcp(t) = &sk.kind else { return };
        if !sk.blocked {
            return;
        }
        // tcp_should_expand_sndbuf(): not with SO_SNDBUF, nor with the window full.
        let sndbuf = if t.sndbuf_lock || t.in_flight() >= t.w.cwnd { sk.sndbuf } else { t.tcp_sndbuf_expand(sk.sndbuf) };
        let queued = t.wmem_queued;
        let sk = &mut self.socks[s];
        sk.sndbuf = sndbuf;
        if sndbuf.saturating_sub(queued) >= queued / 2 {
            sk.blocked = false;
            let task = sk.task;
            self.wake_task(task);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::sock;
    use super::*;
    use proptest::prelude::*;

    const MSS: u32 = 1448;
    /// The size goal at MTU 1500: 45 segments (`sock()`'s window is not limiting).
    const GOAL: u32 = 45 * MSS;

    #[test]
    fn the_charge_per_segment_follows_the_kernel_build() {
        // roundup_pow_of_two(1460 + 320 + 320 = 2100) + 256; roundup(2036) + 256.
        assert_eq!(tcp_sndbuf_per_mss(1460, 320), 4096 + 256);
        assert_eq!(tcp_sndbuf_per_mss(1460, 256), 2048 + 256);
        // MTU 9000: roundup(8960 + 640) + 256.
        assert_eq!(tcp_sndbuf_per_mss(8960, 320), 16384 + 256);
    }

    /// The development VM's `ss -m` (tb at cwnd 32, 53 and 102, MAX_TCP_HEADER 256),
    /// the first buffer of a distribution's kernel, BBR's three windows, the ceiling,
    /// and no shrinking.
    #[test]
    fn sndbuf_expand_gives_the_kernels_buffers() {
        let mut t = sock();
        assert_eq!(t.tcp_xmit_size_goal(), GOAL);
        t.sndbuf_per_mss = tcp_sndbuf_per_mss(1460, 256);
        for (cwnd, tb) in [(32, 147_456), (53, 244_224), (102, 470_016)] {
            t.w.cwnd = cwnd;
            assert_eq!(t.tcp_sndbuf_expand(TCP_WMEM_DEFAULT), tb);
        }
        t.sndbuf_per_mss = tcp_sndbuf_per_mss(1460, 320);
        t.w.cwnd = 10;
        assert_eq!(t.tcp_sndbuf_expand(TCP_WMEM_DEFAULT), 87_040);
        // At least TCP_INIT_CWND segments.
        t.w.cwnd = 2;
        assert_eq!(t.tcp_sndbuf_expand(TCP_WMEM_DEFAULT), 87_040);
        assert_eq!(t.tcp_sndbuf_expand(100_000), 100_000);
        t.w.cwnd = 1000;
        assert_eq!(t.tcp_sndbuf_expand(TCP_WMEM_DEFAULT), 4 << 20);
        t.sndbuf_max = 1 << 30;
        assert_eq!(t.tcp_sndbuf_expand(TCP_WMEM_DEFAULT), 2 * 1000 * 4352);
        t.ca = Some(crate::sock::tcp::cc::tcp_ca_new(darkbuf_scenario::Cc::Bbr, 0, Default::default()));
        assert_eq!(t.tcp_sndbuf_expand(TCP_WMEM_DEFAULT), 3 * 1000 * 4352);
    }

    /// A 128 KB write into 100 KB of buffer: the first skb is started under the buffer
    /// and filled, the second too (65160 < 100000), the third not: 2 x 65160 taken.
    /// The next write finds the tail full and the buffer over: EAGAIN.
    #[test]
    fn a_write_fills_skbs_while_the_buffer_has_room() {
        let mut t = sock();
        assert_eq!(t.tcp_sendmsg_locked(131_072, 100_000), 2 * GOAL);
        assert_eq!(t.write_queue, [GOAL, 2 * GOAL]);
        assert_eq!((t.write_seq, t.wmem_queued), (2 * GOAL, 2 * GOAL as u64));
        assert!(!t.tcp_sendmsg_would_take(100_000));
        assert_eq!(t.tcp_sendmsg_locked(131_072, 100_000), 0);
        // A larger buffer: two more skbs, and the 752 bytes left of the write start a
        // fifth while 4 x 65160 < 270000.
        assert!(t.tcp_sendmsg_would_take(270_000));
        assert_eq!(t.tcp_sendmsg_locked(131_072, 270_000), 131_072);
        assert_eq!(t.write_queue, [GOAL, 2 * GOAL, 3 * GOAL, 4 * GOAL, 4 * GOAL + 752]);
        // Over the buffer (261392 >= 261000), but the tail has room: the next write
        // fills it only.
        assert!(t.tcp_sendmsg_would_take(261_000));
        assert_eq!(t.tcp_sendmsg_locked(131_072, 261_000), GOAL - 752);
        assert_eq!(*t.write_queue.back().unwrap(), 5 * GOAL);
    }

    /// The head's rest after a send of 25 segments is grown to the next quota from the
    /// next skb; the last skb cannot be grown.
    #[test]
    fn grow_skb_takes_from_the_next_skb_but_not_beyond_the_last() {
        let mut t = sock();
        t.tcp_sendmsg_locked(2 * GOAL, u64::MAX);
        assert_eq!(t.tcp_grow_skb(25 * MSS), GOAL);
        t.snd_nxt = 25 * MSS;
        t.tcp_write_queue_sent(t.snd_nxt);
        assert_eq!(t.write_queue, [GOAL, 2 * GOAL]);
        assert_eq!(t.tcp_grow_skb(25 * MSS), 25 * MSS);
        assert_eq!(t.write_queue, [50 * MSS, 2 * GOAL]);
        t.snd_nxt = 50 * MSS;
        t.tcp_write_queue_sent(t.snd_nxt);
        assert_eq!(t.write_queue, [2 * GOAL]);
        // 40 segments left, all in the last skb: a quota of 60 cannot grow it.
        assert_eq!(t.tcp_grow_skb(60 * MSS), 40 * MSS);
        t.snd_nxt = 2 * GOAL;
        t.tcp_write_queue_sent(t.snd_nxt);
        assert!(t.write_queue.is_empty());
        // A skb that a grow empties is eaten (tcp_eat_one_skb()).
        t.tcp_sendmsg_locked(GOAL + 10 * MSS, u64::MAX);
        assert_eq!(t.tcp_grow_skb(60 * MSS), 55 * MSS);
        assert_eq!(t.write_queue, [2 * GOAL + 55 * MSS]);
    }

    /// Before v6.10 nothing grows the head: a 45-segment skb (GOAL) sent at a TSO goal of
    /// 35 leaves a 10-segment rest, which goes next on its own, then the next 45-segment
    /// skb is cut again: 35, 10, 35, 10 (what a 6.1 guest's `net:net_dev_queue` shows
    /// at 20 Mbit, docs/validation.md).
    #[test]
    fn without_grow_skb_the_rest_of_a_cut_skb_goes_alone() {
        let mut t = sock();
        t.grow_skb = false;
        t.tcp_sendmsg_locked(3 * GOAL, u64::MAX);
        let mut sent = Vec::new();
        while !t.write_queue.is_empty() {
            let head = t.tcp_grow_skb(35 * MSS);
            let len = head.min(35 * MSS);
            t.snd_nxt = t.snd_nxt.wrapping_add(len);
            t.tcp_write_queue_sent(t.snd_nxt);
            sent.push(len / MSS);
        }
        assert_eq!(sent, [35, 10, 35, 10, 35, 10]);
        // The same with tcp_grow_skb(): every skb is the goal until the last skb's data.
        let mut t = sock();
        t.tcp_sendmsg_locked(3 * GOAL, u64::MAX);
        let mut sent = Vec::new();
        while !t.write_queue.is_empty() {
            let len = t.tcp_grow_skb(35 * MSS).min(35 * MSS);
            t.snd_nxt = t.snd_nxt.wrapping_add(len);
            t.tcp_write_queue_sent(t.snd_nxt);
            sent.push(len / MSS);
        }
        assert_eq!(sent, [35, 35, 35, 30]);
    }

    #[derive(Clone, Debug)]
    enum Op {
        Write(u32, u64),
        Send(u32),
        TakeBack,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (1u32..300_000, 1u64..600_000).prop_map(|(n, b)| Op::Write(n, b)),
            (1u32..80).prop_map(Op::Send),
            Just(Op::TakeBack),
        ]
    }

    proptest! {
        /// Writes, sends cut from a grown head and sends taken back keep the write
        /// queue the unsent data exactly: its skbs in order, from snd_nxt to
        /// write_seq, none empty, each at most the size goal unless grown.
        #[test]
        fn the_write_queue_is_the_unsent_data(ops in proptest::collection::vec(op(), 1..200)) {
            let mut t = sock();
            t.write_seq = u32::MAX - 1_000_000;
            t.snd_nxt = t.write_seq;
            let mut sent: Vec<(u32, u32)> = Vec::new();
            for op in ops {
                match op {
                    Op::Write(n, b) => { t.tcp_sendmsg_locked(n, b); }
                    Op::Send(segs) => {
                        let head = t.tcp_grow_skb(segs * MSS);
                        if head > 0 {
                            let len = head.min(segs * MSS);
                            let start = t.snd_nxt;
                            t.snd_nxt = start.wrapping_add(len);
                            t.tcp_write_queue_sent(t.snd_nxt);
                            sent.push((start, t.snd_nxt));
                        }
                    }
                    Op::TakeBack => {
                        if let Some((start, end)) = sent.pop() {
                            t.write_queue.push_front(end);
                            t.snd_nxt = start;
                        }
                    }
                }
                let unsent = t.write_seq.wrapping_sub(t.snd_nxt);
                prop_assert_eq!(t.write_queue.is_empty(), unsent == 0);
                if let Some(&last) = t.write_queue.back() {
                    prop_assert_eq!(last, t.write_seq);
                }
                let mut prev = t.snd_nxt;
                for &end in &t.write_queue {
                    prop_assert!(super::super::after(end, prev), "skb [{prev}, {end}) empty or out of order");
                    prev = end;
                }
            }
        }
    }
}
