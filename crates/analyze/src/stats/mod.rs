//! Where every interval in the tool comes from: the step table, `compare`,
//! `--assert` and the report all read these, so a figure means the same
//! everywhere. Pure functions over numbers and histograms; the methods, their
//! assumptions and when they fail are in docs/statistics.md.
//!
//! - [`interval`]: [`Ci95`] (a 95 % interval and its [`Method`]),
//!   [`NoInterval`] (why a figure has none), [`Change`] (the word a
//!   comparison prints).
//! - [`batch`]: one window's seconds: [`batch_means`] of throughput,
//!   [`batch_quantile`] of latency, with the lag-1 autocorrelation check.
//! - [`repeats`]: repeated windows: [`mean_of_repeats`] (Student t), [`cv_pct`].
//! - [`delta`]: A versus B: [`paired_delta_pct`] (interleaved ABBA pairs),
//!   [`independent_delta_pct`] (Welch), [`judge`], [`differ`].
//! - [`t`]: [`t975`], the Student t quantile.
//! - [`sample`]: moments, lag-1 autocorrelation and input checks.

pub mod batch;
pub mod delta;
pub mod interval;
pub mod repeats;
pub mod sample;
pub mod t;

pub use batch::{batch_means, batch_quantile};
pub use delta::{differ, independent_delta_pct, judge, paired_delta_pct};
pub use interval::{Change, Ci95, Estimate, Method, NoInterval};
pub use repeats::{cv_pct, mean_of_repeats};
pub use t::t975;

#[cfg(test)]
mod tests;
