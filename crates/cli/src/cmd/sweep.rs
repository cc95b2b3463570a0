//! `scalelab sweep`: the arguments become a plan ([`SweepPlan`]), the plan
//! a prepared target (specimen, HTTP, SQL or Redis) with its preflight,
//! client network and agents; then the steps run, each committed to the
//! store as it finishes, and the result is printed.

use super::agents::Load;
use super::plan::{specimen_work_us, LoadPlan, SweepPlan};
use super::prepared::{Prepared, Setup};
use super::started::{begin, Execute, Started};
use super::windows::{Repeat, UntilPrecision};
use crate::args::{AgentLoss, RepeatArgs, SweepArgs};
use crate::error::bad;
use crate::live::LiveView;
use crate::session::{Silent, SweepOutcome};
use crate::specimen_child::SpecimenChild;
use scalelab_analyze::assert::{Assertion, Check, Metric};
use scalelab_core::{escape_control, Run, RunKind};
use scalelab_drive::http::HttpDriver;
use scalelab_drive::SweepEnd;
use scalelab_report::table;
use scalelab_store::Store;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

pub fn run(store_path: &Path, a: SweepArgs, r: RepeatArgs) -> anyhow::Result<ExitCode> {
    let repeat = Repeat::check(&a, &r)?;
    let Some(v) = repeat.versus.clone() else {
        let plan = SweepPlan::from_args(a)?;
        refuse_assertions_that_cannot_apply(&plan.assertions, false)?;
        return prepare(store_path, plan, Sweep { repeat, versus: None });
    };
    // The second target gets the first's options; both are planned (and
    // any bad input refused) before either is started.
    let (mut a_args, mut b_args) = (a.clone(), v.args_for_b(&a));
    // Two specimens both read `specimen:scales` by default: their labels say what differs.
    for args in [&mut a_args, &mut b_args] {
        if args.target.is_none() && args.label.is_none() {
            let mode = args.specimen.clone().unwrap_or_else(|| "scales".to_string());
            args.label = Some(format!("specimen:{mode} work-us={}", specimen_work_us(args)));
        }
    }
    let (plan_a, plan_b) = (SweepPlan::from_args(a_args)?, SweepPlan::from_args(b_args)?);
    refuse_assertions_that_cannot_apply(&plan_a.assertions, true)?;
    if plan_a.metrics.wanted() {
        return Err(bad(
            "--metrics-listen and --remote-write export one run; --versus alternates two: sweep each target on its own to export it",
        ));
    }
    prepare(store_path, plan_a, Sweep { repeat, versus: Some(plan_b) })
}

/// An assertion that no sweep can satisfy is refused before any load
/// (exit 2), not failed after it: `capacity` is a capacity search's result,
/// and a delta needs the second arm of `--versus`.
fn refuse_assertions_that_cannot_apply(assertions: &[Assertion], versus: bool) -> anyhow::Result<()> {
    for a in assertions {
        let why = match a.check {
            Check::Compare { metric: Metric::Capacity, .. } => "`capacity` is the result of `scalelab capacity`; a sweep has none",
            Check::Compare { metric: Metric::DeltaPct, .. } if !versus => {
                "delta_pct compares two runs: add --versus TARGET_B, or check it with `scalelab compare A B --assert ...`"
            }
            _ => continue,
        };
        return Err(bad(format!("--assert: assertion `{}`: {why}", a.text)));
    }
    Ok(())
}

/// Runs the sweep's steps: in order, in shuffled rounds (`--repeats`),
/// until each level is precise enough (`--until-precision`), or
/// interleaved with a second target (`--versus`, planned here).
struct Sweep {
    repeat: Repeat,
    versus: Option<SweepPlan>,
}

/// Plans a sweep's arguments, then [`prepare`]s it.
pub fn prepare_then<X: Execute>(store_path: &Path, a: SweepArgs, x: X) -> anyhow::Result<ExitCode> {
    prepare(store_path, SweepPlan::from_args(a)?, x)
}

