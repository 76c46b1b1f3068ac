//! The receive buffer and the window a receiver advertises, for a connection whose
//! receiving application is modelled (`receiver = "poll" | "blocking"`).
//!
//! Mirrors, from net/ipv4/tcp_input.c, tcp_output.c and tcp.c (v6.18):
//! - the window at connection setup: `tcp_select_initial_window()` and
//!   `tcp_init_buffer_space()`;
//! - per data skb: `tcp_measure_rcv_mss()` (with the `scaling_ratio` it learns from the
//!   skb's len/truesize), `tcp_rcv_rtt_measure()` and `tcp_rcv_rtt_measure_ts()`, and
//!   `tcp_grow_window()`;
//! - the window itself: `__tcp_select_window()` (the window never shrinks:
//!   `tcp_shrink_window` = 0) and `tcp_select_window()`;
//! - at each read: `tcp_rcv_space_adjust()` with `tcp_rcvbuf_grow()` (DRS), and
//!   `__tcp_cleanup_rbuf()`'s decision to send an ACK.
//!
//! DRS and its RTT estimate are those of v6.19 by default, or of v6.7-v6.15
//! ([`Drs::V6_15`], the tcp_input.c of those releases: `tcp_rcv_rtt_update()`,
//! `tcp_rtt_tsopt_us()`, `tcp_rcv_space_adjust()`).
//!
//! The sysctls are the kernel's defaults: `tcp_rmem[1]` = 131072 (the initial
//! `sk_rcvbuf`), `tcp_app_win` = 31, `tcp_moderate_rcvbuf` = 1,
//! `tcp_rcvbuf_low_rtt` = 1000 µs, `rmem_max` = 212992, no memory pressure.
//! `tcp_rmem[2]` is the scenario's `rcvbuf`.
//!
//! Why it matters: once `rcv_ssthresh` has grown to the window clamp, any unread data
//! makes `__tcp_select_window()` smaller than the window last advertised, and
//! `__tcp_ack_snd_check()` then leaves the ACK to the application's read
//! (`tcp_cleanup_rbuf()`). On a host with its own receiver the ACKs, and with them the
//! senders' next transmissions, follow the reader.

/// `tcp_rmem[1]`: `sk_rcvbuf` of a new socket.
pub const TCP_RMEM_DEFAULT: u32 = 131_072;
/// `net.core.rmem_max`'s default (`SK_RMEM_MAX`), which the window scale allows for.
const RMEM_MAX: u32 = 212_992;
/// `TCP_RMEM_TO_WIN_SCALE`.
const TCP_RMEM_TO_WIN_SCALE: u32 = 8;
/// `TCP_DEFAULT_SCALING_RATIO`: a 50% len/truesize until the first full-sized skb.
const TCP_DEFAULT_SCALING_RATIO: u8 = 1 << (TCP_RMEM_TO_WIN_SCALE - 1);
/// `TCP_MAX_WSCALE`.
const TCP_MAX_WSCALE: u32 = 14;
/// `TCP_INIT_CWND`, for the first `rcvq_space.space`.
const TCP_INIT_CWND: u32 = 10;
/// `TCP_MSS_DEFAULT` and `TCP_MIN_MSS`: bounds of the first `rcv_mss` guess.
pub(super) const TCP_MSS_DEFAULT: u32 = 536;
const TCP_MIN_MSS: u32 = 88;
/// `SOCK_MIN_RCVBUF`: `tcp_set_window_clamp()` keeps at least half of it.
const SOCK_MIN_RCVBUF: u32 = 2048 + 256 + 1472;
/// `tcp_app_win`: 1/2^31 of the buffer (nothing) kept back for the application.
const TCP_APP_WIN: u32 = 31;
/// `tcp_rcvbuf_low_rtt` (µs).
const TCP_RCVBUF_LOW_RTT_US: u64 = 1000;

use darkbuf_scenario::Drs;

