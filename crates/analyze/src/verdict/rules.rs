//! The rules, one function per kind, each looking at one step.

use super::*;
use scalelab_core::{DbWait, Environment, ErrorClass, HotThread, StepTelemetry};

/// What a rule sees: the step, the run's first measured step (the base of
/// growth figures) and the machine.
pub(super) struct Ctx<'a> {
    pub step: &'a StepResult,
    pub first: Option<&'a StepResult>,
    pub env: &'a Environment,
    /// The target is on loopback: no link between client and server.
    pub loopback: bool,
}

impl Ctx<'_> {
    fn t(&self) -> Option<&StepTelemetry> {
        self.step.telemetry.as_ref()
    }

    /// Why `figure` is missing: the probe's recorded reason for one of
    /// `sources` (keys of [`StepTelemetry::unavailable`]), or "not measured".
    fn why(&self, figure: &str, sources: &[&str]) -> String {
        match self.t() {
            None => format!("{figure}: no telemetry for this step"),
            Some(t) => match sources.iter().find_map(|s| t.unavailable.get(*s)) {
                Some(reason) => format!("{figure}: {reason}"),
                None => format!("{figure}: not measured"),
            },
        }
    }
}

const CPU: &[&str] = &["cpu", "system"];
const SERVER: &[&str] = &["server"];
const THREADS: &[&str] = &["thread_states"];
const SYSTEM: &[&str] = &["system"];
const DB: &[&str] = &["db"];

/// A verdict being built: corroborating signals lower the confidence when
/// missing or unmet.
struct Draft {
    v: Verdict,
    lowered: u32,
    cap: Confidence,
}

impl Draft {
    fn new(kind: VerdictKind, ctx: &Ctx, headline: impl Into<String>, next: impl Into<String>) -> Self {
        Draft {
            v: Verdict {
                kind,
                confidence: Confidence::High,
                concurrency: ctx.step.concurrency,
                headline: headline.into(),
                evidence: Vec::new(),
                missing: Vec::new(),
                next: next.into(),
            },
            lowered: 0,
            cap: Confidence::High,
        }
    }

    fn ev(&mut self, name: &str, value: Option<f64>, unit: &str) {
        if let Some(value) = value.filter(|v| v.is_finite()) {
            self.v.evidence.push(Evidence::new(name, value, unit));
        }
    }

    /// A corroborating signal: `None` = not measured (listed as missing),
    /// `Some(false)` = measured against the verdict; both lower the confidence.
    fn check(&mut self, met: Option<bool>, missing: impl FnOnce() -> String) {
        match met {
            Some(true) => {}
            Some(false) => self.lowered += 1,
            None => {
                self.v.missing.push(missing());
                self.lowered += 1;
            }
        }
    }

    fn done(mut self) -> Verdict {
        let mut c = Confidence::High;
        for _ in 0..self.lowered {
            c = c.lower();
        }
        self.v.confidence = c.min(self.cap);
        self.v
    }
}

