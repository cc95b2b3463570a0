//! `scalelab runs`, `show` and `export`: reading the store back.

use crate::args::{ExportArgs, ExportFormat, ShowArgs};
use scalelab_core::escape_control as line;
use scalelab_report::fmt::thousands;
use scalelab_report::{csv, table};
use scalelab_store::{RunSelector, Store};
use std::path::Path;
use std::process::ExitCode;

/// The store of a command that only reads: never created, opened
/// read-only when the user may not write it.
pub fn open_existing(path: &Path) -> anyhow::Result<Store> {
    Ok(Store::open_for_reading(path)?)
}

/// A stored run with its samples, its steps' telemetry derived from them:
/// the one place a command turns a stored run into an analysed one.
pub fn load_run(store: &Store, id: i64) -> anyhow::Result<scalelab_core::Run> {
    let mut run = store.load_run(id)?;
    scalelab_analyze::telemetry::derive(&mut run);
    Ok(run)
}

pub fn runs(path: &Path) -> anyhow::Result<ExitCode> {
    let store = open_existing(path)?;
    let mut rows = vec![["id", "kind", "label", "target", "started (UTC)", "steps", "peak/s", "status"].map(String::from).to_vec()];
    for r in store.list_runs()? {
        let status = match (&r.outcome, r.complete) {
            (_, true) => "complete".to_string(),
            (Some(o), false) => format!("incomplete: {o}"),
            (None, false) => "incomplete".to_string(),
        };
        rows.push(vec![
            r.id.to_string(),
            r.kind,
            r.label,
            r.target,
            utc(r.started_unix_ms),
            r.steps.to_string(),
            r.peak_throughput_per_s.map_or("-".into(), thousands),
            status,
        ]);
    }
    say!("{}", scalelab_report::fmt::columns_fit(&rows, crate::term::width()));
    Ok(ExitCode::SUCCESS)
}

pub fn show(path: &Path, a: &ShowArgs) -> anyhow::Result<ExitCode> {
    let store = open_existing(path)?;
    let id = store.resolve(&RunSelector::parse(&a.run))?;
    if let Some(micro) = super::micro::load_labelled(&store, id)? {
        let json = if a.json { store.load_micro_report(id)? } else { None };
        return super::micro::show(&micro, json.as_deref());
    }
    let run = load_run(&store, id)?;
    if run.kind == scalelab_core::RunKind::Watch {
        if a.json {
            println!("{}", serde_json::to_string_pretty(&super::watch::watch_json(&run)?)?);
            return Ok(ExitCode::SUCCESS);
        }
        return super::watch::show(&run);
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&super::analysis::run_json_with_diagnosis(&run))?);
        let parsed = super::analysis::parse_assertions(&a.asserts)?;
        return Ok(if super::analysis::check(&run, &parsed) { ExitCode::SUCCESS } else { ExitCode::from(1) });
    }
    let status = if run.complete {
        "complete".to_string()
    } else {
        format!("incomplete ({})", run.outcome.as_deref().unwrap_or("killed or still running"))
    };
    let width = crate::term::width();
    let head = format!(
        "run {}: {} — {} — {}\ntarget {}, client threads {}, started {}\n",
        run.id,
        line(&run.plan.label),
        line(&run.plan.workload),
        status,
        line(&run.plan.target),
        run.plan.client_threads_text(),
        utc(run.started_unix_ms)
    );
    say!("{}", scalelab_report::fmt::wrap(&head, width));
    say!("{}", table::run_table_width(&run, width));
    if let Some(t) = table::telemetry_table_width(&run, width) {
        say!("{t}");
    }
    say!("{}", scalelab_report::fmt::wrap(&super::analysis::diagnosis_text(&run), width));
    let parsed = super::analysis::parse_assertions(&a.asserts)?;
    Ok(if super::analysis::check(&run, &parsed) { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

pub fn diagnose(path: &Path, a: &ShowArgs) -> anyhow::Result<ExitCode> {
    let store = open_existing(path)?;
    let id = store.resolve(&RunSelector::parse(&a.run))?;
    let run = load_run(&store, id)?;
    let d = scalelab_analyze::diagnose(&run);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&scalelab_analyze::verdict::to_json(&d))?);
    } else {
        sayln!("run {}: {}", run.id, line(&run.plan.label));
        say!("{}", scalelab_report::fmt::wrap(&scalelab_analyze::render_text(&d, &line(&run.plan.label)), crate::term::width()));
    }
    let parsed = super::analysis::parse_assertions(&a.asserts)?;
    Ok(if super::analysis::check(&run, &parsed) { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

pub fn export(path: &Path, a: &ExportArgs) -> anyhow::Result<ExitCode> {
    let format = match (a.format, a.series) {
        (Some(ExportFormat::Json), true) => {
            return Err(crate::error::bad("--series is a CSV of the per-second series: use --format csv (or leave --format out)"))
        }
        (Some(f), _) => f,
        (None, true) => ExportFormat::Csv,
        (None, false) => ExportFormat::Json,
    };
    let store = open_existing(path)?;
    let id = store.resolve(&RunSelector::parse(&a.run))?;
    if let Some(json) = store.load_micro_report(id)? {
        if format == ExportFormat::Csv {
            return Err(crate::error::bad(format!("run {id} is a micro-benchmark run: it exports as JSON only (`scalelab export {id}`)")));
        }
        println!("{json}");
        return Ok(ExitCode::SUCCESS);
    }
    let run = load_run(&store, id)?;
    // A watch recording has no steps: its table is the per-interval series.
    if run.kind == scalelab_core::RunKind::Watch {
        match format {
            ExportFormat::Json => println!("{}", serde_json::to_string_pretty(&super::watch::watch_json(&run)?)?),
            ExportFormat::Csv => {
                print!("{}", super::watch::intervals_csv(run.id, &super::watch::intervals(&run.samples, &run)))
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    match (format, a.series) {
        (ExportFormat::Json, _) => println!("{}", serde_json::to_string_pretty(&super::analysis::run_json_with_diagnosis(&run))?),
        (ExportFormat::Csv, false) => print!("{}", csv::steps_csv(&run)),
        (ExportFormat::Csv, true) => print!("{}", csv::seconds_csv(&run)),
    }
    Ok(ExitCode::SUCCESS)
}

/// `2026-11-22 01:02:03` from Unix milliseconds (UTC, no time-zone database needed).
fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let tod = secs.rem_euclid(86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}", tod / 3600, tod % 3600 / 60, tod % 60)
}
