//! irtt(1)'s statistics from per-request records: round trips, one-way delays, IPDV
//! and loss per leg, and the `irtt.*` metrics over them. The simulator fills the
//! records from its packets' true times; the kernel backend from `irtt client`'s and
//! `irtt server`'s output. Both report them through [`irtt_report`] and
//! [`irtt_rtt_series`], so every figure is defined once.

use crate::percentile;
use darkbuf_report::TimeSeries;
use std::collections::BTreeMap;

/// Where a request ended up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fate {
    /// Sent, not yet received or dropped.
    #[default]
    InFlight,
    /// Dropped on the way to the server.
    LostUp,
    /// Dropped on the way back (the server received it: `t_server` is set).
    LostDown,
    /// Echoed and received by the client.
    Received,
}

/// One request's times (ns, in one clock: the simulator's since the run's start, the
/// kernel backend's `CLOCK_MONOTONIC`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IrttRec {
    pub t_send: u64,
    pub t_server: u64,
    pub t_recv: u64,
    pub fate: Fate,
}

/// What irtt reports for the requests sent in a window, from their records.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IrttSummary {
    /// Round trips, and one-way delays up and down, of the received requests (ns).
    pub rtt: Vec<u64>,
    pub up: Vec<u64>,
    pub down: Vec<u64>,
    /// IPDV as irtt computes it: for each pair of consecutive sequence numbers both
    /// received, the absolute difference of their delays (round trip, up, down), ns.
    pub ipdv_rtt: Vec<u64>,
    pub ipdv_up: Vec<u64>,
    pub ipdv_down: Vec<u64>,
    /// Requests with a known fate, and those lost on each leg.
    pub fated: u64,
    pub lost_up: u64,
    pub lost_down: u64,
}

impl IrttSummary {
    /// The requests sent in `start..=end` (still in flight at the end: fate unknown,
    /// not counted).
    pub fn of(recs: &[IrttRec], start: u64, end: u64) -> IrttSummary {
        let mut s = IrttSummary::default();
        let delays = |r: &IrttRec| (r.t_recv - r.t_send, r.t_server - r.t_send, r.t_recv - r.t_server);
        let mut prev: Option<(u64, u64, u64)> = None;
        for r in recs {
            let in_window = r.t_send >= start && r.t_send <= end;
            let d = (r.fate == Fate::Received).then(|| delays(r));
            if in_window {
                match (r.fate, d) {
                    (Fate::LostUp, _) => s.lost_up += 1,
                    (Fate::LostDown, _) => s.lost_down += 1,
                    (Fate::Received, Some((rtt, up, down))) => {
                        s.rtt.push(rtt);
                        s.up.push(up);
                        s.down.push(down);
                        if let Some((pr, pu, pd)) = prev {
                            s.ipdv_rtt.push(rtt.abs_diff(pr));
                            s.ipdv_up.push(up.abs_diff(pu));
                            s.ipdv_down.push(down.abs_diff(pd));
                        }
                    }
                    _ => {}
                }
                s.fated += (r.fate != Fate::InFlight) as u64;
            }
            prev = if in_window { d } else { None };
        }
        s
    }

    /// Upstream loss: of the requests with a known fate, those lost on the way out (%).
    pub fn loss_up_pct(&self) -> Option<f64> {
        (self.fated > 0).then(|| 100.0 * self.lost_up as f64 / self.fated as f64)
    }

    /// Downstream loss: of the requests the server received, the replies lost (%).
    pub fn loss_down_pct(&self) -> Option<f64> {
        let reached = self.fated - self.lost_up;
        (reached > 0).then(|| 100.0 * self.lost_down as f64 / reached as f64)
    }

