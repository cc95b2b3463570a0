//! HTTP/2 against a real nginx started by the harness (docs/targets.md,
//! "HTTP/2"): h2c by prior knowledge and h2 negotiated by ALPN over TLS,
//! connections x streams, open loop, and what scalelab counts equal to what
//! nginx logged as `HTTP/2.0` (the access-log count of crates/cli/tests/nginx.rs).

mod common;

use common::*;
use scalelab_testkit::nginx::{Nginx, NginxOptions};
use serde_json::Value;

/// nginx with HTTP/2 on its h2c port and, over TLS, by ALPN.
fn nginx_h2() -> Nginx {
    Nginx::start_opts(NginxOptions { tls: true, http2: true, ..Default::default() })
}

/// Successful requests nginx logged inside a step's window, with `protocol`
/// (`HTTP/2.0`, `HTTP/1.1`), and those it logged with another protocol.
fn logged_in_window(nginx: &Nginx, step: &Value, protocol: &str) -> (usize, usize) {
    let start = step["window_start_unix_ms"].as_f64().unwrap();
    let end = step["window_end_unix_ms"].as_f64().unwrap();
    let lines: Vec<_> = nginx.access_log().into_iter().filter(|l| l.unix_ms >= start && l.unix_ms < end).collect();
    let ok = lines.iter().filter(|l| (200..300).contains(&l.status) && l.protocol == protocol).count();
    (ok, lines.iter().filter(|l| l.protocol != protocol).count())
}

/// Requests in flight at each window edge (a level's streams), plus 3 ms
/// of clock alignment between scalelab's window marks and nginx's `$msec`.
fn tolerance(step: &Value) -> f64 {
    2.0 * step["concurrency"].as_f64().unwrap() + step["throughput_per_s"].as_f64().unwrap() * 0.003 + 2.0
}

/// Every step's successes equal nginx's log of `protocol` requests in its
/// window, and nothing else was logged there.
fn check_counts(nginx: &Nginx, run: &Value, protocol: &str) {
    for step in steps(run) {
        let (ok, other) = logged_in_window(nginx, step, protocol);
        let requests = step["requests"].as_f64().unwrap();
        let tol = tolerance(step);
        assert!(requests > 20.0, "too few requests to judge: {step}");
        assert!(
            (requests - ok as f64).abs() <= tol,
            "c={}: scalelab counted {requests} successes, nginx logged {ok} {protocol} (tolerance {tol})",
            step["concurrency"]
        );
        assert_eq!(other, 0, "c={}: requests of another protocol than {protocol} in the window", step["concurrency"]);
    }
}

/// A short sweep (0.3 s warm-up, 0.5 s windows) as JSON, with `extra` options.
fn sweep(store: &std::path::Path, url: &str, extra: &[&str]) -> Value {
    let mut args = vec!["sweep", url, "--warmup", "0.3s", "--duration", "0.5s", "--pause", "0.1s", "--json", "-q"];
    args.extend_from_slice(extra);
    json(store, &args)
}

/// `-c 1,4 --streams 4`: 1 and 4 connections, 4 and 16 streams in flight.
fn assert_connections_x_streams(run: &Value, protocol: &str) {
    let options = &run["schedule"]["options"];
    assert_eq!((options["http_protocol"].as_str(), options["streams"].as_u64()), (Some(protocol), Some(4)), "{options}");
    let s = steps(run);
    let shape: Vec<(u64, u64, u64)> = s
        .iter()
        .map(|s| (s["concurrency"].as_u64().unwrap(), s["connections"].as_u64().unwrap(), s["streams"].as_u64().unwrap()))
        .collect();
    assert_eq!(shape, [(4, 1, 4), (16, 4, 4)]);
    for step in s {
        assert_eq!(step["errors_total"], 0, "{step}");
        assert_eq!(step["reconnects"], 0, "connections are kept: {step}");
    }
    assert!(run["workload"].as_str().unwrap().ends_with(&format!("({protocol}, 4 streams per connection)")), "{}", run["workload"]);
}

