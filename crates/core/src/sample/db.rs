//! The database probe's readings: MySQL/MariaDB `SHOW GLOBAL STATUS`, InnoDB
//! SEMAPHORES and `performance_schema` waits; PostgreSQL statistics views and
//! `pg_stat_activity` wait profiles. Counters as the server gave them.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Spin and wait counters of one kind of latch, since server start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpinCounters {
    /// Times a thread found the latch taken and started spinning.
    pub spin_waits: u64,
    /// Spin-loop iterations: CPU burnt waiting.
    pub rounds: u64,
    /// Times spinning gave up and the thread slept in the OS.
    pub os_waits: u64,
}

/// Which layout the section had.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SemaphoreFormat {
    /// `Mutex spin waits` plus rw-lock lines (MySQL 5.6/5.7, MariaDB <= 10.5).
    MutexAndRwLocks,
    /// Rw-lock lines only (MySQL 8.0+).
    RwLocksOnly,
    /// No counters at all (MariaDB 10.6+).
    NoCounters,
}

/// What the SEMAPHORES section says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InnodbSemaphores {
    pub format: SemaphoreFormat,
    pub reservation_count: Option<u64>,
    pub signal_count: Option<u64>,
    pub mutex: Option<SpinCounters>,
    pub rw_shared: Option<SpinCounters>,
    pub rw_excl: Option<SpinCounters>,
    pub rw_sx: Option<SpinCounters>,
    /// Threads waiting on a latch right now (`--Thread ... has waited at`).
    pub waiting_threads: u32,
    /// Why the spin counters are absent, when they are.
    pub unavailable: Option<String>,
}

impl InnodbSemaphores {
    /// Sum over the kinds present; `None` if none is.
    pub fn total(&self) -> Option<SpinCounters> {
        let kinds = [self.mutex, self.rw_shared, self.rw_excl, self.rw_sx];
        kinds.iter().flatten().copied().reduce(|a, b| SpinCounters {
            spin_waits: a.spin_waits + b.spin_waits,
            rounds: a.rounds + b.rounds,
            os_waits: a.os_waits + b.os_waits,
        })
    }
}

/// Handler counters: row-level work the storage engines were asked to do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandlerCounters {
    pub read_first: Option<u64>,
    pub read_key: Option<u64>,
    pub read_next: Option<u64>,
    pub read_prev: Option<u64>,
    pub read_rnd: Option<u64>,
    /// Full-scan reads: high values mean table scans.
    pub read_rnd_next: Option<u64>,
    pub write: Option<u64>,
    pub update: Option<u64>,
    pub delete: Option<u64>,
    pub commit: Option<u64>,
    pub rollback: Option<u64>,
}

/// The counters scalelab reads from `SHOW GLOBAL STATUS`. Counters are since
/// server start; `threads_running`/`threads_connected` are gauges. A name
/// the server did not return (or a non-numeric value) is `None`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobalStatus {
    pub uptime_s: Option<u64>,
    pub questions: Option<u64>,
    pub queries: Option<u64>,
    pub com_select: Option<u64>,
    pub com_insert: Option<u64>,
    pub com_update: Option<u64>,
    pub com_delete: Option<u64>,
    pub com_commit: Option<u64>,
    pub com_rollback: Option<u64>,
    pub threads_running: Option<u64>,
    pub threads_connected: Option<u64>,
    pub threads_created: Option<u64>,
    /// Table lock requests that had to wait: a hot table lock (MyISAM, LOCK TABLES).
    pub table_locks_waited: Option<u64>,
    pub table_locks_immediate: Option<u64>,
    pub innodb_row_lock_waits: Option<u64>,
    /// Total time spent waiting for row locks, milliseconds.
    pub innodb_row_lock_time_ms: Option<u64>,
    /// Row lock waits in progress (gauge).
    pub innodb_row_lock_current_waits: Option<u64>,
    pub key_reads: Option<u64>,
    pub key_read_requests: Option<u64>,
    pub created_tmp_disk_tables: Option<u64>,
    pub created_tmp_tables: Option<u64>,
    pub slow_queries: Option<u64>,
    pub handler: HandlerCounters,
}

