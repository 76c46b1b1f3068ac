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
//! - Each probe asks for the driver's software TX timestamp (`SO_TIMESTAMPING` with
//!   `SOF_TIMESTAMPING_TX_SOFTWARE`): `skb_tx_timestamp()`, which veth, tun and most
//!   NIC drivers call in `ndo_start_xmit()` once the qdisc has let the packet go. The
//!   stamp comes back on the error queue with a copy of the packet (so its index, not
//!   a key that failed sends may or may not advance). Send time to that stamp is the
//!   probe's time in the qdisc (`wait_qdisc_ns`), the simulator's `ping.wait_qdisc_ms`.
//!   A packet the driver refused (`NETDEV_TX_BUSY`, requeued) is stamped again when it
//!   goes: the last stamp counts.
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
/// `SO_TIMESTAMPING` (`SO_TIMESTAMPING_OLD` in include/uapi/asm-generic/socket.h: the
/// 64-bit layout on 64-bit architectures); its control message has the same number.
const SO_TIMESTAMPING: libc::c_int = 37;
/// `ee_info` of a timestamp taken by the driver (include/uapi/linux/errqueue.h).
const SCM_TSTAMP_SND: u32 = 0;

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
    /// From the send to the driver's TX timestamp (its time in the qdisc); None when
    /// no stamp came back (dropped in the qdisc, or a driver without
    /// `skb_tx_timestamp()`).
    pub wait_qdisc_ns: Option<u64>,
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
    /// The socket took `SO_TIMESTAMPING` (TX software stamps were asked for).
    pub tx_timestamping: bool,
    /// The ICMP identifier of the echo requests (None for UDP probes): with the probe
    /// index in the data, what names a probe to a far end that records it.
    pub icmp_id: Option<u16>,
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
    dst: Ipv4Addr,
    tx_timestamping: bool,
    /// The driver's last TX timestamp per probe index (CLOCK_MONOTONIC ns; 0 = none).
    driver_at: Vec<u64>,
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
        // Best effort too: without it `wait_qdisc_ns` stays None.
        let flags = (libc::SOF_TIMESTAMPING_TX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE) as libc::c_int;
        let tx_timestamping = sys::setsockopt_int(&sock, libc::SOL_SOCKET, SO_TIMESTAMPING, flags, "SO_TIMESTAMPING").is_ok();
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
        // Room for the largest reply plus an IP header with options, or for a
        // timestamped copy of a request with its link-layer header.
        let rbuf = vec![0u8; len + 128];
        let driver_at = Vec::with_capacity(cap_of(spec));
        Ok(Prober { sock, icmp, id, token, sbuf, rbuf, dst: spec.dst, tx_timestamping, driver_at })
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
        let cap = cap_of(spec);
        let mut res = ProbeResult {
            start_mono_ns: t0,
            samples: Vec::with_capacity(cap),
            tx_timestamping: self.tx_timestamping,
            icmp_id: self.icmp.then_some(self.id),
            ..ProbeResult::default()
        };
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
                res.samples.push(ProbeSample { t_send_ns: ts - t0, rtt_ns: None, unsendable: !ok, wait_qdisc_ns: None });
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
            let Some(wait_end) = next_wake(sending, due, now, outstanding, last_send, timeout) else { break };
            let wait = wait_end.saturating_sub(now).min(50_000_000);
            let rev = sys::poll_one(fd, libc::POLLIN, wait)?;
            if rev & libc::POLLERR != 0 {
                self.drain_errqueue();
            }
            if rev & libc::POLLIN != 0 {
                self.drain_replies(&mut res, &sent_at, &mut outstanding, timeout)?;
            }
        }
        // Stamps still queued for the last probes.
        self.drain_errqueue();
        for (i, s) in res.samples.iter_mut().enumerate() {
            let (sent, driver) = (sent_at[i], self.driver_at.get(i).copied().unwrap_or(0));
            if sent != 0 && driver != 0 {
                s.wait_qdisc_ns = Some(driver.saturating_sub(sent));
            }
        }
        Ok(res)
    }

    /// Reads the error queue: the driver's TX timestamps of our probes are kept, queued
    /// ICMP errors are discarded (IP_RECVERR queues them; an undrained error queue would
    /// keep poll() returning POLLERR).
    fn drain_errqueue(&mut self) {
        for _ in 0..1024 {
            let mut ctl: sys::CmsgBuf = [0; 32];
            let (r, mh) = sys::recvmsg_ctl(self.sock.as_raw_fd(), &mut self.rbuf, &mut ctl, None, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT);
            if r < 0 {
                return;
            }
            let Some(stamp) = driver_tx_stamp(&mh) else { continue };
            let off_real_mono = sys::real_ns().wrapping_sub(sys::mono_ns());
            let len = (r as usize).min(self.rbuf.len());
            let Some(index) = self.parse_stamped_request(&self.rbuf[..len]) else { continue };
            let Ok(i) = usize::try_from(index) else { continue };
            if i >= self.driver_at.len() {
                if i > (1 << 20) {
                    continue;
                }
                self.driver_at.resize(i + 1, 0);
            }
            let at = stamp.wrapping_sub(off_real_mono);
            self.driver_at[i] = self.driver_at[i].max(at);
        }
    }

    /// The probe index of a timestamped copy of one of our requests.
    fn parse_stamped_request(&self, b: &[u8]) -> Option<u64> {
        let l4 = stamped_ipv4_payload(b, self.dst, if self.icmp { libc::IPPROTO_ICMP } else { libc::IPPROTO_UDP })?;
        if self.icmp {
            if l4.len() < 8 + ICMP_MIN_DATA || l4[0] != ICMP_ECHO || l4[4..6] != self.id.to_be_bytes() {
                return None;
            }
            Some(u64::from_le_bytes(l4[8..16].try_into().ok()?))
        } else {
            let data = l4.get(8..)?;
            if data.len() < UDP_MIN_DATA || data[0..8] != self.token.to_le_bytes() {
                return None;
            }
            Some(u64::from_le_bytes(data[8..16].try_into().ok()?))
        }
    }

    fn drain_replies(&mut self, res: &mut ProbeResult, sent_at: &[u64], outstanding: &mut u64, timeout: u64) -> io::Result<()> {
        for _ in 0..4096 {
            // SCM_TIMESTAMPNS, and SCM_TIMESTAMPING (SO_TIMESTAMPING is set).
            let mut ctl: sys::CmsgBuf = [0; 32];
            let (r, mh) = sys::recvmsg_ctl(self.sock.as_raw_fd(), &mut self.rbuf, &mut ctl, None, libc::MSG_DONTWAIT);
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

fn cap_of(spec: &ProbeSpec) -> usize {
    spec.count.min(1 << 20) as usize
}

/// The transport header and payload of an IPv4 packet to `dst` with protocol `proto`,
/// found in a timestamped copy: at offset 0 (a device without a link-layer header,
/// such as tun) or after a 14-byte Ethernet header (veth, NICs). Each candidate must be
/// a whole IPv4 header with the right destination and protocol and a total length
/// that fits.
pub(crate) fn stamped_ipv4_payload(b: &[u8], dst: Ipv4Addr, proto: libc::c_int) -> Option<&[u8]> {
    let ip_at = |off: usize| -> Option<&[u8]> {
        let ip = b.get(off..)?;
        if ip.len() < 20 || ip[0] >> 4 != 4 || ip[9] != proto as u8 || ip[16..20] != dst.octets() {
            return None;
        }
        let ihl = ((ip[0] & 0x0f) as usize) * 4;
        let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
        if ihl < 20 || total < ihl || total > ip.len() {
            return None;
        }
        ip.get(ihl..total)
    };
    let ethertype_ip = b.len() >= 14 && b[12..14] == [0x08, 0x00];
    if ethertype_ip {
        if let Some(p) = ip_at(14) {
            return Some(p);
        }
    }
    ip_at(0)
}

/// The driver's software TX timestamp (CLOCK_REALTIME ns) of an error-queue message:
/// an `SCM_TIMESTAMPING` control message whose `IP_RECVERR` companion says
/// `SO_EE_ORIGIN_TIMESTAMPING` and `SCM_TSTAMP_SND`.
fn driver_tx_stamp(mh: &libc::msghdr) -> Option<u64> {
    let mut stamp = None;
    let mut snd = false;
    // SAFETY: mh was filled by recvmsg; the CMSG macros stay within msg_controllen,
    // and each read is of a control message's data of at least the read size.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(mh);
        while !c.is_null() {
            let data_len = ((*c).cmsg_len as usize).saturating_sub(libc::CMSG_LEN(0) as usize);
            if (*c).cmsg_level == libc::SOL_SOCKET
                && (*c).cmsg_type == SO_TIMESTAMPING
                && data_len >= 3 * std::mem::size_of::<libc::timespec>()
            {
                // struct scm_timestamping: ts[0] is the software stamp.
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                if ts.tv_sec > 0 || ts.tv_nsec > 0 {
                    stamp = Some((ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64));
                }
            } else if (*c).cmsg_level == libc::IPPROTO_IP
                && (*c).cmsg_type == libc::IP_RECVERR
                && data_len >= std::mem::size_of::<libc::sock_extended_err>()
            {
                let e: libc::sock_extended_err = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::sock_extended_err);
                snd = e.ee_errno == libc::ENOMSG as u32 && e.ee_origin == libc::SO_EE_ORIGIN_TIMESTAMPING && e.ee_info == SCM_TSTAMP_SND;
            }
            c = libc::CMSG_NXTHDR(mh, c);
        }
    }
    if snd {
        stamp
    } else {
        None
    }
}

