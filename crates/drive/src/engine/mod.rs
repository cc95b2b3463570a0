//! One step: N virtual clients (connections) spread round-robin over T
//! worker threads, in a closed loop (each with exactly one request in
//! flight) or an open loop (requests started at a rate; `open_loop`).
//!
//! Each worker thread runs its own single-threaded tokio runtime, so a client
//! never migrates between threads and its stats live in plain (non-atomic)
//! memory; the only cross-thread traffic per request is one relaxed counter
//! increment read by the live progress display.
//!
//! Timeline of a step: all clients connect → barrier → warm-up (load on,
//! nothing recorded) → window (completions recorded by completion time) →
//! clients are dropped at the window's end. In-flight requests are not
//! counted (as wrk does) unless they had waited longer than any completion
//! of the window and at least [`UNFINISHED_AFTER`](scalelab_core::result::UNFINISHED_AFTER) (half the window if
//! shorter): those count as `unfinished` errors, so a server that stopped
//! answering never shows as a clean 0 req/s with no error.
//!
//! The parts, each using only those listed after it:
//! - this file: [`run_step`], which wires the others together, and
//!   [`EngineError`], why a step has no result;
//! - `merge`: the workers' statistics folded into one [`StepResult`];
//! - `controller`: the calling thread's part (deadlines, progress, stop);
//! - `worker`: one worker thread (connect, run, per-second hand-over,
//!   unfinished requests), and `client_loop`, one client's request loop;
//! - `open_loop`: an open-loop thread's dispatcher and connection tasks;
//! - [`Schedule`]: which clients exist and when they send;
//! - `state`: what the controller and workers share;
//! - `placement`: CPU binding and time slice of the worker threads.

mod client_loop;
mod controller;
#[cfg(test)]
mod failure_tests;
mod merge;
mod open_loop;
mod placement;
mod precise;
mod schedule;
mod state;
#[cfg(test)]
mod tests;
mod worker;

use crate::cpu;
use crate::driver::Driver;
pub use controller::LiveTick;
use merge::Merge;
pub use placement::{pin_plan, SHORT_CLIENT_SLICE_US};
use scalelab_core::{LatencyHistogram, StepPlan, StepResult};
pub use schedule::Schedule;
use state::{BreakOnPanic, Gates, Shared};
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};
use worker::{worker, WorkerPlan};

/// Why a step has no result: a client thread could not run it to its end,
/// so nothing it measured can be trusted. The run stops there, failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The `--client-net` namespace was removed while the run used it
    /// (another program deleted it): a client thread could not enter it.
    #[error("the client network namespace {} was removed while the run used it (entering it: {why})", path.display())]
    NetnsGone { path: PathBuf, why: String },
    /// A client thread could not enter the `--client-net` namespace.
    #[error("the client threads could not enter the client network namespace {}: {why}", path.display())]
    Netns { path: PathBuf, why: String },
    /// The system refused another thread.
    #[error("starting client thread {thread}: {why}")]
    Spawn { thread: u32, why: String },
    /// A client thread, or a client on it, panicked (a bug).
    #[error("client thread {thread} panicked: {why}")]
    WorkerPanicked { thread: u32, why: String },
    /// The step's own thread panicked (a bug; the progress callback included).
    #[error("the load engine panicked: {0}")]
    Panicked(String),
}

/// The message a panic was raised with.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| payload.downcast_ref::<String>().cloned());
    // One line: it becomes the run's stored outcome.
    text.map_or_else(|| "(no message)".to_string(), |t| t.lines().next().unwrap_or_default().to_string())
}

/// Settings of the engine that are not part of a step's plan.
#[derive(Clone, Debug)]
pub struct EngineOptions {
    /// Worker threads (event loops) of the client.
    pub threads: u32,
    /// CPUs to bind the worker threads to, one each (thread t on
    /// `pin_cpus[t]`); empty: the scheduler places them. See [`pin_plan`].
    pub pin_cpus: Vec<usize>,
    /// Time slice asked for each worker thread, µs (None: the kernel's
    /// default). See [`SHORT_CLIENT_SLICE_US`].
    pub slice_us: Option<u64>,
    /// Set from a signal handler: the window ends at the next whole second.
    pub stop: Arc<AtomicBool>,
    /// A network namespace (a file such as /run/netns/NAME) each worker
    /// thread enters before it connects, so the clients' traffic takes that
    /// namespace's network (`--client-net`); None: this process's own.
    pub netns: Option<std::path::PathBuf>,
    /// While set when the warm-up would end, the warm-up goes on (the
    /// window moves later, by at most [`MAX_WARMUP_HOLD`]): a probe that
    /// must be ready when the window opens (`--profile`'s perf, whose start
    /// takes a second of CPU on a loaded machine) holds it, so its start
    /// is not paid inside the window. None: the warm-up ends on time.
    pub hold_warmup: Option<Arc<AtomicBool>>,
    /// `--busy-poll`: each worker thread polls its sockets instead of
    /// sleeping, for up to this long after its last finished call
    /// ([`std::time::Duration::MAX`]: until the window's end), so a reply is read when
    /// it lands instead of after a wake-up (see `worker::busy_poll`). None:
    /// the threads sleep while they wait.
    pub busy_poll: Option<std::time::Duration>,
}

