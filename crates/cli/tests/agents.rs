//! Agents as real processes on loopback: `scalelab agent --listen` on
//! 127.0.0.1 ports, a coordinator `scalelab sweep --agent tcp://...` against
//! the harness's nginx. One network namespace per host: agents_netns.rs.

mod common;

use common::*;
use scalelab_testkit::nginx::{Nginx, NginxOptions};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TOKEN: &str = "9f1c2e7a5b3d4c6e8f0a1b2c3d4e5f60";

/// A running `scalelab agent --listen 127.0.0.1:0`, its port and its log.
struct Agent {
    child: Child,
    port: u16,
    log: Arc<Mutex<String>>,
}

impl Agent {
    fn start(token_file: &Path, extra: &[&str]) -> Agent {
        let mut child = bin()
            .args(["agent", "--listen", "127.0.0.1:0", "--token-file"])
            .arg(token_file)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting an agent");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().expect("the agent says where it listens").unwrap();
        let port = first.split("listening on 127.0.0.1:").nth(1).and_then(|r| r.split(' ').next()).and_then(|p| p.parse().ok());
        let port = port.unwrap_or_else(|| panic!("no port in: {first}"));
        let log = Arc::new(Mutex::new(String::new()));
        let keep = log.clone();
        std::thread::spawn(move || {
            for l in lines.map_while(Result::ok) {
                let mut k = keep.lock().unwrap();
                k.push_str(&l);
                k.push('\n');
            }
        });
        Agent { child, port, log }
    }

