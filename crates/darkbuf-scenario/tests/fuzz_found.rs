//! Bad inputs a fuzzer found reported without a position, against the wrong key, with a
//! misleading range, or not at all. Each must be a diagnostic at the offending value
//! (file, line and column, or the `--set` argument) saying what would be valid.

mod common;

use common::{err, err_set, ok_set};
use darkbuf_model::units::Rate;
use darkbuf_scenario::*;

/// A minimal veth scenario: the fuzzer's starting point.
const V: &str = "duration = \"200ms\"\n[qdisc]\nkind = \"sfq\"\n[[traffic]]\nkind = \"udp\"\n[[traffic]]\nkind = \"ping\"\n";

/// The text the diagnostic points at.
fn pointed(d: &Diagnostic) -> &str {
    &d.source[d.span.clone().expect("a span")]
}

/// `line:column` of the diagnostic, in the scenario file.
fn at(d: &Diagnostic) -> (Option<usize>, Option<usize>) {
    (d.line, d.column)
}

// ---- rates beyond u64 bit/s ----

#[test]
fn a_traffic_rate_beyond_u64_is_out_of_range_not_clamped() {
    for rate in ["99999999999999999999Mbit", "18446744073709551616bit"] {
        let arg = format!("traffic.0.rate={rate}");
        let d = err_set(V, &[&arg]);
        assert_eq!(d.kind, DiagnosticKind::Value, "{d}");
        assert_eq!(d.key, "traffic.0.rate");
        assert_eq!(d.file, format!("--set {arg}"));
        assert_eq!(pointed(&d), rate);
        assert!(d.message.contains("out of range"), "{d}");
        assert!(d.help.as_deref().unwrap().contains("100Mbit"), "{d}");
    }
    // The largest rate that fits still parses as it always did.
    let s = ok_set(V, &["traffic.0.rate=18446744073709551615bit"]);
    let Traffic::Udp(u) = &s.traffic[0] else { panic!() };
    assert_eq!(u.rate, Rate::Bps(u64::MAX));
}

#[test]
fn a_qdisc_rate_beyond_u64_is_blamed_on_the_rate() {
    let cake = "duration = \"200ms\"\n[qdisc]\nkind = \"cake\"\nbandwidth = \"99999999999999999999gbit\"\n[[traffic]]\nkind = \"udp\"\n";
    let d = err(cake);
    assert_eq!((d.key.as_str(), at(&d)), ("qdisc.bandwidth", (Some(4), Some(13))), "{d}");
    assert!(d.message.contains("out of range"), "{d}");

    let tbf = "duration = \"200ms\"\n[qdisc]\nkind = \"tbf\"\nrate = \"99999999999999999999gbit\"\nburst = \"10k\"\nlatency = \"50ms\"\n[[traffic]]\nkind = \"udp\"\n";
    let d = err(tbf);
    assert_eq!((d.key.as_str(), at(&d)), ("qdisc.rate", (Some(4), Some(8))), "{d}");
    assert!(d.message.contains("out of range"), "{d}");
}

// ---- device.driver under a test preset ----

const RRUL: &str = "test = \"rrul\"\ntest_delay = \"10ms\"\nduration = \"200ms\"\n[device]\n";

#[test]
fn a_bad_driver_under_a_test_preset_is_reported_as_such() {
    let d = err(&format!("{RRUL}driver = \"nci\"\n"));
    assert_eq!((d.key.as_str(), at(&d)), ("device.driver", (Some(5), Some(10))), "{d}");
    assert!(d.message.contains("`device.driver` = \"nci\" is not valid"), "{d}");
    assert!(d.help.as_deref().unwrap().contains("\"veth\", \"tun\", \"nic\""), "{d}");

    // A wrong type is a type error, never read as the default veth.
    let d = err(&format!("{RRUL}driver = 5\n"));
    assert_eq!(d.kind, DiagnosticKind::Type, "{d}");
    assert_eq!((d.key.as_str(), at(&d)), ("device.driver", (Some(5), Some(10))), "{d}");
    assert!(d.message.contains("must be a string, found an integer (5)"), "{d}");
    assert!(!d.message.contains("veth"), "{d}");

    let d = err_set(RRUL, &["device.driver=nci"]);
    assert_eq!((d.key.as_str(), pointed(&d)), ("device.driver", "nci"), "{d}");
}

