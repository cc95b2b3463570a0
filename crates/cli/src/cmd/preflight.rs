//! `scalelab preflight`, and the same checks at the start of every sweep:
//! read the facts (`probe::preflight`), judge them (`analyze::preflight`),
//! print them (`report::preflight`); `--strict` refuses a warning.

use crate::args::PreflightArgs;
use crate::error::bad;
use scalelab_analyze::preflight::{judge, noise_pct, warnings};
use scalelab_core::preflight::{Check, PreflightPlan, Reading};
use scalelab_core::{parse_concurrency_list, Driver, Target, TargetKind};
use scalelab_drive::cpu;
use scalelab_drive::http::{HttpConfig, HttpDriver};
use scalelab_probe::preflight::{read, Known, PreflightInput};
use std::process::ExitCode;
use std::time::Duration;

/// What the checks need to know of the planned run.
pub struct Ask<'a> {
    /// What is known of the server: target, port, pid, version.
    pub known: Known<'a>,
    pub db_probe: Option<&'a str>,
    pub max_concurrency: u32,
    /// Open loop: `max_concurrency` is the in-flight cap (connections).
    pub open_loop: bool,
    pub keepalive: bool,
    pub threads: u32,
    pub no_pin: bool,
    /// `--client-net`'s spec, normalized.
    pub client_net: Option<String>,
    /// `--busy-poll` (any budget).
    pub busy_poll: bool,
}

/// The judged checks, with the noise estimate kept as a number for the
/// run's environment (`noise_pct`).
pub struct Judged {
    pub checks: Vec<Check>,
    /// `machine.noise`'s ±x % (None: not measured).
    pub noise_pct: Option<f64>,
}

/// Measures the machine's noise (~0.2 s of this thread, before anything
/// else is read), then reads and judges every check.
pub fn checks(ask: Ask) -> anyhow::Result<Judged> {
    let target = ask.known.target;
    let db = scalelab_probe::collect::for_target(Some(target), ask.db_probe).map_err(bad)?;
    let pin = scalelab_drive::engine::pin_plan(ask.threads, ask.no_pin);
    let client_pinned = !pin.is_empty();
    let client_cpus = if client_pinned { pin } else { cpu::allowed_cpu_list() };
    let plan = PreflightPlan {
        target: target.clone(),
        max_concurrency: ask.max_concurrency,
        open_loop: ask.open_loop,
        keepalive: ask.keepalive,
        client_cpus,
        client_pinned,
        client_net: ask.client_net,
        busy_poll: ask.busy_poll,
    };
    let roots = Default::default();
    let input = PreflightInput { known: ask.known, db: db.as_ref(), noise: Ok(scalelab_probe::preflight::noise::measure(&roots)) };
    let not_started = target.kind() == TargetKind::Specimen && input.known.server_pid.is_err();
    let mut facts = read(&roots, &input);
    if not_started {
        // The specimen is not running yet, but it will be this process's
        // child, on the CPUs it may use now: judge placement on those, as
        // every sweep does once it has started.
        facts.server_cpus = scalelab_probe::preflight::machine::allowed_cpus(&roots, std::process::id());
    }
    Ok(Judged { checks: judge(&facts, &plan), noise_pct: noise_pct(&facts) })
}

/// `--strict`: a warning refuses the run (exit 2), naming the checks.
pub fn gate(checks: &[Check], strict: bool) -> anyhow::Result<()> {
    let warned = warnings(checks);
    if strict && !warned.is_empty() {
        return Err(bad(format!(
            "--strict: the preflight warns on {}: fix them (`scalelab preflight` shows each figure and fix) or drop --strict",
            warned.join(", ")
        )));
    }
    Ok(())
}

/// Prints the warnings of a sweep's preflight on stderr, then (unless
/// `quiet`, or it was a warning already) the machine's noise: the one
/// line every run shows, since it says which differences can be seen.
pub fn warn_on_stderr(checks: &[Check], quiet: bool) {
    for line in scalelab_report::preflight::warning_lines(checks) {
        esayln!("{line}");
    }
    if let Some(line) = scalelab_report::preflight::noise_line(checks).filter(|_| !quiet) {
        esayln!("{line}");
    }
}

