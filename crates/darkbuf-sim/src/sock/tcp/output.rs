//! The sender's output path: mirrors `tcp_write_xmit()`, `tcp_cwnd_test()`,
//! `tcp_snd_wnd_test()`, `tcp_tso_autosize()`, `tcp_small_queue_check()`,
//! `tcp_pacing_check()`, `__tcp_transmit_skb()` and `tcp_update_skb_after_send()` in
//! net/ipv4/tcp_output.c, and `tcp_update_pacing_rate()` (tcp_input.c).
//!
//! The tail loss probe: `tcp_schedule_loss_probe()` and `tcp_send_loss_probe()`. The
//! probe timer of an empty flight: `tcp_send_probe0()` and `tcp_write_wakeup()`.
//!
//! The order of `tcp_write_xmit()`'s tests is the flow's `write_xmit`: the kernel's
//! (`tcp_grow_skb()`, `tcp_tso_should_defer()`, `tso_fragment()`, then TSQ on the skb
//! just cut), or by default the model's stand-in, with TSQ judging an skb at the TSO
//! goal and no TSO deferral (see `tcp_next_to_send()`).
//!
//! Simplifications, stated: no Nagle, no MTU probing, and no
//! `skb_still_in_host_queue()` (a probe retransmits the last segment even while its
//! first transmission waits in a host queue).

use crate::wire::TCP_HDR;
use super::{after, before, whole_jiffies, CaState, Pacing, TxSeg, XmitTimer, TCP_RTO_MAX_NS, TCP_RTO_MIN_NS, TCP_TIMEOUT_INIT_NS};
use crate::arena::{Destructor, Dir, PktInfo};
use crate::dev::TcpSent;
use crate::id::{CpuId, DevId, SockId};
use darkbuf_model::qdisc::EnqueueVerdict;
use crate::event::Event;
use crate::world::World;
use darkbuf_model::Skb;
use darkbuf_scenario::{Tsq, WriteXmit};

/// `tcp_min_tso_segs`.
const TCP_MIN_TSO_SEGS: u32 = 2;
/// `tcp_tso_win_divisor`: TSO deferral sends once a third of the window is free.
const TCP_TSO_WIN_DIVISOR: u32 = 3;
/// `sk_pacing_shift`: TSQ and TSO autosizing allow ~1 ms of data.
pub(super) const PACING_SHIFT: u32 = 10;
/// `tcp_pacing_ss_ratio`, `tcp_pacing_ca_ratio` (%).
const PACING_SS_RATIO: u64 = 200;
const PACING_CA_RATIO: u64 = 120;
/// `TCP_TIMEOUT_MIN_US`: what a loss probe waits beyond two RTTs with more than one
/// packet out.
const TCP_TIMEOUT_MIN_NS: u64 = 2_000_000;

/// What `tcp_next_to_send()` found: the range to send and what the tests after it
/// judge.
pub(super) struct NextSend {
    pub start: u32,
    pub end: u32,
    pub retrans: bool,
    /// The payload of the skb TSQ judges.
    pub tsq_len: u32,
    /// New data: the write queue's head skb after `tcp_grow_skb()` (its length, and
    /// whether it is the last skb), which `tcp_tso_should_defer()` judges; the TSO
    /// goal (`tcp_tso_segs()`).
    pub head_len: u32,
    pub head_is_tail: bool,
    pub max_segs: u32,
}

impl World {
    /// `tcp_write_xmit()` for socket `s` from `cpu`, starting at `t0`: retransmits
    /// first, then new data, while the congestion and receive windows, TSQ and pacing
    /// allow. Returns the CPU time spent (each skb's transmission is put at its time).
    pub(crate) fn tcp_write_xmit(&mut self, cpu: CpuId, s: SockId, t0: u64) -> u64 {
        self.tcp_write_xmit_push(cpu, s, t0, false)
    }

