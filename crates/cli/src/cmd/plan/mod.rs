//! A sweep's arguments, parsed and checked once into a typed [`SweepPlan`]:
//! the target, the load (HTTP request set, SQL workload, Redis commands),
//! the schedule, the client placement, the probes, the agents and the
//! client network. Everything below `cmd/sweep.rs` gets the plan, never the
//! argument struct, so an option is read in one place and a bad one is
//! refused before anything starts (one line, exit 2, nothing created).

mod load;

use super::levels::{load_levels, profile_steps};
use crate::args::{AgentLoss, SweepArgs};
use crate::error::bad;
use load::{http_config, http_version, redis_config, sql_plan, url_file_target};
use scalelab_analyze::Assertion;
use scalelab_core::{parse_duration, Driver, OptionFamily, StepPlan, Target, TargetKind, MAX_CONCURRENCY};
use scalelab_drive::http::HttpConfig;
use scalelab_drive::http2::HttpVersion;
use scalelab_drive::redis::RedisConfig;
use scalelab_drive::sql::workload::Workload;
use scalelab_drive::sql::SqlUrl;
use scalelab_netem::NetSpec;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

/// Everything a sweep (or a capacity search) was asked to do, checked.
pub struct SweepPlan {
    /// The target, parsed once (`specimen:MODE` when none was given).
    pub target: Target,
    /// The specimen to start when no target was given.
    pub specimen: Option<SpecimenPlan>,
    /// What each client sends.
    pub load: LoadPlan,
    /// The steps in their given order (levels, warm-up, window, pause).
    pub steps: Vec<StepPlan>,
    /// `--profile` or `--profile-steps`: perf per step.
    pub profile: bool,
    /// `--profile-steps`: the steps profiled (0-based); None: every step.
    pub profile_steps: Option<BTreeSet<usize>>,
    pub placement: Placement,
    pub probes: ProbePlan,
    /// `--agent` / `--server-agent`; None: the load runs here.
    pub agents: Option<AgentPlan>,
    /// `--client-net`.
    pub client_net: Option<NetSpec>,
    pub output: Output,
    /// `--metrics-listen`, `--remote-write`.
    pub metrics: crate::exporter::MetricsPlan,
    /// `--trigger` and `--max-captures`.
    pub triggers: Vec<scalelab_analyze::trigger::Trigger>,
    pub max_captures: u32,
    pub assertions: Vec<Assertion>,
    /// `--strict`: a preflight warning refuses the run.
    pub strict: bool,
    /// End the run after this many steps in a row where nothing succeeded.
    pub max_failed_steps: u32,
}

/// The built-in specimen to start (no target given).
#[derive(Clone, Copy, Debug)]
pub struct SpecimenPlan {
    pub mode: scalelab_specimen::Mode,
    /// CPU work per request, µs.
    pub work_us: u64,
    /// Pool and herd modes: the serving threads (None: the specimen's default).
    pub workers: Option<usize>,
    /// Herd mode: EPOLLEXCLUSIVE.
    pub fix: bool,
}

/// What the clients send, per kind of target.
pub enum LoadPlan {
    /// HTTP, and the specimen (whose URL is set once it has started).
    Http {
        config: HttpConfig,
        /// `--expect-status` as given, for messages.
        expect_status: String,
        /// `--http` (auto when not given; an h2c:// target is HTTP/2, and
        /// auto is HTTP/1.1 with --no-keepalive, which HTTP/2 does not serve): `cmd/http2_sweep.rs` settles it, asking an
        /// https:// server by ALPN under auto.
        version: HttpVersion,
        /// `--streams`: clients (HTTP/2 streams) per connection, 1 for
        /// HTTP/1.1; the steps' concurrency is already connections x streams.
        streams: u32,
    },
    Sql(SqlPlan),
    Redis(RedisConfig),
}

/// A SQL target's load as far as it is known before connecting: a built-in
/// workload is shaped by the dataset the server holds.
pub struct SqlPlan {
    pub url: SqlUrl,
    /// `--workload`.
    pub builtin: Option<String>,
    /// `--workload-file`, parsed.
    pub file: Option<Workload>,
    /// Prepared statements (not `--no-prepare`).
    pub prepare: bool,
    /// Connect and preflight timeout.
    pub timeout: Duration,
}

