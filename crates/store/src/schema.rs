//! Versioned schema: each migration is a SQL file applied once, in order, in
//! one transaction with the version bump. Stores written by older versions
//! open and are migrated; newer ones are refused.

use crate::{Store, StoreError};
use rusqlite::OptionalExtension;

/// The migrations, in order; version N is the first N applied.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_runs_steps.sql"),
    include_str!("migrations/0002_imported_series.sql"),
    include_str!("migrations/0003_micro_runs.sql"),
    include_str!("migrations/0004_samples.sql"),
    include_str!("migrations/0005_client_lag.sql"),
    include_str!("migrations/0006_client_runq.sql"),
    include_str!("migrations/0007_statement_latency.sql"),
    include_str!("migrations/0008_open_loop.sql"),
    include_str!("migrations/0009_connect_latency.sql"),
    include_str!("migrations/0010_second_service.sql"),
    include_str!("migrations/0011_client_spread.sql"),
    include_str!("migrations/0012_flow_control.sql"),
    include_str!("migrations/0013_busy_poll.sql"),
];

/// The schema version this build writes.
pub const LATEST_VERSION: i64 = MIGRATIONS.len() as i64;

/// Reads the schema version: Ok(None) for an empty database, an error for a
/// file that is not a scalelab store.
fn current_version(store: &Store) -> Result<Option<i64>, StoreError> {
    let not_a_store = |what: String| StoreError::NotAStore { path: store.path.clone(), what };
    let tables: Vec<String> = {
        let mut stmt = match store.conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'") {
            Ok(s) => s,
            // WAL mode needs the folder writable (the -shm file) even to read.
            Err(e) if crate::is_read_only_error(&e) && store.path.exists() => {
                return Err(StoreError::ReadOnly { path: store.path.clone(), why: format!("its folder is not writable: {e}") })
            }
            Err(e) => return Err(crate::classify(&store.path, &e, || not_a_store(format!("not an SQLite database: {e}")))),
        };
        let rows = stmt.query_map([], |r| r.get::<_, String>(0)).map_err(|e| not_a_store(format!("unreadable: {e}")))?;
        rows.collect::<Result<_, _>>().map_err(|e| not_a_store(format!("unreadable: {e}")))?
    };
    if tables.is_empty() {
        return Ok(None);
    }
    if !tables.iter().any(|t| t == "scalelab_meta") {
        return Err(not_a_store(format!("an SQLite database with tables {}", tables.join(", "))));
    }
    let v: Option<String> = store
        .conn
        .query_row("SELECT value FROM scalelab_meta WHERE key = 'schema_version'", [], |r| r.get(0))
        .optional()
        .map_err(|e| store.sql(e))?;
    let damaged = |why: String| StoreError::Damaged { path: store.path.clone(), why };
    let Some(text) = v else { return Err(damaged("its scalelab_meta table has no schema version".into())) };
    // A version below 1 is none that scalelab writes: migrating "from" it
    // indexed the migrations out of bounds (-1) or re-ran the first one (0).
    match text.parse::<i64>() {
        Ok(v) if v >= 1 => Ok(Some(v)),
        _ => {
            let shown: String = text.chars().take(24).collect::<String>().escape_debug().to_string();
            Err(damaged(format!("its schema version '{shown}' is none that scalelab writes (1 to {LATEST_VERSION})")))
        }
    }
}

/// Refuses a store that lacks a table or a column its schema version has
/// (a `steps` table dropped by hand ran the load and then lost the result):
/// the tables and columns of the first `version` migrations, applied to an
/// empty database in memory, must all be there.
fn check_tables(store: &Store, version: i64) -> Result<(), StoreError> {
    if version < 1 {
        return Ok(());
    }
    let columns = |conn: &rusqlite::Connection, table: &str| -> rusqlite::Result<Vec<String>> {
        let mut stmt = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
        let rows = stmt.query_map([table], |r| r.get::<_, String>(0))?;
        rows.collect()
    };
    let expected = (|| -> rusqlite::Result<Vec<(String, Vec<String>)>> {
        let mem = rusqlite::Connection::open_in_memory()?;
        for m in &MIGRATIONS[..version.min(LATEST_VERSION) as usize] {
            mem.execute_batch(m)?;
        }
        let mut stmt = mem.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?;
        let names: Vec<String> = stmt.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
        names.into_iter().map(|t| Ok((t.clone(), columns(&mem, &t)?))).collect()
    })()
    .expect("the migrations apply to an empty database");
    let damaged = |why: String| StoreError::Damaged { path: store.path.clone(), why };
    for (table, want) in expected {
        let have = columns(&store.conn, &table).map_err(|e| store.sql(e))?;
        if have.is_empty() {
            return Err(damaged(format!("it has no table {table}, which a schema {version} store has")));
        }
        if let Some(c) = want.iter().find(|c| !have.contains(c)) {
            return Err(damaged(format!("its table {table} has no column {c}, which a schema {version} store has")));
        }
    }
    Ok(())
}

