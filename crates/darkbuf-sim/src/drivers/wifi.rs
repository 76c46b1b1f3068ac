//! An access point's radio (`driver = "wifi"`, `wlan0`): mac80211's queueing below
//! the netdev, a driver that builds A-MPDUs into a few hardware queue slots per AC,
//! and the air, one transmission at a time.
//!
//! - `ndo_start_xmit` (`ieee80211_subif_start_xmit()` -> `ieee80211_queue_skb()`):
//!   the skb goes to its station's TXQ for its TID on the radio's shared `struct fq`
//!   (`fq_tin_enqueue()`, CoDel per flow at dequeue; darkbuf_model::mac80211::fq),
//!   which is scheduled (`ieee80211_schedule_txq()`), and the driver is woken
//!   (`.wake_tx_queue`). The netdev's 4 AC queues are never stopped for depth.
//! - The driver (ath9k's `ath_txq_schedule()`, mt76's `mt76_txq_schedule()`): while
//!   its hardware queue of the AC holds fewer than `hw_aggregates_per_ac` A-MPDUs,
//!   `ieee80211_txq_schedule_start()`, `ieee80211_next_txq()` (airtime DRR + AQL,
//!   darkbuf_model::mac80211::sched), then `ieee80211_tx_dequeue()` up to an A-MPDU's
//!   subframe, byte and time limits (a frame that does not fit waits in the driver's
//!   per-TID queue, ath9k's `tid->retry_q`), charging each frame's AQL estimate, then
//!   `ieee80211_return_txq()`. VO and non-HT stations get single frames.
//! - `txq_schedule = "ath9k-acq"` (the default without airtime fairness): ath9k's own
//!   round robin before 63fefa050477 (4.11), `ath_txq_schedule()` over
//!   `sc->cur_chan->acq[]`, run at every `.wake_tx_queue` (each enqueued frame) and
//!   every TX completion. The head TID is taken off the list; `ath_tx_sched_aggr()`
//!   builds an A-MPDU while the AC holds fewer than `hw_aggregates_per_ac` of them
//!   (`axq_ampdu_depth` < `ATH_AGGR_MIN_QDEPTH`), or, for a TID that does not
//!   aggregate, a burst of two frames, each its own PPDU (`ath_tx_form_burst()`), while
//!   the AC holds fewer than 8 entries (`axq_depth` < `ATH_NON_AGGR_MIN_QDEPTH`);
//!   otherwise it sets `stop`. The TID goes back to the tail if it has frames left, and
//!   `stop` ends the call. So a call that finds the hardware full still moves the head
//!   TID to the tail.
//! - The air: the highest AC with an aggregate wins the AP's internal contention;
//!   the exchange takes AIFS + a backoff of `[0, CW]` slots + the PPDU + SIFS + the
//!   BlockAck/ACK (darkbuf_model::mac80211::airtime). Each subframe is lost with the
//!   station's `per`; lost ones stay for the next attempt (up to `retry_limit`), and
//!   an attempt with every subframe lost doubles CW. At TX status the station is
//!   charged the PPDU's airtime (`ieee80211_sta_register_airtime()`, as ath9k
//!   measures it) and AQL's estimates are refunded.
//! - `queueing = "fifo"`, the path before mac80211's TXQs (ath9k before 4.10): the
//!   qdisc (mq + pfifo_fast per AC) above the driver's per-TID queues, at most
//!   `driver_queue_frames` per AC (ath9k's `txq_max_pending`, `ATH_MAX_QDEPTH` = 123),
//!   which stops the netdev queue when full and wakes it below; TIDs are served by
//!   ath9k's round robin above (`ath_txq_schedule()` over its TID list), with no
//!   notion of airtime.
//!
//! - The uplink: the stations are the far host (`[peer]`) behind a gigabit NIC, which
//!   stands for their own stacks. What they send (echo replies, TCP ACKs, uploads)
//!   reaches its station's queue for the air (`uplink_queue_frames`, tail drop), and
//!   each station with a frame contends for the air with the AP by EDCA: best effort
//!   (AIFSN 3, CW 15..1023, the parameters an AP advertises), its own backoff counter
//!   drawn from the radio's seeded stream and frozen while another transmits, its own
//!   PHY rate, an A-MPDU of what it has queued within the same limits as the AP's (a
//!   single frame for a non-HT station), answered by the AP's BlockAck/ACK. The AP's
//!   receive side (a NIC's, `nic.rs`) takes the delivered frames, and the RX airtime
//!   (the PPDU) is charged to the station (`ieee80211_sta_register_airtime()` with
//!   `rx_airtime`, counted in the deficit with `AIRTIME_USE_RX` in `airtime_flags`).
//! - One transmission on the air at a time: contention is settled when the air falls
//!   idle (or a frame reaches an idle air) between the contenders present then; the
//!   smallest AIFS + backoff wins, the others count their backoff down by the slots
//!   that passed. A tie, which is a collision on a real medium, goes to the AP, then
//!   the lower station; collisions are not modelled. A frame that arrives during the
//!   winner's AIFS and backoff waits for the next round.

use crate::id::{DevId, LinkId};
use crate::drivers::nic::Nic;
use crate::dev::NetdevTx;
use crate::drivers::Driver;
use crate::event::Event;
use crate::setup::{Builder, SetupError};
use crate::sock::ping::ReplyPath;
use crate::world::{Net, World};
use darkbuf_model::mac80211::airtime::{self, PhyRate, Timing, AP_EDCA, STA_EDCA};
use darkbuf_model::mac80211::fq::{Fq, FQ_FLOWS_CNT};
use darkbuf_model::mac80211::sched::{AirtimeSched, IEEE80211_NUM_ACS};
use darkbuf_model::mac80211::{ac_from_tid, tid_from_priority};
use darkbuf_model::qdisc::codel::{us_to_codel_time, CodelParams};
use darkbuf_model::Skb;
use darkbuf_scenario::wifi::{Queueing, TxqSchedule, WifiSpec};
use darkbuf_scenario::NicWire;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// TIDs per station with a TXQ (data TIDs 0..7).
pub const TIDS: u32 = 8;
/// The BlockAck window of HT (`IEEE80211_MAX_AMPDU_BUF_HT`).
pub const BA_WINDOW_HT: u32 = 64;
/// ath9k's `ath_tx_form_burst()`: a TID that does not aggregate sends at most this
/// many frames per turn, each its own PPDU.
pub const ATH_NON_AGGR_BURST: usize = 2;
/// ath9k's `ATH_NON_AGGR_MIN_QDEPTH`: a non-aggregated turn is queued while the
/// hardware queue of its AC holds fewer entries (aggregates and single frames).
pub const ATH_NON_AGGR_MIN_QDEPTH: usize = 8;
/// `IEEE80211_AC_VO`: never aggregated.
const AC_VO: usize = 0;
/// `IEEE80211_AC_BE`: the stations' own data (TID 0).
const AC_BE: usize = 2;
/// The key the radio hashes flows with (`skb_get_hash()`), fixed across seeds.
const FQ_HASH_KEY: u32 = 0x8021_1;

/// A frame below mac80211: in an A-MPDU being built or sent.
#[derive(Clone, Copy, Debug)]
pub struct HwFrame {
    pub skb: Skb,
    /// When `ieee80211_tx_dequeue()` handed it to the driver, ns.
    pub t_dequeue: u64,
    /// Its AQL estimate, µs (`tx_time_est`).
    pub aql_us: u32,
    pub retries: u8,
}

/// An A-MPDU (or a single frame) in the hardware queue of an AC.
pub struct Ampdu {
    pub sta: u16,
    pub frames: Vec<HwFrame>,
}

