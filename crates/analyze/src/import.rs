//! The import format for external series (published tables, other tools):
//!
//! ```text
//! # comment lines start with '#'
//! concurrency,LABEL1,LABEL2,...
//! 1,192,228
//! 2,274,
//! ```
//!
//! Each column after the first becomes one [`Series`] with that label; an
//! empty cell is a missing step (not 0). Fields may be quoted as in any CSV,
//! so labels may hold commas. Errors name the line (1-based, counting
//! comments and blank lines) and the column (1-based) at fault.
//!
//! What a published table can hold is bounded, so that a file that is not
//! one (a million rows, `1e308`) is refused before anything is stored: at
//! most [`MAX_IMPORT_ROWS`] step rows and [`MAX_IMPORT_RUNS`] run columns,
//! concurrencies from 1 to [`MAX_CONCURRENCY`] (what a sweep accepts), and
//! throughputs from 0 to below [`MAX_IMPORT_THROUGHPUT_PER_S`].

use crate::series::{Point, Series};
use scalelab_core::MAX_CONCURRENCY;
use std::collections::HashMap;
use thiserror::Error;

/// The most step rows (concurrency levels) an import holds: ten times the
/// longest published table we know of, far below what would make `show`
/// or `report` slow.
pub const MAX_IMPORT_ROWS: usize = 10_000;

/// The most run columns (series) an import holds: each becomes a run.
pub const MAX_IMPORT_RUNS: usize = 1_000;

/// Throughputs at or above this are refused: a trillion per second is
/// beyond any server, and far larger figures overflowed the tables'
/// integer formatting (`1e308` showed as 9,223,372,036,854,775,807 req/s).
pub const MAX_IMPORT_THROUGHPUT_PER_S: f64 = 1e12;

/// What is wrong with an import file, and where.
#[derive(Debug, Error, PartialEq)]
pub enum ImportError {
    /// The text is not valid CSV (unbalanced quotes, invalid UTF-8).
    #[error("line {line}: not valid CSV: {message}")]
    Csv { line: u64, message: String },
    /// Only comments and blank lines.
    #[error("no header: expected a line `concurrency,LABEL,...` after the comments")]
    NoHeader,
    /// The header does not start with `concurrency`.
    #[error("line {line}, column 1: header starts with `{found}`, expected `concurrency`")]
    BadHeader { line: u64, found: String },
    /// A header with no run column.
    #[error("line {line}: header has no run column after `concurrency`")]
    NoRuns { line: u64 },
    /// More run columns than [`MAX_IMPORT_RUNS`].
    #[error("line {line}: {found} run columns, at most {max} are imported: import the series you compare in a smaller file")]
    TooManyRuns { line: u64, found: usize, max: usize },
    /// More step rows than [`MAX_IMPORT_ROWS`].
    #[error("line {line}: more than {max} step rows, the most a series holds: import the concurrency levels you compare")]
    TooManyRows { line: u64, max: usize },
    /// A run column without a label.
    #[error("line {line}, column {column}: empty run label")]
    EmptyLabel { line: u64, column: usize },
    /// Two run columns with one label.
    #[error("line {line}, column {column}: run label `{label}` already used in column {first_column}")]
    DuplicateLabel { line: u64, column: usize, label: String, first_column: usize },
    /// A row whose cell count differs from the header's.
    #[error("line {line}: {found} cells, the header has {expected}")]
    FieldCount { line: u64, expected: usize, found: usize },
    /// A concurrency that is not an integer from 1 to [`MAX_CONCURRENCY`].
    #[error("line {line}, column 1 (concurrency): `{value}` is not an integer from 1 to {MAX_CONCURRENCY}")]
    BadConcurrency { line: u64, value: String },
    /// The same concurrency on two rows.
    #[error("line {line}, column 1 (concurrency): {concurrency} already given on line {first_line}")]
    DuplicateConcurrency { line: u64, concurrency: u32, first_line: u64 },
    /// A throughput cell that is neither empty nor a number from 0 to below
    /// [`MAX_IMPORT_THROUGHPUT_PER_S`].
    #[error("line {line}, column {column} (`{label}`): `{value}` is not a throughput (a number from 0 to below 1e12 per second, or empty when missing)")]
    BadValue { line: u64, column: usize, label: String, value: String },
    /// A header but no step rows.
    #[error("no step rows after the header on line {header_line}")]
    NoRows { header_line: u64 },
    /// A run column whose cells are all empty.
    #[error("column {column} (`{label}`): no value on any row")]
    EmptyColumn { column: usize, label: String },
}

