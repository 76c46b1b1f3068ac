//! `[[traffic]] kind = "web"`: short TCP flows (issue 54). Connections open at Poisson
//! arrivals (`arrivals = "50/s"`), each writes a size drawn from `size_dist` and
//! closes; the results are flow completion times (FCT) and slowdowns, overall and per
//! size bucket (docs/web.md).
//!
//! The size distributions are pure functions of a uniform draw in (0, 1) (inverse
//! transform sampling), so both backends draw the same sizes from the same stream:
//! - `exponential`: mean `size_mean`;
//! - `pareto`: shape `size_shape` (> 1, default 1.5) and scale `size_mean` x (shape - 1)
//!   / shape, so that its mean is `size_mean`;
//! - `lognormal`: sigma `size_shape` (default 1) and mu = ln(`size_mean`) - sigma^2 / 2;
//! - `cdf`: a flow-size CDF file (`size_cdf`): lines of `SIZE CUMULATIVE` (bytes, a
//!   probability in [0, 1] or a percentage in [0, 100], nondecreasing), interpolated
//!   linearly between points, as ns-3's `EmpiricalRandomVariable` (and the pFabric,
//!   HPCC and Homa simulators built on it) draw from the same files.

use crate::diag::{Diagnostic, DiagnosticKind as K};
use crate::schema::*;
use crate::section::Sec;
use crate::tree::{Table, V};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use darkbuf_model::qdisc::{Qdisc, Shaping, TokenBucket};
use serde::Serialize;

/// The keys of a web entry: its own, and the ones it shares with `kind = "tcp"`.
pub const WEB_KEYS: &[&str] = &["kind", "name", "arrivals", "size_dist", "size_mean", "size_shape", "size_cdf", "size_buckets", "cc", "direction", "cpu", "start", "stop", "dscp", "ecn", "sndbuf", "rcvbuf", "path_delay", "station"];
/// The keys that are the web entry's alone (the rest resolve as a TCP entry's).
const OWN_KEYS: &[&str] = &["arrivals", "size_dist", "size_mean", "size_shape", "size_cdf", "size_buckets"];
/// The size distributions by name.
pub const SIZE_DISTS: &[&str] = &["pareto", "exponential", "lognormal", "cdf"];
/// The default size buckets' upper edges, bytes (the last bucket has none): 10 KB,
/// 100 KB, 1 MB and 10 MB (powers of 1000, as the pFabric and Homa papers bucket).
pub const DEFAULT_BUCKETS: &[u64] = &[10_000, 100_000, 1_000_000, 10_000_000];
/// The largest flow a draw gives, bytes: a Pareto tail is cut here (1 GB, inside the
/// 31 bits of TCP sequence space a connection's `before()`/`after()` compare).
pub const MAX_FLOW_BYTES: u64 = 1_000_000_000;
/// The largest arrival rate, flows per second.
pub const MAX_ARRIVALS_PER_S: f64 = 1_000_000.0;

/// A web entry, resolved.
#[derive(Clone, Debug, Serialize)]
pub struct WebFlows {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Mean connection arrivals per second (a Poisson process).
    pub arrivals_per_s: f64,
    pub size: SizeDist,
    /// The size buckets' upper edges, bytes, ascending: bucket N holds the flows of
    /// `edge[N-1] < size <= edge[N]`, the last one everything above the last edge.
    pub size_buckets: Vec<u64>,
    /// Each connection's TCP settings: a `kind = "tcp"` entry's (cc, direction, cpu,
    /// start, stop, dscp, ecn, buffers, path_delay), one flow, with the handshake.
    pub tcp: TcpFlow,
}

/// A flow-size distribution.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "dist", rename_all = "lowercase")]
pub enum SizeDist {
    Exponential { mean_bytes: f64 },
    Pareto { mean_bytes: f64, shape: f64 },
    Lognormal { mean_bytes: f64, sigma: f64 },
    Cdf {
        file: String,
        /// (size in bytes, cumulative probability), both nondecreasing, the last at 1.
        #[serde(skip)]
        points: Vec<(f64, f64)>,
        /// The distribution's mean (the piecewise-linear CDF's), bytes.
        mean_bytes: f64,
    },
}

impl SizeDist {
    /// The size for uniform draw `u` in (0, 1), bytes: at least 1, at most
    /// [`MAX_FLOW_BYTES`].
    pub fn sample(&self, u: f64) -> u64 {
        let u = u.clamp(f64::MIN_POSITIVE, 1.0 - f64::EPSILON);
        let x = match self {
            SizeDist::Exponential { mean_bytes } => -mean_bytes * (1.0 - u).ln(),
            SizeDist::Pareto { mean_bytes, shape } => {
                let scale = mean_bytes * (shape - 1.0) / shape;
                scale / (1.0 - u).powf(1.0 / shape)
            }
            SizeDist::Lognormal { mean_bytes, sigma } => {
                let mu = mean_bytes.ln() - sigma * sigma / 2.0;
                (mu + sigma * inverse_normal(u)).exp()
            }
            SizeDist::Cdf { points, .. } => cdf_inverse(points, u),
        };
        (x.round() as u64).clamp(1, MAX_FLOW_BYTES)
    }

