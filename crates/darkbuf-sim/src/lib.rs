//! darkbuf's simulator: a deterministic discrete-event model of the Linux transmit
//! path — qdisc, BQL/DQL, the veth ring, NAPI — on CPUs whose every step costs time
//! from a machine profile.
//!
//! Time is integer nanoseconds; randomness comes only from the seed, so the same
//! scenario and seed give the same results, byte for byte.

mod arena;
mod cpu;
mod dev;
mod event;
mod metrics;
pub mod profile;
mod report;
mod traffic;
mod tun;
mod veth;
mod world;

pub use profile::Profile;
pub use report::{simulate, SimError};
