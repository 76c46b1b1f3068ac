//! What the isochronous UDP senders share (irtt's client, a voice stream): a schedule
//! of packets falling due every interval, and the datagram each one sends
//! (`udp_sendmsg()` of a small payload; the DSCP gives its priority as
//! `rt_tos2priority()` does).

use darkbuf_model::skb::truesize_for_len;
use darkbuf_model::Skb;

/// An absolute send schedule: a packet falls due each time the task's timer fires,
/// every `interval_ns` from the first, until `stop_ns`; the task sends what is due
/// when it runs, so a late task sends the packets it missed at once, as a sender on
/// an absolute schedule does.
#[derive(Clone, Copy, Debug)]
pub struct IsoSchedule {
    /// The interval between packets, ns (at least 1).
    pub interval_ns: u64,
    /// No packet falls due at or after this time (ns).
    pub stop_ns: u64,
    /// Packets whose timer fired and that are not sent yet.
    pub due: u32,
}

impl IsoSchedule {
    pub fn new(interval_ns: u64, stop_ns: u64) -> IsoSchedule {
        IsoSchedule { interval_ns: interval_ns.max(1), stop_ns, due: 0 }
    }

    /// The timer fired at `now`: one more packet is due. Returns when the timer fires
    /// next, while the schedule lasts.
    pub fn fire(&mut self, now: u64) -> Option<u64> {
        self.due += 1;
        let next = now + self.interval_ns;
        (next < self.stop_ns).then_some(next)
    }

    /// Takes one due packet, if there is one.
    pub fn take(&mut self) -> bool {
        let any = self.due > 0;
        self.due -= any as u32;
        any
    }
}

/// A datagram of `len` bytes on the wire, of flow (and socket) `flow`, with `dscp`.
pub fn iso_dgram(len: u32, flow: u32, dscp: u8) -> Skb {
    let priority = crate::forward::rt_tos2priority(dscp, 0);
    Skb { flow, sk: super::flow_sk(flow), len, truesize: truesize_for_len(len), dscp, priority, ..Skb::default() }
}

#[cfg(test)]
mod tests {
    use super::IsoSchedule;

    /// Every 20 ms until 50 ms: the timer fires at 0, 20 and 40 ms, the third time
    /// without a next; two packets due are taken one at a time.
    #[test]
    fn the_schedule_fires_every_interval_until_its_stop() {
        let mut s = IsoSchedule::new(20, 50);
        assert_eq!(s.fire(0), Some(20));
        assert_eq!(s.fire(20), Some(40));
        assert_eq!(s.fire(40), None);
        assert_eq!(s.due, 3);
        assert!(s.take() && s.take() && s.take());
        assert!(!s.take());
        assert_eq!(s.due, 0);
    }
}
