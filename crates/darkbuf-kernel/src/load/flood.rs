//! The UDP flood: `flows` connected UDP sockets sending `sendmmsg` batches of
//! stamped payloads, optionally rate-limited by a token bucket.
//!
//! Flows: one socket per flow, all to the same `dst:dst_port` (so one sink socket
//! receives them all), each with its own kernel-chosen source port (the connect()
//! auto-bind). Distinct sockets also get distinct `sk_txhash` values, so with
//! several TX queues and no XPS the flows spread over the queues like separate
//! applications would. Batches rotate over the flows: batch k goes out on flow
//! `k % flows`.
//!
//! Backpressure: the sockets are blocking. When a socket's send buffer is full
//! (its skbs are still in the qdisc or the device ring), `sendmmsg` sleeps in
//! `sock_alloc_send_pskb()` exactly as any UDP sender would; SO_SNDTIMEO (50 ms)
//! bounds one such sleep so `stop` and the deadline are noticed. A send that timed
//! out (EAGAIN) is counted in `send_errors`/`eagain` and that packet is skipped.
//!
//! IP_RECVERR is set so that a qdisc drop at enqueue is reported to the sender as
//! ENOBUFS (`udp_send_skb()` otherwise hides it and only bumps SndbufErrors); such
//! packets are counted in `send_errors`/`enobufs` and not retried.
//!
//! Every attempted packet (sent or failed) counts against `max_packets` and uses up
//! a rate token, so the run is bounded in packets even when every send fails.
//!
//! Stamps: the packets of one batch carry the CLOCK_MONOTONIC time read just before
//! the `sendmmsg` call. If the socket blocks part-way through a batch, the later
//! packets' one-way delay includes that wait (at most one batch of consumer time);
//! use a smaller `batch` when that matters. Sequence numbers count attempts, so a
//! gap at the sink is a packet lost anywhere (including a failed send).

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::netns::spawn_tool;
use super::payload::FloodHeader;
use super::sys;

/// How long one blocked send may sleep before the flood re-checks `stop` and its deadline.
pub const FLOOD_SNDTIMEO: Duration = Duration::from_millis(50);
/// Upper bound on `batch` (the kernel's UIO_MAXIOV for sendmmsg's vlen).
pub const MAX_BATCH: usize = 1024;
/// Largest IPv4 UDP payload.
pub const MAX_UDP_PAYLOAD: usize = 65_507;

/// What to send. `Default` gives a 1 s, 64-byte, unlimited-rate, single-flow flood
/// to 127.0.0.1:9 in the caller's namespace, capped at one million packets.
#[derive(Clone, Debug)]
pub struct FloodSpec {
    /// Namespace to send from (`/run/netns/NAME`); empty = the caller's namespace.
    pub netns: String,
    pub dst: Ipv4Addr,
    pub dst_port: u16,
    /// UDP payload bytes. The first 24 carry the header (see `payload::FloodHeader`);
    /// shorter payloads are sent unstamped.
    pub payload: usize,
    /// Packets per second over all flows; None = as fast as the sockets accept.
    pub rate_pps: Option<f64>,
    /// Number of sockets (flows), >= 1.
    pub flows: u32,
    /// SO_SNDBUFFORCE value for each flow's socket, i.e. half the effective
    /// send buffer (the kernel doubles it); None = the default wmem.
    pub sndbuf: Option<u32>,
    /// SO_PRIORITY; 0 = leave the priority IP_TOS derived (`rt_tos2priority`),
    /// since setting IP_TOS overwrites sk_priority.
    pub priority: u32,
    /// IP_TOS; 0 = not set.
    pub tos: u8,
    /// Hard bound on attempted packets (sent + failed).
    pub max_packets: u64,
    /// Hard bound on the sending time.
    pub duration: Duration,
    /// Messages per sendmmsg call (clamped to 1..=1024).
    pub batch: usize,
    /// SO_MAX_PACING_RATE of each flow's socket, bytes/s (fq paces the flow at it).
    pub max_pacing_rate: Option<u64>,
}

impl Default for FloodSpec {
    fn default() -> Self {
        FloodSpec {
            netns: String::new(),
            dst: Ipv4Addr::LOCALHOST,
            dst_port: 9,
            payload: 64,
            rate_pps: None,
            flows: 1,
            sndbuf: None,
            priority: 0,
            tos: 0,
            max_packets: 1_000_000,
            duration: Duration::from_secs(1),
            batch: 32,
            max_pacing_rate: None,
        }
    }
}

