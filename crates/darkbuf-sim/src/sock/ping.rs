//! The pinger: one ICMP echo request per `interval` from its own process, as ping(8)
//! sends them (`raw_sendmsg()`/`ping_v4_sendmsg()`), and the far end's echo responder
//! (`icmp_echo()`), whose reply's way back costs the profile's `ping_reply_ns`.

use crate::arena::{Destructor, PktInfo, Proto};
use crate::cpu::{DevId, SockId, TaskId};
use crate::event::Event;
use crate::metrics::ProbeSample;
use crate::sock::{Outgoing, Sock, SockKind};
use crate::world::World;
use darkbuf_model::skb::truesize_for_len;
use darkbuf_model::Skb;
use darkbuf_scenario::{icmp_frame_len, Ping};

/// The flow id of the pinger's packets (floods use traffic index << 16 | flow).
const PING_FLOW: u32 = 0xffff_0000;

pub struct PingSock {
    pub interval_ns: u64,
    pub frame_len: u32,
    /// Probes whose timer fired and that are not sent yet.
    pub due: u32,
    pub next_timer: u64,
    /// Probes `sendmsg()` failed with -ENOBUFS (the qdisc dropped them).
    pub send_errors: u64,
}

impl PingSock {
    pub fn new_sock(p: &Ping, task: TaskId, dev: DevId) -> Sock {
        let ping = PingSock { interval_ns: p.interval_ns.max(1), frame_len: icmp_frame_len(p.size), due: 0, next_timer: 0, send_errors: 0 };
        Sock { task, dev, wmem_alloc: 0, sndbuf: u64::MAX, blocked: false, kind: SockKind::Ping(ping) }
    }
}

impl World {
    fn ping(&mut self, s: SockId) -> &mut PingSock {
        match &mut self.socks[s as usize].kind {
            SockKind::Ping(p) => p,
            _ => unreachable!("socket {s} is the pinger's"),
        }
    }

    /// One echo request, if one is due.
    pub(super) fn ping_sendmsg(&mut self, s: SockId) -> Option<Outgoing> {
        let p = self.ping(s);
        if p.due == 0 {
            return None;
        }
        p.due -= 1;
        let len = p.frame_len;
        let skb = Skb { flow: PING_FLOW, sk: PING_FLOW, len, truesize: truesize_for_len(len), ..Skb::default() };
        if self.now >= self.cfg.start {
            self.metrics.probes_sent += 1;
        }
        Some(Outgoing { skb, proto: Proto::Icmp, destructor: Destructor::None, cost_ns: self.profile.costs.ping_send_ns })
    }

    /// The interval timer fired: one more probe is due, and the next interval starts.
    pub(super) fn ping_timer(&mut self, s: SockId) {
        self.ping(s).due += 1;
        self.ping_rearm(s);
    }

    /// Arms the pinger's next interval timer.
    pub fn ping_rearm(&mut self, s: SockId) {
        let at = self.now + self.ping(s).interval_ns;
        self.ping(s).next_timer = at;
        let task = self.socks[s as usize].task;
        self.events.push(at, Event::TaskTimer(task));
    }

    /// The echo request reached the far end at `t`: the reply comes back after the
    /// profile's constant `ping_reply_ns` (the reverse path is not modelled), and the
    /// probe's round trip and where its time went are recorded.
    pub(super) fn ping_echo_rcv(&mut self, info: &PktInfo, t: u64) {
        if info.t_send < self.cfg.start {
            return;
        }
        let reply = self.cost(self.profile.costs.ping_reply_ns);
        let s = ProbeSample {
            t_send: info.t_send,
            rtt: t + reply - info.t_send,
            wait_qdisc: info.t_xmit - info.t_send,
            wait_ring: info.t_consume - info.t_xmit,
            wait_consumer: t - info.t_consume,
        };
        self.metrics.hist_rtt_us.record(s.rtt / 1000);
        self.metrics.probes.push(s);
    }
}
