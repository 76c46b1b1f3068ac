//! An irtt-like isochronous UDP prober and its server (`[[traffic]] kind = "irtt"`).
//!
//! What irtt measures, with both ends on one host and one clock (CLOCK_MONOTONIC):
//! - the client sends request k at `start + k * interval` until `stop` (absolute
//!   schedule, non-blocking sends; a failed send is lost on the way up);
//! - the server stamps each request's arrival (the kernel's SO_TIMESTAMPNS receive
//!   stamp) and its reply's departure into the packet, and records which requests it
//!   received, so a missing reply is lost up or lost down;
//! - the client takes the reply's kernel receive stamp. As irtt does, the round trip
//!   leaves out the server's own time (reply departure - request arrival): send delay =
//!   arrival - send, receive delay = reply receipt - reply departure.
//!
//! Payload: `token u64 | seq u64 | t_send u64 | t_server_rx u64 | t_server_tx u64`
//! (little-endian), then filler to the scenario's length; at least 40 bytes.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::netns::spawn_tool;
use super::probe::{kernel_rx_stamp, next_wake};
use super::sys;

/// The smallest payload: token, sequence number and the three stamps.
pub const IRTT_MIN_PAYLOAD: usize = 40;
/// Most requests one client sends, and most a server records.
pub const IRTT_MAX_REQUESTS: u64 = 1 << 22;

/// The server: bound in `netns` to `bind:port` (0 = any port), replies with `tos`.
#[derive(Clone, Debug)]
pub struct IrttServerSpec {
    pub netns: String,
    pub bind: Ipv4Addr,
    pub port: u16,
    pub tos: u8,
    /// Hard bound on its life (it also ends on its stop flag).
    pub duration: Duration,
}

/// What a server saw: the (token, sequence number) of every request it answered.
#[derive(Clone, Debug, Default)]
pub struct IrttServerStats {
    pub received: Vec<(u64, u64)>,
}

/// The client: from `netns` to `dst:port`, requests of `payload` bytes marked `tos`
/// every `interval` in `[start_mono_ns, stop_mono_ns)`, then replies awaited up to
/// `timeout` after the last send (or `stop`).
#[derive(Clone, Debug)]
pub struct IrttClientSpec {
    pub netns: String,
    pub dst: Ipv4Addr,
    pub port: u16,
    pub interval: Duration,
    pub payload: usize,
    pub tos: u8,
    pub start_mono_ns: u64,
    pub stop_mono_ns: u64,
    pub timeout: Duration,
}

/// One request: its send time, and its reply's three stamps when one came back
/// (CLOCK_MONOTONIC ns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IrttRequest {
    pub t_send: u64,
    /// The send failed (EAGAIN, ENOBUFS: the qdisc dropped it).
    pub unsent: bool,
    pub reply: Option<IrttReply>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IrttReply {
    pub server_rx: u64,
    pub server_tx: u64,
    pub client_rx: u64,
}

#[derive(Clone, Debug, Default)]
pub struct IrttClientResult {
    /// The client's token: the server's records of its requests carry it.
    pub token: u64,
    /// One per request, in sequence order.
    pub requests: Vec<IrttRequest>,
}

/// Starts a server; returns its port once it is bound (None when setup failed).
pub fn spawn_irtt_server(spec: IrttServerSpec, cpu: Option<usize>, stop: Arc<AtomicBool>) -> (Option<u16>, JoinHandle<io::Result<IrttServerStats>>) {
    let netns = spec.netns.clone();
    spawn_tool("darkbuf-irtt-server", netns, cpu, move |ready| {
        let sock = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
        sys::bind(&sock, spec.bind, spec.port)?;
        if spec.tos != 0 {
            sys::setsockopt_int(&sock, libc::IPPROTO_IP, libc::IP_TOS, spec.tos as libc::c_int, "IP_TOS")?;
        }
        let _ = sys::setsockopt_int(&sock, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1, "SO_TIMESTAMPNS");
        let port = sys::local_addr(&sock)?.1;
        ready.signal(port);
        serve(&sock, spec.duration, &stop)
    })
}

