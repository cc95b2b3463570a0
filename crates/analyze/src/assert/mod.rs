//! CI assertions: small expressions checked against a run after it
//! finished (`--assert 'peak >= 5000'`); any failure makes the binary exit 1.
//! The language is documented for users in `docs/assertions.md`.
//!
//! An assertion is either a comparison `METRIC[@N] OP VALUE[UNIT]` or one of
//! the flags `no collapse`, `no retrograde`, `no errors`. Every outcome
//! carries the measured value; a figure that was not measured (no step at
//! N, latency not recorded, error counts unknown, no USL fit) fails with
//! "no data": missing data is never read as 0, or a broken run could pass.
//!
//! Figures with a 95 % interval (peak, throughput, delta) are checked on
//! their bounds: `peak >= 5000` holds only when the peak's low bound is at
//! or above 5000, so noise cannot pass a check. The form
//! `point(peak) >= 5000` checks the point value, named as such; a figure
//! without an interval is checked on its point and says so. A capacity
//! has none: it is a rate that held (twice), and the bracket up to the
//! lowest rate that failed is the search's resolution, not a 95 % interval.

mod measure;
mod parse;

use measure::{collapse_flag, fmt_num, measure};

use crate::curve::Curve;
use crate::series::Series;
use crate::stats::Ci95;
use crate::usl::UslFit;
use serde::Serialize;
use std::fmt;

pub use parse::ParseError;

/// A figure an assertion can check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Highest throughput of the run (/s).
    Peak,
    /// A capacity run's result: the highest offered rate that held every
    /// SLO (/s); read on its point (a search's bracket is no interval).
    Capacity,
    /// Concurrency of the peak.
    PeakConcurrency,
    /// [`Curve::knee_concurrency`]: smallest concurrency reaching 90 % of the peak.
    Knee,
    /// [`Curve::knee_marginal_concurrency`]: where the gain per added client falls below 10 %.
    KneeMarginal,
    /// Throughput at the highest concurrency, in % of the peak.
    LastPctOfPeak,
    /// Throughput at step N (/s); needs `@N`.
    Throughput,
    /// Throughput at step N in % of the first step's; needs `@N`.
    Scaling,
    /// Median latency (ms) at step N, or the worst over all steps without `@N`.
    P50Ms,
    /// 99th percentile latency (ms) at step N, or the worst over all steps.
    P99Ms,
    /// 99.9th percentile latency (ms) at step N, or the worst over all steps.
    P999Ms,
    /// Failed requests at step N, or the total over all steps.
    Errors,
    /// USL λ (/s per client).
    Lambda,
    /// USL σ (contention).
    Sigma,
    /// USL κ (coherency).
    Kappa,
    /// USL R².
    R2,
    /// USL optimum concurrency N*.
    NOpt,
    /// `compare` and `sweep --versus` only: the first delta column (B vs A,
    /// %, the first run named the baseline) at step N, or on the AVG row
    /// without `@N`.
    DeltaPct,
}

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Op {
    /// `>=`
    Ge,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `<`
    Lt,
    /// `==` (exact)
    Eq,
    /// `!=` (exact)
    Ne,
}

impl Op {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Ge => ">=",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Lt => "<",
            Op::Eq => "==",
            Op::Ne => "!=",
        }
    }

    /// `measured OP expected`; equality is exact (meant for counts and concurrencies).
    pub fn holds(self, measured: f64, expected: f64) -> bool {
        match self {
            Op::Ge => measured >= expected,
            Op::Le => measured <= expected,
            Op::Gt => measured > expected,
            Op::Lt => measured < expected,
            Op::Eq => measured == expected,
            Op::Ne => measured != expected,
        }
    }
}

/// What an assertion checks.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Check {
    /// `METRIC[@N] OP VALUE`; `value` is in the metric's unit (% for scaling).
    Compare {
        /// The figure checked.
        metric: Metric,
        /// The step (concurrency) it is read at; `None` = the whole run.
        at: Option<u32>,
        /// How the measured value must compare with `value`.
        op: Op,
        /// The bound, in the metric's unit (a `3x` scaling is stored as 300).
        value: f64,
        /// `point(METRIC)`: check the point value, not the interval's bound.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        point: bool,
    },
    /// `no collapse`: see [`Curve::collapse`].
    NoCollapse,
    /// `no retrograde`: the last step is not below the first step's throughput.
    NoRetrograde,
    /// `no errors`: the same as `errors == 0`.
    NoErrors,
}

/// A parsed assertion with the text the user wrote.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Assertion {
    /// The text as given, for reports.
    pub text: String,
    /// What it checks.
    pub check: Check,
}

