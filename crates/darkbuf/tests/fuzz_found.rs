//! Bad inputs a fuzzer found, through the command line: exit code 2 and a
//! `file:line:column: message; what would be valid` error.

use std::process::{Command, Output};

fn darkbuf(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_darkbuf")).args(args).output().expect("runs")
}

fn write(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("darkbuf-fuzz-found-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
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

    let o = darkbuf(&["run", &write("v.toml", V), "--set", &format!("machine.profile={not_a_profile}")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).starts_with(&format!("darkbuf: --set machine.profile={not_a_profile}: `machine.profile`")), "{}", stderr(&o));
}

#[test]
fn an_unknown_or_missing_profile_is_exit_2_at_machine_profile() {
    let scn = write("banana.toml", "duration = \"200ms\"\n[machine]\nprofile = \"banana\"\n[[traffic]]\nkind = \"udp\"\n");
    let o = darkbuf(&["run", &scn]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).starts_with(&format!("darkbuf: {scn}:3:11: `machine.profile` = \"banana\" is neither a built-in profile")), "{}", stderr(&o));
    let o = darkbuf(&["run", &write("v.toml", V), "--set", "machine.profile=/nonexistent/p.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("`machine.profile` = \"/nonexistent/p.toml\" cannot be read"), "{}", stderr(&o));
}
