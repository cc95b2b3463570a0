//! A versus B: the delta in % with its interval, and what it means.
//!
//! Deltas are ratios, so both methods work on the log scale, where a ratio
//! is a difference and noise proportional to the level is even; the interval
//! is transformed back and is asymmetric in % (−50 % and +100 % are the same
//! distance in log).

use super::interval::{Change, Ci95, Method, NoInterval};
use super::sample::{check_finite, mean, t_interval, variance};

/// Paired A/B: pairs `(x_A, x_B)` measured side by side (interleaved ABBA
/// windows). Returns the delta in %, 100 × (exp(mean ln(a/b)) − 1), and its
/// 95 % CI in % (t interval of the log ratios, n − 1 df, transformed back).
/// Needs ≥ 2 pairs, all values > 0 and finite.
///
/// Pairing removes what both sides of a pair share, the machine's state at
/// that moment; an ABBA order also cancels linear drift from the mean, while
/// the drift within each pair stays in the spread (docs/statistics.md).
pub fn paired_delta_pct(pairs: &[(f64, f64)]) -> Result<(f64, Ci95), NoInterval> {
    if pairs.len() < 2 {
        return Err(NoInterval(format!(
            "{} A/B pair{}: a paired delta needs at least 2",
            pairs.len(),
            if pairs.len() == 1 { "" } else { "s" }
        )));
    }
    for (i, &(a, b)) in pairs.iter().enumerate() {
        positive(a, &format!("pair {} of {}, A", i + 1, pairs.len()))?;
        positive(b, &format!("pair {} of {}, B", i + 1, pairs.len()))?;
    }
    let logs: Vec<f64> = pairs.iter().map(|&(a, b)| (a / b).ln()).collect();
    check_finite(&logs, "log ratios")?;
    let n = logs.len();
    let log_ci = t_interval(mean(&logs), (variance(&logs) / n as f64).sqrt(), (n - 1) as f64, Method::PairedT, n);
    back_to_pct(mean(&logs), log_ci)
}

/// Two independent figures (single runs, or two runs' repeats), each a point
/// with its interval: the delta 100 × (a/b − 1) and its 95 % CI by Welch on
/// the log scale. Each side's standard error is recovered from its interval
/// (half-width over the t quantile of its method's df, see
/// [`Ci95::std_error`]) and taken to the log scale as se/point; the df are
/// Welch–Satterthwaite's. Both points must be > 0 and finite, both intervals finite.
///
/// The interval covers the noise inside each run only: a drift of the
/// machine between two separate runs is not measured and reads as a delta.
pub fn independent_delta_pct(a: (f64, &Ci95), b: (f64, &Ci95)) -> Result<(f64, Ci95), NoInterval> {
    positive(a.0, "A")?;
    positive(b.0, "B")?;
    let (sa, dfa) = log_std_error(a, "A")?;
    let (sb, dfb) = log_std_error(b, "B")?;
    let d = (a.0 / b.0).ln();
    let var = sa * sa + sb * sb;
    let n = a.1.n.saturating_add(b.1.n);
    // Two zero-width intervals: no noise was seen on either side.
    let df = if var > 0.0 { var * var / (sa.powi(4) / dfa + sb.powi(4) / dfb) } else { dfa + dfb };
    let log_ci = t_interval(d, var.sqrt(), df, Method::Welch, n as usize);
    let (_, ci) = back_to_pct(d, log_ci)?;
    Ok((100.0 * (a.0 / b.0 - 1.0), Ci95 { n, ..ci }))
}

/// A delta (A vs B, in %) judged: [`Change::Same`] when its interval contains
/// 0 ("no detectable difference", not "equal"); otherwise faster or slower by
/// the delta's sign, where `higher_is_better` is true for throughput and false
/// for latency. A delta that is not a number is `Same`: nothing was detected.
pub fn judge(delta_pct: f64, ci: &Ci95, higher_is_better: bool) -> Change {
    if ci.contains(0.0) || !delta_pct.is_finite() || delta_pct == 0.0 {
        return Change::Same;
    }
    if (delta_pct > 0.0) == higher_is_better {
        Change::Faster
    } else {
        Change::Slower
    }
}

/// Whether two figures with their intervals differ beyond noise: their
/// intervals do not overlap. With a missing interval (or a figure that is
/// not a number) the figures compared bare are never called different.
///
/// Non-overlap of two 95 % intervals is stricter than a 5 % test of the
/// difference (about 0.6 % for equal widths): the right bias for calling a
/// knee or a collapse, or for saying a level is "within noise of the peak".
pub fn differ(a: (f64, Option<&Ci95>), b: (f64, Option<&Ci95>)) -> bool {
    let (Some(ca), Some(cb)) = (a.1, b.1) else { return false };
    if !a.0.is_finite() || !b.0.is_finite() {
        return false;
    }
    ca.high < cb.low || cb.high < ca.low
}

/// `Err` naming `what` unless `x` is finite and above 0 (a log needs it).
fn positive(x: f64, what: &str) -> Result<(), NoInterval> {
    if x.is_finite() && x > 0.0 {
        Ok(())
    } else {
        Err(NoInterval(format!("{what} is {x}: a ratio needs figures above 0")))
    }
}

/// A figure's standard error on the log scale and its df, from its interval.
fn log_std_error((point, ci): (f64, &Ci95), what: &str) -> Result<(f64, f64), NoInterval> {
    if !ci.low.is_finite() || !ci.high.is_finite() || ci.low > ci.high {
        return Err(NoInterval(format!("{what}'s interval [{}, {}] has no finite width", ci.low, ci.high)));
    }
    let se = ci.std_error(point) / point;
    if !se.is_finite() {
        return Err(NoInterval(format!("{what}'s interval gives no standard error")));
    }
    Ok((se, ci.df()))
}

