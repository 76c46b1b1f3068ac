//! `[[traffic]] kind = "web"` on the kernel backend: not run yet.
//!
//! The generator this needs (connections opened at Poisson arrivals from a bounded
//! pool of threads, each writing its size and closing, the FCT taken at the receiver
//! from `connect()` to the last byte read, and exit 3 naming the limit when the pool
//! cannot keep the arrival rate) is described in docs/web.md. Until it exists a web
//! entry is refused before anything is set up, with exit 3, as a missing qdisc is.

use crate::KernelError;

/// The refusal of web entry `i`.
pub(crate) fn unavailable(i: usize) -> KernelError {
    KernelError::Unavailable(format!(
        "traffic.{i}: kind = \"web\" (short TCP flows) runs on the simulator only: the kernel backend has no generator for connections at Poisson arrivals yet (docs/web.md); run it with --backend sim"
    ))
}
