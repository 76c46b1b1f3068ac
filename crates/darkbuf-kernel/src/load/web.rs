//! `[[traffic]] kind = "web"` on the kernel backend: short TCP connections opened at the
//! scenario's Poisson arrivals (docs/web.md), as a client's `socket()`, `connect()`,
//! `write(size)`, `close()` makes each, and the server that reads each to EOF.
//!
//! - The arrivals and sizes are the simulator's own seeded draw
//!   (`darkbuf_scenario::web::Arrivals`), so both backends offer the same flows.
//! - Senders: a bounded pool of [`WEB_POOL_THREADS`] threads per entry in the sending
//!   namespace, pinned to the entry's `cpu`. Each takes the next connection of the
//!   schedule, sleeps until it is due, then opens it: `TCP_CONGESTION` (the entry's
//!   `cc`), `IP_TOS` and `SO_SNDBUFFORCE` before `connect()`, the connect, `size` bytes in
//!   writes of at most 128 KB (the simulator's application writes), and `close()`
//!   (a FIN, as the kernel sends it after the data). A thread holds one connection at a
//!   time, so the pool bounds the connections open at once; a connection that comes due
//!   while every thread is busy waits for one, and the wait is recorded
//!   ([`WebSenderStats::backlog_max`], [`WebConn::due_ns`] against
//!   [`WebConn::t_connect_ns`]) so that a pool that cannot keep the rate is said, not
//!   hidden in the FCTs.
//! - Receiver: one thread in the receiving namespace `poll()`s the listener and every
//!   accepted connection and reads each until EOF, stamping each read that returns bytes
//!   (CLOCK_MONOTONIC, which all namespaces share, as the sender's `connect()` stamp).
//!   The FCT is from the sender's `connect()` to the receiver's read of the last byte.
//! - A connection is matched to its sender by the sender's port: the first connection
//!   accepted from that port at or after its `connect()` (an earlier one from the same
//!   port had closed before, as a port is not reused while its connection lives).
//! - Bounds: [`WEB_POOL_THREADS`] sender threads, [`WEB_RX_MAX_OPEN`] connections read at
//!   once, the schedule's length (at most [`WEB_MAX_ARRIVALS`]), and every wait a poll
//!   of at most [`STEP`] (a sleep for a due time: [`WAIT_STEP`]) that ends on `stop` or
//!   the tools' deadline.
//!
//! The first connection's time is relative to the run's start, which the backend sets
//! in `t0` once the pool is ready ([`WebTx::t0`]): the threads are started before the
//! load's clock so that thread creation (slow in an emulated guest) delays no arrival.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::netns::{spawn_tool, Ready};
use super::sys;
use super::tcp::{accept, listen, poll_all, read_once, set_congestion, set_nonblocking, ReadOutcome};

/// Sender threads per web entry: the most connections one entry holds open at once.
pub const WEB_POOL_THREADS: usize = 256;
/// Connections one entry may draw in a run (its schedule, 16 bytes each).
pub const WEB_MAX_ARRIVALS: usize = 1_000_000;
/// Connections the receiver reads at once; more wait in the listener's backlog.
pub const WEB_RX_MAX_OPEN: usize = 4096;
/// One application write: the bulk flows' (the simulator's web connections write the same).
const WEB_WRITE: usize = super::tcp::TCP_WRITE;
/// What every write sends (the bytes' values do not matter).
static ZEROS: [u8; WEB_WRITE] = [0; WEB_WRITE];
/// The longest single wait in a connection or the receiver, so `stop` is noticed: the
/// bulk flows' own.
pub const STEP: Duration = super::tcp::POLL_MAX;
/// The longest single sleep of a thread waiting for its connection's due time: the
/// pool's idle threads wake this often to look at `stop` (256 threads: 2,560 wakeups/s
/// on the entry's CPU, where 20 ms steps would make 12,800).
pub const WAIT_STEP: Duration = Duration::from_millis(100);

