//! The sender's ACK processing: mirrors `tcp_ack()` -> `tcp_clean_rtx_queue()`,
//! `tcp_sacktag_write_queue()`, RACK's `tcp_rack_detect_loss()`, `tcp_fastretrans_alert()`
//! (entering and leaving Recovery), `tcp_cwnd_reduction()` (PRR), `tcp_enter_cwr()`,
//! `tcp_cong_control()`, `tcp_rtt_estimator()` / `tcp_set_rto()`,
//! `tcp_process_tlp_ack()` and `tcp_retransmit_timer()` (net/ipv4/tcp_input.c,
//! tcp_recovery.c, tcp_timer.c).
//!
//! RACK (`tcp_recovery.c`): a segment sent before the most recently sent delivered one
//! is lost once RACK's RTT plus the reordering window has passed since it was sent
//! (`tcp_rack_detect_loss()`). The window (`tcp_rack_reo_wnd()`) is min_rtt/4 per step,
//! at most srtt; with no reordering seen it is 0 in recovery or once the DUPACK
//! threshold (3 SACKed segments) is met. RACK looks only at a dubious ACK after a
//! delivery moved it (`tcp_rack_mark_lost()`), and a segment still inside the window
//! arms the reordering timer (`ICSK_TIME_REO_TIMEOUT`, `tcp_rack_reo_timeout()`) in
//! place of the RTO or loss probe. A reordering is seen (`tcp_check_sack_reordering()`)
//! when a never-retransmitted segment below the highest SACK is delivered, which a path
//! with a jitter or `reorder` makes happen. A D-SACK (data that arrived twice) adds a
//! step (`tcp_rack_update_reo_wnd()`), and when D-SACKs show every retransmission of a
//! recovery spurious, the window reduction is undone (`tcp_try_undo_dsack()`,
//! `tcp_try_undo_recovery()`). With a reordering degree above 3, cwnd grows on SACKs too
//! (`tcp_may_raise_cwnd()`). Outside a window reduction, SACKed, lost or retransmitted
//! segments outstanding make the state Disorder (`tcp_try_keep_open()`), where no loss
//! probe is scheduled.
//!
//! After an RTO, F-RTO (`tcp_process_loss()`, RFC 5682's SACK-enhanced version)
//! decides whether it came of a loss: an ACK or SACK of a segment sent before the
//! timeout and never retransmitted shows the data was only late, and the timeout is
//! undone (`tcp_try_undo_loss()`: the lost marks cleared, cwnd and ssthresh restored,
//! Open); an ACK that moves `snd_una` first sends new data instead of the next
//! retransmission (step 2b), and a SACK or duplicate ACK after that shows the loss was
//! real, and the rest goes as before. Not modelled: the timestamp undo (Eifel,
//! `tcp_packet_delayed()`), which in the kernel can undo one ACK earlier than F-RTO.

use super::cc::{AckCtx, CaEvent, CA_ACK_ECE};
use super::rate::RateSample;
use super::recv::AckRec;
use super::{after, before, whole_jiffies, CaState, XmitTimer, TCP_RTO_MAX_NS, TCP_RTO_MIN_NS};
use crate::arena::PktInfo;
use crate::id::{CpuId, SockId};
use crate::world::World;

/// `sysctl_tcp_reordering`: `tp->reordering`'s start, the DUPACK threshold.
pub(super) const TCP_REORDERING: u32 = 3;
/// `sysctl_tcp_max_reordering`: the most `tp->reordering` grows to.
const TCP_MAX_REORDERING: u32 = 300;

/// RACK's state (`struct tcp_rack`): the most recently sent delivered segment's send
/// time and end (`mstamp`, `end_seq`), the RTT of the last delivery RACK took
/// (`rtt_us`), and the reordering window's multiplier (`reo_wnd_steps`).
///
/// `dsack_seen`, `last_delivered` and `reo_wnd_persist` drive the window's growth
/// (`tcp_rack_update_reo_wnd()`): a D-SACK after a reordering was seen adds a step, at
/// most once per round trip, and the steps fall back to 1 after 16 recoveries without
/// an undo.
#[derive(Clone, Copy, Debug)]
pub struct Rack {
    pub mstamp: u64,
    pub end_seq: u32,
    pub rtt_us: u32,
    pub reo_wnd_steps: u32,
    pub dsack_seen: bool,
    pub last_delivered: u32,
    pub reo_wnd_persist: u32,
    /// What this ACK's cumulatively ACKed segments advance RACK by (the last one's send
    /// time, for its RTT; the most recently sent one's time and end), applied after its
    /// SACKs as the kernel's order has it (`tcp_sacktag_write_queue()` before
    /// `tcp_clean_rtx_queue()`).
    pub acked: Option<(u64, u64, u32)>,
    /// `rack.advanced`: a delivery moved RACK since it last looked.
    pub advanced: bool,
}

/// An ACK's RTT samples from the segments it newly ACKed and that were never
/// retransmitted (`tcp_clean_rtx_queue()`), ns: `seq_rtt` from the oldest
/// (`first_ackt`), for srtt; `ca_rtt` from the newest (`last_ackt`), for the min RTT,
/// the rate sample and the congestion control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct AckRtt {
    pub seq_rtt_ns: u64,
    pub ca_rtt_ns: u64,
}

impl Default for Rack {
    fn default() -> Self {
        Rack { mstamp: 0, end_seq: 0, rtt_us: 0, reo_wnd_steps: 1, dsack_seen: false, last_delivered: 0, reo_wnd_persist: 0, acked: None, advanced: false }
    }
}

/// `TCP_TIMEOUT_MIN`: what `tcp_rack_mark_lost()` adds to the reordering timer, jiffies.
const TCP_TIMEOUT_MIN_JIFFIES: u64 = 2;

/// `TCP_RACK_RECOVERY_THRESH`: recoveries a grown reordering window persists.
const TCP_RACK_RECOVERY_THRESH: u32 = 16;

/// `tcp_mark_skb_lost()`: a segment newly lost, or a retransmission lost again (sent
/// before a segment that arrived): either is sent (again). The counters are the
/// socket's `lost_out`, `lost` and `retrans_out`.
fn tcp_mark_skb_lost(seg: &mut super::TxSeg, lost_out: &mut u32, lost: &mut u32, retrans_out: &mut u32) {
    if !seg.lost {
        seg.lost = true;
        *lost_out += seg.segs;
    }
    *lost += seg.segs;
    if seg.retrans {
        seg.retrans = false;
        *retrans_out -= seg.segs;
    }
}

/// `tcp_rack_skb_timeout()`: what is left (µs) of RACK's RTT `rtt_us` plus `reo_wnd`
/// since `seg` was last sent, at `t`; lost at 0 or below. RACK's loss detection and the
/// RTO's marking (`tcp_timeout_mark_lost()`, `reo_wnd` 0) both ask it.
fn tcp_rack_skb_timeout(rtt_us: i64, seg: &super::TxSeg, t: u64, reo_wnd: i64) -> i64 {
    rtt_us + reo_wnd - (t.saturating_sub(seg.sent) / 1000) as i64
}

/// `tcp_skb_sent_after()`: sent later, or at the same time with a later end.
fn sent_after(t1: u64, t2: u64, seq1: u32, seq2: u32) -> bool {
    t1 > t2 || (t1 == t2 && after(seq1, seq2))
}

impl World {
    /// An ACK reached the sender at `t` on `cpu` (`tcp_v4_rcv()`): it waits in the
    /// backlog while the writer owns the socket (`lock.rs`), else it is processed
    /// here once the socket's spinlock is free. Returns the CPU time of its
    /// processing and of what it transmits.
    pub(crate) fn tcp_ack(&mut self, cpu: CpuId, info: &PktInfo, t: u64) -> u64 {
        let s = info.sock;
        let rec = self.pkts.acks.get(s, info.seq);
        let tp = self.socks.tcp(s);
        if tp.lock.owned {
            tp.lock.tcp_add_backlog(rec);
            return 0;
        }
        let spin = tp.lock.spin(t);
        let cost = spin + self.tcp_ack_rec(cpu, s, rec, t + spin);
        self.socks.tcp(s).lock.hold(t, cost);
        cost
    }