    /// `tcp_write_xmit()` with `push_one` 0 or, for a loss probe (`probe`), 2: one skb
    /// of new data, even with the congestion window full, and no loss probe scheduled
    /// after it.
    fn tcp_write_xmit_push(&mut self, cpu: CpuId, s: SockId, t0: u64, probe: bool) -> u64 {
        let mut t = t0;
        let mut sent_new = false;
        let mut sent_any = false;
        let mut cwnd_limited = false;
        // The head of the retransmit queue went again: tcp_xmit_retransmit_queue()
        // restarts the RTO from now (`rearm_timer`).
        let mut head_retransmitted = false;
        let tp = self.socks.tcp(s);
        tp.xmit_burst = tp.xmit_burst.wrapping_add(1);
        loop {
            let tp = self.socks.tcp(s);
            // tcp_pacing_check(): internal pacing waits for the departure time.
            if tp.pacing == Pacing::Needed && tp.wstamp_ns > t {
                let at = tp.wstamp_ns;
                if tp.pace_at != Some(at) {
                    tp.pace_at = Some(at);
                    tp.softirq_cpu = cpu;
                    self.events.push(at, Event::TcpTimer(s, super::timer::PACE));
                }
                break;
            }
            let in_flight = tp.in_flight();
            // tcp_cwnd_test(): at most half the window in one burst, and none when full
            // (a probe forces one segment out).
            let room = match tp.w.cwnd.checked_sub(in_flight).filter(|&r| r > 0) {
                Some(r) => r,
                None if probe => 1,
                None => {
                    cwnd_limited = true;
                    break;
                }
            };
            let Some(next) = self.tcp_next_to_send(s, room) else { break };
            let (start, end, retrans) = (next.start, next.end, next.retrans);
            let tp = self.socks.tcp(s);
            if !retrans && !probe && tp.write_xmit == WriteXmit::Kernel && next.head_len > tp.mss {
                if let Some(limited) = self.tcp_tso_should_defer(s, t, &next) {
                    cwnd_limited |= limited;
                    break;
                }
            }
            if self.tcp_small_queue_check(s, next.tsq_len, retrans) {
                break;
            }
            head_retransmitted |= retrans && start == self.socks.tcp(s).snd_una;
            t += self.tcp_transmit_skb(cpu, s, start, end, retrans, t);
            sent_any = true;
            sent_new |= !retrans;
            if probe {
                break;
            }
        }
        let tp = self.socks.tcp(s);
        if tp.frto_new_data {
            // tcp_xmit_recovery() with REXMIT_NEW: if no new data went, F-RTO ends and
            // the segments marked lost go as usual.
            tp.frto_new_data = false;
            if !after(tp.snd_nxt, tp.high_seq) {
                tp.frto = false;
                return t - t0 + self.tcp_write_xmit_push(cpu, s, t, probe);
            }
        }
        cwnd_limited |= tp.in_flight() >= tp.w.cwnd;
        if sent_any || cwnd_limited {
            tp.tcp_cwnd_validate(cwnd_limited);
        }
        // tcp_event_new_data_sent(): the RTO from the first packet out (in place of a
        // pending probe timer), or in place of a pending loss probe;
        // tcp_xmit_retransmit_queue(): from the head's retransmission.
        // Not in place of RACK's reordering timer (the head's retransmission leaves it
        // too: `icsk_pending != ICSK_TIME_REO_TIMEOUT`).
        let pending_probe = tp.rto_at.is_some() && matches!(tp.xmit_timer, XmitTimer::LossProbe | XmitTimer::Probe0);
        let reo_pending = tp.xmit_timer == XmitTimer::ReoTimeout;
        if (sent_new && (tp.rto_at.is_none() || pending_probe)) || (head_retransmitted && !reo_pending) {
            tp.softirq_cpu = cpu;
            // A loss probe armed just below replaces this arm before it could fire: it
            // is left out, so that the timer's lane does not collect an RTO per ACK
            // behind the probes (an earlier arm is a sorted insert).
            let probe_follows = sent_new && !probe && tp.tlp_allowed();
            if !probe_follows {
                self.tcp_rearm_rto(s);
            }
        }
        if sent_new && !probe {
            self.tcp_schedule_loss_probe(s, false, true);
        }
        // tcp_push_pending_frames() -> tcp_check_probe_timer(): nothing in flight, and
        // data the receive window has no room for (a modelled receiver's window can
        // close): the probe timer, or no ACK would ever come.
        let now = self.now;
        let tp = self.socks.tcp(s);
        let unsent = tp.write_seq.wrapping_sub(tp.snd_nxt);
        let wnd_end = tp.snd_una.wrapping_add(tp.snd_wnd);
        if tp.packets_out == 0 && tp.rto_at.is_none() && unsent > 0 && after(tp.snd_nxt.wrapping_add(tp.mss.min(unsent)), wnd_end) {
            let at = now + tp.tcp_probe0_base();
            self.tcp_arm_probe0(s, at);
        }
        t - t0
    }

