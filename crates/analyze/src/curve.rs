//! The shape of one run's scaling curve: peak, knee, collapse and how
//! latency grew, computed from the steps alone (no model, unlike [`crate::usl`]).
//!
//! Rules (from the diagnosis issue, kept as named constants so the report can
//! quote them):
//! - **peak**: the highest throughput; ties go to the lowest concurrency.
//! - **knee**: where adding clients stops paying. Two figures:
//!   [`Curve::knee_concurrency`] is the smallest concurrency reaching
//!   [`KNEE_PEAK_SHARE`] (90 %) of the peak; [`Curve::knee_marginal_concurrency`]
//!   is the last concurrency before the gain per added client first drops
//!   below [`KNEE_MARGINAL_SHARE`] (10 %) of the first client's.
//! - **knee of a rate sweep** (open loop, every point an offered rate):
//!   the highest offered rate before latency departs from its low-load
//!   value: p99 above [`RATE_KNEE_P99_X`] times the lowest rate's (and 1 ms
//!   more), or completions below [`RATE_KNEE_ACHIEVED_SHARE`] of the offered
//!   rate (the server no longer keeps up, so latency grows without bound).
//!   [`Curve::knee_concurrency`] is then that rate, rounded.
//! - **collapse**: the throughput at the highest concurrency is below
//!   [`COLLAPSE_PEAK_SHARE`] (70 %) of the peak, or below the first step's
//!   ("retrograde": more clients get less work done than the first step did).
//!
//! With intervals (levels measured with their 95 % interval), a drop is
//! only called when it exceeds the noise: the levels whose interval
//! overlaps the peak's are [`Curve::within_noise`] (the peak could be at
//! any of them); a collapse's last level must differ from the peak
//! (`stats::differ`), else it is [`Curve::collapse_within_noise`]; and when
//! no level differs from the peak, the curve is [`Curve::flat_within_noise`]
//! and neither knee nor collapse is called. Levels without an interval
//! (imported series) keep the rules above unchanged.

use crate::series::{Point, Series, SeriesError};
use crate::stats::{self, Ci95};
use serde::{Deserialize, Serialize};

/// Share of the peak that the knee must reach ([`Curve::knee_concurrency`]).
pub const KNEE_PEAK_SHARE: f64 = 0.90;
/// Share of the first client's throughput below which an added client is
/// judged not to pay any more ([`Curve::knee_marginal_concurrency`]).
pub const KNEE_MARGINAL_SHARE: f64 = 0.10;
/// Rate sweep: p99 above this many times the lowest rate's has departed.
pub const RATE_KNEE_P99_X: f64 = 3.0;
/// Rate sweep: completions below this share of the offered rate have departed.
pub const RATE_KNEE_ACHIEVED_SHARE: f64 = 0.95;
/// Share of the peak below which the last step counts as a collapse.
pub const COLLAPSE_PEAK_SHARE: f64 = 0.70;
/// The second step scaled more than this many times linearly from the first
/// (e.g. 1 to 2 clients giving over 2.4 times the throughput): a
/// [`Superlinear`] start.
pub const SUPERLINEAR_X: f64 = 1.2;

/// The shape of one run's throughput curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    /// Concurrency of the first (lowest) step, the base of scaling figures.
    pub first_concurrency: u32,
    /// Throughput of the first step.
    pub first_throughput: f64,
    /// The highest throughput of the run.
    pub peak: f64,
    /// The (lowest) concurrency where [`Curve::peak`] was reached.
    pub peak_concurrency: u32,
    /// The knee as reported in `show --json`: the smallest concurrency whose
    /// throughput reaches 90 % of the peak. It is always defined and robust to
    /// one noisy step; when the curve is still climbing at the end of the sweep
    /// (see [`Curve::knee_marginal_concurrency`]) it only locates 90 % of the
    /// sweep's own peak, and the true knee may lie beyond the sweep.
    pub knee_concurrency: u32,
    /// The last concurrency before the gain per added client first falls
    /// below 10 % of the first client's: with steps N_i, the first i where
    /// (X_i − X_{i−1}) / (N_i − N_{i−1}) < 0.1 × X_first / N_first gives N_{i−1}.
    /// `None` when no step falls below (still scaling, or a single step).
    pub knee_marginal_concurrency: Option<u32>,
    /// `Some` when the run collapsed (see the module rules).
    pub collapse: Option<Collapse>,
    /// Each step's latency percentiles relative to the first step's.
    pub latency_growth: Vec<LatencyGrowth>,
    /// The peak level's 95 % throughput interval, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_ci: Option<Ci95>,
    /// The levels whose interval overlaps the peak's, ascending, the peak's
    /// own included: the peak could be at any of them. Empty when the peak
    /// has no interval; a level without one is never in it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub within_noise: Vec<u32>,
    /// True when every level has an interval and none differs from the
    /// peak's: adding clients changed nothing the noise lets us see, so no
    /// knee or collapse is called.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flat_within_noise: bool,
    /// The drop the collapse rule saw at the last level when its interval
    /// overlaps the peak's: not called a collapse (kept to say so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collapse_within_noise: Option<Collapse>,
    /// The first step did less per client than the second by more than
    /// [`SUPERLINEAR_X`]: a closed loop's first client is slowed by what more
    /// clients hide (on an idle machine each request waits for the server's
    /// thread and then the client's to be woken), so it understates the
    /// per-client rate. The USL is then fitted from the second step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superlinear_start: Option<Superlinear>,
}

