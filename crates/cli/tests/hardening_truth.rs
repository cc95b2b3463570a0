//! Measurement truth and exit codes under faults: a server that stops
//! answering, runs where nothing succeeds, too few file descriptors, a URL
//! file without a positional target (issue 18: 6, 7, 8, 14, 15).

mod common;

use common::*;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A loopback HTTP server that answers every request with 200 until
/// `answer_for` has passed since the second request (the first is the
/// sweep's preflight), then reads on but never answers again: a server that
/// hangs mid-run.
struct HangingServer {
    url: String,
    answered: Arc<AtomicU64>,
}

impl HangingServer {
    fn start(answer_for: Duration) -> HangingServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let answered = Arc::new(AtomicU64::new(0));
        let since: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
        let seen = Arc::new(AtomicU64::new(0));
        let a = answered.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (answered, since, seen) = (a.clone(), since.clone(), seen.clone());
                std::thread::spawn(move || serve(stream, answer_for, &answered, &since, &seen));
            }
        });
        HangingServer { url, answered }
    }
}

fn serve(mut s: TcpStream, answer_for: Duration, answered: &AtomicU64, since: &Mutex<Option<Instant>>, seen: &AtomicU64) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            if seen.fetch_add(1, Ordering::SeqCst) == 1 {
                *since.lock().unwrap() = Some(Instant::now());
            }
            let hung = since.lock().unwrap().is_some_and(|t| t.elapsed() >= answer_for);
            if !hung {
                answered.fetch_add(1, Ordering::SeqCst);
                if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n").is_err() {
                    return;
                }
            }
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn sweep_json(store: &std::path::Path, args: &[&str]) -> (std::process::Output, Option<Value>) {
    let out = run(store, args);
    let doc = serde_json::from_slice(&out.stdout).ok();
    (out, doc)
}

fn errors(step: &Value, class: &str) -> u64 {
    step["errors"][class].as_u64().unwrap_or(0)
}

/// 18.6: a server that answers nothing in the window shows its requests as
/// `unfinished` (never a clean 0 req/s with 0 errors), even with the
/// default 10 s timeout longer than the window.
#[test]
fn a_server_that_stops_answering_leaves_unfinished_requests() {
    let server = HangingServer::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let (out, run) = sweep_json(&store, &["sweep", &server.url, "-c", "3", "--warmup", "0.3s", "--duration", "1.5s", "--json", "-q"]);
    let run = run.unwrap_or_else(|| panic!("no JSON: {}", stderr(&out)));
    let s = &run["steps"][0];
    assert_eq!(s["requests"], 0, "{s}");
    assert_eq!(errors(s, "unfinished"), 3, "each client's request hung: {s}");
    assert!(s["error_messages"]["unfinished"].as_str().unwrap().contains("no response after"), "{s}");
    assert!(verdict_kinds(&run).contains(&"errors".to_string()), "{:#}", run["verdicts"]);
    assert_eq!(server.answered.load(Ordering::SeqCst), 1, "only the preflight was answered");
}

/// 18.6: a server that hangs in the middle of the window: the completions
/// before the hang count, and the requests left waiting at the end are
/// `unfinished` errors with an errors verdict of high confidence.
#[test]
fn a_server_that_hangs_mid_window_is_not_a_clean_step() {
    let server = HangingServer::start(Duration::from_millis(700));
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let (out, run) = sweep_json(&store, &["sweep", &server.url, "-c", "2", "--warmup", "0.3s", "--duration", "2s", "--json", "-q"]);
    let run = run.unwrap_or_else(|| panic!("no JSON: {}", stderr(&out)));
    let s = &run["steps"][0];
    assert!(s["requests"].as_u64().unwrap() > 0, "answered before the hang: {s}");
    assert_eq!(errors(s, "unfinished"), 2, "{s}");
    let v = run["verdicts"].as_array().unwrap().iter().find(|v| v["kind"] == "errors").unwrap_or_else(|| panic!("{:#}", run["verdicts"]));
    assert_eq!(v["confidence"], "high", "{v}");
}

