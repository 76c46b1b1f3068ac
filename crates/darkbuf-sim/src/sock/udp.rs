//! The UDP flood, as the seed's selftest runs it: a process doing `sendmsg()` in a loop
//! (`udp_sendmsg()` -> `ip_make_skb()` -> `udp_send_skb()`), and its sink on the far end.
//!
//! Each skb is charged to its flow's socket (`sk_wmem_alloc += truesize`) until it is
//! orphaned on the receive side or dropped; `sock_alloc_send_pskb()` lets the send
//! through while wmem < sndbuf (overshooting by one skb) and otherwise sleeps until
//! `sock_wfree()` brings wmem under half the sndbuf (`sock_writeable()`), which is what
//! bounds a flood's in-flight packets when the default 212992-byte sndbuf holds fewer
//! skbs than the ring. With `flows = N` the process sends round robin on N sockets, as
//! the kernel backend's flood does: each has its own send buffer, and the process
//! sleeps on the next flow's when that one is full.
//!
//! The enqueue verdict does not reach the sender: `udp_send_skb()` turns NET_XMIT_DROP's
//! -ENOBUFS into success unless IP_RECVERR is set (counting `SNDBUFERRORS`), and
//! NET_XMIT_CN is success.

use crate::arena::{Destructor, Proto};
use crate::id::{HostId, SockId, TaskId};
use crate::sock::{Outgoing, Sock, SockKind};
use crate::world::{Sockets, World};
use darkbuf_model::skb::truesize_for_len;
use darkbuf_model::units::Rate;
use darkbuf_model::Skb;
use darkbuf_scenario::{udp_frame_len, UdpFlood};

/// The flood's state (the sending process and its sockets: one per flow).
pub struct UdpSock {
    /// Index in the scenario's `[[traffic]]`.
    pub traffic_index: u16,
    pub frame_len: u32,
    pub truesize: u32,
    /// Distinct 5-tuples, round robin: one socket per flow, as a multi-flow load
    /// generator opens them (fq keys on `skb->sk`), each with its own send buffer.
    pub flows: u32,
    /// Each flow's socket's `sk_wmem_alloc` (bytes); the `Sock`'s own counts them all.
    pub flow_wmem: Vec<u64>,
    pub next_flow: u32,
    /// ns between sends for a rate-limited flood (0 = as fast as possible).
    pub interval_ns: f64,
    pub next_send: f64,
    pub priority: u32,
    pub dscp: u8,
    pub ecn: u8,
    pub sent: u64,
    /// `SO_MAX_PACING_RATE` of each flow's socket (bytes/s, 0: unset): the skbs carry it
    /// as `sk_pacing_rate`, which fq paces a flow without EDT stamps at.
    pub pacing_rate: u64,
    /// The departure-time source (`txtime`): ns per byte at its rate (0: none), and each
    /// flow's last stamp (`t_last` of an EDT rate limiter).
    pub txtime_ns_per_byte: f64,
    pub txtime_last: Vec<u64>,
    /// Packets its sink received in the measured window.
    pub sink_pkts: u64,
    /// `UDP_MIB_SNDBUFERRORS`: sends the qdisc dropped (NET_XMIT_DROP).
    pub sndbuf_errors: u64,
}

impl UdpSock {
    /// The socket of `[[traffic]]` entry `traffic_index`, owned by `task`, leaving by `dev`.
    pub fn new_sock(traffic_index: u16, u: &UdpFlood, task: TaskId, dev: crate::id::DevId) -> Sock {
        let frame_len = udp_frame_len(u.size);
        let interval_ns = match u.rate {
            Rate::Max => 0.0,
            Rate::Pps(pps) => 1e9 / pps,
            Rate::Bps(bps) => frame_len as f64 * 8.0 * 1e9 / bps as f64,
        };
        let udp = UdpSock {
            traffic_index,
            frame_len,
            truesize: truesize_for_len(frame_len),
            flows: u.flows.max(1),
            flow_wmem: vec![0; u.flows.max(1) as usize],
            next_flow: 0,
            interval_ns,
            next_send: 0.0,
            // IP_TOS sets sk_priority to rt_tos2priority(tos); an SO_PRIORITY set after
            // it (the scenario's priority, when not 0) wins, as the kernel backend's
            // flood does it.
            priority: if u.priority != 0 { u.priority } else { crate::forward::rt_tos2priority(u.dscp, 0) },
            dscp: u.dscp,
            ecn: u.ecn,
            sent: 0,
            pacing_rate: u.max_pacing_rate.map_or(0, |b| b / 8),
            txtime_ns_per_byte: u.txtime.map_or(0.0, |b| 8e9 / b as f64),
            txtime_last: if u.txtime.is_some() { vec![0; u.flows.max(1) as usize] } else { Vec::new() },
            sink_pkts: 0,
            sndbuf_errors: 0,
        };
        Sock { task, dev, far_host: HostId(0), host: HostId(0), wmem_alloc: 0, sndbuf: u.sndbuf, blocked: false, last_send_dropped: false, kind: SockKind::Udp(udp) }
    }
}

