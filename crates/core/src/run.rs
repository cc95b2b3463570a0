//! A run as loaded in memory: its plan, environment, finished steps, and
//! the raw telemetry samples and probe notes recorded with it.

use crate::{Environment, RunPlan, RunSamples, StepResult};
use serde::{Deserialize, Serialize};

/// Where a run's figures came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// Measured by `scalelab sweep`.
    Sweep,
    /// Brought in by `scalelab import` from a published or external table.
    Imported,
    /// OS micro-benchmarks (`scalelab micro`): no steps, a report of figures.
    Micro,
    /// Telemetry of a server under its own traffic (`scalelab watch --record`): samples, no steps.
    Watch,
    /// A capacity search (`scalelab capacity`): the tried rates are its steps,
    /// the capacity found is in the plan's options (`capacity_per_s`).
    Capacity,
}

impl RunKind {
    /// The name stored and shown.
    pub fn name(self) -> &'static str {
        match self {
            RunKind::Sweep => "sweep",
            RunKind::Imported => "imported",
            RunKind::Micro => "micro",
            RunKind::Watch => "watch",
            RunKind::Capacity => "capacity",
        }
    }
}

/// One experiment with every step it finished.
#[derive(Clone, Debug)]
pub struct Run {
    pub id: i64,
    pub kind: RunKind,
    pub plan: RunPlan,
    pub environment: Environment,
    pub started_unix_ms: i64,
    pub finished_unix_ms: Option<i64>,
    /// False until every planned step finished and the run was closed; a
    /// killed or interrupted run stays false with its finished steps kept.
    pub complete: bool,
    /// How the run ended, in words ("completed", "interrupted",
    /// "target failed at step 3"); None while running or when killed.
    pub outcome: Option<String>,
    pub steps: Vec<StepResult>,
    /// Every telemetry sample recorded with the run, typed, by kind (empty
    /// for imported and micro runs). Not part of any JSON output: the steps'
    /// `telemetry` is derived from it (`scalelab_analyze::telemetry::derive`).
    pub samples: RunSamples,
    /// Probes that were unavailable during the run, and why: `(key, reason)`,
    /// keyed as `unavailable` maps key them ([`crate::Source::key`]; a source
    /// this version does not know, lowercased), ordered by stored name.
    pub notes: Vec<(String, String)>,
}

/// The names of runs shown side by side (columns, legends, headers): the
/// label, and for every run whose label another of them shares, the label
/// with ` #ID` after it, on all of them alike ("same #18", "same #19", never
/// "same" beside "same #19"). Runs are compared by identity; labels only
/// name them. A name that would still collide with another run's label
/// (a run labelled "same #19" beside two runs labelled "same") gets the id too.
pub fn display_names(runs: &[(i64, &str)]) -> Vec<String> {
    let repeated = |label: &str| runs.iter().filter(|(_, l)| *l == label).count() > 1;
    let mut names: Vec<String> = runs.iter().map(|(id, l)| if repeated(l) { format!("{l} #{id}") } else { l.to_string() }).collect();
    for i in 0..names.len() {
        if names.iter().filter(|n| **n == names[i]).count() > 1 {
            let clashing = names[i].clone();
            for (j, n) in names.iter_mut().enumerate() {
                if *n == clashing {
                    *n = format!("{} #{}", runs[j].1, runs[j].0);
                }
            }
        }
    }
    names
}

#[cfg(test)]
mod display_name_tests {
    use super::display_names;

    #[test]
    fn repeated_labels_get_the_id_on_every_run_alike() {
        assert_eq!(display_names(&[(1, "a"), (2, "b")]), ["a", "b"]);
        assert_eq!(display_names(&[(18, "same"), (19, "same"), (20, "other")]), ["same #18", "same #19", "other"]);
        let tricky = display_names(&[(18, "same"), (19, "same"), (25, "same #19")]);
        assert_eq!(tricky, ["same #18", "same #19", "same #19 #25"]);
        let unique: std::collections::HashSet<_> = tricky.iter().collect();
        assert_eq!(unique.len(), 3);
    }
}

/// A stored run in a line: what `scalelab runs` lists (the store reads it
/// without loading the steps).
#[derive(Clone, Debug)]
pub struct RunSummary {
    pub id: i64,
    pub kind: String,
    pub label: String,
    pub target: String,
    pub started_unix_ms: i64,
    pub complete: bool,
    /// How the run ended, in words; `None` when killed or still running.
    pub outcome: Option<String>,
    pub steps: i64,
    /// The highest step throughput, per second (None: no measured step).
    pub peak_throughput_per_s: Option<f64>,
}
