//! SVG plots (plotters' SVG backend): the probes' RTT CDF per configuration, the time
//! series per configuration, where the probes' time went, and a sweep's metric against
//! the swept parameter with its 95% confidence band.
//!
//! Every function returns the SVG document as a `String` (no files, no fonts: text is
//! laid out with plotters' naive estimate and drawn by whatever renders the SVG), or
//! `None` when there is nothing to draw. The same input always gives the same bytes.
//! Non-finite values are skipped, never drawn. The legend sits in a strip right of
//! the chart, so it never hides data.

use crate::cdf::{ecdf, finite_values, lost_points, pinger_series, points, probe_rtts_ms, probes_lost, SAMPLED_SERIES};
use crate::format::{fmt_fixed, fmt_human, CellFormat};
use crate::results::{Results, SweepResults, TimeSeries};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Width and height of every plot, pixels (the SVG's viewBox; it scales in a page).
pub const PLOT_SIZE: (u32, u32) = (880, 440);

/// One plot: a file stem (`ping_cdf` -> `ping_cdf.svg`), a title, the SVG document.
#[derive(Clone, Debug, PartialEq)]
pub struct Plot {
    pub name: String,
    pub title: String,
    pub svg: String,
}

/// Tableau 10: distinguishable, colour-blind-friendlier than plotters' primaries.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xba, 0xb0, 0xac),
];

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

const FONT: &str = "sans-serif";

/// Axis labels are cut to this many characters (with `…`).
const MAX_LABEL: usize = 48;
/// Legend labels are cut to this many characters.
const MAX_LEGEND: usize = 30;
/// Labels per axis. Every mesh asks plotters for this many ([`mesh_style`]) and
/// [`ticks`] picks its decimals for the same positions: when the two counts differed
/// (plotters' default is 11), a 5 s axis was labelled at 0.5 s steps with no decimal,
/// `0 0 1 2 2 2 3 4 4 4 5`.
const TICKS: usize = 10;
/// A line with at most this many points also gets a marker on each point, so sparse
/// series (a probe every second, or probes separated by losses) are visible.
const MARK_POINTS_UP_TO: usize = 300;

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

fn short(s: &str) -> String {
    cut(s, MAX_LABEL)
}

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// How a legend entry is drawn.
#[derive(Clone, Copy)]
enum Key {
    Line(RGBColor),
    Box(RGBAColor),
    /// A line that is not drawn (off the chart's scale): two dashes of its colour.
    Dashes(RGBColor),
    /// Text only.
    None,
}

/// Renders a titled plot of [`PLOT_SIZE`]: `draw` gets the chart area; `legend` is
/// drawn in a strip to its right (no strip without entries).
fn render(
    title: &str,
    legend: &[(String, Key)],
    draw: impl FnOnce(&Area) -> Result<(), String>,
) -> Result<String, String> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, PLOT_SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let body = root.titled(&cut(title, 90), (FONT, 18)).map_err(err)?;
        let labels: Vec<String> = legend.iter().map(|(l, _)| cut(l, MAX_LEGEND)).collect();
        let width = labels
            .iter()
            .map(|l| l.chars().count())
            .max()
            .map_or(0, |c| (c as u32 * 7 + 48).clamp(110, 270));
        let (chart, side) = body.split_horizontally(PLOT_SIZE.0 - width);
        draw(&chart)?;
        for (i, (label, (_, key))) in labels.iter().zip(legend).enumerate() {
            let y = 24 + 22 * i as i32;
            match *key {
                Key::Line(c) => {
                    side.draw(&PathElement::new(vec![(6, y), (30, y)], c.stroke_width(3)))
                }
                Key::Box(c) => side.draw(&Rectangle::new([(8, y - 7), (28, y + 7)], c.filled())),
                Key::Dashes(c) => side
                    .draw(&PathElement::new(vec![(6, y), (14, y)], c.stroke_width(3)))
                    .and_then(|_| side.draw(&PathElement::new(vec![(22, y), (30, y)], c.stroke_width(3)))),
                Key::None => Ok(()),
            }
            .map_err(err)?;
            let style =
                TextStyle::from((FONT, 13).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
            side.draw(&Text::new(label.clone(), (38, y), style))
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(buf)
}

/// The largest magnitude drawn: beyond it plotters' axis arithmetic overflows. No
/// measured quantity comes near it; a value beyond is treated as non-finite.
const MAX_MAGNITUDE: f64 = 1e15;

/// A value that can be drawn: finite and within [`MAX_MAGNITUDE`].
fn drawable(v: f64) -> bool {
    v.is_finite() && v.abs() <= MAX_MAGNITUDE
}

/// `[lo, hi]` widened so it is a non-empty, finite range with 5% room at the ends;
/// with `from_zero`, a non-negative range starts at 0.
fn pad(lo: f64, hi: f64, from_zero: bool) -> (f64, f64) {
    let (lo, hi) = if drawable(lo) && drawable(hi) && lo <= hi {
        (lo, hi)
    } else {
        (0.0, 1.0)
    };
    let zero = from_zero && lo >= 0.0;
    let lo = if zero { 0.0 } else { lo };
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        let d = (hi.abs() * 0.1).max(1e-3);
        return (if zero { 0.0 } else { lo - d }, hi + d);
    }
    let m = (hi - lo) * 0.05;
    (if zero { 0.0 } else { lo - m }, hi + m)
}

/// The decimals `v` needs (0..=6) to print exactly at that precision.
fn decimals_of(v: f64) -> usize {
    (0..=6)
        .find(|&d| {
            let p = 10f64.powi(d as i32);
            ((v * p).round() / p - v).abs() <= 1e-9 * v.abs().max(1.0)
        })
        .unwrap_or(6)
}