    fn url(&self) -> String {
        format!("tcp://127.0.0.1:{}", self.port)
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn token(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join(format!("token-{}", text.len()));
    std::fs::write(&p, format!("{text}\n")).unwrap();
    // The agent refuses a secret others may read.
    std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    p
}

/// nginx's access-log lines inside a step's window.
fn in_window(nginx: &Nginx, step: &Value) -> Vec<scalelab_testkit::nginx::LogLine> {
    let (start, end) = (step["window_start_unix_ms"].as_f64().unwrap(), step["window_end_unix_ms"].as_f64().unwrap());
    nginx.access_log().into_iter().filter(|l| l.unix_ms >= start && l.unix_ms < end).collect()
}

/// How far nginx's count of a window may stray from the agents': two
/// requests in flight per client at the edges, 1 % for clock alignment, 2.
fn edge_tolerance(step: &Value) -> f64 {
    2.0 * step["concurrency"].as_f64().unwrap() + step["throughput_per_s"].as_f64().unwrap() * 0.01 + 2.0
}

/// The agents' shares of each step, as the run recorded them.
fn agent_steps(run: &Value) -> Vec<Value> {
    run["schedule"]["options"]["agent_steps"].as_array().cloned().unwrap_or_default()
}

#[test]
fn two_tcp_agents_make_one_run_whose_counts_are_their_sum() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let tok = token(dir.path(), TOKEN);
    let (a, b) = (Agent::start(&tok, &[]), Agent::start(&tok, &[]));
    let store = dir.path().join("s.db");
    let run = json(
        &store,
        &[
            "sweep",
            &nginx.url("/index.html"),
            "-c",
            "2,5",
            "--warmup",
            "0.3s",
            "--duration",
            "1s",
            "--pause",
            "0.2s",
            "-t",
            "1",
            "--json",
            "-q",
            "--agent",
            &a.url(),
            "--agent",
            &b.url(),
            "--agent-token-file",
            tok.to_str().unwrap(),
        ],
    );
    assert_matches_schema(&run);
    assert_eq!(run["complete"], true, "{}", run["outcome"]);
    let agents = run["schedule"]["options"]["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2);
    assert!(agents.iter().all(|x| x["rtt_ms"].as_f64().unwrap() < 50.0 && x["clock_offset_ms"].as_f64().unwrap().abs() < 50.0));
    let shares = agent_steps(&run);
    assert_eq!(shares.len(), 2);
    for (step, share) in steps(&run).iter().zip(&shares) {
        let parts = share["agents"].as_array().unwrap();
        let sum: u64 = parts.iter().map(|p| p["requests"].as_u64().unwrap()).sum();
        assert_eq!(step["requests"].as_u64().unwrap(), sum, "the run's count is the agents' sum: {share}");
        assert!(parts.iter().all(|p| p["requests"].as_u64().unwrap() > 20), "both agents loaded: {share}");
        let conc: Vec<u64> = parts.iter().map(|p| p["concurrency"].as_u64().unwrap()).collect();
        let c = step["concurrency"].as_u64().unwrap();
        assert_eq!(conc, vec![c - c / 2, c / 2], "remainder to the first agent");
        // One timeline: both agents' windows start at the same instant (within a few ms on loopback).
        let starts: Vec<i64> = parts.iter().map(|p| p["window_start_unix_ms"].as_i64().unwrap()).collect();
        assert!((starts[0] - starts[1]).abs() <= 25, "windows start together: {starts:?}");
        // What nginx served inside the window matches (in-flight requests at the edges aside).
        let logged = in_window(&nginx, step).len() as f64;
        let tol = edge_tolerance(step);
        assert!((logged - sum as f64).abs() <= tol, "nginx logged {logged} in the window, agents counted {sum} (±{tol})");
    }
    // `show` has the per-agent breakdown: one row per step and agent.
    let shown = common::run(&store, &["show", "last"]);
    let text = String::from_utf8_lossy(&shown.stdout);
    let rows = text.lines().filter(|l| l.contains(&a.url()) || l.contains(&b.url())).count();
    assert!(text.contains("\nagents\n") && rows == 4, "{text}");
    // So do both reports: per step and agent, its clients, requests, p99, CPU and window start.
    let md = dir.path().join("r.md");
    let out = common::run(&store, &["report", "last", "--format", "md", "-o", md.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let md = std::fs::read_to_string(md).unwrap();
    let shares = agent_steps(&run);
    for (i, share) in shares.iter().enumerate() {
        for p in share["agents"].as_array().unwrap() {
            let row = format!("| {} | {} | {} | {} |", i + 1, p["agent"].as_str().unwrap(), p["concurrency"], p["requests"]);
            let line = md.lines().find(|l| l.starts_with(&row)).unwrap_or_else(|| panic!("no {row} in {md}"));
            assert!(line.contains(&format!(" {:.2} |", p["p99_ms"].as_f64().unwrap())) && line.contains(" ms |"), "{line}");
        }
    }
    let html = dir.path().join("r.html");
    let out = common::run(&store, &["report", "last", "-o", html.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(html).unwrap();
    assert!(
        html.contains("Per agent") && html.matches(&format!("<td class=\"text\">{}</td>", a.url())).count() == 2,
        "the HTML has a's two rows"
    );
    // The agents served their sessions and are still listening.
    assert!(!a.log().contains("refused") && !b.log().contains("refused"), "{} {}", a.log(), b.log());
}

#[test]
fn a_wrong_token_is_refused_and_never_printed() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::start(&token(dir.path(), TOKEN), &[]);
    let wrong = token(dir.path(), "another-token-of-enough-length-0");
    let store = dir.path().join("s.db");
    let url = agent.url();
    let args = ["sweep", &nginx.url("/"), "-c", "1", "-d", "0.2s", "--agent", &url, "--agent-token-file", wrong.to_str().unwrap()];
    assert_bad_input(&store, &args, "token");
    std::thread::sleep(Duration::from_millis(200));
    let log = agent.log();
    assert!(log.contains("refused 127.0.0.1:") && log.contains("wrong token"), "the agent logs the refusal: {log}");
    assert!(!log.contains(TOKEN) && !log.contains("another-token"), "no token in the log: {log}");
    assert_eq!(log.lines().count(), 1, "one line: {log}");
    // A wrong token got no load sent: nothing reached nginx beyond the coordinator's own preflight request.
    assert!(nginx.access_log().len() <= 1);
}

#[test]
fn a_protocol_mismatch_is_one_clear_line_on_both_sides() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let tok = token(dir.path(), TOKEN);
    let agent = Agent::start(&tok, &["--protocol-version", "4"]);
    let store = dir.path().join("s.db");
    let url = agent.url();
    let args = ["sweep", &nginx.url("/"), "-c", "1", "-d", "0.2s", "--agent", &url, "--agent-token-file", tok.to_str().unwrap()];
    let says = "agent speaks protocol 4, coordinator 3: use the same scalelab version on both";
    assert_bad_input(&store, &args, says);
    std::thread::sleep(Duration::from_millis(200));
    assert!(agent.log().contains(says), "{}", agent.log());
}

/// Runs a 3-step sweep on two agents and kills the second with SIGKILL
/// during step 2. Returns the coordinator's exit code, its stderr and the run.
fn sweep_losing_an_agent(loss: &str) -> (Option<i32>, String, Value) {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let tok = token(dir.path(), TOKEN);
    let (a, mut b) = (Agent::start(&tok, &[]), Agent::start(&tok, &[]));
    let store = dir.path().join("s.db");
    let (ua, ub) = (a.url(), b.url());
    let mut coord = bin()
        .arg("--store")
        .arg(&store)
        .args(["sweep", &nginx.url("/"), "-c", "2,2,2", "--warmup", "0.2s", "--duration", "2s", "--pause", "0.2s", "-t", "1"])
        .args(["--no-tui", "--agent", &ua, "--agent", &ub, "--agent-token-file", tok.to_str().unwrap(), "--agent-loss", loss])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(coord.stderr.take().unwrap());
    let mut text = String::new();
    let start = Instant::now();
    loop {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "the sweep ended before step 2: {text}");
        text.push_str(&line);
        if line.starts_with("step 2/3") {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{text}");
    }
    // Inside step 2's window (0.3 s to its start, 0.2 s warm-up, 2 s window).
    std::thread::sleep(Duration::from_millis(1200));
    b.child.kill().unwrap();
    let _ = b.child.wait();
    let lost_at = Instant::now();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    text.push_str(&rest);
    let code = coord.wait().unwrap().code();
    assert!(lost_at.elapsed() < Duration::from_secs(15), "the coordinator noticed the loss promptly");
    let run = json(&store, &["export", "last"]);
    (code, text, run)
}

#[test]
fn an_agent_killed_mid_step_ends_the_run_incomplete_with_the_step_partial() {
    let (code, err, run) = sweep_losing_an_agent("abort");
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("agent tcp://127.0.0.1:") && err.contains("lost at step 2"), "{err}");
    assert_eq!(run["complete"], false);
    assert!(run["outcome"].as_str().unwrap().starts_with("agent lost: tcp://127.0.0.1:"), "{}", run["outcome"]);
    let s = steps(&run);
    assert_eq!(s.len(), 2, "step 1 kept, step 2 kept as partial, step 3 never ran");
    assert_eq!(s[0]["partial"], false);
    assert_eq!(s[1]["partial"], true);
    assert!(s[1]["requests"].as_u64().unwrap() > 0, "the surviving agent's share of step 2 is kept");
    let shares = agent_steps(&run);
    let lost: Vec<bool> = shares[1]["agents"].as_array().unwrap().iter().map(|p| p["lost"].as_bool().unwrap()).collect();
    assert_eq!(lost, vec![false, true], "the share names the lost agent");
}

#[test]
fn with_agent_loss_continue_the_other_agents_finish_the_sweep() {
    let (code, err, run) = sweep_losing_an_agent("continue");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(run["complete"], true);
    assert!(run["outcome"].as_str().unwrap().contains("continued without lost agent(s): tcp://"), "{}", run["outcome"]);
    let s = steps(&run);
    assert_eq!(s.len(), 3);
    assert_eq!((s[0]["partial"].as_bool(), s[1]["partial"].as_bool(), s[2]["partial"].as_bool()), (Some(false), Some(true), Some(false)));
    let last = &agent_steps(&run)[2]["agents"];
    assert_eq!(last.as_array().unwrap().len(), 1, "step 3 ran on the survivor alone: {last}");
    assert_eq!(last[0]["concurrency"], 2, "with all the step's clients");
    assert_eq!(s[2]["concurrency"], 2);
}

#[test]
fn agent_flags_are_checked_before_anything_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    assert_bad_input(&store, &["sweep", "http://127.0.0.1:9/", "--agent", "ftp://x"], "use ssh://[user@]host[:port] or tcp://host:port");
    assert_bad_input(&store, &["sweep", "http://127.0.0.1:9/", "--agent", "tcp://127.0.0.1:9"], "needs --agent-token-file");
    assert_bad_input(&store, &["sweep", "--agent", "ssh://h"], "need a target URL");
    // What only this machine's client threads do is not silently dropped.
    let agent = ["sweep", "http://127.0.0.1:9/", "--agent", "tcp://127.0.0.1:9"];
    assert_bad_input(&store, &[&agent[..], &["--client-slice-us", "100"]].concat(), "drop --client-slice-us or --agent");
    assert_bad_input(&store, &[&agent[..], &["--busy-poll"]].concat(), "drop --busy-poll or --agent");
    let short = token(dir.path(), "short");
    let args = ["sweep", "http://127.0.0.1:9/", "--agent", "tcp://127.0.0.1:9", "--agent-token-file", short.to_str().unwrap()];
    assert_bad_input(&store, &args, "at least 16 characters");
}

#[test]
fn a_server_agent_observes_the_server_on_its_host() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let tok = token(dir.path(), TOKEN);
    let (load, probe) = (Agent::start(&tok, &[]), Agent::start(&tok, &[]));
    let store = dir.path().join("s.db");
    // No --server-pid: the server agent finds the target port's owner on its host.
    let run = json(
        &store,
        &[
            "sweep",
            &nginx.url("/index.html"),
            "-c",
            "4",
            "--warmup",
            "0.3s",
            "-d",
            "2s",
            "-t",
            "1",
            "--json",
            "-q",
            "--agent",
            &load.url(),
            "--server-agent",
            &probe.url(),
            "--agent-token-file",
            tok.to_str().unwrap(),
        ],
    );
    assert_eq!(run["complete"], true, "{}", run["outcome"]);
    let roles: Vec<&str> = run["schedule"]["options"]["agents"].as_array().unwrap().iter().map(|a| a["role"].as_str().unwrap()).collect();
    assert_eq!(roles, vec!["load", "server"]);
    let t = &steps(&run)[0]["telemetry"];
    assert!(t["server_cpu_pct"].as_f64().unwrap() > 5.0, "the server's CPU, from the server agent: {t}");
    let workers = scalelab_testkit::nginx::children_of(nginx.pid());
    let hottest = t["hottest_threads"][0]["tid"].as_i64().unwrap() as i32;
    assert!(workers.contains(&hottest), "hottest thread {hottest} is an nginx worker ({workers:?}): {t}");
    assert!(t["thread_states_pct"].is_object(), "thread states sampled on the server's host: {t}");
    assert!(t["cpu_busy_pct"].as_f64().is_some(), "the host's CPU split: {t}");
}

#[test]
fn an_agent_stops_loading_within_a_second_when_its_coordinator_dies() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let tok = token(dir.path(), TOKEN);
    let agent = Agent::start(&tok, &[]);
    let store = dir.path().join("s.db");
    let url = agent.url();
    let mut coord = bin()
        .arg("--store")
        .arg(&store)
        .args(["sweep", &nginx.url("/"), "-c", "2", "--warmup", "0.2s", "--duration", "20s", "-t", "1", "--no-tui"])
        .args(["--agent", &url, "--agent-token-file", tok.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(coord.stderr.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("step 1/1") {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "the sweep ended early");
    }
    std::thread::sleep(Duration::from_millis(1500));
    let before = nginx.access_log().len();
    coord.kill().unwrap();
    let killed_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as f64;
    let _ = coord.wait();
    std::thread::sleep(Duration::from_secs(3));
    let log = nginx.access_log();
    assert!(before > 100, "the agent was loading: {before} requests");
    let last = log.last().unwrap().unix_ms;
    assert!(last < killed_ms + 1500.0, "the agent kept loading {} ms after its coordinator died", last - killed_ms);
    assert!(agent.log().contains("agent: step 1 cut: the coordinator is gone"), "{}", agent.log());
}

#[test]
fn sigint_on_the_coordinator_cuts_every_agents_step_and_keeps_it_as_partial() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let tok = token(dir.path(), TOKEN);
    let (a, b) = (Agent::start(&tok, &[]), Agent::start(&tok, &[]));
    let store = dir.path().join("s.db");
    let (ua, ub) = (a.url(), b.url());
    let mut coord = bin()
        .arg("--store")
        .arg(&store)
        .args(["sweep", &nginx.url("/"), "-c", "2,2", "--warmup", "0.2s", "--duration", "20s", "-t", "1", "--no-tui"])
        .args(["--agent", &ua, "--agent", &ub, "--agent-token-file", tok.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(coord.stderr.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("step 1/2") {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "the sweep ended early");
    }
    std::thread::sleep(Duration::from_millis(2000));
    let sent = Instant::now();
    // SAFETY: sends SIGINT to a child process this test started.
    assert_eq!(unsafe { libc::kill(coord.id() as i32, libc::SIGINT) }, 0);
    let code = coord.wait().unwrap().code();
    assert!(sent.elapsed() < Duration::from_secs(5), "the step ended at the next second, not at its planned end");
    assert_eq!(code, Some(130));
    let run = json(&store, &["export", "last"]);
    assert_eq!(run["complete"], false);
    let s = steps(&run);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0]["partial"], true);
    assert!(s[0]["window_s"].as_f64().unwrap() < 5.0 && s[0]["requests"].as_u64().unwrap() > 0, "{}", s[0]);
}

#[test]
fn an_open_loop_rate_is_split_across_agents_and_merged() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let tok = token(dir.path(), TOKEN);
    let (a, b) = (Agent::start(&tok, &[]), Agent::start(&tok, &[]));
    let store = dir.path().join("s.db");
    let run = json(
        &store,
        &[
            "sweep",
            &nginx.url("/"),
            "--rate",
            "400",
            "--max-in-flight",
            "16",
            "--warmup",
            "0.3s",
            "-d",
            "2s",
            "-t",
            "1",
            "--json",
            "-q",
            "--agent",
            &a.url(),
            "--agent",
            &b.url(),
            "--agent-token-file",
            tok.to_str().unwrap(),
        ],
    );
    assert_eq!(run["complete"], true, "{}", run["outcome"]);
    let step = &steps(&run)[0];
    assert_eq!(step["offered_rate_per_s"].as_f64(), Some(400.0), "{step}");
    let x = step["throughput_per_s"].as_f64().unwrap();
    assert!((x - 400.0).abs() < 40.0, "the two halves of the rate add up: {x}");
    let parts = agent_steps(&run)[0]["agents"].as_array().unwrap().clone();
    let each: Vec<f64> = parts.iter().map(|p| p["throughput_per_s"].as_f64().unwrap()).collect();
    assert!(each.iter().all(|x| (x - 200.0).abs() < 25.0), "each agent offered half: {each:?}");
    assert_eq!(parts.iter().map(|p| p["concurrency"].as_u64().unwrap()).sum::<u64>(), 16, "the connections split too");
}

