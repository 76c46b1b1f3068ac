//! pfifo_fast: mirrors pfifo_fast in net/sched/sch_generic.c, the kernel's built-in
//! default qdisc.
//!
//! Three bands chosen by `prio2band[skb->priority & TC_PRIO_MAX]`, served in strict
//! priority (band 0 first). How full a band may get depends on the kernel version,
//! selected by the model parameter `limit_mode`:
//!
//! - `"per-band"` (default, kernels >= 4.16): each band is an `skb_array`, a
//!   [`PtrRing`] of `tx_queue_len` slots. A band drops when its ring is full, and
//!   because the ring returns consumed slots to the producer in batches of 16
//!   (`__ptr_ring_discard_one`), a band holds between `tx_queue_len - 15` and
//!   `tx_queue_len` packets when it starts dropping.
//! - `"total"` (kernels <= 4.15): three plain lists sharing one limit,
//!   `qdisc->q.qlen < dev->tx_queue_len`.
//!
//! tc gives pfifo_fast no parameters (its `priomap` is read-only); `limit_mode` is the
//! only key accepted.

use super::{ArrivalDrop, DevInfo, EnqueueVerdict, Qdisc, QdiscStats};
use crate::params::{ParamError, Params};
use crate::ptr_ring::PtrRing;
use crate::Skb;
use std::collections::VecDeque;

/// `PFIFO_FAST_BANDS`.
pub const PFIFO_FAST_BANDS: usize = 3;

/// `TC_PRIO_MAX`.
const TC_PRIO_MAX: u32 = 15;

/// `prio2band[]` in sch_generic.c (tc shows it as `priomap`).
pub const PRIO2BAND: [u8; TC_PRIO_MAX as usize + 1] =
    [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];

/// `SMP_CACHE_BYTES` on x86_64, which sizes the `skb_array` batch (16 slots).
const SMP_CACHE_BYTES: usize = 64;

/// `KMALLOC_MAX_SIZE / sizeof(void *)` on x86_64 (4 MiB / 8): the largest ring
/// `__ptr_ring_init_queue_alloc()` will allocate; a longer `tx_queue_len` makes
/// `pfifo_fast_init()` fail with -ENOMEM.
pub const MAX_RING_SIZE: u32 = (4 << 20) / 8;

/// Which kernel generation's limit to apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitMode {
    /// >= 4.16: one `skb_array` of `tx_queue_len` per band.
    PerBand,
    /// <= 4.15: `qlen < tx_queue_len` over all bands together.
    Total,
}

/// One band as >= 4.16 keeps it: an `skb_array` (a ptr_ring of skb pointers). The ring
/// stores slot indices; the skbs live beside it in `skbs`, indexed by ring slot.
struct SkbArray {
    ring: PtrRing,
    skbs: Vec<Skb>,
}

impl SkbArray {
    fn new(size: usize) -> Self {
        SkbArray {
            ring: PtrRing::new(size, SMP_CACHE_BYTES),
            skbs: vec![Skb::default(); size],
        }
    }

    /// `skb_array_produce()`.
    fn produce(&mut self, skb: Skb) -> Result<(), Skb> {
        let slot = self.ring.producer_index();
        if self.ring.produce(slot as u32).is_err() {
            return Err(skb);
        }
        self.skbs[slot] = skb;
        Ok(())
    }

    /// `__skb_array_consume()`.
    fn consume(&mut self) -> Option<Skb> {
        self.ring.consume().map(|slot| self.skbs[slot as usize])
    }
}

enum Bands {
    PerBand([SkbArray; PFIFO_FAST_BANDS]),
    Total {
        lists: [VecDeque<Skb>; PFIFO_FAST_BANDS],
        limit: u32,
    },
}

pub struct PfifoFast {
    bands: Bands,
    qlen: u32,
    backlog: u64,
    stats: QdiscStats,
}

impl PfifoFast {
    /// Mirrors `pfifo_fast_init()`. Only the model parameter `limit_mode`
    /// (`"per-band"` | `"total"`, see the module docs) is accepted. In per-band mode a
    /// device with `tx_queue_len == 0` is rejected, as the kernel does ("guard against
    /// zero length rings", -EINVAL).
    pub fn from_params(mut params: Params, dev: &DevInfo) -> Result<Self, ParamError> {
        let mode = params.take_choice("limit_mode", "per-band", &["per-band", "total"])?;
        params.finish(&["limit_mode"])?;
        let mode = if mode == "total" {
            LimitMode::Total
        } else {
            LimitMode::PerBand
        };
        if mode == LimitMode::PerBand && dev.tx_queue_len == 0 {
            return Err(ParamError::Invalid {
                key: "limit_mode".into(),
                message: "pfifo_fast (>= 4.16) rejects a device with txqueuelen 0".into(),
                expected: "a device with tx_queue_len >= 1, or limit_mode = \"total\"".into(),
            });
        }
        if mode == LimitMode::PerBand && dev.tx_queue_len > MAX_RING_SIZE {
            return Err(ParamError::Invalid {
                key: "limit_mode".into(),
                message: format!(
                    "txqueuelen {} exceeds the largest skb_array ring ({MAX_RING_SIZE}); pfifo_fast_init() fails with ENOMEM",
                    dev.tx_queue_len
                ),
                expected: format!("a device with tx_queue_len <= {MAX_RING_SIZE}, or limit_mode = \"total\""),
            });
        }
        Ok(Self::new(mode, dev.tx_queue_len))
    }

