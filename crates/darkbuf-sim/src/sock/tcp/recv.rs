//! The receiver: mirrors `tcp_rcv_established()`'s data path (`tcp_data_queue()`,
//! `tcp_ofo_queue()`), `__tcp_ack_snd_check()` with quick ACKs and the delayed-ACK
//! timer (`tcp_send_delayed_ack()`), and `tcp_send_ack()` with SACK blocks
//! (`tcp_sack_new_ofo_skb()`) in net/ipv4/tcp_input.c and tcp_output.c.
//!
//! With `receiver = "instant"` the application reads each segment as it is queued,
//! and the window it advertises stays at half its receive buffer. With a modelled
//! receiver (`poll`, `blocking`: [`super::reader`]) the data waits in the receive queue
//! for the application's read, the buffer and the window follow the kernel's
//! ([`super::rcvbuf`]), a segment that arrives while the reader holds the socket waits
//! in its backlog (`tcp_add_backlog()`, processed at `release_sock()`), and
//! `__tcp_ack_snd_check()` asks whether the window would shrink.

use super::cc::{CaEvent, RcvEcn};
use super::rcvbuf::RcvBuf;
use super::{after, before};
use crate::wire::TCP_HDR;
use crate::arena::{Destructor, Dir, PktInfo};
use crate::id::{CpuId, SockId, TaskId};
use crate::event::Event;
use crate::world::World;
use darkbuf_model::skb::TcpHdr;
use darkbuf_model::Skb;
use std::collections::VecDeque;

/// `TCP_DELACK_MIN` (HZ/25) as time: the delayed-ACK timer.
const TCP_DELACK_MIN_NS: u64 = 40_000_000;
/// `TCP_MAX_QUICKACKS`.
const TCP_MAX_QUICKACKS: u32 = 16;

pub use crate::ack_recs::AckRec;

/// The receiving side of a connection whose application is modelled.
pub struct RcvApp {
    pub buf: RcvBuf,
    /// `sk_receive_queue`: each in-order skb's end and truesize, until read whole.
    queue: VecDeque<(u32, u32)>,
    /// `inet_csk_ack_scheduled()`: data came that no ACK has covered yet.
    pub ack_scheduled: bool,
    /// `sock_owned_by_user()`: the reader is inside `recvmsg()`.
    pub owned: bool,
    /// `sk_backlog`: the segments that came while it was.
    backlog: Vec<PktInfo>,
    /// `TCP_ACK_DEFERRED`: an ACK the backlog's processing left to `tcp_release_cb()`.
    ack_deferred: bool,
    /// `TCP_DELACK_TIMER_DEFERRED`: the delayed-ACK timer fired while the reader held
    /// the socket, and left its handler to `tcp_release_cb()`.
    delack_deferred: bool,
    /// The bytes the last `recvmsg()` copied (what its `tcp_cleanup_rbuf()` is given).
    pub last_copied: u32,
    /// The reading task, which `sk_data_ready()` wakes, and whether it polls (else it
    /// blocks in `read()` on this socket alone).
    pub reader: TaskId,
    pub poll: bool,
}

impl RcvApp {
    pub fn new(advmss: u32, rmem_max: u32, drs: darkbuf_scenario::Drs) -> RcvApp {
        RcvApp {
            buf: RcvBuf::new(advmss, rmem_max, drs),
            queue: VecDeque::new(),
            ack_scheduled: false,
            owned: false,
            backlog: Vec::new(),
            ack_deferred: false,
            delack_deferred: false,
            last_copied: 0,
            reader: TaskId(0),
            poll: false,
        }
    }

    /// The application read up to `copied_seq`: whole skbs leave the queue and their
    /// truesize the socket's `sk_rmem_alloc` (`tcp_eat_recv_skb()`).
    pub fn eat_to(&mut self, copied_seq: u32) {
        self.buf.copied_seq = copied_seq;
        while let Some(&(end, truesize)) = self.queue.front() {
            if after(end, copied_seq) {
                break;
            }
            self.buf.rmem_alloc -= truesize;
            self.queue.pop_front();
        }
    }

    /// Segments wait in the backlog.
    pub fn has_backlog(&self) -> bool {
        !self.backlog.is_empty()
    }
}

