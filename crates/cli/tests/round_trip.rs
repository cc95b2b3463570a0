//! A step's result keeps every field through every form it takes (issue
//! 41): the store, an agent's wire form, and the merge of one agent's
//! result. A field added to `StepResult` must be added to [`fingerprint`]
//! (the destructuring below has no `..`, so the test does not compile
//! until it is), and then this test says which form drops it.

use scalelab_core::result::{ClientSpread, SecondResult, StatementLatency, StepResult};
use scalelab_core::{ErrorClass, Failure, LatencyHistogram, RunKind, RunPlan, StepPlan};
use std::time::Duration;

fn hist(ms: &[u64]) -> LatencyHistogram {
    let mut h = LatencyHistogram::new();
    for m in ms {
        h.record(Duration::from_micros(m * 1000 + 137));
    }
    h
}

/// A step with every field set to something other than its default.
fn full() -> StepResult {
    let mut errors = scalelab_core::ErrorCounts::default();
    errors.add(&Failure::new(ErrorClass::Reset, "connection reset by peer"));
    let seconds = (0..2)
        .map(|s| SecondResult { second: s, requests: 40 + u64::from(s), errors: 1, latency: hist(&[1, 2, 3]), service: hist(&[1, 1]) })
        .collect();
    StepResult {
        concurrency: 8,
        window_s: 2.0,
        window_start_unix_ms: 1_700_000_001_000,
        window_end_unix_ms: 1_700_000_003_000,
        requests: 81,
        queries: 243,
        errors,
        latency: hist(&[1, 2, 3, 40]),
        seconds,
        client_cpu_s: 0.75,
        client_cores: 2,
        reconnects: 3,
        connect_ms: Some(0.4),
        connect_latency: hist(&[1]),
        client_lag_ms: Some(2.5),
        client_runq_wait_pct: Some(7.5),
        partial: true,
        published_throughput_per_s: None,
        telemetry: None,
        statements: vec![StatementLatency { name: "u #1: SELECT 1".into(), count: 81, mean_ms: 0.3, p50_ms: 0.25, p99_ms: 1.5 }],
        offered_rate_per_s: Some(40.0),
        service: Some(hist(&[1, 2])),
        dropped: Some(5),
        late_sends: Some(2),
        clients: Some(ClientSpread::of(&[40, 41, 0, 0, 0, 0, 0, 0], &[1500.0])),
        flow_stalls: Some(6),
        flow_stall_ms: Some(12.5),
        client_poll_idle_s: Some(0.25),
    }
}

/// Every field of a step in a comparable form (a histogram as its count
/// and quantiles: a merged histogram encodes the same values differently). `telemetry` is derived when a run is loaded, and
/// `published_throughput_per_s` is an imported series' own figure: neither
/// travels with a measured step, and both are left out (said here).
fn fingerprint(s: &StepResult) -> String {
    let StepResult {
        concurrency,
        window_s,
        window_start_unix_ms,
        window_end_unix_ms,
        requests,
        queries,
        errors,
        latency,
        seconds,
        client_cpu_s,
        client_cores,
        reconnects,
        connect_ms,
        connect_latency,
        client_lag_ms,
        client_runq_wait_pct,
        partial,
        published_throughput_per_s: _,
        telemetry: _,
        statements,
        offered_rate_per_s,
        service,
        dropped,
        late_sends,
        clients,
        flow_stalls,
        flow_stall_ms,
        client_poll_idle_s,
    } = s;
    let h = |h: &LatencyHistogram| (h.count(), [0.0, 0.5, 0.9, 0.99, 1.0].map(|q| h.quantile_ms(q)));
    let secs: Vec<_> = seconds.iter().map(|x| (x.second, x.requests, x.errors, h(&x.latency), h(&x.service))).collect();
    format!(
        "{concurrency} {window_s} {window_start_unix_ms} {window_end_unix_ms} {requests} {queries} {errors:?} {:?} {secs:?} {client_cpu_s} {client_cores} {reconnects} {connect_ms:?} {:?} {client_lag_ms:?} {client_runq_wait_pct:?} {partial} {statements:?} {offered_rate_per_s:?} {:?} {dropped:?} {late_sends:?} {clients:?} {flow_stalls:?} {flow_stall_ms:?} {client_poll_idle_s:?}",
        h(latency),
        h(connect_latency),
        service.as_ref().map(h)
    )
}

#[test]
fn a_full_step_comes_back_equal_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = scalelab_store::Store::open(&dir.path().join("s.db")).unwrap();
    let plan = RunPlan {
        label: "round trip".into(),
        target: "http://127.0.0.1:1/".into(),
        workload: "GET /".into(),
        steps: vec![StepPlan { concurrency: 8, warmup_s: 1.0, window_s: 2.0, pause_s: 0.0, think_time_s: 0.0, open_loop: None }],
        client_threads: 2,
        options: Default::default(),
    };
    let id = store.begin_run(RunKind::Sweep, &plan, &Default::default(), None).unwrap();
    store.add_step(id, 0, &full()).unwrap();
    let back = &store.load_run(id).unwrap().steps[0];
    assert_eq!(fingerprint(back), fingerprint(&full()));
}

#[test]
fn a_full_step_comes_back_equal_from_an_agent_and_its_merge() {
    // The frame an agent sends, decoded as the coordinator decodes it.
    let frame = scalelab_agent::proto::FromAgent::StepDone { index: 0, result: Box::new(full()) };
    let text = serde_json::to_string(&frame).unwrap();
    let Ok(scalelab_agent::proto::FromAgent::StepDone { result, .. }) = serde_json::from_str(&text) else { panic!("{text}") };
    let back = *result;
    assert_eq!(fingerprint(&back), fingerprint(&full()), "through the agent's wire form");
    // One agent's result merged is that result.
    let merged = StepResult::merge(8, &[back], false);
    assert_eq!(fingerprint(&merged), fingerprint(&full()), "through the merge of one agent");
}
