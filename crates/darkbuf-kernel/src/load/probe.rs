//! The latency prober: ICMP echo over a raw socket, or UDP to `spawn_udp_echo`.
//!
//! Why not ping: iputils silently retries a probe whose send failed with ENOBUFS
//! (a full qdisc) and then reports 0 % loss (real-kernel-notes §4). Here:
//! - probe k is due at `start + k * interval` (absolute schedule; a prober that
//!   fell behind sends the overdue probes at once);
//! - sends are non-blocking (MSG_DONTWAIT) with IP_RECVERR set, so a full send
//!   buffer (EAGAIN) or a qdisc drop at enqueue (ENOBUFS; raw and UDP sockets
//!   hide it without IP_RECVERR) fails the send: that probe is counted in
//!   `unsendable`, recorded as lost, and never retried;
//! - a reply is matched by the ICMP id (or a per-prober token for UDP) plus the
//!   probe index and send stamp carried in the payload; a reply later than
//!   `timeout` counts as lost (`late_replies`);
//! - RTT = receive time - send time on CLOCK_MONOTONIC. The receive time is the
//!   kernel's SO_TIMESTAMPNS stamp (taken when the skb was received, so the
//!   prober's own wake-up latency is excluded) converted to CLOCK_MONOTONIC with
//!   the REALTIME-MONOTONIC offset read right after the receive; when the stamp
//!   is missing or implausible (a clock step) the user-space CLOCK_MONOTONIC read
//!   after the receive is used instead.
//! - On `stop` no further probes are sent; replies to probes already sent are
//!   awaited up to `timeout` after the last send, then the prober returns.
//!
//! Payload layout: ICMP data = `index u64 | t_send u64` (LE) then filler, at least
//! 16 bytes; UDP = `token u64 | index u64 | t_send u64`, at least 24 bytes. A
//! smaller `payload` is raised to these minimums.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::netns::spawn_tool;
use super::payload::inet_checksum;
use super::sys;

/// `ICMP_FILTER` socket option of raw ICMP sockets (include/uapi/linux/icmp.h).
const ICMP_FILTER: libc::c_int = 1;
const ICMP_ECHOREPLY: u8 = 0;
const ICMP_ECHO: u8 = 8;
const ICMP_MIN_DATA: usize = 16;
const UDP_MIN_DATA: usize = 24;
const MAX_IP_PAYLOAD: usize = 65_507;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeKind {
    /// ICMP echo request through a raw IPPROTO_ICMP socket (needs CAP_NET_RAW).
    Icmp,
    /// UDP datagrams to an echo server (`spawn_udp_echo`) on `port`.
    UdpEcho { port: u16 },
}

/// `Default`: ICMP to 127.0.0.1 from the caller's namespace, 100 probes every
/// 10 ms, 1 s timeout, 56-byte payload (ping's default).
#[derive(Clone, Debug)]
pub struct ProbeSpec {
    pub netns: String,
    pub dst: Ipv4Addr,
    pub kind: ProbeKind,
    pub interval: Duration,
    /// Number of probes to send (hard bound).
    pub count: u64,
    /// A probe without a reply within this time is lost.
    pub timeout: Duration,
    /// ICMP data / UDP payload bytes (raised to 16 / 24).
    pub payload: usize,
}

