//! Sweep expansion: `[[variant]]` x the cross product of `[sweep]` and the CLI's
//! `--set KEY=V1,V2,...`.

use crate::diag::{Diagnostic, DiagnosticKind as K};
use crate::section::Sec;
use crate::tree::{self, toml_float, toml_string, Ctx, Node, Origin, V};
use std::path::Path;

/// Most points a plan may have (a typo such as a 1000-value list times another is
/// caught before anything runs).
pub const MAX_POINTS: usize = 100_000;

/// The points of a sweep, in run order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepPlan {
    pub points: Vec<SweepPointSpec>,
    /// What the command line's `--set`s do to the file's plan that a user would not
    /// see in the results (see `fix_plan_keys`), for the caller to print.
    pub warnings: Vec<String>,
}

/// One point: its label and the `KEY=VALUE` overrides that make it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepPointSpec {
    /// The variant's label and/or `key=value` parts, joined by " " (empty for the plain
    /// scenario).
    pub label: String,
    /// `KEY=VALUE` strings: the variant's, then the sweep's.
    pub set: Vec<String>,
}

/// Where a point's `KEY=VALUE` came from, to point errors back at it.
#[derive(Clone, Debug)]
enum SetSrc {
    File(Origin),
    /// The whole `--set` argument, shared by every value of its list: a copy each made
    /// `--set K=0,1,...,19999` (about 110 KB) take 4 GB before its point count was refused.
    Cli(std::sync::Arc<str>),
}

#[derive(Clone, Debug)]
struct Val {
    /// VALUE in KEY=VALUE (TOML syntax for file values, the raw text for CLI values).
    text: String,
    /// How the value reads in a label.
    label: String,
    src: SetSrc,
}

#[derive(Clone, Debug)]
pub(crate) struct Axis {
    key: String,
    vals: Vec<Val>,
}

#[derive(Clone, Debug)]
pub(crate) struct Variant {
    label: String,
    sets: Vec<(String, Val)>,
}

fn scalar_val(n: &Node) -> Option<Val> {
    let (text, label) = match &n.v {
        V::Int(i) => (i.to_string(), i.to_string()),
        V::Float(f) => (toml_float(*f), toml_float(*f)),
        V::Bool(b) => (b.to_string(), b.to_string()),
        V::Str(s) => (toml_string(s), s.clone()),
        _ => return None,
    };
    Some(Val {
        text,
        label,
        src: SetSrc::File(n.at.clone()),
    })
}

/// Flattens nested tables into dotted keys: `a.b = 1` and `"a.b" = 1` both give `a.b`.
fn flatten<'a>(t: &'a tree::Table, prefix: &str, out: &mut Vec<(String, &'a tree::Entry)>) {
    for e in &t.entries {
        let key = if prefix.is_empty() {
            e.key.clone()
        } else {
            format!("{prefix}.{}", e.key)
        };
        match &e.node.v {
            V::Table(sub) => flatten(sub, &key, out),
            _ => out.push((key, e)),
        }
    }
}

