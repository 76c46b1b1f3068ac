//! The flood's receiver: one UDP socket, `recvmmsg` batches, an optional busy-spin
//! per packet (`consumer.app_cost`), and one-way delays from the payload stamps.
//!
//! Delay: CLOCK_MONOTONIC read when `recvmmsg` returns minus the flood's stamp, for
//! every packet of that batch (they all left the socket queue at that moment). A
//! deterministic reservoir keeps a uniform sample of at most `OWD_SAMPLE_CAP`.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::netns::spawn_tool;
use super::payload::{FloodHeader, FlowSet, Reservoir, OWD_SAMPLE_CAP};
use super::sys;

/// Bound on one blocking receive, so `stop` and the deadline are noticed.
pub const SINK_RCVTIMEO: Duration = Duration::from_millis(50);
/// Datagrams per recvmmsg.
pub const SINK_BATCH: usize = 64;
/// Bytes copied per datagram (an Ethernet MTU's worth); longer datagrams are
/// counted at their full length (MSG_TRUNC) but only this much is copied.
pub const SINK_SLOT: usize = 2048;

/// Where and how long to receive. `Default`: 0.0.0.0, port 0 (the kernel picks one;
/// `spawn_sink_bound` returns it), 1 s, no app cost, the caller's namespace.
#[derive(Clone, Debug)]
pub struct SinkSpec {
    pub netns: String,
    pub bind: Ipv4Addr,
    pub port: u16,
    pub duration: Duration,
    /// Busy-spin per received packet (the scenario's consumer.app_cost).
    pub app_cost: Duration,
}

impl Default for SinkSpec {
    fn default() -> Self {
        SinkSpec { netns: String::new(), bind: Ipv4Addr::UNSPECIFIED, port: 0, duration: Duration::from_secs(1), app_cost: Duration::ZERO }
    }
}

/// What the sink received.
#[derive(Clone, Debug, Default)]
pub struct SinkStats {
    pub received: u64,
    /// UDP payload bytes (full datagram lengths).
    pub bytes: u64,
    /// From the socket being ready to the end of the loop.
    pub elapsed: Duration,
    /// One-way delays (ns), a deterministic uniform sample of at most OWD_SAMPLE_CAP.
    pub owd_ns_samples: Vec<u64>,
    /// Stamped packets seen (the population `owd_ns_samples` was drawn from).
    pub stamped: u64,
    /// Highest flood sequence number seen.
    pub seq_max: Option<u64>,
    /// Stamped packets whose sequence number was below one seen before (reordering).
    pub seq_inversions: u64,
    /// Distinct flood flow ids seen (ids below 1024).
    pub flows_seen: u32,
    /// First and last receive, ns after the sink started (for an active-window pps).
    pub first_rx_ns: Option<u64>,
    pub last_rx_ns: Option<u64>,
    /// CLOCK_MONOTONIC ns when the sink started.
    pub start_mono_ns: u64,
    /// The port the sink was bound to.
    pub port: u16,
}

impl SinkStats {
    /// Packets per second between the first and the last receive (None with < 2 packets).
    pub fn active_pps(&self) -> Option<f64> {
        let (a, b) = (self.first_rx_ns?, self.last_rx_ns?);
        if b <= a || self.received < 2 {
            return None;
        }
        Some((self.received - 1) as f64 * 1e9 / (b - a) as f64)
    }
}

/// Starts the sink; returns once its socket is bound (or setup failed: the error is
/// in the join result).
pub fn spawn_sink(spec: SinkSpec, stop: Arc<AtomicBool>) -> JoinHandle<io::Result<SinkStats>> {
    spawn_sink_bound(spec, None, stop).1
}

/// `spawn_sink` pinned to `cpu`, also returning the bound port (useful with port 0);
/// None when setup failed.
pub fn spawn_sink_bound(spec: SinkSpec, cpu: Option<usize>, stop: Arc<AtomicBool>) -> (Option<u16>, JoinHandle<io::Result<SinkStats>>) {
    let netns = spec.netns.clone();
    spawn_tool("darkbuf-sink", netns, cpu, move |ready| run_sink(&spec, &stop, ready))
}

