//! `scalelab import` of files that are no published table (issue 39): a
//! value past any server, a concurrency no sweep runs, more rows than a
//! comparison can use are refused with one line and exit 2, nothing stored;
//! a large table that is accepted costs memory in proportion to its
//! figures when it is shown (an imported step carries no histogram).

mod common;

use common::*;
use std::path::Path;

/// `scalelab --store STORE ARGS` with its stdout in a file; returns its
/// exit code and its peak resident size in KB (the kernel's ru_maxrss of
/// the child, read when it is reaped).
fn peak_rss_kb(store: &Path, args: &[&str], stdout: &Path) -> (i32, i64) {
    let out = std::fs::File::create(stdout).unwrap();
    let child = bin().arg("--store").arg(store).args(args).stdout(out).spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain old data; all zeroes is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child by its pid, writing into two live locals;
    // `child` is never waited for again (it is forgotten below).
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    std::mem::forget(child);
    assert_eq!(reaped, pid, "wait4: {}", std::io::Error::last_os_error());
    assert!(libc::WIFEXITED(status), "scalelab {args:?} did not exit: status {status}");
    (libc::WEXITSTATUS(status), usage.ru_maxrss)
}

#[test]
fn absurd_figures_and_sizes_are_refused_with_one_line_and_nothing_stored() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let rows = (1..=10_001).fold(String::from("concurrency,big\n"), |t, c| t + &format!("{c},{c}\n"));
    let columns = (0..1001).fold(String::from("concurrency"), |t, i| t + &format!(",r{i}")) + "\n";
    for (name, text, says) in [
        (
            "huge.csv",
            "concurrency,x\n1,1e308\n".to_string(),
            "line 2, column 2 (`x`): `1e308` is not a throughput (a number from 0 to below 1e12",
        ),
        ("inf.csv", "concurrency,x\n1,inf\n".to_string(), "`inf` is not a throughput"),
        (
            "clients.csv",
            "concurrency,x\n1,5\n200000,7\n".to_string(),
            "line 3, column 1 (concurrency): `200000` is not an integer from 1 to 100000",
        ),
        ("rows.csv", rows, "line 10002: more than 10000 step rows"),
        ("columns.csv", columns, "line 1: 1001 run columns, at most 1000 are imported"),
    ] {
        let csv = dir.path().join(name);
        std::fs::write(&csv, text).unwrap();
        assert_bad_input(&store, &["import", csv.to_str().unwrap()], says);
    }
    // Into an existing store: still nothing added.
    let ok = dir.path().join("ok.csv");
    std::fs::write(&ok, "concurrency,fine\n1,10\n2,19\n").unwrap();
    assert!(run(&store, &["import", ok.to_str().unwrap()]).status.success());
    let huge = dir.path().join("huge.csv");
    let out = run(&store, &["import", huge.to_str().unwrap()]);
    assert_eq!((out.status.code(), stderr(&out).lines().count()), (Some(2), 1), "{}", stderr(&out));
    let runs = String::from_utf8_lossy(&run(&store, &["runs"]).stdout).into_owned();
    assert!(runs.contains("fine") && !runs.contains(" x "), "{runs}");
}

/// 10,000 rows, the most a series holds: imported, then shown and exported
/// with a peak resident size far below what a histogram per step cost
/// (364 MB for `show`, 355 MB for `export --format csv`). The bound is
/// generous: with empty histograms allocating nothing they peaked at 42 MB
/// and 32 MB (debug build).
#[test]
fn ten_thousand_imported_rows_show_in_memory_proportional_to_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let csv = dir.path().join("big.csv");
    let text = (1..=10_000).fold(String::from("# requests/s\nconcurrency,big\n"), |t, c| t + &format!("{c},{}\n", c as f64 * 1.5));
    std::fs::write(&csv, text).unwrap();
    let out = run(&store, &["import", csv.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("(10000 steps) imported"));
    for args in [&["show", "big"][..], &["export", "big", "--format", "csv"]] {
        let shown = dir.path().join("out.txt");
        let (code, kb) = peak_rss_kb(&store, args, &shown);
        assert_eq!(code, 0, "{args:?}");
        let text = std::fs::read_to_string(&shown).unwrap();
        assert!(text.lines().count() >= 10_000, "{args:?}: every step shown");
        eprintln!("scalelab {args:?} of 10,000 imported steps: peak {kb} KB resident");
        assert!(kb < 120_000, "scalelab {args:?} of 10,000 imported steps peaked at {kb} KB: a histogram per step again?");
    }
}
