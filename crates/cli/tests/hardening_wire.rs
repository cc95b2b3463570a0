//! What goes on the wire and what comes back (issue 39): request framing
//! the user can break with `-H`, responses with bytes after their body,
//! open-loop requests that were never sent, control bytes in the HTML
//! report, SQL passwords from the environment and files, and rate-sweep
//! messages. Each test drives the real binary against loopback servers.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A loopback HTTP/1.1 server that keeps every byte it received and
/// answers the n-th request (0-based, across connections) with `reply(n)`.
struct FakeHttp {
    url: String,
    received: Arc<Mutex<Vec<u8>>>,
}

impl FakeHttp {
    fn start(reply: fn(usize) -> Vec<u8>) -> FakeHttp {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let count = Arc::new(AtomicUsize::new(0));
        let got = received.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let (got, count) = (got.clone(), count.clone());
                std::thread::spawn(move || serve(conn, reply, &got, &count));
            }
        });
        FakeHttp { url, received }
    }

    /// The request heads received so far (bodies dropped).
    fn heads(&self) -> Vec<String> {
        let text = String::from_utf8_lossy(&self.received.lock().unwrap()).into_owned();
        text.split("\r\n\r\n")
            .filter(|h| h.contains(" HTTP/1.1\r\n"))
            .map(|h| h[h.find(|c: char| c.is_ascii_uppercase()).unwrap_or(0)..].to_string())
            .collect()
    }
}

/// One connection: each request head, then its Content-Length body, is
/// answered with `reply(n)`.
fn serve(mut conn: TcpStream, reply: fn(usize) -> Vec<u8>, got: &Mutex<Vec<u8>>, count: &AtomicUsize) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let Ok(n) = conn.read(&mut chunk) else { return };
        if n == 0 {
            return;
        }
        got.lock().unwrap().extend_from_slice(&chunk[..n]);
        buf.extend_from_slice(&chunk[..n]);
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let body: usize = head.lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
            if buf.len() < end + 4 + body {
                break;
            }
            buf.drain(..end + 4 + body);
            if conn.write_all(&reply(count.fetch_add(1, Ordering::SeqCst))).is_err() {
                return;
            }
        }
    }
}

fn ok_reply(_: usize) -> Vec<u8> {
    b"HTTP/1.1 200 OK\r\nServer: fake\r\nContent-Length: 2\r\n\r\nok".to_vec()
}

/// A short closed-loop sweep of `url` with `extra` options, as JSON.
fn quick_sweep(store: &std::path::Path, url: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["sweep", url, "-c", "1", "--warmup", "0.1s", "--duration", "1s", "--pause", "0s", "--json", "-q"];
    args.extend_from_slice(extra);
    json(store, &args)
}

