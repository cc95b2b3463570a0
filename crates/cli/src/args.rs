//! Command-line arguments (clap derive).

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// scalelab: how far does a server scale here, where does it stop, and why.
#[derive(Parser, Debug)]
#[command(name = "scalelab", version, about, propagate_version = true)]
pub struct Cli {
    /// The run store (SQLite file).
    #[arg(long, global = true, env = "SCALELAB_STORE", default_value = "scalelab.db")]
    pub store: PathBuf,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Sweep a target over concurrency levels (no target: the built-in specimen).
    Sweep(Box<SweepCmd>),
    /// Find the highest offered rate at which every SLO holds (open loop; docs/open-loop.md, "Capacity").
    Capacity(Box<CapacityArgs>),
    /// List stored runs.
    Runs,
    /// Show one run's table again (ID, label, or `last`).
    Show(ShowArgs),
    /// Explain a run: peak, knee, collapse, USL fit, bottleneck verdicts with their evidence.
    Diagnose(ShowArgs),
    /// Export a run as JSON or CSV.
    Export(ExportArgs),
    /// Import published series (CSV: `concurrency,LABEL,...`) as runs.
    Import(ImportArgs),
    /// Compare runs side by side: throughput, scaling, deltas, AVG and MAX rows.
    Compare(CompareArgs),
    /// Write a report of runs: self-contained HTML with charts (default) or Markdown (docs/report.md).
    Report(ReportArgs),
    /// OS micro-benchmarks (lmbench-class): syscalls, fork, signals, context switches, IPC, memory, FPU.
    Micro(MicroArgs),
    /// Show the stacks a `sweep --profile` stored: a step's hottest frames and lock call sites, or what grew between two steps.
    Profile(ProfileArgs),
    /// Watch a server under its own traffic (no load): per-second telemetry, optionally recorded.
    Watch(WatchArgs),
    /// Check what would skew a benchmark here (governor, limits, backlog, ports, IRQs, server and database settings).
    Preflight(PreflightArgs),
    /// Be an agent for a coordinator on another host: load (`sweep --agent`) or probes (`--server-agent`) (docs/agents.md).
    Agent(AgentArgs),
    /// Run the built-in specimen server (scalelab starts it by itself for `sweep`).
    Specimen(SpecimenArgs),
    /// Create and load a dataset (sbtest, pgbench) in a PostgreSQL or MySQL database.
    Prepare(PrepareArgs),
    /// Print shell completions for bash, zsh, fish, elvish or powershell (scripts/install.sh installs them).
    Completions(CompletionsArgs),
    /// Print the man page scalelab(1), or write it and one page per subcommand into a directory.
    Man(ManArgs),
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// Write scalelab.1 and scalelab-SUBCOMMAND.1 into this directory instead of printing scalelab.1.
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

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
    /// Target URL: http:// or https://, postgres:// or postgresql://, mysql:// or mariadb://
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
    /// scheduled when all are out is dropped and counted [default: 20 ms of
    /// the rate, 8 to 1000].
    #[arg(long)]
    pub max_in_flight: Option<String>,
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
    #[arg(long)]
    pub specimen: Option<String>,
    /// Specimen CPU work per request, microseconds [default: 100].
    #[arg(long)]
    pub work_us: Option<u64>,
    /// Print the run as JSON (docs/json.md) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// No progress lines and no live view.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Plain progress lines instead of the full-screen live view on a terminal.
    #[arg(long)]
    pub no_tui: bool,
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
    /// SQL targets: a built-in workload (docs/workloads.md), e.g. point-select, read-only, pgbench-select.
    #[arg(long, short = 'w')]
    pub workload: Option<String>,
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

/// `scalelab agent`: serve a coordinator over ssh's stdio, or listen on TCP.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct AgentArgs {
    #[command(subcommand)]
    pub command: Option<AgentCommand>,
    /// Serve one coordinator over stdin/stdout (what `--agent ssh://HOST` runs).
    #[arg(long, conflicts_with = "listen")]
    pub stdio: bool,
    /// Listen on this address (e.g. 0.0.0.0:7070) with TLS, for coordinators that hold the token.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// The token file (its first line, at least 16 characters; `openssl rand -hex 32`).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// TLS certificate (PEM) instead of the self-signed one made at start.
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// TLS private key (PEM) of --cert.
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// Tests only: speak another protocol number.
    #[arg(long, hide = true)]
    pub protocol_version: Option<u32>,
}

#[derive(Subcommand, Debug)]
pub enum AgentCommand {
    /// Print a deployment of agents for a cluster (docs/agents.md).
    Manifest(ManifestArgs),
}

/// `scalelab agent manifest`.
#[derive(Args, Debug)]
pub struct ManifestArgs {
    /// A Kubernetes Indexed Job and headless Service.
    #[arg(long)]
    pub kubernetes: bool,
    /// How many agents.
    #[arg(long, default_value_t = 2)]
    pub agents: u32,
    /// The container image that holds scalelab.
    #[arg(long)]
    pub image: String,
    /// The port the agents listen on.
    #[arg(long, default_value_t = 7070)]
    pub port: u16,
    /// The Secret that holds the token (key `token`).
    #[arg(long, default_value = "scalelab-agent-token")]
    pub secret: String,
    /// Name of the Job and Service.
    #[arg(long, default_value = "scalelab-agent")]
    pub name: String,
}

