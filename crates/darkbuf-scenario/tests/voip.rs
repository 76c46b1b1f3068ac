//! `kind = "voip"` and flent's voip presets: defaults, the codec table, exact
//! expansions and bad input.

mod common;

use common::{err, ok_set as ok};
use darkbuf_scenario::*;

const NIC: &str = "duration = \"4s\"\nwarmup = \"1s\"\ntest_delay = \"1s\"\n[device]\ndriver = \"nic\"\nrate = \"10Mbit\"\n";

fn voip(s: &Scenario, i: usize) -> &Voip {
    match &s.traffic[i] {
        Traffic::Voip(v) => v,
        t => panic!("entry {i} is not voip: {t:?}"),
    }
}

#[test]
fn defaults_are_a_g711_call_marked_ef() {
    let s = ok("[[traffic]]\nkind = \"voip\"\n", &[]);
    let v = voip(&s, 0);
    assert_eq!((v.codec, v.plc, v.interval_ns, v.size, v.dscp), (Codec::G711, true, 20_000_000, 160, 46));
    assert_eq!((v.calls, v.direction, v.jitter_buffer_ns, v.start_ns, v.stop_ns), (1, VoipDirection::Both, 60_000_000, 0, None));
    assert_eq!(v.udp_payload(), 172);
    // The default size follows the codec and the interval: 8 kbit/s x 30 ms.
    let s = ok("[[traffic]]\nkind = \"voip\"\ncodec = \"g729a\"\ninterval = \"30ms\"\n", &[]);
    assert_eq!(voip(&s, 0).size, 30);
    let s = ok("[[traffic]]\nkind = \"voip\"\ninterval = \"10ms\"\ncalls = 3\ndirection = \"up\"\njitter_buffer = \"40ms\"\nplc = false\n", &[]);
    let v = voip(&s, 0);
    assert_eq!((v.size, v.calls, v.direction, v.jitter_buffer_ns, v.plc, v.streams()), (80, 3, VoipDirection::Up, 40_000_000, false, 3));
}

#[test]
fn the_codec_table_is_g113s() {
    assert_eq!((Codec::G711.ie(), Codec::G711.bpl(false), Codec::G711.bpl(true)), (0.0, 4.3, 25.1));
    assert_eq!((Codec::G729a.ie(), Codec::G729a.bpl(true), Codec::G729a.lookahead_ns()), (11.0, 19.0, 5_000_000));
}

#[test]
fn bad_voip_input_is_named() {
    let d = err("[[traffic]]\nkind = \"voip\"\ncodec = \"opus\"\n");
    assert!(d.message.contains("codec"), "{d}");
    assert!(d.help.as_deref().unwrap().contains("\"g711\", \"g729a\""), "{d}");
    let d = err("[[traffic]]\nkind = \"voip\"\ncodec = \"g729a\"\ninterval = \"25ms\"\n");
    assert!(d.message.contains("not a whole number of g729a frames"), "{d}");
    let d = err("[[traffic]]\nkind = \"voip\"\ncodec = \"g729a\"\nplc = false\n");
    assert!(d.message.contains("conceals"), "{d}");
    let d = err("[[traffic]]\nkind = \"voip\"\nrate = \"1Mbit\"\n");
    assert!(d.message.contains("rate"), "{d}");
    let d = err("duration = \"10s\"\n[[traffic]]\nkind = \"voip\"\ncalls = 10000\ninterval = \"10ms\"\n");
    assert!(d.message.contains("at most 1,000,000"), "{d}");
    let d = err("[[traffic]]\nkind = \"voip\"\npath_delay = \"5ms\"\n");
    assert!(d.message.contains("path_delay"), "{d}");
}

/// flent's VoipRunner: irtt every 20 ms with 172 bytes (G.711 + RTP), both ways, no
/// marking, for the whole run.
#[test]
fn flents_voip_tests() {
    let s = ok(&format!("test = \"voip\"\n{NIC}"), &[]);
    assert_eq!(s.traffic.len(), 1);
    let v = voip(&s, 0);
    assert_eq!((v.name.as_str(), v.interval_ns, v.udp_payload(), v.dscp, v.direction), ("VoIP", 20_000_000, 172, 0, VoipDirection::Both));
    assert_eq!((v.start_ns, v.stop_ns), (0, None));

    let s = ok(&format!("test = \"voip-1up\"\n{NIC}"), &[]);
    assert_eq!(s.traffic.len(), 2);
    assert_eq!(voip(&s, 0).stop_ns, None);
    let Traffic::Tcp(t) = &s.traffic[1] else { panic!() };
    assert_eq!((t.name.as_str(), t.direction, t.start_ns, t.stop_ns), ("TCP upload", Direction::Up, 1_000_000_000, Some(4_000_000_000)));

    let s = ok(&format!("test = \"voip-rrul\"\n{NIC}"), &[]);
    let names: Vec<&str> = s.traffic.iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        [
            "TCP upload BE", "TCP upload BE2", "TCP upload BE3", "TCP upload BE4",
            "TCP download BE", "TCP download BE2", "TCP download BE3", "TCP download BE4",
            "Ping (ms) UDP BE1", "Ping (ms) UDP BE2", "Ping (ms) UDP BE3", "Ping (ms) ICMP", "VoIP",
        ]
    );
    // An entry named like the preset's changes it key by key.
    let s = ok(&format!("test = \"voip-rrul\"\n{NIC}[[traffic]]\nname = \"VoIP\"\ndscp = 46\ncalls = 2\n"), &[]);
    let v = voip(&s, 12);
    assert_eq!((v.dscp, v.calls, v.size), (46, 2, 160));
}
