//! Packets in flight live here, in a slab indexed by `Skb::id`; queues hold only the
//! `Skb` descriptor. Freed slots are reused, so the steady state allocates nothing.

use crate::ack_recs::AckRecs;
use crate::id::SockId;

/// The IP protocol of a packet: what the receiver's netfilter rules match on
/// (`consumer.rules_match`) and which probes are which.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Udp,
    Tcp,
    /// ICMP echo requests (and replies): the pinger's probes.
    Icmp,
}

/// Which way a packet travels on its socket's connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// From the socket to its far end (data, echo requests).
    Out,
    /// From the far end back to the socket (echo replies, ACKs).
    Back,
}

/// `skb->destructor`: what freeing or orphaning the skb does to its socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Destructor {
    /// None, or already run (`skb_orphan()`).
    None,
    /// `sock_wfree()`: give `truesize` back to the socket's `sk_wmem_alloc`.
    SockWfree,
    /// `tcp_wfree()`: the same, and run TCP Small Queues' handler if the socket was
    /// throttled.
    TcpWfree,
}

/// What the simulator remembers about a packet besides its descriptor (of which it
/// keeps only the two sizes it needs after the qdisc: not a copy of the whole `Skb`).
#[derive(Clone, Copy, Debug)]
pub struct PktInfo {
    /// `skb->len` (BQL's byte unit) and `skb->truesize` (the socket charge).
    pub len: u32,
    pub truesize: u32,
    /// `skb->sk`: the sending socket, which also receives what the far end answers.
    pub sock: SockId,
    pub proto: Proto,
    pub dir: Dir,
    /// The flow (what RSS hashes at a receiving NIC).
    pub flow: u32,
    /// The protocol's sequence number (the echo's; a TCP segment's first byte; an
    /// ACK's record in its socket).
    pub seq: u32,
    /// The frames it is on the wire (a TSO skb's segments).
    pub segs: u16,
    /// The IP header's ECN bits: the sender's, and a CE mark by an AQM on the way
    /// (copied from the skb when a driver takes it).
    pub ecn: u8,
    /// The IP header's DSCP, which a router's qdisc classifies by.
    pub dscp: u8,
    /// The TCP header's flags the model reads ([`PktInfo::TCPHDR_CWR`],
    /// [`PktInfo::TCPHDR_SYN`]; the kernel's bits): one byte, so that the record stays
    /// 40 bytes with a 32-bit socket id.
    pub tcp_flags: u8,
    /// Created by the sender (ns).
    pub t_send: u64,
    /// Charged to BQL by the driver (veth's tagged ring pointer).
    pub bql_charged: bool,
    pub destructor: Destructor,
    /// A netem's duplicate (`skb_clone()`): the probes do not count its fate (ping(8)
    /// reports a duplicate apart and a lost duplicate is no lost probe).
    pub netem_clone: bool,
    /// A netem flipped a bit the receiver detects (a checksum, the destination MAC, the
    /// EtherType): the receiving stack drops it.
    pub corrupt: bool,
    /// Came back from an ifb (`skb->from_ingress`): the ingress hook lets it pass.
    pub from_ingress: bool,
}

impl PktInfo {
    /// `TCPHDR_CWR` (`wire.rs`).
    pub const TCPHDR_CWR: u8 = crate::wire::TCPHDR_CWR;
    /// `TCPHDR_SYN`: a SYN (`Dir::Out`) or SYN-ACK (`Dir::Back`) of a TCP handshake
    /// (`tcp/connect.rs`).
    pub const TCPHDR_SYN: u8 = crate::wire::TCPHDR_SYN;

    #[inline]
    pub fn cwr(&self) -> bool {
        self.tcp_flags & Self::TCPHDR_CWR != 0
    }

    #[inline]
    pub fn syn(&self) -> bool {
        self.tcp_flags & Self::TCPHDR_SYN != 0
    }

