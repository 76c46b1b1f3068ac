//! The section reader every part of the resolver shares: one table of the document
//! with its dotted path (`device.bql`), and typed reads of its keys that check ranges
//! and units and report a bad value at its file:line:column with the key's full name.

use crate::diag::{did_you_mean, suggest, Diagnostic, DiagnosticKind as K};
use crate::tree::{Ctx, Entry, Node, Origin, Table, V};
use darkbuf_model::units;

static EMPTY: Table = Table {
    entries: Vec::new(),
};

/// One table of the document being resolved, with its dotted path.
pub(crate) struct Sec<'a> {
    pub t: &'a Table,
    pub path: String,
    pub at: Origin,
    pub ctx: &'a Ctx<'a>,
}

impl<'a> Sec<'a> {
    pub fn root(node: &'a Node, ctx: &'a Ctx<'a>) -> Self {
        let t = match &node.v {
            V::Table(t) => t,
            _ => &EMPTY,
        };
        Sec {
            t,
            path: String::new(),
            at: node.at.clone(),
            ctx,
        }
    }

    pub fn kp(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn where_(&self) -> String {
        if self.path.is_empty() {
            "at the top level".into()
        } else {
            format!("in [{}]", self.path)
        }
    }

    pub fn entry(&self, key: &str) -> Option<&'a Entry> {
        self.t.get(key)
    }

    /// Where the value of `key` is, or where this table is when `key` is absent.
    pub fn origin(&self, key: &str) -> Origin {
        match self.entry(key) {
            Some(e) => e.node.at.clone(),
            None => self.at.clone(),
        }
    }

    pub fn key_origin(&self, key: &str) -> Origin {
        match self.entry(key) {
            Some(e) => e.key_at.clone(),
            None => self.at.clone(),
        }
    }

    /// Origin of a qdisc parameter that may sit in an array of tables, keyed as
    /// `class[1].rate` ([`ParamError::nested`]): the key's position if `key_pos`, else
    /// its value's. Falls back to the nearest enclosing element.
    pub fn param_origin(&self, key: &str, key_pos: bool) -> Origin {
        let Some((array, rest)) = key.split_once('[') else {
            return if key_pos { self.key_origin(key) } else { self.origin(key) };
        };
        let Some(e) = self.entry(array) else { return self.at.clone() };
        let parsed = rest.split_once("].").and_then(|(i, k)| Some((i.parse::<usize>().ok()?, k)));
        let (V::Array(items), Some((idx, sub))) = (&e.node.v, parsed) else {
            return e.key_at.clone();
        };
        let Some(item) = items.get(idx) else { return e.key_at.clone() };
        let V::Table(t) = &item.v else { return item.at.clone() };
        let mut t = t;
        // A key inside a table of the element (`class[0].qdisc_params.limit`).
        let mut parts = sub.split('.').peekable();
        while let Some(part) = parts.next() {
            let Some(se) = t.get(part) else { return item.at.clone() };
            match (&se.node.v, parts.peek()) {
                (V::Table(inner), Some(_)) => t = inner,
                (_, Some(_)) => return se.node.at.clone(),
                _ if key_pos => return se.key_at.clone(),
                _ => return se.node.at.clone(),
            }
        }
        item.at.clone()
    }

    pub fn check_keys(&self, valid: &[&str], note: Option<&str>) -> Result<(), Diagnostic> {
        for e in &self.t.entries {
            if !valid.contains(&e.key.as_str()) {
                let mut help = suggest(&e.key, valid, "keys");
                if let Some(n) = note {
                    help.push_str("; ");
                    help.push_str(n);
                }
                return Err(self.ctx.diag(
                    K::UnknownKey,
                    &e.key_at,
                    &self.kp(&e.key),
                    format!("unknown key `{}` {}", e.key, self.where_()),
                    Some(help),
                ));
            }
        }
        Ok(())
    }

    pub fn type_err(&self, e: &Entry, expected: &str, help: Option<String>) -> Diagnostic {
        self.ctx.diag(
            K::Type,
            &e.node.at,
            &self.kp(&e.key),
            format!(
                "`{}` must be {expected}, found {}",
                self.kp(&e.key),
                e.node.v.describe()
            ),
            help,
        )
    }

    pub fn value_err(&self, key: &str, message: String, help: Option<String>) -> Diagnostic {
        self.ctx
            .diag(K::Value, &self.origin(key), &self.kp(key), message, help)
    }

