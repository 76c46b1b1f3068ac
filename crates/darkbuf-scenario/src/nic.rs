//! The keys of a physical NIC, the path beyond its wire and the far host
//! (`driver = "nic"`, `[device.coalesce]`, `[path]`, `[peer]`), with their bounds.
//!
//! The names follow ethtool (`-g` ring sizes, `-C` coalescing) and tc; the bounds are
//! what the drivers accept (mlx5e's `MLX5E_PARAMS_MINIMUM_LOG_SQ_SIZE`..`MAXIMUM`
//! rings, `MLX5_MAX_COAL_TIME` / `MLX5_MAX_COAL_FRAMES` coalescing).

use crate::diag::Diagnostic;
use crate::resolve::resolve_qdisc_spec;
use crate::section::Sec;
use crate::schema::*;
use crate::tree::V;
use darkbuf_model::qdisc::DevInfo;
use darkbuf_model::units::{self, Rate};

pub const NIC_KEYS: &[&str] = &["model", "rate", "mtu", "tso", "coalesce"];
pub const COALESCE_KEYS: &[&str] = &["tx_usecs", "tx_frames", "cqe_mode", "adaptive_tx", "rx_usecs", "rx_frames", "adaptive_rx"];
pub const PEER_KEYS: &[&str] = &["cpus", "tx_queues", "irq_cpus", "qdisc"];
pub const LAN_KEYS: &[&str] = &["cpus", "rate", "delay", "qdisc"];

/// `MAX_SKB_FRAGS` (17): a maximal skb takes this many fragment descriptors plus one.
pub const MAX_SKB_FRAGS: u32 = 17;
/// The smallest and largest TX ring `ethtool -G` accepts here (mlx5e: 2^6..2^13).
pub const NIC_RING_MIN: u32 = 64;
pub const NIC_RING_MAX: u32 = 8192;
/// The line rates modelled: 10 Mbit/s to 400 Gbit/s.
pub const RATE_MIN_BPS: u64 = 10_000_000;
pub const RATE_MAX_BPS: u64 = 400_000_000_000;

/// The NIC's TX ring size (ethtool -g); the model's default (igb 256, mlx5 1024).
pub(crate) fn ring_size(d: &Sec<'_>, nic: &NicSpec) -> Result<u32, Diagnostic> {
    let default = match nic.model {
        NicModel::Igb => 256,
        NicModel::Mlx5 => 1024,
    };
    let expected = format!("ethtool -G tx {NIC_RING_MIN}..={NIC_RING_MAX}, e.g. 256 (igb) or 1024 (mlx5)");
    let Some(r) = d.int_any("ring_size", &expected)? else { return Ok(default) };
    if (NIC_RING_MIN as i64..=NIC_RING_MAX as i64).contains(&r) {
        return Ok(r as u32);
    }
    Err(d.value_err(
        "ring_size",
        format!(
            "`device.ring_size` = {r}: a NIC's TX ring holds {NIC_RING_MIN}..={NIC_RING_MAX} descriptors \
             (a maximal skb alone takes MAX_SKB_FRAGS + 1 = {}, and the driver stops the queue with \
             MAX_SKB_FRAGS + 4 = {} free)",
            MAX_SKB_FRAGS + 1,
            MAX_SKB_FRAGS + 4
        ),
        Some(format!("expected {expected}")),
    ))
}

/// A NIC's keys (`rate`, `mtu`, `tso`, `[device.coalesce]`) on another driver are an
/// error.
pub(crate) fn refuse_nic_keys(d: &Sec<'_>, driver: Driver) -> Result<(), Diagnostic> {
    if driver == Driver::Nic {
        return Ok(());
    }
    let wifi = driver == Driver::Wifi;
    for k in NIC_KEYS {
        if d.entry(k).is_some() {
            return Err(d.value_err(
                k,
                format!("`device.{k}` is a NIC setting: the {} driver has no line rate or interrupt coalescing", driver.name()),
                Some(if wifi { "a station's rate is [[station]] rate; remove the key".into() } else { "set device.driver = \"nic\", or remove the key".into() }),
            ));
        }
    }
    Ok(())
}

/// A radio's own receive side and the stations' side of the air: a gigabit igb's (the
/// replies' way back); mac80211 segments GSO skbs (no TSO).
pub(crate) fn radio_nic() -> NicSpec {
    NicSpec {
        model: NicModel::Igb,
        rate_bps: 1_000_000_000,
        mtu: 1500,
        tso: false,
        coalesce: Coalesce { tx_usecs: 250, tx_frames: 0, cqe_mode: false, adaptive_tx: false, rx_usecs: 0, rx_frames: 0, adaptive_rx: false },
    }
}

