//! `[wifi]`: DESIGN.md's keys (`[[wifi.station]]` with `phy_rate`, `direction` on a
//! flood, `queueing = "fq_codel_qdisc"`) and the earlier spellings; `txq_schedule`:
//! which round robin feeds the driver, its default, and the combinations the kernel
//! never had.

mod common;

use common::{err_set, ok_set};
use darkbuf_scenario::wifi::TxqSchedule;

const RADIO: &str = "[device]\ndriver = \"wifi\"\n[[wifi.station]]\nname = \"a\"\nphy_rate = \"MCS7-HT20\"\n[[traffic]]\nkind = \"udp\"\nrate = \"1Mbit\"\n";

fn sched(set: &[&str]) -> TxqSchedule {
    ok_set(RADIO, set).device.wifi().expect("a radio").txq_schedule
}

/// With airtime fairness the airtime scheduler; without it ath9k's own round robin,
/// the driver before 63fefa050477; mac80211's round robin when asked for.
#[test]
fn the_default_follows_airtime_fairness() {
    assert_eq!(sched(&[]), TxqSchedule::Mac80211);
    assert_eq!(sched(&["wifi.airtime_fairness=false"]), TxqSchedule::Ath9kAcq);
    assert_eq!(sched(&["wifi.airtime_fairness=false", "wifi.txq_schedule=mac80211"]), TxqSchedule::Mac80211);
}

#[test]
fn ath9k_acq_has_no_airtime_fairness_and_no_fifo() {
    let d = err_set(RADIO, &["wifi.txq_schedule=ath9k-acq"]);
    assert!(d.message.contains("no airtime deficits"), "{d}");
    assert!(d.help.as_deref().unwrap().contains("airtime_fairness = false"), "{d}");
    let d = err_set(RADIO, &["wifi.txq_schedule=ath9k-acq", "wifi.airtime_fairness=false", "wifi.queueing=fifo"]);
    assert!(d.message.contains("has none"), "{d}");
    let d = err_set(RADIO, &["wifi.txq_schedule=fifo"]);
    assert!(d.help.as_deref().unwrap().contains("ath9k-acq"), "{d}");
}

/// `[[wifi.station]]` with `phy_rate` (DESIGN.md), and the earlier top-level
/// `[[station]]` with `rate`, give the same stations; both lists at once, or both keys
/// in one station, are refused.
#[test]
fn stations_in_either_spelling() {
    let old = RADIO.replace("[[wifi.station]]", "[[station]]").replace("phy_rate", "rate");
    let a = ok_set(RADIO, &[]);
    let b = ok_set(&old, &[]);
    let (a, b) = (&a.device.wifi().unwrap().stations, &b.device.wifi().unwrap().stations);
    assert_eq!((a[0].name.as_str(), a[0].rate_kbps), ("a", 65_000));
    assert_eq!((b[0].name.as_str(), b[0].rate_kbps), ("a", 65_000));
    let both = format!("{RADIO}[[station]]\nname = \"b\"\nrate = \"MCS0-HT20\"\n");
    assert!(err_set(&both, &[]).message.contains("both [[wifi.station]] and [[station]]"));
    let d = err_set(RADIO, &["wifi.station.0.rate=MCS0-HT20"]);
    assert!(d.message.contains("both `phy_rate` and `rate`"), "{d}");
    let d = err_set(&RADIO.replace("phy_rate = \"MCS7-HT20\"\n", ""), &[]);
    assert!(d.message.contains("has no `phy_rate`"), "{d}");
}

/// A rate by its value in Mbit/s, as a string or a number; `--set` reaches a station.
#[test]
fn phy_rate_by_value() {
    let kbps = |set: &[&str]| ok_set(RADIO, set).device.wifi().unwrap().stations[0].rate_kbps;
    assert_eq!(kbps(&["wifi.station.0.phy_rate=144.4Mbit"]), 144_444);
    assert_eq!(kbps(&["wifi.station.0.phy_rate=6.5"]), 6_500);
    assert_eq!(kbps(&["wifi.station.0.phy_rate=54"]), 54_000);
    let d = err_set(RADIO, &["wifi.station.0.phy_rate=100Mbit"]);
    assert!(d.message.contains("no legacy or HT rate"), "{d}");
}

/// A station's name is part of its metrics' names: no dots, no spaces.
#[test]
fn station_names_fit_a_metric_name() {
    for bad in ["a.b", "a b", ""] {
        let d = err_set(RADIO, &[&format!("wifi.station.0.name={bad}")]);
        assert!(d.message.contains("part of its metrics' names"), "{bad:?}: {d}");
    }
    assert!(ok_set(RADIO, &["wifi.station.0.name=fast-1_b"]).device.wifi().is_some());
}

