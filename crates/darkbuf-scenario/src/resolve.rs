//! From the document tree to the resolved [`Scenario`]: every key checked, units parsed,
//! defaults applied, cross-field rules enforced.

use crate::diag::{did_you_mean, suggest, Diagnostic, DiagnosticKind as K};
use crate::limits::{self, thousands};
use crate::schema::*;
use crate::section::Sec;
use crate::tree::{Ctx, Node, Origin, V};
use darkbuf_model::params::{ParamError, ParamValue, Params};
use darkbuf_model::qdisc::{self, BuildError, DevInfo};
use darkbuf_model::dql::DQL_MAX_LIMIT;
use darkbuf_model::units::{self, Rate};
use std::collections::BTreeMap;
use std::path::Path;

/// `VETH_RING_SIZE` in drivers/net/veth.c.
pub const VETH_RING_SIZE: u32 = 256;
/// net.core.wmem_default: a socket's sk_sndbuf without SO_SNDBUF.
pub const WMEM_DEFAULT: u64 = 212_992;
/// `SOCK_MIN_SNDBUF` on x86-64: 2 * (2048 + SKB_DATA_ALIGN(sizeof(struct sk_buff))).
pub const SOCK_MIN_SNDBUF: u64 = 4608;
/// Largest UDP payload over IPv4: 65535 - 20 - 8.
pub const MAX_UDP_PAYLOAD: i64 = 65_507;

pub const TOP_KEYS: &[&str] = &[
    "name", "duration", "warmup", "runs", "seed", "sample_interval", "machine", "device", "qdisc",
    "ingress", "consumer", "path", "peer", "lan", "wifi", "station", "traffic", "sweep", "variant", "test", "test_delay",
    "test_parameters", "sysctl",
];
pub const MACHINE_KEYS: &[&str] = &["profile", "cpus", "hz"];
pub const DEVICE_KEYS: &[&str] = &[
    "name",
    "driver",
    "tx_queues",
    "num_tx_queues",
    "xps_txq",
    "xps",
    "irq_cpus",
    "ring_size",
    "txqueuelen",
    "napi",
    "napi_weight",
    "netdev_budget",
    "netdev_budget_usecs",
    "gro_normal_batch",
    "backpressure",
    "wake_threshold",
    "bql",
    "model",
    "rate",
    "mtu",
    "tso",
    "coalesce",
];
pub const BQL_KEYS: &[&str] = &[
    "enabled",
    "unit",
    "completion",
    "tx_usecs",
    "limit_min",
    "limit_max",
    "hold_time",
];
pub const CONSUMER_KEYS: &[&str] = &["kind", "nrules", "rules_match", "app_cost"];
pub const UDP_KEYS: &[&str] = &["kind", "name", "size", "rate", "flows", "sndbuf", "priority", "dscp", "ecn", "cpu", "path_delay", "max_pacing_rate", "txtime", "station", "direction"];
pub const PING_KEYS: &[&str] = &["kind", "name", "interval", "size", "cpu", "path_delay", "station"];
pub const HZ_VALUES: &[i64] = &[100, 250, 300, 1000];
/// The simulator's built-in machine profiles (`machine.profile = "seed-vm"`); anything
/// else must be a path to a profile TOML (ending in `.toml` or containing a `/`).
pub const BUILTIN_PROFILES: &[&str] = &["seed-vm", "baremetal-100g"];

/// Resolves a parsed (and overridden) document, after expanding its test preset
/// (`test = "rrul"`, see [`crate::preset`]) into `[[traffic]]` entries.
pub(crate) fn resolve(
    root: &Node,
    ctx: &Ctx<'_>,
    default_name: &str,
) -> Result<Scenario, Diagnostic> {
    let top = Sec::root(root, ctx);
    top.check_keys(TOP_KEYS, None)?;
    let duration_ns = top.duration_max("duration", 10_000_000_000, true, limits::MAX_DURATION_NS)?;
    let warmup_ns = top.duration_max("warmup", 1_000_000_000, false, limits::MAX_DURATION_NS)?;
    // The driver decides what a test preset may contain (downloads need a NIC): check
    // it first, so a bad driver is reported as such and never read as the default.
    let driver = device_driver(&top.sub("device")?)?;
    match crate::preset::expand(root, &top, warmup_ns.saturating_add(duration_ns), driver)? {
        Some(doc) => resolve_doc(&doc, ctx, default_name),
        None => resolve_doc(root, ctx, default_name),
    }
}

/// `device.driver` (default veth).
fn device_driver(d: &Sec<'_>) -> Result<Driver, Diagnostic> {
    Ok(match d.choice("driver", "veth", &["veth", "tun", "nic", "wifi"])? {
        "tun" => Driver::Tun,
        "nic" => Driver::Nic,
        "wifi" => Driver::Wifi,
        _ => Driver::Veth,
    })
}

/// The top-level keys of a run: its name, length, sampling, runs and seed.
struct RunKeys {
    name: String,
    duration_ns: u64,
    warmup_ns: u64,
    sample_interval_ns: u64,
    runs: u32,
    seed: u64,
}

fn resolve_doc(
    root: &Node,
    ctx: &Ctx<'_>,
    default_name: &str,
) -> Result<Scenario, Diagnostic> {
    let top = Sec::root(root, ctx);
    let run = resolve_run_keys(&top, default_name)?;
    let machine = resolve_machine(&top, ctx)?;
    let device = resolve_device(&top, &machine)?;
    let driver = device.driver();
    let sysctl = crate::sysctl::resolve_sysctl(&top)?;
    let (qdisc, ingress) = resolve_qdiscs(&top, &device, machine.hz, sysctl.default_qdisc)?;
    let consumer = resolve_consumer(&top, driver)?;
    let lan = crate::nic::resolve_lan(&top, driver, &device, &machine)?;

    // [[traffic]]: with [lan], the near end runs on the client and numbers its CPUs.
    let traffic_cpus = lan.as_ref().map_or(machine.cpus, |l| l.cpus);
    let far_cpus = device.wire().map_or(machine.cpus, |w| w.peer.cpus);
    let total_ns = run.warmup_ns.saturating_add(run.duration_ns);
    let traffic = resolve_traffic(&top, traffic_cpus, far_cpus, driver, lan.is_some(), total_ns, &sysctl)?;
    check_inflight(&top, &top.sub("device")?, &traffic, driver, device.ring_size, device.tx_queues)?;

    // [sweep] and [[variant]]: not part of the scenario, but checked for shape.
    crate::sweep::file_sweep(&top)?;
    crate::sweep::file_variants(&top)?;
    let test = crate::preset::requested(&top)?.map(|r| TestSpec {
        name: r.name.into(),
        delay_ns: r.delay_ns,
        parameters: r.streams.iter().map(|(p, n)| (p.to_string(), *n)).collect(),
        host_delays_ns: r.hosts,
    });

    Ok(Scenario {
        name: run.name,
        duration_ns: run.duration_ns,
        warmup_ns: run.warmup_ns,
        sample_interval_ns: run.sample_interval_ns,
        runs: run.runs,
        seed: run.seed,
        machine,
        device,
        qdisc,
        ingress,
        consumer,
        lan,
        traffic,
        test,
        sysctl: sysctl.given,
        label: String::new(),
    })
}

/// `name`, `duration`, `warmup`, `sample_interval` (at most `MAX_SAMPLES` per series),
/// `runs` and `seed`.
fn resolve_run_keys(top: &Sec<'_>, default_name: &str) -> Result<RunKeys, Diagnostic> {
    let name = top.string("name", default_name)?;
    let duration_ns = top.duration_max("duration", 10_000_000_000, true, limits::MAX_DURATION_NS)?;
    let warmup_ns = top.duration_max("warmup", 1_000_000_000, false, limits::MAX_DURATION_NS)?;
    let sample_interval_ns = top.duration("sample_interval", 100_000_000, false)?;
    if sample_interval_ns > 0 && duration_ns / sample_interval_ns > limits::MAX_SAMPLES {
        return Err(top.value_err(
            "sample_interval",
            format!(
                "`sample_interval` = {} over `duration` = {} ms gives {} samples per series; at most {}",
                top.entry("sample_interval").map_or("100ms".into(), |e| e.node.v.show()),
                duration_ns / 1_000_000,
                thousands(duration_ns / sample_interval_ns + 1),
                thousands(limits::MAX_SAMPLES)
            ),
            Some(format!(
                "expected a sample_interval of at least {} us for this duration, or \"0s\" for no time series",
                (duration_ns / limits::MAX_SAMPLES).div_ceil(1000).max(1)
            )),
        ));
    }
    let runs = top.u32("runs", 1, 1, limits::MAX_RUNS)?;
    let seed = top.int("seed", 1, 0, i64::MAX)? as u64;
    Ok(RunKeys { name, duration_ns, warmup_ns, sample_interval_ns, runs, seed })
}