fn serve(sock: &OwnedFd, duration: Duration, stop: &AtomicBool) -> io::Result<IrttServerStats> {
    let deadline = sys::mono_ns().saturating_add(sys::dur_ns(duration));
    let mut st = IrttServerStats::default();
    let mut buf = vec![0u8; 65_536];
    let fd = sock.as_raw_fd();
    while !stop.load(Ordering::Relaxed) {
        let now = sys::mono_ns();
        if now >= deadline {
            break;
        }
        if sys::poll_one(fd, libc::POLLIN, (deadline - now).min(50_000_000))? & libc::POLLIN == 0 {
            continue;
        }
        for _ in 0..1024 {
            let mut ctl: sys::CmsgBuf = [0; 32];
            // SAFETY: all-zero sockaddr_in is valid.
            let mut from: libc::sockaddr_in = unsafe { std::mem::zeroed() };
            let (r, mh) = sys::recvmsg_ctl(fd, &mut buf, &mut ctl, Some(&mut from), libc::MSG_DONTWAIT);
            if r < 0 {
                break;
            }
            let now_user = sys::mono_ns();
            let len = (r as usize).min(buf.len());
            if len < IRTT_MIN_PAYLOAD {
                continue;
            }
            let rx = mono_of_rx_stamp(kernel_rx_stamp(&mh), now_user);
            let (token, seq) = (le(&buf[0..8]), le(&buf[8..16]));
            buf[24..32].copy_from_slice(&rx.to_le_bytes());
            buf[32..40].copy_from_slice(&sys::mono_ns().to_le_bytes());
            // A reply that cannot be sent (a full send buffer) is lost on the way down: the
            // request is recorded as received all the same.
            // SAFETY: buf holds len bytes; `from` is the sender's address.
            unsafe {
                libc::sendto(
                    fd,
                    buf.as_ptr() as *const libc::c_void,
                    len,
                    libc::MSG_DONTWAIT,
                    &from as *const libc::sockaddr_in as *const libc::sockaddr,
                    std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                );
            }
            if (st.received.len() as u64) < IRTT_MAX_REQUESTS {
                st.received.push((token, seq));
            }
        }
    }
    Ok(st)
}

/// Starts a client; the join result has every request it sent.
pub fn spawn_irtt_client(spec: IrttClientSpec, cpu: Option<usize>, stop: Arc<AtomicBool>) -> JoinHandle<io::Result<IrttClientResult>> {
    let netns = spec.netns.clone();
    spawn_tool("darkbuf-irtt", netns, cpu, move |ready| {
        let sock = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
        if spec.tos != 0 {
            sys::setsockopt_int(&sock, libc::IPPROTO_IP, libc::IP_TOS, spec.tos as libc::c_int, "IP_TOS")?;
        }
        sys::setsockopt_int(&sock, libc::IPPROTO_IP, libc::IP_RECVERR, 1, "IP_RECVERR")?;
        let _ = sys::setsockopt_int(&sock, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1, "SO_TIMESTAMPNS");
        sys::connect(&sock, spec.dst, spec.port)?;
        ready.signal(());
        run_client(&sock, &spec, &stop)
    })
    .1
}

