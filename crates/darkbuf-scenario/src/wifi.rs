//! `driver = "wifi"`: an access point's radio with mac80211's queueing (`[wifi]`), its
//! stations (`[[wifi.station]]`, each with its `phy_rate`) and which station each
//! `[[traffic]]` entry serves (`station = NAME`, `direction = "down" | "up"`). Names
//! follow `iw` and mac80211's debugfs (`txq_limit`, `txq_memory_limit`, `txq_quantum`,
//! `aql_txq_limit`, `aql_threshold`, `airtime_weight`). The earlier spellings, a
//! top-level `[[station]]` and `rate`, are read too.

use crate::diag::{Diagnostic, DiagnosticKind as K};
use crate::section::Sec;
use crate::schema::*;
use crate::tree::V;
use darkbuf_model::mac80211::airtime::PhyRate;
use serde::Serialize;

pub const WIFI_KEYS: &[&str] = &[
    "band", "queueing", "airtime_fairness", "aql", "aql_limit_low_us", "aql_limit_high_us", "aql_threshold_us",
    "txq_limit", "txq_memory_limit", "txq_quantum", "codel_target", "codel_interval", "codel_ecn", "codel_slow_station",
    "driver_queue_frames", "hw_aggregates_per_ac", "ampdu_max_subframes", "ampdu_max_bytes", "ampdu_max_us", "ba_rate",
    "retry_limit", "airtime_flags", "uplink_queue_frames", "txq_schedule", "station", "phy", "airtime_quantum_us", "qdisc",
];
pub const STATION_KEYS: &[&str] = &["name", "phy_rate", "rate", "airtime_weight", "per"];
/// A station's name is part of its metrics' names (`wifi.station.NAME.goodput_mbps`).
pub const MAX_STATION_NAME: usize = 32;
/// At most this many stations (mac80211 allows 2007 associations; the simulator's
/// A-MPDU scheduling is per station per AC).
pub const MAX_STATIONS: usize = 128;

/// Where the mac80211 queues sit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Queueing {
    /// Linux >= 4.10: per-station TXQs on the shared fq with CoDel, the airtime
    /// scheduler and AQL; the netdev has noqueue.
    FqMac,
    /// Before: the qdisc (mq + pfifo_fast per AC) above a deep driver queue
    /// (ath9k's per-TID software queues, `ATH_TXBUF` buffers) served round robin.
    Fifo,
    /// fq_codel as the qdisc (mq + fq_codel per AC, `net.core.default_qdisc =
    /// fq_codel`) above the same deep driver queue: CoDel that cannot see the driver's
    /// queue, the 2016 paper's middle case.
    FqCodelQdisc,
}

impl Queueing {
    /// Whether the driver holds its own deep per-TID queues (no mac80211 TXQs).
    pub fn driver_queues(self) -> bool {
        self != Queueing::FqMac
    }
}

/// How the driver picks the TXQ it builds the next aggregate from (`fq_mac`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TxqSchedule {
    /// mac80211's scheduler (`ieee80211_txq_schedule_start()` / `ieee80211_next_txq()`),
    /// with airtime fairness and AQL: ath9k since 5.1, mt76.
    Mac80211,
    /// ath9k's own round robin of its TIDs before airtime fairness (63fefa050477, 4.11):
    /// `ath_txq_schedule()` over `sc->cur_chan->acq[]`. A TID whose turn finds the
    /// hardware queue full goes to the tail and ends the call; a non-aggregating TID
    /// sends a burst of two frames (`ath_tx_form_burst()`) while the hardware queue
    /// holds fewer than 8 entries (`ATH_NON_AGGR_MIN_QDEPTH`).
    Ath9kAcq,
}

/// One associated station.
#[derive(Clone, Debug, Serialize)]
pub struct StationSpec {
    pub name: String,
    /// The PHY rate as written ("MCS15-HT20-SGI", "144.4Mbit", "1Mbit").
    pub rate: String,
    pub rate_kbps: u64,
    pub airtime_weight: u32,
    /// Frame error rate per transmission attempt, 0..1.
    pub per: f64,
}