impl Default for ProbeSpec {
    fn default() -> Self {
        ProbeSpec {
            netns: String::new(),
            dst: Ipv4Addr::LOCALHOST,
            kind: ProbeKind::Icmp,
            interval: Duration::from_millis(10),
            count: 100,
            timeout: Duration::from_secs(1),
            payload: 56,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProbeSample {
    /// Send time, ns since the prober started.
    pub t_send_ns: u64,
    /// None = lost or unsendable.
    pub rtt_ns: Option<u64>,
    /// Its send failed (`unsendable`).
    pub unsendable: bool,
}

#[derive(Clone, Debug, Default)]
pub struct ProbeResult {
    /// One sample per probe, in send order.
    pub samples: Vec<ProbeSample>,
    /// CLOCK_MONOTONIC ns at which `t_send_ns` is 0.
    pub start_mono_ns: u64,
    /// Replies that came after `timeout` (their probes count as lost).
    pub late_replies: u64,
    /// Replies timed with the kernel's SO_TIMESTAMPNS receive stamp (the rest
    /// with a user-space clock read).
    pub kernel_stamped: u64,
    /// errno of the last failed send.
    pub last_send_errno: Option<i32>,
}

impl ProbeResult {
    /// Received RTTs (ns), in send order.
    pub fn rtts(&self) -> impl Iterator<Item = u64> + '_ {
        self.samples.iter().filter_map(|s| s.rtt_ns)
    }
    /// Probes whose send failed (EAGAIN, ENOBUFS, ...): lost, never retried.
    pub fn unsendable(&self) -> u64 {
        self.samples.iter().filter(|s| s.unsendable).count() as u64
    }
    /// Lost probes (unsendable included).
    pub fn lost(&self) -> u64 {
        self.samples.iter().filter(|s| s.rtt_ns.is_none()).count() as u64
    }
}

/// Extra prober settings. `tos`/`priority` 0 = not set (IP_TOS also sets the
/// socket priority from the TOS, see `FloodSpec::priority`).
#[derive(Clone, Debug, Default)]
pub struct ProbeOpts {
    pub cpu: Option<usize>,
    pub tos: u8,
    pub priority: u32,
}

pub fn spawn_prober(spec: ProbeSpec, stop: Arc<AtomicBool>) -> JoinHandle<io::Result<ProbeResult>> {
    spawn_prober_with(spec, ProbeOpts::default(), stop)
}

/// `spawn_prober` with CPU pinning and TOS/priority marking (e.g. TOS 0x10 for
/// pfifo_fast band 0).
pub fn spawn_prober_with(spec: ProbeSpec, opts: ProbeOpts, stop: Arc<AtomicBool>) -> JoinHandle<io::Result<ProbeResult>> {
    let netns = spec.netns.clone();
    spawn_tool("darkbuf-probe", netns, opts.cpu, move |ready| {
        let mut p = Prober::new(&spec, &opts)?;
        ready.signal(());
        p.run(&spec, &stop)
    })
    .1
}

static PROBER_SERIAL: AtomicU32 = AtomicU32::new(1);

struct Prober {
    sock: OwnedFd,
    icmp: bool,
    /// ICMP identifier (ICMP) or the low bits of the token (UDP).
    id: u16,
    token: u64,
    sbuf: Vec<u8>,
    rbuf: Vec<u8>,
}

fn tokens() -> (u16, u64) {
    let serial = PROBER_SERIAL.fetch_add(1, Ordering::Relaxed);
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() } as u32;
    let id = (tid as u16) ^ ((serial as u16).rotate_left(8));
    let token = ((tid as u64) << 32 | serial as u64) ^ sys::mono_ns().rotate_left(17) ^ 0x6462_6b70_0000_0000;
    (id, token)
}

impl Prober {
    fn new(spec: &ProbeSpec, opts: &ProbeOpts) -> io::Result<Prober> {
        let (id, token) = tokens();
        let (sock, icmp, len) = match spec.kind {
            ProbeKind::Icmp => {
                let s = sys::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_ICMP)
                    .map_err(|e| io::Error::new(e.kind(), format!("raw ICMP socket (needs CAP_NET_RAW): {e}")))?;
                // Let only echo replies through (a set bit filters that type out).
                let mask: u32 = !(1u32 << ICMP_ECHOREPLY);
                sys::setsockopt(&s, libc::SOL_RAW, ICMP_FILTER, mask)?;
                (s, true, 8 + spec.payload.clamp(ICMP_MIN_DATA, MAX_IP_PAYLOAD - 8))
            }
            ProbeKind::UdpEcho { port } => {
                if port == 0 {
                    return Err(io::Error::new(io::ErrorKind::InvalidInput, "probe: UDP echo port must not be 0"));
                }
                let s = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
                (s, false, spec.payload.clamp(UDP_MIN_DATA, MAX_IP_PAYLOAD))
            }
        };
        if opts.tos != 0 {
            sys::setsockopt_int(&sock, libc::IPPROTO_IP, libc::IP_TOS, opts.tos as libc::c_int, "IP_TOS")?;
        }
        if opts.priority != 0 {
            sys::setsockopt_int(&sock, libc::SOL_SOCKET, libc::SO_PRIORITY, opts.priority.min(i32::MAX as u32) as libc::c_int, "SO_PRIORITY")?;
        }
        sys::setsockopt_int(&sock, libc::IPPROTO_IP, libc::IP_RECVERR, 1, "IP_RECVERR")?;
        // Best effort: without it replies are timed in user space.
        let _ = sys::setsockopt_int(&sock, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1, "SO_TIMESTAMPNS");
        let port = match spec.kind {
            ProbeKind::Icmp => 0,
            ProbeKind::UdpEcho { port } => port,
        };
        // connect(): send() needs no address, and raw/UDP sockets then only accept
        // packets from `dst`.
        sys::connect(&sock, spec.dst, port)?;

