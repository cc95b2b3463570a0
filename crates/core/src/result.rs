//! What a step produced: completions, errors by class, latency histograms,
//! per-second series and the client's own cost.
//!
//! Engines return these mergeable values (never raw samples), so merging the
//! results of several client threads or machines is adding counters and
//! histograms.

use crate::histogram::LatencyHistogram;
use serde::{Deserialize, Serialize};

pub use crate::spread::ClientSpread;
use std::collections::BTreeMap;

/// Why a request did not complete successfully. Failed requests are data,
/// counted per class; they never stop a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// TCP connect refused (nothing listens, or the backlog is full and the kernel resets).
    ConnectRefused,
    /// TCP connect did not complete within the request timeout.
    ConnectTimeout,
    /// The peer reset or closed the connection mid-request.
    Reset,
    /// HTTP/2: the server reset the request's stream (RST_STREAM; the
    /// message names its error code, e.g. REFUSED_STREAM) while the
    /// connection stayed up.
    StreamReset,
    /// HTTP/2: the server sent GOAWAY and did not process the request
    /// (its stream was above the GOAWAY's last stream id): the connection
    /// was closing (a request limit such as nginx's `keepalive_requests`, a
    /// reload, an error; the message names the code).
    GoAway,
    /// No (complete) response within the request timeout.
    ReadTimeout,
    /// HTTP status 400..=499 (or another status the user did not expect).
    Http4xx,
    /// HTTP status 500..=599.
    Http5xx,
    /// SQL: deadlock detected.
    Deadlock,
    /// SQL: lock wait timeout.
    LockWaitTimeout,
    /// SQL: serialization failure.
    SerializationFailure,
    /// SQL: the server refused the connection for too many clients.
    TooManyConnections,
    /// SQL: any other error reported by the server.
    SqlError,
    /// SQL: the connection was lost mid-query.
    ConnectionLost,
    /// Redis: an error reply (`-ERR`, `-WRONGTYPE`, ...) other than those below.
    ServerError,
    /// Redis: `-OOM`, the server is at its `maxmemory` and refuses writes.
    OutOfMemory,
    /// Redis: `-BUSY` (a script runs) or `-LOADING` (the dataset is loading).
    Busy,
    /// Still waiting for its response at the end of the window, after at
    /// least [`UNFINISHED_AFTER`] (or half the window, if shorter): the
    /// server stopped answering. Without this class a hung server would show
    /// 0 req/s and no error, since a request that never finishes is never
    /// counted by its completion.
    Unfinished,
    /// The client ran out of file descriptors (EMFILE/ENFILE) opening a
    /// connection: a limit of this machine, not the server's doing.
    FdLimit,
    /// Anything else (protocol error, local resource exhaustion, ...).
    Other,
    /// Open loop: scheduled while `max_in_flight` requests were out, so
    /// never sent (the client stays bounded; its lateness still counts in
    /// the step's latency).
    Dropped,
}

impl ErrorClass {
    /// Every class, in display order.
    pub const ALL: [ErrorClass; 21] = [
        ErrorClass::ConnectRefused,
        ErrorClass::ConnectTimeout,
        ErrorClass::Reset,
        ErrorClass::StreamReset,
        ErrorClass::GoAway,
        ErrorClass::ReadTimeout,
        ErrorClass::Http4xx,
        ErrorClass::Http5xx,
        ErrorClass::Deadlock,
        ErrorClass::LockWaitTimeout,
        ErrorClass::SerializationFailure,
        ErrorClass::TooManyConnections,
        ErrorClass::SqlError,
        ErrorClass::ConnectionLost,
        ErrorClass::ServerError,
        ErrorClass::OutOfMemory,
        ErrorClass::Busy,
        ErrorClass::Unfinished,
        ErrorClass::FdLimit,
        ErrorClass::Other,
        ErrorClass::Dropped,
    ];

