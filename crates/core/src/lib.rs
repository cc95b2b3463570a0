//! Shared types of scalelab, used by every stage of the pipeline.
//!
//! - [`plan`]: what to run: [`RunPlan`], [`StepPlan`], durations and their parsing.
//! - [`result`]: what a step produced: [`StepResult`], [`SecondResult`], [`ErrorCounts`],
//!   and [`LiveTick`], its progress while it runs; its one merge ([`StepResult::merge`]).
//! - [`spread`]: [`ClientSpread`], how a step's completions spread over its clients.
//! - [`histogram`]: [`LatencyHistogram`], the mergeable HDR histogram every engine returns.
//! - [`run`]: [`Run`], a run loaded in memory (plan, environment, steps).
//! - [`telemetry`]: [`StepTelemetry`], what the machine and server did in a step's window.
//! - [`sample`]: [`Sample`], one typed reading of any probe (what travels on the channel),
//!   [`SampleKind`] (its stored kind), [`RunSamples`] (a run's, by kind), and the reading types.
//! - [`source`]: [`Source`], a telemetry source, with its stored name and `unavailable` key.
//! - [`target`]: [`Target`], what is measured, parsed once (kind, host, port, loopback, redacted).
//! - [`env`]: [`Environment`], the "benchmark configuration" recorded with each run.
//! - [`preflight`]: [`preflight::Check`]s (what skews a benchmark) and the facts they judge.
//! - [`text`]: user and server text made safe to keep and show ([`redact_url`],
//!   [`escape_control`] for terminals, [`escape_markup`] for Markdown).
//!
//! Nothing here does I/O; these are values handed between crates.

pub mod env;
pub mod histogram;
pub mod plan;
pub mod preflight;
pub mod result;
pub mod run;
pub mod sample;
pub mod source;
pub mod spread;
pub mod target;
pub mod telemetry;
pub mod text;

pub use env::Environment;
pub use histogram::{LatencyHistogram, LatencySummary};
pub use plan::{parse_concurrency_list, parse_duration, parse_rate_list, Arrival, OpenLoopPlan, RunPlan, StepPlan, MAX_CONCURRENCY};
pub use result::{ClientSpread, ErrorClass, ErrorCounts, Failure, LiveTick, SecondResult, StepResult};
pub use run::{display_names, Run, RunKind, RunSummary};
pub use sample::{Record, RunSamples, Sample, SampleKind};
pub use source::Source;
pub use target::{Capabilities, Driver, OptionFamily, Target, TargetError, TargetKind};
pub use telemetry::{
    DbTelemetry, DbWait, HotThread, PerfSchemaWait, RedisCommandRate, RedisLatencySpike, RedisTelemetry, SoftirqCpu, SpecimenTelemetry,
    StepTelemetry, ThreadStatesPct,
};
pub use text::{escape_control, escape_control_lines, escape_markup, redact_url, thousands};

/// Seconds as a float, the unit of every duration that leaves the engine.
pub type Seconds = f64;

/// The version of scalelab, recorded in each run's environment.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