/// A super-linear start: from the first step to the second, throughput grew
/// faster than the clients did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Superlinear {
    /// The first step's concurrency.
    pub from: u32,
    /// The second step's concurrency.
    pub to: u32,
    /// The second step's throughput in % of the first's.
    pub scaling_pct: f64,
    /// What linear scaling would give, in % of the first's (`to / from`).
    pub linear_pct: f64,
}

/// The figures of a collapse, measured at the highest concurrency.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Collapse {
    /// The highest concurrency of the run, where the collapse is measured.
    pub concurrency: u32,
    /// Throughput there.
    pub throughput: f64,
    /// That throughput in % of the peak.
    pub pct_of_peak: f64,
    /// That throughput in % of the first step's; `None` when the first step's is 0.
    pub pct_of_first: Option<f64>,
    /// True when below the first step's throughput: adding clients made the
    /// server do less work in total, the signature of serialization.
    pub retrograde: bool,
}

/// How one step's latency compares with the first step's, as ratios
/// (2.0 = twice the first step's). `None` where either step lacks the figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencyGrowth {
    /// The step's concurrency.
    pub concurrency: u32,
    /// p50 at this step / p50 at the first step.
    pub p50_x: Option<f64>,
    /// p99 at this step / p99 at the first step.
    pub p99_x: Option<f64>,
    /// p99.9 at this step / p99.9 at the first step.
    pub p999_x: Option<f64>,
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 && a.is_finite() => Some(a / b),
        _ => None,
    }
}

impl Curve {
    /// Analyses `series`; fails only when the series itself is unusable
    /// (empty, duplicate or zero concurrency, non-finite throughput).
    pub fn of(series: &Series) -> Result<Curve, SeriesError> {
        let points = series.checked_points()?;
        let first = &points[0];
        let last = &points[points.len() - 1];
        let mut peak_point = first;
        for p in &points {
            if p.throughput > peak_point.throughput {
                peak_point = p;
            }
        }
        let peak = peak_point.throughput;
        // Compare against the share with a relative epsilon so that a step
        // exactly at 90 % is not lost to floating-point rounding.
        let knee = points
            .iter()
            .find(|p| p.throughput >= KNEE_PEAK_SHARE * peak * (1.0 - 1e-12))
            .map_or(peak_point.concurrency, |p| p.concurrency);
        let rate_sweep = points.iter().all(|p| p.offered_rate_per_s.is_some());
        let knee = if rate_sweep { rate_knee(&points) } else { knee };
        let peak_ci = peak_point.throughput_ci;
        let overlaps =
            |p: &Point| p.throughput_ci.is_some() && !stats::differ((p.throughput, p.throughput_ci.as_ref()), (peak, peak_ci.as_ref()));
        let within_noise: Vec<u32> =
            if peak_ci.is_some() { points.iter().filter(|p| overlaps(p)).map(|p| p.concurrency).collect() } else { Vec::new() };
        let flat_within_noise = points.len() > 1 && within_noise.len() == points.len();
        let mut collapse = collapse(first, last, peak);
        let mut collapse_within_noise = None;
        if collapse.is_some() && peak_ci.is_some() && overlaps(last) {
            collapse_within_noise = collapse.take();
        }
        Ok(Curve {
            first_concurrency: first.concurrency,
            first_throughput: first.throughput,
            peak,
            peak_concurrency: peak_point.concurrency,
            knee_concurrency: knee,
            knee_marginal_concurrency: if rate_sweep { None } else { marginal_knee(&points) },
            collapse,
            latency_growth: points
                .iter()
                .map(|p| LatencyGrowth {
                    concurrency: p.concurrency,
                    p50_x: ratio(p.p50_ms, first.p50_ms),
                    p99_x: ratio(p.p99_ms, first.p99_ms),
                    p999_x: ratio(p.p999_ms, first.p999_ms),
                })
                .collect(),
            peak_ci,
            within_noise,
            flat_within_noise,
            collapse_within_noise,
            superlinear_start: if rate_sweep { None } else { superlinear_start(&points) },
        })
    }

