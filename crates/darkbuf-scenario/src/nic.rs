//! The keys of a physical NIC, the path beyond its wire and the far host
//! (`driver = "nic"`, `[device.coalesce]`, `[path]`, `[peer]`), with their bounds.
//!
//! The names follow ethtool (`-g` ring sizes, `-C` coalescing) and tc; the bounds are
//! what the drivers accept (mlx5e's `MLX5E_PARAMS_MINIMUM_LOG_SQ_SIZE`..`MAXIMUM`
//! rings, `MLX5_MAX_COAL_TIME` / `MLX5_MAX_COAL_FRAMES` coalescing).

use crate::diag::Diagnostic;
use crate::resolve::{resolve_qdisc_spec, Sec};
use crate::schema::*;
use crate::tree::V;
use darkbuf_model::qdisc::DevInfo;
use darkbuf_model::units::{self, Rate};

pub const NIC_KEYS: &[&str] = &["model", "rate", "mtu", "tso", "coalesce"];
pub const COALESCE_KEYS: &[&str] = &["tx_usecs", "tx_frames", "cqe_mode", "adaptive_tx"];
pub const PATH_KEYS: &[&str] = &["delay", "loss", "rate", "limit"];
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

/// `rate`, `mtu`, `tso` and `[device.coalesce]` of a NIC; these keys on another driver
/// are an error.
pub(crate) fn resolve_nic(d: &Sec<'_>, driver: Driver) -> Result<Option<NicSpec>, Diagnostic> {
    if driver != Driver::Nic {
        for k in NIC_KEYS {
            if d.entry(k).is_some() {
                return Err(d.value_err(
                    k,
                    format!("`device.{k}` is a NIC setting: the {} driver has no line rate or interrupt coalescing", driver.name()),
                    Some("set device.driver = \"nic\", or remove the key".into()),
                ));
            }
        }
        return Ok(None);
    }
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
        for k in ["tx_usecs", "tx_frames"] {
            if c.entry(k).is_some() {
                return Err(c.value_err(
                    k,
                    format!("`device.coalesce.{k}` with adaptive_tx = true: adaptive moderation sets the period and count itself"),
                    Some(match model {
                        NicModel::Igb => "remove the key (igb: ethtool -C DEV tx-usecs 3 is the dynamic mode)".into(),
                        NicModel::Mlx5 => "remove the key, or set adaptive_tx = false (ethtool -C DEV adaptive-tx off tx-usecs N)".into(),
                    }),
                ));
            }
        }
    }
    Ok(Some(NicSpec { model, rate_bps, mtu, tso, coalesce: Coalesce { tx_usecs, tx_frames, cqe_mode, adaptive_tx } }))
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

/// `[lan]`: the client behind this host when it forwards; only with a NIC.
pub(crate) fn resolve_lan(top: &Sec<'_>, driver: Driver, device: &Device, hz: u32) -> Result<Option<LanSpec>, Diagnostic> {
    if top.entry("lan").is_none() {
        return Ok(None);
    }
    if driver != Driver::Nic {
        return Err(top.value_err(
            "lan",
            format!("[lan] puts a client behind this host's NIC, and this host routes for it: the {} driver has no wire to route to", driver.name()),
            Some("set device.driver = \"nic\", or remove the section".into()),
        ));
    }
    let l = top.sub("lan")?;
    l.check_keys(LAN_KEYS, None)?;
    let cpus = l.u32("cpus", 2, 1, 64)?;
    let rate_bps = line_rate(&l, 1_000_000_000)?;
    let delay_ns = l.duration("delay", 0, false)?;
    if delay_ns > 10_000_000_000 {
        return Err(l.value_err("delay", "`lan.delay` is over 10 s".into(), Some("expected a one-way delay of at most 10s".into())));
    }
    let q = l.sub("qdisc")?;
    let info = DevInfo { tx_queue_len: device.txqueuelen, mtu_l2: device.mtu_l2(), hash_key: 0, hz };
    let qdisc = resolve_qdisc_spec(&q, "pfifo_fast", &info)?;
    Ok(Some(LanSpec { cpus, rate_bps, delay_ns, qdisc }))
}

/// `[path]` (the wire's far side, each direction) and `[peer]` (the far host); both
/// only with a NIC.
pub(crate) fn resolve_far_end(
    top: &Sec<'_>,
    driver: Driver,
    device: &Device,
    hz: u32,
) -> Result<(Option<PathSpec>, Option<PeerSpec>), Diagnostic> {
    if driver != Driver::Nic {
        for k in ["path", "peer"] {
            if top.entry(k).is_some() {
                return Err(top.value_err(
                    k,
                    format!("[{k}] describes what lies beyond a NIC's wire: the {} driver has none", driver.name()),
                    Some("set device.driver = \"nic\", or remove the section".into()),
                ));
            }
        }
        return Ok((None, None));
    }
    let p = top.sub("path")?;
    p.check_keys(PATH_KEYS, None)?;
    let delay_ns = p.duration("delay", 0, false)?;
    if delay_ns > 10_000_000_000 {
        return Err(p.value_err("delay", "`path.delay` is over 10 s".into(), Some("expected a one-way delay of at most 10s".into())));
    }
    let loss = path_loss(&p)?;
    let rate_bps = path_rate(&p)?;
    // netem's default limit, 1000 packets, with a rate; the delay alone stays an ideal
    // delay line unless a limit is given.
    let limit = match p.entry("limit") {
        Some(_) => Some(p.u32("limit", 1000, 1, 1 << 24)?),
        None => rate_bps.map(|_| 1000),
    };
    let pe = top.sub("peer")?;
    pe.check_keys(PEER_KEYS, None)?;
    let cpus = pe.u32("cpus", 2, 1, 64)?;
    let tx_queues = pe.u32("tx_queues", 1, 1, 64)?;
    let irq_cpus = pe.cpu_list("irq_cpus", cpus)?.unwrap_or_else(|| vec![(1 % cpus)]);
    let q = pe.sub("qdisc")?;
    let info = DevInfo { tx_queue_len: device.txqueuelen, mtu_l2: device.mtu_l2(), hash_key: 0, hz };
    let qdisc = resolve_qdisc_spec(&q, "pfifo_fast", &info)?;
    Ok((Some(PathSpec { delay_ns, loss, rate_bps, limit }), Some(PeerSpec { cpus, tx_queues, irq_cpus, qdisc })))
}

