//! Voice quality from per-packet records, for `[[traffic]] kind = "voip"`: one-way
//! delay, RFC 3550's interarrival jitter, loss in the network and at the playout
//! buffer, and a MOS from the ITU-T G.107 E-model. The simulator fills the records
//! from its packets' true times, the kernel backend from its generator's send stamps
//! and the receivers' kernel receive stamps (`SO_TIMESTAMPNS`, both ends in one
//! `CLOCK_MONOTONIC`). Both report through [`voip_report`], so every figure is defined
//! once.
//!
//! Packet n of a stream carries the audio sampled at its RTP timestamp S(n) = t0 + n
//! x interval, t0 the earliest schedule all its sends kept (a late `sendmsg()` delays
//! the packet, not its audio). RFC 3550's jitter and the playout buffer work on S;
//! the one-way delays are from each packet's own send time (the network's and the
//! stacks' share), as irtt reports them.
//!
//! The receiver model: a fixed-depth playout (de-jitter) buffer that re-synchronises,
//! as a phone's fixed jitter buffer does. The stream's first packet is played
//! `jitter_buffer` after it arrives: every later packet n at `t_send(n) + P`, P that
//! first packet's delay (arrival - S) + `jitter_buffer`. A packet arriving after its
//! playout time is lost to the decoder (an underrun), and the buffer re-primes on it:
//! P becomes its delay + `jitter_buffer`. A packet that would wait more than twice
//! `jitter_buffer` (an overflow: the path got faster) re-primes it the same way, and
//! is played. Each packet played has mouth-to-ear delay Ta = packetization (one
//! interval: the sender waits for a packet's audio) + the codec's look-ahead + P; the
//! E-model takes their mean.

use crate::{percentile, Out};
use darkbuf_scenario::{Codec, Voip};
use std::collections::BTreeMap;

/// Where a voice packet ended up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VoipFate {
    /// Sent, not yet received or dropped.
    #[default]
    InFlight,
    /// Dropped on the way (a qdisc, a ring, the wire).
    Dropped,
    /// Received at `t_recv`.
    Received,
}

/// One packet of a stream, by sequence number (ns, in one clock).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VoipRec {
    pub t_send: u64,
    pub t_recv: u64,
    pub fate: VoipFate,
}

/// RFC 3550's interarrival jitter estimator (section 6.4.1, appendix A.8): for each
/// packet received, D = (R_j - R_i) - (S_j - S_i) against the previous packet in
/// arrival order, and J += (|D| - J) / 16. Times in ns.
#[derive(Clone, Copy, Debug, Default)]
pub struct RtpJitter {
    prev: Option<(u64, u64)>,
    /// The current estimate J, ns.
    pub j: f64,
}

impl RtpJitter {
    /// A packet sent at `s` arrived at `r`: the updated J.
    pub fn update(&mut self, s: u64, r: u64) -> f64 {
        if let Some((ps, pr)) = self.prev {
            let d = (r as f64 - pr as f64) - (s as f64 - ps as f64);
            self.j += (d.abs() - self.j) / 16.0;
        }
        self.prev = Some((s, r));
        self.j
    }
}

/// The E-model's transmission parameters (ITU-T G.107 (06/2015) Table 1), all at
/// their default values but what a VoIP call sets: the delays and the equipment
/// (codec, loss). Delays in ms, Ppl in %.
#[derive(Clone, Copy, Debug)]
pub struct EModel {
    /// Absolute delay Ta (mouth to ear), ms.
    pub ta: f64,
    /// Mean one-way delay of the echo path T, ms (G.107: T = Ta when there is no
    /// other information).
    pub t: f64,
    /// Round-trip delay in a 4-wire loop Tr, ms (2 T).
    pub tr: f64,
    /// Equipment impairment factor Ie and packet-loss robustness factor Bpl (G.113).
    pub ie: f64,
    pub bpl: f64,
    /// Packet-loss probability Ppl, %.
    pub ppl: f64,
    /// Burst ratio: 1 for random loss.
    pub burst_r: f64,
    /// Advantage factor A.
    pub a: f64,
}

