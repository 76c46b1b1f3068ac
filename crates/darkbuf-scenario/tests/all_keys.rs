//! scenarios/examples/all-keys.toml documents every scenario key (issue 48): each key the
//! schema takes is in it, active or commented, and its commented NIC block is
//! all-keys-nic.toml, which loads as it is.

use darkbuf_scenario::*;

fn repo(p: &str) -> String {
    format!("{}/../../{p}", env!("CARGO_MANIFEST_DIR"))
}

fn read(p: &str) -> String {
    std::fs::read_to_string(repo(p)).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// Whether `key = ` starts a line of `text`, active or after "# ".
fn has_key(text: &str, key: &str) -> bool {
    text.lines().any(|l| {
        // Active, commented, or commented twice (all-keys-nic.toml's own commented keys).
        let mut l = l.trim_start();
        while let Some(rest) = l.strip_prefix("# ") {
            l = rest.trim_start();
        }
        l.strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with('='))
    })
}

#[test]
fn every_key_is_in_all_keys() {
    let text = read("scenarios/examples/all-keys.toml");
    let sections: [(&str, &[&str]); 18] = [
        ("top", TOP_KEYS),
        ("machine", MACHINE_KEYS),
        ("device", DEVICE_KEYS),
        ("device.bql", BQL_KEYS),
        ("consumer", CONSUMER_KEYS),
        ("udp", UDP_KEYS),
        ("ping", PING_KEYS),
        ("tcp", TCP_KEYS),
        ("irtt", IRTT_KEYS),
        ("rr", RR_KEYS),
        ("path", PATH_KEYS),
        ("peer", PEER_KEYS),
        ("lan", LAN_KEYS),
        ("device.coalesce", COALESCE_KEYS),
        ("wifi", wifi::WIFI_KEYS),
        ("station", wifi::STATION_KEYS),
        ("web", web::WEB_KEYS),
        ("voip", voip::VOIP_KEYS),
    ];
    let tables = ["machine", "device", "qdisc", "ingress", "consumer", "path", "peer", "lan", "wifi", "traffic", "sweep", "variant", "test_parameters", "bql", "coalesce", "sysctl"];
    let mut missing = Vec::new();
    for (section, keys) in sections {
        for k in keys.iter().filter(|k| !tables.contains(k)) {
            if !has_key(&text, k) {
                missing.push(format!("{section}.{k}"));
            }
        }
    }
    for t in ["[machine]", "[device]", "[ingress]", "[device.coalesce]", "[path]", "[peer]", "[lan]", "[test_parameters]", "[[traffic]]", "[sweep]", "[[variant]]"] {
        if !text.contains(t) {
            missing.push(t.to_string());
        }
    }
    // [sysctl] takes the kernel's dotted names, quoted in TOML.
    for k in SYSCTL_KEYS {
        if !text.contains(&format!("\"{k}\" =")) {
            missing.push(format!("sysctl.\"{k}\""));
        }
    }
    if !text.contains("[sysctl]") {
        missing.push("[sysctl]".into());
    }
    for p in preset::PARAMETERS {
        if !has_key(&text, p) {
            missing.push(format!("test_parameters.{p}"));
        }
    }
    assert!(missing.is_empty(), "all-keys.toml lacks {missing:?}");
}

#[test]
fn the_commented_nic_block_is_all_keys_nic_and_both_load() {
    let all = read("scenarios/examples/all-keys.toml");
    let nic = read("scenarios/examples/all-keys-nic.toml");
    let body: Vec<&str> = nic.lines().skip_while(|l| !l.starts_with("# ---- the keys")).skip(1).collect();
    let block: Vec<String> = all
        .lines()
        .skip_while(|l| !l.starts_with("# ==== driver = \"nic\""))
        .skip(1)
        .take_while(|l| !l.starts_with("# ==== end"))
        .map(|l| if l == "#" { String::new() } else { l.strip_prefix("# ").unwrap_or(l).to_string() })
        .collect();
    assert_eq!(block, body, "all-keys.toml's commented block differs from all-keys-nic.toml");
    for (name, text) in [("all-keys.toml", &all), ("all-keys-nic.toml", &nic)] {
        let s = load_str(&format!("scenarios/examples/{name}"), text, &[]).unwrap_or_else(|d| panic!("{d}"));
        assert!(!s.traffic.is_empty());
    }
}

/// The commented voip block, uncommented after all-keys-nic.toml (a NIC: the far
/// host's stream needs its transmit path), loads with the values it documents.
#[test]
fn the_commented_voip_block_loads_on_a_nic() {
    let all = read("scenarios/examples/all-keys.toml");
    let nic = read("scenarios/examples/all-keys-nic.toml");
    let block: Vec<&str> = all
        .lines()
        .skip_while(|l| !l.starts_with("# ==== kind = \"voip\""))
        .skip(1)
        .take_while(|l| !l.starts_with("# ==== end"))
        .map(|l| l.strip_prefix("# ").unwrap_or(l))
        .collect();
    assert!(block.len() > 10, "no voip block in all-keys.toml");
    let text = format!("{nic}\n{}\n", block.join("\n"));
    let s = load_str("scenarios/examples/all-keys-nic.toml", &text, &[]).unwrap_or_else(|d| panic!("{d}"));
    let Some(Traffic::Voip(v)) = s.traffic.last() else { panic!("the last entry is not the voip block's: {:?}", s.traffic.last()) };
    assert_eq!((v.codec, v.plc, v.interval_ns, v.size, v.dscp, v.calls), (voip::Codec::G711, true, 20_000_000, 160, 46, 1));
    assert_eq!((v.direction, v.jitter_buffer_ns), (voip::VoipDirection::Both, 60_000_000));
}