/// A tick formatter for a linear axis over `[lo, hi]`: the same decimals on every tick
/// (as many as plotters' tick positions need), counts of 10^4 and more with K/M.
fn ticks(lo: f64, hi: f64) -> impl Fn(&f64) -> String {
    let kp = RangedCoordf64::from(lo..hi).key_points(TICKS);
    let big = lo.abs().max(hi.abs()) >= 1e4;
    let decimals = kp.iter().map(|&v| decimals_of(v)).max().unwrap_or(0);
    move |v: &f64| {
        if big {
            CellFormat::Count.format(*v)
        } else {
            fmt_fixed(*v, decimals)
        }
    }
}

/// Ticks of a log axis over `[lo, hi]` (lo > 0): 1, 2 and 5 times each power of ten
/// inside the range; only the powers of ten when that would be more than [`TICKS`].
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (k0, k1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let all: Vec<f64> = (k0..=k1.min(k0 + 40))
        .flat_map(|k| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(k)))
        .filter(|v| *v >= lo && *v <= hi)
        .collect();
    if all.len() <= TICKS {
        all
    } else {
        (k0..=k1.min(k0 + 40))
            .map(|k| 10f64.powi(k))
            .filter(|v| *v >= lo && *v <= hi)
            .collect()
    }
}

/// A faint mesh: the bold lines light grey, the fine ones barely there.
fn mesh_style<X, Y>(m: &mut plotters::chart::MeshStyle<'_, '_, X, Y, SVGBackend<'_>>)
where
    X: Ranged,
    Y: Ranged,
{
    m.x_labels(TICKS)
        .y_labels(TICKS)
        .bold_line_style(BLACK.mix(0.12))
        .light_line_style(BLACK.mix(0.03))
        .axis_desc_style((FONT, 14))
        .label_style((FONT, 12));
}

/// One CDF line: its label and its samples.
pub type CdfSeries = (String, Vec<f64>);

/// Empirical CDFs of `series` on one chart (x: value, y: fraction of samples <= x),
/// drawn as steps. The x axis is logarithmic when every sample is positive and they
/// span more than a factor of 30 (sub-0.1 ms and 40 ms configurations on one plot),
/// linear otherwise. `None` when no series has a sample.
pub fn cdf_svg(title: &str, x_desc: &str, series: &[CdfSeries]) -> Result<Option<String>, String> {
    let cdfs: Vec<(String, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(l, v)| {
            (
                l.clone(),
                ecdf(
                    &v.iter()
                        .copied()
                        .filter(|x| drawable(*x))
                        .collect::<Vec<_>>(),
                ),
            )
        })
        .filter(|(_, c)| !c.is_empty())
        .collect();
    if cdfs.is_empty() {
        return Ok(None);
    }
    let lo = cdfs
        .iter()
        .map(|(_, c)| c[0].0)
        .fold(f64::INFINITY, f64::min);
    let hi = cdfs
        .iter()
        .map(|(_, c)| c[c.len() - 1].0)
        .fold(f64::NEG_INFINITY, f64::max);
    let log = lo > 0.0 && hi / lo > 30.0;
    let legend: Vec<(String, Key)> = cdfs
        .iter()
        .enumerate()
        .map(|(i, (l, _))| (l.clone(), Key::Line(color(i))))
        .collect();
    // Steps: hold F until the next sample, starting from F = 0 at the first one.
    let steps = |c: &[(f64, f64)]| -> Vec<(f64, f64)> {
        let mut s = Vec::with_capacity(2 * c.len());
        let mut prev = 0.0;
        for &(x, f) in c {
            s.push((x, prev));
            s.push((x, f));
            prev = f;
        }
        s
    };
    let svg = render(title, &legend, |area| {
        let mut b = ChartBuilder::on(area);
        b.margin(12).x_label_area_size(44).y_label_area_size(56);
        macro_rules! body {
            ($chart:expr, $xfmt:expr) => {{
                let mut chart = $chart;
                let mut m = chart.configure_mesh();
                mesh_style(&mut m);
                m.x_desc(x_desc)
                    .y_desc("fraction of probes")
                    .x_label_formatter($xfmt)
                    .y_label_formatter(&|v| format!("{v:.1}"))
                    .draw()
                    .map_err(err)?;
                for (i, (_, c)) in cdfs.iter().enumerate() {
                    chart
                        .draw_series(LineSeries::new(steps(c), color(i).stroke_width(2)))
                        .map_err(err)?;
                }
            }};
        }
        if log {
            let (l, h) = (lo / 1.15, hi * 1.15);
            let x = (l..h).log_scale().with_key_points(log_ticks(l, h));
            body!(
                b.build_cartesian_2d(x, 0f64..1.02f64).map_err(err)?,
                &|v: &f64| fmt_human(*v)
            );
        } else {
            let (l, h) = pad(lo, hi, false);
            let f = ticks(l, h);
            body!(b.build_cartesian_2d(l..h, 0f64..1.02f64).map_err(err)?, &f);
        }
        Ok(())
    })?;
    Ok(Some(svg))
}

/// One time series line: its label and its `(t_ms, value)` points.
pub type TsSeries<'a> = (String, &'a TimeSeries);