    /// A pure ACK: what [`AckRecs`] keeps a record for.
    #[inline]
    fn is_ack(&self) -> bool {
        self.proto == Proto::Tcp && self.dir == Dir::Back && !self.syn()
    }
}

pub struct Arena {
    slots: Vec<PktInfo>,
    /// Where each echo request's time went, beside the records rather than in them:
    /// only the pinger reads these, so only an ICMP packet's are written (`stamp()`).
    /// A flood then keeps 40 bytes per packet hot instead of 72 (seed-nrules0: the
    /// NIC's two stamps moved out first, 72 -> 56 bytes, 38% fewer L1 data misses and
    /// 3% less time; the qdisc's and the ring's, 56 -> 40 bytes, see docs/executor.md).
    probe: Vec<ProbeTimes>,
    free: Vec<u32>,
    live: u64,
    /// The TCP ACKs' contents, each kept while a packet carries it: allocating and
    /// freeing an ACK (a TCP packet going `Back`) counts its packets.
    pub acks: AckRecs,
    /// Each socket's TCP packets alive (data, ACKs, SYNs, copies): a closed web
    /// connection's slot is reused only once none is left (`sock/tcp/web.rs`), so that
    /// no old segment reaches the new connection.
    tcp_pkts: Vec<u32>,
}

/// When an ICMP packet passed each point of its path (ns). Zeroed when an ICMP skb is
/// allocated (`sock_alloc_skb()`), written by the drivers and the NIC as the packet
/// passes, copied to the far end's skb with the frame (`nic_wire_done()`), and read
/// by the echo responder and the pinger (`sock/ping.rs`). Nothing else reads them, so
/// other packets' entries are left stale.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProbeTimes {
    /// Left the qdisc into the driver ring.
    pub t_xmit: u64,
    /// Taken off the ring by the consumer (veth's NAPI, the tun reader, a NIC's RX
    /// poll).
    pub t_consume: u64,
    /// A NIC started serializing it onto the wire.
    pub t_wire: u64,
    /// It arrived at the far NIC's RX ring.
    pub t_arrive: u64,
}

impl Arena {
    pub fn with_capacity(n: usize) -> Self {
        Arena { slots: Vec::with_capacity(n), probe: Vec::with_capacity(n), free: Vec::with_capacity(n), live: 0, acks: AckRecs::default(), tcp_pkts: Vec::new() }
    }

    pub fn alloc(&mut self, info: PktInfo) -> u32 {
        self.live += 1;
        if info.is_ack() {
            self.acks.get_ref(info.sock, info.seq);
        }
        if info.proto == Proto::Tcp {
            let i = info.sock.idx();
            if self.tcp_pkts.len() <= i {
                self.tcp_pkts.resize(i + 1, 0);
            }
            self.tcp_pkts[i] += 1;
        }
        if let Some(id) = self.free.pop() {
            self.slots[id as usize] = info;
            id
        } else {
            let id = self.slots.len() as u32;
            self.slots.push(info);
            self.probe.push(ProbeTimes::default());
            id
        }
    }

    pub fn free(&mut self, id: u32) {
        self.live -= 1;
        let info = &self.slots[id as usize];
        if info.is_ack() {
            self.acks.put_ref(info.sock, info.seq);
        }
        if info.proto == Proto::Tcp {
            self.tcp_pkts[info.sock.idx()] -= 1;
        }
        self.free.push(id);
    }

    /// Socket `s`'s TCP packets alive.
    pub fn tcp_pkts_of(&self, s: SockId) -> u32 {
        self.tcp_pkts.get(s.idx()).copied().unwrap_or(0)
    }

    pub fn get(&self, id: u32) -> &PktInfo {
        &self.slots[id as usize]
    }

    pub fn get_mut(&mut self, id: u32) -> &mut PktInfo {
        &mut self.slots[id as usize]
    }

