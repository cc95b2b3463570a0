//! The self-contained HTML report: one file, styles and the hover script
//! inlined (`assets/`), charts as inline SVG, nothing fetched from the
//! network, printable. Sections follow `docs/report.md`.

use crate::charts::{self, Chart};
use crate::compare::fmt_throughput_text;
use crate::model::{ReportInput, ReportRun};
use crate::page::{comparison, step_rows, telemetry_rows, unavailable_lines};
use crate::summary::{environment_rows, side_by_side, verdict_title};
use crate::svg::esc;
use scalelab_analyze::compare::Cells;
use std::fmt::Write as _;

const CSS: &str = include_str!("assets/report.css");
const JS: &str = include_str!("assets/report.js");

fn table(out: &mut String, rows: &[Vec<String>], text_cols: &[usize]) {
    out.push_str(r#"<div class="wide"><table><thead><tr>"#);
    for h in rows.first().into_iter().flatten() {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>");
    for r in rows.iter().skip(1) {
        out.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            let class = if text_cols.contains(&i) || (text_cols.is_empty() && i > 0 && c.parse::<f64>().is_err()) {
                r#" class="text""#
            } else {
                ""
            };
            let cell = match c.as_str() {
                crate::columns::MISSING => r#"<span class="unavailable" title="not measured">-</span>"#.to_string(),
                "unavailable" => r#"<span class="unavailable">unavailable</span>"#.to_string(),
                _ => esc(c),
            };
            let _ = write!(out, "<td{class}>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
}

fn figure(out: &mut String, c: &Chart) {
    match &c.svg {
        Err(why) if c.omitted => {
            let _ = write!(out, r#"<p class="note chart-omitted" id="chart-{}">{}: {}</p>"#, esc(&c.id), esc(&c.title), esc(why));
        }
        Ok(svg) => {
            let _ = write!(out, r#"<figure id="chart-{}">{svg}</figure>"#, esc(&c.id));
        }
        Err(why) => {
            let _ = write!(
                out,
                r#"<figure class="chart-unavailable" id="chart-{}"><figcaption>{}</figcaption><p class="unavailable">{}</p></figure>"#,
                esc(&c.id),
                esc(&c.title),
                esc(why)
            );
        }
    }
}

fn comparison_html(out: &mut String, runs: &[ReportRun]) {
    let c = match comparison(runs) {
        Ok(c) => c,
        Err(e) => {
            let _ = write!(out, r#"<p class="unavailable">no comparison: {}</p>"#, esc(&e));
            return;
        }
    };
    out.push_str(r#"<div class="wide"><table><thead><tr><th>clients</th>"#);
    let unit = crate::model::common_unit(runs);
    for l in &c.labels {
        let _ = write!(out, "<th>{} ({})</th>", esc(l), esc(&unit));
    }
    for l in &c.labels {
        let _ = write!(out, "<th>{} scaling</th>", esc(l));
    }
    for d in &c.deltas {
        let _ = write!(out, "<th>{}</th>", esc(&d.name));
    }
    out.push_str("</tr></thead><tbody>");
    let row = |out: &mut String, first: &str, cells: &Cells, class: &str| {
        let _ = write!(out, "<tr{class}><td>{first}</td>");
        for (label, x) in &cells.throughput {
            let ci = cells.throughput_ci95.get(label).copied().flatten();
            let text = match (x, ci.zip(*x).and_then(|(c, x)| c.half_width_pct(x))) {
                (Some(x), Some(h)) => format!("{} ± {h:.1} %", fmt_throughput_text(*x)),
                (x, _) => x.map_or("-".into(), fmt_throughput_text),
            };
            let _ = write!(out, "<td>{}</td>", esc(&text));
        }
        for p in cells.scaling_pct.values() {
            let _ = write!(out, "<td>{}</td>", p.map_or("-".into(), |p| format!("{p}%")));
        }
        for (name, p) in &cells.delta_pct {
            // With an interval: the delta, its interval and what it supports.
            if let Some(d) = cells.delta.get(name).cloned().flatten().filter(|d| d.ci().is_some()) {
                let class = match d.verdict {
                    Some(scalelab_analyze::stats::Change::Faster) => r#" class="pos""#,
                    Some(scalelab_analyze::stats::Change::Slower) => r#" class="neg""#,
                    _ => "",
                };
                let (lo, hi) = (d.ci95_low_pct.unwrap_or_default(), d.ci95_high_pct.unwrap_or_default());
                let text = format!("{:+.1}% ({lo:+.1} to {hi:+.1}%) {}", d.delta_pct, d.words());
                let _ = write!(out, "<td{class}>{}</td>", esc(&text));
                continue;
            }
            match p {
                Some(p) if *p > 0 => {
                    let _ = write!(out, r#"<td class="pos">+{p}%</td>"#);
                }
                Some(p) if *p < 0 => {
                    let _ = write!(out, r#"<td class="neg">{p}%</td>"#);
                }
                Some(p) => {
                    let _ = write!(out, "<td>{p}%</td>");
                }
                None => out.push_str("<td>-</td>"),
            }
        }
        out.push_str("</tr>");
    };
    for r in &c.rows {
        row(out, &r.concurrency.to_string(), &r.cells, "");
    }
    row(out, "AVG", &c.avg, r#" class="agg""#);
    row(out, "MAX", &c.max, r#" class="agg""#);
    out.push_str("</tbody></table></div>");
    let _ = write!(out, r#"<p class="note">{}</p>"#, prose(&crate::compare::legend(&c).join("; ")));
    for n in crate::compare::note_lines(&c) {
        let _ = write!(out, r#"<p class="note">{}</p>"#, prose(&n));
    }
}

/// Prose for the page: escaped, and `command` spans (paired backticks, as
/// the terminal text writes them) set as code rather than shown literally.
fn prose(text: &str) -> String {
    let escaped = esc(text);
    let parts: Vec<&str> = escaped.split('`').collect();
    // An unpaired backtick is text: nothing is set as code then.
    if parts.len().is_multiple_of(2) {
        return escaped;
    }
    parts.iter().enumerate().map(|(i, p)| if i % 2 == 1 { format!("<code>{p}</code>") } else { (*p).to_string() }).collect()
}

fn verdicts_html(out: &mut String, r: &ReportRun) {
    let d = &r.diagnosis;
    if d.verdicts.is_empty() {
        out.push_str(
            r#"<p class="note">No verdict: no rule fired at and beyond the knee (or the telemetry to judge was not recorded).</p>"#,
        );
    }
    for v in &d.verdicts {
        let _ = write!(out, r#"<div class="verdict"><strong>{}</strong> — {}<ul>"#, esc(&verdict_title(v)), prose(&v.headline));
        for e in &v.evidence {
            let _ = write!(out, "<li>{}</li>", esc(&crate::summary::evidence_text(e)));
        }
        for m in &v.missing {
            let _ = write!(out, r#"<li class="unavailable">missing: {}</li>"#, prose(m));
        }
        let _ = write!(out, r#"</ul><div class="next">next: {}</div></div>"#, prose(&v.next));
    }
}

/// The whole report as one HTML document.
pub fn render(input: &ReportInput) -> String {
    let runs = &input.runs;
    let mut out = String::new();
    let names: Vec<String> = runs.iter().map(|r| r.name.clone()).collect();
    let all_names: Vec<&str> = names.iter().map(String::as_str).chain(input.micro_runs.iter().map(|m| m.1.as_str())).collect();
    let listed: Vec<String> = runs
        .iter()
        .map(|r| format!("{} {}: {}", if r.run.kind == scalelab_core::RunKind::Imported { "imported" } else { "run" }, r.run.id, r.name))
        .chain(input.micro_runs.iter().map(|(id, label)| format!("micro run {id}: {label}")))
        .collect();
    let _ = write!(
        out,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>scalelab report: {}</title><style>{CSS}</style></head><body><div id="tip"></div><h1>scalelab report</h1><p class="note runs">{} — generated by scalelab {}</p>"#,
        esc(&all_names.join(", ")),
        esc(&listed.join("; ")),
        scalelab_core::VERSION
    );
    out.push_str("<nav>");
    if !runs.is_empty() {
        let _ = write!(
            out,
            r##"<a href="#summary">Summary</a><a href="#throughput">Scaling</a><a href="#latency">Latency</a><a href="#timeline">Timeline</a><a href="#threads">Thread states</a><a href="#comparison">{}</a><a href="#verdicts">Verdicts</a><a href="#configuration">Configuration</a>"##,
            results_title(runs.len())
        );
    }
    if !input.micro.is_empty() {
        out.push_str(r##"<a href="#micro">Micro-benchmarks</a>"##);
    }
    let profiled = runs.iter().any(|r| !r.run.samples.profile.is_empty());
    if profiled {
        out.push_str(r##"<a href="#profiles">Flame graphs</a>"##);
    }
    out.push_str("</nav>");
    // Sections are numbered as they are written: a report without runs,
    // micro-benchmarks or profiles has no gap in its numbers.
    let mut section = 0;
    let mut next = || {
        section += 1;
        section
    };

    if !runs.is_empty() {
        let _ = write!(out, r#"<section id="summary"><h2>{}. Summary</h2>"#, next());
        let pairs: Vec<(&str, &scalelab_analyze::Diagnosis)> = runs.iter().map(|r| (r.name.as_str(), &r.diagnosis)).collect();
        table(&mut out, &side_by_side(&pairs, true), &(1..=runs.len()).collect::<Vec<_>>());
        out.push_str("</section>");

        // Scaling first: runs of any size compare on one axis (% of each
        // run's first step); absolute throughput follows.
        let _ = write!(out, r#"<section id="throughput"><h2>{}. Scaling and throughput vs concurrency</h2>"#, next());
        figure(&mut out, &charts::scaling(runs));
        figure(&mut out, &charts::throughput(runs));
        out.push_str("</section>");

        let open = runs.iter().any(|r| charts::rate::is_open_loop(&r.run));
        let heading = if open { "Latency vs concurrency or offered rate (open loop)" } else { "Latency vs concurrency" };
        let _ = write!(out, r#"<section id="latency"><h2>{}. {heading}</h2>"#, next());
        for r in runs {
            for c in charts::load_charts(r) {
                figure(&mut out, &c);
            }
        }
        out.push_str("</section>");

        let _ = write!(out, r#"<section id="timeline"><h2>{}. Per-second timeline</h2>"#, next());
        for r in runs {
            let _ = write!(out, "<h3>{}</h3>", esc(&r.name));
            let t = charts::timeline(r);
            if t.is_empty() {
                out.push_str(r#"<p class="unavailable">unavailable: no measured window (an imported series has no timeline)</p>"#);
            }
            for c in &t {
                figure(&mut out, c);
            }
        }
        out.push_str("</section>");

        let _ = write!(out, r#"<section id="threads"><h2>{}. Server thread states and telemetry per step</h2>"#, next());
        for r in runs {
            let _ = write!(out, "<h3>{}</h3>", esc(&r.name));
            match charts::thread_states(r) {
                Some(c) => figure(&mut out, &c),
                None => out.push_str(r#"<p class="unavailable">unavailable: no measured step</p>"#),
            }
            if let Some(c) = charts::db_waits(r) {
                figure(&mut out, &c);
            }
            if let Some(rows) = telemetry_rows(r) {
                // The database's words are text; every other column a figure.
                let text = [rows[0].iter().position(|h| h == "DB waits").unwrap_or(usize::MAX)];
                table(&mut out, &rows, &text);
                let _ = write!(out, r#"<p class="note">{}</p>"#, esc(&crate::page::telemetry_legend(r)));
            }
            let missing = unavailable_lines(r);
            if !missing.is_empty() {
                out.push_str(r#"<p class="note">Unavailable figures:</p><ul>"#);
                for m in missing {
                    let _ = write!(out, r#"<li class="unavailable">{}</li>"#, esc(&m));
                }
                out.push_str("</ul>");
            }
        }
        out.push_str("</section>");

        let _ = write!(out, r#"<section id="comparison"><h2>{}. {}</h2>"#, next(), results_title(runs.len()));
        comparison_html(&mut out, runs);
        for r in runs {
            let _ = write!(out, "<h3>Results per step — {}</h3>", esc(&r.name));
            let rows = step_rows(r);
            let errors_at = rows[0].len() - 1;
            table(&mut out, &rows, &[errors_at]);
            let notes = crate::table::run_notes(&r.run);
            if !notes.is_empty() {
                let _ = write!(out, r#"<p class="note">{}</p>"#, prose(notes.trim_end()).replace('\n', "<br>"));
            }
            if let Some(rows) = crate::table::connect_rows(&r.run) {
                let _ = write!(out, "<p>{}:</p>", esc(crate::table::CONNECT_TITLE));
                table(&mut out, &rows, &[]);
            }
            if let Some(rows) = crate::agents::agent_rows(&r.run.plan.options) {
                let _ = write!(out, r#"<p class="agents">{}:</p>"#, esc(crate::agents::TITLE));
                table(&mut out, &rows, &[1, 8]);
            }
        }
        out.push_str("</section>");

        let _ = write!(out, r#"<section id="verdicts"><h2>{}. Verdicts per step</h2>"#, next());
        for r in runs {
            let _ = write!(out, "<h3>{}</h3>", esc(&r.name));
            verdicts_html(&mut out, r);
        }
        out.push_str("</section>");

        let _ = write!(out, r#"<section id="configuration"><h2>{}"#, next());
        out.push_str(r#". Benchmark configuration</h2><p class="note">Rows whose recorded values differ between runs are highlighted (≠); "-" is not recorded (imported series carry no environment) and does not count as a difference.</p><div class="wide"><table><thead><tr><th></th>"#);
        for n in &names {
            let _ = write!(out, "<th>{}</th>", esc(n));
        }
        out.push_str("</tr></thead><tbody>");
        let run_refs: Vec<&scalelab_core::Run> = runs.iter().map(|r| &r.run).collect();
        for row in environment_rows(&run_refs) {
            let _ = write!(out, r#"<tr{}><td>{}</td>"#, if row.differs { r#" class="differs""# } else { "" }, esc(row.field));
            for v in &row.values {
                let _ = write!(out, r#"<td class="text">{}</td>"#, esc(v));
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table></div></section>");
    }

    if !input.micro.is_empty() {
        let _ = write!(out, r#"<section id="micro"><h2>{}. Micro-benchmarks</h2>"#, next());
        for t in &input.micro {
            let _ = write!(out, "<h3>{}</h3>", esc(&t.title));
            let mut rows = vec![t.columns.clone()];
            rows.extend(t.rows.iter().cloned());
            table(&mut out, &rows, &[]);
        }
        out.push_str("</section>");
    }
    if profiled {
        let _ = write!(out, r#"<section id="profiles"><h2>{}. Flame graphs (--profile)</h2>"#, next());
        out.push_str(r#"<p class="note">Width: share of the step's samples (on-CPU) or of its threads' sleep (off-CPU, ns); click a frame to zoom, Ctrl-F or Search to highlight a function. The differential graph shows the knee step's stacks coloured by change from the first step: red grew, blue shrank (docs/profiles.md).</p>"#);
        for r in runs {
            crate::flame::profiles_html(&mut out, r);
        }
        out.push_str("</section>");
    }
    let _ = writeln!(out, "<script>{JS}</script></body></html>");
    out
}

/// The title of the section with the step tables: "Comparison" when there
/// is something to compare, "Results" for one run.
fn results_title(runs: usize) -> &'static str {
    if runs > 1 {
        "Comparison"
    } else {
        "Results"
    }
}

#[cfg(test)]
mod tests {
    use super::prose;

    #[test]
    fn backticks_in_prose_are_code_and_markup_stays_escaped() {
        assert_eq!(prose("run `top -H -p PID` now"), "run <code>top -H -p PID</code> now");
        assert_eq!(prose("`<b>` & `x`"), "<code>&lt;b&gt;</code> &amp; <code>x</code>");
        // An unpaired backtick is left as it is.
        assert_eq!(prose("it's a ` alone"), "it&#39;s a ` alone".replace("&#39;", &super::esc("'")));
    }
}
