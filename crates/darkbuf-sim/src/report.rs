//! Running one simulation and reporting it in the results contract's metric names.

use crate::setup::SetupError;
use crate::id::DevId;
use crate::world::{Net, World};
use crate::metrics::SERIES;
use crate::dev::sch::TcCounters;
use crate::dev::NetDev;
use darkbuf_model::qdisc::xstat::{xstat_kind, xstat_metric, xstat_value, XstatKind};
use darkbuf_measure::irtt::{irtt_report, irtt_rtt_series};
use darkbuf_measure::{percentile, Profile};
use darkbuf_model::qdisc::Qdisc;
use darkbuf_report::{ping_prefixes, RunRecord, TimeSeries};
use darkbuf_scenario::Scenario;
use std::collections::BTreeMap;

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The run reached a bound on what it holds (`limits.rs`) and stopped.
    #[error("{0}")]
    Limit(String),
}

/// Simulates `scn` once with `seed`. Returns the run's metrics and, for every metric
/// that is `None`, the reason.
pub fn simulate(scn: &Scenario, profile: &Profile, seed: u64) -> Result<(RunRecord, BTreeMap<String, String>), SimError> {
    let mut w = World::new(scn, profile.clone(), seed)?;
    w.run();
    if let Some(why) = w.web_overflow() {
        return Err(SimError::Limit(why));
    }
    Ok(w.finish(seed))
}

impl Net {
    /// Packets still inside the modelled system (qdiscs, requeue slots, rings, GRO lists).
    pub fn in_system(&self) -> u64 {
        let q: u64 = self.qdiscs.iter().map(|q| q.qlen() as u64).sum();
        let d: u64 = self.devs.ids().map(|d| self.drv_held(d)).sum();
        let g: u64 = self.napis.iter().map(|n| n.gro_list.len() as u64).sum();
        let l: u64 = self.links.iter().map(|l| l.held() as u64).sum();
        let x = self.deferred.iter().flatten().filter(|d| !matches!(d, crate::dev::Deferred::Cancelled)).count() as u64;
        q + d + g + l + x
    }
}

impl World {
    /// The device whose TX queue the BQL and ring metrics describe.
    fn measured_dev(&self) -> &NetDev {
        &self.net.devs[self.metrics.measured_txq.0]
    }

    /// Whether the measured path has a NAPI receive side (veth; a tun's consumer is
    /// its reader or vhost-net).
    fn has_measured_napi(&self) -> bool {
        self.net.napis.iter().any(|n| n.measured)
    }

    /// The qdiscs of this host's device (`tc -s qdisc show dev DEV` here), not the
    /// peer's.
    fn host_qdiscs(&self) -> impl Iterator<Item = &crate::dev::sch::QdiscInst> {
        self.dev_qdiscs(self.metrics.measured_txq.0)
    }

    /// The qdiscs of device `dev`.
    fn dev_qdiscs(&self, dev: crate::id::DevId) -> impl Iterator<Item = &crate::dev::sch::QdiscInst> {
        self.net.qdiscs.iter().filter(move |q| q.dev == dev)
    }

