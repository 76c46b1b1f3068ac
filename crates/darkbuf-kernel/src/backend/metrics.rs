//! The measured window's metrics in the results contract's names, from the two
//! snapshots, the samples between them and what the load tools recorded (the parent
//! module's docs list each metric's counter source).

use super::{Joined, Sample, Snapshot};
use crate::counters;
use crate::load::{self, ProbeResult};
use crate::probe_trace::{match_probes, FarEndEvent, StampedProbe};
use crate::topo;
use darkbuf_report::{Log2Hist, RunRecord, TimeSeries};
use darkbuf_scenario::{Driver, Scenario, Traffic};
use std::collections::BTreeMap;
use std::time::Instant;

use super::RunOutput;

/// One pinger's metrics after `ping.` or `ping.N.`, as the simulator names them (the
/// far end's `wait_ring_ms` and `wait_consumer_ms` come from `probe_far_end_waits()`).
/// The first six are null when there is no figure; the counts always have one.
const PING_KEYS: [&str; 8] = ["rtt_avg_ms", "rtt_min_ms", "rtt_p50_ms", "rtt_p99_ms", "rtt_max_ms", "loss_pct", "probes", "unsendable"];

/// What one prober measured in the window [t0, t1): values and nulls by key (without
/// the `ping.` prefix), its `rtt_ms` series, and its RTT histogram.
struct PingFigures {
    values: Vec<(&'static str, f64)>,
    nulls: Vec<(&'static str, String)>,
    series: TimeSeries,
    hist: Option<Log2Hist>,
}

fn ping_figures(p: &ProbeResult, driver: Driver, t0: u64, t1: u64) -> PingFigures {
    let mut f = PingFigures { values: Vec::new(), nulls: Vec::new(), series: TimeSeries::default(), hist: None };
    let in_window: Vec<(u64, Option<u64>, bool)> = p
        .samples
        .iter()
        .map(|s| (p.start_mono_ns + s.t_send_ns, s.rtt_ns, s.unsendable))
        .filter(|(t, _, _)| *t >= t0 && *t < t1)
        .collect();
    // As the simulator averages it: over the answered probes, here those the driver
    // stamped as well.
    let qdisc_waits: Vec<u64> = p
        .samples
        .iter()
        .filter(|s| (t0..t1).contains(&(p.start_mono_ns + s.t_send_ns)) && s.rtt_ns.is_some())
        .filter_map(|s| s.wait_qdisc_ns)
        .collect();
    if !qdisc_waits.is_empty() {
        let avg = qdisc_waits.iter().map(|&w| w as f64).sum::<f64>() / qdisc_waits.len() as f64;
        f.values.push(("wait_qdisc_ms", avg / 1e6));
    } else if !p.tx_timestamping {
        f.nulls.push(("wait_qdisc_ms", "the probe socket refused SO_TIMESTAMPING, so no driver TX timestamp was asked for".into()));
    } else {
        let why = format!("no answered probe got a software TX timestamp from the {} driver (it does not call skb_tx_timestamp())", driver.name());
        f.nulls.push(("wait_qdisc_ms", why));
    }
    let mut rtts: Vec<u64> = in_window.iter().filter_map(|(_, r, _)| *r).collect();
    rtts.sort_unstable();
    let ms = |ns: f64| ns / 1e6;
    if rtts.is_empty() {
        for k in &PING_KEYS[..5] {
            f.nulls.push((k, "no probe sent in the measured window was answered".into()));
        }
    } else {
        let avg = rtts.iter().map(|&r| r as f64).sum::<f64>() / rtts.len() as f64;
        f.values.push(("rtt_avg_ms", ms(avg)));
        f.values.push(("rtt_min_ms", ms(rtts[0] as f64)));
        for (k, pct) in [("rtt_p50_ms", 50.0), ("rtt_p99_ms", 99.0)] {
            match darkbuf_measure::percentile(&rtts, pct) {
                Some(v) => f.values.push((k, ms(v))),
                None => f.nulls.push((k, "no probe sent in the measured window was answered".into())),
            }
        }
        f.values.push(("rtt_max_ms", ms(*rtts.last().unwrap_or(&0) as f64)));
        let mut h = Log2Hist::default();
        for &r in &rtts {
            h.record(r / 1000);
        }
        f.hist = Some(h);
    }
    let n = in_window.len();
    let lost = in_window.iter().filter(|(_, r, _)| r.is_none()).count();
    if n > 0 {
        f.values.push(("loss_pct", 100.0 * lost as f64 / n as f64));
    } else {
        f.nulls.push(("loss_pct", "no probe was sent in the measured window".into()));
    }
    f.values.push(("probes", n as f64));
    f.values.push(("unsendable", in_window.iter().filter(|(_, _, u)| *u).count() as f64));
    f.series = TimeSeries {
        unit: "ms".into(),
        t_ms: in_window.iter().map(|(t, _, _)| (t - t0) as f64 / 1e6).collect(),
        values: in_window.iter().map(|(_, r, _)| r.map(|x| x as f64 / 1e6)).collect(),
    };
    f
}

/// The probes' mean time in the driver's ring (the driver's TX timestamp to the
/// consumer taking the request) and in the consumer (from there to the echo reply), ns,
/// over the answered probes sent in [t0, t1). On a tap the far end is our reader, which
/// records each echo request it answers (`EchoSeen`); over veth the far end's kernel
/// answers, and its tracepoints tell (`probe_trace`).
fn probe_far_end_waits(j: &Joined, driver: Driver, t0: u64, t1: u64) -> std::result::Result<(f64, f64), String> {
    let Some(Some(p)) = j.probes.first() else { return Err("the prober failed (see the run's notes)".into()) };
    if driver == Driver::Veth {
        return veth_far_end_waits(p, j.far_end.as_ref(), t0, t1);
    }
    let Some(tap) = &j.tap else { return Err("the tap reader failed (see the run's notes)".into()) };
    let Some(id) = p.icmp_id else {
        return Err("not measurable on the kernel: the tap reader records ICMP echo requests, not UDP probes".into());
    };
    let read: BTreeMap<u64, &load::EchoSeen> = tap.echoes.iter().filter(|e| e.id == id).map(|e| (e.data_head, e)).collect();
    let (mut ring, mut consumer, mut n) = (0.0, 0.0, 0u64);
    for (i, s) in p.samples.iter().enumerate() {
        let sent = p.start_mono_ns + s.t_send_ns;
        let (Some(wait_qdisc), Some(_), true) = (s.wait_qdisc_ns, s.rtt_ns, (t0..t1).contains(&sent)) else { continue };
        let Some(e) = read.get(&(i as u64)) else { continue };
        ring += e.read_ns.saturating_sub(sent + wait_qdisc) as f64;
        consumer += e.reply_ns.saturating_sub(e.read_ns) as f64;
        n += 1;
    }
    if n == 0 {
        return Err("no answered probe was both stamped by the driver and read by the tap reader".into());
    }
    Ok((ring / n as f64, consumer / n as f64))
}

/// `probe_far_end_waits()` over veth, from the far end's tracepoint events.
fn veth_far_end_waits(
    p: &ProbeResult,
    far_end: Option<&std::result::Result<Vec<FarEndEvent>, String>>,
    t0: u64,
    t1: u64,
) -> std::result::Result<(f64, f64), String> {
    let events = match far_end {
        None => {
            return Err("not measured: the far end's kernel answers the echo; --probe-trace traces it (at a cost to the consumer)".into())
        }
        Some(Err(e)) => return Err(format!("not measured: the far end's tracepoints are unavailable ({e})")),
        Some(Ok(ev)) => ev,
    };
    // Every answered, stamped probe takes part in the matching, in send order; only
    // those sent in the window count.
    let answered: Vec<(u64, StampedProbe)> = p
        .samples
        .iter()
        .filter_map(|s| {
            let sent = p.start_mono_ns + s.t_send_ns;
            Some((sent, StampedProbe { driver_ns: sent + s.wait_qdisc_ns?, reply_ns: sent + s.rtt_ns? }))
        })
        .collect();
    let stamped: Vec<StampedProbe> = answered.iter().map(|(_, s)| *s).collect();
    let Some(far) = match_probes(&stamped, events) else {
        return Err(format!(
            "not measured: {} far-end events did not match the {} answered probes (another packet of the probes' length?)",
            events.len(),
            stamped.len()
        ));
    };
    let (mut ring, mut consumer, mut n) = (0.0, 0.0, 0u64);
    for ((sent, s), f) in answered.iter().zip(&far) {
        let (Some((consumed, replied)), true) = (f, (t0..t1).contains(sent)) else { continue };
        ring += consumed.saturating_sub(s.driver_ns) as f64;
        consumer += replied.saturating_sub(*consumed) as f64;
        n += 1;
    }
    if n == 0 {
        return Err("not measured: no answered probe in the window matched the far end's events".into());
    }
    Ok((ring / n as f64, consumer / n as f64))
}

/// The qdiscs' xstats over the window, as the simulator reports them (`qdisc.<name>`,
/// summed over the device's qdiscs; see `darkbuf_model::qdisc::xstat`): for every xstat
/// the model of each configured kind has, the kernel's value, or `null` with why.
/// The xstats of one device's qdiscs (`a` and `b` its qdiscs' and htb classes' at the
/// window's ends), as `PREFIX.NAME`: `qdisc` for the device's, `ingress.qdisc` for the
/// ifb's.
fn qdisc_xstat_metrics(
    scn: &Scenario,
    prefix: &str,
    (a_xstats, a_classes): (&[crate::xstats::QdiscXstats], &[(String, f64)]),
    (b_xstats, b_classes): (&[crate::xstats::QdiscXstats], &[(String, f64)]),
    out: &mut MetricSet<'_>,
) {
    use darkbuf_model::qdisc::xstat::{xstat_kind, xstat_metric, XstatKind};
    let mut sums: BTreeMap<String, f64> = BTreeMap::new();
    let mut means: BTreeMap<String, (f64, u32)> = BTreeMap::new();
    let mut missing: BTreeMap<String, String> = BTreeMap::new();
    for qb in b_xstats {
        let qa = a_xstats.iter().find(|q| q.handle == qb.handle && q.kind == qb.kind);
        let mut values: Vec<(String, f64)> = qb.values.clone();
        if qb.kind == "htb" {
            values.extend(b_classes.iter().cloned());
        }
        for name in model_xstat_names(scn, &qb.kind) {
            if !values.iter().any(|(n, _)| *n == name) {
                missing.entry(name.clone()).or_insert_with(|| crate::xstats::why_missing(&qb.kind, &name));
            }
        }
        for (name, vb) in values {
            let kind = xstat_kind(&name);
            let v = match kind {
                XstatKind::Counter => {
                    let va = if name.starts_with("class ") || matches!(name.as_str(), "lends" | "borrows" | "giants") {
                        a_classes.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
                    } else {
                        qa.and_then(|q| q.get(&name))
                    };
                    (vb - va.unwrap_or(0.0)).max(0.0)
                }
                XstatKind::Gauge | XstatKind::Mean => vb,
            };
            let metric = format!("{prefix}.{}", xstat_metric(&name));
            if kind == XstatKind::Mean {
                let e = means.entry(metric).or_default();
                *e = (e.0 + v, e.1 + 1);
            } else {
                *sums.entry(metric).or_default() += v;
            }
        }
    }
    for (k, (sum, n)) in means {
        sums.insert(k, sum / n as f64);
    }
    for (k, v) in sums {
        out.set(k, v);
    }
    for (name, why) in missing {
        let k = format!("{prefix}.{}", xstat_metric(&name));
        if !out.m.contains_key(&k) {
            out.none(&k, &why);
        }
    }
}

/// The xstats the simulator's model of a `kind` qdisc reports (htb's per-class ones,
/// which depend on the classes, and cake's per-tin ones, which depend on the tins the
/// kernel dumps, are left out), for listing what the kernel did not print.
fn model_xstat_names(scn: &Scenario, kind: &str) -> Vec<String> {
    let dev = darkbuf_model::qdisc::DevInfo { tx_queue_len: scn.device.txqueuelen.max(1), ..Default::default() };
    match darkbuf_model::qdisc::build(kind, darkbuf_model::params::Params::new(Default::default()), &dev) {
        Ok(q) => {
            use darkbuf_model::qdisc::Qdisc;
            q.xstats().into_iter().map(|(n, _)| n.to_string()).filter(|n| !n.starts_with("class ") && !n.starts_with("tin")).collect()
        }
        Err(_) => Vec::new(),
    }
}

fn delta(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    Some(b?.saturating_sub(a?))
}

fn snmp_delta(a: &BTreeMap<String, u64>, b: &BTreeMap<String, u64>, k: &str) -> Option<u64> {
    delta(a.get(k).copied(), b.get(k).copied())
}

/// The metrics of one run as they are built: values, nulls with their reasons (the
/// first reason given for a key stays), time series and histograms.
struct MetricSet<'a> {
    m: BTreeMap<String, Option<f64>>,
    why: &'a mut BTreeMap<String, String>,
    timeseries: BTreeMap<String, TimeSeries>,
    histograms: BTreeMap<String, Log2Hist>,
}

impl MetricSet<'_> {
    fn set(&mut self, k: impl Into<String>, v: f64) {
        self.m.insert(k.into(), Some(v));
    }

