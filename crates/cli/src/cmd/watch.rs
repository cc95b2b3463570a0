//! `scalelab watch`: the sweep's probes on a server under its real traffic,
//! no load generated; one line per second, optionally recorded as a run.

use crate::args::WatchArgs;
use crate::error::bad;
use crate::session::{Observer, Probes, Session};
use crate::telemetry::{Intervals, Record};
use scalelab_core::{RunKind, RunPlan};
use scalelab_probe::CollectorConfig;
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
    let target_parsed = a.target.as_deref().map(scalelab_core::Target::parse_any);
    let target = &target_parsed;
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
    let triggers = crate::trigger::parse(&a.triggers.triggers, a.triggers.max_captures, false, pid.is_some()).map_err(bad)?;
    if !triggers.is_empty() && !a.record {
        return Err(bad("--trigger stores what it captures: add --record"));
    }
    let db_url = scalelab_probe::collect::for_target(target.as_ref().and_then(|t| t.as_ref().ok()), a.db_probe.as_deref()).map_err(bad)?;
    let redis = target.as_ref().and_then(|t| t.as_ref().ok()).and_then(redis_of);
    if triggers.iter().any(|t| t.figure == scalelab_analyze::trigger::Figure::DbWaits) && db_url.is_none() {
        return Err(bad("--trigger db_waits needs a database: give its URL as the target or --db-probe"));
    }
    let metrics = crate::exporter::MetricsPlan::parse(&a.metrics).map_err(bad)?;
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
    let db_for_captures = db_url.clone();
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
    // Bound before the run is stored: an address in use is bad input.
    let exporter = crate::exporter::Exporter::start(&metrics, "watch")?;
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
    let started_ms = now_unix_ms();
    if !triggers.is_empty() {
        let said: Vec<String> = triggers.iter().map(ToString::to_string).collect();
        sayln!("triggers: {} (at most {} capture(s) an hour)", said.join("; "), a.triggers.max_captures);
        let capturing = crate::trigger::Capturing::new(triggers, a.triggers.max_captures, started_ms, pid, db_for_captures);
        session.set_capturing(capturing, true);
    }
    if let Some(x) = &exporter {
        // Unrecorded, the run is named by its start (a new watch, a new series).
        let run = session.run_id().map_or_else(|| format!("watch-{started_ms}"), |id| id.to_string());
        x.set_run(&run, &session.plan().label, &target);
        if let Some(addr) = x.listening() {
            sayln!("metrics: http://{addr}{}", crate::exporter::METRICS_PATH);
        }
    }
    let mut lines = Lines::new(started_ms, applies);
    // Watched by port (or target), a restarted server is found again by its port.
    let parsed = target_parsed.as_ref().and_then(|t| t.as_ref().ok());
    let mut refind = || match (a.port, parsed) {
        (Some(port), _) => scalelab_probe::find_by_port(&Default::default(), port).ok().map(|f| f.pid),
        (None, Some(t)) => scalelab_probe::server_pid(Some(t), None, None).ok(),
        (None, None) => None,
    };
    let refind: Option<&mut dyn FnMut() -> Option<u32>> = if a.pid.is_none() && pid.is_some() { Some(&mut refind) } else { None };
    match &exporter {
        Some(x) => {
            let mut exported = x.observe(&mut lines);
            session.watch(&stop, duration, &mut exported, refind);
            session.stop_probes(&mut exported);
        }
        None => {
            session.watch(&stop, duration, &mut lines, refind);
            session.stop_probes(&mut lines);
        }
    }
    let metrics_note = exporter.and_then(crate::exporter::Exporter::finish);
    if let Some(line) = &metrics_note {
        esayln!("{line}");
    }
    if let Some(line) = session.capture_summary() {
        sayln!("{line}");
    }
    if let Some(cost) = session.profile_overhead().map(|o| o.summary()) {
        esayln!("{cost}");
    }
    if let Some((store, id)) = session.finish(true, "recorded")? {
        if let Some(line) = &metrics_note {
            let _ = store.add_probe_note(id, "metrics", line);
        }
        sayln!("recorded as run {id} in {}", store_path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The live lines of `watch`: one row per system sample (a header every 20
/// rows), probe notes on stderr as they come.
struct Lines {
    intervals: Intervals,
    printed: usize,
    /// Which optional columns the rows have (database, server).
    applies: scalelab_report::columns::Applies,
}

impl Lines {
    fn new(start_ms: i64, applies: scalelab_report::columns::Applies) -> Lines {
        Lines { intervals: Intervals::new(start_ms), printed: 0, applies }
    }
}

impl Observer for Lines {
    fn telemetry(&mut self, records: &[Record]) {
        for r in records {
            if let Record::Sample(scalelab_core::Sample::Capture(c)) = r {
                esayln!("{}", crate::trigger::line(c));
            }
        }
        let (iv, notes) = self.intervals.push(records);
        for n in notes {
            esayln!("unavailable: {n}");
        }
        let Some(iv) = iv else { return };
        if self.printed.is_multiple_of(20) {
            sayln!("{}", scalelab_report::watch::header(self.applies));
        }
        sayln!("{}", scalelab_report::watch::row(&iv, self.applies));
        self.printed += 1;
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
