//! What the controller and the workers share (deadlines and live counters)
//! and what one worker thread keeps for its own clients.

use super::EngineError;
use scalelab_core::result::{ErrorCounts, SecondResult};
use scalelab_core::LatencyHistogram;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Deadlines shared by the controller and the workers, as nanoseconds since `base`.
pub(super) struct Shared {
    pub(super) base: Instant,
    pub(super) warm_end_ns: AtomicU64,
    pub(super) window_end_ns: AtomicU64,
    /// Completions so far (warm-up included), for the live progress.
    pub(super) completions: AtomicU64,
    /// Failed requests so far, for the live progress.
    pub(super) errors: AtomicU64,
    /// Worker threads that have counted their requests still out at the
    /// window's end (none closes its connections before all have).
    pub(super) counted: AtomicU64,
}

impl Shared {
    /// Deadlines not set yet (far in the future).
    pub(super) fn new() -> Shared {
        Shared {
            base: Instant::now(),
            warm_end_ns: AtomicU64::new(u64::MAX / 4),
            window_end_ns: AtomicU64::new(u64::MAX / 4),
            completions: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            counted: AtomicU64::new(0),
        }
    }
    fn at(&self, ns: u64) -> Instant {
        self.base + Duration::from_nanos(ns)
    }
    pub(super) fn warm_end(&self) -> Instant {
        self.at(self.warm_end_ns.load(Ordering::Relaxed))
    }
    pub(super) fn window_end(&self) -> Instant {
        self.at(self.window_end_ns.load(Ordering::Relaxed))
    }
    pub(super) fn set_warm_end(&self, t: Instant) {
        self.warm_end_ns.store((t - self.base).as_nanos() as u64, Ordering::Relaxed);
    }
    pub(super) fn set_window_end(&self, t: Instant) {
        self.window_end_ns.store((t - self.base).as_nanos() as u64, Ordering::Relaxed);
    }
}

/// The two points where the controller and every worker meet: all clients
/// are connected; the deadlines are set and the load may start. Unlike a
/// std `Barrier`, they can be broken: a worker that cannot go on (its
/// namespace is gone, it panicked) breaks them, so the others and the
/// controller stop waiting and the step ends with the reason, instead of
/// waiting forever for a thread that is no more.
pub(super) struct Gates {
    /// Worker threads plus the controller.
    parties: usize,
    state: Mutex<GateState>,
    cv: Condvar,
}

#[derive(Default)]
struct GateState {
    connected: usize,
    go: usize,
    broken: bool,
    /// Why the step cannot go on: the first failure reported.
    failure: Option<EngineError>,
}

impl GateState {
    /// The parties that came to `gate` so far.
    fn arrived(&mut self, gate: Gate) -> &mut usize {
        match gate {
            Gate::Connected => &mut self.connected,
            Gate::Go => &mut self.go,
        }
    }
}

/// Which meeting point to wait at.
#[derive(Clone, Copy)]
pub(super) enum Gate {
    Connected,
    Go,
}

/// The gates were broken: the step is over, without a result.
#[derive(Debug)]
pub(super) struct Broken;

impl Gates {
    /// Gates for `workers` worker threads and the controller.
    pub(super) fn new(workers: u32) -> Gates {
        Gates { parties: workers as usize + 1, state: Mutex::default(), cv: Condvar::new() }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, GateState> {
        // Nothing panics while holding it; a poisoned lock still holds good counts.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits at `gate` until every party has come to it, or until the gates
    /// are broken (`Err`).
    pub(super) fn wait(&self, gate: Gate) -> Result<(), Broken> {
        let mut st = self.state();
        *st.arrived(gate) += 1;
        if *st.arrived(gate) == self.parties {
            self.cv.notify_all();
        }
        loop {
            if *st.arrived(gate) >= self.parties {
                return Ok(());
            }
            if st.broken {
                return Err(Broken);
            }
            st = self.cv.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Breaks the gates, keeping `why` when it is the first failure told.
    pub(super) fn fail(&self, why: EngineError) {
        let mut st = self.state();
        st.broken = true;
        st.failure.get_or_insert(why);
        self.cv.notify_all();
    }

    /// Breaks the gates without a reason (a panic: its message is the reason).
    pub(super) fn break_all(&self) {
        self.state().broken = true;
        self.cv.notify_all();
    }

    /// Whether a worker broke the gates.
    pub(super) fn is_broken(&self) -> bool {
        self.state().broken
    }

    /// The first failure told, taken.
    pub(super) fn failure(&self) -> Option<EngineError> {
        self.state().failure.take()
    }
}

/// Held by a thread of the step: if the thread unwinds from a panic, the
/// gates are broken on the way out, so nobody waits for it.
pub(super) struct BreakOnPanic<'a>(pub(super) &'a Gates);

impl Drop for BreakOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.break_all();
        }
    }
}

