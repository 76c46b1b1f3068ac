//! An isochronous UDP prober as irtt(1) runs one: `irtt client` sends a request every
//! `interval` from `start` (its first at once, then on a fixed schedule, not paced by
//! the replies), and the far end's `irtt server` echoes each one, with the request's
//! DSCP, from the softirq that received it (`udp_rcv()` -> the server's `recvmsg()` and
//! `sendmsg()`; the server's scheduling is not modelled).
//!
//! The reply comes back as the pinger's does (see [`super::ping`]): through the far
//! host's qdisc, BQL, ring and wire on a NIC, or the profile's constant
//! `ping_reply_ns` on veth and tun. The simulator knows each packet's true times, so
//! the one-way delays need no clock synchronisation: up = server receive - client
//! send, down = client receive - server receive (the reply is sent when the request
//! is received; irtt's "server processing time" is the reply's build cost, which the
//! down leg carries).
//!
//! Each request's fate is kept per sequence number (a slot reserved for every request
//! the schedule can send, so sending never allocates): its server and client receive
//! times, or the leg on which it was dropped.

use crate::arena::{Destructor, Dir, PktInfo, Proto};
use crate::cpu::{CpuId, DevId, SockId, TaskId};
use crate::event::Event;
use crate::sock::ping::ReplyPath;
use crate::sock::{Outgoing, Sock, SockKind};
use crate::world::World;
use darkbuf_model::skb::truesize_for_len;
use darkbuf_model::Skb;
use darkbuf_scenario::{udp_frame_len, Irtt};

/// The flow id of prober i's packets (the pinger's is 0xffff_0000, floods
/// `index << 16 | flow`).
const IRTT_FLOW: u32 = 0xfffe_0000;

/// Where a request ended up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fate {
    /// Sent, not yet received or dropped.
    #[default]
    InFlight,
    /// Dropped on the way to the server.
    LostUp,
    /// Dropped on the way back (the server received it: `t_server` is set).
    LostDown,
    /// Echoed and received by the client.
    Received,
}

/// One request's times (ns since the run's start).
#[derive(Clone, Copy, Debug, Default)]
pub struct IrttRec {
    pub t_send: u64,
    pub t_server: u64,
    pub t_recv: u64,
    pub fate: Fate,
}

pub struct IrttSock {
    pub interval_ns: u64,
    pub frame_len: u32,
    pub dscp: u8,
    pub flow: u32,
    /// No request is sent at or after this time (ns).
    pub stop_ns: u64,
    /// Requests whose timer fired and that are not sent yet.
    pub due: u32,
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
            interval_ns,
            frame_len: udp_frame_len(p.length),
            dscp: p.dscp,
            flow: IRTT_FLOW | index as u32,
            stop_ns,
            due: 0,
            send_errors: 0,
            reply,
            recs: Vec::with_capacity(slots as usize),
        };
        Sock { task, dev, far_host: 0, wmem_alloc: 0, sndbuf: u64::MAX, blocked: false, last_send_dropped: false, kind: SockKind::Irtt(irtt) }
    }
}

impl World {
    fn irtt(&mut self, s: SockId) -> &mut IrttSock {
        match &mut self.socks[s as usize].kind {
            SockKind::Irtt(p) => p,
            _ => unreachable!("socket {s} is an irtt prober's"),
        }
    }

    /// One request, if one is due: sequence number = its record's index.
    pub(super) fn irtt_sendmsg(&mut self, s: SockId) -> Option<Outgoing> {
        let now = self.now;
        let p = self.irtt(s);
        if p.due == 0 {
            return None;
        }
        p.due -= 1;
        let seq = p.recs.len() as u32;
        p.recs.push(IrttRec { t_send: now, ..IrttRec::default() });
        let len = p.frame_len;
        let priority = crate::forward::rt_tos2priority(p.dscp, 0);
        let skb = Skb { flow: p.flow, sk: p.flow, len, truesize: truesize_for_len(len), dscp: p.dscp, priority, ..Skb::default() };
        let cost_ns = self.profile.costs.ping_send_ns;
        Some(Outgoing { skb, proto: Proto::Udp, destructor: Destructor::None, cost_ns, seq })
    }

