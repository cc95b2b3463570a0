//! `scalelab watch`: the sweep's probes on a server under its real traffic,
//! no load generated; one line per second, optionally recorded as a run.

use crate::args::WatchArgs;
use crate::error::bad;
use crate::session::{Observer, Probes, Session};
use crate::telemetry::Record;
use scalelab_analyze::telemetry::Interval;
use scalelab_core::sample::ThreadSecond;
use scalelab_core::{RunKind, RunPlan};
use scalelab_probe::db::DbSample;
use scalelab_probe::CollectorConfig;
use scalelab_probe::{ProcessSample, Sample, SystemSample};
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
    let redis = target.as_ref().and_then(|t| t.as_ref().ok()).and_then(redis_of);
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
    // Columns that cannot apply are left out: DB waits without a database (or Redis), the server's without one.
    let applies = scalelab_report::columns::Applies { db: db_url.is_some() || redis.is_some(), server: pid.is_some() };
    let probes = Probes {
        collect: CollectorConfig {
            server_pid: pid,
            interval,
            thread_hz: if pid.is_some() { a.thread_sample_hz } else { 0.0 },
            db: db_url,
            redis,
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
    let mut lines = Lines::new(now_unix_ms(), applies);
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
    /// Which optional columns the rows have (database, server).
    applies: scalelab_report::columns::Applies,
}

impl Lines {
    fn new(start_ms: i64, applies: scalelab_report::columns::Applies) -> Lines {
        Lines { start_ms, last_sys: None, prev_proc: None, cur_proc: None, last_threads: None, db_recent: Vec::new(), printed: 0, applies }
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
                sayln!("{}", scalelab_report::watch::header(self.applies));
            }
            sayln!("{}", scalelab_report::watch::row(&iv, self.applies));
            self.printed += 1;
        }
    }
}

fn now_unix_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
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

/// A watched Redis target's own probe (`INFO` each second); a URL that does
/// not parse as Redis's is watched without it.
fn redis_of(target: &scalelab_core::Target) -> Option<scalelab_wire::resp::RedisUrl> {
    (target.kind().capabilities().driver == Some(scalelab_core::Driver::Redis))
        .then(|| scalelab_wire::resp::RedisUrl::parse(target.as_given()).ok())
        .flatten()
}