    /// `tcp_ack()` of the ACK `rec` at `t` on `cpu`, and the transmits it clocks
    /// (`tcp_data_snd_check()`). Returns the CPU time.
    pub(crate) fn tcp_ack_rec(&mut self, cpu: CpuId, s: SockId, rec: AckRec, t: u64) -> u64 {
        self.tcp_stats_tick(s);
        let tp = self.socks.tcp(s);
        tp.softirq_cpu = cpu;
        if before(rec.ack, tp.snd_una) || after(rec.ack, tp.snd_nxt) {
            return self.cost(self.profile.costs.tcp_ack_ns);
        }
        let mut win_update = false;
        if tp.rcv.app.is_some() {
            // tcp_ack_update_window() when tcp_may_update_window(): a pure ACK's
            // sequence is the receiver's unchanging snd_nxt (ack_seq == snd_wl1), so
            // it updates when it acknowledges more, opens the window or closes it.
            if after(rec.ack, tp.snd_una) || rec.win > tp.snd_wnd || rec.win == 0 {
                // FLAG_WIN_UPDATE.
                win_update = tp.snd_wnd != rec.win;
                tp.snd_wnd = rec.win;
                tp.max_window = tp.max_window.max(rec.win);
            }
            // tcp_replace_ts_recent(): what new segments echo.
            tp.ts_recent_ms = rec.tsval_ms;
        }
        let prior_in_flight = tp.in_flight();
        let prior_una = tp.snd_una;
        let prior_lost_total = tp.lost;
        let mut rs = RateSample::new(prior_in_flight);
        let prior_fack = tp.tcp_highest_sack_seq();
        if rec.dsack {
            tp.tcp_check_dsack(&rec, prior_una);
        }
        self.socks.tcp(s).orig_sack_acked = false;
        let (acked, rtts) = self.socks.tcp(s).tcp_clean_rtx_queue(rec.ack, t, &mut rs, prior_fack);
        let (newly_sacked, sackt) = self.tcp_sacktag(s, &rec, &mut rs, t);
        self.socks.tcp(s).tcp_rack_apply_acked(t);
        // tcp_ack_update_rtt(): srtt from the oldest segment newly ACKed (seq_rtt_us),
        // else the lowest newly SACKed (sack_rtt_us); the min RTT, the rate sample and
        // the congestion control from the newest ACKed, or the highest newly SACKed
        // when the ACK SACKed any (ca_rtt_us, "RTT of last (S)ACKed packet").
        let rtts = match (rtts, sackt) {
            (r, None) => r,
            (r, Some((first, last))) => Some(AckRtt { seq_rtt_ns: r.map_or(t - first, |r| r.seq_rtt_ns), ca_rtt_ns: t - last }),
        };
        if let Some(r) = rtts {
            self.tcp_ack_update_rtt(s, r.seq_rtt_ns, r.ca_rtt_ns);
        }
        let rtt_ns = rtts.map(|r| r.ca_rtt_ns);
        let tp = self.socks.tcp(s);
        let una_advanced = tp.snd_una != prior_una;
        // tcp_clean_rtx_queue(): an ACK that ACKs nothing re-arms the timer
        // (FLAG_SET_XMIT_TIMER) when its SACK RTT sample is of data sent before the head
        // was last (re)transmitted: a long recovery, SACKs still coming for what went
        // before the head's retransmission, is not cut short by the RTO. Data sent
        // after it does not extend the timeout.
        let sack_rearms = acked == 0 && sackt.is_some_and(|(first, _)| tp.rtx.front().is_some_and(|h| first < h.sent));
        // tp->delivered's growth: what this ACK newly ACKed or SACKed.
        let delivered = acked + newly_sacked;
        // tcp_ack()'s order (6.1): the SACKed deliveries are counted, then the
        // congestion control's in_ack_event (snd_una already moved), then
        // tcp_clean_rtx_queue()'s deliveries (tcp_count_delivered()).
        tp.tcp_count_delivered(newly_sacked, rec.ece);
        let ev_flags = if rec.ece { CA_ACK_ECE } else { 0 };
        tp.with_ca(|ca, tp| ca.in_ack_event(tp, ev_flags));
        tp.tcp_count_delivered(acked, rec.ece);
        rs.rtt_us = rtt_ns.map_or(-1, |r| (r / 1000) as i64);
        // tcp_rack_update_reo_wnd(), after the ACK's deliveries.
        tp.tcp_rack_update_reo_wnd(&rs);
        if tp.tlp_high_seq.is_some() {
            // A pure duplicate ACK: nothing newly ACKed or SACKed (the receiver answers a
            // duplicate segment with one at once).
            let pure_dupack = !una_advanced && newly_sacked == 0;
            self.tcp_process_tlp_ack(s, rec.ack, pure_dupack);
        }
        // tcp_ack_is_dubious(): a duplicate (nothing ACKed, no window update), an
        // alert (SACKed data, ECE, a D-SACK), or a state other than Open. Only then
        // does tcp_fastretrans_alert() run, and RACK with it (tcp_identify_packet_loss()).
        let tp = self.socks.tcp(s);
        let dubious = (!una_advanced && !win_update) || newly_sacked > 0 || rec.ece || rec.dsack || tp.ca_state != CaState::Open;
        let mut reo_timeout = if dubious { tp.tcp_rack_mark_lost(t) } else { None };
        // rs->losses: segments newly marked lost, a retransmission lost again included.
        let newly_lost = tp.lost > prior_lost_total;
        let lost = tp.lost - prior_lost_total;
        tp.tcp_rate_gen(delivered, lost, t / 1000, &mut rs);
        let tp = self.socks.tcp(s);
        // tcp_fastretrans_alert() in Recovery: undo the window reduction when D-SACKs
        // showed every retransmission spurious (tcp_try_undo_dsack(), mid-recovery; at
        // its end tcp_try_undo_recovery()), and then the recovery is over.
        if tp.ca_state == CaState::Recovery && tp.undo_marker.is_some() && tp.undo_retrans == 0 {
            tp.tcp_undo_cwnd_reduction(false);
            self.tcp_set_ca_state(s, CaState::Open);
            if rec.ece {
                self.tcp_enter_cwr(s);
            }
        } else if tp.ca_state == CaState::Recovery && tp.ca_state_exit_due() && tp.rack.reo_wnd_persist > 0 {
            tp.rack.reo_wnd_persist -= 1;
        }
        // tcp_fastretrans_alert()'s state exit for CWR (step D): once something above
        // high_seq is acknowledged the reduction ends (tcp_end_cwnd_reduction()) before
        // this ACK's ECE is looked at (step E), so an ECE on it starts the next
        // reduction at once, and without one tcp_cong_control() grows cwnd on it.
        if self.socks.tcp(s).ca_state == CaState::Cwr && self.socks.tcp(s).ca_state_exit_due() {
            self.tcp_end_cwnd_reduction(s);
            self.tcp_set_ca_state(s, CaState::Open);
        }
        if self.socks.tcp(s).ca_state == CaState::Loss {
            // A duplicate ACK (`num_dupack`): it moved nothing, updated no window and
            // is no D-SACK.
            let dupack = !una_advanced && !win_update && !rec.dsack;
            if self.tcp_process_loss(s, una_advanced, newly_sacked > 0, dupack) {
                // The undo makes RACK look again (`tcp_undo_cwnd_reduction()` sets
                // `rack.advanced`), and tcp_fastretrans_alert() goes on as in Open: a
                // segment still found lost starts Recovery below.
                let tp = self.socks.tcp(s);
                tp.rack.advanced = true;
                reo_timeout = tp.tcp_rack_mark_lost(t);
            }
        }
        let tp = self.socks.tcp(s);
        // tcp_fastretrans_alert(), step E: a loss starts Recovery (tcp_time_to_recover():
        // RACK marked one); otherwise tcp_try_to_open().
        if tp.lost_out > 0 && tp.ca_state < CaState::Recovery {
            self.tcp_enter_recovery(s, rec.ece);
        } else if dubious && tp.ca_state < CaState::Cwr {
            self.tcp_try_to_open(s, rec.ece);
        }
        self.tcp_cong_control(s, &rs, acked > 0, una_advanced && !newly_lost, rtt_ns, t);
        let tp = self.socks.tcp(s);
        // The probe's event waits until tcp_write_xmit() below has run: new data arms
        // the probe again at once, and one event then serves both arms.
        let mut probe_pushes = None;
        if tp.packets_out == 0 || acked > 0 {
            tp.backoff = 0;
        }
        if let Some(us) = reo_timeout {
            // tcp_rack_mark_lost(): the reordering timer in place of any other, and
            // FLAG_SET_XMIT_TIMER cleared.
            let j = self.cfg.jiffy_ns;
            let at = self.now + whole_jiffies(us as u64 * 1000, j) + TCP_TIMEOUT_MIN_JIFFIES * j;
            self.tcp_reset_xmit_timer(s, XmitTimer::ReoTimeout, at, true);
        } else if tp.packets_out == 0 || acked > 0 || sack_rearms {
            // tcp_set_xmit_timer(): a loss probe, else the RTO.
            let pushes = tp.rto_pushes;
            if tp.packets_out > 0 && self.tcp_schedule_loss_probe(s, true, false) {
                probe_pushes = Some(pushes);
            } else {
                self.tcp_rearm_rto(s);
            }
        }
        self.tcp_update_pacing_rate(s);
        let cost = self.cost(self.profile.costs.tcp_ack_ns);
        // tcp_data_snd_check(): the ACK clock, then the writer's buffer.
        let cost = cost + self.tcp_write_xmit(cpu, s, t + cost);
        self.tcp_check_space(s);
        let tp = self.socks.tcp(s);
        if let (Some(pushes), Some(at)) = (probe_pushes, tp.rto_at) {
            if tp.rto_pushes == pushes {
                self.tcp_push_xmit_timer(s, at);
            }
        }
        cost
    }

    /// `tcp_sacktag_write_queue()`: mark what the SACK blocks cover; returns the packets
    /// newly SACKed. A multi-segment skb that a block covers in part is split at an MSS
    /// boundary first (`tcp_match_skb_to_sack()`), so its SACKed segments are not
    /// retransmitted with the lost one.
    ///
    /// A newly SACKed segment never (re)sent again that lies below the highest SACK
    /// filled a hole by itself: a reordering (`state->reord`, checked by
    /// `tcp_check_sack_reordering()` unless in Loss). Each newly SACKed segment
    /// advances RACK (`tcp_rack_advance()`).
    ///
    /// Also returns the send times of the lowest and the highest newly SACKed segments
    /// never retransmitted (`first_sackt`, `last_sackt`: the kernel walks the blocks in
    /// sequence order), for the ACK's RTT samples.
    fn tcp_sacktag(&mut self, s: SockId, rec: &AckRec, rs: &mut RateSample, t: u64) -> (u32, Option<(u64, u64)>) {
        let mut newly = 0;
        // (start, sent) of the lowest and the highest newly SACKed original segment.
        let mut sackt: Option<((u32, u64), (u32, u64))> = None;
        let tp = self.socks.tcp(s);
        let mut reord = tp.snd_nxt;
        // tcp_highest_sack_seq() as the walk moves it: the highest SACKed end so far.
        let mut fack = tp.tcp_highest_sack_seq();
        // A D-SACK block tags nothing new (tcp_check_dsack() took it).
        for &(start, end) in &rec.sacks[rec.dsack as usize..rec.n_sacks as usize] {
            let mut i = self.tcp_seg_index(s, start);
            let tp = self.socks.tcp(s);
            // The skb holding `start` may begin before it.
            if i > 0 && after(tp.rtx[i - 1].end, start) {
                i -= 1;
            }
            while i < tp.rtx.len() {
                if !before(tp.rtx[i].start, end) {
                    break;
                }
                if tp.tcp_match_skb_to_sack(i, start, end) && !tp.rtx[i].sacked {
                    let mut seg = tp.rtx[i];
                    tp.tcp_rack_advance(&seg, t);
                    if !(seg.retrans || seg.ever_retrans) {
                        if before(seg.start, fack) && before(seg.start, reord) {
                            reord = seg.start;
                        }
                        if !after(seg.end, tp.high_seq) {
                            tp.orig_sack_acked = true;
                        }
                        let this = (seg.start, seg.sent);
                        sackt = Some(match sackt {
                            None => (this, this),
                            Some((lo, hi)) => (if before(seg.start, lo.0) { this } else { lo }, if after(seg.start, hi.0) { this } else { hi }),
                        });
                    }
                    if after(seg.end, fack) {
                        fack = seg.end;
                    }
                    seg.sacked = true;
                    tp.tcp_rate_skb_delivered(&mut seg, rs);
                    tp.sacked_out += seg.segs;
                    newly += seg.segs;
                    if seg.lost {
                        seg.lost = false;
                        tp.lost_out -= seg.segs;
                    }
                    if seg.retrans {
                        seg.retrans = false;
                        tp.retrans_out -= seg.segs;
                    }
                    tp.rtx[i] = seg;
                }
                i += 1;
            }
        }
        let tp = self.socks.tcp(s);
        if tp.ca_state != CaState::Loss {
            tp.tcp_check_sack_reordering(reord);
        }
        (newly, sackt.map(|(lo, hi)| (lo.1, hi.1)))
    }

