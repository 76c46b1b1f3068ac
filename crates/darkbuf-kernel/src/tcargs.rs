//! The scenario's `[qdisc]` as `tc` command lines.
//!
//! The scenario already uses tc's parameter names, so most parameters pass through as
//! `KEY VALUE`: integers and strings ("5ms", "20mbit", "1514b") as written, `true` as
//! the bare flag (sfq's `headdrop`), `false` as tc's negation where tc has one
//! (`noecn`) and otherwise omitted (tc's default is off). Two kinds of keys need care:
//!
//! - *Model options* choose between kernel generations in the simulator
//!   (`pfifo_fast.limit_mode`, `sfq.allot_mode`, fq's `version` and
//!   `fastpath_when_behind`); the running kernel has exactly one
//!   behaviour, so the key is dropped when it names that behaviour and the run exits 3
//!   when it names the other one.
//! - *Tables*: htb's `[[qdisc.class]]` become `tc class add` lines (`classid`, `parent`
//!   and the class's own parameters).
//!
//! `mq` gets `handle 1:` and one child qdisc per TX queue at `parent 1:<n>` (n from 1,
//! in hex as tc writes class minors).

use crate::error::{KernelError, Result};
use crate::KernelVersion;
use darkbuf_model::params::{ParamValue, Params};
use darkbuf_scenario::QdiscSpec;

/// A darkbuf model option: (qdisc kind, key, the value this kernel implements).
pub fn model_option(kind: &str, key: &str, kv: KernelVersion) -> Option<&'static str> {
    match (kind, key) {
        // pfifo_fast became three skb_arrays of tx_queue_len each in 4.16.
        ("pfifo_fast", "limit_mode") => Some(if kv >= KernelVersion(4, 16, 0) { "per-band" } else { "total" }),
        // "net_sched: sch_sfq: handle bigger packets" (6.13): allot counted in bytes.
        ("sfq", "allot_mode") => Some(if kv >= KernelVersion(6, 13, 0) { "bytes" } else { "scaled" }),
        // fq's bands, fast path and always-on GC came in 6.7.
        ("fq", "version") => Some(if kv >= KernelVersion(6, 7, 0) { "6.7" } else { "6.6" }),
        // "net_sched: sch_fq: don't follow the fast path if Tx is behind now" (2024-11-22)
        // is in 6.13; the 6.7-6.12 releases lack it (a stable update of one of them may
        // carry it, which the version cannot show).
        ("fq", "fastpath_when_behind") => Some(if kv >= KernelVersion(6, 13, 0) { "false" } else { "true" }),
        _ => None,
    }
}

/// tc's negated flag for a boolean parameter set to false, where it has one.
fn negation(kind: &str, key: &str) -> Option<&'static str> {
    match (kind, key) {
        ("fq_codel" | "codel" | "fq_pie" | "pie", "ecn") => Some("noecn"),
        ("fq_pie" | "pie", "bytemode") => Some("nobytemode"),
        ("fq_pie" | "pie", "dq_rate_estimator") => Some("no_dq_rate_estimator"),
        ("fq", "pacing") => Some("nopacing"),
        ("cake", "split_gso") => Some("no-split-gso"),
        _ => None,
    }
}

fn value_str(v: &ParamValue) -> Option<String> {
    match v {
        ParamValue::Int(i) => Some(i.to_string()),
        ParamValue::Float(f) => Some(f.to_string()),
        ParamValue::Str(s) => Some(s.clone()),
        ParamValue::Bool(_) | ParamValue::Tables(_) | ParamValue::Table(_) => None,
    }
}

