//! Dynamic interrupt moderation: mirrors lib/dim/net_dim.c and lib/dim/dim.c
//! (`net_dim()`, `net_dim_decision()`, `net_dim_stats_compare()`, `net_dim_step()`,
//! `dim_calc_stats()`, `dim_turn()`, `dim_park_on_top()`, `dim_park_tired()`) with the
//! TX profiles of `tx_profile[]`, as mlx5e runs it per send queue
//! (`mlx5e_handle_tx_dim()` at the end of each NAPI poll, `ethtool -C adaptive-tx on`),
//! and with the RX profiles of `rx_profile[]` per receive queue (`mlx5e_handle_rx_dim()`,
//! `adaptive-rx on`).
//!
//! Every `DIM_NEVENTS` (64) completion events, DIM compares the traffic rate of the
//! last measurement (bytes, then packets per ms, then fewer events per ms) with the
//! one before, and walks the profile table one step in the direction that improved
//! it: right toward longer periods (fewer interrupts), left toward shorter ones; it
//! parks when it turned around at the best profile or grew tired of stepping.
//!
//! The driver applies a new profile from a workqueue (`mlx5e_tx_dim_work()`); here
//! it applies at once and measurement restarts (`DIM_START_MEASURE`).

/// `DIM_NEVENTS`: completion events per measurement.
pub const DIM_NEVENTS: u16 = 64;
/// `NET_DIM_PARAMS_NUM_PROFILES`.
pub const NUM_PROFILES: usize = 5;
/// `NET_DIM_DEF_PROFILE_EQE` / `_CQE`: the moderation a queue starts with.
pub const DEF_PROFILE: usize = 1;

/// `struct dim_cq_moder`: a period (µs) and a completion count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqModer {
    pub usec: u32,
    pub pkts: u32,
}

/// `NET_DIM_TX_EQE_PROFILES` (period from the last event) and `NET_DIM_TX_CQE_PROFILES`
/// (period from the first completion, mlx5's `tx_cqe_moder`).
pub const TX_EQE_PROFILES: [CqModer; NUM_PROFILES] = [
    CqModer { usec: 1, pkts: 128 },
    CqModer { usec: 8, pkts: 128 },
    CqModer { usec: 32, pkts: 128 },
    CqModer { usec: 64, pkts: 128 },
    CqModer { usec: 128, pkts: 128 },
];
pub const TX_CQE_PROFILES: [CqModer; NUM_PROFILES] = [
    CqModer { usec: 5, pkts: 128 },
    CqModer { usec: 8, pkts: 64 },
    CqModer { usec: 16, pkts: 32 },
    CqModer { usec: 32, pkts: 32 },
    CqModer { usec: 64, pkts: 32 },
];

/// `NET_DIM_RX_EQE_PROFILES` and `NET_DIM_RX_CQE_PROFILES` (lib/dim/net_dim.c). mlx5e
/// moderates RX from the CQE where the device can (`cq_period_start_from_cqe`,
/// `mlx5e_build_nic_params()`), so it starts at 8 µs / 128 packets.
pub const RX_EQE_PROFILES: [CqModer; NUM_PROFILES] = [
    CqModer { usec: 1, pkts: 256 },
    CqModer { usec: 8, pkts: 256 },
    CqModer { usec: 64, pkts: 256 },
    CqModer { usec: 128, pkts: 256 },
    CqModer { usec: 256, pkts: 256 },
];
pub const RX_CQE_PROFILES: [CqModer; NUM_PROFILES] = [
    CqModer { usec: 2, pkts: 256 },
    CqModer { usec: 8, pkts: 128 },
    CqModer { usec: 16, pkts: 64 },
    CqModer { usec: 32, pkts: 64 },
    CqModer { usec: 64, pkts: 64 },
];

/// `net_dim_get_rx_moderation()`.
pub fn rx_moderation(cqe_mode: bool, ix: usize) -> CqModer {
    if cqe_mode {
        RX_CQE_PROFILES[ix]
    } else {
        RX_EQE_PROFILES[ix]
    }
}

