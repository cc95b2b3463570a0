//! `--metrics-listen` and `--remote-write`: what a run measures so far, as
//! the metric families of docs/metrics.md. [`Exported`] sits in front of the
//! sweep's observer and keeps the [`State`]; the scrape endpoint and the
//! remote writer each build the exposition from it on their own thread.

mod exposition;

use crate::session::Observer;
use crate::telemetry::{Intervals, Record};
use scalelab_analyze::telemetry::Interval;
use scalelab_core::{LatencyHistogram, LiveTick, StepPlan, StepResult};
use scalelab_metrics::model::Exposition;
use scalelab_metrics::remote_write::{RemoteWriteConfig, RemoteWriter};
use scalelab_metrics::serve::Endpoint;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The path the endpoint serves.
pub const METRICS_PATH: &str = "/metrics";

/// What `--metrics-listen`, `--remote-write` and `--metrics-linger` asked for, checked.
#[derive(Clone, Debug, Default)]
pub struct MetricsPlan {
    pub listen: Option<SocketAddr>,
    /// The remote-write URL as given (it may hold credentials: never printed).
    pub remote_write: Option<String>,
    /// After the run, how long the endpoint waits for one last scrape.
    pub linger: Duration,
}

impl MetricsPlan {
    /// Parses the flags; a port alone binds loopback, never every address.
    pub fn parse(a: &crate::args::MetricsArgs) -> Result<MetricsPlan, String> {
        let listen = a.metrics_listen.as_deref().map(parse_listen).transpose()?;
        let linger = scalelab_core::parse_duration(&a.metrics_linger).map_err(|e| format!("--metrics-linger: {e}"))?;
        if let Some(url) = &a.remote_write {
            scalelab_metrics::remote_write::check_url(url)?;
        }
        Ok(MetricsPlan { listen, remote_write: a.remote_write.clone(), linger })
    }

    /// True when anything is exported.
    pub fn wanted(&self) -> bool {
        self.listen.is_some() || self.remote_write.is_some()
    }
}

/// `9464` (loopback), `127.0.0.1:9464`, `[::1]:9464` or `0.0.0.0:9464` (every
/// address, as asked).
fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse::<SocketAddr>().map_err(|_| {
        format!("--metrics-listen: '{}' is not PORT or ADDRESS:PORT (e.g. 9464 or 127.0.0.1:9464)", scalelab_core::escape_control(s))
    })
}

/// A running exporter: the endpoint, the remote writer, or both.
pub struct Exporter {
    state: Arc<Mutex<State>>,
    endpoint: Option<Endpoint>,
    writer: Option<RemoteWriter>,
    linger: Duration,
}

impl Exporter {
    /// Binds the endpoint and starts the writer (before any load: an
    /// address in use is the user's to fix, nothing stored). `kind` is
    /// `sweep` or `watch`.
    pub fn start(plan: &MetricsPlan, kind: &str) -> anyhow::Result<Option<Exporter>> {
        if !plan.wanted() {
            return Ok(None);
        }
        let state = Arc::new(Mutex::new(State::new(kind)));
        let source = {
            let state = state.clone();
            Arc::new(move || state.lock().map(|s| s.exposition()).unwrap_or_default()) as Arc<dyn Fn() -> Exposition + Send + Sync>
        };
        let endpoint = plan
            .listen
            .map(|addr| Endpoint::start(addr, METRICS_PATH, source.clone()))
            .transpose()
            .map_err(|e| crate::error::bad(format!("--metrics-listen: {e}")))?;
        let writer = plan
            .remote_write
            .as_ref()
            .map(|url| RemoteWriter::start(RemoteWriteConfig::new(url), source))
            .transpose()
            .map_err(crate::error::bad)?;
        Ok(Some(Exporter { state, endpoint, writer, linger: plan.linger }))
    }

    /// Where the endpoint listens, to tell the user.
    pub fn listening(&self) -> Option<SocketAddr> {
        self.endpoint.as_ref().map(Endpoint::local_addr)
    }

    /// Names the run: its id in the store (or another unique tag), label and target (no credentials).
    pub fn set_run(&self, run: &str, label: &str, target: &str) {
        if let Ok(mut s) = self.state.lock() {
            s.run = run.to_string();
            s.label = label.to_string();
            s.target = scalelab_core::redact_url(target);
        }
    }

