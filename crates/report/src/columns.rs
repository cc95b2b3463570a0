//! The telemetry columns, defined once: each column's name, which rows it
//! applies to (a step's window, a watch interval) and how its cell is
//! written. The terminal's step table, the report page (HTML and Markdown)
//! and `watch` (live rows and `show`) all draw from [`COLUMNS`], so a column
//! has one name, one format and one marker for a figure that was not
//! measured ([`MISSING`]; the reasons are listed under the table), wherever
//! it is shown.

use crate::fmt::thousands;
use scalelab_analyze::telemetry::Interval;
use scalelab_core::{escape_control, DbTelemetry, StepResult};

/// The cell of a figure that was not measured, in every telemetry table.
pub const MISSING: &str = "-";

/// What a row is: a step's measured window, or one interval of `watch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Step,
    Interval,
}

/// The figures a row's cells are written from, whatever the row is; a
/// figure the source does not have stays None.
#[derive(Clone, Debug, Default)]
pub struct Figures {
    pub cpu_busy_pct: Option<f64>,
    pub cpu_user_pct: Option<f64>,
    pub cpu_sys_pct: Option<f64>,
    pub cpu_iowait_pct: Option<f64>,
    pub cs_per_s: Option<f64>,
    pub server_cpu_pct: Option<f64>,
    pub server_cs_per_s: Option<f64>,
    pub server_threads: Option<u64>,
    pub server_rss_mb: Option<f64>,
    pub cs_per_request: Option<f64>,
    pub running_pct: Option<f64>,
    pub runnable_pct: Option<f64>,
    pub futex_pct: Option<f64>,
    pub io_pct: Option<f64>,
    pub idle_pct: Option<f64>,
    pub hot_thread_pct: Option<f64>,
    pub client_cpu_pct: Option<f64>,
    pub client_lag_ms: Option<f64>,
    pub tcp_time_wait: Option<u64>,
    pub listen_drops_per_s: Option<f64>,
    pub disk_iops: Option<f64>,
    pub net_mb_per_s: Option<f64>,
    /// The database's top wait (or lock counter), in words, escaped.
    pub db_waits: Option<String>,
}

impl Figures {
    /// A step's window averages (None: the step has no telemetry).
    pub fn of_step(s: &StepResult) -> Option<Figures> {
        let t = s.telemetry.as_ref()?;
        let ts = t.thread_states_pct;
        Some(Figures {
            cpu_busy_pct: t.cpu_busy_pct,
            cpu_user_pct: t.cpu_user_pct,
            cpu_sys_pct: t.cpu_sys_pct,
            cpu_iowait_pct: t.cpu_iowait_pct,
            cs_per_s: t.cs_per_s,
            server_cpu_pct: t.server_cpu_pct,
            server_cs_per_s: t.server_cs_per_s,
            server_threads: t.server_threads,
            server_rss_mb: t.server_rss_mb,
            cs_per_request: t.cs_per_request,
            running_pct: ts.map(|x| x.running),
            runnable_pct: ts.map(|x| x.runnable),
            futex_pct: ts.map(|x| x.futex),
            io_pct: ts.map(|x| x.io),
            idle_pct: ts.map(|x| x.idle),
            hot_thread_pct: t.hottest_threads.first().map(|h| h.cpu_pct),
            // With --busy-poll, the part that did work (README, "--busy-poll").
            client_cpu_pct: s.client_work_cpu_pct(),
            client_lag_ms: s.client_lag_ms,
            tcp_time_wait: t.tcp_time_wait,
            listen_drops_per_s: t.listen_drops_per_s,
            disk_iops: t.disk_iops,
            net_mb_per_s: t.net_mb_per_s,
            db_waits: t.db.as_ref().map(|d| escape_control(&db_waits_cell(d)).into_owned()),
        })
    }

