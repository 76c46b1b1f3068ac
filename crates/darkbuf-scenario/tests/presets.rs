//! flent test presets (`test = "..."`) and `kind = "irtt"`: exact expansions, overrides
//! by name, and bad input.

mod common;

use common::{err, ok_set as ok};
use darkbuf_scenario::*;

const NIC: &str = "duration = \"4s\"\nwarmup = \"1s\"\ntest_delay = \"1s\"\n[device]\ndriver = \"nic\"\nrate = \"100Mbit\"\n";

/// (kind, name, direction or "-", dscp, start ms, stop ms or 0).
fn summary(s: &Scenario) -> Vec<(&'static str, String, &'static str, u8, u64, u64)> {
    s.traffic
        .iter()
        .map(|t| match t {
            Traffic::Tcp(f) => {
                let dir = if f.direction == Direction::Up { "up" } else { "down" };
                ("tcp", f.name.clone(), dir, f.dscp, f.start_ns / 1_000_000, f.stop_ns.unwrap_or(0) / 1_000_000)
            }
            Traffic::Irtt(i) => ("irtt", i.name.clone(), "-", i.dscp, i.start_ns / 1_000_000, i.stop_ns.unwrap_or(0) / 1_000_000),
            Traffic::Ping(p) => ("ping", p.name.clone(), "-", 0, 0, 0),
            Traffic::Udp(u) => ("udp", u.name.clone(), "-", u.dscp, 0, 0),
            Traffic::Voip(v) => ("voip", v.name.clone(), "-", v.dscp, v.start_ns / 1_000_000, v.stop_ns.unwrap_or(0) / 1_000_000),
            Traffic::Rr(r) => ("rr", r.name.clone(), "-", r.dscp, r.start_ns / 1_000_000, r.stop_ns.unwrap_or(0) / 1_000_000),
            Traffic::Web(w) => ("web", w.name.clone(), "-", w.tcp.dscp, 0, 0),
        })
        .collect()
}

#[test]
fn rrul_expands_into_flents_data_sets() {
    let s = ok(&format!("test = \"rrul\"\n{NIC}"), &[]);
    let t = |k, n: &str, d, dscp, a, b| (k, n.to_string(), d, dscp, a, b);
    assert_eq!(
        summary(&s),
        [
            t("tcp", "TCP upload BE", "up", 0, 1000, 4000),
            t("tcp", "TCP upload BK", "up", 8, 1000, 4000),
            t("tcp", "TCP upload CS5", "up", 40, 1000, 4000),
            t("tcp", "TCP upload EF", "up", 46, 1000, 4000),
            t("tcp", "TCP download BE", "down", 0, 1000, 4000),
            t("tcp", "TCP download BK", "down", 8, 1000, 4000),
            t("tcp", "TCP download CS5", "down", 40, 1000, 4000),
            t("tcp", "TCP download EF", "down", 46, 1000, 4000),
            t("irtt", "Ping (ms) UDP EF", "-", 46, 0, 0),
            t("irtt", "Ping (ms) UDP BK", "-", 8, 0, 0),
            t("irtt", "Ping (ms) UDP BE", "-", 0, 0, 0),
            t("ping", "Ping (ms) ICMP", "-", 0, 0, 0),
        ]
    );
    let Traffic::Irtt(i) = &s.traffic[8] else { panic!() };
    assert_eq!((i.interval_ns, i.length), (200_000_000, IRTT_MIN_LENGTH));
    let Traffic::Ping(p) = &s.traffic[11] else { panic!() };
    assert_eq!(p.interval_ns, 200_000_000);
    let test = s.test.as_ref().unwrap();
    assert_eq!((test.name.as_str(), test.delay_ns), ("rrul", 1_000_000_000));
}