    /// `tcp_init_cwnd_reduction()`: the window after the loss, and PRR's start.
    fn tcp_init_cwnd_reduction(&mut self, s: SockId) {
        let tp = self.socks.tcp(s);
        tp.high_seq = tp.snd_nxt;
        tp.tlp_high_seq = None;
        tp.prior_cwnd = tp.w.cwnd;
        tp.prr_delivered = 0;
        tp.prr_out = 0;
        tp.w.cwnd_cnt = 0;
        tp.w.ssthresh = tp.with_ca(|ca, tp| ca.ssthresh(tp));
        tp.tcp_ecn_queue_cwr();
    }

    /// `tcp_enter_recovery()`: the window is reduced only when no reduction is under
    /// way (`tcp_in_cwnd_reduction()`): from CWR, Recovery keeps CWR's ssthresh and
    /// high_seq, so a local drop or an ECE followed by a loss cuts the window once.
    ///
    /// It also starts the undo's bookkeeping (`tcp_init_undo()`), and keeps the
    /// ssthresh to restore (`tcp_current_ssthresh()`, unless an ECE came with it).
    pub(super) fn tcp_enter_recovery(&mut self, s: SockId, ece_ack: bool) {
        let tp = self.socks.tcp(s);
        let in_reduction = tp.ca_state == CaState::Cwr;
        tp.prior_ssthresh = 0;
        tp.tcp_init_undo();
        if !in_reduction && !ece_ack {
            tp.prior_ssthresh = tp.tcp_current_ssthresh();
        }
        if !in_reduction {
            self.tcp_init_cwnd_reduction(s);
        }
        self.tcp_set_ca_state(s, CaState::Recovery);
    }

    /// `tcp_process_tlp_ack()`: once the ACK reaches the probe's `tlp_high_seq`, a probe
    /// of new data is done with; an ACK beyond it means the probe repaired a lost tail
    /// (the original and the probe did not both arrive): one window reduction, ended at
    /// once (`tcp_end_cwnd_reduction()`, then Open). A pure duplicate ACK (or the
    /// kernel's DSACK of the probe) means both arrived: no loss.
    pub(super) fn tcp_process_tlp_ack(&mut self, s: SockId, ack: u32, pure_dupack: bool) {
        let tp = self.socks.tcp(s);
        let Some(high) = tp.tlp_high_seq else { return };
        if before(ack, high) {
            return;
        }
        if !tp.tlp_retrans {
            tp.tlp_high_seq = None;
        } else if after(ack, high) {
            tp.tlp_recoveries += 1;
            self.tcp_init_cwnd_reduction(s);
            let tp = self.socks.tcp(s);
            // tcp_end_cwnd_reduction(): a congestion control with cong_control keeps
            // its own window.
            if !tp.ca().has_cong_control() {
                tp.w.cwnd = tp.w.ssthresh;
            }
            // tcp_try_keep_open(): out of CWR at once, to Open or Disorder.
            self.tcp_try_keep_open(s);
        } else if pure_dupack {
            tp.tlp_high_seq = None;
        }
    }

    /// `tcp_end_cwnd_reduction()`: cwnd is set to ssthresh, unless the congestion
    /// control has `cong_control` and keeps its own.
    fn tcp_end_cwnd_reduction(&mut self, s: SockId) {
        let tp = self.socks.tcp(s);
        if !tp.ca().has_cong_control() && tp.w.ssthresh < u32::MAX {
            tp.w.cwnd = tp.w.ssthresh;
        }
    }

    /// `tcp_rack_reo_timeout()`: RACK's reordering timer fired at `t` on `cpu`. The
    /// segments whose window has passed are lost; if any were, Recovery starts (with
    /// one PRR step, `tcp_cwnd_reduction(sk, 1, 0)`, for a congestion control without
    /// `cong_control`) and they are retransmitted (`tcp_xmit_retransmit_queue()`: the
    /// model's transmit loop, which sends retransmissions first). Then the RTO, unless
    /// it is pending. Returns the CPU time.
    pub(super) fn tcp_rack_reo_timeout(&mut self, cpu: CpuId, s: SockId, t: u64) -> u64 {
        let tp = self.socks.tcp(s);
        if tp.packets_out == 0 {
            return 0;
        }
        let prior_inflight = tp.in_flight();
        tp.tcp_rack_detect_loss(t);
        let mut cost = 0;
        if prior_inflight != tp.in_flight() {
            if tp.ca_state != CaState::Recovery {
                self.tcp_enter_recovery(s, false);
                let tp = self.socks.tcp(s);
                if !tp.ca().has_cong_control() {
                    tp.tcp_cwnd_reduction(1, false);
                }
            }
            cost = self.tcp_write_xmit(cpu, s, t);
        }
        let tp = self.socks.tcp(s);
        if !(tp.xmit_timer == XmitTimer::Retrans && tp.rto_at.is_some()) {
            self.tcp_rearm_rto(s);
        }
        cost
    }

    /// `tcp_try_to_open()`: a dubious ACK that found no loss, in Open or Disorder. An
    /// ECE reduces the window (CWR); otherwise `tcp_try_keep_open()`.
    fn tcp_try_to_open(&mut self, s: SockId, ece: bool) {
        if ece {
            self.tcp_enter_cwr(s);
        }
        if self.socks.tcp(s).ca_state != CaState::Cwr {
            self.tcp_try_keep_open(s);
        }
    }

    /// `tcp_try_keep_open()`: Disorder while SACKed, lost or retransmitted segments are
    /// outstanding (`tcp_left_out()`, `tcp_any_retrans_done()`), else Open; a change
    /// moves `high_seq` to `snd_nxt`.
    fn tcp_try_keep_open(&mut self, s: SockId) {
        let tp = self.socks.tcp(s);
        let any_retrans = tp.retrans_out > 0 || tp.rtx.front().is_some_and(|g| g.ever_retrans);
        let state = if tp.sacked_out + tp.lost_out > 0 || any_retrans { CaState::Disorder } else { CaState::Open };
        if tp.ca_state != state {
            self.tcp_set_ca_state(s, state);
            let tp = self.socks.tcp(s);
            tp.high_seq = tp.snd_nxt;
        }
    }

    /// `tcp_process_loss()`: an ACK in Loss, after an RTO. It undoes the timeout when
    /// it moved `snd_una` and D-SACKs showed the retransmissions spurious
    /// (`tcp_try_undo_loss()`), or, with F-RTO armed, when it ACKed or SACKed a segment
    /// never retransmitted (step 3b: the timeout was spurious). With F-RTO, the first
    /// ACK that moves `snd_una` short of `high_seq` sends new data next rather than
    /// retransmitting (step 2b, `REXMIT_NEW`, while the write queue has data and the
    /// receive window room), and a SACK or duplicate ACK after that ends F-RTO (step
    /// 3a: the loss was real). Leaving Loss once `high_seq` is ACKed is
    /// `tcp_cong_control()`'s (`tcp_try_undo_recovery()` undoes first if it may).
    /// Returns whether the timeout was undone.
    fn tcp_process_loss(&mut self, s: SockId, una_advanced: bool, data_sacked: bool, dupack: bool) -> bool {
        let tp = self.socks.tcp(s);
        let recovered = !before(tp.snd_una, tp.high_seq);
        if una_advanced && self.tcp_try_undo_loss(s, false) {
            return true;
        }
        let tp = self.socks.tcp(s);
        if tp.frto {
            if tp.orig_sack_acked && self.tcp_try_undo_loss(s, true) {
                return true;
            }
            let tp = self.socks.tcp(s);
            if after(tp.snd_nxt, tp.high_seq) {
                if data_sacked || dupack {
                    tp.frto = false;
                }
            } else if una_advanced && !recovered {
                tp.high_seq = tp.snd_nxt;
                let unsent = tp.write_seq != tp.snd_nxt;
                if unsent && after(tp.snd_una.wrapping_add(tp.snd_wnd), tp.snd_nxt) {
                    tp.frto_new_data = true;
                    return false;
                }
                tp.frto = false;
            }
        }
        let tp = self.socks.tcp(s);
        if recovered && tp.tcp_may_undo() {
            tp.tcp_undo_cwnd_reduction(false);
        }
        false
    }

    /// `tcp_try_undo_loss()`: undo the timeout, F-RTO's (`frto_undo`) or because
    /// `tcp_may_undo()`: no segment stays marked lost, cwnd and ssthresh go back, the
    /// backoff restarts, and the state is Open. Returns whether it undid.
    fn tcp_try_undo_loss(&mut self, s: SockId, frto_undo: bool) -> bool {
        let tp = self.socks.tcp(s);
        if !(frto_undo || tp.tcp_may_undo()) {
            return false;
        }
        tp.tcp_undo_cwnd_reduction(true);
        if frto_undo {
            tp.spurious_rtos += 1;
        }
        tp.backoff = 0;
        self.tcp_set_ca_state(s, CaState::Open);
        true
    }

    /// `tcp_enter_cwr()`: a local drop, NET_XMIT_CN or an ECE reduces the window once,
    /// without a retransmission.
    pub(super) fn tcp_enter_cwr(&mut self, s: SockId) {
        if self.socks.tcp(s).ca_state < CaState::Cwr {
            self.tcp_init_cwnd_reduction(s);
            self.tcp_set_ca_state(s, CaState::Cwr);
        }
    }

