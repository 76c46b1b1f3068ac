//! `darkbuf check`: what the running kernel can do, probed (never assumed) in a scratch
//! namespace that is always removed, plus the leftovers of killed runs.
//!
//! Probes, following docs/reference/real-kernel-notes.md "Recommendations":
//! - every qdisc kind of `darkbuf_model::qdisc::ALL_KINDS`: `tc qdisc replace ... root
//!   KIND` on a veth ("Specified qdisc kind is unknown" = not available);
//! - BQL: a `byte_queue_limits` directory under `queues/tx-0` of a veth and of a tap;
//! - threaded NAPI: `/sys/class/net/DEV/threaded` accepts 1 once the peer has GRO on,
//!   and a `napi/DEV-*` kthread appears;
//! - ethtool: `-K gro` / `-K tso`, `-L` channels (the maximum), `-C tx-usecs`;
//! - netfilter: `nft -f` and `iptables-restore` of a one-rule table;
//! - tracefs (mounted, or mountable) and the `napi:napi_poll` tracepoint;
//! - veth ring backpressure (v6.16, dc82a33297fc): by kernel version, as it has no knob.

use crate::cmd;
use crate::names::{self, Leftover, Names};
use crate::{KernelVersion, Result};
use serde::Serialize;
use std::collections::BTreeMap;

/// One probed capability. `available` is `None` when it could not be probed (not root).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Probe {
    pub available: Option<bool>,
    pub detail: String,
}

impl Probe {
    pub fn yes(detail: impl Into<String>) -> Probe {
        Probe { available: Some(true), detail: detail.into() }
    }
    pub fn no(detail: impl Into<String>) -> Probe {
        Probe { available: Some(false), detail: detail.into() }
    }
    pub fn unknown(detail: impl Into<String>) -> Probe {
        Probe { available: None, detail: detail.into() }
    }
    pub fn is_yes(&self) -> bool {
        self.available == Some(true)
    }
}

/// What `darkbuf check` reports (its JSON form).
#[derive(Clone, Debug, Serialize)]
pub struct Capabilities {
    pub kernel: String,
    pub kernel_version: String,
    pub hz: Option<u32>,
    pub cpus: usize,
    pub cpu: String,
    pub root: bool,
    /// Tool name -> path (null if missing).
    pub tools: BTreeMap<String, Option<String>>,
    /// Qdisc kind -> probe.
    pub qdiscs: BTreeMap<String, Probe>,
    /// Feature -> probe: bql.veth, bql.tap, napi.threaded, ethtool.gro, ethtool.tso,
    /// ethtool.channels, ethtool.tx_usecs, veth.backpressure, rules.nft,
    /// rules.iptables, tracefs, tracepoint.napi_poll.
    pub features: BTreeMap<String, Probe>,
    /// The physical NICs and their BQL, read-only.
    pub nics: Vec<crate::nics::NicInfo>,
    /// The command that installs the missing tools (Debian/Ubuntu), if any is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub install: Option<String>,
    /// darkbuf-named objects found (an owner still running means in use, not left over).
    pub leftovers: Vec<Leftover>,
    /// With --cleanup: what was removed, and what could not be.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cleanup_errors: Vec<String>,
}

pub const TOOLS: &[&str] = &["ip", "tc", "ethtool", "nft", "iptables-restore", "zcat"];

/// The Debian/Ubuntu package of each tool in [`TOOLS`].
pub const TOOL_PACKAGES: &[(&str, &str)] = &[
    ("ip", "iproute2"),
    ("tc", "iproute2"),
    ("ethtool", "ethtool"),
    ("nft", "nftables"),
    ("iptables-restore", "iptables"),
    ("zcat", "gzip"),
];

/// The command that installs the kernel backend's missing tools on Debian or Ubuntu,
/// if any is missing (`tools`: name -> path).
pub fn install_command(tools: &BTreeMap<String, Option<String>>) -> Option<String> {
    let mut pkgs: Vec<&str> = TOOL_PACKAGES
        .iter()
        .filter(|(t, _)| tools.get(*t).is_some_and(|p| p.is_none()))
        .map(|(_, p)| *p)
        .collect();
    pkgs.dedup();
    (!pkgs.is_empty()).then(|| format!("sudo apt-get install {}", pkgs.join(" ")))
}

