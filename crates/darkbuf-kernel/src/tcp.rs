//! `[[traffic]] kind = "tcp"` on the kernel backend: what the kernel must offer, the
//! namespaces' TCP sysctls, starting the flows ([`crate::load::spawn_tcp_sender`],
//! [`crate::load::spawn_tcp_receiver`]) and their metrics, in the simulator's names
//! (crates/darkbuf-sim/src/report.rs `tcp_metrics()`).
//!
//! Where each metric comes from, over the measured window `[t0, t0 + duration]`:
//! - `tcp.flow.N.goodput_mbps` (and its 0.2 s series), `tcp.goodput_mbps`: bytes the
//!   receiving application read, interpolated linearly between the receiver's 0.2 s
//!   samples at the window's ends;
//! - `tcp.flow.N.retrans`, `tcp.retrans`: `tcpi_total_retrans` at the window's end minus
//!   at its start (the kernel counts every retransmitted segment, also after a local
//!   qdisc drop; the simulator sends those again as new data and does not count them);
//! - `tcp.flow.N.min_rtt_ms`: `tcpi_min_rtt` at the window's end (4.6+);
//! - `tcp.flow.N.reordering`: `tcpi_reordering` at the window's end; `tcp.flow.N.reord_seen`,
//!   `tcp.reord_seen`, `tcp.dsack_dups`: `tcpi_reord_seen` and `tcpi_dsack_dups` at its
//!   end minus at its start (4.19+);
//! - `tcp.flow.N.cwnd_pkts`, `tcp.flow.N.srtt_ms`, `tcp.flow.N.pacing_rate_mbps` (0.2 s
//!   series): the `TCP_INFO` sample nearest each step's end;
//! - `tcp.flow.N.cwnd_avg_pkts`, `tcp.flow.N.srtt_avg_ms`, `tcp.cwnd_avg_pkts`,
//!   `tcp.srtt_avg_ms`, `tcp.pacing_rate_mbps`, `tcp.delivery_rate_mbps`: the mean of
//!   the sender's `TCP_INFO` samples (every 0.2 s) inside the window, then the mean over
//!   the flows. The simulator integrates over time; at 0.2 s samples this is the same
//!   quantity, less finely resolved;
//! - `tcp.flow.N.sndbuf_bytes`: the sending socket's `sk_sndbuf` (`SO_SNDBUF`) at the
//!   sender's end, as autotuned;
//! - `tcp.flow.N.rcvbuf_bytes`, `tcp.flow.N.rcv_ssthresh_bytes`, `tcp.flow.N.rcv_space_bytes`:
//!   the receiving socket as `ss -tmi` shows it at the end ([`load::rcv_buf`]: `sk_rcvbuf`
//!   from `SO_RCVBUF`, `tcpi_rcv_ssthresh`, `tcpi_rcv_space`), read just before the
//!   receiver closes it: at the run's end, or at EOF when the sender closed first (a flow
//!   with an earlier `stop`: its buffers no longer change once it has ended).
//!
//! Sysctls, per namespace (they are per network namespace since 4.15, copied from
//! init_net when a namespace is created): `tcp_wmem` / `tcp_rmem` get the scenario's
//! `sndbuf` / `rcvbuf` as their maximum (the simulator's meaning: where autotuning
//! stops). The scenario's defaults, 4 MiB / 6 MiB, are older kernels' defaults; 6.18
//! starts with tcp_rmem[2] = 32 MiB, and the scenario's value is what the run uses, so
//! both backends run the same buffers. `so_sndbuf` is `SO_SNDBUFFORCE` on each sending
//! socket before `connect()` (`SO_SNDBUF` past `wmem_max`), which fixes the buffer.
//! `tcp_ecn` = 1 in the sender's namespace when `ecn = true`, and `tcp_tso_rtt_log` when
//! an entry's `tso_rtt_log` is not the kernel's 9. `tcp_limit_output_bytes`
//! in the sender's namespace is the scenario's `limit_output_bytes`; its `tsq` (which
//! `tcp_small_queue_check()`) is the running
//! kernel's own, and a note says so when the scenario asked for the other one for a
//! flow that may be paced (for the others the two are the same).
//!
//! The receiving application ([`read_mode`], [`receiver_cpu`]): `receiver = "poll"` is
//! one thread polling the entry's connections, `"blocking"` one thread per connection
//! blocked in `read()`, all pinned to `receiver_cpu` (default: the consumer's CPU).
//! `"instant"`, the simulator's idealised reader, has no kernel counterpart: it runs
//! `"poll"`, as every TCP run did before the key existed, and a note says so.

use crate::error::{KernelError, Result};
use crate::KernelVersion;
use crate::load::tcpinfo::TcpInfo;
use crate::load::{self, RcvBuf, ReceiverFlow, SenderFlow, TcpReceiverSpec, TcpReceiverStats, TcpSenderSpec, TcpSenderStats};
use darkbuf_model::units::Rate;
use darkbuf_report::TimeSeries;
use darkbuf_scenario::{Cc, Direction, Drs, Driver, Scenario, TcpFlow, TcpReceiver, Traffic, Tsq};
use std::collections::BTreeMap;
use std::io;
use std::net::Ipv4Addr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Where the kernel lists the congestion controls a socket may ask for.
pub const AVAILABLE_CC: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";

/// The sysctl name of a scenario's `cc`.
pub fn cc_name(cc: Cc) -> &'static str {
    cc.name()
}

/// The scenario's TCP entries with their `[[traffic]]` index.
pub fn entries(scn: &Scenario) -> Vec<(usize, &TcpFlow)> {
    scn.traffic.iter().enumerate().filter_map(|(i, t)| if let Traffic::Tcp(f) = t { Some((i, f)) } else { None }).collect()
}

/// Every entry that opens TCP connections, with its TCP settings: the `kind = "tcp"`
/// entries and each web entry's connections (`WebFlows::tcp`).
pub fn tcp_like(scn: &Scenario) -> Vec<(usize, &TcpFlow)> {
    scn.traffic
        .iter()
        .enumerate()
        .filter_map(|(i, t)| match t {
            Traffic::Tcp(f) => Some((i, f)),
            Traffic::Web(w) => Some((i, &w.tcp)),
            _ => None,
        })
        .collect()
}

/// What the kernel backend cannot do with TCP: a tap (its far end is darkbuf's reader,
/// which has no TCP stack), or a congestion control this kernel has not loaded.
/// `available` is the content of [`AVAILABLE_CC`].
pub fn check(scn: &Scenario, available: &str) -> Result<()> {
    let tcp = tcp_like(scn);
    if tcp.is_empty() {
        return Ok(());
    }
    if scn.device.driver() == Driver::Tun {
        return Err(KernelError::Unavailable(format!(
            "traffic.{}: kind = \"{}\" with driver = \"tun\": the tap's far end is darkbuf's user-space reader, which has \
             no TCP stack to answer; use driver = \"veth\"",
            tcp[0].0,
            if matches!(scn.traffic[tcp[0].0], Traffic::Web(_)) { "web" } else { "tcp" }
        )));
    }
    let have: Vec<&str> = available.split_whitespace().collect();
    for (i, f) in &tcp {
        let want = cc_name(f.cc);
        if !have.contains(&want) {
            return Err(KernelError::Unavailable(format!(
                "traffic.{i}.cc = \"{want}\": this kernel offers {} ({AVAILABLE_CC}; `modprobe tcp_{want}` may add it)",
                if have.is_empty() { "none".to_string() } else { have.join(", ") }
            )));
        }
    }
    Ok(())
}

