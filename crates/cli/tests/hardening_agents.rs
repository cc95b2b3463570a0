//! Issue 39, agents and probes (items 4, 5, 6, 9, 12, 15 and two of 23's
//! messages): what a hostile or careless user broke, each one bounded in
//! time (a hang is a failure at a deadline, the child killed), in temp dirs,
//! on loopback only.

mod common;

use common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

const TOKEN: &str = "9f1c2e7a5b3d4c6e8f0a1b2c3d4e5f60";

/// A file with `text` and `mode`.
fn file(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
    p
}

fn token(dir: &Path) -> PathBuf {
    file(dir, "token", &format!("{TOKEN}\n"), 0o600)
}

/// The exit code and stderr of `cmd`, which must end within `limit`
/// (else it is killed and the test fails).
fn bounded(cmd: &mut Command, limit: Duration) -> (Option<i32>, String) {
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let err = read_aside(child.stderr.take().unwrap());
    let code = wait_or_kill(&mut child, limit);
    (code, err.recv_timeout(Duration::from_secs(5)).unwrap_or_default())
}

fn read_aside(mut r: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = r.read_to_string(&mut s);
        let _ = tx.send(s);
    });
    rx
}

/// Waits for `child` at most `limit`; kills it and fails past that.
fn wait_or_kill(child: &mut Child, limit: Duration) -> Option<i32> {
    let end = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after {limit:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A tiny HTTP server on loopback (200 to every request, keep-alive)
/// until `dead` is raised: then its port refuses and its connections close.
struct Http {
    port: u16,
    dead: Arc<AtomicBool>,
}

impl Http {
    fn start() -> Http {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let dead = Arc::new(AtomicBool::new(false));
        let d = dead.clone();
        std::thread::spawn(move || {
            while !d.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((s, _)) => {
                        let d = d.clone();
                        std::thread::spawn(move || serve_http(s, &d));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        Http { port, dead }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        self.dead.store(true, Ordering::Relaxed);
    }
}

fn serve_http(s: TcpStream, dead: &AtomicBool) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    while !dead.load(Ordering::Relaxed) {
        line.clear();
        match r.read_line(&mut line) {
            Ok(0) => return,
            Ok(_) if line == "\r\n" => {
                let _ = w.write_all(b"HTTP/1.1 200 OK\r\nServer: tiny\r\nContent-Length: 2\r\n\r\nok");
            }
            Ok(_) => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}

/// A port that accepts TCP and never says a word.
fn silent_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().map_while(Result::ok) {
            held.push(s);
        }
    });
    port
}

/// `scalelab agent --listen ADDR` with `extra`: the child, its port, and
/// what it said up to its listening line.
fn agent(listen: &str, extra: &[&str]) -> (Child, u16, String) {
    let mut child = bin()
        .args(["agent", "--listen", listen])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut said = String::new();
    loop {
        let Some(Ok(l)) = lines.next() else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the agent ended: {said}");
        };
        said.push_str(&l);
        said.push('\n');
        if let Some(rest) = l.split(" listening on ").nth(1) {
            let port = rest.split(' ').next().unwrap().rsplit(':').next().unwrap().parse().unwrap();
            std::thread::spawn(move || for _ in lines.map_while(Result::ok) {});
            return (child, port, said);
        }
    }
}

fn one_line(code: Option<i32>, err: &str, says: &str) {
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains(says), "'{says}' in: {err}");
}

// Item 4: TLS to a port that accepts and never speaks TLS is timed out as the connect is.
#[test]
fn tls_to_a_port_that_never_speaks_is_timed_out_in_one_line() {
    let http = Http::start();
    let dir = tempfile::tempdir().unwrap();
    let tok = token(dir.path());
    let silent = format!("tcp://127.0.0.1:{}", silent_port());
    for flag in ["--agent", "--server-agent"] {
        let store = dir.path().join(format!("s{flag}.db"));
        let start = Instant::now();
        let (code, err) = bounded(
            bin()
                .arg("--store")
                .arg(&store)
                .args(["sweep", &http.url(), "-c", "1", "-d", "0.3s", flag, &silent, "--agent-token-file"])
                .arg(&tok),
            Duration::from_secs(45),
        );
        one_line(code, &err, "no TLS handshake within 10 s");
        assert!(start.elapsed() < Duration::from_secs(30), "{flag}: {:?}", start.elapsed());
        assert!(!store.exists(), "nothing stored");
    }
}

// Item 23: a garbage --cert says what is wrong with it, not "peer sent no certificates".
#[test]
fn a_garbage_cert_or_key_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let tok = token(dir.path());
    let junk = file(dir.path(), "junk.pem", "this is not a certificate\n", 0o600);
    let (code, err) = bounded(
        bin().args(["agent", "--listen", "127.0.0.1:0", "--token-file"]).arg(&tok).arg("--cert").arg(&junk).arg("--key").arg(&junk),
        Duration::from_secs(20),
    );
    one_line(code, &err, "no PEM certificate in it");
    assert!(err.contains("--cert") && !err.contains("peer sent"), "{err}");
}

