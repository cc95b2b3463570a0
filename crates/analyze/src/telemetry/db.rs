//! The step-window summary of the database probe's readings
//! ([`DbSample`], sample kind `db`), derived at analysis time.

use super::db_rates::{global_status_rates, semaphore_rates, top_waits};
use super::rates::opt_per_second;
use scalelab_core::sample::{DbSample, PerfSchemaWaits, WaitProfile, CPU};
use scalelab_core::{DbTelemetry, DbWait, PerfSchemaWait};

/// How far before or after a window a reading may stand for it when none
/// lies within half a second (the probe reads once a second).
pub const BRACKET_MS: i64 = 1500;

/// Wait events kept per step in [`DbTelemetry::waits`].
pub const TOP_WAITS: usize = 5;

fn label(ty: &str, ev: Option<&str>) -> String {
    match ev {
        Some(e) if ty != CPU => format!("{ty}:{e}"),
        _ => ty.to_string(),
    }
}

/// Summarizes the readings around the window `[start_ms, end_ms]`: counter
/// rates between the first and the last reading within half a second of the
/// window, gauges averaged, and the wait-profile chunks that lie inside the
/// window (50 ms of slack) merged. A window shorter than the probe's second
/// may have no reading that near: then the readings just before and just
/// after it (within [`BRACKET_MS`]) stand for it. `Err` says why nothing
/// could be summarized.
pub fn summarize_db(samples: &[DbSample], start_ms: i64, end_ms: i64) -> Result<DbTelemetry, String> {
    let counted = || samples.iter().filter(|s| s.has_counters());
    let mut near: Vec<&DbSample> = counted().filter(|s| s.unix_ms >= start_ms - 500 && s.unix_ms <= end_ms + 500).collect();
    if near.is_empty() {
        // (A 300 ms step on a loaded machine fell between two readings 1 s apart.)
        let before = counted().filter(|s| s.unix_ms < start_ms && s.unix_ms >= start_ms - BRACKET_MS).max_by_key(|s| s.unix_ms);
        let after = counted().filter(|s| s.unix_ms > end_ms && s.unix_ms <= end_ms + BRACKET_MS).min_by_key(|s| s.unix_ms);
        near = before.into_iter().chain(after).collect();
    }
    let chunks: Vec<&WaitProfile> = samples
        .iter()
        .filter(|s| s.since_unix_ms.is_some_and(|from| from >= start_ms - 50) && s.unix_ms <= end_ms + 50)
        .filter_map(|s| s.pg_waits.as_ref())
        .collect();
    let engine = near.last().map(|s| s.engine.clone()).or_else(|| (!chunks.is_empty()).then(|| "postgres".to_string()));
    let Some(engine) = engine else {
        return Err("no database reading in the window".into());
    };
    let mut t = DbTelemetry { engine, samples: near.len() as u32, ..Default::default() };
    let empty = DbSample::default();
    let empty_ps = PerfSchemaWaits::default();
    let (a, b) = match (near.first(), near.last()) {
        (Some(a), Some(b)) => (*a, *b),
        _ => (&empty, &empty),
    };
    let secs = (b.unix_ms - a.unix_ms) as f64 / 1000.0;
    let mean = |f: &dyn Fn(&DbSample) -> Option<u64>| {
        let v: Vec<f64> = near.iter().filter_map(|s| f(s)).map(|x| x as f64).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    t.threads_running_avg = mean(&|s| s.status.and_then(|x| x.threads_running));
    t.threads_connected_avg = mean(&|s| s.status.and_then(|x| x.threads_connected));
    if secs > 0.0 {
        if let (Some(x), Some(y)) = (a.status, b.status) {
            let r = global_status_rates(&x, &y, secs);
            t.questions_per_s = r.questions_per_s;
            t.com_select_per_s = r.com_select_per_s;
            t.com_insert_per_s = r.com_insert_per_s;
            t.com_update_per_s = r.com_update_per_s;
            t.com_delete_per_s = r.com_delete_per_s;
            t.row_lock_waits_per_s = r.innodb_row_lock_waits_per_s;
            t.row_lock_time_ms_per_s = r.innodb_row_lock_time_ms_per_s;
            t.table_locks_waited_per_s = r.table_locks_waited_per_s;
            let d = |p: Option<u64>, q: Option<u64>| q?.checked_sub(p?);
            t.table_locks_waited_pct = d(x.table_locks_waited, y.table_locks_waited)
                .zip(d(x.table_locks_immediate, y.table_locks_immediate))
                .and_then(|(w, i)| (w + i > 0).then(|| w as f64 * 100.0 / (w + i) as f64));
            t.key_cache_miss_pct = r.key_cache_miss_pct;
            t.tmp_disk_tables_per_s = r.created_tmp_disk_tables_per_s;
            t.handler_read_rnd_next_per_s = r.handler_read_rnd_next_per_s;
        }
        if let Some(r) = a.innodb.as_ref().zip(b.innodb.as_ref()).and_then(|(x, y)| semaphore_rates(x, y, secs)) {
            t.spin_waits_per_s = Some(r.spin_waits_per_s);
            t.spin_rounds_per_s = Some(r.spin_rounds_per_s);
            t.os_waits_per_s = Some(r.os_waits_per_s);
            t.rounds_per_os_wait = r.rounds_per_os_wait;
        }
        // The first and last readings that have the summaries (a reading may lack them after an error).
        let first = near.iter().find(|s| s.perf_schema.is_some());
        let last = near.iter().rev().find(|s| s.perf_schema.is_some());
        if let (Some(x), Some(y)) = (first, last) {
            let (px, py) = (x.perf_schema.as_ref().unwrap_or(&empty_ps), y.perf_schema.as_ref().unwrap_or(&empty_ps));
            let ps_secs = (y.unix_ms - x.unix_ms) as f64 / 1000.0;
            t.perf_schema_top_waits = top_waits(px, py, ps_secs, TOP_WAITS).map(|v| {
                v.into_iter()
                    .map(|w| PerfSchemaWait { event: w.event, waits_per_s: w.waits_per_s, wait_ms_per_s: w.wait_ms_per_s })
                    .collect()
            });
        }
        if let (Some(x), Some(y)) = (a.pg_database, b.pg_database) {
            let rate = |p: Option<u64>, q: Option<u64>| opt_per_second(p, q, secs);
            let delta = |p: Option<u64>, q: Option<u64>| q?.checked_sub(p?);
            t.xact_commit_per_s = rate(x.xact_commit, y.xact_commit);
            t.xact_rollback_per_s = rate(x.xact_rollback, y.xact_rollback);
            t.deadlocks = delta(x.deadlocks, y.deadlocks);
            t.temp_files = delta(x.temp_files, y.temp_files);
            let hit = delta(x.blks_hit, y.blks_hit);
            let read = delta(x.blks_read, y.blks_read);
            t.blks_hit_pct = hit.zip(read).and_then(|(h, r)| (h + r > 0).then(|| h as f64 * 100.0 / (h + r) as f64));
            t.tup_read_per_s = rate(x.tup_returned, y.tup_returned).zip(rate(x.tup_fetched, y.tup_fetched)).map(|(p, q)| p + q);
            t.tup_written_per_s = [(x.tup_inserted, y.tup_inserted), (x.tup_updated, y.tup_updated), (x.tup_deleted, y.tup_deleted)]
                .iter()
                .map(|(p, q)| rate(*p, *q))
                .sum();
        }
        t.checkpoints = a.pg_checkpoints.zip(b.pg_checkpoints).and_then(|(x, y)| y.total()?.checked_sub(x.total()?));
    }
    t.redis = redis_window(&near, start_ms, end_ms);
    if let Some(p) = near.iter().rev().find_map(|s| s.perf_schema.as_ref()) {
        t.perf_schema_instrumented = Some(p.instrumented.clone());
    }
    let mut profile = WaitProfile::default();
    for p in chunks {
        profile.merge(p);
    }
    if let Some(p) = Some(profile).filter(|p| p.polls() > 0) {
        t.activity_polls = Some(p.polls());
        t.mean_active_backends = p.mean_active();
        t.waits = p
            .shares()
            .into_iter()
            .take(TOP_WAITS)
            .map(|w| DbWait { wait: label(&w.wait_event_type, w.wait_event.as_deref()), pct: w.pct })
            .collect();
        t.wait_types = p.shares_by_type().into_iter().map(|(wait, pct)| DbWait { wait, pct }).collect();
    }
    Ok(t)
}

/// A Redis window from its first and last `INFO` readings (gauges averaged
/// or maxed over all of them), and the latency events whose latest spike
/// (stamped to the second) fell in `[start_ms, end_ms]`; None without two
/// readings.
fn redis_window(near: &[&DbSample], start_ms: i64, end_ms: i64) -> Option<scalelab_core::RedisTelemetry> {
    let all: Vec<(i64, &scalelab_core::sample::RedisInfo)> = near.iter().filter_map(|s| Some((s.unix_ms, s.redis.as_ref()?))).collect();
    let (&(t0, a), &(t1, b)) = (all.first()?, all.last()?);
    let secs = (t1 - t0) as f64 / 1000.0;
    let delta = |p: Option<u64>, q: Option<u64>| q?.checked_sub(p?);
    let per_s = |p: Option<u64>, q: Option<u64>| (secs > 0.0).then_some(()).and(delta(p, q)).map(|d| d as f64 / secs);
    let hits = delta(a.keyspace_hits, b.keyspace_hits);
    let misses = delta(a.keyspace_misses, b.keyspace_misses);
    let gauge: Vec<f64> = all.iter().filter_map(|(_, r)| r.connected_clients).map(|c| c as f64).collect();
    // By server time in the window, most first.
    let mut timed: Vec<(u64, scalelab_core::RedisCommandRate)> = b
        .commands
        .iter()
        .filter_map(|c| {
            let (calls0, usec0) = a.commands.iter().find(|x| x.command == c.command).map_or((0, 0), |x| (x.calls, x.usec));
            let (calls, usec) = (c.calls.checked_sub(calls0)?, c.usec.checked_sub(usec0)?);
            (calls > 0 && secs > 0.0).then(|| {
                let rate = scalelab_core::RedisCommandRate {
                    command: c.command.clone(),
                    calls_per_s: calls as f64 / secs,
                    usec_per_call: usec as f64 / calls as f64,
                };
                (usec, rate)
            })
        })
        .collect();
    timed.sort_by_key(|x| std::cmp::Reverse(x.0));
    let top: Vec<scalelab_core::RedisCommandRate> = timed.into_iter().take(5).map(|(_, r)| r).collect();
    // Each event's latest spike seen in a reading, kept when its second
    // overlaps the window; the longest of an event's spikes so seen.
    let mut spikes: Vec<scalelab_core::RedisLatencySpike> = Vec::new();
    let (first_s, last_s) = (start_ms.div_euclid(1000), end_ms.div_euclid(1000));
    for e in all.iter().filter_map(|(_, r)| r.latency_latest.as_ref()).flatten() {
        if e.latest_unix_s < first_s || e.latest_unix_s > last_s {
            continue;
        }
        match spikes.iter_mut().find(|s| s.event == e.event) {
            Some(s) => s.latest_ms = s.latest_ms.max(e.latest_ms),
            None => spikes.push(scalelab_core::RedisLatencySpike { event: e.event.clone(), latest_ms: e.latest_ms }),
        }
    }
    spikes.sort_by_key(|s| std::cmp::Reverse(s.latest_ms));
    Some(scalelab_core::RedisTelemetry {
        commands_per_s: per_s(a.total_commands_processed, b.total_commands_processed),
        hit_pct: hits.zip(misses).and_then(|(h, m)| (h + m > 0).then(|| 100.0 * h as f64 / (h + m) as f64)),
        connected_clients_avg: (!gauge.is_empty()).then(|| gauge.iter().sum::<f64>() / gauge.len() as f64),
        blocked_clients_max: all.iter().filter_map(|(_, r)| r.blocked_clients).max(),
        used_memory_mb: b.used_memory.map(|m| m as f64 / 1e6),
        evicted_per_s: per_s(a.evicted_keys, b.evicted_keys),
        rejected_connections: delta(a.rejected_connections, b.rejected_connections),
        io_threads_active: b.io_threads_active,
        slowlog_added: delta(a.slowlog_len, b.slowlog_len),
        top_commands: top,
        latency_threshold_ms: b.latency_threshold_ms,
        latency_spikes: spikes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalelab_core::sample::{ActivityRow, GlobalStatus, PgDatabaseStats, WAIT_CHUNK_MS};

    fn my(at: i64, questions: u64, waits: u64, running: u64) -> DbSample {
        let st = GlobalStatus::from_rows([
            ("Questions", questions.to_string().as_str()),
            ("Innodb_row_lock_waits", waits.to_string().as_str()),
            ("Threads_running", running.to_string().as_str()),
        ]);
        DbSample { unix_ms: at, engine: "mysql".into(), status: Some(st), ..Default::default() }
    }

    #[test]
    fn redis_latency_spikes_are_those_stamped_inside_the_window() {
        use scalelab_core::sample::{RedisInfo, RedisLatencyEvent};
        let ev = |event: &str, at: i64, ms: u64| RedisLatencyEvent { event: event.into(), latest_unix_s: at, latest_ms: ms, max_ms: 900 };
        let reading = |at_ms: i64, commands: u64, latest: Vec<RedisLatencyEvent>| DbSample {
            unix_ms: at_ms,
            engine: "redis".into(),
            redis: Some(RedisInfo {
                total_commands_processed: Some(commands),
                latency_threshold_ms: Some(10),
                latency_latest: Some(latest),
                ..Default::default()
            }),
            ..Default::default()
        };
        // The window is 100.0 s to 102.0 s. `fork` last spiked long before
        // it (at 50 s); `command` spiked at 101 s (40 ms), then at 102 s (25 ms).
        let s = [
            reading(100_000, 0, vec![ev("fork", 50, 300)]),
            reading(101_000, 1_000, vec![ev("fork", 50, 300), ev("command", 101, 40)]),
            reading(102_000, 3_000, vec![ev("fork", 50, 300), ev("command", 102, 25)]),
        ];
        let r = summarize_db(&s, 100_000, 102_000).unwrap().redis.unwrap();
        assert_eq!(r.commands_per_s, Some(1_500.0));
        assert_eq!(r.latency_threshold_ms, Some(10));
        assert_eq!(r.latency_spikes, vec![scalelab_core::RedisLatencySpike { event: "command".into(), latest_ms: 40 }]);
    }

    #[test]
    fn mysql_rates_and_gauges() {
        let s = [my(0, 0, 0, 1), my(1000, 100, 10, 3), my(2000, 300, 50, 5), my(9000, 9999, 9999, 9)];
        let t = summarize_db(&s, 0, 2000).unwrap();
        assert_eq!(t.samples, 3);
        assert_eq!(t.questions_per_s, Some(150.0));
        assert_eq!(t.row_lock_waits_per_s, Some(25.0));
        assert_eq!(t.threads_running_avg, Some(3.0));
        assert_eq!(t.xact_commit_per_s, None);
        assert!(summarize_db(&s, 20_000, 21_000).is_err());
        // A 200 ms window between readings 1.4 s apart, none within half a
        // second of it: the two around it stand for it.
        let gap = [my(0, 0, 0, 1), my(1400, 140, 14, 3)];
        let t = summarize_db(&gap, 600, 800).unwrap();
        assert_eq!((t.samples, t.questions_per_s), (2, Some(100.0)));
        assert!(summarize_db(&gap[..1], 1600, 1900).is_err(), "a reading 1.6 s before is too far");
        // One reading: gauges, but no rate (never 0).
        let t = summarize_db(&s[..1], 0, 100).unwrap();
        assert_eq!((t.questions_per_s, t.threads_running_avg), (None, Some(1.0)));
    }

    #[test]
    fn pg_profile_and_counters() {
        let mut p = WaitProfile::default();
        let lock = ActivityRow {
            backend_type: Some("client backend"),
            state: Some("active"),
            wait_event_type: Some("Lock"),
            wait_event: Some("transactionid"),
        };
        p.add_poll([lock, ActivityRow { wait_event_type: None, wait_event: None, ..lock }]);
        p.add_poll([lock, lock]);
        let db = |c: u64| PgDatabaseStats {
            xact_commit: Some(c),
            deadlocks: Some(1),
            blks_hit: Some(c),
            blks_read: Some(0),
            ..Default::default()
        };
        let mut s: Vec<DbSample> = (0..3)
            .map(|i| DbSample { unix_ms: i * 1000, engine: "postgres".into(), pg_database: Some(db(i as u64 * 500)), ..Default::default() })
            .collect();
        let chunk = |from: i64| DbSample {
            unix_ms: from + WAIT_CHUNK_MS,
            since_unix_ms: Some(from),
            engine: "postgres".into(),
            pg_waits: Some(p.clone()),
            ..Default::default()
        };
        // Two chunks inside the window, one straddling its end (left out).
        s.extend([chunk(0), chunk(1000), chunk(1900)]);
        let t = summarize_db(&s, 0, 2000).unwrap();
        assert_eq!(t.samples, 3);
        assert_eq!(t.xact_commit_per_s, Some(500.0));
        assert_eq!(t.deadlocks, Some(0));
        assert_eq!(t.blks_hit_pct, Some(100.0));
        assert_eq!(t.activity_polls, Some(4));
        assert_eq!(t.waits[0], DbWait { wait: "Lock:transactionid".into(), pct: 75.0 });
        assert_eq!(t.wait_type_pct("Lock"), Some(75.0));
        assert_eq!(t.wait_type_pct("LWLock"), Some(0.0));
        assert!(t.waits.iter().any(|w| w.wait == "CPU"));
    }
}
