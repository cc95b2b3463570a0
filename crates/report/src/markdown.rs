//! The report as Markdown (`report --format md`): the tables, verdicts and
//! configuration, to paste into an issue or a wiki; with `--svg DIR`, links
//! to the chart images. Deterministic for a given input (no timestamps), so
//! it is pinned by snapshot tests.

use crate::charts;
use crate::model::ReportInput;
use crate::page::{comparison, step_rows, telemetry_rows, unavailable_lines};
use crate::summary::{environment_rows, side_by_side, verdict_detail, verdict_title};
use std::fmt::Write as _;

/// User or server text in a table cell or a line: no HTML left active
/// ([`scalelab_core::escape_markup`]), no column break, one line, and no
/// control character a terminal would obey when the file is `cat`; `[`
/// and `]` escaped, so a label such as `![i](http://…)` renders neither a
/// remote image (fetched by whoever views the page) nor a link.
fn cell(s: &str) -> String {
    let one_line = scalelab_core::escape_markup(s).replace('|', "\\|").replace('[', "\\[").replace(']', "\\]").replace('\n', " ");
    scalelab_core::escape_control(&one_line).into_owned()
}

/// A GitHub-flavoured table; the first row is the header; columns after the
/// first are right-aligned (numbers).
pub fn md_table(rows: &[Vec<String>]) -> String {
    md_table_aligned(rows, true)
}

/// [`md_table`] with the columns after the first right-aligned or not (text).
pub fn md_table_aligned(rows: &[Vec<String>], right: bool) -> String {
    let Some(header) = rows.first() else { return String::new() };
    let line = |cells: &[String]| format!("| {} |\n", cells.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | "));
    let mut out = line(header);
    let align: Vec<&str> = (0..header.len()).map(|i| if i == 0 || !right { ":---" } else { "---:" }).collect();
    let _ = writeln!(out, "|{}|", align.join("|"));
    for r in &rows[1..] {
        out.push_str(&line(r));
    }
    out
}

/// The whole report as Markdown.
pub fn render(input: &ReportInput) -> String {
    let runs = &input.runs;
    let mut out = String::from("# scalelab report\n\n");
    for r in runs {
        let _ = writeln!(out, "- run {}: **{}** — {} — {}", r.run.id, cell(&r.name), cell(&r.run.plan.target), cell(&r.run.plan.workload));
    }
    for (id, label) in &input.micro_runs {
        let _ = writeln!(out, "- micro run {id}: **{}** — OS micro-benchmarks", cell(label));
    }
    if !runs.is_empty() {
        out.push_str("\n## Summary\n\n");
        let pairs: Vec<(&str, &scalelab_analyze::Diagnosis)> = runs.iter().map(|r| (r.name.as_str(), &r.diagnosis)).collect();
        out.push_str(&md_table_aligned(&side_by_side(&pairs, true), false));

        if let Some(img) = &input.images {
            out.push_str("\n## Charts\n\n");
            for c in charts::all(runs) {
                match &c.svg {
                    Ok(_) => {
                        let _ = writeln!(out, "![{}]({}/{}.{})\n", cell(&c.title), img.dir.trim_end_matches('/'), c.id, img.ext);
                    }
                    Err(why) => {
                        let _ = writeln!(out, "*{}: {}*\n", cell(&c.title), cell(why));
                    }
                }
            }
        }

        out.push_str(if runs.len() > 1 { "\n## Comparison\n\n" } else { "\n## Results\n\n" });
        match comparison(runs) {
            Ok(c) => out.push_str(&crate::compare::to_markdown(&c)),
            Err(e) => {
                let _ = writeln!(out, "no comparison: {e}");
            }
        }
        for r in runs {
            let _ = writeln!(out, "\n### Results per step — {}\n", cell(&r.name));
            out.push_str(&md_table(&step_rows(r)));
            for line in crate::table::run_notes(&r.run).lines() {
                let _ = writeln!(out, "\n{}", cell(line));
            }
            if let Some(rows) = crate::table::connect_rows(&r.run) {
                let _ = writeln!(out, "\n{}:\n", crate::table::CONNECT_TITLE);
                out.push_str(&md_table(&rows));
            }
            if let Some(rows) = crate::agents::agent_rows(&r.run.plan.options) {
                let _ = writeln!(out, "\n{}:\n", crate::agents::TITLE);
                out.push_str(&md_table(&rows));
            }
            if let Some(rows) = telemetry_rows(r) {
                out.push_str("\nTelemetry per step (window averages):\n\n");
                out.push_str(&md_table(&rows));
                out.push('\n');
                out.push_str(&cell(&crate::page::telemetry_legend(r)));
                out.push('\n');
            }
            let missing = unavailable_lines(r);
            if !missing.is_empty() {
                out.push_str("\nUnavailable figures:\n\n");
                for m in missing {
                    let _ = writeln!(out, "- {}", cell(&m));
                }
            }
        }

        out.push_str("\n## Verdicts\n");
        for r in runs {
            let _ = writeln!(out, "\n### {}\n", cell(&r.name));
            if r.diagnosis.verdicts.is_empty() {
                out.push_str("No verdict: no rule fired at and beyond the knee (or the telemetry to judge was not recorded).\n");
            }
            for v in &r.diagnosis.verdicts {
                let _ = writeln!(out, "- **{}** — {}", verdict_title(v), cell(&verdict_detail(v)));
                if !v.missing.is_empty() {
                    let _ = writeln!(out, "  - missing: {}", cell(&v.missing.join("; ")));
                }
                let _ = writeln!(out, "  - next: {}", cell(&v.next));
            }
        }

        out.push_str("\n## Benchmark configuration\n\n");
        let run_refs: Vec<&scalelab_core::Run> = runs.iter().map(|r| &r.run).collect();
        let mut rows = vec![std::iter::once(String::new()).chain(runs.iter().map(|r| r.name.clone())).collect::<Vec<_>>()];
        for row in environment_rows(&run_refs) {
            let field = if row.differs { format!("**{}** ≠", row.field) } else { row.field.to_string() };
            rows.push(std::iter::once(field).chain(row.values).collect());
        }
        out.push_str(&md_table_aligned(&rows, false));
        out.push_str("\n≠: the recorded values differ between runs (\"-\": not recorded, not counted as a difference).\n");
    }
    if !input.micro.is_empty() {
        out.push_str("\n## Micro-benchmarks\n");
        for t in &input.micro {
            let _ = writeln!(out, "\n### {}\n", cell(&t.title));
            let mut rows = vec![t.columns.clone()];
            rows.extend(t.rows.iter().cloned());
            out.push_str(&md_table(&rows));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    /// Issue 39 item 19: a label cannot render a remote image (or a link)
    /// where the Markdown is shown, nor carry control bytes.
    #[test]
    fn a_cell_renders_no_image_link_or_control_byte() {
        let c = super::cell("![i](http://evil.test/x.png) [a](http://b) \x1b]52;c;ZXZpbA==\x07 \u{9b}31m \u{202e}");
        assert!(!c.contains("![") && !c.replace("\\]", "").contains(']'), "every bracket escaped: {c}");
        assert!(!c.chars().any(|ch| ch.is_control() || ch == '\u{202e}'), "{c:?}");
    }
}
