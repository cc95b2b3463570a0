//! A run begun on a prepared target: the environment and plan recorded,
//! the probes started, the engine's options set. Shared by `sweep` (a
//! fixed list of steps) and `capacity` (steps chosen one at a time).

use super::plan::{LoadPlan, SweepPlan};
use super::prepared::{Prepared, Setup};
use crate::session::{Probes, Session};
use crate::specimen_child::SpecimenChild;
use scalelab_core::{RunKind, RunPlan};
use scalelab_drive::{cpu, EngineOptions};
use scalelab_probe::CollectorConfig;
use scalelab_store::Store;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// What runs a prepared target: the sweep, or the capacity search.
pub trait Execute {
    fn execute<D: scalelab_drive::Driver>(
        self,
        store: Store,
        store_path: &Path,
        plan: SweepPlan,
        setup: Setup,
        prepared: Prepared<D>,
    ) -> anyhow::Result<ExitCode>;
}

/// A run in progress.
pub struct Started<D> {
    pub session: Session,
    pub driver: Arc<D>,
    /// Keeps the specimen alive; drop it after the probes stop.
    pub specimen: Option<SpecimenChild>,
    pub engine: EngineOptions,
    pub run_id: i64,
    /// Label and workload, safe to print.
    pub label: String,
    pub workload: String,
    pub stop: Arc<AtomicBool>,
    /// The clients' network namespace (`--client-net`): kept up for the
    /// run, torn down when dropped (before the specimen).
    pub client_net: Option<scalelab_netem::ClientNet>,
    /// The agents (`--agent`, `--server-agent`), until the load is over.
    pub agents: Option<scalelab_agent::Coordinator>,
}

/// Records the run's start (plan, environment, preflight) and starts the probes.
pub fn begin<D>(store: Store, plan: &SweepPlan, mut setup: Setup, prepared: Prepared<D>, kind: RunKind) -> anyhow::Result<Started<D>> {
    let Prepared { driver, target_name, workload, server, mut options, specimen } = prepared;
    let out = &plan.output;
    let mut env = scalelab_probe::capture_environment(&Default::default(), server, cpu::open_files_limit());
    super::preflight::warn_on_stderr(&setup.preflight.checks, out.quiet || out.json || !setup.say_noise);
    env.preflight = Some(std::mem::take(&mut setup.preflight.checks));
    env.noise_pct = setup.preflight.noise_pct;
    let placement = plan.placement;
    let pin_cpus = scalelab_drive::engine::pin_plan(placement.threads, placement.no_pin);
    options.insert("client_threads_bound".into(), (!pin_cpus.is_empty()).into());
    if !pin_cpus.is_empty() {
        options.insert("client_cpus".into(), pin_cpus.clone().into());
    }
    // What the kernel grants (nothing before Linux 6.12) is what the run records.
    let slice_us = Some(placement.client_slice_us).filter(|us| *us > 0).and_then(cpu::thread_slice_us);
    if let Some(us) = slice_us {
        options.insert("client_slice_us".into(), us.into());
    }
    if let Some(budget) = placement.busy_poll {
        options.insert("client_busy_poll".into(), true.into());
        // Duration::MAX: the whole window, no budget to record.
        if budget != std::time::Duration::MAX {
            options.insert("client_busy_poll_us".into(), (budget.as_micros() as u64).into());
        }
    }
    if let Some(net) = &setup.client_net {
        options.insert("client_net".into(), net.spec().to_string().into());
    }
    let run_plan = RunPlan {
        label: out.label.clone().unwrap_or_else(|| target_name.clone()),
        target: target_name.clone(),
        workload,
        steps: plan.steps.clone(),
        client_threads: placement.threads,
        options,
    };

    // A server agent observes the server on its host; this machine's probes do not run.
    let remote = setup.agents.as_ref().filter(|c| c.server_agent().is_some()).map(|c| c.records());
    let server_pid = match &remote {
        Some(_) => Err("observed on its host by the server agent".to_string()),
        None => scalelab_probe::server_pid(Some(&plan.target), specimen.as_ref().map(|s| s.pid()), plan.probes.server_pid),
    };
    // The database polled: --db-probe, else a SQL target itself.
    let db = match (&plan.probes.db_probe, &plan.load) {
        (Some((_, url)), _) => Some(url.clone()),
        (None, LoadPlan::Sql(sql)) => Some(sql.url.clone()),
        _ => None,
    };
    // A Redis target's own probe (`INFO` each second).
    let redis = match &plan.load {
        LoadPlan::Redis(c) => Some(c.url.clone()),
        _ => None,
    };

    // SIGINT/SIGTERM finish the current second and keep what was measured.
    let stop = super::stop_on_signals()?;
    let probes = Probes {
        why_no_server: server_pid.as_ref().err().cloned().filter(|_| remote.is_none()),
        collect: CollectorConfig {
            server_pid: server_pid.ok(),
            interval: plan.probes.sample_interval,
            thread_hz: plan.probes.thread_hz,
            db,
            redis,
            specimen: specimen.as_ref().map(|s| s.addr),
        },
        profile: plan.profile,
        profile_steps: plan.profile_steps.clone(),
        remote,
    };
    let label = scalelab_core::escape_control(&run_plan.label).into_owned();
    let workload = scalelab_core::escape_control(&run_plan.workload).into_owned();
    let captured_pid = probes.collect.server_pid;
    let captured_db = probes.collect.db.clone();
    let mut session = Session::begin(store, kind, run_plan, &env, probes)?;
    if !plan.triggers.is_empty() {
        if captured_pid.is_none() && plan.triggers.iter().any(|t| t.figure.needs_server()) && !out.quiet && !out.json {
            esayln!("warning: --trigger: the server's process is not sampled here: its figures (thread states, CPU) cannot hold");
        }
        let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
        let capturing = crate::trigger::Capturing::new(plan.triggers.clone(), plan.max_captures, now_ms, captured_pid, captured_db);
        session.set_capturing(capturing, false);
    }
    let run_id = session.run_id().expect("a sweep is recorded");
    let netns = setup.client_net.as_ref().map(|n| n.netns_path());
    let engine = EngineOptions {
        threads: placement.threads,
        pin_cpus,
        slice_us,
        stop: stop.clone(),
        netns,
        hold_warmup: None,
        busy_poll: placement.busy_poll,
    };
    Ok(Started { session, driver, specimen, engine, run_id, label, workload, stop, client_net: setup.client_net, agents: setup.agents })
}
