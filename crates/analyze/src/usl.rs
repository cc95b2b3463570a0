//! Fit of Gunther's Universal Scalability Law to a run:
//! X(N) = λN / (1 + σ(N−1) + κN(N−1)), with σ (contention) and κ (coherency) >= 0.
//!
//! The least-squares work is done by the `levenberg-marquardt` crate
//! (MINPACK's algorithm), on relative residuals (X_model − X)/X: noise grows
//! with throughput, and on noisy synthetic series this recovers σ and κ
//! markedly more often than plain residuals (see `weights` in the source).
//!
//! The bounds σ, κ >= 0 are handled as an active set: the model is fitted
//! with σ and κ free, with κ = 0, with σ = 0 and with both 0; the best fit
//! that respects the bounds wins, and a simpler model wins ties (within a
//! relative 1e-9 of the residual), so linear data gives exactly σ = κ = 0 and
//! flat data exactly κ = 0. Squaring parameters instead would never reach 0
//! and would report a finite optimum N* for data that has none.
//!
//! The initial guess takes λ from the first step (X(N₁)/N₁) and σ, κ from the
//! linearised law N·λ/X − 1 = σ(N−1) + κN(N−1), solved by ordinary least squares.
//!
//! [`fit`] reports a fit only when it means something (see [`check`]): the
//! least-squares optimum always exists, but on a series the law cannot
//! describe (a collapse steeper than contention allows, noise around a
//! trend) its σ leaves [0, 1] or its curve explains little of the data, and
//! drawing or quoting it would mislead. [`fit_unchecked`] gives the optimum
//! whatever it is.

use crate::series::{Series, SeriesError};
use levenberg_marquardt::{LeastSquaresProblem, LevenbergMarquardt};
use nalgebra::{DMatrix, DVector, Dyn, Owned};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Fewest steps a fit is attempted on: three parameters need at least one
/// more point than they have, or any curve fits exactly and says nothing.
pub const MIN_POINTS: usize = 4;

/// Least R² for a usable fit: below it the curve explains less than 80 % of
/// the throughputs' variance and its σ, κ and N* are not findings.
pub const MIN_R2: f64 = 0.8;

/// Largest root-mean-square relative residual under which a fit is usable
/// even with a low (or no) R²: a flat series (a server serialized from the
/// first client) has almost no variance to explain, so its R² is the noise's,
/// while a curve within 5 % of every step still describes it.
pub const MAX_RMS_RELATIVE: f64 = 0.05;

/// σ is a share of serialized work: above 1 (beyond rounding) the law's
/// contention term is bent to mimic a collapse it cannot express.
const SIGMA_MAX: f64 = 1.0 + 1e-6;

/// The fitted law and what follows from it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UslFit {
    /// Throughput of one client without any contention (per-client capacity).
    pub lambda: f64,
    /// Contention: the share of work that is serialized (queueing on a shared resource).
    pub sigma: f64,
    /// Coherency: the cost of keeping shared state consistent, growing with
    /// N²; any κ > 0 makes throughput retrograde past N*.
    pub kappa: f64,
    /// Coefficient of determination: the share of the measured throughputs'
    /// variance that the fitted curve explains (1 − SSE/SST on plain
    /// residuals); `None` when every step has the same throughput (there is
    /// no variance to explain).
    pub r2: Option<f64>,
    /// Predicted optimum concurrency N* = sqrt((1 − σ)/κ), at least 1;
    /// `None` when κ = 0 (throughput never falls: no optimum).
    pub n_opt: Option<f64>,
    /// Predicted throughput at [`UslFit::n_opt`].
    pub x_at_n_opt: Option<f64>,
    /// When κ = 0 and σ > 0: the ceiling λ/σ that throughput approaches
    /// without reaching it. `None` otherwise.
    pub asymptote: Option<f64>,
    /// Steps the fit used.
    pub points: usize,
}

/// Why no fit is given.
#[derive(Debug, Error, PartialEq)]
pub enum UslError {
    /// Too few steps to say anything about three parameters.
    #[error("USL fit needs at least {MIN_POINTS} steps, `{label}` has {got}: sweep more concurrencies")]
    TooFewPoints { label: String, got: usize },
    /// The series itself cannot be analysed.
    #[error(transparent)]
    Series(#[from] SeriesError),
    /// The solver failed on every candidate model.
    #[error("USL fit of `{label}` did not converge: {reason}")]
    NoConvergence { label: String, reason: String },
    /// The optimum exists but means nothing (see [`check`]); `fit` is that optimum.
    #[error("`{label}`: {reason}")]
    Unusable { label: String, reason: String, fit: Box<UslFit> },
}

impl UslFit {
    /// Throughput the law predicts at `n` clients.
    pub fn predict(&self, n: f64) -> f64 {
        usl(self.lambda, self.sigma, self.kappa, n)
    }
}

fn usl(lambda: f64, sigma: f64, kappa: f64, n: f64) -> f64 {
    lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

/// Which of σ and κ a candidate model lets vary (the others are held at 0).
#[derive(Clone, Copy)]
struct Free {
    sigma: bool,
    kappa: bool,
}

/// The least-squares problem for one candidate: parameters are λ then the free ones.
struct Problem<'a> {
    n: &'a [f64],
    x: &'a [f64],
    w: &'a [f64],
    free: Free,
    params: DVector<f64>,
}

impl Problem<'_> {
    fn lsk(&self) -> (f64, f64, f64) {
        let p = &self.params;
        let mut i = 1;
        let mut next = |on: bool| {
            if on {
                i += 1;
                p[i - 1]
            } else {
                0.0
            }
        };
        let sigma = next(self.free.sigma);
        let kappa = next(self.free.kappa);
        (p[0], sigma, kappa)
    }
}