fn run_client(sock: &OwnedFd, spec: &IrttClientSpec, stop: &AtomicBool) -> io::Result<IrttClientResult> {
    let fd = sock.as_raw_fd();
    let token = sys::mono_ns().rotate_left(23) ^ (std::process::id() as u64) << 32 ^ 0x6972_7474_0000_0000;
    let mut res = IrttClientResult { token, requests: Vec::new() };
    let interval = sys::dur_ns(spec.interval).max(1_000);
    let timeout = sys::dur_ns(spec.timeout);
    let mut sbuf = vec![0u8; spec.payload.max(IRTT_MIN_PAYLOAD)];
    for (i, b) in sbuf.iter_mut().enumerate().skip(IRTT_MIN_PAYLOAD) {
        *b = (i & 0xff) as u8;
    }
    sbuf[0..8].copy_from_slice(&token.to_le_bytes());
    let mut rbuf = vec![0u8; sbuf.len() + 64];
    let (mut next, mut last_send, mut outstanding) = (0u64, 0u64, 0u64);
    let mut stopping = false;
    loop {
        let now = sys::mono_ns();
        stopping |= stop.load(Ordering::Relaxed);
        let due = spec.start_mono_ns.saturating_add(next.saturating_mul(interval));
        let sending = !stopping && due < spec.stop_mono_ns && next < IRTT_MAX_REQUESTS;
        if sending && now >= due {
            let t = sys::mono_ns();
            sbuf[8..16].copy_from_slice(&next.to_le_bytes());
            sbuf[16..24].copy_from_slice(&t.to_le_bytes());
            sbuf[24..40].fill(0);
            // SAFETY: sbuf is valid for its length.
            let r = unsafe { libc::send(fd, sbuf.as_ptr() as *const libc::c_void, sbuf.len(), libc::MSG_DONTWAIT) };
            res.requests.push(IrttRequest { t_send: t, unsent: r < 0, reply: None });
            if r >= 0 {
                outstanding += 1;
                last_send = t;
            }
            next += 1;
            continue;
        }
        let Some(wait_end) = next_wake(sending, due, now, outstanding, last_send, timeout) else { break };
        let rev = sys::poll_one(fd, libc::POLLIN, wait_end.saturating_sub(now).min(50_000_000))?;
        if rev & libc::POLLERR != 0 {
            drain_errors(fd);
        }
        if rev & libc::POLLIN != 0 {
            outstanding -= receive(fd, &mut rbuf, &mut res, timeout).min(outstanding);
        }
    }
    Ok(res)
}

/// Reads the replies that are there; returns how many were new and in time.
fn receive(fd: libc::c_int, rbuf: &mut [u8], res: &mut IrttClientResult, timeout: u64) -> u64 {
    let mut got = 0;
    for _ in 0..1024 {
        let mut ctl: sys::CmsgBuf = [0; 32];
        let (r, mh) = sys::recvmsg_ctl(fd, rbuf, &mut ctl, None, libc::MSG_DONTWAIT);
        if r < 0 {
            if sys::errno() == libc::EAGAIN || sys::errno() == libc::EWOULDBLOCK {
                return got;
            }
            drain_errors(fd);
            continue;
        }
        let now_user = sys::mono_ns();
        let b = &rbuf[..(r as usize).min(rbuf.len())];
        if b.len() < IRTT_MIN_PAYLOAD || le(&b[0..8]) != res.token {
            continue;
        }
        let (seq, t_send, server_rx, server_tx) = (le(&b[8..16]), le(&b[16..24]), le(&b[24..32]), le(&b[32..40]));
        let Some(req) = usize::try_from(seq).ok().and_then(|i| res.requests.get_mut(i)) else { continue };
        let client_rx = mono_of_rx_stamp(kernel_rx_stamp(&mh), now_user);
        if req.t_send != t_send || req.reply.is_some() || client_rx.saturating_sub(t_send) > timeout {
            continue;
        }
        req.reply = Some(IrttReply { server_rx, server_tx, client_rx });
        got += 1;
    }
    got
}

