//! What a run measures, accumulated only inside the measured window
//! (`warmup .. warmup + duration`).

use darkbuf_measure::Hist;
use darkbuf_report::Finding;

/// A time-weighted average of a piecewise-constant integer quantity (queue depths,
/// limits). Integer arithmetic, and nothing to do when the value did not change: it is
/// updated on every packet.
#[derive(Clone, Debug, Default)]
pub struct TimeAvg {
    last_t: u64,
    last_v: u64,
    /// Sum of value x ns over the measured window so far.
    acc: u128,
    pub max: u64,
}

impl TimeAvg {
    /// The quantity changes to `v` at time `now`. Before the measured window this
    /// accumulates too; [`TimeAvg::start_window`] discards it, so the per-packet path
    /// has no window test.
    #[inline]
    pub fn set(&mut self, now: u64, v: u64) {
        if v == self.last_v {
            return;
        }
        self.acc += self.last_v as u128 * (now - self.last_t) as u128;
        self.max = self.max.max(v);
        self.last_t = now;
        self.last_v = v;
    }

    /// Mean over `start..end`; [`TimeAvg::start_window`] ran at `start`.
    pub fn mean(&self, start: u64, end: u64) -> f64 {
        window_mean(self.acc + self.last_v as u128 * end.saturating_sub(self.last_t) as u128, start, end)
    }

    /// At the start of the measured window (`now`): what accumulated before is
    /// dropped, and the value held then counts for `max`.
    pub fn start_window(&mut self, now: u64) {
        self.acc = 0;
        self.last_t = now;
        self.max = self.last_v;
    }

    pub fn last(&self) -> u64 {
        self.last_v
    }
}

/// How long a piecewise-constant integer quantity held each value in the measured
/// window, for its time-weighted quantiles: the value a read at a random instant returns
/// (a script's `cat` of a sysfs file every few seconds, as the veth BQL selftest reads
/// `byte_queue_limits/inflight`). Values below [`TimeHist::EXACT`] have a bucket each;
/// above, 64 buckets per power of two, so a quantile there is within 1/64 of the value.
/// The buckets grow to the largest value seen (at most 3,776), never per change.
#[derive(Clone, Debug, Default)]
pub struct TimeHist {
    /// ns spent in each bucket (see [`TimeHist::bucket`]).
    ns: Vec<u64>,
    last_t: u64,
    last_v: u64,
}

impl TimeHist {
    /// Values below this have a bucket of their own.
    pub const EXACT: u64 = 128;

    /// The bucket of `v`: `v` itself below [`TimeHist::EXACT`]; above, 64 per power of two.
    fn bucket(v: u64) -> usize {
        if v < Self::EXACT {
            return v as usize;
        }
        let e = 63 - v.leading_zeros() as usize; // 2^e <= v, e >= 7
        let sub = ((v >> (e - 6)) & 63) as usize;
        Self::EXACT as usize + (e - 7) * 64 + sub
    }

    /// The least value of bucket `b`.
    fn floor(b: usize) -> u64 {
        if b < Self::EXACT as usize {
            return b as u64;
        }
        let (e, sub) = ((b - Self::EXACT as usize) / 64 + 7, ((b - Self::EXACT as usize) % 64) as u64);
        (64 + sub) << (e - 6)
    }

    fn add(&mut self, v: u64, ns: u64) {
        let b = Self::bucket(v);
        if b >= self.ns.len() {
            self.ns.resize(b + 1, 0);
        }
        self.ns[b] += ns;
    }

    /// The quantity changes to `v` at time `now`, as [`TimeAvg::set`].
    #[inline]
    pub fn set(&mut self, now: u64, v: u64) {
        if v == self.last_v {
            return;
        }
        self.add(self.last_v, now - self.last_t);
        self.last_t = now;
        self.last_v = v;
    }

    /// At the start of the measured window: the time before it is dropped.
    pub fn start_window(&mut self, now: u64) {
        self.ns.iter_mut().for_each(|n| *n = 0);
        self.last_t = now;
    }

    /// The time-weighted quantile `q` (0..=1) over the window ending at `end`: the least
    /// value (a bucket's floor above [`TimeHist::EXACT`]) held for at least a fraction
    /// `q` of the window at or below it. `None` for an empty window.
    pub fn quantile(&self, q: f64, end: u64) -> Option<u64> {
        let tail = (Self::bucket(self.last_v), end.saturating_sub(self.last_t));
        let at = |b: usize| self.ns.get(b).copied().unwrap_or(0) + if b == tail.0 { tail.1 } else { 0 };
        let n = self.ns.len().max(tail.0 + 1);
        let total: u64 = (0..n).map(at).sum();
        if total == 0 {
            return None;
        }
        let goal = (q * total as f64).ceil().max(1.0) as u64;
        let mut acc = 0;
        (0..n).find(|&b| {
            acc += at(b);
            acc >= goal
        })
        .map(Self::floor)
    }
}