/// Where the client threads run.
#[derive(Clone, Copy, Debug)]
pub struct Placement {
    /// Client threads (event loops): given, or one per core.
    pub threads: u32,
    /// `--threads` as given (agents choose their own default).
    pub threads_given: Option<u32>,
    pub no_pin: bool,
    /// `--client-slice-us` (0: the kernel's).
    pub client_slice_us: u64,
    /// `--busy-poll`: how long a client thread polls after a finished call
    /// (`Duration::MAX`: the whole window); None: it sleeps.
    pub busy_poll: Option<Duration>,
}

/// How the server and the machine are observed.
#[derive(Clone, Debug)]
pub struct ProbePlan {
    /// `--server-pid`, checked to exist.
    pub server_pid: Option<u32>,
    pub sample_interval: Duration,
    /// Thread-state samples per second (0: off).
    pub thread_hz: f64,
    /// `--db-probe`: as given (sent to a server agent) and parsed.
    pub db_probe: Option<(String, SqlUrl)>,
}

/// The agents to reach, checked.
pub struct AgentPlan {
    /// Load agents (`--agent`).
    pub load: Vec<String>,
    /// `--server-agent`.
    pub server: Option<String>,
    /// Token, agent command, ssh options.
    pub reach: scalelab_agent::Reach,
    pub loss: AgentLoss,
}

/// What is printed, and how.
#[derive(Clone, Debug)]
pub struct Output {
    pub json: bool,
    pub quiet: bool,
    pub no_tui: bool,
    /// `--label`; None: the target's name.
    pub label: Option<String>,
}

impl SweepPlan {
    /// Parses and checks every argument, in the order a user fixes them:
    /// the levels, the target and which options apply to it, agents and
    /// client network, schedule, placement, probes, then the load.
    pub fn from_args(mut a: SweepArgs) -> anyhow::Result<SweepPlan> {
        if let (None, Some(path)) = (&a.target, &a.url_file) {
            a.target = Some(url_file_target(path)?);
        }
        let levels = load_levels(&a)?;
        let profile_steps = profile_steps(&a, levels.len())?;
        let specimen_mode = match &a.target {
            None => Some(
                a.specimen
                    .as_deref()
                    .unwrap_or("scales")
                    .parse::<scalelab_specimen::Mode>()
                    .map_err(|e| bad(format!("--specimen: {e}")))?,
            ),
            Some(_) => None,
        };
        // A parse error is reported after the HTTP options are checked (a
        // target that does not parse is refused as an HTTP URL).
        let target = a.target.as_deref().map(Target::parse);
        let kind = match &target {
            None => TargetKind::Specimen,
            Some(Ok(t)) => t.kind(),
            Some(Err(_)) => TargetKind::Http,
        };
        refuse_options_that_do_not_apply(&a, kind)?;
        let (version, streams) = http_version(&a, kind)?;
        let agents = agent_plan(&a)?;
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
        let busy_poll = match a.busy_poll.as_deref() {
            None => None,
            Some("window") => Some(Duration::MAX),
            Some(us) => match us.parse::<u64>() {
                Ok(n) if (1..=1_000_000).contains(&n) => Some(Duration::from_micros(n)),
                _ => {
                    return Err(bad(format!(
                        "--busy-poll={us}: give microseconds from 1 to 1000000 (--busy-poll=50), or no value to poll the whole window"
                    )))
                }
            },
        };
        // HTTP/2: -c counts connections, each with `streams` clients (an
        // open loop's --max-in-flight is already requests in flight).
        if levels.iter().any(|&(c, open)| open.is_none() && u64::from(c) * u64::from(streams) > u64::from(MAX_CONCURRENCY)) {
            return Err(bad(format!("-c x --streams must stay at most {MAX_CONCURRENCY} streams in flight per step")));
        }
        let steps = levels
            .iter()
            .map(|&(c, open_loop)| StepPlan {
                concurrency: if open_loop.is_none() { c * streams } else { c },
                warmup_s: warmup.as_secs_f64(),
                window_s: window.as_secs_f64(),
                pause_s: pause.as_secs_f64(),
                think_time_s: think.as_secs_f64(),
                open_loop,
            })
            .collect();
        let db_probe = match &a.db_probe {
            Some(u) => Some((u.clone(), scalelab_probe::collect::parse_url(u).map_err(bad)?)),
            None => None,
        };
        let probes = ProbePlan { server_pid: a.server_pid, sample_interval: sampling(&a)?, thread_hz: a.thread_sample_hz, db_probe };
        let (target, specimen, load) = match (target, specimen_mode) {
            (Some(Ok(t)), _) if kind.capabilities().driver == Some(Driver::Sql) => {
                let load = LoadPlan::Sql(sql_plan(&a, &t)?);
                (t, None, load)
            }
            (Some(Ok(t)), _) if kind.capabilities().driver == Some(Driver::Redis) => {
                let load = LoadPlan::Redis(redis_config(&a, &t)?);
                (t, None, load)
            }
            (target, mode) => {
                // The specimen's URL is known once it has started: a placeholder checks the options.
                let mut config = http_config(&a, a.target.as_deref().unwrap_or("http://127.0.0.1/"))?;
                if kind == TargetKind::H2c {
                    // h2c:// is http:// spoken as HTTP/2 from the first byte.
                    for r in &mut config.requests {
                        if r.url.get(..6).is_some_and(|s| s.eq_ignore_ascii_case("h2c://")) {
                            r.url = format!("http://{}", &r.url[6..]);
                        }
                    }
                }
                let load = LoadPlan::Http { config, expect_status: a.expect_status.clone(), version, streams };
                match (target, mode) {
                    (Some(parsed), _) => (parsed.map_err(|e| bad(e.to_string()))?, None, load),
                    (None, mode) => {
                        let mode = mode.unwrap_or(scalelab_specimen::Mode::Scales);
                        let specimen = SpecimenPlan { mode, work_us: specimen_work_us(&a), workers: a.workers, fix: a.fix };
                        (Target::specimen(mode.name()), Some(specimen), load)
                    }
                }
            }
        };
        let metrics = crate::exporter::MetricsPlan::parse(&a.metrics).map_err(bad)?;
        // Whether the server's process is found is known only at the start: its figures are checked then.
        let triggers = crate::trigger::parse(&a.triggers.triggers, a.triggers.max_captures, true, true).map_err(bad)?;
        Ok(SweepPlan {
            target,
            specimen,
            load,
            steps,
            profile: a.profile || a.profile_steps.is_some(),
            profile_steps,
            placement: Placement { threads, threads_given: a.threads, no_pin: a.no_pin, client_slice_us: a.client_slice_us, busy_poll },
            probes,
            agents,
            client_net,
            output: Output { json: a.json, quiet: a.quiet, no_tui: a.no_tui, label: a.label },
            metrics,
            triggers,
            max_captures: a.triggers.max_captures,
            assertions,
            strict: a.strict,
            max_failed_steps: a.max_failed_steps,
        })
    }

