//! Real sweeps of the specimen's modes are diagnosed as what they are.

mod common;

use common::*;
use serde_json::Value;

fn diagnosed(mode: &str, work_us: &str, conc: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let run = sweep_specimen(&store, mode, work_us, conc);
    assert!(run["verdicts"].is_array(), "sweep --json carries the diagnosis: {run}");
    let d = json(&store, &["diagnose", "last", "--json"]);
    assert_eq!(d["verdicts"], run["verdicts"], "diagnose and sweep agree");
    d
}

/// Runs a measured sweep up to three times until `expected` is among the
/// verdicts: the shape is physics, but a neighbour's burst on a shared
/// 2-core machine can hide it in any single 2-second window. The verdicts
/// these tests expect rest on the server's own figures (its CPU, its
/// threads' states, the specimen's counters), so a neighbour's CPU hog that
/// fills the machine does not hide them (`scripts/test.sh` must pass beside
/// `stress-ng --cpu 2`).
fn diagnosed_as(mode: &str, work_us: &str, conc: &str, expected: impl Fn(&[String]) -> bool) -> Value {
    let mut last = Value::Null;
    for _ in 0..3 {
        let d = diagnosed(mode, work_us, conc);
        if expected(&verdict_kinds(&d)) {
            // Every mode here serves each connection it accepts (event
            // loops, or a thread each): no client waits for a worker.
            assert_no_pool_verdicts(&d, mode);
            return d;
        }
        last = d;
    }
    panic!("{mode}: expected verdict not found in 3 sweeps; last: {:#}", last["verdicts"]);
}

#[test]
fn global_lock_is_lock_contention() {
    let _cpu = cpu_exclusive();
    let d = diagnosed_as("global-lock", "1000", "1,4,16", |k| k.iter().any(|k| k == "lock-contention"));
    let v = d["verdicts"].as_array().unwrap().iter().find(|v| v["kind"] == "lock-contention").unwrap();
    assert!(v["evidence"].as_array().unwrap().iter().any(|e| e["name"].as_str().unwrap().contains("futex")), "{v}");
    // The specimen's own count, which no neighbour can fake: most requests
    // found the lock held; and the server itself used about one core.
    assert!(evidence(v, "requests that waited for the specimen's lock").unwrap() >= 30.0, "{v}");
    assert!(evidence(v, "server CPU").unwrap() <= 150.0, "a lock holds the server near one core: {v}");
    assert!(v["next"].as_str().unwrap().contains("perf lock") || v["next"].as_str().unwrap().contains("lock"), "{v}");
}

#[test]
fn single_thread_is_a_single_hot_thread() {
    let _cpu = cpu_exclusive();
    let d = diagnosed_as("single-thread", "1000", "1,4,8", |k| k.iter().any(|k| k == "single-hot-thread"));
    let v = d["verdicts"].as_array().unwrap().iter().find(|v| v["kind"] == "single-hot-thread").unwrap();
    // The server's own figures: its one thread carries its whole CPU and
    // wanted a whole core (on a CPU or waiting for one), even when a
    // neighbour's hog left it only a fraction.
    let hot = evidence(v, "hottest thread").unwrap();
    let waiting = evidence(v, "hottest thread waiting for a CPU").unwrap();
    let server = evidence(v, "server CPU").unwrap();
    // (Beside a CPU hog the server got 22 % of a core, 16 % of it the hot
    // thread's: the other threads' share is bounded in cores, not as a ratio.)
    assert!(hot + waiting >= 85.0 && server <= 150.0 && (hot >= 0.8 * server || server - hot <= 10.0), "{v}");
}

fn evidence(v: &Value, name: &str) -> Option<f64> {
    v["evidence"].as_array()?.iter().find(|e| e["name"] == name)?["value"].as_f64()
}