fn run_sink(spec: &SinkSpec, stop: &AtomicBool, ready: &mut super::netns::Ready<u16>) -> io::Result<SinkStats> {
    let sock = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
    sys::bind(&sock, spec.bind, spec.port)?;
    sys::set_timeout(&sock, libc::SO_RCVTIMEO, SINK_RCVTIMEO)?;
    let port = sys::local_addr(&sock)?.1;

    let mut bufs = vec![0u8; SINK_BATCH * SINK_SLOT];
    let base = bufs.as_mut_ptr();
    let iovs: Vec<libc::iovec> = (0..SINK_BATCH)
        // SAFETY: i * SINK_SLOT < bufs.len().
        .map(|i| libc::iovec { iov_base: unsafe { base.add(i * SINK_SLOT) } as *mut libc::c_void, iov_len: SINK_SLOT })
        .collect();
    // SAFETY: all-zero mmsghdr is a valid empty value.
    let mut msgs: Vec<libc::mmsghdr> = (0..SINK_BATCH).map(|_| unsafe { std::mem::zeroed() }).collect();
    for (m, iov) in msgs.iter_mut().zip(iovs.iter()) {
        m.msg_hdr.msg_iov = iov as *const libc::iovec as *mut libc::iovec;
        m.msg_hdr.msg_iovlen = 1;
    }

    let mut res = Reservoir::new(OWD_SAMPLE_CAP);
    let mut flows = FlowSet::default();
    let cost = sys::dur_ns(spec.app_cost);
    let t0 = sys::mono_ns();
    let deadline = t0.saturating_add(sys::dur_ns(spec.duration));
    let mut st = SinkStats { start_mono_ns: t0, port, ..SinkStats::default() };
    ready.signal(port);

    loop {
        if stop.load(Ordering::Relaxed) || sys::mono_ns() >= deadline {
            break;
        }
        // MSG_WAITFORONE: block (up to SO_RCVTIMEO) for the first datagram only.
        // MSG_TRUNC: msg_len is the datagram's real length even when truncated.
        // SAFETY: msgs/iovs/bufs are valid and outlive the call.
        let r = unsafe {
            libc::recvmmsg(
                sock.as_raw_fd(),
                msgs.as_mut_ptr(),
                SINK_BATCH as libc::c_uint,
                libc::MSG_WAITFORONE | libc::MSG_TRUNC,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            match sys::errno() {
                libc::EAGAIN | libc::EINTR | libc::ENOMEM => continue,
                _ => return Err(io::Error::last_os_error()),
            }
        }
        let now = sys::mono_ns();
        let n = r as usize;
        if n > 0 {
            let rel = now.saturating_sub(t0);
            st.first_rx_ns.get_or_insert(rel);
            st.last_rx_ns = Some(rel);
        }
        for (i, m) in msgs.iter().enumerate().take(n) {
            let len = m.msg_len as usize;
            st.received += 1;
            st.bytes += len as u64;
            let data = &bufs[i * SINK_SLOT..i * SINK_SLOT + len.min(SINK_SLOT)];
            if let Some(h) = FloodHeader::read(data) {
                st.stamped += 1;
                if now >= h.t_send_ns {
                    res.offer(now - h.t_send_ns);
                }
                match st.seq_max {
                    Some(m) if h.seq < m => st.seq_inversions += 1,
                    _ => st.seq_max = Some(h.seq),
                }
                flows.insert(h.flow);
            }
            sys::spin_ns(cost);
        }
    }
    st.elapsed = Duration::from_nanos(sys::mono_ns().saturating_sub(t0));
    st.flows_seen = flows.count();
    st.owd_ns_samples = res.into_vec();
    Ok(st)
}
