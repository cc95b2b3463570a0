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
//! - this file: [`run_step`], which wires the others together;
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
use state::{Gates, Shared};
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};
use worker::{worker, WorkerPlan};

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
}

impl EngineOptions {
    /// `threads` event loops placed by the scheduler, the kernel's time
    /// slice, no stop raised, this process's network, warm-ups not held:
    /// the settings the other fields change from.
    pub fn new(threads: u32) -> EngineOptions {
        EngineOptions { threads, pin_cpus: Vec::new(), slice_us: None, stop: Arc::default(), netns: None, hold_warmup: None }
    }
}

/// The longest a warm-up is held past its planned end ([`EngineOptions::hold_warmup`]).
pub const MAX_WARMUP_HOLD: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs one step and returns its merged result. `live` is called from the
/// calling thread about every 250 ms.
pub fn run_step<D: Driver>(driver: &Arc<D>, plan: &StepPlan, opts: &EngineOptions, live: &mut dyn FnMut(&LiveTick)) -> StepResult {
    let schedule = Schedule::from_plan(plan);
    let threads = schedule.threads(opts.threads);
    let n_seconds = plan.window_s.ceil().max(1.0) as usize;
    let shared = Arc::new(Shared::new());
    let gates = Arc::new(Gates::new(threads));
    let (sec_tx, sec_rx) = mpsc::channel::<(u32, LatencyHistogram)>();

    let mut handles = Vec::new();
    for t in 0..threads {
        let work = WorkerPlan {
            ids: schedule.clients_of(t, threads),
            thread: t,
            threads,
            schedule: schedule.clone(),
            n_seconds,
            cpu: opts.pin_cpus.get(t as usize).copied(),
            slice_us: opts.slice_us,
            netns: opts.netns.clone(),
        };
        let (driver, shared, gates, sec_tx) = (driver.clone(), shared.clone(), gates.clone(), sec_tx.clone());
        handles.push(
            std::thread::Builder::new()
                .name(format!("scalelab-client-{t}"))
                .spawn(move || worker(&*driver, work, &shared, &gates, sec_tx))
                .expect("spawning a client thread"),
        );
    }
    drop(sec_tx);

    let window = controller::control(&shared, plan.warmup(), plan.window(), &gates, &opts.stop, opts.hold_warmup.as_deref(), &sec_rx, live);
    let mut merge = Merge::new(n_seconds);
    for h in handles {
        merge.add(&h.join().expect("a client thread panicked"));
    }
    merge.finish(schedule.clients(), schedule.offered_rate_per_s(), threads.min(cpu::allowed_cpus()), &window, &driver.statement_names())
}
