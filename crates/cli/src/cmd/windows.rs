//! Sweeps whose windows are not one run's fixed list of steps: a schedule
//! chosen as results arrive (`--until-precision`), and two runs whose
//! windows interleave (`--versus`, ABBA blocks). The plain sweep and
//! `--repeats` (a fixed list, shuffled per round) run through
//! [`crate::session::Session::sweep_with`] as before.
//!
//! The checks of the repeat options ([`Repeat::check`]) are here too, so
//! every option that shapes the schedule is refused before any load.

use crate::args::{RepeatArgs, SweepArgs};
use crate::error::bad;
use crate::session::{Observer, PlannedError, Session, SweepOutcome};
use scalelab_analyze::stats;
use scalelab_core::{parse_duration, StepPlan, StepResult};
use scalelab_drive::rounds::{LevelStop, Precision};
use scalelab_drive::sweep::sleep_unless_stopped;
use scalelab_drive::{EngineOptions, StepRunner, SweepEnd};
use scalelab_store::StoreError;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Windows per level under `--until-precision` before its interval is
/// trusted: with 2 the t quantile is 12.7 and one lucky pair would pass.
pub const PRECISION_MIN_REPEATS: u32 = 3;
/// `--max-repeats` when not given.
pub const DEFAULT_MAX_REPEATS: u32 = 10;
/// The most windows per level `--repeats` and `--max-repeats` accept.
pub const MAX_REPEATS: u32 = 100;

/// How often each level is measured and against what, checked.
#[derive(Clone, Debug, Default)]
pub struct Repeat {
    /// Windows per level (`--repeats`; 1: measured once).
    pub repeats: u32,
    /// `--until-precision`.
    pub precision: Option<PrecisionSpec>,
    /// `--versus`.
    pub versus: Option<Versus>,
    /// The order's seed (given, or drawn and recorded).
    pub seed: u64,
}

/// `--until-precision` and its bounds.
#[derive(Clone, Debug)]
pub struct PrecisionSpec {
    pub target_pct: f64,
    pub max_repeats: u32,
    pub max_time: Option<Duration>,
}

/// The second target of an interleaved comparison.
#[derive(Clone, Debug)]
pub struct Versus {
    /// A URL; None: a specimen.
    pub target: Option<String>,
    /// The second specimen's mode and work per request (`specimen:MODE[:WORK_US]`).
    pub specimen: Option<(String, Option<u64>)>,
    pub label: Option<String>,
}

impl Versus {
    /// The first target's options, aimed at the second: both get the same
    /// schedule, workload, headers and probes.
    pub fn args_for_b(&self, a: &SweepArgs) -> SweepArgs {
        let mut b = a.clone();
        b.target = self.target.clone();
        b.label = self.label.clone();
        b.url_file = None;
        match &self.specimen {
            Some((mode, work)) => {
                b.specimen = Some(mode.clone());
                b.work_us = work.or(a.work_us);
            }
            None => {
                b.specimen = None;
                b.work_us = None;
            }
        }
        b
    }
}

