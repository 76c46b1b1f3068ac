//! A user-space tap reader: the slow consumer of a tun/tap device.
//!
//! The reader thread enters the namespace, opens /dev/net/tun and attaches with
//! TUNSETIFF (IFF_TAP | IFF_NO_PI), so the device is created in (or, if a
//! persistent tap of that name exists there, attached in) that namespace. By
//! default the tap is not persistent: it disappears when the reader's descriptor
//! closes, i.e. when the reader thread ends — so read the tap's counters
//! (`ip -s link`, `tc -s qdisc`) *before* stopping the reader, or create it with
//! `TapOpts { persist: true }` (TUNSETPERSIST: the device then stays until it is
//! deleted or its namespace is). Its carrier is up only while a reader is attached.
//!
//! The loop polls the non-blocking descriptor with 50 ms timeouts, reads frames,
//! busy-spins `app_cost` per frame (the consumer's per-packet work; the tun
//! ptr_ring, sized by txqueuelen, fills behind it — real-kernel-notes §6), and:
//! - takes a one-way delay sample from every IPv4/UDP frame carrying a flood header;
//! - with `echo_icmp`, answers ARP requests for any IPv4 address with
//!   `TAP_PEER_MAC` and ICMP echo requests to any address with an echo reply,
//!   written back into the tap, so a prober in the namespace can ping an address
//!   routed through the tap (no static neighbour needed; with one, use
//!   `TAP_PEER_MAC`). Replies are sent after the frame's `app_cost`. Each echo
//!   request answered is recorded (`EchoSeen`: when it was read, when its reply was
//!   written), so a probe's time in the tun ring and in this consumer can be told
//!   apart from its time in the qdisc.
//! - with `irtt_port`, answers irtt requests (IPv4/UDP to that port, see `irtt.rs`)
//!   as the irtt server does over veth, recording (token, sequence number) so a
//!   missing reply is lost up or lost down. The server's receive and send stamps are
//!   both the time after the frame's `app_cost`: the reader stands for whatever reads
//!   the tap (a VM, a VPN daemon), and a server behind it gets the request only once
//!   that work is done. So the consumer's time is on the way up, as a ping's is in
//!   its round trip, and as the simulator delivers the request to its server.
//!
//! Two ways to start it:
//! - `spawn_tap_reader` returns once the tap exists, with reading already started
//!   (nothing arrives before the caller sets the link up, so configuring it right
//!   after the call is race-free);
//! - `create_tap_reader` returns a `TapReader` (tap created, not yet reading) with
//!   the device's name and ifindex; `TapReader::start()` begins reading. Dropping
//!   an unstarted `TapReader` closes the tap.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::netns::spawn_tool;
use super::payload::{inet_checksum, FloodHeader, Reservoir, OWD_SAMPLE_CAP};
use super::irtt::{IrttServerStats, IRTT_MAX_REQUESTS, IRTT_MIN_PAYLOAD};
use super::sys;

/// The MAC the reader answers ARP with ("locally administered", 02:...): use it for
/// a static neighbour entry when ARP should be avoided.
pub const TAP_PEER_MAC: [u8; 6] = [0x02, 0x64, 0x62, 0x6b, 0x66, 0x01];
/// Largest frame read at once (64 KiB payload + headers; tap without GSO offloads
/// never delivers more than MTU + 14).
const FRAME_BUF: usize = 65_536 + 64;
/// Frames handled per poll wake-up before re-checking stop/deadline.
const READ_BURST: usize = 256;
const IFNAMSIZ: usize = 16;
/// Longest an unstarted reader waits for `start()` beyond its `duration`.
const START_GRACE: Duration = Duration::from_secs(60);
/// Most echo requests recorded (a prober every 10 ms for 2.9 hours).
const ECHO_CAP: usize = 1 << 20;

/// `Default`: caller's namespace, kernel-chosen name (tap%d), no app cost, echo on, 1 s.
#[derive(Clone, Debug)]
pub struct TapReaderSpec {
    pub netns: String,
    /// Device name (at most 15 bytes); empty = the kernel picks `tap%d`.
    pub tap_name: String,
    /// Busy-spin per frame read.
    pub app_cost: Duration,
    /// Answer ARP requests and ICMP echo requests (to any IPv4 address). Without
    /// it nothing answers ARP, so traffic routed into the tap needs a permanent
    /// neighbour entry (any MAC, e.g. `TAP_PEER_MAC`) or it never leaves the
    /// neighbour queue.
    pub echo_icmp: bool,
    /// Answer irtt requests sent to this UDP port (any address routed into the tap).
    pub irtt_port: Option<u16>,
    /// Reading time, from the start of reading.
    pub duration: Duration,
}

