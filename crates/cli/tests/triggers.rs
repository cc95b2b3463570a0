//! `watch --trigger`: a condition held over the per-second figures starts a
//! capture (threads by kernel stack, the database's lock views, a profile
//! window), stored as a marked interval that `show` lists.

mod common;

use common::*;
use scalelab_testkit::postgres::Postgres;
use std::time::{Duration, Instant};

fn specimen(mode: &str) -> (std::process::Child, String) {
    start_specimen(mode, "100")
}

fn unix_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

/// A global-lock specimen, idle for its first seconds, then loaded: the
/// futex trigger fires once, after the load began (never while idle: its
/// threads sleep whole seconds, which count as idle), with threads seen in
/// a futex wait and a profile window of its own. The share held is 3 %:
/// about 50 % quiet, it falls to a few % beside a CPU hog, where the
/// threads wait for a CPU rather than for the lock.
#[test]
fn a_held_futex_share_captures_the_threads_and_one_profile_window() {
    let _cpu = cpu_exclusive();
    let (mut server, addr) = specimen("global-lock");
    let port = addr.rsplit(':').next().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("w.db");
    let watch = spawn(
        &store,
        &["watch", "--port", &port, "--record", "--profile", "--trigger", "futex>=3% for 2s", "--max-captures", "1", "-d", "16s"],
    );
    std::thread::sleep(Duration::from_secs(3));
    let load_from = unix_ms();
    let load = run(
        &dir.path().join("load.db"),
        &["sweep", &format!("http://{addr}/"), "-c", "8", "--warmup", "0s", "-d", "10s", "--no-tui", "-q"],
    );
    assert!(load.status.success(), "{}", stderr(&load));
    let out = watch.wait_with_output().unwrap();
    let _ = server.kill();
    let _ = server.wait();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("capture 0: futex>=3% for 2s held"), "said as it happened: {said}");
    let doc = json(&store, &["show", "last", "--json"]);
    let caps = doc["captures"].as_array().expect("captures listed");
    assert_eq!(caps.len(), 1, "one capture however long it held (--max-captures 1): {caps:?}");
    let c = &caps[0];
    assert!(c["from_unix_ms"].as_i64().unwrap() >= load_from - 1000, "not while idle: {c} (load from {load_from})");
    assert!(c["unix_ms"].as_i64().unwrap() - c["from_unix_ms"].as_i64().unwrap() >= 2000, "held 2 s: {c}");
    assert!(c["value"].as_f64().unwrap() >= 3.0, "{c}");
    // The workers wait for the global lock: over the capture's looks, some
    // thread-looks sleep in a futex (a third quiet; fewer beside a hog).
    let groups = c["threads"].as_array().unwrap();
    let looks: u64 = groups.iter().map(|g| g["threads"].as_u64().unwrap()).sum();
    let futex: u64 = groups
        .iter()
        .filter(|g| g["state"] == "S" && (g["wchan"].as_str().unwrap().contains("futex") || g["stack"].to_string().contains("futex")))
        .map(|g| g["threads"].as_u64().unwrap())
        .sum();
    assert_eq!(c["looks"], 10, "{c}");
    assert!(futex > 0, "thread-looks in a futex wait: {futex} of {looks}: {c}");
    assert!(c["db_locks"].is_null(), "no database: {c}");
    // Its own profile window, the only one (windows are taken for captures only).
    let window = c["profile_window"].as_u64().expect("a profile window") + 1;
    let shown = String::from_utf8_lossy(&run(&store, &["show", "last"]).stdout).into_owned();
    assert!(shown.contains(&format!("profile: `scalelab profile 1 --step {window}`")), "{shown}");
    let profile = run(&store, &["profile", "last", "--step", &window.to_string(), "--off-cpu"]);
    let text = String::from_utf8_lossy(&profile.stdout);
    assert!(profile.status.success() && text.contains("window 1"), "{text}{}", stderr(&profile));
    let other = run(&store, &["profile", "last", "--step", "2"]);
    assert!(!other.status.success(), "one window only: {}", String::from_utf8_lossy(&other.stdout));
}

