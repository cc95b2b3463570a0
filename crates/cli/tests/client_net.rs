//! `sweep --client-net`: the load clients in a network namespace scalelab
//! creates (`scalelab-<pid>`), behind a link that delays, paces and drops
//! their packets; the namespace is gone after the run, also after a
//! `kill -9` followed by another run. Needs root (as the preflight's
//! namespace tests do); the windows are short and the assertions are
//! bounds that hold beside a CPU hog.

mod common;

use common::{bin, run, spawn, stderr};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// One namespace test at a time: they watch /run/netns, and each removes
/// the namespaces of killed runs.
fn exclusive() -> common::MachineLock {
    common::machine_lock("netns")
}

fn netns_of(pid: u32) -> std::path::PathBuf {
    Path::new("/run/netns").join(format!("scalelab-{pid}"))
}

/// A JSON sweep of the specimen with the short schedule, behind `net`;
/// returns the run document and the scalelab process's pid.
fn sweep(store: &Path, extra: &[&str], net: &str, conc: &str) -> (Value, u32) {
    let mut args =
        vec!["sweep", "--client-net", net, "-c", conc, "--warmup", "0.3s", "--duration", "1.5s", "--pause", "0.2s", "--json", "-q"];
    args.extend_from_slice(extra);
    let child = spawn(store, &args);
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "scalelab {args:?} failed ({:?}): {}", out.status.code(), stderr(&out));
    (serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stderr(&out))), pid)
}

fn mean_ms(step: &Value) -> f64 {
    step["latency_ms"]["mean"].as_f64().unwrap_or_else(|| panic!("no mean latency: {step}"))
}