        let mut sbuf = vec![0u8; len];
        for (i, b) in sbuf.iter_mut().enumerate() {
            *b = (i & 0xff) as u8;
        }
        if icmp {
            sbuf[0] = ICMP_ECHO;
            sbuf[1] = 0;
            sbuf[4..6].copy_from_slice(&id.to_be_bytes());
        } else {
            sbuf[0..8].copy_from_slice(&token.to_le_bytes());
        }
        // Room for the largest reply plus an IP header with options.
        let rbuf = vec![0u8; len + 64];
        Ok(Prober { sock, icmp, id, token, sbuf, rbuf })
    }

    /// Writes index/stamp (and the ICMP seq/checksum) into the send buffer.
    fn fill(&mut self, index: u64, t_send: u64) {
        if self.icmp {
            self.sbuf[6..8].copy_from_slice(&(index as u16).to_be_bytes());
            self.sbuf[8..16].copy_from_slice(&index.to_le_bytes());
            self.sbuf[16..24].copy_from_slice(&t_send.to_le_bytes());
            self.sbuf[2..4].copy_from_slice(&[0, 0]);
            let c = inet_checksum(&self.sbuf);
            self.sbuf[2..4].copy_from_slice(&c.to_be_bytes());
        } else {
            self.sbuf[8..16].copy_from_slice(&index.to_le_bytes());
            self.sbuf[16..24].copy_from_slice(&t_send.to_le_bytes());
        }
    }

    fn run(&mut self, spec: &ProbeSpec, stop: &AtomicBool) -> io::Result<ProbeResult> {
        let t0 = sys::mono_ns();
        let interval = sys::dur_ns(spec.interval);
        let timeout = sys::dur_ns(spec.timeout);
        let cap = spec.count.min(1 << 20) as usize;
        let mut res = ProbeResult { start_mono_ns: t0, samples: Vec::with_capacity(cap), ..ProbeResult::default() };
        // Absolute send stamp per probe; 0 = not sent.
        let mut sent_at: Vec<u64> = Vec::with_capacity(cap);
        let mut next: u64 = 0;
        let mut outstanding: u64 = 0;
        let mut last_send: u64 = t0;
        let mut stopping = false;
        let fd = self.sock.as_raw_fd();
        loop {
            let now = sys::mono_ns();
            if !stopping && stop.load(Ordering::Relaxed) {
                stopping = true;
            }
            let sending = !stopping && next < spec.count;
            let due = t0.saturating_add(next.saturating_mul(interval));
            if sending && now >= due {
                let ts = sys::mono_ns();
                self.fill(next, ts);
                let mut retried = false;
                let ok = loop {
                    // SAFETY: sbuf is a valid buffer of the given length.
                    let r = unsafe { libc::send(fd, self.sbuf.as_ptr() as *const libc::c_void, self.sbuf.len(), libc::MSG_DONTWAIT) };
                    if r >= 0 {
                        break true;
                    }
                    let e = sys::errno();
                    if e == libc::EINTR {
                        continue;
                    }
                    // A pending socket error (sk_err, set by an ICMP error about an
                    // earlier probe) fails this send without sending it: try once
                    // more right away. A second failure is this probe's own.
                    if !retried && is_pending_sock_error(e) {
                        retried = true;
                        continue;
                    }
                    res.last_send_errno = Some(e);
                    break false;
                };
                res.samples.push(ProbeSample { t_send_ns: ts - t0, rtt_ns: None, unsendable: !ok });
                if ok {
                    sent_at.push(ts);
                    outstanding += 1;
                    last_send = ts;
                } else {
                    sent_at.push(0);
                }
                next += 1;
                continue;
            }
            let wait_end = if sending {
                due
            } else {
                if outstanding == 0 || now >= last_send.saturating_add(timeout) {
                    break;
                }
                last_send.saturating_add(timeout)
            };
            let wait = wait_end.saturating_sub(now).min(50_000_000);
            let rev = sys::poll_one(fd, libc::POLLIN, wait)?;
            if rev & libc::POLLERR != 0 {
                self.drain_errqueue();
            }
            if rev & libc::POLLIN != 0 {
                self.drain_replies(&mut res, &sent_at, &mut outstanding, timeout)?;
            }
        }
        Ok(res)
    }

