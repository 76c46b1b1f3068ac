//! The commands of a tc script, parsed as iproute2 parses them: `tc_qdisc_modify()`,
//! `tc_class_modify()` and `tc_filter_modify()` (tc/tc_qdisc.c, tc_class.c,
//! tc_filter.c) read their keywords in any order until the first word that is none of
//! them, the qdisc's, class's or filter's kind; what follows is the kind's own options
//! ([`super::options`] for qdiscs and classes, [`filter`] for filters).

use super::lex::Word;
use super::{parse_handle, TcError};
use std::ops::Range;

/// Where a qdisc is attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attach {
    Root,
    /// `parent MAJ:MIN`.
    Parent(u16, u16),
    /// `ingress` (the ingress qdisc, handle ffff:) or `clsact`.
    Ingress,
    Clsact,
}

/// `tc qdisc add|replace|change ...`.
#[derive(Clone, Debug)]
pub struct QdiscCmd {
    pub dev: Word,
    pub attach: Attach,
    /// The words that said where (`root`, `parent 1:10`), for errors.
    pub attach_span: Range<usize>,
    pub handle: Option<(u16, u16)>,
    pub kind: Word,
    pub opts: Vec<Word>,
}

/// `tc class add|replace|change ...`.
#[derive(Clone, Debug)]
pub struct ClassCmd {
    pub dev: Word,
    pub parent: (u16, u16),
    pub parent_span: Range<usize>,
    pub classid: (u16, u16),
    pub classid_span: Range<usize>,
    pub kind: Word,
    pub opts: Vec<Word>,
}

/// `tc filter add|replace ...`: the filter's kind and its words, kept for the kernel
/// backend to replay and for the simulator to read what it models.
#[derive(Clone, Debug)]
pub struct FilterCmd {
    pub dev: Word,
    pub parent: Option<(u16, u16)>,
    pub protocol: Option<String>,
    pub prio: Option<u32>,
    pub handle: Option<String>,
    pub kind: Word,
    pub opts: Vec<Word>,
    /// The whole line's span.
    pub span: Range<usize>,
}

#[derive(Clone, Debug)]
pub enum Cmd {
    Qdisc(QdiscCmd),
    Class(ClassCmd),
    Filter(FilterCmd),
    /// `ip link add NAME type ifb` / `ip link set [dev] NAME up`: the ifb device.
    IfbLink(Word),
}

const VERBS: &[&str] = &["add", "replace", "change"];

/// One line's command.
pub fn parse(words: &[Word]) -> Result<Cmd, TcError> {
    let mut w = words;
    if w.first().is_some_and(|x| x.text == "tc") {
        w = &w[1..];
    }
    if words.first().is_some_and(|x| x.text == "ip") {
        return ip_link(words);
    }
    let Some(obj) = w.first() else { return Err(TcError::new(words[0].span.clone(), "`tc` without a command", "tc qdisc|class|filter add ...")) };
    let object = match obj.text.as_str() {
        "qdisc" | "qd" | "q" => "qdisc",
        "class" | "c" => "class",
        "filter" | "f" => "filter",
        // After `tc`, the word is the user's; a line that does not start with `tc` may be
        // any file's content, which is not quoted (lex::not_tc()).
        other if w.len() < words.len() => return Err(TcError::new(obj.span.clone(), format!("`{other}` is not a tc object darkbuf takes"), "one of qdisc, class, filter")),
        _ => return Err(super::lex::not_tc(obj.span.clone())),
    };
    let verb = w.get(1).ok_or_else(|| TcError::new(obj.span.clone(), format!("`tc {object}` without a verb"), "add, replace or change"))?;
    if !VERBS.contains(&verb.text.as_str()) {
        let why = match verb.text.as_str() {
            "del" | "delete" => "a scenario builds its tree from nothing: there is nothing to delete",
            "show" | "list" | "ls" => "darkbuf show-tc SCENARIO prints a scenario's tree",
            _ => "not a tc verb darkbuf takes",
        };
        return Err(TcError::new(verb.span.clone(), format!("`tc {object} {}`: {why}", verb.text), "add, replace or change"));
    }
    let rest = &w[2..];
    let end = words.last().map_or(0, |x| x.span.end);
    match object {
        "qdisc" => qdisc(rest, verb, end).map(Cmd::Qdisc),
        "class" => class(rest, verb, end).map(Cmd::Class),
        _ => filter(rest, verb, words[0].span.start..end).map(Cmd::Filter),
    }
}

/// The next word after `w[i]`, which must be there (tc's `NEXT_ARG()`).
fn next<'a>(w: &'a [Word], i: usize, what: &str) -> Result<&'a Word, TcError> {
    w.get(i + 1).ok_or_else(|| TcError::new(w[i].span.clone(), format!("`{}` needs {what} after it", w[i].text), what.to_string()))
}

fn handle_of(w: &Word, what: &str) -> Result<(u16, u16), TcError> {
    parse_handle(&w.text).ok_or_else(|| TcError::new(w.span.clone(), format!("\"{}\" is not a {what}", w.text), "a handle such as 1: or 1:10 (hexadecimal)"))
}

