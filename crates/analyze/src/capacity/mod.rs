//! Capacity search (`scalelab capacity`, docs/open-loop.md): the highest
//! offered rate at which every SLO holds over a full window. A ramp
//! (doubling) brackets the limit, bisection narrows it to the resolution,
//! and a confirmation window at the answer must pass again, or the result
//! is called noisy. Pure: the caller runs each step and records it.

mod slo;
#[cfg(test)]
mod tests;

pub use slo::{parse_slo, Slo, SloMetric};

/// What one tried rate measured (latency from the intended send).
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub offered_per_s: f64,
    pub achieved_per_s: f64,
    /// Latency percentiles in ms from the intended send: p50, p90, p99, p99.9.
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub p999_ms: Option<f64>,
    /// Failed (and dropped) requests as a share of all, 0..=1.
    pub error_share: f64,
}

/// A server that answers fewer than this share of the offered rate does
/// not sustain it, whatever its latency says.
pub const MIN_ACHIEVED_SHARE: f64 = 0.9;

impl Observation {
    /// The SLOs this observation breaks, as text (`p99 63.1 ms > 50 ms`);
    /// empty when every one holds and the rate was achieved.
    pub fn breaches(&self, slos: &[Slo]) -> Vec<String> {
        let mut out: Vec<String> = slos.iter().filter_map(|s| s.breach(self)).collect();
        if self.offered_per_s > 0.0 && self.achieved_per_s < MIN_ACHIEVED_SHARE * self.offered_per_s {
            out.push(format!(
                "achieved {}/s < {:.0} % of offered",
                scalelab_core::thousands(self.achieved_per_s),
                MIN_ACHIEVED_SHARE * 100.0
            ));
        }
        out
    }
}

/// Why a tried rate was tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Ramp,
    Bisect,
    /// A rate that failed once, tried again: a breach must repeat to count
    /// (one stall of a busy machine does not end the ramp).
    Recheck,
    Confirm,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Ramp => "ramp",
            Phase::Bisect => "bisect",
            Phase::Recheck => "recheck",
            Phase::Confirm => "confirm",
        }
    }
}

/// One tried rate and whether every SLO held.
#[derive(Debug, Clone, PartialEq)]
pub struct Trial {
    pub phase: Phase,
    pub observation: Observation,
    pub breaches: Vec<String>,
}

impl Trial {
    pub fn passed(&self) -> bool {
        self.breaches.is_empty()
    }
}

/// Where the search ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// Every SLO held at this rate, confirmed by a second window; the first
    /// failing rate searched was `above` (none when `--max-rate` held).
    Capacity { rate: f64, above: Option<f64> },
    /// The confirmation window at `rate` failed: the result is noisy.
    Noisy { rate: f64 },
    /// Even the lowest rate tried failed.
    NoneHeld { lowest: f64 },
    /// Out of time before the search ended: the bracket reached.
    Unfinished { passed: Option<f64>, failed: Option<f64> },
}

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    Try { rate: f64, phase: Phase },
    Done,
}

/// The search's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub slos: Vec<Slo>,
    /// First rate of the ramp.
    pub start_per_s: f64,
    /// The ramp never offers more than this.
    pub max_per_s: f64,
    /// Bisection stops when the bracket is this narrow, relative to its low end.
    pub resolution: f64,
    /// Below this rate the search gives up (nothing held).
    pub min_per_s: f64,
}

/// The search, fed one observation at a time.
#[derive(Debug, Clone)]
pub struct Search {
    settings: Settings,
    /// Highest rate that held, lowest rate that failed.
    pass: Option<f64>,
    fail: Option<f64>,
    trials: Vec<Trial>,
    found: Option<Found>,
    /// A rate that failed once and is tried again next.
    recheck: Option<f64>,
}

/// Rates are whole requests per second.
fn whole(r: f64) -> f64 {
    r.round().max(1.0)
}

