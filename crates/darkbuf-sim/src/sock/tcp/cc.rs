//! The congestion control interface, as the kernel has it: `struct
//! tcp_congestion_ops` (include/net/tcp.h) as the trait [`TcpCongestionOps`], the
//! `tcp_ca_event`s, `TCP_CONG_NEEDS_ECN`, and the list the sysctl's names select from
//! (`tcp_register_congestion_control()` / `tcp_ca_find()`: [`tcp_ca_new`]).
//!
//! Reno lives here, as `tcp_reno_cong_avoid()` / `tcp_reno_ssthresh()` /
//! `tcp_reno_undo_cwnd()` / `tcp_slow_start()` / `tcp_cong_avoid_ai()` live in
//! net/ipv4/tcp_cong.c; every other algorithm is one file (`cubic.rs`, `bbr.rs`,
//! `dctcp.rs`). The socket's code asks the trait, never an algorithm by name: a new
//! congestion control is its file plus one line in [`tcp_ca_new`].
//!
//! Times are the kernel's: `tcp_jiffies32`, microseconds for delays. The window is in
//! packets (`snd_cwnd`).

use super::bbr::{Bbr, Clock};
use super::cubic::Cubic;
use super::dctcp::Dctcp;
use super::rate::RateSample;
use super::{CaState, TcpSock};

/// `TCP_CONG_NEEDS_ECN`: the connection asks for ECN whatever `tcp_ecn` says
/// (`tcp_ca_needs_ecn()`), and its receiver reports each CE change
/// (`CA_EVENT_ECN_IS_CE` / `CA_EVENT_ECN_NO_CE`).
pub const TCP_CONG_NEEDS_ECN: u32 = 0x2;

/// `enum tcp_ca_event`: the events `cwnd_event` is told of (those the model raises).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaEvent {
    /// `CA_EVENT_LOSS`: an RTO (`tcp_enter_loss()`), once per window.
    Loss,
    /// `CA_EVENT_ECN_IS_CE` / `CA_EVENT_ECN_NO_CE`: the receiving socket got a data
    /// segment marked CE / not marked (`__tcp_ecn_check_ce()`), for a congestion
    /// control with [`TCP_CONG_NEEDS_ECN`].
    EcnIsCe,
    EcnNoCe,
}

/// `CA_ACK_ECE`: the flag `in_ack_event` sees on an ACK that carried ECE.
pub const CA_ACK_ECE: u32 = 1 << 2;

/// What a congestion control sees of the socket on each ACK.
#[derive(Clone, Copy, Debug)]
pub struct AckCtx {
    /// `tcp_jiffies32` and the socket's clock in µs (`tcp_mstamp`).
    pub jiffies: u32,
    pub now_us: u32,
    pub hz: u32,
    pub snd_una: u32,
    pub snd_nxt: u32,
    /// `sk_pacing_rate` (bytes/s) and whether the socket is paced (not SK_PACING_NONE).
    pub pacing_rate: u64,
    pub paced: bool,
    /// `sk_gso_max_size`.
    pub gso_max_size: u32,
}

/// The window the congestion control moves (`snd_cwnd`, `snd_ssthresh`,
/// `snd_cwnd_cnt`, `snd_cwnd_clamp`).
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub cwnd: u32,
    pub ssthresh: u32,
    /// `snd_cwnd_cnt`: ACKed packets toward the next additive increase.
    pub cwnd_cnt: u32,
    pub clamp: u32,
}

impl Window {
    /// `tcp_in_slow_start()`.
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// `tcp_slow_start()`: grow by the ACKed packets up to ssthresh; returns the
    /// leftover for congestion avoidance.
    pub fn slow_start(&mut self, acked: u32) -> u32 {
        let cwnd = (self.cwnd + acked).min(self.ssthresh);
        let left = acked - (cwnd - self.cwnd);
        self.cwnd = cwnd.min(self.clamp);
        left
    }

    /// `tcp_cong_avoid_ai()`: one more packet per `w` ACKed.
    pub fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.cwnd += delta;
        }
        self.cwnd = self.cwnd.min(self.clamp);
    }

    /// `tcp_reno_cong_avoid()` once the flow is cwnd-limited: slow start, then one
    /// packet per window.
    pub fn reno_cong_avoid(&mut self, acked: u32) {
        let mut acked = acked;
        if self.in_slow_start() {
            acked = self.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        let cwnd = self.cwnd;
        self.cong_avoid_ai(cwnd, acked);
    }
}