/// The SCM_TIMESTAMPNS control message (CLOCK_REALTIME ns), if present.
pub(crate) fn kernel_rx_stamp(mh: &libc::msghdr) -> Option<u64> {
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

/// When an isochronous prober (this one, irtt's client) next wakes: at its next send
/// `due` while it is still `sending`, else when its last request's reply is overdue.
/// `None` when it is done: nothing outstanding, or the last reply already overdue.
pub(super) fn next_wake(sending: bool, due: u64, now: u64, outstanding: u64, last_send: u64, timeout: u64) -> Option<u64> {
    if sending {
        return Some(due);
    }
    let overdue = last_send.saturating_add(timeout);
    (outstanding > 0 && now < overdue).then_some(overdue)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prober_wakes_for_its_next_send_then_for_its_last_reply() {
        // Sending: the next send, whatever is outstanding.
        assert_eq!(next_wake(true, 500, 100, 0, 0, 1_000), Some(500));
        // Done sending, replies outstanding: until the last send's timeout.
        assert_eq!(next_wake(false, 500, 100, 2, 50, 1_000), Some(1_050));
        // Nothing outstanding, or the last reply overdue: done.
        assert_eq!(next_wake(false, 500, 100, 0, 50, 1_000), None);
        assert_eq!(next_wake(false, 500, 1_050, 2, 50, 1_000), None);
    }

    /// An IPv4 packet to 10.1.2.3: header (ihl 5), then `l4`.
    fn ipv4(proto: u8, l4: &[u8]) -> Vec<u8> {
        let mut ip = vec![0u8; 20];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
        ip[9] = proto;
        ip[16..20].copy_from_slice(&[10, 1, 2, 3]);
        ip.extend_from_slice(l4);
        ip
    }

    #[test]
    fn a_stamped_copy_is_found_behind_ethernet_or_bare() {
        let dst = Ipv4Addr::new(10, 1, 2, 3);
        let l4: Vec<u8> = (0..24).collect();
        let ip = ipv4(1, &l4);
        // veth and NICs: the copy starts at the Ethernet header. This destination MAC
        // begins with 0x45, as an IPv4 header does: the EtherType decides.
        let mut eth = vec![0x45, 0, 0, 0, 0, 1, 0x46, 0, 0, 0, 0, 2, 0x08, 0x00];
        eth.extend_from_slice(&ip);
        assert_eq!(stamped_ipv4_payload(&eth, dst, libc::IPPROTO_ICMP), Some(&l4[..]));
        // tun: no link-layer header.
        assert_eq!(stamped_ipv4_payload(&ip, dst, libc::IPPROTO_ICMP), Some(&l4[..]));
        // Trailing bytes (Ethernet padding) are not payload.
        let mut padded = eth.clone();
        padded.extend_from_slice(&[0; 6]);
        assert_eq!(stamped_ipv4_payload(&padded, dst, libc::IPPROTO_ICMP), Some(&l4[..]));
        // Someone else's packet, another protocol, a truncated copy: none.
        assert_eq!(stamped_ipv4_payload(&eth, Ipv4Addr::new(10, 1, 2, 4), libc::IPPROTO_ICMP), None);
        assert_eq!(stamped_ipv4_payload(&eth, dst, libc::IPPROTO_UDP), None);
        assert_eq!(stamped_ipv4_payload(&eth[..eth.len() - 1], dst, libc::IPPROTO_ICMP), None);
        assert_eq!(stamped_ipv4_payload(&[], dst, libc::IPPROTO_ICMP), None);
    }

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