    /// `throughput` in % of the first step's
    /// (`None` when the first step's is 0).
    pub fn scaling_pct(&self, throughput: f64) -> Option<f64> {
        (self.first_throughput > 0.0).then(|| 100.0 * throughput / self.first_throughput)
    }
}

/// The first two steps when the second scaled more than [`SUPERLINEAR_X`]
/// times linearly from the first.
fn superlinear_start(points: &[Point]) -> Option<Superlinear> {
    let (a, b) = (points.first()?, points.get(1)?);
    if a.throughput <= 0.0 || a.concurrency == 0 {
        return None;
    }
    let linear = f64::from(b.concurrency) / f64::from(a.concurrency);
    let scaled = b.throughput / a.throughput;
    // With intervals, the excess must be more than the noise: the second
    // step's low end against the first's high end.
    let lo = b.throughput_ci.as_ref().map_or(b.throughput, |c| c.low)
        / a.throughput_ci.as_ref().map_or(a.throughput, |c| c.high).max(f64::MIN_POSITIVE);
    (scaled > SUPERLINEAR_X * linear && lo > linear).then_some(Superlinear {
        from: a.concurrency,
        to: b.concurrency,
        scaling_pct: 100.0 * scaled,
        linear_pct: 100.0 * linear,
    })
}

/// The level of the last point before latency departs from the first
/// (lowest-rate) point's; the last point when it never does.
fn rate_knee(points: &[Point]) -> u32 {
    let base = points[0].p99_ms;
    let departed = |p: &Point| {
        let slow = match (p.p99_ms, base) {
            (Some(x), Some(b)) => x > RATE_KNEE_P99_X * b + 1.0,
            _ => false,
        };
        let behind = p.offered_rate_per_s.is_some_and(|r| p.throughput < RATE_KNEE_ACHIEVED_SHARE * r);
        slow || behind
    };
    match points.iter().position(departed) {
        Some(0) => points[0].concurrency,
        Some(i) => points[i - 1].concurrency,
        None => points[points.len() - 1].concurrency,
    }
}

fn marginal_knee(points: &[Point]) -> Option<u32> {
    let first = &points[0];
    let threshold = KNEE_MARGINAL_SHARE * first.throughput / f64::from(first.concurrency);
    points.windows(2).find_map(|w| {
        let added = f64::from(w[1].concurrency - w[0].concurrency);
        let gain = (w[1].throughput - w[0].throughput) / added;
        (gain < threshold).then_some(w[0].concurrency)
    })
}

