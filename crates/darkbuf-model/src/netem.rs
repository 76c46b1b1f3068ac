//! netem's random delay and its correlated draws, from net/sched/sch_netem.c:
//! `get_crandom()` (a u32 stream correlated with its last value), `tabledist()` (a delay
//! of mean `mu` and spread `sigma` from a distribution table, or uniform without one),
//! and the tables tc loads for `distribution normal|pareto|paretonormal`, generated as
//! iproute2's netem/normal.c, pareto.c and paretonormal.c generate them when tc is built
//! (the files in /usr/lib/<arch>/tc/*.dist).
//!
//! The draws come from the caller's stream (netem's `prandom_u32_state(&q->prng)`), one
//! `u32` per call, so the simulator decides which stream a netem draws from.
//!
//! The pieces both netems share, the qdisc (`qdisc::netem`) and the path beyond a NIC's
//! wire (the simulator's `path.rs`): the loss models (`loss_event()`), the delay and
//! reordering draw (`tabledist()`, `q->gap`/`q->counter`), the rate's `packet_time_ns()`,
//! the tfifo (`tfifo_enqueue()`), and tc's words for them (`parse_percent()`, the
//! `loss` models).

use rand_chacha::rand_core::RngCore;
use std::collections::VecDeque;

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

/// tc's `set_percent()`: `rint(fraction * UINT32_MAX)`, how netem holds a probability.
pub fn set_percent(fraction: f64) -> u32 {
    (fraction * u32::MAX as f64).round_ties_even() as u32
}

/// tc's `parse_percent()`: a fraction in 0..=1 from a number of percent (`%` optional).
pub fn parse_percent(w: &str) -> Result<f64, String> {
    match w.strip_suffix('%').unwrap_or(w).parse::<f64>() {
        Ok(v) if (0.0..=100.0).contains(&v) => Ok(v / 100.0),
        Ok(_) => Err(format!("{w} is out of range")),
        Err(_) => Err(format!("\"{w}\" is not a percentage")),
    }
}

/// A probability and its correlation as tc takes them (`duplicate P [C]`, `corrupt P
/// [C]`, `reorder P [C]`), each held as `set_percent()` holds it.
pub fn parse_probability(words: &[&str]) -> Result<(u32, u32), String> {
    match words {
        [] => Err("empty".into()),
        [p] => Ok((set_percent(parse_percent(p)?), 0)),
        [p, c] => Ok((set_percent(parse_percent(p)?), set_percent(parse_percent(c)?))),
        _ => Err("at most a probability and a correlation".into()),
    }
}

/// netem's loss models (`tc qdisc ... netem loss random|state|gemodel ...`), each
/// probability held as netem holds it: a fraction of `u32::MAX` (tc's `set_percent()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossModel {
    /// `loss random P [C]` (`CLG_RANDOM`): `q->loss` and `loss_cor.rho`.
    Random { loss: u32, corr: u32 },
    /// `loss state p13 [p31 [p32 [p23 [p14]]]]` (`CLG_4_STATES`, the GI model).
    State { p13: u32, p31: u32, p32: u32, p23: u32, p14: u32 },
    /// `loss gemodel p [r [1-h [1-k]]]` (`CLG_GILB_ELL`): `h` as the kernel holds it
    /// (tc takes 1-h), `k1` = 1-k as given.
    Gemodel { p: u32, r: u32, h: u32, k1: u32 },
}

/// The words tc takes after `loss` (iproute2's q_netem.c): a percentage (`"1%"`,
/// `"random 1% 25%"`: random loss with its correlation), `"state p13 [p31 [p32 [p23
/// [p14]]]]"` with tc's defaults p31 = 1 - p13, p32 = 0, p23 = 1, p14 = 0, or
/// `"gemodel p [r [1-h [1-k]]]"` with r = 1 - p, h = 0 (every packet in the bad state
/// lost), 1-k = 0. `None` for a random loss of 0 (tc sends none).
pub fn parse_loss(words: &[&str]) -> Result<Option<LossModel>, String> {
    let (model, args) = match words.split_first() {
        None => return Err("empty".into()),
        Some((m, rest)) if ["random", "state", "gemodel"].contains(m) => (*m, rest),
        Some(_) => ("random", words),
    };
    let fr: Vec<f64> = args.iter().map(|w| parse_percent(w)).collect::<Result<_, _>>()?;
    let most = match model {
        "random" => 2,
        "state" => 5,
        _ => 4,
    };
    if fr.is_empty() {
        return Err(format!("`{model}` needs its first probability"));
    }
    if fr.len() > most {
        return Err(format!("`{model}` takes at most {most} probabilities"));
    }
    let arg = |i: usize, default: f64| set_percent(fr.get(i).copied().unwrap_or(default));
    let loss = match model {
        "random" => LossModel::Random { loss: arg(0, 0.0), corr: arg(1, 0.0) },
        "state" => LossModel::State { p13: arg(0, 0.0), p31: arg(1, 1.0 - fr[0]), p32: arg(2, 0.0), p23: arg(3, 1.0), p14: arg(4, 0.0) },
        _ => LossModel::Gemodel {
            p: arg(0, 0.0),
            r: arg(1, 1.0 - fr[0]),
            h: fr.get(2).map_or(0, |&one_minus_h| u32::MAX - set_percent(one_minus_h)),
            k1: arg(3, 0.0),
        },
    };
    Ok((!matches!(loss, LossModel::Random { loss: 0, .. })).then_some(loss))
}

