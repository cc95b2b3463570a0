//! Micro-benchmark tables: the layout of lmbench's summary (one row per
//! labelled run, columns as lmbench prints them) so published rows sit beside
//! ours, the comparison against a baseline run, and a plain fixed-width
//! renderer. A table is a [`TextTable`]: `rows[i][j]` is the text under
//! `columns[j]`; a missing figure is "-".

use crate::model::TextTable;
use scalelab_analyze::micro::Comparison;
use scalelab_micro::catalog::{parse_curve_id, size_label};
use scalelab_micro::{anomalies, fmt_num, LabelledRun, MicroResult, MicroRun};
use std::collections::BTreeSet;

/// A micro-benchmark table (the report's [`TextTable`]).
pub type Table = TextTable;

fn cell(v: Option<f64>) -> String {
    v.map(fmt_num).unwrap_or_else(|| "-".to_string())
}

/// Marks a figure that contradicts another (see [`scalelab_micro::anomalies`]); the
/// reasons are listed under the tables ([`anomaly_notes`]).
pub const ANOMALY_MARK: &str = "!";

/// One line per contradiction of each run, for beneath the tables:
/// `! LABEL: message`.
pub fn anomaly_notes(runs: &[LabelledRun]) -> Vec<String> {
    runs.iter()
        .flat_map(|r| anomalies::check(&r.run).into_iter().map(move |a| format!("{ANOMALY_MARK} {}: {}", r.label, a.message)))
        .collect()
}

/// The lmbench-layout tables for these runs, in lmbench's order. A run gets
/// a row in a table when it has at least one of its figures; a table with no
/// rows is left out. A memory-latency curve table follows when any run has one.
pub fn summary_tables(runs: &[LabelledRun]) -> Vec<Table> {
    let mut out = Vec::new();
    for lay in scalelab_micro::catalog::LMBENCH_TABLES {
        let mut columns = vec!["Host".to_string(), "OS".to_string()];
        if lay.mhz {
            columns.push("Mhz".to_string());
        }
        columns.extend(lay.cols.iter().map(|(h, _)| h.to_string()));
        let mut rows = Vec::new();
        for r in runs {
            let vals: Vec<Option<f64>> = lay.cols.iter().map(|(_, id)| r.run.median(id)).collect();
            if vals.iter().all(Option::is_none) {
                continue;
            }
            let flagged: Vec<String> = anomalies::check(&r.run).into_iter().flat_map(|a| a.ids).collect();
            let mut row = vec![r.label.clone(), r.os.as_deref().map_or_else(|| "-".into(), short_os)];
            if lay.mhz {
                row.push(r.mhz.map(|m| format!("{m:.0}")).unwrap_or_else(|| "-".into()));
            }
            row.extend(vals.into_iter().zip(lay.cols).map(|(v, (_, id))| {
                let text = cell(v);
                if flagged.iter().any(|f| f == id) {
                    format!("{text}{ANOMALY_MARK}")
                } else {
                    text
                }
            }));
            rows.push(row);
        }
        if !rows.is_empty() {
            out.push(Table { title: lay.title.to_string(), columns, rows });
        }
    }
    if let Some(t) = curve_table(runs) {
        out.push(t);
    }
    out
}

/// The memory-latency curve of a run: (buffer bytes, ns per load), by size.
pub fn memory_curve(run: &MicroRun) -> Vec<(u64, f64)> {
    let mut v: Vec<(u64, f64)> = run.results.iter().filter_map(|r| Some((parse_curve_id(&r.id)?, r.median?))).collect();
    v.sort_by_key(|p| p.0);
    v
}

/// Size/latency curve, one column per run that has one.
fn curve_table(runs: &[LabelledRun]) -> Option<Table> {
    let curves: Vec<(&str, Vec<(u64, f64)>)> =
        runs.iter().map(|r| (r.label.as_str(), memory_curve(&r.run))).filter(|(_, c)| !c.is_empty()).collect();
    if curves.is_empty() {
        return None;
    }
    let sizes: BTreeSet<u64> = curves.iter().flat_map(|(_, c)| c.iter().map(|p| p.0)).collect();
    let mut columns = vec!["Size".to_string()];
    columns.extend(curves.iter().map(|(l, _)| l.to_string()));
    let rows = sizes
        .into_iter()
        .map(|s| {
            let mut row = vec![size_label(s)];
            row.extend(curves.iter().map(|(_, c)| cell(c.iter().find(|p| p.0 == s).map(|p| p.1))));
            row
        })
        .collect();
    Some(Table { title: "Memory latency curve - nanoseconds per dependent load by buffer size".into(), columns, rows })
}

