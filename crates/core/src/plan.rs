//! What a run will do: its steps (load levels) and their schedule.
//!
//! A step is a plan handed to an engine (concurrency, warm-up, window, pause),
//! so that a remote engine or an open-loop engine can take the same value.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One load level of a run: N closed-loop clients for warm-up + window, then a pause.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepPlan {
    /// Number of virtual clients, each with one request in flight.
    pub concurrency: u32,
    /// Load on, nothing recorded: lets caches, pools and TCP windows settle.
    pub warmup_s: f64,
    /// The recorded window; throughput = completions inside it / its length.
    pub window_s: f64,
    /// No load after the window, so idle telemetry shows between steps.
    pub pause_s: f64,
    /// Time a client waits between a response and its next request.
    pub think_time_s: f64,
}

impl StepPlan {
    /// Warm-up as a [`Duration`].
    pub fn warmup(&self) -> Duration {
        Duration::from_secs_f64(self.warmup_s)
    }
    /// Window as a [`Duration`].
    pub fn window(&self) -> Duration {
        Duration::from_secs_f64(self.window_s)
    }
    /// Pause as a [`Duration`].
    pub fn pause(&self) -> Duration {
        Duration::from_secs_f64(self.pause_s)
    }
}

/// A whole experiment as planned: what is measured, with what, on which schedule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunPlan {
    /// Free text the user gave to tell this run apart ("nginx 1.22, 2 workers").
    pub label: String,
    /// The target as the user wrote it (URL, or `specimen:MODE`).
    pub target: String,
    /// What a virtual client sends, in words ("GET /index.html", "point-select").
    pub workload: String,
    /// The load levels, in order.
    pub steps: Vec<StepPlan>,
    /// Client worker threads (event loops).
    pub client_threads: u32,
    /// Other settings worth keeping with the result (keep-alive, timeouts, ...).
    #[serde(default)]
    pub options: serde_json::Map<String, serde_json::Value>,
}

impl RunPlan {
    /// What one unit of throughput counts: `req/s` (HTTP, the specimen),
    /// `tx/s` or `q/s` (SQL workloads of transactions or single statements),
    /// or what an imported table says (`/s` when it says nothing). Stored
    /// in the options as `throughput_unit`; runs from before it read `req/s`.
    pub fn throughput_unit(&self) -> &str {
        self.options.get("throughput_unit").and_then(|v| v.as_str()).unwrap_or("req/s")
    }

    /// The clients' network spec when they ran behind one (`--client-net`,
    /// options `client_net`, canonical text such as `delay=40ms rate=256kbit`).
    pub fn client_net(&self) -> Option<&str> {
        self.options.get("client_net").and_then(|v| v.as_str())
    }

    /// The client threads in words: "2", "2 bound to CPUs 0,1" when the
    /// run bound each event loop to a CPU (options `client_cpus`), and
    /// ", 100 µs slice" when they ran with a slice of their own (options
    /// `client_slice_us`).
    pub fn client_threads_text(&self) -> String {
        let mut text = match self.options.get("client_cpus").and_then(|v| v.as_array()) {
            Some(cpus) if !cpus.is_empty() => {
                let list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
                format!("{} bound to CPUs {}", self.client_threads, list.join(","))
            }
            _ => self.client_threads.to_string(),
        };
        if let Some(us) = self.options.get("client_slice_us").and_then(|v| v.as_u64()) {
            text.push_str(&format!(", {us} µs slice"));
        }
        text
    }
}

/// Why a duration or a list could not be parsed; the message names the input.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PlanError {
    #[error("invalid duration '{0}': use a number with a unit, e.g. 500ms, 5s, 2m")]
    Duration(String),
    #[error("invalid concurrency list '{0}': use positive integers separated by commas, e.g. 1,2,5,10")]
    Concurrency(String),
}

/// Parses `500ms`, `5s`, `1.5s`, `2m`, `250us` or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, PlanError> {
    let t = text.trim();
    let err = || PlanError::Duration(text.to_string());
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| err())?;
    let scale = match unit.trim() {
        "" | "s" | "sec" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(err()),
    };
    let secs = value * scale;
    if !secs.is_finite() || !(0.0..=86_400.0 * 7.0).contains(&secs) {
        return Err(err());
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses `1,2,5,10` into concurrencies; each must be 1..=100000.
pub fn parse_concurrency_list(text: &str) -> Result<Vec<u32>, PlanError> {
    let err = || PlanError::Concurrency(text.to_string());
    let list: Vec<u32> = text.split(',').map(|p| p.trim().parse::<u32>().map_err(|_| err())).collect::<Result<_, _>>()?;
    if list.is_empty() || list.iter().any(|&c| c == 0 || c > 100_000) {
        return Err(err());
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_threads_say_where_they_were_bound() {
        let mut plan = RunPlan {
            label: "l".into(),
            target: "t".into(),
            workload: "w".into(),
            steps: Vec::new(),
            client_threads: 2,
            options: Default::default(),
        };
        assert_eq!(plan.client_threads_text(), "2", "runs from before binding, and --no-pin");
        plan.options.insert("client_threads_bound".into(), true.into());
        plan.options.insert("client_cpus".into(), vec![0, 3].into());
        assert_eq!(plan.client_threads_text(), "2 bound to CPUs 0,3");
        plan.options.insert("client_slice_us".into(), 100.into());
        assert_eq!(plan.client_threads_text(), "2 bound to CPUs 0,3, 100 µs slice");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("0.25").unwrap(), Duration::from_millis(250));
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn concurrency_lists() {
        assert_eq!(parse_concurrency_list("1,2, 5").unwrap(), vec![1, 2, 5]);
        assert!(parse_concurrency_list("1,0").is_err());
        assert!(parse_concurrency_list("1,,2").is_err());
        assert!(parse_concurrency_list("x").is_err());
    }
}