/// The result of one assertion on one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outcome {
    /// The assertion's text.
    pub assertion: String,
    /// True when the assertion holds on measured data.
    pub passed: bool,
    /// The measured value in the metric's unit; `None` when there was no data.
    pub measured: Option<f64>,
    /// The measured value with its unit and context, or why there is no data.
    pub detail: String,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.passed { "PASS" } else { "FAIL" };
        write!(f, "{verdict}  {}  ({})", self.assertion, self.detail)
    }
}

impl Assertion {
    /// Parses one assertion (see `docs/assertions.md`).
    pub fn parse(text: &str) -> Result<Assertion, ParseError> {
        parse::parse(text)
    }

    /// Checks the assertion on a run, its curve and (when fitted) its USL fit.
    pub fn evaluate(&self, series: &Series, curve: &Curve, usl: Option<&UslFit>) -> Outcome {
        let result = match &self.check {
            Check::Compare { metric, at, op, value, point } => measure(*metric, *at, series, curve, usl)
                .map(|(v, shown)| on_bounds(*op, *value, v, shown, bounded(*metric, *at, series, curve), *point, false)),
            Check::NoCollapse => collapse_flag(series, curve, false),
            Check::NoRetrograde => collapse_flag(series, curve, true),
            Check::NoErrors => {
                measure(Metric::Errors, None, series, curve, usl).map(|(v, shown)| (v == 0.0, v, format!("measured {shown}")))
            }
        };
        let (passed, measured, detail) = match result {
            Ok((passed, v, detail)) => (passed, Some(v), detail),
            Err(why) => (false, None, format!("no data: {why}")),
        };
        Outcome { assertion: self.text.clone(), passed, measured, detail }
    }
}

impl Assertion {
    /// True for an assertion about a comparison of runs (`delta_pct`),
    /// which `compare` (and `sweep --versus`) checks once on its table; the
    /// others are checked on each compared run (on run A after a versus sweep).
    pub fn is_about_comparison(&self) -> bool {
        matches!(self.check, Check::Compare { metric: Metric::DeltaPct, .. })
    }

    /// True when the assertion reads a point value where an interval may
    /// exist (`point(peak) >= 5000`).
    pub fn is_on_point(&self) -> bool {
        matches!(self.check, Check::Compare { point: true, .. })
    }

    /// Checks a `delta_pct` assertion on a comparison: its first delta
    /// column, at step N or on the AVG row. Missing cells fail as no data.
    pub fn evaluate_comparison(&self, c: &crate::Comparison) -> Outcome {
        let result = match &self.check {
            Check::Compare { metric: Metric::DeltaPct, at, op, value, point } => {
                delta_cell(c, *at).map(|(v, shown, ci)| on_bounds(*op, *value, v, shown, ci, *point, true))
            }
            _ => Err("not an assertion about a comparison".to_string()),
        };
        let (passed, measured, detail) = match result {
            Ok((passed, v, detail)) => (passed, Some(v), detail),
            Err(why) => (false, None, format!("no data: {why}")),
        };
        Outcome { assertion: self.text.clone(), passed, measured, detail }
    }
}

/// The first delta column's cell at step `at`, or on the AVG row: the
/// delta in % (unrounded where it has an interval), how to show it, and
/// its interval or why it has none.
fn delta_cell(c: &crate::Comparison, at: Option<u32>) -> Result<(f64, String, Bounds), String> {
    let column = c.deltas.first().ok_or("no delta column: compare two runs, or give --pair A:B or --baseline")?;
    let (cells, place) = match at {
        Some(n) => {
            let row = c.rows.iter().find(|r| r.concurrency == n).ok_or_else(|| format!("no step at {n} clients"))?;
            (&row.cells, format!("at {n} clients"))
        }
        None => (&c.avg, "on the AVG row".to_string()),
    };
    let v = cells
        .delta_pct
        .get(&column.name)
        .copied()
        .flatten()
        .ok_or_else(|| format!("{} has no delta {place} (a run has no step there)", column.name))?;
    let delta = cells.delta.get(&column.name).cloned().flatten();
    match delta.as_ref().and_then(|d| d.ci().map(|ci| (d.delta_pct, ci))) {
        Some((d, ci)) => Ok((d, format!("{d:+.1}% {place} ({})", column.name), Bounds::Interval(ci))),
        None => {
            let why = delta.and_then(|d| d.no_interval);
            Ok((v as f64, format!("{v:+}% {place} ({})", column.name), Bounds::NoInterval(why)))
        }
    }
}

