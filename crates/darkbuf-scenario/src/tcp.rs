//! `[[traffic]] kind = "tcp"`: bulk TCP flows as iperf3 or netperf run them, with the
//! congestion control by its sysctl name, the direction, the start and stop times and
//! an optional rate cap (iperf3 `-b`).

use crate::diag::Diagnostic;
use crate::section::Sec;
use crate::schema::*;
use crate::tree::V;
use darkbuf_model::units::{self, Rate};

pub const TCP_KEYS: &[&str] = &["kind", "name", "cc", "direction", "flows", "cpu", "start", "stop", "rate", "dscp", "ecn", "sndbuf", "so_sndbuf", "rcvbuf", "tsq", "limit_output_bytes", "tso_rtt_log", "receiver", "receiver_cpu", "drs", "hystart_round_start", "write_xmit", "grow_skb", "lock_sock", "handshake", "max_pacing_rate", "path_delay", "station"];
/// `net.ipv4.tcp_available_congestion_control` on the development machines.
pub const CC_NAMES: &[&str] = &["reno", "cubic", "bbr", "dctcp"];

/// One `[[traffic]]` table of kind "tcp". `driver` decides whether a download (the
/// far end sending) is possible: a NIC's far host ([peer]), a radio's station, or a
/// veth's peer namespace (not tun: its far end is a reader of the tap). `cpu` is the
/// sending process's: one of the near end's `cpus` for an upload, of the far host's
/// `far_cpus` for a download.
pub(crate) fn resolve_tcp(s: &Sec<'_>, cpus: u32, far_cpus: u32, driver: Driver, total_ns: u64, name: String, sysctl: &crate::sysctl::Sysctl) -> Result<TcpFlow, Diagnostic> {
    s.check_keys(TCP_KEYS, Some("(size, interval and priority belong to kind = \"udp\" / \"ping\")"))?;
    // [sysctl] sets the defaults; the entry's own keys win (sysctl.rs).
    let cc_default = sysctl.tcp_congestion_control.unwrap_or(Cc::Cubic).name();
    let cc = Cc::from_name(s.choice("cc", cc_default, CC_NAMES)?).unwrap_or(Cc::Cubic);
    // A WiFi flow's default is a download: the AP sends to its station.
    let direction = match s.choice("direction", if driver == Driver::Wifi { "down" } else { "up" }, &["up", "down"])? {
        "down" => Direction::Down,
        _ => Direction::Up,
    };
    if direction == Direction::Down && !driver.has_far_host() && driver != Driver::Veth {
        return Err(s.value_err(
            "direction",
            format!("`{}` = \"down\": the far end sends, and device.driver = \"{}\" has no far end that sends (a tap's is the reader)", s.kp("direction"), driver.name()),
            Some("use direction = \"up\", or device.driver = \"veth\" or \"nic\"".into()),
        ));
    }
    let flows = s.u32("flows", 1, 1, crate::limits::MAX_TCP_FLOWS)?;
    // A download's sender is on the far host (a WiFi download: on this host, the AP).
    let far_sends = crate::wifi::far_sends(driver, direction);
    let sender_cpus = if far_sends { far_cpus } else { cpus };
    let cpu = s.u32("cpu", 0, 0, sender_cpus - 1)?;
    let (start_ns, stop_ns) = start_stop(s, "send", total_ns)?;
    let rate = match s.entry("rate") {
        None => Rate::Max,
        Some(e) => {
            let expected = format!("\"max\" or a bit rate such as \"50Mbit\" (iperf3 -b); {}", units::RATE_EXPECTED);
            let V::Str(r) = &e.node.v else { return Err(s.type_err(e, "a rate string", Some(expected))) };
            match units::parse_rate(r) {
                Ok(Rate::Max) => Rate::Max,
                Ok(Rate::Bps(b)) if b > 0 => Rate::Bps(b),
                Ok(Rate::Bps(_)) => return Err(s.value_err("rate", format!("`{}` = \"{r}\" rounds to 0 bit/s", s.kp("rate")), Some(expected))),
                Ok(Rate::Pps(_)) => return Err(s.value_err("rate", format!("`{}` = \"{r}\": a TCP flow's cap is a bit rate", s.kp("rate")), Some(expected))),
                Err(u) => return Err(s.value_err("rate", format!("`{}`: {}", s.kp("rate"), u.message), Some(expected))),
            }
        }
    };
    let dscp = s.int("dscp", 0, 0, 63)? as u8;
    let ecn = s.boolean("ecn", sysctl.tcp_ecn.unwrap_or(false))?;
    // tcp_wmem[2] and tcp_rmem[2]: where the kernel's autotuning stops.
    let sndbuf = s.size_bytes("sndbuf", sysctl.tcp_wmem_max.unwrap_or(4 << 20), 4096, 1 << 30)?;
    let rcvbuf = s.size_bytes("rcvbuf", sysctl.tcp_rmem_max.unwrap_or(6 << 20), 4096, 1 << 30)?;
    // SO_SNDBUF takes an int; the kernel doubles it (at most INT_MAX / 2 before that).
    let so_sndbuf = match s.entry("so_sndbuf") {
        None => None,
        Some(_) => Some(s.size_bytes("so_sndbuf", 0, 1, (i32::MAX / 2) as u64)?),
    };
    // TSQ before v6.16 by default, as the buffers above: the kernels the seeds ran.
    let tsq = match s.choice("tsq", "paced-exempt", Tsq::NAMES)? {
        "always" => Tsq::Always,
        _ => Tsq::PacedExempt,
    };
    // The sysctl is an int (proc_dointvec, no bounds); 0 leaves only TSQ's exemption for
    // a retransmit queue of at most one skb.
    let limit_output_bytes = s.size_bytes("limit_output_bytes", sysctl.tcp_limit_output_bytes.unwrap_or(tsq.default_limit_output_bytes()), 0, i32::MAX as u64)?;
    // net.ipv4.tcp_tso_rtt_log (5.18+, a u8; 9 by default): tcp_tso_autosize() adds
    // sk_gso_max_size >> (min_rtt_us >> tso_rtt_log) to each TSO skb.
    let tso_rtt_log = s.int("tso_rtt_log", sysctl.tcp_tso_rtt_log.unwrap_or(TCP_TSO_RTT_LOG_DEFAULT) as i64, 0, 255)? as u8;
    let receiver = match s.choice("receiver", "instant", TcpReceiver::NAMES)? {
        "poll" => TcpReceiver::Poll,
        "blocking" => TcpReceiver::Blocking,
        _ => TcpReceiver::Instant,
    };
    // The receiving host: the far host of a NIC for an upload, this one otherwise.
    let receiver_cpus = if !far_sends && driver.has_far_host() { far_cpus } else { cpus };
    let receiver_cpu = match s.entry("receiver_cpu") {
        None => None,
        Some(_) if receiver == TcpReceiver::Instant => {
            return Err(s.value_err(
                "receiver_cpu",
                format!("`{}` places the receiving application, and `receiver` = \"instant\" has none", s.kp("receiver_cpu")),
                Some("set receiver = \"poll\" or \"blocking\", or remove receiver_cpu".into()),
            ))
        }
        Some(_) => Some(s.u32("receiver_cpu", 0, 0, receiver_cpus - 1)?),
    };
    let drs = match s.choice("drs", "v6.19", Drs::NAMES)? {
        "v6.15" => Drs::V6_15,
        _ => Drs::V6_19,
    };
    if drs != Drs::V6_19 && receiver == TcpReceiver::Instant {
        return Err(s.value_err(
            "drs",
            format!("`{}` tunes the receive buffer of a modelled receiver, and `receiver` = \"instant\" has none", s.kp("drs")),
            Some("set receiver = \"poll\" or \"blocking\", or remove drs".into()),
        ));
    }
    let hystart_round_start = match s.choice("hystart_round_start", "v6.14", HystartRoundStart::NAMES)? {
        "v5.16" => HystartRoundStart::V5_16,
        "v5.15" => HystartRoundStart::V5_15,
        _ => HystartRoundStart::V6_14,
    };
    if hystart_round_start != HystartRoundStart::V6_14 && cc != Cc::Cubic {
        return Err(s.value_err(
            "hystart_round_start",
            format!("`{}` is CUBIC's HyStart, and this entry runs cc = \"{}\"", s.kp("hystart_round_start"), cc.name()),
            Some("set cc = \"cubic\", or remove hystart_round_start".into()),
        ));
    }
    let write_xmit = match s.choice("write_xmit", "goal-tsq", WriteXmit::NAMES)? {
        "kernel" => WriteXmit::Kernel,
        _ => WriteXmit::GoalTsq,
    };
    let grow_skb = s.boolean("grow_skb", true)?;
    let grow_skb_given = s.entry("grow_skb").is_some();
    let lock_sock = s.boolean("lock_sock", true)?;
    let handshake = s.boolean("handshake", true)?;
    let max_pacing_rate = crate::resolve::opt_bit_rate(s, "max_pacing_rate", "SO_MAX_PACING_RATE")?;
    let path_delay_ns = crate::resolve::path_delay(s, driver)?;
    Ok(TcpFlow { name, cc, direction, flows, cpu, path_delay_ns, start_ns, stop_ns, rate, dscp, ecn, sndbuf, so_sndbuf, rcvbuf, tsq, limit_output_bytes, tso_rtt_log, receiver, receiver_cpu, drs, hystart_round_start, write_xmit, grow_skb, grow_skb_given, lock_sock, max_pacing_rate, handshake })
}

