//! Where a download (`direction = "down"`: the far end sends) and ingress shaping
//! resolve: on a NIC (its far host) and on veth (its peer namespace), not on tun (the
//! far end is the tap's reader) nor through a veth `[lan]` router.

mod common;

use common::{err, ok_set};
use darkbuf_scenario::{Direction, Traffic};

const DOWN: &str = "[[traffic]]\nkind = \"tcp\"\ndirection = \"down\"\n";

#[test]
fn a_veth_download_resolves_with_ingress_shaping() {
    let s = ok_set(&format!("[device]\ndriver = \"veth\"\n[ingress]\nkind = \"pfifo\"\n{DOWN}"), &[]);
    assert!(matches!(&s.traffic[0], Traffic::Tcp(f) if f.direction == Direction::Down));
    assert_eq!(s.ingress.as_ref().map(|i| (i.ifb.as_str(), i.qdisc.kind.as_str())), Some(("ifb0", "pfifo")));
    // flent's tests with downloads run on veth too.
    let s = ok_set("test = \"rrul\"\ntest_delay = \"1s\"\n[device]\ndriver = \"veth\"\n", &[]);
    assert!(s.traffic.iter().any(|t| matches!(t, Traffic::Tcp(f) if f.direction == Direction::Down)));
}

#[test]
fn a_tap_download_is_named_with_its_line() {
    let d = err(&format!("[device]\ndriver = \"tun\"\n{DOWN}"));
    assert_eq!((d.key.as_str(), d.line, d.column), ("traffic.0.direction", Some(5), Some(13)), "{d}");
    assert!(d.message.contains("device.driver = \"tun\" has no far end that sends"), "{d}");
    assert!(d.help.as_deref().is_some_and(|h| h.contains("\"veth\" or \"nic\"")), "{d}");
}

#[test]
fn a_download_through_a_veth_lan_router_is_refused() {
    let lan = "[lan]\n[lan.qdisc]\nkind = \"pfifo\"\n";
    let d = err(&format!("[device]\ndriver = \"veth\"\n{lan}{DOWN}"));
    assert_eq!(d.key, "traffic.0.direction", "{d}");
    assert!(d.message.contains("with [lan] on veth"), "{d}");
    let d = err(&format!("[device]\ndriver = \"veth\"\n{lan}[ingress]\nkind = \"pfifo\"\n[[traffic]]\nkind = \"ping\"\n"));
    assert!(d.message.contains("device.driver = \"veth\" with [lan] has none"), "{d}");
    let d = err(&format!("test = \"rrul\"\ntest_delay = \"1s\"\n[device]\ndriver = \"veth\"\n{lan}"));
    assert!(d.message.contains("through the [lan] router does not send"), "{d}");
}
