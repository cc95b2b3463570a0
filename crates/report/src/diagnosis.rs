//! A [`Diagnosis`] as text, in the shape of `scalelab diagnose` (and under
//! `show`'s tables): the curve line, the USL line, then per verdict its line
//! with the evidence figures, what was missing and what to look at next.

use crate::fmt::clients;
use scalelab_analyze::{Diagnosis, Verdict};

/// A figure for text: thousands separated from 1,000, whole from 10 (and
/// whole numbers always), one decimal from 1, two below.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "?".into();
    }
    let a = v.abs();
    // One rounding everywhere: half away from zero, as the step table's
    // `thousands` (15,308.5 is 15,309 in show, compare and diagnose alike).
    if a >= 999.5 {
        crate::fmt::thousands(v)
    } else if a >= 10.0 || v.fract() == 0.0 {
        format!("{:.0}", crate::fmt::round_half_away(v))
    } else if a >= 1.0 {
        format!("{:.1}", crate::fmt::round_half_away(v * 10.0) / 10.0)
    } else {
        format!("{:.2}", crate::fmt::round_half_away(v * 100.0) / 100.0)
    }
}

/// A throughput with its unit: "1,234 req/s", or "1,234/s" when the unit is unknown.
pub fn per_s(v: f64, unit: &str) -> String {
    if unit.starts_with('/') {
        format!("{}{unit}", num(v))
    } else {
        format!("{} {unit}", num(v))
    }
}

/// The collapse part of the curve line: `; collapse: …`, `; no collapse`,
/// or `; no collapse: the drop to … is within noise`.
fn collapse_words(c: &scalelab_analyze::Curve, d: &Diagnosis) -> String {
    match (&c.collapse, &c.collapse_within_noise) {
        (Some(col), _) => {
            let mut text = format!(
                "; collapse: {} at {} = {}% of peak",
                per_s(col.throughput, &d.unit),
                level(col.concurrency, d),
                num(col.pct_of_peak)
            );
            if let Some(f) = col.pct_of_first {
                text.push_str(&format!(", {}% of {}", num(f), level(c.first_concurrency, d)));
            }
            if col.retrograde {
                text.push_str(" (retrograde)");
            }
            text
        }
        (None, Some(col)) => format!(
            "; no collapse: the drop to {} at {} ({}% of peak) is within noise",
            per_s(col.throughput, &d.unit),
            level(col.concurrency, d),
            num(col.pct_of_peak)
        ),
        (None, None) => "; no collapse".to_string(),
    }
}

/// The peak with its interval's half-width: `30,600 ± 900 req/s`, or
/// `30,600 req/s` when it has none.
pub fn peak_figure(c: &scalelab_analyze::Curve, unit: &str) -> String {
    match c.peak_ci {
        Some(ci) => format!("{} ± {}", num(c.peak), per_s((ci.high - ci.low) / 2.0, unit)),
        None => per_s(c.peak, unit),
    }
}

/// The levels within the peak's noise in words: `5 to 20 are within
/// noise` (a run of adjacent levels), `5, 20 and 50 are within noise`, or
/// `no other level is within noise`; `None` when the peak has no interval.
pub fn within_noise(c: &scalelab_analyze::Curve) -> Option<String> {
    c.peak_ci?;
    let w = &c.within_noise;
    if w.len() <= 1 {
        return Some("no other level is within noise".to_string());
    }
    let levels: Vec<u32> = c.latency_growth.iter().map(|g| g.concurrency).collect();
    let start = levels.iter().position(|n| *n == w[0]);
    let adjacent = start.is_some_and(|i| levels.get(i..i + w.len()) == Some(w.as_slice()));
    let text = if adjacent {
        format!("{} to {}", w[0], w[w.len() - 1])
    } else {
        let head: Vec<String> = w[..w.len() - 1].iter().map(u32::to_string).collect();
        format!("{} and {}", head.join(", "), w[w.len() - 1])
    };
    Some(format!("{text} are within noise"))
}

/// A load level in words: `N clients`, or on a rate sweep `R req/s offered`.
fn level(n: u32, d: &Diagnosis) -> String {
    if d.rate_sweep {
        format!("{} offered", per_s(f64::from(n), &d.unit))
    } else {
        clients(n)
    }
}

/// One verdict's line: `at N clients: KIND (confidence) — headline: figures`.
fn verdict_line(v: &Verdict, d: &Diagnosis) -> String {
    let figures: Vec<String> = v
        .evidence
        .iter()
        .map(|e| {
            let sep = if e.unit.starts_with('%') { "" } else { " " };
            format!("{} {}{sep}{}", e.name, num(e.value), e.unit)
        })
        .collect();
    let mut line = format!("at {}: {} ({}) — {}", level(v.concurrency, d), v.kind.title(), v.confidence.name(), v.headline);
    if !figures.is_empty() {
        line.push_str(": ");
        line.push_str(&figures.join(", "));
    }
    line
}