/// Qdiscs the kernel backend can check for that the simulator does not model yet.
pub const KERNEL_ONLY_KINDS: &[&str] = &["netem", "ingress", "clsact"];

/// Minimal parameters a kind needs before `tc` accepts it at all.
fn probe_params(kind: &str) -> &'static [&'static str] {
    match kind {
        "tbf" => &["rate", "1mbit", "burst", "10kb", "latency", "50ms"],
        _ => &[],
    }
}

/// The kernel version whose veth stops its queue on a full ptr_ring (NETDEV_TX_BUSY).
pub const VETH_BACKPRESSURE_SINCE: KernelVersion = KernelVersion(6, 16, 0);

/// Removes the scratch namespace on drop.
struct Scratch {
    ns: String,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = cmd::run("ip", &["netns", "del", &self.ns]);
    }
}

fn first_line(s: &str) -> String {
    let l = s.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    l.strip_prefix("Error: ").unwrap_or(l).to_string()
}

/// Probes everything. `cleanup` removes leftovers whose owner is not running (root only).
pub fn check(cleanup: bool) -> Result<Capabilities> {
    if cleanup {
        crate::error::require_root()?;
    }
    let kv = KernelVersion::running();
    let root = crate::error::is_root();
    let mut caps = Capabilities {
        kernel: crate::uname_release(),
        kernel_version: kv.to_string(),
        hz: crate::config_hz(),
        cpus: crate::online_cpus(),
        cpu: crate::cpu_model(),
        root,
        tools: TOOLS.iter().map(|t| (t.to_string(), cmd::which(t))).collect(),
        qdiscs: BTreeMap::new(),
        features: BTreeMap::new(),
        nics: crate::nics::list(std::path::Path::new("/sys/class/net")),
        install: None,
        leftovers: Vec::new(),
        removed: Vec::new(),
        cleanup_errors: Vec::new(),
    };
    caps.install = install_command(&caps.tools);
    let bp = if kv >= VETH_BACKPRESSURE_SINCE {
        Probe::yes(format!("kernel {kv} >= 6.16: veth stops its txq on a full ptr_ring (dc82a33297fc) in NAPI mode"))
    } else {
        Probe::no(format!("kernel {kv} < 6.16: veth drops at a full ptr_ring, the qdisc never queues"))
    };
    caps.features.insert("veth.backpressure".into(), bp);
    // TCP congestion controls a `kind = "tcp"` entry may name (readable without root).
    let cc = std::fs::read_to_string(crate::tcp::AVAILABLE_CC).unwrap_or_default();
    for name in darkbuf_scenario::CC_NAMES {
        let p = if cc.split_whitespace().any(|c| c == *name) {
            Probe::yes(format!("in {}", crate::tcp::AVAILABLE_CC))
        } else {
            Probe::no(format!("not in {} ({}); `modprobe tcp_{name}` may add it", crate::tcp::AVAILABLE_CC, cc.trim()))
        };
        caps.features.insert(format!("tcp.cc.{name}"), p);
    }
    // The kernel's other congestion controls, listed as it has them.
    for name in cc.split_whitespace().filter(|c| !darkbuf_scenario::CC_NAMES.contains(c)) {
        caps.features.insert(format!("tcp.cc.{name}"), Probe::yes(format!("in {}; the simulator does not model it", crate::tcp::AVAILABLE_CC)));
    }
    if root {
        let scratch_dev = probe_as_root(&mut caps, kv);
        // The scratch namespace's devices (and their NAPI kthreads) are freed
        // asynchronously; wait briefly so they are not listed as leftovers.
        let end = std::time::Instant::now() + std::time::Duration::from_secs(3);
        while !names::napi_threads_of(&scratch_dev).is_empty() && std::time::Instant::now() < end {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    } else {
        for k in darkbuf_model::qdisc::ALL_KINDS {
            caps.qdiscs.insert(k.to_string(), Probe::unknown("not probed: needs root"));
        }
        for f in ["bql.veth", "bql.tap", "napi.threaded", "ethtool.gro", "ethtool.tso", "ethtool.channels", "ethtool.tx_usecs", "rules.nft", "rules.iptables"] {
            caps.features.insert(f.into(), Probe::unknown("not probed: needs root"));
        }
        let t = match crate::trace::tracefs_mount() {
            Some(p) => Probe::yes(format!("mounted at {}", p.display())),
            None => Probe::unknown("not mounted; mounting it needs root"),
        };
        caps.features.insert("tracefs".into(), t);
        caps.features.insert("tracepoint.napi_poll".into(), Probe::unknown("not probed: needs root"));
    }
    caps.leftovers = names::find_leftovers();
    if cleanup {
        let (removed, errors) = names::remove_leftovers(&caps.leftovers);
        caps.removed = removed;
        caps.cleanup_errors = errors;
        caps.leftovers = names::find_leftovers();
        if !caps.removed.is_empty() {
            caps.leftovers = wait_for_napi_threads(caps.leftovers, NAPI_THREAD_GRACE);
        }
    }
    Ok(caps)
}

/// How long `check --cleanup` waits for the NAPI kthreads of the devices it removed.
/// `ip netns del` returns at once; the kernel then frees the namespace's devices from
/// a workqueue (cleanup_net()), after RCU grace periods, and only then stops each
/// device's kthread (`__netif_napi_del()`: kthread_stop()). On a busy machine that
/// takes a moment, and the first `check` after a cleanup listed the kthread as a
/// leftover (issue 48).
const NAPI_THREAD_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// `leftovers`, after waiting up to `grace` for the NAPI kthreads among them whose
/// owner is gone: they end with their device.
fn wait_for_napi_threads(mut leftovers: Vec<names::Leftover>, grace: std::time::Duration) -> Vec<names::Leftover> {
    let end = std::time::Instant::now() + grace;
    let dying = |l: &[names::Leftover]| l.iter().any(|x| x.kind == "napi-thread" && !x.owner_alive);
    while dying(&leftovers) && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(50));
        leftovers = names::find_leftovers();
    }
    leftovers
}