    /// `tcp_schedule_loss_probe()`: in Open or CWR with data out, the retransmit timer
    /// becomes a loss probe two RTTs away (plus 2 ms, or `rto_min` with one packet out
    /// for the delayed ACK; 1 s without an RTT sample), unless the RTO comes first:
    /// `icsk_rto` from now when an ACK re-arms it (`advancing_rto`), else when the head
    /// of the retransmit queue times out. A paced flow's probe also waits for its
    /// departure time. Returns whether the probe was armed; without `push` its event
    /// is left to the caller.
    pub(super) fn tcp_schedule_loss_probe(&mut self, s: SockId, advancing_rto: bool, push: bool) -> bool {
        let (now, jiffy_ns) = (self.now, self.cfg.jiffy_ns);
        let tp = self.socks.tcp(s);
        if !tp.tlp_allowed() {
            return false;
        }
        let mut timeout = if tp.srtt_us != 0 {
            let extra = if tp.packets_out == 1 { TCP_RTO_MIN_NS } else { TCP_TIMEOUT_MIN_NS };
            whole_jiffies((tp.srtt_us >> 2) as u64 * 1000 + extra, jiffy_ns)
        } else {
            TCP_TIMEOUT_INIT_NS
        };
        let rto_delta = if advancing_rto { ((tp.rto_ns << tp.backoff.min(10)).min(TCP_RTO_MAX_NS)) as i64 } else { tp.tcp_rto_delta_ns(now) };
        if rto_delta > 0 {
            timeout = timeout.min(whole_jiffies(rto_delta as u64, jiffy_ns));
        }
        let at = now + timeout + tp.tcp_pacing_delay(now, jiffy_ns);
        self.tcp_reset_xmit_timer(s, XmitTimer::LossProbe, at, push);
        true
    }

    /// `tcp_send_loss_probe()` at `t0` from `cpu`: at most one probe per tail (none while
    /// `tlp_high_seq` is set). New data if the receive window takes it (one skb,
    /// `push_one` 2), else the last segment of the retransmit queue again (split off its
    /// skb's last MSS, `__tcp_retransmit_skb()`: counted in `total_retrans`, but not
    /// marked as a retransmission in flight). Then the RTO from now. Returns the CPU
    /// time spent.
    pub(super) fn tcp_send_loss_probe(&mut self, cpu: CpuId, s: SockId, t0: u64) -> u64 {
        let tp = self.socks.tcp(s);
        if tp.tlp_high_seq.is_some() {
            self.tcp_rearm_rto(s);
            return 0;
        }
        tp.tlp_retrans = false;
        let unsent = tp.write_seq.wrapping_sub(tp.snd_nxt);
        let wnd_end = tp.snd_una.wrapping_add(tp.snd_wnd);
        let cost;
        if unsent > 0 && !after(tp.snd_nxt.wrapping_add(tp.mss.min(unsent)), wnd_end) {
            let before_out = tp.packets_out;
            cost = self.tcp_write_xmit_push(cpu, s, t0, true);
            let tp = self.socks.tcp(s);
            if tp.packets_out == before_out {
                self.tcp_rearm_rto(s);
                return cost;
            }
        } else {
            if tp.rtx.is_empty() {
                // Nothing to probe with (the kernel warns "invalid inflight").
                return 0;
            }
            let last = tp.rtx.len() - 1;
            let seg = tp.rtx[last];
            if seg.segs > 1 {
                // tcp_fragment() at (pcount - 1) x mss: the probe is the last MSS.
                let mid = seg.start.wrapping_add((seg.segs - 1) * tp.mss);
                tp.rtx[last].end = mid;
                tp.rtx[last].segs = seg.segs - 1;
                tp.rtx.push_back(TxSeg { start: mid, segs: 1, ..seg });
            }
            let probe_seg = *tp.rtx.back().expect("the probe's segment");
            cost = self.tcp_transmit_skb(cpu, s, probe_seg.start, probe_seg.end, true, t0);
            // __tcp_retransmit_skb() alone: no TCPCB_SACKED_RETRANS, not in retrans_out.
            let tp = self.socks.tcp(s);
            let g = tp.rtx.back_mut().expect("the probe's segment");
            if std::mem::take(&mut g.retrans) {
                tp.retrans_out -= g.segs;
            }
            tp.tlp_retrans = true;
        }
        // probe_sent: remember the tail; the RTO restarts from now.
        let tp = self.socks.tcp(s);
        tp.tlp_high_seq = Some(tp.snd_nxt);
        tp.loss_probes += 1;
        if let Some(g) = tp.rtx.back_mut() {
            g.tlp = true;
        }
        tp.xmit_timer = XmitTimer::Retrans;
        tp.softirq_cpu = cpu;
        self.tcp_rearm_rto(s);
        cost
    }

