//! Database parsers on captured output (MariaDB 10.11, PostgreSQL 15) and on
//! a MySQL 8.0 sample written from the documented format.

mod common;

use common::fixtures;
use scalelab_analyze::telemetry::{global_status_rates, semaphore_rates, top_waits};
use scalelab_probe::db::pg_activity::CPU;
use scalelab_probe::db::{
    parse_innodb_semaphores, parse_instrumented, parse_waits, ActivityRow, GlobalStatus, SemaphoreFormat, WaitCounter, WaitProfile,
};
use scalelab_probe::read::complete_lines;

fn read(name: &str) -> String {
    std::fs::read_to_string(fixtures().join("db").join(name)).unwrap()
}

#[test]
fn mariadb_10_11_has_no_spin_counters() {
    let s = parse_innodb_semaphores(&read("mariadb-10.11-innodb-status.txt")).unwrap();
    assert_eq!(s.format, SemaphoreFormat::NoCounters);
    assert_eq!((s.mutex, s.rw_shared, s.rw_excl, s.rw_sx), (None, None, None, None));
    assert_eq!(s.total(), None);
    assert!(s.unavailable.as_deref().unwrap().contains("MariaDB 10.6+"));
    assert_eq!(semaphore_rates(&s, &s, 1.0), None, "unavailable, not 0/s");
}

#[test]
fn mysql_8_0_rw_lock_counters() {
    let s = parse_innodb_semaphores(&read("mysql-8.0-innodb-status.txt")).unwrap();
    assert_eq!(s.format, SemaphoreFormat::RwLocksOnly);
    assert_eq!((s.reservation_count, s.signal_count), (Some(20452), Some(14808)));
    assert_eq!(s.mutex, None);
    let sh = s.rw_shared.unwrap();
    assert_eq!((sh.spin_waits, sh.rounds, sh.os_waits), (11512, 345254, 11490));
    assert_eq!(s.rw_excl.unwrap().os_waits, 2);
    assert_eq!(s.rw_sx.unwrap().rounds, 1101);
    assert_eq!(s.waiting_threads, 1);

    let later = read("mysql-8.0-innodb-status.txt")
        .replace("RW-shared spins 11512, rounds 345254, OS waits 11490", "RW-shared spins 12512, rounds 375254, OS waits 12490");
    let r = semaphore_rates(&s, &parse_innodb_semaphores(&later).unwrap(), 2.0).unwrap();
    assert_eq!((r.spin_waits_per_s, r.spin_rounds_per_s, r.os_waits_per_s), (500.0, 15000.0, 500.0));
    assert_eq!(r.rounds_per_os_wait, Some(30.0));
    // Server restarted between readings: counters went back.
    assert_eq!(semaphore_rates(&parse_innodb_semaphores(&later).unwrap(), &s, 2.0), None);
}

#[test]
fn innodb_status_cut_anywhere_is_an_error_or_exact() {
    for name in ["mysql-8.0-innodb-status.txt", "mariadb-10.11-innodb-status.txt"] {
        let text = read(name);
        let full = parse_innodb_semaphores(&text).unwrap();
        for end in (0..text.len()).step_by(7) {
            if let Ok(s) = parse_innodb_semaphores(&text[..end]) {
                assert_eq!(s, full, "{name} cut at {end}");
            }
        }
        assert!(parse_innodb_semaphores(&text.replace("SEMAPHORES", "S3MAPH0RES")).is_err());
    }
}

/// Rows of the captured `SHOW GLOBAL STATUS` (tab-separated, one per line).
fn status_rows(text: &str) -> Vec<(&str, &str)> {
    complete_lines(text).filter_map(|l| l.split_once('\t')).collect()
}

#[test]
fn mariadb_global_status() {
    let text = read("mariadb-10.11-global-status.tsv");
    let s = GlobalStatus::from_rows(status_rows(&text));
    assert_eq!(s.questions, Some(108546));
    assert_eq!((s.com_select, s.com_insert, s.com_update, s.com_delete), (Some(36162), Some(36166), Some(36170), Some(0)));
    assert_eq!((s.threads_running, s.threads_connected), (Some(12), Some(13)));
    assert_eq!((s.innodb_row_lock_waits, s.innodb_row_lock_time_ms), (Some(1143), Some(4997)));
    assert_eq!((s.table_locks_waited, s.table_locks_immediate), (Some(0), Some(23)));
    assert_eq!((s.key_reads, s.key_read_requests), (Some(0), Some(0)));
    assert_eq!(s.created_tmp_disk_tables, Some(0));
    assert_eq!(s.handler.read_rnd_next, Some(18));
    assert!(s.missing().is_empty(), "{:?}", s.missing());
    // No key-cache reads at all: the miss ratio is undefined, not 0 %.
    assert_eq!(global_status_rates(&s, &s, 1.0).key_cache_miss_pct, None);

    // Half the rows: what is missing is None, what is there is exact.
    let rows = status_rows(&text);
    let half = GlobalStatus::from_rows(rows[..rows.len() / 2].iter().copied());
    assert_eq!(half.questions, None);
    assert_eq!(half.com_select, s.com_select);
}