/// Probes in a scratch namespace (removed on return); returns the scratch peer's name.
fn probe_as_root(caps: &mut Capabilities, _kv: KernelVersion) -> String {
    let n = Names::new(std::process::id(), 35);
    let ns = format!("{}-check", n.tag);
    let (s, r, tap) = (n.dev_tx.clone(), n.dev_rx.clone(), n.tap.clone());
    let f = &mut caps.features;
    if cmd::which("ip").is_none() {
        for k in darkbuf_model::qdisc::ALL_KINDS {
            caps.qdiscs.insert(k.to_string(), Probe::unknown("`ip` (iproute2) is not installed"));
        }
        return r;
    }
    let created = cmd::run("ip", &["netns", "add", &ns]);
    if !matches!(&created, Ok(o) if o.ok()) {
        let why = match created {
            Ok(o) => first_line(&o.stderr),
            Err(e) => e.to_string(),
        };
        for k in darkbuf_model::qdisc::ALL_KINDS {
            caps.qdiscs.insert(k.to_string(), Probe::unknown(format!("cannot create a scratch namespace: {why}")));
        }
        return r;
    }
    let _guard = Scratch { ns: ns.clone() };
    let ipn = |args: &[&str]| {
        let mut v = vec!["-n", ns.as_str()];
        v.extend_from_slice(args);
        cmd::run("ip", &v)
    };
    let veth = ipn(&["link", "add", &s, "type", "veth", "peer", "name", &r]);
    let veth_ok = matches!(&veth, Ok(o) if o.ok());
    if !veth_ok {
        let why = veth.map(|o| first_line(&o.stderr)).unwrap_or_else(|e| e.to_string());
        for k in darkbuf_model::qdisc::ALL_KINDS {
            caps.qdiscs.insert(k.to_string(), Probe::unknown(format!("no veth to probe on: {why}")));
        }
        f.insert("bql.veth".into(), Probe::unknown(format!("cannot create a veth pair: {why}")));
    } else {
        let _ = ipn(&["link", "set", &s, "up"]);
        let _ = ipn(&["link", "set", &r, "up"]);
        probe_qdiscs(&mut caps.qdiscs, &ns, &s);
        // An ifb device, which ingress shaping redirects to (sqm-scripts' setup).
        let ifb = format!("{}i", &s[..s.len() - 1]);
        let p = match ipn(&["link", "add", "name", &ifb, "type", "ifb"]) {
            Ok(o) if o.ok() => Probe::yes("ip link add type ifb"),
            Ok(o) => Probe::no(first_line(&o.stderr)),
            Err(e) => Probe::unknown(e.to_string()),
        };
        let _ = ipn(&["link", "del", &ifb]);
        f.insert("dev.ifb".into(), p);
        // BQL on veth.
        let bql = format!("/sys/class/net/{s}/queues/tx-0/byte_queue_limits");
        let p = match cmd::run_in(&ns, "test", &["-d", &bql], None) {
            Ok(o) if o.ok() => Probe::yes(format!("{bql} present (not verified under load)")),
            Ok(_) => Probe::no("veth has no queues/tx-0/byte_queue_limits (no BQL on veth in this kernel)"),
            Err(e) => Probe::unknown(e.to_string()),
        };
        f.insert("bql.veth".into(), p);
        probe_ethtool(f, &ns, &s, &r);
    }
    // BQL on tap.
    let tp = match ipn(&["tuntap", "add", "dev", &tap, "mode", "tap"]) {
        Ok(o) if o.ok() => {
            let bql = format!("/sys/class/net/{tap}/queues/tx-0/byte_queue_limits");
            match cmd::run_in(&ns, "test", &["-d", &bql], None) {
                Ok(o) if o.ok() => Probe::yes(format!("{bql} present")),
                Ok(_) => Probe::no("tap has no queues/tx-0/byte_queue_limits (tun does not use BQL)"),
                Err(e) => Probe::unknown(e.to_string()),
            }
        }
        Ok(o) => Probe::unknown(format!("cannot create a tap: {}", first_line(&o.stderr))),
        Err(e) => Probe::unknown(e.to_string()),
    };
    f.insert("bql.tap".into(), tp);
    probe_rules_and_trace(f, &ns);
    r
}

