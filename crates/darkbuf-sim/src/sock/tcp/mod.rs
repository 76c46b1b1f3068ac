//! TCP: a bulk sender as iperf3 runs one, and its receiver on the far end.
//!
//! - `mod.rs`: the socket's state, the application's writes (`tcp_sendmsg()`), the
//!   skb destructor `tcp_wfree()` with TCP Small Queues' handler, the timers, and the
//!   deferred work a CPU runs for a socket (`tsq_tasklet_func()`, `tcp_pace_kick()`,
//!   `tcp_retransmit_timer()`, `tcp_delack_timer()`).
//! - `output.rs`: `tcp_write_xmit()` (cwnd, receive window, TSO autosizing, TSQ, EDT
//!   pacing and internal pacing) and `__tcp_transmit_skb()`.
//! - `input.rs`: `tcp_ack()`: the scoreboard, SACK, RACK loss marking, PRR recovery,
//!   CWR, the RTT estimator and the RTO.
//! - `lock.rs`: the writer's hold on the socket (`lock_sock()`, the backlog,
//!   `release_sock()` and `tcp_release_cb()`).
//! - `recv.rs`: the receiver: in-order and out-of-order data, delayed and quick ACKs,
//!   SACK blocks, and with a modelled application the backlog and the window test.
//! - `rcvbuf.rs`: the receive buffer and the advertised window (`scaling_ratio`,
//!   `rcv_ssthresh`, `__tcp_select_window()`, DRS).
//! - `reader.rs`: the receiving application (`receiver = "poll" | "blocking"`).
//! - `sndbuf.rs`: the send buffer's autotuning, the writer's memory test, and the write
//!   queue's skbs (`tcp_grow_skb()`).
//! - `cc.rs`: the congestion control interface (`struct tcp_congestion_ops` as a
//!   trait), Reno, and the registry of names; one file per algorithm: `cubic.rs`
//!   (CUBIC with HyStart), `bbr.rs` (BBR v1), `dctcp.rs` (DCTCP). `rate.rs`: the
//!   delivery rate samples BBR is built on.
//!
//! Sequence numbers are `u32` and compared with wrap-around (`before()`/`after()`), as
//! the kernel does. Every skb is timed on the CPU that sends it; its transmission is
//! put at its time with `tcp_queue_xmit_at` (with the TSQ_THROTTLED it was sent under,
//! which a local drop's `tcp_wfree()` must see), and a qdisc run it starts is left to
//! NET_TX on that CPU.

mod bbr;
mod cc;
mod connect;
mod cubic;
mod dctcp;
mod input;
mod lock;
mod output;
mod rate;
mod rcvbuf;
mod reader;
mod report;
mod recv;
mod sndbuf;
pub mod web;


use crate::arena::Proto;
use crate::cpu::TASKLET_SOFTIRQ;
use crate::id::{CpuId, DevId, HostId, SockId, TaskId};
use crate::event::Event;
use crate::sock::{Sock, SockKind};
use crate::world::{Sockets, World};
use cc::{TcpCongestionOps, Window};
use darkbuf_model::qdisc::EnqueueVerdict;
use darkbuf_model::units::Rate;
use darkbuf_scenario::TcpFlow;
use std::collections::VecDeque;

/// `TCP_INIT_CWND`.
const TCP_INIT_CWND: u32 = 10;
/// `TCP_RTO_MIN`, `TCP_TIMEOUT_INIT`, `TCP_RTO_MAX`.
const TCP_RTO_MIN_NS: u64 = 200_000_000;
const TCP_TIMEOUT_INIT_NS: u64 = 1_000_000_000;
const TCP_RTO_MAX_NS: u64 = 120_000_000_000;
/// `tcp_retries2`'s default: the probe timer's backoff stops growing there.
const TCP_RETRIES2: u32 = 15;
/// iperf3's report interval (`-i 1`).
pub const IPERF_INTERVAL_NS: u64 = 1_000_000_000;
/// iperf3's `--pacing-timer` default: how often a red-lit `-b` sender looks again.
const IPERF_PACING_TIMER_NS: u64 = 1_000_000;
/// One application `write()`: iperf3's default 128 KB block.
const APP_WRITE: u32 = 128 * 1024;

/// `a` is before `b` in sequence space.
#[inline]
pub fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

#[inline]
pub fn after(a: u32, b: u32) -> bool {
    before(b, a)
}

/// `icsk_ca_state`, in the kernel's order (`TCP_CA_Open` 0 .. `TCP_CA_Loss` 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CaState {
    Open,
    /// `TCP_CA_Disorder`: SACKed, lost or retransmitted segments are outstanding, no
    /// window reduction (`tcp_try_keep_open()`). Every ACK is then dubious (RACK looks
    /// at it) and no loss probe is scheduled.
    Disorder,
    Cwr,
    Recovery,
    Loss,
}

/// `sk_pacing_status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pacing {
    /// No pacing: skbs go out at once (CUBIC or reno over a qdisc other than fq).
    None,
    /// TCP paces itself with an hrtimer (BBR without fq).
    Needed,
    /// fq paces by each skb's departure time (set at the socket's first packet).
    Fq,
}

/// One transmitted skb on the retransmit queue (the scoreboard).
#[derive(Clone, Copy, Debug, Default)]
pub struct TxSeg {
    pub start: u32,
    pub end: u32,
    pub segs: u32,
    /// When it was last (re)transmitted (ns).
    pub sent: u64,
    pub sacked: bool,
    pub lost: bool,
    /// `TCPCB_SACKED_RETRANS`: a retransmission of it is in flight.
    pub retrans: bool,
    /// `TCPCB_EVER_RETRANS`: it was retransmitted once (a local drop's resend aside):
    /// its ACK gives no RTT sample (Karn) and a retransmitted rate sample.
    pub ever_retrans: bool,
    /// Dropped by the local qdisc: sent again as new data, not counted a retransmission.
    pub local_drop: bool,
    /// Its last transmission was counted as a retransmission.
    pub counted: bool,
    /// Its last transmission was a tail loss probe (`tcp_send_loss_probe()`).
    pub tlp: bool,
    /// The delivery-rate stamp of its last transmission.
    pub rate: rate::TxRate,
    /// What its last transmission added to the pacing clock (`tcp_wstamp_ns`), ns.
    pub pace_ns: u64,
    /// The TSecr its last transmission carried (`ts_recent`, ms).
    pub tsecr_ms: u32,
}

/// The timers a TCP socket arms (`Event::TcpTimer`'s kind).
pub mod timer {
    pub const RTO: u8 = 0;
    pub const PACE: u8 = 1;
    pub const DELACK: u8 = 2;
    /// The SYN's retransmission timer (`connect.rs`).
    pub const SYN: u8 = 3;
    // Each kind has its own event lane (`event.rs`).
    const _: () = assert!((SYN as usize) < crate::event::SOCK_TIMER_KINDS);
}

/// The states of an active open that the model tells apart (`TCP_CLOSE`,
/// `TCP_SYN_SENT`, `TCP_ESTABLISHED`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conn {
    /// Before the application's `connect()` (the flow's `start`).
    Closed,
    /// The SYN is out; the writer sleeps in `inet_wait_for_connect()`.
    SynSent,
    Established,
}

/// Deferred work bits for `World::sock_work_step`.
mod work {
    pub const TSQ: u8 = 1 << 0;
    pub const RTO: u8 = 1 << 1;
    pub const DELACK: u8 = 1 << 2;
    pub const TLP: u8 = 1 << 3;
    pub const PROBE0: u8 = 1 << 4;
    /// RACK's reordering timer (`tcp_rack_reo_timeout()`).
    pub const REO: u8 = 1 << 5;
}

/// What the retransmit timer is armed for (`icsk_pending`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XmitTimer {
    /// ICSK_TIME_RETRANS.
    Retrans,
    /// ICSK_TIME_LOSS_PROBE: `tcp_send_loss_probe()` when it fires. It stays the
    /// pending kind after it fired until the timer is armed again, as in the kernel.
    LossProbe,
    /// ICSK_TIME_PROBE0: nothing in flight and data waiting, which the last transmit
    /// could not send (`tcp_check_probe_timer()`): `tcp_probe_timer()` when it fires.
    Probe0,
    /// ICSK_TIME_REO_TIMEOUT: a segment RACK would call lost once its reordering window
    /// has passed (`tcp_rack_mark_lost()`): `tcp_rack_reo_timeout()` when it fires.
    ReoTimeout,
}

/// `TCP_RESOURCE_PROBE_INTERVAL` (HZ / 2): how long a timer waits to try again after
/// its transmit met local congestion (the qdisc dropped it), in jiffies of `hz`.
fn tcp_resource_probe_interval(hz: u32, jiffy_ns: u64) -> u64 {
    (hz / 2) as u64 * jiffy_ns
}

/// `ns` rounded up to whole jiffies of `jiffy_ns` (timers count jiffies).
pub(super) fn whole_jiffies(ns: u64, jiffy_ns: u64) -> u64 {
    ns.div_ceil(jiffy_ns) * jiffy_ns
}