#[derive(Args, Debug)]
pub struct CapacityArgs {
    /// An objective every tried rate must hold over its window, e.g.
    /// 'p99<=20ms' (p50, p90, p99, p99.9; latency from the intended send) or
    /// 'errors<=0.1%' (repeatable; at least one).
    #[arg(long = "slo", required = true)]
    pub slos: Vec<String>,
    /// Offer at most this rate (req/s); when it holds, it is the answer [default: 1000000].
    #[arg(long)]
    pub max_rate: Option<String>,
    /// First rate of the ramp (req/s), doubled until an SLO breaks.
    #[arg(long, default_value = "500")]
    pub start_rate: String,
    /// Measured window per tried rate. Default: 10s, or 2s for the specimen.
    #[arg(long)]
    pub step: Option<String>,
    /// The whole search stops by then and reports the bracket it reached.
    #[arg(long, default_value = "5m")]
    pub max_time: String,
    /// Bisection stops when the bracket is this narrow (relative), e.g. 5%.
    #[arg(long, default_value = "5%")]
    pub resolution: String,
    #[command(flatten)]
    pub sweep: SweepArgs,
}

#[derive(Args, Debug)]
pub struct PreflightArgs {
    /// Target URL as for `sweep` (omit: the machine, for the built-in specimen).
    pub target: Option<String>,
    /// Concurrency levels the run would use (the largest is judged).
    #[arg(long, short = 'c', default_value = "1,2,5,10,20,35,50")]
    pub concurrency: String,
    /// Judge a plan without keep-alive (a new connection per request).
    #[arg(long)]
    pub no_keepalive: bool,
    /// Client worker threads the run would use (default: one per core).
    #[arg(long, short = 't')]
    pub threads: Option<u32>,
    /// The run would leave client threads unpinned.
    #[arg(long)]
    pub no_pin: bool,
    /// The server process (default: the owner of the target's port on loopback).
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// Read database settings from this database (default: the target when it is one).
    #[arg(long, value_name = "URL")]
    pub db_probe: Option<String>,
    /// The run would put its clients behind this emulated network (as `sweep --client-net`).
    #[arg(long, value_name = "SPEC")]
    pub client_net: Option<String>,
    /// Print the checks as JSON (stable ids; docs/preflight.md).
    #[arg(long)]
    pub json: bool,
    /// Exit 2 when any check warns.
    #[arg(long)]
    pub strict: bool,
}

#[derive(Args, Debug)]
pub struct PrepareArgs {
    /// Database URL: postgres://user[:pass]@host:port/db or mysql://user[:pass]@host:port/db[?socket=/path].
    pub target: String,
    /// sbtest (sysbench's tables), pgbench (pgbench's tables) or news (a read-mostly web site).
    #[arg(long)]
    pub dataset: String,
    /// sbtest: number of tables; pgbench: scale factor (as `pgbench -i -s N`); news: N x 10000 articles.
    #[arg(long, short = 's', default_value_t = 1)]
    pub scale: u32,
    /// Rows per sbtest table, accounts per pgbench branch (default 100000), or news articles per scale unit (default 10000); smaller for quick tests.
    #[arg(long)]
    pub rows: Option<u64>,
    /// MySQL storage engine: innodb or myisam.
    #[arg(long)]
    pub engine: Option<String>,
    /// Replace the dataset's tables when they exist.
    #[arg(long)]
    pub force: bool,
    /// Drop the dataset's tables and load nothing.
    #[arg(long)]
    pub drop: bool,
    /// No progress line.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct ProfileArgs {
    /// Run id, label, or `last`.
    #[arg(default_value = "last")]
    pub run: String,
    /// The step with this many clients (default: the last profiled step); of a watch, window N (default: the whole watch).
    #[arg(long)]
    pub step: Option<u32>,
    /// Off-CPU: lock call sites and where threads slept, instead of on-CPU.
    #[arg(long)]
    pub off_cpu: bool,
    /// Rows per table.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// What grew from the step with A clients to the step with B clients (of a watch: window A to window B).
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    pub diff: Option<Vec<u32>>,
    /// Print the step's stacks whole, folded (`frame;frame;... value` per line: samples on-CPU, ns off-CPU), for flamegraph.pl, inferno or speedscope.
    #[arg(long, conflicts_with_all = ["diff", "top"])]
    pub folded: bool,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// Run id, label, or `last`.
    #[arg(default_value = "last")]
    pub run: String,
    /// Print the run as JSON.
    #[arg(long)]
    pub json: bool,
    /// Check the run (docs/assertions.md); a failure exits 1.
    #[arg(long = "assert")]
    pub asserts: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// CSV file: `#` comments, header `concurrency,LABEL1,...`, one row per step (at most 10,000 rows and 1,000 series).
    pub file: PathBuf,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq)]
