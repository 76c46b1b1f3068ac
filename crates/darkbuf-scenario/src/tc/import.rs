//! `darkbuf import`: a host's qdisc tree, from what `tc -s -d -j qdisc show` and `tc -d
//! -j class show` print (iproute2's `*_print_opt()` in tc/q_*.c, JSON mode), as the tc
//! lines that build it again. What cannot be mapped is listed with its reason, never
//! dropped silently.
//!
//! JSON units, as iproute2 prints them: rates in bytes/s (`print_rate()`), sizes in
//! bytes, times as the netlink attribute holds them (µs for `sprint_time()` values,
//! ns for fq's `timer_slack`).

use serde_json::Value;

/// tc lines, and what could not be mapped (each with its reason).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Imported {
    pub lines: Vec<String>,
    pub unmapped: Vec<String>,
}

fn u(o: &Value, k: &str) -> Option<u64> {
    o.get(k).and_then(Value::as_u64)
}

fn rate(o: &Value, k: &str) -> Option<String> {
    u(o, k).map(|bps| format!("{}bit", bps * 8))
}

/// A handle as the lines use it: a root qdisc without one (`0:`) becomes `1:`, and
/// `:N` below it `1:N`.
fn handle(h: &str, zero_major: bool) -> String {
    let (maj, min) = h.split_once(':').unwrap_or((h, ""));
    let maj = if maj.is_empty() || (zero_major && maj == "0") { "1" } else { maj };
    format!("{maj}:{min}")
}

/// `KEY VALUE` when there is a value.
fn kv(w: &mut Vec<String>, k: &str, v: Option<String>) {
    if let Some(v) = v {
        w.push(k.to_string());
        w.push(v);
    }
}

/// The option words of qdisc `kind` from its JSON `options`, or the reason it cannot be
/// mapped.
fn qdisc_words(kind: &str, o: &Value) -> Result<Vec<String>, String> {
    let mut w: Vec<String> = Vec::new();
    let num = |k: &str| u(o, k).map(|v| v.to_string());
    let us = |k: &str| u(o, k).map(|v| format!("{v}us"));
    match kind {
        "pfifo_fast" | "noqueue" | "mq" => {}
        "pfifo" | "bfifo" | "pfifo_head_drop" => kv(&mut w, "limit", num("limit")),
        "fq_codel" | "codel" => {
            for k in ["limit", "flows", "quantum"] {
                kv(&mut w, k, num(k));
            }
            for k in ["target", "interval", "ce_threshold"] {
                kv(&mut w, k, us(k));
            }
            kv(&mut w, "memory_limit", num("memory_limit"));
            // tc prints `ecn` only when it is on; fq_codel's default is on, codel's off.
            if o.get("ecn").and_then(Value::as_bool) == Some(true) {
                w.push("ecn".into());
            } else if kind == "fq_codel" {
                w.push("noecn".into());
            }
            kv(&mut w, "drop_batch", num("drop_batch"));
        }
        "fq" => {
            for k in ["limit", "flow_limit", "buckets", "orphan_mask", "quantum", "initial_quantum"] {
                kv(&mut w, k, num(k));
            }
            if o.get("pacing").and_then(Value::as_bool) == Some(false) {
                w.push("nopacing".into());
            }
            kv(&mut w, "maxrate", rate(o, "maxrate"));
            kv(&mut w, "low_rate_threshold", rate(o, "low_rate_threshold"));
            for k in ["refill_delay", "ce_threshold", "horizon", "offload_horizon"] {
                kv(&mut w, k, us(k));
            }
            kv(&mut w, "timer_slack", u(o, "timer_slack").map(|ns| format!("{}us", ns as f64 / 1000.0)));
            if o.get("horizon_cap").is_some() {
                w.push("horizon_cap".into());
            }
            if o.get("horizon_drop").is_some() {
                w.push("horizon_drop".into());
            }
        }
        "sfq" => {
            for k in ["limit", "quantum", "depth", "flows", "divisor", "perturb"] {
                kv(&mut w, k, num(k));
            }
            if o.get("headdrop").and_then(Value::as_bool) == Some(true) {
                w.push("headdrop".into());
            }
        }
        "tbf" => {
            kv(&mut w, "rate", rate(o, "rate"));
            // `burst` is "SIZE/CELL" with -d, else bytes.
            let burst = match o.get("burst") {
                Some(Value::String(s)) => s.split('/').next().map(str::to_string),
                Some(v) => v.as_u64().map(|b| b.to_string()),
                None => None,
            };
            kv(&mut w, "burst", burst);
            kv(&mut w, "latency", us("lat"));
        }
        "htb" => {
            kv(&mut w, "r2q", num("r2q"));
            // "0x10": tc reads `default` as hexadecimal.
            kv(&mut w, "default", o.get("default").and_then(Value::as_str).map(|s| s.trim_start_matches("0x").to_string()));
            kv(&mut w, "direct_qlen", num("direct_qlen"));
        }
        "cake" => {
            match o.get("bandwidth") {
                Some(Value::String(s)) if s == "unlimited" => w.push("unlimited".into()),
                Some(v) => kv(&mut w, "bandwidth", v.as_u64().map(|b| format!("{}bit", b * 8))),
                None => {}
            }
            for k in ["diffserv", "flowmode"] {
                if let Some(s) = o.get(k).and_then(Value::as_str) {
                    w.push(s.to_string());
                }
            }
            for (k, on, off) in [("nat", "nat", "nonat"), ("wash", "wash", "nowash"), ("split_gso", "split-gso", "no-split-gso")] {
                if let Some(b) = o.get(k).and_then(Value::as_bool) {
                    w.push(if b { on } else { off }.into());
                }
            }
            if o.get("ingress").and_then(Value::as_bool) == Some(true) {
                w.push("ingress".into());
            }
            match o.get("ack-filter").and_then(Value::as_str) {
                Some("enabled") => w.push("ack-filter".into()),
                Some("aggressive") => w.push("ack-filter-aggressive".into()),
                _ => {}
            }
            kv(&mut w, "rtt", us("rtt"));
            if o.get("raw").and_then(Value::as_bool) == Some(true) {
                w.push("raw".into());
            } else {
                if let Some(a) = o.get("atm").and_then(Value::as_str) {
                    w.push(a.to_string());
                }
                kv(&mut w, "overhead", o.get("overhead").and_then(Value::as_i64).map(|v| v.to_string()));
            }
            kv(&mut w, "mpu", num("mpu"));
            kv(&mut w, "memlimit", num("memlimit"));
        }
        _ => return Err(format!("qdisc {kind} is not one darkbuf models")),
    }
    Ok(w)
}