/// `[machine]`: the profile (a built-in name or a file next to the scenario), CPUs, HZ.
fn resolve_machine(top: &Sec<'_>, ctx: &Ctx<'_>) -> Result<Machine, Diagnostic> {
    let m = top.sub("machine")?;
    m.check_keys(MACHINE_KEYS, None)?;
    let profile = m.string("profile", "seed-vm")?;
    let profile_file = profile_file(ctx.file, &profile);
    check_profile(&m, &profile, profile_file.as_deref())?;
    let profile_at = Some(Box::new(excerpt(ctx.diag(K::Value, &m.origin("profile"), "machine.profile", "", None))));
    let cpus = m.u32("cpus", 2, 2, 64)?;
    let hz_expected = "one of 100, 250, 300, 1000";
    let hz = match m.int_any("hz", hz_expected)? {
        None => 250,
        Some(h) if HZ_VALUES.contains(&h) => h as u32,
        Some(h) => {
            return Err(m.value_err(
                "hz",
                format!("`machine.hz` = {h} is not a CONFIG_HZ value"),
                Some(format!("expected {hz_expected}")),
            ))
        }
    };
    Ok(Machine { profile, profile_file, cpus, hz, profile_at })
}

/// `[device]` with its `[device.bql]` and what only its driver has: a NIC's line and far
/// end (`[path]`, `[peer]`), a WiFi radio's `[wifi]` and stations.
fn resolve_device(top: &Sec<'_>, machine: &Machine) -> Result<Device, Diagnostic> {
    let (cpus, hz) = (machine.cpus, machine.hz);
    let d = top.sub("device")?;
    d.check_keys(DEVICE_KEYS, None)?;
    let driver = device_driver(&d)?;
    crate::nic::refuse_nic_keys(&d, driver)?;
    crate::wifi::refuse_wifi(top, driver)?;
    let tx_queues = crate::wifi::tx_queues(&d, driver)?;
    let (xps_txq, num_tx_queues, xps) = device_xps(&d, driver, cpus, tx_queues)?;
    // By default a queue's consumer (threaded NAPI kthread, tun reader) runs away from
    // the senders on CPU 0: queue i on CPU 1 + i % (cpus - 1).
    let irq_cpus = d.cpu_list("irq_cpus", cpus)?.unwrap_or_else(|| (1..cpus).collect());
    let txqueuelen = d.u32(
        "txqueuelen",
        // tun/tap's TUN_READQ_SIZE; everything else ether_setup()'s DEFAULT_TX_QUEUE_LEN.
        if driver == Driver::Tun { 500 } else { 1000 },
        // 0 is what `ip link set DEV txqueuelen 0` takes: a qdisc whose limit defaults
        // to it (pfifo, bfifo, htb's direct queue and leaves) then drops every packet.
        // A tun's ring is sized by it and must hold one.
        if driver == Driver::Tun { 1 } else { 0 },
        u32::MAX,
    )?;
    let settings = driver_settings(top, &d, driver, txqueuelen, hz)?;
    let ring_size = device_ring_size(&d, &settings, txqueuelen)?;
    // A NIC's NAPI runs in NET_RX on its IRQ CPU unless threaded is asked for.
    let napi_default = if driver.has_far_host() { "softirq" } else { "threaded" };
    let napi = match d.choice("napi", napi_default, &["threaded", "softirq"])? {
        "softirq" => NapiMode::Softirq,
        _ => NapiMode::Threaded,
    };
    let napi_weight = d.u32("napi_weight", 64, 1, 256)?;
    let netdev_budget = d.u32("netdev_budget", 300, 1, i32::MAX as u32)?;
    let netdev_budget_usecs = d.int("netdev_budget_usecs", 2 * 1_000_000 / hz as i64, 0, i32::MAX as i64)? as u64;
    let gro_normal_batch = d.u32("gro_normal_batch", 8, 1, i32::MAX as u32)?;
    // veth >= 6.16 stops its queue on a full ring by default; tun's IFF_BACKPRESSURE
    // is opt-in ("Starting with Linux 7.2").
    if driver.has_far_host() && d.entry("backpressure").is_some() {
        return Err(d.value_err(
            "backpressure",
            "`device.backpressure` is a veth/tun option: a NIC always stops its queue when its descriptor ring is nearly full".into(),
            Some("remove device.backpressure; the NIC's stop and wake thresholds are MAX_SKB_FRAGS + 4 and twice that".into()),
        ));
    }
    let backpressure_given = d.entry("backpressure").is_some();
    let backpressure = d.boolean("backpressure", driver != Driver::Tun)?;
    let wake_threshold = d.float("wake_threshold", 0.5, 0.0, 1.0)?;
    let bql = resolve_bql(&d.sub("bql")?, driver)?;
    let device = Device {
        name: device_name(&d)?,
        settings,
        tx_queues,
        num_tx_queues,
        xps_txq,
        xps,
        irq_cpus,
        ring_size,
        txqueuelen,
        napi,
        napi_weight,
        netdev_budget,
        netdev_budget_usecs,
        gro_normal_batch,
        backpressure,
        backpressure_given,
        wake_threshold,
        bql,
    };
    Ok(device)
}

/// What only the driver has: a NIC's line (`device.rate`, `mtu`, `tso`,
/// `[device.coalesce]`), a radio's `[wifi]` and stations, and for both what lies beyond
/// the wire (`[path]`, `[peer]`, whose qdisc defaults by `txqueuelen` and the MTU).
fn driver_settings(top: &Sec<'_>, d: &Sec<'_>, driver: Driver, txqueuelen: u32, hz: u32) -> Result<DriverSettings, Diagnostic> {
    Ok(match driver {
        Driver::Veth => {
            crate::nic::refuse_far_end(top, driver)?;
            DriverSettings::Veth
        }
        Driver::Tun => {
            crate::nic::refuse_far_end(top, driver)?;
            DriverSettings::Tun
        }
        Driver::Nic => DriverSettings::Nic(crate::nic::resolve_wire(top, crate::nic::resolve_nic(d)?, txqueuelen, hz)?),
        Driver::Wifi => {
            let wifi = crate::wifi::resolve_wifi(top)?;
            DriverSettings::Wifi(crate::nic::resolve_wire(top, crate::nic::radio_nic(), txqueuelen, hz)?, Box::new(wifi))
        }
    })
}

/// The device's queue selection: `xps_txq`, `num_tx_queues` and `xps` (a map or
/// `"cpu"`), which may not both steer.
fn device_xps(d: &Sec<'_>, driver: Driver, cpus: u32, tx_queues: u32) -> Result<(Option<u32>, u32, XpsSpec), Diagnostic> {
    let xps_txq = match d.int_opt("xps_txq", 0, 63)? {
        None => None,
        Some(q) if (q as u32) < tx_queues => Some(q as u32),
        Some(q) => {
            return Err(d.value_err(
                "xps_txq",
                format!("`device.xps_txq` = {q} is not a TX queue of the device: tx_queues = {tx_queues}"),
                Some(format!("expected a queue index in 0..={}, or omit xps_txq for flow hashing (or raise device.tx_queues)", tx_queues - 1)),
            ))
        }
    };
    // veth_get_num_queues() = num_possible_cpus(); tun: MAX_TAP_QUEUES with
    // IFF_MULTI_QUEUE, else 1.
    let default_num = match driver {
        Driver::Veth => cpus.max(tx_queues),
        Driver::Tun if tx_queues > 1 => 256,
        Driver::Tun => 1,
        Driver::Nic | Driver::Wifi => tx_queues,
    };
    let num_tx_queues = d.u32("num_tx_queues", default_num, tx_queues, 4096)?;
    let xps = match d.entry("xps") {
        None => XpsSpec::None,
        Some(e) => match &e.node.v {
            V::Array(_) => {
                let cpus_of_queues = d.cpu_list("xps", cpus)?.unwrap_or_default();
                if cpus_of_queues.len() != tx_queues as usize {
                    return Err(d.value_err(
                        "xps",
                        format!("`device.xps` names {} CPUs for {tx_queues} TX queues", cpus_of_queues.len()),
                        Some("expected one CPU per TX queue: xps[i] is the CPU in tx-i's xps_cpus".into()),
                    ));
                }
                XpsSpec::Cpus(cpus_of_queues)
            }
            _ => match d.choice("xps", "none", &["none", "cpu"])? {
                "cpu" => XpsSpec::Cpu,
                _ => XpsSpec::None,
            },
        },
    };
    if xps != XpsSpec::None && xps_txq.is_some() {
        return Err(d.value_err(
            "xps",
            "`device.xps` and `device.xps_txq` both set the XPS map".into(),
            Some("keep one: xps_txq = N steers every CPU to queue N (the selftest's setup); xps = \"cpu\" or a list maps CPUs to queues".into()),
        ));
    }
    Ok((xps_txq, num_tx_queues, xps))
}