    /// The qdisc algorithms' xstats by tc's names, summed over this host's qdiscs
    /// (mq's children): counters over the measured window, gauges at its end; the
    /// per-qdisc times of `XstatKind::Mean` averaged over the qdiscs that sent in the
    /// window (all of them if none did).
    fn qdisc_xstats(&self) -> BTreeMap<&'static str, f64> {
        self.dev_qdisc_xstats(self.metrics.measured_txq.0)
    }

    /// [`Self::qdisc_xstats`] of device `dev`'s qdiscs.
    fn dev_qdisc_xstats(&self, dev: crate::id::DevId) -> BTreeMap<&'static str, f64> {
        let mut out: BTreeMap<&'static str, f64> = BTreeMap::new();
        let mut means: BTreeMap<&'static str, (f64, u32)> = BTreeMap::new();
        let any_sent = self.dev_qdiscs(dev).any(|q| q.tc_counters().sent_pkts > q.base.sent_pkts);
        for q in self.dev_qdiscs(dev) {
            let Some(algo) = q.q.as_ref() else { continue };
            let sent = q.tc_counters().sent_pkts > q.base.sent_pkts;
            for (name, v) in algo.xstats() {
                let kind = xstat_kind(name);
                let base = if kind == XstatKind::Counter {
                    q.xbase.iter().find(|(n, _)| *n == name).map_or(0, |(_, b)| *b)
                } else {
                    0
                };
                let v = xstat_value(name, v.saturating_sub(base));
                if kind == XstatKind::Mean {
                    if sent || !any_sent {
                        let m = means.entry(name).or_default();
                        *m = (m.0 + v, m.1 + 1);
                    }
                } else {
                    *out.entry(name).or_default() += v;
                }
            }
        }
        for (name, (sum, n)) in means {
            out.insert(name, sum / n as f64);
        }
        out
    }

    /// One sample of the time series (`Event::Sample`), re-armed every `sample_interval`.
    pub fn sample(&mut self) {
        let (dev, txq) = self.metrics.measured_txq;
        // The device's BQL as `bql.*` defines it: the largest queue's limit, the
        // in-flight units of all its queues.
        let dqls = self.net.devs[dev].txqs.iter().filter_map(|q| q.dql.as_ref());
        let (limit, inflight) = dqls.fold((0, 0), |(l, i), d| (l.max(d.limit as u64), i + d.inflight() as u64));
        let backlog: u64 = self.host_qdiscs().map(|q| q.qlen() as u64).sum();
        let ring = self.net.drv_ring_len(dev, txq) as u64;
        self.sample_pie();
        let m = &mut self.metrics;
        m.series_t.push(self.now);
        for (v, s) in [limit, inflight, backlog, ring].into_iter().zip(m.series.iter_mut()) {
            s.push(v);
        }
        let next = self.now + self.cfg.sample_interval;
        if next <= self.cfg.end {
            self.events.push(next, crate::event::Event::Sample);
        }
    }

    /// The pie series' sample: this host's pie qdiscs brought up to date (their timer
    /// runs lazily) and averaged. Nothing without pie.
    fn sample_pie(&mut self) {
        let (dev, now) = (self.metrics.measured_txq.0, self.now);
        let (mut prob, mut delay, mut n) = (0.0, 0.0, 0u32);
        for q in self.net.qdiscs.iter_mut().filter(|q| q.dev == dev) {
            let Some(a) = q.q.as_mut() else { continue };
            if a.pie_vars().is_none() {
                continue;
            }
            a.run_timers(now);
            if let Some(v) = a.pie_vars() {
                prob += v.prob_fraction();
                delay += v.delay_us() as f64;
                n += 1;
            }
        }
        if n > 0 {
            self.metrics.pie_prob.push(prob / n as f64);
            self.metrics.pie_delay_us.push(delay / n as f64);
        }
    }

    /// The time series for the results: the sampled gauges, and one RTT point per probe
    /// sent in the measured window (`null` = lost).
    fn timeseries(&self) -> BTreeMap<String, TimeSeries> {
        let mut out = BTreeMap::new();
        let start = self.cfg.start;
        let ms = |t: u64| (t.saturating_sub(start)) as f64 / 1e6;
        let mt = &self.metrics;
        if !mt.series_t.is_empty() {
            let t_ms: Vec<f64> = mt.series_t.iter().map(|&t| ms(t)).collect();
            for ((name, unit), values) in SERIES.iter().zip(&mt.series) {
                let bql = name.starts_with("bql.");
                if (bql && !self.measured_dev().bql) || (*name == "qdisc.backlog_pkts" && self.net.qdiscs.is_empty()) {
                    continue;
                }
                out.insert(
                    name.to_string(),
                    TimeSeries {
                        unit: unit.to_string(),
                        t_ms: t_ms.clone(),
                        values: values.iter().map(|&v| Some(v as f64)).collect(),
                    },
                );
            }
            // pie's series, sampled with the others when the host has pie.
            if mt.pie_prob.len() == mt.series_t.len() {
                for (name, unit, values) in [("qdisc.prob", "fraction", &mt.pie_prob), ("qdisc.delay_us", "µs", &mt.pie_delay_us)] {
                    let values = values.iter().map(|&v| Some(v)).collect();
                    out.insert(name.to_string(), TimeSeries { unit: unit.to_string(), t_ms: t_ms.clone(), values });
                }
            }
        }
        // Per TCP flow, goodput at flent's 0.2 s step (the step's end time), up to
        // PER_FLOW_SERIES_MAX flows in the run.
        let tcp_flows = self.socks.iter().filter(|s| matches!(&s.kind, crate::sock::SockKind::Tcp(t) if !t.is_web())).count();
        let per_flow = tcp_flows <= darkbuf_scenario::limits::PER_FLOW_SERIES_MAX as usize;
        let step = crate::sock::tcp::SERIES_STEP_NS;
        let steps = ((self.cfg.end - start) / step) as usize;
        let step_ends_ms: Vec<f64> = (1..=steps).map(|i| (i as u64 * step) as f64 / 1e6).collect();
        let mut n = 0;
        for sk in self.socks.iter().filter(|_| per_flow) {
            let crate::sock::SockKind::Tcp(t) = &sk.kind else { continue };
            if t.is_web() {
                continue;
            }
            let g = &t.stats.goodput_steps;
            out.insert(
                format!("tcp.flow.{n}.goodput_mbps"),
                TimeSeries {
                    unit: "Mbit/s".into(),
                    t_ms: step_ends_ms.clone(),
                    values: (0..steps).map(|i| Some(g.get(i).copied().unwrap_or(0) as f64 * 8.0 / 0.2 / 1e6)).collect(),
                },
            );
            // ss -ti at each step's end: cwnd, srtt and the pacing rate (null while idle).
            let ss = &t.stats.ss_steps;
            let sampled = |unit: &str, f: &dyn Fn(&crate::sock::tcp::SsSample) -> f64| TimeSeries {
                unit: unit.into(),
                t_ms: step_ends_ms.clone(),
                values: (0..steps).map(|i| ss.get(i).copied().flatten().map(|x| f(&x))).collect(),
            };
            out.insert(format!("tcp.flow.{n}.cwnd_pkts"), sampled("packets", &|x| x.cwnd as f64));
            out.insert(format!("tcp.flow.{n}.srtt_ms"), sampled("ms", &|x| x.srtt_us as f64 / 1e3));
            out.insert(format!("tcp.flow.{n}.pacing_rate_mbps"), sampled("Mbit/s", &|x| x.pacing_rate as f64 * 8.0 / 1e6));
            n += 1;
        }
        for (n, p) in self.irtt_socks().enumerate() {
            out.insert(format!("irtt.{n}.rtt_ms"), irtt_rtt_series(&p.recs, start, self.cfg.end));
        }
        let pingers = self.ping_socks().count();
        for (k, p) in self.ping_socks().enumerate() {
            let series = ping_rtt_series(&p.stats, start);
            for prefix in ping_prefixes(k, pingers) {
                out.insert(format!("{prefix}rtt_ms"), series.clone());
            }
        }
        out
    }

    fn check_invariants(&mut self) {
        let inside = self.net.in_system();
        if let Some(detail) = self.metrics.fate.imbalance(inside) {
            self.finding("every packet is delivered, dropped or still queued", detail);
        }
        if self.pkts.live() != inside {
            let detail = format!("{} packets allocated but {} queued", self.pkts.live(), inside);
            self.finding("no packet is lost inside the model", detail);
        }
        // dev_watchdog(): a queue stopped for longer than watchdog_timeo (5 s) is stuck.
        let timeo = 5 * self.cfg.hz as u64;
        let jiffies = self.jiffies();
        let queues = self.net.devs.iter().flat_map(|d| d.txqs.iter().enumerate());
        let stuck: Vec<String> = queues
            .filter(|(_, q)| q.xmit_stopped() && jiffies > q.trans_start + timeo)
            .map(|(i, q)| format!("txq {i} stopped (state {:#x}) since jiffy {}, now {jiffies}", q.state, q.trans_start))
            .collect();
        for detail in stuck {
            self.finding("a stopped queue is always eventually woken", detail);
        }
        for detail in self.tcp_stalls() {
            self.finding("a TCP sender with data to send always has something to wait for", detail);
        }
        for detail in self.tcp_rcv_findings() {
            self.finding("a TCP receiver's buffer holds what it queued, and its reader wakes for it", detail);
        }
        if self.pkts.acks.misses > 0 {
            let detail = format!("{} ACKs arrived without their record (taken as empty)", self.pkts.acks.misses);
            self.finding("an ACK's record lives as long as a packet carries it", detail);
        }
    }

    pub fn finish(mut self, seed: u64) -> (RunRecord, BTreeMap<String, String>) {
        self.check_invariants();
        let mut out = Out::default();
        self.probe_metrics(&mut out);
        self.traffic_metrics(&mut out);
        self.qdisc_metrics(&mut out);
        self.device_metrics(&mut out);
        self.tcp_metrics(&mut out);
        self.web_metrics(&mut out);
        self.irtt_metrics(&mut out);
        self.voip_metrics(&mut out);
        self.rr_metrics(&mut out);
        let (start, end) = (self.cfg.start, self.cfg.end);
        self.xps_metrics(&mut out);
        let squeeze: u64 = self.sched.cpus.iter().map(|c| c.time_squeeze).sum();
        out.set("softnet.time_squeeze", squeeze as f64);
        self.cpu_metrics(&mut out);
        if self.sched.stalls.enabled() {
            let window = (end - start) as f64 * self.sched.cpus.len() as f64;
            out.set("cpu.stalled_pct", 100.0 * self.sched.stalls.total_ns as f64 / window);
        }
        let mt = &self.metrics;
        let mut histograms = BTreeMap::new();
        if self.measured_dev().bql {
            histograms.insert("bql_inflight".to_string(), mt.hist_inflight.to_log2());
        }
        if self.has_measured_napi() {
            histograms.insert("napi_work".to_string(), mt.hist_napi_work.to_log2());
        }
        if let Some(p) = self.ping_socks().next().filter(|p| !p.stats.probes.is_empty()) {
            histograms.insert("ping_rtt_us".to_string(), p.stats.hist_rtt_us.to_log2());
        }
        let timeseries = self.timeseries();
        let printouts = self.printouts();
        let rec = RunRecord { seed, metrics: out.m, histograms, findings: self.metrics.findings.clone(), timeseries, printouts };
        (rec, out.why)
    }

    /// Each CPU's busy and softirq time, named after its host: this host's `cpu.N.*`,
    /// the far host's `peer.cpu.N.*` and a `[lan]` client's `lan.cpu.N.*`, N counted
    /// from 0 on each host (as each host's own /proc/stat numbers them).
    fn cpu_metrics(&self, out: &mut Out) {
        let (start, end) = (self.cfg.start, self.cfg.end);
        let pct = |ns: u64| 100.0 * ns as f64 / (end - start) as f64;
        for (h, host) in self.net.hosts.iter().enumerate() {
            let prefix = match h {
                0 => "cpu",
                1 => "peer.cpu",
                _ => "lan.cpu",
            };
            for (n, i) in host.cpus.iter().enumerate() {
                let c = &self.sched.cpus[i];
                let mut put = |what: &str, ns: u64| {
                    out.m.insert(format!("{prefix}.{n}.{what}"), Some(pct(ns)));
                };
                put("busy_pct", c.busy_ns);
                put("softirq_pct", c.softirq_ns.iter().sum());
                // Measured on every CPU, 0 included: a CPU without softirq time in one
                // run must not drop out of the summary's `n`.
                use crate::sched::{SOFTIRQ_NET_RX, SOFTIRQ_NET_TX, SOFTIRQ_TASKLET};
                put("net_tx_pct", c.softirq_ns[SOFTIRQ_NET_TX]);
                put("net_rx_pct", c.softirq_ns[SOFTIRQ_NET_RX]);
                put("tasklet_pct", c.softirq_ns[SOFTIRQ_TASKLET]);
            }
        }
    }

    /// The probes' round trips, where their time went, and their loss: `ping.*` are the
    /// first pinger's, and with more than one pinger each has its own `ping.N.*`.
    fn probe_metrics(&self, out: &mut Out) {
        let pingers = self.ping_socks().count();
        if pingers == 0 {
            for k in PING_KEYS.iter().chain(self.wire_keys()) {
                out.none(&format!("ping.{k}"), "the scenario has no ping traffic");
            }
        }
        for (k, p) in self.ping_socks().enumerate() {
            for prefix in ping_prefixes(k, pingers) {
                self.ping_set(out, &prefix, &p.stats);
            }
        }
    }

    /// Where the way has a wire (a NIC, a link): its serialization and the way back.
    fn wire_keys(&self) -> &'static [&'static str] {
        if self.net.links.is_empty() {
            &[]
        } else {
            &["wait_wire_ms", "wait_return_ms"]
        }
    }

    /// One pinger's metrics, each key `prefix` + name.
    fn ping_set(&self, out: &mut Out, prefix: &str, st: &crate::metrics::PingStats) {
        let k = |name: &str| format!("{prefix}{name}");
        if st.probes.is_empty() {
            for name in PING_KEYS[..8].iter().chain(self.wire_keys()) {
                out.none(&k(name), "no probe was answered in the measured window");
            }
        } else {
            let n = st.probes.len() as f64;
            let mut rtts: Vec<u64> = st.probes.iter().map(|p| p.rtt).collect();
            rtts.sort_unstable();
            let ms = |ns: f64| ns / 1e6;
            let avg = |f: &dyn Fn(&crate::metrics::ProbeSample) -> u64| st.probes.iter().map(|p| f(p) as f64).sum::<f64>() / n;
            out.set(&k("rtt_avg_ms"), ms(avg(&|p| p.rtt)));
            for (name, p) in [("rtt_min_ms", 0.0), ("rtt_p50_ms", 50.0), ("rtt_p99_ms", 99.0), ("rtt_max_ms", 100.0)] {
                if let Some(v) = percentile(&rtts, p) {
                    out.set(&k(name), ms(v));
                }
            }
            out.set(&k("wait_qdisc_ms"), ms(avg(&|p| p.wait_qdisc)));
            out.set(&k("wait_ring_ms"), ms(avg(&|p| p.wait_ring)));
            out.set(&k("wait_consumer_ms"), ms(avg(&|p| p.wait_consumer)));
            // veth, tun: the way back is the profile's constant, and there is no wire.
            if !self.net.links.is_empty() {
                out.set(&k("wait_wire_ms"), ms(avg(&|p| p.wait_wire)));
                out.set(&k("wait_return_ms"), ms(avg(&|p| p.wait_return)));
            }
        }
        // A probe still unanswered PROBE_TIMEOUT after it was sent is lost (as the
        // kernel backend's prober gives up on it); younger ones in flight at the end
        // are neither answered nor lost.
        let cutoff = self.cfg.end.saturating_sub(PROBE_TIMEOUT_NS);
        let sent = st.sent_at.iter().filter(|&&t| t <= cutoff).count() as u64;
        let answered = st.probes.iter().filter(|p| p.t_send <= cutoff).count() as u64;
        let dropped = st.lost_at.iter().filter(|&&t| t >= self.cfg.start && t <= cutoff).count() as u64;
        let lost = st.lost + sent.saturating_sub(answered + dropped);
        let fated = st.probes.len() as u64 + lost;
        if fated == 0 {
            out.none(&k("loss_pct"), "no probe was answered, dropped or timed out in the measured window");
        } else {
            out.set(&k("loss_pct"), 100.0 * lost as f64 / fated as f64);
        }
        out.set(&k("probes"), fated as f64);
        // A probe dropped at enqueue has its fate at once, as the drops counted above.
        out.set(&k("unsendable"), st.unsendable as f64);
    }

    /// What the receiving side processed, and what the floods' sinks got.
    fn traffic_metrics(&self, out: &mut Out) {
        let mt = &self.metrics;
        let secs = (self.cfg.end - self.cfg.start) as f64 / 1e9;
        out.set("consumer.pps", mt.consumer_pkts as f64 / secs);
        let sink: u64 = self.udp_socks().map(|u| u.sink_pkts).sum();
        if self.udp_socks().next().is_none() {
            for k in ["sink.pps", "sink.owd_avg_ms"] {
                out.none(k, "the scenario has no UDP flood");
            }
            return;
        }
        out.set("sink.pps", sink as f64 / secs);
        if sink > 0 {
            out.set("sink.owd_avg_ms", mt.sink_owd_ns as f64 / sink as f64 / 1e6);
        } else {
            out.none("sink.owd_avg_ms", "no flood packet was delivered in the measured window");
        }
        for u in self.udp_socks() {
            out.m.insert(format!("sink.pps.{}", u.traffic_index), Some(u.sink_pkts as f64 / secs));
        }
    }

    /// Qdisc counters, as `tc -s qdisc` shows the root (mq: the sum of its children).
    fn qdisc_metrics(&self, out: &mut Out) {
        if self.net.qdiscs.is_empty() {
            for k in ["qdisc.sent_pkts", "qdisc.drops", "qdisc.requeues", "qdisc.overlimits", "qdisc.backlog_avg_pkts"] {
                out.none(k, "no qdisc: the device runs noqueue");
            }
            return;
        }
        let window: Vec<(TcCounters, TcCounters)> = self.host_qdiscs().map(|q| (q.tc_counters(), q.base)).collect();
        let sum = |f: &dyn Fn(&TcCounters) -> u64| -> f64 { window.iter().map(|(now, base)| f(now) - f(base)).sum::<u64>() as f64 };
        out.set("qdisc.sent_pkts", sum(&|c| c.sent_pkts));
        out.set("qdisc.drops", sum(&|c| c.drops));
        out.set("qdisc.requeues", sum(&|c| c.requeues));
        out.set("qdisc.overlimits", sum(&|c| c.overlimits));
        out.set("qdisc.backlog_avg_pkts", self.metrics.qdisc_backlog.mean(self.cfg.start, self.cfg.end));
        for (name, v) in self.qdisc_xstats() {
            out.m.insert(format!("qdisc.{}", xstat_metric(name)), Some(v));
        }
        self.qdisc_txq_metrics(out);
        self.ingress_metrics(out);
    }

    /// Ingress shaping: the ifb's root qdisc of the measured host, as `tc -s qdisc show
    /// dev ifbN` shows it, under `ingress.qdisc.*` with the names `qdisc.*` uses
    /// (counters over the measured window, xstats as for the root). Nothing without
    /// ingress shaping.
    fn ingress_metrics(&self, out: &mut Out) {
        // Host 0 is this host, whose device is measured (setup.rs's `ifb()`).
        let Some((ifb, _)) = self.net.hosts.iter().next().and_then(|h| h.ingress) else { return };
        let window: Vec<(TcCounters, TcCounters)> = self.dev_qdiscs(ifb).map(|q| (q.tc_counters(), q.base)).collect();
        let sum = |f: &dyn Fn(&TcCounters) -> u64| -> f64 { window.iter().map(|(now, base)| f(now) - f(base)).sum::<u64>() as f64 };
        out.set("ingress.qdisc.sent_pkts", sum(&|c| c.sent_pkts));
        out.set("ingress.qdisc.drops", sum(&|c| c.drops));
        out.set("ingress.qdisc.requeues", sum(&|c| c.requeues));
        out.set("ingress.qdisc.overlimits", sum(&|c| c.overlimits));
        for (name, v) in self.dev_qdisc_xstats(ifb) {
            out.m.insert(format!("ingress.qdisc.{}", xstat_metric(name)), Some(v));
        }
    }

    /// Per TX queue of this host's device, when it has a qdisc per queue (mq): the
    /// counters of each child that saw traffic in the window, as the seed reads them
    /// off `tc -s qdisc` queue by queue (`qdisc.txq.N.*`).
    fn qdisc_txq_metrics(&self, out: &mut Out) {
        let d = &self.net.devs[DevId(0)];
        let per_queue = d.txq_qdisc.len() > 1 && d.txq_qdisc.windows(2).all(|w| w[0] != w[1]);
        if !per_queue {
            return;
        }
        const PER_QUEUE_XSTATS: &[&str] = &["throttled", "flows_plimit", "unthrottle_latency_ns", "fastpath_packets"];
        for (txq, qi) in d.txq_qdisc.iter().enumerate() {
            let Some(qi) = qi else { continue };
            let q = &self.net.qdiscs[*qi];
            let (now, base) = (q.tc_counters(), q.base);
            let sent = now.sent_pkts - base.sent_pkts;
            let drops = now.drops - base.drops;
            if sent == 0 && drops == 0 {
                continue;
            }
            out.m.insert(format!("qdisc.txq.{txq}.sent_pkts"), Some(sent as f64));
            out.m.insert(format!("qdisc.txq.{txq}.drops"), Some(drops as f64));
            let Some(algo) = q.q.as_ref() else { continue };
            for (name, v) in algo.xstats() {
                if !PER_QUEUE_XSTATS.contains(&name) {
                    continue;
                }
                // The latency is fq's EWMA, a gauge; the others count over the window.
                let b = if xstat_kind(name) == XstatKind::Counter { q.xbase.iter().find(|(n, _)| *n == name).map_or(0, |(_, b)| *b) } else { 0 };
                out.m.insert(format!("qdisc.txq.{txq}.{}", xstat_metric(name)), Some(v.saturating_sub(b) as f64));
            }
        }
    }

    /// Where a socket's TX queue changed (`netdev_pick_tx()`), over the whole run: all
    /// changes, the flips between two queues, and those flips with `skb->ooo_okay` set
    /// (TCP allows a flip only then; a flip without it would be a model bug).
    fn xps_metrics(&self, out: &mut Out) {
        let qc = &self.metrics.queue_changes;
        if qc.is_empty() {
            return;
        }
        let changes: u64 = qc.values().map(|n| n[0]).sum();
        let flips: u64 = qc.iter().filter(|(k, _)| k.1 >= 0).map(|(_, n)| n[0]).sum();
        let flips_ooo: u64 = qc.iter().filter(|(k, _)| k.1 >= 0).map(|(_, n)| n[1]).sum();
        out.set("xps.queue_changes", changes as f64);
        out.set("xps.queue_flips", flips as f64);
        out.set("xps.queue_flips_ooo_okay", flips_ooo as f64);
    }

    /// `bql.*` over the measured device's TX queues (in-flight summed, the largest
    /// limit; completions on every device with BQL, as before) and, with more than one queue, each queue's
    /// `bql.txq.N.*` as its sysfs `queues/tx-N/byte_queue_limits` would show it.
    fn bql_metrics(&self, out: &mut Out) {
        const KEYS: [&str; 7] = ["limit_avg", "limit_last", "inflight_avg", "inflight_p50", "inflight_p99", "inflight_max", "completions"];
        if !self.measured_dev().bql {
            for k in KEYS {
                out.none(&format!("bql.{k}"), "BQL is disabled in this scenario");
            }
            return;
        }
        let (mt, start, end) = (&self.metrics, self.cfg.start, self.cfg.end);
        // A time-weighted quantile of an empty window is 0, as its mean is.
        let pct = |h: &crate::metrics::TimeHist, q: f64| h.quantile(q, end).unwrap_or(0) as f64;
        let (hist, avg) = (&mt.bql_inflight_hist, &mt.bql_inflight);
        let agg = [mt.bql_limit.mean(start, end), mt.bql_limit.last() as f64, avg.mean(start, end), pct(hist, 0.5), pct(hist, 0.99), avg.max as f64, mt.bql_completions as f64];
        for (k, v) in KEYS.into_iter().zip(agg) {
            out.set(&format!("bql.{k}"), v);
        }
        let txqs = &self.measured_dev().txqs;
        if txqs.len() < 2 {
            return;
        }
        for (n, (q, txq)) in mt.bql_txq.iter().zip(txqs).enumerate() {
            let Some(dql) = txq.dql.as_ref() else { continue };
            let h = &q.inflight_hist;
            let per = [q.limit.mean(start, end), q.limit.last() as f64, q.inflight.mean(start, end), pct(h, 0.5), pct(h, 0.99), q.inflight.max as f64, q.completions as f64];
            for (k, v) in KEYS.into_iter().zip(per) {
                out.m.insert(format!("bql.txq.{n}.{k}"), Some(v));
            }
            out.m.insert(format!("bql.txq.{n}.limit_min"), Some(dql.min_limit as f64));
            out.m.insert(format!("bql.txq.{n}.limit_max"), Some(dql.max_limit as f64));
        }
    }

    /// BQL, the TX queue's stops, the receiving NAPI, the driver's ring, the NIC.
    fn device_metrics(&self, out: &mut Out) {
        let mt = &self.metrics;
        let (start, end) = (self.cfg.start, self.cfg.end);
        self.bql_metrics(out);
        let d = self.measured_dev();
        let xoff = |f: &dyn Fn(&darkbuf_model::txq::TxqStats) -> u64| -> f64 {
            d.txqs.iter().zip(&d.txq_base).map(|(q, b)| f(&q.stats) - f(b)).sum::<u64>() as f64
        };
        out.set("txq.stack_xoff", xoff(&|s| s.stack_xoff));
        out.set("txq.drv_xoff", xoff(&|s| s.drv_xoff));
        if !self.has_measured_napi() {
            let why = self.measured_dev().driver.no_napi_reason();
            for k in ["napi.polls", "napi.avg_work", "napi.full_budget_polls"] {
                out.none(k, why);
            }
        } else {
            out.set("napi.polls", mt.napi_polls as f64);
            out.set("napi.avg_work", if mt.napi_polls == 0 { 0.0 } else { mt.napi_work as f64 / mt.napi_polls as f64 });
            out.set("napi.full_budget_polls", mt.napi_full_budget as f64);
        }
        out.set("ring.drops", mt.ring_drops as f64);
        if self.net.links.iter().any(|l| l.loss.is_some()) {
            out.set("path.drops", mt.path_drops as f64);
        }
        if self.net.links.iter().any(|l| l.ecn) {
            out.set("path.marks", mt.path_marks as f64);
        }
        if self.net.links.iter().any(|l| l.delay.as_ref().is_some_and(|d| d.gap != 0)) {
            out.set("path.reordered", mt.path_reordered as f64);
        }
        if self.net.links.iter().any(|l| l.limit != u32::MAX) {
            out.set("path.limit_drops", mt.path_limit_drops as f64);
        }
        if self.net.qdiscs.iter().any(|q| q.netem) {
            out.set("netem.corrupt_drops", mt.netem_corrupt_drops as f64);
        }
        // noqueue only: packets __dev_queue_xmit() dropped because the driver would not take them.
        out.set("dev.noqueue_drops", mt.noqueue_drops as f64);
        out.set("ring.occupancy_avg", mt.ring.mean(start, end));
        self.drv_metrics(&mut out.m, end - start);
    }
}