/// One associated station.
pub struct Station {
    /// Its `[[wifi.station]]` name, which names its metrics.
    pub name: String,
    pub rate: PhyRate,
    pub per: f64,
    pub stats: StaStats,
    /// Its counters since the radio came up (what `iw station dump` reads).
    pub total: StaTotals,
    /// Its own transmit side.
    pub up: Uplink,
}

/// A station's counters over the whole run (mac80211's `sta->deflink.rx_stats`,
/// `tx_stats`, `status_stats`), frame lengths as 802.3 frames (IP + 14).
#[derive(Clone, Copy, Debug, Default)]
pub struct StaTotals {
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_retries: u64,
    pub tx_failed: u64,
    /// When a frame last went to or came from it, ns.
    pub last_active_ns: Option<u64>,
}

/// A station's own transmit side: the frames it holds for the air and its EDCA state
/// (best effort).
pub struct Uplink {
    /// Its frames (arena ids) with their retries, oldest first.
    pub queue: VecDeque<(u32, u8)>,
    /// Its backoff counter, slots (`None`: none drawn since it last transmitted).
    pub backoff: Option<u32>,
    pub cw: u32,
}

/// What is on the air.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Air {
    Idle,
    /// The AP's head aggregate of an AC.
    Ap(usize),
    /// A station's first `n` frames, a PPDU of `ppdu_us`.
    Sta { sta: u16, n: u16, ppdu_us: u32 },
}

/// A station's counters in the measured window.
#[derive(Clone, Copy, Debug, Default)]
pub struct StaStats {
    /// IP bytes and frames delivered.
    pub rx_bytes: u64,
    pub rx_frames: u64,
    /// Transport payload delivered both ways (UDP and ICMP data, TCP segments' data):
    /// the station's goodput.
    pub payload_bytes: u64,
    /// Air used by exchanges with this station (AIFS and backoff included), ns.
    pub air_ns: u64,
    /// PPDU airtime charged to the station (`tx_airtime`), µs.
    pub tx_airtime_us: u64,
    pub ampdus: u64,
    pub subframes: u64,
    pub retries: u64,
    pub failed: u64,
    /// Time in mac80211's queue and below it (driver + hardware), summed, ns.
    pub mac_wait_ns: u64,
    pub hw_wait_ns: u64,
    pub aql_pending_max_us: u32,
    /// The station's own frames the AP received: IP bytes, frames, PPDUs.
    pub up_bytes: u64,
    pub up_frames: u64,
    pub up_ampdus: u64,
    /// RX airtime (the PPDUs), µs (`rx_airtime`).
    pub rx_airtime_us: u64,
    /// Its frames dropped at its full queue, and after `retry_limit` attempts.
    pub up_drops: u64,
    pub up_failed: u64,
}

/// Where the queues above the hardware are.
pub enum Mac {
    /// mac80211's TXQs: the fq, the scheduler, a frame per TXQ the driver holds back.
    /// With `acq`, ath9k's own TID round robin picks the TXQ instead of `sched`.
    FqMac { fq: Box<Fq>, sched: AirtimeSched, acq: Option<Acq>, held: Vec<Option<HwFrame>>, cparams: CodelParams, slow_cparams: Option<CodelParams> },
    /// The driver's per-TID queues, round robin per AC, with the AC's frame count.
    Fifo { tids: Vec<VecDeque<Skb>>, rr: [VecDeque<u32>; IEEE80211_NUM_ACS], count: [u32; IEEE80211_NUM_ACS], limit: u32 },
}

/// ath9k's per-AC round robin of TIDs with frames (`sc->cur_chan->acq[]`, each TID's
/// `list` and `sched` flag): `txq_schedule = "ath9k-acq"`.
pub struct Acq {
    pub list: [VecDeque<u32>; IEEE80211_NUM_ACS],
    queued: Vec<bool>,
}

impl Acq {
    fn new(txqs: u32) -> Acq {
        Acq { list: Default::default(), queued: vec![false; txqs as usize] }
    }

    /// `ath_tx_queue_tid()`: a TID with frames goes to the tail unless it is listed.
    pub fn queue_tid(&mut self, txq: u32, ac: usize) {
        if !self.queued[txq as usize] {
            self.queued[txq as usize] = true;
            self.list[ac].push_back(txq);
        }
    }

    /// The head TID, taken off the list (`list_del(&tid->list); tid->sched = false`).
    fn pop(&mut self, ac: usize) -> Option<u32> {
        let t = self.list[ac].pop_front()?;
        self.queued[t as usize] = false;
        Some(t)
    }
}

/// The radio's private state.
pub struct Wifi {
    /// The receive side (the replies from the stations' host), a NIC's.
    pub nic: Nic,
    pub mac: Mac,
    pub stations: Vec<Station>,
    /// Per socket, the station it talks to.
    pub sta_of_sock: Vec<u16>,
    pub hw: [VecDeque<Ampdu>; IEEE80211_NUM_ACS],
    pub air: Air,
    /// The AP's backoff counter (its highest AC with an aggregate contends), slots.
    pub ap_backoff: Option<u32>,
    pub cw: [u32; IEEE80211_NUM_ACS],
    /// Frames in the stations' queues.
    pub uplink_frames: u64,
    pub uplink_queue_frames: u32,
    /// Lost uplink frames on their way back to the head of their queue.
    up_lost: Vec<(u32, u8)>,
    pub timing: Timing,
    pub ctrl_rate: PhyRate,
    pub link: LinkId,
    pub hw_aggregates_per_ac: u32,
    pub max_subframes: u32,
    pub max_bytes: u32,
    pub max_ns: u64,
    pub retry_limit: u8,
    rng: ChaCha8Rng,
    /// Spare frame vectors for aggregates (no allocation per aggregate).
    spare: Vec<Vec<HwFrame>>,
    drops: Vec<Skb>,
    /// Radio-wide latency histograms (mac80211 queue, below it), 100 µs buckets.
    pub mac_hist: Vec<u32>,
    pub hw_hist: Vec<u32>,
    /// Medium busy in the window, ns.
    pub busy_ns: u64,
    /// The fq's and CoDel's cumulative counters when the window began.
    pub base: Option<MacCounters>,
}

/// The fq's and CoDel's counters (debugfs `aqm`), cumulative.
#[derive(Clone, Copy, Debug, Default)]
pub struct MacCounters {
    pub codel_drops: u64,
    pub codel_marks: u64,
    pub overlimit: u64,
    pub overmemory: u64,
    pub collisions: u64,
}

/// Buckets of the latency histograms: 100 µs each, the last one open.
const HIST_BUCKETS: usize = 20_000;
const HIST_NS: u64 = 100_000;

