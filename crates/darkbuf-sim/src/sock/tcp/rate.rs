//! Delivery rate sampling: mirrors net/ipv4/tcp_rate.c (`tcp_rate_skb_sent()`,
//! `tcp_rate_skb_delivered()`, `tcp_rate_gen()`, `tcp_rate_check_app_limited()`).
//!
//! Each transmitted skb records how much the connection had delivered, and when, at
//! its send time; when it is (S)ACKed, the most recently sent of the (S)ACKed skbs
//! gives a sample: packets delivered since it was sent, over the longer of its send
//! phase and its ACK phase. BBR is built on these samples (`bbr_update_bw()`).
//!
//! Times are the socket's `tcp_mstamp` in µs; an skb's send time is its
//! `skb_mstamp_ns` (the EDT departure time), as `tcp_skb_timestamp_us()` reads it.

use super::{after, TcpSock, TxSeg};

/// `struct rate_sample`: what one ACK tells the congestion control.
#[derive(Clone, Copy, Debug, Default)]
pub struct RateSample {
    /// `tp->delivered` and `tp->delivered_mstamp` when the sampled skb was sent
    /// (`prior_mstamp == 0`: no skb was timed, an invalid sample).
    pub prior_delivered: u32,
    pub prior_mstamp: u64,
    /// Packets delivered over the interval (-1: invalid).
    pub delivered: i32,
    /// The sample's interval in µs (-1: invalid).
    pub interval_us: i64,
    /// The RTT of this ACK (`ca_rtt_us`, -1 when there is none).
    pub rtt_us: i64,
    /// Packets newly marked lost, and newly (S)ACKed by this ACK.
    pub losses: u32,
    pub acked_sacked: u32,
    /// `tcp_packets_in_flight()` before this ACK.
    pub prior_in_flight: u32,
    pub is_app_limited: bool,
    pub is_retrans: bool,
    /// The sampled skb's end sequence (ties in send time go to the higher one).
    pub last_end_seq: u32,
}

impl RateSample {
    pub fn new(prior_in_flight: u32) -> RateSample {
        RateSample { rtt_us: -1, prior_in_flight, ..RateSample::default() }
    }
}

/// The per-skb part (`TCP_SKB_CB(skb)->tx`), kept with each scoreboard entry.
#[derive(Clone, Copy, Debug, Default)]
pub struct TxRate {
    pub first_tx_mstamp: u64,
    /// 0 once counted (a SACKed skb is not sampled again when cumulatively ACKed).
    pub delivered_mstamp: u64,
    pub delivered: u32,
    pub is_app_limited: bool,
}

/// The connection's part (`tp->delivered`, `tp->first_tx_mstamp`, ...).
#[derive(Clone, Copy, Debug, Default)]
pub struct RateState {
    pub delivered: u32,
    pub delivered_mstamp: u64,
    pub first_tx_mstamp: u64,
    /// `tp->app_limited`: the `delivered` mark at which an app-limited bubble ends
    /// (0: not app-limited).
    pub app_limited: u32,
    /// The last non-app-limited (or the highest app-limited) sample, as
    /// `tcp_get_info()` reports it as `delivery_rate`.
    pub rate_delivered: u32,
    pub rate_interval_us: u64,
    pub rate_app_limited: bool,
}

impl TcpSock {
    /// `tcp_rate_skb_sent()`: stamp an skb sent at `tx_us` (nothing in flight starts
    /// a new send phase).
    pub(super) fn tcp_rate_skb_sent(&mut self, tx_us: u64) -> TxRate {
        let r = &mut self.rate;
        if self.packets_out == 0 {
            r.first_tx_mstamp = tx_us;
            r.delivered_mstamp = tx_us;
        }
        TxRate { first_tx_mstamp: r.first_tx_mstamp, delivered_mstamp: r.delivered_mstamp, delivered: r.delivered, is_app_limited: r.app_limited != 0 }
    }

    /// `tcp_rate_skb_delivered()`: `seg` was newly (S)ACKed; the most recently sent
    /// such skb defines the sample.
    pub(super) fn tcp_rate_skb_delivered(&mut self, seg: &mut TxSeg, rs: &mut RateSample) {
        let tx = seg.rate;
        if tx.delivered_mstamp == 0 {
            return;
        }
        let tx_us = seg.sent / 1000;
        // tcp_skb_sent_after(): later in time, or as late and later in sequence.
        let sent_after = tx_us > self.rate.first_tx_mstamp || (tx_us == self.rate.first_tx_mstamp && after(seg.end, rs.last_end_seq));
        if rs.prior_delivered == 0 || sent_after {
            rs.prior_delivered = tx.delivered;
            rs.prior_mstamp = tx.delivered_mstamp;
            rs.is_app_limited = tx.is_app_limited;
            rs.is_retrans = seg.ever_retrans;
            rs.last_end_seq = seg.end;
            self.rate.first_tx_mstamp = tx_us;
            // The send phase of this window.
            rs.interval_us = tx_us as i64 - tx.first_tx_mstamp as i64;
        }
        if seg.sacked {
            seg.rate.delivered_mstamp = 0;
        }
    }