/// `[wifi]`: the radio.
#[derive(Clone, Debug, Serialize)]
pub struct WifiSpec {
    /// "5GHz" or "2.4GHz".
    pub band: String,
    /// The radio's PHY: "ht" (802.11n, serving legacy stations too) or "legacy"
    /// (802.11a/b/g only).
    pub phy: String,
    /// `[wifi] qdisc`: the root qdisc's kind, as `[qdisc] kind` would set it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qdisc: Option<String>,
    pub queueing: Queueing,
    /// Which scheduler feeds the driver: "ath9k-acq" by default without airtime
    /// fairness (the driver the published "before" ran), "mac80211" with it.
    pub txq_schedule: TxqSchedule,
    pub airtime_fairness: bool,
    pub aql: bool,
    pub aql_limit_low_us: u32,
    pub aql_limit_high_us: u32,
    pub aql_threshold_us: u32,
    pub txq_limit: u32,
    pub txq_memory_limit: u32,
    pub txq_quantum: u32,
    pub codel_target_ns: u64,
    pub codel_interval_ns: u64,
    pub codel_ecn: bool,
    pub codel_slow_station: bool,
    pub driver_queue_frames: u32,
    pub hw_aggregates_per_ac: u32,
    /// Subframes per A-MPDU at most: ath9k's half BlockAck window (32) by default.
    pub ampdu_max_subframes: u32,
    pub ampdu_max_bytes: u32,
    pub ampdu_max_us: u32,
    pub ba_rate: String,
    pub retry_limit: u32,
    /// debugfs `airtime_flags`: 1 charges TX airtime to the deficits, 2 RX airtime
    /// (`AIRTIME_USE_TX`, `AIRTIME_USE_RX`); the kernel's default is both, 3.
    pub airtime_flags: u32,
    /// Frames a station holds for the air before it drops (its own driver queue).
    pub uplink_queue_frames: u32,
    pub stations: Vec<StationSpec>,
    /// Per `[[traffic]]` entry, the index of the station it serves.
    pub traffic_station: Vec<u16>,
}

/// `[wifi]` (with its `[[wifi.station]]`), a top-level `[[station]]` and the traffic's
/// `station` keys are errors on a driver other than wifi.
pub(crate) fn refuse_wifi(top: &Sec<'_>, driver: Driver) -> Result<(), Diagnostic> {
    if driver == Driver::Wifi {
        return Ok(());
    }
    for k in ["wifi", "station"] {
        if top.entry(k).is_some() {
            return Err(top.value_err(
                k,
                format!("[{k}] describes an access point's radio: the {} driver has none", driver.name()),
                Some("set device.driver = \"wifi\", or remove the section".into()),
            ));
        }
    }
    for (s, _) in traffic_tables(top) {
        if s.entry("station").is_some() {
            return Err(s.value_err(
                "station",
                format!("`{}` names a WiFi station: the {} driver has none", s.kp("station"), driver.name()),
                Some("set device.driver = \"wifi\" with [[wifi.station]] entries, or remove the key".into()),
            ));
        }
    }
    Ok(())
}