/// 18.7: with no warm-up, a client thread that owns one connection (it
/// blocks in `recv` itself) once kept its event loop from running its
/// timers for the whole window, and its lag read as window − 50 ms: a
/// high-confidence CLIENT-BOUND verdict on an idle client. The lag must be
/// measured, small, and not make the client look behind, whatever the warm-up.
#[test]
fn sql_lag_is_right_with_no_warmup_and_one_connection_per_thread() {
    let pg = scalelab_testkit::postgres::Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let wl = dir.path().join("one.toml");
    std::fs::write(&wl, "[[unit]]\nsql = \"SELECT 1\"\n").unwrap();
    for warmup in ["0s", "0.3s"] {
        let args = ["sweep", &pg.url(), "--workload-file", wl.to_str().unwrap(), "-c", "2", "--threads", "2"];
        let out = run(&store, &[&args[..], &["--warmup", warmup, "--duration", "2s", "--json", "-q"]].concat());
        assert!(out.status.success(), "{}", stderr(&out));
        let run: Value = serde_json::from_slice(&out.stdout).unwrap();
        let s = &run["steps"][0];
        assert!(s["requests"].as_u64().unwrap() > 100, "{s}");
        let lag = s["client_lag_ms"].as_f64().unwrap_or_else(|| panic!("warm-up {warmup}: lag not measured: {s}"));
        // The bug read 1,950 ms here. A shared machine's neighbours can
        // starve the client for real (seen: 250 ms at load 10 on 2 cores,
        // the client waiting for a CPU 71 % of the window), so the bound is
        // a quarter of the window, and a client-bound verdict is wrong only
        // when the client did not wait for a CPU.
        assert!(lag < 500.0, "warm-up {warmup}: lag {lag} ms over a 2 s window: {s}");
        let starved = s["client_runq_wait_pct"].as_f64().is_some_and(|w| w >= 20.0);
        eprintln!(
            "warm-up {warmup}: lag {lag:.1} ms, client run-queue wait {}%, verdicts {:?}",
            s["client_runq_wait_pct"],
            verdict_kinds(&run)
        );
        let client_bound = verdict_kinds(&run).contains(&"client-bound".to_string());
        assert!(
            !client_bound || starved,
            "warm-up {warmup}: client-bound on a client that neither waited for a CPU nor lagged: {:#}",
            run["verdicts"]
        );
        if !starved {
            assert!(lag < 50.0, "warm-up {warmup}: lag {lag} ms on a client that did not wait for a CPU: {s}");
        }
    }
}

/// A run expected to fail (exit 1): one line on stderr saying why, the run
/// document still printed and stored, marked not complete.
fn failed_run(store: &std::path::Path, args: &[&str], why: &str) -> Value {
    let (out, doc) = sweep_json(store, args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "one error line: {err}");
    assert!(lines[0].contains(why), "expected '{why}' in: {err}");
    let doc = doc.unwrap_or_else(|| panic!("no JSON: {err}"));
    assert_eq!(doc["complete"], false, "a failed run is not called complete");
    assert!(doc["outcome"].as_str().unwrap().starts_with("failed: step"), "{}", doc["outcome"]);
    let runs = run(store, &["runs"]);
    assert!(!String::from_utf8_lossy(&runs.stdout).contains(" complete"), "{}", String::from_utf8_lossy(&runs.stdout));
    doc
}

/// 18.14: every request answered 404, in a one-step run (below any
/// --max-failed-steps): exit 1, not complete.
#[test]
fn a_run_where_every_request_is_refused_fails() {
    let nginx = scalelab_testkit::nginx::Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = nginx.url("/no-such-page.html");
    let doc = failed_run(&store, &["sweep", &url, "-c", "2", "--warmup", "0.2s", "--duration", "1s", "--json", "-q"], "nothing succeeded");
    assert!(doc["outcome"].as_str().unwrap().contains("http_4xx"), "{}", doc["outcome"]);
    assert!(errors(&doc["steps"][0], "http_4xx") > 10);
    // Fewer failed steps in a row than --max-failed-steps: still a failed run.
    let args = ["sweep", &url, "-c", "1,2", "--warmup", "0.1s", "--duration", "0.5s", "--pause", "0s", "--max-failed-steps", "3"];
    failed_run(&store, &[&args[..], &["--json", "-q"]].concat(), "nothing succeeded");
}

