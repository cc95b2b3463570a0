//! The command line's own text: the `runs` listing, `show`'s and
//! `diagnose`'s pages, `--assert` results. The binary loads the values and
//! prints these strings; nothing here reads the store or the terminal (the
//! width is passed in, `None` for no wrapping).

use crate::fmt::{columns_fit_with, thousands, wrap};
use scalelab_analyze::{Diagnosis, Outcome};
use scalelab_core::{escape_control as line, Run, RunSummary};

/// The `scalelab runs` table, fitted to `width`.
pub fn runs_table(runs: &[RunSummary], width: Option<usize>) -> String {
    let mut rows = vec![["id", "kind", "label", "target", "started (UTC)", "steps", "peak/s", "status"].map(String::from).to_vec()];
    for r in runs {
        let status = match (&r.outcome, r.complete) {
            (_, true) => "complete".to_string(),
            (Some(o), false) => format!("incomplete: {o}"),
            (None, false) => "incomplete".to_string(),
        };
        rows.push(vec![
            r.id.to_string(),
            r.kind.clone(),
            r.label.clone(),
            r.target.clone(),
            utc(r.started_unix_ms),
            r.steps.to_string(),
            r.peak_throughput_per_s.map_or("-".into(), thousands),
            status,
        ]);
    }
    // Kind, label, target and status are words, read from their start;
    // the figures stay right-aligned.
    columns_fit_with(&rows, &[1, 2, 3, 7], width)
}

/// `show` of a run: its header (label, workload, status, target, client
/// threads, start), the run table, the telemetry table when there is one,
/// and the diagnosis, each fitted to `width`.
pub fn show_text(run: &Run, width: Option<usize>) -> String {
    let status = if run.complete {
        "complete".to_string()
    } else {
        format!("incomplete ({})", run.outcome.as_deref().unwrap_or("killed or still running"))
    };
    let client_net = run.plan.client_net().map(|n| format!(", client network {}", line(n))).unwrap_or_default();
    let head = format!(
        "run {}: {} — {} — {}\ntarget {}, client threads {}{client_net}, started {}\n",
        run.id,
        line(&run.plan.label),
        line(&run.plan.workload),
        status,
        line(&run.plan.target),
        run.plan.client_threads_text(),
        utc(run.started_unix_ms)
    );
    let mut out = wrap(&head, width);
    out.push_str(&crate::table::run_table_width(run, width));
    if let Some(t) = crate::table::telemetry_table_width(run, width) {
        out.push_str(&t);
    }
    if let Some(t) = crate::agents::agents_table(&run.plan.options) {
        out.push_str(&t);
    }
    out.push_str(&wrap(&diagnosis_text(run), width));
    out
}

/// The diagnosis printed under a run's tables: curve, USL fit, verdicts with
/// their evidence and what to look at next.
pub fn diagnosis_text(run: &Run) -> String {
    crate::diagnosis::render_text(&scalelab_analyze::diagnose(run), &run.plan.label)
}

/// `scalelab diagnose` of a run: `run ID: LABEL`, then its diagnosis `d`
/// fitted to `width`.
pub fn diagnose_text(run: &Run, d: &Diagnosis, width: Option<usize>) -> String {
    let label = line(&run.plan.label);
    // The header names the run; the diagnosis's own first line is its label again.
    let text = crate::diagnosis::render_text(d, &label);
    let body = text.split_once('\n').map_or("", |(_, body)| body);
    format!("run {}: {label}\n{}", run.id, wrap(body, width))
}

/// One checked `--assert`: `PASS  TEXT  (measured VALUE; DETAIL)` (or FAIL).
pub fn assertion_line(o: &Outcome) -> String {
    let measured = o.measured.map_or("no data".to_string(), |m| format!("{m:.4}").trim_end_matches('0').trim_end_matches('.').to_string());
    format!("{}  {}  (measured {measured}; {})", if o.passed { "PASS" } else { "FAIL" }, o.assertion, o.detail)
}

