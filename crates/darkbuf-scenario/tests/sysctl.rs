//! `[sysctl]` (issue 53): the kernel's sysctl names set the defaults of the traffic keys
//! that stand for them, an entry's own key wins, `--set sysctl.NAME=V` takes the dotted
//! name whole, and what the model cannot honour is refused with its position.

mod common;

use common::{err, err_set, ok_set};
use darkbuf_scenario::{Cc, Traffic};

const BASE: &str = "duration = \"1s\"\n[device]\ndriver = \"veth\"\n[qdisc]\nkind = \"pfifo\"\n";

fn tcp(s: &darkbuf_scenario::Scenario, i: usize) -> &darkbuf_scenario::TcpFlow {
    match &s.traffic[i] {
        Traffic::Tcp(t) => t,
        t => panic!("traffic.{i} is {t:?}"),
    }
}

#[test]
fn sysctls_set_the_defaults_and_an_entry_key_wins() {
    let text = format!(
        "{BASE}[sysctl]\n\"net.ipv4.tcp_limit_output_bytes\" = 65536\n\"net.ipv4.tcp_wmem\" = \"4096 16384 1048576\"\n\
         \"net.ipv4.tcp_rmem\" = [4096, 131072, 2097152]\n\"net.ipv4.tcp_ecn\" = 1\n\"net.ipv4.tcp_congestion_control\" = \"bbr\"\n\
         \"net.core.wmem_default\" = 1000000\n\
         [[traffic]]\nkind = \"tcp\"\n[[traffic]]\nkind = \"tcp\"\ncc = \"reno\"\necn = false\nsndbuf = \"2MiB\"\nlimit_output_bytes = 262144\n\
         [[traffic]]\nkind = \"udp\"\n"
    );
    let s = ok_set(&text, &[]);
    let a = tcp(&s, 0);
    assert_eq!((a.cc, a.ecn, a.sndbuf, a.rcvbuf, a.limit_output_bytes), (Cc::Bbr, true, 1_048_576, 2_097_152, 65_536));
    let b = tcp(&s, 1);
    assert_eq!((b.cc, b.ecn, b.sndbuf, b.rcvbuf, b.limit_output_bytes), (Cc::Reno, false, 2 << 20, 2_097_152, 262_144));
    match &s.traffic[2] {
        Traffic::Udp(u) => assert_eq!(u.sndbuf, 1_000_000),
        t => panic!("{t:?}"),
    }
    assert_eq!(s.sysctl["net.ipv4.tcp_wmem"], "4096\t16384\t1048576");
    assert_eq!(s.sysctl["net.ipv4.tcp_rmem"], "4096\t131072\t2097152");
    // tcp_ecn = 2 (the kernel's default) answers ECN but does not ask for it.
    let s = ok_set(&format!("{BASE}[sysctl]\n\"net.ipv4.tcp_ecn\" = 2\n[[traffic]]\nkind = \"tcp\"\n"), &[]);
    assert!(!tcp(&s, 0).ecn);
    // Without [sysctl], the model's defaults and no record.
    let s = ok_set(&format!("{BASE}[[traffic]]\nkind = \"tcp\"\n"), &[]);
    assert_eq!((tcp(&s, 0).cc, tcp(&s, 0).sndbuf, tcp(&s, 0).limit_output_bytes), (Cc::Cubic, 4 << 20, 1 << 20));
    assert!(s.sysctl.is_empty());
}

/// `net.ipv4.tcp_tso_rtt_log` sets `tso_rtt_log` (the kernel's 9 without it); an entry's
/// key wins; the sysctl is a u8.
#[test]
fn tso_rtt_log_is_the_sysctl_or_the_entry_key() {
    let s = ok_set(&format!("{BASE}[[traffic]]\nkind = \"tcp\"\n"), &[]);
    assert_eq!(tcp(&s, 0).tso_rtt_log, 9);
    let text = format!("{BASE}[sysctl]\n\"net.ipv4.tcp_tso_rtt_log\" = 0\n[[traffic]]\nkind = \"tcp\"\n[[traffic]]\nkind = \"tcp\"\ntso_rtt_log = 11\n");
    let s = ok_set(&text, &[]);
    assert_eq!((tcp(&s, 0).tso_rtt_log, tcp(&s, 1).tso_rtt_log), (0, 11));
    assert_eq!(s.sysctl["net.ipv4.tcp_tso_rtt_log"], "0");
    let d = err(&format!("{BASE}[sysctl]\n\"net.ipv4.tcp_tso_rtt_log\" = 256\n[[traffic]]\nkind = \"tcp\"\n"));
    assert!(d.to_string().contains("tcp_tso_rtt_log"), "{d}");
    let d = err(&format!("{BASE}[[traffic]]\nkind = \"tcp\"\ntso_rtt_log = -1\n"));
    assert!(d.to_string().contains("tso_rtt_log"), "{d}");
}