    /// The snake_case name used in JSON, CSV and the store.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::ConnectRefused => "connect_refused",
            ErrorClass::ConnectTimeout => "connect_timeout",
            ErrorClass::Reset => "reset",
            ErrorClass::StreamReset => "stream_reset",
            ErrorClass::GoAway => "goaway",
            ErrorClass::ReadTimeout => "read_timeout",
            ErrorClass::Http4xx => "http_4xx",
            ErrorClass::Http5xx => "http_5xx",
            ErrorClass::Deadlock => "deadlock",
            ErrorClass::LockWaitTimeout => "lock_wait_timeout",
            ErrorClass::SerializationFailure => "serialization_failure",
            ErrorClass::TooManyConnections => "too_many_connections",
            ErrorClass::SqlError => "sql_error",
            ErrorClass::ConnectionLost => "connection_lost",
            ErrorClass::ServerError => "server_error",
            ErrorClass::OutOfMemory => "out_of_memory",
            ErrorClass::Busy => "busy",
            ErrorClass::Unfinished => "unfinished",
            ErrorClass::FdLimit => "fd_limit",
            ErrorClass::Other => "other",
            ErrorClass::Dropped => "dropped",
        }
    }

    /// Parses a name written by [`ErrorClass::name`].
    pub fn from_name(name: &str) -> Option<ErrorClass> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// How long a request must have been waiting for its response at the end of
/// a window to count as [`ErrorClass::Unfinished`] (half the window when that
/// is shorter). Shorter waits are ordinary requests caught mid-flight by the
/// window's end (not counted, as wrk does).
pub const UNFINISHED_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// A failed request: its class and a message for the first of its kind.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    pub class: ErrorClass,
    pub message: String,
}

impl Failure {
    /// A failure of `class` with a human-readable message.
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        Failure { class, message: message.into() }
    }
}

/// Failed requests by class, with the first message seen for each class.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorCounts {
    /// Count per class; classes that never occurred are absent.
    pub counts: BTreeMap<ErrorClass, u64>,
    /// The first message seen per class, so a reader knows what "other" was.
    pub first_message: BTreeMap<ErrorClass, String>,
}

impl ErrorCounts {
    /// Counts one failure; keeps its message if it is the first of its class.
    pub fn add(&mut self, failure: &Failure) {
        *self.counts.entry(failure.class).or_insert(0) += 1;
        self.first_message.entry(failure.class).or_insert_with(|| failure.message.clone());
    }

    /// Counts `n` failures alike.
    pub fn add_n(&mut self, failure: &Failure, n: u64) {
        if n > 0 {
            *self.counts.entry(failure.class).or_insert(0) += n;
            self.first_message.entry(failure.class).or_insert_with(|| failure.message.clone());
        }
    }

    /// Adds every count of `other`.
    pub fn merge(&mut self, other: &ErrorCounts) {
        for (class, n) in &other.counts {
            *self.counts.entry(*class).or_insert(0) += n;
        }
        for (class, m) in &other.first_message {
            self.first_message.entry(*class).or_insert_with(|| m.clone());
        }
    }

    /// All failures, whatever their class.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// The count of one class (0 when it never occurred: errors are counted, not sampled).
    pub fn get(&self, class: ErrorClass) -> u64 {
        self.counts.get(&class).copied().unwrap_or(0)
    }
}

/// One second of a step's window.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SecondResult {
    /// Seconds since the window started (0-based).
    pub second: u32,
    /// Successful completions in this second.
    pub requests: u64,
    /// Failed requests in this second.
    pub errors: u64,
    /// Latencies of this second's successful completions.
    pub latency: LatencyHistogram,
    /// Open loop: service times (from the actual send) of this second's
    /// successful completions; empty for a closed loop, where they equal
    /// `latency`.
    pub service: LatencyHistogram,
}

/// Latency of one statement inside transaction units over a step's window
/// (SQL workloads whose units are BEGIN ... COMMIT): the unit's latency says
/// how long a transaction took, this says which of its statements took it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatementLatency {
    /// Unit name, statement number and text, e.g. `pgbench-tpcb #2: SELECT abalance FROM ...`.
    pub name: String,
    /// Executions recorded (statements of units that completed in the window).
    pub count: u64,
    /// Mean latency, ms.
    pub mean_ms: f64,
    /// Median latency, ms.
    pub p50_ms: f64,
    /// 99th percentile latency, ms.
    pub p99_ms: f64,
}

