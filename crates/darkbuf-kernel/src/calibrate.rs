//! `darkbuf calibrate`: a short measured matrix on the kernel backend, fitted into a
//! simulator machine profile (crates/darkbuf-measure/src/profile.rs, profiles/seed-vm.toml).
//!
//! Runs (veth NAPI mode, threaded NAPI on the last CPU, backpressure where the kernel has
//! it (6.16), pfifo limit 1000, 64-byte UDP flood with a 32 MiB send buffer, nft rules on
//! every received packet):
//!
//! 1. the consumer matrix: nrules 0 / 1000 / 4000 × app_cost 0 / 2 µs;
//! 2. "send": the flood alone with nothing in the way (noqueue, no rules): its rate;
//! 3. "light": a 20 kpps flood (well below the consumer's capacity), nrules 0, with a
//!    ping: the NAPI kthread's CPU time per poll when polls are short;
//! 4. "idle": the ping alone: the unloaded round trip.
//!
//! Fitted, each from what measures it:
//! - `consumer_base_ns`, `consumer_per_rule_ns`: darkbuf_measure::profile::fit_consumer()
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
//!   (ping_send, xmit, wakeup, napi_poll, consume, consumer_base), as the residual;
//!
//! Every other cost (dequeue, xmit, softirq, consume, wakeup, ping_send, TCP's) is kept
//! from the seed-vm profile and named as assumed in the output. A TCP step measures paced
//! connections' minimum RTTs and writes them beside the simulator's with the fitted
//! profile, as a check ([`crate::calibrate_tcp`]). The app_cost points are not
//! fitted: the file records them next to the simulator's additive prediction
//! (1e9 / (per-packet + app_cost)) as a check of that assumption.

use crate::backend::{self, RunOpts};
use crate::error::{KernelError, Result};
use crate::rules::RuleScope;
use darkbuf_report::Results;
use darkbuf_measure::profile::{fit_consumer, Costs, FitPoint, Profile};
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
    /// veth's ptr_ring drops (`ring.drops`: where the kernel has no ring stop, a full
    /// ring drops in `veth_xmit()`).
    pub ring_drops: Option<f64>,
    pub napi_polls_per_s: Option<f64>,
    pub napi_avg_work: Option<f64>,
    pub napi_cpu_pct: Option<f64>,
    pub rtt_p50_ms: Option<f64>,
    /// Busy share of the consumer CPU (the NAPI kthread's and the sink's).
    pub consumer_cpu_pct: Option<f64>,
    /// CPU used by other processes on the machine during the window (noise).
    pub other_cpu_pct: Option<f64>,
    /// The queue built up (a qdisc backlog or drops, or veth ptr_ring drops where the
    /// kernel has no backpressure) and the consumer CPU was saturated: the consumer, not
    /// the sender, set the rate.
    pub consumer_bound: bool,
}

/// What calibration produced.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Calibration {
    pub points: Vec<Point>,
    pub fitted: Vec<String>,
    pub assumed: Vec<String>,
    pub notes: Vec<String>,
    /// The steps a busy machine disturbed (written anyway: `--force`).
    pub disturbed: Vec<Disturbed>,
    pub profile_toml: String,
}

/// Other processes' CPU (% of one CPU) above which a step is disturbed: its rates are
/// then what the load left of the machine, not the machine's costs. `run` notes a
/// window as disturbed at the same bound (backend.rs). Issue 48's busy machine showed
/// 100-199 % in every step and fitted `send_ns = 7653` and stalls of 10-44 ms, 18-21
/// per second; `compare` with that profile was off by -86 %, where the default
/// profile matched the kernel within 1 %.
pub const OTHER_CPU_MAX_PCT: f64 = 10.0;

/// How the description of a profile written from disturbed steps (`--force`) begins, so
/// that whoever loads it can tell ([`is_disturbed`]).
pub const DISTURBED_MARK: &str = "DISTURBED (a busy machine; written with --force";

/// Whether a profile's description says `calibrate --force` wrote it on a busy machine.
pub fn is_disturbed(description: &str) -> bool {
    description.starts_with(DISTURBED_MARK)
}

/// The share of the CPUs' time (%) the stall measurement may lose in gaps of 100 µs
/// and more. The development VM, quiet, lost 1.5 % (docs/examples/seed-vm-stalls.toml);
/// with other processes running, the busy loops lose their share of the CPUs to them
/// (tens of %, in gaps of the scheduler's slices, 2-50 ms).
pub const STOLEN_MAX_PCT: f64 = 5.0;

