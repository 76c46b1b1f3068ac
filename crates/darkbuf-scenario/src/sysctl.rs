//! `[sysctl]`: the host's sysctls that the model reads, by the kernel's own names, as
//! `sysctl -w` takes them. Each sets the default of the `[[traffic]]` key that stands for
//! it in one entry; a key given in an entry wins over the sysctl (a socket option or a
//! per-connection setting, as on a real host):
//!
//! | sysctl | sets the default of |
//! |---|---|
//! | `net.ipv4.tcp_limit_output_bytes` | `kind = "tcp"`'s `limit_output_bytes` |
//! | `net.ipv4.tcp_tso_rtt_log` | `kind = "tcp"`'s `tso_rtt_log` |
//! | `net.ipv4.tcp_wmem` (`"MIN DEFAULT MAX"`) | `kind = "tcp"`'s `sndbuf` (MAX) |
//! | `net.ipv4.tcp_rmem` (`"MIN DEFAULT MAX"`) | `kind = "tcp"`'s `rcvbuf` (MAX) |
//! | `net.ipv4.tcp_ecn` (0, 1, 2) | `kind = "tcp"`'s `ecn` (1 asks for ECN; 2, the kernel's default, only accepts it) |
//! | `net.ipv4.tcp_congestion_control` | `kind = "tcp"`'s `cc` |
//! | `net.core.wmem_default` | `kind = "udp"`'s `sndbuf` (the effective `sk_sndbuf`, not doubled) |
//! | `net.core.default_qdisc` | the device's root qdisc when `[qdisc]` gives no kind, and mq's per-queue qdisc (`attach_default_qdiscs()`, `mq_init()`) |
//!
//! The model keeps `tcp_wmem[0..1]` and `tcp_rmem[0..1]` at the kernel's defaults (4096
//! 16384, 4096 131072): a triple with other values is refused rather than half-applied.

use crate::diag::Diagnostic;
use crate::section::Sec;
use crate::schema::Cc;
use crate::tree::V;
use std::collections::BTreeMap;

/// The sysctls `[sysctl]` takes.
pub const SYSCTL_KEYS: &[&str] = &[
    "net.ipv4.tcp_limit_output_bytes",
    "net.ipv4.tcp_tso_rtt_log",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_ecn",
    "net.ipv4.tcp_congestion_control",
    "net.core.wmem_default",
    "net.core.default_qdisc",
];

/// What `net.core.default_qdisc` may name: a qdisc that starts without options
/// (`qdisc_create_dflt()` passes none; tbf's init refuses that).
pub const DEFAULT_QDISC_KINDS: &[&str] =
    &["pfifo_fast", "pfifo", "bfifo", "pfifo_head_drop", "sfq", "cake", "codel", "fq_codel", "fq", "htb", "pie", "fq_pie", "netem"];

/// What `[sysctl]` set, resolved: `None` leaves the model's default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sysctl {
    pub tcp_limit_output_bytes: Option<u64>,
    pub tcp_tso_rtt_log: Option<u8>,
    pub tcp_wmem_max: Option<u64>,
    pub tcp_rmem_max: Option<u64>,
    /// `tcp_ecn` = 1: new connections ask for ECN.
    pub tcp_ecn: Option<bool>,
    pub tcp_congestion_control: Option<Cc>,
    pub wmem_default: Option<u64>,
    /// `net.core.default_qdisc`: the qdisc a device gets by default (the kernel's is
    /// pfifo_fast).
    pub default_qdisc: Option<&'static str>,
    /// Each sysctl given, with its value as `sysctl` prints it (the scenario's record).
    pub given: BTreeMap<String, String>,
}