/// The receiver's buffer and window state (`struct tcp_sock`'s and `struct sock`'s
/// fields of the same names).
#[derive(Clone, Debug)]
pub struct RcvBuf {
    /// `sk_rcvbuf` and its ceiling `tcp_rmem[2]`.
    pub rcvbuf: u32,
    rmem_max: u32,
    /// `sk_rmem_alloc`: the truesize of the skbs in the receive and out-of-order queues.
    pub rmem_alloc: u32,
    /// `scaling_ratio`: len/truesize x 256 of the skbs, learnt from a full-sized one.
    pub scaling_ratio: u8,
    pub window_clamp: u32,
    pub rcv_ssthresh: u32,
    /// `rcv_wnd`: the window last advertised (bytes, before scaling).
    pub rcv_wnd: u32,
    pub rcv_wscale: u32,
    /// `icsk_ack.rcv_mss`: the receiver's guess of the sender's MSS.
    pub rcv_mss: u32,
    pub advmss: u32,
    /// `copied_seq`: what the application has read.
    pub copied_seq: u32,
    /// `rcvq_space`: DRS's last measurement (bytes per RTT, where and when it began).
    pub space: u32,
    space_seq: u32,
    space_time_us: u64,
    /// `rcv_rtt_est`: the receiver's RTT estimate (µs x 8), and the window measurement
    /// under way (`tcp_rcv_rtt_measure()`), and the last TSecr measured.
    pub rcv_rtt_us8: u32,
    rtt_seq: u32,
    rtt_time_us: u64,
    rtt_last_tsecr: Option<u32>,
    /// Which kernel's DRS.
    drs: Drs,
}

/// `__tcp_win_from_space()`.
fn win_from_space(ratio: u8, space: i64) -> i64 {
    (space * ratio as i64) >> TCP_RMEM_TO_WIN_SCALE
}

/// `__tcp_space_from_win()`.
fn space_from_win(ratio: u8, win: u64) -> u64 {
    (win << TCP_RMEM_TO_WIN_SCALE) / ratio as u64
}

impl RcvBuf {
    /// The state once the connection is established: `tcp_select_initial_window()` on
    /// the SYN-ACK, then `tcp_init_buffer_space()` and `tcp_initialize_rcv_mss()`.
    /// `advmss` is the MSS the receiver announced, less the timestamp option (the
    /// sender's `mss_cache`); `rmem_max` is `tcp_rmem[2]`.
    pub fn new(advmss: u32, rmem_max: u32, drs: Drs) -> RcvBuf {
        let rcvbuf = TCP_RMEM_DEFAULT;
        let ratio = TCP_DEFAULT_SCALING_RATIO;
        // tcp_select_initial_window(tcp_full_space(), mss, ...) with no clamp set.
        let mut window_clamp: u32 = u16::MAX as u32 * (1 << TCP_MAX_WSCALE);
        let mut space = (win_from_space(ratio, rcvbuf as i64).max(0) as u32).min(window_clamp);
        if space > advmss {
            space = space / advmss * advmss;
        }
        let rcv_wnd = space;
        let scale_space = space.max(rmem_max).max(RMEM_MAX).min(window_clamp);
        let rcv_wscale = (scale_space.ilog2().saturating_sub(15)).min(TCP_MAX_WSCALE);
        window_clamp = window_clamp.min((u16::MAX as u32) << rcv_wscale);
        // tcp_init_buffer_space() with tcp_app_win = 31: the clamp at the full space,
        // less one segment's reservation.
        let maxwin = win_from_space(ratio, rcvbuf as i64) as u32;
        if window_clamp >= maxwin {
            window_clamp = maxwin;
            if maxwin > 4 * advmss {
                window_clamp = (maxwin - (maxwin >> TCP_APP_WIN)).max(4 * advmss);
            }
        }
        if window_clamp > 2 * advmss && window_clamp + advmss > maxwin {
            window_clamp = (2 * advmss).max(maxwin - advmss);
        }
        let rcv_ssthresh = rcv_wnd.min(window_clamp);
        // tcp_initialize_rcv_mss().
        let rcv_mss = advmss.min(rcv_wnd / 2).clamp(TCP_MIN_MSS, TCP_MSS_DEFAULT);
        RcvBuf {
            rcvbuf,
            rmem_max,
            rmem_alloc: 0,
            scaling_ratio: ratio,
            window_clamp,
            rcv_ssthresh,
            rcv_wnd,
            rcv_wscale,
            rcv_mss,
            advmss,
            copied_seq: 0,
            space: rcv_ssthresh.min(rcv_wnd).min(TCP_INIT_CWND * advmss),
            space_seq: 0,
            space_time_us: 0,
            rcv_rtt_us8: 0,
            rtt_seq: 0,
            rtt_time_us: 0,
            rtt_last_tsecr: None,
            drs,
        }
    }