/// The file's `[sweep]` axes, in file order.
pub(crate) fn file_sweep(top: &Sec<'_>) -> Result<Vec<Axis>, Diagnostic> {
    let Some(e) = top.entry("sweep") else {
        return Ok(Vec::new());
    };
    let V::Table(t) = &e.node.v else {
        return Err(top.type_err(
            e,
            "a table",
            Some(
                "write [sweep] with dotted keys and arrays, e.g. \"consumer.nrules\" = [0, 3500]"
                    .into(),
            ),
        ));
    };
    let mut flat = Vec::new();
    flatten(t, "", &mut flat);
    let mut axes: Vec<Axis> = Vec::new();
    for (raw_key, e) in flat {
        // The key as a point applies it (`tree::split_assignment()` trims each segment):
        // `"traffic.0.cc "` is `traffic.0.cc`, and sweeping both is sweeping it twice.
        let key = raw_key.split('.').map(str::trim).collect::<Vec<_>>().join(".");
        let path = format!("sweep.{key}");
        let help = Some(format!(
            "write \"{key}\" = [V1, V2, ...] with integers, floats, strings or booleans"
        ));
        let V::Array(items) = &e.node.v else {
            return Err(top.ctx.diag(
                K::Type,
                &e.node.at,
                &path,
                format!(
                    "`{path}` must be an array of values, found {}",
                    e.node.v.describe()
                ),
                help,
            ));
        };
        if items.is_empty() {
            return Err(top.ctx.diag(
                K::Value,
                &e.node.at,
                &path,
                format!("`{path}` is empty"),
                help,
            ));
        }
        let mut vals = Vec::new();
        for n in items {
            match scalar_val(n) {
                Some(v) => vals.push(v),
                None => return Err(top.ctx.diag(
                    K::Type,
                    &n.at,
                    &path,
                    format!(
                        "`{path}` values must be integers, floats, strings or booleans, found {}",
                        n.v.describe()
                    ),
                    help,
                )),
            }
        }
        if axes.iter().any(|a| a.key == key) {
            return Err(top.ctx.diag(
                K::Value,
                &e.key_at,
                &path,
                format!("`{key}` is swept twice"),
                Some("give each key one list".into()),
            ));
        }
        axes.push(Axis { key, vals });
    }
    Ok(axes)
}

/// The file's `[[variant]]`s, in file order.
pub(crate) fn file_variants(top: &Sec<'_>) -> Result<Vec<Variant>, Diagnostic> {
    let Some(e) = top.entry("variant") else {
        return Ok(Vec::new());
    };
    let example = "write [[variant]] sections, each with label = \"...\" and dotted keys such as \"device.bql.enabled\" = true";
    let V::Array(items) = &e.node.v else {
        return Err(top.type_err(e, "an array of tables ([[variant]])", Some(example.into())));
    };
    let mut out = Vec::new();
    for (i, n) in items.iter().enumerate() {
        let path = format!("variant.{i}");
        let V::Table(t) = &n.v else {
            return Err(top.ctx.diag(
                K::Type,
                &n.at,
                &path,
                format!("`{path}` must be a table, found {}", n.v.describe()),
                Some(example.into()),
            ));
        };
        let label = match t.get("label") {
            None => {
                return Err(top.ctx.diag(
                    K::Value,
                    &n.at,
                    &format!("{path}.label"),
                    format!("[[variant]] entry {i} has no `label`"),
                    Some("every variant needs label = \"...\"".into()),
                ))
            }
            Some(l) => match &l.node.v {
                V::Str(s) => s.clone(),
                other => {
                    return Err(top.ctx.diag(
                        K::Type,
                        &l.node.at,
                        &format!("{path}.label"),
                        format!(
                            "`{path}.label` must be a string, found {}",
                            other.describe()
                        ),
                        None,
                    ))
                }
            },
        };
        // The label names the variant's point in the results: one per variant.
        let label_at = &t.get("label").expect("checked above").node.at;
        if label.trim().is_empty() {
            return Err(top.ctx.diag(
                K::Value,
                label_at,
                &format!("{path}.label"),
                format!("`{path}.label` is empty"),
                Some("every variant needs a unique, non-empty label = \"...\" (it names the variant's results)".into()),
            ));
        }
        if let Some(j) = out.iter().position(|v: &Variant| v.label == label) {
            return Err(top.ctx.diag(
                K::Value,
                label_at,
                &format!("{path}.label"),
                format!("`{path}.label` = {} is also the label of [[variant]] entry {j}", crate::tree::toml_string(&label)),
                Some("every variant needs a unique, non-empty label = \"...\" (it names the variant's results)".into()),
            ));
        }
        let mut flat = Vec::new();
        flatten(t, "", &mut flat);
        let mut sets = Vec::new();
        for (key, e) in flat {
            if key == "label" {
                continue;
            }
            match scalar_val(&e.node) {
                Some(v) => sets.push((key, v)),
                None => {
                    return Err(top.ctx.diag(
                        K::Type,
                        &e.node.at,
                        &format!("{path}.{key}"),
                        format!("variant `{label}`: `{key}` must be a single integer, float, string or boolean, found {}", e.node.v.describe()),
                        Some("a variant sets one value per key; use [sweep] for lists".into()),
                    ))
                }
            }
        }
        out.push(Variant { label, sets });
    }
    Ok(out)
}

