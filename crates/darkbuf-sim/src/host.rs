//! A host: a machine's CPUs and the sysctls its network stack runs with. Devices and
//! sockets name their host; which CPU runs what is data (`Task::cpu`, a NAPI's CPU,
//! a socket's process), set at construction from the scenario's placement.
//!
//! A veth pair's two network namespaces are one host: they share its CPUs.

use crate::id::{CpuId, DevId, IdRange};

pub struct Host {
    /// The CPUs it owns (indices into `Sched::cpus`).
    pub cpus: IdRange<CpuId>,
    /// `net.core.netdev_budget`: packets one `net_rx_action()` may poll.
    pub netdev_budget: i32,
    /// `net.core.netdev_budget_usecs`, in jiffies (rounded up).
    pub netdev_budget_jiffies: u64,
    /// The FIB of a host that forwards (`net.ipv4.ip_forward = 1`): per destination
    /// host, the device its route leaves by. Empty on a host that only sends and
    /// receives: every packet that reaches it is its own.
    pub fib: Vec<Option<DevId>>,
    /// Ingress shaping: the ifb that what arrives from the far end is redirected
    /// to, and how to tell what arrives from it.
    pub ingress: Option<(DevId, IngressFrom)>,
}

/// Where the packets that ingress shaping redirects come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IngressFrom {
    /// A NIC's far host: everything it sent arrives on this host's NIC.
    Host(crate::id::HostId),
    /// veth: the peer namespace, which shares this host (and the simulator's host
    /// record) with this namespace. What arrives here from it is every reply to this
    /// end (ACKs, echo replies, responses) and the data of the sockets that send by the
    /// peer's end (`Some(dev)`: downloads).
    VethPeer(Option<DevId>),
}
