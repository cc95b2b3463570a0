//! `scalelab sweep`: validate everything, reach the target once, then run
//! the steps, committing each to the store as it finishes.

use super::levels::{load_levels, profile_steps};
use super::prepared::{Common, Prepared};
use super::started::{begin, check_sampling, Execute, Started};
use super::windows::{Repeat, UntilPrecision};
use crate::args::{RepeatArgs, SweepArgs};
use crate::error::bad;
use crate::live::LiveView;
use crate::session::{Silent, SweepOutcome};
use crate::specimen_child::SpecimenChild;
use scalelab_core::{escape_control, parse_duration, Driver, OptionFamily, Run, RunKind, StepPlan, Target, TargetKind};
use scalelab_drive::http::{parse_url_file, HttpConfig, HttpDriver, RequestSpec, StatusMatch};
use scalelab_drive::SweepEnd;
use scalelab_report::table;
use scalelab_store::Store;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// Schedule defaults: short for the embedded demo (about 30 s in all),
/// published practice (5 s warm-up, 20 s window, 2 s pause) for real targets.
fn schedule(a: &SweepArgs, specimen: bool) -> anyhow::Result<(Duration, Duration, Duration, Duration)> {
    let d = |v: &Option<String>, name: &str, demo: &str, real: &str| -> anyhow::Result<Duration> {
        let text = v.clone().unwrap_or_else(|| if specimen { demo } else { real }.to_string());
        parse_duration(&text).map_err(|e| bad(format!("--{name}: {e}")))
    };
    let warmup = d(&a.warmup, "warmup", "1s", "5s")?;
    let window = d(&a.duration, "duration", "2s", "20s")?;
    let pause = d(&a.pause, "pause", "1s", "2s")?;
    let think = parse_duration(&a.think_time).map_err(|e| bad(format!("--think-time: {e}")))?;
    if window < Duration::from_millis(100) {
        return Err(bad("--duration must be at least 100ms: a shorter window measures noise"));
    }
    Ok((warmup, window, pause, think))
}

