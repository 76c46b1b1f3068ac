//! What the TCP ACKs in flight carry, kept once per ACK however many copies of it are
//! on the way (a NIC's far-end copy, a netem duplicate), for as long as one is.
//!
//! An ACK's arena record ([`crate::arena::PktInfo`]) holds only its number (`seq`)
//! in its socket's sequence of ACKs; the cumulative ACK, the SACK blocks, the window
//! and the timestamps are here. The kernel's ACK carries them in its header; the
//! simulator keeps them beside the packet so that every packet's record stays 40 bytes.
//!
//! Each socket's records are a ring that starts empty and doubles as needed: memory
//! proportional to the ACKs the flow has in flight (a handful at 1 Gbit, a few
//! thousand at 100 Gbit), not a fixed 16,384 entries per flow. Issue 54 measured the
//! fixed ring at 704 KiB per flow, 708 MiB zeroed at setup for 1000 flows, and its
//! cache and TLB misses in `tcp_ack()` made each frame 4.7x dearer at 1000 flows than
//! at one. The arena counts the live packets of each record ([`AckRecs::get_ref`] at
//! every allocation of an ACK packet, [`AckRecs::put_ref`] at every free): a record
//! leaves the ring once no packet refers to it and every older one has left, so a
//! dropped ACK frees its record as a delivered one does. In steady state the ring's
//! buffer is reused and nothing is allocated.

use crate::id::SockId;
use std::collections::VecDeque;

/// What one ACK carried: the cumulative ACK, up to 3 SACK blocks (the first may be a
/// D-SACK), ECE, and with a modelled receiver the window (bytes, as scaled); and its
/// timestamp option (ms): TSval, the receiver's clock, and TSecr, the `ts_recent` it
/// echoes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckRec {
    pub ack: u32,
    pub sacks: [(u32, u32); 3],
    pub n_sacks: u8,
    /// `sacks[0]` is a D-SACK block (RFC 2883): data that arrived twice.
    pub dsack: bool,
    pub ece: bool,
    pub win: u32,
    pub tsval_ms: u32,
    pub tsecr_ms: u32,
}

/// One socket's records: `ring[i]` is ACK number `base + i` and the packets that
/// carry it.
#[derive(Default)]
struct AckRing {
    ring: VecDeque<(AckRec, u32)>,
    base: u32,
}

/// Every socket's ACK records, indexed by socket.
#[derive(Default)]
pub struct AckRecs {
    socks: Vec<AckRing>,
    /// Lookups of a record that was not there (an accounting error: reported as a
    /// finding, the ACK taken as empty).
    pub misses: u64,
}

impl AckRecs {
    fn sock(&mut self, s: SockId) -> &mut AckRing {
        let i = s.idx();
        if self.socks.len() <= i {
            self.socks.resize_with(i + 1, AckRing::default);
        }
        &mut self.socks[i]
    }

    /// Records `rec` as socket `s`'s next ACK and returns its number, which the ACK
    /// packet carries as its `seq` (its allocation then takes the first reference).
    pub fn push(&mut self, s: SockId, rec: AckRec) -> u32 {
        let r = self.sock(s);
        let id = r.base.wrapping_add(r.ring.len() as u32);
        r.ring.push_back((rec, 0));
        id
    }

    /// The record of socket `s`'s ACK number `id`.
    pub fn get(&mut self, s: SockId, id: u32) -> AckRec {
        let r = self.sock(s);
        match r.ring.get(id.wrapping_sub(r.base) as usize) {
            Some(&(rec, _)) => rec,
            None => {
                self.misses += 1;
                AckRec::default()
            }
        }
    }

    /// A packet carrying socket `s`'s ACK `id` was allocated.
    #[inline]
    pub fn get_ref(&mut self, s: SockId, id: u32) {
        let r = self.sock(s);
        if let Some(e) = r.ring.get_mut(id.wrapping_sub(r.base) as usize) {
            e.1 += 1;
        }
    }

    /// A packet carrying socket `s`'s ACK `id` was freed: records no packet refers to
    /// leave from the front.
    #[inline]
    pub fn put_ref(&mut self, s: SockId, id: u32) {
        let r = self.sock(s);
        let Some(e) = r.ring.get_mut(id.wrapping_sub(r.base) as usize) else { return };
        e.1 = e.1.saturating_sub(1);
        while r.ring.front().is_some_and(|e| e.1 == 0) {
            r.ring.pop_front();
            r.base = r.base.wrapping_add(1);
        }
    }

    /// Records held.
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.socks.iter().map(|r| r.ring.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ack: u32) -> AckRec {
        AckRec { ack, ..AckRec::default() }
    }

    /// A record stays while any copy of its ACK lives, out-of-order frees leave the
    /// front in place, and the ring empties once every packet is gone.
    #[test]
    fn records_live_as_long_as_their_packets() {
        let mut a = AckRecs::default();
        let ids: Vec<u32> = (0..4).map(|i| a.push(SockId(3), rec(100 * i))).collect();
        assert_eq!(ids, [0, 1, 2, 3]);
        for &id in &ids {
            a.get_ref(SockId(3), id);
        }
        a.get_ref(SockId(3), 1); // a far-end copy of ACK 1
        a.put_ref(SockId(3), 2); // ACK 2 arrives before 0 and 1
        assert_eq!(a.held(), 4);
        assert_eq!(a.get(SockId(3), 2), rec(200));
        a.put_ref(SockId(3), 0);
        a.put_ref(SockId(3), 1);
        assert_eq!(a.held(), 3, "ACK 0 left; 1 has a copy in flight");
        assert_eq!(a.get(SockId(3), 1), rec(100));
        a.put_ref(SockId(3), 1);
        assert_eq!(a.held(), 1, "1 and 2 left with it");
        a.put_ref(SockId(3), 3);
        assert_eq!(a.held(), 0);
        assert_eq!(a.push(SockId(3), rec(7)), 4, "numbers go on");
        assert_eq!(a.misses, 0);
        assert_eq!(a.get(SockId(3), 0), AckRec::default());
        assert_eq!(a.misses, 1);
    }

    /// Numbers wrap around u32 as the kernel's sequence numbers do.
    #[test]
    fn numbers_wrap() {
        let mut a = AckRecs::default();
        a.sock(SockId(0)).base = u32::MAX;
        let (x, y) = (a.push(SockId(0), rec(1)), a.push(SockId(0), rec(2)));
        assert_eq!((x, y), (u32::MAX, 0));
        a.get_ref(SockId(0), x);
        a.get_ref(SockId(0), y);
        assert_eq!(a.get(SockId(0), 0), rec(2));
        a.put_ref(SockId(0), x);
        a.put_ref(SockId(0), y);
        assert_eq!(a.held(), 0);
    }
}
