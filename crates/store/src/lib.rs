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

pub use runs::{NotStored, RunSelector};
pub use scalelab_core::RunSummary;
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
    #[error("store {path} is read-only ({why}): this command writes to it; pass --store with a writable path, or make the file and its folder writable")]
    ReadOnly { path: PathBuf, why: String },
    #[error("store {path} is read-only and was written by an older scalelab (schema {found}, this one reads {known}): open it once where it is writable to upgrade it")]
    ReadOnlyOld { path: PathBuf, found: i64, known: i64 },
    #[error("no store at {0} (run `scalelab sweep` first, or pass --store PATH)")]
    Missing(PathBuf),
    #[error("{path} is a symbolic link: scalelab does not open its store through links; remove it or pass --store with the real path")]
    Link { path: PathBuf },
    #[error(
        "store {path}: the disk is full ({cause}); nothing was changed and the store is intact: free space on its filesystem and run again"
    )]
    DiskFull { path: PathBuf, cause: String },
    #[error("store {path} is damaged: {why}; nothing was changed: restore it from a copy, or pass --store with another path")]
    Damaged { path: PathBuf, why: String },
    #[error("store {0} holds only imported runs, and 'last' names the last measured one: name an imported run by id or label (`scalelab runs` lists them)")]
    OnlyImported(PathBuf),
    #[error("store {0} holds no run yet (run `scalelab sweep` first)")]
    NoRuns(PathBuf),
}

/// Refuses a store whose file or side files (`-journal`, `-wal`, `-shm`)
/// are symbolic links, before SQLite opens (or creates) any of them:
/// scalelab often runs as root, and SQLite follows a planted link to
/// whatever file it names (an empty one is turned into a database).
fn refuse_links(path: &Path) -> Result<(), StoreError> {
    for suffix in ["", "-journal", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        if std::fs::symlink_metadata(&name).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(StoreError::Link { path: name.into() });
        }
    }
    Ok(())
}

/// True when the filesystem holding `path` has no room left (blocks, or
/// inodes for a side file): what an SQLite I/O error on an existing store
/// then means. Root may write into the reserved blocks.
fn disk_full(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else { return false };
    // SAFETY: statvfs is plain old data; all zeroes is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a live, writable statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return false;
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let blocks = if root { st.f_bfree } else { st.f_bavail };
    let inodes = if root { st.f_ffree } else { st.f_favail };
    blocks == 0 || (st.f_files > 0 && inodes == 0)
}

/// `e` from the store at `path` as the error to show: the disk is full, or
/// what `otherwise` makes of it. SQLite says "disk I/O error" when it cannot
/// grow the `-shm` file of an existing store; that is no sign of a file
/// that is not a store.
fn classify(path: &Path, e: &rusqlite::Error, otherwise: impl FnOnce() -> StoreError) -> StoreError {
    full_disk(path, e).unwrap_or_else(otherwise)
}

/// [`StoreError::DiskFull`] when `e` is an I/O error and the disk is full.
fn full_disk(path: &Path, e: &rusqlite::Error) -> Option<StoreError> {
    let io = matches!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::DiskFull | rusqlite::ErrorCode::SystemIoFailure));
    (io && disk_full(path)).then(|| StoreError::DiskFull { path: path.into(), cause: e.to_string() })
}

/// True when SQLite refused because the file, its folder or its WAL files
/// cannot be written (as opposed to a file that is not a database).
fn is_read_only_error(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen))
}

