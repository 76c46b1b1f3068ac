//! Python values as scenario TOML: override values (`--set KEY=VALUE`), whole
//! scenarios given as dicts, and `KEY=VALUE` strings back as typed values.

use crate::errors::value_error;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use toml_edit::{Array, ArrayOfTables, DocumentMut, InlineTable, Item, Table, Value};

const VALID: &str = "valid values are bool, int, float, str, and lists and dicts of them";

/// How deep lists and dicts may nest in a value. A scenario value nests a few levels;
/// the limit keeps a list that contains itself, or a very deep one, from overflowing
/// the stack of the recursion below (a crash of the interpreter, not an error).
const MAX_DEPTH: usize = 64;

fn too_deep(py: Python<'_>, path: &str) -> PyErr {
    value_error(
        py,
        path,
        format!("lists and dicts nested more than {MAX_DEPTH} deep (does a list or dict contain itself?)"),
        VALID,
    )
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// "a set", "an object": the value's Python type with its article.
fn a_type(v: &Bound<'_, PyAny>) -> String {
    let name = v.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "object".into());
    let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
    format!("{article} {name}")
}

/// `repr(v)`, or `?` if its `__repr__` fails.
fn repr(v: &Bound<'_, PyAny>) -> String {
    v.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into())
}

/// A dict's keys as strings, in the dict's order, with their values.
fn entries<'py>(d: &Bound<'py, PyDict>, path: &str) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
    let py = d.py();
    d.iter()
        .map(|(k, v)| match k.cast::<PyString>() {
            Ok(s) => Ok((s.to_string(), v)),
            Err(_) => Err(value_error(
                py,
                &child(path, &k.repr().map(|r| r.to_string()).unwrap_or_default()),
                format!("{} key; scenario keys are strings", a_type(&k)),
                "write the key as a string",
            )),
        })
        .collect()
}

/// A Python value as a TOML value (dicts as inline tables); `path` names it in errors,
/// `depth` is how many lists and dicts it is inside.
fn to_value(v: &Bound<'_, PyAny>, path: &str, depth: usize) -> PyResult<Value> {
    let py = v.py();
    if depth > MAX_DEPTH {
        return Err(too_deep(py, path));
    }
    if v.is_instance_of::<PyBool>() {
        return Ok(Value::from(v.extract::<bool>()?));
    }
    if v.is_instance_of::<PyInt>() {
        return v.extract::<i64>().map(Value::from).map_err(|_| {
            value_error(py, path, format!("{} does not fit a 64-bit integer", repr(v)), VALID)
        });
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(Value::from(v.extract::<f64>()?));
    }
    if let Ok(s) = v.cast::<PyString>() {
        // A lone surrogate ("\ud800") has no UTF-8: pyo3's UnicodeEncodeError would not
        // say which key it is.
        let text = s.to_cow().map_err(|_| {
            value_error(py, path, format!("the str {} is not valid Unicode (it has a lone surrogate)", repr(v)), VALID)
        })?;
        return Ok(Value::from(text.as_ref()));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        let mut t = InlineTable::new();
        for (k, item) in entries(d, path)? {
            let val = to_value(&item, &child(path, &k), depth + 1)?;
            t.insert(&k, val);
        }
        return Ok(Value::InlineTable(t));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let mut a = Array::new();
        for (i, item) in v.try_iter()?.enumerate() {
            a.push(to_value(&item?, &child(path, &i.to_string()), depth + 1)?);
        }
        return Ok(Value::Array(a));
    }
    // numpy's and other numbers: integers by __index__, then floats by __float__.
    if v.hasattr("__index__")? {
        if let Ok(i) = v.extract::<i64>() {
            return Ok(Value::from(i));
        }
    }
    if v.hasattr("__float__")? {
        if let Ok(f) = v.extract::<f64>() {
            return Ok(Value::from(f));
        }
    }
    let what = if v.is_none() { "None".to_string() } else { a_type(v) };
    Err(value_error(py, path, format!("{what} cannot be a scenario value"), VALID))
}

/// Whether `s` can go into `--set KEY=s` as typed: the override parser reads text
/// that is not a TOML value as that string, so `1s`, `sfq` or `50kpps` need no quotes,
/// and written that way they make the same labels and `set` strings as the CLI.
/// Anything else (`8` meant as a string, commas, which separate sweep values, a
/// leading bracket or quote, which `darkbuf sweep` reads as opening one value that
/// swallows the commas after it (`[abc,x` is one value), or padding, which `--set`
/// trims) is quoted.
fn bare_string_ok(s: &str) -> bool {
    !s.is_empty()
        && s.trim() == s
        && !s.contains([',', '\n', '\r'])
        && !s.starts_with(['[', '{', '"', '\''])
        && toml_edit::ImDocument::parse(format!("v = {s}")).is_err()
}