    /// `tcp_cong_control()`: PRR in a window reduction (`tcp_cwnd_reduction()`), else
    /// the congestion control's growth when the flow is cwnd-limited; leaving Recovery
    /// or CWR sets cwnd to ssthresh (`tcp_end_cwnd_reduction()`).
    ///
    /// `data_acked` is FLAG_DATA_ACKED (the ACK advanced `snd_una`): `tcp_may_raise_cwnd()`
    /// grows cwnd only then, not on an ACK that only SACKs.
    fn tcp_cong_control(&mut self, s: SockId, rs: &RateSample, data_acked: bool, una_advanced: bool, rtt_ns: Option<u64>, t: u64) {
        let delivered = rs.acked_sacked;
        if self.socks.tcp(s).ca().has_cong_control() {
            return self.tcp_cong_control_ca(s, rs);
        }
        let ctx = self.tcp_ack_ctx(s, t);
        let tp = self.socks.tcp(s);
        let rtt_us = rtt_ns.map(|r| (r / 1000).min(u32::MAX as u64) as u32);
        let mut w = tp.w;
        tp.with_ca(|ca, _| ca.pkts_acked(rtt_us, &mut w, &ctx));
        tp.w = w;
        match tp.ca_state {
            CaState::Recovery | CaState::Cwr if tp.ca_state_exit_due() => {
                // Everything up to the recovery point is acknowledged
                // (tcp_try_undo_recovery() opens, then tcp_try_to_open()).
                tp.w.cwnd = tp.w.ssthresh;
                self.tcp_set_ca_state(s, CaState::Open);
                self.tcp_try_keep_open(s);
            }
            CaState::Recovery | CaState::Cwr if delivered > 0 => tp.tcp_cwnd_reduction(delivered, una_advanced),
            CaState::Recovery | CaState::Cwr => {}
            CaState::Open | CaState::Disorder | CaState::Loss => {
                if tp.ca_state == CaState::Loss && tp.ca_state_exit_due() {
                    // tcp_process_loss() opens, then falls through to tcp_try_to_open().
                    self.tcp_set_ca_state(s, CaState::Open);
                    self.tcp_try_keep_open(s);
                }
                let tp = self.socks.tcp(s);
                // tcp_may_raise_cwnd() -> tcp_cong_avoid(), only when cwnd is used, on
                // in-order delivery; with a reordering degree above the default, on any
                // forward progress (ACKed or SACKed).
                let may_raise = if tp.reordering > TCP_REORDERING { delivered > 0 } else { data_acked };
                if tp.tcp_is_cwnd_limited() && may_raise && delivered > 0 {
                    let mut w = tp.w;
                    tp.with_ca(|ca, _| ca.cong_avoid(&mut w, delivered, &ctx));
                    tp.w = w;
                }
            }
        }
    }

    /// `ca_ops->cong_control` (BBR): leaving Recovery or CWR keeps the congestion
    /// control's cwnd (`tcp_end_cwnd_reduction()` returns early for it), then its
    /// `cong_control` sets cwnd and the pacing rate.
    fn tcp_cong_control_ca(&mut self, s: SockId, rs: &RateSample) {
        let clock = self.tcp_clock();
        if self.socks.tcp(s).ca_state_exit_due() {
            self.tcp_set_ca_state(s, CaState::Open);
            self.tcp_try_keep_open(s);
        }
        self.socks.tcp(s).with_ca(|ca, tp| ca.cong_control(tp, rs, clock));
    }

    /// The socket as its congestion control sees it at `t`.
    pub(super) fn tcp_ack_ctx(&mut self, s: SockId, t: u64) -> AckCtx {
        let (jiffies, hz) = (self.jiffies() as u32, self.cfg.hz);
        let tp = self.socks.tcp(s);
        AckCtx {
            jiffies,
            now_us: (t / 1000) as u32,
            hz,
            snd_una: tp.snd_una,
            snd_nxt: tp.snd_nxt,
            pacing_rate: tp.pacing_rate,
            paced: tp.pacing != super::Pacing::None,
            gso_max_size: tp.gso_max_size,
        }
    }

    /// `tcp_set_ca_state()`: the congestion control's `set_state` sees the change
    /// before `icsk_ca_state` takes it.
    pub(super) fn tcp_set_ca_state(&mut self, s: SockId, state: CaState) {
        let ctx = self.tcp_ack_ctx(s, self.now);
        let tp = self.socks.tcp(s);
        tp.with_ca(|ca, tp| ca.set_state(tp, state, &ctx));
        tp.ca_state = state;
    }

    /// `tcp_ack_update_rtt()` with an ACK's two samples (ns): `tcp_update_rtt_min()` from
    /// `ca_rtt` (the newest segment it ACKed), then `tcp_rtt_estimator()` from `seq_rtt`
    /// (the oldest). The min RTT is the run's minimum: the kernel's filter keeps it for
    /// `tcp_min_rtt_wlen` (300 s), longer than a run.
    pub(super) fn tcp_ack_update_rtt(&mut self, s: SockId, seq_rtt_ns: u64, ca_rtt_ns: u64) {
        let tp = self.socks.tcp(s);
        let ca_us = (ca_rtt_ns / 1000).min(u32::MAX as u64 / 16) as u32;
        tp.min_rtt_us = tp.min_rtt_us.min(ca_us.max(1));
        self.tcp_rtt_estimator(s, seq_rtt_ns);
    }

    /// `tcp_rtt_estimator()` and `tcp_set_rto()`: Jacobson's srtt (x 8) and mdev (x 4),
    /// with the kernel's two departures from RFC 6298.
    /// - A sample below srtt moves mdev with an eighth of the gain (the "Eifel" comment):
    ///   a falling RTT does not inflate the RTO.
    /// - `rttvar` is the largest mdev of the current round trip (`mdev_max`, which starts
    ///   each round at `rto_min`), and falls by a quarter of its excess once per round
    ///   trip (`rtt_seq`). So the RTO rises at once with a burst of variance and falls
    ///   back over several RTTs, never below srtt + 200 ms.
    ///
    /// RTO = srtt + rttvar in jiffies (`usecs_to_jiffies()`, rounded up), at most 120 s
    /// (`tcp_bound_rto()`).
    pub(super) fn tcp_rtt_estimator(&mut self, s: SockId, rtt_ns: u64) {
        let jiffy_ns = self.cfg.jiffy_ns;
        let tp = self.socks.tcp(s);
        let mrtt = (rtt_ns / 1000).min(u32::MAX as u64 / 16) as i64;
        let rto_min_us = (TCP_RTO_MIN_NS / 1000) as u32;
        let mut srtt = tp.srtt_us as i64;
        if srtt != 0 {
            let mut m = mrtt - (srtt >> 3);
            srtt += m;
            if m < 0 {
                m = -m - (tp.mdev_us >> 2) as i64;
                if m > 0 {
                    m >>= 3;
                }
            } else {
                m -= (tp.mdev_us >> 2) as i64;
            }
            tp.mdev_us = (tp.mdev_us as i64 + m) as u32;
            if tp.mdev_us > tp.mdev_max_us {
                tp.mdev_max_us = tp.mdev_us;
                tp.rttvar_us = tp.rttvar_us.max(tp.mdev_max_us);
            }
            if after(tp.snd_una, tp.rtt_seq) {
                if tp.mdev_max_us < tp.rttvar_us {
                    tp.rttvar_us -= (tp.rttvar_us - tp.mdev_max_us) >> 2;
                }
                tp.rtt_seq = tp.snd_nxt;
                tp.mdev_max_us = rto_min_us;
            }
        } else {
            srtt = mrtt << 3;
            tp.mdev_us = (mrtt << 1) as u32;
            tp.rttvar_us = tp.mdev_us.max(rto_min_us);
            tp.mdev_max_us = tp.rttvar_us;
            tp.rtt_seq = tp.snd_nxt;
        }
        tp.srtt_us = (srtt as u32).max(1);
        let rto_us = (tp.srtt_us >> 3) as u64 + tp.rttvar_us as u64;
        tp.rto_ns = whole_jiffies(rto_us * 1000, jiffy_ns).min(TCP_RTO_MAX_NS);
    }

    /// `tcp_retransmit_timer()`: every outstanding segment not SACKed is lost, cwnd
    /// restarts at 1 (`tcp_enter_loss()`), the timer backs off. Returns whether it
    /// fired (with data in flight).
    pub(super) fn tcp_retransmit_timer(&mut self, s: SockId) -> bool {
        let tp = self.socks.tcp(s);
        if tp.packets_out == 0 {
            return false;
        }
        tp.timeouts += 1;
        // tcp_enter_loss(): tcp_timeout_mark_lost() first. Every unSACKed segment is lost
        // (a retransmission of it in flight too), but those sent more recently than
        // RACK's RTT ago, the head aside (`tcp_rack_skb_timeout(tp, skb, 0) > 0`): they
        // may still arrive, and stay in flight as they are.
        let (now, rack_rtt_us) = (self.now, tp.rack.rtt_us as i64);
        for (i, seg) in tp.rtx.iter_mut().enumerate() {
            if seg.sacked || (i > 0 && tcp_rack_skb_timeout(rack_rtt_us, seg, now, 0) > 0) {
                continue;
            }
            tcp_mark_skb_lost(seg, &mut tp.lost_out, &mut tp.lost, &mut tp.retrans_out);
        }
        // ssthresh is reduced once per window: from Open, once the previous reduction's
        // high_seq is acknowledged, or at the first RTO of a Loss episode
        // (icsk_retransmits = 0: `backoff` here, reset by forward progress), not again at
        // a repeated RTO without progress. The window before is kept for an undo
        // (`tcp_init_undo()`), and the congestion control hears CA_EVENT_LOSS.
        let new_recovery = tp.ca_state < CaState::Recovery;
        if tp.ca_state <= CaState::Disorder || !after(tp.high_seq, tp.snd_una) || (tp.ca_state == CaState::Loss && tp.backoff == 0) {
            tp.prior_ssthresh = tp.tcp_current_ssthresh();
            tp.prior_cwnd = tp.w.cwnd;
            tp.w.ssthresh = tp.with_ca(|ca, tp| ca.ssthresh(tp));
            tp.with_ca(|ca, tp| ca.cwnd_event(tp, CaEvent::Loss));
            tp.tcp_init_undo();
        }
        tp.tcp_ecn_queue_cwr();
        tp.high_seq = tp.snd_nxt;
        tp.tlp_high_seq = None;
        tp.w.cwnd_cnt = 0;
        // cwnd = packets in flight + 1 (what is not marked lost).
        tp.w.cwnd = tp.in_flight() + 1;
        // F-RTO's step 1: armed unless a recovery was under way, a repeated timeout of
        // the same snd_una excepted (icsk_retransmits: `backoff`).
        tp.frto = new_recovery || tp.backoff > 0;
        self.tcp_set_ca_state(s, CaState::Loss);
        let tp = self.socks.tcp(s);
        tp.backoff += 1;
        self.tcp_rearm_rto(s);
        true
    }
}

