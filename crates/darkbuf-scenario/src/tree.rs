//! The scenario document as a tree of values that remember where they came from (a span
//! of the file, or a `--set` argument), so every later error can point at its origin.

use crate::diag::{Diagnostic, DiagnosticKind};
use std::ops::Range;

/// Where a key or value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// A byte range of the scenario file (`None`: implicit, e.g. a table created by a
    /// dotted key, or a default).
    File(Option<Range<usize>>),
    /// The `idx`th `--set` argument; `span` is a byte range in that argument.
    Set { idx: usize, span: Range<usize> },
}

#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub v: V,
    pub at: Origin,
}

#[derive(Clone, Debug)]
pub(crate) enum V {
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    Datetime(String),
    Array(Vec<Node>),
    Table(Table),
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Table {
    pub entries: Vec<Entry>,
}

#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub key: String,
    pub key_at: Origin,
    pub node: Node,
}

impl Table {
    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.key == key)
    }
    fn get_mut(&mut self, key: &str) -> Option<&mut Entry> {
        self.entries.iter_mut().find(|e| e.key == key)
    }
}

impl V {
    /// "an integer", "a string", ... for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            V::Int(_) => "an integer",
            V::Float(_) => "a float",
            V::Str(_) => "a string",
            V::Bool(_) => "a boolean",
            V::Datetime(_) => "a date-time",
            V::Array(_) => "an array",
            V::Table(_) => "a table",
        }
    }

    /// The value as written in TOML, for messages ("a string (\"2\")").
    pub fn show(&self) -> String {
        match self {
            V::Int(i) => i.to_string(),
            V::Float(f) => toml_float(*f),
            V::Str(s) => toml_string(s),
            V::Bool(b) => b.to_string(),
            V::Datetime(d) => d.clone(),
            V::Array(a) => {
                let items: Vec<String> = a.iter().take(8).map(|n| n.v.show()).collect();
                let more = if a.len() > 8 { ", ..." } else { "" };
                format!("[{}{more}]", items.join(", "))
            }
            V::Table(_) => "{...}".into(),
        }
    }

    /// `a string ("2")`: the type and the value, for "found ..." messages.
    pub fn describe(&self) -> String {
        match self {
            V::Table(_) => "a table".into(),
            _ => {
                let mut s = self.show();
                if s.chars().count() > 60 {
                    s = s.chars().take(57).collect::<String>() + "...";
                }
                format!("{} ({s})", self.type_name())
            }
        }
    }
}

/// A float in TOML syntax (always reparses as a float).
pub(crate) fn toml_float(f: f64) -> String {
    if f.is_nan() {
        "nan".into()
    } else if f.is_infinite() {
        if f > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        format!("{f:?}")
    }
}

/// A TOML basic string, quoted and escaped.
pub(crate) fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Builds diagnostics for one load: knows the file, its text and the overrides.
pub(crate) struct Ctx<'a> {
    pub file: &'a str,
    pub source: &'a str,
    pub overrides: &'a [String],
}

impl Ctx<'_> {
    pub fn diag(
        &self,
        kind: DiagnosticKind,
        at: &Origin,
        key: &str,
        message: impl Into<String>,
        help: Option<String>,
    ) -> Diagnostic {
        match at {
            Origin::File(span) => Diagnostic::at(
                kind,
                self.file,
                self.source,
                span.clone(),
                key,
                message,
                help,
            ),
            Origin::Set { idx, span } => {
                let raw = self.overrides.get(*idx).map(String::as_str).unwrap_or("");
                let mut d = Diagnostic::at(
                    kind,
                    format!("--set {raw}"),
                    raw,
                    Some(span.clone()),
                    key,
                    message,
                    help,
                );
                d.line = None;
                d.column = None;
                d
            }
        }
    }
}

// ---- from toml_edit ----

fn file(span: Option<Range<usize>>) -> Origin {
    Origin::File(span)
}

