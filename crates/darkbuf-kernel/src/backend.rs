//! One scenario on the running kernel: setup, warmup, the measured window, teardown,
//! and the measurements in the results contract's metric names
//! (docs/design.md "Results").
//!
//! Timeline of a run (all load tools are threads of this process, see [`crate::load`]):
//!
//! ```text
//! setup ─ sinks ─ a snapshot thrown away ─ floods + prober start ─ warmup ─
//! snapshot A ─ samples every sample_interval ─ snapshot B ─ stop, join ─ teardown
//! ```
//!
//! The load runs until the stop flag after snapshot B (bounded by [`MAX_LOAD_TAIL`]
//! past warmup + duration), so that B still sees it where a snapshot takes seconds (a
//! TCG guest of `--backend vm`). Each side's counters are rated over the time between
//! the two snapshots' reads of that side.
//!
//! Rates and counters are deltas between the two snapshots, divided by the time between
//! them; probes count when they were sent inside that window. What the kernel does not
//! count (per-stage probe waits, ring occupancy, txq stops, BQL on a device without
//! it) is `null` with the reason in `unavailable`.
//!
//! Counter sources, per metric:
//! - `consumer.pps`: veth `ethtool -S` `rx_queue_N_xdp_packets` of the peer (every
//!   packet veth's NAPI poll handled; the packet count of `ip -s link` when NAPI never
//!   ran), tap: its `tx_packets` (frames the reader read);
//! - `sink.pps`: `Udp InDatagrams` of /proc/net/snmp in the receiving namespace (tap:
//!   the reader's flood frames); `sink.pps.<traffic index>` splits it by each sink's
//!   own count;
//! - `qdisc.*`: the root qdisc of `tc -s -j qdisc` (mq: the sum of its children), the
//!   backlog averaged over the samples;
//! - `bql.*`: `byte_queue_limits/{limit,inflight}` of every TX queue, sampled: the
//!   largest limit and the summed in-flight, and `bql.txq.N.*` per queue ([`crate::bql`]);
//! - `napi.polls`, `napi.full_budget_polls`: the `napi:napi_poll` tracepoint
//!   ([`crate::trace`]); `napi.avg_work` = consumer packets / polls;
//! - `ring.drops`: veth `rx_queue_N_drops` (ptr_ring full), tap `tx_dropped`;
//! - `napi.thread_cpu_pct`: the NAPI kthreads' /proc/PID/schedstat;
//! - `udp.rcvbuf_errors`, `udp.sndbuf_errors`, `udp.in_errors`, `flood.pps`: /proc/net/snmp;
//! - `tcp.timeouts`, `tcp.loss_probes`, `tcp.loss_probe_recoveries`, `tcp.undos`,
//!   `tcp.backlog_coalesce`, `tcp.delivered_ce`: `TcpExt TCPTimeouts`, `TCPLossProbes`,
//!   `TCPLossProbeRecovery`, `TCPFullUndo` + `TCPDSACKUndo`, `TCPBacklogCoalesce`,
//!   `TCPDeliveredCE` of
//!   /proc/net/netstat in the sending namespace (`tcp.backlog_acks` and
//!   `tcp.release_cb_work` have no counter: null);
//! - `softnet.time_squeeze`, `cpu.N.busy_pct`: global (/proc/net/softnet_stat, /proc/stat).

use crate::cmd;
use crate::counters::{self, LinkCounters, QdiscCounters};
use crate::error::{KernelError, Result};
use crate::load::{self, FloodSpec, FloodStats, ProbeKind, ProbeOpts, ProbeResult, ProbeSpec, SinkSpec, SinkStats, TapReaderSpec, TapReaderStats};
use crate::names::Names;
use crate::probe_trace::{match_probes, FarEndEvent, ProbeTrace, StampedProbe};
use crate::rules::RuleScope;
use crate::session::{Batch, NsThread};
use crate::signals;
use crate::topo::{self, Options, Topology};
use crate::trace::{NapiPollCounter, PollCounts};
use crate::KernelVersion;
use darkbuf_model::units::Rate;
use darkbuf_report::{Environment, Log2Hist, Results, RunRecord, TimeSeries};
use darkbuf_scenario::{Driver, Scenario, Traffic};
use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// First UDP port of the floods (flood i sends to FLOOD_PORT_BASE + i).
pub const FLOOD_PORT_BASE: u16 = 5001;
/// A probe without a reply after this long is lost.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the load may run past warmup + duration: the measured window ends with a
/// snapshot of every counter, which must still see the load running, and under load
/// in a TCG guest a snapshot took several seconds. The tools stop at the stop flag
/// right after that snapshot; this only bounds them. Flows and probes with a `stop`
/// of their own keep it.
pub const MAX_LOAD_TAIL: Duration = Duration::from_secs(60);

/// Sample period of the qdisc backlog when the scenario asks for no time series.
pub const DEFAULT_SAMPLE: Duration = Duration::from_millis(100);

static RUN_SEQ: AtomicU32 = AtomicU32::new(0);

/// Kernel-backend options that are not scenario keys (yet).
#[derive(Clone, Debug)]
pub struct RunOpts {
    /// Which received packets traverse the rules (`consumer.rules_match`).
    pub rule_scope: RuleScope,
    /// Per-namespace sysctls written in both namespaces after setup, e.g.
    /// ("net.ipv4.tcp_limit_output_bytes", "65536") (experiments; not a scenario key).
    pub netns_sysctls: Vec<(String, String)>,
    /// Leave TSO/GSO on at the sender (`ethtool -K tso on gso on` after the NAPI recipe,
    /// which turns them off): TCP then builds TSO skbs as the simulator's TCP does, and
    /// veth takes its netif_rx() path instead of the NAPI ring.
    pub sender_tso: bool,
    /// veth: trace the probes' far end (`probe_trace`) for `ping.wait_ring_ms` and
    /// `ping.wait_consumer_ms`. Off by default: the tracepoints' filter runs for every
    /// packet the consumer receives.
    pub probe_trace: bool,
}

impl RunOpts {
    pub fn for_scenario(scn: &Scenario) -> RunOpts {
        RunOpts { rule_scope: RuleScope::of(scn.consumer.rules_match), netns_sysctls: Vec::new(), sender_tso: false, probe_trace: false }
    }
}

/// One run's results.
#[derive(Clone, Debug)]
pub struct RunOutput {
    pub record: RunRecord,
    /// Metric -> why it is null.
    pub unavailable: BTreeMap<String, String>,
    /// What the kernel did differently from the scenario, and other remarks.
    pub notes: Vec<String>,
}

/// The results' `environment` for the kernel backend.
pub fn environment() -> Environment {
    Environment {
        kernel: crate::uname_release(),
        cpu: crate::cpu_model(),
        profile: "kernel".into(),
        darkbuf_version: env!("CARGO_PKG_VERSION").into(),
        vm: None,
    }
}

/// Runs every run of `scn` (`scn.runs`, seeds seed, seed+1, ...) and assembles the
/// results. `each` is called after every run (for a progress bar).
pub fn run_scenario(scn: &Scenario, opts: &RunOpts, mut each: impl FnMut(&RunOutput)) -> Result<(Results, Vec<String>)> {
    signals::install();
    let kv = KernelVersion::running();
    topo::preflight(scn, kv)?;
    crate::tcp::preflight(scn)?;
    let mut records = Vec::new();
    let mut unavailable = BTreeMap::new();
    let mut notes: Vec<String> = before_run();
    let mut warnings: Vec<String> = notes.iter().filter(|n| n.starts_with(ANOTHER_RUN)).cloned().collect();
    for i in 0..scn.runs.max(1) as u64 {
        // A signal also kills the tool a setup step was running: report the signal.
        let out = run_once(scn, scn.seed.wrapping_add(i), opts).map_err(|e| interrupted().unwrap_or(e))?;
        each(&out);
        for n in &out.notes {
            if !notes.contains(n) {
                notes.push(n.clone());
            }
            if n.starts_with(ANOTHER_RUN) && !warnings.contains(n) {
                warnings.push(n.clone());
            }
        }
        unavailable.extend(out.unavailable);
        records.push(out.record);
    }
    let scenario = serde_json::to_value(scn).map_err(|e| KernelError::Internal(e.to_string()))?;
    let mut results = Results::from_runs(scenario, "kernel", environment(), records, unavailable);
    results.warnings.extend(warnings);
    Ok((results, notes))
}

/// How the note about a concurrent darkbuf run begins (it also goes into the results'
/// warnings: the numbers are disturbed).
pub const ANOTHER_RUN: &str = "another darkbuf run is active";

/// Set (to anything) in the environment, each run adds a note with the wall time of its
/// phases: where a run's time goes beside its warmup and window (setup and teardown are
/// fork/exec-bound, and many times slower in an emulated guest).
pub const TIMING_ENV: &str = "DARKBUF_TIMING";

fn another_run_note(pids: &[u32], when: &str) -> String {
    let pids: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
    format!(
        "{ANOTHER_RUN} (pid {}) {when}: it loads the same CPUs and kernel, so both runs' results are disturbed; \
         run one at a time",
        pids.join(", ")
    )
}

/// Before a run: removes what killed darkbuf runs left behind (a SIGKILL gives no
/// chance to tear down), and notes another darkbuf run that is active.
pub fn before_run() -> Vec<String> {
    let mut notes = Vec::new();
    let others = crate::names::other_active_runs();
    if !others.is_empty() {
        notes.push(another_run_note(&others, "as this one starts"));
    }
    let dead: Vec<_> = crate::names::find_leftovers().into_iter().filter(|l| !l.owner_alive).collect();
    if !dead.is_empty() {
        let (removed, errors) = crate::names::remove_leftovers(&dead);
        if !removed.is_empty() {
            notes.push(format!("removed what a killed darkbuf run left behind: {}", removed.join(", ")));
        }
        for e in errors {
            notes.push(format!("a killed darkbuf run left this behind and it could not be removed: {e} (see darkbuf check)"));
        }
        // A removed device's NAPI kthreads exit asynchronously: give them a moment, as
        // `check` does, before calling them lingering.
        let lingering_now = || -> Vec<String> {
            crate::names::find_leftovers().into_iter().filter(|l| l.kind == "napi-thread" && !l.owner_alive).map(|l| l.name).collect()
        };
        let end = Instant::now() + Duration::from_secs(3);
        let mut lingering = lingering_now();
        while !lingering.is_empty() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
            lingering = lingering_now();
        }
        if !lingering.is_empty() {
            notes.push(format!("NAPI kthreads of a killed run's devices are still there: {}", lingering.join(", ")));
        }
    }
    notes
}

