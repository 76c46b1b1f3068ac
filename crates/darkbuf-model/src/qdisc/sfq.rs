//! sfq: mirrors net/sched/sch_sfq.c.
//! (stub: being implemented)
use super::{DevInfo, EnqueueVerdict, Qdisc, QdiscStats};
use crate::params::{ParamError, Params};
use crate::Skb;
use std::collections::VecDeque;

pub struct Sfq { kind: &'static str, limit: u64, q: VecDeque<Skb>, backlog: u64, stats: QdiscStats }

impl Sfq {
    pub fn from_params(mut params: Params, dev: &DevInfo) -> Result<Self, ParamError> {
        let limit = params.take_u64("limit", dev.tx_queue_len as u64, 0, u32::MAX as u64)?;
        params.finish(&["limit"])?;
        let kind = "sfq";
        Ok(Sfq { kind, limit, q: VecDeque::new(), backlog: 0, stats: QdiscStats::default() })
    }
}

impl Qdisc for Sfq {
    fn kind(&self) -> &'static str { self.kind }
    fn enqueue(&mut self, skb: Skb, _now: u64, drops: &mut Vec<Skb>) -> EnqueueVerdict {
        if (self.q.len() as u64) < self.limit { self.backlog += skb.len as u64; self.q.push_back(skb); EnqueueVerdict::Success }
        else { self.stats.drops += 1; drops.push(skb); EnqueueVerdict::Dropped }
    }
    fn dequeue(&mut self, _now: u64, _drops: &mut Vec<Skb>) -> Option<Skb> {
        let s = self.q.pop_front()?; self.backlog -= s.len as u64; Some(s)
    }
    fn qlen(&self) -> u32 { self.q.len() as u32 }
    fn backlog(&self) -> u64 { self.backlog }
    fn stats(&self) -> &QdiscStats { &self.stats }
    fn can_bypass(&self) -> bool { self.limit >= 1 }
}