/// Time series on one chart, one line per configuration; x in seconds from the end of
/// warmup, y in the series' unit. A `null` value breaks the line. `None` when no
/// series has a point.
pub fn timeseries_svg(
    title: &str,
    y_desc: &str,
    series: &[TsSeries],
) -> Result<Option<String>, String> {
    // Each series as runs of consecutive non-null points.
    type Segments = Vec<Vec<(f64, f64)>>;
    let lines: Vec<(String, Segments)> = series
        .iter()
        .map(|(label, ts)| {
            let mut segs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
            for (t, v) in points(ts) {
                let v = v.filter(|v| drawable(*v) && drawable(t));
                match v {
                    Some(v) => segs.last_mut().expect("non-empty").push((t / 1e3, v)),
                    None if segs.last().is_some_and(|s| !s.is_empty()) => segs.push(Vec::new()),
                    None => {}
                }
            }
            segs.retain(|s| !s.is_empty());
            (label.clone(), segs)
        })
        .filter(|(_, s)| !s.is_empty())
        .collect();
    if lines.is_empty() {
        return Ok(None);
    }
    // Each line keeps the colour of its place in `series`, drawn or not.
    let (lines, off) = off_scale(lines);
    let all = || lines.iter().flat_map(|(_, _, s)| s.iter().flatten());
    let (t0, t1) = all().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
        (a.min(p.0), b.max(p.0))
    });
    let (v0, v1) = all().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
        (a.min(p.1), b.max(p.1))
    });
    let (t0, t1) = pad(t0, t1, true);
    let (v0, v1) = pad(v0, v1, true);
    let mut legend: Vec<(String, Key)> = lines.iter().map(|(i, l, _)| (l.clone(), Key::Line(color(*i)))).collect();
    for (i, l, min) in &off {
        legend.push((l.clone(), Key::Dashes(color(*i))));
        let v = if min.fract() == 0.0 { format!("{min:.0}") } else { fmt_human(*min) };
        legend.push((format!("  = {v}, off scale"), Key::None));
    }
    let svg = render(title, &legend, |area| {
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(t0..t1, v0..v1)
            .map_err(err)?;
        let (fx, fy) = (ticks(t0, t1), ticks(v0, v1));
        let mut m = chart.configure_mesh();
        mesh_style(&mut m);
        m.x_desc("time after warmup (s)")
            .y_desc(y_desc)
            .x_label_formatter(&fx)
            .y_label_formatter(&fy)
            .draw()
            .map_err(err)?;
        for &(i, _, ref segs) in &lines {
            let points: usize = segs.iter().map(Vec::len).sum();
            for seg in segs {
                chart
                    .draw_series(LineSeries::new(
                        seg.iter().copied(),
                        color(i).stroke_width(2),
                    ))
                    .map_err(err)?;
                // A one-point segment (a probe between two losses) draws no line at
                // all; a sparse series is hard to read as a line alone: mark the points.
                if points <= MARK_POINTS_UP_TO || seg.len() == 1 {
                    chart
                        .draw_series(seg.iter().map(|&p| Circle::new(p, 3, color(i).filled())))
                        .map_err(err)?;
                }
            }
        }
        Ok(())
    })?;
    Ok(Some(svg))
}

/// A line's drawn segments.
type Segs = Vec<Vec<(f64, f64)>>;

/// Constant lines that would flatten all the others: each line that holds one value more
/// than [`OFF_SCALE`] times the largest value of every line kept (a no-BQL
/// configuration's `limit_min = 1073741824` next to limits of a few packets, issue 48).
/// A line that varies is always drawn: it is a measurement. Returns the
/// lines to draw, each with its index in `lines`, and the others with their index and
/// value (the legend names them, not drawn). Nothing is left out when the
/// kept lines are all 0 or nothing would be kept.
fn off_scale(lines: Vec<(String, Segs)>) -> (Vec<(usize, String, Segs)>, Vec<(usize, String, f64)>) {
    let range = |segs: &Segs| {
        segs.iter().flatten().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p.1), b.max(p.1)))
    };
    let ranges: Vec<(f64, f64)> = lines.iter().map(|(_, s)| range(s)).collect();
    // The largest k such that the k lines of the largest minima are all above
    // OFF_SCALE x the largest maximum of the rest.
    let mut by_min: Vec<usize> = (0..lines.len()).collect();
    by_min.sort_by(|&a, &b| ranges[b].0.total_cmp(&ranges[a].0));
    let mut k = 0;
    for cut in 1..lines.len() {
        let rest_max = by_min[cut..].iter().map(|&i| ranges[i].1).fold(f64::NEG_INFINITY, f64::max);
        let off_min = ranges[by_min[cut - 1]].0;
        let constant = by_min[..cut].iter().all(|&i| ranges[i].0 == ranges[i].1);
        if constant && rest_max > 0.0 && off_min > OFF_SCALE * rest_max {
            k = cut;
        }
    }
    let off: Vec<usize> = by_min[..k].to_vec();
    let mut drawn = Vec::new();
    let mut left_out = Vec::new();
    for (i, (label, segs)) in lines.into_iter().enumerate() {
        if off.contains(&i) {
            left_out.push((i, label, ranges[i].0));
        } else {
            drawn.push((i, label, segs));
        }
    }
    (drawn, left_out)
}

/// How many times the largest value of the drawn lines a line's smallest value must be
/// for [`off_scale`] to leave it out of the chart.
const OFF_SCALE: f64 = 1000.0;

/// The parts of a probe's round trip, in the order they are stacked.
pub const PROBE_PARTS: [(&str, &str); 4] = [
    ("ping.wait_qdisc_ms", "qdisc"),
    ("ping.wait_ring_ms", "driver ring"),
    ("ping.wait_consumer_ms", "consumer"),
    ("ping.rtt_avg_ms", "rest of the round trip"),
];

/// One bar of [`probe_time_svg`]: a label and the mean milliseconds waited in the qdisc,
/// the driver ring, the consumer, and the rest of the round trip.
pub type ProbeBar = (String, [f64; 4]);