#[test]
fn entries_named_like_the_presets_override_it_and_others_extend_it() {
    let text = format!(
        "test = \"tcp_4up\"\n{NIC}[[traffic]]\nname = \"TCP upload::2\"\ncc = \"reno\"\nstart = \"2s\"\n\
         [[traffic]]\nkind = \"udp\"\nrate = \"1Mbit\"\n"
    );
    let s = ok(&text, &[]);
    let names: Vec<&str> = s.traffic.iter().map(Traffic::name).collect();
    assert_eq!(names, ["TCP upload::1", "TCP upload::2", "TCP upload::3", "TCP upload::4", "Ping (ms) ICMP", ""]);
    let cc: Vec<(Cc, u64)> = s.traffic[..4]
        .iter()
        .map(|t| match t {
            Traffic::Tcp(f) => (f.cc, f.start_ns),
            _ => panic!(),
        })
        .collect();
    assert_eq!(cc, [(Cc::Cubic, 1_000_000_000), (Cc::Reno, 2_000_000_000), (Cc::Cubic, 1_000_000_000), (Cc::Cubic, 1_000_000_000)]);
    assert!(matches!(s.traffic[5], Traffic::Udp(_)));
    // --set addresses the scenario's own entries, and can change the test; a name that
    // changes nothing is an error at the name.
    let s = ok(&text, &["traffic.1.rate=2Mbit", "traffic.0.name=TCP upload", "test=tcp_1up"]);
    assert_eq!(s.traffic.len(), 3);
    assert!(matches!(&s.traffic[0], Traffic::Tcp(f) if f.name == "TCP upload" && f.cc == Cc::Reno));
    let d = load_str("x.toml", &text, &["test=tcp_1up".to_string()]).unwrap_err();
    assert_eq!((d.line, d.column, d.key.as_str()), (Some(9), Some(8), "traffic.0.name"));
    assert!(d.help.unwrap().contains("\"TCP upload\", \"Ping (ms) ICMP\""));
}

/// `--set traffic.0.cc=reno` on a scenario whose flows all come from the test: the
/// scenario has no entry 0, so --set adds one with neither a kind nor a name. The error
/// says so and how to change the test's flows, not that `traffic` has the wrong type.
#[test]
fn setting_a_key_of_an_entry_the_scenario_does_not_have() {
    let text = format!("test = \"tcp_4up\"\n{NIC}");
    let d = load_str("x.toml", &text, &["traffic.0.cc=reno".to_string()]).unwrap_err();
    assert_eq!(d.key, "traffic.0");
    assert!(d.message.contains("neither a kind (to add a flow) nor a name"), "{}", d.message);
    assert!(d.message.contains("scenario's own [[traffic]] entry N"), "{}", d.message);
    let help = d.help.unwrap();
    assert!(help.contains("--set traffic.0.name=\"TCP upload::1\""), "{help}");
    assert!(help.contains("\"TCP upload::4\", \"Ping (ms) ICMP\""), "{help}");
    // Named, it changes that flow.
    let s = ok(&text, &["traffic.0.name=TCP upload::3", "traffic.0.cc=reno"]);
    assert!(matches!(&s.traffic[2], Traffic::Tcp(f) if f.name == "TCP upload::3" && f.cc == Cc::Reno));
    // An index past the first is still refused with the entries there are.
    let d = load_str("x.toml", &text, &["traffic.1.cc=reno".to_string()]).unwrap_err();
    assert!(d.message.contains("`1` is not an index of `traffic`, which has 0 entries"), "{}", d.message);
    // Without a test, the entry --set adds needs a kind, and the help names them all.
    let d = load_str("x.toml", "duration = \"1s\"\n", &["traffic.0.rate=1Mbit".to_string()]).unwrap_err();
    assert!(d.message.contains("has no `kind`"), "{}", d.message);
    assert!(d.help.unwrap().contains("\"tcp\", \"ping\", \"irtt\", \"voip\", \"rr\" or \"web\""));
}