    /// `k` is null because of `reason`.
    fn none(&mut self, k: &str, reason: &str) {
        self.m.insert(k.into(), None);
        self.why.entry(k.into()).or_insert_with(|| reason.into());
    }

    /// `k` is `v`, or null because of `reason`.
    fn value_or(&mut self, k: &str, v: Option<f64>, reason: &str) {
        match v {
            Some(v) => self.set(k, v),
            None => self.none(k, reason),
        }
    }
}

/// The measured window: the two snapshots and the seconds between each side's reads.
struct Window<'a> {
    scn: &'a Scenario,
    a: &'a Snapshot,
    b: &'a Snapshot,
    /// Between the snapshots, and between the reads of the sender's and the receiver's
    /// namespace (where a snapshot takes seconds in a TCG guest), s.
    secs: f64,
    secs_tx: f64,
    secs_rx: f64,
}

impl Window<'_> {
    fn veth(&self) -> bool {
        self.scn.device.driver() == Driver::Veth
    }
}

/// The run's metrics in the results contract's names (the module docs of `backend`
/// list each one's source); `why` gets a reason for every null.
#[allow(clippy::too_many_arguments)]
pub(super) fn metrics(
    scn: &Scenario,
    seed: u64,
    a: &Snapshot,
    b: &Snapshot,
    samples: &[Sample],
    j: &Joined,
    setup: &topo::SetupReport,
    bql: bool,
    why: &mut BTreeMap<String, String>,
    notes: &mut Vec<String>,
) -> RunOutput {
    let span = |x: Option<Instant>, y: Option<Instant>| match (x, y) {
        (Some(x), Some(y)) if y > x => (y - x).as_secs_f64(),
        _ => scn.duration_ns as f64 / 1e9,
    };
    let w = Window {
        scn,
        a,
        b,
        secs: span(a.at, b.at),
        secs_tx: span(a.tx_at.or(a.at), b.tx_at.or(b.at)),
        secs_rx: span(a.rx_at.or(a.at), b.rx_at.or(b.at)),
    };
    let mut out = MetricSet { m: BTreeMap::new(), why, timeseries: BTreeMap::new(), histograms: BTreeMap::new() };
    ping_metrics(&mut out, &w, j);
    irtt_metrics(&mut out, &w, j);
    voip_metrics(&mut out, &w, j);
    rr_metrics(&mut out, &w, j);
    let tx_dropped = delta(a.tx_link.as_ref().map(|l| l.tx_dropped), b.tx_link.as_ref().map(|l| l.tx_dropped));
    if w.veth() {
        veth_receiver_metrics(&mut out, &w, j, tx_dropped, notes);
    } else {
        tap_reader_metrics(&mut out, &w, j);
    }
    out.none("ring.occupancy_avg", "the kernel does not expose a ptr_ring's fill level");
    sender_metrics(&mut out, &w, j);
    if w.veth() {
        out.m.insert("dev.tx_dropped".into(), tx_dropped.map(|v| v as f64));
    }
    qdisc_metrics(&mut out, &w, samples, tx_dropped);
    bql_metrics(&mut out, &w, samples, bql);
    host_metrics(&mut out, &w, j, notes);
    if let Some(r) = setup.rules {
        notes.push(format!("{} rules loaded with {}", scn.consumer.nrules, r.name()));
    }
    // Every null has a reason.
    let MetricSet { m, why, timeseries, histograms } = out;
    for k in m.iter().filter(|(_, v)| v.is_none()).map(|(k, _)| k) {
        why.entry(k.clone()).or_insert_with(|| "could not be read".into());
    }
    // What tc printed at the end of the run, under the command a user would type (the
    // run's generated interface name is the only difference).
    let printouts = j.tc_printout.iter().map(|t| (format!("tc -s qdisc show dev {}", setup.tx_dev), t.clone())).collect();
    RunOutput { record: RunRecord { seed, metrics: m, histograms, findings: Vec::new(), timeseries, printouts }, unavailable: BTreeMap::new(), notes: Vec::new() }
}