/// 18.14: most requests fail (3 of 4 URLs are missing): errors dominate.
#[test]
fn a_run_where_errors_dominate_fails_and_a_few_errors_do_not() {
    let nginx = scalelab_testkit::nginx::Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let urls = dir.path().join("urls.txt");
    std::fs::write(&urls, format!("1 {}\n3 {}\n", nginx.url("/index.html"), nginx.url("/missing.html"))).unwrap();
    let args = ["sweep", "--url-file", urls.to_str().unwrap(), "-c", "2", "--warmup", "0.2s", "--duration", "1s", "--json", "-q"];
    let doc = failed_run(&store, &args, "errors dominate");
    assert!(doc["steps"][0]["requests"].as_u64().unwrap() > 0);
    // One missing URL in twenty: errors, but the server works: exit 0.
    std::fs::write(&urls, format!("19 {}\n1 {}\n", nginx.url("/index.html"), nginx.url("/missing.html"))).unwrap();
    let out = run(&store, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// 18.14: a server that answers the preflight, then closes every new
/// connection at once: every request fails (reset or lost), exit 1.
#[test]
fn a_run_where_every_connection_is_reset_fails() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for (i, stream) in listener.incoming().enumerate() {
            let Ok(mut s) = stream else { continue };
            if i == 0 {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n");
            } else {
                // SO_LINGER 0: the close sends a RST.
                let linger = libc::linger { l_onoff: 1, l_linger: 0 };
                // SAFETY: setsockopt reads a linger struct we own, on a socket we own.
                unsafe {
                    use std::os::fd::AsRawFd;
                    libc::setsockopt(
                        s.as_raw_fd(),
                        libc::SOL_SOCKET,
                        libc::SO_LINGER,
                        (&linger as *const libc::linger).cast(),
                        std::mem::size_of::<libc::linger>() as libc::socklen_t,
                    );
                }
            }
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    failed_run(&store, &["sweep", &url, "-c", "3", "--warmup", "0.2s", "--duration", "1s", "--json", "-q"], "nothing succeeded");
}

/// 18.15: more clients than the open-file limit allows are refused before
/// anything starts (exit 2, one line with the figures and the fix, no
/// store); a sweep that fits runs under the same limit.
#[test]
fn too_many_clients_for_the_open_file_limit_are_refused_upfront() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let under_256 = |args: &[&str]| {
        std::process::Command::new("prlimit")
            .args(["--nofile=256:256", env!("CARGO_BIN_EXE_scalelab"), "--store", store.to_str().unwrap()])
            .args(args)
            .output()
            .expect("prlimit (util-linux) is installed")
    };
    let out = under_256(&["sweep", "--specimen", "scales", "-c", "1,400", "--warmup", "0.1s", "--duration", "0.5s", "-q"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("400 clients need about") && err.contains("256") && err.contains("ulimit"), "{err}");
    assert!(!store.exists(), "nothing stored");
    let out = under_256(&["sweep", "--specimen", "scales", "-c", "4", "--warmup", "0.1s", "--duration", "0.5s", "--json", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["steps"][0]["errors_total"], 0, "{}", run["steps"][0]);
}

/// 18.8: `sweep --url-file FILE` with no positional target (as the README's
/// tour writes it) targets the file's host: recorded as that URL, the server
/// found from its port (nginx), never the idle specimen.
#[test]
fn a_url_file_alone_targets_its_host_not_the_specimen() {
    let nginx = scalelab_testkit::nginx::Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let urls = dir.path().join("urls.txt");
    std::fs::write(&urls, format!("3 {}\n1 {}\n", nginx.url("/index.html"), nginx.url("/index.html?x=1"))).unwrap();
    let run =
        json(&store, &["sweep", "--url-file", urls.to_str().unwrap(), "-c", "2", "--warmup", "0.2s", "--duration", "1s", "--json", "-q"]);
    let origin = nginx.url("/");
    assert_eq!(run["target"], origin.as_str(), "{}", run["target"]);
    assert!(!run.to_string().contains("specimen:"), "nothing about the specimen: {}", run["target"]);
    assert!(run["environment"]["server"].as_str().is_some_and(|s| s.contains("nginx")), "{}", run["environment"]);
    // The server observed is nginx's process tree, found by the port.
    let t = &run["steps"][0]["telemetry"];
    assert!(t["server_cpu_pct"].as_f64().is_some() && t["unavailable"]["server"].is_null(), "nginx's CPU was measured: {t}");
    let hot = t["hottest_threads"].as_array().unwrap();
    assert!(!hot.is_empty() && hot.iter().all(|h| h["name"].as_str().unwrap().starts_with("nginx")), "{t}");
    assert_eq!(run["steps"][0]["errors_total"], 0);
}
