//! Ingress shaping through an ifb (issue 53): SQM's script, cake at 90% of a 100 Mbit
//! download on the ifb and cake on egress, shapes the download before the host's stack.

mod common;

use common::{m, run_text};

const SQM: &str = "[qdisc]\ntc = '''\n\
tc qdisc add dev eth0 root cake bandwidth 95mbit besteffort\n\
ip link add name ifb4eth0 type ifb\n\
tc qdisc add dev eth0 handle ffff: ingress\n\
tc qdisc add dev ifb4eth0 root cake bandwidth 90mbit besteffort wash ingress\n\
tc filter add dev eth0 parent ffff: protocol all prio 10 u32 match u32 0 0 flowid 1:1 action mirred egress redirect dev ifb4eth0\n\
'''\n";

fn nic(test: &str, duration: &str, qdisc: &str) -> darkbuf_report::RunRecord {
    let text = format!(
        "name = \"sqm\"\ntest = \"{test}\"\ntest_delay = \"500ms\"\nduration = \"{duration}\"\nwarmup = \"1s\"\n[machine]\ncpus = 4\n[device]\ndriver = \"nic\"\nrate = \"100Mbit\"\n[path]\ndelay = \"5ms\"\n{qdisc}"
    );
    run_text(&text, &[])
}

/// One download through the ifb's cake at 90 Mbit: goodput within 5% of the shaped rate
/// less the headers (1448 of every 1514 bytes cake counts: 86.1 Mbit/s); measured 82.6.
/// Unshaped, the 100 Mbit line gives more.
#[test]
fn the_ifb_shapes_the_download() {
    let shaped = m(&nic("tcp_1down", "10s", SQM), "tcp.goodput_mbps");
    let ideal = 90.0 * 1448.0 / 1514.0;
    assert!(shaped <= ideal && shaped >= 0.95 * ideal, "{shaped} Mbit/s against {ideal}");
    let unshaped = m(&nic("tcp_1down", "10s", ""), "tcp.goodput_mbps");
    assert!(unshaped > ideal, "{unshaped}");
}

/// The ifb's cake reports as `tc -s qdisc show dev ifb4eth0` would: what it sent,
/// its shaper's overlimits and its tin's delay, under `ingress.qdisc.*`; without
/// ingress shaping there is no `ingress.*` at all.
#[test]
fn the_ifb_qdisc_has_its_own_counters() {
    let r = nic("tcp_1down", "3s", SQM);
    assert!(m(&r, "ingress.qdisc.sent_pkts") > 10_000.0, "{}", m(&r, "ingress.qdisc.sent_pkts"));
    assert!(m(&r, "ingress.qdisc.overlimits") > 0.0);
    // cake's tin delay: the download waits in the ifb, at most its 5 ms target-ish.
    let d = m(&r, "ingress.qdisc.tin0_avg_delay_us");
    assert!(d > 0.0 && d < 20_000.0, "{d} us");
    let plain = nic("tcp_1down", "3s", "");
    assert!(plain.metrics.keys().all(|k| !k.starts_with("ingress.")));
}

/// rrul under SQM: the ping's RTT stays within 3x the unloaded one (measured 10.8 ms
/// against 10.0 ms).
#[test]
fn rrul_keeps_its_rtt_under_sqm() {
    let idle = m(&nic("ping", "5s", ""), "ping.rtt_avg_ms");
    let loaded = m(&nic("rrul", "5s", SQM), "ping.rtt_avg_ms");
    assert!(loaded < 3.0 * idle, "{loaded} ms against {idle} ms unloaded");
}