/// What the flood did.
#[derive(Clone, Debug, Default)]
pub struct FloodStats {
    /// Packets the kernel accepted (sendmmsg counted them as sent).
    pub sent: u64,
    /// Packets that failed: `enobufs + eagain + other_errors`.
    pub send_errors: u64,
    /// From the first send attempt to the end of the loop.
    pub elapsed: Duration,
    /// ENOBUFS: dropped at qdisc enqueue (or no memory).
    pub enobufs: u64,
    /// EAGAIN: the socket stayed blocked on a full send buffer for FLOOD_SNDTIMEO.
    pub eagain: u64,
    /// Any other errno (e.g. ECONNREFUSED after an ICMP port unreachable).
    pub other_errors: u64,
    /// errno of the last failure, if any.
    pub last_errno: Option<i32>,
    /// CLOCK_MONOTONIC ns when sending started (to line the flood up with probe times).
    pub start_mono_ns: u64,
    /// The flows' source ports, in flow order.
    pub src_ports: Vec<u16>,
    /// Effective SO_SNDBUF of the first socket as the kernel reports it (doubled value).
    pub sndbuf_effective: u32,
}

/// A token bucket on CLOCK_MONOTONIC ns: `rate` tokens per second, at most `depth`
/// tokens banked (so a late wake-up sends at most one batch in a burst). Starts
/// with one token so the first packet leaves immediately.
#[derive(Clone, Debug)]
pub(crate) struct TokenBucket {
    per_ns: f64,
    depth: f64,
    tokens: f64,
    last_ns: u64,
}

impl TokenBucket {
    pub(crate) fn new(rate_pps: f64, depth: f64, now_ns: u64) -> io::Result<Self> {
        if !(rate_pps.is_finite() && rate_pps > 0.0) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("rate_pps must be > 0, got {rate_pps}")));
        }
        let depth = depth.max(1.0);
        Ok(TokenBucket { per_ns: rate_pps / 1e9, depth, tokens: 1.0, last_ns: now_ns })
    }

    /// Whole tokens available at `now_ns` (after refilling).
    pub(crate) fn available(&mut self, now_ns: u64) -> u64 {
        let dt = now_ns.saturating_sub(self.last_ns);
        self.last_ns = self.last_ns.max(now_ns);
        self.tokens = (self.tokens + dt as f64 * self.per_ns).min(self.depth);
        self.tokens.floor().max(0.0) as u64
    }

    pub(crate) fn consume(&mut self, n: u64) {
        self.tokens -= n as f64;
    }

    /// When the next whole token will be there (absolute ns).
    pub(crate) fn next_token_ns(&self) -> u64 {
        let missing = (1.0 - self.tokens).max(0.0);
        self.last_ns.saturating_add((missing / self.per_ns).ceil() as u64)
    }
}

/// How late a pacing sleep may wake without the flood falling behind its rate.
/// Natively a sleep wakes tens of µs late; in a TCG guest (`--backend vm`) a 0.5 ms
/// sleep took 1.7 ms, and with a bucket one batch deep every late wake lost its
/// tokens: a flood asking 1,734 pps sent 347.
pub const PACING_CATCH_UP: Duration = Duration::from_millis(10);

/// The token bucket's depth: one batch, or what [`PACING_CATCH_UP`] of lateness owes,
/// whichever is more. A flood sends that many back to back only after a late wake
/// (iperf3's `-b` catches up without any bound).
pub fn catch_up_depth(rate_pps: f64, batch: usize) -> f64 {
    (batch as f64).max(rate_pps * PACING_CATCH_UP.as_secs_f64())
}

/// Starts a flood thread. See the module doc for the flow and backpressure model.
pub fn spawn_flood(spec: FloodSpec, stop: Arc<AtomicBool>) -> JoinHandle<io::Result<FloodStats>> {
    spawn_flood_pinned(spec, None, stop)
}

/// `spawn_flood` with the thread pinned to `cpu` (the notes pin the flood to CPU0).
pub fn spawn_flood_pinned(spec: FloodSpec, cpu: Option<usize>, stop: Arc<AtomicBool>) -> JoinHandle<io::Result<FloodStats>> {
    let netns = spec.netns.clone();
    spawn_tool("darkbuf-flood", netns, cpu, move |ready| {
        let mut f = Flood::new(&spec)?;
        ready.signal(());
        f.run(&spec, &stop)
    })
    .1
}

fn validate(spec: &FloodSpec) -> io::Result<()> {
    let bad = |m: String| Err(io::Error::new(io::ErrorKind::InvalidInput, m));
    if spec.flows == 0 {
        return bad("flood: flows must be >= 1".into());
    }
    if spec.flows > 65_536 {
        return bad(format!("flood: flows {} is more sockets than source ports", spec.flows));
    }
    if spec.payload > MAX_UDP_PAYLOAD {
        return bad(format!("flood: payload {} > {MAX_UDP_PAYLOAD}", spec.payload));
    }
    if spec.dst_port == 0 {
        return bad("flood: dst_port must not be 0".into());
    }
    if let Some(r) = spec.rate_pps {
        if !(r.is_finite() && r > 0.0) {
            return bad(format!("flood: rate_pps must be > 0, got {r}"));
        }
    }
    Ok(())
}

