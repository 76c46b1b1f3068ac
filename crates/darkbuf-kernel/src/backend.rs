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
//! - `ring.drops`: veth `rx_queue_N_drops` of the peer, plus the sender's `tx_dropped` on a
//!   kernel without the ring stop (before 6.16 `veth_xmit()` drops at a full ptr_ring);
//!   tap `tx_dropped`;
//! - `napi.thread_cpu_pct`: the NAPI kthreads' /proc/PID/schedstat;
//! - `udp.rcvbuf_errors`, `udp.sndbuf_errors`, `udp.in_errors`, `flood.pps`: /proc/net/snmp;
//! - `tcp.timeouts`, `tcp.spurious_rtos`, `tcp.loss_probes`, `tcp.loss_probe_recoveries`,
//!   `tcp.undos`, `tcp.backlog_coalesce`, `tcp.delivered_ce`: `TcpExt TCPTimeouts`,
//!   `TCPSpuriousRTOs`, `TCPLossProbes`, `TCPLossProbeRecovery`, `TCPFullUndo` +
//!   `TCPDSACKUndo` + `TCPLossUndo`, `TCPBacklogCoalesce`, `TCPDeliveredCE` of
//!   /proc/net/netstat in the sending namespace (`tcp.backlog_acks` and
//!   `tcp.release_cb_work` have no counter: null);
//! - `tcp.hystart_train_detect`, `tcp.hystart_train_cwnd`, `tcp.hystart_delay_detect`,
//!   `tcp.hystart_delay_cwnd`: `TcpExt TCPHystartTrainDetect`, `TCPHystartTrainCwnd`,
//!   `TCPHystartDelayDetect`, `TCPHystartDelayCwnd` of the sending namespace, over the
//!   whole run (read just before the senders start and at snapshot B);
//! - `softnet.time_squeeze`, `cpu.N.busy_pct`: global (/proc/net/softnet_stat, /proc/stat).

mod metrics;

use crate::cmd;
use crate::counters::{self, LinkCounters, QdiscCounters};
use crate::error::{KernelError, Result};
use crate::load::{self, FloodSpec, FloodStats, ProbeKind, ProbeOpts, ProbeResult, ProbeSpec, SinkSpec, SinkStats, TapReaderSpec, TapReaderStats};
use crate::names::Names;
use crate::probe_trace::{FarEndEvent, ProbeTrace};
use crate::rules::RuleScope;
use crate::session::{Batch, NsThread};
use crate::signals;
use crate::topo::{self, Options, Topology};
use crate::trace::{NapiPollCounter, PollCounts};
use crate::KernelVersion;
use darkbuf_model::units::Rate;
use darkbuf_report::{Environment, Results, RunRecord};
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
    let t0 = Instant::now();
    signals::install();
    let kv = KernelVersion::running();
    // An unset key whose default is another kernel generation's runs as this kernel has
    // it; the results' scenario is what ran.
    let (adjusted, default_note) = topo::kernel_defaults(scn, kv).unzip();
    let scn = adjusted.as_ref().unwrap_or(scn);
    topo::preflight(scn, kv)?;
    crate::tcp::preflight(scn)?;
    let mut records = Vec::new();
    let mut unavailable = BTreeMap::new();
    let t_preflight = Instant::now();
    let mut notes: Vec<String> = before_run();
    let t_before = Instant::now();
    notes.extend(default_note);
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
    let t_runs = Instant::now();
    let scenario = serde_json::to_value(scn).map_err(|e| KernelError::Internal(e.to_string()))?;
    let mut results = Results::from_runs(scenario, "kernel", environment(), records, unavailable);
    results.warnings.extend(warnings);
    if crate::timing::on() {
        let s = crate::timing::secs;
        notes.push(format!(
            "timing: preflight {:.2} s, leftovers of killed runs {:.2} s, runs {:.2} s, results {:.2} s",
            s(t0, t_preflight),
            s(t_preflight, t_before),
            s(t_before, t_runs),
            s(t_runs, Instant::now())
        ));
    }
    Ok((results, notes))
}

/// How the note about a concurrent darkbuf run begins (it also goes into the results'
/// warnings: the numbers are disturbed).
pub const ANOTHER_RUN: &str = "another darkbuf run is active";

/// Set (to anything) in the environment, each run adds a note with the wall time of its
/// phases: where a run's time goes beside its warmup and window (setup and teardown are
/// fork/exec-bound, and many times slower in an emulated guest).
pub const TIMING_ENV: &str = crate::timing::TIMING_ENV;

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
    // A --backend vm guest is a kernel booted for one command, whose agent runs its jobs
    // one at a time: no other darkbuf run, and none killed, can have been there. (The
    // scan reads every process and tracing instance: 0.7 s per point in a TCG guest.)
    if std::env::var_os(crate::names::VM_GUEST_ENV).is_some() {
        return notes;
    }
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

/// Everything read at one instant (no exec: a few milliseconds natively, about 0.1 s in a
/// TCG guest).
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
    /// Every qdisc's xstats, and htb's classes', by the simulator's names.
    xstats: Vec<crate::xstats::QdiscXstats>,
    htb_classes: Vec<(String, f64)>,
    /// Ingress shaping: the ifb's qdiscs, as the device's above.
    ifb: Option<Box<IfbSnapshot>>,
    tx_link: Option<LinkCounters>,
    rx_link: Option<LinkCounters>,
    /// Peer's `ethtool -S` (veth).
    rx_ethtool: BTreeMap<String, u64>,
    snmp_tx: BTreeMap<String, u64>,
    snmp_rx: BTreeMap<String, u64>,
    /// The sender's `TcpExt` counters (/proc/net/netstat).
    tcpext_tx: BTreeMap<String, u64>,
    /// Snapshot A only: the sender's `TcpExt` counters just before the TCP senders
    /// started, the base of the counters reported over the whole run (HyStart's: slow
    /// start ends in the warmup). `None`: unread. A namespace a sweep reuses keeps its
    /// counts, so the base is read, not assumed zero.
    tcpext_tx_load_start: Option<BTreeMap<String, u64>>,
    napi_cpu_ns: Option<u64>,
    polls: Option<PollCounts>,
    cpu: Vec<(u64, u64)>,
    squeeze: Option<u64>,
    /// CPU ticks of every other user-space process (load that is not ours).
    other_ticks: u64,
}

