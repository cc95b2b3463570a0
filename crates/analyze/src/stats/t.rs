//! Student's t quantiles, the multiplier of every interval here.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The 97.5 % quantile of the standard normal: the limit of [`t975`] as the
/// degrees of freedom grow.
pub const Z975: f64 = 1.959_963_984_540_054;

/// Degrees of freedom from which the Cornish–Fisher series replaces
/// `statrs`: its inverse (through the incomplete beta) agrees with the series
/// to 1e-12 from 200 to 10⁴ df, then drifts (t975(9.9e6) came out 0.76).
const SERIES_DF: f64 = 1000.0;

/// The two-sided 97.5 % quantile of Student's t with `df` degrees of freedom
/// (`df` may be fractional, as Welch–Satterthwaite gives it): 12.706 at 1,
/// 2.228 at 10, 1.960 at infinity.
///
/// Below 1000 df, `statrs`' inverse CDF (exact to 1e-14 at 1 and 2 df);
/// from there the Cornish–Fisher expansion about the normal quantile, whose
/// error at 1000 df is below 1e-15. `df` ≤ 0 or NaN rests on no degrees of
/// freedom and gives +∞: an unbounded interval, never a NaN one.
pub fn t975(df: f64) -> f64 {
    if df.is_nan() || df <= 0.0 {
        return f64::INFINITY;
    }
    if df >= SERIES_DF {
        return cornish_fisher(df);
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) => t.inverse_cdf(0.975),
        Err(_) => f64::INFINITY,
    }
}

/// t975 by the Cornish–Fisher expansion in 1/df to the fourth order
/// (Abramowitz and Stegun 26.7.5); the normal quantile at infinite df.
fn cornish_fisher(df: f64) -> f64 {
    let z = Z975;
    let g1 = (z.powi(3) + z) / 4.0;
    let g2 = (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / 96.0;
    let g3 = (3.0 * z.powi(7) + 19.0 * z.powi(5) + 17.0 * z.powi(3) - 15.0 * z) / 384.0;
    let g4 = (79.0 * z.powi(9) + 776.0 * z.powi(7) + 1482.0 * z.powi(5) - 1920.0 * z.powi(3) - 945.0 * z) / 92160.0;
    let v = 1.0 / df;
    z + v * (g1 + v * (g2 + v * (g3 + v * g4)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_values() {
        // The textbook table, three decimals.
        let table = [(1.0, 12.706), (2.0, 4.303), (3.0, 3.182), (5.0, 2.571), (10.0, 2.228), (30.0, 2.042), (f64::INFINITY, 1.960)];
        for (df, want) in table {
            let got = t975(df);
            assert!((got - want).abs() < 5e-4, "t975({df}) = {got}, table {want}");
        }
        // Closed forms: tan(0.475π) at 1 df, 0.95/√(2·0.975·0.025) at 2 df.
        assert!((t975(1.0) - (0.475 * std::f64::consts::PI).tan()).abs() < 1e-9);
        assert!((t975(2.0) - 0.95 / 0.04875f64.sqrt()).abs() < 1e-9);
        // More digits: 100 df is 1.983971518523552.
        assert!((t975(100.0) - 1.983_971_518_523_552).abs() < 1e-9);
    }

    #[test]
    fn the_two_computations_meet_and_large_df_tend_to_the_normal() {
        assert!((t975(999.999) - cornish_fisher(999.999)).abs() < 1e-10);
        assert!((cornish_fisher(200.0) - 1.971_896_223_633).abs() < 1e-10);
        let mut last = t975(1.0);
        for df in [1.5, 2.0, 4.0, 4.5, 5.0, 30.0, 999.0, 1000.0, 1e4, 1e5, 1e6, 1e7, 1e12] {
            let t = t975(df);
            assert!(t < last && t > Z975, "t975 not falling towards the normal at {df}: {t}");
            last = t;
        }
        assert!((t975(1e6) - Z975 - 2.37e-6).abs() < 1e-8);
    }

    #[test]
    fn no_degrees_of_freedom_is_unbounded_not_nan() {
        assert_eq!(t975(0.0), f64::INFINITY);
        assert_eq!(t975(-3.0), f64::INFINITY);
        assert_eq!(t975(f64::NAN), f64::INFINITY);
        assert!(t975(0.3).is_finite() && t975(0.3) > t975(1.0));
        assert_eq!(t975(f64::INFINITY), Z975);
    }
}
