//! A run as loaded in memory: its plan, environment and finished steps.

use crate::{Environment, RunPlan, StepResult};
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
}

impl RunKind {
    /// The name stored and shown.
    pub fn name(self) -> &'static str {
        match self {
            RunKind::Sweep => "sweep",
            RunKind::Imported => "imported",
            RunKind::Micro => "micro",
            RunKind::Watch => "watch",
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
}