/// The driver's ring: tun's from `txqueuelen` (or `ring_size`), veth's fixed
/// `VETH_RING_SIZE`, a NIC's or radio's descriptors.
fn device_ring_size(d: &Sec<'_>, settings: &DriverSettings, txqueuelen: u32) -> Result<u32, Diagnostic> {
    Ok(match settings {
        DriverSettings::Tun => {
            // tun's ring is sized by txqueuelen unless ring_size says otherwise; both
            // are bounded by what ptr_ring_init() accepts.
            let key = if d.entry("ring_size").is_some() { "ring_size" } else { "txqueuelen" };
            let expected = format!("an integer in 1..={}", limits::MAX_TUN_RING);
            let size = match d.int_any("ring_size", &expected)? {
                None => txqueuelen as u64,
                Some(r) if r >= 1 => r as u64,
                Some(r) => {
                    return Err(d.value_err(
                        "ring_size",
                        format!("`device.ring_size` = {r} is out of range"),
                        Some(format!("expected {expected}")),
                    ))
                }
            };
            if size > limits::MAX_TUN_RING as u64 {
                return Err(d.value_err(
                    key,
                    format!("`device.{key}` = {size}: a tun/tap ring holds at most {} entries", limits::MAX_TUN_RING),
                    Some(format!(
                        "expected at most {}: tun's ptr_ring_init() fails with ENOMEM beyond KMALLOC_MAX_SIZE / 8 entries (TUNSETIFF on 6.18 refuses 524289)",
                        limits::MAX_TUN_RING
                    )),
                ));
            }
            size as u32
        }
        DriverSettings::Veth => match d.int_any("ring_size", "256 (veth's ring is fixed at 256 entries, VETH_RING_SIZE in drivers/net/veth.c), or no ring_size")? {
            None => VETH_RING_SIZE,
            Some(256) => VETH_RING_SIZE,
            Some(r) => {
                return Err(d.value_err(
                    "ring_size",
                    format!("`device.ring_size` = {r}: veth's ring is fixed at 256 entries (VETH_RING_SIZE in drivers/net/veth.c)"),
                    Some("remove ring_size or set it to 256; only tun/tap rings are sized (by txqueuelen)".into()),
                ))
            }
        },
        DriverSettings::Nic(w) | DriverSettings::Wifi(w, _) => crate::nic::ring_size(d, &w.nic)?,
    })
}

/// `[device.bql]`: on by default where the driver has a ring and BQL (a NIC), in bytes
/// for a NIC, and the veth BQL series' completion modes.
fn resolve_bql(b: &Sec<'_>, driver: Driver) -> Result<Bql, Diagnostic> {
    b.check_keys(BQL_KEYS, None)?;
    // Drivers with a ring and BQL support keep it on (the talk's "add BQL to every
    // driver"); turning it off is a huge limit_min, as the talk says, or enabled = false.
    let enabled = b.boolean("enabled", driver == Driver::Nic)?;
    crate::wifi::check_bql(b, driver, enabled)?;
    if enabled && driver == Driver::Tun {
        return Err(b.value_err(
            "enabled",
            "`device.bql.enabled` = true: tun/tap has no BQL (drivers/net/tun.c never calls netdev_tx_sent_queue)".into(),
            Some("set device.bql.enabled = false (its ring is bounded by txqueuelen; see device.backpressure), or use driver = \"veth\"".into()),
        ));
    }
    let unit = match b.choice("unit", if driver == Driver::Nic { "byte" } else { "packet" }, &["packet", "byte"])? {
        "byte" => BqlUnit::Byte,
        _ => BqlUnit::Packet,
    };
    if driver == Driver::Nic {
        if unit == BqlUnit::Packet {
            return Err(b.value_err(
                "unit",
                "`device.bql.unit` = \"packet\": a NIC charges BQL in bytes (netdev_tx_sent_queue(txq, skb->len)); one unit per packet is veth's".into(),
                Some("set unit = \"byte\" (the default for a NIC), or use driver = \"veth\"".into()),
            ));
        }
        for k in ["completion", "tx_usecs"] {
            if b.entry(k).is_some() {
                return Err(b.value_err(
                    k,
                    format!("`device.bql.{k}` is the veth BQL series' completion mode: a NIC completes BQL in its TX-completion NAPI poll"),
                    Some("set the interrupt moderation in [device.coalesce] (tx_usecs, tx_frames) instead".into()),
                ));
            }
        }
    }
    let completion = match b.choice("completion", "per-packet", &["per-packet", "per-poll", "coalesced"])? {
        "per-poll" => Completion::PerPoll,
        "coalesced" => Completion::Coalesced,
        _ => Completion::PerPacket,
    };
    let tx_usecs = b.u32("tx_usecs", 100, 0, u32::MAX)?;
    let limit_min = b.u32("limit_min", 0, 0, DQL_MAX_LIMIT)?;
    let limit_max = b.u32("limit_max", DQL_MAX_LIMIT, 0, DQL_MAX_LIMIT)?;
    if limit_max < limit_min {
        let key = if b.entry("limit_max").is_some() { "limit_max" } else { "limit_min" };
        return Err(b.value_err(
            key,
            format!("`device.bql.limit_max` = {limit_max} is below `device.bql.limit_min` = {limit_min}"),
            Some("expected limit_min <= limit_max".into()),
        ));
    }
    let hold_time_ns = b.duration("hold_time", 1_000_000_000, true)?;
    Ok(Bql { enabled, unit, completion, tx_usecs, limit_min, limit_max, hold_time_ns })
}