/// What `cwnd_event(CA_EVENT_ECN_IS_CE | CA_EVENT_ECN_NO_CE)` reads and changes on the
/// receiving socket: its `rcv_nxt`, `ecn_flags & TCP_ECN_DEMAND_CWR` (ACKs carry ECE),
/// `icsk_ack.pending`'s ICSK_ACK_TIMER (a delayed ACK is pending) and ICSK_ACK_NOW,
/// and the ACK `__tcp_send_ack(sk, rcv_nxt)` sends with an older `rcv_nxt`.
#[derive(Clone, Copy, Debug)]
pub struct RcvEcn {
    pub rcv_nxt: u32,
    pub demand_cwr: bool,
    pub ack_timer: bool,
    pub ack_now: bool,
    /// An ACK to send first: (its `ack_seq`, whether it carries ECE).
    pub send_ack: Option<(u32, bool)>,
}

/// `struct tcp_congestion_ops`: one congestion control's methods, with the socket
/// passed as the kernel passes `sk`. The defaults are what the kernel does when a
/// method is NULL.
pub trait TcpCongestionOps {
    /// `.name`, as `tcp_available_congestion_control` lists it.
    fn name(&self) -> &'static str;

    /// `.flags` ([`TCP_CONG_NEEDS_ECN`]).
    fn flags(&self) -> u32 {
        0
    }

    /// `.init` (`tcp_init_congestion_control()`), before the first transmission.
    fn init(&mut self, _tp: &mut TcpSock, _clock: Clock) {}

    /// `.ssthresh`: the slow-start threshold after a loss or an ECE
    /// (`tcp_init_cwnd_reduction()`, `tcp_enter_loss()`).
    fn ssthresh(&mut self, tp: &TcpSock) -> u32;

    /// `.cong_avoid`: grow the window of a cwnd-limited flow by `acked` packets.
    fn cong_avoid(&mut self, w: &mut Window, acked: u32, ctx: &AckCtx);

    /// Whether `.cong_control` is set: it then replaces PRR, `cong_avoid` and the
    /// pacing-rate update, and `tcp_end_cwnd_reduction()` leaves cwnd to it.
    fn has_cong_control(&self) -> bool {
        false
    }

    /// `.cong_control`, on every ACK (only if [`Self::has_cong_control`]).
    fn cong_control(&mut self, _tp: &mut TcpSock, _rs: &RateSample, _clock: Clock) {}

    /// `.set_state`, from `tcp_set_ca_state()` before `icsk_ca_state` changes (`tp`
    /// still has the old state).
    fn set_state(&mut self, _tp: &mut TcpSock, _new_state: CaState, _ctx: &AckCtx) {}

    /// `.cwnd_event` on the sending socket.
    fn cwnd_event(&mut self, _tp: &mut TcpSock, _ev: CaEvent) {}

    /// `.cwnd_event` with `CA_EVENT_ECN_IS_CE` / `CA_EVENT_ECN_NO_CE` on the receiving
    /// socket (called only with [`TCP_CONG_NEEDS_ECN`]).
    fn cwnd_event_rcv(&mut self, _ev: CaEvent, _r: &mut RcvEcn) {}

    /// `.in_ack_event` (`tcp_in_ack_event()`): `flags` are `CA_ACK_*`.
    fn in_ack_event(&mut self, _tp: &TcpSock, _flags: u32) {}

    /// `.pkts_acked`, with the ACK's RTT sample (µs) if it has one.
    fn pkts_acked(&mut self, _rtt_us: Option<u32>, _w: &mut Window, _ctx: &AckCtx) {}

    /// `.undo_cwnd`: the window after a reduction found spurious.
    fn undo_cwnd(&mut self, tp: &TcpSock) -> u32;

    /// `.min_tso_segs`, else the sysctl `tcp_min_tso_segs` applies.
    fn min_tso_segs(&self, _tp: &TcpSock) -> Option<u32> {
        None
    }

    /// `.sndbuf_expand`: windows of send buffer `tcp_sndbuf_expand()` provisions.
    fn sndbuf_expand(&self) -> u32 {
        2
    }

    /// `.get_info` as `ss -ti` prints it: a named figure of the algorithm's own
    /// (DCTCP's alpha), reported per flow.
    fn get_info(&self, _tp: &TcpSock) -> Option<(&'static str, f64)> {
        None
    }

    /// The MIB counters the algorithm bumps (`NET_INC_STATS()` in its own file):
    /// HyStart's exits for CUBIC, nothing for the others.
    fn hystart_mib(&self) -> HystartMib {
        HystartMib::default()
    }
}

/// HyStart's `TcpExt` counters (`LINUX_MIB_TCPHYSTART*`, /proc/net/netstat), which
/// `hystart_update()` bumps when one of its detectors ends slow start: how many exits
/// each detector made, and the sum of `snd_cwnd` at those exits (packets).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HystartMib {
    /// `TCPHystartTrainDetect`, `TCPHystartTrainCwnd`.
    pub train_detect: u64,
    pub train_cwnd: u64,
    /// `TCPHystartDelayDetect`, `TCPHystartDelayCwnd`.
    pub delay_detect: u64,
    pub delay_cwnd: u64,
}

