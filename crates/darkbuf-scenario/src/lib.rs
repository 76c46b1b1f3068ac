//! The darkbuf scenario: schema, loading with precise diagnostics, `--set` overrides,
//! and sweep expansion.
//!
//! [`Scenario`] is the resolved form every backend consumes: units parsed, defaults
//! applied, cross-field rules checked. Loading errors carry the file, line and column of
//! the offending key and say what would be valid.
//!
//! ```no_run
//! # use std::path::Path;
//! let sc = darkbuf_scenario::load(Path::new("x.toml"), &["device.bql.limit_min=8".into()])?;
//! # Ok::<(), darkbuf_scenario::Diagnostic>(())
//! ```

// A Diagnostic is returned rarely (once, at the end of a load); boxing it buys nothing.
#![allow(clippy::result_large_err)]

pub mod diag;
mod irtt;
mod nic;
mod path;
pub mod preset;
pub mod rr;
pub mod limits;
mod resolve;
mod section;
pub mod schema;
pub mod seeds;
mod tcp;
pub mod voip;
pub mod sweep;
mod sysctl;
pub use sysctl::{Sysctl, DEFAULT_QDISC_KINDS, SYSCTL_KEYS};
pub mod tc;
mod tree;
pub mod web;
pub mod wifi;

pub use diag::{Diagnostic, DiagnosticKind};
pub use resolve::{
    effective_sndbuf, BQL_KEYS, BUILTIN_PROFILES, CONSUMER_KEYS, DEVICE_KEYS, MACHINE_KEYS, PING_KEYS,
    SOCK_MIN_SNDBUF, TOP_KEYS, UDP_KEYS, VETH_RING_SIZE, WMEM_DEFAULT, IFB_TX_QUEUE_LEN,
};
pub use nic::{COALESCE_KEYS, LAN_KEYS, MAX_SKB_FRAGS, NIC_KEYS, PEER_KEYS};
pub use path::{negative_delay_share, path_warnings, PATH_KEYS};
pub use schema::*;
pub use irtt::IRTT_KEYS;
pub use voip::{Codec, Voip, VoipDirection, VOIP_KEYS};
pub use rr::{Rr, RrProto, RR_KEYS};
pub use tcp::{CC_NAMES, TCP_KEYS};
pub use sweep::{check_plan_entries, sweep_plan, sweep_plan_fixed, sweep_plan_str, sweep_plan_str_fixed, PlanShape, SweepPlan, SweepPointSpec};

use std::path::Path;

/// Reads a scenario file: (name for errors, text), the pair [`load_str`] and
/// [`sweep_plan_str_fixed`] take. Reading once and planning from the text gives the
/// same scenarios as [`load`] and [`sweep_plan_fixed`], which read the file themselves.
///
/// At most [`limits::MAX_FILE_BYTES`] are read: `darkbuf run /dev/zero` is an error, not
/// a read until the memory runs out.
pub fn read_scenario(path: &Path) -> Result<(String, String), Diagnostic> {
    let name = path.display().to_string();
    match read_bounded(path, limits::MAX_FILE_BYTES) {
        Ok(Some(text)) => Ok((name, text)),
        Ok(None) => Err(Diagnostic::at(
            DiagnosticKind::Io,
            name.clone(),
            String::new(),
            None,
            "",
            format!("the scenario file is larger than {} bytes", limits::thousands(limits::MAX_FILE_BYTES)),
            Some("a scenario is a small TOML file; give its path, e.g. scenarios/examples/all-keys.toml".into()),
        )),
        Err(e) => {
            let not_utf8 = e.get_ref().and_then(|x| x.downcast_ref::<NotUtf8>());
            let (message, help) = match not_utf8 {
                Some(_) => (
                    "the scenario file is not UTF-8 text: the byte here is not part of a UTF-8 character".to_string(),
                    "a TOML file is UTF-8: save it in that encoding",
                ),
                None => (format!("cannot read scenario file: {e}"), "give the path of a scenario TOML file, e.g. scenarios/examples/all-keys.toml"),
            };
            let d = Diagnostic::at(DiagnosticKind::Io, name.clone(), String::new(), None, "", message, Some(help.into()));
            Err(Diagnostic { line: not_utf8.map(|at| at.line), column: not_utf8.map(|at| at.column), ..d })
        }
    }
}