pub struct Receiver {
    pub rcv_nxt: u32,
    /// `rcv_wup`: `rcv_nxt` at the last ACK sent.
    pub rcv_wup: u32,
    mss: u32,
    /// The out-of-order queue as sorted, disjoint ranges (the SACK scoreboard), each
    /// with the truesize of its skbs.
    ooo: Vec<(u32, u32, u32)>,
    /// The most recently changed out-of-order range (reported first).
    last_ooo: Option<(u32, u32)>,
    /// `rx_opt.dsack` with `duplicate_sack[0]`: a range that arrived twice, for the
    /// next ACK's first block (`tcp_dsack_set()`).
    dsack: Option<(u32, u32)>,
    quickack: u32,
    /// A CE mark was received and not yet echoed by a CWR (`TCP_ECN_DEMAND_CWR`).
    ece: bool,
    pub delack_at: Option<u64>,
    /// The CPU its softirq runs on (where the delayed ACK is sent from).
    pub cpu: CpuId,
    /// `rx_opt.ts_recent`: the sender's TSval (ms) that the ACKs echo.
    ts_recent_ms: u32,
    /// The receiving application, when it is modelled.
    pub app: Option<Box<RcvApp>>,
    /// The receiving socket's congestion control when it needs ECN (DCTCP): it hears
    /// of each segment's CE mark (`cwnd_event_rcv`).
    pub ca: Option<Box<dyn super::cc::TcpCongestionOps>>,
}

impl Receiver {
    pub fn new(mss: u32) -> Receiver {
        Receiver {
            rcv_nxt: 0,
            rcv_wup: 0,
            mss,
            ooo: Vec::new(),
            last_ooo: None,
            dsack: None,
            quickack: TCP_MAX_QUICKACKS,
            ece: false,
            delack_at: None,
            cpu: CpuId(0),
            ts_recent_ms: 0,
            app: None,
            ca: None,
        }
    }

    /// `tcp_ecn_accept_cwr()`: a data segment with CWR says the sender has reduced:
    /// stop echoing, and ACK at once (its cwnd may be tiny). Returns whether to ACK now.
    fn tcp_ecn_accept_cwr(&mut self, info: &PktInfo, payload: u32) -> bool {
        if info.cwr() {
            self.ece = false;
        }
        info.cwr() && payload > 0
    }

    /// `__tcp_ecn_check_ce()` once the segment is queued (`rcv_nxt` past it): a
    /// congestion control that needs ECN hears whether it was marked
    /// (`CA_EVENT_ECN_IS_CE` / `_NO_CE`) and may ask for an ACK now, and first for an
    /// ACK of an older `rcv_nxt`; then a CE mark not yet echoed starts the echo, with
    /// two quick ACKs ("sender can have a very low cwnd"). Returns (ACK now, the older
    /// ACK to send first: its `ack_seq` and ECE).
    fn tcp_ecn_check_ce(&mut self, info: &PktInfo) -> (bool, Option<(u32, bool)>) {
        let ce = info.ecn == Skb::ECN_CE;
        let mut out = (false, None);
        if let Some(ca) = self.ca.as_mut() {
            let ev = if ce { CaEvent::EcnIsCe } else { CaEvent::EcnNoCe };
            let mut r = RcvEcn { rcv_nxt: self.rcv_nxt, demand_cwr: self.ece, ack_timer: self.delack_at.is_some(), ack_now: false, send_ack: None };
            ca.cwnd_event_rcv(ev, &mut r);
            self.ece = r.demand_cwr;
            out = (r.ack_now, r.send_ack);
        }
        if ce {
            if !self.ece {
                self.quickack = self.quickack.max(2);
            }
            self.ece = true;
        }
        out
    }

    /// The receiving socket's part of softirq work `bits`: with the reader holding the
    /// socket, the delayed-ACK timer leaves its handler to `tcp_release_cb()`
    /// (`tcp_delack_timer()`: TCP_DELACK_TIMER_DEFERRED). Returns the bits to run now.
    pub fn softirq_bits(&mut self, bits: u8) -> u8 {
        use super::work::DELACK;
        match self.app.as_mut() {
            Some(app) if app.owned && bits & DELACK != 0 => {
                app.delack_deferred = true;
                bits & !DELACK
            }
            _ => bits,
        }
    }