/// `[wifi]`, `[[wifi.station]]` and the traffic's `station` keys (`driver = "wifi"`).
pub(crate) fn resolve_wifi(top: &Sec<'_>) -> Result<WifiSpec, Diagnostic> {
    let w = top.sub("wifi")?;
    w.check_keys(WIFI_KEYS, None)?;
    // Without `band`, 5 GHz, unless a station is 802.11b (DSSS), which only 2.4 GHz has.
    let band = w.entry("band").is_some().then(|| w.choice("band", "5GHz", &["5GHz", "2.4GHz"])).transpose()?;
    let queueing = match w.choice("queueing", "fq_mac", &["fq_mac", "fifo", "fq_codel_qdisc"])? {
        "fifo" => Queueing::Fifo,
        "fq_codel_qdisc" => Queueing::FqCodelQdisc,
        _ => Queueing::FqMac,
    };
    let phy = wifi_phy(&w)?;
    let quantum = w.u32("airtime_quantum_us", 256, 1, 65535)?;
    let stations = resolve_stations(top, &w, band, phy, quantum)?;
    let qdisc = match w.entry("qdisc") {
        None => None,
        Some(_) => Some(w.choice("qdisc", "noqueue", darkbuf_model::qdisc::ALL_KINDS)?.to_string()),
    };
    let dsss = stations.iter().any(|s| matches!(PhyRate::parse(&s.rate), Ok(PhyRate::Dsss(_))));
    let band = band.unwrap_or(if dsss { "2.4GHz" } else { "5GHz" }).to_string();
    let ba_rate = w.string("ba_rate", "24Mbit")?;
    match PhyRate::parse(&ba_rate) {
        Ok(PhyRate::Ofdm(_)) | Ok(PhyRate::Dsss(_)) => {}
        _ => return Err(w.value_err("ba_rate", format!("`wifi.ba_rate` = \"{ba_rate}\" is not a legacy basic rate"), Some("expected e.g. \"24Mbit\" or \"6Mbit\" (OFDM), \"1Mbit\" (DSSS)".into()))),
    }
    let traffic_station = traffic_stations(top, &stations)?;
    let airtime_fairness = w.boolean("airtime_fairness", true)?;
    let txq_schedule = txq_schedule(&w, queueing, airtime_fairness)?;
    Ok(WifiSpec {
        band,
        phy: phy.to_string(),
        qdisc,
        queueing,
        txq_schedule,
        airtime_fairness,
        aql: w.boolean("aql", true)?,
        aql_limit_low_us: w.u32("aql_limit_low_us", 5000, 0, 1_000_000)?,
        aql_limit_high_us: w.u32("aql_limit_high_us", 12000, 0, 1_000_000)?,
        aql_threshold_us: w.u32("aql_threshold_us", 24000, 0, 10_000_000)?,
        txq_limit: w.u32("txq_limit", 8192, 1, 1 << 20)?,
        // No VHT modelled: ieee80211_txq_setup_flows()'s 4 MiB.
        txq_memory_limit: w.size_bytes("txq_memory_limit", 4 << 20, 4096, 1 << 30)? as u32,
        txq_quantum: w.u32("txq_quantum", 300, 1, 65535)?,
        codel_target_ns: w.duration("codel_target", 20_000_000, true)?,
        codel_interval_ns: w.duration("codel_interval", 100_000_000, true)?,
        codel_ecn: w.boolean("codel_ecn", true)?,
        codel_slow_station: w.boolean("codel_slow_station", false)?,
        // ath9k's per-AC limit before it stops the netdev queue: txq_max_pending =
        // ATH_MAX_QDEPTH = ATH_TXBUF / 4 - ATH_TXBUF_RESERVE = 512 / 4 - 5.
        driver_queue_frames: w.u32("driver_queue_frames", 123, 1, 65536)?,
        hw_aggregates_per_ac: w.u32("hw_aggregates_per_ac", 2, 1, 64)?,
        // ath9k's ath_tx_form_aggr() stops an A-MPDU at h_baw = tid->baw_size / 2
        // subframes: half the BlockAck window (IEEE80211_MIN_AMPDU_BUF << ampdu_factor,
        // 64 for the usual factor 3). Firmware drivers aggregate up to the window (64).
        ampdu_max_subframes: w.u32("ampdu_max_subframes", 32, 1, 256)?,
        ampdu_max_bytes: w.u32("ampdu_max_bytes", 65535, 1600, 1_048_575)?,
        ampdu_max_us: w.u32("ampdu_max_us", 4000, 100, 5484)?,
        ba_rate,
        retry_limit: w.u32("retry_limit", 10, 0, 30)?,
        airtime_flags: w.u32("airtime_flags", 3, 0, 3)?,
        // A station's queue for the air: a txqueuelen's 1000 frames (pfifo_fast).
        uplink_queue_frames: w.u32("uplink_queue_frames", 1000, 1, 65536)?,
        stations,
        traffic_station,
    })
}