    /// The run's verdicts once it is diagnosed, at its end: (level, verdict, confidence).
    pub fn set_verdicts(&self, verdicts: Vec<(u32, String, String)>) {
        if let Ok(mut s) = self.state.lock() {
            s.verdicts = verdicts;
        }
    }

    /// An observer that keeps the state and passes everything on to `inner`.
    pub fn observe<'a>(&'a self, inner: &'a mut dyn Observer) -> Exported<'a> {
        Exported { state: &self.state, inner }
    }

    /// The run ended: the phase says so, the endpoint waits (at most the
    /// linger) for a scrape that sees it, the writer sends what it holds.
    /// Returns a line about remote write's failures, if any, for the run's notes.
    pub fn finish(mut self) -> Option<String> {
        if let Ok(mut s) = self.state.lock() {
            s.phase = Phase::Done;
        }
        if let Some(ep) = self.endpoint.take() {
            let seen = ep.scrapes();
            let until = Instant::now() + self.linger;
            while ep.scrapes() == seen && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            ep.stop();
        }
        let stats = self.writer.take().map(RemoteWriter::stop)?;
        (stats.failures > 0 || stats.dropped_snapshots > 0).then(|| {
            format!(
                "remote write: {} batch(es) sent, {} failed, {} snapshot(s) dropped{}",
                stats.batches_sent,
                stats.failures,
                stats.dropped_snapshots,
                stats.last_error.map(|e| format!(" (last: {e})")).unwrap_or_default()
            )
        })
    }
}

/// Where the run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Warmup,
    Window,
    Pause,
    Done,
    /// `watch`: observing, no load of its own.
    Watching,
}

