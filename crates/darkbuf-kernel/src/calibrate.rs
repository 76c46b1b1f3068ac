//! `darkbuf calibrate`: a short measured matrix on the kernel backend, fitted into a
//! simulator machine profile (crates/darkbuf-sim/src/profile.rs, profiles/seed-vm.toml).
//!
//! Runs (veth NAPI mode, threaded NAPI on the last CPU, pfifo limit 1000, 64-byte UDP
//! flood with a 32 MiB send buffer, nft rules on every received packet):
//!
//! 1. the consumer matrix: nrules 0 / 1000 / 4000 × app_cost 0 / 2 µs;
//! 2. "send": the flood alone with nothing in the way (noqueue, no rules): its rate;
//! 3. "light": a 20 kpps flood (well below the consumer's capacity), nrules 0, with a
//!    ping: the NAPI kthread's CPU time per poll when polls are short;
//! 4. "idle": the ping alone: the unloaded round trip.
//!
//! Fitted, each from what measures it:
//! - `consumer_base_ns`, `consumer_per_rule_ns`: darkbuf_sim::profile::fit_consumer()
//!   (weighted least squares on 1e9/pps) of the consumer pps at app_cost 0, only
//!   points where the consumer was the bottleneck (the qdisc held a backlog and the
//!   consumer CPU was >= 90 % busy). The consumer CPU runs the NAPI kthread and the
//!   sink, so, as in the simulator (which folds the receiving application into the
//!   consumer's per-packet cost), the fitted cost is that CPU's time per packet;
//! - `napi_poll_ns`: the NAPI kthread's CPU time solved as `t = polls * poll_ns + pkts *
//!   c` over the nrules-0 saturated run (64 packets per poll) and the light run (a few
//!   per poll); kept assumed when the system is degenerate or the result negative;
//! - `send_ns`: 1e9 / (the flood's rate in the send run) - `xmit_ns` (the sender also
//!   runs veth_xmit per packet; no qdisc, so no dequeue);
//! - `ping_reply_ns`: the idle round trip minus every other cost on the probe's way
//!   (ping_send, xmit, wakeup, napi_poll, consume, consumer_base), as the residual.
//!
//! Every other cost (dequeue, xmit, softirq, consume, wakeup, ping_send) is kept from
//! the seed-vm profile and named as assumed in the output. The app_cost points are not
//! fitted: the file records them next to the simulator's additive prediction
//! (1e9 / (per-packet + app_cost)) as a check of that assumption.

use crate::backend::{self, RunOpts};
use crate::error::{KernelError, Result};
use crate::rules::RuleScope;
use darkbuf_report::Results;
use darkbuf_sim::profile::{fit_consumer, FitPoint, Profile};
use std::fmt::Write as _;
use std::path::Path;

/// One measured point of the matrix.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Point {
    pub label: String,
    pub nrules: u32,
    pub app_cost_ns: u64,
    pub consumer_pps: Option<f64>,
    pub sink_pps: Option<f64>,
    pub flood_pps: Option<f64>,
    pub backlog_avg_pkts: Option<f64>,
    pub qdisc_drops: Option<f64>,
    pub napi_polls_per_s: Option<f64>,
    pub napi_avg_work: Option<f64>,
    pub napi_cpu_pct: Option<f64>,
    pub rtt_p50_ms: Option<f64>,
    /// Busy share of the consumer CPU (the NAPI kthread's and the sink's).
    pub consumer_cpu_pct: Option<f64>,
    /// CPU used by other processes on the machine during the window (noise).
    pub other_cpu_pct: Option<f64>,
    /// The queue built up and the consumer CPU was saturated: the consumer, not the
    /// sender, set the rate.
    pub consumer_bound: bool,
}

/// What calibration produced.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Calibration {
    pub points: Vec<Point>,
    pub fitted: Vec<String>,
    pub assumed: Vec<String>,
    pub notes: Vec<String>,
    pub profile_toml: String,
}