    /// Merges another prober's summary (the `irtt.*` totals over every prober).
    pub fn extend(&mut self, o: &IrttSummary) {
        for (a, b) in [
            (&mut self.rtt, &o.rtt),
            (&mut self.up, &o.up),
            (&mut self.down, &o.down),
            (&mut self.ipdv_rtt, &o.ipdv_rtt),
            (&mut self.ipdv_up, &o.ipdv_up),
            (&mut self.ipdv_down, &o.ipdv_down),
        ] {
            a.extend_from_slice(b);
        }
        self.fated += o.fated;
        self.lost_up += o.lost_up;
        self.lost_down += o.lost_down;
    }
}

use crate::Out;

/// The `irtt.N.*` metrics of each prober's request records (one slice per prober, in
/// scenario order), then `irtt.*` over all of them (with the percentiles and IPDV),
/// over the requests sent in `start..=end` (the records' times and the window in one
/// clock), with the reason of each `null`. Nothing without a prober.
pub fn irtt_report<'a>(
    probers: impl Iterator<Item = &'a [IrttRec]>,
    start: u64,
    end: u64,
) -> (BTreeMap<String, Option<f64>>, BTreeMap<String, String>) {
    let mut out = Out::default();
    let mut all = IrttSummary::default();
    let mut any = false;
    for (n, recs) in probers.enumerate() {
        let s = IrttSummary::of(recs, start, end);
        irtt_set(&mut out, &format!("irtt.{n}."), &s, false);
        all.extend(&s);
        any = true;
    }
    if any {
        irtt_set(&mut out, "irtt.", &all, true);
    }
    (out.m, out.why)
}

/// One irtt prober's `irtt.N.rtt_ms`: a point per request sent in `start..=end` whose
/// fate is known, at its send time (ms from `start`), `null` when it was lost.
pub fn irtt_rtt_series(recs: &[IrttRec], start: u64, end: u64) -> TimeSeries {
    let (t_ms, values) = recs
        .iter()
        .filter(|r| (start..=end).contains(&r.t_send) && r.fate != Fate::InFlight)
        .map(|r| ((r.t_send - start) as f64 / 1e6, (r.fate == Fate::Received).then(|| (r.t_recv - r.t_send) as f64 / 1e6)))
        .unzip();
    TimeSeries { unit: "ms".into(), t_ms, values }
}