/// `ping.*` are the first pinger's; with more than one, each has `ping.N.*`.
fn ping_metrics(out: &mut MetricSet<'_>, w: &Window<'_>, j: &Joined) {
    let no_rtt_keys = || PING_KEYS[..6].iter().chain(["wait_qdisc_ms"].iter());
    let pingers = j.probes.len();
    if pingers == 0 {
        for k in no_rtt_keys().chain(["wait_ring_ms", "wait_consumer_ms"].iter()) {
            out.none(&format!("ping.{k}"), "the scenario has no ping traffic");
        }
        return;
    }
    let driver = w.scn.device.driver();
    for (n, p) in j.probes.iter().enumerate() {
        let prefixes = darkbuf_report::ping_prefixes(n, pingers);
        let Some(p) = p else {
            for prefix in &prefixes {
                for k in no_rtt_keys() {
                    out.none(&format!("{prefix}{k}"), "the prober failed (see the run's notes)");
                }
            }
            continue;
        };
        let f = ping_figures(p, driver, w.a.mono_ns, w.b.mono_ns);
        for prefix in &prefixes {
            for (k, v) in &f.values {
                out.set(format!("{prefix}{k}"), *v);
            }
            for (k, reason) in &f.nulls {
                out.none(&format!("{prefix}{k}"), reason);
            }
            out.timeseries.insert(format!("{prefix}rtt_ms"), f.series.clone());
        }
        if n == 0 {
            if let Some(h) = f.hist {
                out.histograms.insert("ping_rtt_us".to_string(), h);
            }
        }
    }
    // The far end's records follow the first pinger's probes.
    let far = probe_far_end_waits(j, driver, w.a.mono_ns, w.b.mono_ns);
    let others = Err("measured for the first pinger's probes only (the far end's records follow one prober)".to_string());
    for n in 0..pingers {
        for prefix in darkbuf_report::ping_prefixes(n, pingers) {
            match if n == 0 { &far } else { &others } {
                Ok((ring, consumer)) => {
                    out.set(format!("{prefix}wait_ring_ms"), ring / 1e6);
                    out.set(format!("{prefix}wait_consumer_ms"), consumer / 1e6);
                }
                Err(why) => {
                    for k in ["wait_ring_ms", "wait_consumer_ms"] {
                        out.none(&format!("{prefix}{k}"), why);
                    }
                }
            }
        }
    }
}

