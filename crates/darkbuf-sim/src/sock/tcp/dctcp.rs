//! DCTCP: mirrors net/ipv4/tcp_dctcp.c and its receiver's CE state machine in
//! net/ipv4/tcp_dctcp.h (`dctcp_ece_ack_update()`), behind [`TcpCongestionOps`].
//!
//! The sender keeps `alpha`, a moving average of the fraction of delivered packets
//! whose ACKs echoed CE, updated once per window of data (`dctcp_update_alpha()`:
//! alpha = (1 - g) alpha + g F, g = 1/16), and on an ECE cuts the window once per
//! window by alpha/2 (`dctcp_ssthresh()`: cwnd - cwnd alpha / 2). A loss halves it
//! (`dctcp_react_to_loss()`). Growth is Reno's.
//!
//! Its receiver echoes CE exactly: ECE on the ACKs while the last segment was marked,
//! an immediate ACK whenever the marking changes, and before it the delayed ACK of the
//! segments under the previous state. Both ends run DCTCP here (the flow's `cc` is
//! the congestion control of both sockets, as `net.ipv4.tcp_congestion_control = dctcp`
//! on both hosts gives).
//!
//! Module parameters at their defaults: `dctcp_shift_g` = 4, `dctcp_alpha_on_init` =
//! 1024. The fallback to `dctcp-reno` without ECN does not arise: DCTCP's
//! TCP_CONG_NEEDS_ECN negotiates ECN, and the far end accepts it (`tcp_ecn` = 2).

use super::cc::{AckCtx, CaEvent, RcvEcn, TcpCongestionOps, Window, TCP_CONG_NEEDS_ECN};
use super::{before, CaState, TcpSock};

/// `DCTCP_MAX_ALPHA`: alpha's fixed-point one.
pub const DCTCP_MAX_ALPHA: u32 = 1024;
/// `dctcp_shift_g`: the moving average's gain g = 1/2^4.
const DCTCP_SHIFT_G: u32 = 4;
/// `dctcp_alpha_on_init`.
const DCTCP_ALPHA_ON_INIT: u32 = DCTCP_MAX_ALPHA;

/// `struct dctcp`: the sender's and the receiver's halves (one socket uses one).
#[derive(Clone, Copy, Debug)]
pub struct Dctcp {
    old_delivered: u32,
    old_delivered_ce: u32,
    prior_rcv_nxt: u32,
    dctcp_alpha: u32,
    next_seq: u32,
    ce_state: u32,
    loss_cwnd: u32,
}

impl Default for Dctcp {
    fn default() -> Self {
        Dctcp { old_delivered: 0, old_delivered_ce: 0, prior_rcv_nxt: 0, dctcp_alpha: DCTCP_ALPHA_ON_INIT.min(DCTCP_MAX_ALPHA), next_seq: 0, ce_state: 0, loss_cwnd: 0 }
    }
}

impl Dctcp {
    /// `dctcp_reset()`: the next window starts at `snd_nxt`.
    fn reset(&mut self, tp: &TcpSock) {
        self.next_seq = tp.snd_nxt;
        self.old_delivered = tp.rate.delivered;
        self.old_delivered_ce = tp.delivered_ce;
    }

    /// `dctcp_react_to_loss()`.
    fn react_to_loss(&mut self, tp: &mut TcpSock) {
        self.loss_cwnd = tp.w.cwnd;
        tp.w.ssthresh = (tp.w.cwnd >> 1).max(2);
    }

    /// alpha in [0, 1], the paper's α.
    pub fn alpha(&self) -> f64 {
        self.dctcp_alpha as f64 / DCTCP_MAX_ALPHA as f64
    }
}

