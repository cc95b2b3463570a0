//! `scalelab profile RUN`: the stacks `--profile` stored per step (or per
//! window of a watch).

use crate::args::ProfileArgs;
use crate::error::bad;
use scalelab_analyze::profile::{diff, profile_at};
use scalelab_core::sample::ProfileSample;
use scalelab_core::Source;
use scalelab_store::RunSelector;
use std::path::Path;
use std::process::ExitCode;

/// `scalelab profile RUN [--step N] [--off-cpu] [--top N] [--diff A B]`.
pub fn run(path: &Path, a: &ProfileArgs) -> anyhow::Result<ExitCode> {
    let store = super::show::open_existing(path)?;
    let id = store.resolve(&RunSelector::parse(&a.run))?;
    let run = store.load_run(id)?;
    if run.samples.profile.is_empty() {
        let why = unavailable(&run, Source::Profile);
        return Err(bad(format!("run {id} has no profiles{why}; sweep with --profile to take them")));
    }
    if run.kind == scalelab_core::RunKind::Watch {
        return watch(&run, a);
    }
    let step_of = |clients: u32| -> anyhow::Result<&ProfileSample> {
        profile_at(&run, clients).ok_or_else(|| {
            let have: Vec<String> =
                run.samples.profile.iter().filter_map(|p| run.steps.get(p.step)).map(|s| s.concurrency.to_string()).collect();
            bad(format!(
                "run {id} has no profiled step with {}; --step takes one of: {}",
                scalelab_report::fmt::clients(clients),
                have.join(", ")
            ))
        })
    };
    let label = |p: &ProfileSample| scalelab_report::fmt::clients(run.steps.get(p.step).map_or(0, |s| s.concurrency));
    if let Some(d) = &a.diff {
        let (pa, pb) = (step_of(d[0])?, step_of(d[1])?);
        let pick = |p: &ProfileSample| if a.off_cpu { p.off_cpu.clone() } else { p.on_cpu.clone() };
        let what = if a.off_cpu { "off-CPU" } else { "on-CPU" };
        let (Some(x), Some(y)) = (pick(pa), pick(pb)) else {
            return Err(bad(format!("run {id}: one of the two steps has no {what} stacks")));
        };
        say!("{}", scalelab_report::profile::diff_text(&label(pa), &label(pb), what, &diff(&x, &y, a.top)));
        return Ok(ExitCode::SUCCESS);
    }
    let p = match a.step {
        Some(n) => step_of(n)?,
        None => run.samples.profile.iter().max_by_key(|p| p.step).expect("not empty"),
    };
    if a.folded {
        return folded(&run, p, a.off_cpu);
    }
    let title = format!("run {id} step {} ({})", p.step + 1, label(p));
    say!("{}", scalelab_report::profile::step_text(&title, p, a.off_cpu, a.top));
    Ok(ExitCode::SUCCESS)
}

/// A watch's profiles: its windows, one after the other. The whole watch
/// by default; `--step N` is the N-th window, `--diff A B` compares two.
fn watch(run: &scalelab_core::Run, a: &ProfileArgs) -> anyhow::Result<ExitCode> {
    let id = run.id;
    let windows = &run.samples.profile;
    let window = |n: u32| -> anyhow::Result<&ProfileSample> {
        windows.iter().find(|p| p.step + 1 == n as usize).ok_or_else(|| {
            let have: Vec<String> = windows.iter().map(|p| (p.step + 1).to_string()).collect();
            bad(format!("run {id} (a watch) has no profiled window {n}; --step takes one of: {}", have.join(", ")))
        })
    };
    let label = |p: &ProfileSample| format!("window {} (+{:.0} s)", p.step + 1, (p.unix_ms - run.started_unix_ms) as f64 / 1e3);
    if let Some(d) = &a.diff {
        let (pa, pb) = (window(d[0])?, window(d[1])?);
        let what = if a.off_cpu { "off-CPU" } else { "on-CPU" };
        let pick = |p: &ProfileSample| if a.off_cpu { p.off_cpu.clone() } else { p.on_cpu.clone() };
        let (Some(x), Some(y)) = (pick(pa), pick(pb)) else {
            return Err(bad(format!("run {id}: one of the two windows has no {what} stacks")));
        };
        say!("{}", scalelab_report::profile::diff_text(&label(pa), &label(pb), what, &diff(&x, &y, a.top)));
        return Ok(ExitCode::SUCCESS);
    }
    let (title, p) = match a.step {
        Some(n) => {
            let p = window(n)?;
            (format!("run {id} (watch) {}", label(p)), p.clone())
        }
        None => {
            let whole = ProfileSample::merged(windows).expect("not empty");
            (format!("run {id} (watch): the whole watch, {} window(s)", windows.len()), whole)
        }
    };
    if a.folded {
        return folded(run, &p, a.off_cpu);
    }
    say!("{}", scalelab_report::profile::step_text(&title, &p, a.off_cpu, a.top));
    Ok(ExitCode::SUCCESS)
}

/// `--folded`: one side of a profile as folded stacks on stdout.
fn folded(run: &scalelab_core::Run, p: &ProfileSample, off_cpu: bool) -> anyhow::Result<ExitCode> {
    let (side, what, source) =
        if off_cpu { (&p.off_cpu, "off-CPU", Source::ProfileOffCpu) } else { (&p.on_cpu, "on-CPU", Source::Profile) };
    let Some(side) = side else {
        let why = unavailable(run, source);
        return Err(bad(format!("run {}: that step has no {what} stacks{why}", run.id)));
    };
    print!("{}", scalelab_report::profile::folded(side));
    Ok(ExitCode::SUCCESS)
}

/// Why the run recorded `source` as unavailable, as `: REASON` to append to
/// an error, or nothing when it gave no reason.
fn unavailable(run: &scalelab_core::Run, source: Source) -> String {
    run.notes.iter().find(|(s, _)| s == source.name()).map(|(_, w)| format!(": {w}")).unwrap_or_default()
}