#[test]
fn the_server_agent_polls_the_database_from_the_servers_host() {
    let pg = scalelab_testkit::postgres::Postgres::start();
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let tok = token(dir.path(), TOKEN);
    let probe = Agent::start(&tok, &[]);
    let store = dir.path().join("s.db");
    // Local load, the server's host (here the same) observed by the server agent, with --db-probe.
    let run = json(
        &store,
        &[
            "sweep",
            &nginx.url("/"),
            "-c",
            "1",
            "--warmup",
            "0.2s",
            "-d",
            "1.5s",
            "-t",
            "1",
            "--json",
            "-q",
            "--db-probe",
            &pg.url(),
            "--server-agent",
            &probe.url(),
            "--agent-token-file",
            tok.to_str().unwrap(),
        ],
    );
    let d = &steps(&run)[0]["telemetry"]["db"];
    assert_eq!(d["engine"], "postgres", "{}", steps(&run)[0]["telemetry"]);
    assert!(d["activity_polls"].as_u64().unwrap() >= 3, "{d}");
}

#[test]
fn sql_load_through_two_agents_merges_their_queries() {
    let pg = scalelab_testkit::postgres::Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let tok = token(dir.path(), TOKEN);
    let store = dir.path().join("s.db");
    let url = pg.url();
    // The coordinator's machine prepares the dataset; agents only run the workload.
    common::prepare_sbtest(&store, &url, 2000);
    let (a, b) = (Agent::start(&tok, &[]), Agent::start(&tok, &[]));
    let xacts =
        || pg.psql("postgres", "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'bench'").parse::<u64>().unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    let before = xacts();
    let run = json(
        &store,
        &[
            "sweep",
            &url,
            "--workload",
            "point-select",
            "-c",
            "2,4",
            "--warmup",
            "0.2s",
            "-d",
            "1s",
            "--pause",
            "0.2s",
            "-t",
            "1",
            "--json",
            "-q",
            "--agent",
            &a.url(),
            "--agent",
            &b.url(),
            "--agent-token-file",
            tok.to_str().unwrap(),
        ],
    );
    assert_eq!(run["complete"], true, "{}", run["outcome"]);
    let mut counted = 0;
    for (step, share) in steps(&run).iter().zip(agent_steps(&run)) {
        let parts = share["agents"].as_array().unwrap();
        let each: Vec<u64> = parts.iter().map(|p| p["requests"].as_u64().unwrap()).collect();
        assert!(each.iter().all(|&n| n > 20), "both agents ran queries: {share}");
        assert_eq!(step["queries"].as_u64().unwrap(), each.iter().sum::<u64>(), "merged queries are the agents' sum: {share}");
        assert_eq!(step["requests"], step["queries"], "point-select: one query per unit");
        assert_eq!(step["errors_total"], 0, "{step}");
        counted += step["requests"].as_u64().unwrap();
    }
    // Backends flush their counters when they exit.
    std::thread::sleep(Duration::from_millis(1500));
    let delta = xacts() - before;
    eprintln!("postgres counted {delta} transactions, the agents {counted} queries");
    assert!(delta >= counted, "the server ran {delta} transactions < {counted} counted");
    // Beyond the windows: the warm-ups' queries (0.2 s a step), catalog queries and units in flight.
    let warm: f64 = steps(&run).iter().map(|s| s["throughput_per_s"].as_f64().unwrap() * 0.2).sum();
    let rest = (delta - counted) as f64;
    assert!(rest <= warm * 1.5 + 300.0, "the server ran {rest} more transactions than counted (warm-ups ~{warm:.0})");
}

