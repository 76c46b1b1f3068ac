//! Voice (`kind = "voip"`) on the simulator: the issue-54 check (voice beside rrul
//! behind a 10 Mbit bottleneck), the mechanics behind it, and determinism.

mod common;

use common::{m, run, run_text};

/// scenarios/voip-rrul-10mbit.toml (a 10 Mbit router, rrul_be + a G.711 call) with
/// the bottleneck's qdisc `kind`, over `secs` of measurement.
fn router(kind: &str, secs: u32) -> darkbuf_report::RunRecord {
    run("voip-rrul-10mbit.toml", &[&format!("qdisc.kind={kind}"), &format!("duration={secs}s")])
}

/// Behind the 1000-packet FIFO the call's way up waits for the bulk flows' queue
/// (hundreds of ms: G.107's Idd), and the FIFO's tail drops and the playout buffer's
/// underruns take packets: MOS below 3.6. fq_codel and cake keep the sparse voice
/// flow out of the bulk queue: no loss, a few ms of delay, MOS above 4. The far host's
/// stream is the same in all three (its own NIC's queue, short under TSQ).
#[test]
fn voice_beside_rrul_fifo_vs_fq_codel_vs_cake() {
    let fifo = router("pfifo", 15);
    let (fq, cake) = (router("fq_codel", 15), router("cake", 15));
    let mos = |r: &darkbuf_report::RunRecord| m(r, "voip.mos");
    assert!(mos(&fifo) < 3.6, "FIFO MOS {}", mos(&fifo));
    assert!(mos(&fq) > 4.0 && mos(&cake) > 4.0, "fq_codel {} cake {}", mos(&fq), mos(&cake));
    // The mechanics: the FIFO's delay, its loss, and the worse direction is the way up.
    assert!(m(&fifo, "voip.up.owd_p99_ms") > 300.0, "{}", m(&fifo, "voip.up.owd_p99_ms"));
    assert!(m(&fifo, "voip.up.mouth_to_ear_ms") > 300.0);
    assert!(m(&fifo, "voip.up.net_loss_pct") > 0.0);
    assert_eq!(m(&fifo, "voip.mos"), m(&fifo, "voip.up.mos"));
    for r in [&fq, &cake] {
        assert!(m(r, "voip.up.owd_p99_ms") < 20.0);
        assert_eq!(m(r, "voip.up.loss_pct"), 0.0);
    }
    // loss_pct = network + late, and the MOS follows R by G.107 Annex B.
    for r in [&fifo, &fq, &cake] {
        for d in ["up", "down"] {
            let k = |x: &str| m(r, &format!("voip.{d}.{x}"));
            assert!((k("loss_pct") - k("net_loss_pct") - k("late_pct")).abs() < 1e-9);
            let rr = k("r");
            assert!((k("mos") - (1.0 + 0.035 * rr + rr * (rr - 60.0) * (100.0 - rr) * 7e-6)).abs() < 1e-12);
        }
    }
}

/// The same scenario and seed give the same voice metrics.
#[test]
fn voice_is_deterministic() {
    let text = "duration = \"2s\"\nwarmup = \"500ms\"\n[device]\ndriver = \"nic\"\nrate = \"10Mbit\"\n[path]\ndelay = \"5ms\"\n\
                [[traffic]]\nkind = \"voip\"\ncalls = 3\n[[traffic]]\nkind = \"tcp\"\n";
    let (a, b) = (run_text(text, &[]), run_text(text, &[]));
    let voip = |r: &darkbuf_report::RunRecord| r.metrics.iter().filter(|(k, _)| k.starts_with("voip.")).map(|(k, v)| (k.clone(), *v)).collect::<Vec<_>>();
    assert_eq!(voip(&a), voip(&b));
    assert!(voip(&a).len() > 30);
    // Three calls each way, 2 s of 20 ms packets in the window each.
    assert!((298.0..=303.0).contains(&m(&a, "voip.up.packets")), "{}", m(&a, "voip.up.packets"));
}

/// flent's voip test alone on an idle path: the wire's delay, no loss, and G.107's
/// rating of a G.711 call with ~85 ms mouth to ear (R 90.97, MOS 4.36).
#[test]
fn flents_voip_preset_on_an_idle_path() {
    let r = run_text("test = \"voip\"\nduration = \"3s\"\nwarmup = \"0s\"\n[device]\ndriver = \"nic\"\nrate = \"100Mbit\"\n[path]\ndelay = \"5ms\"\n", &[]);
    for d in ["up", "down"] {
        let k = |x: &str| m(&r, &format!("voip.{d}.{x}"));
        assert!((5.0..5.1).contains(&k("owd_p99_ms")), "{d}: {}", k("owd_p99_ms"));
        assert_eq!(k("loss_pct"), 0.0);
        assert!((k("mos") - 4.362).abs() < 0.001, "{d}: {}", k("mos"));
    }
}
