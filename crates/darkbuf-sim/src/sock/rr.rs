//! Request/response as netperf's TCP_RR and UDP_RR run it (`send_omni_inner()` in
//! netperf's src/nettest_omni.c, and netserver's `recv_omni()`): each connection has one
//! transaction outstanding. The client (netperf, a process on this host) sends
//! `request` bytes; the server (netserver, on the far host) reads them all and sends
//! `response` bytes; the client reads them all and sends the next request at once.
//! Transaction latency = from the request's `send()` to the response read whole.
//!
//! - The client is a process: woken by the response's arrival (`sk_data_ready()`), it
//!   runs on its CPU, reads, and sends the next request (the send costs what a ping
//!   costs, `ping_send_ns`). The server answers from the softirq that received the
//!   request, as irtt's server does ([`super::irtt`]): its wake-up and scheduling on the
//!   far host are not modelled. The response comes back as the pinger's reply does
//!   ([`ReplyPath`]): through the far host's qdisc, BQL, ring and wire on a NIC, or the
//!   profile's constant `ping_reply_ns` on veth and tun; behind a veth `[lan]` router, or
//!   with ingress shaping on veth, the response is a packet that arrives after that
//!   constant and is forwarded to the client, or crosses the ifb.
//! - A message is one segment (TCP: `request` + 66 bytes of Ethernet, IP, TCP and
//!   timestamp headers) or one datagram (UDP: + 42 bytes); the scenario keeps it within a
//!   1500-byte MTU.
//! - TCP's ACKs ride on the data, as the kernel sends them in an interactive exchange:
//!   after the server answered within the delayed-ACK timeout of the request,
//!   `tcp_event_data_sent()` puts its socket in pingpong mode (`inet_csk_inc_pingpong_cnt()`,
//!   `tcp_pingpong_thresh` 1), so it delays its ACKs and each response carries the ACK
//!   of its request; the client's next request carries the ACK of the response. No pure
//!   ACK goes on the wire. (The first transaction's quick ACKs, which the kernel sends
//!   before pingpong mode starts, are not modelled.) Nagle never holds a request back:
//!   with one transaction outstanding everything sent before is acknowledged
//!   (`tcp_nagle_check()`), so netperf's default (no TCP_NODELAY) and `-D` behave alike.
//! - TCP loss: a lost request or response is resent by its sender's timer as the kernel's
//!   single-segment flight is: `tcp_schedule_loss_probe()` arms the loss probe at
//!   min(2 srtt + TCP_RTO_MIN, RTO) after the send, `tcp_send_loss_probe()` resends the
//!   segment and re-arms the RTO, and each `tcp_retransmit_timer()` after that doubles it.
//!   The RTO follows `tcp_rtt_estimator()` and `tcp_set_rto()` on each side's own samples
//!   (Karn: none from a resent message). A timer that fires after the segment arrived
//!   but before its ACK came back resends it as well (spuriously, as the kernel does);
//!   the duplicate's D-SACK ACK is not modelled. Timers are not rounded to jiffies.
//! - UDP loss: netperf waits for ever by default (one lost datagram stalls the
//!   connection until the test ends); darkbuf's client gives up after `timeout`
//!   (netperf's `-e`), counts a timeout, and starts the next transaction. A response
//!   that arrives after its timeout is discarded (matched by transaction number).

use crate::arena::{Destructor, Dir, PktInfo, Proto};
use crate::event::Event;
use crate::id::{CpuId, DevId, HostId, SockId, TaskId};
use crate::sock::ping::ReplyPath;
use crate::sock::{Outgoing, Sock, SockKind};
use crate::world::{Sockets, World};
use darkbuf_measure::rr::RrLog;
use darkbuf_model::skb::truesize_for_len;
use darkbuf_model::Skb;
use darkbuf_scenario::{Rr, RrProto};

/// Ethernet 14 + IPv4 20 + TCP 20 + timestamps 12, and Ethernet + IPv4 + UDP 8.
const TCP_OVERHEAD: u32 = crate::wire::TCP_HDR;
const UDP_OVERHEAD: u32 = 42;
/// `TCP_RTO_MIN`, `TCP_TIMEOUT_INIT`, `TCP_RTO_MAX` (µs).
const TCP_RTO_MIN_US: u64 = 200_000;
const TCP_TIMEOUT_INIT_US: u64 = 1_000_000;
const TCP_RTO_MAX_US: u64 = 120_000_000;