impl GlobalStatus {
    /// Builds the struct from `(Variable_name, Value)` rows, matching names
    /// case-insensitively (information_schema returns them upper-case).
    pub fn from_rows<'a>(rows: impl IntoIterator<Item = (&'a str, &'a str)>) -> GlobalStatus {
        let mut s = GlobalStatus::default();
        for (name, value) in rows {
            let Some(slot) = s.slot(&name.to_ascii_lowercase()) else {
                continue;
            };
            *slot = value.trim().parse().ok();
        }
        s
    }

    fn slot(&mut self, name: &str) -> Option<&mut Option<u64>> {
        let h = &mut self.handler;
        Some(match name {
            "uptime" => &mut self.uptime_s,
            "questions" => &mut self.questions,
            "queries" => &mut self.queries,
            "com_select" => &mut self.com_select,
            "com_insert" => &mut self.com_insert,
            "com_update" => &mut self.com_update,
            "com_delete" => &mut self.com_delete,
            "com_commit" => &mut self.com_commit,
            "com_rollback" => &mut self.com_rollback,
            "threads_running" => &mut self.threads_running,
            "threads_connected" => &mut self.threads_connected,
            "threads_created" => &mut self.threads_created,
            "table_locks_waited" => &mut self.table_locks_waited,
            "table_locks_immediate" => &mut self.table_locks_immediate,
            "innodb_row_lock_waits" => &mut self.innodb_row_lock_waits,
            "innodb_row_lock_time" => &mut self.innodb_row_lock_time_ms,
            "innodb_row_lock_current_waits" => &mut self.innodb_row_lock_current_waits,
            "key_reads" => &mut self.key_reads,
            "key_read_requests" => &mut self.key_read_requests,
            "created_tmp_disk_tables" => &mut self.created_tmp_disk_tables,
            "created_tmp_tables" => &mut self.created_tmp_tables,
            "slow_queries" => &mut self.slow_queries,
            "handler_read_first" => &mut h.read_first,
            "handler_read_key" => &mut h.read_key,
            "handler_read_next" => &mut h.read_next,
            "handler_read_prev" => &mut h.read_prev,
            "handler_read_rnd" => &mut h.read_rnd,
            "handler_read_rnd_next" => &mut h.read_rnd_next,
            "handler_write" => &mut h.write,
            "handler_update" => &mut h.update,
            "handler_delete" => &mut h.delete,
            "handler_commit" => &mut h.commit,
            "handler_rollback" => &mut h.rollback,
            _ => return None,
        })
    }

    /// Names of the listed counters the server did not return.
    pub fn missing(&self) -> Vec<&'static str> {
        [
            (self.questions, "Questions"),
            (self.com_select, "Com_select"),
            (self.threads_running, "Threads_running"),
            (self.threads_connected, "Threads_connected"),
            (self.table_locks_waited, "Table_locks_waited"),
            (self.innodb_row_lock_waits, "Innodb_row_lock_waits"),
            (self.innodb_row_lock_time_ms, "Innodb_row_lock_time"),
            (self.key_reads, "Key_reads"),
            (self.created_tmp_disk_tables, "Created_tmp_disk_tables"),
        ]
        .into_iter()
        .filter_map(|(v, n)| v.is_none().then_some(n))
        .collect()
    }
}

/// Condition-variable waits: stored, but not ranked (see the module doc).
pub const COND_PREFIX: &str = "wait/synch/cond/";

/// One instrument's cumulative counters since server start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitCounter {
    /// `COUNT_STAR`: waits.
    pub count: u64,
    /// `SUM_TIMER_WAIT` in picoseconds; `None` when the instrument counts
    /// but is not timed (the server reports 0 then, which is not "no time").
    pub wait_ps: Option<u64>,
}

/// One reading of the wait summaries (stored with each `db` sample).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PerfSchemaWaits {
    /// Cumulative counters by event name (`wait/synch/mutex/innodb/buf_pool_mutex`).
    pub events: BTreeMap<String, WaitCounter>,
    /// Rows left out because they were not `name, count, time` (truncated or garbage).
    #[serde(default)]
    pub bad_rows: u32,
    /// Instrument classes enabled and timed when the probe started (from
    /// `probe`'s `PERF_SCHEMA_INSTRUMENTS_QUERY`), so a reader knows what could show.
    #[serde(default)]
    pub instrumented: Vec<String>,
}