impl Search {
    pub fn new(settings: Settings) -> Search {
        Search { settings, pass: None, fail: None, trials: Vec::new(), found: None, recheck: None }
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Every tried rate in order.
    pub fn trials(&self) -> &[Trial] {
        &self.trials
    }

    /// The bracket searched: the highest rate that held and the lowest that failed.
    pub fn bracket(&self) -> (Option<f64>, Option<f64>) {
        (self.pass, self.fail)
    }

    /// The result, once [`Search::next`] says `Done` (or after [`Search::give_up`]).
    pub fn found(&self) -> Option<&Found> {
        self.found.as_ref()
    }

    /// The trial that failed (for the second time) at the lowest failing
    /// rate: its diagnosis says why the limit is where it is.
    pub fn first_failing(&self) -> Option<usize> {
        let fail = self.fail?;
        self.trials.iter().position(|t| t.phase == Phase::Recheck && !t.passed() && t.observation.offered_per_s == fail)
    }

    /// Time ran out: the search ends with the bracket it reached.
    pub fn give_up(&mut self) {
        if self.found.is_none() {
            self.found = Some(Found::Unfinished { passed: self.pass, failed: self.fail });
        }
    }

    /// The next rate to try, or `Done`.
    pub fn next(&self) -> Next {
        if self.found.is_some() {
            return Next::Done;
        }
        let s = &self.settings;
        let try_ = |rate: f64, phase| Next::Try { rate: whole(rate), phase };
        if let Some(r) = self.recheck {
            return try_(r, Phase::Recheck);
        }
        match (self.pass, self.fail) {
            (None, None) => try_(s.start_per_s.min(s.max_per_s), Phase::Ramp),
            (Some(p), None) if p < s.max_per_s => try_((p * 2.0).min(s.max_per_s), Phase::Ramp),
            (None, Some(f)) => try_(f / 2.0, Phase::Ramp),
            (Some(p), Some(f)) if f - p > s.resolution * p && whole((p + f) / 2.0) > p && whole((p + f) / 2.0) < f => {
                try_((p + f) / 2.0, Phase::Bisect)
            }
            (Some(p), _) => try_(p, Phase::Confirm),
        }
    }

    /// Records what the rate [`Search::next`] asked for measured.
    pub fn record(&mut self, observation: Observation) {
        let Next::Try { phase, .. } = self.next() else { return };
        let breaches = observation.breaches(&self.settings.slos);
        let passed = breaches.is_empty();
        let rate = observation.offered_per_s;
        self.trials.push(Trial { phase, observation, breaches });
        let s = &self.settings;
        if phase == Phase::Confirm {
            self.found = Some(if passed { Found::Capacity { rate, above: self.fail } } else { Found::Noisy { rate } });
            return;
        }
        if !passed && phase != Phase::Recheck {
            self.recheck = Some(rate);
            return;
        }
        self.recheck = None;
        if passed {
            self.pass = Some(self.pass.map_or(rate, |p| p.max(rate)));
        } else {
            self.fail = Some(self.fail.map_or(rate, |f| f.min(rate)));
        }
        match (self.pass, self.fail) {
            (None, Some(f)) if whole(f / 2.0) < s.min_per_s || f <= 1.0 => self.found = Some(Found::NoneHeld { lowest: f }),
            _ => {}
        }
    }
}

impl Observation {
    /// What a stored or just-run step measured, for the search.
    pub fn of_step(step: &scalelab_core::StepResult) -> Observation {
        let errors = step.errors.total();
        let all = step.requests + errors;
        Observation {
            offered_per_s: step.offered_rate_per_s.unwrap_or(0.0),
            achieved_per_s: step.throughput_per_s(),
            p50_ms: step.latency.quantile_ms(0.50),
            p90_ms: step.latency.quantile_ms(0.90),
            p99_ms: step.latency.quantile_ms(0.99),
            p999_ms: step.latency.quantile_ms(0.999),
            error_share: if all > 0 { errors as f64 / all as f64 } else { 0.0 },
        }
    }
}
