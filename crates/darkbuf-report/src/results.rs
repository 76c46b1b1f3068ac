//! The results contract (docs/design.md "Results").
//!
//! A metric is `Some(value)` or `None`; every `None` has a reason in `unavailable`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A log2 histogram as bpftrace's `hist()` prints it: bucket 0 holds the value 0,
/// bucket 1 the value 1, bucket k >= 2 holds [2^(k-1), 2^k).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Log2Hist {
    pub buckets: Vec<u64>,
}

impl Log2Hist {
    pub fn bucket_of(v: u64) -> usize {
        if v == 0 {
            0
        } else {
            (64 - v.leading_zeros()) as usize
        }
    }

    pub fn record(&mut self, v: u64) {
        let b = Self::bucket_of(v);
        if self.buckets.len() <= b {
            self.buckets.resize(b + 1, 0);
        }
        self.buckets[b] += 1;
    }

    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }
}

/// An invariant the simulator found broken: when, and in what state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub time_ns: u64,
    pub invariant: String,
    pub detail: String,
}

/// One run's measurements.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub seed: u64,
    pub metrics: BTreeMap<String, Option<f64>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub histograms: BTreeMap<String, Log2Hist>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// Values over time, by name: `bql.limit`, `bql.inflight`, `qdisc.backlog_pkts`,
    /// `ring.occupancy` sampled every `sample_interval`, and `ping.rtt_ms` with one point
    /// per probe (`null` = lost).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub timeseries: BTreeMap<String, TimeSeries>,
    /// What a tool would have printed for this run, in that tool's own layout, by the
    /// command line that prints it: `tc -s qdisc show dev DEV`, `iperf3 -c ...`, the
    /// seed's bpftrace script. The kernel backend keeps what the tool printed; the
    /// simulator renders its own counters in the same layout, so the two can be read
    /// side by side with the reports people post.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub printouts: BTreeMap<String, String>,
}

/// One quantity over the measured window. `t_ms` counts from the end of warmup; the
/// points need not be evenly spaced (probes), and `values[i]` belongs to `t_ms[i]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeSeries {
    pub unit: String,
    pub t_ms: Vec<f64>,
    pub values: Vec<Option<f64>>,
}

/// A metric's name or a null's reason in [`Results`]: shared, so a 10,000-point sweep
/// keeps one copy of each of its few hundred names and handful of reasons instead of a
/// `String` per point (issue 48: 30 KB per point). Written and read as a JSON string.
pub type Shared = std::sync::Arc<str>;

/// `{mean, ci95, min, max, n}` of one metric over the runs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub mean: f64,
    /// Half-width of the 95% confidence interval of the mean (Student t); 0 for n = 1.
    pub ci95: f64,
    pub min: f64,
    pub max: f64,
    pub n: u32,
}

/// The results' `summary` in JSON: DESIGN.md's `{mean, ci95, min, max, n}` for every
/// metric, a metric no run measured included (its statistics `null`, `n` 0), so a
/// reader can take `summary[m]["n"]` of any metric. Results written as `null` before
/// are read too.
mod summary_json {
    use super::{Shared, Summary};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::BTreeMap;

    /// `deserialize_with` makes a missing statistic an error (a plain `Option` field
    /// would read as `null`): a damaged results file is reported, not half read.
    #[derive(Serialize, Deserialize)]
    struct Entry {
        #[serde(deserialize_with = "Option::deserialize")]
        mean: Option<f64>,
        #[serde(deserialize_with = "Option::deserialize")]
        ci95: Option<f64>,
        #[serde(deserialize_with = "Option::deserialize")]
        min: Option<f64>,
        #[serde(deserialize_with = "Option::deserialize")]
        max: Option<f64>,
        n: u32,
    }

    pub fn serialize<S: Serializer>(m: &BTreeMap<Shared, Option<Summary>>, s: S) -> Result<S::Ok, S::Error> {
        let entry = |v: &Option<Summary>| match *v {
            Some(Summary { mean, ci95, min, max, n }) => Entry { mean: Some(mean), ci95: Some(ci95), min: Some(min), max: Some(max), n },
            None => Entry { mean: None, ci95: None, min: None, max: None, n: 0 },
        };
        s.collect_map(m.iter().map(|(k, v)| (&**k, entry(v))))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<Shared, Option<Summary>>, D::Error> {
        let raw: BTreeMap<String, Option<Entry>> = BTreeMap::deserialize(d)?;
        let summary = |e: Entry| match e {
            Entry { mean: Some(mean), ci95: Some(ci95), min: Some(min), max: Some(max), n } if n > 0 => Some(Summary { mean, ci95, min, max, n }),
            _ => None,
        };
        Ok(raw.into_iter().map(|(k, e)| (k.into(), e.and_then(summary))).collect())
    }
}

/// `unavailable` in JSON: an object of strings.
mod shared_map {
    use super::Shared;
    use serde::{Deserialize, Deserializer, Serializer};
    use std::collections::BTreeMap;