/// The name used for "active with no wait event": running on a CPU (or
/// waiting for one, which PostgreSQL cannot tell apart).
pub const CPU: &str = "CPU";

/// One row of `pg_stat_activity` (SQL NULL is `None`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ActivityRow<'a> {
    /// `client backend`, `autovacuum worker`, ...; `None` before PostgreSQL 10.
    pub backend_type: Option<&'a str>,
    pub state: Option<&'a str>,
    pub wait_event_type: Option<&'a str>,
    pub wait_event: Option<&'a str>,
}

impl ActivityRow<'_> {
    /// A client backend executing a statement.
    fn is_active_client(&self) -> bool {
        let client = !matches!(self.backend_type, Some(t) if t != "client backend");
        client && self.state == Some("active")
    }
}

/// Samples of one wait event (or CPU).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WaitShare {
    /// `Lock`, `LWLock`, `IO`, `Client`, ... or [`CPU`].
    pub wait_event_type: String,
    /// `transactionid`, `WALWrite`, ...; `None` for CPU.
    pub wait_event: Option<String>,
    /// Active-backend samples in this state.
    pub samples: u64,
    /// Share of all active-backend samples, percent.
    pub pct: f64,
}

/// Accumulates polls of `pg_stat_activity` (10 Hz or more) over a step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WaitProfile {
    polls: u64,
    active: u64,
    events: Vec<(String, Option<String>, u64)>,
}

impl WaitProfile {
    /// Adds one poll: all rows returned by one run of the query.
    pub fn add_poll<'a>(&mut self, rows: impl IntoIterator<Item = ActivityRow<'a>>) {
        self.polls += 1;
        for row in rows.into_iter().filter(ActivityRow::is_active_client) {
            self.active += 1;
            let (ty, ev) = match row.wait_event_type {
                Some(t) if !t.is_empty() => (t, row.wait_event),
                _ => (CPU, None),
            };
            match self.events.iter_mut().find(|(t, e, _)| t == ty && e.as_deref() == ev) {
                Some((_, _, n)) => *n += 1,
                None => self.events.push((ty.to_string(), ev.map(str::to_string), 1)),
            }
        }
    }

    /// Polls added.
    pub fn polls(&self) -> u64 {
        self.polls
    }

    /// Mean number of active client backends per poll.
    pub fn mean_active(&self) -> Option<f64> {
        (self.polls > 0).then(|| self.active as f64 / self.polls as f64)
    }

    /// Share per (type, event), largest first; empty if nothing was active.
    pub fn shares(&self) -> Vec<WaitShare> {
        let mut v: Vec<WaitShare> = self
            .events
            .iter()
            .map(|(t, e, n)| WaitShare {
                wait_event_type: t.clone(),
                wait_event: e.clone(),
                samples: *n,
                pct: *n as f64 * 100.0 / self.active as f64,
            })
            .collect();
        v.sort_by(|a, b| b.samples.cmp(&a.samples).then_with(|| a.wait_event_type.cmp(&b.wait_event_type)));
        v
    }

    /// Share per wait-event type (CPU included), largest first.
    pub fn shares_by_type(&self) -> Vec<(String, f64)> {
        let mut v: Vec<(String, u64)> = Vec::new();
        for (t, _, n) in &self.events {
            match v.iter_mut().find(|(x, _)| x == t) {
                Some((_, m)) => *m += n,
                None => v.push((t.clone(), *n)),
            }
        }
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v.into_iter().map(|(t, n)| (t, n as f64 * 100.0 / self.active as f64)).collect()
    }

    /// Adds another profile (e.g. several pollers, or seconds into a step).
    pub fn merge(&mut self, other: &WaitProfile) {
        self.polls += other.polls;
        self.active += other.active;
        for (t, e, n) in &other.events {
            match self.events.iter_mut().find(|(x, y, _)| x == t && y == e) {
                Some((_, _, m)) => *m += n,
                None => self.events.push((t.clone(), e.clone(), *n)),
            }
        }
    }
}

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
    /// Parses the row of `probe`'s `PG_BGWRITER_QUERY` or `PG_CHECKPOINTER_QUERY`;
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

