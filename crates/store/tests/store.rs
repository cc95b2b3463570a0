//! Store round trips and schema evolution.

use scalelab_core::{ErrorClass, Failure, LatencyHistogram, RunKind, RunPlan, SecondResult, StepPlan, StepResult};
use scalelab_store::{RunSelector, Store, StoreError, LATEST_VERSION};
use std::time::Duration;

fn plan(label: &str) -> RunPlan {
    RunPlan {
        label: label.into(),
        target: "http://127.0.0.1:1/".into(),
        workload: "GET /".into(),
        steps: vec![StepPlan { concurrency: 2, warmup_s: 1.0, window_s: 2.0, pause_s: 1.0, think_time_s: 0.0, open_loop: None }],
        client_threads: 2,
        options: Default::default(),
    }
}

fn step(concurrency: u32) -> StepResult {
    let mut latency = LatencyHistogram::new();
    let mut seconds = Vec::new();
    for s in 0..2u32 {
        let mut h = LatencyHistogram::new();
        for i in 0..100u64 {
            h.record(Duration::from_micros(100 + i + u64::from(s) * 1000));
        }
        latency.merge(&h);
        seconds.push(SecondResult { second: s, requests: 100, errors: 1, latency: h, ..Default::default() });
    }
    let mut r = StepResult {
        concurrency,
        window_s: 2.0,
        requests: 200,
        queries: 200,
        latency,
        seconds,
        client_cpu_s: 0.5,
        client_cores: 2,
        ..Default::default()
    };
    r.errors.add(&Failure::new(ErrorClass::Http5xx, "HTTP status 503"));
    r.errors.add(&Failure::new(ErrorClass::Http5xx, "HTTP status 502"));
    r
}

#[test]
fn run_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("s.db")).unwrap();
    let id = store.begin_run(RunKind::Sweep, &plan("a"), &Default::default(), None).unwrap();
    store.add_step(id, 0, &step(1)).unwrap();
    let mut without_keepalive = step(2);
    for ms in [40, 41, 45] {
        without_keepalive.connect_latency.record(std::time::Duration::from_millis(ms));
    }
    store.add_step(id, 1, &without_keepalive).unwrap();
    let run = store.load_run(id).unwrap();
    assert!(!run.complete, "open until finished");
    assert!(run.steps[0].connect_latency.is_empty(), "no connection opened in the window: none stored");
    assert_eq!(run.steps[1].connect_latency.count(), 3);
    assert!((run.steps[1].connect_latency.summary().unwrap().max - 45.0).abs() < 0.1);
    store.finish_run(id, true, "completed").unwrap();
    let run = store.load_run(id).unwrap();
    assert!(run.complete);
    assert_eq!(run.outcome.as_deref(), Some("completed"));
    assert_eq!(run.steps.len(), 2);
    let s = &run.steps[1];
    assert_eq!((s.concurrency, s.requests), (2, 200));
    assert_eq!(s.errors.get(ErrorClass::Http5xx), 2);
    assert_eq!(s.errors.first_message[&ErrorClass::Http5xx], "HTTP status 503");
    assert_eq!(s.latency.count(), 200);
    assert_eq!(s.seconds.len(), 2);
    assert_eq!(s.seconds[1].latency.count(), 100);
    assert_eq!(store.resolve(&RunSelector::Last).unwrap(), id);
    assert_eq!(store.resolve(&RunSelector::parse("a")).unwrap(), id);
    store.begin_run(RunKind::Sweep, &plan("a"), &Default::default(), None).unwrap();
    assert!(matches!(store.resolve(&RunSelector::parse("a")), Err(StoreError::Ambiguous { count: 2, .. })));
}

#[test]
fn a_version_1_store_opens_after_migration() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        // A store as scalelab wrote it at schema version 1, with one run in it.
        let old = Store::create_at_version(&path, 1).unwrap();
        assert_eq!(old.schema_version().unwrap(), 1);
        old.execute_raw(
            r#"INSERT INTO runs(id, kind, label, target, workload, started_unix_ms, complete, plan_json, environment_json)
               VALUES (7, 'sweep', 'v1 run', 'http://127.0.0.1:1/', 'GET /', 1700000000000, 1,
                       '{"label":"v1 run","target":"http://127.0.0.1:1/","workload":"GET /","steps":[],"client_threads":1}',
                       '{"scalelab_version":"0.0.1"}');
               INSERT INTO steps(run_id, idx, concurrency, window_s, requests, queries, errors_json, partial)
               VALUES (7, 0, 1, 2.0, 500, 500, '{"counts":{},"first_message":{}}', 0);"#,
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), LATEST_VERSION);
    let run = store.load_run(7).unwrap();
    assert_eq!(run.plan.label, "v1 run");
    assert_eq!(run.steps[0].requests, 500);
    assert_eq!(run.steps[0].throughput_per_s(), 250.0);
    assert_eq!(run.steps[0].published_throughput_per_s, None, "column added by migration 2 reads as missing");
    assert!(run.steps[0].latency.summary().is_none(), "no histogram: no latency, not zero latency");
}

