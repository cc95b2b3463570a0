//! Intervals from repeated measurements of one figure (`--repeats`): each
//! repeat is a whole window at the same level, so repeats are independent in
//! a way a window's seconds are not.

use super::interval::{Estimate, Method, NoInterval};
use super::sample::{check_finite, mean, t_interval, variance};

/// Student-t 95 % CI of the mean of repeated measurements (n ≥ 2, n − 1 df).
/// Assumes the repeats are independent and roughly normal; with 2 repeats
/// t975 is 12.7, so the interval is honest but very wide (3 repeats: 4.3).
pub fn mean_of_repeats(xs: &[f64]) -> Estimate {
    if xs.len() < 2 {
        return Err(NoInterval(format!(
            "{} repeat{}: an interval over repeats needs at least 2 (3 or more to be useful); use --repeats 3",
            xs.len(),
            if xs.len() == 1 { "" } else { "s" }
        )));
    }
    check_finite(xs, "repeats")?;
    let n = xs.len();
    let se = (variance(xs) / n as f64).sqrt();
    Ok(t_interval(mean(xs), se, (n - 1) as f64, Method::StudentT, n))
}

/// Coefficient of variation in % (sample sd / |mean|): how much repeats
/// scatter, comparable across figures of any size. `None` for fewer than 2
/// values, a non-finite value or a mean of 0.
pub fn cv_pct(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 || xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let m = mean(xs);
    if m == 0.0 {
        return None;
    }
    let cv = 100.0 * variance(xs).sqrt() / m.abs();
    cv.is_finite().then_some(cv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_repeats() {
        // mean 10, sd 1, se 1/√3, t975(2) = 4.303.
        let ci = mean_of_repeats(&[9.0, 10.0, 11.0]).unwrap();
        let half = 4.302_652_729_911_275 / 3f64.sqrt();
        assert!((ci.low - (10.0 - half)).abs() < 1e-9 && (ci.high - (10.0 + half)).abs() < 1e-9, "{ci:?}");
        assert_eq!((ci.method, ci.n), (Method::StudentT, 3));
    }

    #[test]
    fn too_few_or_bad_repeats() {
        assert!(mean_of_repeats(&[5.0]).unwrap_err().0.starts_with("1 repeat:"));
        assert!(mean_of_repeats(&[]).unwrap_err().0.starts_with("0 repeats:"));
        assert!(mean_of_repeats(&[5.0, f64::NAN]).is_err());
    }

    #[test]
    fn coefficient_of_variation() {
        assert!((cv_pct(&[9.0, 10.0, 11.0]).unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(cv_pct(&[4.0]), None);
        assert_eq!(cv_pct(&[-1.0, 1.0]), None);
        assert_eq!(cv_pct(&[1.0, f64::INFINITY]), None);
        assert_eq!(cv_pct(&[7.0, 7.0]), Some(0.0));
    }
}
