//! The JSON document of a run, as `sweep --json`, `show --json` and
//! `export --format json` print it. Shape documented in docs/json.md and
//! pinned by docs/run.schema.json; missing figures are `null`, never 0.
//!
//! Intervals sit beside their figures as `*_ci95` objects
//! (`throughput_ci95`, `latency_ci95` keyed like `latency_ms`), with
//! `no_interval` saying why when there is none; `levels` gathers each load
//! level's windows (the run table's rows).

use crate::table::scaling_pct;
use scalelab_analyze::stats::Ci95;
use scalelab_analyze::Point;
use scalelab_core::{ErrorClass, Run, StepResult};
use serde_json::{json, Map, Value};

/// The run as a JSON value.
pub fn run_json(run: &Run) -> Value {
    let first = run.steps.first();
    json!({
        "id": run.id,
        "kind": run.kind.name(),
        "label": run.plan.label,
        "target": run.plan.target,
        "workload": run.plan.workload,
        "complete": run.complete,
        "outcome": run.outcome,
        "started_unix_ms": run.started_unix_ms,
        "finished_unix_ms": run.finished_unix_ms,
        "environment": run.environment,
        "schedule": {
            "client_threads": run.plan.client_threads,
            "steps": run.plan.steps,
            "options": run.plan.options,
        },
        "steps": run.steps.iter().map(|s| with_streams(step_json(s, first), s, run)).collect::<Vec<_>>(),
        "levels": levels_json(run),
    })
}

/// HTTP/2: a step's `connections` and `streams` (per connection) beside
/// its `concurrency` (streams in flight, connections x streams); absent
/// for runs with a connection per client.
fn with_streams(mut v: Value, step: &StepResult, run: &Run) -> Value {
    if let (Some(streams), Value::Object(m)) = (run.plan.streams(), &mut v) {
        m.insert("connections".into(), json!(run.plan.connections(step.concurrency)));
        m.insert("streams".into(), json!(streams));
    }
    v
}

/// A figure's 95 % interval as JSON (`{"low", "high", "method", "n"}`), or null.
fn ci_json(ci: Option<Ci95>) -> Value {
    ci.map_or(Value::Null, |c| json!({"low": c.low, "high": c.high, "method": c.method.name(), "n": c.n}))
}

/// The intervals of a point's latency percentiles, keyed as in `latency_ms`.
fn latency_ci_json(p: &Point) -> Value {
    json!({"p50": ci_json(p.p50_ci), "p99": ci_json(p.p99_ci), "p999": ci_json(p.p999_ci)})
}

/// The `levels` array: one object per load level, its windows together
/// (the run table's rows): the mean throughput and percentiles with their
/// 95 % intervals, the windows' throughputs (`repeats`), `n` and CV.
fn levels_json(run: &Run) -> Value {
    let entries = crate::levels::entries(run);
    let first = entries.iter().find(|e| !e.partial()).and_then(|e| e.point.as_ref()).map(|p| p.throughput);
    let levels: Vec<Value> = entries
        .iter()
        .filter(|e| !e.partial())
        .filter_map(|e| e.point.as_ref().map(|p| (e, p)))
        .map(|(e, p)| {
            let mut v = json!({
                "concurrency": e.first().concurrency,
                "windows": e.steps.len(),
                "throughput_per_s": p.throughput,
                "throughput_ci95": ci_json(p.throughput_ci),
                "scaling_pct": first.filter(|f| *f > 0.0).map(|f| 100.0 * p.throughput / f),
                "repeats": p.repeats,
                "cv_pct": p.cv_pct(),
                "latency_ms": {"p50": p.p50_ms, "p99": p.p99_ms, "p999": p.p999_ms},
                "latency_ci95": latency_ci_json(p),
                "errors_total": p.errors,
            });
            if let Value::Object(m) = &mut v {
                if let Some(rate) = p.offered_rate_per_s {
                    m.insert("offered_rate_per_s".into(), json!(rate));
                }
                if let Some(why) = p.no_interval.as_ref().filter(|_| p.throughput_ci.is_none()) {
                    m.insert("no_interval".into(), json!(why));
                }
            }
            v
        })
        .collect();
    Value::Array(levels)
}

fn errors_json(step: &StepResult) -> Value {
    let mut by_class = Map::new();
    for (class, n) in &step.errors.counts {
        by_class.insert(class.name().into(), json!(n));
    }
    Value::Object(by_class)
}

/// The `connect_latency_ms` object of a step: connections opened inside
/// the window and their connect times; absent when none was opened.
fn connect_json(step: &StepResult) -> Option<Value> {
    let s = step.connect_latency.summary()?;
    Some(json!({"count": step.connect_latency.count(), "mean": s.mean, "p50": s.p50, "p90": s.p90, "p99": s.p99, "max": s.max}))
}

