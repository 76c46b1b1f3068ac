//! Log2 histograms recorded without allocating.

use darkbuf_report::Log2Hist;

/// A log2 histogram with fixed buckets, so recording never allocates (the simulator
/// records in its hot path); turned into the report's [`Log2Hist`] (same bucket rule:
/// `[0]`, `[1]`, then `[2^(k-1), 2^k)`) at the end.
#[derive(Clone, Debug)]
pub struct Hist {
    buckets: [u64; 65],
}

impl Default for Hist {
    fn default() -> Self {
        Hist { buckets: [0; 65] }
    }
}

impl Hist {
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.buckets[Log2Hist::bucket_of(v)] += 1;
    }

    /// The report's histogram, up to the last non-empty bucket.
    pub fn to_log2(&self) -> Log2Hist {
        let used = self.buckets.iter().rposition(|&n| n > 0).map_or(0, |i| i + 1);
        Log2Hist { buckets: self.buckets[..used].to_vec() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same buckets as the report's growable histogram, trailing empty ones cut.
    #[test]
    fn same_buckets_as_log2hist() {
        let (mut h, mut l) = (Hist::default(), Log2Hist::default());
        for v in [0, 1, 2, 3, 4, 1000, 1023, 1024, u64::MAX] {
            h.record(v);
            l.record(v);
        }
        assert_eq!(h.to_log2().buckets, l.buckets);
        assert_eq!(h.to_log2().buckets[..4], [1, 1, 2, 1]);
        assert_eq!(h.to_log2().buckets.len(), 65);
        assert!(Hist::default().to_log2().buckets.is_empty());
    }
}