/// A delta and its interval from the log scale back to % (100 × (e^x − 1)).
fn back_to_pct(log_delta: f64, log_ci: Ci95) -> Result<(f64, Ci95), NoInterval> {
    let pct = |x: f64| 100.0 * x.exp_m1();
    let ci = Ci95 { low: pct(log_ci.low), high: pct(log_ci.high), ..log_ci };
    if !ci.low.is_finite() || !ci.high.is_finite() {
        return Err(NoInterval("the ratios spread too widely for a finite interval".into()));
    }
    Ok((pct(log_delta), ci))
}

#[cfg(test)]
mod tests {
    use super::super::t::t975;
    use super::*;

    fn ci(low: f64, high: f64) -> Ci95 {
        Ci95 { low, high, method: Method::PairedT, n: 6 }
    }

    #[test]
    fn judged_by_interval_and_sign() {
        // Throughput: higher is better.
        assert_eq!(judge(8.0, &ci(3.0, 13.0), true), Change::Faster);
        assert_eq!(judge(-8.0, &ci(-13.0, -3.0), true), Change::Slower);
        assert_eq!(judge(8.0, &ci(-1.0, 17.0), true), Change::Same);
        // Latency: lower is better, so a rise is slower.
        assert_eq!(judge(8.0, &ci(3.0, 13.0), false), Change::Slower);
        assert_eq!(judge(-8.0, &ci(-13.0, -3.0), false), Change::Faster);
        assert_eq!(judge(-8.0, &ci(-13.0, 0.0), false), Change::Same);
        assert_eq!(judge(f64::NAN, &ci(3.0, 13.0), true), Change::Same);
    }

    #[test]
    fn differ_needs_both_intervals_apart() {
        let a = ci(90.0, 110.0);
        let b = ci(111.0, 130.0);
        let c = ci(105.0, 125.0);
        assert!(differ((100.0, Some(&a)), (120.0, Some(&b))));
        assert!(!differ((100.0, Some(&a)), (115.0, Some(&c))));
        assert!(!differ((100.0, Some(&a)), (500.0, None)));
        assert!(!differ((100.0, None), (500.0, None)));
    }

    #[test]
    fn paired_delta_of_exact_ratios() {
        // Every pair 10 % apart: delta 10 %, zero-width interval.
        let (d, ci) = paired_delta_pct(&[(110.0, 100.0), (220.0, 200.0), (55.0, 50.0)]).unwrap();
        assert!((d - 10.0).abs() < 1e-9 && (ci.low - 10.0).abs() < 1e-9 && (ci.high - 10.0).abs() < 1e-9);
        assert_eq!((ci.method, ci.n), (Method::PairedT, 3));
    }

    #[test]
    fn paired_delta_refuses_what_a_log_cannot_take() {
        assert!(paired_delta_pct(&[(1.0, 1.0)]).unwrap_err().0.starts_with("1 A/B pair:"));
        assert!(paired_delta_pct(&[]).is_err());
        let e = paired_delta_pct(&[(1.0, 1.0), (0.0, 1.0)]).unwrap_err();
        assert_eq!(e.0, "pair 2 of 2, A is 0: a ratio needs figures above 0");
        assert!(paired_delta_pct(&[(1.0, 1.0), (1.0, -2.0)]).is_err());
        assert!(paired_delta_pct(&[(1.0, f64::NAN), (1.0, 1.0)]).is_err());
    }

    #[test]
    fn independent_delta_recovers_the_standard_errors() {
        // Two repeats-of-3 intervals of ±4.303 × 1 (se 1, df 2) around 100 and 80.
        let t = t975(2.0);
        let a = Ci95 { low: 100.0 - t, high: 100.0 + t, method: Method::StudentT, n: 3 };
        let b = Ci95 { low: 80.0 - t, high: 80.0 + t, method: Method::StudentT, n: 3 };
        let (d, ci) = independent_delta_pct((100.0, &a), (80.0, &b)).unwrap();
        assert!((d - 25.0).abs() < 1e-9);
        // Log se √(0.01² + 0.0125²); equal df 2 each, Welch df between 2 and 4.
        let s = (0.01f64.powi(2) + 0.0125f64.powi(2)).sqrt();
        let lo = 100.0 * ((1.25f64).ln() - t975(4.0) * s).exp_m1();
        let hi = 100.0 * ((1.25f64).ln() - t * s).exp_m1();
        assert!(ci.low < lo && ci.low > hi, "{ci:?} between {hi} and {lo}");
        assert_eq!((ci.method, ci.n), (Method::Welch, 6));
        assert_eq!(judge(d, &ci, true), Change::Faster);
    }

    #[test]
    fn independent_delta_refuses_bad_figures() {
        let a = Ci95 { low: 1.0, high: 2.0, method: Method::BatchMeans, n: 10 };
        assert!(independent_delta_pct((0.0, &a), (1.5, &a)).is_err());
        assert!(independent_delta_pct((1.5, &a), (f64::NAN, &a)).is_err());
        let inf = Ci95 { high: f64::INFINITY, ..a };
        assert!(independent_delta_pct((1.5, &inf), (1.5, &a)).is_err());
        // Zero-width on both sides: an exact delta.
        let z = Ci95 { low: 2.0, high: 2.0, method: Method::BatchMeans, n: 10 };
        let z2 = Ci95 { low: 1.0, high: 1.0, ..z };
        let (d, ci) = independent_delta_pct((2.0, &z), (1.0, &z2)).unwrap();
        assert_eq!((d, ci.low, ci.high), (100.0, 100.0, 100.0));
    }
}
