//! The part of `struct sk_buff` the transmit path looks at.
//!
//! The simulator keeps each packet's bookkeeping (timestamps, which source sent it) in
//! its own arena, indexed by [`Skb::id`]; qdiscs and rings move this small `Copy`
//! descriptor around, so queueing a packet never allocates.

/// A packet descriptor as the qdiscs and the driver ring see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Skb {
    /// Index of the packet in the simulator's arena (opaque to the model).
    pub id: u32,
    /// Flow identity: what `skb_get_hash()` / the 5-tuple hash would tell apart.
    pub flow: u32,
    /// `qdisc_pkt_len()`: the L2 frame length in bytes, without FCS.
    pub len: u32,
    /// `skb->truesize`: the memory charged to the socket and to fq_codel's memory_limit.
    pub truesize: u32,
    /// The sending socket (`skb->sk`): fq keeps one flow per socket. 0 = no socket
    /// (fq then falls back to the flow hash, as for forwarded packets).
    pub sk: u32,
    /// `skb->priority` (`SO_PRIORITY`): 0..15 is a `TC_PRIO_*` band selector for
    /// pfifo_fast; a `major:minor` handle (`0x00010010` = 1:10) selects an htb/prio class.
    pub priority: u32,
    /// The IP header's DSCP (the six upper bits of TOS), for cake's diffserv tins.
    pub dscp: u8,
    /// The two ECN bits of the IP header (0 = Not-ECT, 1 = ECT(1), 2 = ECT(0), 3 = CE).
    pub ecn: u8,
    /// TX queue chosen by `netdev_core_pick_tx()` (`skb->queue_mapping`).
    pub queue_mapping: u16,
    /// `skb_shinfo(skb)->gso_segs`: the segments a GSO/TSO skb becomes on the wire
    /// (0 or 1: not a GSO skb). `len` then counts every segment's headers, as
    /// `qdisc_pkt_len()` does.
    pub gso_segs: u16,
    /// Time the packet entered the current qdisc (ns); qdiscs stamp it on enqueue.
    pub tstamp: u64,
    /// Earliest departure time (EDT, ns) requested by the socket; 0 = none.
    pub edt: u64,
    /// The sending socket's pacing rate in bytes/s; 0 = unpaced.
    pub pacing_rate: u64,
    /// How a netem put this skb back into the qdisc tree ([`Skb::NETEM_CLONE`],
    /// [`Skb::NETEM_CORRUPT_SEG`]); 0 for every other skb.
    pub netem_mark: u8,
    /// The TCP header of a segment whose sender filled it in (a receiver's ACK), as
    /// cake's ACK filter reads it; `flags == 0` for every other skb.
    pub tcp: TcpHdr,
}

/// The TCP header fields cake's ACK filter reads (`cake_get_tcphdr()`): the flags
/// byte, the cumulative ACK, the timestamp option and the SACK blocks (at most three:
/// what fits beside the timestamp option, as Linux sends them). `flags == 0`: no TCP
/// header (not TCP, or a segment whose sender does not describe it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpHdr {
    /// Byte 13 of the header: [`TcpHdr::FIN`] ... [`TcpHdr::CWR`].
    pub flags: u8,
    pub n_sacks: u8,
    /// A timestamp option is present (`tsval`, `tsecr`).
    pub has_ts: bool,
    /// The segment carries data (`seglen - __tcp_hdrlen() != 0`).
    pub data: bool,
    pub ack_seq: u32,
    pub tsval: u32,
    pub tsecr: u32,
    pub sacks: [(u32, u32); 3],
}

impl TcpHdr {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
    pub const URG: u8 = 0x20;
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;

    /// The SACK blocks present.
    pub fn sacks(&self) -> &[(u32, u32)] {
        &self.sacks[..(self.n_sacks as usize).min(3)]
    }
}

impl Skb {
    /// The frames this skb becomes on the wire.
    #[inline]
    pub fn segs(&self) -> u32 {
        self.gso_segs.max(1) as u32
    }

    /// A netem's duplicate (`skb_clone()` enqueued at the root with `skb->tc_depth`
    /// raised): no netem duplicates it again.
    pub const NETEM_CLONE: u8 = 1;
    /// The first segment of a GSO skb a netem chose to corrupt (`netem_segment()`): the
    /// netem's draws were made for the whole skb, and it goes on to be corrupted and
    /// queued.
    pub const NETEM_CORRUPT_SEG: u8 = 2;