    /// `tcp_rate_gen()`: the sample of this ACK, which (S)ACKed `delivered` packets
    /// and marked `lost` lost, at `now_us`.
    pub(super) fn tcp_rate_gen(&mut self, delivered: u32, lost: u32, now_us: u64, rs: &mut RateSample) {
        let min_rtt_us = self.min_rtt_us;
        let r = &mut self.rate;
        if r.app_limited != 0 && after(r.delivered, r.app_limited) {
            r.app_limited = 0;
        }
        if delivered > 0 {
            r.delivered_mstamp = now_us;
        }
        rs.acked_sacked = delivered;
        rs.losses = lost;
        if rs.prior_mstamp == 0 {
            rs.delivered = -1;
            rs.interval_us = -1;
            return;
        }
        rs.delivered = r.delivered.wrapping_sub(rs.prior_delivered) as i32;
        // Sending and ACKing a window are separate pipeline phases: the longer one.
        let snd_us = rs.interval_us;
        let ack_us = now_us as i64 - rs.prior_mstamp as i64;
        rs.interval_us = snd_us.max(ack_us);
        if rs.interval_us < min_rtt_us as i64 {
            rs.interval_us = -1;
            return;
        }
        if !rs.is_app_limited || rs.delivered as u64 * r.rate_interval_us >= r.rate_delivered as u64 * rs.interval_us as u64 {
            r.rate_delivered = rs.delivered as u32;
            r.rate_interval_us = rs.interval_us as u64;
            r.rate_app_limited = rs.is_app_limited;
        }
    }

    /// `tcp_rate_check_app_limited()` at a `write()`: less than a segment unsent,
    /// nothing in the host queues, not cwnd-limited and no lost data waiting: the
    /// flow is application-limited until what is in flight now is delivered.
    pub(super) fn tcp_rate_check_app_limited(&mut self, wmem_alloc: u64) {
        let unsent = self.write_seq.wrapping_sub(self.snd_nxt);
        // SKB_TRUESIZE(1): an skb's overhead.
        if unsent < self.mss && wmem_alloc < 768 && self.in_flight() < self.w.cwnd && self.lost_out <= self.retrans_out {
            let mark = self.rate.delivered.wrapping_add(self.in_flight());
            self.rate.app_limited = if mark == 0 { 1 } else { mark };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window of 10 packets sent over 1 ms from t = 10 ms, all ACKed at once 20 ms
    /// later: the sample is 10 packets over the ACK phase from the first skb's
    /// `delivered_mstamp` (10,000 µs) to now (31,000 µs) = 21,000 µs, and the send
    /// phase (1,000 µs) is shorter.
    #[test]
    fn one_window_one_sample() {
        let mut tp = crate::sock::tcp::tests::sock();
        let mut segs = Vec::new();
        for i in 0..10u32 {
            let t_us = 10_000 + i as u64 * 111;
            let rate = tp.tcp_rate_skb_sent(t_us);
            tp.packets_out += 1;
            segs.push(TxSeg { start: i * 1000, end: (i + 1) * 1000, segs: 1, sent: t_us * 1000, rate, ..TxSeg::default() });
        }
        assert_eq!(segs[9].rate.first_tx_mstamp, 10_000);
        assert_eq!(segs[9].rate.delivered_mstamp, 10_000);
        let mut rs = RateSample::new(10);
        tp.min_rtt_us = 20_000;
        for seg in &mut segs {
            tp.tcp_rate_skb_delivered(seg, &mut rs);
        }
        tp.rate.delivered += 10;
        tp.tcp_rate_gen(10, 0, 31_000, &mut rs);
        assert_eq!(rs.delivered, 10);
        assert_eq!(rs.prior_delivered, 0);
        assert_eq!(rs.interval_us, 21_000);
        assert_eq!(tp.rate.first_tx_mstamp, 10_999);
        assert_eq!(tp.rate.delivered_mstamp, 31_000);
        assert_eq!((tp.rate.rate_delivered, tp.rate.rate_interval_us), (10, 21_000));
    }

    /// An interval shorter than the min RTT is not a valid sample (ACK compression).
    #[test]
    fn interval_below_min_rtt_is_invalid() {
        let mut tp = crate::sock::tcp::tests::sock();
        let rate = tp.tcp_rate_skb_sent(1_000);
        let mut seg = TxSeg { start: 0, end: 1000, segs: 1, sent: 1_000_000, rate, ..TxSeg::default() };
        tp.min_rtt_us = 5_000;
        let mut rs = RateSample::new(1);
        tp.tcp_rate_skb_delivered(&mut seg, &mut rs);
        tp.rate.delivered += 1;
        tp.tcp_rate_gen(1, 0, 3_000, &mut rs);
        assert_eq!(rs.interval_us, -1);
    }
}