// ---- values inside [[qdisc.class]] ----

const HTB: &str = "duration = \"200ms\"\n[qdisc]\nkind = \"htb\"\ndefault = \"10\"\n[[qdisc.class]]\nclassid = \"1:10\"\n";
const UDP: &str = "[[traffic]]\nkind = \"udp\"\n";

#[test]
fn a_bad_value_in_a_qdisc_class_is_blamed_on_that_value() {
    for (value, found) in [
        ("[]", "an array ([])"),
        ("{ a = 1 }", "a table"),
        ("1979-05-27T07:32:00Z", "a date-time (1979-05-27T07:32:00Z)"),
        ("[1, 2]", "an array ([1, 2])"),
    ] {
        let d = err(&format!("{HTB}rate = {value}\n{UDP}"));
        assert_eq!(d.kind, DiagnosticKind::Type, "{d}");
        assert_eq!((d.key.as_str(), at(&d)), ("qdisc.class.0.rate", (Some(7), Some(8))), "{d}");
        assert_eq!(pointed(&d), value);
        assert_eq!(
            d.message,
            format!("`qdisc.class.0.rate` must be an integer, float, string or boolean (a tc parameter), found {found}")
        );
        assert!(d.help.as_deref().unwrap().contains("rate = \"5ms\""), "{d}");
    }
    // The second class's value, not the first's header.
    let d = err(&format!("{HTB}rate = \"10mbit\"\n[[qdisc.class]]\nclassid = \"1:20\"\nrate = \"5mbit\"\nceil = []\n{UDP}"));
    assert_eq!((d.key.as_str(), at(&d)), ("qdisc.class.1.ceil", (Some(11), Some(8))), "{d}");
}

#[test]
fn set_on_a_qdisc_class_makes_an_array_of_tables() {
    // --set qdisc.class.0.KEY adds [[qdisc.class]] entry 0, as traffic.0.KEY adds a
    // [[traffic]] entry; the class is then checked by the model like one in the file.
    let base = "duration = \"200ms\"\n[qdisc]\nkind = \"htb\"\ndefault = \"10\"\n[[traffic]]\nkind = \"udp\"\n";
    let s = ok_set(base, &["qdisc.class.0.classid=1:10", "qdisc.class.0.rate=10mbit"]);
    let from_file = ok_set(&format!("{HTB}rate = \"10mbit\"\n{UDP}"), &[]);
    assert_eq!(format!("{:?}", s.qdisc), format!("{:?}", from_file.qdisc));
    let d = err_set(base, &["qdisc.class.0.classid=1:10", "qdisc.class.0.rate=[]"]);
    assert_eq!((d.key.as_str(), d.file.as_str(), pointed(&d)), ("qdisc.class.0.rate", "--set qdisc.class.0.rate=[]", "[]"), "{d}");
    let d = err_set(base, &["qdisc.class.1.classid=1:10"]);
    assert!(d.message.contains("is not an index of `qdisc.class`, which has 0 entries"), "{d}");
    // Nor is an index that is not a number: not "`qdisc.class` must be an array of tables".
    let d = err_set(base, &["qdisc.class.-1.classid=1:10"]);
    assert_eq!((d.key.as_str(), pointed(&d)), ("qdisc.class.-1", "-1"), "{d}");
    assert!(d.message.contains("`-1` is not an index of `qdisc.class`, which has 0 entries"), "{d}");
}

// ---- integers with a set or a driver-dependent range ----