    /// The distribution's mean, bytes (before the cut at [`MAX_FLOW_BYTES`]).
    pub fn mean_bytes(&self) -> f64 {
        match self {
            SizeDist::Exponential { mean_bytes } | SizeDist::Pareto { mean_bytes, .. } | SizeDist::Lognormal { mean_bytes, .. } | SizeDist::Cdf { mean_bytes, .. } => *mean_bytes,
        }
    }
}

/// One web entry's connections as the run's seed draws them, for both backends: the
/// Poisson arrivals (exponential gaps of mean 1 / `arrivals`, each rounded to whole ns
/// and at least 1) from `start`, and each connection's size ([`SizeDist::sample`]),
/// from the entry's own ChaCha8 stream, so that adding an entry changes no other's
/// draws. The draws come in the order the simulator's event loop makes them: the first
/// gap at time 0, then at each arrival the gap to the next one, then this one's size.
/// Arrivals stop at the entry's `stop` (default: the run's end), exclusive.
#[derive(Clone, Debug)]
pub struct Arrivals {
    rng: ChaCha8Rng,
    mean_gap_ns: f64,
    size: SizeDist,
    next_ns: u64,
    stop_ns: u64,
}

impl Arrivals {
    /// Entry `traffic_index` (its `[[traffic]]` index) of a run with seed `seed`;
    /// [`Self::set_end`] cuts it at the run's end.
    pub fn new(w: &WebFlows, traffic_index: u16, seed: u64) -> Arrivals {
        let rng = ChaCha8Rng::seed_from_u64(seed ^ (0x7765_6200 + traffic_index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let stop_ns = w.tcp.stop_ns.unwrap_or(u64::MAX);
        let mut a = Arrivals { rng, mean_gap_ns: 1e9 / w.arrivals_per_s, size: w.size.clone(), next_ns: 0, stop_ns };
        a.next_ns = w.tcp.start_ns.saturating_add(a.gap());
        a
    }

    /// No connection opens at or after `end_ns` (the run's end: warmup + duration).
    pub fn set_end(&mut self, end_ns: u64) {
        self.stop_ns = self.stop_ns.min(end_ns);
    }

    /// The same, by value.
    pub fn until(mut self, end_ns: u64) -> Arrivals {
        self.set_end(end_ns);
        self
    }

    /// The next gap of the Poisson process, ns (exponential, from one draw).
    fn gap(&mut self) -> u64 {
        let u: f64 = self.rng.gen();
        (-(1.0 - u).ln() * self.mean_gap_ns).round().max(1.0) as u64
    }

    /// When the next connection opens (run time, ns); `None` once that is past `stop`.
    pub fn next_at(&self) -> Option<u64> {
        (self.next_ns < self.stop_ns).then_some(self.next_ns)
    }

    /// The connection due at [`Self::next_at`] opens: (its time, its size). The gap to
    /// the one after is drawn first, then the size.
    pub fn open(&mut self) -> (u64, u64) {
        let at = self.next_ns;
        self.next_ns = at.saturating_add(self.gap());
        (at, self.size.sample(self.rng.gen()))
    }
}

impl Iterator for Arrivals {
    type Item = (u64, u64);

    /// (time, size) of each connection before `stop`.
    fn next(&mut self) -> Option<(u64, u64)> {
        self.next_at()?;
        Some(self.open())
    }
}

/// A SYN's and a SYN-ACK's frame, bytes with Ethernet: the timestamped header (66) plus
/// the handshake's options (MSS 4, SACK permitted 2, window scale 3, one NOP).
pub const SYN_FRAME_LEN: u64 = 74;
/// A frame's bytes on the wire besides its TCP payload: IP 20 + TCP with timestamps 32
/// + Ethernet 14 + FCS, preamble and inter-frame gap 24.
pub const FRAME_EXTRA: u64 = 52 + 14 + 24;
/// A frame's bytes besides its TCP payload as a qdisc counts them (`qdisc_pkt_len()`):
/// IP 20 + TCP with timestamps 32 + Ethernet 14.
pub const FRAME_L2_EXTRA: u64 = 52 + 14;

/// The idle path a flow's ideal FCT is computed on, from the scenario's mechanics (one
/// definition for both backends, docs/web.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdealPath {
    /// One-way propagation: `[path] delay` + the entry's `path_delay` (+ `[lan] delay`), ns.
    pub one_way_ns: u64,
    /// The least delay a qdisc on the data's way adds (a netem's `delay` less its
    /// jitter's reach), which the SYN, sent the same way, gets too; ns.
    pub fwd_delay_ns: u64,
    /// The bottleneck's line rate, bit/s: the least of the NIC's line, `[path] rate` and
    /// the LAN's line. `None` on veth and tun, which have no line rate.
    pub rate_bps: Option<u64>,
    /// The token buckets of the qdiscs on the data's way (htb's ceil buckets of the
    /// default class, tbf, cake's `bandwidth`, netem's `rate`), which charge each frame
    /// its Ethernet length (`qdisc_pkt_len()`: payload + [`FRAME_L2_EXTRA`]).
    pub buckets: Vec<TokenBucket>,
    /// Payload per full segment (MSS) and a frame's bytes on the wire besides it
    /// ([`FRAME_EXTRA`]).
    pub mss: u64,
    pub frame_extra: u64,
}

impl IdealPath {
    /// Entry `w`'s path in `scn`, with the route's `mtu` (IP bytes).
    pub fn of(scn: &Scenario, w: &WebFlows, mtu: u32) -> IdealPath {
        let lan = scn.lan.as_ref();
        let path = scn.device.wire().map(|w| &w.path);
        let one_way_ns = path.map_or(0, |p| p.delay_ns) + w.tcp.path_delay_ns + lan.map_or(0, |l| l.delay_ns);
        let rates = [scn.device.nic().map(|n| n.rate_bps), path.and_then(|p| p.rate_bps), lan.map(|l| l.rate_bps).filter(|&r| r > 0)];
        let rate_bps = rates.into_iter().flatten().min();
        let shaping = data_qdiscs(scn, w).into_iter().fold(Shaping::default(), |s, q| s.then(qdisc_shaping(scn, q)));
        IdealPath { one_way_ns, fwd_delay_ns: shaping.min_delay_ns, rate_bps, buckets: shaping.buckets, mss: (mtu - 52) as u64, frame_extra: FRAME_EXTRA }
    }

