//! mac80211's TXQ scheduler per AC with airtime fairness and Airtime Queue Limits:
//! `ieee80211_txq_schedule_start()`, `ieee80211_next_txq()`, `ieee80211_return_txq()`
//! / `__ieee80211_schedule_txq()` and `ieee80211_txq_airtime_check()` of
//! net/mac80211/tx.c, `ieee80211_sta_register_airtime()` and
//! `ieee80211_sta_update_pending_airtime()` of net/mac80211/sta_info.c (the deficit
//! round robin Felix Fietkau restored in 5.19/6.0, after the virtual-time one).
//!
//! - Each station has per AC a `deficit` (µs), the airtime it was charged at TX status
//!   (`register_airtime`, while it was active in the last 100 ms), and its
//!   `aql_tx_pending`, the estimated airtime of what it has below mac80211.
//! - `next_txq()` walks the AC's active list from its head: a station TXQ whose
//!   `deficit - aql_tx_pending` is negative gets `airtime_weight` more and goes to the
//!   tail, as does one whose AQL check fails; a TXQ already served in this round ends
//!   the walk, as does a whole pass with no AQL-eligible TXQ.
//! - `return_txq()` puts a TXQ that still has packets (or a station that was active in
//!   the last 100 ms with a negative deficit) back at the HEAD with airtime fairness
//!   (it keeps the medium until its deficit is spent), at the tail without.
//! - AQL: a station may have `aql_limit_low` µs pending always, `aql_limit_high` while
//!   the radio total is under `aql_threshold`; `schedule_start()` closes the AC
//!   (round 0) while the AC's pending airtime is at least
//!   `(active TXQs - 1) * limit_low / 2 + limit_high`.
//!
//! Without airtime fairness (a driver without `NL80211_EXT_FEATURE_AIRTIME_FAIRNESS`)
//! the deficits are never charged and the list is plain round robin.

use std::collections::VecDeque;

pub const IEEE80211_NUM_ACS: usize = 4;
/// `IEEE80211_DEFAULT_AIRTIME_WEIGHT`, µs.
pub const IEEE80211_DEFAULT_AIRTIME_WEIGHT: u32 = 256;
/// `IEEE80211_DEFAULT_AQL_TXQ_LIMIT_L` / `_H` and `IEEE80211_AQL_THRESHOLD`, µs.
pub const IEEE80211_DEFAULT_AQL_TXQ_LIMIT_L: u32 = 5000;
pub const IEEE80211_DEFAULT_AQL_TXQ_LIMIT_H: u32 = 12000;
pub const IEEE80211_AQL_THRESHOLD: u32 = 24000;
/// `AIRTIME_ACTIVE_DURATION` (HZ / 10), ns.
pub const AIRTIME_ACTIVE_DURATION_NS: u64 = 100_000_000;
/// debugfs `airtime_flags` bits (sta_info.h): charge TX airtime, RX airtime to the
/// deficits. `ieee80211_alloc_hw_nm()` sets both.
pub const AIRTIME_USE_TX: u16 = 1 << 0;
pub const AIRTIME_USE_RX: u16 = 1 << 1;

/// `struct airtime_info`: a station's airtime on one AC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AirtimeInfo {
    pub tx_airtime: u64,
    pub rx_airtime: u64,
    /// When it was last scheduled (ns); `None`: never.
    pub last_active: Option<u64>,
    pub deficit: i32,
    pub aql_tx_pending: u32,
    pub aql_limit_low: u32,
    pub aql_limit_high: u32,
}

/// A station's scheduling state.
#[derive(Clone, Debug)]
pub struct StaAirtime {
    pub airtime_weight: u32,
    pub airtime: [AirtimeInfo; IEEE80211_NUM_ACS],
}

/// A TXQ's place in the scheduler (`txq_info`'s `schedule_order` and `schedule_round`).
#[derive(Clone, Copy, Debug)]
pub struct TxqSched {
    pub sta: Option<u32>,
    pub ac: u8,
    schedule_round: u32,
    on_list: bool,
}

