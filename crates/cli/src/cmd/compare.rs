//! `scalelab import` and `scalelab compare`.

use crate::args::{CompareArgs, CompareFormat, ImportArgs};
use crate::cmd::analysis::series_of;
use crate::error::bad;
use scalelab_analyze::{compare, CompareOptions};
use scalelab_core::{Environment, RunKind, RunPlan, StepPlan, StepResult};
use scalelab_report::compare as render_compare;
use scalelab_store::{RunSelector, Store};
use std::path::Path;
use std::process::ExitCode;

pub fn import(store_path: &Path, a: &ImportArgs) -> anyhow::Result<ExitCode> {
    let text = scalelab_probe::read::read_user_text(&a.file, scalelab_probe::read::MAX_TABLE_BYTES)
        .map_err(|e| bad(format!("cannot read {}: {e}", a.file.display())))?;
    let series = scalelab_analyze::parse_import_csv(&text).map_err(|e| bad(format!("{}: {e}", a.file.display())))?;
    let mut store = Store::open(store_path)?;
    let source = a.file.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    let mut options = serde_json::Map::new();
    options.insert("throughput_unit".into(), scalelab_analyze::import_unit(&text).into());
    for s in &series {
        let plan = RunPlan {
            label: s.label.clone(),
            target: format!("imported:{source}"),
            workload: "published series".into(),
            steps: s
                .points
                .iter()
                .map(|p| StepPlan {
                    concurrency: p.concurrency,
                    warmup_s: 0.0,
                    window_s: 0.0,
                    pause_s: 0.0,
                    think_time_s: 0.0,
                    open_loop: None,
                })
                .collect(),
            client_threads: 1,
            options: options.clone(),
        };
        let env = Environment { scalelab_version: scalelab_core::VERSION.into(), ..Default::default() };
        let id = store.begin_run(RunKind::Imported, &plan, &env, Some(&a.file.display().to_string()))?;
        for (i, p) in s.points.iter().enumerate() {
            let step = StepResult { concurrency: p.concurrency, published_throughput_per_s: Some(p.throughput), ..Default::default() };
            store.add_step(id, i, &step)?;
        }
        store.finish_run(id, true, &format!("imported from {source}"))?;
        sayln!("run {id}: {} ({} steps) imported", scalelab_core::escape_control(&s.label), s.points.len());
    }
    Ok(ExitCode::SUCCESS)
}

pub fn compare_runs(store_path: &Path, a: &CompareArgs) -> anyhow::Result<ExitCode> {
    if !store_path.exists() {
        return Err(bad(format!("no store at {} (pass --store PATH)", store_path.display())));
    }
    let assertions = super::analysis::parse_assertions(&a.asserts)?;
    let store = super::show::open_existing(store_path)?;
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
        let run = super::show::load_run(&store, id)?;
        runs.push(run);
    }
    // Columns are named by label; repeated labels get their ids (one rule everywhere).
    let ids: Vec<(i64, &str)> = runs.iter().map(|r| (r.id, r.plan.label.as_str())).collect();
    let mut series: Vec<_> = runs.iter().map(series_of).collect();
    for (s, name) in series.iter_mut().zip(scalelab_core::display_names(&ids)) {
        s.label = name;
    }
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
        // Labels first (they may hold colons); then each side as a label, an id or `last`.
        let pair = CompareOptions::parse_pair(p, &labels).or_else(|e| {
            let resolved: Vec<(String, String)> = p
                .match_indices(':')
                .filter_map(|(i, _)| Some((label_of(p[..i].trim()).ok()?, label_of(p[i + 1..].trim()).ok()?)))
                .collect();
            match <[_; 1]>::try_from(resolved) {
                Ok([pair]) => Ok(pair),
                Err(_) => Err(bad(format!("--pair: {e}; ids work too, e.g. --pair {}:{}", runs[0].id, runs[runs.len() - 1].id))),
            }
        })?;
        pairs.push(pair);
    }
    // Two runs: the first named is the baseline, as in `report` and
    // `--baseline`: the delta is the second against it, unless asked otherwise.
    if pairs.is_empty() && baseline.is_none() && series.len() == 2 {
        pairs.push((series[1].label.clone(), series[0].label.clone()));
    }
    let labelled: Vec<(&str, &scalelab_core::Run)> = series.iter().map(|s| s.label.as_str()).zip(&runs).collect();
    let paired = scalelab_analyze::compare::versus_arms(&labelled);
    let options = CompareOptions { baseline, pairs, avg_from: a.avg_from, paired };
    let mut table = compare(&series, &options).map_err(|e| bad(e.to_string()))?;
    table.warnings = scalelab_analyze::compare::environment_differences(&labelled);
    let diagnoses: Vec<_> = runs.iter().map(scalelab_analyze::diagnose).collect();
    let side: Vec<(&str, &scalelab_analyze::Diagnosis)> = series.iter().map(|s| s.label.as_str()).zip(&diagnoses).collect();
    let curves = scalelab_report::summary::side_by_side(&side, false);
    let client_net = scalelab_report::summary::client_net_lines(&labelled);
    match a.format {
        CompareFormat::Table => {
            let width = crate::term::width();
            say!("{}", render_compare::to_text_width(&table, width));
            if let Some(t) = &client_net {
                say!("{t}");
            }
            sayln!();
            say!("{}", scalelab_report::fmt::columns_fit(&curves, width));
        }
        CompareFormat::Md => {
            say!("{}", render_compare::to_markdown(&table));
            if let Some(t) = &client_net {
                sayln!();
                say!("{t}");
            }
            sayln!();
            say!("{}", scalelab_report::markdown::md_table_aligned(&curves, false));
        }
        CompareFormat::Csv => {
            print!("{}", render_compare::to_csv(&table));
            for w in &table.warnings {
                eprintln!("warning: {w}");
            }
        }
        CompareFormat::Json => println!("{}", serde_json::to_string_pretty(&table)?),
    }
    // Checks: a delta on the table once, the others on every run (named by its column label).
    let mut passed = true;
    for assertion in &assertions {
        if assertion.is_about_comparison() {
            let o = assertion.evaluate_comparison(&table);
            passed &= o.passed;
            eprintln!("{o}");
        } else {
            for (run, s) in runs.iter().zip(&series) {
                eprint!("{}: ", scalelab_core::escape_control(&s.label));
                passed &= super::analysis::check(run, std::slice::from_ref(assertion));
            }
        }
    }
    Ok(if passed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Names runs apart: every run whose label another compared run shares gets
/// its id appended (`host #12`, `host #15`); unique labels stay as they are.
/// The one rule for repeated labels in `compare`, sweep and micro runs alike.
pub(crate) fn disambiguate<T>(items: &mut [T], ids: &[i64], label: impl Fn(&mut T) -> &mut String) {
    let labels: Vec<String> = items.iter_mut().map(|t| label(t).clone()).collect();
    let pairs: Vec<(i64, &str)> = ids.iter().copied().zip(labels.iter().map(String::as_str)).collect();
    for (t, name) in items.iter_mut().zip(scalelab_core::display_names(&pairs)) {
        *label(t) = name;
    }
}