/// [`check`] against the running kernel.
pub fn preflight(scn: &Scenario) -> Result<()> {
    if tcp_like(scn).is_empty() {
        return Ok(());
    }
    let available = std::fs::read_to_string(AVAILABLE_CC).unwrap_or_default();
    check(scn, &available)
}

/// (namespace role, sysctl, value): role `true` is the sending namespace.
pub fn sysctls(scn: &Scenario) -> Vec<(bool, String, String)> {
    let tcp = tcp_like(scn);
    let Some(snd) = tcp.iter().map(|(_, f)| f.sndbuf).max() else { return Vec::new() };
    let rcv = tcp.iter().map(|(_, f)| f.rcvbuf).max().unwrap_or(6 << 20);
    // tcp_wmem / tcp_rmem defaults: min 4096, default 16384 / 131072 (net/ipv4/tcp.c tcp_init()).
    let mut out = Vec::new();
    for sender in [true, false] {
        out.push((sender, "net.ipv4.tcp_wmem".to_string(), format!("4096 16384 {snd}")));
        out.push((sender, "net.ipv4.tcp_rmem".to_string(), format!("4096 131072 {rcv}")));
    }
    if tcp.iter().any(|(_, f)| f.ecn) {
        out.push((true, "net.ipv4.tcp_ecn".to_string(), "1".into()));
    }
    if let Some(lob) = tcp.iter().map(|(_, f)| f.limit_output_bytes).max() {
        out.push((true, "net.ipv4.tcp_limit_output_bytes".to_string(), lob.to_string()));
    }
    // tcp_tso_rtt_log (5.18+) is written only when an entry asks for other than the
    // kernel's 9, so that an older kernel still runs the scenarios that leave it alone.
    if let Some((_, f)) = tcp.iter().find(|(_, f)| f.tso_rtt_log != darkbuf_scenario::TCP_TSO_RTT_LOG_DEFAULT) {
        out.push((true, "net.ipv4.tcp_tso_rtt_log".to_string(), f.tso_rtt_log.to_string()));
    }
    // Web: the senders close first, so their ports wait in TIME_WAIT (60 s); reusing
    // them for new connections (with timestamps, 1 s after) keeps a long run at a high
    // arrival rate from running out of ports. Both ends: a download's sender is the far one.
    if !crate::web::entries(scn).is_empty() {
        for sender in [true, false] {
            out.push((sender, "net.ipv4.tcp_tw_reuse".to_string(), "1".into()));
        }
    }
    out
}

/// The TSQ that kernel `kv` runs: c4221a8cc3a7 (v6.16) caps paced flows too.
pub fn kernel_tsq(kv: KernelVersion) -> Tsq {
    if kv >= KernelVersion(6, 16, 0) {
        Tsq::Always
    } else {
        Tsq::PacedExempt
    }
}

/// Whether kernel `kv` grows the write queue's head skb before it sends
/// (`tcp_grow_skb()`, 8ee602c63520 "tcp: try to send bigger TSO packets", v6.10).
pub fn kernel_grow_skb(kv: KernelVersion) -> bool {
    kv >= KernelVersion(6, 10, 0)
}

/// The receive autotuning that kernel `kv` runs: the v6.16 series "tcp: receive side
/// improvements" changed it (v6.16 to v6.18 lack only `tcp_rcvbuf_low_rtt`, v6.19).
pub fn kernel_drs(kv: KernelVersion) -> Drs {
    if kv >= KernelVersion(6, 16, 0) {
        Drs::V6_19
    } else {
        Drs::V6_15
    }
}

/// Notes on what the scenario asked that the namespaces cannot hold per entry, or that
/// kernel `kv` does not run.
pub fn notes(scn: &Scenario, kv: KernelVersion) -> Vec<String> {
    let tcp = entries(scn);
    let mut n = Vec::new();
    let differ = |f: &dyn Fn(&TcpFlow) -> u64| tcp.windows(2).any(|w| f(w[0].1) != f(w[1].1));
    if differ(&|f| f.sndbuf) || differ(&|f| f.rcvbuf) {
        n.push("tcp: sndbuf/rcvbuf differ between [[traffic]] entries; the kernel's tcp_wmem/tcp_rmem are per namespace, so the largest applies to all".into());
    }
    if differ(&|f| f.limit_output_bytes) {
        n.push("tcp: limit_output_bytes differs between [[traffic]] entries; net.ipv4.tcp_limit_output_bytes is per namespace, so the largest applies to all".into());
    }
    if differ(&|f| f.tso_rtt_log as u64) {
        n.push("tcp: tso_rtt_log differs between [[traffic]] entries; net.ipv4.tcp_tso_rtt_log is per namespace, so the first entry's other than 9 applies to all".into());
    }
    // The two TSQs differ only for a paced flow (the sysctl written is the scenario's).
    let running = kernel_tsq(kv);
    if let Some((i, f)) = tcp.iter().find(|(_, f)| f.tsq != running && may_pace(scn, f)) {
        n.push(format!(
            "tcp: traffic.{i}.tsq = \"{}\", but kernel {kv} runs tsq = \"{}\" (c4221a8cc3a7, v6.16, caps paced flows too); the kernel's own applies",
            f.tsq.name(),
            running.name()
        ));
    }
    let drs = kernel_drs(kv);
    if let Some((i, f)) = tcp.iter().find(|(_, f)| f.drs != drs && f.receiver != TcpReceiver::Instant) {
        n.push(format!(
            "tcp: traffic.{i}.drs = \"{}\", but kernel {kv} runs drs = \"{}\" (the v6.16 receive autotuning series); the kernel's own applies",
            f.drs.name(),
            drs.name()
        ));
    }
    let grow = kernel_grow_skb(kv);
    // An unset one already runs as the kernel has it (`topo::kernel_defaults()`).
    if let Some((i, f)) = tcp.iter().find(|(_, f)| f.grow_skb_given && f.grow_skb != grow) {
        n.push(format!(
            "tcp: traffic.{i}.grow_skb = {}, but kernel {kv} {} tcp_grow_skb() (8ee602c63520, v6.10); the kernel's own applies",
            f.grow_skb,
            if grow { "has" } else { "has no" }
        ));
    }
    // The stable sublevel decides (25c1a9ca53db reached 6.1.129 and 5.15.179), and a
    // distribution's `uname -r` does not show it: say what runs where, not which runs here.
    if let Some((i, f)) = tcp.iter().find(|(_, f)| !f.hystart_round_start.is_default()) {
        n.push(format!(
            "tcp: traffic.{i}.hystart_round_start = \"{}\" is the simulator's; kernel {kv} runs its own tcp_cubic.c (v6.14's round start from 6.14 and in stable 6.1.129+ and 5.15.179+, v5.16's from 5.16 until then, v5.15's before)",
            f.hystart_round_start.name()
        ));
    }
    if tcp.iter().any(|(_, f)| f.ecn) && tcp.iter().any(|(_, f)| !f.ecn) {
        n.push("tcp: ecn differs between [[traffic]] entries; net.ipv4.tcp_ecn is per namespace, so every flow negotiates ECN".into());
    }
    if tcp.iter().any(|(_, f)| f.rate != Rate::Max) {
        n.push("tcp: a rate cap is SO_MAX_PACING_RATE on the kernel (the kernel paces, as iperf3 --fq-rate); the simulator's is an application writing no faster (iperf3 -b)".into());
    }
    let instant: Vec<String> = tcp.iter().filter(|(_, f)| f.receiver == TcpReceiver::Instant).map(|(i, _)| format!("traffic.{i}")).collect();
    if !instant.is_empty() {
        n.push(format!(
            "tcp: {}: receiver = \"instant\" is the simulator's idealised reader; the kernel's receiving application here is one thread polling the connections (receiver = \"poll\")",
            instant.join(", ")
        ));
    }
    n
}