    pub fn serialize<S: Serializer>(m: &BTreeMap<Shared, Shared>, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(m.iter().map(|(k, v)| (&**k, &**v)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<Shared, Shared>, D::Error> {
        let raw: BTreeMap<String, String> = BTreeMap::deserialize(d)?;
        Ok(raw.into_iter().map(|(k, v)| (k.into(), v.into())).collect())
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// "sim" or the running kernel's `uname -r`.
    pub kernel: String,
    pub cpu: String,
    pub profile: String,
    pub darkbuf_version: String,
    /// `--backend vm`: the virtual machine the kernel backend ran in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm: Option<VmEnvironment>,
}

/// `environment.vm`: the virtual machine of a `--backend vm` run (one boot for all its
/// points and runs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VmEnvironment {
    /// The guest kernel's `uname -r`.
    pub kernel: String,
    /// The kernel image booted (a vmlinuz/bzImage path or a kernel build tree).
    pub image: String,
    /// "kvm" or "tcg" (QEMU's software emulation).
    pub accel: String,
    /// vCPUs.
    pub cpus: u32,
    pub memory_mib: u64,
    /// From launching QEMU to the first run, including any KVM probe boot and the
    /// boot's calibration, s.
    pub boot_s: f64,
    /// The boot's calibration: what the guest delivered against what was configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<VmCalibration>,
    /// What the VM tools said of themselves (`vng --version`, `qemu-system-x86_64 --version`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tools: String,
    /// The host's other work while this point ran in the guest: its CPUs' busy time
    /// (/proc/stat) less darkbuf's and the VM's own (vng, QEMU), in % of one CPU.
    /// A TCG guest's timers fire later on a busy host (`vm.host_other_cpu_pct`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_other_cpu_pct: Option<f64>,
}

/// One boot's calibration: a shaped TCP flow and an unshaped UDP flood in the guest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VmCalibration {
    /// The TCP flow's goodput over what the shaper lets through (its rate less the
    /// TCP/IP/Ethernet headers); 1 = the guest filled the shaped rate.
    pub tcp_accuracy: Option<f64>,
    pub tcp_goodput_mbps: Option<f64>,
    pub tcp_shaped_mbps: f64,
    /// The UDP flood's delivered packets per second over those asked for.
    pub udp_accuracy: Option<f64>,
    pub udp_sink_pps: Option<f64>,
    pub udp_asked_pps: f64,
    /// What the flood sent, and where the rest was lost: the guest's veth ring
    /// (`ring.drops`) and the sink socket's receive buffer (`udp.rcvbuf_errors`), per s.
    #[serde(default)]
    pub udp_flood_pps: Option<f64>,
    #[serde(default)]
    pub udp_ring_drops: Option<f64>,
    #[serde(default)]
    pub udp_rcvbuf_errors: Option<f64>,
    /// The smaller of the two: `vm.rate_accuracy`.
    pub rate_accuracy: Option<f64>,
    /// Guest wall time of the calibration, s.
    pub wall_s: f64,
}

/// Where results came from, for a reader who wants to reproduce them (a patch cover
/// letter): the exact command line, the scenario file as written, and the darkbuf build.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The command line, each argument quoted for a POSIX shell where it needs it.
    pub command: String,
    /// The scenario file as the command line named it.
    pub scenario_file: String,
    /// The scenario file's text as it was read (`scenario` is its resolved form).
    pub scenario_toml: String,
    pub darkbuf_version: String,
    /// The git commit darkbuf was built from (`unknown` outside a git checkout).
    pub darkbuf_commit: String,
}

/// Everything one `darkbuf run` produces.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub scenario: serde_json::Value,
    pub backend: String,
    pub environment: Environment,
    pub runs: Vec<RunRecord>,
    /// `None` where no run measured the metric; in JSON every entry is an object, that
    /// one `{mean: null, ci95: null, min: null, max: null, n: 0}` (see [`summary_json`]).
    #[serde(with = "summary_json")]
    pub summary: BTreeMap<Shared, Option<Summary>>,
    /// Metric name -> why it is `null`.
    #[serde(with = "shared_map")]
    pub unavailable: BTreeMap<Shared, Shared>,
    /// What a reader of these numbers must know (e.g. RTT statistics from very few
    /// probes, per-flow metrics left out); see [`probe_warnings`] and [`flow_warnings`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
}

/// Below this many answered probes a run's RTT percentiles are warned about: with 15
/// probes the "p99" is the maximum and the median moves by a whole probe's RTT.
pub const FEW_PROBES: u64 = 15;

/// Warnings about the probes of `runs`: a run with a pinger in which no probe's fate is
/// known (so `ping.loss_pct` 0 means nothing), and runs whose RTT statistics come from
/// 1..=[`FEW_PROBES`] answered probes.
pub fn probe_warnings(runs: &[RunRecord]) -> Vec<String> {
    let mut none = Vec::new();
    let mut few = Vec::new();
    for r in runs {
        let Some(Some(probes)) = r.metrics.get("ping.probes").copied() else { continue };
        let loss = r.metrics.get("ping.loss_pct").copied().flatten().unwrap_or(0.0);
        let answered = (probes * (1.0 - loss / 100.0)).round().max(0.0) as u64;
        if probes == 0.0 {
            none.push(r.seed.to_string());
        } else if (1..=FEW_PROBES).contains(&answered) {
            few.push(format!("{answered} (seed {})", r.seed));
        }
    }
    let mut out = Vec::new();
    if !none.is_empty() {
        out.push(format!(
            "no probe was answered or counted lost in the measured window (seed {}): every probe sent was still \
             queued at the end, or none could be sent; ping.loss_pct has nothing to measure",
            none.join(", ")
        ));
    }
    if !few.is_empty() {
        out.push(format!(
            "the RTT statistics come from very few answered probes: {}; below {} the percentiles are a handful of \
             samples (p99 is the maximum): lengthen duration or shorten the ping interval",
            few.join(", "),
            FEW_PROBES + 1
        ));
    }
    out
}

/// A warning when the runs have the aggregates of their TCP flows' goodput
/// (`tcp.flow_jain`) and no flow's own metrics (`tcp.flow.0.goodput_mbps`): a run with
/// more TCP flows than `PER_FLOW_METRICS_MAX` (darkbuf-scenario's limits) leaves them
/// out, and a reader looking for `tcp.flow.N.*` must be told where they went.
pub fn flow_warnings(runs: &[RunRecord]) -> Vec<String> {
    let left_out: Vec<String> = runs
        .iter()
        .filter(|r| r.metrics.contains_key("tcp.flow_jain") && !r.metrics.contains_key("tcp.flow.0.goodput_mbps"))
        .map(|r| r.seed.to_string())
        .collect();
    if left_out.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "the per-flow metrics tcp.flow.N.* are left out (seed {}): the run has more TCP flows than get their own \
         (PER_FLOW_METRICS_MAX, docs/flows-at-scale.md); tcp.flow_goodput_p1/p10/p50/p90/p99_mbps and tcp.flow_jain \
         describe every flow",
        left_out.join(", ")
    )]
}

