//! Request/response as netperf's TCP_RR and UDP_RR run it (`[[traffic]] kind = "rr"`):
//! a server in the far namespace (netserver: reads each request whole, writes the
//! response) and one client thread per connection here (netperf: one transaction
//! outstanding; send the request, read the response whole, repeat at once).
//!
//! - Timestamps: CLOCK_MONOTONIC around each transaction, the request's `send()` to the
//!   response's last byte read, as netperf's histogram takes them.
//! - TCP: `TCP_NODELAY` on both ends when the scenario asks (netperf's `-D`; off by
//!   default, as netperf's). IP_TOS carries the DSCP both ways (netperf's `-Y`).
//! - UDP: the client gives up on a response after `timeout` (netperf's `-e`; netperf
//!   waits for ever by default) and counts a timeout. As netperf's, it does not match
//!   responses to requests: a late response ends the next transaction.
//! - Bounds: every loop ends on `stop`, its deadline, and [`RR_MAX_TRANSACTIONS`]; each
//!   blocking call is bounded by a 50 ms socket timeout or poll.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use darkbuf_measure::rr::RrLog;

use super::netns::spawn_tool;
use super::sys;

/// Most transactions one client records.
pub const RR_MAX_TRANSACTIONS: usize = 1 << 24;
/// Most connections one server serves.
const RR_MAX_CONNS: usize = 4096;
/// The bound on one blocking call.
const STEP: Duration = Duration::from_millis(50);
/// The bound on a TCP client's `connect()`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// TCP_RR or UDP_RR, with the message sizes and the marking both ends use.
#[derive(Clone, Copy, Debug)]
pub struct RrProtoSpec {
    pub tcp: bool,
    pub request: usize,
    pub response: usize,
    pub tos: u8,
    pub nodelay: bool,
}

/// The server: bound in `netns` to `bind` (any port); lives at most `duration`.
#[derive(Clone, Debug)]
pub struct RrServerSpec {
    pub netns: String,
    pub bind: Ipv4Addr,
    pub proto: RrProtoSpec,
    pub duration: Duration,
}

/// One client connection: from `netns` to `dst:port`; transactions start in
/// `[start_mono_ns, stop_mono_ns)`; UDP's receive `timeout`.
#[derive(Clone, Debug)]
pub struct RrClientSpec {
    pub netns: String,
    pub dst: Ipv4Addr,
    pub port: u16,
    pub proto: RrProtoSpec,
    pub start_mono_ns: u64,
    pub stop_mono_ns: u64,
    pub timeout: Duration,
}

fn marked_socket(p: &RrProtoSpec) -> io::Result<OwnedFd> {
    let ty = if p.tcp { libc::SOCK_STREAM } else { libc::SOCK_DGRAM };
    let s = sys::socket(libc::AF_INET, ty, 0)?;
    if p.tos != 0 {
        sys::setsockopt_int(&s, libc::IPPROTO_IP, libc::IP_TOS, p.tos as libc::c_int, "IP_TOS")?;
    }
    if p.tcp && p.nodelay {
        sys::setsockopt_int(&s, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1, "TCP_NODELAY")?;
    }
    Ok(s)
}

/// Starts a server; returns its port once it is bound and listening (None: setup
/// failed, the error is the join result).
pub fn spawn_rr_server(spec: RrServerSpec, cpu: Option<usize>, stop: Arc<AtomicBool>) -> (Option<u16>, JoinHandle<io::Result<()>>) {
    spawn_tool("darkbuf-rr-server", spec.netns.clone(), cpu, move |ready| {
        let s = marked_socket(&spec.proto)?;
        sys::setsockopt_int(&s, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1, "SO_REUSEADDR")?;
        sys::bind(&s, spec.bind, 0)?;
        if spec.proto.tcp {
            // SAFETY: listen on a valid bound socket.
            sys::cvt(unsafe { libc::listen(s.as_raw_fd(), 1024) })?;
        }
        let port = sys::local_addr(&s)?.1;
        ready.signal(port);
        let deadline = sys::mono_ns().saturating_add(sys::dur_ns(spec.duration));
        if spec.proto.tcp {
            serve_tcp(&s, &spec.proto, deadline, &stop)
        } else {
            serve_udp(&s, &spec.proto, deadline, &stop)
        }
    })
}