/// Where the probes' time went: one horizontal stacked bar per configuration (first
/// at the top), segments qdisc / driver ring / consumer / rest, each bar's total (the
/// mean RTT) written at its end. `None` without bars.
pub fn probe_time_svg(title: &str, bars: &[ProbeBar]) -> Result<Option<String>, String> {
    let bars: Vec<(String, [f64; 4])> = bars
        .iter()
        .map(|(l, p)| {
            (
                short(l),
                p.map(|v| if drawable(v) { v.max(0.0) } else { 0.0 }),
            )
        })
        .collect();
    if bars.is_empty() {
        return Ok(None);
    }
    let n = bars.len();
    let total_max = bars
        .iter()
        .map(|(_, p)| p.iter().sum::<f64>())
        .fold(0.0, f64::max);
    // Room right of the longest bar for its total.
    let (_, x1) = pad(0.0, total_max * 1.18, true);
    let label_px = bars
        .iter()
        .map(|(l, _)| l.chars().count())
        .max()
        .unwrap_or(4) as u32
        * 7
        + 16;
    let legend: Vec<(String, Key)> = PROBE_PARTS
        .iter()
        .enumerate()
        .map(|(i, (_, name))| (name.to_string(), Key::Box(color(i).to_rgba())))
        .collect();
    let svg = render(title, &legend, |area| {
        // Row r (from the bottom) spans y in [r, r + 1]; its bar fills the middle. A
        // plain numeric axis: plotters' segmented axis over a single row (`0..0`)
        // mapped a row's two edges upside down and drew every rectangle with a negative
        // height (issue 48).
        // At least three rows' height, so one or two bars are not drawn a page thick.
        let rows = n as f64;
        let pad = (3.0 - rows).max(0.0) / 2.0;
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(label_px.clamp(60, 330))
            .build_cartesian_2d(0f64..x1, -pad..rows + pad)
            .map_err(err)?;
        let fx = ticks(0.0, x1);
        let mut m = chart.configure_mesh();
        mesh_style(&mut m);
        m.disable_y_mesh()
            .y_labels(0)
            .x_desc("mean time per probe (ms)")
            .x_label_formatter(&fx)
            .draw()
            .map_err(err)?;
        // Each bar's label left of the axis, at the bar's centre (row n-1-b from the
        // bottom, so the first bar is on top).
        let label_style = TextStyle::from((FONT, 12).into_font()).pos(Pos::new(HPos::Right, VPos::Center));
        let labels = bars.iter().enumerate().map(|(b, (l, _))| {
            EmptyElement::at((0.0, (n - 1 - b) as f64 + 0.5)) + Text::new(l.clone(), (-8, 0), label_style.clone())
        });
        chart.draw_series(labels).map_err(err)?;
        const BAR: f64 = 0.36; // half the bar's thickness, in rows
        for part in 0..PROBE_PARTS.len() {
            let col = color(part);
            let rects: Vec<Rectangle<(f64, f64)>> = bars
                .iter()
                .enumerate()
                .map(|(b, (_, p))| {
                    let x0: f64 = p[..part].iter().sum();
                    let y = (n - 1 - b) as f64 + 0.5;
                    Rectangle::new([(x0, y + BAR), (x0 + p[part], y - BAR)], col.filled())
                })
                .collect();
            chart.draw_series(rects).map_err(err)?;
        }
        let style = TextStyle::from((FONT, 13).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
        let totals = bars.iter().enumerate().map(|(b, (_, p))| {
            let total: f64 = p.iter().sum();
            Text::new(format!(" {} ms", fmt_human(total)), (total, (n - 1 - b) as f64 + 0.5), style.clone())
        });
        chart.draw_series(totals).map_err(err)?;
        Ok(())
    })?;
    Ok(Some(svg))
}

/// One point of [`sweep_metric_svg`]: its x (a number, or the point's label on a
/// categorical axis) and the metric's mean and 95% CI half-width.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepPlotPoint {
    pub label: String,
    pub x: Option<f64>,
    pub mean: f64,
    pub ci95: f64,
}

/// A metric against the swept parameter: the means joined by a line, with the 95%
/// confidence band (mean ± ci95) shaded. The x axis is numeric when every point has an
/// `x`, else one category per point in order. Points without a value are left out.
pub fn sweep_metric_svg(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    pts: &[SweepPlotPoint],
) -> Result<Option<String>, String> {
    let pts: Vec<&SweepPlotPoint> = pts
        .iter()
        .filter(|p| {
            drawable(p.mean)
                && drawable(p.ci95)
                && drawable(p.mean + p.ci95)
                && drawable(p.mean - p.ci95)
        })
        .collect();
    if pts.is_empty() {
        return Ok(None);
    }
    let (y0, y1) = pts
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.mean - p.ci95), b.max(p.mean + p.ci95))
        });
    let (y0, y1) = pad(y0, y1, true);
    let line = color(0);
    let band = line.mix(0.22);
    let legend = vec![
        ("mean".to_string(), Key::Line(line)),
        ("95% CI".to_string(), Key::Box(band)),
    ];
    let numeric = pts.iter().all(|p| p.x.is_some_and(drawable));
    let svg = render(title, &legend, |area| {
        let mut b = ChartBuilder::on(area);
        b.margin(12).x_label_area_size(52).y_label_area_size(64);
        let fy = ticks(y0, y1);
        macro_rules! body {
            ($chart:expr, $xs:expr, $fmt:expr) => {{
                let mut chart = $chart;
                let xs = $xs;
                let mut m = chart.configure_mesh();
                mesh_style(&mut m);
                m.x_desc(x_desc)
                    .y_desc(y_desc)
                    .x_labels(if numeric { TICKS } else { pts.len() })
                    .x_label_formatter($fmt)
                    .y_label_formatter(&fy)
                    .draw()
                    .map_err(err)?;
                let mut poly: Vec<_> = xs
                    .iter()
                    .zip(&pts)
                    .map(|(x, p)| (x.clone(), p.mean + p.ci95))
                    .collect();
                poly.extend(
                    xs.iter()
                        .zip(&pts)
                        .rev()
                        .map(|(x, p)| (x.clone(), p.mean - p.ci95)),
                );
                chart
                    .draw_series(std::iter::once(Polygon::new(poly, band.filled())))
                    .map_err(err)?;
                let means: Vec<_> = xs
                    .iter()
                    .zip(&pts)
                    .map(|(x, p)| (x.clone(), p.mean))
                    .collect();
                chart
                    .draw_series(LineSeries::new(means.clone(), line.stroke_width(2)))
                    .map_err(err)?;
                chart
                    .draw_series(means.into_iter().map(|c| Circle::new(c, 4, line.filled())))
                    .map_err(err)?;
            }};
        }
        if numeric {
            let xs: Vec<f64> = pts.iter().map(|p| p.x.unwrap_or(0.0)).collect();
            let (x0, x1) = xs
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                    (a.min(x), b.max(x))
                });
            let (x0, x1) = pad(x0, x1, false);
            let fx = ticks(x0, x1);
            body!(b.build_cartesian_2d(x0..x1, y0..y1).map_err(err)?, xs, &fx);
        } else {
            // Categories 0..=n-1 (plotters' integer ranges include their end).
            let n = pts.len();
            let labels: Vec<String> = pts.iter().map(|p| cut(&p.label, 24)).collect();
            let xs: Vec<SegmentValue<usize>> = (0..n).map(SegmentValue::CenterOf).collect();
            body!(
                b.build_cartesian_2d((0..n - 1).into_segmented(), y0..y1)
                    .map_err(err)?,
                xs,
                &|v: &SegmentValue<usize>| match v {
                    SegmentValue::CenterOf(i) if *i < n => labels[*i].clone(),
                    _ => String::new(),
                }
            );
        }
        Ok(())
    })?;
    Ok(Some(svg))
}