/// `rate`, `mtu`, `tso` and `[device.coalesce]` of a NIC (`driver = "nic"`).
pub(crate) fn resolve_nic(d: &Sec<'_>) -> Result<NicSpec, Diagnostic> {
    let rate_bps = line_rate(d, 1_000_000_000)?;
    // A gigabit-class port is an Intel igb by default (the talk's "on intel"); faster
    // ones a Mellanox mlx5.
    let model_default = if rate_bps <= 2_500_000_000 { "igb" } else { "mlx5" };
    let model = match d.choice("model", model_default, &["igb", "mlx5"])? {
        "mlx5" => NicModel::Mlx5,
        _ => NicModel::Igb,
    };
    let mtu = d.u32("mtu", 1500, 68, 9216)?;
    let tso = d.boolean("tso", true)?;
    let c = d.sub("coalesce")?;
    c.check_keys(COALESCE_KEYS, None)?;
    // igb: the interrupt throttle its dynamic ITR settles at under bulk load
    // (IGB_4K_ITR, 4000 interrupts/s), no frame trigger. mlx5e: tx-usecs 16,
    // tx-frames 32 (MLX5E_PARAMS_DEFAULT_TX_CQ_MODERATION_*), period from the last EQE.
    let (usecs, frames) = match model {
        NicModel::Igb => (250, 0),
        NicModel::Mlx5 => (16, 32),
    };
    let tx_usecs = c.u32("tx_usecs", usecs, 0, 4095)?;
    let tx_frames = c.u32("tx_frames", frames, 0, 65535)?;
    let cqe_mode = c.boolean("cqe_mode", false)?;
    // Adaptive moderation: igb's dynamic ITR (its tx-usecs 3, the driver's default) or
    // mlx5e's TX DIM (`adaptive-tx on`, the driver's default). It picks the period and
    // count itself, so fixed ones beside it are a contradiction.
    let adaptive_tx = c.boolean("adaptive_tx", false)?;
    if adaptive_tx {
        let help = match model {
            NicModel::Igb => "remove the key (igb: ethtool -C DEV tx-usecs 3 is the dynamic mode)",
            NicModel::Mlx5 => "remove the key, or set adaptive_tx = false (ethtool -C DEV adaptive-tx off tx-usecs N)",
        };
        no_fixed_beside_adaptive(&c, ["tx_usecs", "tx_frames"], "adaptive_tx = true: adaptive moderation", help)?;
    }
    // RX moderation. The drivers' own defaults (igb's dynamic ITR, mlx5's 8 us with
    // adaptive-rx) are not the default here: a frame interrupts at once unless set.
    let rx_usecs = c.u32("rx_usecs", 0, 0, 4095)?;
    let rx_frames = c.u32("rx_frames", 0, 0, 65535)?;
    // mlx5e's RX DIM (`adaptive-rx on`, the driver's default where the device moderates
    // CQs). igb has no adaptive-rx of its own: its dynamic ITR is one per vector.
    let adaptive_rx = c.boolean("adaptive_rx", false)?;
    if adaptive_rx {
        if model == NicModel::Igb {
            return Err(c.value_err(
                "adaptive_rx",
                "`device.coalesce.adaptive_rx` = true: igb has no adaptive-rx; its dynamic ITR serves both sides of a vector".into(),
                Some("set adaptive_tx = true for igb's dynamic ITR, or model = \"mlx5\"".into()),
            ));
        }
        let help = "remove the key, or set adaptive_rx = false (ethtool -C DEV adaptive-rx off rx-usecs N)";
        no_fixed_beside_adaptive(&c, ["rx_usecs", "rx_frames"], "adaptive_rx = true: RX DIM", help)?;
    }
    let coalesce = Coalesce { tx_usecs, tx_frames, cqe_mode, adaptive_tx, rx_usecs, rx_frames, adaptive_rx };
    Ok(NicSpec { model, rate_bps, mtu, tso, coalesce })
}

/// A fixed moderation key (`keys`, one side's period and count) set beside the flag
/// that moves them (`what`: "adaptive_tx = true: adaptive moderation"): a contradiction,
/// reported at the key.
fn no_fixed_beside_adaptive(c: &Sec<'_>, keys: [&str; 2], what: &str, help: &str) -> Result<(), Diagnostic> {
    match keys.into_iter().find(|k| c.entry(k).is_some()) {
        Some(k) => Err(c.value_err(k, format!("`device.coalesce.{k}` with {what} sets the period and count itself"), Some(help.into()))),
        None => Ok(()),
    }
}

/// A NIC's line rate at `rate` in section `d` (`device.rate`, `lan.rate`): 10 Mbit/s to
/// 400 Gbit/s, `default` when absent.
fn line_rate(d: &Sec<'_>, default: u64) -> Result<u64, Diagnostic> {
    let Some(e) = d.entry("rate") else { return Ok(default) };
    let key = d.kp("rate");
    let expected = format!("a line rate from 10Mbit to 400Gbit, e.g. \"100Mbit\", \"10Gbit\" ({})", units::RATE_EXPECTED);
    let V::Str(r) = &e.node.v else { return Err(d.type_err(e, "a rate string", Some(expected))) };
    match units::parse_rate(r) {
        Ok(Rate::Bps(b)) if (RATE_MIN_BPS..=RATE_MAX_BPS).contains(&b) => Ok(b),
        Ok(Rate::Bps(b)) => Err(d.value_err("rate", format!("`{key}` = \"{r}\" ({b} bit/s) is out of range"), Some(expected))),
        Ok(_) => Err(d.value_err("rate", format!("`{key}` = \"{r}\" is not a bit rate"), Some(expected))),
        Err(u) => Err(d.value_err("rate", format!("`{key}`: {}", u.message), Some(expected))),
    }
}

