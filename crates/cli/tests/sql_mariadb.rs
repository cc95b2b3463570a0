//! `prepare` and `sweep` against a real MariaDB 10.11 that the test starts
//! itself (mariadb-install-db into a temp dir, free loopback port).

mod common;

use common::{run, stderr};
use scalelab_testkit::mariadb::MariaDb;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

fn ok(store: &Path, args: &[&str]) -> String {
    let out = run(store, args);
    assert!(out.status.success(), "scalelab {args:?} failed ({:?}): {}", out.status.code(), stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn sweep(store: &Path, url: &str, conc: &str, window: &str, extra: &[&str]) -> Value {
    let mut args = vec!["sweep", url, "-c", conc, "--warmup", "0", "--pause", "0", "-d", window, "--json", "-q", "--threads", "2"];
    args.extend_from_slice(extra);
    let out = ok(store, &args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// A sweep whose point is its errors: exit 0, or exit 1 when errors
/// dominate a step (the run failed, its document still printed).
fn sweep_with_errors(store: &Path, url: &str, conc: &str, window: &str, extra: &[&str]) -> Value {
    let mut args = vec!["sweep", url, "-c", conc, "--warmup", "0", "--pause", "0", "-d", window, "--json", "-q", "--threads", "2"];
    args.extend_from_slice(extra);
    let out = run(store, &args);
    let err = stderr(&out);
    assert!(out.status.code() == Some(0) || (out.status.code() == Some(1) && err.contains("failed: step")), "{args:?}: {err}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {err}"))
}

fn steps(run: &Value) -> &Vec<Value> {
    run["steps"].as_array().expect("steps[]")
}

fn total(run: &Value, field: &str) -> u64 {
    steps(run).iter().map(|s| s[field].as_u64().unwrap_or(0)).sum()
}

#[test]
fn prepare_and_sweep_every_workload() {
    let my = MariaDb::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = my.url();
    let out = ok(&store, &["prepare", &url, "--dataset", "sbtest", "--scale", "2", "--rows", "3000", "-q"]);
    assert!(out.contains("2 table(s)") && !out.contains("bench:bench"), "{out}");
    assert_eq!(my.root_sql("SELECT COUNT(*), MAX(LENGTH(c)), MAX(LENGTH(pad)) FROM bench.sbtest2"), "3000\t119\t59");
    assert_eq!(my.root_sql("SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = 'bench' AND table_name = 'sbtest1' AND index_name = 'k_1'"), "1");
    assert_eq!(
        my.root_sql("SELECT ENGINE FROM information_schema.tables WHERE table_schema = 'bench' AND table_name = 'sbtest1'"),
        "InnoDB"
    );
    ok(&store, &["prepare", &url, "--dataset", "pgbench", "--scale", "2", "--rows", "5000", "-q"]);
    assert_eq!(my.root_sql("SELECT COUNT(*) FROM bench.pgbench_accounts"), "10000");

    ok(&store, &["prepare", &url, "--dataset", "news", "--scale", "1", "--rows", "300", "-q"]);
    assert_eq!(my.root_sql("SELECT COUNT(*) FROM bench.news_comments"), "1500");
    for (workload, per_unit) in
        [("point-select", 1), ("read-only", 16), ("hot-row", 1), ("write", 6), ("pgbench-select", 1), ("pgbench-tpcb", 7), ("news-read", 1)]
    {
        let doc = sweep(&store, &url, "1,3", "300ms", &["--workload", workload]);
        assert_eq!(doc["target"], "mysql://bench@127.0.0.1:".to_string() + &my.port.to_string() + "/bench");
        // A thread per connection: never short of workers.
        common::assert_no_pool_verdicts(&doc, workload);
        for s in steps(&doc) {
            let (req, q) = (s["requests"].as_u64().unwrap(), s["queries"].as_u64().unwrap());
            assert!(req > 0, "{workload}: no unit completed: {s}");
            assert_eq!(q, req * per_unit, "{workload}: statements per unit");
            // Transactions keep each statement's latency: every statement of every
            // unit that completed in the window, BEGIN and COMMIT aside.
            let stmts = s["statements"].as_array().expect("statements[]");
            let timed: u64 = stmts.iter().map(|x| x["count"].as_u64().unwrap()).sum();
            if ["read-only", "write", "pgbench-tpcb"].contains(&workload) {
                assert_eq!(timed, req * (per_unit - 2), "{workload}: {s}");
                assert!(stmts.iter().all(|x| x["p99_ms"].as_f64().unwrap() >= x["p50_ms"].as_f64().unwrap()), "{s}");
            } else {
                assert!(stmts.is_empty(), "{workload}: {s}");
            }
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
    let doc = sweep(&store, &url, "2", "300ms", &["--workload", "write", "--no-prepare"]);
    assert!(total(&doc, "queries") > 0 && total(&doc, "errors_total") == 0, "{doc}");
    common::assert_no_pool_verdicts(&doc, "write --no-prepare");
    // Over the unix socket, and with MyISAM tables.
    ok(&store, &["prepare", &url, "--dataset", "sbtest", "--scale", "1", "--rows", "500", "--engine", "myisam", "--force", "-q"]);
    assert_eq!(
        my.root_sql("SELECT ENGINE FROM information_schema.tables WHERE table_schema = 'bench' AND table_name = 'sbtest1'"),
        "MyISAM"
    );
    let sock = format!("mysql://root@localhost/bench?socket={}", my.socket().display());
    let doc = sweep(&store, &sock, "2", "300ms", &["--workload", "point-select"]);
    assert!(total(&doc, "queries") > 0 && total(&doc, "errors_total") == 0, "{doc}");
    common::assert_no_pool_verdicts(&doc, "point-select over the socket, MyISAM");
    assert!(doc.to_string().contains("MariaDB"), "server version recorded");
}

#[test]
fn counted_queries_match_the_servers_counters() {
    let my = MariaDb::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = my.url();
    ok(&store, &["prepare", &url, "--dataset", "sbtest", "--scale", "1", "--rows", "2000", "-q"]);
    ok(&store, &["prepare", &url, "--dataset", "pgbench", "--scale", "1", "--rows", "2000", "-q"]);
    ok(&store, &["prepare", &url, "--dataset", "news", "--scale", "1", "--rows", "200", "-q"]);
    // Every statement the server ran, by its own Com_* counters (prepared
    // executions count as their statement's kind; BEGIN, COMMIT and ROLLBACK too).
    let statements = || {
        ["Com_select", "Com_insert", "Com_update", "Com_delete", "Com_begin", "Com_commit", "Com_rollback"]
            .iter()
            .map(|c| my.status(c))
            .sum::<u64>()
    };
    // (workload, statements per unit)
    for (workload, per_unit) in
        [("point-select", 1), ("read-only", 16), ("hot-row", 1), ("write", 6), ("pgbench-select", 1), ("pgbench-tpcb", 7), ("news-read", 1)]
    {
        let before = statements();
        let doc = sweep(&store, &url, "1,3", "400ms", &["--workload", workload]);
        common::assert_no_pool_verdicts(&doc, workload);
        std::thread::sleep(Duration::from_millis(200));
        let delta = statements() - before;
        let counted = total(&doc, "queries");
        let errors = total(&doc, "errors_total");
        eprintln!("{workload}: server ran {delta} statements, scalelab counted {counted} ({errors} failed units)");
        assert!(counted > 20, "{workload}: {doc}");
        // Besides the window: units in flight when a window ends (<= 4), the
        // statements and ROLLBACK of failed units (not counted as queries), and
        // the preflight's catalog queries.
        assert!(delta >= counted, "{workload}: server ran {delta} statements < counted {counted}");
        let slack = (4 + errors) * (per_unit + 1) + 25;
        assert!(delta - counted <= slack, "{workload}: server ran {delta} statements, scalelab counted {counted} (slack {slack})");
    }
}

#[test]
fn lock_wait_timeouts_are_classified() {
    let my = MariaDb::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = my.url();
    ok(&store, &["prepare", &url, "--dataset", "sbtest", "--scale", "1", "--rows", "100", "-q"]);
    // Each unit holds row 1 for 1.5 s; innodb_lock_wait_timeout = 1 s (its minimum).
    my.root_sql("SET GLOBAL innodb_lock_wait_timeout = 1");
    let wl = dir.path().join("hold.toml");
    std::fs::write(&wl, "[[unit]]\ntransaction = true\nsql = [\"UPDATE sbtest1 SET k = k + 1 WHERE id = 1\", \"SELECT SLEEP(1.5)\"]\n")
        .unwrap();
    // A window long enough for a lock wait timeout to complete even on a busy machine.
    let doc = sweep_with_errors(&store, &url, "3", "5s", &["--workload-file", wl.to_str().unwrap()]);
    let s = &steps(&doc)[0];
    assert!(s["errors"]["lock_wait_timeout"].as_u64().unwrap_or(0) > 0, "no lock wait timeout: {s}");
    assert!(s["error_messages"]["lock_wait_timeout"].as_str().unwrap().contains("1205"), "{s}");
}

#[test]
fn real_error_classes_and_bad_input() {
    let mut my = MariaDb::start_with(10);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = my.url();
    ok(&store, &["prepare", &url, "--dataset", "sbtest", "--scale", "1", "--rows", "100", "-q"]);
    let wl = dir.path().join("deadlock.toml");
    std::fs::write(
        &wl,
        r#"[[unit]]
transaction = true
sql = ["UPDATE sbtest1 SET k = k + 1 WHERE id = {a}", "SELECT SLEEP(0.01)", "UPDATE sbtest1 SET k = k + 1 WHERE id = 3 - {a}"]
params.a = { kind = "pick", values = [1, 2] }
"#,
    )
    .unwrap();
    let doc = sweep_with_errors(&store, &url, "4", "1s", &["--workload-file", wl.to_str().unwrap()]);
    let s = &steps(&doc)[0];
    assert!(s["errors"]["deadlock"].as_u64().unwrap_or(0) > 0, "no deadlock: {s}");
    assert!(s["error_messages"]["deadlock"].as_str().unwrap().contains("1213"), "{s}");

    // max_connections = 10 (MariaDB's minimum; +1 for SUPER): 20 clients cannot all connect.
    let doc = sweep(&store, &url, "20", "300ms", &["--workload", "point-select"]);
    let s = &steps(&doc)[0];
    assert!(s["errors"]["too_many_connections"].as_u64().unwrap_or(0) > 0, "{s}");
    assert!(s["requests"].as_u64().unwrap() > 0, "{s}");

    // Bad input: one line, exit 2, nothing stored.
    let fresh = dir.path().join("none.db");
    let wrong_pw = url.replace("bench:bench@", "bench:wrong@");
    for (target, expect) in [(wrong_pw.as_str(), "Access denied"), (&url.replace("/bench", "/nosuchdb"), "nosuchdb")] {
        let out = run(&fresh, &["sweep", target, "-c", "1", "-d", "200ms", "--workload", "point-select"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(expect) && !err.contains("wrong"), "expected '{expect}' without the password in: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!fresh.exists());
    }

    // Kill the server in the middle of a window.
    let child =
        common::spawn(&store, &["sweep", &url, "-c", "2", "--warmup", "0", "-d", "2s", "--json", "-q", "--workload", "point-select"]);
    // Killed once the window has answered queries (a busy machine takes its
    // time to start the sweep: a fixed second was before its window there).
    let (before, t0) = (my.status("Com_select"), std::time::Instant::now());
    while my.status("Com_select") < before + 200 {
        assert!(t0.elapsed() < Duration::from_secs(30), "the sweep never queried");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    my.kill();
    let out = child.wait_with_output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    let s = &steps(&doc)[0];
    assert!(s["requests"].as_u64().unwrap() > 0, "{s}");
    assert!(s["errors"]["connection_lost"].as_u64().unwrap_or(0) > 0, "{s}");
    assert!(s["errors"]["connect_refused"].as_u64().unwrap_or(0) > 0, "{s}");
}

#[test]
fn tls_when_the_url_asks_for_it() {
    let my = MariaDb::start_tls();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = format!("{}?ssl-mode=REQUIRED", my.url());
    ok(&store, &["prepare", &url, "--dataset", "sbtest", "--scale", "1", "--rows", "200", "-q"]);
    let doc = sweep(&store, &url, "2", "300ms", &["--workload", "point-select"]);
    assert_eq!(doc["target"], url.replace("bench:bench@", "bench@").as_str());
    assert!(total(&doc, "requests") > 0 && total(&doc, "errors_total") == 0, "{doc}");
    let verified = format!("{}?ssl-mode=VERIFY_IDENTITY&ssl-ca={}", my.url(), my.ca_path().display());
    let doc = sweep(&store, &verified, "1", "200ms", &["--workload", "point-select"]);
    assert!(total(&doc, "requests") > 0 && total(&doc, "errors_total") == 0, "{doc}");

    // require_secure_transport: plain text is refused with the server's message
    // (MariaDB 10.11 answers "Access denied"); the Mozilla roots do not know the
    // test CA.
    let fresh = dir.path().join("none.db");
    for (target, expect) in [
        (my.url(), "ERROR 1045"),
        (format!("{}?ssl-mode=VERIFY_IDENTITY", my.url()), "invalid peer certificate"),
        (format!("{}?ssl-mode=PREFERRED", my.url()), "unsupported ssl-mode=PREFERRED"),
    ] {
        let out = run(&fresh, &["sweep", &target, "-c", "1", "-d", "200ms", "--workload", "point-select"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{target}: {err}");
        assert!(err.contains(expect), "{target}: expected '{expect}' in: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{target}: one line: {err}");
        assert!(!fresh.exists(), "{target}: a store was created");
    }
}

#[test]
fn native_password_users_and_the_unix_socket() {
    let my = MariaDb::start();
    my.root_sql(
        "CREATE USER 'nat'@'127.0.0.1' IDENTIFIED VIA mysql_native_password USING PASSWORD('n@t pw'); \
         GRANT ALL ON *.* TO 'nat'@'127.0.0.1'; \
         CREATE USER 'sock'@'localhost' IDENTIFIED BY 'spw'; GRANT ALL ON *.* TO 'sock'@'localhost';",
    );
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    ok(&store, &["prepare", &my.url(), "--dataset", "sbtest", "--scale", "1", "--rows", "200", "-q"]);
    let native = format!("mysql://nat:n%40t%20pw@127.0.0.1:{}/bench", my.port);
    let socket = format!("mysql://sock:spw@localhost/bench?socket={}", my.socket().display());
    for (url, extra) in [(&native, None), (&socket, None), (&socket, Some("--no-prepare"))] {
        let mut args = vec!["--workload", "read-only"];
        args.extend(extra);
        let doc = sweep(&store, url, "2", "300ms", &args);
        assert!(total(&doc, "requests") > 0 && total(&doc, "errors_total") == 0, "{url} {extra:?}: {doc}");
    }
    // A wrong password over the socket: the server's message, exit 2, nothing stored.
    let fresh = dir.path().join("none.db");
    let out = run(&fresh, &["sweep", &socket.replace("spw@", "wrong@"), "-c", "1", "-d", "200ms", "--workload", "point-select"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("Access denied for user 'sock'@'localhost'") && !err.contains("wrong"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!fresh.exists());
}