/// The schema version of a store opened read-only: refuses files that are
/// not ours and stores newer than this build, as [`check_and_migrate`] does.
pub(crate) fn version_for_reading(store: &Store) -> Result<i64, StoreError> {
    let version = current_version(store)?.unwrap_or(0);
    if version > LATEST_VERSION {
        return Err(StoreError::TooNew { path: store.path.clone(), found: version, known: LATEST_VERSION });
    }
    check_tables(store, version)?;
    Ok(version)
}

/// Checks the file is ours, then applies pending migrations.
pub(crate) fn check_and_migrate(store: &mut Store) -> Result<(), StoreError> {
    let version = current_version(store)?.unwrap_or(0);
    if version > LATEST_VERSION {
        return Err(StoreError::TooNew { path: store.path.clone(), found: version, known: LATEST_VERSION });
    }
    check_tables(store, version)?;
    store.conn.busy_timeout(std::time::Duration::from_secs(10)).map_err(|e| store.sql(e))?;
    // WAL: a committed step survives SIGKILL of the writer; readers never block it.
    if version < LATEST_VERSION || version == 0 {
        let _ = store.conn.pragma_update(None, "journal_mode", "WAL");
    }
    store.conn.pragma_update(None, "synchronous", "NORMAL").map_err(|e| store.sql(e))?;
    store.conn.pragma_update(None, "foreign_keys", "ON").map_err(|e| store.sql(e))?;
    // A sweep writes append-only and reads little: 512 KiB of page cache (the
    // default is 2 MB) keeps a long run's client memory flat (bench/soak).
    store.conn.pragma_update(None, "cache_size", -512).map_err(|e| store.sql(e))?;
    if version < LATEST_VERSION {
        migrate_to(store, LATEST_VERSION)?;
    }
    Ok(())
}

/// Applies the migrations up to `to` under one write lock. The version is
/// re-read inside the lock, so two processes opening a new store at once
/// do not both create it.
pub fn migrate_to(store: &mut Store, to: i64) -> Result<(), StoreError> {
    let path = store.path.clone();
    let sql = |cause| StoreError::Sql { path: path.clone(), cause };
    let tx = store.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(sql)?;
    let has_meta: bool = tx
        .query_row("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'scalelab_meta'", [], |r| r.get::<_, i64>(0))
        .map_err(sql)?
        > 0;
    let from: i64 = if has_meta {
        tx.query_row("SELECT value FROM scalelab_meta WHERE key = 'schema_version'", [], |r| r.get::<_, String>(0))
            .optional()
            .map_err(sql)?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    } else {
        0
    };
    // A version below 1 is refused on open; never index the migrations by it.
    for v in from.max(0) + 1..=to {
        tx.execute_batch(MIGRATIONS[(v - 1) as usize]).map_err(sql)?;
        tx.execute(
            "INSERT INTO scalelab_meta(key, value) VALUES ('schema_version', ?1)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [v.to_string()],
        )
        .map_err(sql)?;
    }
    tx.commit().map_err(sql)
}

impl Store {
    /// Creates a store at `path` with only the first `version` migrations:
    /// how tests make a store "written by an older scalelab".
    pub fn create_at_version(path: &std::path::Path, version: i64) -> Result<Store, StoreError> {
        let conn = rusqlite::Connection::open(path).map_err(|e| StoreError::Open { path: path.into(), cause: e.to_string() })?;
        let mut store = Store { conn, path: path.to_path_buf() };
        if version > 0 {
            migrate_to(&mut store, version)?;
        }
        Ok(store)
    }

    /// The schema version of the open store.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        Ok(current_version(self)?.unwrap_or(0))
    }

    /// Runs raw SQL: for tests that write rows the way an older version did.
    pub fn execute_raw(&self, sql: &str) -> Result<(), StoreError> {
        self.conn.execute_batch(sql).map_err(|e| self.sql(e))
    }
}
