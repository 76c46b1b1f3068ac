//! The resolved scenario (see docs/design.md "Scenario file").
//!
//! Times are nanoseconds, sizes bytes. Serializing a `Scenario` gives the `scenario`
//! object of the results JSON: the scenario as it was actually run, defaults included.

use crate::diag::{Diagnostic, DiagnosticKind};
use crate::resolve::BUILTIN_PROFILES;
use darkbuf_model::params::Params;
use darkbuf_model::units::Rate;
use serde::{Serialize, Serializer};

#[derive(Clone, Debug, Serialize)]
pub struct Scenario {
    pub name: String,
    /// Measured time after warmup, ns (> 0).
    pub duration_ns: u64,
    /// Time simulated or run before measuring, ns (>= 0).
    pub warmup_ns: u64,
    /// Interval of the time series (BQL limit/inflight, qdisc backlog, ring occupancy),
    /// ns; 0 = no time series.
    pub sample_interval_ns: u64,
    pub runs: u32,
    pub seed: u64,
    pub machine: Machine,
    /// The device, with what only its driver has: serialized as `device` and, beside it
    /// at the top as the scenario file has them, a NIC's or radio's `path` and `peer`
    /// and a radio's `wifi` (see [`DriverSettings`]).
    #[serde(flatten, serialize_with = "serialize_device")]
    pub device: Device,
    pub qdisc: QdiscSpec,
    pub consumer: Consumer,
    /// Ingress shaping (`[ingress]`, or the tc lines' `ingress` qdisc and `mirred`
    /// redirect): what arrives on the device passes this ifb's root qdisc first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingress: Option<IngressSpec>,
    /// `[lan]`: this host is a router and the traffic's near end is a client behind it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lan: Option<LanSpec>,
    pub traffic: Vec<Traffic>,
    /// `[sysctl]` as given (the kernel's names and values as `sysctl` prints them); what
    /// they set is in the traffic entries' resolved keys (`sysctl.rs`).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub sysctl: std::collections::BTreeMap<String, String>,
    /// The flent test preset the traffic came from (`test = "rrul"`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test: Option<TestSpec>,
    /// The label of this point when it came from a sweep or variant, else empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub label: String,
}

/// `test = "<name>"`: a flent test preset (see the scenario crate's `preset` module).
#[derive(Clone, Debug, Serialize)]
pub struct TestSpec {
    /// flent's test name (`rrul`, `tcp_4up`, ...).
    pub name: String,
    /// flent's `DELAY` (`--delay`): when the bulk flows start, ns.
    pub delay_ns: u64,
    /// flent's test parameters the test ran with (`upload_streams` of `tcp_nup`, and
    /// of `tcp_4up`, whose `.conf` sets it to 4), for the `.flent.gz`'s `TEST_PARAMETERS`.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub parameters: std::collections::BTreeMap<String, u32>,
    /// The `rtt_fair` tests' far hosts `host1` .. `hostN`: each one's extra one-way
    /// delay (`[test_parameters] host_delays`), ns.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub host_delays_ns: Vec<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// Built-in profile name or path to a profile TOML, as given.
    pub profile: String,
    /// A profile file's path to load: a relative path is looked for next to the
    /// scenario file first, then in the working directory. `None` for a built-in
    /// profile.
    #[serde(skip)]
    pub profile_file: Option<std::path::PathBuf>,
    /// Number of CPUs (>= 2: a producer CPU and a consumer CPU).
    pub cpus: u32,
    /// CONFIG_HZ: jiffies per second (100, 250, 300 or 1000).
    pub hz: u32,
    /// Where `profile` was given (its value in the file, or its `--set`), for an error
    /// found when the profile itself is loaded: see [`Machine::profile_error`].
    #[serde(skip)]
    pub(crate) profile_at: Option<Box<Diagnostic>>,
}

/// What `machine.profile` may be, for its errors.
pub fn profile_expected() -> String {
    format!(
        "expected a built-in profile ({}) or the path of a profile TOML file, e.g. profiles/seed-vm.toml (darkbuf calibrate writes one)",
        BUILTIN_PROFILES.join(", ")
    )
}

impl Machine {
    /// A diagnostic at `machine.profile` (file, line and column, or the `--set`) for a
    /// profile that cannot be loaded: `detail` is the loader's reason. The simulator
    /// loads the profile after the scenario is resolved; this keeps its errors as
    /// precise as the scenario's own.
    /// What to load: the resolved file, or the built-in profile's name.
    pub fn profile_source(&self) -> String {
        match &self.profile_file {
            Some(f) => f.display().to_string(),
            None => self.profile.clone(),
        }
    }

