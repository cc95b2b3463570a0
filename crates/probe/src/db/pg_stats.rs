//! PostgreSQL statistics views read once a second: `pg_stat_database` for
//! the target database (transactions, buffer hits, rows, deadlocks, temp
//! files) and the checkpoint counters (`pg_stat_bgwriter` up to 16,
//! `pg_stat_checkpointer` from 17).

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

pub use scalelab_core::sample::{PgCheckpoints, PgDatabaseStats};

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