impl super::TcpSock {
    /// `tcp_count_delivered()`: `delivered` packets newly delivered, CE-echoed too if
    /// the ACK carried ECE.
    fn tcp_count_delivered(&mut self, delivered: u32, ece: bool) {
        self.rate.delivered = self.rate.delivered.wrapping_add(delivered);
        if ece {
            self.delivered_ce = self.delivered_ce.wrapping_add(delivered);
        }
    }

    /// `tcp_clean_rtx_queue()`: drop what `ack` covers, and trim the acked head off a
    /// multi-segment skb it covers in part (`tcp_tso_acked()`); returns the packets
    /// newly delivered by it (not SACKed before), and the RTT samples of the first and
    /// the last of them never retransmitted (Karn's rule; `first_ackt` and `last_ackt`).
    /// The kernel takes neither from an ACK that also covers a retransmission
    /// (`FLAG_RETRANS_DATA_ACKED`) and falls back to the timestamp echo, in whole
    /// milliseconds; the model takes the originals' send times there too.
    ///
    /// A never-retransmitted segment ACKed below the highest SACK before this ACK
    /// (`prior_fack`) filled a hole by itself: a reordering. Each segment it delivers
    /// advances RACK.
    fn tcp_clean_rtx_queue(&mut self, ack: u32, t: u64, rs: &mut RateSample, prior_fack: u32) -> (u32, Option<AckRtt>) {
        let tp = self;
        let (mut acked, mut rtt): (u32, Option<AckRtt>) = (0, None);
        let mut reord = tp.snd_nxt;
        while let Some(&front) = tp.rtx.front() {
            let fully = !after(front.end, ack);
            // tcp_tso_acked(): of a skb `ack` covers in part, the whole segments below it.
            let n = if fully {
                front.segs
            } else if front.segs > 1 && !front.sacked && after(ack, front.start) {
                ack.wrapping_sub(front.start) / tp.mss
            } else {
                0
            };
            if n == 0 {
                break;
            }
            // The rate sample sees the skb as sent (its end, before any trim).
            let mut whole = front;
            tp.tcp_rate_skb_delivered(&mut whole, rs);
            let seg = if fully {
                tp.rtx.pop_front().expect("front")
            } else {
                let mid = front.start.wrapping_add(n * tp.mss);
                let rest = tp.rtx.front_mut().expect("front");
                rest.start = mid;
                rest.segs -= n;
                super::TxSeg { end: mid, segs: n, ..front }
            };
            tp.packets_out -= seg.segs;
            if seg.sacked {
                tp.sacked_out -= seg.segs;
            } else {
                acked += seg.segs;
                tp.tcp_rack_advance_acked(&seg, t);
                if !seg.ever_retrans {
                    let ca_rtt_ns = t - seg.sent;
                    rtt = Some(AckRtt { seq_rtt_ns: rtt.map_or(ca_rtt_ns, |r| r.seq_rtt_ns), ca_rtt_ns });
                }
                // TCPCB_RETRANS: neither retransmitted nor being resent.
                if !(seg.retrans || seg.ever_retrans) {
                    if before(seg.start, reord) {
                        reord = seg.start;
                    }
                    // FLAG_ORIG_SACK_ACKED, by the skb's end (a trimmed skb's too).
                    if !after(whole.end, tp.high_seq) {
                        tp.orig_sack_acked = true;
                    }
                }
            }
            if seg.lost {
                tp.lost_out -= seg.segs;
            }
            if seg.retrans {
                tp.retrans_out -= seg.segs;
            }
            tp.wmem_queued -= seg.end.wrapping_sub(seg.start) as u64;
        }
        tp.snd_una = ack;
        if before(reord, prior_fack) {
            tp.tcp_check_sack_reordering(reord);
        }
        (acked, rtt)
    }

    /// `tcp_check_dsack()` with `tcp_dsack_seen()` and `tcp_sacktag_one()`'s D-SACK
    /// accounting: the ACK's first block is a D-SACK when it lies below the cumulative
    /// ACK or inside the second block. Its segments count in `dsack_dups`; a D-SACK of
    /// more than was ever retransmitted, or wider than the window, is ignored. After a
    /// reordering was seen, one that is not of a loss probe marks RACK's `dsack_seen`.
    /// In a recovery, the retransmitted segments it covers come off `undo_retrans`:
    /// below `snd_una` by count ("dumb counting"), above it those marked retransmitted.
    fn tcp_check_dsack(&mut self, rec: &AckRec, prior_snd_una: u32) {
        let (start, end) = rec.sacks[0];
        let below = before(start, rec.ack);
        let inside = rec.n_sacks > 1 && !after(end, rec.sacks[1].1) && !before(start, rec.sacks[1].0);
        if !(below || inside) || !before(start, end) {
            return;
        }
        let len = end.wrapping_sub(start);
        if self.max_window > 0 && len > self.max_window {
            return;
        }
        let (dup_segs, dsack_tlp) = if len > self.mss { (len.div_ceil(self.mss), false) } else { (1, self.tlp_high_seq == Some(end)) };
        self.dsack_dups += dup_segs as u64;
        if self.dsack_dups > self.total_retrans {
            return;
        }
        if self.reord_seen > 0 && !dsack_tlp {
            self.rack.dsack_seen = true;
        }
        if !self.undo_marker.is_some_and(|m| self.undo_retrans > 0 && after(end, m)) {
            return;
        }
        let n = if !after(end, prior_snd_una) {
            dup_segs
        } else {
            self.rtx.iter().filter(|g| g.ever_retrans && !before(g.start, start) && !after(g.end, end)).map(|g| g.segs).sum()
        };
        self.undo_retrans = (self.undo_retrans - n as i32).max(0);
    }

    /// `tcp_rack_update_reo_wnd()`: a D-SACK seen (after a reordering) adds a step to
    /// RACK's window, once per round trip (`rack.last_delivered`), and keeps it for
    /// `TCP_RACK_RECOVERY_THRESH` recoveries; without one the window falls back to one
    /// step once that count has run out.
    fn tcp_rack_update_reo_wnd(&mut self, rs: &RateSample) {
        if rs.prior_delivered == 0 {
            return;
        }
        if before(rs.prior_delivered, self.rack.last_delivered) {
            self.rack.dsack_seen = false;
        }
        if self.rack.dsack_seen {
            self.rack.reo_wnd_steps = (self.rack.reo_wnd_steps + 1).min(0xFF);
            self.rack.dsack_seen = false;
            self.rack.last_delivered = self.rate.delivered;
            self.rack.reo_wnd_persist = TCP_RACK_RECOVERY_THRESH;
        } else if self.rack.reo_wnd_persist == 0 {
            self.rack.reo_wnd_steps = 1;
        }
    }

    /// `tcp_init_undo()`: the recovery starts at `snd_una`, and the retransmissions
    /// still in flight (a loss probe's included) may yet be D-SACKed; -1 when there are
    /// none ("0 means can undo now").
    fn tcp_init_undo(&mut self) {
        self.undo_marker = Some(self.snd_una);
        self.undo_retrans = self.retrans_out as i32 + (self.tlp_high_seq.is_some() && self.tlp_retrans) as i32;
        if self.undo_retrans == 0 {
            self.undo_retrans = -1;
        }
    }

