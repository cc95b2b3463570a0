//! What the thread-state sampler reports for an interval (a step, a second):
//! the types live in `scalelab_core::sample` (re-exported here).

pub use scalelab_core::sample::{StateCounts, StateShares, StateTimes, ThreadInterval, ThreadStats};