/// netserver's UDP_RR loop: each datagram is a request; the response goes back to its
/// sender.
fn serve_udp(s: &OwnedFd, p: &RrProtoSpec, deadline: u64, stop: &AtomicBool) -> io::Result<()> {
    let mut buf = vec![0u8; 65_536];
    let rsp = vec![0u8; p.response];
    let fd = s.as_raw_fd();
    while !stop.load(Ordering::Relaxed) {
        let now = sys::mono_ns();
        if now >= deadline {
            break;
        }
        if sys::poll_one(fd, libc::POLLIN, (deadline - now).min(sys::dur_ns(STEP)))? & libc::POLLIN == 0 {
            continue;
        }
        // SAFETY: all-zero sockaddr_in is valid; recvfrom writes at most `len` bytes.
        let mut from: libc::sockaddr_in = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        // SAFETY: buf is valid for its length; from/len as above.
        let r = unsafe { libc::recvfrom(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT, &mut from as *mut _ as *mut libc::sockaddr, &mut len) };
        if r < 0 {
            continue;
        }
        // A response that cannot be sent (ENOBUFS) is lost: the client times out.
        // SAFETY: rsp holds its bytes; `from` is the sender's address.
        unsafe { libc::sendto(fd, rsp.as_ptr().cast(), rsp.len(), libc::MSG_DONTWAIT, &from as *const _ as *const libc::sockaddr, len) };
    }
    Ok(())
}

/// netserver's TCP_RR loop over every accepted connection: a connection's bytes are
/// counted until a whole request is in, then the response is written.
fn serve_tcp(l: &OwnedFd, p: &RrProtoSpec, deadline: u64, stop: &AtomicBool) -> io::Result<()> {
    let mut conns: Vec<(OwnedFd, usize)> = Vec::new();
    let mut buf = vec![0u8; 65_536];
    let rsp = vec![0u8; p.response];
    while !stop.load(Ordering::Relaxed) {
        let now = sys::mono_ns();
        if now >= deadline {
            break;
        }
        let mut pfds: Vec<libc::pollfd> = std::iter::once(l.as_raw_fd()).chain(conns.iter().map(|c| c.0.as_raw_fd())).map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
        let ms = ((deadline - now).min(sys::dur_ns(STEP)) / 1_000_000).max(1) as libc::c_int;
        // SAFETY: pfds is a valid array of its length.
        let n = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ms) };
        if n <= 0 {
            continue;
        }
        if pfds[0].revents & libc::POLLIN != 0 && conns.len() < RR_MAX_CONNS {
            // SAFETY: accept4 with no address wanted.
            let fd = unsafe { libc::accept4(l.as_raw_fd(), std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_CLOEXEC) };
            if fd >= 0 {
                // SAFETY: a fresh descriptor owned by nobody else.
                let c = unsafe { OwnedFd::from_raw_fd(fd) };
                sys::set_timeout(&c, libc::SO_SNDTIMEO, STEP)?;
                conns.push((c, 0));
            }
        }
        let mut closed = Vec::new();
        for (k, pfd) in pfds.iter().enumerate().skip(1) {
            if pfd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) == 0 {
                continue;
            }
            let (c, got) = &mut conns[k - 1];
            // SAFETY: buf is valid for its length.
            let r = unsafe { libc::recv(c.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
            if r == 0 || (r < 0 && sys::errno() != libc::EAGAIN) {
                closed.push(k - 1);
                continue;
            }
            *got += r.max(0) as usize;
            while *got >= p.request {
                *got -= p.request;
                if !send_all(c, &rsp, deadline, stop) {
                    break;
                }
            }
        }
        for k in closed.into_iter().rev() {
            conns.swap_remove(k);
        }
    }
    Ok(())
}

/// Writes all of `msg` (blocking, 50 ms at a time); false when it could not by
/// `deadline` or `stop`.
fn send_all(s: &OwnedFd, msg: &[u8], deadline: u64, stop: &AtomicBool) -> bool {
    let mut off = 0;
    while off < msg.len() {
        // SAFETY: msg[off..] is valid; MSG_NOSIGNAL: a reset peer is an error, not SIGPIPE.
        let r = unsafe { libc::send(s.as_raw_fd(), msg[off..].as_ptr().cast(), msg.len() - off, libc::MSG_NOSIGNAL) };
        if r > 0 {
            off += r as usize;
        } else if r == 0 || !matches!(sys::errno(), libc::EAGAIN | libc::EINTR | libc::ENOBUFS) || stop.load(Ordering::Relaxed) || sys::mono_ns() >= deadline {
            return false;
        }
    }
    true
}

/// Reads `n` bytes (blocking, 50 ms at a time); false when they did not all come by
/// `deadline` or `stop`.
fn recv_all(s: &OwnedFd, buf: &mut [u8], n: usize, deadline: u64, stop: &AtomicBool) -> bool {
    let mut got = 0;
    while got < n {
        // SAFETY: buf is valid for its length.
        let r = unsafe { libc::recv(s.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len().min(n - got), 0) };
        if r > 0 {
            got += r as usize;
        } else if r == 0 || !matches!(sys::errno(), libc::EAGAIN | libc::EINTR) || stop.load(Ordering::Relaxed) || sys::mono_ns() >= deadline {
            return false;
        }
    }
    true
}

