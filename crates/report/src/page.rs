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

/// Per-step telemetry rows (header first), the columns of
/// [`crate::columns`] as the terminal's table has them; `None` when the run
/// has none. Missing figures read [`crate::columns::MISSING`], never 0.
pub fn telemetry_rows(r: &ReportRun) -> Option<Vec<Vec<String>>> {
    crate::columns::step_rows(&r.run.steps)
}

/// What the telemetry columns mean (the three CPU bases and the less
/// obvious columns), as the terminal's legend says it, in one paragraph.
pub fn telemetry_legend(r: &ReportRun) -> String {
    crate::columns::legend(r.run.environment.logical_cores, crate::columns::Source::Step).join("; ")
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