/// How the kernel reads entry `f`'s connections: `"instant"` has no kernel counterpart
/// and runs `"poll"` (see [`notes`]).
pub fn read_mode(f: &TcpFlow) -> load::ReadMode {
    match f.receiver {
        TcpReceiver::Blocking => load::ReadMode::Blocking,
        TcpReceiver::Poll | TcpReceiver::Instant => load::ReadMode::Poll,
    }
}

/// The CPU of entry `f`'s receiving thread(s): `receiver_cpu`, else `default` (the
/// consumer's, [`Endpoints::rx_cpu`]).
pub fn receiver_cpu(f: &TcpFlow, default: usize) -> usize {
    f.receiver_cpu.map_or(default, |c| c as usize)
}

/// Whether flow `f` may be paced (`sk_pacing_status` other than `SK_PACING_NONE`), the
/// only flows whose TCP Small Queues differ between `tsq = "paced-exempt"` and
/// `"always"`: BBR (`bbr_init()`), a rate cap (`SO_MAX_PACING_RATE`), or fq anywhere
/// in the sender's qdisc tree (`SK_PACING_FQ`, set at fq's first packet of the flow).
fn may_pace(scn: &Scenario, f: &TcpFlow) -> bool {
    use darkbuf_model::params::ParamValue;
    let q = &scn.qdisc;
    let leaf_fq = q.params.iter().any(|(_, v)| match v {
        ParamValue::Tables(classes) => classes.iter().any(|c| c.iter().any(|(k, v)| k == "qdisc" && matches!(v, ParamValue::Str(s) if s == "fq"))),
        _ => false,
    });
    let fq = q.kind == "fq" || q.child.as_ref().is_some_and(|c| c.kind == "fq") || leaf_fq;
    f.cc.asks_for_pacing() || f.rate != Rate::Max || fq
}

/// Where the flows run.
pub struct Endpoints {
    pub tx_ns: String,
    pub rx_ns: String,
    pub tx_addr: Ipv4Addr,
    pub rx_addr: Ipv4Addr,
    /// The receivers' CPU unless an entry sets `receiver_cpu` (the consumer's, as the
    /// UDP sinks).
    pub rx_cpu: usize,
}

/// The running flows of one entry.
pub struct Running {
    pub index: usize,
    /// The receiver's listening port.
    pub port: u16,
    pub sender: Option<JoinHandle<io::Result<TcpSenderStats>>>,
    pub receiver: JoinHandle<io::Result<TcpReceiverStats>>,
}

/// Starts every entry's receiver (listening when this returns); senders are started by
/// [`start_senders`] with the other load.
pub fn start_receivers(scn: &Scenario, ep: &Endpoints, total: Duration, grid_t0_ns: u64, stop: &Arc<AtomicBool>) -> Result<Vec<Running>> {
    let mut out = Vec::new();
    for (i, f) in entries(scn) {
        let (ns, bind) = match f.direction {
            Direction::Up => (&ep.rx_ns, ep.rx_addr),
            Direction::Down => (&ep.tx_ns, ep.tx_addr),
        };
        let spec = TcpReceiverSpec { netns: ns.clone(), bind, flows: f.flows, duration: total + Duration::from_secs(1), grid_t0_ns, mode: read_mode(f), cc: cc_name(f.cc).into() };
        let (port, h) = load::spawn_tcp_receiver(spec, Some(receiver_cpu(f, ep.rx_cpu)), stop.clone());
        let Some(port) = port else {
            let e = h.join().ok().and_then(|r| r.err()).map_or("unknown error".into(), |e| e.to_string());
            return Err(KernelError::Internal(format!("starting the TCP receiver of traffic.{i}: {e}")));
        };
        out.push(Running { index: i, port, sender: None, receiver: h });
    }
    Ok(out)
}

/// Starts the senders, each pinned to its entry's `cpu`.
pub fn start_senders(scn: &Scenario, ep: &Endpoints, running: &mut [Running], total: Duration, grid_t0_ns: u64, stop: &Arc<AtomicBool>) {
    for r in running.iter_mut() {
        let Traffic::Tcp(f) = &scn.traffic[r.index] else { continue };
        let (ns, dst) = match f.direction {
            Direction::Up => (&ep.tx_ns, ep.rx_addr),
            Direction::Down => (&ep.rx_ns, ep.tx_addr),
        };
        let spec = TcpSenderSpec {
            netns: ns.clone(),
            dst,
            port: r.port,
            flows: f.flows,
            cc: cc_name(f.cc).into(),
            tos: f.dscp << 2,
            // SO_MAX_PACING_RATE: the scenario's, and the rate cap's as before (the
            // lower of the two when both are set).
            max_pacing_rate: match (f.rate, f.max_pacing_rate) {
                (Rate::Bps(b), Some(m)) => Some(b.min(m) / 8),
                (Rate::Bps(b), None) => Some(b / 8),
                (_, m) => m.map(|m| m / 8),
            },
            so_sndbuf: f.so_sndbuf.map(|v| v as u32),
            start: Duration::from_nanos(f.start_ns),
            stop: f.stop_ns.map_or(total, Duration::from_nanos).min(total),
            duration: total,
            grid_t0_ns,
        };
        r.sender = Some(load::spawn_tcp_sender(spec, Some(f.cpu as usize), stop.clone()));
    }
}

/// One entry's joined results (None: that thread failed, the reason is in the notes).
#[derive(Default)]
pub struct Joined {
    pub entries: Vec<(usize, Option<TcpSenderStats>, Option<TcpReceiverStats>)>,
}

/// Bytes read at `t` (ns), linear between samples, constant outside them.
pub fn bytes_at(samples: &[(u64, u64)], t: u64) -> f64 {
    let Some(first) = samples.first() else { return 0.0 };
    if t <= first.0 {
        return first.1 as f64;
    }
    for w in samples.windows(2) {
        let ((t0, b0), (t1, b1)) = (w[0], w[1]);
        if t <= t1 {
            if t1 == t0 {
                return b1 as f64;
            }
            return b0 as f64 + (b1 - b0) as f64 * (t - t0) as f64 / (t1 - t0) as f64;
        }
    }
    samples.last().map_or(0.0, |s| s.1 as f64)
}