#[test]
fn redis_load_through_two_agents_is_the_commands_the_server_ran() {
    let redis = scalelab_testkit::redis::Redis::start();
    let dir = tempfile::tempdir().unwrap();
    let tok = token(dir.path(), TOKEN);
    let store = dir.path().join("s.db");
    let url = redis.url();
    let (a, b) = (Agent::start(&tok, &[]), Agent::start(&tok, &[]));
    let run = json(
        &store,
        &[
            "sweep",
            &url,
            "--workload",
            "incr",
            "--pipeline",
            "4",
            "-c",
            "2",
            "--warmup",
            "0",
            "-d",
            "1s",
            "--json",
            "-q",
            "--agent",
            &a.url(),
            "--agent",
            &b.url(),
            "--agent-token-file",
            tok.to_str().unwrap(),
        ],
    );
    assert_eq!(run["complete"], true, "{}", run["outcome"]);
    let step = &steps(&run)[0];
    let share = &agent_steps(&run)[0];
    let each: Vec<u64> = share["agents"].as_array().unwrap().iter().map(|p| p["requests"].as_u64().unwrap()).collect();
    assert!(each.len() == 2 && each.iter().all(|&n| n > 20), "both agents sent commands: {share}");
    assert_eq!(step["requests"].as_u64().unwrap(), each.iter().sum::<u64>(), "{share}");
    assert_eq!(step["queries"].as_u64().unwrap(), 4 * step["requests"].as_u64().unwrap(), "4 commands per round trip");
    // The server ran what was counted, and at most a round trip per client more.
    let (ran, counted) = (redis.calls("incr"), step["queries"].as_u64().unwrap());
    assert!(ran >= counted && ran - counted <= 2 * 4, "server ran {ran} INCRs, counted {counted}");
}

