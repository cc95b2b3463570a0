//! What every kind of sweep target is turned into before load: the
//! driver with what to record about the target ([`Prepared`], built by
//! `sweep` for HTTP and the specimen, by `sql_sweep` for databases), and
//! the schedule shared by all ([`Common`]).

use crate::specimen_child::SpecimenChild;
use scalelab_core::{StepPlan, Target};
use std::sync::Arc;

/// A target ready for load: its driver and what to record about it.
pub struct Prepared<D> {
    pub driver: Arc<D>,
    /// The target as recorded (URL, `specimen:MODE`, or a URL without password).
    pub target_name: String,
    /// What each client sends, in words.
    pub workload: String,
    /// What the target says it is (HTTP `Server` header, SQL version).
    pub server: Option<String>,
    /// Settings worth keeping with the run.
    pub options: serde_json::Map<String, serde_json::Value>,
    /// Keeps the specimen child alive for the run; dropped (killed) after.
    pub specimen: Option<SpecimenChild>,
    /// A database target's connection URL, parsed once: the probe polls
    /// the same database unless `--db-probe` names another.
    pub sql_url: Option<scalelab_wire::SqlUrl>,
}

/// The schedule and checks shared by every kind of target.
pub struct Common {
    /// The target, parsed once here; the probes and the server search get it from this.
    pub target: Target,
    pub steps: Vec<StepPlan>,
    pub threads: u32,
    pub assertions: Vec<scalelab_analyze::Assertion>,
    /// The preflight checks and the noise estimate, recorded in the run's environment.
    pub preflight: super::preflight::Judged,
    /// Print the machine's noise line when the run begins; false for the
    /// second target of `--versus` (the same machine, a moment later).
    pub say_noise: bool,
    /// The clients' network (`--client-net`), up until the load is over.
    pub client_net: Option<scalelab_netem::ClientNet>,
    /// The agents (`--agent`, `--server-agent`), connected and set up.
    pub agents: Option<scalelab_agent::Coordinator>,
    /// `--profile-steps`: the steps profiled (0-based); None: every step.
    pub profile_steps: Option<std::collections::BTreeSet<usize>>,
}