impl std::ops::AddAssign for HystartMib {
    fn add_assign(&mut self, o: Self) {
        self.train_detect += o.train_detect;
        self.train_cwnd += o.train_cwnd;
        self.delay_detect += o.delay_detect;
        self.delay_cwnd += o.delay_cwnd;
    }
}

/// `tcp_reno`: `tcp_reno_ssthresh()`, `tcp_reno_cong_avoid()`, `tcp_reno_undo_cwnd()`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reno;

impl TcpCongestionOps for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn ssthresh(&mut self, tp: &TcpSock) -> u32 {
        (tp.w.cwnd >> 1).max(2)
    }

    fn cong_avoid(&mut self, w: &mut Window, acked: u32, _ctx: &AckCtx) {
        w.reno_cong_avoid(acked);
    }

    fn undo_cwnd(&mut self, tp: &TcpSock) -> u32 {
        tp.w.cwnd.max(tp.prior_cwnd)
    }
}

/// `tcp_ca_find()` then `.init`'s allocation: the congestion control a socket of
/// `cc` runs; `seed` seeds an algorithm's random draws (BBR's gain-cycle phase), and
/// `hystart` is which kernel's HyStart round start CUBIC has (its module's code, not a
/// parameter in the kernel). The one place a congestion control is registered.
pub fn tcp_ca_new(cc: darkbuf_scenario::Cc, seed: u64, hystart: darkbuf_scenario::HystartRoundStart) -> Box<dyn TcpCongestionOps> {
    use darkbuf_scenario::Cc;
    use rand::SeedableRng;
    match cc {
        Cc::Reno => Box::new(Reno),
        Cc::Cubic => Box::new(Cubic::new(hystart)),
        Cc::Bbr => Box::new(Bbr::new(rand_chacha::ChaCha8Rng::seed_from_u64(seed))),
        Cc::Dctcp => Box::<Dctcp>::default(),
    }
}

impl TcpSock {
    /// Runs `f` with the socket's congestion control and the socket itself, as the
    /// kernel's `icsk->icsk_ca_ops->method(sk)`: the CA's private state (`inet_csk_ca()`)
    /// is lifted out for the call (a pointer move), so both can be borrowed.
    pub(super) fn with_ca<R>(&mut self, f: impl FnOnce(&mut dyn TcpCongestionOps, &mut TcpSock) -> R) -> R {
        let mut ca = self.ca.take().expect("a congestion control is attached outside its own calls");
        let r = f(&mut *ca, self);
        self.ca = Some(ca);
        r
    }

    /// The socket's congestion control, to ask (`icsk_ca_ops`).
    pub fn ca(&self) -> &dyn TcpCongestionOps {
        self.ca.as_deref().expect("a congestion control is attached outside its own calls")
    }

    /// `tcp_ca_needs_ecn()`.
    pub fn tcp_ca_needs_ecn(&self) -> bool {
        self.ca().flags() & TCP_CONG_NEEDS_ECN != 0
    }

    /// The congestion control's own figure now (`get_info`), if it has one.
    pub fn tcp_ca_info(&self) -> Option<(&'static str, f64)> {
        self.ca().get_info(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reno: slow start doubles per RTT (one packet per ACKed packet) up to ssthresh,
    /// then one packet per window.
    #[test]
    fn reno_grows_and_halves() {
        let ctx = AckCtx { jiffies: 0, now_us: 0, hz: 250, snd_una: 0, snd_nxt: 0, pacing_rate: 0, paced: false, gso_max_size: 65536 };
        let mut cc = Reno;
        let mut w = Window { cwnd: 10, ssthresh: 20, cwnd_cnt: 0, clamp: u32::MAX };
        cc.cong_avoid(&mut w, 10, &ctx);
        assert_eq!(w.cwnd, 20);
        cc.cong_avoid(&mut w, 10, &ctx);
        assert_eq!((w.cwnd, w.cwnd_cnt), (20, 10));
        cc.cong_avoid(&mut w, 10, &ctx);
        assert_eq!((w.cwnd, w.cwnd_cnt), (21, 0));
    }

    /// Every registered name builds the algorithm of that name, as
    /// `tcp_available_congestion_control` would list it.
    #[test]
    fn the_registry_builds_each_name() {
        use darkbuf_scenario::Cc;
        for (cc, name) in [(Cc::Reno, "reno"), (Cc::Cubic, "cubic"), (Cc::Bbr, "bbr"), (Cc::Dctcp, "dctcp")] {
            assert_eq!(tcp_ca_new(cc, 1, Default::default()).name(), name);
            assert_eq!(cc.name(), name);
        }
        assert_eq!(tcp_ca_new(Cc::Dctcp, 1, Default::default()).flags() & TCP_CONG_NEEDS_ECN, TCP_CONG_NEEDS_ECN);
        assert_eq!(tcp_ca_new(Cc::Cubic, 1, Default::default()).flags(), 0);
    }
}