/// One entry's senders.
#[derive(Clone, Debug)]
pub struct WebTxSpec {
    pub netns: String,
    pub dst: Ipv4Addr,
    pub port: u16,
    /// `TCP_CONGESTION` name.
    pub cc: String,
    /// `IP_TOS` byte.
    pub tos: u8,
    /// `SO_SNDBUFFORCE`, when the scenario fixes the send buffer.
    pub so_sndbuf: Option<u32>,
    /// (due, size) of each connection, ns from the run's start, ascending.
    pub schedule: Arc<Vec<(u64, u64)>>,
    /// Threads in the pool (at most [`WEB_POOL_THREADS`]).
    pub threads: usize,
    /// CLOCK_MONOTONIC ns after which no connection writes any more.
    pub deadline_ns: u64,
}

/// One connection as its sender saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebConn {
    /// Its index in the schedule.
    pub index: usize,
    /// When it was due and when `connect()` was called, CLOCK_MONOTONIC ns.
    pub due_ns: u64,
    pub t_connect_ns: u64,
    /// The sender's port (0: the socket could not be bound).
    pub local_port: u16,
    pub size: u64,
    pub written: u64,
    /// Why it did not write all of `size` (None: it did, and closed).
    pub error: Option<String>,
}

/// One entry's senders' records.
#[derive(Clone, Debug, Default)]
pub struct WebSenderStats {
    /// Every connection a thread took, by schedule index.
    pub conns: Vec<WebConn>,
    /// The most connections due and not yet opened at once, as the threads saw it when
    /// they took one (0 while the pool keeps up).
    pub backlog_max: u64,
}

/// One connection as the receiver read it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WebRead {
    pub peer_port: u16,
    pub t_accept_ns: u64,
    pub bytes: u64,
    /// The read that returned the last bytes so far, CLOCK_MONOTONIC ns (0: none yet).
    pub t_last_ns: u64,
    /// EOF (or a reset) was read.
    pub ended: bool,
}

/// The receiver of one entry's connections.
#[derive(Clone, Debug)]
pub struct WebRxSpec {
    pub netns: String,
    pub bind: Ipv4Addr,
    /// The listener's `TCP_CONGESTION` (its connections keep it).
    pub cc: String,
    /// Most connections it records (the schedule's length: one each).
    pub max_conns: usize,
    pub duration: Duration,
}

/// A started entry: the receiver, the pool, and the run's start the pool waits for.
pub struct WebTx {
    pub threads: Vec<JoinHandle<io::Result<Vec<WebConn>>>>,
    pub backlog_max: Arc<AtomicU64>,
    /// The run's start, CLOCK_MONOTONIC ns (0 until the backend sets it).
    pub t0: Arc<AtomicU64>,
}

/// Starts the receiver; returns its port once it listens (None: the error is the join
/// result).
pub fn spawn_web_receiver(spec: WebRxSpec, cpu: Option<usize>, stop: Arc<AtomicBool>) -> (Option<u16>, JoinHandle<io::Result<Vec<WebRead>>>) {
    spawn_tool("darkbuf-web-rx", spec.netns.clone(), cpu, move |ready: &mut Ready<u16>| {
        let l = listen(spec.bind, 4096, &spec.cc)?;
        ready.signal(sys::local_addr(&l)?.1);
        receive(&l, &spec, &stop)
    })
}