/// Discards what IP_RECVERR queued (ICMP errors), so poll() stops reporting POLLERR.
fn drain_errors(fd: libc::c_int) {
    let mut b = [0u8; 256];
    for _ in 0..1024 {
        // SAFETY: b is valid for its length.
        let r = unsafe { libc::recv(fd, b.as_mut_ptr() as *mut libc::c_void, b.len(), libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
        if r < 0 {
            return;
        }
    }
}

fn le(b: &[u8]) -> u64 {
    u64::from_le_bytes(b.try_into().unwrap_or([0; 8]))
}

/// A kernel receive stamp (CLOCK_REALTIME) as CLOCK_MONOTONIC, or `now_user` when it
/// is missing or implausible (after `now_user`, or more than a second before it).
pub(super) fn mono_of_rx_stamp(stamp: Option<u64>, now_user: u64) -> u64 {
    let off = sys::real_ns().wrapping_sub(sys::mono_ns());
    match stamp.map(|s| s.wrapping_sub(off)) {
        Some(m) if m <= now_user && now_user - m < 1_000_000_000 => m,
        _ => now_user,
    }
}

/// The simulator's request records of one client: irtt's round trip without the
/// server's own time (the reply's departure is moved back to the request's arrival),
/// and each missing reply lost up or down by whether the server recorded the request.
pub fn irtt_records(client: &IrttClientResult, server: &IrttServerStats) -> Vec<darkbuf_measure::irtt::IrttRec> {
    use darkbuf_measure::irtt::{Fate as IrttFate, IrttRec};
    let seen: std::collections::BTreeSet<u64> = server.received.iter().filter(|(t, _)| *t == client.token).map(|&(_, s)| s).collect();
    client
        .requests
        .iter()
        .enumerate()
        .map(|(seq, r)| match r.reply {
            Some(p) => {
                let server_time = p.server_tx.saturating_sub(p.server_rx);
                let t_server = p.server_rx.max(r.t_send);
                let t_recv = p.client_rx.saturating_sub(server_time).max(t_server);
                IrttRec { t_send: r.t_send, t_server, t_recv, fate: IrttFate::Received }
            }
            None if seen.contains(&(seq as u64)) => IrttRec { t_send: r.t_send, fate: IrttFate::LostDown, ..IrttRec::default() },
            None => IrttRec { t_send: r.t_send, fate: IrttFate::LostUp, ..IrttRec::default() },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use darkbuf_measure::irtt::Fate as IrttFate;

    #[test]
    fn records_leave_out_the_servers_time_and_split_the_losses() {
        let reply = |rx, tx, crx| Some(IrttReply { server_rx: rx, server_tx: tx, client_rx: crx });
        let client = IrttClientResult {
            token: 7,
            requests: vec![
                // Up 100, 40 at the server, down 60: round trip 160.
                IrttRequest { t_send: 1000, unsent: false, reply: reply(1100, 1140, 1200) },
                IrttRequest { t_send: 2000, unsent: false, reply: None },
                IrttRequest { t_send: 3000, unsent: false, reply: None },
                IrttRequest { t_send: 4000, unsent: true, reply: None },
            ],
        };
        // The server answered 0 and 1 of this client, and 2 of another one.
        let server = IrttServerStats { received: vec![(7, 0), (7, 1), (8, 2)] };
        let r = irtt_records(&client, &server);
        assert_eq!((r[0].t_server - r[0].t_send, r[0].t_recv - r[0].t_server, r[0].t_recv - r[0].t_send), (100, 60, 160));
        assert_eq!(r[0].fate, IrttFate::Received);
        assert_eq!(r[1].fate, IrttFate::LostDown);
        assert_eq!(r[2].fate, IrttFate::LostUp);
        assert_eq!(r[3].fate, IrttFate::LostUp);
        assert_eq!(r.iter().map(|x| x.t_send).collect::<Vec<_>>(), [1000, 2000, 3000, 4000]);
    }

    #[test]
    fn a_stamp_from_the_future_or_long_ago_falls_back_to_the_user_clock() {
        let now = sys::mono_ns();
        let off = sys::real_ns().wrapping_sub(sys::mono_ns());
        assert_eq!(mono_of_rx_stamp(None, now), now);
        assert_eq!(mono_of_rx_stamp(Some(now + off + 10_000_000_000), now), now);
        assert_eq!(mono_of_rx_stamp(Some((now + off).saturating_sub(5_000_000_000)), now), now);
        let m = mono_of_rx_stamp(Some(now + off - 1_000_000), now);
        assert!(m <= now && now - m < 2_000_000, "{m} vs {now}");
    }
}