/// One side's RTT estimator (`tcp_rtt_estimator()`, `tcp_set_rto()`), µs; `srtt8` is
/// `srtt_us` (8 x srtt), `mdev4` is `mdev_us` (4 x mdev).
#[derive(Clone, Copy, Debug, Default)]
pub struct RttEst {
    srtt8: u64,
    mdev4: u64,
    mdev_max: u64,
    rttvar: u64,
    rto: u64,
}

impl RttEst {
    /// A sample of `m` µs. Every ACK of a request/response exchange acknowledges the
    /// whole flight, so each sample ends an RTT window (`after(snd_una, rtt_seq)`).
    pub fn sample(&mut self, m: u64) {
        let m = m.max(1) as i64;
        if self.srtt8 == 0 {
            self.srtt8 = (m as u64) << 3;
            self.mdev4 = (m as u64) << 1;
            self.rttvar = self.mdev4.max(TCP_RTO_MIN_US);
            self.mdev_max = self.rttvar;
        } else {
            let mut d = m - (self.srtt8 >> 3) as i64;
            self.srtt8 = (self.srtt8 as i64 + d) as u64;
            if d < 0 {
                d = -d - (self.mdev4 >> 2) as i64;
                if d > 0 {
                    d >>= 3;
                }
            } else {
                d -= (self.mdev4 >> 2) as i64;
            }
            self.mdev4 = (self.mdev4 as i64 + d) as u64;
            if self.mdev4 > self.mdev_max {
                self.mdev_max = self.mdev4;
                self.rttvar = self.rttvar.max(self.mdev_max);
            }
            if self.mdev_max < self.rttvar {
                self.rttvar -= (self.rttvar - self.mdev_max) >> 2;
            }
            self.mdev_max = TCP_RTO_MIN_US;
        }
        self.rto = ((self.srtt8 >> 3) + self.rttvar).min(TCP_RTO_MAX_US);
    }

    /// The first timer after a one-segment send: the loss probe's
    /// (`tcp_schedule_loss_probe()`: 2 srtt + TCP_RTO_MIN, at most the RTO), or
    /// `TCP_TIMEOUT_INIT` before any sample, ns.
    pub fn probe_timeout_ns(&self) -> u64 {
        if self.srtt8 == 0 {
            return TCP_TIMEOUT_INIT_US * 1000;
        }
        ((self.srtt8 >> 2) + TCP_RTO_MIN_US).min(self.rto) * 1000
    }

    /// The retransmission timer after `backoff` expiries (`icsk_rto` doubled each
    /// time, at most `TCP_RTO_MAX`), ns.
    pub fn rto_ns(&self, backoff: u32) -> u64 {
        let rto = if self.srtt8 == 0 { TCP_TIMEOUT_INIT_US } else { self.rto };
        (rto << backoff.min(16)).min(TCP_RTO_MAX_US) * 1000
    }
}

/// One side's retransmission timer of its message in flight.
#[derive(Clone, Copy, Debug, Default)]
struct XmitTimer {
    /// When it fires (ns); 0: not armed.
    at: u64,
    /// Expiries so far for this message (0: the next is the loss probe).
    backoff: u32,
    /// The message was resent: its ACK gives no RTT sample (Karn).
    resent: bool,
}

/// One netperf connection: the client's state on this host and netserver's on the far
/// host.
pub struct RrSock {
    pub proto: RrProto,
    /// Its entry's place in `[[traffic]]`.
    entry: u16,
    /// Frame lengths of a request and of a response.
    req_len: u32,
    rsp_len: u32,
    dscp: u8,
    flow: u32,
    /// No transaction starts at or after this time (ns).
    stop_ns: u64,
    /// UDP: how long the client waits for a response (ns).
    timeout_ns: u64,
    reply: ReplyPath,
    /// The client: the current transaction's number and when its request's send()
    /// began; whether it waits for the response; a new request is due; its timer
    /// fired (TCP: the request is resent).
    txn: u32,
    t_send: u64,
    waiting: bool,
    due: bool,
    resend_due: bool,
    cli_timer: XmitTimer,
    cli_rtt: RttEst,
    /// A response coming back by the constant way ([`ReplyPath::Constant`]): when it
    /// arrives (ns; 0: none).
    rsp_at: u64,
    /// The earliest `Event::RrTimer` pushed and not yet fired (ns; 0: none). A deadline
    /// that moves later keeps it, and it re-arms for the deadline when it fires, so a
    /// connection has about one event per timeout, not one per transaction.
    ev_at: u64,
    /// The server: the last transaction it answered, when it sent that response, and
    /// its timer and estimator.
    served: Option<u32>,
    srv_sent: u64,
    srv_timer: XmitTimer,
    srv_rtt: RttEst,
    /// The client read the answered transaction's response (the server's next ACK).
    srv_acked: bool,
    /// `sendto()` failed with -ENOBUFS (the local qdisc dropped the request).
    pub send_errors: u64,
    /// Segments resent (TCP) by either side's timer.
    pub resent: u64,
    pub log: RrLog,
}

