//! `--backend vm` and `darkbuf validate` from the command line, without booting a VM:
//! what a machine without the tools, or bad flags, get. (Booting is `.ci/vm-test`'s.)

use std::path::Path;
use std::process::{Command, Output};

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn darkbuf(args: &[&str], path_var: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_darkbuf"));
    c.args(args).current_dir(root());
    if let Some(p) = path_var {
        c.env("PATH", p);
    }
    c.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// An empty directory as PATH: no vng, no QEMU, no busybox. Removed when dropped (each
/// test has its own, named by `tag`).
struct EmptyPath(std::path::PathBuf);

impl EmptyPath {
    fn new(tag: &str) -> EmptyPath {
        let d = std::env::temp_dir().join(format!("darkbuf-vm-cli-path-{}-{tag}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        EmptyPath(d)
    }

    fn as_str(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temporary directory")
    }
}

impl Drop for EmptyPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn without_the_tools_every_command_is_exit_3_with_the_install_line() {
    let p = EmptyPath::new("tools");
    for args in [
        &["run", "scenarios/veth-bql.toml", "--backend", "vm"][..],
        &["sweep", "scenarios/veth-bql.toml", "--backend", "vm", "--set", "consumer.nrules=0,10"][..],
        &["compare", "scenarios/veth-bql.toml", "--backend", "vm"][..],
        &["check", "--backend", "vm"][..],
        &["validate", "--suite", "ci"][..],
        // `guest` is the guest's own profile, not a file named so (that would be exit 2).
        &["validate", "--suite", "ci", "--profile", "guest"][..],
    ] {
        let o = darkbuf(args, Some(p.as_str()));
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(3), "{args:?}: {e}");
        assert!(e.contains("apt-get install --no-install-recommends qemu-system-x86 busybox-static && pip install virtme-ng"), "{args:?}: {e}");
        assert!(e.contains("vng"), "{e}");
        assert!(!e.contains("panicked"), "{e}");
    }
    // calibrate --backend vm leaves no --out behind when it could not boot.
    let out = std::env::temp_dir().join(format!("darkbuf-vm-cli-profile-{}.toml", std::process::id()));
    let o = darkbuf(&["calibrate", "--backend", "vm", "--out", out.to_str().unwrap()], Some(p.as_str()));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("pip install virtme-ng"), "{}", stderr(&o));
    assert!(!out.exists(), "{} left behind", out.display());
}

#[test]
fn bad_vm_flags_are_exit_2() {
    let o = darkbuf(&["run", "scenarios/veth-bql.toml", "--backend", "vm", "--kernel", "Cargo.toml"], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a bzImage/vmlinuz"), "{}", stderr(&o));
    let o = darkbuf(&["run", "scenarios/veth-bql.toml", "--backend", "vm", "--kernel", "/nonexistent/bzImage"], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = darkbuf(&["run", "scenarios/veth-bql.toml", "--backend", "vm", "--vm-memory", "100M"], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("256 MiB"), "{}", stderr(&o));
    let o = darkbuf(&["run", "scenarios/veth-bql.toml", "--backend", "vm", "--vm-cpus", "0"], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = darkbuf(&["check", "--backend", "sim"], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = darkbuf(&["calibrate", "--backend", "sim", "--out", "x.toml"], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("calibrate measures a kernel"), "{}", stderr(&o));
    let o = darkbuf(&["calibrate", "--backend", "vm", "--out", "/nonexistent/dir/x.toml"], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--out /nonexistent/dir/x.toml"), "{}", stderr(&o));
    let o = darkbuf(&["calibrate", "--vm-cpus", "2", "--out", "x.toml"], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("sets up the VM of --backend vm"), "{}", stderr(&o));
    // A VM's flag on another backend would be ignored: refused.
    for flags in [&["--vm-cpus", "2"][..], &["--kernel", "Cargo.toml"], &["--vm-accel", "tcg"]] {
        let o = darkbuf(&[&["run", "scenarios/veth-bql.toml"][..], flags].concat(), None);
        assert_eq!(o.status.code(), Some(2), "{flags:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("sets up the VM of --backend vm"), "{}", stderr(&o));
    }
    // A bad scenario is refused before anything boots.
    let o = darkbuf(&["run", "scenarios/veth-bql.toml", "--backend", "vm", "--set", "qdisc.kind=nosuch"], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn validate_refuses_a_bad_suite() {
    let o = darkbuf(&["validate", "--suite-file", "/nonexistent/suite.toml"], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let d = std::env::temp_dir().join(format!("darkbuf-vm-cli-suite-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let f = d.join("suite.toml");
    std::fs::write(&f, "[[case]]\nname = \"a\"\nscenario = \"nosuch.toml\"\nmetrics = { \"sink.pps\" = 0.1 }\n").unwrap();
    let o = darkbuf(&["validate", "--suite-file", f.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("case a"), "{}", stderr(&o));
    let o = darkbuf(&["validate", "--only", "no-case-has-this-name"], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // A --profile that does not load is exit 2 before anything else (no tools needed).
    let p = EmptyPath::new("profile");
    let o = darkbuf(&["validate", "--suite", "ci", "--profile", "/nonexistent/guest.toml"], Some(p.as_str()));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("/nonexistent/guest.toml"), "{}", stderr(&o));
    std::fs::remove_dir_all(&d).unwrap();
}

/// `validate --rejudge`: the simulator again against a saved kernel side, no VM (and
/// so no tools: PATH is empty). The saved run's kernel value is judged by the suite's
/// tolerance, a metric the saved run lacks says so, and bad input is exit 2.
#[test]
fn validate_rejudges_a_saved_kernel_side_without_a_vm() {
    let p = EmptyPath::new("rejudge");
    let d = std::env::temp_dir().join(format!("darkbuf-vm-cli-rejudge-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let saved = d.join("validation.json");
    // udp-mq-fq_codel judges sink.pps within 10%: the simulator gives about 692 pps.
    std::fs::write(
        &saved,
        r#"{"vm": {"kernel": "6.1.0-57-amd64", "image": "/boot/vmlinuz", "accel": "tcg", "cpus": 2, "memory_mib": 1964, "boot_s": 36.0},
            "sim_profile": "x", "failures": [], "host_other_cpu_pct": [["udp-mq-fq_codel", 0.5]],
            "verdicts": [{"case": "udp-mq-fq_codel", "metric": "sink.pps", "sim": 1.0, "kernel": 693.9, "error": 0.0, "tolerance": 0.1, "within": true, "runs": 1},
                         {"case": "udp-mq-fq_codel", "metric": "ping.rtt_avg_ms", "sim": 1.0, "kernel": null, "error": null, "tolerance": 0.25, "within": null, "note": "kernel: no ping", "runs": 1}]}"#,
    )
    .unwrap();
    let o = darkbuf(&["validate", "--rejudge", saved.to_str().unwrap(), "--format", "csv"], Some(p.as_str()));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let csv = String::from_utf8_lossy(&o.stdout).to_string();
    let row = csv.lines().find(|l| l.starts_with("udp-mq-fq_codel,sink.pps,")).unwrap_or_else(|| panic!("{csv}"));
    assert!(row.contains(",693.9,"), "{row}");
    let ping = csv.lines().find(|l| l.starts_with("udp-mq-fq_codel,ping.rtt_avg_ms,")).unwrap_or_else(|| panic!("{csv}"));
    assert!(ping.contains("kernel: no ping"), "{ping}");
    // Only the saved run's case ran.
    assert!(csv.lines().skip(1).all(|l| l.starts_with("udp-mq-fq_codel,")), "{csv}");
    // A metric the suite judges and the saved run lacks.
    let drops = csv.lines().find(|l| l.starts_with("udp-mq-fq_codel,qdisc.drops,")).unwrap_or_else(|| panic!("{csv}"));
    assert!(drops.contains("not in the saved run"), "{drops}");
    // --profile guest needs the saved run's guest-profile.toml beside it.
    let o = darkbuf(&["validate", "--rejudge", saved.to_str().unwrap(), "--profile", "guest"], Some(p.as_str()));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("guest-profile.toml"), "{}", stderr(&o));
    // Not a validation.json: its line and column.
    std::fs::write(&saved, "{\n  \"vm\": 3\n}\n").unwrap();
    let o = darkbuf(&["validate", "--rejudge", saved.to_str().unwrap()], Some(p.as_str()));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("validation.json:2:"), "{}", stderr(&o));
    std::fs::remove_dir_all(&d).unwrap();
}