/// What the target says it is; unreachable is a reason, not an error.
fn server_version(target: &Target) -> Reading<String> {
    let timeout = Duration::from_secs(3);
    if target.kind() == TargetKind::Specimen {
        return Ok(format!("scalelab-specimen {}", scalelab_core::VERSION));
    }
    match target.kind().capabilities().driver {
        Some(Driver::Http) if target.kind() == TargetKind::H2c => {
            // h2c:// is http:// spoken as HTTP/2 from the first byte.
            let url = format!("http://{}", target.as_given().split_once("://").map_or("", |(_, rest)| rest));
            let driver = scalelab_drive::http2::H2Driver::new(&HttpConfig::get(&url, timeout), 1).map_err(|e| e.to_string())?;
            let p = driver.preflight().map_err(|f| format!("cannot reach {}: {}", target.redacted(), f.message))?;
            p.answer.server.ok_or_else(|| format!("{} sent no server header", target.redacted()))
        }
        Some(Driver::Http) => {
            // Any certificate: this only asks the server what it is.
            let config = HttpConfig { insecure: true, ..HttpConfig::get(target.as_given(), timeout) };
            let driver = HttpDriver::new(&config).map_err(|e| e.to_string())?;
            let p = driver.preflight().map_err(|f| format!("cannot reach {}: {}", target.redacted(), f.message))?;
            p.server.ok_or_else(|| format!("{} sent no Server header", target.redacted()))
        }
        Some(Driver::Sql) => {
            let url = scalelab_drive::sql::SqlUrl::parse(target.as_given())?;
            scalelab_drive::sql::inspect(&url, timeout)
                .map(|i| i.server)
                .map_err(|f| format!("cannot use {}: {}", target.redacted(), f.message))
        }
        Some(Driver::Redis) => {
            let url = scalelab_wire::resp::RedisUrl::parse(target.as_given())?;
            scalelab_drive::redis::inspect(&url, timeout).map_err(|f| format!("cannot use {}: {}", target.redacted(), f.message))
        }
        None => Err("not an HTTP or database target".into()),
    }
}

pub fn run(a: &PreflightArgs) -> anyhow::Result<ExitCode> {
    let concurrency = parse_concurrency_list(&a.concurrency).map_err(|e| bad(format!("--concurrency: {e}")))?;
    let target = match &a.target {
        Some(t) => Target::parse(t).map_err(|e| bad(e.to_string()))?,
        None => Target::specimen("scales"),
    };
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32));
    if threads == 0 || threads > 1024 {
        return Err(bad("--threads must be between 1 and 1024"));
    }
    // A sweep raises its soft open-file limit to the hard one: judge that.
    cpu::raise_open_files_limit();
    let server_pid = if target.kind() == TargetKind::Specimen && a.server_pid.is_none() {
        Err("the specimen starts with the sweep".to_string())
    } else {
        scalelab_probe::server_pid(Some(&target), None, a.server_pid)
    };
    let client_net = match &a.client_net {
        Some(text) => Some(scalelab_netem::NetSpec::parse(text).map_err(|e| bad(format!("--client-net: {e}")))?.to_string()),
        None => None,
    };
    let Judged { checks, .. } = checks(Ask {
        known: Known { target: &target, port: target.port(), server_pid, server_version: server_version(&target) },
        db_probe: a.db_probe.as_deref(),
        max_concurrency: concurrency.iter().copied().max().unwrap_or(1),
        open_loop: false,
        keepalive: !a.no_keepalive,
        threads,
        no_pin: a.no_pin,
        client_net,
        busy_poll: false,
    })?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&scalelab_report::preflight::json(&checks))?);
    } else {
        say!("{}", scalelab_report::preflight::text(&checks));
    }
    gate(&checks, a.strict)?;
    Ok(ExitCode::SUCCESS)
}
