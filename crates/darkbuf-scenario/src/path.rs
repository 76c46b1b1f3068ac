//! `[path]`: what lies beyond a NIC's wire, each way, as a netem on the path would
//! hold it (`tc qdisc add ... netem delay D [J [C]] [distribution ...] loss ... [ecn]
//! reorder P [C] [gap G] rate R limit L`). Each key takes what tc takes after its
//! keyword, and tc's own refusals (a reorder without a delay, a distribution without a
//! jitter, ecn without a loss model, a gap without a reorder) are errors here too.

use crate::diag::Diagnostic;
use crate::nic::RATE_MAX_BPS;
use crate::section::Sec;
use crate::schema::*;
use crate::tree::V;
use darkbuf_model::netem::Distribution;
use darkbuf_model::units::{self, Rate};

pub const PATH_KEYS: &[&str] = &["delay", "jitter", "distribution", "loss", "ecn", "reorder", "gap", "rate", "limit"];

/// netem caps the jitter at `INT_MAX` ns (`tabledist()` takes an s32 sigma).
const JITTER_MAX_NS: u64 = i32::MAX as u64;

/// The `[path]` section.
pub(crate) fn resolve_path(p: &Sec<'_>) -> Result<PathSpec, Diagnostic> {
    p.check_keys(PATH_KEYS, None)?;
    let delay_ns = p.duration("delay", 0, false)?;
    if delay_ns > 10_000_000_000 {
        return Err(p.value_err("delay", "`path.delay` is over 10 s".into(), Some("expected a one-way delay of at most 10s".into())));
    }
    let (jitter_ns, delay_corr) = path_jitter(p)?;
    let distribution = path_distribution(p, delay_ns, jitter_ns)?;
    let loss = path_loss(p)?;
    let ecn = p.boolean("ecn", false)?;
    if ecn && loss.is_none() {
        // tc: "ecn requested without loss model".
        return Err(p.value_err("ecn", format!("`{}` marks what the loss model would drop, and the path has no loss", p.kp("ecn")), Some("add path.loss (e.g. loss = \"1%\"), or remove path.ecn".into())));
    }
    let reorder = path_reorder(p, delay_ns)?;
    let rate_bps = path_rate(p)?;
    // netem's default limit, 1000 packets, with a rate; the delay alone stays an ideal
    // delay line unless a limit is given.
    let limit = match p.entry("limit") {
        Some(_) => Some(p.u32("limit", 1000, 1, 1 << 24)?),
        None => rate_bps.map(|_| 1000),
    };
    Ok(PathSpec { delay_ns, loss, rate_bps, limit, jitter_ns, delay_corr, distribution, reorder, ecn })
}

/// The share of frames whose drawn delay is negative: `tabledist()` draws `delay ±
/// jitter` (uniform), or from the distribution's table scaled by the jitter, and
/// netem_enqueue() sets `time_to_send = now + delay`, so a negative draw is sent at
/// once, as if the path had no delay. 0 when the jitter stays inside the delay.
pub fn negative_delay_share(p: &PathSpec) -> f64 {
    if p.jitter_ns == 0 {
        return 0.0;
    }
    let (mu, sigma) = (p.delay_ns as f64, p.jitter_ns as f64);
    match p.distribution.and_then(Distribution::table) {
        // (rnd % 2σ) + μ - σ < 0 for rnd < σ - μ.
        None => ((sigma - mu) / (2.0 * sigma)).clamp(0.0, 1.0),
        Some(t) => {
            let scale = darkbuf_model::netem::NETEM_DIST_SCALE as f64;
            t.iter().filter(|&&x| mu + sigma * x as f64 / scale < 0.0).count() as f64 / t.len() as f64
        }
    }
}

/// What a reader of a scenario with `[path]` must know before running it: a jitter
/// that reaches below zero (the share of frames netem then sends with no delay, and
/// what that does to the minimum RTT).
pub fn path_warnings(scn: &Scenario) -> Vec<String> {
    let Some(p) = scn.device.wire().map(|w| &w.path) else { return Vec::new() };
    let share = negative_delay_share(p);
    if share == 0.0 {
        return Vec::new();
    }
    let ms = |ns: u64| format!("{}ms", ns as f64 / 1e6);
    let shape = match p.distribution {
        None | Some(Distribution::Uniform) => format!("uniformly in delay ± jitter ({} to {} ms here)", (p.delay_ns as f64 - p.jitter_ns as f64) / 1e6, (p.delay_ns + p.jitter_ns) as f64 / 1e6),
        Some(d) => format!("from the {} table scaled by the jitter", d.name()),
    };
    vec![format!(
        "path.jitter ({}) reaches below zero from path.delay ({}): netem draws each frame's delay {shape} and sends a frame whose draw is negative at once, with no delay; {:.1}% of the frames each way, so the minimum RTT is the hosts' own, not twice the delay. Keep the jitter within the delay (a normal table: within a quarter of it) for a delay that stays a delay",
        ms(p.jitter_ns),
        ms(p.delay_ns),
        share * 100.0
    )]
}