fn from_value(v: &toml_edit::Value, at: &dyn Fn(Option<Range<usize>>) -> Origin) -> Node {
    use toml_edit::Value as T;
    let origin = at(v.span());
    let v = match v {
        T::String(s) => V::Str(s.value().clone()),
        T::Integer(i) => V::Int(*i.value()),
        T::Float(f) => V::Float(*f.value()),
        T::Boolean(b) => V::Bool(*b.value()),
        T::Datetime(d) => V::Datetime(d.value().to_string()),
        T::Array(a) => V::Array(a.iter().map(|x| from_value(x, at)).collect()),
        T::InlineTable(t) => {
            let mut out = Table::default();
            for (k, x) in t.iter() {
                let key_at = at(t.key(k).and_then(|k| k.span()));
                out.entries.push(Entry {
                    key: k.to_string(),
                    key_at,
                    node: from_value(x, at),
                });
            }
            V::Table(out)
        }
    };
    Node { v, at: origin }
}

fn from_table(t: &toml_edit::Table) -> Node {
    let mut out = Table::default();
    for (k, item) in t.iter() {
        let key_span = t.key(k).and_then(|k| k.span());
        let node = match from_item(item) {
            Some(n) => n,
            None => continue,
        };
        // An implicit table has no span of its own: point at its key instead.
        let node = match (&node.at, &node.v) {
            (Origin::File(None), V::Table(_)) => Node {
                at: file(key_span.clone()),
                ..node
            },
            _ => node,
        };
        out.entries.push(Entry {
            key: k.to_string(),
            key_at: file(key_span),
            node,
        });
    }
    Node {
        v: V::Table(out),
        at: file(t.span()),
    }
}

fn from_item(item: &toml_edit::Item) -> Option<Node> {
    use toml_edit::Item as I;
    match item {
        I::None => None,
        I::Value(v) => Some(from_value(v, &file)),
        I::Table(t) => Some(from_table(t)),
        I::ArrayOfTables(a) => {
            let items: Vec<Node> = a.iter().map(from_table).collect();
            let span = a.span().or_else(|| {
                items.first().and_then(|n| match &n.at {
                    Origin::File(s) => s.clone(),
                    _ => None,
                })
            });
            Some(Node {
                v: V::Array(items),
                at: file(span),
            })
        }
    }
}

/// Parses the scenario text into a tree; a TOML syntax error becomes a diagnostic at
/// its position.
pub(crate) fn parse_document(ctx: &Ctx<'_>) -> Result<Node, Diagnostic> {
    match toml_edit::ImDocument::parse(ctx.source) {
        Ok(doc) => Ok(from_table(doc.as_table())),
        Err(e) => {
            let msg = e
                .message()
                .trim()
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join("; ");
            let hint = match e.span().and_then(|sp| unquoted_value(ctx.source, sp.start)) {
                Some((key, value)) => format!("strings need quotes: {key} = \"{value}\"; see https://toml.io for the syntax"),
                None => "see https://toml.io for the syntax".into(),
            };
            Err(ctx.diag(DiagnosticKind::Syntax, &Origin::File(e.span()), "", format!("TOML syntax error: {msg}"), Some(hint)))
        }
    }
}