#[test]
fn disk_is_disk_bound() {
    let _cpu = cpu_exclusive();
    // An fdatasync per request and little CPU work (10 us): the threads wait
    // on the disk. Seen on this 2-core VM: iowait 11-35 % of all cores,
    // server threads 12-20 % in disk wait, ~17,000 fsyncs/s at 8 clients.
    let d = diagnosed_as("disk", "10", "1,2,4,8", |k| k.iter().any(|k| k == "disk-bound"));
    let v = d["verdicts"].as_array().unwrap().iter().find(|v| v["kind"] == "disk-bound").unwrap();
    let ev = |name: &str| v["evidence"].as_array().unwrap().iter().find(|e| e["name"] == name).and_then(|e| e["value"].as_f64());
    // iowait is idle time: a neighbour's CPU hog hides it; then the
    // server's own threads in disk wait carry the verdict, as a share of
    // the time they were not queued for a CPU behind the hog.
    let unqueued = ev("server threads in disk wait, of their time not queued for a CPU");
    assert!(ev("CPU iowait").unwrap_or(0.0) >= 10.0 || unqueued.unwrap() >= 20.0, "{v}");
    assert!(ev("fsyncs (the specimen's own count)").unwrap() > 20.0, "the specimen's own fsync count backs it: {v}");
    assert!(
        !verdict_kinds(&d).iter().any(|k| k == "softirq-one-cpu"),
        "a disk's BLOCK softirqs on one CPU are not network receive: {:?}",
        verdict_kinds(&d)
    );
}

#[test]
fn scales_with_enough_clients_is_cpu_bound() {
    let _cpu = cpu_exclusive();
    diagnosed_as("scales", "300", "1,2,8", |k| k.iter().any(|k| k.starts_with("cpu-bound")) && !k.iter().any(|k| k == "lock-contention"));
}

/// A process that burns CPU 0 until dropped, and at most 60 s if this test
/// process dies first. `timeout` is stopped with SIGTERM, which it passes on
/// to the loop (SIGKILL would orphan the loop).
struct BusyLoop(std::process::Child);
impl Drop for BusyLoop {
    fn drop(&mut self) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

#[test]
fn a_client_squeezed_onto_a_busy_cpu_is_client_bound() {
    let _cpu = cpu_exclusive();
    if std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) < 2 {
        eprintln!("skipped: needs 2 CPUs (the server runs on the other one)");
        return;
    }
    let nginx = scalelab_testkit::nginx::Nginx::start();
    let _busy = BusyLoop(
        std::process::Command::new("taskset")
            .args(["-c", "0", "timeout", "60", "sh", "-c", "while :; do :; done"])
            .stdin(std::process::Stdio::null())
            .spawn()
            .expect("taskset (util-linux) is installed"),
    );
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let out = std::process::Command::new("taskset")
        .args(["-c", "0", env!("CARGO_BIN_EXE_scalelab"), "--store", store.to_str().unwrap()])
        .args(["sweep", &nginx.url("/index.html"), "-c", "1,4", "--threads", "1", "--warmup", "0.3s", "--duration", "1.5s", "--json", "-q"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    drop(_busy);
    let first = &run["verdicts"][0];
    let wait = run["steps"][1]["client_runq_wait_pct"].as_f64().unwrap();
    assert!(wait > 20.0, "the client waited for its CPU {wait}% of the window");
    if first["kind"] == "cpu-busy-elsewhere" {
        // Beside other work (a build, the rest of the suite on a busy
        // machine) nginx's worker queues for a CPU too, and a client and a
        // server that both queue are a machine busy with others, not a
        // starved client (the unit test
        // a_starved_client_is_client_bound_only_when_the_server_is_not_queued_too).
        // Held to that rule: the server queued at least half as much as the client.
        let step = run["steps"].as_array().unwrap().iter().find(|s| s["concurrency"] == first["concurrency"]).unwrap();
        let runnable = step["telemetry"]["thread_states_pct"]["runnable"].as_f64().unwrap();
        let wait = step["client_runq_wait_pct"].as_f64().unwrap();
        assert!(runnable >= wait / 2.0, "server runnable {runnable}% against the client's wait {wait}%: {:#}", run["verdicts"]);
        assert!(evidence(first, "other processes CPU").unwrap() > evidence(first, "server CPU").unwrap(), "{first:#}");
    } else {
        assert_eq!(first["kind"], "client-bound", "client-bound comes first: {:#}", run["verdicts"]);
    }
}
