//! The run as the tools of seed 001 print it: `tc -s qdisc show`, iperf3's interval
//! report, and the post's bpftrace map of TX queue changes. Each is rendered from the
//! simulator's own counters in the tool's layout, so a simulated run reads side by side
//! with the output people post (the kernel backend keeps the real tools' text under the
//! same command lines).

use crate::id::{DevId, QdiscId};
use crate::dev::sch::QdiscInst;
use crate::sock::tcp::IPERF_INTERVAL_NS;
use crate::sock::SockKind;
use crate::world::World;
use darkbuf_model::qdisc::Qdisc;
use std::collections::BTreeMap;
use std::fmt::Write;

/// bpftrace's histogram bar at its longest (`@` x 52).
const BAR: u64 = 52;

impl World {
    /// Every printout of this run, by the command line that prints it.
    pub(crate) fn printouts(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        if !self.qdiscs.is_empty() {
            let name = self.dev_name(DevId(0));
            out.insert(format!("tc -s qdisc show dev {name}"), self.tc_qdisc_show(DevId(0)));
        }
        let iperf = self.iperf3_report();
        if !iperf.is_empty() {
            out.insert("iperf3 -c PEER -i 1 (sender)".to_string(), iperf);
        }
        if !self.metrics.queue_changes.is_empty() {
            out.insert("bpftrace count_queue_index_changes.bt (seed 001)".to_string(), self.queue_change_maps());
        }
        out
    }

    /// The interface name a user would type for device `dev`.
    fn dev_name(&self, dev: DevId) -> &'static str {
        self.devs[dev].driver.ifname()
    }

    /// `tc -s qdisc show dev DEV` at the end of the run: counters since the qdisc was
    /// created (the whole run, warmup included, as tc shows them). mq lists its children
    /// from the last TX queue down, as the kernel dumps them; packets count segments.
    fn tc_qdisc_show(&self, dev: DevId) -> String {
        let d = &self.devs[dev];
        let mut s = String::new();
        let mut children: Vec<(usize, QdiscId)> = Vec::new();
        for (txq, q) in d.txq_qdisc.iter().enumerate() {
            if let Some(q) = q {
                if !children.iter().any(|(_, c)| c == q) {
                    children.push((txq, *q));
                }
            }
        }
        let mq = children.len() > 1;
        if mq {
            let qs: Vec<&QdiscInst> = children.iter().map(|(_, q)| &self.qdiscs[*q]).collect();
            let sum = |f: &dyn Fn(&QdiscInst) -> u64| qs.iter().map(|q| f(q)).sum::<u64>();
            let _ = writeln!(s, "qdisc mq 0: root ");
            tc_counters(
                &mut s,
                sum(&|q| q.sent_bytes),
                sum(&|q| q.sent_pkts),
                sum(&|q| q.tc_counters().drops),
                sum(&|q| q.requeues),
                sum(&|q| backlog_bytes(q)),
                sum(&|q| q.qlen() as u64),
            );
        }
        for &(txq, qi) in children.iter().rev() {
            let q = &self.qdiscs[qi];
            let Some(algo) = q.q.as_ref() else { continue };
            // A root on a single-queue device also shows its reference count.
            let parent = if mq { format!("parent :{:x}", txq + 1) } else { "root refcnt 2".to_string() };
            let opts = algo.tc_options();
            let opts = if opts.is_empty() { String::new() } else { format!("{opts} ") };
            let _ = writeln!(s, "qdisc {} 0: {parent} {opts}", algo.kind());
            tc_counters(&mut s, q.sent_bytes, q.sent_pkts, q.tc_counters().drops, q.requeues, backlog_bytes(q), q.qlen() as u64);
            let x = algo.tc_xstats();
            if !x.is_empty() {
                let _ = writeln!(s, "{x}");
            }
        }
        s
    }

    /// iperf3's client report for each TCP connection: one line per second of the run
    /// with the bytes its application wrote, the bit rate, `Retr` (retransmitted
    /// segments) and `Cwnd`, then the sender's total. Seconds count from the start of
    /// the run (warmup included): iperf3 has no warmup.
    fn iperf3_report(&self) -> String {
        let mut s = String::new();
        let mut id = 5; // iperf3 numbers its streams by file descriptor, from 5.
        for sk in &self.socks {
            let SockKind::Tcp(t) = &sk.kind else { continue };
            let marks = &t.stats.intervals;
            if marks.is_empty() {
                continue;
            }
            let _ = writeln!(s, "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd");
            let secs = IPERF_INTERVAL_NS as f64 / 1e9;
            let mut prev = crate::sock::tcp::IperfMark::default();
            for (i, m) in marks.iter().enumerate() {
                let bytes = m.written - prev.written;
                let _ = writeln!(
                    s,
                    "[{id:>3}] {:>6.2}-{:<6.2} sec  {}  {}  {:>3}   {}       ",
                    i as f64 * secs,
                    (i + 1) as f64 * secs,
                    iperf_bytes(bytes as f64),
                    iperf_bits(bytes as f64 * 8.0 / secs),
                    // A failed retransmission is taken back (TCPRetransFail), so the
                    // count can dip.
                    m.retrans.saturating_sub(prev.retrans),
                    iperf_bytes(m.cwnd_bytes as f64),
                );
                prev = *m;
            }
            let total = marks.len() as f64 * secs;
            let _ = writeln!(s, "- - - - - - - - - - - - - - - - - - - - - - - - -");
            let _ = writeln!(s, "[ ID] Interval           Transfer     Bitrate         Retr");
            let _ = writeln!(
                s,
                "[{id:>3}] {:>6.2}-{:<6.2} sec  {}  {}  {:>3}             sender",
                0.0,
                total,
                iperf_bytes(prev.written as f64),
                iperf_bits(prev.written as f64 * 8.0 / total),
                prev.retrans,
            );
            id += 2; // each stream has a control and a data socket
        }
        s
    }

    /// Seed 001's two bpftrace maps over the whole run: for each (CPU, old queue), a
    /// `lhist` of the new queue (`@queue_index_after_netdev_pick_tx`), and for each
    /// change whether `skb->ooo_okay` was set (`@ooo_okay_during_flip`). The old queue
    /// of a socket without one prints as 65535 (`NO_QUEUE_MAPPING`).
    fn queue_change_maps(&self) -> String {
        let last = self.devs[DevId(0)].txqs.len().saturating_sub(1) as u16;
        let old_name = |o: i32| if o < 0 { 65535 } else { o };
        let mut s = String::new();
        let mut by_key: BTreeMap<(u16, i32), Vec<(u16, u64)>> = BTreeMap::new();
        for (&(cpu, old, new), n) in &self.metrics.queue_changes {
            by_key.entry((cpu, old)).or_default().push((new, n[0]));
        }
        for ((cpu, old), news) in &by_key {
            let _ = writeln!(s, "@queue_index_after_netdev_pick_tx[{cpu}, {}]: ", old_name(*old));
            // lhist(retval, 0, last, 1): [k, k+1) per queue, the top one open-ended.
            let mut buckets: BTreeMap<u16, u64> = BTreeMap::new();
            for &(new, n) in news {
                *buckets.entry(new.min(last)).or_default() += n;
            }
            let label = |k: u16| if k >= last { format!("[{k}, ...)") } else { format!("[{k}, {})", k + 1) };
            hist_lines(&mut s, buckets.into_iter().map(|(k, n)| (label(k), n)));
            s.push('\n');
        }
        for (&(cpu, old, new), n) in &self.metrics.queue_changes {
            let _ = writeln!(s, "@ooo_okay_during_flip[{cpu}, {}, {new}]: ", old_name(old));
            let (with, without) = (n[1], n[0] - n[1]);
            let rows = [("[0, 1)".to_string(), without), ("[1, ...)".to_string(), with)];
            hist_lines(&mut s, rows.into_iter().filter(|r| r.1 > 0));
            s.push('\n');
        }
        s
    }
}