/// `[qdisc]` (the root, default as `attach_default_qdiscs()` picks it) and the ingress
/// redirect, which a NIC's far host or veth's peer namespace feeds; BQL needs a qdisc.
fn resolve_qdiscs(top: &Sec<'_>, device: &Device, hz: u32, default_qdisc: Option<&'static str>) -> Result<(QdiscSpec, Option<IngressSpec>), Diagnostic> {
    let driver = device.driver();
    let q = top.sub("qdisc")?;
    let dev_info = device.dev_info(hz);
    // attach_default_qdiscs(): net.core.default_qdisc (pfifo_fast), or noqueue on a
    // device with IFF_NO_QUEUE (veth). pfifo_fast_init() refuses a zero tx_queue_len,
    // and the kernel then falls back to noqueue ("default qdisc (pfifo_fast) fail,
    // fallback to noqueue"). mq_init() gives each queue the default qdisc.
    let dflt = default_qdisc.unwrap_or("pfifo_fast");
    let mut mq_child = dflt;
    let default_kind = if let Some(w) = device.wifi() {
        if w.queueing == crate::wifi::Queueing::FqCodelQdisc {
            if default_qdisc.is_some_and(|k| k != "fq_codel") {
                let s = top.sub("sysctl")?;
                return Err(s.value_err(
                    "net.core.default_qdisc",
                    format!("wifi.queueing = \"fq_codel_qdisc\" is net.core.default_qdisc = fq_codel, and [sysctl] sets it to {dflt}"),
                    Some(format!("remove the sysctl, or set wifi.queueing = \"fifo\" for mq with {dflt} per AC")),
                ));
            }
            mq_child = "fq_codel";
        }
        crate::wifi::root_qdisc(w, &q)?
    } else if driver == Driver::Veth || (device.txqueuelen == 0 && dflt == "pfifo_fast") {
        "noqueue"
    } else {
        dflt
    };
    let (qdisc, ingress) = resolve_root_and_ingress(top, &q, (default_kind, mq_child), &dev_info, &device.name)?;
    // What arrives from the far end: a NIC's far host, or on veth the peer namespace
    // (not through a [lan] router, whose client's traffic is forwarded, not received).
    let has_ingress = driver == Driver::Nic || (driver == Driver::Veth && top.entry("lan").is_none());
    if let (Some(i), false) = (&ingress, has_ingress) {
        let key = if top.entry("ingress").is_some() { "ingress" } else { "qdisc" };
        return Err(top.value_err(
            key,
            format!("ingress shaping (the redirect to {}) shapes what arrives from the far end: device.driver = \"{}\"{} has none", i.ifb, driver.name(), if driver == Driver::Veth { " with [lan]" } else { "" }),
            Some("set device.driver = \"nic\" (with [peer] and [path]) or \"veth\" without [lan], or remove the ingress lines".into()),
        ));
    }
    if device.bql.enabled && qdisc.kind == "noqueue" {
        let b = top.sub("device")?.sub("bql")?;
        let why = if driver == Driver::Veth {
            "BQL needs a qdisc: veth only charges BQL when a qdisc is attached (!qdisc_txq_has_no_queue)"
        } else {
            "BQL needs a qdisc: under noqueue, __dev_queue_xmit() drops what comes while BQL has the queue stopped \
             (\"Virtual device ... asks to queue packet!\"), which the model does not build"
        };
        let default = match (q.entry("kind").is_some(), driver) {
            (true, _) => "",
            (false, Driver::Veth) => " (the veth default)",
            (false, _) => " (the default for txqueuelen 0: pfifo_fast refuses it and the kernel falls back to noqueue)",
        };
        return Err(b.value_err(
            "enabled",
            format!("{why}; set [qdisc] kind"),
            Some(format!(
                "the qdisc is noqueue{default}; set [qdisc] kind to one of {}, or set device.bql.enabled = false",
                qdisc::BUILDABLE_KINDS.join(", ")
            )),
        ));
    }
    Ok((qdisc, ingress))
}

/// `[consumer]`: who takes packets off the device (veth's NAPI, tun's reader or
/// vhost-net), its rules and its per-packet application cost.
fn resolve_consumer(top: &Sec<'_>, driver: Driver) -> Result<Consumer, Diagnostic> {
    let c = top.sub("consumer")?;
    c.check_keys(CONSUMER_KEYS, None)?;
    let default_kind = if driver == Driver::Tun { "reader" } else { "napi" };
    let kind = match c.choice("kind", default_kind, &["napi", "reader", "vhost"])? {
        "reader" => ConsumerKind::Reader,
        "vhost" => ConsumerKind::Vhost,
        _ => ConsumerKind::Napi,
    };
    match (driver, kind) {
        (Driver::Veth, ConsumerKind::Reader | ConsumerKind::Vhost) => {
            return Err(c.value_err(
                "kind",
                format!("consumer kind `{}` needs driver = \"tun\": a veth device is consumed by its peer's NAPI poll", if kind == ConsumerKind::Reader { "reader" } else { "vhost" }),
                Some("with device.driver = \"veth\" use consumer.kind = \"napi\" (or omit it); or set device.driver = \"tun\"".into()),
            ))
        }
        (Driver::Tun, ConsumerKind::Napi) => {
            return Err(c.value_err(
                "kind",
                "consumer kind `napi` needs driver = \"veth\": a tun/tap device is consumed by a reader or vhost-net".into(),
                Some("with device.driver = \"tun\" use consumer.kind = \"reader\" or \"vhost\"; or set device.driver = \"veth\"".into()),
            ))
        }
        _ => {}
    }
    let nrules = c.u32("nrules", 0, 0, u32::MAX)?;
    let rules_match = match c.choice("rules_match", "all", &["all", "udp", "flood"])? {
        "udp" => RulesMatch::Udp,
        "flood" => RulesMatch::Flood,
        _ => RulesMatch::All,
    };
    let app_cost_ns = c.duration("app_cost", 0, false)?;
    Ok(Consumer { kind, nrules, rules_match, app_cost_ns })
}

/// A qdisc parameter from its document value. `Err` is the value that cannot be one:
/// its key below `n` ("" for `n` itself, "0.rate" for the rate of a [[qdisc.class]]
/// entry) and its node, so the error points at the offending value itself.
fn param_value<'n>(n: &'n Node, key: &str) -> Result<ParamValue, (String, &'n Node)> {
    Ok(match &n.v {
        V::Int(i) => ParamValue::Int(*i),
        V::Float(f) => ParamValue::Float(*f),
        V::Str(s) => ParamValue::Str(s.clone()),
        V::Bool(b) => ParamValue::Bool(*b),
        // One table (an htb leaf's `qdisc_params = { ... }`): a nested parameter set.
        V::Table(t) if key == "qdisc_params" => {
            let mut map = BTreeMap::new();
            for e in &t.entries {
                let p = param_value(&e.node, &e.key).map_err(|(below, bad)| {
                    let key = if below.is_empty() { e.key.clone() } else { format!("{}.{below}", e.key) };
                    (key, bad)
                })?;
                map.insert(e.key.clone(), p);
            }
            ParamValue::Table(Params::new(map))
        }
        // An array of tables ([[qdisc.class]]): one nested parameter set per element.
        V::Array(items) if !items.is_empty() && items.iter().all(|i| matches!(i.v, V::Table(_))) => {
            let mut tables = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let V::Table(t) = &item.v else { unreachable!("checked above") };
                let mut map = BTreeMap::new();
                for e in &t.entries {
                    let p = param_value(&e.node, &e.key).map_err(|(below, bad)| {
                        let key = if below.is_empty() { format!("{i}.{}", e.key) } else { format!("{i}.{}.{below}", e.key) };
                        (key, bad)
                    })?;
                    map.insert(e.key.clone(), p);
                }
                tables.push(Params::new(map));
            }
            ParamValue::Tables(tables)
        }
        _ => return Err((String::new(), n)),
    })
}

/// A root qdisc spec (`[peer.qdisc]`, `[lan.qdisc]`) with its default kind, in its TOML
/// or its tc form (the far host's device: whatever one name its lines use).
pub(crate) fn resolve_qdisc_spec(q: &Sec<'_>, default_kind: &'static str, dev: &DevInfo) -> Result<QdiscSpec, Diagnostic> {
    let r = |s: &Sec<'_>, root: bool| resolve_qdisc(s, default_kind, dev, root);
    if let Some(t) = crate::tc::section::resolve_tc(q, None, &r)? {
        if t.ingress.is_some() {
            let at = q.entry("tc").or(q.entry("tc_file")).map_or(q.at.clone(), |e| e.node.at.clone());
            return Err(q.ctx.diag(K::Unsupported, &at, &q.kp("tc"), format!("ingress shaping in [{}]: only this host's device takes an ingress qdisc", q.path), Some("move the ingress, ifb and filter lines to [qdisc] tc".into())));
        }
        return Ok(t.root);
    }
    resolve_qdisc(q, default_kind, dev, true)
}

/// An ifb's `tx_queue_len` (`ifb_setup()`: TX_Q_LIMIT): its qdisc's default limit.
pub const IFB_TX_QUEUE_LEN: u32 = 32;