/// What a figure is checked on: its interval, or a figure that has none
/// this time (with why, when known), or a metric that never has one.
enum Bounds {
    Interval(Ci95),
    NoInterval(Option<String>),
    PointOnly,
}

/// The interval of a figure checked on its bounds (peak, throughput@N), or
/// why it has none; every other metric is read on its point. A capacity is
/// the rate a search found to hold, in a window and again in a second: the
/// bracket above it, up to the lowest rate that failed, is as narrow as
/// `--resolution` asked, whatever the noise, with no stated coverage, and
/// the capacity is its low end; so it is read on its point, saying why.
fn bounded(metric: Metric, at: Option<u32>, s: &Series, c: &Curve) -> Bounds {
    let level = |p: Option<&crate::series::Point>| match p.and_then(|p| p.throughput_ci) {
        Some(ci) => Bounds::Interval(ci),
        None => Bounds::NoInterval(p.and_then(|p| p.no_interval.clone())),
    };
    match metric {
        Metric::Peak => c.peak_ci.map_or_else(|| level(s.point_at(c.peak_concurrency)), Bounds::Interval),
        Metric::Throughput => level(at.and_then(|n| s.point_at(n))),
        Metric::Capacity => Bounds::NoInterval(Some(
            "a capacity is a rate that held; the bracket up to the lowest rate that failed is the search's resolution, not an interval"
                .to_string(),
        )),
        _ => Bounds::PointOnly,
    }
}

/// Whether `measured OP expected` holds for the figure: on the interval's
/// bound that must satisfy it (the low bound for `>=` and `>`, the high
/// bound for `<=` and `<`, the whole interval for `==` and `!=`), or on the
/// point when there is no interval or `point` was asked. Returns the
/// outcome, the point value and the words that name what was checked.
fn on_bounds(op: Op, expected: f64, v: f64, shown: String, bounds: Bounds, point: bool, delta: bool) -> (bool, f64, String) {
    let bound = fmt_num(expected);
    match bounds {
        Bounds::Interval(ci) if !point => {
            // A delta's ± is in percentage points; a throughput's in % of itself.
            let pm = if delta {
                format!(" ± {:.1} points", (ci.high - ci.low) / 2.0)
            } else {
                ci.half_width_pct(v).map(|h| format!(" ± {h:.1} %")).unwrap_or_default()
            };
            let interval = format!("{shown}{pm} ({} to {})", fmt_num(ci.low), fmt_num(ci.high));
            let (holds, why) = match op {
                Op::Ge => (ci.low >= expected, if ci.low >= expected { "its low bound is at or above" } else { "its low bound is below" }),
                Op::Gt => (ci.low > expected, if ci.low > expected { "its low bound is above" } else { "its low bound is not above" }),
                Op::Le => {
                    (ci.high <= expected, if ci.high <= expected { "its high bound is at or below" } else { "its high bound is above" })
                }
                Op::Lt => (ci.high < expected, if ci.high < expected { "its high bound is below" } else { "its high bound is not below" }),
                Op::Eq => {
                    let exact = ci.low == expected && ci.high == expected;
                    (exact, if exact { "the whole interval is" } else { "the interval is wider than" })
                }
                Op::Ne => {
                    let apart = !ci.contains(expected);
                    (apart, if apart { "the interval excludes" } else { "the interval contains" })
                }
            };
            (holds, v, format!("measured {interval}: {why} {bound}"))
        }
        Bounds::Interval(ci) => {
            (op.holds(v, expected), v, format!("measured {shown} (point value; interval {} to {})", fmt_num(ci.low), fmt_num(ci.high)))
        }
        Bounds::NoInterval(why) => {
            // A reason that only repeats "no interval" (a published figure's) adds nothing.
            let why = why.filter(|w| !w.contains("no interval")).map(|w| format!("; {w}")).unwrap_or_default();
            (op.holds(v, expected), v, format!("measured {shown} (no interval: point value{why})"))
        }
        Bounds::PointOnly => (op.holds(v, expected), v, format!("measured {shown}")),
    }
}

/// Parses every assertion, stopping at the first that does not parse.
pub fn parse_all<S: AsRef<str>>(texts: &[S]) -> Result<Vec<Assertion>, ParseError> {
    texts.iter().map(|t| Assertion::parse(t.as_ref())).collect()
}

/// Evaluates every assertion on one run.
pub fn evaluate_all(assertions: &[Assertion], series: &Series, curve: &Curve, usl: Option<&UslFit>) -> Vec<Outcome> {
    assertions.iter().map(|a| a.evaluate(series, curve, usl)).collect()
}

#[cfg(test)]
mod tests;