impl Default for TapReaderSpec {
    fn default() -> Self {
        TapReaderSpec {
            netns: String::new(),
            tap_name: String::new(),
            app_cost: Duration::ZERO,
            echo_icmp: true,
            irtt_port: None,
            duration: Duration::from_secs(1),
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct TapReaderStats {
    /// Frames read (everything: flood frames, ARP, IPv6 noise, probes).
    pub frames: u64,
    pub bytes: u64,
    /// From the start of reading to the end of the loop.
    pub elapsed: Duration,
    /// Frames carrying a flood header.
    pub flood_frames: u64,
    /// One-way delays (ns) of flood frames: read time minus the flood's stamp;
    /// a deterministic uniform sample of at most OWD_SAMPLE_CAP.
    pub owd_ns_samples: Vec<u64>,
    pub arp_replies: u64,
    pub icmp_replies: u64,
    pub irtt_replies: u64,
    /// Replies that could not be written back.
    pub write_errors: u64,
    /// CLOCK_MONOTONIC ns when reading started.
    pub start_mono_ns: u64,
    /// The ICMP echo requests answered, in reading order (at most `ECHO_CAP`).
    pub echoes: Vec<EchoSeen>,
    /// The irtt requests answered, as the irtt server records them (at most
    /// `IRTT_MAX_REQUESTS`).
    pub irtt: IrttServerStats,
}

/// An ICMP echo request the reader answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EchoSeen {
    /// ICMP identifier.
    pub id: u16,
    /// The first 8 bytes of the echo data, little-endian (the prober's probe index).
    pub data_head: u64,
    /// CLOCK_MONOTONIC ns: read from the tun ring.
    pub read_ns: u64,
    /// CLOCK_MONOTONIC ns: its reply written back, after the frame's `app_cost`.
    pub reply_ns: u64,
}

/// The device a reader created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TapInfo {
    /// Actual device name (as the kernel completed it).
    pub name: String,
    /// ifindex inside the reader's namespace.
    pub ifindex: u32,
    /// MAC the reader uses in ARP and echo replies.
    pub peer_mac: [u8; 6],
}

/// Extra tap reader settings.
#[derive(Clone, Debug, Default)]
pub struct TapOpts {
    /// Pin the reader thread to this CPU.
    pub cpu: Option<usize>,
    /// TUNSETPERSIST: keep the device after the reader ends (delete it with
    /// `ip link del`, or with its namespace).
    pub persist: bool,
}

/// A created tap whose reader has not started yet.
pub struct TapReader {
    info: TapInfo,
    go: Option<mpsc::SyncSender<bool>>,
    handle: Option<JoinHandle<io::Result<TapReaderStats>>>,
}

impl TapReader {
    pub fn info(&self) -> &TapInfo {
        &self.info
    }

    /// Starts reading; the join result is the reader's statistics.
    pub fn start(mut self) -> JoinHandle<io::Result<TapReaderStats>> {
        if let Some(go) = self.go.take() {
            let _ = go.send(true);
        }
        match self.handle.take() {
            Some(h) => h,
            None => std::thread::spawn(|| Err(io::Error::other("tap reader already consumed"))),
        }
    }
}

impl Drop for TapReader {
    /// Not started: tell the thread to close the tap and wait for it.
    fn drop(&mut self) {
        if let Some(go) = self.go.take() {
            let _ = go.send(false);
        }
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Creates the tap (TUNSETIFF, IFF_TAP|IFF_NO_PI) in `netns` and returns once it
/// exists; reading has started already. The unit in the tuple is kept for the
/// agreed signature; `create_tap_reader` returns the device's name and ifindex.
/// The tap is removed when the reader ends: read its counters before `stop`.
pub fn spawn_tap_reader(spec: TapReaderSpec, stop: Arc<AtomicBool>) -> io::Result<((), JoinHandle<io::Result<TapReaderStats>>)> {
    let r = create_tap_reader(spec, stop)?;
    Ok(((), r.start()))
}

/// Creates the tap and returns it unstarted (see the module doc).
pub fn create_tap_reader(spec: TapReaderSpec, stop: Arc<AtomicBool>) -> io::Result<TapReader> {
    create_tap_reader_with(spec, TapOpts::default(), stop)
}

/// `create_tap_reader` with CPU pinning and/or a persistent device.
pub fn create_tap_reader_with(spec: TapReaderSpec, opts: TapOpts, stop: Arc<AtomicBool>) -> io::Result<TapReader> {
    validate_name(&spec.tap_name)?;
    let (go_tx, go_rx) = mpsc::sync_channel::<bool>(1);
    let netns = spec.netns.clone();
    let persist = opts.persist;
    let (info, handle) = spawn_tool("darkbuf-tap", netns, opts.cpu, move |ready| {
        let (fd, info) = open_tap(&spec.tap_name, persist)?;
        ready.signal(info);
        // Wait for start() (or drop / stop), bounded.
        let give_up = sys::mono_ns().saturating_add(sys::dur_ns(spec.duration + START_GRACE));
        loop {
            match go_rx.recv_timeout(Duration::from_millis(50)) {
                Ok(true) => break,
                Ok(false) | Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(TapReaderStats::default()),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if stop.load(Ordering::Relaxed) || sys::mono_ns() >= give_up {
                        return Ok(TapReaderStats::default());
                    }
                }
            }
        }
        read_loop(&fd, &spec, &stop)
    });
    match info {
        Some(info) => Ok(TapReader { info, go: Some(go_tx), handle: Some(handle) }),
        None => match handle.join() {
            Ok(Err(e)) => Err(e),
            Ok(Ok(_)) => Err(io::Error::other("tap reader ended before creating the tap")),
            Err(_) => Err(io::Error::other("tap reader thread panicked")),
        },
    }
}

fn validate_name(name: &str) -> io::Result<()> {
    if name.len() >= IFNAMSIZ || name.contains(['/', '\0', ' ', ':']) || name == "." || name == ".." {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("invalid tap name {name:?} (at most 15 bytes, no '/', ':', space)")));
    }
    Ok(())
}