    /// One interval of a watch (or of a sweep's timeline).
    pub fn of_interval(iv: &Interval) -> Figures {
        Figures {
            cpu_busy_pct: iv.cpu_busy_pct,
            cpu_user_pct: iv.cpu_user_pct,
            cpu_sys_pct: iv.cpu_sys_pct,
            cpu_iowait_pct: iv.cpu_iowait_pct,
            cs_per_s: iv.cs_per_s,
            server_cpu_pct: iv.server_cpu_pct,
            server_cs_per_s: iv.server_cs_per_s,
            running_pct: iv.threads_running_pct,
            runnable_pct: iv.threads_runnable_pct,
            futex_pct: iv.threads_futex_pct,
            io_pct: iv.threads_io_pct,
            idle_pct: iv.threads_idle_pct,
            tcp_time_wait: iv.tcp_time_wait,
            listen_drops_per_s: iv.listen_drops_per_s,
            disk_iops: iv.disk_iops,
            net_mb_per_s: iv.net_mb_per_s,
            db_waits: iv.db.as_ref().map(|d| escape_control(&db_waits_cell(d)).into_owned()),
            ..Figures::default()
        }
    }
}

/// The compact "DB waits" cell of a step: PostgreSQL's top wait event and its
/// share of active backends (`Lock:transactionid 64%`); MySQL's row-lock
/// waits per second (`row locks 120/s`), table-lock waits or InnoDB OS waits
/// when those dominate. "-" when nothing was measured.
pub fn db_waits_cell(d: &DbTelemetry) -> String {
    // Redis has no waits: what it executed, its costliest command, and
    // the longest latency event its monitor recorded in the step.
    if let Some(r) = &d.redis {
        let spike = r
            .latency_spikes
            .first()
            .map(|s| format!(", latency spike {} {} ms", scalelab_core::escape_control(&s.event), s.latest_ms))
            .unwrap_or_default();
        return match (r.commands_per_s, r.top_commands.first()) {
            (Some(c), Some(top)) => {
                format!("{} cmd/s, {} {:.1}µs{spike}", rate(c), scalelab_core::escape_control(&top.command), top.usec_per_call)
            }
            (Some(c), None) => format!("{} cmd/s{spike}", rate(c)),
            _ => "-".into(),
        };
    }
    if let Some(w) = d.waits.first() {
        return format!("{} {:.0}%", w.wait, w.pct);
    }
    if d.activity_polls.is_some() {
        return "idle".into();
    }
    let row = d.row_lock_waits_per_s;
    let table = d.table_locks_waited_per_s.filter(|t| *t > row.unwrap_or(0.0));
    let os = d.os_waits_per_s.filter(|o| *o > row.unwrap_or(0.0).max(table.unwrap_or(0.0)));
    match (row, table, os) {
        (_, _, Some(o)) => format!("os waits {}/s", rate(o)),
        (_, Some(t), _) => format!("table locks {}/s", rate(t)),
        (Some(r), _, _) => format!("row locks {}/s", rate(r)),
        _ => "-".into(),
    }
}

/// A rate: one decimal below 10, thousands separators above.
pub(crate) fn rate(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.1}")
    } else {
        thousands(v)
    }
}

/// One telemetry column.
pub struct Column {
    pub name: &'static str,
    /// The narrowest it is drawn when rows are printed one at a time (watch).
    pub width: usize,
    /// Shown for step rows.
    pub step: bool,
    /// Shown for interval rows.
    pub interval: bool,
    /// What must be observed for the column to apply at all.
    needs: Needs,
    cell: fn(&Figures) -> Option<String>,
}

/// What a column reads beyond the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Needs {
    Nothing,
    /// The server process.
    Server,
    /// A database (or Redis) probe.
    Db,
}

impl Column {
    /// The cell of `f` under this column: its figure, or [`MISSING`].
    pub fn cell(&self, f: &Figures) -> String {
        (self.cell)(f).unwrap_or_else(|| MISSING.to_string())
    }

    fn applies(&self, source: Source, applies: Applies) -> bool {
        let shown = match source {
            Source::Step => self.step,
            Source::Interval => self.interval,
        };
        shown
            && match self.needs {
                Needs::Nothing => true,
                Needs::Server => applies.server,
                Needs::Db => applies.db,
            }
    }
}

fn pct(x: Option<f64>) -> Option<String> {
    x.map(|v| format!("{v:.0}%"))
}

fn count(x: Option<f64>) -> Option<String> {
    x.map(thousands)
}

/// Two decimals below 10, none above (rates that are often small).
fn small(x: Option<f64>) -> Option<String> {
    x.map(|v| if v < 10.0 { format!("{v:.2}") } else { format!("{v:.0}") })
}

const fn col(name: &'static str, width: usize, step: bool, interval: bool, needs: Needs, cell: fn(&Figures) -> Option<String>) -> Column {
    Column { name, width, step, interval, needs, cell }
}

