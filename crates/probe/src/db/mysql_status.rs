//! `SHOW GLOBAL STATUS` (MySQL and MariaDB) as typed counters.

use serde::{Deserialize, Serialize};

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

/// Selected rates between two `SHOW GLOBAL STATUS` readings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GlobalStatusRates {
    pub questions_per_s: Option<f64>,
    pub com_select_per_s: Option<f64>,
    pub com_insert_per_s: Option<f64>,
    pub com_update_per_s: Option<f64>,
    pub com_delete_per_s: Option<f64>,
    pub table_locks_waited_per_s: Option<f64>,
    pub innodb_row_lock_waits_per_s: Option<f64>,
    /// Row-lock wait time per wall second, ms/s (1000 = one thread always waiting).
    pub innodb_row_lock_time_ms_per_s: Option<f64>,
    /// Share of key-cache reads that went to disk, percent.
    pub key_cache_miss_pct: Option<f64>,
    pub created_tmp_disk_tables_per_s: Option<f64>,
    pub handler_read_rnd_next_per_s: Option<f64>,
    /// Gauges from the later reading.
    pub threads_running: Option<u64>,
    pub threads_connected: Option<u64>,
}

/// Rates between readings `a` and `b`, `secs` apart; a counter that went
/// backwards (server restart, FLUSH STATUS) gives `None`.
pub fn global_status_rates(a: &GlobalStatus, b: &GlobalStatus, secs: f64) -> GlobalStatusRates {
    let r = |x: Option<u64>, y: Option<u64>| crate::rates::opt_per_second(x, y, secs);
    let d = |x: Option<u64>, y: Option<u64>| y?.checked_sub(x?);
    let miss = d(a.key_reads, b.key_reads)
        .zip(d(a.key_read_requests, b.key_read_requests))
        .and_then(|(reads, reqs)| (reqs > 0).then(|| reads as f64 * 100.0 / reqs as f64));
    GlobalStatusRates {
        questions_per_s: r(a.questions, b.questions),
        com_select_per_s: r(a.com_select, b.com_select),
        com_insert_per_s: r(a.com_insert, b.com_insert),
        com_update_per_s: r(a.com_update, b.com_update),
        com_delete_per_s: r(a.com_delete, b.com_delete),
        table_locks_waited_per_s: r(a.table_locks_waited, b.table_locks_waited),
        innodb_row_lock_waits_per_s: r(a.innodb_row_lock_waits, b.innodb_row_lock_waits),
        innodb_row_lock_time_ms_per_s: r(a.innodb_row_lock_time_ms, b.innodb_row_lock_time_ms),
        key_cache_miss_pct: miss,
        created_tmp_disk_tables_per_s: r(a.created_tmp_disk_tables, b.created_tmp_disk_tables),
        handler_read_rnd_next_per_s: r(a.handler.read_rnd_next, b.handler.read_rnd_next),
        threads_running: b.threads_running,
        threads_connected: b.threads_connected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_to_struct_and_rates() {
        let a = GlobalStatus::from_rows([("Questions", "100"), ("KEY_READS", "1"), ("Key_read_requests", "10")]);
        let b = GlobalStatus::from_rows([("Questions", "300"), ("Key_reads", "3"), ("Key_read_requests", "30"), ("Threads_running", "4")]);
        assert_eq!(a.key_reads, Some(1));
        let r = global_status_rates(&a, &b, 2.0);
        assert_eq!(r.questions_per_s, Some(100.0));
        assert_eq!(r.key_cache_miss_pct, Some(10.0));
        assert_eq!(r.threads_running, Some(4));
        assert_eq!(r.com_select_per_s, None);
        let restarted = GlobalStatus::from_rows([("Questions", "5")]);
        assert_eq!(global_status_rates(&b, &restarted, 1.0).questions_per_s, None);
    }

    #[test]
    fn garbage_values_are_none() {
        let s = GlobalStatus::from_rows([("Questions", "many"), ("Com_select", ""), ("Uptime", "-3")]);
        assert_eq!((s.questions, s.com_select, s.uptime_s), (None, None, None));
        assert!(s.missing().contains(&"Questions"));
    }
}
