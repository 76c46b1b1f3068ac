//! The irtt prober (`kind = "irtt"`) and the flent presets on the simulator: one-way
//! delays from the true times, loss on the leg where it happens, deterministic results.

mod common;

use common::{m, run, run_text};

fn nic(extra_traffic: &str, qdisc: &str) -> String {
    format!(
        "duration = \"2s\"\nwarmup = \"1s\"\n[device]\ndriver = \"nic\"\nrate = \"100Mbit\"\n[qdisc]\n{qdisc}\n\
         [path]\ndelay = \"5ms\"\n[[traffic]]\nkind = \"irtt\"\ninterval = \"10ms\"\n{extra_traffic}"
    )
}

/// An idle 100 Mbit wire with 5 ms each way: each leg is the propagation delay plus a
/// little (a 102-byte frame is 8.2 us on the wire; the stacks and interrupts add the
/// rest), nothing is lost, and the round trip is the two legs.
#[test]
fn idle_path_one_way_delays_are_the_wire() {
    let r = run_text(&nic("", "kind = \"pfifo_fast\""), &[]);
    for leg in ["irtt.owd_up_avg_ms", "irtt.owd_down_avg_ms"] {
        let v = m(&r, leg);
        assert!((5.0..5.5).contains(&v), "{leg} = {v}");
    }
    let rtt = m(&r, "irtt.rtt_avg_ms");
    assert!((rtt - m(&r, "irtt.owd_up_avg_ms") - m(&r, "irtt.owd_down_avg_ms")).abs() < 1e-9);
    assert_eq!((m(&r, "irtt.loss_up_pct"), m(&r, "irtt.loss_down_pct")), (0.0, 0.0));
    // 2 s of 10 ms requests: 201 sent in the window, the last one or two still in flight.
    let n = m(&r, "irtt.packets");
    assert!((199.0..=201.0).contains(&n), "{n}");
    assert_eq!(r.timeseries["irtt.0.rtt_ms"].values.len(), n as usize);
}

/// veth: the reply's way back is the profile's constant `ping_reply_ns` (30 us, with
/// the profile's noise).
#[test]
fn veth_way_back_is_the_profiles_constant() {
    let r = run_text("duration = \"1s\"\n[[traffic]]\nkind = \"irtt\"\ninterval = \"10ms\"\n", &[]);
    let down = m(&r, "irtt.owd_down_avg_ms");
    assert!((0.025..0.035).contains(&down), "{down}");
}

/// A 110 Mbit UDP flood overfills a 20-packet pfifo on this host: some requests are
/// lost upstream, none of the replies (the far host's queue is idle).
#[test]
fn loss_is_counted_on_its_leg() {
    let flood = "cpu = 2\n[[traffic]]\nkind = \"udp\"\nrate = \"110Mbit\"\n";
    let r = run_text(&nic(flood, "kind = \"pfifo\"\nlimit = 20"), &["machine.cpus=4"]);
    assert!(m(&r, "irtt.loss_up_pct") > 0.0, "{:?}", r.metrics.get("irtt.loss_up_pct"));
    assert_eq!(m(&r, "irtt.loss_down_pct"), 0.0);
    let lost = r.timeseries["irtt.0.rtt_ms"].values.iter().filter(|v| v.is_none()).count();
    assert!(lost > 0);
}

/// The repository's rrul scenario: 8 TCP flows, three irtt probers, a pinger, no
/// invariant finding, and the same results twice.
#[test]
fn rrul_scenario_runs_deterministically() {
    let a = run("rrul-100mbit.toml", &["duration=2s"]);
    for k in 0..8 {
        assert!(a.timeseries.contains_key(&format!("tcp.flow.{k}.goodput_mbps")));
    }
    for k in 0..3 {
        assert!(m(&a, &format!("irtt.{k}.rtt_avg_ms")) >= 10.0);
    }
    assert!(m(&a, "tcp.goodput_mbps") > 100.0, "uploads and downloads share no wire");
    let b = run("rrul-100mbit.toml", &["duration=2s"]);
    assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
}

/// `path_delay`: a second irtt prober 20 ms further away (a netem delay of its own
/// host). Each of its legs is 20 ms longer than the first prober's, both ways; the
/// first prober and the ping keep the shared 5 ms path.
#[test]
fn a_path_delay_lengthens_only_its_entrys_legs() {
    let text = nic(
        "[[traffic]]\nkind = \"irtt\"\ninterval = \"10ms\"\npath_delay = \"20ms\"\n[[traffic]]\nkind = \"ping\"\ninterval = \"10ms\"\n",
        "kind = \"pfifo_fast\"",
    );
    let r = run_text(&text, &[]);
    for leg in ["owd_up_avg_ms", "owd_down_avg_ms"] {
        let (near, far) = (m(&r, &format!("irtt.0.{leg}")), m(&r, &format!("irtt.1.{leg}")));
        assert!((5.0..5.5).contains(&near), "irtt.0.{leg} = {near}");
        assert!((far - near - 20.0).abs() < 0.1, "irtt.1.{leg} = {far}, 20 ms more than {near}");
    }
    let ping = m(&r, "ping.rtt_avg_ms");
    assert!((10.0..11.0).contains(&ping), "the ping keeps the shared path: {ping} ms");
    // Without the key, the same run is what it was: the extra link is never used.
    let plain = run_text(&nic("", "kind = \"pfifo_fast\""), &[]);
    let with_zero = run_text(&nic("", "kind = \"pfifo_fast\""), &["traffic.0.path_delay=0s"]);
    assert_eq!(serde_json::to_string(&plain).unwrap(), serde_json::to_string(&with_zero).unwrap());
}
