//! Percentages as published tables print them.

/// `value` rounded to a whole number, half away from zero (2.5 → 3,
/// −2.5 → −3), the way published tables round; `None` for non-finite values.
///
/// A tiny relative nudge away from zero first keeps values that are exactly
/// .5 in decimal (but slightly below it in binary, like 100 × 0.145) rounding up.
pub fn round_half_away(value: f64) -> Option<i64> {
    if !value.is_finite() {
        return None;
    }
    let nudged = value + value.signum() * value.abs().max(1.0) * 1e-12;
    Some(nudged.round() as i64)
}

/// 100 × a / b, the scaling of `a` relative to its base `b`; `None` when `b` is 0.
pub fn ratio_pct(a: f64, b: f64) -> Option<f64> {
    (b != 0.0).then(|| 100.0 * a / b)
}

/// 100 × (a / b − 1), the delta of `a` versus `b`; `None` when `b` is 0.
pub fn delta_pct(a: f64, b: f64) -> Option<f64> {
    (b != 0.0).then(|| 100.0 * (a - b) / b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_half_away_from_zero() {
        assert_eq!(round_half_away(2.5), Some(3));
        assert_eq!(round_half_away(-2.5), Some(-3));
        assert_eq!(round_half_away(2.49), Some(2));
        assert_eq!(round_half_away(-0.4), Some(0));
        assert_eq!(round_half_away(100.0 * 0.145 * 100.0 / 100.0), Some(15));
        assert_eq!(round_half_away(f64::NAN), None);
    }

    #[test]
    fn delta_and_ratio() {
        assert_eq!(delta_pct(286.0, 245.0).and_then(round_half_away), Some(17));
        assert_eq!(ratio_pct(47.0, 192.0).and_then(round_half_away), Some(24));
        assert_eq!(delta_pct(1.0, 0.0), None);
    }
}