/// `wifi.txq_schedule`: "ath9k-acq" is ath9k before airtime fairness, so it refuses
/// `airtime_fairness = true`; it is the default without airtime fairness.
fn txq_schedule(w: &Sec<'_>, queueing: Queueing, airtime_fairness: bool) -> Result<TxqSchedule, Diagnostic> {
    let default = if airtime_fairness { "mac80211" } else { "ath9k-acq" };
    let sched = match w.choice("txq_schedule", default, &["mac80211", "ath9k-acq"])? {
        "ath9k-acq" => TxqSchedule::Ath9kAcq,
        _ => TxqSchedule::Mac80211,
    };
    if sched == TxqSchedule::Ath9kAcq && airtime_fairness {
        return Err(w.value_err(
            "txq_schedule",
            "`wifi.txq_schedule` = \"ath9k-acq\" is ath9k's round robin before airtime fairness (63fefa050477): it has no airtime deficits".into(),
            Some("set wifi.airtime_fairness = false, or txq_schedule = \"mac80211\" (the airtime scheduler)".into()),
        ));
    }
    if sched == TxqSchedule::Ath9kAcq && queueing.driver_queues() && w.entry("txq_schedule").is_some() {
        return Err(w.value_err(
            "txq_schedule",
            format!("`wifi.txq_schedule` chooses how mac80211's TXQs are served: queueing = \"{}\" has none", w.string("queueing", "")?),
            Some("remove the key, or set wifi.queueing = \"fq_mac\"".into()),
        ));
    }
    Ok(sched)
}

/// The `[[traffic]]` tables, with their index.
fn traffic_tables<'a>(top: &Sec<'a>) -> Vec<(Sec<'a>, usize)> {
    let Some(V::Array(items)) = top.entry("traffic").map(|e| &e.node.v) else { return Vec::new() };
    items
        .iter()
        .enumerate()
        .filter_map(|(i, n)| match &n.v {
            V::Table(t) => Some((Sec { t, path: format!("traffic.{i}"), at: n.at.clone(), ctx: top.ctx }, i)),
            _ => None,
        })
        .collect()
}

/// `[[wifi.station]]` (or a top-level `[[station]]`, not both): at least one, names
/// unique and usable in a metric's name, rates valid for the band when it is given.
fn resolve_stations(top: &Sec<'_>, w: &Sec<'_>, band: Option<&str>, phy_kind: &str, quantum: u32) -> Result<Vec<StationSpec>, Diagnostic> {
    let example = "add [[wifi.station]] entries, e.g. name = \"fast1\" and phy_rate = \"MCS15-HT20-SGI\"";
    let (sec, key) = match (w.entry("station"), top.entry("station")) {
        (Some(_), Some(_)) => {
            return Err(top.value_err("station", "both [[wifi.station]] and [[station]] list stations".into(), Some("keep one list: [[wifi.station]]".into())));
        }
        (None, Some(_)) => (top, "station"),
        _ => (w, "station"),
    };
    let items = match sec.entry(key).map(|e| &e.node.v) {
        Some(V::Array(a)) if !a.is_empty() => a,
        Some(_) => return Err(sec.value_err(key, format!("`{}` must be a non-empty array of tables ([[wifi.station]])", sec.kp(key)), Some(example.into()))),
        None => return Err(top.ctx.diag(K::Value, &top.at, "wifi.station", "driver = \"wifi\" needs at least one [[wifi.station]]", Some(example.into()))),
    };
    if items.len() > MAX_STATIONS {
        return Err(sec.value_err(key, format!("{} stations: at most {MAX_STATIONS}", items.len()), None));
    }
    let mut out: Vec<StationSpec> = Vec::new();
    for (i, n) in items.iter().enumerate() {
        let V::Table(t) = &n.v else {
            return Err(sec.value_err(key, format!("`{}.{i}` must be a table", sec.kp(key)), Some(example.into())));
        };
        let s = Sec { t, path: format!("{}.{i}", sec.kp(key)), at: n.at.clone(), ctx: top.ctx };
        s.check_keys(STATION_KEYS, None)?;
        let name = station_name(&s, i, &out)?;
        let (rate, phy) = station_rate(&s, &name)?;
        if matches!(phy, PhyRate::Dsss(_)) && band == Some("5GHz") {
            let k = if s.entry("phy_rate").is_some() { "phy_rate" } else { "rate" };
            return Err(s.value_err(k, format!("`{}` = \"{rate}\" is a DSSS rate: 802.11b exists only on 2.4 GHz", s.kp(k)), Some("set wifi.band = \"2.4GHz\", or use an OFDM/HT rate".into())));
        }
        if phy.is_ht() && phy_kind == "legacy" {
            let k = if s.entry("phy_rate").is_some() { "phy_rate" } else { "rate" };
            return Err(s.value_err(k, format!("`{}` = \"{rate}\" is an HT rate, and wifi.phy = \"legacy\" has none", s.kp(k)), Some("set wifi.phy = \"ht\", or a legacy rate (\"54Mbit\", \"1Mbit\")".into())));
        }
        let airtime_weight = s.u32("airtime_weight", quantum, 1, 65535)?;
        let per = s.float("per", 0.0, 0.0, 0.99)?;
        out.push(StationSpec { name, rate, rate_kbps: phy.kbps(), airtime_weight, per });
    }
    Ok(out)
}

