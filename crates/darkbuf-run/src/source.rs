//! A scenario's text and the name its diagnostics show.

use darkbuf_scenario::Diagnostic;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A scenario as text, read once: planning and every point load from this text, and a
/// [`Job`](crate::Job) carries it to a worker that may not have the file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// The file name diagnostics show (`scenarios/veth-bql.toml`, `<string>`); its stem
    /// is the scenario's default `name`.
    pub name: String,
    pub text: String,
}

impl Source {
    /// Reads the scenario file at `path`; its name is the path as given, as
    /// [`darkbuf_scenario::load`] names it.
    pub fn read(path: &Path) -> Result<Source, Diagnostic> {
        let (name, text) = darkbuf_scenario::read_scenario(path)?;
        Ok(Source { name, text })
    }

    /// Scenario text that has no file: diagnostics name it `name`.
    pub fn text(name: impl Into<String>, text: impl Into<String>) -> Source {
        Source { name: name.into(), text: text.into() }
    }
}
