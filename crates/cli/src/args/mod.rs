//! Command-line arguments (clap derive).

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

mod sweep;
pub use sweep::{AgentLoss, RepeatArgs, SweepArgs, SweepCmd};

/// scalelab: how far does a server scale here, where does it stop, and why.
#[derive(Parser, Debug)]
#[command(name = "scalelab", version, about, propagate_version = true)]
pub struct Cli {
    /// The run store (SQLite file).
    #[arg(long, global = true, env = "SCALELAB_STORE", default_value = "scalelab.db")]
    pub store: PathBuf,
    /// The SQL password, read from this file (a regular file, not readable
    /// by group or others, one line) when the URL holds none: not on the
    /// command line, where `ps` shows it. Without it: PGPASSWORD / ~/.pgpass,
    /// MYSQL_PWD / ~/.my.cnf, as the engines' clients read them.
    #[arg(long, global = true, value_name = "PATH")]
    pub password_file: Option<PathBuf>,
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
    /// A delta column A vs B (repeatable), as 100 x (A/B - 1) %: B is the
    /// baseline; A and B are labels or ids. Two runs and no --pair/--baseline:
    /// the second vs the first (the first named is the baseline, as in `report`).
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
    /// The mode: the cause of poor scaling it shows (README, Specimen modes).
    #[arg(long, default_value = "scales", value_parser = specimen_modes())]
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
    /// pool and herd modes: the serving threads.
    #[arg(long, default_value_t = scalelab_specimen::DEFAULT_WORKERS)]
    pub workers: usize,
    /// herd mode: wake one waiting thread per connection (EPOLLEXCLUSIVE) instead of all.
    #[arg(long)]
    pub fix: bool,
    /// Folder for the disk mode's file, made with no name so nothing is left behind (default: a private temp folder).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Exit when the parent process exits (set when scalelab spawns it).
    #[arg(long, hide = true)]
    pub exit_with_parent: bool,
    /// Work rounds per microsecond measured by the parent, so every specimen
    /// of a run does the same work per request (set when scalelab spawns it).
    #[arg(long, hide = true)]
    pub rounds_per_us: Option<f64>,
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
    #[command(flatten)]
    pub metrics: MetricsArgs,
    #[command(flatten)]
    pub triggers: TriggerArgs,
}

/// Captures when a condition holds (docs/metrics.md, "Triggers").
#[derive(Args, Debug, Clone, Default)]
pub struct TriggerArgs {
    /// Capture when a per-second figure holds: 'FIGURE>=VALUE[UNIT] [for DURATION]' (default for 5s),
    /// e.g. 'futex>=50% for 5s'; FIGURE: futex, runnable, running, io, idle, server_cpu, cpu, iowait,
    /// server_cs, listen_drops, time_wait, db_waits, and in a sweep p50, p99 (ms), throughput (/s).
    /// A capture stores the server's threads by kernel stack, the database's lock views and, in a
    /// watch with --profile, a profile window (repeatable).
    #[arg(long = "trigger", value_name = "EXPR")]
    pub triggers: Vec<String>,
    /// At most this many captures in any hour.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub max_captures: u32,
}

/// The specimen's modes as the values of `--specimen` and `specimen --mode`:
/// listed in `--help`, the man pages and the shell completions.
/// Exporting a run's figures to Prometheus while it runs (docs/metrics.md).
#[derive(Args, Debug, Clone, Default)]
pub struct MetricsArgs {
    /// Serve the figures for Prometheus to scrape at http://ADDRESS:PORT/metrics (OpenMetrics); a port alone binds 127.0.0.1.
    #[arg(long, value_name = "[ADDRESS:]PORT")]
    pub metrics_listen: Option<String>,
    /// Push the figures each second by Prometheus remote write to URL (e.g. http://127.0.0.1:9090/api/v1/write).
    #[arg(long, value_name = "URL")]
    pub remote_write: Option<String>,
    /// After the run, how long --metrics-listen waits for one last scrape.
    #[arg(long, value_name = "DURATION", default_value = "5s")]
    pub metrics_linger: String,
}

pub fn specimen_modes() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(scalelab_specimen::Mode::ALL.map(|m| m.name()))
}
