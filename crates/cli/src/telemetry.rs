//! The store boundary of telemetry: the records a
//! [`Collector`](scalelab_probe::Collector) sends become rows here
//! ([`store_records`]); the store turns rows back into typed samples when it
//! loads a run, and `analyze::telemetry::derive` fills the steps from them.

pub use scalelab_probe::Record;

/// Telemetry records that could not be stored: how many, and the first
/// reason. A failure to store telemetry never stops the run, but the run
/// says it lost some ([`Lost::outcome`]).
#[derive(Debug, Default, PartialEq)]
pub struct Lost {
    pub records: u64,
    pub why: Option<String>,
}

impl Lost {
    /// Counts `n` records lost for `why` (the first reason is kept).
    pub fn add(&mut self, n: u64, why: impl std::fmt::Display) {
        self.records += n;
        self.why.get_or_insert_with(|| why.to_string());
    }

    /// The run's outcome with the loss said after it (unchanged when nothing was lost).
    pub fn outcome(&self, outcome: &str) -> String {
        match &self.why {
            Some(why) if self.records > 0 => {
                format!("{outcome}; telemetry: {} record(s) could not be stored ({why})", scalelab_core::thousands(self.records as f64))
            }
            _ => outcome.to_string(),
        }
    }
}

/// Writes records to the store (its typed write side), counting in
/// `lost` what could not be written.
pub fn store_records(store: &mut scalelab_store::Store, run_id: i64, records: Vec<Record>, lost: &mut Lost) {
    if let Err(e) = store.add_records(run_id, &records) {
        lost.add(e.records, e.why);
    }
}

/// The latest per-second figures from a stream of probe records: each new
/// system sample closes an [`Interval`](scalelab_analyze::telemetry::Interval)
/// since the one before, with the server's two latest process samples, its
/// latest thread second and the database's last second of readings. `watch`
/// prints them; the metrics exporter serves them.
pub struct Intervals {
    origin_ms: i64,
    last_sys: Option<scalelab_probe::SystemSample>,
    prev_proc: Option<scalelab_probe::ProcessSample>,
    cur_proc: Option<scalelab_probe::ProcessSample>,
    last_threads: Option<scalelab_core::sample::ThreadSecond>,
    /// The last two seconds of database readings.
    db_recent: Vec<scalelab_probe::db::DbSample>,
}

impl Intervals {
    /// A tracker whose intervals count their time from `origin_ms`.
    pub fn new(origin_ms: i64) -> Intervals {
        Intervals { origin_ms, last_sys: None, prev_proc: None, cur_proc: None, last_threads: None, db_recent: Vec::new() }
    }

    /// Takes `records` in; the interval the newest system sample among them
    /// closes, if any, and the probe notes (`source: why`) among them.
    pub fn push(&mut self, records: &[Record]) -> (Option<scalelab_analyze::telemetry::Interval>, Vec<String>) {
        use scalelab_probe::Sample;
        let mut new_sys = None;
        let mut notes = Vec::new();
        for r in records {
            match r {
                Record::Sample(Sample::System(s)) => new_sys = Some((**s).clone()),
                // A restarted server is another process: its rates start anew.
                Record::Sample(Sample::Process(p)) if self.cur_proc.as_ref().is_some_and(|c| c.pid != p.pid) => {
                    self.prev_proc = None;
                    self.cur_proc = Some(p.clone());
                }
                Record::Sample(Sample::Process(p)) => self.prev_proc = self.cur_proc.replace(p.clone()),
                Record::Sample(Sample::Threads(t)) => self.last_threads = Some(t.clone()),
                Record::Sample(Sample::Db(d)) => {
                    let newest = d.unix_ms;
                    self.db_recent.push((**d).clone());
                    self.db_recent.retain(|s| s.unix_ms >= newest - 2000);
                }
                Record::Unavailable(src, why) => notes.push(format!("{}: {why}", src.name())),
                Record::Sample(Sample::Specimen(_) | Sample::Profile(_) | Sample::Capture(_)) => {}
            }
        }
        let Some(sys) = new_sys else { return (None, notes) };
        let Some(prev) = self.last_sys.replace(sys.clone()) else { return (None, notes) };
        let db_last = self.db_recent.last().map(|l| l.unix_ms);
        let db_second: Vec<_> = self.db_recent.iter().filter(|d| db_last.is_some_and(|l| d.unix_ms >= l - 1000)).cloned().collect();
        let procs = (self.prev_proc.as_ref(), self.cur_proc.as_ref());
        let iv = scalelab_analyze::telemetry::Interval::of(self.origin_ms, &prev, &sys, procs, self.last_threads.as_ref(), &db_second);
        (Some(iv), notes)
    }
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
        let mut lost = Lost::default();
        store_records(&mut store, id, records, &mut lost);
        assert_eq!(lost, Lost::default(), "nothing lost");
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

    /// Telemetry that cannot be written is counted and said in the outcome, never dropped in silence.
    #[test]
    fn records_that_cannot_be_stored_are_counted_and_said() {
        let (_dir, mut store, id) = store();
        store.execute_raw("DROP TABLE samples").unwrap();
        let th = ThreadSecond { unix_ms: 4100, wall_ns: 1_000_000_000, ..Default::default() };
        let mut lost = Lost::default();
        store_records(&mut store, id, vec![Record::Sample(Sample::Threads(th.clone())), Record::Sample(Sample::Threads(th))], &mut lost);
        assert_eq!(lost.records, 2);
        let said = lost.outcome("completed");
        assert!(said.starts_with("completed; telemetry: 2 record(s) could not be stored (") && said.contains("samples"), "{said}");
        assert_eq!(Lost::default().outcome("completed"), "completed");
    }
}