/// irtt: the shared report of the records (darkbuf-measure), so both backends define
/// every irtt.* figure the same way.
fn irtt_metrics(out: &mut MetricSet<'_>, w: &Window<'_>, j: &Joined) {
    if !w.scn.traffic.iter().any(|t| matches!(t, Traffic::Irtt(_))) {
        return;
    }
    let (t0, t1) = (w.a.mono_ns, w.b.mono_ns);
    let recs: Vec<Vec<darkbuf_measure::irtt::IrttRec>> =
        j.irtt.iter().map(|x| x.as_ref().map_or_else(Vec::new, |(c, s)| load::irtt_records(c, s))).collect();
    let (vals, reasons) = darkbuf_measure::irtt::irtt_report(recs.iter().map(|v| &v[..]), t0, t1);
    let failed: Vec<String> = (0..j.irtt.len()).filter(|&n| j.irtt[n].is_none()).map(|n| format!("irtt.{n}.")).collect();
    for (k, v) in vals {
        if failed.iter().any(|f| k.starts_with(f.as_str())) {
            out.none(&k, "this irtt entry's client or server failed (see the run's notes)");
        } else {
            out.value_or(&k, v, reasons.get(&k).map_or("not measured", |r| r.as_str()));
        }
    }
    for (n, r) in recs.iter().enumerate() {
        out.timeseries.insert(format!("irtt.{n}.rtt_ms"), darkbuf_measure::irtt::irtt_rtt_series(r, t0, t1));
    }
}

