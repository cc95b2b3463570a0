//! Parser of the assertion language: `METRIC[@N] OP VALUE[UNIT]` or a flag.

use super::{Assertion, Check, Metric, Op};
use thiserror::Error;

/// An assertion that does not parse: its text and what is wrong with it.
#[derive(Debug, Error, PartialEq)]
#[error("assertion `{text}`: {problem}")]
pub struct ParseError {
    /// The assertion as given.
    pub text: String,
    /// What is wrong, and what was expected.
    pub problem: String,
}

/// Whether a metric is read at one step (`@N`).
#[derive(Clone, Copy, PartialEq)]
enum At {
    /// Needs `@N` (throughput, scaling).
    Required,
    /// `@N` for one step; without it, over all steps (latency, errors).
    Optional,
    /// A figure of the whole run (peak, knee, USL).
    Never,
}

/// Names accepted for each metric (first = canonical), its `@N` rule and
/// the unit suffixes its value may carry.
const METRICS: &[(&[&str], Metric, At, &[&str])] = &[
    (&["peak"], Metric::Peak, At::Never, &["/s"]),
    (&["capacity"], Metric::Capacity, At::Never, &["/s"]),
    (&["peak_concurrency"], Metric::PeakConcurrency, At::Never, &[]),
    (&["knee", "knee_concurrency"], Metric::Knee, At::Never, &[]),
    (&["knee_marginal", "knee_marginal_concurrency"], Metric::KneeMarginal, At::Never, &[]),
    (&["last_pct_of_peak"], Metric::LastPctOfPeak, At::Never, &["%"]),
    (&["throughput", "x"], Metric::Throughput, At::Required, &["/s"]),
    (&["scaling"], Metric::Scaling, At::Required, &["%", "x"]),
    (&["p50_ms", "p50"], Metric::P50Ms, At::Optional, &["ms"]),
    (&["p99_ms", "p99"], Metric::P99Ms, At::Optional, &["ms"]),
    (&["p999_ms", "p999"], Metric::P999Ms, At::Optional, &["ms"]),
    (&["errors"], Metric::Errors, At::Optional, &[]),
    (&["lambda"], Metric::Lambda, At::Never, &["/s"]),
    (&["sigma"], Metric::Sigma, At::Never, &[]),
    (&["kappa"], Metric::Kappa, At::Never, &[]),
    (&["r2"], Metric::R2, At::Never, &[]),
    (&["n_opt"], Metric::NOpt, At::Never, &[]),
    (&["delta_pct", "delta"], Metric::DeltaPct, At::Optional, &["%"]),
];

const FLAGS: &str = "`no collapse`, `no retrograde`, `no errors`";

/// Operators, two-character ones first so `>=` is not read as `>`.
const OPS: &[(&str, Op)] = &[(">=", Op::Ge), ("<=", Op::Le), ("==", Op::Eq), ("!=", Op::Ne), (">", Op::Gt), ("<", Op::Lt)];

fn known_metrics() -> String {
    METRICS.iter().map(|m| m.0[0]).collect::<Vec<_>>().join(", ")
}

pub(super) fn parse(text: &str) -> Result<Assertion, ParseError> {
    let fail = |problem: String| ParseError { text: text.to_string(), problem };
    let words: Vec<String> = text.split_whitespace().map(str::to_ascii_lowercase).collect();
    if words.first().map(String::as_str) == Some("no") {
        let check = match words.get(1..).unwrap_or_default().join(" ").as_str() {
            "collapse" => Check::NoCollapse,
            "retrograde" => Check::NoRetrograde,
            "errors" => Check::NoErrors,
            other => return Err(fail(format!("unknown flag `no {other}`: expected one of {FLAGS}"))),
        };
        return Ok(Assertion { text: text.trim().to_string(), check });
    }

    let compact: String = words.concat();
    let Some((pos, sym, op)) = OPS.iter().find_map(|&(sym, op)| compact.find(sym).map(|pos| (pos, sym, op))) else {
        let hint = if compact.contains('=') { " (`=` alone is not one: write `==`)" } else { "" };
        return Err(fail(format!(
            "no comparison operator{hint}: expected `METRIC[@N] OP VALUE` with OP one of >= <= > < == !=, or one of {FLAGS}"
        )));
    };
    let (left, right) = (&compact[..pos], &compact[pos + sym.len()..]);
    if right.starts_with(['<', '>', '=', '!']) {
        return Err(fail(format!("unexpected `{}` after `{sym}`", &right[..1])));
    }

    // `point(METRIC[@N])`: the point value, not the interval's bound.
    let (left, point) = match left.strip_prefix("point(") {
        Some(inner) => match inner.strip_suffix(')') {
            Some(inner) => (inner, true),
            None => return Err(fail("`point(` without its `)`: write `point(METRIC[@N]) OP VALUE`".to_string())),
        },
        None => (left, false),
    };
    let (name, at) = match left.split_once('@') {
        Some((name, n)) => match n.parse::<u32>() {
            Ok(n) if n >= 1 => (name, Some(n)),
            _ => return Err(fail(format!("`@{n}`: expected @N with N a concurrency (an integer >= 1)"))),
        },
        None => (left, None),
    };
    if name.is_empty() {
        return Err(fail(format!("no metric before `{sym}`: expected one of {}", known_metrics())));
    }
    let Some(&(names, metric, at_rule, units)) = METRICS.iter().find(|m| m.0.contains(&name)) else {
        return Err(fail(format!("unknown metric `{name}`: expected one of {}", known_metrics())));
    };
    let canonical = names[0];
    if point && !matches!(metric, Metric::Peak | Metric::Throughput | Metric::DeltaPct) {
        return Err(fail(format!("`point({canonical})`: only peak, throughput and delta_pct have an interval; write `{canonical}` alone")));
    }
    match (at_rule, at) {
        (At::Required, None) => return Err(fail(format!("`{canonical}` needs a step: write `{canonical}@N` (N = concurrency)"))),
        (At::Never, Some(n)) => {
            return Err(fail(format!("`{canonical}` is a figure of the whole run and takes no `@{n}`")));
        }
        _ => {}
    }

    let (number, factor) = match units.iter().find(|u| right.ends_with(**u)) {
        Some(&"x") => (&right[..right.len() - 1], 100.0), // scaling as a ratio: 3x = 300 %
        Some(u) => (&right[..right.len() - u.len()], 1.0),
        None => (right, 1.0),
    };
    let number = number.replace('_', "");
    let value = match number.parse::<f64>() {
        Ok(v) if v.is_finite() => v * factor,
        _ => {
            let units = if units.is_empty() { String::from("no unit") } else { format!("unit {}", units.join(" or ")) };
            return Err(fail(format!("`{right}` is not a number (`{canonical}` takes {units})")));
        }
    };
    Ok(Assertion { text: text.trim().to_string(), check: Check::Compare { metric, at, op, value, point } })
}
