//! A host that routes: `ip_rcv_finish()`'s route lookup and `ip_forward()` in
//! net/ipv4/ip_input.c and net/ipv4/ip_forward.c, reduced to what decides where a
//! packet waits.
//!
//! A packet that reaches a host which is not its destination leaves again by the
//! device the host's FIB names for that destination, through that device's qdisc,
//! BQL and ring, from the CPU whose NAPI received it. It has no socket there: the RX
//! path orphaned it, so TCP Small Queues does not hold the sender back at this queue,
//! and the queue can fill to its limit (the router, modem or access point of the
//! bufferbloat tests). A GRO'd TCP skb is forwarded whole, as the kernel forwards a
//! GRO packet, and the egress device segments it if it has no TSO.
//!
//! Not modelled: TTL, fragmentation, ICMP errors, netfilter on the forward path.
//! `ip_forward()` itself costs no CPU time of its own here; the receive stack's cost
//! before it and the egress qdisc run after it are charged as on any host.

use crate::arena::Dir;
use crate::id::{CpuId, DevId, HostId};
use crate::world::World;
use darkbuf_model::Skb;

/// `ip_tos2prio[]` (net/ipv4/route.c): the `TC_PRIO_*` band of each TOS value,
/// indexed by `IPTOS_TOS(tos) >> 1`. Each odd entry (`ECN_OR_COST()`, the TOS bit that
/// is now ECT(0)) equals its even neighbour; older kernels had FILLER at 1.
const IP_TOS2PRIO: [u8; 16] = [0, 0, 0, 0, 2, 2, 2, 2, 6, 6, 6, 6, 4, 4, 4, 4];

/// `rt_tos2priority()`: the priority `ip_forward()` gives a forwarded skb, and the
/// `sk_priority` that `IP_TOS` gives a socket, from the TOS byte (DSCP and ECN bits).
pub fn rt_tos2priority(dscp: u8, ecn: u8) -> u32 {
    let tos = (dscp << 2) | (ecn & 3);
    IP_TOS2PRIO[((tos & 0x1e) >> 1) as usize] as u32
}

impl World {
    /// The host a packet of socket `sock` travelling `dir` is for: the far end for
    /// what the socket sends, the socket's own host for what comes back.
    fn destination(&self, sock: crate::id::SockId, dir: Dir) -> HostId {
        let sk = &self.socks[sock];
        match dir {
            Dir::Out => sk.far_host,
            Dir::Back => sk.host,
        }
    }

    /// `ip_route_input()` on host (network namespace) `here`: the device to forward
    /// packet `id` by, or `None` when the packet is for this host.
    #[inline]
    pub(crate) fn ip_route_input(&self, here: HostId, id: u32) -> Option<DevId> {
        let info = self.pkts.get(id);
        let dest = self.destination(info.sock, info.dir);
        if dest == here {
            return None;
        }
        let out = self.net.hosts[here].fib.get(dest.idx()).copied().flatten();
        debug_assert!(out.is_some(), "host {here} has no route to host {dest}");
        out
    }

    /// `ip_forward()` -> `ip_output()` -> `__dev_queue_xmit()` of packet `id` on `dev`,
    /// at time `t` inside the receive step on `cpu`. The skb is rebuilt from what its
    /// headers carry; it keeps its arena slot and send time (so a probe's RTT spans
    /// the whole path).
    pub(crate) fn ip_forward(&mut self, cpu: CpuId, id: u32, dev: DevId, t: u64) {
        let info = self.pkts.get(id);
        let mut skb = Skb {
            id,
            flow: info.flow,
            len: info.len,
            truesize: info.truesize,
            // No socket: fq hashes the flow, as for any forwarded packet.
            sk: 0,
            priority: rt_tos2priority(info.dscp, info.ecn),
            dscp: info.dscp,
            ecn: info.ecn,
            gso_segs: if info.segs > 1 { info.segs } else { 0 },
            ..Skb::default()
        };
        skb.queue_mapping = self.netdev_pick_tx(dev, &skb, cpu);
        self.dev_forward_at(t, cpu, dev, skb);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ip_tos2prio[]` read through `rt_tos2priority()`: DSCP CS1 (8, TOS 0x20) is
    /// best effort; TOS 0x08 (DSCP 2, "maximize throughput") bulk; TOS 0x10 (DSCP 4,
    /// "minimize delay") interactive; EF (46, TOS 0xb8: IPTOS_TOS 0x18) interactive
    /// bulk. The ECN bits never change the band: ECT(0) and CE keep the 0x02 bit that
    /// IPTOS_TOS_MASK passes, and the table maps it as its neighbour.
    #[test]
    fn forwarded_priority_follows_ip_tos2prio() {
        assert_eq!(rt_tos2priority(0, 0), 0);
        assert_eq!(rt_tos2priority(8, 0), 0);
        assert_eq!(rt_tos2priority(2, 0), 2);
        assert_eq!(rt_tos2priority(4, 0), 6);
        assert_eq!(rt_tos2priority(46, 0), 4);
        for dscp in 0..64 {
            for ecn in 0..4 {
                assert_eq!(rt_tos2priority(dscp, ecn), rt_tos2priority(dscp, 0), "dscp {dscp} ecn {ecn}");
            }
        }
    }
}