    /// Bytes received in order and not yet read.
    pub fn unread(&self) -> u32 {
        self.app.as_ref().map_or(0, |a| self.rcv_nxt.wrapping_sub(a.buf.copied_seq))
    }

    /// Adds `start..end` of `truesize` to the out-of-order ranges, merging neighbours.
    fn ooo_insert(&mut self, start: u32, end: u32, truesize: u32) {
        let (mut s, mut e, mut ts) = (start, end, truesize);
        self.ooo.retain(|&(a, b, t)| {
            if !after(a, e) && !before(b, s) {
                if before(a, s) {
                    s = a;
                }
                if after(b, e) {
                    e = b;
                }
                ts += t;
                false
            } else {
                true
            }
        });
        let pos = self.ooo.partition_point(|&(a, _, _)| before(a, s));
        self.ooo.insert(pos, (s, e, ts));
        self.last_ooo = Some((s, e));
    }

    /// Whether an out-of-order range already holds all of `start..end`
    /// (`tcp_data_queue_ofo()` then drops the segment and D-SACKs it).
    fn ooo_covers(&self, start: u32, end: u32) -> bool {
        self.ooo.iter().any(|&(a, b, _)| !after(a, start) && !before(b, end))
    }

    /// A segment at `seq..end` that is old data: `tcp_data_queue()` D-SACKs what lies
    /// below `rcv_nxt` (`tcp_dsack_set()`).
    fn dsack_old(&mut self, seq: u32, end: u32) {
        let top = if after(end, self.rcv_nxt) { self.rcv_nxt } else { end };
        if before(seq, top) {
            self.dsack = Some((seq, top));
        }
    }

    /// `tcp_ofo_queue()`: ranges now in order move up `rcv_nxt`. Returns their truesize.
    fn ooo_drain(&mut self) -> u32 {
        let mut truesize = 0;
        while let Some(&(a, b, t)) = self.ooo.first() {
            if after(a, self.rcv_nxt) {
                break;
            }
            if after(b, self.rcv_nxt) {
                self.rcv_nxt = b;
            }
            truesize += t;
            self.ooo.remove(0);
        }
        if self.ooo.is_empty() {
            self.last_ooo = None;
        }
        truesize
    }
}

impl World {
    /// A data skb reached the receiver at `t` on `cpu`. Returns the CPU time of the
    /// receive processing and of an ACK it sends.
    pub(crate) fn tcp_data_rcv(&mut self, cpu: CpuId, info: &PktInfo, t: u64) -> u64 {
        let s = info.sock;
        if let Some(app) = self.socks.tcp(s).rcv.app.as_mut() {
            if app.owned {
                // tcp_v4_rcv() -> tcp_add_backlog(): the reader holds the socket, and
                // its release_sock() will process the segment.
                app.backlog.push(*info);
                return 0;
            }
            return self.tcp_rcv_established(cpu, info, t, false);
        }
        let (start, window) = (self.cfg.start, (self.cfg.start, self.cfg.end));
        let tp = self.socks.tcp(s);
        let payload = info.len - info.segs as u32 * TCP_HDR;
        let (seq, end) = (info.seq, info.seq.wrapping_add(payload));
        let r = &mut tp.rcv;
        r.cpu = cpu;
        let mut now_ack = r.tcp_ecn_accept_cwr(info, payload);
        let before_nxt = r.rcv_nxt;
        if seq == r.rcv_nxt {
            r.rcv_nxt = end;
            if !r.ooo.is_empty() {
                r.ooo_drain();
                // Filling a hole: ACK at once so the sender sees the new cumulative ACK.
                now_ack = true;
            }
        } else if after(seq, r.rcv_nxt) {
            if r.ooo_covers(seq, end) {
                r.dsack = Some((seq, end));
            } else {
                r.ooo_insert(seq, end, info.truesize);
            }
            r.quickack = r.quickack.max(1);
            now_ack = true;
        } else {
            // Old data (a spurious retransmission): a D-SACK at once.
            r.dsack_old(seq, end);
            now_ack = true;
        }
        let (ce_now, older_ack) = r.tcp_ecn_check_ce(info);
        now_ack |= ce_now;
        // The application reads what is now in order.
        let read = r.rcv_nxt.wrapping_sub(before_nxt) as u64;
        if read > 0 && t >= window.0 && t <= window.1 {
            tp.stats.goodput(read, (t - start) / super::SERIES_STEP_NS);
        }
        if read > 0 && tp.web.is_some() {
            self.web_read(s, t);
        }
        let older = older_ack.map_or(0, |(ack, ece)| self.tcp_send_older_ack(cpu, s, t, ack, ece));
        let r = &mut self.socks.tcp(s).rcv;
        // __tcp_ack_snd_check(): more than one full segment unacked, quick ACK mode,
        // or out of order: now; otherwise the delayed-ACK timer.
        if r.rcv_nxt.wrapping_sub(r.rcv_wup) > r.mss || r.quickack > 0 || now_ack {
            let rcv_cost = self.cost(self.profile.costs.tcp_rcv_ns);
            return older + rcv_cost + self.tcp_send_ack(cpu, s, t + older + rcv_cost);
        }
        if r.delack_at.is_none() {
            let at = t + TCP_DELACK_MIN_NS;
            r.delack_at = Some(at);
            self.events.push(at, Event::TcpTimer(s, super::timer::DELACK));
        }
        older + self.cost(self.profile.costs.tcp_rcv_ns)
    }