    /// The send timer fired: one more request is due; the next is armed one interval
    /// later while the schedule lasts.
    pub(super) fn irtt_timer(&mut self, s: SockId) {
        let now = self.now;
        let task = self.socks[s as usize].task;
        let p = self.irtt(s);
        p.due += 1;
        let next = now + p.interval_ns;
        if next < p.stop_ns {
            self.events.push(next, Event::TaskTimer(task));
        }
    }

    /// The request reached the server at `t` on `cpu`: recorded, and echoed. Returns
    /// the CPU time building the reply took, ns.
    pub(super) fn irtt_server_rcv(&mut self, cpu: CpuId, req: &PktInfo, t: u64) -> u64 {
        let reply = self.irtt(req.sock).reply;
        let rec = &mut self.irtt(req.sock).recs[req.seq as usize];
        rec.t_server = t;
        match reply {
            ReplyPath::Constant => {
                let back = self.cost(self.profile.costs.ping_reply_ns);
                let rec = &mut self.irtt(req.sock).recs[req.seq as usize];
                rec.t_recv = t + back;
                rec.fate = Fate::Received;
                0
            }
            ReplyPath::Modelled { dev } => self.irtt_send_reply(cpu, dev, req, t),
        }
    }

    /// The server's reply, same length and DSCP, sent at `t` through the far host's
    /// device `dev`.
    fn irtt_send_reply(&mut self, cpu: CpuId, dev: DevId, req: &PktInfo, t: u64) -> u64 {
        let p = self.irtt(req.sock);
        let (len, flow, dscp) = (p.frame_len, p.flow, p.dscp);
        let priority = crate::forward::rt_tos2priority(dscp, 0);
        let mut skb = Skb { flow, sk: 0, len, truesize: truesize_for_len(len), dscp, priority, ..Skb::default() };
        skb.queue_mapping = self.netdev_pick_tx(dev, &skb, cpu);
        self.sock_alloc_skb(req.sock, &mut skb, Proto::Udp, Destructor::None, Dir::Back, req.seq);
        self.pkts.get_mut(skb.id).t_send = req.t_send;
        let build = self.cost(self.profile.costs.ping_send_ns);
        self.dev_queue_xmit_at(t + build, cpu, dev, skb);
        build
    }

    /// The reply reached the client at `t`.
    pub(super) fn irtt_client_rcv(&mut self, info: &PktInfo, t: u64) {
        let rec = &mut self.irtt(info.sock).recs[info.seq as usize];
        rec.t_recv = t;
        rec.fate = Fate::Received;
    }

    /// A request or reply of prober `info.sock` was dropped (`kfree_skb()`).
    pub(crate) fn irtt_dropped(&mut self, info: &PktInfo) {
        let rec = &mut self.irtt(info.sock).recs[info.seq as usize];
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

/// What irtt reports for the requests sent in a window, from their records.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IrttSummary {
    /// Round trips, and one-way delays up and down, of the received requests (ns).
    pub rtt: Vec<u64>,
    pub up: Vec<u64>,
    pub down: Vec<u64>,
    /// IPDV as irtt computes it: for each pair of consecutive sequence numbers both
    /// received, the absolute difference of their delays (round trip, up, down), ns.
    pub ipdv_rtt: Vec<u64>,
    pub ipdv_up: Vec<u64>,
    pub ipdv_down: Vec<u64>,
    /// Requests with a known fate, and those lost on each leg.
    pub fated: u64,
    pub lost_up: u64,
    pub lost_down: u64,
}

impl IrttSummary {
    /// The requests sent in `start..=end` (still in flight at the end: fate unknown,
    /// not counted).
    pub fn of(recs: &[IrttRec], start: u64, end: u64) -> IrttSummary {
        let mut s = IrttSummary::default();
        let delays = |r: &IrttRec| (r.t_recv - r.t_send, r.t_server - r.t_send, r.t_recv - r.t_server);
        let mut prev: Option<(u64, u64, u64)> = None;
        for r in recs {
            let in_window = r.t_send >= start && r.t_send <= end;
            let d = (r.fate == Fate::Received).then(|| delays(r));
            if in_window {
                match r.fate {
                    Fate::InFlight => {}
                    Fate::LostUp => s.lost_up += 1,
                    Fate::LostDown => s.lost_down += 1,
                    Fate::Received => {
                        let (rtt, up, down) = d.expect("received");
                        s.rtt.push(rtt);
                        s.up.push(up);
                        s.down.push(down);
                        if let Some((pr, pu, pd)) = prev {
                            s.ipdv_rtt.push(rtt.abs_diff(pr));
                            s.ipdv_up.push(up.abs_diff(pu));
                            s.ipdv_down.push(down.abs_diff(pd));
                        }
                    }
                }
                s.fated += (r.fate != Fate::InFlight) as u64;
            }
            prev = if in_window { d } else { None };
        }
        s
    }