impl Repeat {
    /// Checks the repeat options against each other and the sweep's.
    pub fn check(a: &SweepArgs, r: &RepeatArgs) -> anyhow::Result<Repeat> {
        let repeats = r.repeats.unwrap_or(1);
        if !(1..=MAX_REPEATS).contains(&repeats) {
            return Err(bad(format!("--repeats must be from 1 to {MAX_REPEATS}")));
        }
        if r.until_precision.is_none() && (r.max_repeats.is_some() || r.max_time.is_some()) {
            return Err(bad("--max-repeats and --max-time bound --until-precision: give --until-precision too"));
        }
        let precision = match &r.until_precision {
            None => None,
            Some(text) => {
                if r.repeats.is_some() {
                    return Err(bad(
                        "--repeats and --until-precision exclude each other: a fixed count, or as many as the precision needs",
                    ));
                }
                let t = text.trim().trim_end_matches('%').trim();
                let target_pct = t.parse::<f64>().ok().filter(|p| p.is_finite() && (0.1..=50.0).contains(p)).ok_or_else(|| {
                    bad(format!(
                        "--until-precision '{}': give the half-width of the 95 % interval in %, from 0.1% to 50%, e.g. 2%",
                        scalelab_core::escape_control(text)
                    ))
                })?;
                let max_repeats = r.max_repeats.unwrap_or(DEFAULT_MAX_REPEATS);
                if !(PRECISION_MIN_REPEATS..=MAX_REPEATS).contains(&max_repeats) {
                    return Err(bad(format!("--max-repeats must be from {PRECISION_MIN_REPEATS} to {MAX_REPEATS}")));
                }
                if !a.agents.is_empty() {
                    return Err(bad("--until-precision does not combine with --agent: use --repeats N, which agents run"));
                }
                let max_time = match &r.max_time {
                    None => None,
                    Some(t) => {
                        let d = parse_duration(t).map_err(|e| bad(format!("--max-time: {e}")))?;
                        if d.is_zero() {
                            return Err(bad("--max-time must be above 0"));
                        }
                        Some(d)
                    }
                };
                Some(PrecisionSpec { target_pct, max_repeats, max_time })
            }
        };
        let versus = match &r.versus {
            None => None,
            Some(v) => {
                if precision.is_some() {
                    return Err(bad("--versus and --until-precision exclude each other: use --versus with --repeats N"));
                }
                let not_with = [
                    ("--agent", !a.agents.is_empty()),
                    ("--server-agent", a.server_agent.is_some()),
                    ("--client-net", a.client_net.is_some()),
                    ("--profile", a.profile || a.profile_steps.is_some()),
                    ("--url-file", a.url_file.is_some()),
                    ("--server-pid", a.server_pid.is_some()),
                ];
                if let Some((name, _)) = not_with.iter().find(|(_, set)| *set) {
                    return Err(bad(format!("--versus does not combine with {name}: run the two targets as separate sweeps")));
                }
                Some(parse_versus(v, r.versus_label.clone())?)
            }
        };
        let seed = r.seed.unwrap_or_else(|| {
            let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
            t ^ u64::from(std::process::id()).rotate_left(32)
        });
        Ok(Repeat { repeats, precision, versus, seed })
    }
}

/// `--versus TARGET`: a URL, or `specimen:MODE[:WORK_US]`.
fn parse_versus(text: &str, label: Option<String>) -> anyhow::Result<Versus> {
    let wrong = || {
        bad(format!(
            "--versus '{}': give a URL (http://..., postgres://..., mysql://...) or specimen:MODE[:WORK_US], e.g. specimen:scales:150",
            scalelab_core::redact_url(&scalelab_core::escape_control(text))
        ))
    };
    if let Some(rest) = text.strip_prefix("specimen:") {
        let (mode, work) = match rest.split_once(':') {
            Some((m, w)) => (m, Some(w.trim().parse::<u64>().ok().filter(|w| *w <= 1_000_000).ok_or_else(wrong)?)),
            None => (rest, None),
        };
        mode.parse::<scalelab_specimen::Mode>().map_err(|e| bad(format!("--versus: {e}")))?;
        return Ok(Versus { target: None, specimen: Some((mode.to_string(), work)), label });
    }
    if !text.contains("://") {
        return Err(wrong());
    }
    Ok(Versus { target: Some(text.to_string()), specimen: None, label })
}

/// One run of a schedule: its session, what runs its steps, its engine's
/// options, and how its steps went.
pub struct Arm<'a> {
    pub session: &'a mut Session,
    pub runner: &'a mut dyn StepRunner,
    pub engine: &'a EngineOptions,
    failed_step: Option<String>,
    store_error: Option<(usize, StoreError)>,
}

impl<'a> Arm<'a> {
    /// A run whose windows the schedule will run.
    pub fn new(session: &'a mut Session, runner: &'a mut dyn StepRunner, engine: &'a EngineOptions) -> Self {
        Arm { session, runner, engine, failed_step: None, store_error: None }
    }
}