/// The sender's and the receiver's state of one connection.
pub struct TcpSock {
    flow_index: u32,
    traffic_index: u16,
    /// `icsk_ca_ops` with its private area (`inet_csk_ca()`): `None` only while one
    /// of its own methods runs (`TcpSock::with_ca()`).
    ca: Option<Box<dyn TcpCongestionOps>>,
    w: Window,
    ca_state: CaState,
    /// Segment size and the largest skb TSO may build (`sk_gso_max_size`).
    mss: u32,
    gso_max_size: u32,
    snd_una: u32,
    snd_nxt: u32,
    write_seq: u32,
    /// Bytes of the write and retransmit queues (`sk_wmem_queued`) against `sk_sndbuf`.
    wmem_queued: u64,
    /// The write queue's skbs (data not sent yet): each one's end, oldest first; the
    /// last ends at `write_seq`, the first starts at `snd_nxt` (`sndbuf.rs`).
    write_queue: VecDeque<u32>,
    /// `tcp_wmem[2]`: where the send buffer's autotuning stops (the scenario's `sndbuf`).
    sndbuf_max: u64,
    /// `tcp_sndbuf_expand()`'s charge per segment (`sndbuf::tcp_sndbuf_per_mss()`).
    sndbuf_per_mss: u32,
    /// `SOCK_SNDBUF_LOCK`: `SO_SNDBUF` fixed the buffer, autotuning leaves it.
    sndbuf_lock: bool,
    /// `max_window`: the largest window the receiver advertised, which bounds the
    /// write queue's skbs to half of it (`tcp_bound_to_half_wnd()`).
    max_window: u32,
    /// What TSQ judges and whether TSO defers (`output.rs`).
    write_xmit: darkbuf_scenario::WriteXmit,
    /// Whether `tcp_grow_skb()` runs (v6.10+; `sndbuf.rs`).
    grow_skb: bool,
    packets_out: u32,
    sacked_out: u32,
    lost_out: u32,
    retrans_out: u32,
    /// `tp->lost`: packets ever marked lost.
    lost: u32,
    /// Delivery-rate sampling (`tp->delivered`, ...).
    rate: rate::RateState,
    /// `tp->reordering`: the reordering degree seen, in segments (the DUPACK
    /// threshold, 3 until a reordering is measured; at most `tcp_max_reordering`).
    reordering: u32,
    /// `tp->reord_seen`: reorderings detected (`tcp_check_sack_reordering()`). Once
    /// non-zero, RACK waits a reordering window before it marks a segment lost.
    reord_seen: u32,
    /// RACK's state (`tp->rack`).
    rack: input::Rack,
    /// Undo of a spurious recovery (`tcp_init_undo()`): `undo_marker` (`snd_una` when
    /// the recovery began; `None`: nothing to undo), `undo_retrans` (retransmissions
    /// not yet shown spurious by a D-SACK; -1: none made), `prior_ssthresh`.
    undo_marker: Option<u32>,
    undo_retrans: i32,
    prior_ssthresh: u32,
    /// `tp->dsack_dups`: segments D-SACKed so far.
    dsack_dups: u64,
    /// Window reductions undone (`TcpExtTCPFullUndo` + `TcpExtTCPDSACKUndo` +
    /// `TcpExtTCPLossUndo`).
    undos: u64,
    /// F-RTO (`tp->frto`, RFC 5682's SACK-enhanced version, `net.ipv4.tcp_frto` = 2, the
    /// default): armed by an RTO (`tcp_enter_loss()`), it tells a timeout that came of a
    /// delay from one that came of a loss before the rest is retransmitted
    /// (`tcp_process_loss()`).
    frto: bool,
    /// F-RTO's step 2b (`REXMIT_NEW`): the transmit the ACK clocks sends new data, not
    /// the segments the RTO marked lost. Set by `tcp_process_loss()`; that transmit, at
    /// the end of every ACK, clears it.
    frto_new_data: bool,
    /// `FLAG_ORIG_SACK_ACKED` of the ACK being processed: it ACKed or SACKed a segment
    /// never retransmitted, below `high_seq`.
    orig_sack_acked: bool,
    /// RTOs F-RTO found spurious (`TcpExtTCPSpuriousRTOs`).
    spurious_rtos: u64,
    rtx: VecDeque<TxSeg>,
    high_seq: u32,
    prior_cwnd: u32,
    prr_delivered: u32,
    prr_out: u32,
    /// The largest in flight since the last cwnd check, and whether cwnd limited it.
    max_packets_out: u32,
    is_cwnd_limited: bool,
    /// `cwnd_usage_seq`: the window whose cwnd use the two fields above describe
    /// (they are kept for a round trip once cwnd limited a transmission).
    cwnd_usage_seq: u32,
    /// RTT estimator (`srtt_us` x 8, `mdev_us` x 4, `mdev_max_us`, `rttvar_us`, and
    /// `rtt_seq`, where its round trip ends), min RTT (µs), RTO (ns).
    srtt_us: u32,
    mdev_us: u32,
    mdev_max_us: u32,
    rttvar_us: u32,
    rtt_seq: u32,
    min_rtt_us: u32,
    rto_ns: u64,
    rto_at: Option<u64>,
    xmit_timer: XmitTimer,
    /// Events pushed for the retransmit timer so far (`tcp_ack()` defers its own).
    rto_pushes: u32,
    backoff: u32,
    /// `icsk_probes_out`: probes of the probe timer sent without an answer.
    probes_out: u32,
    /// When the probe timer is due while it is pending. A transmit the model has not
    /// yet heard the qdisc's verdict on leaves it standing: if the qdisc drops that
    /// transmit, the kernel never left the probe timer (`tcp_event_new_data_sent()`
    /// runs only after a transmit that went).
    probe0_at: Option<u64>,
    /// The transmit loop (`xmit_burst`) a timer ran and which timer: the retransmit
    /// timer's retransmission of the head, or the probe timer's probe. If the qdisc
    /// drops it, that timer tries again after `TCP_RESOURCE_PROBE_INTERVAL`.
    timer_xmit: Option<(u32, XmitTimer)>,
    /// Tail loss probe: `snd_nxt` when the outstanding probe went (`tlp_high_seq`),
    /// whether it retransmitted, and the probes sent (`TcpExtTCPLossProbes`).
    tlp_high_seq: Option<u32>,
    tlp_retrans: bool,
    loss_probes: u64,
    /// Probes whose ACK showed a repaired loss (`TcpExtTCPLossProbeRecovery`).
    tlp_recoveries: u64,
    pacing: Pacing,
    /// `sk_pacing_rate` in bytes/s (0 until the first RTT sample) and `tcp_wstamp_ns`.
    /// `sk_max_pacing_rate` (`SO_MAX_PACING_RATE`), bytes/s; `u64::MAX`: unset.
    max_pacing_rate: u64,
    pacing_rate: u64,
    wstamp_ns: u64,
    pace_at: Option<u64>,
    data_segs_out: u64,
    /// Which `tcp_small_queue_check()`, and its `tcp_limit_output_bytes`.
    tsq: darkbuf_scenario::Tsq,
    limit_output_bytes: u64,
    /// `net.ipv4.tcp_tso_rtt_log` (`tcp_tso_autosize()`).
    tso_rtt_log: u8,
    tsq_throttled: bool,
    /// `tcp_write_xmit()` calls so far: the loop each transmit belongs to, so that a
    /// local drop takes back what the same loop sent after it.
    xmit_burst: u32,
    /// The largest TSQ limit (plus the skb it admitted) so far: `sk_wmem_alloc` never
    /// exceeds it (checked as an invariant).
    tsq_bound: u64,
    /// Deferred work bits queued on a CPU (`work::*`), and that CPU.
    work: u8,
    /// The socket's cached TX queue (`sk_tx_queue_mapping`).
    tx_queue: Option<u16>,
    /// Times `netdev_pick_tx()` changed it (the first pick included).
    tx_queue_changes: u64,
    /// `snd_wnd`: the receive window the far end advertises (bytes). Fixed at half of
    /// `rcvbuf` with the `instant` receiver; else from each ACK (`tcp_ack_update_window()`).
    snd_wnd: u32,
    /// `ts_recent`: the far end's timestamp (ms) on the last ACK taken, which new
    /// segments echo (`TSecr`), for the receiver's RTT estimate.
    ts_recent_ms: u32,
    /// ECN negotiated (`TCP_ECN_OK`): new data leaves ECT(0).
    ecn: bool,
    /// `tp->delivered_ce`: packets delivered whose ACKs echoed CE
    /// (`tcp_count_delivered()`).
    delivered_ce: u32,
    /// `TCP_ECN_QUEUE_CWR`: a window reduction waits to be announced by CWR on the
    /// next new data segment.
    ecn_queue_cwr: bool,
    /// IP_TOS's DSCP on its data; `sk_priority` follows it (`rt_tos2priority()`).
    dscp: u8,
    /// Retransmitted segments (not counting local drops), for `ss -ti`'s `retrans`.
    total_retrans: u64,
    /// Retransmission timeouts (`TcpExtTCPTimeouts`: `tcp_retransmit_timer()` with
    /// data in flight; the probe timer of an empty flight is not one).
    timeouts: u64,
    /// The connection's state (`sk_state` as far as it matters here): the application
    /// writes once the handshake is done (`connect.rs`).
    conn: Conn,
    /// When the connection became established: the SYN-ACK's arrival, or the flow's
    /// start without the handshake.
    established_ns: u64,
    /// The last SYN's send time, its retransmissions so far and its timer.
    syn_sent_ns: u64,
    syn_retries: u8,
    syn_rto_at: Option<u64>,
    /// The SYN timer fired: the task sends the SYN again.
    syn_due: bool,
    /// The application: when it starts and stops writing, and its rate cap.
    start_ns: u64,
    stop_ns: u64,
    app_rate_bps: Option<u64>,
    app_written: u64,
    /// The device the ACKs leave the far end by (`None`: the way back is the profile's
    /// constant, veth and tun).
    ack_dev: Option<DevId>,
    /// The CPU its softirq work last ran on (the IRQ CPU for ACK processing).
    softirq_cpu: CpuId,
    /// The writer's socket lock and the backlog of ACKs that wait for it.
    lock: lock::SockLock,
    rcv: recv::Receiver,
    pub(crate) stats: TcpStats,
    /// A `kind = "web"` connection: its size, which the application writes and then
    /// closes, and its completion (`web.rs`). `None`: a bulk flow, writing until `stop`.
    pub(crate) web: Option<Box<web::WebConn>>,
}

/// What the report needs of a flow.
#[derive(Clone, Debug, Default)]
pub struct TcpStats {
    /// Bytes the receiving application read in each 200 ms step from the measured
    /// window's start (flent's step).
    pub goodput_steps: Vec<u64>,
    /// Bytes read in the measured window.
    pub goodput_bytes: u64,
    /// `total_retrans`, `timeouts`, `loss_probes` and `tlp_recoveries` at the start of
    /// the measured window.
    pub retrans_base: u64,
    pub delivered_ce_base: u32,
    pub timeouts_base: u64,
    pub loss_probes_base: u64,
    pub tlp_recoveries_base: u64,
    /// `reord_seen`, `dsack_dups` and `undos` at the start of the measured window.
    pub reord_seen_base: u32,
    pub dsack_dups_base: u64,
    pub undos_base: u64,
    pub spurious_rtos_base: u64,
    /// The socket lock's counters at the start of the measured window (`lock.rs`).
    pub backlog_acks_base: u64,
    pub backlog_coalesce_base: u64,
    pub deferred_work_base: u64,
    /// Time integrals over the measured window: cwnd (packets x ns), srtt (µs x ns),
    /// pacing rate (B/s x ns), with the value and time of the last change.
    /// Time the connection was active in the measured window (the averages' base).
    pub active_ns: u64,
    pub cwnd_int: u128,
    pub srtt_int: u128,
    pub rate_int: u128,
    /// The congestion control's own figure (`get_info`: DCTCP's alpha), integrated
    /// over active time like the others.
    pub ca_info_int: f64,
    pub last_t: u64,
    /// iperf3's view at each whole second of the run (`Event::Interval`): bytes the
    /// application had written, `tcpi_total_retrans`, and `snd_cwnd` x mss in bytes.
    pub intervals: Vec<IperfMark>,
    /// `ss -ti` at the end of each 200 ms step of the measured window (flent's step, the
    /// kernel backend's `TCP_INFO` grid); `None` while the connection is not active.
    pub ss_steps: Vec<Option<SsSample>>,
}

impl TcpStats {
    /// The application read `bytes` in the measured window's 200 ms step `step`.
    pub(super) fn goodput(&mut self, bytes: u64, step: u64) {
        let step = step as usize;
        if self.goodput_steps.len() <= step {
            self.goodput_steps.resize(step + 1, 0);
        }
        self.goodput_steps[step] += bytes;
        self.goodput_bytes += bytes;
    }
}

/// What `ss -ti` shows of a connection at one instant.
#[derive(Clone, Copy, Debug, Default)]
pub struct SsSample {
    pub cwnd: u32,
    pub srtt_us: u32,
    /// `sk_pacing_rate`, bytes/s.
    pub pacing_rate: u64,
}

/// flent's 0.2 s step: of the goodput series and of [`TcpStats::ss_steps`], ns.
pub const SERIES_STEP_NS: u64 = 200_000_000;

/// What iperf3 reads at an interval's end: its own byte count and `TCP_INFO`.
#[derive(Clone, Copy, Debug, Default)]
pub struct IperfMark {
    pub written: u64,
    pub retrans: u64,
    pub cwnd_bytes: u64,
}

impl TcpSock {
    /// `tp->mss_cache`: the payload of a full segment.
    pub(crate) fn mss(&self) -> u32 {
        self.mss
    }

    /// The application's next `write()`: iperf3's 128 KB block, or what is left of a
    /// web connection's size (0 once it is all written).
    fn app_write_len(&self) -> u32 {
        match &self.web {
            None => APP_WRITE,
            Some(w) => w.size.saturating_sub(self.app_written).min(APP_WRITE as u64) as u32,
        }
    }

    /// A `kind = "web"` connection (reported as `web.*`, not as a `tcp.flow.N`).
    pub(crate) fn is_web(&self) -> bool {
        self.web.is_some()
    }

    /// The handshake is done (`TCP_ESTABLISHED`): a write sends data.
    pub(crate) fn established(&self) -> bool {
        self.conn == Conn::Established
    }

    /// `sock_owned_by_user()`: a process holds the socket lock.
    pub(crate) fn owned_by_user(&self) -> bool {
        self.lock.owned
    }

    /// sch_fq's `SK_PACING_FQ`: the qdisc paces this socket's packets (EDT), not TCP's
    /// own timer.
    pub(crate) fn set_pacing_fq(&mut self) {
        self.pacing = Pacing::Fq;
    }

    /// The receiving application: its task, and whether it `poll()`s many sockets
    /// (else it blocks in `read()` on this one).
    pub(crate) fn set_reader(&mut self, task: TaskId, poll: bool) {
        let app = self.rcv.app.as_mut().expect("a modelled receiver");
        app.reader = task;
        app.poll = poll;
    }

    /// The receiving application `poll()`s (see [`Self::set_reader`]).
    pub(crate) fn reader_polls(&self) -> bool {
        self.rcv.app.as_ref().is_some_and(|a| a.poll)
    }

    /// The measured window starts: the counters the report takes differences of.
    pub(crate) fn start_window(&mut self) {
        let st = &mut self.stats;
        st.retrans_base = self.total_retrans;
        st.reord_seen_base = self.reord_seen;
        st.dsack_dups_base = self.dsack_dups;
        st.undos_base = self.undos;
        st.spurious_rtos_base = self.spurious_rtos;
        st.backlog_acks_base = self.lock.backlog_acks;
        st.backlog_coalesce_base = self.lock.backlog_coalesce;
        st.deferred_work_base = self.lock.deferred_work;
        st.timeouts_base = self.timeouts;
        st.loss_probes_base = self.loss_probes;
        st.tlp_recoveries_base = self.tlp_recoveries;
        st.delivered_ce_base = self.delivered_ce;
    }

    /// A connection of flow `f`; `seed` seeds what its congestion control draws
    /// (BBR's gain-cycle phase).
    #[allow(clippy::too_many_arguments)]
    pub fn new_sock(f: &TcpFlow, traffic_index: u16, flow_index: u32, task: TaskId, dev: DevId, ack_dev: Option<DevId>, mtu: u32, max_tcp_header: u32, end_ns: u64, seed: u64) -> Sock {
        // mss_cache: MTU - IP 20 - TCP 20 - timestamps 12.
        let mss = mtu - 52;
        // Its queues (write, retransmit, backlogs) start empty and grow, by doubling,
        // to what the flow holds: a connection costs memory for what it has in flight,
        // not a fixed reserve (issue 54: 10,000 flows in one run).
        let ca = cc::tcp_ca_new(f.cc, seed, f.hystart_round_start);
        debug_assert_eq!(ca.name(), f.cc.name(), "the registry builds the named congestion control");
        let mut rcv = recv::Receiver::new(mss);
        if ca.flags() & cc::TCP_CONG_NEEDS_ECN != 0 {
            // The far end runs the same congestion control, which hears of each CE
            // change on the data it receives.
            rcv.ca = Some(cc::tcp_ca_new(f.cc, seed, f.hystart_round_start));
        }
        let mut tcp = TcpSock::new(f, (traffic_index, flow_index), ca, rcv, ack_dev, (mtu, max_tcp_header), end_ns);
        if f.receiver != darkbuf_scenario::TcpReceiver::Instant {
            let app = recv::RcvApp::new(mss, f.rcvbuf.min(i32::MAX as u64) as u32, f.drs);
            // The SYN-ACK's window, which is never scaled.
            tcp.snd_wnd = app.buf.rcv_wnd.min(u16::MAX as u32);
            tcp.rcv.app = Some(Box::new(app));
        }
        tcp.max_window = tcp.snd_wnd;
        // tcp_init_sock() starts at tcp_wmem[1]; tcp_init_buffer_space() expands it for
        // the initial window, unless SO_SNDBUF set it.
        let sndbuf = match f.so_sndbuf {
            Some(v) => darkbuf_scenario::effective_sndbuf(v),
            None => tcp.tcp_sndbuf_expand(sndbuf::TCP_WMEM_DEFAULT.min(f.sndbuf)),
        };
        Sock { task, dev, far_host: HostId(0), host: HostId(0), wmem_alloc: 0, sndbuf, blocked: false, last_send_dropped: false, kind: SockKind::Tcp(Box::new(tcp)) }
    }

