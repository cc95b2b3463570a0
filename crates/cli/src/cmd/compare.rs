//! `scalelab import` and `scalelab compare`.

use crate::args::{CompareArgs, CompareFormat, ImportArgs};
use crate::cmd::analysis::series_of;
use crate::error::bad;
use scalelab_analyze::{compare, render_compare, CompareOptions};
use scalelab_core::{Environment, RunKind, RunPlan, StepPlan, StepResult};
use scalelab_store::{RunSelector, Store};
use std::path::Path;
use std::process::ExitCode;

pub fn import(store_path: &Path, a: &ImportArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&a.file).map_err(|e| bad(format!("cannot read {}: {e}", a.file.display())))?;
    let series = scalelab_analyze::parse_import_csv(&text).map_err(|e| bad(format!("{}: {e}", a.file.display())))?;
    let mut store = Store::open(store_path)?;
    let source = a.file.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    for s in &series {
        let plan = RunPlan {
            label: s.label.clone(),
            target: format!("imported:{source}"),
            workload: "published series".into(),
            steps: s
                .points
                .iter()
                .map(|p| StepPlan { concurrency: p.concurrency, warmup_s: 0.0, window_s: 0.0, pause_s: 0.0, think_time_s: 0.0 })
                .collect(),
            client_threads: 1,
            options: Default::default(),
        };
        let env = Environment { scalelab_version: scalelab_core::VERSION.into(), ..Default::default() };
        let id = store.begin_run(RunKind::Imported, &plan, &env, Some(&a.file.display().to_string()))?;
        for (i, p) in s.points.iter().enumerate() {
            let step = StepResult { concurrency: p.concurrency, published_throughput_per_s: Some(p.throughput), ..Default::default() };
            store.add_step(id, i, &step)?;
        }
        store.finish_run(id, true, &format!("imported from {source}"))?;
        println!("run {id}: {} ({} steps) imported", s.label, s.points.len());
    }
    Ok(ExitCode::SUCCESS)
}

pub fn compare_runs(store_path: &Path, a: &CompareArgs) -> anyhow::Result<ExitCode> {
    if !store_path.exists() {
        return Err(bad(format!("no store at {} (pass --store PATH)", store_path.display())));
    }
    let store = Store::open(store_path)?;
    // Micro-benchmark runs compare figure by figure.
    // Runs are compared by identity; labels only name them.
    let mut micro = Vec::new();
    for name in &a.runs {
        let id = store.resolve(&RunSelector::parse(name))?;
        if let Some(m) = super::micro::load_labelled(&store, id)? {
            micro.push((id, m));
        }
    }
    if !micro.is_empty() {
        if micro.len() != a.runs.len() {
            return Err(bad("micro-benchmark runs compare only with other micro-benchmark runs"));
        }
        let base = match a.baseline.as_deref() {
            None => 0,
            Some(name) => {
                let id = store.resolve(&RunSelector::parse(name))?;
                micro
                    .iter()
                    .position(|(i, _)| *i == id)
                    .ok_or_else(|| bad(format!("--baseline '{name}' is not one of the compared runs")))?
            }
        };
        let ids: Vec<i64> = micro.iter().map(|(id, _)| *id).collect();
        let mut runs: Vec<_> = micro.into_iter().map(|(_, m)| m).collect();
        disambiguate(&mut runs, &ids, |r| &mut r.label);
        return super::micro::compare(&runs, base, a.format == CompareFormat::Json);
    }
    let mut runs = Vec::new();
    for name in &a.runs {
        let id = store.resolve(&RunSelector::parse(name))?;
        let mut run = store.load_run(id)?;
        crate::telemetry::attach(&store, &mut run)?;
        runs.push(run);
    }
    // Columns are named by label; two runs with one label get their ids appended.
    let mut series: Vec<_> = runs.iter().map(series_of).collect();
    let ids: Vec<i64> = runs.iter().map(|r| r.id).collect();
    disambiguate(&mut series, &ids, |s| &mut s.label);
    let labels: Vec<&str> = series.iter().map(|s| s.label.as_str()).collect();
    let label_of = |name: &str| -> anyhow::Result<String> {
        if labels.contains(&name) {
            return Ok(name.to_string());
        }
        let id = store.resolve(&RunSelector::parse(name))?;
        let idx = runs.iter().position(|r| r.id == id).ok_or_else(|| bad(format!("'{name}' is not one of the compared runs")))?;
        Ok(series[idx].label.clone())
    };
    let baseline = a.baseline.as_deref().map(label_of).transpose()?;
    let mut pairs = Vec::new();
    for p in &a.pairs {
        pairs.push(CompareOptions::parse_pair(p, &labels).map_err(|e| bad(format!("--pair: {e}")))?);
    }
    let options = CompareOptions { baseline, pairs, avg_from: a.avg_from };
    let table = compare(&series, &options).map_err(|e| bad(e.to_string()))?;
    let diagnoses: Vec<_> = runs.iter().map(scalelab_analyze::diagnose).collect();
    let side: Vec<(&str, &scalelab_analyze::Diagnosis)> = series.iter().map(|s| s.label.as_str()).zip(&diagnoses).collect();
    let curves = scalelab_report::summary::side_by_side(&side, false);
    match a.format {
        CompareFormat::Table => {
            print!("{}", render_compare::to_text(&table));
            println!();
            print!("{}", scalelab_report::fmt::columns(&curves));
        }
        CompareFormat::Md => {
            print!("{}", render_compare::to_markdown(&table));
            println!();
            print!("{}", scalelab_report::markdown::md_table_aligned(&curves, false));
        }
        CompareFormat::Csv => print!("{}", render_compare::to_csv(&table)),
        CompareFormat::Json => println!("{}", serde_json::to_string_pretty(&table)?),
    }
    Ok(ExitCode::SUCCESS)
}

/// Names runs apart: every run whose label another compared run shares gets
/// its id appended (`host #12`, `host #15`); unique labels stay as they are.
/// The one rule for repeated labels in `compare`, sweep and micro runs alike.
pub(crate) fn disambiguate<T>(items: &mut [T], ids: &[i64], label: impl Fn(&mut T) -> &mut String) {
    let labels: Vec<String> = items.iter_mut().map(|t| label(t).clone()).collect();
    for (i, t) in items.iter_mut().enumerate() {
        if labels.iter().filter(|l| **l == labels[i]).count() > 1 {
            let l = label(t);
            *l = format!("{l} #{}", ids[i]);
        }
    }
}