    /// `tcp_send_ack()` at `t` from `cpu`: the cumulative ACK, the SACK blocks (the most
    /// recent first), ECE; through the far host's device, or by the constant way back.
    pub(crate) fn tcp_send_ack(&mut self, cpu: CpuId, s: SockId, t: u64) -> u64 {
        let tp = self.socks.tcp(s);
        let r = &mut tp.rcv;
        r.delack_at = None;
        // tcp_select_window() (it moves rcv_wup itself), and tcp_event_ack_sent().
        let (win, quick_off) = match r.app.as_mut() {
            Some(app) => {
                app.ack_scheduled = false;
                app.ack_deferred = false;
                app.delack_deferred = false;
                app.buf.tcp_select_window(r.rcv_wup, r.rcv_nxt)
            }
            None => (0, false),
        };
        if quick_off {
            r.quickack = 0;
        }
        if r.rcv_nxt != r.rcv_wup {
            // tcp_replace_ts_recent() took the TSval of the segment at rcv_wup, the
            // first one since the last ACK (`!after(seq, rcv_wup)`): its transmission's
            // skb_mstamp_ns, from the sender's scoreboard, which still holds it.
            let i = tp.rtx.partition_point(|g| !after(g.end, r.rcv_wup));
            if let Some(g) = tp.rtx.get(i).filter(|g| !after(g.start, r.rcv_wup)) {
                r.ts_recent_ms = (g.sent / 1_000_000) as u32;
            }
        }
        r.rcv_wup = r.rcv_nxt;
        r.quickack = r.quickack.saturating_sub(1);
        let tsval_ms = (t / 1_000_000) as u32;
        let mut rec = AckRec { ack: r.rcv_nxt, ece: r.ece, win, tsval_ms, tsecr_ms: r.ts_recent_ms, ..AckRec::default() };
        let mut n = 0;
        // tcp_established_options(): a pending D-SACK goes first and takes one of the
        // three blocks; it is sent once.
        if let Some(d) = r.dsack.take() {
            rec.sacks[0] = d;
            rec.dsack = true;
            n = 1;
        }
        if let Some(b) = r.last_ooo {
            rec.sacks[n] = b;
            n += 1;
        }
        for &(a, e, _) in r.ooo.iter().rev() {
            let b = (a, e);
            if n == 3 {
                break;
            }
            if Some(b) != r.last_ooo {
                rec.sacks[n] = b;
                n += 1;
            }
        }
        rec.n_sacks = n as u8;
        self.tcp_xmit_ack(cpu, s, t, rec)
    }