/// Item 13: a user header replaces the default of the same name (one
/// Host, nginx answers 400 to two); framing headers that contradict the
/// body, Transfer-Encoding (the body is sent with Content-Length), a
/// header given twice where only one may be, and control characters in a
/// value are refused with one line, exit 2, nothing stored.
#[test]
fn user_headers_replace_defaults_and_conflicting_framing_is_refused() {
    let server = FakeHttp::start(ok_reply);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    quick_sweep(&store, &server.url, &["-H", "Host: example.test", "-H", "Content-Length: 5", "--body", "hello", "-X", "POST"]);
    let heads = server.heads();
    assert!(heads.len() > 3, "{heads:?}");
    for head in &heads {
        let named = |name: &str| head.lines().filter(|l| l.to_ascii_lowercase().starts_with(name)).map(str::to_string).collect::<Vec<_>>();
        assert_eq!(named("host:"), vec!["Host: example.test".to_string()], "one Host, the user's: {head}");
        assert_eq!(named("content-length:"), vec!["Content-Length: 5".to_string()], "one Content-Length: {head}");
    }

    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = server.url.as_str();
    for (extra, says) in [
        (&["-H", "Content-Length: 0", "--body", "hello"][..], "Content-Length"),
        (&["-H", "Content-Length: 7"][..], "Content-Length"),
        (&["-H", "Content-Length: five", "--body", "hello"][..], "Content-Length"),
        (&["-H", "Transfer-Encoding: chunked", "--body", "hello"][..], "Transfer-Encoding"),
        (&["-H", "Transfer-Encoding: chunked", "-H", "Content-Length: 5", "--body", "hello"][..], "Transfer-Encoding"),
        (&["-H", "Host: a", "-H", "host: b"][..], "Host"),
        (&["-H", "Content-Length: 5", "-H", "Content-Length: 5", "--body", "hello"][..], "Content-Length"),
        (&["-H", "X-Note: red\x1b[31m"][..], "X-Note"),
        (&["-H", "X-Note: a\x01b"][..], "X-Note"),
        (&["-H", "X-Note: a\x7fb"][..], "X-Note"),
        (&["-H", "X-Note: a\u{85}b"][..], "X-Note"),
    ] {
        let mut args = vec!["sweep", url, "-c", "1", "--duration", "0.2s", "-q"];
        args.extend_from_slice(extra);
        assert_bad_input(&store, &args, says);
    }
    // A tab is allowed inside a value (RFC 9110 field-value).
    quick_sweep(&store, url, &["-H", "X-Note: a\tb"]);
}

/// Every tenth response after the first carries bytes after its
/// Content-Length body (a server bug, or a desynchronised proxy).
fn trailing_bytes_reply(n: usize) -> Vec<u8> {
    let mut r = ok_reply(n);
    if n > 0 && n.is_multiple_of(10) {
        r.extend_from_slice(b"EXTRA");
    }
    r
}

/// Item 22: bytes after a Content-Length body are a malformed response,
/// counted as an error (class `other`), not dropped with 0 errors.
#[test]
fn bytes_after_a_content_length_body_count_as_malformed_responses() {
    let server = FakeHttp::start(trailing_bytes_reply);
    let dir = tempfile::tempdir().unwrap();
    let run = quick_sweep(&dir.path().join("s.db"), &server.url, &[]);
    let step = &steps(&run)[0];
    let requests = step["requests"].as_f64().unwrap();
    let other = step["errors"]["other"].as_f64().unwrap_or(0.0);
    assert!(requests > 50.0, "{step}");
    assert!(other >= requests / 12.0 && other <= requests / 7.0, "one in ten malformed: {other} errors, {requests} requests: {step}");
    let message = step["error_messages"]["other"].as_str().unwrap_or_default();
    assert!(message.contains("malformed response") && message.contains("after"), "{message}");
}

/// Every tenth response is a 500.
fn some_500_reply(n: usize) -> Vec<u8> {
    if n > 0 && n.is_multiple_of(10) {
        b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n".to_vec()
    } else {
        ok_reply(n)
    }
}

/// Item 23: in a rate sweep the errors line names the step by its rate,
/// not by its in-flight cap ("at 8").
#[test]
fn rate_sweep_errors_name_the_step_by_its_rate() {
    let server = FakeHttp::start(some_500_reply);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let out = run(
        &store,
        &["sweep", &server.url, "--rate", "300", "--max-in-flight", "8", "--warmup", "0.1s", "--duration", "0.5s", "--pause", "0s", "-q"],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.starts_with("errors:")).unwrap_or_else(|| panic!("no errors line: {text}{}", stderr(&out)));
    assert!(line.contains("http_5xx at 300/s:"), "{line}");
    assert!(!line.contains(" at 8"), "{line}");
}