/// `path.rate`: netem's `rate`, a bit rate as tc writes it, 8 kbit/s to 400 Gbit/s
/// (netem holds bytes/s: tc's rate divided by 8).
fn path_rate(p: &Sec<'_>) -> Result<Option<u64>, Diagnostic> {
    let Some(e) = p.entry("rate") else { return Ok(None) };
    let key = p.kp("rate");
    let expected = format!("the path's bottleneck rate, 8kbit to 400Gbit, e.g. \"20Mbit\" ({})", units::RATE_EXPECTED);
    let V::Str(r) = &e.node.v else { return Err(p.type_err(e, "a rate string", Some(expected))) };
    match units::parse_rate(r) {
        Ok(Rate::Bps(b)) if (8_000..=RATE_MAX_BPS).contains(&b) => Ok(Some(b)),
        Ok(Rate::Bps(b)) => Err(p.value_err("rate", format!("`{key}` = \"{r}\" ({b} bit/s) is out of range"), Some(expected))),
        Ok(_) => Err(p.value_err("rate", format!("`{key}` = \"{r}\" is not a bit rate"), Some(expected))),
        Err(u) => Err(p.value_err("rate", format!("`{key}`: {}", u.message), Some(expected))),
    }
}

/// `path.loss`: netem's loss models as tc takes them after `loss`:
/// - a percentage, as a number (`0.5`) or a string (`"0.5%"`), or `"random P"`: random
///   loss (a correlation after it is refused: not modelled);
/// - `"state p13 [p31 [p32 [p23 [p14]]]]"`: the 4-state GI model, with tc's defaults
///   p31 = 1 - p13, p32 = 0, p23 = 1, p14 = 0;
/// - `"gemodel p [r [1-h [1-k]]]"`: Gilbert-Elliott, with tc's defaults r = 1 - p,
///   h = 0 (every packet in the bad state lost), 1-k = 0.
///
/// Each percentage as tc's `parse_percent()` reads it (a number of percent, `%`
/// optional, 0..=100), held as `set_percent()` holds it.
fn path_loss(p: &Sec<'_>) -> Result<Option<PathLoss>, Diagnostic> {
    let Some(e) = p.entry("loss") else {
        return Ok(None);
    };
    const HELP: &str = "expected netem's loss as tc takes it: a percentage (loss = \"1%\" or 0.5, 0..=100), \
                        \"random P\", \"state p13 [p31 [p32 [p23 [p14]]]]\" or \"gemodel p [r [1-h [1-k]]]\"";
    let bad = |why: String| p.value_err("loss", format!("`{}` = {}: {why}", p.kp("loss"), e.node.v.show()), Some(HELP.into()));
    let words: Vec<String> = match &e.node.v {
        V::Float(f) => vec![f.to_string()],
        V::Int(i) => vec![i.to_string()],
        V::Str(s) => s.split_whitespace().map(str::to_string).collect(),
        _ => return Err(p.type_err(e, "a loss percentage or model", Some(HELP.into()))),
    };
    // parse_percent(): a fraction in 0..=1 from a number of percent.
    let pct = |w: &str| -> Result<f64, Diagnostic> {
        match w.strip_suffix('%').unwrap_or(w).parse::<f64>() {
            Ok(v) if (0.0..=100.0).contains(&v) => Ok(v / 100.0),
            Ok(_) => Err(bad(format!("{w} is out of range"))),
            Err(_) => Err(bad(format!("\"{w}\" is not a percentage"))),
        }
    };
    let (model, args) = match words.split_first() {
        None => return Err(bad("empty".into())),
        Some((m, rest)) if ["random", "state", "gemodel"].contains(&m.as_str()) => (m.as_str(), rest),
        Some(_) => ("random", &words[..]),
    };
    let fr: Vec<f64> = args.iter().map(|w| pct(w)).collect::<Result<_, _>>()?;
    let most = match model {
        "random" => 1,
        "state" => 5,
        _ => 4,
    };
    if fr.is_empty() {
        return Err(bad(format!("`{model}` needs its first probability")));
    }
    if fr.len() > most {
        let why = if model == "random" {
            "netem's loss correlation is not modelled".to_string()
        } else {
            format!("`{model}` takes at most {most} probabilities")
        };
        return Err(bad(why));
    }
    let arg = |i: usize, default: f64| set_percent(fr.get(i).copied().unwrap_or(default));
    let loss = match model {
        "random" => PathLoss::Random { loss: arg(0, 0.0) },
        "state" => PathLoss::State { p13: arg(0, 0.0), p31: arg(1, 1.0 - fr[0]), p32: arg(2, 0.0), p23: arg(3, 1.0), p14: arg(4, 0.0) },
        // tc takes 1-h and gives the kernel h; without it, h = 0.
        _ => PathLoss::Gemodel {
            p: arg(0, 0.0),
            r: arg(1, 1.0 - fr[0]),
            h: fr.get(2).map_or(0, |&one_minus_h| u32::MAX - set_percent(one_minus_h)),
            k1: arg(3, 0.0),
        },
    };
    Ok((loss != PathLoss::Random { loss: 0 }).then_some(loss))
}
