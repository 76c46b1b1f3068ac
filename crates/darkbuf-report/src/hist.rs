//! Log2 histograms printed exactly as bpftrace's `hist()` prints them, so a darkbuf
//! histogram and one from a bpftrace script can be diffed side by side.
//!
//! bpftrace (src/output/text.cpp) prints each bucket as
//! `setw(16) left <label>`, `setw(8) right <count>`, `" |"`, a bar of `@` padded to
//! 52, `"|"`; the bar is `(int)(count / (float)max * 52)`. Leading and trailing empty
//! buckets are skipped, empty ones in between are printed. Bounds that are powers of
//! two of 1024 or more get a K/M/G/T/P/E suffix (`[1K, 2K)`). A map prints as
//! `@name:` followed by its buckets and an empty line.

use crate::results::{Log2Hist, RunRecord};
use std::collections::BTreeMap;
use std::fmt::Write;

const BAR_WIDTH: usize = 52;

/// bpftrace's label for 2^power: `1`..`512`, then `1K`..`512K`, `1M`, ...
fn pow2_label(power: u32) -> String {
    const SUFFIX: [&str; 7] = ["", "K", "M", "G", "T", "P", "E"];
    let decade = (power / 10) as usize;
    format!(
        "{}{}",
        1u64 << (power % 10),
        SUFFIX[decade.min(SUFFIX.len() - 1)]
    )
}

/// The label of darkbuf bucket `k`: `[0]`, `[1]`, then `[2^(k-1), 2^k)`.
pub fn bucket_label(k: usize) -> String {
    match k {
        0 => "[0]".to_string(),
        1 => "[1]".to_string(),
        _ => format!("[{}, {})", pow2_label(k as u32 - 1), pow2_label(k as u32)),
    }
}

/// The bucket lines of `h` (no `@name:` header); empty for an empty histogram.
pub fn hist_lines(h: &Log2Hist) -> String {
    let mut out = String::new();
    let first = h.buckets.iter().position(|&c| c > 0);
    let last = h.buckets.iter().rposition(|&c| c > 0);
    let (Some(first), Some(last)) = (first, last) else {
        return out;
    };
    let max = h.buckets.iter().copied().max().unwrap_or(0);
    for k in first..=last {
        let count = h.buckets[k];
        // Same arithmetic as bpftrace: float division, then truncation.
        let bar = ((count as f32 / max as f32) * BAR_WIDTH as f32) as usize;
        let _ = writeln!(
            out,
            "{:<16}{:>8} |{:<width$}|",
            bucket_label(k),
            count,
            "@".repeat(bar.min(BAR_WIDTH)),
            width = BAR_WIDTH
        );
    }
    out
}

/// One histogram as bpftrace prints a map: `@name:`, the buckets, an empty line.
/// A leading `@` in `name` is not doubled.
pub fn hist_text(name: &str, h: &Log2Hist) -> String {
    let at = if name.starts_with('@') { "" } else { "@" };
    format!("{at}{name}:\n{}\n", hist_lines(h))
}

/// The bucket-wise sum of two histograms.
pub fn merge_hist(into: &mut Log2Hist, h: &Log2Hist) {
    if into.buckets.len() < h.buckets.len() {
        into.buckets.resize(h.buckets.len(), 0);
    }
    for (a, b) in into.buckets.iter_mut().zip(&h.buckets) {
        *a = a.saturating_add(*b);
    }
}

/// Every histogram name of any run, with its buckets summed over the runs: the
/// distribution over all runs together.
pub fn merged_histograms(runs: &[RunRecord]) -> BTreeMap<String, Log2Hist> {
    let mut out: BTreeMap<String, Log2Hist> = BTreeMap::new();
    for run in runs {
        for (name, h) in &run.histograms {
            merge_hist(out.entry(name.clone()).or_default(), h);
        }
    }
    out
}

/// Histograms in name order, each as [`hist_text`].
pub fn hists_text(hists: &BTreeMap<String, Log2Hist>) -> String {
    hists.iter().map(|(name, h)| hist_text(name, h)).collect()
}

/// Every histogram of a run, in name order, each as [`hist_text`].
pub fn histograms_text(run: &RunRecord) -> String {
    run.histograms
        .iter()
        .map(|(name, h)| hist_text(name, h))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(bucket_label(0), "[0]");
        assert_eq!(bucket_label(1), "[1]");
        assert_eq!(bucket_label(2), "[2, 4)");
        assert_eq!(bucket_label(10), "[512, 1K)");
        assert_eq!(bucket_label(11), "[1K, 2K)");
        assert_eq!(bucket_label(20), "[512K, 1M)");
        assert_eq!(bucket_label(21), "[1M, 2M)");
        assert_eq!(bucket_label(31), "[1G, 2G)");
        assert_eq!(bucket_label(64), "[8E, 16E)");
    }

    #[test]
    fn merging_sums_buckets() {
        let run = |b: Vec<u64>| RunRecord {
            histograms: [("x".to_string(), Log2Hist { buckets: b })]
                .into_iter()
                .collect(),
            ..Default::default()
        };
        let m = merged_histograms(&[run(vec![1, 2]), run(vec![0, 1, 5]), RunRecord::default()]);
        assert_eq!(m.len(), 1);
        assert_eq!(m["x"].buckets, vec![1, 3, 5]);
        assert!(merged_histograms(&[]).is_empty());
    }

    #[test]
    fn empty() {
        assert_eq!(hist_lines(&Log2Hist::default()), "");
        assert_eq!(
            hist_text(
                "x",
                &Log2Hist {
                    buckets: vec![0, 0]
                }
            ),
            "@x:\n\n"
        );
    }
}