    /// `tcp_probe_timer()` -> `tcp_send_probe0()` -> `tcp_write_wakeup()` at `t0` from
    /// `cpu`: with nothing in flight and data waiting, one MSS of it goes, whatever the
    /// congestion window and TSQ say; it arms the RTO (`tcp_event_new_data_sent()`),
    /// and once the qdisc took it the probing ends (`tcp_xmit_verdict()`). With the
    /// receive window closed the probe is a pure ACK, which the model does not build:
    /// the timer backs off and is armed again (`tcp_probe0_when()`). Returns the CPU
    /// time spent.
    pub(super) fn tcp_probe_timer(&mut self, cpu: CpuId, s: SockId, t0: u64) -> u64 {
        let now = self.now;
        let tp = self.socks.tcp(s);
        let unsent = tp.write_seq.wrapping_sub(tp.snd_nxt);
        if tp.packets_out > 0 || unsent == 0 {
            tp.probes_out = 0;
            return 0;
        }
        let wnd_end = tp.snd_una.wrapping_add(tp.snd_wnd);
        if !before(tp.snd_nxt, wnd_end) {
            tp.probes_out += 1;
            if tp.backoff < super::TCP_RETRIES2 {
                tp.backoff += 1;
            }
            let at = now + tp.tcp_probe0_when();
            self.tcp_arm_probe0(s, at);
            return 0;
        }
        let len = tp.mss.min(unsent).min(wnd_end.wrapping_sub(tp.snd_nxt));
        let start = tp.snd_nxt;
        tp.xmit_burst = tp.xmit_burst.wrapping_add(1);
        let burst = tp.xmit_burst;
        let cost = self.tcp_transmit_skb(cpu, s, start, start.wrapping_add(len), false, t0);
        let tp = self.socks.tcp(s);
        tp.timer_xmit = Some((burst, XmitTimer::Probe0));
        tp.softirq_cpu = cpu;
        // With the backoff as it is: tcp_send_probe0() resets it after the transmit
        // went (the verdict's part).
        self.tcp_rearm_rto(s);
        cost
    }

    /// The next range to send, with `room` segments left in the window: the first lost
    /// and not yet retransmitted segment, else new data within the receive window, sized
    /// by TSO autosizing. A retransmission may take the whole room
    /// (`tcp_xmit_retransmit_queue()`: `min(cwnd - in_flight, max_segs)`); new data at
    /// most half the window (`tcp_cwnd_test()`).
    ///
    /// What TSQ judges: with `write_xmit = "kernel"` the range cut to the cwnd quota,
    /// as 6.18's `tcp_write_xmit()` judges the skb `tso_fragment()` cut. That leaves a
    /// flow on a half-cwnd plateau which the kernel leaves after the machine's stalls.
    /// The default stand-in judges an skb at the TSO goal: it gives the state the
    /// kernel ends in, two TSO skbs of the goal's size, with or without a profile's
    /// `[[stalls]]` (docs/tcp-small-fifo.md, "TSQ after tso_fragment()").
    fn tcp_next_to_send(&mut self, s: SockId, room: u32) -> Option<NextSend> {
        let full_goal = self.tcp_tso_segs(s);
        let tp = self.socks.tcp(s);
        let goal = full_goal.min(room.min((tp.w.cwnd / 2).max(1)));
        // F-RTO's step 2b sends new data in place of the next retransmission.
        if tp.lost_out > tp.retrans_out && !tp.frto_new_data {
            let goal = full_goal.min(room);
            if let Some(i) = tp.rtx.iter().position(|g| g.lost && !g.retrans) {
                // tcp_retransmit_skb(): an skb larger than the current TSO goal is split
                // (tcp_fragment()) and its head goes first.
                let seg = tp.rtx[i];
                if seg.segs > goal {
                    let mid = seg.start.wrapping_add(goal * tp.mss);
                    tp.rtx[i].end = mid;
                    tp.rtx[i].segs = goal;
                    let tail = TxSeg { start: mid, segs: seg.segs - goal, ..seg };
                    tp.rtx.insert(i + 1, tail);
                }
                let seg = tp.rtx[i];
                let len = seg.end.wrapping_sub(seg.start);
                return Some(NextSend { start: seg.start, end: seg.end, retrans: true, tsq_len: len, head_len: len, head_is_tail: false, max_segs: full_goal });
            }
        }
        let unsent = tp.write_seq.wrapping_sub(tp.snd_nxt);
        if unsent == 0 {
            return None;
        }
        // tcp_snd_wnd_test(): the first segment must fit the receive window.
        let wnd_end = tp.snd_una.wrapping_add(tp.snd_wnd);
        if after(tp.snd_nxt.wrapping_add(tp.mss.min(unsent)), wnd_end) {
            return None;
        }
        let tp = self.socks.tcp(s);
        // tcp_grow_skb() to the quota, then tcp_mss_split_point() and tso_fragment()
        // cut the head to the quota and the receive window.
        let head_len = tp.tcp_grow_skb(goal * tp.mss);
        let len = (goal * tp.mss).min(head_len).min(wnd_end.wrapping_sub(tp.snd_nxt));
        let tsq_len = match tp.write_xmit {
            WriteXmit::GoalTsq => (full_goal * tp.mss).min(unsent),
            WriteXmit::Kernel => len,
        };
        let head_is_tail = tp.write_queue.len() == 1;
        Some(NextSend { start: tp.snd_nxt, end: tp.snd_nxt.wrapping_add(len), retrans: false, tsq_len, head_len, head_is_tail, max_segs: full_goal })
    }

