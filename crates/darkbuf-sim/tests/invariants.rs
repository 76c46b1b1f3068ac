//! Property test: for arbitrary small scenarios the simulator never panics, conserves
//! packets (created = delivered + dropped + queued), never completes more BQL units
//! than were queued, and never leaves a TX queue stopped for good; with a flood, a
//! pinger and a request/response connection.

use darkbuf_scenario::load_str;
use darkbuf_measure::Profile;
use darkbuf_sim::simulate;
use proptest::prelude::*;

#[allow(clippy::too_many_arguments)] // one per drawn scenario setting
fn scenario(
    qdisc: &str,
    bql: bool,
    completion: &str,
    limit_min: u32,
    napi: &str,
    txqs: u32,
    xps: bool,
    nrules: u32,
    rate: &str,
    size: u32,
    backpressure: bool,
    sndbuf: u32,
    tun: Option<&str>,
) -> String {
    // tun/tap has no BQL; its consumer is a reader or vhost-net.
    let bql = bql && qdisc != "noqueue" && tun.is_none();
    let (driver, consumer) = match tun {
        Some(kind) => ("tun", kind),
        None => ("veth", "napi"),
    };
    let qdisc_params = match qdisc {
        "tbf" => "rate = \"50mbit\"\nburst = \"10kb\"\nlatency = \"20ms\"",
        "cake" => "bandwidth = \"100mbit\"",
        "fq" => "maxrate = \"200mbit\"",
        _ => "",
    };
    let xps = if xps { format!("xps_txq = {}", txqs - 1) } else { String::new() };
    format!(
        r#"
duration = "50ms"
warmup = "10ms"
[device]
driver = "{driver}"
txqueuelen = 64
tx_queues = {txqs}
{xps}
napi = "{napi}"
backpressure = {backpressure}
[device.bql]
enabled = {bql}
completion = "{completion}"
limit_min = {limit_min}
tx_usecs = 50
[qdisc]
kind = "{qdisc}"
{qdisc_params}
[consumer]
kind = "{consumer}"
nrules = {nrules}
[[traffic]]
kind = "udp"
size = {size}
rate = "{rate}"
flows = 3
sndbuf = {sndbuf}
[[traffic]]
kind = "ping"
interval = "5ms"
[[traffic]]
kind = "rr"
proto = "{rr}"
"#,
        // A request/response connection beside them, TCP_RR or UDP_RR by the size drawn.
        rr = if size < 1000 { "udp" } else { "tcp" },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]
    #[test]
    fn simulator_keeps_kernel_invariants(
        qdisc in prop::sample::select(vec![
            "noqueue", "pfifo_fast", "pfifo", "bfifo", "pfifo_head_drop", "sfq", "mq", "codel",
            "fq_codel", "fq", "cake", "tbf", "pie", "fq_pie",
        ]),
        tun in prop::option::weighted(0.3, prop::sample::select(vec!["reader", "vhost"])),
        bql in any::<bool>(),
        completion in prop::sample::select(vec!["per-packet", "per-poll", "coalesced"]),
        limit_min in prop::sample::select(vec![0u32, 1, 4, 8, 64, 1 << 30]),
        napi in prop::sample::select(vec!["threaded", "softirq"]),
        txqs in 1u32..4,
        xps in any::<bool>(),
        nrules in prop::sample::select(vec![0u32, 100, 3000]),
        rate in prop::sample::select(vec!["max", "20kpps", "300kpps", "50mbit"]),
        size in prop::sample::select(vec![24u32, 1400]),
        backpressure in any::<bool>(),
        sndbuf in prop::sample::select(vec![4608u32, 65536, 1 << 20]),
        seed in 0u64..1000,
    ) {
        let text = scenario(qdisc, bql, completion, limit_min, napi, txqs, xps, nrules, rate, size, backpressure, sndbuf, tun);
        let scn = load_str("prop.toml", &text, &[]).expect("generated scenario is valid");
        let p = Profile::load("seed-vm").unwrap();
        let (rec, _) = simulate(&scn, &p, seed).expect("simulates");
        prop_assert!(rec.findings.is_empty(), "findings {:?} for\n{}", rec.findings, text);
        // Traffic flowed. (Probes may legitimately all still be queued at the end: a
        // 1.5 MB bfifo of tiny packets in front of a 3000-rule consumer holds ~0.7 s.)
        prop_assert!(rec.metrics["consumer.pps"].unwrap() > 0.0, "nothing delivered for\n{}", text);
    }
}

/// A pinger listed before the flood: floods are counted by their own index, not by their
/// position in `[[traffic]]` (this used to index past the per-flood counters).
#[test]
fn ping_listed_before_flood() {
    let text = "duration = \"100ms\"\nwarmup = \"10ms\"\n[[traffic]]\nkind = \"ping\"\ninterval = \"5ms\"\n[[traffic]]\nkind = \"udp\"\n";
    let scn = load_str("t.toml", text, &[]).unwrap();
    let (rec, _) = simulate(&scn, &Profile::load("seed-vm").unwrap(), 1).unwrap();
    assert!(rec.findings.is_empty(), "{:?}", rec.findings);
    let flood = rec.metrics["sink.pps.1"].expect("the flood is traffic 1");
    assert!(flood > 0.0);
    assert_eq!(rec.metrics["sink.pps"], Some(flood));
}
