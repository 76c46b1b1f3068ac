//! Parsers for the kernel's counters: `tc -s -j qdisc`, `ip -s -j link`, `ethtool -S`,
//! /proc/net/snmp, /proc/PID/schedstat, /proc/stat and /proc/net/softnet_stat.
//!
//! All pure functions of the text, so they are tested on captured output.

use std::collections::BTreeMap;

/// The root qdisc's counters as `tc -s qdisc` prints them. For `mq` the root's counters
/// are the sum of its children (mq_dump()).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QdiscCounters {
    pub kind: String,
    /// "Sent ... pkt": packets dequeued to the driver.
    pub packets: u64,
    pub bytes: u64,
    pub drops: u64,
    pub overlimits: u64,
    pub requeues: u64,
    /// Bytes held.
    pub backlog: u64,
    /// Packets held.
    pub qlen: u64,
}

fn u(v: &serde_json::Value, k: &str) -> u64 {
    v.get(k).and_then(|x| x.as_u64()).unwrap_or(0)
}

/// The root qdisc of `tc -s -j qdisc show dev DEV`.
pub fn parse_tc_root(json: &str) -> Option<QdiscCounters> {
    let v: serde_json::Value = serde_json::from_str(json.trim()).ok()?;
    let arr = v.as_array()?;
    let root = arr.iter().find(|q| q.get("root").and_then(|r| r.as_bool()) == Some(true))?;
    Some(QdiscCounters {
        kind: root.get("kind").and_then(|k| k.as_str()).unwrap_or("").to_string(),
        packets: u(root, "packets"),
        bytes: u(root, "bytes"),
        drops: u(root, "drops"),
        overlimits: u(root, "overlimits"),
        requeues: u(root, "requeues"),
        backlog: u(root, "backlog"),
        qlen: u(root, "qlen"),
    })
}

/// Every qdisc of `tc -s -j qdisc show dev DEV`, keyed by handle (e.g. "1:", "8001:").
pub fn parse_tc_all(json: &str) -> Vec<(String, QdiscCounters)> {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(json.trim()) else { return Vec::new() };
    let Some(arr) = v.as_array() else { return Vec::new() };
    arr.iter()
        .map(|q| {
            let handle = q.get("handle").and_then(|h| h.as_str()).unwrap_or("").to_string();
            let c = QdiscCounters {
                kind: q.get("kind").and_then(|k| k.as_str()).unwrap_or("").to_string(),
                packets: u(q, "packets"),
                bytes: u(q, "bytes"),
                drops: u(q, "drops"),
                overlimits: u(q, "overlimits"),
                requeues: u(q, "requeues"),
                backlog: u(q, "backlog"),
                qlen: u(q, "qlen"),
            };
            (handle, c)
        })
        .collect()
}

/// The children of an mq root in `tc -s -j qdisc show dev DEV`, by TX queue: mq's class
/// `MAJ:N` is TX queue N-1 (`mq_attach()`), so a child whose parent is `1:c` serves
/// tx-11. Empty when the root is not mq.
pub fn parse_tc_mq_children(json: &str) -> Vec<(u32, QdiscCounters)> {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(json.trim()) else { return Vec::new() };
    let Some(arr) = v.as_array() else { return Vec::new() };
    let Some(root) = arr.iter().find(|q| q.get("root").and_then(|r| r.as_bool()) == Some(true)) else { return Vec::new() };
    if root.get("kind").and_then(|k| k.as_str()) != Some("mq") {
        return Vec::new();
    }
    let major = root.get("handle").and_then(|h| h.as_str()).unwrap_or("").to_string();
    let all = parse_tc_all(json);
    let mut out: Vec<(u32, QdiscCounters)> = arr
        .iter()
        .zip(all)
        .filter_map(|(q, (_, c))| {
            let parent = q.get("parent").and_then(|p| p.as_str())?;
            let minor = parent.strip_prefix(major.as_str())?;
            let n = u32::from_str_radix(minor, 16).ok()?;
            Some((n.checked_sub(1)?, c))
        })
        .collect();
    out.sort_by_key(|(q, _)| *q);
    out
}

/// An mq root's counters as the sum of its children's lines in the same dump, as
/// `mq_dump()` computes them. tc prints the root's sum first and each child as it
/// dumps it, a little later: with traffic flowing, a packet sent in between made the
/// root's line one short of its children's.
pub fn mq_root_of_children(kids: &[(u32, QdiscCounters)]) -> QdiscCounters {
    kids.iter().fold(QdiscCounters { kind: "mq".into(), ..Default::default() }, |mut sum, (_, c)| {
        sum.packets += c.packets;
        sum.bytes += c.bytes;
        sum.drops += c.drops;
        sum.overlimits += c.overlimits;
        sum.requeues += c.requeues;
        sum.backlog += c.backlog;
        sum.qlen += c.qlen;
        sum
    })
}

