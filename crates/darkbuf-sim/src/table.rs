//! The world's tables (CPUs, tasks, devices, qdiscs, NAPI instances, sockets), indexed
//! by the ids `setup` hands out, without a bounds check per access.
//!
//! Why: a delivered packet of a UDP flood touches these tables about 40 times (the
//! socket, its device, the TX queue's qdisc, the CPU's run queue, the peer's NAPI...).
//! With `Vec` each access loads the length, compares and branches, and that was 6% of
//! seed-nrules0's instructions (`docs/executor.md`). The kernel follows pointers
//! here; a table of fixed length indexed by validated ids is the same guarantee.
//!
//! Safety rests on two rules, both enforced here or at construction:
//! - a table's length never changes after `World::new` (it derefs to a slice, which
//!   cannot grow or shrink, and has no `push`);
//! - every id is checked against its table once, where it is made:
//!   `World::check_ids()` walks every id the world stores (a task's socket, a NAPI's
//!   device, a device's qdiscs, a queue's IRQ CPU...) before the first event runs, and
//!   the ids the run computes are copies of those or loops over `0..len`.
//!
//! Builds with debug assertions (`cargo test`, see the workspace's `[profile.test]`)
//! check every access as well.

use std::ops::{Deref, DerefMut, Index, IndexMut};

pub struct Table<T>(Vec<T>);

impl<T> Table<T> {
    /// Panics unless `id` indexes this table: for `World::check_ids()`.
    pub fn check(&self, id: usize, what: &str) {
        assert!(id < self.0.len(), "{what} {id} is not in its table of {}", self.0.len());
    }
}

impl<T> From<Vec<T>> for Table<T> {
    fn from(v: Vec<T>) -> Self {
        Table(v)
    }
}

impl<T> FromIterator<T> for Table<T> {
    fn from_iter<I: IntoIterator<Item = T>>(it: I) -> Self {
        Table(it.into_iter().collect())
    }
}

impl<T> Deref for Table<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T> DerefMut for Table<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.0
    }
}

impl<T> Index<usize> for Table<T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, id: usize) -> &T {
        debug_assert!(id < self.0.len(), "id {id} out of a table of {}", self.0.len());
        // SAFETY: ids are checked against their table when made (module doc), and the
        // table's length is fixed.
        unsafe { self.0.get_unchecked(id) }
    }
}

impl<T> IndexMut<usize> for Table<T> {
    #[inline(always)]
    fn index_mut(&mut self, id: usize) -> &mut T {
        debug_assert!(id < self.0.len(), "id {id} out of a table of {}", self.0.len());
        // SAFETY: as for `index`.
        unsafe { self.0.get_unchecked_mut(id) }
    }
}

impl<'a, T> IntoIterator for &'a Table<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<'a, T> IntoIterator for &'a mut Table<T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter_mut()
    }
}

impl crate::world::World {
    /// Checks every id the world stores against the table it indexes: the contract
    /// that lets [`Table`] skip the per-access check. Runs once, at the end of
    /// `World::new`; a failure is a bug in `setup`, reported as a panic there.
    pub(crate) fn check_ids(&self) {
        use crate::cpu::TaskKind;
        use crate::cpu::DevId;
        let ncpu = self.cpus.len();
        for h in &self.hosts {
            assert!(h.cpus.end as usize <= ncpu, "host CPUs {:?} beyond {ncpu}", h.cpus);
            for dev in h.fib.iter().flatten() {
                self.devs.check(*dev as usize, "route device");
            }
        }
        for c in 0..ncpu {
            self.tasks.check(self.ksoftirqd(c as u16) as usize, "ksoftirqd task");
        }
        for t in &self.tasks {
            self.cpus.check(t.cpu as usize, "task CPU");
            match t.kind {
                TaskKind::Proc(s) => self.socks.check(s as usize, "task socket"),
                TaskKind::NapiThread(n) => self.napis.check(n as usize, "task NAPI"),
                TaskKind::DevWorker { dev, .. } => self.devs.check(dev as usize, "task device"),
                TaskKind::TcpReader { first, n } => {
                    for s in first..first + n {
                        self.socks.check(s as usize, "reader socket");
                    }
                }
                TaskKind::Ksoftirqd => {}
            }
        }
        for n in &self.napis {
            self.tasks.check(n.task as usize, "NAPI task");
            self.devs.check(n.dev as usize, "NAPI device");
        }
        for s in &self.socks {
            self.tasks.check(s.task as usize, "socket task");
            self.devs.check(s.dev as usize, "socket device");
            if let crate::sock::SockKind::Tcp(t) = &s.kind {
                if let Some(dev) = t.ack_dev {
                    self.devs.check(dev as usize, "TCP ACK device");
                }
                if let Some(app) = &t.rcv.app {
                    self.tasks.check(app.reader as usize, "TCP reader task");
                }
                self.cpus.check(t.softirq_cpu as usize, "TCP softirq CPU");
            }
        }
        for q in &self.qdiscs {
            self.devs.check(q.dev as usize, "qdisc device");
            self.cpus.check(q.watchdog_cpu as usize, "qdisc watchdog CPU");
        }
        for (dev, d) in self.devs.iter().enumerate() {
            for qi in d.txq_qdisc.iter().flatten() {
                self.qdiscs.check(*qi as usize, "TX queue qdisc");
            }
            self.drv_check_ids(dev as DevId);
        }
        for l in &self.links {
            self.devs.check(l.to as usize, "link device");
        }
        self.devs.check(self.measured_txq.0 as usize, "measured device");
    }
}