/// A netem's loss model with its `struct clgstate` and `loss_cor`.
#[derive(Clone, Copy, Debug)]
pub struct LossState {
    model: LossModel,
    state: ClgState,
    cor: CrndState,
}

/// `clg->state`: the 4-state model's four, Gilbert-Elliott's two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClgState {
    TxInGapPeriod,
    TxInBurstPeriod,
    LostInGapPeriod,
    LostInBurstPeriod,
    GoodState,
    BadState,
}

impl LossState {
    /// `get_loss_clg()`: the 4-state model starts in TX_IN_GAP_PERIOD,
    /// Gilbert-Elliott in GOOD_STATE; random loss's correlation from `crnd(rho)`
    /// (`init_crandom()`).
    pub fn new(model: LossModel, crnd: &mut impl FnMut(u32) -> CrndState) -> Self {
        let state = match model {
            LossModel::Gemodel { .. } => ClgState::GoodState,
            _ => ClgState::TxInGapPeriod,
        };
        let cor = match model {
            LossModel::Random { corr, .. } => crnd(corr),
            _ => CrndState::default(),
        };
        LossState { model, state, cor }
    }

    pub fn model(&self) -> LossModel {
        self.model
    }

    /// `loss_event()`: whether the next packet is lost.
    pub fn loss_event(&mut self, rng: &mut impl RngCore) -> bool {
        match self.model {
            // "Random packet drop 0 => none, ~0 => all".
            LossModel::Random { loss, .. } => loss != 0 && loss >= self.cor.get_crandom(rng),
            LossModel::State { p13, p31, p32, p23, p14 } => self.loss_4state(rng.next_u32(), [p13, p31, p32, p14, p23]),
            LossModel::Gemodel { p, r, h, k1 } => self.loss_gilb_ell(rng, [p, r, h, k1]),
        }
    }

    /// `loss_4state()` with `a` = `clg->a1..a5` (p13, p31, p32, p14, p23); the sums
    /// wrap as the kernel's `u32` additions do.
    fn loss_4state(&mut self, rnd: u32, a: [u32; 5]) -> bool {
        let [a1, a2, a3, a4, a5] = a;
        use ClgState::*;
        match self.state {
            TxInGapPeriod => {
                if rnd < a4 {
                    self.state = LostInGapPeriod;
                    return true;
                } else if rnd < a1.wrapping_add(a4) {
                    self.state = LostInBurstPeriod;
                    return true;
                }
            }
            TxInBurstPeriod => {
                if rnd < a5 {
                    self.state = LostInBurstPeriod;
                    return true;
                }
            }
            LostInBurstPeriod => {
                if rnd < a3 {
                    self.state = TxInBurstPeriod;
                } else if rnd < a2.wrapping_add(a3) {
                    self.state = TxInGapPeriod;
                } else {
                    return true;
                }
            }
            LostInGapPeriod => self.state = TxInGapPeriod,
            GoodState | BadState => {}
        }
        false
    }

    /// `loss_gilb_ell()` with `a` = `clg->a1..a4` (p, r, h, 1-k): a transition draw,
    /// then a loss draw.
    fn loss_gilb_ell(&mut self, rng: &mut impl RngCore, a: [u32; 4]) -> bool {
        let [a1, a2, a3, a4] = a;
        match self.state {
            ClgState::BadState => {
                if rng.next_u32() < a2 {
                    self.state = ClgState::GoodState;
                }
                rng.next_u32() > a3
            }
            _ => {
                if rng.next_u32() < a1 {
                    self.state = ClgState::BadState;
                }
                rng.next_u32() < a4
            }
        }
    }
}

