//! Statistics over runs: mean, Student-t 95% confidence interval, min, max.
//!
//! Everything here is a pure function of its input, iterated in `BTreeMap` order, so
//! the same runs always give bit-identical summaries.

use crate::results::{RunRecord, Summary};
use std::collections::BTreeMap;

/// Two-sided 95% critical values of Student's t (the 0.975 quantile) for 1..=30
/// degrees of freedom, computed with mpmath at 30 digits and rounded to f64.
const T975: [f64; 30] = [
    12.706204736174705,
    4.302652729749464,
    3.1824463052837095,
    2.7764451051977943,
    2.5705818356363155,
    2.44691185114497,
    2.3646242515927853,
    2.3060041352041667,
    2.2621571627982053,
    2.228138851986275,
    2.2009851600916397,
    2.178812829667229,
    2.1603686564627926,
    2.144786687917804,
    2.1314495455597755,
    2.1199052992212546,
    2.109815577833317,
    2.1009220402410387,
    2.0930240544083096,
    2.085963447265865,
    2.0796138447276804,
    2.0738730679040263,
    2.0686576104190486,
    2.063898561628026,
    2.0595385527532977,
    2.055529438642873,
    2.0518305164802855,
    2.048407141795245,
    2.0452296421327043,
    2.042272456301238,
];

/// The 0.975 quantile of the standard normal distribution.
const Z975: f64 = 1.959963984540054;

/// The 0.975 quantile of Student's t with `df` degrees of freedom: the factor that
/// turns a standard error into the half-width of a two-sided 95% confidence interval.
///
/// Exact (to f64) for `df <= 30`; beyond, the Cornish-Fisher expansion of t around
/// the normal quantile (Abramowitz & Stegun 26.7.5, four terms), which is accurate to
/// better than 1e-7 for `df > 30`. `df == 0` has no finite interval: `f64::INFINITY`.
pub fn t_critical_975(df: u32) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=30 => T975[df as usize - 1],
        _ => {
            let z = Z975;
            let nu = df as f64;
            let z2 = z * z;
            let z3 = z2 * z;
            let z5 = z3 * z2;
            let z7 = z5 * z2;
            let z9 = z7 * z2;
            let g1 = (z3 + z) / 4.0;
            let g2 = (5.0 * z5 + 16.0 * z3 + 3.0 * z) / 96.0;
            let g3 = (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / 384.0;
            let g4 = (79.0 * z9 + 776.0 * z7 + 1482.0 * z5 - 1920.0 * z3 - 945.0 * z) / 92160.0;
            z + g1 / nu + g2 / (nu * nu) + g3 / (nu * nu * nu) + g4 / (nu * nu * nu * nu)
        }
    }
}

/// `{mean, ci95, min, max, n}` of `values`.
///
/// `ci95` is the half-width of the 95% confidence interval of the mean:
/// `t_{0.975, n-1} * s / sqrt(n)` with `s` the sample standard deviation (divisor
/// `n - 1`); it is 0 for a single value. An empty slice gives all zeros with `n = 0`
/// (callers should not summarize nothing; this keeps the function total).
pub fn summarize(values: &[f64]) -> Summary {
    let n = values.len();
    if n == 0 {
        return Summary {
            mean: 0.0,
            ci95: 0.0,
            min: 0.0,
            max: 0.0,
            n: 0,
        };
    }
    let nf = n as f64;
    let mean = values.iter().sum::<f64>() / nf;
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let ci95 = if n == 1 {
        0.0
    } else {
        let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
        let s = (ss / (nf - 1.0)).sqrt();
        t_critical_975((n - 1) as u32) * s / nf.sqrt()
    };
    Summary {
        mean,
        ci95,
        min,
        max,
        n: n as u32,
    }
}

