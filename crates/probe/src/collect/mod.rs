//! Collection: the threads that read the probes while a run goes on, and
//! send typed [`Record`]s on one channel (the caller keeps the store
//! single-writer and serializes only there).
//!
//! - [`Collector`]: the sampler thread (system every `interval`, the server's
//!   process tree with it, thread states at `thread_hz`, the specimen's own
//!   counters) and the database poller ([`db_poll`], a thread of its own).
//! - [`server_tree`]: the server process with its descendants, as one.
//! - [`record`]: what travels on the channel.
//!
//! `db_poll` uses `record`; neither they nor `server_tree` use this file.

pub mod db_poll;
pub mod record;
pub mod redis_poll;
pub mod server_tree;

pub use db_poll::{for_target, parse_url};
pub use record::Record;
pub use server_tree::{set_root_fd_budget, ServerTree};

use crate::{Roots, Sample, SystemSampler, Unavailable};
use record::unix_ms;
use scalelab_core::Source;
use scalelab_wire::SqlUrl;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What to collect.
#[derive(Clone, Debug)]
pub struct CollectorConfig {
    /// The server process (with its descendants) to sample; None: the machine only.
    pub server_pid: Option<u32>,
    /// Between two system (and process) samples.
    pub interval: Duration,
    /// Thread-state samples per second of the server; 0: none.
    pub thread_hz: f64,
    /// The database to poll, on a thread of its own.
    pub db: Option<SqlUrl>,
    /// The Redis to poll (`INFO` each second), on a thread of its own.
    pub redis: Option<scalelab_wire::resp::RedisUrl>,
    /// The specimen's address, to fetch its own counters (`/__stats`).
    pub specimen: Option<SocketAddr>,
}

/// Running collection threads; stopped by [`Collector::stop`] or on drop.
pub struct Collector {
    rx: Receiver<Record>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    db: Option<JoinHandle<()>>,
    redis: Option<JoinHandle<()>>,
}

impl Collector {
    /// Starts sampling the machine, the process `server_pid` when known, the
    /// database at `db` when given, and the specimen's own counters when it
    /// listens on `specimen`.
    pub fn start(config: CollectorConfig) -> Collector {
        let (tx, rx) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let db = config.db.clone().map(|url| db_poll::start(url, tx.clone(), stop.clone()));
        let redis = config.redis.clone().map(|url| redis_poll::start(url, tx.clone(), stop.clone()));
        let handle = std::thread::Builder::new()
            .name("scalelab-telemetry".into())
            .spawn(move || sample_loop(&config, &tx, &flag))
            .expect("spawning the telemetry thread");
        Collector { rx, stop, handle: Some(handle), db, redis }
    }

    /// Everything recorded since the last call.
    pub fn drain(&self) -> Vec<Record> {
        self.rx.try_iter().collect()
    }

    /// Stops the threads and returns what they recorded last.
    pub fn stop(mut self) -> Vec<Record> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        for h in [self.db.take(), self.redis.take()].into_iter().flatten() {
            let _ = h.join();
        }
        self.drain()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The sampler thread's loop, until `stop` is set.
fn sample_loop(config: &CollectorConfig, tx: &Sender<Record>, stop: &AtomicBool) {
    let CollectorConfig { server_pid, interval, thread_hz, specimen, .. } = *config;
    let roots = Roots::default();
    let mut system = SystemSampler::new(&roots);
    // Where the load goes: TIME_WAIT sockets toward these are the
    // run's own (others are earlier runs' or other programs').
    let mut targets: Vec<SocketAddr> = specimen.into_iter().collect();
    if let Some(pid) = server_pid {
        targets.extend(crate::listening_addrs(&roots, pid).unwrap_or_default());
    }
    targets.sort_unstable();
    targets.dedup();
    system.set_targets(targets);
    let mut tree = server_pid.map(|pid| ServerTree::new(&roots, pid, thread_hz > 0.0));
    let tick = if thread_hz > 0.0 { Duration::from_secs_f64(1.0 / thread_hz) } else { interval };
    let mut next_sample = Instant::now();
    let mut reported = BTreeSet::new();
    let send_notes = |notes: Vec<Unavailable>, reported: &mut BTreeSet<(Source, String)>| {
        for n in notes {
            if reported.insert((n.source, n.why.clone())) {
                let _ = tx.send(Record::Unavailable(n.source, n.why));
            }
        }
    };
    while !stop.load(Ordering::Relaxed) {
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
                match crate::specimen::fetch_specimen_stats(addr, at, Duration::from_millis(200)) {
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
}
