//! When a driver completes the BQL charge of what its consumer took: the veth BQL
//! series' three versions, as one reusable piece of per-queue state.
//!
//! - per packet (v5): `netdev_tx_completed_queue()` for every consumed entry;
//! - per poll: once at the end of the poll, for the charged entries it consumed;
//! - coalesced (v7 5/5, `ethtool -C tx-usecs`): flush when the window has elapsed since
//!   the first pending entry, or when more than the current limit is pending
//!   (strictly: the producer may overshoot the limit by one).
//!
//! The methods return the units to complete now (0 = nothing), which the driver hands
//! to `World::bql_complete`.

use darkbuf_scenario::Completion;

#[derive(Clone, Debug)]
pub struct CompletionBatch {
    mode: Completion,
    /// tx-usecs window in ns (0 = per packet).
    flush_ns: u64,
    /// Per-poll: charged units consumed in this poll.
    poll_count: u32,
    /// Coalesced: the window's start and the units pending.
    window_start: u64,
    pending: u32,
}

impl CompletionBatch {
    pub fn new(mode: Completion, tx_usecs: u32) -> Self {
        CompletionBatch { mode, flush_ns: tx_usecs as u64 * 1000, poll_count: 0, window_start: 0, pending: 0 }
    }

    /// The driver's poll starts.
    #[inline]
    pub fn poll_begin(&mut self) {
        self.poll_count = 0;
    }

    /// `units` of charged entries were consumed at `now`, with the queue's DQL limit
    /// `limit`: the units to complete now.
    #[inline]
    pub fn consumed(&mut self, units: u32, now: u64, limit: u32) -> u32 {
        match self.mode {
            Completion::PerPacket => units,
            Completion::PerPoll => {
                self.poll_count += units;
                0
            }
            Completion::Coalesced if self.flush_ns == 0 => units,
            Completion::Coalesced => {
                if self.pending == 0 {
                    self.window_start = now;
                }
                self.pending += units;
                if self.window_start + self.flush_ns <= now || self.pending > limit {
                    std::mem::take(&mut self.pending)
                } else {
                    0
                }
            }
        }
    }

    /// The poll's receive loop ended at `now`: the units to complete now.
    pub fn poll_end(&mut self, now: u64) -> u32 {
        match self.mode {
            Completion::PerPoll => std::mem::take(&mut self.poll_count),
            Completion::Coalesced if self.pending > 0 && self.window_start + self.flush_ns <= now => {
                std::mem::take(&mut self.pending)
            }
            Completion::Coalesced | Completion::PerPacket => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tx-usecs = 10 (10 000 ns): a window opens at the first pending unit
    /// (t = 100 us) and flushes at the first consume or poll end at or after t = 110 us,
    /// or as soon as more than the limit (3) is pending.
    #[test]
    fn coalesced_flushes_on_the_window_or_the_limit() {
        let us = 1000;
        let mut b = CompletionBatch::new(Completion::Coalesced, 10);
        assert_eq!(b.consumed(1, 100 * us, 3), 0);
        assert_eq!(b.consumed(1, 105 * us, 3), 0);
        assert_eq!(b.poll_end(110 * us - 1), 0);
        assert_eq!(b.poll_end(110 * us), 2);
        assert_eq!(b.poll_end(200 * us), 0, "nothing pending");
        assert_eq!(b.consumed(2, 200 * us, 3), 0);
        assert_eq!(b.consumed(2, 201 * us, 3), 4, "4 > limit 3");
        assert_eq!(b.consumed(1, 300 * us, 3), 0);
        assert_eq!(b.consumed(1, 310 * us, 3), 2, "the window elapsed at a consume");
    }

    #[test]
    fn per_poll_completes_the_poll_total_once() {
        let mut b = CompletionBatch::new(Completion::PerPoll, 0);
        b.poll_begin();
        for _ in 0..5 {
            assert_eq!(b.consumed(1, 0, 1), 0);
        }
        assert_eq!(b.poll_end(0), 5);
        assert_eq!(b.poll_end(0), 0);
    }

    #[test]
    fn per_packet_and_zero_window_complete_at_once() {
        let mut p = CompletionBatch::new(Completion::PerPacket, 100);
        let mut z = CompletionBatch::new(Completion::Coalesced, 0);
        assert_eq!(p.consumed(1514, 7, 0), 1514);
        assert_eq!(z.consumed(1, 7, 0), 1);
        assert_eq!((p.poll_end(1_000_000), z.poll_end(1_000_000)), (0, 0));
    }
}