/// The super-linear start explained, when the curve has one: what the
/// first steps did, why one client understates the per-client rate, and that
/// the USL was fitted without it.
pub fn superlinear_words(c: &scalelab_analyze::curve::Curve, d: &Diagnosis) -> Option<String> {
    let s = c.superlinear_start.as_ref()?;
    let fitted = match d.usl_from {
        Some(from) => format!("; the USL is fitted from {}", level(from, d)),
        None => String::new(),
    };
    Some(format!(
        "super-linear start: {} gave {:.0} % of {}'s throughput (linear would be {:.0} %): at {} every request pays two wake-ups in turn, the server's thread and then the client's, with nothing to overlap them (slow on an idle VM's halted CPUs, or behind other work on a busy one; `scalelab micro` measures wake-ups: futex_wake, the ctx_* switches); more clients overlap those waits, so the first step understates what a client can do{fitted}",
        level(s.to, d),
        s.scaling_pct,
        level(s.from, d),
        s.linear_pct,
        level(s.from, d),
    ))
}

/// The diagnosis as text, in the shape of `scalelab diagnose`:
/// the curve line, the USL line, then per verdict its line, what was
/// missing and `  next: ...`.
pub fn render_text(d: &Diagnosis, run_label: &str) -> String {
    let mut out = format!("{run_label}\n");
    match &d.curve {
        None => out.push_str("no measured step: nothing to diagnose\n"),
        Some(c) => {
            let mut line = format!("peak {} at {}", peak_figure(c, &d.unit), level(c.peak_concurrency, d));
            if let Some(noise) = within_noise(c) {
                line.push_str(&format!(" ({noise})"));
            }
            if c.flat_within_noise {
                line.push_str("; the curve is flat within noise: no level differs from the peak, so no knee or collapse is called");
            } else {
                line.push_str(&format!("; knee at {}", level(c.knee_concurrency, d)));
                if d.rate_sweep {
                    line.push_str(" (the last rate before latency departs from its low-load value)");
                }
                line.push_str(&collapse_words(c, d));
            }
            out.push_str(&line);
            out.push('\n');
            if let Some(words) = superlinear_words(c, d) {
                out.push_str(&words);
                out.push('\n');
            }
        }
    }
    match (&d.usl, &d.usl_error) {
        (Some(u), _) => {
            let r2 = u.r2.map_or_else(|| "-".to_string(), |r| format!("{r:.2}"));
            let opt = match u.n_opt {
                Some(n) => format!("optimum N* = {}", num(n)),
                None => "no optimum (kappa 0)".to_string(),
            };
            out.push_str(&format!("USL: sigma {:.3}  kappa {:.4}  R2 {r2}  {opt}\n", u.sigma, u.kappa));
        }
        (None, Some(e)) => out.push_str(&format!("USL: no usable fit: {e}\n")),
        (None, None) => out.push_str("USL: no fit\n"),
    }
    if d.curve.is_some() && d.verdicts.is_empty() {
        out.push_str("no verdict: no rule fired at and beyond the knee (or the telemetry to judge was not recorded)\n");
    }
    for v in &d.verdicts {
        out.push_str(&verdict_line(v, d));
        out.push('\n');
        if !v.missing.is_empty() {
            out.push_str(&format!("  missing: {}\n", v.missing.join("; ")));
        }
        out.push_str(&format!("  next: {}\n", v.next));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalelab_core::{Run, RunKind, RunPlan, StepResult};

    #[test]
    fn one_rounding_half_away_from_zero() {
        assert_eq!(num(15_308.5), "15,309");
        assert_eq!(num(15_308.5), crate::fmt::thousands(15_308.5));
        assert_eq!(num(-2_500.5), "-2,501");
        assert_eq!(num(12.5), "13");
        assert_eq!(num(999.6), "1,000");
        assert_eq!(num(2.25), "2.3");
        assert_eq!(num(0.125), "0.13");
    }

    #[test]
    fn an_unusable_usl_fit_is_not_in_the_text() {
        // Published Tiger: the least-squares optimum is σ 2.16, R² 0.50.
        let tiger = [(1u32, 192.0), (2, 274.0), (5, 113.0), (10, 62.0), (20, 50.0), (35, 50.0), (50, 47.0)];
        let steps = tiger
            .iter()
            .map(|&(n, x)| StepResult {
                concurrency: n,
                window_s: 10.0,
                requests: (x * 10.0) as u64,
                queries: (x * 10.0) as u64,
                client_cpu_s: 4.0,
                client_cores: 2,
                ..StepResult::default()
            })
            .collect();
        let run = Run {
            id: 1,
            kind: RunKind::Sweep,
            plan: RunPlan {
                label: "test".into(),
                target: "specimen:test".into(),
                workload: "GET /".into(),
                steps: vec![],
                client_threads: 2,
                options: Default::default(),
            },
            environment: Default::default(),
            started_unix_ms: 0,
            finished_unix_ms: None,
            complete: true,
            outcome: None,
            steps,
            samples: Default::default(),
            notes: vec![],
        };
        let d = scalelab_analyze::diagnose(&run);
        assert!(d.usl.is_none());
        let text = render_text(&d, "tiger");
        assert!(text.contains("USL: no usable fit: `test`: σ 2.16 is outside [0, 1]"), "{text}");
        assert!(!text.contains("sigma 2.16"), "{text}");
    }

    #[test]
    fn numbers_in_text() {
        assert_eq!(num(31_200.4), "31,200");
        assert_eq!(num(1_234_567.0), "1,234,567");
        assert_eq!(num(-1500.0), "-1,500");
        assert_eq!(num(38.4), "38");
        assert_eq!(num(2.94), "2.9");
        assert_eq!(num(4.0), "4");
        assert_eq!(num(0.214), "0.21");
        assert_eq!(num(f64::NAN), "?");
    }
}
