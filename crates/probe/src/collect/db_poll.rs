//! The database poller of a `Collector`: its own thread
//! and connection (never one of the load clients), so the 50 Hz thread
//! sampling of the sampler thread is not delayed by a slow query.
//!
//! - MySQL/MariaDB, every second: `SHOW GLOBAL STATUS`, the SEMAPHORES of
//!   `SHOW ENGINE INNODB STATUS`, and, when `@@performance_schema` is on
//!   (checked once), the global wait summaries of `performance_schema`.
//! - PostgreSQL: `pg_stat_activity` ten times a second into a wait profile
//!   (the probe's own backend left out), and every second `pg_stat_database`
//!   of the target database and the checkpoint counters.
//!
//! Each second's counters become one [`DbSample`] record (kind `db`); the
//! PostgreSQL wait profile goes in records of its own every 250 ms, so a
//! step's profile holds only the polls made inside its window. When stopped
//! the probe takes one closing reading (and closes its wait chunk), so the
//! last step has a reading at its end however short it was. A connection
//! that cannot be opened, or is lost (server killed), is one
//! `unavailable` note ([`Source::Db`]) and the probe ends; the sweep goes on.

use super::record::{unix_ms, Record};
use crate::db::perf_schema::{PERF_SCHEMA_ENABLED_QUERY, PERF_SCHEMA_INSTRUMENTS_QUERY, PERF_SCHEMA_WAITS_QUERY};
use crate::db::sample::WAIT_CHUNK_MS;
use crate::db::{
    parse_innodb_semaphores, parse_instrumented, parse_waits, pg_database_query, ActivityRow, DbSample, GlobalStatus, PgCheckpoints,
    PgDatabaseStats, SemaphoreFormat, WaitProfile, PG_ACTIVITY_QUERY, PG_BGWRITER_QUERY, PG_CHECKPOINTER_QUERY,
};
use scalelab_core::{ErrorClass, Source};
use scalelab_wire::monitor::{Monitor, TextRows};
use scalelab_wire::{Engine, SqlUrl};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// PostgreSQL activity polls per second (the wait profile's resolution).
pub const PG_POLL_HZ: u32 = 10;
/// Limit for connecting and for each query of the probe.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Parses a `--db-probe` URL; the error is one line for exit code 2.
pub fn parse_url(text: &str) -> Result<SqlUrl, String> {
    SqlUrl::parse(text).map_err(|e| format!("--db-probe: {e}"))
}

/// The database to probe: `--db-probe` when given, else a SQL target
/// (its full URL parsed for the connection: user, password, database).
pub fn for_target(target: Option<&scalelab_core::Target>, db_probe: Option<&str>) -> Result<Option<SqlUrl>, String> {
    if let Some(u) = db_probe {
        return parse_url(u).map(Some);
    }
    match target {
        Some(t) if t.kind().capabilities().db_probe => SqlUrl::parse(t.as_given()).map(Some),
        _ => Ok(None),
    }
}

/// Starts the probe thread; it stops when `stop` is set or the connection is lost.
pub fn start(url: SqlUrl, tx: Sender<Record>, stop: Arc<AtomicBool>) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name("scalelab-db-probe".into())
        .spawn(move || {
            let mut p = Probe { tx, notes: BTreeSet::new() };
            let mut mon = match Monitor::connect(&url, TIMEOUT) {
                Ok(m) => m,
                Err(f) => {
                    p.note(Source::Db, format!("cannot connect to {}: {}", url.redacted(), f.message));
                    return;
                }
            };
            let why = match mon.engine() {
                Engine::Postgres => p.postgres(&mut mon, &stop),
                Engine::Mysql => p.mysql(&mut mon, &stop),
            };
            if let Some(why) = why {
                p.note(Source::Db, why);
            }
        })
        .expect("spawning the database probe thread")
}

/// A failure after which the connection cannot be used any more.
fn is_lost(class: ErrorClass) -> bool {
    matches!(
        class,
        ErrorClass::ConnectionLost | ErrorClass::Reset | ErrorClass::ReadTimeout | ErrorClass::ConnectRefused | ErrorClass::ConnectTimeout
    )
}

fn lost(message: &str) -> String {
    format!("lost the database connection ({message}): no database figures from here on")
}

struct Probe {
    tx: Sender<Record>,
    notes: BTreeSet<Source>,
}

impl Probe {
    /// Sends an `unavailable` note once per source.
    fn note(&mut self, source: Source, why: String) {
        if self.notes.insert(source) {
            let _ = self.tx.send(Record::Unavailable(source, why));
        }
    }

    fn send(&self, s: DbSample) {
        let _ = self.tx.send(Record::Sample(crate::Sample::Db(Box::new(s))));
    }

