//! `darkbuf import --from DIR` (issue 53): a host's saved command outputs become a scenario
//! that loads, with the sysctls the model reads in `[sysctl]` and the others noted at the
//! top of the file, never dropped silently.

use std::process::Command;

fn write(dir: &std::path::Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

#[test]
fn import_maps_the_sysctls_the_model_reads_and_notes_the_rest() {
    let dir = std::env::temp_dir().join(format!("darkbuf-import-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    write(&dir, "ip-link.json", r#"[{"ifname":"eth0","mtu":1500,"txqlen":1000,"num_tx_queues":1,"linkinfo":{"info_kind":"veth"}}]"#);
    write(&dir, "tc-qdisc.json", r#"[{"kind":"fq_codel","handle":"8001:","root":true,"options":{"limit":10240,"flows":1024,"quantum":1514,"target":4999,"interval":99999,"memory_limit":33554432,"ecn":true,"drop_batch":64}}]"#);
    write(
        &dir,
        "sysctl.txt",
        "net.core.default_qdisc = fq_codel\nnet.ipv4.tcp_congestion_control = bbr\nnet.ipv4.tcp_limit_output_bytes = 262144\n\
         net.ipv4.tcp_wmem = 4096\t16384\t8388608\nnet.ipv4.tcp_rmem = 4096\t87380\t6291456\nnet.ipv4.tcp_ecn = 2\nnet.core.wmem_default = 212992\n",
    );
    let out = dir.join("host.toml");
    let o = Command::new(env!("CARGO_BIN_EXE_darkbuf"))
        .args(["import", "--dev", "eth0", "--from"])
        .arg(&dir)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    // Mapped: what the model reads, with the kernel's names.
    for line in [
        "\"net.ipv4.tcp_congestion_control\" = \"bbr\"",
        "\"net.ipv4.tcp_limit_output_bytes\" = 262144",
        "\"net.ipv4.tcp_wmem\" = \"4096 16384 8388608\"",
        "\"net.ipv4.tcp_ecn\" = 2",
    ] {
        assert!(text.contains(line), "{line} missing from:\n{text}");
    }
    // Noted: an rmem DEFAULT the model does not keep, and the default qdisc.
    assert!(text.contains("# not mapped: net.ipv4.tcp_rmem = 4096\t87380\t6291456"), "{text}");
    assert!(text.contains("# not mapped: net.core.default_qdisc = fq_codel"), "{text}");
    // It loads, and the traffic takes the host's sysctls.
    let scn = darkbuf_scenario::load(&out, &[]).unwrap_or_else(|d| panic!("{d}\n{text}"));
    match &scn.traffic[0] {
        darkbuf_scenario::Traffic::Tcp(t) => {
            assert_eq!((t.cc, t.sndbuf, t.limit_output_bytes, t.ecn), (darkbuf_scenario::Cc::Bbr, 8 << 20, 262_144, false));
        }
        t => panic!("{t:?}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
