//! The store boundary of telemetry: the records a
//! [`Collector`](scalelab_probe::Collector) sends become rows here
//! ([`store_records`]); the store turns rows back into typed samples when it
//! loads a run, and `analyze::telemetry::derive` fills the steps from them.

pub use scalelab_probe::Record;

/// Writes records to the store; a failure to store telemetry never stops the run.
/// The store boundary: here a sample becomes a row (`unix_ms`, kind name,
/// the reading as JSON) and a note's source its stored name.
pub fn store_records(store: &mut scalelab_store::Store, run_id: i64, records: Vec<Record>) {
    let mut samples = Vec::new();
    for r in records {
        match r {
            Record::Sample(s) => {
                if let Ok(json) = s.to_json() {
                    samples.push((s.unix_ms(), s.kind().name(), json));
                }
            }
            Record::Unavailable(source, why) => {
                let _ = store.add_probe_note(run_id, source.name(), &why);
            }
        }
    }
    let _ = store.add_samples(run_id, &samples);
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalelab_core::sample::ThreadSecond;
    use scalelab_core::{RunKind, RunPlan};
    use scalelab_core::{Sample, Source};
    use scalelab_probe::{SystemSample, Timestamp};
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

    /// The store writer turns typed records into exactly the rows earlier versions wrote.
    #[test]
    fn typed_records_are_stored_as_before() {
        let (_dir, mut store, id) = store();
        let sys = SystemSample { at: Timestamp { monotonic_ns: 3, unix_ms: 4000 }, user_hz: 100, ..Default::default() };
        let th = ThreadSecond { unix_ms: 4100, wall_ns: 1_000_000_000, ..Default::default() };
        let records = vec![
            Record::Sample(Sample::System(Box::new(sys.clone()))),
            Record::Sample(Sample::Threads(th.clone())),
            Record::Unavailable(Source::DbSemaphores, "the SEMAPHORES section has no counters".into()),
            Record::Unavailable(Source::ThreadRunDelay, "no schedstat".into()),
        ];
        store_records(&mut store, id, records);
        assert_eq!(store.load_samples(id, "system").unwrap(), [(4000, serde_json::to_string(&sys).unwrap())]);
        assert_eq!(store.load_samples(id, "threads").unwrap(), [(4100, serde_json::to_string(&th).unwrap())]);
        let notes = store.load_probe_notes(id).unwrap();
        assert_eq!(
            notes,
            [
                ("Db_semaphores".to_string(), "the SEMAPHORES section has no counters".to_string()),
                ("ThreadRunDelay".to_string(), "no schedstat".to_string())
            ]
        );
        let back = store.load_run_samples(id).unwrap();
        assert_eq!((back.system, back.threads), (vec![sys], vec![th]));
    }
}
