//! Renderings of a [`Comparison`]: a plain-text table for the terminal,
//! Markdown for reports and issues, CSV for spreadsheets. Missing cells are
//! `-` (text, Markdown) or empty (CSV), never 0. The data is
//! [`scalelab_analyze::compare`]; this module only draws it.
//!
//! Column order everywhere: concurrency, each run's throughput, each run's
//! scaling, then the delta columns; the AVG and MAX rows come last. Where
//! the figures have intervals, a throughput reads `12,345 ± 1.8 %` and a
//! delta column carries its 95 % interval and verdict beside it (CSV: extra
//! columns after the published ones, so old readers keep their columns).

use scalelab_analyze::compare::{Cells, Comparison};

/// Throughput as tables show it: whole numbers stay whole, others keep
/// enough decimals to be read (AVG of whole numbers is often not whole).
pub fn fmt_throughput(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{x:.0}")
    } else {
        // Round half away from zero (as percentages are), then print.
        let decimals = if x.abs() >= 100.0 {
            1
        } else if x.abs() >= 1.0 {
            2
        } else {
            3
        };
        let scale = 10f64.powi(decimals);
        format!("{:.*}", decimals as usize, (x * scale).round() / scale)
    }
}

/// Throughput for the terminal and the page, as `show` prints it: whole,
/// with thousands separators (60,006; 777, where this once printed 776.7
/// below a thousand and `show` 777).
pub fn fmt_throughput_text(x: f64) -> String {
    crate::fmt::thousands(x)
}

fn fmt_scaling(p: Option<i64>) -> String {
    p.map_or_else(|| "-".to_string(), |p| format!("{p}%"))
}

fn fmt_delta(p: Option<i64>) -> String {
    p.map_or_else(
        || "-".to_string(),
        |p| {
            if p > 0 {
                format!("+{p}%")
            } else {
                format!("{p}%")
            }
        },
    )
}

/// A delta with one decimal and its sign: `+6.1%`.
fn fmt_delta_f(p: f64) -> String {
    format!("{p:+.1}%")
}

/// True when some cell of the delta column `name` has an interval: the
/// column then shows the interval and the verdict beside the delta.
fn column_has_interval(c: &Comparison, name: &str) -> bool {
    c.rows
        .iter()
        .map(|r| &r.cells)
        .chain([&c.avg, &c.max])
        .any(|cells| cells.delta.get(name).cloned().flatten().is_some_and(|d| d.ci().is_some()))
}

/// True when some throughput of the table has an interval.
fn any_throughput_interval(c: &Comparison) -> bool {
    c.rows.iter().map(|r| &r.cells).chain([&c.avg, &c.max]).any(|cells| cells.throughput_ci95.values().any(Option::is_some))
}

/// The header and body cells shared by the text and Markdown tables;
/// `throughput` formats the throughput cells. A throughput with an interval
/// reads `12,345 ± 1.8 %`; a delta column with intervals is three columns:
/// the delta, its 95 % interval, and what it supports (`faster`, `slower`,
/// `no detectable difference (±x %)`, or `no interval`).
fn grid(c: &Comparison, throughput: fn(f64) -> String) -> (Vec<String>, Vec<Vec<String>>) {
    let with_ci: Vec<bool> = c.deltas.iter().map(|d| column_has_interval(c, &d.name)).collect();
    let mut header = vec!["clients".to_string()];
    header.extend(c.labels.iter().cloned());
    header.extend(c.labels.iter().map(|l| format!("{l} scaling")));
    for (d, ci) in c.deltas.iter().zip(&with_ci) {
        header.push(d.name.clone());
        if *ci {
            header.push("95% interval".to_string());
            header.push("verdict".to_string());
        }
    }
    let line = |first: String, cells: &Cells| {
        let mut out = vec![first];
        out.extend(cells.throughput.iter().map(|(label, x)| match x {
            None => "-".to_string(),
            Some(x) => match cells.throughput_ci95.get(label).copied().flatten().and_then(|ci| ci.half_width_pct(*x)) {
                Some(h) => format!("{} ± {h:.1} %", throughput(*x)),
                None => throughput(*x),
            },
        }));
        out.extend(cells.scaling_pct.values().map(|p| fmt_scaling(*p)));
        for (d, ci) in c.deltas.iter().zip(&with_ci) {
            let whole = cells.delta_pct.get(&d.name).copied().flatten();
            let delta = cells.delta.get(&d.name).cloned().flatten();
            if !*ci {
                out.push(fmt_delta(whole));
                continue;
            }
            match delta {
                None => out.extend(["-".to_string(), String::new(), String::new()]),
                Some(delta) => {
                    out.push(fmt_delta_f(delta.delta_pct));
                    out.push(match (delta.ci95_low_pct, delta.ci95_high_pct) {
                        (Some(lo), Some(hi)) => format!("{lo:+.1} to {hi:+.1}%"),
                        _ => "-".to_string(),
                    });
                    out.push(delta.words());
                }
            }
        }
        out
    };
    let mut body: Vec<Vec<String>> = c.rows.iter().map(|r| line(r.concurrency.to_string(), &r.cells)).collect();
    body.push(line("AVG".to_string(), &c.avg));
    body.push(line("MAX".to_string(), &c.max));
    (header, body)
}