/// `[qdisc]` (TOML or tc lines) and the ingress side: `[ingress]`, or the tc lines'
/// ingress qdisc and redirect.
fn resolve_root_and_ingress(
    top: &Sec<'_>,
    q: &Sec<'_>,
    (default_kind, mq_child): (&'static str, &'static str),
    dev: &DevInfo,
    dev_name: &str,
) -> Result<(QdiscSpec, Option<IngressSpec>), Diagnostic> {
    let ifb_info = DevInfo { tx_queue_len: IFB_TX_QUEUE_LEN, ..dev.clone() };
    let i = top.sub("ingress")?;
    let toml_ingress = if i.t.entries.is_empty() {
        None
    } else {
        let r = |s: &Sec<'_>, root: bool| resolve_qdisc(s, "pfifo_fast", &ifb_info, root);
        match crate::tc::section::resolve_tc(&i, None, &r)? {
            Some(_) => return Err(i.value_err("tc", "[ingress] takes the ifb's qdisc as TOML keys; tc lines for ingress shaping go in [qdisc] tc".into(), Some("tc qdisc add dev eth0 handle ffff: ingress; tc filter add dev eth0 parent ffff: matchall action mirred egress redirect dev ifb0; tc qdisc add dev ifb0 root cake bandwidth 90mbit".into()))),
            None => Some(IngressSpec { ifb: "ifb0".into(), qdisc: resolve_qdisc(&i, "pfifo_fast", &ifb_info, true)? }),
        }
    };
    let r = |s: &Sec<'_>, root: bool| {
        let info = if s.path == "ingress" { &ifb_info } else { dev };
        resolve_qdisc(s, if s.path == "ingress" { "pfifo_fast" } else { default_kind }, info, root)
    };
    match crate::tc::section::resolve_tc(q, Some(dev_name), &r)? {
        None => Ok((resolve_qdisc_in(q, default_kind, mq_child, dev, true)?, toml_ingress)),
        Some(t) if t.ingress.is_some() && toml_ingress.is_some() => Err(i.value_err(
            "kind",
            "[ingress] and the tc lines' ingress redirect both set the ifb's qdisc".into(),
            Some("keep one: the tc lines, or [ingress]".into()),
        )),
        Some(t) => Ok((t.root, t.ingress.or(toml_ingress))),
    }
}

/// `device.name`: what tc lines call this host's device (`dev eth0`). A Linux
/// interface name: 1 to 15 bytes (IFNAMSIZ - 1), no `/`, `:` or white space
/// (`dev_valid_name()`).
fn device_name(d: &Sec<'_>) -> Result<String, Diagnostic> {
    let name = d.string("name", "eth0")?;
    let valid = !name.is_empty() && name.len() < 16 && name != "." && name != ".." && !name.chars().any(|c| c == '/' || c == ':' || c.is_whitespace());
    if !valid {
        return Err(d.value_err(
            "name",
            format!("`device.name` = {name:?} is not a Linux interface name"),
            Some("1 to 15 characters without '/', ':' or spaces (dev_valid_name()), e.g. \"eth0\"".into()),
        ));
    }
    Ok(name)
}

pub(crate) fn resolve_qdisc(q: &Sec<'_>, default_kind: &'static str, dev: &DevInfo, root: bool) -> Result<QdiscSpec, Diagnostic> {
    resolve_qdisc_in(q, default_kind, "pfifo_fast", dev, root)
}

/// [`resolve_qdisc`] where mq's per-queue qdisc defaults to `mq_child`
/// (net.core.default_qdisc).
fn resolve_qdisc_in(q: &Sec<'_>, default_kind: &'static str, mq_child: &'static str, dev: &DevInfo, root: bool) -> Result<QdiscSpec, Diagnostic> {
    let kinds: Vec<&'static str> = qdisc::ALL_KINDS.to_vec();
    let kind = q.choice("kind", default_kind, &kinds)?;
    let buildable = qdisc::BUILDABLE_KINDS.join(", ");
    match kind {
        "noqueue" | "mq" if !root => {
            return Err(q.value_err(
                "kind",
                format!(
                    "`{}` = \"{kind}\": {kind} can only be the root qdisc",
                    q.kp("kind")
                ),
                Some(format!(
                    "the mq child is a per-queue qdisc: one of {buildable}"
                )),
            ))
        }
        "noqueue" => {
            q.check_keys(&["kind"], Some("noqueue takes no parameters"))?;
            return Ok(QdiscSpec {
                kind: kind.into(),
                params: Params::default(),
                child: None,
            });
        }
        "mq" => {
            q.check_keys(&["kind", "child"], Some("mq takes no parameters of its own; configure the per-queue qdisc in [qdisc.child]"))?;
            let c = q.sub("child")?;
            let child = resolve_qdisc(&c, mq_child, dev, false)?;
            return Ok(QdiscSpec {
                kind: kind.into(),
                params: Params::default(),
                child: Some(Box::new(child)),
            });
        }
        _ => {}
    }
    let (map, child) = qdisc_params(q, kind, dev)?;
    let spec = QdiscSpec { kind: kind.into(), params: Params::new(map), child };
    if !qdisc::BUILDABLE_KINDS.contains(&kind) {
        return Err(q.ctx.diag(
            K::Unsupported,
            &q.origin("kind"),
            &q.kp("kind"),
            format!("qdisc `{kind}` is not modelled in the simulator yet"),
            Some(format!("modelled qdiscs: {buildable}")),
        ));
    }
    check_qdisc_builds(q, kind, &spec, dev)?;
    Ok(spec)
}

/// A qdisc section's tc parameters by name (every key but `kind`), and netem's
/// `[child]`; a value no tc parameter can be is blamed where it is written.
fn qdisc_params(q: &Sec<'_>, kind: &str, dev: &DevInfo) -> Result<(BTreeMap<String, ParamValue>, Option<Box<QdiscSpec>>), Diagnostic> {
    let mut map = BTreeMap::new();
    let mut child = None;
    for e in &q.t.entries {
        if e.key == "kind" {
            continue;
        }
        if e.key == "child" && kind == "netem" {
            // netem's child qdisc (`tc qdisc add ... parent 1:1 KIND ...`): any modelled
            // qdisc with its own parameters.
            let c = q.sub("child")?;
            child = Some(Box::new(resolve_qdisc(&c, "pfifo", dev, false)?));
            continue;
        }
        if e.key == "child" {
            return Err(q.ctx.diag(
                K::UnknownKey,
                &e.key_at,
                &q.kp("child"),
                format!(
                    "qdisc {kind} has no child qdisc: only mq and netem take [{}]",
                    q.kp("child")
                ),
                Some(format!(
                    "set {}.kind = \"mq\" or remove [{}]",
                    q.path,
                    q.kp("child")
                )),
            ));
        }
        match param_value(&e.node, &e.key) {
            Ok(p) => {
                map.insert(e.key.clone(), p);
            }
            Err((below, _)) if below.is_empty() => {
                return Err(q.type_err(
                    e,
                    "an integer, float, string or boolean (a tc parameter), or an array of tables such as [[qdisc.class]]",
                    Some(format!(
                        "write it as tc takes it, e.g. {} = 127 or {} = \"5ms\"",
                        e.key, e.key
                    )),
                ))
            }
            // A value inside an entry of an array of tables: blame that value.
            Err((below, bad)) => {
                let key = format!("{}.{below}", q.kp(&e.key));
                let leaf = below.rsplit('.').next().unwrap_or(&below);
                return Err(q.ctx.diag(
                    K::Type,
                    &bad.at,
                    &key,
                    format!(
                        "`{key}` must be an integer, float, string or boolean (a tc parameter), found {}",
                        bad.v.describe()
                    ),
                    Some(format!("write it as tc takes it, e.g. {leaf} = 127 or {leaf} = \"5ms\"")),
                ));
            }
        }
    }
    Ok((map, child))
}

/// Builds the qdisc as the simulator will (`->init()`), so an unknown or invalid
/// parameter is reported at its key or value.
fn check_qdisc_builds(q: &Sec<'_>, kind: &str, spec: &QdiscSpec, dev: &DevInfo) -> Result<(), Diagnostic> {
    let buildable = qdisc::BUILDABLE_KINDS.join(", ");
    match qdisc::build(kind, spec.model_params(), dev) {
        Ok(_) => {}
        Err(BuildError::Param(ParamError::Unknown { key, valid })) => {
            let mut help = suggest(key.rsplit('.').next().unwrap_or(&key), &valid, "parameters");
            if valid.is_empty() {
                help = format!("{kind} takes no parameters");
            }
            return Err(q.ctx.diag(
                K::UnknownKey,
                &q.param_origin(&key, true),
                &q.kp(&key),
                format!("unknown parameter `{key}` for qdisc {kind}"),
                Some(help),
            ));
        }
        Err(BuildError::Param(ParamError::Invalid {
            key,
            message,
            expected,
        })) => {
            return Err(q.ctx.diag(
                K::Value,
                &q.param_origin(&key, false),
                &q.kp(&key),
                format!("`{}`: {message}", q.kp(&key)),
                Some(format!("expected {expected}")),
            ));
        }
        Err(BuildError::NotModelled(k)) => {
            return Err(q.ctx.diag(
                K::Unsupported,
                &q.origin("kind"),
                &q.kp("kind"),
                format!("qdisc `{k}` is not modelled in the simulator yet"),
                Some(format!("modelled qdiscs: {buildable}")),
            ));
        }
        Err(BuildError::UnknownKind(k)) => {
            return Err(q.value_err(
                "kind",
                format!("`{k}` is not a qdisc"),
                Some(format!("valid kinds: {}", qdisc::ALL_KINDS.join(", "))),
            ));
        }
    }
    Ok(())
}