/// Handles of the qdiscs that held packets at both snapshots but sent none in between
/// (a stopped TX queue that was never woken).
pub fn stalled_qdiscs(a: &[(String, QdiscCounters)], b: &[(String, QdiscCounters)]) -> Vec<String> {
    b.iter()
        .filter(|(h, qb)| {
            qb.qlen > 0 && a.iter().any(|(ha, qa)| ha == h && qa.qlen > 0 && qa.packets == qb.packets)
        })
        .map(|(h, _)| h.clone())
        .collect()
}

/// Interface counters from `ip -s -j link show dev DEV`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkCounters {
    pub rx_packets: u64,
    pub rx_dropped: u64,
    pub tx_packets: u64,
    pub tx_dropped: u64,
}

pub fn parse_ip_link(json: &str) -> Option<LinkCounters> {
    let v: serde_json::Value = serde_json::from_str(json.trim()).ok()?;
    let dev = v.as_array()?.first()?;
    let st = dev.get("stats64").or_else(|| dev.get("stats"))?;
    let rx = st.get("rx")?;
    let tx = st.get("tx")?;
    Some(LinkCounters {
        rx_packets: u(rx, "packets"),
        rx_dropped: u(rx, "dropped"),
        tx_packets: u(tx, "packets"),
        tx_dropped: u(tx, "dropped"),
    })
}

/// `ethtool -S DEV`: name -> value.
pub fn parse_ethtool_stats(text: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        if let Some((k, v)) = line.trim().rsplit_once(':') {
            if let Ok(n) = v.trim().parse::<u64>() {
                m.insert(k.trim().to_string(), n);
            }
        }
    }
    m
}

/// The sum of the veth per-queue counters `rx_queue_N_<what>`.
pub fn sum_rx_queue(stats: &BTreeMap<String, u64>, what: &str) -> Option<u64> {
    let suffix = format!("_{what}");
    let mut found = false;
    let mut s = 0;
    for (k, v) in stats {
        if let Some(rest) = k.strip_prefix("rx_queue_") {
            if let Some(idx) = rest.strip_suffix(&suffix) {
                if idx.chars().all(|c| c.is_ascii_digit()) {
                    found = true;
                    s += v;
                }
            }
        }
    }
    found.then_some(s)
}

/// One protocol's line pair of /proc/net/snmp (e.g. "Udp"): name -> value.
pub fn parse_snmp(text: &str, proto: &str) -> BTreeMap<String, u64> {
    let prefix = format!("{proto}:");
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with(&prefix)).collect();
    let mut m = BTreeMap::new();
    if lines.len() >= 2 {
        let names = lines[0].split_whitespace().skip(1);
        let vals = lines[1].split_whitespace().skip(1);
        for (n, v) in names.zip(vals) {
            if let Ok(x) = v.parse::<i64>() {
                m.insert(n.to_string(), x.max(0) as u64);
            }
        }
    }
    m
}

/// The first field of /proc/PID/schedstat: ns spent on the CPU.
pub fn parse_schedstat(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

/// Per-CPU (busy, total) jiffies from /proc/stat ("cpuN" lines); busy excludes idle and
/// iowait.
pub fn parse_proc_stat(text: &str) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let Some(name) = f.next() else { continue };
        if !name.starts_with("cpu") || name == "cpu" {
            continue;
        }
        let v: Vec<u64> = f.filter_map(|x| x.parse().ok()).collect();
        if v.len() < 5 {
            continue;
        }
        // user nice system idle iowait irq softirq steal (guest counted in user).
        let total: u64 = v.iter().take(8).sum();
        let idle = v[3] + v[4];
        out.push((total - idle.min(total), total));
    }
    out
}

/// Sum over CPUs of /proc/net/softnet_stat column 3 (time_squeeze).
pub fn parse_softnet_squeeze(text: &str) -> u64 {
    text.lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter_map(|h| u64::from_str_radix(h, 16).ok())
        .sum()
}

/// `PF_KTHREAD` in the flags of /proc/PID/stat.
pub const PF_KTHREAD: u64 = 0x0020_0000;

/// (utime + stime in clock ticks, flags) from /proc/PID/stat. The comm field may
/// contain spaces and parentheses, so fields are counted after the last ')'.
pub fn parse_pid_stat(text: &str) -> Option<(u64, u64)> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After comm: state(3) ppid(4) pgrp(5) session(6) tty_nr(7) tpgid(8) flags(9) ...
    // utime(14) stime(15): indexes shift by 3 (fields 1 and 2 are before the ')').
    let flags = f.get(9 - 3)?.parse().ok()?;
    let ut: u64 = f.get(14 - 3)?.parse().ok()?;
    let st: u64 = f.get(15 - 3)?.parse().ok()?;
    Some((ut + st, flags))
}