/// The order of a schedule's windows.
pub trait Order {
    /// The next window: the arm that runs it and the index of its step in
    /// that arm's plan (an order may add the step to the plan first).
    /// None: the schedule is done. An error: a plan could not be stored.
    fn next(&mut self, arms: &mut [Arm<'_>]) -> Result<Option<(usize, usize)>, (usize, StoreError)>;
    /// A window of `arm` ended with `result`.
    fn finished(&mut self, _arm: usize, _result: &StepResult) {}
    /// The schedule ended before the order did (stopped, or the target failed).
    fn cut_short(&mut self) {}
}

/// Runs the windows `order` gives, each on its arm, with the plan's pause
/// between them; stops on `stop` (SIGINT, `q`), after `max_failed_steps`
/// windows in a row where nothing succeeded, or when a step cannot be
/// stored. Returns each arm's outcome (one `end` for all: the schedule is one).
pub fn run(
    arms: &mut [Arm<'_>],
    order: &mut dyn Order,
    stop: &AtomicBool,
    max_failed_steps: u32,
    observer: &mut dyn Observer,
) -> Vec<SweepOutcome> {
    let mut shown = 0usize;
    let mut failed_in_a_row = 0u32;
    let mut pause: Option<Duration> = None;
    let end = loop {
        if stop.load(Ordering::Relaxed) {
            break SweepEnd::Interrupted;
        }
        let (a, index) = match order.next(arms) {
            Ok(Some(next)) => next,
            Ok(None) => break SweepEnd::Completed,
            Err((a, e)) => {
                let at = arms[a].session.plan().steps.len();
                arms[a].store_error.get_or_insert((at, e));
                break SweepEnd::Interrupted;
            }
        };
        if let Some(p) = pause.take() {
            if !sleep_unless_stopped(p, stop) {
                break SweepEnd::Interrupted;
            }
        }
        let arm = &mut arms[a];
        let result = match arm.session.run_planned(index, shown, arm.runner, arm.engine, observer) {
            Ok(r) => r,
            Err(PlannedError::Engine(error)) => break SweepEnd::EngineFailed { step: index + 1, error },
            Err(PlannedError::Store(e)) => {
                arm.store_error.get_or_insert((index, e));
                break SweepEnd::Interrupted;
            }
        };
        shown += 1;
        if arm.failed_step.is_none() {
            arm.failed_step = crate::session::failed_step(index, &result);
        }
        order.finished(a, &result);
        if stop.load(Ordering::Relaxed) {
            break SweepEnd::Interrupted;
        }
        failed_in_a_row = if result.failed() && !result.partial { failed_in_a_row + 1 } else { 0 };
        if max_failed_steps > 0 && failed_in_a_row >= max_failed_steps {
            break SweepEnd::TargetFailed { step: index + 1 };
        }
        pause = Some(arm.session.plan().steps[index].pause());
    };
    if end != SweepEnd::Completed {
        order.cut_short();
    }
    arms.iter_mut()
        .map(|arm| SweepOutcome { end: end.clone(), failed_step: arm.failed_step.take(), store_error: arm.store_error.take() })
        .collect()
}

/// A fixed order: (arm, step index) pairs, in turn (`--versus`).
pub struct Fixed {
    windows: VecDeque<(usize, usize)>,
}

impl Fixed {
    /// The windows of `arms`' plans in the order given by `arm_of_window`
    /// (the arm of each window, in order; each arm's steps taken in turn).
    pub fn new(arm_of_window: &[usize]) -> Self {
        let mut next = vec![0usize; arm_of_window.iter().max().map_or(0, |m| m + 1)];
        let windows = arm_of_window
            .iter()
            .map(|&a| {
                next[a] += 1;
                (a, next[a] - 1)
            })
            .collect();
        Fixed { windows }
    }
}

impl Order for Fixed {
    fn next(&mut self, _arms: &mut [Arm<'_>]) -> Result<Option<(usize, usize)>, (usize, StoreError)> {
        Ok(self.windows.pop_front())
    }
}

/// `--until-precision`: rounds of the levels whose interval is still too
/// wide, each window added to the (single) arm's plan as it is chosen.
pub struct UntilPrecision {
    levels: Vec<StepPlan>,
    schedule: Precision,
    round: VecDeque<usize>,
    running: Option<usize>,
    started: Instant,
    max_time: Option<Duration>,
}

impl UntilPrecision {
    /// The schedule of `levels` to `spec`'s precision, in an order from `seed`.
    pub fn new(levels: Vec<StepPlan>, spec: &PrecisionSpec, seed: u64) -> Self {
        let schedule = Precision::new(levels.len(), spec.target_pct, PRECISION_MIN_REPEATS, spec.max_repeats, seed);
        UntilPrecision { levels, schedule, round: VecDeque::new(), running: None, started: Instant::now(), max_time: spec.max_time }
    }

    /// Why each level stopped, keyed by its level (clients, or offered rate),
    /// as stored in the run's options (`precision.stopped`).
    pub fn stopped(&self) -> serde_json::Map<String, serde_json::Value> {
        self.levels
            .iter()
            .zip(self.schedule.stops())
            .map(|(l, s)| {
                let key = match &l.open_loop {
                    Some(o) => format!("{}", o.rate_per_s),
                    None => l.concurrency.to_string(),
                };
                (key, s.map_or(serde_json::Value::Null, |s| s.name().into()))
            })
            .collect()
    }
}

/// A level's interval half-width in %, from its windows' throughputs.
fn half_width_pct(xs: &[f64]) -> Option<f64> {
    let mean = xs.iter().sum::<f64>() / xs.len().max(1) as f64;
    stats::mean_of_repeats(xs).ok().and_then(|c| c.half_width_pct(mean))
}

impl Order for UntilPrecision {
    fn next(&mut self, arms: &mut [Arm<'_>]) -> Result<Option<(usize, usize)>, (usize, StoreError)> {
        if self.round.is_empty() {
            self.round = self.schedule.next_round(&half_width_pct).into();
        }
        let Some(&level) = self.round.front() else { return Ok(None) };
        let step = self.levels[level].clone();
        if let Some(max) = self.max_time {
            let needs = Duration::from_secs_f64(step.warmup_s + step.window_s);
            if self.started.elapsed() + needs > max {
                self.schedule.stop_all(LevelStop::MaxTime);
                self.round.clear();
                return Ok(None);
            }
        }
        self.round.pop_front();
        self.running = Some(level);
        let index = arms[0].session.push_step(step).map_err(|e| (0, e))?;
        Ok(Some((0, index)))
    }

    fn finished(&mut self, _arm: usize, result: &StepResult) {
        if let Some(level) = self.running.take() {
            if !result.partial && !result.failed() {
                self.schedule.record(level, result.throughput_per_s());
            }
        }
    }

    fn cut_short(&mut self) {
        self.schedule.stop_all(LevelStop::Interrupted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_orders_take_each_arms_steps_in_turn() {
        let mut f = Fixed::new(&[0, 1, 1, 0, 0, 1, 1, 0]);
        let got: Vec<(usize, usize)> = std::iter::from_fn(|| f.windows.pop_front()).collect();
        assert_eq!(got, vec![(0, 0), (1, 0), (1, 1), (0, 1), (0, 2), (1, 2), (1, 3), (0, 3)]);
    }

    #[test]
    fn versus_targets_parse_and_bad_ones_say_what_to_give() {
        let v = parse_versus("specimen:scales:150", None).unwrap();
        assert_eq!((v.target, v.specimen), (None, Some(("scales".to_string(), Some(150)))));
        let v = parse_versus("specimen:global-lock", Some("gl".into())).unwrap();
        assert_eq!(v.specimen, Some(("global-lock".to_string(), None)));
        assert_eq!(parse_versus("http://127.0.0.1:1/", None).unwrap().target.as_deref(), Some("http://127.0.0.1:1/"));
        for wrong in ["specimen:nope", "specimen:scales:x", "localhost:80"] {
            let e = parse_versus(wrong, None).unwrap_err().to_string();
            assert!(e.starts_with("--versus"), "{e}");
        }
        let e = parse_versus("postgres-ish:user:secret@host", None).unwrap_err().to_string();
        assert!(!e.contains('\u{1b}'), "{e}");
    }
}