/// netem's random delay and reordering: `q->jitter`, `q->delay_cor`, `q->delay_dist`,
/// `q->reorder`, `q->reorder_cor`, `q->gap` and `q->counter`.
#[derive(Clone, Debug)]
pub struct NetemJitter {
    /// `q->jitter`, ns (netem caps it at `INT_MAX`).
    pub jitter: i32,
    pub delay_cor: CrndState,
    /// `q->delay_dist` (`None`: uniform).
    pub dist: Option<Box<[i16]>>,
    /// `q->reorder`, `q->reorder_cor`, `q->gap` (0: no reordering) and `q->counter`.
    pub reorder: u32,
    pub reorder_cor: CrndState,
    pub gap: u32,
    pub counter: u32,
}

impl NetemJitter {
    /// The reordering test of `netem_enqueue()`: whether this packet goes to the head
    /// of the queue, due at once ("Do re-ordering by putting one out of N packets at
    /// the front of the queue"; `q->counter` restarts). The correlated draw is taken
    /// only when the gap allows a reordering, as C's `||` evaluates.
    pub fn reorder_now(&mut self, rng: &mut impl RngCore) -> bool {
        if self.gap == 0 || self.counter < self.gap - 1 || self.reorder < self.reorder_cor.get_crandom(rng) {
            return false;
        }
        self.counter = 0;
        true
    }

    /// The delay of a packet that is not reordered: `tabledist(q->latency, q->jitter,
    /// ...)`, then `++q->counter`.
    pub fn delay(&mut self, latency: i64, rng: &mut impl RngCore) -> i64 {
        let d = tabledist(latency, self.jitter, &mut self.delay_cor, rng, self.dist.as_deref());
        self.counter += 1;
        d
    }
}

/// netem's `rate RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]`: `q->rate` (bytes/s),
/// `q->packet_overhead`, `q->cell_size`, `q->cell_overhead`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetemRate {
    pub rate: u64,
    pub packet_overhead: i32,
    pub cell_size: u32,
    pub cell_overhead: i32,
}

impl NetemRate {
    /// `packet_time_ns()`: the time `len` bytes take at the rate, with the per-packet
    /// overhead, then rounded up to whole cells of `cell_size + cell_overhead` bytes.
    /// The kernel's unsigned arithmetic (a negative overhead subtracts; the cell count
    /// is u32) is kept. `rate` must not be 0.
    pub fn packet_time_ns(&self, len: u64) -> u64 {
        let mut len = len.wrapping_add(self.packet_overhead as i64 as u64);
        if self.cell_size != 0 {
            // reciprocal_divide() of the u32 length: an exact division.
            let mut cells = (len as u32) / self.cell_size;
            if len > cells as u64 * self.cell_size as u64 {
                cells += 1;
            }
            len = (cells.wrapping_mul(self.cell_size.wrapping_add(self.cell_overhead as u32))) as u64;
        }
        ((len as u128 * 1_000_000_000) / self.rate as u128).min(u64::MAX as u128) as u64
    }
}

/// netem's tfifo (`q->t_root` and the linear list `q->t_head`..`q->t_tail` of
/// `tfifo_enqueue()`): packets by time to send; a packet due no earlier than the last
/// goes to the tail, others in time order after any of equal time, so packets of equal
/// time leave in arrival order (`netem_peek()` prefers the list on a tie, and a list
/// packet of equal time is always the older one).
#[derive(Clone, Debug, Default)]
pub struct Tfifo<T> {
    q: VecDeque<(u64, T)>,
}

impl<T: Copy> Tfifo<T> {
    pub fn with_capacity(n: usize) -> Self {
        Tfifo { q: VecDeque::with_capacity(n) }
    }

    /// `tfifo_enqueue()` of `item` due at `time_to_send`.
    #[inline]
    pub fn enqueue(&mut self, time_to_send: u64, item: T) {
        if self.q.back().is_none_or(|e| e.0 <= time_to_send) {
            self.q.push_back((time_to_send, item));
        } else {
            let i = self.q.partition_point(|e| e.0 <= time_to_send);
            self.q.insert(i, (time_to_send, item));
        }
    }

    /// `netem_peek()`: the earliest packet and its time to send.
    #[inline]
    pub fn peek(&self) -> Option<(u64, T)> {
        self.q.front().copied()
    }

