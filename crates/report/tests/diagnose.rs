//! Pins the text of `diagnose` (curve line, USL line, verdicts with their
//! evidence and next steps) on representative synthetic runs (insta
//! snapshots in `tests/snapshots`; review changes with `cargo insta review`).

use scalelab_analyze::verdict::to_json;
use scalelab_analyze::{diagnose, Confidence, VerdictKind};
use scalelab_core::{Environment, ErrorClass, Failure, HotThread, Run, RunKind, RunPlan, StepResult, StepTelemetry, ThreadStatesPct};
use scalelab_report::diagnosis::render_text;

fn telemetry(busy: f64, user: f64, sys: f64, futex: f64, cs_per_request: f64, server_cpu: f64) -> StepTelemetry {
    StepTelemetry {
        samples: 10,
        cpu_busy_pct: Some(busy),
        cpu_user_pct: Some(user),
        cpu_sys_pct: Some(sys),
        cpu_iowait_pct: Some(0.2),
        cpu_softirq_pct: Some(1.5),
        softirq_busiest_cpu: None,
        specimen: None,
        cs_per_s: Some(5000.0),
        server_cpu_pct: Some(server_cpu),
        server_cs_per_s: Some(2000.0),
        server_threads: None,
        server_rss_mb: None,
        cs_per_request: Some(cs_per_request),
        thread_states_pct: Some(ThreadStatesPct { running: 100.0 - futex - 10.0, runnable: 5.0, futex, io: 0.0, idle: 5.0, other: 0.0 }),
        hottest_threads: vec![HotThread { tid: 4242, name: "worker-1".into(), cpu_pct: 35.0, runnable_pct: None }],
        tcp_time_wait: Some(120),
        tcp_time_wait_to_target: Some(120),
        listen_queue_max: Some(0),
        listen_queue_mean: Some(0.0),
        listen_backlog: Some(128),
        listen_overflows_per_s: Some(0.0),
        listen_drops_per_s: Some(0.0),
        retrans_per_s: Some(0.0),
        disk_iops: Some(3.0),
        net_mb_per_s: Some(4.0),
        db: None,
        unavailable: Default::default(),
    }
}

fn step(n: u32, x: f64, client_cpu_pct: f64, t: StepTelemetry) -> StepResult {
    StepResult {
        concurrency: n,
        window_s: 10.0,
        requests: (x * 10.0).round() as u64,
        queries: (x * 10.0).round() as u64,
        client_cpu_s: client_cpu_pct / 100.0 * 10.0 * 4.0,
        client_cores: 4,
        telemetry: Some(t),
        ..StepResult::default()
    }
}

fn run(label: &str, steps: Vec<StepResult>) -> Run {
    Run {
        id: 7,
        kind: RunKind::Sweep,
        plan: RunPlan {
            label: label.into(),
            target: "specimen:x".into(),
            workload: "GET /".into(),
            steps: vec![],
            client_threads: 4,
            options: Default::default(),
        },
        environment: Environment { logical_cores: Some(8), ip_local_port_range: Some("32768 60999".into()), ..Default::default() },
        started_unix_ms: 0,
        finished_unix_ms: None,
        complete: true,
        outcome: None,
        steps,
        samples: Default::default(),
        notes: vec![],
    }
}

/// The G5/Tiger story: 192, 274, then collapse, CPU idle, threads on futexes.
fn global_lock() -> Run {
    let pts = [(1, 192.0), (2, 274.0), (5, 113.0), (10, 62.0), (20, 50.0), (35, 50.0), (50, 47.0)];
    let steps = pts
        .iter()
        .map(|&(n, x)| {
            let growth = f64::from(n).min(14.0);
            let mut t = telemetry(38.0, 16.0, 22.0, if n == 1 { 10.0 } else { 71.0 }, 47.0 * growth, 180.0);
            t.server_cs_per_s = Some(x * 47.0 * growth);
            step(n, x, 8.0, t)
        })
        .collect();
    run("specimen global-lock", steps)
}

/// Scales until every core is busy in user space.
fn cpu_bound() -> Run {
    let pts = [(1, 9_800.0), (2, 19_100.0), (4, 36_000.0), (8, 61_000.0), (16, 64_500.0), (32, 64_000.0)];
    let steps = pts
        .iter()
        .map(|&(n, x)| {
            let busy = (f64::from(n) * 12.0).min(97.0);
            step(n, x, 20.0, telemetry(busy, busy * 0.8, busy * 0.2, 3.0, 1.1, busy * 7.5))
        })
        .collect();
    run("specimen scales", steps)
}

/// The client runs out of CPU at 64 clients; the server idles. Also shows a
/// probe that was unavailable.
fn client_bound() -> Run {
    let pts = [(1, 5_000.0), (4, 18_000.0), (16, 31_000.0), (64, 32_000.0)];
    let steps = pts
        .iter()
        .map(|&(n, x)| {
            // Context switches per request rise x4 from 16 clients: with the
            // thread states unavailable, lock contention can only be suspected.
            let mut t = telemetry(45.0, 30.0, 15.0, 2.0, if n >= 16 { 4.0 } else { 1.0 }, 120.0);
            t.thread_states_pct = None;
            t.hottest_threads.clear();
            t.unavailable.insert("thread_states".into(), "permission denied reading /proc/PID/task/TID/stat".into());
            step(n, x, if n >= 16 { 97.0 } else { 40.0 }, t)
        })
        .collect();
    run("taskset -c 0 scalelab", steps)
}

