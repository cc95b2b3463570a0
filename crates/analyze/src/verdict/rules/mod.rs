//! The rules, one function per kind, each looking at one step; grouped by
//! concern in the files below. Here: what a rule sees ([`Ctx`]), how a
//! verdict is built ([`Draft`]) and the CPU predicates several rules share.

mod client;
mod network;
mod resources;
mod serialization;
mod stalls;

use client::*;
use network::*;
use resources::*;
use serialization::*;
use stalls::*;

#[cfg(test)]
pub(super) use network::port_range_size;

use super::*;
use scalelab_core::{DbWait, Environment, ErrorClass, HotThread, StepTelemetry};

/// What a rule sees: the step, the run's first measured step (the base of
/// growth figures) and the machine.
pub(super) struct Ctx<'a> {
    pub step: &'a StepResult,
    pub first: Option<&'a StepResult>,
    pub env: &'a Environment,
    /// The target is on loopback: no link between client and server.
    pub loopback: bool,
    /// HTTP keep-alive was on (None: not an HTTP run, or not recorded).
    pub keepalive: Option<bool>,
}

impl Ctx<'_> {
    fn t(&self) -> Option<&StepTelemetry> {
        self.step.telemetry.as_ref()
    }

    /// Why `figure` is missing: the probe's recorded reason for one of
    /// `sources` (keys of [`StepTelemetry::unavailable`]), or "not measured".
    fn why(&self, figure: &str, sources: &[&str]) -> String {
        match self.t() {
            None => format!("{figure}: no telemetry for this step"),
            Some(t) => match sources.iter().find_map(|s| t.unavailable.get(*s)) {
                Some(reason) => format!("{figure}: {reason}"),
                None => format!("{figure}: not measured"),
            },
        }
    }
}

const CPU: &[&str] = &["cpu", "system"];
const SERVER: &[&str] = &["server"];
const THREADS: &[&str] = &["thread_states"];
const SYSTEM: &[&str] = &["system"];
const DB: &[&str] = &["db"];

/// A verdict being built: corroborating signals lower the confidence when
/// missing or unmet.
struct Draft {
    v: Verdict,
    lowered: u32,
    cap: Confidence,
}

impl Draft {
    fn new(kind: VerdictKind, ctx: &Ctx, headline: impl Into<String>, next: impl Into<String>) -> Self {
        Draft {
            v: Verdict {
                kind,
                confidence: Confidence::High,
                concurrency: crate::series::level(ctx.step),
                headline: headline.into(),
                evidence: Vec::new(),
                missing: Vec::new(),
                next: next.into(),
            },
            lowered: 0,
            cap: Confidence::High,
        }
    }

    fn ev(&mut self, name: &str, value: Option<f64>, unit: &str) {
        if let Some(value) = value.filter(|v| v.is_finite()) {
            self.v.evidence.push(Evidence::new(name, value, unit));
        }
    }

    /// A corroborating signal: `None` = not measured (listed as missing),
    /// `Some(false)` = measured against the verdict; both lower the confidence.
    fn check(&mut self, met: Option<bool>, missing: impl FnOnce() -> String) {
        match met {
            Some(true) => {}
            Some(false) => self.lowered += 1,
            None => {
                self.v.missing.push(missing());
                self.lowered += 1;
            }
        }
    }

    fn done(mut self) -> Verdict {
        let mut c = Confidence::High;
        for _ in 0..self.lowered {
            c = c.lower();
        }
        self.v.confidence = c.min(self.cap);
        self.v
    }
}

/// Every rule's verdict for one step.
pub(super) fn all(ctx: &Ctx) -> Vec<Verdict> {
    [
        client_bound(ctx),
        errors(ctx),
        starved_clients(ctx),
        worker_pool(ctx),
        periodic_stalls(ctx),
        thundering_herd(ctx),
        lock_contention(ctx),
        db_contention(ctx),
        single_hot_thread(ctx),
        accept_overflow(ctx),
        port_exhaustion(ctx),
        cpu_bound(ctx),
        disk_bound(ctx),
        network_bound(ctx),
        softirq_one_cpu(ctx),
    ]
    .into_iter()
    .flatten()
    .collect()
}

pub(super) fn cpu_not_saturated(t: Option<&StepTelemetry>) -> Option<bool> {
    t.and_then(|t| t.cpu_busy_pct).map(|b| b < CPU_SATURATED_PCT)
}

/// The server's own CPU as a share of all cores fills the machine at this
/// share or more. A lock or a single hot thread keeps a server well under it
/// (about one core's worth); a busy neighbour or the client cannot push the
/// server's own figure up, only the machine's.
const SERVER_FILLS_CPU_SHARE: f64 = 0.75;

/// Whether the saturated machine is the server's own doing, so the
/// serialization rules (lock, single hot thread) give way to the cpu-bound
/// one: the machine is saturated and the server's own CPU fills it (or is
/// not measured). A machine filled by others (a neighbour's CPU hog, the
/// client) leaves the server's serialization to be judged on its own figures.
pub(super) fn server_fills_cpu(ctx: &Ctx, t: &StepTelemetry) -> bool {
    if cpu_not_saturated(Some(t)) != Some(false) {
        return false;
    }
    match (t.server_cpu_pct, ctx.env.logical_cores.filter(|c| *c > 0)) {
        (Some(p), Some(c)) => p / (100.0 * f64::from(c)) >= SERVER_FILLS_CPU_SHARE,
        _ => true,
    }
}
