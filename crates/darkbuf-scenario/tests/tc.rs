//! tc as the scenario's qdisc language: `[qdisc] tc = """..."""`, `qdisc.tc_file`
//! (`darkbuf run --tc FILE`), `[peer.qdisc] tc`, and `show-tc`'s round trip over every
//! scenario in the repository.

mod common;

use common::{err, ok_set};
use darkbuf_model::params::ParamValue;
use darkbuf_scenario::tc::show::scenario_lines;
use std::path::{Path, PathBuf};

const UDP: &str = "[[traffic]]\nkind = \"udp\"\n";

fn param<'a>(p: &'a darkbuf_model::params::Params, k: &str) -> Option<&'a ParamValue> {
    p.iter().find(|(key, _)| key.as_str() == k).map(|(_, v)| v)
}

#[test]
fn htb_leaves_keep_their_parameters() {
    let s = ok_set(
        &format!(
            "[qdisc]\ntc = '''\ntc qdisc add dev eth0 root handle 1: htb default 10\ntc class add dev eth0 parent 1: classid 1:10 htb rate 100mbit\ntc qdisc add dev eth0 parent 1:10 handle 10: fq_codel limit 300 ecn\n'''\n{UDP}"
        ),
        &[],
    );
    assert_eq!(s.qdisc.kind, "htb");
    let Some(ParamValue::Tables(classes)) = param(&s.qdisc.params, "class") else { panic!("classes") };
    assert_eq!(param(&classes[0], "qdisc"), Some(&ParamValue::Str("fq_codel".into())));
    let Some(ParamValue::Table(leaf)) = param(&classes[0], "qdisc_params") else { panic!("leaf parameters") };
    assert_eq!((param(leaf, "limit"), param(leaf, "ecn")), (Some(&ParamValue::Int(300)), Some(&ParamValue::Bool(true))));
}

#[test]
fn netem_with_a_tbf_child_from_tc_lines() {
    let s = ok_set(
        &format!("[qdisc]\ntc = \"\"\"\ntc qdisc add dev eth0 root handle 1: netem loss 0.25% limit 1000\ntc qdisc add dev eth0 parent 1:1 handle 10: tbf rate 1mbit burst 2048 latency 100ms\n\"\"\"\n{UDP}"),
        &[],
    );
    assert_eq!((s.qdisc.kind.as_str(), param(&s.qdisc.params, "limit")), ("netem", Some(&ParamValue::Int(1000))));
    let c = s.qdisc.child.as_deref().expect("tbf child");
    assert_eq!((c.kind.as_str(), param(&c.params, "burst")), ("tbf", Some(&ParamValue::Int(2048))));
}

#[test]
fn bad_lines_point_at_the_word() {
    // An unknown keyword: line 4 of the file, column of `ecnn`, the valid keywords.
    let d = err(&format!("[qdisc]\ntc = '''\n# egress\ntc qdisc add dev eth0 root fq_codel limit 300 ecnn\n'''\n{UDP}"));
    assert_eq!((d.line, d.column), (Some(4), Some(47)), "{d}");
    assert!(d.to_string().contains("`ecnn` is not a keyword of fq_codel") && d.to_string().contains("noecn"), "{d}");
    // A parameter the model needs (tbf's burst): at the start of its line.
    let d = err(&format!("[qdisc]\ntc = '''\nqdisc add dev eth0 root tbf rate 1mbit\n'''\n{UDP}"));
    assert_eq!((d.line, d.column), (Some(3), Some(1)), "{d}");
    // A qdisc darkbuf does not model, a device it does not know.
    let d = err(&format!("[qdisc]\ntc = '''\ntc qdisc add dev eth0 root red limit 1000\n'''\n{UDP}"));
    assert_eq!((d.line, d.column), (Some(3), Some(28)), "{d}");
    let d = err(&format!("[qdisc]\ntc = '''\ntc qdisc add dev wlan0 root fq\n'''\n{UDP}"));
    assert_eq!((d.line, d.column), (Some(3), Some(18)), "{d}");
    assert!(d.to_string().contains("device.name"), "{d}");
    // device.name renames it.
    ok_set(&format!("[device]\nname = \"wlan0\"\n[qdisc]\ntc = '''\ntc qdisc add dev wlan0 root fq\n'''\n{UDP}"), &[]);
    // tc and TOML keys together.
    let d = err(&format!("[qdisc]\nkind = \"fq\"\ntc = 'tc qdisc add dev eth0 root fq'\n{UDP}"));
    assert_eq!(d.line, Some(2), "{d}");
}

