//! What a new user meets first: one table on stdout, progress on stderr,
//! `-q` quiet, units that follow the workload.

mod common;

use common::{run, stderr};

const SHORT: [&str; 8] = ["-c", "1,2", "--warmup", "0.2s", "--duration", "0.3s", "--pause", "0.1s"];

fn sweep(store: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["sweep"];
    args.extend_from_slice(&SHORT);
    args.extend_from_slice(extra);
    let out = run(store, &args);
    assert!(out.status.success(), "sweep failed: {}", stderr(&out));
    out
}

#[test]
fn piped_sweep_prints_the_step_table_once_and_progress_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let out = sweep(&dir.path().join("s.db"), &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let headers = stdout.lines().filter(|l| l.starts_with("concurrency  throughput/s")).count();
    assert_eq!(headers, 1, "one step table on stdout:\n{stdout}");
    let steps_table = stdout.split("telemetry (").next().unwrap();
    let rows_of_1 = steps_table.lines().filter(|l| l.split_whitespace().next() == Some("1")).count();
    assert_eq!(rows_of_1, 1, "the 1-client row once:\n{stdout}");
    // Windows of 0.3 s: beside a CPU hog they may hold no probe sample, and
    // then the table says so rather than vanish.
    let telemetry = stdout.contains("telemetry (") || stdout.contains("telemetry: none for any step");
    assert!(telemetry && stdout.contains("peak "), "telemetry and diagnosis follow:\n{stdout}");
    let err = stderr(&out);
    assert!(err.contains("step 1/2: 1 client\n") && err.contains("step 2/2 c=2 done: "), "progress on stderr:\n{err}");
}

#[test]
fn quiet_sweep_prints_the_step_table_and_the_outcome_only() {
    let dir = tempfile::tempdir().unwrap();
    let out = sweep(&dir.path().join("s.db"), &["-q"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("concurrency  throughput/s"), "starts with the table:\n{stdout}");
    assert!(lines.last().unwrap().starts_with("run 1 completed; stored in "), "ends with the outcome:\n{stdout}");
    assert!(!stdout.contains("telemetry (") && !stdout.contains("peak "), "no telemetry, no diagnosis:\n{stdout}");
    // Nothing on stderr but the preflight's warnings (docs/preflight.md).
    let err = stderr(&out);
    assert!(err.lines().all(|l| l.starts_with("warning: preflight ")), "nothing else on stderr:\n{err}");
}

#[test]
fn an_imported_table_of_queries_says_q_per_s() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let csv = dir.path().join("t.csv");
    std::fs::write(&csv, "# MySQL, queries/s per number of concurrent clients\nconcurrency,G5 Tiger\n1,192\n2,274\n5,113\n10,62\n")
        .unwrap();
    assert!(run(&store, &["import", csv.to_str().unwrap()]).status.success());
    let out = run(&store, &["diagnose", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("peak 274 q/s at 2 clients"), "{text}");
    assert!(!text.contains("req/s"), "{text}");
    // The run is named once, in the header.
    assert_eq!(text.matches("G5 Tiger").count(), 1, "{text}");
}

#[test]
fn at_80_columns_tables_and_verdicts_fit_and_no_column_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let args = ["sweep", "--specimen", "global-lock", "-c", "1,2,4,8", "--warmup", "0.2s", "--duration", "0.5s", "--pause", "0.1s"];
    assert!(run(&store, &args).status.success());
    for cmd in ["show", "diagnose"] {
        let out = common::bin().arg("--store").arg(&store).args([cmd, "last"]).env("COLUMNS", "80").output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
        assert!(widest <= 80, "{cmd} at COLUMNS=80 has a {widest}-column line:\n{text}");
        if cmd == "show" {
            for column in ["throughput/s", "p99.9", "errors", "cpu busy", "futex", "client lag"] {
                assert!(text.contains(column), "{cmd}: column {column} kept:\n{text}");
            }
            // No database, no DB waits column; each CPU column's basis is said once.
            assert!(!text.contains("DB waits"), "{text}");
            // (The legend is wrapped at 80 columns: read it as words.)
            let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(words.contains("% of all") && words.contains("% of one core"), "{text}");
        }
        assert!(text.contains("peak "), "{text}");
        // Unlimited width when stdout is a pipe and COLUMNS is not set: one line per row.
        let wide = common::bin().arg("--store").arg(&store).args([cmd, "last"]).env_remove("COLUMNS").output().unwrap();
        let wide = String::from_utf8_lossy(&wide.stdout);
        if cmd == "show" {
            assert!(wide.lines().any(|l| l.starts_with("concurrency") && l.contains("p99.9") && l.contains("errors")), "{wide}");
        }
    }
}

