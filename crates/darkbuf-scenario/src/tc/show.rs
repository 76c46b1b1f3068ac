//! A scenario's qdisc tree as the tc lines that build it (`darkbuf show-tc`): the
//! inverse of [`super::build`]. Parsing the lines gives the same tree, so showing it
//! again gives the same lines.
//!
//! Handles follow one scheme: the root qdisc is `1:`, a qdisc that something attaches
//! to gets the next of `10:`, `20:`, ... (an htb leaf, a netem's or tbf's child), and
//! htb classes keep their classids. mq's per-queue child is shown once per TX queue
//! (`parent 1:1` ... `parent 1:N`), as the kernel has one per queue.

use super::options;
use super::parse_handle;
use crate::schema::QdiscSpec;
use darkbuf_model::params::{ParamValue, Params};

/// The lines for device `dev`'s root tree `spec` (`tx_queues`: mq's children), then
/// the ingress side when `ingress` is `(ifb name, its root qdisc)`.
pub fn lines(spec: &QdiscSpec, dev: &str, tx_queues: u32, ingress: Option<(&str, &QdiscSpec)>) -> Vec<String> {
    let mut out = Vec::new();
    let mut next = Handles(0);
    qdisc_lines(spec, dev, "root", &mut next, tx_queues, &mut out);
    if let Some((ifb, q)) = ingress {
        if !ifb.starts_with("ifb") {
            out.push(format!("ip link add name {ifb} type ifb"));
        }
        out.push(format!("tc qdisc add dev {dev} handle ffff: ingress"));
        out.push(format!("tc filter add dev {dev} parent ffff: matchall action mirred egress redirect dev {ifb}"));
        qdisc_lines(q, ifb, "root", &mut Handles(0), 1, &mut out);
    }
    out
}

/// A scenario's tree as tc lines: this host's device (`device.name`) with its ingress
/// side, or with `peer` the far host's (`[peer.qdisc]`, its device also called
/// `device.name`). `None`: the scenario has no far host.
pub fn scenario_lines(scn: &crate::schema::Scenario, peer: bool) -> Option<Vec<String>> {
    let dev = scn.device.name.as_str();
    if peer {
        let p = &scn.device.wire()?.peer;
        return Some(lines(&p.qdisc, dev, p.tx_queues, None));
    }
    let ing = scn.ingress.as_ref().map(|i| (i.ifb.as_str(), &i.qdisc));
    Some(lines(&scn.qdisc, dev, scn.device.tx_queues, ing))
}

/// The handles given out: `1:` first, then `10:`, `20:`, ...
struct Handles(u16);

impl Handles {
    fn next(&mut self) -> u16 {
        self.0 += 1;
        if self.0 == 1 {
            1
        } else {
            (self.0 - 1) * 0x10
        }
    }
}

/// Whether anything attaches below `spec` (so it needs a handle).
fn has_children(spec: &QdiscSpec) -> bool {
    spec.child.is_some() || spec.params.iter().any(|(k, v)| (k == "class" && matches!(v, ParamValue::Tables(t) if !t.is_empty())) || (spec.kind == "tbf" && k == "qdisc"))
}

/// One qdisc at `at` (`root` or `parent H`) and everything below it.
fn qdisc_lines(spec: &QdiscSpec, dev: &str, at: &str, h: &mut Handles, tx_queues: u32, out: &mut Vec<String>) {
    let handle = (at == "root" || has_children(spec)).then(|| h.next());
    let mut line = format!("tc qdisc add dev {dev} {at}");
    if let Some(maj) = handle {
        line.push_str(&format!(" handle {maj:x}:"));
    }
    line.push(' ');
    line.push_str(&spec.kind);
    push_words(&mut line, options::words(&spec.kind, spec.params.iter()));
    out.push(line);
    let maj = handle.unwrap_or(0);
    match spec.kind.as_str() {
        "mq" => {
            if let Some(c) = &spec.child {
                for q in 1..=tx_queues {
                    qdisc_lines(c, dev, &format!("parent {maj:x}:{q:x}"), h, 1, out);
                }
            }
        }
        "htb" => {
            for (k, v) in spec.params.iter() {
                if let (ParamValue::Tables(classes), "class") = (v, k.as_str()) {
                    for c in classes {
                        class_lines(c, dev, maj, h, out);
                    }
                }
            }
        }
        _ => {
            if let Some(c) = &spec.child {
                qdisc_lines(c, dev, &format!("parent {maj:x}:1"), h, 1, out);
            }
            if spec.kind == "tbf" {
                if let Some((_, ParamValue::Str(kind))) = spec.params.iter().find(|(k, _)| k.as_str() == "qdisc") {
                    let leaf = QdiscSpec { kind: kind.clone(), params: Params::default(), child: None };
                    qdisc_lines(&leaf, dev, &format!("parent {maj:x}:1"), h, 1, out);
                }
            }
        }
    }
}

