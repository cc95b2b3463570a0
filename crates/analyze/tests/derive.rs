//! A run built in memory with typed samples (no store, no binary): the step
//! telemetry `derive` fills in equals figures computed by hand.

use scalelab_analyze::telemetry::derive;
use scalelab_core::sample::{
    CpuStat, CpuTicks, DbSample, GlobalStatus, ProcessSample, RunSamples, StateTimes, SystemSample, ThreadSecond, Timestamp,
};
use scalelab_core::{HotThread, Run, RunKind, RunPlan, StepResult, ThreadStatesPct};

fn at(ms: i64) -> Timestamp {
    Timestamp { monotonic_ns: ms as u64 * 1_000_000, unix_ms: ms }
}

/// `/proc/stat` at `ms`: ticks and context switches since boot.
fn system(ms: i64, user: u64, sys: u64, idle: u64, iowait: u64, softirq: u64, ctxt: u64) -> SystemSample {
    let total = CpuTicks { user, system: sys, idle, iowait, softirq, ..Default::default() };
    SystemSample {
        at: at(ms),
        user_hz: 100,
        cpu: Some(CpuStat { total: Some(total), ctxt: Some(ctxt), ..Default::default() }),
        ..Default::default()
    }
}

fn process(ms: i64, user_ticks: u64, sys_ticks: u64, vol: u64, invol: u64) -> ProcessSample {
    ProcessSample {
        at: at(ms),
        pid: 42,
        user_hz: 100,
        alive: true,
        cpu_user_ticks: Some(user_ticks),
        cpu_system_ticks: Some(sys_ticks),
        voluntary_ctxt_switches: Some(vol),
        nonvoluntary_ctxt_switches: Some(invol),
        ..Default::default()
    }
}

/// One second of thread states (milliseconds per state) with one hot thread.
fn threads(ms: i64, running_ms: u64, futex_ms: u64, idle_ms: u64, hot_pct: f64) -> ThreadSecond {
    let time = StateTimes {
        running_ns: running_ms * 1_000_000,
        futex_ns: futex_ms * 1_000_000,
        idle_ns: idle_ms * 1_000_000,
        ..Default::default()
    };
    let hot = HotThread { tid: 7, name: "worker".into(), cpu_pct: hot_pct, runnable_pct: None };
    ThreadSecond { unix_ms: ms, wall_ns: 1_000_000_000, time, hottest: vec![hot] }
}

fn mysql(ms: i64, questions: u64) -> DbSample {
    let status = GlobalStatus::from_rows([("Questions", questions.to_string().as_str())]);
    DbSample { unix_ms: ms, engine: "mysql".into(), status: Some(status), ..Default::default() }
}

fn step(start_ms: i64, end_ms: i64, requests: u64) -> StepResult {
    StepResult {
        concurrency: 4,
        window_s: (end_ms - start_ms) as f64 / 1000.0,
        window_start_unix_ms: start_ms,
        window_end_unix_ms: end_ms,
        requests,
        ..Default::default()
    }
}

fn run(target: &str, steps: Vec<StepResult>, samples: RunSamples, notes: &[(&str, &str)]) -> Run {
    Run {
        id: 1,
        kind: RunKind::Sweep,
        plan: RunPlan {
            label: "in memory".into(),
            target: target.into(),
            workload: "GET /".into(),
            steps: vec![],
            client_threads: 1,
            options: Default::default(),
        },
        environment: Default::default(),
        started_unix_ms: 0,
        finished_unix_ms: None,
        complete: true,
        outcome: None,
        steps,
        samples,
        notes: notes.iter().map(|(k, w)| (k.to_string(), w.to_string())).collect(),
    }
}

fn samples() -> RunSamples {
    RunSamples {
        system: vec![
            system(10_000, 1000, 500, 8000, 100, 50, 50_000),
            system(11_000, 1050, 520, 8100, 110, 52, 53_000),
            // 2 s after the first: +120 user, +40 system, +200 idle, +20 iowait, +20 softirq ticks
            // (400 in all), +6000 context switches.
            system(12_000, 1120, 540, 8200, 120, 70, 56_000),
            // Long after the window: would change every figure if it were used.
            system(30_000, 9_000_000, 9_000_000, 9_000_000, 0, 0, 9_000_000),
        ],
        // +150 user and +50 system ticks at 100 Hz over 2 s; +4000 voluntary, +400 involuntary switches.
        process: vec![process(10_000, 100, 0, 1000, 0), process(12_000, 250, 50, 5000, 400)],
        threads: vec![threads(11_000, 300, 600, 100, 80.0), threads(12_000, 100, 800, 100, 60.0)],
        ..Default::default()
    }
}

