//! Setting up one run's namespaces and devices, and tearing them down whatever happens.
//!
//! veth (`driver = "veth"`): namespaces `<tag>-tx` (the sender, its qdisc) and `<tag>-rx`
//! (the NAPI consumer, the rules, the sink), a veth pair `dev_tx` 10.200.0.1 <->
//! `dev_rx` 10.200.0.2, then in order:
//!
//! 1. TX queues: `ethtool -L DEV rx N tx N` on both ends (veth channels);
//! 2. `txqueuelen`, addresses, links up, permanent neighbour entries (no ARP in a run);
//! 3. the NAPI recipe of real-kernel-notes.md section 4, which is what makes a queue
//!    build at all: `ethtool -K dev_rx gro on` and `ethtool -K dev_tx tso off gso off`
//!    make the sender's skbs GRO-eligible, so veth_xmit() produces them into the peer's
//!    256-slot ptr_ring (and, >= 6.16, stops the txq when it is full) instead of
//!    running netif_rx() in the sender's softirq; `napi = "threaded"` writes 1 to
//!    /sys/class/net/dev_rx/threaded and pins the `napi/dev_rx-*` kthread to the last
//!    CPU, away from the sender (CPU 0); `napi = "softirq"` writes 0;
//! 4. XPS: `xps_txq` gets every CPU in its `xps_cpus`, the other queues none; or
//!    `xps = "cpu"` (CPU c in queue c % tx_queues, one queue per core as drivers set
//!    it) or `xps = [cpu per queue]` writes each queue's `xps_cpus` mask;
//! 5. the qdisc ([`crate::tcargs`]);
//! 6. BQL `limit_min` / `limit_max` / `hold_time` in sysfs where the device has a
//!    `byte_queue_limits` directory, `ethtool -C tx-usecs` for coalesced completion;
//! 7. the rules ([`crate::rules`]) in `<tag>-rx`.
//!
//! `[lan]` on veth ([`Topology::setup_lan`]): a third namespace `<tag>-lan`, the client,
//! joined to `<tag>-tx` (now the router) by a second veth pair `dev_lan_client`
//! 10.202.0.2 <-> `dev_lan_router` 10.202.0.1, one queue each, TSO, GSO and GRO off (so
//! a frame crosses it by `veth_xmit()` -> `__netif_rx()`, is never merged by GRO, and
//! the router's pfifo counts frames), `[lan.qdisc]` on both ends, `ip_forward = 1` in
//! the router and a route each way (client -> 10.200.0.0/24 via the router, peer ->
//! 10.202.0.0/24 via the router). The traffic's near end then runs in `<tag>-lan`, and
//! the measured device is still `dev_tx`, the router's egress toward the peer.
//!
//! tun (`driver = "tun"`): namespace `<tag>-tx` only; the tap is created there by the
//! tap reader ([`crate::load::spawn_tap_reader`], which holds its only file descriptor),
//! then [`Topology::configure_tap`] sets its txqueuelen (tun's ptr_ring size),
//! 10.201.0.1/24, a permanent neighbour 10.201.0.2 (the reader answers for it) and the
//! qdisc.
//!
//! Teardown deletes the namespaces, which removes every device, qdisc and rule in them.
//! It is idempotent, runs from [`Drop`] too, and leaves the NAPI kthreads to the kernel,
//! which stops them when the device is unregistered.

use crate::cmd;
use crate::error::{KernelError, Result};
use crate::ethtool_ioctl::Offload;
use crate::session::{self, Batch, NsThread};
use std::sync::{Arc, Mutex};
use crate::names::Names;
use crate::rules::{RuleBackend, RuleScope};
use crate::KernelVersion;
use darkbuf_scenario::{Driver, NapiMode, Scenario};
use std::net::Ipv4Addr;
use std::time::Duration;

pub const VETH_TX_ADDR: Ipv4Addr = Ipv4Addr::new(10, 200, 0, 1);
pub const VETH_RX_ADDR: Ipv4Addr = Ipv4Addr::new(10, 200, 0, 2);
pub const TAP_ADDR: Ipv4Addr = Ipv4Addr::new(10, 201, 0, 1);
/// The address behind the tap: the tap reader answers ARP and ICMP echo for it.
pub const TAP_PEER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 201, 0, 2);
/// `[lan]` on veth: the router's LAN address and the client's.
pub const LAN_ROUTER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 202, 0, 1);
pub const LAN_CLIENT_ADDR: Ipv4Addr = Ipv4Addr::new(10, 202, 0, 2);

/// The tap reader's MAC ([`crate::load::TAP_PEER_MAC`]) as `ip neigh` takes it.
pub fn tap_peer_mac() -> String {
    crate::load::TAP_PEER_MAC.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}
/// veth's NAPI weight (NAPI_POLL_WEIGHT); the kernel has no knob for it.
pub const VETH_NAPI_WEIGHT: u32 = 64;
/// veth's ptr_ring size (VETH_RING_SIZE).
pub const VETH_RING: u32 = 256;

/// Options that are not (yet) scenario keys.
#[derive(Clone, Debug)]
pub struct Options {
    pub rule_scope: RuleScope,
    /// Destination ports of the floods (for [`RuleScope::Flood`]).
    pub flood_ports: Vec<u16>,
    /// Sender CPU (the floods are pinned here).
    pub producer_cpu: usize,
    /// Consumer CPU (the NAPI kthread and the sinks).
    pub consumer_cpu: usize,
}

impl Options {
    pub fn for_machine(rule_scope: RuleScope, flood_ports: Vec<u16>) -> Options {
        let n = crate::online_cpus();
        Options { rule_scope, flood_ports, producer_cpu: 0, consumer_cpu: n.saturating_sub(1) }
    }
}

/// What the setup found and did, for the results.
#[derive(Clone, Debug, Default)]
pub struct SetupReport {
    /// The device whose TX queues carry the flood (veth dev_tx or the tap).
    pub tx_dev: String,
    /// The consumer device (veth dev_rx); empty for tun.
    pub rx_dev: String,
    /// `byte_queue_limits` exists on the TX device.
    pub bql_present: bool,
    /// NAPI kthreads of the consumer (threaded mode).
    pub napi_pids: Vec<u32>,
    /// The netfilter front end used for the rules, if any were loaded.
    pub rules: Option<RuleBackend>,
    /// Notes on what the kernel does differently from the scenario, for stderr.
    pub notes: Vec<String>,
}

/// The namespaces of one run; torn down on drop.
pub struct Topology {
    pub names: Names,
    pub driver: Driver,
    namespaces: Vec<String>,
    torn_down: bool,
    pub report: SetupReport,
    /// One thread per namespace for the run's sysfs and procfs reads and writes and its
    /// ethtool calls ([`crate::session`]); the sender's first.
    pub tx_thread: Option<Arc<NsThread>>,
    pub rx_thread: Option<Arc<NsThread>>,
    /// One `tc -n NS -s -j -batch -` (the sender's) and `ip -n NS -s -j -batch -` per
    /// namespace for the whole run ([`Batch`]): the setup's commands go through them, and
    /// the run's reads after (None where one could not be started: one exec per use).
    pub tc_tx: Option<Arc<Batch>>,
    pub ip_tx: Option<Arc<Batch>>,
    pub ip_rx: Option<Arc<Batch>>,
    /// `[lan]` on veth: the client namespace's thread (set once [`Topology::setup_lan`]
    /// has made it).
    pub lan_thread: Option<Arc<NsThread>>,
}