/// The values of a `--set KEY=V1,V2,...` list: `value` split at its commas, except in
/// a value that starts (after spaces) with a quote or a bracket, a TOML string, array or
/// inline table, which runs to its closing quote or bracket: `"a,b"` and `[0, 1]` are
/// one value each. A bare value is plain text to the next comma (`it's` is no quote);
/// an unclosed quote or bracket runs to the end, for its parser to report.
pub fn split_values(value: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut quote, mut escaped) = (0usize, None::<char>, false);
    let (mut start, mut at_start) = (0, true);
    for (i, c) in value.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' && q == '"' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        let opens = at_start || depth > 0;
        match c {
            ',' if depth == 0 => {
                out.push(&value[start..i]);
                start = i + 1;
                at_start = true;
                continue;
            }
            '"' | '\'' if opens => quote = Some(c),
            '[' | '{' if opens => depth += 1,
            ']' | '}' if depth > 0 => depth -= 1,
            _ => {}
        }
        if !c.is_whitespace() {
            at_start = false;
        }
    }
    out.push(&value[start..]);
    out
}

/// Whether `darkbuf sweep`'s `--set` `raw` sweeps its key (`K=V1,V2,...`: more than one
/// value by [`split_values`]) rather than fixing it for every point (`K=V`, including
/// `K=[0,1]` and `K="a,b"`).
pub fn is_sweep_set(raw: &str) -> bool {
    raw.split_once('=').is_some_and(|(_, v)| split_values(v).len() > 1)
}

fn cli_axis(ctx: &Ctx<'_>, idx: usize, raw: &str) -> Result<Axis, Diagnostic> {
    let whole = Origin::Set {
        idx,
        span: 0..raw.len(),
    };
    let (segs, vtext, _) = tree::split_assignment(raw).map_err(|m| {
        ctx.diag(
            K::Syntax,
            &whole,
            "",
            m,
            Some("write --set KEY=V1,V2,... e.g. --set consumer.nrules=0,3500,15000".into()),
        )
    })?;
    let key = segs
        .iter()
        .map(|(s, _)| s.as_str())
        .collect::<Vec<_>>()
        .join(".");
    let mut vals = Vec::new();
    let src: std::sync::Arc<str> = raw.into();
    for piece in split_values(vtext) {
        let p = piece.trim();
        if p.is_empty() {
            return Err(ctx.diag(
                K::Syntax,
                &whole,
                &key,
                format!("empty value in `{vtext}`"),
                Some("separate values with commas: KEY=V1,V2,...".into()),
            ));
        }
        vals.push(Val {
            text: p.to_string(),
            label: p.to_string(),
            src: SetSrc::Cli(src.clone()),
        });
    }
    Ok(Axis { key, vals })
}

/// The plan (`[sweep]`, `[[variant]]`) is read from the file; a single-value `--set` of
/// it would be applied to every point and sweep nothing, silently. Refuse it, and say
/// how a sweep is given on the command line.
fn refuse_fixed_plan_keys(fixed: &[String]) -> Result<(), Diagnostic> {
    refuse_plan_sets(fixed, "set on the command line it would sweep nothing")
}

/// `darkbuf run` runs a scenario without its plan (`[sweep]`, `[[variant]]`): a `--set`
/// of the plan would change nothing, silently. The error names the key and says that
/// `darkbuf sweep` runs the plan.
pub fn refuse_run_plan_sets(set: &[String]) -> Result<(), Diagnostic> {
    refuse_plan_sets(set, "`darkbuf run` runs the scenario without it, so the --set would change nothing")
}