    pub fn sub(&self, key: &str) -> Result<Sec<'a>, Diagnostic> {
        let path = self.kp(key);
        match self.entry(key) {
            None => Ok(Sec {
                t: &EMPTY,
                path,
                at: self.at.clone(),
                ctx: self.ctx,
            }),
            Some(e) => match &e.node.v {
                V::Table(t) => Ok(Sec {
                    t,
                    path,
                    at: e.node.at.clone(),
                    ctx: self.ctx,
                }),
                _ => Err(self.type_err(e, "a table", Some(format!("write a [{path}] section")))),
            },
        }
    }

    pub fn int_opt(&self, key: &str, min: i64, max: i64) -> Result<Option<i64>, Diagnostic> {
        let Some(e) = self.entry(key) else {
            return Ok(None);
        };
        let range = format!("an integer in {min}..={max}");
        match &e.node.v {
            V::Int(i) if (min..=max).contains(i) => Ok(Some(*i)),
            V::Int(i) => Err(self.value_err(
                key,
                format!("`{}` = {i} is out of range", self.kp(key)),
                Some(format!("expected {range}")),
            )),
            _ => Err(self.type_err(e, "an integer", Some(format!("expected {range}")))),
        }
    }

    /// An integer whose valid values the caller checks (a set such as CONFIG_HZ's, or a
    /// range that depends on another key): a value of another type is a type error whose
    /// help is `expected` ("expected one of 100, 250, 300, 1000"), not the i64 range.
    pub fn int_any(&self, key: &str, expected: &str) -> Result<Option<i64>, Diagnostic> {
        let Some(e) = self.entry(key) else {
            return Ok(None);
        };
        match &e.node.v {
            V::Int(i) => Ok(Some(*i)),
            _ => Err(self.type_err(e, "an integer", Some(format!("expected {expected}")))),
        }
    }

    /// An array of CPU numbers, each below `cpus`, at least one; `None` if absent.
    /// `cpus` is the section's host's: `peer.cpus` in `[peer]`, else `machine.cpus`.
    pub fn cpu_list(&self, key: &str, cpus: u32) -> Result<Option<Vec<u32>>, Diagnostic> {
        let Some(e) = self.entry(key) else {
            return Ok(None);
        };
        let host = self.path.split('.').next().filter(|s| matches!(*s, "peer" | "lan")).unwrap_or("machine");
        let expected = format!(
            "expected an array of CPU numbers in 0..={} ({host}.cpus = {cpus}), e.g. [{}]",
            cpus - 1,
            1.min(cpus - 1)
        );
        let V::Array(items) = &e.node.v else {
            return Err(self.type_err(e, "an array of CPU numbers", Some(expected)));
        };
        if items.is_empty() {
            return Err(self.value_err(key, format!("`{}` is empty", self.kp(key)), Some(expected)));
        }
        let mut out = Vec::with_capacity(items.len());
        for (i, n) in items.iter().enumerate() {
            match n.v {
                V::Int(c) if (0..cpus as i64).contains(&c) => out.push(c as u32),
                _ => {
                    let what = match n.v {
                        V::Int(c) => format!(
                            "`{}.{i}` = {c} is not a CPU of the {}",
                            self.kp(key),
                            match host { "peer" => "peer", "lan" => "client", _ => "machine" }
                        ),
                        _ => format!("`{}.{i}` must be a CPU number, found {}", self.kp(key), n.v.describe()),
                    };
                    return Err(self.ctx.diag(K::Value, &n.at, &format!("{}.{i}", self.kp(key)), what, Some(expected)));
                }
            }
        }
        Ok(Some(out))
    }

    pub fn int(&self, key: &str, default: i64, min: i64, max: i64) -> Result<i64, Diagnostic> {
        Ok(self.int_opt(key, min, max)?.unwrap_or(default))
    }

    pub fn u32(&self, key: &str, default: u32, min: u32, max: u32) -> Result<u32, Diagnostic> {
        Ok(self.int(key, default as i64, min as i64, max as i64)? as u32)
    }

    /// A size in bytes: an integer, or a string in tc's size units ("4MiB", "64k").
    pub fn size_bytes(&self, key: &str, default: u64, min: u64, max: u64) -> Result<u64, Diagnostic> {
        let Some(e) = self.entry(key) else {
            return Ok(default);
        };
        let expected = format!("a size in {min}..={max} bytes: an integer or {}", units::SIZE_EXPECTED);
        let v = match &e.node.v {
            V::Int(i) if *i >= 0 => *i as u64,
            V::Str(t) => units::parse_size_bytes(t)
                .map_err(|u| self.value_err(key, format!("`{}`: {}", self.kp(key), u.message), Some(expected.clone())))?,
            V::Int(_) => u64::MAX,
            _ => return Err(self.type_err(e, "a size (integer bytes or a string such as \"4MiB\")", Some(expected))),
        };
        if !(min..=max).contains(&v) {
            return Err(self.value_err(key, format!("`{}` = {} is out of range", self.kp(key), e.node.v.show()), Some(expected)));
        }
        Ok(v)
    }

    pub fn float(&self, key: &str, default: f64, min: f64, max: f64) -> Result<f64, Diagnostic> {
        let Some(e) = self.entry(key) else {
            return Ok(default);
        };
        let help = Some(format!("expected a number in {min}..={max}"));
        let v = match &e.node.v {
            V::Float(f) => *f,
            V::Int(i) => *i as f64,
            _ => return Err(self.type_err(e, "a number", help)),
        };
        if v.is_nan() || v < min || v > max {
            return Err(self.value_err(
                key,
                format!("`{}` = {} is out of range", self.kp(key), e.node.v.show()),
                help,
            ));
        }
        Ok(v)
    }

    pub fn boolean(&self, key: &str, default: bool) -> Result<bool, Diagnostic> {
        let Some(e) = self.entry(key) else {
            return Ok(default);
        };
        match &e.node.v {
            V::Bool(b) => Ok(*b),
            _ => Err(self.type_err(e, "a boolean", Some("expected true or false".into()))),
        }
    }

    pub fn string(&self, key: &str, default: &str) -> Result<String, Diagnostic> {
        let Some(e) = self.entry(key) else {
            return Ok(default.to_string());
        };
        match &e.node.v {
            V::Str(s) => Ok(s.clone()),
            _ => Err(self.type_err(e, "a string", Some(format!("write {key} = \"...\"")))),
        }
    }

    /// One of `choices` (exact spelling).
    pub fn choice(
        &self,
        key: &str,
        default: &'static str,
        choices: &[&'static str],
    ) -> Result<&'static str, Diagnostic> {
        let Some(e) = self.entry(key) else {
            return Ok(default);
        };
        let list = choices
            .iter()
            .map(|c| format!("\"{c}\""))
            .collect::<Vec<_>>()
            .join(", ");
        match &e.node.v {
            V::Str(s) => match choices.iter().find(|c| **c == s.as_str()) {
                Some(c) => Ok(c),
                None => {
                    let help = match did_you_mean(s, choices.iter().copied()) {
                        Some(m) => format!("did you mean \"{m}\"? valid values: {list}"),
                        None => format!("valid values: {list}"),
                    };
                    Err(self.value_err(
                        key,
                        format!("`{}` = \"{s}\" is not valid", self.kp(key)),
                        Some(help),
                    ))
                }
            },
            _ => Err(self.type_err(e, "a string", Some(format!("one of {list}")))),
        }
    }

    /// A duration string in ns; zero allowed unless `positive`.
    pub fn duration(&self, key: &str, default: u64, positive: bool) -> Result<u64, Diagnostic> {
        let Some(e) = self.entry(key) else {
            return Ok(default);
        };
        let kp = self.kp(key);
        let s = match &e.node.v {
            V::Str(s) => s,
            V::Int(_) | V::Float(_) => {
                return Err(self.type_err(
                    e,
                    "a duration string",
                    Some(format!(
                        "the unit is never guessed: write {key} = \"{}s\"; expected {}",
                        e.node.v.show(),
                        units::DURATION_EXPECTED
                    )),
                ))
            }
            _ => {
                return Err(self.type_err(
                    e,
                    "a duration string",
                    Some(format!("expected {}", units::DURATION_EXPECTED)),
                ))
            }
        };
        let ns = units::parse_duration_ns(s).map_err(|u| {
            self.value_err(
                key,
                format!("`{kp}`: {}", u.message),
                Some(format!("expected {}", u.expected)),
            )
        })?;
        if positive && ns <= 0 {
            return Err(self.value_err(
                key,
                format!("`{kp}` must be positive, got \"{s}\""),
                Some(format!(
                    "expected a duration > 0, e.g. \"10s\"; {}",
                    units::DURATION_EXPECTED
                )),
            ));
        }
        if ns < 0 {
            return Err(self.value_err(
                key,
                format!("`{kp}` must not be negative, got \"{s}\""),
                Some(format!(
                    "expected a duration >= 0, e.g. \"0s\" or \"1s\"; {}",
                    units::DURATION_EXPECTED
                )),
            ));
        }
        if ns > u64::MAX as i128 {
            return Err(self.value_err(
                key,
                format!("`{kp}` = \"{s}\" is too long"),
                Some("expected at most ~584 years".into()),
            ));
        }
        Ok(ns as u64)
    }

    /// [`Sec::duration`], at most `max_ns` (a bound on the run's time; see [`crate::limits`]).
    pub fn duration_max(&self, key: &str, default: u64, positive: bool, max_ns: u64) -> Result<u64, Diagnostic> {
        let ns = self.duration(key, default, positive)?;
        if ns > max_ns {
            return Err(self.value_err(
                key,
                format!("`{}` = {} is longer than the {} a run may take", self.kp(key), self.entry(key).map_or(String::new(), |e| e.node.v.show()), human_bound(max_ns)),
                Some(format!("expected at most \"{}\" (a bound on the run's time); run several shorter scenarios instead", short_bound(max_ns))),
            ));
        }
        Ok(ns)
    }
}

/// A duration bound as the README says it: "1 hour (3600 s)", "30 s".
fn human_bound(ns: u64) -> String {
    let s = ns / 1_000_000_000;
    match s {
        3600 => "1 hour (3600 s)".into(),
        _ if s % 3600 == 0 => format!("{} hours ({s} s)", s / 3600),
        _ => format!("{s} s"),
    }
}

/// A duration bound as a scenario writes it: "1h", "30s".
fn short_bound(ns: u64) -> String {
    let s = ns / 1_000_000_000;
    if s % 3600 == 0 { format!("{}h", s / 3600) } else { format!("{s}s") }
}