/// Sessions queued behind one that holds a row lock: the database's waits
/// hold, and the capture names the lock, its waiters and their one blocker.
#[test]
fn postgres_sessions_queued_on_a_row_are_captured_with_their_blocker() {
    let pg = Postgres::start();
    pg.psql("bench", "CREATE TABLE hot (id int PRIMARY KEY, v int); INSERT INTO hot VALUES (1, 0)");
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("w.db");
    let url = pg.url();
    let watch = spawn(&store, &["watch", &url, "--record", "--trigger", "db_waits>=50% for 2s", "-d", "9s"]);
    std::thread::sleep(Duration::from_secs(1));
    // One holds the row for 6 s; three queue behind it.
    std::thread::scope(|s| {
        let pg = &pg;
        let holder = s.spawn(move || pg.psql("bench", "BEGIN; UPDATE hot SET v = v + 1 WHERE id = 1; SELECT pg_sleep(6); COMMIT"));
        std::thread::sleep(Duration::from_millis(500));
        let started = Instant::now();
        let waiters: Vec<_> = (0..3).map(|_| s.spawn(move || pg.psql("bench", "UPDATE hot SET v = v + 1 WHERE id = 1"))).collect();
        for w in waiters {
            w.join().unwrap();
        }
        assert!(started.elapsed() >= Duration::from_secs(4), "the updates waited for the holder");
        holder.join().unwrap();
    });
    let out = watch.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(pg.psql("bench", "SELECT v FROM hot"), "4");
    let doc = json(&store, &["show", "last", "--json"]);
    let caps = doc["captures"].as_array().expect("captures listed");
    assert_eq!(caps.len(), 1, "{caps:?}");
    let locks = caps[0]["db_locks"].as_array().expect("the lock views were read");
    // The first waiter waits for the holder's transaction, the others for
    // the row (a tuple lock) behind both: every waiter is listed, each
    // wait with its blockers, and the row's table named.
    let lock_rows: Vec<_> = locks.iter().filter(|r| r["wait"].as_str().unwrap().starts_with("Lock:")).collect();
    let waiting: u64 = lock_rows.iter().map(|r| r["waiting"].as_u64().unwrap()).sum();
    assert_eq!(waiting, 3, "{locks:?}");
    assert!(lock_rows.iter().all(|r| r["blockers"].as_u64().unwrap() >= 1), "{locks:?}");
    assert!(lock_rows.iter().any(|r| r["wait"].as_str().unwrap().ends_with(" on hot")), "{locks:?}");
    assert!(lock_rows.iter().any(|r| r["longest_s"].as_f64().unwrap() > 0.5), "{locks:?}");
    // The postmaster and its backends: the waiting backends' threads were read too.
    assert!(!caps[0]["threads"].as_array().unwrap().is_empty(), "{}", caps[0]);
    let shown = String::from_utf8_lossy(&run(&store, &["show", "last"]).stdout).into_owned();
    assert!(shown.contains("database: ") && shown.contains("waiting on Lock:"), "{shown}");
}

#[test]
fn triggers_that_cannot_hold_or_cannot_be_kept_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("w.db");
    let (mut server, addr) = specimen("scales");
    let port = addr.rsplit(':').next().unwrap().to_string();
    for (args, says) in [
        (vec!["--port", &port, "--record", "--trigger", "p99>=20ms"], "watch generates none"),
        (vec!["--record", "--trigger", "futex>=20%"], "give --pid, --port or its target"),
        (vec!["--port", &port, "--trigger", "futex>=20%"], "add --record"),
        (vec!["--port", &port, "--record", "--trigger", "fuxet>=20%"], "unknown figure 'fuxet'"),
        (vec!["--port", &port, "--record", "--trigger", "futex>=20%", "--max-captures", "0"], "at least 1"),
        (vec!["--port", &port, "--record", "--trigger", "db_waits>=20%"], "needs a database"),
    ] {
        let mut full = vec!["watch", "-d", "1s"];
        full.extend(args);
        assert_bad_input(&store, &full, says);
    }
    // A sweep checks its triggers before any load too.
    assert_bad_input(&store, &["sweep", "--specimen", "scales", "-c", "1", "--trigger", "p99>=5%"], "p99 is in 'ms', not '%'");
    let _ = server.kill();
    let _ = server.wait();
    assert!(!store.exists(), "nothing recorded for bad input");
}