/// Everything read at one instant (a snapshot takes a few exec's: ~10-20 ms).
#[derive(Clone, Debug, Default)]
struct Snapshot {
    at: Option<Instant>,
    /// When the sender's and the receiver's namespace sections ran (their midpoints):
    /// where a snapshot takes seconds (a TCG guest), each side's counters are rated
    /// over their own window.
    tx_at: Option<Instant>,
    rx_at: Option<Instant>,
    mono_ns: u64,
    qdisc: Option<QdiscCounters>,
    /// Root and children (mq), for stall detection.
    qdiscs: Vec<(String, QdiscCounters)>,
    /// An mq root's children by TX queue.
    mq_children: Vec<(u32, QdiscCounters)>,
    /// `tc -s qdisc show dev DEV` as tc prints it.
    tc_text: Option<String>,
    /// Every qdisc's xstats, and htb's classes', by the simulator's names.
    xstats: Vec<crate::xstats::QdiscXstats>,
    htb_classes: Vec<(String, f64)>,
    tx_link: Option<LinkCounters>,
    rx_link: Option<LinkCounters>,
    /// Peer's `ethtool -S` (veth).
    rx_ethtool: BTreeMap<String, u64>,
    snmp_tx: BTreeMap<String, u64>,
    snmp_rx: BTreeMap<String, u64>,
    /// The sender's `TcpExt` counters (/proc/net/netstat).
    tcpext_tx: BTreeMap<String, u64>,
    napi_cpu_ns: Option<u64>,
    polls: Option<PollCounts>,
    cpu: Vec<(u64, u64)>,
    squeeze: Option<u64>,
    /// CPU ticks of every other user-space process (load that is not ours).
    other_ticks: u64,
}

/// One sample of the time series.
#[derive(Clone, Debug, Default)]
struct Sample {
    t_ms: f64,
    qlen: Option<u64>,
    /// The root qdisc's sent packets (to see a stalled queue).
    sent: Option<u64>,
    /// Every TX queue's `byte_queue_limits`; `None` when one could not be read.
    bql: Option<Vec<crate::bql::BqlQueue>>,
}

/// An irtt entry's running client and server (`None`: the tap's reader answers it).
type IrttPair = (JoinHandle<io::Result<load::IrttClientResult>>, Option<JoinHandle<io::Result<load::IrttServerStats>>>);

/// The UDP port a tap's reader answers irtt on (irtt's own default).
const TAP_IRTT_PORT: u16 = 2112;

/// The running tools.
#[derive(Default)]
struct Tools {
    floods: Vec<(usize, JoinHandle<io::Result<FloodStats>>)>,
    sinks: Vec<(usize, JoinHandle<io::Result<SinkStats>>)>,
    /// One prober per ping entry, in scenario order.
    probers: Vec<JoinHandle<io::Result<ProbeResult>>>,
    tap: Option<JoinHandle<io::Result<TapReaderStats>>>,
    tcp: Vec<crate::tcp::Running>,
    /// Per irtt entry in scenario order: its client and its server. The servers stop on
    /// `irtt_stop`, after the clients have had their replies.
    irtt: Vec<IrttPair>,
    irtt_stop: Arc<AtomicBool>,
}

#[derive(Default)]
struct Joined {
    floods: Vec<(usize, FloodStats)>,
    sinks: Vec<(usize, SinkStats)>,
    /// Per ping entry: its prober's probes (None: it failed).
    probes: Vec<Option<ProbeResult>>,
    tap: Option<TapReaderStats>,
    /// Per irtt entry: its client's requests and its server's records (None: one failed).
    irtt: Vec<Option<(load::IrttClientResult, load::IrttServerStats)>>,
    /// The far end's tracepoint events for the probes (veth), or why there are none.
    far_end: Option<std::result::Result<Vec<FarEndEvent>, String>>,
    tcp: crate::tcp::Joined,
    errors: Vec<String>,
}

/// One pinger's metrics after `ping.` or `ping.N.`, as the simulator names them (the
/// far end's `wait_ring_ms` and `wait_consumer_ms` come from `probe_far_end_waits()`).
/// The first six are null when there is no figure; the counts always have one.
const PING_KEYS: [&str; 8] = ["rtt_avg_ms", "rtt_min_ms", "rtt_p50_ms", "rtt_p99_ms", "rtt_max_ms", "loss_pct", "probes", "unsendable"];