/// The text of a Python value in `--set KEY=VALUE`: `8`, `true`, `0.5`, `1s`,
/// `"8"`, `[0, 1]`, `{ kind = "udp" }`. `path` (the dotted key) names it in errors.
#[pyfunction]
pub fn override_text(value: &Bound<'_, PyAny>, path: &str) -> PyResult<String> {
    let v = to_value(value, path, 0)?;
    if let Value::String(s) = &v {
        if bare_string_ok(s.value()) {
            return Ok(s.value().clone());
        }
    }
    Ok(v.to_string().trim().to_string())
}

/// A table of the document: dicts become `[tables]`, lists of dicts `[[arrays of
/// tables]]` (as a scenario file writes `[[traffic]]`), the rest values, in the dict's
/// order (which is the order of a `[sweep]`'s axes).
fn fill_table(t: &mut Table, d: &Bound<'_, PyDict>, path: &str, depth: usize) -> PyResult<()> {
    if depth > MAX_DEPTH {
        return Err(too_deep(d.py(), path));
    }
    for (k, v) in entries(d, path)? {
        let p = child(path, &k);
        if let Ok(sub) = v.cast::<PyDict>() {
            let mut st = Table::new();
            fill_table(&mut st, sub, &p, depth + 1)?;
            // `[device.bql]` alone, not an empty `[device]` above it.
            st.set_implicit(true);
            t.insert(&k, Item::Table(st));
            continue;
        }
        if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
            let items: Vec<Bound<'_, PyAny>> = v.try_iter()?.collect::<PyResult<_>>()?;
            if !items.is_empty() && items.iter().all(|i| i.is_instance_of::<PyDict>()) {
                let mut aot = ArrayOfTables::new();
                for (i, item) in items.iter().enumerate() {
                    let mut st = Table::new();
                    fill_table(&mut st, item.cast::<PyDict>()?, &child(&p, &i.to_string()), depth + 2)?;
                    aot.push(st);
                }
                t.insert(&k, Item::ArrayOfTables(aot));
                continue;
            }
        }
        t.insert(&k, Item::Value(to_value(&v, &p, depth + 1)?));
    }
    Ok(())
}

/// A scenario given as a dict, as TOML text for the scenario loader, which then
/// checks it like a file (its diagnostics name the key's path).
#[pyfunction]
pub fn dict_to_toml(scenario: &Bound<'_, PyDict>) -> PyResult<String> {
    let mut doc = DocumentMut::new();
    fill_table(doc.as_table_mut(), scenario, "", 0)?;
    Ok(doc.to_string())
}

fn from_value<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::String(s) => s.value().into_pyobject(py)?.into_any(),
        Value::Integer(i) => i.value().into_pyobject(py)?.into_any(),
        Value::Float(f) => f.value().into_pyobject(py)?.into_any(),
        Value::Boolean(b) => PyBool::new(py, *b.value()).to_owned().into_any(),
        Value::Datetime(d) => d.value().to_string().into_pyobject(py)?.into_any(),
        Value::Array(a) => PyList::new(py, a.iter().map(|x| from_value(py, x)).collect::<PyResult<Vec<_>>>()?)?.into_any(),
        Value::InlineTable(t) => {
            let d = PyDict::new(py);
            for (k, x) in t.iter() {
                d.set_item(k, from_value(py, x)?)?;
            }
            d.into_any()
        }
    })
}

/// `KEY=VALUE` strings (a sweep point's `set`) as `(KEY, value)` pairs, the value read
/// as the override parser reads it: a TOML value, else the text as a string.
#[pyfunction]
pub fn set_values<'py>(py: Python<'py>, set: Vec<String>) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
    set.iter()
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv.as_str(), ""));
            let text = v.trim();
            let doc = toml_edit::ImDocument::parse(format!("v = {text}")).ok();
            let parsed = doc.as_ref().filter(|d| d.as_table().len() == 1).and_then(|d| d.get("v")).and_then(Item::as_value);
            let value = match parsed {
                Some(val) => from_value(py, val)?,
                None => text.into_pyobject(py)?.into_any(),
            };
            Ok((k.trim().to_string(), value))
        })
        .collect()
}
