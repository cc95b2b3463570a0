//! `SHOW GLOBAL STATUS` (MySQL and MariaDB) as typed counters.

use serde::{Deserialize, Serialize};

pub use scalelab_core::sample::{GlobalStatus, HandlerCounters};

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
