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
    /// An open-loop step (an offered rate); None: the closed loop of
    /// `concurrency` clients. Absent from closed-loop plans' JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<OpenLoopPlan>,
}

/// How the arrivals of an open-loop step are spaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Evenly: one request every 1/rate seconds.
    Constant,
    /// Exponential gaps of mean 1/rate (independent users).
    Poisson,
}

impl Arrival {
    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Arrival::Constant => "constant",
            Arrival::Poisson => "poisson",
        }
    }
}

/// An open-loop step: requests started at `rate_per_s` whatever the replies,
/// over a pool of `max_in_flight` connections (docs/open-loop.md).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenLoopPlan {
    /// Offered rate, requests per second.
    pub rate_per_s: f64,
    pub arrival: Arrival,
    /// Requests sent and not answered at most (the connections); a request
    /// scheduled when this many are out waits for one (see `latency_budget_s`).
    pub max_in_flight: u32,
    /// How long a request due while every connection is busy waits for one,
    /// its wait counted in its latency, before it is dropped (counted, never
    /// sent). A short stall of the server then shows as latency, not as
    /// errors; an overload still ends in drops, with the client's memory
    /// bounded by rate x budget. 0: dropped at once (runs stored before the
    /// budget existed were measured so, and read back so).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub latency_budget_s: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl OpenLoopPlan {
    /// The default `latency_budget_s`: a second, five times a 200 ms stall
    /// (a GC pause, a checkpoint), so such a stall is seen whole as latency.
    pub const DEFAULT_LATENCY_BUDGET_S: f64 = 1.0;

    /// The latency budget as a [`Duration`].
    pub fn latency_budget(&self) -> Duration {
        Duration::from_secs_f64(self.latency_budget_s.max(0.0))
    }

    /// The default bound on requests in flight at `rate_per_s`: 20 ms of
    /// arrivals (Little: a server answering within 20 ms never reaches it),
    /// at least 8 and at most 1,000 connections.
    pub fn default_max_in_flight(rate_per_s: f64) -> u32 {
        (rate_per_s * 0.020).ceil().clamp(8.0, 1000.0) as u32
    }
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

    /// The HTTP version the load spoke, as ALPN names it: `http/1.1`, `h2`
    /// (over TLS) or `h2c` (cleartext) (options `http_protocol`); None for
    /// the specimen, other kinds and runs stored before it was recorded.
    pub fn http_protocol(&self) -> Option<&str> {
        self.options.get("http_protocol").and_then(|v| v.as_str())
    }

    /// HTTP/2: the streams (clients) per connection (options `streams`);
    /// a step's concurrency is its connections x this. None: one client
    /// per connection (HTTP/1.1, SQL, Redis).
    pub fn streams(&self) -> Option<u32> {
        self.options.get("streams").and_then(|v| v.as_u64()).and_then(|n| u32::try_from(n).ok()).filter(|n| *n > 0)
    }

    /// The connections a step of `concurrency` clients opened: one per
    /// client, or one per [`RunPlan::streams`] clients (the last perhaps
    /// carrying fewer).
    pub fn connections(&self, concurrency: u32) -> u32 {
        concurrency.div_ceil(self.streams().unwrap_or(1))
    }

    /// The client threads in words: "2", "2 bound to CPUs 0,1" when the
    /// run bound each event loop to a CPU (options `client_cpus`), and
    /// ", 100 µs slice" when they ran with a slice of their own (options
    /// `client_slice_us`), and ", busy-polling" with `--busy-poll`
    /// (options `client_busy_poll`), ", busy-polling 50 µs after each
    /// reply" with `--busy-poll=50` (and `client_busy_poll_us`).
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
        if self.options.get("client_busy_poll").and_then(|v| v.as_bool()) == Some(true) {
            text.push_str(", busy-polling");
            if let Some(us) = self.options.get("client_busy_poll_us").and_then(|v| v.as_u64()) {
                text.push_str(&format!(" {us} µs after each reply"));
            }
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
    #[error("invalid rate list '{0}': use rates per second from 1 to 10000000 separated by commas, e.g. 1000,5000,10000")]
    Rate(String),
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

/// The most clients a step may have: a sweep's `-c` and an imported
/// series' concurrency column accept 1 to this.
pub const MAX_CONCURRENCY: u32 = 100_000;

/// Parses `1,2,5,10` into concurrencies; each must be 1..=[`MAX_CONCURRENCY`].
pub fn parse_concurrency_list(text: &str) -> Result<Vec<u32>, PlanError> {
    let err = || PlanError::Concurrency(text.to_string());
    let list: Vec<u32> = text.split(',').map(|p| p.trim().parse::<u32>().map_err(|_| err())).collect::<Result<_, _>>()?;
    if list.is_empty() || list.iter().any(|&c| c == 0 || c > MAX_CONCURRENCY) {
        return Err(err());
    }
    Ok(list)
}

/// Parses `1000,5000,2.5e4` into offered rates per second; each must be 1..=10,000,000.
pub fn parse_rate_list(text: &str) -> Result<Vec<f64>, PlanError> {
    let err = || PlanError::Rate(text.to_string());
    let list: Vec<f64> = text.split(',').map(|p| p.trim().parse::<f64>().map_err(|_| err())).collect::<Result<_, _>>()?;
    if list.is_empty() || list.iter().any(|r| !r.is_finite() || !(1.0..=1e7).contains(r)) {
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
        assert_eq!((plan.http_protocol(), plan.streams(), plan.connections(16)), (None, None, 16));
        plan.options.insert("http_protocol".into(), "h2c".into());
        plan.options.insert("streams".into(), 4.into());
        assert_eq!((plan.http_protocol(), plan.streams(), plan.connections(16), plan.connections(6)), (Some("h2c"), Some(4), 4, 2));
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

    #[test]
    fn rate_lists() {
        assert_eq!(parse_rate_list("1000, 5000,2.5e4").unwrap(), vec![1000.0, 5000.0, 25000.0]);
        for bad in ["0", "1000,", "-5", "fast", "1e9", "NaN", "inf"] {
            assert!(parse_rate_list(bad).is_err(), "{bad}");
        }
        assert_eq!(OpenLoopPlan::default_max_in_flight(2000.0), 40);
        assert_eq!(OpenLoopPlan::default_max_in_flight(10.0), 8);
        assert_eq!(OpenLoopPlan::default_max_in_flight(1e7), 1000);
    }

    #[test]
    fn a_closed_loop_plan_serializes_as_before_and_an_open_one_records_its_schedule() {
        let closed = StepPlan { concurrency: 2, warmup_s: 1.0, window_s: 2.0, pause_s: 0.0, think_time_s: 0.0, open_loop: None };
        let json = serde_json::to_string(&closed).unwrap();
        assert_eq!(json, r#"{"concurrency":2,"warmup_s":1.0,"window_s":2.0,"pause_s":0.0,"think_time_s":0.0}"#);
        assert_eq!(serde_json::from_str::<StepPlan>(&json).unwrap(), closed);
        let plan = OpenLoopPlan { rate_per_s: 500.0, arrival: Arrival::Poisson, max_in_flight: 10, latency_budget_s: 0.0 };
        let open = StepPlan { open_loop: Some(plan), ..closed.clone() };
        let json = serde_json::to_string(&open).unwrap();
        // Without a budget (as every run stored before it), as before.
        assert!(json.ends_with(r#""open_loop":{"rate_per_s":500.0,"arrival":"poisson","max_in_flight":10}}"#), "{json}");
        assert_eq!(serde_json::from_str::<StepPlan>(&json).unwrap(), open);
        let budget = StepPlan { open_loop: Some(OpenLoopPlan { latency_budget_s: 1.0, ..plan }), ..closed };
        let json = serde_json::to_string(&budget).unwrap();
        assert!(json.ends_with(r#""max_in_flight":10,"latency_budget_s":1.0}}"#), "{json}");
        assert_eq!(serde_json::from_str::<StepPlan>(&json).unwrap(), budget);
    }
}