/// Longest `path_delay`, as `path.delay`'s.
pub const MAX_PATH_DELAY_NS: u64 = 10_000_000_000;

/// `[[traffic]] path_delay`: this entry's extra one-way delay on a NIC's wire, both ways
/// (default 0). Only a NIC has a wire to delay it on.
pub(crate) fn path_delay(s: &Sec<'_>, driver: Driver) -> Result<u64, Diagnostic> {
    let ns = s.duration_max("path_delay", 0, false, MAX_PATH_DELAY_NS)?;
    if ns > 0 && driver != Driver::Nic {
        return Err(s.value_err(
            "path_delay",
            format!("`{}` delays this entry's packets on a NIC's wire, and device.driver = \"{}\" has none", s.kp("path_delay"), driver.name()),
            Some("use device.driver = \"nic\" ([path] delay is what every entry shares), or remove path_delay".into()),
        ));
    }
    Ok(ns)
}

/// An optional bit rate key (`max_pacing_rate`, `txtime`): None when absent; `what`
/// says what it sets, for the error.
pub(crate) fn opt_bit_rate(s: &Sec<'_>, key: &str, what: &str) -> Result<Option<u64>, Diagnostic> {
    let Some(e) = s.entry(key) else { return Ok(None) };
    let expected = format!("a bit rate such as \"10Mbit\" ({what}); units: bit, kbit, mbit, gbit, tbit, bps, kbps, mbps, gbps");
    let V::Str(r) = &e.node.v else { return Err(s.type_err(e, "a rate string", Some(expected))) };
    match darkbuf_model::units::parse_rate(r) {
        Ok(darkbuf_model::units::Rate::Bps(b)) if b >= 8 => Ok(Some(b)),
        Ok(darkbuf_model::units::Rate::Bps(_)) => Err(s.value_err(key, format!("`{}` = \"{r}\" is below 1 byte/s (the kernel's unit)", s.kp(key)), Some(expected))),
        Ok(_) => Err(s.value_err(key, format!("`{}` = \"{r}\" is not a bit rate", s.kp(key)), Some(expected))),
        Err(u) => Err(s.value_err(key, format!("`{}`: {}", s.kp(key), u.message), Some(expected))),
    }
}

/// A download on veth comes from the peer namespace into this one; with `[lan]` this
/// namespace is the router, and a download through it to the client is not built.
fn veth_lan_download(s: &Sec<'_>, driver: Driver, lan: bool, direction: Direction) -> Result<(), Diagnostic> {
    if driver == Driver::Veth && lan && direction == Direction::Down {
        return Err(s.value_err(
            "direction",
            format!("`{}` = \"down\" with [lan] on veth: a download through the router to the client is not modelled", s.kp("direction")),
            Some("use direction = \"up\", or remove [lan]".into()),
        ));
    }
    Ok(())
}

/// `[[traffic]]`: `cpus` are the near end's (this host's, or the client's with
/// `[lan]`); a download's sender runs on the far host, of `far_cpus`.
/// `[[traffic]]`: at least one entry and at most `MAX_TRAFFIC`, each a table with a
/// `kind`, resolved by its kind (`MAX_TCP_FLOWS` TCP flows in all).
fn resolve_traffic(top: &Sec<'_>, cpus: u32, far_cpus: u32, driver: Driver, lan: bool, total_ns: u64, sysctl: &crate::sysctl::Sysctl) -> Result<Vec<Traffic>, Diagnostic> {
    let example =
        "add e.g. a [[traffic]] section with kind = \"udp\" (a UDP flood), \"tcp\", \"ping\", \"irtt\", \"voip\", \"rr\" or \"web\"";
    let Some(e) = top.entry("traffic") else {
        return Err(top.ctx.diag(
            K::Value,
            &Origin::File(None),
            "traffic",
            "no [[traffic]]: a scenario needs at least one traffic source",
            Some(example.into()),
        ));
    };
    let items = match &e.node.v {
        V::Array(a) => a,
        _ => return Err(top.type_err(e, "an array of tables ([[traffic]])", Some(example.into()))),
    };
    if items.is_empty() {
        return Err(top.value_err(
            "traffic",
            "`traffic` is empty: a scenario needs at least one traffic source".into(),
            Some(example.into()),
        ));
    }
    if let Some(n) = items.get(limits::MAX_TRAFFIC) {
        return Err(top.ctx.diag(
            K::Value,
            &n.at,
            &format!("traffic.{}", limits::MAX_TRAFFIC),
            format!("{} [[traffic]] entries: a scenario has at most {}", items.len(), limits::MAX_TRAFFIC),
            Some(format!(
                "expected at most {} entries (each flood is a task, a thread and a UDP port); to spread one flood over many sockets use flows = N",
                limits::MAX_TRAFFIC
            )),
        ));
    }
    let mut out = Vec::new();
    let mut tcp_flows = 0u64;
    for (i, n) in items.iter().enumerate() {
        let path = format!("traffic.{i}");
        let t = match &n.v {
            V::Table(t) => t,
            _ => {
                return Err(top.ctx.diag(
                    K::Type,
                    &n.at,
                    &path,
                    format!("`{path}` must be a table, found {}", n.v.describe()),
                    Some(example.into()),
                ))
            }
        };
        let s = Sec {
            t,
            path: path.clone(),
            at: n.at.clone(),
            ctx: top.ctx,
        };
        let Some(_) = s.entry("kind") else {
            return Err(s.ctx.diag(
                K::Value,
                &n.at,
                &s.kp("kind"),
                format!("[[traffic]] entry {i} has no `kind`"),
                Some("set kind = \"udp\" (a UDP flood), \"tcp\", \"ping\", \"irtt\", \"voip\", \"rr\" or \"web\"".into()),
            ));
        };
        let kind = s.choice("kind", "udp", &["udp", "ping", "tcp", "irtt", "voip", "rr", "web"])?;
        let name = s.string("name", "")?;
        if kind == "tcp" {
            let f = crate::tcp::resolve_tcp(&s, cpus, far_cpus, driver, total_ns, name, sysctl)?;
            veth_lan_download(&s, driver, lan, f.direction)?;
            tcp_flows += f.flows as u64;
            if tcp_flows > limits::MAX_TCP_FLOWS as u64 {
                return Err(s.value_err(
                    "flows",
                    format!("the TCP entries up to {path} have {} flows; a scenario has at most {} TCP flows in all", thousands(tcp_flows), thousands(limits::MAX_TCP_FLOWS as u64)),
                    Some("lower flows in this entry or the ones before it".into()),
                ));
            }
            out.push(Traffic::Tcp(f));
        } else if kind == "voip" {
            out.push(Traffic::Voip(crate::voip::resolve_voip(&s, cpus, driver, total_ns, name)?));
        } else if kind == "rr" {
            out.push(Traffic::Rr(crate::rr::resolve_rr(&s, cpus, driver, total_ns, name)?));
        } else if kind == "web" {
            let w = crate::web::resolve_web(&s, cpus, far_cpus, driver, total_ns, name, sysctl)?;
            veth_lan_download(&s, driver, lan, w.tcp.direction)?;
            out.push(Traffic::Web(w));
        } else if kind == "irtt" {
            out.push(Traffic::Irtt(crate::irtt::resolve_irtt(&s, cpus, driver, total_ns, name)?));
        } else if kind == "udp" {
            out.push(Traffic::Udp(resolve_udp(&s, cpus, far_cpus, driver, name, sysctl)?));
        } else {
            out.push(Traffic::Ping(resolve_ping(&s, cpus, driver, total_ns, name)?));
        }
    }
    Ok(out)
}