impl Wifi {
    /// The radio of `spec` over `nic`'s receive side, its frames to `link`.
    pub fn new(spec: &WifiSpec, nic: Nic, link: LinkId, seed: u64) -> Wifi {
        use rand::SeedableRng;
        let stations: Vec<Station> = spec
            .stations
            .iter()
            .map(|s| Station {
                name: s.name.clone(),
                rate: PhyRate::parse(&s.rate).expect("validated"),
                per: s.per,
                stats: StaStats::default(),
                total: StaTotals::default(),
                up: Uplink { queue: VecDeque::new(), backoff: None, cw: STA_EDCA[AC_BE].cw_min },
            })
            .collect();
        let n = stations.len() as u32;
        let dsss = stations.iter().any(|s| matches!(s.rate, PhyRate::Dsss(_)));
        let timing = if spec.band == "2.4GHz" { Timing::two_ghz(dsss) } else { Timing::FIVE_GHZ };
        let mac = match spec.queueing {
            Queueing::FqMac => {
                let weights: Vec<u32> = spec.stations.iter().map(|s| s.airtime_weight).collect();
                let txqs: Vec<(Option<u32>, u8)> = (0..n * TIDS).map(|t| (Some(t / TIDS), ac_from_tid((t % TIDS) as u8) as u8)).collect();
                // ath9k before airtime fairness had no AQL either (mac80211 gained it in 5.5).
                let aql = spec.aql && spec.txq_schedule != TxqSchedule::Ath9kAcq;
                let mut sched = AirtimeSched::new(&weights, &txqs, spec.airtime_fairness, aql, spec.aql_limit_low_us, spec.aql_limit_high_us, spec.aql_threshold_us);
                sched.airtime_flags = spec.airtime_flags as u16;
                let fq = Box::new(Fq::new(FQ_FLOWS_CNT, n * TIDS, spec.txq_quantum, spec.txq_limit, spec.txq_memory_limit));
                let cparams = CodelParams {
                    target: us_to_codel_time((spec.codel_target_ns / 1000) as u32),
                    interval: us_to_codel_time((spec.codel_interval_ns / 1000) as u32),
                    ecn: spec.codel_ecn,
                    mtu: 0,
                    ..CodelParams::init(0)
                };
                // sta_update_codel_params() (2016-2025): 50 ms / 300 ms, no ECN below
                // STA_SLOW_THRESHOLD (6000 kbit/s) * num_sta of expected throughput.
                let slow_cparams = spec.codel_slow_station.then(|| CodelParams {
                    target: darkbuf_model::qdisc::codel::ms2time(50),
                    interval: darkbuf_model::qdisc::codel::ms2time(300),
                    ecn: false,
                    ..cparams
                });
                let acq = (spec.txq_schedule == TxqSchedule::Ath9kAcq).then(|| Acq::new(n * TIDS));
                Mac::FqMac { fq, sched, acq, held: vec![None; (n * TIDS) as usize], cparams, slow_cparams }
            }
            Queueing::Fifo | Queueing::FqCodelQdisc => Mac::Fifo {
                tids: vec![VecDeque::new(); (n * TIDS) as usize],
                rr: Default::default(),
                count: [0; IEEE80211_NUM_ACS],
                limit: spec.driver_queue_frames,
            },
        };
        Wifi {
            nic,
            mac,
            stations,
            sta_of_sock: Vec::new(),
            hw: Default::default(),
            air: Air::Idle,
            ap_backoff: None,
            uplink_frames: 0,
            uplink_queue_frames: spec.uplink_queue_frames,
            up_lost: Vec::with_capacity(BA_WINDOW_HT as usize),
            cw: [AP_EDCA[0].cw_min, AP_EDCA[1].cw_min, AP_EDCA[2].cw_min, AP_EDCA[3].cw_min],
            timing,
            ctrl_rate: PhyRate::parse(&spec.ba_rate).expect("validated"),
            link,
            hw_aggregates_per_ac: spec.hw_aggregates_per_ac,
            max_subframes: spec.ampdu_max_subframes.min(BA_WINDOW_HT),
            max_bytes: spec.ampdu_max_bytes,
            max_ns: spec.ampdu_max_us as u64 * 1000,
            retry_limit: spec.retry_limit as u8,
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x8021_1A11_71E5_u64),
            spare: Vec::new(),
            drops: Vec::with_capacity(64),
            mac_hist: vec![0; HIST_BUCKETS],
            hw_hist: vec![0; HIST_BUCKETS],
            busy_ns: 0,
            base: None,
        }
    }

    /// The control response rate to a station: its own DSSS rate, else `ba_rate`.
    fn ctrl_rate_for(&self, sta: u16) -> PhyRate {
        match self.stations[sta as usize].rate {
            r @ PhyRate::Dsss(_) => r,
            _ => self.ctrl_rate,
        }
    }

    /// `ath_tx_sched_aggr()`'s test: room in the hardware queue of `ac` for a turn of
    /// `sta`, an A-MPDU against `hw_aggregates_per_ac` A-MPDUs (`axq_ampdu_depth`), a
    /// non-aggregated burst against 8 entries of any kind (`axq_depth`).
    fn ath_hw_has_room(&self, sta: u16, ac: usize) -> bool {
        let q = &self.hw[ac];
        if self.aggregates(sta, ac) {
            q.iter().filter(|a| self.aggregates(a.sta, ac)).count() < self.hw_aggregates_per_ac as usize
        } else {
            q.len() < ATH_NON_AGGR_MIN_QDEPTH
        }
    }

    /// Queues one turn of `sta` in the hardware queue of `ac`: an A-MPDU as one entry,
    /// a non-aggregated burst as one entry per frame (each its own PPDU and channel
    /// access, `bf_next` chaining them in ath9k).
    fn hw_push(&mut self, sta: u16, ac: usize, mut frames: Vec<HwFrame>) {
        if !self.aggregates(sta, ac) {
            // A burst is at most ATH_NON_AGGR_BURST frames; the vectors are the spares.
            while frames.len() > 1 {
                let mut one = self.spare.pop().unwrap_or_default();
                one.push(frames.remove(0));
                self.hw[ac].push_back(Ampdu { sta, frames: one });
            }
        }
        self.hw[ac].push_back(Ampdu { sta, frames });
    }

    /// Whether frames to `sta` on `ac` are aggregated.
    fn aggregates(&self, sta: u16, ac: usize) -> bool {
        ac != AC_VO && self.stations[sta as usize].rate.is_ht()
    }

    /// The PSDU of `frames`: an A-MPDU's subframes (each padded to 4 bytes but the
    /// last), or one MPDU. A frame's IP packet is its L2 length less Ethernet's 14.
    fn psdu(frames: &[HwFrame], ampdu: bool) -> u32 {
        let n = frames.len();
        if !ampdu {
            return frames.iter().map(|f| f.skb.len - 14 + airtime::MPDU_OVERHEAD).sum();
        }
        frames.iter().enumerate().map(|(i, f)| if i + 1 < n { airtime::ampdu_subframe_len(f.skb.len - 14) } else { f.skb.len - 14 + airtime::AMPDU_SUBFRAME_OVERHEAD }).sum()
    }

    /// Whether a frame of `len` IP bytes still fits an aggregate of `n` frames whose
    /// padded subframes take `padded` bytes.
    fn fits(&self, agg: bool, n: u32, padded: u32, len: u32, rate: PhyRate) -> bool {
        if n == 0 {
            return true;
        }
        let psdu = padded + len + airtime::AMPDU_SUBFRAME_OVERHEAD;
        agg && n < self.max_subframes && psdu <= self.max_bytes && rate.ppdu_ns(psdu) <= self.max_ns
    }

    /// Packets the radio holds (mac80211 queues, the driver, the hardware, the receive
    /// rings).
    pub fn held(&self) -> u64 {
        let mac = match &self.mac {
            Mac::FqMac { fq, held, .. } => fq.backlog as u64 + held.iter().filter(|h| h.is_some()).count() as u64,
            Mac::Fifo { count, .. } => count.iter().map(|&c| c as u64).sum(),
        };
        let hw: usize = self.hw.iter().flat_map(|q| q.iter()).map(|a| a.frames.len()).sum();
        mac + hw as u64 + self.uplink_frames + self.nic.held()
    }

    /// The fq's and CoDel's counters now (`None` on the old path).
    pub fn mac_counters(&self) -> Option<MacCounters> {
        let Mac::FqMac { fq, .. } = &self.mac else { return None };
        Some(MacCounters {
            codel_drops: fq.tins.iter().map(|t| t.codel_drops).sum(),
            codel_marks: fq.tins.iter().map(|t| t.cstats.ecn_mark as u64).sum(),
            overlimit: fq.overlimit as u64,
            overmemory: fq.overmemory as u64,
            collisions: fq.collisions as u64,
        })
    }

    /// Frames in the hardware queue of AC `ac`.
    pub fn hw_frames(&self, ac: usize) -> usize {
        self.hw.get(ac).map_or(0, |q| q.iter().map(|a| a.frames.len()).sum())
    }
}