/// Everything one step produced, mergeable across client threads and
/// machines ([`StepResult::merge`]). Its serde form (histograms as their
/// store encoding) is what an agent sends: there is no second copy of it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StepResult {
    /// Virtual clients of this step.
    pub concurrency: u32,
    /// Length of the recorded window actually measured, in seconds.
    pub window_s: f64,
    /// Wall-clock start of the window, Unix milliseconds (to align with server logs and probes).
    pub window_start_unix_ms: i64,
    /// Wall-clock end of the window, Unix milliseconds.
    pub window_end_unix_ms: i64,
    /// Successful completions inside the window (units of work: requests or transactions).
    pub requests: u64,
    /// Statements (queries) inside the window; equals `requests` for HTTP.
    pub queries: u64,
    /// Failed requests inside the window, by class.
    pub errors: ErrorCounts,
    /// Latencies of every successful completion in the window.
    pub latency: LatencyHistogram,
    /// The window, second by second.
    pub seconds: Vec<SecondResult>,
    /// Client CPU time (user + system) spent during the window, seconds.
    pub client_cpu_s: f64,
    /// CPUs the client could run on (its affinity, capped by its threads).
    pub client_cores: u32,
    /// Connections re-opened during the window (server closed a keep-alive, lost SQL connection).
    pub reconnects: u64,
    /// Mean time to open one connection before the window, milliseconds (`None` if none opened).
    pub connect_ms: Option<f64>,
    /// Connect time of each connection opened inside the window (every
    /// request without keep-alive, or a reconnect): the set-up share of the
    /// request latency (which counts from the request's start, connect
    /// included, as ab does), shown on its own. Empty: none opened.
    pub connect_latency: LatencyHistogram,
    /// Worst lateness of the client's event loops in the window, ms: a timer
    /// due every 50 ms fired this late. Tens of ms mean the client could not
    /// keep up and latencies include its own queueing.
    pub client_lag_ms: Option<f64>,
    /// Share of the window the client's threads spent runnable but waiting
    /// for a CPU (their schedstat run delay), in %: a client starved by a
    /// neighbour stays under 90 % CPU yet cannot send faster.
    pub client_runq_wait_pct: Option<f64>,
    /// True when the window was cut short (SIGINT); the figures cover `window_s` only.
    pub partial: bool,
    /// Throughput as published, for imported series that have no window or
    /// histogram of their own.
    pub published_throughput_per_s: Option<f64>,
    /// Telemetry of the window, derived from the run's samples when the run
    /// is loaded (not produced by the engine).
    pub telemetry: Option<crate::telemetry::StepTelemetry>,
    /// Per-statement latency inside transaction units (SQL); empty otherwise.
    pub statements: Vec<StatementLatency>,
    /// Open loop: what the step offered, requests per second (None: a closed loop).
    pub offered_rate_per_s: Option<f64>,
    /// Open loop: service time of each completion, from its actual send
    /// (`latency` counts from the intended send). None: a closed loop, where
    /// the two are the same.
    pub service: Option<LatencyHistogram>,
    /// Open loop: requests scheduled in the window but never sent because
    /// `max_in_flight` were out (also counted as the `dropped` error class).
    pub dropped: Option<u64>,
    /// Open loop: requests sent more than [`LATE_SEND_AFTER`] after their
    /// intended time although a connection was free: the client fell behind
    /// its own schedule.
    pub late_sends: Option<u64>,
    /// How the window's completions spread over the clients (closed loop;
    /// an open loop's over its connections), and what was still out at
    /// its end. None: not recorded (imported series, runs stored before).
    pub clients: Option<ClientSpread>,
    /// HTTP/2: requests of the window that waited on flow control before
    /// they were all sent (the server's send window for their body). None:
    /// a protocol without flow control of its own, nothing measured.
    pub flow_stalls: Option<u64>,
    /// HTTP/2: the time those requests waited, in all, ms (None as `flow_stalls`).
    pub flow_stall_ms: Option<f64>,
    /// `--busy-poll`: the part of `client_cpu_s` spent in polls that found
    /// nothing to do, seconds. The client's threads never sleep then, so
    /// its CPU alone no longer says whether it kept up: the work is
    /// `client_cpu_s` minus this. None: the client slept while it waited.
    #[serde(default)]
    pub client_poll_idle_s: Option<f64>,
}

