//! The input of every analysis: a labelled list of steps, independent of
//! where it came from (a sweep in the store, an imported CSV, a JSON file).
//!
//! Only what analysis needs is kept: throughput and a few latency
//! percentiles per concurrency. Missing figures are `None`, never zero, so a
//! step whose latency was not recorded cannot pass a latency assertion.

use crate::stats::{self, Ci95};
use scalelab_core::{LatencyHistogram, StepResult};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// One run's results, one [`Point`] per step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// The run's name as shown in tables (a label, or a run id).
    pub label: String,
    /// The steps, in any order; analyses sort them by concurrency.
    pub points: Vec<Point>,
    /// A capacity run's result (req/s), from its plan's options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_per_s: Option<f64>,
}

/// The figures of one step (one concurrency) of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Virtual clients of the step (closed loop); at least 1.
    pub concurrency: u32,
    /// Completions per second of window, X(N).
    pub throughput: f64,
    /// Median latency in milliseconds; `None` when not recorded (e.g. imported).
    #[serde(default)]
    pub p50_ms: Option<f64>,
    /// 99th percentile latency in milliseconds; `None` when not recorded.
    #[serde(default)]
    pub p99_ms: Option<f64>,
    /// 99.9th percentile latency in milliseconds; `None` when not recorded.
    #[serde(default)]
    pub p999_ms: Option<f64>,
    /// Failed requests in the window; `None` when unknown (imported series
    /// carry no error counts, which is not the same as no errors).
    #[serde(default)]
    pub errors: Option<u64>,
    /// Open loop: the offered rate, requests per second; the step's
    /// `concurrency` is then its load level, the rate rounded ([`level`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_rate_per_s: Option<f64>,
    /// The throughput of each window measured at this level, in the order
    /// they ran (`--repeats`, `--until-precision`, `--versus`): the paired
    /// comparison of interleaved runs matches them one to one. Empty for a
    /// level measured once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeats: Vec<f64>,
    /// The 95 % interval of `throughput`: over the repeats (Student t), or
    /// over the window's seconds (batch means) for a level measured once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_ci: Option<Ci95>,
    /// The 95 % intervals of `p50_ms`, `p99_ms` and `p999_ms`, alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ci: Option<Ci95>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ci: Option<Ci95>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999_ci: Option<Ci95>,
    /// Why `throughput_ci` could not be estimated (a window too short for
    /// batch means, an imported figure), in words; `None` when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_interval: Option<String>,
}

/// A step's load level, the axis of curves and verdicts: its concurrency
/// (closed loop), or its offered rate rounded (open loop; at least 1).
pub fn level(step: &StepResult) -> u32 {
    match step.offered_rate_per_s {
        Some(r) => r.round().clamp(1.0, f64::from(u32::MAX)) as u32,
        None => step.concurrency,
    }
}

/// A run's complete steps grouped by load level, in the order each level
/// first ran; each group's steps in the order they ran. Partial steps (cut
/// short by a signal) are left out.
pub fn levels(steps: &[StepResult]) -> Vec<(u32, Vec<&StepResult>)> {
    let mut out: Vec<(u32, Vec<&StepResult>)> = Vec::new();
    for s in steps.iter().filter(|s| !s.partial) {
        let l = level(s);
        match out.iter_mut().find(|(n, _)| *n == l) {
            Some((_, v)) => v.push(s),
            None => out.push((l, vec![s])),
        }
    }
    out
}

impl Point {
    /// A step with a throughput only (what published tables give).
    pub fn new(concurrency: u32, throughput: f64) -> Self {
        Point {
            concurrency,
            throughput,
            p50_ms: None,
            p99_ms: None,
            p999_ms: None,
            errors: None,
            offered_rate_per_s: None,
            repeats: Vec::new(),
            throughput_ci: None,
            p50_ci: None,
            p99_ci: None,
            p999_ci: None,
            no_interval: None,
        }
    }

    /// Windows measured at this level (1 for a level measured once).
    pub fn n(&self) -> usize {
        self.repeats.len().max(1)
    }

    /// The throughput's interval half-width in % of the throughput, when it has one.
    pub fn throughput_pm_pct(&self) -> Option<f64> {
        self.throughput_ci.and_then(|c| c.half_width_pct(self.throughput))
    }

    /// The coefficient of variation of the repeats' throughputs, in %.
    pub fn cv_pct(&self) -> Option<f64> {
        stats::cv_pct(&self.repeats)
    }

