//! The world's tables (CPUs, tasks, devices, qdiscs, NAPI instances, sockets, hosts,
//! links), each indexed by its own id type (`id.rs`) as `setup` hands them out, without
//! a bounds check per access.
//!
//! Why: a delivered packet of a UDP flood touches these tables about 40 times (the
//! socket, its device, the TX queue's qdisc, the CPU's run queue, the peer's NAPI...).
//! With `Vec` each access loads the length, compares and branches, and that was 6% of
//! seed-nrules0's instructions (`docs/executor.md`). The kernel follows pointers
//! here; a table of fixed length indexed by validated ids is the same guarantee.
//!
//! Safety rests on two rules, both enforced here or at construction:
//! - a table never shrinks: `setup` only `push`es, and there is no `Deref` to a `Vec`
//!   or slice through which it could shrink or a `usize` could index it;
//! - every id is checked against its table once, where it is made:
//!   `World::check_ids()` walks every id the world stores (a task's socket, a NAPI's
//!   device, a device's qdiscs, a queue's IRQ CPU...) before the first event runs, and
//!   the ids the run computes are copies of those or loops over `0..len`.
//!
//! Builds with debug assertions (`cargo test`, see the workspace's `[profile.test]`)
//! check every access as well.

use crate::id::Id;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

/// A table of fixed length, indexed by its own id type `I` only (no `usize`, no other
/// table's id): smoltcp's `SocketSet` indexed by `SocketHandle`.
pub struct Table<I, T> {
    v: Vec<T>,
    id: PhantomData<fn(I) -> I>,
}

impl<I: Id, T> Table<I, T> {
    /// Panics unless `id` indexes this table: for `World::check_ids()`.
    pub fn check(&self, id: I, what: &str) {
        assert!(id.index() < self.v.len(), "{what} {id:?} is not in its table of {}", self.v.len());
    }

    /// Appends an entry and returns its id: for `setup` only. A table only grows, so
    /// an id once valid stays valid.
    pub fn push(&mut self, t: T) -> I {
        self.v.push(t);
        I::from_index(self.v.len() - 1)
    }

    /// The entry with the highest id.
    pub fn last(&self) -> Option<&T> {
        self.v.last()
    }

    /// The entries from id `first` on (`setup`: the qdiscs one call made).
    pub fn from_mut(&mut self, first: I) -> &mut [T] {
        &mut self.v[first.index()..]
    }

    pub fn len(&self) -> usize {
        self.v.len()
    }

    pub fn is_empty(&self) -> bool {
        self.v.is_empty()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.v.iter()
    }

    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.v.iter_mut()
    }

    /// Every id of the table, in order.
    pub fn ids(&self) -> impl Iterator<Item = I> + Clone {
        (0..self.v.len()).map(I::from_index)
    }

    /// `(id, entry)` for every entry, in order.
    pub fn iter_ids(&self) -> impl Iterator<Item = (I, &T)> {
        self.v.iter().enumerate().map(|(i, t)| (I::from_index(i), t))
    }

    /// The entry of an id that may be out of the table (an id from outside the world,
    /// such as a packet's).
    pub fn get(&self, id: I) -> Option<&T> {
        self.v.get(id.index())
    }
}

impl<I, T> Default for Table<I, T> {
    fn default() -> Self {
        Table { v: Vec::new(), id: PhantomData }
    }
}

impl<I, T> From<Vec<T>> for Table<I, T> {
    fn from(v: Vec<T>) -> Self {
        Table { v, id: PhantomData }
    }
}

impl<I, T> FromIterator<T> for Table<I, T> {
    fn from_iter<It: IntoIterator<Item = T>>(it: It) -> Self {
        Table { v: it.into_iter().collect(), id: PhantomData }
    }
}

impl<I: Id, T> Index<I> for Table<I, T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, id: I) -> &T {
        let i = id.index();
        debug_assert!(i < self.v.len(), "{id:?} out of a table of {}", self.v.len());
        // SAFETY: ids are checked against their table when made (module doc), and the
        // table's length is fixed.
        unsafe { self.v.get_unchecked(i) }
    }
}

impl<I: Id, T> IndexMut<I> for Table<I, T> {
    #[inline(always)]
    fn index_mut(&mut self, id: I) -> &mut T {
        let i = id.index();
        debug_assert!(i < self.v.len(), "{id:?} out of a table of {}", self.v.len());
        // SAFETY: as for `index`.
        unsafe { self.v.get_unchecked_mut(i) }
    }
}

impl<'a, I, T> IntoIterator for &'a Table<I, T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.v.iter()
    }
}

impl<'a, I, T> IntoIterator for &'a mut Table<I, T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.v.iter_mut()
    }
}

impl crate::world::World {
    /// Checks every id the world stores against the table it indexes: the contract
    /// that lets [`Table`] skip the per-access check. Runs once, at the end of
    /// `World::new`; a failure is a bug in `setup`, reported as a panic there.
    pub(crate) fn check_ids(&self) {
        use crate::cpu::TaskKind;
        use crate::id::DevId;
        let ncpu = self.sched.cpus.len();
        for h in &self.net.hosts {
            assert!(h.cpus.end.idx() <= ncpu, "host CPUs {:?} beyond {ncpu}", h.cpus);
            for dev in h.fib.iter().flatten() {
                self.net.devs.check(*dev, "route device");
            }
        }
        for c in self.sched.cpus.ids() {
            self.sched.tasks.check(self.sched.ksoftirqd(c), "ksoftirqd task");
        }
        for t in &self.sched.tasks {
            self.sched.cpus.check(t.cpu, "task CPU");
            match t.kind {
                TaskKind::Proc(s) => self.socks.check(s, "task socket"),
                TaskKind::NapiThread(n) => self.net.napis.check(n, "task NAPI"),
                TaskKind::DevWorker { dev, .. } => self.net.devs.check(dev, "task device"),
                TaskKind::TcpReader { first, n } => {
                    for s in first.run(n).iter() {
                        self.socks.check(s, "reader socket");
                    }
                }
                TaskKind::Ksoftirqd => {}
            }
        }
        for n in &self.net.napis {
            self.sched.tasks.check(n.task, "NAPI task");
            self.net.devs.check(n.dev, "NAPI device");
        }
        for s in &self.socks {
            self.sched.tasks.check(s.task, "socket task");
            self.net.devs.check(s.dev, "socket device");
            if let crate::sock::SockKind::Tcp(t) = &s.kind {
                self.tcp_check_ids(t);
            }
        }
        for q in &self.net.qdiscs {
            self.net.devs.check(q.dev, "qdisc device");
            self.sched.cpus.check(q.watchdog_cpu, "qdisc watchdog CPU");
        }
        for (dev, d) in self.net.devs.iter().enumerate() {
            for qi in d.txq_qdisc.iter().flatten() {
                self.net.qdiscs.check(*qi, "TX queue qdisc");
            }
            self.drv_check_ids(DevId::from_index(dev));
        }
        for l in &self.net.links {
            self.net.devs.check(l.to, "link device");
        }
        self.net.devs.check(self.metrics.measured_txq.0, "measured device");
    }
}
