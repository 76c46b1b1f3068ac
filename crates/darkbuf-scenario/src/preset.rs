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

use crate::diag::Diagnostic;
use crate::resolve::Sec;
use crate::schema::Driver;
use crate::tree::{Entry, Node, Origin, Table, V};

/// The presets, by flent's test name.
pub const TESTS: &[&str] = &["ping", "rrul", "rrul_be", "tcp_1up", "tcp_4up", "tcp_4up_squarewave"];

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

/// DSCP code points of flent's netperf markings (`-Y CS1,CS1` ...).
const CS0: i64 = 0;
const CS1: i64 = 8;
const CS5: i64 = 40;
const EF: i64 = 46;

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

/// Why a preset cannot be laid out on this run.
#[derive(Debug, PartialEq, Eq)]
pub enum PresetError {
    /// The run is too short for the flows: `TOTAL_LENGTH - factor * DELAY` <= 0.
    TooShort { factor: u64 },
}

/// The entries of test `name` on a run of `total_ns` with flent's `DELAY` = `delay_ns`.
pub fn entries(name: &str, total_ns: u64, delay_ns: u64) -> Result<Vec<PresetEntry>, PresetError> {
    let factor = if name == "tcp_4up_squarewave" { 6 } else { 2 };
    let length = match name {
        "ping" => total_ns,
        _ => total_ns.checked_sub(factor * delay_ns).filter(|l| *l > 0).ok_or(PresetError::TooShort { factor })?,
    };
    let (start, stop) = (delay_ns, delay_ns + length);
    let both = |names: &[(&str, i64)]| -> Vec<PresetEntry> {
        let mut v: Vec<PresetEntry> =
            names.iter().map(|(n, d)| tcp(format!("TCP upload {n}"), "up", "cubic", *d, start, stop)).collect();
        v.extend(names.iter().map(|(n, d)| tcp(format!("TCP download {n}"), "down", "cubic", *d, start, stop)));
        v
    };
    Ok(match name {
        "ping" => vec![icmp()],
        "tcp_1up" => vec![tcp("TCP upload".into(), "up", "cubic", CS0, start, stop), icmp()],
        // tcp_nup.conf with upload_streams = 4: flent names duplicates `NAME::i`.
        "tcp_4up" => {
            let mut v: Vec<PresetEntry> =
                (1..=4).map(|i| tcp(format!("TCP upload::{i}"), "up", "cubic", CS0, start, stop)).collect();
            v.push(icmp());
            v
        }
        "tcp_4up_squarewave" => [("TCP bbr 1", "bbr", 0), ("TCP cubic 2", "cubic", 1), ("TCP cubic 3", "cubic", 5), ("TCP bbr 4", "bbr", 3)]
            .iter()
            .map(|(n, cc, k)| tcp((*n).into(), "up", cc, CS0, k * delay_ns, k * delay_ns + length))
            .collect(),
        "rrul" => {
            let mut v = both(&[("BE", CS0), ("BK", CS1), ("CS5", CS5), ("EF", EF)]);
            v.extend([udp_rtt("Ping (ms) UDP EF", EF), udp_rtt("Ping (ms) UDP BK", CS1), udp_rtt("Ping (ms) UDP BE", CS0), icmp()]);
            v
        }
        "rrul_be" => {
            let mut v = both(&[("BE", CS0), ("BE2", CS0), ("BE3", CS0), ("BE4", CS0)]);
            v.extend([udp_rtt("Ping (ms) UDP BE1", CS0), udp_rtt("Ping (ms) UDP BE2", CS0), udp_rtt("Ping (ms) UDP BE3", CS0), icmp()]);
            v
        }
        _ => unreachable!("test names are checked against TESTS"),
    })
}