fn push_words(line: &mut String, words: Vec<String>) {
    for w in words {
        line.push(' ');
        if w.is_empty() || w.contains([' ', '#', ';', '"', '\'', '\\', '$']) {
            line.push_str(&format!("'{w}'"));
        } else {
            line.push_str(&w);
        }
    }
}

/// One `[[qdisc.class]]` of an htb with handle `maj:`, and its leaf qdisc.
fn class_lines(c: &Params, dev: &str, maj: u16, h: &mut Handles, out: &mut Vec<String>) {
    let get = |k: &str| c.iter().find(|(key, _)| key.as_str() == k).map(|(_, v)| v);
    let word = |v: Option<&ParamValue>| v.and_then(options::value_word);
    let parent = word(get("parent")).unwrap_or_else(|| format!("{maj:x}:"));
    let classid = word(get("classid")).unwrap_or_default();
    // A classid as tc prints it (`1:a` for `1:0a`), so the round trip is stable.
    let classid = parse_handle(&classid).map_or(classid, super::format_handle);
    let parent = parse_handle(&parent).map_or(parent, super::format_handle);
    let mut line = format!("tc class add dev {dev} parent {parent} classid {classid} htb");
    push_words(&mut line, options::words_of("htb", options::HTB_CLASS, c.iter().filter(|(k, _)| !matches!(k.as_str(), "classid" | "parent"))));
    out.push(line);
    let leaf_kind = word(get("qdisc"));
    let leaf_params = match get("qdisc_params") {
        Some(ParamValue::Table(p)) => Some(p.clone()),
        _ => None,
    };
    if leaf_kind.is_some() || leaf_params.is_some() {
        let mut params = leaf_params.unwrap_or_default();
        let child_table = params.iter().find(|(k, _)| k.as_str() == "child").map(|(_, v)| v.clone());
        let child = match child_table {
            Some(ParamValue::Table(cp)) => {
                let mut m: std::collections::BTreeMap<String, ParamValue> = params.iter().filter(|(k, _)| k.as_str() != "child").map(|(k, v)| (k.clone(), v.clone())).collect();
                params = Params::new(std::mem::take(&mut m));
                Some(Box::new(spec_of_table(&cp)))
            }
            _ => None,
        };
        let leaf = QdiscSpec { kind: leaf_kind.unwrap_or_else(|| "pfifo".into()), params, child };
        qdisc_lines(&leaf, dev, &format!("parent {classid}"), h, 1, out);
    }
}

/// A nested qdisc table (`kind` and its parameters, a `child` table of its own) as a
/// spec.
fn spec_of_table(t: &Params) -> QdiscSpec {
    let mut kind = String::from("pfifo");
    let mut child = None;
    let mut m = std::collections::BTreeMap::new();
    for (k, v) in t.iter() {
        match (k.as_str(), v) {
            ("kind", ParamValue::Str(s)) => kind = s.clone(),
            ("child", ParamValue::Table(c)) => child = Some(Box::new(spec_of_table(c))),
            _ => {
                m.insert(k.clone(), v.clone());
            }
        }
    }
    QdiscSpec { kind, params: Params::new(m), child }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tc::build::build;

    fn roundtrip(text: &str) {
        let t = build(text, Some("eth0")).unwrap();
        let ing = t.ingress.as_ref().map(|i| (i.ifb.as_str(), &i.qdisc));
        let shown = lines(t.root.as_ref().unwrap(), "eth0", 4, ing).join("\n");
        assert_eq!(shown, text.trim_end(), "shown differs from the input");
    }

    #[test]
    fn lines_parse_back_to_themselves() {
        roundtrip("tc qdisc add dev eth0 root handle 1: htb default 10\ntc class add dev eth0 parent 1: classid 1:1 htb rate 100mbit\ntc class add dev eth0 parent 1:1 classid 1:10 htb rate 90mbit ceil 100mbit prio 1\ntc qdisc add dev eth0 parent 1:10 fq_codel limit 300 ecn\n");
        roundtrip("tc qdisc add dev eth0 root handle 1: netem limit 1000 loss 0.25%\ntc qdisc add dev eth0 parent 1:1 tbf rate 1mbit burst 2048 latency 100ms\n");
        roundtrip("tc qdisc add dev eth0 root handle 1: mq\ntc qdisc add dev eth0 parent 1:1 fq_codel\ntc qdisc add dev eth0 parent 1:2 fq_codel\ntc qdisc add dev eth0 parent 1:3 fq_codel\ntc qdisc add dev eth0 parent 1:4 fq_codel");
        roundtrip("tc qdisc add dev eth0 root handle 1: cake bandwidth 95mbit besteffort\ntc qdisc add dev eth0 handle ffff: ingress\ntc filter add dev eth0 parent ffff: matchall action mirred egress redirect dev ifb4eth0\ntc qdisc add dev ifb4eth0 root handle 1: cake bandwidth 90mbit besteffort wash ingress");
    }
}