fn refuse_plan_sets(fixed: &[String], why: &str) -> Result<(), Diagnostic> {
    for raw in fixed {
        // A malformed assignment is reported where the point is loaded.
        let Ok((segs, _, _)) = tree::split_assignment(raw) else { continue };
        if matches!(segs.first().map(|(s, _)| s.as_str()), Some("sweep" | "variant")) {
            let key = segs.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>().join(".");
            return Err(Diagnostic::at(
                K::Value,
                format!("--set {raw}"),
                raw.clone(),
                None,
                key.as_str(),
                format!("`{key}` is part of the sweep's plan, which comes from the file: {why}"),
                Some("sweep a key from the command line with a list, --set KEY=V1,V2 (e.g. --set traffic.0.cc=cubic,bbr), or change [sweep] or [[variant]] in the file".into()),
            ));
        }
    }
    Ok(())
}

/// The dotted key of a `--set KEY=VALUE` (`None` if malformed: that is reported where
/// the point is loaded).
fn set_key(raw: &str) -> Option<String> {
    let (segs, _, _) = tree::split_assignment(raw).ok()?;
    Some(segs.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>().join("."))
}

/// Command-line `--set`s against the keys the file's plan varies; returns warnings.
///
/// - A single value (`fixed`) of a key the file's `[sweep]` sweeps takes it out of the
///   sweep: every point runs that value, and no column is labelled with a value it did
///   not run (applied after each point's own sets, it used to override them silently).
/// - A key that a `[[variant]]` sets may still be set or swept from the command line
///   (`--set duration=2s` shortens every point), but the variant's label may then name
///   something its point did not run: that is a warning.
/// - A key both set and swept on the command line is an error.
fn fix_plan_keys(fixed: &[String], cli_sweeps: &[String], axes: &mut Vec<Axis>, variants: &[Variant]) -> Result<Vec<String>, Diagnostic> {
    for raw in fixed {
        let Some(key) = set_key(raw) else { continue };
        if let Some(list) = cli_sweeps.iter().find(|l| set_key(l).as_deref() == Some(key.as_str())) {
            return Err(Diagnostic::at(
                K::Value,
                format!("--set {raw}"),
                raw.to_string(),
                None,
                &key,
                format!("`{key}` is both set (--set {raw}) and swept (--set {list}) on the command line"),
                Some("give one of the two".into()),
            ));
        }
        axes.retain(|a| a.key != key);
    }
    let mut warnings = Vec::new();
    for raw in fixed.iter().chain(cli_sweeps) {
        let Some(key) = set_key(raw) else { continue };
        // A tc tree (`--tc`, `qdisc.tc_file`, `qdisc.tc`) replaces the whole [qdisc]:
        // it overrides every qdisc key a variant sets.
        let whole_qdisc = key == "qdisc.tc_file" || key == "qdisc.tc";
        let labels: Vec<String> = variants
            .iter()
            .filter(|v| v.sets.iter().any(|(k, _)| *k == key || (whole_qdisc && k.starts_with("qdisc."))))
            .map(|v| format!("`{}`", v.label))
            .collect();
        if !labels.is_empty() {
            let (noun, verb, them) = if labels.len() == 1 { ("variant", "sets", "its label") } else { ("variants", "set", "their labels") };
            let what = if whole_qdisc { "the whole [qdisc]".to_string() } else { format!("`{key}`") };
            let it = if whole_qdisc { "qdisc keys" } else { "it" };
            warnings.push(format!(
                "--set {raw} replaces {what} where the file's {noun} {} {verb} {it}: {them} may name a value the point did not run",
                labels.join(", ")
            ));
        }
    }
    Ok(warnings)
}

