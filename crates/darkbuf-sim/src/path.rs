//! The wire and what lies beyond it: a link carries what a NIC's port has finished
//! serializing to the far NIC, after a fixed one-way propagation delay (netem's
//! `delay` without jitter, so frames arrive in order). Entries with a `path_delay` of
//! their own go on a link of that delay beside the shared one: each link stays in
//! order, and packets of different delays overtake each other as they would behind
//! per-host netems. With `path.loss`, each frame is lost on its way with netem's
//! `loss random` probability (`loss_event()` in sch_netem.c, no correlation), drawn
//! from a stream of its own so the costs' draws do not move.

use crate::cpu::DevId;
use crate::event::Event;
use crate::world::World;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// A link id: an index into `World::links`.
pub type LinkId = u16;

/// One direction of a wire plus the path beyond it.
pub struct Link {
    /// The receiving device.
    pub to: DevId,
    pub delay_ns: u64,
    /// netem's `q->loss`: a frame is lost when `loss >= prandom_u32()`; 0 = never.
    pub loss: u32,
    /// Packets on the way, with their arrival times, in order.
    pub in_flight: VecDeque<(u64, u32)>,
}

impl World {
    /// The last bit of packet `id` left the port now: it reaches the far device after
    /// the link's delay.
    pub fn link_send(&mut self, link: LinkId, id: u32) {
        let loss = self.links[link as usize].loss;
        if loss != 0 && self.path_lost(loss) {
            if self.measuring() {
                self.metrics.path_drops += 1;
            }
            self.kfree_skb(id);
            return;
        }
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

    /// netem's `loss_event()` for `CLG_RANDOM` without correlation: "0 => none,
    /// ~0 => all".
    fn path_lost(&mut self, loss: u32) -> bool {
        self.path_rng.as_mut().is_some_and(|rng| loss >= rng.next_u32())
    }
}

/// The path's own random stream, when it loses frames: apart from the costs' stream,
/// so a lossy path leaves every other draw where it was.
pub fn path_rng(seed: u64, loss: u32) -> Option<Box<ChaCha8Rng>> {
    (loss != 0).then(|| Box::new(ChaCha8Rng::seed_from_u64(seed ^ 0x7061_7468_0000_0000)))
}
