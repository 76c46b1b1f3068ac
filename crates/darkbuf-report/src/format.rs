//! Number formatting and a small markdown table renderer shared by the tables.

/// How a sweep table cell shows a number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellFormat {
    /// Milliseconds with two decimals (`4.50ms`); below 0.1 ms three significant
    /// digits instead, so sub-0.1 ms latencies do not collapse (`0.085ms`).
    Ms,
    /// A count with a K/M/G/T suffix (powers of 1000) and three significant digits
    /// like the seed's tables: `870`, `2.2K`, `12.9K`, `454K`, `6.1M`, `48.6M`.
    Count,
    /// A rate with a K/M suffix and two significant digits below 100K, like the
    /// seed's pps columns: `6.7K`, `26K`, `841K`.
    Pps,
    /// A plain integer, rounded: `63`.
    Int,
    /// One decimal: `7.3`.
    Float1,
    /// [`fmt_human`]: integers exactly, fractions with 2-3 significant decimals.
    Human,
}

impl CellFormat {
    /// Format one value.
    pub fn format(self, v: f64) -> String {
        match self {
            CellFormat::Ms => fmt_ms(v),
            CellFormat::Count => fmt_si(v, 100.0),
            CellFormat::Pps => fmt_si(v, 10.0),
            CellFormat::Int => fmt_fixed(v, 0),
            CellFormat::Float1 => fmt_fixed(v, 1),
            CellFormat::Human => fmt_human(v),
        }
    }

    /// Format a confidence half-width in this format. Integer-like formats show
    /// small intervals (< 10) with one decimal, so `±0.4` does not print as `±0`;
    /// milliseconds to the mean's two decimals (`<0.01ms` when smaller), never to
    /// more digits than the mean shows.
    pub fn format_ci(self, ci: f64) -> String {
        match self {
            CellFormat::Int | CellFormat::Count | CellFormat::Pps if ci.abs() < 10.0 => {
                fmt_ci_at(ci, 1)
            }
            CellFormat::Ms if ci.is_finite() && ci.abs() < 0.1 => format!("{}ms", fmt_ci_at(ci, 2)),
            CellFormat::Human => fmt_mean_ci(ci, ci).1,
            _ => self.format(ci),
        }
    }

    /// `mean` alone, or `mean ±ci` when the summary covers more than one run.
    pub fn cell(self, mean: f64, ci95: f64, n: u32) -> String {
        if n <= 1 {
            return self.format(mean);
        }
        match self {
            CellFormat::Human => {
                let (m, c) = fmt_mean_ci(mean, ci95);
                format!("{m} ±{c}")
            }
            CellFormat::Ms if mean.is_finite() && mean.abs() < 0.1 && mean != 0.0 => {
                // Sub-0.1 ms means show three significant digits: the interval to the
                // decimals the mean shows.
                let m = self.format(mean);
                let d = m.trim_end_matches("ms").split_once('.').map_or(0, |(_, f)| f.len());
                format!("{m} ±{}ms", fmt_ci_at(ci95, d))
            }
            _ => format!("{} ±{}", self.format(mean), self.format_ci(ci95)),
        }
    }
}

/// The format a metric gets when no row says otherwise: `*_ms` metrics as
/// [`CellFormat::Ms`], everything else [`CellFormat::Human`].
pub fn format_for_metric(metric: &str) -> CellFormat {
    if metric.ends_with("_ms") {
        CellFormat::Ms
    } else {
        CellFormat::Human
    }
}

fn non_finite(v: f64) -> Option<String> {
    if v.is_nan() {
        Some("NaN".into())
    } else if v.is_infinite() {
        Some(if v > 0.0 { "inf" } else { "-inf" }.into())
    } else {
        None
    }
}

/// `v` with `decimals` decimals; never prints `-0`.
pub fn fmt_fixed(v: f64, decimals: usize) -> String {
    if let Some(s) = non_finite(v) {
        return s;
    }
    let s = format!("{:.*}", decimals, v);
    if s.starts_with('-') && s[1..].chars().all(|c| c == '0' || c == '.') {
        s[1..].to_string()
    } else {
        s
    }
}

