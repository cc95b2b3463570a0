//! The diagnosis of one run: curve, USL fit and verdicts together, as text
//! (`scalelab diagnose`) and as JSON (`diagnose --json`).

use super::{verdicts, Verdict};
use crate::curve::Curve;
use crate::series::{Point, Series};
use crate::usl::{self, UslFit};
use scalelab_core::Run;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Everything the analysis says about one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// The curve; `None` when the run has no usable step.
    pub curve: Option<Curve>,
    /// The USL fit; `None` when refused, failed or not usable (σ outside
    /// [0, 1], the curve not following the data: see [`crate::usl::check`]
    /// and [`Diagnosis::usl_error`]).
    pub usl: Option<UslFit>,
    /// Why there is no fit.
    pub usl_error: Option<String>,
    /// The bottleneck verdicts in step order (fewest clients first, as the
    /// table reads), the most important first within a step.
    pub verdicts: Vec<Verdict>,
    /// What the throughput counts: `req/s`, `tx/s`, `q/s` ([`scalelab_core::RunPlan::throughput_unit`]).
    #[serde(default = "default_unit")]
    pub unit: String,
}

fn default_unit() -> String {
    "req/s".into()
}

/// Diagnoses `run`: its series (partial steps skipped, as the CLI does), the
/// curve, the USL fit and the verdicts of the steps at and beyond the knee.
pub fn diagnose(run: &Run) -> Diagnosis {
    let points: Vec<Point> = run.steps.iter().filter(|s| !s.partial).filter_map(Point::from_step).collect();
    let series = Series::new(run.plan.label.clone(), points);
    let curve = Curve::of(&series);
    let (usl, usl_error) = match usl::fit(&series) {
        Ok(f) => (Some(f), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let mut verdicts = curve.as_ref().map(|c| verdicts(run, c)).unwrap_or_default();
    // Stable: within a step the rules' order (most important first) stays.
    verdicts.sort_by_key(|v| v.concurrency);
    Diagnosis { curve: curve.ok(), usl, usl_error, verdicts, unit: run.plan.throughput_unit().to_string() }
}

/// A figure for text: thousands separated from 1,000, whole from 10 (and
/// whole numbers always), one decimal from 1, two below.
pub(crate) fn num(v: f64) -> String {
    if !v.is_finite() {
        return "?".into();
    }
    let a = v.abs();
    if a >= 1000.0 {
        let digits = format!("{:.0}", a);
        let mut out = String::new();
        for (i, ch) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(ch);
        }
        if v < 0.0 {
            out.insert(0, '-');
        }
        out
    } else if a >= 10.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A throughput with its unit: "1,234 req/s", or "1,234/s" when the unit is unknown.
pub fn per_s(v: f64, unit: &str) -> String {
    if unit.starts_with('/') {
        format!("{}{unit}", num(v))
    } else {
        format!("{} {unit}", num(v))
    }
}

fn clients(n: u32) -> String {
    if n == 1 {
        "1 client".into()
    } else {
        format!("{n} clients")
    }
}

/// One verdict's line: `at N clients: KIND (confidence) — headline: figures`.
fn verdict_line(v: &Verdict) -> String {
    let figures: Vec<String> = v
        .evidence
        .iter()
        .map(|e| {
            let sep = if e.unit.starts_with('%') { "" } else { " " };
            format!("{} {}{sep}{}", e.name, num(e.value), e.unit)
        })
        .collect();
    let mut line = format!("at {}: {} ({}) — {}", clients(v.concurrency), v.kind.title(), v.confidence.name(), v.headline);
    if !figures.is_empty() {
        line.push_str(": ");
        line.push_str(&figures.join(", "));
    }
    line
}

/// The diagnosis as text, in the shape of `scalelab diagnose`:
/// the curve line, the USL line, then per verdict its line, what was
/// missing and `  next: ...`.
pub fn render_text(d: &Diagnosis, run_label: &str) -> String {
    let mut out = format!("{run_label}\n");
    match &d.curve {
        None => out.push_str("no measured step: nothing to diagnose\n"),
        Some(c) => {
            let mut line =
                format!("peak {} at {}; knee at {}", per_s(c.peak, &d.unit), clients(c.peak_concurrency), clients(c.knee_concurrency));
            match &c.collapse {
                Some(col) => {
                    line.push_str(&format!(
                        "; collapse: {} at {} = {}% of peak",
                        per_s(col.throughput, &d.unit),
                        clients(col.concurrency),
                        num(col.pct_of_peak)
                    ));
                    if let Some(f) = col.pct_of_first {
                        line.push_str(&format!(", {}% of {}", num(f), clients(c.first_concurrency)));
                    }
                    if col.retrograde {
                        line.push_str(" (retrograde)");
                    }
                }
                None => line.push_str("; no collapse"),
            }
            out.push_str(&line);
            out.push('\n');
        }
    }
    match (&d.usl, &d.usl_error) {
        (Some(u), _) => {
            let r2 = u.r2.map_or_else(|| "-".to_string(), |r| format!("{r:.2}"));
            let opt = match u.n_opt {
                Some(n) => format!("optimum N* = {}", num(n)),
                None => "no optimum (kappa 0)".to_string(),
            };
            out.push_str(&format!("USL: sigma {:.3}  kappa {:.4}  R2 {r2}  {opt}\n", u.sigma, u.kappa));
        }
        (None, Some(e)) => out.push_str(&format!("USL: no usable fit: {e}\n")),
        (None, None) => out.push_str("USL: no fit\n"),
    }
    if d.curve.is_some() && d.verdicts.is_empty() {
        out.push_str("no verdict: no rule fired at and beyond the knee (or the telemetry to judge was not recorded)\n");
    }
    for v in &d.verdicts {
        out.push_str(&verdict_line(v));
        out.push('\n');
        if !v.missing.is_empty() {
            out.push_str(&format!("  missing: {}\n", v.missing.join("; ")));
        }
        out.push_str(&format!("  next: {}\n", v.next));
    }
    out
}

/// The diagnosis as the JSON of `diagnose --json`: `curve` {`peak`,
/// `peak_concurrency`, `knee_concurrency`, `collapse`}, `usl` {`lambda`,
/// `sigma`, `kappa`, `r2`, `n_opt`} (null with `usl_error` when not fitted)
/// and `verdicts[]` ({`kind`, `confidence`, `concurrency`, `headline`,
/// `evidence`, `missing`, `next`}).
pub fn to_json(d: &Diagnosis) -> Value {
    let curve = d.curve.as_ref().map(|c| {
        json!({
            "peak": c.peak,
            "peak_concurrency": c.peak_concurrency,
            "knee_concurrency": c.knee_concurrency,
            "collapse": c.collapse,
        })
    });
    let usl = d.usl.as_ref().map(|u| json!({ "lambda": u.lambda, "sigma": u.sigma, "kappa": u.kappa, "r2": u.r2, "n_opt": u.n_opt }));
    json!({
        "curve": curve,
        "usl": usl,
        "usl_error": d.usl_error,
        "verdicts": d.verdicts,
    })
}
