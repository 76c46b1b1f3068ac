//! iproute2's number printers (tc/tc_util.c), so `tc -s qdisc show` as darkbuf renders
//! it reads exactly as the reports people post: `18028b`, `7us`, `550Kbit`.

/// `sprint_size()`: bytes as tc prints a size: whole Mb or Kb when it is one (within
/// 1 KiB or 16 bytes), else plain bytes.
pub fn size(sz: u64) -> String {
    let s = sz as f64;
    if sz >= 1024 * 1024 && (1024.0 * 1024.0 * (s / (1024.0 * 1024.0)).round() - s).abs() < 1024.0 {
        format!("{}Mb", fmt_g((s / (1024.0 * 1024.0)).round()))
    } else if sz >= 1024 && (1024.0 * (s / 1024.0).round() - s).abs() < 16.0 {
        format!("{}Kb", fmt_g((s / 1024.0).round()))
    } else {
        format!("{sz}b")
    }
}

/// `sprint_time64()`: ns with three significant digits in s, ms, us or ns.
pub fn time64(ns: u64) -> String {
    let t = ns as f64;
    if t >= 1e9 {
        format!("{}s", fmt_3g(t / 1e9))
    } else if t >= 1e6 {
        format!("{}ms", fmt_3g(t / 1e6))
    } else if t >= 1e3 {
        format!("{}us", fmt_3g(t / 1e3))
    } else {
        format!("{ns}ns")
    }
}

/// `sprint_time()` (lib/utils.c `print_time()`): a 32-bit µs time with three significant
/// digits in s or ms, else whole µs (codel's times). That is `sprint_time64()` of the
/// same time in ns, except that zero stays in µs.
pub fn time(us: u32) -> String {
    if us == 0 {
        return "0us".to_string();
    }
    time64(us as u64 * 1000)
}

/// `sprint_rate()` (`print_rate()`) of a rate in bytes/s: bits/s, divided by 1000 (in
/// integers) while the value is whole in the next unit or at least a million, so
/// 6.25 Mbit/s prints as `6250Kbit` and 1.5 Gbit/s as `1500Mbit`.
#[allow(clippy::manual_is_multiple_of)] // is_multiple_of needs Rust 1.87; MSRV is 1.80
pub fn rate(bytes_per_s: u64) -> String {
    const UNITS: [&str; 5] = ["", "K", "M", "G", "T"];
    let mut rate = bytes_per_s << 3;
    let mut i = 0;
    while i < UNITS.len() - 1 {
        if rate < 1000 || (rate % 1000 != 0 && rate < 1000 * 1000) {
            break;
        }
        rate /= 1000;
        i += 1;
    }
    format!("{rate}{}bit", UNITS[i])
}

/// C's `%g` (`%lg`): six significant digits, in exponent form below 1e-4 and from
/// 1e6 on, without trailing zeros (pie's `prob 0.0123456`, `prob 1.5e-05`).
pub fn g(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    // The exponent after rounding to six digits, as printf decides it.
    let sci = format!("{v:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa.to_string()), exp.abs())
    } else {
        let decimals = (5 - exp) as usize;
        trim(format!("{v:.decimals$}"))
    }
}

/// C's `%g` for the values tc prints (at most 6 significant digits, no trailing zeros).
fn fmt_g(v: f64) -> String {
    trim(format!("{v:.6}"))
}

/// C's `%.3g` for 1 <= v < 1000: three significant digits, no trailing zeros.
fn fmt_3g(v: f64) -> String {
    let decimals = if v >= 100.0 { 0 } else if v >= 10.0 { 1 } else { 2 };
    let r = format!("{v:.decimals$}");
    // Rounding may carry into a fourth digit (999.6 -> 1000): %.3g would print 1e+03.
    trim(r)
}

fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values seed 001's `tc -s qdisc show` prints for fq at MTU 9000.
    #[test]
    fn prints_as_the_seed_shows() {
        assert_eq!(size(18028), "18028b");
        assert_eq!(size(90140), "90140b");
        assert_eq!(size(3 * 1024), "3Kb");
        assert_eq!(size(4 << 20), "4Mb");
        assert_eq!(time64(7_000), "7us");
        assert_eq!(time64(17_500), "17.5us");
        assert_eq!(time64(1_110), "1.11us");
        assert_eq!(time64(827), "827ns");
        assert_eq!(time64(56_900), "56.9us");
        assert_eq!(time64(40_000_000), "40ms");
        assert_eq!(time64(10_000_000_000), "10s");
        assert_eq!(rate(68_750), "550Kbit");
        // codel's defaults and its xstats as `tc -s` prints them.
        assert_eq!(time(5_000), "5ms");
        assert_eq!(time(100_000), "100ms");
        assert_eq!(time(4_537), "4.54ms");
        assert_eq!(time(999), "999us");
        assert_eq!(time(2_500_000), "2.5s");
        assert_eq!(rate(12_500_000_000), "100Gbit");
        // Not whole in the next unit: the smaller one (cake's Bulk tin at 100 Mbit/s).
        assert_eq!(rate(781_250), "6250Kbit");
        assert_eq!(rate(187_500_000), "1500Mbit");
        // At least a million of a unit: divided anyway, truncating.
        assert_eq!(rate(15_432_098), "123456Kbit");
        assert_eq!(rate(0), "0bit");
    }

    #[test]
    fn percent_g() {
        assert_eq!(g(0.0), "0");
        assert_eq!(g(0.0123456789), "0.0123457");
        assert_eq!(g(1.5e-5), "1.5e-05");
        assert_eq!(g(0.0001), "0.0001");
        assert_eq!(g(0.25), "0.25");
        assert_eq!(g(1.0), "1");
        assert_eq!(g(999_999.6), "1e+06");
        assert_eq!(g(123_456.0), "123456");
    }
}
