//! `scalelab watch`: the sweep's probes on a server under its real traffic,
//! no load generated; one line per second, optionally recorded as a run.

use crate::args::WatchArgs;
use crate::error::bad;
use crate::session::{Observer, Probes, Session};
use crate::telemetry::Record;
use scalelab_analyze::telemetry::{process_rates, system_rates};
use scalelab_core::sample::ThreadSecond;
use scalelab_core::{RunKind, RunPlan};
use scalelab_probe::db::DbSample;
use scalelab_probe::CollectorConfig;
use scalelab_probe::{ProcessSample, RunSamples, Sample, SystemSample};
use scalelab_report::fmt::columns;
use scalelab_store::Store;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

pub fn run(store_path: &Path, a: &WatchArgs) -> anyhow::Result<ExitCode> {
    let interval = scalelab_core::parse_duration(&a.interval).map_err(|e| bad(format!("--interval: {e}")))?;
    if interval < Duration::from_millis(100) {
        return Err(bad("--interval must be at least 100ms"));
    }
    let duration = a.duration.as_deref().map(scalelab_core::parse_duration).transpose().map_err(|e| bad(format!("--duration: {e}")))?;
    // Parsed once; a target that does not parse matters only where it is used.
    let target = a.target.as_deref().map(scalelab_core::Target::parse_any);
    let pid = match (a.pid, a.port, &target) {
        (Some(p), _, _) => {
            if !Path::new(&format!("/proc/{p}")).exists() {
                return Err(bad(format!("no process {p}")));
            }
            Some(p)
        }
        (None, Some(port), _) => {
            Some(scalelab_probe::find_by_port(&Default::default(), port).map_err(|e| bad(format!("--port {port}: {e}")))?.pid)
        }
        (None, None, Some(parsed)) => {
            let named = |e: String| bad(format!("{}: {e}", scalelab_core::redact_url(a.target.as_deref().unwrap_or_default())));
            let t = parsed.as_ref().map_err(|e| named(e.to_string()))?;
            Some(scalelab_probe::server_pid(Some(t), None, None).map_err(named)?)
        }
        (None, None, None) => None,
    };
    if a.profile && pid.is_none() {
        return Err(bad("--profile needs the server: give --pid, --port or its target"));
    }
    if a.profile && !a.record {
        return Err(bad("--profile stores a profile per window: add --record"));
    }
    let db_url = scalelab_probe::collect::for_target(target.as_ref().and_then(|t| t.as_ref().ok()), a.db_probe.as_deref()).map_err(bad)?;
    let store = if a.record { Some(Store::open(store_path)?) } else { None };
    let stop = super::stop_on_signals()?;
    let target = a.target.as_deref().map(scalelab_core::redact_url).unwrap_or_else(|| pid.map_or("this machine".into(), named));
    let plan = RunPlan {
        label: a.label.clone().unwrap_or_else(|| format!("watch {target}")),
        target: target.clone(),
        workload: "its own traffic (no load generated)".into(),
        steps: vec![],
        client_threads: 0,
        options: Default::default(),
    };
    let probes = Probes {
        collect: CollectorConfig {
            server_pid: pid,
            interval,
            thread_hz: if pid.is_some() { a.thread_sample_hz } else { 0.0 },
            db: db_url,
            specimen: None,
        },
        // A watch of the machine alone is what was asked: no note.
        why_no_server: None,
        profile: a.profile,
        profile_steps: None,
        remote: None,
    };
    let mut session = match store {
        Some(store) => {
            let env = scalelab_probe::capture_environment(&Default::default(), None, scalelab_drive::cpu::open_files_limit());
            Session::begin(store, RunKind::Watch, plan, &env, probes)?
        }
        None => Session::unrecorded(plan, probes),
    };
    match pid {
        Some(p) if a.target.is_some() => sayln!("watching {target} ({}); Ctrl-C to stop", named(p)),
        Some(_) => sayln!("watching {target}; Ctrl-C to stop"),
        None => sayln!("watching this machine (no server process given: machine-wide figures only); Ctrl-C to stop"),
    }
    for n in session.profile_notices() {
        esayln!("{n}");
    }
    let mut lines = Lines::new(now_unix_ms());
    session.watch(&stop, duration, &mut lines);
    session.stop_probes(&mut lines);
    if let Some(cost) = session.profile_overhead().map(|o| o.summary()) {
        esayln!("{cost}");
    }
    if let Some((_, id)) = session.finish(true, "recorded")? {
        sayln!("recorded as run {id} in {}", store_path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The live lines of `watch`: one row per system sample (a header every 20
/// rows), probe notes on stderr as they come.
struct Lines {
    start_ms: i64,
    last_sys: Option<SystemSample>,
    prev_proc: Option<ProcessSample>,
    cur_proc: Option<ProcessSample>,
    last_threads: Option<ThreadSecond>,
    /// The last two seconds of database readings: the "DB waits" column is their last second.
    db_recent: Vec<DbSample>,
    printed: usize,
}

impl Lines {
    fn new(start_ms: i64) -> Lines {
        Lines { start_ms, last_sys: None, prev_proc: None, cur_proc: None, last_threads: None, db_recent: Vec::new(), printed: 0 }
    }
}

impl Observer for Lines {
    fn telemetry(&mut self, records: &[Record]) {
        let mut new_sys = None;
        let mut notes = Vec::new();
        for r in records {
            match r {
                Record::Sample(Sample::System(s)) => new_sys = Some((**s).clone()),
                Record::Sample(Sample::Process(p)) => self.prev_proc = self.cur_proc.replace(p.clone()),
                Record::Sample(Sample::Threads(t)) => self.last_threads = Some(t.clone()),
                Record::Sample(Sample::Db(d)) => {
                    let newest = d.unix_ms;
                    self.db_recent.push((**d).clone());
                    self.db_recent.retain(|s| s.unix_ms >= newest - 2000);
                }
                Record::Unavailable(src, why) => notes.push(format!("{}: {why}", src.name())),
                Record::Sample(Sample::Specimen(_) | Sample::Profile(_)) => {}
            }
        }
        for n in notes {
            esayln!("unavailable: {n}");
        }
        let Some(sys) = new_sys else { return };
        if let Some(prev) = self.last_sys.replace(sys.clone()) {
            let db_last = self.db_recent.last().map(|l| l.unix_ms);
            let db_second: Vec<DbSample> =
                self.db_recent.iter().filter(|d| db_last.is_some_and(|l| d.unix_ms >= l - 1000)).cloned().collect();
            let procs = (self.prev_proc.as_ref(), self.cur_proc.as_ref());
            let iv = Interval::of(self.start_ms, &prev, &sys, procs, self.last_threads.as_ref(), &db_second);
            if self.printed.is_multiple_of(20) {
                sayln!("{}", aligned(&HEADER.map(String::from)));
            }
            sayln!("{}", aligned(&iv.cells()));
            self.printed += 1;
        }
    }
}

/// `show` of a recorded watch: the whole recording summarized like a step.
pub fn show(run: &scalelab_core::Run) -> anyhow::Result<ExitCode> {
    let samples = &run.samples;
    sayln!(
        "run {}: {} — {} — recorded {} system samples",
        run.id,
        scalelab_core::escape_control(&run.plan.label),
        scalelab_core::escape_control(&run.plan.target),
        samples.system.len()
    );
    let Some(t) = summarize(samples) else {
        sayln!("no samples recorded");
        return Ok(ExitCode::SUCCESS);
    };
    let p = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.1}%"));
    let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.0}"));
    let ts = t.thread_states_pct;
    let rows = vec![
        vec![
            "cpu busy / usr / sys / iowait".to_string(),
            format!("{} / {} / {} / {}", p(t.cpu_busy_pct), p(t.cpu_user_pct), p(t.cpu_sys_pct), p(t.cpu_iowait_pct)),
        ],
        vec!["context switches/s".into(), f(t.cs_per_s)],
        vec!["server cpu (of one core), cs/s".into(), format!("{}, {}", p(t.server_cpu_pct), f(t.server_cs_per_s))],
        vec![
            "server threads running / runnable / futex / io / idle".into(),
            format!(
                "{} / {} / {} / {} / {}",
                p(ts.map(|s| s.running)),
                p(ts.map(|s| s.runnable)),
                p(ts.map(|s| s.futex)),
                p(ts.map(|s| s.io)),
                p(ts.map(|s| s.idle))
            ),
        ],
        vec![
            "hottest thread".into(),
            t.hottest_threads.first().map_or("-".into(), |h| format!("{} ({}) {:.0}% of a core", h.name, h.tid, h.cpu_pct)),
        ],
        vec!["TIME_WAIT at the end".into(), t.tcp_time_wait.map_or("-".into(), |v| v.to_string())],
        vec!["listen drops/s".into(), t.listen_drops_per_s.map_or("-".into(), |v| format!("{v:.2}"))],
        vec!["disk IOPS, net MB/s".into(), format!("{}, {}", f(t.disk_iops), t.net_mb_per_s.map_or("-".into(), |v| format!("{v:.2}")))],
    ];
    let mut rows = rows;
    if let Some(d) = &t.db {
        rows.push(vec!["database".into(), scalelab_report::table::db_summary(d)]);
    }
    say!("{}", columns(&rows));
    for (k, why) in &t.unavailable {
        sayln!("unavailable: {k}: {why}");
    }
    let series = intervals(samples, run);
    if !series.is_empty() {
        println!("per interval ({} rows; `scalelab export {} --series` for all of them as CSV):", series.len(), run.id);
        println!("{}", aligned(&HEADER.map(String::from)));
        let shown = 20;
        for iv in series.iter().take(shown) {
            sayln!("{}", aligned(&iv.cells()));
        }
        if series.len() > shown {
            println!("... {} more", series.len() - shown);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The columns of `watch`, live and in `show`.
const HEADER: [&str; 18] = [
    "time",
    "cpu busy",
    "usr",
    "sys",
    "iowait",
    "cs/s",
    "server cpu",
    "server cs/s",
    "running",
    "runnable",
    "futex",
    "io",
    "idle",
    "time_wait",
    "drops/s",
    "disk iops",
    "net MB/s",
    "DB waits",
];

/// Column widths fixed up front, so rows printed one at a time line up
/// under the header (a figure wider than its column pushes only its own row).
const WIDTHS: [usize; 18] = [6, 8, 4, 4, 6, 9, 10, 11, 7, 8, 5, 4, 4, 9, 7, 9, 8, 0];

/// One row of cells padded to [`WIDTHS`]: the time left-aligned, figures
/// right-aligned, the last column (text) as it is.
fn aligned(cells: &[String]) -> String {
    let mut line = String::new();
    for (i, c) in cells.iter().enumerate() {
        let w = WIDTHS.get(i).copied().unwrap_or(0).max(HEADER.get(i).map_or(0, |h| h.chars().count()));
        if i == 0 {
            line.push_str(&format!("{c:<w$}"));
        } else if i + 1 == cells.len() {
            line.push_str("  ");
            line.push_str(c);
        } else {
            line.push_str(&format!("  {c:>w$}"));
        }
    }
    line.trim_end().to_string()
}

fn now_unix_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// One interval of a watch: the rates between two consecutive system
/// samples, the server process over the same stretch, its thread states and
/// the database's last second. A figure not measured is `None`, never 0.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Interval {
    /// End of the interval, Unix milliseconds.
    pub unix_ms: i64,
    /// Seconds since the watch started.
    pub elapsed_s: f64,
    pub cpu_busy_pct: Option<f64>,
    pub cpu_user_pct: Option<f64>,
    pub cpu_sys_pct: Option<f64>,
    pub cpu_iowait_pct: Option<f64>,
    pub cs_per_s: Option<f64>,
    /// The server's CPU in % of one core.
    pub server_cpu_pct: Option<f64>,
    pub server_cs_per_s: Option<f64>,
    pub threads_running_pct: Option<f64>,
    pub threads_runnable_pct: Option<f64>,
    pub threads_futex_pct: Option<f64>,
    pub threads_io_pct: Option<f64>,
    pub threads_idle_pct: Option<f64>,
    pub tcp_time_wait: Option<u64>,
    pub listen_drops_per_s: Option<f64>,
    pub disk_iops: Option<f64>,
    pub net_mb_per_s: Option<f64>,
    /// The top database wait (or lock counter) of the last second, in words.
    pub db_waits: Option<String>,
}

impl Interval {
    /// The interval from `prev` to `sys`; `procs` are the server's two
    /// latest samples, `threads` its latest thread second, `db` the database
    /// readings of about the last second.
    pub fn of(
        origin_ms: i64,
        prev: &SystemSample,
        sys: &SystemSample,
        procs: (Option<&ProcessSample>, Option<&ProcessSample>),
        threads: Option<&ThreadSecond>,
        db: &[DbSample],
    ) -> Interval {
        let r = system_rates(prev, sys);
        let ts = threads.and_then(|t| t.time.shares());
        let server = match procs {
            (Some(a), Some(b)) => Some(process_rates(a, b)),
            _ => None,
        };
        let db_waits = db.last().and_then(|last| scalelab_analyze::telemetry::summarize_db(db, last.unix_ms - 1000, last.unix_ms).ok());
        Interval {
            unix_ms: sys.at.unix_ms,
            elapsed_s: (sys.at.unix_ms - origin_ms).max(0) as f64 / 1000.0,
            cpu_busy_pct: r.cpu.map(|c| c.busy),
            cpu_user_pct: r.cpu.map(|c| c.user + c.nice),
            cpu_sys_pct: r.cpu.map(|c| c.system + c.irq + c.softirq),
            cpu_iowait_pct: r.cpu.map(|c| c.iowait),
            cs_per_s: r.ctxt_per_s,
            server_cpu_pct: server.as_ref().and_then(|r| r.cpu_pct()),
            server_cs_per_s: server.as_ref().and_then(|r| Some(r.voluntary_cs_per_s? + r.nonvoluntary_cs_per_s?)),
            threads_running_pct: ts.map(|s| s.running_pct),
            threads_runnable_pct: ts.map(|s| s.runnable_pct),
            threads_futex_pct: ts.map(|s| s.futex_pct),
            threads_io_pct: ts.map(|s| s.io_pct),
            threads_idle_pct: ts.map(|s| s.idle_pct),
            tcp_time_wait: sys.tcp_states.as_ref().map(|s| u64::from(s.time_wait)),
            listen_drops_per_s: r.tcp.as_ref().and_then(|t| t.listen_drops_per_s),
            disk_iops: if r.disks.is_empty() { None } else { r.disks.iter().map(|d| Some(d.read_iops? + d.write_iops?)).sum() },
            net_mb_per_s: if r.net.is_empty() {
                None
            } else {
                r.net.iter().map(|n| Some((n.rx_bytes_per_s? + n.tx_bytes_per_s?) / 1e6)).sum()
            },
            db_waits: db_waits.map(|d| scalelab_report::table::db_waits_cell(&d)),
        }
    }

    /// The row's cells, as [`HEADER`] names them.
    fn cells(&self) -> Vec<String> {
        let p = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.0}%"));
        let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.0}"));
        vec![
            format!("{:.1}s", self.elapsed_s),
            p(self.cpu_busy_pct),
            p(self.cpu_user_pct),
            p(self.cpu_sys_pct),
            p(self.cpu_iowait_pct),
            f(self.cs_per_s),
            p(self.server_cpu_pct),
            f(self.server_cs_per_s),
            p(self.threads_running_pct),
            p(self.threads_runnable_pct),
            p(self.threads_futex_pct),
            p(self.threads_io_pct),
            p(self.threads_idle_pct),
            self.tcp_time_wait.map_or("-".into(), |v| v.to_string()),
            f(self.listen_drops_per_s),
            f(self.disk_iops),
            self.net_mb_per_s.map_or("-".into(), |v| format!("{v:.2}")),
            self.db_waits.clone().unwrap_or_else(|| "-".into()),
        ]
    }
}

/// Every interval of a recorded watch, from its stored samples.
pub fn intervals(samples: &RunSamples, run: &scalelab_core::Run) -> Vec<Interval> {
    let RunSamples { system, process, threads, db, .. } = samples;
    let origin = system.first().map_or(run.started_unix_ms, |s| s.at.unix_ms);
    let mut out = Vec::new();
    for pair in system.windows(2) {
        let (prev, sys) = (&pair[0], &pair[1]);
        let at = sys.at.unix_ms;
        // The server's two samples nearest before this system sample, taken in the same sampler pass.
        let upto: Vec<&ProcessSample> = process.iter().filter(|p| p.at.unix_ms <= at + 50).collect();
        let procs = (upto.len().checked_sub(2).map(|i| upto[i]), upto.last().copied());
        let th = threads.iter().rev().find(|t| t.unix_ms <= at + 500);
        let db_here: Vec<DbSample> = db.iter().filter(|d| d.unix_ms > prev.at.unix_ms - 1000 && d.unix_ms <= at).cloned().collect();
        out.push(Interval::of(origin, prev, sys, procs, th, &db_here));
    }
    out
}

/// The per-second series of a recorded watch as CSV (units in the column names).
pub fn intervals_csv(run_id: i64, rows: &[Interval]) -> String {
    let mut out = String::from(
        "run_id,unix_ms,elapsed_s,cpu_busy_pct,cpu_user_pct,cpu_sys_pct,cpu_iowait_pct,cs_per_s,server_cpu_pct_of_one_core,\
         server_cs_per_s,threads_running_pct,threads_runnable_pct,threads_futex_pct,threads_io_pct,threads_idle_pct,\
         tcp_time_wait_sockets,listen_drops_per_s,disk_iops,net_mb_per_s,db_waits\n",
    );
    let o = scalelab_report::csv::opt;
    for r in rows {
        let db = r.db_waits.as_deref().map(scalelab_report::csv::quote).unwrap_or_default();
        out.push_str(&format!(
            "{run_id},{},{:.3},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{db}\n",
            r.unix_ms,
            r.elapsed_s,
            o(r.cpu_busy_pct),
            o(r.cpu_user_pct),
            o(r.cpu_sys_pct),
            o(r.cpu_iowait_pct),
            o(r.cs_per_s),
            o(r.server_cpu_pct),
            o(r.server_cs_per_s),
            o(r.threads_running_pct),
            o(r.threads_runnable_pct),
            o(r.threads_futex_pct),
            o(r.threads_io_pct),
            o(r.threads_idle_pct),
            r.tcp_time_wait.map(|v| v.to_string()).unwrap_or_default(),
            o(r.listen_drops_per_s),
            o(r.disk_iops),
            o(r.net_mb_per_s),
        ));
    }
    out
}

/// A recorded watch as JSON: the run's fields, the summary of the whole
/// recording (`summary`, the shape of a step's `telemetry`) and every
/// interval (`samples`).
pub fn watch_json(run: &scalelab_core::Run) -> anyhow::Result<serde_json::Value> {
    let mut doc = scalelab_report::json::run_json(run);
    let samples = &run.samples;
    let rows = intervals(samples, run);
    let summary = summarize(samples).filter(|_| samples.system.len() >= 2);
    if let serde_json::Value::Object(m) = &mut doc {
        m.insert("summary".into(), serde_json::to_value(summary)?);
        m.insert("samples".into(), serde_json::to_value(rows)?);
    }
    Ok(doc)
}

/// The whole recording summarized like a step's telemetry; `None` when no
/// system sample was recorded.
fn summarize(samples: &RunSamples) -> Option<scalelab_core::StepTelemetry> {
    let RunSamples { system, process, threads, db, .. } = samples;
    let (first, last) = (system.first()?, system.last()?);
    let mut t = scalelab_analyze::telemetry::summarize_window(system, process, threads, first.at.unix_ms, last.at.unix_ms, 0);
    if !db.is_empty() {
        t.db = scalelab_analyze::telemetry::summarize_db(db, first.at.unix_ms, last.at.unix_ms).ok();
    }
    Some(t)
}

/// `pid 1234 (nginx)`: the process's name from /proc, when it can be read.
fn named(pid: u32) -> String {
    match std::fs::read_to_string(format!("/proc/{pid}/comm")) {
        Ok(comm) if !comm.trim().is_empty() => {
            format!("pid {pid} ({})", scalelab_core::escape_control(comm.trim()))
        }
        _ => format!("pid {pid}"),
    }
}