/// netem's parameters as tc's words: `delay D [J [C]]` (the jitter and its correlation
/// follow the delay), the others as `KEY WORDS...` with a value of several words split
/// (`loss random 1% 25%`, `rate 10mbit 20`), `ecn` as a flag.
fn netem_args(params: &Params) -> Vec<String> {
    let mut out = Vec::new();
    let words = |v: &ParamValue| value_str(v).map(|s| s.split_whitespace().map(str::to_string).collect::<Vec<_>>()).unwrap_or_default();
    let get = |k: &str| params.iter().find(|(key, _)| key.as_str() == k).map(|(_, v)| v);
    if get("delay").is_some() || get("jitter").is_some() {
        out.push("delay".to_string());
        out.extend(get("delay").map_or(vec!["0ms".to_string()], words));
        out.extend(get("jitter").map(words).unwrap_or_default());
    }
    for (k, v) in params.iter() {
        match (k.as_str(), v) {
            ("delay" | "jitter" | "child", _) => {}
            (_, ParamValue::Bool(true)) => out.push(k.clone()),
            (_, ParamValue::Bool(false)) => {}
            _ => {
                out.push(k.clone());
                out.extend(words(v));
            }
        }
    }
    out
}

/// `KEY VALUE ...` for `kind`'s scalar parameters (tables are left to the caller).
pub fn param_args(kind: &str, params: &Params, kv: KernelVersion) -> Result<Vec<String>> {
    if kind == "netem" {
        return Ok(netem_args(params));
    }
    // cake takes bare keywords for its groups (`diffserv4`, `ack-filter`, `ptm`, `nowash`),
    // not `KEY VALUE`: the words `darkbuf show-tc` prints.
    if kind == "cake" {
        return Ok(darkbuf_scenario::tc::options::words(kind, params.iter()));
    }
    let mut out = Vec::new();
    for (k, v) in params.iter() {
        if let Some(native) = model_option(kind, k, kv) {
            let wanted = match v {
                ParamValue::Str(s) => s.to_ascii_lowercase(),
                other => other.to_string(),
            };
            if wanted != native {
                return Err(KernelError::Unavailable(format!(
                    "qdisc.{k} = \"{wanted}\" is a simulator option for older or newer kernels; kernel {kv} implements \
                     {kind} {k} \"{native}\" only (set qdisc.{k} = \"{native}\" or remove it)"
                )));
            }
            continue;
        }
        match v {
            ParamValue::Bool(true) => out.push(k.clone()),
            ParamValue::Bool(false) => {
                if let Some(n) = negation(kind, k) {
                    out.push(n.to_string());
                }
            }
            ParamValue::Tables(_) | ParamValue::Table(_) => {}
            // tbf's child (`qdisc = "KIND"`) is a qdisc of its own, grafted at 1:1.
            ParamValue::Str(_) if kind == "tbf" && k == "qdisc" => {}
            // htb's `default` is a class minor: the simulator reads an integer as the
            // number it is (and a string as hex), tc always as hex.
            ParamValue::Int(i) if kind == "htb" && k == "default" => {
                out.push(k.clone());
                out.push(format!("{i:x}"));
            }
            other => {
                out.push(k.clone());
                out.push(value_str(other).unwrap_or_default());
            }
        }
    }
    Ok(out)
}