/// CPU ticks used so far by every user-space process except `own_pid` (kernel threads
/// are left out: their work is the network stack being measured).
pub fn other_processes_ticks(own_pid: u32) -> u64 {
    other_processes(own_pid).values().map(|(_, t)| t).sum()
}

/// As [`other_processes_ticks`], leaving out `helpers` too (the run's own long-lived
/// shells and batches, whose work is the measurement's).
pub fn other_processes_ticks_except(own_pid: u32, helpers: &[u32]) -> u64 {
    other_processes(own_pid).iter().filter(|(p, _)| !helpers.contains(p)).map(|(_, (_, t))| t).sum()
}

/// CPU ticks used so far by `own_pid` and every member of process group `pgid` (a VM's
/// vng and QEMU, whose work is the guest's).
pub fn own_and_group_ticks(own_pid: u32, pgid: u32) -> u64 {
    let mut sum = 0;
    for_each_pid_stat(|pid, text| {
        if pid == own_pid || parse_pid_pgrp(text) == Some(pgid) {
            sum += parse_pid_stat(text).map_or(0, |(t, _)| t);
        }
    });
    sum
}

/// Calls `f` with each process's pid and /proc/PID/stat (those gone before their read
/// are left out).
fn for_each_pid_stat(mut f: impl FnMut(u32, &str)) {
    let Ok(rd) = std::fs::read_dir("/proc") else { return };
    for e in rd.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            f(pid, &text);
        }
    }
}

/// The process group (`pgrp`, field 5) from /proc/PID/stat.
pub fn parse_pid_pgrp(text: &str) -> Option<u32> {
    let rest = &text[text.rfind(')')? + 1..];
    rest.split_whitespace().nth(5 - 3)?.parse().ok()
}

