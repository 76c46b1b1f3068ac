//! An isochronous UDP prober as irtt(1) runs one: `irtt client` sends a request every
//! `interval` from `start` (its first at once, then on a fixed schedule, not paced by
//! the replies), and the far end's `irtt server` echoes each one, with the request's
//! DSCP, from the softirq that received it (`udp_rcv()` -> the server's `recvmsg()` and
//! `sendmsg()`; the server's scheduling is not modelled).
//!
//! The reply comes back as the pinger's does (see [`super::ping`]): through the far
//! host's qdisc, BQL, ring and wire on a NIC, or the profile's constant
//! `ping_reply_ns` on veth and tun (behind a veth router, `[lan]`, that constant ends
//! at the router, which forwards the reply to the client). The simulator knows each packet's true times, so
//! the one-way delays need no clock synchronisation: up = server receive - client
//! send, down = client receive - server receive (the reply is sent when the request
//! is received; irtt's "server processing time" is the reply's build cost, which the
//! down leg carries).
//!
//! Each request's fate is kept per sequence number (a slot reserved for every request
//! the schedule can send, so sending never allocates): its server and client receive
//! times, or the leg on which it was dropped.

use crate::arena::{Destructor, Dir, PktInfo, Proto};
use crate::id::{CpuId, DevId, HostId, SockId, TaskId};
use crate::event::Event;
use crate::sock::ping::ReplyPath;
use crate::sock::iso::{iso_dgram, IsoSchedule};
use crate::sock::{Outgoing, Sock, SockKind};
use crate::world::{Sockets, World};
use darkbuf_model::skb::truesize_for_len;
use darkbuf_model::Skb;
use darkbuf_scenario::{udp_frame_len, Irtt};

/// The flow id of prober i's packets (the pinger's is 0xffff_0000, floods
/// `index << 16 | flow`).
const IRTT_FLOW: u32 = 0xfffe_0000;

pub use darkbuf_measure::irtt::{Fate, IrttRec};

pub struct IrttSock {
    pub frame_len: u32,
    pub dscp: u8,
    pub flow: u32,
    /// When its packets fall due, and those due and not sent yet.
    pub sched: IsoSchedule,
    /// `sendto()` failed with -ENOBUFS (the qdisc dropped the request).
    pub send_errors: u64,
    pub reply: ReplyPath,
    /// Per sequence number, the request's record.
    pub recs: Vec<IrttRec>,
}

impl IrttSock {
    /// Prober `index` (among the scenario's irtt entries) of a run ending at `end_ns`.
    pub fn new_sock(p: &Irtt, index: u16, task: TaskId, dev: DevId, reply: ReplyPath, end_ns: u64) -> Sock {
        let interval_ns = p.interval_ns.max(1);
        let stop_ns = p.stop_ns.unwrap_or(end_ns).min(end_ns);
        let slots = stop_ns.saturating_sub(p.start_ns) / interval_ns + 1;
        let irtt = IrttSock {
            frame_len: udp_frame_len(p.length),
            dscp: p.dscp,
            flow: IRTT_FLOW | index as u32,
            sched: IsoSchedule::new(interval_ns, stop_ns),
            send_errors: 0,
            reply,
            recs: Vec::with_capacity(slots as usize),
        };
        Sock { task, dev, far_host: HostId(0), host: HostId(0), wmem_alloc: 0, sndbuf: u64::MAX, blocked: false, last_send_dropped: false, kind: SockKind::Irtt(irtt) }
    }
}

impl Sockets {
    fn irtt(&mut self, s: SockId) -> &mut IrttSock {
        match &mut self.all[s].kind {
            SockKind::Irtt(p) => p,
            _ => unreachable!("socket {s} is an irtt prober's"),
        }
    }
}

impl World {
    /// One request, if one is due: sequence number = its record's index.
    pub(super) fn irtt_sendmsg(&mut self, s: SockId) -> Option<Outgoing> {
        let now = self.now;
        let p = self.socks.irtt(s);
        if !p.sched.take() {
            return None;
        }
        let seq = p.recs.len() as u32;
        p.recs.push(IrttRec { t_send: now, ..IrttRec::default() });
        let skb = iso_dgram(p.frame_len, p.flow, p.dscp);
        let cost_ns = self.profile.costs.ping_send_ns;
        Some(Outgoing { skb, proto: Proto::Udp, destructor: Destructor::None, cost_ns, seq })
    }

