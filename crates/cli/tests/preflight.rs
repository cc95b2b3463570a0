//! The preflight live: a server listening with a backlog of 8 is flagged
//! (and one with 4096 is not); in a network namespace this test creates
//! (removed at the end, also on failure) with a 1,000-port range, a plan
//! without keep-alive is flagged, `--strict` refuses it (exit 2, nothing
//! stored) and a sweep records the checks with the run.

mod common;

use common::{assert_matches_schema, bin, stderr};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Output};

/// A listener on 127.0.0.1 with the given backlog, answering each
/// connection with an empty 200 and a `Server` header.
fn listener(backlog: i32) -> u16 {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    s.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into()).unwrap();
    s.listen(backlog).unwrap();
    let l: TcpListener = s.into();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            let mut buf = [0u8; 1024];
            let _ = c.read(&mut buf);
            let _ = c.write_all(b"HTTP/1.1 200 OK\r\nServer: backlog-test\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    port
}

fn checks(out: &Output) -> Vec<Value> {
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stderr(out)));
    doc["checks"].as_array().unwrap().clone()
}

fn check<'c>(checks: &'c [Value], id: &str) -> &'c Value {
    checks.iter().find(|c| c["id"] == id).unwrap_or_else(|| panic!("no {id} in {checks:#?}"))
}