    /// The most clients (or connections) any step opens.
    pub fn max_concurrency(&self) -> u32 {
        self.steps.iter().map(|s| s.concurrency).max().unwrap_or(1)
    }

    /// Whether the steps offer rates (open loop) rather than run clients.
    pub fn open_loop(&self) -> bool {
        self.steps.iter().any(|s| s.open_loop.is_some())
    }
}

/// Whether the sweep uses agents at all.
pub fn agents_wanted(a: &SweepArgs) -> bool {
    !a.agents.is_empty() || a.server_agent.is_some()
}

/// The agent options, checked before anything is created (the token file
/// read): None without agents.
fn agent_plan(a: &SweepArgs) -> anyhow::Result<Option<AgentPlan>> {
    if !agents_wanted(a) {
        let given = [
            (a.agent_token_file.is_some(), "--agent-token-file"),
            (a.agent_command.is_some(), "--agent-command"),
            (a.agent_loss != AgentLoss::Abort, "--agent-loss"),
        ];
        if let Some((_, name)) = given.iter().find(|(g, _)| *g) {
            return Err(bad(format!("{name} applies with --agent or --server-agent: give those too, or drop it")));
        }
        return Ok(None);
    }
    if a.target.is_none() {
        return Err(bad("--agent and --server-agent need a target URL the agents can reach (the specimen runs on this machine)"));
    }
    if a.client_net.is_some() || !a.source_address.is_empty() {
        return Err(bad("--client-net and --source-address shape this machine's clients: drop them with --agent"));
    }
    if a.busy_poll.is_some() && !a.agents.is_empty() {
        return Err(bad(
            "--busy-poll applies to this machine's client threads; load agents sleep while they wait: drop --busy-poll or --agent",
        ));
    }
    if a.client_slice_us != 0 && !a.agents.is_empty() {
        return Err(bad(
            "--client-slice-us applies to this machine's client threads; load agents keep the kernel's slice: drop --client-slice-us or --agent",
        ));
    }
    let mut tcp = false;
    for name in a.agents.iter().chain(&a.server_agent) {
        tcp |= matches!(scalelab_agent::AgentAddr::parse(name).map_err(bad)?, scalelab_agent::AgentAddr::Tcp { .. });
    }
    if tcp && a.agent_token_file.is_none() {
        return Err(bad("a tcp:// agent needs --agent-token-file (the token it was started with)"));
    }
    let token = match &a.agent_token_file {
        Some(f) => Some(scalelab_agent::auth::read_token(f).map_err(|e| bad(format!("--agent-token-file: {e}")))?),
        None => None,
    };
    let reach = scalelab_agent::Reach {
        token,
        agent_command: a.agent_command.clone(),
        ssh_options: a.ssh_options.clone(),
        protocol: scalelab_agent::PROTOCOL,
    };
    Ok(Some(AgentPlan { load: a.agents.clone(), server: a.server_agent.clone(), reach, loss: a.agent_loss }))
}

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