impl World {
    /// The irtt probers' `irtt.*` metrics (all probers' requests together) and each
    /// prober's `irtt.N.*`; nothing when the scenario has no prober.
    fn irtt_metrics(&self, out: &mut Out) {
        let (values, why) = irtt_report(self.irtt_socks().map(|p| &p.recs[..]), self.cfg.start, self.cfg.end);
        out.m.extend(values);
        out.why.extend(why);
    }

    /// The request/response entries' `rr.*` (and, with several, `rr.N.*`) metrics;
    /// nothing without an entry.
    fn rr_metrics(&self, out: &mut Out) {
        let logs = self.rr_logs();
        let (values, why) = darkbuf_measure::rr::rr_report(logs.iter().map(|l| &l[..]), self.cfg.start, self.cfg.end);
        out.m.extend(values);
        out.why.extend(why);
    }
}

/// One pinger's metrics after `ping.` or `ping.N.`: the first eight need an answered
/// probe.
const PING_KEYS: [&str; 9] =
    ["rtt_avg_ms", "rtt_min_ms", "rtt_p50_ms", "rtt_p99_ms", "rtt_max_ms", "wait_qdisc_ms", "wait_ring_ms", "wait_consumer_ms", "loss_pct"];

/// A pinger's `ping.rtt_ms` (or `ping.N.rtt_ms`): a point per probe answered or dropped
/// in the measured window, at its send time (`null` = lost).
fn ping_rtt_series(st: &crate::metrics::PingStats, start: u64) -> TimeSeries {
    let ms = |t: u64| (t.saturating_sub(start)) as f64 / 1e6;
    let mut pts: Vec<(u64, Option<f64>)> = st
        .probes
        .iter()
        .map(|p| (p.t_send, Some(p.rtt as f64 / 1e6)))
        .chain(st.lost_at.iter().filter(|&&t| t >= start).map(|&t| (t, None)))
        .collect();
    pts.sort_by_key(|p| p.0);
    TimeSeries { unit: "ms".into(), t_ms: pts.iter().map(|p| ms(p.0)).collect(), values: pts.iter().map(|p| p.1).collect() }
}

/// How long an unanswered probe is waited for before it counts as lost: the kernel
/// backend's prober timeout.
const PROBE_TIMEOUT_NS: u64 = 2_000_000_000;

use darkbuf_measure::Out;
