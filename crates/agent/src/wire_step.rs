//! A [`StepResult`] on the wire: every field as it is, histograms as HDR V2
//! deflated bytes (the store's format) in base64, so the coordinator merges
//! exactly what the agent measured.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use scalelab_core::result::{ErrorCounts, SecondResult, StatementLatency, StepResult};
use scalelab_core::LatencyHistogram;
use serde::{Deserialize, Serialize};

/// One second of an agent's window.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WireSecond {
    pub second: u32,
    pub requests: u64,
    pub errors: u64,
    pub latency: String,
    /// Open loop: the second's service times (absent when empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
}

/// An agent's share of a step.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WireStep {
    pub concurrency: u32,
    pub window_s: f64,
    pub window_start_unix_ms: i64,
    pub window_end_unix_ms: i64,
    pub requests: u64,
    pub queries: u64,
    pub errors: ErrorCounts,
    pub latency: String,
    pub seconds: Vec<WireSecond>,
    pub client_cpu_s: f64,
    pub client_cores: u32,
    pub reconnects: u64,
    pub connect_ms: Option<f64>,
    pub connect_latency: String,
    pub client_lag_ms: Option<f64>,
    pub client_runq_wait_pct: Option<f64>,
    pub partial: bool,
    pub statements: Vec<StatementLatency>,
    pub offered_rate_per_s: Option<f64>,
    pub service: Option<String>,
    pub dropped: Option<u64>,
    pub late_sends: Option<u64>,
    #[serde(default)]
    pub clients: Option<scalelab_core::ClientSpread>,
}

fn enc(h: &LatencyHistogram) -> String {
    B64.encode(h.to_bytes())
}

fn dec(s: &str) -> Result<LatencyHistogram, String> {
    let bytes = B64.decode(s).map_err(|e| format!("histogram not base64: {e}"))?;
    LatencyHistogram::from_bytes(&bytes)
}

impl WireStep {
    /// The wire form of a step's result (its wall-clock times shifted by
    /// `offset_ms`, 0 on the agent: the coordinator corrects them).
    pub fn from_result(r: &StepResult) -> WireStep {
        WireStep {
            concurrency: r.concurrency,
            window_s: r.window_s,
            window_start_unix_ms: r.window_start_unix_ms,
            window_end_unix_ms: r.window_end_unix_ms,
            requests: r.requests,
            queries: r.queries,
            errors: r.errors.clone(),
            latency: enc(&r.latency),
            seconds: r
                .seconds
                .iter()
                .map(|s| WireSecond {
                    second: s.second,
                    requests: s.requests,
                    errors: s.errors,
                    latency: enc(&s.latency),
                    service: (!s.service.is_empty()).then(|| enc(&s.service)),
                })
                .collect(),
            client_cpu_s: r.client_cpu_s,
            client_cores: r.client_cores,
            reconnects: r.reconnects,
            connect_ms: r.connect_ms,
            connect_latency: enc(&r.connect_latency),
            client_lag_ms: r.client_lag_ms,
            client_runq_wait_pct: r.client_runq_wait_pct,
            partial: r.partial,
            statements: r.statements.clone(),
            offered_rate_per_s: r.offered_rate_per_s,
            service: r.service.as_ref().map(enc),
            dropped: r.dropped,
            late_sends: r.late_sends,
            clients: r.clients,
        }
    }

    /// The step's result as the agent measured it; its wall-clock times
    /// moved by `offset_ms` (agent clock minus coordinator clock) onto the
    /// coordinator's clock.
    pub fn into_result(self, offset_ms: i64) -> Result<StepResult, String> {
        let mut seconds = Vec::with_capacity(self.seconds.len());
        for s in self.seconds {
            let mut latency = dec(&s.latency)?;
            latency.pack();
            let mut service = s.service.as_deref().map(dec).transpose()?.unwrap_or_default();
            if !service.is_empty() {
                service.pack();
            }
            seconds.push(SecondResult { second: s.second, requests: s.requests, errors: s.errors, latency, service });
        }
        Ok(StepResult {
            concurrency: self.concurrency,
            window_s: self.window_s,
            window_start_unix_ms: self.window_start_unix_ms - offset_ms,
            window_end_unix_ms: self.window_end_unix_ms - offset_ms,
            requests: self.requests,
            queries: self.queries,
            errors: self.errors,
            latency: dec(&self.latency)?,
            seconds,
            client_cpu_s: self.client_cpu_s,
            client_cores: self.client_cores,
            reconnects: self.reconnects,
            connect_ms: self.connect_ms,
            connect_latency: dec(&self.connect_latency)?,
            client_lag_ms: self.client_lag_ms,
            client_runq_wait_pct: self.client_runq_wait_pct,
            partial: self.partial,
            published_throughput_per_s: None,
            telemetry: None,
            statements: self.statements,
            offered_rate_per_s: self.offered_rate_per_s,
            service: self.service.as_deref().map(dec).transpose()?,
            dropped: self.dropped,
            late_sends: self.late_sends,
            clients: self.clients,
        })
    }
}