#[test]
fn a_wrong_type_for_ring_size_or_hz_says_the_real_valid_values() {
    for v in ["\"256\"", "2.5", "99999999999999999999"] {
        let arg = format!("device.ring_size={v}");
        let d = err_set(V, &[&arg]);
        assert_eq!((d.kind, d.key.as_str()), (DiagnosticKind::Type, "device.ring_size"), "{d}");
        let help = d.help.as_deref().unwrap();
        assert!(help.starts_with("expected 256 (veth's ring is fixed at 256 entries"), "{d}");
        assert!(!help.contains("9223372036854775807"), "{d}");
    }
    let d = err(&format!("{V}[device]\nring_size = \"256\"\n"));
    assert_eq!(at(&d), (Some(9), Some(13)), "{d}");

    let d = err_set(V, &["device.driver=tun", "device.ring_size=\"64\""]);
    assert_eq!(d.help.as_deref(), Some("expected an integer in 1..=524288"), "{d}");
    let d = err_set(V, &["device.driver=tun", "device.ring_size=0"]);
    assert_eq!(d.help.as_deref(), Some("expected an integer in 1..=524288"), "{d}");
    let d = err_set(V, &["device.driver=tun", "device.ring_size=5000000000"]);
    assert!(d.message.contains("= 5000000000: a tun/tap ring holds at most 524288 entries"), "{d}");

    let d = err_set(V, &["device.driver=nic", "device.ring_size=2.5"]);
    assert!(d.help.as_deref().unwrap().starts_with("expected ethtool -G tx "), "{d}");

    let d = err_set(V, &["machine.hz=\"250\""]);
    assert_eq!((d.kind, d.key.as_str(), pointed(&d)), (DiagnosticKind::Type, "machine.hz", "\"250\""), "{d}");
    assert_eq!(d.help.as_deref(), Some("expected one of 100, 250, 300, 1000"), "{d}");
    let d = err(&format!("{V}[machine]\nhz = \"250\"\n"));
    assert_eq!(at(&d), (Some(9), Some(6)), "{d}");
    assert!(d.message.contains("`machine.hz` must be an integer, found a string (\"250\")"), "{d}");
}

// ---- machine.profile ----

const PROFILE: &str = "duration = \"200ms\"\n[machine]\nprofile = \"banana\"\n[[traffic]]\nkind = \"udp\"\n";

#[test]
fn an_unknown_profile_name_is_an_error_at_its_key_listing_the_built_ins() {
    let d = err(PROFILE);
    assert_eq!((d.kind, d.key.as_str(), at(&d)), (DiagnosticKind::Value, "machine.profile", (Some(3), Some(11))), "{d}");
    assert_eq!(pointed(&d), "\"banana\"");
    assert_eq!(
        d.to_string(),
        "scenarios/x.toml:3:11: `machine.profile` = \"banana\" is neither a built-in profile nor a path to a profile TOML; \
         expected a built-in profile (seed-vm, baremetal-100g) or the path of a profile TOML file, e.g. profiles/seed-vm.toml (darkbuf calibrate writes one)"
    );
    let d = err_set(V, &["machine.profile=seed-mv"]);
    assert_eq!((d.file.as_str(), pointed(&d)), ("--set machine.profile=seed-mv", "seed-mv"), "{d}");
    assert!(d.help.as_deref().unwrap().starts_with("did you mean \"seed-vm\"?"), "{d}");
    for b in BUILTIN_PROFILES {
        ok_set(V, &[&format!("machine.profile={b}")]);
    }
}

#[test]
fn an_unreadable_profile_path_is_an_error_at_its_key() {
    let d = err(&PROFILE.replace("banana", "/nonexistent/p.toml"));
    assert_eq!((d.key.as_str(), at(&d)), ("machine.profile", (Some(3), Some(11))), "{d}");
    assert_eq!(d.message, "`machine.profile` = \"/nonexistent/p.toml\" does not exist: there is no file /nonexistent/p.toml", "{d}");
    assert!(d.help.as_deref().unwrap().contains("seed-vm, baremetal-100g"), "{d}");
}