fn line_of(record: &csv::StringRecord) -> u64 {
    record.position().map_or(0, |p| p.line())
}

fn csv_error(e: csv::Error) -> ImportError {
    let line = e.position().map_or(0, |p| p.line());
    ImportError::Csv { line, message: e.to_string() }
}

/// The unit of an imported table's figures, from what its `#` comment lines
/// say ("queries/s per number of clients" → `q/s`); `/s` when they say
/// nothing, so an unknown unit is never shown as requests.
pub fn import_unit(text: &str) -> &'static str {
    let comments: String = text.lines().filter(|l| l.trim_start().starts_with('#')).collect::<Vec<_>>().join(" ").to_ascii_lowercase();
    let tokens: Vec<&str> = comments.split(|c: char| !(c.is_alphanumeric() || c == '/')).collect();
    let says = |words: &[&str]| words.iter().any(|w| if w.contains(' ') { comments.contains(w) } else { tokens.contains(w) });
    if says(&["transactions/s", "transactions per second", "tx/s", "tps"]) {
        "tx/s"
    } else if says(&["queries/s", "queries per second", "q/s", "qps"]) {
        "q/s"
    } else if says(&["requests/s", "requests per second", "req/s", "rps"]) {
        "req/s"
    } else {
        "/s"
    }
}