    pub fn profile_error(&self, detail: &str) -> Diagnostic {
        let message = format!("`machine.profile` = {} cannot be loaded: {detail}", crate::tree::toml_string(&self.profile));
        match &self.profile_at {
            Some(d) => Diagnostic { message, help: Some(profile_expected()), ..(**d).clone() },
            None => Diagnostic::at(DiagnosticKind::Value, "", "", None, "machine.profile", message, Some(profile_expected())),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Driver {
    Veth,
    Tun,
    /// A physical NIC: descriptor rings, a wire, TX-completion interrupts.
    Nic,
    /// An access point's radio: mac80211's TXQs, airtime scheduler and AQL, the air.
    Wifi,
}

impl Driver {
    pub fn name(self) -> &'static str {
        match self {
            Driver::Veth => "veth",
            Driver::Tun => "tun",
            Driver::Nic => "nic",
            Driver::Wifi => "wifi",
        }
    }

    /// Whether the device leads to a modelled far host (`[peer]`): a NIC's wire, a
    /// radio's stations.
    pub fn has_far_host(self) -> bool {
        matches!(self, Driver::Nic | Driver::Wifi)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NapiMode {
    /// `/sys/class/net/DEV/threaded` = 1: a kthread per NAPI on the consumer CPU.
    Threaded,
    /// NET_RX softirq on the CPU that scheduled the NAPI.
    Softirq,
}

#[derive(Clone, Debug, Serialize)]
pub struct Device {
    /// The name tc lines give this host's device (`dev eth0`): `device.name`.
    pub name: String,
    /// `driver` with the settings only that driver has; read the kind with
    /// [`Device::driver`], the settings by matching the variant.
    #[serde(flatten)]
    pub settings: DriverSettings,
    /// TX queues (veth channels); each feeds the peer's RX queue of the same index.
    pub tx_queues: u32,
    /// TX queues allocated (`ip link add ... numtxqueues N`; `dev->num_tx_queues`). A root
    /// qdisc gets TCQ_F_ONETXQUEUE (and bulk-dequeues by BQL budget) only when this is 1:
    /// veth allocates num_possible_cpus() by default, a single-queue tap 1.
    pub num_tx_queues: u32,
    /// XPS: all local traffic goes to this TX queue. `None` = flow hashing.
    pub xps_txq: Option<u32>,
    /// The XPS CPU map (`/sys/class/net/DEV/queues/tx-N/xps_cpus`).
    pub xps: XpsSpec,
    /// The CPU servicing TX/RX queue i's interrupt and NAPI is `irq_cpus[i % len]`
    /// (veth: the threaded NAPI kthread's CPU; tun: the reader or vhost worker's).
    pub irq_cpus: Vec<u32>,
    /// Driver ring entries: veth 256 (fixed in the kernel), tun/tap: txqueuelen.
    pub ring_size: u32,
    /// dev->tx_queue_len: default limit of pfifo_fast/pfifo/bfifo.
    pub txqueuelen: u32,
    pub napi: NapiMode,
    /// NAPI weight (64).
    pub napi_weight: u32,
    /// net.core.netdev_budget (300), softirq NAPI only.
    pub netdev_budget: u32,
    /// net.core.netdev_budget_usecs; default 2 jiffies' worth (2 * 1e6 / HZ).
    pub netdev_budget_usecs: u64,
    /// net.core.gro_normal_batch (8): packets GRO passes up the stack at once.
    pub gro_normal_batch: u32,
    /// veth >= 6.16: stop the txq on a full ring (NETDEV_TX_BUSY + DRV_XOFF);
    /// tun: IFF_BACKPRESSURE.
    pub backpressure: bool,
    /// Whether the scenario (or a `--set`) gave `backpressure`, rather than leaving it
    /// at the driver's default: a kernel backend runs an unset veth default as the
    /// running kernel has it (`darkbuf_kernel::topo::kernel_defaults()`), and refuses a
    /// given value the kernel does not have. Not part of the results JSON.
    #[serde(skip)]
    pub backpressure_given: bool,
    /// tun backpressure: fraction of the ring consumed before the txq is woken.
    pub wake_threshold: f64,
    pub bql: Bql,
}

impl Device {
    /// `device.driver`: the kind, for the `match`es that only ask which driver it is.
    pub fn driver(&self) -> Driver {
        self.settings.driver()
    }

    /// A NIC's or a radio's line and what lies beyond its wire; `None` on veth and tun,
    /// which have no wire.
    pub fn wire(&self) -> Option<&NicWire> {
        match &self.settings {
            DriverSettings::Nic(w) | DriverSettings::Wifi(w, _) => Some(w),
            DriverSettings::Veth | DriverSettings::Tun => None,
        }
    }

    /// The NIC's line and offloads (a radio's: its receive side), if the device has one.
    pub fn nic(&self) -> Option<&NicSpec> {
        self.wire().map(|w| &w.nic)
    }

    /// `[wifi]`: the radio, its stations and the station of each traffic entry.
    pub fn wifi(&self) -> Option<&crate::wifi::WifiSpec> {
        match &self.settings {
            DriverSettings::Wifi(_, w) => Some(w),
            _ => None,
        }
    }

    /// The interface MTU (IP packet bytes): a NIC's `device.mtu`, else ether_setup()'s 1500.
    pub fn mtu(&self) -> u32 {
        self.nic().map_or(1500, |n| n.mtu)
    }

    /// The L2 MTU (`psched_mtu()`: MTU + hard header), as qdiscs size quanta by it.
    pub fn mtu_l2(&self) -> u32 {
        mtu_l2(self.mtu())
    }

    /// What a qdisc built on this device for checking or reading its parameters sees
    /// (`txqueuelen`, the L2 MTU, CONFIG_HZ `hz`; no hash key).
    pub fn dev_info(&self, hz: u32) -> darkbuf_model::qdisc::DevInfo {
        darkbuf_model::qdisc::DevInfo { tx_queue_len: self.txqueuelen, mtu_l2: self.mtu_l2(), hash_key: 0, hz }
    }
}

/// `psched_mtu()`: the MTU plus the Ethernet header (ETH_HLEN).
pub(crate) fn mtu_l2(mtu: u32) -> u32 {
    mtu + 14
}

/// `device.driver` with the settings only that driver has. A NIC's line and far end,
/// or a radio's stations, are reachable only through its variant, so a NIC scenario
/// without them cannot be built and the code that drives a NIC gets them by matching,
/// not by unwrapping an `Option`.
///
/// Serialized as the scenario file has it: `driver` and (NIC, radio) `nic` in
/// `device`; `path`, `peer` and `wifi` at the top, by [`serialize_device`].
#[derive(Clone, Debug)]
pub enum DriverSettings {
    Veth,
    Tun,
    /// A physical NIC: its line, the path beyond its wire and the far host.
    Nic(NicWire),
    /// An access point's radio: its receive side and the stations' side of the air (a
    /// gigabit igb's), the far side, and mac80211 with its stations (`[wifi]`).
    Wifi(NicWire, Box<crate::wifi::WifiSpec>),
}

impl DriverSettings {
    pub fn driver(&self) -> Driver {
        match self {
            DriverSettings::Veth => Driver::Veth,
            DriverSettings::Tun => Driver::Tun,
            DriverSettings::Nic(_) => Driver::Nic,
            DriverSettings::Wifi(..) => Driver::Wifi,
        }
    }
}

/// `device`'s keys: `driver` and, with a wire, `nic`.
impl Serialize for DriverSettings {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("driver", &self.driver())?;
        if let DriverSettings::Nic(w) | DriverSettings::Wifi(w, _) = self {
            m.serialize_entry("nic", &w.nic)?;
        }
        m.end()
    }
}

/// The scenario's `device` and its far end beside it (`path`, `peer`, `wifi`), where
/// the results JSON has always had them.
fn serialize_device<S: Serializer>(d: &Device, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(None)?;
    m.serialize_entry("device", d)?;
    if let Some(w) = d.wire() {
        m.serialize_entry("path", &w.path)?;
        m.serialize_entry("peer", &w.peer)?;
    }
    if let Some(w) = d.wifi() {
        m.serialize_entry("wifi", w)?;
    }
    m.end()
}

/// A NIC's line (`driver = "nic"`'s `device.rate`, `mtu`, `tso`, `[device.coalesce]`)
/// and what lies beyond its wire: the path each way (`[path]`) and the far host
/// (`[peer]`).
#[derive(Clone, Debug)]
pub struct NicWire {
    pub nic: NicSpec,
    pub path: PathSpec,
    pub peer: PeerSpec,
}

/// Which driver's defaults and thresholds a NIC follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NicModel {
    /// Intel igb (1 GbE): 256-descriptor rings, interrupt throttling (ITR).
    Igb,
    /// Mellanox mlx5 (25-400 GbE): 1024-entry send queues, CQ moderation.
    Mlx5,
}

/// A physical NIC's line and offloads.
#[derive(Clone, Debug, Serialize)]
pub struct NicSpec {
    pub model: NicModel,
    /// Line rate, bit/s.
    pub rate_bps: u64,
    /// The interface MTU (IP packet bytes).
    pub mtu: u32,
    /// TSO/GSO: TCP may hand the device skbs of up to 64 KB.
    pub tso: bool,
    pub coalesce: Coalesce,
}

/// `ethtool -C`: TX-completion interrupt moderation.
#[derive(Clone, Debug, Serialize)]
pub struct Coalesce {
    /// The moderation period, µs (0 = interrupt at once).
    pub tx_usecs: u32,
    /// ... or as soon as this many completions are pending (0 = no count trigger).
    pub tx_frames: u32,
    /// mlx5's `tx_cqe_moder` private flag: the period runs from the first pending
    /// completion; otherwise (igb's ITR, mlx5's default EQE mode) from the last
    /// interrupt.
    pub cqe_mode: bool,
    pub adaptive_tx: bool,
    /// `ethtool -C rx-usecs`: the RX side of the same interrupt (one vector per channel
    /// serves its TX and RX queue, as mlx5's channels and igb's queue pairs do), µs from
    /// the first frame pending; 0 = a frame interrupts at once (the model's default).
    #[serde(skip_serializing_if = "is_zero")]
    pub rx_usecs: u32,
    /// `ethtool -C rx-frames`: ... or as soon as this many frames are pending (0 = no
    /// count trigger).
    #[serde(skip_serializing_if = "is_zero")]
    pub rx_frames: u32,
    /// `ethtool -C adaptive-rx on` (mlx5): each receive queue's DIM sets its RX
    /// period and count from the RX profiles (`mlx5e_handle_rx_dim()`), starting at
    /// 8 µs / 128 packets.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub adaptive_rx: bool,
}


/// What lies beyond the wire, each direction (netem-like).
#[derive(Clone, Debug, Default, Serialize)]
pub struct PathSpec {
    /// One-way propagation delay, ns.
    pub delay_ns: u64,
    /// netem's loss model, each way (`None`: no loss, and left out of the serialized
    /// scenario).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss: Option<PathLoss>,
    /// netem's `rate`: the path's own bottleneck, bits/s, each way (`None`: the NIC's
    /// wire is the only one). Frames queue for it in the path's netem.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_bps: Option<u64>,
    /// netem's `limit`: frames the path holds (waiting for the rate or on their delay),
    /// beyond which it drops arrivals. `None`: unlimited (an ideal delay line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// netem's jitter (`delay D J`), ns: each frame's delay is drawn around `delay_ns`
    /// (`tabledist()`); 0 = a fixed delay. Frames may then overtake each other.
    #[serde(skip_serializing_if = "is_zero")]
    pub jitter_ns: u64,
    /// The delay's correlation (`delay D J C`), as `set_percent()` holds it; 0 = none.
    #[serde(skip_serializing_if = "is_zero")]
    pub delay_corr: u32,
    /// tc's `distribution` for the jitter (`None`: the kernel's uniform default).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "serialize_distribution")]
    pub distribution: Option<darkbuf_model::netem::Distribution>,
    /// netem's `reorder P [C] [gap G]`: a frame sent at once, ahead of the delayed ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reorder: Option<PathReorder>,
    /// netem's `ecn`: a loss marks an ECN-capable frame CE instead of dropping it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ecn: bool,
}

/// netem's reordering (`reorder P [C] [gap G]`), as tc sends it: `gap` 1 when only a
/// probability is given, so every frame is a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PathReorder {
    /// `q->reorder`, as `set_percent()` holds it.
    pub probability: u32,
    /// `reorder_cor.rho`.
    #[serde(skip_serializing_if = "is_zero")]
    pub correlation: u32,
    /// `q->gap`: frames delayed between two candidates.
    pub gap: u32,
}

fn serialize_distribution<S: serde::Serializer>(d: &Option<darkbuf_model::netem::Distribution>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(d.map_or("uniform", |d| d.name()))
}

/// netem's loss models (`tc qdisc ... netem loss random|state|gemodel ...`), each
/// probability held as netem holds it: a fraction of `u32::MAX` (tc's `set_percent()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "model", rename_all = "lowercase")]
pub enum PathLoss {
    /// `loss random P [C]` (`CLG_RANDOM`): `q->loss` and `loss_cor.rho`.
    Random {
        loss: u32,
        #[serde(skip_serializing_if = "is_zero")]
        corr: u32,
    },
    /// `loss state p13 [p31 [p32 [p23 [p14]]]]` (`CLG_4_STATES`, the GI model).
    State { p13: u32, p31: u32, p32: u32, p23: u32, p14: u32 },
    /// `loss gemodel p [r [1-h [1-k]]]` (`CLG_GILB_ELL`): `h` as the kernel holds it
    /// (tc takes 1-h), `k1` = 1-k as given.
    Gemodel { p: u32, r: u32, h: u32, k1: u32 },
}

impl From<darkbuf_model::netem::LossModel> for PathLoss {
    fn from(m: darkbuf_model::netem::LossModel) -> Self {
        use darkbuf_model::netem::LossModel;
        match m {
            LossModel::Random { loss, corr } => PathLoss::Random { loss, corr },
            LossModel::State { p13, p31, p32, p23, p14 } => PathLoss::State { p13, p31, p32, p23, p14 },
            LossModel::Gemodel { p, r, h, k1 } => PathLoss::Gemodel { p, r, h, k1 },
        }
    }
}

impl PathLoss {
    /// `loss random` with this percentage (for tests and callers that build scenarios).
    pub fn random_pct(pct: f64) -> Self {
        PathLoss::Random { loss: set_percent(pct / 100.0), corr: 0 }
    }
}

pub use darkbuf_model::netem::set_percent;

/// The far host: its CPUs, its NIC's queues and their IRQ CPUs (its own numbering), and
/// the qdisc of its TX path back (replies, ACKs, download flows). Its NIC mirrors this
/// host's (rate, MTU, rings, coalescing, BQL).
#[derive(Clone, Debug, Serialize)]
pub struct PeerSpec {
    pub cpus: u32,
    pub tx_queues: u32,
    pub irq_cpus: Vec<u32>,
    pub qdisc: QdiscSpec,
}

/// `[lan]`: this host forwards. The near end of every `[[traffic]]` entry (the upload
/// senders, the pinger, the download receivers) runs on a client host on this host's
/// LAN side, joined to it by a second NIC pair; this host routes between its LAN NIC
/// and the measured device (`ip_forward()`), as the routers, modems and access points
/// of the bufferbloat tests do. Both LAN NICs mirror the device's NIC (model, MTU,
/// TSO, ring, coalescing, BQL) at their own line rate, with one TX queue each. The LAN
/// link's driver is the device's (`Device::driver()`: `nic` or `veth`).
///
/// With `driver = "veth"` the client is a network namespace on this machine, joined to
/// this host's namespace (the router) by a second veth pair; the router forwards onto
/// the measured veth toward the peer namespace. The three namespaces share the
/// machine's CPUs, and a veth pair has no line rate and no delay.
#[derive(Clone, Debug, Serialize)]
pub struct LanSpec {
    /// The client's CPUs; `[[traffic]] cpu` numbers them (a download's sender runs on
    /// the far host, and numbers its CPUs). veth: the machine's, which it shares.
    pub cpus: u32,
    /// The LAN link's line rate, bit/s (0 on veth: none).
    pub rate_bps: u64,
    /// The LAN link's one-way delay, ns (0 on veth).
    pub delay_ns: u64,
    /// The root qdisc of both LAN NICs (the client's uploads, this host's forwarding
    /// of downloads and ACKs toward the client).
    pub qdisc: QdiscSpec,
}

/// The XPS map a scenario asks for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum XpsSpec {
    /// No map: `skb_tx_hash()` picks the queue.
    None,
    /// The driver's map: CPU c sends on queue c % tx_queues (one queue per core).
    Cpu,
    /// `xps[i]` is the CPU in TX queue i's `xps_cpus`.
    #[serde(untagged)]
    Cpus(Vec<u32>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BqlUnit {
    /// veth's VETH_BQL_UNIT: one unit per packet.
    Packet,
    /// skb->len, as hardware drivers charge.
    Byte,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Completion {
    /// netdev_tx_completed_queue() per consumed packet (veth BQL v5).
    PerPacket,
    /// Once at the end of veth_poll(), for the charged packets consumed in it.
    PerPoll,
    /// Time-based coalescing (veth BQL v7 5/5, `ethtool -C tx-usecs`).
    Coalesced,
}

#[derive(Clone, Debug, Serialize)]
pub struct Bql {
    pub enabled: bool,
    pub unit: BqlUnit,
    pub completion: Completion,
    /// Coalescing window in microseconds; 0 = per-packet.
    pub tx_usecs: u32,
    pub limit_min: u32,
    pub limit_max: u32,
    /// DQL slack hold time, ns (sysfs hold_time; kernel default 1 s = HZ jiffies).
    pub hold_time_ns: u64,
}

/// Ingress shaping as SQM sets it up: the device's `ingress` qdisc redirects every
/// arriving packet (`action mirred egress redirect`) to the ifb device `ifb`, whose
/// root qdisc `qdisc` it then passes before the host's stack (`ifb_xmit()` hands it
/// back to `netif_receive_skb()`).
#[derive(Clone, Debug, Serialize)]
pub struct IngressSpec {
    pub ifb: String,
    pub qdisc: QdiscSpec,
}

/// The root qdisc with tc's own parameter names. For `mq`, `child` is the qdisc
/// instantiated per TX queue.
#[derive(Clone, Debug, Serialize)]
pub struct QdiscSpec {
    pub kind: String,
    #[serde(serialize_with = "serialize_params")]
    pub params: Params,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub child: Option<Box<QdiscSpec>>,
}

impl QdiscSpec {
    /// The parameters the model's `qdisc::build()` takes: `params`, and for a qdisc
    /// with a child (netem's `[qdisc.child]`) that child as the table `child` with its
    /// `kind`. (mq's child is the per-queue qdisc, built on its own.)
    pub fn model_params(&self) -> Params {
        let mut p = self.params.clone();
        if let (Some(c), false) = (self.child.as_deref(), self.kind == "mq") {
            let mut cp = c.model_params();
            cp.insert("kind", darkbuf_model::params::ParamValue::Str(c.kind.clone()));
            p.insert("child", darkbuf_model::params::ParamValue::Table(cp));
        }
        p
    }
}

fn serialize_params<S: Serializer>(p: &Params, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(None)?;
    for (k, v) in p.iter() {
        m.serialize_entry(k, &ParamJson(v))?;
    }
    m.end()
}

/// A qdisc parameter as JSON: scalars as themselves, `[[qdisc.class]]` as an array of objects.
struct ParamJson<'a>(&'a darkbuf_model::params::ParamValue);

impl Serialize for ParamJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use darkbuf_model::params::ParamValue;
        use serde::ser::SerializeSeq;
        match self.0 {
            ParamValue::Int(i) => s.serialize_i64(*i),
            ParamValue::Float(f) => s.serialize_f64(*f),
            ParamValue::Str(st) => s.serialize_str(st),
            ParamValue::Bool(b) => s.serialize_bool(*b),
            ParamValue::Table(t) => ParamsJson(t).serialize(s),
            ParamValue::Tables(ts) => {
                let mut seq = s.serialize_seq(Some(ts.len()))?;
                for t in ts {
                    seq.serialize_element(&ParamsJson(t))?;
                }
                seq.end()
            }
        }
    }
}