/// Durations: `quick` (DARKBUF_CALIBRATE_QUICK=1) about 30 s in all, else about 1.5 min.
pub fn quick_from_env() -> bool {
    std::env::var("DARKBUF_CALIBRATE_QUICK").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The consumer matrix.
pub const NRULES: [u32; 3] = [0, 1000, 4000];
pub const APP_COST_NS: [u64; 2] = [0, 2000];

fn scenario_text(label: &str, duration: &str, qdisc: &str, nrules: u32, app_ns: u64, flood: Option<&str>, ping: bool) -> String {
    let mut s = format!(
        "name = \"calibrate-{label}\"\nduration = \"{duration}\"\nwarmup = \"1s\"\nsample_interval = \"0s\"\n\n\
         [device]\ndriver = \"veth\"\ntx_queues = 1\nnapi = \"threaded\"\nbackpressure = true\n\n\
         [qdisc]\n{qdisc}\n\n[consumer]\nkind = \"napi\"\nnrules = {nrules}\napp_cost = \"{app_ns}ns\"\n"
    );
    if let Some(rate) = flood {
        s.push_str(&format!("\n[[traffic]]\nkind = \"udp\"\nsize = 64\nrate = \"{rate}\"\nsndbuf = \"32MiB\"\n"));
    }
    if ping {
        s.push_str("\n[[traffic]]\nkind = \"ping\"\ninterval = \"5ms\"\n");
    }
    s
}

fn mean(r: &Results, k: &str) -> Option<f64> {
    r.metric(k).map(|s| s.mean)
}

fn point(label: &str, nrules: u32, app: u64, r: &Results, secs: f64) -> Point {
    let backlog = mean(r, "qdisc.backlog_avg_pkts");
    let drops = mean(r, "qdisc.drops");
    let consumer_cpu = crate::online_cpus().saturating_sub(1);
    let busy = mean(r, &format!("cpu.{consumer_cpu}.busy_pct"));
    Point {
        label: label.into(),
        nrules,
        app_cost_ns: app,
        consumer_pps: mean(r, "consumer.pps"),
        sink_pps: mean(r, "sink.pps"),
        flood_pps: mean(r, "flood.pps"),
        backlog_avg_pkts: backlog,
        qdisc_drops: drops,
        napi_polls_per_s: mean(r, "napi.polls").map(|p| p / secs),
        napi_avg_work: mean(r, "napi.avg_work"),
        napi_cpu_pct: mean(r, "napi.thread_cpu_pct"),
        rtt_p50_ms: mean(r, "ping.rtt_p50_ms"),
        consumer_cpu_pct: busy,
        other_cpu_pct: mean(r, "machine.other_cpu_pct"),
        consumer_bound: (backlog.unwrap_or(0.0) > 10.0 || drops.unwrap_or(0.0) > 0.0) && busy.unwrap_or(0.0) >= 90.0,
    }
}

/// Runs the matrix, fits, writes the profile to `out` and returns what was done.
/// `progress` gets a line per run.
pub fn calibrate(out: &Path, quick: bool, mut progress: impl FnMut(&str)) -> Result<Calibration> {
    let (dur, dur_s, runs) = if quick { ("1s", 1.0, 1) } else { ("3s", 3.0, 2) };
    let opts = RunOpts { rule_scope: RuleScope::All, netns_sysctls: Vec::new(), sender_tso: false, probe_trace: false };
    let base = Profile::load("seed-vm").map_err(|e| KernelError::Internal(e.to_string()))?;
    let mut points = Vec::new();
    let mut notes = Vec::new();
    let run = |label: &str, text: String, runs: u32, progress: &mut dyn FnMut(&str)| -> Result<Results> {
        progress(&format!("calibrate: {label}"));
        let mut scn = darkbuf_scenario::load_str(&format!("calibrate-{label}.toml"), &text, &[])
            .map_err(|d| KernelError::Internal(format!("calibration scenario: {d}")))?;
        scn.runs = runs;
        let (r, _notes) = backend::run_scenario(&scn, &opts, |_| {})?;
        Ok(r)
    };
    for &n in &NRULES {
        for &app in &APP_COST_NS {
            let label = format!("n{n}-app{app}");
            let text = scenario_text(&label, dur, "kind = \"pfifo\"\nlimit = 1000", n, app, Some("max"), false);
            let r = run(&label, text, runs, &mut progress)?;
            points.push(point(&label, n, app, &r, dur_s));
        }
    }
    let send = run("send", scenario_text("send", dur, "kind = \"noqueue\"", 0, 0, Some("max"), false), 1, &mut progress)?;
    let send_p = point("send", 0, 0, &send, dur_s);
    let light = run("light", scenario_text("light", dur, "kind = \"pfifo\"\nlimit = 1000", 0, 0, Some("20kpps"), true), 1, &mut progress)?;
    let light_p = point("light", 0, 0, &light, dur_s);
    let idle = run("idle", scenario_text("idle", dur, "kind = \"pfifo\"\nlimit = 1000", 0, 0, None, true), 1, &mut progress)?;
    let idle_p = point("idle", 0, 0, &idle, dur_s);
    // A tap read by a reader with no application cost: the reader's own per-frame cost.
    let tap_text = format!(
        "name = \"calibrate-tap\"\nduration = \"{dur}\"\nwarmup = \"1s\"\nsample_interval = \"0s\"\n\n\
         [device]\ndriver = \"tun\"\ntxqueuelen = 1000\nbackpressure = false\n\n[qdisc]\nkind = \"pfifo_fast\"\n\n\
         [consumer]\nkind = \"reader\"\napp_cost = \"0ns\"\n\n[[traffic]]\nkind = \"udp\"\nsize = 64\nrate = \"max\"\n"
    );
    let tap = run("tap", tap_text, 1, &mut progress)?;
    let tap_p = point("tap", 0, 0, &tap, dur_s);

    // The machine's stalls: every CPU busy at once, nothing else of ours running.
    progress("calibrate: stalls (a busy loop on every CPU)");
    let stalls = crate::stalls::measure(crate::online_cpus(), std::time::Duration::from_secs_f64(if quick { 1.0 } else { 5.0 }));
    // The kernel build's MAX_TCP_HEADER, from a loopback connection's first send buffer.
    let (max_tcp_header, header_how) = match crate::tcp_header::measure() {
        Ok(h) => (h, format!("max_tcp_header {h} measured (a loopback connection's first sk_sndbuf)")),
        Err(e) => {
            progress(&format!("calibrate: max_tcp_header not measured ({e}); seed-vm's {} kept", base.max_tcp_header));
            (base.max_tcp_header, format!("max_tcp_header assumed (seed-vm's): {e}"))
        }
    };

    let mut c = base.costs.clone();
    let mut fitted = Vec::new();

    // napi_poll_ns from the saturated nrules-0 run and the light run.
    let sat = points.iter().find(|p| p.nrules == 0 && p.app_cost_ns == 0).cloned();
    if let Some(sat) = &sat {
        let eq = |p: &Point| -> Option<(f64, f64, f64)> {
            Some((p.napi_cpu_pct? / 100.0 * 1e9, p.napi_polls_per_s?, p.consumer_pps?))
        };
        match (eq(sat), eq(&light_p)) {
            (Some((t1, p1, k1)), Some((t2, p2, k2))) => {
                let det = p1 * k2 - p2 * k1;
                if det.abs() > 1e-6 * (p1 * k2).abs().max(1.0) {
                    let x = (t1 * k2 - t2 * k1) / det;
                    let per_pkt = (p1 * t2 - p2 * t1) / det;
                    if x > 0.0 && per_pkt > 0.0 && x < 1e6 {
                        c.napi_poll_ns = round2(x);
                        fitted.push("napi_poll_ns".to_string());
                        notes.push(format!(
                            "napi_poll_ns: kthread CPU = polls x {:.0} ns + packets x {:.0} ns (saturated: {:.0} polls/s, {:.0} pps, {:.1}% CPU; light: {:.0} polls/s, {:.0} pps, {:.1}% CPU)",
                            x, per_pkt, p1, k1, t1 / 1e7, p2, k2, t2 / 1e7
                        ));
                    } else {
                        notes.push(format!("napi_poll_ns kept assumed: the solved per-poll cost {x:.0} ns / per-packet {per_pkt:.0} ns is not plausible"));
                    }
                } else {
                    notes.push("napi_poll_ns kept assumed: the two runs had the same packets per poll".into());
                }
            }
            _ => notes.push("napi_poll_ns kept assumed: the NAPI kthread's CPU time or the poll count was not measured".into()),
        }
    }

    // Consumer costs.
    let overhead = c.consume_ns + c.napi_poll_ns / 64.0;
    let fit_pts: Vec<FitPoint> = points
        .iter()
        .filter(|p| p.app_cost_ns == 0)
        .filter(|p| {
            if !p.consumer_bound {
                notes.push(format!(
                    "nrules {} left out of the consumer fit: no queue built or the consumer CPU was not saturated, so the consumer did not set the rate",
                    p.nrules
                ));
            }
            p.consumer_bound
        })
        .filter_map(|p| Some(FitPoint { nrules: p.nrules, pps: p.consumer_pps.filter(|v| *v > 0.0)? }))
        .collect();
    if fit_pts.len() >= 2 {
        let (b, k) = fit_consumer(&fit_pts, overhead);
        c.consumer_base_ns = round2(b);
        c.consumer_per_rule_ns = round2(k);
        fitted.push("consumer_base_ns".into());
        fitted.push("consumer_per_rule_ns".into());
    } else {
        return Err(KernelError::Internal(format!(
            "calibration: only {} consumer-bound points (need 2); the consumer never became the bottleneck",
            fit_pts.len()
        )));
    }

    // send_ns.
    match send_p.flood_pps {
        Some(pps) if pps > 0.0 => {
            let v = 1e9 / pps - c.xmit_ns;
            if v > 0.0 {
                c.send_ns = round2(v);
                fitted.push("send_ns".into());
            } else {
                notes.push(format!("send_ns kept assumed: 1e9/{pps:.0} pps is below xmit_ns"));
            }
        }
        _ => notes.push("send_ns kept assumed: the send run's rate was not measured".into()),
    }

    // ping_reply_ns as the idle round trip's residual.
    if let Some(rtt) = idle_p.rtt_p50_ms {
        let others = c.ping_send_ns + c.xmit_ns + c.wakeup_ns + c.napi_poll_ns + c.consume_ns + c.consumer_base_ns;
        let v = rtt * 1e6 - others;
        if v > 0.0 {
            c.ping_reply_ns = round2(v);
            fitted.push("ping_reply_ns".into());
        } else {
            notes.push(format!("ping_reply_ns kept assumed: the idle RTT {rtt:.3} ms is below the other costs ({:.0} ns)", others));
        }
    } else {
        notes.push("ping_reply_ns kept assumed: the idle ping was not measured".into());
    }

    // tun_read_ns: the saturated reader's time per frame (its ring never runs dry under a
    // max-rate flood, so it reads back to back).
    match tap_p.consumer_pps {
        Some(pps) if pps > 0.0 => {
            c.tun_read_ns = round2(1e9 / pps);
            fitted.push("tun_read_ns".into());
            notes.push(format!("tun_read_ns: 1e9 / {pps:.0} frames/s of a tap reader with no application cost under a max-rate flood"));
        }
        _ => notes.push("tun_read_ns kept assumed: the tap reader's rate was not measured".into()),
    }

    let all = [
        "send_ns", "ping_send_ns", "dequeue_ns", "xmit_ns", "softirq_ns", "napi_poll_ns", "consume_ns", "consumer_base_ns",
        "consumer_per_rule_ns", "wakeup_ns", "ping_reply_ns", "tun_read_ns", "vhost_batch_ns", "vhost_pkt_ns",
        // TCP's costs are not measured by the matrix (UDP floods only): kept from seed-vm.
        "tcp_copy_ns_per_kb", "tcp_xmit_ns", "tcp_ack_ns", "tcp_rcv_ns",
    ];
    let assumed: Vec<String> = all.iter().filter(|k| !fitted.iter().any(|f| f == *k)).map(|k| k.to_string()).collect();
    let profile = Profile {
        name: "calibrated".into(),
        description: format!(
            "Calibrated by darkbuf calibrate on kernel {} ({}): fitted {}; assumed (from seed-vm) {}; {header_how}",
            crate::uname_release(),
            crate::cpu_model(),
            fitted.join(", "),
            assumed.join(", ")
        ),
        noise: base.noise,
        stalls,
        max_tcp_header,
        costs: c,
        fit: Some(darkbuf_sim::profile::Fit {
            source: format!(
                "darkbuf calibrate{} on kernel {}, {}: veth NAPI mode (threaded, GRO on / TSO off), pfifo 1000, 64-byte UDP flood, sndbuf 32 MiB, nft rules on every packet; consumer pps at app_cost 0",
                if quick { " (quick)" } else { "" },
                crate::uname_release(),
                crate::cpu_model()
            ),
            method: format!(
                "weighted least squares of 1e9/pps - (consume_ns + napi_poll_ns/64) = base + nrules * per_rule, weights 1/y^2 (darkbuf_sim::profile::fit_consumer), consumer-bound points only; {} run(s) of {dur} each",
                runs
            ),
            fitted: fitted.iter().filter(|f| f.starts_with("consumer_")).cloned().collect(),
            points: fit_pts,
        }),
        file: None,
    };
    let text = render_profile(&profile, &points, &[send_p, light_p, idle_p, tap_p], &fitted, &assumed, &notes, overhead)?;
    std::fs::write(out, &text).map_err(|e| KernelError::Input(format!("cannot write {}: {e}", out.display())))?;
    // The simulator must accept what was written.
    let path = out.to_string_lossy();
    let path = if path.ends_with(".toml") || path.contains('/') { path.into_owned() } else { format!("./{path}") };
    Profile::load(&path).map_err(|e| KernelError::Internal(format!("the written profile does not load: {e}")))?;
    Ok(Calibration { points, fitted, assumed, notes, profile_toml: text })
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.prec$}"))
}

