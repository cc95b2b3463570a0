//! `sweep --versus`: two targets measured in interleaved ABBA blocks at
//! every level, stored as two runs linked as a pair, then compared paired
//! (docs/statistics.md). Both targets get the same options; each has its
//! own probes (its server process), its own session and its own run.

use super::plan::SweepPlan;
use super::prepared::{Prepared, Setup};
use super::started::{begin, Execute, Started};
use super::windows::{Arm, Fixed, Repeat};
use crate::live::LiveView;
use crate::session::SweepOutcome;
use scalelab_analyze::{Assertion, CompareOptions, Comparison};
use scalelab_core::{Run, RunKind};
use scalelab_drive::rounds::{abba, versus_blocks, Arm as Side};
use scalelab_drive::{Local, SweepEnd};
use scalelab_report::table;
use scalelab_store::Store;
use std::path::Path;
use std::process::ExitCode;

/// The first target, prepared and checked, waiting for the second.
pub struct First<D> {
    pub store: Store,
    pub plan: SweepPlan,
    pub setup: Setup,
    pub prepared: Prepared<D>,
}

/// Prepares the second target and runs both.
pub struct Second<D> {
    pub first: First<D>,
    pub repeat: Repeat,
}

impl<D1: scalelab_drive::Driver> Execute for Second<D1> {
    fn execute<D2: scalelab_drive::Driver>(
        self,
        store_b: Store,
        store_path: &Path,
        mut plan_b: SweepPlan,
        mut setup_b: Setup,
        prepared_b: Prepared<D2>,
    ) -> anyhow::Result<ExitCode> {
        let Second { first, repeat } = self;
        let First { store: store_a, plan: mut plan_a, setup: setup_a, prepared: prepared_a } = first;
        let levels = plan_a.steps.clone();
        let blocks = versus_blocks(repeat.repeats);
        let order = abba(&levels, blocks, repeat.seed);
        plan_a.steps = order.iter().filter(|(s, _)| *s == Side::A).map(|(_, p)| p.clone()).collect();
        plan_b.steps = order.iter().filter(|(s, _)| *s == Side::B).map(|(_, p)| p.clone()).collect();
        // One noise line: both targets are loaded from this machine.
        setup_b.say_noise = false;
        let Started { session: mut sa, driver: da, specimen: specimen_a, engine: ea, run_id: id_a, label: label_a, stop, .. } =
            begin(store_a, &plan_a, setup_a, prepared_a, RunKind::Sweep)?;
        let Started { session: mut sb, driver: db, specimen: specimen_b, engine: mut eb, run_id: id_b, label: label_b, .. } =
            begin(store_b, &plan_b, setup_b, prepared_b, RunKind::Sweep)?;
        // One stop for both: SIGINT or `q` ends the schedule, not one arm.
        eb.stop = stop.clone();
        for (session, side) in [(&mut sa, Side::A), (&mut sb, Side::B)] {
            let mut link = serde_json::Map::new();
            link.insert("pair".into(), vec![id_a, id_b].into());
            link.insert("arm".into(), side.name().into());
            link.insert("blocks".into(), blocks.into());
            link.insert("seed".into(), repeat.seed.into());
            session.set_option("versus", link.into())?;
        }
        if !plan_a.output.json && !plan_a.output.quiet {
            sayln!(
                "runs {id_a} (A: {label_a}) and {id_b} (B: {label_b}): {} levels, {blocks} ABBA blocks each, store {}",
                levels.len(),
                store_path.display()
            );
        }
        let all: Vec<_> = order.iter().map(|(_, p)| p.clone()).collect();
        let title = format!("{label_a} vs {label_b}");
        let mut view = LiveView::start(plan_a.output.quiet, plan_a.output.no_tui, title, &all, stop.clone());
        let sides: Vec<usize> = order.iter().map(|(s, _)| if *s == Side::A { 0 } else { 1 }).collect();
        let (mut ra, mut rb) = (Local(&da), Local(&db));
        let outcomes = {
            let mut arms = [Arm::new(&mut sa, &mut ra, &ea), Arm::new(&mut sb, &mut rb, &eb)];
            super::windows::run(&mut arms, &mut Fixed::new(&sides), &stop, plan_a.max_failed_steps, &mut view)
        };
        view.finish();
        let mut code = 0u8;
        let mut runs: Vec<Run> = Vec::new();
        let mut stores = Vec::new();
        for (session, swept) in [sa, sb].into_iter().zip(outcomes) {
            let run_id = session.run_id().expect("recorded");
            let (complete, outcome, c) = swept.verdict();
            if let Some((index, e)) = &swept.store_error {
                let _ = session.finish(false, "store error");
                return Err(anyhow::anyhow!(
                    "run {run_id} stopped: saving step {} failed ({e}); its {index} earlier step(s) are kept (`scalelab show {run_id}`)",
                    index + 1
                ));
            }
            let (store, _) = session.finish(complete, &outcome)?.expect("a sweep is recorded");
            code = code.max(c);
            runs.push(super::show::load_run(&store, run_id)?);
            stores.push((store, swept, outcome));
        }
        drop(specimen_a);
        drop(specimen_b);
        print(plan_a.output.json, plan_a.output.quiet, &runs, &stores, store_path)?;
        let passed = check(&runs, &plan_a.assertions);
        if !passed && code == 0 {
            code = 1;
        }
        Ok(ExitCode::from(code))
    }
}