#[test]
fn the_other_presets() {
    let names = |test: &str| -> Vec<String> { ok(&format!("test = \"{test}\"\n{NIC}"), &[]).traffic.iter().map(|t| t.name().to_string()).collect() };
    assert_eq!(names("ping"), ["Ping (ms) ICMP"]);
    assert_eq!(names("tcp_1up"), ["TCP upload", "Ping (ms) ICMP"]);
    assert_eq!(names("rrul_be").len(), 12);
    // Flows at 0, 1, 5 and 3 DELAYs, each for TOTAL_LENGTH - 6 DELAYs (8 - 6 = 2 s here).
    let s = ok(&format!("test = \"tcp_4up_squarewave\"\n{NIC}"), &["duration=7s"]);
    let t: Vec<(Cc, u64, u64)> = s
        .traffic
        .iter()
        .map(|t| match t {
            Traffic::Tcp(f) => (f.cc, f.start_ns / 1_000_000, f.stop_ns.unwrap() / 1_000_000),
            _ => panic!(),
        })
        .collect();
    assert_eq!(t, [(Cc::Bbr, 0, 2000), (Cc::Cubic, 1000, 3000), (Cc::Cubic, 5000, 7000), (Cc::Bbr, 3000, 5000)]);
}

#[test]
fn an_unknown_test_is_an_error_at_its_position_with_the_valid_names() {
    let d = err("duration = \"1s\"\ntest = \"rrull\"\n");
    assert_eq!((d.line, d.column, d.key.as_str()), (Some(2), Some(8), "test"));
    let help = d.help.unwrap();
    assert!(help.contains("did you mean \"rrul\""), "{help}");
    for t in preset::TESTS {
        assert!(help.contains(&format!("\"{t}\"")), "{help}");
    }
}

#[test]
fn downloads_need_a_far_end_that_sends() {
    // A tap's far end is its reader: it sends nothing.
    let d = err("test = \"rrul\"\ntest_delay = \"1s\"\n[device]\ndriver = \"tun\"\n");
    assert_eq!((d.line, d.key.as_str()), (Some(1), "test"));
    assert!(d.message.contains("4 TCP download flows"), "{}", d.message);
    assert!(d.help.unwrap().contains("device.driver = \"nic\" or \"veth\""));
    // veth's peer namespace sends them (the default driver); uploads only are fine on tun.
    ok("test = \"rrul\"\ntest_delay = \"1s\"\n", &[]);
    ok("test = \"tcp_1up\"\ntest_delay = \"1s\"\n[device]\ndriver = \"tun\"\n", &[]);
}

#[test]
fn a_run_too_short_for_the_delay_and_a_delay_without_a_test() {
    let d = err(&format!("test = \"rrul\"\n{NIC}").replace("test_delay = \"1s\"", "test_delay = \"3s\""));
    assert!(d.message.contains("5000 ms - 2 x 3000 ms"), "{}", d.message);
    let d = err("test_delay = \"1s\"\n[[traffic]]\nkind = \"ping\"\n");
    assert_eq!((d.line, d.key.as_str()), (Some(1), "test_delay"));
}

#[test]
fn irtt_defaults_are_irtts_and_bad_keys_are_named() {
    let s = ok("[[traffic]]\nkind = \"irtt\"\n", &[]);
    let Traffic::Irtt(i) = &s.traffic[0] else { panic!() };
    assert_eq!((i.interval_ns, i.length, i.dscp, i.cpu, i.start_ns, i.stop_ns), (1_000_000_000, 60, 0, 0, 0, None));
    let s = ok("[[traffic]]\nkind = \"irtt\"\nlength = 1472\ndscp = 46\ninterval = \"10ms\"\nstop = \"5s\"\n", &[]);
    let Traffic::Irtt(i) = &s.traffic[0] else { panic!() };
    assert_eq!((i.interval_ns, i.length, i.dscp, i.stop_ns), (10_000_000, 1472, 46, Some(5_000_000_000)));
    let d = err("[[traffic]]\nkind = \"irtt\"\nsize = 100\n");
    assert_eq!((d.line, d.column, d.key.as_str()), (Some(3), Some(1), "traffic.0.size"));
    assert!(d.help.unwrap().contains("length"));
    let d = err("[[traffic]]\nkind = \"irtt\"\nstart = \"2s\"\nstop = \"1s\"\n");
    assert_eq!(d.key, "traffic.0.stop");
}

