//! The `new_flows` / `old_flows` round-robin lists of the flow-queueing qdiscs
//! (`struct list_head` linked through `flow->flowchain`), with indices into the
//! qdisc's flow array for pointers. fq_codel and fq_pie share them.

use super::skb_list::NIL;

/// Which list a flow is on (`None`: `list_empty(&flow->flowchain)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListId {
    None,
    New,
    Old,
}

/// A flow's `flowchain`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    pub list: ListId,
    prev: u32,
    next: u32,
}

impl Link {
    pub const UNLINKED: Link = Link { list: ListId::None, prev: NIL, next: NIL };
}

/// A flow that can sit on the lists.
pub trait Linked {
    fn link(&mut self) -> &mut Link;
}

/// One `list_head`, with its length kept for the xstats (`new_flows_len`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowList {
    pub head: u32,
    tail: u32,
    pub len: u32,
}

impl FlowList {
    const EMPTY: FlowList = FlowList { head: NIL, tail: NIL, len: 0 };
}

/// `new_flows` and `old_flows`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowLists {
    pub new: FlowList,
    pub old: FlowList,
}

impl Default for FlowLists {
    fn default() -> Self {
        FlowLists { new: FlowList::EMPTY, old: FlowList::EMPTY }
    }
}

impl FlowLists {
    fn list_mut(&mut self, which: ListId) -> &mut FlowList {
        match which {
            ListId::New => &mut self.new,
            _ => &mut self.old,
        }
    }

    /// `list_add_tail(&flows[idx].flowchain, which)`.
    pub fn add_tail<F: Linked>(&mut self, flows: &mut [F], idx: u32, which: ListId) {
        let tail = self.list_mut(which).tail;
        *flows[idx as usize].link() = Link { list: which, prev: tail, next: NIL };
        if tail == NIL {
            self.list_mut(which).head = idx;
        } else {
            flows[tail as usize].link().next = idx;
        }
        let l = self.list_mut(which);
        l.tail = idx;
        l.len += 1;
    }

    /// `list_del_init(&flows[idx].flowchain)`.
    pub fn del_init<F: Linked>(&mut self, flows: &mut [F], idx: u32) {
        let Link { list, prev, next } = *flows[idx as usize].link();
        if list == ListId::None {
            return;
        }
        if prev == NIL {
            self.list_mut(list).head = next;
        } else {
            flows[prev as usize].link().next = next;
        }
        if next == NIL {
            self.list_mut(list).tail = prev;
        } else {
            flows[next as usize].link().prev = prev;
        }
        self.list_mut(list).len -= 1;
        *flows[idx as usize].link() = Link::UNLINKED;
    }

    /// `list_move_tail(&flows[idx].flowchain, which)`.
    pub fn move_tail<F: Linked>(&mut self, flows: &mut [F], idx: u32, which: ListId) {
        self.del_init(flows, idx);
        self.add_tail(flows, idx, which);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct F(Link);
    impl Linked for F {
        fn link(&mut self) -> &mut Link {
            &mut self.0
        }
    }

    /// The flows on `l`, head to tail, following `next`.
    fn walk(flows: &mut [F], l: &FlowList) -> Vec<u32> {
        let mut out = Vec::new();
        let mut i = l.head;
        while i != NIL {
            out.push(i);
            i = flows[i as usize].link().next;
        }
        out
    }

    #[test]
    fn add_move_and_delete_keep_both_lists_linked() {
        let mut flows: Vec<F> = (0..4).map(|_| F(Link::UNLINKED)).collect();
        let mut l = FlowLists::default();
        for i in [2, 0, 3] {
            l.add_tail(&mut flows, i, ListId::New);
        }
        l.move_tail(&mut flows, 0, ListId::Old);
        l.add_tail(&mut flows, 1, ListId::Old);
        assert_eq!(walk(&mut flows, &l.new.clone()), [2, 3]);
        assert_eq!(walk(&mut flows, &l.old.clone()), [0, 1]);
        l.del_init(&mut flows, 2);
        l.del_init(&mut flows, 1);
        l.del_init(&mut flows, 1); // not listed: nothing
        assert_eq!(walk(&mut flows, &l.new.clone()), [3]);
        assert_eq!(walk(&mut flows, &l.old.clone()), [0]);
        assert_eq!((l.new.len, l.old.len), (1, 1));
        assert_eq!(flows[2].0, Link::UNLINKED);
        l.del_init(&mut flows, 3);
        l.del_init(&mut flows, 0);
        assert_eq!(l, FlowLists::default());
    }
}