/// A `--backend vm` guest's veth topology from the last run, with its reuse key: the
/// next run with the same key takes it ([`Topology::take_parked`]) instead of building
/// the same namespaces, devices, batches and threads again (half a second per point
/// under TCG; docs/vm.md).
static PARKED: Mutex<Option<(String, Topology)>> = Mutex::new(None);

/// How long [`Topology::park`] waits for the run's TCP connections to finish closing.
const PARK_CLOSE_WAIT: Duration = Duration::from_secs(1);

/// Whether every socket of a /proc/net/tcp (or tcp6) listing is listening, in
/// TIME_WAIT or closed (`st` 0A, 06, 07): none is still closing, so none will update the
/// TCP metrics cache.
fn tcp_all_closed(text: &str) -> bool {
    text.lines().skip(1).filter_map(|l| l.split_whitespace().nth(3)).all(|st| matches!(st, "0A" | "06" | "07"))
}

/// The veth pair's MAC addresses, set at creation, so the permanent neighbour entries
/// need no read of them (locally administered, unicast; each pair is alone in its
/// namespaces).
pub const VETH_TX_MAC: &str = "02:64:6b:62:00:01";
pub const VETH_RX_MAC: &str = "02:64:6b:62:00:02";
/// The `[lan]` pair's: the router's end and the client's.
pub const LAN_ROUTER_MAC: &str = "02:64:6b:62:00:03";
pub const LAN_CLIENT_MAC: &str = "02:64:6b:62:00:04";