    /// The figures of one level measured by several windows (steps of one
    /// level, in the order they ran): throughput and percentiles are the
    /// means over the windows, with Student-t intervals; errors add up.
    /// One window: [`Point::from_step`]. `None` when no window measured.
    pub fn from_repeats(steps: &[&StepResult]) -> Option<Self> {
        let points: Vec<Point> = steps.iter().filter_map(|s| Point::from_step(s)).collect();
        if points.len() <= 1 {
            return points.into_iter().next();
        }
        let first = &points[0];
        let xs: Vec<f64> = points.iter().map(|p| p.throughput).collect();
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        // A percentile averaged over the windows that have it; missing in
        // any window: missing (a mean over some of them would mislead).
        let pct = |f: &dyn Fn(&Point) -> Option<f64>| -> (Option<f64>, Option<Ci95>) {
            let v: Option<Vec<f64>> = points.iter().map(f).collect();
            match v {
                Some(v) => (Some(mean(&v)), stats::mean_of_repeats(&v).ok()),
                None => (None, None),
            }
        };
        let (p50_ms, p50_ci) = pct(&|p| p.p50_ms);
        let (p99_ms, p99_ci) = pct(&|p| p.p99_ms);
        let (p999_ms, p999_ci) = pct(&|p| p.p999_ms);
        let interval = stats::mean_of_repeats(&xs);
        Some(Point {
            concurrency: first.concurrency,
            throughput: mean(&xs),
            p50_ms,
            p99_ms,
            p999_ms,
            errors: points.iter().map(|p| p.errors).sum(),
            offered_rate_per_s: first.offered_rate_per_s,
            no_interval: interval.as_ref().err().map(|e| e.0.clone()),
            throughput_ci: interval.ok(),
            p50_ci,
            p99_ci,
            p999_ci,
            repeats: xs,
        })
    }

    /// The analysis figures of an engine's step result; `None` when the step
    /// has no measured window (its throughput would be undefined, not 0).
    /// Imported steps carry their published throughput and nothing else.
    pub fn from_step(step: &StepResult) -> Option<Self> {
        if let Some(x) = step.published_throughput_per_s {
            return Some(Point { no_interval: Some("a published figure: no interval".to_string()), ..Point::new(step.concurrency, x) });
        }
        if step.window_s <= 0.0 {
            return None;
        }
        let interval = step_throughput_ci(step);
        let seconds: Vec<&LatencyHistogram> = step.seconds.iter().map(|s| &s.latency).collect();
        let quantile = |q: f64| step.latency.quantile_ms(q).and_then(|_| stats::batch_quantile(&seconds, q).ok());
        Some(Point {
            concurrency: level(step),
            offered_rate_per_s: step.offered_rate_per_s,
            throughput: step.throughput_per_s(),
            p50_ms: step.latency.quantile_ms(0.50),
            p99_ms: step.latency.quantile_ms(0.99),
            p999_ms: step.latency.quantile_ms(0.999),
            errors: Some(step.errors.counts.values().sum()),
            repeats: Vec::new(),
            no_interval: interval.as_ref().err().map(|e| e.0.clone()),
            throughput_ci: interval.ok(),
            p50_ci: quantile(0.50),
            p99_ci: quantile(0.99),
            p999_ci: quantile(0.999),
        })
    }
}

/// The 95 % interval of one window's throughput from its seconds (batch
/// means over the per-second completions). A partial window, or one whose
/// seconds were not recorded, has none, and says why.
pub fn step_throughput_ci(step: &StepResult) -> stats::Estimate {
    if step.partial {
        return Err(stats::NoInterval("a window cut short: no interval".to_string()));
    }
    // The seconds the engine closed whole; a last fraction of a second
    // (a window of 2.5 s) would weigh as a full one.
    let whole = step.window_s.floor().max(0.0) as usize;
    let per_second: Vec<f64> = step.seconds.iter().take(whole).map(|s| s.requests as f64).collect();
    stats::batch_means(&per_second)
}

/// Why a series cannot be analysed.
#[derive(Debug, Error, PartialEq)]
pub enum SeriesError {
    /// Nothing to analyse.
    #[error("series `{label}` has no steps")]
    Empty { label: String },
    /// A concurrency of 0 has no meaning for a closed-loop step.
    #[error("series `{label}`: a step has concurrency 0 (the lowest is 1)")]
    ZeroConcurrency { label: String },
    /// Two steps claim the same concurrency; which one to use is unknowable.
    #[error("series `{label}`: two steps at concurrency {concurrency}")]
    DuplicateConcurrency { label: String, concurrency: u32 },
    /// Throughput must be a finite number >= 0.
    #[error("series `{label}`: throughput {value} at concurrency {concurrency} is not a finite number >= 0")]
    BadThroughput { label: String, concurrency: u32, value: f64 },
}

impl Series {
    /// A series from its label and steps.
    pub fn new(label: impl Into<String>, points: Vec<Point>) -> Self {
        Series { label: label.into(), points, capacity_per_s: None }
    }

