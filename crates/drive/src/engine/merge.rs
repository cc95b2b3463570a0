//! Folding the workers' statistics into one step result: per-second
//! histograms, errors, statement latencies, client lag and run-queue wait.

use super::controller::Window;
use super::state::WorkerStats;
use scalelab_core::result::{SecondResult, StatementLatency, StepResult};
use scalelab_core::LatencyHistogram;
use std::time::Duration;

/// Adds up what the workers measured.
#[derive(Default)]
pub(super) struct Merge {
    seconds: Vec<SecondResult>,
    result: StepResult,
    connect_total: Duration,
    connects: u32,
    statements: Vec<LatencyHistogram>,
    runq_total_ns: Option<u64>,
    runq_threads: u32,
    dropped: u64,
    late_sends: u64,
    clients: scalelab_core::ClientSpread,
}

impl Merge {
    /// An empty merge with room for `n_seconds` window seconds.
    pub(super) fn new(n_seconds: usize) -> Merge {
        Merge { seconds: (0..n_seconds as u32).map(|s| SecondResult { second: s, ..Default::default() }).collect(), ..Default::default() }
    }

    /// Adds one worker's statistics.
    pub(super) fn add(&mut self, stats: &WorkerStats) {
        for (m, s) in self.seconds.iter_mut().zip(&stats.seconds) {
            m.requests += s.requests;
            m.errors += s.errors;
            m.latency.merge(&s.latency);
            m.service.merge(&s.service);
        }
        let result = &mut self.result;
        result.errors.merge(&stats.errors);
        result.queries += stats.queries;
        result.reconnects += stats.reconnects;
        self.connect_total += stats.connect_total;
        if let Some(w) = stats.runq_wait_ns {
            self.runq_total_ns = Some(self.runq_total_ns.unwrap_or(0) + w);
            self.runq_threads += 1;
        }
        if let Some(lag) = stats.max_lag {
            let ms = lag.as_secs_f64() * 1e3;
            result.client_lag_ms = Some(result.client_lag_ms.map_or(ms, |m: f64| m.max(ms)));
        }
        self.connects += stats.connects;
        self.dropped += stats.dropped;
        self.late_sends += stats.late_sends;
        if self.statements.len() < stats.statements.len() {
            self.statements.resize_with(stats.statements.len(), LatencyHistogram::new);
        }
        for (m, h) in self.statements.iter_mut().zip(&stats.statements) {
            m.merge(h);
        }
        self.result.connect_latency.merge(&stats.connect_latency);
        self.clients.merge(&scalelab_core::ClientSpread::of(&stats.completions, &stats.outstanding_ms));
    }

    /// The step's result: `concurrency` clients on `client_cores` cores,
    /// over `window`, offering `offered` requests per second when an open
    /// loop; `names` are the driver's statement names.
    pub(super) fn finish(self, concurrency: u32, offered: Option<f64>, client_cores: u32, window: &Window, names: &[String]) -> StepResult {
        let Merge {
            mut seconds,
            mut result,
            connect_total,
            connects,
            statements,
            runq_total_ns,
            runq_threads,
            dropped,
            late_sends,
            clients,
        } = self;
        result.clients = (clients.clients > 0).then_some(clients);
        if offered.is_some() {
            result.offered_rate_per_s = offered;
            result.service = Some(LatencyHistogram::new());
            result.dropped = Some(dropped);
            result.late_sends = Some(late_sends);
        }
        let window_s = window.window_s;
        result.concurrency = concurrency;
        result.window_s = window_s;
        result.window_start_unix_ms = window.start_unix_ms;
        result.window_end_unix_ms = window.end_unix_ms;
        result.client_cores = client_cores;
        result.partial = window.partial;
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
        // A window cut short keeps only the seconds it covered.
        seconds.truncate(window_s.ceil().max(if window_s > 0.0 { 1.0 } else { 0.0 }) as usize);
        for s in &mut seconds {
            result.requests += s.requests;
            result.latency.merge(&s.latency);
            s.latency.pack();
            if let Some(service) = &mut result.service {
                service.merge(&s.service);
                if !s.service.is_empty() {
                    s.service.pack();
                }
            }
        }
        result.seconds = seconds;
        if let (Some(ns), true) = (runq_total_ns, window_s > 0.0 && runq_threads > 0) {
            result.client_runq_wait_pct = Some(100.0 * ns as f64 / 1e9 / (window_s * f64::from(runq_threads)));
        }
        result.connect_ms = (connects > 0).then(|| connect_total.as_secs_f64() * 1e3 / connects as f64);
        result.client_cpu_s = match window.cpu_start {
            Some(c0) if window_s > 0.0 => (window.cpu_end - c0).max(0.0),
            _ => 0.0,
        };
        result
    }
}