fn http_config(a: &SweepArgs, url: &str) -> anyhow::Result<HttpConfig> {
    let requests = match &a.url_file {
        Some(path) => {
            let text = read_url_file(path)?;
            parse_url_file(&path.display().to_string(), &text).map_err(|e| bad(e.to_string()))?
        }
        None => vec![RequestSpec { method: a.method.as_deref().unwrap_or("GET").to_ascii_uppercase(), url: url.to_string(), weight: 1 }],
    };
    let mut headers = Vec::new();
    for h in &a.headers {
        let (k, v) = h.split_once(':').ok_or_else(|| bad(format!("invalid header '{h}': use 'Name: value'")))?;
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    scalelab_drive::http::check_headers(&headers).map_err(|e| bad(e.to_string()))?;
    for r in &requests {
        scalelab_drive::http::check_method(&r.method).map_err(|e| bad(e.to_string()))?;
    }
    let body = match (&a.body, &a.body_file) {
        (Some(b), _) => Some(b.clone().into_bytes()),
        (None, Some(p)) => {
            Some(scalelab_probe::read::read_user_file(p, MAX_BODY_BYTES).map_err(|e| bad(format!("--body-file {}: {e}", p.display())))?)
        }
        (None, None) => None,
    };
    scalelab_drive::http::check_request_headers(&headers, body.as_deref()).map_err(|e| bad(e.to_string()))?;
    let timeout = parse_duration(&a.timeout).map_err(|e| bad(format!("--timeout: {e}")))?;
    if timeout.is_zero() {
        return Err(bad("--timeout must be above 0"));
    }
    Ok(HttpConfig {
        requests,
        headers,
        body,
        keepalive: !a.no_keepalive,
        timeout,
        connect_timeout: timeout.min(Duration::from_secs(5)),
        expect: StatusMatch::parse(&a.expect_status).map_err(|e| bad(e.to_string()))?,
        insecure: a.insecure,
        source_addrs: a.source_address.clone(),
    })
}

/// The largest `--body-file` read: it is held in memory and sent whole.
const MAX_BODY_BYTES: u64 = 64 << 20;

/// The largest `--url-file` read (about 100,000 URLs).
const MAX_URL_FILE_BYTES: u64 = 16 << 20;

/// `--url-file` as text: a regular file of bounded size (a device was read
/// until memory ran out, a fifo hung), in UTF-8.
fn read_url_file(path: &Path) -> anyhow::Result<String> {
    let fail = |e: String| bad(format!("--url-file {}: {e}", path.display()));
    let bytes = scalelab_probe::read::read_user_file(path, MAX_URL_FILE_BYTES).map_err(fail)?;
    String::from_utf8(bytes).map_err(|e| fail(format!("not UTF-8 text ({e})")))
}

/// The target of a URL file given without a positional target: the origin
/// (`scheme://host:port/`) of its URLs, which share one (the HTTP driver
/// refuses mixed hosts). Without it the run would be recorded as the
/// specimen's and observe the idle specimen instead of the server.
fn url_file_target(path: &Path) -> anyhow::Result<String> {
    let text = read_url_file(path)?;
    let requests = parse_url_file(&path.display().to_string(), &text).map_err(|e| bad(e.to_string()))?;
    let first = requests.first().ok_or_else(|| bad(format!("--url-file {}: no URL in the file", path.display())))?;
    let (scheme, rest) =
        first.url.split_once("://").ok_or_else(|| bad(format!("--url-file {}: '{}' is not a URL", path.display(), first.url)))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    // Credentials stay in the file's URLs (sent from there), not in the target's name.
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    Ok(format!("{}://{authority}/", scheme.to_ascii_lowercase()))
}

/// The specimen's CPU work per request.
fn specimen_work_us(a: &SweepArgs) -> u64 {
    a.work_us.unwrap_or(100)
}

/// Every option that acts on some kinds of target only, and whether the
/// user gave it; the kinds' [`OptionFamily`] tables say which apply where.
fn kind_options(a: &SweepArgs) -> [(&'static str, bool); 18] {
    [
        ("-H/--header", !a.headers.is_empty()),
        ("-X/--method", a.method.is_some()),
        ("--body", a.body.is_some()),
        ("--body-file", a.body_file.is_some()),
        ("--no-keepalive", a.no_keepalive),
        ("--url-file", a.url_file.is_some()),
        ("--insecure", a.insecure),
        ("--source-address", !a.source_address.is_empty()),
        ("--workload", a.workload.is_some()),
        ("--workload-file", a.workload_file.is_some()),
        ("--no-prepare", a.no_prepare),
        ("--pipeline", a.pipeline.is_some()),
        ("--keyspace", a.keyspace.is_some()),
        ("--value-size", a.value_size.is_some()),
        ("--specimen", a.specimen.is_some()),
        ("--work-us", a.work_us.is_some()),
        ("--workers", a.workers.is_some()),
        ("--fix", a.fix),
    ]
}

/// Options that do not apply to this kind of target are refused rather
/// than silently ignored: a user who gave them expected them to act.
fn refuse_options_that_do_not_apply(a: &SweepArgs, kind: TargetKind) -> anyhow::Result<()> {
    let given: Vec<&str> = kind_options(a).into_iter().filter(|(_, set)| *set).map(|(name, _)| name).collect();
    let wrong = kind.refused(&given);
    if !wrong.is_empty() {
        let (verb, them) = if wrong.len() == 1 { ("does", "it") } else { ("do", "them") };
        // What each refused option is for, family by family.
        let families: Vec<OptionFamily> =
            OptionFamily::ALL.into_iter().filter(|f| wrong.iter().any(|o| OptionFamily::of(o) == Some(*f))).collect();
        let fix = match families.as_slice() {
            [one] => format!("{} for {}", if wrong.len() == 1 { "it is" } else { "they are" }, one.for_what()),
            many => many
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let mine: Vec<&str> = wrong.iter().copied().filter(|o| OptionFamily::of(o) == Some(*f)).collect();
                    let verb = match (i, mine.len()) {
                        (0, 1) => " is",
                        (0, _) => " are",
                        _ => "",
                    };
                    format!("{}{verb} for {}", mine.join(", "), f.for_what())
                })
                .collect::<Vec<_>>()
                .join(", "),
        };
        return Err(bad(format!("{} {verb} not apply to {} ({fix}): drop {them}", wrong.join(", "), kind.capabilities().noun)));
    }
    if let Some(pid) = a.server_pid {
        if pid == 0 || !Path::new(&format!("/proc/{pid}")).exists() {
            return Err(bad(format!("--server-pid {pid}: no such process (`pgrep -a NAME` finds a server's pid)")));
        }
    }
    Ok(())
}

pub fn run(store_path: &Path, a: SweepArgs, r: RepeatArgs) -> anyhow::Result<ExitCode> {
    let repeat = Repeat::check(&a, &r)?;
    prepare_then(store_path, a, Sweep { repeat })
}

