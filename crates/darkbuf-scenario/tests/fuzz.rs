//! The loader never panics: arbitrary text, and plausible-looking scenarios built from
//! the schema's own keys with values of random types, give Ok or a Diagnostic.

use darkbuf_scenario::*;
use proptest::prelude::*;

const SECTIONS: &[&str] = &[
    "",
    "[machine]",
    "[device]",
    "[device.bql]",
    "[qdisc]",
    "[qdisc.child]",
    "[consumer]",
    "[[traffic]]",
    "[[traffic]]",
    "[sweep]",
    "[[variant]]",
    "[devce]",
    "[device.bql.x]",
];

fn keys() -> Vec<&'static str> {
    let mut k: Vec<&'static str> = Vec::new();
    for list in [
        TOP_KEYS,
        MACHINE_KEYS,
        DEVICE_KEYS,
        BQL_KEYS,
        CONSUMER_KEYS,
        UDP_KEYS,
        PING_KEYS,
    ] {
        k.extend_from_slice(list);
    }
    k.extend_from_slice(&[
        "limit",
        "depth",
        "quantum",
        "perturb",
        "limit_mode",
        "child",
        "label",
        "limt",
        "\"consumer.nrules\"",
        "\"device.bql.enabled\"",
        "traffic.0.rate",
        "qdisc.limit",
        "\"\"",
        "\"a.b\"",
        "bql.enabled",
        "device.driver",
    ]);
    k
}

fn words() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "10s",
            "0s",
            "-1s",
            "1.5ms",
            "10 parsecs",
            "max",
            "50kpps",
            "100Mbit",
            "0mbit",
            "1MiB",
            "1e9kpps",
            "veth",
            "tun",
            "napi",
            "reader",
            "vhost",
            "threaded",
            "softirq",
            "packet",
            "byte",
            "per-packet",
            "per-poll",
            "coalesced",
            "noqueue",
            "pfifo_fast",
            "pfifo",
            "bfifo",
            "sfq",
            "fq_codel",
            "mq",
            "udp",
            "ping",
            "ect0",
            "ce",
            "",
            "9999999999999999999999min",
            "18446744073709551616b",
            "-0",
            "nan",
            "1.",
            ".5s",
            "µs",
        ])
        .prop_map(String::from),
        "\\PC{0,12}",
    ]
}

fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|i| i.to_string()),
        (-3i64..300).prop_map(|i| i.to_string()),
        prop::sample::select(vec![
            "0",
            "1",
            "2",
            "64",
            "256",
            "1879048192",
            "4294967296",
            "-1"
        ])
        .prop_map(String::from),
        any::<f64>().prop_map(|f| {
            if f.is_nan() {
                "nan".to_string()
            } else if f.is_infinite() {
                if f > 0.0 {
                    "inf".into()
                } else {
                    "-inf".into()
                }
            } else {
                format!("{f:?}")
            }
        }),
        any::<bool>().prop_map(|b| b.to_string()),
        words().prop_map(|w| toml_str(&w)),
        Just("1979-05-27T07:32:00Z".to_string()),
    ]
}

fn value() -> impl Strategy<Value = String> {
    scalar().prop_recursive(2, 8, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(", "))),
            prop::collection::vec((prop::sample::select(keys()), inner), 0..3).prop_map(|kv| {
                let mut seen = std::collections::HashSet::new();
                let body: Vec<String> = kv
                    .into_iter()
                    .filter(|(k, _)| seen.insert(*k))
                    .map(|(k, v)| format!("{k} = {v}"))
                    .collect();
                format!("{{{}}}", body.join(", "))
            }),
        ]
    })
}

fn document() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            prop::sample::select(SECTIONS),
            prop::collection::vec((prop::sample::select(keys()), value()), 0..5),
        ),
        0..7,
    )
    .prop_map(|sections| {
        let mut out = String::new();
        for (header, kvs) in sections {
            out.push_str(header);
            out.push('\n');
            for (k, v) in kvs {
                out.push_str(&format!("{k} = {v}\n"));
            }
        }
        out
    })
}