/// A `kind = "udp"` flood: which end sends, payload size, rate, sockets, send buffer,
/// priority, DSCP and ECN, pacing.
fn resolve_udp(s: &Sec<'_>, cpus: u32, far_cpus: u32, driver: Driver, name: String, sysctl: &crate::sysctl::Sysctl) -> Result<UdpFlood, Diagnostic> {
    s.check_keys(UDP_KEYS, Some("(interval belongs to kind = \"ping\")"))?;
    let direction = udp_direction(s, driver)?;
    let sender_cpus = if crate::wifi::far_sends(driver, direction) { far_cpus } else { cpus };
    let size = s.u32("size", 1400, 1, MAX_UDP_PAYLOAD as u32)?;
    let rate = udp_rate(s)?;
    let flows = s.u32("flows", 1, 1, limits::MAX_FLOWS)?;
    let sndbuf = udp_sndbuf(s, sysctl)?;
    let priority = udp_priority(s)?;
    let dscp = s.int("dscp", 0, 0, 63)? as u8;
    let ecn = udp_ecn(s)?;
    let cpu = s.u32("cpu", 0, 0, sender_cpus - 1)?;
    let path_delay_ns = path_delay(s, driver)?;
    let max_pacing_rate = opt_bit_rate(s, "max_pacing_rate", "SO_MAX_PACING_RATE")?;
    let txtime = opt_bit_rate(s, "txtime", "the rate its departure times are stamped at")?;
    Ok(UdpFlood { name, direction, cpu, path_delay_ns, size, rate, flows, sndbuf, priority, dscp, ecn, max_pacing_rate, txtime })
}

/// A flood's `direction`: over a radio "down" (the AP floods its station, the default)
/// or "up" (the station floods the AP, its frames contending for the air); elsewhere
/// only this host floods ("up").
fn udp_direction(s: &Sec<'_>, driver: Driver) -> Result<Direction, Diagnostic> {
    if driver == Driver::Wifi {
        return Ok(match s.choice("direction", "down", &["down", "up"])? {
            "up" => Direction::Up,
            _ => Direction::Down,
        });
    }
    match s.choice("direction", "up", &["up", "down"])? {
        "up" => Ok(Direction::Up),
        _ => Err(s.value_err(
            "direction",
            format!("`{}` = \"down\": a UDP flood is sent by this host (only over a radio does the far end flood: a station, device.driver = \"wifi\" with direction = \"up\")", s.kp("direction")),
            Some("remove direction (this host floods), or use kind = \"tcp\" with direction = \"down\" for a download".into()),
        )),
    }
}

/// A flood's `rate` (default: as fast as it can send); one that rounds to 0 bit/s is
/// refused.
fn udp_rate(s: &Sec<'_>) -> Result<Rate, Diagnostic> {
    Ok(match s.entry("rate") {
        None => Rate::Max,
        Some(e) => match &e.node.v {
            V::Str(r) => match units::parse_rate(r) {
                Ok(Rate::Bps(0)) => {
                    return Err(s.value_err(
                        "rate",
                        format!("`{}` = \"{r}\" rounds to 0 bit/s", s.kp("rate")),
                        Some(format!("expected {}", units::RATE_EXPECTED)),
                    ))
                }
                Ok(r) => r,
                Err(u) => {
                    return Err(s.value_err(
                        "rate",
                        format!("`{}`: {}", s.kp("rate"), u.message),
                        Some(format!("expected {}", u.expected)),
                    ))
                }
            },
            _ => {
                return Err(s.type_err(
                    e,
                    "a rate string",
                    Some(format!("expected {}", units::RATE_EXPECTED)),
                ))
            }
        },
    })
}

/// A flood's `sndbuf` as `SO_SNDBUF` sets it (doubled, at least `SOCK_MIN_SNDBUF`);
/// without one, `net.core.wmem_default`.
fn udp_sndbuf(s: &Sec<'_>, sysctl: &crate::sysctl::Sysctl) -> Result<u64, Diagnostic> {
    Ok(match s.entry("sndbuf") {
        None => sysctl.wmem_default.unwrap_or(WMEM_DEFAULT),
        Some(e) => {
            let expected = format!(
                "the SO_SNDBUF value: a non-negative integer or {}",
                units::SIZE_EXPECTED
            );
            let v: u64 = match &e.node.v {
                V::Int(i) if *i >= 0 => *i as u64,
                V::Int(i) => {
                    return Err(s.value_err(
                        "sndbuf",
                        format!("`{}` = {i} is negative", s.kp("sndbuf")),
                        Some(expected),
                    ))
                }
                V::Str(t) => units::parse_size_bytes(t).map_err(|u| {
                    s.value_err(
                        "sndbuf",
                        format!("`{}`: {}", s.kp("sndbuf"), u.message),
                        Some(expected.clone()),
                    )
                })?,
                _ => {
                    return Err(s.type_err(
                        e,
                        "a size (integer bytes or a string such as \"1MiB\")",
                        Some(expected),
                    ))
                }
            };
            effective_sndbuf(v)
        }
    })
}

/// A flood's `SO_PRIORITY`: 0..=15, or a class handle `"MAJOR:MINOR"` as tc writes it.
fn udp_priority(s: &Sec<'_>) -> Result<u32, Diagnostic> {
    Ok(match s.entry("priority") {
        Some(e) => match &e.node.v {
            V::Str(h) => match parse_tc_handle(h) {
                Some(v) => v,
                None => {
                    return Err(s.value_err(
                        "priority",
                        format!("`{}` = \"{h}\" is not a tc handle", s.kp("priority")),
                        Some("expected SO_PRIORITY as an integer (0..15 picks a pfifo_fast band) or a class handle \"MAJOR:MINOR\" in hex as tc writes it, e.g. \"1:10\"".into()),
                    ))
                }
            },
            // 0..=15 as documented (TC_PRIO_MAX: pfifo_fast's bands); a class
            // is named by its handle, a string.
            V::Int(p) if !(0..=15).contains(p) => {
                return Err(s.value_err(
                    "priority",
                    format!("`{}` = {p} is out of range", s.kp("priority")),
                    Some("expected SO_PRIORITY 0..=15 (TC_PRIO_MAX; pfifo_fast's band follows it), or a class handle \"MAJOR:MINOR\" in hex as tc writes it, e.g. \"1:10\"".into()),
                ))
            }
            _ => s.int("priority", 0, 0, 15)? as u32,
        },
        None => 0,
    })
}

/// A flood's ECN codepoint: 0..=3 or its name.
fn udp_ecn(s: &Sec<'_>) -> Result<u8, Diagnostic> {
    Ok(match s.entry("ecn") {
        None => 0,
        Some(e) => match &e.node.v {
            V::Str(_) => {
                match s.choice("ecn", "not-ect", &["not-ect", "ect0", "ect1", "ce"])? {
                    "ect1" => 1,
                    "ect0" => 2,
                    "ce" => 3,
                    _ => 0,
                }
            }
            _ => match s.int_opt("ecn", 0, 3) {
                Ok(v) => v.unwrap_or(0) as u8,
                Err(mut d) => {
                    d.help = Some("expected 0..=3 or one of \"not-ect\" (0), \"ect1\" (1), \"ect0\" (2), \"ce\" (3)".into());
                    return Err(d);
                }
            },
        },
    })
}

/// A `kind = "ping"` prober: at most `MAX_PROBES` probes over the run.
fn resolve_ping(s: &Sec<'_>, cpus: u32, driver: Driver, total_ns: u64, name: String) -> Result<Ping, Diagnostic> {
    s.check_keys(
        PING_KEYS,
        Some("(rate, flows, sndbuf, priority and ecn belong to kind = \"udp\")"),
    )?;
    let interval_ns = s.duration("interval", 200_000_000, true)?;
    if total_ns / interval_ns > limits::MAX_PROBES {
        return Err(s.value_err(
            "interval",
            format!(
                "`{}` = {} sends {} probes over warmup + duration ({} ms); at most {}",
                s.kp("interval"),
                s.entry("interval").map_or("200ms".into(), |e| e.node.v.show()),
                thousands(total_ns / interval_ns),
                total_ns / 1_000_000,
                thousands(limits::MAX_PROBES)
            ),
            Some(format!(
                "expected an interval of at least {} us for this warmup + duration",
                (total_ns / limits::MAX_PROBES).div_ceil(1000).max(1)
            )),
        ));
    }
    let size = s.u32("size", 56, 0, MAX_UDP_PAYLOAD as u32)?;
    let cpu = s.u32("cpu", 0, 0, cpus - 1)?;
    let path_delay_ns = path_delay(s, driver)?;
    Ok(Ping { name, interval_ns, size, cpu, path_delay_ns })
}

