//! darkbuf's TCP load: bulk senders as iperf3 runs them, and their receiver.
//!
//! One sender thread per `[[traffic]] kind = "tcp"` entry opens `flows` connections to
//! the receiver and keeps each send buffer full with 128 KiB writes (iperf3's default
//! block, the simulator's `APP_WRITE`), non-blocking, multiplexed with `poll()`. Socket
//! options, each set before `connect()` so the handshake already uses them:
//! `TCP_CONGESTION` (the `cc` by its sysctl name), `IP_TOS` (`dscp << 2`), and
//! `SO_MAX_PACING_RATE` for a rate cap: the kernel paces the flow itself (TCP's internal
//! pacing, `tcp_internal_pacing()`, without fq), as `iperf3 --fq-rate` does; the
//! simulator's `rate` is iperf3 `-b`, an application that writes no faster.
//! The send and receive buffers are the namespaces' `tcp_wmem` / `tcp_rmem` (autotuning
//! stays on, as in the simulator), set by the backend, not per socket.
//!
//! The receiver reads in one of two ways ([`ReadMode`]): one thread `poll()`s every
//! connection and reads each until EAGAIN (iperf3 before 3.16), or one thread per
//! connection blocks in `read()` (iperf3 3.16 and later, netperf); each reads 128 KiB
//! at a time, and every thread is pinned to the receiver's CPU.
//!
//! Every `SAMPLE_STEP` (0.2 s, flent's step) on a grid anchored at `grid_t0_ns`, the
//! sender reads each flow's `TCP_INFO` and the receiver records the bytes each
//! connection has read; both also sample once when they end. Rates in a window are
//! interpolated between those samples by the backend. The receiver also reads each
//! receiving socket's buffers once, as `ss -tmi` would show them at the end
//! ([`RcvBuf`]): just before it closes the socket, at EOF, a reset or its own end.
//!
//! Bounds: the loops end on `stop`, at `duration` after start, and a flow's sending
//! ends at its `stop`; every blocking call is a poll, or a read with `SO_RCVTIMEO`, of
//! at most `POLL_MAX`.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::netns::{spawn_tool, Ready};
use super::sys;
use super::tcpinfo::{self, TcpInfo};

/// One application write: iperf3's default block.
pub const TCP_WRITE: usize = 128 * 1024;
/// flent's sampling step, and the goodput series' step.
pub const SAMPLE_STEP: Duration = Duration::from_millis(200);
/// Longest single wait, so `stop` is noticed.
pub const POLL_MAX: Duration = Duration::from_millis(20);

/// One entry's senders.
#[derive(Clone, Debug)]
pub struct TcpSenderSpec {
    pub netns: String,
    pub dst: Ipv4Addr,
    pub port: u16,
    pub flows: u32,
    /// `TCP_CONGESTION` name.
    pub cc: String,
    /// `IP_TOS` byte.
    pub tos: u8,
    /// `SO_MAX_PACING_RATE`, bytes/s.
    pub max_pacing_rate: Option<u64>,
    /// `SO_SNDBUFFORCE` (as `SO_SNDBUF`, past `wmem_max`): a fixed send buffer of twice it.
    pub so_sndbuf: Option<u32>,
    /// Sending starts this long after the thread starts, and ends at `stop`.
    pub start: Duration,
    pub stop: Duration,
    /// The thread's whole life (>= stop).
    pub duration: Duration,
    /// CLOCK_MONOTONIC ns the sampling grid is anchored at.
    pub grid_t0_ns: u64,
}

/// One TCP_INFO reading.
#[derive(Clone, Copy, Debug)]
pub struct InfoSample {
    pub t_ns: u64,
    pub info: TcpInfo,
}

/// One sending flow.
#[derive(Clone, Debug, Default)]
pub struct SenderFlow {
    pub local_port: u16,
    pub bytes_written: u64,
    pub samples: Vec<InfoSample>,
    /// `sk_sndbuf` at the end as autotuned (`SO_SNDBUF`; ss -m's tb); `None` if the
    /// socket had failed.
    pub sndbuf: Option<u32>,
}

#[derive(Clone, Debug, Default)]
pub struct TcpSenderStats {
    pub flows: Vec<SenderFlow>,
    /// Write errors other than EAGAIN (a reset connection ends its flow).
    pub errors: Vec<String>,
}