/// Loads point `p` (its sets, whose sources are `src`, then `fixed`), pointing an error
/// back at the sweep entry that caused it.
fn check_point(name_for_errors: &str, text: &str, p: &SweepPointSpec, src: &[SetSrc], fixed: &[String]) -> Result<(), Diagnostic> {
    let all: Vec<String> = p.set.iter().chain(fixed).cloned().collect();
    let Err(d) = crate::load_str(name_for_errors, text, &all) else { return Ok(()) };
    let which = p.set.iter().position(|s| d.file == format!("--set {s}"));
    let Some(i) = which else { return Err(d) };
    let prefix = if p.label.is_empty() { String::new() } else { format!("sweep point `{}`: ", p.label) };
    let file_ctx = Ctx { file: name_for_errors, source: text, overrides: &[] };
    Err(match &src[i] {
        SetSrc::File(origin) => file_ctx.diag(d.kind, origin, &d.key, format!("{prefix}{}", d.message), d.help),
        SetSrc::Cli(raw) => Diagnostic {
            file: format!("--set {raw}"),
            source: raw.to_string(),
            span: None,
            line: None,
            column: None,
            message: format!("{prefix}{}", d.message),
            ..d
        },
    })
}

/// The plan `darkbuf run` leaves aside: how many `[[variant]]`s and `[sweep]` points
/// the file has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanShape {
    pub variants: usize,
    pub sweep_points: usize,
}

/// What `darkbuf run` checks of a scenario's `[[variant]]`s and `[sweep]` (`name` for
/// its errors): each variant, and each swept value, applied alone to the file's
/// scenario, so an unknown key or a bad value there is an error in `run` as it is in
/// `sweep` ("unknown keys are errors, never ignored"). The command line's `--set`s are
/// left out: what `run` changes does not make an entry it does not run wrong
/// (`--set qdisc.kind=pfifo_fast` on a file whose variant sets cake's `bandwidth`). A
/// file that does not load on its own (it needs a `--set`) is not judged here.
/// Combinations of values are `sweep`'s to check. Returns the plan's shape, for `run`
/// to say what it left out.
pub fn check_plan_entries(name: &str, text: &str) -> Result<PlanShape, Diagnostic> {
    let ctx = Ctx { file: name, source: text, overrides: &[] };
    let root = tree::parse_document(&ctx)?;
    let top = Sec::root(&root, &ctx);
    let axes = file_sweep(&top)?;
    let variants = file_variants(&top)?;
    if crate::load_str(name, text, &[]).is_ok() {
        for v in &variants {
            let set = v.sets.iter().map(|(k, val)| format!("{k}={}", val.text)).collect();
            let src: Vec<SetSrc> = v.sets.iter().map(|(_, val)| val.src.clone()).collect();
            check_point(name, text, &SweepPointSpec { label: v.label.clone(), set }, &src, &[])?;
        }
        for a in &axes {
            for val in &a.vals {
                let spec = SweepPointSpec { label: format!("{}={}", a.key, val.label), set: vec![format!("{}={}", a.key, val.text)] };
                check_point(name, text, &spec, std::slice::from_ref(&val.src), &[])?;
            }
        }
    }
    let sweep_points = if axes.is_empty() { 0 } else { axes.iter().fold(1usize, |n, a| n.saturating_mul(a.vals.len())) };
    Ok(PlanShape { variants: variants.len(), sweep_points })
}

/// Reads `path` and plans its sweep (see [`sweep_plan_str`]).
pub fn sweep_plan(path: &Path, cli_sweeps: &[String]) -> Result<SweepPlan, Diagnostic> {
    sweep_plan_fixed(path, &[], cli_sweeps)
}

/// [`sweep_plan`] with single-value `--set`s (`fixed`) that apply to every point: each
/// point is checked with them, as [`crate::load_point`] will load it.
pub fn sweep_plan_fixed(path: &Path, fixed: &[String], cli_sweeps: &[String]) -> Result<SweepPlan, Diagnostic> {
    let (name, text) = crate::read_scenario(path)?;
    sweep_plan_str_fixed(&name, &text, fixed, cli_sweeps)
}