/// The receiver's loop: accept, read every connection to EOF, stamp each read.
fn receive(l: &OwnedFd, spec: &WebRxSpec, stop: &AtomicBool) -> io::Result<Vec<WebRead>> {
    let deadline = sys::mono_ns().saturating_add(sys::dur_ns(spec.duration));
    let mut done: Vec<WebRead> = Vec::new();
    let mut open: Vec<(OwnedFd, WebRead)> = Vec::new();
    let mut pfds: Vec<libc::pollfd> = Vec::new();
    let mut buf = vec![0u8; WEB_WRITE];
    loop {
        let now = sys::mono_ns();
        if stop.load(Ordering::Relaxed) || now >= deadline {
            break;
        }
        let accepting = open.len() < WEB_RX_MAX_OPEN && done.len() + open.len() < spec.max_conns;
        pfds.clear();
        pfds.push(libc::pollfd { fd: if accepting { l.as_raw_fd() } else { -1 }, events: libc::POLLIN, revents: 0 });
        pfds.extend(open.iter().map(|(c, _)| libc::pollfd { fd: c.as_raw_fd(), events: libc::POLLIN, revents: 0 }));
        poll_all(&mut pfds, (deadline - now).min(sys::dur_ns(STEP)))?;
        let mut k = open.len();
        while k > 0 {
            k -= 1;
            if pfds[k + 1].revents == 0 {
                continue;
            }
            let (c, r) = &mut open[k];
            if read_conn(c, r, &mut buf)? {
                done.push(open.swap_remove(k).1);
            }
        }
        if accepting && pfds[0].revents != 0 {
            while open.len() < WEB_RX_MAX_OPEN && done.len() + open.len() < spec.max_conns {
                let Some((c, peer_port)) = accept(l, true)? else { break };
                open.push((c, WebRead { peer_port, t_accept_ns: sys::mono_ns(), ..WebRead::default() }));
            }
        }
    }
    done.extend(open.into_iter().map(|(_, r)| r));
    Ok(done)
}

