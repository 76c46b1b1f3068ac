//! Quantities as people write them in scenario files and as `tc` accepts them:
//! durations ("200ms", "1.5s"), sizes ("1MiB", "1514b", "32Mb") and rates
//! ("100Mbit", "50kpps", "max").
//!
//! Size and rate suffixes follow iproute2's `get_size()` / `get_rate()`
//! (tc/tc_util.c): "k"/"kb" = 1024 bytes, "kbit" = 1000 bits, "kbps" = 1000 bytes/s.
//! Suffixes are case-insensitive, as tc's `strcasecmp` makes them.

use std::fmt;

/// Why a quantity did not parse; `expected` says what would be valid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitError {
    pub message: String,
    pub expected: &'static str,
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; expected {}", self.message, self.expected)
    }
}

impl std::error::Error for UnitError {}

pub const DURATION_EXPECTED: &str =
    "a duration such as \"10s\", \"200ms\", \"100us\" or \"500ns\" (units: ns, us, ms, s, min, h)";
pub const SIZE_EXPECTED: &str =
    "a size such as \"1514\", \"1514b\", \"64k\", \"1MiB\" or \"32Mb\" (units: b, k/kb, m/mb, g/gb, KiB, MiB, GiB, kbit, mbit, gbit)";
pub const RATE_EXPECTED: &str =
    "a rate such as \"max\", \"50kpps\", \"100Mbit\", \"1gbit\" or \"125kbps\" (units: pps, kpps, mpps, bit, kbit, mbit, gbit, tbit, bps, kbps, mbps, gbps)";

/// `s`, trimmed, split into its leading number (digits, sign, decimal point) and the
/// rest (the unit).
fn split_digits(s: &str) -> (&str, &str) {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    s.split_at(end)
}

fn split_number(s: &str) -> Option<(f64, &str)> {
    let (num, unit) = split_digits(s);
    let v: f64 = num.parse().ok()?;
    v.is_finite().then_some((v, unit.trim()))
}

fn err(message: String, expected: &'static str) -> UnitError {
    UnitError { message, expected }
}

/// Parses a duration into nanoseconds. A bare number is an error (the unit is never
/// guessed); negative and zero values are left to the caller, which knows if zero is valid.
pub fn parse_duration_ns(s: &str) -> Result<i128, UnitError> {
    let (v, unit) = split_number(s)
        .ok_or_else(|| err(format!("\"{s}\" is not a duration"), DURATION_EXPECTED))?;
    let scale: f64 = match unit.to_ascii_lowercase().as_str() {
        "ns" | "nsec" => 1.0,
        "us" | "usec" | "µs" => 1e3,
        "ms" | "msec" => 1e6,
        "s" | "sec" | "secs" => 1e9,
        "min" => 60e9,
        "h" | "hour" | "hours" => 3600e9,
        "" => {
            return Err(err(format!("\"{s}\" has no unit"), DURATION_EXPECTED));
        }
        other => {
            return Err(err(format!("unknown time unit \"{other}\" in \"{s}\""), DURATION_EXPECTED));
        }
    };
    let ns = (v * scale).round();
    if ns.abs() > 1e20 {
        return Err(err(format!("\"{s}\" is out of range"), DURATION_EXPECTED));
    }
    Ok(ns as i128)
}

/// Parses a size into bytes (tc's `get_size()` conventions plus IEC units).
pub fn parse_size_bytes(s: &str) -> Result<u64, UnitError> {
    let (v, unit) =
        split_number(s).ok_or_else(|| err(format!("\"{s}\" is not a size"), SIZE_EXPECTED))?;
    let scale: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "kbit" => 1024.0 / 8.0,
        "mbit" => 1024.0 * 1024.0 / 8.0,
        "gbit" => 1024.0 * 1024.0 * 1024.0 / 8.0,
        other => {
            return Err(err(format!("unknown size unit \"{other}\" in \"{s}\""), SIZE_EXPECTED));
        }
    };
    if v < 0.0 {
        return Err(err(format!("\"{s}\" is negative"), SIZE_EXPECTED));
    }
    let b = (v * scale).round();
    if b > u64::MAX as f64 / 2.0 {
        return Err(err(format!("\"{s}\" is out of range"), SIZE_EXPECTED));
    }
    Ok(b as u64)
}

/// A traffic or shaping rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rate {
    /// As fast as the sender's CPU and send buffer allow.
    Max,
    /// Packets per second.
    Pps(f64),
    /// Bits per second (of L2 frame, as tc's shapers count).
    Bps(u64),
}