/// Summarize every metric that appears in any run.
///
/// Returns `(summary, nulls)`:
/// - `summary[m]` is `Some(summarize(values))` over the runs where `m` is a finite
///   `Some`, or `None` when no run has a value for it;
/// - `nulls[m]` is the number of runs in which `m` was `None`, missing, or not finite
///   (only metrics with at least one such run are listed), so a caller can say
///   "null in 1 of 4 runs".
///
/// Non-finite values (NaN, ±inf) are treated as missing: JSON cannot carry them.
pub fn summarize_runs(
    runs: &[RunRecord],
) -> (BTreeMap<String, Option<Summary>>, BTreeMap<String, u32>) {
    let mut values: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for run in runs {
        for name in run.metrics.keys() {
            values.entry(name.as_str()).or_default();
        }
    }
    let mut nulls: BTreeMap<String, u32> = BTreeMap::new();
    for run in runs {
        for (name, vals) in values.iter_mut() {
            match run.metrics.get(*name).copied().flatten() {
                Some(v) if v.is_finite() => vals.push(v),
                _ => *nulls.entry((*name).to_string()).or_insert(0) += 1,
            }
        }
    }
    let summary = values
        .into_iter()
        .map(|(name, vals)| {
            let s = if vals.is_empty() {
                None
            } else {
                Some(summarize(&vals))
            };
            (name.to_string(), s)
        })
        .collect();
    (summary, nulls)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seed: u64, metrics: &[(&str, Option<f64>)]) -> RunRecord {
        RunRecord {
            seed,
            metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn one_two_three() {
        let s = summarize(&[1.0, 2.0, 3.0]);
        assert_eq!(s.mean, 2.0);
        assert_eq!(s.ci95, 4.302652729749464 * 1.0 / 3f64.sqrt());
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 3.0);
        assert_eq!(s.n, 3);
    }

    #[test]
    fn single_value_has_zero_ci() {
        let s = summarize(&[6.73]);
        assert_eq!(
            s,
            Summary {
                mean: 6.73,
                ci95: 0.0,
                min: 6.73,
                max: 6.73,
                n: 1
            }
        );
    }

    #[test]
    fn empty_is_zero() {
        assert_eq!(summarize(&[]).n, 0);
    }

    #[test]
    fn two_values() {
        // s = sqrt(((1-2)^2 + (3-2)^2) / 1) = sqrt(2); ci = 12.706 * sqrt(2) / sqrt(2).
        let s = summarize(&[1.0, 3.0]);
        assert_eq!(s.mean, 2.0);
        assert_eq!(s.ci95, 12.706204736174705 * 2f64.sqrt() / 2f64.sqrt());
    }

    #[test]
    fn four_runs_like_the_seed() {
        // limit=8 ping avg over 4 runs: 0.062 0.081 0.100 0.095 -> mean 0.0845.
        let v = [0.062, 0.081, 0.100, 0.095];
        let s = summarize(&v);
        assert!((s.mean - 0.0845).abs() < 1e-15);
        let var = v.iter().map(|x| (x - s.mean).powi(2)).sum::<f64>() / 3.0;
        assert!((s.ci95 - 3.1824463052837095 * var.sqrt() / 2.0).abs() < 1e-15);
    }

    #[test]
    fn t_table_and_expansion() {
        assert_eq!(t_critical_975(1), 12.706204736174705);
        assert_eq!(t_critical_975(2), 4.302652729749464);
        assert_eq!(t_critical_975(30), 2.042272456301238);
        // mpmath references beyond the table.
        for (df, want) in [
            (40, 2.0210753903062733),
            (60, 2.0002978220142604),
            (100, 1.9839715185235522),
            (120, 1.979930405082441),
            (1000, 1.9623390808264085),
        ] {
            let got = t_critical_975(df);
            assert!((got - want).abs() < 1e-7, "df {df}: {got} vs {want}");
        }
        // The expansion joins the table smoothly and decreases towards z.
        assert!((t_critical_975(31) - 2.0395134464).abs() < 1e-6);
        let mut prev = t_critical_975(1);
        for df in 2..500 {
            let t = t_critical_975(df);
            assert!(t < prev && t > Z975, "df {df}");
            prev = t;
        }
        assert!(t_critical_975(0).is_infinite());
    }

    #[test]
    fn summarize_runs_handles_nulls() {
        let runs = vec![
            run(1, &[("a", Some(1.0)), ("b", None), ("c", Some(5.0))]),
            run(2, &[("a", Some(2.0)), ("b", None), ("c", None)]),
            run(3, &[("a", Some(3.0)), ("b", None)]),
        ];
        let (summary, nulls) = summarize_runs(&runs);
        assert_eq!(summary.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(summary["a"], Some(summarize(&[1.0, 2.0, 3.0])));
        assert_eq!(summary["b"], None);
        assert_eq!(summary["c"], Some(summarize(&[5.0])));
        assert_eq!(nulls.get("a"), None);
        assert_eq!(nulls["b"], 3);
        assert_eq!(nulls["c"], 2);
    }

    #[test]
    fn summarize_runs_ignores_non_finite() {
        let runs = vec![
            run(1, &[("a", Some(f64::NAN))]),
            run(2, &[("a", Some(4.0))]),
        ];
        let (summary, nulls) = summarize_runs(&runs);
        assert_eq!(summary["a"], Some(summarize(&[4.0])));
        assert_eq!(nulls["a"], 1);
    }
}