/// `PREFIX*` metrics of an irtt summary (`full`: with the percentiles and IPDV).
fn irtt_set(out: &mut Out, prefix: &str, s: &IrttSummary, full: bool) {
    let ms = |v: f64| v / 1e6;
    let mean = |v: &[u64]| v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
    let k = |name: &str| format!("{prefix}{name}");
    let none_why = "no irtt reply was received in the measured window";
    if s.rtt.is_empty() {
        for name in ["rtt_avg_ms", "owd_up_avg_ms", "owd_down_avg_ms"] {
            out.none(&k(name), none_why);
        }
    } else {
        out.set(&k("rtt_avg_ms"), ms(mean(&s.rtt)));
        out.set(&k("owd_up_avg_ms"), ms(mean(&s.up)));
        out.set(&k("owd_down_avg_ms"), ms(mean(&s.down)));
        if full {
            let mut sorted = s.rtt.clone();
            sorted.sort_unstable();
            for (name, p) in [("rtt_min_ms", 0.0), ("rtt_p50_ms", 50.0), ("rtt_p99_ms", 99.0), ("rtt_max_ms", 100.0)] {
                if let Some(v) = percentile(&sorted, p) {
                    out.set(&k(name), ms(v));
                }
            }
        }
    }
    if full {
        for (name, v) in [("ipdv_avg_ms", &s.ipdv_rtt), ("ipdv_up_avg_ms", &s.ipdv_up), ("ipdv_down_avg_ms", &s.ipdv_down)] {
            match v.is_empty() {
                true => out.none(&k(name), "no two consecutive irtt requests were both answered in the measured window"),
                false => out.set(&k(name), ms(mean(v))),
            }
        }
        out.set(&k("packets"), s.fated as f64);
    }
    let why = "no irtt request's fate is known in the measured window";
    for (name, v) in [("loss_up_pct", s.loss_up_pct()), ("loss_down_pct", s.loss_down_pct())] {
        match v {
            Some(v) => out.set(&k(name), v),
            None => out.none(&k(name), why),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rx(t_send: u64, up: u64, down: u64) -> IrttRec {
        IrttRec { t_send, t_server: t_send + up, t_recv: t_send + up + down, fate: Fate::Received }
    }

    fn records() -> [IrttRec; 8] {
        [
            rx(0, 5, 9), // before the window
            rx(100, 10, 20),
            rx(200, 14, 20),
            IrttRec { t_send: 300, fate: Fate::LostUp, ..IrttRec::default() },
            rx(400, 10, 30),
            rx(500, 12, 25),
            IrttRec { t_send: 600, t_server: 610, fate: Fate::LostDown, ..IrttRec::default() },
            IrttRec { t_send: 700, ..IrttRec::default() }, // still in flight
        ]
    }

    #[test]
    fn delays_ipdv_and_loss_per_leg() {
        let s = IrttSummary::of(&records(), 100, 1000);
        assert_eq!(s.rtt, [30, 34, 40, 37]);
        assert_eq!(s.up, [10, 14, 10, 12]);
        assert_eq!(s.down, [20, 20, 30, 25]);
        // Pairs (100, 200) and (400, 500): 300 was lost, and 0 is outside the window.
        assert_eq!(s.ipdv_rtt, [4, 3]);
        assert_eq!(s.ipdv_up, [4, 2]);
        assert_eq!(s.ipdv_down, [0, 5]);
        assert_eq!((s.fated, s.lost_up, s.lost_down), (6, 1, 1));
        assert_eq!(s.loss_up_pct(), Some(100.0 / 6.0));
        assert_eq!(s.loss_down_pct(), Some(20.0));
    }

    #[test]
    fn no_known_fate_no_loss() {
        let s = IrttSummary::of(&[IrttRec { t_send: 5, ..IrttRec::default() }], 0, 10);
        assert_eq!((s.loss_up_pct(), s.loss_down_pct()), (None, None));
    }

    /// Per prober and over all: the min, nearest-rank percentiles and max of the round
    /// trips, and nulls with their reason for a prober that heard nothing.
    #[test]
    fn report_per_prober_and_total() {
        let silent = [IrttRec { t_send: 150, fate: Fate::LostUp, ..IrttRec::default() }];
        let recs = records();
        let (m, why) = irtt_report([&recs[..], &silent[..]].into_iter(), 100, 1000);
        let ms = |ns: f64| Some(ns / 1e6);
        assert_eq!(m["irtt.0.rtt_avg_ms"], ms(141.0 / 4.0));
        assert_eq!(m["irtt.rtt_min_ms"], ms(30.0));
        assert_eq!(m["irtt.rtt_p50_ms"], ms(34.0));
        assert_eq!(m["irtt.rtt_p99_ms"], ms(40.0));
        assert_eq!(m["irtt.rtt_max_ms"], ms(40.0));
        assert_eq!(m["irtt.ipdv_avg_ms"], ms(3.5));
        assert_eq!(m["irtt.packets"], Some(7.0));
        assert_eq!(m["irtt.loss_up_pct"], Some(200.0 / 7.0));
        assert_eq!(m["irtt.1.rtt_avg_ms"], None);
        assert_eq!(why["irtt.1.rtt_avg_ms"], "no irtt reply was received in the measured window");
        assert_eq!(m["irtt.1.loss_down_pct"], None);
        assert!(!m.contains_key("irtt.0.rtt_p50_ms"), "percentiles only over all probers");
        let (none, _) = irtt_report(std::iter::empty(), 0, 1);
        assert!(none.is_empty());
    }

    #[test]
    fn rtt_series_skips_requests_in_flight() {
        let t = irtt_rtt_series(&records(), 100, 650);
        assert_eq!(t.t_ms, [0.0, 1e-4, 2e-4, 3e-4, 4e-4, 5e-4]);
        assert_eq!(t.values, [Some(3e-5), Some(3.4e-5), None, Some(4e-5), Some(3.7e-5), None]);
    }
}
