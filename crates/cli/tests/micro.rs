//! `scalelab micro` through the binary: stored, shown, compared.

mod common;

use common::*;

#[test]
fn micro_run_is_stored_shown_and_compared() {
    let _cpu = cpu_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let a = json(&store, &["micro", "--quick", "--only", "procs", "--label", "A", "--json"]);
    let results = a["results"].as_array().unwrap();
    let null_call = results.iter().find(|r| r["id"] == "null_call").unwrap();
    let fork_exit = results.iter().find(|r| r["id"] == "fork_exit").unwrap();
    assert!(null_call["median"].as_f64().unwrap() > 0.0);
    assert!(fork_exit["median"].as_f64().unwrap() > null_call["median"].as_f64().unwrap());
    json(&store, &["micro", "--quick", "--only", "procs", "--label", "B", "--json"]);
    let shown = run(&store, &["show", "A"]);
    assert!(shown.status.success());
    assert!(String::from_utf8_lossy(&shown.stdout).contains("null call"));
    let cmp = run(&store, &["compare", "A", "B", "--baseline", "A"]);
    assert!(cmp.status.success(), "{}", stderr(&cmp));
    let text = String::from_utf8_lossy(&cmp.stdout);
    assert!(text.contains("delta%") && text.contains("fork_exit"), "{text}");
    let listed = String::from_utf8_lossy(&run(&store, &["runs"]).stdout).into_owned();
    assert_eq!(listed.matches("micro").count(), 2, "{listed}");
}

#[test]
fn unknown_group_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&dir.path().join("s.db"), &["micro", "--only", "disk"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("valid groups"), "{}", stderr(&out));
}