#[test]
fn a_profile_that_does_not_load_is_reported_at_the_scenarios_key() {
    // The profile's content is checked by the simulator's loader, after resolving; the
    // resolved scenario keeps where the key was so that error is positioned too.
    let dir = std::env::temp_dir().join(format!("darkbuf-fuzz-found-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("wrong-shape.toml");
    std::fs::write(&p, V).unwrap();
    // Gone however the test ends.
    struct Remove(std::path::PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let _remove = Remove(dir.clone());
    let text = PROFILE.replace("banana", p.to_str().unwrap());
    let m = ok_set(&text, &[]).machine;
    let d = m.profile_error("profile X:1:1 is not valid: unknown field `duration`");
    assert_eq!((d.file.as_str(), d.key.as_str(), at(&d)), ("scenarios/x.toml", "machine.profile", (Some(3), Some(11))), "{d}");
    assert_eq!(pointed(&d), format!("\"{}\"", p.display()));
    assert!(d.to_string().contains("cannot be loaded: profile X:1:1 is not valid: unknown field `duration`; expected a built-in profile"), "{d}");
    let m = ok_set(V, &[&format!("machine.profile={}", p.display())]).machine;
    let d = m.profile_error("bad");
    assert_eq!((d.file, d.line), (format!("--set machine.profile={}", p.display()), None));
}

// ---- smaller ones ----

#[test]
fn peer_irq_cpus_names_peer_cpus_and_a_valid_example() {
    let d = err_set(V, &["device.driver=nic", "peer.cpus=1", "peer.irq_cpus=[1]"]);
    assert_eq!((d.key.as_str(), pointed(&d)), ("peer.irq_cpus.0", "[1]"), "{d}");
    assert_eq!(d.message, "`peer.irq_cpus.0` = 1 is not a CPU of the peer");
    assert_eq!(d.help.as_deref(), Some("expected an array of CPU numbers in 0..=0 (peer.cpus = 1), e.g. [0]"), "{d}");
    // This host's keys still name machine.cpus.
    let d = err_set(V, &["device.irq_cpus=[7]"]);
    assert_eq!(d.help.as_deref(), Some("expected an array of CPU numbers in 0..=1 (machine.cpus = 2), e.g. [1]"), "{d}");
}

#[test]
fn a_traffic_name_of_the_wrong_type_under_a_test_is_a_type_error() {
    let d = err("test = \"tcp_4up\"\ntest_delay = \"10ms\"\nduration = \"200ms\"\n[[traffic]]\nname = 0\n");
    assert_eq!(d.kind, DiagnosticKind::Type, "{d}");
    assert_eq!((d.key.as_str(), at(&d)), ("traffic.0.name", (Some(5), Some(8))), "{d}");
    assert_eq!(d.message, "`traffic.0.name` must be a string, found an integer (0)");
    assert!(d.help.as_deref().unwrap().contains("\"TCP upload::1\""), "{d}");
}

#[test]
fn an_htb_class_rate_too_low_says_so_at_the_rate() {
    let d = err(&format!("{HTB}rate = \"1bit\"\n{UDP}"));
    assert_eq!((d.key.as_str(), at(&d)), ("qdisc.class[0].rate", (Some(7), Some(8))), "{d}");
    assert_eq!(d.message, "`qdisc.class[0].rate`: 1bit is too low: below 1 byte/s, and tc keeps rates in bytes per second");
    assert_eq!(d.help.as_deref(), Some("expected a rate of at least 48bit with mtu = 1600 and no burst, e.g. \"10mbit\""));
    // Above 0 bytes/s, the default burst is what bounds it: blamed on the rate that was
    // written, not on a burst that was not.
    let d = err(&format!("{HTB}rate = \"40bit\"\n{UDP}"));
    assert_eq!((d.key.as_str(), at(&d)), ("qdisc.class[0].rate", (Some(7), Some(8))), "{d}");
    assert!(d.message.contains("40bit is too low: the default burst (rate / 1000000000 + mtu = 1600 bytes) would take over 274 s"), "{d}");
    ok_set(&format!("{HTB}rate = \"48bit\"\n{UDP}"), &[]);
    // With a burst, the bound is 1 byte/s.
    let d = err(&format!("{HTB}rate = \"7bit\"\nburst = 10\n{UDP}"));
    assert_eq!(d.help.as_deref(), Some("expected a rate of at least 8bit, e.g. \"10mbit\""), "{d}");
    ok_set(&format!("{HTB}rate = \"8bit\"\nburst = 10\n{UDP}"), &[]);
    // A missing rate is still "required".
    let d = err(&format!("{HTB}{UDP}"));
    assert!(d.message.contains("\"rate\" is required"), "{d}");
}

#[test]
fn variant_labels_must_be_unique_and_non_empty() {
    let base = "duration = \"200ms\"\n[[traffic]]\nkind = \"udp\"\n[[variant]]\nlabel = \"a\"\n\"consumer.nrules\" = 1\n";
    let d = err(&format!("{base}[[variant]]\nlabel = \"a\"\n\"consumer.nrules\" = 2\n"));
    assert_eq!((d.kind, d.key.as_str(), at(&d)), (DiagnosticKind::Value, "variant.1.label", (Some(8), Some(9))), "{d}");
    assert_eq!(d.message, "`variant.1.label` = \"a\" is also the label of [[variant]] entry 0");
    assert!(d.help.as_deref().unwrap().contains("unique, non-empty label"), "{d}");
    let d = err(&format!("{base}[[variant]]\nlabel = \"\"\n"));
    assert_eq!((d.key.as_str(), at(&d), d.message.as_str()), ("variant.1.label", (Some(8), Some(9)), "`variant.1.label` is empty"), "{d}");
    ok_set(&format!("{base}[[variant]]\nlabel = \"b\"\n"), &[]);
}

#[test]
fn a_start_after_the_end_of_the_run_is_an_error_at_start() {
    let tcp = "duration = \"200ms\"\nwarmup = \"50ms\"\n[[traffic]]\nkind = \"tcp\"\nstart = \"10s\"\n";
    let d = err(tcp);
    assert_eq!((d.kind, d.key.as_str(), at(&d)), (DiagnosticKind::Value, "traffic.0.start", (Some(5), Some(9))), "{d}");
    assert_eq!(
        d.to_string(),
        "scenarios/x.toml:5:9: `traffic.0.start` = \"10s\" is not before the end of the run (warmup + duration = 250 ms): \
         the entry would never send; expected a start before 250 ms, e.g. \"0s\", or a longer duration"
    );
    let d = err(&tcp.replace("10s", "250ms"));
    assert_eq!(d.key, "traffic.0.start", "{d}");
    ok_set(&tcp.replace("10s", "249ms"), &[]);
    let irtt = "duration = \"200ms\"\nwarmup = \"50ms\"\n[[traffic]]\nkind = \"irtt\"\nstart = \"1s\"\n";
    let d = err(irtt);
    assert!(d.message.contains("would never probe"), "{d}");
}

// ---- how a qdisc parameter's bad value is shown ----

#[test]
fn a_bad_float_or_string_qdisc_parameter_is_shown_as_written() {
    // `depth = 1e300` was shown with all 301 digits, `limit = 2.0` as "2 is not valid;
    // expected an integer", and a string's control characters went out raw.
    let sfq = |v: &str| format!("duration = \"200ms\"\n[qdisc]\nkind = \"sfq\"\ndepth = {v}\n{UDP}");
    for (value, shown) in [("1e300", "1e300"), ("-1e308", "-1e308"), ("2.0", "2.0"), ("nan", "nan"), ("-inf", "-inf")] {
        let d = err(&sfq(value));
        assert_eq!((d.key.as_str(), at(&d)), ("qdisc.depth", (Some(4), Some(9))), "{d}");
        assert_eq!(d.message, format!("`qdisc.depth`: {shown} is not valid"), "{d}");
        assert_eq!(d.help.as_deref(), Some("expected an integer in 0..=4294967295"), "{d}");
    }
    let d = err(&sfq("\"a\\nb\\u0000\\\"\""));
    assert_eq!(d.message, "`qdisc.depth`: \"a\\nb\\0\\\"\" is not valid", "{d}");
    assert!(!d.message.contains('\n') && !d.message.contains('\0'), "{d}");
    // From --set, the same text.
    let d = err_set(&sfq("127"), &["qdisc.depth=1e300"]);
    assert_eq!((d.file.as_str(), d.message.as_str()), ("--set qdisc.depth=1e300", "`qdisc.depth`: 1e300 is not valid"), "{d}");
}

// ---- --set traffic.N.KEY with an N that is not an index, on a scenario without [[traffic]] ----

#[test]
fn a_traffic_index_that_is_not_a_number_is_not_an_index() {
    // With no [[traffic]] in the file (a test preset's, or none yet), `traffic.-1.size`
    // made `traffic` a table and said "`traffic` must be an array of tables, found a
    // table", as if the file were wrong.
    let rrul = format!("{RRUL}driver = \"nic\"\nrate = \"100Mbit\"\n");
    ok_set(&rrul, &[]);
    let none = "duration = \"200ms\"\n";
    for base in [rrul.as_str(), none] {
        for idx in ["-1", "x", "99999999999999999999"] {
            let arg = format!("traffic.{idx}.size=1");
            let d = err_set(base, &[&arg]);
            assert_eq!(d.file, format!("--set {arg}"), "{d}");
            assert!(d.message.contains(&format!("`{idx}` is not an index of `traffic`, which has 0 entries")), "{arg}: {d}");
            assert_eq!(d.help.as_deref(), Some("use index 0 to add the first entry: traffic.0.KEY=VALUE"), "{d}");
        }
    }
    // With entries, as before.
    let d = err_set(V, &["traffic.x.size=1"]);
    assert!(d.message.contains("`x` is not an index of `traffic`, which has 2 entries"), "{d}");
    // An unknown key that is not `traffic` or a qdisc's `class` still starts a table.
    let d = err_set(V, &["device.class.x=1"]);
    assert!(d.message.contains("unknown key `class`"), "{d}");
}

// ---- a sweep's --set list splits at the commas between values only ----

#[test]
fn a_sweep_list_keeps_quoted_strings_and_arrays_whole() {
    use darkbuf_scenario::sweep::split_values;
    // `--set 'traffic.0.name="a,b","c"'` swept `"a`, `b"` and `"c"`.
    assert_eq!(split_values("1,2, 3"), ["1", "2", " 3"]);
    assert_eq!(split_values("\"a,b\",\"c\""), ["\"a,b\"", "\"c\""]);
    assert_eq!(split_values("'a,b' , x"), ["'a,b' ", " x"]);
    assert_eq!(split_values("\"a\\\",b\",c"), ["\"a\\\",b\"", "c"]);
    assert_eq!(split_values("[0, 1],[2,[3,4]],{a=1,b=\",\"}"), ["[0, 1]", "[2,[3,4]]", "{a=1,b=\",\"}"]);
    // A bare value is text to the next comma: an apostrophe in it opens no quote.
    assert_eq!(split_values("it's,x"), ["it's", "x"]);
    // Unclosed: to the end, for the value's parser to report.
    assert_eq!(split_values("\"a,b"), ["\"a,b"]);
    assert_eq!(split_values("[1,2"), ["[1,2"]);
    assert_eq!(split_values(",,"), ["", "", ""]);

    let points = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let plan = sweep_plan_str("x.toml", V, &sets).unwrap_or_else(|d| panic!("{d}"));
        plan.points.iter().map(|p| p.label.clone()).collect::<Vec<_>>()
    };
    assert_eq!(points(&["traffic.0.name=\"a,b\",c"]), ["traffic.0.name=\"a,b\"", "traffic.0.name=c"]);
    assert_eq!(points(&["device.irq_cpus=[1],[1, 1]"]), ["device.irq_cpus=[1]", "device.irq_cpus=[1, 1]"]);
}

/// A negative qdisc time said "0s is out of range (0s..=...)": the value shown was not
/// the one written, and 0 s is inside the range it named. Found by a newcomer's try.
#[test]
fn a_negative_qdisc_time_is_named_negative() {
    let text = "duration = \"200ms\"\n[qdisc]\nkind = \"fq_codel\"\ntarget = \"-5ms\"\n[[traffic]]\nkind = \"udp\"\n";
    let d = err(text);
    assert_eq!(d.key, "qdisc.target", "{d}");
    assert_eq!(pointed(&d), "\"-5ms\"");
    assert!(d.message.contains("-5ms is negative"), "{d}");
    assert!(!d.message.contains("out of range"), "{d}");
}
