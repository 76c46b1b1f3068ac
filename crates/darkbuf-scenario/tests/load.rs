mod common;

use common::{err, err_set, ok_set};
use darkbuf_model::params::ParamValue;
use darkbuf_model::units::Rate;
use darkbuf_scenario::*;
use std::path::PathBuf;

/// A NIC's or radio's line and far end, which only those drivers have.
fn wire(s: Scenario) -> NicWire {
    match s.device.settings {
        DriverSettings::Nic(w) | DriverSettings::Wifi(w, _) => w,
        other => panic!("driver = {} has no wire", other.driver().name()),
    }
}

const UDP: &str = "[[traffic]]\nkind = \"udp\"\n";
/// A NIC device section, for the NIC-only keys.
const NIC: &str = "[device]\ndriver = \"nic\"\n";

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/examples")
}

#[test]
fn minimal_file_resolves_defaults() {
    let s = ok_set(UDP, &[]);
    assert_eq!(s.name, "x");
    assert_eq!(s.duration_ns, 10_000_000_000);
    assert_eq!(s.warmup_ns, 1_000_000_000);
    assert_eq!((s.runs, s.seed), (1, 1));
    assert_eq!(
        (s.machine.profile.as_str(), s.machine.cpus, s.machine.hz),
        ("seed-vm", 2, 250)
    );
    let d = &s.device;
    assert_eq!(d.driver(), Driver::Veth);
    assert_eq!(
        (d.tx_queues, d.xps_txq, d.ring_size, d.txqueuelen),
        (1, None, 256, 1000)
    );
    assert_eq!(d.napi, NapiMode::Threaded);
    assert_eq!(
        (
            d.napi_weight,
            d.netdev_budget,
            d.netdev_budget_usecs,
            d.gro_normal_batch
        ),
        (64, 300, 8000, 8)
    );
    assert!(d.backpressure);
    assert_eq!(d.wake_threshold, 0.5);
    let b = &d.bql;
    assert!(!b.enabled);
    assert_eq!(
        (b.unit, b.completion),
        (BqlUnit::Packet, Completion::PerPacket)
    );
    assert_eq!(
        (b.tx_usecs, b.limit_min, b.limit_max, b.hold_time_ns),
        (100, 0, 1_879_048_192, 1_000_000_000)
    );
    assert_eq!(s.qdisc.kind, "noqueue");
    assert!(s.qdisc.params.is_empty() && s.qdisc.child.is_none());
    assert_eq!(s.consumer.kind, ConsumerKind::Napi);
    assert_eq!((s.consumer.nrules, s.consumer.app_cost_ns), (0, 0));
    assert_eq!(s.traffic.len(), 1);
    match &s.traffic[0] {
        Traffic::Udp(u) => {
            assert_eq!(
                (u.size, u.rate, u.flows, u.sndbuf, u.priority, u.ecn),
                (1400, Rate::Max, 1, 212_992, 0, 0)
            );
        }
        t => panic!("{t:?}"),
    }
    assert!(s.label.is_empty());
}

#[test]
fn tun_defaults_follow_the_driver() {
    let s = ok_set(
        &format!("[device]\ndriver = \"tun\"\n[machine]\nhz = 1000\n{UDP}"),
        &[],
    );
    assert_eq!((s.device.txqueuelen, s.device.ring_size), (500, 500));
    assert_eq!(s.device.netdev_budget_usecs, 2000);
    assert_eq!(s.qdisc.kind, "pfifo_fast");
    assert_eq!(s.consumer.kind, ConsumerKind::Reader);
    let s = ok_set(
        &format!("[device]\ndriver = \"tun\"\ntxqueuelen = 64\n{UDP}"),
        &[],
    );
    assert_eq!(s.device.ring_size, 64);
}

#[test]
fn traffic_values() {
    let s = ok_set(
        "[[traffic]]\nkind = \"udp\"\nrate = \"50kpps\"\nsndbuf = \"1MiB\"\necn = \"ect0\"\npriority = 6\n\
         [[traffic]]\nkind = \"udp\"\nrate = \"100Mbit\"\nsndbuf = 4096\necn = 3\n\
         [[traffic]]\nkind = \"ping\"\n",
        &[],
    );
    let Traffic::Udp(a) = &s.traffic[0] else {
        panic!()
    };
    assert_eq!(
        (a.rate, a.sndbuf, a.ecn, a.priority),
        (Rate::Pps(50_000.0), 2 << 20, 2, 6)
    );
    let Traffic::Udp(b) = &s.traffic[1] else {
        panic!()
    };
    assert_eq!((b.rate, b.sndbuf, b.ecn), (Rate::Bps(100_000_000), 8192, 3));
    let Traffic::Ping(p) = &s.traffic[2] else {
        panic!()
    };
    assert_eq!((p.interval_ns, p.size), (200_000_000, 56));
    assert_eq!(effective_sndbuf(u64::MAX), (i32::MAX as u64 / 2) * 2);
    assert_eq!(effective_sndbuf(0), SOCK_MIN_SNDBUF);
}

#[test]
fn unknown_key_has_position_and_suggestion() {
    let d = err(&format!(
        "duration = \"5s\"\n\n[device.bql]\nenabled = false\n  limit_mn = 3\n{UDP}"
    ));
    assert_eq!(d.kind, DiagnosticKind::UnknownKey);
    assert_eq!((d.line, d.column), (Some(5), Some(3)));
    assert_eq!(d.key, "device.bql.limit_mn");
    assert_eq!(d.file, "scenarios/x.toml");
    let shown = d.to_string();
    assert!(
        shown.starts_with("scenarios/x.toml:5:3: unknown key `limit_mn` in [device.bql]"),
        "{shown}"
    );
    assert!(shown.contains("did you mean `limit_min`?"), "{shown}");
    assert!(shown.contains("valid keys: enabled, unit"), "{shown}");
    assert_eq!(&d.source[d.span.clone().unwrap()], "limit_mn");

    let d = err(&format!("[devce]\ndriver = \"veth\"\n{UDP}"));
    assert_eq!((d.line, d.column), (Some(1), Some(2)));
    assert!(d.to_string().contains("did you mean `device`?"));

    let d = err(&format!("{UDP}flws = 2\n"));
    assert_eq!(
        (d.line, d.column, d.key.as_str()),
        (Some(3), Some(1), "traffic.0.flws")
    );
    assert!(d.to_string().contains("did you mean `flows`?"));
}

#[test]
fn wrong_type_names_the_expected_type() {
    let d = err(&format!("[device]\ntx_queues = \"2\"\n{UDP}"));
    assert_eq!(d.kind, DiagnosticKind::Type);
    assert_eq!((d.line, d.column), (Some(2), Some(13)));
    assert!(
        d.message
            .contains("must be an integer, found a string (\"2\")"),
        "{d}"
    );
    assert!(d.help.as_deref().unwrap().contains("1..=64"), "{d}");

    let d = err(&format!("duration = 10\n{UDP}"));
    assert_eq!(d.kind, DiagnosticKind::Type);
    assert!(d.to_string().contains("duration string"), "{d}");

    let d = err(&format!("[device]\nbackpressure = \"yes\"\n{UDP}"));
    assert!(d.message.contains("must be a boolean"), "{d}");

    let d = err(&format!("machine = 3\n{UDP}"));
    assert!(d.message.contains("must be a table"), "{d}");
}