#[test]
fn a_listen_backlog_of_8_is_flagged() {
    let small = listener(8);
    let out = bin().args(["preflight", &format!("http://127.0.0.1:{small}/"), "-c", "50", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let all = checks(&out);
    let c = check(&all, "net.listen_backlog");
    assert_eq!(c["status"], "warn", "{c}");
    assert_eq!(c["figure"], "backlog 8 for 50 clients");
    assert!(c["fix"].as_str().unwrap().contains("backlog=4096"), "{c}");
    assert_eq!(check(&all, "target.server")["figure"], "backlog-test");
    // Every check has a stable id, a status and a figure.
    for c in &all {
        assert!(["ok", "warn", "unavailable"].contains(&c["status"].as_str().unwrap()), "{c}");
        assert!(!c["figure"].as_str().unwrap().is_empty(), "{c}");
    }

    let large = listener(4096);
    let out = bin().args(["preflight", &format!("http://127.0.0.1:{large}/"), "-c", "50", "--json"]).output().unwrap();
    let all = checks(&out);
    let c = check(&all, "net.listen_backlog");
    let somaxconn: u64 = std::fs::read_to_string("/proc/sys/net/core/somaxconn").unwrap().trim().parse().unwrap();
    assert_eq!(c["status"], if somaxconn >= 50 { "ok" } else { "warn" }, "{c}");

    // --strict: the warning fails the command, one line naming the check.
    let out = bin().args(["preflight", &format!("http://127.0.0.1:{small}/"), "-c", "50", "--strict"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("net.listen_backlog"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("warn        net.listen_backlog"), "the text lists the checks");
}

/// A network namespace, deleted when dropped (also when the test fails).
struct Netns(String);

impl Netns {
    fn create(tag: &str) -> Option<Netns> {
        let name = format!("scalelab-pf{tag}-{}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        let ok = Command::new("ip").args(["netns", "add", &name]).output().is_ok_and(|o| o.status.success());
        if !ok {
            return None;
        }
        let ns = Netns(name);
        ns.exec(&["ip", "link", "set", "lo", "up"]);
        Some(ns)
    }

    fn exec(&self, args: &[&str]) -> Output {
        Command::new("ip").args(["netns", "exec", &self.0]).args(args).output().expect("ip netns exec")
    }

    fn scalelab(&self, args: &[&str]) -> Output {
        let mut all = vec![env!("CARGO_BIN_EXE_scalelab")];
        all.extend_from_slice(args);
        self.exec(&all)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

#[test]
fn a_1000_port_range_is_flagged_for_a_plan_without_keepalive() {
    let Some(ns) = Netns::create("p") else {
        eprintln!("skipped: `ip netns add` is not available here (needs root or CAP_SYS_ADMIN and iproute2)");
        return;
    };
    let set = ns.exec(&["sysctl", "-w", "net.ipv4.ip_local_port_range=40000 40999"]);
    assert!(set.status.success(), "{}", stderr(&set));
    let target = "http://127.0.0.1:9/";

    let out = ns.scalelab(&["preflight", target, "--no-keepalive", "-c", "10", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let all = checks(&out);
    let c = check(&all, "net.port_range");
    assert_eq!(c["status"], "warn", "{c}");
    assert_eq!(
        c["figure"],
        "1000 ports (40000-40999): at most ~1000 new connections/s to one server address; 10 clients without keep-alive may open ~10000/s"
    );
    // The same plan with keep-alive needs 10 ports.
    let out = ns.scalelab(&["preflight", target, "-c", "10", "--json"]);
    assert_eq!(check(&checks(&out), "net.port_range")["status"], "ok");
    // The host's own range is untouched.
    assert_ne!(std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap().trim(), "40000\t40999");

    // A sweep with --strict stops before the store or any load.
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let store_s = store.to_str().unwrap();
    let args = ["--store", store_s, "sweep", "--no-keepalive", "-c", "10", "-d", "200ms", "--warmup", "0s", "--pause", "0s", "-q"];
    let out = ns.scalelab(&[&args[..], &["--strict"]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("error: --strict: the preflight warns on ") && err.contains("net.port_range"), "{err}");
    assert!(!store.exists(), "nothing is stored when --strict refuses");

    // Without --strict: a warning on stderr, not in -q's stdout, and the
    // checks stored with the run.
    let out = ns.scalelab(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("warning: preflight net.port_range: 1000 ports (40000-40999)"), "{}", stderr(&out));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("preflight"));
    let out = bin().args(["--store", store_s, "export", "last", "--format", "json"]).output().unwrap();
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_matches_schema(&run);
    let stored = run["environment"]["preflight"].as_array().expect("environment.preflight");
    assert_eq!(check(stored, "net.port_range")["status"], "warn");
    // The specimen listened in the namespace: its backlog was read.
    assert_ne!(check(stored, "net.listen_backlog")["status"], "unavailable", "{}", check(stored, "net.listen_backlog"));
}

/// Conntrack read live, in a namespace this test creates: loaded but hooked
/// by no rule it tracks nothing; once an nftables rule asks for connection
/// state, the connections of a short sweep without keep-alive are counted
/// (closed ones stay for 120 s) against the kernel's table size.
#[test]
fn conntrack_entries_are_counted_live_in_a_namespace() {
    let max_path = "/proc/sys/net/netfilter/nf_conntrack_max";
    let Ok(max) = std::fs::read_to_string(max_path) else {
        eprintln!("skipped: conntrack is not loaded here ({max_path} missing); the check then reads \"conntrack not loaded\"");
        let out = bin().args(["preflight", "--json"]).output().unwrap();
        assert_eq!(check(&checks(&out), "net.conntrack")["figure"], "conntrack not loaded");
        return;
    };
    let max = max.trim().to_string();
    let Some(ns) = Netns::create("c") else {
        eprintln!("skipped: `ip netns add` is not available here (needs root or CAP_SYS_ADMIN and iproute2)");
        return;
    };
    let out = ns.scalelab(&["preflight", "--json"]);
    let c = check(&checks(&out), "net.conntrack").clone();
    assert_eq!(c["figure"], format!("conntrack loaded (max {max}) but tracking no connection"), "{c}");
    assert_eq!(c["status"], "ok", "{c}");

    for rule in [
        &["nft", "add", "table", "inet", "sl"][..],
        &["nft", "add chain inet sl out { type filter hook output priority 0; }"],
        &["nft", "add", "rule", "inet", "sl", "out", "ct", "state", "new", "counter"],
    ] {
        let o = ns.exec(rule);
        assert!(o.status.success(), "{rule:?}: {} (./scripts/test.sh installs nftables)", stderr(&o));
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let sweep =
        ["--store", store.to_str().unwrap(), "sweep", "--no-keepalive", "-c", "2", "-d", "300ms", "--warmup", "0s", "--pause", "0s", "-q"];
    let o = ns.scalelab(&sweep);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = ns.scalelab(&["preflight", "-c", "2", "--json"]);
    let c = check(&checks(&out), "net.conntrack").clone();
    let figure = c["figure"].as_str().unwrap();
    let (count, rest) = figure.split_once(" of ").unwrap_or_else(|| panic!("{c}"));
    let count: u64 = count.parse().unwrap_or_else(|_| panic!("{c}"));
    // Each request a connection: dozens quiet, 7 beside `stress-ng --cpu 2`
    // (the namespace's specimen starved); before the sweep there were none.
    assert!(count >= 3, "a sweep without keep-alive left {count} tracked connections: {c}");
    assert!(rest.starts_with(&format!("{max} entries in use; the plan may add ~")), "{c}");
    assert_eq!(c["status"], "ok", "{c}");
}

/// PostgreSQL as the test harness runs it (fsync and synchronous_commit
/// off, for speed) is called incomparable; durable again, it is ok.
#[test]
fn postgres_without_durability_is_flagged_through_the_monitor_connection() {
    let pg = scalelab_testkit::postgres::Postgres::start();
    let url = pg.url();
    let out = bin().args(["preflight", &url, "-c", "4", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let all = checks(&out);
    let c = check(&all, "db.durability");
    assert_eq!((c["status"].as_str(), c["figure"].as_str()), (Some("warn"), Some("fsync off, synchronous_commit off")), "{c}");
    assert!(c["why"].as_str().unwrap().contains("incomparable with a durable server"));
    assert!(check(&all, "target.server")["figure"].as_str().unwrap().contains("PostgreSQL"), "{}", check(&all, "target.server"));
    assert_eq!(check(&all, "db.buffer")["status"], "ok", "{}", check(&all, "db.buffer"));
    for sql in ["ALTER SYSTEM SET fsync = on", "ALTER SYSTEM SET synchronous_commit = on", "SELECT pg_reload_conf()"] {
        pg.psql("postgres", sql);
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let out = bin().args(["preflight", &url, "-c", "4", "--json"]).output().unwrap();
    let all = checks(&out);
    let c = check(&all, "db.durability");
    assert_eq!((c["status"].as_str(), c["figure"].as_str()), (Some("ok"), Some("fsync on, synchronous_commit on")), "{c}");
}

/// MariaDB as the test harness runs it (the log flushed once a second)
/// is flagged; with a flush at each commit it is ok.
#[test]
fn mariadb_settings_are_read_and_a_relaxed_log_flush_is_flagged() {
    let db = scalelab_testkit::mariadb::MariaDb::start();
    let url = db.url();
    let out = bin().args(["preflight", &url, "-c", "4", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let all = checks(&out);
    let c = check(&all, "db.durability");
    assert_eq!(c["status"], "warn", "{c}");
    assert!(c["figure"].as_str().unwrap().starts_with("innodb_flush_log_at_trx_commit 0 "), "{c}");
    for id in ["db.query_cache", "db.external_locking", "db.buffer"] {
        assert_eq!(check(&all, id)["status"], "ok", "{}", check(&all, id));
    }
    db.root_sql("SET GLOBAL innodb_flush_log_at_trx_commit = 1");
    let out = bin().args(["preflight", &url, "-c", "4", "--json"]).output().unwrap();
    let c = check(&checks(&out), "db.durability").clone();
    assert_eq!((c["status"].as_str(), c["figure"].as_str()), (Some("ok"), Some("innodb_flush_log_at_trx_commit 1")), "{c}");
}

/// nginx as the harness runs it (`worker_processes 1`): its workers are
/// counted from the process tree, its backlog read from its socket as `ss` reads it.
#[test]
fn nginx_workers_and_backlog_are_read_live() {
    let nginx = scalelab_testkit::nginx::Nginx::start();
    let out = bin().args(["preflight", &nginx.url("/"), "-c", "50", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let all = checks(&out);
    let cpus = std::thread::available_parallelism().unwrap().get();
    let c = check(&all, "server.workers");
    assert!(c["figure"].as_str().unwrap().starts_with("nginx with 1 worker process(es) on "), "{c}");
    assert_eq!(c["status"], if cpus > 1 { "warn" } else { "ok" }, "{c}");
    assert!(c["fix"].as_str().unwrap().contains("worker_processes auto"), "{c}");
    // The backlog is what `ss -lnt` shows as Send-Q for the listener.
    let port = nginx.url("/").rsplit(':').next().unwrap().trim_end_matches('/').to_string();
    let ss = Command::new("ss").args(["-Hltn", &format!("sport = :{port}")]).output().expect("ss (iproute2)");
    let send_q = String::from_utf8_lossy(&ss.stdout).split_whitespace().nth(2).expect("a listener row").to_string();
    let c = check(&all, "net.listen_backlog");
    assert!(c["figure"].as_str().unwrap().starts_with(&format!("backlog {send_q} for 50 clients")), "ss says {send_q}: {c}");
    assert!(check(&all, "target.server")["figure"].as_str().unwrap().starts_with("nginx"), "{}", check(&all, "target.server"));
}

/// Apache serves a connection per process (prefork) or thread (worker):
/// with 2 processes ready for 50 clients the steps would measure its
/// spawning, so the check warns; with 60 ready (or 3 × 25 threads) it does not.
#[test]
fn apache_with_fewer_servers_than_clients_is_flagged_live() {
    use scalelab_testkit::apache::{Apache, Mpm};
    let cases = [(Mpm::Prefork, 2, "warn"), (Mpm::Prefork, 60, "ok"), (Mpm::Worker { threads_per_child: 25 }, 3, "ok")];
    for (mpm, start, want) in cases {
        let apache = Apache::start(mpm, start);
        // Apache starts its children after it listens: wait until they are all up.
        let want_children = start as usize;
        for _ in 0..250 {
            if scalelab_testkit::children_of(apache.pid()).len() >= want_children {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let out = bin().args(["preflight", &apache.url("/"), "-c", "50", "--json"]).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let all = checks(&out);
        let c = check(&all, "server.workers");
        let figure = c["figure"].as_str().unwrap();
        assert!(figure.starts_with("apache2 with ") && figure.ends_with("for 50 client(s)"), "{mpm:?} {start}: {c}");
        assert_eq!(c["status"], want, "{mpm:?} StartServers {start}: {c}");
        if want == "warn" {
            assert!(c["fix"].as_str().unwrap().contains("StartServers"), "{c}");
        }
        assert!(check(&all, "target.server")["figure"].as_str().unwrap().starts_with("Apache"), "{}", check(&all, "target.server"));
    }
}

/// The x of "... noise is about ±x %: differences smaller than ~2x % will
/// not be seen" in `text`, checked to be that sentence.
fn noise_x(text: &str) -> f64 {
    let rest = text.split_once("this machine's run-to-run noise is about ±").unwrap_or_else(|| panic!("no noise sentence in {text}")).1;
    let (x, rest) = rest.split_once(" %: differences smaller than ~").unwrap_or_else(|| panic!("{text}"));
    let (twice, _) = rest.split_once(" % will not be seen (CPU loop ").unwrap_or_else(|| panic!("{text}"));
    let x: f64 = x.parse().unwrap_or_else(|_| panic!("not a number: {x:?} in {text}"));
    assert_eq!(twice.parse::<f64>().unwrap(), 2.0 * x, "{text}");
    assert!(x >= 0.5 && x * 2.0 == (x * 2.0).round(), "rounded up to 0.5 %: {text}");
    x
}

/// `machine.noise`: `scalelab preflight` prints the machine's noise with a
/// number; a sweep prints it once on stderr (under `-q --json` only if it
/// warns) and stores it both as the check and as `environment.noise_pct`.
#[test]
fn the_machine_noise_is_printed_and_stored_with_the_run() {
    let out = bin().args(["preflight"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains(" machine.noise ")).unwrap_or_else(|| panic!("no machine.noise in\n{text}"));
    assert!(line.starts_with("ok ") || line.starts_with("warn "), "{line}");
    let x = noise_x(line);
    assert!(x.is_finite(), "{line}");

    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let store_s = store.to_str().unwrap();
    let sweep = ["--store", store_s, "sweep", "-c", "1", "-d", "0.3s", "--warmup", "0.1s", "--pause", "0s"];
    let out = bin().args(sweep).args(["--json", "-q"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let quiet_err = stderr(&out);
    let out = bin().args(["--store", store_s, "export", "last", "--format", "json"]).output().unwrap();
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_matches_schema(&run);
    let stored = check(run["environment"]["preflight"].as_array().expect("environment.preflight"), "machine.noise").clone();
    let pct = run["environment"]["noise_pct"].as_f64().unwrap_or_else(|| panic!("environment.noise_pct: {}", run["environment"]));
    assert_eq!(pct, noise_x(stored["figure"].as_str().unwrap()), "the number is the check's: {stored}");
    assert_eq!(stored["status"], if pct >= 5.0 { "warn" } else { "ok" }, "{stored}");
    // Quiet: only as a warning, with its fix.
    let said = quiet_err.lines().filter(|l| l.contains("machine.noise")).collect::<Vec<_>>();
    if pct >= 5.0 {
        assert!(said.len() == 1 && said[0].starts_with("warning: preflight machine.noise: ") && said[0].contains("(fix: "), "{quiet_err}");
    } else {
        assert!(said.is_empty(), "{quiet_err}");
    }

    // Not quiet: the line once on stderr, a warning or not.
    let out = bin().args(sweep).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("this machine's run-to-run noise is about ±")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].starts_with("preflight machine.noise: ") || lines[0].starts_with("warning: preflight machine.noise: "), "{err}");
    noise_x(lines[0]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("run-to-run noise"), "stderr only");
}

#[test]
fn standalone_preflight_judges_the_specimens_placement_as_a_sweep_does() {
    // The specimen is not running yet; it will share scalelab's CPUs.
    let out = Command::new("taskset").args(["-c", "0", env!("CARGO_BIN_EXE_scalelab"), "preflight", "--json", "-t", "1"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let all = checks(&out);
    let c = check(&all, "cpu.placement");
    assert_eq!(c["status"], "warn", "{c}");
    assert!(c["figure"].as_str().unwrap().contains("server may run on CPUs 0: 1 shared"), "{c}");
}
