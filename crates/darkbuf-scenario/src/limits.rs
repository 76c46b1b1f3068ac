//! The bounds on every scenario input that decides how much memory or time a run takes.
//!
//! A scenario is untrusted input: a typo (`sample_interval = "1ns"`, a tun
//! `txqueuelen = 4000000000`, 65536 `[[traffic]]` entries) must be a schema error with
//! the bound in its message (exit 2) before anything runs, never an allocation that
//! aborts the process or a run that never ends. Each bound is either the kernel's own
//! (then the kernel rejects the same value) or sized so that any accepted scenario
//! stays well under 2 GB of memory in the simulator, with room for one run per CPU
//! at once.

/// Largest scenario (or profile) file read, bytes. A scenario is a few kB; the bound
/// turns `darkbuf run /dev/zero` into an error instead of reading until out of memory.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// Runs per scenario (`runs`, `--runs`): 1000 seeds give a 95% CI far tighter than any
/// model error; more is a typo, and each run's record is kept in memory.
pub const MAX_RUNS: u32 = 1000;

/// Runs per command, summed over a sweep's points: every run's record (metrics,
/// histograms, time series) is kept until the results are written.
pub const MAX_TOTAL_RUNS: u64 = 10_000;

/// Longest `duration` and `warmup`: one hour of simulated traffic. The simulator
/// runs at a few times real time, so an hour is already many minutes of wall time.
pub const MAX_DURATION_NS: u64 = 3600 * 1_000_000_000;

/// Samples per time series and run (`duration / sample_interval`): 100 000 samples
/// are 1 ms resolution over 100 s. Every sample is kept and written to the results.
pub const MAX_SAMPLES: u64 = 100_000;

/// Probes per run (`(warmup + duration) / interval` of a ping): each probe is an
/// event, and each answered one a kept sample.
pub const MAX_PROBES: u64 = 100_000;

/// Results points over all runs of one command: samples of the 4 sampled series plus
/// probes, summed over runs. Each is held several times while the results are written
/// (the typed record, its JSON value and text, the plots and the report page): 4.5 M
/// points peaked at 1.65 GB (measured, `--out`), so 2 M stay well under 1 GB.
pub const MAX_TOTAL_POINTS: u64 = 2_000_000;

/// `[[traffic]]` entries. Each flood is a task in the simulator and a thread, a sink and
/// a UDP port (5001 + index) on the kernel backend.
pub const MAX_TRAFFIC: usize = 64;

/// Flows (sockets) of one flood, as TCP's ([`MAX_TCP_FLOWS`]): each is a socket with its
/// own send buffer (a counter in the simulator; what its buffers hold is bounded by
/// [`MAX_INFLIGHT_PKTS`]). The kernel backend opens one UDP socket per flow from one
/// address, so it takes at most [`MAX_KERNEL_FLOOD_FLOWS`] (exit 3 above).
pub const MAX_FLOWS: u32 = 100_000;

/// Flows of one flood on the kernel backend: one UDP socket per flow, each bound to its
/// own source port of one address, and there are 65,536 ports.
pub const MAX_KERNEL_FLOOD_FLOWS: u32 = 65_536;

/// TCP connections of one `[[traffic]]` entry, and of all its TCP entries together.
/// The simulator keeps a connection's state (about 3 KiB idle, more while it has
/// data in flight: its queues grow with what it holds), a sending task and its
/// timers' lanes; 100,000 flows through fq_codel at 10 Gbit measured in
/// docs/flows-at-scale.md. Above [`PER_FLOW_SERIES_MAX`] flows a run keeps no
/// per-flow time series, above [`PER_FLOW_METRICS_MAX`] no per-flow metrics (the
/// aggregates `tcp.flow_goodput_p*_mbps` and `tcp.flow_jain` describe them).
pub const MAX_TCP_FLOWS: u32 = 100_000;

/// Connections of one `kind = "web"` entry open at once in the simulator: each is a
/// TCP socket (about 3 KiB idle, its queues growing with what it has in flight), a
/// task and its timers' lanes, reused once closed (docs/web.md). A run whose arrivals
/// outpace their completions so far stops with an error naming this bound.
pub const MAX_WEB_OPEN: u32 = 100_000;

/// TCP flows in a run up to which each flow has its time series (`tcp.flow.N.goodput_mbps`,
/// `cwnd_pkts`, `srtt_ms`, `pacing_rate_mbps`, at flent's 0.2 s step).
pub const PER_FLOW_SERIES_MAX: u32 = 1_000;