/// A flood over a radio: the AP sends by default, the station with `direction = "up"`;
/// elsewhere only this host floods.
#[test]
fn a_flood_has_a_direction_over_a_radio() {
    use darkbuf_scenario::{Direction, Traffic};
    let dir = |text: &str, set: &[&str]| match &ok_set(text, set).traffic[0] {
        Traffic::Udp(u) => u.direction,
        _ => unreachable!("a flood"),
    };
    assert_eq!(dir(RADIO, &[]), Direction::Down);
    assert_eq!(dir(RADIO, &["traffic.0.direction=up"]), Direction::Up);
    let nic = "[[traffic]]\nkind = \"udp\"\nrate = \"1Mbit\"\n";
    assert_eq!(dir(nic, &["traffic.0.direction=up"]), Direction::Up);
    let d = err_set(nic, &["traffic.0.direction=down"]);
    assert!(d.message.contains("sent by this host"), "{d}");
}

/// `queueing = "fq_codel_qdisc"`: the driver's deep queues under mq with an fq_codel
/// per AC (net.core.default_qdisc = fq_codel), whose parameters `[qdisc.child]` sets.
#[test]
fn fq_codel_qdisc_is_mq_with_fq_codel() {
    let s = ok_set(RADIO, &["wifi.queueing=fq_codel_qdisc", "qdisc.child.target=1ms"]);
    assert_eq!(s.qdisc.kind, "mq");
    let child = s.qdisc.child.as_ref().expect("mq's child");
    assert_eq!(child.kind, "fq_codel");
    assert!(format!("{:?}", child.params).contains("target"), "{:?}", child.params);
    assert!(s.device.wifi().unwrap().queueing.driver_queues());
    assert_eq!(ok_set(RADIO, &["wifi.queueing=fifo"]).qdisc.child.as_ref().unwrap().kind, "pfifo_fast");
    assert_eq!(ok_set(RADIO, &[]).qdisc.kind, "noqueue");
}

/// `band` defaults to 5 GHz, and to 2.4 GHz when a station is 802.11b; a DSSS rate on a
/// radio set to 5 GHz is refused.
#[test]
fn an_80211b_station_puts_the_radio_on_2_4_ghz() {
    let band = |set: &[&str]| ok_set(RADIO, set).device.wifi().unwrap().band.clone();
    assert_eq!(band(&[]), "5GHz");
    assert_eq!(band(&["wifi.station.0.phy_rate=1Mbit"]), "2.4GHz");
    assert_eq!(band(&["wifi.station.0.phy_rate=MCS0", "wifi.band=2.4GHz"]), "2.4GHz");
    let d = err_set(RADIO, &["wifi.station.0.phy_rate=11Mbit", "wifi.band=5GHz"]);
    assert!(d.message.contains("only on 2.4 GHz"), "{d}");
}

/// The reference's other `[wifi]` keys: `phy` ("ht", "legacy"; VHT and HE not
/// modelled), `airtime_quantum_us` (the stations' default `airtime_weight`) and `qdisc`
/// (the root qdisc, as `[qdisc] kind`; not both).
#[test]
fn phy_quantum_and_qdisc_under_wifi() {
    let w = |set: &[&str]| ok_set(RADIO, set);
    assert_eq!(w(&["wifi.airtime_quantum_us=512"]).device.wifi().unwrap().stations[0].airtime_weight, 512);
    assert_eq!(w(&["wifi.airtime_quantum_us=512", "wifi.station.0.airtime_weight=128"]).device.wifi().unwrap().stations[0].airtime_weight, 128);
    assert_eq!(w(&["wifi.phy=legacy", "wifi.station.0.phy_rate=54Mbit"]).device.wifi().unwrap().phy, "legacy");
    let d = err_set(RADIO, &["wifi.phy=legacy"]);
    assert!(d.message.contains("is an HT rate"), "{d}");
    let d = err_set(RADIO, &["wifi.phy=vht"]);
    assert_eq!(d.kind, darkbuf_scenario::DiagnosticKind::Unsupported, "{d}");
    assert_eq!(w(&["wifi.qdisc=fq_codel"]).qdisc.kind, "fq_codel");
    assert_eq!(w(&["wifi.qdisc=fq_codel", "wifi.queueing=fq_codel_qdisc"]).qdisc.kind, "fq_codel");
    let d = err_set(RADIO, &["wifi.qdisc=fq_codel", "qdisc.kind=pfifo"]);
    assert!(d.message.contains("both set the radio's root qdisc"), "{d}");
}
