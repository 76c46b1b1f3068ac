//! `DARKBUF_TIMING`: where a run's wall time goes, step by step.
//!
//! With the variable set, [`mark`] records a labelled instant and [`take`] returns the
//! steps since the last `take` as "label +seconds @seconds" (from the previous mark, and from `since`). A
//! TCG guest runs each exec and thread wake-up many times slower than a native host, and
//! these steps say which ones a run pays for. Unset, `mark` costs one load of a flag.

use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// The variable that turns it on (to anything).
pub const TIMING_ENV: &str = "DARKBUF_TIMING";

/// Whether `DARKBUF_TIMING` is set (read once).
pub fn on() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os(TIMING_ENV).is_some())
}

/// Seconds from `a` to `b` (0 if `b` is earlier).
pub fn secs(a: Instant, b: Instant) -> f64 {
    b.saturating_duration_since(a).as_secs_f64()
}

static MARKS: Mutex<Vec<(&'static str, Instant)>> = Mutex::new(Vec::new());

/// Records that step `label` ended now.
pub fn mark(label: &'static str) {
    if on() {
        if let Ok(mut m) = MARKS.lock() {
            m.push((label, Instant::now()));
        }
    }
}

/// The steps recorded since `since`, each with the seconds since the mark before it (the
/// first: since `since`), and forgets them. `None` when timing is off.
pub fn take(since: Instant) -> Option<String> {
    if !on() {
        return None;
    }
    let marks = std::mem::take(&mut *MARKS.lock().ok()?);
    let mut prev = since;
    let steps: Vec<String> = marks
        .into_iter()
        .filter(|(_, t)| *t >= since)
        .map(|(l, t)| {
            let s = format!("{l} +{:.3} @{:.3}", secs(prev, t), secs(since, t));
            prev = t;
            s
        })
        .collect();
    Some(steps.join(", "))
}