/// The radio's scheduler state (`local->active_txqs`, `schedule_round`,
/// `aql_total_pending_airtime`, `aql_ac_pending_airtime`).
pub struct AirtimeSched {
    pub txqs: Vec<TxqSched>,
    pub stas: Vec<StaAirtime>,
    active_txqs: [VecDeque<u32>; IEEE80211_NUM_ACS],
    schedule_round: [u32; IEEE80211_NUM_ACS],
    pub aql_ac_pending: [u32; IEEE80211_NUM_ACS],
    pub aql_total_pending: u32,
    /// `NL80211_EXT_FEATURE_AIRTIME_FAIRNESS`: deficits are charged and checked.
    pub fairness: bool,
    /// `local->airtime_flags`: which airtime (`AIRTIME_USE_TX`, `AIRTIME_USE_RX`) a
    /// deficit is charged.
    pub airtime_flags: u16,
    /// `NL80211_EXT_FEATURE_AQL` and `aql_enable`.
    pub aql: bool,
    pub aql_threshold: u32,
    /// AQL's default per-AC low and high limits (`local->aql_txq_limit_low/high`).
    pub aql_limit_low: u32,
    pub aql_limit_high: u32,
}

impl AirtimeSched {
    /// A radio with `stas` stations of the given airtime weights, and TXQs
    /// `(station, ac)` in `txqs` order.
    pub fn new(weights: &[u32], txqs: &[(Option<u32>, u8)], fairness: bool, aql: bool, low: u32, high: u32, threshold: u32) -> AirtimeSched {
        let info = AirtimeInfo { aql_limit_low: low, aql_limit_high: high, ..AirtimeInfo::default() };
        AirtimeSched {
            txqs: txqs.iter().map(|&(sta, ac)| TxqSched { sta, ac, schedule_round: 0, on_list: false }).collect(),
            stas: weights.iter().map(|&w| StaAirtime { airtime_weight: w, airtime: [info; IEEE80211_NUM_ACS] }).collect(),
            active_txqs: Default::default(),
            schedule_round: [0; IEEE80211_NUM_ACS],
            aql_ac_pending: [0; IEEE80211_NUM_ACS],
            aql_total_pending: 0,
            fairness,
            airtime_flags: AIRTIME_USE_TX | AIRTIME_USE_RX,
            aql,
            aql_threshold: threshold,
            aql_limit_low: low,
            aql_limit_high: high,
        }
    }

    /// `ieee80211_sta_deficit()`: the deficit less the airtime still pending.
    pub fn sta_deficit(&self, sta: u32, ac: usize) -> i64 {
        let a = &self.stas[sta as usize].airtime[ac];
        a.deficit as i64 - a.aql_tx_pending as i64
    }

    /// `ieee80211_sta_keep_active()`: scheduled within the last 100 ms.
    fn sta_keep_active(&self, sta: u32, ac: usize, now: u64) -> bool {
        self.stas[sta as usize].airtime[ac].last_active.is_some_and(|t| now < t + AIRTIME_ACTIVE_DURATION_NS)
    }

    /// `ieee80211_txq_airtime_check()`.
    pub fn txq_airtime_check(&self, txq: u32) -> bool {
        let t = &self.txqs[txq as usize];
        let Some(sta) = t.sta else { return true };
        if !self.aql {
            return true;
        }
        let a = &self.stas[sta as usize].airtime[t.ac as usize];
        if a.aql_tx_pending < a.aql_limit_low {
            return true;
        }
        self.aql_total_pending < self.aql_threshold && a.aql_tx_pending < a.aql_limit_high
    }

    /// `ieee80211_txq_schedule_airtime_check()`: the AC may be served.
    fn schedule_airtime_check(&self, ac: usize) -> bool {
        if !self.aql {
            return true;
        }
        let n = self.active_txqs[ac].len().max(1) as u64;
        (self.aql_ac_pending[ac] as u64) < (n - 1) * self.aql_limit_low as u64 / 2 + self.aql_limit_high as u64
    }

    /// `ieee80211_txq_schedule_start()`: a new round on `ac`, or round 0 (closed) when
    /// the AC has too much airtime pending.
    pub fn txq_schedule_start(&mut self, ac: usize) {
        if self.schedule_airtime_check(ac) {
            self.schedule_round[ac] = self.schedule_round[ac].wrapping_add(1).max(1);
        } else {
            self.schedule_round[ac] = 0;
        }
    }