/// Reads what connection `c` has (at most 64 reads); true once it has ended.
fn read_conn(c: &OwnedFd, r: &mut WebRead, buf: &mut [u8]) -> io::Result<bool> {
    for _ in 0..64 {
        match read_once(c, buf)? {
            ReadOutcome::Bytes(n) => {
                r.bytes += n;
                r.t_last_ns = sys::mono_ns();
            }
            ReadOutcome::Nothing => return Ok(false),
            ReadOutcome::Ended => {
                r.ended = true;
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Starts the pool of `spec.threads` senders, each pinned to `cpu`; returns once every
/// thread is in its namespace (a thread that could not start is an error).
pub fn spawn_web_senders(spec: WebTxSpec, cpu: Option<usize>, stop: Arc<AtomicBool>) -> io::Result<WebTx> {
    let next = Arc::new(AtomicUsize::new(0));
    let tx = WebTx { threads: Vec::new(), backlog_max: Arc::new(AtomicU64::new(0)), t0: Arc::new(AtomicU64::new(0)) };
    let spec = Arc::new(spec);
    let mut threads = Vec::with_capacity(spec.threads);
    for _ in 0..spec.threads.clamp(1, WEB_POOL_THREADS) {
        let (spec, next, quit, backlog, t0) = (spec.clone(), next.clone(), stop.clone(), tx.backlog_max.clone(), tx.t0.clone());
        let (ok, h) = spawn_tool("darkbuf-web-tx", spec.netns.clone(), cpu, move |ready: &mut Ready<()>| {
            ready.signal(());
            Ok(sender(&spec, &next, &backlog, &t0, &quit))
        });
        if ok.is_none() {
            stop.store(true, Ordering::SeqCst);
            return Err(h.join().ok().and_then(|r| r.err()).unwrap_or_else(|| io::Error::other("a web sender thread failed to start")));
        }
        threads.push(h);
    }
    Ok(WebTx { threads, ..tx })
}

/// Sleeps until `t` (CLOCK_MONOTONIC ns) in steps of at most [`WAIT_STEP`]; false on
/// `stop`.
fn wait_until(t: u64, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = sys::mono_ns();
        if now >= t {
            return true;
        }
        sys::sleep_until_ns(t.min(now + sys::dur_ns(WAIT_STEP)));
    }
}

/// One pool thread: takes the schedule's next connection until none is left.
fn sender(spec: &WebTxSpec, next: &AtomicUsize, backlog: &AtomicU64, t0: &AtomicU64, stop: &AtomicBool) -> Vec<WebConn> {
    let mut out = Vec::new();
    let base = loop {
        match t0.load(Ordering::Acquire) {
            0 if stop.load(Ordering::Relaxed) => return out,
            0 => std::thread::sleep(Duration::from_millis(1)),
            b => break b,
        }
    };
    loop {
        let k = next.fetch_add(1, Ordering::Relaxed);
        let Some(&(due_rel, size)) = spec.schedule.get(k) else { return out };
        let due = base + due_rel;
        let now = sys::mono_ns();
        if now > due {
            // Due connections nobody has taken yet (this one excluded).
            let due_by_now = spec.schedule.partition_point(|&(t, _)| base + t <= now);
            backlog.fetch_max(due_by_now.saturating_sub(k + 1) as u64, Ordering::Relaxed);
        } else if !wait_until(due, stop) {
            return out;
        }
        out.push(open_and_write(spec, k, due, size, stop));
        if stop.load(Ordering::Relaxed) {
            return out;
        }
    }
}

/// One connection: socket, options, `connect()` (its stamp), `size` bytes, `close()`.
fn open_and_write(spec: &WebTxSpec, index: usize, due_ns: u64, size: u64, stop: &AtomicBool) -> WebConn {
    let mut c = WebConn { index, due_ns, t_connect_ns: sys::mono_ns(), local_port: 0, size, written: 0, error: None };
    let r = (|| -> io::Result<()> {
        let s = sys::socket(libc::AF_INET, libc::SOCK_STREAM, 0)?;
        set_congestion(&s, &spec.cc)?;
        if spec.tos != 0 {
            sys::setsockopt_int(&s, libc::IPPROTO_IP, libc::IP_TOS, spec.tos as libc::c_int, "IP_TOS")?;
        }
        if let Some(v) = spec.so_sndbuf {
            sys::setsockopt_int(&s, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, v as libc::c_int, "SO_SNDBUFFORCE")?;
        }
        set_nonblocking(&s)?;
        c.t_connect_ns = sys::mono_ns();
        let sa = sys::sockaddr_in(spec.dst, spec.port);
        // SAFETY: sa is a valid sockaddr_in of the given length.
        let rc = unsafe { libc::connect(s.as_raw_fd(), &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t) };
        if rc != 0 && sys::errno() != libc::EINPROGRESS {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("connect {}:{}: {e}", spec.dst, spec.port)));
        }
        c.local_port = sys::local_addr(&s)?.1;
        wait_writable(&s, spec.deadline_ns, stop)?;
        let err = sys::getsockopt_int(&s, libc::SOL_SOCKET, libc::SO_ERROR)?;
        if err != 0 {
            return Err(io::Error::from_raw_os_error(err));
        }
        while c.written < size {
            let n = (size - c.written).min(WEB_WRITE as u64) as usize;
            // SAFETY: ZEROS is valid for n <= its length; MSG_NOSIGNAL: no SIGPIPE on a reset.
            let r = unsafe { libc::send(s.as_raw_fd(), ZEROS.as_ptr().cast(), n, libc::MSG_NOSIGNAL) };
            if r > 0 {
                c.written += r as u64;
            } else if matches!(sys::errno(), libc::EAGAIN | libc::EINTR) {
                wait_writable(&s, spec.deadline_ns, stop)?;
            } else {
                return Err(io::Error::last_os_error());
            }
        }
        // close(): the FIN follows the data.
        Ok(())
    })();
    if let Err(e) = r {
        c.error = Some(e.to_string());
    }
    c
}

/// Waits for `s` to be writable (its connect done, or room in its send buffer).
fn wait_writable(s: &OwnedFd, deadline_ns: u64, stop: &AtomicBool) -> io::Result<()> {
    loop {
        let now = sys::mono_ns();
        if stop.load(Ordering::Relaxed) || now >= deadline_ns {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "the run ended first"));
        }
        if sys::poll_one(s.as_raw_fd(), libc::POLLOUT, (deadline_ns - now).min(sys::dur_ns(STEP)))? != 0 {
            return Ok(());
        }
    }
}

impl WebTx {
    /// Joins the pool (each thread ends at `stop`, within a [`WAIT_STEP`]); every record
    /// by schedule index.
    pub fn join(self) -> io::Result<WebSenderStats> {
        let mut conns = Vec::new();
        for h in self.threads {
            conns.extend(h.join().map_err(|_| io::Error::other("a web sender thread panicked"))??);
        }
        conns.sort_unstable_by_key(|c| c.index);
        Ok(WebSenderStats { conns, backlog_max: self.backlog_max.load(Ordering::Relaxed) })
    }
}