/// Runs the sweep's steps: in order, in shuffled rounds (`--repeats`),
/// until each level is precise enough (`--until-precision`), or
/// interleaved with a second target (`--versus`).
struct Sweep {
    repeat: Repeat,
}

/// Checks everything the user gave, prepares the target (specimen, HTTP or
/// SQL) and its preflight, opens the store, then hands over to `x`.
pub fn prepare_then<X: Execute>(store_path: &Path, mut a: SweepArgs, x: X) -> anyhow::Result<ExitCode> {
    // 1. Everything the user gave is checked before any load.
    if let (None, Some(path)) = (&a.target, &a.url_file) {
        a.target = Some(url_file_target(path)?);
    }
    let levels = load_levels(&a)?;
    let profile_steps = profile_steps(&a, levels.len())?;
    let specimen_mode = match &a.target {
        None => Some(
            a.specimen.as_deref().unwrap_or("scales").parse::<scalelab_specimen::Mode>().map_err(|e| bad(format!("--specimen: {e}")))?,
        ),
        Some(_) => None,
    };
    // Parsed once; a parse error is reported where the driver reported a bad URL
    // before (after the checks of the HTTP options), so the first error shown is unchanged.
    let target = a.target.as_deref().map(Target::parse);
    // A target that does not parse is refused later, as an HTTP URL.
    let kind = match &target {
        None => TargetKind::Specimen,
        Some(Ok(t)) => t.kind(),
        Some(Err(_)) => TargetKind::Http,
    };
    let sql = kind.capabilities().driver == Some(Driver::Sql);
    refuse_options_that_do_not_apply(&a, kind)?;
    super::agents::check(&a)?;
    let client_net = super::client_net::check(&a)?;
    if let Some(t) = &a.target {
        if !t.contains("://") {
            return Err(bad(format!(
                "invalid target '{}': give a URL such as http://127.0.0.1:8080/, or no target for the specimen",
                scalelab_core::redact_url(t)
            )));
        }
    }
    let (warmup, window, pause, think) = schedule(&a, specimen_mode.is_some())?;
    let assertions = super::analysis::parse_assertions(&a.asserts)?;
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1));
    if threads == 0 || threads > 1024 {
        return Err(bad("--threads must be between 1 and 1024"));
    }
    if a.client_slice_us != 0 && !(100..=100_000).contains(&a.client_slice_us) {
        return Err(bad("--client-slice-us must be 0 (the kernel's default) or 100 to 100000"));
    }
    let steps: Vec<StepPlan> = levels
        .iter()
        .map(|&(c, open_loop)| StepPlan {
            concurrency: c,
            warmup_s: warmup.as_secs_f64(),
            window_s: window.as_secs_f64(),
            pause_s: pause.as_secs_f64(),
            think_time_s: think.as_secs_f64(),
            open_loop,
        })
        .collect();
    if let Some(u) = &a.db_probe {
        scalelab_probe::collect::parse_url(u).map_err(bad)?;
    }
    check_sampling(&a)?;
    // Before the store or the target: every client needs a descriptor.
    // The connections each step may open (clients, or an open-loop step's pool).
    let concurrency: Vec<u32> = levels.iter().map(|l| l.0).collect();
    let probe_fds = super::fd_limit::check(concurrency.iter().copied().max().unwrap_or(1), threads)?;
    scalelab_probe::collect::set_root_fd_budget(probe_fds);
    if let Some(Ok(t)) = target.as_ref().filter(|_| sql) {
        let prepared = super::sql_sweep::prepare_sql(&a, t.as_given())?;
        let preflight = run_preflight(&a, t, &prepared, &concurrency, threads, client_net.as_ref())?;
        let client_net = super::client_net::up(client_net.as_ref(), t, None)?;
        let load = super::agents::Load::Sql(prepared.driver.config());
        let agents = super::agents::connect(&a, t, load, check_sampling(&a)?.as_millis() as u64)?;
        let store = Store::open(store_path)?;
        let common =
            Common { target: t.clone(), steps, threads, assertions, preflight, say_noise: true, client_net, agents, profile_steps };
        return x.execute(store, store_path, &a, common, prepared);
    }
    if let Some(Ok(t)) = target.as_ref().filter(|_| kind.capabilities().driver == Some(Driver::Redis)) {
        let prepared = super::redis_sweep::prepare_redis(&a, t.as_given())?;
        let preflight = run_preflight(&a, t, &prepared, &concurrency, threads, client_net.as_ref())?;
        let client_net = super::client_net::up(client_net.as_ref(), t, None)?;
        let load = super::agents::Load::Redis(prepared.driver.config());
        let agents = super::agents::connect(&a, t, load, check_sampling(&a)?.as_millis() as u64)?;
        let store = Store::open(store_path)?;
        let common =
            Common { target: t.clone(), steps, threads, assertions, preflight, say_noise: true, client_net, agents, profile_steps };
        return x.execute(store, store_path, &a, common, prepared);
    }
    // A placeholder URL validates the HTTP options before the specimen starts.
    http_config(&a, a.target.as_deref().unwrap_or("http://127.0.0.1/"))?;
    let target = match (target, specimen_mode) {
        (Some(parsed), _) => parsed.map_err(|e| bad(e.to_string()))?,
        (None, mode) => Target::specimen(mode.map_or("scales", |m| m.name())),
    };
    // 2. The target: start the specimen, or check the URL parses and answers;
    // then the preflight (docs/preflight.md), which --strict turns into a gate.
    let prepared = prepare_http(&a, specimen_mode)?;
    let preflight = run_preflight(&a, &target, &prepared, &concurrency, threads, client_net.as_ref())?;
    let client_net = super::client_net::up(client_net.as_ref(), &target, prepared.specimen.as_ref().map(|s| s.addr))?;
    let config = http_config(&a, a.target.as_deref().unwrap_or("http://127.0.0.1/"))?;
    let agents = super::agents::connect(&a, &target, super::agents::Load::Http(&config), check_sampling(&a)?.as_millis() as u64)?;
    let common = Common { target, steps, threads, assertions, preflight, say_noise: true, client_net, agents, profile_steps };
    // 3. Only now, with every input known good, the store is opened (or
    // created), and it must be usable before load starts.
    let store = Store::open(store_path)?;
    x.execute(store, store_path, &a, common, prepared)
}

