//! `scalelab profile RUN`: the stacks `--profile` stored per step; and the
//! one line that says what profiling cost a sweep.

use scalelab_probe::profile::Overhead;

/// What `--profile` cost: perf's CPU time over the windows (the server's
/// machine pays it), and the folding after the run.
pub fn overhead_line(o: &Overhead) -> String {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let share = if o.window_s > 0.0 { 100.0 * o.record_cpu_s / (o.window_s * cpus) } else { 0.0 };
    format!(
        "profile: perf record used {:.2} CPU-s over {} window(s) of {:.1} s ({share:.1} % of {cpus} CPUs); {:.1} MB folded in {:.1} s after the run",
        o.record_cpu_s,
        o.windows,
        o.window_s,
        o.bytes as f64 / 1e6,
        o.fold_s
    )
}
