//! Bad inputs a fuzzer found, through the command line: exit code 2 and a
//! `file:line:column: message; what would be valid` error.

mod common;

use common::{darkbuf, stderr};

fn write(name: &str, text: &str) -> String {
    common::write("fuzz-found", name, text)
}

/// A minimal veth scenario: the fuzzer's starting point.
const V: &str = "duration = \"200ms\"\n[qdisc]\nkind = \"sfq\"\n[[traffic]]\nkind = \"udp\"\n[[traffic]]\nkind = \"ping\"\n";

#[test]
fn a_profile_file_of_the_wrong_shape_is_exit_2_at_machine_profile() {
    // A scenario is a TOML file, but not a profile: the loader's complaint is reported
    // at the scenario's machine.profile, with the line and column in the profile too.
    let not_a_profile = write("not-a-profile.toml", V);
    let scn = write("wrong-profile.toml", &format!("duration = \"200ms\"\n[machine]\nprofile = \"{not_a_profile}\"\n[[traffic]]\nkind = \"udp\"\n"));
    let o = darkbuf(&["run", &scn]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    let want = format!(
        "darkbuf: {scn}:3:11: `machine.profile` = \"{not_a_profile}\" cannot be loaded: profile {not_a_profile}:1:1 is not valid: unknown field `duration`"
    );
    assert!(e.starts_with(&want), "{e}");
    assert!(e.contains("expected a built-in profile (seed-vm, baremetal-100g) or the path of a profile TOML file"), "{e}");

    let o = darkbuf(&["run", &write("v-profile-shape.toml", V), "--set", &format!("machine.profile={not_a_profile}")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).starts_with(&format!("darkbuf: --set machine.profile={not_a_profile}: `machine.profile`")), "{}", stderr(&o));
}

#[test]
fn an_unknown_or_missing_profile_is_exit_2_at_machine_profile() {
    let scn = write("banana.toml", "duration = \"200ms\"\n[machine]\nprofile = \"banana\"\n[[traffic]]\nkind = \"udp\"\n");
    let o = darkbuf(&["run", &scn]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).starts_with(&format!("darkbuf: {scn}:3:11: `machine.profile` = \"banana\" is neither a built-in profile")), "{}", stderr(&o));
    let o = darkbuf(&["run", &write("v-profile-missing.toml", V), "--set", "machine.profile=/nonexistent/p.toml"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("--set machine.profile=/nonexistent/p.toml: `machine.profile` = \"/nonexistent/p.toml\" does not exist: there is no file /nonexistent/p.toml; expected a built-in profile (seed-vm, baremetal-100g)"), "{err}");
    assert!(!err.contains("os error"), "{err}");
}

/// `darkbuf run V --set duration=200ms EXTRA...`: must fail with exit 2; its stderr.
fn run_v_fails(file: &str, text: &str, extra: &[&str]) -> (String, String) {
    let p = write(file, text);
    let mut args = vec!["run", &p[..], "--set", "duration=200ms"];
    args.extend_from_slice(extra);
    let o = darkbuf(&args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    (p, stderr(&o))
}

#[test]
fn an_overflowing_rate_is_exit_2_not_a_clamped_run() {
    let (_, e) = run_v_fails("v-rate.toml", V, &["--set", "traffic.0.rate=18446744073709551616bit"]);
    assert!(
        e.starts_with("darkbuf: --set traffic.0.rate=18446744073709551616bit: `traffic.0.rate`: rate \"18446744073709551616bit\" is out of range: at most 18446744073709551615 bit/s"),
        "{e}"
    );
    let cake = "duration = \"200ms\"\n[qdisc]\nkind = \"cake\"\nbandwidth = \"99999999999999999999gbit\"\n[[traffic]]\nkind = \"udp\"\n";
    let (p, e) = run_v_fails("cake.toml", cake, &[]);
    assert!(e.starts_with(&format!("darkbuf: {p}:4:13: `qdisc.bandwidth`: rate \"99999999999999999999gbit\" is out of range")), "{e}");
}

#[test]
fn a_bad_driver_under_rrul_is_exit_2_at_the_driver() {
    let text = "test = \"rrul\"\ntest_delay = \"10ms\"\nduration = \"200ms\"\n[device]\ndriver = 5\n";
    let (p, e) = run_v_fails("drv.toml", text, &[]);
    assert!(e.starts_with(&format!("darkbuf: {p}:5:10: `device.driver` must be a string, found an integer (5); one of \"veth\", \"tun\", \"nic\"")), "{e}");
}

#[test]
fn a_bad_qdisc_class_value_is_exit_2_at_the_value() {
    let text = "duration = \"200ms\"\n[qdisc]\nkind = \"htb\"\ndefault = \"10\"\n[[qdisc.class]]\nclassid = \"1:10\"\nrate = []\n[[traffic]]\nkind = \"udp\"\n";
    let (p, e) = run_v_fails("htb.toml", text, &[]);
    assert!(
        e.starts_with(&format!("darkbuf: {p}:7:8: `qdisc.class.0.rate` must be an integer, float, string or boolean (a tc parameter), found an array ([])")),
        "{e}"
    );
}

#[test]
fn a_string_hz_is_exit_2_with_the_config_hz_values() {
    let (_, e) = run_v_fails("v-hz.toml", V, &["--set", "machine.hz=\"250\""]);
    assert_eq!(
        e.trim_end(),
        "darkbuf: --set machine.hz=\"250\": `machine.hz` must be an integer, found a string (\"250\"); expected one of 100, 250, 300, 1000"
    );
}

/// `darkbuf ARGS`, killed if it has not ended within 60 s: its output, or `None`.
fn darkbuf_within_60s(args: &[&str]) -> Option<std::process::Output> {
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_darkbuf"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(60) {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn a_profile_send_cost_below_the_clock_step_is_exit_2_not_a_run_that_never_ends() {
    // costs.send_ns = 0.001 passed "> 0", but every send truncated to 0 ns: veth-bql's
    // flood (as seed-nrules0's and nic-1gbit's) sent forever at one instant into its
    // full qdisc, and `darkbuf run` of 50 ms never ended (found by the fuzz: timeout 20 s).
    let seed_vm = std::fs::read_to_string(common::repo("profiles/seed-vm.toml")).unwrap();
    let with = |send: &str, noise: &str| {
        let text = seed_vm
            .lines()
            .map(|l| match l.split('=').next().map(str::trim) {
                Some("send_ns") => format!("send_ns = {send}"),
                Some("noise") => format!("noise = {noise}"),
                _ => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        write(&format!("p-send-{send}-{noise}.toml"), &text)
    };
    let v = common::repo("scenarios/veth-bql.toml");
    let line = seed_vm.lines().position(|l| l.starts_with("send_ns")).unwrap() + 1;
    for (send, noise, bound) in [("0.001", "0.05", "52.632"), ("1.0", "0.5", "100.000"), ("1e-9", "0.0", "50.000"), ("52.0", "0.05", "52.632")] {
        let p = with(send, noise);
        let set = format!("machine.profile={p}");
        let o = darkbuf_within_60s(&["run", &v, "--set", "duration=50ms", "--set", &set]).expect("ends within 60 s");
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{e}");
        // At the value's line and column in the profile.
        assert!(e.starts_with(&format!("darkbuf: --set {set}: `machine.profile` = \"{p}\" cannot be loaded: profile {p}:{line}:11: costs.send_ns = {} with noise = {}: ", send.parse::<f64>().unwrap(), noise.parse::<f64>().unwrap())), "{e}");
        assert!(e.contains("faster than any CPU sends a packet"), "{e}");
        assert!(e.contains(&format!("expected send_ns >= 50 / (1 - noise) = {bound} ns")), "{e}");
    }
    // At the bound, it runs.
    let o = darkbuf(&["run", &v, "--set", "duration=1ms", "--set", "warmup=0s", "--set", &format!("machine.profile={}", with("100.0", "0.5"))]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}