/// SQL NULL is an empty field in the capture.
fn o(s: &str) -> Option<&str> {
    (!s.is_empty()).then_some(s)
}

/// Polls of the captured `pg_stat_activity` (`sample` column groups rows
/// of one poll; empty fields are SQL NULL).
fn polls(text: &str) -> Vec<Vec<ActivityRow<'_>>> {
    let mut out: Vec<(u32, Vec<ActivityRow>)> = Vec::new();
    for line in complete_lines(text).skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        let [sample, _pid, bt, state, ty, ev] = f[..] else {
            continue;
        };
        let Ok(sample) = sample.parse() else { continue };
        let row = ActivityRow { backend_type: o(bt), state: o(state), wait_event_type: o(ty), wait_event: o(ev) };
        match out.last_mut() {
            Some((n, rows)) if *n == sample => rows.push(row),
            _ => out.push((sample, vec![row])),
        }
    }
    out.into_iter().map(|(_, r)| r).collect()
}

#[test]
fn postgres_hot_row_profile_is_lock_bound() {
    let text = read("postgresql-15-pg-stat-activity.tsv");
    let mut p = WaitProfile::default();
    for poll in polls(&text) {
        p.add_poll(poll);
    }
    assert_eq!(p.polls(), 20);
    let mean = p.mean_active().unwrap();
    assert!(mean > 8.0 && mean <= 12.0, "12 pgbench clients, mean active {mean}");
    let by_type = p.shares_by_type();
    assert_eq!(by_type[0].0, "Lock", "{by_type:?}");
    assert!(by_type[0].1 > 70.0, "{by_type:?}");
    let shares = p.shares();
    assert_eq!(shares[0].wait_event.as_deref(), Some("transactionid"));
    assert!(shares.iter().any(|s| s.wait_event_type == CPU));
    let total: f64 = shares.iter().map(|s| s.pct).sum();
    assert!((total - 100.0).abs() < 1e-9);
    // Background processes (checkpointer, walwriter, ...) never count.
    assert!(shares.iter().all(|s| s.wait_event_type != "Activity"));

    // Garbage in the same shape: nothing parses, so nothing is measured.
    let mut g = WaitProfile::default();
    for poll in polls("sample\tpid\nx\ty\n1\t2\t3\n") {
        g.add_poll(poll);
    }
    assert_eq!((g.polls(), g.mean_active()), (0, None));
}

/// `psql -A -F TAB` output (header line, empty field = NULL) as named rows.
fn named_rows(text: &str) -> Vec<Vec<(&str, Option<&str>)>> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split('\t').collect();
    lines.map(|l| header.iter().copied().zip(l.split('\t').map(|v| (!v.is_empty()).then_some(v))).collect()).collect()
}

#[test]
fn postgres_15_pg_stat_database_and_checkpoints() {
    use scalelab_probe::db::{PgCheckpoints, PgDatabaseStats};
    let text = read("postgresql-15-pg-stat-database.tsv");
    let rows = named_rows(&text);
    let bench = rows.iter().find(|r| r.iter().any(|(c, v)| *c == "datname" && *v == Some("bench"))).expect("bench row");
    let s = PgDatabaseStats::from_named(bench.iter().copied()).unwrap();
    assert!(s.xact_commit.unwrap() > 1000, "{s:?}");
    assert!(s.blks_hit.unwrap() > s.blks_read.unwrap(), "{s:?}");
    assert!(s.tup_updated.unwrap() >= 1000, "{s:?}");
    assert_eq!((s.deadlocks, s.temp_files), (Some(0), Some(4)));
    // The shared-objects row (datname NULL) parses too; every row has counters.
    assert!(rows.iter().all(|r| PgDatabaseStats::from_named(r.iter().copied()).is_ok()));
    let c = PgCheckpoints::from_named(named_rows(&read("postgresql-15-pg-stat-bgwriter.tsv"))[0].iter().copied()).unwrap();
    assert!(c.total().is_some(), "{c:?}");

    // Garbage: an error (unavailable), never a row of zeros.
    for bad in ["", "xact_commit\tdeadlocks\nmany\t?\n", "a\tb\n1\t2\n", "<html>502 Bad Gateway</html>\n1\n"] {
        for r in named_rows(bad) {
            assert!(PgDatabaseStats::from_named(r.iter().copied()).is_err(), "{bad:?}");
            assert!(PgCheckpoints::from_named(r.iter().copied()).is_err(), "{bad:?}");
        }
    }
    // A row cut short keeps what it has and leaves the rest unknown.
    let cut = &text[..text.find('\n').unwrap() + 1];
    let cut = format!("{cut}{}", &bench.iter().take(3).map(|(_, v)| v.unwrap_or("")).collect::<Vec<_>>().join("\t"));
    let r = &named_rows(&cut)[0];
    let s = PgDatabaseStats::from_named(r.iter().copied()).unwrap();
    assert!(s.xact_commit.is_some() && s.temp_files.is_none(), "{s:?}");
}