/// struct ifreq as TUNSETIFF reads it: the name and the flags member of the union
/// (the union is 24 bytes on 64-bit, 16 on 32-bit; 24 covers both).
#[repr(C)]
struct IfReqFlags {
    name: [u8; IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

fn open_tap(name: &str, persist: bool) -> io::Result<(OwnedFd, TapInfo)> {
    // SAFETY: path is a valid C string; we own the returned descriptor.
    let fd = sys::cvt(unsafe { libc::open(c"/dev/net/tun".as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) })
        .map_err(|e| io::Error::new(e.kind(), format!("open /dev/net/tun: {e}")))?;
    // SAFETY: fd was just opened and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut ifr = IfReqFlags { name: [0; IFNAMSIZ], flags: (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short, _pad: [0; 22] };
    ifr.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: ifr is a valid, writable ifreq-sized buffer for TUNSETIFF.
    sys::cvt(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut ifr as *mut IfReqFlags) })
        .map_err(|e| io::Error::new(e.kind(), format!("TUNSETIFF {name:?}: {e}")))?;
    if persist {
        // SAFETY: TUNSETPERSIST takes its flag by value.
        sys::cvt(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETPERSIST, 1 as libc::c_ulong) })
            .map_err(|e| io::Error::new(e.kind(), format!("TUNSETPERSIST {name:?}: {e}")))?;
    }
    let len = ifr.name.iter().position(|&b| b == 0).unwrap_or(IFNAMSIZ);
    let actual = String::from_utf8_lossy(&ifr.name[..len]).into_owned();
    let mut cname = [0u8; IFNAMSIZ + 1];
    cname[..len].copy_from_slice(&ifr.name[..len]);
    // SAFETY: cname is NUL-terminated.
    let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr() as *const libc::c_char) };
    if ifindex == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((fd, TapInfo { name: actual, ifindex, peer_mac: TAP_PEER_MAC }))
}

