//! `[[traffic]] kind = "rr"`: request/response as netperf's TCP_RR and UDP_RR run it
//! (`netperf -t TCP_RR -- -r REQUEST,RESPONSE`): each connection has one transaction
//! outstanding; the client sends `request` bytes, the server (netserver, on the far
//! host) reads them all and sends `response` bytes, the client reads them all, and
//! starts the next transaction at once.

use crate::diag::Diagnostic;
use crate::section::Sec;
use serde::Serialize;

pub const RR_KEYS: &[&str] = &["kind", "name", "proto", "request", "response", "connections", "nodelay", "timeout", "dscp", "cpu", "start", "stop", "path_delay", "station"];

/// The largest message the simulator carries: one segment or datagram at a 1500-byte
/// MTU (TCP: 1500 - IP 20 - TCP 20 - timestamps 12; UDP: 1500 - IP 20 - UDP 8).
pub const RR_MAX_TCP_MESSAGE: u32 = 1448;
pub const RR_MAX_UDP_MESSAGE: u32 = 1472;
/// Connections per entry (each is a netperf process with its own socket).
pub const RR_MAX_CONNECTIONS: u32 = 1024;

/// The transport of a request/response entry (netperf's `-t TCP_RR` or `-t UDP_RR`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RrProto {
    Tcp,
    Udp,
}

/// A request/response entry as netperf runs one (`netperf -t TCP_RR|UDP_RR -- -r
/// REQUEST,RESPONSE [-D] [-e TIMEOUT]`, `connections` netperf processes side by side).
#[derive(Clone, Debug, Serialize)]
pub struct Rr {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    pub proto: RrProto,
    /// Request and response bytes (netperf's `-r req,rsp`, default 1,1).
    pub request: u32,
    pub response: u32,
    /// Connections, each with one transaction outstanding.
    pub connections: u32,
    /// TCP_NODELAY on both ends (netperf's `-D`; its default is off). With one
    /// transaction outstanding and messages of one segment, Nagle never holds one
    /// back (everything sent before is acknowledged), so the simulator behaves alike.
    pub nodelay: bool,
    /// UDP_RR: how long the client waits for a response before it counts the
    /// transaction lost and starts the next (netperf's `-e`, ns). netperf's default is
    /// no timeout: one lost datagram stalls its connection until the test ends.
    pub timeout_ns: u64,
    /// DSCP of requests and responses (netperf's `-Y`, both ends).
    pub dscp: u8,
    /// The client processes' CPU (taskset).
    pub cpu: u32,
    /// Extra one-way delay on the wire for this entry's packets, both ways (ns).
    pub path_delay_ns: u64,
    /// When the first transaction starts and when no new one starts (ns since the
    /// run's start; `None` = the end of the run).
    pub start_ns: u64,
    pub stop_ns: Option<u64>,
}

/// One `[[traffic]]` table of kind "rr"; `total_ns` is warmup + duration.
pub(crate) fn resolve_rr(s: &Sec<'_>, cpus: u32, driver: crate::schema::Driver, total_ns: u64, name: String) -> Result<Rr, Diagnostic> {
    s.check_keys(RR_KEYS, Some("(netperf's -r req,rsp is `request` and `response`; size, rate and flows belong to kind = \"udp\" / \"tcp\")"))?;
    let proto = match s.choice("proto", "tcp", &["tcp", "udp"])? {
        "udp" => RrProto::Udp,
        _ => RrProto::Tcp,
    };
    let max = match proto {
        RrProto::Tcp => RR_MAX_TCP_MESSAGE,
        RrProto::Udp => RR_MAX_UDP_MESSAGE,
    };
    let request = message(s, "request", max)?;
    let response = message(s, "response", max)?;
    let connections = s.u32("connections", 1, 1, RR_MAX_CONNECTIONS)?;
    let nodelay = s.boolean("nodelay", false)?;
    if nodelay && proto == RrProto::Udp {
        return Err(s.value_err("nodelay", format!("`{}` is TCP_NODELAY, and proto = \"udp\" has no Nagle", s.kp("nodelay")), Some("remove nodelay, or set proto = \"tcp\"".into())));
    }
    if s.entry("timeout").is_some() && proto == RrProto::Tcp {
        return Err(s.value_err("timeout", format!("`{}` is UDP_RR's receive timeout (netperf -e); TCP retransmits by itself", s.kp("timeout")), Some("remove timeout, or set proto = \"udp\"".into())));
    }
    let timeout_ns = s.duration_max("timeout", 1_000_000_000, true, 60_000_000_000)?;
    let dscp = s.int("dscp", 0, 0, 63)? as u8;
    let cpu = s.u32("cpu", 0, 0, cpus - 1)?;
    let (start_ns, stop_ns) = crate::tcp::start_stop(s, "start a transaction", total_ns)?;
    let path_delay_ns = crate::resolve::path_delay(s, driver)?;
    Ok(Rr { name, proto, request, response, connections, nodelay, timeout_ns, dscp, cpu, path_delay_ns, start_ns, stop_ns })
}

/// `request` or `response`: bytes, 1 to `max` (one segment or datagram).
fn message(s: &Sec<'_>, key: &str, max: u32) -> Result<u32, Diagnostic> {
    let Some(e) = s.entry(key) else { return Ok(1) };
    match &e.node.v {
        crate::tree::V::Int(n) if (1..=max as i64).contains(n) => Ok(*n as u32),
        crate::tree::V::Int(n) => Err(s.value_err(
            key,
            format!("`{}` = {n} bytes: a message is 1 to {max} bytes here (one segment or datagram at a 1500-byte MTU; larger messages are not modelled yet)", s.kp(key)),
            Some(format!("expected 1..={max}, netperf's default is 1")),
        )),
        _ => Err(s.type_err(e, "an integer (bytes)", Some("e.g. request = 1, response = 1 (netperf -r 1,1)".into()))),
    }
}
