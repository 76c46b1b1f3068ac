//! `[[traffic]] kind = "web"` on the kernel backend: the seeded schedule, starting each
//! entry's receiver and sender pool ([`crate::load::web`]), and the `web.*` metrics in
//! the simulator's names, through the same report (`darkbuf_measure::fct::web_metrics`)
//! and the same ideal FCT (`darkbuf_scenario::web::IdealPath`).
//!
//! Over the nominal measured window `[t0 + warmup, t0 + warmup + duration)` (`t0`: the
//! load's start, the schedule's time 0), as the simulator counts:
//! - `web.flows_started`, `web.offered_mbps`: the schedule's connections due in the
//!   window and their sizes (the draw's, so the same count the simulator starts);
//! - `web.flows_completed` and the FCT percentiles: of those, the ones whose last byte
//!   the receiver read by the window's end; FCT from the sender's `connect()` to that
//!   read; `web.flows_open` the rest;
//! - `web.open_peak`: the most connections open at once from the run's start to the
//!   window's end (each from its `connect()`, or its due time while it waited for a
//!   thread, to its last byte read);
//! - `web.slowdown_*`: FCT over [`IdealPath::ideal_ns`], null where the path has no
//!   line rate (veth, tun: every kernel-backend path), as on the simulator;
//! - `web.slots`: null: the simulator's reusable socket slots have no kernel
//!   counterpart (each connection is a new socket).
//!
//! The generator's limit: [`WEB_POOL_THREADS`] threads per entry, one connection each.
//! Connections opened more than [`WEB_LATE_NS`] after their due time are counted in a
//! note; when as many connections were waiting for a thread as the pool has threads, or
//! a connection due in the window was never opened, the run is refused (exit 3) naming
//! the limit: its FCTs would describe the generator, not the path.