/// The preset a scenario asks for: (test name, flent's DELAY in ns), or `None`.
pub(crate) fn requested(top: &Sec<'_>) -> Result<Option<(&'static str, u64)>, Diagnostic> {
    if top.entry("test").is_none() {
        if top.entry("test_delay").is_some() {
            return Err(top.value_err(
                "test_delay",
                "`test_delay` without `test`: it is flent's --delay for a test preset".into(),
                Some(format!("add test = \"...\" (one of {}), or remove test_delay", quoted(TESTS))),
            ));
        }
        return Ok(None);
    }
    let name = top.choice("test", "rrul", TESTS)?;
    let delay = top.duration("test_delay", DEFAULT_DELAY_NS, false)?;
    Ok(Some((name, delay)))
}

fn quoted(names: &[&str]) -> String {
    names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
}

/// Expands `test = "..."` in the document: the preset's entries (with the scenario's
/// entries of the same `name` merged into them) followed by the scenario's other
/// entries. `None` when the scenario names no test.
pub(crate) fn expand(root: &Node, top: &Sec<'_>, total_ns: u64, driver: Driver) -> Result<Option<Node>, Diagnostic> {
    let Some((name, delay)) = requested(top)? else { return Ok(None) };
    let at = top.origin("test");
    let list = entries(name, total_ns, delay).map_err(|PresetError::TooShort { factor }| {
        top.value_err(
            "test",
            format!(
                "test = \"{name}\" runs its flows for warmup + duration - {factor} x test_delay, and that is {} ms - {factor} x {} ms",
                total_ns / 1_000_000,
                delay / 1_000_000
            ),
            Some(format!("expected a shorter test_delay (flent's --delay, default \"5s\"), e.g. test_delay = \"{}ms\", or a longer duration", (total_ns / (factor + 1)) / 1_000_000)),
        )
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

/// Downloads need a far host that sends: only a NIC has one. `driver` is the checked
/// `device.driver`.
fn check_downloads(top: &Sec<'_>, name: &str, list: &[PresetEntry], driver: Driver) -> Result<(), Diagnostic> {
    let downs = list.iter().filter(|p| p.keys.contains(&("direction", Val::Str("down".into())))).count();
    if downs == 0 || driver == Driver::Nic {
        return Ok(());
    }
    Err(top.value_err(
        "test",
        format!("test = \"{name}\" has {downs} TCP download flows, and the far end of device.driver = \"{}\" does not send: only a NIC's far host ([peer]) is modelled", driver.name()),
        Some(format!("use device.driver = \"nic\", or a test without downloads: {}", quoted(&["ping", "tcp_1up", "tcp_4up", "tcp_4up_squarewave"]))),
    ))
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
        let v = entries("rrul", 70_000_000_000, 5_000_000_000).unwrap();
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
        let v = entries("rrul_be", 3_000_000_000, 500_000_000).unwrap();
        assert_eq!(v.len(), 12);
        assert!(v.iter().all(|p| p.keys.iter().all(|(k, x)| *k != "dscp" || *x == Val::Int(0))));
        assert_eq!(names(&v)[8..], ["Ping (ms) UDP BE1", "Ping (ms) UDP BE2", "Ping (ms) UDP BE3", "Ping (ms) ICMP"]);
    }

    #[test]
    fn squarewave_staggers_at_0_1_5_3_delays() {
        let v = entries("tcp_4up_squarewave", 13_000_000_000, 1_000_000_000).unwrap();
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
        assert_eq!(names(&entries("tcp_1up", 10, 1).unwrap()), ["TCP upload", "Ping (ms) ICMP"]);
        assert_eq!(
            names(&entries("tcp_4up", 10, 1).unwrap()),
            ["TCP upload::1", "TCP upload::2", "TCP upload::3", "TCP upload::4", "Ping (ms) ICMP"]
        );
        assert_eq!(names(&entries("ping", 10, 100).unwrap()), ["Ping (ms) ICMP"]);
    }

    #[test]
    fn too_short_for_the_delay() {
        assert_eq!(entries("rrul", 10, 5), Err(PresetError::TooShort { factor: 2 }));
        assert_eq!(entries("tcp_4up_squarewave", 60, 10), Err(PresetError::TooShort { factor: 6 }));
    }
}