    /// The ideal FCT of `size` bytes: the SYN and SYN-ACK each serialized and
    /// propagated (the handshake's round trip), then the data's frames back to back at
    /// the bottleneck, and the last one's propagation, with no host time, no queueing
    /// and no window limit. The bottleneck is the line rate, or a shaper's buckets
    /// full at the start: the last frame cannot leave a bucket before the frames' cost
    /// less its depth. `None` with neither (veth or tun with no shaper).
    pub fn ideal_ns(&self, size: u64) -> Option<u64> {
        if self.rate_bps.is_none() && self.buckets.is_empty() {
            return None;
        }
        let ser = |bytes: u64| self.rate_bps.map_or(0, |rate| (bytes * 8 * 1_000_000_000).div_ceil(rate));
        let syn = ser(SYN_FRAME_LEN + 24);
        let segs = size.div_ceil(self.mss).max(1);
        let line = ser(size + segs * self.frame_extra);
        let last = size - (segs - 1) * self.mss;
        let l2 = |payload: u64| (payload + FRAME_L2_EXTRA).min(u32::MAX as u64) as u32;
        let shaped = self.buckets.iter().map(|b| b.min_time_ns(segs - 1, l2(self.mss), l2(last))).max();
        let data = match shaped {
            Some(t) => line.max(t + ser(last + self.frame_extra)),
            None => line,
        };
        Some(2 * (syn + self.one_way_ns) + self.fwd_delay_ns + data + self.one_way_ns + self.fwd_delay_ns)
    }
}

/// The root qdiscs a web entry's data passes, in order: a flow this host sends leaves
/// by the device's root qdisc (and, with `[lan]`, first by the client's); a flow the
/// far host sends leaves by the peer's (NIC), then this host's `[ingress]` ifb and,
/// with `[lan]`, the router's LAN side.
fn data_qdiscs<'a>(scn: &'a Scenario, w: &WebFlows) -> Vec<&'a QdiscSpec> {
    let lan = scn.lan.as_ref().map(|l| &l.qdisc);
    if crate::wifi::far_sends(scn.device.driver(), w.tcp.direction) {
        let peer = scn.device.wire().map(|w| &w.peer.qdisc);
        [peer, scn.ingress.as_ref().map(|i| &i.qdisc), lan].into_iter().flatten().collect()
    } else {
        [lan, Some(&scn.qdisc)].into_iter().flatten().collect()
    }
}

