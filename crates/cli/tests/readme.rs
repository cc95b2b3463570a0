//! The README's tour runs as written: every line of the block marked
//! `<!-- tour: runs here -->` is run through `sh`, in order, in one fresh
//! folder, with `scalelab` on PATH, and must exit 0. Sweeps get short
//! windows appended (the tour's own take about 30 s each); nothing else is
//! changed. The lines that need a server of the user's live in the next
//! block, which says so, and are not run.

mod common;

use common::cpu_exclusive;
use std::path::Path;
use std::process::Command;

/// The lines of the runnable block, continuation lines joined.
fn tour() -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap();
    let start = readme.find("<!-- tour: runs here -->").expect("the README marks its runnable tour");
    let block = &readme[start..];
    let open = block.find("```sh\n").expect("a sh block after the marker") + "```sh\n".len();
    let close = block[open..].find("```").expect("the block ends");
    let mut lines = Vec::new();
    let mut pending = String::new();
    for raw in block[open..open + close].lines() {
        let line = without_comment(raw);
        if let Some(head) = line.trim_end().strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(line.trim());
        if !pending.trim().is_empty() {
            lines.push(pending.trim().to_string());
        }
        pending.clear();
    }
    lines
}

/// `line` without its shell comment: a `#` after whitespace, outside quotes.
fn without_comment(line: &str) -> &str {
    let (mut single, mut double, mut prev_space) = (false, false, true);
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev_space => return &line[..i],
            _ => {}
        }
        prev_space = c.is_whitespace();
    }
    line
}

#[test]
fn comments_and_quotes_are_read_as_the_shell_reads_them() {
    assert_eq!(without_comment("scalelab sweep   # a comment"), "scalelab sweep   ");
    assert_eq!(without_comment("scalelab x --slo 'p99<=20ms' # c"), "scalelab x --slo 'p99<=20ms' ");
    assert_eq!(without_comment("scalelab x -H 'a # b'"), "scalelab x -H 'a # b'");
    assert_eq!(without_comment("scalelab x a#b"), "scalelab x a#b");
}

#[test]
fn every_line_of_the_readme_tour_runs_and_exits_0() {
    // The tour's sweeps (16 clients, a profile) load both cores for a minute:
    // the statistical tests beside it would measure it, not themselves.
    let _cpu = cpu_exclusive();
    let lines = tour();
    assert!(lines.len() >= 15, "the tour shrank to {} lines: {lines:?}", lines.len());
    let dir = tempfile::tempdir().unwrap();
    let bin_dir = dir.path().join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_scalelab"), bin_dir.join("scalelab")).unwrap();
    let work = dir.path().join("tour");
    std::fs::create_dir(&work).unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    std::os::unix::fs::symlink(examples.canonicalize().unwrap(), work.join("examples")).unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    for line in &lines {
        assert!(line.starts_with("scalelab "), "a tour line that is not scalelab: {line}");
        assert!(!line.contains("...") && !line.contains('['), "not copy-and-run: {line}");
        // Short windows, and three levels where the line gives none: the
        // tour's sweeps take 30 s each as written (the profiled one 50 s in a
        // debug build, perf's stacks of a debug binary folded per step).
        let command = if line.starts_with("scalelab sweep") {
            let levels = if [" -c ", " --rate ", " --concurrency "].iter().any(|o| line.contains(o)) { "" } else { " -c 1,4,16" };
            format!("{line}{levels} --warmup 100ms --duration 300ms --pause 0s --no-tui")
        } else {
            line.clone()
        };
        let out =
            Command::new("sh").arg("-c").arg(&command).current_dir(&work).env("PATH", &path).env_remove("SCALELAB_STORE").output().unwrap();
        assert!(
            out.status.success(),
            "README line failed ({:?}): {command}\nstdout:\n{}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(work.join("scalelab.db").is_file() && work.join("report.html").is_file());
}