    /// The connection's state before its first segment: the initial window, the RTO
    /// of `TCP_TIMEOUT_INIT`, empty queues; `ids` are (traffic index, flow index),
    /// `mtus` (device MTU, the kernel build's MAX_TCP_HEADER).
    fn new(f: &TcpFlow, ids: (u16, u32), ca: Box<dyn TcpCongestionOps>, rcv: recv::Receiver, ack_dev: Option<DevId>, mtus: (u32, u32), end_ns: u64) -> TcpSock {
        let (traffic_index, flow_index) = ids;
        let (mtu, max_tcp_header) = mtus;
        // mss_cache: MTU - IP 20 - TCP 20 - timestamps 12.
        let mss = mtu - 52;
        // tcp_ecn_send_syn(): tcp_ecn = 1, or a congestion control that needs ECN.
        let needs_ecn = ca.flags() & cc::TCP_CONG_NEEDS_ECN != 0;
        TcpSock {
            flow_index,
            traffic_index,
            ca: Some(ca),
            w: Window { cwnd: TCP_INIT_CWND, ssthresh: u32::MAX, cwnd_cnt: 0, clamp: u32::MAX },
            ca_state: CaState::Open,
            mss,
            // GSO_MAX_SIZE (65536) - (MAX_TCP_HEADER + 1), rounded to whole segments.
            gso_max_size: (65536 - (max_tcp_header + 1)) / mss * mss,
            snd_una: 0,
            snd_nxt: 0,
            write_seq: 0,
            wmem_queued: 0,
            write_queue: VecDeque::new(),
            sndbuf_max: f.sndbuf,
            // mss_clamp: MTU - IP 20 - TCP 20.
            sndbuf_per_mss: sndbuf::tcp_sndbuf_per_mss(mtu - 40, max_tcp_header),
            sndbuf_lock: f.so_sndbuf.is_some(),
            max_window: 0,
            write_xmit: f.write_xmit,
            grow_skb: f.grow_skb,
            packets_out: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            lost: 0,
            rate: rate::RateState::default(),
            reordering: input::TCP_REORDERING,
            reord_seen: 0,
            rack: input::Rack::default(),
            undo_marker: None,
            undo_retrans: -1,
            prior_ssthresh: 0,
            dsack_dups: 0,
            undos: 0,
            frto: false,
            frto_new_data: false,
            orig_sack_acked: false,
            spurious_rtos: 0,
            rtx: VecDeque::new(),
            high_seq: 0,
            prior_cwnd: 0,
            prr_delivered: 0,
            prr_out: 0,
            max_packets_out: 0,
            is_cwnd_limited: false,
            cwnd_usage_seq: 0,
            srtt_us: 0,
            mdev_us: 0,
            mdev_max_us: 0,
            rttvar_us: 0,
            rtt_seq: 0,
            min_rtt_us: u32::MAX,
            rto_ns: TCP_TIMEOUT_INIT_NS,
            rto_at: None,
            xmit_timer: XmitTimer::Retrans,
            rto_pushes: 0,
            backoff: 0,
            tlp_high_seq: None,
            probes_out: 0,
            probe0_at: None,
            timer_xmit: None,
            tlp_retrans: false,
            loss_probes: 0,
            tlp_recoveries: 0,
            // sock_setsockopt(SO_MAX_PACING_RATE) moves sk_pacing_status to
            // SK_PACING_NEEDED: TCP paces itself unless fq does (setup.rs). A
            // congestion control may ask for it in its init (BBR).
            pacing: if f.max_pacing_rate.is_some() { Pacing::Needed } else { Pacing::None },
            // ... and sets sk_pacing_rate = min(sk_pacing_rate, max): the cap from the start.
            pacing_rate: f.max_pacing_rate.map_or(0, |b| b / 8),
            max_pacing_rate: f.max_pacing_rate.map_or(u64::MAX, |b| b / 8),
            wstamp_ns: 0,
            pace_at: None,
            data_segs_out: 0,
            tsq: f.tsq,
            limit_output_bytes: f.limit_output_bytes,
            tso_rtt_log: f.tso_rtt_log,
            tsq_throttled: false,
            xmit_burst: 0,
            tsq_bound: 0,
            work: 0,
            tx_queue: None,
            tx_queue_changes: 0,
            snd_wnd: (f.rcvbuf / 2).min(u32::MAX as u64 / 2) as u32,
            ts_recent_ms: 0,
            ecn: f.ecn || needs_ecn,
            delivered_ce: 0,
            ecn_queue_cwr: false,
            dscp: f.dscp,
            total_retrans: 0,
            timeouts: 0,
            conn: if f.handshake { Conn::Closed } else { Conn::Established },
            established_ns: f.start_ns,
            syn_sent_ns: 0,
            syn_retries: 0,
            syn_rto_at: None,
            syn_due: false,
            start_ns: f.start_ns,
            stop_ns: f.stop_ns.unwrap_or(end_ns).min(end_ns),
            app_rate_bps: match f.rate {
                Rate::Bps(b) => Some(b),
                _ => None,
            },
            app_written: 0,
            ack_dev,
            softirq_cpu: CpuId(0),
            lock: lock::SockLock::new(f.lock_sock),
            rcv,
            stats: TcpStats::default(),
            web: None,
        }
    }

    /// The flow its packets carry, what the qdiscs and RSS hash:
    /// [`crate::sock::entry_flow_id`] of its entry and index.
    pub fn flow_id(&self) -> u32 {
        crate::sock::entry_flow_id(self.traffic_index, self.flow_index)
    }

    /// Whether the connection is active at `t` for `ss -ti` and the time averages: it
    /// is established (after `t`'s instant: a step that ends as the SYN-ACK arrives
    /// saw a connection in SYN_SENT), has an RTT sample, and its application still
    /// writes or data is still out.
    fn active_at(&self, t: u64) -> bool {
        self.srtt_us > 0 && t > self.established_ns && (t < self.stop_ns || self.packets_out > 0)
    }

    /// `tcp_packets_in_flight()`.
    /// `tcp_rto_delta_us()`: how far in the future the head of the retransmit queue
    /// times out (its last transmission + `icsk_rto`), ns; negative when overdue.
    pub(super) fn tcp_rto_delta_ns(&self, now: u64) -> i64 {
        let sent = self.rtx.front().map_or(now, |g| g.sent);
        (sent + self.rto_ns) as i64 - now as i64
    }

    /// Whether `tcp_schedule_loss_probe()` may arm a probe: data out, in Open or CWR.
    pub(super) fn tlp_allowed(&self) -> bool {
        self.packets_out > 0 && matches!(self.ca_state, CaState::Open | CaState::Cwr)
    }

    /// `tcp_probe0_base()`: the RTO, at least `TCP_RTO_MIN`.
    pub(super) fn tcp_probe0_base(&self) -> u64 {
        self.rto_ns.clamp(TCP_RTO_MIN_NS, TCP_RTO_MAX_NS)
    }

    /// `tcp_probe0_when()`: the base doubled per backoff (at most
    /// ilog2(TCP_RTO_MAX / TCP_RTO_MIN) + 1 = 10 times), at most `TCP_RTO_MAX`.
    pub(super) fn tcp_probe0_when(&self) -> u64 {
        (self.tcp_probe0_base() << self.backoff.min(10)).min(TCP_RTO_MAX_NS)
    }

    /// `tcp_pacing_delay()`: a timer armed with `pace_delay` waits, in whole jiffies,
    /// for the flow's next departure time.
    pub(super) fn tcp_pacing_delay(&self, now: u64, jiffy_ns: u64) -> u64 {
        self.wstamp_ns.saturating_sub(now) / jiffy_ns * jiffy_ns
    }

    pub fn in_flight(&self) -> u32 {
        self.packets_out - (self.sacked_out + self.lost_out) + self.retrans_out
    }

    /// `tcp_cwnd_validate()` after a transmission round: remember that cwnd limited
    /// it for the current window (until `snd_una` passes `cwnd_usage_seq`), else the
    /// most packets it had out. (`tcp_cwnd_application_limited()`, the decay of an
    /// unused cwnd after an RTO's time, is not modelled.)
    pub(super) fn tcp_cwnd_validate(&mut self, is_cwnd_limited: bool) {
        if !before(self.snd_una, self.cwnd_usage_seq) || is_cwnd_limited || (!self.is_cwnd_limited && self.packets_out > self.max_packets_out) {
            self.is_cwnd_limited = is_cwnd_limited;
            self.max_packets_out = self.packets_out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
    }

    /// `tcp_fastretrans_alert()`'s state exit: Recovery and Loss end when `high_seq`
    /// is acknowledged; CWR is held until something *above* it is, so that the CWR
    /// flag reaches the receiver (`tp->snd_una != tp->high_seq`).
    pub(super) fn ca_state_exit_due(&self) -> bool {
        match self.ca_state {
            CaState::Open | CaState::Disorder => false,
            CaState::Cwr => after(self.snd_una, self.high_seq),
            CaState::Recovery | CaState::Loss => !before(self.snd_una, self.high_seq),
        }
    }

    /// `tcp_is_cwnd_limited()`: cwnd limited in this window, or in slow start while
    /// cwnd is below twice the most that was out.
    pub(super) fn tcp_is_cwnd_limited(&self) -> bool {
        if self.is_cwnd_limited {
            return true;
        }
        self.w.in_slow_start() && self.w.cwnd < 2 * self.max_packets_out
    }
}

/// `skb->sk` of socket `s`'s skbs as the qdiscs see it (fq's flow key): bit 31 with
/// the socket's index, kept apart from the other sockets' values, which are their flows'
/// (`super::flow_sk()`: at most bits 0-21, 29 and 30; the pinger's `0xffff_0000 | i`).
/// Until 2026-12-03 it was `0x1_0000 + s`, which the flows of `[[traffic]]` entry 1
/// shared: a TCP flow and a flood's flow in one fq flow.
#[inline]
pub(crate) const fn tcp_skb_sk(s: SockId) -> u32 {
    0x8000_0000 | s.0
}

impl Sockets {
    #[inline]
    pub(crate) fn tcp(&mut self, s: SockId) -> &mut TcpSock {
        match &mut self.all[s].kind {
            SockKind::Tcp(t) => t,
            _ => unreachable!("socket {s} is TCP"),
        }
    }
}

impl World {
    /// `skb->sk` and its `sk_pacing_rate` (bytes/s) as a qdisc reads them of an skb of
    /// socket `s` that its sender still owns (not yet orphaned).
    pub(crate) fn tcp_skb_owner(&mut self, s: SockId) -> (u32, u64) {
        (tcp_skb_sk(s), self.socks.tcp(s).pacing_rate)
    }

    /// The application's next `write()` and the `tcp_push()` after it, from its process on
    /// `cpu`: the cost of the call and of the skbs it transmits.
    pub(crate) fn tcp_sendmsg(&mut self, cpu: CpuId, s: SockId) -> u64 {
        if !self.tcp_app_room(s) {
            return 0;
        }
        if self.socks.tcp(s).app_written == 0 {
            self.tcp_init_cc(s);
        }
        let (wmem_alloc, sndbuf) = (self.socks[s].wmem_alloc, self.socks[s].sndbuf);
        // lock_sock(): the socket is the writer's until release_sock() (`lock.rs`),
        // which the caller runs after this step.
        let spin = self.tcp_lock_sock(s);
        let t = self.socks.tcp(s);
        t.tcp_rate_check_app_limited(wmem_alloc);
        let n = t.tcp_sendmsg_locked(t.app_write_len(), sndbuf);
        t.app_written += n as u64;
        let cost = spin + self.cost(self.profile.costs.send_ns + n as f64 * self.profile.costs.tcp_copy_ns_per_kb / 1024.0);
        let start = self.now + cost;
        cost + self.tcp_write_xmit(cpu, s, start)
    }

    /// `tcp_init_congestion_control()` at the connection's first write.
    fn tcp_init_cc(&mut self, s: SockId) {
        let clock = self.tcp_clock();
        self.socks.tcp(s).with_ca(|ca, tp| ca.init(tp, clock));
    }

    /// The clocks a congestion control reads now.
    pub(super) fn tcp_clock(&self) -> bbr::Clock {
        bbr::Clock { jiffies: self.jiffies() as u32, hz: self.cfg.hz, now_ns: self.now }
    }

