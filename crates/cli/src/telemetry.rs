//! The store boundary of telemetry: the records a
//! [`Collector`](scalelab_probe::Collector) sends become rows here
//! ([`store_records`]) and rows become typed samples again ([`load_samples`],
//! [`load_notes`]); [`attach`] fills each step's telemetry from them.

use scalelab_core::Source;
use scalelab_probe::db::summarize_db;
pub use scalelab_probe::Record;
use scalelab_probe::{RunSamples, Sample, SampleKind};

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

/// Loads and decodes every sample of a run (sweep or recorded watch); a
/// row that does not decode is skipped, as it always was.
pub fn load_samples(store: &scalelab_store::Store, run_id: i64) -> anyhow::Result<RunSamples> {
    let mut all = RunSamples::default();
    for kind in SampleKind::ALL {
        for (_, json) in store.load_samples(run_id, kind.name())? {
            if let Ok(s) = Sample::from_json(kind, &json) {
                all.push(s);
            }
        }
    }
    Ok(all)
}

/// The probe notes of a run keyed as `unavailable` maps key them
/// ([`Source::key`]; a source this version does not know, lowercased).
pub fn load_notes(store: &scalelab_store::Store, run_id: i64) -> anyhow::Result<Vec<(String, String)>> {
    Ok(store.load_probe_notes(run_id)?.into_iter().map(|(source, why)| (Source::key_of_stored(&source), why)).collect())
}

/// Fills each step's telemetry from the run's stored samples.
pub fn attach(store: &scalelab_store::Store, run: &mut scalelab_core::Run) -> anyhow::Result<()> {
    let RunSamples { system, process, threads, db, specimen } = load_samples(store, run.id)?;
    if system.is_empty() {
        return Ok(());
    }
    let notes = load_notes(store, run.id)?;
    let is_specimen = scalelab_core::Target::parse(&run.plan.target).is_ok_and(|t| t.kind() == scalelab_core::TargetKind::Specimen);
    let last_db = db.iter().map(|s| s.unix_ms).max().unwrap_or(i64::MIN);
    for step in &mut run.steps {
        if step.published_throughput_per_s.is_some() || step.window_s <= 0.0 {
            continue;
        }
        let mut t = scalelab_probe::summary::summarize_window(
            &system,
            &process,
            &threads,
            step.window_start_unix_ms,
            step.window_end_unix_ms,
            step.requests,
        );
        if is_specimen {
            t.specimen = scalelab_probe::specimen::summarize_specimen(&specimen, step.window_start_unix_ms, step.window_end_unix_ms);
            if t.specimen.is_none() {
                t.unavailable
                    .insert(Source::Specimen.key().into(), "fewer than two readings of the specimen's /__stats in the window".into());
            }
        }
        for (source, why) in &notes {
            t.unavailable.entry(source.clone()).or_insert_with(|| why.clone());
        }
        // The probe's own note (lost connection, ...) says more than "no reading";
        // a step the probe outlived (a reading after its window) keeps its figures without the note.
        if !db.is_empty() {
            match summarize_db(&db, step.window_start_unix_ms, step.window_end_unix_ms) {
                Ok(d) => {
                    if last_db >= step.window_end_unix_ms {
                        t.unavailable.remove(Source::Db.key());
                    }
                    t.db = Some(d);
                }
                Err(why) => {
                    t.unavailable.entry(Source::Db.key().into()).or_insert(why);
                }
            }
        }
        step.telemetry = Some(t);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalelab_core::{RunKind, RunPlan};
    use scalelab_probe::db::DbSample;
    use scalelab_probe::summary::ThreadSecond;
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
        let s = load_samples(&store, id).unwrap();
        let at: Vec<i64> = s.system.iter().map(|x| x.at.unix_ms).collect();
        assert_eq!(at, [1000, 2000], "undecodable rows skipped, order kept");
        assert_eq!(s.system[0].newly_unavailable[0].source, Source::PressureCpu);
        assert_eq!((s.specimen.len(), s.specimen[0].requests, s.specimen[0].lock_waits), (1, 500, 7));
        assert_eq!((s.threads.len(), s.threads[0].wall_ns), (1, 9));
        assert_eq!((s.db.len(), s.db[0].engine.as_str()), (1, "mysql"));
        assert!(s.process.is_empty());
        let keys: Vec<(String, String)> = load_notes(&store, id).unwrap();
        let keys: Vec<(&str, &str)> = keys.iter().map(|(k, w)| (k.as_str(), w.as_str())).collect();
        assert_eq!(keys, [("db_semaphores", "no counters"), ("future_probe", "x"), ("pressurecpu", "psi off"), ("threads", "exited")]);
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
        let back = load_samples(&store, id).unwrap();
        assert_eq!((back.system, back.threads), (vec![sys], vec![th]));
    }
}
