//! Helpers the scenario reader's integration tests share: loading scenario text with
//! `--set` overrides, as `scenarios/x.toml`.
#![allow(dead_code)]

use darkbuf_scenario::{load_str, Diagnostic, Scenario};

/// Loads `text` with `set` overrides; it must load.
pub fn ok_set(text: &str, set: &[&str]) -> Scenario {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    load_str("scenarios/x.toml", text, &set).unwrap_or_else(|d| panic!("{d}"))
}

/// Loads `text` with `set` overrides; it must fail, and this is its diagnostic.
pub fn err_set(text: &str, set: &[&str]) -> Diagnostic {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    load_str("scenarios/x.toml", text, &set).expect_err("should fail")
}

/// Loads `text` without overrides; it must fail.
pub fn err(text: &str) -> Diagnostic {
    err_set(text, &[])
}
