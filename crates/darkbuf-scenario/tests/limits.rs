//! Issue 18: every input that decides memory or time is bounded by the schema, with an
//! error that names the bound and where the value is (never an allocation that aborts).

mod common;

use common::{err_set as err, ok_set as ok};
use darkbuf_scenario::limits::*;
use darkbuf_scenario::*;

const UDP: &str = "[[traffic]]\nkind = \"udp\"\n";

#[test]
fn too_many_traffic_entries_is_an_error_at_the_first_extra_one() {
    let text = "[[traffic]]\nkind = \"ping\"\n".repeat(MAX_TRAFFIC + 1);
    let d = err(&text, &[]);
    assert_eq!(d.kind, DiagnosticKind::Value);
    assert_eq!(d.line, Some(2 * MAX_TRAFFIC + 1), "{d}");
    assert!(d.to_string().contains(&format!("at most {MAX_TRAFFIC}")), "{d}");
    ok(&"[[traffic]]\nkind = \"ping\"\n".repeat(MAX_TRAFFIC), &[]);
}

#[test]
fn sample_interval_is_bounded_by_the_number_of_samples() {
    let d = err(&format!("sample_interval = \"1ns\"\n{UDP}"), &[]);
    assert_eq!((d.line, d.column), (Some(1), Some(19)), "{d}");
    assert!(d.to_string().contains("at most 100,000"), "{d}");
    let d = err(UDP, &["sample_interval=1us"]);
    assert!(d.to_string().contains("at least 100 us"), "{d}");
    // Off, or coarse enough, is fine.
    ok(UDP, &["sample_interval=0s"]);
    ok(UDP, &["sample_interval=100us"]);
}

#[test]
fn tun_ring_is_bounded_as_ptr_ring_init_bounds_it() {
    let tun = "[device]\ndriver = \"tun\"\ntxqueuelen = 4000000000\n[consumer]\nkind = \"reader\"\n[[traffic]]\nkind = \"udp\"\n";
    let d = err(tun, &[]);
    assert_eq!(d.line, Some(3), "{d}");
    assert!(d.to_string().contains("524288"), "{d}");
    let d = err(tun, &["device.txqueuelen=1000", "device.ring_size=524289"]);
    assert!(d.message.contains("ring_size"), "{d}");
    ok(tun, &["device.txqueuelen=524288"]);
}

#[test]
fn runs_durations_and_probes_are_bounded() {
    assert!(err(UDP, &["runs=0"]).to_string().contains("1..=1000"));
    assert!(err(UDP, &["runs=1001"]).to_string().contains("1..=1000"));
    assert!(err(UDP, &["duration=3601s"]).to_string().contains("3600"));
    assert!(err(UDP, &["warmup=3601s"]).to_string().contains("3600"));
    let d = err("[[traffic]]\nkind = \"ping\"\ninterval = \"1ns\"\n", &[]);
    assert_eq!(d.line, Some(3), "{d}");
    assert!(d.to_string().contains("at most 100,000"), "{d}");
    ok(UDP, &["runs=1000", "duration=3600s"]);
}

/// Issue 54: a flood takes up to 100,000 flows, as a TCP entry does (with send buffers
/// small enough for the in-flight bound: 100,000 x (8,192 / 2,304 + 1) = 400,000
/// packets); one more is an error at `flows` naming the bound.
#[test]
fn flood_flows_are_bounded() {
    let s = ok("[[traffic]]\nkind = \"udp\"\nsndbuf = 4096\nflows = 100000\n", &[]);
    let Traffic::Udp(u) = &s.traffic[0] else { panic!("a flood") };
    assert_eq!(u.flows, 100_000);
    let d = err("[[traffic]]\nkind = \"udp\"\nsndbuf = 4096\nflows = 100001\n", &[]);
    assert_eq!((d.line, d.key.as_str()), (Some(4), "traffic.0.flows"), "{d}");
    assert!(d.to_string().contains("100000"), "{d}");
}

/// Issue 54: a TCP entry takes up to 100,000 flows, and so do all TCP entries
/// together; one more is an error at the `flows` that crosses it (exit 2).
#[test]
fn tcp_flows_are_bounded_per_entry_and_in_all() {
    let tcp = |n: u32| format!("[[traffic]]\nkind = \"tcp\"\nflows = {n}\n");
    let s = ok(&tcp(MAX_TCP_FLOWS), &[]);
    assert_eq!(tcp_flows(&s), 100_000);
    let d = err(&tcp(MAX_TCP_FLOWS + 1), &[]);
    assert_eq!((d.line, d.key.as_str()), (Some(3), "traffic.0.flows"), "{d}");
    assert!(d.to_string().contains("100000"), "{d}");
    let d = err(&format!("{}{}", tcp(60_000), tcp(40_001)), &[]);
    assert_eq!((d.line, d.key.as_str()), (Some(6), "traffic.1.flows"), "{d}");
    assert!(d.to_string().contains("100,001 flows; a scenario has at most 100,000 TCP flows in all"), "{d}");
    ok(&format!("{}{}", tcp(60_000), tcp(40_000)), &[]);
}