fn push(
    out: &mut Vec<Plot>,
    name: &str,
    title: String,
    svg: Result<Option<String>, String>,
) -> Result<(), String> {
    if let Some(svg) = svg? {
        out.push(Plot {
            name: name.to_string(),
            title,
            svg,
        });
    }
    Ok(())
}

fn scenario_name(r: &Results) -> String {
    r.scenario
        .get("name")
        .and_then(|v| v.as_str())
        .unwrap_or("darkbuf")
        .to_string()
}

/// `(name, unit)` of every time series to plot: the sampled ones in their order, then
/// any other the runs carry (the probes' `ping.rtt_ms` among them), by name.
fn series_names<'a>(
    runs: impl Iterator<Item = &'a crate::results::RunRecord>,
) -> Vec<(String, String)> {
    let mut all: std::collections::BTreeMap<&str, &str> = std::collections::BTreeMap::new();
    for run in runs {
        for (k, ts) in &run.timeseries {
            all.entry(k.as_str()).or_insert(ts.unit.as_str());
        }
    }
    let mut out: Vec<(String, String)> = SAMPLED_SERIES
        .iter()
        .filter_map(|s| all.get(s).map(|u| (s.to_string(), u.to_string())))
        .collect();
    out.extend(
        all.iter()
            .filter(|(k, _)| !SAMPLED_SERIES.contains(k))
            .map(|(k, u)| (k.to_string(), u.to_string())),
    );
    out
}

/// A file stem for a time series: `ts_bql_limit` for `bql.limit`.
pub fn timeseries_plot_name(series: &str) -> String {
    let s: String = series
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("ts_{s}")
}

fn y_desc(name: &str, unit: &str) -> String {
    if unit.is_empty() {
        name.to_string()
    } else {
        format!("{name} ({unit})")
    }
}

/// A bar from a metric lookup: `None` when none of the three waits was measured; the
/// rest of the round trip is the mean RTT minus the three waits (never negative).
fn probe_bar(label: String, m: impl Fn(&str) -> Option<f64>) -> Option<ProbeBar> {
    let (q, ring, c) = (
        m(PROBE_PARTS[0].0),
        m(PROBE_PARTS[1].0),
        m(PROBE_PARTS[2].0),
    );
    if q.is_none() && ring.is_none() && c.is_none() {
        return None;
    }
    let (q, ring, c) = (q.unwrap_or(0.0), ring.unwrap_or(0.0), c.unwrap_or(0.0));
    let rest = m(PROBE_PARTS[3].0).map_or(0.0, |avg| (avg - q - ring - c).max(0.0));
    Some((label, [q, ring, c, rest]))
}

/// The bar of a configuration: the means over its runs.
fn summary_bar(label: String, r: &Results) -> Option<ProbeBar> {
    probe_bar(label, |k| r.metric(k).map(|s| s.mean))
}

/// The bar of one run.
fn run_bar(label: String, run: &crate::results::RunRecord) -> Option<ProbeBar> {
    probe_bar(label, |k| {
        run.metrics
            .get(k)
            .copied()
            .flatten()
            .filter(|v| v.is_finite())
    })
}

fn cdf_label(label: String, lost: usize) -> String {
    if lost > 0 {
        format!("{label} ({lost} lost)")
    } else {
        label
    }
}

/// The plots of one `darkbuf run`: the probes' RTT CDF (one line per run), where the
/// probes' time went (one bar per run, and the mean over the runs), and each time
/// series (one line per run).
pub fn run_plots(r: &Results) -> Result<Vec<Plot>, String> {
    let name = scenario_name(r);
    let multi = r.runs.len() > 1;
    let run_label = |seed: u64| {
        if multi {
            format!("seed {seed}")
        } else {
            name.clone()
        }
    };
    let mut out = Vec::new();

    // One CDF per run, or with several pingers one per pinger of each run.
    let cdfs: Vec<CdfSeries> = r
        .runs
        .iter()
        .flat_map(|run| {
            let pingers = pinger_series(run);
            if pingers.is_empty() {
                return vec![(cdf_label(run_label(run.seed), probes_lost(run)), probe_rtts_ms(run))];
            }
            pingers
                .into_iter()
                .map(|(n, ts)| (cdf_label(format!("{} ping.{n}", run_label(run.seed)), lost_points(ts)), finite_values(ts)))
                .collect()
        })
        .collect();
    push(
        &mut out,
        "ping_cdf",
        format!("{name}: ping RTT CDF"),
        cdf_svg(&format!("{name}: ping RTT CDF"), "RTT (ms)", &cdfs),
    )?;

    let mut bars: Vec<ProbeBar> = Vec::new();
    if multi {
        bars.extend(
            r.runs
                .iter()
                .filter_map(|run| run_bar(run_label(run.seed), run)),
        );
        bars.extend(summary_bar(format!("mean of {} runs", r.runs.len()), r));
    } else {
        bars.extend(summary_bar(name.clone(), r));
    }
    let title = format!("{name}: where the probes' time went");
    push(
        &mut out,
        "probe_time",
        title.clone(),
        probe_time_svg(&title, &bars),
    )?;

    // A series outside any family: one line per run. An indexed family
    // (`tcp.flow.N.cwnd_pkts`, `irtt.N.rtt_ms`): one plot with a line per index (the
    // first run's, with several runs), not one plot per index.
    let mut done: Vec<String> = Vec::new();
    for (series, unit) in series_names(r.runs.iter()) {
        if let Some(m) = crate::families::member(&series) {
            let pattern = crate::families::pattern(&m.family, &m.column);
            if !done.contains(&pattern) {
                out.extend(family_plot(r, &name, &m.family, &m.column, &unit)?);
                done.push(pattern);
            }
            continue;
        }
        let lines: Vec<TsSeries> = r
            .runs
            .iter()
            .filter_map(|run| {
                run.timeseries
                    .get(&series)
                    .map(|ts| (run_label(run.seed), ts))
            })
            .collect();
        let title = format!("{name}: {series}");
        push(
            &mut out,
            &timeseries_plot_name(&series),
            title.clone(),
            timeseries_svg(&title, &y_desc(&series, &unit), &lines),
        )?;
    }
    out.extend(crate::flent_plots::test_plots(r)?);
    Ok(out)
}