/// Open loop: the share of requests sent late (in %) from which the
/// client, not the server, set the pace.
pub const CLIENT_LATE_SENDS_PCT: f64 = 5.0;

/// How late after its intended time an open-loop request may be sent and
/// still count as on schedule (the event loop's timers have 1 ms ticks).
pub const LATE_SEND_AFTER: std::time::Duration = std::time::Duration::from_millis(2);

impl StepResult {
    /// Several parts of one step as one: the client threads of one process,
    /// or the agents of several machines. Counters and histograms add
    /// (percentiles are never averaged), second by second; the window spans
    /// the parts'; the client's CPU figures are those of the busiest part
    /// (client-bound is judged per machine: one saturated agent makes the
    /// step client-bound, whatever the others did); per-statement summaries
    /// survive only from a single part, since percentiles cannot be merged
    /// from summaries. `concurrency` is the step's (a lost part's clients
    /// included), and `lost` (a part missing) marks it partial.
    ///
    /// Every field of every part is named below: a field added to
    /// `StepResult` does not compile here until its merge is decided.
    pub fn merge(concurrency: u32, parts: &[StepResult], lost: bool) -> StepResult {
        let n_seconds = parts.iter().map(|p| p.seconds.len()).max().unwrap_or(0);
        let mut seconds: Vec<SecondResult> = (0..n_seconds as u32).map(|second| SecondResult { second, ..Default::default() }).collect();
        let mut m = StepResult { concurrency, partial: lost, ..Default::default() };
        let (mut start, mut connect, mut busiest) = (None::<i64>, (0.0, 0u32), None::<&StepResult>);
        for p in parts {
            let StepResult {
                concurrency: part_concurrency,
                window_s,
                window_start_unix_ms,
                window_end_unix_ms,
                requests,
                queries,
                errors,
                latency,
                seconds: part_seconds,
                client_cpu_s: _,
                client_cores: _,
                reconnects,
                connect_ms,
                connect_latency,
                client_lag_ms,
                client_runq_wait_pct,
                partial,
                published_throughput_per_s,
                // Derived from the run's samples when it is loaded: a merged
                // step gets its own then.
                telemetry: _,
                statements,
                offered_rate_per_s,
                service,
                dropped,
                late_sends,
                clients,
                flow_stalls,
                flow_stall_ms,
                // The busiest part's, as its CPU below.
                client_poll_idle_s: _,
            } = p;
            m.window_s = m.window_s.max(*window_s);
            start = Some(start.map_or(*window_start_unix_ms, |s| s.min(*window_start_unix_ms)));
            m.window_end_unix_ms = m.window_end_unix_ms.max(*window_end_unix_ms);
            m.requests += requests;
            m.queries += queries;
            m.errors.merge(errors);
            m.latency.merge(latency);
            for (ms, s) in seconds.iter_mut().zip(part_seconds) {
                let SecondResult { second: _, requests, errors, latency, service } = s;
                ms.requests += requests;
                ms.errors += errors;
                ms.latency.merge(latency);
                ms.service.merge(service);
            }
            m.reconnects += reconnects;
            if let Some(c) = connect_ms {
                connect = (connect.0 + c * f64::from(*part_concurrency), connect.1 + part_concurrency);
            }
            m.connect_latency.merge(connect_latency);
            m.client_lag_ms = max_opt(m.client_lag_ms, *client_lag_ms);
            m.client_runq_wait_pct = max_opt(m.client_runq_wait_pct, *client_runq_wait_pct);
            m.partial |= partial;
            m.published_throughput_per_s = add_opt(m.published_throughput_per_s, *published_throughput_per_s);
            if m.statements.is_empty() {
                m.statements.clone_from(statements);
            }
            m.offered_rate_per_s = add_opt(m.offered_rate_per_s, *offered_rate_per_s);
            if let Some(h) = service {
                m.service.get_or_insert_with(LatencyHistogram::new).merge(h);
            }
            m.dropped = add_opt(m.dropped, *dropped);
            m.late_sends = add_opt(m.late_sends, *late_sends);
            if let Some(c) = clients {
                m.clients.get_or_insert_with(Default::default).merge(c);
            }
            m.flow_stalls = add_opt(m.flow_stalls, *flow_stalls);
            m.flow_stall_ms = add_opt(m.flow_stall_ms, *flow_stall_ms);
            if busiest.is_none_or(|b| p.client_work_cpu_pct().unwrap_or(0.0) > b.client_work_cpu_pct().unwrap_or(0.0)) {
                busiest = Some(p);
            }
        }
        m.window_start_unix_ms = start.unwrap_or(0);
        if let Some(b) = busiest {
            // The busiest part's CPU over its own window, in the merged window's terms.
            m.client_cores = b.client_cores;
            let scale = if b.window_s > 0.0 { m.window_s / b.window_s } else { 0.0 };
            m.client_cpu_s = b.client_cpu_s * scale;
            m.client_poll_idle_s = b.client_poll_idle_s.map(|s| s * scale);
        }
        for s in &mut seconds {
            s.latency.pack();
            if !s.service.is_empty() {
                s.service.pack();
            }
        }
        m.seconds = seconds;
        m.connect_ms = (connect.1 > 0).then(|| connect.0 / f64::from(connect.1));
        if parts.len() > 1 {
            m.statements.clear();
        }
        m
    }

