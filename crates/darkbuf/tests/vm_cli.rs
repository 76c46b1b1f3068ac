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