fn collapse(first: &Point, last: &Point, peak: f64) -> Option<Collapse> {
    let retrograde = last.throughput < first.throughput;
    if !(retrograde || last.throughput < COLLAPSE_PEAK_SHARE * peak) {
        return None;
    }
    Some(Collapse {
        concurrency: last.concurrency,
        throughput: last.throughput,
        pct_of_peak: 100.0 * last.throughput / peak,
        pct_of_first: (first.throughput > 0.0).then(|| 100.0 * last.throughput / first.throughput),
        retrograde,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_step_far_above_linear_is_a_superlinear_start() {
        // The default demo on a 2-vCPU VM: 1 client 5,258/s, 2 clients 15,900/s.
        let demo = Series::from_pairs("demo", &[(1, 5258.0), (2, 15900.0), (5, 16176.0), (10, 15293.0), (20, 14512.0)]);
        let s = Curve::of(&demo).unwrap().superlinear_start.unwrap();
        assert_eq!((s.from, s.to, s.linear_pct), (1, 2, 200.0));
        assert!((s.scaling_pct - 302.4).abs() < 0.1, "{s:?}");
        // Linear, or a little above it (noise), is not.
        for second in [200.0, 230.0] {
            let c = Curve::of(&Series::from_pairs("x", &[(1, 100.0), (2, second), (4, 300.0)])).unwrap();
            assert_eq!(c.superlinear_start, None, "{second}");
        }
        // Intervals: an excess inside the noise is not called.
        let ci = |x: f64, pm: f64| Some(Ci95 { low: x * (1.0 - pm), high: x * (1.0 + pm), method: stats::Method::BatchMeans, n: 5 });
        let noisy = Series::new(
            "n",
            vec![
                Point { throughput_ci: ci(100.0, 0.3), ..Point::new(1, 100.0) },
                Point { throughput_ci: ci(250.0, 0.3), ..Point::new(2, 250.0) },
            ],
        );
        assert_eq!(Curve::of(&noisy).unwrap().superlinear_start, None);
    }

    fn g5_tiger() -> Series {
        Series::from_pairs("G5 Tiger", &[(1, 192.0), (2, 274.0), (5, 113.0), (10, 62.0), (20, 50.0), (35, 50.0), (50, 47.0)])
    }

    #[test]
    fn a_rate_sweeps_knee_is_the_last_rate_before_latency_departs() {
        let point = |rate: f64, x: f64, p99: f64| Point { offered_rate_per_s: Some(rate), p99_ms: Some(p99), ..Point::new(rate as u32, x) };
        // p99 0.5 ms at low load; 1.9 ms is within 3x + 1 ms; 9 ms departs.
        let s = Series::new("r", vec![point(1000.0, 1000.0, 0.5), point(3000.0, 2990.0, 1.9), point(5000.0, 4990.0, 9.0)]);
        let c = Curve::of(&s).unwrap();
        assert_eq!((c.knee_concurrency, c.knee_marginal_concurrency, c.peak_concurrency), (3000, None, 5000));
        // Completions behind the offered rate depart too, whatever the latency.
        let s = Series::new("r", vec![point(1000.0, 1000.0, 0.5), point(3000.0, 2500.0, 0.6), point(5000.0, 2500.0, 0.7)]);
        assert_eq!(Curve::of(&s).unwrap().knee_concurrency, 1000);
        // Never departs: the knee is beyond the sweep, at its last rate.
        let s = Series::new("r", vec![point(1000.0, 1000.0, 0.5), point(3000.0, 3000.0, 0.6)]);
        assert_eq!(Curve::of(&s).unwrap().knee_concurrency, 3000);
    }

    #[test]
    fn tiger_collapses_retrograde() {
        let c = Curve::of(&g5_tiger()).unwrap();
        assert_eq!((c.peak, c.peak_concurrency), (274.0, 2));
        assert_eq!(c.knee_concurrency, 2);
        // 1 -> 2 gains 82/client (>= 19.2), 2 -> 5 loses: the knee is at 2.
        assert_eq!(c.knee_marginal_concurrency, Some(2));
        let col = c.collapse.unwrap();
        assert_eq!((col.concurrency, col.throughput), (50, 47.0));
        assert!((col.pct_of_peak - 17.153).abs() < 0.01, "{}", col.pct_of_peak);
        assert!((col.pct_of_first.unwrap() - 24.479).abs() < 0.01);
        assert!(col.retrograde);
    }

    #[test]
    fn opteron_has_knee_and_no_collapse() {
        let s =
            Series::from_pairs("Opteron Linux", &[(1, 290.0), (2, 438.0), (5, 543.0), (10, 629.0), (20, 670.0), (35, 650.0), (50, 669.0)]);
        let c = Curve::of(&s).unwrap();
        assert_eq!((c.peak, c.peak_concurrency), (670.0, 20));
        assert_eq!(c.knee_concurrency, 10); // 629 >= 603 = 90 % of 670; 543 is not
        assert_eq!(c.knee_marginal_concurrency, Some(5)); // 5 -> 10 gains 17.2/client < 29
        assert_eq!(c.collapse, None);
    }

    #[test]
    fn collapse_below_70pct_of_peak_without_retrograde() {
        let s = Series::from_pairs("x", &[(1, 100.0), (2, 200.0), (4, 400.0), (8, 250.0)]);
        let col = Curve::of(&s).unwrap().collapse.unwrap();
        assert!(!col.retrograde);
        assert_eq!(col.pct_of_peak, 62.5);
        assert_eq!(col.pct_of_first, Some(250.0));
        // 71 % of the peak at the end is not a collapse.
        let s = Series::from_pairs("x", &[(1, 100.0), (2, 200.0), (4, 400.0), (8, 284.0)]);
        assert_eq!(Curve::of(&s).unwrap().collapse, None);
    }

    #[test]
    fn linear_curve_has_no_marginal_knee() {
        let pairs: Vec<(u32, f64)> = (1..=10).map(|n| (n, 100.0 * f64::from(n))).collect();
        let c = Curve::of(&Series::from_pairs("lin", &pairs)).unwrap();
        assert_eq!(c.peak_concurrency, 10);
        assert_eq!(c.knee_concurrency, 9);
        assert_eq!(c.knee_marginal_concurrency, None);
        assert_eq!(c.collapse, None);
    }

    #[test]
    fn single_step_and_flat_curves() {
        let c = Curve::of(&Series::from_pairs("one", &[(8, 500.0)])).unwrap();
        assert_eq!((c.peak_concurrency, c.knee_concurrency, c.knee_marginal_concurrency), (8, 8, None));
        assert_eq!(c.collapse, None);
        let flat = Curve::of(&Series::from_pairs("flat", &[(1, 50.0), (2, 50.0), (4, 50.0)])).unwrap();
        assert_eq!((flat.peak_concurrency, flat.knee_concurrency), (1, 1));
        assert_eq!(flat.knee_marginal_concurrency, Some(1));
        assert_eq!(flat.collapse, None);
    }

    /// A level measured with an interval of ±`h` around `x`.
    fn noisy(n: u32, x: f64, h: f64) -> Point {
        let ci = Ci95 { low: x - h, high: x + h, method: stats::Method::StudentT, n: 3 };
        Point { throughput_ci: Some(ci), repeats: vec![x - h / 2.0, x, x + h / 2.0], ..Point::new(n, x) }
    }

    #[test]
    fn levels_whose_interval_overlaps_the_peaks_are_within_noise() {
        let s = Series::new(
            "x",
            vec![
                noisy(1, 10_000.0, 300.0),
                noisy(5, 29_800.0, 900.0),
                noisy(10, 30_600.0, 900.0),
                noisy(20, 30_100.0, 800.0),
                noisy(50, 25_000.0, 500.0),
            ],
        );
        let c = Curve::of(&s).unwrap();
        assert_eq!((c.peak_concurrency, c.within_noise.clone()), (10, vec![5, 10, 20]));
        assert!(!c.flat_within_noise);
        assert_eq!(c.peak_ci.unwrap().low, 29_700.0);
        assert_eq!(c.collapse, None, "82 % of the peak is not a collapse anyway");
    }

    #[test]
    fn a_drop_inside_the_intervals_is_not_a_collapse() {
        // 65 % of the peak by the share rule, but the intervals overlap.
        let s = Series::new("x", vec![noisy(1, 100.0, 10.0), noisy(2, 200.0, 80.0), noisy(4, 130.0, 60.0)]);
        let c = Curve::of(&s).unwrap();
        assert_eq!(c.collapse, None);
        assert_eq!(c.collapse_within_noise.as_ref().map(|k| k.concurrency), Some(4));
        assert!(!c.flat_within_noise, "the first level differs from the peak");
        // Clear of the peak's interval: called.
        let s = Series::new("x", vec![noisy(1, 100.0, 10.0), noisy(2, 200.0, 10.0), noisy(4, 130.0, 10.0)]);
        let c = Curve::of(&s).unwrap();
        assert_eq!(c.collapse.as_ref().map(|k| k.concurrency), Some(4));
        assert_eq!(c.collapse_within_noise, None);
        // Every level within the peak's noise: flat, nothing called.
        let s = Series::new("x", vec![noisy(1, 100.0, 40.0), noisy(2, 120.0, 40.0), noisy(4, 80.0, 40.0)]);
        let c = Curve::of(&s).unwrap();
        assert!(c.flat_within_noise);
        assert_eq!((c.collapse.clone(), c.within_noise.clone()), (None, vec![1, 2, 4]));
        // Without intervals the rules are as before (imported series).
        let s = Series::from_pairs("x", &[(1, 100.0), (2, 200.0), (4, 130.0)]);
        let c = Curve::of(&s).unwrap();
        assert!(c.collapse.is_some() && c.within_noise.is_empty() && !c.flat_within_noise);
    }

    #[test]
    fn latency_growth_is_relative_to_first_step_and_missing_stays_missing() {
        let mut a = Point::new(1, 100.0);
        a.p99_ms = Some(2.0);
        let mut b = Point::new(4, 300.0);
        b.p99_ms = Some(7.0);
        b.p50_ms = Some(1.0);
        let c = Curve::of(&Series::new("x", vec![b, a])).unwrap();
        assert_eq!(c.latency_growth[0].p99_x, Some(1.0));
        assert_eq!(c.latency_growth[1].p99_x, Some(3.5));
        assert_eq!(c.latency_growth[1].p50_x, None); // no p50 at the first step
    }
}
