//! PostgreSQL statistics views read once a second: `pg_stat_database` for
//! the target database (transactions, buffer hits, rows, deadlocks, temp
//! files) and the checkpoint counters (`pg_stat_bgwriter` up to 16,
//! `pg_stat_checkpointer` from 17).

use serde::{Deserialize, Serialize};

/// The `pg_stat_database` query for database `datname` (quoted as a literal).
pub fn pg_database_query(datname: &str) -> String {
    format!(
        "SELECT xact_commit, xact_rollback, blks_read, blks_hit, tup_returned, tup_fetched, tup_inserted, tup_updated, \
         tup_deleted, deadlocks, temp_files FROM pg_stat_database WHERE datname = '{}'",
        datname.replace('\'', "''")
    )
}

/// Checkpoint counters up to PostgreSQL 16.
pub const PG_BGWRITER_QUERY: &str = "SELECT checkpoints_timed, checkpoints_req FROM pg_stat_bgwriter";

/// Checkpoint counters from PostgreSQL 17 (moved out of `pg_stat_bgwriter`).
pub const PG_CHECKPOINTER_QUERY: &str = "SELECT num_timed AS checkpoints_timed, num_requested AS checkpoints_req FROM pg_stat_checkpointer";

/// Counters of one database since the statistics were last reset. A column
/// the server did not return, or returned as a non-number, is `None`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PgDatabaseStats {
    pub xact_commit: Option<u64>,
    pub xact_rollback: Option<u64>,
    pub blks_read: Option<u64>,
    pub blks_hit: Option<u64>,
    pub tup_returned: Option<u64>,
    pub tup_fetched: Option<u64>,
    pub tup_inserted: Option<u64>,
    pub tup_updated: Option<u64>,
    pub tup_deleted: Option<u64>,
    pub deadlocks: Option<u64>,
    pub temp_files: Option<u64>,
}

impl PgDatabaseStats {
    /// Parses one row given as `(column, value)` pairs (SQL NULL is `None`).
    /// `Err` says why when no known column holds a number: garbage is never zeros.
    pub fn from_named<'a>(row: impl IntoIterator<Item = (&'a str, Option<&'a str>)>) -> Result<PgDatabaseStats, String> {
        let mut s = PgDatabaseStats::default();
        let mut any = false;
        for (name, value) in row {
            let slot = match name.to_ascii_lowercase().as_str() {
                "xact_commit" => &mut s.xact_commit,
                "xact_rollback" => &mut s.xact_rollback,
                "blks_read" => &mut s.blks_read,
                "blks_hit" => &mut s.blks_hit,
                "tup_returned" => &mut s.tup_returned,
                "tup_fetched" => &mut s.tup_fetched,
                "tup_inserted" => &mut s.tup_inserted,
                "tup_updated" => &mut s.tup_updated,
                "tup_deleted" => &mut s.tup_deleted,
                "deadlocks" => &mut s.deadlocks,
                "temp_files" => &mut s.temp_files,
                _ => continue,
            };
            *slot = value.and_then(|v| v.trim().parse().ok());
            any |= slot.is_some();
        }
        if any {
            Ok(s)
        } else {
            Err("pg_stat_database returned no numeric counter".into())
        }
    }
}

/// Checkpoints started since the statistics were last reset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PgCheckpoints {
    /// Scheduled by `checkpoint_timeout`.
    pub timed: Option<u64>,
    /// Requested: `max_wal_size` reached, or an explicit CHECKPOINT.
    pub requested: Option<u64>,
}

impl PgCheckpoints {
    /// Parses the row of [`PG_BGWRITER_QUERY`] or [`PG_CHECKPOINTER_QUERY`];
    /// `Err` when neither counter is a number.
    pub fn from_named<'a>(row: impl IntoIterator<Item = (&'a str, Option<&'a str>)>) -> Result<PgCheckpoints, String> {
        let mut c = PgCheckpoints::default();
        for (name, value) in row {
            let v = value.and_then(|v| v.trim().parse().ok());
            match name {
                "checkpoints_timed" | "num_timed" => c.timed = v,
                "checkpoints_req" | "num_requested" => c.requested = v,
                _ => {}
            }
        }
        if c.timed.is_none() && c.requested.is_none() {
            return Err("no numeric checkpoint counter".into());
        }
        Ok(c)
    }

    /// Timed + requested, when both are known.
    pub fn total(&self) -> Option<u64> {
        Some(self.timed? + self.requested?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_quotes_the_name() {
        assert!(pg_database_query("o'brien").ends_with("datname = 'o''brien'"));
    }

    #[test]
    fn parses_and_rejects() {
        let s = PgDatabaseStats::from_named([("xact_commit", Some("12")), ("blks_hit", Some("x")), ("deadlocks", None)]).unwrap();
        assert_eq!((s.xact_commit, s.blks_hit, s.deadlocks), (Some(12), None, None));
        assert!(PgDatabaseStats::from_named([("xact_commit", Some("lots"))]).is_err());
        assert!(PgDatabaseStats::from_named([]).is_err());
        let c = PgCheckpoints::from_named([("checkpoints_timed", Some("3")), ("checkpoints_req", Some("1"))]).unwrap();
        assert_eq!(c.total(), Some(4));
        assert!(PgCheckpoints::from_named([("checkpoints_timed", Some("-"))]).is_err());
    }
}
