//! Each qdisc's tc keywords (iproute2's tc/q_*.c `*_parse_opt()`), as the model's
//! parameters, both ways: [`parse`] turns a kind's option words into parameters, and
//! [`words`] turns parameters back into option words (`darkbuf show-tc`).
//!
//! Most keywords take one value, which keeps tc's units: a bare number is
//! microseconds for a time (tc's `get_time()`), bits per second for a rate
//! (`get_rate()`), bytes for a size. Flags set a parameter to a value (`ecn`/`noecn`,
//! cake's `besteffort` = `diffserv besteffort`). netem's multi-word values follow tc's
//! `NEXT_IS_NUMBER()` rule ([`netem`]). Options darkbuf's model has and tc does not
//! (a kernel generation: `limit_mode`, `allot_mode`, fq's `version`) take a value like
//! any keyword.

use super::lex::Word;
use super::TcError;
use darkbuf_model::params::ParamValue;
use std::ops::Range;

/// How a keyword's value is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// An integer (kept as a word if it is not one, for the model to refuse).
    Int,
    /// Bytes: an integer, or a size with tc's units.
    Size,
    /// A time: a bare number is µs.
    Time,
    /// A rate: a bare number is bit/s.
    Rate,
    /// A word as it is (htb's hexadecimal `default`, a model option).
    Word,
    /// `true` or `false` (a model option).
    Bool,
    /// `n` words (fq's `priomap`, `weights`).
    Words(usize),
}

/// One keyword of a kind.
#[derive(Clone, Copy, Debug)]
pub enum Opt {
    /// `WORD VALUE` sets parameter `key`.
    Val { word: &'static str, key: &'static str, ty: Ty },
    /// `WORD` alone sets parameter `key` to `value`.
    Flag { word: &'static str, key: &'static str, value: FlagValue },
}

/// A flag's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagValue {
    Bool(bool),
    Str(&'static str),
}

impl FlagValue {
    fn param(self) -> ParamValue {
        match self {
            FlagValue::Bool(b) => ParamValue::Bool(b),
            FlagValue::Str(s) => ParamValue::Str(s.into()),
        }
    }
}

const fn v(word: &'static str, ty: Ty) -> Opt {
    Opt::Val { word, key: word, ty }
}

const fn flag(word: &'static str, key: &'static str, value: bool) -> Opt {
    Opt::Flag { word, key, value: FlagValue::Bool(value) }
}

const fn word_of(word: &'static str, key: &'static str) -> Opt {
    Opt::Flag { word, key, value: FlagValue::Str(word) }
}

use Ty::*;