#[test]
fn h2c_by_prior_knowledge_counts_match_nginx_access_log() {
    let nginx = nginx_h2();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = format!("h2c://127.0.0.1:{}/index.html", nginx.h2c_port.unwrap());
    let run = sweep(&store, &url, &["-c", "1,4", "--streams", "4"]);
    assert_matches_schema(&run);
    assert_eq!(run["complete"], true);
    assert!(run["environment"]["server"].as_str().unwrap().starts_with("nginx"), "{}", run["environment"]);
    assert_connections_x_streams(&run, "h2c");
    assert_eq!(run["target"], url.as_str());
    check_counts(&nginx, &run, "HTTP/2.0");
    // `show` says what was spoken, how a level is made and what waited on flow control.
    let text = String::from_utf8(run_cmd(&store, &["show", "last"]).stdout).unwrap();
    assert!(text.contains("HTTP/2 (h2c, prior knowledge)") && text.contains("16 = 4 x 4"), "{text}");
    assert!(text.contains("flow control: no request waited for the server's send window."), "{text}");
    // --http 2 on http:// is the same h2c.
    let plain = format!("http://127.0.0.1:{}/index.html", nginx.h2c_port.unwrap());
    let run = sweep(&store, &plain, &["-c", "2", "--http", "2"]);
    assert_eq!(run["schedule"]["options"]["http_protocol"], "h2c");
    check_counts(&nginx, &run, "HTTP/2.0");
}

#[test]
fn https_negotiates_h2_by_alpn_and_http_1_1_when_asked() {
    let nginx = nginx_h2();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = format!("https://127.0.0.1:{}/index.html", nginx.tls_port.unwrap());
    let run = sweep(&store, &url, &["--insecure", "-c", "1,4", "--streams", "4"]);
    assert_matches_schema(&run);
    assert_eq!(run["schedule"]["options"]["http"], "auto");
    assert_connections_x_streams(&run, "h2");
    check_counts(&nginx, &run, "HTTP/2.0");
    // The same server, HTTP/1.1 as asked: its log says so.
    let run = sweep(&store, &url, &["--insecure", "-c", "2", "--http", "1.1"]);
    let options = &run["schedule"]["options"];
    assert_eq!((options["http"].as_str(), options["http_protocol"].as_str()), (Some("1.1"), Some("http/1.1")), "{options}");
    assert!(options.get("streams").is_none() && steps(&run)[0].get("connections").is_none());
    check_counts(&nginx, &run, "HTTP/1.1");
}

#[test]
fn an_open_loop_spreads_its_in_flight_requests_over_streams() {
    let nginx = nginx_h2();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = format!("h2c://127.0.0.1:{}/index.html", nginx.h2c_port.unwrap());
    let run = sweep(&store, &url, &["--rate", "200,400", "--max-in-flight", "8", "--streams", "4"]);
    assert_matches_schema(&run);
    for step in steps(&run) {
        assert_eq!((step["concurrency"].as_u64(), step["connections"].as_u64()), (Some(8), Some(2)), "8 in flight on 2 connections");
        // Beside a CPU hog the client itself may fall behind its schedule
        // (a request or two `dropped`, said so): nothing the server failed.
        let dropped = step["errors"]["dropped"].as_u64().unwrap_or(0);
        assert_eq!(step["errors_total"].as_u64(), Some(dropped), "{step}");
        assert!(dropped * 20 <= step["requests"].as_u64().unwrap(), "{step}");
        let achieved = step["achieved_pct"].as_f64().unwrap();
        assert!(achieved > 80.0, "an idle nginx keeps up with {}/s: {achieved}%", step["offered_rate_per_s"]);
    }
    check_counts(&nginx, &run, "HTTP/2.0");
}

