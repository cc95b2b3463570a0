//! `scalelab prepare`: create and load a dataset (sbtest, pgbench) in a
//! PostgreSQL or MySQL/MariaDB database, or drop it.

use crate::args::PrepareArgs;
use crate::error::bad;
use scalelab_drive::sql::dataset::{self, Dataset, PrepareOptions};
use scalelab_drive::sql::SqlUrl;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Instant;

pub fn run(a: &PrepareArgs) -> anyhow::Result<ExitCode> {
    let url = SqlUrl::parse(&a.target).map_err(bad)?;
    let ds: Dataset = a.dataset.parse().map_err(|e: String| bad(format!("--dataset: {e}")))?;
    if a.rows == Some(0) {
        return Err(bad("--rows must be at least 1"));
    }
    let opts = PrepareOptions { dataset: ds, scale: a.scale, rows: a.rows, engine: a.engine.clone(), force: a.force, drop: a.drop };
    let t0 = Instant::now();
    let tty = std::io::stderr().is_terminal();
    let mut last = Instant::now();
    let mut progress = |done: u64, total: u64| {
        if a.quiet || last.elapsed().as_millis() < if tty { 200 } else { 2000 } {
            return;
        }
        last = Instant::now();
        let pct = if total > 0 { done as f64 * 100.0 / total as f64 } else { 100.0 };
        let mut err = std::io::stderr();
        if tty {
            let _ = write!(err, "\rloading {}: {done}/{total} rows ({pct:.0}%)   ", a.dataset);
        } else {
            let _ = writeln!(err, "loading {}: {done}/{total} rows ({pct:.0}%)", a.dataset);
        }
    };
    let summary = dataset::prepare(&url, &opts, &mut progress).map_err(|f| bad(format!("prepare {}: {}", url.redacted(), f.message)))?;
    if tty && !a.quiet {
        eprint!("\r\x1b[K");
    }
    if a.drop {
        if summary.tables.is_empty() {
            sayln!("no {} table in {}", a.dataset, url.redacted());
        } else {
            sayln!("dropped {} from {}", summary.tables.join(", "), url.redacted());
        }
    } else {
        sayln!(
            "prepared {} in {}: {} table(s) ({}), {} rows in {:.1}s",
            a.dataset,
            url.redacted(),
            summary.tables.len(),
            summary.tables.join(", "),
            summary.rows,
            t0.elapsed().as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}