/// Item 16: at a rate the client cannot send (2 M req/s), every request
/// due in the window is accounted for (sent, or dropped), and a step whose
/// sends were late is flagged client-saturated as the verdict says.
#[test]
fn an_open_loop_beyond_the_client_accounts_for_every_request_and_flags_the_client() {
    let _cpu = cpu_exclusive();
    let server = FakeHttp::start(ok_reply);
    let dir = tempfile::tempdir().unwrap();
    let run = json(
        &dir.path().join("s.db"),
        &["sweep", &server.url, "--rate", "2000000", "--warmup", "0.1s", "--duration", "0.5s", "--pause", "0s", "--json", "-q"],
    );
    let s = &steps(&run)[0];
    let due = 2_000_000.0 * s["window_s"].as_f64().unwrap();
    let accounted = s["requests"].as_f64().unwrap() + s["errors_total"].as_f64().unwrap();
    assert!(accounted >= 0.9 * due && accounted <= 1.1 * due, "{accounted} of {due} due requests accounted for: {s}");
    let sent = accounted - s["dropped"].as_f64().unwrap();
    let late_pct = 100.0 * s["late_sends"].as_f64().unwrap() / sent.max(1.0);
    assert!(late_pct >= 5.0, "the client cannot keep 2 M req/s: {late_pct} % late: {s}");
    assert_eq!(s["client_saturated"], true, "late sends {late_pct} %: {s}");
}

