//! A run's steps in order: step, pause, next step; stops on a signal or when
//! the target has failed for too many steps in a row.

use crate::driver::Driver;
use crate::engine::{run_step, EngineError, EngineOptions, LiveTick};
use scalelab_core::{StepPlan, StepResult};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What happens during a sweep, in order, for the caller to show and store.
#[derive(Debug)]
pub enum SweepEvent<'a> {
    /// Step `index` (0-based) begins: clients connect, then warm up.
    StepStarted { index: usize, plan: &'a StepPlan },
    /// Progress of the running step.
    Tick { index: usize, tick: &'a LiveTick },
    /// Step `index` ended; the result is final (store it now).
    StepFinished { index: usize, result: Box<StepResult> },
}

/// How a sweep ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SweepEnd {
    /// Every step ran.
    Completed,
    /// Stopped by a signal; the step that was running is kept as partial.
    Interrupted,
    /// `step` (1-based) was the last of `max_failed_steps` consecutive steps
    /// in which nothing succeeded.
    TargetFailed { step: usize },
    /// Step `step` (1-based) could not be run to its end, and has no result:
    /// the run failed there.
    EngineFailed { step: usize, error: EngineError },
}

/// What runs one step: the engine on this machine ([`Local`]), or a
/// coordinator's agents on others; either returns the same [`StepResult`].
pub trait StepRunner {
    /// Runs step `index` and returns its result; `live` gets progress ticks.
    fn run_step(
        &mut self,
        index: usize,
        plan: &StepPlan,
        opts: &EngineOptions,
        live: &mut dyn FnMut(&LiveTick),
    ) -> Result<StepResult, EngineError>;
}

/// The engine on this machine, driving `driver`.
pub struct Local<'a, D>(pub &'a Arc<D>);

impl<D: Driver> StepRunner for Local<'_, D> {
    fn run_step(
        &mut self,
        _index: usize,
        plan: &StepPlan,
        opts: &EngineOptions,
        live: &mut dyn FnMut(&LiveTick),
    ) -> Result<StepResult, EngineError> {
        run_step(self.0, plan, opts, live)
    }
}

/// Runs every step of `steps` against `driver`, calling `on` for each event.
pub fn run_sweep<D: Driver>(
    driver: &Arc<D>,
    steps: &[StepPlan],
    opts: &EngineOptions,
    max_failed_steps: u32,
    on: &mut dyn FnMut(SweepEvent<'_>),
) -> SweepEnd {
    run_sweep_with(&mut Local(driver), steps, opts, max_failed_steps, on)
}

/// Runs every step of `steps` with `runner`, calling `on` for each event.
/// A step cut short ends the sweep only when a stop was asked for (SIGINT,
/// or a coordinator that lost an agent); locally the two go together. A
/// step with no result (the engine failed) ends it at once.
pub fn run_sweep_with(
    runner: &mut dyn StepRunner,
    steps: &[StepPlan],
    opts: &EngineOptions,
    max_failed_steps: u32,
    on: &mut dyn FnMut(SweepEvent<'_>),
) -> SweepEnd {
    let mut failed_in_a_row = 0u32;
    for (index, plan) in steps.iter().enumerate() {
        if opts.stop.load(Ordering::Relaxed) {
            return SweepEnd::Interrupted;
        }
        on(SweepEvent::StepStarted { index, plan });
        let result = match runner.run_step(index, plan, opts, &mut |tick| on(SweepEvent::Tick { index, tick })) {
            Ok(result) => result,
            Err(error) => return SweepEnd::EngineFailed { step: index + 1, error },
        };
        let failed = result.failed() && !result.partial;
        on(SweepEvent::StepFinished { index, result: Box::new(result) });
        if opts.stop.load(Ordering::Relaxed) {
            return SweepEnd::Interrupted;
        }
        failed_in_a_row = if failed { failed_in_a_row + 1 } else { 0 };
        if max_failed_steps > 0 && failed_in_a_row >= max_failed_steps {
            return SweepEnd::TargetFailed { step: index + 1 };
        }
        if index + 1 < steps.len() && !sleep_unless_stopped(plan.pause(), &opts.stop) {
            return SweepEnd::Interrupted;
        }
    }
    SweepEnd::Completed
}

/// Sleeps `d` (a pause between steps), waking early and returning false
/// when `stop` is raised; every schedule of steps pauses this way.
pub fn sleep_unless_stopped(d: Duration, stop: &AtomicBool) -> bool {
    let end = Instant::now() + d;
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
}