impl LeastSquaresProblem<f64, Dyn, Dyn> for Problem<'_> {
    type ResidualStorage = Owned<f64, Dyn>;
    type JacobianStorage = Owned<f64, Dyn, Dyn>;
    type ParameterStorage = Owned<f64, Dyn>;

    fn set_params(&mut self, p: &DVector<f64>) {
        self.params.copy_from(p);
    }

    fn params(&self) -> DVector<f64> {
        self.params.clone()
    }

    fn residuals(&self) -> Option<DVector<f64>> {
        let (l, s, k) = self.lsk();
        Some(DVector::from_iterator(self.n.len(), self.n.iter().zip(self.x).zip(self.w).map(|((&n, &x), &w)| w * (usl(l, s, k, n) - x))))
    }

    fn jacobian(&self) -> Option<DMatrix<f64>> {
        let (l, s, k) = self.lsk();
        let mut j = DMatrix::zeros(self.n.len(), self.params.len());
        for (row, (&n, &w)) in self.n.iter().zip(self.w).enumerate() {
            let d = 1.0 + s * (n - 1.0) + k * n * (n - 1.0);
            j[(row, 0)] = w * n / d;
            let dd = -w * l * n / (d * d); // derivative of the model with respect to the denominator
            let mut col = 1;
            if self.free.sigma {
                j[(row, col)] = dd * (n - 1.0);
                col += 1;
            }
            if self.free.kappa {
                j[(row, col)] = dd * n * (n - 1.0);
            }
        }
        Some(j)
    }
}

/// Initial σ, κ from the linearised law, given λ; clamped to >= 0.
fn linear_guess(n: &[f64], x: &[f64], lambda: f64) -> (f64, f64) {
    // Normal equations of y = σa + κb with a = N−1, b = N(N−1), y = Nλ/X − 1.
    let (mut aa, mut ab, mut bb, mut ay, mut by) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (&n, &x) in n.iter().zip(x) {
        if x <= 0.0 {
            continue;
        }
        let (a, b, y) = (n - 1.0, n * (n - 1.0), n * lambda / x - 1.0);
        aa += a * a;
        ab += a * b;
        bb += b * b;
        ay += a * y;
        by += b * y;
    }
    let det = aa * bb - ab * ab;
    if det.abs() <= f64::EPSILON * aa * bb || !det.is_finite() {
        return (0.0, 0.0);
    }
    let sigma = (ay * bb - by * ab) / det;
    let kappa = (aa * by - ab * ay) / det;
    (sigma.max(0.0), kappa.max(0.0))
}

/// Residual weights 1/X: the fit minimises relative errors, because
/// measurement noise grows with throughput (a few % of it); plain residuals
/// let the busiest steps dominate and, measured on series with 2 % noise,
/// recover σ and κ within 5 % markedly less often. A step with X = 0 gets the
/// weight of the mean throughput instead of an infinite one.
fn weights(x: &[f64], mean: f64) -> Vec<f64> {
    let fallback = if mean > 0.0 { 1.0 / mean } else { 1.0 };
    x.iter().map(|&x| if x > 0.0 { 1.0 / x } else { fallback }).collect()
}

/// Fits the USL to `series` and returns the fit only when it is usable
/// ([`check`]); otherwise [`UslError::Unusable`] says why.
pub fn fit(series: &Series) -> Result<UslFit, UslError> {
    let fit = fit_unchecked(series)?;
    let points = series.checked_points()?;
    match check(&fit, &points) {
        Ok(()) => Ok(fit),
        Err(reason) => Err(UslError::Unusable { label: series.label.clone(), reason, fit: Box::new(fit) }),
    }
}