/// Sockets and the preallocated batch (buffers, iovecs, mmsghdrs). The raw
/// pointers inside `msgs` point into `bufs`/`iovs`, which are never resized.
struct Flood {
    socks: Vec<OwnedFd>,
    src_ports: Vec<u16>,
    sndbuf_effective: u32,
    batch: usize,
    payload: usize,
    bufs: Vec<u8>,
    iovs: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
}

fn open_flow_socket(spec: &FloodSpec) -> io::Result<OwnedFd> {
    let s = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
    if let Some(b) = spec.sndbuf {
        let v = b.min(i32::MAX as u32) as libc::c_int;
        sys::setsockopt_int(&s, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, v, "SO_SNDBUFFORCE")?;
    }
    if spec.tos != 0 {
        sys::setsockopt_int(&s, libc::IPPROTO_IP, libc::IP_TOS, spec.tos as libc::c_int, "IP_TOS")?;
    }
    if spec.priority != 0 {
        let p = spec.priority.min(i32::MAX as u32) as libc::c_int;
        sys::setsockopt_int(&s, libc::SOL_SOCKET, libc::SO_PRIORITY, p, "SO_PRIORITY")?;
    }
    if let Some(r) = spec.max_pacing_rate {
        // The 64-bit form (since 4.13 the kernel accepts a u64 here).
        sys::setsockopt(&s, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE, r)
            .map_err(|e| io::Error::new(e.kind(), format!("setsockopt SO_MAX_PACING_RATE={r}: {e}")))?;
    }
    sys::setsockopt_int(&s, libc::IPPROTO_IP, libc::IP_RECVERR, 1, "IP_RECVERR")?;
    sys::set_timeout(&s, libc::SO_SNDTIMEO, FLOOD_SNDTIMEO)?;
    sys::connect(&s, spec.dst, spec.dst_port)?;
    Ok(s)
}

impl Flood {
    fn new(spec: &FloodSpec) -> io::Result<Flood> {
        validate(spec)?;
        let mut socks = Vec::with_capacity(spec.flows as usize);
        let mut src_ports = Vec::with_capacity(spec.flows as usize);
        for _ in 0..spec.flows {
            let s = open_flow_socket(spec)?;
            src_ports.push(sys::local_addr(&s)?.1);
            socks.push(s);
        }
        let sndbuf_effective = sys::getsockopt_int(&socks[0], libc::SOL_SOCKET, libc::SO_SNDBUF)?.max(0) as u32;
        let batch = spec.batch.clamp(1, MAX_BATCH);
        let payload = spec.payload;
        // At least one byte per slot so every iov_base is a valid pointer.
        let slot = payload.max(1);
        let mut bufs = vec![0u8; batch * slot];
        // A recognisable filler after the header (helps when reading captures).
        for (i, b) in bufs.iter_mut().enumerate() {
            *b = (i % slot) as u8;
        }
        let base = bufs.as_mut_ptr();
        let iovs: Vec<libc::iovec> = (0..batch)
            // SAFETY: i * slot < bufs.len(), so the pointer stays inside the allocation.
            .map(|i| libc::iovec { iov_base: unsafe { base.add(i * slot) } as *mut libc::c_void, iov_len: payload })
            .collect();
        // SAFETY: mmsghdr is plain data; all-zero is a valid (empty) value.
        let mut msgs: Vec<libc::mmsghdr> = (0..batch).map(|_| unsafe { std::mem::zeroed() }).collect();
        for (m, iov) in msgs.iter_mut().zip(iovs.iter()) {
            m.msg_hdr.msg_iov = iov as *const libc::iovec as *mut libc::iovec;
            m.msg_hdr.msg_iovlen = 1;
        }
        Ok(Flood { socks, src_ports, sndbuf_effective, batch, payload, bufs, iovs, msgs })
    }