/// MariaDB: sessions queued on a row held by another are named from
/// InnoDB's lock views (the row's table and index, the lock mode).
#[test]
fn mariadb_sessions_queued_on_a_row_are_named_from_innodb_s_lock_views() {
    let my = scalelab_testkit::mariadb::MariaDb::start();
    my.root_sql("CREATE TABLE bench.hot (id int PRIMARY KEY, v int) ENGINE=InnoDB; INSERT INTO bench.hot VALUES (1, 0)");
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("w.db");
    // Fires in the second second of waiting: the machine's CPU is always at or above 0 %.
    std::thread::scope(|s| {
        let my = &my;
        let holder = s.spawn(move || my.root_sql("BEGIN; UPDATE bench.hot SET v = v + 1 WHERE id = 1; DO SLEEP(8); COMMIT"));
        std::thread::sleep(Duration::from_millis(500));
        let waiters: Vec<_> = (0..2)
            .map(|_| s.spawn(move || my.root_sql("SET SESSION innodb_lock_wait_timeout = 30; UPDATE bench.hot SET v = v + 1 WHERE id = 1")))
            .collect();
        std::thread::sleep(Duration::from_millis(500));
        let out = run(&store, &["watch", &my.url(), "--record", "--trigger", "cpu>=0% for 1s", "-d", "3s"]);
        assert!(out.status.success(), "{}", stderr(&out));
        for w in waiters {
            w.join().unwrap();
        }
        holder.join().unwrap();
    });
    assert_eq!(my.root_sql("SELECT v FROM bench.hot"), "3");
    let doc = json(&store, &["show", "last", "--json"]);
    let caps = doc["captures"].as_array().expect("captures listed");
    assert_eq!(caps.len(), 1, "{caps:?}");
    let locks = caps[0]["db_locks"].as_array().unwrap_or_else(|| panic!("the lock views were read: {}", caps[0]));
    let row = locks.iter().find(|r| r["wait"].as_str().unwrap().starts_with("RECORD lock on")).unwrap_or_else(|| panic!("{locks:?}"));
    assert_eq!(row["waiting"].as_u64(), Some(2), "{locks:?}");
    assert!(row["wait"].as_str().unwrap().contains("hot") && row["wait"].as_str().unwrap().contains("PRIMARY"), "{row}");
    assert_eq!(row["mode"], "X", "{row}");
    assert!(row["longest_s"].as_f64().unwrap() > 0.5, "{row}");
}

/// A sweep's triggers: the server's futex share and the load's own p99 each
/// hold in its window and each starts its capture, stored with the run, in
/// its JSON (schema-valid) and listed by `show`.
#[test]
fn a_sweep_captures_on_the_server_s_figures_and_on_its_own_latency() {
    let _cpu = cpu_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    #[rustfmt::skip]
    let doc = json(&store, &[
        "sweep", "--specimen", "global-lock", "--work-us", "300", "-c", "4", "--warmup", "0.5s", "-d", "6s", "--pause", "0",
        "--json", "-q", "--trigger", "futex>=1% for 1s", "--trigger", "p99>=0.001ms for 3s",
    ]);
    assert_matches_schema(&doc);
    let caps = doc["captures"].as_array().unwrap_or_else(|| panic!("captures in the run's JSON: {doc}"));
    let mut said: Vec<&str> = caps.iter().map(|c| c["trigger"].as_str().unwrap()).collect();
    said.sort();
    assert_eq!(said, ["futex>=1% for 1s", "p99>=0.001ms for 3s"], "{caps:?}");
    let step = &steps(&doc)[0];
    let window_from = step["window_start_unix_ms"].as_i64().expect("the window's start");
    for c in caps {
        assert!(c["value"].as_f64().unwrap() > 0.0, "{c}");
        assert!(c["from_unix_ms"].as_i64().unwrap() >= window_from - 1500, "held in the window, from {window_from}: {c}");
        assert!(!c["threads"].as_array().unwrap().is_empty(), "the specimen's threads: {c}");
        assert!(c["profile_window"].is_null(), "a sweep profiles its steps, not its captures: {c}");
    }
    let shown = String::from_utf8_lossy(&run(&store, &["show", "last"]).stdout).into_owned();
    assert!(shown.contains("captures (2;") && shown.contains("p99>=0.001ms for 3s held from +"), "{shown}");
}
