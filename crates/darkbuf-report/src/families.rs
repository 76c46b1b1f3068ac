//! How the report page groups metrics so a reader sees the figures that matter first:
//! a short headline list, and the indexed metrics (`tcp.flow.N.*`, `cpu.N.*`,
//! `peer.cpu.N.*`, `irtt.N.*`, ...) as families, one table row or plot line per index
//! instead of one table row or plot per metric and index.

use serde_json::Value;

/// The headline metrics, in the page's order: probe latency and loss, throughput,
/// where packets wait. A page lists those its results have, before everything else.
pub const HEADLINE: &[&str] = &[
    "ping.rtt_avg_ms",
    "ping.rtt_p99_ms",
    "ping.loss_pct",
    "irtt.rtt_avg_ms",
    "irtt.rtt_p99_ms",
    "irtt.loss_up_pct",
    "irtt.loss_down_pct",
    "tcp.goodput_mbps",
    "tcp.retrans",
    "tcp.srtt_avg_ms",
    "consumer.pps",
    "sink.pps",
    "wire.util_pct",
    "ping.wait_qdisc_ms",
    "ping.wait_ring_ms",
    "ping.wait_consumer_ms",
    "qdisc.backlog_avg_pkts",
    "qdisc.drops",
    "bql.limit_avg",
    "bql.inflight_avg",
    "ring.occupancy_avg",
    "ring.drops",
];

/// A metric of an indexed family: `tcp.flow.3.cwnd_avg_pkts` is family `tcp.flow`,
/// index 3, column `cwnd_avg_pkts`; `sink.pps.1` is `sink.pps`, 1, `` (no column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub family: String,
    pub index: u64,
    pub column: String,
}

/// The family of `metric`: its first dot-separated part that is a number is the
/// index. `None` for a metric without one (`ping.rtt_avg_ms`, htb's
/// `qdisc.class 1:10 lends`).
pub fn member(metric: &str) -> Option<Member> {
    let parts: Vec<&str> = metric.split('.').collect();
    let i = parts.iter().position(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))?;
    if i == 0 {
        return None;
    }
    Some(Member {
        family: parts[..i].join("."),
        index: parts[i].parse().ok()?,
        column: parts[i + 1..].join("."),
    })
}

/// The name of a family's metric with `N` for the index: `tcp.flow.N.cwnd_avg_pkts`.
pub fn pattern(family: &str, column: &str) -> String {
    if column.is_empty() {
        format!("{family}.N")
    } else {
        format!("{family}.N.{column}")
    }
}

/// A family's heading on the page: what its index counts, and its names.
pub fn title(family: &str) -> String {
    let what = match family {
        "tcp.flow" => "TCP flows",
        "cpu" => "This host's CPUs",
        "peer.cpu" => "The far host's CPUs",
        "lan.cpu" => "The [lan] client's CPUs",
        "irtt" => "irtt probers",
        "ping" => "Pingers",
        "qdisc.txq" => "Each TX queue's qdisc",
        "bql.txq" => "BQL of each TX queue",
        "sink.pps" => "Each flood's sink",
        _ => "",
    };
    let names = format!("{family}.N{}", if family == "sink.pps" { "" } else { ".*" });
    if what.is_empty() {
        names
    } else {
        format!("{what} ({names})")
    }
}

/// What index N of `family` is in these results, for a table row or a plot legend:
/// a TCP flow's traffic entry (`0: TCP upload BE`), else `N`.
pub fn row_label(family: &str, index: u64, scenario: &Value) -> String {
    if family == "tcp.flow" {
        if let Some(l) = tcp_flow_labels(scenario).get(index as usize) {
            return format!("{index}: {l}");
        }
    }
    index.to_string()
}

/// Each TCP connection's name, in the simulator's and the kernel backend's flow order
/// (the `[[traffic]]` entries of kind `tcp` in order, `flows` each): the entry's `name`
/// (flent's data set, `::k` for its k-th connection), else `traffic I` and its
/// direction.
pub fn tcp_flow_labels(scenario: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let traffic = scenario.get("traffic").and_then(Value::as_array).cloned().unwrap_or_default();
    for (i, t) in traffic.iter().enumerate() {
        if t.get("kind").and_then(Value::as_str) != Some("tcp") {
            continue;
        }
        let dir = t.get("direction").and_then(Value::as_str).unwrap_or("up");
        let name = t.get("name").and_then(Value::as_str).map_or_else(|| format!("traffic {i} ({dir})"), str::to_string);
        let flows = t.get("flows").and_then(Value::as_u64).unwrap_or(1);
        for f in 0..flows.min(100_000) {
            out.push(if flows > 1 { format!("{name}::{}", f + 1) } else { name.clone() });
        }
    }
    out
}