impl EngineOptions {
    /// `threads` event loops placed by the scheduler, the kernel's time
    /// slice, no stop raised, this process's network, warm-ups not held,
    /// threads that sleep while they wait: the settings the other fields
    /// change from.
    pub fn new(threads: u32) -> EngineOptions {
        EngineOptions {
            threads,
            pin_cpus: Vec::new(),
            slice_us: None,
            stop: Arc::default(),
            netns: None,
            hold_warmup: None,
            busy_poll: None,
        }
    }
}

/// The longest a warm-up is held past its planned end ([`EngineOptions::hold_warmup`]).
pub const MAX_WARMUP_HOLD: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs one step and returns its merged result. `live` is called from the
/// calling thread about every 250 ms. A client thread that cannot go on
/// (its namespace is gone, it panicked) ends the step at once with the
/// reason, as does a panic of this thread: never a wait for a thread that
/// is no more.
pub fn run_step<D: Driver>(
    driver: &Arc<D>,
    plan: &StepPlan,
    opts: &EngineOptions,
    live: &mut dyn FnMut(&LiveTick),
) -> Result<StepResult, EngineError> {
    std::panic::catch_unwind(AssertUnwindSafe(|| step(driver, plan, opts, live)))
        .unwrap_or_else(|payload| Err(EngineError::Panicked(panic_message(&*payload))))
}

/// Ends a step whose thread unwinds from a panic: the window closes and
/// the gates break, so the workers end by themselves.
struct Abort<'a>(&'a Shared, &'a Gates);

impl Drop for Abort<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.set_window_end(std::time::Instant::now());
            self.1.break_all();
        }
    }
}

fn step<D: Driver>(
    driver: &Arc<D>,
    plan: &StepPlan,
    opts: &EngineOptions,
    live: &mut dyn FnMut(&LiveTick),
) -> Result<StepResult, EngineError> {
    let schedule = Schedule::from_plan(plan);
    let per_connection = driver.clients_per_connection().max(1);
    let threads = schedule.threads(opts.threads, per_connection);
    let n_seconds = plan.window_s.ceil().max(1.0) as usize;
    let shared = Arc::new(Shared::new());
    let gates = Arc::new(Gates::new(threads));
    let (sec_tx, sec_rx) = mpsc::channel::<(u32, LatencyHistogram)>();

    let mut handles = Vec::new();
    for t in 0..threads {
        let work = WorkerPlan {
            ids: schedule.clients_of(t, threads, per_connection),
            per_connection,
            thread: t,
            threads,
            schedule: schedule.clone(),
            n_seconds,
            cpu: opts.pin_cpus.get(t as usize).copied(),
            slice_us: opts.slice_us,
            netns: opts.netns.clone(),
            busy_poll: opts.busy_poll,
        };
        let (d, sh, g, tx) = (driver.clone(), shared.clone(), gates.clone(), sec_tx.clone());
        let spawned = std::thread::Builder::new().name(format!("scalelab-client-{t}")).spawn(move || {
            let _breaks = BreakOnPanic(&g);
            worker(&*d, work, &sh, &g, tx)
        });
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                // The threads started are at the first gate: broken, they end.
                gates.fail(EngineError::Spawn { thread: t, why: e.to_string() });
                break;
            }
        }
    }
    drop(sec_tx);

    let abort = Abort(&shared, &gates);
    let window = controller::control(&shared, plan.warmup(), plan.window(), &gates, &opts.stop, opts.hold_warmup.as_deref(), &sec_rx, live);
    drop(abort);
    let mut merge = Merge::new(n_seconds);
    let mut panicked = None;
    for (t, h) in handles.into_iter().enumerate() {
        match h.join() {
            Ok(Some(stats)) => merge.add(stats),
            Ok(None) => {}
            Err(payload) => {
                panicked.get_or_insert(EngineError::WorkerPanicked { thread: t as u32, why: panic_message(&*payload) });
            }
        }
    }
    // A panic's own message says more than the broken gates it left.
    let failed = panicked.or_else(|| gates.failure());
    match (window, failed) {
        (Some(window), None) => Ok(merge.finish(
            schedule.clients(),
            schedule.offered_rate_per_s(),
            threads.min(cpu::allowed_cpus()),
            &window,
            &driver.statement_names(),
        )),
        (_, Some(e)) => Err(e),
        (None, None) => Err(EngineError::Panicked("the step ended before its load began, with no reason told".into())),
    }
}