/// Prepares the planned target (starts the specimen, or reaches the server
/// and checks the workload), runs the preflight, brings up the client
/// network and the agents, opens the store, then hands over to `x`.
fn prepare<X: Execute>(store_path: &Path, plan: SweepPlan, x: X) -> anyhow::Result<ExitCode> {
    // Before the store or the target: every client needs a descriptor.
    let probe_fds = super::fd_limit::check(plan.max_concurrency(), plan.placement.threads)?;
    scalelab_probe::collect::set_root_fd_budget(probe_fds);
    match &plan.load {
        LoadPlan::Sql(sql) => {
            let prepared = super::sql_sweep::prepare_sql(sql, &plan.target, plan.output.quiet)?;
            let setup = set_up(&plan, &prepared, Load::Sql(prepared.driver.config()))?;
            // Only now, with every input known good, the store is opened (or created).
            x.execute(Store::open(store_path)?, store_path, plan, setup, prepared)
        }
        LoadPlan::Redis(config) => {
            let prepared = super::redis_sweep::prepare_redis(config, &plan.target, plan.output.quiet)?;
            let setup = set_up(&plan, &prepared, Load::Redis(prepared.driver.config()))?;
            x.execute(Store::open(store_path)?, store_path, plan, setup, prepared)
        }
        LoadPlan::Http { config, expect_status, version, streams } => {
            if super::http2_sweep::speaks_h2(&plan, config, *version, *streams)? {
                let prepared = super::http2_sweep::prepare_h2(&plan, config, expect_status, *version, *streams)?;
                let setup = set_up(&plan, &prepared, Load::Http(config, Some(*streams)))?;
                return x.execute(Store::open(store_path)?, store_path, plan, setup, prepared);
            }
            let mut prepared = prepare_http(&plan, config, expect_status)?;
            if plan.specimen.is_none() {
                // What was asked, and what is spoken: HTTP/1.1 (asked, the
                // server's ALPN choice, or auto's where HTTP/2 cannot serve).
                prepared.options.insert("http".into(), version.name().into());
                prepared.options.insert("http_protocol".into(), "http/1.1".into());
            }
            let setup = set_up(&plan, &prepared, Load::Http(config, None))?;
            x.execute(Store::open(store_path)?, store_path, plan, setup, prepared)
        }
    }
}

/// The preflight (docs/preflight.md; --strict turns it into a gate), the
/// clients' network and the agents of a prepared target.
fn set_up<D>(plan: &SweepPlan, prepared: &Prepared<D>, load: Load<'_>) -> anyhow::Result<Setup> {
    let preflight = run_preflight(plan, prepared)?;
    let specimen = prepared.specimen.as_ref().map(|s| s.addr);
    let client_net = super::client_net::up(plan.client_net.as_ref(), &plan.target, specimen)?;
    let agents = super::agents::connect(plan, load)?;
    Ok(Setup { preflight, say_noise: true, client_net, agents })
}

/// Starts the specimen if asked, builds the HTTP driver and sends the preflight request.
fn prepare_http(plan: &SweepPlan, config: &scalelab_drive::http::HttpConfig, expect_status: &str) -> anyhow::Result<Prepared<HttpDriver>> {
    let specimen = match &plan.specimen {
        Some(s) => Some(SpecimenChild::for_sweep(s.mode, s.work_us, s.workers, s.fix)?),
        None => None,
    };
    let mut config = config.clone();
    let target_name = match &specimen {
        Some(s) => {
            // The plan's request was aimed at a placeholder: the specimen's port is known now.
            config.requests[0].url = format!("http://{}/", s.addr);
            plan.target.as_given().to_string()
        }
        // Credentials in the URL are sent (Basic auth) but never recorded or shown.
        None => plan.target.redacted().to_string(),
    };
    let driver = Arc::new(HttpDriver::new(&config).map_err(|e| bad(e.to_string()))?);
    let preflight = driver.preflight().map_err(|f| bad(format!("cannot reach {target_name}: {}", f.message)))?;
    if !preflight.accepted {
        esayln!(
            "warning: {} answered status {} to the first request, which --expect-status {} does not accept: such responses count as errors",
            target_name,
            preflight.status,
            expect_status
        );
    }
    // The specimen's address is a free port picked per run: not part of the
    // workload (two specimen runs compared do not differ by it).
    let shown = |u: &str| match &specimen {
        Some(s) => u.replacen(&format!("http://{}", s.addr), "", 1),
        None => scalelab_core::redact_url(u),
    };
    let workload = config.workload_text(shown);
    let mut options = serde_json::Map::new();
    options.insert("keepalive".into(), config.keepalive.into());
    options.insert("timeout_s".into(), config.timeout.as_secs_f64().into());
    options.insert("expect_status".into(), expect_status.into());
    if let Some(s) = &plan.specimen {
        options.insert("specimen_mode".into(), s.mode.name().into());
        options.insert("specimen_work_us".into(), s.work_us.into());
        if matches!(s.mode, scalelab_specimen::Mode::Pool | scalelab_specimen::Mode::Herd) {
            options.insert("specimen_workers".into(), s.workers.unwrap_or(scalelab_specimen::DEFAULT_WORKERS).into());
        }
        if s.fix {
            options.insert("specimen_fix".into(), true.into());
        }
    }
    Ok(Prepared { driver, target_name, workload, server: preflight.server, options, specimen })
}