    pub const ECN_NOT_ECT: u8 = 0;
    pub const ECN_ECT1: u8 = 1;
    pub const ECN_ECT0: u8 = 2;
    pub const ECN_CE: u8 = 3;

    /// `INET_ECN_set_ce()`: marks ECT(0), ECT(1) and CE packets; fails on Not-ECT.
    pub fn set_ce(&mut self) -> bool {
        if self.ecn == Self::ECN_NOT_ECT {
            false
        } else {
            self.ecn = Self::ECN_CE;
            true
        }
    }
}

/// Size of `struct sk_buff` plus its slab overhead, as `SKB_TRUESIZE()` counts it.
pub const SKB_STRUCT_TRUESIZE: u32 = 256;
/// `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))` on x86_64.
pub const SHINFO_TRUESIZE: u32 = 320;
/// Headroom a UDP socket reserves in front of the frame (`LL_RESERVED_SPACE` + `NET_SKB_PAD`).
const TX_HEADROOM: u32 = 64;

/// truesize of a freshly allocated, linear skb carrying an L2 frame of `len` bytes:
/// the data area is a kmalloc object (power-of-two bucket) holding headroom, frame and
/// `skb_shared_info`, plus the `sk_buff` itself. A 1442-byte frame gives 2304, so the
/// default 212992-byte sndbuf holds 92 of them, as the veth BQL selftest notes.
pub fn truesize_for_len(len: u32) -> u32 {
    let data = len.saturating_add(TX_HEADROOM + SHINFO_TRUESIZE);
    let bucket = data.max(64).checked_next_power_of_two().unwrap_or(u32::MAX);
    bucket.saturating_add(SKB_STRUCT_TRUESIZE)
}

/// `tcp_sndbuf_expand()`'s charge per segment (net/ipv4/tcp_input.c): the worst case
/// of one skb per segment with a kmalloc'ed head, `roundup_pow_of_two(mss_clamp +
/// MAX_TCP_HEADER + SKB_DATA_ALIGN(sizeof(struct skb_shared_info))) + SKB_TRUESIZE(0)`'s
/// `sk_buff`. `max_tcp_header` is the kernel build's (the machine profile's): at MTU
/// 1500 (`mss_clamp` 1460), 320 gives 4352 bytes, 256 gives 2304.
pub fn tcp_sndbuf_per_mss(mss_clamp: u32, max_tcp_header: u32) -> u32 {
    (mss_clamp + max_tcp_header + SHINFO_TRUESIZE).next_power_of_two() + SKB_STRUCT_TRUESIZE
}

/// The flow hash a qdisc classifies by (`skb_get_hash()` keyed by the qdisc's
/// perturbation / siphash key). A fixed integer mixer (murmur3's fmix32) over the flow id
/// and the key: deterministic per seed, and it reproduces hash-bucket collisions.
pub fn flow_hash(flow: u32, key: u32) -> u32 {
    let mut h = flow ^ key.rotate_left(16) ^ 0x9e37_79b9;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// `reciprocal_scale(val, ep_ro)`: maps a 32-bit hash onto `0..ep_ro` without division.
pub fn reciprocal_scale(val: u32, ep_ro: u32) -> u32 {
    ((val as u64 * ep_ro as u64) >> 32) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truesize_matches_selftest_arithmetic() {
        // 1400 B UDP payload + 8 UDP + 20 IP + 14 Ethernet = 1442 B frame.
        assert_eq!(truesize_for_len(1442), 2304);
        assert_eq!(212_992 / truesize_for_len(1442), 92);
        // 24 B payload: 66 B frame fits a 512 B kmalloc bucket.
        assert_eq!(truesize_for_len(66), 768);
    }

    /// The charges `darkbuf calibrate` tells the kernel builds apart by: 2304 bytes per
    /// segment with MAX_TCP_HEADER 256 (or 192), 4352 with 320.
    #[test]
    fn sndbuf_charge_per_segment() {
        assert_eq!(tcp_sndbuf_per_mss(1460, 192), 2304);
        assert_eq!(tcp_sndbuf_per_mss(1460, 256), 2304);
        assert_eq!(tcp_sndbuf_per_mss(1460, 320), 4352);
        assert_eq!(tcp_sndbuf_per_mss(536, 320), 2304);
    }

    #[test]
    fn set_ce_fails_on_not_ect() {
        let mut s = Skb::default();
        assert!(!s.set_ce());
        s.ecn = Skb::ECN_ECT0;
        assert!(s.set_ce());
        assert_eq!(s.ecn, Skb::ECN_CE);
    }
}