    /// The send timer fired: one more request is due; the next is armed one interval
    /// later while the schedule lasts.
    pub(super) fn irtt_timer(&mut self, s: SockId) {
        let now = self.now;
        let task = self.socks[s].task;
        if let Some(next) = self.socks.irtt(s).sched.fire(now) {
            self.events.push(next, Event::TaskTimer(task));
        }
    }

    /// The request reached the server at `t` on `cpu`: recorded, and echoed. Returns
    /// the CPU time building the reply took, ns.
    pub(super) fn irtt_server_rcv(&mut self, cpu: CpuId, req: &PktInfo, t: u64) -> u64 {
        let reply = self.socks.irtt(req.sock).reply;
        let rec = &mut self.socks.irtt(req.sock).recs[req.seq as usize];
        rec.t_server = t;
        match reply {
            ReplyPath::Constant => {
                let back = self.cost(self.profile.costs.ping_reply_ns);
                let rec = &mut self.socks.irtt(req.sock).recs[req.seq as usize];
                rec.t_recv = t + back;
                rec.fate = Fate::Received;
                0
            }
            ReplyPath::Modelled { dev } => self.irtt_send_reply(cpu, dev, req, t),
            ReplyPath::Forwarded => {
                self.irtt_forward_reply(cpu, req, t);
                0
            }
        }
    }

    /// The server's reply as a frame of the request's length, flow and DSCP, not yet
    /// allocated.
    fn irtt_reply_skb(&mut self, s: SockId) -> Skb {
        let p = self.socks.irtt(s);
        let (len, flow, dscp) = (p.frame_len, p.flow, p.dscp);
        let priority = crate::forward::rt_tos2priority(dscp, 0);
        Skb { flow, sk: 0, len, truesize: truesize_for_len(len), dscp, priority, ..Skb::default() }
    }

    /// [`ReplyPath::Forwarded`] (`[lan]` on veth): the reply reaches the router that
    /// forwarded the request after the profile's constant (the peer's own TX path, as
    /// for a pinger's echo reply in `ping_forward_reply()`), on this CPU, and the
    /// router forwards it to the client through `[lan.qdisc]`.
    fn irtt_forward_reply(&mut self, cpu: CpuId, req: &PktInfo, t: u64) {
        let mut skb = self.irtt_reply_skb(req.sock);
        self.sock_alloc_skb(req.sock, &mut skb, Proto::Udp, Destructor::None, Dir::Back, req.seq);
        self.pkts.get_mut(skb.id).t_send = req.t_send;
        let back = self.cost(self.profile.costs.ping_reply_ns);
        self.deliver_at(t + back, cpu, skb.id);
    }

    /// The server's reply, same length and DSCP, sent at `t` through the far host's
    /// device `dev`.
    fn irtt_send_reply(&mut self, cpu: CpuId, dev: DevId, req: &PktInfo, t: u64) -> u64 {
        let mut skb = self.irtt_reply_skb(req.sock);
        skb.queue_mapping = self.netdev_pick_tx(dev, &skb, cpu);
        self.sock_alloc_skb(req.sock, &mut skb, Proto::Udp, Destructor::None, Dir::Back, req.seq);
        self.pkts.get_mut(skb.id).t_send = req.t_send;
        let build = self.cost(self.profile.costs.ping_send_ns);
        self.dev_queue_xmit_at(t + build, cpu, dev, skb);
        build
    }

    /// The reply reached the client at `t`.
    pub(super) fn irtt_client_rcv(&mut self, info: &PktInfo, t: u64) {
        let rec = &mut self.socks.irtt(info.sock).recs[info.seq as usize];
        rec.t_recv = t;
        rec.fate = Fate::Received;
    }

    /// A request or reply of prober `info.sock` was dropped (`kfree_skb()`).
    pub(crate) fn irtt_dropped(&mut self, info: &PktInfo) {
        let rec = &mut self.socks.irtt(info.sock).recs[info.seq as usize];
        rec.fate = if info.dir == Dir::Out { Fate::LostUp } else { Fate::LostDown };
    }

    /// Each prober's records, in `[[traffic]]` order.
    pub fn irtt_socks(&self) -> impl Iterator<Item = &IrttSock> {
        self.socks.iter().filter_map(|s| match &s.kind {
            SockKind::Irtt(p) => Some(p),
            _ => None,
        })
    }
}
