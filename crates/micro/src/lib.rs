//! lmbench-class OS micro-benchmarks: the low-level costs (syscall, fork,
//! signals, context switch, local IPC latency and bandwidth, memory latency,
//! FPU) that explain why a server collapses on one OS and not another.
//!
//! Module map:
//! - [`model`]: the values handed out: [`Group`], [`Unit`], [`MicroResult`],
//!   [`MicroRun`], [`LabelledRun`], [`SuiteOptions`], [`MicroError`].
//! - [`document`]: [`MicroReport`], the `--json` document (and what the
//!   store keeps), its environment a `scalelab_core::Environment`.
//! - [`anomalies`]: figures that contradict the memory hierarchy or each other.
//! - [`catalog`]: every figure's stable id, group, name and unit, in display order.
//! - `measure`: the method (calibrate to a few ms, repeat, median/min/max/cv);
//!   `skip`: what a measurement ends in without samples (skipped, stopped).
//! - [`helper`]: process creation measured from a small helper process
//!   (this executable re-started in a tiny mode), not from scalelab itself.
//! - `sys`: guarded OS wrappers: forked children reaped on drop, CPU pinning
//!   undone on drop, temp files, huge-page memory regions, cache sizes.
//! - `bench`: the benchmarks, one module per group (procs, signals, threads,
//!   locks, ctx, latency, bandwidth, memlat, fpu).
//!
//! Published tables and comparisons are read and computed in
//! `scalelab_analyze::micro`; the tables are drawn by `scalelab_report::micro`.
//! Nothing here prints; [`run_suite`] reports progress through a callback.

pub mod anomalies;
pub mod catalog;
pub mod document;
pub mod helper;
pub mod model;

mod bench;
mod measure;
mod skip;
mod sys;

pub use anomalies::Anomaly;
pub use document::MicroReport;
pub use measure::{fmt_num, WIDE_CV};
pub use model::{Group, LabelledRun, MicroError, MicroResult, MicroRun, SuiteOptions, Unit};

/// The JSON schema of the `--json` document ([`MicroReport`]).
pub const JSON_SCHEMA: &str = include_str!("../micro.schema.json");

use std::time::Instant;

/// Runs the suite (all groups, or `opts.only`), calling `progress` with each
/// figure as it completes. Returns when done or, promptly, when `opts.stop`
/// is set: then `stopped` is true and `results` holds what was finished.
/// Every child process and thread a benchmark creates is reaped before it
/// returns, on success, error or stop.
pub fn run_suite(opts: &SuiteOptions, progress: &mut dyn FnMut(&MicroResult)) -> Result<MicroRun, MicroError> {
    let repeats = opts.repeats.unwrap_or(if opts.quick { 3 } else { 11 });
    if repeats == 0 {
        return Err(MicroError::BadRepeats(repeats));
    }
    let start = Instant::now();
    let busy = busy_warning(std::path::Path::new("/proc"));
    let machine = sys::Machine::detect();
    let ctx = measure::Ctx::new(opts.quick, repeats, &machine, &opts.stop);
    let mut groups: Vec<Group> = opts.only.clone().unwrap_or_else(|| Group::ALL.to_vec());
    groups.sort();
    groups.dedup();

    let mut out = measure::Out::new(progress);
    let mut stopped = false;
    for g in &groups {
        if ctx.stopped() || bench::run_group(*g, &ctx, &mut out).is_err() {
            stopped = true;
            break;
        }
    }
    let results = std::mem::take(&mut out.results);
    let mut warnings: Vec<String> = busy.into_iter().collect();
    warnings.extend(run_warnings(&machine, &groups));
    if stopped {
        warnings.push(format!("stopped before the suite finished: {} figures kept", results.len()));
    }
    Ok(MicroRun { results, wall_s: start.elapsed().as_secs_f64(), warnings, stopped })
}

/// A warning when other work competes for the CPUs as the suite starts
/// (1-minute load average at least half the CPU count, or tasks waiting for
/// a CPU more than 10 % of the time per /proc/pressure/cpu): every figure
/// then includes time spent waiting to run.
fn busy_warning(proc_root: &std::path::Path) -> Option<String> {
    // SAFETY: sysconf takes a plain integer and has no other precondition.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as f64;
    let load = std::fs::read_to_string(proc_root.join("loadavg")).ok().and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok());
    let pressure = std::fs::read_to_string(proc_root.join("pressure/cpu")).ok().and_then(|s| {
        let some = s.lines().find(|l| l.starts_with("some"))?;
        let avg = some.split_whitespace().find_map(|w| w.strip_prefix("avg10="))?;
        avg.parse::<f64>().ok()
    });
    let loaded = load.is_some_and(|l| l >= cpus * 0.5);
    let pressured = pressure.is_some_and(|p| p > 10.0);
    if !(loaded || pressured) {
        return None;
    }
    let mut what = Vec::new();
    if let Some(l) = load {
        what.push(format!("load average {l:.2} on {cpus} CPUs"));
    }
    if let Some(p) = pressure {
        what.push(format!("tasks waiting for a CPU {p:.0} % of the time"));
    }
    Some(format!(
        "machine busy when the suite started ({}): figures include time spent waiting to run; \
         rerun on a quiet machine for reference figures",
        what.join(", ")
    ))
}

/// Run-level caveats a reader needs to interpret the figures.
fn run_warnings(m: &sys::Machine, groups: &[Group]) -> Vec<String> {
    let mut w = Vec::new();
    if m.hypervisor && groups.contains(&Group::Latency) {
        w.push(
            "virtual machine: the free-CPU latencies include waking an idle vCPU; \
             compare them with the _same_cpu figures"
                .to_string(),
        );
    }
    if m.cpus < 8 && groups.contains(&Group::Threads) {
        w.push(format!(
            "{} CPUs: lock tests with more threads than CPUs are oversubscribed \
             (spinners burn slices while the holder waits to run)",
            m.cpus
        ));
    }
    w
}
