//! `scalelab capacity`: the highest offered rate at which every SLO holds
//! (docs/open-loop.md, "Capacity"). The target is prepared and checked as
//! for `sweep`; the search (analyze::capacity) chooses each next rate from
//! the last result, and every tried rate is stored as a step of a run of
//! kind `capacity`.

use super::plan::SweepPlan;
use super::prepared::{Prepared, Setup};
use super::started::{begin, Execute, Started};
use crate::args::CapacityArgs;
use crate::error::bad;
use crate::session::{Silent, StepError};
use scalelab_analyze::capacity::{parse_slo, Found, Next, Observation, Search, Settings, Slo, SloMetric};
use scalelab_core::{escape_control, parse_duration, OpenLoopPlan, RunKind, StepPlan};
use scalelab_store::Store;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The search's inputs, checked before anything starts.
struct Capacity {
    settings: Settings,
    max_time: Duration,
    slo_text: Vec<String>,
    /// --max-in-flight was given: every step uses it.
    fixed_in_flight: bool,
}

fn rate(text: &str, name: &str) -> anyhow::Result<f64> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|r| r.is_finite() && (1.0..=1e7).contains(r))
        .ok_or_else(|| bad(format!("--{name} '{}': use requests per second from 1 to 10000000", escape_control(text))))
}

pub fn run(store_path: &Path, c: CapacityArgs) -> anyhow::Result<ExitCode> {
    let CapacityArgs { slos, max_rate, start_rate, step, max_time, resolution, sweep: mut a } = c;
    for (given, name, fix) in [
        (a.rate.is_some(), "--rate", "the search chooses the rates (--start-rate, --max-rate)"),
        (a.concurrency.is_some(), "-c/--concurrency", "a capacity search offers rates (open loop)"),
        (a.duration.is_some(), "-d/--duration", "the window per tried rate is --step"),
        (super::plan::agents_wanted(&a), "--agent/--server-agent", "agents run sweeps so far"),
        (a.profile_steps.is_some(), "--profile-steps", "the search chooses its steps as it goes: --profile profiles each"),
    ] {
        if given {
            return Err(bad(format!("{name} does not apply to capacity: {fix}")));
        }
    }
    let parsed: Vec<Slo> = slos.iter().map(|s| parse_slo(s).map_err(bad)).collect::<anyhow::Result<_>>()?;
    let max_per_s = rate(max_rate.as_deref().unwrap_or("1000000"), "max-rate")?;
    let start_per_s = rate(&start_rate, "start-rate")?.min(max_per_s);
    let max_time = parse_duration(&max_time).map_err(|e| bad(format!("--max-time: {e}")))?;
    if max_time.is_zero() {
        return Err(bad("--max-time must be above 0: a search with no time runs nothing"));
    }
    let resolution = resolution
        .trim()
        .strip_suffix('%')
        .and_then(|p| p.trim().parse::<f64>().ok())
        .filter(|p| (0.1..=50.0).contains(p))
        .ok_or_else(|| bad(format!("--resolution '{}': use a share from 0.1% to 50%, e.g. 5%", escape_control(&resolution))))?;
    // The window per tried rate is sweep's --duration: 10s, or 2s for the specimen.
    // Checked here under its own name: sweep's check said "--duration".
    if let Some(text) = &step {
        let window = parse_duration(text).map_err(|e| bad(format!("--step: {e}")))?;
        if window < std::time::Duration::from_millis(100) {
            return Err(bad(format!(
                "--step {}: the window per tried rate must be at least 100ms: a shorter one measures noise",
                escape_control(text)
            )));
        }
    }
    a.duration = Some(step.unwrap_or_else(|| if a.target.is_none() && a.url_file.is_none() { "2s" } else { "10s" }.into()));
    // The highest rate sizes the checks made before load (descriptors, preflight).
    a.rate = Some(format!("{max_per_s}"));
    let fixed_in_flight = a.max_in_flight.is_some();
    if !fixed_in_flight {
        a.max_in_flight = Some(in_flight(max_per_s, &parsed).to_string());
    }
    let settings = Settings { slos: parsed, start_per_s, max_per_s, resolution: resolution / 100.0, min_per_s: 1.0 };
    super::sweep::prepare_then(store_path, a, Capacity { settings, max_time, slo_text: slos, fixed_in_flight })
}