#[test]
fn bad_units_and_durations() {
    let d = err(&format!("duration = \"10 parsecs\"\n{UDP}"));
    assert_eq!(d.kind, DiagnosticKind::Value);
    assert_eq!((d.line, d.column), (Some(1), Some(12)));
    let shown = d.to_string();
    assert!(shown.contains("parsecs"), "{shown}");
    assert!(shown.contains("units: ns, us, ms, s"), "{shown}");

    for bad in ["0s", "-1s", "0ms"] {
        let d = err(&format!("duration = \"{bad}\"\n{UDP}"));
        assert!(d.message.contains("must be positive"), "{bad}: {d}");
        assert_eq!(d.key, "duration");
    }
    let d = err(&format!("warmup = \"-1s\"\n{UDP}"));
    assert!(d.message.contains("must not be negative"), "{d}");
    assert_eq!(ok_set(&format!("warmup = \"0s\"\n{UDP}"), &[]).warmup_ns, 0);

    let d = err("[[traffic]]\nkind = \"udp\"\nrate = \"fast\"\n");
    assert!(d.to_string().contains("50kpps"), "{d}");
    let d = err("[[traffic]]\nkind = \"ping\"\ninterval = \"0ms\"\n");
    assert!(d.message.contains("must be positive"), "{d}");
}

#[test]
fn cross_field_rules() {
    let d = err(&format!("[device.bql]\nenabled = true\n{UDP}"));
    assert_eq!(d.key, "device.bql.enabled");
    assert_eq!((d.line, d.column), (Some(2), Some(11)));
    assert!(d.message.contains("BQL needs a qdisc"), "{d}");
    assert!(d.message.contains("!qdisc_txq_has_no_queue"), "{d}");
    ok_set(
        &format!("[device.bql]\nenabled = true\n[qdisc]\nkind = \"pfifo_fast\"\n{UDP}"),
        &[],
    );

    let d = err(&format!("[device]\ntx_queues = 2\nxps_txq = 2\n{UDP}"));
    assert_eq!((d.key.as_str(), d.line), ("device.xps_txq", Some(3)));

    let d = err(&format!(
        "[device.bql]\nlimit_min = 10\nlimit_max = 5\n{UDP}"
    ));
    assert_eq!((d.key.as_str(), d.line), ("device.bql.limit_max", Some(3)));

    let d = err(&format!("[consumer]\nkind = \"vhost\"\n{UDP}"));
    assert_eq!((d.key.as_str(), d.line), ("consumer.kind", Some(2)));
    let d = err(&format!(
        "[device]\ndriver = \"tun\"\n[consumer]\nkind = \"napi\"\n{UDP}"
    ));
    assert_eq!(d.key, "consumer.kind");

    let d = err(&format!("[device]\nring_size = 512\n{UDP}"));
    assert!(d.message.contains("VETH_RING_SIZE"), "{d}");

    let d = err(&format!("[machine]\nhz = 200\n{UDP}"));
    assert!(d.help.unwrap().contains("100, 250, 300, 1000"));

    let d = err("duration = \"1s\"\n");
    assert_eq!(d.key, "traffic");
    assert!(d.message.contains("at least one"), "{d}");
}

#[test]
fn qdisc_params_are_validated_by_the_model() {
    // sfq's divisor must be a power of two (sfq_change() returns -EINVAL).
    let d = err(&format!("[qdisc]\nkind = \"sfq\"\ndivisor = 1000\n{UDP}"));
    assert_eq!(d.key, "qdisc.divisor");
    assert_eq!(d.line, Some(3));
    assert!(
        matches!(d.kind, DiagnosticKind::UnknownKey | DiagnosticKind::Value),
        "{d}"
    );

    let d = err(&format!("[qdisc]\nkind = \"sfq\"\nlimt = 100\n{UDP}"));
    assert_eq!(
        (d.kind, d.key.as_str()),
        (DiagnosticKind::UnknownKey, "qdisc.limt")
    );
    assert_eq!((d.line, d.column), (Some(3), Some(1)));
    assert!(d.to_string().contains("did you mean `limit`?"), "{d}");

    let d = err(&format!("[qdisc]\nkind = \"sfqq\"\n{UDP}"));
    assert_eq!(d.kind, DiagnosticKind::Value);
    assert!(d.to_string().contains("did you mean \"sfq\"?"), "{d}");

    let s = ok_set(
        &format!("[qdisc]\nkind = \"pfifo\"\nlimit = 200\n{UDP}"),
        &[],
    );
    assert_eq!(
        s.qdisc.params.iter().collect::<Vec<_>>(),
        vec![(&"limit".to_string(), &ParamValue::Int(200))]
    );

    // A kind that exists in Linux but is not modelled (yet) is reported as such.
    if let Some(k) = darkbuf_model::qdisc::ALL_KINDS.iter().find(|k| {
        !darkbuf_model::qdisc::BUILDABLE_KINDS.contains(k) && !["mq", "noqueue"].contains(k)
    }) {
        let d = err(&format!("[qdisc]\nkind = \"{k}\"\n{UDP}"));
        assert_eq!(
            (d.kind, d.key.as_str()),
            (DiagnosticKind::Unsupported, "qdisc.kind")
        );
        assert!(d.to_string().contains("not modelled"), "{d}");
    }

    let d = err(&format!("[qdisc]\nkind = \"noqueue\"\nlimit = 3\n{UDP}"));
    assert_eq!(d.kind, DiagnosticKind::UnknownKey);
    let s = ok_set(&format!("[device]\ntx_queues = 4\n[qdisc]\nkind = \"mq\"\n[qdisc.child]\nkind = \"pfifo\"\nlimit = 10\n{UDP}"), &[]);
    assert_eq!(s.qdisc.child.as_ref().unwrap().kind, "pfifo");
    let s = ok_set(&format!("[qdisc]\nkind = \"mq\"\n{UDP}"), &[]);
    assert_eq!(s.qdisc.child.as_ref().unwrap().kind, "pfifo_fast");
    let d = err(&format!("[qdisc]\nkind = \"mq\"\nlimit = 3\n{UDP}"));
    assert_eq!(d.key, "qdisc.limit");
    let d = err(&format!(
        "[qdisc]\nkind = \"mq\"\n[qdisc.child]\nkind = \"mq\"\n{UDP}"
    ));
    assert_eq!(d.key, "qdisc.child.kind");
    let d = err(&format!(
        "[qdisc]\nkind = \"pfifo\"\n[qdisc.child]\nkind = \"pfifo\"\n{UDP}"
    ));
    assert_eq!(d.key, "qdisc.child");
}

#[test]
fn toml_syntax_error_has_position() {
    let d = err("duration = \"1s\"\n[device\ndriver = \"veth\"\n");
    assert_eq!(d.kind, DiagnosticKind::Syntax);
    assert_eq!(d.line, Some(2));
    assert!(d.column.is_some());
    assert!(d.to_string().starts_with("scenarios/x.toml:2:"), "{d}");
    let d = err("duration = 10s\n");
    assert_eq!((d.kind, d.line), (DiagnosticKind::Syntax, Some(1)));
}

