//! Sockets: the traffic sources and sinks, one file per kind behind one enum, as the
//! kernel dispatches through `struct proto` (`udp_sendmsg`, `raw_sendmsg`, ...).
//!
//! A socket is owned by a process (its task), sends on the device its route leaves
//! by, and holds what `struct sock` holds for every protocol: the send buffer charge
//! (`sk_wmem_alloc` against `sk_sndbuf`) that `sock_wfree()` releases. Its kind owns
//! the protocol's state, its send loop, its timers and its receive handler. The
//! executor and the drivers know only a [`SockId`]; everything protocol-specific is
//! dispatched here, in one place.

pub mod irtt;
pub mod iso;
pub mod ping;
pub mod rr;
pub mod tcp;
pub mod udp;
pub mod voip;

use crate::arena::{Destructor, Dir, PktInfo};

/// The flow id of `[[traffic]]` entry `traffic_index`'s flow `i`, a TCP connection or a
/// flood's socket (what the qdiscs and RSS hash; the kernel hashes the 4-tuple):
/// `traffic_index << 16 | i & 0xffff`, and past flow 65535 the rest of `i` from bit 30
/// up. The traffic index is below 64 and the pinger's and irtt's flows have bits 22 to
/// 29 set, so no two flows share one.
#[inline(always)]
pub const fn entry_flow_id(traffic_index: u16, i: u32) -> u32 {
    (traffic_index as u32) << 16 | (i & 0xffff) | (i >> 16) << 30
}

/// The flow index within its entry of a flow id ([`entry_flow_id`]'s inverse).
#[inline(always)]
pub const fn entry_flow_index(flow: u32) -> usize {
    ((flow & 0xffff) | (flow >> 30) << 16) as usize
}

/// `skb->sk` as the qdiscs see it (fq's flow key) of a socket that is one flow: a flood's
/// flow, a VoIP call's direction, an RR connection (their flow ids, `index << 16 | n`
/// with at most bit 30 above, tagged with bit 29, so that none is 0, an orphan, and none
/// is another kind's: TCP's have bit 31 ([`tcp::tcp_skb_sk`]), the pinger's are
/// `0xffff_0000 | i`).
#[inline(always)]
pub(crate) const fn flow_sk(flow: u32) -> u32 {
    flow | 1 << 29
}
use crate::cpu::{Frame, Step};
use crate::id::{CpuId, DevId, HostId, SockId, TaskId};
use crate::dev::sch::DEV_TX_WEIGHT;
use crate::world::World;
use darkbuf_model::qdisc::EnqueueVerdict;
use darkbuf_model::Skb;

pub use irtt::IrttSock;
pub use ping::PingSock;
pub use rr::RrSock;
pub use udp::UdpSock;

/// One socket (`struct sock`) and its protocol state.
pub struct Sock {
    /// The process that owns the socket and sends on it.
    pub task: TaskId,
    /// The device its route leaves by.
    pub dev: DevId,
    /// The host of its far end (the flood's sink, the echo responder, the TCP
    /// receiver): where a packet sent on it is delivered, and whether a router on the
    /// way forwards it. Set by the world's construction.
    pub far_host: HostId,
    /// The host (network namespace) the socket lives in: where what its far end
    /// answers is delivered. Set by the world's construction.
    pub host: HostId,
    /// `sk_wmem_alloc`: truesize of this socket's skbs not yet freed or orphaned.
    pub wmem_alloc: u64,
    /// `sk_sndbuf`.
    pub sndbuf: u64,
    /// Sleeping in `sock_alloc_send_pskb()` until `sock_wfree()` makes it writeable.
    pub blocked: bool,
    /// Its last send was dropped at the qdisc (or pushed out another packet of its
    /// flow): only then does its next send try `flood_drop_burst()`, whose own checks
    /// decide. A hint that keeps the checks off sends that are queued.
    pub last_send_dropped: bool,
    pub kind: SockKind,
}