/// An open run store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens (or creates) the store at `path` for writing and brings its
    /// schema up to date. A file that is not a scalelab store is refused
    /// untouched; one that cannot be written is [`StoreError::ReadOnly`].
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        refuse_links(path)?;
        // NOFOLLOW as well: the check above names a planted link, the flag
        // makes SQLite's own open refuse one planted after the check.
        let flags = rusqlite::OpenFlags::default() | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn = Connection::open_with_flags(path, flags)
            .map_err(|e| classify(path, &e, || StoreError::Open { path: path.into(), cause: e.to_string() }))?;
        // SQLite falls back to reading a file it may not write: say so now,
        // not at the first write in the middle of a run.
        if conn.is_readonly(rusqlite::DatabaseName::Main).unwrap_or(false) {
            return Err(StoreError::ReadOnly { path: path.into(), why: "the file is not writable".into() });
        }
        let mut store = Store { conn, path: path.to_path_buf() };
        schema::check_and_migrate(&mut store)?;
        Ok(store)
    }

    /// Opens an existing store for the commands that only read (`runs`,
    /// `show`, `diagnose`, `export`, `compare`, `report`): never creates a
    /// file, and works on a store the user may not write (a file or folder
    /// of another user, a read-only mount). A store with an older schema is
    /// upgraded when it is writable, as [`Store::open`] does.
    pub fn open_for_reading(path: &Path) -> Result<Store, StoreError> {
        refuse_links(path)?;
        if !path.exists() {
            return Err(StoreError::Missing(path.into()));
        }
        let store = Store::open_read_only(path)?;
        let found = schema::version_for_reading(&store)?;
        if found == LATEST_VERSION {
            return Ok(store);
        }
        drop(store);
        match Store::open(path) {
            Err(StoreError::ReadOnly { .. }) => Err(StoreError::ReadOnlyOld { path: path.into(), found, known: LATEST_VERSION }),
            other => other,
        }
    }

    /// What a writing command checks before any load: no link at the store
    /// or its side files, and an existing store readable, whole (its schema
    /// version and tables) and not newer than this build. Creates nothing
    /// and changes nothing (an older store is upgraded when opened).
    pub fn check_usable(path: &Path) -> Result<(), StoreError> {
        refuse_links(path)?;
        if !path.exists() {
            return Ok(());
        }
        let store = Store::open_read_only(path)?;
        schema::version_for_reading(&store).map(|_| ())
    }

    /// A read-only connection. In WAL mode a reader needs the `-shm` file;
    /// when it does not exist and the folder is not writable, SQLite cannot
    /// create it, and the file is opened as immutable instead (nothing can
    /// be writing it then: a writer would have created the `-shm` file).
    fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        use rusqlite::OpenFlags;
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let open = |target: &str| {
            let conn =
                Connection::open_with_flags(target, flags).map_err(|e| StoreError::Open { path: path.into(), cause: e.to_string() })?;
            let _ = conn.busy_timeout(std::time::Duration::from_secs(10));
            // Any read reaches the WAL index: this is where an unwritable folder shows.
            match conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0)) {
                Ok(_) => Ok(Ok(conn)),
                Err(e) if is_read_only_error(&e) => Ok(Err(e)),
                Err(e) => {
                    Err(classify(path, &e, || StoreError::NotAStore { path: path.into(), what: format!("not an SQLite database: {e}") }))
                }
            }
        };
        let conn = match open(&file_uri(path, false))? {
            Ok(conn) => conn,
            Err(e) => {
                // Immutable ignores the WAL: refuse rather than show a store
                // without the steps only its WAL holds (a killed writer's).
                let mut wal = path.as_os_str().to_owned();
                wal.push("-wal");
                if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
                    return Err(StoreError::Open {
                        path: path.into(),
                        cause: format!("its write-ahead log holds steps that can only be read where the folder is writable ({e})"),
                    });
                }
                open(&file_uri(path, true))?.map_err(|e| StoreError::Open { path: path.into(), cause: format!("cannot read it: {e}") })?
            }
        };
        Ok(Store { conn, path: path.to_path_buf() })
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql(&self, cause: rusqlite::Error) -> StoreError {
        full_disk(&self.path, &cause).unwrap_or(StoreError::Sql { path: self.path.clone(), cause })
    }
}

/// `file:PATH` (`?immutable=1` when asked), with the characters a URI gives
/// a meaning to percent-encoded.
fn file_uri(path: &Path, immutable: bool) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        match b {
            b'%' | b'?' | b'#' => uri.push_str(&format!("%{b:02X}")),
            _ if b.is_ascii() && !b.is_ascii_control() => uri.push(b as char),
            _ => uri.push_str(&format!("%{b:02X}")),
        }
    }
    if immutable {
        uri.push_str("?immutable=1");
    }
    uri
}
