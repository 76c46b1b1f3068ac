//! darkbuf's simulator: a deterministic discrete-event model of the Linux transmit
//! path — qdisc, BQL/DQL, the driver ring, NAPI — on CPUs whose every step costs time
//! from a machine profile.
//!
//! Time is integer nanoseconds; randomness comes only from the seed, so the same
//! scenario and seed give the same results, byte for byte.
//!
//! The shape follows the kernel's: a world of hosts (`host`), each with CPUs that run
//! tasks and softirqs (`cpu`, `sched`, `softirq`), network devices with their TX
//! queues, qdiscs and BQL (`dev`) behind one driver enum (`drivers`), NAPI instances
//! any driver's poll drives (`napi`), and sockets behind one enum (`sock`).

mod ack_recs;
mod arena;
mod burst;
mod cpu;
mod dev;
mod drivers;
mod event;
mod forward;
mod host;
mod id;
mod table;
mod metrics;
mod napi;
mod path;
mod printouts;
mod report;
pub(crate) mod sched;
mod setup;
mod sock;
mod softirq;
mod stall;
mod wire;
mod world;

pub use report::{simulate, SimError};