/// Every user-space process except `own_pid`: pid -> (comm, CPU ticks used so far).
pub fn other_processes(own_pid: u32) -> std::collections::BTreeMap<u32, (String, u64)> {
    let mut all = std::collections::BTreeMap::new();
    for_each_pid_stat(|pid, text| {
        if pid == own_pid {
            return;
        }
        if let Some((t, flags)) = parse_pid_stat(text) {
            if flags & PF_KTHREAD == 0 {
                let comm = text.find('(').zip(text.rfind(')')).map_or("?", |(a, b)| &text[a + 1..b.max(a + 1)]);
                all.insert(pid, (comm.to_string(), t));
            }
        }
    });
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    /// /proc/PID/stat of a process whose comm has a space and a parenthesis: the
    /// fields count from the last ')', pgrp is the fifth (1234 here).
    #[test]
    fn pid_stat_pgrp_and_ticks() {
        let t = "4321 (qemu (x) y) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 99 0 0";
        assert_eq!(parse_pid_pgrp(t), Some(1234));
        assert_eq!(parse_pid_stat(t), Some((300, 4194560)));
        assert_eq!(parse_pid_pgrp("garbage"), None);
    }

    #[test]
    fn tc_root_of_mq() {
        let j = r#"[{"kind":"mq","handle":"1:","root":true,"options":{},"bytes":1000,"packets":10,"drops":2,"overlimits":0,"requeues":3,"backlog":128,"qlen":2},
                   {"kind":"pfifo","handle":"8001:","parent":"1:1","options":{"limit":50},"bytes":600,"packets":6,"drops":2,"overlimits":0,"requeues":3,"backlog":128,"qlen":2}]"#;
        let q = parse_tc_root(j).unwrap();
        assert_eq!(q, QdiscCounters { kind: "mq".into(), packets: 10, bytes: 1000, drops: 2, overlimits: 0, requeues: 3, backlog: 128, qlen: 2 });
        assert_eq!(parse_tc_root("[]"), None);
        assert_eq!(parse_tc_root("not json"), None);
    }

    /// A root line dumped one packet before its children's: the root is their sum.
    #[test]
    fn mq_root_is_its_childrens_sum() {
        let j = r#"[{"kind":"mq","handle":"1:","root":true,"bytes":1000,"packets":10,"drops":2,"overlimits":1,"requeues":3,"backlog":128,"qlen":2},
                   {"kind":"tbf","handle":"8001:","parent":"1:1","bytes":600,"packets":6,"drops":2,"overlimits":1,"requeues":3,"backlog":128,"qlen":2},
                   {"kind":"tbf","handle":"8002:","parent":"1:2","bytes":500,"packets":5,"drops":0,"overlimits":0,"requeues":0,"backlog":0,"qlen":0}]"#;
        let q = mq_root_of_children(&parse_tc_mq_children(j));
        assert_eq!(q, QdiscCounters { kind: "mq".into(), packets: 11, bytes: 1100, drops: 2, overlimits: 1, requeues: 3, backlog: 128, qlen: 2 });
        assert_eq!(mq_root_of_children(&[]), QdiscCounters { kind: "mq".into(), ..Default::default() });
    }

    #[test]
    fn stall_of_one_mq_child() {
        let kids = parse_tc_mq_children(r#"[{"kind":"mq","handle":"1:","root":true,"packets":10},
            {"kind":"tbf","handle":"8002:","parent":"1:c","packets":7,"drops":1},
            {"kind":"tbf","handle":"8001:","parent":"1:1","packets":3}]"#);
        assert_eq!(kids.iter().map(|(q, c)| (*q, c.packets, c.drops)).collect::<Vec<_>>(), [(0, 3, 0), (11, 7, 1)]);
        assert!(parse_tc_mq_children(r#"[{"kind":"pfifo","handle":"1:","root":true}]"#).is_empty());
        let a = r#"[{"kind":"mq","handle":"1:","root":true,"packets":10,"qlen":300},
                    {"kind":"pfifo","handle":"8001:","parent":"1:1","packets":10,"qlen":0},
                    {"kind":"pfifo","handle":"8002:","parent":"1:2","packets":0,"qlen":300}]"#;
        let b = r#"[{"kind":"mq","handle":"1:","root":true,"packets":50,"qlen":300},
                    {"kind":"pfifo","handle":"8001:","parent":"1:1","packets":50,"qlen":0},
                    {"kind":"pfifo","handle":"8002:","parent":"1:2","packets":0,"qlen":300}]"#;
        assert_eq!(stalled_qdiscs(&parse_tc_all(a), &parse_tc_all(b)), vec!["8002:".to_string()]);
        assert!(stalled_qdiscs(&parse_tc_all(a), &parse_tc_all(a)).contains(&"1:".to_string()));
        assert_eq!(parse_tc_all("nope"), vec![]);
    }

    #[test]
    fn ip_link_stats() {
        let j = r#"[{"ifindex":2,"ifname":"x","stats64":{"rx":{"bytes":10,"packets":5,"errors":0,"dropped":1,"over_errors":0,"multicast":0},"tx":{"bytes":20,"packets":7,"errors":0,"dropped":3,"carrier_errors":0,"collisions":0}}}]"#;
        assert_eq!(parse_ip_link(j), Some(LinkCounters { rx_packets: 5, rx_dropped: 1, tx_packets: 7, tx_dropped: 3 }));
    }

    #[test]
    fn ethtool_veth_stats() {
        let t = "NIC statistics:\n     peer_ifindex: 2\n     rx_queue_0_xdp_packets: 100\n     rx_queue_0_drops: 1\n     rx_queue_1_xdp_packets: 50\n     rx_queue_1_drops: 2\n     tx_queue_0_xdp_xmit: 0\n";
        let m = parse_ethtool_stats(t);
        assert_eq!(m["peer_ifindex"], 2);
        assert_eq!(sum_rx_queue(&m, "xdp_packets"), Some(150));
        assert_eq!(sum_rx_queue(&m, "drops"), Some(3));
        assert_eq!(sum_rx_queue(&m, "xdp_drops"), None);
    }

    #[test]
    fn snmp_udp() {
        let t = "Ip: Forwarding DefaultTTL\nIp: 1 64\nUdp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\nUdp: 100 0 7 200 7 3 0 0 0\nUdpLite: InDatagrams\nUdpLite: 0\n";
        let m = parse_snmp(t, "Udp");
        assert_eq!(m["InDatagrams"], 100);
        assert_eq!(m["RcvbufErrors"], 7);
        assert_eq!(m["SndbufErrors"], 3);
        assert!(!m.contains_key("Forwarding"));
    }

    #[test]
    fn schedstat_and_proc_stat() {
        assert_eq!(parse_schedstat("750000000 1234 56\n"), Some(750_000_000));
        let t = "cpu  10 0 10 100 0 0 0 0 0 0\ncpu0 5 0 5 50 2 0 1 1 0 0\ncpu1 5 0 5 50 0 0 0 0 0 0\nintr 1\n";
        assert_eq!(parse_proc_stat(t), vec![(12, 64), (10, 60)]);
        assert_eq!(parse_softnet_squeeze("0000a 00000000 00000002 0\n0000b 00000000 00000010 0\n"), 18);
    }

    #[test]
    fn pid_stat() {
        let t = "1234 (a b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 25 7 0 0 20 0 1 0 5 0 0\n";
        assert_eq!(parse_pid_stat(t), Some((32, 4_194_560)));
        assert_eq!(parse_pid_stat("garbage"), None);
    }
}