#[test]
fn a_newer_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    {
        let s = Store::open(&path).unwrap();
        s.execute_raw("UPDATE scalelab_meta SET value = '999' WHERE key = 'schema_version'").unwrap();
    }
    match Store::open(&path) {
        Err(StoreError::TooNew { found: 999, .. }) => {}
        other => panic!("expected TooNew, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn a_version_7_store_migrates_and_keeps_open_loop_steps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v7.db");
    {
        // A store as scalelab wrote it at schema version 7 (before open-loop steps).
        let old = Store::create_at_version(&path, 7).unwrap();
        old.execute_raw(
            r#"INSERT INTO runs(id, kind, label, target, workload, started_unix_ms, complete, plan_json, environment_json)
               VALUES (3, 'sweep', 'v7 run', 'http://127.0.0.1:1/', 'GET /', 1700000000000, 1,
                       '{"label":"v7 run","target":"http://127.0.0.1:1/","workload":"GET /","steps":[],"client_threads":1}',
                       '{"scalelab_version":"0.0.7"}');
               INSERT INTO steps(run_id, idx, concurrency, window_s, requests, queries, errors_json, partial, statements_json)
               VALUES (3, 0, 4, 2.0, 800, 800, '{"counts":{},"first_message":{}}', 0, NULL);"#,
        )
        .unwrap();
        assert!(old.execute_raw("SELECT dropped FROM steps").is_err(), "version 7 has no open-loop columns");
    }
    let mut store = Store::open(&path).unwrap();
    // 8: open-loop steps; 9: connect times in the window; 10: service time
    // per second; 11: the spread of completions over the clients; 12:
    // HTTP/2 flow-control stalls; 13: a busy-polling client's idle polls.
    assert_eq!((store.schema_version().unwrap(), LATEST_VERSION), (13, 13));
    let old = &store.load_run(3).unwrap().steps[0];
    assert!(old.clients.is_none(), "a step from before version 11 has no client spread");
    assert_eq!((old.flow_stalls, old.flow_stall_ms), (None, None), "a step from before version 12 measured no flow control");
    assert_eq!(old.client_poll_idle_s, None, "a step from before version 13 was not busy-polled");
    assert!(old.connect_latency.is_empty(), "a step from before version 9 has no connect times");
    assert_eq!((old.requests, old.offered_rate_per_s, old.dropped, old.late_sends), (800, None, None, None));
    assert!(old.service.is_none(), "a closed-loop step has no service-time histogram");

    // An open-loop step written now keeps its figures.
    let mut open = step(40);
    open.offered_rate_per_s = Some(2000.0);
    let mut service = LatencyHistogram::new();
    service.record(Duration::from_micros(150));
    open.service = Some(service);
    open.seconds[1].service.record(Duration::from_millis(3));
    open.dropped = Some(12);
    open.late_sends = Some(3);
    let id = store.begin_run(RunKind::Sweep, &plan("open"), &Default::default(), None).unwrap();
    store.add_step(id, 0, &open).unwrap();
    store.add_step(id, 1, &step(2)).unwrap();
    let run = store.load_run(id).unwrap();
    let s = &run.steps[0];
    assert_eq!((s.offered_rate_per_s, s.dropped, s.late_sends), (Some(2000.0), Some(12), Some(3)));
    assert_eq!(s.service.as_ref().map(|h| h.count()), Some(1));
    assert!(s.seconds[0].service.is_empty(), "a second without service times stores none");
    assert_eq!(s.seconds[1].service.count(), 1);
    assert!((s.seconds[1].service.quantile_ms(0.99).unwrap() - 3.0).abs() < 0.01);
    let closed = &run.steps[1];
    assert!(closed.seconds.iter().all(|x| x.service.is_empty()));
    assert_eq!((closed.offered_rate_per_s, closed.dropped, closed.late_sends), (None, None, None));

    // The spread over the clients comes back as it went in.
    let mut starved = step(4);
    starved.clients = Some(scalelab_core::ClientSpread::of(&[400, 0, 400, 0], &[1800.0, 1750.0]));
    let id = store.begin_run(RunKind::Sweep, &plan("starved"), &Default::default(), None).unwrap();
    store.add_step(id, 0, &starved).unwrap();
    assert_eq!(store.load_run(id).unwrap().steps[0].clients, starved.clients);
}
