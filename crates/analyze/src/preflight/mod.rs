//! The preflight's judgements: each fact read by `scalelab_probe::preflight`
//! becomes a [`Check`] (`ok`, `warn` or `unavailable`) with the measured
//! figure, why it matters and the fix, under a stable id. docs/preflight.md
//! lists them.

mod check;
mod machine;
mod net;
pub mod noise;
mod server;

pub use noise::noise_pct;
use scalelab_core::preflight::{Check, CheckStatus, PreflightFacts, PreflightPlan};

/// Every check, in a fixed order: machine, limits and network, server and target.
pub fn judge(facts: &PreflightFacts, plan: &PreflightPlan) -> Vec<Check> {
    let mut out = Vec::new();
    machine::checks(facts, plan, &mut out);
    net::checks(facts, plan, &mut out);
    server::checks(facts, plan, &mut out);
    out
}

/// The ids of the checks that warn.
pub fn warnings(checks: &[Check]) -> Vec<&str> {
    checks.iter().filter(|c| c.status == CheckStatus::Warn).map(|c| c.id.as_str()).collect()
}
