//! Each qdisc's own statistics (`tc -s -j qdisc show` / `tc -s -j class show`), by the
//! simulator's names ([`darkbuf_model::qdisc::Qdisc::xstats`]).
//!
//! The kernel dumps them with `->dump_stats()` (`fq_dump_stats()`,
//! `fq_codel_dump_stats()`, `cake_dump_stats()`, `htb_dump_class_stats()`, ...) and tc
//! prints them with each qdisc's `print_xstats()` (iproute2 `tc/q_*.c`). What tc prints
//! decides what can be read here:
//!
//! - some fields are printed only when non-zero (fq's `flows_plimit`, `latency`,
//!   `ce_mark`; fq_codel's `memory_used`, `drop_overmemory`): absent means 0;
//! - some are never printed by tc (fq's `horizon_drops`, `horizon_caps` and
//!   `fastpath_packets`; cake has no `drop_overlimit`): those are `null` with the reason;
//! - fq prints the key `throttled` twice: first the throttled flows (a gauge), then the
//!   throttle events (a counter), so the object is read in order, duplicates kept.
//!
//! Values are metric values: pie's `prob` arrives as the fraction tc prints, as the
//! simulator reports it.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use std::fmt;

/// A JSON object with its keys in order and duplicates kept (fq's two `throttled`).
#[derive(Debug, Default)]
struct OrderedObject(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for OrderedObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OrderedObject;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<OrderedObject, A::Error> {
                let mut v = Vec::new();
                while let Some((k, x)) = m.next_entry::<String, Value>()? {
                    v.push((k, x));
                }
                Ok(OrderedObject(v))
            }
        }
        d.deserialize_map(V)
    }
}

impl OrderedObject {
    /// The `nth` (0-based) value of `key`.
    fn nth(&self, key: &str, nth: usize) -> Option<&Value> {
        self.0.iter().filter(|(k, _)| k == key).nth(nth).map(|(_, v)| v)
    }
    fn get(&self, key: &str) -> Option<&Value> {
        self.nth(key, 0)
    }
    fn str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }
}

/// A JSON value as a metric value: numbers as they are, `true` as 1 (codel's `dropping`).
fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        v => v.as_f64(),
    }
}

/// How one tc JSON key becomes one simulator xstat.
struct Field {
    /// tc's JSON key.
    tc: &'static str,
    /// Which occurrence of the key (fq's second `throttled`).
    nth: usize,
    /// The simulator's name.
    sim: &'static str,
    /// tc prints it only when it is non-zero (absent = 0).
    when_nonzero: bool,
}

const fn f(tc: &'static str, sim: &'static str) -> Field {
    Field { tc, nth: 0, sim, when_nonzero: false }
}
const fn nz(tc: &'static str, sim: &'static str) -> Field {
    Field { tc, nth: 0, sim, when_nonzero: true }
}

/// `fq_print_xstats()`.
const FQ: &[Field] = &[
    f("flows", "flows"),
    f("inactive", "inactive_flows"),
    f("throttled", "throttled_flows"),
    nz("next_packet_delay", "time_next_delayed_flow"),
    f("gc", "gc_flows"),
    f("highprio", "highprio_packets"),
    Field { tc: "throttled", nth: 1, sim: "throttled", when_nonzero: false },
    nz("latency", "unthrottle_latency_ns"),
    nz("ce_mark", "ce_mark"),
    nz("flows_plimit", "flows_plimit"),
    nz("pkts_too_long", "pkts_too_long"),
    nz("alloc_errors", "allocation_errors"),
];

/// `fq_codel_print_xstats()` (the qdisc's, not a flow class's).
const FQ_CODEL: &[Field] = &[
    f("maxpacket", "maxpacket"),
    f("drop_overlimit", "drop_overlimit"),
    f("new_flow_count", "new_flow_count"),
    f("ecn_mark", "ecn_mark"),
    nz("ce_mark", "ce_mark"),
    nz("memory_used", "memory_used"),
    nz("drop_overmemory", "drop_overmemory"),
    f("new_flows_len", "new_flows_len"),
    f("old_flows_len", "old_flows_len"),
];

/// `codel_print_xstats()`.
const CODEL: &[Field] = &[
    f("count", "count"),
    f("lastcount", "lastcount"),
    f("ldelay", "ldelay"),
    nz("dropping", "dropping"),
    f("drop_next", "drop_next"),
    f("maxpacket", "maxpacket"),
    f("ecn_mark", "ecn_mark"),
    f("drop_overlimit", "drop_overlimit"),
    nz("ce_mark", "ce_mark"),
];