/// Starts the specimen if asked, builds the HTTP driver and sends the preflight request.
fn prepare_http(a: &SweepArgs, specimen_mode: Option<scalelab_specimen::Mode>) -> anyhow::Result<Prepared<HttpDriver>> {
    let specimen = match specimen_mode {
        Some(mode) => Some(SpecimenChild::for_sweep(mode, specimen_work_us(a), a.workers, a.fix)?),
        None => None,
    };
    let (url, target_name) = match (&specimen, &a.target) {
        (Some(s), _) => (format!("http://{}/", s.addr), format!("specimen:{}", specimen_mode.map_or("scales", |m| m.name()))),
        // Credentials in the URL are sent (Basic auth) but never recorded or shown.
        (None, Some(t)) => (t.clone(), scalelab_core::redact_url(t)),
        (None, None) => unreachable!("no target means the specimen"),
    };
    let config = http_config(a, &url)?;
    let driver = Arc::new(HttpDriver::new(&config).map_err(|e| bad(e.to_string()))?);
    let preflight = driver.preflight().map_err(|f| bad(format!("cannot reach {target_name}: {}", f.message)))?;
    if !preflight.accepted {
        esayln!(
            "warning: {} answered status {} to the first request, which --expect-status {} does not accept: such responses count as errors",
            target_name,
            preflight.status,
            a.expect_status
        );
    }
    // The specimen's address is a free port picked per run: not part of the
    // workload (two specimen runs compared do not differ by it).
    let shown = |u: &str| match &specimen {
        Some(s) => u.replacen(&format!("http://{}", s.addr), "", 1),
        None => scalelab_core::redact_url(u),
    };
    let workload = config
        .requests
        .iter()
        .map(|r| {
            format!("{} {}{}", r.method, shown(&r.url), if config.requests.len() > 1 { format!(" x{}", r.weight) } else { String::new() })
        })
        .collect::<Vec<_>>()
        .join(", ");
    let mut options = serde_json::Map::new();
    options.insert("keepalive".into(), (!a.no_keepalive).into());
    options.insert("timeout_s".into(), config.timeout.as_secs_f64().into());
    options.insert("expect_status".into(), a.expect_status.clone().into());
    if let Some(m) = specimen_mode {
        options.insert("specimen_mode".into(), m.name().into());
        options.insert("specimen_work_us".into(), specimen_work_us(a).into());
        if matches!(m, scalelab_specimen::Mode::Pool | scalelab_specimen::Mode::Herd) {
            options.insert("specimen_workers".into(), a.workers.unwrap_or(scalelab_specimen::DEFAULT_WORKERS).into());
        }
        if a.fix {
            options.insert("specimen_fix".into(), true.into());
        }
    }
    Ok(Prepared { driver, target_name, workload, server: preflight.server, options, specimen, sql_url: None })
}

