//! Loading errors: where (file, line, column, key) and what would be valid.

use std::fmt;
use std::ops::Range;

/// What sort of problem a [`Diagnostic`] reports, so the CLI can choose how to react.
/// Every kind is "bad input" today (exit code 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiagnosticKind {
    /// The scenario file could not be read.
    Io,
    /// TOML syntax error, or a malformed `--set` / sweep argument.
    Syntax,
    /// A key the schema (or the qdisc) does not have.
    UnknownKey,
    /// A value of the wrong TOML type.
    Type,
    /// A value of the right type that is out of range, unparseable, or inconsistent
    /// with another key, or a required key that is missing.
    Value,
    /// Valid in Linux, but not modelled yet (e.g. a qdisc the simulator lacks).
    Unsupported,
}

/// A scenario loading error.
///
/// `file` is the scenario's path, or `--set KEY=VALUE` when the offending key or value
/// came from an override (then `line`/`column` are `None`, `source` is the override
/// text and `span` points into it). `source` and `span` let a renderer such as miette
/// show the offending text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub kind: DiagnosticKind,
    pub file: String,
    /// 1-based.
    pub line: Option<usize>,
    /// 1-based, in characters.
    pub column: Option<usize>,
    /// The dotted key the error is about (`device.bql.limit_min`, `traffic.0.rate`);
    /// empty when the error is about the whole file.
    pub key: String,
    pub message: String,
    /// What would be valid (did-you-mean, the valid keys or values, unit syntax).
    pub help: Option<String>,
    /// The text `span` points into: the file's contents, or the `--set` argument.
    pub source: String,
    /// Byte range in `source`.
    pub span: Option<Range<usize>>,
}

impl Diagnostic {
    /// A diagnostic at `span` of `source`, computing line and column.
    pub fn at(
        kind: DiagnosticKind,
        file: impl Into<String>,
        source: impl Into<String>,
        span: Option<Range<usize>>,
        key: impl Into<String>,
        message: impl Into<String>,
        help: Option<String>,
    ) -> Self {
        let source = source.into();
        let (line, column) = match &span {
            Some(s) => {
                let (l, c) = line_col(&source, s.start);
                (Some(l), Some(c))
            }
            None => (None, None),
        };
        Diagnostic {
            kind,
            file: file.into(),
            line,
            column,
            key: key.into(),
            message: message.into(),
            help,
            source,
            span,
        }
    }

    /// The location prefix: `file:line:col`, `file:line` or `file`.
    pub fn location(&self) -> String {
        match (self.line, self.column) {
            (Some(l), Some(c)) => format!("{}:{l}:{c}", self.file),
            (Some(l), None) => format!("{}:{l}", self.file),
            _ => self.file.clone(),
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location(), self.message)?;
        if let Some(h) = &self.help {
            write!(f, "; {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostic {}

/// 1-based line and column (in characters) of byte `offset` in `source`.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let mut off = offset.min(source.len());
    while off > 0 && !source.is_char_boundary(off) {
        off -= 1;
    }
    let before = &source[..off];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// The most similar candidate to `word`, if any is similar enough.
#[allow(clippy::unnecessary_map_or)] // is_none_or needs Rust 1.82; MSRV is 1.80
pub fn did_you_mean<'a, I>(word: &str, candidates: I) -> Option<String>
where
    I: IntoIterator<Item = &'a str>,
{
    let lw = word.to_ascii_lowercase();
    let mut best: Option<(f64, &str)> = None;
    for c in candidates {
        let score = strsim::jaro_winkler(&lw, &c.to_ascii_lowercase());
        if score >= 0.8 && best.map_or(true, |(s, _)| score > s) {
            best = Some((score, c));
        }
    }
    best.map(|(_, c)| c.to_string())
}

/// "did you mean `x`? valid keys: a, b, c" (or just the list).
pub fn suggest(word: &str, candidates: &[&str], what: &str) -> String {
    let list = candidates.join(", ");
    match did_you_mean(word, candidates.iter().copied()) {
        Some(m) => format!("did you mean `{m}`? valid {what}: {list}"),
        None => format!("valid {what}: {list}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_chars() {
        let s = "a = 1\nbé = 2\n";
        assert_eq!(line_col(s, 0), (1, 1));
        assert_eq!(line_col(s, 6), (2, 1));
        assert_eq!(line_col(s, 10), (2, 4));
        assert_eq!(line_col(s, 1000), (3, 1));
    }

    #[test]
    fn suggestions() {
        assert_eq!(
            did_you_mean("limit_mn", ["limit_min", "limit_max", "unit"]).as_deref(),
            Some("limit_min")
        );
        assert_eq!(did_you_mean("zzzz", ["limit_min"]), None);
    }
}