    /// `tcp_space()`: the window the free part of the buffer is worth (may be < 0).
    pub fn tcp_space(&self) -> i64 {
        win_from_space(self.scaling_ratio, self.rcvbuf as i64 - self.rmem_alloc as i64)
    }

    /// `tcp_full_space()`.
    pub fn tcp_full_space(&self) -> i64 {
        win_from_space(self.scaling_ratio, self.rcvbuf as i64)
    }

    /// `tcp_set_window_clamp()` to a larger or smaller clamp.
    fn set_window_clamp(&mut self, val: u32) {
        let new = val.max(SOCK_MIN_RCVBUF / 2);
        if new == self.window_clamp {
            return;
        }
        let old = self.window_clamp;
        self.window_clamp = new;
        if new < old {
            // __tcp_adjust_rcv_ssthresh() without reserved memory.
            self.rcv_ssthresh = self.rcv_ssthresh.min(new);
        } else {
            self.rcv_ssthresh = self.rcv_ssthresh.max(self.rcv_wnd.min(new));
        }
    }

    /// `tcp_clamp_window()`: the queue holds more than the buffer (the skbs' truesize
    /// outgrew the window's estimate of it): the buffer grows to what is held, up to
    /// `tcp_rmem[2]`, and a buffer still too small starts the window over from two
    /// segments.
    pub fn clamp_window(&mut self) {
        if self.rcvbuf < self.rmem_max {
            self.rcvbuf = self.rmem_alloc.min(self.rmem_max).max(self.rcvbuf);
        }
        if self.rmem_alloc > self.rcvbuf {
            self.rcv_ssthresh = self.window_clamp.min(2 * self.advmss);
        }
    }

    /// `tcp_measure_rcv_mss()` for a data skb of `len` payload bytes, `gso_size` per
    /// segment (its `len` when it is one segment) and `truesize`: a full-sized skb of
    /// a new size teaches the scaling ratio, and with it the window clamp. Returns
    /// nothing; the smaller-segment branch (`last_seg_size`) is not modelled: every
    /// segment of a bulk flow is full-sized but the tail of a write.
    pub fn measure_rcv_mss(&mut self, len: u32, gso_size: u32, truesize: u32) {
        if gso_size < self.rcv_mss {
            return;
        }
        if gso_size != self.rcv_mss {
            let val = ((len as u64) << TCP_RMEM_TO_WIN_SCALE) / truesize.max(1) as u64;
            let old = self.scaling_ratio;
            self.scaling_ratio = val.clamp(1, 255) as u8;
            if old != self.scaling_ratio {
                let clamp = win_from_space(self.scaling_ratio, self.rcvbuf as i64).max(0) as u32;
                self.set_window_clamp(clamp);
                if self.window_clamp < self.space {
                    self.space = self.window_clamp;
                }
            }
        }
        self.rcv_mss = gso_size.min(self.advmss);
    }

    /// `tcp_rcv_rtt_update()`: `sample_us` lowers the estimate, or (not `win_dep`, a
    /// timestamp sample) is smoothed in with gain 1/8. v6.15 smooths every timestamp
    /// sample in, a lower one too, and whatever the receive queue holds.
    fn rcv_rtt_update(&mut self, sample_us: u32, win_dep: bool, queue_empty: bool) {
        let old = self.rcv_rtt_us8;
        let m = sample_us.saturating_mul(8);
        if self.drs == Drs::V6_15 && old != 0 {
            self.rcv_rtt_us8 = if win_dep { m.min(old) } else { old - (old >> 3) + sample_us };
            return;
        }
        let new = if old == 0 || m < old {
            m
        } else {
            if win_dep || !queue_empty {
                return;
            }
            old - (old >> 3) + sample_us
        };
        self.rcv_rtt_us8 = new;
    }

    /// `tcp_rcv_rtt_measure()`: the time one advertised window takes to arrive, an RTT
    /// estimate without timestamps (it only ever lowers the estimate).
    pub fn rcv_rtt_measure(&mut self, rcv_nxt: u32, now_us: u64) {
        if self.rtt_time_us != 0 {
            if super::before(rcv_nxt, self.rtt_seq) {
                return;
            }
            let delta = now_us.saturating_sub(self.rtt_time_us).max(1);
            self.rcv_rtt_update(delta.min(u32::MAX as u64) as u32, true, false);
        }
        self.rtt_seq = rcv_nxt.wrapping_add(self.rcv_wnd);
        self.rtt_time_us = now_us;
    }

