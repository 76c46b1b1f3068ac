//! Reads a run or sweep results JSON for `darkbuf report`; an error says
//! `FILE:LINE:COLUMN`, the field path and what was expected there.

use crate::run::{AnyResults, Failure};
use darkbuf_report::{Results, SweepResults};
use std::path::Path;

/// What shape a results JSON has, judged by its top-level keys: a sweep's has
/// `points`, a run's `runs` or `summary` (or the run's other keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Run,
    Sweep,
}

const RUN_KEYS: [&str; 5] = ["runs", "summary", "scenario", "backend", "environment"];

fn shape_of(v: &serde_json::Value) -> Option<Shape> {
    let o = v.as_object()?;
    if o.contains_key("points") {
        Some(Shape::Sweep)
    } else if RUN_KEYS.iter().any(|k| o.contains_key(*k)) {
        Some(Shape::Run)
    } else {
        None
    }
}

/// A serde_json error's message without the " at line L column C" serde_json appends
/// (the CLI puts the position first, `FILE:L:C: ...`, as for scenario errors).
fn json_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    text.strip_suffix(&suffix).map_or(text.clone(), str::to_string)
}

/// `FILE:L:C` of a serde_json error (`FILE` when it has no position).
fn json_location(path: &Path, e: &serde_json::Error) -> String {
    if e.line() == 0 {
        path.display().to_string()
    } else {
        // serde_json counts columns from 0 at a line's start (an end of file there).
        format!("{}:{}:{}", path.display(), e.line(), e.column().max(1))
    }
}

/// A serde path as jq writes one: `points[2].results.summary."ping.rtt_avg_ms".mean`
/// (keys that are not plain words are quoted, since metric names have dots in them).
fn json_path(p: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in p.iter() {
        match seg {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                let plain = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if plain {
                    out.push_str(key);
                } else {
                    out.push_str(&serde_json::Value::String(key.clone()).to_string());
                }
            }
            Segment::Unknown => out.push_str(if out.is_empty() { "?" } else { ".?" }),
        }
    }
    out
}

/// Reads `text` as the results JSON of the shape it has; an error says where
/// (`FILE:LINE:COLUMN`), at which field (`summary."ping.rtt_avg_ms".mean`), and what
/// was expected there.
pub(crate) fn parse_results(path: &Path, text: &str) -> Result<AnyResults, Failure> {
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| Failure::Input(format!("{}: not JSON: {}", json_location(path, &e), json_message(&e))))?;
    let shape = shape_of(&value).ok_or_else(|| {
        let found = match &value {
            serde_json::Value::Object(o) if o.is_empty() => "an empty object".to_string(),
            serde_json::Value::Object(o) => {
                let keys: Vec<String> = o.keys().take(8).map(|k| format!("`{k}`")).collect();
                format!("an object with {}{}", keys.join(", "), if o.len() > 8 { ", ..." } else { "" })
            }
            serde_json::Value::Array(_) => "an array".into(),
            _ => "a single value".into(),
        };
        Failure::Input(format!(
            "{}:1:1: neither a run nor a sweep results JSON: found {found}; expected the object `darkbuf run --out` \
             writes (keys `scenario`, `backend`, `environment`, `runs`, `summary`, `unavailable`) or the one `darkbuf \
             sweep --out` writes (keys `name`, `points`)",
            path.display()
        ))
    })?;
    // The tree is read as is; only a file that does not fit its shape is read again,
    // from its text, for the position and the field path of the error.
    let parsed = match shape {
        Shape::Sweep => serde_json::from_value::<SweepResults>(value).map(AnyResults::Sweep),
        Shape::Run => serde_json::from_value::<Results>(value).map(AnyResults::Run),
    };
    parsed.map_err(|e| {
        let mut de = serde_json::Deserializer::from_str(text);
        let located = match shape {
            Shape::Sweep => serde_path_to_error::deserialize::<_, SweepResults>(&mut de).err(),
            Shape::Run => serde_path_to_error::deserialize::<_, Results>(&mut de).err(),
        };
        let what = match shape {
            Shape::Sweep => "a sweep results JSON (it has `points`)",
            Shape::Run => "a run results JSON",
        };
        match located {
            Some(pe) => {
                let field = json_path(pe.path());
                let field = if field.is_empty() || field == "?" { String::new() } else { format!("{field}: ") };
                Failure::Input(format!(
                    "{}: {field}{}; in {what}",
                    json_location(path, pe.inner()),
                    json_message(pe.inner())
                ))
            }
            None => Failure::Input(format!("{}: {}; in {what}", path.display(), json_message(&e))),
        }
    })
}
