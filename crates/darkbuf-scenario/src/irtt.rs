//! `[[traffic]] kind = "irtt"`: an isochronous UDP prober with irtt's client options
//! and defaults (`irtt client -i 1s -l 0 --dscp 0`).

use crate::diag::Diagnostic;
use crate::limits::{self, thousands};
use crate::resolve::MAX_UDP_PAYLOAD;
use crate::section::Sec;
use crate::schema::{Irtt, IRTT_MIN_LENGTH};

pub const IRTT_KEYS: &[&str] = &["kind", "name", "interval", "length", "dscp", "cpu", "start", "stop", "path_delay", "station"];

/// One `[[traffic]]` table of kind "irtt"; `total_ns` is warmup + duration.
pub(crate) fn resolve_irtt(s: &Sec<'_>, cpus: u32, driver: crate::schema::Driver, total_ns: u64, name: String) -> Result<Irtt, Diagnostic> {
    s.check_keys(IRTT_KEYS, Some("(irtt's packet size is `length`; size, rate and flows belong to kind = \"udp\" / \"ping\")"))?;
    let interval_ns = s.duration("interval", 1_000_000_000, true)?;
    if total_ns / interval_ns > limits::MAX_PROBES {
        return Err(s.value_err(
            "interval",
            format!(
                "`{}` sends {} packets over warmup + duration ({} ms); at most {}",
                s.kp("interval"),
                thousands(total_ns / interval_ns),
                total_ns / 1_000_000,
                thousands(limits::MAX_PROBES)
            ),
            Some(format!("expected an interval of at least {} us for this warmup + duration", (total_ns / limits::MAX_PROBES).div_ceil(1000).max(1))),
        ));
    }
    // irtt's -l: 0 (or anything shorter than its header) means the header alone.
    let length = s.u32("length", 0, 0, MAX_UDP_PAYLOAD as u32)?.max(IRTT_MIN_LENGTH);
    let dscp = s.int("dscp", 0, 0, 63)? as u8;
    let cpu = s.u32("cpu", 0, 0, cpus - 1)?;
    let (start_ns, stop_ns) = crate::tcp::start_stop(s, "probe", total_ns)?;
    let path_delay_ns = crate::resolve::path_delay(s, driver)?;
    Ok(Irtt { name, interval_ns, length, dscp, cpu, path_delay_ns, start_ns, stop_ns })
}
