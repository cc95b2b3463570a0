//! The telemetry thread of a sweep: system and server-process samples every
//! second, the server's thread states at `thread_hz` (the server with its
//! descendants: [`ServerTree`]), handed to the main thread over a channel so
//! the store stays single-writer. The database probe runs on a thread of its
//! own ([`crate::db_probe`]) and sends on the same channel.

use crate::server_tree::ServerTree;
use scalelab_probe::db::{summarize_db, DbSample};
use scalelab_probe::summary::ThreadSecond;
use scalelab_probe::{Roots, SystemSampler};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// One stored record: `(unix_ms, kind, json)`, or a note that a probe is unavailable.
pub enum Record {
    Sample(i64, &'static str, String),
    Unavailable(String, String),
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
                let send_notes = |notes: Vec<scalelab_probe::Unavailable>, reported: &mut std::collections::BTreeSet<String>| {
                    for n in notes {
                        let key = format!("{:?}", n.source);
                        if reported.insert(format!("{key}:{}", n.why)) {
                            let _ = tx.send(Record::Unavailable(key, n.why));
                        }
                    }
                };
                while !flag.load(Ordering::Relaxed) {
                    if let Some(t) = tree.as_mut().filter(|t| t.samples_threads()) {
                        if !t.tick() {
                            let _ = tx.send(Record::Unavailable("Threads".into(), "the server process exited".into()));
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
                        if let Ok(j) = serde_json::to_string(&s) {
                            let _ = tx.send(Record::Sample(s.at.unix_ms, "system", j));
                        }
                        if let Some(t) = tree.as_mut() {
                            let ps = t.sample();
                            send_notes(t.unavailable(), &mut reported);
                            if let Ok(j) = serde_json::to_string(&ps) {
                                let _ = tx.send(Record::Sample(ps.at.unix_ms, "process", j));
                            }
                            if let Some((second, notes)) = t.take_threads(at) {
                                send_notes(notes, &mut reported);
                                if let Ok(j) = serde_json::to_string(&second) {
                                    let _ = tx.send(Record::Sample(at, "threads", j));
                                }
                            }
                        }
                        if let Some(addr) = specimen {
                            // Bounded well under the interval, so the thread sampler keeps its pace.
                            match scalelab_probe::specimen::fetch_specimen_stats(addr, at, Duration::from_millis(200)) {
                                Ok(s) => {
                                    if let Ok(j) = serde_json::to_string(&s) {
                                        let _ = tx.send(Record::Sample(at, "specimen", j));
                                    }
                                }
                                Err(why) => {
                                    if reported.insert(format!("Specimen:{why}")) {
                                        let _ = tx.send(Record::Unavailable("Specimen".into(), why));
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
pub fn store_records(store: &mut scalelab_store::Store, run_id: i64, records: Vec<Record>) {
    let mut samples = Vec::new();
    for r in records {
        match r {
            Record::Sample(at, kind, json) => samples.push((at, kind, json)),
            Record::Unavailable(source, why) => {
                let _ = store.add_probe_note(run_id, &source, &why);
            }
        }
    }
    let _ = store.add_samples(run_id, &samples);
}

/// The stored samples of a run, decoded: system, server process, thread states, database.
pub type Samples = (Vec<scalelab_probe::SystemSample>, Vec<scalelab_probe::ProcessSample>, Vec<ThreadSecond>, Vec<DbSample>);

/// Loads and decodes every sample of a run (sweep or recorded watch).
pub fn load_samples(store: &scalelab_store::Store, run_id: i64) -> anyhow::Result<Samples> {
    fn decode<T: serde::de::DeserializeOwned>(rows: Vec<(i64, String)>) -> Vec<T> {
        rows.into_iter().filter_map(|(_, j)| serde_json::from_str(&j).ok()).collect()
    }
    Ok((
        decode(store.load_samples(run_id, "system")?),
        decode(store.load_samples(run_id, "process")?),
        decode(store.load_samples(run_id, "threads")?),
        decode(store.load_samples(run_id, "db")?),
    ))
}

/// Fills each step's telemetry from the run's stored samples.
pub fn attach(store: &scalelab_store::Store, run: &mut scalelab_core::Run) -> anyhow::Result<()> {
    let (system, process, threads, db) = load_samples(store, run.id)?;
    if system.is_empty() {
        return Ok(());
    }
    let notes = store.load_probe_notes(run.id)?;
    let specimen: Vec<scalelab_probe::specimen::SpecimenSample> =
        store.load_samples(run.id, "specimen")?.into_iter().filter_map(|(_, j)| serde_json::from_str(&j).ok()).collect();
    let is_specimen = run.plan.target.starts_with("specimen");
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
                t.unavailable.insert("specimen".into(), "fewer than two readings of the specimen's /__stats in the window".into());
            }
        }
        for (source, why) in &notes {
            t.unavailable.entry(source.to_lowercase()).or_insert_with(|| why.clone());
        }
        // The probe's own note (lost connection, ...) says more than "no reading";
        // a step the probe outlived (a reading after its window) keeps its figures without the note.
        if !db.is_empty() {
            match summarize_db(&db, step.window_start_unix_ms, step.window_end_unix_ms) {
                Ok(d) => {
                    if last_db >= step.window_end_unix_ms {
                        t.unavailable.remove("db");
                    }
                    t.db = Some(d);
                }
                Err(why) => {
                    t.unavailable.entry("db".into()).or_insert(why);
                }
            }
        }
        step.telemetry = Some(t);
    }
    Ok(())
}

/// The server process of a target on this machine: the specimen child, the
/// `--server-pid` given, or the owner of the target's listening port when
/// the target is on loopback. `Err` says why none was found.
pub fn server_pid(target: &str, specimen_pid: Option<u32>, given: Option<u32>) -> Result<u32, String> {
    if let Some(p) = given.or(specimen_pid) {
        return Ok(p);
    }
    let (scheme, rest) = target.split_once("://").ok_or("the target is not a URL")?;
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(':') && p.chars().all(|c| c.is_ascii_digit()) && !p.is_empty() => (h, p.parse::<u16>().ok()),
        _ => (hostport, None),
    };
    let port = port
        .or(match scheme {
            "http" => Some(80),
            "https" => Some(443),
            "postgres" | "postgresql" => Some(5432),
            "mysql" => Some(3306),
            _ => None,
        })
        .ok_or("no port in the target")?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host == "localhost" || host.starts_with("127.") || host == "::1";
    if !loopback {
        return Err(format!("{host} is not this machine: pass --server-pid to observe a local server"));
    }
    scalelab_probe::find_by_port(&Roots::default(), port).map(|s| s.pid).map_err(|e| e.to_string())
}
