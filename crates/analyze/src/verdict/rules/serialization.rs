//! Rules about something that serializes the server: a lock, waits inside
//! the database, one hot thread.

use super::*;

/// The server's own figures say it did nothing: CPU under
/// [`SERVER_IDLE_CPU_PCT`] of a core and context switches under
/// [`SERVER_IDLE_CS_PER_S`] (both measured). Its threads may still read as
/// blocked on futexes: a process stopped by SIGSTOP keeps the interrupted
/// call's number in `/proc/TID/syscall`, but nothing sleeps and wakes.
pub(super) fn server_did_nothing(t: &StepTelemetry) -> bool {
    t.server_cpu_pct.is_some_and(|c| c < SERVER_IDLE_CPU_PCT) && t.server_cs_per_s.is_some_and(|c| c < SERVER_IDLE_CS_PER_S)
}

pub(super) fn lock_contention(ctx: &Ctx) -> Option<Verdict> {
    let t = ctx.t()?;
    let idle_cpu = cpu_not_saturated(Some(t));
    if server_fills_cpu(ctx, t) {
        return None; // a CPU the server itself saturates is the cpu-bound rule's
    }
    if server_did_nothing(t) {
        return None; // frozen or idle: the futex share is not contention
    }
    let futex = t.thread_states_pct.map(|s| s.futex);
    let futex_high = futex.map(|f| f >= FUTEX_BLOCKED_PCT);
    let base = ctx.first.and_then(|f| f.telemetry.as_ref()).and_then(|t| t.cs_per_request).filter(|b| *b > 0.0);
    let growth = t.cs_per_request.zip(base).map(|(c, b)| c / b);
    let rising = growth.map(|g| g >= CS_PER_REQUEST_GROWTH);
    // Trigger: futex-blocked threads; without thread states, rising context
    // switches per request on an idle CPU.
    let triggered = futex_high == Some(true) || (futex_high.is_none() && rising == Some(true) && idle_cpu == Some(true));
    if !triggered {
        return None;
    }
    let mut d = Draft::new(
        VerdictKind::LockContention,
        ctx,
        if futex_high.is_some() && idle_cpu == Some(false) {
            "server threads sleep on futexes while the server itself leaves most of the CPU to other processes: something serializes"
        } else if futex_high.is_some() {
            "the CPU idles while server threads sleep on futexes: something serializes"
        } else {
            "the CPU idles while context switches per request rise: something serializes (futex waits not measured)"
        },
        "find the lock: re-run with `--profile` (off-CPU stacks name the call site that waits; docs/profiles.md), or `perf lock contention -b`; for a database, its own lock views",
    );
    d.ev("CPU busy", t.cpu_busy_pct, "%");
    d.ev("CPU sys", t.cpu_sys_pct, "%");
    d.ev("server CPU", t.server_cpu_pct, "% of one core");
    d.ev("server context switches", t.server_cs_per_s, "cs/s");
    d.ev("server cs per request", t.cs_per_request, "cs");
    d.ev("cs per request growth", growth, "x first step");
    d.ev("server threads blocked on futex", futex, "%");
    // The specimen's own count, when the target is the specimen: direct evidence of the lock.
    d.ev("requests that waited for the specimen's lock", t.specimen.and_then(|s| s.lock_wait_share_pct), "%");
    d.check(idle_cpu, || ctx.why("CPU busy", CPU));
    d.check(futex_high, || ctx.why("server thread states", THREADS));
    d.check(rising, || {
        if t.cs_per_request.is_none() {
            ctx.why("context switches per request", SERVER)
        } else {
            "context switches per request at the first step: not measured".to_string()
        }
    });
    Some(d.done())
}