#[test]
fn overrides() {
    let s = ok_set(
        &format!("[qdisc]\nkind = \"pfifo\"\n{UDP}"),
        &[
            "device.bql.limit_min=8",
            "device.bql.enabled=true",
            "qdisc.limit=200",
            "traffic.0.rate=50kpps",
            "consumer.app_cost=5us",
            "duration=5s",
            "device.wake_threshold=1",
            "traffic.1.kind=ping",
            "name=\"quoted\"",
        ],
    );
    assert_eq!(s.device.bql.limit_min, 8);
    assert!(s.device.bql.enabled);
    assert_eq!(
        s.qdisc.params.iter().next().unwrap().1,
        &ParamValue::Int(200)
    );
    let Traffic::Udp(u) = &s.traffic[0] else {
        panic!()
    };
    assert_eq!(u.rate, Rate::Pps(50_000.0));
    assert_eq!(s.consumer.app_cost_ns, 5_000);
    assert_eq!(s.duration_ns, 5_000_000_000);
    assert_eq!(s.device.wake_threshold, 1.0);
    assert!(matches!(s.traffic[1], Traffic::Ping(_)));
    assert_eq!(s.name, "quoted");

    // Later overrides win.
    assert_eq!(ok_set(UDP, &["runs=2", "runs=3"]).runs, 3);

    let d = err_set(UDP, &["device.bql.limit_mn=8"]);
    assert_eq!(d.kind, DiagnosticKind::UnknownKey);
    assert_eq!(d.file, "--set device.bql.limit_mn=8");
    assert_eq!((d.line, d.column), (None, None));
    assert_eq!(&d.source[d.span.clone().unwrap()], "limit_mn");
    assert!(
        d.to_string()
            .starts_with("--set device.bql.limit_mn=8: unknown key `limit_mn`"),
        "{d}"
    );
    assert!(d.to_string().contains("did you mean `limit_min`?"), "{d}");

    // A bad value from --set names the --set, even though the key is in the file.
    let d = err_set(&format!("duration = \"10s\"\n{UDP}"), &["duration=0s"]);
    assert_eq!(d.file, "--set duration=0s");
    assert_eq!(d.line, None);
    assert!(d.message.contains("must be positive"), "{d}");

    let d = err_set(UDP, &["device.tx_queues=many"]);
    assert_eq!(
        (d.file.as_str(), d.kind),
        ("--set device.tx_queues=many", DiagnosticKind::Type)
    );

    let d = err_set(
        &format!("[qdisc]\nkind = \"sfq\"\n{UDP}"),
        &["qdisc.limt=3"],
    );
    assert_eq!(
        (d.file.as_str(), d.key.as_str()),
        ("--set qdisc.limt=3", "qdisc.limt")
    );

    let d = err_set(UDP, &["traffic.5.rate=1kpps"]);
    assert_eq!(d.file, "--set traffic.5.rate=1kpps");
    let d = err_set(UDP, &["no_equals_sign"]);
    assert_eq!(d.kind, DiagnosticKind::Syntax);
    let d = err_set(UDP, &["a..b=1"]);
    assert_eq!(d.kind, DiagnosticKind::Syntax);
    let d = err_set(&format!("duration = \"1s\"\n{UDP}"), &["duration.x=1"]);
    assert_eq!(d.file, "--set duration.x=1");

    // An error in the file is still reported at its line when overrides are present.
    let d = err_set(&format!("[device]\nnapi = \"busy\"\n{UDP}"), &["runs=2"]);
    assert_eq!((d.file.as_str(), d.line), ("scenarios/x.toml", Some(2)));
}

#[test]
fn sweep_plan_cross_product() {
    let text = format!(
        "{UDP}[qdisc]\nkind = \"pfifo\"\n[sweep]\n\"consumer.nrules\" = [0, 3500, 15000]\nqdisc.limit = [10, 100]\n"
    );
    let plan = sweep_plan_str("x.toml", &text, &[]).unwrap();
    assert_eq!(plan.points.len(), 6);
    assert_eq!(plan.points[0].label, "consumer.nrules=0 qdisc.limit=10");
    assert_eq!(plan.points[1].label, "consumer.nrules=0 qdisc.limit=100");
    assert_eq!(
        plan.points[5].label,
        "consumer.nrules=15000 qdisc.limit=100"
    );
    assert_eq!(
        plan.points[5].set,
        vec!["consumer.nrules=15000", "qdisc.limit=100"]
    );

    // CLI keys replace file keys of the same name and add new ones.
    let plan = sweep_plan_str(
        "x.toml",
        &text,
        &["consumer.nrules=1,2".into(), "duration=1s,2s".into()],
    )
    .unwrap();
    assert_eq!(plan.points.len(), 2 * 2 * 2);
    assert_eq!(
        plan.points[0].label,
        "consumer.nrules=1 qdisc.limit=10 duration=1s"
    );

    // Variants: outer loop, label first, their sets before the sweep's.
    let text = format!(
        "{UDP}[sweep]\n\"consumer.nrules\" = [0, 1]\n\
         [[variant]]\nlabel = \"plain\"\n\
         [[variant]]\nlabel = \"bql\"\n\"device.bql.enabled\" = true\nqdisc.kind = \"pfifo\"\n"
    );
    let plan = sweep_plan_str("x.toml", &text, &[]).unwrap();
    assert_eq!(plan.points.len(), 4);
    let labels: Vec<&str> = plan.points.iter().map(|p| p.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "plain consumer.nrules=0",
            "plain consumer.nrules=1",
            "bql consumer.nrules=0",
            "bql consumer.nrules=1"
        ]
    );
    assert_eq!(
        plan.points[2].set,
        vec![
            "device.bql.enabled=true",
            "qdisc.kind=\"pfifo\"",
            "consumer.nrules=0"
        ]
    );

    // No sweep, no variants: one point, the scenario itself.
    let plan = sweep_plan_str("x.toml", UDP, &[]).unwrap();
    assert_eq!(
        plan.points,
        vec![SweepPointSpec {
            label: String::new(),
            set: vec![]
        }]
    );

    // Bad sweep entries are reported at their line in the file.
    let d = sweep_plan_str(
        "x.toml",
        &format!("{UDP}[sweep]\n\"consumer.nrulez\" = [0, 1]\n"),
        &[],
    )
    .unwrap_err();
    assert_eq!((d.file.as_str(), d.line), ("x.toml", Some(4)));
    assert!(d.to_string().contains("did you mean `nrules`?"), "{d}");
    let d = sweep_plan_str(
        "x.toml",
        &format!("{UDP}[sweep]\nduration = [\"1s\", \"0s\"]\n"),
        &[],
    )
    .unwrap_err();
    assert_eq!((d.line, d.column), (Some(4), Some(19)));
    assert!(d.message.contains("duration=0s"), "{d}");
    let d = sweep_plan_str(
        "x.toml",
        &format!("{UDP}[[variant]]\nlabel = \"v\"\n\"device.bql.enabled\" = true\n"),
        &[],
    )
    .unwrap_err();
    assert_eq!(d.line, Some(5));
    assert!(d.message.contains("BQL needs a qdisc"), "{d}");
    let d = sweep_plan_str("x.toml", &format!("{UDP}[sweep]\nruns = 3\n"), &[]).unwrap_err();
    assert_eq!(d.kind, DiagnosticKind::Type);
    let d = sweep_plan_str("x.toml", &format!("{UDP}[[variant]]\nruns = 3\n"), &[]).unwrap_err();
    assert!(d.message.contains("label"), "{d}");
    // ... and bad CLI values at their --set.
    let d = sweep_plan_str("x.toml", UDP, &["consumer.nrules=1,x".into()]).unwrap_err();
    assert_eq!(d.file, "--set consumer.nrules=1,x");
    let d = sweep_plan_str("x.toml", UDP, &["consumer.nrules=1,,2".into()]).unwrap_err();
    assert_eq!(d.kind, DiagnosticKind::Syntax);
}