/// How the receiver reads its connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadMode {
    /// One thread `poll()`s every connection and reads each until EAGAIN.
    #[default]
    Poll,
    /// One thread per connection, blocked in `read()` (at most `POLL_MAX` at a time:
    /// `SO_RCVTIMEO`); the receiver's own thread only accepts.
    Blocking,
}

/// The receiver of one entry's flows.
#[derive(Clone, Debug)]
pub struct TcpReceiverSpec {
    pub netns: String,
    pub bind: Ipv4Addr,
    /// Connections to accept.
    pub flows: u32,
    pub duration: Duration,
    pub grid_t0_ns: u64,
    pub mode: ReadMode,
    /// The listening socket's `TCP_CONGESTION`, which its connections keep
    /// (`tcp_ca_openreq_child()`: set by setsockopt, not the namespace's default).
    /// It matters to a congestion control with TCP_CONG_NEEDS_ECN, whose receiver
    /// echoes CE its own way (DCTCP); empty: the namespace's default.
    pub cc: String,
}

/// One received connection: (CLOCK_MONOTONIC ns, bytes read so far) samples.
#[derive(Clone, Debug, Default)]
pub struct ReceiverFlow {
    pub peer_port: u16,
    pub bytes: u64,
    pub samples: Vec<(u64, u64)>,
    /// The receiving socket's buffers just before the receiver closed it ([`rcv_buf`]):
    /// None if it was never read, `Err` with why when getsockopt failed.
    pub end: Option<Result<RcvBuf, String>>,
}

impl ReceiverFlow {
    /// A connection from `peer_port` accepted now: its first sample, room for `steps`.
    fn accepted(peer_port: u16, steps: usize) -> ReceiverFlow {
        let mut samples = Vec::with_capacity(steps);
        samples.push((sys::mono_ns(), 0));
        ReceiverFlow { peer_port, bytes: 0, samples, end: None }
    }
}

/// A receiving socket's buffers, as `ss -tmi` prints them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RcvBuf {
    /// `sk_rcvbuf` (ss -m's `rb`), bytes.
    pub rcvbuf: u32,
    /// `tp->rcv_ssthresh` (`tcpi_rcv_ssthresh`), bytes.
    pub rcv_ssthresh: u32,
    /// `tp->rcvq_space.space` (`tcpi_rcv_space`), bytes.
    pub rcv_space: u32,
}

/// `getsockopt(SO_RCVBUF)` and `TCP_INFO` of a receiving socket. SO_RCVBUF answers
/// `sk_rcvbuf` as stored (`sock_getsockopt()`: `v.val = READ_ONCE(sk->sk_rcvbuf)`): what
/// autotuning set, or twice what a `setsockopt(SO_RCVBUF)` asked; darkbuf sets none.
pub fn rcv_buf(fd: &impl AsRawFd) -> io::Result<RcvBuf> {
    let rcvbuf = sys::getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF).map_err(|e| io::Error::new(e.kind(), format!("getsockopt SO_RCVBUF: {e}")))?;
    let info = tcpinfo::tcp_info(fd).map_err(|e| io::Error::new(e.kind(), format!("getsockopt TCP_INFO: {e}")))?;
    Ok(RcvBuf { rcvbuf: rcvbuf.max(0) as u32, rcv_ssthresh: info.rcv_ssthresh, rcv_space: info.rcv_space })
}

/// [`rcv_buf`] as [`ReceiverFlow::end`] keeps it.
fn rcv_end(fd: &impl AsRawFd) -> Option<Result<RcvBuf, String>> {
    Some(rcv_buf(fd).map_err(|e| e.to_string()))
}

#[derive(Clone, Debug, Default)]
pub struct TcpReceiverStats {
    pub flows: Vec<ReceiverFlow>,
    pub port: u16,
}

/// The next grid point after `now`.
fn next_tick(now: u64, t0: u64) -> u64 {
    let step = sys::dur_ns(SAMPLE_STEP);
    if now < t0 {
        return t0;
    }
    t0 + ((now - t0) / step + 1) * step
}

