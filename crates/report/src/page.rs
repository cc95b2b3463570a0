//! Pieces both report formats compute the same way: the comparison table of
//! the runs (as `compare` makes it, every run against the first) and the
//! per-step result rows.

use crate::model::ReportRun;
use crate::table::HEADER;
use scalelab_analyze::{compare, CompareOptions, Comparison, Series};

/// The comparison table of the report's runs: throughput, scaling, and with
/// more than one run a delta column of each against the first (the baseline).
/// The two arms of a `--versus` sweep pair window by window; runs measured
/// on unalike machines carry the differences as warnings.
pub fn comparison(runs: &[ReportRun]) -> Result<Comparison, String> {
    let series: Vec<Series> = runs.iter().map(|r| Series::of_run(r.name.clone(), &r.run)).collect();
    let baseline = (runs.len() > 1).then(|| runs[0].name.clone());
    let labelled: Vec<(&str, &scalelab_core::Run)> = runs.iter().map(|r| (r.name.as_str(), &r.run)).collect();
    let options = CompareOptions { baseline, paired: scalelab_analyze::compare::versus_arms(&labelled), ..Default::default() };
    let mut c = compare(&series, &options).map_err(|e| e.to_string())?;
    c.warnings = scalelab_analyze::compare::environment_differences(&labelled);
    Ok(c)
}

/// The run table's rows (header first), as `show` prints them, without
/// AVG/MAX: one row per level, throughput with its interval, and `n` and
/// `cv` after it when a level was measured more than once.
pub fn step_rows(r: &ReportRun) -> Vec<Vec<String>> {
    let entries = crate::levels::entries(&r.run);
    let first = entries.first().map(crate::levels::Entry::throughput);
    let repeated = crate::levels::repeated(&entries);
    let mut header: Vec<String> = HEADER.iter().map(|s| s.to_string()).collect();
    if repeated {
        header.splice(2..2, ["n".to_string(), "cv".to_string()]);
    }
    let mut rows = vec![header];
    for e in &entries {
        let mut row = crate::levels::level_row(e, first);
        if repeated {
            row.splice(2..2, crate::levels::repeat_cells(e));
        }
        rows.push(row);
    }
    rows
}

/// Per-step telemetry rows (header first); `None` when the run has none.
/// Missing figures read "unavailable", never 0.
pub fn telemetry_rows(r: &ReportRun) -> Option<Vec<Vec<String>>> {
    if r.run.steps.iter().all(|s| s.telemetry.is_none()) {
        return None;
    }
    let u = "unavailable";
    let p = |x: Option<f64>| x.map_or(u.to_string(), |v| format!("{v:.0}%"));
    let n = |x: Option<f64>| x.map_or(u.to_string(), crate::fmt::thousands);
    let f = |x: Option<f64>| x.map_or(u.to_string(), |v| if v < 10.0 { format!("{v:.2}") } else { format!("{v:.0}") });
    let mut rows = vec![[
        "concurrency",
        "CPU busy",
        "user",
        "system",
        "iowait",
        "cs/s",
        "server CPU",
        "server threads",
        "server RSS",
        "cs/request",
        "futex-blocked",
        "hottest thread",
        "client CPU",
    ]
    .map(String::from)
    .to_vec()];
    for s in &r.run.steps {
        let Some(t) = &s.telemetry else { continue };
        rows.push(vec![
            s.concurrency.to_string(),
            p(t.cpu_busy_pct),
            p(t.cpu_user_pct),
            p(t.cpu_sys_pct),
            p(t.cpu_iowait_pct),
            n(t.cs_per_s),
            p(t.server_cpu_pct),
            t.server_threads.map_or(u.into(), |v| v.to_string()),
            t.server_rss_mb.map_or(u.into(), |v| format!("{v:.0} MB")),
            f(t.cs_per_request),
            p(t.thread_states_pct.map(|x| x.futex)),
            t.hottest_threads.first().map_or(u.into(), |h| format!("{} {:.0}%", h.name, h.cpu_pct)),
            p(s.client_cpu_pct()),
        ]);
    }
    Some(rows)
}

/// What the report's telemetry columns mean (its names, not the terminal's):
/// the three CPU bases and the less obvious columns, in one line.
pub fn telemetry_legend(r: &ReportRun) -> String {
    let cores = r.run.environment.logical_cores.map_or_else(|| "the machine's".to_string(), |c| c.to_string());
    format!(
        "CPU busy, user, system, iowait: % of all {cores} cores; server CPU, hottest thread: % of one core (200% = two cores busy); \
         client CPU: % of the cores the load generator's threads had in the step (over 90%: the client may be the bottleneck); \
         cs/s: context switches per second, machine-wide; cs/request: the server's per request; \
         futex-blocked: share of the server's thread-time asleep on a futex (locks)"
    )
}

/// Why figures are missing in a run's telemetry: "figure: reason" lines, once each.
pub fn unavailable_lines(r: &ReportRun) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let from_steps = r.run.steps.iter().filter_map(|s| s.telemetry.as_ref()).flat_map(|t| t.unavailable.iter());
    let from_timeline = r.timeline.iter().flat_map(|t| t.unavailable.iter());
    for (k, why) in from_steps.chain(from_timeline) {
        let line = if k == "power" { "power: not available on this machine".to_string() } else { format!("{k}: {why}") };
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}
