//! darkbuf's errors as the Python exceptions of `darkbuf.errors`.
//!
//! The classes are defined in Python, not with `create_exception!`, so that they pickle
//! by their import path: a Ray worker's exception reaches the driver as the same class
//! with the same attributes.

use darkbuf_run::Error;
use darkbuf_scenario::{Diagnostic, DiagnosticKind};
use pyo3::prelude::*;

/// `darkbuf.errors.<class>(*args)` as a raisable error.
fn python_error<'py>(py: Python<'py>, class: &str, args: impl pyo3::call::PyCallArgs<'py>) -> PyErr {
    let made = py
        .import("darkbuf.errors")
        .and_then(|m| m.getattr(class))
        .and_then(|c| c.call1(args));
    match made {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

pub fn kind_name(k: DiagnosticKind) -> &'static str {
    match k {
        DiagnosticKind::Io => "io",
        DiagnosticKind::Syntax => "syntax",
        DiagnosticKind::UnknownKey => "unknown_key",
        DiagnosticKind::Type => "type",
        DiagnosticKind::Value => "value",
        DiagnosticKind::Unsupported => "unsupported",
    }
}

/// `ScenarioError(message, file, line, column, key, help, kind)`; `message` is the
/// CLI's text (`file:line:column: what; what would be valid`).
pub fn scenario_error(py: Python<'_>, d: &Diagnostic) -> PyErr {
    python_error(
        py,
        "ScenarioError",
        (d.to_string(), d.file.clone(), d.line, d.column, d.key.clone(), d.help.clone(), kind_name(d.kind)),
    )
}

/// A value from Python that cannot be a scenario value, at `key`.
pub fn value_error(py: Python<'_>, key: &str, message: String, help: &str) -> PyErr {
    let text = if key.is_empty() { format!("{message}; {help}") } else { format!("`{key}`: {message}; {help}") };
    python_error(py, "ScenarioError", (text, None::<String>, None::<usize>, None::<usize>, key, help, "type"))
}

/// A command over `darkbuf_scenario::limits::check_total`'s bounds: the CLI's message.
pub fn limit_error(py: Python<'_>, message: String) -> PyErr {
    python_error(py, "ScenarioError", (message, None::<String>, None::<usize>, None::<usize>, "runs", None::<String>, "value"))
}

pub fn to_py(py: Python<'_>, e: Error) -> PyErr {
    match e {
        Error::Scenario(d) => scenario_error(py, &d),
        Error::Profile(m) => python_error(
            py,
            "ScenarioError",
            (m, None::<String>, None::<usize>, None::<usize>, "machine.profile", None::<String>, "profile"),
        ),
        Error::Sim(m) | Error::Limit(m) => python_error(py, "SimulationError", (m,)),
        Error::Internal(m) => python_error(py, "DarkbufError", (m,)),
    }
}
