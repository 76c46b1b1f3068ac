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
use crate::drivers::wifi::{Mac, TIDS};
use darkbuf_model::mac80211::airtime::PhyRate;
use darkbuf_model::mac80211::fq::Fq;
use darkbuf_model::mac80211::sched::{AirtimeSched, AIRTIME_USE_RX, AIRTIME_USE_TX};
use darkbuf_model::qdisc::Qdisc;
use std::collections::BTreeMap;
use std::fmt::Write;

/// bpftrace's histogram bar at its longest (`@` x 52).
const BAR: u64 = 52;

impl World {
    /// Every printout of this run, by the command line that prints it.
    pub(crate) fn printouts(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        if !self.net.qdiscs.is_empty() {
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
        self.drv_printouts(DevId(0), &mut out);
        out
    }

    /// The interface name a user would type for device `dev`.
    fn dev_name(&self, dev: DevId) -> &'static str {
        self.net.devs[dev].driver.ifname()
    }

    /// `tc -s qdisc show dev DEV` at the end of the run: counters since the qdisc was
    /// created (the whole run, warmup included, as tc shows them). mq lists its children
    /// from the last TX queue down, as the kernel dumps them; packets count segments. A
    /// classful root (htb) has its classes' major as its handle (`1:`) and is followed by
    /// its leaf qdiscs, each under its class (`parent 1:10`) with the handle the kernel
    /// gives a qdisc added without one (`8001:`, `8002:`, ... in the order the classes
    /// were made: `qdisc_alloc_handle()`).
    fn tc_qdisc_show(&self, dev: DevId) -> String {
        let d = &self.net.devs[dev];
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
            let qs: Vec<&QdiscInst> = children.iter().map(|(_, q)| &self.net.qdiscs[*q]).collect();
            let sum = |f: &dyn Fn(&QdiscInst) -> u64| qs.iter().map(|q| f(q)).sum::<u64>();
            let _ = writeln!(s, "qdisc mq 0: root ");
            tc_counters(
                &mut s,
                sum(&|q| q.sent_bytes),
                sum(&|q| q.sent_pkts),
                sum(&|q| q.tc_counters().drops),
                sum(&|q| q.tc_counters().overlimits),
                sum(&|q| q.requeues),
                sum(&|q| backlog_bytes(q)),
                sum(&|q| q.qlen() as u64),
            );
        }
        for &(txq, qi) in children.iter().rev() {
            let q = &self.net.qdiscs[qi];
            let Some(algo) = q.q.as_ref() else { continue };
            // A root on a single-queue device also shows its reference count.
            let parent = if mq { format!("parent :{:x}", txq + 1) } else { "root refcnt 2".to_string() };
            let leaves = algo.tc_leaves();
            let handle = leaves.first().map_or(0, |l| l.classid >> 16);
            let c = q.tc_counters();
            let counters = [q.sent_bytes, q.sent_pkts, c.drops, c.overlimits, c.requeues, backlog_bytes(q), q.qlen() as u64];
            tc_qdisc(&mut s, algo, &format!("{handle:x}: {parent}"), counters);
            for (i, l) in leaves.iter().enumerate() {
                let (lq, st) = (l.qdisc, l.qdisc.stats());
                let (maj, min) = (l.classid >> 16, l.classid & 0xffff);
                let counters = [l.bytes, l.packets, st.drops, st.overlimits, st.requeues, lq.backlog(), lq.qlen() as u64];
                tc_qdisc(&mut s, lq, &format!("{:x}: parent {maj:x}:{min:x}", 0x8001 + i), counters);
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
            if t.is_web() {
                continue;
            }
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
        let last = self.net.devs[DevId(0)].txqs.len().saturating_sub(1) as u16;
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
/// One qdisc as tc prints it: `qdisc KIND HANDLE PARENT OPTIONS` (`at` is the handle and
/// the parent), its counters ([`tc_counters`]'s, in that order), then its xstats.
fn tc_qdisc(s: &mut String, algo: &dyn Qdisc, at: &str, c: [u64; 7]) {
    let opts = algo.tc_options();
    let opts = if opts.is_empty() { String::new() } else { format!("{opts} ") };
    let _ = writeln!(s, "qdisc {} {at} {opts}", algo.kind());
    let [bytes, pkts, drops, overlimits, requeues, backlog_b, backlog_p] = c;
    tc_counters(s, bytes, pkts, drops, overlimits, requeues, backlog_b, backlog_p);
    let x = algo.tc_xstats();
    if !x.is_empty() {
        let _ = writeln!(s, "{x}");
    }
}

#[allow(clippy::too_many_arguments)]
fn tc_counters(s: &mut String, bytes: u64, pkts: u64, drops: u64, overlimits: u64, requeues: u64, backlog_b: u64, backlog_p: u64) {
    let _ = writeln!(s, " Sent {bytes} bytes {pkts} pkt (dropped {drops}, overlimits {overlimits} requeues {requeues}) ");
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

/// The radio's printouts (`driver = "wifi"`): `iw dev wlan0 station dump` (iw's
/// station.c `print_sta_handler()`) and mac80211's debugfs files (net/mac80211/debugfs.c
/// and debugfs_sta.c), in their exact layouts, from the counters at the end of the run
/// (since the radio came up, as the kernel keeps them). Station N's address is the
/// locally administered `02:00:00:00:00:NN`.
impl World {
    pub(crate) fn wifi_printouts(&self, dev: DevId, out: &mut BTreeMap<String, String>) {
        let w = self.net.wifi(dev);
        let name = self.dev_name(dev);
        out.insert(format!("iw dev {name} station dump"), self.iw_station_dump(dev));
        let phy = "/sys/kernel/debug/ieee80211/phy0";
        let Mac::FqMac { fq, sched, .. } = &w.mac else { return };
        out.insert(format!("cat {phy}/aqm"), debugfs_aqm(fq));
        out.insert(format!("cat {phy}/airtime_flags"), debugfs_airtime_flags(sched.airtime_flags));
        out.insert(format!("cat {phy}/aql_txq_limit"), debugfs_aql_txq_limit(sched));
        out.insert(format!("cat {phy}/aql_pending"), debugfs_aql_pending(sched));
        out.insert(format!("cat {phy}/aql_threshold"), format!("{}\n", sched.aql_threshold));
        out.insert(format!("cat {phy}/aql_enable"), format!("{}\n", sched.aql as u8));
        for file in ["aqm", "airtime", "aql"] {
            let mut s = String::new();
            for i in 0..w.stations.len() {
                let body = match file {
                    "aqm" => self.debugfs_sta_aqm(dev, i),
                    "airtime" => debugfs_sta_airtime(sched, i),
                    _ => debugfs_sta_aql(sched, i),
                };
                // tail -n +1 FILE...: a header per file, a blank line between files.
                let sep = if i == 0 { "" } else { "\n" };
                let _ = write!(s, "{sep}==> {phy}/netdev:{name}/stations/{}/{file} <==\n{body}", sta_mac(i));
            }
            out.insert(format!("tail -n +1 {phy}/netdev:{name}/stations/*/{file}"), s);
        }
    }

    /// `iw dev wlan0 station dump`: the attributes mac80211's `sta_set_sinfo()` fills
    /// for what the model has (no signal, no beacons, no rate control's expected
    /// throughput); iw prints only the attributes present. `tx duration` / `rx duration`
    /// are the airtime sums mac80211 keeps for airtime fairness (absent on the old path).
    fn iw_station_dump(&self, dev: DevId) -> String {
        let w = self.net.wifi(dev);
        let now_ms = self.now / 1_000_000;
        let mut s = String::new();
        for (i, st) in w.stations.iter().enumerate() {
            let c = &st.total;
            let rate = iw_bitrate(st.rate);
            let _ = write!(s, "Station {} (on {})", sta_mac(i), self.dev_name(dev));
            for (k, v) in [("authorized", "yes"), ("authenticated", "yes"), ("associated", "yes"), ("preamble", "long"), ("WMM/WME", "yes"), ("MFP", "no"), ("TDLS peer", "no")] {
                let tab = if k == "MFP" { "\t\t" } else { "\t" };
                let _ = write!(s, "\n\t{k}:{tab}{v}");
            }
            let inactive = c.last_active_ns.map_or(now_ms, |t| (self.now - t) / 1_000_000);
            let _ = write!(s, "\n\tinactive time:\t{inactive} ms");
            let _ = write!(s, "\n\trx bytes:\t{}\n\trx packets:\t{}", c.rx_bytes, c.rx_packets);
            let _ = write!(s, "\n\ttx bytes:\t{}\n\ttx packets:\t{}", c.tx_bytes, c.tx_packets);
            let _ = write!(s, "\n\ttx retries:\t{}\n\ttx failed:\t{}", c.tx_retries, c.tx_failed);
            // The AP drops nothing it receives (rx_stats.dropped): always 0.
            let _ = write!(s, "\n\trx drop misc:\t0");
            let _ = write!(s, "\n\ttx bitrate:\t{rate}");
            let airtime = match &w.mac {
                Mac::FqMac { sched, .. } => Some(&sched.stas[i]),
                Mac::Fifo { .. } => None,
            };
            if let Some(a) = airtime {
                let _ = write!(s, "\n\ttx duration:\t{} us", a.airtime.iter().map(|x| x.tx_airtime).sum::<u64>());
            }
            let _ = write!(s, "\n\trx bitrate:\t{rate}");
            if let Some(a) = airtime {
                let _ = write!(s, "\n\trx duration:\t{} us", a.airtime.iter().map(|x| x.rx_airtime).sum::<u64>());
                let _ = write!(s, "\n\tairtime weight: {}", a.airtime_weight);
            }
            let _ = write!(s, "\n\tconnected time:\t{} seconds", self.now / 1_000_000_000);
            let _ = writeln!(s, "\n\tcurrent time:\t{now_ms} ms");
        }
        s
    }

    /// debugfs `stations/<mac>/aqm` (`sta_aqm_read()`): a line per TXQ, data TIDs 0-15
    /// (the model's frames use 0-7). The CoDel parameter line exists while stations had
    /// their own (`codel_slow_station`, 2016-2025); flags: RUN, and AMPDU once an HT
    /// station's TID has a BlockAck session (from its first frame, not on VO). NO-AMSDU
    /// depends on the station's ADDBA response and is left out.
    fn debugfs_sta_aqm(&self, dev: DevId, sta: usize) -> String {
        let w = self.net.wifi(dev);
        let Mac::FqMac { fq, cparams, slow_cparams, .. } = &w.mac else { return String::new() };
        let rate = w.stations[sta].rate;
        let mut s = String::new();
        if let Some(slow) = slow_cparams {
            let p = if rate.kbps() < 6000 * w.stations.len() as u64 { slow } else { cparams };
            let us = |t: u32| darkbuf_model::qdisc::codel::codel_time_to_us(t);
            let _ = writeln!(s, "target {}us interval {}us ecn {}", us(p.target), us(p.interval), if p.ecn { "yes" } else { "no" });
        }
        let _ = writeln!(s, "tid ac backlog-bytes backlog-packets new-flows drops marks overlimit collisions tx-bytes tx-packets flags");
        for tid in 0..16u32 {
            let ac = darkbuf_model::mac80211::ac_from_tid((tid & 7) as u8);
            let t = (tid < TIDS).then(|| &fq.tins[(sta as u32 * TIDS + tid) as usize]);
            let (bb, bp, fl, dr, mk, ol, co, tb, tp) = t.map_or((0, 0, 0, 0, 0, 0, 0, 0, 0), |t| {
                (t.backlog_bytes, t.backlog_packets, t.flows, t.codel_drops as u32, t.cstats.ecn_mark, t.overlimit, t.collisions, t.tx_bytes, t.tx_packets)
            });
            // IEEE80211_AC_VO (0) is never aggregated.
            let ampdu = rate.is_ht() && ac != 0 && tp > 0;
            let flags = if ampdu { 1u32 << IEEE80211_TXQ_AMPDU } else { 0 };
            let _ = writeln!(s, "{tid} {ac} {bb} {bp} {fl} {dr} {mk} {ol} {co} {tb} {tp} 0x{flags:x}(RUN{})", if ampdu { " AMPDU" } else { "" });
        }
        s
    }
}

/// `IEEE80211_TXQ_AMPDU`: the bit of `txq_info.flags` set while the TID has a TX
/// BlockAck session.
const IEEE80211_TXQ_AMPDU: u32 = 1;

/// Station `i`'s MAC address.
fn sta_mac(i: usize) -> String {
    format!("02:00:00:00:{:02x}:{:02x}", (i >> 8) & 0xff, i & 0xff)
}

/// iw's `parse_bitrate()`: the rate in units of 100 kbit/s (`cfg80211_calculate_bitrate()`),
/// then the MCS, the width and the guard interval.
fn iw_bitrate(rate: PhyRate) -> String {
    let r = rate.kbps() / 100;
    let mut s = format!("{}.{} MBit/s", r / 10, r % 10);
    if let PhyRate::Ht { mcs, ht40, sgi } = rate {
        let _ = write!(s, " MCS {mcs}");
        if ht40 {
            s += " 40MHz";
        }
        if sgi {
            s += " short GI";
        }
    }
    s
}

/// debugfs `phyN/aqm` (`aqm_read()`). The kernel passes `fq->overmemory` for the line
/// it labels `fq_overlimit` and `fq->overlimit` for `fq_overmemory`, and so does this.
fn debugfs_aqm(fq: &Fq) -> String {
    format!(
        "access name value\nR fq_flows_cnt {}\nR fq_backlog {}\nR fq_overlimit {}\nR fq_overmemory {}\nR fq_collisions {}\nR fq_memory_usage {}\nRW fq_memory_limit {}\nRW fq_limit {}\nRW fq_quantum {}\n",
        fq.flows_cnt, fq.backlog, fq.overmemory, fq.overlimit, fq.collisions, fq.memory_usage, fq.memory_limit, fq.limit, fq.quantum
    )
}

/// debugfs `phyN/airtime_flags` (`airtime_flags_read()`).
fn debugfs_airtime_flags(flags: u16) -> String {
    let mut s = String::new();
    if flags & AIRTIME_USE_TX != 0 {
        let _ = writeln!(s, "AIRTIME_TX\t({AIRTIME_USE_TX:x})");
    }
    if flags & AIRTIME_USE_RX != 0 {
        let _ = writeln!(s, "AIRTIME_RX\t({AIRTIME_USE_RX:x})");
    }
    s
}

/// debugfs `phyN/aql_txq_limit` (`aql_txq_limit_read()`): the same limits on every AC.
fn debugfs_aql_txq_limit(sched: &AirtimeSched) -> String {
    let mut s = "AC\tAQL limit low\tAQL limit high\n".to_string();
    for ac in ["VO", "VI", "BE", "BK"] {
        let _ = writeln!(s, "{ac}\t{}\t\t{}", sched.aql_limit_low, sched.aql_limit_high);
    }
    s
}

/// debugfs `phyN/aql_pending` (`aql_pending_read()`).
fn debugfs_aql_pending(sched: &AirtimeSched) -> String {
    let p = &sched.aql_ac_pending;
    format!("AC     AQL pending\nVO     {} us\nVI     {} us\nBE     {} us\nBK     {} us\ntotal  {} us\n", p[0], p[1], p[2], p[3], sched.aql_total_pending)
}

/// debugfs `stations/<mac>/airtime` (`sta_airtime_read()`, the deficit round robin's).
fn debugfs_sta_airtime(sched: &AirtimeSched, sta: usize) -> String {
    let a = &sched.stas[sta];
    let rx: u64 = a.airtime.iter().map(|x| x.rx_airtime).sum();
    let tx: u64 = a.airtime.iter().map(|x| x.tx_airtime).sum();
    let d = |ac: usize| a.airtime[ac].deficit;
    format!("RX: {rx} us\nTX: {tx} us\nWeight: {}\nDeficit: VO: {} us VI: {} us BE: {} us BK: {} us\n", a.airtime_weight, d(0), d(1), d(2), d(3))
}

/// debugfs `stations/<mac>/aql` (`sta_aql_read()`).
fn debugfs_sta_aql(sched: &AirtimeSched, sta: usize) -> String {
    let a = &sched.stas[sta].airtime;
    format!(
        "Q depth: VO: {} us VI: {} us BE: {} us BK: {} us\nQ limit[low/high]: VO: {}/{} VI: {}/{} BE: {}/{} BK: {}/{}\n",
        a[0].aql_tx_pending, a[1].aql_tx_pending, a[2].aql_tx_pending, a[3].aql_tx_pending,
        a[0].aql_limit_low, a[0].aql_limit_high, a[1].aql_limit_low, a[1].aql_limit_high,
        a[2].aql_limit_low, a[2].aql_limit_high, a[3].aql_limit_low, a[3].aql_limit_high
    )
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
