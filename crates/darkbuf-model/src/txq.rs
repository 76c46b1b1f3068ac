//! A TX queue's state bits and the BQL hooks: mirrors `struct netdev_queue` and the
//! inline helpers of include/linux/netdevice.h.
//!
//! The driver stop bit (`__QUEUE_STATE_DRV_XOFF`) and the BQL stop bit
//! (`__QUEUE_STATE_STACK_XOFF`) are separate: a queue woken by its driver stays stopped
//! while BQL holds it, and the other way round. The hooks return whether the caller must
//! `__netif_schedule()` the queue's qdisc, because scheduling involves CPUs, which the
//! simulator owns.

use crate::dql::{Dql, DqlError};

/// Bit values of `txq->state`.
pub const QUEUE_STATE_DRV_XOFF: u8 = 1 << 0;
pub const QUEUE_STATE_STACK_XOFF: u8 = 1 << 1;
pub const QUEUE_STATE_FROZEN: u8 = 1 << 2;

/// Counters for how often each stop bit was set (the seed's bpftrace `stack_xoff` /
/// `drv_xoff` lines count transitions into the stopped state).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TxqStats {
    pub stack_xoff: u64,
    pub drv_xoff: u64,
}

/// `struct netdev_queue`, as far as the transmit path reads it.
#[derive(Clone, Debug)]
pub struct NetdevQueue {
    pub state: u8,
    /// `txq->dql`; `None` when the driver does not use BQL.
    pub dql: Option<Dql>,
    /// `txq->trans_start` in jiffies (set on every stop, for the watchdog).
    pub trans_start: u64,
    pub stats: TxqStats,
}

impl NetdevQueue {
    pub fn new(dql: Option<Dql>) -> Self {
        NetdevQueue { state: 0, dql, trans_start: 0, stats: TxqStats::default() }
    }

    /// `netif_tx_queue_stopped()`: the driver's bit only.
    #[inline]
    pub fn tx_queue_stopped(&self) -> bool {
        self.state & QUEUE_STATE_DRV_XOFF != 0
    }

    /// `netif_xmit_stopped()`: driver or BQL.
    #[inline]
    pub fn xmit_stopped(&self) -> bool {
        self.state & (QUEUE_STATE_DRV_XOFF | QUEUE_STATE_STACK_XOFF) != 0
    }

    /// `netif_xmit_frozen_or_stopped()`: what the qdisc layer checks before transmitting.
    #[inline]
    pub fn xmit_frozen_or_stopped(&self) -> bool {
        self.state != 0
    }

    /// `netif_xmit_frozen_or_drv_stopped()`.
    #[inline]
    pub fn xmit_frozen_or_drv_stopped(&self) -> bool {
        self.state & (QUEUE_STATE_DRV_XOFF | QUEUE_STATE_FROZEN) != 0
    }

    /// `netif_tx_stop_queue()`.
    #[inline]
    pub fn tx_stop_queue(&mut self, jiffies: u64) {
        self.trans_start = jiffies;
        if self.state & QUEUE_STATE_DRV_XOFF == 0 {
            self.stats.drv_xoff += 1;
        }
        self.state |= QUEUE_STATE_DRV_XOFF;
    }

    /// `netif_tx_start_queue()`: clears DRV_XOFF without scheduling the qdisc.
    #[inline]
    pub fn tx_start_queue(&mut self) {
        self.state &= !QUEUE_STATE_DRV_XOFF;
    }

    /// `netif_tx_wake_queue()`: returns true when DRV_XOFF was set and is now cleared, in
    /// which case the caller must `__netif_schedule()` the qdisc, even if BQL still
    /// holds the queue.
    #[must_use]
    #[inline]
    pub fn tx_wake_queue(&mut self) -> bool {
        let was = self.state & QUEUE_STATE_DRV_XOFF != 0;
        self.state &= !QUEUE_STATE_DRV_XOFF;
        was
    }

    /// `netdev_tx_sent_queue()`: charges `bytes` to DQL and sets STACK_XOFF once the
    /// limit is exceeded. The object that crosses the limit is already queued, so the
    /// producer overshoots by one object. Without BQL this is a no-op.
    #[inline]
    pub fn netdev_tx_sent_queue(&mut self, bytes: u32, jiffies: u64) -> Result<(), DqlError> {
        let Some(dql) = self.dql.as_mut() else { return Ok(()) };
        dql.queued(bytes)?;
        if dql.avail() >= 0 {
            return Ok(());
        }
        self.trans_start = jiffies;
        if self.state & QUEUE_STATE_STACK_XOFF == 0 {
            self.stats.stack_xoff += 1;
        }
        self.state |= QUEUE_STATE_STACK_XOFF;
        // The kernel re-checks dql_avail() after smp_mb() in case a completion raced in;
        // the simulator serializes events, so the re-check cannot succeed here.
        Ok(())
    }

