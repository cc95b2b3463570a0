//! `scalelab profile RUN`: the stacks `--profile` stored per step; and the
//! one line that says what profiling cost a sweep.

use crate::args::ProfileArgs;
use crate::error::bad;
use scalelab_analyze::profile::diff;
use scalelab_core::sample::ProfileSample;
use scalelab_core::Source;
use scalelab_probe::profile::Overhead;
use scalelab_store::RunSelector;
use std::path::Path;
use std::process::ExitCode;

/// What `--profile` cost: perf's CPU time while the windows ran (the
/// server's machine pays it), in all (its start in the warm-up, writing its
/// files after the window), and the folding after the run.
pub fn overhead_line(o: &Overhead) -> String {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let share = if o.window_s > 0.0 { 100.0 * o.window_cpu_s / (o.window_s * cpus) } else { 0.0 };
    format!(
        "profile: perf record used {:.2} CPU-s in {} window(s) of {:.1} s ({share:.1} % of {cpus} CPUs; {:.2} CPU-s with its start and stop); {:.1} MB folded in {:.1} s after the run",
        o.window_cpu_s,
        o.windows,
        o.window_s,
        o.record_cpu_s,
        o.bytes as f64 / 1e6,
        o.fold_s
    )
}

/// `scalelab profile RUN [--step N] [--off-cpu] [--top N] [--diff A B]`.
pub fn run(path: &Path, a: &ProfileArgs) -> anyhow::Result<ExitCode> {
    let store = super::show::open_existing(path)?;
    let id = store.resolve(&RunSelector::parse(&a.run))?;
    let run = store.load_run(id)?;
    if run.samples.profile.is_empty() {
        let why = run.notes.iter().find(|(s, _)| s == Source::Profile.name()).map(|(_, w)| format!(": {w}")).unwrap_or_default();
        return Err(bad(format!("run {id} has no profiles{why}; sweep with --profile to take them")));
    }
    let step_of = |clients: u32| -> anyhow::Result<&ProfileSample> {
        let index = run.steps.iter().position(|s| s.concurrency == clients);
        index.and_then(|i| run.samples.profile.iter().find(|p| p.step == i)).ok_or_else(|| {
            let have: Vec<String> =
                run.samples.profile.iter().filter_map(|p| run.steps.get(p.step)).map(|s| s.concurrency.to_string()).collect();
            bad(format!("run {id} has no profiled step with {clients} clients; --step takes one of: {}", have.join(", ")))
        })
    };
    let label = |p: &ProfileSample| format!("{} clients", run.steps.get(p.step).map_or(0, |s| s.concurrency));
    if let Some(d) = &a.diff {
        let (pa, pb) = (step_of(d[0])?, step_of(d[1])?);
        let pick = |p: &ProfileSample| if a.off_cpu { p.off_cpu.clone() } else { p.on_cpu.clone() };
        let what = if a.off_cpu { "off-CPU" } else { "on-CPU" };
        let (Some(x), Some(y)) = (pick(pa), pick(pb)) else {
            return Err(bad(format!("run {id}: one of the two steps has no {what} stacks")));
        };
        print!("{}", scalelab_report::profile::diff_text(&label(pa), &label(pb), what, &diff(&x, &y, a.top)));
        return Ok(ExitCode::SUCCESS);
    }
    let p = match a.step {
        Some(n) => step_of(n)?,
        None => run.samples.profile.iter().max_by_key(|p| p.step).expect("not empty"),
    };
    let title = format!("run {id} step {} ({})", p.step + 1, label(p));
    print!("{}", scalelab_report::profile::step_text(&title, p, a.off_cpu, a.top));
    Ok(ExitCode::SUCCESS)
}
