//! `import` + `compare` + `--assert` through the binary, on the published tables.

mod common;

use common::*;

fn data(name: &str) -> String {
    let base = std::env::var("SCALELAB_PUBLISHED_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/published").to_string());
    format!("{base}/{name}")
}

#[test]
fn imported_published_table_compares_as_published() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let out = run(&store, &["import", &data("mysql-64bit-vs-32bit.csv")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = json(
        &store,
        &[
            "compare",
            "Xeon 64-bit",
            "Xeon 32-bit",
            "Opteron 64-bit",
            "Opteron 32-bit",
            "--pair",
            "Xeon 64-bit:Xeon 32-bit",
            "--pair",
            "Opteron 64-bit:Opteron 32-bit",
            "--avg-from",
            "5",
            "--format",
            "json",
        ],
    );
    // Published: Opteron 64 vs 32 at 10 clients +36 %, AVG -12 % and +32 %, MAX Xeon 64-bit 545.
    let row10 = table["rows"].as_array().unwrap().iter().find(|r| r["concurrency"] == 10).unwrap();
    assert_eq!(row10["delta_pct"]["Opteron 64-bit vs Opteron 32-bit"], 36);
    assert_eq!(table["avg"]["delta_pct"]["Xeon 64-bit vs Xeon 32-bit"], -12);
    assert_eq!(table["avg"]["delta_pct"]["Opteron 64-bit vs Opteron 32-bit"], 32);
    assert_eq!(table["max"]["throughput"]["Xeon 64-bit"], 545.0);
    // An imported run shows as missing latency and errors, not zeros.
    let shown = json(&store, &["show", "Xeon 64-bit", "--json"]);
    assert_matches_schema(&shown);
    assert!(steps(&shown)[0]["latency_ms"].is_null() && steps(&shown)[0]["requests"].is_null());
}

#[test]
fn assertions_pass_and_fail_with_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    assert!(run(&store, &["import", &data("mysql-scaling-g5-tiger-linux-opteron.csv")]).status.success());
    let ok = run(&store, &["show", "G5 Linux", "--assert", "peak >= 400", "--assert", "no collapse"]);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    assert!(stderr(&ok).contains("PASS  peak >= 400"));
    let failed = run(&store, &["show", "G5 Tiger", "--assert", "no collapse"]);
    assert_eq!(failed.status.code(), Some(1));
    assert!(stderr(&failed).contains("FAIL  no collapse"), "{}", stderr(&failed));
    let typo = run(&store, &["show", "G5 Tiger", "--assert", "peek >= 1"]);
    assert_eq!(typo.status.code(), Some(2), "{}", stderr(&typo));
}

#[test]
fn bad_import_file_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.csv");
    std::fs::write(&f, "concurrency,A,B\n1,10,20\n2,x,30\n").unwrap();
    let out = run(&dir.path().join("s.db"), &["import", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("line 3"), "{}", stderr(&out));
    assert!(!dir.path().join("s.db").exists(), "nothing stored from a bad file");
}

/// The comparison table as `compare` prints it, with each run's peak, knee,
/// collapse and main verdict side by side below it, pinned (text and Markdown).
#[test]
fn compare_output_is_pinned() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    assert!(run(&store, &["import", &data("mysql-scaling-g5-tiger-linux-opteron.csv")]).status.success());
    let args = ["compare", "G5 Tiger", "G5 Linux", "Opteron Linux", "--pair", "G5 Linux:G5 Tiger", "--avg-from", "5"];
    let text = run(&store, &args);
    assert!(text.status.success(), "{}", stderr(&text));
    insta::assert_snapshot!("compare_table", String::from_utf8_lossy(&text.stdout));
    let md = run(&store, &[&args[..], &["--format", "md"]].concat());
    assert!(md.status.success(), "{}", stderr(&md));
    insta::assert_snapshot!("compare_md", String::from_utf8_lossy(&md.stdout));
}
