//! A tc script as the scenario's qdisc tree ([`QdiscSpec`]): the root qdisc of this
//! host's device, htb's classes (`[[qdisc.class]]`) with their leaf qdiscs (`qdisc`,
//! `qdisc_params`), a netem's or tbf's child (`[qdisc.child]`), mq's per-queue child;
//! and the ingress side: the ingress (or clsact) qdisc, the filter that redirects what
//! arrives to an ifb (`action mirred egress redirect dev IFB`), and the ifb's root
//! qdisc tree. Handles tie the lines together, as in the kernel: a qdisc's children
//! name it by `parent MAJ:MIN`.
//!
//! Every parameter keeps the span of the words that gave it, under the key the model
//! reports an error with (`class[0].rate`, `child.burst`), so a model error points at
//! its word.

use super::cmd::{self, Attach, ClassCmd, Cmd, FilterCmd, QdiscCmd};
use super::lex::{self, Word};
use super::options::{self, Parsed};
use super::{format_handle, TcError};
use crate::schema::QdiscSpec;
use darkbuf_model::params::{ParamValue, Params};
use std::collections::BTreeMap;
use std::ops::Range;

/// The ingress side of a script: what arrives on the device goes to `ifb`, whose root
/// qdisc is `qdisc`.
#[derive(Clone, Debug)]
pub struct Ingress {
    pub ifb: String,
    pub qdisc: QdiscSpec,
}

/// A script as the scenario's trees, with the spans model errors map back to.
#[derive(Clone, Debug)]
pub struct TcTree {
    /// This host's device's root qdisc (`None`: the script has none).
    pub root: Option<QdiscSpec>,
    pub ingress: Option<Ingress>,
    /// (the model's parameter key, e.g. `class[0].rate`; its words), root tree first,
    /// then the ifb's keyed `ingress.KEY`.
    pub spans: Vec<(String, Range<usize>)>,
    /// Where the script's first word is, for errors about the whole.
    pub start: Range<usize>,
}

impl TcTree {
    /// The words of the model's parameter `key` (as `ParamError` keys it), or of the
    /// nearest qdisc that has it (`class[0].qdisc_params.x` falls back to
    /// `class[0].qdisc`, then `class[0]`, then the root's kind).
    pub fn span_of(&self, key: &str) -> Range<usize> {
        let mut k = key.to_string();
        loop {
            if let Some((_, s)) = self.spans.iter().find(|(p, _)| *p == k) {
                return s.clone();
            }
            match k.rfind(['.', '[']) {
                Some(i) => k.truncate(i),
                None => break,
            }
            let kind = format!("{k}.kind");
            if let Some((_, s)) = self.spans.iter().find(|(p, _)| *p == kind) {
                return s.clone();
            }
        }
        self.spans.iter().find(|(p, _)| p == "kind").map_or(self.start.clone(), |(_, s)| s.clone())
    }
}

/// The lines of one device.
#[derive(Default)]
struct Dev {
    qdiscs: Vec<QdiscCmd>,
    classes: Vec<ClassCmd>,
    filters: Vec<FilterCmd>,
}