// G.107 Table 1's defaults for what a VoIP path does not change.
const SLR: f64 = 8.0;
const RLR: f64 = 2.0;
const STMR: f64 = 15.0;
const LSTR: f64 = 18.0;
const DS: f64 = 3.0;
const TELR: f64 = 65.0;
const WEPL: f64 = 110.0;
const QDU: f64 = 1.0;
const NC: f64 = -70.0;
const NFOR: f64 = -64.0;
const PS: f64 = 35.0;
const PR: f64 = 35.0;
const MT: f64 = 100.0;
const ST: f64 = 1.0;

impl EModel {
    /// A call with mouth-to-ear delay `ta` ms and `ppl` % of its packets lost, with
    /// the codec's Ie and Bpl, random loss, no advantage.
    pub fn call(ta: f64, ppl: f64, ie: f64, bpl: f64) -> EModel {
        EModel { ta, t: ta, tr: 2.0 * ta, ie, bpl, ppl, burst_r: 1.0, a: 0.0 }
    }

    /// Every parameter at G.107's default (R = 93.2).
    pub fn defaults() -> EModel {
        EModel { ta: 0.0, t: 0.0, tr: 0.0, ie: 0.0, bpl: 4.3, ppl: 0.0, burst_r: 1.0, a: 0.0 }
    }

    /// The total noise power No (dBm0p), G.107 7.2.
    fn no() -> f64 {
        let olr = SLR + RLR;
        let nos = PS - SLR - DS - 100.0 + 0.004 * (PS - olr - DS - 14.0).powi(2);
        let pre = PR + 10.0 * (1.0 + 10f64.powf((10.0 - LSTR) / 10.0)).log10();
        let nor = RLR - 121.0 + pre + 0.008 * (pre - 35.0).powi(2);
        let nfo = NFOR + RLR;
        10.0 * [NC, nos, nor, nfo].iter().map(|x| 10f64.powf(x / 10.0)).sum::<f64>().log10()
    }

    /// The basic signal-to-noise ratio Ro, G.107 7.2.
    pub fn ro() -> f64 {
        15.0 - 1.5 * (SLR + Self::no())
    }

    /// The simultaneous impairment factor Is = Iolr + Ist + Iq, G.107 7.3.
    pub fn is(&self) -> f64 {
        let (no, ro) = (Self::no(), Self::ro());
        let xolr = SLR + RLR + 0.2 * (64.0 + no - RLR);
        let iolr = 20.0 * ((1.0 + (xolr / 8.0).powi(8)).powf(1.0 / 8.0) - xolr / 8.0);
        let stmro = self.stmro();
        let ist = 12.0 * (1.0 + ((stmro - 13.0) / 6.0).powi(8)).powf(1.0 / 8.0) - 28.0 * (1.0 + ((stmro + 1.0) / 19.4).powi(35)).powf(1.0 / 35.0)
            - 13.0 * (1.0 + ((stmro - 3.0) / 33.0).powi(13)).powf(1.0 / 13.0)
            + 29.0;
        let q = 37.0 - 15.0 * QDU.log10();
        let g = 1.07 + 0.258 * q + 0.0602 * q * q;
        let y = (ro - 100.0) / 15.0 + 46.0 / 8.4 - g / 9.0;
        let z = 46.0 / 30.0 - g / 40.0;
        let iq = 15.0 * (1.0 + 10f64.powf(y) + 10f64.powf(z)).log10();
        iolr + ist + iq
    }

    /// STMRo, the weighted sidetone and talker echo, G.107 7.3.
    fn stmro(&self) -> f64 {
        -10.0 * (10f64.powf(-STMR / 10.0) + (-self.t / 4.0).exp() * 10f64.powf(-TELR / 10.0)).log10()
    }

    /// The delay impairment factor Id = Idte + Idle + Idd, G.107 7.4.
    pub fn id(&self) -> f64 {
        let (no, ro, t) = (Self::no(), Self::ro(), self.t);
        // Talker echo; below 1 ms it is sidetone (Idte = 0).
        let idte = if t < 1.0 {
            0.0
        } else {
            let roe = -1.5 * (no - RLR);
            let terv = TELR - 40.0 * ((1.0 + t / 10.0) / (1.0 + t / 150.0)).log10() + 6.0 * (-0.3 * t * t).exp();
            let re = 80.0 + 2.5 * (terv - 14.0);
            ((roe - re) / 2.0 + ((roe - re).powi(2) / 4.0 + 100.0).sqrt() - 1.0) * (1.0 - (-t).exp())
        };
        let rle = 10.5 * (WEPL + 7.0) * (self.tr + 1.0).powf(-0.25);
        let idle = (ro - rle) / 2.0 + ((ro - rle).powi(2) / 4.0 + 169.0).sqrt();
        idte + idle + self.idd()
    }

