//! pfifo, bfifo and pfifo_head_drop: mirrors net/sched/sch_fifo.c.
//!
//! One FIFO with a limit in packets (pfifo, pfifo_head_drop) or bytes (bfifo).
//! pfifo and bfifo tail-drop the arriving packet; pfifo_head_drop drops the oldest
//! packet to make room and returns NET_XMIT_CN.

use super::{ArrivalDrop, DevInfo, EnqueueVerdict, Qdisc, QdiscStats};
use crate::params::{ParamError, Params};
use crate::Skb;
use std::collections::VecDeque;

/// Which of the three `Qdisc_ops` in sch_fifo.c.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FifoKind {
    /// `pfifo_qdisc_ops`: `pfifo_enqueue`, limit in packets.
    Pfifo,
    /// `bfifo_qdisc_ops`: `bfifo_enqueue`, limit in bytes.
    Bfifo,
    /// `pfifo_head_drop_qdisc_ops`: `pfifo_tail_enqueue`, limit in packets.
    PfifoHeadDrop,
}

impl FifoKind {
    pub fn name(self) -> &'static str {
        match self {
            FifoKind::Pfifo => "pfifo",
            FifoKind::Bfifo => "bfifo",
            FifoKind::PfifoHeadDrop => "pfifo_head_drop",
        }
    }
}

/// A FIFO qdisc (`sch->q`, `sch->limit`, `sch->qstats`).
pub struct Fifo {
    kind: FifoKind,
    /// `sch->limit`: packets (pfifo, pfifo_head_drop) or bytes (bfifo).
    limit: u32,
    /// `TCQ_F_CAN_BYPASS` as `__fifo_init()` decides it.
    can_bypass: bool,
    q: VecDeque<Skb>,
    backlog: u64,
    stats: QdiscStats,
}

impl Fifo {
    /// Mirrors `__fifo_init()`. Without `limit`: `tx_queue_len` packets, or for bfifo
    /// `tx_queue_len * psched_mtu(dev)` bytes (a `u32` product, wrapping as in the
    /// kernel). `limit` is a packet count for pfifo/pfifo_head_drop and a size
    /// (integer bytes or a tc size string such as "150kb") for bfifo.
    /// Bypass: pfifo/pfifo_head_drop if `limit >= 1`, bfifo if `limit >= mtu`.
    pub fn from_params(kind: &str, mut params: Params, dev: &DevInfo) -> Result<Self, ParamError> {
        let kind = match kind {
            "bfifo" => FifoKind::Bfifo,
            "pfifo_head_drop" => FifoKind::PfifoHeadDrop,
            _ => FifoKind::Pfifo,
        };
        let limit = match kind {
            FifoKind::Bfifo => {
                let default = dev.tx_queue_len.wrapping_mul(dev.mtu_l2);
                params.take_size("limit", default as u64, 0, u32::MAX as u64)? as u32
            }
            _ => params.take_u32("limit", dev.tx_queue_len, 0, u32::MAX)?,
        };
        params.finish(&["limit"])?;
        Ok(Self::new(kind, limit, dev))
    }

    /// A FIFO with an explicit limit (packets, or bytes for bfifo).
    pub fn new(kind: FifoKind, limit: u32, dev: &DevInfo) -> Self {
        let can_bypass = match kind {
            FifoKind::Bfifo => limit >= dev.mtu_l2,
            _ => limit >= 1,
        };
        Fifo {
            kind,
            limit,
            can_bypass,
            q: VecDeque::new(),
            backlog: 0,
            stats: QdiscStats::default(),
        }
    }

    pub fn fifo_kind(&self) -> FifoKind {
        self.kind
    }

    /// `sch->limit`.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// `qdisc_enqueue_tail()`.
    fn enqueue_tail(&mut self, skb: Skb) -> EnqueueVerdict {
        self.backlog += skb.len as u64;
        self.q.push_back(skb);
        EnqueueVerdict::Success
    }

    /// `qdisc_drop()` of the arriving packet.
    fn drop(&mut self, skb: Skb, drops: &mut Vec<u32>) -> EnqueueVerdict {
        self.stats.drops += 1;
        drops.push(skb.id);
        EnqueueVerdict::Dropped
    }
}