    fn run(&mut self, spec: &FloodSpec, stop: &AtomicBool) -> io::Result<FloodStats> {
        let t0 = sys::mono_ns();
        let deadline = t0.saturating_add(sys::dur_ns(spec.duration));
        let mut st = FloodStats {
            start_mono_ns: t0,
            src_ports: std::mem::take(&mut self.src_ports),
            sndbuf_effective: self.sndbuf_effective,
            ..FloodStats::default()
        };
        let mut bucket = match spec.rate_pps {
            Some(r) => Some(TokenBucket::new(r, catch_up_depth(r, self.batch), t0)?),
            None => None,
        };
        let slot = self.payload.max(1);
        let stamped = self.payload >= super::payload::FLOOD_HDR_LEN;
        let nflows = self.socks.len();
        let mut attempted: u64 = 0;
        let mut seq: u64 = 0;
        let mut flow: usize = 0;
        'outer: while attempted < spec.max_packets {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let now = sys::mono_ns();
            if now >= deadline {
                break;
            }
            let mut n = (self.batch as u64).min(spec.max_packets - attempted) as usize;
            if let Some(b) = bucket.as_mut() {
                let avail = b.available(now);
                if avail == 0 {
                    // Sleep until the next token, but re-check stop at least every 50 ms.
                    let wake = b.next_token_ns().min(deadline).min(now + 50_000_000);
                    sys::sleep_until_ns(wake);
                    continue;
                }
                n = n.min(avail.min(usize::MAX as u64) as usize);
            }
            if stamped {
                for i in 0..n {
                    let h = FloodHeader { flow: flow as u32, seq: seq + i as u64, t_send_ns: now };
                    h.write(&mut self.bufs[i * slot..i * slot + self.payload]);
                }
            }
            seq += n as u64;
            let fd = self.socks[flow].as_raw_fd();
            let mut off = 0usize;
            while off < n {
                // SAFETY: msgs[off..n] are initialised mmsghdrs whose iovecs point into
                // self.bufs, which outlives the call and is not moved.
                let r = unsafe { libc::sendmmsg(fd, self.msgs.as_mut_ptr().add(off), (n - off) as libc::c_uint, 0) };
                if r > 0 {
                    off += r as usize;
                    st.sent += r as u64;
                    continue;
                }
                let e = sys::errno();
                if e == libc::EINTR {
                    if stop.load(Ordering::Relaxed) {
                        break 'outer;
                    }
                    continue;
                }
                // r == 0 cannot happen for vlen > 0; treat it like an error to make progress.
                st.send_errors += 1;
                st.last_errno = Some(e);
                match e {
                    libc::ENOBUFS => st.enobufs += 1,
                    libc::EAGAIN => st.eagain += 1,
                    _ => st.other_errors += 1,
                }
                off += 1;
                if e == libc::EAGAIN && (stop.load(Ordering::Relaxed) || sys::mono_ns() >= deadline) {
                    break 'outer;
                }
            }
            attempted += off as u64;
            if let Some(b) = bucket.as_mut() {
                b.consume(off as u64);
            }
            flow += 1;
            if flow == nflows {
                flow = 0;
            }
        }
        st.elapsed = Duration::from_nanos(sys::mono_ns().saturating_sub(t0));
        // Keep iovs alive until here (msgs point at them).
        let _ = self.iovs.len();
        Ok(st)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_bucket_paces_at_rate() {
        // 1000 pps = 1 token per ms; depth 4.
        let mut b = TokenBucket::new(1000.0, 4.0, 0).unwrap();
        assert_eq!(b.available(0), 1); // starts with one token
        b.consume(1);
        assert_eq!(b.available(500_000), 0);
        assert_eq!(b.next_token_ns(), 1_000_000);
        assert_eq!(b.available(1_000_000), 1);
        b.consume(1);
        // A long gap banks at most `depth` tokens.
        assert_eq!(b.available(100_000_000), 4);
        b.consume(4);
        assert_eq!(b.available(100_000_000), 0);
        assert_eq!(b.next_token_ns(), 101_000_000);
        // Time going backwards (never on CLOCK_MONOTONIC) adds nothing.
        assert_eq!(b.available(50), 0);
    }

    #[test]
    fn token_bucket_total_over_a_run() {
        // Sending whatever is available every 300 us for 1 s at 2000 pps: 2000 (+1 initial).
        let mut b = TokenBucket::new(2000.0, 32.0, 0).unwrap();
        let mut sent = 0;
        let mut t = 0;
        while t <= 1_000_000_000 {
            let n = b.available(t);
            b.consume(n);
            sent += n;
            t += 300_000;
        }
        assert!((2000..=2001).contains(&sent), "{sent}");
    }

    #[test]
    fn bad_specs_are_errors() {
        assert!(TokenBucket::new(0.0, 1.0, 0).is_err());
        assert!(TokenBucket::new(f64::NAN, 1.0, 0).is_err());
        let ok = FloodSpec::default();
        assert!(validate(&ok).is_ok());
        assert!(validate(&FloodSpec { flows: 0, ..ok.clone() }).is_err());
        assert!(validate(&FloodSpec { payload: 70_000, ..ok.clone() }).is_err());
        assert!(validate(&FloodSpec { dst_port: 0, ..ok.clone() }).is_err());
        assert!(validate(&FloodSpec { rate_pps: Some(-1.0), ..ok.clone() }).is_err());
    }
}
