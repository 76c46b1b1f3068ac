//! `[[traffic]] kind = "rr"`: netperf's defaults, its options by their netperf meaning,
//! and clear errors for what does not apply.

use darkbuf_scenario::{load_str, RrProto, Traffic};

fn load(rr: &str) -> Result<darkbuf_scenario::Scenario, String> {
    load_str("t.toml", &format!("[[traffic]]\nkind = \"rr\"\n{rr}\n"), &[]).map_err(|d| d.to_string())
}

#[test]
fn netperfs_defaults() {
    let s = load("").unwrap();
    let Traffic::Rr(r) = &s.traffic[0] else { panic!("an rr entry") };
    assert_eq!((r.proto, r.request, r.response, r.connections, r.nodelay), (RrProto::Tcp, 1, 1, 1, false));
    assert_eq!((r.dscp, r.cpu, r.start_ns, r.stop_ns), (0, 0, 0, None));
    assert_eq!(r.timeout_ns, 1_000_000_000);
}

#[test]
fn options() {
    let s = load("proto = \"udp\"\nrequest = 64\nresponse = 1472\nconnections = 8\ntimeout = \"250ms\"\ndscp = 46\nstart = \"1s\"\nstop = \"2s\"").unwrap();
    let Traffic::Rr(r) = &s.traffic[0] else { panic!("an rr entry") };
    assert_eq!((r.proto, r.request, r.response, r.connections, r.timeout_ns, r.dscp), (RrProto::Udp, 64, 1472, 8, 250_000_000, 46));
    assert_eq!((r.start_ns, r.stop_ns), (1_000_000_000, Some(2_000_000_000)));
}

#[test]
fn errors_name_the_key_and_what_is_valid() {
    for (rr, key, says) in [
        ("request = 1449", "traffic.0.request", "1 to 1448 bytes"),
        ("proto = \"udp\"\nresponse = 1473", "traffic.0.response", "1 to 1472 bytes"),
        ("request = 0", "traffic.0.request", "1 to 1448"),
        ("request = \"1k\"", "traffic.0.request", "integer"),
        ("proto = \"udp\"\nnodelay = true", "traffic.0.nodelay", "TCP_NODELAY"),
        ("timeout = \"1s\"", "traffic.0.timeout", "UDP_RR's receive timeout"),
        ("proto = \"sctp\"", "traffic.0.proto", "\"tcp\", \"udp\""),
        ("connections = 0", "traffic.0.connections", "connections"),
        ("size = 100", "size", "request"),
        ("path_delay = \"5ms\"", "traffic.0.path_delay", "nic"),
    ] {
        let e = load(rr).unwrap_err();
        assert!(e.contains(key) && e.contains(says), "{rr}: {e}");
        assert!(e.contains("t.toml:"), "{rr}: the file and line: {e}");
    }
}
