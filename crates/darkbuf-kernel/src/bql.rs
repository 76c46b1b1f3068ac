//! BQL as sysfs shows it: one `queues/tx-N/byte_queue_limits` directory per TX queue
//! (net/core/net-sysfs.c `bql_show_limit()`, `bql_show_inflight()`,
//! `bql_show_limit_min()`, `bql_show_limit_max()`), sampled during the measured window.
//!
//! `bql.*` is the device: at each sample the largest queue's `limit` and the sum of the
//! queues' `inflight`, as the simulator defines them. With more than one TX queue each
//! queue is also `bql.txq.N.*`.

use darkbuf_report::TimeSeries;
use std::collections::BTreeMap;

/// One TX queue's `byte_queue_limits` at one sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BqlQueue {
    pub limit: u64,
    pub inflight: u64,
    pub limit_min: u64,
    pub limit_max: u64,
}

/// The shell command that reads queue `q` of `dev`: its four files, one a line, with
/// the shell's builtins (no fork: a sample of a 16-queue device costs none).
pub fn read_cmd(dev: &str, q: u32) -> String {
    let d = format!("/sys/class/net/{dev}/queues/tx-{q}/byte_queue_limits");
    format!("for f in limit inflight limit_min limit_max; do read -r v < {d}/$f && echo \"$v\"; done")
}

/// Reads queue `q` of `dev` in the calling thread's view of /sys (a namespace's
/// [`crate::session::NsThread`]): the four files of [`read_cmd`], parsed.
pub fn read_queue(dev: &str, q: u32) -> Option<BqlQueue> {
    let d = format!("/sys/class/net/{dev}/queues/tx-{q}/byte_queue_limits");
    let mut text = String::new();
    for f in ["limit", "inflight", "limit_min", "limit_max"] {
        text.push_str(std::fs::read_to_string(format!("{d}/{f}")).ok()?.trim());
        text.push('\n');
    }
    parse_queue(&text)
}

/// Parses [`read_cmd`]'s output: four numbers, one a line.
pub fn parse_queue(text: &str) -> Option<BqlQueue> {
    let v: Vec<u64> = text.split_whitespace().map(str::parse).collect::<Result<_, _>>().ok()?;
    match v[..] {
        [limit, inflight, limit_min, limit_max] => Some(BqlQueue { limit, inflight, limit_min, limit_max }),
        _ => None,
    }
}

/// The device at one sample: the largest limit and the summed in-flight units.
fn device(queues: &[BqlQueue]) -> (u64, u64) {
    queues.iter().fold((0, 0), |(l, i), q| (l.max(q.limit), i + q.inflight))
}