/// A traffic entry's `start` and optional `stop` (ns since the run's start); `start`
/// must come before the run's end (`total_ns` = warmup + duration) and `stop` after
/// `start`. `what` is what the entry does until its stop ("send").
pub(crate) fn start_stop(s: &Sec<'_>, what: &str, total_ns: u64) -> Result<(u64, Option<u64>), Diagnostic> {
    let start_ns = s.duration("start", 0, false)?;
    if start_ns >= total_ns {
        return Err(s.value_err(
            "start",
            format!(
                "`{}` = {} is not before the end of the run (warmup + duration = {} ms): the entry would never {what}",
                s.kp("start"),
                s.entry("start").map_or(String::new(), |e| e.node.v.show()),
                total_ns / 1_000_000
            ),
            Some(format!("expected a start before {} ms, e.g. \"0s\", or a longer duration", total_ns / 1_000_000)),
        ));
    }
    let stop_ns = match s.entry("stop") {
        None => None,
        Some(_) => Some(s.duration("stop", 0, true)?),
    };
    if let Some(stop) = stop_ns {
        if stop <= start_ns {
            return Err(s.value_err(
                "stop",
                format!("`{}` ({} ms) is not after `start` ({} ms)", s.kp("stop"), stop / 1_000_000, start_ns / 1_000_000),
                Some(format!("expected stop > start, or omit stop to {what} until the end of the run")),
            ));
        }
    }
    Ok((start_ns, stop_ns))
}