/// `pie_print_xstats()`; `avg_dq_rate` only with the dequeue-rate estimator.
const PIE: &[Field] = &[
    f("prob", "prob"),
    f("delay", "delay"),
    f("avg_dq_rate", "avg_dq_rate"),
    f("pkts_in", "pkts_in"),
    f("overlimit", "overlimit"),
    f("dropped", "dropped"),
    f("maxq", "maxq"),
    f("ecn_mark", "ecn_mark"),
];

/// `fq_pie_print_xstats()`.
const FQ_PIE: &[Field] = &[
    f("pkts_in", "pkts_in"),
    f("overlimit", "overlimit"),
    f("overmemory", "overmemory"),
    f("dropped", "dropped"),
    f("ecn_mark", "ecn_mark"),
    f("new_flow_count", "new_flow_count"),
    f("new_flows_len", "new_flows_len"),
    f("old_flows_len", "old_flows_len"),
    f("memory_used", "memory_used"),
];

/// `cake_print_xstats()`: the qdisc-wide part (the tins are read separately).
const CAKE: &[Field] = &[
    f("memory_used", "memory_used"),
    f("memory_limit", "memory_limit"),
    f("capacity_estimate", "capacity_estimate"),
    f("min_network_size", "min_network_size"),
    f("max_network_size", "max_network_size"),
    f("min_adj_size", "min_adj_size"),
    f("max_adj_size", "max_adj_size"),
    f("avg_hdr_offset", "avg_hdr_offset"),
];

/// cake's per-tin stats (`cake_print_json_tin()`), in the simulator's `tinN_` order.
const CAKE_TIN: &[&str] = &[
    "threshold_rate", "sent_bytes", "backlog_bytes", "target_us", "interval_us", "peak_delay_us",
    "avg_delay_us", "base_delay_us", "sent_packets", "way_indirect_hits", "way_misses",
    "way_collisions", "drops", "ecn_mark", "ack_drops", "sparse_flows", "bulk_flows",
    "unresponsive_flows", "max_pkt_len", "flow_quantum",
];

/// cake's qdisc-wide sums over the tins, as the simulator reports them.
const CAKE_TIN_SUMS: &[&str] = &[
    "sent_packets", "sent_bytes", "backlog_bytes", "drops", "ecn_mark", "way_indirect_hits",
    "way_misses", "way_collisions", "sparse_flows", "bulk_flows", "unresponsive_flows",
];

fn fields_of(kind: &str) -> &'static [Field] {
    match kind {
        "fq" => FQ,
        "fq_codel" => FQ_CODEL,
        "codel" => CODEL,
        "pie" => PIE,
        "fq_pie" => FQ_PIE,
        "cake" => CAKE,
        _ => &[],
    }
}

/// One qdisc's xstats in one dump.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QdiscXstats {
    /// "8001:", "1:".
    pub handle: String,
    pub kind: String,
    /// By the simulator's xstat name, in the model's order; metric values.
    pub values: Vec<(String, f64)>,
}