const FIFO: &[Opt] = &[v("limit", Int)];
const BFIFO: &[Opt] = &[v("limit", Size)];
const PFIFO_FAST: &[Opt] = &[v("limit_mode", Word)];
const SFQ: &[Opt] = &[
    v("limit", Int), v("perturb", Int), v("quantum", Size), v("divisor", Int), v("flows", Int), v("depth", Int),
    flag("headdrop", "headdrop", true), v("allot_mode", Word),
];
const CODEL: &[Opt] = &[
    v("limit", Int), v("target", Time), v("interval", Time), flag("ecn", "ecn", true), flag("noecn", "ecn", false),
    v("ce_threshold", Time), v("min_backlog", Word),
];
const FQ_CODEL: &[Opt] = &[
    v("limit", Int), v("flows", Int), v("quantum", Int), v("target", Time), v("interval", Time),
    flag("ecn", "ecn", true), flag("noecn", "ecn", false), v("ce_threshold", Time), v("ce_threshold_selector", Word),
    v("memory_limit", Size), v("drop_batch", Int), v("min_backlog", Word),
];
const FQ: &[Opt] = &[
    v("limit", Int), v("flow_limit", Int), v("quantum", Size), v("initial_quantum", Size), v("maxrate", Rate),
    v("buckets", Int), v("orphan_mask", Int), flag("pacing", "pacing", true), flag("nopacing", "pacing", false),
    v("refill_delay", Time), v("low_rate_threshold", Rate), v("timer_slack", Time), v("ce_threshold", Time),
    v("horizon", Time), flag("horizon_drop", "horizon_drop", true), flag("horizon_cap", "horizon_drop", false),
    v("bands", Int), v("priomap", Words(16)), v("weights", Words(3)), v("offload_horizon", Time), v("version", Word),
    v("fastpath_when_behind", Bool),
];
const TBF: &[Opt] = &[
    v("rate", Rate), v("burst", Size), v("buffer", Size), v("maxburst", Size), v("limit", Size), v("latency", Time),
    v("peakrate", Rate), v("mtu", Size), v("minburst", Size), v("mpu", Size), v("overhead", Int), v("linklayer", Word),
];
const HTB: &[Opt] = &[v("default", Word), v("r2q", Int), v("direct_qlen", Int), v("overlimits_mode", Word), v("hysteresis", Bool)];
/// `tc class add ... htb` (`htb_parse_class_opt()`).
pub const HTB_CLASS: &[Opt] = &[
    v("rate", Rate), v("ceil", Rate), v("burst", Size), v("buffer", Size), v("maxburst", Size), v("cburst", Size),
    v("cbuffer", Size), v("cmaxburst", Size), v("mtu", Int), v("mpu", Int), v("overhead", Int), v("linklayer", Word),
    v("prio", Int), v("quantum", Size),
];
const PIE: &[Opt] = &[
    v("limit", Int), v("target", Time), v("tupdate", Time), v("alpha", Int), v("beta", Int),
    flag("ecn", "ecn", true), flag("noecn", "ecn", false), flag("bytemode", "bytemode", true),
    flag("nobytemode", "bytemode", false), flag("dq_rate_estimator", "dq_rate_estimator", true),
    flag("no_dq_rate_estimator", "dq_rate_estimator", false),
];
const FQ_PIE: &[Opt] = &[
    v("limit", Int), v("flows", Int), v("target", Time), v("tupdate", Time), v("alpha", Int), v("beta", Int),
    v("quantum", Size), v("memory_limit", Size), v("ecn_prob", Int), flag("ecn", "ecn", true), flag("noecn", "ecn", false),
    flag("bytemode", "bytemode", true), flag("nobytemode", "bytemode", false),
    flag("dq_rate_estimator", "dq_rate_estimator", true), flag("no_dq_rate_estimator", "dq_rate_estimator", false),
];
const CAKE: &[Opt] = &[
    v("bandwidth", Rate), Opt::Flag { word: "unlimited", key: "bandwidth", value: FlagValue::Str("unlimited") },
    v("rtt", Time),
    word_of("besteffort", "diffserv"), word_of("diffserv3", "diffserv"), word_of("diffserv4", "diffserv"),
    word_of("diffserv8", "diffserv"), word_of("precedence", "diffserv"),
    word_of("flowblind", "flow_mode"), word_of("srchost", "flow_mode"), word_of("dsthost", "flow_mode"),
    word_of("hosts", "flow_mode"), word_of("flows", "flow_mode"), word_of("dual-srchost", "flow_mode"),
    word_of("dual-dsthost", "flow_mode"), word_of("triple-isolate", "flow_mode"),
    flag("nat", "nat", true), flag("nonat", "nat", false), flag("wash", "wash", true), flag("nowash", "wash", false),
    flag("split-gso", "split_gso", true), flag("no-split-gso", "split_gso", false),
    flag("ingress", "ingress", true), flag("egress", "ingress", false),
    word_of("ack-filter", "ack_filter"), word_of("ack-filter-aggressive", "ack_filter"), word_of("no-ack-filter", "ack_filter"),
    word_of("atm", "atm"), word_of("ptm", "atm"), word_of("noatm", "atm"),
    Opt::Val { word: "overhead", key: "overhead", ty: Int }, v("mpu", Int), v("memlimit", Size),
];
const NETEM: &[Opt] = &[
    v("limit", Int), v("delay", Time), v("distribution", Word), v("loss", Word), flag("ecn", "ecn", true),
    v("duplicate", Word), v("corrupt", Word), v("reorder", Word), v("gap", Int), v("rate", Rate), v("slot", Word),
    v("seed", Int),
];