// Item 12: secrets readable by group or others are refused, as ssh refuses such a key.
#[test]
fn an_agent_refuses_secrets_others_may_read() {
    let dir = tempfile::tempdir().unwrap();
    let open = file(dir.path(), "open-token", &format!("{TOKEN}\n"), 0o644);
    let (code, err) = bounded(bin().args(["agent", "--listen", "127.0.0.1:0", "--token-file"]).arg(&open), Duration::from_secs(20));
    one_line(code, &err, "chmod 600");
    assert!(err.contains("--token-file") && err.contains("0644") && !err.contains(TOKEN), "{err}");
    let tok = token(dir.path());
    let key = file(dir.path(), "key.pem", "-----BEGIN PRIVATE KEY-----\n", 0o640);
    let cert = file(dir.path(), "cert.pem", "-----BEGIN CERTIFICATE-----\n", 0o644);
    let (code, err) = bounded(
        bin().args(["agent", "--listen", "127.0.0.1:0", "--token-file"]).arg(&tok).arg("--cert").arg(&cert).arg("--key").arg(&key),
        Duration::from_secs(20),
    );
    one_line(code, &err, "chmod 600");
    assert!(err.contains("--key"), "{err}");
}

// Item 12: a weak token and a listener on every interface are warned about.
#[test]
fn an_agent_warns_on_a_weak_token_and_on_every_interface() {
    let dir = tempfile::tempdir().unwrap();
    let weak = file(dir.path(), "weak", &format!("{}\n", "a".repeat(16)), 0o600);
    let (mut child, _, said) = agent("127.0.0.1:0", &["--token-file", weak.to_str().unwrap()]);
    let _ = child.kill();
    let _ = child.wait();
    assert!(said.contains("warning") && said.contains("weak") && said.contains("openssl rand"), "{said}");
    assert!(!said.contains(&"a".repeat(16)), "the token is not printed: {said}");
    let tok = token(dir.path());
    let (mut child, _, said) = agent("0.0.0.0:0", &["--token-file", tok.to_str().unwrap()]);
    let _ = child.kill();
    let _ = child.wait();
    assert!(said.contains("warning: --listen 0.0.0.0:0") && said.contains("every interface"), "{said}");
    assert!(!said.contains("weak"), "a random token is not weak: {said}");
}

/// A 3-step sweep of `http` whose server agent is killed (SIGKILL) in step 2.
fn sweep_losing_the_server_agent(loss: &str) -> (Option<i32>, String, serde_json::Value) {
    let http = Http::start();
    let dir = tempfile::tempdir().unwrap();
    let tok = token(dir.path());
    let (mut probe, port, _) = agent("127.0.0.1:0", &["--token-file", tok.to_str().unwrap()]);
    let store = dir.path().join("s.db");
    let me = std::process::id().to_string();
    let mut coord = bin()
        .arg("--store")
        .arg(&store)
        .args(["sweep", &http.url(), "-c", "1,1,1", "--warmup", "0.2s", "-d", "1.5s", "--pause", "0.2s", "-t", "1", "--no-tui"])
        .args(["--server-pid", &me, "--server-agent", &format!("tcp://127.0.0.1:{port}"), "--agent-loss", loss, "--agent-token-file"])
        .arg(&tok)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(coord.stderr.take().unwrap());
    let mut text = String::new();
    let start = Instant::now();
    loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap_or(0) == 0 {
            let _ = probe.kill();
            let _ = coord.kill();
            panic!("the sweep ended before step 2: {text}");
        }
        text.push_str(&line);
        if line.starts_with("step 2/3") {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(40), "{text}");
    }
    std::thread::sleep(Duration::from_millis(500));
    probe.kill().unwrap();
    let _ = probe.wait();
    let rest = read_aside(err);
    let code = wait_or_kill(&mut coord, Duration::from_secs(30));
    text.push_str(&rest.recv_timeout(Duration::from_secs(5)).unwrap_or_default());
    (code, text, json(&store, &["export", "last"]))
}

