//! Versioned schema: each migration is a SQL file applied once, in order, in
//! one transaction with the version bump. Stores written by older versions
//! open and are migrated; newer ones are refused.

use crate::{Store, StoreError};
use rusqlite::OptionalExtension;

/// The migrations, in order; version N is the first N applied.
const MIGRATIONS: &[&str] = &[include_str!("migrations/0001_runs_steps.sql"), include_str!("migrations/0002_imported_series.sql")];

/// The schema version this build writes.
pub const LATEST_VERSION: i64 = MIGRATIONS.len() as i64;

/// Reads the schema version: Ok(None) for an empty database, an error for a
/// file that is not a scalelab store.
fn current_version(store: &Store) -> Result<Option<i64>, StoreError> {
    let not_a_store = |what: String| StoreError::NotAStore { path: store.path.clone(), what };
    let tables: Vec<String> = {
        let mut stmt = match store.conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'") {
            Ok(s) => s,
            Err(e) => return Err(not_a_store(format!("not an SQLite database: {e}"))),
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
    match v.and_then(|v| v.parse::<i64>().ok()) {
        Some(v) => Ok(Some(v)),
        None => Err(not_a_store("a scalelab_meta table without a schema version".into())),
    }
}

/// Checks the file is ours, then applies pending migrations.
pub(crate) fn check_and_migrate(store: &mut Store) -> Result<(), StoreError> {
    let version = current_version(store)?.unwrap_or(0);
    if version > LATEST_VERSION {
        return Err(StoreError::TooNew { path: store.path.clone(), found: version, known: LATEST_VERSION });
    }
    // WAL: a committed step survives SIGKILL of the writer; readers never block it.
    let _ = store.conn.pragma_update(None, "journal_mode", "WAL");
    store.conn.pragma_update(None, "synchronous", "NORMAL").map_err(|e| store.sql(e))?;
    store.conn.pragma_update(None, "foreign_keys", "ON").map_err(|e| store.sql(e))?;
    store.conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(|e| store.sql(e))?;
    migrate_to(store, version, LATEST_VERSION)
}

/// Applies migrations `from+1 ..= to`. Public for tests that build an old store.
pub fn migrate_to(store: &mut Store, from: i64, to: i64) -> Result<(), StoreError> {
    let path = store.path.clone();
    for v in from + 1..=to {
        let tx = store.conn.transaction().map_err(|e| StoreError::Sql { path: path.clone(), cause: e })?;
        tx.execute_batch(MIGRATIONS[(v - 1) as usize]).map_err(|e| StoreError::Sql { path: path.clone(), cause: e })?;
        tx.execute(
            "INSERT INTO scalelab_meta(key, value) VALUES ('schema_version', ?1)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [v.to_string()],
        )
        .map_err(|e| StoreError::Sql { path: path.clone(), cause: e })?;
        tx.commit().map_err(|e| StoreError::Sql { path: path.clone(), cause: e })?;
    }
    Ok(())
}

impl Store {
    /// Creates a store at `path` with only the first `version` migrations:
    /// how tests make a store "written by an older scalelab".
    pub fn create_at_version(path: &std::path::Path, version: i64) -> Result<Store, StoreError> {
        let conn = rusqlite::Connection::open(path)
            .map_err(|e| StoreError::Open { path: path.into(), cause: e.to_string() })?;
        let mut store = Store { conn, path: path.to_path_buf() };
        migrate_to(&mut store, 0, version)?;
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