/// cake's overhead keywords (q_cake.c): each sets the overhead, the ATM or PTM framing
/// and the minimum packet size as tc does.
const CAKE_PRESETS: &[(&str, i64, &str, i64)] = &[
    ("raw", 0, "noatm", 0),
    ("conservative", 48, "atm", 0),
    ("ethernet", 38, "noatm", 84),
    ("docsis", 18, "noatm", 64),
    ("ether-vlan", 4, "noatm", 0),
    ("pppoa-vcmux", 10, "atm", 0),
    ("pppoa-llc", 14, "atm", 0),
    ("pppoe-vcmux", 32, "atm", 0),
    ("pppoe-llcsnap", 40, "atm", 0),
    ("bridged-vcmux", 24, "atm", 0),
    ("bridged-llcsnap", 32, "atm", 0),
    ("ipoa-vcmux", 8, "atm", 0),
    ("ipoa-llcsnap", 16, "atm", 0),
    ("pppoe-ptm", 30, "ptm", 0),
    ("bridged-ptm", 22, "ptm", 0),
];

/// cake's `rtt` presets.
const CAKE_RTT_PRESETS: &[&str] = &["datacentre", "lan", "metro", "regional", "internet", "oceanic", "satellite", "interplanetary"];

/// The keywords of qdisc `kind` (`None`: a kind darkbuf does not model).
pub fn table(kind: &str) -> Option<&'static [Opt]> {
    Some(match kind {
        "pfifo" | "pfifo_head_drop" => FIFO,
        "bfifo" => BFIFO,
        "pfifo_fast" => PFIFO_FAST,
        "sfq" => SFQ,
        "codel" => CODEL,
        "fq_codel" => FQ_CODEL,
        "fq" => FQ,
        "tbf" => TBF,
        "htb" => HTB,
        "pie" => PIE,
        "fq_pie" => FQ_PIE,
        "cake" => CAKE,
        "netem" => NETEM,
        "mq" | "noqueue" | "ingress" | "clsact" => &[],
        _ => return None,
    })
}

fn opt_word(o: &Opt) -> &'static str {
    match o {
        Opt::Val { word, .. } | Opt::Flag { word, .. } => word,
    }
}

/// A parameter read from tc words, with the span of the words that gave it.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    pub key: String,
    pub value: ParamValue,
    pub span: Range<usize>,
}

/// One value word as parameter `ty` takes it.
fn typed(ty: Ty, w: &str) -> ParamValue {
    let int = w.parse::<i64>().ok();
    match (ty, int) {
        (Int | Size, Some(i)) => ParamValue::Int(i),
        (Time, Some(_)) => ParamValue::Str(format!("{w}us")),
        (Rate, Some(_)) => ParamValue::Str(format!("{w}bit")),
        (Bool, _) if w == "true" || w == "false" => ParamValue::Bool(w == "true"),
        _ => ParamValue::Str(w.to_string()),
    }
}

fn unknown(kind: &str, w: &Word, opts: &[Opt]) -> TcError {
    let valid: Vec<&str> = opts.iter().map(opt_word).collect();
    let help = if valid.is_empty() { format!("{kind} takes no options") } else { format!("{kind}'s keywords: {}", valid.join(", ")) };
    TcError::new(w.span.clone(), format!("`{}` is not a keyword of {kind}", w.text), help)
}