/// Voice: the shared report of the records (darkbuf-measure's voip), as the simulator's.
fn voip_metrics(out: &mut MetricSet<'_>, w: &Window<'_>, j: &Joined) {
    let specs: Vec<&darkbuf_scenario::Voip> = w.scn.traffic.iter().filter_map(|t| if let Traffic::Voip(v) = t { Some(v) } else { None }).collect();
    if specs.is_empty() {
        return;
    }
    let failed: [super::VoipJoined; 2] = [Err("this voip entry did not start"), Err("this voip entry did not start")];
    let entries: Vec<darkbuf_measure::voip::VoipEntry<'_>> = specs
        .iter()
        .enumerate()
        .map(|(n, v)| {
            let dirs = j.voip.get(n).unwrap_or(&failed);
            let why = |d: &super::VoipJoined, dir: &str| match d {
                Ok(_) => None,
                Err("not sent") => Some(format!("this entry sends no {dir} stream (direction = \"{}\")", format!("{:?}", v.direction).to_lowercase())),
                Err(e) => Some((*e).to_string()),
            };
            darkbuf_measure::voip::VoipEntry { spec: v, up: voip_streams(&dirs[0]), down: voip_streams(&dirs[1]), up_why: why(&dirs[0], "up"), down_why: why(&dirs[1], "down") }
        })
        .collect();
    let (vals, reasons) = darkbuf_measure::voip::voip_report(&entries, w.a.mono_ns, w.b.mono_ns);
    for (k, v) in vals {
        out.value_or(&k, v, reasons.get(&k).map_or("not measured", |r| r.as_str()));
    }
}

/// A joined direction's streams (none when it failed or was not sent).
fn voip_streams(d: &super::VoipJoined) -> Vec<&[darkbuf_measure::voip::VoipRec]> {
    d.as_ref().map_or_else(|_| Vec::new(), |c| c.iter().map(|x| &x[..]).collect())
}

/// Request/response: the shared report of the clients' logs (darkbuf-measure), so both
/// backends define every rr.* figure the same way.
fn rr_metrics(out: &mut MetricSet<'_>, w: &Window<'_>, j: &Joined) {
    if j.rr.is_empty() {
        return;
    }
    let logs: Vec<Vec<darkbuf_measure::rr::RrLog>> = j.rr.iter().map(|x| x.clone().unwrap_or_default()).collect();
    let (vals, reasons) = darkbuf_measure::rr::rr_report(logs.iter().map(|v| &v[..]), w.a.mono_ns, w.b.mono_ns);
    let failed: Vec<String> = (0..j.rr.len()).filter(|&n| j.rr[n].is_none()).map(|n| format!("rr.{n}.")).collect();
    let any_failed = !failed.is_empty();
    for (k, v) in vals {
        if any_failed && (failed.iter().any(|f| k.starts_with(f.as_str())) || k.matches('.').count() == 1) {
            out.none(&k, "a client or the server of an rr entry failed (see the run's notes)");
        } else {
            out.value_or(&k, v, reasons.get(&k).map_or("not measured", |r| r.as_str()));
        }
    }
}