/// What the stall step saw: the gaps, and the processes that ran meanwhile.
#[derive(Clone, Debug, PartialEq)]
pub struct StallStep {
    pub measured: crate::stalls::Measured,
    /// Other processes' CPU during the step (% of one CPU).
    pub other_cpu_pct: f64,
    /// The busiest other processes: (name, pid, % of one CPU), busiest first.
    pub busiest: Vec<(String, u32, f64)>,
}

/// A disturbed step and what was seen in it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Disturbed {
    pub step: String,
    pub seen: String,
}

/// The steps a busy machine disturbed: a step whose other processes used more than
/// [`OTHER_CPU_MAX_PCT`] of a CPU, and the stall step when its busy loops lost more
/// than [`STOLEN_MAX_PCT`] of the CPUs' time. The stall step comes first: it runs
/// first, and on a busy machine it is where the calibration stops.
///
/// In a `--backend vm` guest (`guest`), the stall step's lost time is the VM's own (its
/// vCPU threads descheduled on the host, QEMU's TCG timers): a property of the machine
/// the profile describes, kept as its `[[stalls]]`, not a disturbance. The host judges
/// its own load around the guest's calibration (`darkbuf calibrate --backend vm`).
pub fn disturbed_steps(stall: Option<&StallStep>, points: &[Point], guest: bool) -> Vec<Disturbed> {
    let mut d = Vec::new();
    if let Some(st) = stall {
        let m = &st.measured;
        let mut seen = Vec::new();
        if m.stolen_pct > STOLEN_MAX_PCT && !guest {
            let (per_s, min_us, max_us) = m.stalls.iter().fold((0.0, f64::INFINITY, 0.0_f64), |(n, lo, hi), s| {
                (n + s.per_s, lo.min(s.min_us), hi.max(s.max_us))
            });
            seen.push(format!(
                "a busy loop on every CPU lost {:.1}% of the CPUs' time (bound {STOLEN_MAX_PCT}%) in stalls: {per_s:.1} per second per CPU, {:.1} to {:.1} ms",
                m.stolen_pct,
                min_us / 1000.0,
                max_us / 1000.0
            ));
        }
        if st.other_cpu_pct > OTHER_CPU_MAX_PCT {
            seen.push(format!("other processes used {:.0}% of a CPU (bound {OTHER_CPU_MAX_PCT}%)", st.other_cpu_pct));
        }
        if !seen.is_empty() {
            d.push(Disturbed { step: "stalls".into(), seen: seen.join("; ") });
        }
    }
    for p in points {
        if let Some(o) = p.other_cpu_pct.filter(|&o| o > OTHER_CPU_MAX_PCT) {
            d.push(Disturbed { step: p.label.clone(), seen: format!("other processes used {o:.0}% of a CPU (bound {OTHER_CPU_MAX_PCT}%)") });
        }
    }
    d
}

/// The busiest processes, as "rustc (pid 16563) 100%", for an error message.
fn busiest_text(busiest: &[(String, u32, f64)]) -> String {
    busiest.iter().map(|(c, pid, pct)| format!("{c} (pid {pid}) {pct:.0}%")).collect::<Vec<_>>().join(", ")
}

/// Why a calibration on a busy machine stops without writing `out`: each disturbed
/// step and what was seen, and what to do.
pub fn refusal(d: &[Disturbed], busiest: &[(String, u32, f64)], out: &Path) -> String {
    let mut s = format!(
        "calibrate: the machine is busy, and a profile fitted now would describe the load, not this machine; {} not written. Disturbed steps:",
        out.display()
    );
    for x in d {
        let _ = write!(s, "\n  {}: {}", x.step, x.seen);
    }
    let _ = write!(s, "\nStop the load");
    if !busiest.is_empty() {
        let _ = write!(s, " (busiest when measured: {})", busiest_text(busiest));
    }
    let _ = write!(s, " and calibrate again, or pass --force to write the profile anyway, marked as disturbed.");
    s
}