#[test]
fn all_keys_example_loads_and_sweeps() {
    let path = examples().join("all-keys.toml");
    let s = load(&path, &[]).unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(s.name, "all-keys");
    assert_eq!(s.device.tx_queues, 2);
    assert_eq!(s.device.xps_txq, Some(1));
    assert!(s.device.bql.enabled);
    assert_eq!(s.qdisc.kind, "sfq");
    assert_eq!(s.traffic.len(), 2);
    let Traffic::Udp(u) = &s.traffic[0] else {
        panic!()
    };
    assert_eq!(u.sndbuf, 2 << 20);

    let plan = sweep_plan(&path, &[]).unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(plan.points.len(), 2 * 2 * 2);
    assert_eq!(
        plan.points[0].label,
        "bql consumer.nrules=0 device.bql.limit_min=0"
    );
    let p = &plan.points[7];
    assert_eq!(
        p.label,
        "no-bql consumer.nrules=3500 device.bql.limit_min=8"
    );
    let s = load_point(&path, &["runs=2".into()], p).unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(s.label, p.label);
    assert!(!s.device.bql.enabled);
    assert_eq!(
        (s.consumer.nrules, s.device.bql.limit_min, s.runs),
        (3500, 8, 2)
    );

    // Serializes (the results JSON's `scenario`).
    let _ = format!("{s:?}");
}

#[test]
fn missing_file_is_a_diagnostic() {
    let d = load(&examples().join("does-not-exist.toml"), &[]).unwrap_err();
    assert_eq!(d.kind, DiagnosticKind::Io);
}