/// tc's two counter lines.
fn tc_counters(s: &mut String, bytes: u64, pkts: u64, drops: u64, requeues: u64, backlog_b: u64, backlog_p: u64) {
    let _ = writeln!(s, " Sent {bytes} bytes {pkts} pkt (dropped {drops}, overlimits 0 requeues {requeues}) ");
    let _ = writeln!(s, " backlog {backlog_b}b {backlog_p}p requeues {requeues}");
}

/// Bytes held: the algorithm's backlog plus the requeue and bad-txq slots.
fn backlog_bytes(q: &QdiscInst) -> u64 {
    let algo = q.q.as_ref().map_or(0, |a| a.backlog());
    algo + q.gso_skb.iter().chain(q.bad_txq.iter()).map(|s| s.len as u64).sum::<u64>()
}

/// bpftrace's histogram rows: the label left in 16 columns, the count right in 8, and
/// a bar scaled to the map's largest count.
fn hist_lines(s: &mut String, rows: impl Iterator<Item = (String, u64)>) {
    let rows: Vec<(String, u64)> = rows.collect();
    let max = rows.iter().map(|r| r.1).max().unwrap_or(0).max(1);
    for (label, n) in rows {
        let bar = "@".repeat((n * BAR / max) as usize);
        let _ = writeln!(s, "{label:<16}{n:>8} |{bar:<52}|");
    }
}

/// iperf3's `unit_snprintf()` for bytes ('A': adaptive, 1024-based): `11.3 GBytes`.
fn iperf_bytes(v: f64) -> String {
    adaptive(v, 1024.0, ["Bytes", "KBytes", "MBytes", "GBytes", "TBytes"])
}

/// The same for bits per second (1000-based): `97.1 Gbits/sec`.
fn iperf_bits(v: f64) -> String {
    adaptive(v, 1000.0, ["bits/sec", "Kbits/sec", "Mbits/sec", "Gbits/sec", "Tbits/sec"])
}

fn adaptive(mut v: f64, base: f64, units: [&str; 5]) -> String {
    let mut i = 0;
    while v >= base && i < units.len() - 1 {
        v /= base;
        i += 1;
    }
    let n = if v < 9.995 {
        format!("{v:4.2}")
    } else if v < 99.95 {
        format!("{v:4.1}")
    } else {
        format!("{v:4.0}")
    };
    format!("{n} {}", units[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figures of seed 001's fast run, in iperf3's units.
    #[test]
    fn iperf_units() {
        assert_eq!(iperf_bytes(11.3 * 1024.0 * 1024.0 * 1024.0), "11.3 GBytes");
        assert_eq!(iperf_bytes(115.0 * 1024f64.powi(3)), " 115 GBytes");
        assert_eq!(iperf_bytes(8.89 * 1024.0 * 1024.0), "8.89 MBytes");
        assert_eq!(iperf_bits(99.0e9), "99.0 Gbits/sec");
        assert_eq!(iperf_bits(512.0), " 512 bits/sec");
    }

    /// bpftrace's layout of the post's fast-run map.
    #[test]
    fn hist_layout() {
        let mut s = String::new();
        hist_lines(&mut s, [("[6, 7)".to_string(), 2), ("[11, ...)".to_string(), 1)].into_iter());
        let bar = "@".repeat(52);
        let half = format!("{:<52}", "@".repeat(26));
        assert_eq!(s, format!("[6, 7)                 2 |{bar}|\n[11, ...)              1 |{half}|\n"));
    }
}