    /// `tcp_tso_should_defer()` at `now` for the head skb `next` describes: wait for an
    /// ACK due within min(srtt / 2, 1 ms) rather than send a small TSO skb now, unless
    /// the flow is in recovery, last sent over 1 ms ago, or has room for a full TSO
    /// skb, for the whole head (not the last skb), or for a third of the window
    /// (`tcp_tso_win_divisor`). `Some(cwnd_limited)` defers; `None` sends.
    pub(super) fn tcp_tso_should_defer(&mut self, s: SockId, now: u64, next: &NextSend) -> Option<bool> {
        let tp = self.socks.tcp(s);
        if tp.ca_state >= CaState::Recovery {
            return None;
        }
        // Only if the last write was recent: tcp_wstamp_ns (in the future for a paced
        // flow's departures) within 1 ms.
        if now as i64 - tp.wstamp_ns as i64 - 1_000_000 > 0 {
            return None;
        }
        let in_flight = tp.in_flight();
        let send_win = tp.snd_una.wrapping_add(tp.snd_wnd).wrapping_sub(tp.snd_nxt);
        let cong_win = tp.w.cwnd.saturating_sub(in_flight) * tp.mss;
        let limit = send_win.min(cong_win);
        if limit >= next.max_segs * tp.mss || (!next.head_is_tail && limit >= next.head_len) {
            return None;
        }
        let chunk = tp.snd_wnd.min(tp.w.cwnd * tp.mss) / TCP_TSO_WIN_DIVISOR;
        if limit >= chunk {
            return None;
        }
        let head = tp.rtx.front()?;
        // The head's ACK is due at its departure plus srtt (srtt_us holds 8 x srtt).
        let srtt_ns = (1000 >> 3) * tp.srtt_us as u64;
        let how_far = (head.sent + srtt_ns) as i64 - now as i64;
        let threshold = (srtt_ns >> 1).min(1_000_000) as i64;
        if how_far - threshold > 0 {
            return None;
        }
        // Deferring: cwnd-limited if the window, not the receiver, is what is short.
        Some(cong_win < send_win && cong_win <= next.head_len)
    }

    /// `tcp_tso_autosize()`: about 1 ms of data at the pacing rate (plus the bonus for
    /// short RTTs of `tcp_tso_rtt_log`), at least `tcp_min_tso_segs`, at most what
    /// `sk_gso_max_size` holds.
    pub(super) fn tcp_tso_segs(&mut self, s: SockId) -> u32 {
        let tp = self.socks.tcp(s);
        let mut bytes = (tp.pacing_rate >> PACING_SHIFT).min(tp.gso_max_size as u64);
        // min_rtt_us >> tcp_tso_rtt_log. The sysctl is a u8, and a shift of 32 or more is
        // undefined in C; x86's shr takes the count mod 32, and so does wrapping_shr.
        let r = if tp.min_rtt_us == u32::MAX { u32::MAX } else { tp.min_rtt_us.wrapping_shr(tp.tso_rtt_log as u32) };
        if r < 32 {
            bytes += (tp.gso_max_size >> r) as u64;
        }
        let bytes = bytes.min(tp.gso_max_size as u64) as u32;
        let min_tso = tp.ca().min_tso_segs(tp).unwrap_or(TCP_MIN_TSO_SEGS);
        (bytes / tp.mss).max(min_tso).min(tp.gso_max_size / tp.mss)
    }

