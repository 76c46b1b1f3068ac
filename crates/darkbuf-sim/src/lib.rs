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
mod world;

pub use report::{simulate, SimError};

// `world.rs` names the profile by its old path (`crate::profile`); the profile lives
// in darkbuf-measure, which the kernel backend shares.
use darkbuf_measure::profile;

// sock/ (reworked for issue 50's TCP part) still holds its own copies of the send
// buffer's charge per segment and of irtt's statistics, which darkbuf_model::skb and
// darkbuf_measure::irtt now define for both backends. Exported, hidden, only so they do
// not warn as dead code until sock/ uses the shared ones; no caller outside this crate.
#[doc(hidden)]
pub use sock::{irtt::IrttSummary, tcp::tcp_sndbuf_per_mss};

#[cfg(test)]
mod tests {
    /// The send buffer's charge per segment has one definition for both backends
    /// (`darkbuf_model::skb`); until `sock/tcp/sndbuf.rs` calls it, its own copy must agree.
    #[test]
    fn sndbuf_charge_is_the_models() {
        for mss in [536, 1220, 1448, 1460, 8948] {
            for header in [192, 256, 320] {
                assert_eq!(crate::sock::tcp::tcp_sndbuf_per_mss(mss, header), darkbuf_model::skb::tcp_sndbuf_per_mss(mss, header));
            }
        }
    }
}