    /// `tcp_rcv_rtt_measure_ts()`: a data skb of at least `rcv_mss` bytes echoing
    /// `tsecr` (the receiver's ms clock when it sent the ACK the sender had last seen)
    /// at `now_ms`: a sample of the RTT as the receiver sees it, in whole ms
    /// (`TCP_TS_HZ` = 1000; 0 ms gives none, and a 1 ms sample before v6.16:
    /// `tcp_rtt_tsopt_us()`'s `if (!delta) delta = 1`).
    pub fn rcv_rtt_measure_ts(&mut self, payload: u32, tsecr: u32, now_ms: u32, queue_empty: bool) {
        if self.rtt_last_tsecr == Some(tsecr) {
            return;
        }
        self.rtt_last_tsecr = Some(tsecr);
        if payload >= self.rcv_mss {
            let mut delta = now_ms.wrapping_sub(tsecr);
            if delta == 0 && self.drs == Drs::V6_15 {
                delta = 1;
            }
            if delta > 0 && delta < i32::MAX as u32 / 1000 {
                self.rcv_rtt_update(delta * 1000, false, queue_empty);
            }
        }
    }

    /// `tcp_grow_window()` for an skb of `len` payload bytes and `truesize` (`adjust`
    /// and the page-frag truesize correction left out). Returns true when it grew
    /// `rcv_ssthresh`, which the kernel marks with a quick ACK (`icsk_ack.quick |= 1`).
    pub fn grow_window(&mut self, len: u32, truesize: u32) -> bool {
        let room = (self.window_clamp as i64).min(self.tcp_space()) - self.rcv_ssthresh as i64;
        if room <= 0 {
            return false;
        }
        let incr = if win_from_space(self.scaling_ratio, truesize as i64) <= len as i64 {
            2 * self.advmss as i64
        } else {
            self.grow_window_slow(len, truesize)
        };
        if incr == 0 {
            return false;
        }
        let incr = incr.max(2 * len as i64);
        self.rcv_ssthresh += room.min(incr) as u32;
        true
    }

    /// `__tcp_grow_window()`: the slow part of check #2, for an skb whose overhead is
    /// large against its length.
    fn grow_window_slow(&self, len: u32, truesize: u32) -> i64 {
        let mut truesize = win_from_space(self.scaling_ratio, truesize as i64) >> 1;
        let mut window = win_from_space(self.scaling_ratio, self.rmem_max as i64) >> 1;
        while self.rcv_ssthresh as i64 <= window {
            if truesize <= len as i64 {
                return 2 * self.rcv_mss as i64;
            }
            truesize >>= 1;
            window >>= 1;
        }
        0
    }

    /// `__tcp_select_window()` with the window never shrinking: the window the buffer
    /// allows now, and whether it ended quick-ACK mode (`icsk_ack.quick = 0`: less than
    /// half of the buffer is free).
    pub fn tcp_select_window_raw(&self) -> (u32, bool) {
        let free_space = self.tcp_space();
        let allowed = self.tcp_full_space();
        let full_space = (self.window_clamp as i64).min(allowed);
        let mut mss = self.rcv_mss as i64;
        if mss > full_space {
            mss = full_space;
            if mss <= 0 {
                return (0, false);
            }
        }
        let mut free = free_space;
        let mut quick_off = false;
        if free < full_space >> 1 {
            quick_off = true;
            free = free.max(0) >> self.rcv_wscale << self.rcv_wscale;
            if free < allowed >> 4 || free < mss {
                return (0, true);
            }
        }
        let free = free.min(self.rcv_ssthresh as i64);
        if self.rcv_wscale > 0 {
            let unit = 1i64 << self.rcv_wscale;
            return (((free + unit - 1) / unit * unit) as u32, quick_off);
        }
        // No scaling: a multiple of the MSS, kept while within one MSS of the free space.
        let window = self.rcv_wnd as i64;
        let w = if window <= free - mss || window > free {
            free / mss * mss
        } else if mss == full_space && free > window + (full_space >> 1) {
            free
        } else {
            window
        };
        (w as u32, quick_off)
    }