/// Parses `text` for this host's device `dev_name` (and the ifbs its ingress names).
/// `None` (the far host's `[peer.qdisc]`): the device is the one the lines name that
/// is not an ifb.
pub fn build(text: &str, dev_name: Option<&str>) -> Result<TcTree, TcError> {
    let mut devs: BTreeMap<String, Dev> = BTreeMap::new();
    let mut ifbs: Vec<String> = Vec::new();
    let lines = lex::lines(text)?;
    let start = lines.first().and_then(|l| l.first()).map_or(0..0, |w| w.span.clone());
    let cmds = lines.iter().map(|l| cmd::parse(l)).collect::<Result<Vec<Cmd>, TcError>>()?;
    let dev_of = |c: &Cmd| match c {
        Cmd::Qdisc(q) => q.dev.text.clone(),
        Cmd::Class(c) => c.dev.text.clone(),
        Cmd::Filter(f) => f.dev.text.clone(),
        Cmd::IfbLink(w) => w.text.clone(),
    };
    let dev_name = match dev_name {
        Some(d) => d.to_string(),
        None => cmds.iter().filter(|c| !matches!(c, Cmd::IfbLink(_))).map(dev_of).find(|d| !d.starts_with("ifb")).unwrap_or_else(|| "eth0".into()),
    };
    let dev_name = dev_name.as_str();
    for c in cmds {
        let dev = match &c {
            Cmd::Qdisc(q) => &q.dev,
            Cmd::Class(c) => &c.dev,
            Cmd::Filter(f) => &f.dev,
            Cmd::IfbLink(w) => {
                check_dev(w, dev_name, &ifbs, true)?;
                ifbs.push(w.text.clone());
                continue;
            }
        };
        check_dev(dev, dev_name, &ifbs, false)?;
        let d = devs.entry(dev.text.clone()).or_default();
        match c {
            Cmd::Qdisc(q) => d.qdiscs.push(q),
            Cmd::Class(c) => d.classes.push(c),
            Cmd::Filter(f) => d.filters.push(f),
            Cmd::IfbLink(_) => unreachable!("handled above"),
        }
    }
    let mut spans = Vec::new();
    let main = devs.remove(dev_name).unwrap_or_default();
    let ingress = ingress(&main, &mut devs, &mut spans)?;
    let root = tree(&main, "", &mut spans)?;
    if let Some((name, d)) = devs.iter().next() {
        let w = d.qdiscs.first().map(|q| &q.dev).or(d.classes.first().map(|c| &c.dev)).or(d.filters.first().map(|f| &f.dev));
        let span = w.map_or(start.clone(), |w| w.span.clone());
        return Err(TcError::new(span, format!("dev {name}: no ingress filter of {dev_name} redirects to it"), format!("tc filter add dev {dev_name} parent ffff: matchall action mirred egress redirect dev {name}")));
    }
    Ok(TcTree { root, ingress, spans, start })
}

/// A device name is this host's (`device.name`), or an ifb (`ifbN`, or one an `ip
/// link add ... type ifb` line created).
fn check_dev(w: &Word, dev_name: &str, ifbs: &[String], creating: bool) -> Result<(), TcError> {
    if w.text == dev_name || ifbs.contains(&w.text) || w.text.starts_with("ifb") || creating {
        return Ok(());
    }
    Err(TcError::new(
        w.span.clone(),
        format!("dev {}: this host's device is {dev_name} (device.name)", w.text),
        format!("dev {dev_name}, an ifb (ifb0, or one created by `ip link add NAME type ifb`), or set device.name = \"{}\"", w.text),
    ))
}

/// The root qdisc tree of one device's lines (`None` without a root qdisc). Keys of
/// its spans start with `prefix`.
fn tree(d: &Dev, prefix: &str, spans: &mut Vec<(String, Range<usize>)>) -> Result<Option<QdiscSpec>, TcError> {
    let mut roots = d.qdiscs.iter().filter(|q| q.attach == Attach::Root);
    let Some(root) = roots.next() else {
        if let Some(q) = d.qdiscs.iter().find(|q| matches!(q.attach, Attach::Parent(..))) {
            return Err(TcError::new(q.attach_span.clone(), format!("parent of {} is not a qdisc or class of this script", q.kind.text), "add the root qdisc first: tc qdisc add dev DEV root handle 1: ..."));
        }
        if let Some(c) = d.classes.first() {
            return Err(TcError::new(c.parent_span.clone(), "a class without a root qdisc", "tc qdisc add dev DEV root handle 1: htb ..."));
        }
        return Ok(None);
    };
    if let Some(again) = roots.next() {
        return Err(TcError::new(again.attach_span.clone(), "a second root qdisc on the device", "one `root` qdisc per device; children name its handle with `parent`"));
    }
    let mut used = vec![root.kind.span.start];
    let spec = qdisc(d, root, prefix, spans, &mut used)?;
    // Every line must have found its place.
    for q in d.qdiscs.iter().filter(|q| matches!(q.attach, Attach::Parent(..))) {
        if !used.contains(&q.kind.span.start) {
            let Attach::Parent(maj, min) = q.attach else { continue };
            return Err(TcError::new(q.attach_span.clone(), format!("no qdisc or class {} to attach {} to", format_handle((maj, min)), q.kind.text), "the handle of a qdisc (its class MAJ:1 for netem and tbf, MAJ:N for mq's queue N) or an htb classid"));
        }
    }
    for c in &d.classes {
        if !used.contains(&c.kind.span.start) {
            return Err(TcError::new(c.parent_span.clone(), format!("no htb qdisc {} for class {}", format_handle((c.parent.0, 0)), format_handle(c.classid)), "classes attach to an htb qdisc's handle (parent 1:) or to its classes (parent 1:1)"));
        }
    }
    Ok(Some(spec))
}