/// The tc commands (arguments after `tc`) that install `spec` as the root qdisc of
/// `dev`, which has `tx_queues` TX queues.
pub fn qdisc_commands(dev: &str, spec: &QdiscSpec, tx_queues: u32, kv: KernelVersion) -> Result<Vec<Vec<String>>> {
    let s = |x: &str| x.to_string();
    let mut cmds = Vec::new();
    match spec.kind.as_str() {
        "noqueue" => cmds.push(vec![s("qdisc"), s("replace"), s("dev"), s(dev), s("root"), s("noqueue")]),
        "mq" => {
            cmds.push(vec![s("qdisc"), s("replace"), s("dev"), s(dev), s("root"), s("handle"), s("1:"), s("mq")]);
            let child = spec.child.as_deref();
            for q in 1..=tx_queues {
                let mut c = vec![s("qdisc"), s("replace"), s("dev"), s(dev), s("parent"), format!("1:{q:x}")];
                match child {
                    Some(ch) => {
                        if ch.params.iter().any(|(_, v)| matches!(v, ParamValue::Tables(_))) {
                            return Err(KernelError::Unavailable(format!(
                                "an mq child {} with classes is not supported by the kernel backend",
                                ch.kind
                            )));
                        }
                        c.push(ch.kind.clone());
                        c.extend(param_args(&ch.kind, &ch.params, kv)?);
                    }
                    None => c.push(s("pfifo_fast")),
                }
                cmds.push(c);
            }
        }
        kind => {
            let mut root = vec![s("qdisc"), s("replace"), s("dev"), s(dev), s("root"), s("handle"), s("1:"), s(kind)];
            root.extend(param_args(kind, &spec.params, kv)?);
            cmds.push(root);
            cmds.extend(child_commands(dev, spec, kv)?);
            for (key, v) in spec.params.iter() {
                let ParamValue::Tables(tables) = v else { continue };
                if key != "class" {
                    return Err(KernelError::Unavailable(format!(
                        "qdisc.{key}: the kernel backend only knows [[qdisc.class]] tables (tc class add)"
                    )));
                }
                for (i, t) in tables.iter().enumerate() {
                    cmds.extend(class_command(dev, kind, t, kv).map_err(|e| e.context(&format!("qdisc.class[{i}]")))?);
                }
            }
        }
    }
    Ok(cmds)
}

/// A single-child qdisc's child at `parent 1:1` (netem's `[qdisc.child]`, tbf's
/// `qdisc = "KIND"` with its defaults), with `handle 10:`, and that child's own child
/// (a tbf under a netem) at `parent 10:1` with `handle 20:`.
fn child_commands(dev: &str, spec: &QdiscSpec, kv: KernelVersion) -> Result<Vec<Vec<String>>> {
    let mut out = Vec::new();
    let mut parent = spec.clone();
    for depth in 1.. {
        let child = match (parent.kind.as_str(), parent.child.as_deref()) {
            ("netem", Some(c)) => c.clone(),
            ("tbf", _) => match parent.params.iter().find(|(k, _)| k.as_str() == "qdisc").and_then(|(_, v)| value_str(v)) {
                Some(kind) => QdiscSpec { kind, params: Params::default(), child: None },
                None => break,
            },
            _ => break,
        };
        if child.params.iter().any(|(_, v)| matches!(v, ParamValue::Tables(_))) {
            return Err(KernelError::Unavailable(format!("a {} child with classes is not supported by the kernel backend", child.kind)));
        }
        // The root is 1:, its child 10:, that one's 20:, ...
        let parent_major = if depth == 1 { 1 } else { (depth - 1) * 10 };
        let mut c = vec!["qdisc".to_string(), "replace".into(), "dev".into(), dev.into(), "parent".into(), format!("{parent_major}:1")];
        c.extend(["handle".to_string(), format!("{}:", depth * 10), child.kind.clone()]);
        c.extend(param_args(&child.kind, &child.params, kv)?);
        out.push(c);
        parent = child;
    }
    Ok(out)
}