/// What the derived columns mean, one line each, printed under the table.
pub fn legend(c: &Comparison) -> Vec<String> {
    let avg = match c.avg_from {
        Some(n) => format!("mean of the steps with concurrency >= {n}"),
        None => "mean of all steps".to_string(),
    };
    let mut lines = vec!["scaling: throughput / the run's first step (first step = 100%)".to_string()];
    // One convention everywhere (compare, report, --assert): X vs Y is X
    // against Y, the baseline; with two runs, the first named.
    match c.deltas.as_slice() {
        [] => {}
        [d] => lines.push(format!("{} vs {}: 100 x ({}/{} - 1), {} the baseline", d.a, d.b, d.a, d.b, d.b)),
        _ => lines.push("X vs Y: 100 x (X/Y - 1), Y the baseline".to_string()),
    }
    lines.push(format!("AVG: {avg}; MAX: highest step; their scaling and deltas are computed from the AVG and MAX throughputs"));
    lines.push("-: no data (or an AVG delta over different steps)".to_string());
    if any_throughput_interval(c) {
        lines.push(
            "±: the throughput's 95 % interval; AVG's propagates the levels' standard errors (Student t at the fewest degrees of freedom), MAX's is the peak level's"
                .to_string(),
        );
    }
    if c.deltas.iter().any(|d| column_has_interval(c, &d.name)) {
        lines.push(
            "95% interval: of the delta; faster or slower: the interval excludes 0; no detectable difference (±x %): it contains 0 \
             (x: its half-width); no interval: the delta is bare, never judged"
                .to_string(),
        );
    } else if let Some(why) = c.rows.iter().flat_map(|r| r.cells.delta.values()).flatten().find_map(|d| d.no_interval.clone()) {
        lines.push(format!("no interval ({}): the deltas are bare, never judged", why.trim_end_matches(": no interval")));
    }
    lines
}

/// How the deltas' intervals were estimated ([`Comparison::notes`]), then
/// the warnings (runs measured unalike), `warning: ` each.
pub fn note_lines(c: &Comparison) -> Vec<String> {
    let notes = c.notes.iter().map(|n| scalelab_core::escape_control(n).into_owned());
    notes.chain(c.warnings.iter().map(|w| format!("warning: {}", scalelab_core::escape_control(w)))).collect()
}

/// A plain-text table aligned with spaces, followed by its [`legend`].
pub fn to_text(c: &Comparison) -> String {
    to_text_width(c, None)
}

/// [`to_text`] no wider than `width` columns: a table too wide is split
/// into blocks of whole columns, each led by the clients column (as `show`
/// does), and the legend is wrapped.
pub fn to_text_width(c: &Comparison, width: Option<usize>) -> String {
    let (header, body) = grid(c, fmt_throughput_text);
    let rows: Vec<Vec<String>> = std::iter::once(header).chain(body).collect();
    let mut out = crate::fmt::columns_fit(&rows, width);
    for line in legend(c).into_iter().chain(note_lines(c)) {
        out.push_str(&crate::fmt::wrap(&line, width));
        out.push('\n');
    }
    out
}

/// A label in a Markdown cell: no HTML left active, no column break, no
/// control character, no image or link (`[` and `]` escaped: a label
/// `![i](http://…)` would make every viewer fetch a remote image).
fn md_escape(cell: &str) -> String {
    let text = scalelab_core::escape_markup(cell).replace('|', "\\|").replace('[', "\\[").replace(']', "\\]");
    scalelab_core::escape_control(&text).into_owned()
}

