//! Prometheus remote write 1.0 (`--remote-write URL`): every interval the
//! exposition is taken, stamped with the wall clock and queued; queued
//! snapshots go out oldest first, up to [`MAX_BATCH`] in one `WriteRequest`
//! (protobuf, snappy block format) POSTed over HTTP/1.1, or HTTPS with the
//! Mozilla roots. All of it runs on a thread of its own, so a receiver that
//! is down or slow costs a bounded queue and a counted failure, never the load.
//!
//! Failures follow Prometheus' own sender: a 5xx or 429 (or no answer) is
//! retried with backoff and the batch kept; any other non-2xx status would
//! fail again, so its batch is dropped.

use crate::model::Exposition;
use hyper::StatusCode;
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::oneshot;
use tokio::time::{Instant, MissedTickBehavior};

mod http;
mod proto;
mod target;

use http::*;
use proto::*;
use target::*;
#[cfg(test)]
mod tests;

pub use proto::{Label, Sample, TimeSeries, WriteRequest};

/// Snapshots sent in one request at most: a receiver back after an outage
/// gets the backlog in requests of bounded size.
pub const MAX_BATCH: usize = 10;
/// How long [`RemoteWriter::stop`] keeps trying to deliver what is queued.
pub const FLUSH_AT_STOP: Duration = Duration::from_secs(2);
/// The wait after the first failure; it doubles up to [`BACKOFF_MAX`].
const BACKOFF_MIN: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(8);
/// Bytes of an error response shown in `last_error`.
const ERROR_BODY_BYTES: usize = 200;

/// Where and how often to push: the URL is checked by [`RemoteWriter::start`].
#[derive(Clone)]
pub struct RemoteWriteConfig {
    /// `http://[user:password@]host[:port]/path` (or `https://`); the
    /// credentials go as Basic auth and are never shown.
    pub url: String,
    /// Time between snapshots (1 s by default).
    pub interval: Duration,
    /// Snapshots kept while the receiver is down; past it the oldest is dropped.
    pub max_queue: usize,
    /// The longest one request may take, connection and TLS included.
    pub timeout: Duration,
    /// Labels added to every series (a series' own label of the same name wins).
    pub labels: Vec<(String, String)>,
    /// Accept any TLS certificate (a self-signed receiver), as `--insecure` does for the load.
    pub insecure: bool,
}

impl RemoteWriteConfig {
    /// `url` with the defaults: a snapshot a second, 300 of them kept (five
    /// minutes of outage), 10 s per request, no extra labels.
    pub fn new(url: &str) -> RemoteWriteConfig {
        RemoteWriteConfig {
            url: url.to_string(),
            interval: Duration::from_secs(1),
            max_queue: 300,
            timeout: Duration::from_secs(10),
            labels: Vec::new(),
            insecure: false,
        }
    }
}

/// Debug shows the URL without its credentials or query.
impl fmt::Debug for RemoteWriteConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = Target::parse(&self.url).map(|t| t.shown).unwrap_or_else(|_| "(invalid URL)".into());
        f.debug_struct("RemoteWriteConfig")
            .field("url", &url)
            .field("interval", &self.interval)
            .field("max_queue", &self.max_queue)
            .field("timeout", &self.timeout)
            .field("labels", &self.labels)
            .field("insecure", &self.insecure)
            .finish()
    }
}

/// What the writer has done so far, for the run's summary and its warnings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RemoteWriteStats {
    /// Requests the receiver accepted (2xx).
    pub batches_sent: u64,
    /// Samples in those requests (one series at one time is one sample).
    pub samples_sent: u64,
    /// Requests that failed: no connection, no answer in time, or a non-2xx status.
    pub failures: u64,
    /// Snapshots that will never reach the receiver: pushed out of a full
    /// queue, in a batch it rejected (4xx), or still queued when stopped.
    pub dropped_snapshots: u64,
    /// Snapshots waiting now (at most `max_queue`).
    pub queued_snapshots: usize,
    /// The most recent failure, one line, without credentials (kept after later successes).
    pub last_error: Option<String>,
}

/// A running writer: its thread takes, queues and sends snapshots until
/// [`RemoteWriter::stop`]. Dropping it stops the thread too (which still
/// flushes for up to [`FLUSH_AT_STOP`], unjoined).
pub struct RemoteWriter {
    stats: Arc<Mutex<RemoteWriteStats>>,
    stop: oneshot::Sender<()>,
    handle: JoinHandle<()>,
    shown: String,
}

/// Checks `url` as [`RemoteWriter::start`] would, without starting
/// anything: a bad URL is refused before any load.
pub fn check_url(url: &str) -> Result<(), String> {
    Target::parse(url).map(|_| ())
}