/// Checks that the packets this scenario can hold in flight stay under
/// [`limits::MAX_INFLIGHT_PKTS`]: each flow of a flood has a socket of its own, whose
/// send buffer holds `sndbuf / truesize` of its skbs (plus the one
/// `sock_alloc_send_pskb()` lets through) wherever they wait until orphaned, and a tun
/// ring holds up to `ring_size` orphaned packets per queue.
/// The error points at the largest contributor.
fn check_inflight(
    top: &Sec<'_>,
    d: &Sec<'_>,
    traffic: &[Traffic],
    driver: Driver,
    ring_size: u32,
    tx_queues: u32,
) -> Result<(), Diagnostic> {
    let mut parts: Vec<(u64, String)> = Vec::new();
    for (i, t) in traffic.iter().enumerate() {
        if let Traffic::Udp(u) = t {
            let truesize = darkbuf_model::skb::truesize_for_len(udp_frame_len(u.size)) as u64;
            parts.push(((u.sndbuf / truesize + 1) * u.flows as u64, format!("traffic.{i}")));
        }
    }
    if driver == Driver::Tun || driver == Driver::Nic {
        parts.push((ring_size as u64 * tx_queues as u64, "device".into()));
    }
    let total: u64 = parts.iter().map(|p| p.0).sum();
    if total <= limits::MAX_INFLIGHT_PKTS {
        return Ok(());
    }
    let (_, biggest) = parts.iter().max_by_key(|p| p.0).cloned().unwrap_or_default();
    let detail = parts.iter().map(|(n, w)| format!("{w}: {}", thousands(*n))).collect::<Vec<_>>().join(", ");
    let message = format!(
        "this scenario can hold {} packets in flight ({detail}); at most {} (about 300 MB in the simulator)",
        thousands(total),
        thousands(limits::MAX_INFLIGHT_PKTS)
    );
    let help = "lower the floods' sndbuf (each flow's socket holds sndbuf / truesize packets until they are orphaned), their flows, their number, or the tun ring (txqueuelen x tx_queues)".to_string();
    if biggest == "device" {
        let key = if d.entry("ring_size").is_some() { "ring_size" } else { "txqueuelen" };
        return Err(d.value_err(key, message, Some(help)));
    }
    let idx: usize = biggest.trim_start_matches("traffic.").parse().unwrap_or(0);
    let item = match top.entry("traffic").map(|e| &e.node.v) {
        Some(V::Array(items)) => items.get(idx),
        _ => None,
    };
    match item {
        Some(n) => {
            let V::Table(t) = &n.v else { return Err(top.value_err("traffic", message, Some(help))) };
            let s = Sec { t, path: biggest.clone(), at: n.at.clone(), ctx: top.ctx };
            // The key the user wrote: a default send buffer times many flows is the flows.
            let key = if s.entry("sndbuf").is_none() && s.entry("flows").is_some() { "flows" } else { "sndbuf" };
            Err(s.value_err(key, message, Some(help)))
        }
        None => Err(top.value_err("traffic", message, Some(help))),
    }
}

/// `d` with its source cut to the line its span starts on (the span moved with it; line
/// and column still count in the whole file): a diagnostic kept in the resolved
/// scenario, which is cloned per point and run, need not hold the whole file.
fn excerpt(mut d: Diagnostic) -> Diagnostic {
    if let Some(span) = d.span.clone() {
        let start = span.start.min(d.source.len());
        let line_start = d.source[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = d.source[start..].find('\n').map_or(d.source.len(), |i| start + i);
        d.source = d.source[line_start..line_end].to_string();
        d.span = Some(start - line_start..span.end.min(line_end).max(start) - line_start);
    }
    d
}

/// Where profile `profile` is read from (see [`Machine::profile_file`]): `None` for a
/// built-in name. A relative path is looked for next to the scenario file `scenario`
/// first (as a C `#include` is), in whatever part of the scenario it was given (the
/// file, a variant, a sweep, a `--set`), and else taken from the working directory.
fn profile_file(scenario: &str, profile: &str) -> Option<std::path::PathBuf> {
    if BUILTIN_PROFILES.contains(&profile) {
        return None;
    }
    let p = Path::new(profile);
    let beside = Path::new(scenario).parent().filter(|d| p.is_relative() && !d.as_os_str().is_empty()).map(|d| d.join(p));
    Some(beside.filter(|q| q.exists()).unwrap_or_else(|| p.to_path_buf()))
}

/// `machine.profile` is a built-in name, or a path (ending in `.toml` or containing a
/// `/`, as the profile loader tells them apart) of a regular file of at most
/// [`limits::MAX_FILE_BYTES`]: `profile = "/dev/zero"` would otherwise be read until
/// the memory runs out. What the file holds is checked when the simulator loads it
/// ([`Machine::profile_error`] reports that at this key too).
/// `file` is where [`profile_file`] reads it from (`None`: a built-in profile).
fn check_profile(m: &Sec<'_>, profile: &str, file: Option<&Path>) -> Result<(), Diagnostic> {
    let Some(file) = file else {
        return Ok(());
    };
    let shown = crate::tree::toml_string(profile);
    if !(profile.ends_with(".toml") || profile.contains('/')) {
        let help = match did_you_mean(profile, BUILTIN_PROFILES.iter().copied()) {
            Some(b) => format!("did you mean \"{b}\"? {}", profile_expected()),
            None => profile_expected(),
        };
        return Err(m.value_err(
            "profile",
            format!("`machine.profile` = {shown} is neither a built-in profile nor a path to a profile TOML"),
            Some(help),
        ));
    }
    let bound = format!("; a profile file has at most {} bytes", thousands(limits::MAX_FILE_BYTES));
    let (problem, bound) = match std::fs::metadata(file) {
        // The system's words without its " (os error 2)" (issue 48).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (format!("does not exist: there is no file {}", file.display()), ""),
        Err(e) => {
            let text = e.to_string();
            let reason = text.rsplit_once(" (os error ").map_or(text.as_str(), |(r, _)| r);
            (format!("cannot be read: {}: {reason}", file.display()), "")
        }
        Ok(meta) if !meta.is_file() => ("is not a regular file".to_string(), bound.as_str()),
        Ok(meta) if meta.len() > limits::MAX_FILE_BYTES => {
            (format!("is {} bytes, larger than any profile", thousands(meta.len())), bound.as_str())
        }
        Ok(_) => return Ok(()),
    };
    Err(m.value_err(
        "profile",
        format!("`machine.profile` = {shown} {problem}"),
        Some(format!("{}{bound}", profile_expected())),
    ))
}

/// sk_sndbuf after `setsockopt(SO_SNDBUF, val)` (sk_setsockopt() in net/core/sock.c):
/// `max(min(val, INT_MAX / 2) * 2, SOCK_MIN_SNDBUF)`. The sysctl wmem_max clamp is not
/// applied: the kernel backend raises wmem_max (or uses SO_SNDBUFFORCE) to match.
pub fn effective_sndbuf(so_sndbuf: u64) -> u64 {
    (so_sndbuf.min(i32::MAX as u64 / 2) * 2).max(SOCK_MIN_SNDBUF)
}

/// Parses a tc handle `MAJOR:MINOR` (both hex, as tc writes them) into the u32
/// `skb->priority` value that selects that class (`TC_H_MAKE(major << 16, minor)`).
pub fn parse_tc_handle(s: &str) -> Option<u32> {
    let (maj, min) = s.split_once(':')?;
    let maj = if maj.is_empty() { 0 } else { u32::from_str_radix(maj, 16).ok()? };
    let min = if min.is_empty() { 0 } else { u32::from_str_radix(min, 16).ok()? };
    if maj > 0xffff || min > 0xffff {
        return None;
    }
    Some(maj << 16 | min)
}
