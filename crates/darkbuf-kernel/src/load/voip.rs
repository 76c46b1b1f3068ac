//! Voice calls (`[[traffic]] kind = "voip"`) on the kernel: darkbuf's own RTP-like
//! generator, a sender and a receiver in each namespace.
//!
//! - A sender sends each call's stream from a socket of its own (the call's own
//!   5-tuple, as two phones have), packet n of call k at `start + k * interval / calls
//!   + n * interval` (an absolute schedule, not paced by anything received;
//!   non-blocking sends: a failed one is a packet dropped on the way).
//! - A receiver takes every call of the other end's streams on one socket and records
//!   each packet's kernel receive stamp (SO_TIMESTAMPNS), per call and sequence number.
//! - Both ends live in one host (or one VM): CLOCK_MONOTONIC is their common clock, so
//!   the one-way delays need no synchronisation (as `irtt.rs`).
//!
//! Payload: `magic u32 | call u32 | seq u64 | t_send u64` (little-endian), then filler
//! to the entry's `size` + 12 (the RTP header's place). Bounded: a stream has a record
//! per packet its schedule can send (the scenario caps an entry's packets), and every
//! thread has a hard deadline.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::netns::spawn_tool;
use super::probe::kernel_rx_stamp;
use super::sys;
use darkbuf_measure::voip::{VoipFate, VoipRec};

/// The smallest payload: magic, call, sequence number and send stamp.
pub const VOIP_MIN_PAYLOAD: usize = 24;
const MAGIC: u32 = 0x766f_6970; // "voip"

/// One end's streams: from `netns`, `calls` sockets to `dst:port`.
#[derive(Clone, Debug)]
pub struct VoipSenderSpec {
    pub netns: String,
    pub dst: Ipv4Addr,
    pub port: u16,
    pub calls: u32,
    pub payload: usize,
    pub tos: u8,
    pub interval_ns: u64,
    /// Call 0's first packet; call k's is `k * interval / calls` later.
    pub start_mono_ns: u64,
    /// No packet is sent at or after this time.
    pub stop_mono_ns: u64,
    /// Records per call (the schedule's packets).
    pub slots: usize,
}

/// A packet sent: its send time, and whether the send failed.
pub type Sent = (u64, bool);

/// Starts a sender; the join result has, per call, every packet it sent.
pub fn spawn_voip_sender(spec: VoipSenderSpec, cpu: Option<usize>, stop: Arc<AtomicBool>) -> JoinHandle<io::Result<Vec<Vec<Sent>>>> {
    let netns = spec.netns.clone();
    spawn_tool("darkbuf-voip-tx", netns, cpu, move |ready| {
        let mut socks = Vec::with_capacity(spec.calls as usize);
        for _ in 0..spec.calls {
            let s = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
            if spec.tos != 0 {
                sys::setsockopt_int(&s, libc::IPPROTO_IP, libc::IP_TOS, spec.tos as libc::c_int, "IP_TOS")?;
            }
            sys::connect(&s, spec.dst, spec.port)?;
            socks.push(s);
        }
        ready.signal(());
        Ok(send_streams(&socks, &spec, &stop))
    })
    .1
}

/// Call k's packet n's due time.
fn due(spec: &VoipSenderSpec, k: usize, n: usize) -> u64 {
    let offset = (spec.interval_ns as u128 * k as u128 / spec.calls.max(1) as u128) as u64;
    spec.start_mono_ns + offset + n as u64 * spec.interval_ns
}