struct ParamsJson<'a>(&'a Params);

impl Serialize for ParamsJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_params(self.0, s)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConsumerKind {
    /// The veth peer's NAPI poll runs the stack.
    Napi,
    /// tun/tap: a user-space read loop.
    Reader,
    /// tun/tap: vhost-net consuming in batches.
    Vhost,
}

/// Which received packets the consumer's netfilter rules apply to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RulesMatch {
    /// Every packet (the seeds' setup: the rules sit in the input hook unconditionally).
    All,
    /// UDP only: the probes (ICMP) skip them.
    Udp,
    /// The flood's packets only (its destination port).
    Flood,
}

#[derive(Clone, Debug, Serialize)]
pub struct Consumer {
    pub kind: ConsumerKind,
    /// Netfilter rules the received packets traverse.
    pub nrules: u32,
    /// Which received packets traverse them (the seeds' setup: all).
    pub rules_match: RulesMatch,
    /// Extra per-packet cost in the receiving application or reader, ns.
    pub app_cost_ns: u64,
}

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Traffic {
    Udp(UdpFlood),
    Ping(Ping),
    Tcp(TcpFlow),
    Irtt(Irtt),
    Voip(crate::voip::Voip),
    Rr(crate::rr::Rr),
    /// Short TCP flows at Poisson arrivals (`web.rs`).
    Web(crate::web::WebFlows),
}