/// One qdisc line and what hangs below it, as a [`QdiscSpec`].
fn qdisc(d: &Dev, q: &QdiscCmd, prefix: &str, spans: &mut Vec<(String, Range<usize>)>, used: &mut Vec<usize>) -> Result<QdiscSpec, TcError> {
    let kind = q.kind.text.as_str();
    let opts = options::table(kind).ok_or_else(|| {
        TcError::new(q.kind.span.clone(), format!("qdisc `{kind}` is not one darkbuf models"), format!("one of {}", darkbuf_model::qdisc::ALL_KINDS.join(", ")))
    })?;
    spans.push((format!("{prefix}kind"), q.kind.span.clone()));
    let mut params = to_params(options::parse(kind, opts, &q.opts)?, prefix, spans);
    let handle = q.handle.map(|h| h.0);
    let children: Vec<&QdiscCmd> = d.qdiscs.iter().filter(|c| matches!(c.attach, Attach::Parent(maj, _) if Some(maj) == handle)).collect();
    let classes: Vec<&ClassCmd> = d.classes.iter().filter(|c| Some(c.parent.0) == handle).collect();
    let mut spec = QdiscSpec { kind: kind.into(), params: Params::default(), child: None };
    match kind {
        "htb" => {
            let mut tables = Vec::new();
            for (i, c) in classes.iter().enumerate() {
                tables.push(class(d, c, i, &format!("{prefix}class[{i}]."), spans, used)?);
            }
            if !tables.is_empty() {
                params.insert("class".into(), ParamValue::Tables(tables));
            }
        }
        "netem" | "tbf" | "mq" => {
            if let Some(c) = classes.first() {
                return Err(TcError::new(c.kind.span.clone(), format!("{kind} has no classes to add"), format!("attach a qdisc to {kind}'s class with `parent {}1`", format_handle((handle.unwrap_or(1), 0)))));
            }
            let mut kids = Vec::new();
            for c in &children {
                used.push(c.kind.span.start);
                kids.push((c, qdisc(d, c, &format!("{prefix}child."), spans, used)?));
            }
            if kind == "mq" {
                spec.child = mq_child(&kids)?;
            } else if let Some((c, child)) = kids.first() {
                if let Some((c2, _)) = kids.get(1) {
                    return Err(TcError::new(c2.attach_span.clone(), format!("a second child of {kind} ({} is already attached)", c.kind.text), format!("{kind} has one child qdisc")));
                }
                if kind == "tbf" {
                    // tbf's child is the model's `qdisc = "KIND"`, with its defaults.
                    if let Some(w) = c.opts.first() {
                        return Err(TcError::new(w.span.start..c.opts.last().map_or(w.span.end, |l| l.span.end), format!("options on tbf's child {}: darkbuf's tbf takes its child with the kind's defaults", c.kind.text), format!("tc qdisc add ... parent {}1 {}", format_handle((handle.unwrap_or(1), 0)), c.kind.text)));
                    }
                    params.insert("qdisc".into(), ParamValue::Str(child.kind.clone()));
                    spans.push((format!("{prefix}qdisc"), c.kind.span.clone()));
                } else {
                    spec.child = Some(Box::new(child.clone()));
                }
            }
        }
        _ => {
            if let Some(c) = children.first().map(|c| c.attach_span.clone()).or(classes.first().map(|c| c.parent_span.clone())) {
                return Err(TcError::new(c, format!("{kind} is classless: nothing attaches below it"), "children attach to htb classes, or to netem's, tbf's or mq's class"));
            }
        }
    }
    spec.params = Params::new(params);
    Ok(spec)
}

/// mq's children: one per TX queue, all alike (the model runs one child spec per queue).
fn mq_child(kids: &[(&&QdiscCmd, QdiscSpec)]) -> Result<Option<Box<QdiscSpec>>, TcError> {
    let Some((_, first)) = kids.first() else { return Ok(None) };
    for (c, k) in &kids[1..] {
        if k.kind != first.kind || k.params != first.params {
            return Err(TcError::new(c.kind.span.clone(), format!("mq's children differ ({} here, {} on the first queue)", k.kind, first.kind), "the same qdisc and options on every queue (the model has one per-queue child)"));
        }
    }
    Ok(Some(Box::new(first.clone())))
}