    /// `tcp_receive_window()`: what is left of the window last advertised.
    pub fn receive_window(&self, rcv_wup: u32, rcv_nxt: u32) -> u32 {
        let win = rcv_wup.wrapping_add(self.rcv_wnd).wrapping_sub(rcv_nxt) as i32;
        win.max(0) as u32
    }

    /// `tcp_select_window()` as an ACK is sent: the new window, never less than what
    /// is left of the last one, becomes `rcv_wnd`. Returns the window the ACK carries
    /// in bytes (the 16-bit field times the scale), and whether quick-ACK mode ended.
    pub fn tcp_select_window(&mut self, rcv_wup: u32, rcv_nxt: u32) -> (u32, bool) {
        let cur = self.receive_window(rcv_wup, rcv_nxt);
        let (mut new_win, quick_off) = self.tcp_select_window_raw();
        if new_win < cur {
            let unit = 1u32 << self.rcv_wscale;
            new_win = cur.div_ceil(unit) * unit;
        }
        self.rcv_wnd = new_win;
        let field = new_win.min((u16::MAX as u32) << self.rcv_wscale) >> self.rcv_wscale;
        (field << self.rcv_wscale, quick_off)
    }

    /// `tcp_rcv_space_adjust()` after the application read up to `copied_seq`, at
    /// `now_us`, with `rcv_nxt` received: once per receiver RTT, DRS compares what was
    /// read in it with `rcvq_space.space` and grows the buffer when more was.
    pub fn rcv_space_adjust(&mut self, rcv_nxt: u32, now_us: u64) {
        if self.rcv_rtt_us8 == 0 {
            return;
        }
        let time = now_us.saturating_sub(self.space_time_us);
        if time < (self.rcv_rtt_us8 >> 3) as u64 {
            return;
        }
        let copied = self.copied_seq.wrapping_sub(self.space_seq) as i64;
        match self.drs {
            Drs::V6_19 => {
                let inq = rcv_nxt.wrapping_sub(self.copied_seq) as i64;
                if copied - inq > self.space as i64 {
                    self.rcvbuf_grow((copied - inq) as u32, 0);
                }
            }
            Drs::V6_15 if copied > self.space as i64 => self.rcv_space_grow_v6_15(copied as u32),
            Drs::V6_15 => {}
        }
        self.space_seq = self.copied_seq;
        self.space_time_us = now_us;
    }

    /// v6.15's `tcp_rcv_space_adjust()` once `copied` bytes were read in an RTT, more
    /// than `rcvq_space.space`: the buffer for `2 x copied + 16 x advmss`, grown by
    /// twice the rate's relative increase, up to `tcp_rmem[2]`.
    fn rcv_space_grow_v6_15(&mut self, copied: u32) {
        let old = self.space.max(1) as u64;
        let mut rcvwin = ((copied as u64) << 1) + 16 * self.advmss as u64;
        let grow = rcvwin * (copied as u64 - old) / old;
        rcvwin += grow << 1;
        self.rcvbuf_for_window(rcvwin);
        self.space = copied;
    }

    /// Both generations' last step: `sk_rcvbuf` grows (never shrinks) to the buffer a
    /// window of `rcvwin` bytes needs (`tcp_space_from_win()`), up to `tcp_rmem[2]`, and
    /// the window clamp follows.
    fn rcvbuf_for_window(&mut self, rcvwin: u64) {
        let rcvbuf = space_from_win(self.scaling_ratio, rcvwin).min(self.rmem_max as u64) as u32;
        if rcvbuf > self.rcvbuf {
            self.rcvbuf = rcvbuf;
            self.window_clamp = win_from_space(self.scaling_ratio, rcvbuf as i64) as u32;
        }
    }

    /// Whether out-of-order data grows the buffer (`tcp_data_queue_ofo()` calls
    /// `tcp_rcvbuf_grow()` since v6.16).
    pub fn grows_for_ooo(&self) -> bool {
        self.drs == Drs::V6_19
    }

