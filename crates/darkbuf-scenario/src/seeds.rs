//! The seeds of a scenario's runs: run i uses `seed + i`, and every one of them must
//! itself be a valid seed, so any single run can be made again with `seed = S` or
//! `--seed S --runs 1`.
//!
//! One range for every way a seed is given: the `seed` key and `--set seed=` (a TOML
//! integer, so at most `i64::MAX`), `--seed` on the command line and the Python
//! bindings' `seed`.

use crate::diag::{Diagnostic, DiagnosticKind};
use crate::schema::Scenario;
use crate::tree::{Ctx, Node, V};

/// The largest seed: TOML integers are `i64`.
pub const MAX_SEED: u64 = i64::MAX as u64;

/// The largest base seed for `runs` runs.
pub fn max_base_seed(runs: u32) -> u64 {
    MAX_SEED - (runs.max(1) as u64 - 1)
}

/// `runs` runs from `seed`: why not, when the last run's seed would be past
/// [`MAX_SEED`] (message, what would be valid).
fn past_max(seed: u64, runs: u32) -> Option<(String, String)> {
    let runs = runs.max(1);
    if seed <= max_base_seed(runs) {
        return None;
    }
    let last = seed as u128 + runs as u128 - 1;
    Some((
        format!("with {runs} runs the last run's seed would be {last} (run i uses seed + i), past the largest seed {MAX_SEED}"),
        format!("expected a seed in 0..={} for {runs} runs, or fewer runs", max_base_seed(runs)),
    ))
}

/// The scenario as loaded (file and `--set`s): its `seed` + `runs` - 1 must be a
/// seed; the error points at the `seed` key (the file's or the `--set`'s).
pub(crate) fn check_loaded(root: &Node, ctx: &Ctx<'_>, scn: &Scenario) -> Result<(), Diagnostic> {
    let Some((message, help)) = past_max(scn.seed, scn.runs) else { return Ok(()) };
    let at = match &root.v {
        V::Table(t) => t.get("seed").map(|e| e.node.at.clone()),
        _ => None,
    }
    .unwrap_or_else(|| root.at.clone());
    Err(ctx.diag(DiagnosticKind::Value, &at, "seed", format!("`seed` = {}: {message}", scn.seed), Some(help)))
}

/// After `--runs` and `--seed` were applied over the scenario's own: `--seed` in
/// 0..=[`MAX_SEED`], and the last run's seed a seed too. The error is about the flag
/// that was given (`--seed`, else `--runs`).
pub fn check_flags(scn: &Scenario, runs: Option<u32>, seed: Option<u64>) -> Result<(), Diagnostic> {
    let flag_diag = |file: String, message: String, help: String| {
        Diagnostic::at(DiagnosticKind::Value, file, String::new(), None, "seed", message, Some(help))
    };
    if let Some(s) = seed {
        if s > MAX_SEED {
            return Err(flag_diag(
                format!("--seed {s}"),
                "the seed is out of range".into(),
                format!("expected a seed in 0..={MAX_SEED}"),
            ));
        }
    }
    let Some((message, help)) = past_max(scn.seed, scn.runs) else { return Ok(()) };
    match (seed, runs) {
        (Some(s), _) => Err(flag_diag(format!("--seed {s}"), message, help)),
        (None, Some(r)) => Err(flag_diag(
            format!("--runs {r}"),
            format!("the scenario's seed is {}: {message}", scn.seed),
            format!("expected at most {} runs from seed {}, or a smaller --seed", MAX_SEED - scn.seed + 1, scn.seed),
        )),
        // Neither flag: the scenario itself was checked when it was loaded.
        (None, None) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_run_seed_bounds_the_base_seed() {
        assert_eq!(max_base_seed(1), MAX_SEED);
        assert_eq!(max_base_seed(3), MAX_SEED - 2);
        assert!(past_max(MAX_SEED, 1).is_none());
        assert!(past_max(MAX_SEED - 2, 3).is_none());
        assert!(past_max(MAX_SEED - 1, 3).is_some());
        assert!(past_max(u64::MAX, 3).is_some());
    }
}