    /// `netem_erase_head()` of what `peek()` returned.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, T)> {
        self.q.pop_front()
    }

    /// The latest time to send held (`skb_rb_last()` and `q->t_tail`, the later one).
    pub fn last_time_to_send(&self) -> Option<u64> {
        self.q.back().map(|e| e.0)
    }

    /// `q->t_len`.
    pub fn len(&self) -> usize {
        self.q.len()
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &(u64, T)> {
        self.q.iter()
    }
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

    // The loss models (moved here from the simulator's path.rs with the models).


    fn no_cor(rho: u32) -> CrndState {
        CrndState::new(rho, 0)
    }

    fn rng() -> rand_chacha::ChaCha8Rng {
        use rand_chacha::rand_core::SeedableRng;
        rand_chacha::ChaCha8Rng::seed_from_u64(7)
    }

    /// The fraction of `n` frames `model` loses.
    fn loss_rate(model: LossModel, n: u32) -> f64 {
        let (mut l, mut r) = (LossState::new(model, &mut |rho| CrndState::new(rho, 0)), rng());
        (0..n).filter(|_| l.loss_event(&mut r)).count() as f64 / n as f64
    }

    #[test]
    fn certain_transitions_give_exact_patterns() {
        let all = u32::MAX;
        // Gilbert-Elliott, p = r = 100%, h = 0, 1-k = 0: good and bad alternate, and
        // only the bad state loses.
        let mut ge = LossState::new(LossModel::Gemodel { p: all, r: all, h: 0, k1: 0 }, &mut no_cor);
        let mut r = rng();
        let got: Vec<bool> = (0..8).map(|_| ge.loss_event(&mut r)).collect();
        assert_eq!(got, [false, true, false, true, false, true, false, true]);
        // 4-state, p13 = 100% with tc's default p31 = 0: into a burst, never out.
        let mut st = LossState::new(LossModel::State { p13: all, p31: 0, p32: 0, p23: all, p14: 0 }, &mut no_cor);
        assert!((0..8).all(|_| st.loss_event(&mut r)));
        // ... and with p31 = 100%: a loss, then back to the gap, alternating.
        let mut st = LossState::new(LossModel::State { p13: all, p31: all, p32: 0, p23: all, p14: 0 }, &mut no_cor);
        let got: Vec<bool> = (0..6).map(|_| st.loss_event(&mut r)).collect();
        assert_eq!(got, [true, false, true, false, true, false]);
        // Random 0 never loses, 100% always.
        let mut none = LossState::new(LossModel::Random { loss: 0, corr: 0 }, &mut no_cor);
        let mut every = LossState::new(LossModel::Random { loss: all, corr: 0 }, &mut no_cor);
        assert!((0..100).all(|_| !none.loss_event(&mut r) && every.loss_event(&mut r)));
    }

    /// The chains' long-run loss rates: random p; Gilbert-Elliott's
    /// p/(p+r) x (1-h) + r/(p+r) x (1-k) ("gemodel 1% 10% 70% 0.1%": 0.0645); the GI
    /// model with isolated losses only (p14) at p14/(1+p14).
    #[test]
    fn long_run_loss_rates_match_the_chains() {
        let n = 2_000_000;
        let close = |got: f64, want: f64| assert!((got - want).abs() < 0.03 * want, "{got} vs {want}");
        close(loss_rate(LossModel::Random { loss: set_percent(0.01), corr: 0 }, n), 0.01);
        let (p, r, one_minus_h, k1) = (0.01, 0.10, 0.70, 0.001);
        let ge = LossModel::Gemodel { p: set_percent(p), r: set_percent(r), h: u32::MAX - set_percent(one_minus_h), k1: set_percent(k1) };
        close(loss_rate(ge, n), p / (p + r) * one_minus_h + r / (p + r) * k1);
        let p14 = 0.02;
        let gi = LossModel::State { p13: 0, p31: set_percent(1.0), p32: 0, p23: set_percent(1.0), p14: set_percent(p14) };
        close(loss_rate(gi, n), p14 / (1.0 + p14));
    }

    /// Random loss with a 100% correlation (rho + 1 = 2^32): every draw repeats the
    /// first `last`, so `init_crandom()`'s value decides every frame (`get_crandom()`).
    #[test]
    fn full_loss_correlation_repeats_the_first_decision() {
        let model = LossModel::Random { loss: set_percent(0.5), corr: u32::MAX };
        let mut r = rng();
        let mut low = LossState::new(model, &mut |rho| CrndState::new(rho, 0));
        assert!((0..100).all(|_| low.loss_event(&mut r)));
        let mut high = LossState::new(model, &mut |rho| CrndState::new(rho, u32::MAX));
        assert!((0..100).all(|_| !high.loss_event(&mut r)));
    }
}