#[test]
fn connections_nginx_ends_with_goaway_are_counted_by_class_and_the_run_goes_on() {
    // nginx sends GOAWAY at a connection's 20th request and leaves the
    // streams sent after it unprocessed (unlogged).
    let nginx = Nginx::start_opts(NginxOptions { http2: true, keepalive_requests: Some(20), ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = format!("h2c://127.0.0.1:{}/index.html", nginx.h2c_port.unwrap());
    let run = sweep(&store, &url, &["-c", "2", "--streams", "4"]);
    assert_matches_schema(&run);
    assert_eq!(run["complete"], true);
    let step = &steps(&run)[0];
    let goaway = step["errors"]["goaway"].as_u64().unwrap_or(0);
    assert!(goaway > 0, "streams past a GOAWAY's last stream: {step}");
    assert_eq!(step["errors_total"].as_u64(), Some(goaway), "no other class: {}", step["errors"]);
    assert!(step["error_messages"]["goaway"].as_str().unwrap().starts_with("GOAWAY from the server (NO_ERROR (0x0))"), "{step}");
    let requests = step["requests"].as_u64().unwrap();
    assert!(step["reconnects"].as_u64().unwrap() >= requests / 20 / 2, "each connection replaced after its 20: {step}");
    // What was refused is not in the log; what succeeded is.
    check_counts(&nginx, &run, "HTTP/2.0");
    assert!(step["flow_stalls"] == 0 && step["flow_stall_ms"] == 0.0, "GETs have no body to hold back: {step}");
}

#[test]
fn more_streams_than_the_server_allows_are_warned_of_and_wait_without_errors() {
    let nginx = Nginx::start_opts(NginxOptions { http2: true, max_concurrent_streams: Some(2), ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = format!("h2c://127.0.0.1:{}/index.html", nginx.h2c_port.unwrap());
    let out = run_cmd(&store, &["sweep", &url, "-c", "1", "--streams", "4", "--warmup", "0.2s", "--duration", "0.5s", "--json", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("allows 2 concurrent streams per connection (SETTINGS_MAX_CONCURRENT_STREAMS)"), "{}", stderr(&out));
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["schedule"]["options"]["server_max_streams"], 2);
    // The streams past the limit wait their turn: no error, nothing reset.
    assert_eq!(steps(&run)[0]["errors_total"], 0, "{}", steps(&run)[0]);
    check_counts(&nginx, &run, "HTTP/2.0");
    let text = String::from_utf8(run_cmd(&store, &["show", "last"]).stdout).unwrap();
    assert!(text.contains("the server allows 2 streams per connection"), "{text}");
}

#[test]
fn http2_options_that_cannot_act_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    // Nothing listens on port 1: the refusals come before any connection.
    assert_bad_input(&store, &["sweep", "--streams", "2", "-c", "1"], "--streams does not apply to the specimen");
    assert_bad_input(&store, &["sweep", "h2c://127.0.0.1:1/", "--no-keepalive"], "--no-keepalive does not apply to HTTP/2");
    assert_bad_input(&store, &["sweep", "http://127.0.0.1:1/", "--streams", "4"], "--streams needs HTTP/2");
    assert_bad_input(&store, &["sweep", "h2c://127.0.0.1:1/", "--http", "1.1"], "does not apply to an h2c:// target");
    assert_bad_input(&store, &["sweep", "http://127.0.0.1:1/", "--http", "3"], "give 1.1, 2 or auto");
    assert_bad_input(
        &store,
        &["sweep", "postgres://u@127.0.0.1:1/db", "--workload", "point-select", "--streams", "2"],
        "--streams does not apply to a SQL target",
    );
    // A server that does not speak HTTP/2 where it was asked to.
    let nginx = Nginx::start_with(true);
    assert_bad_input(&store, &["sweep", &nginx.url("/index.html"), "--http", "2", "-c", "1"], "over HTTP/2");
    let tls = format!("https://127.0.0.1:{}/index.html", nginx.tls_port.unwrap());
    assert_bad_input(&store, &["sweep", &tls, "--insecure", "--streams", "2"], "did not choose HTTP/2 by ALPN");
    assert_bad_input(&store, &["sweep", &tls, "--insecure", "--http", "2"], "did not choose HTTP/2");
}

/// Runs `scalelab ARGS` and returns its output (exit status unchecked).
fn run_cmd(store: &std::path::Path, args: &[&str]) -> std::process::Output {
    common::run(store, args)
}
