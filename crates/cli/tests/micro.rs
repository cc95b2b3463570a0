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

/// Process creation is measured from a small helper, the same executable
/// started afresh in a tiny mode (one thread, a few MB), not from scalelab's
/// own big process, so `fork_exit` is the OS's cost as lmbench's `lat_proc
/// fork` is. The helper speaks a line protocol: greeting, then "N" → seconds.
#[test]
fn process_creation_is_forked_from_a_small_helper() {
    use std::io::{BufRead, BufReader, Write};
    let mut helper = std::process::Command::new(env!("CARGO_BIN_EXE_scalelab"))
        .args(["__scalelab-micro-helper", "exit"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut to = helper.stdin.take().unwrap();
    let mut from = BufReader::new(helper.stdout.take().unwrap());
    let mut line = String::new();
    from.read_line(&mut line).unwrap();
    assert_eq!(line.trim_end(), "scalelab-micro-helper 1");
    let status = std::fs::read_to_string(format!("/proc/{}/status", helper.id())).unwrap();
    let field = |k: &str| status.lines().find(|l| l.starts_with(k)).unwrap().split_whitespace().nth(1).unwrap().parse::<u64>().unwrap();
    assert_eq!(field("Threads:"), 1, "the helper forks from a single-threaded process");
    assert!(field("VmRSS:") < 16 * 1024, "the helper is small: {} kB", field("VmRSS:"));
    writeln!(to, "50").unwrap();
    line.clear();
    from.read_line(&mut line).unwrap();
    let secs: f64 = line.trim().parse().unwrap_or_else(|_| panic!("not seconds: {line:?}"));
    assert!(secs > 0.0 && secs < 5.0, "{secs}");
    drop(to); // EOF: the helper exits
    assert!(helper.wait().unwrap().success());

    // And `micro` uses it: no figure says it was forked in-process.
    let dir = tempfile::tempdir().unwrap();
    let run = json(&dir.path().join("s.db"), &["micro", "--quick", "--only", "procs", "--json"]);
    for id in ["fork_exit", "fork_exec", "fork_sh"] {
        let r = run["results"].as_array().unwrap().iter().find(|r| r["id"] == id).unwrap();
        assert!(r["median"].as_f64().is_some(), "{r}");
        assert!(!r["warning"].as_str().unwrap_or("").contains("own process"), "{r}");
    }
}

/// Two micro runs with one label (the default label is the host name: every
/// before/after on one host) are two columns with deltas, named apart by id.
#[test]
fn two_micro_runs_with_one_label_compare_as_two_columns() {
    let _cpu = cpu_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let a = json(&store, &["micro", "--quick", "--only", "procs", "--json"]);
    let b = json(&store, &["micro", "--quick", "--only", "procs", "--json"]);
    let (ida, idb) = (1, 2); // a fresh store numbers runs from 1
    assert_eq!(a["label"], b["label"], "both carry the default label");
    let host = a["label"].as_str().unwrap();
    let c = json(&store, &["compare", &ida.to_string(), &idb.to_string(), "--format", "json"]);
    assert_eq!(c["baseline"], format!("{host} #{ida}"));
    assert_eq!(c["labels"], serde_json::json!([format!("{host} #{idb}")]));
    let fork = c["rows"].as_array().unwrap().iter().find(|r| r["id"] == "fork_exit").unwrap();
    assert!(fork["cells"][0]["delta_pct"].is_i64(), "{fork}");
    // The baseline named by id; the text has both columns.
    let out = run(&store, &["compare", &ida.to_string(), &idb.to_string(), "--baseline", &idb.to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("Compared with {host} #{idb}")) && text.contains(&format!("{host} #{ida}")), "{text}");
}

/// The OS column names the kernel release and distribution (it was "-"),
/// and the JSON carries the contradictions found (none expected for procs).
#[test]
fn micro_tables_fill_the_os_column_and_json_lists_anomalies() {
    let _cpu = cpu_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let j = json(&store, &["micro", "--quick", "--only", "procs", "--label", "box", "--json"]);
    assert!(j["anomalies"].is_array(), "{j}");
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let shown = run(&store, &["show", "box"]);
    let text = String::from_utf8_lossy(&shown.stdout);
    let row = text.lines().find(|l| l.starts_with("box")).unwrap_or_else(|| panic!("{text}"));
    // The table shows the kernel's version (6.18.44 of 6.18.44-fc-v782), the JSON the whole release.
    let version: String = release.trim().chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    assert!(row.contains(&format!("Linux {version}")), "{row}");
}