/// Serde's `skip_serializing_if` for a switch that defaults to on.
fn is_true(v: &bool) -> bool {
    *v
}

/// `net.ipv4.tcp_tso_rtt_log`'s default since 5.18 (`tcp_sk_init()`).
pub const TCP_TSO_RTT_LOG_DEFAULT: u8 = 9;

/// The default `tso_rtt_log` is left out of the scenario's record.
fn is_default_tso_rtt_log(v: &u8) -> bool {
    *v == TCP_TSO_RTT_LOG_DEFAULT
}

/// Serde's `skip_serializing_if` for a count or a duration that defaults to 0.
fn is_zero<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

impl Traffic {
    /// Its extra one-way delay on the wire (`path_delay`), ns.
    pub fn path_delay_ns(&self) -> u64 {
        match self {
            Traffic::Udp(u) => u.path_delay_ns,
            Traffic::Ping(p) => p.path_delay_ns,
            Traffic::Tcp(t) => t.path_delay_ns,
            Traffic::Irtt(i) => i.path_delay_ns,
            Traffic::Voip(v) => v.path_delay_ns,
            Traffic::Rr(r) => r.path_delay_ns,
            Traffic::Web(w) => w.tcp.path_delay_ns,
        }
    }

    /// The entry's `name` (flent's data-set name for a preset's entries), or "".
    pub fn name(&self) -> &str {
        match self {
            Traffic::Udp(u) => &u.name,
            Traffic::Ping(p) => &p.name,
            Traffic::Tcp(t) => &t.name,
            Traffic::Irtt(i) => &i.name,
            Traffic::Voip(v) => &v.name,
            Traffic::Rr(r) => &r.name,
            Traffic::Web(w) => &w.name,
        }
    }
}

