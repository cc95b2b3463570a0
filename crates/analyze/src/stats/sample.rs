//! Sample moments and checks shared by the estimators.

use super::interval::{Ci95, Method, NoInterval};
use super::t::t975;

/// `Err` naming `what` when `xs` is empty or holds a NaN or an infinity: an
/// interval over such values would be NaN, which no caller can show.
pub fn check_finite(xs: &[f64], what: &str) -> Result<(), NoInterval> {
    if xs.is_empty() {
        return Err(NoInterval(format!("no {what}")));
    }
    match xs.iter().position(|x| !x.is_finite()) {
        Some(i) => Err(NoInterval(format!("{what}: value {} of {} is {}, not a number an interval can use", i + 1, xs.len(), xs[i]))),
        None => Ok(()),
    }
}

/// Arithmetic mean; `xs` is not empty.
pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample variance (n − 1 in the denominator); 0 for fewer than 2 values.
pub fn variance(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64
}

/// Lag-1 autocorrelation (the usual estimator: lagged products over the
/// total sum of squares, both about the mean); 0 when the values do not vary,
/// where there is no correlation to speak of.
pub fn lag1_autocorrelation(xs: &[f64]) -> f64 {
    if xs.len() < 3 {
        return 0.0;
    }
    let m = mean(xs);
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    if ss == 0.0 {
        return 0.0;
    }
    xs.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum::<f64>() / ss
}

/// The t interval `centre ± t975(df) × se`: the shape every method ends in.
pub fn t_interval(centre: f64, se: f64, df: f64, method: Method, n: usize) -> Ci95 {
    let half = t975(df) * se;
    Ci95 { low: centre - half, high: centre + half, method, n: u32::try_from(n).unwrap_or(u32::MAX) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&xs), 5.0);
        assert!((variance(&xs) - 32.0 / 7.0).abs() < 1e-12);
        assert_eq!(variance(&[3.0]), 0.0);
    }

    #[test]
    fn autocorrelation_of_patterns() {
        // Alternating values: strongly negative; a ramp: strongly positive.
        assert!(lag1_autocorrelation(&[1.0, -1.0, 1.0, -1.0, 1.0, -1.0]) < -0.8);
        assert!(lag1_autocorrelation(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]) > 0.6);
        assert_eq!(lag1_autocorrelation(&[3.0; 6]), 0.0);
    }

    #[test]
    fn bad_values_are_named() {
        assert_eq!(check_finite(&[], "repeats"), Err(NoInterval("no repeats".into())));
        let e = check_finite(&[1.0, f64::NAN], "repeats").unwrap_err();
        assert!(e.0.contains("value 2 of 2 is NaN"), "{e}");
        assert!(check_finite(&[1.0, 2.0], "repeats").is_ok());
    }
}