    /// The absolute-delay impairment Idd, G.107 7.4 (mT = 100 ms, sT = 1).
    pub fn idd(&self) -> f64 {
        if self.ta <= MT {
            return 0.0;
        }
        let x = (self.ta / MT).log10() / 2f64.log10();
        let e = 6.0 * ST;
        25.0 * ((1.0 + x.powf(e)).powf(1.0 / e) - 3.0 * (1.0 + (x / 3.0).powf(e)).powf(1.0 / e) + 2.0)
    }

    /// The effective equipment impairment Ie,eff = Ie + (95 - Ie) Ppl / (Ppl / BurstR
    /// + Bpl), G.107 7.5.
    pub fn ie_eff(&self) -> f64 {
        self.ie + (95.0 - self.ie) * self.ppl / (self.ppl / self.burst_r + self.bpl)
    }

    /// The rating R = Ro - Is - Id - Ie,eff + A.
    pub fn r(&self) -> f64 {
        Self::ro() - self.is() - self.id() - self.ie_eff() + self.a
    }
}

/// The MOS (conversational quality, estimated) of a rating R, G.107 Annex B.
pub fn mos(r: f64) -> f64 {
    if r <= 0.0 {
        1.0
    } else if r >= 100.0 {
        4.5
    } else {
        1.0 + 0.035 * r + r * (r - 60.0) * (100.0 - r) * 7e-6
    }
}

/// One direction of an entry's calls, over the packets sent in the window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DirStats {
    /// Packets with a known fate, dropped in the network, and received too late for
    /// their playout time (underruns of the playout buffer).
    pub packets: u64,
    pub dropped: u64,
    pub late: u64,
    /// One-way delays of the packets received, ns, ascending.
    pub owd: Vec<u64>,
    /// Mean of each stream's RFC 3550 J over its arrivals, averaged over the streams, ns.
    pub jitter: f64,
    /// The streams' mean mouth-to-ear delay Ta of the packets played, ns.
    pub ta: f64,
}

impl DirStats {
    /// The streams (one per call) of one direction of `v`'s entry.
    pub fn of(v: &Voip, streams: &[&[VoipRec]], start: u64, end: u64) -> DirStats {
        let mut d = DirStats::default();
        let (mut jitters, mut tas) = (Vec::new(), Vec::new());
        let mut arrivals: Vec<(u64, u64)> = Vec::new();
        for recs in streams {
            // The RTP timestamp: the packet's place in the schedule (its audio's
            // sampling time), on the earliest schedule every send kept (a sender
            // that fell behind sent late, never early).
            let t0 = recs.iter().enumerate().map(|(n, r)| r.t_send.saturating_sub(n as u64 * v.interval_ns)).min().unwrap_or(0);
            let rtp_ts = |seq: usize| t0 + seq as u64 * v.interval_ns;
            arrivals.clear();
            for (seq, r) in recs.iter().enumerate().filter(|(_, r)| (start..=end).contains(&r.t_send) && r.fate != VoipFate::InFlight) {
                d.packets += 1;
                match r.fate {
                    VoipFate::Received => {
                        d.owd.push(r.t_recv - r.t_send);
                        arrivals.push((r.t_recv, rtp_ts(seq)));
                    }
                    _ => d.dropped += 1,
                }
            }
            if arrivals.is_empty() {
                continue;
            }
            // The playout buffer takes them in sequence order, by their timestamps.
            arrivals.sort_unstable_by_key(|&(_, s)| s);
            let (late, mean_p) = playout(&arrivals, v.jitter_buffer_ns);
            d.late += late;
            // RFC 3550 takes the packets in arrival order.
            arrivals.sort_unstable();
            let mut j = RtpJitter::default();
            let js: Vec<f64> = arrivals.iter().map(|&(r, s)| j.update(s, r)).skip(1).collect();
            if !js.is_empty() {
                jitters.push(js.iter().sum::<f64>() / js.len() as f64);
            }
            tas.push((v.interval_ns + v.codec.lookahead_ns()) as f64 + mean_p);
        }
        d.owd.sort_unstable();
        let mean = |x: &[f64]| if x.is_empty() { 0.0 } else { x.iter().sum::<f64>() / x.len() as f64 };
        d.jitter = mean(&jitters);
        d.ta = mean(&tas);
        d
    }

