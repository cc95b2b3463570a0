//! Reproduces published comparison tables from their raw series.
//!
//! For every `NAME.published.csv` in the data folder, the raw `NAME.csv` is
//! imported and compared with the options its README names (the
//! `scalelab import NAME.csv` / `scalelab compare ...` commands there), and
//! every cell of the published table is checked, derived ones included:
//! throughputs, `LABEL scaling %`, `A vs B %`, and the AVG and MAX rows. A
//! published column this test does not understand fails it, so a new table
//! cannot pass by being skipped. Tolerance, from the README: one point for
//! percentages, one unit for AVG/MAX throughput (the published inputs were
//! themselves rounded); per-step throughputs are inputs and must match exactly.
//!
//! The data folder is a verbatim copy of the published tables (README
//! and the sweep tables) in `examples/published`; point
//! `SCALELAB_PUBLISHED_DIR` at another folder of the same layout to check it.

use scalelab_analyze::compare::Cells;
use scalelab_analyze::{compare, parse_import_csv, CompareOptions, Comparison, Series};
use scalelab_report::compare::to_csv;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Published percentages are whole numbers computed from rounded inputs.
const PCT_TOLERANCE: f64 = 1.0;
/// AVG and MAX throughputs were published rounded (or truncated).
const AGGREGATE_TOLERANCE: f64 = 1.0;

fn data_dir() -> PathBuf {
    std::env::var_os("SCALELAB_PUBLISHED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/published"))
}

/// Splits a shell command line into words (double and single quotes, backslash escapes).
fn shell_words(line: &str) -> Vec<String> {
    let (mut words, mut word, mut quote, mut in_word) = (Vec::new(), String::new(), None, false);
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '"' | '\'') => (quote, in_word) = (Some(c), true),
            (Some(q), c) if c == q => quote = None,
            (None | Some('"'), '\\') => {
                word.extend(chars.next());
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                }
                in_word = false;
            }
            (_, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The `compare` arguments the README gives after `scalelab import FILE`, by FILE.
fn readme_commands(readme: &str) -> HashMap<String, Vec<String>> {
    let joined = readme.replace("\\\n", " ");
    let mut current: Option<String> = None;
    let mut out = HashMap::new();
    for line in joined.lines() {
        let words = shell_words(line);
        match words.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
            ["scalelab", "import", file] => current = Some(file.to_string()),
            ["scalelab", "compare", ..] => {
                let file = current.clone().expect("README: `scalelab compare` before any `scalelab import`");
                out.insert(file, words[2..].to_vec());
            }
            _ => {}
        }
    }
    out
}

/// Runs (in order) and options from `scalelab compare` arguments.
fn parse_compare_args(args: &[String]) -> (Vec<String>, CompareOptions, Vec<String>) {
    let (mut runs, mut opts, mut pair_specs) = (Vec::new(), CompareOptions::default(), Vec::new());
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("README: {a} needs a value")).clone();
        match a.as_str() {
            "--baseline" => opts.baseline = Some(value()),
            "--pair" => pair_specs.push(value()),
            "--avg-from" => opts.avg_from = Some(value().parse().expect("README: --avg-from N")),
            "--format" => drop(value()),
            flag if flag.starts_with("--") => panic!("README: unknown compare option {flag}"),
            run => runs.push(run.to_string()),
        }
    }
    (runs, opts, pair_specs)
}

/// Imports `NAME.csv` and compares it as the README says (or, for a table the
/// README does not mention: all runs, pairs from the `A vs B %` headers).
fn reproduce(dir: &Path, raw_name: &str, published_header: &[String], alter: impl Fn(&mut Vec<Series>)) -> Comparison {
    let text = std::fs::read_to_string(dir.join(raw_name)).unwrap_or_else(|e| panic!("{raw_name}: {e}"));
    let mut series = parse_import_csv(&text).unwrap_or_else(|e| panic!("{raw_name}: {e}"));
    alter(&mut series);
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap_or_default();
    let labels: Vec<String> = series.iter().map(|s| s.label.clone()).collect();
    let label_refs: Vec<&str> = labels.iter().map(String::as_str).collect();
    let (runs, mut opts, pair_specs) = match readme_commands(&readme).get(raw_name) {
        Some(args) => parse_compare_args(args),
        None => {
            let pairs = published_header.iter().filter_map(|h| h.strip_suffix(" %")).filter(|h| h.contains(" vs "));
            (labels.clone(), CompareOptions::default(), pairs.map(|h| h.replacen(" vs ", ":", 1)).collect())
        }
    };
    for spec in &pair_specs {
        opts.pairs.push(CompareOptions::parse_pair(spec, &label_refs).unwrap_or_else(|e| panic!("{raw_name}: {e}")));
    }
    let chosen: Vec<Series> =
        runs.iter().map(|r| series.iter().find(|s| &s.label == r).unwrap_or_else(|| panic!("{raw_name}: no run `{r}`")).clone()).collect();
    compare(&chosen, &opts).unwrap_or_else(|e| panic!("{raw_name}: {e}"))
}

/// A published table: header and rows (first cell: concurrency, AVG or MAX).
fn read_table(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut reader = csv::ReaderBuilder::new().comment(Some(b'#')).trim(csv::Trim::All).from_reader(text.as_bytes());
    let header = reader.headers().expect("header").iter().map(String::from).collect();
    let rows = reader.records().map(|r| r.expect("published CSV row").iter().map(String::from).collect()).collect();
    (header, rows)
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Throughput,
    Scaling,
    Delta,
}

