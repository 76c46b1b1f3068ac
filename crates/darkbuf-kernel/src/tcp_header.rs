//! The running kernel's `MAX_TCP_HEADER`, as the send buffer's autotuning reveals it
//! (for `darkbuf calibrate`'s profile key `max_tcp_header`), and what a TCP skb's
//! truesize carries beyond its payload (`tcp_skb_overhead`, [`measure_skb_overhead`]).
//!
//! `tcp_init_buffer_space()` sets a new connection's `sk_sndbuf` to
//! `2 x TCP_INIT_CWND x per_mss` (reno and cubic), with `tcp_sndbuf_expand()`'s
//! `per_mss = roundup_pow_of_two(mss_clamp + MAX_TCP_HEADER + shinfo) + sk_buff`
//! (net/ipv4/tcp_input.c). A loopback connection with `TCP_MAXSEG` 1460 on both ends
//! has the MSS of an Ethernet path, and `SO_SNDBUF` after `connect()` gives `per_mss`:
//! 4352 where `MAX_TCP_HEADER` is 320 (the distributions' kernels), 2304 where it is at
//! most 268 (256 without `CONFIG_WLAN`). No privileges and no namespace are needed.

use crate::load::sys;
use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::os::fd::AsRawFd;

/// The MSS an Ethernet path at MTU 1500 gives (`mss_clamp`).
const MSS_CLAMP: u32 = 1460;

/// `max_tcp_header` from a new connection's `sk_sndbuf`, or why it gives none.
///
/// `MAX_TCP_HEADER` is `L1_CACHE_ALIGN(128 + MAX_HEADER)` with `MAX_HEADER` 32 to 176
/// by configuration: 192, 256 or 320. A charge of 2304 bytes per segment is 192 or
/// 256, which give the simulator the same skbs and buffers (256 is written); 4352 is
/// 320.
pub fn max_tcp_header_of(sndbuf: u32) -> Result<u32, String> {
    const TCP_INIT_CWND: u32 = 10;
    let per_mss = sndbuf / (2 * TCP_INIT_CWND);
    if !sndbuf.is_multiple_of(2 * TCP_INIT_CWND) {
        return Err(format!("sk_sndbuf {sndbuf} after connect() is not 2 x 10 segments' charge (tcp_wmem[1] or [2] decided it?)"));
    }
    for header in [256, 320] {
        if darkbuf_model::skb::tcp_sndbuf_per_mss(MSS_CLAMP, header) == per_mss {
            return Ok(header);
        }
    }
    Err(format!("a charge of {per_mss} bytes per segment fits no MAX_TCP_HEADER of 192, 256 or 320 (x86_64 sizes assumed)"))
}

/// Opens a loopback connection with an Ethernet MSS and reno (factor 2), and returns
/// the client's `sk_sndbuf` right after `connect()`.
pub fn initial_sndbuf() -> io::Result<u32> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    sys::setsockopt_int(&listener, libc::IPPROTO_TCP, libc::TCP_MAXSEG, MSS_CLAMP as libc::c_int, "TCP_MAXSEG")?;
    let port = listener.local_addr()?.port();
    let s = sys::socket(libc::AF_INET, libc::SOCK_STREAM, 0)?;
    sys::setsockopt_int(&s, libc::IPPROTO_TCP, libc::TCP_MAXSEG, MSS_CLAMP as libc::c_int, "TCP_MAXSEG")?;
    let reno = b"reno";
    // SAFETY: reno is valid for its length; TCP_CONGESTION takes a name without NUL.
    sys::cvt(unsafe { libc::setsockopt(s.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_CONGESTION, reno.as_ptr() as *const libc::c_void, reno.len() as libc::socklen_t) })?;
    sys::connect(&s, Ipv4Addr::LOCALHOST, port)?;
    let sndbuf = sys::getsockopt_int(&s, libc::SOL_SOCKET, libc::SO_SNDBUF)?;
    drop(listener);
    Ok(sndbuf.max(0) as u32)
}

/// The running kernel's `max_tcp_header`, or why it could not be measured.
pub fn measure() -> Result<u32, String> {
    let sndbuf = initial_sndbuf().map_err(|e| format!("a loopback TCP connection failed: {e}"))?;
    max_tcp_header_of(sndbuf)
}

/// `SO_MEMINFO` (asm-generic/socket.h, x86_64's): the socket's `sk_meminfo` array.
const SO_MEMINFO: libc::c_int = 55;
/// `SK_MEMINFO_VARS`: its length (linux/sock_diag.h, since 4.x: nine counters).
const SK_MEMINFO_VARS: usize = libc::SK_MEMINFO_DROPS as usize + 1;