    /// `ieee80211_next_txq()` at `now` (ns).
    pub fn next_txq(&mut self, ac: usize, now: u64) -> Option<u32> {
        let round = self.schedule_round[ac];
        if round == 0 {
            return None;
        }
        let mut head: Option<u32> = None;
        let mut found_eligible = false;
        loop {
            let txq = *self.active_txqs[ac].front()?;
            if head == Some(txq) {
                if !found_eligible {
                    return None;
                }
                found_eligible = false;
            }
            head.get_or_insert(txq);
            if let Some(sta) = self.txqs[txq as usize].sta {
                let aql_check = self.txq_airtime_check(txq);
                found_eligible |= aql_check;
                let deficit_neg = self.fairness && self.sta_deficit(sta, ac) < 0;
                if deficit_neg {
                    let s = &mut self.stas[sta as usize];
                    s.airtime[ac].deficit += s.airtime_weight as i32;
                }
                if deficit_neg || !aql_check {
                    self.active_txqs[ac].rotate_left(1);
                    continue;
                }
            }
            if self.txqs[txq as usize].schedule_round == round {
                return None;
            }
            self.active_txqs[ac].pop_front();
            let t = &mut self.txqs[txq as usize];
            t.on_list = false;
            t.schedule_round = round;
            if let Some(sta) = t.sta {
                self.stas[sta as usize].airtime[ac].last_active = Some(now);
            }
            return Some(txq);
        }
    }

    /// `ieee80211_return_txq()` / `__ieee80211_schedule_txq()`: `txq` (with
    /// `has_packets`) goes back on its AC's list, at the head with airtime fairness.
    /// `ieee80211_schedule_txq()` (a TXQ that got a packet) is the same call.
    pub fn return_txq(&mut self, txq: u32, has_packets: bool, now: u64) {
        let t = self.txqs[txq as usize];
        let ac = t.ac as usize;
        // ieee80211_txq_keep_active(): a station still owing airtime stays listed.
        let keep = t.sta.is_some_and(|s| self.fairness && self.sta_deficit(s, ac) < 0 && self.sta_keep_active(s, ac, now));
        if t.on_list || !(has_packets || keep) {
            return;
        }
        self.txqs[txq as usize].on_list = true;
        if t.sta.is_some() && self.fairness {
            self.active_txqs[ac].push_front(txq);
        } else {
            self.active_txqs[ac].push_back(txq);
        }
    }

    /// `ieee80211_sta_register_airtime()`: TX airtime (µs, at TX status) and RX airtime
    /// (µs, of a frame received from the station) on a station's AC. Both totals are
    /// kept; the deficit is charged what `airtime_flags` selects, while the station
    /// is active (scheduled in the last 100 ms).
    pub fn register_airtime(&mut self, sta: u32, ac: usize, tx_us: u32, rx_us: u32, now: u64) {
        let mut airtime = 0i32;
        if self.airtime_flags & AIRTIME_USE_TX != 0 {
            airtime += tx_us as i32;
        }
        if self.airtime_flags & AIRTIME_USE_RX != 0 {
            airtime += rx_us as i32;
        }
        let active = self.sta_keep_active(sta, ac, now);
        let a = &mut self.stas[sta as usize].airtime[ac];
        a.tx_airtime += tx_us as u64;
        a.rx_airtime += rx_us as u64;
        if active && self.fairness {
            a.deficit -= airtime;
        }
    }

    /// `ieee80211_sta_update_pending_airtime()`: charge (`completed` false, at dequeue)
    /// or refund (at TX status) `us` of estimated airtime. A refund larger than what is
    /// pending clamps at 0 (the kernel warns).
    pub fn update_pending_airtime(&mut self, sta: Option<u32>, ac: usize, us: u32, completed: bool) {
        if !self.aql {
            return;
        }
        let apply = |x: &mut u32| *x = if completed { x.saturating_sub(us) } else { *x + us };
        if let Some(s) = sta {
            apply(&mut self.stas[s as usize].airtime[ac].aql_tx_pending);
        }
        apply(&mut self.aql_ac_pending[ac]);
        apply(&mut self.aql_total_pending);
    }

    /// TXQs on `ac`'s active list, head first.
    pub fn active(&self, ac: usize) -> impl Iterator<Item = u32> + '_ {
        self.active_txqs[ac].iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BE: usize = 2;

    fn sched(n: u32, fairness: bool) -> AirtimeSched {
        let txqs: Vec<(Option<u32>, u8)> = (0..n).map(|s| (Some(s), BE as u8)).collect();
        AirtimeSched::new(&vec![256; n as usize], &txqs, fairness, true, 5000, 12000, 24000)
    }