/// Tab-separated rows of a captured `mariadb -B -N` result.
fn tsv_rows(text: &str) -> Vec<Vec<Option<&str>>> {
    text.lines().map(|l| l.split('\t').map(Some).collect()).collect()
}

#[test]
fn mariadb_perf_schema_waits_under_hot_rows() {
    let (t0, t1) = (read("mariadb-10.11-perf-schema-waits-t0.tsv"), read("mariadb-10.11-perf-schema-waits-t1.tsv"));
    let a = parse_waits(tsv_rows(&t0)).unwrap();
    let b = parse_waits(tsv_rows(&t1)).unwrap();
    assert_eq!((a.events.len(), a.bad_rows), (84, 0));
    assert_eq!(a.events["wait/io/table/sql/handler"], WaitCounter { count: 73034, wait_ps: Some(7002315595275) });
    // The two readings were one second apart (wall time of the capture; ~1.0 s).
    let top = top_waits(&a, &b, 1.0, 5).unwrap();
    let names: Vec<&str> = top.iter().map(|w| w.event.as_str()).collect();
    eprintln!("{top:?}");
    // Eight clients on three rows: the handler calls wait for the row locks,
    // and InnoDB's lock-system latch is the hottest latch.
    assert_eq!(names[0], "wait/io/table/sql/handler");
    assert_eq!(top[0].waits_per_s, (120809 - 73034) as f64);
    let ms = top[0].wait_ms_per_s.unwrap();
    assert!((ms - (9843974573895u64 - 7002315595275) as f64 / 1e9).abs() < 1e-6, "{ms}");
    assert!(names.contains(&"wait/synch/rwlock/innodb/lock_latch"), "{names:?}");
    // The background timer's condition variable (idle sleep) has more wait time than
    // the latch, yet is not ranked.
    assert!(b.events.contains_key("wait/synch/cond/mysys/COND_timer"));
    assert!(names.iter().all(|n| !n.starts_with("wait/synch/cond/")), "{names:?}");
    assert!(top.windows(2).all(|w| w[0].wait_ms_per_s >= w[1].wait_ms_per_s));

    let (on, off) = parse_instrumented(tsv_rows(&read("mariadb-10.11-perf-schema-instruments.tsv")));
    assert!(off.is_empty(), "{off:?}");
    assert!(on.contains(&"wait/synch/mutex".to_string()) && on.contains(&"wait/io/table".to_string()), "{on:?}");
}

#[test]
fn perf_schema_rows_cut_or_garbled_are_unavailable_not_zero() {
    let text = read("mariadb-10.11-perf-schema-waits-t1.tsv");
    let full = parse_waits(tsv_rows(&text)).unwrap();
    // Cut anywhere: every event read is the full reading's, or a prefix of the
    // last (cut) row's digits; a row cut before its third column is left out.
    for end in (0..text.len()).step_by(13) {
        match parse_waits(tsv_rows(&text[..end])) {
            Ok(w) => {
                for (name, c) in &w.events {
                    let f = full.events.get(name).unwrap_or_else(|| panic!("cut at {end}: invented {name}"));
                    assert!(c == f || f.count.to_string().starts_with(&c.count.to_string()), "cut at {end}: {name} {c:?} vs {f:?}");
                }
                assert!(w.bad_rows <= 1, "cut at {end}");
            }
            Err(why) => assert!(end < 60, "cut at {end}: {why}"),
        }
    }
    // Each row garbled in turn: that event is missing, not 0.
    for (i, line) in text.lines().enumerate().step_by(5) {
        let garbled = text.replace(line, &line.replacen('\t', " ", 1));
        let w = parse_waits(tsv_rows(&garbled)).unwrap();
        let name = line.split('\t').next().unwrap();
        assert!(!w.events.contains_key(name), "row {i}");
        assert_eq!(w.bad_rows, 1);
    }
    for junk in ["", "\0\0\0", "EVENT_NAME\tCOUNT_STAR\tSUM_TIMER_WAIT", "wait/io/table/sql/handler\t-1\t5", "<html>"] {
        assert!(parse_waits(tsv_rows(junk)).is_err(), "{junk:?}");
    }
    // No readings to compare: no rate at all (and never a negative one).
    assert_eq!(top_waits(&full, &full, 1.0, 5), Some(vec![]));
}
