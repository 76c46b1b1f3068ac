//! The HTML report: one self-contained page per results file.
//!
//! Everything is inline: CSS in a `<style>`, plots as inline `<svg>` (without the
//! `xmlns` attribute, which HTML does not need), no script, no font, no image file. A
//! Content-Security-Policy of `default-src 'none'` makes the browser refuse any request
//! the page might still try, so it renders the same offline, from a mail attachment or
//! a CI artifact. The page holds the scenario (the resolved scenario JSON), the
//! environment, the summary tables (mean ± 95% CI), the plots, the log2 histograms in
//! bpftrace's format, and any invariant findings.
//!
//! Pure functions: the same results and plots always give the same bytes.

use crate::format::{format_for_metric, CellFormat};
use crate::hist::{hist_text, merged_histograms};
use crate::plot::Plot;
use crate::results::{Environment, Provenance, Results, RunRecord, SweepResults};
use crate::table::{default_rows, metric_names, note, sweep_metric_names};
use std::fmt::Write;

/// Where a page goes as it is made: a file (through a `BufWriter`) or a `Vec`. The
/// page of a 10,000-point sweep is over 100 MB, which as one `String` was the largest
/// part of the sweep's peak memory (issue 48); written as it is made it is never held.
/// The first write error is kept and returned by [`Page::finish`], and later writes
/// are skipped.
pub struct Page<'a> {
    w: &'a mut dyn std::io::Write,
    err: Option<std::io::Error>,
}

impl<'a> Page<'a> {
    pub fn new(w: &'a mut dyn std::io::Write) -> Page<'a> {
        Page { w, err: None }
    }

    fn push_str(&mut self, s: &str) {
        if self.err.is_none() {
            if let Err(e) = self.w.write_all(s.as_bytes()) {
                self.err = Some(e);
            }
        }
    }

    /// The first write error, if any.
    pub fn finish(self) -> std::io::Result<()> {
        self.err.map_or(Ok(()), Err)
    }
}

impl Write for Page<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.push_str(s);
        Ok(())
    }
}