/// The sample that describes the window's end: the first taken at or after it, else the
/// last.
fn sample_at_end(f: &SenderFlow, t1: u64) -> Option<&load::InfoSample> {
    f.samples.iter().find(|s| s.t_ns >= t1).or(f.samples.last())
}

/// A counter of the connection's life, `get` of a TCP_INFO sample, at the window's end
/// minus at its start (0 when the flow began inside it); None when a sample it needs
/// lacks the field. The counter is `bits` wide and wraps.
fn counter_in(f: &SenderFlow, t0: u64, t1: u64, bits: u32, get: impl Fn(&TcpInfo) -> Option<u64>) -> Option<u64> {
    let first = f.samples.first()?;
    let base = if first.t_ns > t0 { 0 } else { f.samples.iter().rev().find(|s| s.t_ns <= t0).map_or(Some(0), |s| get(&s.info))? };
    let end = get(&sample_at_end(f, t1)?.info)?;
    Some(end.wrapping_sub(base) & (u64::MAX >> (64 - bits)))
}

/// `tcpi_total_retrans` over the window ([`counter_in`]).
fn retrans_in(f: &SenderFlow, t0: u64, t1: u64) -> Option<u64> {
    counter_in(f, t0, t1, 32, |i| Some(i.total_retrans.into()))
}

/// `tcpi_total_rto` over the window ([`counter_in`]); None before 6.7.
fn timeouts_in(f: &SenderFlow, t0: u64, t1: u64) -> Option<u64> {
    counter_in(f, t0, t1, 16, |i| i.total_rto.map(u64::from))
}

/// Means of the TCP_INFO samples inside the window: (cwnd, srtt ms, pacing Mbit/s,
/// delivery Mbit/s); None where no sample falls inside.
fn info_means(f: &SenderFlow, t0: u64, t1: u64) -> [Option<f64>; 4] {
    // A sample taken up to 50 ms after the end still describes the window (the grid's
    // last tick is read a little late).
    let inside: Vec<_> = f.samples.iter().filter(|s| s.t_ns >= t0 && s.t_ns <= t1 + 50_000_000).collect();
    let mean = |v: Vec<f64>| if v.is_empty() { None } else { Some(v.iter().sum::<f64>() / v.len() as f64) };
    let mbps = |b: u64| b as f64 * 8.0 / 1e6;
    [
        mean(inside.iter().map(|s| s.info.snd_cwnd as f64).collect()),
        mean(inside.iter().map(|s| s.info.srtt_us as f64 / 1e3).collect()),
        mean(inside.iter().filter_map(|s| s.info.pacing_rate).filter(|&r| r != u64::MAX).map(mbps).collect()),
        mean(inside.iter().filter_map(|s| s.info.delivery_rate).map(mbps).collect()),
    ]
}

/// The 0.2 s sampling step and the ends of the window's steps, ms from its start.
fn step_grid(duration_ns: u64) -> (u64, Vec<f64>) {
    let step = load::SAMPLE_STEP.as_nanos() as u64;
    (step, (1..=duration_ns / step).map(|i| (i * step) as f64 / 1e6).collect())
}

/// Per-flow goodput series at the 0.2 s step, from the window's start.
fn goodput_series(r: &ReceiverFlow, t0: u64, duration_ns: u64) -> TimeSeries {
    let (step, t_ms) = step_grid(duration_ns);
    let steps = t_ms.len() as u64;
    let at = |k: u64| bytes_at(&r.samples, t0 + k * step);
    TimeSeries {
        unit: "Mbit/s".into(),
        t_ms,
        values: (0..steps).map(|i| Some((at(i + 1) - at(i)) * 8.0 / (step as f64 / 1e9) / 1e6)).collect(),
    }
}

/// A sender's `TCP_INFO` field as a series at the 0.2 s step: at each step's end, the
/// sample taken nearest to it (within half a step); `None` when there is none (the flow
/// had not started or had ended) or `pick` has no value.
fn info_series(f: &SenderFlow, t0: u64, duration_ns: u64, unit: &str, pick: impl Fn(&TcpInfo) -> Option<f64>) -> TimeSeries {
    let (step, t_ms) = step_grid(duration_ns);
    let at = |k: u64| {
        let end = t0 + k * step;
        f.samples.iter().filter(|s| s.t_ns.abs_diff(end) <= step / 2).min_by_key(|s| s.t_ns.abs_diff(end)).and_then(|s| pick(&s.info))
    };
    let values = (1..=t_ms.len() as u64).map(at).collect();
    TimeSeries { unit: unit.into(), t_ms, values }
}

/// `m[k]` is null, with reason `r` unless it has one.
fn null_why(m: &mut BTreeMap<String, Option<f64>>, why: &mut BTreeMap<String, String>, k: String, r: &str) {
    m.insert(k.clone(), None);
    why.entry(k).or_insert_with(|| r.to_string());
}

/// Flow `n`'s receiving socket (of `traffic.{i}`) as `ss -tmi` shows it at the end:
/// rb, rcv_ssthresh and rcv_space; `rf` is its connection on the receiver, if the
/// receiver saw it, and `receiver_failed` says why it may not have.
fn rcv_metrics(
    m: &mut BTreeMap<String, Option<f64>>,
    why: &mut BTreeMap<String, String>,
    n: usize,
    i: usize,
    rf: Option<&ReceiverFlow>,
    receiver_failed: bool,
) {
    let rcv: std::result::Result<RcvBuf, String> = match rf.map(|rf| &rf.end) {
        Some(Some(Ok(b))) => Ok(*b),
        Some(Some(Err(e))) => Err(format!("reading the receiving socket before closing it failed: {e}")),
        Some(None) => Err("the receiver closed this connection without reading its buffers".into()),
        None if receiver_failed => Err(format!("the receiver of traffic.{i} failed (see the run's notes)")),
        None => Err("the receiver did not see this connection".into()),
    };
    let rcv = rcv.map(|b| [b.rcvbuf, b.rcv_ssthresh, b.rcv_space]);
    for (k, name) in ["rcvbuf_bytes", "rcv_ssthresh_bytes", "rcv_space_bytes"].into_iter().enumerate() {
        match &rcv {
            Ok(v) => _ = m.insert(format!("tcp.flow.{n}.{name}"), Some(v[k] as f64)),
            Err(e) => null_why(m, why, format!("tcp.flow.{n}.{name}"), e),
        }
    }
}