/// Every telemetry column, in the order shown; each view takes those that
/// apply to its rows ([`columns_for`]).
pub const COLUMNS: [Column; 23] = [
    col("cpu busy", 8, true, true, Needs::Nothing, |f| pct(f.cpu_busy_pct)),
    col("usr", 4, true, true, Needs::Nothing, |f| pct(f.cpu_user_pct)),
    col("sys", 4, true, true, Needs::Nothing, |f| pct(f.cpu_sys_pct)),
    col("iowait", 6, true, true, Needs::Nothing, |f| pct(f.cpu_iowait_pct)),
    col("cs/s", 9, true, true, Needs::Nothing, |f| count(f.cs_per_s)),
    col("server cpu", 10, true, true, Needs::Server, |f| pct(f.server_cpu_pct)),
    col("server cs/s", 11, false, true, Needs::Server, |f| count(f.server_cs_per_s)),
    col("threads", 7, true, false, Needs::Server, |f| f.server_threads.map(|v| v.to_string())),
    col("rss", 6, true, false, Needs::Server, |f| f.server_rss_mb.map(|v| format!("{v:.0}MB"))),
    col("cs/req", 6, true, false, Needs::Server, |f| small(f.cs_per_request)),
    col("running", 7, true, true, Needs::Server, |f| pct(f.running_pct)),
    col("runnable", 8, true, true, Needs::Server, |f| pct(f.runnable_pct)),
    col("futex", 5, true, true, Needs::Server, |f| pct(f.futex_pct)),
    col("io", 4, true, true, Needs::Server, |f| pct(f.io_pct)),
    col("idle", 4, false, true, Needs::Server, |f| pct(f.idle_pct)),
    col("hot thread", 10, true, false, Needs::Server, |f| pct(f.hot_thread_pct)),
    col("client cpu", 10, true, false, Needs::Nothing, |f| pct(f.client_cpu_pct)),
    col("client lag", 10, true, false, Needs::Nothing, |f| f.client_lag_ms.map(|v| format!("{v:.1}ms"))),
    col("time_wait", 9, true, true, Needs::Nothing, |f| f.tcp_time_wait.map(|v| v.to_string())),
    col("drops/s", 7, true, true, Needs::Nothing, |f| small(f.listen_drops_per_s)),
    col("disk iops", 9, true, true, Needs::Nothing, |f| count(f.disk_iops)),
    col("net MB/s", 8, true, true, Needs::Nothing, |f| small(f.net_mb_per_s)),
    col("DB waits", 0, true, true, Needs::Db, |f| f.db_waits.clone()),
];

/// Which optional columns can apply to a set of rows.
#[derive(Clone, Copy, Debug)]
pub struct Applies {
    /// A database (or Redis) is probed: `DB waits`.
    pub db: bool,
    /// A server process is observed: its CPU, switches and thread states
    /// (a watch of the machine alone has none).
    pub server: bool,
}

/// The columns for rows of `source`; a column that cannot apply is left
/// out (`DB waits` without a database probe, the server's columns without
/// a server), one that applies but was not measured is [`MISSING`].
pub fn columns_for(source: Source, applies: Applies) -> Vec<&'static Column> {
    COLUMNS.iter().filter(|c| c.applies(source, applies)).collect()
}

/// A header and one row per step with telemetry: the first column the step's
/// level (`concurrency`), then the model's columns. None without telemetry.
pub fn step_rows(steps: &[StepResult]) -> Option<Vec<Vec<String>>> {
    let figures: Vec<(&StepResult, Figures)> = steps.iter().filter_map(|s| Figures::of_step(s).map(|f| (s, f))).collect();
    if figures.is_empty() {
        return None;
    }
    let cols = columns_for(Source::Step, Applies { db: figures.iter().any(|(_, f)| f.db_waits.is_some()), server: true });
    let mut rows = vec![std::iter::once("concurrency".to_string()).chain(cols.iter().map(|c| c.name.to_string())).collect()];
    for (s, f) in &figures {
        rows.push(std::iter::once(s.concurrency.to_string()).chain(cols.iter().map(|c| c.cell(f))).collect());
    }
    Some(rows)
}

