//! Qdisc parameters as `tc qdisc add ... <kind> KEY VALUE ...` takes them.
//!
//! Each qdisc parses its own parameters (as each `net/sched/sch_*.c` has its own
//! `*_change()`), applying tc's defaults and the kernel's clamps. The scenario layer
//! turns a failure into a diagnostic with the file position of `qdisc.KEY`.

use crate::units::{self, Rate};
use std::collections::BTreeMap;

/// A parameter value as written in the scenario.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    /// An array of tables (`[[qdisc.class]]`): one parameter set per element, each
    /// parsed by the qdisc like a nested `tc class add` line.
    Tables(Vec<Params>),
    /// One table: a nested qdisc's parameters (an htb leaf's `qdisc_params`, netem's
    /// `[qdisc.child]` with its `kind`).
    Table(Params),
}

impl std::fmt::Display for ParamValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamValue::Int(v) => write!(f, "{v}"),
            // As TOML writes them (`1.0`, `1e300`, `nan`, `-inf`), never 300 digits,
            // and a float never shown as the integer a parameter may want (`1`).
            ParamValue::Float(v) if v.is_nan() => f.write_str("nan"),
            ParamValue::Float(v) if v.is_infinite() => f.write_str(if *v > 0.0 { "inf" } else { "-inf" }),
            ParamValue::Float(v) => write!(f, "{v:?}"),
            // Quoted and escaped, so that a control character or a quote in the value
            // cannot garble the message it is shown in.
            ParamValue::Str(v) => write!(f, "{v:?}"),
            ParamValue::Bool(v) => write!(f, "{v}"),
            ParamValue::Tables(v) => write!(f, "[{} tables]", v.len()),
            ParamValue::Table(_) => f.write_str("a table"),
        }
    }
}

/// What went wrong with one parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamError {
    /// `key` is not a parameter of this qdisc; `valid` lists the ones it has.
    Unknown { key: String, valid: Vec<&'static str> },
    /// `key` has a value of the wrong type or out of range; `expected` says what is valid.
    Invalid { key: String, message: String, expected: String },
}

impl ParamError {
    /// Re-keys an error from the `index`-th table of the array `array` as
    /// `array[index].key`, so the scenario can point at the element.
    pub fn nested(self, array: &str, index: usize) -> ParamError {
        match self {
            ParamError::Unknown { key, valid } => {
                ParamError::Unknown { key: format!("{array}[{index}].{key}"), valid }
            }
            ParamError::Invalid { key, message, expected } => {
                ParamError::Invalid { key: format!("{array}[{index}].{key}"), message, expected }
            }
        }
    }

    /// Re-keys an error from the table under `key` as `key.inner`.
    pub fn nested_in(self, key: &str) -> ParamError {
        match self {
            ParamError::Unknown { key: k, valid } => ParamError::Unknown { key: format!("{key}.{k}"), valid },
            ParamError::Invalid { key: k, message, expected } => ParamError::Invalid { key: format!("{key}.{k}"), message, expected },
        }
    }

    pub fn key(&self) -> &str {
        match self {
            ParamError::Unknown { key, .. } | ParamError::Invalid { key, .. } => key,
        }
    }
}

impl std::fmt::Display for ParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamError::Unknown { key, valid } => {
                write!(f, "unknown parameter `{key}`; valid: {}", valid.join(", "))
            }
            ParamError::Invalid { key, message, expected } => {
                write!(f, "`{key}`: {message}; expected {expected}")
            }
        }
    }
}

impl std::error::Error for ParamError {}

/// The parameters of one qdisc, consumed key by key by its parser.
///
/// Every `take_*` removes the key; [`Params::finish`] then reports any key the qdisc
/// did not take as unknown, so a typo is never silently ignored.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Params {
    map: BTreeMap<String, ParamValue>,
}

impl Params {
    pub fn new(map: BTreeMap<String, ParamValue>) -> Self {
        Params { map }
    }