impl RrSock {
    /// Connection `conn` of entry `index` (its place in `[[traffic]]`) of a run ending at
    /// `end_ns`.
    pub fn new_sock(r: &Rr, index: u16, conn: u32, task: TaskId, dev: DevId, reply: ReplyPath, end_ns: u64) -> Sock {
        let overhead = match r.proto {
            RrProto::Tcp => TCP_OVERHEAD,
            RrProto::Udp => UDP_OVERHEAD,
        };
        let rr = RrSock {
            proto: r.proto,
            entry: index,
            req_len: r.request + overhead,
            rsp_len: r.response + overhead,
            dscp: r.dscp,
            flow: (index as u32) << 16 | conn,
            stop_ns: r.stop_ns.unwrap_or(end_ns).min(end_ns),
            timeout_ns: r.timeout_ns,
            reply,
            txn: 0,
            t_send: 0,
            waiting: false,
            due: false,
            resend_due: false,
            cli_timer: XmitTimer::default(),
            cli_rtt: RttEst::default(),
            rsp_at: 0,
            ev_at: 0,
            served: None,
            srv_sent: 0,
            srv_timer: XmitTimer::default(),
            srv_rtt: RttEst::default(),
            srv_acked: false,
            send_errors: 0,
            resent: 0,
            log: RrLog::default(),
        };
        Sock { task, dev, far_host: HostId(0), host: HostId(0), wmem_alloc: 0, sndbuf: u64::MAX, blocked: false, last_send_dropped: false, kind: SockKind::Rr(Box::new(rr)) }
    }

    /// The client's process has something to send.
    pub fn wants_cpu(&self) -> bool {
        self.due || self.resend_due
    }
}

impl Sockets {
    fn rr(&mut self, s: SockId) -> &mut RrSock {
        match &mut self.all[s].kind {
            SockKind::Rr(r) => r,
            _ => unreachable!("socket {s} is a request/response connection's"),
        }
    }
}

impl World {
    /// The client's `send()`: the next request, or (TCP) the current one again when its
    /// timer fired. The request's number is the packet's sequence number.
    pub(super) fn rr_sendmsg(&mut self, s: SockId) -> Option<Outgoing> {
        let now = self.now;
        let r = self.socks.rr(s);
        if r.resend_due {
            r.resend_due = false;
            if !r.waiting {
                return None;
            }
            r.resent += 1;
            r.cli_timer.resent = true;
            r.cli_timer.at = now + r.cli_rtt.rto_ns(r.cli_timer.backoff - 1);
            self.rr_arm(s);
            return Some(self.rr_request(s));
        }
        if !r.due {
            return None;
        }
        r.due = false;
        if now >= r.stop_ns {
            return None;
        }
        r.txn = r.txn.wrapping_add(1);
        r.t_send = now;
        r.waiting = true;
        let after = match r.proto {
            RrProto::Udp => r.timeout_ns,
            RrProto::Tcp => r.cli_rtt.probe_timeout_ns(),
        };
        r.cli_timer = XmitTimer { at: now + after, backoff: 0, resent: false };
        self.rr_arm(s);
        Some(self.rr_request(s))
    }

    /// The current request's skb.
    fn rr_request(&mut self, s: SockId) -> Outgoing {
        let r = self.socks.rr(s);
        let (len, flow, dscp, seq) = (r.req_len, r.flow, r.dscp, r.txn);
        let priority = crate::forward::rt_tos2priority(dscp, 0);
        let skb = Skb { flow, sk: super::flow_sk(flow), len, truesize: truesize_for_len(len), dscp, priority, ..Skb::default() };
        let cost_ns = self.profile.costs.ping_send_ns;
        Outgoing { skb, proto: Proto::Udp, destructor: Destructor::None, cost_ns, seq }
    }

    /// The process's start timer fired: the first transaction is due.
    pub(super) fn rr_start(&mut self, s: SockId) {
        let r = self.socks.rr(s);
        if r.txn == 0 && !r.waiting {
            r.due = true;
        }
    }

    /// Pushes an `Event::RrTimer` for the earliest deadline unless one at or before it
    /// is pending.
    fn rr_arm(&mut self, s: SockId) {
        let r = self.socks.rr(s);
        let next = [r.cli_timer.at, r.srv_timer.at, r.rsp_at].into_iter().filter(|&t| t != 0).min();
        if let Some(at) = next {
            if r.ev_at == 0 || r.ev_at > at {
                r.ev_at = at;
                self.events.push(at, Event::RrTimer(s));
            }
        }
    }