/// The metrics of every flow and their aggregates.
pub fn metrics(
    j: &Joined,
    t0: u64,
    duration_ns: u64,
    m: &mut BTreeMap<String, Option<f64>>,
    ts: &mut BTreeMap<String, TimeSeries>,
    why: &mut BTreeMap<String, String>,
) {
    if j.entries.is_empty() {
        return;
    }
    let t1 = t0 + duration_ns;
    let secs = duration_ns as f64 / 1e9;
    let mut n = 0;
    let mut total = Some(0.0);
    let mut retrans = Some(0u64);
    let (mut reord_seen, mut dsack_dups) = (Some(0u64), Some(0u64));
    let mut means: [Vec<f64>; 4] = Default::default();
    for (i, s, r) in &j.entries {
        let Some(s) = s else {
            total = None;
            retrans = None;
            (reord_seen, dsack_dups) = (None, None);
            null_why(m, why, "tcp.goodput_mbps".into(), &format!("the sender of traffic.{i} failed (see the run's notes)"));
            continue;
        };
        for f in &s.flows {
            let rf = r.as_ref().and_then(|r| r.flows.iter().find(|x| x.peer_port == f.local_port));
            match rf {
                Some(rf) => {
                    let g = (bytes_at(&rf.samples, t1) - bytes_at(&rf.samples, t0)) * 8.0 / secs / 1e6;
                    m.insert(format!("tcp.flow.{n}.goodput_mbps"), Some(g));
                    total = total.map(|t| t + g);
                    ts.insert(format!("tcp.flow.{n}.goodput_mbps"), goodput_series(rf, t0, duration_ns));
                }
                None => {
                    total = None;
                    null_why(m, why, format!("tcp.flow.{n}.goodput_mbps"), "the receiver did not see this connection");
                }
            }
            rcv_metrics(m, why, n, *i, rf, r.is_none());
            match f.sndbuf {
                Some(b) => _ = m.insert(format!("tcp.flow.{n}.sndbuf_bytes"), Some(b as f64)),
                None => null_why(m, why, format!("tcp.flow.{n}.sndbuf_bytes"), "the sending socket had failed before the end (see the run's notes)"),
            }
            let rt = retrans_in(f, t0, t1);
            m.insert(format!("tcp.flow.{n}.retrans"), rt.map(|v| v as f64));
            retrans = retrans.zip(rt).map(|(a, b)| a + b);
            match timeouts_in(f, t0, t1) {
                Some(v) => _ = m.insert(format!("tcp.flow.{n}.timeouts"), Some(v as f64)),
                None => null_why(m, why, format!("tcp.flow.{n}.timeouts"), "TCP_INFO has no tcpi_total_rto before 6.7 (tcp.timeouts counts the namespace)"),
            }
            // ss -ti's reordering: at the end, reord_seen: and the D-SACKed segments over
            // the window (4.19+).
            let end = sample_at_end(f, t1);
            match end {
                Some(s) => _ = m.insert(format!("tcp.flow.{n}.reordering"), Some(s.info.reordering as f64)),
                None => null_why(m, why, format!("tcp.flow.{n}.reordering"), "no TCP_INFO sample of this flow"),
            }
            // ss -ti's minrtt: at the end (tcp_min_rtt(): what TSO autosizing uses).
            match end.map(|s| s.info.min_rtt_us) {
                Some(Some(us)) if us != u32::MAX => _ = m.insert(format!("tcp.flow.{n}.min_rtt_ms"), Some(us as f64 / 1e3)),
                Some(Some(_)) => null_why(m, why, format!("tcp.flow.{n}.min_rtt_ms"), "the flow had no RTT sample"),
                Some(None) => null_why(m, why, format!("tcp.flow.{n}.min_rtt_ms"), "TCP_INFO has no tcpi_min_rtt before 4.6"),
                None => null_why(m, why, format!("tcp.flow.{n}.min_rtt_ms"), "no TCP_INFO sample of this flow"),
            }
            let no_reord = "TCP_INFO has no tcpi_reord_seen and tcpi_dsack_dups before 4.19, or no sample";
            let seen = counter_in(f, t0, t1, 32, |i| i.reord_seen.map(u64::from));
            match seen {
                Some(v) => _ = m.insert(format!("tcp.flow.{n}.reord_seen"), Some(v as f64)),
                None => null_why(m, why, format!("tcp.flow.{n}.reord_seen"), no_reord),
            }
            reord_seen = reord_seen.zip(seen).map(|(a, b)| a + b);
            dsack_dups = dsack_dups.zip(counter_in(f, t0, t1, 32, |i| i.dsack_dups.map(u64::from))).map(|(a, b)| a + b);
            // ss -ti's figures at each step's end, as the simulator reports them.
            ts.insert(format!("tcp.flow.{n}.cwnd_pkts"), info_series(f, t0, duration_ns, "packets", |i| Some(i.snd_cwnd as f64)));
            ts.insert(format!("tcp.flow.{n}.srtt_ms"), info_series(f, t0, duration_ns, "ms", |i| Some(i.srtt_us as f64 / 1e3)));
            let pacing = |i: &TcpInfo| i.pacing_rate.filter(|&r| r != u64::MAX).map(|r| r as f64 * 8.0 / 1e6);
            ts.insert(format!("tcp.flow.{n}.pacing_rate_mbps"), info_series(f, t0, duration_ns, "Mbit/s", pacing));
            let [cwnd, srtt, pace, deliv] = info_means(f, t0, t1);
            m.insert(format!("tcp.flow.{n}.cwnd_avg_pkts"), cwnd);
            m.insert(format!("tcp.flow.{n}.srtt_avg_ms"), srtt);
            for (k, v) in [cwnd, srtt, pace, deliv].into_iter().enumerate() {
                if let Some(v) = v {
                    means[k].push(v);
                }
            }
            n += 1;
        }
    }
    let no_sample = "no TCP_INFO sample of any flow fell inside the measured window";
    m.insert("tcp.goodput_mbps".into(), total);
    m.insert("tcp.retrans".into(), retrans.map(|v| v as f64));
    for (k, v) in [("tcp.reord_seen", reord_seen), ("tcp.dsack_dups", dsack_dups)] {
        match v {
            Some(v) => _ = m.insert(k.into(), Some(v as f64)),
            None => null_why(m, why, k.into(), "a flow's TCP_INFO has no tcpi_reord_seen or tcpi_dsack_dups (before 4.19), or a sender failed"),
        }
    }
    let names = ["tcp.cwnd_avg_pkts", "tcp.srtt_avg_ms", "tcp.pacing_rate_mbps", "tcp.delivery_rate_mbps"];
    for (k, v) in names.iter().zip(means.iter()) {
        if v.is_empty() {
            null_why(m, why, k.to_string(), if *k == "tcp.delivery_rate_mbps" { "TCP_INFO has no tcpi_delivery_rate before 4.9, or no sample" } else { no_sample });
        } else {
            m.insert(k.to_string(), Some(v.iter().sum::<f64>() / v.len() as f64));
        }
    }
    let nulls: Vec<String> = m.iter().filter(|(k, v)| k.starts_with("tcp.") && v.is_none()).map(|(k, _)| k.clone()).collect();
    for k in nulls {
        why.entry(k).or_insert_with(|| "a TCP thread failed (see the run's notes)".into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::tcpinfo::TcpInfo;
    use crate::load::InfoSample;

    fn scn(text: &str) -> Scenario {
        darkbuf_scenario::load_str("t.toml", text, &[]).map_err(|d| format!("{d:?}")).unwrap()
    }

    const VETH_TCP: &str = "name = \"t\"\n[device]\ndriver = \"veth\"\n[qdisc]\nkind = \"pfifo\"\n[[traffic]]\nkind = \"tcp\"\ncc = \"bbr\"\n";

    #[test]
    fn cc_must_be_available() {
        let s = scn(VETH_TCP);
        assert!(check(&s, "reno cubic bbr\n").is_ok());
        let e = check(&s, "reno cubic\n").unwrap_err();
        assert_eq!(e.code(), 3);
        let msg = e.message().to_string();
        assert!(msg.contains("traffic.0.cc = \"bbr\""), "{msg}");
        assert!(msg.contains("offers reno, cubic"), "{msg}");
    }

    #[test]
    fn tap_has_no_tcp_peer() {
        let s = scn("name = \"t\"\n[device]\ndriver = \"tun\"\n[[traffic]]\nkind = \"tcp\"\n");
        let e = check(&s, "reno cubic bbr").unwrap_err();
        assert_eq!(e.code(), 3);
        assert!(e.message().contains("no TCP stack"), "{e:?}");
    }

    #[test]
    fn sysctls_follow_the_buffers() {
        let s = scn(&format!("{VETH_TCP}sndbuf = 8388608\necn = true\n"));
        let v = sysctls(&s);
        assert!(v.contains(&(true, "net.ipv4.tcp_wmem".into(), "4096 16384 8388608".into())));
        assert!(v.contains(&(false, "net.ipv4.tcp_rmem".into(), "4096 131072 6291456".into())));
        assert!(v.contains(&(true, "net.ipv4.tcp_ecn".into(), "1".into())));
        assert!(!v.iter().any(|(snd, k, _)| !snd && k == "net.ipv4.tcp_ecn"));
        assert!(sysctls(&scn("name = \"t\"\n[[traffic]]\nkind = \"ping\"\n")).is_empty());
        assert!(v.contains(&(true, "net.ipv4.tcp_limit_output_bytes".into(), "1048576".into())));
        let v = sysctls(&scn(&format!("{VETH_TCP}tsq = \"always\"\n")));
        assert!(v.contains(&(true, "net.ipv4.tcp_limit_output_bytes".into(), "4194304".into())));
        // tcp_tso_rtt_log: only when asked (a pre-5.18 kernel has no such sysctl).
        assert!(!sysctls(&s).iter().any(|(_, k, _)| k == "net.ipv4.tcp_tso_rtt_log"));
        let v = sysctls(&scn(&format!("{VETH_TCP}tso_rtt_log = 0\n")));
        assert!(v.contains(&(true, "net.ipv4.tcp_tso_rtt_log".into(), "0".into())));
    }

    /// The kernel runs its own TSQ: a scenario asking for the other one gets a note.
    #[test]
    fn tsq_of_another_kernel_is_noted() {
        let old = scn(VETH_TCP);
        let new = scn(&format!("{VETH_TCP}tsq = \"always\"\n"));
        let tsq_notes = |s: &Scenario, kv| notes(s, kv).into_iter().filter(|n| n.contains("tsq")).collect::<Vec<_>>();
        assert!(tsq_notes(&old, KernelVersion(6, 15, 9)).is_empty());
        assert!(tsq_notes(&new, KernelVersion(6, 16, 0)).is_empty());
        let n = tsq_notes(&old, KernelVersion(6, 18, 44));
        assert_eq!(n.len(), 1);
        assert!(n[0].contains("traffic.0.tsq = \"paced-exempt\", but kernel 6.18.44 runs tsq = \"always\""), "{n:?}");
        assert_eq!(tsq_notes(&new, KernelVersion(6, 12, 0)).len(), 1);
        // An unpaced flow is capped alike by both (the sysctl is the scenario's): no
        // note for cubic, unless fq, a rate cap or an fq leaf may pace it.
        let cubic = VETH_TCP.replace("bbr", "cubic");
        let k = KernelVersion(6, 18, 44);
        assert!(tsq_notes(&scn(&cubic), k).is_empty());
        assert_eq!(tsq_notes(&scn(&cubic.replace("pfifo", "fq")), k).len(), 1);
        assert_eq!(tsq_notes(&scn(&format!("{cubic}rate = \"100mbit\"\n")), k).len(), 1);
        let htb_fq = cubic.replace("kind = \"pfifo\"\n", "kind = \"htb\"\ndefault = \"10\"\n[[qdisc.class]]\nclassid = \"1:10\"\nrate = \"20mbit\"\nqdisc = \"fq\"\n");
        assert_eq!(tsq_notes(&scn(&htb_fq), k).len(), 1);
        assert!(tsq_notes(&scn(&htb_fq.replace("qdisc = \"fq\"", "qdisc = \"pfifo\"")), k).is_empty());
    }

    /// HyStart's round start cannot be chosen on a kernel: asking for another than the
    /// default gets a note naming where each runs.
    #[test]
    fn hystart_round_start_is_noted() {
        let k = KernelVersion(6, 1, 0);
        let cubic = VETH_TCP.replace("bbr", "cubic");
        let hy = |s: &Scenario| notes(s, k).into_iter().filter(|n| n.contains("hystart")).collect::<Vec<_>>();
        assert!(hy(&scn(&cubic)).is_empty());
        let n = hy(&scn(&format!("{cubic}hystart_round_start = \"v5.16\"\n")));
        assert_eq!(n.len(), 1);
        assert!(n[0].starts_with("tcp: traffic.0.hystart_round_start = \"v5.16\" is the simulator's; kernel 6.1.0 runs its own"), "{n:?}");
    }

    /// A scenario's given `grow_skb` that the kernel does not run is noted: 6.1 has no
    /// `tcp_grow_skb()`, 6.10 has it. An unset one is the kernel's (no note).
    #[test]
    fn grow_skb_is_noted_where_the_kernel_differs() {
        let g = |s: &Scenario, k| notes(s, k).into_iter().filter(|n| n.contains("grow_skb")).collect::<Vec<_>>();
        let given = scn(&format!("{VETH_TCP}grow_skb = true\n"));
        let old = scn(&format!("{VETH_TCP}grow_skb = false\n"));
        assert!(g(&scn(VETH_TCP), KernelVersion(6, 1, 0)).is_empty());
        assert!(g(&given, KernelVersion(6, 10, 0)).is_empty());
        assert!(g(&old, KernelVersion(6, 9, 12)).is_empty());
        assert_eq!(g(&given, KernelVersion(6, 1, 0)), ["tcp: traffic.0.grow_skb = true, but kernel 6.1.0 has no tcp_grow_skb() (8ee602c63520, v6.10); the kernel's own applies"]);
        assert_eq!(g(&old, KernelVersion(6, 18, 0)), ["tcp: traffic.0.grow_skb = false, but kernel 6.18.0 has tcp_grow_skb() (8ee602c63520, v6.10); the kernel's own applies"]);
    }

    /// "instant" and "poll" run the polling receiver, "blocking" a reader per
    /// connection; `receiver_cpu` places them, else the consumer's CPU does.
    #[test]
    fn receiver_mode_and_cpu() {
        let f = |extra: &str| match &scn(&format!("{VETH_TCP}{extra}")).traffic[0] {
            Traffic::Tcp(f) => f.clone(),
            _ => unreachable!(),
        };
        let instant = f("");
        assert_eq!(read_mode(&instant), load::ReadMode::Poll);
        assert_eq!(receiver_cpu(&instant, 3), 3);
        assert_eq!(read_mode(&f("receiver = \"poll\"\n")), load::ReadMode::Poll);
        let blocking = f("receiver = \"blocking\"\nreceiver_cpu = 0\n");
        assert_eq!(read_mode(&blocking), load::ReadMode::Blocking);
        assert_eq!(receiver_cpu(&blocking, 3), 0);
        assert_eq!(receiver_cpu(&f("receiver = \"blocking\"\n"), 3), 3);
    }

    /// "instant" gets one note naming every entry that asked for it; a real reader none.
    #[test]
    fn instant_receiver_is_noted_once() {
        let k = KernelVersion(6, 18, 44);
        let rx_notes = |s: &Scenario| notes(s, k).into_iter().filter(|n| n.contains("receiver")).collect::<Vec<_>>();
        let n = rx_notes(&scn(VETH_TCP));
        assert_eq!(n.len(), 1);
        assert!(n[0].starts_with("tcp: traffic.0: receiver = \"instant\" is the simulator's idealised reader;"), "{n:?}");
        assert!(n[0].ends_with("one thread polling the connections (receiver = \"poll\")"), "{n:?}");
        for r in ["poll", "blocking"] {
            assert!(rx_notes(&scn(&format!("{VETH_TCP}receiver = \"{r}\"\n"))).is_empty(), "{r}");
        }
        let three = format!("{VETH_TCP}[[traffic]]\nkind = \"tcp\"\nreceiver = \"blocking\"\n[[traffic]]\nkind = \"tcp\"\n");
        let n = rx_notes(&scn(&three));
        assert_eq!(n.len(), 1);
        assert!(n[0].starts_with("tcp: traffic.0, traffic.2: receiver"), "{n:?}");
    }

    #[test]
    fn interpolation() {
        let s = [(100, 0), (200, 1000), (300, 1000)];
        assert_eq!(bytes_at(&s, 50), 0.0);
        assert_eq!(bytes_at(&s, 150), 500.0);
        assert_eq!(bytes_at(&s, 250), 1000.0);
        assert_eq!(bytes_at(&s, 400), 1000.0);
        assert_eq!(bytes_at(&[], 400), 0.0);
    }

    fn info(cwnd: u32, srtt_us: u32, retr: u32) -> TcpInfo {
        let (reordering, reord_seen, dsack_dups) = (3 + retr, Some(retr), Some(2 * retr));
        TcpInfo { state: 1, snd_cwnd: cwnd, srtt_us, total_retrans: retr, pacing_rate: Some(12_500_000), delivery_rate: Some(11_250_000), total_rto: Some(retr as u16 / 2), reordering, reord_seen, dsack_dups, min_rtt_us: Some(900 + retr), ..TcpInfo::default() }
    }

    #[test]
    fn window_metrics() {
        let step = 200_000_000u64;
        let t0 = 1_000_000_000u64;
        // Sender: samples every 0.2 s from t0 - 0.2 s to t0 + 1 s.
        let samples: Vec<InfoSample> = (0..=6).map(|k| InfoSample { t_ns: t0 - step + k * step, info: info(10 * (k as u32 + 1), 2_000, k as u32) }).collect();
        let s = TcpSenderStats { flows: vec![SenderFlow { local_port: 40000, bytes_written: 0, samples, sndbuf: Some(244_224) }], errors: vec![] };
        // Receiver: 12.5 MB/s = 100 Mbit/s exactly.
        let rs: Vec<(u64, u64)> = (0..=6).map(|k| (t0 - step + k * step, k * 2_500_000)).collect();
        let end = Some(Ok(RcvBuf { rcvbuf: 131_072, rcv_ssthresh: 115_208, rcv_space: 57_920 }));
        let r = TcpReceiverStats { port: 5201, flows: vec![ReceiverFlow { peer_port: 40000, bytes: 0, samples: rs, end }] };
        let j = Joined { entries: vec![(0, Some(s), Some(r))] };
        let (mut m, mut ts, mut why) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
        metrics(&j, t0, 4 * step, &mut m, &mut ts, &mut why);
        let g = m["tcp.goodput_mbps"].unwrap();
        assert!((g - 100.0).abs() < 1e-9, "{g}");
        // total_retrans 1 at t0, 5 at t0 + 0.8 s.
        assert_eq!(m["tcp.retrans"], Some(4.0));
        // cwnd samples at t0 .. t0 + 0.8 s: 20, 30, 40, 50, 60 (the one at +1 s is past 50 ms).
        assert_eq!(m["tcp.flow.0.cwnd_avg_pkts"], Some(40.0));
        assert_eq!(m["tcp.srtt_avg_ms"], Some(2.0));
        assert_eq!(m["tcp.pacing_rate_mbps"], Some(100.0));
        assert_eq!(m["tcp.delivery_rate_mbps"], Some(90.0));
        let series = &ts["tcp.flow.0.goodput_mbps"];
        assert_eq!(series.t_ms, vec![200.0, 400.0, 600.0, 800.0]);
        assert!(series.values.iter().all(|v| (v.unwrap() - 100.0).abs() < 1e-9));
        // ss -ti at each step's end: the samples at t0 + 0.2 .. 0.8 s (cwnd 30 .. 60).
        assert_eq!(ts["tcp.flow.0.cwnd_pkts"].values, vec![Some(30.0), Some(40.0), Some(50.0), Some(60.0)]);
        assert_eq!(ts["tcp.flow.0.srtt_ms"].values, vec![Some(2.0); 4]);
        assert_eq!(ts["tcp.flow.0.pacing_rate_mbps"].values, vec![Some(100.0); 4]);
        // tcpi_total_rto (retrans / 2 here): 0 at t0, 2 at t0 + 0.8 s.
        assert_eq!(m["tcp.flow.0.timeouts"], Some(2.0));
        // ss -ti's reordering: at t0 + 0.8 s (3 + 5), and reord_seen: (= retrans here) and
        // the D-SACKed segments (2 x retrans) over the window.
        assert_eq!(m["tcp.flow.0.reordering"], Some(8.0));
        // ss -ti's minrtt: of the sample at the window's end (k = 5).
        assert_eq!(m["tcp.flow.0.min_rtt_ms"], Some(0.905));
        assert_eq!((m["tcp.flow.0.reord_seen"], m["tcp.reord_seen"], m["tcp.dsack_dups"]), (Some(4.0), Some(4.0), Some(8.0)));
        // The receiving socket at the end, as ss -tmi shows it.
        assert_eq!(m["tcp.flow.0.rcvbuf_bytes"], Some(131_072.0));
        assert_eq!(m["tcp.flow.0.rcv_ssthresh_bytes"], Some(115_208.0));
        assert_eq!(m["tcp.flow.0.rcv_space_bytes"], Some(57_920.0));
        assert!(why.is_empty(), "{why:?}");
    }

    /// The receiving socket's buffers are null with a reason when they were not read:
    /// getsockopt failed, the receiver never saw the connection, or the receiver failed.
    /// Flow N is the sender's N-th flow, matched to the receiver's by port.
    #[test]
    fn unread_receiver_buffers_are_null_with_a_reason() {
        let t0 = 1_000_000_000u64;
        let samples: Vec<InfoSample> = (0..=6).map(|k| InfoSample { t_ns: t0 - 200_000_000 + k * 200_000_000, info: info(10, 2_000, 0) }).collect();
        let flow = |port| SenderFlow { local_port: port, bytes_written: 0, samples: samples.clone(), sndbuf: None };
        let s = TcpSenderStats { flows: vec![flow(40000), flow(40001), flow(40002)], errors: vec![] };
        let rs = vec![(t0, 0), (t0 + 800_000_000, 1_000)];
        let rflow = |port, end| ReceiverFlow { peer_port: port, bytes: 1_000, samples: rs.clone(), end };
        // Listed out of order: the third sender flow was read, the first failed to be, the second never seen.
        let good = RcvBuf { rcvbuf: 262_144, rcv_ssthresh: 200_000, rcv_space: 100_000 };
        let r = TcpReceiverStats { port: 5201, flows: vec![rflow(40002, Some(Ok(good))), rflow(40000, Some(Err("getsockopt TCP_INFO: EBADF".into())))] };
        let j = Joined { entries: vec![(0, Some(s.clone()), Some(r)), (1, Some(s), None)] };
        let (mut m, mut ts, mut why) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
        metrics(&j, t0, 800_000_000, &mut m, &mut ts, &mut why);
        for k in ["rcvbuf_bytes", "rcv_ssthresh_bytes", "rcv_space_bytes"] {
            assert_eq!(m[&format!("tcp.flow.0.{k}")], None);
            assert!(why[&format!("tcp.flow.0.{k}")].contains("EBADF"), "{why:?}");
            assert_eq!(m[&format!("tcp.flow.1.{k}")], None);
            assert_eq!(why[&format!("tcp.flow.1.{k}")], "the receiver did not see this connection");
            assert_eq!(m[&format!("tcp.flow.3.{k}")], None);
            assert!(why[&format!("tcp.flow.3.{k}")].starts_with("the receiver of traffic.1 failed"), "{why:?}");
        }
        assert_eq!(m["tcp.flow.2.rcvbuf_bytes"], Some(262_144.0));
        assert_eq!(m["tcp.flow.2.rcv_ssthresh_bytes"], Some(200_000.0));
        assert_eq!(m["tcp.flow.2.rcv_space_bytes"], Some(100_000.0));
        assert!(!why.contains_key("tcp.flow.2.rcvbuf_bytes"));
    }

    /// Before 4.19 TCP_INFO has no tcpi_reord_seen or tcpi_dsack_dups: those are null,
    /// with why, and the totals too; `tcpi_reordering` is there.
    #[test]
    fn reordering_counts_need_4_19() {
        let t0 = 1_000_000_000u64;
        let old = TcpInfo { reord_seen: None, dsack_dups: None, ..info(10, 2_000, 0) };
        let samples: Vec<InfoSample> = (0..=6).map(|k| InfoSample { t_ns: t0 - 200_000_000 + k * 200_000_000, info: old }).collect();
        let s = TcpSenderStats { flows: vec![SenderFlow { local_port: 40000, bytes_written: 0, samples, sndbuf: Some(244_224) }], errors: vec![] };
        let j = Joined { entries: vec![(0, Some(s), None)] };
        let (mut m, mut ts, mut why) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
        metrics(&j, t0, 800_000_000, &mut m, &mut ts, &mut why);
        assert_eq!(m["tcp.flow.0.reordering"], Some(3.0));
        for k in ["tcp.flow.0.reord_seen", "tcp.reord_seen", "tcp.dsack_dups"] {
            assert_eq!(m[k], None, "{k}");
            assert!(why[k].contains("4.19"), "{k}: {why:?}");
        }
    }

    /// Before 6.7 TCP_INFO has no tcpi_total_rto: a flow's timeouts are null, with why.
    #[test]
    fn timeouts_need_tcpi_total_rto() {
        let t0 = 1_000_000_000u64;
        let samples: Vec<InfoSample> =
            (0..=6).map(|k| InfoSample { t_ns: t0 - 200_000_000 + k * 200_000_000, info: TcpInfo { total_rto: None, ..info(10, 2_000, 0) } }).collect();
        let s = TcpSenderStats { flows: vec![SenderFlow { local_port: 40000, bytes_written: 0, samples, sndbuf: Some(244_224) }], errors: vec![] };
        let j = Joined { entries: vec![(0, Some(s), None)] };
        let (mut m, mut ts, mut why) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
        metrics(&j, t0, 800_000_000, &mut m, &mut ts, &mut why);
        assert_eq!(m["tcp.flow.0.timeouts"], None);
        assert!(why["tcp.flow.0.timeouts"].contains("before 6.7"), "{why:?}");
    }

    /// A step with no TCP_INFO sample within half a step of its end (the flow had not
    /// started, or had ended) is null, not the nearest sample further away.
    #[test]
    fn info_series_is_null_without_a_sample() {
        let step = 200_000_000u64;
        let t0 = 1_000_000_000u64;
        let samples = vec![InfoSample { t_ns: t0 + 2 * step + 1_000_000, info: info(25, 3_000, 0) }];
        let f = SenderFlow { local_port: 1, bytes_written: 0, samples, sndbuf: None };
        let s = info_series(&f, t0, 4 * step, "packets", |i| Some(i.snd_cwnd as f64));
        assert_eq!(s.values, vec![None, Some(25.0), None, None]);
    }

    proptest::proptest! {
        /// Interpolated bytes never leave the samples' range and never decrease in time
        /// (a receiver's counts only grow), so no window has negative goodput.
        #[test]
        fn interpolation_is_monotone_and_bounded(
            steps in proptest::collection::vec((1u64..1_000_000, 0u64..1_000_000), 1..40),
            probes in proptest::collection::vec(0u64..50_000_000, 2..20),
        ) {
            let mut t = 0;
            let mut b = 0;
            let samples: Vec<(u64, u64)> = steps.iter().map(|(dt, db)| { t += dt; b += db; (t, b) }).collect();
            let mut probes = probes;
            probes.sort_unstable();
            let lo = samples[0].1 as f64;
            let hi = samples.last().unwrap().1 as f64;
            let mut prev = f64::MIN;
            for p in probes {
                let v = bytes_at(&samples, p);
                proptest::prop_assert!(v >= lo && v <= hi, "{v} outside {lo}..{hi}");
                proptest::prop_assert!(v >= prev);
                prev = v;
            }
        }
    }

    #[test]
    fn a_failed_sender_is_null_with_a_reason() {
        let j = Joined { entries: vec![(2, None, None)] };
        let (mut m, mut ts, mut why) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
        metrics(&j, 0, 1_000_000_000, &mut m, &mut ts, &mut why);
        assert_eq!(m["tcp.goodput_mbps"], None);
        assert!(why["tcp.goodput_mbps"].contains("failed"));
        assert!(why.contains_key("tcp.cwnd_avg_pkts"));
    }
}