/// The preflight checks of this run; with --strict a warning ends the sweep
/// here, before the store or any load (their warnings are printed once the
/// store is open, so an unusable store is still one line).
fn run_preflight<D>(plan: &SweepPlan, prepared: &Prepared<D>) -> anyhow::Result<super::preflight::Judged> {
    let specimen = prepared.specimen.as_ref();
    let target = &plan.target;
    let server_agent = plan.agents.as_ref().is_some_and(|g| g.server.is_some());
    let known = scalelab_probe::preflight::Known {
        target,
        port: specimen.map(|s| s.addr.port()).or(target.port()),
        // With a server agent the server is observed, but on its host: these checks read this machine.
        server_pid: if server_agent && plan.probes.server_pid.is_none() && specimen.is_none() {
            Err("observed on its host by the server agent, whose limits this check cannot read".to_string())
        } else {
            scalelab_probe::server_pid(Some(target), specimen.map(|s| s.pid()), plan.probes.server_pid)
        },
        server_version: prepared.server.clone().ok_or_else(|| format!("{} did not say what it is", prepared.target_name)),
    };
    let keepalive = match &plan.load {
        LoadPlan::Http { config, .. } => config.keepalive,
        LoadPlan::Sql(_) | LoadPlan::Redis(_) => true,
    };
    let checks = super::preflight::checks(super::preflight::Ask {
        known,
        db_probe: plan.probes.db_probe.as_ref().map(|(given, _)| given.as_str()),
        max_concurrency: plan.max_concurrency(),
        open_loop: plan.open_loop(),
        keepalive,
        threads: plan.placement.threads,
        no_pin: plan.placement.no_pin,
        client_net: plan.client_net.as_ref().map(|n| n.to_string()),
        busy_poll: plan.placement.busy_poll.is_some(),
    })?;
    if plan.strict && plan.profile {
        // --strict: a run asked for profiles that perf cannot take is refused before anything starts.
        let perf = scalelab_probe::profile::ProfileConfig::new(0).perf;
        scalelab_probe::profile::check::perf_found(&perf).map_err(|why| bad(format!("--strict: --profile cannot work: {why}")))?;
    }
    super::preflight::gate(&checks.checks, plan.strict)?;
    Ok(checks)
}