// Item 5: a lost server agent is named as a lost load agent is.
#[test]
fn a_server_agent_killed_mid_run_ends_it_as_a_lost_agent() {
    let (code, err, run) = sweep_losing_the_server_agent("abort");
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("server agent tcp://127.0.0.1:") && err.contains("lost at step 2"), "{err}");
    assert!(err.contains("no server telemetry from step 2 on"), "{err}");
    assert_eq!(run["complete"], false, "{}", run["outcome"]);
    assert!(run["outcome"].as_str().unwrap().starts_with("agent lost: server agent tcp://"), "{}", run["outcome"]);
    assert_eq!(steps(&run).len(), 2, "step 3 never ran");
}

#[test]
fn with_agent_loss_continue_a_lost_server_agent_is_named_in_the_outcome() {
    let (code, err, run) = sweep_losing_the_server_agent("continue");
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("lost at step 2"), "{err}");
    assert_eq!(run["complete"], true);
    let outcome = run["outcome"].as_str().unwrap();
    assert!(outcome.contains("continued without lost agent(s): server agent tcp://"), "{outcome}");
    assert!(outcome.contains("no server telemetry from step 2 on"), "{outcome}");
    assert_eq!(steps(&run).len(), 3);
}

// Item 6: capacity stops on a dead server as a sweep does.
#[test]
fn capacity_stops_when_the_server_dies_mid_search() {
    let http = Http::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let mut child = bin()
        .arg("--store")
        .arg(&store)
        .args(["capacity", &http.url(), "--slo", "p99<=50ms", "--step", "1s", "--warmup", "0.2s", "--pause", "0.2s"])
        .args(["--start-rate", "100", "--max-rate", "400", "--max-time", "120s", "-t", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut text = String::new();
    let start = Instant::now();
    loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap_or(0) == 0 {
            let _ = child.kill();
            panic!("the search ended before its first try: {text}");
        }
        text.push_str(&line);
        if line.contains("try 1 ") {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(40), "{text}");
    }
    http.dead.store(true, Ordering::Relaxed);
    let rest = read_aside(err);
    let code = wait_or_kill(&mut child, Duration::from_secs(60));
    text.push_str(&rest.recv_timeout(Duration::from_secs(5)).unwrap_or_default());
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("target failed at step") && text.contains("nothing succeeded for 2 step(s) in a row"), "{text}");
    let run = json(&store, &["export", "last"]);
    assert_eq!(run["complete"], false, "{}", run["outcome"]);
    assert!(run["outcome"].as_str().unwrap().starts_with("target failed at step"), "{}", run["outcome"]);
    assert!(steps(&run).len() <= 4, "it stopped after 2 dead tries: {} steps", steps(&run).len());
}

fn specimen_sweep(store: &Path) -> Vec<String> {
    let s = store.to_str().unwrap().to_string();
    ["--store", &s, "sweep", "--specimen", "scales", "-c", "1", "--warmup", "0.1s", "-d", "0.5s", "--profile", "--json", "-q"]
        .map(String::from)
        .to_vec()
}

// Item 9: --profile without perf warns at the start; --strict refuses.
#[test]
fn profile_without_perf_warns_and_strict_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let missing = dir.path().join("no-perf-here");
    let (code, err) = bounded(bin().env("SCALELAB_PERF", &missing).args(specimen_sweep(&store)), Duration::from_secs(60));
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("warning: --profile: no profiles will be taken") && err.contains("no-perf-here"), "{err}");
    let strict = dir.path().join("strict.db");
    let (code, err) = bounded(bin().env("SCALELAB_PERF", &missing).args(specimen_sweep(&strict)).arg("--strict"), Duration::from_secs(60));
    one_line(code, &err, "--strict: --profile cannot work: SCALELAB_PERF=");
    assert!(!strict.exists(), "nothing stored");
}

// Item 15: a SCALELAB_PERF that hangs does not hang the sweep, nor its SIGTERM.
#[test]
fn a_perf_that_hangs_is_timed_out() {
    let dir = tempfile::tempdir().unwrap();
    let perf = file(dir.path(), "perf", "#!/bin/sh\nsleep 600\n", 0o755);
    let store = dir.path().join("s.db");
    let (code, err) = bounded(bin().env("SCALELAB_PERF", &perf).args(specimen_sweep(&store)), Duration::from_secs(60));
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("warning: --profile") && err.contains("did not end within 10 s"), "{err}");
    // SIGTERM while perf's trial hangs ends the run soon after.
    let term = dir.path().join("t.db");
    let mut child =
        bin().env("SCALELAB_PERF", &perf).args(specimen_sweep(&term)).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    std::thread::sleep(Duration::from_secs(3));
    // SAFETY: sends SIGTERM to a child this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let code = wait_or_kill(&mut child, Duration::from_secs(20));
    assert!(matches!(code, Some(130) | Some(0)), "{code:?}");
}