/// [`Qdisc::shaping`] of the qdisc `spec` builds (mq's per-queue child), for a packet of
/// priority 0; nothing for `noqueue` or a tree the model cannot build.
fn qdisc_shaping(scn: &Scenario, spec: &QdiscSpec) -> Shaping {
    let spec = match (spec.kind.as_str(), spec.child.as_deref()) {
        ("mq", Some(c)) => c,
        _ => spec,
    };
    match darkbuf_model::qdisc::build(&spec.kind, spec.model_params(), &scn.device.dev_info(scn.machine.hz)) {
        Ok(q) => q.shaping(0),
        Err(_) => Shaping::default(),
    }
}

/// Why a slowdown is null: the path has neither a line rate nor a shaper, or every
/// flow's ideal is 0.
pub const NO_IDEAL: &str = "no ideal FCT to divide by: the path has no line rate and no shaper (veth or tun with no htb, tbf, cake bandwidth or netem rate on the data's way), or the flows fit in a shaper's burst on a path with no delay (an ideal of 0)";

/// The size bucket of a flow of `size` bytes.
pub fn bucket_of(edges: &[u64], size: u64) -> usize {
    edges.iter().position(|&e| size <= e).unwrap_or(edges.len())
}

/// The piecewise-linear CDF's inverse at `u` (ns-3's `EmpiricalRandomVariable` with
/// interpolation).
fn cdf_inverse(points: &[(f64, f64)], u: f64) -> f64 {
    let i = points.partition_point(|&(_, c)| c < u);
    match i {
        0 => points[0].0,
        i if i >= points.len() => points[points.len() - 1].0,
        i => {
            let ((x0, c0), (x1, c1)) = (points[i - 1], points[i]);
            if c1 <= c0 {
                x1
            } else {
                x0 + (x1 - x0) * (u - c0) / (c1 - c0)
            }
        }
    }
}

/// The standard normal's quantile (Acklam's rational approximation, relative error
/// below 1.2e-9): the lognormal's draw by inverse transform, one uniform per flow.
fn inverse_normal(p: f64) -> f64 {
    const A: [f64; 6] = [-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00];
    const B: [f64; 5] = [-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01, -1.328068155288572e+01];
    const C: [f64; 6] = [-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00];
    const D: [f64; 4] = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00];
    let tail = |q: f64| (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5]) / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0);
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// One `[[traffic]]` table of kind "web": its own keys here, the TCP ones through
/// `resolve_tcp()` (without the keys that make no sense per connection: `flows`,
/// `rate`, `receiver`, ...).
pub(crate) fn resolve_web(s: &Sec<'_>, cpus: u32, far_cpus: u32, driver: Driver, total_ns: u64, name: String, sysctl: &crate::sysctl::Sysctl) -> Result<WebFlows, Diagnostic> {
    s.check_keys(WEB_KEYS, Some("(a web entry's connections are one flow each: flows, rate and receiver belong to kind = \"tcp\")"))?;
    let arrivals_per_s = arrivals(s)?;
    let size = size_dist(s)?;
    let size_buckets = buckets(s)?;
    // The TCP keys, read as a tcp entry's.
    let tcp_table = Table { entries: s.t.entries.iter().filter(|e| !OWN_KEYS.contains(&e.key.as_str())).cloned().collect() };
    let ts = Sec { t: &tcp_table, path: s.path.clone(), at: s.at.clone(), ctx: s.ctx };
    let mut tcp = crate::tcp::resolve_tcp(&ts, cpus, far_cpus, driver, total_ns, name.clone(), sysctl)?;
    tcp.handshake = true;
    tcp.flows = 1;
    Ok(WebFlows { name, arrivals_per_s, size, size_buckets, tcp })
}

/// `arrivals = "50/s"` (or a number: per second).
fn arrivals(s: &Sec<'_>) -> Result<f64, Diagnostic> {
    let expected = format!("a mean arrival rate such as \"50/s\" (connections per second, > 0 and at most {MAX_ARRIVALS_PER_S})");
    let Some(e) = s.entry("arrivals") else {
        return Err(s.value_err("arrivals", format!("`{}` is required: how many connections open per second", s.kp("arrivals")), Some(expected)));
    };
    let v = match &e.node.v {
        V::Int(i) => Some(*i as f64),
        V::Float(f) => Some(*f),
        V::Str(t) => {
            let t = t.trim();
            let num = t.strip_suffix("/s").or_else(|| t.strip_suffix("/sec")).unwrap_or(t);
            num.trim().parse::<f64>().ok()
        }
        _ => return Err(s.type_err(e, "a rate string", Some(expected))),
    };
    match v {
        Some(v) if v > 0.0 && v <= MAX_ARRIVALS_PER_S => Ok(v),
        _ => Err(s.value_err("arrivals", format!("`{}` = {} is not a valid arrival rate", s.kp("arrivals"), e.node.v.show()), Some(expected))),
    }
}