/// Every rule's verdict for one step.
pub(super) fn all(ctx: &Ctx) -> Vec<Verdict> {
    [
        client_bound(ctx),
        errors(ctx),
        lock_contention(ctx),
        db_contention(ctx),
        single_hot_thread(ctx),
        accept_overflow(ctx),
        port_exhaustion(ctx),
        cpu_bound(ctx),
        disk_bound(ctx),
        network_bound(ctx),
        softirq_one_cpu(ctx),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn client_bound(ctx: &Ctx) -> Option<Verdict> {
    let pct = ctx.step.client_cpu_pct();
    let lag = ctx.step.client_lag_ms;
    let by_cpu = pct.is_some_and(|p| p > CLIENT_SATURATED_PCT) || ctx.step.client_saturated();
    // A client starved of CPU (a busy neighbour, a taskset to a shared core)
    // can stay under 90 % of its cores yet answer its timers late.
    let by_lag = lag.is_some_and(|l| l >= CLIENT_LAG_MS);
    let wait = ctx.step.client_runq_wait_pct;
    // The client queued for a CPU while the server's threads did not: the
    // client is starved by something else (a neighbour, a taskset). When
    // both queue, the machine is simply CPU-bound (that verdict says so).
    // A server that itself fills most of the cores makes the client queue as
    // a matter of course on a shared machine: that is cpu-bound, not a starved client.
    let server_runnable = ctx.step.telemetry.as_ref().and_then(|t| t.thread_states_pct).map(|s| s.runnable);
    let server_share = match (ctx.t().and_then(|t| t.server_cpu_pct), ctx.env.logical_cores.filter(|c| *c > 0)) {
        (Some(p), Some(c)) => Some(p / (100.0 * f64::from(c))),
        _ => None,
    };
    let by_wait = match (wait, server_runnable, server_share) {
        (Some(w), Some(r), Some(share)) => w >= CLIENT_RUNQ_WAIT_PCT && r < w / 2.0 && share < SERVER_CPU_SHARE,
        _ => false,
    };
    if !by_cpu && !by_lag && !by_wait {
        return None;
    }
    let headline = if by_cpu {
        "THE LOAD GENERATOR WAS SATURATED: this result measures the client, not the server"
    } else if by_wait {
        "THE LOAD GENERATOR WAS STARVED OF CPU (its threads waited to run): this result measures the client, not the server"
    } else {
        "THE LOAD GENERATOR FELL BEHIND (its event loop ran late): this result measures the client, not the server"
    };
    let mut d = Draft::new(
        VerdictKind::ClientBound,
        ctx,
        headline,
        "give the client more cores or another machine (more client threads, no busy neighbours, `taskset` it away from the server) and re-run; do not compare servers on this run",
    );
    if let Some(p) = pct {
        d.ev("client CPU", Some(p), "% of its cores");
    }
    if let Some(l) = lag {
        d.ev("client event-loop lag", Some(l), "ms");
    }
    if let Some(w) = wait {
        d.ev("client run-queue wait", Some(w), "% of the window");
    }
    d.ev("client cores", Some(f64::from(ctx.step.client_cores)), "cores");
    d.ev("throughput", Some(ctx.step.throughput_per_s()), "req/s");
    Some(d.done())
}

fn errors(ctx: &Ctx) -> Option<Verdict> {
    let s = ctx.step;
    let total = s.errors.total();
    let attempts = s.requests + total;
    if total == 0 || attempts == 0 {
        return None;
    }
    let share = total as f64 / attempts as f64;
    // A request left unanswered is notable at any share: the server (or
    // some of its connections) stopped answering.
    let unfinished = s.errors.get(ErrorClass::Unfinished);
    if share < ERRORS_NOTABLE_SHARE && unfinished == 0 {
        return None;
    }
    let (top, top_n) = s.errors.counts.iter().max_by_key(|(c, n)| (**n, std::cmp::Reverse(**c))).map(|(c, n)| (*c, *n))?;
    let message = s.errors.first_message.get(&top).map(|m| format!(" ({m})")).unwrap_or_default();
    let next = match top {
        ErrorClass::ConnectRefused | ErrorClass::ConnectTimeout => {
            "connections are refused or time out: check the listen backlog and accept rate (nstat ListenOverflows/ListenDrops, ss -lnt), file-descriptor limits and the server's connection limit"
        }
        ErrorClass::Reset | ErrorClass::ConnectionLost => {
            "the server closes connections mid-request: read its error log, its connection and keep-alive limits, and dmesg for OOM kills"
        }
        ErrorClass::ReadTimeout => {
            "responses time out: the server queues beyond the timeout; look at its worker/pool limits and the latency histogram of this step"
        }
        ErrorClass::Http4xx => "the server rejects requests: check the workload's URLs and the server's rate limits",
        ErrorClass::Http5xx => "the server fails requests: read its error log at this load (upstream timeouts, pool exhaustion)",
        ErrorClass::Deadlock | ErrorClass::LockWaitTimeout | ErrorClass::SerializationFailure => {
            "transactions collide on the same rows: look at the database's lock waits (SHOW ENGINE INNODB STATUS, pg_locks) and the workload's hot rows"
        }
        ErrorClass::TooManyConnections => "the database refuses clients: raise max_connections or put a pool in front",
        ErrorClass::Unfinished => {
            "the server stopped answering (hung, stopped, deadlocked or overloaded past the window): look at its state (`top -H -p PID`, a stack dump, `ps -o stat`) and its log; the requests are counted as unfinished, not as completions"
        }
        ErrorClass::FdLimit => {
            "the client ran out of file descriptors: raise the hard limit (`ulimit -Hn`, LimitNOFILE= in a unit, /etc/security/limits.conf) or use fewer clients"
        }
        ErrorClass::SqlError | ErrorClass::Other => "read the first error message of each class and the server's log at this load",
    };
    let mut d = Draft::new(VerdictKind::Errors, ctx, format!("requests fail, mostly {}{message}", top.name()), next);
    d.cap = if share >= ERRORS_HIGH_SHARE || unfinished > 0 { Confidence::High } else { Confidence::Medium };
    d.ev("failed", Some(100.0 * share), "% of requests");
    d.ev("errors", Some(total as f64 / s.window_s), "/s");
    d.ev(top.name(), Some(top_n as f64 / s.window_s), "/s");
    if unfinished > 0 && top != ErrorClass::Unfinished {
        d.ev("unfinished", Some(unfinished as f64), "requests at the window's end");
    }
    Some(d.done())
}

fn cpu_not_saturated(t: Option<&StepTelemetry>) -> Option<bool> {
    t.and_then(|t| t.cpu_busy_pct).map(|b| b < CPU_SATURATED_PCT)
}

/// The server's own CPU as a share of all cores fills the machine at this
/// share or more. A lock or a single hot thread keeps a server well under it
/// (about one core's worth); a busy neighbour or the client cannot push the
/// server's own figure up, only the machine's.
const SERVER_FILLS_CPU_SHARE: f64 = 0.75;

/// Whether the saturated machine is the server's own doing, so the
/// serialization rules (lock, single hot thread) give way to the cpu-bound
/// one: the machine is saturated and the server's own CPU fills it (or is
/// not measured). A machine filled by others (a neighbour's CPU hog, the
/// client) leaves the server's serialization to be judged on its own figures.
fn server_fills_cpu(ctx: &Ctx, t: &StepTelemetry) -> bool {
    if cpu_not_saturated(Some(t)) != Some(false) {
        return false;
    }
    match (t.server_cpu_pct, ctx.env.logical_cores.filter(|c| *c > 0)) {
        (Some(p), Some(c)) => p / (100.0 * f64::from(c)) >= SERVER_FILLS_CPU_SHARE,
        _ => true,
    }
}

/// The server's own figures say it did nothing: CPU under
/// [`SERVER_IDLE_CPU_PCT`] of a core and context switches under
/// [`SERVER_IDLE_CS_PER_S`] (both measured). Its threads may still read as
/// blocked on futexes: a process stopped by SIGSTOP keeps the interrupted
/// call's number in `/proc/TID/syscall`, but nothing sleeps and wakes.
fn server_did_nothing(t: &StepTelemetry) -> bool {
    t.server_cpu_pct.is_some_and(|c| c < SERVER_IDLE_CPU_PCT) && t.server_cs_per_s.is_some_and(|c| c < SERVER_IDLE_CS_PER_S)
}

fn lock_contention(ctx: &Ctx) -> Option<Verdict> {
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
        "find the lock holders: `perf lock contention -b` (or off-CPU stack sampling: `offcputime`, `perf sched`); for a database, its own lock views",
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

fn db_contention(ctx: &Ctx) -> Option<Verdict> {
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

fn single_hot_thread(ctx: &Ctx) -> Option<Verdict> {
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
    d.check(idle_cpu, || ctx.why("CPU busy", CPU));
    Some(d.done())
}

fn accept_overflow(ctx: &Ctx) -> Option<Verdict> {
    let t = ctx.t()?;
    let worst =
        t.listen_overflows_per_s.into_iter().chain(t.listen_drops_per_s).fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))?;
    if worst < LISTEN_OVERFLOW_PER_S {
        return None;
    }
    let somaxconn = ctx.env.somaxconn.map(|n| format!(" (net.core.somaxconn is {n})")).unwrap_or_default();
    let mut d = Draft::new(
        VerdictKind::AcceptOverflow,
        ctx,
        "the listen queue overflows: connections are dropped before the server accepts them",
        format!("raise the listen backlog (the server's listen(2) backlog and net.core.somaxconn{somaxconn}) and check that accepting keeps up (one acceptor thread, thundering herd); `ss -lnt` shows Recv-Q against the backlog"),
    );
    d.ev("listen overflows", t.listen_overflows_per_s, "/s");
    d.ev("listen drops", t.listen_drops_per_s, "/s");
    let connect = ctx.step.errors.get(ErrorClass::ConnectRefused) + ctx.step.errors.get(ErrorClass::ConnectTimeout);
    if connect > 0 {
        d.ev("connect errors", Some(connect as f64 / ctx.step.window_s), "/s");
    }
    Some(d.done())
}

/// Size of a `net.ipv4.ip_local_port_range` value ("32768 60999" → 28232).
pub(super) fn port_range_size(range: &str) -> Option<u64> {
    let mut it = range.split_whitespace().map(|x| x.parse::<u64>());
    match (it.next(), it.next(), it.next()) {
        (Some(Ok(lo)), Some(Ok(hi)), None) if hi >= lo => Some(hi - lo + 1),
        _ => None,
    }
}

/// Failed connects of this step that said EADDRNOTAVAIL (no free local
/// address/port), from each class's first message: classes whose first
/// failure was EADDRNOTAVAIL, counted whole.
fn addr_not_available(step: &StepResult) -> u64 {
    step.errors
        .first_message
        .iter()
        .filter(|(_, m)| m.contains("os error 99") || m.contains("Cannot assign requested address") || m.contains("EADDRNOTAVAIL"))
        .map(|(c, _)| step.errors.counts.get(c).copied().unwrap_or(0))
        .sum()
}

fn port_exhaustion(ctx: &Ctx) -> Option<Verdict> {
    let t = ctx.t()?;
    // Toward the server when its addresses were known; machine-wide otherwise
    // (then other destinations and both ends of loopback connections count too).
    let toward = t.tcp_time_wait_to_target;
    let tw = toward.or(t.tcp_time_wait)?;
    let range = ctx.env.ip_local_port_range.as_deref().and_then(port_range_size);
    let threshold = match range {
        Some(r) => TIME_WAIT_RANGE_SHARE * r as f64,
        None => TIME_WAIT_FALLBACK as f64,
    };
    if (tw as f64) < threshold {
        return None;
    }
    // What the run itself did must account for the sockets: new connections
    // fast enough to leave that many in TIME_WAIT within its 60 s, or
    // connects failing for want of a port. Otherwise they are an earlier
    // run's or another program's, and a keep-alive run cannot run out of ports.
    let s = ctx.step;
    let new_per_s = (s.window_s > 0.0).then(|| s.reconnects as f64 / s.window_s);
    let churn = new_per_s.is_some_and(|r| r * TIME_WAIT_S >= threshold);
    let refused = addr_not_available(s);
    if !churn && refused == 0 {
        return None;
    }
    let mut d = Draft::new(
        VerdictKind::PortExhaustion,
        ctx,
        "sockets in TIME_WAIT fill the ephemeral port range: new connections wait for a free port or fail (EADDRNOTAVAIL)",
        "keep connections alive (keep-alive, pooling) instead of one per request, widen net.ipv4.ip_local_port_range, enable net.ipv4.tcp_tw_reuse on the client; `ss -tan state time-wait | wc -l`",
    );
    if toward.is_some() {
        d.ev("sockets in TIME_WAIT toward the server", Some(tw as f64), "sockets");
    } else {
        d.ev("sockets in TIME_WAIT (machine-wide)", Some(tw as f64), "sockets");
    }
    if let Some(r) = range {
        d.ev("ephemeral ports", Some(r as f64), "ports");
        d.ev("TIME_WAIT share of the range", Some(100.0 * tw as f64 / r as f64), "%");
    }
    d.ev("new connections", new_per_s, "/s");
    if refused > 0 {
        d.ev("connects failed with EADDRNOTAVAIL", Some(refused as f64 / s.window_s.max(f64::EPSILON)), "/s");
    }
    d.check(range.map(|_| true), || {
        format!(
            "ephemeral port range: not recorded with the run (judged against {TIME_WAIT_FALLBACK} sockets, 70% of Linux's default range)"
        )
    });
    d.check(toward.map(|_| true), || ctx.why("TIME_WAIT toward the server (counted machine-wide instead)", &["time_wait_to_target"]));
    Some(d.done())
}

fn cpu_bound(ctx: &Ctx) -> Option<Verdict> {
    let t = ctx.t()?;
    let busy = t.cpu_busy_pct?;
    if busy < CPU_SATURATED_PCT {
        return None;
    }
    let cores = ctx.env.logical_cores.filter(|c| *c > 0).map(f64::from);
    // The server's own CPU must agree: a server using a sliver of the busy
    // CPU is not CPU-bound, whatever else fills the machine.
    let server_of_busy = t.server_cpu_pct.zip(cores).map(|(s, c)| (s / 100.0) / (busy / 100.0 * c));
    if server_of_busy.is_some_and(|share| share < SERVER_OF_BUSY_MIN) {
        return cpu_busy_elsewhere(ctx, t, busy, cores?);
    }
    // Without the user/system split the kind cannot be named: no verdict.
    let (user, sys) = (t.cpu_user_pct?, t.cpu_sys_pct?);
    let sys_share = if user + sys > 0.0 { 100.0 * sys / (user + sys) } else { 50.0 };
    let (kind, headline, next) = if sys_share.max(100.0 - sys_share) <= CPU_SPLIT_EVEN_PCT {
        (
            VerdictKind::CpuBoundMixed,
            "every core is busy, split about evenly between user space and the kernel: the server's code and the kernel paths it drives (syscalls, network stack) are both the work",
            "profile both sides together: `perf record -g -p PID` with kernel symbols, then a flame graph; /proc/softirqs per CPU for the network share",
        )
    } else if sys >= user {
        (
            VerdictKind::CpuBoundKernel,
            "every core is busy, mostly in the kernel: syscalls, the network stack or kernel locks are the work",
            "see which kernel paths burn the time: `perf top -g` with kernel symbols, `perf trace -s` for syscall counts, /proc/softirqs per CPU",
        )
    } else {
        (
            VerdictKind::CpuBoundUser,
            "every core is busy, mostly in user space: the server's own code is the work",
            "profile the server's code: `perf record -g -p PID` and a flame graph of the hottest functions",
        )
    };
    let mut d = Draft::new(kind, ctx, headline, next);
    d.ev("CPU busy", Some(busy), "%");
    d.ev("CPU user", Some(user), "%");
    d.ev("CPU sys", Some(sys), "%");
    d.ev("CPU softirq", t.cpu_softirq_pct, "%");
    d.ev("server CPU", t.server_cpu_pct, "% of one core");
    d.ev("logical cores", cores, "cores");
    // Corroboration: the server, not a neighbour (or the client), uses the CPU.
    let server_share = t.server_cpu_pct.zip(cores).map(|(s, c)| s / (100.0 * c));
    d.check(server_share.map(|s| s >= SERVER_CPU_SHARE), || {
        if t.server_cpu_pct.is_none() {
            ctx.why("server CPU", SERVER)
        } else {
            "logical cores: not recorded in the environment".to_string()
        }
    });
    Some(d.done())
}

fn disk_bound(ctx: &Ctx) -> Option<Verdict> {
    let t = ctx.t()?;
    let iowait = t.cpu_iowait_pct;
    let io = t.thread_states_pct.map(|s| s.io);
    let by_iowait = iowait.is_some_and(|w| w >= IOWAIT_PCT);
    // iowait is idle time with I/O pending: CPUs kept busy by other
    // processes never idle, so a neighbour's CPU hog hides it. The server's
    // own threads in disk wait show the disk whatever the neighbours do.
    let hidden = cpu_not_saturated(Some(t)) == Some(false);
    let by_threads = hidden && io.is_some_and(|io| io >= THREAD_IO_PCT);
    if !by_iowait && !by_threads {
        return None;
    }
    let mut d = Draft::new(
        VerdictKind::DiskBound,
        ctx,
        "the CPUs wait for I/O and the server's threads block on the disk",
        "compare the device's IOPS and latency with its limits (`iostat -x 1`: r/s, w/s, await, %util), watch /proc/pressure/io, and find the files and requests behind it (`biosnoop`, `biolatency`)",
    );
    d.ev("CPU iowait", iowait, "%");
    d.ev("disk", t.disk_iops, "IOPS");
    d.ev("server threads in disk wait", io, "%");
    d.ev("fsyncs (the specimen's own count)", t.specimen.map(|s| s.fsyncs_per_s).filter(|f| *f > 0.0), "/s");
    d.check(t.disk_iops.map(|i| i > 0.0), || ctx.why("disk IOPS", SYSTEM));
    d.check(io.map(|io| io >= THREAD_IO_PCT), || ctx.why("server thread states", THREADS));
    if !by_iowait {
        // Judged on the threads alone: the machine-wide figure could not agree.
        d.check(Some(false), String::new);
        d.v.headline = "the server's threads block on the disk (the CPUs' iowait is hidden: other work keeps every CPU busy)".into();
    }
    Some(d.done())
}

fn network_bound(ctx: &Ctx) -> Option<Verdict> {
    let t = ctx.t()?;
    let retrans = t.retrans_per_s?;
    if retrans < RETRANS_PER_S {
        return None;
    }
    let mut d = Draft::new(
        VerdictKind::NetworkBound,
        ctx,
        "TCP retransmits heavily: packets are lost on the way (a full link, drops in a queue or the NIC)",
        "check the link: `ip -s link` and `ethtool -S` for drops, the NIC's speed against the traffic, `nstat` for TcpRetransSegs and TcpExtTCPLostRetransmit",
    );
    d.ev("TCP retransmissions", Some(retrans), "/s");
    d.ev("network traffic", t.net_mb_per_s, "MB/s");
    if ctx.loopback {
        // No link to fill: retransmits counted machine-wide come from other traffic or dropped SYNs.
        d.check(Some(false), String::new);
        d.v.missing
            .push("the target is on loopback: no link in the path; the retransmits are machine-wide (other traffic, dropped SYNs)".into());
    }
    d.check(None, || "link capacity: not recorded (a full link cannot be told from loss)".to_string());
    Some(d.done())
}

fn softirq_one_cpu(ctx: &Ctx) -> Option<Verdict> {
    let b = ctx.t()?.softirq_busiest_cpu?;
    if b.softirq_pct < SOFTIRQ_ONE_CPU_PCT || b.softirq_pct < SOFTIRQ_CONCENTRATION * b.others_softirq_pct.max(1.0) {
        return None;
    }
    // Measured and spread: the concentrated softirqs are not network receive
    // (a disk's completion IRQ on one CPU, say: BLOCK softirqs), so not this verdict.
    if b.net_rx_share_pct.is_some_and(|s| s < NET_RX_ONE_CPU_SHARE_PCT) {
        return None;
    }
    let mut d = Draft::new(
        VerdictKind::SoftirqOneCpu,
        ctx,
        format!("CPU {} does the softirq (network receive) work while the other CPUs have room: interrupts or RPS steer it all to one core", b.cpu),
        "spread receive processing: the NIC's IRQs in /proc/interrupts and their /proc/irq/N/smp_affinity, more RSS queues (`ethtool -l`/`-L`), RPS (/sys/class/net/IF/queues/rx-*/rps_cpus), irqbalance",
    );
    d.ev(&format!("softirq on CPU {}", b.cpu), Some(b.softirq_pct), "% of that CPU");
    d.ev("softirq on the other CPUs (mean)", Some(b.others_softirq_pct), "% of a CPU");
    d.ev(&format!("NET_RX on CPU {}", b.cpu), b.net_rx_share_pct, "% of all");
    d.ev("NET_RX softirqs", b.net_rx_per_s, "/s");
    d.check(b.net_rx_share_pct.map(|s| s >= NET_RX_ONE_CPU_SHARE_PCT), || "NET_RX per CPU: /proc/softirqs not read".to_string());
    Some(d.done())
}

/// Every core busy while the server used under [`SERVER_OF_BUSY_MIN`] of the
/// busy CPU: say who used it, the load generator (its own CPU time) or other
/// processes (the rest), instead of blaming the server.
fn cpu_busy_elsewhere(ctx: &Ctx, t: &StepTelemetry, busy: f64, cores: f64) -> Option<Verdict> {
    let busy_cores = busy / 100.0 * cores;
    let server_cores = t.server_cpu_pct? / 100.0;
    let client_cores = (ctx.step.window_s > 0.0).then(|| ctx.step.client_cpu_s / ctx.step.window_s);
    let others = (busy_cores - server_cores - client_cores.unwrap_or(0.0)).max(0.0);
    let by_client = client_cores.is_some_and(|c| c >= others);
    let headline = if by_client {
        "every core is busy, but not with the server: the load generator used most of the CPU; the server was not CPU-bound"
    } else {
        "every core is busy, but not with the server: other processes used most of the CPU; the server was not CPU-bound, it shared the machine"
    };
    let next = if by_client {
        "give the load generator its own cores or machine (`taskset`, fewer client threads) and re-run"
    } else {
        "find what else ran (`top`, `pidstat -u 1`), stop it or move it to other cores (`taskset`, cgroups), and re-run: this run says little about the server"
    };
    let mut d = Draft::new(VerdictKind::CpuBusyElsewhere, ctx, headline, next);
    d.ev("CPU busy", Some(busy), "%");
    d.ev("server CPU", t.server_cpu_pct, "% of one core");
    d.ev("server share of the busy CPU", Some(100.0 * server_cores / busy_cores.max(f64::EPSILON)), "%");
    d.ev("load generator CPU", client_cores.map(|c| 100.0 * c), "% of one core");
    d.ev("other processes CPU", Some(100.0 * others), "% of one core");
    d.ev("logical cores", Some(cores), "cores");
    d.check(client_cores.map(|_| true), || "load generator CPU: not measured (all of the rest counted as other processes)".to_string());
    Some(d.done())
}