/// Each sender record's receiver record: the first connection accepted from its port
/// at or after its `connect()` (None: never accepted).
pub fn match_reads<'a>(conns: &[WebConn], reads: &'a [WebRead]) -> Vec<Option<&'a WebRead>> {
    let mut by_port: std::collections::HashMap<u16, Vec<&WebRead>> = std::collections::HashMap::new();
    for r in reads {
        by_port.entry(r.peer_port).or_default().push(r);
    }
    for v in by_port.values_mut() {
        v.sort_unstable_by_key(|r| r.t_accept_ns);
    }
    conns
        .iter()
        .map(|c| {
            let v = by_port.get(&c.local_port)?;
            let i = v.partition_point(|r| r.t_accept_ns < c.t_connect_ns);
            v.get(i).copied()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(index: usize, t_connect_ns: u64, local_port: u16) -> WebConn {
        WebConn { index, due_ns: t_connect_ns, t_connect_ns, local_port, size: 10, written: 10, error: None }
    }

    fn read(peer_port: u16, t_accept_ns: u64) -> WebRead {
        WebRead { peer_port, t_accept_ns, bytes: 10, t_last_ns: t_accept_ns + 1, ended: true }
    }

    /// A port used twice is matched by time: each connection gets the first accept from
    /// its port at or after its own `connect()`.
    #[test]
    fn reads_are_matched_by_port_and_time() {
        let conns = [conn(0, 100, 5000), conn(1, 200, 5001), conn(2, 1000, 5000), conn(3, 2000, 6000)];
        let reads = [read(5000, 1010), read(5001, 210), read(5000, 110)];
        let m = match_reads(&conns, &reads);
        assert_eq!(m[0].map(|r| r.t_accept_ns), Some(110));
        assert_eq!(m[1].map(|r| r.t_accept_ns), Some(210));
        assert_eq!(m[2].map(|r| r.t_accept_ns), Some(1010));
        assert_eq!(m[3], None);
    }

    /// Over loopback (no privileges): three connections of known sizes, two threads; the
    /// receiver reads each whole, after its connect, and the records match.
    #[test]
    fn loopback_connections_are_read_whole() {
        let stop = Arc::new(AtomicBool::new(false));
        let rx = WebRxSpec { netns: String::new(), bind: Ipv4Addr::LOCALHOST, cc: String::new(), max_conns: 3, duration: Duration::from_secs(5) };
        let (port, rh) = spawn_web_receiver(rx, None, stop.clone());
        let schedule = Arc::new(vec![(1_000_000, 1), (2_000_000, 300_000), (3_000_000, 14_480)]);
        let spec = WebTxSpec {
            netns: String::new(),
            dst: Ipv4Addr::LOCALHOST,
            port: port.expect("the receiver listens"),
            cc: "reno".into(),
            tos: 0,
            so_sndbuf: None,
            schedule,
            threads: 2,
            deadline_ns: sys::mono_ns() + 5_000_000_000,
        };
        let tx = spawn_web_senders(spec, None, stop.clone()).unwrap();
        tx.t0.store(sys::mono_ns(), Ordering::Release);
        let s = tx.join().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        stop.store(true, Ordering::SeqCst);
        let reads = rh.join().unwrap().unwrap();
        assert_eq!(s.conns.iter().map(|c| (c.index, c.written, c.error.clone())).collect::<Vec<_>>(), vec![(0, 1, None), (1, 300_000, None), (2, 14_480, None)]);
        let m = match_reads(&s.conns, &reads);
        for (c, r) in s.conns.iter().zip(m) {
            let r = r.expect("accepted");
            assert_eq!((r.bytes, r.ended), (c.size, true));
            assert!(r.t_last_ns > c.t_connect_ns && c.t_connect_ns >= c.due_ns);
        }
    }
}