/// veth's far end: its NAPI consumer, the UDP sinks, the ring's drops, NAPI's polls
/// and threads.
/// The receiving veth's metrics. `tx_dropped` is the sending veth's (`priv->dropped`):
/// before 6.16's ring stop (dc82a33297fc), `veth_xmit()` drops an skb at a full
/// ptr_ring there (`NET_RX_DROP`), not in the peer's `rx_queue_N_drops`.
fn veth_receiver_metrics(out: &mut MetricSet<'_>, w: &Window<'_>, j: &Joined, tx_dropped: Option<u64>, notes: &mut Vec<String>) {
    let (a, b) = (w.a, w.b);
    let rate = |d: Option<u64>| d.map(|x| x as f64 / w.secs_rx);
    let napi_pkts = delta(counters::sum_rx_queue(&a.rx_ethtool, "xdp_packets"), counters::sum_rx_queue(&b.rx_ethtool, "xdp_packets"));
    let rx_pkts = delta(a.rx_link.as_ref().map(|l| l.rx_packets), b.rx_link.as_ref().map(|l| l.rx_packets));
    let consumer = match napi_pkts {
        Some(p) if p > 0 => Some(p),
        _ => {
            if rx_pkts.unwrap_or(0) > 0 {
                notes.push("veth did not use its NAPI path (rx_queue_*_xdp_packets did not grow): packets were not GRO-eligible, so there is no ring backpressure and no qdisc queue".into());
            }
            rx_pkts
        }
    };
    out.value_or("consumer.pps", rate(consumer), "the peer's packet counters could not be read");
    match rate(snmp_delta(&a.snmp_rx, &b.snmp_rx, "InDatagrams")) {
        Some(total) => {
            out.set("sink.pps", total);
            let sum: u64 = j.sinks.iter().map(|(_, s)| s.received).sum();
            if j.sinks.len() > 1 && sum > 0 {
                for (i, s) in &j.sinks {
                    out.set(format!("sink.pps.{i}"), total * s.received as f64 / sum as f64);
                }
            } else if let Some((i, _)) = j.sinks.first() {
                out.set(format!("sink.pps.{i}"), total);
            }
        }
        None => out.none("sink.pps", "/proc/net/snmp of the receiving namespace could not be read"),
    }
    for (k, c) in [("udp.rcvbuf_errors", "RcvbufErrors"), ("udp.in_errors", "InErrors")] {
        out.m.insert(k.into(), snmp_delta(&a.snmp_rx, &b.snmp_rx, c).map(|v| v as f64));
    }
    // The peer's receive-side drops (rx_queue_N_drops: an skb veth_xdp_rcv() could not
    // take) plus XDP drops where an XDP program runs, and, on a kernel without the
    // ring stop, the sender's drops at a full ptr_ring. With the stop, the sender's
    // drops are noqueue's (`dev.noqueue_drops`), not the ring's.
    let ring = |s: &Snapshot| {
        let d = counters::sum_rx_queue(&s.rx_ethtool, "drops")?;
        Some(d + counters::sum_rx_queue(&s.rx_ethtool, "xdp_drops").unwrap_or(0))
    };
    let full_ring = if w.scn.device.backpressure { Some(0) } else { tx_dropped };
    let drops = delta(ring(a), ring(b)).zip(full_ring).map(|(r, f)| r + f);
    out.value_or("ring.drops", drops.map(|d| d as f64), "ethtool -S of the veth peer has no rx_queue_N_drops, or the sender's link counters could not be read");
    let consumer_pkts = consumer.unwrap_or(0);
    match (a.polls, b.polls) {
        (Some(pa), Some(pb)) => {
            let polls = pb.polls.saturating_sub(pa.polls);
            out.set("napi.polls", polls as f64);
            out.set("napi.full_budget_polls", pb.full_budget.saturating_sub(pa.full_budget) as f64);
            out.set("napi.avg_work", if polls == 0 { 0.0 } else { consumer_pkts as f64 / polls as f64 });
        }
        _ => {
            for k in ["napi.polls", "napi.avg_work", "napi.full_budget_polls"] {
                out.none(k, "the napi:napi_poll counts could not be read");
            }
        }
    }
    let threaded = w.scn.device.napi == darkbuf_scenario::NapiMode::Threaded;
    out.value_or(
        "napi.thread_cpu_pct",
        delta(a.napi_cpu_ns, b.napi_cpu_ns).map(|ns| 100.0 * ns as f64 / (w.secs * 1e9)),
        if threaded { "the NAPI kthread's schedstat could not be read" } else { "napi = \"softirq\": NAPI runs in softirq context, not in a thread of its own" },
    );
}

/// A tap's far end: the user-space reader.
fn tap_reader_metrics(out: &mut MetricSet<'_>, w: &Window<'_>, j: &Joined) {
    let (a, b) = (w.a, w.b);
    let tx = |s: &Snapshot| s.tx_link.as_ref().map(|l| l.tx_packets);
    match delta(tx(a), tx(b)).map(|x| x as f64 / w.secs_rx) {
        Some(v) => {
            out.set("consumer.pps", v);
            let share = j.tap.as_ref().filter(|t| t.frames > 0).map_or(1.0, |t| t.flood_frames as f64 / t.frames as f64);
            out.set("sink.pps", v * share);
        }
        None => {
            out.none("consumer.pps", "the tap's counters could not be read");
            out.none("sink.pps", "the tap's counters could not be read");
        }
    }
    let dropped = delta(a.tx_link.as_ref().map(|l| l.tx_dropped), b.tx_link.as_ref().map(|l| l.tx_dropped));
    out.m.insert("ring.drops".into(), dropped.map(|d| d as f64));
    for k in ["napi.polls", "napi.avg_work", "napi.full_budget_polls", "napi.thread_cpu_pct"] {
        out.none(k, "a tap has no NAPI consumer: a user-space reader reads its ring");
    }
    for k in ["udp.rcvbuf_errors", "udp.in_errors"] {
        out.none(k, "a tap's consumer is a user-space reader, not a UDP socket");
    }
}