    /// An `Event::RrTimer` fired: whichever of the connection's deadlines are due (a
    /// response coming back by the constant way, the client's retransmission or
    /// receive timeout, the server's retransmission), then the next one is armed. A
    /// deadline an answer cleared is 0 and never due.
    pub(crate) fn rr_timer(&mut self, s: SockId) {
        let now = self.now;
        let due = |at: u64| at != 0 && at <= now;
        let r = self.socks.rr(s);
        if r.ev_at <= now {
            r.ev_at = 0;
        }
        if due(r.rsp_at) {
            r.rsp_at = 0;
            let txn = r.txn;
            self.rr_response_read(s, txn, now);
        }
        let r = self.socks.rr(s);
        if r.waiting && due(r.cli_timer.at) {
            r.cli_timer.at = 0;
            r.log.timeouts.push(now);
            match r.proto {
                // netperf -e: the transaction is lost; the next one starts.
                RrProto::Udp => {
                    r.waiting = false;
                    r.due = true;
                }
                RrProto::Tcp => {
                    r.cli_timer.backoff += 1;
                    r.resend_due = true;
                }
            }
            let task = self.socks[s].task;
            self.wake_task(task);
        }
        let r = self.socks.rr(s);
        if due(r.srv_timer.at) {
            r.srv_timer.at = 0;
            if !r.srv_acked {
                self.rr_server_resend(s);
            }
        }
        self.rr_arm(s);
    }

    /// The request of `req` reached the server at `t` on `cpu`: a new transaction is
    /// answered (its ACK gives the server an RTT sample of its last response); a
    /// duplicate is consumed. Returns the CPU time building the response took, ns.
    pub(super) fn rr_server_rcv(&mut self, cpu: CpuId, req: &PktInfo, t: u64) -> u64 {
        let r = self.socks.rr(req.sock);
        if r.served == Some(req.seq) || req.seq != r.txn {
            return 0;
        }
        if r.served.is_some() && !r.srv_timer.resent && r.proto == RrProto::Tcp {
            r.srv_rtt.sample((t - r.srv_sent) / 1000);
        }
        r.served = Some(req.seq);
        r.srv_acked = false;
        r.srv_sent = t;
        r.srv_timer = XmitTimer::default();
        match r.reply {
            ReplyPath::Constant => {
                let back = self.cost(self.profile.costs.ping_reply_ns);
                self.socks.rr(req.sock).rsp_at = t + back;
                self.rr_arm(req.sock);
                0
            }
            ReplyPath::Modelled { dev } => {
                if r.proto == RrProto::Tcp {
                    r.srv_timer.at = t + r.srv_rtt.probe_timeout_ns();
                    self.rr_arm(req.sock);
                }
                self.rr_send_response(cpu, dev, req.sock, t)
            }
            ReplyPath::Forwarded => {
                if r.proto == RrProto::Tcp {
                    r.srv_timer.at = t + r.srv_rtt.probe_timeout_ns();
                    self.rr_arm(req.sock);
                }
                self.rr_forward_response(cpu, req.sock, t);
                0
            }
        }
    }

    /// The server's response as a frame of its length, flow and DSCP, allocated on `s`
    /// (`Dir::Back`, the answered transaction as its sequence number).
    fn rr_response_skb(&mut self, s: SockId) -> Skb {
        let r = self.socks.rr(s);
        let (len, flow, dscp, seq) = (r.rsp_len, r.flow, r.dscp, r.served.unwrap_or(0));
        let priority = crate::forward::rt_tos2priority(dscp, 0);
        let mut skb = Skb { flow, sk: 0, len, truesize: truesize_for_len(len), dscp, priority, ..Skb::default() };
        self.sock_alloc_skb(s, &mut skb, Proto::Udp, Destructor::None, Dir::Back, seq);
        skb
    }

    /// [`ReplyPath::Forwarded`]: the response reaches this host after the profile's
    /// constant (the peer's own TX path), on `cpu`, as irtt's reply does in
    /// `irtt_forward_reply()`: behind a veth `[lan]` router it is forwarded to the client
    /// through `[lan.qdisc]`; with ingress shaping on veth it crosses the ifb.
    fn rr_forward_response(&mut self, cpu: CpuId, s: SockId, t: u64) {
        let skb = self.rr_response_skb(s);
        self.pkts.get_mut(skb.id).t_send = t;
        let back = self.cost(self.profile.costs.ping_reply_ns);
        self.deliver_at(t + back, cpu, skb.id);
    }