/// An integral over `start..end` (value x ns) as a mean; 0 for an empty window.
fn window_mean(integral: u128, start: u64, end: u64) -> f64 {
    if end > start {
        integral as f64 / (end - start) as f64
    } else {
        0.0
    }
}

/// The time-average occupancy of a queue by Little's law: the integral of the
/// occupancy over the window is the sum of the time each packet spent inside it, and
/// that sum is the sum of the exit times minus the sum of the entry times (a packet
/// still inside at the end exits at the end; one inside at the start entered then).
/// The same integer as a [`TimeAvg`] set on every enqueue and dequeue, for one
/// addition per packet and no entry time to look up at the exit.
#[derive(Clone, Debug, Default)]
pub struct SojournAvg {
    /// Sum of exit times minus sum of entry times so far in the window (ns).
    acc: i128,
    /// Packets inside now.
    inside: u64,
}

impl SojournAvg {
    /// A packet enters at `now`. A requeue is an exit and an entry at the same
    /// instant, so it too is an `enter`: the packet was inside all along.
    #[inline]
    pub fn enter(&mut self, now: u64) {
        self.inside += 1;
        self.acc -= now as i128;
    }

    /// A packet leaves at `now`.
    #[inline]
    pub fn leave(&mut self, now: u64) {
        self.inside -= 1;
        self.acc += now as i128;
    }

    /// At the start of the measured window: what accumulated before is dropped, and the
    /// packets inside count as entering `now`.
    pub fn start_window(&mut self, now: u64) {
        self.acc = -(self.inside as i128 * now as i128);
    }

    /// Mean occupancy over `start..end`; [`SojournAvg::start_window`] ran at `start`.
    pub fn mean(&self, start: u64, end: u64) -> f64 {
        let integral = self.acc + self.inside as i128 * end as i128;
        window_mean(u128::try_from(integral).unwrap_or(0), start, end)
    }
}

/// One answered probe: round trip and where its time went (ns).
#[derive(Clone, Copy, Debug)]
pub struct ProbeSample {
    /// When the echo request was sent (ns since the start of the simulation).
    pub t_send: u64,
    pub rtt: u64,
    pub wait_qdisc: u64,
    pub wait_ring: u64,
    pub wait_consumer: u64,
    /// With a modelled reply path: the request's serialization and propagation, and
    /// the reply's whole way back (far end's TX path, wire, this host's RX path).
    pub wait_wire: u64,
    pub wait_return: u64,
}

/// One pinger's probes in the measured window (each `kind = "ping"` entry has its own,
/// as each ping(8) process counts its own).
#[derive(Default)]
pub struct PingStats {
    /// The answered probes.
    pub probes: Vec<ProbeSample>,
    /// Send times of the probes sent in the measured window.
    pub sent_at: Vec<u64>,
    /// Probes dropped anywhere on the way (`kfree_skb()`).
    pub lost: u64,
    /// Send times of the dropped probes (for the RTT time series).
    pub lost_at: Vec<u64>,
    /// Probes that the local qdisc dropped at enqueue (their sendto() failed with
    /// ENOBUFS).
    pub unsendable: u64,
    pub hist_rtt_us: Hist,
}

/// The time series sampled every `sample_interval`: name and unit.
pub const SERIES: [(&str, &str); 4] = [
    ("bql.limit", "units"),
    ("bql.inflight", "units"),
    ("qdisc.backlog_pkts", "packets"),
    ("ring.occupancy", "packets"),
];

/// BQL of one TX queue of the measured device, as sysfs has one
/// `queues/tx-N/byte_queue_limits` per queue: its DQL limit (moved only by a
/// completion), its in-flight units, and its completions in the measured window.
#[derive(Clone, Debug, Default)]
pub struct BqlTxq {
    pub limit: TimeAvg,
    pub inflight: TimeAvg,
    /// The in-flight units' time-weighted distribution (`inflight_p50`, `inflight_p99`).
    pub inflight_hist: TimeHist,
    pub completions: u64,
}

/// Every packet's fate since time 0, for the conservation check (`report.rs`): each
/// one created is delivered, dropped, sent by a NIC (whose far end got a copy), or
/// still inside.
#[derive(Default)]
pub struct Fates {
    pub created: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub transmitted: u64,
}