/// `tc class replace dev DEV parent P classid C KIND params...` for one `[[qdisc.class]]`,
/// then, when the class names a leaf `qdisc = "KIND"`, `tc qdisc replace dev DEV parent C
/// KIND` with that kind's defaults (the simulator's meaning; without it the kernel gives
/// a leaf pfifo with limit = txqueuelen, `qdisc_create_dflt()`, as the simulator does).
fn class_command(dev: &str, kind: &str, t: &Params, kv: KernelVersion) -> Result<Vec<Vec<String>>> {
    let mut rest = Params::default();
    let mut classid = None;
    let mut parent = None;
    let mut leaf = None;
    let mut leaf_params = None;
    let mut map = std::collections::BTreeMap::new();
    for (k, v) in t.iter() {
        match (k.as_str(), v) {
            ("classid", v) => classid = value_str(v),
            ("parent", v) => parent = value_str(v),
            ("qdisc", v) => leaf = value_str(v),
            ("qdisc_params", ParamValue::Table(p)) => leaf_params = Some(p.clone()),
            _ => {
                map.insert(k.clone(), v.clone());
            }
        }
    }
    if !map.is_empty() {
        rest = Params::new(map);
    }
    let classid = classid.ok_or_else(|| KernelError::Input("a class needs `classid` (e.g. \"1:10\")".into()))?;
    let parent = parent.unwrap_or_else(|| "1:".into());
    let mut c = vec![
        "class".to_string(), "replace".into(), "dev".into(), dev.into(), "parent".into(), parent,
        "classid".into(), classid.clone(), kind.into(),
    ];
    c.extend(param_args(kind, &rest, kv)?);
    let mut out = vec![c];
    if leaf.is_some() || leaf_params.is_some() {
        let leaf = leaf.unwrap_or_else(|| "pfifo".into());
        let mut c = vec!["qdisc".into(), "replace".into(), "dev".into(), dev.into(), "parent".into(), classid, leaf.clone()];
        if let Some(p) = &leaf_params {
            c.extend(param_args(&leaf, p, kv)?);
        }
        out.push(c);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const KV: KernelVersion = KernelVersion(6, 18, 44);

    fn spec(kind: &str, params: &[(&str, ParamValue)]) -> QdiscSpec {
        let map: BTreeMap<String, ParamValue> = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        QdiscSpec { kind: kind.into(), params: Params::new(map), child: None }
    }

    fn line(v: &[String]) -> String {
        v.join(" ")
    }

    #[test]
    fn pfifo_limit_passes_through() {
        let c = qdisc_commands("d", &spec("pfifo", &[("limit", ParamValue::Int(100))]), 1, KV).unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(line(&c[0]), "qdisc replace dev d root handle 1: pfifo limit 100");
    }

    #[test]
    fn booleans_become_flags() {
        let c = qdisc_commands(
            "d",
            &spec("fq_codel", &[("ecn", ParamValue::Bool(false)), ("target", ParamValue::Str("5ms".into()))]),
            1,
            KV,
        )
        .unwrap();
        assert_eq!(line(&c[0]), "qdisc replace dev d root handle 1: fq_codel noecn target 5ms");
        let c = qdisc_commands("d", &spec("sfq", &[("headdrop", ParamValue::Bool(true))]), 1, KV).unwrap();
        assert_eq!(line(&c[0]), "qdisc replace dev d root handle 1: sfq headdrop");
        let c = qdisc_commands("d", &spec("sfq", &[("headdrop", ParamValue::Bool(false))]), 1, KV).unwrap();
        assert_eq!(line(&c[0]), "qdisc replace dev d root handle 1: sfq");
        // pie's and fq_pie's off switches are tc's own words (q_pie.c, q_fq_pie.c).
        let pie = spec("fq_pie", &[("bytemode", ParamValue::Bool(false)), ("dq_rate_estimator", ParamValue::Bool(false))]);
        let c = qdisc_commands("d", &pie, 1, KV).unwrap();
        assert_eq!(line(&c[0]), "qdisc replace dev d root handle 1: fq_pie nobytemode no_dq_rate_estimator");
    }

    /// cake's keyword groups as tc-cake spells them.
    #[test]
    fn cake_takes_its_keywords() {
        let s = |v: &str| ParamValue::Str(v.into());
        let cake = spec(
            "cake",
            &[
                ("bandwidth", s("90mbit")),
                ("diffserv", s("diffserv4")),
                ("ack_filter", s("ack-filter-aggressive")),
                ("wash", ParamValue::Bool(true)),
                ("atm", s("ptm")),
                ("overhead", ParamValue::Int(22)),
                ("mpu", ParamValue::Int(64)),
            ],
        );
        let c = qdisc_commands("d", &cake, 1, KV).unwrap();
        assert_eq!(line(&c[0]), "qdisc replace dev d root handle 1: cake bandwidth 90mbit diffserv4 wash ack-filter-aggressive ptm overhead 22 mpu 64");
        let c = qdisc_commands("d", &spec("cake", &[("diffserv", s("besteffort")), ("wash", ParamValue::Bool(false))]), 1, KV).unwrap();
        assert_eq!(line(&c[0]), "qdisc replace dev d root handle 1: cake besteffort nowash");
    }

    #[test]
    fn model_options_match_the_kernel_or_exit_3() {
        let ok = spec("pfifo_fast", &[("limit_mode", ParamValue::Str("per-band".into()))]);
        let c = qdisc_commands("d", &ok, 1, KV).unwrap();
        assert_eq!(line(&c[0]), "qdisc replace dev d root handle 1: pfifo_fast");
        let old = spec("pfifo_fast", &[("limit_mode", ParamValue::Str("total".into()))]);
        let e = qdisc_commands("d", &old, 1, KV).unwrap_err();
        assert_eq!(e.code(), 3);
        assert!(e.message().contains("per-band"), "{e}");
        // On a 4.15 kernel it is the other way round.
        assert!(qdisc_commands("d", &old, 1, KernelVersion(4, 15, 0)).is_ok());
        let e = qdisc_commands("d", &spec("sfq", &[("allot_mode", ParamValue::Str("scaled".into()))]), 1, KV).unwrap_err();
        assert_eq!(e.code(), 3);
        // fq's model options never reach tc: dropped when they name the kernel's own
        // behaviour, exit 3 otherwise.
        let fixed = spec("fq", &[("version", ParamValue::Str("6.7".into())), ("fastpath_when_behind", ParamValue::Bool(false))]);
        assert_eq!(line(&qdisc_commands("d", &fixed, 1, KV).unwrap()[0]), "qdisc replace dev d root handle 1: fq");
        let before = spec("fq", &[("fastpath_when_behind", ParamValue::Bool(true))]);
        let e = qdisc_commands("d", &before, 1, KV).unwrap_err();
        assert_eq!(e.code(), 3);
        assert!(e.message().contains("fastpath_when_behind \"false\""), "{e}");
        assert!(qdisc_commands("d", &before, 1, KernelVersion(6, 12, 0)).is_ok());
        let old_fq = spec("fq", &[("version", ParamValue::Float(6.6))]);
        assert_eq!(qdisc_commands("d", &old_fq, 1, KV).unwrap_err().code(), 3);
    }

    #[test]
    fn mq_gets_one_child_per_queue() {
        let mut s = spec("mq", &[]);
        s.child = Some(Box::new(spec("pfifo", &[("limit", ParamValue::Int(50))])));
        let c = qdisc_commands("d", &s, 2, KV).unwrap();
        let lines: Vec<String> = c.iter().map(|v| line(v)).collect();
        assert_eq!(
            lines,
            [
                "qdisc replace dev d root handle 1: mq",
                "qdisc replace dev d parent 1:1 pfifo limit 50",
                "qdisc replace dev d parent 1:2 pfifo limit 50",
            ]
        );
        let mut s = spec("mq", &[]);
        s.child = None;
        let c = qdisc_commands("d", &s, 1, KV).unwrap();
        assert_eq!(line(&c[1]), "qdisc replace dev d parent 1:1 pfifo_fast");
    }

    #[test]
    fn htb_classes_become_class_commands() {
        let class = |id: &str, rate: &str, leaf: Option<&str>| {
            let mut m = BTreeMap::new();
            m.insert("classid".to_string(), ParamValue::Str(id.into()));
            m.insert("rate".to_string(), ParamValue::Str(rate.into()));
            if let Some(l) = leaf {
                m.insert("qdisc".to_string(), ParamValue::Str(l.into()));
            }
            Params::new(m)
        };
        let s = spec(
            "htb",
            &[("default", ParamValue::Int(16)), ("class", ParamValue::Tables(vec![class("1:10", "20mbit", None), class("1:20", "1mbit", Some("bfifo"))]))],
        );
        let c = qdisc_commands("d", &s, 1, KV).unwrap();
        let lines: Vec<String> = c.iter().map(|v| line(v)).collect();
        assert_eq!(
            lines,
            [
                "qdisc replace dev d root handle 1: htb default 10",
                "class replace dev d parent 1: classid 1:10 htb rate 20mbit",
                "class replace dev d parent 1: classid 1:20 htb rate 1mbit",
                "qdisc replace dev d parent 1:20 bfifo",
            ]
        );
    }

    /// netem's words as tc takes them: the jitter after the delay, several-word values
    /// split, `ecn` a flag; its child at 1:1 (and a tbf's own child below it).
    #[test]
    fn netem_and_its_children() {
        let s = |v: &str| ParamValue::Str(v.into());
        let mut n = spec("netem", &[("delay", s("100ms")), ("jitter", s("10ms 25%")), ("loss", s("random 1% 30%")), ("ecn", ParamValue::Bool(true)), ("limit", ParamValue::Int(1000)), ("rate", s("10mbit 20"))]);
        let lines: Vec<String> = qdisc_commands("d", &n, 1, KV).unwrap().iter().map(|v| line(v)).collect();
        assert_eq!(lines, ["qdisc replace dev d root handle 1: netem delay 100ms 10ms 25% ecn limit 1000 loss random 1% 30% rate 10mbit 20"]);
        n.child = Some(Box::new(spec("tbf", &[("rate", s("1mbit")), ("burst", ParamValue::Int(2048)), ("latency", s("100ms")), ("qdisc", s("fq_codel"))])));
        let lines: Vec<String> = qdisc_commands("d", &n, 1, KV).unwrap().iter().map(|v| line(v)).collect();
        assert_eq!(
            lines[1..],
            [
                "qdisc replace dev d parent 1:1 handle 10: tbf burst 2048 latency 100ms rate 1mbit",
                "qdisc replace dev d parent 10:1 handle 20: fq_codel",
            ]
        );
        // jitter alone: tc needs a delay before it.
        let j = spec("netem", &[("jitter", s("5ms"))]);
        assert_eq!(line(&qdisc_commands("d", &j, 1, KV).unwrap()[0]), "qdisc replace dev d root handle 1: netem delay 0ms 5ms");
    }

    /// An htb leaf's `qdisc_params` follow its kind on the leaf's line.
    #[test]
    fn htb_leaf_parameters() {
        let mut class = BTreeMap::new();
        class.insert("classid".to_string(), ParamValue::Str("1:10".into()));
        class.insert("rate".to_string(), ParamValue::Str("100mbit".into()));
        class.insert("qdisc".to_string(), ParamValue::Str("fq_codel".into()));
        let leaf = Params::new([("limit".to_string(), ParamValue::Int(300)), ("ecn".to_string(), ParamValue::Bool(true))].into_iter().collect());
        class.insert("qdisc_params".to_string(), ParamValue::Table(leaf));
        let s = spec("htb", &[("class", ParamValue::Tables(vec![Params::new(class)]))]);
        let lines: Vec<String> = qdisc_commands("d", &s, 1, KV).unwrap().iter().map(|v| line(v)).collect();
        assert_eq!(lines[2], "qdisc replace dev d parent 1:10 fq_codel ecn limit 300");
    }

    #[test]
    fn noqueue() {
        let c = qdisc_commands("d", &spec("noqueue", &[]), 1, KV).unwrap();
        assert_eq!(line(&c[0]), "qdisc replace dev d root noqueue");
    }
}
