//! `scalelab runs`, `show` and `export`: reading the store back.

use crate::args::{ExportArgs, ExportFormat, ShowArgs};
use scalelab_report::csv;
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
    let listing = store.list_runs()?;
    say!("{}", scalelab_report::cli::runs_table(&listing, crate::term::width()));
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
            println!("{}", serde_json::to_string_pretty(&scalelab_report::watch::json(&run))?);
            return Ok(ExitCode::SUCCESS);
        }
        say!("{}", scalelab_report::watch::show_text(&run));
        return Ok(ExitCode::SUCCESS);
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&super::analysis::run_json_with_diagnosis(&run))?);
        let parsed = super::analysis::parse_assertions(&a.asserts)?;
        return Ok(if super::analysis::check(&run, &parsed) { ExitCode::SUCCESS } else { ExitCode::from(1) });
    }
    say!("{}", scalelab_report::cli::show_text(&run, crate::term::width()));
    say!("{}", scalelab_report::watch::captures_text(&run));
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
        say!("{}", scalelab_report::cli::diagnose_text(&run, &d, crate::term::width()));
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
            ExportFormat::Json => println!("{}", serde_json::to_string_pretty(&scalelab_report::watch::json(&run))?),
            ExportFormat::Csv => {
                print!("{}", scalelab_report::watch::csv(&run))
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