    /// `tcp_small_queue_check()` for the next skb (`payload` bytes): stop while the
    /// socket has more than ~1 ms of data (at least two such skbs) in the qdisc and the
    /// device, and at most `tcp_limit_output_bytes` (before v6.16 only if unpaced:
    /// [`Tsq`]). A lone skb on the retransmit queue always goes (f921a4a5bffa). Sets TSQ_THROTTLED, which `tcp_wfree()` clears.
    ///
    /// A retransmission gets twice the limit (`tcp_xmit_retransmit_queue()` calls it
    /// with `factor` 1: `limit <<= factor`).
    pub(super) fn tcp_small_queue_check(&mut self, s: SockId, payload: u32, retrans: bool) -> bool {
        let wmem_alloc = self.socks[s].wmem_alloc;
        let tp = self.socks.tcp(s);
        // The skb's truesize: the payload and the profile's head (`tcp_skb_overhead`).
        let truesize = payload as u64 + self.profile.tcp_skb_overhead as u64;
        // Before v6.16 a paced flow is exempt from the sysctl (c73e5807e4f6): at 100G
        // under fq it may keep more than fq's flow_limit in the host (seed 001). v6.16
        // caps every flow (c4221a8cc3a7).
        let mut limit = (2 * truesize).max(tp.pacing_rate >> PACING_SHIFT);
        if tp.pacing == Pacing::None || tp.tsq == Tsq::Always {
            limit = limit.min(tp.limit_output_bytes);
        }
        limit <<= retrans as u32;
        // refcount_read(&sk->sk_wmem_alloc): the socket's own reference is the 1 that
        // sk_wmem_alloc starts at, so two skbs of exactly the limit's truesize stop it.
        if wmem_alloc + 1 > limit {
            if tp.rtx.len() <= 1 {
                // "This helps when TX completions are delayed too much": everything may
                // be acknowledged while its completions are pending, and this skb goes
                // on top of them. The host queues then hold what they held plus it.
                tp.tsq_bound = tp.tsq_bound.max(wmem_alloc + truesize);
                return false;
            }
            tp.tsq_throttled = true;
            return true;
        }
        // What TSQ admits: the host queues then hold at most the limit plus this skb.
        tp.tsq_bound = tp.tsq_bound.max(limit + truesize);
        false
    }

