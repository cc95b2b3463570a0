//! Presentation of runs; every function returns text or values, none prints.
//!
//! - [`table`]: the run table reviews publish (one row per concurrency,
//!   scaling, latency percentiles, errors, AVG and MAX rows).
//! - [`json`]: the JSON document of a run (`docs/json.md`, `docs/run.schema.json`).
//! - [`csv`]: CSV export of steps and of the per-second series.
//! - [`fmt`]: number formatting shared by the above (missing is "-", never 0).

pub mod csv;
pub mod fmt;
pub mod json;
pub mod table;
