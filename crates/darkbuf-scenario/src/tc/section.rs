//! A qdisc section in its tc form: `[qdisc] tc = """..."""`, `[qdisc] tc_file =
//! "PATH"` (what `darkbuf run --tc FILE` sets) and `[peer.qdisc] tc`. The lines become
//! the same tree of keys the TOML form has, each value remembering the tc word it came
//! from, and that tree is resolved as the TOML form is: one set of checks, and every
//! error points at its tc word (file:line:column of the scenario, or of the tc file).

use super::build::{build, TcTree};
use super::TcError;
use crate::diag::{Diagnostic, DiagnosticKind as K};
use crate::section::Sec;
use crate::schema::{IngressSpec, QdiscSpec};
use crate::tree::{Ctx, Entry, Node, Origin, Table, V};
use darkbuf_model::params::ParamValue;
use std::ops::Range;

/// What a tc section resolves to: the root qdisc tree, and the ingress side (the ifb
/// and its tree) when the lines redirect ingress traffic.
pub(crate) struct TcSection {
    pub root: QdiscSpec,
    pub ingress: Option<IngressSpec>,
}

/// How a resolved key tree is turned into a spec (the scenario's `resolve_qdisc`,
/// passed in so this module needs none of its internals).
pub(crate) type ResolveFn<'r> = &'r dyn Fn(&Sec<'_>, bool) -> Result<QdiscSpec, Diagnostic>;

/// The tc form of section `q`, or `None` when it has neither `tc` nor `tc_file`.
/// `dev_name`: this host's device (`None`: the far host's, any one name).
pub(crate) fn resolve_tc(q: &Sec<'_>, dev_name: Option<&str>, resolve: ResolveFn<'_>) -> Result<Option<TcSection>, Diagnostic> {
    let (key, entry) = match (q.entry("tc"), q.entry("tc_file")) {
        (None, None) => return Ok(None),
        (Some(a), Some(_)) if !matches!(q.entry("tc_file").map(|e| &e.key_at), Some(Origin::Set { .. })) => {
            return Err(q.ctx.diag(K::Value, &a.key_at, &q.kp("tc"), format!("[{}] has both `tc` and `tc_file`", q.path), Some("one of them: the lines inline, or the file that holds them".into())))
        }
        (_, Some(e)) => ("tc_file", e),
        (Some(e), None) => ("tc", e),
    };
    // `--tc FILE` (a `tc_file` from --set) replaces the section; in the file, the tc
    // form stands alone.
    let from_set = matches!(entry.key_at, Origin::Set { .. });
    if !from_set {
        if let Some(other) = q.t.entries.iter().find(|e| e.key != key) {
            return Err(q.ctx.diag(
                K::UnknownKey,
                &other.key_at,
                &q.kp(&other.key),
                format!("`{}` beside `{key}`: the tc lines say the kind and every parameter", q.kp(&other.key)),
                Some(format!("write it on the tc line, or drop `{key}` and use the TOML keys")),
            ));
        }
    }
    let V::Str(value) = &entry.node.v else {
        return Err(q.type_err(entry, "a string", Some(format!("{key} = \"\"\"\\ntc qdisc add dev eth0 root fq_codel\\n\"\"\"")).filter(|_| key == "tc")));
    };
    if key == "tc" {
        let map = |s: Range<usize>| map_span(q.ctx.source, &entry.node.at, value, s);
        let tree = build(value, dev_name).map_err(|e| tc_diag(q.ctx, &map(e.span.clone()), &q.kp(key), e))?;
        return section(q, q.ctx, &tree, &map, resolve).map(Some);
    }
    let path = tc_path(q.ctx.file, value, from_set);
    let text = match crate::read_bounded(std::path::Path::new(&path), crate::limits::MAX_FILE_BYTES) {
        Ok(Some(t)) => t,
        Ok(None) => return Err(q.value_err(key, format!("tc file {path} is larger than {} bytes", crate::limits::MAX_FILE_BYTES), None)),
        Err(e) => return Err(q.value_err(key, format!("cannot read tc file {path}: {e}"), Some("the path of a file of tc lines (relative to the scenario file, or to the working directory for --tc)".into()))),
    };
    let ctx = Ctx { file: &path, source: &text, overrides: q.ctx.overrides };
    let map = |s: Range<usize>| Origin::File(Some(s));
    let tree = build(&text, dev_name).map_err(|e| tc_diag(&ctx, &map(e.span.clone()), "", e))?;
    let sub = Sec { t: q.t, path: q.path.clone(), at: q.at.clone(), ctx: &ctx };
    section(&sub, &ctx, &tree, &map, resolve).map(Some)
}

/// Where a `tc_file` is: as given from `--tc`; relative to the scenario file's
/// directory when the scenario names it.
fn tc_path(scenario: &str, value: &str, from_set: bool) -> String {
    let p = std::path::Path::new(value);
    if from_set || p.is_absolute() {
        return value.to_string();
    }
    match std::path::Path::new(scenario).parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(p).display().to_string(),
        _ => value.to_string(),
    }
}

fn tc_diag(ctx: &Ctx<'_>, at: &Origin, key: &str, e: TcError) -> Diagnostic {
    ctx.diag(K::Value, at, key, format!("tc: {}", e.message), Some(e.help))
}