/// Two short specimen sweeps with one label, ids 1 and 2.
fn two_runs_with_one_label(store: &std::path::Path) {
    for _ in 0..2 {
        let out = run(store, &["sweep", "-c", "1,2", "--warmup", "0.1s", "--duration", "0.3s", "--pause", "0s", "-q", "--label", "same"]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
}

#[test]
fn compare_of_two_runs_shows_the_delta_by_default_formatted_like_show() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    two_runs_with_one_label(&store);
    let out = run(&store, &["compare", "1", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let header = text.lines().next().unwrap();
    assert!(header.contains("same #1") && header.contains("same #2") && header.contains("same #2 vs same #1"), "{text}");
    assert!(text.contains("same #2 vs same #1: 100 x (same #2/same #1 - 1), same #1 the baseline"), "stated once: {text}");
    // At 80 columns it fits, split into blocks of whole columns as `show` is.
    let narrow = common::bin().arg("--store").arg(&store).args(["compare", "1", "2"]).env("COLUMNS", "80").output().unwrap();
    let narrow = String::from_utf8_lossy(&narrow.stdout);
    assert!(narrow.lines().all(|l| l.chars().count() <= 80), "{narrow}");
    assert!(narrow.contains("same #2 vs same #1"), "no column dropped: {narrow}");
    for cmd in [vec!["--help"], vec!["sweep", "--help"], vec!["compare", "--help"]] {
        let help = common::bin().args(&cmd).env("COLUMNS", "80").output().unwrap();
        let help = String::from_utf8_lossy(&help.stdout);
        assert!(help.lines().all(|l| l.chars().count() <= 80), "{cmd:?} wraps at 80: {help}");
    }

    // The report of the same two runs: the same column, so the same sign.
    let md = dir.path().join("r.md");
    let rep = run(&store, &["report", "1", "2", "-o", md.to_str().unwrap()]);
    assert!(rep.status.success(), "{}", stderr(&rep));
    let page = std::fs::read_to_string(&md).unwrap();
    assert!(page.contains("same #2 vs same #1") && !page.contains("same #1 vs same #2"), "{page}");
    assert!(text.match_indices("same").all(|(i, _)| text[i + 4..].starts_with(" #")), "never a bare 'same' beside 'same #2': {text}");
    let row = text.lines().find(|l| l.starts_with("2 ")).unwrap();
    let first = row.split_whitespace().nth(1).unwrap();
    // The same cell as `show 1` prints for 2 clients (12,345; 777 below a
    // thousand: beside a CPU hog compare printed 776.7 where show said 777).
    let shown = run(&store, &["show", "1"]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    let show_row = shown.lines().find(|l| l.starts_with("2 ")).unwrap_or_else(|| panic!("{shown}"));
    assert_eq!(first, show_row.split_whitespace().nth(1).unwrap(), "throughput like show's: {row} / {show_row}");
    assert!(!first.contains('.'), "whole, as show prints it: {row}");
    assert!(row.trim_end().ends_with('%'), "a delta cell: {row}");

    // --pair takes ids; --assert checks the delta, exit 1 when it fails.
    let ok = run(&store, &["compare", "1", "2", "--pair", "1:2", "--assert", "delta_pct@2 >= -99"]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(String::from_utf8_lossy(&ok.stdout).lines().next().unwrap().contains("same #1 vs same #2"));
    assert!(stderr(&ok).contains("PASS  delta_pct@2 >= -99"), "{}", stderr(&ok));
    let fail = run(&store, &["compare", "1", "2", "--assert", "delta_pct@2 >= 1000"]);
    assert_eq!(fail.status.code(), Some(1), "{}", stderr(&fail));
    assert!(stderr(&fail).contains("FAIL  delta_pct@2 >= 1000"), "{}", stderr(&fail));
    let missing = run(&store, &["compare", "1", "2", "--assert", "delta_pct@7 >= 0"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(stderr(&missing).contains("no data: no step at 7 clients"), "{}", stderr(&missing));
    let bad = run(&store, &["compare", "1", "2", "--assert", "delta_pct@2 => 0"]);
    assert_eq!(bad.status.code(), Some(2), "a malformed assertion is bad input: {}", stderr(&bad));
}

#[test]
fn export_csv_carries_the_step_telemetry_and_series_needs_csv() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let args = ["sweep", "-c", "1,2", "--warmup", "0.2s", "--duration", "0.6s", "--pause", "0.1s", "-q", "--sample-interval", "100ms"];
    assert!(run(&store, &args).status.success());
    let out = run(&store, &["export", "last", "--format", "csv"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    for column in [
        "cpu_busy_pct",
        "cpu_user_pct",
        "cpu_sys_pct",
        "server_cs_per_request",
        "threads_futex_pct",
        "disk_iops",
        "net_mb_per_s",
        "db_top_wait",
        "throughput_unit",
    ] {
        assert!(header.contains(&column), "column {column} in {header:?}");
    }
    let busy = header.iter().position(|c| *c == "cpu_busy_pct").unwrap();
    let unit = header.iter().position(|c| *c == "throughput_unit").unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert_eq!(r.len(), header.len(), "{r:?}");
        assert_eq!(r[unit], "req/s");
    }
    let measured: f64 = rows[1][busy].parse().unwrap_or_else(|_| panic!("cpu busy measured at 2 clients: {:?}", rows[1]));
    assert!(measured > 0.0 && measured <= 100.0, "{measured}");

    let series = run(&store, &["export", "last", "--series"]);
    assert!(series.status.success());
    assert!(String::from_utf8_lossy(&series.stdout).starts_with("run_id,concurrency,second,"), "--series alone is the CSV series");
    let refused = run(&store, &["export", "last", "--series", "--format", "json"]);
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(stderr(&refused).lines().count(), 1, "{}", stderr(&refused));
}

#[test]
fn a_recorded_watch_is_a_run_show_and_export_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let mut specimen = common::bin()
        .args(["specimen", "--port", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(specimen.stdout.take().unwrap()), &mut first).unwrap();
    let port = first.split("127.0.0.1:").nth(1).and_then(|r| r.split_whitespace().next()).expect("listening line").to_string();
    let out = run(&store, &["watch", "--port", &port, "-d", "2.6s", "--interval", "500ms", "--record"]);
    let _ = specimen.kill();
    let _ = specimen.wait();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("pid {} (scalelab)", specimen.id())), "names the process: {text}");
    // Every row lines up under the header: the figures end where their titles end.
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("time") || l.chars().next().is_some_and(|c| c.is_ascii_digit())).collect();
    assert!(lines.len() >= 4, "{text}");
    let end_of = |title: &str| lines[0].find(title).unwrap() + title.len();
    for title in ["cs/s", "server cpu", "time_wait", "net MB/s"] {
        let end = end_of(title);
        for l in &lines[1..] {
            let c = l.as_bytes()[end - 1] as char;
            assert!(c != ' ' && l.as_bytes().get(end).is_none_or(|b| *b == b' '), "`{title}` column aligned in:\n{}\n{l}", lines[0]);
        }
    }

    let csv = run(&store, &["export", "last", "--series"]);
    assert!(csv.status.success(), "{}", stderr(&csv));
    let csv = String::from_utf8_lossy(&csv.stdout);
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert!(rows.len() >= 3, "a row per interval: {csv}");
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let busy = header.iter().position(|c| *c == "cpu_busy_pct").unwrap();
    assert!(rows.iter().all(|r| r.split(',').nth(busy).unwrap().parse::<f64>().is_ok()), "{csv}");

    let doc = common::json(&store, &["export", "last"]);
    assert!(doc["samples"].as_array().is_some_and(|s| s.len() >= 3), "{doc}");
    assert!(doc["summary"]["cpu_busy_pct"].as_f64().is_some(), "{doc}");
    let show = run(&store, &["show", "last"]);
    assert!(String::from_utf8_lossy(&show.stdout).contains("per interval ("), "{}", String::from_utf8_lossy(&show.stdout));

    let html = dir.path().join("w.html");
    let report = run(&store, &["report", "last", "-o", html.to_str().unwrap()]);
    assert!(report.status.success(), "report of a watch: {}", stderr(&report));
    let page = std::fs::read_to_string(&html).unwrap();
    let cpu = page.find("timeline-cpu\"><svg").map(|i| &page[i..]).expect("the CPU timeline is drawn");
    assert!(cpu[..cpu.find("</svg>").unwrap()].contains("<polyline"), "with lines");
}
