//! Database text parsers: pure functions over what the server returned, with
//! no driver dependency (the caller runs the statements).
//!
//! - [`innodb`]: SEMAPHORES of `SHOW ENGINE INNODB STATUS` (MariaDB 10.x, MySQL 5.7/8.0).
//! - [`mysql_status`]: `SHOW GLOBAL STATUS` rows into typed counters.
//! - [`perf_schema`]: MySQL/MariaDB `performance_schema` wait summaries and their top waits.
//! - [`pg_activity`]: `pg_stat_activity` rows into a wait-event profile.
//! - [`pg_stats`]: `pg_stat_database` and checkpoint counters.
//! - [`redis`]: Redis's `INFO` (stats, clients, memory, commandstats).
//! - [`sample`]: the stored per-second reading of the live database probe
//!   ([`DbSample`], sample kind `db`); its step summary is derived in `scalelab_analyze::telemetry`.

pub mod innodb;
pub mod mysql_status;
pub mod perf_schema;
pub mod pg_activity;
pub mod pg_stats;
pub mod redis;
pub mod sample;

pub use innodb::{parse_innodb_semaphores, InnodbSemaphores, SemaphoreFormat, SpinCounters};
pub use mysql_status::{GlobalStatus, HandlerCounters};
pub use perf_schema::{parse_instrumented, parse_waits, PerfSchemaWaits, WaitCounter};
pub use pg_activity::{ActivityRow, WaitProfile, WaitShare, PG_ACTIVITY_QUERY};
pub use pg_stats::{pg_database_query, PgCheckpoints, PgDatabaseStats, PG_BGWRITER_QUERY, PG_CHECKPOINTER_QUERY};
pub use sample::{DbSample, WAIT_CHUNK_MS};