/// The sending namespace: the floods' UDP counters and TCP's TcpExt counters.
fn sender_metrics(out: &mut MetricSet<'_>, w: &Window<'_>, j: &Joined) {
    let (a, b) = (w.a, w.b);
    let flood_pps = snmp_delta(&a.snmp_tx, &b.snmp_tx, "OutDatagrams").map(|x| x as f64 / w.secs_tx);
    out.value_or("flood.pps", flood_pps, "/proc/net/snmp of the sending namespace could not be read");
    out.m.insert("udp.sndbuf_errors".into(), snmp_delta(&a.snmp_tx, &b.snmp_tx, "SndbufErrors").map(|v| v as f64));
    out.set("flood.send_errors", j.floods.iter().map(|(_, f)| f.send_errors).sum::<u64>() as f64);
    if crate::tcp::entries(w.scn).is_empty() {
        return;
    }
    let counters: [(&str, &[&str]); 7] = [
        ("tcp.timeouts", &["TCPTimeouts"]),
        ("tcp.spurious_rtos", &["TCPSpuriousRTOs"]),
        // tcp_newly_delivered(): packets delivered with an ECE-marked ACK.
        ("tcp.delivered_ce", &["TCPDeliveredCE"]),
        ("tcp.loss_probes", &["TCPLossProbes"]),
        ("tcp.loss_probe_recoveries", &["TCPLossProbeRecovery"]),
        ("tcp.undos", &["TCPFullUndo", "TCPDSACKUndo", "TCPLossUndo"]),
        ("tcp.backlog_coalesce", &["TCPBacklogCoalesce"]),
    ];
    for (k, cs) in counters {
        let v = cs.iter().map(|c| snmp_delta(&a.tcpext_tx, &b.tcpext_tx, c)).sum::<Option<u64>>();
        let why = format!("TcpExt {} of /proc/net/netstat in the sending namespace could not be read", cs.join(", "));
        out.value_or(k, v.map(|v| v as f64), &why);
    }
    // HyStart's exits (hystart_update()) over the whole run, from the senders' start.
    let hystart = [
        ("tcp.hystart_train_detect", "TCPHystartTrainDetect"),
        ("tcp.hystart_train_cwnd", "TCPHystartTrainCwnd"),
        ("tcp.hystart_delay_detect", "TCPHystartDelayDetect"),
        ("tcp.hystart_delay_cwnd", "TCPHystartDelayCwnd"),
    ];
    for (k, c) in hystart {
        let v = a.tcpext_tx_load_start.as_ref().and_then(|t0| snmp_delta(t0, &b.tcpext_tx, c));
        let why = format!("TcpExt {c} of /proc/net/netstat in the sending namespace could not be read at the senders' start and the window's end");
        out.value_or(k, v.map(|v| v as f64), &why);
    }
    // tcp_add_backlog() counts only what it coalesces or drops, and tcp_release_cb()
    // nothing.
    out.none("tcp.backlog_acks", "the kernel counts no backlog enqueue (TcpExt has TCPBacklogCoalesce and TCPBacklogDrop only)");
    out.none("tcp.release_cb_work", "the kernel counts no work deferred to tcp_release_cb()");
}

/// The root qdisc's counters (mq: summed over its children, and each child that saw
/// traffic), its xstats, and the sampled backlog.
fn qdisc_metrics(out: &mut MetricSet<'_>, w: &Window<'_>, samples: &[Sample], tx_dropped: Option<u64>) {
    let (scn, a, b) = (w.scn, w.a, w.b);
    let qkeys = ["qdisc.sent_pkts", "qdisc.drops", "qdisc.requeues", "qdisc.overlimits", "qdisc.backlog_avg_pkts"];
    if scn.qdisc.kind == "noqueue" {
        for k in qkeys {
            out.none(k, "no qdisc: the device runs noqueue");
        }
        out.m.insert("dev.noqueue_drops".into(), tx_dropped.map(|v| v as f64));
        return;
    }
    match (&a.qdisc, &b.qdisc) {
        (Some(qa), Some(qb)) => {
            out.set("qdisc.sent_pkts", qb.packets.saturating_sub(qa.packets) as f64);
            out.set("qdisc.drops", qb.drops.saturating_sub(qa.drops) as f64);
            out.set("qdisc.requeues", qb.requeues.saturating_sub(qa.requeues) as f64);
            out.set("qdisc.overlimits", qb.overlimits.saturating_sub(qa.overlimits) as f64);
            let q: Vec<u64> = samples.iter().filter_map(|s| s.qlen).collect();
            let avg = if q.is_empty() { (qa.qlen + qb.qlen) as f64 / 2.0 } else { q.iter().sum::<u64>() as f64 / q.len() as f64 };
            out.set("qdisc.backlog_avg_pkts", avg);
        }
        _ => {
            for k in qkeys {
                out.none(k, "tc -s -j qdisc could not be read");
            }
        }
    }
    out.set("dev.noqueue_drops", 0.0);
    qdisc_xstat_metrics(scn, "qdisc", (&a.xstats, &a.htb_classes), (&b.xstats, &b.htb_classes), out);
    ingress_metrics(out, w);
    // mq: each TX queue's own qdisc that saw traffic, as the simulator names them.
    for (txq, qb) in &b.mq_children {
        let qa = a.mq_children.iter().find(|(q, _)| q == txq).map(|(_, c)| c.clone()).unwrap_or_default();
        let (sent, drops) = (qb.packets.saturating_sub(qa.packets), qb.drops.saturating_sub(qa.drops));
        if sent > 0 || drops > 0 {
            out.set(format!("qdisc.txq.{txq}.sent_pkts"), sent as f64);
            out.set(format!("qdisc.txq.{txq}.drops"), drops as f64);
        }
    }
    if !b.mq_children.is_empty() && scn.traffic.iter().any(|t| matches!(t, Traffic::Tcp(_))) {
        const WHY: &str = "a socket's TX queue changes are seen only by tracing netdev_pick_tx() (the seed's bpftrace \
                           script), which darkbuf does not install; qdisc.txq.N.sent_pkts shows which queues carried the flows";
        for k in ["xps.queue_changes", "xps.queue_flips", "xps.queue_flips_ooo_okay"] {
            out.none(k, WHY);
        }
    }
    if scn.sample_interval_ns > 0 && !samples.is_empty() {
        out.timeseries.insert(
            "qdisc.backlog_pkts".to_string(),
            TimeSeries { unit: "pkts".into(), t_ms: samples.iter().map(|s| s.t_ms).collect(), values: samples.iter().map(|s| s.qlen.map(|v| v as f64)).collect() },
        );
    }
}