    /// `__tcp_transmit_skb()` of `start..end` at time `t` from `cpu`: the skb with its
    /// EDT stamp and `tcp_wfree` destructor, `ooo_okay`, the TX queue; the scoreboard
    /// and the pacing clock are updated. Returns its CPU cost.
    fn tcp_transmit_skb(&mut self, cpu: CpuId, s: SockId, start: u32, end: u32, retrans: bool, t: u64) -> u64 {
        let dev = self.socks[s].dev;
        let wmem_alloc = self.socks[s].wmem_alloc;
        let tp = self.socks.tcp(s);
        let payload = end.wrapping_sub(start);
        let segs = payload.div_ceil(tp.mss).max(1);
        // ooo_okay: nothing of this socket in the host queues, or nothing unacked
        // (726e9e8b94b9): the flow may move to another TX queue without reordering.
        let ooo_okay = wmem_alloc == 0 || tp.packets_out == 0;
        // tcp_wstamp_ns = max(tcp_wstamp_ns, now): the skb's earliest departure time.
        let prior = tp.wstamp_ns;
        tp.wstamp_ns = tp.wstamp_ns.max(t);
        // skb_mstamp_ns: the departure time, from which the ACK's RTT and the
        // delivery rate are measured (`tcp_skb_timestamp_us()`). Unpaced, it is the
        // sending CPU's now (the kernel's one clock makes max(wstamp, now) = now; a
        // CPU's time here may trail another's).
        let sent = if tp.pacing == Pacing::None { t } else { tp.wstamp_ns };
        let rate = tp.tcp_rate_skb_sent(sent / 1000);
        let edt = if tp.pacing == Pacing::None { 0 } else { tp.wstamp_ns };
        let flow = tp.flow_id();
        let mut skb = Skb {
            flow,
            sk: super::tcp_skb_sk(s),
            len: payload + segs * TCP_HDR,
            truesize: payload + self.profile.tcp_skb_overhead,
            gso_segs: segs as u16,
            edt,
            pacing_rate: if tp.pacing == Pacing::Fq { 0 } else { tp.pacing_rate },
            // tcp_ecn_send(): new data is ECT(0) and carries a queued CWR; a
            // retransmission leaves Not-ECT (INET_ECN_dontxmit()).
            ecn: if tp.ecn && !retrans { Skb::ECN_ECT0 } else { Skb::ECN_NOT_ECT },
            dscp: tp.dscp,
            priority: crate::forward::rt_tos2priority(tp.dscp, 0),
            ..Skb::default()
        };
        let cwr = tp.ecn && !retrans && std::mem::take(&mut tp.ecn_queue_cwr);
        skb.queue_mapping = self.tcp_pick_tx(s, dev, &skb, cpu, ooo_okay);
        self.sock_alloc_skb(s, &mut skb, super::PROTO, Destructor::TcpWfree, Dir::Out, start);
        self.socks[s].wmem_alloc += skb.truesize as u64;
        let (wmem, mut bound) = (self.socks[s].wmem_alloc, self.socks.tcp(s).tsq_bound);
        if !self.net.devs[dev].tso {
            // Software GSO gives every segment its own skb head (tcp_gso_segment()'s
            // delta): at most (mss + head) / mss of what TSQ admitted.
            let mss = self.socks.tcp(s).mss as u64;
            bound = bound * (mss + crate::dev::gso::SEGMENT_HEAD_TRUESIZE as u64) / mss;
        }
        if bound > 0 && wmem > bound {
            self.finding("TSQ bounds a socket's bytes in the qdisc and the device", format!("sk_wmem_alloc {wmem} > {bound}"));
        }
        let info = self.pkts.get_mut(skb.id);
        info.t_send = t;
        info.tcp_flags = if cwr { info.tcp_flags | PktInfo::TCPHDR_CWR } else { info.tcp_flags & !PktInfo::TCPHDR_CWR };
        let cost = self.cost(self.profile.costs.tcp_xmit_ns);
        let tp = self.socks.tcp(s);
        let how = crate::dev::TcpSent { tsq_throttled: tp.tsq_throttled, burst: tp.xmit_burst };
        self.tcp_queue_xmit_at(t + cost, cpu, dev, skb, how);
        let tp = self.socks.tcp(s);
        tp.data_segs_out += segs as u64;
        // tcp_update_skb_after_send(): the next departure time, forgiving up to half
        // an skb of lateness. The skb remembers the advance: a local drop takes it back.
        let mut pace_ns = 0;
        if tp.pacing != Pacing::None && tp.pacing_rate > 0 && tp.data_segs_out >= 10 {
            // The write queue's skb (`oskb`): its payload, without the headers the
            // clone carries; sk_pacing_rate counts payload bytes.
            let len_ns = (payload as u128 * 1_000_000_000 / tp.pacing_rate as u128) as u64;
            let credit = tp.wstamp_ns - prior;
            pace_ns = len_ns - (len_ns / 2).min(credit);
            tp.wstamp_ns += pace_ns;
        }
        if retrans {
            if let Some(seg) = tp.rtx.iter_mut().find(|g| g.start == start) {
                seg.retrans = true;
                seg.tlp = false;
                seg.sent = sent;
                seg.tsecr_ms = tp.ts_recent_ms;
                seg.rate = rate;
                seg.pace_ns = pace_ns;
                tp.retrans_out += seg.segs;
                seg.counted = !seg.local_drop;
                seg.ever_retrans |= seg.counted;
                if seg.counted {
                    tp.total_retrans += seg.segs as u64;
                    // tcp_retransmit_skb(): one more retransmission a D-SACK may show
                    // spurious.
                    tp.undo_retrans = tp.undo_retrans.max(0) + seg.segs as i32;
                }
                seg.local_drop = false;
            }
        } else {
            let seg = TxSeg { start, end, segs, sent, rate, pace_ns, tsecr_ms: tp.ts_recent_ms, ..TxSeg::default() };
            tp.rtx.push_back(seg);
            tp.snd_nxt = end;
            tp.tcp_write_queue_sent(end);
            tp.packets_out += segs;
        }
        if matches!(tp.ca_state, CaState::Recovery | CaState::Cwr) {
            tp.prr_out += segs;
        }
        cost
    }