/// [`sweep_plan_str_fixed`] without fixed overrides.
pub fn sweep_plan_str(
    name_for_errors: &str,
    text: &str,
    cli_sweeps: &[String],
) -> Result<SweepPlan, Diagnostic> {
    sweep_plan_str_fixed(name_for_errors, text, &[], cli_sweeps)
}

/// Plans a sweep: the file's variants (in order; one unnamed variant if none) times the
/// cross product of the file's `[sweep]` and `cli_sweeps` (`KEY=V1,V2,...`; a CLI key
/// replaces a file key of the same name). The first key varies slowest.
///
/// Every point is loaded once to check it, with the `fixed` single-value overrides
/// applied last as [`crate::load_point`] applies them, so a bad key or value in
/// `[sweep]` or `[[variant]]` is reported at its line in the file before anything runs.
pub fn sweep_plan_str_fixed(
    name_for_errors: &str,
    text: &str,
    fixed: &[String],
    cli_sweeps: &[String],
) -> Result<SweepPlan, Diagnostic> {
    refuse_fixed_plan_keys(fixed)?;
    let ctx = Ctx {
        file: name_for_errors,
        source: text,
        overrides: cli_sweeps,
    };
    let root = tree::parse_document(&ctx)?;
    let top = Sec::root(&root, &ctx);
    let mut axes = file_sweep(&top)?;
    for (i, raw) in cli_sweeps.iter().enumerate() {
        let a = cli_axis(&ctx, i, raw)?;
        match axes.iter_mut().find(|x| x.key == a.key) {
            Some(x) => *x = a,
            None => axes.push(a),
        }
    }
    let mut variants = file_variants(&top)?;
    let warnings = fix_plan_keys(fixed, cli_sweeps, &mut axes, &variants)?;
    if variants.is_empty() {
        variants.push(Variant {
            label: String::new(),
            sets: Vec::new(),
        });
    }
    let count = axes
        .iter()
        .try_fold(variants.len(), |n, a| n.checked_mul(a.vals.len()))
        .filter(|&n| n <= MAX_POINTS);
    if count.is_none() {
        let sizes: Vec<String> = axes
            .iter()
            .map(|a| format!("{} ({})", a.key, a.vals.len()))
            .collect();
        return Err(Diagnostic::at(
            K::Value,
            name_for_errors,
            text,
            None,
            "sweep",
            format!("the sweep has more than {MAX_POINTS} points"),
            Some(format!(
                "{} variant(s) x {}",
                variants.len(),
                sizes.join(" x ")
            )),
        ));
    }

    let mut points = Vec::new();
    let mut srcs: Vec<Vec<SetSrc>> = Vec::new();
    for v in &variants {
        let mut idx = vec![0usize; axes.len()];
        loop {
            let mut label_parts = Vec::new();
            if !v.label.is_empty() {
                label_parts.push(v.label.clone());
            }
            let mut set = Vec::new();
            let mut src = Vec::new();
            for (k, val) in &v.sets {
                set.push(format!("{k}={}", val.text));
                src.push(val.src.clone());
            }
            for (a, &i) in axes.iter().zip(&idx) {
                let val = &a.vals[i];
                set.push(format!("{}={}", a.key, val.text));
                src.push(val.src.clone());
                label_parts.push(format!("{}={}", a.key, val.label));
            }
            points.push(SweepPointSpec {
                label: label_parts.join(" "),
                set,
            });
            srcs.push(src);
            // Odometer: the last axis varies fastest.
            let mut done = true;
            for k in (0..axes.len()).rev() {
                idx[k] += 1;
                if idx[k] < axes[k].vals.len() {
                    done = false;
                    break;
                }
                idx[k] = 0;
            }
            if done {
                break;
            }
        }
    }

    // Check every point, pointing errors back at the sweep entry that caused them.
    for (p, src) in points.iter().zip(&srcs) {
        check_point(name_for_errors, text, p, src, fixed)?;
    }
    Ok(SweepPlan { points, warnings })
}