fn dev_missing(verb: &Word, end: usize) -> TcError {
    TcError::new(verb.span.start..end, "no `dev`", "dev DEVICE (this host's is device.name, eth0 by default; ifbN for ingress shaping)")
}

/// `tc_qdisc_modify()`'s keyword loop.
fn qdisc(w: &[Word], verb: &Word, end: usize) -> Result<QdiscCmd, TcError> {
    let (mut dev, mut attach, mut handle) = (None, None, None);
    let mut i = 0;
    while i < w.len() {
        let word = &w[i];
        match word.text.as_str() {
            "dev" => {
                dev = Some(next(w, i, "a device name")?.clone());
                i += 2;
            }
            "handle" => {
                let h = next(w, i, "a handle")?;
                handle = Some(handle_of(h, "qdisc handle")?);
                i += 2;
            }
            "root" => {
                attach = Some((Attach::Root, word.span.clone()));
                i += 1;
            }
            "parent" => {
                let h = next(w, i, "a parent handle")?;
                let (maj, min) = handle_of(h, "parent handle")?;
                attach = Some((Attach::Parent(maj, min), word.span.start..h.span.end));
                i += 2;
            }
            "ingress" | "clsact" => {
                let a = if word.text == "ingress" { Attach::Ingress } else { Attach::Clsact };
                let dev = dev.ok_or_else(|| dev_missing(verb, end))?;
                if let Some(extra) = w.get(i + 1) {
                    return Err(TcError::new(extra.span.clone(), format!("`{}` after {}: it takes no options", extra.text, word.text), "nothing"));
                }
                return Ok(QdiscCmd { dev, attach: a, attach_span: word.span.clone(), handle, kind: word.clone(), opts: Vec::new() });
            }
            "estimator" | "stab" | "ingress_block" | "egress_block" => {
                return Err(TcError::new(word.span.clone(), format!("`{}` is not modelled", word.text), "dev, root, parent, handle, then the qdisc kind and its options"))
            }
            _ => {
                let dev = dev.ok_or_else(|| dev_missing(verb, end))?;
                let (attach, attach_span) = attach.ok_or_else(|| {
                    TcError::new(word.span.clone(), format!("qdisc {} without `root` or `parent`", word.text), "root, parent MAJ:MIN, ingress or clsact before the kind")
                })?;
                return Ok(QdiscCmd { dev, attach, attach_span, handle, kind: word.clone(), opts: w[i + 1..].to_vec() });
            }
        }
    }
    Err(TcError::new(verb.span.start..end, "no qdisc kind", "a kind after dev/root/parent/handle, e.g. `root fq_codel`"))
}

/// `tc_class_modify()`'s keyword loop.
fn class(w: &[Word], verb: &Word, end: usize) -> Result<ClassCmd, TcError> {
    let (mut dev, mut parent, mut classid) = (None, None, None);
    let mut i = 0;
    while i < w.len() {
        let word = &w[i];
        match word.text.as_str() {
            "dev" => dev = Some(next(w, i, "a device name")?.clone()),
            "parent" => {
                let h = next(w, i, "a parent handle")?;
                parent = Some((handle_of(h, "parent handle")?, word.span.start..h.span.end));
            }
            "classid" => {
                let h = next(w, i, "a class id")?;
                classid = Some((handle_of(h, "class id")?, h.span.clone()));
            }
            "root" => return Err(TcError::new(word.span.clone(), "a class at the root", "parent MAJ: (the qdisc's handle) or parent MAJ:MIN")),
            _ => {
                let dev = dev.ok_or_else(|| dev_missing(verb, end))?;
                let (parent, parent_span) = parent.ok_or_else(|| TcError::new(word.span.clone(), "a class without `parent`", "parent 1: or parent 1:1"))?;
                let (classid, classid_span) = classid.ok_or_else(|| TcError::new(word.span.clone(), "a class without `classid`", "classid 1:10"))?;
                return Ok(ClassCmd { dev, parent, parent_span, classid, classid_span, kind: word.clone(), opts: w[i + 1..].to_vec() });
            }
        }
        i += 2;
    }
    Err(TcError::new(verb.span.start..end, "no class kind", "htb after dev/parent/classid"))
}