/// The text of `path` if it has at most `max` bytes (`None` if it has more). Reads at
/// most `max + 1` bytes, so a device such as /dev/zero or an endless pipe ends too.
pub fn read_bounded(path: &Path, max: u64) -> std::io::Result<Option<String>> {
    use std::io::Read;
    let mut buf = Vec::new();
    std::fs::File::open(path)?.take(max + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > max {
        return Ok(None);
    }
    String::from_utf8(buf).map(Some).map_err(|e| {
        // Where the first byte that is no UTF-8 character is: the text before it is UTF-8.
        let at = e.utf8_error().valid_up_to();
        let before = std::str::from_utf8(&e.as_bytes()[..at]).expect("valid up to there");
        let (line, column) = diag::line_col(before, at);
        std::io::Error::new(std::io::ErrorKind::InvalidData, NotUtf8 { line, column })
    })
}

/// A file that is not UTF-8 text, and the 1-based line and column (in characters) of
/// its first byte that is no UTF-8 character.
#[derive(Debug)]
pub struct NotUtf8 {
    pub line: usize,
    pub column: usize,
}

impl std::fmt::Display for NotUtf8 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not UTF-8 text: the byte at line {}, column {} is not part of a UTF-8 character", self.line, self.column)
    }
}

impl std::error::Error for NotUtf8 {}

/// Loads and resolves the scenario at `path`, after applying `overrides`
/// (`KEY=VALUE` with dotted keys, as `--set` takes them).
pub fn load(path: &Path, overrides: &[String]) -> Result<Scenario, Diagnostic> {
    let (name, text) = read_scenario(path)?;
    load_str(&name, &text, overrides)
}

/// As [`load`], for scenario text; `name_for_errors` is the file name diagnostics show,
/// and its stem is the scenario's default `name`.
pub fn load_str(
    name_for_errors: &str,
    text: &str,
    overrides: &[String],
) -> Result<Scenario, Diagnostic> {
    let ctx = tree::Ctx {
        file: name_for_errors,
        source: text,
        overrides,
    };
    let mut root = tree::parse_document(&ctx)?;
    for (i, raw) in overrides.iter().enumerate() {
        tree::apply_override(&ctx, &mut root, i, raw)?;
    }
    let stem = Path::new(name_for_errors)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(name_for_errors);
    let scn = resolve::resolve(&root, &ctx, stem)?;
    seeds::check_loaded(&root, &ctx, &scn)?;
    Ok(scn)
}

/// Loads one point of a [`SweepPlan`]: the point's own `set`, then `base_overrides`
/// (the command line's single-value `--set`s, so they win), with `Scenario::label` set
/// to the point's label.
pub fn load_point(
    path: &Path,
    base_overrides: &[String],
    point: &SweepPointSpec,
) -> Result<Scenario, Diagnostic> {
    let (name, text) = read_scenario(path)?;
    load_point_str(&name, &text, base_overrides, point)
}

/// [`load_point`] for scenario text (see [`load_str`]).
pub fn load_point_str(
    name_for_errors: &str,
    text: &str,
    base_overrides: &[String],
    point: &SweepPointSpec,
) -> Result<Scenario, Diagnostic> {
    let mut sc = load_str(name_for_errors, text, &point_overrides(base_overrides, point))?;
    sc.label = point.label.clone();
    Ok(sc)
}

/// The overrides that make `point`: its own `set`, then `base_overrides` (so the
/// command line's single-value `--set`s win).
pub fn point_overrides(base_overrides: &[String], point: &SweepPointSpec) -> Vec<String> {
    point.set.iter().chain(base_overrides).cloned().collect()
}