// tc's `parse_percent()`, shared with the netem qdisc.
use darkbuf_model::netem::parse_percent as percent;

/// The words of a string key (`None` without the key).
fn words<'a>(p: &Sec<'a>, key: &str, help: &str) -> Result<Option<Vec<String>>, Diagnostic> {
    let Some(e) = p.entry(key) else { return Ok(None) };
    match &e.node.v {
        V::Str(s) => Ok(Some(s.split_whitespace().map(str::to_string).collect())),
        _ => Err(p.type_err(e, "a string", Some(help.into()))),
    }
}

/// `path.jitter`: netem's jitter and its correlation, as tc takes them after the
/// delay: `"1ms"` or `"1ms 25%"`.
fn path_jitter(p: &Sec<'_>) -> Result<(u64, u32), Diagnostic> {
    const HELP: &str = "expected netem's jitter [correlation] as tc takes them after the delay, e.g. jitter = \"1ms\" or \"1ms 25%\" (a duration up to 2.147s, then 0..=100%)";
    let Some(w) = words(p, "jitter", HELP)? else { return Ok((0, 0)) };
    let bad = |why: String| p.value_err("jitter", format!("`{}`: {why}", p.kp("jitter")), Some(HELP.into()));
    let (first, rest) = w.split_first().ok_or_else(|| bad("empty".into()))?;
    let ns = units::parse_duration_ns(first).map_err(|u| bad(u.message))?;
    if ns < 0 || ns > JITTER_MAX_NS as i128 {
        return Err(bad(format!("\"{first}\" is out of range (netem caps the jitter at INT_MAX ns)")));
    }
    let corr = match rest {
        [] => 0,
        [c] => set_percent(percent(c).map_err(bad)?),
        _ => return Err(bad("at most a jitter and a correlation".into())),
    };
    Ok((ns as u64, corr))
}

/// `path.distribution`: the jitter's shape, one of tc's generated tables. tc refuses a
/// distribution without a delay and a jitter.
fn path_distribution(p: &Sec<'_>, delay_ns: u64, jitter_ns: u64) -> Result<Option<Distribution>, Diagnostic> {
    const HELP: &str = "expected one of \"uniform\" (the default), \"normal\", \"pareto\", \"paretonormal\"";
    let Some(e) = p.entry("distribution") else { return Ok(None) };
    let V::Str(s) = &e.node.v else { return Err(p.type_err(e, "a distribution name", Some(HELP.into()))) };
    let Some(d) = Distribution::from_name(s) else {
        let why = if s == "experimental" { " (a measured table, not one iproute2 computes: not modelled)" } else { "" };
        return Err(p.value_err("distribution", format!("`{}` = \"{s}\" is not a distribution tc generates{why}", p.kp("distribution")), Some(HELP.into())));
    };
    if delay_ns == 0 || jitter_ns == 0 {
        return Err(p.value_err("distribution", format!("`{}`: distribution specified but no latency and jitter values (tc)", p.kp("distribution")), Some("set path.delay and path.jitter, or remove path.distribution".into())));
    }
    Ok((d != Distribution::Uniform).then_some(d))
}