    /// Whether the application's next `write()` takes anything now: the send buffer has
    /// room, or the write queue's tail skb does (`sndbuf.rs`); not while a rate cap is
    /// red.
    ///
    /// The cap is iperf3's `-b` (`iperf_check_throttle()`): the light is green while the
    /// average rate since the start is below the target, and then whole blocks go out
    /// back to back; once red, the sender waits for its pacing timer (`--pacing-timer`,
    /// 1 ms by default). A capped flow thus sends ~1 ms bursts with idle gaps, which is
    /// what lets TCP set `ooo_okay` and move the flow between TX queues (seed 001
    /// reproduced its queue flapping with `-b 50G`).
    fn tcp_app_room(&mut self, s: SockId) -> bool {
        let now = self.now;
        let sndbuf = self.socks[s].sndbuf;
        let t = self.socks.tcp(s);
        if now < t.start_ns || now >= t.stop_ns || t.conn != Conn::Established || t.app_write_len() == 0 {
            return false;
        }
        if let Some(bps) = t.app_rate_bps {
            if t.app_written as u128 * 8 * 1_000_000_000 >= (now - t.start_ns) as u128 * bps as u128 {
                return false;
            }
        }
        t.tcp_sendmsg_would_take(sndbuf)
    }

    /// Whether the flow's process writes again at once; if not it sleeps: on its rate
    /// cap's timer, or until ACKs free send buffer (`sk_stream_wait_memory()`).
    pub(crate) fn tcp_wants_cpu(&mut self, s: SockId) -> bool {
        if self.tcp_app_room(s) {
            return true;
        }
        let now = self.now;
        let task = self.socks[s].task;
        let sndbuf = self.socks[s].sndbuf;
        let t = self.socks.tcp(s);
        let (start, stop, rate, room) = (t.start_ns, t.stop_ns, t.app_rate_bps, t.tcp_sendmsg_would_take(sndbuf));
        if now < start {
            self.events.push(start, Event::TaskTimer(task));
            return false;
        }
        if now >= stop {
            return false;
        }
        match t.conn {
            // connect() at the start, and the SYN timer's retransmission.
            Conn::Closed => return true,
            Conn::SynSent => return t.syn_due,
            Conn::Established => {}
        }
        if t.app_write_len() == 0 {
            // A web connection wrote its size and closed: nothing more to wait for.
            return false;
        }
        if let (Some(_), true) = (rate, room) {
            // Red light: the next tick of iperf3's pacing timer.
            let due = start + ((now - start) / IPERF_PACING_TIMER_NS + 1) * IPERF_PACING_TIMER_NS;
            self.events.push(due, Event::TaskTimer(task));
            return false;
        }
        self.socks[s].blocked = true;
        false
    }

    /// `tcp_wfree()`: the skb left the host (TX completion, or a drop); its truesize
    /// leaves `sk_wmem_alloc`, and a socket TSQ throttled gets its tasklet on this CPU.
    #[inline(never)]
    pub fn tcp_wfree(&mut self, id: u32) {
        let info = self.pkts.get_mut(id);
        info.destructor = crate::arena::Destructor::None;
        let (s, truesize) = (info.sock, info.truesize as u64);
        self.socks[s].wmem_alloc -= truesize;
        let cpu = self.sched.current_cpu;
        let t = self.socks.tcp(s);
        if t.tsq_throttled {
            t.tsq_throttled = false;
            self.sock_work_queue(cpu, s, work::TSQ);
        }
    }

    /// Queues deferred work for socket `s` on `cpu` (the TSQ tasklet's list).
    fn sock_work_queue(&mut self, cpu: CpuId, s: SockId, bits: u8) {
        let t = self.socks.tcp(s);
        let was = t.work;
        t.work |= bits;
        if was == 0 {
            self.sched.cpus[cpu].sock_work.push_back(s);
            self.raise_softirq(cpu, TASKLET_SOFTIRQ);
            self.cpu_kick(cpu, 0);
        }
    }

    /// One step of the sockets' deferred work on `cpu`: one socket's queued work.
    pub(crate) fn sock_work_step(&mut self, cpu: CpuId, started: &mut bool) -> crate::cpu::Step {
        use crate::cpu::Step;
        if !*started {
            *started = true;
            return Step::Continue(self.cost(self.profile.costs.softirq_ns));
        }
        let Some(s) = self.sched.cpus[cpu].sock_work.pop_front() else { return Step::Done(0) };
        let now = self.now;
        let tp = self.socks.tcp(s);
        let bits = std::mem::take(&mut tp.work);
        // bh_lock_sock() of the sending socket: spin while another holds it; with the
        // writer owning it, the sender's work is left to its tcp_release_cb(). The
        // delayed ACK is the receiving socket's, at the far end, whose reader may hold
        // it likewise.
        let bits = tp.lock.softirq_bits(bits);
        let bits = tp.rcv.softirq_bits(bits);
        if bits == 0 {
            return Step::Continue(0);
        }
        let sender = lock::is_sender_work(bits);
        let spin = if sender { tp.lock.spin(now) } else { 0 };
        let cost = spin + self.tcp_sock_work(cpu, s, bits, now + spin);
        if sender {
            self.socks.tcp(s).lock.hold(now, cost);
        }
        Step::Continue(cost)
    }

    /// Socket `s`'s work `bits` (`work::*`) at `t` on `cpu`: the delayed ACK, the
    /// retransmit timer's three kinds and TSQ's handler, in the tasklet or the timer
    /// softirq, or deferred to `tcp_release_cb()`. Returns the CPU time.
    fn tcp_sock_work(&mut self, cpu: CpuId, s: SockId, bits: u8, t: u64) -> u64 {
        let mut cost = 0;
        if bits & work::DELACK != 0 {
            cost += self.tcp_send_ack(cpu, s, t);
        }
        let rto_fired = bits & work::RTO != 0 && self.tcp_retransmit_timer(s);
        if bits & work::PROBE0 != 0 {
            cost += self.tcp_probe_timer(cpu, s, t + cost);
        }
        if bits & work::TLP != 0 {
            cost += self.tcp_send_loss_probe(cpu, s, t + cost);
        }
        if bits & work::REO != 0 {
            cost += self.tcp_rack_reo_timeout(cpu, s, t + cost);
        }
        if bits & (work::TSQ | work::RTO) != 0 {
            // tcp_tsq_handler() -> tcp_tsq_write(): retransmissions first, then new data.
            cost += self.tcp_write_xmit(cpu, s, t + cost);
            if rto_fired {
                // The loop's retransmission of the head is the timer's own.
                let tp = self.socks.tcp(s);
                tp.timer_xmit = Some((tp.xmit_burst, XmitTimer::Retrans));
            }
        }
        cost
    }

    /// `Event::TcpTimer`: a socket's timer fired (stale ones, re-armed or cancelled
    /// since, are ignored). Its work runs in softirq on the CPU that armed it.
    pub fn tcp_timer(&mut self, s: SockId, kind: u8) {
        let now = self.now;
        let t = self.socks.tcp(s);
        let cpu = t.softirq_cpu;
        match kind {
            timer::RTO if t.rto_at == Some(now) => {
                t.rto_at = None;
                let what = match t.xmit_timer {
                    XmitTimer::Retrans => work::RTO,
                    XmitTimer::LossProbe => work::TLP,
                    XmitTimer::Probe0 => {
                        t.probe0_at = None;
                        work::PROBE0
                    }
                    XmitTimer::ReoTimeout => work::REO,
                };
                self.sock_work_queue(cpu, s, what);
            }
            timer::PACE if t.pace_at == Some(now) => {
                // tcp_pace_kick() -> tcp_tsq_handler().
                t.pace_at = None;
                self.sock_work_queue(cpu, s, work::TSQ);
            }
            timer::SYN if t.syn_rto_at == Some(now) => self.tcp_syn_timer(s),
            timer::DELACK if t.rcv.delack_at == Some(now) => {
                t.rcv.delack_at = None;
                let rcpu = t.rcv.cpu;
                self.sock_work_queue(rcpu, s, work::DELACK);
            }
            _ => {}
        }
    }

    /// The enqueue verdict of segment `seq`, sent by transmit loop `burst`
    /// (`__tcp_transmit_skb()`'s `err`): a local drop or NET_XMIT_CN enters CWR
    /// (`tcp_enter_cwr()`). Dropped new data is sent again later as new data, not
    /// counted as a retransmission; a dropped retransmission stays counted and is tried
    /// again (`tcp_take_back()`).
    ///
    /// The verdict arrives when the deferred transmit runs, after the model's
    /// `tcp_write_xmit()` has sent the rest of its loop; `tcp_unsend_burst()` has
    /// taken those back already, so the dropped segment is normally the newest again.
    ///
    /// After a drop the timers are what the kernel's would be, which never saw the
    /// transmit go:
    /// - the retransmit timer's retransmission of the head (`tcp_retransmit_timer()`)
    ///   and the probe timer's probe (`tcp_send_probe0()`) try again after
    ///   `TCP_RESOURCE_PROBE_INTERVAL`, without backing off ("Let senders fight for
    ///   local resources conservatively");
    /// - otherwise, with nothing in flight, no ACK will come: `tcp_write_xmit()`
    ///   returns true and the probe timer is armed (`tcp_check_probe_timer()`) in
    ///   place of the RTO or loss probe the model armed for the dropped data.
    pub(crate) fn tcp_xmit_verdict(&mut self, s: SockId, seq: u32, burst: u32, verdict: EnqueueVerdict) {
        let t = self.socks.tcp(s);
        let timer_xmit = t.timer_xmit.filter(|&(b, _)| b == burst).map(|(_, kind)| kind);
        if timer_xmit.is_some() {
            t.timer_xmit = None;
        }
        if verdict == EnqueueVerdict::Success {
            // tcp_event_new_data_sent() re-armed the timer: no probe timer is left.
            t.probe0_at = None;
            if timer_xmit == Some(XmitTimer::Probe0) {
                // tcp_send_probe0(): data is out, the probing ends.
                (t.probes_out, t.backoff) = (0, 0);
            }
            return;
        }
        if verdict == EnqueueVerdict::Dropped {
            self.tcp_take_back(s, seq, true);
        }
        self.tcp_enter_cwr(s);
        if verdict != EnqueueVerdict::Dropped {
            return;
        }
        let (now, resource) = (self.now, tcp_resource_probe_interval(self.cfg.hz, self.cfg.jiffy_ns));
        let t = self.socks.tcp(s);
        match timer_xmit {
            Some(XmitTimer::Retrans) => {
                // `goto out`: neither icsk_backoff nor icsk_rto grew.
                t.backoff = t.backoff.saturating_sub(1);
                self.tcp_reset_xmit_timer(s, XmitTimer::Retrans, now + resource, true);
            }
            Some(XmitTimer::Probe0) if t.packets_out == 0 => {
                t.probes_out += 1;
                self.tcp_arm_probe0(s, now + resource);
            }
            _ if t.packets_out == 0 => {
                let at = match t.probe0_at {
                    Some(at) if at >= now => at,
                    _ => now + t.tcp_probe0_base(),
                };
                self.tcp_arm_probe0(s, at);
            }
            _ => {}
        }
    }

    /// Segment `seq` never left: `tcp_write_xmit()` stopped before
    /// `tcp_event_new_data_sent()` (or `tcp_retransmit_skb()` failed). The newest skb
    /// goes back to unsent data; one that later sends already followed stays on the
    /// retransmit queue, marked lost, and its next send is not counted as a
    /// retransmission (it is new data in the kernel). A retransmission that failed
    /// (`attempted`: the qdisc dropped it) is not marked RETRANS, but
    /// `__tcp_retransmit_skb()` counted it in `total_retrans` before its transmit
    /// (TCPRetransFail too); one that was never attempted (taken back with the rest of
    /// its loop) is not counted. Either way the segment stays lost, and its next
    /// retransmission counts.
    fn tcp_take_back(&mut self, s: SockId, seq: u32, attempted: bool) {
        let t = self.socks.tcp(s);
        let Some(i) = t.rtx.iter().position(|g| g.start == seq && !g.sacked) else { return };
        let seg = t.rtx[i];
        // __tcp_transmit_skb() calls tcp_update_skb_after_send() only when the skb was
        // queued: the segment takes its pacing time back.
        t.wstamp_ns = t.wstamp_ns.saturating_sub(std::mem::take(&mut t.rtx[i].pace_ns));
        if std::mem::take(&mut t.rtx[i].tlp) {
            // tcp_send_loss_probe() saw the transmit fail: no probe went (`rearm_timer`).
            // A probe of new data goes back to unsent data below; a retransmitted
            // one leaves its segment as it was.
            t.tlp_high_seq = None;
            t.loss_probes -= 1;
            if seg.counted && !seg.retrans {
                return;
            }
        }
        if i + 1 == t.rtx.len() && !seg.retrans && !seg.lost {
            t.rtx.pop_back();
            // The skb was never sent: it is the write queue's head again.
            t.write_queue.push_front(seg.end);
            t.snd_nxt = seg.start;
            t.packets_out -= seg.segs;
            return;
        }
        let seg = &mut t.rtx[i];
        if seg.retrans {
            seg.retrans = false;
            t.retrans_out -= seg.segs;
            if !attempted && std::mem::take(&mut seg.counted) {
                t.total_retrans -= seg.segs as u64;
            }
            if seg.lost {
                return;
            }
        }
        if !seg.lost {
            seg.lost = true;
            t.lost_out += seg.segs;
        }
        seg.local_drop = true;
    }

