//! `scalelab micro`: the OS micro-benchmark suite, stored as a run; and the
//! micro side of `show` and `compare`.

use crate::args::MicroArgs;
use crate::error::bad;
use scalelab_core::{RunKind, RunPlan};
use scalelab_micro::{LabelledRun, MicroReport, SuiteOptions};
use scalelab_report::micro as micro_text;
use scalelab_store::Store;
use std::path::Path;
use std::process::ExitCode;

pub fn run(store_path: &Path, a: &MicroArgs) -> anyhow::Result<ExitCode> {
    let only = match &a.only {
        Some(list) => Some(scalelab_micro::Group::parse_list(list).map_err(|e| bad(format!("--only: {e}")))?),
        None => None,
    };
    if a.repeats == Some(0) {
        return Err(bad("--repeats must be at least 1"));
    }
    let mut beside = Vec::new();
    for f in &a.beside {
        let text = scalelab_probe::read::read_user_text(f, scalelab_probe::read::MAX_TABLE_BYTES)
            .map_err(|e| bad(format!("--beside {}: {e}", f.display())))?;
        let name = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        beside
            .extend(scalelab_analyze::micro::parse_published_csv(&name, &text).map_err(|e| bad(format!("--beside {}: {e}", f.display())))?);
    }
    let store = Store::open(store_path)?;
    let stop = super::stop_on_signals()?;
    let opts = SuiteOptions { quick: a.quick, only, repeats: a.repeats, stop: stop.clone() };
    let label = a.label.clone().unwrap_or_else(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_else(|_| "this host".into())
    });
    let show_progress = !a.quiet && !a.json;
    let run = scalelab_micro::run_suite(&opts, &mut |r| {
        if show_progress {
            esayln!("{}", scalelab_report::micro::progress_line(r));
        }
    })
    .map_err(|e| anyhow::anyhow!("micro-benchmarks: {e}"))?;

    let env = scalelab_probe::capture_environment(&Default::default(), None, scalelab_drive::cpu::open_files_limit());
    let report = MicroReport::new(&label, env.clone(), &run);
    let groups = opts.only.as_ref().map_or("all groups".to_string(), |g| g.iter().map(|g| g.as_str()).collect::<Vec<_>>().join(","));
    let mut options = serde_json::Map::new();
    options.insert("quick".into(), a.quick.into());
    let plan = RunPlan {
        label: label.clone(),
        target: "localhost".into(),
        workload: format!("micro-benchmarks: {groups}"),
        steps: vec![],
        client_threads: 1,
        options,
    };
    let id = store.begin_run(RunKind::Micro, &plan, &env, None)?;
    store.save_micro_report(id, &serde_json::to_string(&report)?)?;
    let outcome = if run.stopped { "interrupted" } else { "completed" };
    store.finish_run(id, !run.stopped, outcome)?;

    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        let mut runs = vec![report.to_labelled()];
        runs.extend(beside);
        say!("{}", micro_text::tables_text(&runs));
        for w in &run.warnings {
            sayln!("warning: {w}");
        }
        sayln!("\nsuite wall time {:.1} s; run {id} stored in {}", run.wall_s, store_path.display());
    }
    Ok(if run.stopped { ExitCode::from(130) } else { ExitCode::SUCCESS })
}

/// The labelled micro report of a stored run, if it is a micro run.
pub fn load_labelled(store: &Store, id: i64) -> anyhow::Result<Option<LabelledRun>> {
    match store.load_micro_report(id)? {
        Some(json) => {
            let report: MicroReport = serde_json::from_str(&json)?;
            Ok(Some(report.to_labelled()))
        }
        None => Ok(None),
    }
}

/// `show` of a micro run: its summary tables.
pub fn show(run: &LabelledRun, json: Option<&str>) -> anyhow::Result<ExitCode> {
    match json {
        Some(j) => println!("{j}"),
        None => {
            say!("{}", micro_text::tables_text(std::slice::from_ref(run)));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `compare` of micro runs: side by side with % deltas vs the baseline.
pub fn compare(runs: &[LabelledRun], base: usize, json: bool) -> anyhow::Result<ExitCode> {
    let c = scalelab_analyze::micro::compare_with(runs, base).map_err(|e| bad(e.to_string()))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&c)?);
    } else {
        say!("{}", micro_text::render_comparison(&c));
    }
    Ok(ExitCode::SUCCESS)
}