/// One htb class and its leaf qdisc, as a `[[qdisc.class]]` table.
fn class(d: &Dev, c: &ClassCmd, i: usize, prefix: &str, spans: &mut Vec<(String, Range<usize>)>, used: &mut Vec<usize>) -> Result<Params, TcError> {
    if c.kind.text != "htb" {
        return Err(TcError::new(c.kind.span.clone(), format!("class kind `{}` under htb", c.kind.text), "htb"));
    }
    let _ = i;
    used.push(c.kind.span.start);
    let mut params = to_params(options::parse("htb class", options::HTB_CLASS, &c.opts)?, prefix, spans);
    params.insert("classid".into(), ParamValue::Str(format_handle(c.classid)));
    spans.push((format!("{prefix}classid"), c.classid_span.clone()));
    if c.parent.1 != 0 {
        params.insert("parent".into(), ParamValue::Str(format_handle(c.parent)));
        spans.push((format!("{prefix}parent"), c.parent_span.clone()));
    }
    let leaves: Vec<&QdiscCmd> = d.qdiscs.iter().filter(|q| q.attach == Attach::Parent(c.classid.0, c.classid.1)).collect();
    if let Some(leaf) = leaves.first() {
        if let Some(l2) = leaves.get(1) {
            return Err(TcError::new(l2.attach_span.clone(), format!("a second qdisc on class {}", format_handle(c.classid)), "one leaf qdisc per class"));
        }
        used.push(leaf.kind.span.start);
        spans.push((format!("{prefix}qdisc"), leaf.kind.span.clone()));
        let spec = qdisc(d, leaf, &format!("{prefix}qdisc_params."), spans, used)?;
        params.insert("qdisc".into(), ParamValue::Str(spec.kind.clone()));
        let leaf_params = spec.model_params();
        if !leaf_params.is_empty() {
            params.insert("qdisc_params".into(), ParamValue::Table(leaf_params));
        }
    }
    Ok(Params::new(params))
}

/// Parsed options as a parameter map, their spans recorded under `prefix`.
fn to_params(parsed: Vec<Parsed>, prefix: &str, spans: &mut Vec<(String, Range<usize>)>) -> BTreeMap<String, ParamValue> {
    let mut m = BTreeMap::new();
    for p in parsed {
        spans.push((format!("{prefix}{}", p.key), p.span));
        m.insert(p.key, p.value);
    }
    m
}

/// The ingress side: the device's ingress or clsact qdisc, the filter that redirects
/// to an ifb, and that ifb's tree (taken out of `devs`).
fn ingress(main: &Dev, devs: &mut BTreeMap<String, Dev>, spans: &mut Vec<(String, Range<usize>)>) -> Result<Option<Ingress>, TcError> {
    let hook = main.qdiscs.iter().find(|q| matches!(q.attach, Attach::Ingress | Attach::Clsact));
    let mut redirect = None;
    for f in &main.filters {
        let at_ingress = matches!(f.parent, Some((0xffff, _)));
        let (Some(_), true) = (hook, at_ingress) else {
            return Err(TcError::new(
                f.kind.span.clone(),
                format!("a {} filter: darkbuf models the filters that redirect ingress to an ifb; classify egress traffic with [[traffic]] priority = \"1:10\" instead", f.kind.text),
                "tc qdisc add dev DEV handle ffff: ingress, then tc filter add dev DEV parent ffff: matchall action mirred egress redirect dev ifb0",
            ));
        };
        let ifb = filter_redirect(f)?;
        if redirect.is_some() {
            return Err(TcError::new(f.kind.span.clone(), "a second ingress filter", "one filter that redirects everything to the ifb"));
        }
        redirect = Some(ifb);
    }
    match (hook, redirect) {
        (None, _) => Ok(None),
        (Some(q), None) => Err(TcError::new(q.kind.span.clone(), format!("an {} qdisc without a filter that redirects to an ifb", q.kind.text), "tc filter add dev DEV parent ffff: matchall action mirred egress redirect dev ifb0")),
        (Some(_), Some(ifb)) => {
            let d = devs.remove(&ifb.text).unwrap_or_default();
            let qdisc = tree(&d, "ingress.", spans)?.ok_or_else(|| TcError::new(ifb.span.clone(), format!("no root qdisc on {}", ifb.text), format!("tc qdisc add dev {} root cake bandwidth 90mbit", ifb.text)))?;
            Ok(Some(Ingress { ifb: ifb.text, qdisc }))
        }
    }
}