/// The Lock or LWLock waits a PostgreSQL contention verdict names: the
/// largest, and the next one too when it has at least
/// [`LOCK_WAIT_TIE_SHARE`] of the largest's share. Why: at a near tie the
/// order is down to which polls caught which backends (a hot row under
/// durable commits gave Lock:transactionid 36.4 % against LWLock:WALWrite
/// 36.9 % in one run and 41 % against 33 % in the next), so naming one alone
/// would send the reader after half the cause.
fn lock_waits_to_name(waits: &[DbWait]) -> Vec<DbWait> {
    let mut locks = waits.iter().filter(|w| w.wait.starts_with("Lock") || w.wait.starts_with("LWLock"));
    let Some(top) = locks.next() else { return Vec::new() };
    let mut named = vec![top.clone()];
    named.extend(locks.next().filter(|w| w.pct >= LOCK_WAIT_TIE_SHARE * top.pct).cloned());
    named
}

/// Which database figure triggered [`db_contention`].
enum DbTrigger {
    /// PostgreSQL: Lock + LWLock share of active backends, and the top such
    /// waits (one, or two in a near tie: see [`lock_waits_to_name`]).
    PgLocks(f64, Vec<DbWait>),
    RowLocks(f64),
    TableLocks(f64),
    OsWaits(f64),
}