/// Starts one client connection (a netperf instance); its log of transactions and
/// timeouts is the join result.
pub fn spawn_rr_client(spec: RrClientSpec, cpu: Option<usize>, stop: Arc<AtomicBool>) -> JoinHandle<io::Result<RrLog>> {
    let (_, h) = spawn_tool("darkbuf-rr-client", spec.netns.clone(), cpu, move |ready: &mut super::netns::Ready<()>| {
        let s = marked_socket(&spec.proto)?;
        // The handshake may wait in a full queue (a lost SYN is resent after 1 s): the
        // connect is bounded by CONNECT_TIMEOUT, every later call by STEP.
        sys::set_timeout(&s, libc::SO_SNDTIMEO, CONNECT_TIMEOUT)?;
        sys::connect(&s, spec.dst, spec.port)?;
        sys::set_timeout(&s, libc::SO_RCVTIMEO, STEP)?;
        sys::set_timeout(&s, libc::SO_SNDTIMEO, STEP)?;
        ready.signal(());
        sys::sleep_until_ns(spec.start_mono_ns);
        Ok(transactions(&s, &spec, &stop))
    });
    h
}

/// netperf's loop: one transaction outstanding until `stop_mono_ns`.
fn transactions(s: &OwnedFd, spec: &RrClientSpec, stop: &AtomicBool) -> RrLog {
    let p = &spec.proto;
    let mut log = RrLog::default();
    let req = vec![0u8; p.request];
    let mut buf = vec![0u8; p.response.max(1)];
    // The last transaction may finish after stop: bounded by a second more (TCP) or the
    // timeout (UDP).
    let grace = if p.tcp { 1_000_000_000 } else { sys::dur_ns(spec.timeout) };
    while !stop.load(Ordering::Relaxed) && log.done.len() < RR_MAX_TRANSACTIONS {
        let t0 = sys::mono_ns();
        if t0 >= spec.stop_mono_ns {
            break;
        }
        let hard = spec.stop_mono_ns + grace;
        if !send_all(s, &req, hard, stop) {
            if p.tcp {
                break;
            }
            continue;
        }
        let ok = if p.tcp {
            recv_all(s, &mut buf, p.response, hard, stop)
        } else {
            recv_datagram(s, &mut buf, (t0 + sys::dur_ns(spec.timeout)).min(hard), stop)
        };
        let t1 = sys::mono_ns();
        match ok {
            true => log.done.push((t0, t1)),
            false if !p.tcp && !stop.load(Ordering::Relaxed) && t1 < hard => log.timeouts.push(t1),
            false => break,
        }
    }
    log
}

/// One datagram (the response) by `deadline`.
fn recv_datagram(s: &OwnedFd, buf: &mut [u8], deadline: u64, stop: &AtomicBool) -> bool {
    loop {
        // SAFETY: buf is valid for its length.
        let r = unsafe { libc::recv(s.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if r >= 0 {
            return true;
        }
        if stop.load(Ordering::Relaxed) || sys::mono_ns() >= deadline {
            return false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Over loopback in this namespace (no privileges): TCP_RR and UDP_RR complete
    /// transactions, each taking a positive time, none timing out.
    #[test]
    fn loopback_transactions() {
        for tcp in [true, false] {
            let proto = RrProtoSpec { tcp, request: 100, response: 1000, tos: 0, nodelay: tcp };
            let stop = Arc::new(AtomicBool::new(false));
            let server = RrServerSpec { netns: String::new(), bind: Ipv4Addr::LOCALHOST, proto, duration: Duration::from_secs(5) };
            let (port, sh) = spawn_rr_server(server, None, stop.clone());
            let port = port.expect("the server listens");
            let now = sys::mono_ns();
            let client = RrClientSpec {
                netns: String::new(),
                dst: Ipv4Addr::LOCALHOST,
                port,
                proto,
                start_mono_ns: now,
                stop_mono_ns: now + 200_000_000,
                timeout: Duration::from_secs(1),
            };
            let log = spawn_rr_client(client, None, stop.clone()).join().unwrap().unwrap();
            stop.store(true, Ordering::SeqCst);
            sh.join().unwrap().unwrap();
            assert!(log.done.len() > 10, "tcp {tcp}: {} transactions in 200 ms", log.done.len());
            assert!(log.done.iter().all(|&(a, b)| b > a && a >= now));
            assert!(log.timeouts.is_empty(), "tcp {tcp}: {:?}", log.timeouts);
        }
    }
}