fn hist_add(h: &mut [u32], ns: u64) {
    let b = ((ns / HIST_NS) as usize).min(HIST_BUCKETS - 1);
    h[b] = h[b].saturating_add(1);
}

/// The median of a 100 µs histogram, ms (the middle of its bucket); `None` if empty.
pub fn hist_median_ms(h: &[u32]) -> Option<f64> {
    let n: u64 = h.iter().map(|&c| c as u64).sum();
    if n == 0 {
        return None;
    }
    let mut seen = 0u64;
    for (i, &c) in h.iter().enumerate() {
        seen += c as u64;
        if 2 * seen >= n {
            return Some((i as f64 + 0.5) * HIST_NS as f64 / 1e6);
        }
    }
    None
}

impl Net {
    #[inline]
    pub(crate) fn wifi_mut(&mut self, dev: DevId) -> &mut Wifi {
        match &mut self.devs[dev].driver {
            Driver::Wifi(w) => w,
            _ => unreachable!("device {dev} is a radio"),
        }
    }

    pub(crate) fn wifi(&self, dev: DevId) -> &Wifi {
        match &self.devs[dev].driver {
            Driver::Wifi(w) => w,
            _ => unreachable!("device {dev} is a radio"),
        }
    }
}

impl World {
    /// `ieee80211_select_queue()`: the AC of the skb's TID.
    pub(crate) fn wifi_select_queue(skb: &Skb) -> u16 {
        ac_from_tid(tid_from_priority(skb.priority)) as u16
    }

    /// `ndo_start_xmit` (`ieee80211_subif_start_xmit()`).
    pub fn wifi_xmit(&mut self, dev: DevId, mut skb: Skb) -> NetdevTx {
        let now = self.now;
        let sock = (self.pkts.get(skb.id).sock).idx();
        self.pkts.get_mut(skb.id).ecn = skb.ecn;
        self.pkts.stamp(skb.id, |p| &mut p.t_xmit, now);
        let jiffies = self.jiffies();
        let measuring = self.measuring();
        let d = &mut self.net.devs[dev];
        let Driver::Wifi(w) = &mut d.driver else { unreachable!("device {dev} is a radio") };
        if measuring && w.base.is_none() {
            w.base = Some(w.mac_counters().unwrap_or_default());
        }
        let sta = w.sta_of_sock.get(sock).copied().unwrap_or(0);
        let tid = tid_from_priority(skb.priority) as u32;
        let ac = ac_from_tid(tid as u8);
        let txq = sta as u32 * TIDS + tid;
        skb.tstamp = now;
        match &mut w.mac {
            Mac::FqMac { fq, sched, acq, .. } => {
                let hash = darkbuf_model::skb::flow_hash(skb.flow, FQ_HASH_KEY);
                fq.fq_tin_enqueue(txq, hash, skb, &mut w.drops);
                match acq {
                    // ath9k_wake_tx_queue(): ath_tx_queue_tid(), then ath_txq_schedule().
                    Some(acq) => acq.queue_tid(txq, ac),
                    None => sched.return_txq(txq, true, now),
                }
            }
            Mac::Fifo { tids, rr, count, limit } => {
                if count[ac] >= *limit {
                    d.txqs[skb.queue_mapping as usize].tx_stop_queue(jiffies);
                    return NetdevTx::Busy;
                }
                if tids[txq as usize].is_empty() {
                    rr[ac].push_back(txq);
                }
                tids[txq as usize].push_back(skb);
                count[ac] += 1;
                if count[ac] >= *limit {
                    // ath_tx_start(): the AC's buffers are used up, stop the netdev queue.
                    d.txqs[skb.queue_mapping as usize].tx_stop_queue(jiffies);
                }
            }
        }
        self.wifi_free_drops(dev);
        self.wifi_tx_schedule(dev, ac);
        NetdevTx::Ok
    }

    /// Frees what the fq's limits or CoDel dropped (`ieee80211_free_txskb()`).
    fn wifi_free_drops(&mut self, dev: DevId) {
        let w = self.net.wifi_mut(dev);
        if w.drops.is_empty() {
            return;
        }
        let drops = std::mem::take(&mut w.drops);
        for s in &drops {
            self.kfree_skb(s.id);
        }
        let w = self.net.wifi_mut(dev);
        w.drops = drops;
        w.drops.clear();
    }

    /// The driver's TX scheduling of AC `ac` (`ath_txq_schedule()`): with mac80211's
    /// scheduler, fill the hardware queue up to `hw_aggregates_per_ac` aggregates; with
    /// ath9k's own round robin (the old path, `ath9k-acq`), one call of it. Then start
    /// the air if idle.
    pub(crate) fn wifi_tx_schedule(&mut self, dev: DevId, ac: usize) {
        let now = self.now;
        if matches!(self.net.wifi(dev).mac, Mac::FqMac { acq: Some(_), .. } | Mac::Fifo { .. }) {
            self.ath_txq_schedule(dev, ac, now);
            self.wifi_free_drops(dev);
            self.wifi_air_start(dev);
            return;
        }
        loop {
            let w = self.net.wifi_mut(dev);
            if w.hw[ac].len() >= w.hw_aggregates_per_ac as usize {
                break;
            }
            let built = self.wifi_build_from_txqs(dev, ac, now);
            self.wifi_free_drops(dev);
            if !built {
                break;
            }
        }
        self.wifi_air_start(dev);
    }

    /// One aggregate from mac80211's TXQs: `ieee80211_txq_schedule_start()`, then
    /// `ieee80211_next_txq()` until a TXQ yields frames. Returns whether one was built.
    fn wifi_build_from_txqs(&mut self, dev: DevId, ac: usize, now: u64) -> bool {
        let measuring = self.measuring();
        let w = self.net.wifi_mut(dev);
        let mut frames = w.spare.pop().unwrap_or_default();
        let Mac::FqMac { sched, .. } = &mut w.mac else { unreachable!("fq_mac") };
        sched.txq_schedule_start(ac);
        loop {
            let w = self.net.wifi_mut(dev);
            let Mac::FqMac { sched, .. } = &mut w.mac else { unreachable!("fq_mac") };
            let Some(txq) = sched.next_txq(ac, now) else {
                w.spare.push(frames);
                return false;
            };
            let sta = (txq / TIDS) as u16;
            w.fill_from_txq(txq, sta, ac, now, &mut frames, measuring);
            let Mac::FqMac { fq, sched, held, .. } = &mut w.mac else { unreachable!("fq_mac") };
            let more = fq.tin_packets(txq) > 0 || held[txq as usize].is_some();
            sched.return_txq(txq, more, now);
            if !frames.is_empty() {
                w.hw[ac].push_back(Ampdu { sta, frames });
                return true;
            }
        }
    }