    /// Packets lost to the decoder (network + late), %.
    pub fn loss_pct(&self) -> Option<f64> {
        (self.packets > 0).then(|| 100.0 * (self.dropped + self.late) as f64 / self.packets as f64)
    }

    /// The E-model of these streams with codec `codec` (`plc`: G.711 with PLC).
    pub fn emodel(&self, codec: Codec, plc: bool) -> Option<EModel> {
        if self.owd.is_empty() {
            return None;
        }
        Some(EModel::call(self.ta / 1e6, self.loss_pct()?, codec.ie(), codec.bpl(plc)))
    }
}

/// The fixed playout buffer of depth `jb` over one stream's arrivals `(t_recv, RTP
/// timestamp)` in sequence order (see the module's comment): the packets that came too late,
/// and the mean playout delay P of those played, ns.
pub fn playout(arrivals: &[(u64, u64)], jb: u64) -> (u64, f64) {
    let Some(&(r0, s0)) = arrivals.first() else { return (0, 0.0) };
    let mut p = r0.saturating_sub(s0) + jb;
    let (mut late, mut played, mut sum) = (0u64, 0u64, 0f64);
    for &(r, s) in arrivals {
        let d = r.saturating_sub(s);
        if d > p {
            late += 1;
            p = d + jb;
            continue;
        }
        if p - d > 2 * jb {
            p = d + jb;
        }
        played += 1;
        sum += p as f64;
    }
    (late, if played > 0 { sum / played as f64 } else { p as f64 })
}

/// One `kind = "voip"` entry's records: the streams of each direction (one per call;
/// empty with a reason when the direction is not sent or not measurable).
pub struct VoipEntry<'a> {
    pub spec: &'a Voip,
    pub up: Vec<&'a [VoipRec]>,
    pub down: Vec<&'a [VoipRec]>,
    pub up_why: Option<String>,
    pub down_why: Option<String>,
}

const DIR_METRICS: &[&str] = &["mos", "r", "mouth_to_ear_ms", "owd_avg_ms", "owd_p50_ms", "owd_p99_ms", "owd_max_ms", "jitter_ms", "loss_pct", "net_loss_pct", "late_pct", "packets"];

