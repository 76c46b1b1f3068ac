//! Percentiles, one definition for every backend and metric.

/// The nearest-rank percentile `p` (0..=100) of `sorted` (ascending), as ping-style
/// tools report them: the value at rank `ceil(p / 100 * n)`, at least the first.
/// `None` for no values.
pub fn percentile(sorted: &[u64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p.clamp(0.0, 100.0) / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    Some(sorted[rank.min(sorted.len()) - 1] as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v: Vec<u64> = (1..=10).collect();
        assert_eq!(percentile(&v, 50.0), Some(5.0));
        assert_eq!(percentile(&v, 99.0), Some(10.0));
        assert_eq!(percentile(&v, 10.0), Some(1.0));
        assert_eq!(percentile(&v, 11.0), Some(2.0));
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&v, 100.0), Some(10.0));
        // Below 100 values the 99th percentile is the maximum.
        assert_eq!(percentile(&[3, 7, 9], 99.0), Some(9.0));
        assert_eq!(percentile(&[], 50.0), None);
    }
}