fn read_loop(fd: &OwnedFd, spec: &TapReaderSpec, stop: &AtomicBool) -> io::Result<TapReaderStats> {
    let mut buf = vec![0u8; FRAME_BUF];
    let mut out = vec![0u8; FRAME_BUF];
    let mut res = Reservoir::new(OWD_SAMPLE_CAP);
    let cost = sys::dur_ns(spec.app_cost);
    let t0 = sys::mono_ns();
    let deadline = t0.saturating_add(sys::dur_ns(spec.duration));
    let mut st = TapReaderStats { start_mono_ns: t0, ..TapReaderStats::default() };
    let raw = fd.as_raw_fd();
    'outer: loop {
        let now = sys::mono_ns();
        if stop.load(Ordering::Relaxed) || now >= deadline {
            break;
        }
        let rev = sys::poll_one(raw, libc::POLLIN, (deadline - now).min(50_000_000))?;
        if rev & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 && rev & libc::POLLIN == 0 {
            return Err(io::Error::other(format!("tap descriptor poll revents {rev:#x}")));
        }
        if rev & libc::POLLIN == 0 {
            continue;
        }
        for _ in 0..READ_BURST {
            // SAFETY: buf is valid for FRAME_BUF bytes.
            let n = unsafe { libc::read(raw, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
            if n < 0 {
                match sys::errno() {
                    libc::EAGAIN | libc::EINTR => break,
                    _ => return Err(io::Error::last_os_error()),
                }
            }
            if n == 0 {
                break;
            }
            let now_rx = sys::mono_ns();
            let frame = &buf[..n as usize];
            st.frames += 1;
            st.bytes += n as u64;
            if let Some(h) = flood_header_of_frame(frame) {
                st.flood_frames += 1;
                if now_rx >= h.t_send_ns {
                    res.offer(now_rx - h.t_send_ns);
                }
            }
            sys::spin_ns(cost);
            let irtt = spec.irtt_port.and_then(|port| {
                let served = sys::mono_ns();
                irtt_reply(frame, port, served, served, &TAP_PEER_MAC, &mut out)
            });
            let reply = if let Some((l, token, seq)) = irtt {
                st.irtt_replies += 1;
                if (st.irtt.received.len() as u64) < IRTT_MAX_REQUESTS {
                    st.irtt.received.push((token, seq));
                }
                Some(l)
            } else if !spec.echo_icmp {
                None
            } else if let Some(l) = arp_reply(frame, &TAP_PEER_MAC, &mut out) {
                st.arp_replies += 1;
                Some(l)
            } else if let Some(l) = icmp_echo_reply(frame, &TAP_PEER_MAC, &mut out) {
                st.icmp_replies += 1;
                if let (Some((id, data_head)), true) = (icmp_echo_id_and_head(frame), st.echoes.len() < ECHO_CAP) {
                    st.echoes.push(EchoSeen { id, data_head, read_ns: now_rx, reply_ns: sys::mono_ns() });
                }
                Some(l)
            } else {
                None
            };
            if let Some(l) = reply {
                // SAFETY: out is valid for l <= FRAME_BUF bytes.
                let w = unsafe { libc::write(raw, out.as_ptr() as *const libc::c_void, l) };
                if w < 0 {
                    st.write_errors += 1;
                }
            }
            if stop.load(Ordering::Relaxed) {
                break 'outer;
            }
        }
    }
    st.elapsed = Duration::from_nanos(sys::mono_ns().saturating_sub(t0));
    st.owd_ns_samples = res.into_vec();
    Ok(st)
}

const ETH_HLEN: usize = 14;
const ETH_P_IP: u16 = 0x0800;
const ETH_P_ARP: u16 = 0x0806;

fn ethertype(f: &[u8]) -> Option<u16> {
    Some(u16::from_be_bytes([*f.get(12)?, *f.get(13)?]))
}

/// The IPv4 header length and total length of an unfragmented IPv4 packet at
/// `f[ETH_HLEN..]`, if it is one.
fn ipv4_lengths(f: &[u8]) -> Option<(usize, usize)> {
    if ethertype(f)? != ETH_P_IP {
        return None;
    }
    let ip = f.get(ETH_HLEN..)?;
    if ip.len() < 20 || ip[0] >> 4 != 4 {
        return None;
    }
    let ihl = ((ip[0] & 0x0f) as usize) * 4;
    let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
    if ihl < 20 || total < ihl || total > ip.len() {
        return None;
    }
    // Fragments (MF set or offset != 0) are ignored.
    if u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0 {
        return None;
    }
    Some((ihl, total))
}

/// The flood header of an IPv4/UDP frame, if it carries one.
pub(crate) fn flood_header_of_frame(f: &[u8]) -> Option<FloodHeader> {
    let (ihl, total) = ipv4_lengths(f)?;
    let ip = &f[ETH_HLEN..ETH_HLEN + total];
    if ip[9] != libc::IPPROTO_UDP as u8 || total < ihl + 8 {
        return None;
    }
    FloodHeader::read(&ip[ihl + 8..])
}

/// Builds the ARP reply to an ARP request (Ethernet/IPv4) into `out`: "tpa is at
/// `mac`". Returns its length, or None if `f` is not a request to answer
/// (gratuitous ARP and ARP probes with a zero sender address are ignored).
pub(crate) fn arp_reply(f: &[u8], mac: &[u8; 6], out: &mut [u8]) -> Option<usize> {
    const LEN: usize = ETH_HLEN + 28;
    if ethertype(f)? != ETH_P_ARP || f.len() < LEN || out.len() < LEN {
        return None;
    }
    let a = &f[ETH_HLEN..LEN];
    // htype 1 (Ethernet), ptype IPv4, hlen 6, plen 4, oper 1 (request).
    if a[0..2] != [0, 1] || a[2..4] != ETH_P_IP.to_be_bytes() || a[4] != 6 || a[5] != 4 || a[6..8] != [0, 1] {
        return None;
    }
    let (sha, spa, tpa) = (&a[8..14], &a[14..18], &a[24..28]);
    if spa == tpa || spa == [0, 0, 0, 0] {
        return None;
    }
    let o = &mut out[..LEN];
    o[0..6].copy_from_slice(sha);
    o[6..12].copy_from_slice(mac);
    o[12..14].copy_from_slice(&ETH_P_ARP.to_be_bytes());
    o[14..20].copy_from_slice(&a[0..6]);
    o[20..22].copy_from_slice(&[0, 2]);
    o[22..28].copy_from_slice(mac);
    o[28..32].copy_from_slice(tpa);
    o[32..38].copy_from_slice(sha);
    o[38..42].copy_from_slice(spa);
    Some(LEN)
}

/// Builds the echo reply to an IPv4 ICMP echo request frame into `out`: Ethernet
/// addresses swapped (source = the request's destination MAC, or `mac` if that
/// was not unicast), IP addresses swapped, TTL 64, ICMP type 0, both checksums
/// recomputed, data echoed. Returns its length, or None if `f` is not an echo
/// request to a unicast address.
pub(crate) fn icmp_echo_reply(f: &[u8], mac: &[u8; 6], out: &mut [u8]) -> Option<usize> {
    let (ihl, total) = ipv4_lengths(f)?;
    let len = ETH_HLEN + total;
    if out.len() < len {
        return None;
    }
    let ip = &f[ETH_HLEN..len];
    if ip[9] != libc::IPPROTO_ICMP as u8 || total < ihl + 8 {
        return None;
    }
    let icmp = &ip[ihl..];
    if icmp[0] != 8 || icmp[1] != 0 {
        return None;
    }
    let oip = reply_frame(f, len, ihl, mac, out)?;
    let oicmp = &mut oip[ihl..total];
    oicmp[0] = 0;
    oicmp[2..4].copy_from_slice(&[0, 0]);
    let c = inet_checksum(oicmp);
    oicmp[2..4].copy_from_slice(&c.to_be_bytes());
    Some(len)
}

/// The first `len` bytes of IPv4 frame `f` copied into `out` as the start of a reply:
/// Ethernet addresses swapped (source = the request's destination MAC, or `mac` if that
/// was not unicast), IP addresses swapped, TTL 64, the IP header's checksum recomputed.
/// Returns the reply's IP packet, for the caller to finish its payload; None if the
/// request went to a multicast or broadcast address (not ours to answer) or `out` is
/// too short.
fn reply_frame<'a>(f: &[u8], len: usize, ihl: usize, mac: &[u8; 6], out: &'a mut [u8]) -> Option<&'a mut [u8]> {
    let ip = &f[ETH_HLEN..len];
    let dst = &ip[16..20];
    if dst[0] >= 224 || dst == [255, 255, 255, 255] || out.len() < len {
        return None;
    }
    let o = &mut out[..len];
    o.copy_from_slice(&f[..len]);
    o[0..6].copy_from_slice(&f[6..12]);
    if f[0] & 1 == 0 {
        o[6..12].copy_from_slice(&f[0..6]);
    } else {
        o[6..12].copy_from_slice(mac);
    }
    let oip = &mut o[ETH_HLEN..];
    oip[12..16].copy_from_slice(&ip[16..20]);
    oip[16..20].copy_from_slice(&ip[12..16]);
    oip[8] = 64;
    oip[10..12].copy_from_slice(&[0, 0]);
    let c = inet_checksum(&oip[..ihl]);
    oip[10..12].copy_from_slice(&c.to_be_bytes());
    Some(oip)
}