/// An isochronous UDP prober as irtt(1) runs one (`irtt client -i INTERVAL -l LENGTH
/// --dscp DSCP`), echoed by the far end's `irtt server`.
#[derive(Clone, Debug, Serialize)]
pub struct Irtt {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Send interval, ns (irtt's `-i`, default 1 s).
    pub interval_ns: u64,
    /// UDP payload bytes (irtt's `-l`; its default 0 means the minimum header, which
    /// with irtt's default options is [`IRTT_MIN_LENGTH`] bytes).
    pub length: u32,
    /// DSCP of the requests and, as irtt's server echoes it, of the replies.
    pub dscp: u8,
    /// The client's CPU (taskset).
    pub cpu: u32,
    /// Extra one-way delay on the wire for this entry's packets, both ways, beyond
    /// `[path]` (a netem `delay` per far host, as flent's `rtt_fair` tests use): ns.
    #[serde(skip_serializing_if = "is_zero")]
    pub path_delay_ns: u64,
    /// When the first request is sent and when sending stops (ns since the run's
    /// start; `None` = the end of the run).
    pub start_ns: u64,
    pub stop_ns: Option<u64>,
}

/// irtt's minimum packet with its default options: magic 3 + flags 1 + conn token 8 +
/// seqno 4, received count 4 + window 8 (`--stats=both`), and wall + monotonic receive
/// and send timestamps 4 x 8 (`--tstamp=both --clock=both`), in requests and replies
/// alike (irtt's packet.go `fcaps`).
pub const IRTT_MIN_LENGTH: u32 = 60;

/// A congestion control, by its `net.ipv4.tcp_congestion_control` name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Cc {
    Reno,
    Cubic,
    Bbr,
    Dctcp,
}

