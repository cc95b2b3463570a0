//! The analysis printed under a run's table, and `--assert` evaluation.

use crate::error::bad;
use scalelab_analyze::{assert as assertions, Curve, Point, Series, UslFit};
use scalelab_core::Run;
use scalelab_report::fmt::thousands;

/// A run as the analysis sees it: one point per measured (non-partial) step.
pub fn series_of(run: &Run) -> Series {
    let points: Vec<Point> = run.steps.iter().filter(|s| !s.partial).filter_map(Point::from_step).collect();
    Series::new(run.plan.label.clone(), points)
}

/// Peak, knee, collapse and the USL fit in words; what cannot be computed says why.
pub fn summary(run: &Run) -> String {
    let series = series_of(run);
    let mut out = String::new();
    let unit = "/s";
    match Curve::of(&series) {
        Ok(c) => {
            out.push_str(&format!(
                "peak {}{unit} at {} clients; knee at {} clients",
                thousands(c.peak),
                c.peak_concurrency,
                c.knee_concurrency
            ));
            match &c.collapse {
                Some(k) => out.push_str(&format!(
                    "; collapse: {}{unit} at {} clients = {:.0}% of peak{}{}",
                    thousands(k.throughput),
                    k.concurrency,
                    k.pct_of_peak,
                    k.pct_of_first.map_or(String::new(), |p| format!(", {p:.0}% of {} client(s)", c.first_concurrency)),
                    if k.retrograde { " (retrograde)" } else { "" }
                )),
                None => out.push_str("; no collapse"),
            }
            out.push('\n');
        }
        Err(e) => out.push_str(&format!("curve: {e}\n")),
    }
    match scalelab_analyze::usl::fit(&series) {
        Ok(u) => out.push_str(&usl_line(&u)),
        Err(e) => out.push_str(&format!("USL: not fitted: {e}\n")),
    }
    out
}

fn usl_line(u: &UslFit) -> String {
    let r2 = u.r2.map_or("-".to_string(), |r| format!("{r:.3}"));
    let opt = match (u.n_opt, u.x_at_n_opt) {
        (Some(n), Some(x)) => format!("optimum N* = {n:.1} ({}/s)", thousands(x)),
        _ => "no optimum (kappa = 0: no retrograde region)".to_string(),
    };
    format!("USL: lambda {:.1}/s  sigma {:.4}  kappa {:.5}  R2 {r2}  {opt}\n", u.lambda, u.sigma, u.kappa)
}

/// Parses every `--assert` before any load, so a typo fails fast (exit 2).
pub fn parse_assertions(texts: &[String]) -> anyhow::Result<Vec<assertions::Assertion>> {
    assertions::parse_all(texts).map_err(|e| bad(format!("--assert: {e}")))
}

/// Evaluates assertions on a run; prints each as PASS/FAIL with the measured
/// value; returns true when all passed.
pub fn check(run: &Run, parsed: &[assertions::Assertion]) -> bool {
    if parsed.is_empty() {
        return true;
    }
    let series = series_of(run);
    let curve = match Curve::of(&series) {
        Ok(c) => c,
        Err(e) => {
            for a in parsed {
                eprintln!("FAIL  {}  (no data: {e})", a.text);
            }
            return false;
        }
    };
    let usl = scalelab_analyze::usl::fit(&series).ok();
    let mut all = true;
    for o in assertions::evaluate_all(parsed, &series, &curve, usl.as_ref()) {
        all &= o.passed;
        let measured =
            o.measured.map_or("no data".to_string(), |m| format!("{m:.4}").trim_end_matches('0').trim_end_matches('.').to_string());
        eprintln!("{}  {}  (measured {measured}; {})", if o.passed { "PASS" } else { "FAIL" }, o.assertion, o.detail);
    }
    all
}