pub(super) fn db_contention(ctx: &Ctx) -> Option<Verdict> {
    let t = ctx.t()?;
    let d = t.db.as_ref()?;
    let first = ctx.first.filter(|f| f.concurrency < ctx.step.concurrency).and_then(|f| f.telemetry.as_ref()).and_then(|t| t.db.as_ref());
    let pg_locks = match (d.wait_type_pct("Lock"), d.wait_type_pct("LWLock")) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    };
    let top_lock = lock_waits_to_name(&d.waits);
    let trigger = if let Some(share) = pg_locks.filter(|s| *s >= PG_LOCK_WAIT_PCT && d.mean_active_backends.is_some_and(|m| m >= 1.0)) {
        DbTrigger::PgLocks(share, top_lock)
    } else if let Some(r) = d.row_lock_waits_per_s.filter(|r| *r >= ROW_LOCK_WAITS_PER_S) {
        DbTrigger::RowLocks(r)
    } else if let Some(r) = d.table_locks_waited_per_s.filter(|r| *r >= TABLE_LOCKS_WAITED_PER_S) {
        DbTrigger::TableLocks(r)
    } else if let Some(r) = d.os_waits_per_s.filter(|r| *r >= INNODB_OS_WAITS_PER_S) {
        DbTrigger::OsWaits(r)
    } else {
        return None;
    };
    // The same figure at the first step (fewer clients): does the waiting rise with load?
    let grew = |now: f64, base: Option<f64>| base.map(|b| now >= DB_WAIT_GROWTH * b);
    let (headline, next, rising) = match &trigger {
        DbTrigger::PgLocks(share, top) => (
            if top.is_empty() {
                format!("PostgreSQL backends wait on the database's own locks: Lock + LWLock {share:.0}% of active backends")
            } else {
                let named: Vec<String> = top.iter().map(|w| format!("{} {:.0}%", w.wait, w.pct)).collect();
                format!(
                    "PostgreSQL backends wait on the database's own locks: {} of active backends (Lock + LWLock {:.0}%)",
                    named.join(" and "),
                    share
                )
            },
            "find the hot rows or locks: pg_locks joined to pg_stat_activity (pg_blocking_pids(pid)) for Lock waits; for LWLock, the named lock (WALWrite, BufferContent, ...) says which shared structure is hot",
            first.and_then(|f| {
                let base = f.activity_polls.map(|_| f.wait_type_pct("Lock").unwrap_or(0.0) + f.wait_type_pct("LWLock").unwrap_or(0.0));
                base.map(|b| *share >= b + 10.0)
            }),
        ),
        DbTrigger::RowLocks(r) => (
            format!("InnoDB row-lock waits: {r:.0}/s, transactions queue on the same rows"),
            "find the hot rows: performance_schema.data_lock_waits (MySQL 8) or information_schema.INNODB_LOCK_WAITS (MariaDB) joined to the transactions; shorten transactions or spread the hot rows",
            grew(*r, first.and_then(|f| f.row_lock_waits_per_s)),
        ),
        DbTrigger::TableLocks(r) => (
            format!("table-lock requests wait: {r:.0}/s (MyISAM or LOCK TABLES): one table serializes its writers"),
            "see which tables: SHOW OPEN TABLES WHERE In_use > 0 and the processlist's 'Waiting for table level lock'; move hot tables to InnoDB",
            grew(*r, first.and_then(|f| f.table_locks_waited_per_s)),
        ),
        DbTrigger::OsWaits(r) => (
            format!("InnoDB latches are contended: {r:.0} OS waits/s after spinning"),
            "see which latch: the SEMAPHORES section of SHOW ENGINE INNODB STATUS ('has waited at'), performance_schema.events_waits_summary_global_by_event_name (wait/synch/%); tune innodb_spin_wait_delay / innodb_sync_spin_loops",
            grew(*r, first.and_then(|f| f.os_waits_per_s)),
        ),
    };
    let mut draft = Draft::new(VerdictKind::DbContention, ctx, headline, next);
    if let DbTrigger::PgLocks(share, top) = &trigger {
        draft.ev("backends waiting on Lock + LWLock", Some(*share), "% of active backends");
        for (w, rank) in top.iter().zip(["top", "second"]) {
            draft.ev(&format!("{rank} lock wait {}", w.wait), Some(w.pct), "% of active backends");
        }
        draft.ev("mean active backends", d.mean_active_backends, "backends");
        draft.ev("commits", d.xact_commit_per_s, "/s");
        draft.ev("rollbacks", d.xact_rollback_per_s, "/s");
        draft.ev("deadlocks", d.deadlocks.map(|n| n as f64), "in the window");
    }
    draft.ev("InnoDB row-lock waits", d.row_lock_waits_per_s, "/s");
    draft.ev("InnoDB row-lock wait time", d.row_lock_time_ms_per_s, "ms/s");
    // How much of the clients' time the row-lock waits took: hundreds of
    // short waits a second can still cost almost nothing.
    let row_lock_share = d.row_lock_time_ms_per_s.map(|ms| ms / (f64::from(ctx.step.concurrency.max(1)) * 10.0));
    if matches!(trigger, DbTrigger::RowLocks(_)) {
        draft.ev("InnoDB row-lock wait share of the clients' time", row_lock_share, "%");
        if let Some(share) = row_lock_share.filter(|s| *s < ROW_LOCK_TIME_SHARE_PCT) {
            draft
                .v
                .headline
                .push_str(&format!("; but the waits are short ({share:.1}% of the clients' time), so they cost little throughput"));
        }
        draft.check(row_lock_share.map(|s| s >= ROW_LOCK_TIME_SHARE_PCT), || {
            "InnoDB row-lock wait time: not reported, so how much the waits cost is unknown".to_string()
        });
    }
    if let Some(base) = first.and_then(|f| f.row_lock_waits_per_s).filter(|_| matches!(trigger, DbTrigger::RowLocks(_))) {
        draft.ev("InnoDB row-lock waits at the first step", Some(base), "/s");
    }
    draft.ev("table locks waited", d.table_locks_waited_per_s, "/s");
    draft.ev("InnoDB semaphore OS waits", d.os_waits_per_s, "/s");
    draft.ev("InnoDB spin rounds per OS wait", d.rounds_per_os_wait, "rounds");
    // performance_schema names the instrument (when it is on): evidence only, it triggers nothing.
    if let Some(w) = d.perf_schema_top_waits.as_ref().and_then(|v| v.first()) {
        match w.wait_ms_per_s {
            Some(ms) => draft.ev(&format!("top performance_schema wait {}", w.event), Some(ms), "ms/s"),
            None => draft.ev(&format!("top performance_schema wait {} (untimed)", w.event), Some(w.waits_per_s), "/s"),
        }
    }
    draft.ev("threads running", d.threads_running_avg, "threads (mean)");
    draft.ev("questions", d.questions_per_s, "/s");
    draft.ev("CPU busy", t.cpu_busy_pct, "%");
    draft.check(rising, || match ctx.first {
        Some(f) if f.concurrency < ctx.step.concurrency && first.is_none() => ctx_first_why(f),
        _ => "the same figure at a lower concurrency: not measured".to_string(),
    });
    draft.check(cpu_not_saturated(Some(t)), || ctx.why("CPU busy", CPU));
    Some(draft.done())
}