    /// Upstream loss: of the requests with a known fate, those lost on the way out (%).
    pub fn loss_up_pct(&self) -> Option<f64> {
        (self.fated > 0).then(|| 100.0 * self.lost_up as f64 / self.fated as f64)
    }

    /// Downstream loss: of the requests the server received, the replies lost (%).
    pub fn loss_down_pct(&self) -> Option<f64> {
        let reached = self.fated - self.lost_up;
        (reached > 0).then(|| 100.0 * self.lost_down as f64 / reached as f64)
    }

    /// Merges another prober's summary (the `irtt.*` totals over every prober).
    pub fn extend(&mut self, o: &IrttSummary) {
        for (a, b) in [
            (&mut self.rtt, &o.rtt),
            (&mut self.up, &o.up),
            (&mut self.down, &o.down),
            (&mut self.ipdv_rtt, &o.ipdv_rtt),
            (&mut self.ipdv_up, &o.ipdv_up),
            (&mut self.ipdv_down, &o.ipdv_down),
        ] {
            a.extend_from_slice(b);
        }
        self.fated += o.fated;
        self.lost_up += o.lost_up;
        self.lost_down += o.lost_down;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rx(t_send: u64, up: u64, down: u64) -> IrttRec {
        IrttRec { t_send, t_server: t_send + up, t_recv: t_send + up + down, fate: Fate::Received }
    }

    #[test]
    fn delays_ipdv_and_loss_per_leg() {
        let recs = [
            rx(0, 5, 9), // before the window
            rx(100, 10, 20),
            rx(200, 14, 20),
            IrttRec { t_send: 300, fate: Fate::LostUp, ..IrttRec::default() },
            rx(400, 10, 30),
            rx(500, 12, 25),
            IrttRec { t_send: 600, t_server: 610, fate: Fate::LostDown, ..IrttRec::default() },
            IrttRec { t_send: 700, ..IrttRec::default() }, // still in flight
        ];
        let s = IrttSummary::of(&recs, 100, 1000);
        assert_eq!(s.rtt, [30, 34, 40, 37]);
        assert_eq!(s.up, [10, 14, 10, 12]);
        assert_eq!(s.down, [20, 20, 30, 25]);
        // Pairs (100, 200) and (400, 500): 300 was lost, and 0 is outside the window.
        assert_eq!(s.ipdv_rtt, [4, 3]);
        assert_eq!(s.ipdv_up, [4, 2]);
        assert_eq!(s.ipdv_down, [0, 5]);
        assert_eq!((s.fated, s.lost_up, s.lost_down), (6, 1, 1));
        assert_eq!(s.loss_up_pct(), Some(100.0 / 6.0));
        assert_eq!(s.loss_down_pct(), Some(20.0));
    }

    #[test]
    fn no_known_fate_no_loss() {
        let s = IrttSummary::of(&[IrttRec { t_send: 5, ..IrttRec::default() }], 0, 10);
        assert_eq!((s.loss_up_pct(), s.loss_down_pct()), (None, None));
    }
}