/// Builds the reply to an irtt request (IPv4/UDP to `port`, at least
/// `IRTT_MIN_PAYLOAD` bytes) into `out`, as the irtt server over veth sends it: the
/// request with addresses and ports swapped, the server's receive and send stamps
/// (`rx_ns`, `tx_ns`) at bytes 24..40 of the payload, TTL 64 and both checksums
/// recomputed (the UDP one over the RFC 768 pseudo-header). The request's TOS stays:
/// the server replies with the client's marking. Returns the reply's length and the
/// request's token and sequence number.
pub(crate) fn irtt_reply(f: &[u8], port: u16, rx_ns: u64, tx_ns: u64, mac: &[u8; 6], out: &mut [u8]) -> Option<(usize, u64, u64)> {
    let (ihl, total) = ipv4_lengths(f)?;
    let len = ETH_HLEN + total;
    let ip = &f[ETH_HLEN..len];
    if ip[9] != libc::IPPROTO_UDP as u8 || total < ihl + 8 + IRTT_MIN_PAYLOAD || out.len() < len {
        return None;
    }
    let udp = &ip[ihl..];
    let udp_len = u16::from_be_bytes([udp[4], udp[5]]) as usize;
    if u16::from_be_bytes([udp[2], udp[3]]) != port || udp_len != total - ihl {
        return None;
    }
    let oip = reply_frame(f, len, ihl, mac, out)?;
    let (src, dst) = (<[u8; 4]>::try_from(&oip[12..16]).ok()?, <[u8; 4]>::try_from(&oip[16..20]).ok()?);
    let oudp = &mut oip[ihl..total];
    oudp[0..2].copy_from_slice(&udp[2..4]);
    oudp[2..4].copy_from_slice(&udp[0..2]);
    let payload = &mut oudp[8..];
    let (token, seq) = (u64::from_le_bytes(payload[0..8].try_into().ok()?), u64::from_le_bytes(payload[8..16].try_into().ok()?));
    payload[24..32].copy_from_slice(&rx_ns.to_le_bytes());
    payload[32..40].copy_from_slice(&tx_ns.to_le_bytes());
    oudp[6..8].copy_from_slice(&[0, 0]);
    let c = udp4_checksum(src, dst, oudp);
    oudp[6..8].copy_from_slice(&c.to_be_bytes());
    Some((len, token, seq))
}