    /// A transmit of `segs` segments at `seq` that `tcp_unsend_burst()` took back: it
    /// never left, so it is neither counted as sent nor in PRR's count of sends.
    pub(crate) fn tcp_unsend(&mut self, s: SockId, seq: u32, segs: u32) {
        self.tcp_take_back(s, seq, false);
        let t = self.socks.tcp(s);
        t.data_segs_out -= segs as u64;
        if matches!(t.ca_state, CaState::Recovery | CaState::Cwr) {
            t.prr_out = t.prr_out.saturating_sub(segs);
        }
    }

    /// The event of the retransmit timer armed for `at`.
    pub(super) fn tcp_push_xmit_timer(&mut self, s: SockId, at: u64) {
        let t = self.socks.tcp(s);
        t.rto_pushes = t.rto_pushes.wrapping_add(1);
        self.events.push(at, Event::TcpTimer(s, timer::RTO));
    }

    /// `tcp_reset_xmit_timer()`: the retransmit timer armed for `kind` at `at`; without
    /// `push` its event is left to the caller.
    pub(super) fn tcp_reset_xmit_timer(&mut self, s: SockId, kind: XmitTimer, at: u64, push: bool) {
        let t = self.socks.tcp(s);
        t.rto_at = Some(at);
        t.xmit_timer = kind;
        if push {
            self.tcp_push_xmit_timer(s, at);
        }
    }

    /// `tcp_reset_xmit_timer(ICSK_TIME_PROBE0)` for `at` (one event, if the probe timer
    /// stands there already).
    pub(super) fn tcp_arm_probe0(&mut self, s: SockId, at: u64) {
        let t = self.socks.tcp(s);
        let pushed = t.rto_at == Some(at) && t.xmit_timer == XmitTimer::Probe0;
        t.probe0_at = Some(at);
        self.tcp_reset_xmit_timer(s, XmitTimer::Probe0, at, !pushed);
    }

    /// `tcp_rearm_rto()`: arms (or re-arms) the retransmission timer `rto` from now;
    /// in place of a loss probe, at the RTO the head of the retransmit queue has left
    /// (`tcp_rto_delta_us()`, at least 1 µs).
    pub(super) fn tcp_rearm_rto(&mut self, s: SockId) {
        let (now, jiffy_ns) = (self.now, self.cfg.jiffy_ns);
        let t = self.socks.tcp(s);
        if t.packets_out == 0 {
            t.rto_at = None;
            t.probe0_at = None;
            return;
        }
        let mut rto = (t.rto_ns << t.backoff.min(10)).min(TCP_RTO_MAX_NS);
        if t.xmit_timer == XmitTimer::LossProbe {
            rto = whole_jiffies(t.tcp_rto_delta_ns(now).max(1000) as u64, jiffy_ns);
        }
        let at = now + rto + t.tcp_pacing_delay(now, jiffy_ns);
        self.tcp_reset_xmit_timer(s, XmitTimer::Retrans, at, true);
    }

    /// Connections stalled at the end of the run: still writing, with data waiting,
    /// nothing in flight (no ACK will come), and nothing else that would send it: no
    /// retransmit, loss-probe or probe timer, no pacing timer, no queued work, and no
    /// skb of theirs left in the host whose `tcp_wfree()` would run TSQ's handler. The
    /// kernel always has one of these (`tcp_check_probe_timer()`); a model without it
    /// stops the flow for good.
    pub(crate) fn tcp_stalls(&self) -> Vec<String> {
        let now = self.now;
        let mut stalls = Vec::new();
        for sk in &self.socks {
            let SockKind::Tcp(t) = &sk.kind else { continue };
            let unsent = t.write_seq.wrapping_sub(t.snd_nxt);
            let writing = now >= t.start_ns && now < t.stop_ns;
            let waits = t.packets_out > 0 || t.rto_at.is_some() || t.pace_at.is_some() || t.work != 0 || sk.wmem_alloc > 0;
            if writing && unsent > 0 && !waits {
                stalls.push(format!("flow {} of traffic {}: {unsent} bytes unsent, nothing in flight, no timer", t.flow_index, t.traffic_index));
            }
        }
        stalls
    }

    /// `Event::Interval`: iperf3's per-second report reads each connection's byte count
    /// and `TCP_INFO` (re-armed every second up to the end of the run).
    pub(crate) fn tcp_interval(&mut self) {
        for sk in &mut self.socks {
            if let SockKind::Tcp(t) = &mut sk.kind {
                let mark = IperfMark { written: t.app_written, retrans: t.total_retrans, cwnd_bytes: t.w.cwnd as u64 * t.mss as u64 };
                t.stats.intervals.push(mark);
            }
        }
        let next = self.now + IPERF_INTERVAL_NS;
        if next <= self.cfg.end {
            self.events.push(next, Event::Interval);
        }
    }

    /// Accumulates the flow's time averages up to now: in the measured window, while
    /// the connection is active (it has an RTT sample, and its application writes or
    /// data is still out), as `ss -ti` would be sampled on a live connection.
    /// `check_ids()` for the ids a connection stores (`table.rs`).
    pub(crate) fn tcp_check_ids(&self, t: &TcpSock) {
        if let Some(dev) = t.ack_dev {
            self.net.devs.check(dev, "TCP ACK device");
        }
        if let Some(app) = &t.rcv.app {
            self.sched.tasks.check(app.reader, "TCP reader task");
        }
        self.sched.cpus.check(t.softirq_cpu, "TCP softirq CPU");
    }

    pub(crate) fn tcp_stats_tick(&mut self, s: SockId) {
        let (now, start, end) = (self.now, self.cfg.start, self.cfg.end);
        let t = self.socks.tcp(s);
        let from = t.stats.last_t.max(start);
        let active = t.active_at(from);
        // The step ends passed since the last tick saw the values in effect until now.
        if now > start {
            let first = if t.stats.last_t <= start { 1 } else { (t.stats.last_t - start) / SERIES_STEP_NS + 1 };
            let last = (now.min(end) - start) / SERIES_STEP_NS;
            for k in first..=last {
                let at = start + k * SERIES_STEP_NS;
                let sample = t.active_at(at).then_some(SsSample { cwnd: t.w.cwnd, srtt_us: t.srtt_us >> 3, pacing_rate: t.pacing_rate });
                let i = (k - 1) as usize;
                if t.stats.ss_steps.len() <= i {
                    t.stats.ss_steps.resize(i + 1, None);
                }
                t.stats.ss_steps[i] = sample;
            }
        }
        if now > from && active {
            let dt = (now - from) as u128;
            t.stats.active_ns += dt as u64;
            t.stats.cwnd_int += t.w.cwnd as u128 * dt;
            t.stats.srtt_int += (t.srtt_us >> 3) as u128 * dt;
            t.stats.rate_int += t.pacing_rate as u128 * dt;
            if let Some((_, v)) = t.ca().get_info(t) {
                t.stats.ca_info_int += v * dt as f64;
            }
        }
        t.stats.last_t = now;
    }
}

/// The protocol of TCP data and ACK packets.
pub const PROTO: Proto = Proto::Tcp;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::wire::TCP_HDR;

    /// A cubic socket with a 1448-byte MSS (MTU 1500) for unit tests of its parts.
    pub fn sock() -> TcpSock {
        let f = TcpFlow {
            name: String::new(),
            cc: darkbuf_scenario::Cc::Cubic,
            direction: darkbuf_scenario::Direction::Up,
            flows: 1,
            cpu: 0,
            path_delay_ns: 0,
            start_ns: 0,
            stop_ns: None,
            rate: Rate::Max,
            dscp: 0,
            ecn: false,
            sndbuf: 4 << 20,
            so_sndbuf: None,
            rcvbuf: 6 << 20,
            tsq: darkbuf_scenario::Tsq::PacedExempt,
            limit_output_bytes: 1 << 20,
            tso_rtt_log: darkbuf_scenario::TCP_TSO_RTT_LOG_DEFAULT,
            receiver: darkbuf_scenario::TcpReceiver::Instant,
            receiver_cpu: None,
            drs: darkbuf_scenario::Drs::V6_19,
            hystart_round_start: Default::default(),
            write_xmit: darkbuf_scenario::WriteXmit::GoalTsq,
            grow_skb: true,
            grow_skb_given: false,
            lock_sock: true,
            max_pacing_rate: None,
            handshake: false,
        };
        match TcpSock::new_sock(&f, 0, 0, TaskId(0), DevId(0), None, 1500, 320, 1_000_000_000, 0).kind {
            SockKind::Tcp(t) => *t,
            _ => unreachable!(),
        }
    }

    /// The flows of an entry of 100,000 stay apart from each other, from the next
    /// entry's and from the probes' (issue 54); below 65,536 they are what they were.
    #[test]
    fn flow_ids_stay_distinct_past_65535_flows() {
        let mut t = sock();
        let mut ids = std::collections::BTreeSet::new();
        for (traffic, flows) in [(0u16, 100_000u32), (1, 100_000), (63, 100_000)] {
            for f in 0..flows {
                (t.traffic_index, t.flow_index) = (traffic, f);
                assert!(ids.insert(t.flow_id()), "traffic {traffic} flow {f}");
            }
        }
        (t.traffic_index, t.flow_index) = (3, 65_535);
        assert_eq!(t.flow_id(), 3 << 16 | 65_535);
        for probe in [0xffff_0000u32, 0xfffe_0000] {
            assert!((0..64).all(|i| !ids.contains(&(probe | i))));
        }
    }

    /// Recovery and Loss end when `high_seq` is acknowledged, CWR only when something
    /// above it is (`tcp_fastretrans_alert()`), across the sequence-number wrap too.
    #[test]
    fn cwr_is_held_until_data_above_high_seq_is_acked() {
        let mut t = sock();
        for high in [1_000_000u32, u32::MAX - 10] {
            t.high_seq = high;
            for (state, at_high, above) in [
                (CaState::Open, false, false),
                (CaState::Cwr, false, true),
                (CaState::Recovery, true, true),
                (CaState::Loss, true, true),
            ] {
                t.ca_state = state;
                t.snd_una = high.wrapping_sub(1448);
                assert!(!t.ca_state_exit_due(), "{state:?} below high_seq {high}");
                t.snd_una = high;
                assert_eq!(t.ca_state_exit_due(), at_high, "{state:?} at high_seq {high}");
                t.snd_una = high.wrapping_add(1448);
                assert_eq!(t.ca_state_exit_due(), above, "{state:?} above high_seq {high}");
            }
        }
    }

    /// A world with one upload through tbf with a `limit` of bytes, and the socket.
    fn tbf_world(limit: u32) -> (World, SockId) {
        let text = format!(
            "[device]\ndriver = \"nic\"\nrate = \"100Mbit\"\n[qdisc]\nkind = \"tbf\"\nrate = \"20mbit\"\nburst = \"128k\"\nlimit = {limit}\n[[traffic]]\nkind = \"tcp\"\n"
        );
        let scn = darkbuf_scenario::load_str("t.toml", &text, &[]).unwrap();
        let w = World::new(&scn, darkbuf_measure::profile::Profile::load("seed-vm").unwrap(), 1).unwrap();
        let s = SockId::from_index(w.socks.iter().position(|k| matches!(k.kind, SockKind::Tcp(_))).unwrap());
        (w, s)
    }

    /// What `__tcp_transmit_skb()` hands to the deferred transmit: a one-segment skb
    /// charged to the socket, sent from `cpu` with TSQ_THROTTLED `at_send`. Returns
    /// the socket's TSQ_THROTTLED and queued work after its `__dev_queue_xmit()`, and
    /// whether the qdisc dropped it.
    fn deferred_xmit(limit: u32, throttled_after_loop: bool, at_send: bool) -> (bool, u8, bool, World) {
        let (mut w, s) = tbf_world(limit);
        let (cpu, dev) = (w.sched.tasks[w.socks[s].task].cpu, w.socks[s].dev);
        let mut skb = darkbuf_model::Skb { sk: tcp_skb_sk(s), len: 1514, truesize: 1448 + 768, ..Default::default() };
        w.sock_alloc_skb(s, &mut skb, PROTO, crate::arena::Destructor::TcpWfree, crate::arena::Dir::Out, 0);
        w.socks[s].wmem_alloc += skb.truesize as u64;
        w.socks.tcp(s).tsq_throttled = throttled_after_loop;
        // The CPU that ran the last step: the far host's, as it may be when the event pops.
        w.sched.current_cpu = CpuId::from_index(w.sched.cpus.len() - 1);
        let dropped = w.metrics.fate.dropped;
        w.tcp_queue_xmit_at(0, cpu, dev, skb, crate::dev::TcpSent { tsq_throttled: at_send, burst: 0 });
        w.deferred(0);
        let t = w.socks.tcp(s);
        let (flag, work) = (t.tsq_throttled, t.work);
        let dropped = w.metrics.fate.dropped > dropped;
        (flag, work, dropped, w)
    }

    /// tcp_write_xmit() sent a segment unthrottled, then set TSQ_THROTTLED for the
    /// next one; the qdisc drops the segment. In the kernel the drop comes first, inside
    /// `__tcp_transmit_skb()`, and the loop stops on NET_XMIT_DROP: `tcp_wfree()` finds
    /// the socket not throttled and queues no TSQ work, and the flag is never set.
    #[test]
    fn a_local_drop_meets_tsq_as_it_was_when_sent() {
        let (flag, work, dropped, _) = deferred_xmit(1, true, false);
        assert!(dropped, "tbf with a 1-byte limit drops the segment");
        assert!(!flag, "the stopped loop never set TSQ_THROTTLED");
        assert_eq!(work, 0, "no TSQ work: sending again would meet the same full qdisc");
    }

