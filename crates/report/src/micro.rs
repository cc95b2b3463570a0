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

/// One summary table: its title, whether it shows the Mhz column, and its
/// (header, figure id) columns.
struct Layout {
    title: &'static str,
    mhz: bool,
    cols: &'static [(&'static str, &'static str)],
}

const LAYOUTS: &[Layout] = &[
    Layout {
        title: "Processor, Processes - times in microseconds - smaller is better",
        mhz: true,
        cols: &[
            ("null call", "null_call"),
            ("null I/O", "null_io"),
            ("stat", "stat"),
            ("open clos", "open_close"),
            ("slct TCP", "select_tcp_100"),
            ("sig inst", "sig_install"),
            ("sig hndl", "sig_catch"),
            ("fork proc", "fork_exit"),
            ("exec proc", "fork_exec"),
            ("sh proc", "fork_sh"),
        ],
    },
    Layout {
        title: "Context switching - times in microseconds - smaller is better",
        mhz: false,
        cols: &[
            ("2p/0K ctxsw", "ctx_2p_0k"),
            ("2p/16K ctxsw", "ctx_2p_16k"),
            ("2p/64K ctxsw", "ctx_2p_64k"),
            ("8p/16K ctxsw", "ctx_8p_16k"),
            ("8p/64K ctxsw", "ctx_8p_64k"),
            ("16p/16K ctxsw", "ctx_16p_16k"),
            ("16p/64K ctxsw", "ctx_16p_64k"),
        ],
    },
    Layout {
        title: "*Local* Communication latencies in microseconds - smaller is better",
        mhz: false,
        cols: &[
            ("2p/0K ctxsw", "ctx_2p_0k"),
            ("Pipe", "pipe_latency"),
            ("AF UNIX", "unix_latency"),
            ("UDP", "udp_latency"),
            ("TCP", "tcp_latency"),
            ("TCP conn", "tcp_connect"),
        ],
    },
    Layout {
        title: "*Local* Communication latencies, both ends on one CPU, in microseconds - smaller is better",
        mhz: false,
        cols: &[
            ("Pipe", "pipe_latency_same_cpu"),
            ("AF UNIX", "unix_latency_same_cpu"),
            ("UDP", "udp_latency_same_cpu"),
            ("TCP", "tcp_latency_same_cpu"),
            ("TCP conn", "tcp_connect_same_cpu"),
        ],
    },
    Layout {
        title: "*Local* Communication bandwidths in MB/s - bigger is better",
        mhz: false,
        cols: &[
            ("Pipe", "bw_pipe"),
            ("AF UNIX", "bw_unix"),
            ("TCP", "bw_tcp"),
            ("File reread", "bw_file_reread"),
            ("Mmap reread", "bw_mmap_reread"),
            ("Mem copy", "bw_mem_cp"),
            ("Mem read", "bw_mem_rd"),
            ("Mem write", "bw_mem_wr"),
        ],
    },
    Layout {
        title: "Memory latencies in nanoseconds - smaller is better",
        mhz: false,
        cols: &[("L1 $", "mem_lat_l1"), ("L2 $", "mem_lat_l2"), ("LLC $", "mem_lat_llc"), ("Main mem", "mem_lat_main")],
    },
    Layout {
        title: "Threads and locks - microseconds (mutex in ns) - smaller is better",
        mhz: false,
        cols: &[
            ("thread create", "thread_create"),
            ("mutex ns", "mutex_uncontended"),
            ("mutex handoff", "mutex_handoff"),
            ("futex wake", "futex_wake"),
        ],
    },
    Layout {
        title: "Lock contention - Mops/s bigger is better; CPU ns per acquisition smaller is better",
        mhz: false,
        cols: &[
            ("spin 2t", "lock_spin_2t"),
            ("mutex 2t", "lock_mutex_2t"),
            ("spin 4t", "lock_spin_4t"),
            ("mutex 4t", "lock_mutex_4t"),
            ("spin 8t", "lock_spin_8t"),
            ("mutex 8t", "lock_mutex_8t"),
            ("spin 8t cpu", "lock_spin_8t_cpu"),
            ("mutex 8t cpu", "lock_mutex_8t_cpu"),
        ],
    },
    Layout {
        title: "FPU, flops-style kernels, in MFLOPS - bigger is better",
        mhz: false,
        cols: &[
            ("1", "flops_1"),
            ("2", "flops_2"),
            ("3", "flops_3"),
            ("4", "flops_4"),
            ("5", "flops_5"),
            ("6", "flops_6"),
            ("7", "flops_7"),
            ("8", "flops_8"),
            ("Average", "flops_avg"),
        ],
    },
];

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
    for lay in LAYOUTS {
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
}