impl TextTable {
    /// Fixed-width text: title, header, a rule, rows. Label columns (those
    /// before the first numeric one: Host, OS, figure names) are left-aligned,
    /// figures right-aligned.
    pub fn render(&self) -> String {
        let n = self.columns.len();
        let mut width: Vec<usize> = self.columns.iter().map(|c| c.chars().count()).collect();
        for row in &self.rows {
            for (j, c) in row.iter().enumerate().take(n) {
                width[j] = width[j].max(c.chars().count());
            }
        }
        let left = |j: usize| matches!(self.columns[j].as_str(), "Host" | "OS" | "figure" | "unit" | "Size");
        let line = |cells: &[String]| {
            let parts: Vec<String> = (0..n)
                .map(|j| {
                    let c = cells.get(j).map(String::as_str).unwrap_or("");
                    if left(j) {
                        format!("{c:<w$}", w = width[j])
                    } else {
                        format!("{c:>w$}", w = width[j])
                    }
                })
                .collect();
            parts.join("  ").trim_end().to_string()
        };
        let mut s = String::new();
        s.push_str(&self.title);
        s.push('\n');
        s.push_str(&line(&self.columns));
        s.push('\n');
        let rule: Vec<String> = width.iter().map(|w| "-".repeat(*w)).collect();
        s.push_str(&rule.join("  "));
        s.push('\n');
        for row in &self.rows {
            s.push_str(&line(row));
            s.push('\n');
        }
        s
    }
}

/// The summary tables of `runs` as text, then one line per contradiction
/// ([`anomaly_notes`]): what `scalelab micro` and `show` print.
pub fn tables_text(runs: &[LabelledRun]) -> String {
    let mut out = render_tables(&summary_tables(runs));
    for n in anomaly_notes(runs) {
        out.push_str(&n);
        out.push('\n');
    }
    out
}

/// All tables as text, separated by blank lines.
pub fn render_tables(tables: &[Table]) -> String {
    tables.iter().map(Table::render).collect::<Vec<_>>().join("\n")
}

/// A comparison against the baseline run as a table: per figure its id,
/// unit, the baseline's value, then each other run's value and delta%.
pub fn comparison_table(c: &Comparison) -> Table {
    let mut columns = vec!["figure".to_string(), "unit".to_string(), c.baseline.clone()];
    for l in &c.labels {
        columns.push(l.clone());
        columns.push("delta%".to_string());
    }
    let dash = || "-".to_string();
    let rows = c
        .rows
        .iter()
        .map(|r| {
            let mut row = vec![r.id.clone(), r.unit.as_str().to_string(), r.baseline.map(fmt_num).unwrap_or_else(dash)];
            for cell in &r.cells {
                row.push(cell.value.map(fmt_num).unwrap_or_else(dash));
                row.push(cell.delta_pct.map(|d| format!("{d:+}")).unwrap_or_else(dash));
            }
            row
        })
        .collect();
    Table {
        title: format!(
            "Compared with {}: delta% = 100 x (run/{} - 1); for us/ns smaller is better, \
             for MB/s, MFLOPS, Mops/s bigger is better",
            c.baseline, c.baseline
        ),
        columns,
        rows,
    }
}

/// The comparison as fixed-width text.
pub fn render_comparison(c: &Comparison) -> String {
    comparison_table(c).render()
}

/// One figure as the suite's progress shows it: `ID  MEDIAN UNIT`, or why it
/// is unavailable.
pub fn progress_line(r: &MicroResult) -> String {
    let value = match (r.median, &r.unavailable) {
        (Some(m), _) => format!("{m:.4} {}", r.unit.as_str()),
        (None, Some(why)) => format!("unavailable: {why}"),
        (None, None) => "-".into(),
    };
    format!("{:<24} {value}", r.id)
}

/// An OS as a table cell: `Linux 6.1.0` for `Linux 6.1.0-26-amd64 (Debian
/// GNU/Linux 12 (bookworm))` (the full text stays in the run's JSON), so
/// the table fits a terminal; other names as they are.
fn short_os(os: &str) -> String {
    match os.strip_prefix("Linux ") {
        Some(rest) => format!("Linux {}", rest.split(['-', ' ']).next().unwrap_or(rest)),
        None => os.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_linux_os_is_its_kernel_version() {
        assert_eq!(super::short_os("Linux 6.1.0-26-amd64 (Debian GNU/Linux 12 (bookworm))"), "Linux 6.1.0");
        assert_eq!(super::short_os("Linux 6.12.9"), "Linux 6.12.9");
        assert_eq!(super::short_os("Darwin"), "Darwin");
    }

    #[test]
    fn an_imported_protection_fault_figure_appears_in_the_summary() {
        // lmbench 2's header, lower case: read, and shown under lmbench 3's.
        let csv = "Host,OS,Mhz,null call,sig hndl,prot fault\nbox,Linux 2.6,2400,0.10,1.20,0.45\n";
        let runs = scalelab_analyze::micro::parse_published_csv("t.csv", csv).unwrap();
        let tables = super::summary_tables(&runs);
        let vm = tables.iter().find(|t| t.title.starts_with("File & VM")).expect("the File & VM table");
        let at = vm.columns.iter().position(|c| c == "Prot Fault").expect("a Prot Fault column");
        assert_eq!(vm.rows[0][at], "0.450");
    }
}
