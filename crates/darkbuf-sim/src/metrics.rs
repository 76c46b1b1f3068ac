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