/// An htb class's words from its JSON (`tc -d -j class show`: rate, ceil in bytes/s,
/// burst and cburst in bytes, prio and quantum with -d).
fn class_words(c: &Value) -> Vec<String> {
    let mut w = Vec::new();
    for k in ["rate", "ceil"] {
        if let Some(r) = rate(c, k) {
            w.extend([k.to_string(), r]);
        }
    }
    for k in ["burst", "cburst", "prio", "quantum"] {
        if let Some(v) = u(c, k) {
            w.extend([k.to_string(), v.to_string()]);
        }
    }
    w
}

/// The lines of device `dev` from its `qdiscs` and `classes` (JSON arrays); the
/// ingress qdisc and a `mirred` redirect in `filters` (its ingress filters) become the
/// ingress lines, the ifb's own tree comes from `ifb` (name, qdiscs, classes).
pub fn tc_lines(dev: &str, qdiscs: &Value, classes: &Value, filters: &Value, ifb: Option<(&str, &Value, &Value)>) -> Imported {
    let mut out = Imported::default();
    let empty = Vec::new();
    let qs = qdiscs.as_array().unwrap_or(&empty);
    let zero_root = qs.iter().any(|q| q.get("root").and_then(Value::as_bool) == Some(true) && q.get("handle").and_then(Value::as_str) == Some("0:"));
    let mut ingress = false;
    // tc's order: a qdisc, then its classes, then what hangs off them (`tc qdisc add
    // ... parent 1:10` fails before class 1:10 exists). The parse does not care; a user
    // who runs the lines does.
    let mut children: Vec<String> = Vec::new();
    for q in qs {
        let kind = q.get("kind").and_then(Value::as_str).unwrap_or("");
        let h = q.get("handle").and_then(Value::as_str).unwrap_or("0:");
        if kind == "ingress" || kind == "clsact" {
            ingress = true;
            out.lines.push(format!("tc qdisc add dev {dev} handle ffff: {kind}"));
            continue;
        }
        let at = if q.get("root").and_then(Value::as_bool) == Some(true) {
            "root".to_string()
        } else {
            match q.get("parent").and_then(Value::as_str) {
                Some(p) => format!("parent {}", handle(p, zero_root)),
                None => {
                    out.unmapped.push(format!("qdisc {kind} {h} on {dev}: neither root nor a parent"));
                    continue;
                }
            }
        };
        // A child's automatic handle is left to the parse; one something attaches to
        // keeps its own.
        let hd = if at == "root" { format!(" handle {}", handle(h, true)) } else if h != "0:" { format!(" handle {h}") } else { String::new() };
        match qdisc_words(kind, q.get("options").unwrap_or(&Value::Null)) {
            Ok(w) => {
                let mut line = format!("tc qdisc add dev {dev} {at}{hd} {kind}");
                for x in w {
                    line.push(' ');
                    line.push_str(&x);
                }
                if at == "root" { out.lines.push(line) } else { children.push(line) }
            }
            Err(why) => out.unmapped.push(format!("dev {dev}: {why} (tc -j: {})", compact(q))),
        }
    }
    // Classes after the root, each after its parent class (tc dumps them in hash order).
    let mut class_lines: Vec<(String, String, String)> = Vec::new();
    for c in classes.as_array().unwrap_or(&empty) {
        let kind = c.get("class").and_then(Value::as_str).unwrap_or("");
        if kind != "htb" {
            if !matches!(kind, "mq" | "fq_codel" | "sfq" | "cake" | "fq") {
                out.unmapped.push(format!("class {kind} {} on {dev}: only htb classes are modelled", c.get("handle").and_then(Value::as_str).unwrap_or("?")));
            }
            continue;
        }
        let Some(h) = c.get("handle").and_then(Value::as_str) else { continue };
        // A class at the top names its qdisc's handle (`root` in tc's output).
        let top = format!("{}:", h.split(':').next().unwrap_or("1"));
        let Some(p) = c.get("parent").and_then(Value::as_str).or(c.get("root").map(|_| top.as_str())) else { continue };
        let (parent, classid) = (handle(p, zero_root), handle(h, zero_root));
        let mut line = format!("tc class add dev {dev} parent {parent} classid {classid} htb");
        for x in class_words(c) {
            line.push(' ');
            line.push_str(&x);
        }
        class_lines.push((parent, classid, line));
    }
    out.lines.extend(parents_first(class_lines));
    out.lines.extend(children);
    if ingress {
        ingress_filters(dev, filters, ifb, &mut out);
    }
    out
}

