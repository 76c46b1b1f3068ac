//! The machine's stalls (a profile's `[[stalls]]`): what they delay, what they leave
//! alone, and that a profile without them changes nothing.

mod common;

use common::{m, scenario_text};
use darkbuf_report::RunRecord;
use darkbuf_measure::profile::Stall;
use darkbuf_measure::Profile;
use darkbuf_sim::simulate;

/// Runs scenario text with seed-vm and the given stalls; no invariant finding.
fn run_with(text: &str, set: &[&str], stalls: Vec<Stall>) -> RunRecord {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let scn = darkbuf_scenario::load_str("stall.toml", text, &set).unwrap_or_else(|d| panic!("{d}"));
    let mut profile = Profile::load("seed-vm").unwrap();
    profile.stalls = stalls;
    let (rec, _) = simulate(&scn, &profile, scn.seed).expect("simulates");
    assert!(rec.findings.is_empty(), "invariant findings: {:?}", rec.findings);
    rec
}

fn every(per_s: f64, us: f64) -> Vec<Stall> {
    vec![Stall { per_s, min_us: us, max_us: us }]
}

/// No stalls, or classes with a rate of 0: no event and no draw, so the results are
/// byte for byte those of the profile without the key.
#[test]
fn a_profile_without_stalls_changes_nothing() {
    let text = scenario_text("veth-bql.toml");
    let set = ["duration=300ms", "warmup=100ms"];
    let none = run_with(&text, &set, Vec::new());
    let zero = run_with(&text, &set, every(0.0, 1000.0));
    assert_eq!(serde_json::to_string(&none).unwrap(), serde_json::to_string(&zero).unwrap());
    assert!(!none.metrics.contains_key("cpu.stalled_pct"));
}

/// Stalls of exactly 5 ms, 20 a second on each CPU: the ping, which waits for its
/// sender's CPU and the consumer's, now sometimes waits a whole stall (without stalls
/// its worst is under 2 ms); the share of the window taken is about
/// 20 x 5 ms = 10% per CPU; and the same seed gives the same run.
#[test]
fn a_stall_delays_what_its_cpu_runs() {
    let text = scenario_text("veth-bql.toml");
    let set = ["duration=2s", "warmup=200ms"];
    let calm = run_with(&text, &set, Vec::new());
    let stalled = run_with(&text, &set, every(20.0, 5000.0));
    let (before, after) = (m(&calm, "ping.rtt_max_ms"), m(&stalled, "ping.rtt_max_ms"));
    assert!(before < 2.0 && after >= 5.0, "ping max {before} ms without stalls, {after} ms with");
    let pct = m(&stalled, "cpu.stalled_pct");
    assert!((7.0..13.0).contains(&pct), "stalled {pct}% of the window");
    let again = run_with(&text, &set, every(20.0, 5000.0));
    assert_eq!(serde_json::to_string(&stalled).unwrap(), serde_json::to_string(&again).unwrap());
}

/// Stalls on every CPU of a NIC host and its far end, with TCP: packets stay
/// conserved, TSQ's and DQL's accounts hold (no invariant finding), and the flow
/// still fills most of the link.
#[test]
fn stalls_keep_the_invariants_with_tcp_on_a_nic() {
    let text = scenario_text("tcp-100mbit.toml");
    let r = run_with(&text, &["duration=2s", "warmup=500ms"], every(50.0, 2000.0));
    assert!(m(&r, "tcp.goodput_mbps") > 80.0, "{} Mbit/s", m(&r, "tcp.goodput_mbps"));
    assert!(m(&r, "cpu.stalled_pct") > 5.0);
}
