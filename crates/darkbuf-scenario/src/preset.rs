//! `test = "<name>"`: flent's tests as presets that expand into ordinary `[[traffic]]`
//! entries, before the scenario is resolved.
//!
//! Each preset follows the data sets of flent's own test definition
//! (`flent/tests/<name>.conf`): the same flows, DSCP marks, probes and start times, each
//! entry carrying flent's data-set name (`name = "TCP upload BE"`) so the `.flent.gz`
//! writer can name its series as flent does. flent's timeline maps onto the run:
//!
//! - flent's `TOTAL_LENGTH` is the whole run (`warmup + duration`): the probes run
//!   throughout, as flent's pings do;
//! - flent's `DELAY` (`flent --delay`, default 5 s) is the scenario's `test_delay`: the
//!   bulk flows start `test_delay` after the probes and stop `test_delay` before the
//!   end (`LENGTH = TOTAL_LENGTH - 2 * DELAY`; `tcp_4up_squarewave` staggers its flows
//!   at 0, 1, 3 and 5 `DELAY`s, each running `TOTAL_LENGTH - 6 * DELAY`).
//!
//! Overrides: a scenario `[[traffic]]` entry whose `name` is one of the preset's entries
//! changes that entry key by key (e.g. `name = "TCP upload BE"` + `cc = "reno"`); any
//! other entry is appended after the preset's. `--set traffic.N.KEY` addresses the
//! scenario's own entries (before expansion).
//!
//! Test parameters: flent's `--test-parameter upload_streams=N` is
//! `[test_parameters] upload_streams = N` (`tcp_nup`; `download_streams` for
//! `tcp_ndown`). flent's `tcp_2up` .. `tcp_12down` are those two tests with the
//! parameter fixed by their own `.conf`.
//!
//! Far hosts: flent's `rtt_fair*` tests run flows and a ping to each host of its `-H`
//! list, each host at its own distance. Here `[test_parameters] host_delays` gives
//! each host's extra one-way delay (darkbuf's parameter: flent's hosts are machines),
//! which the host's entries take as their `path_delay`; `host1` .. `hostN` name them
//! in the data sets, as the host names do in flent's.

use crate::diag::Diagnostic;
use crate::limits;
use crate::section::Sec;
use crate::schema::Driver;
use crate::tree::{Entry, Node, Origin, Table, V};

/// The presets, by flent's test name.
pub const TESTS: &[&str] = &[
    "ping",
    "rrul",
    "rrul_be",
    "rrul_be_nflows",
    "rrul_cs8",
    "rrul_up",
    "tcp_1up",
    "tcp_1up_noping",
    "tcp_1down",
    "tcp_upload",
    "tcp_download",
    "tcp_bidirectional",
    "tcp_nup",
    "tcp_ndown",
    "tcp_2up",
    "tcp_4up",
    "tcp_6up",
    "tcp_8up",
    "tcp_12up",
    "tcp_2down",
    "tcp_4down",
    "tcp_6down",
    "tcp_8down",
    "tcp_12down",
    "tcp_2up_delay",
    "tcp_4up_squarewave",
    "rtt_fair",
    "rtt_fair4be",
    "rtt_fair6be",
    "rtt_fair_up",
    "rtt_fair_var",
    "rtt_fair_var_up",
    "rtt_fair_var_down",
    "cubic_bbr",
    "cubic_reno",
    "voip",
    "voip-1up",
    "voip-rrul",
];

/// flent's test parameters the presets read (`[test_parameters]`), and darkbuf's
/// `host_delays` (the far hosts of the `rtt_fair` tests).
pub const PARAMETERS: &[&str] = &["upload_streams", "download_streams", "host_delays"];

/// The tests that run flows to several far hosts, each `rtt_fair*.conf`: (test, the
/// number of hosts its `.conf` fixes; `None`: as many as given, `rtt_fair_var*`).
/// In flent the hosts are the `-H` list, each at its own distance; here each host is a
/// path of its own to the far end, `host_delays` its extra one-way delay (a netem on
/// the way to that host), and `host1` .. `hostN` its name in the data sets.
const HOST_TESTS: &[(&str, Option<usize>)] = &[
    ("rtt_fair", Some(4)),
    ("rtt_fair4be", Some(4)),
    ("rtt_fair_up", Some(4)),
    ("rtt_fair6be", Some(6)),
    ("rtt_fair_var", None),
    ("rtt_fair_var_up", None),
    ("rtt_fair_var_down", None),
];

/// The number of hosts test `name` fixes (`Some(None)`: it takes any number), or `None`
/// when it is not a host test.
pub fn host_count(name: &str) -> Option<Option<usize>> {
    HOST_TESTS.iter().find(|(t, _)| *t == name).map(|(_, n)| *n)
}

/// The most hosts `host_delays` may name: each host of `rtt_fair_var` is three entries.
pub const MAX_HOSTS: usize = limits::MAX_TRAFFIC / 3;

/// The tests that read a stream count (flent's `tcp_nup.conf`, `tcp_ndown.conf` and
/// `rrul_be_nflows.conf`): (test, the parameter it reads, the count its own `.conf`
/// fixes). A test that reads two parameters has a row for each.
const STREAM_TESTS: &[(&str, &str, Option<u32>)] = &[
    ("tcp_nup", "upload_streams", None),
    ("tcp_2up", "upload_streams", Some(2)),
    ("tcp_4up", "upload_streams", Some(4)),
    ("tcp_6up", "upload_streams", Some(6)),
    ("tcp_8up", "upload_streams", Some(8)),
    ("tcp_12up", "upload_streams", Some(12)),
    ("tcp_ndown", "download_streams", None),
    ("tcp_2down", "download_streams", Some(2)),
    ("tcp_4down", "download_streams", Some(4)),
    ("tcp_6down", "download_streams", Some(6)),
    ("tcp_8down", "download_streams", Some(8)),
    ("tcp_12down", "download_streams", Some(12)),
    ("rrul_be_nflows", "upload_streams", None),
    ("rrul_be_nflows", "download_streams", None),
];

/// The most streams a test parameter may ask for: each is a `[[traffic]]` entry, and the
/// test's ping is one more.
pub const MAX_STREAMS: u32 = limits::MAX_TRAFFIC as u32 - 1;

/// The parameters test `name` reads, each with the count its `.conf` fixes.
pub fn stream_parameters(name: &str) -> Vec<(&'static str, Option<u32>)> {
    STREAM_TESTS.iter().filter(|(t, _, _)| *t == name).map(|(_, p, n)| (*p, *n)).collect()
}