    /// Sleeps until `until` in short slices, so a stop is seen quickly; false when stopped.
    fn wait(stop: &AtomicBool, until: Instant) -> bool {
        loop {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }

    /// The MySQL loop; returns why it ended early (`None` when stopped).
    fn mysql(&mut self, mon: &mut Monitor, stop: &AtomicBool) -> Option<String> {
        let mut innodb = true;
        let mut perf_schema = match self.perf_schema_setup(mon) {
            Ok(p) => p,
            Err(why) => return Some(why),
        };
        let mut next = Instant::now();
        loop {
            // A stop ends the loop after one closing reading, the last step's end.
            let last = !Self::wait(stop, next);
            next += Duration::from_secs(1);
            if next < Instant::now() {
                next = Instant::now() + Duration::from_secs(1);
            }
            let at = unix_ms();
            let status = match mon.query("SHOW GLOBAL STATUS") {
                Ok(rows) => status_from(&rows),
                Err(f) => return Some(lost(&f.message)),
            };
            let mut sample = DbSample { unix_ms: at, engine: "mysql".into(), status: Some(status), ..Default::default() };
            if innodb {
                match mon.query("SHOW ENGINE INNODB STATUS") {
                    Ok(rows) => {
                        let text = rows.named().first().and_then(|r| {
                            r.iter().find(|(c, _)| c.eq_ignore_ascii_case("status")).and_then(|(_, v)| *v).map(str::to_string)
                        });
                        match text.map(|t| parse_innodb_semaphores(&t)) {
                            // MariaDB 10.6+ prints no counters: say so once and stop asking.
                            Some(Ok(s)) if s.format == SemaphoreFormat::NoCounters => {
                                let why = s.unavailable.unwrap_or_else(|| "the SEMAPHORES section has no counters".into());
                                self.note(Source::DbSemaphores, why);
                                innodb = false;
                            }
                            Some(Ok(s)) => {
                                if let Some(why) = &s.unavailable {
                                    self.note(Source::DbSemaphores, why.clone());
                                }
                                sample.innodb = Some(s);
                            }
                            Some(Err(why)) => self.note(Source::DbSemaphores, format!("SHOW ENGINE INNODB STATUS: {why}")),
                            None => {
                                self.note(Source::DbSemaphores, "SHOW ENGINE INNODB STATUS returned no status text".into());
                                innodb = false;
                            }
                        }
                    }
                    Err(f) if is_lost(f.class) => return Some(lost(&f.message)),
                    Err(f) => {
                        self.note(Source::DbSemaphores, format!("SHOW ENGINE INNODB STATUS: {}", f.message));
                        innodb = false;
                    }
                }
            }
            if let Some(instrumented) = &perf_schema {
                match mon.query(PERF_SCHEMA_WAITS_QUERY) {
                    Ok(rows) => match parse_waits(rows.rows.iter().map(|r| r.iter().map(|v| v.as_deref()).collect())) {
                        Ok(mut w) => {
                            w.instrumented = instrumented.clone();
                            sample.perf_schema = Some(w);
                        }
                        Err(why) => self.note(Source::DbPerfSchema, why),
                    },
                    Err(f) if is_lost(f.class) => return Some(lost(&f.message)),
                    Err(f) => {
                        self.note(Source::DbPerfSchema, format!("performance_schema wait summaries: {}", f.message));
                        perf_schema = None;
                    }
                }
            }
            self.send(sample);
            if last {
                return None;
            }
        }
    }

    /// Checks once whether `performance_schema` is on and which wait
    /// instruments are timed: `Ok(Some(classes))` to read the wait summaries,
    /// `Ok(None)` (with a note saying why) not to, `Err` when the connection is lost.
    fn perf_schema_setup(&mut self, mon: &mut Monitor) -> Result<Option<Vec<String>>, String> {
        let on = match mon.query(PERF_SCHEMA_ENABLED_QUERY) {
            Ok(rows) => rows.rows.first().and_then(|r| r.first().cloned().flatten()),
            Err(f) if is_lost(f.class) => return Err(lost(&f.message)),
            Err(f) => {
                self.note(Source::DbPerfSchema, format!("cannot tell whether performance_schema is on: {}", f.message));
                return Ok(None);
            }
        };
        match on.as_deref().map(str::trim) {
            Some("1" | "ON") => {}
            Some("0" | "OFF") => {
                self.note(Source::DbPerfSchema, "performance_schema is off (start the server with --performance-schema=ON)".into());
                return Ok(None);
            }
            other => {
                self.note(Source::DbPerfSchema, format!("@@performance_schema returned {other:?}, not 0 or 1"));
                return Ok(None);
            }
        }
        let (on, off) = match mon.query(PERF_SCHEMA_INSTRUMENTS_QUERY) {
            Ok(rows) => parse_instrumented(rows.rows.iter().map(|r| r.iter().map(|v| v.as_deref()).collect())),
            Err(f) if is_lost(f.class) => return Err(lost(&f.message)),
            Err(f) => {
                self.note(Source::DbPerfSchema, format!("performance_schema.setup_instruments: {}", f.message));
                return Ok(None);
            }
        };
        if !off.is_empty() {
            self.note(
                Source::DbPerfSchemaInstruments,
                format!(
                    "not instrumented (their waits cannot show): {}; enable with --performance-schema-instrument='wait/synch/%=ON' (or UPDATE performance_schema.setup_instruments)",
                    off.join(", ")
                ),
            );
        }
        Ok(Some(on))
    }

    /// The PostgreSQL loop; returns why it ended early (`None` when stopped).
    fn postgres(&mut self, mon: &mut Monitor, stop: &AtomicBool) -> Option<String> {
        let db_query = pg_database_query(mon.target_database());
        let mut checkpoint_query = Some(PG_BGWRITER_QUERY);
        let mut stats = true;
        let tick = Duration::from_secs(1) / PG_POLL_HZ;
        let mut profile = WaitProfile::default();
        let mut since = unix_ms();
        let chunk = Duration::from_millis(WAIT_CHUNK_MS as u64);
        let mut next_poll = Instant::now();
        let mut next_chunk = Instant::now() + chunk;
        let mut next_second = Instant::now();
        loop {
            // A stop ends the loop after one closing reading, the last step's end.
            let last = !Self::wait(stop, next_poll);
            next_poll += tick;
            if next_poll < Instant::now() {
                next_poll = Instant::now() + tick;
            }
            match mon.query(PG_ACTIVITY_QUERY) {
                Ok(rows) => profile.add_poll(activity_rows(&rows).iter().copied()),
                Err(f) => return Some(lost(&f.message)),
            }
            if last || Instant::now() >= next_chunk {
                next_chunk = Instant::now() + chunk;
                let at = unix_ms();
                let waits = std::mem::take(&mut profile);
                self.send(DbSample {
                    unix_ms: at,
                    engine: "postgres".into(),
                    pg_waits: Some(waits),
                    since_unix_ms: Some(since),
                    ..Default::default()
                });
                since = at;
            }
            if !last && Instant::now() < next_second {
                continue;
            }
            next_second += Duration::from_secs(1);
            if next_second < Instant::now() {
                next_second = Instant::now() + Duration::from_secs(1);
            }
            let at = unix_ms();
            let mut sample = DbSample { unix_ms: at, engine: "postgres".into(), ..Default::default() };
            if stats {
                match mon.query(&db_query) {
                    Ok(rows) => match rows.named().first().map(|r| PgDatabaseStats::from_named(r.iter().copied())) {
                        Some(Ok(s)) => sample.pg_database = Some(s),
                        Some(Err(why)) => self.note(Source::DbStats, why),
                        None => {
                            self.note(Source::DbStats, format!("database {} is not in pg_stat_database", mon.target_database()));
                            stats = false;
                        }
                    },
                    Err(f) if is_lost(f.class) => return Some(lost(&f.message)),
                    Err(f) => {
                        self.note(Source::DbStats, format!("pg_stat_database: {}", f.message));
                        stats = false;
                    }
                }
            }
            while let Some(q) = checkpoint_query {
                match mon.query(q) {
                    Ok(rows) => {
                        match rows.named().first().map(|r| PgCheckpoints::from_named(r.iter().copied())) {
                            Some(Ok(c)) => sample.pg_checkpoints = Some(c),
                            Some(Err(why)) => self.note(Source::DbCheckpoints, why),
                            None => self.note(Source::DbCheckpoints, "no checkpoint counters returned".into()),
                        }
                        break;
                    }
                    Err(f) if is_lost(f.class) => return Some(lost(&f.message)),
                    // PostgreSQL 17 moved the counters to pg_stat_checkpointer.
                    Err(_) if q == PG_BGWRITER_QUERY => checkpoint_query = Some(PG_CHECKPOINTER_QUERY),
                    Err(f) => {
                        self.note(Source::DbCheckpoints, format!("checkpoint counters: {}", f.message));
                        checkpoint_query = None;
                    }
                }
            }
            self.send(sample);
            if last {
                return None;
            }
        }
    }
}

/// `SHOW GLOBAL STATUS` rows (`Variable_name`, `Value`) as counters.
fn status_from(rows: &TextRows) -> GlobalStatus {
    GlobalStatus::from_rows(rows.rows.iter().filter_map(|r| match r.as_slice() {
        [Some(name), Some(value), ..] => Some((name.as_str(), value.as_str())),
        _ => None,
    }))
}

/// `pg_stat_activity` rows by column name.
fn activity_rows(rows: &TextRows) -> Vec<ActivityRow<'_>> {
    let col = |name: &str| rows.columns.iter().position(|c| c == name);
    let (bt, st, ty, ev) = (col("backend_type"), col("state"), col("wait_event_type"), col("wait_event"));
    rows.rows
        .iter()
        .map(|r| {
            let get = |i: Option<usize>| i.and_then(|i| r.get(i)).and_then(|v| v.as_deref());
            ActivityRow { backend_type: get(bt), state: get(st), wait_event_type: get(ty), wait_event: get(ev) }
        })
        .collect()
}
