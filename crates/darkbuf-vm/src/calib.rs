//! The boot's calibration: can this guest deliver a configured rate at all?
//!
//! Under TCG the guest kernel runs many times slower than native, and rates fall short
//! for reasons its CPUs' busy percentages do not show (timer granularity, a vCPU thread
//! descheduled on the host). Two short runs, before any job, measure it:
//!
//! - `scenarios/calib-tcp.toml`: one cubic flow through htb at 20 Mbit; accuracy is
//!   its goodput over what the shaper lets through (20 Mbit x 1448/1514: TCP payload with
//!   timestamps in a 1514-byte frame, which htb counts);
//! - `scenarios/calib-udp.toml`: a UDP flood asking 20 Mbit/s of 1400-byte payloads into
//!   an htb that does not shape it; accuracy is what the sink received over what was
//!   asked.
//!
//! `vm.rate_accuracy` is the smaller of the two.

use darkbuf_kernel::backend::{self, RunOpts};
use darkbuf_report::{Results, VmCalibration};
use std::time::Instant;

pub const TCP_SCENARIO: &str = include_str!("../scenarios/calib-tcp.toml");
pub const UDP_SCENARIO: &str = include_str!("../scenarios/calib-udp.toml");
/// The calibration's htb rate, bit/s, and the TCP payload share of its frames.
pub const TCP_SHAPED_BPS: f64 = 20e6;
pub const TCP_PAYLOAD_SHARE: f64 = 1448.0 / 1514.0;
/// The flood's asked rate, bit/s of L2 frames, and its payload, bytes.
pub const UDP_ASKED_BPS: f64 = 20e6;
pub const UDP_PAYLOAD: u32 = 1400;

fn run(name: &str, text: &str, say: &mut impl FnMut(&str)) -> Option<Results> {
    let scn = match darkbuf_scenario::load_str(name, text, &[]) {
        Ok(s) => s,
        Err(d) => {
            say(&format!("calibration scenario {name}: {d}"));
            return None;
        }
    };
    match backend::run_scenario(&scn, &RunOpts::for_scenario(&scn), |_| {}) {
        Ok((r, _)) => Some(r),
        Err(e) => {
            say(&format!("calibration run {name}: {e}"));
            None
        }
    }
}

fn mean(r: &Option<Results>, metric: &str) -> Option<f64> {
    r.as_ref()?.summary.get(metric)?.as_ref().map(|s| s.mean)
}

/// Runs both calibration scenarios on this kernel.
pub fn calibrate(say: &mut impl FnMut(&str)) -> VmCalibration {
    let t0 = Instant::now();
    let tcp = run("calib-tcp.toml", TCP_SCENARIO, say);
    let udp = run("calib-udp.toml", UDP_SCENARIO, say);
    let tcp_shaped_mbps = TCP_SHAPED_BPS * TCP_PAYLOAD_SHARE / 1e6;
    let udp_asked_pps = UDP_ASKED_BPS / (8.0 * darkbuf_scenario::udp_frame_len(UDP_PAYLOAD) as f64);
    let mut c = accuracy(mean(&tcp, "tcp.goodput_mbps"), tcp_shaped_mbps, mean(&udp, "sink.pps"), udp_asked_pps, t0.elapsed().as_secs_f64());
    c.udp_flood_pps = mean(&udp, "flood.pps");
    let window_s = udp.as_ref().map_or(1.0, |r| r.scenario.get("duration_ns").and_then(|d| d.as_f64()).unwrap_or(1e9) / 1e9);
    c.udp_ring_drops = mean(&udp, "ring.drops").map(|d| d / window_s);
    c.udp_rcvbuf_errors = mean(&udp, "udp.rcvbuf_errors").map(|d| d / window_s);
    c
}

/// The calibration from its two measurements.
pub fn accuracy(tcp_goodput_mbps: Option<f64>, tcp_shaped_mbps: f64, udp_sink_pps: Option<f64>, udp_asked_pps: f64, wall_s: f64) -> VmCalibration {
    let tcp_accuracy = tcp_goodput_mbps.map(|g| g / tcp_shaped_mbps);
    let udp_accuracy = udp_sink_pps.map(|p| p / udp_asked_pps);
    let rate_accuracy = match (tcp_accuracy, udp_accuracy) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    VmCalibration { tcp_accuracy, tcp_goodput_mbps, tcp_shaped_mbps, udp_accuracy, udp_sink_pps, udp_asked_pps, rate_accuracy, wall_s, ..Default::default() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accuracy_is_the_smaller_share() {
        let c = accuracy(Some(18.0), 20.0 * TCP_PAYLOAD_SHARE, Some(866.0), 1733.7, 9.0);
        assert!((c.tcp_accuracy.unwrap() - 18.0 / (20.0 * 1448.0 / 1514.0)).abs() < 1e-12);
        assert!((c.udp_accuracy.unwrap() - 866.0 / 1733.7).abs() < 1e-12);
        assert_eq!(c.rate_accuracy, c.udp_accuracy);
        let c = accuracy(None, 19.0, Some(1733.7), 1733.7, 1.0);
        assert_eq!(c.rate_accuracy, Some(1.0));
        assert_eq!(accuracy(None, 19.0, None, 1.0, 1.0).rate_accuracy, None);
    }

    #[test]
    fn calibration_scenarios_resolve() {
        let t = darkbuf_scenario::load_str("calib-tcp.toml", TCP_SCENARIO, &[]).unwrap();
        assert_eq!(t.name, "vm-calibration-tcp");
        let u = darkbuf_scenario::load_str("calib-udp.toml", UDP_SCENARIO, &[]).unwrap();
        assert_eq!(u.name, "vm-calibration-udp");
        // 20 Mbit/s of 1400-byte payloads in 1442-byte frames.
        let pps = UDP_ASKED_BPS / (8.0 * darkbuf_scenario::udp_frame_len(UDP_PAYLOAD) as f64);
        assert!((pps - 20e6 / (8.0 * 1442.0)).abs() < 1e-9, "{pps}");
    }
}
