//! One stored reading of the database probe (sample kind `db`): the type
//! lives in `scalelab_core::sample`; its step summary is derived in
//! `scalelab_analyze::telemetry`.

pub use scalelab_core::sample::{DbSample, WAIT_CHUNK_MS};
