//! Typed handles for the world's objects, as smoltcp's `SocketHandle`: each is an index
//! into one table of `World` (`Table<DevId, NetDev>` is indexable by a `DevId` and by
//! nothing else), so a socket id cannot index the devices by mistake.
//!
//! The kernel follows pointers (`struct net_device *`, `struct sock *`); an id here is
//! that pointer. Every id a run uses is made in `setup` and checked against its table
//! once (`World::check_ids()`, in `table.rs`), which is what lets `Table` index without
//! a bounds check per access.
//!
//! This module is the simulator's bottom floor: it imports nothing from the crate.

use std::fmt;

/// What a table needs of its index type.
pub trait Id: Copy + fmt::Debug {
    /// The index into the table (a `usize` only here and in `Table`).
    fn index(self) -> usize;
    /// The id of table slot `i`; panics if `i` does not fit the id's width (`setup`
    /// builds tables no larger than the width, and `World::check_ids()` checks them).
    fn from_index(i: usize) -> Self;
}

macro_rules! ids {
    ($($(#[$doc:meta])* $name:ident($repr:ty);)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        #[repr(transparent)]
        pub struct $name(pub $repr);

        impl Id for $name {
            #[inline(always)]
            fn index(self) -> usize {
                self.0 as usize
            }
            #[inline]
            fn from_index(i: usize) -> Self {
                $name(<$repr>::try_from(i).expect(concat!(stringify!($name), " out of range")))
            }
        }

        impl $name {
            /// The id of table slot `i` (`Id::from_index`).
            #[inline]
            pub fn from_index(i: usize) -> Self {
                <Self as Id>::from_index(i)
            }

            /// The index into its table.
            #[allow(dead_code)]
            #[inline(always)]
            pub fn idx(self) -> usize {
                self.0 as usize
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({})"), self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    )*};
}

ids! {
    /// A schedulable entity: an index into `Sched::tasks` (a process, a NAPI kthread,
    /// `ksoftirqd/N`, a driver's worker).
    TaskId(u32);
    /// A CPU: an index into `Sched::cpus`, numbered across hosts (a host's CPUs are a
    /// range of them, `Host::cpus`); the kernel's `smp_processor_id()` within its host.
    CpuId(u16);
    /// A `struct net_device`: an index into `Net::devs`.
    DevId(u16);
    /// A `struct napi_struct`: an index into `Net::napis`.
    NapiId(u16);
    /// A socket: an index into `World::socks`. Packets carry it as `Skb::sk` (a `u32`:
    /// the model crate knows no simulator ids).
    SockId(u32);
    /// A qdisc instance (`struct Qdisc`): an index into `Net::qdiscs`.
    QdiscId(u16);
    /// A host (a network namespace, or the far machine): an index into `Net::hosts`.
    HostId(u16);
    /// One direction of a wire and the path beyond it: an index into `Net::links`.
    LinkId(u16);
}

impl CpuId {
    /// The CPU `n` places further on (a host's CPU numbers start at its first CPU).
    #[inline]
    pub fn add(self, n: u32) -> CpuId {
        CpuId::from_index(self.idx() + n as usize)
    }
}

impl SockId {
    /// The socket `n` places further on (a TCP reader's run of sockets).
    #[inline]
    pub fn add(self, n: u32) -> SockId {
        SockId(self.0 + n)
    }

    /// The `n` sockets from this one on (`TaskKind::TcpReader { first, n }`).
    #[inline]
    pub fn run(self, n: u32) -> IdRange<SockId> {
        IdRange { start: self, end: self.add(n) }
    }
}

/// A run of consecutive ids, `start..end` (a host's CPUs, a TCP reader's sockets):
/// `Range<I>` cannot iterate over an id type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdRange<I> {
    pub start: I,
    pub end: I,
}

impl<I: Id> IdRange<I> {
    pub fn len(&self) -> usize {
        self.end.index() - self.start.index()
    }

    pub fn contains(&self, id: I) -> bool {
        (self.start.index()..self.end.index()).contains(&id.index())
    }

    /// The ids in order.
    pub fn iter(&self) -> impl Iterator<Item = I> + Clone {
        (self.start.index()..self.end.index()).map(I::from_index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_round_trips_and_width_is_checked() {
        assert_eq!(DevId::from_index(65_535), DevId(65_535));
        assert_eq!(DevId(7).index(), 7);
        assert_eq!(SockId::from_index(70_000).index(), 70_000);
        assert!(std::panic::catch_unwind(|| DevId::from_index(65_536)).is_err());
        assert_eq!(format!("{:?} {}", QdiscId(3), QdiscId(3)), "QdiscId(3) 3");
    }
}