/// `--assert` after a versus sweep, by the rules of a plain sweep's: a
/// delta (`delta_pct`) on the paired comparison of the two arms, B vs A as
/// `scalelab compare A B` gives it (A, the first target named, is the
/// baseline), held only when its whole interval satisfies the assertion;
/// every other assertion on run A, printed with its run. True when all held.
fn check(runs: &[Run], assertions: &[Assertion]) -> bool {
    let mut passed = true;
    let mut table = None;
    for assertion in assertions {
        if assertion.is_about_comparison() {
            match table.get_or_insert_with(|| paired(runs)) {
                Ok(t) => {
                    let o = assertion.evaluate_comparison(t);
                    passed &= o.passed;
                    esayln!("{}", scalelab_report::cli::assertion_line(&o));
                }
                Err(why) => {
                    passed = false;
                    esayln!("{}", scalelab_report::cli::assertion_no_data(&assertion.text, why));
                }
            }
        } else {
            eprint!("run {} (A): ", runs[0].id);
            passed &= super::analysis::check(&runs[0], std::slice::from_ref(assertion));
        }
    }
    passed
}

/// The two arms compared as `scalelab compare A B` does: one delta column,
/// B vs A, paired window by window.
fn paired(runs: &[Run]) -> Result<Comparison, String> {
    let ids: Vec<(i64, &str)> = runs.iter().map(|r| (r.id, r.plan.label.as_str())).collect();
    let mut series: Vec<_> = runs.iter().map(super::analysis::series_of).collect();
    for (s, name) in series.iter_mut().zip(scalelab_core::display_names(&ids)) {
        s.label = name;
    }
    let labelled: Vec<(&str, &Run)> = series.iter().map(|s| s.label.as_str()).zip(runs).collect();
    let options = CompareOptions {
        pairs: vec![(series[1].label.clone(), series[0].label.clone())],
        paired: scalelab_analyze::compare::versus_arms(&labelled),
        ..Default::default()
    };
    scalelab_analyze::compare(&series, &options).map_err(|e| e.to_string())
}

/// The two runs' tables (or JSON), then the paired comparison, then
/// how each run ended.
fn print(json: bool, quiet: bool, runs: &[Run], ends: &[(Store, SweepOutcome, String)], store_path: &Path) -> anyhow::Result<()> {
    if json {
        let docs: Vec<serde_json::Value> = runs.iter().map(super::analysis::run_json_with_diagnosis).collect();
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "versus": docs }))?);
    } else {
        let width = crate::term::width();
        for (run, side) in runs.iter().zip(["A", "B"]) {
            sayln!();
            sayln!("{side}: run {} {}", run.id, scalelab_core::escape_control(&run.plan.label));
            say!("{}", table::run_table_width(run, width));
            if !quiet {
                say!("{}", scalelab_report::fmt::wrap(&super::analysis::diagnosis_text(run), width));
            }
        }
        sayln!();
        sayln!("`scalelab compare {} {}` compares them level by level, paired", runs[0].id, runs[1].id);
        for (run, (_, _, outcome)) in runs.iter().zip(ends) {
            sayln!("run {} {outcome}; stored in {}", run.id, store_path.display());
        }
    }
    for (run, (_, swept, _)) in runs.iter().zip(ends) {
        match &swept.end {
            // Why, as a sweep says it: the first step that measured no working server.
            SweepEnd::TargetFailed { step } => match &swept.failed_step {
                Some(why) => {
                    esayln!("error: run {}: target failed at step {step} (nothing succeeded, steps in a row; first {why})", run.id)
                }
                None => esayln!("error: run {}: target failed at step {step}", run.id),
            },
            SweepEnd::EngineFailed { step, error } => esayln!("error: run {} failed at step {step}: {error}", run.id),
            SweepEnd::Interrupted => esayln!("interrupted: run {} kept {} finished step(s), marked incomplete", run.id, run.steps.len()),
            SweepEnd::Completed => {
                if let Some(why) = &swept.failed_step {
                    esayln!("error: run {} failed: {why}", run.id);
                }
            }
        }
    }
    Ok(())
}