/// Each qdisc kind, the simulator's and the kernel-only ones: does `tc qdisc replace`
/// take it on device `s` of namespace `ns`?
fn probe_qdiscs(qdiscs: &mut BTreeMap<String, Probe>, ns: &str, s: &str) {
    for k in darkbuf_model::qdisc::ALL_KINDS.iter().chain(KERNEL_ONLY_KINDS) {
        let at: &[&str] = if matches!(*k, "ingress" | "clsact") { &[] } else { &["root"] };
        let mut args = vec!["-n", ns, "qdisc", "replace", "dev", s];
        args.extend_from_slice(at);
        args.push(k);
        args.extend_from_slice(probe_params(k));
        let p = match cmd::run("tc", &args) {
            Ok(o) if o.ok() && KERNEL_ONLY_KINDS.contains(k) => Probe::yes("the kernel has it; the simulator does not model it"),
            Ok(o) if o.ok() => Probe::yes(""),
            Ok(o) => Probe::no(first_line(&o.stderr)),
            Err(e) => Probe::unknown(format!("cannot run tc: {e}")),
        };
        qdiscs.insert(k.to_string(), p);
        let del: &str = if matches!(*k, "ingress" | "clsact") { k } else { "root" };
        let _ = cmd::run("tc", &["-n", ns, "qdisc", "del", "dev", s, del]);
    }
}