/// `tc_filter_modify()`'s keyword loop; the filter's own words are kept.
fn filter(w: &[Word], verb: &Word, span: Range<usize>) -> Result<FilterCmd, TcError> {
    let (mut dev, mut parent, mut protocol, mut prio, mut handle) = (None, None, None, None, None);
    let mut i = 0;
    while i < w.len() {
        let word = &w[i];
        match word.text.as_str() {
            "dev" => dev = Some(next(w, i, "a device name")?.clone()),
            "parent" => parent = Some(handle_of(next(w, i, "a parent handle")?, "parent handle")?),
            "root" => {
                parent = None;
                i += 1;
                continue;
            }
            "ingress" | "egress" => {
                // clsact's hooks: parent ffff:fff2 / ffff:fff3.
                parent = Some((0xffff, if word.text == "ingress" { 0xfff2 } else { 0xfff3 }));
                i += 1;
                continue;
            }
            "protocol" | "proto" => protocol = Some(next(w, i, "a protocol")?.text.clone()),
            "prio" | "pref" | "priority" => {
                let p = next(w, i, "a priority")?;
                prio = Some(p.text.parse::<u32>().map_err(|_| TcError::new(p.span.clone(), format!("\"{}\" is not a priority", p.text), "an integer"))?);
            }
            "handle" => handle = Some(next(w, i, "a filter handle")?.text.clone()),
            "chain" | "estimator" | "block" => return Err(TcError::new(word.span.clone(), format!("`{}` is not modelled", word.text), "dev, parent, protocol, prio, handle, then the filter kind")),
            _ => {
                let dev = dev.ok_or_else(|| dev_missing(verb, span.end))?;
                return Ok(FilterCmd { dev, parent, protocol, prio, handle, kind: word.clone(), opts: w[i + 1..].to_vec(), span });
            }
        }
        i += 2;
    }
    Err(TcError::new(span, "no filter kind", "one of matchall, u32, fw, flow"))
}

/// `ip link add [name] NAME type ifb`, `ip link set [dev] NAME up`.
fn ip_link(w: &[Word]) -> Result<Cmd, TcError> {
    let texts: Vec<&str> = w.iter().map(|x| x.text.as_str()).collect();
    let err = || TcError::new(w[0].span.start..w.last().map_or(0, |x| x.span.end), "an `ip` line darkbuf does not take", "only `ip link add NAME type ifb` and `ip link set dev NAME up` (the ifb an SQM script creates)");
    match texts.as_slice() {
        ["ip", "link", "add", "name", _, "type", "ifb"] => Ok(Cmd::IfbLink(w[4].clone())),
        ["ip", "link", "add", n, "type", "ifb"] if *n != "name" => Ok(Cmd::IfbLink(w[3].clone())),
        ["ip", "link", "set", "dev", _, "up"] => Ok(Cmd::IfbLink(w[4].clone())),
        ["ip", "link", "set", n, "up"] if *n != "dev" => Ok(Cmd::IfbLink(w[3].clone())),
        _ => Err(err()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tc::lex::lines;

    fn one(t: &str) -> Result<Cmd, TcError> {
        parse(&lines(t).unwrap()[0])
    }

    #[test]
    fn qdisc_keywords_in_any_order() {
        let Ok(Cmd::Qdisc(q)) = one("tc qdisc add handle 1: dev eth0 root htb default 10") else { panic!() };
        assert_eq!((q.dev.text.as_str(), q.attach, q.handle, q.kind.text.as_str()), ("eth0", Attach::Root, Some((1, 0)), "htb"));
        assert_eq!(q.opts.iter().map(|w| w.text.as_str()).collect::<Vec<_>>(), ["default", "10"]);
        let Ok(Cmd::Qdisc(q)) = one("qdisc replace dev eth0 parent 1:10 handle 10: fq_codel limit 300 ecn") else { panic!() };
        assert_eq!((q.attach, q.handle), (Attach::Parent(1, 0x10), Some((0x10, 0))));
        let Ok(Cmd::Qdisc(q)) = one("tc qdisc add dev eth0 handle ffff: ingress") else { panic!() };
        assert_eq!(q.attach, Attach::Ingress);
        let e = one("tc qdisc del dev eth0 root").unwrap_err();
        assert_eq!(e.span, 9..12);
        let e = one("tc qdisc add dev eth0 fq_codel").unwrap_err();
        assert!(e.message.contains("without `root` or `parent`"), "{e:?}");
        let e = one("tc qdisc add dev eth0 root stab overhead 4 cake").unwrap_err();
        assert_eq!(e.span, 27..31);
    }

    #[test]
    fn classes_filters_and_ifb_links() {
        let Ok(Cmd::Class(c)) = one("tc class add dev eth0 parent 1: classid 1:10 htb rate 10mbit") else { panic!() };
        assert_eq!((c.parent, c.classid, c.kind.text.as_str()), ((1, 0), (1, 0x10), "htb"));
        let Ok(Cmd::Filter(f)) = one("tc filter add dev eth0 parent ffff: protocol all prio 10 u32 match u32 0 0 flowid 1:1 action mirred egress redirect dev ifb4eth0") else { panic!() };
        assert_eq!((f.parent, f.protocol.as_deref(), f.prio, f.kind.text.as_str()), (Some((0xffff, 0)), Some("all"), Some(10), "u32"));
        assert!(matches!(one("ip link add name ifb4eth0 type ifb"), Ok(Cmd::IfbLink(w)) if w.text == "ifb4eth0"));
        assert!(matches!(one("ip link set dev ifb0 up"), Ok(Cmd::IfbLink(_))));
        assert!(one("ip addr add 10.0.0.1/24 dev eth0").is_err());
        assert!(one("tc monitor").is_err());
    }
}