#[test]
fn tcp_nup_takes_its_streams_from_test_parameters() {
    let s = ok(&format!("test = \"tcp_nup\"\n{NIC}[test_parameters]\nupload_streams = 3\n"), &[]);
    let names: Vec<&str> = s.traffic.iter().map(Traffic::name).collect();
    assert_eq!(names, ["TCP upload::1", "TCP upload::2", "TCP upload::3", "Ping (ms) ICMP"]);
    let test = s.test.as_ref().unwrap();
    assert_eq!(test.parameters.get("upload_streams"), Some(&3));
    // --set reaches it, so a sweep can step through stream counts.
    let s = ok(&format!("test = \"tcp_ndown\"\n{NIC}"), &["test_parameters.download_streams=5"]);
    assert_eq!(s.traffic.len(), 6);
    assert!(matches!(&s.traffic[4], Traffic::Tcp(f) if f.name == "TCP download::5" && f.direction == Direction::Down));
    // A fixed test records what its .conf sets; a test without streams records nothing.
    let s = ok(&format!("test = \"tcp_8up\"\n{NIC}"), &[]);
    assert_eq!((s.traffic.len(), s.test.unwrap().parameters.get("upload_streams").copied()), (9, Some(8)));
    assert!(ok(&format!("test = \"rrul\"\n{NIC}"), &[]).test.unwrap().parameters.is_empty());
}

#[test]
fn test_parameters_that_cannot_be_meant() {
    // Missing: flent stops too.
    let d = err(&format!("test = \"tcp_nup\"\n{NIC}"));
    assert_eq!((d.line, d.column, d.key.as_str()), (Some(1), Some(8), "test"));
    assert!(d.message.contains("needs the test parameter upload_streams"), "{}", d.message);
    assert!(d.help.unwrap().contains("[test_parameters] upload_streams = N"));
    // A fixed test asked for another count.
    let d = err(&format!("test = \"tcp_4up\"\n{NIC}[test_parameters]\nupload_streams = 6\n"));
    assert_eq!((d.line, d.key.as_str()), (Some(9), "test_parameters.upload_streams"));
    assert!(d.message.contains("runs 4 upload streams"), "{}", d.message);
    assert!(d.help.unwrap().contains("test = \"tcp_nup\""));
    // The same count is what the test runs anyway.
    ok(&format!("test = \"tcp_4up\"\n{NIC}[test_parameters]\nupload_streams = 4\n"), &[]);
    // The other direction's parameter, and a test without parameters.
    let d = err(&format!("test = \"tcp_nup\"\n{NIC}[test_parameters]\nupload_streams = 2\ndownload_streams = 2\n"));
    assert_eq!(d.key, "test_parameters.download_streams");
    assert!(d.message.contains("it reads only upload_streams"), "{}", d.message);
    let d = err(&format!("test = \"rrul\"\n{NIC}[test_parameters]\ndownload_streams = 2\n"));
    assert!(d.message.contains("it reads no test parameters"), "{}", d.message);
    assert!(d.help.unwrap().contains("download_streams for \"tcp_ndown\", \"tcp_2down\""));
    // Out of range, unknown, and without a test.
    let d = err(&format!("test = \"tcp_nup\"\n{NIC}[test_parameters]\nupload_streams = 64\n"));
    assert_eq!((d.key.as_str(), d.help.as_deref()), ("test_parameters.upload_streams", Some("expected an integer in 1..=63")));
    let d = err(&format!("test = \"tcp_nup\"\n{NIC}[test_parameters]\nupload_stream = 2\n"));
    assert!(d.help.unwrap().contains("did you mean `upload_streams`"));
    let d = err("[test_parameters]\nupload_streams = 2\n[[traffic]]\nkind = \"ping\"\n");
    assert_eq!((d.line, d.key.as_str()), (Some(1), "test_parameters"));
    assert!(d.message.contains("flent's --test-parameter"), "{}", d.message);
}