    /// Packet `id`, just allocated, is a SYN or SYN-ACK: it carries no ACK record (the
    /// reference its allocation took as a TCP packet going back is given back).
    pub fn set_syn(&mut self, id: u32) {
        let info = &mut self.slots[id as usize];
        if info.is_ack() {
            self.acks.put_ref(info.sock, info.seq);
        }
        info.tcp_flags |= PktInfo::TCPHDR_SYN;
    }

    /// Packet `id`'s path times (see [`ProbeTimes`]): meaningful for ICMP only.
    pub fn probe_times(&self, id: u32) -> ProbeTimes {
        self.probe[id as usize]
    }

    /// Record that packet `id` passed a point of its path at `t`, if it is a probe
    /// (`which` picks the field). The check keeps every other packet's stamps out of
    /// the cache.
    #[inline(always)]
    pub fn stamp(&mut self, id: u32, which: fn(&mut ProbeTimes) -> &mut u64, t: u64) {
        if self.slots[id as usize].proto == Proto::Icmp {
            *which(&mut self.probe[id as usize]) = t;
        }
    }

    /// A new ICMP skb `id` starts with zeroed path times; a frame copied to the far
    /// end (`to`) carries the ones of `from`.
    pub fn reset_probe_times(&mut self, id: u32) {
        self.probe[id as usize] = ProbeTimes::default();
    }

    pub fn copy_probe_times(&mut self, from: u32, to: u32) {
        if self.slots[from as usize].proto == Proto::Icmp {
            self.probe[to as usize] = self.probe[from as usize];
        }
    }

    /// Packets allocated and not yet freed.
    pub fn live(&self) -> u64 {
        self.live
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(proto: Proto) -> PktInfo {
        PktInfo {
            len: 100,
            truesize: 768,
            sock: SockId(0),
            proto,
            dir: Dir::Out,
            flow: 0,
            seq: 0,
            segs: 1,
            ecn: 0,
            dscp: 0,
            tcp_flags: 0,
            t_send: 0,
            bql_charged: false,
            destructor: Destructor::None,
            netem_clone: false,
            corrupt: false,
            from_ingress: false,
        }
    }

    /// Only an ICMP packet's path times are written, and a copy carries them to the
    /// far end's skb; a reused slot's ICMP packet starts from zero once reset.
    /// The record stays 40 bytes: a flood keeps this much per packet hot.
    #[test]
    fn pkt_info_is_40_bytes() {
        assert_eq!(std::mem::size_of::<PktInfo>(), 40);
    }

    #[test]
    fn probe_times_are_kept_for_icmp_only() {
        let mut a = Arena::with_capacity(4);
        let udp = a.alloc(pkt(Proto::Udp));
        let icmp = a.alloc(pkt(Proto::Icmp));
        for id in [udp, icmp] {
            a.stamp(id, |p| &mut p.t_xmit, 10);
            a.stamp(id, |p| &mut p.t_consume, 20);
            a.stamp(id, |p| &mut p.t_wire, 30);
            a.stamp(id, |p| &mut p.t_arrive, 40);
        }
        let u = a.probe_times(udp);
        assert_eq!((u.t_xmit, u.t_consume, u.t_wire, u.t_arrive), (0, 0, 0, 0));
        let i = a.probe_times(icmp);
        assert_eq!((i.t_xmit, i.t_consume, i.t_wire, i.t_arrive), (10, 20, 30, 40));

        let far = a.alloc(pkt(Proto::Icmp));
        a.copy_probe_times(icmp, far);
        assert_eq!(a.probe_times(far).t_wire, 30);
        a.copy_probe_times(udp, far);
        assert_eq!(a.probe_times(far).t_wire, 30, "a UDP packet's stale times are not copied");

        a.free(icmp);
        let reused = a.alloc(pkt(Proto::Icmp));
        assert_eq!(reused, icmp);
        assert_eq!(a.probe_times(reused).t_xmit, 10, "not reset by the arena itself");
        a.reset_probe_times(reused);
        assert_eq!(a.probe_times(reused).t_xmit, 0);
    }
}