/// A page made in memory.
fn page_string(make: impl FnOnce(&mut Page<'_>)) -> String {
    let mut v = Vec::new();
    let mut page = Page::new(&mut v);
    make(&mut page);
    page.finish().expect("writing to a Vec cannot fail");
    String::from_utf8(v).expect("the page is made of str")
}

/// Escape text for HTML element content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const CSS: &str = "\
:root{color-scheme:light}
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;max-width:1100px;padding:1.5rem;color:#1d1d1f;background:#fff;line-height:1.4}
h1{font-size:1.6rem;margin:0 0 .2rem}
h2{font-size:1.25rem;margin:2rem 0 .6rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
h3{font-size:1.05rem;margin:1.2rem 0 .4rem}
.sub{color:#555;margin:0 0 1rem}
nav a{margin-right:1rem;color:#2a5db0;text-decoration:none}
table{border-collapse:collapse;margin:.4rem 0 1rem;font-variant-numeric:tabular-nums;font-size:.92rem}
th,td{border:1px solid #d8d8d8;padding:.25rem .55rem;vertical-align:top}
th{background:#f3f4f6;text-align:left}
td.num{text-align:right;white-space:nowrap}
td.na{color:#888;text-align:right}
td.note,p.note{color:#666;font-size:.85rem}
tr:nth-child(even) td{background:#fafafa}
figure{margin:1rem 0 1.5rem}
figure svg{max-width:100%;height:auto;border:1px solid #eee}
pre{background:#f6f8fa;border:1px solid #e4e4e4;padding:.7rem;overflow-x:auto;font-size:.8rem;line-height:1.25}
.finding{color:#a40000}
.warning{color:#8a5a00}
details{margin:.5rem 0 1rem}
details>summary{cursor:pointer;color:#2a5db0;font-weight:600}
.wide{overflow-x:auto;max-width:100%}
.wide>table{margin:0}
.wide th:first-child{position:sticky;left:0;z-index:1}
th.col{font-weight:600;font-size:.85rem}
";

/// The page's head and the opening of its body.
fn head(out: &mut Page<'_>, title: &str) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n",
        escape(title)
    );
}

fn nav(out: &mut Page<'_>, sections: &[(&str, &str)]) {
    out.push_str("<nav>");
    for (id, name) in sections {
        let _ = write!(out, "<a href=\"#{id}\">{}</a>", escape(name));
    }
    out.push_str("</nav>\n");
}

/// An inline SVG for the page: the document's `<svg` tag without `xmlns` (HTML parses
/// inline SVG without it), with `role="img"` and the title as its accessible name.
pub fn inline_svg(plot: &Plot) -> String {
    let svg = plot
        .svg
        .replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
    let svg = svg.trim_start_matches(|c: char| c != '<');
    match svg.strip_prefix("<svg") {
        Some(rest) => format!(
            "<svg role=\"img\" aria-label=\"{}\" class=\"plot\"{rest}",
            escape(&plot.title)
        ),
        None => String::new(),
    }
}

fn figure(out: &mut Page<'_>, p: &Plot) {
    let _ = write!(out, "<figure id=\"plot-{}\">\n{}</figure>\n", escape(&p.name), inline_svg(p));
}

/// The plots: the main ones ([`crate::plot::is_main_plot`]) shown, the other time
/// series folded under one `<details>`, so a run with many flows or probers does not
/// make the page tens of thousands of pixels tall.
/// Nothing when there are no plots (the nav has no link to it then).
fn plots_section(out: &mut Page<'_>, plots: &[Plot]) {
    if plots.is_empty() {
        return;
    }
    out.push_str("<section id=\"plots\">\n<h2>Plots</h2>\n");
    let with_test = plots.iter().any(|p| p.name.starts_with("flent_"));
    let (main, more): (Vec<&Plot>, Vec<&Plot>) = plots.iter().partition(|p| crate::plot::is_main_plot(&p.name, with_test));
    for p in &main {
        figure(out, p);
    }
    if !more.is_empty() {
        let names: Vec<&str> = more.iter().map(|p| p.title.rsplit(": ").next().unwrap_or(&p.title)).collect();
        let _ = writeln!(
            out,
            "<details id=\"more-plots\"><summary>{} more time series: {}</summary>",
            more.len(),
            escape(&names.join(", "))
        );
        for p in &more {
            figure(out, p);
        }
        out.push_str("</details>\n");
    }
    out.push_str("</section>\n");
}

fn environment_table(out: &mut Page<'_>, backend: &str, e: &Environment) {
    out.push_str("<table class=\"environment\">\n");
    for (k, v) in [
        ("backend", backend),
        ("kernel", &e.kernel),
        ("cpu", &e.cpu),
        ("profile", &e.profile),
        ("darkbuf", &e.darkbuf_version),
    ] {
        let _ = writeln!(out, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
    }
    out.push_str("</table>\n");
}

fn scenario_pre(out: &mut Page<'_>, scenario: &serde_json::Value) {
    let text = serde_json::to_string_pretty(scenario).unwrap_or_default();
    let _ = writeln!(
        out,
        "<details><summary>The resolved scenario (JSON, every default filled in)</summary>\n<pre class=\"scenario\">{}</pre>\n</details>",
        escape(&text)
    );
}

fn histograms_pre(out: &mut Page<'_>, runs: &[RunRecord]) -> bool {
    let hists = merged_histograms(runs);
    if hists.is_empty() {
        return false;
    }
    let text: String = hists.iter().map(|(n, h)| hist_text(n, h)).collect();
    let names: Vec<String> = hists.iter().map(|(n, _)| format!("@{n}")).collect();
    let _ = writeln!(
        out,
        "<details><summary>{}</summary>\n<pre class=\"histograms\">{}</pre>\n</details>",
        escape(&names.join(", ")),
        escape(&text)
    );
    true
}

/// The first run's printouts: each tool's output under its command line, as a user
/// would paste it into a report.
fn printouts_section(out: &mut Page<'_>, run: &RunRecord, scenario: &serde_json::Value) {
    out.push_str("<section id=\"printouts\">\n<h2>Printouts</h2>\n");
    let window = crate::table::printouts_window(scenario);
    let _ = writeln!(
        out,
        "<p>What the tools print for seed {}, in their own layout.{}</p>",
        run.seed,
        window.as_ref().map_or(String::new(), |(_, long)| format!(" {}", escape(long)))
    );
    let short = window.map_or(String::new(), |(short, _)| format!(" <small>({})</small>", escape(&short)));
    for (cmd, text) in &run.printouts {
        let _ = writeln!(out, "<details><summary><code>{}</code>{short}</summary>\n<pre>{}</pre>\n</details>", escape(cmd), escape(text));
    }
    out.push_str("</section>\n");
}

fn findings_list(out: &mut Page<'_>, label: &str, runs: &[RunRecord]) {
    for run in runs {
        for f in &run.findings {
            let _ = writeln!(
                out,
                "<p class=\"finding\">{}seed {}: invariant “{}” broken at t = {} ns: {}</p>",
                escape(label),
                run.seed,
                escape(&f.invariant),
                f.time_ns,
                escape(&f.detail)
            );
        }
    }
}

/// How to reproduce the results: the exact command line, the darkbuf version and
/// commit, and the scenario file as written (the resolved form is under Scenario).
fn provenance_section(out: &mut Page<'_>, p: Option<&Provenance>) {
    out.push_str("<section id=\"reproduce\">\n<h2>Reproduce</h2>\n");
    let Some(p) = p else {
        out.push_str("<p>These results do not record how they were made (they predate the provenance record).</p>\n</section>\n");
        return;
    };
    let _ = writeln!(out, "<p>Command line:</p>\n<pre class=\"command\">{}</pre>", escape(&p.command));
    let _ = writeln!(
        out,
        "<p>darkbuf {}, commit <code>{}</code>. Scenario file <code>{}</code> as written:</p>",
        escape(&p.darkbuf_version),
        escape(&p.darkbuf_commit),
        escape(&p.scenario_file)
    );
    let _ = writeln!(out, "<pre class=\"scenario-toml\">{}</pre>", escape(&p.scenario_toml));
    out.push_str("</section>\n");
}

fn warnings_list(out: &mut Page<'_>, label: &str, warnings: &[String]) {
    for w in warnings {
        let _ = writeln!(out, "<p class=\"warning\">{}warning: {}</p>", escape(label), escape(w));
    }
}

/// `0..7` for consecutive indices, else `0, 2, 5` (at most 12 listed).
fn index_range(ix: &[u64]) -> String {
    match (ix.first(), ix.last()) {
        (Some(a), Some(b)) if ix.len() > 1 && b - a + 1 == ix.len() as u64 => format!("{a}..{b}"),
        _ if ix.len() > 12 => format!("{}, … ({} indices)", ix[..12].iter().map(u64::to_string).collect::<Vec<_>>().join(", "), ix.len()),
        _ => ix.iter().map(u64::to_string).collect::<Vec<_>>().join(", "),
    }
}

/// Meaning and unit of every metric and time series in the results, each indexed
/// family (`tcp.flow.N.cwnd_avg_pkts`) once with the indices it has, folded.
fn glossary_section<'a>(out: &mut Page<'_>, names: impl IntoIterator<Item = &'a str>) {
    // (row name, a metric it stands for, its indices) in the names' order.
    let mut rows: Vec<(String, &str, std::collections::BTreeSet<u64>)> = Vec::new();
    for name in names {
        let (key, index) = match crate::families::member(name) {
            Some(m) => (crate::families::pattern(&m.family, &m.column), Some(m.index)),
            None => (name.to_string(), None),
        };
        let row = match rows.iter().position(|r| r.0 == key) {
            Some(i) => &mut rows[i],
            None => {
                rows.push((key, name, Default::default()));
                rows.last_mut().expect("just pushed")
            }
        };
        if let Some(i) = index {
            row.2.insert(i);
        }
    }
    let _ = writeln!(
        out,
        "<section id=\"glossary\">\n<h2>Glossary</h2>\n<details><summary>Meaning and unit of the {} metrics and time series on this page (an indexed name such as <code>tcp.flow.N.*</code> once, N for its index)</summary>\n<table class=\"glossary\">\n<thead><tr><th>metric</th><th>unit</th><th>meaning</th></tr></thead>\n<tbody>",
        rows.len()
    );
    for (key, example, ix) in rows {
        let ix: Vec<u64> = ix.into_iter().collect();
        let (unit, meaning) = match crate::glossary::lookup(example) {
            Some(e) => (e.unit, e.meaning),
            None => ("", "(not in darkbuf’s glossary)"),
        };
        let which = if ix.is_empty() { String::new() } else { format!("<br><small>N = {}</small>", index_range(&ix)) };
        let _ = writeln!(out, "<tr><th>{}{which}</th><td>{}</td><td>{}</td></tr>", escape(&key), escape(unit), escape(meaning));
    }
    out.push_str("</tbody>\n</table>\n</details>\n</section>\n");
}

/// Metric and time-series names of `results`, in display order, each once.
fn glossary_names<'a>(results: impl IntoIterator<Item = &'a Results>) -> Vec<String> {
    let mut set: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    for r in results {
        set.extend(r.summary.keys().chain(r.unavailable.keys()).map(|k| &**k));
        for run in &r.runs {
            set.extend(run.timeseries.keys().map(String::as_str));
        }
    }
    let mut v: Vec<String> = set.into_iter().map(str::to_string).collect();
    crate::format::sort_metrics(&mut v);
    v
}

fn num_cell(format: CellFormat, v: f64) -> String {
    format!("<td class=\"num\">{}</td>", escape(&format.format(v)))
}

/// A summary table of `names` in `r`: `metric | mean ± ci95 | min | max | n`, and a
/// `note` column (why a metric is null) when any of them has one.
fn run_summary_table(out: &mut Page<'_>, r: &Results, class: &str, names: &[String]) {
    let notes: Vec<String> = names.iter().map(|m| note(r, m)).collect();
    let with_note = notes.iter().any(|n| !n.is_empty());
    let _ = write!(out, "<div class=\"wide\"><table class=\"{class}\">\n<thead><tr><th>metric</th><th>mean ± ci95</th><th>min</th><th>max</th><th>n</th>");
    if with_note {
        out.push_str("<th>note</th>");
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for (m, note) in names.iter().zip(&notes) {
        let f = format_for_metric(m);
        let _ = write!(out, "<tr><th>{}</th>", escape(m));
        match r.metric(m) {
            Some(s) => {
                let cell = f.cell(s.mean, s.ci95, s.n).replacen(" ±", " ± ", 1);
                let _ = write!(
                    out,
                    "<td class=\"num\">{}</td>{}{}<td class=\"num\">{}</td>",
                    escape(&cell),
                    num_cell(f, s.min),
                    num_cell(f, s.max),
                    s.n
                );
            }
            None => {
                out.push_str("<td class=\"na\">n/a</td><td></td><td></td><td class=\"num\">0</td>")
            }
        }
        if with_note {
            let _ = write!(out, "<td class=\"note\">{}</td>", escape(note));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n");
}

/// Header cell text of a family's column: the metric's last part, breakable at `_`.
fn column_head(c: &str) -> String {
    if c.is_empty() {
        return "value".to_string();
    }
    escape(c).replace('_', "_<wbr>")
}

/// One indexed family of `r` as a table, folded: a row per index (its label: a TCP
/// flow's traffic entry), a column per metric of the family, mean ± ci95 in each cell;
/// the reasons of its null cells under it.
fn family_table(out: &mut Page<'_>, r: &Results, f: &crate::families::Family) {
    let rows = f.indices.len().min(crate::families::MAX_FAMILY_ROWS as usize);
    let _ = writeln!(
        out,
        "<details class=\"family\"><summary>{}: {} × {} metrics</summary>\n<div class=\"wide\"><table class=\"family\">",
        escape(&crate::families::title(&f.name)),
        f.indices.len(),
        f.columns.len()
    );
    let _ = write!(out, "<thead><tr><th>N</th>");
    for c in &f.columns {
        let _ = write!(out, "<th class=\"col\">{}</th>", column_head(c));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    let mut reasons: Vec<(String, String)> = Vec::new();
    for &i in &f.indices[..rows] {
        let _ = write!(out, "<tr><th>{}</th>", escape(&crate::families::row_label(&f.name, i, &r.scenario)));
        for c in &f.columns {
            let m = f.metric(i, c);
            let fmt = format_for_metric(&m);
            match r.metric(&m) {
                Some(s) => {
                    let _ = write!(out, "<td class=\"num\">{}</td>", escape(&fmt.cell(s.mean, s.ci95, s.n).replacen(" ±", " ± ", 1)));
                }
                None => {
                    out.push_str("<td class=\"na\">n/a</td>");
                    let why = note(r, &m);
                    if !why.is_empty() && !reasons.iter().any(|(_, w)| *w == why) {
                        reasons.push((crate::families::pattern(&f.name, c), why));
                    }
                }
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n");
    if rows < f.indices.len() {
        let _ = writeln!(out, "<p class=\"note\">The first {rows} of {} indices; results.json and results.csv have every one.</p>", f.indices.len());
    }
    for (pattern, why) in reasons {
        let _ = writeln!(out, "<p class=\"note\">n/a in {}: {}</p>", escape(&pattern), escape(&why));
    }
    out.push_str("</details>\n");
}

/// The summary of one results: the headline metrics it has, then, folded, every
/// metric outside an indexed family, and each family as a table of its own.
fn run_summary(out: &mut Page<'_>, r: &Results) {
    let names = metric_names(r);
    // The headline metrics these results measured (one absent by design, such as
    // sink.pps without a flood, is in the full table with its reason).
    let headline: Vec<String> = crate::families::HEADLINE.iter().filter(|m| r.metric(m).is_some()).map(|m| m.to_string()).collect();
    let (plain, fams) = crate::families::split(&names);
    if !headline.is_empty() {
        run_summary_table(out, r, "summary headline", &headline);
    }
    let _ = writeln!(out, "<details id=\"every-metric\"{}><summary>Every metric: {} rows</summary>", if headline.is_empty() { " open" } else { "" }, plain.len());
    run_summary_table(out, r, "summary", &plain);
    out.push_str("</details>\n");
    for f in &fams {
        family_table(out, r, f);
    }
}

/// The report of one `darkbuf run`.
pub fn run_html(r: &Results, plots: &[Plot]) -> String {
    page_string(|out| write_run_html(out, r, plots))
}

/// [`run_html`] written to `out`.
pub fn write_run_html(out: &mut Page<'_>, r: &Results, plots: &[Plot]) {
    let name = r
        .scenario
        .get("name")
        .and_then(|v| v.as_str())
        .unwrap_or("darkbuf results")
        .to_string();
    head(out, &format!("darkbuf: {name}"));
    let _ = writeln!(out, "<h1>{}</h1>", escape(&name));
    let n = r.runs.len();
    let _ = writeln!(
        out,
        "<p class=\"sub\">darkbuf {} · {} backend · {n} run{} (seeds {}) · profile {}</p>",
        escape(&r.environment.darkbuf_version),
        escape(&r.backend),
        if n == 1 { "" } else { "s" },
        escape(&seeds(&r.runs)),
        escape(&r.environment.profile)
    );
    let mut sections = vec![("summary", "Summary")];
    if !plots.is_empty() {
        sections.push(("plots", "Plots"));
    }
    sections.push(("histograms", "Histograms"));
    let printouts = r.runs.first().is_some_and(|run| !run.printouts.is_empty());
    if printouts {
        sections.push(("printouts", "Printouts"));
    }
    sections.extend([("reproduce", "Reproduce"), ("glossary", "Glossary"), ("environment", "Environment"), ("scenario", "Scenario")]);
    nav(out, &sections);
    out.push_str("<section id=\"summary\">\n<h2>Summary</h2>\n");
    findings_list(out, "", &r.runs);
    warnings_list(out, "", &r.warnings);
    let _ = writeln!(
        out,
        "<p>Mean over {n} run{}{}; ± is the half-width of the 95% confidence interval of the mean (Student t over the runs).</p>",
        if n == 1 { "" } else { "s" },
        if n == 1 {
            " (one run: no interval)"
        } else {
            ""
        }
    );
    run_summary(out, r);
    out.push_str("</section>\n");
    plots_section(out, plots);
    out.push_str("<section id=\"histograms\">\n<h2>Histograms</h2>\n");
    if histograms_pre(out, &r.runs) {
        let _ = writeln!(out, "<p>log2 buckets as bpftrace’s <code>hist()</code> prints them, summed over the {n} run{}.</p>", if n == 1 { "" } else { "s" });
    } else {
        out.push_str("<p>No histograms in these results.</p>\n");
    }
    out.push_str("</section>\n");
    if printouts {
        printouts_section(out, &r.runs[0], &r.scenario);
    }
    provenance_section(out, r.provenance.as_ref());
    glossary_section(out, glossary_names([r]).iter().map(String::as_str));
    out.push_str("<section id=\"environment\">\n<h2>Environment</h2>\n");
    environment_table(out, &r.backend, &r.environment);
    out.push_str("</section>\n<section id=\"scenario\">\n<h2>Scenario</h2>\n");
    scenario_pre(out, &r.scenario);
    out.push_str("</section>\n</body>\n</html>\n");
}

fn seeds(runs: &[RunRecord]) -> String {
    runs.iter()
        .map(|r| r.seed.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn sweep_cell(r: &Results, metric: &str, f: CellFormat) -> String {
    match r.metric(metric) {
        Some(s) => format!(
            "<td class=\"num\">{}</td>",
            escape(&f.cell(s.mean, s.ci95, s.n).replace(" ±", " ± "))
        ),
        None => "<td class=\"na\">n/a</td>".to_string(),
    }
}

fn sweep_table_html(
    out: &mut Page<'_>,
    s: &SweepResults,
    class: &str,
    rows: impl Iterator<Item = (String, String, CellFormat)>,
) {
    let _ = write!(out, "<div class=\"wide\"><table class=\"{class}\">\n<thead><tr><th>Metric</th>");
    for p in &s.points {
        let _ = write!(out, "<th>{}</th>", breakable(&p.label));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for (label, metric, f) in rows {
        let _ = write!(out, "<tr><th>{}</th>", escape(&label));
        for p in &s.points {
            out.push_str(&sweep_cell(&p.results, &metric, f));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n");
}

/// A point's label or a long name as a header cell: escaped, and breakable after `=`,
/// `,`, `.`, `_` and `:` (`device.bql.limit_min=1073741824` has no space), so a sweep's
/// columns wrap their headers instead of widening the page.
fn breakable(s: &str) -> String {
    let mut out = String::new();
    for c in escape(s).chars() {
        out.push(c);
        if matches!(c, '=' | ',' | '.' | '_' | ':') {
            out.push_str("<wbr>");
        }
    }
    out
}

/// The report of one `darkbuf sweep`.
pub fn sweep_html(s: &SweepResults, plots: &[Plot]) -> String {
    page_string(|out| write_sweep_html(out, s, plots))
}

/// [`sweep_html`] written to `out`.
pub fn write_sweep_html(out: &mut Page<'_>, s: &SweepResults, plots: &[Plot]) {
    let name = if s.name.is_empty() {
        "darkbuf sweep"
    } else {
        &s.name
    };
    let first = s.points.first().map(|p| &p.results);
    head(out, &format!("darkbuf: {name}"));
    let _ = writeln!(out, "<h1>{}</h1>", escape(name));
    let backend = first.map_or("", |r| r.backend.as_str());
    let runs: Vec<usize> = s.points.iter().map(|p| p.results.runs.len()).collect();
    let runs_text = match (runs.iter().min(), runs.iter().max()) {
        (Some(a), Some(b)) if a == b => {
            format!("{a} run{} per point", if *a == 1 { "" } else { "s" })
        }
        (Some(a), Some(b)) => format!("{a}–{b} runs per point"),
        _ => "no runs".to_string(),
    };
    let _ = writeln!(
        out,
        "<p class=\"sub\">darkbuf {} · {} backend · {} point{} · {runs_text}</p>",
        escape(first.map_or("", |r| r.environment.darkbuf_version.as_str())),
        escape(backend),
        s.points.len(),
        if s.points.len() == 1 { "" } else { "s" },
    );
    let sections = [
        ("summary", "Summary"),
        ("plots", "Plots"),
        ("points", "Points"),
        ("histograms", "Histograms"),
        ("reproduce", "Reproduce"),
        ("glossary", "Glossary"),
        ("environment", "Environment"),
        ("scenario", "Scenario"),
    ];
    let sections: Vec<(&str, &str)> = sections.into_iter().filter(|(id, _)| *id != "plots" || !plots.is_empty()).collect();
    nav(out, &sections);
    out.push_str("<section id=\"summary\">\n<h2>Summary</h2>\n");
    for p in &s.points {
        findings_list(out, &format!("{}: ", p.label), &p.results.runs);
        warnings_list(out, &format!("{}: ", p.label), &p.results.warnings);
    }
    out.push_str("<p>One column per point: the mean over its runs, ± the 95% confidence interval (Student t) when a point has more than one run.</p>\n<h3>The seed report’s rows</h3>\n");
    sweep_table_html(
        out,
        s,
        "sweep",
        default_rows()
            .into_iter()
            .map(|r| (r.label.to_string(), r.metric.to_string(), r.format)),
    );
    let every = sweep_metric_names(s);
    let _ = writeln!(out, "<details id=\"every-metric\"><summary>Every metric: {} rows</summary>", every.len());
    sweep_table_html(
        out,
        s,
        "sweep-all",
        every.into_iter().map(|m| {
            let f = format_for_metric(&m);
            (m.clone(), m, f)
        }),
    );
    out.push_str("</details>\n</section>\n");
    plots_section(out, plots);
    out.push_str("<section id=\"points\">\n<h2>Points</h2>\n<div class=\"wide\"><table class=\"points\">\n<thead><tr><th>point</th><th>set</th><th>seeds</th><th>unavailable</th></tr></thead>\n<tbody>\n");
    for p in &s.points {
        let unavailable: Vec<String> = p
            .results
            .unavailable
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        let _ = writeln!(
            out,
            "<tr><th>{}</th><td><code>{}</code></td><td>{}</td><td class=\"note\">{}</td></tr>",
            escape(&p.label),
            escape(&p.set.join(" ")),
            escape(&seeds(&p.results.runs)),
            escape(&unavailable.join("; "))
        );
    }
    out.push_str("</tbody>\n</table></div>\n</section>\n<section id=\"histograms\">\n<h2>Histograms</h2>\n<p>log2 buckets as bpftrace’s <code>hist()</code> prints them, summed over each point’s runs.</p>\n");
    let mut any = false;
    for p in &s.points {
        if !merged_histograms(&p.results.runs).is_empty() {
            let _ = writeln!(out, "<h3>{}</h3>", escape(&p.label));
            histograms_pre(out, &p.results.runs);
            any = true;
        }
    }
    if !any {
        out.push_str("<p>No histograms in these results.</p>\n");
    }
    out.push_str("</section>\n");
    provenance_section(out, s.provenance.as_ref());
    glossary_section(out, glossary_names(s.points.iter().map(|p| &p.results)).iter().map(String::as_str));
    out.push_str("<section id=\"environment\">\n<h2>Environment</h2>\n");
    if let Some(r) = first {
        environment_table(out, &r.backend, &r.environment);
    }
    out.push_str("</section>\n<section id=\"scenario\">\n<h2>Scenario</h2>\n");
    if let Some(r) = first {
        let _ = writeln!(
            out,
            "<p>The first point’s resolved scenario; the others differ by their <code>set</code> keys (see Points).</p>"
        );
        scenario_pre(out, &r.scenario);
    }
    out.push_str("</section>\n</body>\n</html>\n");
}