pub enum CompareFormat {
    Table,
    Md,
    Csv,
    Json,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Runs by label, id or `last`.
    #[arg(required = true)]
    pub runs: Vec<String>,
    /// Delta columns of every run against this one (label or id).
    #[arg(long)]
    pub baseline: Option<String>,
    /// A delta column A vs B (repeatable), as 100 x (A/B - 1) %; A and B are
    /// labels or ids. Two runs and no --pair/--baseline: the first vs the second.
    #[arg(long = "pair")]
    pub pairs: Vec<String>,
    /// A check (repeatable, docs/assertions.md): `delta_pct@50 >= -5` on the
    /// first delta column; any other on every compared run. Exit 1 on failure.
    #[arg(long = "assert")]
    pub asserts: Vec<String>,
    /// AVG row over steps with at least this concurrency (default: all).
    #[arg(long)]
    pub avg_from: Option<u32>,
    #[arg(long, value_enum, default_value = "table")]
    pub format: CompareFormat,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq)]
pub enum ReportFormat {
    Html,
    Md,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Runs by id, label or `last` (sweeps, imported series, micro-benchmark runs).
    #[arg(required = true)]
    pub runs: Vec<String>,
    /// Output file (default: report.html, or report.md with --format md); written whole or not at all.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "html")]
    pub format: ReportFormat,
    /// Also write each chart as a standalone SVG file into DIR (the Markdown links to them).
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
    /// Also write each chart as a PNG image into DIR, for slides and issues (the Markdown links to them).
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq)]
pub enum ExportFormat {
    Json,
    Csv,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Run id, label, or `last`.
    #[arg(default_value = "last")]
    pub run: String,
    /// json (default), or csv: one row per step with its telemetry (units in the column names).
    #[arg(long, value_enum)]
    pub format: Option<ExportFormat>,
    /// The per-second series instead of the steps, as CSV (implies --format csv).
    #[arg(long)]
    pub series: bool,
}

#[derive(Args, Debug)]
pub struct SpecimenArgs {
    /// Port to listen on (0: any free port); the bound address is printed.
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: String,
    /// scales, global-lock, single-thread, disk, spin, stall, thread-per-connection.
    #[arg(long, default_value = "scales")]
    pub mode: String,
    /// stall mode: how long the server stops answering each time.
    #[arg(long, default_value = "200ms")]
    pub stall_for: String,
    /// stall mode: how often it stops answering (the period; longer than --stall-for).
    #[arg(long, default_value = "2s")]
    pub stall_every: String,
    /// CPU work per request, microseconds.
    #[arg(long, default_value_t = 100)]
    pub work_us: u64,
    /// Folder for the disk mode's file, made with no name so nothing is left behind (default: a private temp folder).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Exit when the parent process exits (set when scalelab spawns it).
    #[arg(long, hide = true)]
    pub exit_with_parent: bool,
}

#[derive(Args, Debug)]
pub struct MicroArgs {
    /// Fewer repetitions (3 instead of 11): about 10 s.
    #[arg(long)]
    pub quick: bool,
    /// Only these groups: procs, threads, ctx, latency, bandwidth, memory, fpu.
    #[arg(long)]
    pub only: Option<String>,
    /// Repetitions per figure (default 11, or 3 with --quick).
    #[arg(long)]
    pub repeats: Option<u32>,
    /// Label of this run (default: the host name).
    #[arg(long, short = 'l')]
    pub label: Option<String>,
    /// Print the report as JSON (docs/micro.md).
    #[arg(long)]
    pub json: bool,
    /// No per-figure progress lines.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Published lmbench/flops CSV tables to print beside this run (repeatable).
    #[arg(long)]
    pub beside: Vec<PathBuf>,
}

#[derive(Args, Debug)]
pub struct WatchArgs {
    /// A target URL whose listening port on loopback names the server.
    pub target: Option<String>,
    /// The server process id.
    #[arg(long)]
    pub pid: Option<u32>,
    /// The server's listening TCP port on this machine.
    #[arg(long)]
    pub port: Option<u16>,
    /// Stop after this long (default: on Ctrl-C).
    #[arg(long, short = 'd')]
    pub duration: Option<String>,
    /// Sample interval.
    #[arg(long, default_value = "1s")]
    pub interval: String,
    /// Thread-state samples per second (0: off).
    #[arg(long, default_value_t = 50.0)]
    pub thread_sample_hz: f64,
    /// Store the samples as a run (`show` and `export` it later).
    #[arg(long)]
    pub record: bool,
    /// Label of the recorded run.
    #[arg(long, short = 'l')]
    pub label: Option<String>,
    /// Probe this database (postgres://… or mysql://…) too. Default: the target when it is a database URL.
    #[arg(long, value_name = "URL")]
    pub db_probe: Option<String>,
    /// Profile the server with perf in windows of 10 s, each stored as it ends (with --record);
    /// `scalelab profile RUN` shows the whole watch or one window (docs/profiles.md).
    #[arg(long)]
    pub profile: bool,
}