/// The ifb's root qdisc, xstats and htb classes (`tc -s qdisc|class show dev IFB`).
#[derive(Clone, Debug, Default)]
struct IfbSnapshot {
    qdisc: Option<QdiscCounters>,
    xstats: Vec<crate::xstats::QdiscXstats>,
    htb_classes: Vec<(String, f64)>,
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
    /// Per voip entry in scenario order: its directions. The receivers stop on
    /// `voip_stop` (and a drain), after the senders.
    voip: Vec<load::voip::VoipRunning>,
    voip_stop: Arc<AtomicBool>,
    /// Per rr entry in scenario order: its server and one client per connection.
    rr: Vec<(JoinHandle<io::Result<()>>, Vec<JoinHandle<io::Result<darkbuf_measure::rr::RrLog>>>)>,
    /// Per web entry: its receiver and sender pool.
    web: Vec<crate::web::Running>,
}

/// One direction of a voip entry once joined: its records per call, or why there are
/// none.
type VoipJoined = std::result::Result<Vec<Vec<darkbuf_measure::voip::VoipRec>>, &'static str>;

#[derive(Default)]
struct Joined {
    floods: Vec<(usize, FloodStats)>,
    sinks: Vec<(usize, SinkStats)>,
    /// Per ping entry: its prober's probes (None: it failed).
    probes: Vec<Option<ProbeResult>>,
    tap: Option<TapReaderStats>,
    /// Per irtt entry: its client's requests and its server's records (None: one failed).
    irtt: Vec<Option<(load::IrttClientResult, load::IrttServerStats)>>,
    /// Per voip entry: up and down.
    voip: Vec<[VoipJoined; 2]>,
    /// Per rr entry: its connections' logs (None: a client or the server failed).
    rr: Vec<Option<Vec<darkbuf_measure::rr::RrLog>>>,
    /// Per web entry: its senders' and receiver's records.
    web: Vec<crate::web::JoinedEntry>,
    /// The far end's tracepoint events for the probes (veth), or why there are none.
    far_end: Option<std::result::Result<Vec<FarEndEvent>, String>>,
    tcp: crate::tcp::Joined,
    errors: Vec<String>,
    /// `tc -s qdisc show dev DEV` as tc prints it, taken as the tools stopped (just
    /// after snapshot B): the report's printout.
    tc_printout: Option<String>,
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
    /// The voip senders, then (after `voip_stop` and their drain) the receivers.
    fn join_voip(&mut self, deadline: Instant, j: &mut Joined) {
        let running: Vec<_> = self.voip.drain(..).collect();
        let sent: Vec<_> = running
            .into_iter()
            .map(|r| [r.up, r.down].map(|d| d.map(|d| (join_by(d.sender, deadline, "voip sender", &mut j.errors), d.receiver))))
            .collect();
        self.voip_stop.store(true, Ordering::SeqCst);
        for dirs in sent {
            j.voip.push(dirs.map(|d| match d {
                None => Err("not sent"),
                Some((s, rh)) => match (s, join_by(rh, deadline, "voip receiver", &mut j.errors)) {
                    (Some(s), Some(r)) => Ok(load::voip::voip_records(&s, &r)),
                    _ => Err("this voip entry's sender or receiver failed (see the run's notes)"),
                },
            }));
        }
    }

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
        crate::timing::mark("join floods and sinks");
        for h in self.probers.drain(..) {
            j.probes.push(join_by(h, deadline, "prober", &mut j.errors));
        }
        crate::timing::mark("join probers");
        if let Some(h) = self.tap.take() {
            j.tap = join_by(h, deadline, "tap reader", &mut j.errors);
        }
        for (server, clients) in self.rr.drain(..) {
            let logs: Vec<_> = clients.into_iter().map(|c| join_by(c, deadline, "rr client", &mut j.errors)).collect();
            let server = join_by(server, deadline, "rr server", &mut j.errors);
            j.rr.push(server.and(logs.into_iter().collect::<Option<Vec<_>>>()));
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
        self.join_voip(deadline, &mut j);
        crate::timing::mark("join irtt rr voip");
        j.web = crate::web::join(std::mem::take(&mut self.web), deadline, &mut j.errors);
        crate::timing::mark("join web");
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
        crate::timing::mark("join tcp");
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
    if scn.device.driver() == Driver::Veth && scn.device.tx_queues > 1 && scn.device.xps_txq != Some(0) {
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
            Traffic::Voip(v) => v.cpu,
            Traffic::Rr(r) => r.cpu,
            Traffic::Web(w) => w.tcp.cpu,
        };
        if let (Traffic::Rr(_), Driver::Tun) = (t, scn.device.driver()) {
            return Err(KernelError::Unavailable(format!(
                "traffic.{i}: kind = \"rr\" over tun/tap: the far end is darkbuf's tap reader, which answers no netperf; use driver = \"veth\" (or the simulator)"
            )));
        }
        if let Traffic::Voip(v) = t {
            if d.driver() == Driver::Tun {
                return Err(KernelError::Unavailable(format!("traffic.{i}: kind = \"voip\" over a tap: the tap's reader answers ping and irtt only; use device.driver = \"veth\"")));
            }
            if (v.udp_payload() as usize) < load::voip::VOIP_MIN_PAYLOAD {
                return Err(KernelError::Unavailable(format!(
                    "traffic.{i}: the kernel backend's voice packets carry a {}-byte stamp; size = {} + 12 RTP bytes is shorter",
                    load::voip::VOIP_MIN_PAYLOAD,
                    v.size
                )));
            }
        }
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
/// socket at each end) and one per flood flow in this one process: refused (exit 3)
/// before anything is set up when a flood has more flows than one address has source
/// ports, or when `RLIMIT_NOFILE` would not let them all open, with what to raise it to.
fn check_open_files(scn: &Scenario) -> Result<()> {
    use darkbuf_scenario::limits::{thousands, MAX_KERNEL_FLOOD_FLOWS};
    let mut flood_socks = 0u64;
    for (i, t) in scn.traffic.iter().enumerate() {
        if let Traffic::Udp(u) = t {
            if u.flows > MAX_KERNEL_FLOOD_FLOWS {
                return Err(KernelError::Unavailable(format!(
                    "traffic.{i}: {} flows: the kernel backend's flood opens a UDP socket per flow, each on a source port \
                     of one address, so at most {}; run it on the simulator, or lower flows",
                    thousands(u.flows as u64),
                    thousands(MAX_KERNEL_FLOOD_FLOWS as u64)
                )));
            }
            flood_socks += u.flows as u64;
        }
    }
    // A web entry holds at most one connection per sender thread open at each end.
    let web = (crate::web::entries(scn).len() * crate::load::web::WEB_POOL_THREADS) as u64;
    let flows = darkbuf_scenario::limits::tcp_flows(scn) + web;
    // The flows' sockets, their listeners, the floods' sockets, and room for the
    // probes and files.
    let need = 2 * flows + flood_socks + 256;
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit() writes the struct it is given and nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 || lim.rlim_cur as u64 >= need {
        return Ok(());
    }
    Err(KernelError::Unavailable(format!(
        "{flows} TCP flows and {flood_socks} flood flows need about {need} open files (a socket at each end of each \
         TCP flow, one per flood flow), and RLIMIT_NOFILE is {}: raise it (ulimit -n {need}) or run the flows on the \
         simulator",
        lim.rlim_cur
    )))
}

/// What every load tool of a run shares: the sending namespace, the far end's address,
/// how long the load may run, and the stop flag.
struct LoadCtx<'a> {
    netns: String,
    dst: std::net::Ipv4Addr,
    run_for: Duration,
    stop: &'a Arc<AtomicBool>,
}

/// The UDP floods, each pinned where the scenario puts its sending process.
fn start_floods(floods: &[(usize, &darkbuf_scenario::UdpFlood)], ports: &[u16], l: &LoadCtx<'_>, tools: &mut Tools) {
    let (run_for, stop) = (l.run_for, l.stop);
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
            netns: l.netns.clone(),
            dst: l.dst,
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
        tools.floods.push((*i, load::spawn_flood_pinned(spec, Some(u.cpu as usize), stop.clone())));
    }
}