    /// Throttled already when it was sent (an earlier burst's flag): the drop's
    /// `tcp_wfree()` clears it and queues the TSQ handler, on the sending CPU.
    #[test]
    fn a_local_drop_of_a_throttled_socket_queues_tsq_on_the_sending_cpu() {
        let (flag, work, dropped, w) = deferred_xmit(1, true, true);
        assert!(dropped);
        assert!(!flag);
        assert_eq!(work, work::TSQ);
        let s = SockId::from_index(w.socks.iter().position(|k| matches!(k.kind, SockKind::Tcp(_))).unwrap());
        let cpu = w.sched.tasks[w.socks[s].task].cpu;
        assert_eq!(w.sched.cpus[cpu].sock_work.iter().copied().collect::<Vec<_>>(), [s]);
        assert!(w.sched.cpus.iter_ids().all(|(i, c)| i == cpu || c.sock_work.is_empty()));
    }

    /// tcp_write_xmit() sends a burst into a qdisc that drops everything: the first
    /// segment's NET_XMIT_DROP stops the kernel's loop, so the model takes back the
    /// burst's later transmits before they are due. The socket is as if the loop had
    /// sent nothing: no data out, nothing charged, no packet left in the model.
    #[test]
    fn a_local_drop_takes_back_the_rest_of_its_burst() {
        let (mut w, s) = tbf_world(1);
        let cpu = w.sched.tasks[w.socks[s].task].cpu;
        // Two-segment skbs (a 2896-byte GSO limit), a TSQ limit of 64 KB (the pacing
        // rate's 1 ms) and a window of 20: a burst of ten skbs.
        let t = w.socks.tcp(s);
        (t.gso_max_size, t.pacing_rate, t.w.cwnd) = (2 * 1448, 64 << 20, 20);
        t.tcp_sendmsg_locked(1 << 20, u64::MAX);
        w.tcp_write_xmit(cpu, s, 0);
        let mut slots: Vec<(u64, usize)> = (w.net.deferred.iter().enumerate())
            .filter_map(|(i, d)| match d {
                Some(crate::dev::Deferred::Xmit { skb, .. }) => Some((w.pkts.get(skb.id).t_send, i)),
                _ => None,
            })
            .collect();
        slots.sort_unstable();
        assert_eq!(slots.len(), 10, "the burst");
        let t = w.socks.tcp(s);
        assert!(t.packets_out > 0 && t.data_segs_out > 0 && t.snd_nxt > 0);
        let created = w.metrics.fate.created;
        w.deferred(slots[0].1 as u32);
        let cancelled = w.net.deferred.iter().filter(|d| matches!(d, Some(crate::dev::Deferred::Cancelled))).count();
        assert_eq!(cancelled, slots.len() - 1);
        assert_eq!(w.metrics.fate.created, created - (slots.len() as u64 - 1), "the taken-back skbs were never built");
        assert_eq!(w.metrics.fate.dropped, 1, "only the first reached the qdisc");
        assert_eq!(w.socks[s].wmem_alloc, 0);
        assert_eq!(w.pkts.live(), 0);
        let t = w.socks.tcp(s);
        // data_segs_out counts the dropped skb's two segments, as __tcp_transmit_skb()
        // does before its queue_xmit.
        assert_eq!((t.snd_nxt, t.packets_out, t.data_segs_out, t.rtx.len()), (0, 0, 2, 0));
        assert_eq!(t.ca_state, CaState::Cwr);
        // The cancelled slots' events still pop, do nothing and free the slots.
        for &(_, slot) in &slots[1..] {
            w.deferred(slot as u32);
        }
        assert!(w.net.deferred.iter().all(Option::is_none));
    }

    /// A socket of `tbf_world()` with `n` one-segment skbs out, cwnd 20.
    pub(crate) fn with_flight(n: u32) -> (World, SockId) {
        flight_in(100_000, n)
    }

    /// `with_flight()` in front of a tbf of `limit` bytes.
    fn flight_in(limit: u32, n: u32) -> (World, SockId) {
        let (mut w, s) = tbf_world(limit);
        let t = w.socks.tcp(s);
        for i in 0..n {
            t.rtx.push_back(TxSeg { start: i * 1448, end: (i + 1) * 1448, segs: 1, ..TxSeg::default() });
        }
        (t.packets_out, t.snd_nxt, t.write_seq, t.w.cwnd) = (n, n * 1448, n * 1448, 20);
        (w, s)
    }

    /// The deferred transmits of socket `s` waiting in `w`, by their send time.
    fn pending_xmits(w: &World) -> Vec<u32> {
        let mut slots: Vec<(u64, u32)> = (w.net.deferred.iter().enumerate())
            .filter_map(|(i, d)| match d {
                Some(crate::dev::Deferred::Xmit { skb, .. }) => Some((w.pkts.get(skb.id).t_send, i as u32)),
                _ => None,
            })
            .collect();
        slots.sort_unstable();
        slots.into_iter().map(|(_, i)| i).collect()
    }

    /// The retransmit timer of `s` fires at `at` and its work runs on the socket's CPU.
    fn fire_xmit_timer(w: &mut World, s: SockId, at: u64) {
        let cpu = w.sched.tasks[w.socks[s].task].cpu;
        w.now = at;
        w.tcp_timer(s, timer::RTO);
        let mut started = false;
        w.sock_work_step(cpu, &mut started);
        w.sock_work_step(cpu, &mut started);
    }

    /// RACK's reordering timer (`tcp_rack_reo_timeout()`): four segments sent 1 us
    /// apart, the second SACKed (RACK's, an RTT of 10 ms), no reordering seen and one
    /// SACK only, so the window is min_rtt/4 = 2.5 ms. When the timer fires 13 ms after
    /// the first went (past 10 + 2.5 ms), the first is lost: Recovery starts with one
    /// PRR step (2 in flight + 1 = cwnd 3), it is retransmitted, and the RTO takes the
    /// timer over. The two sent after RACK's are not judged.
    #[test]
    fn the_reordering_timer_retransmits_what_its_window_left_behind() {
        let (mut w, s) = flight_in(100_000, 4);
        let t = w.socks.tcp(s);
        for (i, g) in t.rtx.iter_mut().enumerate() {
            g.sent = i as u64 * 1_000;
        }
        t.rtx[1].sacked = true;
        (t.sacked_out, t.min_rtt_us, t.srtt_us, t.rto_ns) = (1, 10_000, 8 * 10_000, 250_000_000);
        t.rack = input::Rack { mstamp: 1_000, end_seq: 2 * 1448, rtt_us: 10_000, ..Default::default() };
        w.tcp_reset_xmit_timer(s, XmitTimer::ReoTimeout, 13_000_000, true);
        fire_xmit_timer(&mut w, s, 13_000_000);
        let t = w.socks.tcp(s);
        let lost: Vec<bool> = t.rtx.iter().map(|g| g.lost).collect();
        assert_eq!(lost, [true, false, false, false]);
        assert_eq!((t.ca_state, t.w.cwnd, t.retrans_out, t.total_retrans), (CaState::Recovery, 3, 1, 1));
        assert_eq!((t.xmit_timer, t.rto_at), (XmitTimer::Retrans, Some(13_000_000 + 250_000_000)));
        assert_eq!(pending_xmits(&w).len(), 1, "the retransmission");
    }

    /// Nothing in flight, and the qdisc drops the burst: no ACK will come, and the
    /// kernel's `tcp_write_xmit()` returns true for `tcp_check_probe_timer()`. The
    /// probe timer, not the loss probe the model armed for the data, is pending, one
    /// RTO away (1 s without an RTT sample). When it fires, `tcp_write_wakeup()` sends
    /// one MSS whatever the window says; the qdisc drops that too, and the timer tries
    /// again after `TCP_RESOURCE_PROBE_INTERVAL` (HZ/2), without backing off.
    #[test]
    fn a_dropped_flight_probes_with_one_mss_every_half_second() {
        let (mut w, s) = tbf_world(1);
        let cpu = w.sched.tasks[w.socks[s].task].cpu;
        let t = w.socks.tcp(s);
        t.w.cwnd = 10;
        t.tcp_sendmsg_locked(1 << 20, u64::MAX);
        w.tcp_write_xmit(cpu, s, 0);
        let slots = pending_xmits(&w);
        assert!(slots.len() > 1, "a burst");
        w.deferred(slots[0]);
        let t = w.socks.tcp(s);
        assert_eq!((t.packets_out, t.xmit_timer, t.rto_at, t.probe0_at), (0, XmitTimer::Probe0, Some(TCP_TIMEOUT_INIT_NS), Some(TCP_TIMEOUT_INIT_NS)));
        for &slot in &slots[1..] {
            w.deferred(slot);
        }

        fire_xmit_timer(&mut w, s, TCP_TIMEOUT_INIT_NS);
        let slots = pending_xmits(&w);
        let t = w.socks.tcp(s);
        assert_eq!((slots.len(), t.packets_out, t.snd_nxt, t.xmit_timer), (1, 1, 1448, XmitTimer::Retrans), "one MSS, and the RTO for it");
        w.deferred(slots[0]);
        let resource = tcp_resource_probe_interval(w.cfg.hz, w.cfg.jiffy_ns);
        assert!((499_000_000..=500_000_000).contains(&resource), "HZ/2 jiffies: {resource}");
        let t = w.socks.tcp(s);
        assert_eq!((t.packets_out, t.snd_nxt, t.probes_out, t.backoff), (0, 0, 1, 0));
        assert_eq!((t.xmit_timer, t.rto_at), (XmitTimer::Probe0, Some(TCP_TIMEOUT_INIT_NS + resource)));
    }

    /// A closed receive window with nothing in flight (`tcp_push_pending_frames()` ->
    /// `tcp_check_probe_timer()`): nothing goes, and the probe timer is armed at
    /// `tcp_probe0_base()`; when it fires with the window still closed it backs off
    /// (the zero-window probe itself, a pure ACK, is not built). A window update then
    /// sends, and the loss probe takes the timer over (`tcp_schedule_loss_probe()`).
    #[test]
    fn a_closed_window_arms_the_probe_timer() {
        let (mut w, s) = tbf_world(100_000);
        let cpu = w.sched.tasks[w.socks[s].task].cpu;
        let t = w.socks.tcp(s);
        (t.snd_wnd, t.rto_ns) = (0, 250_000_000);
        t.tcp_sendmsg_locked(1 << 20, u64::MAX);
        w.tcp_write_xmit(cpu, s, 0);
        let t = w.socks.tcp(s);
        assert_eq!((t.packets_out, t.xmit_timer, t.rto_at), (0, XmitTimer::Probe0, Some(250_000_000)));
        fire_xmit_timer(&mut w, s, 250_000_000);
        let t = w.socks.tcp(s);
        assert_eq!((t.packets_out, t.backoff, t.rto_at), (0, 1, Some(250_000_000 + (250_000_000 << 1))));
        t.snd_wnd = 64 << 10;
        w.tcp_write_xmit(cpu, s, 300_000_000);
        let t = w.socks.tcp(s);
        assert!(t.packets_out > 0);
        assert_eq!(t.xmit_timer, XmitTimer::LossProbe);
    }

    /// A probe the qdisc takes ends the probing (`tcp_send_probe0()` with data out):
    /// its RTO is armed with the backoff as it was (`tcp_event_new_data_sent()` comes
    /// first), then the backoff and the probe count go back to 0.
    #[test]
    fn a_probe_that_goes_ends_the_probing() {
        let (mut w, s) = tbf_world(100_000);
        let at = 700_000_000;
        let t = w.socks.tcp(s);
        (t.backoff, t.probes_out, t.rto_ns) = (2, 3, 250_000_000);
        t.tcp_sendmsg_locked(1 << 20, u64::MAX);
        w.tcp_arm_probe0(s, at);
        fire_xmit_timer(&mut w, s, at);
        let t = w.socks.tcp(s);
        assert_eq!((t.packets_out, t.xmit_timer, t.probe0_at), (1, XmitTimer::Retrans, None));
        assert_eq!(t.rto_at, Some(at + (250_000_000 << 2)), "the RTO with the backoff of the probing");
        let slots = pending_xmits(&w);
        assert_eq!(slots.len(), 1);
        w.deferred(slots[0]);
        let t = w.socks.tcp(s);
        assert_eq!((t.backoff, t.probes_out, t.timer_xmit), (0, 0, None));
    }

    /// The end-of-run check for a stalled sender: data waiting and nothing in flight is
    /// a stall without a timer, and not one with the probe timer pending.
    #[test]
    fn a_sender_with_data_and_no_timer_is_a_stall() {
        let (mut w, s) = tbf_world(1);
        w.socks.tcp(s).tcp_sendmsg_locked(1 << 20, u64::MAX);
        assert_eq!(w.tcp_stalls().len(), 1);
        w.tcp_arm_probe0(s, TCP_TIMEOUT_INIT_NS);
        assert!(w.tcp_stalls().is_empty());
        w.socks.tcp(s).rto_at = None;
        w.socks.tcp(s).packets_out = 1;
        assert!(w.tcp_stalls().is_empty(), "an ACK will come");
    }

