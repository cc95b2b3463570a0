//! The store boundary of telemetry: stored sample rows and probe notes
//! decoded into typed samples, and a loaded run carrying them.

use scalelab_core::sample::{DbSample, ThreadSecond};
use scalelab_core::{RunKind, RunPlan, Source};
use scalelab_store::Store;

fn store() -> (tempfile::TempDir, Store, i64) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("runs.db")).unwrap();
    let plan = RunPlan {
        label: "old".into(),
        target: "specimen:scales".into(),
        workload: "GET /".into(),
        steps: vec![],
        client_threads: 1,
        options: Default::default(),
    };
    let id = store.begin_run(RunKind::Watch, &plan, &Default::default(), None).unwrap();
    (dir, store, id)
}

/// Rows as versions before typed samples wrote them (kind strings by
/// hand, the reading serialized alone, sources as `{:?}` or by hand) load typed.
#[test]
fn a_store_written_the_old_way_loads() {
    let (_dir, mut store, id) = store();
    let system = r#"{"at":{"monotonic_ns":1,"unix_ms":1000},"user_hz":100,"cpu":null,"pressure":{"cpu":null,"io":null,"memory":null},"socket_scan_skipped":false,"newly_unavailable":[{"source":"pressure_cpu","why":"psi off"}]}"#;
    let specimen = r#"{"unix_ms":1200,"requests":500,"lock_waits":7,"spin_rounds":0,"fsyncs":0,"connections":3}"#;
    let threads = serde_json::to_string(&ThreadSecond { unix_ms: 1500, wall_ns: 9, ..Default::default() }).unwrap();
    let db = serde_json::to_string(&DbSample { unix_ms: 1300, engine: "mysql".into(), ..Default::default() }).unwrap();
    let rows = [
        (1000, "system", system.to_string()),
        (2000, "system", system.replace("\"unix_ms\":1000", "\"unix_ms\":2000")),
        (1200, "specimen", specimen.to_string()),
        (1500, "threads", threads),
        (1300, "db", db),
        (1400, "a_future_kind", "{}".to_string()),
        (1600, "system", "{not json".to_string()),
    ];
    store.add_samples(id, &rows).unwrap();
    for (source, why) in [("PressureCpu", "psi off"), ("Db_semaphores", "no counters"), ("Threads", "exited"), ("Future_probe", "x")] {
        store.add_probe_note(id, source, why).unwrap();
    }
    let s = store.load_run_samples(id).unwrap();
    let at: Vec<i64> = s.system.iter().map(|x| x.at.unix_ms).collect();
    assert_eq!(at, [1000, 2000], "undecodable rows skipped, order kept");
    assert_eq!(s.system[0].newly_unavailable[0].source, Source::PressureCpu);
    assert_eq!((s.specimen.len(), s.specimen[0].requests, s.specimen[0].lock_waits), (1, 500, 7));
    assert_eq!((s.threads.len(), s.threads[0].wall_ns), (1, 9));
    assert_eq!((s.db.len(), s.db[0].engine.as_str()), (1, "mysql"));
    assert!(s.process.is_empty());
    let keys: Vec<(String, String)> = store.load_run_notes(id).unwrap();
    let keys: Vec<(&str, &str)> = keys.iter().map(|(k, w)| (k.as_str(), w.as_str())).collect();
    assert_eq!(keys, [("db_semaphores", "no counters"), ("future_probe", "x"), ("pressurecpu", "psi off"), ("threads", "exited")]);

    // A loaded run carries the same samples and notes.
    let run = store.load_run(id).unwrap();
    assert_eq!(run.samples, s);
    assert_eq!(run.notes, store.load_run_notes(id).unwrap());
}

/// A run with no telemetry loads with nothing, not with made-up samples.
#[test]
fn a_run_without_telemetry_carries_none() {
    let (_dir, store, id) = store();
    let run = store.load_run(id).unwrap();
    assert_eq!(run.samples, Default::default());
    assert!(run.notes.is_empty());
}

/// The typed write side: records go in as they are and come back typed;
/// what cannot be stored is counted with its reason, never dropped silently.
#[test]
fn records_are_written_typed_and_failures_counted() {
    use scalelab_core::{Record, Sample};
    let (_dir, mut store, id) = store();
    let th = |ms| Record::Sample(Sample::Threads(ThreadSecond { unix_ms: ms, wall_ns: 3, ..Default::default() }));
    let records = vec![th(1000), th(2000), Record::Unavailable(Source::PressureCpu, "psi off".into())];
    store.add_records(id, &records).unwrap();
    let s = store.load_run_samples(id).unwrap();
    assert_eq!(s.threads.iter().map(|t| t.unix_ms).collect::<Vec<_>>(), [1000, 2000]);
    assert_eq!(store.load_run_notes(id).unwrap(), [("pressurecpu".to_string(), "psi off".to_string())]);
    // A run that does not exist takes nothing: every record is counted.
    let err = store.add_records(id + 1000, &records).unwrap_err();
    assert_eq!(err.records, 3, "{err}");
    assert!(err.why.contains("FOREIGN KEY"), "{err}");
    assert_eq!(store.load_run_samples(id).unwrap().threads.len(), 2, "nothing written twice");
}