#[test]
fn sweep_points_are_checked_with_the_single_value_sets() {
    // `--set qdisc.kind=fq_codel --set qdisc.target=5ms,20ms` on a pfifo_fast file: the
    // target axis is only valid for the kind the fixed `--set` chose.
    let text = format!("{UDP}[qdisc]\nkind = \"pfifo_fast\"\n");
    let sweeps = ["qdisc.target=5ms,20ms".to_string()];
    let d = sweep_plan_str("x.toml", &text, &sweeps).unwrap_err();
    assert!(d.message.contains("target"), "{d:?}");
    let fixed = ["qdisc.kind=fq_codel".to_string()];
    let plan = sweep_plan_str_fixed("x.toml", &text, &fixed, &sweeps).unwrap();
    assert_eq!(plan.points.len(), 2);

    // And a single-value `--set` wins over a variant's key when the point is loaded.
    let dir = std::env::temp_dir().join(format!("darkbuf-sweep-fixed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("v.toml");
    let text = format!("{UDP}[[variant]]\nlabel = \"long\"\nduration = \"9s\"\n");
    std::fs::write(&path, &text).unwrap();
    let fixed = ["duration=2s".to_string()];
    let plan = sweep_plan_fixed(&path, &fixed, &[]).unwrap();
    let scn = load_point(&path, &fixed, &plan.points[0]).unwrap();
    assert_eq!(scn.duration_ns, 2_000_000_000);
    assert_eq!(scn.label, "long");
    // ... with a warning: the label `long` no longer describes what ran.
    assert_eq!(plan.warnings.len(), 1, "{:?}", plan.warnings);
    assert!(plan.warnings[0].contains("--set duration=2s replaces `duration` where the file's variant `long` sets it: its label may name"), "{:?}", plan.warnings);
    // A tc tree (`--tc FILE` is `--set qdisc.tc_file=FILE`) replaces the whole [qdisc],
    // so it overrides a variant's qdisc.kind too (found by a newcomer's try: silently).
    let text = format!("{UDP}[[variant]]\nlabel = \"cake 95Mbit\"\n\"qdisc.kind\" = \"cake\"\n[[variant]]\nlabel = \"plain\"\n");
    std::fs::write(&path, &text).unwrap();
    std::fs::write(dir.join("x.tc"), "tc qdisc add dev eth0 root fq_codel\n").unwrap();
    let tc_set = format!("qdisc.tc_file={:?}", dir.join("x.tc").display().to_string());
    let plan = sweep_plan_fixed(&path, &[tc_set], &[]).unwrap();
    assert_eq!(plan.warnings.len(), 1, "{:?}", plan.warnings);
    assert!(plan.warnings[0].contains("replaces the whole [qdisc] where the file's variant `cake 95Mbit` sets qdisc keys"), "{:?}", plan.warnings);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A single-value `--set` of a key the file's `[sweep]` sweeps takes it out of the
/// sweep: the points run that value and their labels no longer name the axis (they
/// named the file's values while every point ran the command line's).
#[test]
fn a_single_value_set_replaces_a_swept_key() {
    let text = format!("{UDP}[sweep]\n\"consumer.nrules\" = [0, 3500]\n\"traffic.0.size\" = [100, 200]\n");
    let fixed = ["consumer.nrules=7".to_string()];
    let plan = sweep_plan_str_fixed("x.toml", &text, &fixed, &[]).unwrap();
    let labels: Vec<&str> = plan.points.iter().map(|p| p.label.as_str()).collect();
    assert_eq!(labels, ["traffic.0.size=100", "traffic.0.size=200"]);
    assert!(plan.points.iter().all(|p| p.set.iter().all(|s| !s.starts_with("consumer.nrules"))));
    assert!(plan.warnings.is_empty());
    // Set and swept on the command line at once: one of the two must go.
    let d = sweep_plan_str_fixed("x.toml", &text, &fixed, &["consumer.nrules=1,2".to_string()]).unwrap_err();
    assert_eq!(d.file, "--set consumer.nrules=7");
    assert!(d.message.contains("both set (--set consumer.nrules=7) and swept (--set consumer.nrules=1,2)"), "{}", d.message);
}

/// `--set sweep.KEY=[...]` or `--set variant.N.KEY=V` would be applied to every point
/// of a plan read from the file, and sweep nothing: refused, with the way that works.
#[test]
fn a_single_value_set_of_the_sweeps_plan_is_refused() {
    for raw in ["sweep.traffic.0.rate=[\"1Mbit\",\"2Mbit\"]", "variant.0.label=x", "sweep={}"] {
        let fixed = [raw.to_string()];
        let d = sweep_plan_str_fixed("x.toml", UDP, &fixed, &[]).unwrap_err();
        assert_eq!(d.file, format!("--set {raw}"));
        assert!(d.message.contains("part of the sweep's plan"), "{}", d.message);
        assert!(d.help.unwrap().contains("--set KEY=V1,V2"));
    }
    // The command line's own sweep syntax still plans.
    let plan = sweep_plan_str_fixed("x.toml", UDP, &[], &["traffic.0.rate=1Mbit,2Mbit".to_string()]).unwrap();
    assert_eq!(plan.points.len(), 2);
}

/// `darkbuf run` runs without the plan: a `--set` of it is refused there too, saying why;
/// the scenario's own keys pass.
#[test]
fn run_refuses_a_set_of_the_plan() {
    for raw in ["variant.0.label=x", "sweep.traffic.0.rate=[\"1Mbit\"]"] {
        let d = darkbuf_scenario::sweep::refuse_run_plan_sets(&[raw.to_string()]).unwrap_err();
        assert_eq!(d.file, format!("--set {raw}"));
        assert!(d.message.contains("`darkbuf run` runs the scenario without it"), "{}", d.message);
    }
    assert!(darkbuf_scenario::sweep::refuse_run_plan_sets(&["traffic.0.rate=1Mbit".to_string()]).is_ok());
}

/// A `[sweep]` key is the key its points apply, segments trimmed: `"traffic.0.rate "`
/// beside `"traffic.0.rate"` sweeps one key twice, an error at the second.
#[test]
fn sweep_keys_that_differ_only_in_spaces_are_one_key() {
    let text = format!("{UDP}[sweep]\n\"traffic.0.rate\" = [\"1Mbit\", \"2Mbit\"]\n\"traffic.0.rate \" = [\"3Mbit\"]\n");
    let d = sweep_plan_str_fixed("x.toml", &text, &[], &[]).unwrap_err();
    assert!(d.message.contains("`traffic.0.rate` is swept twice"), "{}", d.message);
    assert_eq!(d.line, Some(text.lines().count()));
    // Alone, the spaced key is the key itself, in the points' labels too.
    let text = format!("{UDP}[sweep]\n\" traffic.0.rate \" = [\"3Mbit\"]\n");
    let plan = sweep_plan_str_fixed("x.toml", &text, &[], &[]).unwrap();
    assert_eq!(plan.points[0].label, "traffic.0.rate=3Mbit");
}

/// Placement keys: CPUs must exist, one XPS CPU per queue, and XPS given once.
#[test]
fn placement_keys_are_checked() {
    let s = ok_set(&format!("[machine]\ncpus = 4\n[device]\ntx_queues = 2\nxps = [2, 3]\nirq_cpus = [3]\n{UDP}cpu = 2\n"), &[]);
    assert_eq!(s.device.xps, XpsSpec::Cpus(vec![2, 3]));
    assert_eq!(s.device.irq_cpus, vec![3]);
    assert!(matches!(&s.traffic[0], Traffic::Udp(u) if u.cpu == 2));
    // Defaults: no XPS map, queue i's consumer on CPU 1 + i % (cpus - 1), senders on CPU 0.
    let s = ok_set(&format!("[machine]\ncpus = 3\n{UDP}"), &[]);
    assert_eq!((s.device.xps.clone(), s.device.irq_cpus.clone()), (XpsSpec::None, vec![1, 2]));

    let d = err(&format!("{UDP}cpu = 2\n"));
    assert_eq!((d.key.as_str(), d.line, d.column), ("traffic.0.cpu", Some(3), Some(7)));
    assert!(d.help.unwrap().contains("0..=1"));
    let d = err(&format!("[device]\nirq_cpus = [1, 5]\n{UDP}"));
    assert_eq!((d.key.as_str(), d.line, d.column), ("device.irq_cpus.1", Some(2), Some(16)));
    assert!(d.message.contains("not a CPU of the machine"), "{d}");
    let d = err(&format!("[device]\nirq_cpus = []\n{UDP}"));
    assert_eq!(d.key, "device.irq_cpus");
    let d = err(&format!("[device]\ntx_queues = 2\nxps = [1]\n{UDP}"));
    assert!(d.message.contains("1 CPUs for 2 TX queues"), "{d}");
    let d = err(&format!("[device]\nxps = \"cpus\"\n{UDP}"));
    assert!(d.help.unwrap().contains("\"cpu\""));
    let d = err(&format!("[device]\ntx_queues = 2\nxps_txq = 1\nxps = \"cpu\"\n{UDP}"));
    assert!(d.message.contains("both set the XPS map"), "{d}");
}

/// A NIC's settings: defaults by model, and every bad value is an error at its position
/// that says what is valid.
#[test]
fn nic_keys_have_bounds() {
    let s = ok_set(&format!("{NIC}rate = \"1Gbit\"\n{UDP}"), &[]);
    let n = s.device.nic().unwrap();
    assert_eq!((n.model, n.rate_bps, n.mtu, n.coalesce.tx_usecs, n.coalesce.tx_frames), (NicModel::Igb, 1_000_000_000, 1500, 250, 0));
    assert_eq!((s.device.ring_size, s.device.txqueuelen, s.qdisc.kind.as_str()), (256, 1000, "pfifo_fast"));
    assert!(s.device.bql.enabled && s.device.bql.unit == BqlUnit::Byte);
    assert_eq!(s.device.napi, NapiMode::Softirq);
    assert_eq!(s.device.wire().unwrap().peer.qdisc.kind, "pfifo_fast");
    let s = ok_set(&format!("{NIC}rate = \"100Gbit\"\nmtu = 9000\n{UDP}"), &[]);
    let n = s.device.nic().unwrap();
    assert_eq!((n.model, n.coalesce.tx_usecs, n.coalesce.tx_frames, s.device.ring_size), (NicModel::Mlx5, 16, 32, 1024));
    assert_eq!(s.device.mtu_l2(), 9014);

    let d = err(&format!("{NIC}rate = \"0bit\"\n{UDP}"));
    assert_eq!((d.key.as_str(), d.line), ("device.rate", Some(3)));
    let d = err(&format!("{NIC}rate = \"1Tbit\"\n{UDP}"));
    assert!(d.message.contains("out of range") && d.help.unwrap().contains("10Mbit to 400Gbit"), "{}", d.message);
    let d = err(&format!("{NIC}rate = \"50kpps\"\n{UDP}"));
    assert!(d.message.contains("not a bit rate"), "{d}");
    let d = err(&format!("{NIC}[device.coalesce]\ntx_usecs = 5000\n{UDP}"));
    assert_eq!((d.key.as_str(), d.line), ("device.coalesce.tx_usecs", Some(4)));
    assert!(d.help.unwrap().contains("0..=4095"));
    let d = err(&format!("{NIC}[device.coalesce]\ntx_frames = -1\n{UDP}"));
    assert_eq!(d.key, "device.coalesce.tx_frames");
    let d = err(&format!("{NIC}ring_size = 16\n{UDP}"));
    assert_eq!((d.key.as_str(), d.line), ("device.ring_size", Some(3)));
    assert!(d.message.contains("MAX_SKB_FRAGS + 1 = 18"), "{d}");
    let d = err(&format!("{NIC}[device.bql]\nunit = \"packet\"\n{UDP}"));
    assert_eq!((d.key.as_str(), d.line), ("device.bql.unit", Some(4)));
    assert!(d.message.contains("bytes"), "{d}");
    let d = err(&format!("{NIC}[device.bql]\ncompletion = \"per-poll\"\n{UDP}"));
    assert!(d.help.unwrap().contains("[device.coalesce]"));
    let d = err(&format!("{NIC}backpressure = true\n{UDP}"));
    assert_eq!(d.key, "device.backpressure");
    let d = err(&format!("{NIC}irq_cpus = [2]\n{UDP}"));
    assert_eq!(d.key, "device.irq_cpus.0");
    let d = err(&format!("{NIC}model = \"e1000\"\n{UDP}"));
    assert!(d.help.unwrap().contains("\"igb\", \"mlx5\""));
    let d = err(&format!("{NIC}[device.coalesce]\nadaptive_tx = true\ntx_usecs = 50\n{UDP}"));
    assert_eq!((d.key.as_str(), d.line), ("device.coalesce.tx_usecs", Some(5)));
    assert!(d.message.contains("adaptive moderation sets the period"), "{d}");
    // RX DIM: mlx5's, alone on the RX side.
    let scn = ok_set(&format!("{NIC}model = \"mlx5\"\n[device.coalesce]\nadaptive_rx = true\n{UDP}"), &[]);
    assert!(scn.device.nic().expect("a NIC").coalesce.adaptive_rx);
    let d = err(&format!("{NIC}model = \"mlx5\"\n[device.coalesce]\nadaptive_rx = true\nrx_usecs = 8\n{UDP}"));
    assert_eq!((d.key.as_str(), d.line), ("device.coalesce.rx_usecs", Some(6)));
    assert!(d.message.contains("RX DIM sets the period"), "{d}");
    let d = err(&format!("{NIC}model = \"igb\"\n[device.coalesce]\nadaptive_rx = true\n{UDP}"));
    assert_eq!(d.key, "device.coalesce.adaptive_rx");
    assert!(d.help.unwrap().contains("adaptive_tx = true"));
    let d = err(&format!("{NIC}[peer]\ncpus = 2\nirq_cpus = [3]\n{UDP}"));
    assert_eq!((d.key.as_str(), d.line), ("peer.irq_cpus.0", Some(5)));
    // NIC keys on another driver, and [path]/[peer] without a NIC.
    let d = err(&format!("[device]\nrate = \"1Gbit\"\n{UDP}"));
    assert!(d.message.contains("NIC setting"), "{d}");
    let d = err(&format!("[path]\ndelay = \"5ms\"\n{UDP}"));
    assert_eq!(d.key, "path");
    assert!(d.help.unwrap().contains("driver = \"nic\""));
}

/// A TCP flow's socket buffers take sizes as the UDP flood's sndbuf does ("1GiB", or
/// bytes), from the file and from --set; out of range names the range.
#[test]
fn tcp_buffers_take_sizes() {
    let text = "[[traffic]]\nkind = \"tcp\"\nsndbuf = \"1GiB\"\nrcvbuf = 65536\n";
    let scn = ok_set(text, &[]);
    let Traffic::Tcp(f) = &scn.traffic[0] else { panic!("a tcp flow") };
    assert_eq!((f.sndbuf, f.rcvbuf), (1 << 30, 65536));
    let scn = ok_set(text, &["traffic.0.rcvbuf=64MiB"]);
    let Traffic::Tcp(f) = &scn.traffic[0] else { panic!("a tcp flow") };
    assert_eq!(f.rcvbuf, 64 << 20);
    let d = err_set(text, &["traffic.0.sndbuf=2GiB"]);
    assert!(d.to_string().contains("4096..=1073741824"), "{d}");
}

/// TSQ by kernel: before v6.16 by default (paced flows exempt, 1 MiB), v6.16's
/// `tsq = "always"` with its 4 MiB default; `limit_output_bytes` overrides either.
#[test]
fn tcp_tsq_names_its_kernel() {
    let text = "[[traffic]]\nkind = \"tcp\"\n";
    let tcp = |set: &[&str]| match &ok_set(text, set).traffic[0] {
        Traffic::Tcp(f) => (f.tsq, f.limit_output_bytes),
        _ => panic!("a tcp flow"),
    };
    assert_eq!(tcp(&[]), (Tsq::PacedExempt, 1 << 20));
    assert_eq!(tcp(&["traffic.0.tsq=always"]), (Tsq::Always, 4 << 20));
    assert_eq!(tcp(&["traffic.0.tsq=always", "traffic.0.limit_output_bytes=256KiB"]), (Tsq::Always, 256 << 10));
    assert_eq!(tcp(&["traffic.0.limit_output_bytes=0"]), (Tsq::PacedExempt, 0));
    let d = err(&format!("{text}tsq = \"6.16\"\n"));
    assert_eq!((d.key.as_str(), d.line), ("traffic.0.tsq", Some(3)));
    assert!(d.help.unwrap().contains("\"paced-exempt\", \"always\""));
    let d = err(&format!("{text}limit_output_bytes = \"4GiB\"\n"));
    assert!(d.to_string().contains("0..=2147483647"), "{d}");
}

/// The receiving application: `instant` by default (the model before it), `poll` or
/// `blocking`; `receiver_cpu` places it on the receiving host (the far host of a NIC
/// for an upload) and needs a modelled receiver.
#[test]
fn tcp_receiver_and_its_cpu() {
    let text = "[[traffic]]\nkind = \"tcp\"\n";
    let tcp = |text: &str, set: &[&str]| match &ok_set(text, set).traffic[0] {
        Traffic::Tcp(f) => (f.receiver, f.receiver_cpu),
        _ => panic!("a tcp flow"),
    };
    assert_eq!(tcp(text, &[]), (TcpReceiver::Instant, None));
    assert_eq!(tcp(text, &["traffic.0.receiver=poll"]), (TcpReceiver::Poll, None));
    assert_eq!(tcp(text, &["traffic.0.receiver=blocking", "traffic.0.receiver_cpu=1"]), (TcpReceiver::Blocking, Some(1)));
    let d = err(&format!("{text}receiver = \"threads\"\n"));
    assert_eq!((d.key.as_str(), d.line), ("traffic.0.receiver", Some(3)));
    assert!(d.help.unwrap().contains("\"instant\", \"poll\", \"blocking\""));
    // An idealised reader has no CPU to place.
    let d = err(&format!("{text}receiver_cpu = 0\n"));
    assert_eq!((d.key.as_str(), d.line), ("traffic.0.receiver_cpu", Some(3)));
    assert!(d.help.unwrap().contains("receiver = \"poll\""));
    // 2 CPUs on this host; a NIC's far host ([peer] cpus = 4) receives an upload.
    let d = err(&format!("{text}receiver = \"poll\"\nreceiver_cpu = 2\n"));
    assert_eq!(d.key, "traffic.0.receiver_cpu");
    let nic = format!("{NIC}[peer]\ncpus = 4\n{text}receiver = \"poll\"\nreceiver_cpu = 3\n");
    assert_eq!(tcp(&nic, &[]), (TcpReceiver::Poll, Some(3)));
}

/// The receiver's autotuning by kernel: v6.19's by default, v6.15's by name; only for
/// a modelled receiver, which has a buffer to tune.
#[test]
fn tcp_drs_names_its_kernel() {
    let text = "[[traffic]]\nkind = \"tcp\"\nreceiver = \"blocking\"\n";
    let drs = |set: &[&str]| match &ok_set(text, set).traffic[0] {
        Traffic::Tcp(f) => f.drs,
        _ => panic!("a tcp flow"),
    };
    assert_eq!(drs(&[]), Drs::V6_19);
    assert_eq!(drs(&["traffic.0.drs=v6.15"]), Drs::V6_15);
    let d = err(&format!("{text}drs = \"6.13\"\n"));
    assert_eq!((d.key.as_str(), d.line), ("traffic.0.drs", Some(4)));
    assert!(d.help.unwrap().contains("\"v6.15\", \"v6.19\""));
    let d = err("[[traffic]]\nkind = \"tcp\"\ndrs = \"v6.15\"\n");
    assert_eq!((d.key.as_str(), d.line), ("traffic.0.drs", Some(3)));
    assert!(d.help.unwrap().contains("receiver = \"poll\""));
}

/// CUBIC's HyStart round start by kernel: v6.14's by default, the two before it by
/// name; only for cubic, the kernel's default cc here.
#[test]
fn tcp_hystart_round_start_names_its_kernel() {
    let text = "[[traffic]]\nkind = \"tcp\"\n";
    let round = |set: &[&str]| match &ok_set(text, set).traffic[0] {
        Traffic::Tcp(f) => f.hystart_round_start,
        _ => panic!("a tcp flow"),
    };
    assert_eq!(round(&[]), HystartRoundStart::V6_14);
    assert_eq!(round(&["traffic.0.hystart_round_start=v5.16"]), HystartRoundStart::V5_16);
    assert_eq!(round(&["traffic.0.hystart_round_start=v5.15"]), HystartRoundStart::V5_15);
    let d = err(&format!("{text}hystart_round_start = \"6.1\"\n"));
    assert_eq!((d.key.as_str(), d.line), ("traffic.0.hystart_round_start", Some(3)));
    assert!(d.help.unwrap().contains("\"v5.15\", \"v5.16\", \"v6.14\""));
    let d = err(&format!("{text}cc = \"bbr\"\nhystart_round_start = \"v5.16\"\n"));
    assert_eq!((d.key.as_str(), d.line), ("traffic.0.hystart_round_start", Some(4)));
    assert!(d.message.contains("cc = \"bbr\"") && d.help.unwrap().contains("cc = \"cubic\""));
}

/// `[lan]`: a client behind this host, which routes. Its keys and bounds; only with a
/// NIC; `[[traffic]] cpu` counts the client's CPUs.
#[test]
fn lan_puts_a_client_behind_a_nic() {
    let scn = ok_set(&format!("{NIC}[lan]\nrate = \"10Gbit\"\ndelay = \"100us\"\ncpus = 4\n{UDP}cpu = 3\n"), &[]);
    let lan = scn.lan.expect("[lan]");
    assert_eq!((lan.rate_bps, lan.delay_ns, lan.cpus, lan.qdisc.kind.as_str()), (10_000_000_000, 100_000, 4, "pfifo_fast"));
    let scn = ok_set(&format!("{NIC}[lan]\n{UDP}"), &["lan.qdisc.kind=fq_codel"]);
    let lan = scn.lan.expect("[lan]");
    assert_eq!((lan.rate_bps, lan.delay_ns, lan.cpus, lan.qdisc.kind.as_str()), (1_000_000_000, 0, 2, "fq_codel"));
    // --set adds the section to any NIC scenario.
    let scn = ok_set(&format!("{NIC}{UDP}"), &["lan.rate=1Gbit"]);
    assert_eq!(scn.lan.expect("[lan] from --set").rate_bps, 1_000_000_000);
    // The client has 2 CPUs unless told: cpu = 2 is not one of them.
    let d = err(&format!("{NIC}[lan]\n{UDP}cpu = 2\n"));
    assert_eq!(d.key, "traffic.0.cpu");
    let d = err(&format!("{NIC}[lan]\nrate = \"5Mbit\"\n{UDP}"));
    assert_eq!((d.key.as_str(), d.line), ("lan.rate", Some(4)));
    assert!(d.help.unwrap().contains("10Mbit to 400Gbit"));
    let d = err(&format!("{NIC}[lan]\nspeed = \"1Gbit\"\n{UDP}"));
    assert_eq!(d.key, "lan.speed");
    let d = err(&format!("[device]\ndriver = \"tun\"\n[lan]\n{UDP}"));
    assert_eq!((d.key.as_str(), d.line), ("lan", Some(3)));
    assert!(d.message.contains("routes") && d.message.contains("tun"), "{d}");
    assert!(d.help.unwrap().contains("driver = \"nic\" or \"veth\""));
}

/// `[lan]` on veth: a client namespace behind a second veth pair. It shares the
/// machine's CPUs (`[[traffic]] cpu` numbers them) and takes only `[lan.qdisc]`: a
/// veth pair has no rate or delay, and the client no CPUs of its own.
#[test]
fn lan_on_veth_is_a_client_namespace() {
    let scn = ok_set(&format!("[machine]\ncpus = 4\n[lan]\n[lan.qdisc]\nkind = \"pfifo\"\nlimit = 7\n{UDP}cpu = 3\n"), &[]);
    let lan = scn.lan.as_ref().expect("[lan]");
    assert_eq!((scn.device.driver(), lan.cpus, lan.rate_bps, lan.delay_ns, lan.qdisc.kind.as_str()), (Driver::Veth, 4, 0, 0, "pfifo"));
    let scn = ok_set(&format!("[lan]\n{UDP}"), &[]);
    assert_eq!(scn.lan.expect("[lan]").qdisc.kind, "pfifo_fast");
    for (key, line, what) in [("rate = \"1Gbit\"", 2, "no line rate"), ("delay = \"1ms\"", 2, "no wire delay"), ("cpus = 2", 2, "shares its CPUs")] {
        let d = err(&format!("[lan]\n{key}\n{UDP}"));
        assert_eq!(d.line, Some(line), "{d}");
        assert!(d.key.starts_with("lan.") && d.message.contains(what), "{d}");
    }
    let d = err(&format!("[lan]\n{UDP}cpu = 2\n"));
    assert_eq!(d.key, "traffic.0.cpu");
}

/// `[[traffic]] path_delay`: every kind takes it on a NIC; elsewhere there is no wire.
#[test]
fn path_delay_is_a_nics_per_entry_wire_delay() {
    let text = format!(
        "{NIC}[[traffic]]\nkind = \"tcp\"\npath_delay = \"20ms\"\n[[traffic]]\nkind = \"udp\"\nrate = \"1Mbit\"\npath_delay = \"1ms\"\n\
         [[traffic]]\nkind = \"ping\"\npath_delay = \"2ms\"\n[[traffic]]\nkind = \"irtt\"\n"
    );
    let s = ok_set(&text, &[]);
    let d: Vec<u64> = s.traffic.iter().map(Traffic::path_delay_ns).collect();
    assert_eq!(d, [20_000_000, 1_000_000, 2_000_000, 0]);
    let e = err("[[traffic]]\nkind = \"ping\"\npath_delay = \"5ms\"\n");
    assert_eq!((e.line, e.column, e.key.as_str()), (Some(3), Some(14), "traffic.0.path_delay"));
    assert!(e.message.contains("device.driver = \"veth\" has none"), "{}", e.message);
    assert!(e.help.unwrap().contains("device.driver = \"nic\""));
    // Zero is allowed anywhere (it changes nothing); past 10 s, and not a duration, are errors.
    ok_set("[[traffic]]\nkind = \"ping\"\npath_delay = \"0s\"\n", &[]);
    let e = err(&format!("{NIC}[[traffic]]\nkind = \"irtt\"\npath_delay = \"11s\"\n"));
    assert_eq!(e.key, "traffic.0.path_delay");
    let e = err(&format!("{NIC}[[traffic]]\nkind = \"tcp\"\npath_delay = 5\n"));
    assert_eq!(e.key, "traffic.0.path_delay");
}

/// `path.loss` as tc takes netem's loss after `loss`: a percentage (a number, or a
/// string with `%`), `random P`, `state ...` and `gemodel ...` with tc's defaults, each
/// probability held as netem holds it (`rint(fraction * UINT32_MAX)`); out of range, not
/// a number, too many values or a correlation refused at the key. With TSO on the
/// simulator cuts TSO skbs into frames for the path, so that is accepted.
#[test]
fn path_loss_is_netems_loss() {
    let nic = format!("{NIC}tso = false\n[path]\n");
    let loss = |v: &str| wire(ok_set(&format!("{nic}loss = {v}\n{UDP}"), &[])).path.loss;
    let random = |l: u32| Some(PathLoss::Random { loss: l, corr: 0 });
    assert_eq!(loss("\"1%\""), random(42_949_673));
    assert_eq!(loss("0.5"), random(21_474_836));
    assert_eq!(loss("\"random 100%\""), random(u32::MAX));
    assert_eq!(loss("0"), None);
    assert_eq!(loss("\"1\""), random(42_949_673));
    assert_eq!(loss("\"random 1% 25%\""), Some(PathLoss::Random { loss: 42_949_673, corr: set_percent(0.25) }));
    // tc's defaults: state p31 = 1 - p13, p32 = 0, p23 = 1, p14 = 0.
    let pct = |f: f64| set_percent(f / 100.0);
    assert_eq!(
        loss("\"state 10%\""),
        Some(PathLoss::State { p13: pct(10.0), p31: pct(90.0), p32: 0, p23: u32::MAX, p14: 0 })
    );
    assert_eq!(
        loss("\"state 1% 30% 2% 40% 0.5%\""),
        Some(PathLoss::State { p13: pct(1.0), p31: pct(30.0), p32: pct(2.0), p23: pct(40.0), p14: pct(0.5) })
    );
    // gemodel: r = 1 - p, h = 0, 1-k = 0 by default; tc takes 1-h and sends h.
    assert_eq!(loss("\"gemodel 1%\""), Some(PathLoss::Gemodel { p: pct(1.0), r: pct(99.0), h: 0, k1: 0 }));
    assert_eq!(
        loss("\"gemodel 1% 10% 70% 0.1%\""),
        Some(PathLoss::Gemodel { p: pct(1.0), r: pct(10.0), h: u32::MAX - pct(70.0), k1: pct(0.1) })
    );
    for (bad, why) in [
        ("\"101%\"", "out of range"),
        ("-1", "out of range"),
        ("\"lots\"", "not a percentage"),
        ("\"random 1% 25% 3%\"", "at most 2"),
        ("\"gemodel 1% 2% 3% 4% 5%\"", "at most 4"),
        ("\"state\"", "first probability"),
        ("\"\"", "empty"),
    ] {
        let d = err(&format!("{nic}loss = {bad}\n{UDP}"));
        assert_eq!((d.key.as_str(), d.line), ("path.loss", Some(5)), "{bad}: {d}");
        assert!(d.message.contains(why), "{bad}: {d}");
        assert!(d.help.as_deref().unwrap_or("").contains("gemodel p [r [1-h [1-k]]]"), "{bad}: {d}");
    }
    let d = err(&format!("{nic}loss = true\n{UDP}"));
    assert_eq!(d.key, "path.loss");
    let tso = wire(ok_set(&format!("{NIC}[path]\nloss = \"1%\"\n{UDP}"), &[]));
    assert_eq!((tso.nic.tso, tso.path.loss), (true, random(42_949_673)));
    // A lossless path serializes as it did before the key existed.
    let json = serde_json::to_string(&wire(ok_set(&format!("{nic}delay = \"5ms\"\n{UDP}"), &[])).path).unwrap();
    assert_eq!(json, r#"{"delay_ns":5000000}"#);
    let json = serde_json::to_string(&wire(ok_set(&format!("{nic}loss = \"gemodel 1%\"\n{UDP}"), &[])).path).unwrap();
    assert!(json.contains(r#""loss":{"model":"gemodel","p":42949673"#), "{json}");
}

/// `path.rate` and `path.limit`: netem's rate (a tc bit rate, held in bits/s) with its
/// default limit of 1000 frames, a limit alone for the delay line; with TSO on as well
/// (the simulator cuts TSO skbs into frames for the path).
#[test]
fn path_rate_is_a_netem_bottleneck() {
    let nic = format!("{NIC}tso = false\n[path]\n");
    let path = |extra: &str| wire(ok_set(&format!("{nic}{extra}{UDP}"), &[])).path;
    let p = path("rate = \"20Mbit\"\n");
    assert_eq!((p.rate_bps, p.limit), (Some(20_000_000), Some(1000)));
    let p = path("rate = \"512kbit\"\nlimit = 50\n");
    assert_eq!((p.rate_bps, p.limit), (Some(512_000), Some(50)));
    let p = path("limit = 10\n");
    assert_eq!((p.rate_bps, p.limit), (None, Some(10)));
    assert_eq!((path("").rate_bps, path("").limit), (None, None));
    for (bad, key) in [("rate = \"fast\"\n", "path.rate"), ("rate = \"1bit\"\n", "path.rate"), ("rate = 20\n", "path.rate"), ("limit = 0\n", "path.limit")] {
        let d = err(&format!("{nic}{bad}{UDP}"));
        assert_eq!((d.key.as_str(), d.line), (key, Some(5)), "{bad}: {d}");
    }
    let p = wire(ok_set(&format!("{NIC}[path]\nrate = \"20Mbit\"\n{UDP}"), &[])).path;
    assert_eq!((p.rate_bps, p.limit), (Some(20_000_000), Some(1000)));
}

/// netem's delay keys as tc takes them: `jitter` ("J [C]"), `distribution` (tc's
/// generated tables), `reorder` ("P [C]") with `gap` (1 when not given), `ecn`; and
/// tc's own refusals at the key: a distribution without a jitter, a reorder without a
/// delay, a gap without a reorder, ecn without a loss.
#[test]
fn path_netem_delay_keys() {
    use darkbuf_model::netem::Distribution;
    let nic = format!("{NIC}[path]\ndelay = \"10ms\"\n");
    let path = |extra: &str| wire(ok_set(&format!("{nic}{extra}{UDP}"), &[])).path;
    let p = path("jitter = \"1ms\"\n");
    assert_eq!((p.jitter_ns, p.delay_corr, p.distribution, p.reorder), (1_000_000, 0, None, None));
    let p = path("jitter = \"2ms 25%\"\ndistribution = \"paretonormal\"\n");
    assert_eq!((p.jitter_ns, p.delay_corr, p.distribution), (2_000_000, set_percent(0.25), Some(Distribution::Paretonormal)));
    assert_eq!(path("jitter = \"1ms\"\ndistribution = \"uniform\"\n").distribution, None);
    let p = path("reorder = \"25% 50%\"\n");
    assert_eq!(p.reorder, Some(PathReorder { probability: set_percent(0.25), correlation: set_percent(0.5), gap: 1 }));
    assert_eq!(path("reorder = \"10%\"\ngap = 5\n").reorder.unwrap().gap, 5);
    assert_eq!(path("reorder = \"0%\"\n").reorder, None);
    assert!(path("loss = \"1%\"\necn = true\n").ecn);
    // Without the new keys the path serializes as before; with them, as tc names them.
    let json = serde_json::to_string(&path("")).unwrap();
    assert_eq!(json, r#"{"delay_ns":10000000}"#);
    let json = serde_json::to_string(&path("jitter = \"1ms\"\ndistribution = \"normal\"\nreorder = \"1%\"\n")).unwrap();
    assert!(json.contains(r#""jitter_ns":1000000,"distribution":"normal","reorder":{"probability":42949673,"gap":1}"#), "{json}");
    for (extra, key, why) in [
        ("jitter = \"fast\"\n", "path.jitter", "jitter"),
        ("jitter = \"3s\"\n", "path.jitter", "INT_MAX"),
        ("jitter = \"1ms 120%\"\n", "path.jitter", "out of range"),
        ("jitter = \"1ms 1% 1%\"\n", "path.jitter", "at most"),
        ("jitter = 5\n", "path.jitter", "string"),
        ("distribution = \"normal\"\n", "path.distribution", "no latency and jitter"),
        ("jitter = \"1ms\"\ndistribution = \"experimental\"\n", "path.distribution", "measured table"),
        ("jitter = \"1ms\"\ndistribution = \"gauss\"\n", "path.distribution", "not a distribution"),
        ("gap = 3\n", "path.gap", "without reorder"),
        ("reorder = \"0%\"\ngap = 3\n", "path.gap", "without reorder"),
        ("reorder = \"lots\"\n", "path.reorder", "not a percentage"),
        ("ecn = true\n", "path.ecn", "no loss"),
    ] {
        let d = err(&format!("{nic}{extra}{UDP}"));
        assert_eq!(d.key, key, "{extra}: {d}");
        assert!(format!("{}", d.message).contains(why), "{extra}: {d}");
    }
    let d = err(&format!("{NIC}[path]\nreorder = \"5%\"\n{UDP}"));
    assert_eq!((d.key.as_str(), d.line), ("path.reorder", Some(4)));
    assert!(d.message.contains("without specifying some delay"), "{d}");
}