/// What a published column holds, from its name.
fn classify(c: &Comparison, column: &str) -> Option<(Kind, String)> {
    if c.labels.iter().any(|l| l == column) {
        return Some((Kind::Throughput, column.to_string()));
    }
    let stem = column.strip_suffix(" %")?;
    if let Some(label) = stem.strip_suffix(" scaling").filter(|l| c.labels.iter().any(|x| x == l)) {
        return Some((Kind::Scaling, label.to_string()));
    }
    c.deltas.iter().any(|d| d.name == stem).then(|| (Kind::Delta, stem.to_string()))
}

/// Checks every published cell against `ours(row key, kind, key)`; returns
/// the mismatches and the number of derived (non-input) cells checked.
fn check(c: &Comparison, published: &str, ours: impl Fn(&str, Kind, &str) -> Option<f64>) -> (Vec<String>, usize) {
    let (header, rows) = read_table(published);
    let (mut bad, mut derived) = (Vec::new(), 0);
    let columns: Vec<(Kind, String)> = header[1..]
        .iter()
        .map(|h| classify(c, h).unwrap_or_else(|| panic!("published column `{h}` is not a run, a scaling or a compared pair")))
        .collect();
    for row in &rows {
        let key = row[0].as_str();
        let aggregate = key == "AVG" || key == "MAX";
        for ((kind, name), cell) in columns.iter().zip(&row[1..]) {
            if cell.is_empty() {
                continue;
            }
            let expected: f64 = cell.parse().unwrap_or_else(|_| panic!("published cell `{cell}` at {key}/{name}"));
            let tolerance = match kind {
                Kind::Throughput if aggregate => AGGREGATE_TOLERANCE,
                Kind::Throughput => 0.0,
                _ => PCT_TOLERANCE,
            };
            if *kind != Kind::Throughput || aggregate {
                derived += 1;
            }
            match ours(key, *kind, name) {
                Some(got) if (got - expected).abs() <= tolerance => {}
                got => bad.push(format!("{key} / {name}: published {expected}, computed {got:?}")),
            }
        }
    }
    (bad, derived)
}

/// Our value of a cell of the comparison data.
fn data_cell(c: &Comparison, key: &str, kind: Kind, name: &str) -> Option<f64> {
    let cells: &Cells = match key {
        "AVG" => &c.avg,
        "MAX" => &c.max,
        n => &c.rows.iter().find(|r| r.concurrency.to_string() == n)?.cells,
    };
    match kind {
        Kind::Throughput => cells.throughput.get(name).copied().flatten(),
        Kind::Scaling => cells.scaling_pct.get(name).copied().flatten().map(|p| p as f64),
        Kind::Delta => cells.delta_pct.get(name).copied().flatten().map(|p| p as f64),
    }
}

/// Our value of a cell of the CSV rendering (same column names as published).
fn csv_cell(table: &(Vec<String>, Vec<Vec<String>>), key: &str, kind: Kind, name: &str) -> Option<f64> {
    let column = match kind {
        Kind::Throughput => name.to_string(),
        Kind::Scaling => format!("{name} scaling %"),
        Kind::Delta => format!("{name} %"),
    };
    let i = table.0.iter().position(|h| *h == column)?;
    table.1.iter().find(|r| r[0] == key)?[i].parse().ok()
}

fn published_files(dir: &Path) -> Vec<(String, String)> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".published.csv"))
        .collect();
    names.sort();
    names.into_iter().map(|n| (n.replace(".published.csv", ".csv"), n)).collect()
}

#[test]
fn published_tables_are_reproduced() {
    let dir = data_dir();
    let files = published_files(&dir);
    assert!(!files.is_empty(), "no *.published.csv in {}", dir.display());
    for (raw, published_name) in files {
        let published = std::fs::read_to_string(dir.join(&published_name)).unwrap();
        let c = reproduce(&dir, &raw, &read_table(&published).0, |_| {});
        let (bad, derived) = check(&c, &published, |k, kind, n| data_cell(&c, k, kind, n));
        assert!(bad.is_empty(), "{published_name}: {} cells differ:\n{}", bad.len(), bad.join("\n"));
        assert!(derived > 0, "{published_name}: no derived cell checked");
        let ours = read_table(&to_csv(&c));
        let (bad, _) = check(&c, &published, |k, kind, n| csv_cell(&ours, k, kind, n));
        assert!(bad.is_empty(), "{published_name} (CSV rendering): {}", bad.join("\n"));
        println!("{published_name}: {derived} derived cells within tolerance");
    }
}

#[test]
fn the_check_catches_a_wrong_input() {
    // +5 % on the first run's first step must show in the published cells.
    let dir = data_dir();
    for (raw, published_name) in published_files(&dir) {
        let published = std::fs::read_to_string(dir.join(&published_name)).unwrap();
        let alter = |s: &mut Vec<Series>| {
            let first = s[0].points.iter_mut().min_by_key(|p| p.concurrency).unwrap();
            first.throughput *= 1.05;
        };
        let c = reproduce(&dir, &raw, &read_table(&published).0, alter);
        let (bad, _) = check(&c, &published, |k, kind, n| data_cell(&c, k, kind, n));
        assert!(!bad.is_empty(), "{published_name}: a 5 % error went unnoticed");
    }
}

#[test]
fn readme_commands_are_read() {
    let readme = "```\nscalelab import a.csv\nscalelab compare \"X 1\" Y \\\n    --pair \"X 1:Y\" --avg-from 5\n```\n";
    let args = &readme_commands(readme)["a.csv"];
    let (runs, opts, pairs) = parse_compare_args(args);
    assert_eq!(runs, vec!["X 1", "Y"]);
    assert_eq!((opts.avg_from, pairs), (Some(5), vec!["X 1:Y".to_string()]));
}
