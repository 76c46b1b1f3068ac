//! `[qdisc] kind = "netem"` with its child (`[qdisc.child]`), and htb leaves with
//! their own parameters (`qdisc_params`): what resolves, and where errors point.

mod common;

use common::{err, ok_set};
use darkbuf_model::params::ParamValue;

const UDP: &str = "[[traffic]]\nkind = \"udp\"\n";

#[test]
fn netem_with_a_tbf_child_resolves() {
    let s = ok_set(
        &format!("[qdisc]\nkind = \"netem\"\nloss = \"0.25%\"\nlimit = 1000\n[qdisc.child]\nkind = \"tbf\"\nrate = \"1mbit\"\nburst = 2048\nlatency = \"100ms\"\n{UDP}"),
        &[],
    );
    assert_eq!(s.qdisc.kind, "netem");
    let child = s.qdisc.child.as_deref().expect("the child");
    assert_eq!((child.kind.as_str(), child.params.iter().count()), ("tbf", 3));
    // The model takes the child as a table with its kind.
    let p = s.qdisc.model_params();
    let (_, ParamValue::Table(c)) = p.iter().find(|(k, _)| k.as_str() == "child").expect("child") else { panic!("a table") };
    assert!(c.iter().any(|(k, v)| k == "kind" && *v == ParamValue::Str("tbf".into())));
}

#[test]
fn netem_errors_point_at_the_key() {
    let d = err(&format!("[qdisc]\nkind = \"netem\"\ndelay = \"10ms\"\njitter = \"1ms 200%\"\n{UDP}"));
    assert_eq!((d.key.as_str(), d.line, d.column), ("qdisc.jitter", Some(4), Some(10)));
    assert!(d.to_string().contains("200%"), "{d}");
    let d = err(&format!("[qdisc]\nkind = \"netem\"\nreorder = \"5%\"\n{UDP}"));
    assert_eq!(d.key, "qdisc.reorder");
    assert!(d.to_string().contains("reordering not possible without specifying some delay"), "{d}");
    // The child is checked as a qdisc of its own.
    let d = err(&format!("[qdisc]\nkind = \"netem\"\n[qdisc.child]\nkind = \"tbf\"\nrate = \"1mbit\"\n{UDP}"));
    assert_eq!(d.key, "qdisc.child.burst");
    let d = err(&format!("[qdisc]\nkind = \"netem\"\n[qdisc.child]\nkind = \"tbff\"\n{UDP}"));
    assert_eq!((d.key.as_str(), d.line), ("qdisc.child.kind", Some(4)));
}

#[test]
fn htb_leaves_take_parameters() {
    let text = format!(
        "[qdisc]\nkind = \"htb\"\ndefault = \"10\"\n[[qdisc.class]]\nclassid = \"1:10\"\nrate = \"100mbit\"\nqdisc = \"fq_codel\"\nqdisc_params = {{ limit = 300, ecn = true }}\n{UDP}"
    );
    let s = ok_set(&text, &[]);
    let ParamValue::Tables(classes) = &s.qdisc.params.iter().find(|(k, _)| k.as_str() == "class").unwrap().1 else { panic!() };
    let (_, ParamValue::Table(leaf)) = classes[0].iter().find(|(k, _)| k.as_str() == "qdisc_params").unwrap() else { panic!() };
    assert_eq!(leaf.iter().count(), 2);
    // A bad leaf parameter points at itself, inside the inline table.
    let bad = text.replace("limit = 300", "limit = -3");
    let d = err(&bad);
    assert_eq!(d.key, "qdisc.class[0].qdisc_params.limit");
    assert_eq!((d.line, d.column), (Some(8), Some(26)));
    let bad = text.replace("limit = 300", "limt = 300");
    let d = err(&bad);
    assert_eq!(d.key, "qdisc.class[0].qdisc_params.limt");
    assert!(d.to_string().contains("did you mean `limit`"), "{d}");
    // A netem leaf with its delay.
    let s = ok_set(&text.replace("qdisc = \"fq_codel\"\nqdisc_params = { limit = 300, ecn = true }", "qdisc = \"netem\"\nqdisc_params = { delay = \"20ms\", loss = \"1%\" }"), &[]);
    assert_eq!(s.qdisc.kind, "htb");
}