impl QdiscXstats {
    pub fn get(&self, name: &str) -> Option<f64> {
        self.values.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

/// Every qdisc's xstats in `tc -s -j qdisc show dev DEV` (unparsable text: none).
pub fn parse_qdiscs(json: &str) -> Vec<QdiscXstats> {
    let Ok(arr) = serde_json::from_str::<Vec<OrderedObject>>(json.trim()) else { return Vec::new() };
    arr.iter().map(qdisc_of).collect()
}

fn qdisc_of(q: &OrderedObject) -> QdiscXstats {
    let kind = q.str("kind").unwrap_or("").to_string();
    let mut values = Vec::new();
    for fl in fields_of(&kind) {
        match q.nth(fl.tc, fl.nth).and_then(num) {
            Some(v) => values.push((fl.sim.to_string(), v)),
            None if fl.when_nonzero => values.push((fl.sim.to_string(), 0.0)),
            None => {}
        }
    }
    match kind.as_str() {
        "cake" => values.extend(cake_tins(q)),
        "htb" => {
            let direct = q.get("options").and_then(|o| o.get("direct_packets_stat")).and_then(num);
            values.extend(direct.map(|v| ("direct_packets_stat".to_string(), v)));
        }
        _ => {}
    }
    QdiscXstats { handle: q.str("handle").unwrap_or("").to_string(), kind, values }
}

/// cake's tins: `tinN_<stat>` for each tin in dump order, and the qdisc-wide figures
/// the simulator derives from them (sums; `threshold_rate` and `flow_quantum` of tin 0;
/// the largest `max_pkt_len`).
fn cake_tins(q: &OrderedObject) -> Vec<(String, f64)> {
    let tins: Vec<&serde_json::Map<String, Value>> =
        q.get("tins").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_object).collect()).unwrap_or_default();
    let mut out = Vec::new();
    let tin = |t: &serde_json::Map<String, Value>, k: &str| t.get(k).and_then(num);
    if let Some(t0) = tins.first() {
        out.extend(tin(t0, "threshold_rate").map(|v| ("threshold_rate".to_string(), v)));
        out.extend(tin(t0, "flow_quantum").map(|v| ("flow_quantum".to_string(), v)));
    }
    for k in CAKE_TIN_SUMS {
        let vals: Vec<f64> = tins.iter().filter_map(|t| tin(t, k)).collect();
        if !vals.is_empty() {
            out.push((k.to_string(), vals.iter().sum()));
        }
    }
    if let Some(m) = tins.iter().filter_map(|t| tin(t, "max_pkt_len")).reduce(f64::max) {
        out.push(("max_pkt_len".to_string(), m));
    }
    for (i, t) in tins.iter().enumerate() {
        for k in CAKE_TIN {
            if let Some(v) = tin(t, k) {
                out.push((format!("tin{i}_{k}"), v));
            }
        }
    }
    out
}

/// htb's classes in `tc -s class show dev DEV` (text: iproute2 6.1 prints class
/// statistics as text even with `-j`): per class `class MAJ:MIN lends`, `borrows`,
/// `overlimits` and `dropped` (the simulator's names), and their sums `lends`,
/// `borrows`, `giants` over the classes (`htb_dump_class_stats()`,
/// `htb_print_xstats()`).
pub fn parse_htb_classes(text: &str) -> Vec<(String, f64)> {
    let mut per_class = Vec::new();
    let (mut lends, mut borrows, mut giants) = (0.0, 0.0, 0.0);
    let mut any = false;
    for block in text.split("class htb ").skip(1) {
        let Some(id) = block.split_whitespace().next() else { continue };
        // "Sent B bytes P pkt (dropped D, overlimits O requeues R)"
        let dropped = number_after(block, "(dropped ").unwrap_or(0.0);
        let overlimits = number_after(block, "overlimits ").unwrap_or(0.0);
        let (Some(l), Some(b), Some(g)) = (number_after(block, "lended: "), number_after(block, "borrowed: "), number_after(block, "giants: ")) else {
            continue;
        };
        any = true;
        lends += l;
        borrows += b;
        giants += g;
        per_class.push((format!("class {id} lends"), l));
        per_class.push((format!("class {id} borrows"), b));
        per_class.push((format!("class {id} overlimits"), overlimits));
        per_class.push((format!("class {id} dropped"), dropped));
    }
    if !any {
        return Vec::new();
    }
    let mut out = vec![("lends".to_string(), lends), ("borrows".to_string(), borrows), ("giants".to_string(), giants)];
    out.extend(per_class);
    out
}

/// The number right after the first `key` in `text` ("dropped 3," gives 3).
fn number_after(text: &str, key: &str) -> Option<f64> {
    let rest = &text[text.find(key)? + key.len()..];
    let n: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == '-').collect();
    n.parse().ok()
}