/// Why the first step has no database figures.
fn ctx_first_why(first: &StepResult) -> String {
    match first.telemetry.as_ref().and_then(|t| DB.iter().find_map(|k| t.unavailable.get(*k))) {
        Some(why) => format!("database figures at {} clients: {why}", first.concurrency),
        None => format!("database figures at {} clients: not measured", first.concurrency),
    }
}

pub(super) fn single_hot_thread(ctx: &Ctx) -> Option<Verdict> {
    let t = ctx.t()?;
    // A thread's demand (on a CPU or waiting for one) is its own figure: a
    // busy neighbour can starve the thread of CPU but cannot hide that it
    // wanted a whole core.
    let demand = |h: &HotThread| h.demand_pct().unwrap_or(h.cpu_pct);
    let hot = t.hottest_threads.iter().max_by(|a, b| demand(a).total_cmp(&demand(b)))?;
    let starved = hot.cpu_pct < HOT_THREAD_PCT;
    if demand(hot) < HOT_THREAD_PCT {
        return None;
    }
    // Starved, it is a single-threaded stage only if it stands alone: the
    // server's next thread wanted at most half as much (many threads all
    // waiting for a CPU are a busy machine, not one hot stage).
    let next = t.hottest_threads.iter().filter(|h| h.tid != hot.tid).map(demand).fold(0.0, f64::max);
    if starved && next > demand(hot) / 2.0 {
        return None;
    }
    let idle_cpu = cpu_not_saturated(Some(t));
    if server_fills_cpu(ctx, t) {
        return None; // the server busies every core: one busy thread among them is no bottleneck of its own
    }
    let headline = if starved {
        format!(
            "server thread `{}` (tid {}) wants a whole core (on a CPU or waiting for one all the time) while the server's other threads do not: a single-threaded stage, here also starved of CPU by other processes",
            hot.name, hot.tid
        )
    } else {
        format!("server thread `{}` (tid {}) runs flat out on one core while the others idle: a single-threaded stage", hot.name, hot.tid)
    };
    let mut d = Draft::new(
        VerdictKind::SingleHotThread,
        ctx,
        headline,
        format!("profile that thread (`perf record -g -t {}`, `perf top -t {}`) and spread its work (more workers, SO_REUSEPORT, RSS/RPS for receive processing)", hot.tid, hot.tid),
    );
    d.ev("hottest thread", Some(hot.cpu_pct), "% of one core");
    d.ev("hottest thread waiting for a CPU", hot.runnable_pct, "% of the window");
    d.ev("CPU busy", t.cpu_busy_pct, "%");
    d.ev("logical cores", ctx.env.logical_cores.map(f64::from), "cores");
    d.ev("server CPU", t.server_cpu_pct, "% of one core");
    // Redis runs every command on its main thread; its I/O threads (when
    // on) only read and write sockets: the hot thread is the design, and
    // the ways out are Redis's own.
    if let Some(r) = t.db.as_ref().and_then(|db| db.redis.as_ref()) {
        let io = match r.io_threads_active {
            Some(0) => "; its I/O threads are off (`io-threads`), so the main thread also reads and writes every socket",
            _ => "",
        };
        d.v.headline.push_str(&format!("; Redis executes every command on its main thread{io}"));
        d.v.next = "Redis scales out, not up: shard the keyspace over more Redis processes (Redis Cluster, or one instance per core), turn on `io-threads` for network-heavy loads, pipeline (`--pipeline`), and look at the costliest commands (`INFO commandstats`, `SLOWLOG GET`)".into();
        d.ev("Redis commands", r.commands_per_s, "/s");
        d.ev("Redis I/O threads active", r.io_threads_active.map(|n| n as f64), "");
    }
    d.check(idle_cpu, || ctx.why("CPU busy", CPU));
    Some(d.done())
}