/// One prober per ping entry, pinned to its CPU; over veth with `--probe-trace`, the far
/// end's tracepoints for the first one's probes.
fn start_probers(
    scn: &Scenario,
    opts: &RunOpts,
    pings: &[&darkbuf_scenario::Ping],
    names: &Names,
    l: &LoadCtx<'_>,
    tools: &mut Tools,
    notes: &mut Vec<String>,
) -> Option<std::result::Result<ProbeTrace, String>> {
    let (run_for, stop, dst) = (l.run_for, l.stop, l.dst);
    let mut probe_trace: Option<std::result::Result<ProbeTrace, String>> = None;
    for (n, p) in pings.iter().enumerate() {
        let interval = Duration::from_nanos(p.interval_ns.max(1_000));
        let count = (run_for.as_nanos() / interval.as_nanos()).max(1) as u64;
        let spec = ProbeSpec {
            netns: l.netns.clone(),
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
        if n == 0 && scn.device.driver() == Driver::Veth && opts.probe_trace {
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
        tools.probers.push(load::spawn_prober_with(spec, probe_opts, stop.clone()));
    }
    probe_trace
}

/// Voice: per entry and direction a receiver at the far end of the stream and a
/// sender at its near end (the up stream from the near namespace to the far one on
/// the entry's `cpu` and the consumer's; the down stream the other way); start and
/// stop are run times, as the floods'.
#[allow(clippy::too_many_arguments)]
fn start_voip(scn: &Scenario, far_ns: &str, l: &LoadCtx<'_>, near: std::net::Ipv4Addr, far_cpu: usize, load_t0: u64, tool_bound: Duration, tools: &mut Tools) -> Result<()> {
    let run_ns = l.run_for.as_nanos() as u64;
    let bound = tool_bound + PROBE_TIMEOUT * 2;
    for v in scn.traffic.iter().filter_map(|t| if let Traffic::Voip(v) = t { Some(v) } else { None }) {
        let (start, stop) = (load_t0 + v.start_ns, load_t0 + v.stop_ns.unwrap_or(run_ns).min(run_ns));
        let cpu = v.cpu as usize;
        let up = (l.netns.as_str(), cpu, (far_ns, l.dst), far_cpu);
        let down = (far_ns, far_cpu, (l.netns.as_str(), near), cpu);
        let mut dirs = [None, None];
        for (k, (sends, (tx_ns, tx_cpu, rx, rx_cpu))) in [(v.direction.sends_up(), up), (v.direction.sends_down(), down)].into_iter().enumerate() {
            if sends {
                let d = load::voip::start_voip_dir(v, tx_ns, tx_cpu, rx, rx_cpu, start, stop, bound, l.stop, &tools.voip_stop)
                    .map_err(|e| KernelError::Internal(format!("the voip streams: {e}")))?;
                dirs[k] = Some(d);
            }
        }
        let [up, down] = dirs;
        tools.voip.push(load::voip::VoipRunning { up, down });
    }
    Ok(())
}

/// irtt: a stamping server in the receiving namespace (over a tap, the tap's reader
/// answers) and a client where the scenario puts it, per entry; their start and stop
/// are run times, as the floods'.
fn start_irtt(scn: &Scenario, names: &Names, l: &LoadCtx<'_>, server_cpu: usize, load_t0: u64, tool_bound: Duration, tools: &mut Tools) -> Result<()> {
    let (run_for, stop, dst) = (l.run_for, l.stop, l.dst);
    for r in scn.traffic.iter().filter_map(|t| if let Traffic::Irtt(r) = t { Some(r) } else { None }) {
        let tos = r.dscp << 2;
        let (port, sh) = if scn.device.driver() == Driver::Tun {
            (TAP_IRTT_PORT, None)
        } else {
            let server = load::IrttServerSpec { netns: names.ns_rx.clone(), bind: dst, port: 0, tos, duration: tool_bound + PROBE_TIMEOUT * 2 };
            let (port, sh) = load::spawn_irtt_server(server, Some(server_cpu), tools.irtt_stop.clone());
            let Some(port) = port else {
                let e = sh.join().ok().and_then(|r| r.err()).map_or("unknown error".into(), |e| e.to_string());
                return Err(KernelError::Internal(format!("the irtt server: {e}")));
            };
            (port, Some(sh))
        };
        let client = load::IrttClientSpec {
            netns: l.netns.clone(),
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
        tools.irtt.push((ch, sh));
    }

    Ok(())
}

/// Request/response: per rr entry a server in the receiving namespace and one client
/// per connection where the scenario puts it; their start and stop are run times.
fn start_rr(scn: &Scenario, names: &Names, l: &LoadCtx<'_>, server_cpu: usize, load_t0: u64, tool_bound: Duration, tools: &mut Tools) -> Result<()> {
    let run_ns = l.run_for.as_nanos() as u64;
    for r in scn.traffic.iter().filter_map(|t| if let Traffic::Rr(r) = t { Some(r) } else { None }) {
        let proto = load::RrProtoSpec { tcp: r.proto == darkbuf_scenario::RrProto::Tcp, request: r.request as usize, response: r.response as usize, tos: r.dscp << 2, nodelay: r.nodelay };
        let server = load::RrServerSpec { netns: names.ns_rx.clone(), bind: l.dst, proto, duration: tool_bound + PROBE_TIMEOUT * 2 };
        let (port, sh) = load::spawn_rr_server(server, Some(server_cpu), l.stop.clone());
        let Some(port) = port else {
            let e = sh.join().ok().and_then(|r| r.err()).map_or("unknown error".into(), |e| e.to_string());
            return Err(KernelError::Internal(format!("the rr server: {e}")));
        };
        let clients = (0..r.connections)
            .map(|_| {
                let spec = load::RrClientSpec {
                    netns: l.netns.clone(),
                    dst: l.dst,
                    port,
                    proto,
                    start_mono_ns: load_t0 + r.start_ns,
                    stop_mono_ns: load_t0 + r.stop_ns.unwrap_or(run_ns).min(run_ns),
                    timeout: Duration::from_nanos(r.timeout_ns),
                };
                load::spawn_rr_client(spec, Some(r.cpu as usize), l.stop.clone())
            })
            .collect();
        tools.rr.push((sh, clients));
    }
    Ok(())
}

/// The measured window after snapshot `a`: the samples every `sample_interval`, until
/// `duration` has passed; a queue that holds packets but sends none for
/// [`STALL_AFTER`] is an error, and so is a signal.
fn sample_window(scn: &Scenario, reader: &Reader, a: &Snapshot, bql: bool, stop: &Arc<AtomicBool>) -> Result<Vec<Sample>> {
    let duration = Duration::from_nanos(scn.duration_ns);
    let t_a = a.at.unwrap_or_else(Instant::now);
    let interval = if scn.sample_interval_ns > 0 { Duration::from_nanos(scn.sample_interval_ns) } else { DEFAULT_SAMPLE };
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
        if !signals::sleep_unless_signalled(wait, stop) {
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
    Ok(samples)
}

/// The devices and the consumer side: the veth pair (and `[lan]`'s client) with a sink
/// per flood in the receiving namespace, or the tap with its reader. Returns the far
/// end's address, the sending namespace and the measured device.
#[allow(clippy::too_many_arguments)]
fn setup_devices(
    scn: &Scenario,
    o: &Options,
    kv: KernelVersion,
    topo: &mut Topology,
    reused: bool,
    floods: &[(usize, &darkbuf_scenario::UdpFlood)],
    ports: &[u16],
    tool_bound: Duration,
    stop: &Arc<AtomicBool>,
    tools: &mut Tools,
) -> Result<(std::net::Ipv4Addr, String, String)> {
    let names = topo.names.clone();
    let app_cost = Duration::from_nanos(scn.consumer.app_cost_ns);
    Ok(match scn.device.driver() {
        Driver::Veth => {
            if reused {
                topo.reuse_veth(scn, kv)?;
            } else {
                topo.setup_veth(scn, o, kv)?;
            }
            // [lan]: a client namespace behind this one, which now routes.
            if let Some(lan) = &scn.lan {
                topo.setup_lan(scn, lan, kv)?;
            }
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
                tools.sinks.push((*i, h));
            }
            (topo::VETH_RX_ADDR, topo.near_ns(), names.dev_tx.clone())
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
            tools.tap = Some(reader.start());
            (topo::TAP_PEER_ADDR, names.ns_tx.clone(), names.tap.clone())
        }
        _ => unreachable!("preflight refuses every driver but veth and tun"),
    })
}

/// The NAPI poll counter started beside the setup (veth only), or why `napi.*` are null.
fn join_poll_counter(
    start: Option<JoinHandle<std::result::Result<NapiPollCounter, String>>>,
    unavailable: &mut BTreeMap<String, String>,
) -> Option<NapiPollCounter> {
    match start?.join().unwrap_or_else(|_| Err("the thread that set it up panicked".into())) {
        Ok(c) => Some(c),
        Err(e) => {
            for k in ["napi.polls", "napi.avg_work", "napi.full_budget_polls"] {
                unavailable.insert(k.into(), format!("napi:napi_poll tracepoint unavailable: {e}"));
            }
            None
        }
    }
}

/// The run's topology at its end: torn down, or parked under the run's reuse key
/// (with the root qdisc's kind, which parking deletes).
struct TopoEnd<'a> {
    topo: &'a mut Topology,
    park: Option<(String, &'a str)>,
}

/// Set (to anything), a `--backend vm` guest builds every run's namespaces and devices
/// afresh, as the kernel backend does on a host.
pub const FRESH_TOPOLOGY_ENV: &str = "DARKBUF_VM_FRESH_TOPOLOGY";

/// The key under which this run's topology may serve the next run in a `--backend vm`
/// guest (see [`Topology::park`]): the scenario as the device setup reads it (all of it
/// but its name, label, timing, runs, seed, qdisc tree and traffic), the namespaces'
/// sysctls and the sender's offloads. None outside a guest (a host's setup takes a tenth
/// of the time, and a parked topology would outlive a killed darkbuf), with
/// [`FRESH_TOPOLOGY_ENV`], and where a reset would have more state to undo: tun, `[lan]`
/// (a router), `[ingress]` (an ifb), netfilter rules and web traffic (thousands of
/// sockets in TIME_WAIT).
fn reuse_key(scn: &Scenario, opts: &RunOpts) -> Option<String> {
    let env = |k: &str| std::env::var_os(k).is_some();
    if !env(crate::names::VM_GUEST_ENV) || env(FRESH_TOPOLOGY_ENV) {
        return None;
    }
    topology_key(scn, opts)
}

/// [`reuse_key`] for any run (no environment read).
fn topology_key(scn: &Scenario, opts: &RunOpts) -> Option<String> {
    if scn.device.driver() != Driver::Veth || scn.lan.is_some() || scn.ingress.is_some() || scn.consumer.nrules > 0 || !crate::web::entries(scn).is_empty() {
        return None;
    }
    let mut v = serde_json::to_value(scn).ok()?;
    let o = v.as_object_mut()?;
    for k in ["name", "label", "duration_ns", "warmup_ns", "sample_interval_ns", "runs", "seed", "qdisc", "traffic", "test"] {
        o.remove(k);
    }
    Some(format!("{v} {:?} {:?} {}", crate::tcp::sysctls(scn), opts.netns_sysctls, opts.sender_tso))
}

/// After snapshot B: a note if another run was active, the tools stopped and joined
/// (the NAPI counter's tracing instances dropped meanwhile, the probe trace read), the
/// topology torn down or parked, and with `DARKBUF_TIMING` each phase's seconds (`t`: the run's
/// start, devices made, setup done, window over, snapshot B taken).
fn stop_and_teardown(
    guard: &mut StopGuard,
    poll_counter: Option<NapiPollCounter>,
    probe_trace: Option<std::result::Result<ProbeTrace, String>>,
    printout: JoinHandle<Option<String>>,
    topo: TopoEnd,
    t: [Instant; 5],
    notes: &mut Vec<String>,
) -> Joined {
    let [t_start, t_devices, t_setup, t_window, t_b] = t;
    let others = crate::names::other_active_runs();
    if !others.is_empty() {
        notes.push(another_run_note(&others, "during this run"));
    }
    // The tracing instances go while the tools stop.
    let counter_gone = std::thread::spawn(move || drop(poll_counter));
    let mut joined = guard.tools.stop_and_join(&guard.stop);
    joined.far_end = probe_trace.map(|t| t.and_then(ProbeTrace::finish));
    let _ = counter_gone.join();
    // Before the namespaces go.
    joined.tc_printout = printout.join().ok().flatten();
    crate::timing::mark("poll counter dropped");
    for e in &joined.errors {
        notes.push(e.clone());
    }
    let t_join = Instant::now();
    let teardown_errors = match topo.park {
        Some((key, kind)) => topo.topo.park(key, kind),
        None => topo.topo.teardown(),
    };
    crate::timing::mark("teardown");
    for e in teardown_errors {
        notes.push(format!("teardown: {e}"));
    }
    if crate::timing::on() {
        let s = crate::timing::secs;
        notes.push(format!(
            "timing: setup {:.2} s (namespaces and devices {:.2} s), warmup and window {:.2} s, snapshot B {:.2} s, stopping the load and tools {:.2} s, teardown {:.2} s",
            s(t_start, t_setup),
            s(t_start, t_devices),
            s(t_setup, t_window),
            s(t_window, t_b),
            s(t_b, t_join),
            s(t_join, Instant::now())
        ));
        if let Some(steps) = crate::timing::take(t_start) {
            notes.push(format!("timing steps: {steps}"));
        }
    }
    joined
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
    let floods: Vec<(usize, &darkbuf_scenario::UdpFlood)> =
        scn.traffic.iter().enumerate().filter_map(|(i, t)| if let Traffic::Udp(u) = t { Some((i, u)) } else { None }).collect();
    let pings: Vec<&darkbuf_scenario::Ping> = scn.traffic.iter().filter_map(|t| if let Traffic::Ping(p) = t { Some(p) } else { None }).collect();
    let ports: Vec<u16> = (0..floods.len()).map(|k| FLOOD_PORT_BASE + k as u16).collect();
    let o = Options::for_machine(opts.rule_scope, ports.clone());
    let mut notes = Vec::new();
    if crate::online_cpus() < 2 {
        notes.push("one CPU: producer and consumer share it".into());
    }

    // In a `--backend vm` guest, the last run's topology when this run would build the
    // same one (its qdisc tree aside).
    let reuse = reuse_key(scn, opts);
    let parked = reuse.as_deref().and_then(|k| Topology::take_parked(k, &mut notes));
    let reused = parked.is_some();
    if reused {
        notes.push(format!(
            "this run reused the namespaces and devices of the run before (its qdisc tree deleted, TCP metrics flushed: docs/vm.md); {FRESH_TOPOLOGY_ENV}=1 builds each run's afresh"
        ));
    }
    let mut topo = match parked {
        Some(t) => t,
        None => Topology::create(names.clone(), scn.device.driver())?,
    };
    // A reused topology keeps its names; the tracing instances' tag stays this run's.
    let names = Names { tag: names.tag, ..topo.names.clone() };
    crate::timing::mark("namespaces");
    let stop = Arc::new(AtomicBool::new(false));
    let mut guard = StopGuard { stop: stop.clone(), tools: Tools::default() };
    let warmup = Duration::from_nanos(scn.warmup_ns);
    let duration = Duration::from_nanos(scn.duration_ns);
    let total = warmup + duration;
    // Tools that wait for the stop flag get `total + MAX_LOAD_TAIL` as their bound; the
    // load itself runs for `run_for` (below), past snapshot B.
    let tool_bound = total + MAX_LOAD_TAIL;
    // Devices, and the consumer side.
    let (dst, tx_ns, tx_dev) = setup_devices(scn, &o, kv, &mut topo, reused, &floods, &ports, tool_bound, &stop, &mut guard.tools)?;
    crate::timing::mark("devices");
    // Kept in the report: a reused topology's runs all carry its setup's notes.
    notes.extend(topo.report.notes.iter().cloned());
    let t_devices = Instant::now();
    // NAPI poll counting (veth only): its tracing instances are made while the rest is
    // set up (they take a tenth of a second or more in a TCG guest). A thread left
    // behind by an early return drops the counter, which removes them.
    let poll_counter_start = (scn.device.driver() == Driver::Veth).then(|| {
        let (dev, tag) = (names.dev_rx.clone(), names.tag.clone());
        std::thread::spawn(move || NapiPollCounter::start(&dev, &tag, topo::VETH_NAPI_WEIGHT))
    });
    if let Some(e) = interrupted() {
        return Err(e);
    }
    // TCP: the namespaces' sysctls, the sender's offloads, and the receivers (listening
    // before any sender connects). The sampling grid starts where the window will.
    apply_netns_settings(scn, opts, &topo)?;
    crate::timing::mark("sysctls");
    notes.extend(crate::tcp::notes(scn, KernelVersion::running()));
    let tcp_ep = crate::tcp::Endpoints {
        tx_ns: topo.near_ns(),
        rx_ns: names.ns_rx.clone(),
        tx_addr: topo.near_addr(),
        rx_addr: topo::VETH_RX_ADDR,
        rx_cpu: o.consumer_cpu,
    };
    // The reader's batches are the topology's (started with the namespaces, and the
    // setup went through them); they answer once more before the load. A snapshot then
    // costs one exec (ethtool -S), where it took 13 and 1.7-4.3 s in a TCG guest.
    let reader = Reader::new(&topo, scn.device.driver(), &tx_dev, scn.ingress.as_ref().map(|i| i.ifb.as_str()));
    reader.warm();
    crate::timing::mark("batches warmed");
    let run_for = total + MAX_LOAD_TAIL;

    // Web: the receivers listen and the sender pools wait for the load's start.
    guard.tools.web = crate::web::start(scn, &tcp_ep, seed, tool_bound, &stop)?;
    crate::timing::mark("web");
    let has_tcp = !crate::tcp::entries(scn).is_empty() || !guard.tools.web.is_empty();
    let load_t0 = load::mono_ns() + if has_tcp { 50_000_000 } else { 0 };
    crate::web::set_t0(&guard.tools.web, load_t0);
    let grid_t0 = load_t0 + warmup.as_nanos() as u64;
    // In the guard at once: an early return stops them too.
    guard.tools.tcp = crate::tcp::start_receivers(scn, &tcp_ep, tool_bound, grid_t0, &stop)?;
    crate::timing::mark("receivers");

    // NAPI poll counting (veth only).
    let mut unavailable: BTreeMap<String, String> = BTreeMap::new();
    let poll_counter = join_poll_counter(poll_counter_start, &mut unavailable);
    crate::timing::mark("poll counter");

    // Load.
    let lc = LoadCtx { netns: tx_ns.clone(), dst, run_for, stop: &stop };
    start_floods(&floods, &ports, &lc, &mut guard.tools);
    crate::timing::mark("floods");
    // TCP senders: their clocks start with the other load's (start/stop are run times).
    if has_tcp {
        load::sleep_until_ns(load_t0);
    }
    let tcpext_load_start = if has_tcp { reader.tcpext_tx() } else { None };
    crate::tcp::start_senders(scn, &tcp_ep, &mut guard.tools.tcp, run_for, grid_t0, &stop);
    crate::timing::mark("senders");
    let probe_trace = start_probers(scn, opts, &pings, &names, &lc, &mut guard.tools, &mut notes);
    crate::timing::mark("probers");
    start_irtt(scn, &names, &lc, o.consumer_cpu, load_t0, tool_bound, &mut guard.tools)?;
    start_voip(scn, &names.ns_rx, &lc, topo.near_addr(), o.consumer_cpu, load_t0, tool_bound, &mut guard.tools)?;
    start_rr(scn, &names, &lc, o.consumer_cpu, load_t0, tool_bound, &mut guard.tools)?;
    crate::timing::mark("irtt voip rr");

    // Warmup, then the measured window.
    let t_setup = Instant::now();
    if !signals::sleep_unless_signalled(warmup, &stop) {
        return Err(interrupted().unwrap_or_else(|| KernelError::Internal("stopped during warmup".into())));
    }
    let mut a = reader.snapshot(poll_counter.as_ref());
    a.tcpext_tx_load_start = tcpext_load_start;
    crate::timing::mark("warmup and snapshot A");
    let bql = topo.report.bql_present;
    let samples = sample_window(scn, &reader, &a, bql, &stop)?;
    crate::timing::mark("window");
    let t_window = Instant::now();
    let b = reader.snapshot(poll_counter.as_ref());
    crate::timing::mark("snapshot B");
    let t_b = Instant::now();
    let stalled = counters::stalled_qdiscs(&a.qdiscs, &b.qdiscs);
    if !stalled.is_empty() && scn.qdisc.kind != "noqueue" {
        let held = b.at.zip(a.at).map_or(duration, |(y, x)| y.saturating_duration_since(x));
        let qlen = b.qdiscs.iter().filter(|(h, _)| stalled.contains(h)).map(|(_, q)| q.qlen).max().unwrap_or(0);
        return Err(stall_error(scn, qlen, held));
    }
    // The qdiscs' printout for the report, `tc -s qdisc show` as tc prints it: an exec
    // (a third of a second in a TCG guest), so it runs while the tools stop, and reads
    // the counters that moment after snapshot B.
    let printout = {
        let (ns, dev) = (names.ns_tx.clone(), tx_dev.clone());
        std::thread::spawn(move || cmd::run("tc", &["-n", &ns, "-s", "qdisc", "show", "dev", &dev]).ok().filter(|o| o.ok()).map(|o| o.stdout))
    };
    let topo_end = TopoEnd { topo: &mut topo, park: reuse.map(|k| (k, scn.qdisc.kind.as_str())) };
    let joined = stop_and_teardown(&mut guard, poll_counter, probe_trace, printout, topo_end, [t_start, t_devices, t_setup, t_window, t_b], &mut notes);
    if let Some(e) = interrupted() {
        return Err(e);
    }

    let mut out = metrics::metrics(scn, seed, &a, &b, &samples, &joined, &topo.report, bql, &mut unavailable, &mut notes);
    crate::tcp::metrics(&joined.tcp, grid_t0, scn.duration_ns, &mut out.record.metrics, &mut out.record.timeseries, &mut unavailable);
    crate::web::metrics(scn, &joined.web, load_t0, &mut out.record.metrics, &mut unavailable, &mut notes)?;
    out.unavailable = unavailable;
    out.notes = notes;
    Ok(out)
}

/// The per-namespace sysctls (TCP's buffers and ECN, then `opts.netns_sysctls` in both
/// namespaces) and, with `opts.sender_tso`, TSO/GSO back on at the sender.
fn apply_netns_settings(scn: &Scenario, opts: &RunOpts, topo: &Topology) -> Result<()> {
    let names = &topo.names;
    if scn.device.driver() != Driver::Veth {
        return Ok(());
    }
    let mut all = crate::tcp::sysctls(scn);
    for (k, v) in &opts.netns_sysctls {
        all.push((true, k.clone(), v.clone()));
        all.push((false, k.clone(), v.clone()));
    }
    // Written by the namespaces' threads (no exec: an exec is a fifth of a second in an
    // emulated guest).
    // The sending namespace is the near end's (a [lan] client's, behind the router).
    for (ns, sender) in [(&topo.near_ns(), true), (&names.ns_rx, false)] {
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
        use crate::ethtool_ioctl::Offload;
        topo::set_offloads(topo.ns_thread(&topo.near_ns())?, &topo.near_dev(), &[(Offload::Tso, true), (Offload::Gso, true)])
            .map_err(|e| KernelError::Unavailable(format!("TSO on at the sender: {}", e.message())))?;
    }
    Ok(())
}

/// Reads counters of one run's devices: through the namespaces' threads and one `tc` and
/// `ip` batch per namespace kept open for the run ([`crate::session`]), so a snapshot
/// costs no exec (`ethtool -S` is its ioctl, [`crate::ethtool_ioctl`]) and neither does
/// a sample. A batch or ioctl that fails is given up for a plain exec of the same command.
struct Reader {
    names: Names,
    driver: Driver,
    tx_dev: String,
    /// Ingress shaping's ifb, in the sender's namespace.
    ifb: Option<String>,
    napi_pids: Vec<u32>,
    tx_thread: Option<Arc<NsThread>>,
    rx_thread: Option<Arc<NsThread>>,
    /// The thread of the namespace the sending sockets live in (a `[lan]` client's),
    /// for their UDP and TcpExt counters.
    sock_thread: Option<Arc<NsThread>>,
    tc_tx: Option<Arc<Batch>>,
    ip_tx: Option<Arc<Batch>>,
    ip_rx: Option<Arc<Batch>>,
}

impl Reader {
    fn new(topo: &Topology, driver: Driver, tx_dev: &str, ifb: Option<&str>) -> Reader {
        let n = &topo.names;
        let veth = driver == Driver::Veth;
        Reader {
            names: n.clone(),
            driver,
            tx_dev: tx_dev.to_string(),
            ifb: ifb.map(str::to_string),
            napi_pids: topo.report.napi_pids.clone(),
            tx_thread: topo.tx_thread.clone(),
            rx_thread: topo.rx_thread.clone(),
            sock_thread: topo.lan_thread.clone().or_else(|| topo.tx_thread.clone()),
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

    /// The sending namespace's `TcpExt` counters now.
    fn tcpext_tx(&self) -> Option<BTreeMap<String, u64>> {
        Self::proc_net(&self.sock_thread, "netstat").map(|t| counters::parse_snmp(&t, "TcpExt"))
    }

    /// The sender's side: every qdisc (JSON), its link, UDP and TcpExt counters, and
    /// the classes' printout.
    fn snapshot_tx(&self, s: &mut Snapshot) {
        let (n, dev) = (&self.names, &self.tx_dev);
        let t_tx = Instant::now();
        let (class_text, tc_json) = self.classes_and_qdiscs(dev);
        let link = Self::json(&self.ip_tx, "ip", &n.ns_tx, &format!("link show dev {dev}"));
        let snmp = Self::proc_net(&self.sock_thread, "snmp");
        let tcpext = self.tcpext_tx();
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
        s.tcpext_tx = tcpext.unwrap_or_default();
        s.ifb = self.ifb.as_deref().map(|ifb| Box::new(self.snapshot_ifb(ifb)));
    }

    /// `dev`'s classes (text: tc has no JSON for them) and qdiscs (JSON), a device of
    /// the sender's namespace, in one query of its `tc` batch.
    fn classes_and_qdiscs(&self, dev: &str) -> (Option<String>, Option<String>) {
        let ns = &self.names.ns_tx;
        match self.tc_tx.as_ref().and_then(|b| b.query_after_text(&format!("class show dev {dev}\nqdisc show dev {dev}"))) {
            Some((c, q)) => (Some(c), Some(q)),
            None => {
                let c = cmd::run("tc", &["-n", ns, "-s", "class", "show", "dev", dev]).ok().filter(|o| o.ok()).map(|o| o.stdout);
                (c, Self::json(&None, "tc", ns, &format!("qdisc show dev {dev}")))
            }
        }
    }

    /// The ifb's qdiscs and classes, through the same batch as the device's.
    fn snapshot_ifb(&self, ifb: &str) -> IfbSnapshot {
        let (class_text, tc_json) = self.classes_and_qdiscs(ifb);
        IfbSnapshot {
            qdisc: tc_json.as_deref().and_then(counters::parse_tc_root),
            xstats: tc_json.as_deref().map(crate::xstats::parse_qdiscs).unwrap_or_default(),
            htb_classes: class_text.as_deref().map(crate::xstats::parse_htb_classes).unwrap_or_default(),
        }
    }

    /// The receiver's side (veth): the peer's ethtool stats, its link, UDP counters.
    fn snapshot_rx(&self, s: &mut Snapshot) {
        let n = &self.names;
        let t_rx = Instant::now();
        let ethtool = self.rx_thread.as_ref().and_then(|sh| {
            // The ioctl in the namespace's thread (no exec); the program if it fails.
            let dev = n.dev_rx.clone();
            match sh.call(move || crate::ethtool_ioctl::stats(&dev)) {
                Ok(Ok(m)) => Some(m),
                _ => sh.run("ethtool", &["-S", &n.dev_rx]).ok().filter(|o| o.ok()).map(|o| counters::parse_ethtool_stats(&o.stdout)),
            }
        });
        let link = Self::json(&self.ip_rx, "ip", &n.ns_rx, &format!("link show dev {}", n.dev_rx));
        let snmp = Self::proc_net(&self.rx_thread, "snmp");
        s.rx_at = Some(t_rx + t_rx.elapsed() / 2);
        s.rx_ethtool = ethtool.unwrap_or_default();
        s.rx_link = link.as_deref().and_then(counters::parse_ip_link);
        s.snmp_rx = snmp.as_deref().map(|t| counters::parse_snmp(t, "Udp")).unwrap_or_default();
    }

    /// Every counter at one instant.
    fn snapshot(&self, polls: Option<&NapiPollCounter>) -> Snapshot {
        let mut s = Snapshot { mono_ns: load::mono_ns(), ..Default::default() };
        let start = Instant::now();
        // Both namespaces at once: each side's counters are rated between its own reads.
        let mut rx = Snapshot::default();
        std::thread::scope(|sc| {
            if self.driver == Driver::Veth {
                sc.spawn(|| self.snapshot_rx(&mut rx));
            }
            self.snapshot_tx(&mut s);
        });
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

    /// A flood opens a socket per flow, each on a source port of one address: more
    /// flows than ports is exit 3 before anything is set up (the simulator takes them).
    #[test]
    fn flood_flows_fit_the_source_ports() {
        let text = |flows: u32| format!("name = \"t\"\n[device]\ndriver = \"veth\"\n[[traffic]]\nkind = \"udp\"\nsndbuf = 4096\nflows = {flows}\n");
        let scn = |t: &str| darkbuf_scenario::load_str("t.toml", t, &[]).map_err(|d| format!("{d:?}")).unwrap();
        let e = check_open_files(&scn(&text(65_537))).unwrap_err();
        assert_eq!(e.code(), 3);
        assert!(e.message().starts_with("traffic.0: 65,537 flows: the kernel backend's flood opens a UDP socket per flow"), "{}", e.message());
        // Within the ports, what is left to check is RLIMIT_NOFILE.
        if let Err(e) = check_open_files(&scn(&text(65_536))) {
            assert!(e.message().contains("RLIMIT_NOFILE"), "{}", e.message());
        }
    }

    /// Runs share a `--backend vm` guest's topology when only what each run sets up
    /// anew differs (qdisc tree, traffic, timing, labels), and not when the devices, the
    /// namespaces' sysctls or the sender's offloads would differ, or when a reset would
    /// have more to undo.
    #[test]
    fn topology_key_separates_what_the_setup_reads() {
        let base = "name = \"a\"\nduration = \"4s\"\n[device]\ndriver = \"veth\"\n[qdisc]\nkind = \"pfifo\"\n\
                    [[traffic]]\nkind = \"tcp\"\ncc = \"cubic\"\n";
        let key = |text: &str, o: &RunOpts| {
            let scn = darkbuf_scenario::load_str("t.toml", text, &[]).map_err(|d| format!("{d:?}")).unwrap();
            topology_key(&scn, o)
        };
        let o = RunOpts { rule_scope: RuleScope::All, netns_sysctls: Vec::new(), sender_tso: false, probe_trace: false };
        let k = key(base, &o).expect("a veth run has a key");
        let same = [
            base.replace("kind = \"pfifo\"", "kind = \"tbf\"\nrate = \"10mbit\"\nburst = 10000\nlatency = \"50ms\""),
            base.replace("name = \"a\"\nduration = \"4s\"", "name = \"b\"\nduration = \"9s\"\nwarmup = \"2s\"\nseed = 7"),
            base.replace("cc = \"cubic\"", "cc = \"reno\"\nflows = 3") + "[[traffic]]\nkind = \"ping\"\ninterval = \"50ms\"\n",
        ];
        for t in &same {
            assert_eq!(key(t, &o).as_deref(), Some(k.as_str()), "{t}");
        }
        let other = [
            base.replace("driver = \"veth\"", "driver = \"veth\"\ntxqueuelen = 500"),
            base.replace("cc = \"cubic\"", "cc = \"cubic\"\necn = true"),
            base.replace("cc = \"cubic\"", "cc = \"cubic\"\nsndbuf = \"8MiB\""),
        ];
        for t in &other {
            let k2 = key(t, &o).expect("still reusable");
            assert_ne!(k2, k, "{t}");
        }
        let lob = RunOpts { netns_sysctls: vec![("net.ipv4.tcp_limit_output_bytes".into(), "65536".into())], ..o.clone() };
        assert_ne!(key(base, &lob).unwrap(), k);
        assert_ne!(key(base, &RunOpts { sender_tso: true, ..o.clone() }).unwrap(), k);
        let none = [
            base.replace("driver = \"veth\"", "driver = \"tun\""),
            base.to_string() + "[consumer]\nnrules = 10\n",
            base.to_string() + "[[traffic]]\nkind = \"web\"\narrivals = \"10/s\"\nsize_dist = \"exponential\"\nsize_mean = \"20KB\"\n",
        ];
        for t in &none {
            assert_eq!(key(t, &o), None, "{t}");
        }
    }
}
