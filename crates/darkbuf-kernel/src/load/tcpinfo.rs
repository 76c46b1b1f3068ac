//! `getsockopt(TCP_INFO)`: the sender's view of a flow, as `ss -ti` prints it, and the
//! receiver's `rcv_ssthresh` / `rcv_space`.
//!
//! The kernel fills `struct tcp_info` (include/uapi/linux/tcp.h) in `tcp_get_info()`
//! (net/ipv4/tcp.c) and copies `min(optlen, sizeof(info))` bytes, so an older kernel
//! returns a shorter struct. The fields are read by their offsets in the uapi layout
//! from the bytes the kernel actually returned: a field beyond the returned length is
//! `None`, never garbage. Offsets (bytes): `tcpi_snd_mss` 16, `tcpi_rcv_ssthresh` 64
//! (`tp->rcv_ssthresh`), `tcpi_rtt` 68 (srtt in µs, `tp->srtt_us >> 3`), `tcpi_snd_cwnd`
//! 80, `tcpi_rcv_space` 96 (`tp->rcvq_space.space`), `tcpi_total_retrans` 100,
//! `tcpi_pacing_rate` 104 (B/s, `sk_pacing_rate`), `tcpi_delivery_rate` 160 (B/s,
//! the last rate sample of `tcp_rate_gen()`), `tcpi_bytes_acked` 120,
//! `tcpi_reordering` 88 (`tp->reordering`), `tcpi_dsack_dups` 216 and
//! `tcpi_reord_seen` 220 (4.19+), `tcpi_total_rto` 240 (u16, 6.7+: the connection's
//! retransmission timeouts), `tcpi_min_rtt` 148 (µs, `tcp_min_rtt()`, 4.6+).

use std::io;
use std::os::fd::AsRawFd;

/// What darkbuf reads from one TCP_INFO.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TcpInfo {
    /// `tcpi_state` (1 = TCP_ESTABLISHED).
    pub state: u8,
    /// `tcpi_ca_state` (0 open, 1 disorder, 2 CWR, 3 recovery, 4 loss).
    pub ca_state: u8,
    pub snd_mss: u32,
    /// `tp->rcv_ssthresh`, bytes: the most the receiver may advertise for now.
    pub rcv_ssthresh: u32,
    /// Smoothed RTT, µs.
    pub srtt_us: u32,
    /// Congestion window, segments.
    pub snd_cwnd: u32,
    /// `tp->rcvq_space.space`, bytes: what the receiving application read in one
    /// receiver RTT, the measure receive-buffer autotuning grows `sk_rcvbuf` by.
    pub rcv_space: u32,
    /// Segments retransmitted over the connection's life (`tp->total_retrans`).
    pub total_retrans: u32,
    /// `sk_pacing_rate`, B/s (`~0` means unlimited); None on kernels before 4.0.
    pub pacing_rate: Option<u64>,
    /// `tcpi_bytes_acked`; None before 4.1.
    pub bytes_acked: Option<u64>,
    /// The last delivery-rate sample, B/s; None before 4.9.
    pub delivery_rate: Option<u64>,
    /// `tcpi_total_rto`: RTO timeouts over the connection's life; None before 6.7.
    pub total_rto: Option<u16>,
    /// `tp->reordering`: the reordering degree measured, segments (3 until one is).
    pub reordering: u32,
    /// `tp->dsack_dups` and `tp->reord_seen`: segments D-SACKed and reorderings
    /// detected over the connection's life; None before 4.19.
    pub dsack_dups: Option<u32>,
    pub reord_seen: Option<u32>,
    /// `tcpi_min_rtt`: `tcp_min_rtt()`, the windowed minimum RTT, µs (`~0` before the
    /// first sample); None before 4.6. What `tcp_tso_autosize()` sizes skbs by.
    pub min_rtt_us: Option<u32>,
}

/// Bytes darkbuf asks for: the whole uapi struct of 6.x (248 bytes from 6.7, 280 on
/// 6.18 with the AccECN counters; darkbuf reads up to byte 242).
pub const TCP_INFO_BUF: usize = 256;

fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    b.get(off..off + 2).map(|s| u16::from_ne_bytes(s.try_into().unwrap_or([0; 2])))
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    b.get(off..off + 4).map(|s| u32::from_ne_bytes(s.try_into().unwrap_or([0; 4])))
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    b.get(off..off + 8).map(|s| u64::from_ne_bytes(s.try_into().unwrap_or([0; 8])))
}

/// Parses the bytes TCP_INFO returned; None when even the original (2.6) fields up to
/// `tcpi_total_retrans` are missing.
pub fn parse_tcp_info(b: &[u8]) -> Option<TcpInfo> {
    Some(TcpInfo {
        state: *b.first()?,
        ca_state: *b.get(1)?,
        snd_mss: u32_at(b, 16)?,
        rcv_ssthresh: u32_at(b, 64)?,
        srtt_us: u32_at(b, 68)?,
        snd_cwnd: u32_at(b, 80)?,
        rcv_space: u32_at(b, 96)?,
        total_retrans: u32_at(b, 100)?,
        pacing_rate: u64_at(b, 104),
        bytes_acked: u64_at(b, 120),
        delivery_rate: u64_at(b, 160),
        total_rto: u16_at(b, 240),
        reordering: u32_at(b, 88)?,
        dsack_dups: u32_at(b, 216),
        reord_seen: u32_at(b, 220),
        min_rtt_us: u32_at(b, 148),
    })
}