/// The parameters of `kind`'s option words `w` (the words after the kind).
pub fn parse(kind: &str, opts: &[Opt], w: &[Word]) -> Result<Vec<Parsed>, TcError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < w.len() {
        let word = &w[i];
        if kind == "netem" {
            if let Some(n) = netem(w, i, &mut out)? {
                i = n;
                continue;
            }
        }
        if kind == "cake" {
            if let Some(&(_, overhead, atm, mpu)) = CAKE_PRESETS.iter().find(|p| p.0 == word.text) {
                for (k, v) in [("overhead", ParamValue::Int(overhead)), ("atm", ParamValue::Str(atm.into())), ("mpu", ParamValue::Int(mpu))] {
                    out.push(Parsed { key: k.into(), value: v, span: word.span.clone() });
                }
                i += 1;
                continue;
            }
        }
        let Some(opt) = opts.iter().find(|o| opt_word(o) == word.text) else { return Err(unknown(kind, word, opts)) };
        match *opt {
            Opt::Flag { key, value, .. } => {
                out.push(Parsed { key: key.into(), value: value.param(), span: word.span.clone() });
                i += 1;
            }
            Opt::Val { key, ty, .. } => {
                let n = if let Words(n) = ty { n } else { 1 };
                let vals = w.get(i + 1..i + 1 + n).filter(|v| v.len() == n).ok_or_else(|| {
                    TcError::new(word.span.clone(), format!("`{}` needs {} after it", word.text, if n == 1 { "a value".to_string() } else { format!("{n} values") }), format!("{} VALUE", word.text))
                })?;
                let value = match ty {
                    Words(_) => ParamValue::Str(vals.iter().map(|v| v.text.as_str()).collect::<Vec<_>>().join(" ")),
                    // cake's rtt presets are words, not times.
                    Time if kind == "cake" && CAKE_RTT_PRESETS.contains(&vals[0].text.as_str()) => ParamValue::Str(vals[0].text.clone()),
                    _ => typed(ty, &vals[0].text),
                };
                out.push(Parsed { key: key.into(), value, span: word.span.start..vals[n - 1].span.end });
                i += 1 + n;
            }
        }
    }
    Ok(out)
}

/// tc's `NEXT_IS_NUMBER()`: the next word starts with a digit (or a sign, for tc's
/// `NEXT_IS_SIGNED_NUMBER()`).
fn next_is_number(w: &[Word], i: usize, signed: bool) -> bool {
    w.get(i + 1).and_then(|x| x.text.chars().next()).is_some_and(|c| c.is_ascii_digit() || (signed && c == '-'))
}

/// netem's multi-word keywords (`netem_parse_opt()`): `delay D [J [C]]`, `loss
/// [random] P [C]`, `loss state P13 [P31 [P32 [P23 [P14]]]]`, `loss gemodel P [R [1-H
/// [1-K]]]`, `duplicate|corrupt|reorder P [C]`, `rate R [PO [CS [CO]]]`, `slot MIN
/// [MAX] [packets N] [bytes N]` or `slot distribution D DELAY JITTER [packets N] [bytes
/// N]`. Returns the index after them, or `None` for a single-value keyword.
fn netem(w: &[Word], i: usize, out: &mut Vec<Parsed>) -> Result<Option<usize>, TcError> {
    let word = &w[i];
    let need = |j: usize| -> Result<&Word, TcError> { w.get(j).ok_or_else(|| TcError::new(word.span.clone(), format!("`{}` needs a value after it", word.text), format!("netem {} VALUE", word.text))) };
    let greedy = |mut j: usize, max: usize, signed: bool| {
        let mut n = 0;
        while n < max && next_is_number(w, j, signed) {
            j += 1;
            n += 1;
        }
        j
    };
    let join = |a: usize, b: usize| w[a..=b].iter().map(|x| x.text.as_str()).collect::<Vec<_>>().join(" ");
    let mut push = |key: &str, value: ParamValue, span: Range<usize>| out.push(Parsed { key: key.into(), value, span });
    let end = match word.text.as_str() {
        "delay" | "latency" => {
            let d = need(i + 1)?;
            push("delay", typed(Time, &d.text), word.span.start..d.span.end);
            let last = greedy(i + 1, 2, false);
            if last > i + 1 {
                let jitter: Vec<String> = w[i + 2..=last].iter().enumerate().map(|(k, x)| if k == 0 { time_word(&x.text) } else { x.text.clone() }).collect();
                push("jitter", ParamValue::Str(jitter.join(" ")), w[i + 2].span.start..w[last].span.end);
            }
            last
        }
        "loss" | "drop" => {
            let first = need(i + 1)?;
            let (start, max) = match first.text.as_str() {
                "random" => (i + 2, 1),
                "state" => (i + 2, 4),
                "gemodel" | "gmodel" => (i + 2, 3),
                _ => (i + 1, 1),
            };
            need(start)?;
            let last = greedy(start, max, false);
            push("loss", ParamValue::Str(join(i + 1, last).replace("gmodel", "gemodel")), word.span.start..w[last].span.end);
            last
        }
        "duplicate" | "corrupt" | "reorder" => {
            need(i + 1)?;
            let last = greedy(i + 1, 1, false);
            push(&word.text, ParamValue::Str(join(i + 1, last)), word.span.start..w[last].span.end);
            last
        }
        "rate" => {
            let r = need(i + 1)?;
            let last = greedy(i + 1, 3, true);
            let mut words = vec![rate_word(&r.text)];
            words.extend(w[i + 2..=last].iter().map(|x| x.text.clone()));
            push("rate", ParamValue::Str(words.join(" ")), word.span.start..w[last].span.end);
            last
        }
        "slot" => {
            let first = need(i + 1)?;
            let mut last = if first.text == "distribution" { (i + 4).min(w.len() - 1) } else { greedy(i + 1, 1, false) };
            need(last)?;
            while matches!(w.get(last + 1).map(|x| x.text.as_str()), Some("packets" | "bytes")) && w.get(last + 2).is_some() {
                last += 2;
            }
            push("slot", ParamValue::Str(join(i + 1, last)), word.span.start..w[last].span.end);
            last
        }
        _ => return Ok(None),
    };
    Ok(Some(end + 1))
}

