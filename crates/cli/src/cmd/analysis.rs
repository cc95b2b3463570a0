//! The analysis printed under a run's table, and `--assert` evaluation.

use crate::error::bad;
use scalelab_analyze::{assert as assertions, Curve, Series};
use scalelab_core::Run;

/// A run as the analysis sees it: one point per measured (non-partial) step.
pub fn series_of(run: &Run) -> Series {
    Series::of_run(run.plan.label.clone(), run)
}

/// The diagnosis printed under a run's tables: curve, USL fit, verdicts with
/// their evidence and what to look at next.
pub fn diagnosis_text(run: &Run) -> String {
    scalelab_report::cli::diagnosis_text(run)
}

/// The run's JSON with the diagnosis (`curve`, `usl`, `verdicts`) added.
pub fn run_json_with_diagnosis(run: &Run) -> serde_json::Value {
    let mut doc = scalelab_report::json::run_json(run);
    let d = scalelab_analyze::verdict::to_json(&scalelab_analyze::diagnose(run));
    if let (serde_json::Value::Object(m), serde_json::Value::Object(extra)) = (&mut doc, d) {
        m.extend(extra);
        // `--trigger`'s captures (docs/metrics.md), when there are any.
        if !run.samples.captures.is_empty() {
            m.insert("captures".into(), serde_json::to_value(&run.samples.captures).expect("captures serialize"));
        }
    }
    doc
}

/// Parses every `--assert` before any load, so a typo fails fast (exit 2).
pub fn parse_assertions(texts: &[String]) -> anyhow::Result<Vec<assertions::Assertion>> {
    assertions::parse_all(texts).map_err(|e| bad(format!("--assert: {e}")))
}

/// Evaluates assertions on a run; prints each as PASS/FAIL with the measured
/// value; returns true when all passed.
pub fn check(run: &Run, parsed: &[assertions::Assertion]) -> bool {
    if parsed.is_empty() {
        return true;
    }
    let series = series_of(run);
    let curve = match Curve::of(&series) {
        Ok(c) => c,
        Err(e) => {
            for a in parsed {
                esayln!("{}", scalelab_report::cli::assertion_no_data(&a.text, &e));
            }
            return false;
        }
    };
    let usl = scalelab_analyze::usl::fit(&series).ok();
    let mut all = true;
    for o in assertions::evaluate_all(parsed, &series, &curve, usl.as_ref()) {
        all &= o.passed;
        esayln!("{}", scalelab_report::cli::assertion_line(&o));
    }
    all
}