/// What one worker thread measured.
pub(super) struct WorkerStats {
    pub(super) seconds: Vec<SecondResult>,
    pub(super) errors: ErrorCounts,
    pub(super) queries: u64,
    pub(super) reconnects: u64,
    pub(super) connect_total: Duration,
    pub(super) connects: u32,
    /// Worst event-loop lateness seen in the window.
    pub(super) max_lag: Option<Duration>,
    /// This thread's run-queue wait (schedstat run delay) over the window, ns.
    pub(super) runq_wait_ns: Option<u64>,
    /// Per-statement latencies of the window, by index into the driver's statement names.
    pub(super) statements: Vec<LatencyHistogram>,
    /// Open loop: requests dropped (never sent) in the window.
    pub(super) dropped: u64,
    /// Open loop: requests sent late by the client's own doing.
    pub(super) late_sends: u64,
    /// Connect times of the connections opened inside the window.
    pub(super) connect_latency: LatencyHistogram,
    /// Completions in the window of each of this thread's clients (slots).
    pub(super) completions: Vec<u64>,
    /// Ages of the requests still out when the window ended, ms.
    pub(super) outstanding_ms: Vec<f64>,
    /// The clients report flow-control waits (HTTP/2): the window's
    /// requests that waited, and their wait in all. None: not measured.
    pub(super) flow: Option<(u64, Duration)>,
    /// `--busy-poll`: the window's time in polls that found nothing to do.
    /// None: the thread slept while it waited.
    pub(super) poll_idle: Option<Duration>,
}

impl WorkerStats {
    /// Nothing measured yet, with room for `n_seconds` window seconds.
    pub(super) fn new(n_seconds: usize, clients: usize) -> WorkerStats {
        WorkerStats {
            seconds: (0..n_seconds as u32).map(|s| SecondResult { second: s, ..Default::default() }).collect(),
            errors: ErrorCounts::default(),
            queries: 0,
            reconnects: 0,
            connect_total: Duration::ZERO,
            connects: 0,
            max_lag: None,
            runq_wait_ns: None,
            statements: Vec::new(),
            dropped: 0,
            late_sends: 0,
            connect_latency: LatencyHistogram::new(),
            completions: vec![0; clients],
            outstanding_ms: Vec::new(),
            flow: None,
            poll_idle: None,
        }
    }
}

/// Per-thread state shared by the thread's client tasks (single-threaded: RefCell).
pub(super) struct Local {
    pub(super) stats: WorkerStats,
    /// Per client of this thread: when its request in flight was sent (None: none in flight).
    pub(super) in_flight: Vec<Option<Instant>>,
    /// When the control loop's timer is due: a client whose calls never
    /// wait in the event loop (a blocking socket answered in time) yields
    /// to it once this has passed, so the timer still fires.
    pub(super) timer_due: Option<Instant>,
    /// Open loop: the requests accepted and not yet done on this thread.
    pub(super) open: Dispatch,
    /// Calls finished on this thread, in the window or not: a busy poll
    /// that saw this unchanged did no work.
    pub(super) finished: u64,
    /// `--busy-poll` with a budget: the poller asleep until a call
    /// finishes (woken by `client_loop::record`).
    pub(super) poller: Option<std::task::Waker>,
}

/// Open loop, one thread: requests accepted (a connection was free) and
/// waiting for a connection task to send them, those waiting for a
/// connection to come free, and the current run of dropped ones. Bounded:
/// at most `cap` accepted requests exist, and a request waits at most
/// `budget` (so at most rate x budget wait).
#[derive(Default)]
pub(super) struct Dispatch {
    /// Accepted requests not yet picked up: their intended send time, and
    /// whether they waited for a connection (their lateness is then the
    /// server's, not a late send of the client's).
    pub(super) queue: std::collections::VecDeque<(Instant, bool)>,
    /// Intended send times of requests due while every connection was busy,
    /// oldest first, waiting for one to come free.
    pub(super) waiting: std::collections::VecDeque<Instant>,
    /// How long a request may wait for a connection before it is dropped
    /// (zero: dropped at once, counted in `drops`).
    pub(super) budget: std::time::Duration,
    /// Accepted requests not yet done (queued or in flight).
    pub(super) outstanding: u32,
    /// This thread's connections: its share of `max_in_flight`.
    pub(super) cap: u32,
    /// Requests dropped since every connection became busy: (first
    /// intended time, last intended time, count).
    pub(super) drops: Option<(Instant, Instant, u64)>,
    /// The dispatcher's place, saved whenever it waits: the start of the
    /// load, the next arrival's intended time and the arrivals after it.
    /// The window can end while it waits; what it never started is then
    /// counted from here.
    pub(super) unstarted: Option<(Instant, Instant, super::schedule::Arrivals)>,
}