/// The key and value of the `key = value` line holding byte `at`, when the value is a
/// bare word TOML cannot read (`duration = 10s`, `kind = sfq`): the syntax error a
/// missing pair of quotes makes. None for anything else (an unclosed string, a bad
/// table header), whose error needs no hint about quotes.
fn unquoted_value(source: &str, at: usize) -> Option<(&str, &str)> {
    let at = at.min(source.len());
    let start = source[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = source[at..].find('\n').map_or(source.len(), |i| at + i);
    let line = source.get(start..end)?;
    let line = line.split_once(" #").map_or(line, |(l, _)| l);
    let (key, value) = line.split_once('=')?;
    let (key, value) = (key.trim(), value.trim());
    let bare = |c: char| c.is_ascii_alphanumeric() || "_-.+:/%".contains(c);
    let is_key = !key.is_empty() && key.chars().all(|c| bare(c) || c == '"');
    let is_word = !value.is_empty() && value.chars().all(bare) && value.chars().any(|c| c.is_ascii_alphabetic());
    // A value TOML reads (1e5, 0x1f, true, a date) is not what the error is about.
    let is_toml = toml_edit::ImDocument::parse(format!("v = {value}")).is_ok();
    (is_key && is_word && !is_toml).then_some((key, value))
}

// ---- --set overrides ----

/// Parses an override's VALUE: as a TOML value if it is one, otherwise a bare string.
pub(crate) fn parse_override_value(text: &str, at: Origin) -> Node {
    let src = format!("v = {text}");
    if let Ok(doc) = toml_edit::ImDocument::parse(src.as_str()) {
        let t = doc.as_table();
        if t.len() == 1 {
            if let Some(v) = t.get("v").and_then(|i| i.as_value()) {
                let whole = at.clone();
                let mut n = from_value(v, &|_| whole.clone());
                if let V::Datetime(d) = n.v {
                    // Dates are not scenario values; keep the text.
                    n.v = V::Str(d);
                }
                n.at = at;
                return n;
            }
        }
    }
    Node {
        v: V::Str(text.to_string()),
        at,
    }
}

/// Splits `KEY=VALUE`, returning the key segments with their byte ranges in `raw`, and
/// the value's text and range.
#[allow(clippy::type_complexity)]
pub(crate) fn split_assignment(
    raw: &str,
) -> Result<(Vec<(String, Range<usize>)>, &str, Range<usize>), String> {
    let eq = raw
        .find('=')
        .ok_or_else(|| "expected KEY=VALUE (no `=` found)".to_string())?;
    let key = &raw[..eq];
    let value = &raw[eq + 1..];
    let mut segs = Vec::new();
    let mut pos = 0usize;
    for seg in key.split('.') {
        let start = pos;
        pos += seg.len() + 1;
        let trimmed = seg.trim();
        if trimmed.is_empty() {
            return Err(format!("empty key segment in `{key}`"));
        }
        let lead = seg.len() - seg.trim_start().len();
        let s = start + lead;
        segs.push((trimmed.to_string(), s..s + trimmed.len()));
    }
    let vstart = eq + 1 + (value.len() - value.trim_start().len());
    let v = value.trim();
    let vrange = vstart..(vstart + v.len()).max(vstart);
    Ok((segs, v, if v.is_empty() { eq..eq + 1 } else { vrange }))
}

/// Applies the `idx`th override (`raw` = `KEY=VALUE`) to `root`.
pub(crate) fn apply_override(
    ctx: &Ctx<'_>,
    root: &mut Node,
    idx: usize,
    raw: &str,
) -> Result<(), Diagnostic> {
    let whole = Origin::Set {
        idx,
        span: 0..raw.len(),
    };
    let (segs, vtext, vrange) = split_assignment(raw).map_err(|m| {
        ctx.diag(
            DiagnosticKind::Syntax,
            &whole,
            "",
            m,
            Some("write --set KEY=VALUE with a dotted key, e.g. --set device.bql.limit_min=8 or --set traffic.0.rate=50kpps".into()),
        )
    })?;
    let value = parse_override_value(vtext, Origin::Set { idx, span: vrange });
    // `[sysctl]` keys are the kernel's dotted names: `sysctl.net.ipv4.tcp_ecn` is the
    // key "net.ipv4.tcp_ecn" of [sysctl], not a table `net`.
    let mut segs = segs;
    if segs.len() > 2 && segs[0].0 == "sysctl" {
        let rest = segs.split_off(1);
        let span = rest[0].1.start..rest[rest.len() - 1].1.end;
        let name = rest.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>().join(".");
        segs.push((name, span));
    }
    let full_key: Vec<&str> = segs.iter().map(|(s, _)| s.as_str()).collect();
    let mut cur = root;
    for (i, (seg, range)) in segs.iter().enumerate() {
        let last = i + 1 == segs.len();
        let path = full_key[..i].join(".");
        let here = full_key[..=i].join(".");
        let key_at = Origin::Set {
            idx,
            span: range.clone(),
        };
        match &mut cur.v {
            V::Table(t) => {
                if last {
                    match t.get_mut(seg) {
                        Some(e) => e.node = value,
                        None => t.entries.push(Entry {
                            key: seg.clone(),
                            key_at,
                            node: value,
                        }),
                    }
                    return Ok(());
                }
                if t.get(seg).is_none() {
                    // A key the document lacks followed by an index: `traffic.0.rate`
                    // starts an array of tables (`[[traffic]]`), as in TOML, and so does
                    // `qdisc.class.0.rate` (`[[qdisc.class]]`). Anything else starts a
                    // table, and so does everything below `[sweep]` and `[[variant]]`:
                    // they take dotted scenario keys (`sweep.traffic.0.cc` is the
                    // sweep's key "traffic.0.cc").
                    // `traffic` and a qdisc's `class` are arrays of tables whatever follows them,
                    // so that `traffic.-1.size` or `traffic.x.size` is reported as not an
                    // index of `traffic` rather than as `traffic` being a table.
                    let v = override_container(&full_key, &segs[i + 1].0, i);
                    t.entries.push(Entry {
                        key: seg.clone(),
                        key_at: key_at.clone(),
                        node: Node { v, at: key_at },
                    });
                }
                cur = &mut t.get_mut(seg).expect("just inserted").node;
            }
            V::Array(a) => {
                let len = a.len();
                let index = override_index(ctx, seg, len, &key_at, &here, &path)?;
                if last {
                    if index == len {
                        a.push(value);
                    } else {
                        a[index] = value;
                    }
                    return Ok(());
                }
                if index == len {
                    a.push(Node {
                        v: V::Table(Table::default()),
                        at: key_at,
                    });
                }
                cur = &mut a[index];
            }
            other => {
                let what = other.type_name();
                return Err(ctx.diag(
                    DiagnosticKind::Type,
                    &key_at,
                    &here,
                    format!(
                        "cannot set `{}`: `{path}` is {what}, not a table",
                        full_key.join(".")
                    ),
                    Some(format!("set `{path}` itself, e.g. --set {path}=VALUE")),
                ));
            }
        }
    }
    Ok(())
}

/// The container `--set` creates for the missing key `full_key[i]`, followed by `next`:
/// an array of tables before an index (and for `traffic` and a qdisc's `class` always),
/// else a table (always below `[sweep]` and `[[variant]]`, whose keys are dotted).
fn override_container(full_key: &[&str], next: &str, i: usize) -> V {
    let seg = full_key[i];
    let dotted_keys = i > 0 && matches!(full_key[0], "sweep" | "variant");
    let array_of_tables = (i == 0 && seg == "traffic")
        || (i > 0 && seg == "class" && matches!(full_key[i - 1], "qdisc" | "child"));
    let next_is_index = !dotted_keys && (array_of_tables || next.parse::<usize>().is_ok());
    if next_is_index { V::Array(Vec::new()) } else { V::Table(Table::default()) }
}

/// `seg` as an index of the array `path` of `len` entries (`len` appends one).
fn override_index(ctx: &Ctx<'_>, seg: &str, len: usize, key_at: &Origin, here: &str, path: &str) -> Result<usize, Diagnostic> {
    seg.parse::<usize>().ok().filter(|&n| n <= len).ok_or_else(|| {
        ctx.diag(
            DiagnosticKind::Value,
            key_at,
            here,
            format!("`{seg}` is not an index of `{path}`, which has {len} entr{}", if len == 1 { "y" } else { "ies" }),
            Some(if len == 0 {
                format!("use index 0 to add the first entry: {path}.0.KEY=VALUE")
            } else {
                format!("use an index in 0..={} ({len} adds an entry)", len - 1)
            }),
        )
    })
}
