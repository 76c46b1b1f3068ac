//! A UDP echo server for the UDP prober: every datagram goes back to its sender
//! unchanged (recvmmsg batch in, sendmmsg batch out, non-blocking sends).

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::netns::spawn_tool;
use super::sys;

/// Hard bound on the lifetime of an echo server started by `spawn_udp_echo`
/// (which has no duration parameter): it ends on `stop` or after this long.
pub const ECHO_MAX_LIFETIME: Duration = Duration::from_secs(3600);
const ECHO_BATCH: usize = 32;
/// Largest UDP payload, so probes of any size are echoed whole.
const ECHO_SLOT: usize = 65_536;

/// An echo server with explicit bounds. `Default`: caller's namespace, 0.0.0.0,
/// port 0 (kernel-chosen), ECHO_MAX_LIFETIME, no packet cap.
#[derive(Clone, Debug)]
pub struct EchoSpec {
    pub netns: String,
    pub bind: Ipv4Addr,
    pub port: u16,
    pub duration: Duration,
    /// Stop after echoing this many datagrams.
    pub max_packets: u64,
}

impl Default for EchoSpec {
    fn default() -> Self {
        EchoSpec { netns: String::new(), bind: Ipv4Addr::UNSPECIFIED, port: 0, duration: ECHO_MAX_LIFETIME, max_packets: u64::MAX }
    }
}

/// Starts a UDP echo server bound to `bind:port` in `netns`; returns once it is
/// bound. The join result is the number of datagrams echoed. Runs until `stop`
/// (or ECHO_MAX_LIFETIME).
pub fn spawn_udp_echo(netns: String, bind: Ipv4Addr, port: u16, stop: Arc<AtomicBool>) -> JoinHandle<io::Result<u64>> {
    spawn_udp_echo_bound(EchoSpec { netns, bind, port, ..EchoSpec::default() }, None, stop).1
}

/// Echo server with explicit bounds, pinned to `cpu`; also returns the bound port
/// (None when setup failed).
pub fn spawn_udp_echo_bound(spec: EchoSpec, cpu: Option<usize>, stop: Arc<AtomicBool>) -> (Option<u16>, JoinHandle<io::Result<u64>>) {
    let netns = spec.netns.clone();
    spawn_tool("darkbuf-echo", netns, cpu, move |ready| {
        let sock = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
        sys::bind(&sock, spec.bind, spec.port)?;
        sys::set_timeout(&sock, libc::SO_RCVTIMEO, Duration::from_millis(50))?;
        let port = sys::local_addr(&sock)?.1;

        let mut bufs = vec![0u8; ECHO_BATCH * ECHO_SLOT];
        let base = bufs.as_mut_ptr();
        // SAFETY: all-zero sockaddr_in / mmsghdr are valid values.
        let mut names: Vec<libc::sockaddr_in> = (0..ECHO_BATCH).map(|_| unsafe { std::mem::zeroed() }).collect();
        let riovs: Vec<libc::iovec> = (0..ECHO_BATCH)
            // SAFETY: i * ECHO_SLOT < bufs.len().
            .map(|i| libc::iovec { iov_base: unsafe { base.add(i * ECHO_SLOT) } as *mut libc::c_void, iov_len: ECHO_SLOT })
            .collect();
        let mut siovs = riovs.clone();
        let mut rmsgs: Vec<libc::mmsghdr> = (0..ECHO_BATCH).map(|_| unsafe { std::mem::zeroed() }).collect();
        let mut smsgs: Vec<libc::mmsghdr> = (0..ECHO_BATCH).map(|_| unsafe { std::mem::zeroed() }).collect();
        for i in 0..ECHO_BATCH {
            rmsgs[i].msg_hdr.msg_iov = &riovs[i] as *const libc::iovec as *mut libc::iovec;
            rmsgs[i].msg_hdr.msg_iovlen = 1;
            rmsgs[i].msg_hdr.msg_name = &mut names[i] as *mut libc::sockaddr_in as *mut libc::c_void;
            smsgs[i].msg_hdr.msg_iov = &mut siovs[i] as *mut libc::iovec;
            smsgs[i].msg_hdr.msg_iovlen = 1;
            smsgs[i].msg_hdr.msg_name = &mut names[i] as *mut libc::sockaddr_in as *mut libc::c_void;
        }
        let t0 = sys::mono_ns();
        let deadline = t0.saturating_add(sys::dur_ns(spec.duration));
        let mut echoed: u64 = 0;
        ready.signal(port);
        while echoed < spec.max_packets && !stop.load(Ordering::Relaxed) && sys::mono_ns() < deadline {
            for m in rmsgs.iter_mut() {
                m.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            }
            // SAFETY: the message arrays point at live buffers/names owned by this frame.
            let r = unsafe {
                libc::recvmmsg(sock.as_raw_fd(), rmsgs.as_mut_ptr(), ECHO_BATCH as libc::c_uint, libc::MSG_WAITFORONE, std::ptr::null_mut())
            };
            if r < 0 {
                match sys::errno() {
                    libc::EAGAIN | libc::EINTR | libc::ENOMEM | libc::ECONNREFUSED => continue,
                    _ => return Err(io::Error::last_os_error()),
                }
            }
            let n = (r as usize).min((spec.max_packets - echoed).min(ECHO_BATCH as u64) as usize);
            for i in 0..n {
                siovs[i].iov_len = (rmsgs[i].msg_len as usize).min(ECHO_SLOT);
                smsgs[i].msg_hdr.msg_namelen = rmsgs[i].msg_hdr.msg_namelen;
            }
            let mut off = 0;
            while off < n {
                // SAFETY: as above; smsgs[off..n] are initialised.
                let s = unsafe { libc::sendmmsg(sock.as_raw_fd(), smsgs.as_mut_ptr().add(off), (n - off) as libc::c_uint, libc::MSG_DONTWAIT) };
                if s > 0 {
                    off += s as usize;
                    echoed += s as u64;
                } else if sys::errno() == libc::EINTR {
                    continue;
                } else {
                    off += 1; // this echo is lost, like a drop on the return path
                }
            }
        }
        Ok(echoed)
    })
}