/// `getsockopt(fd, IPPROTO_TCP, TCP_INFO)`.
pub fn tcp_info(fd: &impl AsRawFd) -> io::Result<TcpInfo> {
    let mut buf = [0u8; TCP_INFO_BUF];
    let mut len = TCP_INFO_BUF as libc::socklen_t;
    // SAFETY: buf is valid for `len` bytes; the kernel writes at most `len` and updates it.
    let rc = unsafe { libc::getsockopt(fd.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_INFO, buf.as_mut_ptr() as *mut libc::c_void, &mut len) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    parse_tcp_info(&buf[..(len as usize).min(TCP_INFO_BUF)])
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("TCP_INFO returned only {len} bytes")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tcp_info image with distinct values at the uapi offsets.
    fn image(len: usize) -> Vec<u8> {
        let mut b = vec![0u8; 248];
        b[0] = 1;
        b[1] = 3;
        b[16..20].copy_from_slice(&1448u32.to_ne_bytes());
        // Neighbours of the receiver's fields: tcpi_pmtu 60, tcpi_rcv_rtt 92.
        b[60..64].copy_from_slice(&1500u32.to_ne_bytes());
        b[64..68].copy_from_slice(&115_208u32.to_ne_bytes());
        b[68..72].copy_from_slice(&12_345u32.to_ne_bytes());
        b[80..84].copy_from_slice(&87u32.to_ne_bytes());
        b[92..96].copy_from_slice(&4_000u32.to_ne_bytes());
        b[96..100].copy_from_slice(&57_920u32.to_ne_bytes());
        b[100..104].copy_from_slice(&9u32.to_ne_bytes());
        b[104..112].copy_from_slice(&15_000_000u64.to_ne_bytes());
        b[120..128].copy_from_slice(&123_456_789u64.to_ne_bytes());
        b[160..168].copy_from_slice(&12_500_000u64.to_ne_bytes());
        b[88..92].copy_from_slice(&5u32.to_ne_bytes());
        b[216..220].copy_from_slice(&11u32.to_ne_bytes());
        b[220..224].copy_from_slice(&13u32.to_ne_bytes());
        b[240..242].copy_from_slice(&7u16.to_ne_bytes());
        b[148..152].copy_from_slice(&41u32.to_ne_bytes());
        b.truncate(len);
        b
    }

    #[test]
    fn full_struct() {
        let i = parse_tcp_info(&image(248)).unwrap();
        assert_eq!(
            i,
            TcpInfo {
                state: 1,
                ca_state: 3,
                snd_mss: 1448,
                rcv_ssthresh: 115_208,
                srtt_us: 12_345,
                snd_cwnd: 87,
                rcv_space: 57_920,
                total_retrans: 9,
                pacing_rate: Some(15_000_000),
                bytes_acked: Some(123_456_789),
                delivery_rate: Some(12_500_000),
                total_rto: Some(7),
                reordering: 5,
                dsack_dups: Some(11),
                reord_seen: Some(13),
                min_rtt_us: Some(41),
            }
        );
    }

    #[test]
    fn shorter_structs_of_older_kernels() {
        // 6.2-6.6 (232 bytes, up to tcpi_rehash): no tcpi_total_rto.
        let i = parse_tcp_info(&image(232)).unwrap();
        assert_eq!((i.delivery_rate, i.total_rto, i.reord_seen), (Some(12_500_000), None, Some(13)));
        // 4.18 (up to tcpi_bytes_retrans, 216 bytes): no D-SACK or reordering counts.
        let i = parse_tcp_info(&image(216)).unwrap();
        assert_eq!((i.dsack_dups, i.reord_seen, i.reordering), (None, None, 5));
        // 4.6 (up to tcpi_data_segs_out, 160 bytes): tcpi_min_rtt, no delivery rate.
        let i = parse_tcp_info(&image(160)).unwrap();
        assert_eq!((i.min_rtt_us, i.delivery_rate), (Some(41), None));
        // Before 4.6 (up to tcpi_segs_in, 144 bytes): no min RTT, no delivery rate.
        let i = parse_tcp_info(&image(144)).unwrap();
        assert_eq!((i.pacing_rate, i.bytes_acked, i.delivery_rate, i.min_rtt_us), (Some(15_000_000), Some(123_456_789), None, None));
        // 2.6 (104 bytes, up to tcpi_total_retrans): no pacing rate.
        let i = parse_tcp_info(&image(104)).unwrap();
        assert_eq!((i.total_retrans, i.pacing_rate), (9, None));
        // The receiver's fields are in that first struct.
        assert_eq!((i.rcv_ssthresh, i.rcv_space), (115_208, 57_920));
        // Cut inside tcpi_total_retrans: unusable.
        assert_eq!(parse_tcp_info(&image(103)), None);
        assert_eq!(parse_tcp_info(&[]), None);
    }

    proptest::proptest! {
        /// Whatever bytes and length the kernel returns, parsing never panics, and a
        /// field is present exactly when the bytes cover it.
        #[test]
        fn any_length_parses_safely(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            match parse_tcp_info(&bytes) {
                None => proptest::prop_assert!(bytes.len() < 104),
                Some(i) => {
                    proptest::prop_assert!(bytes.len() >= 104);
                    proptest::prop_assert_eq!(i.pacing_rate.is_some(), bytes.len() >= 112);
                    proptest::prop_assert_eq!(i.delivery_rate.is_some(), bytes.len() >= 168);
                    proptest::prop_assert_eq!(i.min_rtt_us.is_some(), bytes.len() >= 152);
                }
            }
        }
    }

    #[test]
    fn a_real_socket_answers() {
        // Loopback, no privileges: a connected pair reports an established state.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let i = tcp_info(&c).unwrap();
        assert_eq!(i.state, 1);
        assert!(i.snd_cwnd >= 1);
        assert!(i.snd_mss > 0);
    }
}
