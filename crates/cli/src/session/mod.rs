//! One run, owned from start to end: the store writer (single-writer: the
//! probes and the load hand their records over channels), the probes of
//! the machine, the server process and the database, and the load (a sweep
//! of steps, or none for `watch`). Whoever shows the run implements
//! [`Observer`]: the full-screen live view and the plain progress lines do,
//! and so can a test, which gets the steps and the samples typed.

mod profiling;

use crate::telemetry::{store_records, Record};
use profiling::Profiling;
use scalelab_core::{Environment, RunKind, RunPlan, Source, StepPlan, StepResult};
use scalelab_drive::{run_step, run_sweep_with, Driver, EngineError, EngineOptions, LiveTick, Local, StepRunner, SweepEnd, SweepEvent};
use scalelab_probe::profile::Overhead;
use scalelab_probe::{Collector, CollectorConfig};
use scalelab_store::{Store, StoreError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a session tells whoever shows the run. Every method has a default
/// that ignores the event, so an observer implements only what it shows.
pub trait Observer {
    /// Step `index` (0-based) begins: its clients connect, then warm up.
    fn step_started(&mut self, _index: usize, _plan: &StepPlan) {}
    /// Progress of the running step (about four times a second).
    fn tick(&mut self, _index: usize, _plan: &StepPlan, _tick: &LiveTick) {}
    /// Probe records as they are handed to the store: typed samples, or a
    /// note that a source is unavailable and why.
    fn telemetry(&mut self, _records: &[Record]) {}
    /// Step `index` ended and is stored; `unit` names its throughput (req/s, tx/s).
    fn step_finished(&mut self, _index: usize, _result: &StepResult, _unit: &str) {}
}

/// An observer that shows nothing (`--json` sweeps still store everything).
pub struct Silent;

impl Observer for Silent {}

/// What the probes of a session watch.
pub struct Probes {
    /// The collector's samplers: machine, server process tree, thread
    /// states, database, specimen counters.
    pub collect: CollectorConfig,
    /// Why no server process is sampled when one was expected: stored
    /// with the run as a probe note.
    pub why_no_server: Option<String>,
    /// `--profile`: on-CPU and off-CPU stacks of the server per step window.
    pub profile: bool,
    /// `--profile-steps`: the steps (0-based) profiled; None: all of them.
    pub profile_steps: Option<std::collections::BTreeSet<usize>>,
    /// Records taken on the server's host by a server agent (drained as
    /// they arrive). When given, the local collector does not run: its
    /// machine samples would be this machine's, not the server's.
    pub remote: Option<Arc<std::sync::Mutex<Vec<Record>>>>,
}

/// Why a planned step ([`Session::run_planned`]) has no stored result.
#[derive(Debug)]
pub enum PlannedError {
    /// The engine could not run it to its end (a worker panicked, the
    /// clients' namespace vanished): the run failed there.
    Engine(scalelab_drive::engine::EngineError),
    /// It ran, but could not be stored.
    Store(StoreError),
}

/// Why step `index` (0-based) measured no working server, in the words a
/// run's outcome uses ("step 3 (10 clients): nothing succeeded ..."); None
/// when it mostly worked.
pub fn failed_step(index: usize, result: &StepResult) -> Option<String> {
    let level = scalelab_report::fmt::level_words(result.offered_rate_per_s, result.concurrency);
    result.failure().map(|why| format!("step {} ({level}): {why}", index + 1))
}

/// How a sweep of a session ended.
#[derive(Debug)]
pub struct SweepOutcome {
    /// Every step ran, or the sweep was interrupted, or the target failed.
    pub end: SweepEnd,
    /// The first step where nothing succeeded or errors dominate: it
    /// measured no working server, so the run failed whatever
    /// `--max-failed-steps` allowed.
    pub failed_step: Option<String>,
    /// The step the store could not save (0-based) and why; the sweep
    /// stopped there and the earlier steps are kept.
    pub store_error: Option<(usize, StoreError)>,
}

impl SweepOutcome {
    /// Whether the run is complete, its outcome as stored ("completed",
    /// "failed: ...", "interrupted", "target failed at step N"), and the
    /// exit code it means (0, 1, 130).
    pub fn verdict(&self) -> (bool, String, u8) {
        match (&self.end, &self.failed_step) {
            (SweepEnd::EngineFailed { step, error }, _) => (false, format!("failed: step {step}: {error}"), 1),
            (SweepEnd::Completed, Some(why)) => (false, format!("failed: {why}"), 1),
            (SweepEnd::Completed, None) => (true, "completed".to_string(), 0),
            (SweepEnd::Interrupted, _) => (false, "interrupted".to_string(), 130),
            (SweepEnd::TargetFailed { step }, _) => (false, format!("target failed at step {step}"), 1),
        }
    }
}

/// Why [`Session::step`] has no result.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// The step could not be run to its end (the run failed there).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The step ran and could not be stored.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One run: begun in the store (or not recorded, for a plain `watch`), its
/// probes running until [`Session::finish`] or drop.
pub struct Session {
    store: Option<Store>,
    run_id: Option<i64>,
    plan: RunPlan,
    telemetry: Option<Collector>,
    /// What the collector samples: started anew on another server process
    /// when a watched server restarts ([`Session::watch`]).
    collect: scalelab_probe::CollectorConfig,
    profile: Profiling,
    /// Records from elsewhere (a server agent's probes), drained with the collector's.
    remote: Option<Arc<std::sync::Mutex<Vec<Record>>>>,
    /// Telemetry (and run options) that could not be stored: said in the outcome.
    lost: crate::telemetry::Lost,
    /// `--trigger`: the conditions watched each second and their captures.
    capturing: Option<crate::trigger::Capturing>,
}

impl Session {
    /// Records the run's start in `store` (its plan, the environment, and a
    /// note when the server process was not found) and starts the probes.
    pub fn begin(store: Store, kind: RunKind, plan: RunPlan, env: &Environment, probes: Probes) -> Result<Session, StoreError> {
        let run_id = store.begin_run(kind, &plan, env, None)?;
        if let Some(why) = &probes.why_no_server {
            store.add_probe_note(run_id, Source::Process.name(), &format!("server process not found: {why}"))?;
        }
        let window_s = plan.steps.first().map(|s| s.window_s);
        Ok(Session::start(Some((store, run_id)), plan, probes, window_s))
    }

    /// A session that stores nothing (a `watch` without `--record`): the
    /// probes run and the observer sees their records.
    pub fn unrecorded(plan: RunPlan, probes: Probes) -> Session {
        Session::start(None, plan, probes, None)
    }

    /// Starts profiling (`window_s`: the steps' window) and the probes.
    fn start(recorded: Option<(Store, i64)>, plan: RunPlan, probes: Probes, window_s: Option<f64>) -> Session {
        let profile = Profiling::start(&probes, window_s);
        let telemetry = probes.remote.is_none().then(|| Collector::start(probes.collect.clone()));
        let (store, run_id) = recorded.map_or((None, None), |(s, id)| (Some(s), Some(id)));
        Session {
            store,
            run_id,
            plan,
            telemetry,
            collect: probes.collect,
            profile,
            remote: probes.remote,
            lost: Default::default(),
            capturing: None,
        }
    }

    /// The run's id in the store, when it is recorded.
    pub fn run_id(&self) -> Option<i64> {
        self.run_id
    }

    /// What was done to make `--profile` work (tracefs mounted, frame
    /// pointers instead of DWARF), to tell the user.
    pub fn profile_notices(&self) -> &[String] {
        &self.profile.notices
    }

    /// What `--profile` cost, once the probes are stopped (None: not profiled).
    pub fn profile_overhead(&self) -> Option<&Overhead> {
        self.profile.overhead.as_ref()
    }

    /// What the run was planned to be.
    pub fn plan(&self) -> &RunPlan {
        &self.plan
    }

    /// Hands what the probes took since the last call to the observer, then
    /// to the store. A failure to store telemetry never stops the run.
    fn keep(&mut self, mut records: Vec<Record>, observer: &mut dyn Observer) {
        if let Some(c) = self.capturing.as_mut() {
            if let Some(fired) = c.see(&records) {
                c.start(fired, self.profile.window_on_demand());
            }
            records.extend(c.finished(false));
        }
        observer.telemetry(&records);
        if let (Some(store), Some(id)) = (self.store.as_mut(), self.run_id) {
            store_records(store, id, records, &mut self.lost);
        }
    }

    fn drain(&mut self, observer: &mut dyn Observer) {
        let mut records = std::mem::take(&mut self.profile.pending);
        records.extend(self.telemetry.as_ref().map(Collector::drain).unwrap_or_default());
        if let Some(r) = &self.remote {
            records.append(&mut r.lock().expect("not poisoned"));
        }
        self.keep(records, observer);
    }

    /// A tick of step `index`: the profiler's, the triggers' load second,
    /// and what the probes took since the last one.
    fn on_tick(&mut self, index: usize, plan: &StepPlan, tick: &LiveTick, observer: &mut dyn Observer) {
        self.profile.tick(index, plan, tick);
        if let Some(c) = self.capturing.as_mut() {
            c.tick(tick);
        }
        self.drain(observer);
    }

    /// Watches `--trigger` conditions from now on; in a watch with
    /// `--profile`, windows are then taken only for captures.
    pub fn set_capturing(&mut self, capturing: crate::trigger::Capturing, watch: bool) {
        self.profile.on_demand = watch && self.profile.profiler.is_some();
        self.capturing = Some(capturing);
    }

    /// What the triggers did (None: no trigger, or none held).
    pub fn capture_summary(&self) -> Option<String> {
        self.capturing.as_ref().and_then(crate::trigger::Capturing::summary)
    }

    /// Stores records handed over at the end (a server agent's last ones).
    pub fn keep_records(&mut self, records: Vec<Record>) {
        self.keep(records, &mut Silent);
    }

    /// Runs the plan's steps against `driver`, storing each step as it
    /// finishes; the observer sees every step, tick and probe record.
    /// Ends early when `engine.stop` is raised (SIGINT, `q`), when
    /// `max_failed_steps` steps in a row got nothing, or when a step cannot
    /// be stored.
    pub fn sweep<D: Driver>(
        &mut self,
        driver: &Arc<D>,
        engine: &EngineOptions,
        max_failed_steps: u32,
        observer: &mut dyn Observer,
    ) -> SweepOutcome {
        self.sweep_with(&mut Local(driver), engine, max_failed_steps, observer, &mut || None)
    }

    /// [`Session::sweep`] with the steps run by `runner` (a coordinator's
    /// agents); after each step `note` may give a plan option to record
    /// (which agent did what).
    pub fn sweep_with(
        &mut self,
        runner: &mut dyn StepRunner,
        engine: &EngineOptions,
        max_failed_steps: u32,
        observer: &mut dyn Observer,
        note: &mut dyn FnMut() -> Option<(String, serde_json::Value)>,
    ) -> SweepOutcome {
        let steps = self.plan.steps.clone();
        let unit = self.plan.throughput_unit().to_string();
        let mut failed_step: Option<String> = None;
        let mut store_error = None;
        let engine = &self.profile.engine(engine);
        let end = run_sweep_with(runner, &steps, engine, max_failed_steps, &mut |ev| match ev {
            SweepEvent::StepStarted { index, plan } => {
                self.profile.step_started(index);
                observer.step_started(index, plan);
            }
            SweepEvent::Tick { index, tick } => {
                self.on_tick(index, &steps[index], tick, observer);
                observer.tick(index, &steps[index], tick);
            }
            SweepEvent::StepFinished { index, result } => {
                self.profile.end_step();
                self.drain(observer);
                if failed_step.is_none() {
                    failed_step = self::failed_step(index, &result);
                }
                if let (Some(store), Some(id)) = (self.store.as_mut(), self.run_id) {
                    if let Err(e) = store.add_step(id, index, &result) {
                        store_error.get_or_insert((index, e));
                        engine.stop.store(true, Ordering::Relaxed);
                    }
                }
                if let Some((key, value)) = note() {
                    if let Err(e) = self.set_option(&key, value) {
                        self.lost.add(1, e);
                    }
                }
                observer.step_finished(index, &result, &unit);
            }
        });
        SweepOutcome { end, failed_step, store_error }
    }

    /// Runs one step (`plan`, stored as step `index`) and returns it; for a
    /// search that chooses the next step from the last result. The step is
    /// appended to the run's plan. A step the engine could not run to its
    /// end, or one that cannot be stored, is an error.
    pub fn step<D: Driver>(
        &mut self,
        index: usize,
        driver: &Arc<D>,
        plan: &StepPlan,
        engine: &EngineOptions,
        observer: &mut dyn Observer,
    ) -> Result<StepResult, StepError> {
        self.plan.steps.push(plan.clone());
        observer.step_started(index, plan);
        self.profile.step_started(index);
        let engine = &self.profile.engine(engine);
        let result = run_step(driver, plan, engine, &mut |tick| {
            self.on_tick(index, plan, tick, observer);
            observer.tick(index, plan, tick);
        });
        self.profile.end_step();
        self.drain(observer);
        let result = result?;
        if let (Some(store), Some(id)) = (self.store.as_mut(), self.run_id) {
            store.add_step(id, index, &result)?;
        }
        observer.step_finished(index, &result, self.plan.throughput_unit());
        Ok(result)
    }

    /// Replaces the run's planned steps (and the stored plan): a schedule
    /// chosen as results arrive (`--until-precision`) starts from none and
    /// adds each window with [`Session::push_step`].
    pub fn set_steps(&mut self, steps: Vec<StepPlan>) -> Result<(), StoreError> {
        self.plan.steps = steps;
        if let (Some(store), Some(id)) = (self.store.as_ref(), self.run_id) {
            store.update_plan(id, &self.plan)?;
        }
        Ok(())
    }

    /// Adds a step to the plan (and the stored plan); returns its index.
    pub fn push_step(&mut self, step: StepPlan) -> Result<usize, StoreError> {
        self.plan.steps.push(step);
        if let (Some(store), Some(id)) = (self.store.as_ref(), self.run_id) {
            store.update_plan(id, &self.plan)?;
        }
        Ok(self.plan.steps.len() - 1)
    }

    /// Runs the planned step `index` with `runner` and stores it; the
    /// observer sees it as window `shown` of the whole schedule (an
    /// interleaved comparison runs two sessions' windows in one order).
    /// A step that cannot be stored is an error.
    pub fn run_planned(
        &mut self,
        index: usize,
        shown: usize,
        runner: &mut dyn StepRunner,
        engine: &EngineOptions,
        observer: &mut dyn Observer,
    ) -> Result<StepResult, PlannedError> {
        let plan = self.plan.steps[index].clone();
        observer.step_started(shown, &plan);
        self.profile.step_started(index);
        let engine = &self.profile.engine(engine);
        let result = runner.run_step(index, &plan, engine, &mut |tick| {
            self.on_tick(index, &plan, tick, observer);
            observer.tick(shown, &plan, tick);
        });
        self.profile.end_step();
        self.drain(observer);
        let result = result.map_err(PlannedError::Engine)?;
        if let (Some(store), Some(id)) = (self.store.as_mut(), self.run_id) {
            store.add_step(id, index, &result).map_err(PlannedError::Store)?;
        }
        observer.step_finished(shown, &result, self.plan.throughput_unit());
        Ok(result)
    }

    /// Records `key` = `value` in the run's plan options (and the store).
    pub fn set_option(&mut self, key: &str, value: serde_json::Value) -> Result<(), StoreError> {
        self.plan.options.insert(key.to_string(), value);
        if let (Some(store), Some(id)) = (self.store.as_ref(), self.run_id) {
            store.update_plan(id, &self.plan)?;
        }
        Ok(())
    }

    /// No load: the probes only, until `stop` is raised or `duration` has
    /// passed; the observer sees each record as it is stored.
    ///
    /// When the server process exits and `refind` is given (a watch by
    /// port or target), it is asked once a second for the process that now
    /// owns the port; the probes then follow that one, and a note says so.
    pub fn watch(
        &mut self,
        stop: &AtomicBool,
        duration: Option<Duration>,
        observer: &mut dyn Observer,
        mut refind: Option<&mut dyn FnMut() -> Option<u32>>,
    ) {
        let start = Instant::now();
        let mut last_look = Instant::now();
        while !stop.load(Ordering::Relaxed) && duration.is_none_or(|d| start.elapsed() < d) {
            std::thread::sleep(Duration::from_millis(100));
            self.profile.watch_tick();
            self.drain(observer);
            // Looked at once a second, not at every drain.
            let Some(find) = refind.as_mut().filter(|_| last_look.elapsed() >= Duration::from_secs(1)) else { continue };
            last_look = Instant::now();
            let gone = self.collect.server_pid.is_some_and(|p| !std::path::Path::new(&format!("/proc/{p}")).exists());
            if let Some(pid) = gone.then(find).flatten().filter(|p| Some(*p) != self.collect.server_pid) {
                self.follow(pid, observer);
            }
        }
    }

    /// Samples the server process `pid` from now on (the one before exited):
    /// the collector is started anew, and a note records the change.
    fn follow(&mut self, pid: u32, observer: &mut dyn Observer) {
        let before = self.collect.server_pid;
        self.collect.server_pid = Some(pid);
        if let Some(c) = self.capturing.as_mut() {
            c.follow(pid);
        }
        if let Some(old) = self.telemetry.take() {
            let mut records = old.stop();
            records.push(Record::Unavailable(
                Source::Process,
                format!("the server restarted: pid {} exited, now pid {pid}", before.map_or("-".into(), |p| p.to_string())),
            ));
            self.keep(records, observer);
            self.telemetry = Some(Collector::start(self.collect.clone()));
        }
    }

    /// Stops the probes and keeps their last records (before the server
    /// they watch is stopped, so its exit is not recorded as a failure).
    pub fn stop_probes(&mut self, observer: &mut dyn Observer) {
        if let Some(t) = self.telemetry.take() {
            let mut records = std::mem::take(&mut self.profile.pending);
            records.extend(t.stop());
            self.keep(records, observer);
        }
        if let Some(records) = self.capturing.as_mut().map(|c| c.finished(true)) {
            self.keep(records, observer);
        }
        // Folded now, with the load off, while the server still runs.
        if let Some(p) = self.profile.profiler.take() {
            let (records, overhead) = p.finish();
            self.profile.overhead = Some(overhead);
            self.keep(records, observer);
        }
    }

    /// Ends the run: the probes' last records and the outcome are stored.
    /// Returns the store and the run id when the run was recorded.
    pub fn finish(mut self, complete: bool, outcome: &str) -> Result<Option<(Store, i64)>, StoreError> {
        self.stop_probes(&mut Silent);
        match (self.store.take(), self.run_id) {
            (Some(store), Some(id)) => {
                store.finish_run(id, complete, &self.lost.outcome(outcome))?;
                Ok(Some((store, id)))
            }
            _ => Ok(None),
        }
    }
}
