//! The telemetry thread of a sweep: system and server-process samples every
//! second, the server's thread states at `thread_hz` (the server with its
//! descendants: [`ServerTree`]), handed to the main thread over a channel so
//! the store stays single-writer. The database probe runs on a thread of its
//! own ([`crate::db_probe`]) and sends on the same channel.

use crate::server_tree::ServerTree;
use scalelab_core::Source;
use scalelab_probe::{Roots, Sample, SystemSampler};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// What the probes send: a typed reading, or a note that a source is
/// unavailable and why. Turned into rows only by [`store_records`].
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    Sample(Sample),
    Unavailable(Source, String),
}

/// A running telemetry thread; stopped by [`Telemetry::stop`] or on drop.
pub struct Telemetry {
    rx: Receiver<Record>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    db: Option<JoinHandle<()>>,
}

fn unix_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

impl Telemetry {
    /// Starts sampling the machine, the process `server_pid` when known, and
    /// the database at `db` when given (on a thread of its own: [`crate::db_probe`]),
    /// and the specimen's own counters when it listens on `specimen`.
    pub fn start(
        server_pid: Option<u32>,
        interval: Duration,
        thread_hz: f64,
        db: Option<scalelab_drive::sql::SqlUrl>,
        specimen: Option<std::net::SocketAddr>,
    ) -> Telemetry {
        let (tx, rx) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let db = db.map(|url| crate::db_probe::start(url, tx.clone(), stop.clone()));
        let handle = std::thread::Builder::new()
            .name("scalelab-telemetry".into())
            .spawn(move || {
                let roots = Roots::default();
                let mut system = SystemSampler::new(&roots);
                // Where the load goes: TIME_WAIT sockets toward these are the
                // run's own (others are earlier runs' or other programs').
                let mut targets: Vec<std::net::SocketAddr> = specimen.into_iter().collect();
                if let Some(pid) = server_pid {
                    targets.extend(scalelab_probe::listening_addrs(&roots, pid).unwrap_or_default());
                }
                targets.sort_unstable();
                targets.dedup();
                system.set_targets(targets);
                let mut tree = server_pid.map(|pid| ServerTree::new(&roots, pid, thread_hz > 0.0));
                let tick = if thread_hz > 0.0 { Duration::from_secs_f64(1.0 / thread_hz) } else { interval };
                let mut next_sample = Instant::now();
                let mut reported = std::collections::BTreeSet::new();
                let send_notes = |notes: Vec<scalelab_probe::Unavailable>, reported: &mut std::collections::BTreeSet<(Source, String)>| {
                    for n in notes {
                        if reported.insert((n.source, n.why.clone())) {
                            let _ = tx.send(Record::Unavailable(n.source, n.why));
                        }
                    }
                };
                while !flag.load(Ordering::Relaxed) {
                    if let Some(t) = tree.as_mut().filter(|t| t.samples_threads()) {
                        if !t.tick() {
                            let _ = tx.send(Record::Unavailable(Source::Threads, "the server process exited".into()));
                            t.stop_threads();
                        }
                    }
                    let now = Instant::now();
                    if now >= next_sample {
                        next_sample += interval;
                        if next_sample < now {
                            next_sample = now + interval;
                        }
                        let at = unix_ms();
                        let s = system.sample();
                        send_notes(system.unavailable(), &mut reported);
                        let _ = tx.send(Record::Sample(Sample::System(Box::new(s))));
                        if let Some(t) = tree.as_mut() {
                            let ps = t.sample();
                            send_notes(t.unavailable(), &mut reported);
                            let _ = tx.send(Record::Sample(Sample::Process(ps)));
                            if let Some((second, notes)) = t.take_threads(at) {
                                send_notes(notes, &mut reported);
                                let _ = tx.send(Record::Sample(Sample::Threads(second)));
                            }
                        }
                        if let Some(addr) = specimen {
                            // Bounded well under the interval, so the thread sampler keeps its pace.
                            match scalelab_probe::specimen::fetch_specimen_stats(addr, at, Duration::from_millis(200)) {
                                Ok(s) => {
                                    let _ = tx.send(Record::Sample(Sample::Specimen(s)));
                                }
                                Err(why) => {
                                    if reported.insert((Source::Specimen, why.clone())) {
                                        let _ = tx.send(Record::Unavailable(Source::Specimen, why));
                                    }
                                }
                            }
                        }
                    }
                    std::thread::sleep(tick.min(next_sample.saturating_duration_since(Instant::now())).max(Duration::from_millis(1)));
                }
            })
            .expect("spawning the telemetry thread");
        Telemetry { rx, stop, handle: Some(handle), db }
    }

    /// Everything recorded since the last call.
    pub fn drain(&self) -> Vec<Record> {
        self.rx.try_iter().collect()
    }

    /// Stops the thread and returns what it recorded last.
    pub fn stop(mut self) -> Vec<Record> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        if let Some(h) = self.db.take() {
            let _ = h.join();
        }
        self.drain()
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

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

/// The server process of a target on this machine: the specimen child, the
/// `--server-pid` given, or the owner of the target's listening port when
/// the target is on loopback. `Err` says why none was found.
pub fn server_pid(target: Option<&scalelab_core::Target>, specimen_pid: Option<u32>, given: Option<u32>) -> Result<u32, String> {
    if let Some(p) = given.or(specimen_pid) {
        return Ok(p);
    }
    let target = target.ok_or("the target is not a URL")?;
    let port = target.port().ok_or("no port in the target")?;
    if !target.is_loopback() {
        return Err(format!("{} is not this machine: pass --server-pid to observe a local server", target.host()));
    }
    scalelab_probe::find_by_port(&Roots::default(), port).map(|s| s.pid).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalelab_core::{RunKind, RunPlan};
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

    /// The server of a parsed target: the given pid first, a remote host
    /// refused with the fix, a loopback port found through its listener.
    #[test]
    fn server_pid_from_a_parsed_target() {
        use scalelab_core::Target;
        let remote = Target::parse("http://u:pw@10.1.2.3:8080/").unwrap();
        assert_eq!(server_pid(Some(&remote), None, Some(7)), Ok(7));
        assert_eq!(server_pid(Some(&remote), Some(9), None), Ok(9));
        let e = server_pid(Some(&remote), None, None).unwrap_err();
        assert_eq!(e, "10.1.2.3 is not this machine: pass --server-pid to observe a local server");
        assert_eq!(server_pid(None, None, None).unwrap_err(), "the target is not a URL");
        assert_eq!(server_pid(Some(&Target::specimen("scales")), None, None).unwrap_err(), "no port in the target");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        for url in [format!("http://127.0.0.1:{port}/"), format!("postgres://u:pw@localhost:{port}/db")] {
            let local = Target::parse(&url).unwrap();
            assert_eq!(server_pid(Some(&local), None, None), Ok(std::process::id()), "{url}");
        }
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