    /// `__tcp_send_ack(sk, rcv_nxt)` with an older `rcv_nxt` than the socket's (DCTCP's
    /// ACK of the segments under the previous CE state, `dctcp_ece_ack_update()`): the
    /// receiver's state is left as it is (`tcp_event_ack_sent()` returns early for
    /// it), and so is the delayed-ACK timer. Returns the CPU time.
    pub(crate) fn tcp_send_older_ack(&mut self, cpu: CpuId, s: SockId, t: u64, ack: u32, ece: bool) -> u64 {
        let r = &self.socks.tcp(s).rcv;
        let win = r.app.as_ref().map_or(0, |app| app.buf.tcp_select_window_raw().0);
        let rec = AckRec { ack, ece, win, tsval_ms: (t / 1_000_000) as u32, tsecr_ms: r.ts_recent_ms, ..AckRec::default() };
        self.tcp_xmit_ack(cpu, s, t, rec)
    }

    /// The ACK `rec` built and sent at `t` from `cpu` (`__tcp_transmit_skb()` of a pure
    /// ACK): through the far host's device, or by the constant way back.
    fn tcp_xmit_ack(&mut self, cpu: CpuId, s: SockId, t: u64, rec: AckRec) -> u64 {
        let tp = self.socks.tcp(s);
        let (ack_dev, flow) = (tp.ack_dev, tp.flow_id());
        // The record, then at once the packet that carries it (its first reference).
        let id = self.pkts.acks.push(s, rec);
        let len = TCP_HDR + if rec.n_sacks > 0 { 4 + 8 * rec.n_sacks as u32 } else { 0 };
        // The header as cake's ACK filter reads it: a pure ACK with ECE as echoed, the
        // timestamp option and the SACK blocks.
        let tcp = TcpHdr {
            flags: TcpHdr::ACK | if rec.ece { TcpHdr::ECE } else { 0 },
            n_sacks: rec.n_sacks,
            has_ts: true,
            data: false,
            ack_seq: rec.ack,
            tsval: rec.tsval_ms,
            tsecr: rec.tsecr_ms,
            sacks: rec.sacks,
        };
        let mut skb = Skb { flow, sk: super::tcp_skb_sk(s), len, truesize: len + self.profile.tcp_skb_overhead, tcp, ..Skb::default() };
        let cost = self.cost(self.profile.costs.tcp_ack_ns);
        match ack_dev {
            Some(dev) => {
                skb.queue_mapping = self.netdev_pick_tx(dev, &skb, cpu);
                self.sock_alloc_skb(s, &mut skb, super::PROTO, Destructor::None, Dir::Back, id);
                self.pkts.get_mut(skb.id).t_send = t;
                self.dev_queue_xmit_at(t + cost, cpu, dev, skb);
            }
            None => {
                self.sock_alloc_skb(s, &mut skb, super::PROTO, Destructor::None, Dir::Back, id);
                let back = self.cost(self.profile.costs.ping_reply_ns);
                self.deliver_at(t + cost + back, cpu, skb.id);
            }
        }
        cost
    }
}