#[test]
fn step_telemetry_equals_the_figures_computed_by_hand() {
    let mut r = run("http://127.0.0.1:8080/", vec![step(10_000, 12_000, 2000)], samples(), &[("pressurecpu", "psi off")]);
    derive(&mut r);
    let t = r.steps[0].telemetry.as_ref().expect("a measured step gets telemetry");
    assert_eq!(t.samples, 3, "the three system samples within the window");
    // CPU: idle 200/400 = 50 %, iowait 20/400 = 5 %, so busy 45 %; user 120/400 = 30 %;
    // system + softirq (40 + 20)/400 = 15 %, of which softirq 20/400 = 5 %.
    assert_eq!(t.cpu_busy_pct, Some(45.0));
    assert_eq!(t.cpu_user_pct, Some(30.0));
    assert_eq!(t.cpu_sys_pct, Some(15.0));
    assert_eq!(t.cpu_iowait_pct, Some(5.0));
    assert_eq!(t.cpu_softirq_pct, Some(5.0));
    // 6000 context switches over 2 s.
    assert_eq!(t.cs_per_s, Some(3000.0));
    // Server: (150 + 50) ticks / 100 Hz / 2 s = 100 % of one core; (4000 + 400) / 2 s switches,
    // and 2000 requests in 2 s: 2200 / 1000 per request.
    assert_eq!(t.server_cpu_pct, Some(100.0));
    assert_eq!(t.server_cs_per_s, Some(2200.0));
    assert_eq!(t.cs_per_request, Some(2.2));
    // Thread states: running 400, futex 1400, idle 200 of 2000 ms.
    let shares = ThreadStatesPct { running: 20.0, runnable: 0.0, futex: 70.0, io: 0.0, idle: 10.0, other: 0.0 };
    assert_eq!(t.thread_states_pct, Some(shares));
    assert_eq!(t.hottest_threads.len(), 1);
    assert_eq!((t.hottest_threads[0].tid, t.hottest_threads[0].cpu_pct), (7, 70.0), "mean of 80 and 60 %");
    // A probe note reaches every step; no specimen or database figures were asked for.
    assert_eq!(t.unavailable.get("pressurecpu").map(String::as_str), Some("psi off"));
    assert!(t.specimen.is_none() && !t.unavailable.contains_key("specimen"));
    assert!(t.db.is_none() && !t.unavailable.contains_key("db"));
}

#[test]
fn specimen_and_database_notes_follow_the_rules() {
    let mut s = samples();
    s.db = vec![mysql(10_000, 0), mysql(12_000, 500)];
    let imported = StepResult { published_throughput_per_s: Some(100.0), ..step(10_000, 12_000, 0) };
    let steps = vec![step(10_000, 12_000, 2000), step(14_000, 16_000, 2000), imported];
    let mut r = run("specimen:global-lock", steps, s, &[("db", "lost the connection")]);
    derive(&mut r);
    let first = r.steps[0].telemetry.as_ref().unwrap();
    // The specimen target without /__stats readings: its reason, not a zero.
    assert!(first.specimen.is_none());
    assert_eq!(first.unavailable["specimen"], "fewer than two readings of the specimen's /__stats in the window");
    // The database probe outlived this step: its figures, without the note.
    assert_eq!(first.db.as_ref().map(|d| d.questions_per_s), Some(Some(250.0)));
    assert!(!first.unavailable.contains_key("db"));
    // The next step had no reading: the probe's own note says why.
    let second = r.steps[1].telemetry.as_ref().unwrap();
    assert!(second.db.is_none());
    assert_eq!(second.unavailable["db"], "lost the connection");
    // An imported step is left alone.
    assert!(r.steps[2].telemetry.is_none());
}

#[test]
fn a_run_without_system_samples_is_left_alone() {
    let mut r = run("http://127.0.0.1:8080/", vec![step(10_000, 12_000, 2000)], RunSamples::default(), &[("pressurecpu", "psi off")]);
    derive(&mut r);
    assert!(r.steps[0].telemetry.is_none());
}