/// Above PER_FLOW_SERIES_MAX flows the per-flow series are not recorded, so they do
/// not count against the recorded points: 100,000 flows for 100 s pass.
#[test]
fn many_flows_keep_no_series_points() {
    let s = ok(&format!("duration = \"100s\"\n[[traffic]]\nkind = \"tcp\"\nflows = {MAX_TCP_FLOWS}\n"), &[]);
    assert_eq!(points_per_run(&s), 4 * 1001, "the sampled series only");
    let s = ok(&format!("duration = \"10s\"\nsample_interval = \"0s\"\n[[traffic]]\nkind = \"tcp\"\nflows = {PER_FLOW_SERIES_MAX}\n"), &[]);
    assert_eq!(points_per_run(&s), 1000 * 51);
}

#[test]
fn packets_in_flight_are_bounded() {
    // 4 floods of tiny datagrams with the largest send buffer: ~11.5 M skbs.
    let flood = "[[traffic]]\nkind = \"udp\"\nsize = 1\nsndbuf = \"1GiB\"\n";
    let d = err(&flood.repeat(4), &[]);
    assert!(d.to_string().contains("packets in flight"), "{d}");
    assert!(d.to_string().contains("2,000,000"), "{d}");
    assert!(d.key.ends_with("sndbuf"), "{d:?}");
    ok(&flood.replace("1GiB", "512MiB"), &[]);
    // Each flow is a socket with its own send buffer: SO_SNDBUF 1 MiB is 2 MiB (doubled)
    // of 768-byte skbs, 2,731 per flow; 700 flows hold 1,911,700, 800 of them 2,184,800.
    let flows = |n: u32| format!("[[traffic]]\nkind = \"udp\"\nsize = 1\nsndbuf = \"1MiB\"\nflows = {n}\n");
    ok(&flows(700), &[]);
    let d = err(&flows(800), &[]);
    assert!(d.to_string().contains("2,184,800 packets in flight"), "{d}");
    // Without sndbuf, the flows are what the user wrote.
    let d = err("[[traffic]]\nkind = \"udp\"\nsize = 1\nflows = 65536\n", &[]);
    assert_eq!((d.line, d.key.as_str()), (Some(4), "traffic.0.flows"), "{d}");
}

#[test]
fn a_profile_path_that_is_not_a_small_file_is_an_error_at_its_key() {
    let d = err(&format!("[machine]\nprofile = \"/dev/zero\"\n{UDP}"), &[]);
    assert_eq!(d.line, Some(2), "{d}");
    assert!(d.to_string().contains("not a regular file"), "{d}");
}

#[test]
fn an_endless_scenario_file_is_read_only_up_to_the_bound() {
    let d = load(std::path::Path::new("/dev/zero"), &[]).expect_err("/dev/zero is no scenario");
    assert!(d.to_string().contains("larger than 1,048,576 bytes"), "{d}");
    assert_eq!(read_bounded(std::path::Path::new("/dev/zero"), 10).unwrap(), None);
}

#[test]
fn the_whole_command_is_bounded() {
    let mut s = ok(UDP, &["runs=1000"]);
    assert!(check_total([&s]).is_ok());
    let points: Vec<Scenario> = (0..11).map(|_| s.clone()).collect();
    let e = check_total(points.iter()).unwrap_err();
    assert!(e.contains("11,000 runs") && e.contains("10,000"), "{e}");
    s.sample_interval_ns = 1_000_000; // 10 001 samples x 4 series per run
    let e = check_total([&s]).unwrap_err();
    assert!(e.contains("2,000,000"), "{e}");
}

/// Issue 48: the README bounds durations at "1 hour"; "1h" is a duration, "2h" is
/// refused with the bound named as the README names it.
#[test]
fn durations_take_hours_and_the_bound_is_one_hour() {
    assert_eq!(ok(UDP, &["duration=1h", "warmup=0.5h"]).duration_ns, 3_600_000_000_000);
    for set in ["duration=2h", "warmup=61min"] {
        let d = err(UDP, &[set]).to_string();
        assert!(d.contains("is longer than the 1 hour (3600 s) a run may take"), "{d}");
        assert!(d.contains("expected at most \"1h\""), "{d}");
    }
}

/// Issue 48: `priority` is documented as 0..=15 (TC_PRIO_MAX); a class is a handle.
#[test]
fn priority_is_0_to_15_or_a_handle() {
    let d = err(UDP, &["traffic.0.priority=16"]).to_string();
    assert!(d.contains("`traffic.0.priority` = 16 is out of range"), "{d}");
    assert!(d.contains("0..=15"), "{d}");
    assert!(err(UDP, &["traffic.0.priority=-1"]).to_string().contains("out of range"));
    assert_eq!(ok(UDP, &["traffic.0.priority=15"]).traffic.len(), 1);
    ok(UDP, &["traffic.0.priority=\"1:10\""]);
}