/// A GitHub-flavoured Markdown table (numbers right-aligned), followed by its [`legend`].
pub fn to_markdown(c: &Comparison) -> String {
    // Formatted as the terminal's table (60,006), as a reader compares them.
    let (header, body) = grid(c, fmt_throughput_text);
    let row = |cells: &[String]| format!("| {} |\n", cells.iter().map(|s| md_escape(s)).collect::<Vec<_>>().join(" | "));
    let mut out = row(&header);
    let align: Vec<String> = (0..header.len()).map(|i| if i == 0 { ":---".into() } else { "---:".into() }).collect();
    out.push_str(&format!("|{}|\n", align.join("|")));
    let aggregates_from = body.len() - 2; // the AVG and MAX rows, set in bold
    for (i, cells) in body.iter().enumerate() {
        let mut cells = cells.clone();
        if i >= aggregates_from {
            cells[0] = format!("**{}**", cells[0]);
        }
        out.push_str(&row(&cells));
    }
    out.push('\n');
    out.push_str(&legend(c).join("; "));
    out.push('\n');
    for n in note_lines(c) {
        out.push('\n');
        out.push_str(&md_escape(&n));
        out.push('\n');
    }
    out
}

/// CSV with the column names published tables use: `LABEL` (throughput,
/// exact), `LABEL scaling %`, `A vs B %`; AVG and MAX rows labelled in the
/// first column; missing cells empty.
pub fn to_csv(c: &Comparison) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    // Labels are user text: a leading = + - @ would run as a formula (OWASP).
    let n = crate::csv::neutralise;
    let mut header = vec!["concurrency".to_string()];
    header.extend(c.labels.iter().map(|l| n(l)));
    header.extend(c.labels.iter().map(|l| n(&format!("{l} scaling %"))));
    header.extend(c.deltas.iter().map(|d| n(&format!("{} %", d.name))));
    let line = |first: String, cells: &Cells| {
        let opt = |v: Option<String>| v.unwrap_or_default();
        let mut out = vec![first];
        out.extend(cells.throughput.values().map(|x| opt(x.map(|x| x.to_string()))));
        out.extend(cells.scaling_pct.values().map(|p| opt(p.map(|p| p.to_string()))));
        out.extend(cells.delta_pct.values().map(|p| opt(p.map(|p| p.to_string()))));
        out
    };
    // With intervals: each run's throughput bounds, and each delta unrounded
    // with its bounds and verdict (columns after the published shape).
    let intervals = any_throughput_interval(c) || c.deltas.iter().any(|d| column_has_interval(c, &d.name));
    if intervals {
        for l in &c.labels {
            header.push(n(&format!("{l} ci95 low")));
            header.push(n(&format!("{l} ci95 high")));
        }
        for d in &c.deltas {
            header.extend(["delta %", "ci95 low %", "ci95 high %", "verdict"].map(|k| n(&format!("{} {k}", d.name))));
        }
    }
    let line = |first: String, cells: &Cells| {
        let mut out = line(first, cells);
        if intervals {
            for l in &c.labels {
                let ci = cells.throughput_ci95.get(l).copied().flatten();
                out.push(ci.map(|c| c.low.to_string()).unwrap_or_default());
                out.push(ci.map(|c| c.high.to_string()).unwrap_or_default());
            }
            for d in &c.deltas {
                let delta = cells.delta.get(&d.name).cloned().flatten();
                let f = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
                out.push(f(delta.as_ref().map(|d| d.delta_pct)));
                out.push(f(delta.as_ref().and_then(|d| d.ci95_low_pct)));
                out.push(f(delta.as_ref().and_then(|d| d.ci95_high_pct)));
                out.push(delta.and_then(|d| d.verdict).map(|v| v.name().to_string()).unwrap_or_default());
            }
        }
        out
    };
    let mut records = vec![header];
    records.extend(c.rows.iter().map(|r| line(r.concurrency.to_string(), &r.cells)));
    records.push(line("AVG".into(), &c.avg));
    records.push(line("MAX".into(), &c.max));
    for r in records {
        w.write_record(&r).expect("writing CSV to memory cannot fail");
    }
    String::from_utf8(w.into_inner().expect("flushing to memory cannot fail")).expect("CSV of UTF-8 strings is UTF-8")
}