    /// Moves the window's wall-clock times back by `offset_ms` (a remote
    /// client's clock minus this one's), onto this machine's clock, as
    /// [`Sample::shift_clock`](crate::Sample::shift_clock) does for readings.
    pub fn shift_clock(&mut self, offset_ms: i64) {
        self.window_start_unix_ms = self.window_start_unix_ms.saturating_sub(offset_ms);
        self.window_end_unix_ms = self.window_end_unix_ms.saturating_sub(offset_ms);
    }

    /// A closed-loop step's client spread when some of its clients (not
    /// all) completed nothing in the window: the server served the others.
    /// None for an open loop, whose idle connections had nothing to send.
    pub fn starved_clients(&self) -> Option<ClientSpread> {
        self.clients.filter(|c| self.offered_rate_per_s.is_none() && c.served_nothing > 0 && c.served_nothing < c.clients)
    }

    /// Completions per second of window.
    pub fn throughput_per_s(&self) -> f64 {
        if let Some(x) = self.published_throughput_per_s {
            return x;
        }
        if self.window_s > 0.0 {
            self.requests as f64 / self.window_s
        } else {
            0.0
        }
    }

    /// Statements per second of window.
    pub fn queries_per_s(&self) -> f64 {
        if self.window_s > 0.0 {
            self.queries as f64 / self.window_s
        } else {
            0.0
        }
    }

    /// Share of its available cores the client used during the window, in %.
    pub fn client_cpu_pct(&self) -> Option<f64> {
        if self.window_s > 0.0 && self.client_cores > 0 {
            Some(100.0 * self.client_cpu_s / (self.window_s * self.client_cores as f64))
        } else {
            None
        }
    }

    /// The client's CPU that did work, in % of its cores: all of it, but
    /// with `--busy-poll` less the polls that found nothing
    /// ([`StepResult::client_poll_idle_s`]), which a client that slept
    /// would have spent asleep.
    pub fn client_work_cpu_pct(&self) -> Option<f64> {
        let idle = self.client_poll_idle_s.unwrap_or(0.0);
        self.client_cpu_pct().map(|p| (p - 100.0 * idle / (self.window_s * self.client_cores as f64)).max(0.0))
    }