/// The stream counts a test runs with: (parameter, N).
pub type Streams = [(&'static str, u32)];

/// N of `parameter` in `streams`.
fn streams_of(streams: &Streams, parameter: &'static str) -> Result<u32, PresetError> {
    streams.iter().find(|(p, _)| *p == parameter).map(|(_, n)| *n).ok_or(PresetError::NoStreams { parameter })
}

/// flent's `DELAY` default (`--delay`, seconds).
pub const DEFAULT_DELAY_NS: u64 = 5_000_000_000;

/// flent's `STEP_SIZE` (0.2 s): its ping interval and irtt's `-i` under flent.
pub const STEP_NS: u64 = 200_000_000;

/// One value of a preset entry.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Str(String),
    Int(i64),
}

/// One `[[traffic]]` entry a preset expands into: flent's data-set name and the keys.
#[derive(Clone, Debug, PartialEq)]
pub struct PresetEntry {
    pub name: String,
    pub keys: Vec<(&'static str, Val)>,
}

/// DSCP code points of flent's netperf markings (`-Y CS1,CS1` ...): class selector n
/// is n << 3, EF is 46.
const CS0: i64 = 0;
const CS1: i64 = 8;
const CS5: i64 = 40;
const EF: i64 = 46;

const fn cs(n: i64) -> i64 {
    n << 3
}

fn dur(ns: u64) -> Val {
    Val::Str(format!("{ns}ns"))
}

/// A bulk TCP flow from `start` to `stop`.
fn tcp(name: String, direction: &str, cc: &str, dscp: i64, start: u64, stop: u64) -> PresetEntry {
    PresetEntry {
        name,
        keys: vec![
            ("kind", Val::Str("tcp".into())),
            ("cc", Val::Str(cc.into())),
            ("direction", Val::Str(direction.into())),
            ("dscp", Val::Int(dscp)),
            ("start", dur(start)),
            ("stop", dur(stop)),
        ],
    }
}

/// flent's ICMP ping (`ping -i 0.2`), for the whole run.
fn icmp() -> PresetEntry {
    PresetEntry {
        name: "Ping (ms) ICMP".into(),
        keys: vec![("kind", Val::Str("ping".into())), ("interval", dur(STEP_NS))],
    }
}

/// flent's `udp_rtt` runner: irtt with `-i STEP_SIZE` and the marking, for the whole run.
fn udp_rtt(name: &str, dscp: i64) -> PresetEntry {
    PresetEntry {
        name: name.into(),
        keys: vec![("kind", Val::Str("irtt".into())), ("interval", dur(STEP_NS)), ("dscp", Val::Int(dscp))],
    }
}

/// flent's `voip` runner (flent/runners.py `VoipRunner`): irtt with `interval=0.02`
/// and `data_size=172` "to emulate G711 VoIP" (160 bytes of audio + the 12-byte RTP
/// header), its request and its echo a stream each way, for the whole run
/// (`VOIP_LENGTH = TOTAL_LENGTH`), marked by the `voip_marking` test parameter, which
/// defaults to none (DSCP 0). (Without irtt flent falls back to D-ITG's `VoIP`, G.711
/// with 80 bytes every 10 ms, one way.)
fn voip() -> PresetEntry {
    PresetEntry {
        name: "VoIP".into(),
        keys: vec![
            ("kind", Val::Str("voip".into())),
            ("codec", Val::Str("g711".into())),
            ("interval", dur(20_000_000)),
            ("size", Val::Int(160)),
            ("dscp", Val::Int(CS0)),
            ("direction", Val::Str("both".into())),
        ],
    }
}

/// rrul's bulk flows, one per marking each way: (data-set suffix, DSCP).
const RRUL_CLASSES: [(&str, i64); 4] = [("BE", CS0), ("BK", CS1), ("CS5", CS5), ("EF", EF)];

/// rrul's probes: a UDP ping (irtt) in three of its classes, and ICMP.
fn rrul_probes() -> [PresetEntry; 4] {
    [udp_rtt("Ping (ms) UDP EF", EF), udp_rtt("Ping (ms) UDP BK", CS1), udp_rtt("Ping (ms) UDP BE", CS0), icmp()]
}

/// Why a preset cannot be laid out on this run.
#[derive(Debug, PartialEq, Eq)]
pub enum PresetError {
    /// The run is too short for the flows: `TOTAL_LENGTH - factor * DELAY` <= 0.
    TooShort { factor: u64 },
    /// An N-stream test (`tcp_nup`, `tcp_ndown`) without its stream count.
    NoStreams { parameter: &'static str },
    /// An `rtt_fair_var*` test without its hosts.
    NoHosts,
}

/// How many `DELAY`s of the run the bulk flows do not use (`LENGTH = TOTAL_LENGTH -
/// factor * DELAY`).
fn delay_factor(name: &str) -> u64 {
    match name {
        // voip.conf: TOTAL_LENGTH = LENGTH, the stream alone.
        "ping" | "tcp_1up_noping" | "voip" => 0,
        // tcp_2up_delay.conf: TOTAL_LENGTH = LENGTH + DELAY.
        "tcp_2up_delay" => 1,
        "tcp_4up_squarewave" => 6,
        _ => 2,
    }
}

/// The entries of test `name` on a run of `total_ns` with flent's `DELAY` = `delay_ns`.
/// `streams` are the counts of the parameters the test reads whose `.conf` does not
/// fix them (`tcp_nup`: `upload_streams`; `tcp_ndown`: `download_streams`;
/// `rrul_be_nflows`: both); other tests ignore them.
pub fn entries(name: &str, total_ns: u64, delay_ns: u64, streams: &Streams) -> Result<Vec<PresetEntry>, PresetError> {
    entries_to_hosts(name, total_ns, delay_ns, streams, &[])
}

/// [`entries`], with the far hosts' extra one-way delays of the `rtt_fair` tests
/// (`host_delays`; empty: a test that fixes its hosts has them all at the shared
/// path's distance).
pub fn entries_to_hosts(name: &str, total_ns: u64, delay_ns: u64, streams: &Streams, hosts: &[u64]) -> Result<Vec<PresetEntry>, PresetError> {
    let factor = delay_factor(name);
    let length = total_ns.checked_sub(factor * delay_ns).filter(|l| *l > 0).ok_or(PresetError::TooShort { factor })?;
    let (start, stop) = (delay_ns, delay_ns + length);
    let up = |name: String, dscp: i64| tcp(name, "up", "cubic", dscp, start, stop);
    let down = |name: String, dscp: i64| tcp(name, "down", "cubic", dscp, start, stop);
    let both = |names: &[(&str, i64)]| -> Vec<PresetEntry> {
        let mut v: Vec<PresetEntry> = names.iter().map(|(n, d)| up(format!("TCP upload {n}"), *d)).collect();
        v.extend(names.iter().map(|(n, d)| down(format!("TCP download {n}"), *d)));
        v
    };
    // flent names a data set's duplicates `NAME::1` .. `NAME::n`.
    let dups = |n: u32, name: &str, dir: &dyn Fn(String, i64) -> PresetEntry| -> Vec<PresetEntry> { (1..=n).map(|i| dir(format!("{name}::{i}"), CS0)).collect() };
    let param = |p: &'static str| -> Result<u32, PresetError> {
        match stream_parameters(name).iter().find(|(q, _)| *q == p) {
            Some((_, Some(fixed))) => Ok(*fixed),
            _ => streams_of(streams, p),
        }
    };
    Ok(match name {
        "tcp_nup" | "tcp_2up" | "tcp_4up" | "tcp_6up" | "tcp_8up" | "tcp_12up" => {
            let mut v = dups(param("upload_streams")?, "TCP upload", &up);
            v.push(icmp());
            v
        }
        "tcp_ndown" | "tcp_2down" | "tcp_4down" | "tcp_6down" | "tcp_8down" | "tcp_12down" => {
            let mut v = dups(param("download_streams")?, "TCP download", &down);
            v.push(icmp());
            v
        }
        // rrul_be's flows, as many as asked each way, with one UDP ping and ICMP.
        "rrul_be_nflows" => {
            let mut v = dups(param("upload_streams")?, "TCP upload BE", &up);
            v.extend(dups(param("download_streams")?, "TCP download BE", &down));
            v.extend([udp_rtt("Ping (ms) UDP BE", CS0), icmp()]);
            v
        }
        "ping" => vec![icmp()],
        "tcp_1up" | "tcp_upload" => vec![up("TCP upload".into(), CS0), icmp()],
        // tcp_1up_noping.conf: DELAY = 0, one upload for the whole run.
        "tcp_1up_noping" => vec![up("TCP upload".into(), CS0)],
        "tcp_1down" | "tcp_download" => vec![down("TCP download".into(), CS0), icmp()],
        "tcp_bidirectional" => vec![down("TCP download".into(), CS0), up("TCP upload".into(), CS0), icmp()],
        // Stream 1 for the whole run, stream 2 from DELAY on; no ping.
        "tcp_2up_delay" => vec![tcp("TCP stream 1".into(), "up", "cubic", CS0, 0, total_ns), up("TCP stream 2".into(), CS0)],
        "tcp_4up_squarewave" => [("TCP bbr 1", "bbr", 0), ("TCP cubic 2", "cubic", 1), ("TCP cubic 3", "cubic", 5), ("TCP bbr 4", "bbr", 3)]
            .iter()
            .map(|(n, cc, k)| tcp((*n).into(), "up", cc, CS0, k * delay_ns, k * delay_ns + length))
            .collect(),
        "rrul" => {
            let mut v = both(&RRUL_CLASSES);
            v.extend(rrul_probes());
            v
        }
        // rrul_up.conf: rrul without its download data sets.
        "rrul_up" => {
            let mut v: Vec<PresetEntry> = RRUL_CLASSES.iter().map(|(n, d)| up(format!("TCP upload {n}"), *d)).collect();
            v.extend(rrul_probes());
            v
        }
        // voip-rrul.conf: include("rrul_be.conf"), then voip.inc's VoIP data set.
        "rrul_be" | "voip-rrul" => {
            let mut v = both(&[("BE", CS0), ("BE2", CS0), ("BE3", CS0), ("BE4", CS0)]);
            v.extend([udp_rtt("Ping (ms) UDP BE1", CS0), udp_rtt("Ping (ms) UDP BE2", CS0), udp_rtt("Ping (ms) UDP BE3", CS0), icmp()]);
            if name == "voip-rrul" {
                v.push(voip());
            }
            v
        }
        // voip.conf: the VoIP stream alone; voip-1up.conf: with a netperf TCP_STREAM
        // from DELAY for LENGTH (TOTAL_LENGTH = LENGTH + 2 * DELAY), no ping.
        "voip" => vec![voip()],
        "voip-1up" => vec![voip(), up("TCP upload".into(), CS0)],
        // One flow per class selector each way, and a UDP ping in each from CS7 down.
        "rrul_cs8" => {
            let classes = [("CS0_BE", cs(0)), ("CS1_BK", cs(1)), ("CS2", cs(2)), ("CS3", cs(3)), ("CS4", cs(4)), ("CS5", cs(5)), ("CS6", cs(6)), ("CS7", cs(7))];
            let mut v = both(&classes);
            v.extend(classes.iter().rev().map(|(n, d)| udp_rtt(&format!("Ping (ms) UDP {n}"), *d)));
            v.push(icmp());
            v
        }
        // cubic_bbr.conf and cubic_reno.conf: CUBIC against the other algorithm, each BE
        // and CS1, each way; a UDP ping in BE, CS1 and CS6, and ICMP.
        "cubic_bbr" | "cubic_reno" => {
            let (cc, label) = if name == "cubic_bbr" { ("bbr", "BBR") } else { ("reno", "Reno") };
            let flows = [("Cubic BE".to_string(), "cubic", CS0), (format!("{label} BE"), cc, CS0), ("Cubic CS1".to_string(), "cubic", CS1), (format!("{label} CS1"), cc, CS1)];
            let mut v: Vec<PresetEntry> = flows.iter().map(|(n, cc, d)| tcp(format!("TCP upload {n}"), "up", cc, *d, start, stop)).collect();
            v.extend(flows.iter().map(|(n, cc, d)| tcp(format!("TCP download {n}"), "down", cc, *d, start, stop)));
            v.extend([udp_rtt("Ping (ms) UDP BE", CS0), udp_rtt("Ping (ms) UDP CS1", CS1), udp_rtt("Ping (ms) UDP CS6", cs(6)), icmp()]);
            v
        }
        "rtt_fair" | "rtt_fair4be" | "rtt_fair6be" | "rtt_fair_up" | "rtt_fair_var" | "rtt_fair_var_up" | "rtt_fair_var_down" => rtt_fair_entries(name, hosts, &up, &down)?,
        _ => unreachable!("test names are checked against TESTS"),
    })
}

/// The `rtt_fair` family's entries: per far host (`hosts`' extra one-way delays, or the
/// test's fixed count at the shared path's distance) its flows (`up`, `down`: a TCP
/// entry each way over the test's window) and a ping.
fn rtt_fair_entries(
    name: &str,
    hosts: &[u64],
    up: &dyn Fn(String, i64) -> PresetEntry,
    down: &dyn Fn(String, i64) -> PresetEntry,
) -> Result<Vec<PresetEntry>, PresetError> {
    let n = match host_count(name).flatten() {
        Some(n) => n,
        None if hosts.is_empty() => return Err(PresetError::NoHosts),
        None => hosts.len(),
    };
    let at = |i: usize| hosts.get(i).copied().unwrap_or(0);
    let host = |i: usize| format!("host{}", i + 1);
    let to = |mut e: PresetEntry, i: usize| {
        if at(i) > 0 {
            e.keys.push(("path_delay", dur(at(i))));
        }
        e
    };
    let ping = |label: &str, i: usize| {
        let mut p = icmp();
        p.name = format!("Ping (ms) {label} {}", host(i));
        to(p, i)
    };
    Ok(match name {
        // rtt_fair_var.conf: per host an upload, a download and a ping, all BE;
        // its _up and _down variants delete the other direction's data sets.
        "rtt_fair_var" | "rtt_fair_var_up" | "rtt_fair_var_down" => (0..n)
            .flat_map(|i| {
                let mut v = Vec::new();
                if name != "rtt_fair_var_down" {
                    v.push(to(up(format!("TCP upload BE {}", host(i)), CS0), i));
                }
                if name != "rtt_fair_var_up" {
                    v.push(to(down(format!("TCP download BE {}", host(i)), CS0), i));
                }
                v.push(ping("ICMP", i));
                v
            })
            .collect(),
        // rtt_fair.conf, rtt_fair4be.conf, rtt_fair_up.conf: four hosts (six in
        // rtt_fair6be.conf), flow k to host k (BE1, BE2, then BK1, BK2 marked CS1
        // in rtt_fair), each way but in rtt_fair_up, then ICMP1..n, one per host.
        _ => {
            let class = |i: usize| match (name, i) {
                ("rtt_fair", 2 | 3) => (format!("BK{}", i - 1), CS1),
                _ => (format!("BE{}", i + 1), CS0),
            };
            let mut v: Vec<PresetEntry> = (0..n).map(|i| to(up(format!("TCP upload {} {}", class(i).0, host(i)), class(i).1), i)).collect();
            if name != "rtt_fair_up" {
                v.extend((0..n).map(|i| to(down(format!("TCP download {} {}", class(i).0, host(i)), class(i).1), i)));
            }
            v.extend((0..n).map(|i| ping(&format!("ICMP{}", i + 1), i)));
            v
        }
    })
}

/// What `test = ...` asks for: flent's test, its `DELAY` and the stream count of an
/// N-stream test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Requested {
    pub name: &'static str,
    pub delay_ns: u64,
    /// (parameter, N) of each stream count the test reads (`upload_streams` of
    /// `tcp_4up` is 4).
    pub streams: Vec<(&'static str, u32)>,
    /// The `rtt_fair` tests' far hosts: each one's extra one-way delay, ns (empty for
    /// other tests, and for a fixed-host test given none).
    pub hosts: Vec<u64>,
}

/// The preset a scenario asks for, or `None`.
pub(crate) fn requested(top: &Sec<'_>) -> Result<Option<Requested>, Diagnostic> {
    if top.entry("test").is_none() {
        for key in ["test_delay", "test_parameters"] {
            if top.entry(key).is_some() {
                let what = if key == "test_delay" { "flent's --delay" } else { "flent's --test-parameter" };
                return Err(top.value_err(
                    key,
                    format!("`{key}` without `test`: it is {what} for a test preset"),
                    Some(format!("add test = \"...\" (one of {}), or remove {key}", quoted(TESTS))),
                ));
            }
        }
        return Ok(None);
    }
    let name = top.choice("test", "rrul", TESTS)?;
    let delay_ns = if name == "tcp_1up_noping" {
        if top.duration("test_delay", 0, false)? != 0 {
            return Err(top.value_err(
                "test_delay",
                "test = \"tcp_1up_noping\" has no delay: flent's tcp_1up_noping.conf sets DELAY = 0 and runs its upload for the whole test".into(),
                Some("remove test_delay (or set it to \"0s\"), or use test = \"tcp_1up\"".into()),
            ));
        }
        0
    } else {
        top.duration("test_delay", DEFAULT_DELAY_NS, false)?
    };
    let streams = test_streams(top, name)?;
    let hosts = test_hosts(top, name)?;
    Ok(Some(Requested { name, delay_ns, streams, hosts }))
}

/// `[test_parameters] host_delays`: the far hosts of an `rtt_fair` test, each as its
/// extra one-way delay, an array of durations or flent's comma-separated string
/// (`"0ms,10ms,20ms,45ms"`). A test that fixes its hosts (`rtt_fair`: four) takes that
/// many, or none: then all are at the shared path's distance (its count of zeros);
/// `rtt_fair_var*` need them, as flent needs its `-H` hosts.
fn test_hosts(top: &Sec<'_>, name: &'static str) -> Result<Vec<u64>, Diagnostic> {
    let params = top.sub("test_parameters")?;
    let key = "host_delays";
    let kp = params.kp(key);
    let example = "host_delays = [\"0ms\", \"10ms\", \"20ms\", \"45ms\"] (or flent's \"0ms,10ms,20ms,45ms\")";
    let Some(e) = params.entry(key) else {
        if host_count(name) == Some(None) {
            return Err(top.value_err(
                "test",
                format!("test = \"{name}\" needs its far hosts: in flent they are the -H list, here [test_parameters] host_delays, one extra one-way delay per host"),
                Some(format!("add [test_parameters] {example}, 1..={MAX_HOSTS} hosts")),
            ));
        }
        return Ok(vec![0; host_count(name).flatten().unwrap_or(0)]);
    };
    let Some(fixed) = host_count(name) else {
        let hosts: Vec<&str> = HOST_TESTS.iter().map(|(t, _)| *t).collect();
        return Err(params.value_err(key, format!("test = \"{name}\" does not read {key}: it runs no flows to several hosts"), Some(format!("remove {kp}; it is for {}", quoted(&hosts)))));
    };
    // Each item with where it is: an array's own elements, or the string's parts.
    let items: Vec<(String, Origin)> = match &e.node.v {
        V::Array(a) => a
            .iter()
            .map(|n| match &n.v {
                V::Str(s) => Ok((s.clone(), n.at.clone())),
                other => Err(top.ctx.diag(crate::diag::DiagnosticKind::Type, &n.at, &kp, format!("`{kp}` holds durations, found {}", other.describe()), Some(format!("expected {example}")))),
            })
            .collect::<Result<_, _>>()?,
        V::Str(s) => s.split(',').map(|p| (p.trim().to_string(), e.node.at.clone())).collect(),
        other => return Err(top.ctx.diag(crate::diag::DiagnosticKind::Type, &e.node.at, &kp, format!("`{kp}` must be an array of durations, found {}", other.describe()), Some(format!("expected {example}")))),
    };
    let mut out = Vec::with_capacity(items.len());
    for (text, at) in &items {
        let bad = |message: String, help: String| top.ctx.diag(crate::diag::DiagnosticKind::Value, at, &kp, message, Some(help));
        let ns = darkbuf_model::units::parse_duration_ns(text).map_err(|u| bad(format!("`{kp}`: \"{text}\": {}", u.message), format!("expected {}", u.expected)))?;
        if !(0..=crate::resolve::MAX_PATH_DELAY_NS as i128).contains(&ns) {
            return Err(bad(
                format!("`{kp}`: \"{text}\" is not a delay a host can be at"),
                format!("expected 0s .. {}s, as path_delay", crate::resolve::MAX_PATH_DELAY_NS / 1_000_000_000),
            ));
        }
        out.push(ns as u64);
    }
    let count_err = |message: String, help: String| params.value_err(key, message, Some(help));
    match fixed {
        Some(n) if out.len() != n => Err(count_err(
            format!("test = \"{name}\" runs to {n} hosts (flent's {name}.conf: min_host_count({n})), and {kp} names {}", out.len()),
            format!("give {n} delays, or use test = \"rtt_fair_var\" (any number of hosts)"),
        )),
        None if out.is_empty() || out.len() > MAX_HOSTS => Err(count_err(format!("`{kp}` names {} hosts", out.len()), format!("expected 1..={MAX_HOSTS} hosts (each is up to three [[traffic]] entries)"))),
        _ => Ok(out),
    }
}

/// `[test_parameters]`: the stream counts of a test that reads them. flent's `tcp_nup`
/// without `upload_streams` stops ("Missing required test parameter"); so does this. A
/// parameter the test does not read, or one its `.conf` fixes to another value, is an
/// error rather than ignored, as flent would: the run would not be what was asked.
fn test_streams(top: &Sec<'_>, name: &'static str) -> Result<Vec<(&'static str, u32)>, Diagnostic> {
    let params = top.sub("test_parameters")?;
    params.check_keys(PARAMETERS, Some("flent's test parameters that the presets read"))?;
    let wanted = stream_parameters(name);
    let mut out = Vec::new();
    for key in ["upload_streams", "download_streams"] {
        let given = params.int_opt(key, 1, MAX_STREAMS as i64)?.map(|n| n as u32);
        let Some(&(p, fixed)) = wanted.iter().find(|(p, _)| *p == key) else {
            if given.is_some() {
                let reads = match wanted.as_slice() {
                    [] if host_count(name).is_some() => "it reads only host_delays".to_string(),
                    [] => "it reads no test parameters".to_string(),
                    w => format!("it reads only {}", w.iter().map(|(p, _)| *p).collect::<Vec<_>>().join(" and ")),
                };
                return Err(params.value_err(
                    key,
                    format!("test = \"{name}\" does not read the test parameter {key}: {reads}"),
                    Some(format!(
                        "remove test_parameters.{key}; upload_streams is for {}, download_streams for {}",
                        quoted(&tests_reading("upload_streams")),
                        quoted(&tests_reading("download_streams"))
                    )),
                ));
            }
            continue;
        };
        let n = match (fixed, given) {
            (None, Some(n)) => n,
            (None, None) => {
                return Err(top.value_err(
                    "test",
                    format!("test = \"{name}\" needs the test parameter {p}: flent stops with \"Missing required test parameter\" without it"),
                    Some(format!("add [test_parameters] {p} = N (flent's --test-parameter {p}=N), N in 1..={MAX_STREAMS}")),
                ))
            }
            (Some(fixed), Some(n)) if n != fixed => {
                let (dir, open) = if p == "upload_streams" { ("upload", "tcp_nup") } else { ("download", "tcp_ndown") };
                return Err(params.value_err(
                    p,
                    format!("test = \"{name}\" runs {fixed} {dir} streams (flent's {name}.conf sets {p} = {fixed}), not {n}"),
                    Some(format!("use test = \"{open}\" for {n} streams, or remove test_parameters.{p}")),
                ));
            }
            (Some(fixed), _) => fixed,
        };
        out.push((p, n));
    }
    Ok(out)
}

/// The tests that read `parameter`.
fn tests_reading(parameter: &str) -> Vec<&'static str> {
    STREAM_TESTS.iter().filter(|(_, p, _)| *p == parameter).map(|(t, _, _)| *t).collect()
}

fn quoted(names: &[&str]) -> String {
    names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
}

/// Expands `test = "..."` in the document: the preset's entries (with the scenario's
/// entries of the same `name` merged into them) followed by the scenario's other
/// entries. `None` when the scenario names no test.
pub(crate) fn expand(root: &Node, top: &Sec<'_>, total_ns: u64, driver: Driver) -> Result<Option<Node>, Diagnostic> {
    let Some(Requested { name, delay_ns: delay, streams, hosts }) = requested(top)? else { return Ok(None) };
    let at = top.origin("test");
    if driver != Driver::Nic && hosts.iter().any(|&d| d > 0) {
        let params = top.sub("test_parameters")?;
        return Err(params.value_err(
            "host_delays",
            format!("hosts at other distances need a wire to delay their packets on, and device.driver = \"{}\" has none", driver.name()),
            Some("use device.driver = \"nic\", or give every host 0s".into()),
        ));
    }
    let list = entries_to_hosts(name, total_ns, delay, &streams, &hosts).map_err(|e| match e {
        PresetError::TooShort { factor } => top.value_err(
            "test",
            format!(
                "test = \"{name}\" runs its flows for warmup + duration - {factor} x test_delay, and that is {} ms - {factor} x {} ms",
                total_ns / 1_000_000,
                delay / 1_000_000
            ),
            Some(format!("expected a shorter test_delay (flent's --delay, default \"5s\"), e.g. test_delay = \"{}ms\", or a longer duration", (total_ns / (factor + 1)) / 1_000_000)),
        ),
        // requested() has the count of every N-stream test.
        PresetError::NoStreams { parameter } => top.value_err("test", format!("test = \"{name}\" needs the test parameter {parameter}"), None),
        // requested() has the hosts of every rtt_fair_var* test.
        PresetError::NoHosts => top.value_err("test", format!("test = \"{name}\" needs test_parameters.host_delays"), None),
    })?;
    check_downloads(top, name, &list, driver)?;
    let own: &[Node] = match top.entry("traffic").map(|e| &e.node.v) {
        Some(V::Array(a)) => a,
        Some(_) => return Ok(None), // resolve_traffic reports the type error
        None => &[],
    };
    let mut used = vec![false; own.len()];
    let mut out: Vec<Node> = Vec::with_capacity(list.len() + own.len());
    for p in &list {
        let mut t = preset_table(p, &at);
        if let Some(i) = own.iter().position(|n| entry_name(n) == Some(p.name.as_str())) {
            used[i] = true;
            if let V::Table(o) = &own[i].v {
                merge(&mut t, o);
            }
        }
        out.push(Node { v: V::Table(t), at: at.clone() });
    }
    for (i, n) in own.iter().enumerate().filter(|(i, _)| !used[*i]) {
        unmatched_without_kind(top, name, &list, i, n)?;
        out.push(n.clone());
    }
    let mut doc = root.clone();
    if let V::Table(t) = &mut doc.v {
        let node = Node { v: V::Array(out), at: at.clone() };
        match t.entries.iter_mut().find(|e| e.key == "traffic") {
            Some(e) => e.node = node,
            None => t.entries.push(Entry { key: "traffic".into(), key_at: at, node }),
        }
    }
    Ok(Some(doc))
}

/// Downloads need a far end that sends: a NIC's far host, or veth's peer namespace
/// (not through a `[lan]` router); over a radio the AP sends them. `driver` is the
/// checked `device.driver`.
fn check_downloads(top: &Sec<'_>, name: &str, list: &[PresetEntry], driver: Driver) -> Result<(), Diagnostic> {
    let downs = list.iter().filter(|p| p.keys.contains(&("direction", Val::Str("down".into())))).count();
    let lan = top.entry("lan").is_some();
    // Over a radio a download is the AP sending to its station (flent run on the
    // station against a server behind the AP).
    if downs == 0 || driver == Driver::Nic || driver == Driver::Wifi || (driver == Driver::Veth && !lan) {
        return Ok(());
    }
    let why = if lan { " through the [lan] router" } else { "" };
    Err(top.value_err(
        "test",
        format!("test = \"{name}\" has {downs} TCP download flows, and the far end of device.driver = \"{}\"{why} does not send: a NIC's far host ([peer]) or veth's peer namespace does", driver.name()),
        Some(format!("use device.driver = \"nic\" or \"veth\" without [lan], or a test without downloads: {}", quoted(&upload_only_tests()))),
    ))
}

/// The tests without download flows.
fn upload_only_tests() -> Vec<&'static str> {
    let down = Val::Str("down".into());
    TESTS
        .iter()
        .copied()
        .filter(|t| entries_to_hosts(t, 100, 1, &[("upload_streams", 1), ("download_streams", 1)], &[0]).is_ok_and(|v| v.iter().all(|p| !p.keys.contains(&("direction", down.clone())))))
        .collect()
}