fn send_streams(socks: &[OwnedFd], spec: &VoipSenderSpec, stop: &AtomicBool) -> Vec<Vec<Sent>> {
    let mut sent: Vec<Vec<Sent>> = socks.iter().map(|_| Vec::with_capacity(spec.slots)).collect();
    let mut buf = vec![0u8; spec.payload.max(VOIP_MIN_PAYLOAD)];
    for (i, b) in buf.iter_mut().enumerate().skip(VOIP_MIN_PAYLOAD) {
        *b = (i & 0xff) as u8;
    }
    buf[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    while !stop.load(Ordering::Relaxed) {
        // The next packet of all calls: the earliest due.
        let next = (0..socks.len()).filter(|&k| sent[k].len() < spec.slots).map(|k| (due(spec, k, sent[k].len()), k)).min();
        let Some((at, k)) = next.filter(|(at, _)| *at < spec.stop_mono_ns) else { break };
        // Sleep in slices, so the stop flag is seen.
        let now = sys::mono_ns();
        if at > now {
            sys::sleep_until_ns(at.min(now + 50_000_000));
            continue;
        }
        let n = sent[k].len();
        let t = sys::mono_ns();
        buf[4..8].copy_from_slice(&(k as u32).to_le_bytes());
        buf[8..16].copy_from_slice(&(n as u64).to_le_bytes());
        buf[16..24].copy_from_slice(&t.to_le_bytes());
        // SAFETY: buf is valid for its length.
        let r = unsafe { libc::send(socks[k].as_raw_fd(), buf.as_ptr() as *const libc::c_void, buf.len(), libc::MSG_DONTWAIT) };
        sent[k].push((t, r < 0));
    }
    sent
}

/// The other end's receiver: bound in `netns` to `bind:0`, `calls` x `slots` records.
#[derive(Clone, Debug)]
pub struct VoipReceiverSpec {
    pub netns: String,
    pub bind: Ipv4Addr,
    pub calls: u32,
    pub slots: usize,
    /// After `rx_stop`, how long it still takes packets (those in flight).
    pub drain: Duration,
    /// Hard bound on its life.
    pub duration: Duration,
}

/// Starts a receiver; returns its port once bound (None when setup failed). The join
/// result has per call and sequence number the kernel's receive stamp (0: none).
pub fn spawn_voip_receiver(spec: VoipReceiverSpec, cpu: Option<usize>, rx_stop: Arc<AtomicBool>) -> (Option<u16>, JoinHandle<io::Result<Vec<Vec<u64>>>>) {
    let netns = spec.netns.clone();
    spawn_tool("darkbuf-voip-rx", netns, cpu, move |ready| {
        let sock = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
        sys::bind(&sock, spec.bind, 0)?;
        let _ = sys::setsockopt_int(&sock, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1, "SO_TIMESTAMPNS");
        // Room for a burst of every call's packets.
        let _ = sys::setsockopt_int(&sock, libc::SOL_SOCKET, libc::SO_RCVBUF, 4 << 20, "SO_RCVBUF");
        ready.signal(sys::local_addr(&sock)?.1);
        receive_streams(&sock, &spec, &rx_stop)
    })
}

fn receive_streams(sock: &OwnedFd, spec: &VoipReceiverSpec, rx_stop: &AtomicBool) -> io::Result<Vec<Vec<u64>>> {
    let mut got = vec![vec![0u64; spec.slots]; spec.calls as usize];
    let fd = sock.as_raw_fd();
    let deadline = sys::mono_ns().saturating_add(sys::dur_ns(spec.duration));
    let mut drain_end = u64::MAX;
    let mut buf = vec![0u8; 65_536];
    loop {
        let now = sys::mono_ns();
        if drain_end == u64::MAX && rx_stop.load(Ordering::Relaxed) {
            drain_end = now.saturating_add(sys::dur_ns(spec.drain));
        }
        if now >= deadline.min(drain_end) {
            break;
        }
        if sys::poll_one(fd, libc::POLLIN, (deadline.min(drain_end) - now).min(50_000_000))? & libc::POLLIN == 0 {
            continue;
        }
        for _ in 0..1024 {
            let mut ctl: sys::CmsgBuf = [0; 32];
            let (r, mh) = sys::recvmsg_ctl(fd, &mut buf, &mut ctl, None, libc::MSG_DONTWAIT);
            if r < 0 {
                break;
            }
            let now_user = sys::mono_ns();
            let b = &buf[..(r as usize).min(buf.len())];
            if b.len() < VOIP_MIN_PAYLOAD || le32(&b[0..4]) != MAGIC {
                continue;
            }
            let (call, seq) = (le32(&b[4..8]) as usize, le64(&b[8..16]) as usize);
            let rx = super::irtt::mono_of_rx_stamp(kernel_rx_stamp(&mh), now_user);
            if let Some(slot) = got.get_mut(call).and_then(|c| c.get_mut(seq)) {
                // A duplicate keeps the first arrival, as an RTP receiver does.
                if *slot == 0 {
                    *slot = rx;
                }
            }
        }
    }
    Ok(got)
}

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b.try_into().unwrap_or([0; 4]))
}

fn le64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b.try_into().unwrap_or([0; 8]))
}

/// The shared records of one direction's streams, per call: a packet the receiver
/// stamped is received; one it did not (by the end of its drain) or whose send failed
/// is dropped. No packet is in flight once both ends are joined.
pub fn voip_records(sent: &[Vec<Sent>], received: &[Vec<u64>]) -> Vec<Vec<VoipRec>> {
    sent.iter()
        .enumerate()
        .map(|(k, pkts)| {
            pkts.iter()
                .enumerate()
                .map(|(n, &(t_send, unsent))| {
                    let rx = received.get(k).and_then(|c| c.get(n)).copied().unwrap_or(0);
                    match (unsent, rx) {
                        (false, r) if r > 0 => VoipRec { t_send, t_recv: r.max(t_send), fate: VoipFate::Received },
                        _ => VoipRec { t_send, t_recv: 0, fate: VoipFate::Dropped },
                    }
                })
                .collect()
        })
        .collect()
}