    /// Discards queued ICMP errors (IP_RECVERR queues them; an undrained error
    /// queue would keep poll() returning POLLERR).
    fn drain_errqueue(&mut self) {
        for _ in 0..1024 {
            // SAFETY: rbuf is valid for its length; zeroed msghdr with one iovec.
            let r = unsafe {
                let mut iov = libc::iovec { iov_base: self.rbuf.as_mut_ptr() as *mut libc::c_void, iov_len: self.rbuf.len() };
                let mut ctl = [0u64; 32];
                let mut mh: libc::msghdr = std::mem::zeroed();
                mh.msg_iov = &mut iov;
                mh.msg_iovlen = 1;
                mh.msg_control = ctl.as_mut_ptr() as *mut libc::c_void;
                mh.msg_controllen = std::mem::size_of_val(&ctl) as _;
                libc::recvmsg(self.sock.as_raw_fd(), &mut mh, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT)
            };
            if r < 0 {
                return;
            }
        }
    }

    fn drain_replies(&mut self, res: &mut ProbeResult, sent_at: &[u64], outstanding: &mut u64, timeout: u64) -> io::Result<()> {
        for _ in 0..4096 {
            let mut ctl = [0u64; 8];
            let mut iov = libc::iovec { iov_base: self.rbuf.as_mut_ptr() as *mut libc::c_void, iov_len: self.rbuf.len() };
            // SAFETY: rbuf/ctl/iov are valid for their lengths and outlive `mh`'s use.
            let (r, mh) = unsafe {
                let mut mh: libc::msghdr = std::mem::zeroed();
                mh.msg_iov = &mut iov;
                mh.msg_iovlen = 1;
                mh.msg_control = ctl.as_mut_ptr() as *mut libc::c_void;
                mh.msg_controllen = std::mem::size_of_val(&ctl) as _;
                let r = libc::recvmsg(self.sock.as_raw_fd(), &mut mh, libc::MSG_DONTWAIT);
                (r, mh)
            };
            if r < 0 {
                match sys::errno() {
                    libc::EAGAIN | libc::EINTR => return Ok(()),
                    // A pending socket error (ICMP unreachable, ...) reported once: skip it.
                    e if is_pending_sock_error(e) || e == libc::ENOBUFS || e == libc::ENOMEM => {
                        self.drain_errqueue();
                        continue;
                    }
                    _ => return Err(io::Error::last_os_error()),
                }
            }
            let now_user = sys::mono_ns();
            let kstamp = kernel_rx_stamp(&mh);
            let off_real_mono = sys::real_ns().wrapping_sub(sys::mono_ns());
            let len = (r as usize).min(self.rbuf.len());
            let Some((index, t_send)) = self.parse_reply(&self.rbuf[..len]) else { continue };
            let Some(&sent) = sent_at.get(index as usize) else { continue };
            if sent == 0 || sent != t_send {
                continue;
            }
            let Some(sample) = res.samples.get_mut(index as usize) else { continue };
            if sample.rtt_ns.is_some() {
                continue; // duplicate
            }
            let (rx, by_kernel) = match kstamp {
                Some(k) => {
                    let m = k.wrapping_sub(off_real_mono);
                    if m >= sent && m <= now_user {
                        (m, true)
                    } else {
                        (now_user, false)
                    }
                }
                None => (now_user, false),
            };
            let rtt = rx.saturating_sub(sent);
            if rtt > timeout {
                res.late_replies += 1;
                continue;
            }
            sample.rtt_ns = Some(rtt);
            if by_kernel {
                res.kernel_stamped += 1;
            }
            *outstanding = outstanding.saturating_sub(1);
        }
        Ok(())
    }