/// An entry of its own without a `kind` is meant to change a preset entry, by its
/// `name`: if no entry has that name, or the entry has no name (`--set traffic.0.cc=reno`
/// on a scenario whose flows all come from the test), say which names there are.
fn unmatched_without_kind(top: &Sec<'_>, test: &str, list: &[PresetEntry], i: usize, n: &Node) -> Result<(), Diagnostic> {
    let V::Table(t) = &n.v else { return Ok(()) };
    if t.get("kind").is_some() {
        return Ok(());
    }
    // A name that is not a string is a type error, not a missing name.
    if let Some(e) = t.get("name").filter(|e| !matches!(e.node.v, V::Str(_))) {
        let key = format!("traffic.{i}.name");
        return Err(top.ctx.diag(
            crate::diag::DiagnosticKind::Type,
            &e.node.at,
            &key,
            format!("`{key}` must be a string, found {}", e.node.v.describe()),
            Some(format!("expected one of test = \"{test}\"'s entry names: {}", quoted(&list.iter().map(|p| p.name.as_str()).collect::<Vec<_>>()))),
        ));
    }
    let names: Vec<&str> = list.iter().map(|p| p.name.as_str()).collect();
    let (at, key, message, help) = match entry_name(n) {
        Some(name) => (
            t.get("name").map_or(n.at.clone(), |e| e.node.at.clone()),
            format!("traffic.{i}.name"),
            format!("[[traffic]] entry {i} (name = \"{name}\", no kind) changes no entry of test = \"{test}\""),
            format!("expected one of the test's entry names: {}; or give the entry a kind to add it", quoted(&names)),
        ),
        None => (
            n.at.clone(),
            format!("traffic.{i}"),
            format!(
                "[[traffic]] entry {i} has neither a kind (to add a flow) nor a name (to change one of test = \"{test}\"'s); \
                 `traffic.N` is the scenario's own [[traffic]] entry N, not the test's"
            ),
            format!(
                "to change a flow of the test, give the entry that flow's name (name = \"{first}\", or --set traffic.{i}.name=\"{first}\") with the keys to change; the test's entry names: {}; or give the entry a kind to add a flow",
                quoted(&names),
                first = names.first().copied().unwrap_or(""),
            ),
        ),
    };
    Err(top.ctx.diag(crate::diag::DiagnosticKind::Value, &at, &key, message, Some(help)))
}