/// Parses `text` in the import format into one [`Series`] per run column,
/// in column order, each with its steps in row order.
pub fn parse_import_csv(text: &str) -> Result<Vec<Series>, ImportError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut reader =
        csv::ReaderBuilder::new().has_headers(false).comment(Some(b'#')).flexible(true).trim(csv::Trim::All).from_reader(text.as_bytes());
    let mut records = reader.records();

    let header = records.next().ok_or(ImportError::NoHeader)?.map_err(csv_error)?;
    let header_line = line_of(&header);
    let first = header.get(0).unwrap_or("");
    if !first.eq_ignore_ascii_case("concurrency") {
        return Err(ImportError::BadHeader { line: header_line, found: first.to_string() });
    }
    if header.len() < 2 {
        return Err(ImportError::NoRuns { line: header_line });
    }
    if header.len() - 1 > MAX_IMPORT_RUNS {
        return Err(ImportError::TooManyRuns { line: header_line, found: header.len() - 1, max: MAX_IMPORT_RUNS });
    }
    let mut series: Vec<Series> = Vec::new();
    for (i, label) in header.iter().enumerate().skip(1) {
        let column = i + 1;
        if label.is_empty() {
            return Err(ImportError::EmptyLabel { line: header_line, column });
        }
        if let Some(j) = series.iter().position(|s| s.label == label) {
            return Err(ImportError::DuplicateLabel { line: header_line, column, label: label.to_string(), first_column: j + 2 });
        }
        series.push(Series::new(label, Vec::new()));
    }

    let mut seen: HashMap<u32, u64> = HashMap::new();
    for record in records {
        let record = record.map_err(csv_error)?;
        let line = line_of(&record);
        if record.len() != header.len() {
            return Err(ImportError::FieldCount { line, expected: header.len(), found: record.len() });
        }
        if seen.len() == MAX_IMPORT_ROWS {
            return Err(ImportError::TooManyRows { line, max: MAX_IMPORT_ROWS });
        }
        let raw = &record[0];
        let concurrency = match raw.parse::<u32>() {
            Ok(n) if (1..=MAX_CONCURRENCY).contains(&n) => n,
            _ => return Err(ImportError::BadConcurrency { line, value: raw.to_string() }),
        };
        if let Some(&first_line) = seen.get(&concurrency) {
            return Err(ImportError::DuplicateConcurrency { line, concurrency, first_line });
        }
        seen.insert(concurrency, line);
        for (i, cell) in record.iter().enumerate().skip(1) {
            if cell.is_empty() {
                continue;
            }
            let s = &mut series[i - 1];
            match cell.parse::<f64>() {
                Ok(x) if (0.0..MAX_IMPORT_THROUGHPUT_PER_S).contains(&x) => s.points.push(Point::new(concurrency, x)),
                _ => return Err(ImportError::BadValue { line, column: i + 1, label: s.label.clone(), value: cell.to_string() }),
            }
        }
    }
    if seen.is_empty() {
        return Err(ImportError::NoRows { header_line });
    }
    if let Some(i) = series.iter().position(|s| s.points.is_empty()) {
        return Err(ImportError::EmptyColumn { column: i + 2, label: series[i].label.clone() });
    }
    Ok(series)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_comments_missing_cells_and_quoted_labels() {
        let text = "# a comment\n\nconcurrency,A,\"B, tuned\"\n1,10,\n# between rows\n2,20,35.5\n";
        let s = parse_import_csv(text).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0], Series::from_pairs("A", &[(1, 10.0), (2, 20.0)]));
        assert_eq!(s[1], Series::from_pairs("B, tuned", &[(2, 35.5)]));
    }

    fn err(text: &str) -> String {
        parse_import_csv(text).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_line_and_column() {
        assert_eq!(
            err("# c\nconcurrency,A,B\n1,2,x\n"),
            "line 3, column 3 (`B`): `x` is not a throughput (a number from 0 to below 1e12 per second, or empty when missing)"
        );
        assert_eq!(
            err("# c\nconcurrency,A,B\n1,2,-4\n"),
            "line 3, column 3 (`B`): `-4` is not a throughput (a number from 0 to below 1e12 per second, or empty when missing)"
        );
        assert_eq!(err("concurrency,A\n1,2\n0,3\n"), "line 3, column 1 (concurrency): `0` is not an integer from 1 to 100000");
        assert_eq!(err("concurrency,A\n1,2\n1,3\n"), "line 3, column 1 (concurrency): 1 already given on line 2");
        assert_eq!(err("concurrency,A\n1,2,3\n"), "line 2: 3 cells, the header has 2");
        assert_eq!(err("clients,A\n1,2\n"), "line 1, column 1: header starts with `clients`, expected `concurrency`");
        assert_eq!(err("concurrency,A,A\n"), "line 1, column 3: run label `A` already used in column 2");
        assert_eq!(err("concurrency,A,\n1,2,3\n"), "line 1, column 3: empty run label");
        assert_eq!(err("concurrency,A,B\n1,2,\n"), "column 3 (`B`): no value on any row");
        assert_eq!(err("# only\n"), "no header: expected a line `concurrency,LABEL,...` after the comments");
        assert_eq!(err("concurrency,A\n"), "no step rows after the header on line 1");
        assert_eq!(err("concurrency\n1\n"), "line 1: header has no run column after `concurrency`");
    }

    /// A file that is no published table is refused at the first line past
    /// a bound: the largest value a table can show, a sweep's concurrency
    /// range, the rows and columns a comparison can use.
    #[test]
    fn absurd_figures_and_sizes_are_refused_where_they_start() {
        for (value, ok) in [("1e308", false), ("inf", false), ("NaN", false), ("1e12", false), ("999999999999", true), ("0", true)] {
            let r = parse_import_csv(&format!("concurrency,A\n1,{value}\n"));
            assert_eq!(r.is_ok(), ok, "{value}: {r:?}");
        }
        assert_eq!(err("concurrency,A\n100001,3\n"), "line 2, column 1 (concurrency): `100001` is not an integer from 1 to 100000");
        assert!(parse_import_csv("concurrency,A\n100000,3\n").is_ok());

        let rows = |n: usize| (1..=n).fold(String::from("# c\nconcurrency,A\n"), |t, c| t + &format!("{c},{c}\n"));
        assert_eq!(parse_import_csv(&rows(MAX_IMPORT_ROWS)).unwrap()[0].points.len(), MAX_IMPORT_ROWS);
        assert_eq!(
            err(&rows(MAX_IMPORT_ROWS + 1)),
            "line 10003: more than 10000 step rows, the most a series holds: import the concurrency levels you compare"
        );
        let header = (0..=MAX_IMPORT_RUNS).fold(String::from("concurrency"), |t, i| t + &format!(",r{i}"));
        assert_eq!(
            err(&format!("{header}\n")),
            "line 1: 1001 run columns, at most 1000 are imported: import the series you compare in a smaller file"
        );
    }
}

#[cfg(test)]
mod unit_tests {
    use super::import_unit;

    #[test]
    fn the_unit_comes_from_the_comment_lines() {
        assert_eq!(import_unit("# MySQL 4.0.18, queries/s per number of concurrent clients.\nconcurrency,a\n1,2\n"), "q/s");
        assert_eq!(import_unit("# pgbench, tps at each client count\nconcurrency,a\n"), "tx/s");
        assert_eq!(import_unit("# nginx over https, requests/s\nconcurrency,a\n"), "req/s");
        assert_eq!(import_unit("# https://example.org/results\nconcurrency,a\n"), "/s", "'tps' inside 'https' is not a unit");
        assert_eq!(import_unit("concurrency,a\n1,2\n"), "/s");
    }
}