/// The ifb a filter redirects everything to: `matchall`, or `u32 match u32 0 0` (with
/// any `flowid`), then `action mirred egress redirect dev IFB`.
fn filter_redirect(f: &FilterCmd) -> Result<Word, TcError> {
    let w: Vec<&str> = f.opts.iter().map(|x| x.text.as_str()).collect();
    let action = w.iter().position(|x| *x == "action").ok_or_else(|| TcError::new(f.kind.span.clone(), "an ingress filter without an action", "action mirred egress redirect dev ifb0"))?;
    let matches_all = match f.kind.text.as_str() {
        "matchall" => true,
        "u32" => {
            let sel: Vec<&str> = w[..action].iter().copied().filter(|x| !["flowid", "classid"].contains(x)).collect();
            sel.starts_with(&["match", "u32", "0", "0"]) && sel.len() <= 5
        }
        _ => false,
    };
    if !matches_all {
        return Err(TcError::new(f.kind.span.clone(), format!("a {} filter that does not match everything", f.kind.text), "matchall, or u32 match u32 0 0, redirecting all ingress traffic"));
    }
    let rest = &f.opts[action..];
    let t: Vec<&str> = rest.iter().map(|x| x.text.as_str()).collect();
    match t.as_slice() {
        ["action", "mirred", "egress", "redirect", "dev", _] => Ok(rest[5].clone()),
        _ => Err(TcError::new(rest[0].span.start..rest.last().map_or(0, |x| x.span.end), "an action darkbuf does not model at ingress", "action mirred egress redirect dev IFB")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn htb_with_leaves_netem_with_a_child() {
        let t = build(
            "tc qdisc add dev eth0 root handle 1: htb default 10\n\
             tc class add dev eth0 parent 1: classid 1:1 htb rate 100mbit\n\
             tc class add dev eth0 parent 1:1 classid 1:10 htb rate 90mbit ceil 100mbit prio 1\n\
             tc qdisc add dev eth0 parent 1:10 handle 10: fq_codel limit 300 ecn\n",
            Some("eth0"),
        )
        .unwrap();
        let root = t.root.clone().unwrap();
        assert_eq!(root.kind, "htb");
        let ParamValue::Tables(classes) = &root.params.iter().find(|(k, _)| *k == "class").unwrap().1 else { panic!() };
        assert_eq!(classes.len(), 2);
        let leaf = classes[1].iter().find(|(k, _)| *k == "qdisc_params").unwrap().1;
        assert!(matches!(leaf, ParamValue::Table(p) if p.iter().count() == 2));
        // The model's key for the leaf's limit points at `limit 300`.
        assert_eq!(t.span_of("class[1].qdisc_params.limit"), 249..258);

        let t = build("qdisc add dev eth0 root handle 1: netem loss 0.25% limit 1000\nqdisc add dev eth0 parent 1:1 handle 10: tbf rate 1mbit burst 2048 latency 100ms\n", Some("eth0")).unwrap();
        let root = t.root.unwrap();
        assert_eq!((root.kind.as_str(), root.child.unwrap().kind.as_str()), ("netem", "tbf"));
    }

    #[test]
    fn sqm_ingress_through_an_ifb() {
        let t = build(
            "tc qdisc add dev eth0 root cake bandwidth 95mbit besteffort\n\
             ip link add name ifb4eth0 type ifb\n\
             tc qdisc add dev eth0 handle ffff: ingress\n\
             tc qdisc add dev ifb4eth0 root cake bandwidth 90mbit besteffort wash ingress\n\
             ip link set dev ifb4eth0 up\n\
             tc filter add dev eth0 parent ffff: protocol all prio 10 u32 match u32 0 0 flowid 1:1 action mirred egress redirect dev ifb4eth0\n",
            Some("eth0"),
        )
        .unwrap();
        let ing = t.ingress.unwrap();
        assert_eq!((ing.ifb.as_str(), ing.qdisc.kind.as_str()), ("ifb4eth0", "cake"));
        assert_eq!(t.root.unwrap().kind, "cake");
    }

    #[test]
    fn errors_name_the_word() {
        let e = build("tc qdisc add dev eth1 root fq", Some("eth0")).unwrap_err();
        assert_eq!(e.span, 17..21);
        let e = build("tc qdisc add dev eth0 root handle 1: fq_codel\ntc qdisc add dev eth0 parent 1:1 pfifo", Some("eth0")).unwrap_err();
        assert!(e.message.contains("classless"), "{e:?}");
        let e = build("tc qdisc add dev eth0 root red limit 1000", Some("eth0")).unwrap_err();
        assert_eq!((e.span.clone(), e.message.contains("red")), (27..30, true));
        let e = build("tc filter add dev eth0 parent 1: protocol ip u32 match ip dport 22 0xffff flowid 1:10", Some("eth0")).unwrap_err();
        assert!(e.message.contains("priority"), "{e:?}");
    }
}