/// `v` with `sig` significant digits for |v| < 1 (trailing zeros trimmed).
fn fmt_small(v: f64, sig: i32) -> String {
    let a = v.abs();
    let decimals = (sig - 1 - a.log10().floor() as i32).clamp(0, 15) as usize;
    let s = fmt_fixed(v, decimals);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Significant digits of a value in the tables: enough to compare runs, few enough to
/// read (a simulated 4.503 ms is not known to the nanosecond).
pub const SIG_DIGITS: i32 = 4;
/// Significant digits of a confidence interval's half-width: its own uncertainty is
/// tens of percent with few runs, so two digits say all it knows.
pub const CI_SIG_DIGITS: i32 = 2;

/// Decimals that show `v` with `sig` significant digits (never negative: integer
/// digits are not rounded away), taking the carry of rounding into account (99.995 at 4
/// digits is `100.0`, not `100.00`).
pub fn decimals_for(v: f64, sig: i32) -> usize {
    let a = v.abs();
    if a == 0.0 || !a.is_finite() {
        return 0;
    }
    let d = (sig - 1 - a.log10().floor() as i32).clamp(0, 15);
    let rounded: f64 = format!("{:.*}", d as usize, a).parse().unwrap_or(a);
    if rounded != 0.0 && rounded.log10().floor() > a.log10().floor() {
        (d - 1).max(0) as usize
    } else {
        d as usize
    }
}

/// `s` without trailing zeros after a decimal point (`1.500` -> `1.5`, `2.0` -> `2`).
fn trim_zeros(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Human-readable number for the tables: integers exactly (`454123`), anything else
/// with [`SIG_DIGITS`] significant digits, trailing zeros dropped (`841.2`, `6.731`,
/// `100`, `0.085`, `0.001235`). Integer digits are never rounded (`31698.2` -> `31698`).
pub fn fmt_human(v: f64) -> String {
    if let Some(s) = non_finite(v) {
        return s;
    }
    if v.fract() == 0.0 && v.abs() < 1e15 {
        return fmt_fixed(v, 0);
    }
    trim_zeros(fmt_fixed(v, decimals_for(v, SIG_DIGITS)))
}

/// A mean and its 95% CI half-width at one precision: the mean with at most
/// [`SIG_DIGITS`] significant digits, the interval with at most [`CI_SIG_DIGITS`], both
/// to the same decimal place. An interval that rounds to zero at that place shows as
/// `<` the place's unit (`<0.01`) rather than a misleading `0.00`.
pub fn fmt_mean_ci(mean: f64, ci: f64) -> (String, String) {
    if non_finite(mean).is_some() || non_finite(ci).is_some() {
        return (fmt_human(mean), fmt_human(ci));
    }
    let d = mean_ci_decimals(mean, ci);
    (fmt_fixed(mean, d), fmt_ci_at(ci, d))
}

/// The decimals of [`fmt_mean_ci`]: the mean's at [`SIG_DIGITS`] and the interval's
/// at [`CI_SIG_DIGITS`], whichever is fewer. An exact mean with a zero interval is an
/// integer count: no decimals. (A table row shows its min and max at the same
/// decimals, so one row has one precision.)
pub fn mean_ci_decimals(mean: f64, ci: f64) -> usize {
    match (ci > 0.0, mean.fract() == 0.0) {
        (true, _) => decimals_for(mean, SIG_DIGITS).min(decimals_for(ci, CI_SIG_DIGITS)),
        (false, true) => 0,
        (false, false) => decimals_for(mean, SIG_DIGITS),
    }
}

/// `ci` with `d` decimals, or `<` the smallest step when it is positive but rounds to 0.
fn fmt_ci_at(ci: f64, d: usize) -> String {
    let s = fmt_fixed(ci, d);
    if ci > 0.0 && s.chars().all(|c| c == '0' || c == '.') {
        format!("<{}", fmt_fixed(10f64.powi(-(d as i32)), d))
    } else {
        s
    }
}

/// The line under a table with ± columns: what ± is.
pub fn ci_footnote(runs: &str) -> String {
    format!("± = half-width of the 95% confidence interval of the mean (Student t over {runs})\n")
}

/// Milliseconds: two decimals, three significant digits below 0.1 ms.
pub fn fmt_ms(v: f64) -> String {
    if let Some(s) = non_finite(v) {
        return format!("{s}ms");
    }
    let a = v.abs();
    if a >= 0.1 || a == 0.0 {
        format!("{}ms", fmt_fixed(v, 2))
    } else {
        format!("{}ms", fmt_small(v, 3))
    }
}

/// Suffixed count: below 1000 a plain integer; otherwise the largest of K, M, G, T
/// (powers of 1000) that keeps the mantissa below 1000, with one decimal while the
/// rounded mantissa is below `one_decimal_below`, none above.
fn fmt_si(v: f64, one_decimal_below: f64) -> String {
    if let Some(s) = non_finite(v) {
        return s;
    }
    let sign = if v < 0.0 { "-" } else { "" };
    let a = v.abs();
    if a.round() < 1000.0 {
        return fmt_fixed(v, 0);
    }
    const UNITS: [(&str, f64); 4] = [("K", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12)];
    for (i, (suffix, scale)) in UNITS.iter().enumerate() {
        let x = a / scale;
        let one = format!("{:.1}", x);
        let s = if one.parse::<f64>().unwrap_or(x) < one_decimal_below {
            one
        } else {
            format!("{:.0}", x)
        };
        if s.parse::<f64>().unwrap_or(x) < 1000.0 || i == UNITS.len() - 1 {
            return format!("{sign}{s}{suffix}");
        }
    }
    unreachable!()
}

/// Column alignment in a markdown table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Right,
}

/// Escape a markdown table cell: `|` would end the cell.
pub(crate) fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// A markdown table padded to column width like the seeds' tables:
/// `| a   | b |`, separator `|-----|---|` (`---:` for right-aligned columns).
pub(crate) fn markdown_table(headers: &[String], align: &[Align], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::from("|");
        for (c, &w) in widths.iter().enumerate() {
            let cell = cells.get(c).map(String::as_str).unwrap_or("");
            let pad = w - cell.chars().count();
            let (l, r) = match align.get(c).copied().unwrap_or(Align::Left) {
                Align::Left => (0, pad),
                Align::Right => (pad, 0),
            };
            s.push(' ');
            s.push_str(&" ".repeat(l));
            s.push_str(cell);
            s.push_str(&" ".repeat(r));
            s.push_str(" |");
        }
        s.push('\n');
        s
    };
    let mut out = line(headers);
    out.push('|');
    for (c, &w) in widths.iter().enumerate() {
        match align.get(c).copied().unwrap_or(Align::Left) {
            Align::Left => out.push_str(&"-".repeat(w + 2)),
            Align::Right => {
                out.push_str(&"-".repeat(w + 1));
                out.push(':');
            }
        }
        out.push('|');
    }
    out.push('\n');
    for row in rows {
        out.push_str(&line(row));
    }
    out
}