/// The UDP checksum of `udp` (header and payload, its checksum field zero) from
/// `src` to `dst`: RFC 1071 over the pseudo-header and the datagram. 0 is sent as
/// 0xffff (RFC 768: 0 means "no checksum").
fn udp4_checksum(src: [u8; 4], dst: [u8; 4], udp: &[u8]) -> u16 {
    let mut pseudo = [0u8; 12];
    pseudo[0..4].copy_from_slice(&src);
    pseudo[4..8].copy_from_slice(&dst);
    pseudo[9] = libc::IPPROTO_UDP as u8;
    pseudo[10..12].copy_from_slice(&(udp.len() as u16).to_be_bytes());
    // Ones' complement sums add in any order: the checksum of the pseudo-header,
    // complemented back, is a word the datagram's sum goes on from.
    let mut sum = !inet_checksum(&pseudo) as u32 + !inet_checksum(udp) as u32;
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    match !(sum as u16) {
        0 => 0xffff,
        c => c,
    }
}

/// The identifier and the first 8 data bytes (little-endian) of an IPv4 ICMP echo
/// request frame, if it is one with at least 8 bytes of data.
pub(crate) fn icmp_echo_id_and_head(f: &[u8]) -> Option<(u16, u64)> {
    let (ihl, total) = ipv4_lengths(f)?;
    let ip = &f[ETH_HLEN..ETH_HLEN + total];
    if ip[9] != libc::IPPROTO_ICMP as u8 {
        return None;
    }
    let icmp = ip.get(ihl..)?;
    if icmp.len() < 16 || icmp[0] != 8 || icmp[1] != 0 {
        return None;
    }
    Some((u16::from_be_bytes([icmp[4], icmp[5]]), u64::from_le_bytes(icmp[8..16].try_into().ok()?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KMAC: [u8; 6] = [0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0x01];

    fn arp_request(spa: [u8; 4], tpa: [u8; 4]) -> Vec<u8> {
        let mut f = vec![0xff; 6];
        f.extend_from_slice(&KMAC);
        f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
        f.extend_from_slice(&KMAC);
        f.extend_from_slice(&spa);
        f.extend_from_slice(&[0; 6]);
        f.extend_from_slice(&tpa);
        f
    }

    #[test]
    fn arp_request_gets_reply() {
        let f = arp_request([10, 78, 0, 1], [10, 78, 0, 2]);
        let mut out = [0u8; 64];
        let n = arp_reply(&f, &TAP_PEER_MAC, &mut out).unwrap();
        assert_eq!(n, 42);
        let mut want = KMAC.to_vec();
        want.extend_from_slice(&TAP_PEER_MAC);
        want.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 2]);
        want.extend_from_slice(&TAP_PEER_MAC);
        want.extend_from_slice(&[10, 78, 0, 2]);
        want.extend_from_slice(&KMAC);
        want.extend_from_slice(&[10, 78, 0, 1]);
        assert_eq!(&out[..n], &want[..]);
        // Gratuitous ARP, ARP probe, a reply, truncated: no answer.
        assert_eq!(arp_reply(&arp_request([10, 78, 0, 1], [10, 78, 0, 1]), &TAP_PEER_MAC, &mut out), None);
        assert_eq!(arp_reply(&arp_request([0, 0, 0, 0], [10, 78, 0, 1]), &TAP_PEER_MAC, &mut out), None);
        let mut rep = f.clone();
        rep[21] = 2;
        assert_eq!(arp_reply(&rep, &TAP_PEER_MAC, &mut out), None);
        assert_eq!(arp_reply(&f[..41], &TAP_PEER_MAC, &mut out), None);
    }

    fn ipv4(proto: u8, src: [u8; 4], dst: [u8; 4], payload: &[u8]) -> Vec<u8> {
        let mut f = TAP_PEER_MAC.to_vec();
        f.extend_from_slice(&KMAC);
        f.extend_from_slice(&[0x08, 0x00]);
        let total = (20 + payload.len()) as u16;
        let mut ip = vec![0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, proto, 0, 0];
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        ip.extend_from_slice(&src);
        ip.extend_from_slice(&dst);
        let c = inet_checksum(&ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&ip);
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn an_echo_request_names_its_probe() {
        let mut icmp = vec![8, 0, 0, 0, 0x43, 0x21, 0, 5];
        icmp.extend_from_slice(&1234u64.to_le_bytes());
        let f = ipv4(1, [10, 78, 0, 1], [10, 78, 0, 2], &icmp);
        assert_eq!(icmp_echo_id_and_head(&f), Some((0x4321, 1234)));
        // Seven bytes of data, a reply, UDP: not a probe's request.
        assert_eq!(icmp_echo_id_and_head(&f[..f.len() - 1]), None);
        let mut rep = icmp.clone();
        rep[0] = 0;
        assert_eq!(icmp_echo_id_and_head(&ipv4(1, [10, 78, 0, 1], [10, 78, 0, 2], &rep)), None);
        assert_eq!(icmp_echo_id_and_head(&ipv4(17, [10, 78, 0, 1], [10, 78, 0, 2], &icmp)), None);
    }

    #[test]
    fn echo_request_gets_reply() {
        let mut icmp = vec![8, 0, 0, 0, 0x43, 0x21, 0, 5, 1, 2, 3, 4, 5];
        let c = inet_checksum(&icmp);
        icmp[2..4].copy_from_slice(&c.to_be_bytes());
        let f = ipv4(1, [10, 78, 0, 1], [10, 78, 0, 2], &icmp);
        let mut out = vec![0u8; 128];
        let n = icmp_echo_reply(&f, &TAP_PEER_MAC, &mut out).unwrap();
        assert_eq!(n, f.len());
        let o = &out[..n];
        assert_eq!(&o[0..6], &KMAC);
        assert_eq!(&o[6..12], &TAP_PEER_MAC);
        let ip = &o[14..];
        assert_eq!(&ip[12..16], &[10, 78, 0, 2]);
        assert_eq!(&ip[16..20], &[10, 78, 0, 1]);
        assert_eq!(ip[8], 64);
        assert_eq!(inet_checksum(&ip[..20]), 0, "IP checksum valid");
        let ic = &ip[20..];
        assert_eq!(ic[0], 0);
        assert_eq!(&ic[4..], &icmp[4..], "id, seq, data echoed");
        assert_eq!(inet_checksum(ic), 0, "ICMP checksum valid");
        // Replies (type 0), UDP, fragments, multicast destinations: no answer.
        let mut rep = icmp.clone();
        rep[0] = 0;
        assert_eq!(icmp_echo_reply(&ipv4(1, [10, 78, 0, 1], [10, 78, 0, 2], &rep), &TAP_PEER_MAC, &mut out), None);
        assert_eq!(icmp_echo_reply(&ipv4(17, [10, 78, 0, 1], [10, 78, 0, 2], &icmp), &TAP_PEER_MAC, &mut out), None);
        assert_eq!(icmp_echo_reply(&ipv4(1, [10, 78, 0, 1], [224, 0, 0, 1], &icmp), &TAP_PEER_MAC, &mut out), None);
        let mut frag = f.clone();
        frag[14 + 6] = 0x20; // MF
        assert_eq!(icmp_echo_reply(&frag, &TAP_PEER_MAC, &mut out), None);
        // Truncated frame (total length beyond the frame): ignored, no panic.
        assert_eq!(icmp_echo_reply(&f[..f.len() - 1], &TAP_PEER_MAC, &mut out), None);
        for cut in 0..f.len() {
            let _ = icmp_echo_reply(&f[..cut], &TAP_PEER_MAC, &mut out);
            let _ = arp_reply(&f[..cut], &TAP_PEER_MAC, &mut out);
            let _ = flood_header_of_frame(&f[..cut]);
        }
    }

    /// An irtt request from 10.78.0.1:40000 to 10.78.0.2:`port`, `len` payload bytes.
    fn irtt_request(port: u16, len: usize, token: u64, seq: u64) -> Vec<u8> {
        let mut udp = vec![0x9c, 0x40, 0, 0, 0, 0, 0, 0];
        udp[2..4].copy_from_slice(&port.to_be_bytes());
        udp[4..6].copy_from_slice(&((8 + len) as u16).to_be_bytes());
        let mut payload = vec![0xa5u8; len.max(40)];
        payload[0..8].copy_from_slice(&token.to_le_bytes());
        payload[8..16].copy_from_slice(&seq.to_le_bytes());
        payload[16..24].copy_from_slice(&1_000u64.to_le_bytes());
        payload[24..40].fill(0);
        udp.extend_from_slice(&payload[..len]);
        ipv4(17, [10, 78, 0, 1], [10, 78, 0, 2], &udp)
    }

    /// RFC 1071 sum of a UDP datagram and its pseudo-header: 0xffff when the
    /// checksum is right.
    fn udp_sum(src: [u8; 4], dst: [u8; 4], udp: &[u8]) -> u16 {
        let mut words: Vec<u8> = Vec::new();
        words.extend_from_slice(&src);
        words.extend_from_slice(&dst);
        words.extend_from_slice(&[0, 17]);
        words.extend_from_slice(&(udp.len() as u16).to_be_bytes());
        words.extend_from_slice(udp);
        !inet_checksum(&words)
    }

    #[test]
    fn an_irtt_request_gets_the_servers_reply() {
        let f = irtt_request(2112, 60, 0xfeed, 41);
        let mut out = vec![0u8; 256];
        let (n, token, seq) = irtt_reply(&f, 2112, 5_000, 5_020, &TAP_PEER_MAC, &mut out).unwrap();
        assert_eq!((n, token, seq), (f.len(), 0xfeed, 41));
        let o = &out[..n];
        assert_eq!((&o[0..6], &o[6..12]), (&KMAC[..], &TAP_PEER_MAC[..]));
        let ip = &o[14..];
        assert_eq!((&ip[12..16], &ip[16..20], ip[8]), (&[10, 78, 0, 2][..], &[10, 78, 0, 1][..], 64));
        assert_eq!(inet_checksum(&ip[..20]), 0, "IP checksum valid");
        let udp = &ip[20..];
        assert_eq!((&udp[0..2], &udp[2..4]), (&2112u16.to_be_bytes()[..], &40000u16.to_be_bytes()[..]), "ports swapped");
        assert_eq!(udp_sum([10, 78, 0, 2], [10, 78, 0, 1], udp), 0xffff, "UDP checksum valid");
        let p = &udp[8..];
        // The client's token, sequence number and send time stay; the server's stamps
        // are the read and the reply; the filler is echoed.
        assert_eq!(&p[0..24], &f[14 + 28..14 + 28 + 24]);
        assert_eq!((u64::from_le_bytes(p[24..32].try_into().unwrap()), u64::from_le_bytes(p[32..40].try_into().unwrap())), (5_000, 5_020));
        assert!(p[40..].iter().all(|&b| b == 0xa5));
        // Another port, a short payload, ICMP, a multicast sender, truncation: not answered.
        assert_eq!(irtt_reply(&f, 2113, 0, 0, &TAP_PEER_MAC, &mut out), None);
        assert_eq!(irtt_reply(&irtt_request(2112, 39, 1, 1), 2112, 0, 0, &TAP_PEER_MAC, &mut out), None);
        let mut icmp = f.clone();
        icmp[14 + 9] = 1;
        assert_eq!(irtt_reply(&icmp, 2112, 0, 0, &TAP_PEER_MAC, &mut out), None);
        let mut mc = f.clone();
        mc[14 + 16] = 239;
        assert_eq!(irtt_reply(&mc, 2112, 0, 0, &TAP_PEER_MAC, &mut out), None);
        for cut in 0..f.len() {
            assert_eq!(irtt_reply(&f[..cut], 2112, 0, 0, &TAP_PEER_MAC, &mut out), None);
        }
        assert_eq!(irtt_reply(&f, 2112, 0, 0, &TAP_PEER_MAC, &mut out[..f.len() - 1]), None, "no room for the reply");
    }

    #[test]
    fn the_udp_checksum_is_never_zero_on_the_wire() {
        // A datagram whose sum is 0xffff would checksum to 0, which means "none".
        let udp = [0u8; 8];
        let c = udp4_checksum([0, 0, 0, 0], [0, 0, 0, 0], &udp);
        assert_ne!(c, 0);
        let mut with = udp;
        with[6..8].copy_from_slice(&c.to_be_bytes());
        assert_eq!(udp_sum([0, 0, 0, 0], [0, 0, 0, 0], &with), 0xffff);
    }

    #[test]
    fn flood_frames_are_recognised() {
        let h = FloodHeader { flow: 1, seq: 9, t_send_ns: 77 };
        let mut udp = vec![0x30, 0x39, 0x04, 0xd2, 0, 40, 0, 0];
        let mut pl = [0u8; 32];
        h.write(&mut pl);
        udp.extend_from_slice(&pl);
        assert_eq!(flood_header_of_frame(&ipv4(17, [10, 0, 0, 1], [10, 0, 0, 2], &udp)), Some(h));
        assert_eq!(flood_header_of_frame(&ipv4(1, [10, 0, 0, 1], [10, 0, 0, 2], &udp)), None);
    }

    #[test]
    fn bad_tap_names() {
        assert!(validate_name("").is_ok());
        assert!(validate_name("dbtap0").is_ok());
        assert!(validate_name("0123456789abcdef").is_err());
        assert!(validate_name("a/b").is_err());
    }
}
