//! Several pingers (`kind = "ping"` entries): each is a ping(8) of its own, with its own
//! socket, flow and figures (`ping.N.*`); `ping.*` stay the first one's.

mod common;

use common::{m, run_text};

/// A 100 Mbit NIC, 5 ms each way, an upload keeping fq_codel busy, and `pings`.
fn nic(pings: &str) -> String {
    format!(
        "duration = \"3s\"\nwarmup = \"500ms\"\n[device]\ndriver = \"nic\"\nrate = \"100Mbit\"\n[qdisc]\nkind = \"fq_codel\"\n\
         [path]\ndelay = \"5ms\"\n[[traffic]]\nkind = \"tcp\"\ndirection = \"up\"\n{pings}"
    )
}

const PING: &str = "[[traffic]]\nkind = \"ping\"\ninterval = \"50ms\"\n";

/// Two pingers, the second to a host 20 ms further each way (flent's rtt_fair tests
/// ping each host): its round trips are 40 ms longer, both probers' figures are their
/// own, and `ping.*` is the first's.
#[test]
fn each_pinger_has_its_own_figures() {
    let r = run_text(&nic(&format!("{PING}{PING}path_delay = \"20ms\"\n")), &[]);
    let (near, far) = (m(&r, "ping.0.rtt_avg_ms"), m(&r, "ping.1.rtt_avg_ms"));
    assert!((10.0..20.0).contains(&near), "ping.0 {near} ms");
    assert!((far - near - 40.0).abs() < 3.0, "ping.1 {far} ms: 40 ms more than {near}");
    for k in ["rtt_avg_ms", "rtt_p99_ms", "loss_pct", "probes", "wait_qdisc_ms", "wait_wire_ms"] {
        assert_eq!(m(&r, &format!("ping.{k}")), m(&r, &format!("ping.0.{k}")), "ping.{k} is pinger 0's");
    }
    // 3 s of 50 ms probes each, none lost under fq_codel.
    for n in 0..2 {
        let probes = m(&r, &format!("ping.{n}.probes"));
        assert!((58.0..=61.0).contains(&probes), "ping.{n}.probes = {probes}");
        assert_eq!(m(&r, &format!("ping.{n}.loss_pct")), 0.0);
        assert_eq!(r.timeseries[&format!("ping.{n}.rtt_ms")].values.len(), probes as usize);
    }
    assert_eq!(r.timeseries["ping.rtt_ms"], r.timeseries["ping.0.rtt_ms"]);
}

/// With one pinger there are no `ping.N.*`; two pingers on the same path measure the
/// same round trips.
#[test]
fn one_pinger_has_only_ping_star() {
    let one = run_text(&nic(PING), &[]);
    assert!(one.metrics.keys().all(|k| !k.starts_with("ping.0.")), "no ping.0.* with one pinger");
    assert!(!one.timeseries.contains_key("ping.0.rtt_ms"));
    let two = run_text(&nic(&format!("{PING}{PING}")), &[]);
    assert!(two.metrics.contains_key("ping.1.rtt_avg_ms"));
    // Both share the path: their means are within a millisecond of each other.
    let (a, b) = (m(&two, "ping.0.rtt_avg_ms"), m(&two, "ping.1.rtt_avg_ms"));
    assert!((a - b).abs() < 1.0, "{a} vs {b}");
}