pub(super) fn set_nonblocking(fd: &impl AsRawFd) -> io::Result<()> {
    // SAFETY: fcntl on a valid descriptor.
    let fl = sys::cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) })?;
    // SAFETY: as above.
    sys::cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK) }).map(|_| ())
}

/// poll() over `fds` for at most `timeout_ns`; EINTR counts as a timeout.
pub(super) fn poll_all(fds: &mut [libc::pollfd], timeout_ns: u64) -> io::Result<()> {
    let ts = libc::timespec { tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t, tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long };
    // SAFETY: fds is a valid array of its length; valid timespec; no signal mask.
    let rc = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &ts, std::ptr::null()) };
    if rc < 0 && sys::errno() != libc::EINTR {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Starts the receiver, its thread (and in [`ReadMode::Blocking`] its readers) pinned to
/// `cpu`; returns its listening port once it listens (None: setup failed, the error is
/// the join result).
pub fn spawn_tcp_receiver(spec: TcpReceiverSpec, cpu: Option<usize>, stop: Arc<AtomicBool>) -> (Option<u16>, JoinHandle<io::Result<TcpReceiverStats>>) {
    let netns = spec.netns.clone();
    spawn_tool("darkbuf-tcp-rx", netns, cpu, move |ready| match spec.mode {
        ReadMode::Poll => run_receiver(&spec, &stop, ready),
        ReadMode::Blocking => run_blocking_receiver(&spec, cpu, &stop, ready),
    })
}

pub(super) fn listen(bind: Ipv4Addr, backlog: u32, cc: &str) -> io::Result<OwnedFd> {
    let l = sys::socket(libc::AF_INET, libc::SOCK_STREAM, 0)?;
    sys::setsockopt_int(&l, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1, "SO_REUSEADDR")?;
    if !cc.is_empty() {
        set_congestion(&l, cc)?;
    }
    sys::bind(&l, bind, 0)?;
    // SAFETY: listen on a valid bound socket.
    sys::cvt(unsafe { libc::listen(l.as_raw_fd(), backlog.max(1) as libc::c_int) })?;
    set_nonblocking(&l)?;
    Ok(l)
}

/// Accepts one connection if one is waiting; `nonblocking`: the new socket's O_NONBLOCK.
pub(super) fn accept(l: &OwnedFd, nonblocking: bool) -> io::Result<Option<(OwnedFd, u16)>> {
    // SAFETY: zeroed sockaddr_in is valid; accept4 writes at most `len` bytes.
    let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    let flags = libc::SOCK_CLOEXEC | if nonblocking { libc::SOCK_NONBLOCK } else { 0 };
    // SAFETY: as above.
    let fd = unsafe { libc::accept4(l.as_raw_fd(), &mut sa as *mut _ as *mut libc::sockaddr, &mut len, flags) };
    if fd < 0 {
        return match sys::errno() {
            libc::EAGAIN | libc::EINTR | libc::ECONNABORTED => Ok(None),
            _ => Err(io::Error::last_os_error()),
        };
    }
    // SAFETY: a fresh descriptor owned by nobody else.
    let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    Ok(Some((fd, sys::from_sockaddr_in(&sa).1)))
}

fn run_receiver(spec: &TcpReceiverSpec, stop: &AtomicBool, ready: &mut Ready<u16>) -> io::Result<TcpReceiverStats> {
    let l = listen(spec.bind, spec.flows, &spec.cc)?;
    let port = sys::local_addr(&l)?.1;
    let mut st = TcpReceiverStats { port, flows: Vec::with_capacity(spec.flows as usize) };
    let mut conns: Vec<Option<OwnedFd>> = Vec::with_capacity(spec.flows as usize);
    let mut pfds: Vec<libc::pollfd> = Vec::with_capacity(spec.flows as usize + 1);
    let mut buf = vec![0u8; TCP_WRITE];
    let t_start = sys::mono_ns();
    let deadline = t_start.saturating_add(sys::dur_ns(spec.duration));
    let steps = (spec.duration.as_nanos() / SAMPLE_STEP.as_nanos()) as usize + 2;
    let mut tick = next_tick(t_start, spec.grid_t0_ns);
    ready.signal(port);
    loop {
        let now = sys::mono_ns();
        if stop.load(Ordering::Relaxed) || now >= deadline {
            break;
        }
        if now >= tick {
            for f in st.flows.iter_mut() {
                f.samples.push((now, f.bytes));
            }
            tick = next_tick(now, spec.grid_t0_ns);
        }
        pfds.clear();
        if conns.len() < spec.flows as usize {
            pfds.push(libc::pollfd { fd: l.as_raw_fd(), events: libc::POLLIN, revents: 0 });
        }
        pfds.extend(conns.iter().flatten().map(|c| libc::pollfd { fd: c.as_raw_fd(), events: libc::POLLIN, revents: 0 }));
        let wait = tick.min(deadline).saturating_sub(now).min(sys::dur_ns(POLL_MAX));
        poll_all(&mut pfds, wait)?;
        if conns.len() < spec.flows as usize {
            if let Some((c, peer)) = accept(&l, true)? {
                st.flows.push(ReceiverFlow::accepted(peer, steps));
                conns.push(Some(c));
            }
        }
        read_ready(&mut conns, &mut st.flows, &mut buf)?;
    }
    let now = sys::mono_ns();
    for f in st.flows.iter_mut() {
        f.samples.push((now, f.bytes));
    }
    // The connections still open (the others were read when they closed).
    for (c, f) in conns.iter().zip(st.flows.iter_mut()) {
        if let Some(fd) = c {
            f.end = rcv_end(fd);
        }
    }
    Ok(st)
}

/// Reads what every open connection has (each until EAGAIN, bounded by 64 reads); a
/// connection that ends (EOF, reset) has its buffers read, then is closed.
fn read_ready(conns: &mut [Option<OwnedFd>], flows: &mut [ReceiverFlow], buf: &mut [u8]) -> io::Result<()> {
    for (c, f) in conns.iter_mut().zip(flows.iter_mut()) {
        let Some(fd) = c.as_ref() else { continue };
        for _ in 0..64 {
            match read_once(fd, buf)? {
                ReadOutcome::Bytes(n) => f.bytes += n,
                ReadOutcome::Nothing => break,
                ReadOutcome::Ended => {
                    f.end = rcv_end(fd);
                    *c = None;
                    break;
                }
            }
        }
    }
    Ok(())
}

/// What one `read()` of a receiving socket gave.
pub(super) enum ReadOutcome {
    Bytes(u64),
    /// Nothing yet: EAGAIN (a non-blocking socket, or `SO_RCVTIMEO` passed) or EINTR.
    Nothing,
    /// The connection ended: EOF (the sender closed) or a reset.
    Ended,
}

/// One `read()` of `fd` into `buf`; an error other than those [`ReadOutcome`] names is the
/// receiver's.
pub(super) fn read_once(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<ReadOutcome> {
    // SAFETY: buf is valid for its length.
    let r = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
    if r > 0 {
        return Ok(ReadOutcome::Bytes(r as u64));
    }
    if r == 0 {
        return Ok(ReadOutcome::Ended);
    }
    match sys::errno() {
        libc::EAGAIN | libc::EINTR => Ok(ReadOutcome::Nothing),
        libc::ECONNRESET => Ok(ReadOutcome::Ended),
        _ => Err(io::Error::last_os_error()),
    }
}

/// [`ReadMode::Blocking`]: this thread accepts the connections and starts a reader for
/// each ([`read_blocking`]), then joins them. A reader that fails sets `quit`, so the
/// others end too; the first error is the receiver's.
fn run_blocking_receiver(spec: &TcpReceiverSpec, cpu: Option<usize>, stop: &Arc<AtomicBool>, ready: &mut Ready<u16>) -> io::Result<TcpReceiverStats> {
    let l = listen(spec.bind, spec.flows, &spec.cc)?;
    let port = sys::local_addr(&l)?.1;
    let t_start = sys::mono_ns();
    let deadline = t_start.saturating_add(sys::dur_ns(spec.duration));
    let steps = (spec.duration.as_nanos() / SAMPLE_STEP.as_nanos()) as usize + 2;
    let quit = Arc::new(AtomicBool::new(false));
    let mut readers: Vec<JoinHandle<io::Result<ReceiverFlow>>> = Vec::with_capacity(spec.flows as usize);
    ready.signal(port);
    let mut err = None;
    while readers.len() < spec.flows as usize {
        let now = sys::mono_ns();
        if stop.load(Ordering::Relaxed) || quit.load(Ordering::Relaxed) || now >= deadline {
            break;
        }
        let accepted = sys::poll_one(l.as_raw_fd(), libc::POLLIN, deadline.saturating_sub(now).min(sys::dur_ns(POLL_MAX))).and_then(|_| accept(&l, false));
        let (c, peer) = match accepted {
            Ok(Some(a)) => a,
            Ok(None) => continue,
            Err(e) => {
                err = Some(e);
                break;
            }
        };
        let flow = ReceiverFlow::accepted(peer, steps);
        let (stop, quit) = (stop.clone(), quit.clone());
        let grid_t0_ns = spec.grid_t0_ns;
        let spawned = std::thread::Builder::new().name("darkbuf-tcp-rd".into()).spawn(move || read_blocking(c, flow, cpu, grid_t0_ns, deadline, &stop, &quit));
        match spawned {
            Ok(h) => readers.push(h),
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    drop(l);
    if err.is_some() {
        quit.store(true, Ordering::Relaxed);
    }
    let mut st = TcpReceiverStats { port, flows: Vec::with_capacity(readers.len()) };
    for h in readers {
        match h.join() {
            Ok(Ok(f)) => st.flows.push(f),
            Ok(Err(e)) => _ = err.get_or_insert(e),
            Err(_) => _ = err.get_or_insert(io::Error::other("a TCP reader thread panicked")),
        }
    }
    match err {
        Some(e) => Err(e),
        None => Ok(st),
    }
}

/// One connection's reader in [`ReadMode::Blocking`]: pinned to `cpu`, blocked in
/// `read()` for at most `POLL_MAX` at a time (the socket's `SO_RCVTIMEO`), sampling its
/// bytes on the grid, until EOF, a reset, `stop`, `quit` or `deadline`; then the
/// socket's buffers are read, and it is closed.
fn read_blocking(
    c: OwnedFd,
    mut f: ReceiverFlow,
    cpu: Option<usize>,
    grid_t0_ns: u64,
    deadline: u64,
    stop: &AtomicBool,
    quit: &AtomicBool,
) -> io::Result<ReceiverFlow> {
    let r = read_blocking_loop(&c, &mut f, cpu, grid_t0_ns, deadline, stop, quit);
    f.samples.push((sys::mono_ns(), f.bytes));
    f.end = rcv_end(&c);
    if r.is_err() {
        quit.store(true, Ordering::Relaxed);
    }
    r.map(|()| f)
}

fn read_blocking_loop(
    c: &OwnedFd,
    f: &mut ReceiverFlow,
    cpu: Option<usize>,
    grid_t0_ns: u64,
    deadline: u64,
    stop: &AtomicBool,
    quit: &AtomicBool,
) -> io::Result<()> {
    if let Some(cpu) = cpu {
        sys::pin_to_cpu(cpu)?;
    }
    sys::tight_timer_slack();
    sys::set_timeout(c, libc::SO_RCVTIMEO, POLL_MAX)?;
    let mut buf = vec![0u8; TCP_WRITE];
    let mut tick = next_tick(sys::mono_ns(), grid_t0_ns);
    loop {
        let now = sys::mono_ns();
        if stop.load(Ordering::Relaxed) || quit.load(Ordering::Relaxed) || now >= deadline {
            return Ok(());
        }
        if now >= tick {
            f.samples.push((now, f.bytes));
            tick = next_tick(now, grid_t0_ns);
        }
        match read_once(c, &mut buf)? {
            ReadOutcome::Bytes(n) => f.bytes += n,
            ReadOutcome::Nothing => {}
            ReadOutcome::Ended => return Ok(()),
        }
    }
}

/// Starts one entry's senders. They connect when `start` comes; returns at once.
pub fn spawn_tcp_sender(spec: TcpSenderSpec, cpu: Option<usize>, stop: Arc<AtomicBool>) -> JoinHandle<io::Result<TcpSenderStats>> {
    let netns = spec.netns.clone();
    spawn_tool("darkbuf-tcp-tx", netns, cpu, move |ready: &mut Ready<()>| {
        ready.signal(());
        run_sender(&spec, &stop)
    })
    .1
}

/// `setsockopt(TCP_CONGESTION)` by the congestion control's name.
pub(super) fn set_congestion(s: &OwnedFd, name: &str) -> io::Result<()> {
    let cc = name.as_bytes();
    // SAFETY: cc is valid for its length; TCP_CONGESTION takes a name without NUL.
    sys::cvt(unsafe { libc::setsockopt(s.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_CONGESTION, cc.as_ptr() as *const libc::c_void, cc.len() as libc::socklen_t) })
        .map(|_| ())
        .map_err(|e| io::Error::new(e.kind(), format!("setsockopt TCP_CONGESTION={name}: {e}")))
}

/// A connected, non-blocking sending socket with the spec's options.
pub fn open_flow(spec: &TcpSenderSpec) -> io::Result<OwnedFd> {
    let s = sys::socket(libc::AF_INET, libc::SOCK_STREAM, 0)?;
    set_congestion(&s, &spec.cc)?;
    if spec.tos != 0 {
        sys::setsockopt_int(&s, libc::IPPROTO_IP, libc::IP_TOS, spec.tos as libc::c_int, "IP_TOS")?;
    }
    if let Some(r) = spec.max_pacing_rate {
        // The 64-bit form (since 4.13 the kernel accepts a u64 here).
        sys::setsockopt(&s, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE, r)
            .map_err(|e| io::Error::new(e.kind(), format!("setsockopt SO_MAX_PACING_RATE={r}: {e}")))?;
    }
    if let Some(v) = spec.so_sndbuf {
        sys::setsockopt_int(&s, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, v as libc::c_int, "SO_SNDBUFFORCE")?;
    }
    sys::set_timeout(&s, libc::SO_SNDTIMEO, Duration::from_secs(2))?;
    sys::connect(&s, spec.dst, spec.port)?;
    set_nonblocking(&s)?;
    Ok(s)
}

fn sample_all(socks: &[Option<OwnedFd>], flows: &mut [SenderFlow], now: u64) {
    for (s, f) in socks.iter().zip(flows.iter_mut()) {
        if let Some(Ok(info)) = s.as_ref().map(tcpinfo::tcp_info) {
            f.samples.push(InfoSample { t_ns: now, info });
        }
    }
}

fn run_sender(spec: &TcpSenderSpec, stop: &AtomicBool) -> io::Result<TcpSenderStats> {
    let t0 = sys::mono_ns();
    let start = t0 + sys::dur_ns(spec.start);
    let end = t0 + sys::dur_ns(spec.stop.min(spec.duration));
    while sys::mono_ns() < start {
        if stop.load(Ordering::Relaxed) {
            return Ok(TcpSenderStats::default());
        }
        std::thread::sleep(Duration::from_nanos(start.saturating_sub(sys::mono_ns()).clamp(1_000, sys::dur_ns(POLL_MAX))));
    }
    let steps = (spec.duration.as_nanos() / SAMPLE_STEP.as_nanos()) as usize + 2;
    let mut st = TcpSenderStats::default();
    let mut socks: Vec<Option<OwnedFd>> = Vec::with_capacity(spec.flows as usize);
    for _ in 0..spec.flows {
        let s = open_flow(spec)?;
        let local_port = sys::local_addr(&s)?.1;
        st.flows.push(SenderFlow { local_port, bytes_written: 0, samples: Vec::with_capacity(steps), sndbuf: None });
        socks.push(Some(s));
    }
    let block = vec![0u8; TCP_WRITE];
    let mut pfds: Vec<libc::pollfd> = Vec::with_capacity(socks.len());
    let mut tick = next_tick(sys::mono_ns(), spec.grid_t0_ns);
    loop {
        let now = sys::mono_ns();
        if stop.load(Ordering::Relaxed) || now >= end || socks.iter().all(|s| s.is_none()) {
            break;
        }
        if now >= tick {
            sample_all(&socks, &mut st.flows, now);
            tick = next_tick(now, spec.grid_t0_ns);
        }
        pfds.clear();
        pfds.extend(socks.iter().map(|s| libc::pollfd { fd: s.as_ref().map_or(-1, |s| s.as_raw_fd()), events: libc::POLLOUT, revents: 0 }));
        poll_all(&mut pfds, tick.min(end).saturating_sub(now).min(sys::dur_ns(POLL_MAX)))?;
        for (i, p) in pfds.iter().enumerate() {
            if p.fd < 0 || p.revents == 0 {
                continue;
            }
            if let Err(e) = write_some(&socks[i], &block, &mut st.flows[i]) {
                // The receivers close their sockets when the run stops; a write that
                // meets the closed connection then is the end of the run, not an error.
                let closed_at_stop = stop.load(Ordering::Relaxed) && matches!(e.raw_os_error(), Some(libc::EPIPE | libc::ECONNRESET));
                if !closed_at_stop {
                    st.errors.push(format!("flow {i}: {e}"));
                }
                // Its send buffer as it ended (a forwarded flow's RST can come back
                // before this loop sees the stop).
                st.flows[i].sndbuf = sndbuf_of(&socks[i]);
                socks[i] = None;
            }
        }
    }
    sample_all(&socks, &mut st.flows, sys::mono_ns());
    for (s, f) in socks.iter().zip(st.flows.iter_mut()) {
        if s.is_some() {
            f.sndbuf = sndbuf_of(s);
        }
    }
    Ok(st)
}

/// `SO_SNDBUF` of a sender's socket (`sk_sndbuf` as autotuned).
fn sndbuf_of(s: &Option<OwnedFd>) -> Option<u32> {
    s.as_ref().and_then(|s| sys::getsockopt_int(s, libc::SOL_SOCKET, libc::SO_SNDBUF).ok()).map(|v| v.max(0) as u32)
}

/// Writes blocks until the send buffer is full (EAGAIN), at most 64 per call.
fn write_some(s: &Option<OwnedFd>, block: &[u8], f: &mut SenderFlow) -> io::Result<()> {
    let Some(fd) = s.as_ref() else { return Ok(()) };
    for _ in 0..64 {
        // SAFETY: block is valid for its length; MSG_NOSIGNAL: no SIGPIPE on a reset.
        let r = unsafe { libc::send(fd.as_raw_fd(), block.as_ptr() as *const libc::c_void, block.len(), libc::MSG_NOSIGNAL) };
        if r >= 0 {
            f.bytes_written += r as u64;
            continue;
        }
        return match sys::errno() {
            libc::EAGAIN | libc::EINTR => Ok(()),
            _ => Err(io::Error::last_os_error()),
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_ticks() {
        let step = 200_000_000;
        assert_eq!(next_tick(0, 1_000), 1_000);
        assert_eq!(next_tick(1_000, 1_000), 1_000 + step);
        assert_eq!(next_tick(1_000 + step - 1, 1_000), 1_000 + step);
        assert_eq!(next_tick(1_000 + 3 * step + 5, 1_000), 1_000 + 4 * step);
    }

    /// Loopback, no privileges: two reno flows for 0.5 s; every byte written and
    /// acknowledged is read, and both ends sampled on the grid.
    #[test]
    fn loopback_flows() {
        loopback_flows_read(ReadMode::Poll);
    }

    /// The same with a blocking reader per connection, pinned to the receiver's CPU.
    #[test]
    fn loopback_flows_blocking() {
        loopback_flows_read(ReadMode::Blocking);
    }

    fn loopback_flows_read(mode: ReadMode) {
        let stop = Arc::new(AtomicBool::new(false));
        let t0 = sys::mono_ns();
        let rx = TcpReceiverSpec { netns: String::new(), bind: Ipv4Addr::LOCALHOST, flows: 2, duration: Duration::from_secs(3), grid_t0_ns: t0, mode, cc: String::new() };
        // Pinned (the blocking readers pin themselves too) to a CPU this test may use.
        // SAFETY: sched_getcpu has no preconditions.
        let cpu = unsafe { libc::sched_getcpu() }.max(0) as usize;
        let (port, rh) = spawn_tcp_receiver(rx, Some(cpu), stop.clone());
        let port = port.expect("receiver listens");
        let tx = TcpSenderSpec {
            netns: String::new(),
            dst: Ipv4Addr::LOCALHOST,
            port,
            flows: 2,
            cc: "reno".into(),
            tos: 0x10,
            max_pacing_rate: Some(5_000_000),
            so_sndbuf: None,
            start: Duration::from_millis(50),
            stop: Duration::from_millis(650),
            duration: Duration::from_secs(2),
            grid_t0_ns: t0,
        };
        let sh = spawn_tcp_sender(tx, None, stop.clone());
        let s = sh.join().unwrap().unwrap();
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::SeqCst);
        let r = rh.join().unwrap().unwrap();
        assert_eq!(s.flows.len(), 2);
        assert_eq!(r.flows.len(), 2);
        assert!(s.errors.is_empty(), "{:?}", s.errors);
        let mut sent: Vec<u16> = s.flows.iter().map(|f| f.local_port).collect();
        let mut got: Vec<u16> = r.flows.iter().map(|f| f.peer_port).collect();
        sent.sort_unstable();
        got.sort_unstable();
        assert_eq!(sent, got);
        for f in &s.flows {
            // 0.6 s: at least two grid samples and the final one.
            assert!(f.samples.len() >= 3, "{}", f.samples.len());
            let last = f.samples.last().unwrap().info;
            assert!(last.bytes_acked.unwrap() > 0);
            // The pacing cap is honoured: 5 MB/s for 0.6 s is at most ~3 MB plus the
            // initial window and the send buffer.
            assert!(last.pacing_rate.unwrap() <= 5_000_000);
            let rf = r.flows.iter().find(|x| x.peer_port == f.local_port).unwrap();
            assert!(rf.bytes >= last.bytes_acked.unwrap().saturating_sub(1));
            assert!(rf.samples.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
            // The accept's sample, at least one on the grid, and the last.
            assert!(rf.samples.len() >= 3, "{mode:?}: {}", rf.samples.len());
            // The sender closed first: the buffers were read at EOF.
            let b = rf.end.clone().expect("read before closing").unwrap();
            assert!(b.rcvbuf > 0 && b.rcv_ssthresh > 0 && b.rcv_space > 0, "{mode:?}: {b:?}");
        }
    }

    /// A connection still open when the receiver stops has its buffers read then, in
    /// both modes; an autotuned `sk_rcvbuf` is at least `rcv_ssthresh`'s worth of data.
    #[test]
    fn open_connections_are_read_at_the_receivers_end() {
        for mode in [ReadMode::Poll, ReadMode::Blocking] {
            let stop = Arc::new(AtomicBool::new(false));
            let rx = TcpReceiverSpec { netns: String::new(), bind: Ipv4Addr::LOCALHOST, flows: 1, duration: Duration::from_secs(5), grid_t0_ns: 0, mode, cc: String::new() };
            let (port, rh) = spawn_tcp_receiver(rx, None, stop.clone());
            let mut c = std::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port.expect("receiver listens"))).unwrap();
            std::io::Write::write_all(&mut c, &vec![0u8; 1 << 20]).unwrap();
            std::thread::sleep(Duration::from_millis(200));
            stop.store(true, Ordering::SeqCst);
            let r = rh.join().unwrap().unwrap();
            drop(c);
            assert_eq!(r.flows.len(), 1);
            let f = &r.flows[0];
            assert_eq!(f.bytes, 1 << 20, "{mode:?}");
            let b = f.end.clone().expect("read at the receiver's end").unwrap();
            assert!(b.rcvbuf > 0 && b.rcv_ssthresh > 0 && b.rcv_space > 0, "{mode:?}: {b:?}");
            assert!(b.rcvbuf >= b.rcv_ssthresh, "{mode:?}: {b:?}");
        }
    }

    /// A blocking receiver whose peers never connect ends at `stop`, within a few
    /// `POLL_MAX`, with no flows.
    #[test]
    fn blocking_receiver_ends_on_stop_without_connections() {
        let stop = Arc::new(AtomicBool::new(false));
        let rx = TcpReceiverSpec {
            netns: String::new(),
            bind: Ipv4Addr::LOCALHOST,
            flows: 3,
            duration: Duration::from_secs(30),
            grid_t0_ns: 0,
            mode: ReadMode::Blocking,
            cc: "reno".into(),
        };
        let (port, rh) = spawn_tcp_receiver(rx, None, stop.clone());
        assert!(port.is_some());
        std::thread::sleep(Duration::from_millis(50));
        let t = std::time::Instant::now();
        stop.store(true, Ordering::SeqCst);
        let r = rh.join().unwrap().unwrap();
        assert!(r.flows.is_empty());
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    }
}
