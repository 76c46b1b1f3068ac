//! Header sizes and protocol constants: what a frame looks like on the wire, as
//! smoltcp's `wire/`. The simulator carries no header bytes, only these sizes, so a
//! device, the path and the TCP code agree on a segment's length by importing them
//! from here. Like `id.rs`, this is the bottom floor: it imports nothing from the crate.

/// `ETH_HLEN` (include/uapi/linux/if_ether.h): destination, source, EtherType.
pub const ETH_HLEN: u32 = 14;
/// `ETH_ZLEN`: frames are padded to 60 bytes (plus FCS: 64).
pub const ETH_ZLEN: u32 = 60;
/// Bytes on the wire per frame beyond the L2 frame: FCS 4, preamble + SFD 8,
/// inter-frame gap 12 (IEEE 802.3).
pub const WIRE_OVERHEAD: u32 = 24;
/// `sizeof(struct iphdr)`: IPv4 without options.
pub const IPV4_HLEN: u32 = 20;
/// `sizeof(struct tcphdr)`: TCP without options.
pub const TCP_HLEN: u32 = 20;
/// `TCPOLEN_TSTAMP_ALIGNED`: the timestamp option with its two NOPs, on every segment
/// of a connection that negotiated it (Linux does by default, `tcp_timestamps = 1`).
pub const TCPOLEN_TSTAMP_ALIGNED: u32 = 12;
/// The headers of every TCP segment: Ethernet 14 + IPv4 20 + TCP 20 + timestamps 12.
pub const TCP_HDR: u32 = ETH_HLEN + IPV4_HLEN + TCP_HLEN + TCPOLEN_TSTAMP_ALIGNED;

/// `TCPHDR_SYN` (include/net/tcp.h): the flag bits the model reads, the kernel's.
pub const TCPHDR_SYN: u8 = 0x02;
/// `TCPHDR_CWR`: the sender's window reduction, announced to a receiver echoing ECE.
pub const TCPHDR_CWR: u8 = 0x80;

#[cfg(test)]
mod tests {
    #[test]
    fn tcp_headers_are_66_bytes() {
        // An MSS of 1448 fills a 1514-byte frame (MTU 1500 + Ethernet).
        assert_eq!(super::TCP_HDR, 66);
        assert_eq!(1448 + super::TCP_HDR, 1500 + super::ETH_HLEN);
    }
}