/// At most this many lines in a family's plot (its legend holds about that many).
const MAX_FAMILY_LINES: usize = 16;

/// The plot of one indexed family's time series (`tcp.flow.N.cwnd_pkts`): the first
/// run's series, a line per index labelled as the summary labels it (a TCP flow by its
/// traffic entry), at most [`MAX_FAMILY_LINES`] of them.
fn family_plot(r: &Results, name: &str, family: &str, column: &str, unit: &str) -> Result<Option<Plot>, String> {
    let Some(run) = r.runs.first() else { return Ok(None) };
    let mut members: Vec<(u64, &TimeSeries)> = run
        .timeseries
        .iter()
        .filter_map(|(k, ts)| {
            let m = crate::families::member(k)?;
            (m.family == family && m.column == column).then_some((m.index, ts))
        })
        .collect();
    members.sort_by_key(|(i, _)| *i);
    let total = members.len();
    members.truncate(MAX_FAMILY_LINES);
    let lines: Vec<TsSeries> = members.iter().map(|(i, ts)| (crate::families::row_label(family, *i, &r.scenario), *ts)).collect();
    let pattern = crate::families::pattern(family, column);
    let mut title = format!("{name}: {pattern}");
    if r.runs.len() > 1 {
        title.push_str(&format!(" (seed {})", run.seed));
    }
    if total > lines.len() {
        title.push_str(&format!(" (first {} of {total})", lines.len()));
    }
    let mut v = Vec::new();
    push(&mut v, &timeseries_plot_name(&pattern), title.clone(), timeseries_svg(&title, &y_desc(&pattern, unit), &lines))?;
    Ok(v.pop())
}

/// Whether a plot is one of a page's main plots, shown; the page folds the others:
/// the probes' CDF and where their time went, a sweep's metrics against its
/// parameter, flent's plots of a test preset, and, without those (`with_test`), the
/// four sampled queue series.
pub fn is_main_plot(name: &str, with_test: bool) -> bool {
    matches!(name, "ping_cdf" | "probe_time")
        || name.starts_with("sweep_")
        || name.starts_with("flent_")
        || (!with_test && SAMPLED_SERIES.iter().any(|s| timeseries_plot_name(s) == name))
}

/// The swept parameter of a sweep: the one `KEY` whose value differs between points,
/// when every point sets it to a number. Returns the key and each point's value.
pub fn swept_parameter(s: &SweepResults) -> Option<(String, Vec<f64>)> {
    let parse = |set: &[String]| -> Vec<(String, String)> {
        set.iter()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect()
    };
    let sets: Vec<Vec<(String, String)>> = s.points.iter().map(|p| parse(&p.set)).collect();
    let mut keys: Vec<&String> = sets.iter().flatten().map(|(k, _)| k).collect();
    keys.sort();
    keys.dedup();
    let varying: Vec<&String> = keys
        .into_iter()
        .filter(|k| {
            let vals: Vec<Option<&String>> = sets
                .iter()
                .map(|set| set.iter().rev().find(|(kk, _)| kk == *k).map(|(_, v)| v))
                .collect();
            vals.windows(2).any(|w| w[0] != w[1])
        })
        .collect();
    let [key] = varying.as_slice() else {
        return None;
    };
    let xs: Option<Vec<f64>> = sets
        .iter()
        .map(|set| {
            set.iter()
                .rev()
                .find(|(k, _)| k == *key)
                .and_then(|(_, v)| v.parse::<f64>().ok())
                .filter(|v| v.is_finite())
        })
        .collect();
    xs.map(|xs| ((*key).clone(), xs))
}

/// The metrics a sweep plots against its parameter when none are chosen: the seed
/// report's trade-off, probe latency against throughput.
pub const DEFAULT_SWEEP_METRICS: [&str; 2] = ["ping.rtt_avg_ms", "consumer.pps"];

/// A file stem for a sweep metric plot: `sweep_ping_rtt_avg_ms`.
pub fn sweep_plot_name(metric: &str) -> String {
    let s: String = metric
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("sweep_{s}")
}

fn point_label(s: &SweepResults, i: usize) -> String {
    match s.points.get(i) {
        Some(p) if !p.label.is_empty() => p.label.clone(),
        _ => format!("point {}", i + 1),
    }
}