/// The nearest-rank percentile `p` (0..=1) of `sorted`, which is not empty: the samples
/// are reads at evenly spaced instants, so this is the simulator's time-weighted quantile.
fn nearest_rank(sorted: &[u64], p: f64) -> u64 {
    let rank = (p * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// The `bql.*` metrics (and `bql.txq.N.*` with more than one queue) of `samples`, each
/// its time (ms) and every queue's values; the `bql.limit` and `bql.inflight` series
/// when `series`. `None` when there is no sample. Averages are over the samples.
pub fn metrics(samples: &[(f64, &[BqlQueue])], series: bool) -> Option<(BTreeMap<String, Option<f64>>, BTreeMap<String, TimeSeries>)> {
    let (_, last) = samples.last()?;
    let nq = last.len();
    let mean = |v: &mut dyn Iterator<Item = u64>| v.map(|x| x as f64).sum::<f64>() / samples.len() as f64;
    let mut m = BTreeMap::new();
    let put = |m: &mut BTreeMap<String, Option<f64>>, prefix: &str, lim: &dyn Fn(&[BqlQueue]) -> u64, inf: &dyn Fn(&[BqlQueue]) -> u64| {
        m.insert(format!("{prefix}limit_avg"), Some(mean(&mut samples.iter().map(|(_, q)| lim(q)))));
        m.insert(format!("{prefix}limit_last"), Some(lim(last) as f64));
        m.insert(format!("{prefix}inflight_avg"), Some(mean(&mut samples.iter().map(|(_, q)| inf(q)))));
        m.insert(format!("{prefix}inflight_max"), samples.iter().map(|(_, q)| inf(q)).max().map(|v| v as f64));
        let mut sorted: Vec<u64> = samples.iter().map(|(_, q)| inf(q)).collect();
        sorted.sort_unstable();
        for (key, p) in [("inflight_p50", 0.5), ("inflight_p99", 0.99)] {
            m.insert(format!("{prefix}{key}"), Some(nearest_rank(&sorted, p) as f64));
        }
    };
    put(&mut m, "bql.", &|q| device(q).0, &|q| device(q).1);
    if nq > 1 {
        for n in 0..nq {
            let at = move |q: &[BqlQueue]| q.get(n).copied().unwrap_or_default();
            put(&mut m, &format!("bql.txq.{n}."), &|q| at(q).limit, &|q| at(q).inflight);
            m.insert(format!("bql.txq.{n}.limit_min"), Some(last[n].limit_min as f64));
            m.insert(format!("bql.txq.{n}.limit_max"), Some(last[n].limit_max as f64));
        }
    }
    let mut ts = BTreeMap::new();
    if series {
        let t_ms: Vec<f64> = samples.iter().map(|(t, _)| *t).collect();
        for (name, f) in [("bql.limit", &(|q: &[BqlQueue]| device(q).0) as &dyn Fn(&[BqlQueue]) -> u64), ("bql.inflight", &|q: &[BqlQueue]| device(q).1)] {
            let values = samples.iter().map(|(_, q)| Some(f(q) as f64)).collect();
            ts.insert(name.to_string(), TimeSeries { unit: "units".into(), t_ms: t_ms.clone(), values });
        }
    }
    Some((m, ts))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(limit: u64, inflight: u64) -> BqlQueue {
        BqlQueue { limit, inflight, limit_min: 0, limit_max: 1_879_048_192 }
    }

    #[test]
    fn parses_the_four_files() {
        assert_eq!(parse_queue("3028\n1514\n0\n1879048192\n"), Some(BqlQueue { limit: 3028, inflight: 1514, limit_min: 0, limit_max: 1_879_048_192 }));
        assert_eq!(parse_queue("3028\n1514\n0\n"), None);
        assert_eq!(parse_queue("x\n1\n2\n3\n"), None);
        assert_eq!(
            read_cmd("eth0", 3),
            "for f in limit inflight limit_min limit_max; do read -r v < /sys/class/net/eth0/queues/tx-3/byte_queue_limits/$f && echo \"$v\"; done"
        );
    }

    /// Two queues, three samples: the device's limit is the larger queue's, its
    /// in-flight the sum; each queue keeps its own.
    #[test]
    fn device_is_max_of_limits_and_sum_of_inflight() {
        let s = [[q(10, 4), q(30, 0)], [q(20, 6), q(30, 9)], [q(40, 1), q(2, 2)]];
        let samples: Vec<(f64, &[BqlQueue])> = s.iter().enumerate().map(|(i, x)| (i as f64 * 10.0, &x[..])).collect();
        let (m, ts) = metrics(&samples, true).unwrap();
        let g = |k: &str| m[k].unwrap();
        // limits 30, 30, 40; in-flight 4, 15, 3.
        assert_eq!(g("bql.limit_avg"), 100.0 / 3.0);
        assert_eq!(g("bql.limit_last"), 40.0);
        assert_eq!(g("bql.inflight_avg"), 22.0 / 3.0);
        assert_eq!(g("bql.inflight_max"), 15.0);
        // Sorted 3, 4, 15: the median is the second read, the 99th percentile the third.
        assert_eq!(g("bql.inflight_p50"), 4.0);
        assert_eq!(g("bql.inflight_p99"), 15.0);
        assert_eq!(g("bql.txq.1.inflight_p50"), 2.0);
        assert_eq!(g("bql.txq.0.limit_avg"), 70.0 / 3.0);
        assert_eq!(g("bql.txq.1.limit_last"), 2.0);
        assert_eq!(g("bql.txq.1.inflight_max"), 9.0);
        assert_eq!(g("bql.txq.1.inflight_avg"), 11.0 / 3.0);
        assert_eq!(g("bql.txq.0.limit_max"), 1_879_048_192.0);
        assert_eq!(g("bql.txq.0.limit_min"), 0.0);
        assert_eq!(m.len(), 6 + 2 * 8);
        assert_eq!(ts["bql.limit"].values, [Some(30.0), Some(30.0), Some(40.0)]);
        assert_eq!(ts["bql.inflight"].values, [Some(4.0), Some(15.0), Some(3.0)]);
        assert_eq!(ts["bql.inflight"].t_ms, [0.0, 10.0, 20.0]);
    }

    /// One TX queue: `bql.*` only, as before there were queues to tell apart.
    #[test]
    fn one_queue_has_no_per_queue_keys() {
        let s = [[q(8, 3)], [q(8, 5)]];
        let samples: Vec<(f64, &[BqlQueue])> = s.iter().map(|x| (0.0, &x[..])).collect();
        let (m, ts) = metrics(&samples, false).unwrap();
        assert_eq!(
            m.keys().collect::<Vec<_>>(),
            ["bql.inflight_avg", "bql.inflight_max", "bql.inflight_p50", "bql.inflight_p99", "bql.limit_avg", "bql.limit_last"]
        );
        assert_eq!(m["bql.inflight_avg"], Some(4.0));
        assert!(ts.is_empty());
        assert!(metrics(&[], true).is_none());
    }
}
