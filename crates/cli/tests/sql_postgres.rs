//! `prepare` and `sweep` against a real PostgreSQL 15 that the test starts
//! itself (initdb into a temp dir, free loopback port).

mod common;

use common::{run, stderr};
use scalelab_testkit::postgres::Postgres;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

fn ok(store: &Path, args: &[&str]) -> String {
    let out = run(store, args);
    assert!(out.status.success(), "scalelab {args:?} failed ({:?}): {}", out.status.code(), stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A short sweep printed as JSON.
fn sweep(store: &Path, url: &str, conc: &str, window: &str, extra: &[&str]) -> Value {
    let mut args = vec!["sweep", url, "-c", conc, "--warmup", "0", "--pause", "0", "-d", window, "--json", "-q", "--threads", "2"];
    args.extend_from_slice(extra);
    let out = ok(store, &args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

fn steps(run: &Value) -> &Vec<Value> {
    run["steps"].as_array().expect("steps[]")
}

fn total(run: &Value, field: &str) -> u64 {
    steps(run).iter().map(|s| s[field].as_u64().unwrap_or(0)).sum()
}

#[test]
fn prepare_and_sweep_every_workload() {
    let pg = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = pg.url();
    let out = ok(&store, &["prepare", &url, "--dataset", "sbtest", "--scale", "2", "--rows", "3000", "-q"]);
    assert!(out.contains("2 table(s)"), "{out}");
    // Same shape as sysbench's tables: id, k, c char(120), pad char(60), index k_1.
    assert_eq!(pg.psql("bench", "SELECT count(*), max(length(c)), max(length(pad)) FROM sbtest2"), "3000|119|59");
    assert_eq!(pg.psql("bench", "SELECT indexname FROM pg_indexes WHERE tablename = 'sbtest1' AND indexname = 'k_1'"), "k_1");
    assert_eq!(
        pg.psql(
            "bench",
            "SELECT character_maximum_length FROM information_schema.columns WHERE table_name = 'sbtest1' AND column_name = 'c'"
        ),
        "120"
    );
    // An existing dataset is not overwritten without --force.
    let again = run(&store, &["prepare", &url, "--dataset", "sbtest", "--scale", "1", "--rows", "10"]);
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    assert!(stderr(&again).contains("already exists") && stderr(&again).contains("--force"), "{}", stderr(&again));
    ok(&store, &["prepare", &url, "--dataset", "pgbench", "--scale", "2", "--rows", "5000", "-q"]);
    assert_eq!(pg.psql("bench", "SELECT count(*) FROM pgbench_accounts"), "10000");
    assert_eq!(pg.psql("bench", "SELECT count(*) FROM pgbench_tellers"), "20");

    ok(&store, &["prepare", &url, "--dataset", "news", "--scale", "1", "--rows", "300", "-q"]);
    assert_eq!(pg.psql("bench", "SELECT count(*) FROM news_comments"), "1500");
    for (workload, per_unit) in
        [("point-select", 1), ("read-only", 16), ("hot-row", 1), ("write", 6), ("pgbench-select", 1), ("pgbench-tpcb", 7), ("news-read", 1)]
    {
        let doc = sweep(&store, &url, "1,3", "300ms", &["--workload", workload]);
        assert_eq!(doc["target"], url.as_str());
        for s in steps(&doc) {
            let (req, q) = (s["requests"].as_u64().unwrap(), s["queries"].as_u64().unwrap());
            assert!(req > 0, "{workload}: no unit completed: {s}");
            assert_eq!(q, req * per_unit, "{workload}: statements per unit");
            if workload == "write" {
                // As with sysbench (which ignores them), concurrent DELETE + INSERT of
                // random ids can deadlock or collide on the primary key now and then.
                let errors = s["errors_total"].as_u64().unwrap();
                let real = s["errors"]["deadlock"].as_u64().unwrap_or(0) + s["errors"]["sql_error"].as_u64().unwrap_or(0);
                assert!(errors == real && errors * 20 <= req, "{workload}: {s}");
            } else {
                assert_eq!(s["errors_total"], 0, "{workload}: {s}");
            }
        }
    }
    assert!(pg.psql("bench", "SELECT count(*) FROM pgbench_history").parse::<u64>().unwrap() > 0);
    // Text queries with literals instead of prepared statements.
    let doc = sweep(&store, &url, "2", "300ms", &["--workload", "read-only", "--no-prepare"]);
    assert!(total(&doc, "queries") > 0 && total(&doc, "errors_total") == 0, "{doc}");
    // --drop removes the dataset.
    let out = ok(&store, &["prepare", &url, "--dataset", "sbtest", "--drop"]);
    assert!(out.contains("sbtest1") && out.contains("sbtest2"), "{out}");
    assert_eq!(pg.psql("bench", "SELECT count(*) FROM information_schema.tables WHERE table_name LIKE 'sbtest%'"), "0");
}

#[test]
fn counted_queries_match_the_servers_commits() {
    let pg = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = pg.url();
    ok(&store, &["prepare", &url, "--dataset", "sbtest", "--scale", "1", "--rows", "2000", "-q"]);
    let commits = || pg.psql("postgres", "SELECT xact_commit FROM pg_stat_database WHERE datname = 'bench'").parse::<u64>().unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    let before = commits();
    let doc = sweep(&store, &url, "1,4", "500ms", &["--workload", "point-select"]);
    // Backends flush their counters when they exit (clients close at the window's end).
    std::thread::sleep(Duration::from_millis(1500));
    let delta = commits() - before;
    let counted = total(&doc, "queries");
    eprintln!("server counted {delta}, scalelab counted {counted}");
    assert!(counted > 100, "{doc}");
    // Each autocommit SELECT is one server transaction. Besides the window,
    // the server also sees: statements in flight when a window ends (<= 5),
    // the implicit transaction of each Parse (3 per connection, 6 connections),
    // and the preflight's few catalog queries.
    assert!(delta >= counted, "server committed {delta} < counted {counted}");
    assert!(delta - counted <= 5 + 18 + 12, "server committed {delta}, scalelab counted {counted}");
}

#[test]
fn real_deadlocks_and_bad_input() {
    let pg = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = pg.url();
    ok(&store, &["prepare", &url, "--dataset", "sbtest", "--scale", "1", "--rows", "100", "-q"]);
    // Two rows updated in random order inside a transaction: a deadlock recipe.
    let wl = dir.path().join("deadlock.toml");
    std::fs::write(
        &wl,
        r#"name = "deadlock"
[[unit]]
transaction = true
sql = ["UPDATE sbtest1 SET k = k + 1 WHERE id = {a}", "SELECT pg_sleep(0.01)", "UPDATE sbtest1 SET k = k + 1 WHERE id = 3 - {a}"]
params.a = { kind = "pick", values = [1, 2] }
"#,
    )
    .unwrap();
    let doc = sweep(&store, &url, "8", "1500ms", &["--workload-file", wl.to_str().unwrap()]);
    let s = &steps(&doc)[0];
    assert!(s["errors"]["deadlock"].as_u64().unwrap_or(0) > 0, "no deadlock: {s}");
    assert!(s["error_messages"]["deadlock"].as_str().unwrap().contains("deadlock detected"), "{s}");
    assert!(s["requests"].as_u64().unwrap() > 0, "{s}");

    // Bad input: one line, exit 2, nothing stored.
    let fresh = dir.path().join("none.db");
    let bad_db = url.replace("/bench", "/nosuchdb");
    let port = scalelab_testkit::free_port();
    let unreachable = format!("postgres://postgres@127.0.0.1:{port}/bench");
    let bad_sql = dir.path().join("bad.toml");
    std::fs::write(
        &bad_sql,
        "[[unit]]\nsql = \"SELECT nosuchcolumn FROM sbtest1 WHERE id = {id}\"\nparams.id = { kind = \"uniform\", min = 1, max = 10 }\n",
    )
    .unwrap();
    let bad_gen = dir.path().join("gen.toml");
    std::fs::write(&bad_gen, "[[unit]]\nsql = \"SELECT {id}\"\n\nparams.id = { kind = \"poisson\", min = 1 }\n").unwrap();
    let bad_syntax = dir.path().join("syntax.toml");
    std::fs::write(&bad_syntax, "[[unit]]\nweight = 2\nsql = \"SELECT 1\n").unwrap();
    for (target, extra, expect) in [
        (bad_db.as_str(), vec!["--workload", "point-select"], "\"nosuchdb\" does not exist"),
        (unreachable.as_str(), vec!["--workload", "point-select"], "refused"),
        (url.as_str(), vec!["--workload", "nosuch"], "unknown workload 'nosuch'"),
        (url.as_str(), vec!["--workload", "pgbench-select"], "--dataset pgbench"),
        (url.as_str(), vec!["--workload-file", bad_sql.to_str().unwrap()], "nosuchcolumn"),
        (url.as_str(), vec!["--workload-file", bad_gen.to_str().unwrap()], "gen.toml:4:"),
        (url.as_str(), vec!["--workload-file", bad_syntax.to_str().unwrap()], "syntax.toml:3:"),
    ] {
        let mut args = vec!["sweep", target, "-c", "1", "-d", "200ms"];
        args.extend(extra);
        let out = run(&fresh, &args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: expected '{expect}' in: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
        assert!(!fresh.exists(), "{args:?}: a store was created");
    }
}

#[test]
fn too_many_connections_and_a_killed_server() {
    let pg = Postgres::start_with(5);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = pg.url();
    ok(&store, &["prepare", &url, "--dataset", "sbtest", "--scale", "1", "--rows", "100", "-q"]);
    let doc = sweep(&store, &url, "10", "300ms", &["--workload", "point-select"]);
    let s = &steps(&doc)[0];
    assert!(s["errors"]["too_many_connections"].as_u64().unwrap_or(0) > 0, "{s}");
    assert!(s["error_messages"]["too_many_connections"].as_str().unwrap().contains("too many clients"), "{s}");
    assert!(s["requests"].as_u64().unwrap() > 0, "{s}");

    // Terminated backends: the clients see connection_lost and reconnect.
    let child = common::bin()
        .arg("--store")
        .arg(&store)
        .args(["sweep", &url, "-c", "2", "--warmup", "0", "-d", "1500ms", "--json", "-q", "--workload", "point-select"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let killed = pg.psql("postgres", "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'scalelab'");
    assert_eq!(killed, "2");
    let out = child.wait_with_output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    let s = &steps(&doc)[0];
    assert!(s["errors"]["connection_lost"].as_u64().unwrap_or(0) >= 2, "{s}");
    // "terminating connection due to administrator command (57P01)", or "connection
    // closed" when the backend went away between two statements.
    let msg = s["error_messages"]["connection_lost"].as_str().unwrap();
    assert!(msg.contains("57P01") || msg.contains("closed"), "{s}");
    assert_eq!(s["reconnects"], 2, "{s}");

    // Kill the server in the middle of a window.
    let child = common::bin()
        .arg("--store")
        .arg(&store)
        .args(["sweep", &url, "-c", "2", "--warmup", "0", "-d", "2s", "--json", "-q", "--workload", "point-select"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    pg.kill();
    let out = child.wait_with_output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    let s = &steps(&doc)[0];
    assert!(s["requests"].as_u64().unwrap() > 0, "{s}");
    assert!(s["errors"]["connection_lost"].as_u64().unwrap_or(0) > 0, "{s}");
    assert!(s["errors"]["connect_refused"].as_u64().unwrap_or(0) > 0, "{s}");
}