/// What one prober measured in the window [t0, t1): values and nulls by key (without
/// the `ping.` prefix), its `rtt_ms` series, and its RTT histogram.
struct PingFigures {
    values: Vec<(&'static str, f64)>,
    nulls: Vec<(&'static str, String)>,
    series: TimeSeries,
    hist: Option<Log2Hist>,
}

fn ping_figures(p: &ProbeResult, driver: Driver, t0: u64, t1: u64) -> PingFigures {
    let mut f = PingFigures { values: Vec::new(), nulls: Vec::new(), series: TimeSeries::default(), hist: None };
    let in_window: Vec<(u64, Option<u64>, bool)> = p
        .samples
        .iter()
        .map(|s| (p.start_mono_ns + s.t_send_ns, s.rtt_ns, s.unsendable))
        .filter(|(t, _, _)| *t >= t0 && *t < t1)
        .collect();
    // As the simulator averages it: over the answered probes, here those the driver
    // stamped as well.
    let qdisc_waits: Vec<u64> = p
        .samples
        .iter()
        .filter(|s| (t0..t1).contains(&(p.start_mono_ns + s.t_send_ns)) && s.rtt_ns.is_some())
        .filter_map(|s| s.wait_qdisc_ns)
        .collect();
    if !qdisc_waits.is_empty() {
        let avg = qdisc_waits.iter().map(|&w| w as f64).sum::<f64>() / qdisc_waits.len() as f64;
        f.values.push(("wait_qdisc_ms", avg / 1e6));
    } else if !p.tx_timestamping {
        f.nulls.push(("wait_qdisc_ms", "the probe socket refused SO_TIMESTAMPING, so no driver TX timestamp was asked for".into()));
    } else {
        let why = format!("no answered probe got a software TX timestamp from the {} driver (it does not call skb_tx_timestamp())", driver.name());
        f.nulls.push(("wait_qdisc_ms", why));
    }
    let mut rtts: Vec<u64> = in_window.iter().filter_map(|(_, r, _)| *r).collect();
    rtts.sort_unstable();
    let ms = |ns: f64| ns / 1e6;
    if rtts.is_empty() {
        for k in &PING_KEYS[..5] {
            f.nulls.push((k, "no probe sent in the measured window was answered".into()));
        }
    } else {
        let avg = rtts.iter().map(|&r| r as f64).sum::<f64>() / rtts.len() as f64;
        f.values.push(("rtt_avg_ms", ms(avg)));
        f.values.push(("rtt_min_ms", ms(rtts[0] as f64)));
        for (k, pct) in [("rtt_p50_ms", 50.0), ("rtt_p99_ms", 99.0)] {
            match darkbuf_measure::percentile(&rtts, pct) {
                Some(v) => f.values.push((k, ms(v))),
                None => f.nulls.push((k, "no probe sent in the measured window was answered".into())),
            }
        }
        f.values.push(("rtt_max_ms", ms(*rtts.last().unwrap_or(&0) as f64)));
        let mut h = Log2Hist::default();
        for &r in &rtts {
            h.record(r / 1000);
        }
        f.hist = Some(h);
    }
    let n = in_window.len();
    let lost = in_window.iter().filter(|(_, r, _)| r.is_none()).count();
    if n > 0 {
        f.values.push(("loss_pct", 100.0 * lost as f64 / n as f64));
    } else {
        f.nulls.push(("loss_pct", "no probe was sent in the measured window".into()));
    }
    f.values.push(("probes", n as f64));
    f.values.push(("unsendable", in_window.iter().filter(|(_, _, u)| *u).count() as f64));
    f.series = TimeSeries {
        unit: "ms".into(),
        t_ms: in_window.iter().map(|(t, _, _)| (t - t0) as f64 / 1e6).collect(),
        values: in_window.iter().map(|(_, r, _)| r.map(|x| x as f64 / 1e6)).collect(),
    };
    f
}

/// The probes' mean time in the driver's ring (the driver's TX timestamp to the
/// consumer taking the request) and in the consumer (from there to the echo reply), ns,
/// over the answered probes sent in [t0, t1). On a tap the far end is our reader, which
/// records each echo request it answers (`EchoSeen`); over veth the far end's kernel
/// answers, and its tracepoints tell (`probe_trace`).
fn probe_far_end_waits(j: &Joined, driver: Driver, t0: u64, t1: u64) -> std::result::Result<(f64, f64), String> {
    let Some(Some(p)) = j.probes.first() else { return Err("the prober failed (see the run's notes)".into()) };
    if driver == Driver::Veth {
        return veth_far_end_waits(p, j.far_end.as_ref(), t0, t1);
    }
    let Some(tap) = &j.tap else { return Err("the tap reader failed (see the run's notes)".into()) };
    let Some(id) = p.icmp_id else {
        return Err("not measurable on the kernel: the tap reader records ICMP echo requests, not UDP probes".into());
    };
    let read: BTreeMap<u64, &load::EchoSeen> = tap.echoes.iter().filter(|e| e.id == id).map(|e| (e.data_head, e)).collect();
    let (mut ring, mut consumer, mut n) = (0.0, 0.0, 0u64);
    for (i, s) in p.samples.iter().enumerate() {
        let sent = p.start_mono_ns + s.t_send_ns;
        let (Some(wait_qdisc), Some(_), true) = (s.wait_qdisc_ns, s.rtt_ns, (t0..t1).contains(&sent)) else { continue };
        let Some(e) = read.get(&(i as u64)) else { continue };
        ring += e.read_ns.saturating_sub(sent + wait_qdisc) as f64;
        consumer += e.reply_ns.saturating_sub(e.read_ns) as f64;
        n += 1;
    }
    if n == 0 {
        return Err("no answered probe was both stamped by the driver and read by the tap reader".into());
    }
    Ok((ring / n as f64, consumer / n as f64))
}

/// `probe_far_end_waits()` over veth, from the far end's tracepoint events.
fn veth_far_end_waits(
    p: &ProbeResult,
    far_end: Option<&std::result::Result<Vec<FarEndEvent>, String>>,
    t0: u64,
    t1: u64,
) -> std::result::Result<(f64, f64), String> {
    let events = match far_end {
        None => {
            return Err("not measured: the far end's kernel answers the echo; --probe-trace traces it (at a cost to the consumer)".into())
        }
        Some(Err(e)) => return Err(format!("not measured: the far end's tracepoints are unavailable ({e})")),
        Some(Ok(ev)) => ev,
    };
    // Every answered, stamped probe takes part in the matching, in send order; only
    // those sent in the window count.
    let answered: Vec<(u64, StampedProbe)> = p
        .samples
        .iter()
        .filter_map(|s| {
            let sent = p.start_mono_ns + s.t_send_ns;
            Some((sent, StampedProbe { driver_ns: sent + s.wait_qdisc_ns?, reply_ns: sent + s.rtt_ns? }))
        })
        .collect();
    let stamped: Vec<StampedProbe> = answered.iter().map(|(_, s)| *s).collect();
    let Some(far) = match_probes(&stamped, events) else {
        return Err(format!(
            "not measured: {} far-end events did not match the {} answered probes (another packet of the probes' length?)",
            events.len(),
            stamped.len()
        ));
    };
    let (mut ring, mut consumer, mut n) = (0.0, 0.0, 0u64);
    for ((sent, s), f) in answered.iter().zip(&far) {
        let (Some((consumed, replied)), true) = (f, (t0..t1).contains(sent)) else { continue };
        ring += consumed.saturating_sub(s.driver_ns) as f64;
        consumer += replied.saturating_sub(*consumed) as f64;
        n += 1;
    }
    if n == 0 {
        return Err("not measured: no answered probe in the window matched the far end's events".into());
    }
    Ok((ring / n as f64, consumer / n as f64))
}

fn join_by<T>(h: JoinHandle<io::Result<T>>, deadline: Instant, what: &str, errors: &mut Vec<String>) -> Option<T> {
    while !h.is_finished() {
        if Instant::now() >= deadline {
            errors.push(format!("the {what} thread did not stop in time (its namespace is freed when it ends)"));
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    match h.join() {
        Ok(Ok(v)) => Some(v),
        Ok(Err(e)) => {
            errors.push(format!("{what}: {e}"));
            None
        }
        Err(_) => {
            errors.push(format!("the {what} thread panicked"));
            None
        }
    }
}

impl Tools {
    /// Stops everything and waits (bounded) for the threads.
    fn stop_and_join(&mut self, stop: &AtomicBool) -> Joined {
        stop.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + PROBE_TIMEOUT + Duration::from_secs(5);
        let mut j = Joined::default();
        for (i, h) in self.floods.drain(..) {
            if let Some(s) = join_by(h, deadline, "flood", &mut j.errors) {
                j.floods.push((i, s));
            }
        }
        for (i, h) in self.sinks.drain(..) {
            if let Some(s) = join_by(h, deadline, "sink", &mut j.errors) {
                j.sinks.push((i, s));
            }
        }
        for h in self.probers.drain(..) {
            j.probes.push(join_by(h, deadline, "prober", &mut j.errors));
        }
        if let Some(h) = self.tap.take() {
            j.tap = join_by(h, deadline, "tap reader", &mut j.errors);
        }
        let irtt: Vec<_> = self.irtt.drain(..).collect();
        let clients: Vec<_> = irtt.into_iter().map(|(c, s)| (join_by(c, deadline, "irtt client", &mut j.errors), s)).collect();
        self.irtt_stop.store(true, Ordering::SeqCst);
        for (c, s) in clients {
            let s = match s {
                Some(s) => join_by(s, deadline, "irtt server", &mut j.errors),
                // The tap's reader is the server: it kept the records (joined above).
                None => j.tap.as_ref().map(|t| t.irtt.clone()),
            };
            j.irtt.push(c.zip(s));
        }
        for r in self.tcp.drain(..) {
            let what = format!("TCP sender of traffic.{}", r.index);
            let s = r.sender.and_then(|h| join_by(h, deadline, &what, &mut j.errors));
            let what = format!("TCP receiver of traffic.{}", r.index);
            let rx = join_by(r.receiver, deadline, &what, &mut j.errors);
            if let Some(s) = &s {
                j.errors.extend(s.errors.iter().map(|e| format!("TCP sender of traffic.{}: {e}", r.index)));
            }
            j.tcp.entries.push((r.index, s, rx));
        }
        j
    }
}

/// Stops the tools when dropped (an early return or a panic still ends every thread
/// before the namespaces go).
struct StopGuard {
    stop: Arc<AtomicBool>,
    tools: Tools,
}

impl Drop for StopGuard {
    fn drop(&mut self) {
        let _ = self.tools.stop_and_join(&self.stop);
    }
}

/// How long a qdisc may hold packets without sending any before the run is declared stuck.
pub const STALL_AFTER: Duration = Duration::from_secs(2);

/// A TX queue that stopped for good (seen on 6.18 with veth multiqueue: see the message).
fn stall_error(scn: &Scenario, qlen: u64, held: Duration) -> KernelError {
    let mut m = format!(
        "the TX queue stalled: the qdisc held {qlen} packets and sent none for {:.1} s",
        held.as_secs_f64()
    );
    if scn.device.driver == Driver::Veth && scn.device.tx_queues > 1 && scn.device.xps_txq != Some(0) {
        m.push_str(
            ". With several TX queues, veth's ring backpressure (>= 6.16) wakes a stopped queue from veth_poll() \
             through the peer's rq->xdp_rxq.queue_index, which only XDP registers: in GRO mode it is 0 for every \
             RX queue, so a stopped TX queue other than 0 is never woken on this kernel. Use device.xps_txq = 0 or \
             device.tx_queues = 1",
        );
    }
    KernelError::Unavailable(m)
}

fn interrupted() -> Option<KernelError> {
    signals::received().map(|s| {
        KernelError::Interrupted {
            signal: s,
            message: format!("interrupted by {}; everything darkbuf created was removed", signals::name(s)),
        }
    })
}

/// Flood packets-per-second for a scenario rate (bit rates count L2 frames, as the simulator does).
pub fn rate_pps(rate: &Rate, payload: u32) -> Option<f64> {
    match rate {
        Rate::Max => None,
        Rate::Pps(p) => Some(*p),
        Rate::Bps(b) => Some(*b as f64 / (8.0 * darkbuf_scenario::udp_frame_len(payload) as f64)),
    }
}

/// The placement keys the kernel backend does not apply yet: it pins each flood, TCP
/// sender and the prober to their `cpu`, each TCP receiver to its `receiver_cpu` (or
/// the consumer's), the consumer to the last CPU, and writes the XPS map (`xps` or
/// `xps_txq`); veth has no interrupt to place. A `cpu` or `receiver_cpu` the machine
/// does not have is refused.
fn check_placement(scn: &Scenario) -> Result<()> {
    let d = &scn.device;
    let default_irq: Vec<u32> = (1..scn.machine.cpus).collect();
    let mut keys = Vec::new();
    if let darkbuf_scenario::XpsSpec::Cpus(cpus) = &d.xps {
        if let Some(c) = cpus.iter().find(|&&c| c as usize >= crate::online_cpus()) {
            return Err(KernelError::Unavailable(format!("device.xps names CPU {c}: this machine has {} CPUs", crate::online_cpus())));
        }
    }
    if d.irq_cpus != default_irq {
        keys.push("device.irq_cpus".to_string());
    }
    for (i, t) in scn.traffic.iter().enumerate() {
        let cpu = match t {
            Traffic::Udp(u) => u.cpu,
            Traffic::Ping(p) => p.cpu,
            Traffic::Tcp(t) => t.cpu,
            Traffic::Irtt(r) => r.cpu,
        };
        if cpu as usize >= crate::online_cpus() {
            return Err(KernelError::Unavailable(format!(
                "traffic.{i}.cpu = {cpu}: this machine has {} CPUs",
                crate::online_cpus()
            )));
        }
        if let Traffic::Udp(darkbuf_scenario::UdpFlood { txtime: Some(_), .. }) = t {
            return Err(KernelError::Unavailable(format!(
                "traffic.{i}.txtime: the kernel backend's flood does not stamp departure times (SO_TXTIME with SCM_TXTIME) yet; the simulator models it"
            )));
        }
        if let Traffic::Tcp(darkbuf_scenario::TcpFlow { receiver_cpu: Some(c), .. }) = t {
            if *c as usize >= crate::online_cpus() {
                return Err(KernelError::Unavailable(format!(
                    "traffic.{i}.receiver_cpu = {c}: this machine has {} CPUs",
                    crate::online_cpus()
                )));
            }
        }
    }
    if keys.is_empty() {
        return Ok(());
    }
    Err(KernelError::Unavailable(format!(
        "{}: the kernel backend does not apply this placement yet (it pins the consumer to the last CPU); run it \
         on the simulator, or remove the key",
        keys.join(", ")
    )))
}

/// The kernel backend's senders and receivers hold two descriptors per TCP flow (its
/// socket at each end) in this one process: refused (exit 3) before anything is set
/// up when `RLIMIT_NOFILE` would not let them all open, with what to raise it to.
fn check_open_files(scn: &Scenario) -> Result<()> {
    let flows = darkbuf_scenario::limits::tcp_flows(scn);
    // The flows' sockets, their listeners, and room for the floods, probes and files.
    let need = 2 * flows + 256;
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit() writes the struct it is given and nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 || lim.rlim_cur as u64 >= need {
        return Ok(());
    }
    Err(KernelError::Unavailable(format!(
        "{flows} TCP flows need about {need} open files (a socket at each end of each flow), and RLIMIT_NOFILE is {}: \
         raise it (ulimit -n {need}) or run the flows on the simulator",
        lim.rlim_cur
    )))
}

/// Runs `scn` once.
pub fn run_once(scn: &Scenario, seed: u64, opts: &RunOpts) -> Result<RunOutput> {
    signals::install();
    check_placement(scn)?;
    check_open_files(scn)?;
    let kv = KernelVersion::running();
    if let Some(e) = interrupted() {
        return Err(e);
    }
    let t_start = Instant::now();
    let seq = RUN_SEQ.fetch_add(1, Ordering::SeqCst);
    let names = Names::for_run(seq);
    let floods: Vec<(usize, &darkbuf_scenario::UdpFlood)> = scn
        .traffic
        .iter()
        .enumerate()
        .filter_map(|(i, t)| match t {
            Traffic::Udp(u) => Some((i, u)),
            _ => None,
        })
        .collect();
    let pings: Vec<&darkbuf_scenario::Ping> = scn
        .traffic
        .iter()
        .filter_map(|t| match t {
            Traffic::Ping(p) => Some(p),
            _ => None,
        })
        .collect();
    let ports: Vec<u16> = (0..floods.len()).map(|k| FLOOD_PORT_BASE + k as u16).collect();
    let o = Options::for_machine(opts.rule_scope, ports.clone());
    let mut notes = Vec::new();
    if crate::online_cpus() < 2 {
        notes.push("one CPU: producer and consumer share it".into());
    }

    let mut topo = Topology::create(names.clone(), scn.device.driver)?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut guard = StopGuard { stop: stop.clone(), tools: Tools::default() };
    let warmup = Duration::from_nanos(scn.warmup_ns);
    let duration = Duration::from_nanos(scn.duration_ns);
    let total = warmup + duration;
    // Tools that wait for the stop flag get `total + MAX_LOAD_TAIL` as their bound; the
    // load itself runs for `run_for` (below), past snapshot B.
    let tool_bound = total + MAX_LOAD_TAIL;
    let app_cost = Duration::from_nanos(scn.consumer.app_cost_ns);

    // Devices, and the consumer side.
    let (dst, tx_ns, tx_dev) = match scn.device.driver {
        Driver::Veth => {
            topo.setup_veth(scn, &o, kv)?;
            for (k, (i, _)) in floods.iter().enumerate() {
                let spec = SinkSpec {
                    netns: names.ns_rx.clone(),
                    bind: topo::VETH_RX_ADDR,
                    port: ports[k],
                    duration: tool_bound + Duration::from_secs(1),
                    app_cost,
                };
                let (port, h) = load::spawn_sink_bound(spec, Some(o.consumer_cpu), stop.clone());
                if port.is_none() {
                    let e = h.join().ok().and_then(|r| r.err()).map_or("unknown error".into(), |e| e.to_string());
                    return Err(KernelError::Internal(format!("starting the sink: {e}")));
                }
                guard.tools.sinks.push((*i, h));
            }
            (topo::VETH_RX_ADDR, names.ns_tx.clone(), names.dev_tx.clone())
        }
        Driver::Tun => {
            let spec = TapReaderSpec {
                netns: names.ns_tx.clone(),
                tap_name: names.tap.clone(),
                app_cost,
                echo_icmp: true,
                irtt_port: scn.traffic.iter().any(|t| matches!(t, Traffic::Irtt(_))).then_some(TAP_IRTT_PORT),
                duration: tool_bound + Duration::from_secs(1),
            };
            let reader = load::create_tap_reader_with(spec, load::TapOpts { cpu: Some(o.consumer_cpu), persist: false }, stop.clone())
                .map_err(|e| KernelError::Unavailable(format!("creating the tap (/dev/net/tun): {e}")))?;
            topo.configure_tap(scn, kv)?;
            guard.tools.tap = Some(reader.start());
            (topo::TAP_PEER_ADDR, names.ns_tx.clone(), names.tap.clone())
        }
        _ => unreachable!("preflight refuses every driver but veth and tun"),
    };
    notes.append(&mut topo.report.notes);
    let t_devices = Instant::now();
    // NAPI poll counting (veth only): its tracing instances are made while the rest is
    // set up (they take a tenth of a second or more in a TCG guest). A thread left
    // behind by an early return drops the counter, which removes them.
    let poll_counter_start = (scn.device.driver == Driver::Veth).then(|| {
        let (dev, tag) = (names.dev_rx.clone(), names.tag.clone());
        std::thread::spawn(move || NapiPollCounter::start(&dev, &tag, topo::VETH_NAPI_WEIGHT))
    });
    if let Some(e) = interrupted() {
        return Err(e);
    }
    // TCP: the namespaces' sysctls, the sender's offloads, and the receivers (listening
    // before any sender connects). The sampling grid starts where the window will.
    apply_netns_settings(scn, opts, &topo)?;
    notes.extend(crate::tcp::notes(scn, KernelVersion::running()));
    let tcp_ep = crate::tcp::Endpoints {
        tx_ns: names.ns_tx.clone(),
        rx_ns: names.ns_rx.clone(),
        tx_addr: topo::VETH_TX_ADDR,
        rx_addr: topo::VETH_RX_ADDR,
        rx_cpu: o.consumer_cpu,
    };
    // The reader's batches are the topology's (started with the namespaces, and the
    // setup went through them); they answer once more before the load. A snapshot then
    // costs one exec (ethtool -S), where it took 13 and 1.7-4.3 s in a TCG guest.
    let reader = Reader::new(&topo, scn.device.driver, &tx_dev);
    reader.warm();
    let run_for = total + MAX_LOAD_TAIL;

    let has_tcp = !crate::tcp::entries(scn).is_empty();
    let load_t0 = load::mono_ns() + if has_tcp { 50_000_000 } else { 0 };
    let grid_t0 = load_t0 + warmup.as_nanos() as u64;
    // In the guard at once: an early return stops them too.
    guard.tools.tcp = crate::tcp::start_receivers(scn, &tcp_ep, tool_bound, grid_t0, &stop)?;

    // NAPI poll counting (veth only).
    let mut unavailable: BTreeMap<String, String> = BTreeMap::new();
    let poll_counter = match scn.device.driver {
        Driver::Veth => match poll_counter_start.map_or_else(
            || Err("not started".to_string()),
            |h| h.join().unwrap_or_else(|_| Err("the thread that set it up panicked".into())),
        ) {
            Ok(c) => Some(c),
            Err(e) => {
                for k in ["napi.polls", "napi.avg_work", "napi.full_budget_polls"] {
                    unavailable.insert(k.into(), format!("napi:napi_poll tracepoint unavailable: {e}"));
                }
                None
            }
        },
        Driver::Tun => None,
        _ => unreachable!("preflight refuses every driver but veth and tun"),
    };

    // Load.
    for (k, (i, u)) in floods.iter().enumerate() {
        let rate = rate_pps(&u.rate, u.size);
        let batch = match rate {
            None => 32,
            Some(r) => ((r / 1000.0) as usize).clamp(1, 32),
        };
        let max_packets = match rate {
            Some(r) => (r * run_for.as_secs_f64() * 1.2) as u64 + 1000,
            None => (5e6 * run_for.as_secs_f64()) as u64 + 1000,
        };
        let spec = FloodSpec {
            netns: tx_ns.clone(),
            dst,
            dst_port: ports[k],
            payload: u.size as usize,
            rate_pps: rate,
            flows: u.flows.max(1),
            sndbuf: Some((u.sndbuf / 2).min(i32::MAX as u64 / 2) as u32),
            priority: u.priority,
            tos: (u.dscp << 2) | (u.ecn & 3),
            max_packets,
            duration: run_for,
            batch,
            max_pacing_rate: u.max_pacing_rate.map(|b| b / 8),
        };
        // Pinned where the scenario puts the sending process (traffic.N.cpu, default 0).
        let _ = o.producer_cpu;
        guard.tools.floods.push((*i, load::spawn_flood_pinned(spec, Some(u.cpu as usize), stop.clone())));
    }
    // TCP senders: their clocks start with the other load's (start/stop are run times).
    if has_tcp {
        load::sleep_until_ns(load_t0);
    }
    crate::tcp::start_senders(scn, &tcp_ep, &mut guard.tools.tcp, run_for, grid_t0, &stop);
    let mut probe_trace: Option<std::result::Result<ProbeTrace, String>> = None;
    for (n, p) in pings.iter().enumerate() {
        let interval = Duration::from_nanos(p.interval_ns.max(1_000));
        let count = (run_for.as_nanos() / interval.as_nanos()).max(1) as u64;
        let spec = ProbeSpec {
            netns: tx_ns.clone(),
            dst,
            kind: ProbeKind::Icmp,
            interval,
            count,
            timeout: PROBE_TIMEOUT,
            payload: p.size as usize,
        };
        // Pinned to the ping's CPU, as the simulator's pinger is: which CPU the prober runs
        // on decides who wins a slot a full qdisc frees (docs/ping-loss-full-pfifo.md).
        let probe_opts = ProbeOpts { cpu: Some(p.cpu as usize), ..ProbeOpts::default() };
        // Over veth the far end's kernel answers: its tracepoints say when the first
        // pinger's requests left the ring and when the replies were sent (probe_trace.rs).
        if n == 0 && scn.device.driver == Driver::Veth && opts.probe_trace {
            let ip_len = 20 + 8 + (spec.payload as u32).max(16);
            probe_trace = Some(ProbeTrace::start(&names.dev_rx, &names.tag, ip_len, count));
            // The trace tells pinger 0's requests by their length: another pinger's of
            // the same length are strays among them.
            let same: Vec<String> = (1..pings.len()).filter(|&k| pings[k].size.max(16) == p.size.max(16)).map(|k| format!("ping.{k}")).collect();
            if !same.is_empty() {
                notes.push(format!(
                    "--probe-trace follows ping.0's requests by their length, and {} send the same length: give ping.0 a size of its own",
                    same.join(", ")
                ));
            }
        }
        guard.tools.probers.push(load::spawn_prober_with(spec, probe_opts, stop.clone()));
    }
    // irtt: a stamping server in the receiving namespace (over a tap, the tap's reader
    // answers) and a client where the scenario puts it, per entry; their start and stop
    // are run times, as the floods'.
    for r in scn.traffic.iter().filter_map(|t| if let Traffic::Irtt(r) = t { Some(r) } else { None }) {
        let tos = r.dscp << 2;
        let (port, sh) = if scn.device.driver == Driver::Tun {
            (TAP_IRTT_PORT, None)
        } else {
            let server = load::IrttServerSpec { netns: names.ns_rx.clone(), bind: dst, port: 0, tos, duration: tool_bound + PROBE_TIMEOUT * 2 };
            let (port, sh) = load::spawn_irtt_server(server, Some(o.consumer_cpu), guard.tools.irtt_stop.clone());
            let Some(port) = port else {
                let e = sh.join().ok().and_then(|r| r.err()).map_or("unknown error".into(), |e| e.to_string());
                return Err(KernelError::Internal(format!("the irtt server: {e}")));
            };
            (port, Some(sh))
        };
        let client = load::IrttClientSpec {
            netns: tx_ns.clone(),
            dst,
            port,
            interval: Duration::from_nanos(r.interval_ns),
            payload: (r.length.max(darkbuf_scenario::IRTT_MIN_LENGTH)) as usize,
            tos,
            start_mono_ns: load_t0 + r.start_ns,
            stop_mono_ns: load_t0 + r.stop_ns.unwrap_or(run_for.as_nanos() as u64).min(run_for.as_nanos() as u64),
            timeout: PROBE_TIMEOUT,
        };
        let ch = load::spawn_irtt_client(client, Some(r.cpu as usize), stop.clone());
        guard.tools.irtt.push((ch, sh));
    }

    // Warmup, then the measured window.
    let t_setup = Instant::now();
    if !signals::sleep_unless_signalled(warmup, &stop) {
        return Err(interrupted().unwrap_or_else(|| KernelError::Internal("stopped during warmup".into())));
    }
    let a = reader.snapshot(poll_counter.as_ref(), false);
    let t_a = a.at.unwrap_or_else(Instant::now);
    let interval = if scn.sample_interval_ns > 0 { Duration::from_nanos(scn.sample_interval_ns) } else { DEFAULT_SAMPLE };
    let bql = topo.report.bql_present;
    let mut samples: Vec<Sample> = Vec::new();
    let end = t_a + duration;
    // A queue that holds packets but sends none for STALL_AFTER is stuck.
    let mut progress = (t_a, a.qdisc.as_ref().map(|q| q.packets));
    let mut next = t_a + interval.min(duration);
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        let wait = next.min(end).saturating_duration_since(now);
        if !signals::sleep_unless_signalled(wait, &stop) {
            return Err(interrupted().unwrap_or_else(|| KernelError::Internal("stopped".into())));
        }
        if Instant::now() >= end {
            break;
        }
        let mut s = reader.sample(bql, scn.device.tx_queues);
        s.t_ms = t_a.elapsed().as_secs_f64() * 1e3;
        if s.sent != progress.1 || s.qlen == Some(0) {
            progress = (Instant::now(), s.sent);
        } else if progress.0.elapsed() >= STALL_AFTER && s.qlen.is_some() {
            return Err(stall_error(scn, s.qlen.unwrap_or(0), progress.0.elapsed()));
        }
        samples.push(s);
        next += interval;
    }
    let t_window = Instant::now();
    let b = reader.snapshot(poll_counter.as_ref(), true);
    let t_b = Instant::now();
    let stalled = counters::stalled_qdiscs(&a.qdiscs, &b.qdiscs);
    if !stalled.is_empty() && scn.qdisc.kind != "noqueue" {
        let held = b.at.zip(a.at).map_or(duration, |(y, x)| y.saturating_duration_since(x));
        let qlen = b.qdiscs.iter().filter(|(h, _)| stalled.contains(h)).map(|(_, q)| q.qlen).max().unwrap_or(0);
        return Err(stall_error(scn, qlen, held));
    }
    let others = crate::names::other_active_runs();
    if !others.is_empty() {
        notes.push(another_run_note(&others, "during this run"));
    }
    // The tracing instances go while the tools stop.
    let counter_gone = std::thread::spawn(move || drop(poll_counter));
    let mut joined = guard.tools.stop_and_join(&stop);
    joined.far_end = probe_trace.map(|t| t.and_then(ProbeTrace::finish));
    let _ = counter_gone.join();
    for e in &joined.errors {
        notes.push(e.clone());
    }
    let t_join = Instant::now();
    let teardown_errors = topo.teardown();
    for e in teardown_errors {
        notes.push(format!("teardown: {e}"));
    }
    if std::env::var_os(TIMING_ENV).is_some() {
        let s = |a: Instant, b: Instant| b.saturating_duration_since(a).as_secs_f64();
        notes.push(format!(
            "timing: setup {:.2} s (namespaces and devices {:.2} s), warmup and window {:.2} s, snapshot B {:.2} s, stopping the load and tools {:.2} s, teardown {:.2} s",
            s(t_start, t_setup),
            s(t_start, t_devices),
            s(t_setup, t_window),
            s(t_window, t_b),
            s(t_b, t_join),
            s(t_join, Instant::now())
        ));
    }
    if let Some(e) = interrupted() {
        return Err(e);
    }

    let mut out = metrics(scn, seed, &a, &b, &samples, &joined, &topo.report, bql, &mut unavailable, &mut notes);
    crate::tcp::metrics(&joined.tcp, grid_t0, scn.duration_ns, &mut out.record.metrics, &mut out.record.timeseries, &mut unavailable);
    out.unavailable = unavailable;
    out.notes = notes;
    Ok(out)
}

/// The per-namespace sysctls (TCP's buffers and ECN, then `opts.netns_sysctls` in both
/// namespaces) and, with `opts.sender_tso`, TSO/GSO back on at the sender.
fn apply_netns_settings(scn: &Scenario, opts: &RunOpts, topo: &Topology) -> Result<()> {
    let names = &topo.names;
    if scn.device.driver != Driver::Veth {
        return Ok(());
    }
    let mut all = crate::tcp::sysctls(scn);
    for (k, v) in &opts.netns_sysctls {
        all.push((true, k.clone(), v.clone()));
        all.push((false, k.clone(), v.clone()));
    }
    // Written by the namespaces' threads (no exec: an exec is a fifth of a second in an
    // emulated guest).
    for (ns, sender) in [(&names.ns_tx, true), (&names.ns_rx, false)] {
        let files: Vec<(String, String)> =
            all.iter().filter(|(s, _, _)| *s == sender).map(|(_, k, v)| (format!("/proc/sys/{}", k.replace('.', "/")), v.clone())).collect();
        if files.is_empty() {
            continue;
        }
        topo.ns_thread(ns)?
            .write_files(&files)
            .map_err(|e| KernelError::Unavailable(format!("a sysctl in the run's namespace: {}", e.message())))?;
    }
    if opts.sender_tso {
        topo.ns_thread(&names.ns_tx)?
            .must("ethtool", &["-K", &names.dev_tx, "tso", "on", "gso", "on"])
            .map_err(|e| KernelError::Unavailable(format!("TSO on at the sender: {}", e.message())))?;
    }
    Ok(())
}

/// Reads counters of one run's devices: through the namespaces' threads and one `tc` and
/// `ip` batch per namespace kept open for the run ([`crate::session`]), so a snapshot
/// costs two execs (a `tc -s -batch` of the text printouts, `ethtool -S`) and a sample
/// none. A batch that fails is given up for a plain exec of the same command.
struct Reader {
    names: Names,
    driver: Driver,
    tx_dev: String,
    napi_pids: Vec<u32>,
    tx_thread: Option<Arc<NsThread>>,
    rx_thread: Option<Arc<NsThread>>,
    tc_tx: Option<Arc<Batch>>,
    ip_tx: Option<Arc<Batch>>,
    ip_rx: Option<Arc<Batch>>,
}

impl Reader {
    fn new(topo: &Topology, driver: Driver, tx_dev: &str) -> Reader {
        let n = &topo.names;
        let veth = driver == Driver::Veth;
        Reader {
            names: n.clone(),
            driver,
            tx_dev: tx_dev.to_string(),
            napi_pids: topo.report.napi_pids.clone(),
            tx_thread: topo.tx_thread.clone(),
            rx_thread: topo.rx_thread.clone(),
            tc_tx: topo.tc_tx.clone(),
            ip_tx: topo.ip_tx.clone(),
            ip_rx: if veth { topo.ip_rx.clone() } else { None },
        }
    }

    /// One query of each batch, thrown away.
    fn warm(&self) {
        let (n, dev) = (&self.names, &self.tx_dev);
        if let Some(b) = &self.tc_tx {
            let _ = b.query_after_text(&format!("class show dev {dev}\nqdisc show dev {dev}"));
        }
        if let Some(b) = &self.ip_tx {
            let _ = b.query(&format!("link show dev {dev}"));
        }
        if let Some(b) = &self.ip_rx {
            let _ = b.query(&format!("link show dev {}", n.dev_rx));
        }
    }

    /// The helpers' pids: their CPU time is the run's own, not another process's.
    fn helper_pids(&self) -> Vec<u32> {
        // (The namespaces' threads are this process's own.)
        [&self.tc_tx, &self.ip_tx, &self.ip_rx].into_iter().flatten().filter_map(|b| b.pid()).collect()
    }

    /// `prog -n NS -s -j ARGS` through the batch, or with one exec when it has failed.
    fn json(batch: &Option<Arc<Batch>>, prog: &str, ns: &str, args: &str) -> Option<String> {
        if let Some(out) = batch.as_ref().and_then(|b| b.query(args)) {
            return Some(out);
        }
        let mut v = vec!["-n", ns, "-s", "-j"];
        v.extend(args.split_whitespace());
        cmd::run(prog, &v).ok().filter(|o| o.ok()).map(|o| o.stdout)
    }

    /// A file of the namespace's /proc/net, read by its thread.
    fn proc_net(sh: &Option<Arc<NsThread>>, file: &str) -> Option<String> {
        sh.as_ref()?.read_proc_net(file)
    }

    /// The sender's side: every qdisc (JSON), its link, UDP and TcpExt counters, and
    /// the classes' printout.
    fn snapshot_tx(&self, s: &mut Snapshot) {
        let (n, dev) = (&self.names, &self.tx_dev);
        let t_tx = Instant::now();
        // The classes (text: tc has no JSON for them) and the qdiscs (JSON) in one query.
        let (class_text, tc_json) = match self.tc_tx.as_ref().and_then(|b| b.query_after_text(&format!("class show dev {dev}\nqdisc show dev {dev}"))) {
            Some((c, q)) => (Some(c), Some(q)),
            None => {
                let c = cmd::run("tc", &["-n", &n.ns_tx, "-s", "class", "show", "dev", dev]).ok().filter(|o| o.ok()).map(|o| o.stdout);
                (c, Self::json(&None, "tc", &n.ns_tx, &format!("qdisc show dev {dev}")))
            }
        };
        let link = Self::json(&self.ip_tx, "ip", &n.ns_tx, &format!("link show dev {dev}"));
        let snmp = Self::proc_net(&self.tx_thread, "snmp");
        let netstat = Self::proc_net(&self.tx_thread, "netstat");
        s.tx_at = Some(t_tx + t_tx.elapsed() / 2);
        s.xstats = tc_json.as_deref().map(crate::xstats::parse_qdiscs).unwrap_or_default();
        s.htb_classes = class_text.as_deref().map(crate::xstats::parse_htb_classes).unwrap_or_default();
        s.qdisc = tc_json.as_deref().and_then(counters::parse_tc_root);
        s.qdiscs = tc_json.as_deref().map(counters::parse_tc_all).unwrap_or_default();
        s.mq_children = tc_json.as_deref().map(counters::parse_tc_mq_children).unwrap_or_default();
        if !s.mq_children.is_empty() && s.qdisc.is_some() {
            // mq's own line and its children's are dumped moments apart: take the
            // root from the children, so that they describe one instant.
            s.qdisc = Some(counters::mq_root_of_children(&s.mq_children));
        }
        s.tx_link = link.as_deref().and_then(counters::parse_ip_link);
        s.snmp_tx = snmp.as_deref().map(|t| counters::parse_snmp(t, "Udp")).unwrap_or_default();
        s.tcpext_tx = netstat.as_deref().map(|t| counters::parse_snmp(t, "TcpExt")).unwrap_or_default();
    }

    /// The receiver's side (veth): the peer's ethtool stats, its link, UDP counters.
    fn snapshot_rx(&self, s: &mut Snapshot) {
        let n = &self.names;
        let t_rx = Instant::now();
        let ethtool = self.rx_thread.as_ref().and_then(|sh| sh.run("ethtool", &["-S", &n.dev_rx]).ok().filter(|o| o.ok()));
        let link = Self::json(&self.ip_rx, "ip", &n.ns_rx, &format!("link show dev {}", n.dev_rx));
        let snmp = Self::proc_net(&self.rx_thread, "snmp");
        s.rx_at = Some(t_rx + t_rx.elapsed() / 2);
        s.rx_ethtool = ethtool.map(|o| counters::parse_ethtool_stats(&o.stdout)).unwrap_or_default();
        s.rx_link = link.as_deref().and_then(counters::parse_ip_link);
        s.snmp_rx = snmp.as_deref().map(|t| counters::parse_snmp(t, "Udp")).unwrap_or_default();
    }

    /// Every counter at one instant; `printout`: with the qdiscs' `tc -s` printout.
    fn snapshot(&self, polls: Option<&NapiPollCounter>, printout: bool) -> Snapshot {
        let mut s = Snapshot { mono_ns: load::mono_ns(), ..Default::default() };
        let start = Instant::now();
        // Both namespaces at once: each side's counters are rated between its own reads.
        let mut rx = Snapshot::default();
        let mut qdisc_text = None;
        std::thread::scope(|sc| {
            if self.driver == Driver::Veth {
                sc.spawn(|| self.snapshot_rx(&mut rx));
            }
            // The qdiscs' printout for the report (snapshot B's only): an exec, beside
            // the reads.
            if printout {
                sc.spawn(|| {
                    let (ns, dev) = (&self.names.ns_tx, &self.tx_dev);
                    qdisc_text = cmd::run("tc", &["-n", ns, "-s", "qdisc", "show", "dev", dev]).ok().filter(|o| o.ok()).map(|o| o.stdout);
                });
            }
            self.snapshot_tx(&mut s);
        });
        s.tc_text = qdisc_text;
        if self.driver == Driver::Veth {
            s.rx_at = rx.rx_at;
            s.rx_ethtool = rx.rx_ethtool;
            s.rx_link = rx.rx_link;
            s.snmp_rx = rx.snmp_rx;
        }
        if !self.napi_pids.is_empty() {
            let mut total = 0;
            let mut any = false;
            for p in &self.napi_pids {
                if let Some(v) = std::fs::read_to_string(format!("/proc/{p}/schedstat")).ok().as_deref().and_then(counters::parse_schedstat) {
                    total += v;
                    any = true;
                }
            }
            s.napi_cpu_ns = any.then_some(total);
        }
        s.polls = polls.and_then(|p| p.counts().ok());
        s.cpu = std::fs::read_to_string("/proc/stat").map(|t| counters::parse_proc_stat(&t)).unwrap_or_default();
        s.squeeze = std::fs::read_to_string("/proc/net/softnet_stat").ok().map(|t| counters::parse_softnet_squeeze(&t));
        s.other_ticks = counters::other_processes_ticks_except(std::process::id(), &self.helper_pids());
        // The snapshot's instant: the middle of its reads.
        s.at = Some(start + start.elapsed() / 2);
        s.mono_ns += (start.elapsed() / 2).as_nanos() as u64;
        s
    }

    fn sample(&self, bql: bool, txqs: u32) -> Sample {
        let mut s = Sample::default();
        let tc = Self::json(&self.tc_tx, "tc", &self.names.ns_tx, &format!("qdisc show dev {}", self.tx_dev));
        let root = tc.as_deref().and_then(counters::parse_tc_root);
        s.qlen = root.as_ref().map(|q| q.qlen);
        s.sent = root.as_ref().map(|q| q.packets);
        if bql {
            // The namespace's thread reads sysfs: no exec per sample.
            let dev = self.tx_dev.clone();
            let read = move || (0..txqs).map(|q| crate::bql::read_queue(&dev, q)).collect::<Option<Vec<_>>>();
            s.bql = match &self.tx_thread {
                Some(t) => t.call(read).ok().flatten(),
                None => {
                    let cmds: Vec<String> = (0..txqs).map(|q| crate::bql::read_cmd(&self.tx_dev, q)).collect();
                    let r = cmd::sections_in(&self.names.ns_tx, &cmds).unwrap_or_default();
                    (0..txqs as usize).map(|i| r.get(i).cloned().flatten().as_deref().and_then(crate::bql::parse_queue)).collect()
                }
            };
        }
        s
    }
}

/// The qdiscs' xstats over the window, as the simulator reports them (`qdisc.<name>`,
/// summed over the device's qdiscs; see `darkbuf_model::qdisc::xstat`): for every xstat
/// the model of each configured kind has, the kernel's value, or `null` with why.
fn qdisc_xstat_metrics(
    scn: &Scenario,
    a: &Snapshot,
    b: &Snapshot,
    m: &mut BTreeMap<String, Option<f64>>,
    none: &mut impl FnMut(&mut BTreeMap<String, Option<f64>>, &str, &str),
) {
    use darkbuf_model::qdisc::xstat::{xstat_kind, xstat_metric, XstatKind};
    let mut sums: BTreeMap<String, f64> = BTreeMap::new();
    let mut means: BTreeMap<String, (f64, u32)> = BTreeMap::new();
    let mut missing: BTreeMap<String, String> = BTreeMap::new();
    for qb in &b.xstats {
        let qa = a.xstats.iter().find(|q| q.handle == qb.handle && q.kind == qb.kind);
        let mut values: Vec<(String, f64)> = qb.values.clone();
        if qb.kind == "htb" {
            values.extend(b.htb_classes.iter().cloned());
        }
        for name in model_xstat_names(scn, &qb.kind) {
            if !values.iter().any(|(n, _)| *n == name) {
                missing.entry(name.clone()).or_insert_with(|| crate::xstats::why_missing(&qb.kind, &name));
            }
        }
        for (name, vb) in values {
            let kind = xstat_kind(&name);
            let v = match kind {
                XstatKind::Counter => {
                    let va = if name.starts_with("class ") || matches!(name.as_str(), "lends" | "borrows" | "giants") {
                        a.htb_classes.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
                    } else {
                        qa.and_then(|q| q.get(&name))
                    };
                    (vb - va.unwrap_or(0.0)).max(0.0)
                }
                XstatKind::Gauge | XstatKind::Mean => vb,
            };
            let metric = format!("qdisc.{}", xstat_metric(&name));
            if kind == XstatKind::Mean {
                let e = means.entry(metric).or_default();
                *e = (e.0 + v, e.1 + 1);
            } else {
                *sums.entry(metric).or_default() += v;
            }
        }
    }
    for (k, (sum, n)) in means {
        sums.insert(k, sum / n as f64);
    }
    for (k, v) in sums {
        m.insert(k, Some(v));
    }
    for (name, why) in missing {
        let k = format!("qdisc.{}", xstat_metric(&name));
        if !m.contains_key(&k) {
            none(m, &k, &why);
        }
    }
}

/// The xstats the simulator's model of a `kind` qdisc reports (htb's per-class ones,
/// which depend on the classes, and cake's per-tin ones, which depend on the tins the
/// kernel dumps, are left out), for listing what the kernel did not print.
fn model_xstat_names(scn: &Scenario, kind: &str) -> Vec<String> {
    let dev = darkbuf_model::qdisc::DevInfo { tx_queue_len: scn.device.txqueuelen.max(1), ..Default::default() };
    match darkbuf_model::qdisc::build(kind, darkbuf_model::params::Params::new(Default::default()), &dev) {
        Ok(q) => {
            use darkbuf_model::qdisc::Qdisc;
            q.xstats().into_iter().map(|(n, _)| n.to_string()).filter(|n| !n.starts_with("class ") && !n.starts_with("tin")).collect()
        }
        Err(_) => Vec::new(),
    }
}

fn delta(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    Some(b?.saturating_sub(a?))
}

fn snmp_delta(a: &BTreeMap<String, u64>, b: &BTreeMap<String, u64>, k: &str) -> Option<u64> {
    delta(a.get(k).copied(), b.get(k).copied())
}

#[allow(clippy::too_many_arguments)]
fn metrics(
    scn: &Scenario,
    seed: u64,
    a: &Snapshot,
    b: &Snapshot,
    samples: &[Sample],
    j: &Joined,
    setup: &topo::SetupReport,
    bql: bool,
    why: &mut BTreeMap<String, String>,
    notes: &mut Vec<String>,
) -> RunOutput {
    let mut m: BTreeMap<String, Option<f64>> = BTreeMap::new();
    let mut none = |m: &mut BTreeMap<String, Option<f64>>, k: &str, reason: &str| {
        m.insert(k.into(), None);
        why.entry(k.into()).or_insert_with(|| reason.into());
    };
    let window = |x: Option<Instant>, y: Option<Instant>| match (x, y) {
        (Some(x), Some(y)) if y > x => (y - x).as_secs_f64(),
        _ => scn.duration_ns as f64 / 1e9,
    };
    let secs = window(a.at, b.at);
    let (secs_tx, secs_rx) = (window(a.tx_at.or(a.at), b.tx_at.or(b.at)), window(a.rx_at.or(a.at), b.rx_at.or(b.at)));
    let veth = scn.device.driver == Driver::Veth;
    let mut timeseries = BTreeMap::new();
    let mut histograms = BTreeMap::new();

    // Probes: `ping.*` are the first pinger's; with more than one, each has `ping.N.*`.
    let has_ping = !j.probes.is_empty();
    if !has_ping {
        for k in PING_KEYS[..6].iter().chain(["wait_qdisc_ms"].iter()) {
            none(&mut m, &format!("ping.{k}"), "the scenario has no ping traffic");
        }
    }
    let pingers = j.probes.len();
    for (n, p) in j.probes.iter().enumerate() {
        let prefixes = darkbuf_report::ping_prefixes(n, pingers);
        let Some(p) = p else {
            for prefix in &prefixes {
                for k in PING_KEYS[..6].iter().chain(["wait_qdisc_ms"].iter()) {
                    none(&mut m, &format!("{prefix}{k}"), "the prober failed (see the run's notes)");
                }
            }
            continue;
        };
        let f = ping_figures(p, scn.device.driver, a.mono_ns, b.mono_ns);
        for prefix in &prefixes {
            for (k, v) in &f.values {
                m.insert(format!("{prefix}{k}"), Some(*v));
            }
            for (k, reason) in &f.nulls {
                none(&mut m, &format!("{prefix}{k}"), reason);
            }
            timeseries.insert(format!("{prefix}rtt_ms"), f.series.clone());
        }
        if n == 0 {
            if let Some(h) = f.hist {
                histograms.insert("ping_rtt_us".to_string(), h);
            }
        }
    }
    if has_ping {
        // The far end's records follow the first pinger's probes.
        let far = probe_far_end_waits(j, scn.device.driver, a.mono_ns, b.mono_ns);
        let others = Err("measured for the first pinger's probes only (the far end's records follow one prober)".to_string());
        for n in 0..pingers {
            for prefix in darkbuf_report::ping_prefixes(n, pingers) {
                match if n == 0 { &far } else { &others } {
                    Ok((ring, consumer)) => {
                        m.insert(format!("{prefix}wait_ring_ms"), Some(ring / 1e6));
                        m.insert(format!("{prefix}wait_consumer_ms"), Some(consumer / 1e6));
                    }
                    Err(why) => {
                        for k in ["wait_ring_ms", "wait_consumer_ms"] {
                            none(&mut m, &format!("{prefix}{k}"), why);
                        }
                    }
                }
            }
        }
    } else {
        for k in ["ping.wait_ring_ms", "ping.wait_consumer_ms"] {
            none(&mut m, k, "the scenario has no ping traffic");
        }
    }

    // irtt: the shared report of the records (darkbuf-measure), so both backends define every
    // irtt.* figure the same way.
    if scn.traffic.iter().any(|t| matches!(t, Traffic::Irtt(_))) {
        let recs: Vec<Vec<darkbuf_measure::irtt::IrttRec>> =
            j.irtt.iter().map(|x| x.as_ref().map_or_else(Vec::new, |(c, s)| load::irtt_records(c, s))).collect();
        let (vals, reasons) = darkbuf_measure::irtt::irtt_report(recs.iter().map(|v| &v[..]), a.mono_ns, b.mono_ns);
        let failed: Vec<String> = (0..j.irtt.len()).filter(|&n| j.irtt[n].is_none()).map(|n| format!("irtt.{n}.")).collect();
        for (k, v) in vals {
            if failed.iter().any(|f| k.starts_with(f.as_str())) {
                none(&mut m, &k, "this irtt entry's client or server failed (see the run's notes)");
            } else if v.is_none() {
                none(&mut m, &k, reasons.get(&k).map_or("not measured", |r| r.as_str()));
            } else {
                m.insert(k, v);
            }
        }
        for (n, r) in recs.iter().enumerate() {
            timeseries.insert(format!("irtt.{n}.rtt_ms"), darkbuf_measure::irtt::irtt_rtt_series(r, a.mono_ns, b.mono_ns));
        }
    }

    // Consumer and sink.
    let rate = |d: Option<u64>| d.map(|x| x as f64 / secs_rx);
    if veth {
        let napi_pkts = delta(counters::sum_rx_queue(&a.rx_ethtool, "xdp_packets"), counters::sum_rx_queue(&b.rx_ethtool, "xdp_packets"));
        let rx_pkts = delta(a.rx_link.as_ref().map(|l| l.rx_packets), b.rx_link.as_ref().map(|l| l.rx_packets));
        let consumer = match napi_pkts {
            Some(p) if p > 0 => Some(p),
            _ => {
                if rx_pkts.unwrap_or(0) > 0 {
                    notes.push("veth did not use its NAPI path (rx_queue_*_xdp_packets did not grow): packets were not GRO-eligible, so there is no ring backpressure and no qdisc queue".into());
                }
                rx_pkts
            }
        };
        match rate(consumer) {
            Some(v) => {
                m.insert("consumer.pps".into(), Some(v));
            }
            None => none(&mut m, "consumer.pps", "the peer's packet counters could not be read"),
        }
        let udp_in = snmp_delta(&a.snmp_rx, &b.snmp_rx, "InDatagrams");
        match rate(udp_in) {
            Some(total) => {
                m.insert("sink.pps".into(), Some(total));
                let sum: u64 = j.sinks.iter().map(|(_, s)| s.received).sum();
                if j.sinks.len() > 1 && sum > 0 {
                    for (i, s) in &j.sinks {
                        m.insert(format!("sink.pps.{i}"), Some(total * s.received as f64 / sum as f64));
                    }
                } else if let Some((i, _)) = j.sinks.first() {
                    m.insert(format!("sink.pps.{i}"), Some(total));
                }
            }
            None => none(&mut m, "sink.pps", "/proc/net/snmp of the receiving namespace could not be read"),
        }
        for (k, c) in [("udp.rcvbuf_errors", "RcvbufErrors"), ("udp.in_errors", "InErrors")] {
            m.insert(k.into(), snmp_delta(&a.snmp_rx, &b.snmp_rx, c).map(|v| v as f64));
        }
        // ptr_ring full (rx_queue_N_drops) plus XDP drops where an XDP program runs.
        let ring = |s: &Snapshot| {
            let d = counters::sum_rx_queue(&s.rx_ethtool, "drops")?;
            Some(d + counters::sum_rx_queue(&s.rx_ethtool, "xdp_drops").unwrap_or(0))
        };
        let drops = delta(ring(a), ring(b));
        match drops {
            Some(d) => {
                m.insert("ring.drops".into(), Some(d as f64));
            }
            None => none(&mut m, "ring.drops", "ethtool -S of the veth peer has no rx_queue_N_drops"),
        }
        let consumer_pkts = consumer.unwrap_or(0);
        match (a.polls, b.polls) {
            (Some(pa), Some(pb)) => {
                let polls = pb.polls.saturating_sub(pa.polls);
                m.insert("napi.polls".into(), Some(polls as f64));
                m.insert("napi.full_budget_polls".into(), Some(pb.full_budget.saturating_sub(pa.full_budget) as f64));
                m.insert("napi.avg_work".into(), Some(if polls == 0 { 0.0 } else { consumer_pkts as f64 / polls as f64 }));
            }
            _ => {
                for k in ["napi.polls", "napi.avg_work", "napi.full_budget_polls"] {
                    none(&mut m, k, "the napi:napi_poll counts could not be read");
                }
            }
        }
        match delta(a.napi_cpu_ns, b.napi_cpu_ns) {
            Some(ns) => {
                m.insert("napi.thread_cpu_pct".into(), Some(100.0 * ns as f64 / (secs * 1e9)));
            }
            None => none(
                &mut m,
                "napi.thread_cpu_pct",
                if scn.device.napi == darkbuf_scenario::NapiMode::Threaded { "the NAPI kthread's schedstat could not be read" } else { "napi = \"softirq\": NAPI runs in softirq context, not in a thread of its own" },
            ),
        }
    } else {
        let tx = |s: &Snapshot| s.tx_link.as_ref().map(|l| l.tx_packets);
        let read = delta(tx(a), tx(b));
        match rate(read) {
            Some(v) => {
                m.insert("consumer.pps".into(), Some(v));
                let share = j.tap.as_ref().filter(|t| t.frames > 0).map_or(1.0, |t| t.flood_frames as f64 / t.frames as f64);
                m.insert("sink.pps".into(), Some(v * share));
            }
            None => {
                none(&mut m, "consumer.pps", "the tap's counters could not be read");
                none(&mut m, "sink.pps", "the tap's counters could not be read");
            }
        }
        let dropped = delta(a.tx_link.as_ref().map(|l| l.tx_dropped), b.tx_link.as_ref().map(|l| l.tx_dropped));
        m.insert("ring.drops".into(), dropped.map(|d| d as f64));
        for k in ["napi.polls", "napi.avg_work", "napi.full_budget_polls", "napi.thread_cpu_pct"] {
            none(&mut m, k, "a tap has no NAPI consumer: a user-space reader reads its ring");
        }
        for k in ["udp.rcvbuf_errors", "udp.in_errors"] {
            none(&mut m, k, "a tap's consumer is a user-space reader, not a UDP socket");
        }
    }
    none(&mut m, "ring.occupancy_avg", "the kernel does not expose a ptr_ring's fill level");

    // Sender.
    match snmp_delta(&a.snmp_tx, &b.snmp_tx, "OutDatagrams").map(|x| x as f64 / secs_tx) {
        Some(v) => {
            m.insert("flood.pps".into(), Some(v));
        }
        None => none(&mut m, "flood.pps", "/proc/net/snmp of the sending namespace could not be read"),
    }
    m.insert("udp.sndbuf_errors".into(), snmp_delta(&a.snmp_tx, &b.snmp_tx, "SndbufErrors").map(|v| v as f64));
    m.insert("flood.send_errors".into(), Some(j.floods.iter().map(|(_, f)| f.send_errors).sum::<u64>() as f64));
    if !crate::tcp::entries(scn).is_empty() {
        let counters: [(&str, &[&str]); 6] = [
            ("tcp.timeouts", &["TCPTimeouts"]),
            // tcp_newly_delivered(): packets delivered with an ECE-marked ACK.
            ("tcp.delivered_ce", &["TCPDeliveredCE"]),
            ("tcp.loss_probes", &["TCPLossProbes"]),
            ("tcp.loss_probe_recoveries", &["TCPLossProbeRecovery"]),
            ("tcp.undos", &["TCPFullUndo", "TCPDSACKUndo"]),
            ("tcp.backlog_coalesce", &["TCPBacklogCoalesce"]),
        ];
        for (k, cs) in counters {
            match cs.iter().map(|c| snmp_delta(&a.tcpext_tx, &b.tcpext_tx, c)).sum::<Option<u64>>() {
                Some(v) => _ = m.insert(k.into(), Some(v as f64)),
                None => none(&mut m, k, &format!("TcpExt {} of /proc/net/netstat in the sending namespace could not be read", cs.join(", "))),
            }
        }
        // tcp_add_backlog() counts only what it coalesces or drops, and tcp_release_cb()
        // nothing.
        none(&mut m, "tcp.backlog_acks", "the kernel counts no backlog enqueue (TcpExt has TCPBacklogCoalesce and TCPBacklogDrop only)");
        none(&mut m, "tcp.release_cb_work", "the kernel counts no work deferred to tcp_release_cb()");
    }
    let tx_dropped = delta(a.tx_link.as_ref().map(|l| l.tx_dropped), b.tx_link.as_ref().map(|l| l.tx_dropped));
    if veth {
        m.insert("dev.tx_dropped".into(), tx_dropped.map(|v| v as f64));
    }

    // Qdisc.
    let qkeys = ["qdisc.sent_pkts", "qdisc.drops", "qdisc.requeues", "qdisc.overlimits", "qdisc.backlog_avg_pkts"];
    if scn.qdisc.kind == "noqueue" {
        for k in qkeys {
            none(&mut m, k, "no qdisc: the device runs noqueue");
        }
        m.insert("dev.noqueue_drops".into(), tx_dropped.map(|v| v as f64));
    } else {
        match (&a.qdisc, &b.qdisc) {
            (Some(qa), Some(qb)) => {
                m.insert("qdisc.sent_pkts".into(), Some(qb.packets.saturating_sub(qa.packets) as f64));
                m.insert("qdisc.drops".into(), Some(qb.drops.saturating_sub(qa.drops) as f64));
                m.insert("qdisc.requeues".into(), Some(qb.requeues.saturating_sub(qa.requeues) as f64));
                m.insert("qdisc.overlimits".into(), Some(qb.overlimits.saturating_sub(qa.overlimits) as f64));
                let q: Vec<u64> = samples.iter().filter_map(|s| s.qlen).collect();
                let avg = if q.is_empty() { (qa.qlen + qb.qlen) as f64 / 2.0 } else { q.iter().sum::<u64>() as f64 / q.len() as f64 };
                m.insert("qdisc.backlog_avg_pkts".into(), Some(avg));
            }
            _ => {
                for k in qkeys {
                    none(&mut m, k, "tc -s -j qdisc could not be read");
                }
            }
        }
        m.insert("dev.noqueue_drops".into(), Some(0.0));
        qdisc_xstat_metrics(scn, a, b, &mut m, &mut none);
        // mq: each TX queue's own qdisc that saw traffic, as the simulator names them.
        for (txq, qb) in &b.mq_children {
            let qa = a.mq_children.iter().find(|(q, _)| q == txq).map(|(_, c)| c.clone()).unwrap_or_default();
            let (sent, drops) = (qb.packets.saturating_sub(qa.packets), qb.drops.saturating_sub(qa.drops));
            if sent > 0 || drops > 0 {
                m.insert(format!("qdisc.txq.{txq}.sent_pkts"), Some(sent as f64));
                m.insert(format!("qdisc.txq.{txq}.drops"), Some(drops as f64));
            }
        }
        if !b.mq_children.is_empty() && scn.traffic.iter().any(|t| matches!(t, Traffic::Tcp(_))) {
            const WHY: &str = "a socket's TX queue changes are seen only by tracing netdev_pick_tx() (the seed's bpftrace \
                               script), which darkbuf does not install; qdisc.txq.N.sent_pkts shows which queues carried the flows";
            for k in ["xps.queue_changes", "xps.queue_flips", "xps.queue_flips_ooo_okay"] {
                none(&mut m, k, WHY);
            }
        }
    }
    if scn.sample_interval_ns > 0 && !samples.is_empty() && scn.qdisc.kind != "noqueue" {
        timeseries.insert(
            "qdisc.backlog_pkts".to_string(),
            TimeSeries { unit: "pkts".into(), t_ms: samples.iter().map(|s| s.t_ms).collect(), values: samples.iter().map(|s| s.qlen.map(|v| v as f64)).collect() },
        );
    }

    // BQL: the device (largest limit, summed in-flight) and, with several queues, each one.
    let bkeys = ["bql.limit_avg", "bql.limit_last", "bql.inflight_avg", "bql.inflight_max", "bql.completions"];
    if bql {
        let per: Vec<(f64, &[crate::bql::BqlQueue])> = samples.iter().filter_map(|s| Some((s.t_ms, s.bql.as_deref()?))).collect();
        match crate::bql::metrics(&per, scn.sample_interval_ns > 0) {
            None => {
                for k in bkeys {
                    none(&mut m, k, "byte_queue_limits could not be sampled");
                }
            }
            Some((bm, bts)) => {
                m.extend(bm);
                timeseries.extend(bts);
                none(&mut m, "bql.completions", "the kernel does not count DQL completions");
                let queues = per.last().map_or(0, |(_, q)| q.len());
                for n in (0..queues).filter(|_| queues > 1) {
                    none(&mut m, &format!("bql.txq.{n}.completions"), "the kernel does not count DQL completions");
                }
            }
        }
    } else {
        let dev = if veth { "veth" } else { "tap" };
        let reason = format!("kernel {} has no BQL on {dev} (no queues/tx-N/byte_queue_limits)", crate::uname_release());
        for k in bkeys {
            none(&mut m, k, &reason);
        }
    }
    for k in ["txq.stack_xoff", "txq.drv_xoff"] {
        none(&mut m, k, "the kernel does not count TX queue stops; qdisc.requeues counts the driver's NETDEV_TX_BUSY returns");
    }

    // Global counters.
    if let (Some(x), Some(y)) = (a.squeeze, b.squeeze) {
        m.insert("softnet.time_squeeze".into(), Some(y.saturating_sub(x) as f64));
    }
    if a.cpu.len() == b.cpu.len() {
        for (i, ((ba, ta), (bb, tb))) in a.cpu.iter().zip(&b.cpu).enumerate() {
            let total = tb.saturating_sub(*ta);
            if total > 0 {
                m.insert(format!("cpu.{i}.busy_pct"), Some(100.0 * bb.saturating_sub(*ba) as f64 / total as f64));
            }
        }
    }
    // Other processes' CPU use: the measurement is only as clean as the machine.
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let other = 100.0 * b.other_ticks.saturating_sub(a.other_ticks) as f64 / hz / secs;
    m.insert("machine.other_cpu_pct".into(), Some(other));
    if other > 10.0 {
        notes.push(format!("other processes used {other:.0}% of a CPU during the measured window: rates and delays are disturbed"));
    }
    // One-way delays of the flood (whole run, warmup included).
    let mut owd: Vec<u64> = j.sinks.iter().flat_map(|(_, s)| s.owd_ns_samples.iter().copied()).collect();
    if let Some(t) = &j.tap {
        owd.extend(t.owd_ns_samples.iter().copied());
    }
    owd.sort_unstable();
    if !owd.is_empty() {
        // The mean is what the simulator reports too (sink.owd_avg_ms), so compare lines them up.
        let mean = owd.iter().map(|&v| v as f64).sum::<f64>() / owd.len() as f64;
        m.insert("sink.owd_avg_ms".into(), Some(mean / 1e6));
        m.insert("sink.owd_p50_ms".into(), darkbuf_measure::percentile(&owd, 50.0).map(|v| v / 1e6));
        m.insert("sink.owd_p99_ms".into(), darkbuf_measure::percentile(&owd, 99.0).map(|v| v / 1e6));
    }
    if let Some(r) = setup.rules {
        notes.push(format!("{} rules loaded with {}", scn.consumer.nrules, r.name()));
    }
    // Every null has a reason.
    let nulls: Vec<String> = m.iter().filter(|(_, v)| v.is_none()).map(|(k, _)| k.clone()).collect();
    for k in nulls {
        why.entry(k).or_insert_with(|| "could not be read".into());
    }
    // What tc printed at the end of the run, under the command a user would type (the
    // run's generated interface name is the only difference).
    let printouts = b.tc_text.iter().map(|t| (format!("tc -s qdisc show dev {}", setup.tx_dev), t.clone())).collect();
    RunOutput { record: RunRecord { seed, metrics: m, histograms, findings: Vec::new(), timeseries, printouts }, unavailable: BTreeMap::new(), notes: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(rate_pps(&Rate::Max, 64), None);
        assert_eq!(rate_pps(&Rate::Pps(50_000.0), 64), Some(50_000.0));
        // 1 Mbit/s of 106-byte frames (64 + 42) = 1e6 / 848 pps.
        assert_eq!(rate_pps(&Rate::Bps(1_000_000), 64), Some(1e6 / 848.0));
    }

    /// A TCP receiver is pinned to `receiver_cpu`: one the machine lacks is exit 3.
    #[test]
    fn receiver_cpu_must_exist() {
        let text = |cpu: u32| {
            format!("name = \"t\"\n[machine]\ncpus = 64\n[device]\ndriver = \"veth\"\n[[traffic]]\nkind = \"tcp\"\nreceiver = \"blocking\"\nreceiver_cpu = {cpu}\n")
        };
        let scn = |t: &str| darkbuf_scenario::load_str("t.toml", t, &[]).map_err(|d| format!("{d:?}")).unwrap();
        assert!(check_placement(&scn(&text(0))).is_ok());
        if crate::online_cpus() > 63 {
            return;
        }
        let e = check_placement(&scn(&text(63))).unwrap_err();
        assert_eq!(e.code(), 3);
        assert!(e.message().starts_with("traffic.0.receiver_cpu = 63: this machine has"), "{}", e.message());
    }
}
