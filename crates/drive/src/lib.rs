//! The load engine: it turns a [`StepPlan`](scalelab_core::StepPlan) into a
//! [`StepResult`](scalelab_core::StepResult) by driving a target.
//!
//! - [`driver`]: the [`Driver`]/[`Client`] traits every protocol implements.
//! - [`engine`]: one closed-loop step on N virtual clients spread over worker
//!   threads, each a single-threaded event loop; per-second HDR histograms.
//! - [`sweep`]: a run's steps in order, with pauses, stop-on-signal and
//!   "target failed" detection.
//! - [`http`]: the HTTP/1.1 (and HTTPS) driver; [`sql`]: PostgreSQL and MySQL;
//!   [`redis`]: Redis (RESP, pipelining, its workloads and keyspace).
//! - [`cpu`]: the client's own CPU time and the cores it may use.
//!
//! Nothing here prints or stores: results go back to the caller.

pub mod cpu;
pub mod driver;
pub mod engine;
pub mod http;
pub mod http2;
pub mod redis;
pub mod rounds;
pub mod sql;
pub mod sweep;

pub use driver::{Client, ClientCtx, Driver};
pub use engine::{run_step, EngineError, EngineOptions, LiveTick, Schedule};
pub use sweep::{run_sweep, run_sweep_with, Local, StepRunner, SweepEnd, SweepEvent};