/// The profile as TOML, with the whole measured matrix in comments.
fn render_profile(p: &Profile, matrix: &[Point], extra: &[Point], fitted: &[String], assumed: &[String], notes: &[String], overhead: f64) -> Result<String> {
    let mut s = String::new();
    let _ = writeln!(s, "# darkbuf machine profile \"{}\", written by `darkbuf calibrate`.", p.name);
    let _ = writeln!(s, "# Load it with: [machine] profile = \"path/to/this.toml\"");
    let _ = writeln!(s, "#");
    let _ = writeln!(s, "# FITTED: {}. ASSUMED (kept from seed-vm, not measured): {}.", fitted.join(", "), assumed.join(", "));
    let _ = writeln!(s, "#");
    let _ = writeln!(s, "# Measured on the kernel backend (consumer-bound = the pfifo held a backlog):");
    let _ = writeln!(s, "# {:<14} {:>6} {:>8} {:>12} {:>10} {:>10} {:>8} {:>10} {:>9} {:>8} {:>8} {:>8} {:>9} {:>8} {:>14}", "run", "nrules", "app_ns", "consumer_pps", "sink_pps", "flood_pps", "backlog", "drops", "polls/s", "work", "napi%", "cons.cpu%", "rtt_p50", "other%", "consumer-bound");
    for pt in matrix.iter().chain(extra) {
        let _ = writeln!(
            s,
            "# {:<14} {:>6} {:>8} {:>12} {:>10} {:>10} {:>8} {:>10} {:>9} {:>8} {:>8} {:>8} {:>9} {:>8} {:>14}",
            pt.label,
            pt.nrules,
            pt.app_cost_ns,
            opt(pt.consumer_pps, 0),
            opt(pt.sink_pps, 0),
            opt(pt.flood_pps, 0),
            opt(pt.backlog_avg_pkts, 0),
            opt(pt.qdisc_drops, 0),
            opt(pt.napi_polls_per_s, 0),
            opt(pt.napi_avg_work, 1),
            opt(pt.napi_cpu_pct, 1),
            opt(pt.consumer_cpu_pct, 1),
            opt(pt.rtt_p50_ms, 3),
            opt(pt.other_cpu_pct, 0),
            if pt.consumer_bound { "yes" } else { "no" }
        );
    }
    let _ = writeln!(s, "#");
    let _ = writeln!(s, "# The simulator adds app_cost to the consumer's per-packet time; its prediction for the app_cost points:");
    for pt in matrix.iter().filter(|pt| pt.app_cost_ns > 0) {
        let pred = 1e9 / (overhead + p.consumer_cost_ns(pt.nrules) + pt.app_cost_ns as f64);
        let _ = writeln!(
            s,
            "#   nrules {:>5}, app_cost {} ns: predicted {:.0} pps, measured consumer {} pps, sink {} pps",
            pt.nrules,
            pt.app_cost_ns,
            pred,
            opt(pt.consumer_pps, 0),
            opt(pt.sink_pps, 0)
        );
    }
    if !notes.is_empty() {
        let _ = writeln!(s, "#");
        for n in notes {
            let _ = writeln!(s, "# {n}");
        }
    }
    let body = toml_of(p)?;
    s.push_str(&body);
    Ok(s)
}

