//! Telemetry derived from a run's raw samples ([`scalelab_core::sample`]):
//! counters become rates and percentages here, at analysis time, never in
//! the probes.
//!
//! - [`rates`]: machine-wide and server-process rates from two samples.
//! - [`window`]: a step's window summarized into [`scalelab_core::StepTelemetry`]
//!   ([`summarize_window`], [`busiest_softirq_cpu`]).
//! - [`db_rates`], [`db`]: database counters as rates; a window's [`summarize_db`].
//! - [`specimen`]: the specimen's own counters over a window ([`summarize_specimen`]).
//! - [`mod@derive`]: a loaded run's step telemetry from the samples it carries ([`derive()`]).

pub mod db;
pub mod db_rates;
pub mod derive;
pub mod interval;
pub mod rates;
pub mod specimen;
pub mod window;

pub use db::{summarize_db, TOP_WAITS};
pub use db_rates::{global_status_rates, semaphore_rates, top_waits, GlobalStatusRates, SemaphoreRates, WaitRate};
pub use derive::derive;
pub use interval::{intervals, summarize_recording, Interval};
pub use rates::{cpu_pct, process_rates, system_rates, CpuPct, ProcessRates, SystemRates};
pub use specimen::summarize_specimen;
pub use window::{busiest_softirq_cpu, summarize_window};