#[test]
fn a_delay_of_20ms_gives_one_client_a_mean_of_40ms_and_leaves_no_namespace() {
    let _one = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let (doc, pid) = sweep(&store, &[], "delay=20ms", "1");
    let step = &doc["steps"][0];
    // Two traversals of the link per request (keep-alive: no connect in the window).
    assert!(mean_ms(step) >= 40.0, "mean {} ms with delay=20ms each way: {step}", mean_ms(step));
    assert!(mean_ms(step) < 200.0, "{step}");
    assert!(step.get("connect_latency_ms").is_none(), "keep-alive: no connection opened in the window: {step}");
    common::assert_matches_schema(&doc);
    assert_eq!(doc["schedule"]["options"]["client_net"], "delay=20ms", "{}", doc["schedule"]);
    // The preflight stored with the run knows the wire is emulated.
    let checks = doc["environment"]["preflight"].as_array().expect("preflight checks stored with the run");
    let network = checks.iter().find(|c| c["id"] == "target.network").expect("target.network");
    assert!(network["figure"].as_str().unwrap().contains("emulated client network (delay=20ms)"), "{network}");
    assert!(!netns_of(pid).exists(), "namespace scalelab-{pid} left behind");
    let devs = std::fs::read_to_string("/proc/net/dev").unwrap();
    assert!(!devs.contains(&format!("slnet-{pid}")), "device slnet-{pid} left behind");
    // `show` and the report's configuration say which network the clients had.
    let show = run(&store, &["show", "last"]);
    assert!(String::from_utf8_lossy(&show.stdout).contains("client network delay=20ms"), "{}", String::from_utf8_lossy(&show.stdout));
    let md = dir.path().join("r.md");
    let out = run(&store, &["report", "last", "--format", "md", "-o", md.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.lines().any(|l| l.contains("client network") && l.contains("delay=20ms")), "{text}");

    // Without the option the same sweep is an order of magnitude faster.
    let out = run(&store, &["sweep", "-c", "1", "--warmup", "0.3s", "--duration", "1s", "--pause", "0.2s", "--json", "-q"]);
    let plain: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(mean_ms(&plain["steps"][0]) < 20.0, "{}", plain["steps"][0]);
    assert!(plain["schedule"]["options"].get("client_net").is_none());
    let network = plain["environment"]["preflight"].as_array().unwrap().iter().find(|c| c["id"] == "target.network").unwrap().clone();
    assert!(network["figure"].as_str().unwrap().starts_with("loopback: no NIC"), "{network}");
}

#[test]
fn after_kill_9_the_next_run_removes_the_namespace_left_behind() {
    let _one = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let mut child =
        spawn(&store, &["sweep", "--client-net", "delay=5ms", "-c", "1", "--warmup", "0.3s", "--duration", "60s", "-q", "--no-tui"]);
    let pid = child.id();
    let t0 = Instant::now();
    while !netns_of(pid).exists() {
        assert!(t0.elapsed() < Duration::from_secs(30), "scalelab-{pid} never appeared");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    child.kill().unwrap(); // SIGKILL: no clean-up runs
    child.wait().unwrap();
    assert!(netns_of(pid).exists(), "a killed run leaves its namespace (the case to clean up)");
    let child =
        spawn(&store, &["sweep", "--client-net", "delay=1ms", "-c", "1", "--warmup", "0.1s", "--duration", "0.5s", "-q", "--no-tui"]);
    let next = child.id();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}: {}", out.status.code(), stderr(&out));
    assert!(stderr(&out).contains(&format!("removed network namespace scalelab-{pid}")), "{}", stderr(&out));
    assert!(!netns_of(pid).exists() && !netns_of(next).exists());
}

#[test]
fn a_bad_spec_is_one_line_and_exit_2_with_nothing_created() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    for (spec, says) in [
        ("delay=40", "--client-net: delay='40': use a time with a unit"),
        ("latency=4ms", "--client-net: unknown key 'latency'"),
        ("rate=256k", "--client-net: rate='256k'"),
        ("loss=0.1", "--client-net: loss='0.1'"),
        ("jitter=5ms", "--client-net: jitter 5ms is larger than delay 0ns"),
    ] {
        let out = bin().arg("--store").arg(&store).args(["sweep", "--client-net", spec, "-c", "1"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{spec}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{spec}: {err}");
        assert!(err.contains(says), "{spec}: {err}");
        assert!(!store.exists(), "{spec}: the store was created");
    }
}

#[test]
fn without_keep_alive_the_connect_time_shows_apart_from_the_request_latency() {
    let _one = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let (doc, _) = sweep(&store, &["--no-keepalive"], "delay=20ms", "2");
    let step = &doc["steps"][0];
    common::assert_matches_schema(&doc);
    let c = &step["connect_latency_ms"];
    // A handshake is one round trip (SYN out, SYN-ACK back); the request adds another.
    // About 35 connections in 1.5 s; a client starved of CPU (its own run-queue
    // wait says so) opens fewer, but each still shows the two traversals.
    let starved = step["client_runq_wait_pct"].as_f64().is_some_and(|w| w > 50.0);
    let want = if starved { 1 } else { 5 };
    if starved {
        eprintln!("note: the client waited for a CPU {}% of the window: judging the connect count at >= 1", step["client_runq_wait_pct"]);
    }
    assert!(c["count"].as_u64().unwrap() >= want, "{step}");
    assert!(c["mean"].as_f64().unwrap() >= 40.0, "{step}");
    assert!(mean_ms(step) >= c["mean"].as_f64().unwrap() + 40.0, "{step}");
    let show = String::from_utf8_lossy(&run(&store, &["show", "last"]).stdout).into_owned();
    assert!(show.contains("connect time of the connections opened in the window"), "{show}");
}

/// The most threads process `pid` had while `f` ran (polled every 20 ms).
fn max_threads_during(pid: u32, f: impl FnOnce()) -> u64 {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    let (stop, max) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
    let poller = {
        let (stop, max) = (stop.clone(), max.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                let n = status.lines().find_map(|l| l.strip_prefix("Threads:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
                max.fetch_max(n, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    f();
    stop.store(true, Ordering::Relaxed);
    poller.join().unwrap();
    max.load(Ordering::Relaxed)
}

/// The specimen in `mode` as a server of its own; returns it and its address.
fn specimen(mode: &str) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child =
        bin().args(["specimen", "--port", "0", "--mode", mode, "--work-us", "10"]).stdout(std::process::Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line.split_whitespace().nth(2).unwrap().to_string();
    (child, addr)
}

/// The slow-clients experiment: 100 ms each way, 10 then 100 clients. A
/// thread-per-connection server needs a thread per connection; the
/// event-driven default holds them all with one loop per CPU.
#[test]
fn slow_clients_pin_a_thread_each_on_thread_per_connection_and_not_on_the_default() {
    let _one = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let cpus = std::thread::available_parallelism().unwrap().get() as u64;
    let (mut seen, mut recorded) = (Vec::new(), Vec::new());
    for mode in ["thread-per-connection", "scales"] {
        let (mut server, addr) = specimen(mode);
        let url = format!("http://{addr}/");
        let (mut at, mut told) = (Vec::new(), Vec::new());
        for c in ["10", "100"] {
            let max = max_threads_during(server.id(), || {
                let args = ["sweep", &url, "--client-net", "delay=100ms", "-c", c, "--warmup", "0.5s", "--duration", "1s", "--json", "-q"];
                let out = run(&store, &args);
                assert!(out.status.success(), "{mode} c={c}: {}", stderr(&out));
                let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
                let step = &doc["steps"][0];
                assert_eq!(step["errors_total"], 0, "{mode} c={c}: {step}");
                assert!(mean_ms(step) >= 200.0, "{mode} c={c}: two traversals of 100 ms: {step}");
                // The run's own telemetry shows the server's threads and memory.
                let t = &step["telemetry"];
                told.push((
                    t["server_threads"].as_u64().unwrap_or_else(|| panic!("no server_threads: {t}")),
                    t["server_rss_mb"].as_f64().unwrap_or_else(|| panic!("no server_rss_mb: {t}")),
                ));
            });
            at.push(max);
        }
        let _ = server.kill();
        let _ = server.wait();
        seen.push((mode, at));
        recorded.push((mode, told));
    }
    eprintln!("threads and RSS (MB) the runs recorded at 10 and 100 slow clients: {recorded:?}");
    let (tpc, ev) = (&recorded[0].1, &recorded[1].1);
    assert!(tpc[1].0 >= 100 && tpc[1].0 >= tpc[0].0 + 80, "recorded thread-per-connection threads: {recorded:?}");
    assert!(ev[1].0 <= ev[0].0 + 1 && ev[1].0 <= cpus + 3, "recorded event-driven threads: {recorded:?}");
    // Each thread has its own stack: the memory grows with the threads (the event loop's does not).
    assert!(tpc[1].1 > tpc[0].1, "recorded thread-per-connection RSS: {recorded:?}");
    eprintln!("threads at 10 and 100 slow clients: {seen:?}");
    let (tpc, ev) = (&seen[0].1, &seen[1].1);
    assert!(tpc[1] >= 100 && tpc[1] >= tpc[0] + 80, "thread-per-connection threads at 10 and 100 slow clients: {seen:?}");
    assert!(ev[1] <= ev[0] + 1 && ev[1] <= cpus + 3, "the event-driven default's threads at 10 and 100 slow clients: {seen:?}");
}

/// The same experiment on real servers: Apache's worker MPM serves each
/// connection with a thread (25 to a process, more processes started as
/// clients arrive), nginx holds them all in its one worker. The runs' own
/// telemetry records both.
#[test]
fn slow_clients_take_a_thread_each_on_apache_and_not_on_nginx() {
    use scalelab_testkit::apache::{Apache, Mpm};
    let _one = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let threads_at = |url: &str, c: &str| -> u64 {
        // Apache starts at most a doubling number of processes a second: a 2 s warm-up lets it catch up.
        let args = ["sweep", url, "--client-net", "delay=100ms", "-c", c, "--warmup", "2s", "--duration", "1s", "--json", "-q"];
        let mut out = run(&store, &args);
        if !out.status.success() && stderr(&out).contains("nothing succeeded") {
            // A machine so busy that no request finished in the window (the
            // client reports its own lag): once more, it is not what is tested.
            eprintln!("note: retried once, a starved window: {}", stderr(&out));
            out = run(&store, &args);
        }
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let step = &doc["steps"][0];
        // Beside a CPU hog Apache may still be starting threads when the
        // window closes: requests queued for one are unfinished, not failed.
        let unfinished = step["errors"]["unfinished"].as_u64().unwrap_or(0);
        assert_eq!(step["errors_total"].as_u64(), Some(unfinished), "{args:?}: {step}");
        step["telemetry"]["server_threads"].as_u64().unwrap_or_else(|| panic!("no server_threads: {step}"))
    };
    let apache = Apache::start(Mpm::Worker { threads_per_child: 25 }, 1);
    let a = [threads_at(&apache.url("/index.html"), "10"), threads_at(&apache.url("/index.html"), "100")];
    drop(apache);
    let nginx = scalelab_testkit::nginx::Nginx::start();
    let n = [threads_at(&nginx.url("/"), "10"), threads_at(&nginx.url("/"), "100")];
    eprintln!("server threads at 10 and 100 slow clients: apache {a:?}, nginx {n:?}");
    assert!(a[1] >= 100 && a[1] >= a[0] + 50, "Apache worker threads at 10 and 100 slow clients: {a:?}");
    assert!(n[1] <= n[0] + 1 && n[1] <= 4, "nginx threads at 10 and 100 slow clients: {n:?}");
}

/// A database target goes through the same link. The clients connect from
/// the namespace's address, so the run says so: a pg_hba.conf that trusts
/// only 127.0.0.1 refuses them. Allowed, PostgreSQL point-selects from one
/// client behind 20 ms each way take at least 40 ms (one round trip per
/// query; the connection was opened before the window).
#[test]
fn a_postgres_target_goes_through_the_client_network() {
    let _one = exclusive();
    let pg = scalelab_testkit::postgres::Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = pg.url();
    common::prepare_sbtest(&store, &url, 1000);
    let args = ["sweep", &url, "--workload", "point-select", "-c", "1", "--warmup", "0.5s", "--duration", "1.5s", "--json", "-q"];
    let net = [&args[..], &["--client-net", "delay=20ms"]].concat();
    let refused = run(&store, &net);
    assert!(!refused.status.success(), "pg_hba.conf trusts 127.0.0.1 only: {}", stderr(&refused));
    let err = stderr(&refused);
    assert!(err.contains("note: the clients connect from 10.253.") && err.contains("must allow 10.253.0.0/16"), "{err}");
    let hba = pg.dir().join("data/pg_hba.conf");
    let rules = std::fs::read_to_string(&hba).unwrap();
    std::fs::write(&hba, format!("{rules}host all all 10.253.0.0/16 trust\n")).unwrap();
    assert_eq!(pg.psql("bench", "SELECT pg_reload_conf()"), "t");

    let out = run(&store, &net);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let step = &doc["steps"][0];
    assert_eq!(step["errors_total"], 0, "{step}");
    assert!(mean_ms(step) >= 40.0 && mean_ms(step) < 200.0, "point-select behind delay=20ms: {step}");
    assert_eq!(doc["schedule"]["options"]["client_net"], "delay=20ms");
    let out = run(&store, &args);
    let plain: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(mean_ms(&plain["steps"][0]) < 20.0, "without the link: {}", plain["steps"][0]);
}

/// A 64 kbit/s link carries 8,000 bytes a second each way; every response
/// is at least 140 bytes on the wire (its status line, headers and body,
/// plus 40 bytes of IP and TCP headers), so at most 57 responses a second
/// fit, however many clients ask.
#[test]
fn a_rate_limited_client_network_bounds_the_throughput() {
    let _one = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let (doc, _) = sweep(&store, &["--work-us", "10"], "rate=64kbit", "10");
    let step = &doc["steps"][0];
    let x = step["throughput_per_s"].as_f64().unwrap();
    assert!(x * 140.0 <= 8_000.0 * 1.05, "{x:.0} req/s through a 64 kbit/s link: {step}");
    assert!(x >= 5.0, "{x:.0} req/s: the link should still carry some: {step}");
    assert_eq!(doc["schedule"]["options"]["client_net"], "rate=64kbit");
}

#[test]
fn ctrl_c_ends_the_run_and_removes_the_namespace() {
    let _one = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let child =
        spawn(&store, &["sweep", "--client-net", "delay=5ms", "-c", "1,2", "--warmup", "0.2s", "--duration", "60s", "-q", "--no-tui"]);
    let pid = child.id();
    let t0 = Instant::now();
    while !netns_of(pid).exists() {
        assert!(t0.elapsed() < Duration::from_secs(30), "scalelab-{pid} never appeared");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let mut child = Reaped(Some(child));
    // SAFETY: signalling the child we spawned, by its pid.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGINT) }, 0);
    // Timed from the signal, not from the start: a starved machine may take
    // long to set the namespace up, which is not what this test is about.
    // The run stops at its step's next whole second, then cleans up.
    let signalled = Instant::now();
    let out = child.wait(Duration::from_secs(20)).unwrap_or_else(|| panic!("the run did not stop within 20 s of SIGINT"));
    eprintln!("stopped {:.1} s after SIGINT", signalled.elapsed().as_secs_f64());
    assert!(stderr(&out).contains("interrupted"), "{:?}: {}", out.status.code(), stderr(&out));
    assert!(!netns_of(pid).exists(), "namespace scalelab-{pid} left after Ctrl-C");
}

/// A scalelab child that is killed (and its namespace deleted) if the test
/// ends without it having exited: a hung run never outlives its test.
struct Reaped(Option<std::process::Child>);

impl Reaped {
    /// Waits at most `limit` for the child to exit; returns its output, or
    /// None (the child is then killed) when it was still running.
    fn wait(&mut self, limit: Duration) -> Option<std::process::Output> {
        let t0 = Instant::now();
        let child = self.0.as_mut().expect("a child");
        while t0.elapsed() < limit {
            if child.try_wait().unwrap().is_some() {
                return Some(self.0.take().unwrap().wait_with_output().unwrap());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        None
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::process::Command::new("ip").args(["netns", "del", &format!("scalelab-{}", child.id())]).output();
        }
    }
}

/// Whether a client thread (`scalelab-client-N`) of process `pid` is inside
/// its namespace `scalelab-<pid>`.
fn clients_inside(pid: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(ns) = std::fs::metadata(netns_of(pid)) else { return false };
    let inside = format!("net:[{}]", ns.ino());
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).map(|d| d.flatten().collect::<Vec<_>>()).unwrap_or_default();
    tasks.iter().any(|t| {
        let client = std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with("scalelab-client"));
        client && std::fs::read_link(t.path().join("ns/net")).is_ok_and(|l| l.to_string_lossy() == inside)
    })
}

/// Another program deletes the namespace of a running sweep (`ip netns
/// delete`, as an older scalelab that took it for stale did): the next
/// step's clients cannot enter it. The run ends failed, exit 1, stored
/// incomplete with that reason, nothing left behind; it used to hang with
/// its client threads panicked, deaf to SIGINT and SIGTERM.
#[test]
fn a_namespace_deleted_under_a_running_sweep_fails_the_run_instead_of_hanging_it() {
    let _one = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let args =
        ["sweep", "--client-net", "delay=5ms", "-c", "1,2,3", "--warmup", "0.2s", "--duration", "1s", "--pause", "0.2s", "-q", "--no-tui"];
    let mut child = Reaped(Some(spawn(&store, &args)));
    let pid = child.0.as_ref().unwrap().id();
    // Deleted once the first step's clients are in it (the namespace's setup is over).
    let t0 = Instant::now();
    while !clients_inside(pid) {
        assert!(t0.elapsed() < Duration::from_secs(30), "no client thread of {pid} entered scalelab-{pid}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = std::process::Command::new("ip").args(["netns", "delete", &format!("scalelab-{pid}")]).output().unwrap();
    assert!(out.status.success(), "ip netns delete: {}", stderr(&out));
    let Some(out) = child.wait(Duration::from_secs(60)) else {
        panic!("the sweep still ran 60 s after its namespace was deleted (3 steps of 1.4 s): hung, killed");
    };
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let said: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(said.len(), 1, "one error line: {err}");
    assert!(said[0].contains(&format!("the client network namespace /run/netns/scalelab-{pid} was removed")), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let doc: Value = serde_json::from_slice(&run(&store, &["show", "last", "--json"]).stdout).unwrap();
    assert_eq!(doc["complete"], false, "{}", doc["outcome"]);
    let outcome = doc["outcome"].as_str().unwrap_or_default();
    assert!(outcome.starts_with("failed: step ") && outcome.contains("was removed") && !outcome.contains('\n'), "{outcome}");
    assert!(!netns_of(pid).exists(), "namespace scalelab-{pid} left behind");
    let devs = std::fs::read_to_string("/proc/net/dev").unwrap();
    assert!(!devs.contains(&format!("slnet-{pid}")), "device slnet-{pid} left behind");
}
