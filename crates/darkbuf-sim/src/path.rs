//! The wire and what lies beyond it: a link carries what a NIC's port has finished
//! serializing to the far NIC, after a fixed one-way propagation delay (netem's
//! `delay` without jitter, so frames arrive in order). Entries with a `path_delay` of
//! their own go on a link of that delay beside the shared one: each link stays in
//! order, and packets of different delays overtake each other as they would behind
//! per-host netems.

use crate::cpu::DevId;
use crate::event::Event;
use crate::world::World;
use std::collections::VecDeque;

/// A link id: an index into `World::links`.
pub type LinkId = u16;

/// One direction of a wire plus the path beyond it.
pub struct Link {
    /// The receiving device.
    pub to: DevId,
    pub delay_ns: u64,
    /// Packets on the way, with their arrival times, in order.
    pub in_flight: VecDeque<(u64, u32)>,
}

impl World {
    /// The last bit of packet `id` left the port now: it reaches the far device after
    /// the link's delay.
    pub fn link_send(&mut self, link: LinkId, id: u32) {
        let l = &mut self.links[link as usize];
        let at = self.now + l.delay_ns;
        l.in_flight.push_back((at, id));
        self.events.push(at, Event::LinkArrival(link));
    }

    /// `Event::LinkArrival`: the oldest packet on the link arrives at its device.
    pub fn link_arrival(&mut self, link: LinkId) {
        let l = &mut self.links[link as usize];
        let (at, id) = l.in_flight.pop_front().expect("an arrival per packet sent");
        debug_assert_eq!(at, self.now, "a fixed delay keeps arrivals in order");
        let to = l.to;
        self.nic_rx(to, id);
    }
}
