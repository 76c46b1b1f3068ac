//! The pinger: one ICMP echo request per `interval` from its own process, as ping(8)
//! sends them (`raw_sendmsg()`/`ping_v4_sendmsg()`), and the far end's echo responder
//! (`icmp_echo()` -> `icmp_reply()`).
//!
//! Where the far end is another host with a modelled TX path (a NIC's peer), the
//! reply is a packet of its own: built on the CPU that received the request, sent
//! through the peer's qdisc, BQL, ring and wire, and received by this host's NIC,
//! NAPI and stack before the pinger sees it. Otherwise (veth, tun: the reply path is
//! not modelled) the way back is the profile's constant `ping_reply_ns`.

use crate::arena::{Destructor, Dir, PktInfo, Proto};
use crate::id::{CpuId, DevId, HostId, SockId, TaskId};
use crate::event::Event;
use crate::metrics::{PingStats, ProbeSample};
use crate::sock::{Outgoing, Sock, SockKind};
use crate::world::{Sockets, World};
use darkbuf_model::skb::truesize_for_len;
use darkbuf_model::Skb;
use darkbuf_scenario::{icmp_frame_len, Ping};

/// The flow id of pinger i's packets (`PING_FLOW | i`; floods use traffic index << 16
/// | flow): each ping(8) is a socket of its own, and a flow of its own to fq's hash.
const PING_FLOW: u32 = 0xffff_0000;

/// How an echo reply gets back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyPath {
    /// A constant: the profile's `ping_reply_ns`.
    Constant,
    /// Sent by the far host on its device `dev`.
    Modelled { dev: DevId },
    /// `[lan]` on veth: sent back to the router that forwarded the request, by the
    /// profile's constant (the peer's own TX path, as for [`ReplyPath::Constant`]),
    /// and forwarded by it to the client. On veth with ingress shaping: delivered
    /// after the constant on this host, where the ingress hook redirects it.
    Forwarded,
}

/// Where one probe's request spent its time, recorded when the far end echoes it.
#[derive(Clone, Copy, Debug, Default)]
pub struct EchoTimes {
    pub qdisc: u64,
    pub ring: u64,
    pub wire: u64,
    pub peer: u64,
    /// When the far end sent the reply (ns).
    pub t_echo: u64,
}

pub struct PingSock {
    pub interval_ns: u64,
    pub frame_len: u32,
    /// `PING_FLOW | index`.
    pub flow: u32,
    /// Probes whose timer fired and that are not sent yet.
    pub due: u32,
    pub next_timer: u64,
    pub reply: ReplyPath,
    /// The next echo sequence number.
    pub seq: u32,
    /// Per sequence number, the request's times once echoed (modelled replies).
    pub echoes: Vec<EchoTimes>,
    /// What this pinger measured (boxed: its histogram would make every socket of the
    /// table as large as a pinger's).
    pub stats: Box<PingStats>,
}

impl PingSock {
    /// Pinger `index` (among the scenario's ping entries).
    pub fn new_sock(p: &Ping, index: u16, task: TaskId, dev: DevId, reply: ReplyPath) -> Sock {
        let ping = PingSock {
            interval_ns: p.interval_ns.max(1),
            frame_len: icmp_frame_len(p.size),
            flow: PING_FLOW | index as u32,
            due: 0,
            next_timer: 0,
            reply,
            seq: 0,
            echoes: Vec::new(),
            stats: Box::default(),
        };
        Sock { task, dev, far_host: HostId(0), host: HostId(0), wmem_alloc: 0, sndbuf: u64::MAX, blocked: false, last_send_dropped: false, kind: SockKind::Ping(ping) }
    }
}

impl Sockets {
    fn ping(&mut self, s: SockId) -> &mut PingSock {
        match &mut self.all[s].kind {
            SockKind::Ping(p) => p,
            _ => unreachable!("socket {s} is the pinger's"),
        }
    }
}

impl World {
    /// One echo request, if one is due.
    pub(super) fn ping_sendmsg(&mut self, s: SockId) -> Option<Outgoing> {
        let (now, measured) = (self.now, self.now >= self.cfg.start);
        let p = self.socks.ping(s);
        if p.due == 0 {
            return None;
        }
        p.due -= 1;
        let seq = p.seq;
        p.seq += 1;
        let (len, flow) = (p.frame_len, p.flow);
        let skb = Skb { flow, sk: flow, len, truesize: truesize_for_len(len), ..Skb::default() };
        if measured {
            p.stats.sent_at.push(now);
        }
        let cost_ns = self.profile.costs.ping_send_ns;
        Some(Outgoing { skb, proto: Proto::Icmp, destructor: Destructor::None, cost_ns, seq })
    }

    /// The interval timer fired: one more probe is due, and the next interval starts.
    pub(super) fn ping_timer(&mut self, s: SockId) {
        self.socks.ping(s).due += 1;
        self.ping_rearm(s);
    }

    /// Arms the pinger's next interval timer.
    pub fn ping_rearm(&mut self, s: SockId) {
        let at = self.now + self.socks.ping(s).interval_ns;
        self.socks.ping(s).next_timer = at;
        let task = self.socks[s].task;
        self.events.push(at, Event::TaskTimer(task));
    }