impl RemoteWriter {
    /// Checks the URL and starts the writer's thread; returns at once. The
    /// first snapshot is taken right away (a baseline for `rate()`), then one
    /// every `interval`; `source` is only ever called on the writer's thread.
    pub fn start(config: RemoteWriteConfig, source: Arc<dyn Fn() -> Exposition + Send + Sync>) -> Result<RemoteWriter, String> {
        let target = Target::parse(&config.url)?;
        let tls = match &target.server_name {
            Some(name) => Some((tls_connector(config.insecure)?, name.clone())),
            None => None,
        };
        let shown = target.shown.clone();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("--remote-write: cannot start its runtime: {e}"))?;
        let stats = Arc::new(Mutex::new(RemoteWriteStats::default()));
        let (stop, stopped) = oneshot::channel();
        let worker = Worker {
            target: Arc::new(target),
            tls: tls.map(Arc::new),
            interval: config.interval.max(Duration::from_millis(1)),
            max_queue: config.max_queue.max(1),
            timeout: config.timeout,
            labels: config.labels,
            source,
            stats: stats.clone(),
            queue: VecDeque::new(),
            sending: 0,
            last_ms: i64::MIN,
            conn: None,
        };
        let handle = std::thread::Builder::new()
            .name("scalelab-remote-write".into())
            .spawn(move || rt.block_on(worker.run(stopped)))
            .map_err(|e| format!("--remote-write: cannot start its thread: {e}"))?;
        Ok(RemoteWriter { stats, stop, handle, shown })
    }

    /// The URL as messages show it: `http://host:port/path`, no credentials, no query.
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// The counts so far (a copy; the writer keeps going).
    pub fn stats(&self) -> RemoteWriteStats {
        lock(&self.stats).clone()
    }

    /// Takes a last snapshot, tries for up to [`FLUSH_AT_STOP`] to deliver
    /// the queue, waits for the thread and returns the final counts (what
    /// could not be delivered is counted in `dropped_snapshots`).
    pub fn stop(self) -> RemoteWriteStats {
        let _ = self.stop.send(());
        let _ = self.handle.join();
        lock(&self.stats).clone()
    }
}

/// The stats, even if a thread panicked while holding them.
fn lock(stats: &Mutex<RemoteWriteStats>) -> MutexGuard<'_, RemoteWriteStats> {
    stats.lock().unwrap_or_else(|e| e.into_inner())
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)).unwrap_or(0)
}

/// The request on its way: it owns the connection while it runs and hands it back.
type InFlight = Pin<Box<dyn Future<Output = (Result<Answer, String>, Option<Sender>)>>>;

/// What became of a request.
enum Outcome {
    Sent,
    /// No answer, a 5xx or a 429: the batch stays queued and is sent again.
    Retry(String),
    /// Any other status: sending it again would fail again, so it is dropped.
    Reject(String),
}

/// The writer's thread: the queue and the one connection.
struct Worker {
    target: Arc<Target>,
    tls: Option<Arc<Tls>>,
    interval: Duration,
    max_queue: usize,
    timeout: Duration,
    labels: Vec<(String, String)>,
    source: Arc<dyn Fn() -> Exposition + Send + Sync>,
    stats: Arc<Mutex<RemoteWriteStats>>,
    queue: VecDeque<Snapshot>,
    /// The queue's first `sending` snapshots are in the request in flight.
    sending: usize,
    /// The last snapshot's time: the next is at least 1 ms later, so no
    /// series gets two samples at one time.
    last_ms: i64,
    /// The kept-alive connection, when no request is using it.
    conn: Option<Sender>,
}

/// The request in flight's outcome, or never when there is none.
async fn landed(in_flight: &mut Option<(InFlight, u64)>) -> ((Result<Answer, String>, Option<Sender>), u64) {
    match in_flight {
        Some((f, samples)) => (f.await, *samples),
        None => std::future::pending().await,
    }
}

impl Worker {
    async fn run(mut self, mut stop: oneshot::Receiver<()>) {
        let mut ticker = tokio::time::interval(self.interval);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut in_flight: Option<(InFlight, u64)> = None;
        let mut not_before = Instant::now();
        let mut backoff = BACKOFF_MIN;
        loop {
            if in_flight.is_none() && !self.queue.is_empty() && Instant::now() >= not_before {
                in_flight = self.launch();
            }
            let waiting = in_flight.is_none() && !self.queue.is_empty();
            tokio::select! {
                _ = ticker.tick() => self.snapshot(),
                _ = &mut stop => break,
                (r, samples) = landed(&mut in_flight) => {
                    in_flight = None;
                    self.settle(r, samples, &mut not_before, &mut backoff);
                }
                _ = tokio::time::sleep_until(not_before), if waiting => {}
            }
        }

        // Stopping: a last snapshot, then what can be delivered in time.
        self.snapshot();
        let deadline = Instant::now() + FLUSH_AT_STOP;
        loop {
            if in_flight.is_none() {
                if self.queue.is_empty() || Instant::now() >= deadline {
                    break;
                }
                if Instant::now() >= not_before {
                    in_flight = self.launch();
                    continue;
                }
            }
            tokio::select! {
                (r, samples) = landed(&mut in_flight) => {
                    in_flight = None;
                    self.settle(r, samples, &mut not_before, &mut backoff);
                }
                _ = tokio::time::sleep_until(not_before), if in_flight.is_none() => {}
                _ = tokio::time::sleep_until(deadline) => {
                    if in_flight.is_some() {
                        let mut s = lock(&self.stats);
                        s.failures += 1;
                        s.last_error = Some(self.target.error("no answer before the writer had to stop"));
                    }
                    break;
                }
            }
        }
        let mut s = lock(&self.stats);
        s.dropped_snapshots += self.queue.len() as u64;
        s.queued_snapshots = 0;
    }