/// An `--assert` that cannot be checked because the run has no curve.
pub fn assertion_no_data(text: &str, why: &dyn std::fmt::Display) -> String {
    format!("FAIL  {text}  (no data: {why})")
}

/// `2026-11-22 01:02:03` from Unix milliseconds (UTC, no time-zone database needed).
pub fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let tod = secs.rem_euclid(86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}", tod / 3600, tod % 3600 / 60, tod % 60)
}

/// The progress line of a running step (`--no-tui`, not a terminal):
/// step, clients, phase, elapsed time, throughput, p99, errors.
pub fn tick_line(index: usize, steps: usize, level: &str, t: &scalelab_core::LiveTick) -> String {
    let p99 = t.p99_ms.map_or("-".to_string(), |v| format!("{v:.2} ms"));
    let phase = if t.warming_up { "warm-up" } else { "window" };
    format!(
        // `now`: the last second's rate; the step's own figure (its whole
        // window) is on the `done` line and in the tables.
        "step {}/{} {level} {} {:.1}s  now {}/s  p99 {}  errors {}",
        index + 1,
        steps,
        phase,
        t.elapsed_s,
        crate::fmt::thousands(t.throughput_per_s),
        p99,
        crate::fmt::thousands(t.errors as f64)
    )
}

pub use crate::fmt::{level_short, level_words};

/// The line that stays for a finished step (`done` steps finished before
/// it): its throughput in `unit`, p99, errors, and whether it was cut short
/// or the client saturated.
pub fn step_done_line(done: usize, steps: usize, r: &scalelab_core::StepResult, unit: &str) -> String {
    let p99 = r.latency.summary().map_or("-".to_string(), |s| format!("{:.2} ms", s.p99));
    let level = level_short(r.offered_rate_per_s, r.concurrency);
    let mut line = format!(
        "step {}/{} {level} done: {} {unit}  p99 {p99}  errors {}",
        done + 1,
        steps,
        crate::fmt::thousands(r.throughput_per_s()),
        crate::fmt::thousands(r.errors.total() as f64)
    );
    if r.partial {
        line.push_str("  (partial)");
    }
    if r.client_saturated() {
        line.push_str("  client saturated");
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_header_over_its_cells() {
        let r = RunSummary {
            id: 12,
            kind: "sweep".into(),
            label: "nginx 1.22".into(),
            target: "http://127.0.0.1:8080/".into(),
            started_unix_ms: 0,
            complete: true,
            outcome: None,
            steps: 7,
            peak_throughput_per_s: Some(15_308.5),
        };
        let text = runs_table(&[r], None);
        let lines: Vec<&str> = text.lines().collect();
        // Words start under their header; figures end under theirs.
        for (head, cell) in [("kind", "sweep"), ("label", "nginx 1.22"), ("target", "http://"), ("status", "complete")] {
            assert_eq!(lines[0].find(head), lines[1].find(cell), "{head}:\n{text}");
        }
        for (head, cell) in [("steps", "7"), ("peak/s", "15,309")] {
            let end = |l: &str, w: &str| l.find(w).map(|i| i + w.len());
            assert_eq!(end(lines[0], head), end(lines[1], &format!(" {cell}")), "{head}:\n{text}");
        }
    }

    #[test]
    fn utc_of_known_instants() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00");
        assert_eq!(utc(1_795_309_323_000), "2026-11-22 01:02:03");
        assert_eq!(utc(-1000), "1969-12-31 23:59:59");
    }

    #[test]
    fn assertion_lines() {
        let o = Outcome { assertion: "peak >= 5000".into(), passed: true, measured: Some(5210.5), detail: "5210.5/s at 8 clients".into() };
        assert_eq!(assertion_line(&o), "PASS  peak >= 5000  (measured 5210.5; 5210.5/s at 8 clients)");
        let o = Outcome { passed: false, measured: None, ..o };
        assert_eq!(assertion_line(&o), "FAIL  peak >= 5000  (measured no data; 5210.5/s at 8 clients)");
        assert_eq!(assertion_no_data("no collapse", &"no step"), "FAIL  no collapse  (no data: no step)");
    }
}