    /// ath9k's `ath_txq_schedule()` before airtime fairness, over its TID list of `ac`
    /// (`sc->cur_chan->acq[]`): the old path's per-TID queues, or mac80211's TXQs with
    /// `txq_schedule = "ath9k-acq"`. Turns go from the head until one finds the
    /// hardware queue full (`ath_tx_sched_aggr()`'s `stop`) or a pass over the list
    /// sends nothing. A TID with frames left goes back to the tail, the one that found
    /// the queue full included.
    fn ath_txq_schedule(&mut self, dev: DevId, ac: usize, now: u64) {
        let measuring = self.measuring();
        let w = self.net.wifi_mut(dev);
        let Some(mut last) = w.acq_list(ac).back().copied() else { return };
        let mut sent = false;
        loop {
            let Some(txq) = w.acq_pop(ac) else { return };
            let sta = (txq / TIDS) as u16;
            // ath_tx_sched_aggr(): a TID with nothing buffered neither sends nor stops.
            let stop = w.tid_has_frames(txq) && !w.ath_hw_has_room(sta, ac);
            if w.tid_has_frames(txq) && !stop {
                let mut frames = w.spare.pop().unwrap_or_default();
                w.tid_fill(txq, sta, ac, now, &mut frames, measuring);
                if frames.is_empty() {
                    w.spare.push(frames);
                } else {
                    w.hw_push(sta, ac, frames);
                    sent = true;
                }
            }
            if w.tid_has_frames(txq) {
                w.acq_queue_tid(txq, ac);
            }
            if stop {
                return;
            }
            if txq == last {
                if !sent {
                    return;
                }
                sent = false;
                let Some(&l) = w.acq_list(ac).back() else { return };
                last = l;
            }
        }
    }

    /// The air is idle: EDCA between the AP and the stations with frames
    /// ([`Wifi::edca_contend`]) picks who sends.
    fn wifi_air_start(&mut self, dev: DevId) {
        let w = self.net.wifi_mut(dev);
        if w.air != Air::Idle {
            return;
        }
        match w.edca_contend() {
            Some((Air::Ap(ac), wait_ns)) => self.wifi_ap_start(dev, ac, wait_ns),
            Some((Air::Sta { sta, .. }, wait_ns)) => self.wifi_uplink_start(dev, sta, wait_ns),
            Some((Air::Idle, _)) | None => {}
        }
    }

    /// The AP won the air after `wait_ns` of AIFS and backoff: its head aggregate of
    /// `ac` goes out.
    fn wifi_ap_start(&mut self, dev: DevId, ac: usize, wait_ns: u64) {
        let now = self.now;
        let w = self.net.wifi_mut(dev);
        let a = &w.hw[ac][0];
        let sta = a.sta;
        let agg = w.aggregates(sta, ac);
        let psdu = Wifi::psdu(&a.frames, agg);
        let rate = w.stations[sta as usize].rate;
        let edca = AP_EDCA[ac];
        let ctrl = w.ctrl_rate_for(sta);
        let aifs = w.timing.aifs_ns(edca.aifsn);
        let exchange = airtime::exchange_ns(&w.timing, &edca, rate, psdu, agg, ctrl) - aifs + wait_ns;
        w.air = Air::Ap(ac);
        let start = now + wait_ns;
        for i in 0..self.net.wifi(dev).hw[ac][0].frames.len() {
            let id = self.net.wifi(dev).hw[ac][0].frames[i].skb.id;
            if self.pkts.get(id).proto == crate::arena::Proto::Icmp {
                self.pkts.stamp(id, |p| &mut p.t_wire, start);
            }
        }
        self.events.push(now + exchange, Event::Wire(dev));
        if self.measuring() {
            let w = self.net.wifi_mut(dev);
            w.busy_ns += exchange;
            let s = &mut w.stations[sta as usize].stats;
            s.air_ns += exchange;
            s.tx_airtime_us += w.timing.ppdu_ns(rate, psdu) / 1000;
        }
    }

    /// `Event::Wire` on a radio: the exchange on the air is over. Delivered subframes
    /// go to the stations' host, lost ones wait for another attempt; TX status charges
    /// the airtime and refunds AQL; the driver refills the AC and the air goes on.
    pub fn wifi_air_done(&mut self, dev: DevId) {
        match std::mem::replace(&mut self.net.wifi_mut(dev).air, Air::Idle) {
            Air::Ap(ac) => self.wifi_ap_done(dev, ac),
            Air::Sta { sta, n, ppdu_us } => self.wifi_uplink_done(dev, sta, n, ppdu_us),
            Air::Idle => unreachable!("the air was busy"),
        }
    }

    /// The AP's exchange on `ac` is over.
    fn wifi_ap_done(&mut self, dev: DevId, ac: usize) {
        let now = self.now;
        let measuring = self.measuring();
        let w = self.net.wifi_mut(dev);
        let mut a = w.hw[ac].pop_front().expect("the aggregate on the air");
        let sta = a.sta;
        let (rate, per) = (w.stations[sta as usize].rate, w.stations[sta as usize].per);
        let agg = w.aggregates(sta, ac);
        let ppdu_us = (w.timing.ppdu_ns(rate, Wifi::psdu(&a.frames, agg)) / 1000) as u32;
        if let Mac::FqMac { sched, .. } = &mut w.mac {
            sched.register_airtime(sta as u32, ac, ppdu_us, 0, now);
        }
        if measuring {
            let s = &mut w.stations[sta as usize].stats;
            s.ampdus += 1;
            s.subframes += a.frames.len() as u64;
        }
        let mut lost = Vec::new();
        std::mem::swap(&mut lost, &mut w.spare.pop().unwrap_or_default());
        let n = a.frames.len();
        for f in a.frames.drain(..) {
            let w = self.net.wifi_mut(dev);
            let ok = per <= 0.0 || w.rng.gen::<f64>() >= per;
            if ok {
                self.wifi_tx_status(dev, ac, sta, f, true, measuring);
            } else if f.retries >= w.retry_limit {
                w.stations[sta as usize].total.tx_failed += 1;
                if measuring {
                    w.stations[sta as usize].stats.failed += 1;
                }
                self.wifi_tx_status(dev, ac, sta, f, false, measuring);
            } else {
                w.stations[sta as usize].total.tx_retries += 1;
                if measuring {
                    w.stations[sta as usize].stats.retries += 1;
                }
                lost.push(HwFrame { retries: f.retries + 1, ..f });
            }
        }
        let w = self.net.wifi_mut(dev);
        let e = AP_EDCA[ac];
        w.cw[ac] = if lost.len() == n && n > 0 { (2 * w.cw[ac] + 1).min(e.cw_max) } else { e.cw_min };
        w.spare.push(a.frames);
        if lost.is_empty() {
            w.spare.push(lost);
        } else {
            // ath9k: the lost subframes go first in the TID's next aggregate.
            w.hw[ac].push_front(Ampdu { sta, frames: lost });
        }
        self.wifi_wake_fifo(dev, ac);
        self.wifi_tx_schedule(dev, ac);
        self.wifi_air_start(dev);
    }

    /// TX status of one frame: AQL refund, its latency, and either its delivery (a copy
    /// goes to the stations' host) or its drop after the retries.
    fn wifi_tx_status(&mut self, dev: DevId, ac: usize, sta: u16, f: HwFrame, delivered: bool, measuring: bool) {
        let now = self.now;
        let id = f.skb.id;
        let payload = payload_len(self.pkts.get(id));
        let w = self.net.wifi_mut(dev);
        if let Mac::FqMac { sched, .. } = &mut w.mac {
            sched.update_pending_airtime(Some(sta as u32), ac, f.aql_us, true);
        }
        if !delivered {
            self.kfree_skb(id);
            return;
        }
        let link = w.link;
        let t = &mut w.stations[sta as usize].total;
        t.tx_bytes += f.skb.len as u64;
        t.tx_packets += 1;
        t.last_active_ns = Some(now);
        if measuring {
            let mac_ns = f.t_dequeue.saturating_sub(f.skb.tstamp);
            let hw_ns = now - f.t_dequeue;
            let s = &mut w.stations[sta as usize].stats;
            s.rx_bytes += (f.skb.len - 14) as u64;
            s.rx_frames += 1;
            s.payload_bytes += payload;
            s.mac_wait_ns += mac_ns;
            s.hw_wait_ns += hw_ns;
            hist_add(&mut w.mac_hist, mac_ns);
            hist_add(&mut w.hw_hist, hw_ns);
        }
        let copy = *self.pkts.get(id);
        let rx_id = self.pkts.alloc(crate::arena::PktInfo { destructor: crate::arena::Destructor::None, bql_charged: false, ..copy });
        self.pkts.copy_probe_times(id, rx_id);
        self.metrics.fate.created += 1;
        self.link_send(link, rx_id);
        // The skb is freed at TX status; its destructor (sock_wfree, tcp_wfree) runs.
        self.skb_orphan(id);
        self.pkts.free(id);
        self.metrics.fate.transmitted += 1;
    }

