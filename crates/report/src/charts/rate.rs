//! The charts of an open-loop run (docs/open-loop.md): latency vs offered
//! rate (the hockey stick, latency from the intended send, log y) with the
//! service time beside it, and achieved vs offered throughput.

use super::Chart;
use crate::svg::{LineChart, LineSeries, Marker, PALETTE};
use scalelab_core::{Run, StepResult};

/// True when the run's steps are offered rates (an open-loop sweep or a capacity search).
pub fn is_open_loop(run: &Run) -> bool {
    run.steps.iter().any(|s| s.offered_rate_per_s.is_some())
}

/// The measured open-loop steps by offered rate, one per rate (the later
/// one: a capacity search's confirmation or recheck replaces the first try).
pub fn by_rate(run: &Run) -> Vec<(f64, &StepResult)> {
    let mut out: Vec<(f64, &StepResult)> = Vec::new();
    for s in run.steps.iter().filter(|s| !s.partial && s.window_s > 0.0) {
        let Some(rate) = s.offered_rate_per_s else { continue };
        match out.iter_mut().find(|(r, _)| *r == rate) {
            Some(slot) => slot.1 = s,
            None => out.push((rate, s)),
        }
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// Latency p50, p99 and p99.9 vs offered rate on a log axis (flat, then
/// the turn up at capacity), with the service p99 dashed: the gap between
/// the p99 lines is time requests waited before they could be sent.
pub fn hockey_stick(r: &super::ReportRun) -> Chart {
    let steps = by_rate(&r.run);
    let mut chart = LineChart {
        title: format!("Latency vs offered rate — {}", r.name),
        x_label: "offered rate (req/s)".into(),
        y_label: "latency (ms, log scale)".into(),
        log_y: true,
        remark: Some(
            "latency counts from each request's intended send time (queueing in the client included); \
             service time from its actual send"
                .into(),
        ),
        ..Default::default()
    };
    for (k, (name, q)) in [("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999)].into_iter().enumerate() {
        chart.series.push(LineSeries {
            name: name.into(),
            color: PALETTE[[0, 1, 3][k]],
            dashed: false,
            dots: true,
            points: steps.iter().map(|(rate, s)| (*rate, s.latency.quantile_ms(q))).collect(),
        });
    }
    chart.series.push(LineSeries {
        name: "service p99 (from the actual send)".into(),
        color: PALETTE[1],
        dashed: true,
        dots: false,
        points: steps.iter().map(|(rate, s)| (*rate, s.service.as_ref().and_then(|h| h.quantile_ms(0.99)))).collect(),
    });
    if let Some(c) = &r.diagnosis.curve {
        let knee = steps.iter().find(|(rate, _)| rate.round() as u32 == c.knee_concurrency);
        if let Some(y) = knee.and_then(|(_, s)| s.latency.quantile_ms(0.99)) {
            chart.markers.push(Marker { x: knee.map_or(0.0, |k| k.0), y, label: "knee".into(), color: PALETTE[1] });
        }
    }
    Chart::line(format!("run-{}-latency-vs-rate", r.run.id), chart, "unavailable: no open-loop step recorded a latency")
}

/// Completions per second vs offered rate, with the diagonal where every
/// offered request is answered: the line leaves it at the server's capacity.
pub fn achieved(r: &super::ReportRun) -> Chart {
    let steps = by_rate(&r.run);
    let mut chart = LineChart {
        title: format!("Achieved vs offered rate — {}", r.name),
        x_label: "offered rate (req/s)".into(),
        y_label: format!("achieved ({})", r.run.plan.throughput_unit()),
        ..Default::default()
    };
    chart.series.push(LineSeries {
        name: "achieved".into(),
        color: PALETTE[0],
        dashed: false,
        dots: true,
        points: steps.iter().map(|(rate, s)| (*rate, Some(s.throughput_per_s()))).collect(),
    });
    if let Some(last) = steps.last() {
        chart.series.push(LineSeries {
            name: "offered (every request answered)".into(),
            color: PALETTE[7],
            dashed: true,
            dots: false,
            points: vec![(0.0, Some(0.0)), (last.0, Some(last.0))],
        });
    }
    let dropped: u64 = steps.iter().filter_map(|(_, s)| s.dropped).sum();
    if dropped > 0 {
        chart.remark = Some(format!("{dropped} requests were dropped (never sent: --max-in-flight was reached)"));
    }
    Chart::line(format!("run-{}-achieved-vs-offered", r.run.id), chart, "unavailable: no open-loop step was measured")
}