impl Sock {
    /// The measured window starts: the socket's counters now are its base. True for
    /// a socket whose time integrals start here as well (TCP's, `tcp_stats_tick`).
    pub fn start_window(&mut self) -> bool {
        match &mut self.kind {
            SockKind::Tcp(t) => {
                t.start_window();
                true
            }
            _ => false,
        }
    }
}

/// What a protocol's sendmsg built: the skb, its destructor, and the CPU time the
/// protocol spent on it (syscall, socket, protocol and IP layers), ns.
pub struct Outgoing {
    pub skb: Skb,
    pub proto: crate::arena::Proto,
    pub destructor: Destructor,
    pub cost_ns: f64,
    /// The protocol's sequence number (the echo's).
    pub seq: u32,
}

/// The protocol of a socket.
///
/// `repr(u8)` gives it a tag byte of its own. Left to the compiler, the tag hides in a
/// niche of a variant's fields and every `match` on the send path decodes it (2% of
/// seed-nrules0's instructions); the same holds for `Driver`, `Xps` and `AnyQdisc`.
#[repr(u8)]
pub enum SockKind {
    /// A UDP flood (and its sink on the far end).
    Udp(UdpSock),
    /// The pinger's ICMP socket (and the far end's echo responder).
    Ping(PingSock),
    /// A TCP connection: its sender and, at the far end, its receiver.
    Tcp(Box<tcp::TcpSock>),
    /// An irtt client (and the far end's irtt server).
    Irtt(IrttSock),
    /// One direction of a voice call (and its receiver at the other end).
    Voip(voip::VoipSock),
    /// A netperf TCP_RR / UDP_RR connection: its client and the far end's netserver.
    Rr(Box<RrSock>),
}

impl World {
    /// One `sendmsg()` on socket `s` by its process on `cpu`: the protocol builds the
    /// skb, then, as `ip_finish_output2()` -> `__dev_queue_xmit()` do for every
    /// protocol, it is charged, steered to a TX queue and handed to the qdisc. Returns
    /// `Continue(cost)`, or `Call(cost)` with the qdisc run it started in the CPU's
    /// call slot (a `Step`: two registers, where `(u64, Option<Frame>)` went through
    /// memory).
    #[inline(never)]
    pub fn send_msg(&mut self, cpu: CpuId, s: SockId) -> Step {
        let out = match self.socks[s].kind {
            // The flood's path goes on in its own arm, so that its skb stays in
            // registers: merged with the other protocols' it was stored into one
            // shared slot field by field and read back whole (a store-forwarding stall).
            SockKind::Udp(_) => match self.udp_sendmsg(s) {
                Some(out) => return self.sock_xmit(cpu, s, out),
                None => return Step::Continue(0),
            },
            SockKind::Ping(_) => self.ping_sendmsg(s),
            SockKind::Irtt(_) => self.irtt_sendmsg(s),
            SockKind::Voip(_) => self.voip_sendmsg(s),
            SockKind::Rr(_) => self.rr_sendmsg(s),
            SockKind::Tcp(_) => {
                if !self.socks.tcp(s).established() {
                    return self.tcp_connect(cpu, s);
                }
                let cost = self.tcp_sendmsg(cpu, s);
                // The write holds the socket: its release_sock() comes after it.
                if self.socks.tcp(s).owned_by_user() {
                    return self.call(cpu, cost, Frame::ReleaseSock(s));
                }
                return Step::Continue(cost);
            }
        };
        match out {
            Some(out) => self.sock_xmit_probe(cpu, s, out),
            None => Step::Continue(0),
        }
    }

    /// A probe's skb down the same path as a flood's, out of line (one per probe).
    #[inline(never)]
    fn sock_xmit_probe(&mut self, cpu: CpuId, s: SockId, out: Outgoing) -> Step {
        self.sock_xmit(cpu, s, out)
    }

    /// A TCP handshake's SYN down the same path, out of line (one per connection). A
    /// SYN lost to the qdisc is the SYN timer's to resend (`connect.rs`): its verdict
    /// reaches no socket.
    #[inline(never)]
    pub(crate) fn sock_xmit_syn(&mut self, cpu: CpuId, s: SockId, out: Outgoing) -> Step {
        self.sock_xmit_as(cpu, s, out, true)
    }

