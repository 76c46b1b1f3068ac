//! netem's random delay and its correlated draws, from net/sched/sch_netem.c:
//! `get_crandom()` (a u32 stream correlated with its last value), `tabledist()` (a delay
//! of mean `mu` and spread `sigma` from a distribution table, or uniform without one),
//! and the tables tc loads for `distribution normal|pareto|paretonormal`, generated as
//! iproute2's netem/normal.c, pareto.c and paretonormal.c generate them when tc is built
//! (the files in /usr/lib/<arch>/tc/*.dist).
//!
//! The draws come from the caller's stream (netem's `prandom_u32_state(&q->prng)`), one
//! `u32` per call, so the simulator decides which stream a netem draws from.

use rand_chacha::rand_core::RngCore;

/// `NETEM_DIST_SCALE` (include/uapi/linux/pkt_sched.h): table entries are multiples of
/// sigma scaled by this.
pub const NETEM_DIST_SCALE: i64 = 8192;
/// `TABLESIZE` of iproute2's generators: the inverse CDF is sampled at 16384 points, and
/// every fourth one is written: a table of 4096 entries.
const TABLESIZE: usize = 16384;

/// tc's `distribution`: the shape of netem's delay around `delay`, `jitter` wide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Distribution {
    /// No table (the kernel's default): uniform over `delay ± jitter`.
    Uniform,
    /// normal.dist.
    Normal,
    /// pareto.dist (a = 3).
    Pareto,
    /// paretonormal.dist: a quarter normal, three quarters pareto.
    Paretonormal,
}

impl Distribution {
    /// The name tc takes after `distribution`.
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Uniform => "uniform",
            Distribution::Normal => "normal",
            Distribution::Pareto => "pareto",
            Distribution::Paretonormal => "paretonormal",
        }
    }

    pub fn from_name(s: &str) -> Option<Distribution> {
        [Distribution::Uniform, Distribution::Normal, Distribution::Pareto, Distribution::Paretonormal].into_iter().find(|d| d.name() == s)
    }

    /// The table tc hands the kernel (`TCA_NETEM_DELAY_DIST`); `None` for uniform.
    pub fn table(self) -> Option<Vec<i16>> {
        match self {
            Distribution::Uniform => None,
            Distribution::Normal => {
                let t = normal_table();
                Some((0..TABLESIZE).step_by(4).map(|i| clamp_short(rint(t[i] * NETEM_DIST_SCALE as f64) as i64)).collect())
            }
            Distribution::Pareto => Some((0..TABLESIZE).step_by(4).map(|i| pareto_value(i) as i16).collect()),
            Distribution::Paretonormal => {
                let t = normal_table();
                Some(
                    (0..TABLESIZE)
                        .step_by(4)
                        .map(|i| {
                            let norm = rint(t[i] * NETEM_DIST_SCALE as f64) as i64;
                            // C's int division truncates toward zero, as Rust's does.
                            clamp_short((norm + 3 * pareto_value(i)) / 4)
                        })
                        .collect(),
                )
            }
        }
    }
}

/// C's `rint()` in the default rounding mode: to nearest, ties to even.
fn rint(x: f64) -> f64 {
    x.round_ties_even()
}

fn clamp_short(v: i64) -> i16 {
    v.clamp(i16::MIN as i64, i16::MAX as i64) as i16
}

/// normal.c's inverse CDF: for x from -10 by 0.00005, `table[rint(TABLESIZE * Φ(x))] = x`,
/// so each entry holds the last x whose CDF rounds to it. The loop's `x` accumulates
/// in a double, as the C program's does.
fn normal_table() -> Vec<f64> {
    let mut table = vec![0.0f64; TABLESIZE + 1];
    let mut x = -10.0f64;
    while x < 10.05 {
        let cdf = 0.5 + 0.5 * libm::erf(x / std::f64::consts::SQRT_2);
        table[rint(TABLESIZE as f64 * cdf) as usize] = x;
        x += 0.00005;
    }
    table
}

/// pareto.c's entry for sample `i` (0, 4, 8, ...: pareto.c counts down from 65536 by 16,
/// paretonormal.c's `paretovalue()` takes 65536 - 4i): the inverse CDF of a Pareto of
/// shape 3, shifted by its mean 1.5 and scaled by 4/3 (its standard deviation is not
/// finite at a = 3; this is NISTnet's choice), capped at 32767.
fn pareto_value(i: usize) -> i64 {
    const A: f64 = 3.0;
    let u = (65536 - 4 * i as i64) as f64 / 65536.0;
    let v = (1.0 / u.powf(1.0 / A) - 1.5) * (4.0 / 3.0) * NETEM_DIST_SCALE as f64;
    rint(v.min(32767.0)) as i64
}