impl UdpSock {
    /// A rate-limited flood whose next send is not due at `now`: when it is (the
    /// process sleeps on a timer until then).
    #[inline]
    pub fn next_send_timer(&self, now: u64) -> Option<u64> {
        (self.interval_ns > 0.0 && self.next_send > now as f64).then(|| self.next_send.ceil() as u64)
    }

    /// The skb of the next datagram (`ip_make_skb()`), on the next flow's socket.
    #[inline(always)]
    pub fn next_skb(&self) -> Skb {
        let flow = super::entry_flow_id(self.traffic_index, self.next_flow);
        Skb { flow, sk: super::flow_sk(flow), len: self.frame_len, truesize: self.truesize, priority: self.priority, dscp: self.dscp, ecn: self.ecn, pacing_rate: self.pacing_rate, ..Skb::default() }
    }

    /// The EDT stamp of the next datagram on the next flow: the flow's last stamp plus
    /// this datagram's length at the `txtime` rate, or `now` when that is past (the
    /// schedule does not bank idle time), as an EDT rate limiter stamps `skb->tstamp`
    /// (Cilium's `edt_sched_departure()`, without its own drop horizon: fq's applies).
    #[inline(never)]
    pub fn txtime_stamp(&mut self, now: u64) -> u64 {
        let last = &mut self.txtime_last[self.next_flow as usize];
        let next = *last + (self.frame_len as f64 * self.txtime_ns_per_byte) as u64;
        let stamp = if next <= now { now } else { next };
        *last = stamp;
        stamp
    }

    /// One datagram sent: count it and move to the next flow (round robin, a compare
    /// rather than a division per send).
    #[inline(always)]
    pub fn sent_one(&mut self) {
        self.next_flow += 1;
        if self.next_flow == self.flows {
            self.next_flow = 0;
        }
        self.sent += 1;
    }
}

impl Sockets {
    /// Socket `s`'s flood and its (every flow's) `sk_sndbuf`.
    fn udp(&mut self, s: SockId) -> (&mut UdpSock, u64) {
        let sk = &mut self.all[s];
        let sndbuf = sk.sndbuf;
        match &mut sk.kind {
            SockKind::Udp(u) => (u, sndbuf),
            _ => unreachable!("socket {s} is UDP"),
        }
    }
}

impl World {
    /// `udp_sendmsg()` of one datagram on the next flow's socket: blocks on its full
    /// send buffer, else builds the skb.
    #[inline(always)]
    pub(super) fn udp_sendmsg(&mut self, s: SockId) -> Option<Outgoing> {
        let now = self.now;
        let (u, sndbuf) = self.socks.udp(s);
        let flow_wmem = &mut u.flow_wmem[u.next_flow as usize];
        if *flow_wmem >= sndbuf {
            // sock_alloc_send_pskb(): no room; sleep until sock_wfree() wakes us.
            self.socks[s].blocked = true;
            return None;
        }
        *flow_wmem += u.truesize as u64;
        let mut skb = u.next_skb();
        if u.txtime_ns_per_byte > 0.0 {
            skb.edt = u.txtime_stamp(now);
        }
        u.sent_one();
        if u.interval_ns > 0.0 {
            u.next_send = u.next_send.max(now as f64) + u.interval_ns;
        }
        Some(Outgoing { skb, proto: Proto::Udp, destructor: Destructor::SockWfree, cost_ns: self.profile.costs.send_ns, seq: 0 })
    }
}
