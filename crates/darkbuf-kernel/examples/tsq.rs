//! One kernel run of a scenario with per-namespace sysctls and the sender's offloads
//! chosen, printing the figures that tell where a TCP flow's queue sits: the TSQ
//! experiment of README "TCP on the kernel backend".
//!
//!     sudo cargo run --release -p darkbuf-kernel --example tsq -- \
//!         crates/darkbuf-kernel/scenarios/veth-htb-tcp.toml [--set KEY=VALUE]... \
//!         [--sysctl net.ipv4.tcp_limit_output_bytes=65536]... [--tso]
//!
//! `--sysctl` is written in both of the run's namespaces (per-netns sysctls only);
//! `--tso` turns TSO/GSO back on at the sender after the veth NAPI recipe.

use darkbuf_kernel::backend::{run_scenario, RunOpts};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: tsq SCENARIO.toml [--set K=V]... [--sysctl K=V]... [--tso]");
        return ExitCode::from(2);
    };
    let (mut sets, mut sysctls, mut tso) = (Vec::new(), Vec::new(), false);
    let mut it = args[1..].iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--set" => sets.extend(it.next().cloned()),
            "--sysctl" => {
                if let Some((k, v)) = it.next().and_then(|kv| kv.split_once('=')) {
                    sysctls.push((k.to_string(), v.to_string()));
                }
            }
            "--tso" => tso = true,
            other => {
                eprintln!("unknown argument {other}");
                return ExitCode::from(2);
            }
        }
    }
    let scn = match darkbuf_scenario::load(std::path::Path::new(path), &sets) {
        Ok(s) => s,
        Err(d) => {
            eprintln!("{d}");
            return ExitCode::from(2);
        }
    };
    let mut opts = RunOpts::for_scenario(&scn);
    opts.netns_sysctls = sysctls;
    opts.sender_tso = tso;
    let (r, notes) = match run_scenario(&scn, &opts, |_| {}) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{}", e.message());
            return ExitCode::from(e.code());
        }
    };
    for n in notes {
        eprintln!("note: {n}");
    }
    let m = &r.runs[0].metrics;
    for k in [
        "tcp.goodput_mbps", "ping.rtt_p50_ms", "ping.rtt_avg_ms", "ping.rtt_p99_ms", "qdisc.backlog_avg_pkts", "qdisc.sent_pkts",
        "qdisc.drops", "tcp.retrans", "tcp.cwnd_avg_pkts", "tcp.srtt_avg_ms", "tcp.pacing_rate_mbps", "tcp.delivery_rate_mbps",
    ] {
        let v = m.get(k).copied().flatten().map_or("null".to_string(), |v| format!("{v:.4}"));
        println!("{k} = {v}");
    }
    ExitCode::SUCCESS
}
