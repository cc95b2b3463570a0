//! A run begun on a prepared target: the environment and plan recorded,
//! the probes started, the engine's options set. Shared by `sweep` (a
//! fixed list of steps) and `capacity` (steps chosen one at a time).

use super::prepared::{Common, Prepared};
use crate::args::SweepArgs;
use crate::error::bad;
use crate::session::{Probes, Session};
use crate::specimen_child::SpecimenChild;
use scalelab_core::{parse_duration, RunKind, RunPlan};
use scalelab_drive::{cpu, EngineOptions};
use scalelab_probe::CollectorConfig;
use scalelab_store::Store;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// What runs a prepared target: the sweep, or the capacity search.
pub trait Execute {
    fn execute<D: scalelab_drive::Driver>(
        self,
        store: Store,
        store_path: &Path,
        a: &SweepArgs,
        common: Common,
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

/// The sample interval, or bad input (checked before anything is created).
pub fn check_sampling(a: &SweepArgs) -> anyhow::Result<Duration> {
    let sample_interval = parse_duration(&a.sample_interval).map_err(|e| bad(format!("--sample-interval: {e}")))?;
    if sample_interval < Duration::from_millis(100) || !(0.0..=1000.0).contains(&a.thread_sample_hz) {
        return Err(bad("--sample-interval must be at least 100ms and --thread-sample-hz between 0 and 1000"));
    }
    Ok(sample_interval)
}

/// Records the run's start (plan, environment, preflight) and starts the probes.
pub fn begin<D>(store: Store, a: &SweepArgs, mut common: Common, prepared: Prepared<D>, kind: RunKind) -> anyhow::Result<Started<D>> {
    let Prepared { driver, target_name, workload, server, mut options, specimen, sql_url } = prepared;
    let mut env = scalelab_probe::capture_environment(&Default::default(), server, cpu::open_files_limit());
    super::preflight::warn_on_stderr(&common.preflight.checks, a.quiet || a.json || !common.say_noise);
    env.preflight = Some(std::mem::take(&mut common.preflight.checks));
    env.noise_pct = common.preflight.noise_pct;
    let pin_cpus = scalelab_drive::engine::pin_plan(common.threads, a.no_pin);
    options.insert("client_threads_bound".into(), (!pin_cpus.is_empty()).into());
    if !pin_cpus.is_empty() {
        options.insert("client_cpus".into(), pin_cpus.clone().into());
    }
    // What the kernel grants (nothing before Linux 6.12) is what the run records.
    let slice_us = Some(a.client_slice_us).filter(|us| *us > 0).and_then(cpu::thread_slice_us);
    if let Some(us) = slice_us {
        options.insert("client_slice_us".into(), us.into());
    }
    if let Some(net) = &common.client_net {
        options.insert("client_net".into(), net.spec().to_string().into());
    }
    let plan = RunPlan {
        label: a.label.clone().unwrap_or_else(|| target_name.clone()),
        target: target_name.clone(),
        workload,
        steps: common.steps,
        client_threads: common.threads,
        options,
    };

    let sample_interval = check_sampling(a)?;
    // A server agent observes the server on its host; this machine's probes do not run.
    let remote = common.agents.as_ref().filter(|c| c.server_agent().is_some()).map(|c| c.records());
    let server_pid = match &remote {
        Some(_) => Err("observed on its host by the server agent".to_string()),
        None => scalelab_probe::server_pid(Some(&common.target), specimen.as_ref().map(|s| s.pid()), a.server_pid),
    };
    let db = match a.db_probe.as_deref() {
        Some(url) => Some(scalelab_probe::collect::parse_url(url).map_err(bad)?),
        None => sql_url,
    };

    // SIGINT/SIGTERM finish the current second and keep what was measured.
    let stop = super::stop_on_signals()?;
    let probes = Probes {
        why_no_server: server_pid.as_ref().err().cloned().filter(|_| remote.is_none()),
        collect: CollectorConfig {
            server_pid: server_pid.ok(),
            interval: sample_interval,
            thread_hz: a.thread_sample_hz,
            db,
            redis: redis_of(&common.target),
            specimen: specimen.as_ref().map(|s| s.addr),
        },
        profile: a.profile || a.profile_steps.is_some(),
        profile_steps: common.profile_steps.take(),
        remote,
    };
    let label = scalelab_core::escape_control(&plan.label).into_owned();
    let workload = scalelab_core::escape_control(&plan.workload).into_owned();
    let session = Session::begin(store, kind, plan, &env, probes)?;
    let run_id = session.run_id().expect("a sweep is recorded");
    let netns = common.client_net.as_ref().map(|n| n.netns_path());
    let engine = EngineOptions { threads: common.threads, pin_cpus, slice_us, stop: stop.clone(), netns, hold_warmup: None };
    Ok(Started { session, driver, specimen, engine, run_id, label, workload, stop, client_net: common.client_net, agents: common.agents })
}

/// A Redis target's own probe (`INFO` each second): its URL, parsed again
/// here (the driver checked it already).
pub fn redis_of(target: &scalelab_core::Target) -> Option<scalelab_wire::resp::RedisUrl> {
    (target.kind().capabilities().driver == Some(scalelab_core::Driver::Redis))
        .then(|| scalelab_wire::resp::RedisUrl::parse(target.as_given()).ok())
        .flatten()
}