impl TcpCongestionOps for Dctcp {
    fn name(&self) -> &'static str {
        "dctcp"
    }

    fn flags(&self) -> u32 {
        TCP_CONG_NEEDS_ECN
    }

    /// `dctcp_init()` with ECN negotiated.
    fn init(&mut self, tp: &mut TcpSock, _clock: super::bbr::Clock) {
        self.prior_rcv_nxt = 0;
        self.dctcp_alpha = DCTCP_ALPHA_ON_INIT.min(DCTCP_MAX_ALPHA);
        self.loss_cwnd = 0;
        self.ce_state = 0;
        self.reset(tp);
    }

    /// `dctcp_ssthresh()`: cwnd - cwnd alpha / 2, at least 2.
    fn ssthresh(&mut self, tp: &TcpSock) -> u32 {
        let cwnd = tp.w.cwnd;
        self.loss_cwnd = cwnd;
        cwnd.saturating_sub(((cwnd as u64 * self.dctcp_alpha as u64) >> 11) as u32).max(2)
    }

    /// `tcp_reno_cong_avoid()`.
    fn cong_avoid(&mut self, w: &mut Window, acked: u32, _ctx: &AckCtx) {
        w.reno_cong_avoid(acked);
    }

    /// `dctcp_state()`: entering Recovery halves (an RTO is `CA_EVENT_LOSS`'s).
    fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState, _ctx: &AckCtx) {
        if new_state == CaState::Recovery && new_state != tp.ca_state {
            self.react_to_loss(tp);
        }
    }

    /// `dctcp_cwnd_event()` on the sender: `CA_EVENT_LOSS`.
    fn cwnd_event(&mut self, tp: &mut TcpSock, ev: CaEvent) {
        if ev == CaEvent::Loss {
            self.react_to_loss(tp);
        }
    }

    /// `dctcp_ece_ack_update()`: a change of CE state is ACKed at once, after the
    /// delayed ACK (if one is pending) of what came under the previous state; ACKs
    /// carry ECE while the state is CE (`dctcp_ece_ack_cwr()`).
    fn cwnd_event_rcv(&mut self, ev: CaEvent, r: &mut RcvEcn) {
        let new_ce_state = (ev == CaEvent::EcnIsCe) as u32;
        if self.ce_state != new_ce_state {
            if r.ack_timer {
                r.send_ack = Some((self.prior_rcv_nxt, self.ce_state == 1));
            }
            r.ack_now = true;
        }
        self.prior_rcv_nxt = r.rcv_nxt;
        self.ce_state = new_ce_state;
        r.demand_cwr = new_ce_state == 1;
    }

    /// `dctcp_update_alpha()`: once `snd_una` reaches the window's end, alpha moves
    /// toward the fraction of its deliveries that were CE-echoed.
    fn in_ack_event(&mut self, tp: &TcpSock, _flags: u32) {
        if before(tp.snd_una, self.next_seq) {
            return;
        }
        let mut delivered_ce = tp.delivered_ce.wrapping_sub(self.old_delivered_ce);
        let mut alpha = self.dctcp_alpha;
        // min_not_zero(alpha, alpha >> g)
        let step = alpha >> DCTCP_SHIFT_G;
        alpha -= if step == 0 { alpha } else { alpha.min(step) };
        if delivered_ce != 0 {
            let delivered = tp.rate.delivered.wrapping_sub(self.old_delivered);
            delivered_ce <<= 10 - DCTCP_SHIFT_G;
            delivered_ce /= delivered.max(1);
            alpha = (alpha + delivered_ce).min(DCTCP_MAX_ALPHA);
        }
        self.dctcp_alpha = alpha;
        self.reset(tp);
    }

    /// `dctcp_cwnd_undo()`.
    fn undo_cwnd(&mut self, tp: &TcpSock) -> u32 {
        tp.w.cwnd.max(self.loss_cwnd)
    }

    /// `dctcp_get_info()`'s alpha, as a fraction.
    fn get_info(&self, _tp: &TcpSock) -> Option<(&'static str, f64)> {
        Some(("dctcp_alpha", self.alpha()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// alpha's update, worked by hand from `dctcp_update_alpha()`: from 1024 with no
    /// marks it loses 1/16 per window (1024 -> 960 -> 900); with half a window's
    /// deliveries CE-echoed, F = 1/2 adds 512 >> 4 = 32; min_not_zero takes a small
    /// alpha to 0 (15 >> 4 = 0, so alpha -= 15). Nothing moves before `snd_una`
    /// reaches the window's end. The window cut is cwnd alpha / 2: 100 - 100 x 992
    /// >> 11 = 52.
    #[test]
    fn alpha_moves_by_g_toward_the_marked_fraction() {
        let mut tp = super::super::tests::sock();
        let mut d = Dctcp::default();
        // One window: 100 packets delivered, `ce` of them CE-echoed, snd_una at its end.
        let window = |d: &mut Dctcp, tp: &mut TcpSock, ce: u32| {
            tp.snd_nxt = tp.snd_nxt.wrapping_add(100 * 1448);
            d.reset(tp);
            tp.rate.delivered += 100;
            tp.delivered_ce += ce;
            tp.snd_una = tp.snd_una.wrapping_add(99 * 1448);
            d.in_ack_event(tp, 0);
            let before_end = d.dctcp_alpha;
            tp.snd_una = tp.snd_nxt;
            d.in_ack_event(tp, 0);
            (before_end, d.dctcp_alpha)
        };
        assert_eq!(window(&mut d, &mut tp, 0), (1024, 960));
        assert_eq!(window(&mut d, &mut tp, 0).1, 900);
        let mut e = Dctcp::default();
        assert_eq!(window(&mut e, &mut tp, 50).1, 960 + 32);
        tp.w.cwnd = 100;
        assert_eq!(e.ssthresh(&tp), 52);
        let mut z = Dctcp { dctcp_alpha: 15, ..Dctcp::default() };
        assert_eq!(window(&mut z, &mut tp, 0).1, 0);
    }

    /// The receiver's state machine: the first CE segment after unmarked ones ACKs
    /// the pending delayed ACK without ECE, then ACKs now with ECE; a second CE
    /// segment changes nothing; the first unmarked one reverses it.
    #[test]
    fn the_receiver_acks_each_change_of_ce_state() {
        let mut d = Dctcp::default();
        let mut r = RcvEcn { rcv_nxt: 1000, demand_cwr: false, ack_timer: true, ack_now: false, send_ack: None };
        d.cwnd_event_rcv(CaEvent::EcnNoCe, &mut r);
        assert_eq!((r.send_ack, r.ack_now, r.demand_cwr), (None, false, false));
        let mut r = RcvEcn { rcv_nxt: 2000, ack_timer: true, ..r };
        d.cwnd_event_rcv(CaEvent::EcnIsCe, &mut r);
        assert_eq!((r.send_ack, r.ack_now, r.demand_cwr), (Some((1000, false)), true, true));
        let mut r = RcvEcn { rcv_nxt: 3000, ack_timer: false, ack_now: false, send_ack: None, ..r };
        d.cwnd_event_rcv(CaEvent::EcnIsCe, &mut r);
        assert_eq!((r.send_ack, r.ack_now, r.demand_cwr), (None, false, true));
        let mut r = RcvEcn { rcv_nxt: 4000, ack_timer: true, ..r };
        d.cwnd_event_rcv(CaEvent::EcnNoCe, &mut r);
        assert_eq!((r.send_ack, r.ack_now, r.demand_cwr), (Some((3000, true)), true, false));
    }
}