impl Cc {
    /// Every congestion control a scenario may name, by its kernel name.
    pub const ALL: [Cc; 4] = [Cc::Reno, Cc::Cubic, Cc::Bbr, Cc::Dctcp];

    /// The kernel's name (`tcp_congestion_ops.name`).
    pub fn name(self) -> &'static str {
        match self {
            Cc::Reno => "reno",
            Cc::Cubic => "cubic",
            Cc::Bbr => "bbr",
            Cc::Dctcp => "dctcp",
        }
    }

    /// The congestion control of kernel name `name`.
    pub fn from_name(name: &str) -> Option<Cc> {
        Cc::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Whether the kernel's congestion control asks for pacing when it starts
    /// (`bbr_init()`'s SK_PACING_NEEDED), which the simulator's does in its
    /// `TcpCongestionOps::init`: for the kernel backend, which cannot ask the kernel.
    pub fn asks_for_pacing(self) -> bool {
        matches!(self, Cc::Bbr)
    }
}

/// Which end sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// This host sends (an upload: iperf3 client, netperf TCP_STREAM).
    Up,
    /// The far host sends (a download: iperf3 -R, netperf TCP_MAERTS).
    Down,
}

/// Bulk TCP flows (`flows` connections, each its own socket and process).
#[derive(Clone, Debug, Serialize)]
pub struct TcpFlow {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    pub cc: Cc,
    pub direction: Direction,
    pub flows: u32,
    /// The sending process's CPU (taskset), on the sending host.
    pub cpu: u32,
    /// Extra one-way delay on the wire for this entry's packets, both ways, beyond
    /// `[path]` (a netem `delay` per far host, as flent's `rtt_fair` tests use): ns.
    #[serde(skip_serializing_if = "is_zero")]
    pub path_delay_ns: u64,
    /// When the flows start, and stop writing (ns since the run's start; `None` = the
    /// end of the run).
    pub start_ns: u64,
    pub stop_ns: Option<u64>,
    /// The application's rate cap (iperf3 `-b`), or `Max`.
    #[serde(serialize_with = "serialize_rate")]
    pub rate: Rate,
    pub dscp: u8,
    /// Negotiate ECN (`net.ipv4.tcp_ecn` = 1 on both ends).
    pub ecn: bool,
    /// Where autotuning stops the sender's `sk_sndbuf` and the receiver's `sk_rcvbuf`
    /// (`tcp_wmem[2]` and `tcp_rmem[2]`), bytes.
    pub sndbuf: u64,
    pub rcvbuf: u64,
    /// `setsockopt(SO_SNDBUF)` on the sending socket (iperf3 `-w`): the buffer is fixed
    /// at twice it (`SOCK_SNDBUF_LOCK`), and autotuning leaves it alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub so_sndbuf: Option<u64>,
    /// Which TCP Small Queues the sending host runs (`tcp_small_queue_check()`).
    pub tsq: Tsq,
    /// `net.ipv4.tcp_limit_output_bytes` on the sending host, bytes.
    pub limit_output_bytes: u64,
    /// `net.ipv4.tcp_tso_rtt_log` on the sending host (5.18+, default 9):
    /// `tcp_tso_autosize()` adds `sk_gso_max_size >> (min_rtt_us >> tso_rtt_log)` bytes to
    /// each TSO skb, so a flow whose min RTT is under 512 us builds 64 KB skbs.
    #[serde(skip_serializing_if = "is_default_tso_rtt_log")]
    pub tso_rtt_log: u8,
    /// The receiving application, and with it the receive buffer and window.
    #[serde(skip_serializing_if = "TcpReceiver::is_instant")]
    pub receiver: TcpReceiver,
    /// Its CPU on the receiving host (`None`: the simulator runs it on the CPU of the
    /// receiving device's first queue, `irq_cpus[0]`; the kernel backend pins it to
    /// its consumer's CPU, the last one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receiver_cpu: Option<u32>,
    /// The receiver's buffer autotuning (Dynamic Right-Sizing) of which kernel, for a
    /// modelled receiver (`receiver` other than `instant`).
    #[serde(skip_serializing_if = "Drs::is_default")]
    pub drs: Drs,
    /// Where CUBIC's HyStart starts a round (`bictcp_hystart_reset()`) in which kernel.
    #[serde(skip_serializing_if = "HystartRoundStart::is_default")]
    pub hystart_round_start: HystartRoundStart,
    /// How `tcp_write_xmit()` sizes what TSQ judges, and whether it defers TSO.
    #[serde(skip_serializing_if = "WriteXmit::is_goal_tsq")]
    pub write_xmit: WriteXmit,
    /// Whether `tcp_write_xmit()` grows the write queue's head skb from the next one
    /// before it sends (`tcp_grow_skb()`, 8ee602c63520 "tcp: try to send bigger TSO
    /// packets", v6.10): `true` (default). `false` is a kernel before v6.10, whose write
    /// queue keeps the skbs `tcp_sendmsg()` built: a head larger than the TSO goal is cut
    /// to the goal (`tso_fragment()`) and its rest goes as an skb of its own, so a flow
    /// whose goal is 35 segments sends 35 and 10 in turn from 45-segment skbs.
    #[serde(skip_serializing_if = "is_true")]
    pub grow_skb: bool,
    /// Whether the scenario (or a `--set`) gave `grow_skb`: a kernel backend runs an
    /// unset one as its kernel has it (`darkbuf_kernel::topo::kernel_defaults()`), and
    /// `compare` runs the simulator the same way. Not part of the results JSON.
    #[serde(skip)]
    pub grow_skb_given: bool,
    /// Whether the sending application holds its socket through each `write()`
    /// (`lock_sock()` .. `release_sock()`, as `tcp_sendmsg()` does): ACKs that arrive
    /// meanwhile wait in the socket's backlog and TSQ's and the timers' work is
    /// deferred to `tcp_release_cb()`, all run on the writer's CPU. `false` is the
    /// simulator's earlier model, where every ACK is processed where it arrives.
    #[serde(skip_serializing_if = "is_true")]
    pub lock_sock: bool,
    /// `SO_MAX_PACING_RATE`, bit/s: caps `sk_pacing_rate` (`tcp_update_pacing_rate()`,
    /// BBR's `bbr_bw_to_pacing_rate()`), and without fq TCP then paces itself
    /// (`SK_PACING_NEEDED`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_pacing_rate: Option<u64>,
    /// Whether each flow opens with the three-way handshake (`tcp_connect()`, SYN and
    /// SYN-ACK through the modelled path), whose round trip is the connection's first
    /// RTT sample and its `tcp_min_rtt()`: `true` (default), as every kernel
    /// connection does. `false` is the simulator's earlier model: flows start
    /// established and take their first sample from their first data ACK, behind the
    /// other flows' initial windows (`docs/validation.md`, issue 51 item 9).
    #[serde(skip_serializing_if = "is_true")]
    pub handshake: bool,
}