    /// From `(key, value)` pairs, as a `tc qdisc add` line lists them.
    pub fn from_pairs(kv: &[(&str, ParamValue)]) -> Self {
        Params { map: kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect() }
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &ParamValue)> {
        self.map.iter()
    }

    fn invalid(key: &str, message: String, expected: impl Into<String>) -> ParamError {
        ParamError::Invalid { key: key.into(), message, expected: expected.into() }
    }

    /// An unsigned integer within `min..=max`.
    pub fn take_u64(&mut self, key: &str, default: u64, min: u64, max: u64) -> Result<u64, ParamError> {
        let expected = format!("an integer in {min}..={max}");
        match self.map.remove(key) {
            None => Ok(default),
            Some(ParamValue::Int(v)) if v >= 0 && (v as u64) >= min && (v as u64) <= max => Ok(v as u64),
            Some(other) => Err(Self::invalid(key, format!("{other} is not valid"), expected)),
        }
    }

    pub fn take_u32(&mut self, key: &str, default: u32, min: u32, max: u32) -> Result<u32, ParamError> {
        self.take_u64(key, default as u64, min as u64, max as u64).map(|v| v as u32)
    }

    /// A size in bytes: an integer or a string with tc's size units ("1514b", "32Mb").
    pub fn take_size(&mut self, key: &str, default: u64, min: u64, max: u64) -> Result<u64, ParamError> {
        let expected = format!("{} in {min}..={max} bytes", units::SIZE_EXPECTED);
        let v = match self.map.remove(key) {
            None => return Ok(default),
            Some(ParamValue::Int(v)) if v >= 0 => v as u64,
            Some(ParamValue::Str(s)) => units::parse_size_bytes(&s)
                .map_err(|e| Self::invalid(key, e.message, expected.clone()))?,
            Some(other) => return Err(Self::invalid(key, format!("{other} is not a size"), expected)),
        };
        if v < min || v > max {
            return Err(Self::invalid(key, format!("{v} bytes is out of range"), expected));
        }
        Ok(v)
    }

    /// A time in nanoseconds from a duration string ("5ms"), within `min..=max`.
    pub fn take_time_ns(&mut self, key: &str, default: u64, min: u64, max: u64) -> Result<u64, ParamError> {
        let expected = units::DURATION_EXPECTED;
        let v = match self.map.remove(key) {
            None => return Ok(default),
            Some(ParamValue::Str(s)) => {
                units::parse_duration_ns(&s).map_err(|e| Self::invalid(key, e.message, expected))?
            }
            Some(other) => return Err(Self::invalid(key, format!("{other} is not a duration"), expected)),
        };
        if v < 0 {
            return Err(Self::invalid(key, format!("-{} is negative", units::format_duration_ns(v.unsigned_abs().min(u64::MAX as u128) as u64)), expected));
        }
        if v < min as i128 || v > max as i128 {
            return Err(Self::invalid(
                key,
                format!("{} is out of range ({}..={})", units::format_duration_ns(v.min(u64::MAX as i128) as u64),
                    units::format_duration_ns(min), units::format_duration_ns(max)),
                expected,
            ));
        }
        Ok(v as u64)
    }

    /// A rate in bits per second ("20mbit"); `max` is not accepted here.
    pub fn take_rate_bps(&mut self, key: &str, default: Option<u64>) -> Result<Option<u64>, ParamError> {
        let expected = "a bit rate such as \"20mbit\" or \"1gbit\"";
        match self.map.remove(key) {
            None => Ok(default),
            Some(ParamValue::Str(s)) => match units::parse_rate(&s) {
                Ok(Rate::Bps(b)) => Ok(Some(b)),
                Ok(_) => Err(Self::invalid(key, format!("\"{s}\" is not a bit rate"), expected)),
                Err(e) => Err(Self::invalid(key, e.message, expected)),
            },
            Some(other) => Err(Self::invalid(key, format!("{other} is not a rate"), expected)),
        }
    }