/// The ethtool toggles (`-K gro/tso`, `-L`, `-C`) on veth `s`/`r` in namespace `ns`, and
/// the threaded-NAPI recipe (`/sys/class/net/R/threaded` and its `napi/R-*` kthread).
fn probe_ethtool(f: &mut BTreeMap<String, Probe>, ns: &str, s: &str, r: &str) {
    if cmd::which("ethtool").is_none() {
        for k in ["ethtool.gro", "ethtool.tso", "ethtool.channels", "ethtool.tx_usecs", "napi.threaded"] {
            f.insert(k.into(), Probe::unknown("ethtool is not installed"));
        }
    } else {
        let et = |args: &[&str]| cmd::run_in(ns, "ethtool", args, None);
        let res = |o: std::io::Result<cmd::Output>, yes: &str| match o {
            Ok(o) if o.ok() => Probe::yes(yes),
            Ok(o) => Probe::no(first_line(&format!("{}{}", o.stderr, o.stdout))),
            Err(e) => Probe::unknown(e.to_string()),
        };
        f.insert("ethtool.gro".into(), res(et(&["-K", r, "gro", "on"]), "ethtool -K gro on (selects veth's NAPI path)"));
        f.insert("ethtool.tso".into(), res(et(&["-K", s, "tso", "off"]), "ethtool -K tso off"));
        let ch = match et(&["-l", s]) {
            Ok(o) if o.ok() => {
                let max_tx = parse_channels_max_tx(&o.stdout);
                Probe::yes(format!("ethtool -L: up to {} TX queues", max_tx.map_or("?".into(), |m| m.to_string())))
            }
            Ok(o) => Probe::no(first_line(&o.stderr)),
            Err(e) => Probe::unknown(e.to_string()),
        };
        f.insert("ethtool.channels".into(), ch);
        f.insert("ethtool.tx_usecs".into(), res(et(&["-C", s, "tx-usecs", "10"]), "ethtool -C tx-usecs"));
        let threaded = format!("/sys/class/net/{r}/threaded");
        let p = match cmd::write_file_in(ns, &threaded, "1") {
            Ok(()) => {
                std::thread::sleep(std::time::Duration::from_millis(50));
                let threads = names::napi_threads_of(r);
                if threads.is_empty() {
                    Probe::no(format!("{threaded} accepted 1 but no napi/{r}-* kthread appeared"))
                } else {
                    Probe::yes(format!("{threaded}: kthread napi/{r}-* (pid {})", threads[0]))
                }
            }
            Err(e) => Probe::no(e.to_string()),
        };
        f.insert("napi.threaded".into(), p);
    }
}

/// nft and iptables-restore loading rules in namespace `ns`, and tracefs with the
/// `napi:napi_poll` tracepoint.
fn probe_rules_and_trace(f: &mut BTreeMap<String, Probe>, ns: &str) {
    // Netfilter.
    let nft = if cmd::which("nft").is_some() {
        match cmd::run_in(ns, "nft", &["-f", "-"], Some(&crate::rules::nft_script(1, crate::rules::RuleScope::All, &[]))) {
            Ok(o) if o.ok() => Probe::yes("nft -f loads rules in a namespace"),
            Ok(o) => Probe::no(first_line(&o.stderr)),
            Err(e) => Probe::unknown(e.to_string()),
        }
    } else {
        Probe::no("nft is not installed")
    };
    f.insert("rules.nft".into(), nft);
    let ipt = if cmd::which("iptables-restore").is_some() {
        match cmd::run_in(ns, "iptables-restore", &[], Some(&crate::rules::iptables_script(1, crate::rules::RuleScope::All, &[]))) {
            Ok(o) if o.ok() => Probe::yes("iptables-restore loads rules in a namespace"),
            Ok(o) => Probe::no(first_line(&o.stderr)),
            Err(e) => Probe::unknown(e.to_string()),
        }
    } else {
        Probe::no("iptables-restore is not installed")
    };
    f.insert("rules.iptables".into(), ipt);
    // Tracing.
    match crate::trace::Tracefs::get() {
        Ok(fs) => {
            let how = if fs.mounted_by_us() { "not mounted; mountable (darkbuf mounts it for a run and unmounts it after)".to_string() } else { format!("mounted at {}", fs.root.display()) };
            f.insert("tracefs".into(), Probe::yes(how));
            let tp = if fs.has_event("napi", "napi_poll") {
                Probe::yes("napi:napi_poll (dev_name, work, budget)")
            } else {
                Probe::no("no events/napi/napi_poll")
            };
            f.insert("tracepoint.napi_poll".into(), tp);
        }
        Err(e) => {
            f.insert("tracefs".into(), Probe::no(e));
            f.insert("tracepoint.napi_poll".into(), Probe::unknown("tracefs unavailable"));
        }
    }
}

