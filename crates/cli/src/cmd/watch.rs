//! `scalelab watch`: the sweep's probes on a server under its real traffic,
//! no load generated; one line per second, optionally recorded as a run.

use crate::args::WatchArgs;
use crate::error::bad;
use crate::telemetry::{Record, Telemetry};
use scalelab_core::{RunKind, RunPlan};
use scalelab_probe::db::DbSample;
use scalelab_probe::summary::ThreadSecond;
use scalelab_probe::{process_rates, system_rates, ProcessSample, SystemSample};
use scalelab_report::fmt::columns;
use scalelab_store::Store;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

pub fn run(store_path: &Path, a: &WatchArgs) -> anyhow::Result<ExitCode> {
    let interval = scalelab_core::parse_duration(&a.interval).map_err(|e| bad(format!("--interval: {e}")))?;
    if interval < Duration::from_millis(100) {
        return Err(bad("--interval must be at least 100ms"));
    }
    let duration = a.duration.as_deref().map(scalelab_core::parse_duration).transpose().map_err(|e| bad(format!("--duration: {e}")))?;
    let pid = match (a.pid, a.port, &a.target) {
        (Some(p), _, _) => {
            if !Path::new(&format!("/proc/{p}")).exists() {
                return Err(bad(format!("no process {p}")));
            }
            Some(p)
        }
        (None, Some(port), _) => {
            Some(scalelab_probe::find_by_port(&Default::default(), port).map_err(|e| bad(format!("--port {port}: {e}")))?.pid)
        }
        (None, None, Some(t)) => {
            Some(crate::telemetry::server_pid(t, None, None).map_err(|e| bad(format!("{}: {e}", scalelab_core::redact_url(t))))?)
        }
        (None, None, None) => None,
    };
    let db_url = crate::db_probe::for_target(a.target.as_deref(), a.db_probe.as_deref()).map_err(bad)?;
    let mut store = if a.record { Some(Store::open(store_path)?) } else { None };
    let stop = super::stop_on_signals()?;
    let target =
        a.target.as_deref().map(scalelab_core::redact_url).unwrap_or_else(|| pid.map_or("this machine".into(), |p| format!("pid {p}")));
    let run_id = match &store {
        Some(s) => {
            let env = scalelab_probe::capture_environment(&Default::default(), None, scalelab_drive::cpu::open_files_limit());
            let plan = RunPlan {
                label: a.label.clone().unwrap_or_else(|| format!("watch {target}")),
                target: target.clone(),
                workload: "its own traffic (no load generated)".into(),
                steps: vec![],
                client_threads: 0,
                options: Default::default(),
            };
            Some(s.begin_run(RunKind::Watch, &plan, &env, None)?)
        }
        None => None,
    };
    match pid {
        Some(p) if !target.ends_with(&p.to_string()) => sayln!("watching {target} (pid {p}); Ctrl-C to stop"),
        Some(_) => sayln!("watching {target}; Ctrl-C to stop"),
        None => sayln!("watching this machine (no server process given: machine-wide figures only); Ctrl-C to stop"),
    }
    let telemetry = Telemetry::start(pid, interval, if pid.is_some() { a.thread_sample_hz } else { 0.0 }, db_url, None);
    let start = Instant::now();
    let mut last_sys: Option<SystemSample> = None;
    let mut prev_proc: Option<ProcessSample> = None;
    let mut cur_proc: Option<ProcessSample> = None;
    let mut last_threads: Option<ThreadSecond> = None;
    // The last two seconds of database readings: the "DB waits" column is their last second.
    let mut db_recent: Vec<DbSample> = Vec::new();
    let header = [
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
    let mut printed = 0usize;
    let mut notes = Vec::new();
    while !stop.load(Ordering::Relaxed) && duration.is_none_or(|d| start.elapsed() < d) {
        std::thread::sleep(Duration::from_millis(100));
        let records = telemetry.drain();
        let mut new_sys = None;
        for r in &records {
            match r {
                Record::Sample(_, "system", j) => new_sys = serde_json::from_str::<SystemSample>(j).ok(),
                Record::Sample(_, "process", j) => {
                    if let Ok(p) = serde_json::from_str::<ProcessSample>(j) {
                        prev_proc = cur_proc.replace(p);
                    }
                }
                Record::Sample(_, "threads", j) => last_threads = serde_json::from_str(j).ok(),
                Record::Sample(_, "db", j) => {
                    if let Ok(d) = serde_json::from_str::<DbSample>(j) {
                        let newest = d.unix_ms;
                        db_recent.push(d);
                        db_recent.retain(|s| s.unix_ms >= newest - 2000);
                    }
                }
                Record::Unavailable(src, why) => notes.push(format!("{src}: {why}")),
                _ => {}
            }
        }
        if let (Some(store), Some(id)) = (store.as_mut(), run_id) {
            crate::telemetry::store_records(store, id, records);
        }
        for n in notes.drain(..) {
            esayln!("unavailable: {n}");
        }
        let Some(sys) = new_sys else { continue };
        if let Some(prev) = last_sys.replace(sys.clone()) {
            let r = system_rates(&prev, &sys);
            let p = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.0}%"));
            let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.0}"));
            let ts = last_threads.as_ref().and_then(|t| t.time.shares());
            let server = match (&prev_proc, &cur_proc) {
                (Some(a), Some(b)) => Some(process_rates(a, b)),
                _ => None,
            };
            let row = vec![
                format!("{:.0}s", start.elapsed().as_secs_f64()),
                p(r.cpu.map(|c| c.busy)),
                p(r.cpu.map(|c| c.user + c.nice)),
                p(r.cpu.map(|c| c.system + c.irq + c.softirq)),
                p(r.cpu.map(|c| c.iowait)),
                f(r.ctxt_per_s),
                p(server.as_ref().and_then(|r| r.cpu_pct())),
                f(server.as_ref().and_then(|r| Some(r.voluntary_cs_per_s? + r.nonvoluntary_cs_per_s?))),
                p(ts.map(|s| s.running_pct)),
                p(ts.map(|s| s.runnable_pct)),
                p(ts.map(|s| s.futex_pct)),
                p(ts.map(|s| s.io_pct)),
                p(ts.map(|s| s.idle_pct)),
                sys.tcp_states.as_ref().map_or("-".into(), |s| s.time_wait.to_string()),
                f(r.tcp.as_ref().and_then(|t| t.listen_drops_per_s)),
                f(if r.disks.is_empty() { None } else { r.disks.iter().map(|d| Some(d.read_iops? + d.write_iops?)).sum() }),
                if r.net.is_empty() {
                    "-".into()
                } else {
                    r.net
                        .iter()
                        .map(|n| Some((n.rx_bytes_per_s? + n.tx_bytes_per_s?) / 1e6))
                        .sum::<Option<f64>>()
                        .map_or("-".into(), |v| format!("{v:.2}"))
                },
                match db_recent.last() {
                    Some(last) => scalelab_probe::db::summarize_db(&db_recent, last.unix_ms - 1000, last.unix_ms)
                        .map_or("-".into(), |d| scalelab_report::table::db_waits_cell(&d)),
                    None => "-".into(),
                },
            ];
            let rows = vec![header.map(String::from).to_vec(), row];
            let text = columns(&rows);
            let mut lines = text.lines();
            let head = lines.next().unwrap_or_default();
            if printed.is_multiple_of(20) {
                sayln!("{head}");
            }
            sayln!("{}", lines.next().unwrap_or_default());
            printed += 1;
        }
    }
    if let (Some(mut store), Some(id)) = (store, run_id) {
        crate::telemetry::store_records(&mut store, id, telemetry.stop());
        store.finish_run(id, true, "recorded")?;
        sayln!("recorded as run {id} in {}", store_path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `show` of a recorded watch: the whole recording summarized like a step.
pub fn show(store: &Store, run: &scalelab_core::Run) -> anyhow::Result<ExitCode> {
    let (system, process, threads, db) = crate::telemetry::load_samples(store, run.id)?;
    sayln!(
        "run {}: {} — {} — recorded {} system samples",
        run.id,
        scalelab_core::escape_control(&run.plan.label),
        scalelab_core::escape_control(&run.plan.target),
        system.len()
    );
    let (Some(first), Some(last)) = (system.first(), system.last()) else {
        sayln!("no samples recorded");
        return Ok(ExitCode::SUCCESS);
    };
    let mut t = scalelab_probe::summary::summarize_window(&system, &process, &threads, first.at.unix_ms, last.at.unix_ms, 0);
    if !db.is_empty() {
        t.db = scalelab_probe::db::summarize_db(&db, first.at.unix_ms, last.at.unix_ms).ok();
    }
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
    Ok(ExitCode::SUCCESS)
}