/// The order of `tcp_write_xmit()`'s tests in the simulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WriteXmit {
    /// The model's stand-in (the default): TSQ judges an skb at the TSO goal, and there
    /// is no TSO deferral. It gives the state a bulk flow reaches after the half-cwnd
    /// plateau of the kernel's order, whether or not the profile has stalls to end it.
    GoalTsq,
    /// The kernel's order (v4.x to v6.18): `tcp_grow_skb()`, `tcp_tso_should_defer()`,
    /// `tso_fragment()` to the cwnd quota, then `tcp_small_queue_check()` on the skb
    /// just cut. A flow may sit on a plateau of two half-cwnd skbs until a timing
    /// perturbation (the profile's `[[stalls]]`) ends it, as on the development VM.
    Kernel,
}

impl WriteXmit {
    /// The names `write_xmit` takes.
    pub const NAMES: &'static [&'static str] = &["goal-tsq", "kernel"];

    pub fn is_goal_tsq(&self) -> bool {
        *self == WriteXmit::GoalTsq
    }
}

/// The application that reads a TCP flow's data, and what the kernel does around it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TcpReceiver {
    /// An idealised reader: each segment is read in the softirq that queues it, and
    /// the advertised window stays at half of `rcvbuf`. No receive buffer, no reader's
    /// CPU time: the model before the receiver was modelled, and the default.
    Instant,
    /// One thread `poll()`s all of the entry's connections and reads each until
    /// EAGAIN (iperf3 before 3.16, the kernel backend's receiver).
    Poll,
    /// One thread per connection, blocked in `read()` (iperf3 3.16 and later, netperf).
    Blocking,
}

impl TcpReceiver {
    /// The names `receiver` takes.
    pub const NAMES: &'static [&'static str] = &["instant", "poll", "blocking"];

    pub fn is_instant(&self) -> bool {
        *self == TcpReceiver::Instant
    }
}

/// The receiver's Dynamic Right-Sizing (`tcp_rcv_space_adjust()`, its RTT estimate
/// `tcp_rcv_rtt_update()`) of two kernel generations. They differ most on a path whose
/// RTT is under a millisecond, where TCP timestamps (1 ms ticks) echo 0 ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Drs {
    /// v6.7 to v6.15 (seed 001's kernel, February 2025): a 0 ms timestamp echo is a
    /// 1 ms sample (`tcp_rtt_tsopt_us()`'s `if (!delta) delta = 1`), timestamp samples
    /// are smoothed in with gain 1/8 whatever their size, and `tcp_rcv_space_adjust()`
    /// sizes the buffer for `2 x copied + 16 x advmss` bytes per RTT, plus the growth.
    /// So under a millisecond DRS measures what is read per millisecond.
    #[serde(rename = "v6.15")]
    V6_15,
    /// The model's default: the v6.16 series "tcp: receive side improvements" (Eric
    /// Dumazet, May 2025: "tcp: remove zero TCP TS samples for autotuning", "always seek
    /// for minimal rtt in tcp_rcv_rtt_update()", "skip big rtt sample if receive queue
    /// is not empty", the queue-aware `copied`, `tcp_rcvbuf_grow()` with out-of-order
    /// data) and ecfea98b7d0d "tcp: add net.ipv4.tcp_rcvbuf_low_rtt" (v6.19).
    #[serde(rename = "v6.19")]
    V6_19,
}

impl Drs {
    /// The names `drs` takes.
    pub const NAMES: &'static [&'static str] = &["v6.15", "v6.19"];

    pub fn name(&self) -> &'static str {
        match self {
            Drs::V6_15 => "v6.15",
            Drs::V6_19 => "v6.19",
        }
    }

    pub fn is_default(&self) -> bool {
        *self == Drs::V6_19
    }
}

/// Where CUBIC's HyStart starts a new round (`bictcp_hystart_reset()`: `round_start`,
/// `end_seq` = `snd_nxt`, the delay samples restart) once `snd_una` passes the last
/// round's `end_seq`, in three generations of net/ipv4/tcp_cubic.c. The ACK-train and
/// delay tests measure from there, so the round boundary decides where slow start ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum HystartRoundStart {
    /// Up to v5.15: in `cubictcp_cong_avoid()`, on an ACK that finds the flow
    /// cwnd-limited and in slow start, after `hystart_update()` has taken that ACK's
    /// sample.
    #[serde(rename = "v5.15")]
    V5_15,
    /// v5.16 (4e1fddc98d25, "fix spurious Hystart ACK train detections for
    /// not-cwnd-limited flows") to v6.13: at the top of `hystart_update()`, which
    /// `cubictcp_acked()` calls only from cwnd 16 (`hystart_low_window`): below it no
    /// round starts, and the first round begins where cwnd reaches 16.
    #[serde(rename = "v5.16")]
    V5_16,
    /// The model's default: v6.14 (25c1a9ca53db, "fix incorrect HyStart round start
    /// detection"; in stable 6.1.129, 5.15.179 and others): at the top of
    /// `hystart_update()` on every ACK in slow start, the low-window test after it.
    #[serde(rename = "v6.14")]
    #[default]
    V6_14,
}

