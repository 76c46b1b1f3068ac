//! Measurement code both backends share, so the simulator and the kernel backend define
//! every reported figure the same way, and neither backend depends on the other:
//!
//! - [`percentile`]: the nearest-rank percentile, as ping-style tools report them;
//! - [`hist`]: log2 histograms with fixed buckets, turned into the results contract's
//!   [`darkbuf_report::Log2Hist`];
//! - [`irtt`]: irtt(1)'s statistics (round trips, one-way delays, IPDV, loss per leg)
//!   from per-request records, and the `irtt.*` metrics over them;
//! - [`voip`]: voice quality (one-way delay, RFC 3550 jitter, loss, the G.107
//!   E-model's MOS) from per-packet records, and the `voip.*` metrics over them;
//! - [`profile`]: the machine cost profile, which the simulator runs on and
//!   `darkbuf calibrate` (kernel backend) writes.
//!
//! Layering: above `darkbuf-report` (the results contract) and `darkbuf-scenario` (the
//! built-in profiles' names, bounded file reads), below the simulator and the kernel
//! backend.

pub mod fct;
pub mod hist;
pub mod irtt;
mod out;
pub mod percentile;
pub mod profile;
pub mod voip;
pub mod rr;

pub use hist::Hist;
pub use out::Out;
pub use percentile::percentile;
pub use profile::Profile;
