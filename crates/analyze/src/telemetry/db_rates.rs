//! Database counters between two readings as rates: `SHOW GLOBAL STATUS`,
//! InnoDB SEMAPHORES, and the `performance_schema` waits that grew most.

use super::rates::opt_per_second;
use scalelab_core::sample::{GlobalStatus, InnodbSemaphores, PerfSchemaWaits, WaitCounter, COND_PREFIX};
use serde::{Deserialize, Serialize};

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
    let r = |x: Option<u64>, y: Option<u64>| opt_per_second(x, y, secs);
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

/// Latch contention per second between two readings, all kinds together.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SemaphoreRates {
    pub spin_waits_per_s: f64,
    pub spin_rounds_per_s: f64,
    pub os_waits_per_s: f64,
    /// Spin rounds per OS wait: rising with concurrency means threads burn
    /// CPU spinning before they give up.
    pub rounds_per_os_wait: Option<f64>,
}

/// Rates between two readings `secs` apart; `None` if counters are absent,
/// the layout changed, or any went backwards (server restart).
pub fn semaphore_rates(a: &InnodbSemaphores, b: &InnodbSemaphores, secs: f64) -> Option<SemaphoreRates> {
    (secs > 0.0 && a.format == b.format).then_some(())?;
    let (x, y) = (a.total()?, b.total()?);
    let spin = y.spin_waits.checked_sub(x.spin_waits)?;
    let rounds = y.rounds.checked_sub(x.rounds)?;
    let os = y.os_waits.checked_sub(x.os_waits)?;
    Some(SemaphoreRates {
        spin_waits_per_s: spin as f64 / secs,
        spin_rounds_per_s: rounds as f64 / secs,
        os_waits_per_s: os as f64 / secs,
        rounds_per_os_wait: (os > 0).then(|| rounds as f64 / os as f64),
    })
}

/// One wait instrument's activity over a window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WaitRate {
    pub event: String,
    pub waits_per_s: f64,
    /// Wait time per wall second, ms/s (1000 = one thread always waiting);
    /// `None` for an untimed instrument.
    pub wait_ms_per_s: Option<f64>,
}

/// The `n` instruments that waited longest between readings `a` and `b`
/// (`secs` apart), then most often; condition variables and instruments
/// that did not wait are left out. `None` when the interval is not positive.
/// An instrument whose counter went backwards (server restart, TRUNCATE of
/// the summary) is left out rather than given a made-up rate.
pub fn top_waits(a: &PerfSchemaWaits, b: &PerfSchemaWaits, secs: f64, n: usize) -> Option<Vec<WaitRate>> {
    if secs <= 0.0 {
        return None;
    }
    let mut out: Vec<WaitRate> = b
        .events
        .iter()
        .filter(|(name, _)| !name.starts_with(COND_PREFIX))
        .filter_map(|(name, y)| {
            // An instrument first seen in `b` waited only after `a`: it counts from 0.
            let x = a.events.get(name).copied().unwrap_or(WaitCounter { count: 0, wait_ps: Some(0) });
            let waits = y.count.checked_sub(x.count)?;
            (waits > 0).then_some(())?;
            let ps = match (x.wait_ps, y.wait_ps) {
                (Some(p), Some(q)) => Some(q.checked_sub(p)?),
                _ => None,
            };
            Some(WaitRate { event: name.clone(), waits_per_s: waits as f64 / secs, wait_ms_per_s: ps.map(|p| p as f64 / 1e9 / secs) })
        })
        .collect();
    out.sort_by(|p, q| {
        let t = |w: &WaitRate| w.wait_ms_per_s.unwrap_or(-1.0);
        t(q).total_cmp(&t(p)).then(q.waits_per_s.total_cmp(&p.waits_per_s)).then(p.event.cmp(&q.event))
    });
    out.truncate(n);
    Some(out)
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
}