impl Execute for Sweep {
    /// Runs the sweep on a prepared target, committing each step as it finishes,
    /// then prints the table (or JSON), the analysis and the assertions.
    fn execute<D: scalelab_drive::Driver>(
        self,
        store: Store,
        store_path: &Path,
        mut plan: SweepPlan,
        setup: Setup,
        prepared: Prepared<D>,
    ) -> anyhow::Result<ExitCode> {
        let repeat = self.repeat;
        if let Some(plan_b) = self.versus {
            // The second target is prepared as the first was, then both run.
            let first = super::versus::First { store, plan, setup, prepared };
            return prepare(store_path, plan_b, super::versus::Second { first, repeat });
        }
        let levels = plan.steps.clone();
        if repeat.repeats > 1 {
            plan.steps = scalelab_drive::rounds::rounds(&levels, repeat.repeats, repeat.seed);
        }
        // Bound before the run is stored: an address in use is bad input.
        let exporter = crate::exporter::Exporter::start(&plan.metrics, "sweep")?;
        let Started { mut session, driver, specimen, engine: opts, run_id, label, workload, stop, client_net, mut agents } =
            begin(store, &plan, setup, prepared, RunKind::Sweep)?;
        let out = &plan.output;
        if let Some(x) = &exporter {
            x.set_run(&run_id.to_string(), &label, &session.plan().target);
            if let (Some(addr), false) = (x.listening(), out.quiet || out.json) {
                esayln!("metrics: http://{addr}{}", crate::exporter::METRICS_PATH);
            }
        }
        if let Some(c) = &agents {
            session.set_option("agents", super::agents::describe(c))?;
            // A lost server agent ends the run as a lost load agent does (--agent-loss).
            c.stop_on_loss(stop.clone());
        }
        if repeat.repeats > 1 {
            session.set_option("repeats", repeat.repeats.into())?;
            session.set_option("order_seed", repeat.seed.into())?;
        }
        let mut precision = repeat.precision.as_ref().map(|p| UntilPrecision::new(levels.clone(), p, repeat.seed));
        let steps = match &repeat.precision {
            // The most it may run; the plan grows window by window.
            Some(p) => {
                session.set_steps(Vec::new())?;
                session.set_option("order_seed", repeat.seed.into())?;
                scalelab_drive::rounds::rounds(&levels, p.max_repeats, repeat.seed)
            }
            None => session.plan().steps.clone(),
        };
        // Progress (the live view, or a line per step) goes to stderr; stdout
        // gets the table once, at the end.
        if !out.json && !out.quiet {
            sayln!("run {run_id}: {label} ({workload}), store {}", store_path.display());
        }
        for n in session.profile_notices() {
            esayln!("{n}");
        }
        let mut view = LiveView::start(out.quiet, out.no_tui, label, &steps, stop.clone());
        let mut exported;
        let observer: &mut dyn crate::session::Observer = match &exporter {
            Some(x) => {
                exported = x.observe(&mut view);
                &mut exported
            }
            None => &mut view,
        };
        let swept = match (agents.as_mut(), precision.as_mut()) {
            (_, Some(order)) => {
                let mut local = scalelab_drive::Local(&driver);
                let mut arms = [super::windows::Arm::new(&mut session, &mut local, &opts)];
                let swept = super::windows::run(&mut arms, order, &stop, plan.max_failed_steps, observer);
                let p = repeat.precision.as_ref().expect("an order for --until-precision");
                let mut record = serde_json::Map::new();
                record.insert("target_pct".into(), p.target_pct.into());
                record.insert("min_repeats".into(), super::windows::PRECISION_MIN_REPEATS.into());
                record.insert("max_repeats".into(), p.max_repeats.into());
                if let Some(t) = p.max_time {
                    record.insert("max_time_s".into(), t.as_secs_f64().into());
                }
                record.insert("stopped".into(), order.stopped().into());
                let _ = session.set_option("precision", record.into());
                swept.into_iter().next().expect("one arm")
            }
            (Some(c), None) if plan.agents.as_ref().is_some_and(|g| !g.load.is_empty()) => {
                let shares = c.shares.clone();
                let mut note = || Some(("agent_steps".to_string(), serde_json::Value::Array(shares.lock().expect("not poisoned").clone())));
                session.sweep_with(&mut super::agents::Remote(c), &opts, plan.max_failed_steps, observer, &mut note)
            }
            (Some(c), None) => {
                let mut local = super::agents::Observed(scalelab_drive::Local(&driver), c);
                session.sweep_with(&mut local, &opts, plan.max_failed_steps, observer, &mut || None)
            }
            _ => session.sweep(&driver, &opts, plan.max_failed_steps, observer),
        };
        view.finish();
        if let Some(c) = agents.as_ref() {
            // Printed once the live view is gone.
            for (name, step, why) in &c.lost {
                esayln!("agent {name} lost at step {}: {}", step + 1, escape_control(why));
            }
        }
        let mut lost = agents.as_ref().map(|c| c.lost.clone()).unwrap_or_default();
        if let Some((name, step, why)) = agents.as_ref().and_then(super::agents::server_loss) {
            esayln!("{} lost at step {}: {}", escape_control(&name), step + 1, escape_control(&why));
            lost.push((name, step, why));
        }
        if let Some(c) = agents.as_ref() {
            // What the control channels cost, per agent (bench/agents_overhead).
            let _ = session.set_option("agent_control_bytes", super::agents::control_bytes(c));
        }
        if let Some(c) = agents.take() {
            let last = c.finish();
            session.keep_records(last);
        }
        session.stop_probes(&mut Silent);
        let profile_cost = session.profile_overhead().map(|o| o.summary());
        if let Some(line) = session.capture_summary() {
            esayln!("{line}: `scalelab show {run_id}` lists them");
        }
        // The clients' namespace goes first, then the specimen it led to.
        drop(client_net);
        drop(specimen);
        let (complete, outcome, code) =
            super::agents::outcome_after_loss(&lost, plan.agents.as_ref().map_or(AgentLoss::Abort, |g| g.loss), swept.verdict());
        let agent_lost = outcome.starts_with("agent lost");
        if let Some((index, e)) = &swept.store_error {
            let _ = session.finish(false, "store error");
            // The run had started and its earlier steps are stored: a failed run
            // (exit 1), not bad input (exit 2, which promises nothing was stored).
            return Err(anyhow::anyhow!(
                "run {run_id} stopped: saving step {} failed ({e}); its {index} earlier step(s) are kept (`scalelab show {run_id}`)",
                index + 1
            ));
        }
        let (store, _) = session.finish(complete, &outcome)?.expect("a sweep is recorded");
        let code = ExitCode::from(code);
        let SweepOutcome { end, failed_step, .. } = swept;
        let run: Run = super::show::load_run(&store, run_id)?;
        if let Some(x) = exporter {
            let d = scalelab_analyze::diagnose(&run);
            x.set_verdicts(
                d.verdicts.iter().map(|v| (v.concurrency, v.kind.name().to_string(), v.confidence.name().to_string())).collect(),
            );
            // Remote write's failures are the run's to tell, never fatal to it.
            if let Some(line) = x.finish() {
                esayln!("{line}");
                let _ = store.add_probe_note(run_id, "metrics", &line);
            }
        }
        if out.json {
            println!("{}", serde_json::to_string_pretty(&super::analysis::run_json_with_diagnosis(&run))?);
            if let Some(line) = &profile_cost {
                esayln!("{line}");
            }
        } else {
            if !out.quiet {
                sayln!();
            }
            let width = crate::term::width();
            say!("{}", table::run_table_width(&run, width));
            // --quiet: the step table and the outcome line only.
            if !out.quiet {
                if let Some(t) = table::telemetry_table_width(&run, width) {
                    say!("{t}");
                }
                if let Some(t) = scalelab_report::agents::agents_table(&run.plan.options) {
                    say!("{t}");
                }
                say!("{}", scalelab_report::fmt::wrap(&super::analysis::diagnosis_text(&run), width));
            }
            if let Some(line) = &profile_cost {
                sayln!("{line}");
            }
            sayln!("run {run_id} {outcome}; stored in {}", store_path.display());
        }
        let passed = super::analysis::check(&run, &plan.assertions);
        match end {
            SweepEnd::TargetFailed { step } => {
                esayln!("error: target failed at step {step} (nothing succeeded for {} step(s) in a row)", plan.max_failed_steps)
            }
            SweepEnd::Interrupted if agent_lost => {
                esayln!("error: run {run_id} {outcome}; it kept {} step(s) (the last one partial), marked incomplete", run.steps.len())
            }
            SweepEnd::Interrupted => esayln!("interrupted: run {run_id} kept {} finished step(s), marked incomplete", run.steps.len()),
            SweepEnd::EngineFailed { .. } => {
                esayln!("error: run {run_id} {outcome}; it kept {} finished step(s), marked incomplete", run.steps.len())
            }
            SweepEnd::Completed => {
                if let Some(why) = &failed_step {
                    esayln!("error: run {run_id} failed: {why}");
                }
            }
        }
        if !passed && code == ExitCode::SUCCESS {
            return Ok(ExitCode::from(1));
        }
        Ok(code)
    }
}