    pub fn new(mode: LimitMode, tx_queue_len: u32) -> Self {
        let bands = match mode {
            LimitMode::PerBand => Bands::PerBand(std::array::from_fn(|_| {
                SkbArray::new(tx_queue_len as usize)
            })),
            LimitMode::Total => Bands::Total {
                lists: Default::default(),
                limit: tx_queue_len,
            },
        };
        PfifoFast {
            bands,
            qlen: 0,
            backlog: 0,
            stats: QdiscStats::default(),
        }
    }

    pub fn limit_mode(&self) -> LimitMode {
        match self.bands {
            Bands::PerBand(_) => LimitMode::PerBand,
            Bands::Total { .. } => LimitMode::Total,
        }
    }

    /// Packets held in `band`.
    pub fn band_len(&self, band: usize) -> usize {
        match &self.bands {
            Bands::PerBand(b) => b[band].ring.len(),
            Bands::Total { lists, .. } => lists[band].len(),
        }
    }

    /// `prio2band[priority & TC_PRIO_MAX]`.
    pub fn band_of(skb: &Skb) -> usize {
        PRIO2BAND[(skb.priority & TC_PRIO_MAX) as usize] as usize
    }
}

impl Qdisc for PfifoFast {
    fn kind(&self) -> &'static str {
        "pfifo_fast"
    }

    /// `prio_print_opt()`'s layout for pfifo_fast: the bands and the fixed priomap.
    fn tc_options(&self) -> String {
        let map: Vec<String> = PRIO2BAND.iter().map(|b| b.to_string()).collect();
        format!("bands {PFIFO_FAST_BANDS} priomap {}", map.join(" "))
    }

    /// `pfifo_fast_enqueue()`: tail-drop when the band ring (or, <= 4.15, the whole
    /// qdisc) is full.
    fn enqueue(&mut self, skb: Skb, _now: u64, drops: &mut Vec<u32>) -> EnqueueVerdict {
        let band = Self::band_of(&skb);
        let len = skb.len as u64;
        let result = match &mut self.bands {
            Bands::PerBand(b) => b[band].produce(skb),
            Bands::Total { lists, limit } => {
                if self.qlen < *limit {
                    lists[band].push_back(skb);
                    Ok(())
                } else {
                    Err(skb)
                }
            }
        };
        match result {
            Ok(()) => {
                self.qlen += 1;
                self.backlog += len;
                EnqueueVerdict::Success
            }
            Err(skb) => {
                self.stats.drops += 1;
                drops.push(skb.id);
                EnqueueVerdict::Dropped
            }
        }
    }

    /// `pfifo_fast_dequeue()`: the first non-empty band, 0 before 1 before 2.
    fn dequeue(&mut self, _now: u64, _drops: &mut Vec<u32>) -> Option<Skb> {
        let skb = match &mut self.bands {
            Bands::PerBand(b) => b.iter_mut().find_map(|band| band.consume()),
            Bands::Total { lists, .. } => lists.iter_mut().find_map(|l| l.pop_front()),
        }?;
        self.qlen -= 1;
        self.backlog -= skb.len as u64;
        Some(skb)
    }

    fn qlen(&self) -> u32 {
        self.qlen
    }

    fn backlog(&self) -> u64 {
        self.backlog
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    /// `pfifo_fast_init()` always sets `TCQ_F_CAN_BYPASS`.
    fn can_bypass(&self) -> bool {
        true
    }

    /// The arrival's band is full: its ring's producer slot is taken (lockless), or
    /// the qdisc holds its limit (before 4.16).
    #[inline]
    fn arrival_dropped(&self, skb: &Skb, _now: u64) -> Option<ArrivalDrop> {
        let full = match &self.bands {
            Bands::PerBand(b) => !b[Self::band_of(skb)].ring.check_produce(),
            Bands::Total { limit, .. } => self.qlen >= *limit,
        };
        full.then_some(ArrivalDrop { verdict: EnqueueVerdict::Dropped, hint: 0 })
    }

    #[inline]
    fn drop_arrival(&mut self, _drop: ArrivalDrop) {
        self.stats.drops += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;
    use std::collections::BTreeMap;

    fn skb(id: u32, priority: u32) -> Skb {
        Skb {
            id,
            len: 100,
            priority,
            ..Skb::default()
        }
    }

    fn dev(tx_queue_len: u32) -> DevInfo {
        DevInfo {
            tx_queue_len,
            ..DevInfo::default()
        }
    }

    fn mode(m: &str) -> Params {
        Params::new(BTreeMap::from([(
            "limit_mode".to_string(),
            ParamValue::Str(m.into()),
        )]))
    }

    #[test]
    fn strict_priority_by_prio2band() {
        let mut q = PfifoFast::from_params(Params::default(), &dev(1000)).unwrap();
        let mut drops = Vec::new();
        // priority 0 -> band 1, 2 (bulk) -> band 2, 6 (interactive) -> band 0,
        // 7 (control) -> band 0, 4 -> band 1; priority is masked with 15 (22 -> 6).
        for (id, prio) in [(1, 0), (2, 2), (3, 6), (4, 4), (5, 7), (6, 22)] {
            assert_eq!(
                q.enqueue(skb(id, prio), 0, &mut drops),
                EnqueueVerdict::Success
            );
        }
        let order: Vec<u32> = std::iter::from_fn(|| q.dequeue(0, &mut drops))
            .map(|s| s.id)
            .collect();
        assert_eq!(order, [3, 5, 6, 1, 4, 2]);
        assert_eq!((q.qlen(), q.backlog()), (0, 0));
    }

    #[test]
    fn per_band_limit_is_tx_queue_len_each() {
        let mut q = PfifoFast::from_params(Params::default(), &dev(100)).unwrap();
        let mut drops = Vec::new();
        for id in 0..100 {
            assert_eq!(
                q.enqueue(skb(id, 0), 0, &mut drops),
                EnqueueVerdict::Success
            );
        }
        assert_eq!(
            q.enqueue(skb(100, 0), 0, &mut drops),
            EnqueueVerdict::Dropped
        );
        // Other bands have their own 100 slots.
        assert_eq!(
            q.enqueue(skb(101, 6), 0, &mut drops),
            EnqueueVerdict::Success
        );
        assert_eq!(
            q.enqueue(skb(102, 2), 0, &mut drops),
            EnqueueVerdict::Success
        );
        assert_eq!((q.qlen(), q.stats().drops), (102, 1));
    }

    /// The band ring frees consumed slots 16 at a time (64-byte lines): after
    /// draining 15 packets from a full band, it still drops; after the 16th it takes
    /// exactly 16.
    #[test]
    fn per_band_ring_batching_shows_through() {
        let mut q = PfifoFast::new(LimitMode::PerBand, 100);
        let mut drops = Vec::new();
        for id in 0..100 {
            q.enqueue(skb(id, 0), 0, &mut drops);
        }
        for _ in 0..15 {
            q.dequeue(0, &mut drops).unwrap();
        }
        assert_eq!(
            q.enqueue(skb(1000, 0), 0, &mut drops),
            EnqueueVerdict::Dropped
        );
        q.dequeue(0, &mut drops).unwrap();
        for id in 0..16 {
            assert_eq!(
                q.enqueue(skb(2000 + id, 0), 0, &mut drops),
                EnqueueVerdict::Success
            );
        }
        assert_eq!(
            q.enqueue(skb(3000, 0), 0, &mut drops),
            EnqueueVerdict::Dropped
        );
        // FIFO within the band.
        assert_eq!(q.dequeue(0, &mut drops).unwrap().id, 16);
    }

    #[test]
    fn total_limit_is_shared() {
        let mut q = PfifoFast::from_params(mode("total"), &dev(3)).unwrap();
        let mut drops = Vec::new();
        assert_eq!(q.enqueue(skb(1, 0), 0, &mut drops), EnqueueVerdict::Success);
        assert_eq!(q.enqueue(skb(2, 6), 0, &mut drops), EnqueueVerdict::Success);
        assert_eq!(q.enqueue(skb(3, 2), 0, &mut drops), EnqueueVerdict::Success);
        assert_eq!(q.enqueue(skb(4, 6), 0, &mut drops), EnqueueVerdict::Dropped);
        assert_eq!(q.dequeue(0, &mut drops).unwrap().id, 2);
    }

    #[test]
    fn params() {
        assert!(PfifoFast::from_params(Params::default(), &dev(0)).is_err());
        assert!(PfifoFast::from_params(mode("total"), &dev(0)).is_ok());
        assert!(PfifoFast::from_params(mode("bogus"), &dev(10)).is_err());
        let p = Params::new(BTreeMap::from([("limit".to_string(), ParamValue::Int(5))]));
        assert!(matches!(
            PfifoFast::from_params(p, &dev(10)),
            Err(ParamError::Unknown { .. })
        ));
        assert!(PfifoFast::new(LimitMode::PerBand, 10).can_bypass());
    }
}