impl Qdisc for Fifo {
    fn kind(&self) -> &'static str {
        self.kind.name()
    }

    /// `fifo_dump()`: the limit, in packets or (bfifo) bytes.
    fn tc_options(&self) -> String {
        match self.kind {
            FifoKind::Bfifo => format!("limit {}", super::tc_print::size(self.limit as u64)),
            _ => format!("limit {}p", self.limit),
        }
    }

    /// `pfifo_enqueue()`, `bfifo_enqueue()` or `pfifo_tail_enqueue()`.
    fn enqueue(&mut self, skb: Skb, _now: u64, drops: &mut Vec<u32>) -> EnqueueVerdict {
        match self.kind {
            FifoKind::Bfifo => {
                if self.backlog + skb.len as u64 <= self.limit as u64 {
                    self.enqueue_tail(skb)
                } else {
                    self.drop(skb, drops)
                }
            }
            FifoKind::Pfifo => {
                if (self.q.len() as u64) < self.limit as u64 {
                    self.enqueue_tail(skb)
                } else {
                    self.drop(skb, drops)
                }
            }
            FifoKind::PfifoHeadDrop => {
                if (self.q.len() as u64) < self.limit as u64 {
                    return self.enqueue_tail(skb);
                }
                // Queue full: __qdisc_queue_drop_head() then qdisc_qstats_drop(). The
                // kernel counts the drop even when the queue is empty (limit 0), in
                // which case nothing is actually freed.
                if let Some(head) = self.q.pop_front() {
                    self.backlog -= head.len as u64;
                    drops.push(head.id);
                }
                self.stats.drops += 1;
                self.enqueue_tail(skb);
                EnqueueVerdict::Congested
            }
        }
    }

    /// `qdisc_dequeue_head()`.
    fn dequeue(&mut self, _now: u64, _drops: &mut Vec<u32>) -> Option<Skb> {
        let skb = self.q.pop_front()?;
        self.backlog -= skb.len as u64;
        Some(skb)
    }

    fn qlen(&self) -> u32 {
        self.q.len() as u32
    }

    fn backlog(&self) -> u64 {
        self.backlog
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    fn can_bypass(&self) -> bool {
        self.can_bypass
    }

    /// pfifo and bfifo drop the arrival at their limit (`qdisc_drop()`);
    /// pfifo_head_drop drops the head instead.
    #[inline]
    fn arrival_dropped(&self, skb: &Skb, _now: u64) -> Option<ArrivalDrop> {
        let full = match self.kind {
            FifoKind::Bfifo => self.backlog + skb.len as u64 > self.limit as u64,
            FifoKind::Pfifo => self.q.len() as u64 >= self.limit as u64,
            FifoKind::PfifoHeadDrop => false,
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


    fn skb(id: u32, len: u32) -> Skb {
        Skb {
            id,
            len,
            ..Skb::default()
        }
    }

    #[test]
    fn defaults_follow_the_device() {
        let dev = DevInfo::default();
        let p = Fifo::from_params("pfifo", Params::default(), &dev).unwrap();
        assert_eq!(p.limit(), 1000);
        let b = Fifo::from_params("bfifo", Params::default(), &dev).unwrap();
        assert_eq!(b.limit(), 1000 * 1514);
        let h = Fifo::from_params("pfifo_head_drop", Params::default(), &dev).unwrap();
        assert_eq!(h.limit(), 1000);
        assert!(p.can_bypass() && b.can_bypass() && h.can_bypass());
    }

    #[test]
    fn bfifo_accepts_size_strings_and_bypass_needs_an_mtu() {
        let dev = DevInfo::default();
        let b = Fifo::from_params(
            "bfifo",
            Params::from_pairs(&[("limit", ParamValue::Str("3kb".into()))]),
            &dev,
        )
        .unwrap();
        assert_eq!(b.limit(), 3072);
        assert!(b.can_bypass());
        let small =
            Fifo::from_params("bfifo", Params::from_pairs(&[("limit", ParamValue::Int(1513))]), &dev).unwrap();
        assert!(!small.can_bypass());
        let zero =
            Fifo::from_params("pfifo", Params::from_pairs(&[("limit", ParamValue::Int(0))]), &dev).unwrap();
        assert!(!zero.can_bypass());
        assert!(Fifo::from_params("pfifo", Params::from_pairs(&[("limt", ParamValue::Int(1))]), &dev).is_err());
    }

    #[test]
    fn pfifo_tail_drops() {
        let dev = DevInfo::default();
        let mut q =
            Fifo::from_params("pfifo", Params::from_pairs(&[("limit", ParamValue::Int(2))]), &dev).unwrap();
        let mut drops = Vec::new();
        assert_eq!(
            q.enqueue(skb(1, 100), 0, &mut drops),
            EnqueueVerdict::Success
        );
        assert_eq!(
            q.enqueue(skb(2, 100), 0, &mut drops),
            EnqueueVerdict::Success
        );
        assert_eq!(
            q.enqueue(skb(3, 100), 0, &mut drops),
            EnqueueVerdict::Dropped
        );
        assert_eq!(drops.clone(), [3]);
        assert_eq!((q.qlen(), q.backlog(), q.stats().drops), (2, 200, 1));
        assert_eq!(q.dequeue(0, &mut drops).unwrap().id, 1);
        assert_eq!(q.dequeue(0, &mut drops).unwrap().id, 2);
        assert!(q.dequeue(0, &mut drops).is_none());
    }

    #[test]
    fn bfifo_counts_bytes_inclusive() {
        let dev = DevInfo::default();
        let mut q =
            Fifo::from_params("bfifo", Params::from_pairs(&[("limit", ParamValue::Int(3000))]), &dev).unwrap();
        let mut drops = Vec::new();
        assert_eq!(
            q.enqueue(skb(1, 1500), 0, &mut drops),
            EnqueueVerdict::Success
        );
        assert_eq!(
            q.enqueue(skb(2, 1500), 0, &mut drops),
            EnqueueVerdict::Success
        ); // 3000 <= 3000
        assert_eq!(q.enqueue(skb(3, 1), 0, &mut drops), EnqueueVerdict::Dropped);
        assert_eq!(q.backlog(), 3000);
    }

    #[test]
    fn head_drop_drops_oldest_and_reports_cn() {
        let dev = DevInfo::default();
        let mut q = Fifo::from_params(
            "pfifo_head_drop",
            Params::from_pairs(&[("limit", ParamValue::Int(2))]),
            &dev,
        )
        .unwrap();
        let mut drops = Vec::new();
        q.enqueue(skb(1, 100), 0, &mut drops);
        q.enqueue(skb(2, 200), 0, &mut drops);
        assert_eq!(
            q.enqueue(skb(3, 300), 0, &mut drops),
            EnqueueVerdict::Congested
        );
        assert_eq!(drops.clone(), [1]);
        assert_eq!((q.qlen(), q.backlog(), q.stats().drops), (2, 500, 1));
        assert_eq!(q.dequeue(0, &mut drops).unwrap().id, 2);
        assert_eq!(q.dequeue(0, &mut drops).unwrap().id, 3);
    }
}