    /// `tcp_retransmit_timer()`: when the qdisc drops the head's retransmission, the
    /// timer comes back after `TCP_RESOURCE_PROBE_INTERVAL`, and neither the backoff
    /// nor the RTO grew; it still counts as a timeout.
    #[test]
    fn a_locally_dropped_rto_retransmission_tries_again_without_backoff() {
        let (mut w, s) = flight_in(1, 3);
        let at = 300_000_000;
        let t = w.socks.tcp(s);
        (t.rto_at, t.xmit_timer, t.rto_ns) = (Some(at), XmitTimer::Retrans, 250_000_000);
        fire_xmit_timer(&mut w, s, at);
        let t = w.socks.tcp(s);
        assert_eq!((t.backoff, t.rto_at), (1, Some(at + 500_000_000)), "the RTO backed off as the retransmission left");
        let slots = pending_xmits(&w);
        assert_eq!(slots.len(), 1, "cwnd is what is in flight + 1: the head alone");
        w.deferred(slots[0]);
        let resource = tcp_resource_probe_interval(w.cfg.hz, w.cfg.jiffy_ns);
        let t = w.socks.tcp(s);
        assert_eq!((t.backoff, t.timeouts, t.xmit_timer, t.rto_at), (0, 1, XmitTimer::Retrans, Some(at + resource)));
        assert!(t.rtx[0].lost && !t.rtx[0].retrans, "the head waits, lost, for its retransmission");
    }

    /// tcp_enter_loss(): the first RTO cuts ssthresh (CUBIC: 20 x 717/1024 = 14) and
    /// sets cwnd to what is still in flight + 1; a second RTO without progress keeps
    /// that ssthresh (before, it was cut again from cwnd 1, to 2).
    #[test]
    fn a_repeated_rto_does_not_cut_ssthresh_again() {
        let (mut w, s) = with_flight(10);
        w.tcp_retransmit_timer(s);
        let t = w.socks.tcp(s);
        assert_eq!((t.ca_state, t.w.ssthresh, t.w.cwnd, t.lost_out), (CaState::Loss, 14, 1, 10));
        w.tcp_retransmit_timer(s);
        let t = w.socks.tcp(s);
        assert_eq!((t.w.ssthresh, t.w.cwnd, t.backoff), (14, 1, 2));
        // Both were TCPTimeouts; the timer of an empty flight is not one.
        assert_eq!(t.timeouts, 2);
        let (mut w, s) = with_flight(0);
        w.tcp_retransmit_timer(s);
        assert_eq!(w.socks.tcp(s).timeouts, 0);
    }

    /// tcp_enter_recovery() from CWR keeps CWR's reduction (ssthresh, high_seq); from
    /// Open it makes one.
    #[test]
    fn recovery_after_cwr_does_not_cut_the_window_twice() {
        let (mut w, s) = with_flight(10);
        w.tcp_enter_cwr(s);
        let (ssthresh, high) = (w.socks.tcp(s).w.ssthresh, w.socks.tcp(s).high_seq);
        assert_eq!((ssthresh, high), (14, 10 * 1448));
        let t = w.socks.tcp(s);
        (t.w.cwnd, t.snd_nxt) = (14, 12 * 1448);
        w.tcp_enter_recovery(s, false);
        let t = w.socks.tcp(s);
        assert_eq!((t.ca_state, t.w.ssthresh, t.high_seq), (CaState::Recovery, 14, 10 * 1448));

        let (mut w, s) = with_flight(10);
        w.tcp_enter_recovery(s, false);
        let t = w.socks.tcp(s);
        assert_eq!((t.ca_state, t.w.ssthresh, t.high_seq), (CaState::Recovery, 14, 10 * 1448));
    }

    /// A retransmission the qdisc drops was counted by `__tcp_retransmit_skb()` before
    /// its transmit, and stays counted; it is no longer in flight as one, and the
    /// segment stays lost. One taken back with the rest of its loop was never tried.
    #[test]
    fn a_dropped_retransmission_counts_and_an_unsent_one_does_not() {
        for (attempted, total) in [(true, 1), (false, 0)] {
            let (mut w, s) = with_flight(3);
            let t = w.socks.tcp(s);
            t.rtx[1] = TxSeg { lost: true, retrans: true, counted: true, ever_retrans: true, ..t.rtx[1] };
            (t.lost_out, t.retrans_out, t.total_retrans) = (1, 1, 1);
            if attempted {
                w.tcp_xmit_verdict(s, 1448, 0, EnqueueVerdict::Dropped);
            } else {
                w.tcp_unsend(s, 1448, 1);
            }
            let t = w.socks.tcp(s);
            let g = t.rtx[1];
            assert_eq!((g.lost, g.retrans, g.local_drop), (true, false, false), "attempted {attempted}");
            assert_eq!((t.lost_out, t.retrans_out, t.total_retrans), (1, 0, total), "attempted {attempted}");
        }
    }

    /// tcp_update_skb_after_send(): the next departure is the skb's payload at the
    /// pacing rate (the write queue's skb carries no headers): 2 x 1448 bytes at
    /// 1 MB/s is 2.896 ms.
    #[test]
    fn pacing_spaces_skbs_by_their_payload() {
        let (mut w, s) = tbf_world(100_000);
        let cpu = w.sched.tasks[w.socks[s].task].cpu;
        let t = w.socks.tcp(s);
        (t.gso_max_size, t.pacing_rate, t.w.cwnd, t.data_segs_out) = (2 * 1448, 1_000_000, 20, 10);
        t.tcp_sendmsg_locked(1 << 20, u64::MAX);
        t.pacing = Pacing::Needed;
        w.tcp_write_xmit(cpu, s, 0);
        let t = w.socks.tcp(s);
        assert_eq!(t.rtx.len(), 1, "pacing holds the second skb");
        assert_eq!(t.wstamp_ns, 2_896_000);
    }

    /// TSQ gives a retransmission twice the limit (`tcp_small_queue_check(sk, skb, 1)`
    /// in `tcp_xmit_retransmit_queue()`): with 5,000 bytes in the host queues, over the
    /// 4,432 of two one-segment skbs, new data waits and a retransmission goes.
    #[test]
    fn tsq_gives_a_retransmission_twice_the_limit() {
        let (mut w, s) = with_flight(3);
        w.socks[s].wmem_alloc = 5_000;
        assert!(w.tcp_small_queue_check(s, 1448, false));
        w.socks.tcp(s).tsq_throttled = false;
        assert!(!w.tcp_small_queue_check(s, 1448, true));
        assert!(!w.socks.tcp(s).tsq_throttled);
    }

    /// TSQ's limit is twice the skb's truesize, the payload and the profile's
    /// `tcp_skb_overhead`: with 5,000 bytes in the host queues a one-segment skb waits
    /// at the default 768 (limit 4,432) and goes at the 6.1 guest's 1,280 (limit 5,456);
    /// at 5,500 it waits at both.
    #[test]
    fn tsq_limit_follows_the_profiles_skb_overhead() {
        for (overhead, wmem, throttled) in [(768, 5_000, true), (1280, 5_000, false), (1280, 5_500, true)] {
            let (mut w, s) = with_flight(3);
            w.profile.tcp_skb_overhead = overhead;
            w.socks[s].wmem_alloc = wmem;
            assert_eq!(w.tcp_small_queue_check(s, 1448, false), throttled, "overhead {overhead}, {wmem} bytes queued");
        }
    }

    /// `tcp_tso_should_defer()` (`write_xmit = "kernel"`), case by case.
    #[test]
    fn tso_deferral_waits_for_an_ack_due_within_a_millisecond() {
        const MS: u64 = 1_000_000;
        let mss = 1448;
        // cwnd 20 with 18 out: 2 segments of room, under a third of the window (6.67),
        // for a head of 20 segments that is not the last. The head's ACK is due at
        // 5 ms (sent at 0, srtt 5 ms); the last transmit was at 4 ms.
        let next = output::NextSend { start: 18 * mss, end: 20 * mss, retrans: false, tsq_len: 2 * mss, head_len: 20 * mss, head_is_tail: false, max_segs: 45 };
        let setup = |now_wstamp: u64| {
            let (mut w, s) = with_flight(18);
            let t = w.socks.tcp(s);
            (t.srtt_us, t.wstamp_ns, t.snd_wnd) = (8 * 5000, now_wstamp, 1 << 20);
            (w, s)
        };
        // At 4.5 ms the ACK is 0.5 ms away, within min(srtt / 2, 1 ms): defer,
        // cwnd-limited (2 segments of room, under the head's 20 and the receiver's).
        let (mut w, s) = setup(4 * MS);
        assert_eq!(w.tcp_tso_should_defer(s, 4 * MS + MS / 2, &next), Some(true));
        // At 3.5 ms it is 1.5 ms away: send.
        assert_eq!(w.tcp_tso_should_defer(s, 3 * MS + MS / 2, &next), None);
        // The last transmit 2.5 ms ago: send.
        let (mut w, s) = setup(2 * MS);
        assert_eq!(w.tcp_tso_should_defer(s, 4 * MS + MS / 2, &next), None);
        // In recovery: send.
        let (mut w, s) = setup(4 * MS);
        w.socks.tcp(s).ca_state = CaState::Recovery;
        assert_eq!(w.tcp_tso_should_defer(s, 4 * MS + MS / 2, &next), None);
        // Room for the whole head, which is not the last skb: send; were it the last
        // (the application may add to it), defer.
        let (mut w, s) = setup(4 * MS);
        let small = output::NextSend { head_len: 2 * mss, ..next };
        assert_eq!(w.tcp_tso_should_defer(s, 4 * MS + MS / 2, &small), None);
        let last = output::NextSend { head_is_tail: true, ..small };
        assert_eq!(w.tcp_tso_should_defer(s, 4 * MS + MS / 2, &last), Some(true));
        // With 10 out there are 10 segments of room, over a third of the window: send.
        let (mut w, s) = with_flight(10);
        let t = w.socks.tcp(s);
        (t.srtt_us, t.wstamp_ns, t.snd_wnd) = (8 * 5000, 4 * MS, 1 << 20);
        assert_eq!(w.tcp_tso_should_defer(s, 4 * MS + MS / 2, &next), None);
    }

    /// A paced flow at 8 GB/s may keep 8e9 >> 10 = 7,812,500 bytes in the host queues
    /// (~1 ms). Before v6.16 (`tsq = "paced-exempt"`) `tcp_limit_output_bytes` does not
    /// apply to it: 5 MB queued, the next skb goes. Since v6.16 (`"always"`) the 4 MiB
    /// sysctl caps it and the skb waits; an unpaced flow is capped in both.
    #[test]
    fn tsq_caps_a_paced_flow_only_since_6_16() {
        use darkbuf_scenario::Tsq;
        for (tsq, pacing, throttled) in [
            (Tsq::PacedExempt, Pacing::Fq, false),
            (Tsq::Always, Pacing::Fq, true),
            (Tsq::PacedExempt, Pacing::None, true),
            (Tsq::Always, Pacing::None, true),
        ] {
            let (mut w, s) = with_flight(3);
            w.socks[s].wmem_alloc = 5_000_000;
            let t = w.socks.tcp(s);
            (t.tsq, t.limit_output_bytes, t.pacing, t.pacing_rate) = (tsq, tsq.default_limit_output_bytes(), pacing, 8_000_000_000);
            assert_eq!(w.tcp_small_queue_check(s, 1448, false), throttled, "{tsq:?} {pacing:?}");
            // Under 1 MiB (the paced-exempt kernels' default) every mode sends.
            w.socks[s].wmem_alloc = 1 << 19;
            w.socks.tcp(s).tsq_throttled = false;
            assert!(!w.tcp_small_queue_check(s, 1448, false), "{tsq:?} {pacing:?} at 512 KiB");
        }
    }

    /// tcp_rtt_estimator(), worked by hand (µs; srtt x 8, mdev x 4):
    /// 1. 10 ms first: srtt 80,000, mdev 20,000, rttvar = mdev_max = rto_min 200,000,
    ///    RTO 210 ms; the round ends past snd_nxt 14,480.
    /// 2. 410 ms: error 400,000, srtt 480,000, mdev += 400,000 - 5,000: 415,000, above
    ///    mdev_max, so rttvar 415,000 at once. RTO 60 + 415 = 475 ms.
    /// 3. 10 ms, the round over (snd_una 15,928): error -50,000, srtt 430,000; |error|
    ///    minus mdev/4 = -53,750 (not positive: full gain), mdev 361,250. rttvar stays at
    ///    this round's 415,000 (RFC 6298's would be 361,250); mdev_max restarts at
    ///    200,000. RTO 53,750 + 415,000 = 468,750 µs.
    /// 4. 10 ms, the next round over: srtt 386,250, mdev 361,250 - 46,562 = 314,688 =
    ///    mdev_max; rttvar falls by a quarter of 100,312: 389,922. RTO 48,281 + 389,922.
    ///
    /// And the finer gain for a falling RTT: from 1., 2 ms: |error| 8,000 - 5,000 =
    /// 3,000 > 0, so mdev grows by 3,000 >> 3 = 375 only.
    #[test]
    fn rtt_estimator_follows_the_kernels() {
        let (mut w, s) = with_flight(10);
        let j = w.cfg.jiffy_ns;
        let rto = |us: u64| (us * 1000).div_ceil(j) * j;
        let step = |(w, s): (&mut World, SockId), rtt_ms: u64, una: u32, nxt: u32| {
            let t = w.socks.tcp(s);
            (t.snd_una, t.snd_nxt) = (una, nxt);
            w.tcp_rtt_estimator(s, rtt_ms * 1_000_000);
            let t = w.socks.tcp(s);
            (t.srtt_us, t.mdev_us, t.mdev_max_us, t.rttvar_us, t.rtt_seq, t.rto_ns)
        };
        assert_eq!(step((&mut w, s), 10, 0, 14_480), (80_000, 20_000, 200_000, 200_000, 14_480, rto(210_000)));
        assert_eq!(step((&mut w, s), 410, 0, 14_480), (480_000, 415_000, 415_000, 415_000, 14_480, rto(475_000)));
        assert_eq!(step((&mut w, s), 10, 15_928, 20_000), (430_000, 361_250, 200_000, 415_000, 20_000, rto(468_750)));
        assert_eq!(step((&mut w, s), 10, 21_000, 30_000), (386_250, 314_688, 200_000, 389_922, 30_000, rto(48_281 + 389_922)));

        let (mut w, s) = with_flight(10);
        step((&mut w, s), 10, 0, 14_480);
        let (srtt, mdev, ..) = step((&mut w, s), 2, 0, 14_480);
        assert_eq!((srtt, mdev), (72_000, 20_375));
    }

