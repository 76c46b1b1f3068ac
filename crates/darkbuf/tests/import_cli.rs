//! `darkbuf import --from DIR` (issue 53): a host's saved command outputs become a scenario
//! that loads, with the sysctls the model reads in `[sysctl]` and the others noted at the
//! top of the file, never dropped silently.

use std::process::Command;

fn write(dir: &std::path::Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

/// `darkbuf import --dev DEV --from DIR --out OUT`, run in DIR.
fn import(dev: &str, dir: &std::path::Path, out: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_darkbuf")).current_dir(dir).args(["import", "--dev", dev, "--from"]).arg(dir).arg("--out").arg(out).output().unwrap()
}

/// An empty directory of this test process's own, for saved outputs.
fn fresh_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("darkbuf-import-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn import_maps_the_sysctls_the_model_reads_and_notes_the_rest() {
    let dir = fresh_dir("test");
    write(&dir, "ip-link.json", r#"[{"ifname":"eth0","mtu":1500,"txqlen":1000,"num_tx_queues":1,"linkinfo":{"info_kind":"veth"}}]"#);
    write(&dir, "tc-qdisc.json", r#"[{"kind":"fq_codel","handle":"8001:","root":true,"options":{"limit":10240,"flows":1024,"quantum":1514,"target":4999,"interval":99999,"memory_limit":33554432,"ecn":true,"drop_batch":64}}]"#);
    write(
        &dir,
        "sysctl.txt",
        "net.core.default_qdisc = fq_codel\nnet.ipv4.tcp_congestion_control = bbr\nnet.ipv4.tcp_limit_output_bytes = 262144\nnet.ipv4.tcp_tso_rtt_log = 9\n\
         net.ipv4.tcp_wmem = 4096\t16384\t8388608\nnet.ipv4.tcp_rmem = 4096\t87380\t6291456\nnet.ipv4.tcp_ecn = 2\nnet.core.wmem_default = 212992\n",
    );
    let out = dir.join("host.toml");
    let o = import("eth0", &dir, &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    // Mapped: what the model reads, with the kernel's names.
    for line in [
        "\"net.ipv4.tcp_congestion_control\" = \"bbr\"",
        "\"net.ipv4.tcp_limit_output_bytes\" = 262144",
        "\"net.ipv4.tcp_tso_rtt_log\" = 9",
        "\"net.ipv4.tcp_wmem\" = \"4096 16384 8388608\"",
        "\"net.ipv4.tcp_ecn\" = 2",
        "\"net.core.default_qdisc\" = \"fq_codel\"",
    ] {
        assert!(text.contains(line), "{line} missing from:\n{text}");
    }
    // Noted: an rmem DEFAULT the model does not keep.
    assert!(text.contains("# not mapped: net.ipv4.tcp_rmem = 4096\t87380\t6291456"), "{text}");
    // No nproc.txt: no [machine] section (the default CPU count), and a note says so.
    assert!(!text.contains("[machine]"), "{text}");
    assert!(text.contains("nproc) was not read"), "{text}");
    // It loads, and the traffic takes the host's sysctls.
    let scn = darkbuf_scenario::load(&out, &[]).unwrap_or_else(|d| panic!("{d}\n{text}"));
    match &scn.traffic[0] {
        darkbuf_scenario::Traffic::Tcp(t) => {
            assert_eq!((t.cc, t.sndbuf, t.limit_output_bytes, t.ecn), (darkbuf_scenario::Cc::Bbr, 8 << 20, 262_144, false));
        }
        t => panic!("{t:?}"),
    }
    // `--out -`: the same scenario on standard output, and no file named `-`.
    let o = import("eth0", &dir, std::path::Path::new("-"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), text);
    assert!(!dir.join("-").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An igb host: its vectors' affinity becomes `irq_cpus`, `ethtool -c` becomes
/// `[device.coalesce]` (igb's tx-usecs 3 is its dynamic ITR: adaptive_tx), and the result
/// loads with those values.
#[test]
fn import_reads_a_nics_vectors_and_coalescing() {
    let dir = fresh_dir("nic");
    write(&dir, "ip-link.json", r#"[{"ifname":"eth0","mtu":1500,"txqlen":1000,"num_tx_queues":2}]"#);
    write(&dir, "ethtool-i.txt", "driver: igb\nversion: 6.1.0\n");
    write(&dir, "nproc.txt", "4\n");
    write(&dir, "tc-qdisc.json", r#"[{"kind":"pfifo_fast","handle":"0:","root":true,"options":{"bands":3,"priomap":[1,2,2,2,1,2,0,0,1,1,1,1,1,1,1,1]}}]"#);
    write(
        &dir,
        "ethtool-c.txt",
        "Coalesce parameters for eth0:\nAdaptive RX: off  TX: off\nrx-usecs: 50\nrx-frames: n/a\n\ntx-usecs: 3\ntx-frames: n/a\nCQE mode RX: n/a  TX: n/a\n",
    );
    write(
        &dir,
        "interrupts.txt",
        "           CPU0       CPU1       CPU2       CPU3\n 24:          1          0          0          0  IR-PCI-MSI 1048576-edge      eth0\n \
         26:        100          0       5000          0  IR-PCI-MSI 1048578-edge      eth0-TxRx-1\n \
         25:        100       5000          0          0  IR-PCI-MSI 1048577-edge      eth0-TxRx-0\n",
    );
    write(&dir, "irq-25.txt", "1\n");
    write(&dir, "irq-26.txt", "2-3\n");
    let out = dir.join("host.toml");
    let o = import("eth0", &dir, &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("irq_cpus = [1, 2]"), "{text}");
    assert!(text.contains("\n[machine]\ncpus = 4\n"), "{text}");
    assert!(text.contains("[device.coalesce]\nadaptive_tx = true        # igb tx-usecs 3: its dynamic ITR\nrx_usecs = 50\n"), "{text}");
    let scn = darkbuf_scenario::load(&out, &[]).unwrap_or_else(|d| panic!("{d}\n{text}"));
    assert_eq!(scn.device.irq_cpus, vec![1, 2]);
    let nic = scn.device.nic().expect("a NIC");
    assert!(nic.coalesce.adaptive_tx);
    assert_eq!(nic.coalesce.rx_usecs, 50);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// SQM's ingress shaping on a veth, as this project's 6.18 host's tc printed it: the
/// ingress qdisc, a u32 match-all redirect to `ifb4v0` (tc lists u32's head and hash
/// table before the node that acts: not filters of their own) and htb at 20 Mbit on
/// the ifb, whose class dump is text (tc has no JSON for it). The scenario holds the
/// ifb's class with its rate, and loads.
#[test]
fn import_reads_a_veths_ingress_ifb_and_its_classes() {
    let dir = fresh_dir("ifb");
    write(&dir, "ip-link.json", r#"[{"ifname":"v0","mtu":1500,"txqlen":1000,"num_tx_queues":1,"linkinfo":{"info_kind":"veth"}}]"#);
    write(&dir, "tc-qdisc.json", r#"[{"kind":"pfifo","handle":"8010:","root":true,"refcnt":3,"options":{"limit":100},"bytes":0,"packets":0,"drops":0,"overlimits":0,"requeues":0,"backlog":0,"qlen":0},{"kind":"ingress","handle":"ffff:","parent":"ffff:fff1","options":{},"bytes":0,"packets":0,"drops":0,"overlimits":0,"requeues":0,"backlog":0,"qlen":0}]"#);
    write(&dir, "tc-filter-ingress.json", r#"[{"parent":"ffff:","protocol":"all","pref":10,"kind":"u32","chain":0},{"parent":"ffff:","protocol":"all","pref":10,"kind":"u32","chain":0,"options":{"fh":"800:","ht_divisor":1}},{"parent":"ffff:","protocol":"all","pref":10,"kind":"u32","chain":0,"options":{"fh":"800::800","order":2048,"key_ht":"800","bkt":"0","not_in_hw":true,"match":{"value":"0","mask":"0","offmask":"","off":0},"actions":[{"order":1,"kind":"mirred","mirred_action":"redirect","direction":"egress","to_dev":"ifb4v0","control_action":{"type":"stolen"},"index":1,"ref":1,"bind":1}]}}]"#);
    write(&dir, "tc-qdisc-ifb4v0.json", r#"[{"kind":"htb","handle":"1:","root":true,"refcnt":2,"options":{"r2q":10,"default":"0x10","direct_packets_stat":0,"ver":"3.17","direct_qlen":32},"bytes":0,"packets":0,"drops":0,"overlimits":0,"requeues":0,"backlog":0,"qlen":0}]"#);
    write(&dir, "tc-class-ifb4v0.json", "class htb 1:10 root prio 0 quantum 200000 rate 20Mbit ceil 20Mbit linklayer ethernet burst 1600b/1 mpu 0b cburst 1600b/1 mpu 0b level 0\n");
    let out = dir.join("host.toml");
    let o = import("v0", &dir, &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("tc class add dev ifb4v0 parent 1: classid 1:10 htb rate 20000000bit ceil 20000000bit"), "{text}");
    assert!(!text.contains("without a mirred redirect"), "{text}");
    let scn = darkbuf_scenario::load(&out, &[]).unwrap_or_else(|d| panic!("{d}\n{text}"));
    let ing = scn.ingress.as_ref().expect("the ingress tree");
    assert_eq!((ing.ifb.as_str(), ing.qdisc.kind.as_str()), ("ifb4v0", "htb"));
    assert!(format!("{:?}", ing.qdisc.params).contains("20000000"), "{:?}", ing.qdisc.params);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Values darkbuf does not take, in a host's saved outputs: a 1-CPU host is written with
/// the model's 2 CPUs and a note; an MTU of 0 is the input's error (exit 2) naming the
/// file it came from, and nothing is written.
#[test]
fn import_refuses_what_the_outputs_hold_as_input_errors() {
    let dir = fresh_dir("bad");
    write(&dir, "ip-link.json", r#"[{"ifname":"eth0","mtu":1500,"txqlen":1000,"num_tx_queues":1,"linkinfo":{"info_kind":"veth"}}]"#);
    write(&dir, "nproc.txt", "1\n");
    let out = dir.join("one-cpu.toml");
    let o = import("eth0", &dir, &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("[machine]\ncpus = 2\n"), "{text}");
    assert!(text.contains("nproc 1: the model takes 2 to 64 CPUs; written as 2"), "{text}");

    write(&dir, "ip-link.json", r#"[{"ifname":"eth0","mtu":0,"txqlen":1000,"num_tx_queues":1}]"#);
    write(&dir, "ethtool-i.txt", "driver: igb\n");
    let out = dir.join("mtu0.toml");
    let o = import("eth0", &dir, &out);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("ip-link.json gives a scenario darkbuf does not take (nothing was written"), "{e}");
    assert!(e.contains("device.mtu"), "{e}");
    assert!(!out.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A saved output that is not what its command prints (a truncated copy, the wrong
/// file) is an error naming it, not read as nothing (found by a newcomer's try: random
/// bytes in ip-link.json gave a NIC scenario and exit 0).
#[test]
fn import_names_a_saved_output_that_is_not_json() {
    let dir = fresh_dir("garbage");
    write(&dir, "ip-link.json", "hello");
    let out = dir.join("x.toml");
    let o = import("eth0", &dir, &out);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("ip-link.json: "), "{e}");
    assert!(e.contains("expected the output of `ip -d -j link show dev eth0`"), "{e}");
    assert!(!out.exists());
    write(&dir, "ip-link.json", r#"{"ifname":"eth0"}"#);
    let o = import("eth0", &dir, &out);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("not a JSON array, as iproute2's -j prints"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