    /// The old path: wake the netdev queue of `ac` once its driver queue is below its
    /// limit again (ath9k's `ath_txq_skb_done()`: `pending_frames < txq_max_pending`).
    fn wifi_wake_fifo(&mut self, dev: DevId, ac: usize) {
        let d = &mut self.net.devs[dev];
        let Driver::Wifi(w) = &mut d.driver else { return };
        let Mac::Fifo { count, limit, .. } = &w.mac else { return };
        let txq = &mut d.txqs[ac];
        if count[ac] < *limit && txq.tx_queue_stopped() && txq.tx_wake_queue() {
            let cpu = w.nic.chans[ac].irq_cpu;
            if let Some(qi) = d.txq_qdisc[ac] {
                self.netif_schedule(cpu, qi);
            }
        }
    }
}

/// A contender that lost counts its backoff down by the slots that passed after its
/// AIFS until the winner's transmission began, `t` ns into the idle air.
fn edca_count_down(backoff: &mut Option<u32>, aifs_ns: u64, t: u64, slot_ns: u64) {
    if let Some(b) = backoff {
        let slots = (t.saturating_sub(aifs_ns) / slot_ns).min(*b as u64) as u32;
        *b -= slots;
    }
}

/// The stations' own transmissions.
impl World {
    /// A frame from the stations' host for the air: it joins its station's queue, or
    /// is dropped when that is full.
    pub fn wifi_link_rx(&mut self, dev: DevId, id: u32) {
        let sock = self.pkts.get(id).sock.idx();
        let measuring = self.measuring();
        let w = self.net.wifi_mut(dev);
        let sta = w.sta_of_sock.get(sock).copied().unwrap_or(0) as usize;
        if w.stations[sta].up.queue.len() >= w.uplink_queue_frames as usize {
            if measuring {
                w.stations[sta].stats.up_drops += 1;
            }
            self.kfree_skb(id);
            return;
        }
        w.stations[sta].up.queue.push_back((id, 0));
        w.uplink_frames += 1;
        self.wifi_air_start(dev);
    }

    /// Station `sta` won the air after `wait_ns` of AIFS and backoff: an A-MPDU of the
    /// frames at the head of its queue within the A-MPDU limits (a single frame for a
    /// non-HT station) at its own rate, then the AP's BlockAck or ACK.
    fn wifi_uplink_start(&mut self, dev: DevId, sta: u16, wait_ns: u64) {
        let now = self.now;
        let measuring = self.measuring();
        let Driver::Wifi(w) = &mut self.net.devs[dev].driver else { unreachable!("device {dev} is a radio") };
        let rate = w.stations[sta as usize].rate;
        let agg = w.aggregates(sta, AC_BE);
        let (mut n, mut padded, mut last) = (0u32, 0u32, 0u32);
        for &(id, _) in &w.stations[sta as usize].up.queue {
            let len = self.pkts.get(id).len - 14;
            if !w.fits(agg, n, padded, len, rate) {
                break;
            }
            padded += airtime::ampdu_subframe_len(len);
            (n, last) = (n + 1, len);
            if !agg {
                break;
            }
        }
        let psdu = if agg { padded - airtime::ampdu_subframe_len(last) + last + airtime::AMPDU_SUBFRAME_OVERHEAD } else { last + airtime::MPDU_OVERHEAD };
        let edca = STA_EDCA[AC_BE];
        let ctrl = w.ctrl_rate_for(sta);
        let exchange = airtime::exchange_ns(&w.timing, &edca, rate, psdu, agg, ctrl) - w.timing.aifs_ns(edca.aifsn) + wait_ns;
        let ppdu_ns = w.timing.ppdu_ns(rate, psdu);
        w.air = Air::Sta { sta, n: n as u16, ppdu_us: (ppdu_ns / 1000) as u32 };
        self.events.push(now + exchange, Event::Wire(dev));
        if measuring {
            let w = self.net.wifi_mut(dev);
            w.busy_ns += exchange;
            let s = &mut w.stations[sta as usize].stats;
            s.air_ns += exchange;
            s.rx_airtime_us += ppdu_ns / 1000;
            s.up_ampdus += 1;
        }
    }

    /// Station `sta`'s exchange of `n` frames is over: the AP charges the RX airtime
    /// (`ieee80211_sta_register_airtime(sta, tid, 0, rx_airtime)`), the delivered
    /// frames go up its receive side, lost ones go back to the head of the station's
    /// queue (up to `retry_limit` attempts), and the air goes on.
    fn wifi_uplink_done(&mut self, dev: DevId, sta: u16, n: u16, ppdu_us: u32) {
        let now = self.now;
        let measuring = self.measuring();
        let w = self.net.wifi_mut(dev);
        if let Mac::FqMac { sched, .. } = &mut w.mac {
            sched.register_airtime(sta as u32, AC_BE, 0, ppdu_us, now);
        }
        let per = w.stations[sta as usize].per;
        let mut lost = std::mem::take(&mut w.up_lost);
        for _ in 0..n {
            let Driver::Wifi(w) = &mut self.net.devs[dev].driver else { unreachable!("device {dev} is a radio") };
            let (id, retries) = w.stations[sta as usize].up.queue.pop_front().expect("the frames on the air");
            let ok = per <= 0.0 || w.rng.gen::<f64>() >= per;
            if !ok && retries < w.retry_limit {
                lost.push((id, retries + 1));
                continue;
            }
            w.uplink_frames -= 1;
            let s = &mut w.stations[sta as usize].stats;
            if !ok {
                s.up_failed += measuring as u64;
                self.kfree_skb(id);
                continue;
            }
            let len = self.pkts.get(id).len as u64;
            if measuring {
                s.up_bytes += len - 14;
                s.up_frames += 1;
                s.payload_bytes += payload_len(self.pkts.get(id));
            }
            let t = &mut w.stations[sta as usize].total;
            t.rx_bytes += len;
            t.rx_packets += 1;
            t.last_active_ns = Some(now);
            self.nic_rx(dev, id);
        }
        let w = self.net.wifi_mut(dev);
        let up = &mut w.stations[sta as usize].up;
        let e = STA_EDCA[AC_BE];
        up.cw = if lost.len() == n as usize && n > 0 { (2 * up.cw + 1).min(e.cw_max) } else { e.cw_min };
        for &f in lost.iter().rev() {
            up.queue.push_front(f);
        }
        lost.clear();
        w.up_lost = lost;
        self.wifi_air_start(dev);
    }
}