/// Why the kernel backend cannot report the simulator's xstat `name` of a `kind` qdisc
/// that the dump lacked.
pub fn why_missing(kind: &str, name: &str) -> String {
    match (kind, name) {
        ("fq", "horizon_drops" | "horizon_caps" | "fastpath_packets") => {
            format!("fq counts {name} (struct tc_fq_qd_stats) but tc's fq_print_xstats() does not print it")
        }
        ("pie", "avg_dq_rate") => "pie dumps avg_dq_rate only with dq_rate_estimator on".to_string(),
        ("cake", "drop_overlimit") => "the kernel's cake has no drop_overlimit counter; its overlimit drops are in drops".to_string(),
        _ => format!("tc -s -j did not print {name} for this kernel's {kind}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // tc 6.1 in a Debian 6.1 guest, fq after traffic (abridged to the xstats).
    const FQ_DUMP: &str = r#"[{"kind":"fq","handle":"8001:","root":true,"options":{"limit":10000},
        "bytes":0,"packets":10,"drops":0,"overlimits":0,"requeues":0,"backlog":0,"qlen":0,
        "flows":3,"inactive":1,"throttled":2,"gc":4,"highprio":5,"throttled":60,"latency":1234,"flows_plimit":7}]"#;

    #[test]
    fn fq_two_throttled_and_absent_zeros() {
        let q = &parse_qdiscs(FQ_DUMP)[0];
        assert_eq!(q.kind, "fq");
        assert_eq!(q.handle, "8001:");
        assert_eq!(q.get("throttled_flows"), Some(2.0));
        assert_eq!(q.get("throttled"), Some(60.0));
        assert_eq!(q.get("unthrottle_latency_ns"), Some(1234.0));
        assert_eq!(q.get("flows_plimit"), Some(7.0));
        assert_eq!(q.get("ce_mark"), Some(0.0));
        assert_eq!(q.get("gc_flows"), Some(4.0));
        assert_eq!(q.get("horizon_drops"), None);
    }

    #[test]
    fn cake_tins_and_sums() {
        let dump = r#"[{"kind":"cake","handle":"8003:","root":true,"memory_used":100,"memory_limit":15503360,
            "tins":[{"threshold_rate":1000,"sent_packets":5,"max_pkt_len":1514,"flow_quantum":1514,"avg_delay_us":7},
                    {"threshold_rate":500,"sent_packets":6,"max_pkt_len":60,"flow_quantum":300}]}]"#;
        let q = &parse_qdiscs(dump)[0];
        assert_eq!(q.get("sent_packets"), Some(11.0));
        assert_eq!(q.get("threshold_rate"), Some(1000.0));
        assert_eq!(q.get("max_pkt_len"), Some(1514.0));
        assert_eq!(q.get("tin1_sent_packets"), Some(6.0));
        assert_eq!(q.get("tin0_avg_delay_us"), Some(7.0));
        assert_eq!(q.get("memory_used"), Some(100.0));
    }

    #[test]
    fn htb_classes_and_direct() {
        let q = r#"[{"kind":"htb","handle":"1:","root":true,"options":{"r2q":10,"default":"0x10","direct_packets_stat":3}}]"#;
        assert_eq!(parse_qdiscs(q)[0].get("direct_packets_stat"), Some(3.0));
        // tc 6.1 in a Debian 6.1 guest.
        let c = "class htb 1:10 root leaf 8001: prio 0 rate 1Mbit ceil 1Mbit burst 1600b cburst 1600b \n \
                 Sent 3028 bytes 2 pkt (dropped 2, overlimits 9 requeues 0) \n backlog 0b 0p requeues 0\n \
                 lended: 4 borrowed: 0 giants: 0\n tokens: 200000 ctokens: 200000\n\n\
                 class htb 1:20 root prio 0 rate 2Mbit ceil 2Mbit burst 1600b cburst 1600b \n \
                 Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n backlog 0b 0p requeues 0\n \
                 lended: 1 borrowed: 0 giants: 0\n tokens: 100000 ctokens: 100000\n";
        let v = parse_htb_classes(c);
        assert!(v.contains(&("lends".to_string(), 5.0)));
        assert!(v.contains(&("class 1:20 lends".to_string(), 1.0)));
        assert!(v.contains(&("class 1:10 overlimits".to_string(), 9.0)));
        assert!(v.contains(&("class 1:10 dropped".to_string(), 2.0)));
    }

    #[test]
    fn codel_dropping_bool_and_garbage() {
        let q = r#"[{"kind":"codel","handle":"1:","count":2,"lastcount":1,"ldelay":900,"dropping":true,"drop_next":-5,
            "maxpacket":1514,"ecn_mark":0,"drop_overlimit":0}]"#;
        let x = &parse_qdiscs(q)[0];
        assert_eq!(x.get("dropping"), Some(1.0));
        assert_eq!(x.get("drop_next"), Some(-5.0));
        assert!(parse_qdiscs("not json").is_empty());
        assert!(parse_htb_classes("").is_empty());
    }
}