use crate::error::{KernelError, Result};
use crate::load::web::{self as lw, WebConn, WebRead, WebSenderStats, WebTx, WEB_MAX_ARRIVALS, WEB_POOL_THREADS};
use crate::tcp::Endpoints;
use darkbuf_measure::fct::{Fct, FctCounts};
use darkbuf_scenario::web::{Arrivals, IdealPath, WebFlows, NO_IDEAL};
use darkbuf_scenario::{Direction, Scenario, Traffic};
use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A connection opened later than this after its due time is late (the pool was busy,
/// or the thread woke late).
pub const WEB_LATE_NS: u64 = 1_000_000;

/// The scenario's web entries with their `[[traffic]]` index.
pub fn entries(scn: &Scenario) -> Vec<(usize, &WebFlows)> {
    scn.traffic.iter().enumerate().filter_map(|(i, t)| if let Traffic::Web(w) = t { Some((i, w)) } else { None }).collect()
}

/// Entry `i`'s connections in run `seed`: (due ns from the run's start, size), the
/// simulator's draw, up to the run's end. More than [`WEB_MAX_ARRIVALS`] is exit 3.
pub fn schedule(scn: &Scenario, i: usize, w: &WebFlows, seed: u64) -> Result<Vec<(u64, u64)>> {
    let end = scn.warmup_ns + scn.duration_ns;
    let s: Vec<(u64, u64)> = Arrivals::new(w, i as u16, seed).until(end).take(WEB_MAX_ARRIVALS + 1).collect();
    if s.len() > WEB_MAX_ARRIVALS {
        return Err(KernelError::Unavailable(format!(
            "traffic.{i}: more than {WEB_MAX_ARRIVALS} web connections in one run, the kernel generator's bound (WEB_MAX_ARRIVALS); lower `arrivals` or the duration, or run it on the simulator"
        )));
    }
    Ok(s)
}

/// One started entry.
pub struct Running {
    pub index: usize,
    pub schedule: Arc<Vec<(u64, u64)>>,
    pub tx: WebTx,
    pub rx: JoinHandle<io::Result<Vec<WebRead>>>,
}

/// Starts every entry's receiver (listening) and sender pool (waiting for the run's
/// start, [`set_t0`]). `bound`: how long the tools may live.
pub fn start(scn: &Scenario, ep: &Endpoints, seed: u64, bound: Duration, stop: &Arc<AtomicBool>) -> Result<Vec<Running>> {
    let mut out = Vec::new();
    for (i, w) in entries(scn) {
        let schedule = Arc::new(schedule(scn, i, w, seed)?);
        let f = &w.tcp;
        let ((tx_ns, dst), (rx_ns, bind)) = match f.direction {
            Direction::Up => ((&ep.tx_ns, ep.rx_addr), (&ep.rx_ns, ep.rx_addr)),
            Direction::Down => ((&ep.rx_ns, ep.tx_addr), (&ep.tx_ns, ep.tx_addr)),
        };
        let cc = crate::tcp::cc_name(f.cc).to_string();
        let rx = lw::WebRxSpec { netns: rx_ns.clone(), bind, cc: cc.clone(), max_conns: schedule.len(), duration: bound + Duration::from_secs(1) };
        let (port, rh) = lw::spawn_web_receiver(rx, Some(ep.rx_cpu), stop.clone());
        let Some(port) = port else {
            let e = rh.join().ok().and_then(|r| r.err()).map_or("unknown error".into(), |e| e.to_string());
            return Err(KernelError::Internal(format!("starting the web receiver of traffic.{i}: {e}")));
        };
        let spec = lw::WebTxSpec {
            netns: tx_ns.clone(),
            dst,
            port,
            cc,
            tos: f.dscp << 2,
            so_sndbuf: f.so_sndbuf.map(|v| v as u32),
            schedule: schedule.clone(),
            threads: schedule.len().clamp(1, WEB_POOL_THREADS),
            deadline_ns: crate::load::mono_ns() + bound.as_nanos() as u64,
        };
        let tx = lw::spawn_web_senders(spec, Some(f.cpu as usize), stop.clone()).map_err(|e| KernelError::Internal(format!("starting the web senders of traffic.{i}: {e}")))?;
        out.push(Running { index: i, schedule, tx, rx: rh });
    }
    Ok(out)
}

/// The run's start (CLOCK_MONOTONIC ns): the pools' time 0.
pub fn set_t0(running: &[Running], t0: u64) {
    for r in running {
        r.tx.t0.store(t0, Ordering::Release);
    }
}

/// One entry once joined (None: that side failed; the reason is in the errors).
pub struct JoinedEntry {
    pub index: usize,
    pub schedule: Arc<Vec<(u64, u64)>>,
    pub tx: Option<WebSenderStats>,
    pub rx: Option<Vec<WebRead>>,
}

/// Joins every entry (after `stop`), each thread waited for until `deadline`.
pub fn join(running: Vec<Running>, deadline: Instant, errors: &mut Vec<String>) -> Vec<JoinedEntry> {
    let mut out = Vec::new();
    for r in running {
        let all_done = |hs: &[JoinHandle<io::Result<Vec<WebConn>>>]| hs.iter().all(|h| h.is_finished());
        while !all_done(&r.tx.threads) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let tx = if all_done(&r.tx.threads) {
            r.tx.join().map_err(|e| errors.push(format!("web senders of traffic.{}: {e}", r.index))).ok()
        } else {
            errors.push(format!("the web senders of traffic.{} did not stop in time", r.index));
            None
        };
        while !r.rx.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let rx = match r.rx.is_finished().then(|| r.rx.join()) {
            Some(Ok(Ok(v))) => Some(v),
            Some(Ok(Err(e))) => {
                errors.push(format!("web receiver of traffic.{}: {e}", r.index));
                None
            }
            Some(Err(_)) => {
                errors.push(format!("the web receiver of traffic.{} panicked", r.index));
                None
            }
            None => {
                errors.push(format!("the web receiver of traffic.{} did not stop in time", r.index));
                None
            }
        };
        out.push(JoinedEntry { index: r.index, schedule: r.schedule, tx, rx });
    }
    out
}

/// What one entry gave over the window `[w0, w1)` (CLOCK_MONOTONIC ns).
#[derive(Debug, Default)]
pub struct EntryFigures {
    pub counts: FctCounts,
    pub flows: Vec<Fct>,
    /// Connections due in the window opened more than [`WEB_LATE_NS`] late, and the
    /// largest lag, ns.
    pub late: u64,
    pub lag_max_ns: u64,
    /// Connections due in the window that no thread opened.
    pub never_opened: u64,
    /// Connections that failed (connect or write errors), with the first error.
    pub failed: u64,
    pub first_error: Option<String>,
}

/// The figures of one entry: `t0` the schedule's time 0, `[w0, w1)` the window, all
/// CLOCK_MONOTONIC ns.
pub fn entry_figures(schedule: &[(u64, u64)], tx: &WebSenderStats, rx: &[WebRead], ideal: &IdealPath, t0: u64, w0: u64, w1: u64) -> EntryFigures {
    let mut f = EntryFigures::default();
    let reads = lw::match_reads(&tx.conns, rx);
    let mut by_index: Vec<Option<(&WebConn, Option<&WebRead>)>> = vec![None; schedule.len()];
    for (c, r) in tx.conns.iter().zip(reads) {
        if let Some(slot) = by_index.get_mut(c.index) {
            *slot = Some((c, r));
        }
    }
    // (time, +1 open / -1 closed) for the open peak.
    let mut edges: Vec<(u64, i64)> = Vec::new();
    for (k, &(due_rel, size)) in schedule.iter().enumerate() {
        let due = t0 + due_rel;
        if due >= w1 {
            break;
        }
        let in_window = due >= w0;
        let conn = by_index[k];
        let done_at = conn.and_then(|(c, r)| r.filter(|r| r.bytes >= c.size && r.t_last_ns <= w1).map(|r| r.t_last_ns));
        let opened = conn.map_or(due, |(c, _)| c.t_connect_ns);
        edges.push((opened.min(w1), 1));
        edges.push((done_at.unwrap_or(w1), -1));
        if let Some((c, _)) = conn {
            if c.error.is_some() {
                f.failed += 1;
                f.first_error.get_or_insert_with(|| c.error.clone().unwrap_or_default());
            }
        }
        if !in_window {
            continue;
        }
        f.counts.started += 1;
        f.counts.started_bytes += size;
        match conn {
            None => f.never_opened += 1,
            Some((c, _)) => {
                let lag = c.t_connect_ns.saturating_sub(c.due_ns);
                f.lag_max_ns = f.lag_max_ns.max(lag);
                f.late += (lag > WEB_LATE_NS) as u64;
            }
        }
        match (conn, done_at) {
            (Some((c, _)), Some(t)) => f.flows.push(Fct { size, fct_ns: t - c.t_connect_ns, ideal_ns: ideal.ideal_ns(size) }),
            _ => f.counts.open += 1,
        }
    }
    // Closings before openings at the same instant.
    edges.sort_unstable();
    let mut open = 0i64;
    for (_, d) in edges {
        open += d;
        f.counts.open_peak = f.counts.open_peak.max(open.max(0) as u64);
    }
    f
}

/// The `web.*` metrics of every entry (pooled, the first entry's buckets, as the
/// simulator reports them) into `m` and `why`; notes on late or failed connections.
/// Err (exit 3) when the pool could not keep the arrival rate at all.
pub fn metrics(
    scn: &Scenario,
    joined: &[JoinedEntry],
    t0: u64,
    m: &mut BTreeMap<String, Option<f64>>,
    why: &mut BTreeMap<String, String>,
    notes: &mut Vec<String>,
) -> Result<()> {
    let webs = entries(scn);
    let Some((_, first)) = webs.first() else { return Ok(()) };
    let (w0, w1) = (t0 + scn.warmup_ns, t0 + scn.warmup_ns + scn.duration_ns);
    let mut counts = FctCounts::default();
    let mut flows = Vec::new();
    let mut failed_sides = Vec::new();
    for j in joined {
        let (Some(tx), Some(rx)) = (&j.tx, &j.rx) else {
            failed_sides.push(format!("traffic.{}", j.index));
            continue;
        };
        let Traffic::Web(w) = &scn.traffic[j.index] else { continue };
        let mtu = scn.device.mtu();
        let f = entry_figures(&j.schedule, tx, rx, &IdealPath::of(scn, w, mtu), t0, w0, w1);
        entry_notes(j.index, &f, tx, notes)?;
        counts.started += f.counts.started;
        counts.started_bytes += f.counts.started_bytes;
        counts.open += f.counts.open;
        counts.open_peak += f.counts.open_peak;
        flows.extend(f.flows);
    }
    let mut out = darkbuf_measure::Out::default();
    if failed_sides.is_empty() {
        darkbuf_measure::fct::web_metrics(&mut out, &counts, &flows, &first.size_buckets, scn.duration_ns, NO_IDEAL);
    } else {
        // Same names, all null.
        darkbuf_measure::fct::web_metrics(&mut out, &FctCounts::default(), &[], &first.size_buckets, scn.duration_ns, NO_IDEAL);
        let r = format!("the web senders or receiver of {} failed (see the run's notes)", failed_sides.join(", "));
        for k in out.m.keys().cloned().collect::<Vec<_>>() {
            out.none(&k, &r);
        }
    }
    out.none("web.slots", "the simulator's reusable socket slots have no kernel counterpart: each kernel connection is a new socket (the generator holds at most WEB_POOL_THREADS = 256 per entry open)");
    for (k, v) in out.m {
        m.insert(k, v);
    }
    why.extend(out.why);
    Ok(())
}

/// Notes on one entry's late and failed connections; Err (exit 3) when the pool could
/// not keep up at all.
fn entry_notes(i: usize, f: &EntryFigures, tx: &WebSenderStats, notes: &mut Vec<String>) -> Result<()> {
    if tx.backlog_max >= WEB_POOL_THREADS as u64 || f.never_opened > 0 {
        return Err(KernelError::Unavailable(format!(
            "traffic.{i}: the kernel's web generator could not open connections at the requested rate: up to {} connections waited for one of its {WEB_POOL_THREADS} sender threads (WEB_POOL_THREADS, one open connection each) and {} due in the window were never opened; lower `arrivals` or the sizes, or run it on the simulator",
            tx.backlog_max, f.never_opened
        )));
    }
    if f.late > 0 {
        notes.push(format!(
            "web: traffic.{i}: {} of the {} connections due in the window opened more than {} ms after their arrival time (at most {:.1} ms late; up to {} waited for a free thread of the {WEB_POOL_THREADS}): their FCTs start at their actual connect()",
            f.late,
            f.counts.started,
            WEB_LATE_NS / 1_000_000,
            f.lag_max_ns as f64 / 1e6,
            tx.backlog_max
        ));
    }
    if f.failed > 0 {
        notes.push(format!("web: traffic.{i}: {} connections failed or were cut at the run's end; the first: {}", f.failed, f.first_error.as_deref().unwrap_or("?")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(index: usize, due_ns: u64, t_connect_ns: u64, local_port: u16, size: u64) -> WebConn {
        WebConn { index, due_ns, t_connect_ns, local_port, size, written: size, error: None }
    }

    fn read(peer_port: u16, t_accept_ns: u64, bytes: u64, t_last_ns: u64) -> WebRead {
        WebRead { peer_port, t_accept_ns, bytes, t_last_ns, ended: true }
    }

    /// Four connections around a window [1000, 2000) with t0 = 0: one in the warmup
    /// (run, not counted), two in the window (one completed, one read after the end:
    /// open), one due after the window (not drawn into the figures). Exact counts, FCT,
    /// lag and the open peak.
    #[test]
    fn window_counts_and_fcts() {
        let schedule = [(500, 10), (1100, 20), (1500, 30), (2500, 40)];
        let tx = WebSenderStats {
            conns: vec![conn(0, 500, 500, 1, 10), conn(1, 1100, 1100 + 2_000_000, 2, 20), conn(2, 1500, 1500, 3, 30)],
            backlog_max: 0,
        };
        let rx = [read(1, 510, 10, 1600), read(2, 1100 + 2_000_010, 20, 1900 + 2_000_000), read(3, 1510, 30, 1700)];
        let ideal = IdealPath { one_way_ns: 0, fwd_delay_ns: 0, rate_bps: None, buckets: Vec::new(), mss: 1448, frame_extra: 90 };
        // conn 1 completes at 2,001,900: past the window's end, so open.
        let f = entry_figures(&schedule, &tx, &rx, &ideal, 0, 1000, 2000);
        assert_eq!((f.counts.started, f.counts.started_bytes, f.counts.open), (2, 50, 1));
        assert_eq!(f.flows, vec![Fct { size: 30, fct_ns: 200, ideal_ns: None }]);
        assert_eq!((f.late, f.lag_max_ns, f.never_opened), (1, 2_000_000, 0));
        // Open at once: conn 0 (500..1600) and conn 2 (1500..1700); conn 1 opens at
        // 2,001,100, after the window's end, cut at it.
        assert_eq!(f.counts.open_peak, 2);
    }

    /// A connection due in the window that no thread took is open and never opened.
    #[test]
    fn an_arrival_never_taken_is_open() {
        let schedule = [(1100, 20)];
        let tx = WebSenderStats::default();
        let ideal = IdealPath { one_way_ns: 0, fwd_delay_ns: 0, rate_bps: Some(100_000_000), buckets: Vec::new(), mss: 1448, frame_extra: 90 };
        let f = entry_figures(&schedule, &tx, &[], &ideal, 0, 1000, 2000);
        assert_eq!((f.counts.started, f.counts.open, f.never_opened, f.counts.open_peak), (1, 1, 1, 1));
        let mut notes = Vec::new();
        let e = entry_notes(3, &f, &tx, &mut notes).unwrap_err();
        assert_eq!(e.code(), 3);
        assert!(e.message().contains("WEB_POOL_THREADS"), "{}", e.message());
    }
}