/// Lines for one `ip -n NS -batch -` (or `tc`), each with what it is for in errors.
#[derive(Default)]
struct Lines(Vec<(String, &'static str)>);

impl Lines {
    fn push(&mut self, line: String, what: &'static str) {
        self.0.push((line, what));
    }

    /// Runs them through the run's `ip` batch of namespace `ns` (no exec), or with one
    /// exec of `ip -n ns -batch -` when there is none; a failure names its line.
    fn run(&mut self, batch: Option<&Batch>, ns: &str) -> Result<()> {
        if self.0.is_empty() {
            return Ok(());
        }
        let lines: Vec<String> = self.0.iter().map(|(l, _)| l.clone()).collect();
        let done = std::mem::take(&mut self.0);
        let failed = match batch {
            Some(b) => b.exec(&lines, "link show dev lo").err(),
            None => match session::batch_once("ip", Some(ns), &lines).map_err(|e| cmd::not_installed("ip", e))? {
                Ok(_) => None,
                Err((i, o)) => Some((i, format!("{}: {}", o.ended(), session::batch_reason(&o)))),
            },
        };
        if let Some((i, why)) = failed {
            let (line, what) = &done[i];
            let e = KernelError::Internal(format!("`ip -n {ns} {line}` failed: {why}"));
            return Err(if what.is_empty() { e } else { unavailable(what, e) });
        }
        Ok(())
    }
}

fn unavailable(what: &str, e: KernelError) -> KernelError {
    match e {
        KernelError::Internal(m) | KernelError::Unavailable(m) => KernelError::Unavailable(format!("{what}: {m}")),
        other => other,
    }
}

/// The scenario as kernel `kv` runs it where the scenario left a key at a default that
/// models another kernel generation, with a note that says so; `None` if nothing
/// changes. A value the scenario gives is never changed.
/// - veth's `device.backpressure` defaults to true, the 6.16+ ring stop (dc82a33297fc);
///   an older kernel drops at a full ptr_ring, and with the key unset the run is that
///   kernel's, as a user who booted it asked ([`preflight`] refuses a given one the
///   kernel does not have);
/// - a TCP entry's `grow_skb` defaults to true, `tcp_grow_skb()` of 6.10+; unset, it
///   is the kernel's (a given one the kernel does not run is noted, `tcp::notes()`).
pub fn kernel_defaults(scn: &Scenario, kv: KernelVersion) -> Option<(Scenario, String)> {
    let mut out = scn.clone();
    let mut notes = Vec::new();
    let d = &scn.device;
    if d.driver() == Driver::Veth && !d.backpressure_given && d.backpressure && kv < crate::caps::VETH_BACKPRESSURE_SINCE {
        out.device.backpressure = false;
        notes.push(format!(
            "device.backpressure is unset, and its default (true) is veth's ring stop of 6.16+ (dc82a33297fc); kernel {kv} \
             drops at a full ptr_ring instead, so this run is without it, as the kernel is (set device.backpressure = false \
             to say so; compare runs the simulator the same way)"
        ));
    }
    // The default is true, so only a kernel without tcp_grow_skb() changes it.
    let mut unset = Vec::new();
    for (i, t) in out.traffic.iter_mut().enumerate() {
        if let darkbuf_scenario::Traffic::Tcp(f) = t {
            if !f.grow_skb_given && f.grow_skb && !crate::tcp::kernel_grow_skb(kv) {
                f.grow_skb = false;
                unset.push(format!("traffic.{i}"));
            }
        }
    }
    if !unset.is_empty() {
        notes.push(format!(
            "{}: grow_skb is unset, and its default (true) is tcp_grow_skb() of 6.10+ (8ee602c63520); kernel {kv} does not \
             have it, so this run is without it, as the kernel is (set grow_skb = false to say so; compare runs the \
             simulator the same way)",
            unset.join(", ")
        ));
    }
    if notes.is_empty() {
        return None;
    }
    Some((out, notes.join("; ")))
}

/// Checks the scenario against what the kernel backend can do at all, before anything
/// is created. Errors are exit 3 (or 2), naming the missing piece.
pub fn preflight(scn: &Scenario, kv: KernelVersion) -> Result<()> {
    use darkbuf_scenario::ConsumerKind;
    // Bad input before what the machine lacks: exit 2 whoever runs it.
    crate::rules::check_count(scn.consumer.nrules)?;
    // The backend drives only the veth pairs and taps it creates: every other driver,
    // present or future, is the simulator's alone and stops here.
    if !matches!(scn.device.driver(), Driver::Veth | Driver::Tun) {
        return Err(KernelError::Unavailable(match scn.device.driver() {
            Driver::Nic => "device.driver = \"nic\": the kernel backend drives only the veth pairs and taps it creates in its own \
                 namespaces, and this machine has no NIC it may take over (`darkbuf check` lists the NICs and their BQL, \
                 read-only); run the scenario on the simulator"
                .into(),
            Driver::Wifi => "device.driver = \"wifi\": the kernel backend has no radio to drive; mac80211_hwsim would give \
                 mac80211's TXQs, fq and AQL counters but no air (no PHY rates, airtime, contention or losses), so it could \
                 check the queueing structure only, not the figures; run the scenario on the simulator"
                .into(),
            other => format!(
                "device.driver = \"{}\": the kernel backend drives only the veth pairs and taps it creates in its own \
                 namespaces; run the scenario on the simulator",
                other.name()
            ),
        }));
    }
    crate::error::require_root()?;
    for t in ["ip", "tc"] {
        if cmd::which(t).is_none() {
            return Err(KernelError::Unavailable(format!("`{t}` (iproute2) is not installed")));
        }
    }
    let d = &scn.device;
    match scn.device.driver() {
        Driver::Veth => {
            if cmd::which("ethtool").is_none() {
                return Err(KernelError::Unavailable(
                    "ethtool is not installed: the veth NAPI mode needs `ethtool -K` (apt-get install ethtool)".into(),
                ));
            }
            if d.napi_weight != VETH_NAPI_WEIGHT {
                return Err(KernelError::Unavailable(format!(
                    "device.napi_weight = {}: veth's NAPI weight is fixed at {VETH_NAPI_WEIGHT} (NAPI_POLL_WEIGHT) in the kernel",
                    d.napi_weight
                )));
            }
            let has_bp = kv >= crate::caps::VETH_BACKPRESSURE_SINCE;
            if d.backpressure && !has_bp {
                return Err(KernelError::Unavailable(format!(
                    "device.backpressure = true: veth ring backpressure (dc82a33297fc) arrived in 6.16; kernel {kv} drops at a full ptr_ring (set device.backpressure = false)"
                )));
            }
            if !d.backpressure && has_bp {
                return Err(KernelError::Unavailable(format!(
                    "device.backpressure = false: kernel {kv} (>= 6.16) always stops a veth txq on a full ptr_ring and has no knob to turn it off"
                )));
            }
        }
        Driver::Tun => {
            if d.backpressure {
                return Err(KernelError::Unavailable(format!(
                    "device.backpressure = true: tun has no IFF_BACKPRESSURE in kernel {kv} (a full tap ring tail-drops); set device.backpressure = false"
                )));
            }
            if scn.consumer.kind == ConsumerKind::Vhost {
                return Err(KernelError::Unavailable(
                    "consumer.kind = \"vhost\": the kernel backend has no vhost-net consumer (it needs a VM); use \"reader\"".into(),
                ));
            }
            if scn.consumer.nrules > 0 {
                return Err(KernelError::Unavailable(
                    "consumer.nrules > 0 with driver = \"tun\": the tap's consumer is a user-space reader, which no netfilter rule sees; set consumer.nrules = 0".into(),
                ));
            }
            if d.tx_queues > 1 {
                return Err(KernelError::Unavailable(
                    "device.tx_queues > 1 with driver = \"tun\": the tap reader opens one queue (no IFF_MULTI_QUEUE)".into(),
                ));
            }
            if d.bql.enabled {
                return Err(KernelError::Unavailable(
                    "device.bql.enabled = true with driver = \"tun\": tun does not use BQL (no byte_queue_limits on a tap); set device.bql.enabled = false".into(),
                ));
            }
        }
        _ => unreachable!("refused above"),
    }
    if scn.consumer.nrules > 0 && RuleBackend::detect().is_none() {
        return Err(KernelError::Unavailable(format!(
            "consumer.nrules = {}: neither nft nor iptables-restore is installed (apt-get install nftables)",
            scn.consumer.nrules
        )));
    }
    Ok(())
}

/// Each TX queue's `xps_cpus` mask for an XPS map, or `None` when the scenario has no
/// map (`xps = "none"`: the kernel's default, `skb_tx_hash()`). `cpu`: CPU c in queue
/// c % queues, as a driver maps one queue per core; a list: queue i gets CPU `cpus[i]`.
pub fn xps_masks(xps: &darkbuf_scenario::XpsSpec, queues: usize, ncpus: usize) -> Option<Vec<String>> {
    use darkbuf_scenario::XpsSpec;
    let mut sets: Vec<Vec<usize>> = vec![Vec::new(); queues];
    match xps {
        XpsSpec::None => return None,
        XpsSpec::Cpu => (0..ncpus).for_each(|c| sets[c % queues.max(1)].push(c)),
        XpsSpec::Cpus(cpus) => cpus.iter().enumerate().take(queues).for_each(|(q, &c)| sets[q].push(c as usize)),
    }
    Some(sets.iter().map(|s| cpus_mask(s, ncpus)).collect())
}

/// `xps_cpus` mask with exactly `cpus` set, in sysfs' comma-separated 32-bit groups.
fn cpus_mask(cpus: &[usize], ncpus: usize) -> String {
    let groups = ncpus.max(1).div_ceil(32);
    let mut parts = Vec::new();
    for g in (0..groups).rev() {
        let v: u32 = cpus.iter().filter(|&&c| c / 32 == g).fold(0, |m, &c| m | 1 << (c % 32));
        parts.push(format!("{v:08x}"));
    }
    parts.join(",")
}

/// `xps_cpus` mask with every one of `n` CPUs set, in sysfs' comma-separated 32-bit groups.
pub fn all_cpus_mask(n: usize) -> String {
    let n = n.max(1);
    let groups = n.div_ceil(32);
    let mut parts = Vec::new();
    for g in (0..groups).rev() {
        let bits = (n - g * 32).min(32);
        let v: u64 = if bits == 32 { 0xffff_ffff } else { (1u64 << bits) - 1 };
        parts.push(format!("{v:08x}"));
    }
    parts.join(",")
}

/// Pins thread/process `pid` to `cpu`.
pub fn pin(pid: u32, cpu: usize) -> std::io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET stays in bounds for cpu < 1024.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(pid as libc::pid_t, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `ethtool -K dev <offload> on|off ...` in `sh`'s namespace: the ioctls
/// ([`crate::ethtool_ioctl`], no exec), or the program when one fails.
pub fn set_offloads(sh: &NsThread, dev: &str, set: &[(Offload, bool)]) -> Result<()> {
    let (d, s) = (dev.to_string(), set.to_vec());
    if let Ok(Ok(())) = sh.call(move || crate::ethtool_ioctl::set_offloads(&d, &s)) {
        return Ok(());
    }
    let mut args = vec!["-K", dev];
    for (o, on) in set {
        args.push(o.name());
        args.push(if *on { "on" } else { "off" });
    }
    sh.must("ethtool", &args).map(|_| ())
}

impl Topology {
    /// Creates the namespaces (both for veth, the sender's for tun), with loopback up,
    /// and starts a thread in each ([`NsThread`]).
    pub fn create(names: Names, driver: Driver) -> Result<Topology> {
        let mut t = Topology::empty(names, driver);
        let mut list = vec![t.names.ns_tx.clone()];
        if driver == Driver::Veth {
            list.push(t.names.ns_rx.clone());
        }
        // Through the process's `ip -batch` (no exec after the first run): teardown
        // tolerates a namespace that was never made.
        let add: Vec<String> = list.iter().map(|ns| format!("netns add {ns}")).collect();
        t.namespaces = list.clone();
        if let Err((i, why)) = session::process_ip(&add).map_err(|e| cmd::not_installed("ip", e))? {
            let e = KernelError::Internal(format!("`ip {}` failed: {why}", add[i]));
            return Err(unavailable("creating a network namespace", e));
        }
        crate::timing::mark("netns add");
        // The batches start now (an exec each, in parallel), so that their start-up is
        // paid once, by the setup, which goes through them.
        t.tc_tx = Batch::start("tc", &list[0]).map(Arc::new);
        t.ip_tx = Batch::start("ip", &list[0]).map(Arc::new);
        t.ip_rx = list.get(1).and_then(|ns| Batch::start("ip", ns)).map(Arc::new);
        crate::timing::mark("batches started");
        for (k, ns) in list.iter().enumerate() {
            let sh = Arc::new(NsThread::start(ns)?);
            if k == 0 {
                t.tx_thread = Some(sh);
            } else {
                t.rx_thread = Some(sh);
            }
        }
        Ok(t)
    }

    /// The thread of namespace `ns` (one of this run's).
    pub fn ns_thread(&self, ns: &str) -> Result<&NsThread> {
        [&self.tx_thread, &self.rx_thread, &self.lan_thread]
            .into_iter()
            .flatten()
            .find(|s| s.ns() == ns)
            .map(|s| s.as_ref())
            .ok_or_else(|| KernelError::Internal(format!("no thread in namespace {ns}")))
    }

    /// Sets up the veth pair and everything on it (steps 1-7 of the module docs). The
    /// addresses, links and neighbours are one `ip -n NS -batch -` per namespace, the
    /// qdisc one `tc -n NS -batch -`, sysfs writes and ethtool go through the
    /// namespaces' threads.
    pub fn setup_veth(&mut self, scn: &Scenario, opt: &Options, kv: KernelVersion) -> Result<()> {
        let n = self.names.clone();
        let (tx, rx) = (n.ns_tx.as_str(), n.ns_rx.as_str());
        let (a, b) = (n.dev_tx.as_str(), n.dev_rx.as_str());
        let d = &scn.device;
        self.report.tx_dev = a.to_string();
        self.report.rx_dev = b.to_string();
        let (txs, rxs) = match (self.tx_thread.clone(), self.rx_thread.clone()) {
            (Some(t), Some(r)) => (t, r),
            _ => return Err(KernelError::Internal("the run's namespaces have no threads".into())),
        };
        // veth allocates num_possible_cpus() queues unless told otherwise; the scenario's
        // device.num_tx_queues defaults to that. Given explicitly, numtxqueues also sets the
        // *real* queue count, so the channels are set back to tx_queues below.
        let explicit = d.num_tx_queues as usize != crate::online_cpus();
        let nq = if explicit { format!(" numtxqueues {0} numrxqueues {0}", d.num_tx_queues) } else { String::new() };
        let mut txl = Lines::default();
        txl.push("link set lo up".into(), "");
        txl.push(format!("link add {a} address {VETH_TX_MAC}{nq} type veth peer name {b} address {VETH_RX_MAC}{nq} netns {rx}"), "creating a veth pair");
        // 1. TX queues.
        if d.tx_queues > 1 || (explicit && d.num_tx_queues > 1) {
            txl.run(self.ip_tx.as_deref(), tx)?;
            let q = d.tx_queues.to_string();
            for (sh, dev) in [(&txs, a), (&rxs, b)] {
                sh.must("ethtool", &["-L", dev, "rx", &q, "tx", &q]).map_err(|e| {
                    unavailable(
                        &format!("device.tx_queues = {}: veth channels are limited to the number of CPUs ({})", d.tx_queues, crate::online_cpus()),
                        e,
                    )
                })?;
            }
        }
        // 2. Queue length, addresses, links, neighbours.
        txl.push(format!("link set {a} txqueuelen {}", d.txqueuelen), "");
        txl.push(format!("addr add {VETH_TX_ADDR}/24 dev {a}"), "");
        txl.push(format!("link set {a} up"), "");
        txl.push(format!("neigh replace {VETH_RX_ADDR} lladdr {VETH_RX_MAC} dev {a} nud permanent"), "");
        txl.run(self.ip_tx.as_deref(), tx)?;
        crate::timing::mark("veth and tx links");
        let mut rxl = Lines::default();
        rxl.push("link set lo up".into(), "");
        rxl.push(format!("addr add {VETH_RX_ADDR}/24 dev {b}"), "");
        rxl.push(format!("link set {b} up"), "");
        rxl.push(format!("neigh replace {VETH_TX_ADDR} lladdr {VETH_TX_MAC} dev {b} nud permanent"), "");
        rxl.run(self.ip_rx.as_deref(), rx)?;
        crate::timing::mark("rx links");
        // 3. The NAPI recipe: the two ends' ethtool at once.
        let (rx_gro, tx_tso) = std::thread::scope(|sc| {
            let tx_tso = sc.spawn(|| set_offloads(&txs, a, &[(Offload::Tso, false), (Offload::Gso, false)]));
            let rx_gro = set_offloads(&rxs, b, &[(Offload::Gro, true)]);
            (rx_gro, tx_tso.join().unwrap_or_else(|_| Err(KernelError::Internal("the ethtool thread panicked".into()))))
        });
        rx_gro.map_err(|e| unavailable("veth NAPI mode (ethtool -K gro on on the peer)", e))?;
        tx_tso.map_err(|e| unavailable("veth NAPI mode (ethtool -K tso off gso off on the sender)", e))?;
        crate::timing::mark("offloads");
        let threaded = format!("/sys/class/net/{b}/threaded");
        match d.napi {
            NapiMode::Threaded => {
                rxs.write_file(&threaded, "1").map_err(|e| unavailable("napi = \"threaded\"", e))?;
                // The kthread appears when threading is switched on; its pid changes
                // whenever NAPI is re-enabled, so look it up after every toggle.
                let mut pids = Vec::new();
                for _ in 0..50 {
                    pids = crate::names::napi_threads_of(b);
                    if pids.len() >= d.tx_queues as usize {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                if pids.is_empty() {
                    return Err(KernelError::Unavailable(format!(
                        "napi = \"threaded\": {threaded} accepted 1 but no napi/{b}-* kthread appeared"
                    )));
                }
                for &p in &pids {
                    if let Err(e) = pin(p, opt.consumer_cpu) {
                        self.report.notes.push(format!("could not pin napi kthread {p} to CPU {}: {e}", opt.consumer_cpu));
                    }
                }
                self.report.napi_pids = pids;
            }
            NapiMode::Softirq => {
                // Default 0 already; written anyway so the mode is explicit.
                let _ = rxs.write_file(&threaded, "0");
            }
        }
        crate::timing::mark("napi mode");
        // 4. XPS.
        if let Some(masks) = xps_masks(&d.xps, d.tx_queues as usize, crate::online_cpus()) {
            for (i, mask) in masks.iter().enumerate() {
                txs.write_file(&format!("/sys/class/net/{a}/queues/tx-{i}/xps_cpus"), mask)
                    .map_err(|e| unavailable("device.xps (XPS)", e))?;
            }
        } else if let Some(q) = d.xps_txq {
            let all = all_cpus_mask(crate::online_cpus());
            for i in 0..d.tx_queues {
                let mask = if i == q { all.clone() } else { "0".to_string() };
                txs.write_file(&format!("/sys/class/net/{a}/queues/tx-{i}/xps_cpus"), &mask)
                    .map_err(|e| unavailable(&format!("device.xps_txq = {q} (XPS)"), e))?;
            }
        }
        // 5. The qdisc.
        self.install_qdisc(tx, a, scn, kv)?;
        crate::timing::mark("qdisc");
        // 6. BQL.
        self.configure_bql(&txs, a, scn)?;
        crate::timing::mark("bql");
        // 7. Rules.
        if scn.consumer.nrules > 0 {
            let backend = RuleBackend::detect().ok_or_else(|| {
                KernelError::Unavailable("neither nft nor iptables-restore is installed".into())
            })?;
            crate::rules::load(rx, scn.consumer.nrules, opt.rule_scope, &opt.flood_ports, backend)
                .map_err(|e| unavailable(&format!("consumer.nrules = {}", scn.consumer.nrules), e))?;
            self.report.rules = Some(backend);
        }
        self.check_globals(scn);
        Ok(())
    }

    /// Configures the tap the tap reader created in the sender namespace.
    pub fn configure_tap(&mut self, scn: &Scenario, kv: KernelVersion) -> Result<()> {
        let n = self.names.clone();
        let (tx, t) = (n.ns_tx.as_str(), n.tap.as_str());
        let d = &scn.device;
        self.report.tx_dev = t.to_string();
        // tun's ptr_ring has txqueuelen slots (tun_queue_resize on a change).
        let mut l = Lines::default();
        l.push("link set lo up".into(), "");
        l.push(format!("link set {t} txqueuelen {}", d.ring_size), "");
        l.push(format!("addr add {TAP_ADDR}/24 dev {t}"), "");
        l.push(format!("link set {t} up"), "");
        l.push(format!("neigh replace {TAP_PEER_ADDR} lladdr {} dev {t} nud permanent", tap_peer_mac()), "");
        l.run(self.ip_tx.as_deref(), tx)?;
        let mut spec = scn.clone();
        if d.ring_size != d.txqueuelen {
            // The device has one tx_queue_len for both the ring and the qdisc's default
            // limit: give the qdisc its limit explicitly where it takes one.
            let kind = spec.qdisc.kind.clone();
            let has_limit = spec.qdisc.params.iter().any(|(k, _)| k == "limit");
            let mut map: std::collections::BTreeMap<String, darkbuf_model::params::ParamValue> =
                spec.qdisc.params.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            match kind.as_str() {
                "pfifo" | "pfifo_head_drop" if !has_limit => {
                    map.insert("limit".into(), darkbuf_model::params::ParamValue::Int(d.txqueuelen as i64));
                }
                "bfifo" if !has_limit => {
                    map.insert("limit".into(), darkbuf_model::params::ParamValue::Int(d.txqueuelen as i64 * 1514));
                }
                "pfifo_fast" | "htb" | "mq" => {
                    return Err(KernelError::Unavailable(format!(
                        "device.ring_size = {} differs from device.txqueuelen = {}: a tap's ring and {kind}'s limit are both its tx_queue_len; make them equal",
                        d.ring_size, d.txqueuelen
                    )))
                }
                _ => {}
            }
            spec.qdisc.params = darkbuf_model::params::Params::new(map);
        }
        self.install_qdisc(tx, t, &spec, kv)?;
        Ok(())
    }

    fn install_qdisc(&mut self, ns: &str, dev: &str, scn: &Scenario, kv: KernelVersion) -> Result<()> {
        if let Some(i) = &scn.ingress {
            self.install_ingress(ns, dev, i, kv)?;
        }
        self.install_qdisc_spec(ns, dev, &scn.qdisc, scn.device.tx_queues, kv)
    }

    /// Ingress shaping as SQM sets it up (sqm-scripts' `simple.qos`): an ifb in the
    /// device's namespace, an `ingress` qdisc on the device whose filter redirects
    /// every packet to it (`u32 match u32 0 0`, which every kernel with `cls_u32` has,
    /// where `matchall` needs 4.8+ and a module; `act_mirred`), and the scenario's
    /// tree as the ifb's root. The ifb goes with the namespace.
    fn install_ingress(&mut self, ns: &str, dev: &str, ing: &darkbuf_scenario::IngressSpec, kv: KernelVersion) -> Result<()> {
        let ifb = ing.ifb.as_str();
        let mut l = Lines::default();
        l.push(format!("link add {ifb} type ifb"), "ingress shaping: an ifb device (ip link add NAME type ifb: CONFIG_IFB)");
        l.push(format!("link set {ifb} up"), "");
        let ip = self.ip_tx.clone().filter(|_| ns == self.names.ns_tx);
        l.run(ip.as_deref(), ns)?;
        let lines = [
            format!("qdisc add dev {dev} handle ffff: ingress"),
            format!("filter add dev {dev} parent ffff: protocol all prio 1 u32 match u32 0 0 action mirred egress redirect dev {ifb}"),
        ];
        let what = ["the ingress qdisc (CONFIG_NET_SCH_INGRESS)", "the redirect to the ifb (CONFIG_NET_CLS_U32 and CONFIG_NET_ACT_MIRRED)"];
        if let Some((i, err)) = self.tc_batch(ns, &lines)? {
            return Err(KernelError::Unavailable(format!(
                "ingress shaping needs {} in kernel {kv}: `tc {}` failed: {}",
                what[i.min(1)],
                lines[i.min(1)],
                err.trim()
            )));
        }
        self.install_qdisc_spec(ns, ifb, &ing.qdisc, 1, kv)
    }

    /// `lines` through the run's `tc` batch of namespace `ns` (or one `tc -n NS -batch -`);
    /// tc stops at the first line it rejects: its index and tc's reason.
    fn tc_batch(&self, ns: &str, lines: &[String]) -> Result<Option<(usize, String)>> {
        Ok(match self.tc_tx.as_deref().filter(|_| ns == self.names.ns_tx) {
            Some(b) => b.exec(lines, "qdisc show dev lo").err(),
            None => match session::batch_once("tc", Some(ns), lines).map_err(|e| KernelError::Unavailable(format!("cannot run tc: {e}")))? {
                Ok(_) => None,
                Err((i, o)) => Some((i, session::batch_reason(&o))),
            },
        })
    }

    /// The qdisc tree `spec` as `dev`'s root, in namespace `ns`.
    fn install_qdisc_spec(&mut self, ns: &str, dev: &str, spec: &darkbuf_scenario::QdiscSpec, tx_queues: u32, kv: KernelVersion) -> Result<()> {
        let cmds = crate::tcargs::qdisc_commands(dev, spec, tx_queues, kv)?;
        // The whole tree through the run's `tc` batch (or one `tc -n NS -batch -`); tc
        // stops at the first line it rejects and names it.
        let lines: Vec<String> = cmds.iter().map(|c| c.iter().map(|a| session::sh_quote(a)).collect::<Vec<_>>().join(" ")).collect();
        if let Some((i, err)) = self.tc_batch(ns, &lines)? {
            let c = &cmds[i];
            let kind = if c.first().map(|s| s.as_str()) == Some("class") { "class of" } else { "qdisc" };
            let what = if err.contains("Specified qdisc kind is unknown") || err.contains("qdisc kind is unknown") {
                format!("qdisc `{}` is not available in kernel {kv} (not built in, and no module can be loaded)", qdisc_kind_of(c))
            } else {
                format!("tc rejected the {kind} `{}`", qdisc_kind_of(c))
            };
            return Err(KernelError::Unavailable(format!("{what}: `tc {}`: {err}", c.join(" "))));
        }
        Ok(())
    }

    /// `[lan]` on veth (the module docs): the client namespace, the LAN veth pair, the
    /// routes and forwarding, `[lan.qdisc]` on both ends. After [`Self::setup_veth`].
    pub fn setup_lan(&mut self, scn: &Scenario, lan: &darkbuf_scenario::LanSpec, kv: KernelVersion) -> Result<()> {
        let n = self.names.clone();
        let (tx, rx, cl) = (n.ns_tx.as_str(), n.ns_rx.as_str(), n.ns_lan.as_str());
        let (l, c) = (n.dev_lan_router.as_str(), n.dev_lan_client.as_str());
        // The namespace is listed before it is made: teardown tolerates one never made.
        self.namespaces.push(cl.to_string());
        let add = [format!("netns add {cl}")];
        if let Err((_, why)) = session::process_ip(&add).map_err(|e| cmd::not_installed("ip", e))? {
            return Err(unavailable("creating the [lan] client's network namespace", KernelError::Internal(format!("`ip {}` failed: {why}", add[0]))));
        }
        let cls = Arc::new(NsThread::start(cl)?);
        self.lan_thread = Some(cls.clone());
        let txs = self.tx_thread.clone().ok_or_else(|| KernelError::Internal("the router's namespace has no thread".into()))?;
        let qlen = scn.device.txqueuelen;
        let mut rl = Lines::default();
        rl.push(format!("link add {l} address {LAN_ROUTER_MAC} numtxqueues 1 numrxqueues 1 type veth peer name {c} address {LAN_CLIENT_MAC} numtxqueues 1 numrxqueues 1 netns {cl}"), "creating the [lan] veth pair");
        rl.push(format!("link set {l} txqueuelen {qlen}"), "");
        rl.push(format!("addr add {LAN_ROUTER_ADDR}/24 dev {l}"), "");
        rl.push(format!("link set {l} up"), "");
        rl.push(format!("neigh replace {LAN_CLIENT_ADDR} lladdr {LAN_CLIENT_MAC} dev {l} nud permanent"), "");
        rl.run(self.ip_tx.as_deref(), tx)?;
        let mut cll = Lines::default();
        cll.push("link set lo up".into(), "");
        cll.push(format!("link set {c} txqueuelen {qlen}"), "");
        cll.push(format!("addr add {LAN_CLIENT_ADDR}/24 dev {c}"), "");
        cll.push(format!("link set {c} up"), "");
        cll.push(format!("neigh replace {LAN_ROUTER_ADDR} lladdr {LAN_ROUTER_MAC} dev {c} nud permanent"), "");
        cll.push(format!("route add {}/24 via {LAN_ROUTER_ADDR} dev {c}", net24(VETH_RX_ADDR)), "a route from the [lan] client to the peer");
        cll.run(None, cl)?;
        let mut pl = Lines::default();
        pl.push(format!("route add {}/24 via {VETH_TX_ADDR} dev {}", net24(LAN_CLIENT_ADDR), n.dev_rx), "a route from the peer back to the [lan] client");
        pl.run(self.ip_rx.as_deref(), rx)?;
        // ip_forward() runs only with forwarding on (ip_rcv_finish() -> ip_route_input()
        // hands a packet for another host to ip_forward() only then).
        txs.write_file("/proc/sys/net/ipv4/ip_forward", "1").map_err(|e| unavailable("net.ipv4.ip_forward = 1 in the router", e))?;
        // No GRO on either end: veth_xmit() then has no NAPI to feed and takes
        // __netif_rx() (the per-CPU backlog), as the simulator's LAN pair does.
        let off = ["tso", "off", "gso", "off", "gro", "off"];
        let (rr, cr) = std::thread::scope(|sc| {
            let cr = sc.spawn(|| cls.must("ethtool", &[&["-K", c][..], &off[..]].concat()));
            let rr = txs.must("ethtool", &[&["-K", l][..], &off[..]].concat());
            (rr, cr.join().unwrap_or_else(|_| Err(KernelError::Internal("the ethtool thread panicked".into()))))
        });
        rr.map_err(|e| unavailable("[lan] veth offloads (ethtool -K tso off gso off gro off)", e))?;
        cr.map_err(|e| unavailable("[lan] veth offloads (ethtool -K tso off gso off gro off)", e))?;
        self.install_qdisc_spec(tx, l, &lan.qdisc, 1, kv)?;
        self.install_qdisc_spec(cl, c, &lan.qdisc, 1, kv)?;
        Ok(())
    }

    /// The namespace the traffic's near end runs in: the `[lan]` client's once it is
    /// set up, else the sender's.
    pub fn near_ns(&self) -> String {
        if self.lan_thread.is_some() { self.names.ns_lan.clone() } else { self.names.ns_tx.clone() }
    }

    /// The near end's address (see [`Self::near_ns`]).
    pub fn near_addr(&self) -> Ipv4Addr {
        if self.lan_thread.is_some() { LAN_CLIENT_ADDR } else { VETH_TX_ADDR }
    }

    /// The near end's device: the `[lan]` client's veth, else the sender's.
    pub fn near_dev(&self) -> String {
        if self.lan_thread.is_some() { self.names.dev_lan_client.clone() } else { self.names.dev_tx.clone() }
    }

    fn configure_bql(&mut self, sh: &NsThread, dev: &str, scn: &Scenario) -> Result<()> {
        let b = &scn.device.bql;
        let dir0 = format!("/sys/class/net/{dev}/queues/tx-0/byte_queue_limits");
        let present = sh.is_dir(&dir0);
        self.report.bql_present = present;
        if !present {
            if b.enabled {
                return Err(KernelError::Unavailable(format!(
                    "device.bql.enabled = true: kernel {} has no BQL on {} ({dir0} does not exist; veth BQL is the unmerged \"veth: BQL\" series); set device.bql.enabled = false",
                    crate::uname_release(),
                    if scn.device.driver() == Driver::Veth { "veth" } else { "tap" }
                )));
            }
            return Ok(());
        }
        let (min, max) = if b.enabled {
            (b.limit_min, b.limit_max)
        } else {
            self.report.notes.push("BQL exists on this device but the scenario disables it: limit_min = DQL_MAX_LIMIT, so it never stops the queue".into());
            (darkbuf_model::dql::DQL_MAX_LIMIT, darkbuf_model::dql::DQL_MAX_LIMIT)
        };
        // limit_max before limit_min, so min <= max holds at every step.
        let ms = (b.hold_time_ns / 1_000_000).max(1);
        let mut files = Vec::new();
        for i in 0..scn.device.tx_queues {
            let dir = format!("/sys/class/net/{dev}/queues/tx-{i}/byte_queue_limits");
            files.push((format!("{dir}/limit_max"), max.to_string()));
            files.push((format!("{dir}/limit_min"), min.to_string()));
            files.push((format!("{dir}/hold_time"), ms.to_string()));
        }
        sh.write_files(&files).map_err(|e| unavailable("BQL limit_max, limit_min and hold_time", e))?;
        if b.enabled && b.completion == darkbuf_scenario::Completion::Coalesced {
            sh.must("ethtool", &["-C", dev, "tx-usecs", &b.tx_usecs.to_string()])
                .map_err(|e| unavailable("device.bql.completion = \"coalesced\" (ethtool -C tx-usecs)", e))?;
        }
        if b.enabled {
            self.report.notes.push("BQL's unit and completion points are the driver's own; device.bql.unit and completion only describe them".into());
        }
        Ok(())
    }

    /// Global sysctls darkbuf does not change: note when the scenario assumes others.
    fn check_globals(&mut self, scn: &Scenario) {
        let d = &scn.device;
        for (key, file, want) in [
            ("device.netdev_budget", "/proc/sys/net/core/netdev_budget", d.netdev_budget as u64),
            ("device.netdev_budget_usecs", "/proc/sys/net/core/netdev_budget_usecs", d.netdev_budget_usecs),
            ("device.gro_normal_batch", "/proc/sys/net/core/gro_normal_batch", d.gro_normal_batch as u64),
        ] {
            if let Some(have) = std::fs::read_to_string(file).ok().and_then(|s| s.trim().parse::<u64>().ok()) {
                if have != want {
                    self.report.notes.push(format!(
                        "{key} = {want} but this machine has {have} ({file} is global; darkbuf does not change it)"
                    ));
                }
            }
        }
    }

    /// No namespaces, threads or batches yet, and an empty report.
    fn empty(names: Names, driver: Driver) -> Topology {
        Topology {
            names,
            driver,
            namespaces: Vec::new(),
            torn_down: false,
            report: SetupReport::default(),
            tx_thread: None,
            rx_thread: None,
            tc_tx: None,
            ip_tx: None,
            ip_rx: None,
            lan_thread: None,
        }
    }

    /// The parked topology if its key is `key`; one parked under another key is torn
    /// down (what could not be removed goes to `notes`), and None returned.
    pub fn take_parked(key: &str, notes: &mut Vec<String>) -> Option<Topology> {
        let parked = PARKED.lock().unwrap_or_else(|e| e.into_inner()).take();
        match parked {
            Some((k, t)) if k == key => Some(t),
            Some((_, mut t)) => {
                notes.extend(t.teardown().into_iter().map(|e| format!("teardown of the run before: {e}")));
                None
            }
            None => None,
        }
    }

    /// Tears down whatever is parked (the guest agent's end). Returns what could not be
    /// removed.
    pub fn release_parked() -> Vec<String> {
        let parked = PARKED.lock().unwrap_or_else(|e| e.into_inner()).take();
        parked.map(|(_, mut t)| t.teardown()).unwrap_or_default()
    }

    /// Parks this veth topology for the next run with `key` instead of tearing it down.
    /// What a run leaves that a fresh setup would not have goes first: the root qdisc
    /// `kind` (deleted, so that the device is back on its default `noqueue` and the next
    /// tree starts with zeroed counters; `tc qdisc replace` of the same kind would keep
    /// them) and the TCP metrics cache of both namespaces (`ip tcp_metrics flush all`:
    /// `tcp_init_metrics()` would otherwise start the next connection from this run's
    /// ssthresh and RTT). If either fails, the topology is torn down as usual. `self` is
    /// left an empty shell with the setup report. Returns what could not be removed.
    pub fn park(&mut self, key: String, kind: &str) -> Vec<String> {
        if self.driver != Driver::Veth || self.torn_down {
            return self.teardown();
        }
        let (tx, rx, a) = (self.names.ns_tx.clone(), self.names.ns_rx.clone(), self.names.dev_tx.clone());
        let qdisc_gone = kind == "noqueue" || matches!(self.tc_batch(&tx, &[format!("qdisc del dev {a} root")]), Ok(None));
        if !qdisc_gone {
            return self.teardown();
        }
        // A connection still closing would cache its metrics after the flush
        // (`tcp_update_metrics()` runs as it enters TIME_WAIT, or at the last ACK).
        let closed = |sh: &Option<Arc<NsThread>>| {
            sh.as_ref().is_some_and(|t| ["tcp", "tcp6"].iter().all(|f| t.read_proc_net(f).is_none_or(|text| tcp_all_closed(&text))))
        };
        let end = std::time::Instant::now() + PARK_CLOSE_WAIT;
        while !(closed(&self.tx_thread) && closed(&self.rx_thread)) {
            if std::time::Instant::now() >= end {
                return self.teardown();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let flushed = |b: &Option<Arc<Batch>>, ns: &str| {
            let mut l = Lines::default();
            l.push("tcp_metrics flush all".into(), "");
            l.run(b.as_deref(), ns).is_ok()
        };
        if !(flushed(&self.ip_tx, &tx) && flushed(&self.ip_rx, &rx)) {
            return self.teardown();
        }
        let mut shell = Topology::empty(self.names.clone(), self.driver);
        shell.torn_down = true;
        shell.report = self.report.clone();
        let t = std::mem::replace(self, shell);
        let old = PARKED.lock().unwrap_or_else(|e| e.into_inner()).replace((key, t));
        old.map(|(_, mut o)| o.teardown()).unwrap_or_default()
    }

    /// A parked veth topology made ready for a run of the same key: the run's qdisc tree
    /// on the sender's device (the rest of [`Self::setup_veth`] already holds).
    pub fn reuse_veth(&mut self, scn: &Scenario, kv: KernelVersion) -> Result<()> {
        let (tx, a) = (self.names.ns_tx.clone(), self.names.dev_tx.clone());
        self.install_qdisc(&tx, &a, scn, kv)
    }

    /// Removes everything; safe to call twice. Returns what could not be removed.
    pub fn teardown(&mut self) -> Vec<String> {
        if self.torn_down {
            return Vec::new();
        }
        self.torn_down = true;
        // The threads and batches first (close() joins them): a thread or process left in
        // a namespace keeps it alive.
        for sh in [self.tx_thread.take(), self.rx_thread.take(), self.lan_thread.take()].into_iter().flatten() {
            sh.close();
        }
        for b in [self.tc_tx.take(), self.ip_tx.take(), self.ip_rx.take()].into_iter().flatten() {
            b.close();
        }
        let mut errors = Vec::new();
        if self.namespaces.is_empty() {
            return errors;
        }
        // Through the process's `ip -batch`, one namespace at a time (a failure ends that
        // batch; the next line gets a new one), going on past one that is gone.
        for ns in self.namespaces.iter().rev() {
            let del = [format!("netns del {ns}")];
            let mut r = session::process_ip(&del);
            if !matches!(r, Ok(Ok(()))) {
                // Once more with a new batch (the old one may have been killed).
                r = session::process_ip(&del);
            }
            match r {
                Ok(Ok(())) => {}
                Ok(Err((_, why))) => {
                    for l in why.lines().map(str::trim) {
                        if !l.is_empty() && !l.contains("No such file") {
                            errors.push(format!("ip netns del {ns}: {l}"));
                        }
                    }
                }
                Err(e) => errors.push(format!("ip netns del {ns}: {e}")),
            }
        }
        errors
    }

    /// Whether this run's NAPI kthreads and namespaces are gone, waiting up to `wait` for
    /// the kernel's asynchronous namespace cleanup. Returns what is still there.
    pub fn remaining(&self, wait: Duration) -> Vec<String> {
        let end = std::time::Instant::now() + wait;
        loop {
            let mut left: Vec<String> = crate::names::darkbuf_namespaces()
                .into_iter()
                .filter(|n| self.namespaces.contains(n))
                .map(|n| format!("netns {n}"))
                .collect();
            for dev in [&self.names.dev_rx, &self.names.dev_tx, &self.names.tap] {
                for p in crate::names::napi_threads_of(dev) {
                    left.push(format!("napi kthread of {dev} (pid {p})"));
                }
            }
            if left.is_empty() || std::time::Instant::now() >= end {
                return left;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        // Not eprintln!: a standard error that cannot be written (2>/dev/full) would
        // panic here, in a drop.
        use std::io::Write as _;
        for e in self.teardown() {
            let _ = writeln!(std::io::stderr(), "darkbuf: teardown: {e}");
        }
    }
}

/// The /24 network `a` is in.
fn net24(a: Ipv4Addr) -> Ipv4Addr {
    let o = a.octets();
    Ipv4Addr::new(o[0], o[1], o[2], 0)
}

fn qdisc_kind_of(c: &[String]) -> String {
    // `qdisc replace dev D root handle 1: KIND ...` / `... parent 1:1 KIND` / `class ... classid C KIND`.
    let known = darkbuf_model::qdisc::ALL_KINDS;
    c.iter().find(|w| known.contains(&w.as_str())).cloned().unwrap_or_else(|| c.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// /proc/net/tcp's `st`: only LISTEN (0A), TIME_WAIT (06) and CLOSE (07) count as
    /// done; FIN_WAIT1 (04) or LAST_ACK (09) is a connection that may still cache its
    /// metrics.
    #[test]
    fn closing_connections_are_seen() {
        let head = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";
        let row = |st: &str| format!("   0: 0100C80A:9C40 0200C80A:D2F4 {st} 00000000:00000000 00:00000000 00000000     0        0 0 1\n");
        assert!(tcp_all_closed(head));
        assert!(tcp_all_closed(&format!("{head}{}{}{}", row("0A"), row("06"), row("07"))));
        for st in ["01", "04", "05", "08", "09", "0B"] {
            assert!(!tcp_all_closed(&format!("{head}{}{}", row("0A"), row(st))), "{st}");
        }
    }

    #[test]
    fn cpu_masks() {
        assert_eq!(all_cpus_mask(2), "00000003");
        assert_eq!(all_cpus_mask(32), "ffffffff");
        assert_eq!(all_cpus_mask(33), "00000001,ffffffff");
        assert_eq!(all_cpus_mask(0), "00000001");
    }

    /// veth's backpressure left at its default runs as the kernel has it, with a note;
    /// a given value, another driver, or a 6.16+ kernel change nothing.
    #[test]
    fn unset_backpressure_follows_the_kernel() {
        let veth = darkbuf_scenario::load_str("t.toml", "[device]\ndriver = \"veth\"\n[[traffic]]\nkind = \"udp\"\n", &[]).unwrap();
        let (old, new) = (KernelVersion(6, 1, 0), KernelVersion(6, 16, 0));
        let (ran, note) = kernel_defaults(&veth, old).expect("6.1 has no ring stop");
        assert!(!ran.device.backpressure && !ran.device.backpressure_given);
        assert!(note.contains("kernel 6.1.0") && note.contains("without it"), "{note}");
        assert!(kernel_defaults(&veth, new).is_none());
        let given = darkbuf_scenario::load_str("t.toml", "[device]\ndriver = \"veth\"\nbackpressure = true\n[[traffic]]\nkind = \"udp\"\n", &[]).unwrap();
        assert!(kernel_defaults(&given, old).is_none());
        assert!(preflight(&given, old).is_err(), "a given value the kernel lacks is refused");
        let set = darkbuf_scenario::load_str("t.toml", "[device]\ndriver = \"veth\"\n[[traffic]]\nkind = \"udp\"\n", &["device.backpressure=true".into()]).unwrap();
        assert!(set.device.backpressure_given && kernel_defaults(&set, old).is_none());
        let tun = darkbuf_scenario::load_str("t.toml", "[device]\ndriver = \"tun\"\n[consumer]\nkind = \"reader\"\n[[traffic]]\nkind = \"udp\"\n", &[]).unwrap();
        assert!(kernel_defaults(&tun, old).is_none());
    }

    /// A TCP entry's grow_skb left at its default runs as the kernel has it: 6.1 without
    /// tcp_grow_skb(), 6.10 with; a given one stays, and so does every other entry.
    #[test]
    fn unset_grow_skb_follows_the_kernel() {
        let text = "[device]\ndriver = \"veth\"\nbackpressure = false\n[[traffic]]\nkind = \"tcp\"\n[[traffic]]\nkind = \"ping\"\n[[traffic]]\nkind = \"tcp\"\ngrow_skb = true\n";
        let s = darkbuf_scenario::load_str("t.toml", text, &[]).unwrap();
        let grow = |s: &Scenario| s.traffic.iter().filter_map(|t| if let darkbuf_scenario::Traffic::Tcp(f) = t { Some(f.grow_skb) } else { None }).collect::<Vec<_>>();
        let (ran, note) = kernel_defaults(&s, KernelVersion(6, 1, 0)).expect("6.1 has no tcp_grow_skb()");
        assert_eq!(grow(&ran), [false, true]);
        assert!(note.starts_with("traffic.0: grow_skb is unset") && note.contains("kernel 6.1.0 does not have it"), "{note}");
        assert!(kernel_defaults(&s, KernelVersion(6, 10, 0)).is_none());
        let old = darkbuf_scenario::load_str("t.toml", text, &["traffic.0.grow_skb=false".into()]).unwrap();
        assert!(kernel_defaults(&old, KernelVersion(6, 12, 0)).is_none(), "given values stay");
    }

    /// A driver's one-queue-per-core map, a list, and no map; CPUs past 31 go in the
    /// next 32-bit group, which sysfs prints first.
    #[test]
    fn xps_maps() {
        use darkbuf_scenario::XpsSpec;
        assert_eq!(xps_masks(&XpsSpec::Cpu, 2, 4).unwrap(), ["00000005", "0000000a"]);
        assert_eq!(xps_masks(&XpsSpec::Cpus(vec![1, 1, 33]), 3, 40).unwrap(), ["00000000,00000002", "00000000,00000002", "00000002,00000000"]);
        assert_eq!(xps_masks(&XpsSpec::None, 2, 4), None);
    }
}