/// HTTP/2 through two agents: each agent opens whole connections of
/// `--streams` streams (8 clients as 2 connections of 4 split 4 + 4, 12 as
/// 3 split 8 + 4), the run records h2c and connections x streams, and every
/// success counted is an HTTP/2 request in nginx's log.
#[test]
fn http2_load_through_two_agents_splits_whole_connections_and_is_what_nginx_served() {
    let nginx = Nginx::start_opts(NginxOptions { http2: true, ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let tok = token(dir.path(), TOKEN);
    let (a, b) = (Agent::start(&tok, &[]), Agent::start(&tok, &[]));
    let store = dir.path().join("s.db");
    let url = format!("h2c://127.0.0.1:{}/index.html", nginx.h2c_port.unwrap());
    let run = json(
        &store,
        &[
            "sweep",
            &url,
            "-c",
            "2,3",
            "--streams",
            "4",
            "--warmup",
            "0.3s",
            "--duration",
            "1s",
            "--pause",
            "0.2s",
            "--json",
            "-q",
            "--agent",
            &a.url(),
            "--agent",
            &b.url(),
            "--agent-token-file",
            tok.to_str().unwrap(),
        ],
    );
    assert_matches_schema(&run);
    assert_eq!(run["complete"], true, "{}", run["outcome"]);
    assert_eq!(run["schedule"]["options"]["http_protocol"], "h2c");
    let shape: Vec<(u64, u64)> =
        steps(&run).iter().map(|s| (s["concurrency"].as_u64().unwrap(), s["connections"].as_u64().unwrap())).collect();
    assert_eq!(shape, [(8, 2), (12, 3)]);
    for ((step, share), want) in steps(&run).iter().zip(&agent_steps(&run)).zip([[4, 4], [8, 4]]) {
        let parts = share["agents"].as_array().unwrap();
        let conc: Vec<u64> = parts.iter().map(|p| p["concurrency"].as_u64().unwrap()).collect();
        assert_eq!(conc, want, "whole connections per agent: {share}");
        let sum: u64 = parts.iter().map(|p| p["requests"].as_u64().unwrap()).sum();
        assert!(parts.iter().all(|p| p["requests"].as_u64().unwrap() > 20), "both agents loaded: {share}");
        assert_eq!(step["requests"].as_u64().unwrap(), sum, "{share}");
        assert_eq!(step["errors_total"], 0, "{step}");
        let lines = in_window(&nginx, step);
        assert!(lines.iter().all(|l| l.protocol == "HTTP/2.0"), "only HTTP/2 requests in the window");
        let tol = edge_tolerance(step);
        assert!(
            (lines.len() as f64 - sum as f64).abs() <= tol,
            "nginx logged {} in the window, agents counted {sum} (±{tol})",
            lines.len()
        );
    }
}
