//! Simulator speed: simulated packets per wall-clock second, and the real-time factor.
//!
//! One case per scenario family, each simulating 1 s after 100 ms warmup:
//! - veth BQL: the seed's nrules=0 No-BQL point (about 1.8 Mpps through the consumer, the
//!   fastest case) and its nrules=15000 per-packet point (6.4 kpps consumed, ~2.4 M
//!   sends/s mostly dropped by sfq), and veth under fq_codel and cake;
//! - tun: tap-reader.toml with vhost-net as the consumer;
//! - NIC: a 1 Gbit NIC (nic-1gbit.toml) with BQL + fq_codel and without BQL;
//! - TCP: one cubic flow at 1 Gbit with TSO and with software GSO (`device.tso = false`,
//!   every frame its own event), and seed 001's 100G host under fq;
//! - a router (`[lan]`): one cubic upload forwarded into a full 1000-packet FIFO at
//!   100 Mbit, every frame forwarded by its own receive and transmit.
//!
//! Packets count what reached the far end: the consumer's packets for floods, the NIC's
//! frames on the wire for TCP (`nic.tx_packets`; its receiver counts GRO'd skbs).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use darkbuf_measure::Profile;
use darkbuf_sim::simulate;
use std::path::PathBuf;

fn load(file: &str, set: &[&str]) -> darkbuf_scenario::Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(file);
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    darkbuf_scenario::load(&path, &set).expect("scenario")
}

fn bench(c: &mut Criterion) {
    let profile = Profile::load("seed-vm").unwrap();
    let cases = [
        ("nrules0_no_bql", load("seed-nrules0.toml", &["duration=1s", "warmup=100ms", "device.bql.limit_min=1073741824"])),
        ("nrules15000_per_packet", load("seed-nrules15000.toml", &["duration=1s", "warmup=100ms"])),
        // A NIC at 1 Gbit, MTU 1500, saturated: BQL + fq_codel (the flood blocks on its
        // send buffer), and no BQL under pfifo_fast (the flood's sendmsg loop spins on a
        // full qdisc, ~3 M drops per simulated second).
        ("nic_1gbit_fq_codel", load("nic-1gbit.toml", &["duration=1s", "warmup=100ms", "qdisc.kind=fq_codel"])),
        ("nic_1gbit_pfifo_fast", load("nic-1gbit.toml", &["duration=1s", "warmup=100ms", "device.bql.limit_min=1073741824"])),
        ("veth_fq_codel", load("veth-bql.toml", &["duration=1s", "warmup=100ms", "qdisc.kind=fq_codel"])),
        ("veth_cake", load("veth-bql.toml", &["duration=1s", "warmup=100ms", "qdisc.kind=cake"])),
        ("tap_vhost", load("tap-reader.toml", &["duration=1s", "warmup=100ms", "consumer.kind=vhost"])),
        ("tcp_1gbit_tso", load("tcp-100mbit.toml", &["duration=1s", "warmup=100ms", "device.rate=1Gbit", "traffic.0.flows=1", "qdisc.kind=fq_codel"])),
        ("tcp_1gbit_gso", load("tcp-100mbit.toml", &["duration=1s", "warmup=100ms", "device.rate=1Gbit", "traffic.0.flows=1", "qdisc.kind=fq_codel", "device.tso=false"])),
        // The same with the receiving application modelled (one polling reader).
        ("tcp_1gbit_gso_poll", load("tcp-100mbit.toml", &["duration=1s", "warmup=100ms", "device.rate=1Gbit", "traffic.0.flows=1", "qdisc.kind=fq_codel", "device.tso=false", "traffic.0.receiver=poll"])),
        ("tcp_100g_fq", load("fq-100g.toml", &["duration=1s", "warmup=100ms", "qdisc.child.kind=fq"])),
        ("router_100mbit_fifo", load("router-100mbit.toml", &["duration=1s", "warmup=100ms", "device.bql.enabled=false"])),
    ];
    let mut g = c.benchmark_group("simulate_1s");
    g.sample_size(10);
    for (name, scn) in &cases {
        let (rec, _) = simulate(scn, &profile, 1).unwrap();
        // A TCP receiver's consumer counts GRO'd skbs; the wire's frames are the packets.
        let tcp = rec.metrics.get("tcp.goodput_mbps").copied().flatten().is_some();
        let delivered = match (tcp, rec.metrics.get("nic.tx_packets").copied().flatten()) {
            (true, Some(frames)) => frames,
            _ => rec.metrics["consumer.pps"].expect("a flood's consumer") * scn.duration_ns as f64 / 1e9,
        };
        let simulated_s = (scn.duration_ns + scn.warmup_ns) as f64 / 1e9;
        let t = std::time::Instant::now();
        let _ = simulate(scn, &profile, 1).unwrap();
        let wall = t.elapsed().as_secs_f64();
        eprintln!(
            "{name}: {delivered:.0} packets delivered in {simulated_s:.1} s simulated; \
             one run took {wall:.2} s wall = {:.2}x faster than real time, {:.2} M simulated pkt/s",
            simulated_s / wall,
            delivered / wall / 1e6
        );
        g.throughput(Throughput::Elements(delivered as u64));
        g.bench_function(*name, |b| b.iter(|| simulate(scn, &profile, 1).unwrap()));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