    /// The server's response to the transaction it answered, sent at `t` from `cpu`
    /// through the far host's device `dev`. Returns its build cost, ns.
    fn rr_send_response(&mut self, cpu: CpuId, dev: DevId, s: SockId, t: u64) -> u64 {
        let mut skb = self.rr_response_skb(s);
        skb.queue_mapping = self.netdev_pick_tx(dev, &skb, cpu);
        self.pkts.get_mut(skb.id).t_send = t;
        let build = self.cost(self.profile.costs.ping_send_ns);
        self.dev_queue_xmit_at(t + build, cpu, dev, skb);
        build
    }

    /// The server's retransmission timer fired with its response not acknowledged: the
    /// response again, from the far host's first CPU, and the timer re-armed doubled.
    fn rr_server_resend(&mut self, s: SockId) {
        let now = self.now;
        let reply = self.socks.rr(s).reply;
        if reply == ReplyPath::Constant {
            return;
        }
        let r = self.socks.rr(s);
        r.srv_timer.backoff += 1;
        r.srv_timer.resent = true;
        r.resent += 1;
        r.log.timeouts.push(now);
        r.srv_timer.at = now + r.srv_rtt.rto_ns(r.srv_timer.backoff - 1);
        self.rr_arm(s);
        match reply {
            ReplyPath::Modelled { dev } => {
                let cpu = self.net.hosts[self.socks[s].far_host].cpus.start;
                self.rr_send_response(cpu, dev, s, now);
            }
            // The far end's namespace shares this host's CPUs: the client's.
            _ => {
                let cpu = self.sched.tasks[self.socks[s].task].cpu;
                self.rr_forward_response(cpu, s, now);
            }
        }
    }

    /// A response reached the client at `t` (through the client host's stack).
    pub(super) fn rr_client_rcv(&mut self, info: &PktInfo, t: u64) {
        self.rr_response_read(info.sock, info.seq, t);
    }

    /// The response of transaction `txn` is read whole at `t`: the transaction is done
    /// (if it is the one the client waits for) and the client's process wakes to send
    /// the next request.
    fn rr_response_read(&mut self, s: SockId, txn: u32, t: u64) {
        let r = self.socks.rr(s);
        if !r.waiting || txn != r.txn {
            return;
        }
        r.waiting = false;
        r.srv_acked = true;
        r.log.done.push((r.t_send, t));
        if r.proto == RrProto::Tcp && !r.cli_timer.resent {
            r.cli_rtt.sample((t - r.t_send) / 1000);
        }
        r.cli_timer.at = 0;
        r.resend_due = false;
        r.due = true;
        let task = self.socks[s].task;
        self.wake_task(task);
    }

    /// Each request/response entry's connections' logs, one vector per entry in
    /// `[[traffic]]` order.
    pub fn rr_logs(&self) -> Vec<Vec<RrLog>> {
        let mut out: Vec<Vec<RrLog>> = Vec::new();
        let mut last = None;
        for s in self.socks.iter() {
            if let SockKind::Rr(r) = &s.kind {
                let entry = r.entry;
                if last != Some(entry) {
                    out.push(Vec::new());
                    last = Some(entry);
                }
                out.last_mut().expect("pushed above").push(r.log.clone());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's figures: a first sample of 10 ms gives srtt 10 ms, rttvar
    /// max(2 x 10 ms, TCP_RTO_MIN) = 200 ms, RTO 210 ms; the loss probe would be at
    /// 2 x 10 + 200 = 220 ms and is capped by the RTO; each expiry doubles the RTO.
    #[test]
    fn rtt_estimator_and_timers_as_the_kernels() {
        let mut e = RttEst::default();
        assert_eq!(e.probe_timeout_ns(), 1_000_000_000, "TCP_TIMEOUT_INIT before a sample");
        e.sample(10_000);
        assert_eq!((e.srtt8 >> 3, e.rttvar, e.rto), (10_000, 200_000, 210_000));
        assert_eq!(e.probe_timeout_ns(), 210_000_000);
        assert_eq!(e.rto_ns(2), 840_000_000);
        // Steady 10 ms samples keep it there; a 50 ms one moves srtt by 1/8 of the error.
        e.sample(10_000);
        assert_eq!(e.rto, 210_000);
        e.sample(50_000);
        assert_eq!(e.srtt8 >> 3, 15_000);
        // A 1 s RTT: 2 srtt + 200 ms is below the RTO (srtt + rttvar), so the probe
        // fires first.
        let mut slow = RttEst::default();
        slow.sample(1_000_000);
        assert_eq!(slow.rto, 3_000_000);
        assert_eq!(slow.probe_timeout_ns(), 2_200_000_000);
    }
}