    /// What every protocol's sendmsg does with the skb it built, as
    /// `ip_finish_output2()` -> `__dev_queue_xmit()` do: charge it, steer it to a TX
    /// queue and hand it to the qdisc.
    #[inline(always)]
    fn sock_xmit(&mut self, cpu: CpuId, s: SockId, out: Outgoing) -> Step {
        self.sock_xmit_as(cpu, s, out, false)
    }

    /// [`Self::sock_xmit`] of a data skb (`syn` false: the verdict reaches the socket)
    /// or of a SYN.
    #[inline(always)]
    fn sock_xmit_as(&mut self, cpu: CpuId, s: SockId, out: Outgoing, syn: bool) -> Step {
        let Outgoing { mut skb, proto, destructor, cost_ns, seq } = out;
        let dev = self.socks[s].dev;
        skb.queue_mapping = self.netdev_pick_tx(dev, &skb, cpu);
        self.sock_alloc_skb(s, &mut skb, proto, destructor, Dir::Out, seq);
        if syn {
            self.pkts.set_syn(skb.id);
        }
        let send_cost = self.cost(cost_ns);
        let (xmit_cost, next, verdict) = self.dev_queue_xmit(cpu, dev, skb);
        if !syn {
            self.socks[s].last_send_dropped = verdict != EnqueueVerdict::Success;
            self.sock_xmit_verdict(s, verdict);
        }
        match next {
            None => Step::Continue(send_cost + xmit_cost),
            Some(q) => self.call(cpu, send_cost + xmit_cost, Frame::QdiscRun { q, quota: DEV_TX_WEIGHT }),
        }
    }

    /// What `__dev_queue_xmit()` returned reaches the protocol. UDP turns
    /// NET_XMIT_DROP into success (`udp_send_skb()`: -ENOBUFS without IP_RECVERR counts
    /// `UDP_MIB_SNDBUFERRORS`); the pinger's `ip_send_skb()` returns -ENOBUFS to ping(8),
    /// which reports the probe as not answered. Both count it.
    #[inline]
    pub(crate) fn sock_xmit_verdict(&mut self, s: SockId, verdict: EnqueueVerdict) {
        if verdict == EnqueueVerdict::Success {
            return;
        }
        match &mut self.socks[s].kind {
            SockKind::Udp(u) => u.sndbuf_errors += (verdict == EnqueueVerdict::Dropped) as u64,
            // ping.unsendable counts the measured window's.
            SockKind::Ping(p) => p.stats.unsendable += (verdict == EnqueueVerdict::Dropped && self.now >= self.cfg.start) as u64,
            SockKind::Irtt(p) => p.send_errors += (verdict == EnqueueVerdict::Dropped) as u64,
            SockKind::Voip(v) => v.send_errors += (verdict == EnqueueVerdict::Dropped) as u64,
            SockKind::Rr(r) => r.send_errors += (verdict == EnqueueVerdict::Dropped) as u64,
            SockKind::Tcp(_) => {}
        }
    }

    /// Whether socket `s`'s process stays runnable at the end of a unit (another send
    /// is due now); if not, it sleeps, with a timer armed for its next send if it has
    /// one.
    #[inline]
    pub fn sock_wants_cpu(&mut self, s: SockId) -> bool {
        let sk = &self.socks[s];
        match &sk.kind {
            SockKind::Udp(u) => {
                if sk.blocked {
                    return false;
                }
                match u.next_send_timer(self.now) {
                    Some(at) => {
                        self.events.push(at, crate::event::Event::TaskTimer(sk.task));
                        false
                    }
                    None => true,
                }
            }
            SockKind::Ping(p) => p.due > 0,
            SockKind::Irtt(p) => p.sched.due > 0,
            SockKind::Voip(v) => v.sched.due > 0,
            SockKind::Rr(r) => r.wants_cpu(),
            SockKind::Tcp(_) => self.tcp_wants_cpu(s),
        }
    }

