//! `--profile`'s part of a session: perf started per step window (a
//! sweep), per window one after the other or on a trigger's demand (a
//! watch), and the warm-up held until perf answers.

use super::Probes;
use crate::telemetry::Record;
use scalelab_core::{Source, StepPlan};
use scalelab_drive::{EngineOptions, LiveTick};
use scalelab_probe::profile::{Overhead, ProfileConfig, Profiler};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// `--profile`'s state in a session.
#[derive(Default)]
pub(super) struct Profiling {
    pub(super) profiler: Option<Profiler>,
    /// Records to store before the first drain (why profiling is unavailable).
    pub(super) pending: Vec<Record>,
    /// What was done to make profiling work, for the user.
    pub(super) notices: Vec<String>,
    /// The step whose captures are started, and the one whose window is being profiled.
    pub(super) prepared: Option<usize>,
    pub(super) open: Option<usize>,
    pub(super) overhead: Option<Overhead>,
    /// A watch's profiled window: its index and when it opened (None:
    /// its captures are starting).
    pub(super) window: Option<(usize, Option<Instant>)>,
    /// Holds a step's warm-up until perf is started ([`EngineOptions::hold_warmup`]).
    pub(super) hold: Arc<AtomicBool>,
    /// The steps profiled (`--profile-steps`); None: every one.
    pub(super) only: Option<std::collections::BTreeSet<usize>>,
    /// A watch with triggers: a window only when a trigger asks for one.
    pub(super) on_demand: bool,
    /// The next on-demand window's index.
    pub(super) next_window: usize,
}

/// The warning of a run that asked for `--profile` and will have none.
fn unprofiled(why: &str) -> String {
    format!("warning: --profile: no profiles will be taken: {}", scalelab_core::escape_control(why))
}

impl Profiling {
    /// Starts profiling when asked; `window_s` is the steps' window (a
    /// sweep), which sets how long off-CPU is captured in each.
    pub(super) fn start(p: &Probes, window_s: Option<f64>) -> Profiling {
        if !p.profile {
            return Profiling::default();
        }
        let Some(pid) = p.collect.server_pid else {
            let why =
                format!("no server process to profile ({}); fix: pass --server-pid", p.why_no_server.as_deref().unwrap_or("none found"));
            let notices = vec![unprofiled(&why)];
            return Profiling { pending: vec![Record::Unavailable(Source::Profile, why)], notices, ..Default::default() };
        };
        let config = ProfileConfig { window_s, ..ProfileConfig::new(pid) };
        let (profiler, pending, mut notices) = Profiler::start(config);
        if profiler.is_none() {
            // Said at the start, not only stored: a run asked for profiles gets none.
            let why = pending.iter().find_map(|r| match r {
                Record::Unavailable(Source::Profile, why) => Some(why.as_str()),
                _ => None,
            });
            notices.push(unprofiled(why.unwrap_or("perf cannot profile the server")));
        }
        Profiling { profiler, pending, notices, only: p.profile_steps.clone(), ..Default::default() }
    }

    /// Whether step `index` is profiled (a profiler runs, and the step is
    /// one `--profile-steps` chose).
    pub(super) fn profiles(&self, index: usize) -> bool {
        self.profiler.is_some() && self.only.as_ref().is_none_or(|only| only.contains(&index))
    }

    /// The engine's options for a profiled run: its warm-ups may be held
    /// until perf is started, so perf's start is not paid in the window.
    pub(super) fn engine(&self, engine: &EngineOptions) -> EngineOptions {
        let hold_warmup = if self.profiler.is_some() { Some(self.hold.clone()) } else { engine.hold_warmup.clone() };
        EngineOptions { hold_warmup, ..engine.clone() }
    }

    /// Step begins: its warm-up is held from the start (perf starts at
    /// the first tick, which may come after a short warm-up's end).
    pub(super) fn step_started(&mut self, index: usize) {
        if self.profiles(index) {
            self.hold.store(true, Ordering::Release);
        }
    }

    /// A tick of step `index`. perf starts (disabled) at the step's first
    /// warm-up tick, when the clients are connected and their server threads
    /// exist (perf attaches to the threads there are), and holds the
    /// warm-up past its planned end until it is started; it is enabled
    /// then, and the hold released (the window opens within 250 ms). An
    /// engine that does not hold (a coordinator's agents) opens the window
    /// on time, and perf is enabled then, counting from when it answers.
    pub(super) fn tick(&mut self, index: usize, plan: &StepPlan, tick: &LiveTick) {
        if !self.profiles(index) {
            return;
        }
        let Some(p) = self.profiler.as_mut() else { return };
        if self.prepared != Some(index) {
            self.hold.store(true, Ordering::Release);
            p.prepare_step(index);
            self.prepared = Some(index);
        }
        p.tick();
        let planned_over = !tick.warming_up || tick.elapsed_s >= plan.warmup_s;
        if self.open != Some(index) && planned_over && (!tick.warming_up || p.ready()) {
            p.open_window();
            if tick.warming_up {
                p.held_warmup((tick.elapsed_s - plan.warmup_s).max(0.0));
            }
            self.open = Some(index);
            self.hold.store(false, Ordering::Release);
        }
    }

    /// A watch's tick: its windows follow one another, each folded and
    /// stored as a step's profile as soon as it ends (docs/profiles.md).
    /// A window opens once its captures are started (perf answers), so
    /// perf's start is not counted in it.
    pub(super) fn watch_tick(&mut self) {
        let Some(p) = self.profiler.as_mut() else { return };
        p.tick();
        match self.window {
            None if self.on_demand => {}
            None => {
                p.prepare_step(0);
                self.window = Some((0, None));
            }
            Some((i, None)) => {
                if p.ready() {
                    p.open_window();
                    self.window = Some((i, Some(Instant::now())));
                }
            }
            Some((i, Some(at))) if at.elapsed() >= p.watch_window() => {
                p.end_step();
                self.pending.extend(p.fold_ended());
                if self.on_demand {
                    self.window = None;
                } else {
                    p.prepare_step(i + 1);
                    self.window = Some((i + 1, None));
                }
            }
            Some(_) => {}
        }
    }

    /// A trigger fired: in a watch with triggers, a profile window is
    /// started for it (its index), unless one is still open. Elsewhere
    /// (no `--profile`, or a sweep, which profiles its steps) none.
    pub(super) fn window_on_demand(&mut self) -> Result<Option<usize>, String> {
        if !self.on_demand {
            return Ok(None);
        }
        let Some(p) = self.profiler.as_mut() else { return Err("perf could not be started".into()) };
        if let Some((i, _)) = self.window {
            return Err(format!("window {i}, of an earlier capture, was still being taken"));
        }
        let i = self.next_window;
        p.prepare_step(i);
        self.window = Some((i, None));
        self.next_window += 1;
        Ok(Some(i))
    }

    /// The step ended: its window's capture is closed.
    pub(super) fn end_step(&mut self) {
        self.hold.store(false, Ordering::Release);
        if let (Some(p), Some(_)) = (self.profiler.as_mut(), self.open.take()) {
            p.end_step();
        }
    }
}
