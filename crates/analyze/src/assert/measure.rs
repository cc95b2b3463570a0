//! Measuring what an assertion checks on a run: each figure with how to
//! show it, or the reason it is missing.

use super::Metric;
use crate::curve::Curve;
use crate::series::{Point, Series};
use crate::usl::UslFit;

/// A measured value for people: whole numbers as such, others with four
/// significant digits (κ is often around 0.0001), at most one decimal above 100.
pub(super) fn fmt_num(x: f64) -> String {
    if !x.is_finite() || ((x - x.round()).abs() < 1e-9 && x.abs() < 1e15) {
        return format!("{x:.0}");
    }
    let magnitude = x.abs().log10().floor() as i32;
    let decimals = (3 - magnitude).clamp(1, 12) as usize;
    let text = format!("{x:.decimals$}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `no collapse` (or, with `retrograde_only`, `no retrograde`): the measured
/// value is the last step's throughput in % of the peak (of the first step).
pub(super) fn collapse_flag(s: &Series, c: &Curve, retrograde_only: bool) -> Result<(bool, f64, String), String> {
    let last = s.points.iter().max_by_key(|p| p.concurrency).ok_or("no steps")?;
    let at = format!("{}/s at {} clients", fmt_num(last.throughput), last.concurrency);
    let of_first = c.scaling_pct(last.throughput);
    if retrograde_only {
        let v = of_first.ok_or("the first step's throughput is 0")?;
        let retrograde = c.collapse.as_ref().is_some_and(|col| col.retrograde);
        let tag = if retrograde { ": retrograde" } else { "" };
        return Ok((!retrograde, v, format!("{at} = {v:.0}% of the first step{tag}")));
    }
    if c.peak <= 0.0 {
        return Err("the peak is 0: nothing completed".into());
    }
    let v = 100.0 * last.throughput / c.peak;
    let first = of_first.map(|f| format!(", {f:.0}% of the first step")).unwrap_or_default();
    let tag = match &c.collapse {
        Some(col) if col.retrograde => ": collapse (retrograde)",
        Some(_) => ": collapse",
        None => "",
    };
    Ok((c.collapse.is_none(), v, format!("{at} = {v:.0}% of peak{first}{tag}")))
}

/// The value of `metric` (and how to show it), or why it is missing.
pub(super) fn measure(metric: Metric, at: Option<u32>, s: &Series, c: &Curve, usl: Option<&UslFit>) -> Result<(f64, String), String> {
    let step = |n: u32| s.point_at(n).ok_or_else(|| format!("no step at {n} clients"));
    let usl_value = |f: fn(&UslFit) -> Option<f64>, name: &str| {
        let fit = usl.ok_or(
            "no usable USL fit (it needs at least 4 steps, σ in [0, 1] and a curve that follows the data: `diagnose` says which failed)",
        )?;
        f(fit).map(|v| (v, fmt_num(v))).ok_or_else(|| format!("the USL fit has no {name}"))
    };
    match metric {
        Metric::Capacity => s
            .capacity_per_s
            .map(|v| (v, format!("{}/s", fmt_num(v))))
            .ok_or_else(|| "no capacity: not a capacity run, or its search found none (`scalelab show` says why)".to_string()),
        Metric::Peak => Ok((c.peak, format!("{}/s at {} clients", fmt_num(c.peak), c.peak_concurrency))),
        Metric::PeakConcurrency => Ok((c.peak_concurrency.into(), format!("{} clients", c.peak_concurrency))),
        Metric::Knee => Ok((c.knee_concurrency.into(), format!("{} clients", c.knee_concurrency))),
        Metric::KneeMarginal => c
            .knee_marginal_concurrency
            .map(|n| (n.into(), format!("{n} clients")))
            .ok_or_else(|| "the gain per added client never fell below 10% (still scaling)".to_string()),
        Metric::LastPctOfPeak => {
            let last = s.points.iter().max_by_key(|p| p.concurrency).ok_or("no steps")?;
            if c.peak <= 0.0 {
                return Err("the peak is 0".into());
            }
            let v = 100.0 * last.throughput / c.peak;
            Ok((v, format!("{v:.1}% ({}/s at {} clients)", fmt_num(last.throughput), last.concurrency)))
        }
        Metric::Throughput => {
            let n = at.ok_or("throughput needs @N")?;
            let x = step(n)?.throughput;
            Ok((x, format!("{}/s at {n} clients", fmt_num(x))))
        }
        Metric::Scaling => {
            let n = at.ok_or("scaling needs @N")?;
            let x = step(n)?.throughput;
            let v = c.scaling_pct(x).ok_or("the first step's throughput is 0")?;
            Ok((v, format!("{v:.1}% at {n} clients")))
        }
        Metric::P50Ms => latency(s, at, "p50", |p| p.p50_ms),
        Metric::P99Ms => latency(s, at, "p99", |p| p.p99_ms),
        Metric::P999Ms => latency(s, at, "p99.9", |p| p.p999_ms),
        Metric::Errors => match at {
            Some(n) => {
                let e = step(n)?.errors.ok_or_else(|| format!("error counts not recorded at {n} clients"))?;
                Ok((e as f64, format!("{e} at {n} clients")))
            }
            None => {
                let mut total = 0u64;
                for p in &s.points {
                    total += p.errors.ok_or_else(|| format!("error counts not recorded at {} clients", p.concurrency))?;
                }
                Ok((total as f64, format!("{total} over {} steps", s.points.len())))
            }
        },
        Metric::Lambda => usl_value(|f| Some(f.lambda), "lambda"),
        Metric::Sigma => usl_value(|f| Some(f.sigma), "sigma"),
        Metric::Kappa => usl_value(|f| Some(f.kappa), "kappa"),
        Metric::R2 => usl_value(|f| f.r2, "R2 (every step has the same throughput)"),
        // With κ = 0 the optimum is at infinity: a measured value, not missing data.
        Metric::DeltaPct => {
            Err("delta_pct compares two runs: check it on `sweep --versus TARGET_B`, or with `scalelab compare A B --assert ...`".into())
        }
        Metric::NOpt => match usl {
            Some(fit) if fit.kappa == 0.0 => Ok((f64::INFINITY, "infinite (kappa = 0: throughput never falls)".into())),
            _ => usl_value(|f| f.n_opt, "optimum"),
        },
    }
}

/// A latency percentile at step `at`, or the worst over all steps (every
/// step must have it, or the missing one could be the worst).
fn latency(s: &Series, at: Option<u32>, name: &str, get: fn(&Point) -> Option<f64>) -> Result<(f64, String), String> {
    let missing = |n: u32| format!("{name} latency not recorded at {n} clients");
    match at {
        Some(n) => {
            let p = s.point_at(n).ok_or_else(|| format!("no step at {n} clients"))?;
            let v = get(p).ok_or_else(|| missing(n))?;
            Ok((v, format!("{} ms at {n} clients", fmt_num(v))))
        }
        None => {
            let mut worst: Option<(f64, u32)> = None;
            for p in &s.points {
                let v = get(p).ok_or_else(|| missing(p.concurrency))?;
                if !matches!(worst, Some((w, _)) if w >= v) {
                    worst = Some((v, p.concurrency));
                }
            }
            let (v, n) = worst.ok_or("no steps")?;
            Ok((v, format!("{} ms at {n} clients (worst step)", fmt_num(v))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fmt_num;

    #[test]
    fn numbers_keep_four_significant_digits() {
        assert_eq!(fmt_num(5210.0), "5210");
        assert_eq!(fmt_num(580.6), "580.6");
        assert_eq!(fmt_num(27.5), "27.5");
        assert_eq!(fmt_num(0.05), "0.05");
        assert_eq!(fmt_num(0.000_123_46), "0.0001235");
        assert_eq!(fmt_num(-3.25), "-3.25");
    }
}
