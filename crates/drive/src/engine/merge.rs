//! Folding the workers' statistics into one step result. Each thread's
//! share becomes a [`StepResult`] and [`StepResult::merge`] (core: the same
//! merge the agents' results go through) adds them up; what belongs to the
//! process as a whole is then set from the process's own measures: its CPU
//! time and cores, the run-queue wait and connect time averaged over every
//! thread and connection, and statement percentiles from the threads'
//! merged histograms (summaries alone could not be merged).

use super::controller::Window;
use super::state::WorkerStats;
use scalelab_core::result::{StatementLatency, StepResult};
use scalelab_core::{ClientSpread, LatencyHistogram};
use std::time::Duration;

/// The workers' statistics, gathered as they are joined.
pub(super) struct Merge {
    n_seconds: usize,
    workers: Vec<WorkerStats>,
}

impl Merge {
    /// An empty merge of a step with `n_seconds` window seconds.
    pub(super) fn new(n_seconds: usize) -> Merge {
        Merge { n_seconds, workers: Vec::new() }
    }

    /// Adds one worker's statistics.
    pub(super) fn add(&mut self, stats: WorkerStats) {
        self.workers.push(stats);
    }

    /// The step's result: `concurrency` clients on `client_cores` cores,
    /// over `window`, offering `offered` requests per second when an open
    /// loop; `names` are the driver's statement names.
    pub(super) fn finish(self, concurrency: u32, offered: Option<f64>, client_cores: u32, window: &Window, names: &[String]) -> StepResult {
        let window_s = window.window_s;
        // A window cut short keeps only the seconds it covered.
        let kept = (window_s.ceil().max(if window_s > 0.0 { 1.0 } else { 0.0 }) as usize).min(self.n_seconds);
        let (mut connect_total, mut connects) = (Duration::ZERO, 0u32);
        let (mut runq_total_ns, mut runq_threads) = (None::<u64>, 0u32);
        let mut poll_idle = None::<Duration>;
        let mut statements: Vec<LatencyHistogram> = Vec::new();
        let mut parts = Vec::with_capacity(self.workers.len());
        for w in self.workers {
            let WorkerStats {
                mut seconds,
                errors,
                queries,
                reconnects,
                connect_total: thread_connect_total,
                connects: thread_connects,
                max_lag,
                runq_wait_ns,
                statements: thread_statements,
                dropped,
                late_sends,
                connect_latency,
                completions,
                outstanding_ms,
                flow,
                poll_idle: thread_poll_idle,
            } = w;
            if let Some(d) = thread_poll_idle {
                poll_idle = Some(poll_idle.unwrap_or_default() + d);
            }
            connect_total += thread_connect_total;
            connects += thread_connects;
            if let Some(ns) = runq_wait_ns {
                runq_total_ns = Some(runq_total_ns.unwrap_or(0) + ns);
                runq_threads += 1;
            }
            if statements.len() < thread_statements.len() {
                statements.resize_with(thread_statements.len(), LatencyHistogram::new);
            }
            for (m, h) in statements.iter_mut().zip(&thread_statements) {
                m.merge(h);
            }
            seconds.truncate(kept);
            let mut latency = LatencyHistogram::new();
            let mut service = offered.map(|_| LatencyHistogram::new());
            for s in &seconds {
                latency.merge(&s.latency);
                if let Some(h) = &mut service {
                    h.merge(&s.service);
                }
            }
            parts.push(StepResult {
                concurrency: completions.len() as u32,
                window_s,
                window_start_unix_ms: window.start_unix_ms,
                window_end_unix_ms: window.end_unix_ms,
                requests: seconds.iter().map(|s| s.requests).sum(),
                queries,
                errors,
                latency,
                seconds,
                // The process's, set below.
                client_cpu_s: 0.0,
                client_cores: 0,
                reconnects,
                connect_ms: None,
                connect_latency,
                client_lag_ms: max_lag.map(|l| l.as_secs_f64() * 1e3),
                client_runq_wait_pct: None,
                partial: window.partial,
                published_throughput_per_s: None,
                telemetry: None,
                statements: Vec::new(),
                offered_rate_per_s: None,
                service,
                dropped: offered.map(|_| dropped),
                late_sends: offered.map(|_| late_sends),
                clients: (!completions.is_empty()).then(|| ClientSpread::of(&completions, &outstanding_ms)),
                flow_stalls: flow.map(|(n, _)| n),
                flow_stall_ms: flow.map(|(_, wait)| wait.as_secs_f64() * 1e3),
                // The process's, set below.
                client_poll_idle_s: None,
            });
        }
        let mut result = StepResult::merge(concurrency, &parts, window.partial);
        // Every second of the window is there, a worker or not.
        while result.seconds.len() < kept {
            result.seconds.push(scalelab_core::result::SecondResult { second: result.seconds.len() as u32, ..Default::default() });
        }
        // With no worker joined the window still is the step's.
        result.window_s = window_s;
        result.window_start_unix_ms = window.start_unix_ms;
        result.window_end_unix_ms = window.end_unix_ms;
        result.offered_rate_per_s = offered;
        if offered.is_some() {
            result.service.get_or_insert_with(LatencyHistogram::new);
            result.dropped.get_or_insert(0);
            result.late_sends.get_or_insert(0);
        }
        result.client_cores = client_cores;
        result.client_cpu_s = match window.cpu_start {
            Some(c0) if window_s > 0.0 => (window.cpu_end - c0).max(0.0),
            _ => 0.0,
        };
        result.client_poll_idle_s = poll_idle.filter(|_| window.cpu_start.is_some()).map(|d| d.as_secs_f64());
        result.client_runq_wait_pct = match (runq_total_ns, window_s > 0.0 && runq_threads > 0) {
            (Some(ns), true) => Some(100.0 * ns as f64 / 1e9 / (window_s * f64::from(runq_threads))),
            _ => None,
        };
        result.connect_ms = (connects > 0).then(|| connect_total.as_secs_f64() * 1e3 / f64::from(connects));
        result.statements = statements
            .iter()
            .enumerate()
            .filter_map(|(i, h)| {
                let s = h.summary()?;
                Some(StatementLatency {
                    name: names.get(i).cloned().unwrap_or_else(|| format!("statement {}", i + 1)),
                    count: h.count(),
                    mean_ms: s.mean,
                    p50_ms: s.p50,
                    p99_ms: s.p99,
                })
            })
            .collect();
        result
    }
}