/// One column of a sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    pub label: String,
    /// The dotted keys this point set, as `KEY=VALUE` strings.
    pub set: Vec<String>,
    pub results: Results,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepResults {
    pub name: String,
    pub points: Vec<SweepPoint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
}

/// The reason recorded for a metric that is null in every run when the backend gave
/// none (the contract wants a reason for every null).
pub const NO_REASON_GIVEN: &str = "no run measured it";

impl Results {
    /// Assemble a run's results and compute `summary` with
    /// [`crate::stats::summarize_runs`].
    ///
    /// `unavailable` is kept as given; a metric that is null in every run and has
    /// no reason there gets [`NO_REASON_GIVEN`], so every null has a reason.
    pub fn from_runs(
        scenario: serde_json::Value,
        backend: impl Into<String>,
        environment: Environment,
        runs: Vec<RunRecord>,
        unavailable: BTreeMap<String, String>,
    ) -> Results {
        let (summary, _nulls) = crate::stats::summarize_runs(&runs);
        let summary: BTreeMap<Shared, Option<Summary>> = summary.into_iter().map(|(k, v)| (k.into(), v)).collect();
        let mut unavailable: BTreeMap<Shared, Shared> = unavailable.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        for (name, s) in &summary {
            if s.is_none() {
                unavailable.entry(name.clone()).or_insert_with(|| NO_REASON_GIVEN.into());
            }
        }
        let mut warnings = probe_warnings(&runs);
        warnings.extend(flow_warnings(&runs));
        Results {
            scenario,
            backend: backend.into(),
            environment,
            runs,
            summary,
            unavailable,
            warnings,
            provenance: None,
        }
    }

    /// The summary of `metric`, if any run measured it.
    pub fn metric(&self, metric: &str) -> Option<Summary> {
        self.summary.get(metric).copied().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(seed: u64, keys: &[&str]) -> RunRecord {
        RunRecord { seed, metrics: keys.iter().map(|k| (k.to_string(), Some(1.0))).collect(), ..RunRecord::default() }
    }

    /// Only runs with the flows' aggregates and without flow 0's metrics are named; a
    /// run without TCP flows, or with its per-flow metrics, is not.
    #[test]
    fn flow_warnings_name_the_runs_whose_per_flow_metrics_are_left_out() {
        let many = record(3, &["tcp.flow_jain", "tcp.goodput_mbps"]);
        let few = record(4, &["tcp.flow_jain", "tcp.flow.0.goodput_mbps"]);
        let none = record(5, &["sink.pps"]);
        assert!(flow_warnings(&[few.clone(), none.clone()]).is_empty());
        let w = flow_warnings(&[many.clone(), few, none, RunRecord { seed: 7, ..many }]);
        assert_eq!(w.len(), 1);
        assert!(w[0].starts_with("the per-flow metrics tcp.flow.N.* are left out (seed 3, 7)"), "{}", w[0]);
        let r = Results::from_runs(serde_json::Value::Null, "sim", Environment::default(), vec![record(1, &["tcp.flow_jain"])], BTreeMap::new());
        assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    }
}