impl HystartRoundStart {
    /// The names `hystart_round_start` takes.
    pub const NAMES: &'static [&'static str] = &["v5.15", "v5.16", "v6.14"];

    pub fn name(&self) -> &'static str {
        match self {
            HystartRoundStart::V5_15 => "v5.15",
            HystartRoundStart::V5_16 => "v5.16",
            HystartRoundStart::V6_14 => "v6.14",
        }
    }

    pub fn is_default(&self) -> bool {
        *self == HystartRoundStart::V6_14
    }
}

/// `tcp_small_queue_check()` as it was before and after v6.16: whether a paced flow is
/// held to `tcp_limit_output_bytes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tsq {
    /// c73e5807e4f6 "tcp: tsq: no longer use limit_output_bytes for paced flows" (v4.20)
    /// to v6.15: a flow paced by fq or by TCP itself may keep ~1 ms of its pacing rate in
    /// the host queues, however large; `tcp_limit_output_bytes` (1 MiB) caps the others.
    /// Seed 001's kernel (February 2025).
    PacedExempt,
    /// c4221a8cc3a7 "tcp: always use tcp_limit_output_bytes limitation" (v6.16): every
    /// flow is capped, and 9ea3bfa61b09 raised the default to 4 MiB in the same series.
    Always,
}

impl Tsq {
    /// The names `tsq` takes.
    pub const NAMES: &'static [&'static str] = &["paced-exempt", "always"];

    /// Its scenario name (the serialized one).
    pub fn name(self) -> &'static str {
        match self {
            Tsq::PacedExempt => "paced-exempt",
            Tsq::Always => "always",
        }
    }

    /// That kernel's default `tcp_limit_output_bytes`.
    pub fn default_limit_output_bytes(self) -> u64 {
        match self {
            Tsq::PacedExempt => 1 << 20,
            Tsq::Always => 4 << 20,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct UdpFlood {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Which end floods: this host ("up"; over a radio the AP floods its station,
    /// "down", and "up" is the station flooding the AP).
    pub direction: Direction,
    /// The sending process's CPU (taskset): the far host's for a station's flood.
    pub cpu: u32,
    /// Extra one-way delay on the wire for this entry's packets, both ways, beyond
    /// `[path]` (a netem `delay` per far host, as flent's `rtt_fair` tests use): ns.
    #[serde(skip_serializing_if = "is_zero")]
    pub path_delay_ns: u64,
    /// UDP payload bytes (the L2 frame adds 8 + 20 + 14).
    pub size: u32,
    #[serde(serialize_with = "serialize_rate")]
    pub rate: Rate,
    /// Distinct 5-tuples the flood spreads over (round robin).
    pub flows: u32,
    /// Effective sk_sndbuf in bytes: the value given to SO_SNDBUF doubled, as the kernel
    /// stores it; default net.core.wmem_default = 212992.
    pub sndbuf: u64,
    /// skb->priority (`SO_PRIORITY`): 0..15 selects a pfifo_fast band; a tc handle
    /// `MAJOR:MINOR` (written "1:10" in the scenario) selects an htb class.
    pub priority: u32,
    /// DSCP of the IP header (0..63), which cake's diffserv tins classify by.
    pub dscp: u8,
    /// The ECN bits set on the flood's packets (0 = Not-ECT).
    pub ecn: u8,
    /// `SO_MAX_PACING_RATE` on each of the flood's sockets, bit/s: fq paces each flow at
    /// it (`sk_pacing_rate`, as for any socket without EDT stamps); other qdiscs ignore it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_pacing_rate: Option<u64>,
    /// A departure-time source at this rate per flow, bit/s: each datagram's `skb->tstamp`
    /// (`SO_TXTIME` with `SCM_TXTIME`, or a BPF program at egress as Cilium's bandwidth
    /// manager writes it) is the flow's last stamp plus its length at this rate, or now
    /// if that is past (an EDT rate limiter). fq sends it at that time and drops it
    /// beyond its `horizon`; other qdiscs ignore it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub txtime: Option<u64>,
}

fn serialize_rate<S: Serializer>(r: &Rate, s: S) -> Result<S::Ok, S::Error> {
    match r {
        Rate::Max => s.serialize_str("max"),
        Rate::Pps(p) => s.serialize_str(&format!("{p}pps")),
        Rate::Bps(b) => s.serialize_str(&format!("{b}bit")),
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Ping {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Interval between probes, ns.
    pub interval_ns: u64,
    /// ICMP payload bytes (ping's default 56; the L2 frame adds 8 + 20 + 14).
    pub size: u32,
    /// The pinger's CPU (taskset).
    pub cpu: u32,
    /// Extra one-way delay on the wire for this entry's packets, both ways, beyond
    /// `[path]` (a netem `delay` per far host, as flent's `rtt_fair` tests use): ns.
    #[serde(skip_serializing_if = "is_zero")]
    pub path_delay_ns: u64,
}

/// L2 frame length of a UDP datagram with `payload` bytes: + UDP 8 + IPv4 20 + Ethernet 14.
pub fn udp_frame_len(payload: u32) -> u32 {
    payload.saturating_add(42)
}

/// L2 frame length of an ICMP echo with `payload` bytes.
pub fn icmp_frame_len(payload: u32) -> u32 {
    payload.saturating_add(42)
}