    /// (index, send stamp) of a reply that is ours.
    fn parse_reply(&self, b: &[u8]) -> Option<(u64, u64)> {
        if self.icmp {
            parse_icmp_echo_reply(b, self.id)
        } else {
            if b.len() < UDP_MIN_DATA || b[0..8] != self.token.to_le_bytes() {
                return None;
            }
            Some((u64::from_le_bytes(b[8..16].try_into().ok()?), u64::from_le_bytes(b[16..24].try_into().ok()?)))
        }
    }
}

/// Errors that an ICMP error about an earlier packet leaves in `sk_err`, reported
/// (once) by the next socket call.
fn is_pending_sock_error(e: i32) -> bool {
    matches!(e, libc::ECONNREFUSED | libc::EHOSTUNREACH | libc::ENETUNREACH | libc::EHOSTDOWN | libc::EPROTO | libc::EMSGSIZE)
}

/// Parses an IPv4 packet as delivered to a raw ICMP socket (IP header included):
/// an echo reply with identifier `id` carrying our index/stamp data.
pub(crate) fn parse_icmp_echo_reply(b: &[u8], id: u16) -> Option<(u64, u64)> {
    if b.len() < 20 || b[0] >> 4 != 4 || b[9] != libc::IPPROTO_ICMP as u8 {
        return None;
    }
    let ihl = ((b[0] & 0x0f) as usize) * 4;
    let icmp = b.get(ihl..)?;
    if icmp.len() < 8 + ICMP_MIN_DATA || icmp[0] != ICMP_ECHOREPLY || icmp[1] != 0 || icmp[4..6] != id.to_be_bytes() {
        return None;
    }
    Some((u64::from_le_bytes(icmp[8..16].try_into().ok()?), u64::from_le_bytes(icmp[16..24].try_into().ok()?)))
}

/// The SCM_TIMESTAMPNS control message (CLOCK_REALTIME ns), if present.
fn kernel_rx_stamp(mh: &libc::msghdr) -> Option<u64> {
    // SAFETY: mh was filled by recvmsg; the CMSG macros stay within msg_controllen.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(mh);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                return Some((ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64));
            }
            c = libc::CMSG_NXTHDR(mh, c);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn icmp_reply_parsing() {
        let mut pkt = vec![0u8; 20 + 8 + 16];
        pkt[0] = 0x45;
        pkt[9] = 1;
        pkt[20] = ICMP_ECHOREPLY;
        pkt[24..26].copy_from_slice(&0xbeefu16.to_be_bytes());
        pkt[28..36].copy_from_slice(&7u64.to_le_bytes());
        pkt[36..44].copy_from_slice(&123_456u64.to_le_bytes());
        assert_eq!(parse_icmp_echo_reply(&pkt, 0xbeef), Some((7, 123_456)));
        assert_eq!(parse_icmp_echo_reply(&pkt, 0xbeee), None); // someone else's
        assert_eq!(parse_icmp_echo_reply(&pkt[..40], 0xbeef), None); // too short
        let mut req = pkt.clone();
        req[20] = ICMP_ECHO;
        assert_eq!(parse_icmp_echo_reply(&req, 0xbeef), None);
        // IP options (ihl 6) shift the ICMP header.
        let mut opt = vec![0u8; 4];
        opt.splice(0..0, pkt[..20].iter().copied());
        opt.extend_from_slice(&pkt[20..]);
        opt[0] = 0x46;
        assert_eq!(parse_icmp_echo_reply(&opt, 0xbeef), Some((7, 123_456)));
        assert_eq!(parse_icmp_echo_reply(&[0x45], 0xbeef), None);
    }
}