    /// A timer of socket `s`'s process fired (before its task is woken).
    pub fn sock_timer(&mut self, s: SockId) {
        match self.socks[s].kind {
            SockKind::Ping(_) => self.ping_timer(s),
            SockKind::Irtt(_) => self.irtt_timer(s),
            SockKind::Voip(_) => self.voip_timer(s),
            SockKind::Rr(_) => self.rr_start(s),
            _ => {}
        }
    }

    /// Allocates `skb` for socket `s` in the arena (its `id` is set), charging the
    /// socket's send buffer when the skb carries `sock_wfree` as its destructor.
    #[inline(always)]
    pub fn sock_alloc_skb(&mut self, s: SockId, skb: &mut Skb, proto: crate::arena::Proto, destructor: Destructor, dir: Dir, seq: u32) {
        if destructor == Destructor::SockWfree {
            self.socks[s].wmem_alloc += skb.truesize as u64;
        }
        skb.id = self.pkts.alloc(PktInfo {
            len: skb.len,
            truesize: skb.truesize,
            sock: s,
            proto,
            dir,
            flow: skb.flow,
            seq,
            segs: skb.segs() as u16,
            ecn: skb.ecn,
            dscp: skb.dscp,
            tcp_flags: 0,
            t_send: self.now,
            bql_charged: false,
            destructor,
            netem_clone: false,
            corrupt: false,
            from_ingress: false,
        });
        if proto == crate::arena::Proto::Icmp {
            self.pkts.reset_probe_times(skb.id);
        }
        self.metrics.fate.created += 1;
    }

    /// `sock_wfree()`: return the skb's truesize to its socket and wake a process
    /// blocked on a full sndbuf once it is writeable again (`sock_writeable()`:
    /// wmem_alloc < sndbuf / 2). A UDP flood's socket is its flow's (`udp.rs`): the
    /// process sleeps on the socket it was about to send on.
    pub fn sock_wfree(&mut self, id: u32) {
        let info = self.pkts.get_mut(id);
        info.destructor = Destructor::None;
        let (s, truesize, flow) = (info.sock, info.truesize as u64, info.flow);
        let sk = &mut self.socks[s];
        sk.wmem_alloc -= truesize;
        let mut wmem = sk.wmem_alloc;
        if let SockKind::Udp(u) = &mut sk.kind {
            let f = entry_flow_index(flow);
            u.flow_wmem[f] -= truesize;
            wmem = if f == u.next_flow as usize { u.flow_wmem[f] } else { u64::MAX };
        }
        if sk.blocked && wmem < sk.sndbuf / 2 {
            sk.blocked = false;
            let task = sk.task;
            self.wake_task(task);
        }
    }

    /// `skb_orphan()`: run the skb's destructor now (the receive path's `ip_rcv_core()`,
    /// `tun_net_xmit()`), so its socket gets its memory back before the skb is freed.
    #[inline(always)]
    pub fn skb_orphan(&mut self, id: u32) {
        match self.pkts.get(id).destructor {
            Destructor::None => {}
            Destructor::SockWfree => self.sock_wfree(id),
            Destructor::TcpWfree => self.tcp_wfree(id),
        }
    }