    /// Takes, stamps and queues a snapshot (an empty one is not queued).
    fn snapshot(&mut self) {
        let source = self.source.clone();
        let exposition = match catch_unwind(AssertUnwindSafe(|| source())) {
            Ok(e) => e,
            Err(_) => {
                lock(&self.stats).last_error = Some(self.target.error("the metrics source panicked; snapshot skipped"));
                return;
            }
        };
        let at_ms = now_ms().max(self.last_ms.saturating_add(1));
        self.last_ms = at_ms;
        let series: Vec<(Vec<Label>, f64)> =
            exposition.samples().into_iter().map(|(name, labels, value)| (series_labels(&name, &labels, &self.labels), value)).collect();
        if series.is_empty() {
            return;
        }
        let mut stats = lock(&self.stats);
        if self.queue.len() >= self.max_queue {
            stats.dropped_snapshots += 1;
            // The oldest snapshot not already in the request in flight; when
            // all are, the new one.
            if self.sending >= self.queue.len() {
                return;
            }
            self.queue.remove(self.sending);
        }
        self.queue.push_back(Snapshot { at_ms, series });
        stats.queued_snapshots = self.queue.len();
    }

    /// Starts the request of the oldest snapshots (up to [`MAX_BATCH`]).
    fn launch(&mut self) -> Option<(InFlight, u64)> {
        let n = self.queue.len().min(MAX_BATCH);
        let request = write_request(self.queue.range(..n));
        let samples = request.timeseries.iter().map(|t| t.samples.len() as u64).sum();
        let body = match encode(&request) {
            Ok(b) => b,
            Err(e) => {
                // Only beyond snappy's 4 GiB block limit: never sendable.
                self.queue.drain(..n);
                let mut s = lock(&self.stats);
                s.failures += 1;
                s.dropped_snapshots += n as u64;
                s.queued_snapshots = self.queue.len();
                s.last_error = Some(self.target.error(&e));
                return None;
            }
        };
        self.sending = n;
        let (target, tls, timeout, mut conn) = (self.target.clone(), self.tls.clone(), self.timeout, self.conn.take());
        let f = async move {
            let r = match tokio::time::timeout(timeout, post(&mut conn, &target, tls.as_deref(), body)).await {
                Ok(r) => r,
                Err(_) => {
                    conn = None;
                    Err(format!("no answer within {} ms", timeout.as_millis()))
                }
            };
            (r, conn)
        };
        Some((Box::pin(f), samples))
    }

    /// Counts a request's outcome and settles its snapshots: delivered and
    /// rejected ones leave the queue, the others wait for the backoff.
    fn settle(
        &mut self,
        (result, conn): (Result<Answer, String>, Option<Sender>),
        samples: u64,
        not_before: &mut Instant,
        backoff: &mut Duration,
    ) {
        self.conn = conn;
        let n = std::mem::take(&mut self.sending).min(self.queue.len());
        let outcome = match result {
            Err(e) => Outcome::Retry(e),
            Ok(a) if a.status.is_success() => Outcome::Sent,
            Ok(a) => {
                let body = String::from_utf8_lossy(&a.body[..a.body.len().min(ERROR_BODY_BYTES)]).into_owned();
                let body = one_line(&body);
                let mut m = format!("HTTP {}", a.status.as_u16());
                if let Some(r) = a.status.canonical_reason() {
                    m = format!("{m} {r}");
                }
                if !body.is_empty() {
                    m = format!("{m}: {body}");
                }
                if a.status.is_server_error() || a.status == StatusCode::TOO_MANY_REQUESTS {
                    Outcome::Retry(m)
                } else {
                    Outcome::Reject(m)
                }
            }
        };
        let mut s = lock(&self.stats);
        match outcome {
            Outcome::Sent => {
                self.queue.drain(..n);
                s.batches_sent += 1;
                s.samples_sent += samples;
                *backoff = BACKOFF_MIN;
                *not_before = Instant::now();
            }
            Outcome::Retry(m) => {
                s.failures += 1;
                s.last_error = Some(self.target.error(&m));
                *not_before = Instant::now() + *backoff;
                *backoff = (*backoff * 2).min(BACKOFF_MAX);
            }
            Outcome::Reject(m) => {
                self.queue.drain(..n);
                s.failures += 1;
                s.dropped_snapshots += n as u64;
                s.last_error = Some(self.target.error(&format!("{m} (batch dropped: sending it again would fail again)")));
                *not_before = Instant::now();
            }
        }
        s.queued_snapshots = self.queue.len();
    }
}