/// A time word as netem's parameter takes it (a bare number is µs).
fn time_word(w: &str) -> String {
    if w.parse::<f64>().is_ok() {
        format!("{w}us")
    } else {
        w.to_string()
    }
}

fn rate_word(w: &str) -> String {
    if w.parse::<f64>().is_ok() {
        format!("{w}bit")
    } else {
        w.to_string()
    }
}

/// A parameter value as a tc word (`None`: it has none, a table).
pub fn value_word(v: &ParamValue) -> Option<String> {
    match v {
        ParamValue::Int(i) => Some(i.to_string()),
        ParamValue::Float(f) => Some(f.to_string()),
        ParamValue::Str(s) => Some(s.clone()),
        ParamValue::Bool(b) => Some(b.to_string()),
        ParamValue::Tables(_) | ParamValue::Table(_) => None,
    }
}

/// The option words of `kind` with parameters `params` (tables left out), in the
/// order of `kind`'s keyword table; netem's delay and jitter as one keyword.
pub fn words<'a>(kind: &str, params: impl IntoIterator<Item = (&'a String, &'a ParamValue)>) -> Vec<String> {
    words_of(kind, table(kind).unwrap_or(&[]), params)
}

/// [`words`] with the keyword table `opts` (htb's class keywords, [`HTB_CLASS`]).
pub fn words_of<'a>(kind: &str, opts: &[Opt], params: impl IntoIterator<Item = (&'a String, &'a ParamValue)>) -> Vec<String> {
    let params: Vec<(&String, &ParamValue)> = params.into_iter().collect();
    let get = |k: &str| params.iter().find(|(key, _)| key.as_str() == k).map(|(_, v)| *v);
    let mut out = Vec::new();
    let mut done: Vec<&str> = vec!["child", "class", "qdisc", "qdisc_params"];
    if kind == "netem" && (get("delay").is_some() || get("jitter").is_some()) {
        out.push("delay".to_string());
        out.push(get("delay").and_then(value_word).unwrap_or_else(|| "0us".into()));
        out.extend(get("jitter").and_then(value_word).map(|j| j.split_whitespace().map(str::to_string).collect::<Vec<_>>()).unwrap_or_default());
        done.extend(["delay", "jitter"]);
    }
    for o in opts {
        let (word, key) = match o {
            Opt::Val { word, key, .. } | Opt::Flag { word, key, .. } => (*word, *key),
        };
        if done.contains(&key) {
            continue;
        }
        let Some(value) = get(key) else { continue };
        match o {
            Opt::Flag { value: fv, .. } => {
                if fv.param() == *value {
                    out.push(word.to_string());
                    done.push(key);
                }
            }
            Opt::Val { ty, .. } => {
                let Some(vw) = value_word(value) else { continue };
                out.push(word.to_string());
                match ty {
                    Words(_) => out.extend(vw.split_whitespace().map(str::to_string)),
                    _ if kind == "netem" => out.extend(vw.split_whitespace().map(str::to_string)),
                    // htb's `default` is hexadecimal in tc; an integer in the scenario is
                    // the number itself.
                    Word if kind == "htb" && key == "default" => out.push(match value {
                        ParamValue::Int(i) => format!("{i:x}"),
                        _ => vw,
                    }),
                    _ => out.push(vw),
                }
                done.push(key);
            }
        }
    }
    // A parameter no keyword shows (a value a flag pair does not have): KEY VALUE, which
    // the parser then refuses by name rather than losing it here. A boolean whose only
    // flag sets the other value (netem's `ecn = false`, sfq's `headdrop = false`) is
    // tc's default: no word.
    for &(k, v) in &params {
        let flag_only = matches!(v, ParamValue::Bool(_)) && opts.iter().any(|o| matches!(o, Opt::Flag { key, .. } if *key == k.as_str()));
        if !done.contains(&k.as_str()) && !flag_only {
            if let Some(vw) = value_word(v) {
                out.push(k.clone());
                out.push(vw);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tc::lex::lines;

    fn p(kind: &str, t: &str) -> Result<Vec<(String, ParamValue)>, TcError> {
        let w = lines(t).unwrap().pop().unwrap_or_default();
        parse(kind, table(kind).unwrap(), &w).map(|v| v.into_iter().map(|p| (p.key, p.value)).collect())
    }

    fn s(x: &str) -> ParamValue {
        ParamValue::Str(x.into())
    }

    #[test]
    fn keywords_values_units_and_flags() {
        assert_eq!(p("fq_codel", "limit 300 ecn target 5").unwrap(), [("limit".into(), ParamValue::Int(300)), ("ecn".into(), ParamValue::Bool(true)), ("target".into(), s("5us"))]);
        assert_eq!(p("cake", "bandwidth 90mbit besteffort wash docsis").unwrap()[..3], [("bandwidth".into(), s("90mbit")), ("diffserv".into(), s("besteffort")), ("wash".into(), ParamValue::Bool(true))]);
        assert_eq!(p("cake", "docsis").unwrap(), [("overhead".into(), ParamValue::Int(18)), ("atm".into(), s("noatm")), ("mpu".into(), ParamValue::Int(64))]);
        let e = p("fq_codel", "limit 300 ecnn").unwrap_err();
        assert_eq!(e.span, 10..14);
        assert!(e.help.contains("ecn, noecn"), "{e:?}");
        assert!(p("fq_codel", "limit").unwrap_err().message.contains("needs a value"));
    }

    #[test]
    fn netem_takes_words_as_tc_does() {
        assert_eq!(
            p("netem", "delay 100ms 10ms 25% distribution normal loss random 1% 30% limit 1000 rate 10mbit -4 ecn").unwrap(),
            [
                ("delay".into(), s("100ms")),
                ("jitter".into(), s("10ms 25%")),
                ("distribution".into(), s("normal")),
                ("loss".into(), s("random 1% 30%")),
                ("limit".into(), ParamValue::Int(1000)),
                ("rate".into(), s("10mbit -4")),
                ("ecn".into(), ParamValue::Bool(true)),
            ]
        );
        assert_eq!(p("netem", "loss state 1% 10% 0 100%").unwrap(), [("loss".into(), s("state 1% 10% 0 100%"))]);
        assert_eq!(p("netem", "slot 1ms 2ms packets 4 bytes 3000 limit 5").unwrap()[0], ("slot".into(), s("1ms 2ms packets 4 bytes 3000")));
        assert_eq!(p("netem", "loss 0.25% limit 1000").unwrap()[0], ("loss".into(), s("0.25%")));
    }

    #[test]
    fn words_are_the_parse_reversed() {
        for (kind, t) in [
            ("netem", "delay 100ms 10ms 25% limit 1000 distribution normal loss random 1% 30% ecn rate 10mbit 20"),
            ("fq_codel", "limit 300 quantum 300 target 5ms ecn"),
            ("cake", "bandwidth 90mbit besteffort wash ingress overhead 18 mpu 64"),
            ("fq", "limit 100 nopacing horizon_cap"),
        ] {
            let parsed = p(kind, t).unwrap();
            let map: std::collections::BTreeMap<String, ParamValue> = parsed.into_iter().collect();
            let shown = words(kind, map.iter());
            assert_eq!(shown.join(" "), t, "{kind}");
        }
    }
}