#[test]
fn download_tests_need_a_far_end_and_say_which_tests_do_not() {
    let d = err("test = \"tcp_ndown\"\ntest_delay = \"1s\"\n[device]\ndriver = \"tun\"\n[test_parameters]\ndownload_streams = 3\n");
    assert!(d.message.contains("3 TCP download flows"), "{}", d.message);
    let help = d.help.unwrap();
    assert!(help.contains("\"tcp_nup\"") && help.contains("\"tcp_2up_delay\"") && !help.contains("\"tcp_bidirectional\""), "{help}");
    ok("test = \"tcp_2up_delay\"\ntest_delay = \"1s\"\n[device]\ndriver = \"tun\"\n", &[]);
}

#[test]
fn rrul_up_runs_on_a_veth_and_tcp_1up_noping_has_no_delay() {
    let s = ok("test = \"rrul_up\"\nduration = \"4s\"\ntest_delay = \"1s\"\n", &[]);
    let names: Vec<&str> = s.traffic.iter().map(Traffic::name).collect();
    assert_eq!(
        names,
        ["TCP upload BE", "TCP upload BK", "TCP upload CS5", "TCP upload EF", "Ping (ms) UDP EF", "Ping (ms) UDP BK", "Ping (ms) UDP BE", "Ping (ms) ICMP"]
    );
    let s = ok("test = \"tcp_1up_noping\"\nduration = \"4s\"\nwarmup = \"1s\"\n", &[]);
    assert!(matches!(&s.traffic[..], [Traffic::Tcp(f)] if f.start_ns == 0 && f.stop_ns == Some(5_000_000_000)));
    assert_eq!(s.test.unwrap().delay_ns, 0, "flent's DELAY = 0");
    let d = err("test = \"tcp_1up_noping\"\ntest_delay = \"1s\"\n");
    assert_eq!((d.line, d.key.as_str()), (Some(2), "test_delay"));
    assert!(d.message.contains("DELAY = 0"), "{}", d.message);
    // A test_delay of zero says the same: `--set test=tcp_1up_noping --set test_delay=0s`
    // on a file that has one.
    assert_eq!(ok("test = \"tcp_1up\"\ntest_delay = \"1s\"\n", &["test=tcp_1up_noping", "test_delay=0s"]).traffic.len(), 1);
}

#[test]
fn rrul_be_nflows_needs_both_counts() {
    let s = ok(&format!("test = \"rrul_be_nflows\"\n{NIC}[test_parameters]\nupload_streams = 1\ndownload_streams = 2\n"), &[]);
    let names: Vec<&str> = s.traffic.iter().map(Traffic::name).collect();
    assert_eq!(names, ["TCP upload BE::1", "TCP download BE::1", "TCP download BE::2", "Ping (ms) UDP BE", "Ping (ms) ICMP"]);
    let p = &s.test.unwrap().parameters;
    assert_eq!((p.get("upload_streams"), p.get("download_streams")), (Some(&1), Some(&2)));
    let d = err(&format!("test = \"rrul_be_nflows\"\n{NIC}[test_parameters]\nupload_streams = 1\n"));
    assert!(d.message.contains("needs the test parameter download_streams"), "{}", d.message);
    // A test that reads one count names it when given the other.
    let d = err(&format!("test = \"tcp_nup\"\n{NIC}[test_parameters]\nupload_streams = 1\ndownload_streams = 1\n"));
    assert!(d.message.contains("it reads only upload_streams"), "{}", d.message);
    assert!(d.help.unwrap().contains("\"rrul_be_nflows\""));
}

