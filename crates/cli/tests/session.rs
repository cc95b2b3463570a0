//! A run driven in-process through the library: a [`Session`] against the
//! specimen (served on a thread of this test process), with an observer
//! that records what it is told. The steps and the probe samples must
//! arrive typed, in order, and be what the store keeps.

use scalelab::session::{Observer, Probes, Session};
use scalelab::telemetry::Record;
use scalelab_core::{RunKind, RunPlan, StepPlan, StepResult};
use scalelab_drive::http::{HttpConfig, HttpDriver};
use scalelab_drive::{EngineOptions, LiveTick, SweepEnd};
use scalelab_probe::{CollectorConfig, Sample};
use std::sync::Arc;
use std::time::Duration;

#[derive(Default)]
struct Recorder {
    started: Vec<(usize, u32)>,
    ticks: usize,
    finished: Vec<(usize, u32, u64, String)>,
    system: usize,
    process_pids: Vec<u32>,
    threads: usize,
    specimen: usize,
    /// Events in order: 'S' step started, 'F' step finished.
    order: String,
}

impl Observer for Recorder {
    fn step_started(&mut self, index: usize, plan: &StepPlan) {
        self.started.push((index, plan.concurrency));
        self.order.push('S');
    }
    fn tick(&mut self, _index: usize, _plan: &StepPlan, _tick: &LiveTick) {
        self.ticks += 1;
    }
    fn telemetry(&mut self, records: &[Record]) {
        for r in records {
            match r {
                Record::Sample(Sample::System(_)) => self.system += 1,
                Record::Sample(Sample::Process(p)) => self.process_pids.push(p.pid),
                Record::Sample(Sample::Threads(_)) => self.threads += 1,
                Record::Sample(Sample::Specimen(_)) => self.specimen += 1,
                _ => {}
            }
        }
    }
    fn step_finished(&mut self, index: usize, result: &StepResult, unit: &str) {
        self.finished.push((index, result.concurrency, result.requests, unit.to_string()));
        self.order.push('F');
    }
}

fn specimen() -> std::net::SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let config = scalelab_specimen::SpecimenConfig {
            addr: "127.0.0.1:0".parse().unwrap(),
            mode: scalelab_specimen::Mode::Scales,
            work_us: 20,
            data_dir: None,
            stall_for: scalelab_specimen::DEFAULT_STALL_FOR,
            stall_every: scalelab_specimen::DEFAULT_STALL_EVERY,
            workers: scalelab_specimen::DEFAULT_WORKERS,
            fix: false,
        };
        let _ = scalelab_specimen::serve(config, |addr| tx.send(addr).unwrap());
    });
    rx.recv_timeout(Duration::from_secs(10)).expect("the specimen listens")
}

#[test]
fn a_session_in_process_reports_its_steps_and_typed_samples_to_the_observer_and_stores_them() {
    let addr = specimen();
    let dir = tempfile::tempdir().unwrap();
    let store = scalelab_store::Store::open(&dir.path().join("s.db")).unwrap();
    let step = |c| StepPlan { concurrency: c, warmup_s: 0.2, window_s: 1.2, pause_s: 0.0, think_time_s: 0.0, open_loop: None };
    let plan = RunPlan {
        label: "in-process".into(),
        target: format!("http://{addr}/"),
        workload: "GET /".into(),
        steps: vec![step(1), step(2)],
        client_threads: 1,
        options: Default::default(),
    };
    let me = std::process::id();
    let probes = Probes {
        collect: CollectorConfig {
            server_pid: Some(me),
            interval: Duration::from_millis(200),
            thread_hz: 20.0,
            db: None,
            specimen: Some(addr),
            redis: None,
        },
        why_no_server: None,
        profile: false,
        profile_steps: None,
        remote: None,
    };
    let env = scalelab_core::Environment::default();
    let mut session = Session::begin(store, RunKind::Sweep, plan, &env, probes).unwrap();
    let id = session.run_id().expect("recorded");
    let config = HttpConfig::get(&format!("http://{addr}/"), Duration::from_secs(5));
    let driver = Arc::new(HttpDriver::new(&config).unwrap());
    let engine = EngineOptions::new(1);
    let mut seen = Recorder::default();
    let swept = session.sweep(&driver, &engine, 1, &mut seen);
    session.stop_probes(&mut seen);
    assert_eq!(swept.end, SweepEnd::Completed);
    assert!(swept.failed_step.is_none() && swept.store_error.is_none(), "{swept:?}");
    let (complete, outcome, code) = swept.verdict();
    assert!(complete && outcome == "completed" && code == 0);

    // The steps, in order, each started before it finished.
    assert_eq!(seen.started, vec![(0, 1), (1, 2)]);
    assert_eq!(seen.order, "SFSF");
    assert_eq!(seen.finished.iter().map(|f| (f.0, f.1)).collect::<Vec<_>>(), vec![(0, 1), (1, 2)]);
    assert!(seen.finished.iter().all(|f| f.2 > 0 && f.3 == "req/s"), "{:?}", seen.finished);
    assert!(seen.ticks >= 4, "ticks: {}", seen.ticks);
    // Typed samples: the machine, this very process (the specimen's host),
    // its thread states, the specimen's own counters.
    assert!(seen.system >= 4, "system samples: {}", seen.system);
    assert!(!seen.process_pids.is_empty() && seen.process_pids.iter().all(|p| *p == me), "{:?}", seen.process_pids);
    assert!(seen.threads >= 2, "thread seconds: {}", seen.threads);
    assert!(seen.specimen >= 2, "specimen readings: {}", seen.specimen);

    // What the observer saw is what the store keeps.
    let (store, stored_id) = session.finish(true, "completed").unwrap().expect("recorded");
    assert_eq!(stored_id, id);
    let run = store.load_run(id).unwrap();
    assert!(run.complete);
    assert_eq!(run.steps.iter().map(|s| s.requests).collect::<Vec<_>>(), seen.finished.iter().map(|f| f.2).collect::<Vec<_>>());
    assert_eq!(store.load_samples(id, "system").unwrap().len(), seen.system);
    assert_eq!(store.load_samples(id, "process").unwrap().len(), seen.process_pids.len());
}
