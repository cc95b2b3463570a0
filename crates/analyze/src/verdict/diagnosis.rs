//! The diagnosis of one run: curve, USL fit and verdicts together, and its
//! JSON (`diagnose --json`); `scalelab_report::diagnosis` draws it as text.

use super::{verdicts, Verdict, VerdictKind};
use crate::curve::Curve;
use crate::series::Series;
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
    /// Every step offered a rate (open loop): the load levels of the curve
    /// and the verdicts are offered rates, not clients.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rate_sweep: bool,
    /// The concurrency the USL was fitted from when it is not the first
    /// step's: after a super-linear start ([`Curve::superlinear_start`]) the
    /// first step is left out rather than fitted through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usl_from: Option<u32>,
}

fn default_unit() -> String {
    "req/s".into()
}

/// Diagnoses `run`: its series (partial steps skipped, as the CLI does), the
/// curve, the USL fit and the verdicts of the steps at and beyond the knee.
pub fn diagnose(run: &Run) -> Diagnosis {
    let series = Series::of_run(run.plan.label.clone(), run);
    let curve = Curve::of(&series);
    let rate_sweep = !series.points.is_empty() && series.points.iter().all(|p| p.offered_rate_per_s.is_some());
    // After a super-linear start the first step is not the per-client rate
    // the law assumes: fit from the second step, when enough steps remain.
    let usl_from =
        curve.as_ref().ok().and_then(|c| c.superlinear_start.as_ref()).filter(|_| series.points.len() > usl::MIN_POINTS).map(|s| s.to);
    let fitted = match usl_from {
        Some(from) => Series::new(series.label.clone(), series.points.iter().filter(|p| p.concurrency >= from).cloned().collect()),
        None => series.clone(),
    };
    let (usl, usl_error) = match usl::fit(&fitted) {
        _ if rate_sweep => (None, Some("a rate sweep has no concurrency to fit: the USL models closed-loop steps (-c)".to_string())),
        Ok(f) => (Some(f), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let mut verdicts = curve.as_ref().map(|c| verdicts(run, c)).unwrap_or_default();
    // By step, but a client-bound verdict first whatever its step: it says
    // the whole run measured the client (beside a CPU hog it was once
    // listed after a busy-elsewhere verdict of an earlier step). Stable:
    // within a step the rules' order (most important first) stays.
    verdicts.sort_by_key(|v| (v.kind != VerdictKind::ClientBound, v.concurrency));
    Diagnosis { curve: curve.ok(), usl, usl_error, verdicts, unit: run.plan.throughput_unit().to_string(), rate_sweep, usl_from }
}

/// The diagnosis as the JSON of `diagnose --json`: `curve` {`peak`,
/// `peak_concurrency`, `knee_concurrency`, `collapse`, and when the peak
/// has an interval `peak_ci95`, `within_noise`, `flat_within_noise`,
/// `collapse_within_noise`}, `usl` {`lambda`,
/// `sigma`, `kappa`, `r2`, `n_opt`} (null with `usl_error` when not fitted)
/// and `verdicts[]` ({`kind`, `confidence`, `concurrency`, `headline`,
/// `evidence`, `missing`, `next`}).
pub fn to_json(d: &Diagnosis) -> Value {
    let curve = d.curve.as_ref().map(|c| {
        let mut v = json!({
            "peak": c.peak,
            "peak_concurrency": c.peak_concurrency,
            "knee_concurrency": c.knee_concurrency,
            "collapse": c.collapse,
        });
        // With intervals: the peak's, the levels within its noise, and whether the curve is flat within noise.
        if let (Some(ci), Value::Object(m)) = (c.peak_ci, &mut v) {
            m.insert("peak_ci95".into(), json!(ci));
            m.insert("within_noise".into(), json!(c.within_noise));
            m.insert("flat_within_noise".into(), json!(c.flat_within_noise));
            m.insert("collapse_within_noise".into(), json!(c.collapse_within_noise));
        }
        if let (Some(s), Value::Object(m)) = (&c.superlinear_start, &mut v) {
            m.insert("superlinear_start".into(), json!(s));
        }
        // A rate sweep's levels are offered rates (the *_concurrency keys then hold them too).
        if let (true, Value::Object(m)) = (d.rate_sweep, &mut v) {
            m.insert("peak_rate_per_s".into(), json!(c.peak_concurrency));
            m.insert("knee_rate_per_s".into(), json!(c.knee_concurrency));
        }
        v
    });
    let usl = d.usl.as_ref().map(|u| {
        let mut v = json!({ "lambda": u.lambda, "sigma": u.sigma, "kappa": u.kappa, "r2": u.r2, "n_opt": u.n_opt });
        if let (Some(from), Value::Object(m)) = (d.usl_from, &mut v) {
            m.insert("fitted_from".into(), json!(from));
        }
        v
    });
    json!({
        "curve": curve,
        "usl": usl,
        "usl_error": d.usl_error,
        "verdicts": d.verdicts,
    })
}