/// The sample interval and thread-sampling rate, or bad input.
fn sampling(a: &SweepArgs) -> anyhow::Result<Duration> {
    let sample_interval = parse_duration(&a.sample_interval).map_err(|e| bad(format!("--sample-interval: {e}")))?;
    if sample_interval < Duration::from_millis(100) || !(0.0..=1000.0).contains(&a.thread_sample_hz) {
        return Err(bad("--sample-interval must be at least 100ms and --thread-sample-hz between 0 and 1000"));
    }
    Ok(sample_interval)
}

/// The specimen's CPU work per request.
pub fn specimen_work_us(a: &SweepArgs) -> u64 {
    a.work_us.unwrap_or(100)
}

/// Every option that acts on some kinds of target only, and whether the
/// user gave it; the kinds' [`OptionFamily`] tables say which apply where.
fn kind_options(a: &SweepArgs) -> [(&'static str, bool); 20] {
    [
        ("-H/--header", !a.headers.is_empty()),
        ("-X/--method", a.method.is_some()),
        ("--body", a.body.is_some()),
        ("--body-file", a.body_file.is_some()),
        ("--no-keepalive", a.no_keepalive),
        ("--url-file", a.url_file.is_some()),
        ("--insecure", a.insecure),
        ("--source-address", !a.source_address.is_empty()),
        ("--http", a.http.is_some()),
        ("--streams", a.streams.is_some()),
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

#[cfg(test)]
mod tests {
    use super::{kind_options, refuse_options_that_do_not_apply, url_file_target, SweepPlan};
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

    #[test]
    fn a_plan_holds_what_was_asked_in_typed_form() {
        let p = SweepPlan::from_args(sweep_args(&["-c", "1,4", "-d", "300ms", "--specimen", "pool", "--workers", "3", "-t", "1"])).unwrap();
        assert_eq!(p.target.as_given(), "specimen:pool");
        let s = p.specimen.expect("a specimen to start");
        assert_eq!((s.mode, s.work_us, s.workers, s.fix), (scalelab_specimen::Mode::Pool, 100, Some(3), false));
        assert_eq!(p.steps.iter().map(|s| s.concurrency).collect::<Vec<_>>(), [1, 4]);
        assert_eq!((p.steps[0].window_s, p.steps[0].warmup_s), (0.3, 1.0));
        assert_eq!((p.placement.threads, p.placement.threads_given), (1, Some(1)));
        assert!(matches!(p.load, super::LoadPlan::Http { .. }));
        assert_eq!(p.max_concurrency(), 4);
        assert!(!p.open_loop());
        let p = SweepPlan::from_args(sweep_args(&["redis://127.0.0.1:1/", "--workload", "set", "--pipeline", "4"])).unwrap();
        let super::LoadPlan::Redis(c) = &p.load else { panic!("a Redis load") };
        assert_eq!((c.pipeline, c.keyspace, c.value_size), (4, 10_000, 32));
        assert_eq!(p.steps[0].window_s, 20.0);
        let err = SweepPlan::from_args(sweep_args(&["redis://127.0.0.1:1/", "--pipeline", "0"])).err().unwrap();
        assert_eq!(err.to_string(), "--pipeline must be 1 to 10000 commands per round trip");
        let err = SweepPlan::from_args(sweep_args(&["postgres://u@127.0.0.1:1/db"])).err().unwrap();
        assert!(err.to_string().starts_with("a SQL target needs --workload NAME"), "{err}");
    }

    #[test]
    fn the_http_version_and_streams_are_planned_and_checked_once() {
        use scalelab_drive::http2::HttpVersion;
        let plan = |args: &[&str]| SweepPlan::from_args(sweep_args(args));
        let err = |args: &[&str]| plan(args).err().expect("refused").to_string();
        let p = plan(&["h2c://127.0.0.1:1/x?y", "-c", "1,4", "--streams", "4"]).unwrap();
        let super::LoadPlan::Http { config, version, streams, .. } = &p.load else { panic!("an HTTP load") };
        assert_eq!((*version, *streams, config.requests[0].url.as_str()), (HttpVersion::Http2, 4, "http://127.0.0.1:1/x?y"));
        assert_eq!(p.steps.iter().map(|s| s.concurrency).collect::<Vec<_>>(), [4, 16], "connections x streams");
        // An open loop's in-flight bound is requests already: not multiplied.
        let p = plan(&["http://127.0.0.1:1/", "--http", "2", "--streams", "8", "--rate", "100", "--max-in-flight", "16"]).unwrap();
        assert_eq!((p.steps[0].concurrency, p.steps[0].open_loop.unwrap().max_in_flight), (16, 16));
        let version_of = |args: &[&str]| match plan(args).unwrap().load {
            super::LoadPlan::Http { version, .. } => version,
            _ => panic!("an HTTP load"),
        };
        assert_eq!(version_of(&["https://127.0.0.1:1/"]), HttpVersion::Auto);
        assert_eq!(version_of(&["https://127.0.0.1:1/", "--no-keepalive"]), HttpVersion::Http11, "a connection per request is HTTP/1.1");
        assert_eq!(version_of(&["http://127.0.0.1:1/", "--http", "1.1", "--streams", "1"]), HttpVersion::Http11);
        assert_eq!(
            err(&["http://127.0.0.1:1/", "--streams", "4"]),
            "--streams needs HTTP/2, which an http:// target speaks only when asked: give --http 2 (h2c, prior knowledge) or an h2c:// URL"
        );
        assert_eq!(
            err(&["https://127.0.0.1:1/", "--http", "1.1", "--streams", "2"]),
            "--streams needs HTTP/2: drop it, or drop --http 1.1"
        );
        assert_eq!(
            err(&["h2c://127.0.0.1:1/", "--http", "1.1"]),
            "--http 1.1 does not apply to an h2c:// target (HTTP/2 by prior knowledge): give its http:// URL"
        );
        assert_eq!(err(&["http://127.0.0.1:1/", "--http", "3"]), "--http '3': give 1.1, 2 or auto");
        assert_eq!(err(&["http://127.0.0.1:1/", "--http", "2", "--streams", "0"]), "--streams must be 1 to 1000 streams per connection");
        assert_eq!(
            err(&["h2c://127.0.0.1:1/", "--no-keepalive"]),
            "--no-keepalive does not apply to HTTP/2 (its connections stay open and carry the streams): drop it, or give --http 1.1"
        );
        assert_eq!(
            err(&["h2c://127.0.0.1:1/", "-c", "1000", "--streams", "1000"]),
            "-c x --streams must stay at most 100000 streams in flight per step"
        );
        assert_eq!(
            err(&["--streams", "2"]),
            "--streams does not apply to the specimen (no target) (it is for http://, https:// and h2c:// targets): drop it"
        );
        assert_eq!(
            err(&["redis://127.0.0.1:1/", "--http", "2"]),
            "--http does not apply to a Redis target (it is for http://, https:// and h2c:// targets): drop it"
        );
    }

    #[test]
    fn a_url_file_without_a_target_is_aimed_at_its_urls_origin_without_credentials() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("urls");
        std::fs::write(&path, "2 GET http://user:pw@127.0.0.1:8080/a\nhttp://user:pw@127.0.0.1:8080/b\n").unwrap();
        assert_eq!(url_file_target(&path).unwrap(), "http://127.0.0.1:8080/");
    }
}
