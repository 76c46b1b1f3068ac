//! Per-flow packet lists linked through one node array, as the kernel links a flow's
//! skbs through `skb->next` / `skb->prev` (`slot_queue_add()` in sch_sfq.c,
//! `flow_queue_add()` in sch_fq_codel.c).
//!
//! Every flow of a qdisc shares one [`SkbSlab`]; a flow owns only an [`SkbList`] (head
//! and tail indices). Nodes are recycled through a free list, so once the slab has grown
//! to the qdisc's peak occupancy nothing allocates, and queueing a packet writes it once,
//! straight into its node (a ring buffer per flow would have to grow per flow, and
//! `VecDeque::push_back` is out of line, so the packet went through memory twice).

use crate::Skb;

/// End of a list, and the free list's end.
pub const NIL: u32 = u32::MAX;

/// A flow's packets: first and last node in the slab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SkbList {
    pub head: u32,
    pub tail: u32,
}

impl SkbList {
    pub const EMPTY: SkbList = SkbList { head: NIL, tail: NIL };

    pub fn is_empty(&self) -> bool {
        self.head == NIL
    }
}

impl Default for SkbList {
    fn default() -> Self {
        SkbList::EMPTY
    }
}

#[derive(Clone, Copy, Debug)]
struct Node {
    skb: Skb,
    next: u32,
    prev: u32,
}

/// The node array behind every [`SkbList`] of one qdisc.
#[derive(Clone, Debug)]
pub struct SkbSlab {
    nodes: Vec<Node>,
    /// Head of the free list (linked through `next`).
    free: u32,
}

impl SkbSlab {
    /// A slab with room for `n` packets before it grows.
    pub fn with_capacity(n: usize) -> Self {
        SkbSlab { nodes: Vec::with_capacity(n), free: NIL }
    }

    /// Appends `skb` to `list`. Always inlined: the compiler kept it out of line in
    /// the inlined sfq enqueue, and a call per queued packet cost 1.5% of seed-nrules15000.
    #[inline(always)]
    pub fn push_tail(&mut self, list: &mut SkbList, skb: Skb) {
        let node = Node { skb, next: NIL, prev: list.tail };
        let i = if self.free != NIL {
            let i = self.free;
            self.free = self.nodes[i as usize].next;
            self.nodes[i as usize] = node;
            i
        } else {
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        };
        if list.head == NIL {
            list.head = i;
        } else {
            self.nodes[list.tail as usize].next = i;
        }
        list.tail = i;
    }

    /// Removes and returns the first packet of `list`.
    #[inline]
    pub fn pop_head(&mut self, list: &mut SkbList) -> Option<Skb> {
        let i = list.head;
        if i == NIL {
            return None;
        }
        let node = self.nodes[i as usize];
        list.head = node.next;
        if node.next == NIL {
            list.tail = NIL;
        } else {
            self.nodes[node.next as usize].prev = NIL;
        }
        self.release(i);
        Some(node.skb)
    }

    /// Removes and returns the last packet of `list`.
    #[inline]
    pub fn pop_tail(&mut self, list: &mut SkbList) -> Option<Skb> {
        let i = list.tail;
        if i == NIL {
            return None;
        }
        let node = self.nodes[i as usize];
        list.tail = node.prev;
        if node.prev == NIL {
            list.head = NIL;
        } else {
            self.nodes[node.prev as usize].next = NIL;
        }
        self.release(i);
        Some(node.skb)
    }

    /// The first packet of `list`, left in place.
    pub fn peek_head(&self, list: &SkbList) -> Option<&Skb> {
        (list.head != NIL).then(|| &self.nodes[list.head as usize].skb)
    }

    fn release(&mut self, i: u32) {
        self.nodes[i as usize].next = self.free;
        self.free = i;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skb(id: u32) -> Skb {
        Skb { id, ..Skb::default() }
    }

    #[test]
    fn lists_share_the_slab_and_reuse_nodes() {
        let mut s = SkbSlab::with_capacity(2);
        let (mut a, mut b) = (SkbList::EMPTY, SkbList::EMPTY);
        s.push_tail(&mut a, skb(1));
        s.push_tail(&mut b, skb(10));
        s.push_tail(&mut a, skb(2));
        s.push_tail(&mut a, skb(3));
        assert_eq!(s.peek_head(&a).map(|x| x.id), Some(1));
        assert_eq!(s.pop_tail(&mut a).map(|x| x.id), Some(3));
        assert_eq!(s.pop_head(&mut a).map(|x| x.id), Some(1));
        assert_eq!(s.pop_head(&mut b).map(|x| x.id), Some(10));
        assert!(b.is_empty());
        // Two nodes are free again: two more pushes do not grow the slab.
        s.push_tail(&mut b, skb(11));
        s.push_tail(&mut b, skb(12));
        assert_eq!(s.nodes.len(), 4);
        assert_eq!(s.pop_tail(&mut a).map(|x| x.id), Some(2));
        assert!(a.is_empty() && s.pop_tail(&mut a).is_none() && s.pop_head(&mut a).is_none());
        assert_eq!(s.pop_head(&mut b).map(|x| x.id), Some(11));
        assert_eq!(s.pop_tail(&mut b).map(|x| x.id), Some(12));
        assert_eq!(b, SkbList::EMPTY);
    }
}
