//! The run store: one SQLite file holding every run, step, per-second series
//! and HDR histogram, so results are data that can be shown, compared and
//! exported later.
//!
//! - [`schema`]: versioned migrations (`src/migrations/*.sql`), applied on open.
//! - [`runs`]: writing a run step by step, and reading runs back.
//!
//! Each finished step is committed in its own transaction, in WAL mode, so a
//! run killed with SIGKILL keeps every step it finished and shows as
//! incomplete.

pub mod runs;
pub mod schema;

pub use runs::{RunSelector, RunSummary};
pub use schema::LATEST_VERSION;

use rusqlite::Connection;
use std::path::{Path, PathBuf};

/// Why the store could not be used; messages name the path and the fix.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open store {path}: {cause} (check the folder exists and is writable, or pass --store PATH)")]
    Open { path: PathBuf, cause: String },
    #[error("{path} is not a scalelab store (it is {what}); nothing was changed: pass --store with another path")]
    NotAStore { path: PathBuf, what: String },
    #[error("{path} was written by a newer scalelab (schema {found}, this one knows up to {known}); upgrade scalelab")]
    TooNew { path: PathBuf, found: i64, known: i64 },
    #[error("no run matches '{0}' (use an id, a label, or 'last'; `scalelab runs` lists them)")]
    NoSuchRun(String),
    #[error("label '{label}' matches {count} runs ({ids}); name the run by id")]
    Ambiguous { label: String, count: usize, ids: String },
    #[error("store {path}: {cause}")]
    Sql { path: PathBuf, cause: rusqlite::Error },
    #[error("store {path}: corrupt data in run {run}: {why}")]
    Corrupt { path: PathBuf, run: i64, why: String },
}

/// An open run store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens (or creates) the store at `path` and brings its schema up to date.
    /// A file that is not a scalelab store is refused untouched.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let conn = Connection::open(path).map_err(|e| StoreError::Open { path: path.into(), cause: e.to_string() })?;
        let mut store = Store { conn, path: path.to_path_buf() };
        schema::check_and_migrate(&mut store)?;
        Ok(store)
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql(&self, cause: rusqlite::Error) -> StoreError {
        StoreError::Sql { path: self.path.clone(), cause }
    }
}