/// `[wifi] phy`: "ht" (the default) or "legacy"; VHT and HE are not modelled.
fn wifi_phy(w: &Sec<'_>) -> Result<&'static str, Diagnostic> {
    let phy = w.choice("phy", "ht", &["legacy", "ht", "vht", "he"])?;
    if phy == "vht" || phy == "he" {
        return Err(w.ctx.diag(
            K::Unsupported,
            &w.origin("phy"),
            &w.kp("phy"),
            format!("wifi.phy = \"{phy}\": the radio models HT (802.11n) and legacy PHYs; {} framing and rates are not modelled", if phy == "vht" { "VHT (802.11ac)" } else { "HE (802.11ax)" }),
            Some("set phy = \"ht\" (MCS0-31 at 20 or 40 MHz) or \"legacy\"".into()),
        ));
    }
    Ok(phy)
}

/// A station's `name` (default `staN`): unique, and letters, digits, `_` and `-` only,
/// as it names the station's metrics.
fn station_name(s: &Sec<'_>, i: usize, before: &[StationSpec]) -> Result<String, Diagnostic> {
    let name = s.string("name", &format!("sta{i}"))?;
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if name.is_empty() || name.len() > MAX_STATION_NAME || !name.chars().all(valid) {
        return Err(s.value_err(
            "name",
            format!("`{}` = {name:?}: a station's name is part of its metrics' names (wifi.station.NAME.goodput_mbps)", s.kp("name")),
            Some(format!("1 to {MAX_STATION_NAME} letters, digits, '_' or '-', e.g. \"fast1\"")),
        ));
    }
    if before.iter().any(|o| o.name == name) {
        return Err(s.value_err("name", format!("`{}` = \"{name}\": another station has this name", s.kp("name")), Some("give each station its own name".into())));
    }
    Ok(name)
}

/// A station's `phy_rate` (or `rate`, the earlier spelling): a string as
/// [`PhyRate::parse`] reads it, or a number of Mbit/s.
fn station_rate(s: &Sec<'_>, name: &str) -> Result<(String, PhyRate), Diagnostic> {
    let help = "expected e.g. \"MCS15-HT20-SGI\", \"MCS0-HT20\", \"144.4Mbit\" (an HT rate by its value), \"54Mbit\" or \"1Mbit\"";
    let key = match (s.entry("phy_rate"), s.entry("rate")) {
        (Some(_), Some(_)) => return Err(s.value_err("rate", format!("[[wifi.station]] \"{name}\" has both `phy_rate` and `rate`"), Some("keep phy_rate".into()))),
        (None, Some(_)) => "rate",
        (Some(_), None) => "phy_rate",
        (None, None) => {
            return Err(s.value_err("phy_rate", format!("[[wifi.station]] \"{name}\" has no `phy_rate`"), Some(format!("set phy_rate: {help}"))));
        }
    };
    let rate = match &s.entry(key).expect("present").node.v {
        V::Int(i) => format!("{i}Mbit"),
        V::Float(f) => format!("{f}Mbit"),
        _ => s.string(key, "")?,
    };
    let phy = PhyRate::parse(&rate).map_err(|m| s.value_err(key, format!("`{}`: {m}", s.kp(key)), Some(help.into())))?;
    Ok((rate, phy))
}

/// Each `[[traffic]]` entry's station (`station = NAME`; the first station if absent).
fn traffic_stations(top: &Sec<'_>, stations: &[StationSpec]) -> Result<Vec<u16>, Diagnostic> {
    let mut out = Vec::new();
    for (s, _) in traffic_tables(top) {
        let idx = match s.entry("station") {
            None => 0,
            Some(_) => {
                let name = s.string("station", "")?;
                match stations.iter().position(|x| x.name == name) {
                    Some(i) => i,
                    None => {
                        let names: Vec<&str> = stations.iter().map(|x| x.name.as_str()).collect();
                        return Err(s.value_err("station", format!("`{}` = \"{name}\" is not a [[wifi.station]]", s.kp("station")), Some(format!("expected one of: {}", names.join(", ")))));
                    }
                }
            }
        };
        out.push(idx as u16);
    }
    Ok(out)
}

/// `device.tx_queues`: the radio's netdev has one TX queue per AC (VO, VI, BE, BK).
pub(crate) fn tx_queues(d: &Sec<'_>, driver: Driver) -> Result<u32, Diagnostic> {
    if driver != Driver::Wifi {
        return d.u32("tx_queues", 1, 1, 64);
    }
    match d.u32("tx_queues", 4, 1, 64)? {
        4 => Ok(4),
        n => Err(d.value_err(
            "tx_queues",
            format!("`device.tx_queues` = {n}: a mac80211 netdev has IEEE80211_NUM_ACS = 4 TX queues (VO, VI, BE, BK)"),
            Some("remove tx_queues, or set it to 4".into()),
        )),
    }
}

/// mac80211 never calls `netdev_tx_sent_queue()`: no BQL on a radio.
pub(crate) fn check_bql(b: &Sec<'_>, driver: Driver, enabled: bool) -> Result<(), Diagnostic> {
    if driver == Driver::Wifi && enabled {
        return Err(b.value_err(
            "enabled",
            "`device.bql.enabled` = true: mac80211 has no BQL (AQL bounds the airtime below it instead)".into(),
            Some("remove the key; [wifi] aql and aql_limit_low_us / aql_limit_high_us set AQL".into()),
        ));
    }
    Ok(())
}

/// The radio's default root qdisc: `[wifi] qdisc` if given (not with `[qdisc] kind` as
/// well); else noqueue over mac80211's TXQs (`IFF_NO_QUEUE`), and before them mq with
/// a pfifo_fast (or fq_codel) per AC.
pub(crate) fn root_qdisc(w: &WifiSpec, q: &Sec<'_>) -> Result<&'static str, Diagnostic> {
    if let Some(k) = &w.qdisc {
        if q.entry("kind").is_some() || q.entry("tc").is_some() || q.entry("tc_file").is_some() {
            return Err(q.value_err(
                if q.entry("kind").is_some() { "kind" } else { "tc" },
                format!("wifi.qdisc = \"{k}\" and [qdisc] both set the radio's root qdisc"),
                Some("keep one: [qdisc] (with the qdisc's parameters), or wifi.qdisc".into()),
            ));
        }
        return Ok(darkbuf_model::qdisc::ALL_KINDS.iter().copied().find(|x| x == k).expect("a choice of ALL_KINDS"));
    }
    Ok(match w.queueing {
        Queueing::FqMac => "noqueue",
        Queueing::Fifo | Queueing::FqCodelQdisc => "mq",
    })
}

/// Whether a TCP flow's sender is on the far host: a download over a NIC; over a
/// radio, where the AP is this host and the stations the far host, an upload
/// (`direction = "up"`: the station sends, its frames contend for the air).
pub fn far_sends(driver: Driver, direction: Direction) -> bool {
    match driver {
        Driver::Wifi => direction == Direction::Up,
        _ => direction == Direction::Down,
    }
}