impl Execute for Capacity {
    fn execute<D: scalelab_drive::Driver>(
        self,
        store: Store,
        store_path: &Path,
        mut plan: SweepPlan,
        setup: Setup,
        prepared: Prepared<D>,
    ) -> anyhow::Result<ExitCode> {
        let template = plan.steps.pop().expect("one step sized by --max-rate");
        let assertions = std::mem::take(&mut plan.assertions);
        let mut prepared = prepared;
        prepared.options.insert("slo".into(), self.slo_text.clone().into());
        prepared.options.insert("capacity_resolution".into(), self.settings.resolution.into());
        prepared.options.insert("capacity_max_rate_per_s".into(), self.settings.max_per_s.into());
        // Bound before the run is stored: an address in use is bad input.
        let exporter = crate::exporter::Exporter::start(&plan.metrics, "capacity")?;
        let Started { mut session, driver, specimen, engine, run_id, label, workload, stop, client_net, .. } =
            begin(store, &plan, setup, prepared, RunKind::Capacity)?;
        let a = &plan.output;
        if let Some(x) = &exporter {
            x.set_run(&run_id.to_string(), &label, &session.plan().target);
            if let (Some(addr), false) = (x.listening(), a.quiet || a.json) {
                esayln!("metrics: http://{addr}{}", crate::exporter::METRICS_PATH);
            }
        }
        let mut silent = Silent;
        let mut exported = exporter.as_ref().map(|x| x.observe(&mut silent));
        let max_failed = plan.max_failed_steps;
        if !a.json && !a.quiet {
            sayln!("run {run_id}: capacity of {label} ({workload}), store {}", store_path.display());
        }
        for n in session.profile_notices() {
            esayln!("{n}");
        }
        let mut search = Search::new(self.settings.clone());
        let start = Instant::now();
        let per_step = template.warmup() + template.window() + template.pause();
        let (mut store_error, mut engine_error) = (None, None);
        // As a sweep: after --max-failed-steps tries in a row where nothing
        // succeeded the server is gone, and the search stops there.
        let (mut failed_in_a_row, mut target_failed) = (0u32, None);
        while let Next::Try { rate, .. } = search.next() {
            if start.elapsed() + template.warmup() + template.window() > self.max_time {
                search.give_up();
                break;
            }
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let open = template.open_loop.as_ref().expect("capacity steps are open loop");
            let m = if self.fixed_in_flight { open.max_in_flight } else { in_flight(rate, &self.settings.slos) };
            let plan = StepPlan {
                concurrency: m,
                open_loop: Some(OpenLoopPlan { rate_per_s: rate, max_in_flight: m, ..*open }),
                ..template.clone()
            };
            let index = search.trials().len();
            let observer: &mut dyn crate::session::Observer = match exported.as_mut() {
                Some(x) => x,
                None => &mut Silent,
            };
            let result = match session.step(index, &driver, &plan, &engine, observer) {
                Ok(r) => r,
                Err(StepError::Store(e)) => {
                    store_error = Some(e);
                    break;
                }
                Err(StepError::Engine(e)) => {
                    engine_error = Some(format!("failed: step {}: {e}", index + 1));
                    break;
                }
            };
            if result.partial {
                break;
            }
            search.record(Observation::of_step(&result));
            let t = search.trials().last().expect("just recorded");
            if !a.json && !a.quiet {
                esayln!("{}", scalelab_report::capacity::trial_line(index, t));
            }
            failed_in_a_row = if result.failed() { failed_in_a_row + 1 } else { 0 };
            if max_failed > 0 && failed_in_a_row >= max_failed {
                target_failed = Some(index + 1);
                break;
            }
            if matches!(search.next(), Next::Try { .. }) && !sleep_unless(per_step - template.warmup() - template.window(), &stop) {
                break;
            }
        }
        let interrupted = search.found().is_none() && target_failed.is_none();
        let found = search.found().cloned();
        let (lo, hi) = search.bracket();
        let mut set = |k: &str, v: serde_json::Value| session.set_option(k, v);
        if let Some(Found::Capacity { rate, .. }) = &found {
            set("capacity_per_s", (*rate).into())?;
        }
        set("capacity_result", scalelab_report::capacity::found_name(found.as_ref()).into())?;
        set("capacity_bracket", serde_json::json!([lo, hi]))?;
        session.stop_probes(&mut Silent);
        // The clients' namespace goes first, then the specimen it led to.
        drop(client_net);
        drop(specimen);
        if let Some(e) = store_error {
            let _ = session.finish(false, "store error");
            return Err(anyhow::anyhow!("run {run_id} stopped: saving a step failed ({e}); the earlier steps are kept"));
        }
        if let Some(outcome) = engine_error {
            session.finish(false, &outcome)?;
            // A run that started and failed (exit 1), its earlier steps kept.
            return Err(anyhow::anyhow!("run {run_id} {outcome}; the earlier steps are kept, marked incomplete"));
        }
        let outcome = match target_failed {
            Some(step) => format!("target failed at step {step}"),
            None if interrupted => "interrupted".to_string(),
            None => scalelab_report::capacity::outcome(found.as_ref()),
        };
        let complete = !interrupted && target_failed.is_none();
        let (store, _) = session.finish(complete, &outcome)?.expect("a capacity run is recorded");
        let mut run = super::show::load_run(&store, run_id)?;
        if let Some(line) = exporter.and_then(crate::exporter::Exporter::finish) {
            esayln!("{line}");
            let _ = store.add_probe_note(run_id, "metrics", &line);
        }
        // A capacity whose first failing rate measured the client is no
        // result: stored as such (no capacity_per_s for --assert or runs).
        let mut outcome = outcome;
        let distrust = match (&found, target_failed) {
            (Some(Found::Capacity { rate, .. }), None) => scalelab_report::capacity::untrusted(&search, &run).map(|why| (*rate, why)),
            _ => None,
        };
        if let Some((rate, why)) = &distrust {
            outcome = scalelab_report::capacity::untrusted_outcome(*rate, why);
            run.plan.options.remove("capacity_per_s");
            run.plan.options.insert("capacity_result".into(), "client-bound".into());
            store.update_plan(run_id, &run.plan)?;
            store.finish_run(run_id, true, &outcome)?;
            run = super::show::load_run(&store, run_id)?;
        }
        if a.json {
            println!("{}", serde_json::to_string_pretty(&super::analysis::run_json_with_diagnosis(&run))?);
        } else {
            let width = crate::term::width();
            say!("{}", scalelab_report::capacity::summary(&search, &run, width));
            sayln!("run {run_id} {outcome}; stored in {}", store_path.display());
        }
        let passed = super::analysis::check(&run, &assertions);
        if target_failed.is_some() {
            esayln!(
                "error: run {run_id} {outcome} (nothing succeeded for {} step(s) in a row); the steps are kept, marked incomplete",
                max_failed
            );
            return Ok(ExitCode::from(1));
        }
        let code = match (&found, interrupted) {
            (_, true) => 130,
            (Some(Found::Capacity { .. }), _) if distrust.is_none() => 0,
            _ => 1,
        };
        Ok(ExitCode::from(if !passed && code == 0 { 1 } else { code }))
    }
}

/// Connections for a tried rate: enough for twice the loosest latency
/// bound (Little: rate x latency), so a request is dropped only once it
/// would breach that SLO anyway; never below sweep's default, at most 2,000.
fn in_flight(rate: f64, slos: &[Slo]) -> u32 {
    let bound_s = slos.iter().filter_map(|s| matches!(s.metric, SloMetric::Latency(_)).then_some(s.limit / 1000.0)).fold(0.0, f64::max);
    let m = (rate * 2.0 * bound_s).ceil().min(2_000.0) as u32;
    m.max(OpenLoopPlan::default_max_in_flight(rate))
}

/// Sleeps `d` unless a stop is raised first; false when it was.
fn sleep_unless(d: Duration, stop: &std::sync::atomic::AtomicBool) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50).min(end.saturating_duration_since(Instant::now())));
    }
    !stop.load(Ordering::Relaxed)
}