/// Span of one stored wait-profile chunk: short, so that a step's profile
/// holds the polls of its own window and not those of the step after it.
pub const WAIT_CHUNK_MS: i64 = 250;

/// One reading of the database probe: raw counters as the server gave them
/// (rates are derived later), once a second; for PostgreSQL also, in
/// records of their own every [`WAIT_CHUNK_MS`], the wait profile of the
/// activity polls made from `since_unix_ms` to `unix_ms`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DbSample {
    pub unix_ms: i64,
    /// `mysql` or `postgres`.
    pub engine: String,
    /// MySQL/MariaDB: `SHOW GLOBAL STATUS`.
    pub status: Option<GlobalStatus>,
    /// MySQL/MariaDB: the SEMAPHORES section of `SHOW ENGINE INNODB STATUS`.
    pub innodb: Option<InnodbSemaphores>,
    /// MySQL/MariaDB: cumulative `performance_schema` wait summaries, when it is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perf_schema: Option<PerfSchemaWaits>,
    /// PostgreSQL: `pg_stat_database` of the target database.
    pub pg_database: Option<PgDatabaseStats>,
    /// PostgreSQL: checkpoint counters.
    pub pg_checkpoints: Option<PgCheckpoints>,
    /// PostgreSQL: `pg_stat_activity` polls made since `since_unix_ms`.
    pub pg_waits: Option<WaitProfile>,
    /// Start of the span `pg_waits` covers.
    #[serde(default)]
    pub since_unix_ms: Option<i64>,
    /// Redis: one `INFO` reading and the slow log's length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redis: Option<RedisInfo>,
}

/// Redis: the counters of one `INFO` (sections stats, clients, memory,
/// threads, commandstats), `SLOWLOG LEN` and `LATENCY LATEST`; cumulative
/// ones are rated per step. A field Redis did not report is `None`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RedisInfo {
    pub total_commands_processed: Option<u64>,
    pub connected_clients: Option<u64>,
    pub blocked_clients: Option<u64>,
    pub used_memory: Option<u64>,
    pub evicted_keys: Option<u64>,
    pub rejected_connections: Option<u64>,
    pub keyspace_hits: Option<u64>,
    pub keyspace_misses: Option<u64>,
    /// `io_threads_active`: 0 while Redis does all network I/O on its main thread.
    pub io_threads_active: Option<u64>,
    pub slowlog_len: Option<u64>,
    /// `commandstats`: each command's calls and microseconds, cumulative.
    pub commands: Vec<RedisCommandStat>,
    /// `CONFIG GET latency-monitor-threshold`, ms (0: the latency monitor
    /// is off and `LATENCY LATEST` stays empty); None: not readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_threshold_ms: Option<u64>,
    /// `LATENCY LATEST`: each event's latest spike; None: not readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_latest: Option<Vec<RedisLatencyEvent>>,
}

/// One line of `LATENCY LATEST`: an event (`command`, `fast-command`,
/// `fork`, `expire-cycle`, ...) that took at least the threshold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RedisLatencyEvent {
    pub event: String,
    /// When its latest spike happened, Unix seconds (the server's clock).
    pub latest_unix_s: i64,
    pub latest_ms: u64,
    /// The longest since the server started or `LATENCY RESET`.
    pub max_ms: u64,
}

/// One command's line of `INFO commandstats`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RedisCommandStat {
    /// Lower case, as Redis names it (`get`, `set`, `client|list`).
    pub command: String,
    pub calls: u64,
    pub usec: u64,
}

impl DbSample {
    /// A reading of counters (not a wait-profile chunk).
    pub fn has_counters(&self) -> bool {
        self.status.is_some()
            || self.innodb.is_some()
            || self.perf_schema.is_some()
            || self.pg_database.is_some()
            || self.pg_checkpoints.is_some()
            || self.redis.is_some()
    }
}
