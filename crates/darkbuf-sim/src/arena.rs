//! Packets in flight live here, in a slab indexed by `Skb::id`; queues hold only the
//! `Skb` descriptor. Freed slots are reused, so the steady state allocates nothing.

/// Who sent a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The UDP flood with this index in `World::senders` (not the `[[traffic]]` index,
    /// which counts the pinger too).
    Flood(u16),
    /// The pinger's echo request.
    Ping,
}

/// What the simulator remembers about a packet besides its descriptor (of which it
/// keeps only the two sizes it needs after the qdisc: not a copy of the whole `Skb`).
#[derive(Clone, Copy, Debug)]
pub struct PktInfo {
    /// `skb->len` (BQL's byte unit) and `skb->truesize` (the socket charge).
    pub len: u32,
    pub truesize: u32,
    pub origin: Origin,
    /// Created by the sender (ns).
    pub t_send: u64,
    /// Left the qdisc into the driver ring (ns).
    pub t_xmit: u64,
    /// Taken off the ring by the consumer (ns).
    pub t_consume: u64,
    /// Charged to BQL by the driver (veth's tagged ring pointer).
    pub bql_charged: bool,
    /// Still charged to its socket's send buffer (not yet orphaned or freed).
    pub owns_wmem: bool,
}

pub struct Arena {
    slots: Vec<PktInfo>,
    free: Vec<u32>,
    live: u64,
}

impl Arena {
    pub fn with_capacity(n: usize) -> Self {
        Arena { slots: Vec::with_capacity(n), free: Vec::with_capacity(n), live: 0 }
    }

    pub fn alloc(&mut self, info: PktInfo) -> u32 {
        self.live += 1;
        if let Some(id) = self.free.pop() {
            self.slots[id as usize] = info;
            id
        } else {
            let id = self.slots.len() as u32;
            self.slots.push(info);
            id
        }
    }

    pub fn free(&mut self, id: u32) {
        self.live -= 1;
        self.free.push(id);
    }

    pub fn get(&self, id: u32) -> &PktInfo {
        &self.slots[id as usize]
    }

    pub fn get_mut(&mut self, id: u32) -> &mut PktInfo {
        &mut self.slots[id as usize]
    }

    /// Packets allocated and not yet freed.
    pub fn live(&self) -> u64 {
        self.live
    }
}