    /// `tcp_current_ssthresh()`: ssthresh in a window reduction (CWR, Recovery), else
    /// the larger of ssthresh and 3/4 of cwnd.
    fn tcp_current_ssthresh(&self) -> u32 {
        if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            self.w.ssthresh
        } else {
            self.w.ssthresh.max((self.w.cwnd >> 1) + (self.w.cwnd >> 2))
        }
    }

    /// `tcp_may_undo()`: a reduction to undo, and D-SACKs showed every retransmission
    /// since it spurious (the timestamp test, `tcp_packet_delayed()`, is not modelled).
    fn tcp_may_undo(&self) -> bool {
        self.undo_marker.is_some() && self.undo_retrans == 0
    }

    /// `tcp_undo_cwnd_reduction()`: the congestion control's window before the
    /// reduction (`undo_cwnd`: Reno and CUBIC the larger of now and before) and the
    /// ssthresh before it, with the CWR still to announce withdrawn. With `unmark_loss`
    /// (an RTO's undo) no segment stays marked lost.
    fn tcp_undo_cwnd_reduction(&mut self, unmark_loss: bool) {
        if unmark_loss {
            for seg in self.rtx.iter_mut() {
                seg.lost = false;
            }
            self.lost_out = 0;
        }
        if self.prior_ssthresh > 0 {
            self.w.cwnd = self.with_ca(|ca, tp| ca.undo_cwnd(tp));
            if self.prior_ssthresh > self.w.ssthresh {
                self.w.ssthresh = self.prior_ssthresh;
                self.ecn_queue_cwr = false;
            }
        }
        self.undo_marker = None;
        self.undos += 1;
    }

    /// `tcp_highest_sack_seq()`: the end of the highest SACKed segment (where the skb
    /// after it starts), `snd_una` when nothing is SACKed.
    fn tcp_highest_sack_seq(&self) -> u32 {
        if self.sacked_out == 0 {
            return self.snd_una;
        }
        self.rtx.iter().rev().find(|g| g.sacked).map_or(self.snd_una, |g| g.end)
    }

    /// `tcp_check_sack_reordering()`: a segment at `low_seq` arrived after data up to
    /// the highest SACK; the distance (rounded up to segments) raises `reordering`, and
    /// the event is counted in `reord_seen`.
    fn tcp_check_sack_reordering(&mut self, low_seq: u32) {
        let fack = self.tcp_highest_sack_seq();
        if !before(low_seq, fack) {
            return;
        }
        let metric = fack.wrapping_sub(low_seq);
        if metric > self.reordering * self.mss {
            self.reordering = metric.div_ceil(self.mss).min(TCP_MAX_REORDERING);
        }
        self.reord_seen += 1;
    }

    /// `tcp_rack_advance()`: a delivered segment's send time becomes RACK's if it is the
    /// most recent, and its RTT RACK's RTT. A retransmitted segment whose RTT is below
    /// min_rtt may have been delivered by an earlier transmission: it is ignored.
    fn tcp_rack_advance(&mut self, seg: &super::TxSeg, t: u64) {
        let rtt_us = (t.saturating_sub(seg.sent) / 1000).min(u32::MAX as u64) as u32;
        if rtt_us < self.min_rtt_us && seg.ever_retrans {
            return;
        }
        self.rack.advanced = true;
        self.rack.rtt_us = rtt_us;
        if sent_after(seg.sent, self.rack.mstamp, seg.end, self.rack.end_seq) {
            self.rack.mstamp = seg.sent;
            self.rack.end_seq = seg.end;
        }
    }

    /// `tcp_rack_advance()` of a cumulatively ACKed segment, held in `rack.acked` until
    /// the ACK's SACKs have advanced RACK.
    #[inline]
    fn tcp_rack_advance_acked(&mut self, seg: &super::TxSeg, t: u64) {
        if seg.ever_retrans && ((t.saturating_sub(seg.sent) / 1000).min(u32::MAX as u64) as u32) < self.min_rtt_us {
            return;
        }
        self.rack.acked = Some(match self.rack.acked {
            Some((_, sent, end)) if !sent_after(seg.sent, sent, seg.end, end) => (seg.sent, sent, end),
            _ => (seg.sent, seg.sent, seg.end),
        });
    }

    /// Applies `rack.acked` after the SACKs at `t`: the last ACKed segment's RTT is the
    /// last RACK took, the most recently sent one RACK's if sent later.
    fn tcp_rack_apply_acked(&mut self, t: u64) {
        let Some((last_sent, sent, end)) = self.rack.acked.take() else { return };
        self.rack.advanced = true;
        self.rack.rtt_us = (t.saturating_sub(last_sent) / 1000).min(u32::MAX as u64) as u32;
        if sent_after(sent, self.rack.mstamp, end, self.rack.end_seq) {
            self.rack.mstamp = sent;
            self.rack.end_seq = end;
        }
    }

    /// `tcp_rack_reo_wnd()` (µs): with no reordering seen, 0 in recovery or once the
    /// DUPACK threshold is met (`sacked_out >= reordering`); otherwise min_rtt/4 per
    /// step, at most srtt.
    fn tcp_rack_reo_wnd(&self) -> u32 {
        if self.reord_seen == 0 && (self.ca_state >= CaState::Recovery || self.sacked_out >= self.reordering) {
            return 0;
        }
        let min_rtt = if self.min_rtt_us == u32::MAX { 0 } else { self.min_rtt_us };
        ((min_rtt >> 2) * self.rack.reo_wnd_steps).min(self.srtt_us >> 3)
    }

    /// `tcp_rack_mark_lost()`: once a delivery moved RACK (`rack.advanced`), the
    /// segments sent before RACK's whose window has passed are lost
    /// (`tcp_rack_detect_loss()`). Returns how long the others still wait (µs), for
    /// which the caller arms the reordering timer (`ICSK_TIME_REO_TIMEOUT`).
    ///
    /// A retransmission counts from its own send time, so one that is lost too
    /// (behind a full FIFO) is found the same way and sent again, not left to the RTO.
    fn tcp_rack_mark_lost(&mut self, t: u64) -> Option<u32> {
        if !std::mem::take(&mut self.rack.advanced) {
            return None;
        }
        let timeout = self.tcp_rack_detect_loss(t);
        (timeout > 0).then_some(timeout)
    }

    /// `tcp_rack_detect_loss()`: every segment not SACKed, not waiting for its
    /// retransmission, and sent before RACK's, is lost once
    /// `rack.rtt_us + reo_wnd - (now - sent) <= 0`. Returns the longest wait left of
    /// the others (µs, 0 if none).
    fn tcp_rack_detect_loss(&mut self, t: u64) -> u32 {
        let tp = self;
        let reo_wnd = tp.tcp_rack_reo_wnd() as i64;
        let (mstamp, end_seq, rtt_us) = (tp.rack.mstamp, tp.rack.end_seq, tp.rack.rtt_us as i64);
        // Nothing SACKed, lost or being resent: every segment is an original, sent in
        // sequence order, so the first is the oldest (the head of the kernel's
        // tsorted_sent_queue). Sent after RACK's, it ends the scan as it does there.
        if tp.sacked_out == 0 && tp.lost_out == 0 && tp.retrans_out == 0 && tp.rtx.front().is_none_or(|g| !sent_after(mstamp, g.sent, end_seq, g.end)) {
            return 0;
        }
        let mut reo_timeout = 0i64;
        for seg in tp.rtx.iter_mut() {
            if seg.sacked || (seg.lost && !seg.retrans) || !sent_after(mstamp, seg.sent, end_seq, seg.end) {
                continue;
            }
            let remaining = tcp_rack_skb_timeout(rtt_us, seg, t, reo_wnd);
            if remaining > 0 {
                reo_timeout = reo_timeout.max(remaining);
                continue;
            }
            tcp_mark_skb_lost(seg, &mut tp.lost_out, &mut tp.lost, &mut tp.retrans_out);
        }
        reo_timeout.min(u32::MAX as i64) as u32
    }

    /// `tcp_cwnd_reduction()` (PRR, RFC 6937): proportional while more than ssthresh
    /// is in flight, then back up to it no faster than slow start (PRR-SSRB), for
    /// `delivered` packets newly ACKed or SACKed.
    fn tcp_cwnd_reduction(&mut self, delivered: u32, una_advanced: bool) {
        let tp = self;
        tp.prr_delivered += delivered;
        let in_flight = tp.in_flight();
        let delta = tp.w.ssthresh as i64 - in_flight as i64;
        let mut sndcnt = if delta < 0 {
            let dividend = tp.w.ssthresh as u64 * tp.prr_delivered as u64 + tp.prior_cwnd as u64 - 1;
            (dividend / tp.prior_cwnd.max(1) as u64) as i64 - tp.prr_out as i64
        } else {
            let grow = (tp.prr_delivered as i64 - tp.prr_out as i64).max(delivered as i64) + una_advanced as i64;
            grow.min(delta)
        };
        // Force a fast retransmit upon entering fast recovery.
        sndcnt = sndcnt.max(if tp.prr_out == 0 { 1 } else { 0 });
        tp.w.cwnd = (in_flight as i64 + sndcnt).max(1) as u32;
    }

    /// `tcp_match_skb_to_sack()`: whether skb `i` of the retransmit queue lies in the SACK
    /// block `[start, end)`. An skb of several segments that the block covers in part is
    /// fragmented (`tcp_fragment()`) at an MSS boundary: its head is in the block (and the
    /// answer is yes), or the block begins inside it (the head is not, and the tail is
    /// looked at next).
    fn tcp_match_skb_to_sack(&mut self, i: usize, start: u32, end: u32) -> bool {
        let tp = self;
        let seg = tp.rtx[i];
        let mut in_sack = !after(start, seg.start) && !before(end, seg.end);
        if seg.segs > 1 && !in_sack && after(seg.end, start) {
            let mss = tp.mss;
            let len = seg.end.wrapping_sub(seg.start);
            in_sack = !after(start, seg.start);
            let mut pkt_len = if in_sack {
                let l = end.wrapping_sub(seg.start);
                if l < mss {
                    return false;
                }
                l
            } else {
                start.wrapping_sub(seg.start).max(mss)
            };
            if pkt_len > mss {
                let mut new_len = pkt_len / mss * mss;
                if !in_sack && new_len < pkt_len {
                    new_len += mss;
                }
                pkt_len = new_len;
            }
            if pkt_len >= len {
                return in_sack;
            }
            let head_segs = pkt_len.div_ceil(mss);
            let mid = seg.start.wrapping_add(pkt_len);
            tp.rtx[i].end = mid;
            tp.rtx[i].segs = head_segs;
            tp.rtx.insert(i + 1, super::TxSeg { start: mid, segs: seg.segs - head_segs, ..seg });
        }
        in_sack
    }

    /// `tcp_ecn_queue_cwr()`: an ECN connection announces its window reduction with CWR on
    /// the next new data segment, which ends the receiver's ECE echo.
    fn tcp_ecn_queue_cwr(&mut self) {
        if self.ecn {
            self.ecn_queue_cwr = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::sock::tcp::tests::sock;
    use crate::sock::tcp::{TcpSock, TxSeg};
    use super::AckRtt;
    use crate::sock::tcp::recv::AckRec;
    use crate::sock::tcp::{after, CaState};
    use crate::id::CpuId;

    const MSS: u32 = 1448;

    /// A socket whose retransmit queue holds one skb of 10 full segments.
    fn ten_segments() -> TcpSock {
        let mut tp = sock();
        assert_eq!(tp.mss, MSS);
        tp.rtx.push_back(TxSeg { start: 0, end: 10 * MSS, segs: 10, ..TxSeg::default() });
        tp
    }

    fn shape(tp: &TcpSock) -> Vec<(u32, u32, u32)> {
        tp.rtx.iter().map(|g| (g.start, g.end, g.segs)).collect()
    }

    /// Ten segments in flight, segment i sent at i x 10 ms, an RTO at 300 ms, and the
    /// head's retransmission out at once (as the timer's transmit would do it).
    fn rto_at_300ms() -> (crate::world::World, crate::id::SockId) {
        let (mut w, s) = crate::sock::tcp::tests::with_flight(10);
        for (i, g) in w.socks.tcp(s).rtx.iter_mut().enumerate() {
            g.sent = i as u64 * 10_000_000;
        }
        w.now = 300_000_000;
        w.tcp_retransmit_timer(s);
        let t = w.socks.tcp(s);
        let head = &mut t.rtx[0];
        (head.retrans, head.ever_retrans, head.counted, head.sent) = (true, true, true, 300_000_000);
        t.retrans_out += 1;
        t.undo_retrans = t.undo_retrans.max(0) + 1;
        (w, s)
    }

    /// tcp_timeout_mark_lost(): the head is lost, and every unSACKed segment sent at least
    /// RACK's RTT ago; those sent since (40 ms RTT at 100 ms: segments 7-9 at 70-90 ms)
    /// stay in flight, and cwnd is what is in flight + 1.
    #[test]
    fn an_rto_spares_what_was_sent_within_racks_rtt() {
        let (mut w, s) = crate::sock::tcp::tests::with_flight(10);
        for (i, g) in w.socks.tcp(s).rtx.iter_mut().enumerate() {
            g.sent = i as u64 * 10_000_000;
        }
        w.socks.tcp(s).rack.rtt_us = 40_000;
        w.now = 100_000_000;
        w.tcp_retransmit_timer(s);
        let t = w.socks.tcp(s);
        let lost: Vec<bool> = t.rtx.iter().map(|g| g.lost).collect();
        assert_eq!(lost, [true, true, true, true, true, true, true, false, false, false]);
        assert_eq!((t.lost_out, t.w.cwnd, t.frto), (7, 4, true));
    }

    /// F-RTO, step 3b: after an RTO from Open, an ACK of the retransmitted head and of
    /// two segments never retransmitted shows the timeout spurious (the originals were
    /// late, not lost): no segment stays lost, cwnd and ssthresh are back (CUBIC cut 20
    /// to 14; undo_cwnd is the larger of now and before), the state is Open, and it
    /// counts as a spurious RTO and an undo.
    #[test]
    fn frto_undoes_a_timeout_when_data_sent_before_it_arrives() {
        let (mut w, s) = rto_at_300ms();
        let t = w.socks.tcp(s);
        assert_eq!((t.ca_state, t.w.ssthresh, t.lost_out, t.frto), (CaState::Loss, 14, 10, true));
        let prior_ssthresh = t.prior_ssthresh;
        w.tcp_ack_rec(CpuId::from_index(0), s, AckRec { ack: 3 * MSS, win: 1 << 20, ..AckRec::default() }, 400_000_000);
        let t = w.socks.tcp(s);
        assert_eq!((t.ca_state, t.lost_out, t.spurious_rtos, t.undos), (CaState::Open, 0, 1, 1));
        assert!(t.w.cwnd >= 20 && t.w.ssthresh == prior_ssthresh, "cwnd {} ssthresh {}", t.w.cwnd, t.w.ssthresh);
        assert!(t.rtx.iter().all(|g| !g.lost));
    }

    /// F-RTO, steps 2b and 3a: an ACK of the retransmitted head alone sends new data
    /// rather than the next retransmission; a SACK of that new data then shows the loss
    /// real, F-RTO ends, and the lost segments go again.
    #[test]
    fn frto_sends_new_data_first_and_a_sack_of_it_proves_the_loss() {
        let (mut w, s) = rto_at_300ms();
        w.socks.tcp(s).tcp_sendmsg_locked(1 << 20, u64::MAX);
        let high = w.socks.tcp(s).high_seq;
        w.tcp_ack_rec(CpuId::from_index(0), s, AckRec { ack: MSS, win: 1 << 20, ..AckRec::default() }, 400_000_000);
        let t = w.socks.tcp(s);
        assert!(t.frto && after(t.snd_nxt, high), "new data went: snd_nxt {} high_seq {high}", t.snd_nxt);
        assert_eq!((t.ca_state, t.retrans_out), (CaState::Loss, 0), "no retransmission went with it");
        let nxt = t.snd_nxt;
        let sack = AckRec { ack: MSS, sacks: [(high, nxt), (0, 0), (0, 0)], n_sacks: 1, win: 1 << 20, ..AckRec::default() };
        w.tcp_ack_rec(CpuId::from_index(0), s, sack, 500_000_000);
        let t = w.socks.tcp(s);
        assert!(!t.frto && t.retrans_out > 0, "frto {} retrans_out {}", t.frto, t.retrans_out);
        assert_eq!((t.ca_state, t.spurious_rtos), (CaState::Loss, 0));
    }

    /// tcp_clean_rtx_queue()'s FLAG_SET_XMIT_TIMER for an ACK that only SACKs: the RTO is
    /// re-armed from now when the SACKed data went before the head's retransmission (a
    /// recovery still hearing of older data). (A SACK of data sent after it makes RACK
    /// mark the head's retransmission lost, and its next retransmission re-arms the
    /// timer anyway.)
    #[test]
    fn a_sack_of_data_older_than_the_heads_retransmission_rearms_the_rto() {
        let (mut w, s) = crate::sock::tcp::tests::with_flight(10);
        let t = w.socks.tcp(s);
        for (i, g) in t.rtx.iter_mut().enumerate() {
            g.sent = i as u64 * 10_000_000;
        }
        (t.rtx[0].retrans, t.rtx[0].ever_retrans, t.rtx[0].lost, t.rtx[0].sent) = (true, true, true, 50_000_000);
        (t.retrans_out, t.lost_out, t.rto_ns) = (1, 1, 200_000_000);
        w.tcp_enter_recovery(s, false);
        w.socks.tcp(s).rto_at = Some(250_000_000);
        let sack = |a: u32, b: u32| AckRec { ack: 0, sacks: [(a * MSS, b * MSS), (0, 0), (0, 0)], n_sacks: 1, win: 1 << 20, ..AckRec::default() };
        w.tcp_ack_rec(CpuId::from_index(0), s, sack(3, 4), 100_000_000);
        let at = w.socks.tcp(s).rto_at.expect("armed");
        assert!(at != 250_000_000 && at > 100_000_000, "segment 3 went at 30 ms, before the head's 50 ms: re-armed from now, to {at}");
    }

    /// A SACK-only ACK at 20 ms for segments 0..10 sent 0.1 ms apart from 1 ms, with
    /// blocks 5..6 and 2..5 (the most recent first) and segment 4 once retransmitted:
    /// four newly SACKed, and the send times of the lowest and the highest original
    /// among them (segments 2 and 5: `first_sackt`, `last_sackt`) for the ACK's RTTs.
    #[test]
    fn a_sack_gives_the_lowest_and_the_highest_newly_sacked_send_times() {
        let (mut w, s) = crate::sock::tcp::tests::with_flight(10);
        for (i, g) in w.socks.tcp(s).rtx.iter_mut().enumerate() {
            g.sent = 1_000_000 + i as u64 * 100_000;
        }
        w.socks.tcp(s).rtx[4].ever_retrans = true;
        let rec = AckRec { ack: 0, sacks: [(5 * MSS, 6 * MSS), (2 * MSS, 5 * MSS), (0, 0)], n_sacks: 2, ..AckRec::default() };
        let mut rs = crate::sock::tcp::rate::RateSample::default();
        assert_eq!(w.tcp_sacktag(s, &rec, &mut rs, 20_000_000), (4, Some((1_200_000, 1_500_000))));
    }

    /// One ACK for three skbs sent at 1.0, 1.5 and 2.0 ms, the middle one retransmitted,
    /// arriving at 12 ms: seq_rtt from the oldest (11 ms, srtt's sample), ca_rtt from the
    /// newest (10 ms, the min RTT's and the congestion control's); the retransmitted one
    /// gives none (Karn; the kernel would take the timestamp echo for the whole ACK).
    #[test]
    fn an_ack_of_several_skbs_gives_srtt_the_oldest_and_the_cc_the_newest() {
        let mut tp = sock();
        for (i, sent) in [1_000_000u64, 1_500_000, 2_000_000].into_iter().enumerate() {
            let start = i as u32 * MSS;
            tp.rtx.push_back(TxSeg { start, end: start + MSS, segs: 1, sent, ever_retrans: i == 1, ..TxSeg::default() });
        }
        tp.packets_out = 3;
        tp.wmem_queued = 3 * MSS as u64;
        let mut rs = crate::sock::tcp::rate::RateSample::default();
        let got = tp.tcp_clean_rtx_queue(3 * MSS, 12_000_000, &mut rs, 0);
        assert_eq!(got, (3, Some(AckRtt { seq_rtt_ns: 11_000_000, ca_rtt_ns: 10_000_000 })));
    }

    /// tcp_tso_acked(): an ACK 3 segments into a 10-segment skb trims those 3 off its
    /// head and counts them delivered, with their RTT (never retransmitted); the rest
    /// stays queued. An ACK inside the first segment trims nothing.
    #[test]
    fn a_partial_ack_trims_the_acked_head() {
        let mut tp = ten_segments();
        tp.packets_out = 10;
        tp.wmem_queued = 10 * MSS as u64;
        tp.rtx[0].sent = 1_000;
        let mut rs = crate::sock::tcp::rate::RateSample::default();
        assert_eq!(tp.tcp_clean_rtx_queue(3 * MSS, 5_000, &mut rs, 0), (3, Some(AckRtt { seq_rtt_ns: 4_000, ca_rtt_ns: 4_000 })));
        assert_eq!(shape(&tp), [(3 * MSS, 10 * MSS, 7)]);
        assert_eq!((tp.packets_out, tp.wmem_queued, tp.snd_una), (7, 7 * MSS as u64, 3 * MSS));
        assert_eq!(tp.tcp_clean_rtx_queue(3 * MSS + 1000, 6_000, &mut rs, 0), (0, None));
        assert_eq!(shape(&tp), [(3 * MSS, 10 * MSS, 7)]);
    }

    /// RACK after a SACK of the segment sent at t = 200 (RACK's, delivered at 400 ns,
    /// an RTT of 0 us): the unSACKed one sent at 50 is newly lost; the retransmission
    /// sent at 100 is lost again (its retransmission no longer counts, and it is sent
    /// once more); the one sent at 300 is not judged.
    #[test]
    fn rack_finds_a_lost_retransmission() {
        let mut tp = sock();
        tp.ca_state = crate::sock::tcp::CaState::Recovery;
        let seg = |start: u32, sent: u64| TxSeg { start: start * MSS, end: (start + 1) * MSS, segs: 1, sent, ..TxSeg::default() };
        tp.rtx.extend([
            seg(0, 50),
            TxSeg { lost: true, retrans: true, ..seg(1, 100) },
            TxSeg { sacked: true, ..seg(2, 200) },
            seg(3, 300),
        ]);
        (tp.packets_out, tp.sacked_out, tp.lost_out, tp.retrans_out) = (4, 1, 1, 1);
        tp.rack = super::Rack { mstamp: 200, end_seq: 3 * MSS, rtt_us: 0, advanced: true, ..Default::default() };
        assert_eq!(tp.tcp_rack_mark_lost(400), None);
        let flags: Vec<(bool, bool)> = tp.rtx.iter().map(|g| (g.lost, g.retrans)).collect();
        assert_eq!(flags, [(true, false), (true, false), (false, false), (false, false)]);
        assert_eq!((tp.lost_out, tp.retrans_out, tp.lost), (2, 0, 2));
    }

    /// tcp_check_sack_reordering(): a never-retransmitted segment ACKed 10 segments below
    /// the highest SACK is a reordering of 10 (above the default 3), counted once; one
    /// at or above the highest SACK is none.
    #[test]
    fn a_hole_filled_by_an_original_is_a_reordering() {
        let mut tp = sock();
        let seg = |start: u32, sacked: bool| TxSeg { start: start * MSS, end: (start + 1) * MSS, segs: 1, sent: 1_000, sacked, ..TxSeg::default() };
        tp.rtx.extend([seg(0, false), seg(1, true)]);
        tp.rtx.extend((2..11).map(|i| seg(i, i == 10)));
        (tp.packets_out, tp.sacked_out) = (11, 2);
        let prior_fack = tp.tcp_highest_sack_seq();
        assert_eq!(prior_fack, 11 * MSS);
        let mut rs = crate::sock::tcp::rate::RateSample::default();
        // The ACK of segment 0 alone: 11 - 0 = 11 segments below the highest SACK.
        tp.tcp_clean_rtx_queue(MSS, 30_000_000, &mut rs, prior_fack);
        assert_eq!((tp.reordering, tp.reord_seen), (11, 1));
        tp.tcp_check_sack_reordering(11 * MSS);
        assert_eq!((tp.reordering, tp.reord_seen), (11, 1));
    }

    /// RACK with a reordering seen: the window is min_rtt/4 (10 ms / 4), so a segment
    /// sent before RACK's waits rack.rtt + 2.5 ms from its send, and the reordering
    /// timer is asked for what is left; RACK looks again only once a delivery moved it
    /// (`rack.advanced`). With none seen, the same segment is lost at once in recovery.
    #[test]
    fn rack_waits_the_reordering_window_once_reordering_is_seen() {
        let mut tp = sock();
        (tp.min_rtt_us, tp.srtt_us) = (10_000, 8 * 12_000);
        let seg = |start: u32, sent: u64| TxSeg { start: start * MSS, end: (start + 1) * MSS, segs: 1, sent, ..TxSeg::default() };
        tp.rtx.extend([seg(0, 0), TxSeg { sacked: true, ..seg(1, 1_000_000) }]);
        (tp.packets_out, tp.sacked_out) = (2, 1);
        tp.rack = super::Rack { mstamp: 1_000_000, end_seq: 2 * MSS, rtt_us: 10_000, ..Default::default() };
        assert_eq!(tp.tcp_rack_reo_wnd(), 2_500);
        tp.reord_seen = 1;
        // 10 ms + 2.5 ms after its send, less 1 us: not yet, 1 us to wait.
        tp.rack.advanced = true;
        assert_eq!(tp.tcp_rack_mark_lost(12_499_000), Some(1));
        assert!(!tp.rtx[0].lost);
        // No delivery moved RACK since: it does not look.
        assert_eq!(tp.tcp_rack_mark_lost(12_500_000), None);
        assert!(!tp.rtx[0].lost);
        tp.rack.advanced = true;
        assert_eq!(tp.tcp_rack_mark_lost(12_500_000), None);
        assert!(tp.rtx[0].lost);
        assert_eq!((tp.lost_out, tp.lost), (1, 1));
        // No reordering seen, in recovery: lost at once.
        let mut tp2 = sock();
        tp2.rtx.extend([seg(0, 0), TxSeg { sacked: true, ..seg(1, 1_000_000) }]);
        (tp2.packets_out, tp2.sacked_out, tp2.ca_state) = (2, 1, crate::sock::tcp::CaState::Recovery);
        tp2.rack = super::Rack { mstamp: 1_000_000, end_seq: 2 * MSS, rtt_us: 0, advanced: true, ..Default::default() };
        assert_eq!(tp2.tcp_rack_mark_lost(1_000_001), None);
        assert!(tp2.rtx[0].lost);
    }

    /// `tcp_rack_reo_wnd()` with no reordering seen: below the DUPACK threshold, outside
    /// recovery, the window is still min_rtt/4 (at most srtt), so one or two SACKs
    /// alone do not make a segment lost at once; with 3 SACKed it is 0.
    #[test]
    fn rack_keeps_a_quarter_min_rtt_below_the_dupack_threshold() {
        let mut tp = sock();
        (tp.min_rtt_us, tp.srtt_us) = (10_000, 8 * 12_000);
        let seg = |start: u32, sent: u64, sacked: bool| TxSeg { start: start * MSS, end: (start + 1) * MSS, segs: 1, sent, sacked, ..TxSeg::default() };
        tp.rtx.extend([seg(0, 0, false), seg(1, 1_000_000, true)]);
        (tp.packets_out, tp.sacked_out) = (2, 1);
        assert_eq!(tp.tcp_rack_reo_wnd(), 2_500);
        // Delivered 10 ms after it was sent, 11 ms after segment 0: 1.5 ms to wait.
        tp.rack = super::Rack { mstamp: 1_000_000, end_seq: 2 * MSS, rtt_us: 10_000, advanced: true, ..Default::default() };
        assert_eq!(tp.tcp_rack_mark_lost(11_000_000), Some(1_500));
        assert!(!tp.rtx[0].lost);
        tp.rtx.extend([seg(2, 1_000_000, true), seg(3, 1_000_000, true)]);
        (tp.packets_out, tp.sacked_out) = (4, 3);
        assert_eq!(tp.tcp_rack_reo_wnd(), 0);
        tp.rack.advanced = true;
        assert_eq!(tp.tcp_rack_mark_lost(11_000_000), None);
        assert!(tp.rtx[0].lost);
    }

    /// tcp_check_dsack() and tcp_rack_update_reo_wnd(): a D-SACK below the ACK of one
    /// segment, in a recovery with two retransmissions out, leaves one to be shown
    /// spurious; after a reordering it adds a step to RACK's window, kept for 16
    /// recoveries. A D-SACK of more than was ever retransmitted is ignored. A block above
    /// the ACK and outside the second is not a D-SACK.
    #[test]
    fn a_dsack_counts_towards_the_undo_and_widens_racks_window() {
        use crate::sock::tcp::recv::AckRec;
        let mut tp = sock();
        (tp.snd_una, tp.total_retrans, tp.reord_seen) = (10 * MSS, 2, 1);
        (tp.undo_marker, tp.undo_retrans) = (Some(2 * MSS), 2);
        let dsack = |a: u32, b: u32| AckRec { ack: 10 * MSS, sacks: [(a * MSS, b * MSS), (0, 0), (0, 0)], n_sacks: 1, dsack: true, ..AckRec::default() };
        tp.tcp_check_dsack(&dsack(4, 5), 10 * MSS);
        assert_eq!((tp.undo_retrans, tp.dsack_dups, tp.rack.dsack_seen), (1, 1, true));
        let rs = crate::sock::tcp::rate::RateSample { prior_delivered: 5, ..Default::default() };
        tp.tcp_rack_update_reo_wnd(&rs);
        assert_eq!((tp.rack.reo_wnd_steps, tp.rack.reo_wnd_persist, tp.rack.dsack_seen), (2, 16, false));
        // Two more segments D-SACKed than the two ever retransmitted: dubious, ignored.
        tp.tcp_check_dsack(&dsack(5, 7), 10 * MSS);
        assert_eq!((tp.undo_retrans, tp.dsack_dups, tp.rack.dsack_seen), (1, 3, false));
        // Above the ACK and not inside a second block: an ordinary SACK block.
        let mut tp2 = sock();
        tp2.total_retrans = 5;
        tp2.tcp_check_dsack(&dsack(12, 13), 10 * MSS);
        assert_eq!(tp2.dsack_dups, 0);
    }

    /// tcp_undo_cwnd_reduction(): CUBIC's window back to the larger of now and before,
    /// ssthresh back to what it was when the recovery began.
    #[test]
    fn an_undo_restores_the_window_and_ssthresh() {
        let mut tp = sock();
        (tp.w.cwnd, tp.w.ssthresh, tp.prior_cwnd, tp.prior_ssthresh) = (20, 21, 30, 22);
        tp.undo_marker = Some(0);
        tp.tcp_undo_cwnd_reduction(false);
        assert_eq!((tp.w.cwnd, tp.w.ssthresh, tp.undo_marker, tp.undos), (30, 22, None, 1));
    }

    /// tcp_match_skb_to_sack(): a block that begins 2.5 segments into the skb splits it
    /// at the next MSS boundary (3 segments, not in the block), and the 7-segment tail
    /// is in it. A block that covers the head's first 4.3 segments SACKs 4 of them.
    /// Less than one segment of the head is no SACK at all.
    #[test]
    fn a_partial_sack_splits_the_skb_at_an_mss_boundary() {
        let mut tp = ten_segments();
        assert!(!tp.tcp_match_skb_to_sack(0, 2 * MSS + 700, 10 * MSS));
        assert_eq!(shape(&tp), [(0, 3 * MSS, 3), (3 * MSS, 10 * MSS, 7)]);
        assert!(tp.tcp_match_skb_to_sack(1, 2 * MSS + 700, 10 * MSS));

        let mut tp = ten_segments();
        assert!(tp.tcp_match_skb_to_sack(0, 0, 4 * MSS + 500));
        assert_eq!(shape(&tp), [(0, 4 * MSS, 4), (4 * MSS, 10 * MSS, 6)]);

        let mut tp = ten_segments();
        assert!(!tp.tcp_match_skb_to_sack(0, 0, 1000));
        assert_eq!(shape(&tp), [(0, 10 * MSS, 10)]);
        // A block that covers it whole: no split.
        assert!(tp.tcp_match_skb_to_sack(0, 0, 10 * MSS));
        assert_eq!(shape(&tp), [(0, 10 * MSS, 10)]);
    }
}