/// The `voip.*` metrics of every entry, over the packets sent in `start..=end` (the
/// records' times and the window in one clock), with the reason of each `null`:
/// per entry N and direction `voip.N.up.*`, `voip.N.down.*` (MOS, one-way delay
/// p99, jitter, loss); per entry
/// `voip.N.{mos, owd_p99_ms, jitter_ms, loss_pct}` of its worse direction (the lower
/// MOS); `voip.up.*` and `voip.down.*` (all of [`DIR_METRICS`]) of the worst entry in that direction; and
/// `voip.*` of the worse of those. Nothing without an entry.
pub fn voip_report(entries: &[VoipEntry<'_>], start: u64, end: u64) -> (BTreeMap<String, Option<f64>>, BTreeMap<String, String>) {
    let mut out = Out::default();
    // Per direction: the worst entry so far (its MOS and its metrics).
    let mut worst: [Option<(f64, Vec<(String, f64)>)>; 2] = [None, None];
    let mut why: [Option<String>; 2] = [None, None];
    for (n, e) in entries.iter().enumerate() {
        let mut entry_worst: Option<(f64, Vec<(String, f64)>)> = None;
        for (k, (dir, streams, reason)) in [("up", &e.up, &e.up_why), ("down", &e.down, &e.down_why)].into_iter().enumerate() {
            let prefix = format!("voip.{n}.{dir}.");
            let s = DirStats::of(e.spec, streams, start, end);
            let reason = match reason {
                Some(r) => Some(r.clone()),
                None if s.packets == 0 => Some("no voice packet's fate is known in the measured window".into()),
                None if s.owd.is_empty() => Some("no voice packet was received in the measured window".into()),
                None => None,
            };
            let vals = match (&reason, s.emodel(e.spec.codec, e.spec.plc)) {
                (None, Some(m)) => dir_values(&s, &m),
                _ => {
                    let r = reason.unwrap_or_default();
                    put_summary(&mut out, &prefix, None, &r);
                    why[k].get_or_insert(r);
                    continue;
                }
            };
            put_summary(&mut out, &prefix, Some(&vals), "");
            let m = vals[0].1;
            if !matches!(&entry_worst, Some((w, _)) if *w <= m) {
                entry_worst = Some((m, vals.clone()));
            }
            if !matches!(&worst[k], Some((w, _)) if *w <= m) {
                worst[k] = Some((m, vals));
            }
        }
        put_summary(&mut out, &format!("voip.{n}."), entry_worst.as_ref().map(|w| &w.1[..]), "neither direction of this entry was measured");
    }
    if entries.is_empty() {
        return (out.m, out.why);
    }
    for (k, dir) in ["up", "down"].into_iter().enumerate() {
        match &worst[k] {
            Some((_, vals)) => vals.iter().for_each(|(name, v)| out.set(&format!("voip.{dir}.{name}"), *v)),
            None => DIR_METRICS.iter().for_each(|name| out.none(&format!("voip.{dir}.{name}"), why[k].as_deref().unwrap_or(""))),
        }
    }
    let total = match (&worst[0], &worst[1]) {
        (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
        (a, b) => a.as_ref().or(b.as_ref()),
    };
    put_summary(&mut out, "voip.", total.map(|w| &w.1[..]), "no direction of any voip entry was measured");
    if let Some((_, vals)) = total {
        out.set("voip.r", vals[1].1);
    } else {
        out.none("voip.r", "no direction of any voip entry was measured");
    }
    (out.m, out.why)
}

/// `PREFIX{mos, owd_p99_ms, jitter_ms, loss_pct}` of a direction's values, or nulls.
fn put_summary(out: &mut Out, prefix: &str, vals: Option<&[(String, f64)]>, why: &str) {
    for name in ["mos", "owd_p99_ms", "jitter_ms", "loss_pct"] {
        match vals.and_then(|v| v.iter().find(|(k, _)| k == name)) {
            Some((_, v)) => out.set(&format!("{prefix}{name}"), *v),
            None => out.none(&format!("{prefix}{name}"), why),
        }
    }
}

/// A measured direction's metrics, in [`DIR_METRICS`]' order (MOS first).
fn dir_values(s: &DirStats, m: &EModel) -> Vec<(String, f64)> {
    let ms = |ns: f64| ns / 1e6;
    let pct = |x: u64| 100.0 * x as f64 / s.packets as f64;
    let p = |q: f64| ms(percentile(&s.owd, q).unwrap_or(0.0));
    let avg = s.owd.iter().map(|&x| x as f64).sum::<f64>() / s.owd.len() as f64;
    let r = m.r();
    [
        ("mos", mos(r)),
        ("r", r),
        ("mouth_to_ear_ms", m.ta),
        ("owd_avg_ms", ms(avg)),
        ("owd_p50_ms", p(50.0)),
        ("owd_p99_ms", p(99.0)),
        ("owd_max_ms", p(100.0)),
        ("jitter_ms", ms(s.jitter)),
        ("loss_pct", m.ppl),
        ("net_loss_pct", pct(s.dropped)),
        ("late_pct", pct(s.late)),
        ("packets", s.packets as f64),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// G.107's defaults give R = 93.2 (G.107 section 7.7 and Table 1: Ro = 94.77,
    /// Is = 1.41, Id = 0.15), and R = 93.2 is MOS 4.41.
    #[test]
    fn g107_defaults_give_r_93_2_and_mos_4_41() {
        let m = EModel::defaults();
        assert!(close(EModel::ro(), 94.77, 0.005), "Ro = {}", EModel::ro());
        assert!(close(m.is(), 1.41, 0.005), "Is = {}", m.is());
        assert!(close(m.id(), 0.15, 0.005), "Id = {}", m.id());
        assert!(close(m.r(), 93.2, 0.02), "R = {}", m.r());
        assert!(close(mos(93.2), 4.41, 0.005), "MOS = {}", mos(93.2));
        // Annex B's ends: 1 at R <= 0, 4.5 at R >= 100, 1 + 0.035 R + ... between.
        assert_eq!((mos(-5.0), mos(0.0), mos(100.0), mos(120.0)), (1.0, 1.0, 4.5, 4.5));
        assert!(close(mos(50.0), 1.0 + 1.75 + 50.0 * -10.0 * 50.0 * 7e-6, 1e-12));
    }

    /// Idd is 0 up to 100 ms; at Ta = 200 ms, X = 1: 25 ((1 + 1)^(1/6) - 3 (1 + 3^-6)^(1/6) + 2) = 3.044.
    #[test]
    fn absolute_delay_impairment() {
        let at = |ta: f64| EModel { ta, ..EModel::defaults() }.idd();
        assert_eq!(at(100.0), 0.0);
        let x1 = 25.0 * (2f64.powf(1.0 / 6.0) - 3.0 * (1.0 + 3f64.powi(-6)).powf(1.0 / 6.0) + 2.0);
        assert!(close(at(200.0), x1, 1e-12), "{} {}", at(200.0), x1);
        assert!(close(at(200.0), 3.044, 0.001));
        // Monotone in Ta, and the R of a call falls with it.
        let r = |ta: f64| EModel::call(ta, 0.0, 0.0, 25.1).r();
        assert!(r(50.0) > r(150.0) && r(150.0) > r(300.0) && r(300.0) > r(1000.0));
        // A 1.2 s mouth-to-ear delay (a full 1000-packet FIFO at 10 Mbit) rates below
        // MOS 3.6 by delay alone.
        assert!(mos(r(1200.0)) < 3.6, "{}", mos(r(1200.0)));
    }

    /// Ie,eff = Ie + (95 - Ie) Ppl / (Ppl / BurstR + Bpl): G.711 with PLC (Bpl 25.1) at
    /// 1% random loss is 95 / 26.1.
    #[test]
    fn effective_equipment_impairment() {
        let m = EModel::call(0.0, 1.0, 0.0, 25.1);
        assert!(close(m.ie_eff(), 95.0 / 26.1, 1e-12));
        let m = EModel::call(0.0, 2.0, 11.0, 19.0);
        assert!(close(m.ie_eff(), 11.0 + 84.0 * 2.0 / 21.0, 1e-12));
        assert_eq!(EModel::call(0.0, 0.0, 0.0, 4.3).ie_eff(), 0.0);
    }

    /// RFC 3550's J: constant delay gives 0; delays alternating by 1 ms give
    /// J_n = 1 ms (1 - (15/16)^n) after the n-th difference.
    #[test]
    fn rtp_jitter_is_rfc3550s() {
        let mut j = RtpJitter::default();
        for k in 0..10u64 {
            assert_eq!(j.update(k * 20, k * 20 + 5), 0.0);
        }
        let mut j = RtpJitter::default();
        let mut last = 0.0;
        for k in 0..6u64 {
            let extra = if k % 2 == 1 { 1_000_000 } else { 0 };
            last = j.update(k * 20_000_000, k * 20_000_000 + 5_000_000 + extra);
        }
        assert!(close(last, 1e6 * (1.0 - (15.0f64 / 16.0).powi(5)), 1e-6), "{last}");
    }

    fn spec(jb_ms: u64) -> Voip {
        let scn = darkbuf_scenario::load_str("t.toml", &format!("[[traffic]]\nkind = \"voip\"\njitter_buffer = \"{jb_ms}ms\"\n"), &[]).unwrap();
        match &scn.traffic[0] {
            darkbuf_scenario::Traffic::Voip(v) => v.clone(),
            _ => unreachable!(),
        }
    }

    fn rec(t_send: u64, owd_ms: Option<u64>) -> VoipRec {
        match owd_ms {
            Some(d) => VoipRec { t_send, t_recv: t_send + d * 1_000_000, fate: VoipFate::Received },
            None => VoipRec { t_send, fate: VoipFate::Dropped, ..VoipRec::default() },
        }
    }

    /// Loss to the decoder is the network's plus the late packets' (after their playout
    /// jitter buffer); in-flight packets and those outside the window do not count.
    #[test]
    fn dir_stats_late_and_dropped() {
        let v = spec(10);
        let ms = 1_000_000;
        let recs = [
            rec(0, Some(50)), // outside the window
            rec(20 * ms, Some(5)),
            rec(40 * ms, Some(15)), // = first + jb: played
            rec(60 * ms, Some(16)), // late: re-primes at 26
            rec(80 * ms, None),
            VoipRec { t_send: 100 * ms, ..VoipRec::default() }, // in flight
        ];
        let s = DirStats::of(&v, &[&recs[..]], 10 * ms, 200 * ms);
        assert_eq!((s.packets, s.dropped, s.late), (4, 1, 1));
        assert_eq!(s.owd, [5 * ms, 15 * ms, 16 * ms]);
        assert_eq!(s.loss_pct(), Some(50.0));
        // Ta = 20 ms packetization + 0 look-ahead + P = 5 ms first + 10 ms buffer.
        assert_eq!(s.ta, 35e6);
        let m = s.emodel(v.codec, v.plc).unwrap();
        assert!(close(m.ie_eff(), 95.0 * 50.0 / 75.1, 1e-9));
    }

    /// A stream whose first send was late: the schedule is the earliest all sends
    /// kept, so no packet is earlier than its timestamp and Ta is the on-time
    /// packets' delay + the buffer.
    #[test]
    fn a_late_first_send_does_not_skew_the_schedule() {
        let v = spec(60);
        let ms = 1_000_000;
        let recs: Vec<VoipRec> = (0..10).map(|k| VoipRec { t_send: k * 20 * ms + if k == 0 { 7 * ms } else { 0 }, t_recv: k * 20 * ms + 9 * ms, fate: VoipFate::Received }).collect();
        let s = DirStats::of(&v, &[&recs[..]], 0, 1000 * ms);
        // Packet 0: sent at 7 ms, arrives at 9 ms, its audio from 0: d = 9 ms, as all.
        assert_eq!((s.late, s.ta), (0, (20 + 9 + 60) as f64 * 1e6));
        assert_eq!(s.owd[0], 2 * ms);
    }

    /// An underrun loses the packet and re-primes the buffer behind it; an overflow
    /// (a packet that would wait more than 2 jb) re-primes it ahead, played.
    #[test]
    fn playout_buffer_resynchronises() {
        let a = |v: &[(u64, u64)]| v.iter().map(|&(s, d)| (s + d, s)).collect::<Vec<_>>();
        // P = 15; 30 > 15 late, P = 40; 35 played at 40; 5: 40 - 5 > 20, P = 15.
        assert_eq!(playout(&a(&[(0, 5), (20, 30), (40, 35), (60, 5), (80, 12)]), 10), (1, (15.0 + 40.0 + 15.0 + 15.0) / 4.0));
        assert_eq!(playout(&a(&[(0, 7); 1]), 60), (0, 67.0));
        assert_eq!(playout(&[], 60), (0, 0.0));
    }

    #[test]
    fn report_names_worse_direction_and_reasons() {
        let v = spec(60);
        let ms = 1_000_000;
        let good: Vec<VoipRec> = (0..50).map(|k| rec(k * 20 * ms, Some(5))).collect();
        let lossy: Vec<VoipRec> = (0..50).map(|k| rec(k * 20 * ms, if k % 10 == 0 { None } else { Some(5) })).collect();
        let e = VoipEntry { spec: &v, up: vec![&good[..]], down: vec![&lossy[..]], up_why: None, down_why: None };
        let (m, _) = voip_report(&[e], 0, 2000 * ms);
        assert_eq!(m["voip.up.loss_pct"], Some(0.0));
        assert_eq!(m["voip.down.loss_pct"], Some(10.0));
        assert_eq!(m["voip.loss_pct"], Some(10.0), "the worse direction");
        assert_eq!(m["voip.mos"], m["voip.down.mos"]);
        assert_eq!(m["voip.0.mos"], m["voip.down.mos"]);
        assert_eq!(m["voip.jitter_ms"], Some(0.0));
        assert!(m["voip.up.mos"].unwrap() > m["voip.down.mos"].unwrap());
        let e = VoipEntry { spec: &v, up: vec![&good[..]], down: vec![], up_why: None, down_why: Some("not sent".into()) };
        let (m, why) = voip_report(&[e], 0, 2000 * ms);
        assert_eq!(m["voip.down.mos"], None);
        assert_eq!(why["voip.0.down.mos"], "not sent");
        assert_eq!(m["voip.mos"], m["voip.up.mos"]);
        assert!(voip_report(&[], 0, 1).0.is_empty());
    }
}