/// `names` split into the metrics outside any family (in their order) and the
/// families, each with its indices (ascending) and columns (in `names`' order).
pub fn split(names: &[String]) -> (Vec<String>, Vec<Family>) {
    let mut plain = Vec::new();
    let mut fams: Vec<Family> = Vec::new();
    // Each family's indices as a set while they are collected: 10,000 TCP flows have
    // 120,000 metrics.
    let mut seen: Vec<std::collections::BTreeSet<u64>> = Vec::new();
    for n in names {
        let Some(m) = member(n) else {
            plain.push(n.clone());
            continue;
        };
        let i = match fams.iter().position(|f| f.name == m.family) {
            Some(i) => i,
            None => {
                fams.push(Family { name: m.family.clone(), indices: Vec::new(), columns: Vec::new() });
                seen.push(Default::default());
                fams.len() - 1
            }
        };
        seen[i].insert(m.index);
        let f = &mut fams[i];
        if !f.columns.contains(&m.column) {
            f.columns.push(m.column);
        }
    }
    for (f, s) in fams.iter_mut().zip(seen) {
        f.indices = s.into_iter().collect();
    }
    (plain, fams)
}

/// At most this many indices of a family are listed in a table (the terminal's, and
/// the report page's): a TCP entry may have 100,000 flows, and the aggregates
/// (`tcp.flow_goodput_p*_mbps`, `tcp.flow_jain`) describe them. The JSON and CSV
/// results have every one.
pub const MAX_FAMILY_ROWS: u64 = 64;

/// Whether `metric` is a row the tables leave out: an index at or past
/// [`MAX_FAMILY_ROWS`] of a family. Returns its family's pattern (`tcp.flow.N.*`).
pub fn folded(metric: &str) -> Option<String> {
    let m = member(metric)?;
    (m.index >= MAX_FAMILY_ROWS).then(|| format!("{}.N{}", m.family, if m.column.is_empty() { "" } else { ".*" }))
}

/// One family of metrics in some results.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Family {
    pub name: String,
    pub indices: Vec<u64>,
    pub columns: Vec<String>,
}

impl Family {
    /// The metric of index `i` and column `c`.
    pub fn metric(&self, i: u64, c: &str) -> String {
        if c.is_empty() {
            format!("{}.{i}", self.name)
        } else {
            format!("{}.{i}.{c}", self.name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members() {
        let m = |s: &str| member(s).map(|m| (m.family, m.index, m.column));
        assert_eq!(m("tcp.flow.3.cwnd_avg_pkts"), Some(("tcp.flow".into(), 3, "cwnd_avg_pkts".into())));
        assert_eq!(m("peer.cpu.0.busy_pct"), Some(("peer.cpu".into(), 0, "busy_pct".into())));
        assert_eq!(m("sink.pps.1"), Some(("sink.pps".into(), 1, String::new())));
        assert_eq!(m("ping.rtt_avg_ms"), None);
        assert_eq!(m("qdisc.class 1:10 lends"), None);
        assert_eq!(m("qdisc.band2_pkts"), None);
    }

    #[test]
    fn split_groups_families() {
        let names: Vec<String> = ["ping.rtt_avg_ms", "cpu.1.busy_pct", "cpu.0.busy_pct", "cpu.0.net_rx_pct", "tcp.goodput_mbps", "tcp.flow.0.retrans"]
            .map(String::from)
            .to_vec();
        let (plain, fams) = split(&names);
        assert_eq!(plain, ["ping.rtt_avg_ms", "tcp.goodput_mbps"]);
        assert_eq!(fams.len(), 2);
        assert_eq!((fams[0].name.as_str(), fams[0].indices.clone()), ("cpu", vec![0, 1]));
        assert_eq!(fams[0].columns, ["busy_pct", "net_rx_pct"]);
        assert_eq!(fams[1].metric(0, "retrans"), "tcp.flow.0.retrans");
    }

    #[test]
    fn flow_labels_follow_the_traffic_entries() {
        let scn = serde_json::json!({"traffic": [
            {"kind": "ping"},
            {"kind": "tcp", "name": "TCP upload BE", "direction": "up"},
            {"kind": "tcp", "flows": 2, "direction": "down"},
        ]});
        assert_eq!(tcp_flow_labels(&scn), ["TCP upload BE", "traffic 2 (down)::1", "traffic 2 (down)::2"]);
        assert_eq!(row_label("tcp.flow", 1, &scn), "1: traffic 2 (down)::1");
        assert_eq!(row_label("cpu", 1, &scn), "1");
        assert_eq!(title("peer.cpu"), "The far host's CPUs (peer.cpu.N.*)");
    }
}