/// `[lan]`: the client behind this host when it forwards; with a NIC (a client host
/// behind a second NIC pair) or a veth (a client namespace behind a second veth pair).
pub(crate) fn resolve_lan(top: &Sec<'_>, driver: Driver, device: &Device, machine: &Machine) -> Result<Option<LanSpec>, Diagnostic> {
    if top.entry("lan").is_none() {
        return Ok(None);
    }
    if !matches!(driver, Driver::Nic | Driver::Veth) {
        return Err(top.value_err(
            "lan",
            format!("[lan] puts a client behind this host's NIC or veth, and this host routes for it: the {} driver has no link to route to", driver.name()),
            Some("set device.driver = \"nic\" or \"veth\", or remove the section".into()),
        ));
    }
    let l = top.sub("lan")?;
    l.check_keys(LAN_KEYS, None)?;
    let info = device.dev_info(machine.hz);
    if driver == Driver::Veth {
        for (key, why) in [
            ("cpus", "the client is a network namespace on this machine and shares its CPUs (machine.cpus)"),
            ("rate", "a veth pair has no line rate"),
            ("delay", "a veth pair has no wire delay"),
        ] {
            if l.entry(key).is_some() {
                return Err(l.value_err(key, format!("`lan.{key}` with device.driver = \"veth\": {why}"), Some("remove the key; [lan] on veth takes only [lan.qdisc]".into())));
            }
        }
        let qdisc = resolve_qdisc_spec(&l.sub("qdisc")?, "pfifo_fast", &info)?;
        return Ok(Some(LanSpec { cpus: machine.cpus, rate_bps: 0, delay_ns: 0, qdisc }));
    }
    let cpus = l.u32("cpus", 2, 1, 64)?;
    let rate_bps = line_rate(&l, 1_000_000_000)?;
    let delay_ns = l.duration("delay", 0, false)?;
    if delay_ns > 10_000_000_000 {
        return Err(l.value_err("delay", "`lan.delay` is over 10 s".into(), Some("expected a one-way delay of at most 10s".into())));
    }
    let qdisc = resolve_qdisc_spec(&l.sub("qdisc")?, "pfifo_fast", &info)?;
    Ok(Some(LanSpec { cpus, rate_bps, delay_ns, qdisc }))
}

/// `[path]` and `[peer]` describe what lies beyond a wire: an error on a driver
/// without one (veth, tun).
pub(crate) fn refuse_far_end(top: &Sec<'_>, driver: Driver) -> Result<(), Diagnostic> {
    for k in ["path", "peer"] {
        if top.entry(k).is_some() {
            return Err(top.value_err(
                k,
                format!("[{k}] describes what lies beyond a NIC's wire: the {} driver has none", driver.name()),
                Some("set device.driver = \"nic\", or remove the section".into()),
            ));
        }
    }
    Ok(())
}

/// The NIC `nic` with `[path]` (the wire's far side, each direction) and `[peer]` (the
/// far host), whose qdisc defaults by the device's `txqueuelen` and `nic`'s MTU.
pub(crate) fn resolve_wire(top: &Sec<'_>, nic: NicSpec, txqueuelen: u32, hz: u32) -> Result<NicWire, Diagnostic> {
    let path = crate::path::resolve_path(&top.sub("path")?)?;
    let pe = top.sub("peer")?;
    pe.check_keys(PEER_KEYS, None)?;
    let cpus = pe.u32("cpus", 2, 1, 64)?;
    let tx_queues = pe.u32("tx_queues", 1, 1, 64)?;
    let irq_cpus = pe.cpu_list("irq_cpus", cpus)?.unwrap_or_else(|| vec![(1 % cpus)]);
    let q = pe.sub("qdisc")?;
    let info = DevInfo { tx_queue_len: txqueuelen, mtu_l2: mtu_l2(nic.mtu), hash_key: 0, hz };
    // attach_default_qdiscs() on the far host as on this one: pfifo_fast refuses a zero
    // txqueuelen and the kernel falls back to noqueue.
    let default_kind = if txqueuelen == 0 { "noqueue" } else { "pfifo_fast" };
    let qdisc = resolve_qdisc_spec(&q, default_kind, &info)?;
    Ok(NicWire { nic, path, peer: PeerSpec { cpus, tx_queues, irq_cpus, qdisc } })
}
