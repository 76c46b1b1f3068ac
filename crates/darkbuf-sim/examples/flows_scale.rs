//! Flows at scale (issue 54): the simulator's CPU time per frame and its peak memory
//! with 1, 100 and 10,000 TCP flows through fq_codel on a 10 Gbit NIC
//! (`flows-10gbit.toml` beside this file).
//!
//! ```text
//! cargo run --release -p darkbuf-sim --example flows_scale                 # 1 100 10000
//! cargo run --release -p darkbuf-sim --example flows_scale -- 1 100000 duration=2s
//! ```
//!
//! Each count runs in a process of its own (this program again, with `--child`), so
//! that each peak RSS (`VmHWM`) is its own. The CPU time is the process's (user +
//! system, `/proc/self/stat`: setup, the run and the metrics), over the frames the NIC
//! put on the wire (`nic.tx_packets`); the ratios are against the first count. Linux
//! only (it reads /proc).

use darkbuf_measure::Profile;
use darkbuf_sim::simulate;
use std::path::PathBuf;
use std::process::Command;

fn scenario_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/flows-10gbit.toml")
}

/// This process's user + system CPU time (s), from /proc/self/stat's utime and stime
/// (clock ticks of `USER_HZ`, 100 on Linux).
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest.split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
    // utime and stime are fields 14 and 15 of the line: 12 and 13 after the name.
    (f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)) as f64 / 100.0
}

/// The peak resident set of this process (KiB), `VmHWM` in /proc/self/status.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// One count in this process: prints `flows cpu_s frames peak_kib goodput p1 p50 p99 jain new_flows`.
fn child(flows: &str, set: &[String]) {
    let mut set = set.to_vec();
    set.push(format!("traffic.0.flows={flows}"));
    let scn = match darkbuf_scenario::load(&scenario_path(), &set) {
        Ok(s) => s,
        Err(d) => {
            eprintln!("{d}");
            std::process::exit(2);
        }
    };
    let profile = Profile::load(&scn.machine.profile_source()).expect("the built-in profile");
    let (rec, _) = simulate(&scn, &profile, scn.seed).expect("simulate");
    let (cpu, peak) = (cpu_s(), peak_rss_kib());
    let m = |k: &str| rec.metrics.get(k).copied().flatten().map_or("-".to_string(), |v| format!("{v:.4}"));
    let frames = rec.metrics.get("nic.tx_packets").copied().flatten().unwrap_or(0.0);
    println!(
        "{flows} {cpu:.2} {frames} {peak} {} {} {} {} {} {}",
        m("tcp.goodput_mbps"),
        m("tcp.flow_goodput_p1_mbps"),
        m("tcp.flow_goodput_p50_mbps"),
        m("tcp.flow_goodput_p99_mbps"),
        m("tcp.flow_jain"),
        m("qdisc.new_flow_count")
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        child(&args[1], &args[2..]);
        return;
    }
    let (sets, counts): (Vec<String>, Vec<String>) = args.into_iter().partition(|a| a.contains('='));
    let counts = if counts.is_empty() { vec!["1".into(), "100".into(), "10000".into()] } else { counts };
    let exe = std::env::current_exe().expect("this program");
    println!("{}", scenario_path().display());
    println!("| flows | CPU s | frames | ns per frame | x first | peak RSS MiB | goodput Mbit/s | flow p1 / p50 / p99 Mbit/s | Jain | fq_codel new_flow_count |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|");
    let mut first = None;
    for n in &counts {
        let out = Command::new(&exe).arg("--child").arg(n).args(&sets).output().expect("run the child");
        if !out.status.success() {
            eprintln!("{n} flows: {}", String::from_utf8_lossy(&out.stderr));
            std::process::exit(1);
        }
        let line = String::from_utf8_lossy(&out.stdout);
        let f: Vec<&str> = line.split_whitespace().collect();
        let (cpu, frames, peak): (f64, f64, f64) = (f[1].parse().unwrap_or(0.0), f[2].parse().unwrap_or(0.0), f[3].parse().unwrap_or(0.0));
        let per_frame = cpu * 1e9 / frames.max(1.0);
        let ratio = per_frame / *first.get_or_insert(per_frame);
        println!(
            "| {} | {cpu:.2} | {frames:.0} | {per_frame:.0} | {ratio:.2} | {:.0} | {} | {} / {} / {} | {} | {} |",
            f[0],
            peak / 1024.0,
            f[4],
            f[5],
            f[6],
            f[7],
            f[8],
            f[9]
        );
    }
}