    /// The packet went up the stack of host (namespace) `here` at time `t`, on `cpu`: a
    /// router forwards it if it
    /// is for another host; otherwise it reached its destination socket: the far end's
    /// receive handler (the flood's sink, the echo responder) or the socket's own (the
    /// echo reply), then the skb is consumed. Returns CPU time the handler spent
    /// beyond the receive path's (building an echo reply), ns.
    #[inline(always)]
    pub(crate) fn deliver(&mut self, cpu: CpuId, here: HostId, id: u32, t: u64) -> u64 {
        // __netif_receive_skb_core()'s ingress hook: ingress shaping sends what
        // arrives from the far host through the ifb first.
        if self.net.ingress && self.ingress_redirect(cpu, id, t) {
            return 0;
        }
        // ip_rcv_core() orphans the skb: its sender's sk_wmem_alloc is released here,
        // after the ingress hook. An skb that crossed a veth still holds its socket
        // (`____dev_forward_skb()` has not orphaned since 5.4, 9c4c325252c5), so TCP
        // Small Queues counts it until it reaches IP, after an ifb's qdisc too.
        // (Without ingress shaping `gro_flush()` orphaned it already.)
        if self.net.ingress {
            self.skb_orphan(id);
        }
        // ip_rcv_finish(): a router forwards what is not for it.
        if self.net.forwarding {
            if let Some(dev) = self.ip_route_input(here, id) {
                self.ip_forward(cpu, id, dev, t);
                return 0;
            }
        }
        // The flood's packets, nearly all of a flood run, need three fields: the
        // whole record is copied only for the handlers that take it.
        let (sock, dir, t_send, netem) = {
            let info = self.pkts.get(id);
            (info.sock, info.dir, info.t_send, info.netem_clone | info.corrupt)
        };
        if netem && self.netem_rcv(id) {
            return 0;
        }
        let in_window = t >= self.cfg.start && t <= self.cfg.end;
        if in_window && dir == Dir::Out {
            self.metrics.consumer_pkts += 1;
        }
        let mut extra = 0;
        if let SockKind::Udp(u) = &mut self.socks[sock].kind {
            // The flood's sink (`udp_rcv()` on the far end).
            if in_window {
                u.sink_pkts += 1;
                self.metrics.sink_owd_ns += (t - t_send) as u128;
            }
        } else {
            let info = *self.pkts.get(id);
            match (&self.socks[sock].kind, dir) {
                (SockKind::Udp(_), _) => unreachable!("handled above"),
                (SockKind::Ping(_), Dir::Out) => extra = self.ping_echo_rcv(cpu, id, &info, t),
                (SockKind::Ping(_), Dir::Back) => self.ping_reply_rcv(&info, t),
                (SockKind::Irtt(_), Dir::Out) => extra = self.irtt_server_rcv(cpu, &info, t),
                (SockKind::Irtt(_), Dir::Back) => self.irtt_client_rcv(&info, t),
                (SockKind::Voip(_), _) => self.voip_rcv(&info, t),
                (SockKind::Rr(_), Dir::Out) => extra = self.rr_server_rcv(cpu, &info, t),
                (SockKind::Rr(_), Dir::Back) => self.rr_client_rcv(&info, t),
                (SockKind::Tcp(_), Dir::Out) if info.syn() => extra = self.tcp_rcv_syn(cpu, &info, t),
                (SockKind::Tcp(_), Dir::Back) if info.syn() => extra = self.tcp_rcv_synack(&info, t),
                (SockKind::Tcp(_), Dir::Out) => extra = self.tcp_data_rcv(cpu, &info, t),
                (SockKind::Tcp(_), Dir::Back) => extra = self.tcp_ack(cpu, &info, t),
            }
        }
        self.metrics.fate.delivered += 1;
        self.pkts.free(id);
        extra
    }

    /// What a netem did to packet `id` decides its reception: a corrupted packet is
    /// dropped by the receiving stack (`__udp4_lib_rcv()`'s and `tcp_v4_rcv()`'s
    /// checksum, `eth_type_trans()` for another host, no handler for the EtherType); a
    /// probe's duplicate is consumed without a sample (ping(8) prints "DUP!" and keeps
    /// it out of its statistics, as irtt keeps duplicates apart). Returns whether the
    /// packet is gone.
    #[inline(never)]
    fn netem_rcv(&mut self, id: u32) -> bool {
        let info = *self.pkts.get(id);
        if info.corrupt {
            if self.measuring() {
                self.metrics.netem_corrupt_drops += 1;
            }
            self.kfree_skb(id);
            return true;
        }
        if matches!(self.socks[info.sock].kind, SockKind::Ping(_) | SockKind::Irtt(_) | SockKind::Voip(_)) {
            self.metrics.fate.delivered += 1;
            self.pkts.free(id);
            return true;
        }
        false
    }

    /// The UDP floods' sockets, in `[[traffic]]` order.
    pub fn udp_socks(&self) -> impl Iterator<Item = &UdpSock> {
        self.socks.iter().filter_map(|s| match &s.kind {
            SockKind::Udp(u) => Some(u),
            _ => None,
        })
    }
}