/// `size_dist` with `size_mean`, `size_shape` or `size_cdf`.
fn size_dist(s: &Sec<'_>) -> Result<SizeDist, Diagnostic> {
    let dist = s.choice("size_dist", "pareto", SIZE_DISTS)?;
    if dist == "cdf" {
        for k in ["size_mean", "size_shape"] {
            if s.entry(k).is_some() {
                return Err(s.value_err(k, format!("`{}` does not apply to size_dist = \"cdf\": the file gives the sizes", s.kp(k)), Some("remove it, or choose size_dist = \"pareto\", \"exponential\" or \"lognormal\"".into())));
            }
        }
        let Some(e) = s.entry("size_cdf") else {
            return Err(s.value_err("size_cdf", format!("size_dist = \"cdf\" needs `{}`, the CDF file", s.kp("size_cdf")), Some("e.g. size_cdf = \"cdf/websearch.txt\" (shipped in scenarios/cdf/)".into())));
        };
        let given = s.string("size_cdf", "")?;
        let path = beside_scenario(s.ctx.file, &given);
        let text = read_cdf_file(&path).map_err(|why| s.ctx.diag(K::Value, &e.node.at, &s.kp("size_cdf"), format!("`{}` = \"{given}\": {why}", s.kp("size_cdf")), Some("expected a readable text file of `SIZE CUMULATIVE` lines (scenarios/cdf/ has two)".into())))?;
        let points = parse_cdf(&path.display().to_string(), &text)?;
        let mean_bytes = cdf_mean(&points);
        return Ok(SizeDist::Cdf { file: given, points, mean_bytes });
    }
    if s.entry("size_cdf").is_some() {
        return Err(s.value_err("size_cdf", format!("`{}` needs size_dist = \"cdf\"", s.kp("size_cdf")), Some("set size_dist = \"cdf\", or remove size_cdf".into())));
    }
    let mean = s.size_bytes("size_mean", 100 * 1024, 1, MAX_FLOW_BYTES)? as f64;
    Ok(match dist {
        "exponential" => {
            if s.entry("size_shape").is_some() {
                return Err(s.value_err("size_shape", format!("`{}` does not apply to the exponential distribution", s.kp("size_shape")), Some("remove it, or choose size_dist = \"pareto\" or \"lognormal\"".into())));
            }
            SizeDist::Exponential { mean_bytes: mean }
        }
        "lognormal" => SizeDist::Lognormal { mean_bytes: mean, sigma: s.float("size_shape", 1.0, 0.01, 10.0)? },
        _ => {
            let shape = s.float("size_shape", 1.5, 1.0, 100.0)?;
            if shape <= 1.0 {
                return Err(s.value_err("size_shape", format!("`{}` = 1: a Pareto distribution of shape 1 has no mean", s.kp("size_shape")), Some("expected a shape above 1, e.g. 1.2 (heavy tail) or 1.5".into())));
            }
            SizeDist::Pareto { mean_bytes: mean, shape }
        }
    })
}

/// `size_buckets`: ascending upper edges (sizes), default [`DEFAULT_BUCKETS`].
fn buckets(s: &Sec<'_>) -> Result<Vec<u64>, Diagnostic> {
    let Some(e) = s.entry("size_buckets") else { return Ok(DEFAULT_BUCKETS.to_vec()) };
    let expected = "an ascending array of at most 16 sizes, the buckets' upper edges, e.g. [\"10KB\", \"100KB\", \"1MB\"]";
    let V::Array(items) = &e.node.v else { return Err(s.type_err(e, "an array of sizes", Some(expected.into()))) };
    if items.is_empty() || items.len() > 16 {
        return Err(s.value_err("size_buckets", format!("`{}` has {} edges", s.kp("size_buckets"), items.len()), Some(expected.into())));
    }
    let mut out = Vec::new();
    for (i, n) in items.iter().enumerate() {
        let v = match &n.v {
            V::Int(i) if *i > 0 => Some(*i as u64),
            V::Str(t) => darkbuf_model::units::parse_size_bytes(t).ok().filter(|&b| b > 0),
            _ => None,
        };
        match v {
            Some(v) if out.last().map_or(true, |&l| v > l) => out.push(v),
            _ => return Err(s.ctx.diag(K::Value, &n.at, &format!("{}[{i}]", s.kp("size_buckets")), format!("`{}[{i}]` = {} is not a size above the edge before it", s.kp("size_buckets"), n.v.show()), Some(expected.into()))),
        }
    }
    Ok(out)
}

