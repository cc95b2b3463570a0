//! `sweep --agent ... [--server-agent ...]`: the coordinator's wiring. The
//! agents are reached before the store is opened (a refused or unreachable
//! agent is bad input: one line, exit 2, nothing created); each step is then
//! run by them instead of the local engine, and the run records which agent
//! did what.

use super::plan::SweepPlan;
use crate::args::AgentLoss;
use crate::error::bad;
use scalelab_agent::{Coordinator, Loss, Role, SqlSpec};
use scalelab_core::{StepPlan, StepResult};
use scalelab_drive::http::HttpConfig;
use scalelab_drive::sql::SqlConfig;
use scalelab_drive::{EngineError, EngineOptions, LiveTick, StepRunner};

/// What the load agents send: the HTTP workload (as HTTP/2 with that many
/// streams per connection, or HTTP/1.1), or the SQL one the coordinator
/// built and checked.
#[derive(Clone, Copy)]
pub enum Load<'a> {
    Http(&'a HttpConfig, Option<u32>),
    Sql(&'a SqlConfig),
    Redis(&'a scalelab_drive::redis::RedisConfig),
}

/// Reaches every agent (in parallel), each set up for its role. None
/// without agents; Err (bad input) names the agent that failed and why.
pub fn connect(plan: &SweepPlan, config: Load<'_>) -> anyhow::Result<Option<Coordinator>> {
    let Some(agents) = &plan.agents else { return Ok(None) };
    let target = &plan.target;
    let (threads, no_pin, to) = (plan.placement.threads_given, plan.placement.no_pin, target.as_given().to_string());
    let role = match config {
        Load::Http(config, http2) => Role::Load { target: to, http: config.clone(), http2, threads, no_pin },
        Load::Sql(c) => {
            let sql =
                SqlSpec { workload: c.workload.clone(), prepare: c.prepare, connect_timeout_ms: c.connect_timeout.as_millis() as u64 };
            Role::LoadSql { target: to, sql, threads, no_pin }
        }
        Load::Redis(c) => Role::LoadRedis { target: to, redis: c.clone(), threads, no_pin },
    };
    let load: Vec<(String, Role)> = agents.load.iter().map(|n| (n.clone(), role.clone())).collect();
    let probes = &plan.probes;
    let server = agents.server.as_ref().map(|n| {
        // The database is polled from the server's host: --db-probe, or a SQL target itself.
        let db = match &probes.db_probe {
            Some((given, _)) => Some(given.clone()),
            None => target.kind().capabilities().db_probe.then(|| target.as_given().to_string()),
        };
        let interval_ms = probes.sample_interval.as_millis() as u64;
        (n.clone(), Role::Probe { server_pid: probes.server_pid, port: target.port(), interval_ms, thread_hz: probes.thread_hz, db })
    });
    let loss = if agents.loss == AgentLoss::Continue { Loss::Continue } else { Loss::Abort };
    Coordinator::connect(&load, server, &agents.reach, loss).map(Some).map_err(bad)
}

/// What the run records about its agents before the first step.
pub fn describe(c: &Coordinator) -> serde_json::Value {
    let one = |l: &scalelab_agent::coordinator::Link, role: &str| {
        serde_json::json!({
            "agent": l.name, "role": role, "host": l.host, "cores": l.cores,
            "clock_offset_ms": l.offset_us as f64 / 1e3, "rtt_ms": l.rtt_us as f64 / 1e3,
        })
    };
    let mut all: Vec<_> = c.load_agents().iter().map(|l| one(l, "load")).collect();
    all.extend(c.server_agent().map(|l| one(l, "server")));
    serde_json::Value::Array(all)
}

/// Control bytes (both ways) of each agent so far.
pub fn control_bytes(c: &Coordinator) -> serde_json::Value {
    let links = c.load_agents().iter().chain(c.server_agent());
    links.map(|l| serde_json::json!({ "agent": l.name, "bytes": l.bytes.load(std::sync::atomic::Ordering::Relaxed) })).collect()
}

/// The agents as the sweep's step runner.
pub struct Remote<'a>(pub &'a mut Coordinator);

impl StepRunner for Remote<'_> {
    fn run_step(
        &mut self,
        index: usize,
        plan: &StepPlan,
        opts: &EngineOptions,
        live: &mut dyn FnMut(&LiveTick),
    ) -> Result<StepResult, EngineError> {
        // An agent whose engine failed is a lost agent, told in the run's outcome.
        Ok(self.0.run_step(index, plan, &opts.stop, live))
    }
}

/// The engine on this machine, with a server agent told which step runs
/// (a server agent lost is named with its step).
pub struct Observed<'a, R>(pub R, pub &'a Coordinator);

impl<R: StepRunner> StepRunner for Observed<'_, R> {
    fn run_step(
        &mut self,
        index: usize,
        plan: &StepPlan,
        opts: &EngineOptions,
        live: &mut dyn FnMut(&LiveTick),
    ) -> Result<StepResult, EngineError> {
        self.1.step_started(index);
        self.0.run_step(index, plan, opts, live)
    }
}

/// The server agent lost, as a lost agent: (name, step, why), the steps
/// without server telemetry said.
pub fn server_loss(c: &Coordinator) -> Option<(String, usize, String)> {
    let (name, step, why) = c.server_lost()?;
    let why = format!("{why}; no server telemetry from step {} on", step + 1);
    Some((format!("server agent {name}"), step, why))
}

/// The outcome of a run that lost agents: (complete, outcome, exit code).
pub fn outcome_after_loss(lost: &[(String, usize, String)], loss: AgentLoss, verdict: (bool, String, u8)) -> (bool, String, u8) {
    let (complete, outcome, code) = verdict;
    if lost.is_empty() {
        return (complete, outcome, code);
    }
    let lost = lost
        .iter()
        .map(|(name, step, why)| format!("{name} at step {} ({})", step + 1, scalelab_core::escape_control(why)))
        .collect::<Vec<_>>()
        .join("; ");
    match loss {
        AgentLoss::Continue if complete => (true, format!("{outcome}; continued without lost agent(s): {lost}"), code),
        _ => (false, format!("agent lost: {lost}"), if code == 0 || code == 130 { 1 } else { code }),
    }
}
