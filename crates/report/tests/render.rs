//! Pins the comparison table's text, Markdown and CSV renderings (insta
//! snapshots in `tests/snapshots`; review changes with `cargo insta review`).

use scalelab_analyze::{compare, parse_import_csv, CompareOptions, Comparison, Series};
use scalelab_report::compare::{to_csv, to_markdown, to_text};

fn published(name: &str) -> Vec<Series> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/published").join(name);
    parse_import_csv(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn scaling_table() -> Comparison {
    compare(&published("mysql-scaling-g5-tiger-linux-opteron.csv"), &CompareOptions::default()).unwrap()
}

fn bits_table() -> Comparison {
    let opts = CompareOptions {
        pairs: vec![("Xeon 64-bit".into(), "Xeon 32-bit".into()), ("Opteron 64-bit".into(), "Opteron 32-bit".into())],
        avg_from: Some(5),
        ..Default::default()
    };
    compare(&published("mysql-64bit-vs-32bit.csv"), &opts).unwrap()
}

/// Runs with different step lists and a baseline: missing cells must show as missing.
fn ragged_table() -> Comparison {
    let text = "concurrency,old|build,new\n1,100,\n2,180,190\n4,300.5,410\n8,,820.25\n";
    let opts = CompareOptions { baseline: Some("old|build".into()), ..Default::default() };
    compare(&parse_import_csv(text).unwrap(), &opts).unwrap()
}

#[test]
fn text_tables() {
    insta::assert_snapshot!("scaling_text", to_text(&scaling_table()));
    insta::assert_snapshot!("bits_text", to_text(&bits_table()));
    insta::assert_snapshot!("ragged_text", to_text(&ragged_table()));
}

#[test]
fn markdown_tables() {
    insta::assert_snapshot!("scaling_md", to_markdown(&scaling_table()));
    insta::assert_snapshot!("bits_md", to_markdown(&bits_table()));
    insta::assert_snapshot!("ragged_md", to_markdown(&ragged_table()));
}

#[test]
fn csv_tables() {
    insta::assert_snapshot!("bits_csv", to_csv(&bits_table()));
    insta::assert_snapshot!("ragged_csv", to_csv(&ragged_table()));
}

#[test]
fn json_shape() {
    let json = serde_json::to_string_pretty(&ragged_table()).unwrap();
    insta::assert_snapshot!("ragged_json", json);
}