    /// The echo request reached the far end's stack at `t` on `cpu`. With a constant
    /// way back the probe completes here; with a modelled one the reply is sent.
    /// Returns the CPU time building the reply took, ns.
    pub(super) fn ping_echo_rcv(&mut self, cpu: CpuId, id: u32, info: &PktInfo, t: u64) -> u64 {
        match self.socks.ping(info.sock).reply {
            ReplyPath::Constant => {
                self.ping_constant_reply(id, info, t);
                0
            }
            ReplyPath::Modelled { dev } => self.ping_send_reply(cpu, dev, id, info, t),
            ReplyPath::Forwarded => {
                self.ping_forward_reply(cpu, id, info, t);
                0
            }
        }
    }

    /// Records where request `req`'s time went (`times`, by its sequence number) and
    /// returns its echo reply: a frame of the pinger's length and flow, not yet allocated.
    fn ping_record_echo(&mut self, req: &PktInfo, times: EchoTimes) -> Skb {
        let p = self.socks.ping(req.sock);
        let seq = req.seq as usize;
        if p.echoes.len() <= seq {
            p.echoes.resize(seq + 1, EchoTimes::default());
        }
        p.echoes[seq] = times;
        let (len, flow) = (p.frame_len, p.flow);
        Skb { flow, sk: 0, len, truesize: truesize_for_len(len), ..Skb::default() }
    }

    /// [`ReplyPath::Forwarded`]: record where the request's time went (its last
    /// veth's ring and the peer's stack), then the reply reaches the router after the
    /// profile's constant, on this CPU, which forwards it.
    fn ping_forward_reply(&mut self, cpu: CpuId, id: u32, req: &PktInfo, t: u64) {
        let w = self.pkts.probe_times(id);
        let times = EchoTimes { qdisc: w.t_xmit - req.t_send, ring: w.t_consume - w.t_xmit, wire: 0, peer: t - w.t_consume, t_echo: t };
        let mut skb = self.ping_record_echo(req, times);
        self.sock_alloc_skb(req.sock, &mut skb, Proto::Icmp, Destructor::None, Dir::Back, req.seq);
        self.pkts.get_mut(skb.id).t_send = req.t_send;
        let back = self.cost(self.profile.costs.ping_reply_ns);
        self.deliver_at(t + back, cpu, skb.id);
    }

    fn ping_constant_reply(&mut self, id: u32, info: &PktInfo, t: u64) {
        if info.t_send < self.cfg.start {
            return;
        }
        let path = self.pkts.probe_times(id);
        let reply = self.cost(self.profile.costs.ping_reply_ns);
        let s = ProbeSample {
            t_send: info.t_send,
            rtt: t + reply - info.t_send,
            wait_qdisc: path.t_xmit - info.t_send,
            wait_ring: path.t_consume - path.t_xmit,
            wait_consumer: t - path.t_consume,
            wait_wire: 0,
            wait_return: 0,
        };
        self.socks.ping(info.sock).stats.record(s);
    }

    /// `icmp_reply()` on the far host: record where the request's time went, then send
    /// the reply from this softirq, at `t`, through the far host's device `dev`.
    fn ping_send_reply(&mut self, cpu: CpuId, dev: DevId, id: u32, req: &PktInfo, t: u64) -> u64 {
        let w = self.pkts.probe_times(id);
        let times = EchoTimes {
            qdisc: w.t_xmit - req.t_send,
            ring: w.t_wire - w.t_xmit,
            wire: w.t_arrive - w.t_wire,
            peer: t - w.t_arrive,
            t_echo: t,
        };
        let mut skb = self.ping_record_echo(req, times);
        skb.queue_mapping = self.netdev_pick_tx(dev, &skb, cpu);
        self.sock_alloc_skb(req.sock, &mut skb, Proto::Icmp, Destructor::None, Dir::Back, req.seq);
        // The reply carries the probe's send time: its RTT, and its loss if dropped.
        self.pkts.get_mut(skb.id).t_send = req.t_send;
        let build = self.cost(self.profile.costs.ping_send_ns);
        self.dev_queue_xmit_at(t + build, cpu, dev, skb);
        build
    }

    /// The echo reply reached the pinger at `t`: one probe's round trip.
    pub(super) fn ping_reply_rcv(&mut self, info: &PktInfo, t: u64) {
        if info.t_send < self.cfg.start {
            return;
        }
        let e = self.socks.ping(info.sock).echoes[info.seq as usize];
        let s = ProbeSample {
            t_send: info.t_send,
            rtt: t - info.t_send,
            wait_qdisc: e.qdisc,
            wait_ring: e.ring,
            wait_consumer: e.peer,
            wait_wire: e.wire,
            wait_return: t - e.t_echo,
        };
        self.socks.ping(info.sock).stats.record(s);
    }

    /// A probe of pinger `sock` sent at `t_send` was dropped (`kfree_skb()`).
    pub(crate) fn ping_dropped(&mut self, sock: SockId, t_send: u64) {
        let st = &mut self.socks.ping(sock).stats;
        st.lost += 1;
        st.lost_at.push(t_send);
    }

    /// Each pinger's socket, in `[[traffic]]` order.
    pub fn ping_socks(&self) -> impl Iterator<Item = &PingSock> {
        self.socks.iter().filter_map(|s| match &s.kind {
            SockKind::Ping(p) => Some(p),
            _ => None,
        })
    }
}

impl PingStats {
    fn record(&mut self, s: ProbeSample) {
        self.hist_rtt_us.record(s.rtt / 1000);
        self.probes.push(s);
    }
}