    /// True when the client's work used more than 90 % of its cores, or
    /// (open loop) it sent at least [`CLIENT_LATE_SENDS_PCT`] of its
    /// requests late with connections free: the result may be the
    /// client's. The verdict's client-bound rule judges by the same
    /// figures, so the flag and the verdict agree.
    pub fn client_saturated(&self) -> bool {
        self.client_work_cpu_pct().is_some_and(|p| p > 90.0) || self.late_sends_pct().is_some_and(|p| p >= CLIENT_LATE_SENDS_PCT)
    }

    /// Open loop: completions per second as a share of the offered rate, in %.
    pub fn achieved_pct(&self) -> Option<f64> {
        self.offered_rate_per_s.filter(|r| *r > 0.0).map(|r| 100.0 * self.throughput_per_s() / r)
    }

    /// Open loop: late sends as a share of the requests sent in the window, in %.
    pub fn late_sends_pct(&self) -> Option<f64> {
        let late = self.late_sends?;
        let sent = self.requests + self.errors.total() - self.dropped.unwrap_or(0);
        Some(if sent > 0 { 100.0 * late as f64 / sent as f64 } else { 0.0 })
    }

    /// True when nothing succeeded in the window: every request failed or
    /// hung (the target stopped answering).
    pub fn failed(&self) -> bool {
        self.requests == 0
    }

    /// Why this step's figures are not a measurement of a working server:
    /// nothing succeeded, or failed requests are at least
    /// [`ERRORS_DOMINATE_SHARE`] of all (one line, naming the most common
    /// class). `None` for a step that mostly worked, and for a partial step
    /// (cut short by a signal: the interruption is the news).
    pub fn failure(&self) -> Option<String> {
        if self.partial || self.published_throughput_per_s.is_some() {
            return None;
        }
        let errors = self.errors.total();
        let mostly = || {
            self.errors
                .counts
                .iter()
                .max_by_key(|(c, n)| (**n, std::cmp::Reverse(**c)))
                .map(|(c, n)| format!(", mostly {} ({n})", c.name()))
                .unwrap_or_default()
        };
        if self.requests == 0 {
            return Some(if errors == 0 {
                "nothing succeeded and nothing failed in the window (no request finished)".to_string()
            } else {
                format!("nothing succeeded: all {errors} requests failed{}", mostly())
            });
        }
        // Requests an open loop dropped at max_in_flight were never sent:
        // the measure of an overload, not a server failing requests.
        let failed = errors - self.errors.get(ErrorClass::Dropped);
        let share = failed as f64 / (failed + self.requests) as f64;
        (share >= ERRORS_DOMINATE_SHARE)
            .then(|| format!("errors dominate: {:.0}% of {} requests failed{}", 100.0 * share, failed + self.requests, mostly()))
    }
}

/// The larger of two optional figures (either alone when the other is missing).
fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

/// The sum of two optional counts (either alone when the other is missing).
fn add_opt<T: std::ops::Add<Output = T>>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x + y),
        (x, y) => x.or(y),
    }
}

/// Share of failed requests from which errors dominate a step: its
/// throughput then says little about the server, and the run fails (exit 1).
pub const ERRORS_DOMINATE_SHARE: f64 = 0.5;

/// A progress report sent about every 250 ms while a step runs (an
/// agent sends it as it is).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LiveTick {
    /// Seconds since the warm-up began.
    pub elapsed_s: f64,
    /// True while warming up (nothing recorded yet).
    pub warming_up: bool,
    /// Completions per second over the last tick (warm-up included).
    pub throughput_per_s: f64,
    /// Failed requests so far in this step.
    pub errors: u64,
    /// p50 latency of the last completed window second, ms.
    pub p50_ms: Option<f64>,
    /// p99 latency of the last completed window second, ms.
    pub p99_ms: Option<f64>,
    /// Completions so far in this step, warm-up included (agents before
    /// protocol 4 do not send it: 0).
    #[serde(default)]
    pub completed: u64,
    /// Completions so far inside the window (0 while warming up).
    #[serde(default)]
    pub window_completed: u64,
}