/// Ingress shaping: the ifb's root qdisc, as `tc -s qdisc show dev IFB` shows it, under
/// `ingress.qdisc.*` with the names `qdisc.*` uses (the simulator's `ingress_metrics()`).
fn ingress_metrics(out: &mut MetricSet<'_>, w: &Window<'_>) {
    let Some(ing) = &w.scn.ingress else { return };
    let keys = ["ingress.qdisc.sent_pkts", "ingress.qdisc.drops", "ingress.qdisc.requeues", "ingress.qdisc.overlimits"];
    let (Some(ia), Some(ib)) = (w.a.ifb.as_deref(), w.b.ifb.as_deref()) else {
        for k in keys {
            out.none(k, &format!("tc -s -j qdisc show dev {} could not be read", ing.ifb));
        }
        return;
    };
    match (&ia.qdisc, &ib.qdisc) {
        (Some(qa), Some(qb)) => {
            out.set(keys[0], qb.packets.saturating_sub(qa.packets) as f64);
            out.set(keys[1], qb.drops.saturating_sub(qa.drops) as f64);
            out.set(keys[2], qb.requeues.saturating_sub(qa.requeues) as f64);
            out.set(keys[3], qb.overlimits.saturating_sub(qa.overlimits) as f64);
        }
        _ => {
            for k in keys {
                out.none(k, &format!("tc -s -j qdisc show dev {} could not be read", ing.ifb));
            }
        }
    }
    qdisc_xstat_metrics(w.scn, "ingress.qdisc", (&ia.xstats, &ia.htb_classes), (&ib.xstats, &ib.htb_classes), out);
}

/// BQL: the device (largest limit, summed in-flight) and, with several queues, each one.
fn bql_metrics(out: &mut MetricSet<'_>, w: &Window<'_>, samples: &[Sample], bql: bool) {
    let bkeys = ["bql.limit_avg", "bql.limit_last", "bql.inflight_avg", "bql.inflight_p50", "bql.inflight_p99", "bql.inflight_max", "bql.completions"];
    if bql {
        let per: Vec<(f64, &[crate::bql::BqlQueue])> = samples.iter().filter_map(|s| Some((s.t_ms, s.bql.as_deref()?))).collect();
        match crate::bql::metrics(&per, w.scn.sample_interval_ns > 0) {
            None => {
                for k in bkeys {
                    out.none(k, "byte_queue_limits could not be sampled");
                }
            }
            Some((bm, bts)) => {
                out.m.extend(bm);
                out.timeseries.extend(bts);
                out.none("bql.completions", "the kernel does not count DQL completions");
                let queues = per.last().map_or(0, |(_, q)| q.len());
                for n in (0..queues).filter(|_| queues > 1) {
                    out.none(&format!("bql.txq.{n}.completions"), "the kernel does not count DQL completions");
                }
            }
        }
    } else {
        let dev = if w.veth() { "veth" } else { "tap" };
        let reason = format!("kernel {} has no BQL on {dev} (no queues/tx-N/byte_queue_limits)", crate::uname_release());
        for k in bkeys {
            out.none(k, &reason);
        }
    }
    for k in ["txq.stack_xoff", "txq.drv_xoff"] {
        out.none(k, "the kernel does not count TX queue stops; qdisc.requeues counts the driver's NETDEV_TX_BUSY returns");
    }
}

/// Whole-machine counters (softnet, CPUs, other processes) and the flood's one-way
/// delays.
fn host_metrics(out: &mut MetricSet<'_>, w: &Window<'_>, j: &Joined, notes: &mut Vec<String>) {
    let (a, b) = (w.a, w.b);
    if let (Some(x), Some(y)) = (a.squeeze, b.squeeze) {
        out.set("softnet.time_squeeze", y.saturating_sub(x) as f64);
    }
    if a.cpu.len() == b.cpu.len() {
        for (i, ((ba, ta), (bb, tb))) in a.cpu.iter().zip(&b.cpu).enumerate() {
            let total = tb.saturating_sub(*ta);
            if total > 0 {
                out.set(format!("cpu.{i}.busy_pct"), 100.0 * bb.saturating_sub(*ba) as f64 / total as f64);
            }
        }
    }
    // Other processes' CPU use: the measurement is only as clean as the machine.
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let other = 100.0 * b.other_ticks.saturating_sub(a.other_ticks) as f64 / hz / w.secs;
    out.set("machine.other_cpu_pct", other);
    if other > 10.0 {
        notes.push(format!("other processes used {other:.0}% of a CPU during the measured window: rates and delays are disturbed"));
    }
    // One-way delays of the flood (whole run, warmup included).
    let mut owd: Vec<u64> = j.sinks.iter().flat_map(|(_, s)| s.owd_ns_samples.iter().copied()).collect();
    if let Some(t) = &j.tap {
        owd.extend(t.owd_ns_samples.iter().copied());
    }
    owd.sort_unstable();
    if !owd.is_empty() {
        // The mean is what the simulator reports too (sink.owd_avg_ms), so compare lines them up.
        let mean = owd.iter().map(|&v| v as f64).sum::<f64>() / owd.len() as f64;
        out.set("sink.owd_avg_ms", mean / 1e6);
        out.m.insert("sink.owd_p50_ms".into(), darkbuf_measure::percentile(&owd, 50.0).map(|v| v / 1e6));
        out.m.insert("sink.owd_p99_ms".into(), darkbuf_measure::percentile(&owd, 99.0).map(|v| v / 1e6));
    }
}