impl Phase {
    const SWEEP: [(Phase, &'static str); 5] =
        [(Phase::Idle, "idle"), (Phase::Warmup, "warmup"), (Phase::Window, "window"), (Phase::Pause, "pause"), (Phase::Done, "done")];
    const WATCH: [(Phase, &'static str); 2] = [(Phase::Watching, "watching"), (Phase::Done, "done")];
}

/// One step's figures so far: live while it runs, exact once it is stored.
#[derive(Clone, Debug, Default)]
struct StepFigures {
    concurrency: u32,
    rate: Option<f64>,
    window_requests: u64,
    window_s: f64,
    /// The server's thread-time by state in seconds of the window's thread
    /// states (those that ended inside it): their ratios are its shares.
    window_threads: scalelab_core::sample::StateTimes,
}

/// What the exporter knows of the run.
pub struct State {
    kind: String,
    run: String,
    label: String,
    target: String,
    phase: Phase,
    /// The running (or last) step's index.
    step: Option<usize>,
    steps: BTreeMap<usize, StepFigures>,
    /// Completions of finished steps (warm-ups included), and of the running one so far.
    done_completed: u64,
    live_completed: u64,
    tick: Option<LiveTick>,
    /// When the running step's window began (for its live window seconds).
    window_started: Option<Instant>,
    errors: BTreeMap<&'static str, u64>,
    dropped: Option<u64>,
    late_sends: Option<u64>,
    latency: LatencyHistogram,
    client_cpu_ratio: Option<f64>,
    client_lag_s: Option<f64>,
    intervals: Intervals,
    interval: Option<Interval>,
    /// The server's thread-time by state over the whole run.
    threads: scalelab_core::sample::StateTimes,
    verdicts: Vec<(u32, String, String)>,
}

impl State {
    fn new(kind: &str) -> State {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
        State {
            kind: kind.into(),
            run: String::new(),
            label: String::new(),
            target: String::new(),
            phase: if kind == "watch" { Phase::Watching } else { Phase::Idle },
            step: None,
            steps: BTreeMap::new(),
            done_completed: 0,
            live_completed: 0,
            tick: None,
            window_started: None,
            errors: BTreeMap::new(),
            dropped: None,
            late_sends: None,
            latency: LatencyHistogram::new(),
            client_cpu_ratio: None,
            client_lag_s: None,
            intervals: Intervals::new(now),
            interval: None,
            threads: Default::default(),
            verdicts: Vec::new(),
        }
    }

    fn step_started(&mut self, index: usize, plan: &StepPlan) {
        self.step = Some(index);
        self.phase = Phase::Warmup;
        self.tick = None;
        self.live_completed = 0;
        self.window_started = None;
        let rate = plan.open_loop.as_ref().map(|o| o.rate_per_s);
        self.steps.insert(index, StepFigures { concurrency: plan.concurrency, rate, ..Default::default() });
    }

    fn tick(&mut self, index: usize, tick: &LiveTick) {
        self.phase = if tick.warming_up { Phase::Warmup } else { Phase::Window };
        if !tick.warming_up && self.window_started.is_none() {
            self.window_started = Some(Instant::now());
        }
        self.live_completed = self.live_completed.max(tick.completed);
        let window_s = self.window_started.map_or(0.0, |t| t.elapsed().as_secs_f64());
        if let Some(f) = self.steps.get_mut(&index) {
            // Counters never go back, whatever a tick says.
            f.window_requests = f.window_requests.max(tick.window_completed);
            f.window_s = f.window_s.max(window_s);
        }
        self.tick = Some(tick.clone());
    }

    fn step_finished(&mut self, index: usize, r: &StepResult) {
        self.phase = Phase::Pause;
        // The step's completions: the last tick's (warm-up included), at least its window's.
        self.done_completed += self.live_completed.max(r.requests);
        self.live_completed = 0;
        if let Some(f) = self.steps.get_mut(&index) {
            f.window_requests = f.window_requests.max(r.requests);
            f.window_s = f.window_s.max(r.window_s);
        }
        for (class, n) in &r.errors.counts {
            *self.errors.entry(class.name()).or_insert(0) += n;
        }
        if let Some(d) = r.dropped {
            *self.dropped.get_or_insert(0) += d;
        }
        if let Some(l) = r.late_sends {
            *self.late_sends.get_or_insert(0) += l;
        }
        self.latency.merge(&r.latency);
        self.client_cpu_ratio = r.client_cpu_pct().map(|p| p / 100.0);
        self.client_lag_s = r.client_lag_ms.map(|ms| ms / 1000.0);
    }

    fn telemetry(&mut self, records: &[Record]) {
        if let (Some(iv), _) = self.intervals.push(records) {
            self.interval = Some(iv);
        }
        for r in records {
            if let Record::Sample(scalelab_core::Sample::Threads(t)) = r {
                self.threads.merge(&t.time);
                let in_window = self.phase == Phase::Window;
                if let Some(f) = self.step.filter(|_| in_window).and_then(|i| self.steps.get_mut(&i)) {
                    f.window_threads.merge(&t.time);
                }
            }
        }
    }
}

/// The sweep's observer with the exporter in front.
pub struct Exported<'a> {
    state: &'a Arc<Mutex<State>>,
    inner: &'a mut dyn Observer,
}

impl Observer for Exported<'_> {
    fn step_started(&mut self, index: usize, plan: &StepPlan) {
        if let Ok(mut s) = self.state.lock() {
            s.step_started(index, plan);
        }
        self.inner.step_started(index, plan);
    }

    fn tick(&mut self, index: usize, plan: &StepPlan, tick: &LiveTick) {
        if let Ok(mut s) = self.state.lock() {
            s.tick(index, tick);
        }
        self.inner.tick(index, plan, tick);
    }

    fn telemetry(&mut self, records: &[Record]) {
        if let Ok(mut s) = self.state.lock() {
            s.telemetry(records);
        }
        self.inner.telemetry(records);
    }

    fn step_finished(&mut self, index: usize, result: &StepResult, unit: &str) {
        if let Ok(mut s) = self.state.lock() {
            s.step_finished(index, result);
        }
        self.inner.step_finished(index, result, unit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalelab_core::{ErrorClass, Failure};

    fn plan(concurrency: u32) -> StepPlan {
        StepPlan { concurrency, warmup_s: 0.5, window_s: 2.0, pause_s: 0.0, think_time_s: 0.0, open_loop: None }
    }

    fn tick(warming_up: bool, completed: u64, window_completed: u64) -> LiveTick {
        LiveTick {
            elapsed_s: 1.0,
            warming_up,
            throughput_per_s: 100.0,
            errors: 1,
            p50_ms: Some(2.0),
            p99_ms: Some(9.0),
            completed,
            window_completed,
        }
    }

    fn value(e: &Exposition, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        e.samples()
            .into_iter()
            .find(|(n, l, _)| n == name && labels.iter().all(|(k, v)| l.iter().any(|(a, b)| a == k && b == v)))
            .map(|(_, _, v)| v)
    }

    /// The counters move with the ticks, end on the stored figures, and
    /// never go back; the histogram holds the finished windows.
    #[test]
    fn a_step_counts_live_then_ends_on_its_stored_figures() {
        let mut s = State::new("sweep");
        assert!(s.exposition().families.is_empty(), "nothing before the run is named");
        s.run = "7".into();
        s.step_started(0, &plan(4));
        s.tick(0, &tick(true, 50, 0));
        let e = s.exposition();
        assert_eq!(value(&e, "scalelab_phase", &[("phase", "warmup")]), Some(1.0));
        assert_eq!(value(&e, "scalelab_requests_total", &[]), Some(50.0));
        assert_eq!(value(&e, "scalelab_window_requests_total", &[("step", "0"), ("concurrency", "4")]), Some(0.0));
        s.tick(0, &tick(false, 250, 190));
        assert_eq!(value(&s.exposition(), "scalelab_window_requests_total", &[("step", "0")]), Some(190.0));
        // A late tick that says less changes nothing.
        s.tick(0, &tick(false, 240, 180));
        assert_eq!(value(&s.exposition(), "scalelab_window_requests_total", &[("step", "0")]), Some(190.0));
        let mut r = StepResult { concurrency: 4, window_s: 2.0, requests: 400, ..Default::default() };
        for ms in [1u64, 2, 3, 30] {
            r.latency.record(Duration::from_millis(ms));
        }
        r.errors.add(&Failure { class: ErrorClass::Http5xx, message: "503".into() });
        s.step_finished(0, &r);
        let e = s.exposition();
        assert_eq!(value(&e, "scalelab_window_requests_total", &[("step", "0")]), Some(400.0));
        assert_eq!(value(&e, "scalelab_window_seconds_total", &[("step", "0")]), Some(2.0));
        assert_eq!(value(&e, "scalelab_requests_total", &[]), Some(400.0), "at least the window's completions");
        assert_eq!(value(&e, "scalelab_errors_total", &[("class", "http_5xx")]), Some(1.0));
        assert_eq!(value(&e, "scalelab_latency_seconds_bucket", &[("le", "0.0025")]), Some(2.0));
        assert_eq!(value(&e, "scalelab_latency_seconds_bucket", &[("le", "+Inf")]), Some(4.0));
        assert_eq!(value(&e, "scalelab_phase", &[("phase", "pause")]), Some(1.0));
        // The next step adds to the run's counters.
        s.step_started(1, &plan(8));
        s.tick(1, &tick(false, 30, 10));
        let e = s.exposition();
        assert_eq!(value(&e, "scalelab_requests_total", &[]), Some(430.0));
        assert_eq!(value(&e, "scalelab_concurrency", &[]), Some(8.0));
        assert_eq!(value(&e, "scalelab_window_requests_total", &[("step", "0")]), Some(400.0), "a finished step's figure stays");
        // Not measured is no series, never 0.
        assert_eq!(value(&e, "scalelab_server_cpu_cores", &[]), None);
        assert_eq!(value(&e, "scalelab_dropped_total", &[]), None);
    }

    #[test]
    fn listen_addresses_bind_loopback_unless_given() {
        assert_eq!(parse_listen("9464").unwrap().to_string(), "127.0.0.1:9464");
        assert_eq!(parse_listen("0.0.0.0:9464").unwrap().to_string(), "0.0.0.0:9464");
        assert_eq!(parse_listen("[::1]:9").unwrap().to_string(), "[::1]:9");
        assert!(parse_listen("localhost:x\u{1b}").unwrap_err().contains("'localhost:x\\e' is not PORT or ADDRESS:PORT"));
    }
}
