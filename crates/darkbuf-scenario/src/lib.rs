//! The darkbuf scenario: schema, loading with precise diagnostics, `--set` overrides,
//! and sweep expansion.
//!
//! [`Scenario`] is the resolved form every backend consumes: units parsed, defaults
//! applied, cross-field rules checked. Loading errors carry the file, line and column of
//! the offending key and say what would be valid.

pub mod schema;

pub use schema::*;