/// Where a relative `size_cdf` is read from: next to the scenario file if it is there
/// (as `machine.profile` is looked for), else from the working directory.
fn beside_scenario(scenario: &str, given: &str) -> std::path::PathBuf {
    let p = std::path::Path::new(given);
    let beside = std::path::Path::new(scenario).parent().filter(|d| p.is_relative() && !d.as_os_str().is_empty()).map(|d| d.join(p));
    beside.filter(|q| q.exists()).unwrap_or_else(|| p.to_path_buf())
}

/// Reads a CDF file of at most [`crate::limits::MAX_FILE_BYTES`].
fn read_cdf_file(path: &std::path::Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("there is no file {}", path.display()),
        _ => format!("{}: {e}", path.display()),
    })?;
    if !meta.is_file() || meta.len() > crate::limits::MAX_FILE_BYTES {
        return Err(format!("{} is not a regular file of at most {} bytes", path.display(), crate::limits::MAX_FILE_BYTES));
    }
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses a flow-size CDF: one point per line, `SIZE CUMULATIVE` (bytes, then a
/// probability in [0, 1], or a percentage in [0, 100] when any value is above 1);
/// `#` starts a comment, blank lines are skipped; both columns nondecreasing, and the
/// last point at 1 (100). A bad line is an error at its file:line:column.
pub fn parse_cdf(file: &str, text: &str) -> Result<Vec<(f64, f64)>, Diagnostic> {
    let mut raw: Vec<(f64, f64, usize)> = Vec::new();
    let mut offset = 0;
    let bad = |at: usize, len: usize, msg: String| {
        Diagnostic::at(K::Value, file, text, Some(at..at + len.max(1)), "size_cdf", msg, Some("expected lines of `SIZE CUMULATIVE`: a size in bytes and its cumulative probability (0..1, or a percentage 0..100), both nondecreasing; # starts a comment".into()))
    };
    for line in text.split_inclusive('\n') {
        let body = line.split('#').next().unwrap_or("");
        let mut fields = Vec::new();
        let mut i = 0;
        for tok in body.split(|c: char| c.is_whitespace() || c == ',') {
            if !tok.is_empty() {
                let at = body[i..].find(tok).map_or(i, |p| i + p);
                fields.push((tok, offset + at));
                i = at + tok.len();
            }
        }
        offset += line.len();
        if fields.is_empty() {
            continue;
        }
        if fields.len() != 2 {
            let (tok, at) = fields.get(2).copied().unwrap_or(fields[0]);
            return Err(bad(at, tok.len(), format!("a CDF line has two numbers, SIZE and CUMULATIVE; this one has {}", fields.len())));
        }
        let num = |(tok, at): (&str, usize)| tok.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0).ok_or_else(|| bad(at, tok.len(), format!("\"{tok}\" is not a non-negative number")));
        let (x, c) = (num(fields[0])?, num(fields[1])?);
        if let Some(&(px, pc, _)) = raw.last() {
            if x < px {
                return Err(bad(fields[0].1, fields[0].0.len(), format!("size {x} is below the previous line's {px}: the sizes must not decrease")));
            }
            if c < pc {
                return Err(bad(fields[1].1, fields[1].0.len(), format!("cumulative {c} is below the previous line's {pc}: a CDF does not decrease")));
            }
        }
        raw.push((x, c, fields[1].1));
    }
    let Some(&(_, last, at)) = raw.last() else {
        return Err(bad(0, 0, "the CDF file has no points".into()));
    };
    let scale = if last > 1.0 { 100.0 } else { 1.0 };
    if (last - scale).abs() > 1e-9 * scale || (scale == 100.0 && raw.iter().any(|p| p.1 > 100.0)) {
        return Err(bad(at, 1, format!("the last cumulative value is {last}: a CDF ends at 1 (or 100)")));
    }
    Ok(raw.into_iter().map(|(x, c, _)| (x, c / scale)).collect())
}