    /// `__netdev_tx_sent_queue()` (3e59020abf0f): with `xmit_more` (more skbs of the
    /// same bulk follow) only `dql_queued()`, so STACK_XOFF waits for the bulk's last
    /// skb; otherwise `netdev_tx_sent_queue()`. Returns whether the driver rings its
    /// doorbell now: always for the last skb, and mid-bulk only if DRV_XOFF is set (the
    /// driver just stopped the queue, so nothing more will come to flush it).
    #[inline]
    pub fn netdev_tx_sent_queue_more(&mut self, bytes: u32, xmit_more: bool, jiffies: u64) -> Result<bool, DqlError> {
        if xmit_more {
            if let Some(dql) = self.dql.as_mut() {
                dql.queued(bytes)?;
            }
            return Ok(self.tx_queue_stopped());
        }
        self.netdev_tx_sent_queue(bytes, jiffies)?;
        Ok(true)
    }

    /// `netdev_tx_completed_queue()`: completes `bytes` and, if that brings the queue
    /// under its limit, clears STACK_XOFF. Returns true when the caller must
    /// `netif_schedule_queue()`: STACK_XOFF was cleared and DRV_XOFF is clear too.
    #[inline(always)]
    pub fn netdev_tx_completed_queue(&mut self, bytes: u32, jiffies: u64) -> Result<bool, DqlError> {
        if bytes == 0 {
            return Ok(false);
        }
        let Some(dql) = self.dql.as_mut() else { return Ok(false) };
        dql.completed(bytes, jiffies)?;
        if dql.avail() < 0 {
            return Ok(false);
        }
        if self.state & QUEUE_STATE_STACK_XOFF != 0 {
            self.state &= !QUEUE_STATE_STACK_XOFF;
            return Ok(!self.xmit_stopped());
        }
        Ok(false)
    }

    /// `netdev_tx_reset_queue()`.
    pub fn netdev_tx_reset_queue(&mut self, jiffies: u64) {
        self.state &= !QUEUE_STATE_STACK_XOFF;
        if let Some(dql) = self.dql.as_mut() {
            dql.reset(jiffies);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bql_queue(min_limit: u32) -> NetdevQueue {
        let mut dql = Dql::new(250, 0);
        dql.set_min_limit(min_limit);
        NetdevQueue::new(Some(dql))
    }

    #[test]
    fn first_packet_stops_queue_until_first_completion() {
        // adj_limit starts at 0, so the first object makes dql_avail() negative.
        let mut q = bql_queue(0);
        q.netdev_tx_sent_queue(1, 0).unwrap();
        assert!(q.xmit_stopped());
        assert!(!q.tx_queue_stopped());
        assert_eq!(q.stats.stack_xoff, 1);
        assert!(q.netdev_tx_completed_queue(1, 0).unwrap());
        assert!(!q.xmit_stopped());
    }

    /// A bulk of three 1500-byte skbs over a 2000-byte limit: the skbs with xmit_more
    /// only charge DQL (no STACK_XOFF, no doorbell); the last one stops the queue and
    /// rings the doorbell for all three.
    #[test]
    fn xmit_more_defers_stack_xoff_and_the_doorbell_to_the_last_skb() {
        let mut q = bql_queue(2000);
        assert!(!q.netdev_tx_sent_queue_more(1500, true, 0).unwrap());
        assert!(!q.netdev_tx_sent_queue_more(1500, true, 0).unwrap());
        assert!(!q.xmit_stopped(), "over the limit, but mid-bulk");
        assert!(q.netdev_tx_sent_queue_more(1500, false, 0).unwrap());
        assert!(q.xmit_stopped());
        assert_eq!(q.dql.as_ref().unwrap().num_queued, 4500);
        // Mid-bulk with DRV_XOFF set: the driver rings at once.
        let mut q = bql_queue(100_000);
        q.tx_stop_queue(0);
        assert!(q.netdev_tx_sent_queue_more(1500, true, 0).unwrap());
    }

    #[test]
    fn completion_does_not_schedule_while_driver_holds_queue() {
        let mut q = bql_queue(0);
        q.netdev_tx_sent_queue(1, 0).unwrap();
        q.tx_stop_queue(0);
        assert!(!q.netdev_tx_completed_queue(1, 0).unwrap());
        assert_eq!(q.state, QUEUE_STATE_DRV_XOFF);
        assert!(q.tx_wake_queue());
        assert!(!q.tx_wake_queue());
        assert_eq!(q.state, 0);
    }

    #[test]
    fn no_bql_is_a_noop() {
        let mut q = NetdevQueue::new(None);
        q.netdev_tx_sent_queue(1000, 0).unwrap();
        assert!(!q.xmit_stopped());
        assert!(!q.netdev_tx_completed_queue(1000, 0).unwrap());
    }
}
