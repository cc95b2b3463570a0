//! What every kind of sweep target is turned into before load: the
//! driver with what to record about the target ([`Prepared`], built by
//! `sweep` for HTTP and the specimen, by `sql_sweep` and `redis_sweep`),
//! and what was set up around it ([`Setup`]: preflight, client network,
//! agents).

use crate::specimen_child::SpecimenChild;
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
}

/// What was set up for a prepared target before load, beside its plan.
pub struct Setup {
    /// The preflight checks and the noise estimate, recorded in the run's environment.
    pub preflight: super::preflight::Judged,
    /// Print the machine's noise line when the run begins; false for the
    /// second target of `--versus` (the same machine, a moment later).
    pub say_noise: bool,
    /// The clients' network (`--client-net`), up until the load is over.
    pub client_net: Option<scalelab_netem::ClientNet>,
    /// The agents (`--agent`, `--server-agent`), connected and set up.
    pub agents: Option<scalelab_agent::Coordinator>,
}