/// Sections with their own keys, and values that are often of the right kind.
fn aware_document() -> impl Strategy<Value = String> {
    let device_scalar_keys: &'static [&'static str] =
        Box::leak(DEVICE_KEYS.iter().copied().filter(|k| *k != "bql").collect::<Vec<_>>().into_boxed_slice());
    let sections: Vec<(&'static str, &'static [&'static str])> = vec![
        ("", &["name", "duration", "warmup", "runs", "seed", "sample_interval"]),
        ("[machine]", MACHINE_KEYS),
        // [device]'s scalar keys: DEVICE_KEYS without its `bql` sub-table.
        ("[device]", device_scalar_keys),
        ("[device.bql]", BQL_KEYS),
        (
            "[qdisc]",
            &["kind", "limit", "limit_mode", "depth", "quantum"],
        ),
        ("[consumer]", CONSUMER_KEYS),
        (
            "[[traffic]]",
            &[
                "size", "rate", "flows", "sndbuf", "priority", "ecn", "interval",
            ],
        ),
    ];
    let good = prop_oneof![
        3 => words().prop_map(|w| toml_str(&w)),
        3 => (0i64..3000).prop_map(|i| i.to_string()),
        1 => any::<bool>().prop_map(|b| b.to_string()),
        1 => (0.0f64..1.5).prop_map(|f| format!("{f:?}")),
        1 => scalar(),
    ];
    prop::collection::vec(
        (
            0..sections.len(),
            prop::collection::vec((any::<prop::sample::Index>(), good), 0..4),
        ),
        0..7,
    )
    .prop_map(move |secs| {
        let mut out = String::new();
        let mut used = std::collections::HashSet::new();
        for (si, kvs) in secs {
            let (header, keys) = sections[si];
            if !header.starts_with("[[") && !used.insert(header) {
                continue;
            }
            out.push_str(header);
            out.push('\n');
            if header == "[[traffic]]" {
                out.push_str(if si % 2 == 0 {
                    "kind = \"udp\"\n"
                } else {
                    "kind = \"ping\"\n"
                });
            }
            let mut seen = std::collections::HashSet::new();
            for (ix, v) in kvs {
                let k = keys[ix.index(keys.len())];
                if seen.insert(k) {
                    out.push_str(&format!("{k} = {v}\n"));
                }
            }
        }
        out.push_str("[[traffic]]\nkind = \"udp\"\n");
        out
    })
}

fn override_() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        prop::sample::select(vec![
            "duration",
            "device.bql.limit_min",
            "device.bql.enabled",
            "qdisc.kind",
            "qdisc.limit",
            "traffic.0.rate",
            "traffic.1.kind",
            "traffic.9.size",
            "traffic",
            "consumer.kind",
            "device",
            "device.driver.x",
            "sweep.duration",
            "variant.0.label",
            "a..b",
            "",
            ".",
        ])
        .prop_map(String::from),
        "[a-z0-9_.]{0,20}",
    ];
    prop_oneof![
        (key.clone(), value()).prop_map(|(k, v)| format!("{k}={v}")),
        (key, words()).prop_map(|(k, v)| format!("{k}={v}")),
        "\\PC{0,20}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::Off)),
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}", set in prop::collection::vec(override_(), 0..3)) {
        let _ = load_str("fuzz.toml", &text, &set);
        let _ = sweep_plan_str("fuzz.toml", &text, &set);
    }

    #[test]
    fn plausible_scenarios_never_panic(doc in document(), set in prop::collection::vec(override_(), 0..4)) {
        match load_str("fuzz.toml", &doc, &set) {
            Ok(s) => prop_assert!(s.duration_ns > 0 && !s.traffic.is_empty()),
            Err(d) => {
                // Every diagnostic can be shown, and its span lies within its source.
                let _ = d.to_string();
                if let Some(sp) = &d.span {
                    prop_assert!(sp.start <= sp.end && sp.end <= d.source.len(), "{d:?}");
                }
            }
        }
        let cli: Vec<String> = set.iter().map(|s| format!("{s},1")).collect();
        let _ = sweep_plan_str("fuzz.toml", &doc, &cli);
    }

    #[test]
    fn section_aware_scenarios_never_panic(doc in aware_document(), set in prop::collection::vec(override_(), 0..2)) {
        let _ = load_str("fuzz.toml", &doc, &set);
    }

    #[test]
    fn valid_base_with_random_overrides(set in prop::collection::vec(override_(), 1..5)) {
        let base = "[qdisc]\nkind = \"pfifo\"\n[[traffic]]\nkind = \"udp\"\n[[traffic]]\nkind = \"ping\"\n";
        if let Err(d) = load_str("fuzz.toml", base, &set) {
            // Errors caused by a --set must name it.
            prop_assert!(d.file.starts_with("--set ") || d.file == "fuzz.toml", "{d}");
        }
    }
}

#[test]
#[ignore]
fn stats() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut r = TestRunner::default();
    let mut counts = std::collections::BTreeMap::new();
    for _ in 0..3000 {
        let doc = aware_document().new_tree(&mut r).unwrap().current();
        let k = match load_str("f.toml", &doc, &[]) {
            Ok(_) => "ok".to_string(),
            Err(d) => format!("{:?}", d.kind),
        };
        *counts.entry(k).or_insert(0) += 1;
    }
    println!("{counts:?}");
}