#[test]
fn set_takes_the_dotted_sysctl_name_whole() {
    let text = format!("{BASE}[sysctl]\n\"net.ipv4.tcp_congestion_control\" = \"bbr\"\n[[traffic]]\nkind = \"tcp\"\n");
    let s = ok_set(&text, &["sysctl.net.ipv4.tcp_congestion_control=reno", "sysctl.net.ipv4.tcp_limit_output_bytes=131072"]);
    assert_eq!((tcp(&s, 0).cc, tcp(&s, 0).limit_output_bytes), (Cc::Reno, 131_072));
    let d = err_set(&text, &["sysctl.net.ipv4.tcp_ecnn=1"]);
    assert!(d.to_string().contains("did you mean `net.ipv4.tcp_ecn`"), "{d}");
}

#[test]
fn what_the_model_cannot_honour_is_refused_where_it_is() {
    let d = err(&format!("{BASE}[sysctl]\n\"net.ipv4.tcp_wmem\" = \"4096 87380 4194304\"\n[[traffic]]\nkind = \"tcp\"\n"));
    let m = d.to_string();
    assert!(m.contains("x.toml:7:") && m.contains("reads only MAX"), "{m}");
    let d = err(&format!("{BASE}[sysctl]\n\"net.ipv4.tcp_wmem\" = \"4096 16384\"\n[[traffic]]\nkind = \"tcp\"\n"));
    assert!(d.to_string().contains("not three non-negative integers"), "{d}");
    let d = err(&format!("{BASE}[sysctl]\n\"net.core.rmem_max\" = 1\n[[traffic]]\nkind = \"tcp\"\n"));
    assert!(d.to_string().contains("unknown key `net.core.rmem_max` in [sysctl]"), "{d}");
    let d = err(&format!("{BASE}[sysctl]\n\"net.ipv4.tcp_ecn\" = 3\n[[traffic]]\nkind = \"tcp\"\n"));
    assert!(d.to_string().contains("net.ipv4.tcp_ecn"), "{d}");
}

/// `net.core.default_qdisc` (DESIGN.md's example, "fq"): the root qdisc where `[qdisc]`
/// names none, and mq's per-queue qdisc (`attach_default_qdiscs()`, `mq_init()`);
/// `[qdisc] kind` wins, veth keeps noqueue (IFF_NO_QUEUE), and a qdisc that cannot
/// start without options is refused.
#[test]
fn default_qdisc_sets_the_root_and_mqs_children() {
    let nic = "duration = \"1s\"\n[device]\ndriver = \"nic\"\n[peer]\n[path]\n[sysctl]\n\"net.core.default_qdisc\" = \"fq\"\n[[traffic]]\nkind = \"tcp\"\n";
    assert_eq!(ok_set(nic, &[]).qdisc.kind, "fq");
    assert_eq!(ok_set(nic, &["qdisc.kind=cake"]).qdisc.kind, "cake");
    let mq = ok_set(nic, &["qdisc.kind=mq"]).qdisc;
    assert_eq!((mq.kind.as_str(), mq.child.as_ref().map(|c| c.kind.as_str())), ("mq", Some("fq")));
    // txqueuelen 0: pfifo_fast would refuse it (noqueue), fq starts.
    assert_eq!(ok_set(nic, &["device.txqueuelen=0"]).qdisc.kind, "fq");
    assert_eq!(ok_set(&nic.replace("fq\"", "pfifo_fast\""), &["device.txqueuelen=0", "device.bql.enabled=false"]).qdisc.kind, "noqueue");
    let veth = "duration = \"1s\"\n[sysctl]\n\"net.core.default_qdisc\" = \"fq_codel\"\n[[traffic]]\nkind = \"udp\"\n";
    assert_eq!(ok_set(veth, &[]).qdisc.kind, "noqueue");
    let d = err(&nic.replace("\"fq\"", "\"tbf\""));
    assert!(d.message.contains("not valid") && d.help.as_deref().unwrap_or("").contains("fq_codel"), "{d}");
    assert_eq!(ok_set(nic, &[]).sysctl.get("net.core.default_qdisc").map(String::as_str), Some("fq"));
}