/// Parses a rate (`tc`'s `get_rate()` units, plus packet rates and "max").
pub fn parse_rate(s: &str) -> Result<Rate, UnitError> {
    if s.trim().eq_ignore_ascii_case("max") {
        return Ok(Rate::Max);
    }
    let (v, unit) =
        split_number(s).ok_or_else(|| err(format!("\"{s}\" is not a rate"), RATE_EXPECTED))?;
    if v <= 0.0 {
        return Err(err(format!("rate \"{s}\" must be positive"), RATE_EXPECTED));
    }
    let u = unit.to_ascii_lowercase();
    let pps = match u.as_str() {
        "pps" => Some(1.0),
        "kpps" => Some(1e3),
        "mpps" => Some(1e6),
        _ => None,
    };
    if let Some(scale) = pps {
        return Ok(Rate::Pps(v * scale));
    }
    let bits_per_sec: f64 = match u.as_str() {
        "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        "tbit" => 1e12,
        "kibit" => 1024.0,
        "mibit" => 1024.0 * 1024.0,
        "gibit" => 1024.0 * 1024.0 * 1024.0,
        "bps" => 8.0,
        "kbps" => 8e3,
        "mbps" => 8e6,
        "gbps" => 8e9,
        "" => return Err(err(format!("\"{s}\" has no unit"), RATE_EXPECTED)),
        other => {
            return Err(err(format!("unknown rate unit \"{other}\" in \"{s}\""), RATE_EXPECTED));
        }
    };
    if bits_overflow(s, bits_per_sec) {
        return Err(err(
            format!("rate \"{s}\" is out of range: at most {} bit/s (2^64 - 1)", u64::MAX),
            RATE_EXPECTED,
        ));
    }
    Ok(Rate::Bps((v * bits_per_sec).round() as u64))
}

/// Whether the rate `s` (a positive number, then a unit of `scale` bit/s) is more than
/// `u64::MAX` bit/s. Decided on the digits, not on the f64 (which rounds every value
/// near 2^64 to 2^64): `"18446744073709551615bit"` fits, `"18446744073709551616bit"`
/// does not. The rate itself is still computed in f64 as before, so every rate that
/// fits parses to the same value as it always did.
fn bits_overflow(s: &str, scale: f64) -> bool {
    let num = split_digits(s).0.trim_start_matches('+');
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let int = int.trim_start_matches('0');
    // Every unit is a whole number of bit/s, at most 8e12.
    let scale = scale as u128;
    let Ok(int) = (if int.is_empty() { Ok(0) } else { int.parse::<u128>() }) else { return true };
    let Some(whole) = int.checked_mul(scale) else { return true };
    let frac: f64 = format!("0.{frac}0").parse().unwrap_or(0.0);
    let bits = whole + (frac * scale as f64).round() as u128;
    bits > u64::MAX as u128
}

/// Formats nanoseconds the way a person would write them back ("1s", "200ms", "150us").
#[allow(clippy::manual_is_multiple_of)] // is_multiple_of needs Rust 1.87; MSRV is 1.80
pub fn format_duration_ns(ns: u64) -> String {
    if ns == 0 {
        "0s".into()
    } else if ns % 1_000_000_000 == 0 {
        format!("{}s", ns / 1_000_000_000)
    } else if ns % 1_000_000 == 0 {
        format!("{}ms", ns / 1_000_000)
    } else if ns % 1_000 == 0 {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("10s").unwrap(), 10_000_000_000);
        assert_eq!(parse_duration_ns("200ms").unwrap(), 200_000_000);
        assert_eq!(parse_duration_ns("1.5s").unwrap(), 1_500_000_000);
        assert_eq!(parse_duration_ns("100us").unwrap(), 100_000);
        assert_eq!(parse_duration_ns("-1s").unwrap(), -1_000_000_000);
        assert!(parse_duration_ns("10 parsecs").unwrap_err().message.contains("parsecs"));
        assert!(parse_duration_ns("10").is_err());
        assert!(parse_duration_ns("s").is_err());
        assert_eq!(format_duration_ns(200_000_000), "200ms");
    }

    #[test]
    fn sizes_follow_tc() {
        assert_eq!(parse_size_bytes("1514").unwrap(), 1514);
        assert_eq!(parse_size_bytes("1514b").unwrap(), 1514);
        assert_eq!(parse_size_bytes("64k").unwrap(), 65536);
        assert_eq!(parse_size_bytes("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_size_bytes("32Mb").unwrap(), 32 << 20);
        assert!(parse_size_bytes("1 furlong").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("max").unwrap(), Rate::Max);
        assert_eq!(parse_rate("50kpps").unwrap(), Rate::Pps(50_000.0));
        assert_eq!(parse_rate("100Mbit").unwrap(), Rate::Bps(100_000_000));
        assert_eq!(parse_rate("125kbps").unwrap(), Rate::Bps(1_000_000));
        assert!(parse_rate("0mbit").is_err());
        assert!(parse_rate("fast").is_err());
    }

    #[test]
    fn rates_beyond_u64_are_out_of_range_not_clamped() {
        assert_eq!(parse_rate("18446744073709551615bit").unwrap(), Rate::Bps(u64::MAX));
        assert_eq!(parse_rate("18446744073709551614.4bit").unwrap(), Rate::Bps(u64::MAX));
        assert_eq!(parse_rate("18446744073709.551615mbit").unwrap(), Rate::Bps(u64::MAX));
        // 2^61 - 1 bytes/s fits (in f64 it rounds up to 2^64, which saturates as before).
        assert_eq!(parse_rate("2305843009213693951bps").unwrap(), Rate::Bps(u64::MAX));
        for s in [
            "18446744073709551616bit",
            "18446744073709551615.5bit",
            "99999999999999999999Mbit",
            "99999999999999999999gbit",
            "2305843009213693952bps",
            "1000000000000000000000000000000000000000000bit",
        ] {
            let e = parse_rate(s).unwrap_err();
            assert!(e.message.contains("out of range"), "{s}: {e}");
        }
        // Packet rates are not bit rates and are unaffected.
        assert!(matches!(parse_rate("99999999999999999999Mpps"), Ok(Rate::Pps(_))));
    }
}