impl Fates {
    /// What breaks conservation with `inside` packets still in the system, if anything.
    pub fn imbalance(&self, inside: u64) -> Option<String> {
        (self.created != self.delivered + self.dropped + self.transmitted + inside).then(|| {
            format!(
                "created {} != delivered {} + dropped {} + sent by a NIC {} + queued {}",
                self.created, self.delivered, self.dropped, self.transmitted, inside
            )
        })
    }
}

#[derive(Default)]
pub struct Metrics {
    /// The TX queue (device, queue) the BQL and ring metrics describe.
    pub measured_txq: (crate::id::DevId, u16),
    /// Every packet's fate, the whole run.
    pub fate: Fates,
    pub consumer_pkts: u64,
    /// Sum of the flood packets' one-way delays (send to delivery), ns.
    pub sink_owd_ns: u128,
    /// The sampled time series (`sample_interval`): sample times and values.
    pub series_t: Vec<u64>,
    pub series: [Vec<u64>; SERIES.len()],
    /// With pie on this host, at each sample: its drop probability (a fraction) and
    /// the delay its controller uses (µs), averaged over its pie qdiscs (mq's
    /// children). Empty otherwise.
    pub pie_prob: Vec<f64>,
    pub pie_delay_us: Vec<f64>,
    pub ring_drops: u64,
    /// Frames `path.loss` lost, both ways, in the measured window.
    pub path_drops: u64,
    /// Frames the path's netem dropped at its `limit`, both ways, in the measured window.
    pub path_limit_drops: u64,
    /// Frames `path.ecn` marked CE where the loss model would have dropped them.
    pub path_marks: u64,
    /// Frames `path.reorder` sent ahead of the delayed ones (netem's `requeues`).
    pub path_reordered: u64,
    /// Packets a netem qdisc corrupted that the receiving stack dropped, in the
    /// measured window.
    pub netem_corrupt_drops: u64,
    pub noqueue_drops: u64,
    pub napi_polls: u64,
    pub napi_work: u64,
    pub napi_full_budget: u64,
    /// Completions on every device with BQL, the far host's included (`bql.completions`,
    /// as it has always counted them; `bql.txq.N.completions` are this device's).
    pub bql_completions: u64,
    pub hist_inflight: Hist,
    pub hist_napi_work: Hist,
    /// The measured device's BQL over its TX queues (`bql.*`): the largest queue's
    /// limit, and the in-flight units summed over the queues.
    pub bql_limit: TimeAvg,
    pub bql_inflight: TimeAvg,
    /// Each TX queue of the measured device (`bql.txq.N.*`), indexed by queue.
    pub bql_txq: Vec<BqlTxq>,
    /// The device's summed in-flight units (`bql_inflight`), time-weighted per value.
    pub bql_inflight_hist: TimeHist,
    /// Packets held by the measured device's qdiscs (algorithm, requeue slot and
    /// bad-txq slot), each from its enqueue to its hand-off to the driver or its drop.
    /// Through `qdisc_enter()` / `qdisc_leave()`, which skip the other devices' qdiscs.
    pub qdisc_backlog: SojournAvg,
    /// The measured driver ring's occupancy (veth's or tun's), each packet from its
    /// produce to its consume.
    pub ring: SojournAvg,
    pub findings: Vec<Finding>,
    /// Every change of a socket's TX queue by `netdev_pick_tx()` over the whole run,
    /// as seed 001's bpftrace script keys them: (picking CPU, old queue or -1 for
    /// NO_QUEUE_MAPPING, new queue) -> [changes, of which with `skb->ooo_okay` set].
    pub queue_changes: std::collections::BTreeMap<(u16, i32, u16), [u64; 2]>,
}

impl Metrics {
    /// A packet enters qdisc backlog; `measured`: the qdisc is on the measured device
    /// (`QdiscInst::measured`), the only ones `qdisc.backlog_avg_pkts` describes.
    #[inline]
    pub fn qdisc_enter(&mut self, measured: bool, now: u64) {
        if measured {
            self.qdisc_backlog.enter(now);
        }
    }