/// `sk_wmem_queued` of a socket (`SK_MEMINFO_WMEM_QUEUED` of `SO_MEMINFO`).
fn wmem_queued(fd: &impl AsRawFd) -> io::Result<u32> {
    let mut info = [0u32; SK_MEMINFO_VARS];
    let mut len = std::mem::size_of_val(&info) as libc::socklen_t;
    // SAFETY: valid out-pointers of the declared size.
    sys::cvt(unsafe { libc::getsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, SO_MEMINFO, info.as_mut_ptr() as *mut libc::c_void, &mut len) })?;
    Ok(info[libc::SK_MEMINFO_WMEM_QUEUED as usize])
}

/// What a TCP skb's truesize carries beyond its payload on the running kernel: the
/// growth of `sk_wmem_queued` when a corked connection (`TCP_CORK`: the byte stays in
/// the write queue) writes one byte into a new skb, less that byte.
/// `tcp_sendmsg_locked()` charges the new skb's `truesize` (`SKB_TRUESIZE()` of the head
/// `tcp_stream_alloc_skb()` allocated) and then each byte it copies.
pub fn measure_skb_overhead() -> Result<u32, String> {
    let fail = |e: io::Error| format!("a corked loopback TCP write failed: {e}");
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(fail)?;
    let port = listener.local_addr().map_err(fail)?.port();
    let s = sys::socket(libc::AF_INET, libc::SOCK_STREAM, 0).map_err(fail)?;
    sys::connect(&s, Ipv4Addr::LOCALHOST, port).map_err(fail)?;
    sys::setsockopt_int(&s, libc::IPPROTO_TCP, libc::TCP_CORK, 1, "TCP_CORK").map_err(fail)?;
    let before = wmem_queued(&s).map_err(fail)?;
    // SAFETY: one valid byte; MSG_NOSIGNAL: no SIGPIPE.
    let sent = sys::cvt(unsafe { libc::send(s.as_raw_fd(), b"x".as_ptr() as *const libc::c_void, 1, libc::MSG_NOSIGNAL) } as libc::c_int).map_err(fail)?;
    let after = wmem_queued(&s).map_err(fail)?;
    drop(listener);
    skb_overhead_of(before, after, sent as u32)
}

/// The overhead from `sk_wmem_queued` before and after writing `sent` bytes into one new
/// skb; a growth outside [256, 4096] bytes is no TCP skb of a kernel this knows.
pub fn skb_overhead_of(before: u32, after: u32, sent: u32) -> Result<u32, String> {
    let grew = after.checked_sub(before).and_then(|g| g.checked_sub(sent));
    match grew {
        Some(o) if (256..=4096).contains(&o) => Ok(o),
        _ => Err(format!("sk_wmem_queued went from {before} to {after} for {sent} byte(s) written: not one new skb's charge")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The development VM's 46080 (2 x 10 x 2304) and a distribution's 87040
    /// (2 x 10 x 4352); what no MAX_TCP_HEADER gives is refused.
    #[test]
    fn the_header_follows_from_the_first_buffer() {
        assert_eq!(max_tcp_header_of(46_080), Ok(256));
        assert_eq!(max_tcp_header_of(87_040), Ok(320));
        assert!(max_tcp_header_of(16_384).is_err());
        assert!(max_tcp_header_of(2 * 10 * 3000).is_err());
        // 2 x 10 x (1024 + 256): under one MSS; 2 x 10 x (8192 + 256).
        assert!(max_tcp_header_of(25_600).is_err());
        assert!(max_tcp_header_of(168_960).is_err());
        assert!(max_tcp_header_of(100).is_err());
    }

    /// This kernel, on loopback: one of the two builds.
    #[test]
    fn the_running_kernel_gives_a_header() {
        let h = measure().expect("measures");
        assert!(h == 256 || h == 320, "{h}");
    }

    /// 6.1's kmalloc-1k head (1280 + 1 byte written), 6.3+'s small-head cache with
    /// MAX_TCP_HEADER 256 (832); what is no skb's charge is refused.
    #[test]
    fn the_overhead_is_the_growth_less_the_payload() {
        assert_eq!(skb_overhead_of(0, 1281, 1), Ok(1280));
        assert_eq!(skb_overhead_of(100, 933, 1), Ok(832));
        assert!(skb_overhead_of(0, 1, 1).is_err());
        assert!(skb_overhead_of(500, 100, 1).is_err());
        assert!(skb_overhead_of(0, 70_000, 1).is_err());
    }

    /// This kernel: an `sk_buff` and a head, from a kmalloc-512 head's 768 (MAX_TCP_HEADER
    /// 192 before 6.3) to a kmalloc-2k head's 2304.
    #[test]
    fn the_running_kernel_gives_an_overhead() {
        let o = measure_skb_overhead().expect("measures");
        assert!((768..=2304).contains(&o), "{o}");
    }
}