fn toml_str(v: &str) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "\"\"".into())
}

fn toml_of(p: &Profile) -> Result<String> {
    let c = &p.costs;
    let mut s = String::new();
    let _ = writeln!(s, "name = {}", toml_str(&p.name));
    let _ = writeln!(s, "description = {}", toml_str(&p.description));
    let _ = writeln!(s, "noise = {}", p.noise);
    let _ = writeln!(s, "max_tcp_header = {}   # MAX_TCP_HEADER of the kernel build (the description says whether measured)", p.max_tcp_header);
    let _ = writeln!(s, "\n[costs]");
    for (k, v) in [
        ("send_ns", c.send_ns), ("ping_send_ns", c.ping_send_ns), ("dequeue_ns", c.dequeue_ns), ("xmit_ns", c.xmit_ns),
        ("softirq_ns", c.softirq_ns), ("napi_poll_ns", c.napi_poll_ns), ("consume_ns", c.consume_ns),
        ("consumer_base_ns", c.consumer_base_ns), ("consumer_per_rule_ns", c.consumer_per_rule_ns),
        ("wakeup_ns", c.wakeup_ns), ("ping_reply_ns", c.ping_reply_ns),
    ] {
        let _ = writeln!(s, "{k} = {v:?}");
    }
    for st in &p.stalls {
        let _ = writeln!(s, "\n[[stalls]]   # measured: gaps in a busy loop pinned to each CPU, all CPUs at once");
        let _ = writeln!(s, "per_s = {:?}\nmin_us = {:?}\nmax_us = {:?}", st.per_s, st.min_us, st.max_us);
    }
    if let Some(f) = &p.fit {
        let _ = writeln!(s, "\n[fit]");
        let _ = writeln!(s, "source = {}", toml_str(&f.source));
        let _ = writeln!(s, "method = {}", toml_str(&f.method));
        let fitted: Vec<String> = f.fitted.iter().map(|x| toml_str(x)).collect();
        let _ = writeln!(s, "fitted = [{}]", fitted.join(", "));
        let _ = writeln!(s, "points = [");
        for pt in &f.points {
            let _ = writeln!(s, "  {{ nrules = {}, pps = {:?} }},", pt.nrules, pt.pps);
        }
        let _ = writeln!(s, "]");
    }
    Ok(s)
}