impl World {
    /// A data skb at a connection with a modelled receiver, at `t` on `cpu`:
    /// `tcp_rcv_established()` -> `tcp_data_queue()` with `tcp_event_data_recv()`, then
    /// `__tcp_ack_snd_check()` and `tcp_data_ready()`. `from_backlog`: run by the
    /// reader's `release_sock()`, where an ACK is deferred to `tcp_release_cb()`
    /// (`tcp_backlog_ack_defer` = 1). Returns the CPU time, an ACK sent included.
    pub(crate) fn tcp_rcv_established(&mut self, cpu: CpuId, info: &PktInfo, t: u64, from_backlog: bool) -> u64 {
        let s = info.sock;
        let tp = self.socks.tcp(s);
        let payload = info.len - info.segs as u32 * TCP_HDR;
        let (seq, end) = (info.seq, info.seq.wrapping_add(payload));
        // The TSecr the segment carries: its transmission's (the sender's scoreboard
        // still holds it: nothing is acknowledged before it arrives).
        let i = tp.rtx.partition_point(|g| !after(g.end, seq));
        let tsecr = tp.rtx.get(i).filter(|g| !after(g.start, seq)).map(|g| g.tsecr_ms);
        // skb_shinfo(skb)->gso_size ?: skb->len.
        let gso_size = if info.segs > 1 { tp.mss } else { payload };
        let r = &mut tp.rcv;
        r.cpu = cpu;
        // Out of the receiver while its queues change, back before an ACK is built.
        let mut app = r.app.take().expect("a modelled receiver");
        let mut now_ack = r.tcp_ecn_accept_cwr(info, payload);
        // tcp_rcv_rtt_measure_ts(), before the segment is queued: a sample while the
        // application has read everything.
        if let Some(tsecr) = tsecr.filter(|_| !after(seq, r.rcv_nxt) && payload > 0) {
            let empty = r.rcv_nxt == app.buf.copied_seq;
            app.buf.rcv_rtt_measure_ts(payload, tsecr, (t / 1_000_000) as u32, empty);
        }
        let mut readable = false;
        if seq == r.rcv_nxt && payload > 0 {
            if app.buf.receive_window(r.rcv_wup, r.rcv_nxt) == 0 {
                // Out of window: dropped, with an ACK at once (TCPZeroWindowDrop).
                r.quickack = r.quickack.max(TCP_MAX_QUICKACKS);
                now_ack = true;
            } else {
                if app.buf.rmem_alloc > app.buf.rcvbuf {
                    // tcp_try_rmem_schedule() -> tcp_prune_queue() -> tcp_clamp_window().
                    app.buf.clamp_window();
                    r.quickack = 0;
                }
                r.rcv_nxt = end;
                app.queue.push_back((end, info.truesize));
                app.buf.rmem_alloc += info.truesize;
                if !r.ooo.is_empty() {
                    let moved = r.ooo_drain();
                    app.queue.push_back((r.rcv_nxt, moved));
                    now_ack = true;
                }
                // tcp_event_data_recv().
                app.ack_scheduled = true;
                app.buf.measure_rcv_mss(payload, gso_size, info.truesize);
                app.buf.rcv_rtt_measure(r.rcv_nxt, t / 1000);
                if payload >= 128 && app.buf.grow_window(payload, info.truesize) {
                    r.quickack = r.quickack.max(1);
                }
                readable = true;
            }
        } else if after(seq, r.rcv_nxt) && r.ooo_covers(seq, end) {
            // tcp_data_queue_ofo(): all of it is queued already: dropped, D-SACKed.
            r.dsack = Some((seq, end));
            r.quickack = r.quickack.max(1);
            now_ack = true;
        } else if after(seq, r.rcv_nxt) {
            // tcp_data_queue_ofo(): SACK grows the window; the buffer grows to cover
            // the hole (tcp_rcvbuf_grow() of 6.18).
            r.ooo_insert(seq, end, info.truesize);
            app.buf.rmem_alloc += info.truesize;
            app.ack_scheduled = true;
            app.buf.grow_window(payload, info.truesize);
            if app.buf.grows_for_ooo() {
                let span = r.ooo.last().map_or(0, |&(_, e, _)| e.wrapping_sub(r.rcv_nxt));
                app.buf.rcvbuf_grow(app.buf.space, span);
            }
            r.quickack = r.quickack.max(1);
            now_ack = true;
        } else {
            // Old data (a spurious retransmission): a D-SACK at once.
            r.dsack_old(seq, end);
            now_ack = true;
        }
        let (ce_now, older_ack) = r.tcp_ecn_check_ce(info);
        now_ack |= ce_now;
        // __tcp_ack_snd_check(): more than one full segment since the last ACK and a
        // window that would not shrink (or nothing unread), quick-ACK mode, or a
        // reason to ACK now.
        let mut send = false;
        if r.rcv_nxt.wrapping_sub(r.rcv_wup) > app.buf.rcv_mss {
            if r.rcv_nxt == app.buf.copied_seq {
                send = true;
            } else {
                let (win, quick_off) = app.buf.tcp_select_window_raw();
                if quick_off {
                    r.quickack = 0;
                }
                send = win >= app.buf.rcv_wnd;
            }
        }
        send |= r.quickack > 0 || now_ack;
        let reader = app.reader;
        r.app = Some(app);
        let older = older_ack.map_or(0, |(ack, ece)| self.tcp_send_older_ack(cpu, s, t, ack, ece));
        let rcv_cost = older + self.cost(self.profile.costs.tcp_rcv_ns);
        let mut cost = rcv_cost;
        let r = &mut self.socks.tcp(s).rcv;
        if send && from_backlog {
            r.app.as_mut().expect("a modelled receiver").ack_deferred = true;
        } else if send {
            cost += self.tcp_send_ack(cpu, s, t + rcv_cost);
        } else if r.delack_at.is_none() {
            let at = t + TCP_DELACK_MIN_NS;
            r.delack_at = Some(at);
            self.events.push(at, Event::TcpTimer(s, super::timer::DELACK));
        }
        if readable {
            // tcp_data_ready() -> sk_data_ready(): wake the reader.
            self.wake_task(reader);
        }
        cost
    }