/// The tree's root (and ingress) as key trees resolved by `resolve`.
fn section(q: &Sec<'_>, ctx: &Ctx<'_>, tree: &TcTree, map: &dyn Fn(Range<usize>) -> Origin, resolve: ResolveFn<'_>) -> Result<TcSection, Diagnostic> {
    let root_spec = tree.root.clone().unwrap_or_else(|| QdiscSpec { kind: String::new(), params: Default::default(), child: None });
    let node = spec_node(&root_spec, "", tree, map);
    let V::Table(t) = &node.v else { unreachable!("spec_node makes a table") };
    let t = if tree.root.is_some() { t.clone() } else { Table::default() };
    let sec = Sec { t: &t, path: q.path.clone(), at: map(tree.start.clone()), ctx };
    let root = resolve(&sec, true)?;
    let ingress = match &tree.ingress {
        None => None,
        Some(ing) => {
            let node = spec_node(&ing.qdisc, "ingress.", tree, map);
            let V::Table(t) = &node.v else { unreachable!("spec_node makes a table") };
            let sec = Sec { t, path: "ingress".into(), at: node.at.clone(), ctx };
            Some(IngressSpec { ifb: ing.ifb.clone(), qdisc: resolve(&sec, true)? })
        }
    };
    Ok(TcSection { root, ingress })
}

/// A spec as the key tree its TOML form would be, each key and value at its tc words.
fn spec_node(spec: &QdiscSpec, prefix: &str, tree: &TcTree, map: &dyn Fn(Range<usize>) -> Origin) -> Node {
    let at = |k: &str| map(tree.span_of(&format!("{prefix}{k}")));
    let mut t = Table::default();
    t.entries.push(Entry { key: "kind".into(), key_at: at("kind"), node: Node { v: V::Str(spec.kind.clone()), at: at("kind") } });
    for (k, v) in spec.params.iter() {
        t.entries.push(Entry { key: k.clone(), key_at: at(k), node: value_node(v, &format!("{prefix}{k}"), tree, map) });
    }
    if let Some(c) = &spec.child {
        let p = format!("{prefix}child.");
        t.entries.push(Entry { key: "child".into(), key_at: at("child.kind"), node: spec_node(c, &p, tree, map) });
    }
    Node { v: V::Table(t), at: at("kind") }
}

fn value_node(v: &ParamValue, key: &str, tree: &TcTree, map: &dyn Fn(Range<usize>) -> Origin) -> Node {
    let at = map(tree.span_of(key));
    let v = match v {
        ParamValue::Int(i) => V::Int(*i),
        ParamValue::Float(f) => V::Float(*f),
        ParamValue::Str(s) => V::Str(s.clone()),
        ParamValue::Bool(b) => V::Bool(*b),
        ParamValue::Table(p) => V::Table(table_of(p, &format!("{key}."), tree, map)),
        ParamValue::Tables(ts) => V::Array(
            ts.iter()
                .enumerate()
                .map(|(i, p)| {
                    let pre = format!("{key}[{i}].");
                    Node { v: V::Table(table_of(p, &pre, tree, map)), at: map(tree.span_of(&format!("{pre}classid"))) }
                })
                .collect(),
        ),
    };
    Node { v, at }
}

fn table_of(p: &darkbuf_model::params::Params, prefix: &str, tree: &TcTree, map: &dyn Fn(Range<usize>) -> Origin) -> Table {
    let mut t = Table::default();
    for (k, v) in p.iter() {
        let key = format!("{prefix}{k}");
        t.entries.push(Entry { key: k.clone(), key_at: map(tree.span_of(&key)), node: value_node(v, &key, tree, map) });
    }
    t
}

/// A span of the tc text of a TOML string value at `at` as a span of the scenario
/// file. The text maps byte for byte when the string holds no escapes (a literal
/// `'''` string, or a basic one without backslashes); otherwise by line and column
/// where the lines match, else to the string itself.
fn map_span(source: &str, at: &Origin, value: &str, s: Range<usize>) -> Origin {
    let Origin::File(Some(lit)) = at else { return at.clone() };
    let Some(raw) = source.get(lit.clone()) else { return at.clone() };
    let delim = ["\"\"\"", "'''", "\"", "'"].into_iter().find(|d| raw.starts_with(d)).unwrap_or("");
    let mut start = lit.start + delim.len();
    if delim.len() == 3 {
        if source[start..].starts_with("\r\n") {
            start += 2;
        } else if source[start..].starts_with('\n') {
            start += 1;
        }
    }
    let end = lit.end.saturating_sub(delim.len()).max(start);
    let content = &source[start..end];
    if content == value {
        return Origin::File(Some(start + s.start..start + s.end));
    }
    // By line and column: the line of the tc text, if the file has it at the same place.
    let line = value[..s.start.min(value.len())].matches('\n').count();
    let col = s.start - value[..s.start.min(value.len())].rfind('\n').map_or(0, |i| i + 1);
    let (vl, cl) = (value.lines().nth(line), content.lines().nth(line));
    match (vl, cl) {
        (Some(a), Some(b)) if b.get(col..).is_some_and(|rest| rest.starts_with(a.get(col..).unwrap_or(""))) => {
            let off = start + content.lines().take(line).map(|l| l.len() + 1).sum::<usize>() + col;
            Origin::File(Some(off..off + s.len()))
        }
        _ => at.clone(),
    }
}