    /// A packet leaves qdisc backlog (to the driver, or dropped).
    #[inline]
    pub fn qdisc_leave(&mut self, measured: bool, now: u64) {
        if measured {
            self.qdisc_backlog.leave(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A BQL sawtooth by hand, window 100..1000: 3 on 100..600 (the queue stopped at
    /// limit + 1), 11 on 600..700, 7 on 700..800, 3 on 800..1000. Time at 3: 700 of 900
    /// ns, so the median and the 70th percentile are 3; 11 holds the top 100 ns, so the
    /// 99th is 11. What came before the window (9 on 0..100) does not count.
    #[test]
    fn time_weighted_quantiles_of_a_sawtooth() {
        let mut h = TimeHist::default();
        h.set(0, 9);
        h.set(100, 3);
        h.start_window(100);
        h.set(600, 11);
        h.set(700, 7);
        h.set(800, 3);
        assert_eq!(h.quantile(0.5, 1000), Some(3));
        assert_eq!(h.quantile(0.7, 1000), Some(3));
        assert_eq!(h.quantile(700.0 / 900.0 + 1e-9, 1000), Some(7));
        assert_eq!(h.quantile(0.99, 1000), Some(11));
        assert_eq!(h.quantile(0.0, 1000), Some(3));
        // An empty window has no quantile.
        let mut e = TimeHist::default();
        e.start_window(50);
        assert_eq!(e.quantile(0.5, 50), None);
    }

    /// Below 128 every value is its own bucket; above, 64 per power of two, each
    /// reported by its floor: within 1/64 of the value, and exact on the floors.
    #[test]
    fn time_hist_buckets_are_exact_below_128_and_log_linear_above() {
        for v in [0u64, 1, 2, 127, 128, 129, 130, 255, 256, 258, 1_000_000, u64::MAX >> 1] {
            let b = TimeHist::bucket(v);
            let f = TimeHist::floor(b);
            assert!(f <= v && v - f <= v / 64, "{v} -> bucket {b} floor {f}");
            assert_eq!(TimeHist::bucket(f), b);
        }
        assert_eq!(TimeHist::floor(TimeHist::bucket(127)), 127);
        assert_eq!(TimeHist::floor(TimeHist::bucket(129)), 128);
        assert_eq!(TimeHist::floor(TimeHist::bucket(130)), 130);
        assert_eq!(TimeHist::floor(TimeHist::bucket(259)), 256);
        assert_eq!(TimeHist::floor(TimeHist::bucket(260)), 260);
        let mut h = TimeHist::default();
        h.set(0, 1_000_000);
        assert_eq!(h.quantile(0.5, 10), Some(TimeHist::floor(TimeHist::bucket(1_000_000))));
    }

    /// Two packets in a FIFO, window 12..40. By hand, the occupancy is 2 on 12..15,
    /// 1 on 15..20, 2 on 20..30 and 1 on 30..40: 6 + 5 + 20 + 10 = 41 packet-ns over
    /// 28 ns. The sojourn sum and a TimeAvg set on every change agree.
    #[test]
    fn sojourn_average_is_the_occupancy_integral() {
        let (mut s, mut t) = (SojournAvg::default(), TimeAvg::default());
        s.enter(5);
        t.set(5, 1);
        s.enter(10);
        t.set(10, 2);
        s.start_window(12);
        t.start_window(12);
        s.leave(15);
        t.set(15, 1);
        s.enter(20);
        t.set(20, 2);
        s.leave(30);
        t.set(30, 1);
        assert_eq!(s.mean(12, 40), 41.0 / 28.0);
        assert_eq!(t.mean(12, 40), 41.0 / 28.0);
        assert_eq!(t.max, 2);
    }

    /// A packet enqueued at 0, handed to the driver and pushed back at 20, sent at 30;
    /// window 10..40: it was held 10..30, 20 packet-ns over 30 ns.
    #[test]
    fn requeue_keeps_the_packet_in_the_backlog() {
        let mut s = SojournAvg::default();
        s.enter(0);
        s.start_window(10);
        s.leave(20);
        s.enter(20);
        s.leave(30);
        assert_eq!(s.mean(10, 40), 20.0 / 30.0);
    }

    proptest::proptest! {
        /// Any history of entries and exits: the sojourn average equals the sampled
        /// time average.
        #[test]
        fn sojourn_matches_time_average(
            steps in proptest::collection::vec((0u64..50, proptest::bool::ANY), 1..200),
            start_at in 0usize..200,
        ) {
            let (mut s, mut t) = (SojournAvg::default(), TimeAvg::default());
            let mut inside = 0u64;
            let mut now = 0;
            let mut start = None;
            for (i, &(dt, enter)) in steps.iter().enumerate() {
                now += dt;
                if i == start_at.min(steps.len() - 1) {
                    s.start_window(now);
                    t.start_window(now);
                    start = Some(now);
                }
                if enter || inside == 0 {
                    inside += 1;
                    s.enter(now);
                } else {
                    inside -= 1;
                    s.leave(now);
                }
                t.set(now, inside);
            }
            let end = now + 7;
            let start = start.unwrap();
            proptest::prop_assert_eq!(s.mean(start, end), t.mean(start, end));
        }
    }
}