    /// `release_sock()` by the reader at `t` on `cpu`: the segments that came while it
    /// held the socket go through `tcp_rcv_established()` here, then
    /// `tcp_release_cb()` sends the ACK they deferred. Returns the CPU time.
    pub(crate) fn tcp_release_sock(&mut self, cpu: CpuId, s: SockId, t: u64) -> u64 {
        let app = self.socks.tcp(s).rcv.app.as_mut().expect("a modelled receiver");
        app.owned = false;
        let mut backlog = std::mem::take(&mut app.backlog);
        let mut cost = 0;
        for info in backlog.drain(..) {
            cost += self.tcp_rcv_established(cpu, &info, t + cost, true);
        }
        let app = self.socks.tcp(s).rcv.app.as_mut().expect("a modelled receiver");
        app.backlog = backlog;
        // tcp_release_cb(): TCP_DELACK_TIMER_DEFERRED (tcp_delack_timer_handler(), an
        // ACK if one is still scheduled), then TCP_ACK_DEFERRED. One ACK at most: the
        // first clears both.
        let delack = std::mem::take(&mut app.delack_deferred) && app.ack_scheduled;
        if delack || std::mem::take(&mut app.ack_deferred) {
            cost += self.tcp_send_ack(cpu, s, t + cost);
        }
        cost
    }
}

impl World {
    /// The modelled receivers' bookkeeping at the end of a run, as findings: the
    /// receive buffer's charge is the truesize of the skbs queued, the application
    /// never reads past `rcv_nxt`, and a reader with data to read is not asleep.
    pub(crate) fn tcp_rcv_findings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for sk in &self.socks {
            let crate::sock::SockKind::Tcp(t) = &sk.kind else { continue };
            let r = &t.rcv;
            let Some(app) = r.app.as_ref() else { continue };
            let who = format!("flow {} of traffic {}", t.flow_index, t.traffic_index);
            let queued: u64 = app.queue.iter().map(|&(_, ts)| ts as u64).sum::<u64>() + r.ooo.iter().map(|&(_, _, ts)| ts as u64).sum::<u64>();
            if queued != app.buf.rmem_alloc as u64 {
                out.push(format!("{who}: sk_rmem_alloc {} != {queued} queued", app.buf.rmem_alloc));
            }
            if after(app.buf.copied_seq, r.rcv_nxt) {
                out.push(format!("{who}: copied_seq {} past rcv_nxt {}", app.buf.copied_seq, r.rcv_nxt));
            }
            if r.unread() > 0 && self.sched.tasks[app.reader].state == crate::cpu::TaskState::Sleeping {
                out.push(format!("{who}: {} bytes unread and its reader asleep", r.unread()));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tcp_data_queue(): old data is D-SACKed up to rcv_nxt (a segment half old, half
    /// new, only its old half); tcp_data_queue_ofo(): a segment all inside a queued
    /// range is a duplicate, one overlapping its edge is not.
    #[test]
    fn duplicates_are_dsacked() {
        let mut r = Receiver::new(1000);
        r.rcv_nxt = 5000;
        r.dsack_old(1000, 2000);
        assert_eq!(r.dsack, Some((1000, 2000)));
        r.dsack_old(4500, 5500);
        assert_eq!(r.dsack, Some((4500, 5000)));
        r.ooo_insert(8000, 10_000, 0);
        assert!(r.ooo_covers(8000, 9000) && r.ooo_covers(9000, 10_000));
        assert!(!r.ooo_covers(9500, 10_500) && !r.ooo_covers(7000, 8000));
    }
}
