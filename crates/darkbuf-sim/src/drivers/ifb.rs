//! ifb, the Intermediate Functional Block device SQM shapes downloads on
//! (drivers/net/ifb.c), with the ingress hook that feeds it.
//!
//! A host with ingress shaping has an `ingress` qdisc on its device whose filter
//! redirects every arriving packet to the ifb (`tcf_mirred_act()`: `dev_queue_xmit()`
//! on the ifb, from `sch_handle_ingress()` in `__netif_receive_skb_core()`). The packet
//! then passes the ifb's qdisc tree like any transmit; `ifb_xmit()` takes what the
//! qdisc releases onto the ifb's rq and schedules its tasklet, and `ifb_ri_tasklet()`
//! hands it back to `netif_receive_skb()` with `skb->from_ingress` set, so it goes up
//! the stack without meeting the ingress hook again.
//!
//! On veth the far end is the peer namespace: what it sends (replies to this end's
//! sockets, a download's data) arrives on this end and is redirected; the same
//! host record also delivers what this end sends to the peer, which is not.
//!
//! Modelled: the redirect of what arrives from the far host (the ifb sees the packet
//! as the receive path built it: a TCP skb whole, GRO'd or as the veth peer's TSO
//! built it, and, after a veth, still owned by its sender's socket), the ifb's qdisc
//! (its shaper, AQM and drops, a watchdog like any other), and the second trip up the
//! stack at once. Not modelled: the CPU time of the redirect and of the tasklet, and
//! the ifb's rq (`tx_queue_len` 32 stops its queue; the tasklet empties it in the same
//! softirq, so it holds nothing a qdisc would not).

use crate::dev::NetdevTx;
use crate::host::IngressFrom;
use crate::id::{CpuId, DevId, HostId};
use crate::world::World;
use darkbuf_model::Skb;

/// The ifb's private state: none beyond its queue's qdisc.
pub struct Ifb;

impl World {
    /// `ifb_xmit()` and the tasklet's `netif_receive_skb()`: the packet goes up this
    /// host's stack again, now, on the CPU that ran the qdisc.
    pub fn ifb_xmit(&mut self, cpu: CpuId, skb: Skb) -> NetdevTx {
        let info = self.pkts.get_mut(skb.id);
        // A CE mark by the ifb's AQM rides in the packet.
        info.ecn = skb.ecn;
        info.from_ingress = true;
        let now = self.now;
        self.deliver_at(now, cpu, skb.id);
        NetdevTx::Ok
    }

    /// `sch_handle_ingress()` on the host of `cpu`: a packet that arrived from the far
    /// host `from` on a host with ingress shaping, and has not been through the ifb,
    /// is redirected to it at `t`. Returns whether it was.
    #[inline]
    pub(crate) fn ingress_redirect(&mut self, cpu: CpuId, id: u32, t: u64) -> bool {
        let here = self.sched.cpus[cpu].host;
        let Some((ifb, from)) = self.net.hosts[here].ingress else { return false };
        let info = *self.pkts.get(id);
        if info.from_ingress || !self.arrives_from(id, from) {
            return false;
        }
        // act_mirred redirects the skb itself at ingress, not a clone
        // (`tcf_mirred_can_reinsert()`), and an skb that crossed a veth still holds its
        // sender's socket: the ifb's qdisc sees it, fq keeps a flow per socket and, with
        // the departure time that `skb_scrub_packet()` cleared between namespaces, paces
        // it at the socket's `sk_pacing_rate` (a snapshot taken here; the model's fq
        // never takes its 6.7+ fast path for it, which the kernel's may while the
        // qdisc holds under 8 packets); TCP Small Queues counts it until
        // `ip_rcv_core()` orphans it after the ifb ([`World::deliver`]). Only a TCP
        // sender is named here: other skbs reach the qdisc with no socket (fq hashes
        // their flow), though still charged to their sender.
        let (sk, pacing_rate) = match (info.destructor, info.proto) {
            (crate::arena::Destructor::TcpWfree, crate::arena::Proto::Tcp) => self.tcp_skb_owner(info.sock),
            _ => (0, 0),
        };
        let skb = Skb {
            id,
            flow: info.flow,
            len: info.len,
            truesize: info.truesize,
            sk,
            pacing_rate,
            priority: crate::forward::rt_tos2priority(info.dscp, info.ecn),
            dscp: info.dscp,
            ecn: info.ecn,
            gso_segs: if info.segs > 1 { info.segs } else { 0 },
            ..Skb::default()
        };
        self.redirect_to(t, cpu, ifb, skb);
        true
    }

    fn redirect_to(&mut self, t: u64, cpu: CpuId, ifb: DevId, skb: Skb) {
        self.dev_forward_at(t, cpu, ifb, skb);
    }

    /// Whether packet `id`, delivered on the host with ingress shaping, came in by its
    /// device from the far end `from`.
    fn arrives_from(&self, id: u32, from: IngressFrom) -> bool {
        match from {
            IngressFrom::Host(h) => self.source_host(id) == h,
            // One host record holds both namespaces: what the peer sent is a reply
            // (`Dir::Back`) to a socket of this end, or data of a socket that sends by
            // the peer's end.
            IngressFrom::VethPeer(peer) => {
                let info = self.pkts.get(id);
                let by_peer = Some(self.socks[info.sock].dev) == peer;
                (info.dir == crate::arena::Dir::Out) == by_peer
            }
        }
    }

    /// The host packet `id` left on its way here: the socket's own for what it sends,
    /// the far end's for what comes back.
    fn source_host(&self, id: u32) -> HostId {
        let info = self.pkts.get(id);
        let sk = &self.socks[info.sock];
        match info.dir {
            crate::arena::Dir::Out => self.sched.cpus[self.sched.tasks[sk.task].cpu].host,
            crate::arena::Dir::Back => sk.far_host,
        }
    }
}