    /// `netdev_pick_tx()` with the socket's cached queue (`sk_tx_queue_get()`): a new
    /// pick (XPS from the sending CPU) only when there is none or the skb is
    /// `ooo_okay`, cached by `sk_tx_queue_set()`. A change is recorded as seed 001's
    /// bpftrace script sees it (`@queue_index_after_netdev_pick_tx[cpu, old]`).
    fn tcp_pick_tx(&mut self, s: SockId, dev: crate::id::DevId, skb: &Skb, cpu: CpuId, ooo_okay: bool) -> u16 {
        let cached = self.socks.tcp(s).tx_queue;
        match cached {
            Some(q) if !ooo_okay => q,
            _ => {
                let q = self.netdev_pick_tx(dev, skb, cpu);
                if cached != Some(q) {
                    let tp = self.socks.tcp(s);
                    tp.tx_queue = Some(q);
                    tp.tx_queue_changes += 1;
                    let old = cached.map_or(-1, |c| c as i32);
                    let n = self.metrics.queue_changes.entry((cpu.0, old, q)).or_default();
                    n[0] += 1;
                    n[1] += ooo_okay as u64;
                }
                q
            }
        }
    }

    /// `tcp_update_pacing_rate()`: ratio% x cwnd x mss / srtt (200% in slow start below
    /// half ssthresh, else 120%).
    pub(super) fn tcp_update_pacing_rate(&mut self, s: SockId) {
        let tp = self.socks.tcp(s);
        // A congestion control with cong_control sets the rate itself (tcp_cong_control()).
        if tp.srtt_us == 0 || tp.ca().has_cong_control() {
            return;
        }
        let ratio = if tp.w.cwnd < tp.w.ssthresh / 2 { PACING_SS_RATIO } else { PACING_CA_RATIO };
        let window = tp.w.cwnd.max(tp.packets_out) as u64;
        // srtt_us is kept x8: rate = mss * ratio/100 * window * 1e6 / (srtt_us / 8).
        let rate = tp.mss as u64 * ratio * window * 8 * 1_000_000 / 100 / tp.srtt_us as u64;
        tp.pacing_rate = rate.min(tp.max_pacing_rate);
    }

    /// The first segment sent after `seq` (for SACK marking).
    pub(super) fn tcp_seg_index(&mut self, s: SockId, seq: u32) -> usize {
        let tp = self.socks.tcp(s);
        tp.rtx.partition_point(|g| before(g.start, seq))
    }
}

impl World {
    /// A TCP data segment's `__dev_queue_xmit()`, as it runs in the kernel: inside
    /// `__tcp_transmit_skb()`, before `tcp_write_xmit()` checks TSQ for the next skb.
    ///
    /// The model's `tcp_write_xmit()` has already run its whole loop, and may have set
    /// TSQ_THROTTLED at its end. The segment meets the socket's flag as it was when it
    /// was sent (`sent.tsq_throttled`). If the qdisc drops it, `tcp_wfree()` sees that flag, and
    /// the kernel's loop stops on NET_XMIT_DROP before its next TSQ check: the flag stays
    /// as `tcp_wfree()` left it. Otherwise the loop went on, and the flag is the one its
    /// end left. (Seeing the end's flag, each drop queued TSQ work that sent straight
    /// back into a full shaper: a loop the kernel cannot enter.)
    ///
    /// The loop that stopped sent nothing after the dropped segment: the model's later
    /// transmits of the same loop are taken back (`tcp_unsend_burst()`).
    pub(crate) fn tcp_deferred_xmit(&mut self, cpu: CpuId, dev: DevId, skb: Skb, info: &crate::arena::PktInfo, sent: TcpSent) {
        let s = info.sock;
        let after_loop = std::mem::replace(&mut self.socks.tcp(s).tsq_throttled, sent.tsq_throttled);
        let verdict = self.dev_queue_xmit_softirq(cpu, dev, skb);
        if verdict != EnqueueVerdict::Dropped {
            self.socks.tcp(s).tsq_throttled = after_loop;
        } else {
            self.tcp_unsend_burst(s, sent.burst, info.seq);
        }
        // The sender learns the verdict (its local congestion signal).
        self.tcp_xmit_verdict(s, info.seq, sent.burst, verdict);
    }
}
