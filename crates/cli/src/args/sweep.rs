//! The options of `scalelab sweep` (shared by `capacity`, which flattens
//! [`SweepArgs`]): the target, the schedule, the load, the probes, the
//! agents, and how often each level is measured ([`RepeatArgs`]).

use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// `scalelab sweep`: the sweep's options, and how often each level is measured.
#[derive(Args, Debug)]
pub struct SweepCmd {
    #[command(flatten)]
    pub sweep: SweepArgs,
    #[command(flatten)]
    pub repeat: RepeatArgs,
}

/// How often each level is measured, and against what (docs/statistics.md).
#[derive(Args, Debug, Clone, Default)]
pub struct RepeatArgs {
    /// Measure every level N times, in rounds, each round in its own shuffled order (from --seed); a level's
    /// figure is then the mean of its windows with a Student-t interval.
    #[arg(long, value_name = "N")]
    pub repeats: Option<u32>,
    /// Repeat each level until its throughput's 95 % interval is within this many % (e.g. 2%), at least 3
    /// windows per level, bounded by --max-repeats and --max-time.
    #[arg(long, value_name = "PCT")]
    pub until_precision: Option<String>,
    /// --until-precision: at most this many windows per level [default: 10].
    #[arg(long, value_name = "N")]
    pub max_repeats: Option<u32>,
    /// --until-precision: start no window that would end after this much time (e.g. 10m).
    #[arg(long, value_name = "DURATION")]
    pub max_time: Option<String>,
    /// Interleave a second target: at each level, windows of this target and the first alternate in ABBA blocks
    /// (at least 2 blocks; with --repeats N, N windows each). A URL as for the first target, or for a second
    /// specimen `specimen:MODE` or `specimen:MODE:WORK_US`. Stored as two linked runs; compared paired.
    #[arg(long, value_name = "TARGET")]
    pub versus: Option<String>,
    /// The label of the --versus target's run [default: its target].
    #[arg(long, value_name = "TEXT", requires = "versus")]
    pub versus_label: Option<String>,
    /// Seed of the shuffled order of levels (recorded with the run) [default: random].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

#[derive(Args, Debug, Clone)]
pub struct SweepArgs {
    /// Target URL: http:// or https://, h2c:// (HTTP/2 without TLS), postgres:// or postgresql://, mysql:// or mariadb://
    /// (docs/workloads.md). Omit to sweep the built-in specimen.
    pub target: Option<String>,
    /// Concurrency levels (virtual clients), in order [default: 1,2,5,10,20,35,50].
    #[arg(long, short = 'c')]
    pub concurrency: Option<String>,
    /// Open loop: offered rates, requests per second, in order, instead of
    /// -c: requests start on schedule whatever the replies, and latency counts
    /// from the intended send (docs/open-loop.md).
    #[arg(long)]
    pub rate: Option<String>,
    /// Open loop: how arrivals are spaced, constant or poisson [default: constant].
    #[arg(long)]
    pub arrival: Option<String>,
    /// Open loop: requests out at once at most (the connections); a request
    /// scheduled when all are out waits for one (--latency-budget)
    /// [default: 20 ms of the rate, 8 to 1000].
    #[arg(long)]
    pub max_in_flight: Option<String>,
    /// Open loop: how long a request due while every connection is busy
    /// waits for one, its wait counted in its latency, before it is dropped
    /// and counted; 0 drops it at once [default: 1s].
    #[arg(long)]
    pub latency_budget: Option<String>,
    /// Warm-up per step (load on, nothing recorded). Default: 5s, or 1s for the specimen.
    #[arg(long)]
    pub warmup: Option<String>,
    /// Measured window per step. Default: 20s, or 2s for the specimen.
    #[arg(long, short = 'd')]
    pub duration: Option<String>,
    /// Pause between steps (no load). Default: 2s, or 1s for the specimen.
    #[arg(long)]
    pub pause: Option<String>,
    /// Time a client waits between a response and its next request.
    #[arg(long, default_value = "0s")]
    pub think_time: String,
    /// Free text to tell this run apart.
    #[arg(long, short = 'l')]
    pub label: Option<String>,
    /// Client worker threads (event loops). Default: one per core. A SQL
    /// client thread that owns one connection (1 client, or as many threads
    /// as clients, like sysbench) waits for each reply in a blocking recv.
    #[arg(long, short = 't')]
    pub threads: Option<u32>,
    /// Leave the client threads to the scheduler. By default, when there are
    /// no more threads than CPUs, each is bound to its own CPU so that the
    /// server threads it wakes settle beside it (README, "--threads").
    #[arg(long)]
    pub no_pin: bool,
    /// Time slice each client thread asks of the scheduler, in µs (100 to
    /// 100000; 0, the default: the kernel's). 100 keeps the server threads a
    /// client wakes beside it and lowers client CPU per query, but adds
    /// context switches (README, "--threads"). Linux 6.12+.
    #[arg(long, default_value_t = 0)]
    pub client_slice_us: u64,
    /// Client threads poll their sockets instead of sleeping while requests
    /// are out: replies are read as they land (no wake-up in the latency,
    /// none for the server to pay). Alone: for the whole window, a full core
    /// per client thread; `--busy-poll=US`: for up to US µs after each
    /// finished call, then asleep until the next. The client's idle polls
    /// are measured apart (README, "--busy-poll"). Not with --agent.
    #[arg(long, value_name = "US", num_args = 0..=1, require_equals = true, default_missing_value = "window")]
    pub busy_poll: Option<String>,
    /// Open a new connection for every request (like ab without -k).
    #[arg(long)]
    pub no_keepalive: bool,
    /// HTTP method [default: GET].
    #[arg(long, short = 'X')]
    pub method: Option<String>,
    /// Extra request header, `Name: value` (repeatable).
    #[arg(long = "header", short = 'H')]
    pub headers: Vec<String>,
    /// Request body.
    #[arg(long)]
    pub body: Option<String>,
    /// Request body read from a file.
    #[arg(long, conflicts_with = "body")]
    pub body_file: Option<PathBuf>,
    /// Several URLs with weights: one `[WEIGHT] [METHOD] URL` per line.
    #[arg(long)]
    pub url_file: Option<PathBuf>,
    /// Statuses that count as success: a code, a class, or a list (200,3xx).
    #[arg(long, default_value = "2xx")]
    pub expect_status: String,
    /// Per-request timeout (write to last byte).
    #[arg(long, default_value = "10s")]
    pub timeout: String,
    /// Accept any TLS certificate (self-signed test servers).
    #[arg(long)]
    pub insecure: bool,
    /// HTTP version: 1.1, 2 (h2c by prior knowledge on http://, h2 by ALPN on https://) or auto (h2 where an
    /// https:// server offers it, HTTP/1.1 otherwise) [default: auto; h2c:// is 2].
    #[arg(long, value_name = "1.1|2|auto")]
    pub http: Option<String>,
    /// HTTP/2: concurrent streams per connection (h2load's -m); -c then counts connections, and a step's
    /// concurrency is connections x streams [default: 1].
    #[arg(long, value_name = "N")]
    pub streams: Option<u32>,
    /// HTTP: make connections from these local addresses in turn (comma list,
    /// e.g. 127.0.0.1,127.0.0.2): one source address has ~28k ports toward
    /// one server address, so more connections need more sources.
    #[arg(long, value_delimiter = ',')]
    pub source_address: Vec<std::net::IpAddr>,
    /// Emulate slow, distant clients: the load clients run in a network
    /// namespace whose link to this machine adds each figure per direction,
    /// e.g. 'delay=40ms jitter=5ms rate=256kbit loss=0.1%' (docs/network.md). Needs root.
    #[arg(long, value_name = "SPEC")]
    pub client_net: Option<String>,
    /// End the run after this many consecutive steps in which nothing succeeded.
    #[arg(long, default_value_t = 2)]
    pub max_failed_steps: u32,
    /// Specimen mode when no target is given [default: scales].
    #[arg(long, value_parser = super::specimen_modes())]
    pub specimen: Option<String>,
    /// Specimen CPU work per request, microseconds [default: 100].
    #[arg(long)]
    pub work_us: Option<u64>,
    /// Specimen pool and herd modes: the serving threads [default: 4].
    #[arg(long)]
    pub workers: Option<usize>,
    /// Specimen herd mode: wake one waiting thread per connection (EPOLLEXCLUSIVE).
    #[arg(long)]
    pub fix: bool,
    /// Print the run as JSON (docs/json.md) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// No progress lines and no live view.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Plain progress lines instead of the full-screen live view on a terminal.
    #[arg(long)]
    pub no_tui: bool,
    #[command(flatten)]
    pub metrics: super::MetricsArgs,
    #[command(flatten)]
    pub triggers: super::TriggerArgs,
    /// The server process to observe (default: the owner of the target's port on loopback, or the specimen).
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// Interval of the system and process samples.
    #[arg(long, default_value = "1s")]
    pub sample_interval: String,
    /// Thread-state samples per second of the server process (0: off).
    #[arg(long, default_value_t = 50.0)]
    pub thread_sample_hz: f64,
    /// Check the result, e.g. 'peak >= 5000', 'p99_ms@50 <= 20', 'no collapse' (docs/assertions.md); a failure exits 1.
    #[arg(long = "assert")]
    pub asserts: Vec<String>,
    /// SQL targets: a built-in workload (docs/workloads.md), e.g. point-select, read-only, pgbench-select;
    /// Redis targets: get, set, mixed, incr, lpush-lpop, hot-key (docs/targets.md).
    #[arg(long, short = 'w')]
    pub workload: Option<String>,
    /// Redis targets: commands sent per round trip (redis-benchmark's -P) [default: 1].
    #[arg(long)]
    pub pipeline: Option<u32>,
    /// Redis targets: the keys the commands spread over (`get` and `mixed` fill them first when missing) [default: 10000].
    #[arg(long)]
    pub keyspace: Option<u64>,
    /// Redis targets: bytes of each value written [default: 32].
    #[arg(long)]
    pub value_size: Option<usize>,
    /// SQL targets: a workload file (TOML, docs/workloads.md).
    #[arg(long, conflicts_with = "workload")]
    pub workload_file: Option<PathBuf>,
    /// SQL targets: send text queries with literal values instead of prepared statements.
    #[arg(long)]
    pub no_prepare: bool,
    /// Probe this database (postgres://… or mysql://…) on a connection of its own: status counters, lock and wait
    /// figures. Default: the target itself when it is a database.
    #[arg(long, value_name = "URL")]
    pub db_probe: Option<String>,
    /// Refuse to start (exit 2, before any load) when a preflight check warns (docs/preflight.md).
    #[arg(long)]
    pub strict: bool,
    /// Profile the server per step with perf: on-CPU stacks (99 Hz) over each window's first 5 s, off-CPU stacks
    /// (futex, I/O, run queue; ~200 switches/s sampled) over its first second; `scalelab profile RUN` reads them
    /// (docs/profiles.md).
    #[arg(long)]
    pub profile: bool,
    /// Profile only these steps, counted from 1 (`5`, `4,6`, `3-5`): the knee, say, without paying for perf on
    /// the others; implies --profile.
    #[arg(long, value_name = "LIST")]
    pub profile_steps: Option<String>,
    /// Send the load from agents on other hosts instead of this one (repeatable; each gets an even share of every
    /// step's clients): `ssh://[user@]host[:port]` runs `scalelab agent --stdio` there through your ssh, `tcp://HOST:PORT`
    /// reaches a `scalelab agent --listen` (TLS and --agent-token-file). docs/agents.md.
    #[arg(long = "agent", value_name = "URL")]
    pub agents: Vec<String>,
    /// An agent on the server's host (`tcp://` or `ssh://`) that runs the probes there (system, the server's
    /// process tree by --server-pid or by the target port's owner, thread states), so the run observes a remote server.
    #[arg(long, value_name = "URL")]
    pub server_agent: Option<String>,
    /// The token of tcp:// agents (the file given to `scalelab agent --token-file`).
    #[arg(long, value_name = "FILE")]
    pub agent_token_file: Option<PathBuf>,
    /// The scalelab binary on ssh:// agent hosts [default: scalelab].
    #[arg(long, value_name = "PATH")]
    pub agent_command: Option<String>,
    /// An option for ssh to reach ssh:// agents, as for `ssh -o` (repeatable; or SCALELAB_SSH_OPTIONS, ';'-separated).
    #[arg(long = "ssh-option", value_name = "OPTION", env = "SCALELAB_SSH_OPTIONS", value_delimiter = ';')]
    pub ssh_options: Vec<String>,
    /// When a load agent is lost mid-run: abort (the step is kept as partial, the run ends incomplete) or
    /// continue (the step is kept as partial, the next steps run on the other agents).
    #[arg(long, value_enum, default_value = "abort")]
    pub agent_loss: AgentLoss,
}

/// `--agent-loss`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentLoss {
    Abort,
    Continue,
}