    /// `tcp_rcvbuf_grow()` to `newval` bytes per RTT, `ooo_span` bytes of
    /// out-of-order data above `rcv_nxt` included: the buffer for twice that (DRS is one
    /// RTT late), more for a low RTT or a rate still doubling, up to `tcp_rmem[2]`; the
    /// window clamp follows.
    pub fn rcvbuf_grow(&mut self, newval: u32, ooo_span: u32) {
        let old = self.space;
        self.space = newval;
        let mut rcvwin = (newval as u64) << 1;
        let rtt_us = (self.rcv_rtt_us8 >> 3) as u64;
        let grow = if rtt_us < TCP_RCVBUF_LOW_RTT_US {
            rcvwin * rtt_us / TCP_RCVBUF_LOW_RTT_US
        } else {
            (rcvwin << 1) * (newval as u64).saturating_sub(old as u64) / old.max(1) as u64
        };
        rcvwin += grow + ooo_span as u64;
        self.rcvbuf_for_window(rcvwin);
    }

    /// `__tcp_cleanup_rbuf()`'s decision after a read of `copied` bytes, with an ACK
    /// scheduled (`ack_scheduled`) or not: ACK what the softirq left (more than one
    /// segment since the last ACK), or a window that the read at least doubled.
    /// (`ICSK_ACK_PUSHED`, for a sub-MSS tail with PSH, is not modelled.)
    pub fn cleanup_rbuf_wants_ack(&self, copied: u32, ack_scheduled: bool, rcv_wup: u32, rcv_nxt: u32) -> bool {
        if ack_scheduled && rcv_nxt.wrapping_sub(rcv_wup) > self.rcv_mss {
            return true;
        }
        if copied == 0 {
            return false;
        }
        let now = self.receive_window(rcv_wup, rcv_nxt);
        if 2 * now as u64 <= self.window_clamp as u64 {
            let (new_window, _) = self.tcp_select_window_raw();
            return new_window != 0 && new_window as u64 >= 2 * now as u64;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection of MSS 1448 (MTU 1500 with timestamps) and tcp_rmem[2] = 6 MiB,
    /// as `ss -tmi` shows it on the receiving end after the handshake (kernel 6.18,
    /// the veth small-FIFO scenario): rb131072, wscale 7, rcv_space 14480,
    /// rcv_ssthresh 64088, and the sender's snd_wnd 65160.
    #[test]
    fn the_initial_window_is_the_kernels() {
        let b = RcvBuf::new(1448, 6 << 20, Drs::V6_19);
        assert_eq!(b.rcvbuf, 131_072);
        assert_eq!(b.rcv_wnd, 65_160); // rounddown(65536, 1448)
        assert_eq!(b.rcv_wscale, 7); // ilog2(6 MiB) - 15
        assert_eq!(b.window_clamp, 64_088); // 65536 less one MSS
        assert_eq!(b.rcv_ssthresh, 64_088);
        assert_eq!(b.space, 14_480); // TCP_INIT_CWND x advmss
        assert_eq!(b.rcv_mss, 536);
    }

    /// The first full-sized skb teaches the ratio: 10 x 1448 bytes in a truesize of
    /// 14480 + 768 gives 14480 x 256 / 15248 = 243, the clamp 131072 x 243 / 256 =
    /// 124416, and rcv_ssthresh rises to the window last advertised (65160).
    #[test]
    fn a_full_sized_skb_sets_the_scaling_ratio_and_the_clamp() {
        let mut b = RcvBuf::new(1448, 6 << 20, Drs::V6_19);
        b.measure_rcv_mss(14_480, 1448, 14_480 + 768);
        assert_eq!(b.scaling_ratio, 243);
        assert_eq!(b.window_clamp, 124_416);
        assert_eq!(b.rcv_ssthresh, 65_160);
        assert_eq!(b.rcv_mss, 1448);
        // A second skb of the same segment size changes nothing.
        b.measure_rcv_mss(2896, 1448, 2896 + 768);
        assert_eq!(b.scaling_ratio, 243);
    }

    /// tcp_grow_window(): an skb whose truesize is worth less window than its length
    /// grows rcv_ssthresh by max(2 x advmss, 2 x len), up to the clamp or the free
    /// space. Then the window stops growing, and any unread data shrinks the raw
    /// window below the one advertised.
    #[test]
    fn the_window_grows_to_the_clamp_and_unread_data_would_shrink_it() {
        let mut b = RcvBuf::new(1448, 6 << 20, Drs::V6_19);
        b.measure_rcv_mss(14_480, 1448, 15_248);
        b.rmem_alloc = 15_248;
        // win_from_space(15248) = 14473 <= 14480: incr = max(2896, 28960).
        assert!(b.grow_window(14_480, 15_248));
        assert_eq!(b.rcv_ssthresh, 65_160 + 28_960);
        // Room left: min(124416, (131072 - 15248) x 243 / 256 = 109942) - 94120.
        assert!(b.grow_window(14_480, 15_248));
        assert_eq!(b.rcv_ssthresh, 109_942);
        assert!(!b.grow_window(14_480, 15_248));
        // Read: the buffer empties, the clamp allows more.
        b.rmem_alloc = 0;
        assert!(b.grow_window(14_480, 15_248));
        assert_eq!(b.rcv_ssthresh, 124_416);
        // The raw window is rcv_ssthresh rounded up to the scale (972 x 128).
        assert_eq!(b.tcp_select_window_raw(), (124_416, false));
        let (adv, _) = b.tcp_select_window(0, 0);
        assert_eq!(adv, 124_416);
        assert_eq!(b.rcv_wnd, 124_416);
        // One unread 3-segment skb: (131072 - 5112) x 243 / 256 = 119564, rounded up
        // to 119680 < 124416: __tcp_ack_snd_check() would not ACK now.
        b.rmem_alloc = 4344 + 768;
        assert_eq!(b.tcp_select_window_raw(), (119_680, false));
        // An ACK sent anyway keeps what is left of the last window.
        let (adv, _) = b.tcp_select_window(0, 4344);
        assert_eq!(adv, 120_192); // 124416 - 4344 = 120072, rounded up to 939 x 128
    }

    /// Less than half the buffer free: quick-ACK mode ends, and below 1/16 of it (or
    /// an MSS) the window is 0.
    #[test]
    fn a_full_buffer_closes_the_window() {
        let mut b = RcvBuf::new(1448, 6 << 20, Drs::V6_19);
        b.rmem_alloc = 80_000; // free (131072 - 80000) / 2 = 25536 < 64088 / 2
        assert_eq!(b.tcp_select_window_raw(), (25_472, true)); // 25536 rounded down to 199 x 128
        b.rmem_alloc = 127_000; // free 2036 < 65536 / 16
        assert_eq!(b.tcp_select_window_raw(), (0, true));
    }

    /// DRS: with a receiver RTT of 10 ms and 100 KB read in it (more than the 14480 of
    /// rcvq_space), tcp_rcvbuf_grow() sizes the buffer for 2 x 100000 plus a slow-start
    /// doubling: rcvwin = 200000 + 400000 x (100000 - 14480) / 14480 = 2562430 (integer
    /// division), and rcvbuf = 2562430 x 256 / 128 = 5124860 bytes.
    #[test]
    fn drs_grows_the_buffer_for_what_was_read_in_an_rtt() {
        let mut b = RcvBuf::new(1448, 6 << 20, Drs::V6_19);
        b.rcv_rtt_us8 = 10_000 * 8;
        b.space_time_us = 1;
        b.copied_seq = 100_000;
        b.rcv_space_adjust(100_000, 5_000); // less than an RTT: nothing
        assert_eq!(b.rcvbuf, 131_072);
        b.rcv_space_adjust(100_000, 10_001);
        assert_eq!(b.space, 100_000);
        assert_eq!(b.rcvbuf, 5_124_860);
        assert_eq!(b.window_clamp, 2_562_430);
        // Capped by tcp_rmem[2].
        let mut c = RcvBuf::new(1448, 1 << 20, Drs::V6_19);
        c.rcv_rtt_us8 = 80_000;
        c.copied_seq = 100_000;
        c.rcv_space_adjust(100_000, 20_000);
        assert_eq!(c.rcvbuf, 1 << 20);
    }

    /// The read's ACK: one with more than an MSS unacknowledged; or one whose window
    /// the read at least doubled.
    #[test]
    fn cleanup_rbuf_acks_what_the_softirq_left() {
        let mut b = RcvBuf::new(1448, 6 << 20, Drs::V6_19);
        b.measure_rcv_mss(1448, 1448, 1448 + 768);
        assert!(b.cleanup_rbuf_wants_ack(4344, true, 0, 4344));
        assert!(!b.cleanup_rbuf_wants_ack(1448, true, 0, 1448));
        // A window nearly used up, and the read freed the buffer: a window update.
        b.rcv_wnd = 20_000;
        assert!(b.cleanup_rbuf_wants_ack(1448, false, 0, 18_000));
        assert!(!b.cleanup_rbuf_wants_ack(0, false, 0, 18_000));
    }

    /// The window measurement keeps the smallest time one window took to arrive; the
    /// timestamp samples (whole ms) are smoothed in while the queue is empty.
    #[test]
    fn the_receivers_rtt_estimate() {
        let mut b = RcvBuf::new(1448, 6 << 20, Drs::V6_19);
        b.rcv_rtt_measure(0, 1_000); // starts a measurement to 65160
        b.rcv_rtt_measure(30_000, 2_000); // not there yet
        assert_eq!(b.rcv_rtt_us8, 0);
        b.rcv_rtt_measure(70_000, 11_000);
        assert_eq!(b.rcv_rtt_us8, 80_000);
        b.rcv_rtt_measure_ts(1448, 5, 17, true); // 12 ms: not lower, smoothed in
        assert_eq!(b.rcv_rtt_us8, 80_000 - 10_000 + 12_000);
        b.rcv_rtt_measure_ts(1448, 5, 30, true); // the same TSecr again: ignored
        assert_eq!(b.rcv_rtt_us8, 82_000);
        b.rcv_rtt_measure_ts(1448, 20, 20, true); // 0 ms: no sample
        assert_eq!(b.rcv_rtt_us8, 82_000);
    }
    /// v6.15's DRS, for the same read as above with 50,000 bytes still unread: `copied`
    /// counts them (no queue-aware `copied`), and the window is 2 x 100000 + 16 x 1448
    /// = 223168, grown by 2 x 223168 x (100000 - 14480) / 14480 = 2 x 1318047:
    /// rcvwin = 2859262, rcvbuf = 2859262 x 256 / 128 = 5718524.
    #[test]
    fn v6_15_drs_sizes_for_twice_the_read_plus_16_segments() {
        let mut b = RcvBuf::new(1448, 6 << 20, Drs::V6_15);
        b.rcv_rtt_us8 = 10_000 * 8;
        b.space_time_us = 1;
        b.copied_seq = 100_000;
        b.rcv_space_adjust(150_000, 10_001);
        assert_eq!(b.space, 100_000);
        assert_eq!(b.rcvbuf, 5_718_524);
        assert_eq!(b.window_clamp, 2_859_262);
        // Reading no more than last time leaves the buffer, and starts a new measure.
        b.copied_seq = 190_000;
        b.rcv_space_adjust(190_000, 20_002);
        assert_eq!((b.space, b.rcvbuf), (100_000, 5_718_524));
        // v6.19 counts only what left the queue: 50000 here.
        let mut c = RcvBuf::new(1448, 6 << 20, Drs::V6_19);
        c.rcv_rtt_us8 = 10_000 * 8;
        c.space_time_us = 1;
        c.copied_seq = 100_000;
        c.rcv_space_adjust(150_000, 10_001);
        assert_eq!(c.space, 50_000);
    }

    /// v6.15's receiver RTT: a 0 ms timestamp echo is a 1 ms sample, and a lower
    /// timestamp sample is smoothed in rather than taken (v6.19 takes the minimum).
    #[test]
    fn v6_15_takes_a_zero_ms_echo_for_one_ms() {
        let mut b = RcvBuf::new(1448, 6 << 20, Drs::V6_15);
        b.rcv_rtt_measure_ts(1448, 20, 20, true);
        assert_eq!(b.rcv_rtt_us8, 8_000);
        b.rcv_rtt_measure_ts(1448, 21, 31, false); // 10 ms, queue not empty: smoothed in
        assert_eq!(b.rcv_rtt_us8, 8_000 - 1_000 + 10_000);
        b.rcv_rtt_measure_ts(1448, 40, 42, true); // 2 ms: smoothed in, not taken
        assert_eq!(b.rcv_rtt_us8, 17_000 - 2_125 + 2_000);
        let mut c = RcvBuf::new(1448, 6 << 20, Drs::V6_19);
        c.rcv_rtt_measure_ts(1448, 20, 20, true);
        assert_eq!(c.rcv_rtt_us8, 0);
        c.rcv_rtt_measure_ts(1448, 21, 31, true);
        c.rcv_rtt_measure_ts(1448, 40, 42, true);
        assert_eq!(c.rcv_rtt_us8, 16_000);
    }
}