/// `path.reorder` (`"P"` or `"P C"`) and `path.gap`: netem's reordering as tc sends
/// it. A reorder needs a delay ("reordering not possible without specifying some
/// delay"), a gap needs a reorder, and the gap is 1 when not given.
fn path_reorder(p: &Sec<'_>, delay_ns: u64) -> Result<Option<PathReorder>, Diagnostic> {
    const HELP: &str = "expected netem's reorder probability [correlation], e.g. reorder = \"25%\" or \"25% 50%\", and optionally gap = N";
    let w = words(p, "reorder", HELP)?;
    let gap = match p.entry("gap") {
        Some(_) => Some(p.u32("gap", 1, 1, u32::MAX)?),
        None => None,
    };
    // tc: "gap specified without reorder probability".
    let no_reorder = |help: &str| Err(p.value_err("gap", format!("`{}`: gap specified without reorder probability (tc)", p.kp("gap")), Some(help.into())));
    let Some(w) = w else {
        return if gap.is_some() { no_reorder("add path.reorder, or remove path.gap") } else { Ok(None) };
    };
    let bad = |why: String| p.value_err("reorder", format!("`{}`: {why}", p.kp("reorder")), Some(HELP.into()));
    let (probability, correlation) = match w.as_slice() {
        [] => return Err(bad("empty".into())),
        [pr] => (set_percent(percent(pr).map_err(bad)?), 0),
        [pr, c] => (set_percent(percent(pr).map_err(bad)?), set_percent(percent(c).map_err(bad)?)),
        _ => return Err(bad("at most a probability and a correlation".into())),
    };
    if probability == 0 {
        // tc sends no reordering for a zero probability (and then refuses a gap).
        return if gap.is_some() { no_reorder("give path.reorder a probability above 0, or remove path.gap") } else { Ok(None) };
    }
    if delay_ns == 0 {
        return Err(bad("reordering not possible without specifying some delay (tc): a reordered frame goes ahead of the delayed ones".into()));
    }
    Ok(Some(PathReorder { probability, correlation, gap: gap.unwrap_or(1) }))
}

/// `path.rate`: netem's `rate`, a bit rate as tc writes it, 8 kbit/s to 400 Gbit/s
/// (netem holds bytes/s: tc's rate divided by 8).
fn path_rate(p: &Sec<'_>) -> Result<Option<u64>, Diagnostic> {
    let Some(e) = p.entry("rate") else { return Ok(None) };
    let key = p.kp("rate");
    let expected = format!("the path's bottleneck rate, 8kbit to 400Gbit, e.g. \"20Mbit\" ({})", units::RATE_EXPECTED);
    let V::Str(r) = &e.node.v else { return Err(p.type_err(e, "a rate string", Some(expected))) };
    match units::parse_rate(r) {
        Ok(Rate::Bps(b)) if (8_000..=RATE_MAX_BPS).contains(&b) => Ok(Some(b)),
        Ok(Rate::Bps(b)) => Err(p.value_err("rate", format!("`{key}` = \"{r}\" ({b} bit/s) is out of range"), Some(expected))),
        Ok(_) => Err(p.value_err("rate", format!("`{key}` = \"{r}\" is not a bit rate"), Some(expected))),
        Err(u) => Err(p.value_err("rate", format!("`{key}`: {}", u.message), Some(expected))),
    }
}

/// `path.loss`: netem's loss models as tc takes them after `loss`:
/// - a percentage, as a number (`0.5`) or a string (`"0.5%"`), or `"random P"`: random
///   loss, with netem's correlation after it (`get_crandom()`);
/// - `"state p13 [p31 [p32 [p23 [p14]]]]"`: the 4-state GI model, with tc's defaults
///   p31 = 1 - p13, p32 = 0, p23 = 1, p14 = 0;
/// - `"gemodel p [r [1-h [1-k]]]"`: Gilbert-Elliott, with tc's defaults r = 1 - p,
///   h = 0 (every packet in the bad state lost), 1-k = 0.
///
/// Each percentage as tc's `parse_percent()` reads it (a number of percent, `%`
/// optional, 0..=100), held as `set_percent()` holds it.
fn path_loss(p: &Sec<'_>) -> Result<Option<PathLoss>, Diagnostic> {
    let Some(e) = p.entry("loss") else {
        return Ok(None);
    };
    const HELP: &str = "expected netem's loss as tc takes it: a percentage (loss = \"1%\" or 0.5, 0..=100), \
                        \"random P [C]\", \"state p13 [p31 [p32 [p23 [p14]]]]\" or \"gemodel p [r [1-h [1-k]]]\"";
    let bad = |why: String| p.value_err("loss", format!("`{}` = {}: {why}", p.kp("loss"), e.node.v.show()), Some(HELP.into()));
    let words: Vec<String> = match &e.node.v {
        V::Float(f) => vec![f.to_string()],
        V::Int(i) => vec![i.to_string()],
        V::Str(s) => s.split_whitespace().map(str::to_string).collect(),
        _ => return Err(p.type_err(e, "a loss percentage or model", Some(HELP.into()))),
    };
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    Ok(darkbuf_model::netem::parse_loss(&words).map_err(bad)?.map(PathLoss::from))
}