#[test]
fn a_tc_file_reports_its_own_lines() {
    let dir = std::env::temp_dir().join(format!("darkbuf-tc-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.tc");
    std::fs::write(&f, "# egress\ntc qdisc add dev eth0 root handle 1: netem delay 10ms\n\ntc qdisc add dev eth0 parent 1:1 tbf rate 1mbit burst 2048 latenc 100ms\n").unwrap();
    let set = format!("qdisc.tc_file={}", f.display());
    let d = common::err_set(&format!("[qdisc]\nkind = \"sfq\"\n{UDP}"), &[&set]);
    assert_eq!((d.file.as_str(), d.line, d.column), (f.display().to_string().as_str(), Some(4), Some(60)), "{d}");
    // A file that is not tc at all (`tc_file = "/etc/shadow"` run as root): where, and
    // that it is not tc, without a word of the file in the message.
    for (line1, col) in [("root:$y$j9T$secret:19000:0:99999:7:::", 1), ("daemon:*:19000:0:99999:7:::", 1), ("  root secret", 3)] {
        std::fs::write(&f, format!("# a comment\n{line1}\n")).unwrap();
        let d = common::err_set(&format!("[qdisc]\nkind = \"sfq\"\n{UDP}"), &[&set]);
        assert_eq!((d.line, d.column), (Some(2), Some(col)), "{d}");
        let text = d.to_string();
        assert!(text.contains("not a tc command") && !text.contains("secret") && !text.contains("daemon"), "{text}");
    }
    // After `tc`, the word is quoted as before.
    std::fs::write(&f, "tc qdiscc add dev eth0 root fq\n").unwrap();
    let d = common::err_set(&format!("[qdisc]\nkind = \"sfq\"\n{UDP}"), &[&set]);
    assert!(d.to_string().contains("`qdiscc` is not a tc object"), "{d}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_far_host_takes_tc_lines() {
    let s = ok_set(
        &format!("[device]\ndriver = \"nic\"\nrate = \"100mbit\"\n[peer.qdisc]\ntc = 'tc qdisc add dev eth1 root cake bandwidth 50mbit besteffort'\n{UDP}"),
        &[],
    );
    let p = &s.device.wire().expect("a NIC has a far host").peer;
    assert_eq!((p.qdisc.kind.as_str(), param(&p.qdisc.params, "diffserv")), ("cake", Some(&ParamValue::Str("besteffort".into()))));
}

#[test]
fn sqm_ingress_through_an_ifb_resolves() {
    let s = ok_set(
        &format!(
            "[device]\ndriver = \"nic\"\nrate = \"100mbit\"\n[qdisc]\ntc = '''\ntc qdisc add dev eth0 root cake bandwidth 95mbit besteffort\nip link add name ifb4eth0 type ifb\ntc qdisc add dev eth0 handle ffff: ingress\ntc qdisc add dev ifb4eth0 root cake bandwidth 90mbit besteffort wash ingress\nip link set dev ifb4eth0 up\ntc filter add dev eth0 parent ffff: protocol all prio 10 u32 match u32 0 0 flowid 1:1 action mirred egress redirect dev ifb4eth0\n'''\n{UDP}"
        ),
        &[],
    );
    let i = s.ingress.expect("ingress");
    assert_eq!((i.ifb.as_str(), i.qdisc.kind.as_str(), param(&i.qdisc.params, "ingress")), ("ifb4eth0", "cake", Some(&ParamValue::Bool(true))));
}

fn scenario_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            scenario_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "toml") {
            out.push(p);
        }
    }
}

/// show-tc, parse, show-tc: the same lines, for this host's tree and the far host's,
/// for every scenario in scenarios/ and the kernel backend's.
#[test]
fn show_tc_round_trips_every_scenario() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    scenario_files(&root.join("scenarios"), &mut files);
    scenario_files(&root.join("crates/darkbuf-kernel/scenarios"), &mut files);
    files.sort();
    assert!(files.len() > 20, "{files:?}");
    let dir = std::env::temp_dir().join(format!("darkbuf-tc-roundtrip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut checked = 0;
    for f in &files {
        let scn = darkbuf_scenario::load(f, &[]).unwrap_or_else(|d| panic!("{d}"));
        for (peer, key) in [(false, "qdisc"), (true, "peer.qdisc")] {
            let Some(lines) = scenario_lines(&scn, peer) else { continue };
            let tc = dir.join(format!("{checked}.tc"));
            std::fs::write(&tc, lines.join("\n")).unwrap();
            let again = darkbuf_scenario::load(f, &[format!("{key}.tc_file={}", tc.display())]).unwrap_or_else(|d| panic!("{}: {d}\n{}", f.display(), lines.join("\n")));
            assert_eq!(scenario_lines(&again, peer).unwrap(), lines, "{} ({key})", f.display());
            checked += 1;
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(checked >= files.len());
}