/// `(parent, classid, line)`s reordered so that each class follows its parent class; a
/// class whose parent is no class here (the qdisc's handle) comes first, in dump order.
fn parents_first(mut rest: Vec<(String, String, String)>) -> Vec<String> {
    let mut out = Vec::with_capacity(rest.len());
    let mut placed: Vec<String> = Vec::new();
    while !rest.is_empty() {
        let ready = |(parent, ..): &(String, String, String)| placed.contains(parent) || !rest.iter().any(|(_, id, _)| id == parent);
        // A cycle cannot come from the kernel; the remainder then keeps its order.
        let i = rest.iter().position(ready).unwrap_or(0);
        let (_, id, line) = rest.remove(i);
        placed.push(id);
        out.push(line);
    }
    out
}

fn compact(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 160 {
        format!("{}...", &s[..157])
    } else {
        s
    }
}

/// A line of u32's own structure in `tc -j filter show`: the filter's head (no
/// options) and its hash table (`fh 800:`, `ht_divisor`), printed before the node
/// that matches and acts. Not filters of their own.
fn u32_node(f: &Value) -> bool {
    f.get("kind").and_then(Value::as_str) == Some("u32")
        && f.get("options").map_or(true, |o| o.as_object().is_some_and(|m| m.keys().all(|k| k == "fh" || k == "ht_divisor")))
}