/// One direction of an entry: its sender and the other end's receiver.
pub struct VoipDir {
    pub sender: JoinHandle<io::Result<Vec<Vec<Sent>>>>,
    pub receiver: JoinHandle<io::Result<Vec<Vec<u64>>>>,
}

/// An entry's running directions (`None`: not sent).
pub struct VoipRunning {
    pub up: Option<VoipDir>,
    pub down: Option<VoipDir>,
}

/// Starts one direction: the receiver at `rx` (namespace, address), then the sender at
/// `tx_netns` towards it.
#[allow(clippy::too_many_arguments)]
pub fn start_voip_dir(
    v: &darkbuf_scenario::Voip,
    tx_netns: &str,
    tx_cpu: usize,
    rx: (&str, Ipv4Addr),
    rx_cpu: usize,
    start_mono_ns: u64,
    stop_mono_ns: u64,
    bound: Duration,
    stop: &Arc<AtomicBool>,
    rx_stop: &Arc<AtomicBool>,
) -> io::Result<VoipDir> {
    let slots = (stop_mono_ns.saturating_sub(start_mono_ns) / v.interval_ns.max(1) + 1) as usize;
    let rspec = VoipReceiverSpec { netns: rx.0.into(), bind: rx.1, calls: v.calls, slots, drain: Duration::from_secs(1), duration: bound };
    let (port, receiver) = spawn_voip_receiver(rspec, Some(rx_cpu), rx_stop.clone());
    let Some(port) = port else {
        return Err(receiver.join().ok().and_then(|r| r.err()).unwrap_or_else(|| io::Error::other("the voip receiver did not start")));
    };
    let sspec = VoipSenderSpec {
        netns: tx_netns.into(),
        dst: rx.1,
        port,
        calls: v.calls,
        payload: v.udp_payload() as usize,
        tos: v.dscp << 2,
        interval_ns: v.interval_ns,
        start_mono_ns,
        stop_mono_ns,
        slots,
    };
    let sender = spawn_voip_sender(sspec, Some(tx_cpu), stop.clone());
    Ok(VoipDir { sender, receiver })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_of_sent_and_stamped_packets() {
        let sent = vec![vec![(100, false), (200, false), (300, true)], vec![(150, false)]];
        let received = vec![vec![180, 0, 0], vec![160]];
        let r = voip_records(&sent, &received);
        assert_eq!(r[0][0], VoipRec { t_send: 100, t_recv: 180, fate: VoipFate::Received });
        assert_eq!(r[0][1].fate, VoipFate::Dropped);
        assert_eq!(r[0][2].fate, VoipFate::Dropped, "a failed send is lost even if stamped");
        assert_eq!(r[1][0].t_recv - r[1][0].t_send, 10);
    }

    #[test]
    fn calls_interleave_on_an_absolute_schedule() {
        let spec = VoipSenderSpec {
            netns: String::new(),
            dst: Ipv4Addr::LOCALHOST,
            port: 1,
            calls: 4,
            payload: 172,
            tos: 0,
            interval_ns: 20_000_000,
            start_mono_ns: 1_000,
            stop_mono_ns: u64::MAX,
            slots: 10,
        };
        assert_eq!([due(&spec, 0, 0), due(&spec, 1, 0), due(&spec, 3, 2)], [1_000, 5_001_000, 55_001_000]);
    }

    /// Over loopback: one call each way of 20 packets, all received, stamped after
    /// their send.
    #[test]
    fn loopback_stream() {
        let stop = Arc::new(AtomicBool::new(false));
        let rx_stop = Arc::new(AtomicBool::new(false));
        let v = match &darkbuf_scenario::load_str("t.toml", "[[traffic]]\nkind = \"voip\"\ninterval = \"5ms\"\n", &[]).unwrap().traffic[0] {
            darkbuf_scenario::Traffic::Voip(v) => v.clone(),
            _ => unreachable!(),
        };
        let t0 = sys::mono_ns() + 10_000_000;
        let d = start_voip_dir(&v, "", 0, ("", Ipv4Addr::LOCALHOST), 0, t0, t0 + 100_000_000 - 1, Duration::from_secs(5), &stop, &rx_stop).unwrap();
        let sent = d.sender.join().unwrap().unwrap();
        rx_stop.store(true, Ordering::SeqCst);
        let got = d.receiver.join().unwrap().unwrap();
        let r = voip_records(&sent, &got);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].len(), 20);
        assert!(r[0].iter().all(|p| p.fate == VoipFate::Received && p.t_recv >= p.t_send), "{r:?}");
    }
}
