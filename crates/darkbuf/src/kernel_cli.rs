//! The kernel backend's commands: `run --backend kernel`, `check`, `calibrate`, `compare`.

use crate::run::Failure;
use crate::{Common, Format};
use std::path::Path;

fn unavailable() -> Failure {
    Failure::Backend("the kernel backend is not built yet; run with --backend sim (the default)".into())
}

/// `darkbuf run SCENARIO --backend kernel`.
pub fn run(path: &Path, c: &Common, hist: bool) -> Result<(), Failure> {
    let _ = (path, c, hist);
    Err(unavailable())
}

/// `darkbuf check [--cleanup] [--format table|json]`.
pub fn check(cleanup: bool, format: Format) -> Result<(), Failure> {
    let _ = (cleanup, format);
    Err(unavailable())
}

/// `darkbuf calibrate --out PROFILE.toml`.
pub fn calibrate(out: &Path) -> Result<(), Failure> {
    let _ = out;
    Err(unavailable())
}

/// `darkbuf compare SCENARIO`.
pub fn compare(path: &Path, c: &Common) -> Result<(), Failure> {
    let _ = (path, c);
    Err(unavailable())
}