/// TCP flows in a run up to which each flow has its metrics (`tcp.flow.N.*`) in the
/// results; above it only the aggregates (12 metrics per flow, each in every run and
/// in the summary: 10,000 flows are 120,000 of them, a 20 MB results file).
pub const PER_FLOW_METRICS_MAX: u32 = 10_000;

/// Entries of a tun/tap ring (`txqueuelen`): `ptr_ring_init()` fails (ENOMEM at
/// `TUNSETIFF`) for more than `KMALLOC_MAX_SIZE / sizeof(void *)` entries, 4 MiB / 8 on
/// x86-64. Measured on 6.18: a tap with txqueuelen 524288 attaches, 524289 does not.
pub const MAX_TUN_RING: u32 = 524_288;

/// Packets that can be in flight at once (charged to the floods' send buffers, plus a
/// tun ring's orphaned packets). The simulator keeps about 150 bytes per packet in
/// flight (measured: 2.1 M packets in a pfifo took 350 MB), so 2 M packets stay
/// near 300 MB per simulation, with one simulation per CPU at once.
pub const MAX_INFLIGHT_PKTS: u64 = 2_000_000;

/// Voice packets of one `[[traffic]] kind = "voip"` entry over a run (calls x
/// directions x packets per stream): each has a 24-byte record of its fate, so the
/// bound keeps an entry's records under 24 MB.
pub const MAX_VOIP_PACKETS: u64 = 1_000_000;

/// `what` with a thousands separator, for bounds in messages: `4,000,000`.
#[allow(clippy::manual_is_multiple_of)] // is_multiple_of needs Rust 1.87; MSRV is 1.80
pub fn thousands(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The recorded points one run of `scn` keeps: samples of the sampled series plus the
/// probes in the measured window (an upper bound; see [`MAX_TOTAL_POINTS`]).
pub fn points_per_run(scn: &crate::Scenario) -> u64 {
    let samples = match scn.sample_interval_ns {
        0 => 0,
        i => 4 * (scn.duration_ns / i + 1),
    };
    let probes: u64 = scn
        .traffic
        .iter()
        .map(|t| match t {
            crate::Traffic::Ping(p) => scn.duration_ns / p.interval_ns.max(1) + 1,
            crate::Traffic::Udp(_) => 0,
            crate::Traffic::Irtt(i) => scn.duration_ns / i.interval_ns.max(1) + 1,
            // Voice keeps no time series.
            crate::Traffic::Voip(_) => 0,
            crate::Traffic::Rr(_) => 0,
            // A flow's goodput series: one point per 200 ms step (none above
            // PER_FLOW_SERIES_MAX flows in the run).
            crate::Traffic::Tcp(f) if tcp_flows(scn) <= PER_FLOW_SERIES_MAX as u64 => f.flows as u64 * (scn.duration_ns / 200_000_000 + 1),
            crate::Traffic::Tcp(_) => 0,
            crate::Traffic::Web(_) => 0,
        })
        .max()
        .unwrap_or(0);
    samples + probes
}

/// The TCP connections of all of `scn`'s entries.
pub fn tcp_flows(scn: &crate::Scenario) -> u64 {
    scn.traffic.iter().map(|t| if let crate::Traffic::Tcp(f) = t { f.flows as u64 } else { 0 }).sum()
}

/// Checks what a whole command (a run's `runs`, or every point of a sweep) would keep:
/// at most [`MAX_TOTAL_RUNS`] runs and [`MAX_TOTAL_POINTS`] recorded points. `scns` are
/// the points (each with its own `runs`).
pub fn check_total<'a>(scns: impl IntoIterator<Item = &'a crate::Scenario>) -> Result<(), String> {
    let (mut runs, mut points, mut n) = (0u64, 0u64, 0u64);
    for s in scns {
        n += 1;
        runs += s.runs as u64;
        points = points.saturating_add((s.runs as u64).saturating_mul(points_per_run(s)));
    }
    let what = if n == 1 { "this run".to_string() } else { format!("these {n} points") };
    if runs > MAX_TOTAL_RUNS {
        return Err(format!(
            "{what} add up to {} runs; at most {} runs per command: lower --runs or split the sweep",
            thousands(runs),
            thousands(MAX_TOTAL_RUNS)
        ));
    }
    if points > MAX_TOTAL_POINTS {
        return Err(format!(
            "{what} would record {} time-series samples and probes over {} run(s); at most {} per command: \
             raise sample_interval (or set it to \"0s\"), raise the ping interval, or run fewer runs",
            thousands(points),
            thousands(runs),
            thousands(MAX_TOTAL_POINTS)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(4_000_000), "4,000,000");
    }
}