    /// tcp_schedule_loss_probe() at srtt 10 ms (srtt_us 80,000): with ten packets out,
    /// 2 x 10 + 2 = 22 ms; with one, 20 + 200 = 220 ms, but the RTO (210 ms from now
    /// when an ACK re-arms it) comes first; none in Recovery. In whole jiffies, rounded
    /// up (`usecs_to_jiffies()`).
    #[test]
    fn loss_probe_is_two_rtts_away() {
        let (mut w, s) = with_flight(10);
        let j = w.cfg.jiffy_ns;
        let t = w.socks.tcp(s);
        (t.srtt_us, t.rto_ns) = (80_000, 210_000_000);
        assert!(w.tcp_schedule_loss_probe(s, false, true));
        let t = w.socks.tcp(s);
        assert_eq!((t.rto_at, t.xmit_timer), (Some(22_000_000u64.div_ceil(j) * j), XmitTimer::LossProbe));
        t.packets_out = 1;
        assert!(w.tcp_schedule_loss_probe(s, true, true));
        assert_eq!(w.socks.tcp(s).rto_at, Some(210_000_000u64.div_ceil(j) * j));
        w.socks.tcp(s).ca_state = CaState::Recovery;
        assert!(!w.tcp_schedule_loss_probe(s, true, true));
    }

    /// tcp_send_loss_probe() with nothing unsent: the last segment goes again, counted in
    /// total_retrans but not as a retransmission in flight; the tail is remembered, the
    /// RTO restarts, and a second probe waits for the first one's ACK.
    #[test]
    fn a_loss_probe_retransmits_the_tail_once() {
        let (mut w, s) = with_flight(3);
        let cpu = w.sched.tasks[w.socks[s].task].cpu;
        w.socks.tcp(s).srtt_us = 80_000;
        w.tcp_send_loss_probe(cpu, s, 0);
        let t = w.socks.tcp(s);
        let g = *t.rtx.back().unwrap();
        assert_eq!((g.start, g.tlp, g.retrans, g.ever_retrans), (2 * 1448, true, false, true));
        assert_eq!((t.retrans_out, t.total_retrans, t.loss_probes), (0, 1, 1));
        assert_eq!((t.tlp_high_seq, t.tlp_retrans, t.xmit_timer), (Some(3 * 1448), true, XmitTimer::Retrans));
        assert_eq!(t.rto_at, Some(t.rto_ns));
        w.tcp_send_loss_probe(cpu, s, 0);
        assert_eq!(w.socks.tcp(s).loss_probes, 1);
    }

    /// tcp_process_tlp_ack() for a retransmitted probe: an ACK beyond tlp_high_seq means
    /// the probe repaired a loss (CUBIC: ssthresh 20 x 717/1024 = 14, cwnd 14, Open);
    /// a pure duplicate ACK at it means both copies arrived (no reduction).
    #[test]
    fn a_loss_probes_ack_tells_a_repaired_loss() {
        for (ack, pure_dupack, cwnd) in [(4 * 1448, false, 14), (3 * 1448, true, 20)] {
            let (mut w, s) = with_flight(3);
            let t = w.socks.tcp(s);
            (t.tlp_high_seq, t.tlp_retrans, t.snd_nxt) = (Some(3 * 1448), true, 4 * 1448);
            w.tcp_process_tlp_ack(s, ack, pure_dupack);
            let t = w.socks.tcp(s);
            assert_eq!((t.tlp_high_seq, t.w.cwnd, t.ca_state), (None, cwnd, CaState::Open), "ack {ack}");
            assert_eq!(t.tlp_recoveries, !pure_dupack as u64);
        }
    }

    /// Retransmitting the head of the retransmit queue restarts the RTO from now
    /// (`tcp_xmit_retransmit_queue()`'s `rearm_timer`); the timer armed an RTO ago no
    /// longer fires in the middle of the repair.
    #[test]
    fn retransmitting_the_head_restarts_the_rto() {
        let (mut w, s) = with_flight(3);
        let cpu = w.sched.tasks[w.socks[s].task].cpu;
        w.now = 1_000_000;
        let t = w.socks.tcp(s);
        t.rtx[0].lost = true;
        (t.lost_out, t.rto_at) = (1, Some(200_000_000));
        let rto = t.rto_ns;
        w.tcp_write_xmit(cpu, s, w.now);
        let t = w.socks.tcp(s);
        assert!(t.rtx[0].retrans);
        assert_eq!(t.rto_at, Some(1_000_000 + rto));
    }

    /// A segment the qdisc takes: the loop went on, and the flag is what its end left.
    #[test]
    fn a_queued_segment_leaves_the_loops_flag() {
        for after_loop in [false, true] {
            let (flag, work, dropped, _) = deferred_xmit(100_000, after_loop, false);
            assert!(!dropped);
            assert_eq!(flag, after_loop);
            assert_eq!(work, 0);
        }
    }

    /// An ACK that comes while the writer owns the socket waits in the backlog, costs
    /// nothing where it arrives, and is processed by the writer's `release_sock()` on
    /// its own CPU, the socket still owned; the next step ends the ownership and holds
    /// the spinlock for `tcp_release_cb()`'s time (none here).
    #[test]
    fn an_ack_to_an_owned_socket_waits_for_release_sock() {
        use crate::arena::{Destructor, Dir, PktInfo};
        let (mut w, s) = with_flight(4);
        let cpu = w.sched.tasks[w.socks[s].task].cpu;
        assert_eq!(w.tcp_lock_sock(s), 0);
        // Records 0 and 1 of the receiver's ring: ACKs of nothing new (ack 0), which
        // coalesce; then one of two segments, added to the backlog by hand.
        let info = PktInfo { len: TCP_HDR, truesize: TCP_HDR + 768, sock: s, proto: PROTO, dir: Dir::Back, flow: 0, seq: 0, segs: 1, ecn: 0, dscp: 0, tcp_flags: 0, t_send: 0, bql_charged: false, destructor: Destructor::None, netem_clone: false, corrupt: false, from_ingress: false };
        assert_eq!(w.tcp_ack(CpuId(1), &info, 0), 0);
        assert_eq!(w.tcp_ack(CpuId(1), &PktInfo { seq: 1, ..info }, 0), 0);
        w.socks.tcp(s).lock.tcp_add_backlog(recv::AckRec { ack: 2 * 1448, tsval_ms: 1, ..Default::default() });
        let t = w.socks.tcp(s);
        assert_eq!((t.snd_una, t.packets_out, t.lock.backlog_acks, t.lock.backlog_coalesce), (0, 4, 3, 1));
        let crate::cpu::Step::Continue(cost) = w.tcp_release_sock_step(cpu, s) else { panic!("the backlog is processed first") };
        assert!(cost > 0);
        let t = w.socks.tcp(s);
        assert_eq!((t.snd_una, t.packets_out, t.softirq_cpu, t.lock.owned), (2 * 1448, 2, cpu, true));
        w.now += cost;
        let crate::cpu::Step::Done(0) = w.tcp_release_sock_step(cpu, s) else { panic!("an empty backlog ends the release") };
        let (now, t) = (w.now, w.socks.tcp(s));
        assert!(!t.lock.owned);
        assert!(t.lock.slock_until <= now);
        // Free again: the next ACK is processed where it arrives.
        assert!(w.tcp_ack(CpuId(1), &info, now) > 0);
    }

    /// TSQ's handler finds the socket owned: its work waits for `tcp_release_cb()`,
    /// which runs it on the writer's CPU and holds the spinlock meanwhile, so a softirq
    /// that comes then spins until it is free.
    #[test]
    fn an_owned_sockets_tsq_work_runs_in_tcp_release_cb() {
        let (mut w, s) = flight_in(100_000, 0);
        w.socks.tcp(s).write_seq = 10 * 1448;
        w.socks.tcp(s).write_queue.push_back(10 * 1448);
        let cpu = w.sched.tasks[w.socks[s].task].cpu;
        w.tcp_lock_sock(s);
        w.sock_work_queue(CpuId(1), s, work::TSQ);
        let mut started = true;
        let crate::cpu::Step::Continue(0) = w.sock_work_step(CpuId(1), &mut started) else { panic!("deferred, nothing done") };
        let t = w.socks.tcp(s);
        assert_eq!((t.snd_nxt, t.lock.deferred, t.lock.deferred_work), (0, work::TSQ, 1));
        let crate::cpu::Step::Done(cost) = w.tcp_release_sock_step(cpu, s) else { panic!("no backlog: tcp_release_cb()") };
        let (now, t) = (w.now, w.socks.tcp(s));
        assert!(cost > 0 && t.snd_nxt > 0, "tcp_tsq_write() sent");
        assert_eq!((t.lock.deferred, t.lock.owned, t.lock.slock_until), (0, false, now + cost));
        assert_eq!(t.lock.spin(now + 1), cost - 1);
    }

    /// The delayed-ACK timer of a receiver whose reader holds the socket leaves its
    /// handler to `tcp_release_cb()`, which sends the ACK if one is still scheduled,
    /// and none if not.
    #[test]
    fn a_held_receivers_delayed_ack_waits_for_release_sock() {
        let text = "[device]\ndriver = \"nic\"\nrate = \"100Mbit\"\n[[traffic]]\nkind = \"tcp\"\nreceiver = \"poll\"\n";
        let scn = darkbuf_scenario::load_str("t.toml", text, &[]).unwrap();
        let mut w = World::new(&scn, darkbuf_measure::profile::Profile::load("seed-vm").unwrap(), 1).unwrap();
        let s = SockId::from_index(w.socks.iter().position(|k| matches!(k.kind, SockKind::Tcp(_))).unwrap());
        for scheduled in [true, false] {
            let t = w.socks.tcp(s);
            let wup = t.rcv.rcv_wup;
            t.rcv.rcv_nxt = wup + 1448;
            let app = t.rcv.app.as_mut().unwrap();
            (app.owned, app.ack_scheduled) = (true, scheduled);
            w.sock_work_queue(CpuId(1), s, work::DELACK);
            let crate::cpu::Step::Continue(0) = w.sock_work_step(CpuId(1), &mut true) else { panic!("deferred, nothing done") };
            assert_eq!(w.socks.tcp(s).rcv.rcv_wup, wup, "no ACK while the reader holds the socket");
            let cost = w.tcp_release_sock(CpuId(1), s, 0);
            let sent = w.socks.tcp(s).rcv.rcv_wup != wup;
            assert_eq!((sent, cost > 0), (scheduled, scheduled), "scheduled: {scheduled}");
        }
    }

    /// `tcp_tso_autosize()` with `tcp_tso_rtt_log`, worked from the kernel's formula:
    /// `pacing_rate >> 10` plus `sk_gso_max_size >> (min_rtt_us >> tso_rtt_log)`, at most
    /// `sk_gso_max_size`, in whole MSS. A 16 MB/s pacing rate gives 15,625 bytes; the
    /// GSO limit is 45 MSS (65,160 bytes).
    #[test]
    fn tso_autosize_adds_the_min_rtt_bonus_by_tso_rtt_log() {
        let (mut w, s) = tbf_world(100);
        let segs = |w: &mut World, min_rtt_us: u32, log: u8| {
            let t = w.socks.tcp(s);
            (t.mss, t.gso_max_size, t.pacing_rate, t.min_rtt_us, t.tso_rtt_log) = (1448, 45 * 1448, 16_000_000, min_rtt_us, log);
            w.tcp_tso_segs(s)
        };
        // 834 us >> 9 = 1: 15,625 + 32,580 = 48,205 bytes, 33 MSS.
        assert_eq!(segs(&mut w, 834, 9), 33);
        // 1,100 us >> 9 = 2: 15,625 + 16,290 = 31,915 bytes, 22 MSS.
        assert_eq!(segs(&mut w, 1100, 9), 22);
        // 40 us >> 9 = 0: the whole GSO limit.
        assert_eq!(segs(&mut w, 40, 9), 45);
        // tcp_tso_rtt_log = 0: 834 >> 0 is past 31, no bonus: 15,625 bytes, 10 MSS.
        assert_eq!(segs(&mut w, 834, 0), 10);
        // 40 is past the u32: x86 shifts by 40 mod 32 = 8, 834 >> 8 = 3: 15,625 + 8,145
        // = 23,770 bytes, 16 MSS.
        assert_eq!(segs(&mut w, 834, 40), 16);
    }
}