/// The preflight checks of this run; with --strict a warning ends the sweep
/// here, before the store or any load (their warnings are printed once the
/// store is open, so an unusable store is still one line).
fn run_preflight<D>(
    a: &SweepArgs,
    target: &Target,
    prepared: &Prepared<D>,
    concurrency: &[u32],
    threads: u32,
    client_net: Option<&scalelab_netem::NetSpec>,
) -> anyhow::Result<super::preflight::Judged> {
    let specimen = prepared.specimen.as_ref();
    let known = scalelab_probe::preflight::Known {
        target,
        port: specimen.map(|s| s.addr.port()).or(target.port()),
        // With a server agent the server is observed, but on its host: these checks read this machine.
        server_pid: match &a.server_agent {
            Some(_) if a.server_pid.is_none() && specimen.is_none() => {
                Err("observed on its host by the server agent, whose limits this check cannot read".to_string())
            }
            _ => scalelab_probe::server_pid(Some(target), specimen.map(|s| s.pid()), a.server_pid),
        },
        server_version: prepared.server.clone().ok_or_else(|| format!("{} did not say what it is", prepared.target_name)),
    };
    let checks = super::preflight::checks(super::preflight::Ask {
        known,
        db_probe: a.db_probe.as_deref(),
        max_concurrency: concurrency.iter().copied().max().unwrap_or(1),
        open_loop: a.rate.is_some(),
        keepalive: !a.no_keepalive,
        threads,
        no_pin: a.no_pin,
        client_net: client_net.map(|n| n.to_string()),
    })?;
    if a.strict && (a.profile || a.profile_steps.is_some()) {
        // --strict: a run asked for profiles that perf cannot take is refused before anything starts.
        let perf = scalelab_probe::profile::ProfileConfig::new(0).perf;
        scalelab_probe::profile::check::perf_found(&perf).map_err(|why| bad(format!("--strict: --profile cannot work: {why}")))?;
    }
    super::preflight::gate(&checks.checks, a.strict)?;
    Ok(checks)
}

