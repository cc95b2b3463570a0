//! The per-second timeline of a run: one [`Interval`] between each two
//! consecutive system samples, with the server process, its thread states
//! and the database over the same stretch. `watch` prints it live and in
//! `show`, exports it, and the report draws its charts from it: one loop
//! over the samples, not one per reader.

use super::{process_rates, summarize_db, summarize_window, system_rates};
use scalelab_core::sample::{DbSample, ProcessSample, SystemSample, ThreadSecond};
use scalelab_core::{DbTelemetry, RunSamples, StepTelemetry};

/// A hole between two system samples longer than this (ms) is a gap in
/// the timeline, not one interval: the sampler stalled or the run paused.
pub const GAP_MS: i64 = 3000;

/// One interval: the rates between two consecutive system samples, the
/// server process over the same stretch, its thread states and the
/// database's last second. A figure not measured is `None`, never 0.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Interval {
    /// Start and end of the interval, Unix milliseconds.
    #[serde(skip)]
    pub start_unix_ms: i64,
    pub unix_ms: i64,
    /// Seconds since the timeline's origin (the first sample).
    pub elapsed_s: f64,
    pub cpu_busy_pct: Option<f64>,
    pub cpu_user_pct: Option<f64>,
    pub cpu_sys_pct: Option<f64>,
    pub cpu_iowait_pct: Option<f64>,
    #[serde(skip)]
    pub cpu_idle_pct: Option<f64>,
    pub cs_per_s: Option<f64>,
    /// Package power (RAPL, else hwmon), watts.
    #[serde(skip)]
    pub power_w: Option<f64>,
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
    /// The database's waits (or lock counters) of the last second.
    #[serde(skip)]
    pub db: Option<DbTelemetry>,
}

impl Interval {
    /// The interval from `prev` to `sys`; `procs` are the server's two
    /// latest samples, `threads` its latest thread second, `db` the database
    /// readings of about the last second; `origin_ms` is the timeline's start.
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
        Interval {
            start_unix_ms: prev.at.unix_ms,
            unix_ms: sys.at.unix_ms,
            elapsed_s: (sys.at.unix_ms - origin_ms).max(0) as f64 / 1000.0,
            cpu_busy_pct: r.cpu.map(|c| c.busy),
            cpu_user_pct: r.cpu.map(|c| c.user + c.nice),
            cpu_sys_pct: r.cpu.map(|c| c.system + c.irq + c.softirq),
            cpu_iowait_pct: r.cpu.map(|c| c.iowait),
            cpu_idle_pct: r.cpu.map(|c| c.idle),
            cs_per_s: r.ctxt_per_s,
            power_w: r.rapl_w.or(r.hwmon_w),
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
            db: db.last().and_then(|last| summarize_db(db, last.unix_ms - 1000, last.unix_ms).ok()),
        }
    }

    /// True when the samples were more than [`GAP_MS`] apart: a gap, not a rate.
    pub fn is_gap(&self) -> bool {
        self.unix_ms - self.start_unix_ms > GAP_MS
    }
}

/// Every interval of a run's stored samples, from its first system sample
/// (or `started_unix_ms` when there is none).
pub fn intervals(samples: &RunSamples, started_unix_ms: i64) -> Vec<Interval> {
    let RunSamples { system, process, threads, db, .. } = samples;
    let origin = system.first().map_or(started_unix_ms, |s| s.at.unix_ms);
    let mut out = Vec::with_capacity(system.len().saturating_sub(1));
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

/// A whole recording (a `watch`) summarized like a step's telemetry; `None`
/// when no system sample was recorded.
pub fn summarize_recording(samples: &RunSamples) -> Option<StepTelemetry> {
    let RunSamples { system, process, threads, db, .. } = samples;
    let (first, last) = (system.first()?, system.last()?);
    let mut t = summarize_window(system, process, threads, first.at.unix_ms, last.at.unix_ms, 0);
    if !db.is_empty() {
        t.db = summarize_db(db, first.at.unix_ms, last.at.unix_ms).ok();
    }
    Some(t)
}