/// The ingress filters: one that redirects to an ifb (`mirred` with `to_dev`) becomes a
/// `matchall` redirect, and the ifb's tree follows.
fn ingress_filters(dev: &str, filters: &Value, ifb: Option<(&str, &Value, &Value)>, out: &mut Imported) {
    let empty = Vec::new();
    let mut to = None;
    for f in filters.as_array().unwrap_or(&empty) {
        let s = f.to_string();
        if let Some(i) = s.find("\"to_dev\":\"") {
            let rest = &s[i + 10..];
            to = rest.split('"').next().map(str::to_string);
        } else if f.get("kind").is_some() && !u32_node(f) {
            out.unmapped.push(format!("ingress filter on {dev} without a mirred redirect: {}", compact(f)));
        }
    }
    let Some(to) = to else {
        out.unmapped.push(format!("the ingress qdisc of {dev} redirects nothing to an ifb: ingress shaping left out"));
        out.lines.retain(|l| !l.ends_with(" ingress") && !l.ends_with(" clsact"));
        return;
    };
    if !to.starts_with("ifb") {
        out.lines.push(format!("ip link add name {to} type ifb"));
    }
    out.lines.push(format!("tc filter add dev {dev} parent ffff: matchall action mirred egress redirect dev {to}"));
    match ifb {
        Some((name, q, c)) if name == to => {
            let sub = tc_lines(&to, q, c, &Value::Null, None);
            out.lines.extend(sub.lines);
            out.unmapped.extend(sub.unmapped);
        }
        _ => out.unmapped.push(format!("the tree of {to} (the ifb {dev}'s ingress is redirected to) was not read")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn htb_with_fq_codel_leaves() {
        let q = json!([
            {"kind":"htb","handle":"1:","root":true,"refcnt":2,"options":{"r2q":10,"default":"0x10","direct_packets_stat":0,"direct_qlen":1000}},
            {"kind":"fq_codel","handle":"10:","parent":"1:10","options":{"limit":300,"flows":1024,"quantum":1514,"target":4999,"interval":99999,"memory_limit":33554432,"ecn":true,"drop_batch":64}}
        ]);
        let c = json!([{"class":"htb","handle":"1:10","parent":"1:","leaf":"10:","prio":0,"quantum":12500,"rate":12500000,"ceil":12500000,"burst":1600,"cburst":1600}]);
        let i = tc_lines("veth0", &q, &c, &Value::Null, None);
        assert_eq!(
            i.lines,
            [
                "tc qdisc add dev veth0 root handle 1: htb r2q 10 default 10 direct_qlen 1000",
                "tc class add dev veth0 parent 1: classid 1:10 htb rate 100000000bit ceil 100000000bit burst 1600 cburst 1600 prio 0 quantum 12500",
                "tc qdisc add dev veth0 parent 1:10 handle 10: fq_codel limit 300 flows 1024 quantum 1514 target 4999us interval 99999us memory_limit 33554432 ecn drop_batch 64",
            ]
        );
        assert!(i.unmapped.is_empty());
        // tc dumps classes in hash order: a leaf before its parent class. The lines put
        // each class after its parent, so tc itself can run them.
        let c = json!([
            {"class":"htb","handle":"1:10","parent":"1:1","leaf":"10:","prio":0,"quantum":12500,"rate":12500000,"ceil":12500000,"burst":1600,"cburst":1600},
            {"class":"htb","handle":"1:1","root":true,"prio":0,"quantum":12500,"rate":12500000,"ceil":12500000,"burst":1600,"cburst":1600}
        ]);
        let i = tc_lines("veth0", &q, &c, &Value::Null, None);
        let order: Vec<&str> = i.lines.iter().map(|l| l.split_whitespace().nth(1).unwrap()).collect();
        assert_eq!(order, ["qdisc", "class", "class", "qdisc"], "{:#?}", i.lines);
        assert!(i.lines[1].contains("classid 1:1 ") && i.lines[2].contains("parent 1:1 classid 1:10"), "{:#?}", i.lines);
        // An unmodelled qdisc is listed with its reason.
        let i = tc_lines("eth0", &json!([{"kind":"red","handle":"1:","root":true,"options":{}}]), &Value::Null, &Value::Null, None);
        assert!(i.lines.is_empty() && i.unmapped[0].contains("red is not one darkbuf models"), "{i:?}");
    }
}
