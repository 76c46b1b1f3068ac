//! `[wifi] txq_schedule`: which round robin feeds the driver, its default, and the
//! combinations the kernel never had.

mod common;

use common::{err_set, ok_set};
use darkbuf_scenario::wifi::TxqSchedule;

const RADIO: &str = "[device]\ndriver = \"wifi\"\n[[station]]\nname = \"a\"\nrate = \"MCS7-HT20\"\n[[traffic]]\nkind = \"udp\"\nrate = \"1Mbit\"\n";

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