/// The plots of a sweep: the probes' RTT CDF per point (its runs pooled), where the
/// probes' time went per point, each time series per point (its first run), and each
/// of `metrics` against the swept parameter with its 95% CI band.
pub fn sweep_plots(s: &SweepResults, metrics: &[&str]) -> Result<Vec<Plot>, String> {
    let name = if s.name.is_empty() {
        "sweep".to_string()
    } else {
        s.name.clone()
    };
    let mut out = Vec::new();

    let cdfs: Vec<CdfSeries> = s
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let samples: Vec<f64> = p.results.runs.iter().flat_map(probe_rtts_ms).collect();
            let lost = p.results.runs.iter().map(probes_lost).sum();
            (cdf_label(point_label(s, i), lost), samples)
        })
        .collect();
    let title = format!("{name}: ping RTT CDF per configuration");
    push(
        &mut out,
        "ping_cdf",
        title.clone(),
        cdf_svg(&title, "RTT (ms)", &cdfs),
    )?;

    let bars: Vec<ProbeBar> = s
        .points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| summary_bar(point_label(s, i), &p.results))
        .collect();
    let title = format!("{name}: where the probes' time went");
    push(
        &mut out,
        "probe_time",
        title.clone(),
        probe_time_svg(&title, &bars),
    )?;

    for (series, unit) in series_names(s.points.iter().flat_map(|p| p.results.runs.first())) {
        let lines: Vec<TsSeries> = s
            .points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let run = p.results.runs.first()?;
                run.timeseries
                    .get(&series)
                    .map(|ts| (point_label(s, i), ts))
            })
            .collect();
        let title = format!("{name}: {series} (first run of each point)");
        push(
            &mut out,
            &timeseries_plot_name(&series),
            title.clone(),
            timeseries_svg(&title, &y_desc(&series, &unit), &lines),
        )?;
    }

    let param = swept_parameter(s);
    for metric in metrics {
        let pts: Vec<SweepPlotPoint> = s
            .points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let sm = p.results.metric(metric)?;
                Some(SweepPlotPoint {
                    label: point_label(s, i),
                    x: param.as_ref().and_then(|(_, xs)| xs.get(i).copied()),
                    mean: sm.mean,
                    ci95: sm.ci95,
                })
            })
            .collect();
        let x_desc = param.as_ref().map_or("configuration", |(k, _)| k.as_str());
        let title = format!("{name}: {metric} (mean, 95% CI)");
        push(
            &mut out,
            &sweep_plot_name(metric),
            title.clone(),
            sweep_metric_svg(&title, x_desc, metric, &pts),
        )?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text of every `<text>` element of an SVG, in document order.
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text").skip(1).filter_map(|t| Some(t.split_once('>')?.1.split_once("</text>")?.0.to_string())).collect()
    }

    #[test]
    fn tick_labels_are_distinct_and_increasing() {
        // Issue 18: a 5 s axis read `0 0 1 2 2 2 3 4 4 4 5`.
        let ts = TimeSeries {
            unit: "packets".into(),
            t_ms: (0..=50).map(|i| i as f64 * 100.0).collect(),
            values: (0..=50).map(|i| Some((i % 7) as f64 * 0.37)).collect(),
        };
        let svg = timeseries_svg("t", "packets", &[("a".into(), &ts)]).unwrap().unwrap();
        let numbers: Vec<f64> = texts(&svg).iter().filter_map(|t| t.trim().parse::<f64>().ok()).collect();
        assert!(numbers.len() >= 8, "{numbers:?}");
        // Both axes' labels are numbers; within each axis they strictly increase, so
        // there is no repeated label: split the list where it stops increasing.
        let mut axes: Vec<Vec<f64>> = vec![vec![]];
        for v in numbers {
            if axes.last().unwrap().last().is_some_and(|&l| v <= l) {
                axes.push(vec![]);
            }
            axes.last_mut().unwrap().push(v);
        }
        assert_eq!(axes.len(), 2, "two axes of increasing labels: {axes:?}");
        let x = axes.iter().find(|a| a.last() == Some(&5.0)).expect("the time axis ends at 5 s");
        assert!(x.windows(2).all(|w| w[1] > w[0]), "{x:?}");
    }

    #[test]
    fn sparse_series_are_drawn_with_markers() {
        // Issue 18: probes separated by losses are one-point segments, which a line
        // without markers does not draw at all.
        let ts = TimeSeries {
            unit: "ms".into(),
            t_ms: (0..20).map(|i| i as f64 * 250.0).collect(),
            values: (0..20).map(|i| (i % 2 == 0).then_some(40.0 + i as f64)).collect(),
        };
        let svg = timeseries_svg("ping", "RTT (ms)", &[("a".into(), &ts)]).unwrap().unwrap();
        assert_eq!(svg.matches("<circle").count(), 10, "one marker per answered probe");
    }

    #[test]
    fn log_axis_ticks() {
        assert_eq!(log_ticks(0.03, 4.5), vec![0.05, 0.1, 0.2, 0.5, 1.0, 2.0]);
        assert_eq!(log_ticks(0.03, 45.0).len(), 9);
        assert_eq!(
            log_ticks(0.001, 1000.0),
            vec![0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]
        );
    }

    #[test]
    fn tick_decimals_follow_the_step() {
        let f = ticks(0.45, 1.45);
        assert_eq!(
            (f(&0.5), f(&1.0), f(&1.1)),
            ("0.5".into(), "1.0".into(), "1.1".into())
        );
        let f = ticks(0.0, 16.8);
        assert_eq!(f(&4.0), "4");
        let f = ticks(0.0, 20_000.0);
        assert_eq!(f(&15_000.0), "15.0K");
    }

    #[test]
    fn extreme_values_neither_panic_nor_hang() {
        let cases: [&[f64]; 6] = [
            &[1e300, -1e300],
            &[f64::MAX, f64::MIN_POSITIVE],
            &[1e-300, 2e-300],
            &[0.0, 1e15],
            &[-5.0, 5.0, f64::NAN, f64::NEG_INFINITY],
            &[1e16],
        ];
        for v in cases {
            let _ = cdf_svg("t", "x", &[("a".into(), v.to_vec())]).unwrap();
            let ts = TimeSeries {
                unit: "u".into(),
                t_ms: v.iter().map(|x| x.abs()).collect(),
                values: v.iter().map(|x| Some(*x)).collect(),
            };
            let _ = timeseries_svg("t", "y", &[("a".into(), &ts)]).unwrap();
            let bar = [v[0], v[v.len() - 1], 1.0, -1.0];
            assert!(probe_time_svg("t", &[("a".into(), bar)]).unwrap().is_some());
            let pts: Vec<SweepPlotPoint> = v
                .iter()
                .map(|&x| SweepPlotPoint {
                    label: "p".into(),
                    x: Some(x),
                    mean: x,
                    ci95: x.abs(),
                })
                .collect();
            let _ = sweep_metric_svg("t", "x", "y", &pts).unwrap();
        }
    }

    /// Issue 48: one bar drew its rectangles with negative heights. For 1..=5 bars,
    /// every rectangle has a positive size, and each bar has its four parts.
    #[test]
    fn probe_bars_have_positive_sizes() {
        for n in 1..=5 {
            let bars: Vec<ProbeBar> = (0..n).map(|i| (format!("config {i}"), [0.3, 0.2 + i as f64, 0.1, 0.05])).collect();
            let svg = probe_time_svg("t", &bars).unwrap().unwrap();
            let rects: Vec<(f64, f64)> = svg
                .split("<rect")
                .skip(1)
                .map(|t| {
                    let a = |k: &str| t.split_once(&format!(" {k}=\"")).unwrap().1.split_once('"').unwrap().0.parse::<f64>().unwrap();
                    (a("width"), a("height"))
                })
                .collect();
            // The background, 4 parts per bar, 4 legend keys.
            assert_eq!(rects.len(), 1 + 4 * n + 4, "{n} bars");
            assert!(rects.iter().all(|&(w, h)| w > 0.0 && h > 0.0), "{n} bars: {rects:?}");
            for i in 0..n {
                assert!(texts(&svg).iter().any(|t| t.trim() == format!("config {i}")), "{n} bars: label {i}");
            }
        }
    }

    /// Issue 48: a no-BQL point's constant limit of 1073741824 flattened every other
    /// point's bql.limit line to 0. Such a constant line is left out and named in the
    /// legend; the axis follows the others. A line that varies is always drawn.
    #[test]
    fn a_constant_line_off_the_scale_is_named_not_drawn() {
        let t: Vec<f64> = (0..5).map(|i| i as f64 * 100.0).collect();
        let line = |v: &dyn Fn(usize) -> f64| TimeSeries { unit: "units".into(), t_ms: t.clone(), values: (0..5).map(|i| Some(v(i))).collect() };
        let (nobql, limit8, batched) = (line(&|_| 1073741824.0), line(&|i| 8.0 + i as f64), line(&|_| 128.0));
        let svg = timeseries_svg("t", "bql.limit", &[("No BQL".into(), &nobql), ("limit=8".into(), &limit8), ("Batched".into(), &batched)])
            .unwrap()
            .unwrap();
        let text = texts(&svg);
        assert!(text.iter().any(|t| t.trim() == "= 1073741824, off scale"), "{text:?}");
        assert!(text.iter().any(|t| t.trim() == "No BQL"));
        // The y axis ends near 128 (its labels are plain numbers below 1000), and only
        // the two drawn lines have markers.
        let numbers: Vec<f64> = text.iter().filter_map(|t| t.trim().parse::<f64>().ok()).collect();
        assert!(numbers.iter().all(|v| *v < 1000.0), "{numbers:?}");
        assert_eq!(svg.matches("<circle").count(), 10);
        // A varying series is a measurement: drawn however large.
        let big = line(&|i| 1e9 + i as f64);
        let svg = timeseries_svg("t", "y", &[("big".into(), &big), ("limit=8".into(), &limit8)]).unwrap().unwrap();
        assert_eq!(svg.matches("<circle").count(), 10);
        assert!(!svg.contains("off scale"));
    }

    #[test]
    fn padding() {
        assert_eq!(pad(0.0, 0.0, true), (0.0, 1e-3));
        assert_eq!(pad(5.0, 5.0, false), (4.5, 5.5));
        assert_eq!(pad(f64::NAN, 1.0, false), (-0.05, 1.05));
        assert_eq!(pad(2.0, 4.0, true), (0.0, 4.2));
    }

    #[test]
    fn empty_inputs_draw_nothing() {
        assert_eq!(cdf_svg("t", "x", &[]).unwrap(), None);
        assert_eq!(
            cdf_svg("t", "x", &[("a".into(), vec![f64::NAN])]).unwrap(),
            None
        );
        assert_eq!(probe_time_svg("t", &[]).unwrap(), None);
        assert_eq!(sweep_metric_svg("t", "x", "y", &[]).unwrap(), None);
        let ts = TimeSeries {
            unit: "pkts".into(),
            t_ms: vec![0.0],
            values: vec![None],
        };
        assert_eq!(
            timeseries_svg("t", "y", &[("a".into(), &ts)]).unwrap(),
            None
        );
    }

    #[test]
    fn degenerate_inputs_still_draw() {
        // One sample, one constant series, a zero bar, a single sweep point.
        let svg = cdf_svg("t", "x", &[("a".into(), vec![0.0])])
            .unwrap()
            .unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("</svg>"));
        let ts = TimeSeries {
            unit: "pkts".into(),
            t_ms: vec![0.0, 100.0],
            values: vec![Some(3.0), Some(3.0)],
        };
        assert!(timeseries_svg("t", "y", &[("a".into(), &ts)])
            .unwrap()
            .is_some());
        assert!(probe_time_svg("t", &[("a".into(), [0.0; 4])])
            .unwrap()
            .is_some());
        let p = SweepPlotPoint {
            label: "a".into(),
            x: Some(1.0),
            mean: 2.0,
            ci95: 0.0,
        };
        assert!(sweep_metric_svg("t", "x", "y", &[p]).unwrap().is_some());
    }

    #[test]
    fn log_axis_for_wide_cdfs() {
        let svg = cdf_svg(
            "t",
            "RTT (ms)",
            &[
                ("fast".into(), vec![0.05, 0.08]),
                ("slow".into(), vec![30.0, 40.0]),
            ],
        )
        .unwrap()
        .unwrap();
        assert!(svg.contains("fast") && svg.contains("slow") && svg.contains("RTT (ms)"));
    }
}