/// The mean of the piecewise-linear CDF: each segment's mass at its midpoint, and the
/// first point's own mass at its size.
fn cdf_mean(points: &[(f64, f64)]) -> f64 {
    let mut m = points[0].0 * points[0].1;
    for w in points.windows(2) {
        m += (w[1].1 - w[0].1) * (w[0].0 + w[1].0) / 2.0;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cdf_parses_with_percentages_and_comments() {
        let p = parse_cdf("x", "# web\n0 0\n1000 50 # half\n\n3000 100\n").unwrap();
        assert_eq!(p, vec![(0.0, 0.0), (1000.0, 0.5), (3000.0, 1.0)]);
        assert_eq!(cdf_mean(&p), 0.5 * 500.0 + 0.5 * 2000.0);
        let d = SizeDist::Cdf { file: "x".into(), points: p, mean_bytes: 0.0 };
        assert_eq!(d.sample(0.25), 500);
        assert_eq!(d.sample(0.75), 2000);
    }

    #[test]
    fn a_bad_cdf_line_is_an_error_at_its_line_and_column() {
        let e = parse_cdf("w.txt", "0 0\n1000 0.5\n  2000 abc\n").unwrap_err();
        assert_eq!((e.line, e.column), (Some(3), Some(8)), "{e:?}");
        assert!(e.message.contains("\"abc\" is not a non-negative number"), "{}", e.message);
        let e = parse_cdf("w.txt", "0 0\n1000 0.5\n900 0.7\n").unwrap_err();
        assert_eq!((e.line, e.column), (Some(3), Some(1)));
        let e = parse_cdf("w.txt", "0 0\n1000 0.5\n").unwrap_err();
        assert!(e.message.contains("ends at 1"), "{}", e.message);
        let e = parse_cdf("w.txt", "0 0 7\n").unwrap_err();
        assert_eq!((e.line, e.column), (Some(1), Some(5)));
    }

    /// Seed 1, entry 0, 50/s from 1 s to 3 s, Pareto sizes of mean 100 KB: 102
    /// connections, the first three these (ns, bytes).
    const ARRIVALS_SEED1_0_50: usize = 102;
    const ARRIVALS_SEED1_FIRST3: [(u64, u64); 3] = [(1_011_972_689, 37_603), (1_014_063_892, 74_697), (1_099_531_427, 117_162)];

    fn web(arrivals: f64, start_ns: u64, stop_ns: Option<u64>) -> WebFlows {
        let text = "[[traffic]]\nkind = \"web\"\narrivals = 1\n";
        let scn = crate::load_str("t.toml", text, &[]).unwrap();
        let Traffic::Web(w) = &scn.traffic[0] else { panic!() };
        let mut w = w.clone();
        w.arrivals_per_s = arrivals;
        (w.tcp.start_ns, w.tcp.stop_ns) = (start_ns, stop_ns);
        w
    }

    /// The draw is the seed's alone: the same seed, entry and window give the same
    /// connections; the arrivals ascend from `start` and stop before `stop`; another
    /// entry index or seed draws others. The first three of seed 1 (exact values, the
    /// simulator's schedule: changing them changes every web result).
    #[test]
    fn arrivals_are_the_seeds_and_stop_at_stop() {
        let w = web(50.0, 1_000_000_000, Some(3_000_000_000));
        let a: Vec<(u64, u64)> = Arrivals::new(&w, 0, 1).until(10_000_000_000).collect();
        assert_eq!(a, Arrivals::new(&w, 0, 1).until(10_000_000_000).collect::<Vec<_>>());
        assert!(a.windows(2).all(|p| p[0].0 < p[1].0));
        assert!(a[0].0 > 1_000_000_000 && a.last().unwrap().0 < 3_000_000_000);
        assert_eq!(a.len(), ARRIVALS_SEED1_0_50);
        assert_eq!(&a[..3], &ARRIVALS_SEED1_FIRST3);
        assert_ne!(Arrivals::new(&w, 1, 1).until(10_000_000_000).next(), a.first().copied());
        assert_ne!(Arrivals::new(&w, 0, 2).until(10_000_000_000).next(), a.first().copied());
        // The run's end cuts them too.
        let cut: Vec<(u64, u64)> = Arrivals::new(&w, 0, 1).until(2_000_000_000).collect();
        assert_eq!(&a[..cut.len()], &cut[..]);
        assert!(a[cut.len()].0 >= 2_000_000_000);
    }

    /// The ideal FCT of one initial window (14,480 bytes) at 100 Mbit, 5 ms each way:
    /// 2 x (7,840 + 5,000,000) + 10 x 123,040 + 5,000,000 (docs/web.md).
    #[test]
    fn ideal_fct_of_one_initial_window() {
        let p = IdealPath { one_way_ns: 5_000_000, fwd_delay_ns: 0, rate_bps: Some(100_000_000), buckets: Vec::new(), mss: 1448, frame_extra: FRAME_EXTRA };
        assert_eq!(p.ideal_ns(14_480), Some(16_246_080));
        assert_eq!(IdealPath { rate_bps: None, ..p.clone() }.ideal_ns(14_480), None);
    }

    /// The first web entry of `toml` (a veth pair unless it says otherwise) and its path.
    fn web_path(toml: &str) -> IdealPath {
        let scn = crate::load_str("w.toml", toml, &[]).unwrap();
        let Traffic::Web(w) = &scn.traffic[0] else { panic!("not a web entry") };
        IdealPath::of(&scn, w, scn.device.mtu())
    }

    const WEB: &str = "[[traffic]]\nkind = \"web\"\narrivals = \"10/s\"\nsize_dist = \"exponential\"\nsize_mean = \"10KB\"\n";

    /// On a veth pair the bottleneck is htb's default class: 20 Mbit/s (2,500,000
    /// bytes/s, 605,600 ns per 1514-byte frame) with tc's default cburst of 1600 bytes
    /// (640,000 ns). Ten full frames: the last leaves on credit once nine have cost
    /// 5,450,400 ns less the depth. No line rate: the handshake and last frame are free.
    #[test]
    fn the_ideal_fct_behind_htb_on_veth_is_its_ceil_bucket() {
        let htb = "[device]\ndriver = \"veth\"\n[qdisc]\nkind = \"htb\"\ndefault = \"10\"\n[[qdisc.class]]\nclassid = \"1:10\"\nrate = \"20mbit\"\n";
        let p = web_path(&format!("{htb}{WEB}"));
        assert_eq!((p.rate_bps, p.buckets.len(), p.fwd_delay_ns), (None, 1, 0));
        assert_eq!(p.buckets[0].depth_ns, 640_000);
        assert_eq!(p.ideal_ns(14_480), Some(9 * 605_600 - 640_000));
        // A flow the bucket holds (one 1000-byte segment) is ideal at once.
        assert_eq!(p.ideal_ns(1_000), Some(0));
        // The ceil, not the rate, bounds a class that may borrow: 1:10 at 10 Mbit under
        // 1:1 at 20 Mbit gives two buckets, the tighter the parent's 20 Mbit ceil...
        let nested = "[device]\ndriver = \"veth\"\n[qdisc]\nkind = \"htb\"\ndefault = \"10\"\n[[qdisc.class]]\nclassid = \"1:1\"\nrate = \"20mbit\"\n[[qdisc.class]]\nclassid = \"1:10\"\nparent = \"1:1\"\nrate = \"10mbit\"\nceil = \"20mbit\"\n";
        let p = web_path(&format!("{nested}{WEB}"));
        assert_eq!(p.buckets.len(), 2);
        assert_eq!(p.ideal_ns(14_480), Some(9 * 605_600 - 640_000));
        // ... and with `default 0` the flow goes to the direct queue, unshaped.
        let direct = htb.replace("default = \"10\"\n", "");
        assert_eq!(web_path(&format!("{direct}{WEB}")).ideal_ns(14_480), None);
        // No shaper on veth: no ideal.
        assert_eq!(web_path(&format!("[device]\ndriver = \"veth\"\n{WEB}")).ideal_ns(14_480), None);
    }

    /// tbf pays each frame before it leaves: ten frames cost 6,056,000 ns, less a
    /// 10,000-byte burst (4,000,000 ns). netem's least delay (10 ms less 2 ms of uniform
    /// jitter) delays the SYN and the data, and its rate charges every frame.
    #[test]
    fn the_ideal_fct_behind_tbf_and_netem() {
        let tbf = "[device]\ndriver = \"veth\"\n[qdisc]\nkind = \"tbf\"\nrate = \"20mbit\"\nburst = 10000\nlatency = \"50ms\"\n";
        assert_eq!(web_path(&format!("{tbf}{WEB}")).ideal_ns(14_480), Some(10 * 605_600 - 4_000_000));
        let netem = "[device]\ndriver = \"veth\"\n[qdisc]\nkind = \"netem\"\ndelay = \"10ms\"\njitter = \"2ms\"\nrate = \"20mbit\"\n";
        let p = web_path(&format!("{netem}{WEB}"));
        assert_eq!(p.fwd_delay_ns, 8_000_000);
        assert_eq!(p.ideal_ns(14_480), Some(2 * 8_000_000 + 10 * 605_600));
    }

    #[test]
    fn the_parametric_distributions_have_their_mean() {
        for d in [
            SizeDist::Exponential { mean_bytes: 100_000.0 },
            SizeDist::Lognormal { mean_bytes: 100_000.0, sigma: 1.0 },
            SizeDist::Pareto { mean_bytes: 100_000.0, shape: 3.0 },
        ] {
            let n = 200_000;
            let mean = (1..n).map(|i| d.sample(i as f64 / n as f64) as f64).sum::<f64>() / n as f64;
            assert!((mean / 100_000.0 - 1.0).abs() < 0.02, "{d:?}: {mean}");
        }
        assert_eq!(bucket_of(DEFAULT_BUCKETS, 10_000), 0);
        assert_eq!(bucket_of(DEFAULT_BUCKETS, 10_001), 1);
        assert_eq!(bucket_of(DEFAULT_BUCKETS, 20_000_000), 4);
    }
}