/// Reads `[sysctl]` from the top-level section `top`.
pub(crate) fn resolve_sysctl(top: &Sec<'_>) -> Result<Sysctl, Diagnostic> {
    let s = top.sub("sysctl")?;
    s.check_keys(SYSCTL_KEYS, Some("(the sysctls the model reads; others have no effect on it)"))?;
    let mut out = Sysctl::default();
    if s.entry("net.ipv4.tcp_limit_output_bytes").is_some() {
        // proc_dointvec: an int.
        out.tcp_limit_output_bytes = Some(s.int("net.ipv4.tcp_limit_output_bytes", 0, 0, i32::MAX as i64)? as u64);
    }
    if s.entry("net.ipv4.tcp_tso_rtt_log").is_some() {
        // proc_dou8vec_minmax without bounds: a u8.
        out.tcp_tso_rtt_log = Some(s.int("net.ipv4.tcp_tso_rtt_log", crate::schema::TCP_TSO_RTT_LOG_DEFAULT as i64, 0, 255)? as u8);
    }
    out.tcp_wmem_max = triple(&s, "net.ipv4.tcp_wmem", [4096, 16384])?;
    out.tcp_rmem_max = triple(&s, "net.ipv4.tcp_rmem", [4096, 131072])?;
    if s.entry("net.ipv4.tcp_ecn").is_some() {
        out.tcp_ecn = Some(s.int("net.ipv4.tcp_ecn", 2, 0, 2)? == 1);
    }
    if s.entry("net.ipv4.tcp_congestion_control").is_some() {
        out.tcp_congestion_control = Cc::from_name(s.choice("net.ipv4.tcp_congestion_control", "cubic", crate::tcp::CC_NAMES)?);
    }
    if s.entry("net.core.wmem_default").is_some() {
        // SOCK_MIN_SNDBUF is the floor sock_setsockopt() applies; the sysctl's own.
        out.wmem_default = Some(s.int("net.core.wmem_default", 212_992, crate::resolve::SOCK_MIN_SNDBUF as i64, i32::MAX as i64)? as u64);
    }
    if s.entry("net.core.default_qdisc").is_some() {
        out.default_qdisc = Some(s.choice("net.core.default_qdisc", "pfifo_fast", DEFAULT_QDISC_KINDS)?);
    }
    for k in SYSCTL_KEYS {
        if let Some(e) = s.entry(k) {
            let v = match &e.node.v {
                V::Int(i) => i.to_string(),
                V::Str(t) => t.split_whitespace().collect::<Vec<_>>().join("\t"),
                V::Array(a) => a.iter().filter_map(|n| if let V::Int(i) = n.v { Some(i.to_string()) } else { None }).collect::<Vec<_>>().join("\t"),
                _ => String::new(),
            };
            out.given.insert(k.to_string(), v);
        }
    }
    Ok(out)
}

/// `tcp_wmem` / `tcp_rmem`: "MIN DEFAULT MAX" (as `sysctl -w` takes it) or `[MIN, DEFAULT,
/// MAX]`; MIN and DEFAULT must be the model's `fixed`. Returns MAX.
fn triple(s: &Sec<'_>, key: &str, fixed: [u64; 2]) -> Result<Option<u64>, Diagnostic> {
    let Some(e) = s.entry(key) else { return Ok(None) };
    let expected = format!("three integers \"{} {} MAX\" as `sysctl {key}` prints them, or [{}, {}, MAX]", fixed[0], fixed[1], fixed[0], fixed[1]);
    let vals: Option<Vec<u64>> = match &e.node.v {
        V::Str(t) => t.split_whitespace().map(|w| w.parse::<u64>().ok()).collect(),
        V::Array(a) => a.iter().map(|n| if let V::Int(i) = n.v { u64::try_from(i).ok() } else { None }).collect(),
        _ => return Err(s.type_err(e, "a string of three integers or an array of three", Some(expected))),
    };
    let Some(v) = vals.filter(|v| v.len() == 3) else {
        return Err(s.value_err(key, format!("`{}` is not three non-negative integers", s.kp(key)), Some(expected)));
    };
    if v[0] != fixed[0] || v[1] != fixed[1] {
        return Err(s.value_err(
            key,
            format!("`{}` = {} {} {}: the model keeps MIN and DEFAULT at the kernel's {} {} and reads only MAX (where autotuning stops)", s.kp(key), v[0], v[1], v[2], fixed[0], fixed[1]),
            Some(expected),
        ));
    }
    if !(4096..=1 << 30).contains(&v[2]) {
        return Err(s.value_err(key, format!("`{}`: MAX {} is outside 4096..=1GiB, the range the model takes", s.kp(key), v[2]), Some(expected)));
    }
    Ok(Some(v[2]))
}
