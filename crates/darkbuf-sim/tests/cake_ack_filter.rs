//! cake's ACK filter in whole runs (issue 53): a download's ACKs leave this host through
//! an egress cake narrower than their stream, as on an asymmetric DSL or cable uplink.
//! Which ACK is dropped when is tested on the model (cake/ack_filter.rs).

mod common;

use common::{m, run_text};

fn download(cake: &str) -> darkbuf_report::RunRecord {
    let text = format!(
        "name = \"ack\"\ntest = \"tcp_1down\"\ntest_delay = \"500ms\"\nduration = \"3s\"\nwarmup = \"1s\"\n[machine]\ncpus = 4\n[device]\ndriver = \"nic\"\nrate = \"100Mbit\"\n[path]\ndelay = \"10ms\"\n[qdisc]\ntc = \"tc qdisc add dev eth0 root cake bandwidth 100kbit besteffort {cake}\"\n"
    );
    run_text(&text, &[])
}

/// A 100 Mbit/s download whose ACKs leave through a 100 kbit/s cake: without the
/// filter the ACK queue holds the download to 4.9 Mbit/s (srtt 166 ms); with it the
/// redundant ACKs go (8 in the window, 14 with `ack-filter-aggressive`, 60 and more
/// over the whole run) and the download gets 86.9 Mbit/s (srtt 36 ms). Without the
/// filter `qdisc.ack_drops` is absent (cake's tins still count 0).
#[test]
fn the_filter_drops_redundant_acks() {
    let off = download("no-ack-filter");
    assert!(!off.metrics.contains_key("qdisc.ack_drops"));
    assert_eq!(m(&off, "qdisc.tin0_ack_drops"), 0.0);
    for mode in ["ack-filter", "ack-filter-aggressive"] {
        let on = download(mode);
        let drops = m(&on, "qdisc.ack_drops");
        assert!(drops > 0.0, "{mode}: {drops}");
        assert_eq!(m(&on, "qdisc.tin0_ack_drops"), drops, "{mode}");
        let (g_on, g_off) = (m(&on, "tcp.goodput_mbps"), m(&off, "tcp.goodput_mbps"));
        assert!(g_on > 4.0 * g_off, "{mode}: {g_on} against {g_off} Mbit/s without the filter");
    }
}

/// `nat` is refused by name, with the reason.
#[test]
fn nat_is_refused_with_the_reason() {
    let text = "[qdisc]\ntc = \"tc qdisc add dev eth0 root cake bandwidth 1mbit nat\"\n";
    let e = darkbuf_scenario::load_str("t.toml", text, &[]).unwrap_err().to_string();
    assert!(e.contains("no NAT"), "{e}");
}