/// Measures the stalls ([`crate::stalls::measure`]) and the other processes that ran
/// meanwhile.
fn stall_step(secs: f64) -> StallStep {
    let own = std::process::id();
    let before = crate::counters::other_processes(own);
    let t0 = std::time::Instant::now();
    let measured = crate::stalls::measure(crate::online_cpus(), std::time::Duration::from_secs_f64(secs));
    let wall = t0.elapsed().as_secs_f64().max(1e-3);
    let after = crate::counters::other_processes(own);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let mut used: Vec<(String, u32, f64)> = after
        .iter()
        .filter_map(|(pid, (comm, t))| {
            let dt = t.saturating_sub(before.get(pid).map_or(0, |(_, t0)| *t0));
            (dt > 0).then(|| (comm.clone(), *pid, 100.0 * dt as f64 / hz / wall))
        })
        .collect();
    let other_cpu_pct = used.iter().map(|u| u.2).sum();
    used.sort_by(|a, b| b.2.total_cmp(&a.2));
    used.truncate(3);
    StallStep { measured, other_cpu_pct, busiest: used }
}

/// Durations: `quick` (DARKBUF_CALIBRATE_QUICK=1) about 30 s in all, else about 1.5 min.
pub fn quick_from_env() -> bool {
    std::env::var("DARKBUF_CALIBRATE_QUICK").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The consumer matrix.
pub const NRULES: [u32; 3] = [0, 1000, 4000];
pub const APP_COST_NS: [u64; 2] = [0, 2000];

/// Whether the running kernel's veth stops its queue at a full ptr_ring (6.16's
/// dc82a33297fc); before it, `veth_xmit()` drops there and the calibration runs without.
fn veth_backpressure() -> bool {
    crate::KernelVersion::running() >= crate::caps::VETH_BACKPRESSURE_SINCE
}

fn scenario_text(label: &str, duration: &str, qdisc: &str, nrules: u32, app_ns: u64, flood: Option<&str>, ping: bool) -> String {
    let bp = veth_backpressure();
    let mut s = format!(
        "name = \"calibrate-{label}\"\nduration = \"{duration}\"\nwarmup = \"1s\"\nsample_interval = \"0s\"\n\n\
         [device]\ndriver = \"veth\"\ntx_queues = 1\nnapi = \"threaded\"\nbackpressure = {bp}\n\n\
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
    // Without veth backpressure (before 6.16) a consumer that cannot keep up shows as
    // ptr_ring drops (`veth_xmit()`), not as a qdisc backlog.
    let ring_drops = mean(r, "ring.drops");
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
        ring_drops,
        napi_polls_per_s: mean(r, "napi.polls").map(|p| p / secs),
        napi_avg_work: mean(r, "napi.avg_work"),
        napi_cpu_pct: mean(r, "napi.thread_cpu_pct"),
        rtt_p50_ms: mean(r, "ping.rtt_p50_ms"),
        consumer_cpu_pct: busy,
        other_cpu_pct: mean(r, "machine.other_cpu_pct"),
        consumer_bound: (backlog.unwrap_or(0.0) > 10.0 || drops.unwrap_or(0.0) > 0.0 || ring_drops.unwrap_or(0.0) > 0.0)
            && busy.unwrap_or(0.0) >= 90.0,
    }
}

/// `napi_poll_ns` from two runs of different packets per poll (the saturated nrules-0
/// run and the light one): the NAPI kthread's CPU time = polls x per-poll + packets x
/// per-packet, two equations in two unknowns.
fn fit_napi_poll_ns(c: &mut Costs, sat: &Point, light: &Point, fitted: &mut Vec<String>, notes: &mut Vec<String>) {
    let eq = |p: &Point| -> Option<(f64, f64, f64)> {
        Some((p.napi_cpu_pct? / 100.0 * 1e9, p.napi_polls_per_s?, p.consumer_pps?))
    };
    match (eq(sat), eq(light)) {
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

/// `send_ns`, `ping_reply_ns` and `tun_read_ns` from one run each: the max-rate send
/// run's time per packet, the idle round trip's residual over the other costs, and a
/// saturated tap reader's time per frame.
fn fit_from_rates(c: &mut Costs, send: &Point, idle: &Point, tap: &Point, fitted: &mut Vec<String>, notes: &mut Vec<String>) {
    // send_ns.
    match send.flood_pps {
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
    if let Some(rtt) = idle.rtt_p50_ms {
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
    match tap.consumer_pps {
        Some(pps) if pps > 0.0 => {
            c.tun_read_ns = round2(1e9 / pps);
            fitted.push("tun_read_ns".into());
            notes.push(format!("tun_read_ns: 1e9 / {pps:.0} frames/s of a tap reader with no application cost under a max-rate flood"));
        }
        _ => notes.push("tun_read_ns kept assumed: the tap reader's rate was not measured".into()),
    }
}

/// `hrtimer_ns` from the timer step's overshoots (sorted, ns): their median less
/// `wakeup_ns` (the model charges a sleeper's wakeup apart), at least 0.
fn fit_hrtimer_ns(c: &mut Costs, late: &[u64], fitted: &mut Vec<String>, notes: &mut Vec<String>) {
    match (darkbuf_measure::percentile(late, 50.0), darkbuf_measure::percentile(late, 90.0)) {
        (Some(p50), Some(p90)) => {
            c.hrtimer_ns = round2((p50 - c.wakeup_ns).max(0.0));
            fitted.push("hrtimer_ns".into());
            notes.push(format!(
                "hrtimer_ns: {} sleeps of 1 ms with timer slack 1 ns, each idle CPU in turn, overshot by {:.1} us (median; p90 {:.1} us), less wakeup_ns {:.0} ns",
                late.len(),
                p50 / 1e3,
                p90 / 1e3,
                c.wakeup_ns
            ));
        }
        _ => notes.push("hrtimer_ns kept assumed (0): the timer step measured nothing".into()),
    }
}

/// The calibration's runs of the kernel backend: the consumer matrix (`NRULES` x
/// `APP_COST_NS`, `runs` runs of `dur` each), then one run each of a max-rate send
/// into noqueue, a light flood, an idle ping and a tap reader.
fn run_steps(dur: &str, dur_s: f64, runs: u32, progress: &mut dyn FnMut(&str)) -> Result<(Vec<Point>, [Point; 4])> {
    let opts = RunOpts { rule_scope: RuleScope::All, netns_sysctls: Vec::new(), sender_tso: false, probe_trace: false };
    let mut points = Vec::new();
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
            let r = run(&label, text, runs, progress)?;
            points.push(point(&label, n, app, &r, dur_s));
        }
    }
    let send = run("send", scenario_text("send", dur, "kind = \"noqueue\"", 0, 0, Some("max"), false), 1, progress)?;
    let send_p = point("send", 0, 0, &send, dur_s);
    let light = run("light", scenario_text("light", dur, "kind = \"pfifo\"\nlimit = 1000", 0, 0, Some("20kpps"), true), 1, progress)?;
    let light_p = point("light", 0, 0, &light, dur_s);
    let idle = run("idle", scenario_text("idle", dur, "kind = \"pfifo\"\nlimit = 1000", 0, 0, None, true), 1, progress)?;
    let idle_p = point("idle", 0, 0, &idle, dur_s);
    // A tap read by a reader with no application cost: the reader's own per-frame cost.
    let tap_text = format!(
        "name = \"calibrate-tap\"\nduration = \"{dur}\"\nwarmup = \"1s\"\nsample_interval = \"0s\"\n\n\
         [device]\ndriver = \"tun\"\ntxqueuelen = 1000\nbackpressure = false\n\n[qdisc]\nkind = \"pfifo_fast\"\n\n\
         [consumer]\nkind = \"reader\"\napp_cost = \"0ns\"\n\n[[traffic]]\nkind = \"udp\"\nsize = 64\nrate = \"max\"\n"
    );
    let tap = run("tap", tap_text, 1, progress)?;
    let tap_p = point("tap", 0, 0, &tap, dur_s);
    Ok((points, [send_p, light_p, idle_p, tap_p]))
}

/// Measures the stalls, runs the matrix, fits, writes the profile to `out` and returns
/// what was done. `progress` gets a line per run. On a busy machine
/// ([`disturbed_steps`]) it stops with [`refusal`] (as soon as the stall step, which
/// runs first, sees the load), unless `force`: then the profile is written with the
/// disturbed steps in a warning at its top, and returned in
/// [`Calibration::disturbed`].
///
/// `predict` simulates a scenario with a profile (the TCP step's check,
/// [`crate::calibrate_tcp::Predict`]).
pub fn calibrate(out: &Path, quick: bool, force: bool, predict: Option<crate::calibrate_tcp::Predict>, mut progress: impl FnMut(&str)) -> Result<Calibration> {
    let (dur, dur_s, runs) = if quick { ("1s", 1.0, 1) } else { ("3s", 3.0, 2) };
    let base = Profile::load("seed-vm").map_err(|e| KernelError::Internal(e.to_string()))?;
    let mut notes = Vec::new();
    // The machine's stalls first: every CPU busy at once, nothing else of ours running.
    // A busy machine shows here, a few seconds in, rather than after the matrix.
    progress("calibrate: stalls (a busy loop on every CPU)");
    let stall = stall_step(if quick { 1.0 } else { 5.0 });
    let guest = std::env::var_os(crate::names::VM_GUEST_ENV).is_some();
    let early = disturbed_steps(Some(&stall), &[], guest);
    if !early.is_empty() && !force {
        return Err(KernelError::Unavailable(refusal(&early, &stall.busiest, out)));
    }
    // Timer lateness on idle CPUs, before the matrix leaves anything behind.
    progress("calibrate: timers (1 ms sleeps on each idle CPU)");
    let late = crate::timers::overshoots(crate::online_cpus(), if quick { 100 } else { 300 }, std::time::Duration::from_millis(1));
    let (points, [send_p, light_p, idle_p, tap_p]) = run_steps(dur, dur_s, runs, &mut progress)?;
    let tcp_rtt = crate::calibrate_tcp::measure(if quick { "1s" } else { "2s" }, if quick { 3 } else { 5 }, &mut progress);

    let disturbed = disturbed_steps(Some(&stall), &[&points[..], &[send_p.clone(), light_p.clone(), idle_p.clone(), tap_p.clone()]].concat(), guest);
    if !disturbed.is_empty() && !force {
        return Err(KernelError::Unavailable(refusal(&disturbed, &stall.busiest, out)));
    }
    let stalls = stall.measured.stalls.clone();
    // The kernel build's MAX_TCP_HEADER, from a loopback connection's first send buffer.
    let (max_tcp_header, header_how) = match crate::tcp_header::measure() {
        Ok(h) => (h, format!("max_tcp_header {h} measured (a loopback connection's first sk_sndbuf)")),
        Err(e) => {
            progress(&format!("calibrate: max_tcp_header not measured ({e}); seed-vm's {} kept", base.max_tcp_header));
            (base.max_tcp_header, format!("max_tcp_header assumed (seed-vm's): {e}"))
        }
    };
    // What a TCP skb's truesize carries beyond its payload, from a corked one-byte write.
    let (tcp_skb_overhead, overhead_how) = match crate::tcp_header::measure_skb_overhead() {
        Ok(o) => (o, format!("tcp_skb_overhead {o} measured (a corked one-byte write's sk_wmem_queued)")),
        Err(e) => {
            progress(&format!("calibrate: tcp_skb_overhead not measured ({e}); seed-vm's {} kept", base.tcp_skb_overhead));
            (base.tcp_skb_overhead, format!("tcp_skb_overhead assumed (seed-vm's): {e}"))
        }
    };

    let mut c = base.costs.clone();
    let mut fitted = Vec::new();

    // napi_poll_ns from the saturated nrules-0 run and the light run.
    if let Some(sat) = points.iter().find(|p| p.nrules == 0 && p.app_cost_ns == 0) {
        fit_napi_poll_ns(&mut c, sat, &light_p, &mut fitted, &mut notes);
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

    fit_from_rates(&mut c, &send_p, &idle_p, &tap_p, &mut fitted, &mut notes);
    fit_hrtimer_ns(&mut c, &late, &mut fitted, &mut notes);

    let all = [
        "send_ns", "ping_send_ns", "dequeue_ns", "xmit_ns", "softirq_ns", "napi_poll_ns", "consume_ns", "consumer_base_ns",
        "consumer_per_rule_ns", "wakeup_ns", "ping_reply_ns", "tun_read_ns", "vhost_batch_ns", "vhost_pkt_ns", "hrtimer_ns",
        // TCP's costs are not fitted (UDP floods; the TCP step is a check): kept from seed-vm.
        "tcp_copy_ns_per_kb", "tcp_xmit_ns", "tcp_ack_ns", "tcp_rcv_ns",
    ];
    let assumed: Vec<String> = all.iter().filter(|k| !fitted.iter().any(|f| f == *k)).map(|k| k.to_string()).collect();
    let profile = Profile {
        name: "calibrated".into(),
        description: format!(
            "{}Calibrated by darkbuf calibrate on kernel {} ({}): fitted {}; assumed (from seed-vm) {}; {header_how}; {overhead_how}",
            if disturbed.is_empty() { String::new() } else { format!("{DISTURBED_MARK}, see the warning in this file): ") },
            crate::uname_release(),
            crate::cpu_model(),
            fitted.join(", "),
            assumed.join(", ")
        ),
        noise: base.noise,
        stalls,
        max_tcp_header,
        tcp_skb_overhead,
        costs: c,
        fit: Some(darkbuf_measure::profile::Fit {
            source: format!(
                "darkbuf calibrate{} on kernel {}, {}: veth NAPI mode (threaded, GRO on / TSO off), pfifo 1000, 64-byte UDP flood, sndbuf 32 MiB, nft rules on every packet; consumer pps at app_cost 0",
                if quick { " (quick)" } else { "" },
                crate::uname_release(),
                crate::cpu_model()
            ),
            method: format!(
                "weighted least squares of 1e9/pps - (consume_ns + napi_poll_ns/64) = base + nrules * per_rule, weights 1/y^2 (darkbuf_measure::profile::fit_consumer), consumer-bound points only; {} run(s) of {dur} each",
                runs
            ),
            fitted: fitted.iter().filter(|f| f.starts_with("consumer_")).cloned().collect(),
            points: fit_pts,
        }),
        file: None,
    };
    // Last: the simulator runs the TCP step with the profile just fitted.
    crate::calibrate_tcp::check(&profile, tcp_rtt, predict, &mut notes);
    let mut text = render_profile(&profile, &points, &[send_p, light_p, idle_p, tap_p], &fitted, &assumed, &notes, overhead)?;
    if !disturbed.is_empty() {
        text = disturbed_warning(&disturbed) + &text;
    }
    std::fs::write(out, &text).map_err(|e| KernelError::Input(format!("cannot write {}: {e}", out.display())))?;
    // The simulator must accept what was written.
    let path = out.to_string_lossy();
    let path = if path.ends_with(".toml") || path.contains('/') { path.into_owned() } else { format!("./{path}") };
    Profile::load(&path).map_err(|e| KernelError::Internal(format!("the written profile does not load: {e}")))?;
    Ok(Calibration { points, fitted, assumed, notes, disturbed, profile_toml: text })
}

/// The warning a profile written on a busy machine (`--force`) starts with.
pub fn disturbed_warning(d: &[Disturbed]) -> String {
    let mut s = String::from("# WARNING: this profile was measured on a busy machine (written with --force); its costs and\n");
    s.push_str("# stalls describe the load as much as the machine. Disturbed steps:\n");
    for x in d {
        let _ = writeln!(s, "#   {}: {}", x.step, x.seen);
    }
    s.push_str("#\n");
    s
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
    let _ = writeln!(s, "# Measured on the kernel backend (consumer-bound = the pfifo held a backlog or dropped, or the veth ring dropped, and the consumer CPU was >= 90% busy):");
    let _ = writeln!(s, "# {:<14} {:>6} {:>8} {:>12} {:>10} {:>10} {:>8} {:>10} {:>10} {:>9} {:>8} {:>8} {:>8} {:>9} {:>8} {:>14}", "run", "nrules", "app_ns", "consumer_pps", "sink_pps", "flood_pps", "backlog", "drops", "ring_drops", "polls/s", "work", "napi%", "cons.cpu%", "rtt_p50", "other%", "consumer-bound");
    for pt in matrix.iter().chain(extra) {
        let _ = writeln!(
            s,
            "# {:<14} {:>6} {:>8} {:>12} {:>10} {:>10} {:>8} {:>10} {:>10} {:>9} {:>8} {:>8} {:>8} {:>9} {:>8} {:>14}",
            pt.label,
            pt.nrules,
            pt.app_cost_ns,
            opt(pt.consumer_pps, 0),
            opt(pt.sink_pps, 0),
            opt(pt.flood_pps, 0),
            opt(pt.backlog_avg_pkts, 0),
            opt(pt.qdisc_drops, 0),
            opt(pt.ring_drops, 0),
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
    let _ = writeln!(s, "tcp_skb_overhead = {}   # a TCP skb's truesize beyond its payload (the description says whether measured)", p.tcp_skb_overhead);
    let _ = writeln!(s, "\n[costs]");
    // Every cost, fitted or kept (serde's order, the struct's): a cost the file leaves
    // out would load as the simulator's default, not as what was measured (tun_read_ns
    // was left out until 2026-12-03).
    s.push_str(&toml::to_string(c).map_err(|e| KernelError::Internal(format!("the profile's costs as TOML: {e}")))?);
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
    let _ = writeln!(s, "wrote {}{}", out.display(), if c.disturbed.is_empty() { "" } else { " (DISTURBED: measured on a busy machine, --force)" });
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
            // The running kernel's veth, so that preflight accepts it (6.1 has no ring stop).
            assert_eq!(scn.device.backpressure, veth_backpressure(), "{t}");
        }
    }

    fn step(label: &str, other: Option<f64>) -> Point {
        Point {
            label: label.into(), nrules: 0, app_cost_ns: 0, consumer_pps: Some(1e5), sink_pps: None, flood_pps: None,
            backlog_avg_pkts: None, qdisc_drops: None, ring_drops: None, napi_polls_per_s: None, napi_avg_work: None, napi_cpu_pct: None,
            rtt_p50_ms: None, consumer_cpu_pct: None, other_cpu_pct: other, consumer_bound: true,
        }
    }

    fn stall_step(stolen_pct: f64, other_cpu_pct: f64, stalls: Vec<darkbuf_measure::profile::Stall>) -> StallStep {
        StallStep { measured: crate::stalls::Measured { stalls, stolen_pct }, other_cpu_pct, busiest: vec![("rustc".into(), 16563, 99.6)] }
    }

    /// The development VM, quiet: stalls of 1.5 % (seed-vm-stalls.toml), 0-1 % other CPU.
    #[test]
    fn a_quiet_machine_is_not_disturbed() {
        let quiet = stall_step(1.5, 0.8, vec![darkbuf_measure::profile::Stall { per_s: 14.4, min_us: 100.1, max_us: 199.9 }]);
        let pts = [step("n0-app0", Some(0.0)), step("n1000-app0", Some(10.0)), step("idle", None)];
        assert_eq!(disturbed_steps(Some(&quiet), &pts, false), vec![]);
    }

    /// What the busy machine showed: other processes at 100-199 % in every step,
    /// stalls of 10-44 ms at 18-21 per second.
    #[test]
    fn a_busy_machine_names_every_disturbed_step_and_what_was_seen() {
        use darkbuf_measure::profile::Stall;
        let busy = stall_step(
            41.26,
            99.6,
            vec![Stall { per_s: 18.0, min_us: 10_012.0, max_us: 19_870.0 }, Stall { per_s: 3.0, min_us: 20_100.0, max_us: 44_010.0 }],
        );
        let pts = [step("n0-app0", Some(100.4)), step("n1000-app0", Some(3.0)), step("send", Some(199.0)), step("tap", None)];
        let d = disturbed_steps(Some(&busy), &pts, false);
        assert_eq!(
            d,
            vec![
                Disturbed {
                    step: "stalls".into(),
                    seen: "a busy loop on every CPU lost 41.3% of the CPUs' time (bound 5%) in stalls: 21.0 per second per CPU, 10.0 to 44.0 ms; other processes used 100% of a CPU (bound 10%)".into()
                },
                Disturbed { step: "n0-app0".into(), seen: "other processes used 100% of a CPU (bound 10%)".into() },
                Disturbed { step: "send".into(), seen: "other processes used 199% of a CPU (bound 10%)".into() },
            ]
        );
        let msg = refusal(&d, &busy.busiest, Path::new("my-machine.toml"));
        assert!(msg.contains("my-machine.toml not written"), "{msg}");
        assert!(msg.contains("\n  n0-app0: other processes used 100% of a CPU"), "{msg}");
        assert!(msg.ends_with("Stop the load (busiest when measured: rustc (pid 16563) 100%) and calibrate again, or pass --force to write the profile anyway, marked as disturbed."), "{msg}");
        let w = disturbed_warning(&d);
        assert!(w.starts_with("# WARNING: this profile was measured on a busy machine"), "{w}");
        assert!(w.lines().all(|l| l.starts_with('#')), "{w}");
    }

    /// Stalls alone (a hypervisor taking the CPUs, nothing else running) disturb too;
    /// the bounds themselves are not disturbed.
    #[test]
    fn stalls_alone_disturb_and_the_bounds_are_inclusive() {
        let stolen = stall_step(12.0, 0.0, vec![darkbuf_measure::profile::Stall { per_s: 40.0, min_us: 2_000.0, max_us: 4_000.0 }]);
        let d = disturbed_steps(Some(&stolen), &[], false);
        assert_eq!(d.len(), 1);
        assert!(d[0].seen.starts_with("a busy loop on every CPU lost 12.0%"), "{:?}", d);
        assert!(!d[0].seen.contains("other processes"), "{:?}", d);
        let at_bounds = stall_step(STOLEN_MAX_PCT, OTHER_CPU_MAX_PCT, vec![]);
        assert_eq!(disturbed_steps(Some(&at_bounds), &[step("x", Some(OTHER_CPU_MAX_PCT))], false), vec![]);
    }

    /// In a VM guest the stalls are the VM's (a TCG guest lost 11.4% in 200 gaps per
    /// second, 2026-12-03), so they do not disturb; other processes in the guest still do.
    #[test]
    fn a_guests_stalls_are_its_machine_but_its_other_processes_disturb() {
        let tcg = stall_step(11.4, 0.0, vec![darkbuf_measure::profile::Stall { per_s: 119.0, min_us: 201.0, max_us: 496.9 }]);
        assert_eq!(disturbed_steps(Some(&tcg), &[], true), vec![]);
        assert_eq!(disturbed_steps(Some(&tcg), &[], false).len(), 1);
        let busy = stall_step(11.4, 50.0, vec![]);
        let d = disturbed_steps(Some(&busy), &[step("send", Some(30.0))], true);
        assert_eq!(d.iter().map(|x| x.step.as_str()).collect::<Vec<_>>(), ["stalls", "send"]);
        assert!(!d[0].seen.contains("busy loop"), "{d:?}");
    }

    /// hrtimer_ns is the sleeps' median overshoot less wakeup_ns, never below 0; with no
    /// sleeps it stays as it was and a note says why.
    #[test]
    fn hrtimer_ns_is_the_median_overshoot_less_the_wakeup() {
        let mut c = Profile::load("seed-vm").unwrap().costs;
        assert_eq!(c.wakeup_ns, 4000.0);
        let (mut fitted, mut notes) = (Vec::new(), Vec::new());
        fit_hrtimer_ns(&mut c, &[150_000, 200_000, 210_000, 230_000, 900_000], &mut fitted, &mut notes);
        assert_eq!(c.hrtimer_ns, 206_000.0);
        assert_eq!(fitted, ["hrtimer_ns"]);
        assert!(notes[0].contains("5 sleeps") && notes[0].contains("210.0 us (median; p90 900.0 us)"), "{}", notes[0]);
        fit_hrtimer_ns(&mut c, &[1_000, 2_000, 3_000], &mut fitted, &mut notes);
        assert_eq!(c.hrtimer_ns, 0.0);
        let mut c = Profile::load("seed-vm").unwrap().costs;
        let mut notes = Vec::new();
        fit_hrtimer_ns(&mut c, &[], &mut Vec::new(), &mut notes);
        assert_eq!(c.hrtimer_ns, 0.0);
        assert!(notes[0].contains("kept assumed"), "{}", notes[0]);
    }

    #[test]
    fn written_profile_round_trips() {
        let mut p = Profile::load("seed-vm").unwrap();
        p.name = "calibrated".into();
        // Costs away from their defaults, fitted or not: every one must be written.
        p.costs.tun_read_ns = 8982.5;
        p.costs.hrtimer_ns = 151234.0;
        p.costs.tcp_recv_copy_ns_per_kb = Some(55.5);
        p.costs.nic_irq_ns = 1234.0;
        // Two classes of stalls, as the busy loop reports them.
        p.stalls = vec![
            darkbuf_measure::profile::Stall { per_s: 14.4, min_us: 100.1, max_us: 199.9 },
            darkbuf_measure::profile::Stall { per_s: 0.025, min_us: 30312.7, max_us: 30312.7 },
        ];
        let pts = vec![Point {
            label: "n0-app0".into(), nrules: 0, app_cost_ns: 0, consumer_pps: Some(1e5), sink_pps: None, flood_pps: None,
            backlog_avg_pkts: Some(900.0), qdisc_drops: Some(1.0), ring_drops: Some(0.0), napi_polls_per_s: None, napi_avg_work: None,
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