#[test]
fn rtt_fair_var_runs_to_each_host_at_its_delay() {
    let s = ok(&format!("test = \"rtt_fair_var\"\n{NIC}[test_parameters]\nhost_delays = [\"0ms\", \"10ms\", \"45ms\"]\n"), &[]);
    let got: Vec<(String, u64)> = s.traffic.iter().map(|t| (t.name().to_string(), t.path_delay_ns() / 1_000_000)).collect();
    let want = [
        ("TCP upload BE host1", 0),
        ("TCP download BE host1", 0),
        ("Ping (ms) ICMP host1", 0),
        ("TCP upload BE host2", 10),
        ("TCP download BE host2", 10),
        ("Ping (ms) ICMP host2", 10),
        ("TCP upload BE host3", 45),
        ("TCP download BE host3", 45),
        ("Ping (ms) ICMP host3", 45),
    ]
    .map(|(n, d)| (n.to_string(), d));
    assert_eq!(got, want);
    assert_eq!(s.test.unwrap().host_delays_ns, [0, 10_000_000, 45_000_000]);
    // flent's comma-separated string says the same; the _up and _down variants keep one
    // direction.
    let up = ok(&format!("test = \"rtt_fair_var_up\"\n{NIC}[test_parameters]\nhost_delays = \"0ms, 20ms\"\n"), &[]);
    let names: Vec<&str> = up.traffic.iter().map(Traffic::name).collect();
    assert_eq!(names, ["TCP upload BE host1", "Ping (ms) ICMP host1", "TCP upload BE host2", "Ping (ms) ICMP host2"]);
    assert_eq!(up.traffic[3].path_delay_ns(), 20_000_000);
    let down = ok(&format!("test = \"rtt_fair_var_down\"\n{NIC}"), &["test_parameters.host_delays=5ms"]);
    assert!(matches!(&down.traffic[..], [Traffic::Tcp(f), Traffic::Ping(p)] if f.direction == Direction::Down && f.path_delay_ns == 5_000_000 && p.path_delay_ns == 5_000_000));
    // A host entry is changed by its name, as any preset entry.
    let s = ok(&format!("test = \"rtt_fair_var_up\"\n{NIC}[test_parameters]\nhost_delays = [\"0ms\", \"20ms\"]\n[[traffic]]\nname = \"TCP upload BE host2\"\ncc = \"bbr\"\n"), &[]);
    assert!(matches!(&s.traffic[2], Traffic::Tcp(f) if f.cc == Cc::Bbr && f.path_delay_ns == 20_000_000));
}

#[test]
fn rtt_fair_runs_its_four_hosts_as_flent_marks_them() {
    let s = ok(&format!("test = \"rtt_fair\"\n{NIC}[test_parameters]\nhost_delays = [\"0ms\", \"10ms\", \"20ms\", \"30ms\"]\n"), &[]);
    let got: Vec<(String, u8, u64)> = s
        .traffic
        .iter()
        .map(|t| {
            let dscp = if let Traffic::Tcp(f) = t { f.dscp } else { 0 };
            (t.name().to_string(), dscp, t.path_delay_ns() / 1_000_000)
        })
        .collect();
    let want = [
        ("TCP upload BE1 host1", 0, 0),
        ("TCP upload BE2 host2", 0, 10),
        ("TCP upload BK1 host3", 8, 20),
        ("TCP upload BK2 host4", 8, 30),
        ("TCP download BE1 host1", 0, 0),
        ("TCP download BE2 host2", 0, 10),
        ("TCP download BK1 host3", 8, 20),
        ("TCP download BK2 host4", 8, 30),
        ("Ping (ms) ICMP1 host1", 0, 0),
        ("Ping (ms) ICMP2 host2", 0, 10),
        ("Ping (ms) ICMP3 host3", 0, 20),
        ("Ping (ms) ICMP4 host4", 0, 30),
    ]
    .map(|(n, d, p)| (n.to_string(), d, p));
    assert_eq!(got, want);
    // Without delays its four hosts share the path; rtt_fair_up is uploads only, all BE,
    // so a veth runs it.
    let up = ok("test = \"rtt_fair_up\"\nduration = \"4s\"\ntest_delay = \"1s\"\n", &[]);
    let names: Vec<&str> = up.traffic.iter().map(Traffic::name).collect();
    assert_eq!(names[..4], ["TCP upload BE1 host1", "TCP upload BE2 host2", "TCP upload BE3 host3", "TCP upload BE4 host4"]);
    assert_eq!(names.len(), 8);
    assert!(up.traffic.iter().all(|t| t.path_delay_ns() == 0));
    let be = ok(&format!("test = \"rtt_fair4be\"\n{NIC}"), &[]);
    assert!(be.traffic.iter().all(|t| !matches!(t, Traffic::Tcp(f) if f.dscp != 0)));
    assert_eq!(be.traffic.len(), 12);
    // A fixed-host test given no delays records its hosts at the shared distance.
    assert_eq!(be.test.unwrap().host_delays_ns, [0; 4]);
    let six = ok(&format!("test = \"rtt_fair6be\"\n{NIC}"), &[]);
    let names: Vec<&str> = six.traffic.iter().map(Traffic::name).collect();
    assert_eq!((names.len(), names[5], names[11], names[17]), (18, "TCP upload BE6 host6", "TCP download BE6 host6", "Ping (ms) ICMP6 host6"));
}