    pub fn take_bool(&mut self, key: &str, default: bool) -> Result<bool, ParamError> {
        match self.map.remove(key) {
            None => Ok(default),
            Some(ParamValue::Bool(b)) => Ok(b),
            Some(other) => Err(Self::invalid(key, format!("{other} is not a boolean"), "true or false")),
        }
    }

    /// One of a fixed set of words.
    pub fn take_choice(&mut self, key: &str, default: &'static str, choices: &[&'static str]) -> Result<&'static str, ParamError> {
        match self.map.remove(key) {
            None => Ok(default),
            Some(ParamValue::Str(s)) => choices
                .iter()
                .find(|c| c.eq_ignore_ascii_case(&s))
                .copied()
                .ok_or_else(|| Self::invalid(key, format!("\"{s}\" is not valid"), format!("one of {}", choices.join(", ")))),
            Some(other) => Err(Self::invalid(key, format!("{other} is not valid"), format!("one of {}", choices.join(", ")))),
        }
    }

    /// A list of integers (e.g. pfifo_fast's priomap).
    pub fn take_list_u32(&mut self, key: &str, len: usize, max: u32) -> Result<Option<Vec<u32>>, ParamError> {
        let expected = format!("{len} integers in 0..={max}, space separated");
        match self.map.remove(key) {
            None => Ok(None),
            Some(ParamValue::Str(s)) => {
                let v: Result<Vec<u32>, _> = s.split_whitespace().map(|w| w.parse::<u32>()).collect();
                match v {
                    Ok(v) if v.len() == len && v.iter().all(|&x| x <= max) => Ok(Some(v)),
                    _ => Err(Self::invalid(key, format!("\"{s}\" is not valid"), expected)),
                }
            }
            Some(other) => Err(Self::invalid(key, format!("{other} is not valid"), expected)),
        }
    }

    /// An array of tables (e.g. htb's `[[qdisc.class]]`); empty when absent. Errors in
    /// element `i` should be re-keyed with [`ParamError::nested`].
    pub fn take_tables(&mut self, key: &str) -> Result<Vec<Params>, ParamError> {
        match self.map.remove(key) {
            None => Ok(Vec::new()),
            Some(ParamValue::Tables(v)) => Ok(v),
            Some(other) => Err(Self::invalid(
                key,
                format!("{other} is not an array of tables"),
                format!("[[...{key}]] sections"),
            )),
        }
    }

    /// A string value taken as is (e.g. a class handle "1:10"); `None` when absent.
    pub fn take_str(&mut self, key: &str) -> Result<Option<String>, ParamError> {
        match self.map.remove(key) {
            None => Ok(None),
            Some(ParamValue::Str(s)) => Ok(Some(s)),
            Some(other) => Err(Self::invalid(key, format!("{other} is not a string"), "a string")),
        }
    }

    /// The raw value of `key`, taken; `None` when absent.
    pub fn take_value(&mut self, key: &str) -> Option<ParamValue> {
        self.map.remove(key)
    }

    /// One table (e.g. an htb leaf's `qdisc_params`); `None` when absent.
    pub fn take_table(&mut self, key: &str) -> Result<Option<Params>, ParamError> {
        match self.map.remove(key) {
            None => Ok(None),
            Some(ParamValue::Table(p)) => Ok(Some(p)),
            Some(other) => Err(Self::invalid(key, format!("{other} is not a table"), "a table, e.g. { limit = 300, ecn = true }")),
        }
    }

    /// Sets `key` (a parameter the caller adds, such as a child's `kind`).
    pub fn insert(&mut self, key: &str, v: ParamValue) {
        self.map.insert(key.to_string(), v);
    }

    /// Reports the first key no parser took as unknown.
    pub fn finish(self, valid: &[&'static str]) -> Result<(), ParamError> {
        match self.map.into_keys().next() {
            None => Ok(()),
            Some(key) => Err(ParamError::Unknown { key, valid: valid.to_vec() }),
        }
    }
}