fn step_json(step: &StepResult, first: Option<&StepResult>) -> Value {
    let lat = step.latency.summary().map(summary_json);
    let messages: Map<String, Value> =
        step.errors.first_message.iter().map(|(c, m): (&ErrorClass, &String)| (c.name().to_string(), json!(m))).collect();
    let measured = step.published_throughput_per_s.is_none();
    let mut v = json!({
        "concurrency": step.concurrency,
        "requests": measured.then_some(step.requests),
        "queries": measured.then_some(step.queries),
        "errors": errors_json(step),
        "errors_total": step.errors.total(),
        "error_messages": messages,
        "throughput_per_s": step.throughput_per_s(),
        "scaling_pct": scaling_pct(step, first),
        "window_s": measured.then_some(step.window_s),
        "window_start_unix_ms": measured.then_some(step.window_start_unix_ms),
        "window_end_unix_ms": measured.then_some(step.window_end_unix_ms),
        "latency_ms": lat,
        "client_cpu_s": (step.client_cores > 0).then_some(step.client_cpu_s),
        "client_cpu_pct": step.client_cpu_pct(),
        "client_poll_idle_s": step.client_poll_idle_s,
        "client_work_cpu_pct": step.client_poll_idle_s.and(step.client_work_cpu_pct()),
        "client_cores": (step.client_cores > 0).then_some(step.client_cores),
        "client_saturated": step.client_saturated(),
        "client_lag_ms": step.client_lag_ms,
        "client_runq_wait_pct": step.client_runq_wait_pct,
        "reconnects": measured.then_some(step.reconnects),
        "connect_ms": step.connect_ms,
        "partial": step.partial,
        "statements": step.statements,
        "telemetry": step.telemetry.as_ref().map(|t| telemetry_json(t, step)),
        "seconds": step.seconds.iter().map(|s| second_json(s, step.offered_rate_per_s.is_some())).collect::<Vec<_>>(),
    });
    // Open loop only (closed-loop steps keep their shape): `latency_ms` counts
    // from the intended send, `service_ms` from the actual one.
    if let (Some(rate), Value::Object(m)) = (step.offered_rate_per_s, &mut v) {
        m.insert("offered_rate_per_s".into(), json!(rate));
        m.insert("achieved_pct".into(), json!(step.achieved_pct()));
        m.insert("service_ms".into(), json!(step.service.as_ref().and_then(|h| h.summary()).map(summary_json)));
        m.insert("dropped".into(), json!(step.dropped));
        m.insert("late_sends".into(), json!(step.late_sends));
    }
    if let (Some(c), Value::Object(m)) = (connect_json(step), &mut v) {
        m.insert("connect_latency_ms".into(), c);
    }
    // HTTP/2 only: requests that waited for the server's send window.
    if let (Some(n), Value::Object(m)) = (step.flow_stalls, &mut v) {
        m.insert("flow_stalls".into(), json!(n));
        m.insert("flow_stall_ms".into(), json!(step.flow_stall_ms));
    }
    // Every client accounted for: how the completions spread over them.
    if let (Some(c), Value::Object(m)) = (&step.clients, &mut v) {
        m.insert(
            "clients".into(),
            json!({
                "counted": c.clients,
                "served_nothing": c.served_nothing,
                "min_completions": c.min,
                "max_completions": c.max,
                "jain_fairness": c.jain(),
                "outstanding_at_end": c.outstanding_at_end,
                "oldest_outstanding_ms": c.oldest_outstanding_ms,
            }),
        );
    }
    // This window's own intervals (batch means over its seconds), beside its figures.
    if let (Some(p), Value::Object(m)) = (Point::from_step(step).filter(|_| measured && !step.partial), &mut v) {
        m.insert("throughput_ci95".into(), ci_json(p.throughput_ci));
        m.insert("latency_ci95".into(), latency_ci_json(&p));
        if let Some(why) = p.no_interval.filter(|_| p.throughput_ci.is_none()) {
            m.insert("no_interval".into(), json!(why));
        }
    }
    v
}

/// One second of a step's window; an open-loop second adds its service
/// time (from the actual send) beside its latency (from the intended send).
fn second_json(s: &scalelab_core::SecondResult, open_loop: bool) -> Value {
    let mut v = json!({
        "second": s.second,
        "requests": s.requests,
        "errors": s.errors,
        "p50_ms": s.latency.quantile_ms(0.5),
        "p99_ms": s.latency.quantile_ms(0.99),
    });
    if let (true, Value::Object(m)) = (open_loop, &mut v) {
        m.insert("service_p50_ms".into(), json!(s.service.quantile_ms(0.5)));
        m.insert("service_p99_ms".into(), json!(s.service.quantile_ms(0.99)));
    }
    v
}

fn summary_json(s: scalelab_core::LatencySummary) -> Value {
    json!({"mean": s.mean, "stddev": s.stddev, "p50": s.p50, "p90": s.p90, "p99": s.p99, "p999": s.p999, "max": s.max})
}

/// The `telemetry` object of a step: figures are null when unavailable, with
/// the reason under `unavailable`.
fn telemetry_json(t: &scalelab_core::StepTelemetry, step: &StepResult) -> Value {
    let mut v = serde_json::to_value(t).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.insert("client_cpu_pct".into(), json!(step.client_cpu_pct()));
        if t.db.is_none() {
            if let Some(Value::Object(u)) = m.get_mut("unavailable") {
                u.entry("db").or_insert_with(|| json!("no database probe for this target (give --db-probe URL)"));
            }
        }
    }
    v
}