/// `net_dim_get_tx_moderation()`.
pub fn tx_moderation(cqe_mode: bool, ix: usize) -> CqModer {
    if cqe_mode {
        TX_CQE_PROFILES[ix]
    } else {
        TX_EQE_PROFILES[ix]
    }
}

/// `struct dim_sample`: the queue's counters at a point in time.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sample {
    pub time_ns: u64,
    pub pkt_ctr: u32,
    pub byte_ctr: u32,
    pub event_ctr: u16,
}

/// `struct dim_stats`: rates per millisecond.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub ppms: u32,
    pub bpms: u32,
    pub epms: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    StartMeasure,
    MeasureInProgress,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TuneState {
    ParkingOnTop,
    ParkingTired,
    GoingRight,
    GoingLeft,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Compare {
    Worse,
    Same,
    Better,
}

/// `struct dim`.
#[derive(Clone, Debug)]
pub struct Dim {
    state: State,
    pub tune_state: TuneState,
    pub profile_ix: usize,
    prev_stats: Stats,
    start: Sample,
    steps_right: u32,
    steps_left: u32,
    tired: u32,
}

impl Dim {
    pub fn new(profile_ix: usize) -> Dim {
        Dim {
            state: State::StartMeasure,
            tune_state: TuneState::GoingRight,
            profile_ix,
            prev_stats: Stats::default(),
            start: Sample::default(),
            steps_right: 0,
            steps_left: 0,
            tired: 0,
        }
    }

    /// `net_dim()`, then the driver's work (`mlx5e_tx_dim_work()`,
    /// `mlx5e_rx_dim_work()`) applying a new profile at once: measurement restarts from
    /// the same sample (`DIM_START_MEASURE`). Returns the new profile index.
    pub fn net_dim_applied(&mut self, s: Sample) -> Option<usize> {
        let ix = self.net_dim(s)?;
        self.net_dim(s);
        Some(ix)
    }

    /// `net_dim()`: feed the queue's counters; returns the new profile index when DIM
    /// decided to change it (the caller applies it: measurement restarts).
    pub fn net_dim(&mut self, end: Sample) -> Option<usize> {
        if self.state == State::MeasureInProgress {
            let nevents = end.event_ctr.wrapping_sub(self.start.event_ctr);
            if nevents < DIM_NEVENTS {
                return None;
            }
            if let Some(curr) = calc_stats(&self.start, &end) {
                if self.decision(curr) {
                    self.state = State::StartMeasure;
                    return Some(self.profile_ix);
                }
            } else {
                return None;
            }
        }
        self.start = end;
        self.state = State::MeasureInProgress;
        None
    }

    /// `net_dim_decision()`.
    fn decision(&mut self, curr: Stats) -> bool {
        let (prev_state, prev_ix) = (self.tune_state, self.profile_ix);
        match self.tune_state {
            TuneState::ParkingOnTop => {
                if compare(&curr, &self.prev_stats) != Compare::Same {
                    self.exit_parking();
                }
            }
            TuneState::ParkingTired => {
                self.tired -= 1;
                if self.tired == 0 {
                    self.exit_parking();
                }
            }
            TuneState::GoingRight | TuneState::GoingLeft => {
                if compare(&curr, &self.prev_stats) != Compare::Better {
                    self.turn();
                }
                if self.on_top() {
                    self.park_on_top();
                } else {
                    match self.step() {
                        Step::OnEdge => self.park_on_top(),
                        Step::TooTired => self.park_tired(),
                        Step::Stepped => {}
                    }
                }
            }
        }
        if prev_state != TuneState::ParkingOnTop || self.tune_state != TuneState::ParkingOnTop {
            self.prev_stats = curr;
        }
        self.profile_ix != prev_ix
    }

    /// `net_dim_step()`.
    fn step(&mut self) -> Step {
        if self.tired == (NUM_PROFILES as u32) * 2 {
            return Step::TooTired;
        }
        match self.tune_state {
            TuneState::ParkingOnTop | TuneState::ParkingTired => {}
            TuneState::GoingRight => {
                if self.profile_ix == NUM_PROFILES - 1 {
                    return Step::OnEdge;
                }
                self.profile_ix += 1;
                self.steps_right += 1;
            }
            TuneState::GoingLeft => {
                if self.profile_ix == 0 {
                    return Step::OnEdge;
                }
                self.profile_ix -= 1;
                self.steps_left += 1;
            }
        }
        self.tired += 1;
        Step::Stepped
    }

    /// `net_dim_exit_parking()`.
    fn exit_parking(&mut self) {
        self.tune_state = if self.profile_ix > 0 { TuneState::GoingLeft } else { TuneState::GoingRight };
        self.step();
    }

    /// `dim_on_top()`: turned around right after a single step.
    fn on_top(&self) -> bool {
        match self.tune_state {
            TuneState::ParkingOnTop | TuneState::ParkingTired => true,
            TuneState::GoingRight => self.steps_left > 1 && self.steps_right == 1,
            TuneState::GoingLeft => self.steps_right > 1 && self.steps_left == 1,
        }
    }

    /// `dim_turn()`.
    fn turn(&mut self) {
        match self.tune_state {
            TuneState::GoingRight => {
                self.tune_state = TuneState::GoingLeft;
                self.steps_left = 0;
            }
            TuneState::GoingLeft => {
                self.tune_state = TuneState::GoingRight;
                self.steps_right = 0;
            }
            _ => {}
        }
    }

    /// `dim_park_on_top()`.
    fn park_on_top(&mut self) {
        self.steps_right = 0;
        self.steps_left = 0;
        self.tired = 0;
        self.tune_state = TuneState::ParkingOnTop;
    }

    /// `dim_park_tired()`.
    fn park_tired(&mut self) {
        self.steps_right = 0;
        self.steps_left = 0;
        self.tune_state = TuneState::ParkingTired;
    }
}

enum Step {
    Stepped,
    TooTired,
    OnEdge,
}

/// `dim_calc_stats()`: rates per ms over the measurement, rounded up.
fn calc_stats(start: &Sample, end: &Sample) -> Option<Stats> {
    let delta_us = (end.time_ns.saturating_sub(start.time_ns) / 1000).min(u32::MAX as u64);
    if delta_us == 0 {
        return None;
    }
    let per_ms = |n: u64| (n * 1000).div_ceil(delta_us).min(u32::MAX as u64) as u32;
    Some(Stats {
        ppms: per_ms(end.pkt_ctr.wrapping_sub(start.pkt_ctr) as u64),
        bpms: per_ms(end.byte_ctr.wrapping_sub(start.byte_ctr) as u64),
        epms: per_ms(DIM_NEVENTS as u64),
    })
}

/// `IS_SIGNIFICANT_DIFF()`: more than 10% apart.
fn significant(val: u32, reference: u32) -> bool {
    reference != 0 && 100 * (val as i64 - reference as i64).unsigned_abs() / reference as u64 > 10
}

/// `net_dim_stats_compare()`: more bytes, else more packets, else fewer events per ms
/// is better.
fn compare(curr: &Stats, prev: &Stats) -> Compare {
    let better = |b: bool| if b { Compare::Better } else { Compare::Worse };
    if prev.bpms == 0 {
        return if curr.bpms > 0 { Compare::Better } else { Compare::Same };
    }
    if significant(curr.bpms, prev.bpms) {
        return better(curr.bpms > prev.bpms);
    }
    if prev.ppms == 0 {
        return if curr.ppms > 0 { Compare::Better } else { Compare::Same };
    }
    if significant(curr.ppms, prev.ppms) {
        return better(curr.ppms > prev.ppms);
    }
    if prev.epms == 0 {
        return Compare::Same;
    }
    if significant(curr.epms, prev.epms) {
        return better(curr.epms < prev.epms);
    }
    Compare::Same
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives `net_dim` from the counters `s` with one measurement of 64 events per
    /// call at the given byte rate (bytes per ms) over 1 ms; returns the profile
    /// after each.
    fn walk(d: &mut Dim, s: &mut Sample, rates: &[u32]) -> Vec<usize> {
        let mut out = Vec::new();
        for &r in rates {
            s.time_ns += 1_000_000;
            s.event_ctr = s.event_ctr.wrapping_add(DIM_NEVENTS);
            s.byte_ctr = s.byte_ctr.wrapping_add(r);
            s.pkt_ctr = s.pkt_ctr.wrapping_add(r / 1500);
            d.net_dim_applied(*s);
            out.push(d.profile_ix);
        }
        out
    }

    /// From the default profile, a first measurement with traffic is better than
    /// nothing: one step right. A steady rate is never better, so DIM turns at every
    /// measurement (2, 1, 2, 1, ...) until it has stepped 2 x 5 times, then parks
    /// tired, and leaves 10 measurements later toward shorter periods.
    #[test]
    fn a_steady_rate_tires_it() {
        let mut d = Dim::new(DEF_PROFILE);
        let mut s = Sample::default();
        d.net_dim(s);
        let p = walk(&mut d, &mut s, &[100_000; 11]);
        assert_eq!(p, vec![2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 1]);
        assert_eq!(d.tune_state, TuneState::ParkingTired);
        let p = walk(&mut d, &mut s, &[100_000; 10]);
        assert_eq!(p, vec![1, 1, 1, 1, 1, 1, 1, 1, 1, 0]);
        assert_eq!(d.tune_state, TuneState::GoingLeft);
    }

    /// Rising rates keep it stepping right to the last profile, where it parks; the
    /// same rate keeps it parked, a change of more than 10% sends it left.
    #[test]
    fn rising_rates_walk_to_the_edge() {
        let mut d = Dim::new(0);
        let mut s = Sample::default();
        d.net_dim(s);
        let p = walk(&mut d, &mut s, &[100_000, 200_000, 400_000, 800_000, 1_600_000, 1_600_000]);
        assert_eq!(p, vec![1, 2, 3, 4, 4, 4]);
        assert_eq!(d.tune_state, TuneState::ParkingOnTop);
        assert_eq!(walk(&mut d, &mut s, &[3_200_000]), vec![3]);
        assert_eq!(d.tune_state, TuneState::GoingLeft);
    }

    /// Fewer than 64 events: no decision.
    #[test]
    fn waits_for_sixty_four_events() {
        let mut d = Dim::new(DEF_PROFILE);
        d.net_dim(Sample::default());
        let s = Sample { time_ns: 1_000_000, pkt_ctr: 100, byte_ctr: 150_000, event_ctr: 63 };
        assert_eq!(d.net_dim(s), None);
        assert_eq!(d.net_dim(Sample { event_ctr: 64, ..s }), Some(2));
    }

    #[test]
    fn stats_per_ms_round_up() {
        let a = Sample { time_ns: 0, pkt_ctr: 0, byte_ctr: 0, event_ctr: 0 };
        let b = Sample { time_ns: 3_000_000, pkt_ctr: 10, byte_ctr: 15_000, event_ctr: 64 };
        assert_eq!(calc_stats(&a, &b), Some(Stats { ppms: 4, bpms: 5000, epms: 22 }));
    }

    /// The RX profiles of lib/dim/net_dim.c, and mlx5e's start: CQE mode, profile 1.
    #[test]
    fn rx_profiles_are_net_dims() {
        assert_eq!(rx_moderation(true, DEF_PROFILE), CqModer { usec: 8, pkts: 128 });
        assert_eq!(rx_moderation(true, 4), CqModer { usec: 64, pkts: 64 });
        assert_eq!(rx_moderation(false, 2), CqModer { usec: 64, pkts: 256 });
        assert_eq!(rx_moderation(false, 4), CqModer { usec: 256, pkts: 256 });
    }
}