impl Execute for Sweep {
    /// Runs the sweep on a prepared target, committing each step as it finishes,
    /// then prints the table (or JSON), the analysis and the assertions.
    fn execute<D: scalelab_drive::Driver>(
        self,
        store: Store,
        store_path: &Path,
        a: &SweepArgs,
        mut common: Common,
        prepared: Prepared<D>,
    ) -> anyhow::Result<ExitCode> {
        let repeat = self.repeat;
        if let Some(v) = repeat.versus.clone() {
            // The second target is checked and prepared as the first was, then both run.
            let (mut a_args, mut b_args) = (a.clone(), v.args_for_b(a));
            // Two specimens both read `specimen:scales` by default: their labels say what differs.
            for args in [&mut a_args, &mut b_args] {
                if args.target.is_none() && args.label.is_none() {
                    let mode = args.specimen.clone().unwrap_or_else(|| "scales".to_string());
                    args.label = Some(format!("specimen:{mode} work-us={}", specimen_work_us(args)));
                }
            }
            let first = super::versus::First { store, args: a_args, common, prepared };
            return prepare_then(store_path, b_args, super::versus::Second { first, repeat });
        }
        let levels = common.steps.clone();
        if repeat.repeats > 1 {
            common.steps = scalelab_drive::rounds::rounds(&levels, repeat.repeats, repeat.seed);
        }
        let assertions = common.assertions.clone();
        let Started { mut session, driver, specimen, engine: opts, run_id, label, workload, stop, client_net, mut agents } =
            begin(store, a, common, prepared, RunKind::Sweep)?;
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
        if !a.json && !a.quiet {
            sayln!("run {run_id}: {label} ({workload}), store {}", store_path.display());
        }
        for n in session.profile_notices() {
            esayln!("{n}");
        }
        let mut view = LiveView::start(a.quiet, a.no_tui, label, &steps, stop.clone());
        let swept = match (agents.as_mut(), precision.as_mut()) {
            (_, Some(order)) => {
                let mut local = scalelab_drive::Local(&driver);
                let mut arms = [super::windows::Arm::new(&mut session, &mut local, &opts)];
                let swept = super::windows::run(&mut arms, order, &stop, a.max_failed_steps, &mut view);
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
            (Some(c), None) if !a.agents.is_empty() => {
                let shares = c.shares.clone();
                let mut note = || Some(("agent_steps".to_string(), serde_json::Value::Array(shares.lock().expect("not poisoned").clone())));
                session.sweep_with(&mut super::agents::Remote(c), &opts, a.max_failed_steps, &mut view, &mut note)
            }
            (Some(c), None) => {
                let mut local = super::agents::Observed(scalelab_drive::Local(&driver), c);
                session.sweep_with(&mut local, &opts, a.max_failed_steps, &mut view, &mut || None)
            }
            _ => session.sweep(&driver, &opts, a.max_failed_steps, &mut view),
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
        // The clients' namespace goes first, then the specimen it led to.
        drop(client_net);
        drop(specimen);
        let (complete, outcome, code) = super::agents::outcome_after_loss(&lost, a.agent_loss, swept.verdict());
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
        if a.json {
            println!("{}", serde_json::to_string_pretty(&super::analysis::run_json_with_diagnosis(&run))?);
            if let Some(line) = &profile_cost {
                esayln!("{line}");
            }
        } else {
            if !a.quiet {
                sayln!();
            }
            let width = crate::term::width();
            say!("{}", table::run_table_width(&run, width));
            // --quiet: the step table and the outcome line only.
            if !a.quiet {
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
        let passed = super::analysis::check(&run, &assertions);
        match end {
            SweepEnd::TargetFailed { step } => {
                esayln!("error: target failed at step {step} (nothing succeeded for {} step(s) in a row)", a.max_failed_steps)
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

#[cfg(test)]
mod tests {
    use super::{kind_options, refuse_options_that_do_not_apply};
    use crate::args::{Cli, Command};
    use clap::Parser;
    use scalelab_core::{OptionFamily, TargetKind};

    fn sweep_args(extra: &[&str]) -> crate::args::SweepArgs {
        let cli = Cli::try_parse_from([&["scalelab", "sweep"][..], extra].concat()).unwrap();
        let Command::Sweep(s) = cli.command else { panic!("not a sweep") };
        s.sweep
    }

    #[test]
    fn every_kind_option_is_in_one_family_and_every_family_option_is_checked() {
        let checked: Vec<&str> = kind_options(&sweep_args(&[])).iter().map(|(name, _)| *name).collect();
        let families: Vec<&str> = OptionFamily::ALL.iter().flat_map(|f| f.options().iter().copied()).collect();
        assert_eq!(checked, families);
        // Given all at once, each kind refuses exactly the families it does not take.
        let all = sweep_args(&[
            "-H",
            "X: y",
            "-X",
            "POST",
            "--body",
            "b",
            "--no-keepalive",
            "--insecure",
            "--source-address",
            "127.0.0.2",
            "--workload",
            "point-select",
            "--no-prepare",
            "--specimen",
            "pool",
            "--work-us",
            "5",
            "--workers",
            "2",
            "--fix",
        ]);
        let given: Vec<&str> = kind_options(&all).into_iter().filter(|(_, set)| *set).map(|(n, _)| n).collect();
        assert_eq!(given.len(), 12, "{given:?}");
        for kind in TargetKind::ALL {
            let refused = kind.refused(&given);
            let takes = kind.capabilities().options;
            assert!(refused.iter().all(|o| !takes.contains(&OptionFamily::of(o).unwrap())), "{kind:?}");
            assert_eq!(refused.len(), given.iter().filter(|o| !takes.contains(&OptionFamily::of(o).unwrap())).count());
        }
        let err = refuse_options_that_do_not_apply(&all, TargetKind::Postgres).unwrap_err().to_string();
        assert_eq!(
            err,
            "-H/--header, -X/--method, --body, --no-keepalive, --insecure, --source-address, --specimen, --work-us, --workers, --fix do not apply to a SQL target (-H/--header, -X/--method, --body, --no-keepalive, --insecure, --source-address are for HTTP targets, --specimen, --work-us, --workers, --fix for a sweep without a target (the specimen)): drop them"
        );
        let one = sweep_args(&["--workload", "point-select"]);
        assert_eq!(
            refuse_options_that_do_not_apply(&one, TargetKind::Specimen).unwrap_err().to_string(),
            "--workload does not apply to the specimen (no target) (it is for SQL and Redis targets): drop it"
        );
    }
}