impl Wifi {
    /// EDCA on an idle air between the AP (its highest AC with an aggregate) and each
    /// station with a frame (best effort): each has a backoff counter, drawn from
    /// `[0, CW]` when it has none; the one whose AIFS + backoff ends first wins and
    /// draws anew next time, the others keep what is left of theirs. Returns the
    /// winner and its AIFS + backoff, ns.
    fn edca_contend(&mut self) -> Option<(Air, u64)> {
        let slot = self.timing.slot_ns;
        let ap_ac = (0..IEEE80211_NUM_ACS).find(|&ac| !self.hw[ac].is_empty());
        let mut best: Option<(Air, u64)> = None;
        if let Some(ac) = ap_ac {
            let cw = self.cw[ac];
            let bo = *self.ap_backoff.get_or_insert_with(|| self.rng.gen_range(0..=cw));
            best = Some((Air::Ap(ac), self.timing.aifs_ns(AP_EDCA[ac].aifsn) + bo as u64 * slot));
        }
        let sta_aifs = self.timing.aifs_ns(STA_EDCA[AC_BE].aifsn);
        if self.uplink_frames > 0 {
            for (i, st) in self.stations.iter_mut().enumerate() {
                if st.up.queue.is_empty() {
                    continue;
                }
                let cw = st.up.cw;
                let bo = *st.up.backoff.get_or_insert_with(|| self.rng.gen_range(0..=cw));
                let t = sta_aifs + bo as u64 * slot;
                if best.is_none_or(|(_, b)| t < b) {
                    best = Some((Air::Sta { sta: i as u16, n: 0, ppdu_us: 0 }, t));
                }
            }
        }
        let (win, t) = best?;
        if let Some(ac) = ap_ac {
            if win == Air::Ap(ac) {
                self.ap_backoff = None;
            } else {
                edca_count_down(&mut self.ap_backoff, self.timing.aifs_ns(AP_EDCA[ac].aifsn), t, slot);
            }
        }
        if self.uplink_frames > 0 {
            for (i, st) in self.stations.iter_mut().enumerate() {
                if matches!(win, Air::Sta { sta, .. } if sta as usize == i) {
                    st.up.backoff = None;
                } else if !st.up.queue.is_empty() {
                    edca_count_down(&mut st.up.backoff, sta_aifs, t, slot);
                }
            }
        }
        Some((win, t))
    }

    /// The TID list of `ac` ath9k's own round robin serves.
    fn acq_list(&self, ac: usize) -> &VecDeque<u32> {
        match &self.mac {
            Mac::FqMac { acq: Some(acq), .. } => &acq.list[ac],
            Mac::Fifo { rr, .. } => &rr[ac],
            Mac::FqMac { acq: None, .. } => unreachable!("mac80211's scheduler"),
        }
    }

    /// The head of the TID list of `ac`, taken off it.
    fn acq_pop(&mut self, ac: usize) -> Option<u32> {
        match &mut self.mac {
            Mac::FqMac { acq: Some(acq), .. } => acq.pop(ac),
            Mac::Fifo { rr, .. } => rr[ac].pop_front(),
            Mac::FqMac { acq: None, .. } => unreachable!("mac80211's scheduler"),
        }
    }

    /// `ath_tx_queue_tid()` for a TID with frames that is off the list.
    fn acq_queue_tid(&mut self, txq: u32, ac: usize) {
        match &mut self.mac {
            Mac::FqMac { acq: Some(acq), .. } => acq.queue_tid(txq, ac),
            Mac::Fifo { rr, .. } => rr[ac].push_back(txq),
            Mac::FqMac { acq: None, .. } => unreachable!("mac80211's scheduler"),
        }
    }

    /// `ath_tid_has_buffered()`: frames in the TID's queue, or one held back.
    fn tid_has_frames(&self, txq: u32) -> bool {
        match &self.mac {
            Mac::FqMac { fq, held, .. } => fq.tin_packets(txq) > 0 || held[txq as usize].is_some(),
            Mac::Fifo { tids, .. } => !tids[txq as usize].is_empty(),
        }
    }

    /// One turn's frames from TID `txq`: an A-MPDU within its limits, or a burst.
    fn tid_fill(&mut self, txq: u32, sta: u16, ac: usize, now: u64, frames: &mut Vec<HwFrame>, measuring: bool) {
        if matches!(self.mac, Mac::FqMac { .. }) {
            return self.fill_from_txq(txq, sta, ac, now, frames, measuring);
        }
        let (agg, rate) = (self.aggregates(sta, ac), self.stations[sta as usize].rate);
        let mut padded = 0u32;
        loop {
            let Mac::Fifo { tids, .. } = &self.mac else { unreachable!("fifo") };
            let Some(len) = tids[txq as usize].front().map(|s| s.len - 14) else { break };
            let fits = if agg { self.fits(agg, frames.len() as u32, padded, len, rate) } else { frames.len() < ATH_NON_AGGR_BURST };
            if !fits {
                break;
            }
            let Mac::Fifo { tids, count, .. } = &mut self.mac else { unreachable!("fifo") };
            let skb = tids[txq as usize].pop_front().expect("peeked");
            count[ac] -= 1;
            padded += airtime::ampdu_subframe_len(len);
            frames.push(HwFrame { skb, t_dequeue: now, aql_us: 0, retries: 0 });
        }
    }

    /// `ieee80211_tx_dequeue()` from TXQ `txq` into `frames` within the A-MPDU limits;
    /// a frame that does not fit is held for the TXQ's next aggregate. Each frame is
    /// charged its AQL estimate, and each call first asks `ieee80211_txq_airtime_check()`
    /// (5.5's AQL, in `ieee80211_tx_dequeue()` itself): once the station's pending
    /// airtime reaches its limit the TXQ gives nothing more, so an aggregate ends there
    /// and the pending airtime passes the limit by one frame's estimate at most.
    fn fill_from_txq(&mut self, txq: u32, sta: u16, ac: usize, now: u64, frames: &mut Vec<HwFrame>, measuring: bool) {
        let agg = self.aggregates(sta, ac);
        let rate = self.stations[sta as usize].rate;
        let nsta = self.stations.len() as u64;
        let Mac::FqMac { cparams, slow_cparams, acq, .. } = &self.mac else { unreachable!("fq_mac") };
        // ath9k's ath_tx_form_burst() (ath9k-acq); one frame per turn otherwise.
        let burst = if acq.is_some() { ATH_NON_AGGR_BURST } else { 1 };
        // sta->cparams: the slow-station rule takes the expected throughput, here the
        // PHY rate (no minstrel).
        let params = match slow_cparams {
            Some(p) if rate.kbps() < 6000 * nsta => *p,
            _ => *cparams,
        };
        let mut padded = 0u32;
        loop {
            let Mac::FqMac { fq, sched, held, .. } = &mut self.mac else { unreachable!("fq_mac") };
            let f = match held[txq as usize].take() {
                Some(f) => f,
                None => {
                    if !sched.txq_airtime_check(txq) {
                        break;
                    }
                    let Some(skb) = fq.fq_tin_dequeue(txq, &params, now, &mut self.drops) else { break };
                    let aql_us = airtime::expected_tx_airtime_us(rate, skb.len - 14, ac != AC_VO);
                    sched.update_pending_airtime(Some(sta as u32), ac, aql_us, false);
                    HwFrame { skb, t_dequeue: now, aql_us, retries: 0 }
                }
            };
            let len = f.skb.len - 14;
            let fits = if agg { self.fits(agg, frames.len() as u32, padded, len, rate) } else { frames.len() < burst };
            if !fits {
                let Mac::FqMac { held, .. } = &mut self.mac else { unreachable!("fq_mac") };
                held[txq as usize] = Some(f);
                break;
            }
            padded += airtime::ampdu_subframe_len(len);
            frames.push(f);
            if !agg && frames.len() >= burst {
                break;
            }
        }
        if measuring {
            let Mac::FqMac { sched, .. } = &self.mac else { unreachable!("fq_mac") };
            let p = sched.stas[sta as usize].airtime[ac].aql_tx_pending;
            let s = &mut self.stations[sta as usize].stats;
            s.aql_pending_max_us = s.aql_pending_max_us.max(p);
        }
    }
}