/// What the columns mean, a line per group: the three CPU bases and the
/// less obvious columns. `cores` is the machine's logical core count.
pub fn legend(cores: Option<u32>, source: Source) -> Vec<String> {
    let cores = cores.map_or_else(|| "the machine's".to_string(), |c| c.to_string());
    let mut lines = vec![
        match source {
            Source::Step => format!("cpu busy, usr, sys, iowait: % of all {cores} cores; server cpu, hot thread: % of one core (200% = two cores busy); client cpu: % of the cores the load generator's threads had in the step (over 90%: the client may be the bottleneck; with --busy-poll, the part that did work)"),
            Source::Interval => format!("cpu busy, usr, sys, iowait: % of all {cores} cores; server cpu: % of one core (200% = two cores busy)"),
        },
        match source {
            Source::Step => "cs/s: context switches per second, machine-wide; cs/req: the server's per request; threads, rss: the server's".to_string(),
            Source::Interval => "cs/s: context switches per second, machine-wide; server cs/s: the server's".to_string(),
        },
        "running, runnable, futex, io, idle: share of the server's thread-time on a CPU, waiting for one, asleep on a futex (locks), in disk wait, asleep otherwise".to_string(),
    ];
    lines.push(match source {
        Source::Step => "hot thread: the busiest server thread; client lag: the worst lateness of the load generator's event loops (tens of ms: latencies include its own queueing); time_wait: TCP sockets in TIME_WAIT at the window's end, machine-wide; drops/s: connections dropped at listen queues (ListenDrops), machine-wide".to_string(),
        Source::Interval => "time_wait: TCP sockets in TIME_WAIT at the interval's end, machine-wide; drops/s: connections dropped at listen queues (ListenDrops), machine-wide".to_string(),
    });
    lines.push(format!("{MISSING}: not measured (why is listed below the table)"));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_view_names_and_writes_a_column_the_same_way() {
        // The step view and the interval view share every column both can fill.
        let step: Vec<&str> = columns_for(Source::Step, Applies { db: true, server: true }).iter().map(|c| c.name).collect();
        let interval: Vec<&str> = columns_for(Source::Interval, Applies { db: false, server: true }).iter().map(|c| c.name).collect();
        let machine: Vec<&str> = columns_for(Source::Interval, Applies { db: false, server: false }).iter().map(|c| c.name).collect();
        assert!(machine.contains(&"cpu busy") && !machine.iter().any(|c| c.contains("server") || *c == "futex"), "{machine:?}");
        for shared in ["cpu busy", "cs/s", "server cpu", "futex", "time_wait", "drops/s", "net MB/s"] {
            assert!(step.contains(&shared) && interval.contains(&shared), "{shared}");
        }
        assert!(step.contains(&"DB waits") && !interval.contains(&"DB waits"));
        assert!(!interval.contains(&"client cpu") && !step.contains(&"idle"));
        let f = Figures { cs_per_s: Some(12345.4), net_mb_per_s: Some(0.456), futex_pct: Some(61.6), ..Default::default() };
        let cell = |name: &str| COLUMNS.iter().find(|c| c.name == name).unwrap().cell(&f);
        assert_eq!((cell("cs/s"), cell("net MB/s"), cell("futex")), ("12,345".into(), "0.46".into(), "62%".into()));
        // Missing is one marker everywhere, never 0.
        assert_eq!(cell("cpu busy"), MISSING);
        assert_eq!(cell("client lag"), MISSING);
    }

    #[test]
    fn db_waits_cell_names_the_top_wait_or_the_counter() {
        use scalelab_core::DbWait;
        let pg = DbTelemetry {
            engine: "postgres".into(),
            activity_polls: Some(20),
            waits: vec![DbWait { wait: "Lock:transactionid".into(), pct: 64.2 }],
            ..Default::default()
        };
        assert_eq!(db_waits_cell(&pg), "Lock:transactionid 64%");
        let idle = DbTelemetry { waits: vec![], ..pg };
        assert_eq!(db_waits_cell(&idle), "idle");
        let my = DbTelemetry { engine: "mysql".into(), row_lock_waits_per_s: Some(1234.4), ..Default::default() };
        assert_eq!(db_waits_cell(&my), "row locks 1,234/s");
        let myisam = DbTelemetry { table_locks_waited_per_s: Some(5.25), row_lock_waits_per_s: Some(0.0), ..my.clone() };
        assert_eq!(db_waits_cell(&myisam), "table locks 5.2/s");
        assert_eq!(db_waits_cell(&DbTelemetry::default()), "-");
    }
}
