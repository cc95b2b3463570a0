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

fn verdict_kinds(run: &Value) -> Vec<String> {
    run["verdicts"].as_array().map(|v| v.iter().map(|v| v["kind"].as_str().unwrap_or("").to_string()).collect()).unwrap_or_default()
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
