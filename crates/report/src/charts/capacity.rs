//! The charts of a capacity run (`scalelab capacity`, docs/open-loop.md):
//! the search path (every tried rate in order, passed or failed) and the
//! latency the SLO bounds at each tried rate, with the SLO's line; the
//! capacity found is marked on both. Pass and fail are judged again from
//! the stored steps and SLOs, as the search judged them.

use super::Chart;
use crate::fmt::thousands;
use crate::svg::{LineChart, LineSeries, Marker, PALETTE};
use scalelab_analyze::capacity::{parse_slo, Observation, Slo, SloMetric};
use scalelab_core::{Run, RunKind};

const PASS: &str = PALETTE[2];
const FAIL: &str = PALETTE[3];

/// Each tried rate in order: (try number from 1, its observation, passed).
fn tries(run: &Run, slos: &[Slo]) -> Vec<(f64, Observation, bool)> {
    run.steps
        .iter()
        .filter(|s| s.offered_rate_per_s.is_some() && !s.partial)
        .enumerate()
        .map(|(i, s)| {
            let o = Observation::of_step(s);
            let passed = o.breaches(slos).is_empty();
            (i as f64 + 1.0, o, passed)
        })
        .collect()
}

/// The SLOs stored in the run's plan (`--slo`, as given).
fn slos(run: &Run) -> Vec<Slo> {
    let texts = run.plan.options.get("slo").and_then(|v| v.as_array()).cloned().unwrap_or_default();
    texts.iter().filter_map(|t| t.as_str()).filter_map(|t| parse_slo(t).ok()).collect()
}

/// `(x, y)` points of the tries that passed (or failed), each its own dot:
/// a `None` between them keeps the line from joining them.
fn dots(points: impl Iterator<Item = (f64, Option<f64>)>) -> Vec<(f64, Option<f64>)> {
    points.flat_map(|(x, y)| [(x, y), (x, None)]).collect()
}

/// The passed and failed dots as two series, for the legend.
fn pass_fail(chart: &mut LineChart, tries: &[(f64, Observation, bool)], y: impl Fn(f64, &Observation) -> (f64, Option<f64>)) {
    for (name, color, want) in [("passed", PASS, true), ("failed", FAIL, false)] {
        let points = dots(tries.iter().filter(|t| t.2 == want).map(|(i, o, _)| y(*i, o)));
        chart.series.push(LineSeries { name: name.into(), color, dashed: false, dots: true, points });
    }
}

/// What the search concluded when it named no capacity, for a note.
fn no_capacity(run: &Run) -> String {
    let result = run.plan.options.get("capacity_result").and_then(|v| v.as_str()).unwrap_or("interrupted");
    format!("no capacity marked: the search ended {result}")
}

/// The search path and the SLO latency chart of a capacity run; empty for other runs.
pub fn charts(r: &super::ReportRun) -> Vec<Chart> {
    if r.run.kind != RunKind::Capacity {
        return Vec::new();
    }
    let slos = slos(&r.run);
    let tries = tries(&r.run, &slos);
    let capacity = r.run.plan.options.get("capacity_per_s").and_then(|v| v.as_f64());
    vec![search_path(r, &tries, capacity), slo_latency(r, &slos, &tries, capacity)]
}

/// Each tried rate in the order tried (ramp, bisection, rechecks, the
/// confirmation last), passed or failed, and the capacity found as a line.
fn search_path(r: &super::ReportRun, tries: &[(f64, Observation, bool)], capacity: Option<f64>) -> Chart {
    let mut chart = LineChart {
        title: format!("Capacity search path — {}", r.name),
        x_label: "try (in the order tried; the last is the confirmation)".into(),
        y_label: "offered rate (req/s)".into(),
        ..Default::default()
    };
    chart.series.push(LineSeries {
        name: "tried rate".into(),
        color: PALETTE[5],
        dashed: false,
        dots: false,
        points: tries.iter().map(|(i, o, _)| (*i, Some(o.offered_per_s))).collect(),
    });
    pass_fail(&mut chart, tries, |i, o| (i, Some(o.offered_per_s)));
    match (capacity, tries.last()) {
        (Some(c), Some(last)) => {
            let name = format!("capacity {} req/s", thousands(c));
            chart.series.push(LineSeries {
                name: name.clone(),
                color: PALETTE[7],
                dashed: true,
                dots: false,
                points: vec![(1.0, Some(c)), (last.0, Some(c))],
            });
            chart.markers.push(Marker { x: last.0, y: c, label: name, color: PALETTE[7] });
        }
        _ => chart.notes.push(no_capacity(&r.run)),
    }
    Chart::line(format!("run-{}-capacity-search", r.run.id), chart, "unavailable: the search recorded no tried rate")
}

/// The latency the first latency SLO bounds (p99 when none does) at each
/// tried rate, passed or failed, the SLO's bound as a dashed line, and the
/// capacity found marked. Log scale: failing rates are often 10-100× over.
fn slo_latency(r: &super::ReportRun, slos: &[Slo], tries: &[(f64, Observation, bool)], capacity: Option<f64>) -> Chart {
    let slo = slos.iter().find(|s| matches!(s.metric, SloMetric::Latency(_)));
    let metric = slo.copied().unwrap_or(Slo { metric: SloMetric::Latency(99.0), limit: f64::INFINITY });
    let name = metric.name();
    let mut chart = LineChart {
        title: format!("Capacity search: {name} latency vs offered rate — {}", r.name),
        x_label: "offered rate (req/s)".into(),
        y_label: format!("{name} latency (ms, log scale)"),
        log_y: true,
        remark: Some(
            "latency from each request's intended send; a try fails on any SLO, or below 90 % of the offered rate achieved".into(),
        ),
        ..Default::default()
    };
    let mut sorted: Vec<&(f64, Observation, bool)> = tries.iter().collect();
    sorted.sort_by(|a, b| a.1.offered_per_s.total_cmp(&b.1.offered_per_s).then(a.0.total_cmp(&b.0)));
    chart.series.push(LineSeries {
        name: format!("{name} at each try"),
        color: PALETTE[5],
        dashed: false,
        dots: false,
        points: sorted.iter().map(|(_, o, _)| (o.offered_per_s, metric.value(o))).collect(),
    });
    pass_fail(&mut chart, tries, |_, o| (o.offered_per_s, metric.value(o)));
    let (lo, hi) = sorted.iter().fold((f64::INFINITY, 0.0f64), |(a, b), t| (a.min(t.1.offered_per_s), b.max(t.1.offered_per_s)));
    match slo {
        Some(s) if lo.is_finite() => chart.series.push(LineSeries {
            name: format!("SLO {name} ≤ {} ms", crate::svg::short(s.limit)),
            color: FAIL,
            dashed: true,
            dots: false,
            points: vec![(lo, Some(s.limit)), (hi, Some(s.limit))],
        }),
        _ => chart.notes.push("no latency SLO was given (errors only): the p99 is shown without a bound".into()),
    }
    // The capacity at the confirmation's latency (the last try at that rate).
    let at = capacity.and_then(|c| tries.iter().rev().find(|t| t.1.offered_per_s == c).and_then(|t| metric.value(&t.1)).map(|y| (c, y)));
    match at {
        Some((c, y)) => chart.markers.push(Marker { x: c, y, label: format!("capacity {} req/s", thousands(c)), color: PALETTE[7] }),
        None => chart.notes.push(no_capacity(&r.run)),
    }
    Chart::line(format!("run-{}-capacity-latency", r.run.id), chart, "unavailable: no tried rate recorded a latency")
}
