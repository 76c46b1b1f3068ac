//! DESIGN.md's contracts that an audit found broken, through the command line: a
//! file's `[sweep]` and `[[variant]]` entries are checked by `run` too ("unknown keys
//! are errors, never ignored"), and a single-value `--set` of a swept key does not run
//! under labels that name other values.

mod common;

use common::{darkbuf, stderr, stdout};

fn write(name: &str, text: &str) -> String {
    common::write("contract", name, text)
}

const V: &str = "duration = \"100ms\"\nwarmup = \"10ms\"\n[qdisc]\nkind = \"pfifo\"\n[[traffic]]\nkind = \"udp\"\n";

#[test]
fn run_checks_the_sweep_and_variant_entries_it_leaves_out() {
    let f = write("typo-in-sweep.toml", &format!("{V}[sweep]\n\"consumer.nrulez\" = [0, 1]\n"));
    let o = darkbuf(&["run", &f]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).starts_with(&format!("darkbuf: {f}:8:22: sweep point `consumer.nrulez=0`: unknown key `nrulez` in [consumer]; did you mean `nrules`?")), "{}", stderr(&o));

    let f = write("bad-variant.toml", &format!("{V}[[variant]]\nlabel = \"x\"\n\"consumer.nrules\" = \"abc\"\n"));
    let o = darkbuf(&["run", &f]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).starts_with(&format!("darkbuf: {f}:9:21: sweep point `x`: `consumer.nrules` must be an integer")), "{}", stderr(&o));

    // A good plan runs the scenario without it, and says so.
    let f = write("good-plan.toml", &format!("{V}[[variant]]\nlabel = \"x\"\n\"consumer.nrules\" = 5\n[sweep]\n\"traffic.0.size\" = [100, 200, 300]\n"));
    let o = darkbuf(&["run", &f, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let note = format!("darkbuf: note: {f} has 1 variant and a [sweep] of 3 points; `darkbuf run` runs the scenario without them, `darkbuf sweep` runs them");
    assert!(stderr(&o).contains(&note), "{}", stderr(&o));

    // What run's own --set changes does not make an entry it leaves out wrong: the
    // variant sets an sfq parameter, and run swaps the qdisc for another kind.
    let sfq = V.replace("pfifo", "sfq");
    let f = write("run-set.toml", &format!("{sfq}[[variant]]\nlabel = \"slow perturb\"\n\"qdisc.perturb\" = 10\n"));
    let o = darkbuf(&["run", &f, "--set", "qdisc.kind=fq_codel"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn a_single_value_set_of_a_swept_key_runs_without_the_axis() {
    let f = write("swept.toml", &format!("{V}[sweep]\n\"consumer.nrules\" = [0, 3500]\n"));
    let o = darkbuf(&["sweep", &f, "--set", "consumer.nrules=7", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 1, "one point, not two labelled 0 and 3500 that both ran 7");
    assert_eq!(points[0]["label"], "");
    assert_eq!(points[0]["results"]["scenario"]["consumer"]["nrules"], 7);
}

/// `profile = "lab.toml"` in a scenario file is the file next to it, from any working
/// directory (it was looked up from the working directory only), and the results name
/// the profile by its path and a digest of its text: two files that share a `name` no
/// longer give the same `environment`.
#[test]
fn a_relative_profile_is_found_next_to_the_scenario_and_named_by_its_digest() {
    let dir = common::tmp("contract", "profile");
    let seed_vm = std::fs::read_to_string(common::repo("profiles/seed-vm.toml")).unwrap();
    std::fs::write(dir.join("lab.toml"), &seed_vm).unwrap();
    let scn = dir.join("s.toml");
    std::fs::write(&scn, format!("{V}[machine]\nprofile = \"lab.toml\"\n")).unwrap();
    let env_profile = || {
        let o = darkbuf(&["run", scn.to_str().unwrap(), "--format", "json"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        (v["environment"]["profile"].as_str().unwrap().to_string(), v["scenario"]["machine"]["profile"].clone())
    };
    let (a, as_given) = env_profile();
    assert_eq!(as_given, "lab.toml", "the scenario keeps the path as written");
    assert!(a.starts_with(&format!("seed-vm ({}, fnv1a64 ", dir.join("lab.toml").display())), "{a}");
    std::fs::write(dir.join("lab.toml"), format!("{seed_vm}\n# edited\n")).unwrap();
    let (b, _) = env_profile();
    assert_ne!(a, b, "another text, another digest");
}

/// A scenario file that is not UTF-8 is an error at the line and column of its first
/// byte that is no UTF-8 character (it gave the file alone and a byte index).
#[test]
fn a_file_that_is_not_utf8_is_an_error_at_its_first_bad_byte() {
    let dir = common::tmp("contract", "utf8");
    let f = dir.join("latin1.toml");
    std::fs::write(&f, b"name = \"x\"\n# caf\xe9 au lait\n[[traffic]]\nkind = \"udp\"\n").unwrap();
    let o = darkbuf(&["run", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let want = format!("darkbuf: {}:2:6: the scenario file is not UTF-8 text: the byte here is not part of a UTF-8 character", f.display());
    assert!(stderr(&o).starts_with(&want), "{}", stderr(&o));
}
