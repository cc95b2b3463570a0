//! Renderings of a [`Comparison`]: a plain-text table for the terminal,
//! Markdown for reports and issues, CSV for spreadsheets. Missing cells are
//! `-` (text, Markdown) or empty (CSV), never 0. The data is
//! [`scalelab_analyze::compare`]; this module only draws it.
//!
//! Column order everywhere: concurrency, each run's throughput, each run's
//! scaling, then the delta columns; the AVG and MAX rows come last.

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

/// Throughput for the terminal, as `show` prints it: from 1,000 up, whole
/// and with thousands separators (60,006); below, as [`fmt_throughput`].
pub fn fmt_throughput_text(x: f64) -> String {
    if x.abs() < 1000.0 {
        fmt_throughput(x)
    } else {
        crate::diagnosis::num(x)
    }
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

/// The header and body cells shared by the text and Markdown tables;
/// `throughput` formats the throughput cells.
fn grid(c: &Comparison, throughput: fn(f64) -> String) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header = vec!["clients".to_string()];
    header.extend(c.labels.iter().cloned());
    header.extend(c.labels.iter().map(|l| format!("{l} scaling")));
    header.extend(c.deltas.iter().map(|d| d.name.clone()));
    let line = |first: String, cells: &Cells| {
        let mut out = vec![first];
        out.extend(cells.throughput.values().map(|x| x.map_or_else(|| "-".to_string(), throughput)));
        out.extend(cells.scaling_pct.values().map(|p| fmt_scaling(*p)));
        out.extend(cells.delta_pct.values().map(|p| fmt_delta(*p)));
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
    if !c.deltas.is_empty() {
        lines.push("A vs B: 100 x (A/B - 1)".to_string());
    }
    lines.push(format!("AVG: {avg}; MAX: highest step; their scaling and deltas are computed from the AVG and MAX throughputs"));
    lines.push("-: no data (or an AVG delta over different steps)".to_string());
    lines
}

/// A plain-text table aligned with spaces, followed by its [`legend`].
pub fn to_text(c: &Comparison) -> String {
    let (header, body) = grid(c, fmt_throughput_text);
    let widths: Vec<usize> = (0..header.len())
        .map(|i| body.iter().map(|r| r[i].chars().count()).chain([header[i].chars().count()]).max().unwrap_or(0))
        .collect();
    let fmt_line = |cells: &[String]| {
        let parts: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, w))| if i == 0 { format!("{cell:<w$}") } else { format!("{cell:>w$}") })
            .collect();
        parts.join("  ").trim_end().to_string()
    };
    let mut out = fmt_line(&header);
    out.push('\n');
    for row in &body {
        out.push_str(&fmt_line(row));
        out.push('\n');
    }
    for line in legend(c) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// A label in a Markdown cell: no HTML left active, no column break, no
/// control character.
fn md_escape(cell: &str) -> String {
    scalelab_core::escape_control(&scalelab_core::escape_markup(cell).replace('|', "\\|")).into_owned()
}

/// A GitHub-flavoured Markdown table (numbers right-aligned), followed by its [`legend`].
pub fn to_markdown(c: &Comparison) -> String {
    let (header, body) = grid(c, fmt_throughput);
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
    out
}

/// CSV with the column names published tables use: `LABEL` (throughput,
/// exact), `LABEL scaling %`, `A vs B %`; AVG and MAX rows labelled in the
/// first column; missing cells empty.
pub fn to_csv(c: &Comparison) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["concurrency".to_string()];
    header.extend(c.labels.iter().cloned());
    header.extend(c.labels.iter().map(|l| format!("{l} scaling %")));
    header.extend(c.deltas.iter().map(|d| format!("{} %", d.name)));
    let line = |first: String, cells: &Cells| {
        let opt = |v: Option<String>| v.unwrap_or_default();
        let mut out = vec![first];
        out.extend(cells.throughput.values().map(|x| opt(x.map(|x| x.to_string()))));
        out.extend(cells.scaling_pct.values().map(|p| opt(p.map(|p| p.to_string()))));
        out.extend(cells.delta_pct.values().map(|p| opt(p.map(|p| p.to_string()))));
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