/// `struct crndstate`: a correlation (`rho`, a fraction of `u32::MAX`) and the last
/// value drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CrndState {
    pub last: u32,
    pub rho: u32,
}

impl CrndState {
    /// `init_crandom()`: the kernel seeds `last` with `get_random_u32()`; the caller
    /// gives that draw.
    pub fn new(rho: u32, last: u32) -> Self {
        CrndState { last, rho }
    }

    /// `get_crandom()`: without correlation the stream's next value; with it, the
    /// weighted mean `(value x (2^32 - rho') + last x rho') >> 32`, rho' = rho + 1,
    /// which becomes `last`. (So a correlated stream is not uniform: its values crowd
    /// towards the middle, a known property of netem's correlation.)
    pub fn get_crandom(&mut self, rng: &mut impl RngCore) -> u32 {
        let value = rng.next_u32() as u64;
        if self.rho == 0 {
            return value as u32;
        }
        let rho = self.rho as u64 + 1;
        let answer = (value * ((1u64 << 32) - rho) + self.last as u64 * rho) >> 32;
        self.last = answer as u32;
        answer as u32
    }
}

/// `tabledist()`: a delay of mean `mu` and spread `sigma` (ns; netem caps `sigma` at
/// `INT_MAX`). Without jitter it is `mu` and draws nothing. Uniform without a table:
/// `(rnd % 2σ) + μ - σ`. With one, an entry `t` at `rnd % size` scaled by sigma with the
/// kernel's rounding: `x = (σ % SCALE) * t ± SCALE/2`, then `x / SCALE + (σ / SCALE) * t + μ`.
/// The result may be negative when the jitter exceeds the delay, as in the kernel.
pub fn tabledist(mu: i64, sigma: i32, state: &mut CrndState, rng: &mut impl RngCore, dist: Option<&[i16]>) -> i64 {
    if sigma == 0 {
        return mu;
    }
    let rnd = state.get_crandom(rng);
    let Some(table) = dist else {
        return ((rnd % (2 * sigma as u32)) as i64 + mu) - sigma as i64;
    };
    let t = table[rnd as usize % table.len()] as i64;
    let mut x = (sigma as i64 % NETEM_DIST_SCALE) * t;
    if x >= 0 {
        x += NETEM_DIST_SCALE / 2;
    } else {
        x -= NETEM_DIST_SCALE / 2;
    }
    x / NETEM_DIST_SCALE + (sigma as i64 / NETEM_DIST_SCALE) * t + mu
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream that returns the given values in turn.
    struct Seq(Vec<u32>, usize);
    impl RngCore for Seq {
        fn next_u32(&mut self) -> u32 {
            self.1 += 1;
            self.0[self.1 - 1]
        }
        fn next_u64(&mut self) -> u64 {
            unimplemented!()
        }
        fn fill_bytes(&mut self, _: &mut [u8]) {
            unimplemented!()
        }
        fn try_fill_bytes(&mut self, _: &mut [u8]) -> Result<(), rand_chacha::rand_core::Error> {
            unimplemented!()
        }
    }

    #[test]
    fn crandom_without_correlation_is_the_stream() {
        let mut s = CrndState::new(0, 7);
        let mut r = Seq(vec![5, u32::MAX], 0);
        assert_eq!((s.get_crandom(&mut r), s.get_crandom(&mut r)), (5, u32::MAX));
        assert_eq!(s.last, 7, "last only moves with a correlation");
    }

    /// rho = 50% (2^31 - 1 as tc sets it, so rho' = 2^31): the mean of the new value and
    /// the last, rounded down, which becomes the last.
    #[test]
    fn crandom_with_correlation_averages_with_the_last_value() {
        let half = (1u32 << 31) - 1;
        let mut s = CrndState::new(half, 1000);
        let mut r = Seq(vec![3000, 0, u32::MAX], 0);
        assert_eq!(s.get_crandom(&mut r), 2000);
        assert_eq!(s.get_crandom(&mut r), 1000);
        // (0xffffffff x 2^31 + 1000 x 2^31) >> 32 = (0xffffffff + 1000) / 2, floored.
        assert_eq!(s.get_crandom(&mut r), ((u32::MAX as u64 + 1000) / 2) as u32);
        // rho = 100% (u32::MAX): rho' = 2^32, the value's weight is 0.
        let mut s = CrndState::new(u32::MAX, 42);
        assert_eq!(s.get_crandom(&mut Seq(vec![123_456], 0)), 42);
    }

    #[test]
    fn tabledist_uniform_is_delay_plus_or_minus_jitter() {
        let mut s = CrndState::default();
        // No jitter: mu, and no draw (the stream is empty).
        assert_eq!(tabledist(5_000_000, 0, &mut s, &mut Seq(vec![], 0), None), 5_000_000);
        let mut r = Seq(vec![0, 1_999_999, 2_000_000, 3_000_001], 0);
        let got: Vec<i64> = (0..4).map(|_| tabledist(5_000_000, 1_000_000, &mut s, &mut r, None)).collect();
        assert_eq!(got, [4_000_000, 5_999_999, 4_000_000, 5_000_001]);
        // More jitter than delay goes below zero, as the kernel's s64 does.
        assert_eq!(tabledist(1_000, 5_000, &mut s, &mut Seq(vec![0], 0), None), -4_000);
    }

    /// The table's arithmetic: σ = 1 ms (1,000,000 ns: σ / 8192 = 122, σ % 8192 = 576),
    /// entry t = 8192 (one sigma): 576 x 8192 + 4096 = 4,722,688, / 8192 = 576 (C
    /// truncation), + 122 x 8192 = 999,424, so 1,000,000 + mu; t = -8192: -1,000,000.
    #[test]
    fn tabledist_scales_the_entry_by_sigma() {
        let table = [8192i16, -8192, 0, 4096];
        let mut s = CrndState::default();
        let mut r = Seq(vec![0, 1, 2, 3, 4], 0);
        let got: Vec<i64> = (0..5).map(|_| tabledist(10_000_000, 1_000_000, &mut s, &mut r, Some(&table))).collect();
        // t = 4096: 576 x 4096 + 4096 = 2,363,392 / 8192 = 288 (288.5 truncated);
        // 122 x 4096 = 499,712; 500,000.
        assert_eq!(got, [11_000_000, 9_000_000, 10_000_000, 10_500_000, 11_000_000]);
    }

    /// The generated tables against the ones iproute2 ships (Debian's iproute2 6.x,
    /// /usr/lib/x86_64-linux-gnu/tc/*.dist on the development VM, read on 2026-11-27):
    /// every entry agreed; here the first and last four, the middle one, the sum, and
    /// the sum weighted by position (1-based), computed from those files.
    #[test]
    fn tables_are_iproute2s() {
        let fingerprint = |t: &[i16]| {
            let sum: i64 = t.iter().map(|&v| v as i64).sum();
            let weighted: i64 = t.iter().enumerate().map(|(i, &v)| (i as i64 + 1) * v as i64).sum();
            (t.len(), sum, weighted, t[2048])
        };
        let normal = Distribution::Normal.table().unwrap();
        assert_eq!(fingerprint(&normal), (4096, -26_163, 38_718_192_955, 0));
        assert_eq!((&normal[..4], &normal[4092..]), (&[-32768i16, -28307, -26871, -25967][..], &[25450i16, 26164, 27159, 28858][..]));
        let pareto = Distribution::Pareto.table().unwrap();
        assert_eq!(fingerprint(&pareto), (4096, -1_123_786, 22_904_699_865, -2622));
        assert_eq!((&pareto[..4], &pareto[4092..]), (&[-5461i16, -5460, -5460, -5459][..], &[32767i16; 4][..]));
        let paretonormal = Distribution::Paretonormal.table().unwrap();
        assert_eq!(fingerprint(&paretonormal), (4096, -848_968, 26_857_509_890, -1966));
        assert_eq!((&paretonormal[..4], &paretonormal[4092..]), (&[-12305i16, -11171, -10812, -10586][..], &[30937i16, 31116, 31365, 31789][..]));
        assert_eq!(Distribution::Uniform.table(), None);
        for d in [Distribution::Uniform, Distribution::Normal, Distribution::Pareto, Distribution::Paretonormal] {
            assert_eq!(Distribution::from_name(d.name()), Some(d));
        }
    }
}