/// Item 10: a PostgreSQL password need not be on the command line (where
/// `ps` shows it): PGPASSWORD and ~/.pgpass are read as libpq reads them; a
/// ~/.pgpass others can read is refused (one line, exit 2, nothing stored);
/// the secret is neither printed nor stored.
#[test]
fn a_postgres_password_comes_from_pgpassword_or_pgpass() {
    use scalelab_testkit::postgres::{Postgres, SCRAM_USER};
    use std::os::unix::fs::PermissionsExt;
    let pg = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let out = run(&store, &["prepare", &pg.url(), "--dataset", "sbtest", "--scale", "1", "--rows", "100", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let url = format!("postgres://{}@127.0.0.1:{}/bench", SCRAM_USER.0, pg.port);
    let sweep =
        ["sweep", url.as_str(), "-c", "1", "--warmup", "0", "--pause", "0", "-d", "200ms", "--workload", "point-select", "--json", "-q"];
    let home = tempfile::tempdir().unwrap();
    let home_s = home.path().to_str().unwrap();
    for env in [vec![("PGPASSWORD", SCRAM_USER.1), ("HOME", home_s)], vec![("HOME", home_s)]] {
        if env.len() == 1 {
            let pgpass = home.path().join(".pgpass");
            std::fs::write(&pgpass, format!("127.0.0.1:*:bench:{}:{}\n", SCRAM_USER.0, SCRAM_USER.1)).unwrap();
            std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let out = run_env(&store, &env, &sweep);
        let (text, err) = (String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert!(out.status.success(), "{env:?}: {err}");
        assert!(!text.contains(SCRAM_USER.1) && !err.contains(SCRAM_USER.1), "the secret is shown");
        assert!(!std::fs::read(&store).unwrap().windows(SCRAM_USER.1.len()).any(|w| w == SCRAM_USER.1.as_bytes()), "the secret is stored");
    }
    // PGSERVICE: the service's password (libpq's pg_service.conf), before
    // a wrong PGPASSWORD, as libpq takes it.
    let services = home.path().join("services.conf");
    std::fs::write(&services, format!("[bench]\npassword={}\n", SCRAM_USER.1)).unwrap();
    std::fs::set_permissions(&services, std::fs::Permissions::from_mode(0o600)).unwrap();
    let svc_env =
        [("PGSERVICE", "bench"), ("PGSERVICEFILE", services.to_str().unwrap()), ("PGPASSWORD", "wrong"), ("HOME", "/nonexistent")];
    let out = run_env(&store, &svc_env, &sweep);
    assert!(out.status.success(), "PGSERVICE: {}", stderr(&out));
    // A password in the URL works and is warned about: `ps` shows it.
    let in_url = format!("postgres://{}:{}@127.0.0.1:{}/bench", SCRAM_USER.0, SCRAM_USER.1, pg.port);
    let mut with_pw = sweep;
    with_pw[1] = &in_url;
    with_pw[with_pw.len() - 1] = "--no-tui";
    let out = run_env(&store, &[("HOME", home_s)], &with_pw);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("the password in the URL is visible in `ps`") && !err.contains(SCRAM_USER.1), "{err}");
    std::fs::set_permissions(home.path().join(".pgpass"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let fresh = dir.path().join("fresh.db");
    let out = run_env(&fresh, &[("HOME", home_s)], &sweep);
    let err = stderr(&out);
    assert_eq!((out.status.code(), err.lines().count()), (Some(2), 1), "{err}");
    assert!(err.contains("chmod 600") && !err.contains(SCRAM_USER.1), "{err}");
    assert!(!fresh.exists());
}

/// Item 10: `--password-file` gives the SQL password (a regular file,
/// chmod 600); a file others can read, or a fifo/device, is refused with
/// one line, exit 2, nothing stored.
#[test]
fn a_sql_password_comes_from_a_password_file() {
    use scalelab_testkit::postgres::{Postgres, SCRAM_USER};
    use std::os::unix::fs::PermissionsExt;
    let pg = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = format!("postgres://{}@127.0.0.1:{}/bench", SCRAM_USER.0, pg.port);
    let file = dir.path().join("pw");
    std::fs::write(&file, format!("{}\n", SCRAM_USER.1)).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let f = file.to_str().unwrap();
    let out = run_env(
        &store,
        &[("HOME", "/nonexistent")],
        &["--password-file", f, "prepare", &url, "--dataset", "sbtest", "--scale", "1", "--rows", "100", "-q"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains(SCRAM_USER.1));
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let fresh = dir.path().join("fresh.db");
    for (path, says) in [(f, "chmod 600"), ("/dev/zero", "not a regular file")] {
        assert_bad_input(&fresh, &["--password-file", path, "sweep", &url, "--workload", "point-select", "-d", "200ms", "-q"], says);
    }
    // Where no database logs in, the file would be read and ignored: refused.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    for (args, says) in [
        (vec!["sweep", "-c", "1", "-d", "200ms"], "does not apply to the specimen"),
        (vec!["sweep", "http://127.0.0.1:9/", "-d", "200ms"], "does not apply to an HTTP target"),
        (vec!["show", "last"], "--password-file is for a command that logs in to a database"),
    ] {
        let mut all = vec!["--password-file", f];
        all.extend(args);
        assert_bad_input(&fresh, &all, says);
    }
    assert!(!fresh.exists(), "nothing stored");
}

/// Item 10: a MySQL password comes from MYSQL_PWD or ~/.my.cnf's
/// `[client]` section, as the mysql client reads them.
#[test]
fn a_mysql_password_comes_from_mysql_pwd_or_my_cnf() {
    use std::os::unix::fs::PermissionsExt;
    let my = scalelab_testkit::mariadb::MariaDb::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = my.url().replace("bench:bench@", "bench@");
    let home = tempfile::tempdir().unwrap();
    let home_s = home.path().to_str().unwrap();
    let prepare = ["prepare", url.as_str(), "--dataset", "sbtest", "--scale", "1", "--rows", "100", "--force", "-q"];
    let out = run_env(&store, &[("MYSQL_PWD", "bench"), ("HOME", home_s)], &prepare);
    assert!(out.status.success(), "MYSQL_PWD: {}", stderr(&out));
    let cnf = home.path().join(".my.cnf");
    std::fs::write(&cnf, "[mysql]\nuser=x\n[client]\npassword=bench\n").unwrap();
    std::fs::set_permissions(&cnf, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = run_env(&store, &[("HOME", home_s)], &prepare);
    assert!(out.status.success(), "~/.my.cnf: {}", stderr(&out));
}
