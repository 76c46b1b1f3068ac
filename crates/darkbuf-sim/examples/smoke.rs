use darkbuf_model::params::Params;
use darkbuf_model::units::Rate;
use darkbuf_scenario::*;

fn scn(nrules: u32, bql: bool, completion: Completion, limit_min: u32) -> Scenario {
    Scenario {
        name: "smoke".into(), duration_ns: 10_000_000_000, warmup_ns: 1_000_000_000, runs: 1, seed: 1,
        machine: Machine { profile: "seed-vm".into(), cpus: 2, hz: 250 },
        device: Device {
            driver: Driver::Veth, tx_queues: 2, xps_txq: Some(1), ring_size: 256, txqueuelen: 1000,
            napi: NapiMode::Threaded, napi_weight: 64, netdev_budget: 300, netdev_budget_usecs: 8000,
            gro_normal_batch: 8, backpressure: true, wake_threshold: 0.5,
            bql: Bql { enabled: bql, unit: BqlUnit::Packet, completion, tx_usecs: 100, limit_min, limit_max: 1879048192, hold_time_ns: 1_000_000_000 },
        },
        qdisc: QdiscSpec { kind: "sfq".into(), params: Params::default(), child: None },
        consumer: Consumer { kind: ConsumerKind::Napi, nrules, app_cost_ns: 0 },
        traffic: vec![
            Traffic::Udp(UdpFlood { size: 1400, rate: Rate::Max, flows: 1, sndbuf: 2 << 20, priority: 0, ecn: 0 }),
            Traffic::Udp(UdpFlood { size: 24, rate: Rate::Max, flows: 1, sndbuf: 2 << 20, priority: 0, ecn: 0 }),
            Traffic::Ping(Ping { interval_ns: 200_000_000, size: 56 }),
        ],
        label: String::new(),
    }
}

fn main() {
    let nrules: u32 = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(15000);
    let p = darkbuf_sim::Profile::load("seed-vm").unwrap();
    let cases = [
        ("No BQL", scn(nrules, true, Completion::PerPacket, 1 << 30)),
        ("per-pkt", scn(nrules, true, Completion::PerPacket, 0)),
        ("lm4", scn(nrules, true, Completion::PerPacket, 4)),
        ("lm8", scn(nrules, true, Completion::PerPacket, 8)),
        ("lm16", scn(nrules, true, Completion::PerPacket, 16)),
        ("per-poll", scn(nrules, true, Completion::PerPoll, 0)),
    ];
    let keys = ["ping.loss_pct","ping.probes","bql.limit_last","bql.inflight_avg","ping.rtt_avg_ms","ping.rtt_min_ms","ping.wait_qdisc_ms","ping.wait_ring_ms","ping.wait_consumer_ms","qdisc.requeues","qdisc.drops","napi.avg_work","napi.polls","consumer.pps","sink.pps","ring.drops","cpu.0.busy_pct","cpu.1.busy_pct","txq.stack_xoff","txq.drv_xoff"];
    let mut rows = vec![];
    for (name, s) in &cases {
        let t = std::time::Instant::now();
        let (r, _) = darkbuf_sim::simulate(s, &p, 1).unwrap();
        eprintln!("{name}: {:?} findings={:?}", t.elapsed(), r.findings.first());
        rows.push((name, r));
    }
    for k in keys {
        print!("{k:24}");
        for (_, r) in &rows { print!("{:>12}", r.metrics[k].map(|v| format!("{v:.3}")).unwrap_or("-".into())); }
        println!();
    }
}