/// Building the radio from the scenario (`World::new`).
impl Builder<'_> {
    /// wifi: the AP's radio (dev 0), the stations' host and its NIC (dev 1), the air
    /// to it (link 0) and the way back (link 1).
    pub(crate) fn wifi(&mut self, wire: &NicWire, spec: &WifiSpec) -> Result<(), SetupError> {
        // The radio is built as a NIC (its receive side, its channels' NAPIs), then
        // takes its place with mac80211 on top.
        self.nic(wire)?;
        let dev0 = std::mem::replace(&mut self.devs[DevId(0)].driver, Driver::Ifb(crate::drivers::Ifb));
        let Driver::Nic(nic) = dev0 else { unreachable!("nic() built dev 0") };
        if self.path_delays.len() > 1 {
            return Err(SetupError::Unsupported("driver = \"wifi\": [[traffic]] path_delay is not supported (one air)".into()));
        }
        let wifi = Wifi::new(spec, nic, LinkId(0), self.seed);
        self.devs[DevId(0)].driver = Driver::Wifi(Box::new(wifi));
        self.reply = ReplyPath::Modelled { dev: DevId(1) };
        Ok(())
    }

    /// Each socket's station, from its `[[traffic]]` entry's `station`.
    pub(crate) fn wifi_stations(&mut self) {
        let Some(spec) = self.scn.device.wifi() else { return };
        let map: Vec<u16> = self.sock_traffic.iter().map(|&t| spec.traffic_station.get(t as usize).copied().unwrap_or(0)).collect();
        if let Driver::Wifi(w) = &mut self.devs[DevId(0)].driver {
            w.sta_of_sock = map;
        }
    }
}

/// Jain's fairness index of `x`: (sum x)^2 / (n sum x^2); 1 when all are equal.
pub fn jain(x: &[f64]) -> Option<f64> {
    let sq: f64 = x.iter().map(|v| v * v).sum();
    if x.is_empty() || sq == 0.0 {
        return None;
    }
    let s: f64 = x.iter().sum();
    Some(s * s / (x.len() as f64 * sq))
}

/// The transport payload of a frame: its data, without the Ethernet, IP and UDP (ICMP)
/// or TCP (with timestamps) headers; 0 for a bare ACK.
fn payload_len(info: &crate::arena::PktInfo) -> u64 {
    let hdr = match info.proto {
        crate::arena::Proto::Tcp => crate::wire::TCP_HDR,
        crate::arena::Proto::Udp | crate::arena::Proto::Icmp => crate::wire::ETH_HLEN + crate::wire::IPV4_HLEN + 8,
    };
    info.len.saturating_sub(hdr) as u64
}

/// The results' `wifi.*` metrics.
impl World {
    /// Per station (`wifi.station.NAME.*`) and for the radio: what was delivered each
    /// way, the air used (both ways), the waits above and below mac80211, the
    /// aggregates, AQL's pending airtime and the fq's and CoDel's counters. The Jain
    /// indices count the stations that have traffic.
    pub(crate) fn wifi_metrics(&self, m: &mut std::collections::BTreeMap<String, Option<f64>>, window_ns: u64) {
        let w = self.net.wifi(self.metrics.measured_txq.0);
        let secs = window_ns as f64 / 1e9;
        let mbps = |bytes: u64| bytes as f64 * 8.0 / secs / 1e6;
        let mut set = |k: String, v: f64| {
            m.insert(k, Some(v));
        };
        let served: Vec<usize> = (0..w.stations.len()).filter(|&i| w.sta_of_sock.contains(&(i as u16))).collect();
        let busy = w.busy_ns.max(1) as f64;
        let (mut goodput, mut air) = (Vec::new(), Vec::new());
        let mut tot = StaStats::default();
        for (i, st) in w.stations.iter().enumerate() {
            let s = &st.stats;
            let p = format!("wifi.station.{}", st.name);
            set(format!("{p}.goodput_mbps"), mbps(s.payload_bytes));
            set(format!("{p}.tx_mbps"), mbps(s.rx_bytes));
            set(format!("{p}.airtime_pct"), 100.0 * s.air_ns as f64 / busy);
            set(format!("{p}.tx_airtime_ms"), s.tx_airtime_us as f64 / 1000.0);
            set(format!("{p}.rx_mbps"), mbps(s.up_bytes));
            set(format!("{p}.rx_airtime_ms"), s.rx_airtime_us as f64 / 1000.0);
            set(format!("{p}.uplink_drops"), (s.up_drops + s.up_failed) as f64);
            set(format!("{p}.ampdu_avg_subframes"), if s.ampdus == 0 { 0.0 } else { s.subframes as f64 / s.ampdus as f64 });
            set(format!("{p}.tx_retries"), s.retries as f64);
            set(format!("{p}.tx_failed"), s.failed as f64);
            if s.rx_frames > 0 {
                set(format!("{p}.mac_queue_ms_avg"), s.mac_wait_ns as f64 / s.rx_frames as f64 / 1e6);
                set(format!("{p}.hw_queue_ms_avg"), s.hw_wait_ns as f64 / s.rx_frames as f64 / 1e6);
            }
            if let Mac::FqMac { sched, .. } = &w.mac {
                if sched.aql {
                    set(format!("{p}.aql_pending_us_max"), s.aql_pending_max_us as f64);
                }
            }
            if served.contains(&i) {
                goodput.push(mbps(s.payload_bytes));
                air.push(s.air_ns as f64);
            }
            tot.rx_bytes += s.rx_bytes;
            tot.up_bytes += s.up_bytes;
            tot.payload_bytes += s.payload_bytes;
            tot.rx_frames += s.rx_frames;
            tot.ampdus += s.ampdus;
            tot.subframes += s.subframes;
            tot.mac_wait_ns += s.mac_wait_ns;
            tot.hw_wait_ns += s.hw_wait_ns;
        }
        set("wifi.goodput_mbps".into(), mbps(tot.payload_bytes));
        set("wifi.tx_mbps".into(), mbps(tot.rx_bytes));
        set("wifi.rx_mbps".into(), mbps(tot.up_bytes));
        set("wifi.busy_pct".into(), 100.0 * w.busy_ns as f64 / window_ns as f64);
        if let Some(j) = jain(&goodput) {
            set("wifi.goodput_jain".into(), j);
        }
        if let Some(j) = jain(&air) {
            set("wifi.airtime_jain".into(), j);
        }
        if tot.ampdus > 0 {
            set("wifi.ampdu_avg_subframes".into(), tot.subframes as f64 / tot.ampdus as f64);
        }
        if tot.rx_frames > 0 {
            set("wifi.mac_queue_ms_avg".into(), tot.mac_wait_ns as f64 / tot.rx_frames as f64 / 1e6);
            set("wifi.hw_queue_ms_avg".into(), tot.hw_wait_ns as f64 / tot.rx_frames as f64 / 1e6);
        }
        if let Some(v) = hist_median_ms(&w.mac_hist) {
            set("wifi.mac_queue_ms_p50".into(), v);
        }
        if let Some(v) = hist_median_ms(&w.hw_hist) {
            set("wifi.hw_queue_ms_p50".into(), v);
        }
        if let (Some(now), base) = (w.mac_counters(), w.base.unwrap_or_default()) {
            set("wifi.codel_drops".into(), (now.codel_drops - base.codel_drops) as f64);
            set("wifi.codel_marks".into(), (now.codel_marks - base.codel_marks) as f64);
            set("wifi.fq_overlimit".into(), (now.overlimit - base.overlimit) as f64);
            set("wifi.fq_overmemory".into(), (now.overmemory - base.overmemory) as f64);
            set("wifi.fq_collisions".into(), (now.collisions - base.collisions) as f64);
        }
    }
}