fn entry_name(n: &Node) -> Option<&str> {
    match &n.v {
        V::Table(t) => match t.get("name").map(|e| &e.node.v) {
            Some(V::Str(s)) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

/// The preset entry as a document table whose values point at `test = ...`.
fn preset_table(p: &PresetEntry, at: &Origin) -> Table {
    let node = |v: V| Node { v, at: at.clone() };
    let mut entries = vec![Entry { key: "name".into(), key_at: at.clone(), node: node(V::Str(p.name.clone())) }];
    for (k, v) in &p.keys {
        let v = match v {
            Val::Str(s) => V::Str(s.clone()),
            Val::Int(i) => V::Int(*i),
        };
        entries.push(Entry { key: (*k).into(), key_at: at.clone(), node: node(v) });
    }
    Table { entries }
}

/// The scenario's keys replace the preset's, key by key; new keys are added.
fn merge(t: &mut Table, own: &Table) {
    for e in &own.entries {
        match t.entries.iter_mut().find(|x| x.key == e.key) {
            Some(x) => *x = e.clone(),
            None => t.entries.push(e.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[PresetEntry]) -> Vec<&str> {
        v.iter().map(|p| p.name.as_str()).collect()
    }

    fn key<'a>(p: &'a PresetEntry, k: &str) -> &'a Val {
        &p.keys.iter().find(|(x, _)| *x == k).unwrap().1
    }

    #[test]
    fn rrul_is_flents_four_up_four_down_and_four_probes() {
        let v = entries("rrul", 70_000_000_000, 5_000_000_000, &[]).unwrap();
        assert_eq!(
            names(&v),
            [
                "TCP upload BE", "TCP upload BK", "TCP upload CS5", "TCP upload EF",
                "TCP download BE", "TCP download BK", "TCP download CS5", "TCP download EF",
                "Ping (ms) UDP EF", "Ping (ms) UDP BK", "Ping (ms) UDP BE", "Ping (ms) ICMP",
            ]
        );
        let dscp: Vec<&Val> = v[..8].iter().map(|p| key(p, "dscp")).collect();
        let want = [0, 8, 40, 46, 0, 8, 40, 46].map(Val::Int);
        assert_eq!(dscp, want.iter().collect::<Vec<_>>());
        // flent: LENGTH = 60 s of TCP after DELAY = 5 s, in a TOTAL_LENGTH of 70 s.
        assert_eq!(key(&v[0], "start"), &Val::Str("5000000000ns".into()));
        assert_eq!(key(&v[0], "stop"), &Val::Str("65000000000ns".into()));
        assert_eq!(key(&v[4], "direction"), &Val::Str("down".into()));
        assert_eq!(key(&v[8], "kind"), &Val::Str("irtt".into()));
        assert_eq!(key(&v[8], "dscp"), &Val::Int(46));
        assert_eq!(key(&v[8], "interval"), &Val::Str("200000000ns".into()));
        assert_eq!(v[11].keys, vec![("kind", Val::Str("ping".into())), ("interval", Val::Str("200000000ns".into()))]);
    }

    #[test]
    fn rrul_be_marks_nothing() {
        let v = entries("rrul_be", 3_000_000_000, 500_000_000, &[]).unwrap();
        assert_eq!(v.len(), 12);
        assert!(v.iter().all(|p| p.keys.iter().all(|(k, x)| *k != "dscp" || *x == Val::Int(0))));
        assert_eq!(names(&v)[8..], ["Ping (ms) UDP BE1", "Ping (ms) UDP BE2", "Ping (ms) UDP BE3", "Ping (ms) ICMP"]);
    }

    #[test]
    fn squarewave_staggers_at_0_1_5_3_delays() {
        let v = entries("tcp_4up_squarewave", 13_000_000_000, 1_000_000_000, &[]).unwrap();
        assert_eq!(names(&v), ["TCP bbr 1", "TCP cubic 2", "TCP cubic 3", "TCP bbr 4"]);
        let starts: Vec<&Val> = v.iter().map(|p| key(p, "start")).collect();
        let want = ["0ns", "1000000000ns", "5000000000ns", "3000000000ns"].map(|s| Val::Str(s.into()));
        assert_eq!(starts, want.iter().collect::<Vec<_>>());
        // Each runs LENGTH = 13 - 6 = 7 s.
        assert_eq!(key(&v[2], "stop"), &Val::Str("12000000000ns".into()));
        assert_eq!(key(&v[0], "cc"), &Val::Str("bbr".into()));
    }

    #[test]
    fn tcp_tests_and_ping() {
        assert_eq!(names(&entries("tcp_1up", 10, 1, &[]).unwrap()), ["TCP upload", "Ping (ms) ICMP"]);
        assert_eq!(
            names(&entries("tcp_4up", 10, 1, &[]).unwrap()),
            ["TCP upload::1", "TCP upload::2", "TCP upload::3", "TCP upload::4", "Ping (ms) ICMP"]
        );
        assert_eq!(names(&entries("ping", 10, 100, &[]).unwrap()), ["Ping (ms) ICMP"]);
    }

    #[test]
    fn n_stream_tests_are_tcp_nup_and_tcp_ndown() {
        let v = entries("tcp_nup", 10, 1, &[("upload_streams", 3)]).unwrap();
        assert_eq!(names(&v), ["TCP upload::1", "TCP upload::2", "TCP upload::3", "Ping (ms) ICMP"]);
        let v = entries("tcp_ndown", 10, 1, &[("download_streams", 2)]).unwrap();
        assert_eq!(names(&v), ["TCP download::1", "TCP download::2", "Ping (ms) ICMP"]);
        assert!(v[..2].iter().all(|p| key(p, "direction") == &Val::Str("down".into())));
        // The fixed ones ignore the count they are given: their .conf sets it.
        assert_eq!(entries("tcp_12down", 10, 1, &[("download_streams", 3)]).unwrap().len(), 13);
        assert_eq!(entries("tcp_6up", 10, 1, &[]).unwrap().len(), 7);
        assert_eq!(entries("tcp_nup", 10, 1, &[]), Err(PresetError::NoStreams { parameter: "upload_streams" }));
        assert_eq!(entries("tcp_ndown", 10, 1, &[]), Err(PresetError::NoStreams { parameter: "download_streams" }));
    }

    #[test]
    fn rrul_be_nflows_takes_both_counts() {
        let v = entries("rrul_be_nflows", 10, 1, &[("upload_streams", 2), ("download_streams", 3)]).unwrap();
        assert_eq!(
            names(&v),
            [
                "TCP upload BE::1", "TCP upload BE::2",
                "TCP download BE::1", "TCP download BE::2", "TCP download BE::3",
                "Ping (ms) UDP BE", "Ping (ms) ICMP",
            ]
        );
        assert_eq!(
            entries("rrul_be_nflows", 10, 1, &[("upload_streams", 2)]),
            Err(PresetError::NoStreams { parameter: "download_streams" })
        );
        assert_eq!(stream_parameters("rrul_be_nflows"), [("upload_streams", None), ("download_streams", None)]);
    }

    #[test]
    fn single_stream_and_bidirectional_tests() {
        assert_eq!(names(&entries("tcp_1down", 10, 1, &[]).unwrap()), ["TCP download", "Ping (ms) ICMP"]);
        assert_eq!(names(&entries("tcp_download", 10, 1, &[]).unwrap()), ["TCP download", "Ping (ms) ICMP"]);
        assert_eq!(names(&entries("tcp_upload", 10, 1, &[]).unwrap()), ["TCP upload", "Ping (ms) ICMP"]);
        let v = entries("tcp_bidirectional", 10, 1, &[]).unwrap();
        assert_eq!(names(&v), ["TCP download", "TCP upload", "Ping (ms) ICMP"]);
        assert_eq!((key(&v[0], "direction"), key(&v[1], "direction")), (&Val::Str("down".into()), &Val::Str("up".into())));
    }

    #[test]
    fn tcp_2up_delay_starts_its_second_stream_a_delay_late() {
        // flent: TOTAL_LENGTH = LENGTH + DELAY; stream 1 for all of it, stream 2 after DELAY.
        let v = entries("tcp_2up_delay", 10_000, 3_000, &[]).unwrap();
        assert_eq!(names(&v), ["TCP stream 1", "TCP stream 2"]);
        let span = |p: &PresetEntry| (key(p, "start").clone(), key(p, "stop").clone());
        assert_eq!(span(&v[0]), (Val::Str("0ns".into()), Val::Str("10000ns".into())));
        assert_eq!(span(&v[1]), (Val::Str("3000ns".into()), Val::Str("10000ns".into())));
        assert_eq!(entries("tcp_2up_delay", 10, 10, &[]), Err(PresetError::TooShort { factor: 1 }));
    }

    #[test]
    fn rrul_up_is_rrul_without_downloads_and_noping_is_one_upload() {
        let up = entries("rrul_up", 70_000, 5_000, &[]).unwrap();
        let rrul = entries("rrul", 70_000, 5_000, &[]).unwrap();
        let no_downloads: Vec<PresetEntry> = rrul.into_iter().filter(|p| !p.name.starts_with("TCP download")).collect();
        assert_eq!(up, no_downloads);
        let v = entries("tcp_1up_noping", 10_000, 0, &[]).unwrap();
        assert_eq!(names(&v), ["TCP upload"]);
        assert_eq!((key(&v[0], "start"), key(&v[0], "stop")), (&Val::Str("0ns".into()), &Val::Str("10000ns".into())));
    }

    #[test]
    fn rrul_cs8_marks_each_class_selector() {
        let v = entries("rrul_cs8", 70_000, 5_000, &[]).unwrap();
        assert_eq!(v.len(), 8 + 8 + 8 + 1);
        assert_eq!(names(&v)[..3], ["TCP upload CS0_BE", "TCP upload CS1_BK", "TCP upload CS2"]);
        assert_eq!(names(&v)[8], "TCP download CS0_BE");
        let dscp: Vec<&Val> = v[8..16].iter().map(|p| key(p, "dscp")).collect();
        let want = [0, 8, 16, 24, 32, 40, 48, 56].map(Val::Int);
        assert_eq!(dscp, want.iter().collect::<Vec<_>>());
        // flent lists the UDP pings from CS7 down to CS0_BE.
        assert_eq!((names(&v)[16], key(&v[16], "dscp")), ("Ping (ms) UDP CS7", &Val::Int(56)));
        assert_eq!((names(&v)[23], key(&v[23], "dscp")), ("Ping (ms) UDP CS0_BE", &Val::Int(0)));
        assert_eq!(names(&v)[24], "Ping (ms) ICMP");
    }

    #[test]
    fn upload_only_tests_are_the_ones_a_veth_can_run() {
        assert_eq!(
            upload_only_tests(),
            [
                "ping",
                "rrul_up",
                "tcp_1up",
                "tcp_1up_noping",
                "tcp_upload",
                "tcp_nup",
                "tcp_2up",
                "tcp_4up",
                "tcp_6up",
                "tcp_8up",
                "tcp_12up",
                "tcp_2up_delay",
                "tcp_4up_squarewave",
                "rtt_fair_up",
                "rtt_fair_var_up",
                // No TCP download: the far end's voice stream is the voip entry's own.
                "voip",
                "voip-1up"
            ]
        );
    }

    #[test]
    fn cubic_against_bbr_and_reno_each_marked_be_and_cs1() {
        let v = entries("cubic_bbr", 10_000, 1_000, &[]).unwrap();
        assert_eq!(
            names(&v),
            [
                "TCP upload Cubic BE",
                "TCP upload BBR BE",
                "TCP upload Cubic CS1",
                "TCP upload BBR CS1",
                "TCP download Cubic BE",
                "TCP download BBR BE",
                "TCP download Cubic CS1",
                "TCP download BBR CS1",
                "Ping (ms) UDP BE",
                "Ping (ms) UDP CS1",
                "Ping (ms) UDP CS6",
                "Ping (ms) ICMP"
            ]
        );
        let cc_dscp: Vec<(&Val, &Val)> = v[4..8].iter().map(|p| (key(p, "cc"), key(p, "dscp"))).collect();
        let s = |x: &str| Val::Str(x.into());
        assert_eq!(cc_dscp, [(&s("cubic"), &Val::Int(0)), (&s("bbr"), &Val::Int(0)), (&s("cubic"), &Val::Int(8)), (&s("bbr"), &Val::Int(8))]);
        assert_eq!(key(&v[10], "dscp"), &Val::Int(48));
        assert_eq!((key(&v[0], "start"), key(&v[0], "stop")), (&dur(1_000), &dur(9_000)));
        let r = entries("cubic_reno", 10_000, 1_000, &[]).unwrap();
        assert_eq!((r[3].name.as_str(), key(&r[3], "cc")), ("TCP upload Reno CS1", &s("reno")));
    }

    #[test]
    fn rtt_fair_var_needs_hosts_and_fixed_host_tests_default_to_four() {
        assert_eq!(entries("rtt_fair_var", 10, 1, &[]), Err(PresetError::NoHosts));
        assert_eq!(entries("rtt_fair", 10, 1, &[]).unwrap().len(), 12);
        assert_eq!(entries("rtt_fair_up", 10, 1, &[]).unwrap().len(), 8);
        let v = entries_to_hosts("rtt_fair_var_down", 10, 1, &[], &[0, 7]).unwrap();
        assert_eq!(names(&v), ["TCP download BE host1", "Ping (ms) ICMP host1", "TCP download BE host2", "Ping (ms) ICMP host2"]);
        // A host at the shared path's distance carries no path_delay key.
        assert!(!v[0].keys.iter().any(|(k, _)| *k == "path_delay"));
        assert_eq!(key(&v[3], "path_delay"), &Val::Str("7ns".into()));
        assert_eq!(host_count("rtt_fair"), Some(Some(4)));
        assert_eq!(host_count("rtt_fair_var_up"), Some(None));
        assert_eq!(host_count("rrul"), None);
    }

    #[test]
    fn too_short_for_the_delay() {
        assert_eq!(entries("rrul", 10, 5, &[]), Err(PresetError::TooShort { factor: 2 }));
        assert_eq!(entries("tcp_4up_squarewave", 60, 10, &[]), Err(PresetError::TooShort { factor: 6 }));
    }
}