#[test]
fn host_delays_that_cannot_be_meant() {
    // rtt_fair_var needs its hosts, as flent needs -H.
    let d = err(&format!("test = \"rtt_fair_var\"\n{NIC}"));
    assert_eq!((d.line, d.key.as_str()), (Some(1), "test"));
    assert!(d.message.contains("needs its far hosts"), "{}", d.message);
    assert!(d.help.unwrap().contains("host_delays = [\"0ms\""));
    // A fixed-host test with another count.
    let d = err(&format!("test = \"rtt_fair\"\n{NIC}[test_parameters]\nhost_delays = [\"0ms\", \"10ms\"]\n"));
    assert_eq!((d.line, d.key.as_str()), (Some(9), "test_parameters.host_delays"));
    assert!(d.message.contains("runs to 4 hosts") && d.message.contains("names 2"), "{}", d.message);
    // A bad item is named where it is.
    let d = err(&format!("test = \"rtt_fair_var\"\n{NIC}[test_parameters]\nhost_delays = [\"0ms\", \"10\"]\n"));
    assert_eq!((d.line, d.column), (Some(9), Some(23)));
    assert!(d.help.unwrap().contains("expected"));
    let d = err(&format!("test = \"rtt_fair_var\"\n{NIC}[test_parameters]\nhost_delays = [\"0ms\", 10]\n"));
    assert!(d.message.contains("holds durations, found"), "{}", d.message);
    let d = err(&format!("test = \"rtt_fair_var\"\n{NIC}[test_parameters]\nhost_delays = [\"11s\"]\n"));
    assert!(d.help.unwrap().contains("0s .. 10s"));
    let d = err(&format!("test = \"rtt_fair_var\"\n{NIC}[test_parameters]\nhost_delays = []\n"));
    assert!(d.help.unwrap().contains("1..=21 hosts"));
    // A test without hosts, and a veth that has no wire to delay on.
    let d = err(&format!("test = \"tcp_4up\"\n{NIC}[test_parameters]\nhost_delays = [\"0ms\"]\n"));
    assert!(d.message.contains("does not read host_delays"), "{}", d.message);
    let d = err("test = \"rtt_fair_var_up\"\nduration = \"4s\"\ntest_delay = \"1s\"\n[test_parameters]\nhost_delays = [\"0ms\", \"10ms\"]\n");
    assert_eq!(d.key, "test_parameters.host_delays");
    assert!(d.message.contains("device.driver = \"veth\" has none"), "{}", d.message);
    ok("test = \"rtt_fair_var_up\"\nduration = \"4s\"\ntest_delay = \"1s\"\n[test_parameters]\nhost_delays = [\"0ms\", \"0ms\"]\n", &[]);
    let d = err(&format!("test = \"rtt_fair\"\n{NIC}[test_parameters]\nupload_streams = 2\n"));
    assert!(d.message.contains("it reads only host_delays"), "{}", d.message);
}