    /// A stored run's series under `label`: its complete steps, and a
    /// capacity run's result. A capacity search tries its answer twice (the
    /// confirmation): the later window at a rate replaces the earlier.
    pub fn of_run(label: impl Into<String>, run: &scalelab_core::Run) -> Self {
        let mut points: Vec<Point> = Vec::new();
        if run.kind == scalelab_core::RunKind::Capacity {
            for p in run.steps.iter().filter(|s| !s.partial).filter_map(Point::from_step) {
                match points.iter_mut().find(|q| q.concurrency == p.concurrency) {
                    Some(q) => *q = p,
                    None => points.push(p),
                }
            }
        } else {
            // A level measured more than once (--repeats, --until-precision,
            // --versus) is one point: the mean of its windows, with their interval.
            for (_, steps) in levels(&run.steps) {
                points.extend(Point::from_repeats(&steps));
            }
        }
        let capacity_per_s = run.plan.options.get("capacity_per_s").and_then(|v| v.as_f64());
        Series { label: label.into(), points, capacity_per_s }
    }

    /// A throughput-only series from `(concurrency, throughput)` pairs.
    pub fn from_pairs(label: impl Into<String>, pairs: &[(u32, f64)]) -> Self {
        Series::new(label, pairs.iter().map(|&(n, x)| Point::new(n, x)).collect())
    }

    /// The steps sorted by concurrency, after checking that the series can be
    /// analysed (not empty, concurrencies >= 1 and distinct, throughputs finite and >= 0).
    pub fn checked_points(&self) -> Result<Vec<Point>, SeriesError> {
        let label = || self.label.clone();
        if self.points.is_empty() {
            return Err(SeriesError::Empty { label: label() });
        }
        let mut points = self.points.clone();
        points.sort_by_key(|p| p.concurrency);
        for (i, p) in points.iter().enumerate() {
            if p.concurrency == 0 {
                return Err(SeriesError::ZeroConcurrency { label: label() });
            }
            if i > 0 && points[i - 1].concurrency == p.concurrency {
                return Err(SeriesError::DuplicateConcurrency { label: label(), concurrency: p.concurrency });
            }
            if !p.throughput.is_finite() || p.throughput < 0.0 {
                return Err(SeriesError::BadThroughput { label: label(), concurrency: p.concurrency, value: p.throughput });
            }
        }
        Ok(points)
    }

    /// The step at `concurrency`, if the series has one.
    pub fn point_at(&self, concurrency: u32) -> Option<&Point> {
        self.points.iter().find(|p| p.concurrency == concurrency)
    }

    /// The step with the lowest concurrency: the base of scaling figures.
    pub fn first_point(&self) -> Option<&Point> {
        self.points.iter().min_by_key(|p| p.concurrency)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_points_sorts_and_rejects_bad_input() {
        let s = Series::from_pairs("a", &[(4, 3.0), (1, 1.0), (2, 2.0)]);
        let c: Vec<u32> = s.checked_points().unwrap().iter().map(|p| p.concurrency).collect();
        assert_eq!(c, vec![1, 2, 4]);
        assert_eq!(s.first_point().unwrap().concurrency, 1);

        let dup = Series::from_pairs("a", &[(1, 1.0), (1, 2.0)]);
        assert!(matches!(dup.checked_points(), Err(SeriesError::DuplicateConcurrency { concurrency: 1, .. })));
        let nan = Series::from_pairs("a", &[(1, f64::NAN)]);
        assert!(matches!(nan.checked_points(), Err(SeriesError::BadThroughput { .. })));
        assert!(matches!(Series::new("a", vec![]).checked_points(), Err(SeriesError::Empty { .. })));
        let zero = Series::from_pairs("a", &[(0, 1.0)]);
        assert!(matches!(zero.checked_points(), Err(SeriesError::ZeroConcurrency { .. })));
    }

    #[test]
    fn point_from_an_engine_step() {
        use scalelab_core::{ErrorClass, LatencyHistogram, StepResult};
        use std::time::Duration;
        let mut step = StepResult { concurrency: 4, ..StepResult::default() };
        assert_eq!(Point::from_step(&step), None, "no window, no throughput");
        step.window_s = 2.0;
        step.requests = 100;
        step.latency = LatencyHistogram::new();
        for ms in 1..=100 {
            step.latency.record(Duration::from_millis(ms));
        }
        step.errors.counts.insert(ErrorClass::Reset, 3);
        let p = Point::from_step(&step).unwrap();
        assert_eq!((p.concurrency, p.throughput, p.errors), (4, 50.0, Some(3)));
        assert!((p.p50_ms.unwrap() - 50.0).abs() < 0.5, "{:?}", p.p50_ms);
        assert!((p.p99_ms.unwrap() - 99.0).abs() < 0.5, "{:?}", p.p99_ms);
        let empty = StepResult { concurrency: 1, window_s: 1.0, ..StepResult::default() };
        assert_eq!(Point::from_step(&empty).unwrap().p99_ms, None, "no latency is not 0 ms");
    }

    #[test]
    fn imported_points_have_no_latency_or_errors() {
        let json = r#"{"label":"x","points":[{"concurrency":1,"throughput":5.0}]}"#;
        let s: Series = serde_json::from_str(json).unwrap();
        assert_eq!(s.points[0], Point::new(1, 5.0));
        assert_eq!(s.points[0].errors, None);
    }
}