/// The order metrics are listed in: by group (`ping.`, `qdisc.`, `bql.`, `txq.`,
/// `napi.`, `ring.`, `consumer.`, `sink.`, then any other prefix), by name within a
/// group. Returns a sort key.
pub fn metric_sort_key(metric: &str) -> (usize, &str) {
    const GROUPS: [&str; 8] = [
        "ping.",
        "qdisc.",
        "bql.",
        "txq.",
        "napi.",
        "ring.",
        "consumer.",
        "sink.",
    ];
    let g = GROUPS
        .iter()
        .position(|p| metric.starts_with(p))
        .unwrap_or(GROUPS.len());
    (g, metric)
}

/// Sort metric names into [`metric_sort_key`] order.
pub fn sort_metrics<S: AsRef<str>>(names: &mut [S]) {
    names.sort_by(|a, b| metric_sort_key(a.as_ref()).cmp(&metric_sort_key(b.as_ref())));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_like_the_seed() {
        let c = |v| CellFormat::Count.format(v);
        assert_eq!(c(0.0), "0");
        assert_eq!(c(870.0), "870");
        assert_eq!(c(999.4), "999");
        assert_eq!(c(999.6), "1.0K");
        assert_eq!(c(2_200.0), "2.2K");
        assert_eq!(c(12_900.0), "12.9K");
        assert_eq!(c(22_840.0), "22.8K");
        assert_eq!(c(99_960.0), "100K");
        assert_eq!(c(454_123.0), "454K");
        assert_eq!(c(999_700.0), "1.0M");
        assert_eq!(c(6_100_000.0), "6.1M");
        assert_eq!(c(13_400_000.0), "13.4M");
        assert_eq!(c(48_600_000.0), "48.6M");
        assert_eq!(c(2.5e9), "2.5G");
        assert_eq!(c(-12_900.0), "-12.9K");
    }

    #[test]
    fn pps_like_the_seed() {
        let p = |v| CellFormat::Pps.format(v);
        assert_eq!(p(540.0), "540");
        assert_eq!(p(6_700.0), "6.7K");
        assert_eq!(p(9_960.0), "10K");
        assert_eq!(p(26_300.0), "26K");
        assert_eq!(p(841_000.0), "841K");
        assert_eq!(p(1_200_000.0), "1.2M");
    }

    #[test]
    fn ms() {
        let m = |v| CellFormat::Ms.format(v);
        assert_eq!(m(4.5), "4.50ms");
        assert_eq!(m(37.8), "37.80ms");
        assert_eq!(m(0.94), "0.94ms");
        assert_eq!(m(0.085), "0.085ms");
        assert_eq!(m(0.0123456), "0.0123ms");
        assert_eq!(m(0.0), "0.00ms");
    }

    #[test]
    fn int_float1_human() {
        assert_eq!(CellFormat::Int.format(7.6), "8");
        assert_eq!(CellFormat::Int.format(-0.2), "0");
        assert_eq!(CellFormat::Float1.format(7.25), "7.2");
        assert_eq!(CellFormat::Float1.format(133.06), "133.1");
        let h = fmt_human;
        assert_eq!(h(454123.0), "454123");
        assert_eq!(h(841.25), "841.2");
        assert_eq!(h(6.7312), "6.731");
        assert_eq!(h(0.085), "0.085");
        assert_eq!(h(0.5), "0.5");
        assert_eq!(h(0.00123456), "0.001235");
        assert_eq!(h(-2.0), "-2");
        assert_eq!(h(f64::NAN), "NaN");
        // Issue 18: one precision per column, no `100.00` beside `100.0`.
        assert_eq!(h(99.99999), "100");
        assert_eq!(h(99.95), "99.95");
        assert_eq!(h(31698.2), "31698");
    }

    #[test]
    fn mean_and_ci_share_a_precision() {
        // Issue 18: not `±0.00000177`.
        assert_eq!(fmt_mean_ci(0.085123, 0.00000177), ("0.08512".into(), "<0.00001".into()));
        assert_eq!(fmt_mean_ci(6.7312, 0.4123), ("6.73".into(), "0.41".into()));
        assert_eq!(fmt_mean_ci(2.0, 2.484), ("2.0".into(), "2.5".into()));
        assert_eq!(fmt_mean_ci(99.9999, 0.0000177), ("100.0".into(), "<0.1".into()));
        assert_eq!(fmt_mean_ci(454123.4, 1234.6), ("454123".into(), "1235".into()));
        assert_eq!(fmt_mean_ci(12.0, 0.0), ("12".into(), "0".into()));
        assert_eq!(CellFormat::Ms.cell(4.5, 0.0000017, 3), "4.50ms ±<0.01ms");
        assert_eq!(CellFormat::Ms.cell(0.085, 0.0000017, 3), "0.085ms ±<0.001ms");
        assert!(ci_footnote("3 runs").contains("95% confidence interval"));
    }

    #[test]
    fn cells_with_ci() {
        assert_eq!(CellFormat::Ms.cell(6.73, 0.4, 4), "6.73ms ±0.40ms");
        assert_eq!(CellFormat::Ms.cell(6.73, 0.0, 1), "6.73ms");
        assert_eq!(
            CellFormat::Count.cell(5_800_000.0, 1_234_000.0, 4),
            "5.8M ±1.2M"
        );
        assert_eq!(CellFormat::Int.cell(19.0, 2.34, 4), "19 ±2.3");
        assert_eq!(CellFormat::Int.cell(19.0, 12.6, 4), "19 ±13");
    }

    #[test]
    fn metric_order() {
        let mut m = vec![
            "sink.pps",
            "zzz.x",
            "bql.limit_last",
            "ping.rtt_avg_ms",
            "aaa.y",
            "qdisc.drops",
        ];
        sort_metrics(&mut m);
        assert_eq!(
            m,
            [
                "ping.rtt_avg_ms",
                "qdisc.drops",
                "bql.limit_last",
                "sink.pps",
                "aaa.y",
                "zzz.x"
            ]
        );
    }
}