/// Past 100 clients the accept queue overflows and connections are refused.
fn errors() -> Run {
    let pts = [(10, 9_000.0), (50, 30_000.0), (100, 33_000.0), (200, 21_000.0)];
    let steps = pts
        .iter()
        .map(|&(n, x)| {
            let mut t = telemetry(60.0, 40.0, 20.0, 4.0, 1.0, 300.0);
            let mut s;
            if n >= 100 {
                t.listen_overflows_per_s = Some(if n == 200 { 2_300.0 } else { 40.0 });
                t.listen_drops_per_s = t.listen_overflows_per_s;
                // nginx's own accept queue full: its backlog of 128 waiting.
                (t.listen_queue_max, t.listen_queue_mean) = (Some(128), Some(120.0));
                s = step(n, x, 30.0, t);
                let refused = if n == 200 { 30_000 } else { 200 };
                for _ in 0..refused {
                    s.errors.add(&Failure::new(ErrorClass::ConnectRefused, "connection refused"));
                }
            } else {
                s = step(n, x, 30.0, t);
            }
            s
        })
        .collect();
    run("nginx backlog 128", steps)
}

#[test]
fn global_lock_text() {
    let r = global_lock();
    let d = diagnose(&r);
    assert_eq!(d.verdicts[0].kind, VerdictKind::LockContention);
    assert_eq!(d.verdicts[0].confidence, Confidence::High);
    insta::assert_snapshot!("global_lock", render_text(&d, &r.plan.label));
}

#[test]
fn cpu_bound_text() {
    let r = cpu_bound();
    let d = diagnose(&r);
    assert_eq!(d.verdicts.iter().map(|v| v.kind).collect::<Vec<_>>(), vec![VerdictKind::CpuBoundUser]);
    insta::assert_snapshot!("cpu_bound", render_text(&d, &r.plan.label));
}

#[test]
fn client_bound_text() {
    let r = client_bound();
    let d = diagnose(&r);
    assert_eq!(d.verdicts[0].kind, VerdictKind::ClientBound);
    let lock = &d.verdicts[1];
    assert_eq!((lock.kind, lock.confidence), (VerdictKind::LockContention, Confidence::Low));
    assert_eq!(lock.missing, vec!["server thread states: permission denied reading /proc/PID/task/TID/stat".to_string()]);
    let text = render_text(&d, &r.plan.label);
    assert!(text.lines().nth(3).unwrap().contains("CLIENT-BOUND (high)"), "{text}");
    insta::assert_snapshot!("client_bound", text);
}

#[test]
fn errors_text_and_json() {
    let r = errors();
    let d = diagnose(&r);
    assert_eq!(d.verdicts.iter().map(|v| v.kind).collect::<Vec<_>>(), vec![VerdictKind::Errors, VerdictKind::AcceptOverflow]);
    insta::assert_snapshot!("errors", render_text(&d, &r.plan.label));
    insta::assert_snapshot!("errors_json", serde_json::to_string_pretty(&to_json(&d)).unwrap());
}

/// CPU-bound at 32 clients, and connection errors only at 16: two
/// verdicts at two steps, the more important one at the later step.
fn cpu_bound_then_errors() -> Run {
    let mut r = cpu_bound();
    let last = &mut r.steps[4];
    for _ in 0..20_000 {
        last.errors.add(&Failure::new(ErrorClass::ConnectRefused, "connection refused"));
    }
    r
}

#[test]
fn verdicts_are_listed_in_step_order() {
    let d = diagnose(&cpu_bound_then_errors());
    let at: Vec<(VerdictKind, u32)> = d.verdicts.iter().map(|v| (v.kind, v.concurrency)).collect();
    assert!(at.len() >= 2 && at.windows(2).any(|w| w[0].1 < w[1].1), "two verdicts at two steps: {at:?}");
    for r in [global_lock(), cpu_bound(), client_bound(), errors(), cpu_bound_then_errors()] {
        let d = diagnose(&r);
        let order: Vec<u32> = d.verdicts.iter().map(|v| v.concurrency).collect();
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(order, sorted, "{}: verdicts at {order:?}", r.plan.label);
    }
}

#[test]
fn the_peak_line_names_the_runs_unit() {
    let mut r = global_lock();
    assert!(render_text(&diagnose(&r), &r.plan.label).contains("peak 274 req/s at 2 clients"));
    r.plan.options.insert("throughput_unit".into(), "tx/s".into());
    let text = render_text(&diagnose(&r), &r.plan.label);
    assert!(text.contains("peak 274 tx/s at 2 clients") && text.contains("collapse: 47 tx/s"), "{text}");
    r.plan.options.insert("throughput_unit".into(), "/s".into());
    assert!(render_text(&diagnose(&r), &r.plan.label).contains("peak 274/s at 2 clients"));
}