/// Why `fit` of `points` is not a finding, or `Ok` when it is: λ > 0, σ in
/// [0, 1], κ >= 0, and the curve follows the data: R² never below 0 (worse
/// than the mean), and R² >= [`MIN_R2`] or the steps within a root-mean-square
/// [`MAX_RMS_RELATIVE`] of the curve (a flat series has almost no variance for
/// R² to measure). Every failed condition is named. [`MIN_POINTS`] is checked by
/// [`fit_unchecked`].
pub fn check(fit: &UslFit, points: &[crate::series::Point]) -> Result<(), String> {
    let mut reasons = Vec::new();
    if !(fit.lambda.is_finite() && fit.lambda > 0.0) {
        reasons.push("λ is 0: no step has throughput".to_string());
    }
    if !(0.0..=SIGMA_MAX).contains(&fit.sigma) {
        reasons.push(format!("σ {:.2} is outside [0, 1] (throughput falls faster than the law can describe)", fit.sigma));
    }
    if !(fit.kappa.is_finite() && fit.kappa >= 0.0) {
        reasons.push(format!("κ {} is negative", fit.kappa));
    }
    if fit.r2.is_some_and(|r| r < 0.0) {
        reasons.push(format!("R² {:.2} is below 0: the curve fits worse than the mean throughput", fit.r2.unwrap_or_default()));
    } else {
        let rel: Vec<f64> = points
            .iter()
            .filter(|p| p.throughput > 0.0)
            .map(|p| (fit.predict(f64::from(p.concurrency)) - p.throughput) / p.throughput)
            .collect();
        let rms = if rel.is_empty() { f64::INFINITY } else { (rel.iter().map(|r| r * r).sum::<f64>() / rel.len() as f64).sqrt() };
        let r2_ok = fit.r2.is_some_and(|r| r >= MIN_R2);
        if !r2_ok && rms > MAX_RMS_RELATIVE {
            let r2 = fit.r2.map_or_else(|| "undefined".to_string(), |r| format!("{r:.2}"));
            reasons.push(format!(
                "R² {r2} is below {MIN_R2} and the curve is {:.0} % off the steps (RMS): it does not follow the data",
                100.0 * rms
            ));
        }
    }
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(reasons.join("; "))
    }
}

/// Fits the USL to `series` (at least [`MIN_POINTS`] steps) and returns the
/// least-squares optimum whether or not it is usable ([`fit`] checks).
pub fn fit_unchecked(series: &Series) -> Result<UslFit, UslError> {
    let points = series.checked_points()?;
    if points.len() < MIN_POINTS {
        return Err(UslError::TooFewPoints { label: series.label.clone(), got: points.len() });
    }
    let n: Vec<f64> = points.iter().map(|p| f64::from(p.concurrency)).collect();
    let x: Vec<f64> = points.iter().map(|p| p.throughput).collect();
    let mut lambda0 = x[0] / n[0];
    if lambda0 <= 0.0 {
        lambda0 = n.iter().zip(&x).map(|(n, x)| x / n).fold(0.0, f64::max);
    }
    let (sigma0, kappa0) = linear_guess(&n, &x, lambda0);
    let mean = x.iter().sum::<f64>() / x.len() as f64;
    let w = weights(&x, mean);

    // Simplest model first, so that ties keep it.
    let candidates = [
        Free { sigma: false, kappa: false },
        Free { sigma: true, kappa: false },
        Free { sigma: false, kappa: true },
        Free { sigma: true, kappa: true },
    ];
    let mut best: Option<((f64, f64, f64), f64)> = None;
    let mut failure = String::from("no candidate converged");
    for free in candidates {
        let mut p = vec![lambda0];
        if free.sigma {
            p.push(sigma0);
        }
        if free.kappa {
            p.push(kappa0);
        }
        let problem = Problem { n: &n, x: &x, w: &w, free, params: DVector::from_vec(p) };
        let (solved, report) = LevenbergMarquardt::new().with_patience(400).minimize(problem);
        if !report.termination.was_successful() {
            failure = format!("{:?}", report.termination);
            continue;
        }
        let (l, s, k) = solved.lsk();
        // Tiny negative values are rounding around a bound that the model
        // with that parameter fixed at 0 represents exactly.
        if !(l.is_finite() && s > -1e-12 && k > -1e-15) {
            continue;
        }
        let (s, k) = (s.max(0.0), k.max(0.0));
        let sse: f64 = n.iter().zip(&x).zip(&w).map(|((&n, &x), &w)| (w * (usl(l, s, k, n) - x)).powi(2)).sum();
        let better = match best {
            None => true,
            Some((_, best_sse)) => sse < best_sse * (1.0 - 1e-9) - 1e-12,
        };
        if better {
            best = Some(((l, s, k), sse));
        }
    }
    let ((lambda, sigma, kappa), _) = best.ok_or_else(|| UslError::NoConvergence { label: series.label.clone(), reason: failure })?;

    // R² on plain residuals: the share of the throughput variance the curve explains.
    let sse: f64 = n.iter().zip(&x).map(|(&n, &x)| (usl(lambda, sigma, kappa, n) - x).powi(2)).sum();
    let sst: f64 = x.iter().map(|x| (x - mean).powi(2)).sum();
    let r2 = (sst > 0.0).then(|| 1.0 - sse / sst);
    let n_opt = (kappa > 0.0).then(|| ((1.0 - sigma).max(0.0) / kappa).sqrt().max(1.0));
    let fit = UslFit {
        lambda,
        sigma,
        kappa,
        r2,
        n_opt,
        x_at_n_opt: None,
        asymptote: (kappa == 0.0 && sigma > 0.0).then(|| lambda / sigma),
        points: points.len(),
    };
    Ok(UslFit { x_at_n_opt: n_opt.map(|n| fit.predict(n)), ..fit })
}
