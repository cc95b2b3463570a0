//! [`ThreadSecond`], one second of thread-state sampling as stored; the type
//! lives in `scalelab_core::sample`. Step summaries are derived in
//! `scalelab_analyze::telemetry`.

pub use scalelab_core::sample::ThreadSecond;