/// The human-readable summary.
pub fn summary(c: &Calibration, out: &Path) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "wrote {}", out.display());
    let _ = writeln!(s, "fitted: {}", c.fitted.join(", "));
    let _ = writeln!(s, "assumed: {}", c.assumed.join(", "));
    for n in &c.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_scenarios_load() {
        for (q, f, ping) in [("kind = \"pfifo\"\nlimit = 1000", Some("max"), false), ("kind = \"noqueue\"", Some("max"), false), ("kind = \"pfifo\"\nlimit = 1000", None, true)] {
            let t = scenario_text("x", "1s", q, 1000, 2000, f, ping);
            let scn = darkbuf_scenario::load_str("x.toml", &t, &[]).unwrap_or_else(|d| panic!("{d}\n{t}"));
            assert_eq!(scn.consumer.nrules, 1000);
            assert_eq!(scn.consumer.app_cost_ns, 2000);
        }
    }

    #[test]
    fn written_profile_round_trips() {
        let mut p = Profile::load("seed-vm").unwrap();
        p.name = "calibrated".into();
        // Two classes of stalls, as the busy loop reports them.
        p.stalls = vec![
            darkbuf_sim::profile::Stall { per_s: 14.4, min_us: 100.1, max_us: 199.9 },
            darkbuf_sim::profile::Stall { per_s: 0.025, min_us: 30312.7, max_us: 30312.7 },
        ];
        let pts = vec![Point {
            label: "n0-app0".into(), nrules: 0, app_cost_ns: 0, consumer_pps: Some(1e5), sink_pps: None, flood_pps: None,
            backlog_avg_pkts: Some(900.0), qdisc_drops: Some(1.0), napi_polls_per_s: None, napi_avg_work: None,
            napi_cpu_pct: None, rtt_p50_ms: None, consumer_cpu_pct: Some(100.0), other_cpu_pct: None, consumer_bound: true,
        }];
        let text = render_profile(&p, &pts, &[], &["consumer_base_ns".into()], &["send_ns".into()], &["a note".into()], 100.0).unwrap();
        let dir = std::env::temp_dir().join(format!("darkbuf-cal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("p.toml");
        std::fs::write(&f, &text).unwrap();
        let mut back = Profile::load(f.to_str().unwrap()).unwrap();
        assert!(back.file.take().is_some_and(|(path, _)| path == f.to_str().unwrap()));
        assert_eq!(back, p);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
