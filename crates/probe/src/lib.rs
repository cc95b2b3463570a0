//! Telemetry: what the machine and the server are doing while load runs.
//!
//! - [`env`]: the benchmark configuration (host, kernel, CPU, memory, sysctls),
//!   read from a `/proc` and `/sys` root so tests can point it at captured files.
//!
//! Every reader takes its root paths; a value that cannot be read is `None`.

pub mod env;

pub use env::{capture_environment, Roots};