/// "TX:" under "Pre-set maximums" of `ethtool -l`.
pub fn parse_channels_max_tx(text: &str) -> Option<u32> {
    let mut in_max = false;
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with("Pre-set maximums") {
            in_max = true;
        } else if l.starts_with("Current hardware settings") {
            in_max = false;
        } else if in_max {
            if let Some(v) = l.strip_prefix("TX:") {
                return v.trim().parse().ok();
            }
        }
    }
    None
}

fn yn(p: &Probe) -> &'static str {
    match p.available {
        Some(true) => "yes",
        Some(false) => "no",
        None => "?",
    }
}

/// The human-readable table.
pub fn render_table(c: &Capabilities) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "darkbuf check: kernel {}, HZ {}, {}, root {}\n\n",
        c.kernel,
        c.hz.map_or("unknown".into(), |h| h.to_string()),
        c.cpu,
        if c.root { "yes" } else { "no" }
    ));
    s.push_str(&format!("{:<22} {:<9} {}\n", "qdisc", "available", "detail"));
    for (k, p) in &c.qdiscs {
        s.push_str(&format!("{:<22} {:<9} {}\n", k, yn(p), p.detail));
    }
    s.push_str(&format!("\n{:<22} {:<9} {}\n", "feature", "available", "detail"));
    for (k, p) in &c.features {
        s.push_str(&format!("{:<22} {:<9} {}\n", k, yn(p), p.detail));
    }
    s.push('\n');
    s.push_str(&crate::nics::render(&c.nics));
    s.push_str(&format!("\n{:<22} {}\n", "tool", "path"));
    for (k, p) in &c.tools {
        s.push_str(&format!("{:<22} {}\n", k, p.as_deref().unwrap_or("missing")));
    }
    if let Some(cmd) = &c.install {
        s.push_str(&format!("the kernel backend needs the missing tools; install them with: {cmd}\n"));
    }
    s.push('\n');
    // What --cleanup removed first, then what is (still) there.
    for r in &c.removed {
        s.push_str(&format!("removed: {r}\n"));
    }
    for e in &c.cleanup_errors {
        s.push_str(&format!("could not remove: {e}\n"));
    }
    if c.leftovers.is_empty() {
        s.push_str(if c.removed.is_empty() { "leftovers: none\n" } else { "leftovers: none left\n" });
    } else {
        s.push_str("leftovers:\n");
        for l in &c.leftovers {
            let state = if l.owner_alive {
                " (in use by a running darkbuf)"
            } else if l.kind == "napi-thread" {
                // Nothing to remove: the kernel ends it with its device.
                " (the NAPI kthread of a device darkbuf no longer names; the kernel ends it when it frees the device: nothing to remove. If it stays, a process still runs in the device's namespace: `lsns -t net` shows it)"
            } else {
                ""
            };
            s.push_str(&format!("  {} {}{}\n", l.kind, l.name, state));
            if let (false, Some(cost)) = (l.owner_alive, &l.cost) {
                s.push_str(&format!("    costs: {cost}\n"));
            }
        }
        if c.leftovers.iter().any(|l| !l.owner_alive && l.kind != "napi-thread") {
            s.push_str("remove them with: darkbuf check --cleanup\n");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps() -> Capabilities {
        Capabilities {
            kernel: "6.18".into(),
            kernel_version: "6.18.0".into(),
            hz: Some(250),
            cpus: 2,
            cpu: "x".into(),
            root: true,
            tools: TOOLS.iter().map(|t| (t.to_string(), Some(format!("/usr/sbin/{t}")))).collect(),
            qdiscs: BTreeMap::new(),
            features: BTreeMap::new(),
            install: None,
            nics: Vec::new(),
            leftovers: Vec::new(),
            removed: Vec::new(),
            cleanup_errors: Vec::new(),
        }
    }

    #[test]
    fn cleanup_lists_what_it_removed_before_what_is_left() {
        // Issue 18: "leftovers: none" came before the lines of what was removed.
        let mut c = caps();
        c.removed = vec!["netns dkb-123-0-tx".into()];
        let t = render_table(&c);
        let removed = t.find("removed: netns dkb-123-0-tx").expect("listed");
        let none = t.find("leftovers: none left").expect("summary");
        assert!(removed < none, "{t}");
    }

    /// Issue 48: after `--cleanup` removed a namespace, its device's NAPI kthread (which
    /// the kernel ends a moment later) was listed, with "remove them with: darkbuf check
    /// --cleanup", which cannot remove it.
    #[test]
    fn a_napi_kthread_alone_is_not_sent_back_to_cleanup() {
        let mut c = caps();
        c.removed = vec!["netns dkb-123-0-rx".into()];
        let kthread = names::Leftover { kind: "napi-thread".into(), name: "napi/dkb2n0rr-9 (pid 77)".into(), owner_pid: Some(123), owner_alive: false, cost: None };
        c.leftovers = vec![kthread.clone()];
        let t = render_table(&c);
        assert!(t.contains("  napi-thread napi/dkb2n0rr-9 (pid 77) (the NAPI kthread of a device darkbuf no longer names; the kernel ends it when it frees the device: nothing to remove."), "{t}");
        assert!(!t.contains("darkbuf check --cleanup"), "{t}");
        // With a namespace left too, --cleanup is what removes it.
        c.leftovers.push(names::Leftover { kind: "netns".into(), name: "dkb-123-0-tx".into(), owner_pid: Some(123), owner_alive: false, cost: None });
        assert!(render_table(&c).contains("remove them with: darkbuf check --cleanup"));
    }

    #[test]
    fn the_wait_for_napi_kthreads_is_bounded() {
        // A kthread that does not go (here: a leftover list find_leftovers() does not
        // describe) comes back after the grace, without blocking longer.
        let gone = names::Leftover { kind: "napi-thread".into(), name: "napi/dkbzzzzrr-1 (pid 1)".into(), owner_pid: Some(u32::MAX), owner_alive: false, cost: None };
        let t0 = std::time::Instant::now();
        let left = wait_for_napi_threads(vec![gone], std::time::Duration::from_millis(200));
        assert!(t0.elapsed() < std::time::Duration::from_secs(5));
        assert!(left.iter().all(|l| l.name != "napi/dkbzzzzrr-1 (pid 1)"), "{left:?}");
    }

    #[test]
    fn missing_tools_come_with_the_command_that_installs_them() {
        let mut c = caps();
        assert_eq!(install_command(&c.tools), None);
        c.tools.insert("ethtool".into(), None);
        c.tools.insert("nft".into(), None);
        c.install = install_command(&c.tools);
        assert_eq!(c.install.as_deref(), Some("sudo apt-get install ethtool nftables"));
        assert!(render_table(&c).contains("install them with: sudo apt-get install ethtool nftables"));
    }

    #[test]
    fn channels_max() {
        let t = "Channel parameters for x:\nPre-set maximums:\nRX:\t\t2\nTX:\t\t2\nOther:\t\tn/a\nCombined:\tn/a\nCurrent hardware settings:\nRX:\t\t1\nTX:\t\t1\n";
        assert_eq!(parse_channels_max_tx(t), Some(2));
        assert_eq!(parse_channels_max_tx(""), None);
    }
}