    /// Airtime DRR: a station that spent 1000 µs is skipped, each pass giving it 256
    /// µs, until its deficit is positive again; the other keeps the head.
    #[test]
    fn drr_skips_a_station_until_its_deficit_is_refilled() {
        let mut s = sched(2, true);
        s.return_txq(0, true, 0);
        s.return_txq(1, true, 0);
        // Head insertion: 1 is first.
        assert_eq!(s.active(BE).collect::<Vec<_>>(), vec![1, 0]);
        s.txq_schedule_start(BE);
        assert_eq!(s.next_txq(BE, 0), Some(1));
        s.register_airtime(1, BE, 1000, 0, 1);
        assert_eq!(s.stas[1].airtime[BE].deficit, -1000);
        s.return_txq(1, true, 1);
        // 1 is at the head with -1000: +256 and to the tail, then 0 is served.
        assert_eq!(s.next_txq(BE, 2), Some(0));
        assert_eq!(s.stas[1].airtime[BE].deficit, -744);
        // Alone on the list, 1 is refilled and rotated until it is positive,
        // -744 + 3 * 256 = 24; it was served in this round already, so the round ends.
        assert_eq!(s.next_txq(BE, 3), None);
        assert_eq!(s.stas[1].airtime[BE].deficit, 24);
        s.txq_schedule_start(BE);
        assert_eq!(s.next_txq(BE, 4), Some(1));
    }

    /// AQL: a station may have 5 ms pending always, 12 ms while the radio has under 24
    /// ms; pending airtime counts against the deficit.
    #[test]
    fn aql_limits_by_hand() {
        let mut s = sched(3, true);
        s.update_pending_airtime(Some(0), BE, 4999, false);
        assert!(s.txq_airtime_check(0));
        s.update_pending_airtime(Some(0), BE, 1, false);
        // 5000 >= low; the radio's 5000 < 24000 and 5000 < high.
        assert!(s.txq_airtime_check(0));
        s.update_pending_airtime(Some(0), BE, 7000, false);
        assert!(!s.txq_airtime_check(0));
        assert_eq!(s.sta_deficit(0, BE), -12000);
        s.update_pending_airtime(Some(1), BE, 6000, false);
        s.update_pending_airtime(Some(2), BE, 6000, false);
        // Radio total 24000: station 1 (6000 >= low) is now held back too.
        assert_eq!(s.aql_total_pending, 24000);
        assert!(!s.txq_airtime_check(1));
        s.update_pending_airtime(Some(0), BE, 12000, true);
        assert!(s.txq_airtime_check(1));
        assert_eq!((s.aql_total_pending, s.aql_ac_pending[BE]), (12000, 12000));
        // A refund beyond what is pending clamps at 0.
        s.update_pending_airtime(Some(0), BE, 1, true);
        assert_eq!(s.stas[0].airtime[BE].aql_tx_pending, 0);
    }

    /// Without airtime fairness the list is round robin (tail insertion, no deficit).
    #[test]
    fn without_fairness_txqs_take_turns() {
        let mut s = sched(3, false);
        for t in 0..3 {
            s.return_txq(t, true, 0);
        }
        let mut order = Vec::new();
        for _ in 0..2 {
            s.txq_schedule_start(BE);
            while let Some(t) = s.next_txq(BE, 0) {
                order.push(t);
                s.register_airtime(t, BE, 4000, 0, 0);
                s.return_txq(t, true, 0);
            }
        }
        assert_eq!(order, vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(s.stas[0].airtime[BE].deficit, 0);
    }

    /// RX airtime (a station's own frames the AP received) is charged with
    /// `AIRTIME_USE_RX`, TX airtime with `AIRTIME_USE_TX`; both totals are kept either
    /// way, and an inactive station (not scheduled in the last 100 ms) is not charged.
    #[test]
    fn rx_airtime_is_charged_by_the_flags() {
        let mut s = sched(1, true);
        s.return_txq(0, true, 0);
        s.txq_schedule_start(BE);
        assert_eq!(s.next_txq(BE, 0), Some(0));
        s.register_airtime(0, BE, 1000, 300, 10);
        assert_eq!(s.stas[0].airtime[BE].deficit, -1300);
        s.airtime_flags = AIRTIME_USE_TX;
        s.register_airtime(0, BE, 1000, 300, 20);
        assert_eq!(s.stas[0].airtime[BE].deficit, -2300);
        s.airtime_flags = AIRTIME_USE_RX;
        s.register_airtime(0, BE, 1000, 300, 30);
        assert_eq!(s.stas[0].airtime[BE].deficit, -2600);
        assert_eq!((s.stas[0].airtime[BE].tx_airtime, s.stas[0].airtime[BE].rx_airtime), (3000, 900));
        // 100 ms after it was scheduled the station is no longer active.
        s.airtime_flags = AIRTIME_USE_TX | AIRTIME_USE_RX;
        s.register_airtime(0, BE, 0, 500, AIRTIME_ACTIVE_DURATION_NS);
        assert_eq!(s.stas[0].airtime[BE].deficit, -2600);
        assert_eq!(s.stas[0].airtime[BE].rx_airtime, 1400);
    }
}
