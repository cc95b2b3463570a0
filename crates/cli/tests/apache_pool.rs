//! Apache with fewer workers than clients (issue 35's "result that lies"):
//! keep-alive on, each worker holds its client's connection, the other
//! clients wait in the listen queue for the whole window. The starved
//! clients are counted, the step is not clean, and the worker-pool verdict
//! names the count; with workers to spare, neither.

mod common;

use common::*;
use scalelab_testkit::apache::{Apache, Mpm};
use serde_json::Value;

/// A sweep of `url` at `clients`, keep-alive on, with `extra` options.
fn sweep(url: &str, clients: &str, extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    // Apache starts its processes over a second or two: a warm-up of 2 s.
    let args = ["sweep", url, "-c", clients, "--warmup", "2s", "-d", "2s", "--sample-interval", "250ms", "--json", "-q"];
    json(&store, &[&args[..], extra].concat())
}

fn assert_pool_named(run: &Value, clients: u64, workers: u64) {
    let step = &steps(run)[0];
    let c = &step["clients"];
    assert_eq!(c["served_nothing"].as_u64(), Some(clients - workers), "{c}");
    assert!(verdict_kinds(run).contains(&"starved-clients".to_string()), "{:?}", verdict_kinds(run));
    assert!(verdict_kinds(run).contains(&"worker-pool".to_string()), "{:?}: {}", verdict_kinds(run), step["telemetry"]);
    let v = run["verdicts"].as_array().unwrap().iter().find(|v| v["kind"] == "worker-pool").unwrap();
    let headline = v["headline"].as_str().unwrap();
    // The workers named are the ones measured (the clients served, each
    // holding its worker with its keep-alive connection), not the thread
    // count, which counts the parent and, in the worker MPM, a main and a
    // listener thread per child.
    assert!(headline.contains(&format!("{workers} clients served, each holding a worker")), "{headline}");
    assert!(headline.contains(&format!("= about {workers} workers")), "{headline}");
    // The machine-wide counters do not blame an overflow: the queue had room.
    assert!(!verdict_kinds(run).contains(&"accept-overflow".to_string()), "{:?}", verdict_kinds(run));
}

#[test]
fn prefork_with_fewer_workers_than_clients_is_named_with_its_count() {
    let _cpu = cpu_exclusive();
    let apache = Apache::start_with_workers(Mpm::Prefork, 4);
    let url = apache.url("/index.html");
    let starved = sweep(&url, "8", &[]);
    assert_pool_named(&starved, 8, 4);
    drop(apache);

    // Workers to spare: every client served, no pool verdict.
    let apache = Apache::start_with_workers(Mpm::Prefork, 16);
    let fine = sweep(&apache.url("/index.html"), "8", &[]);
    assert_eq!(steps(&fine)[0]["clients"]["served_nothing"], 0, "{}", steps(&fine)[0]["clients"]);
    for kind in ["starved-clients", "worker-pool"] {
        assert!(!verdict_kinds(&fine).contains(&kind.to_string()), "{kind}: {:?}", verdict_kinds(&fine));
    }
}

#[test]
fn the_worker_mpm_with_one_child_of_8_threads_serves_8_of_16() {
    let _cpu = cpu_exclusive();
    let apache = Apache::start_with_workers(Mpm::Worker { threads_per_child: 8 }, 8);
    let run = sweep(&apache.url("/index.html"), "16", &[]);
    assert_pool_named(&run, 16, 8);
}

#[test]
fn slow_clients_behind_a_client_network_still_leave_the_rest_unserved() {
    let _cpu = cpu_exclusive();
    let apache = Apache::start_with_workers(Mpm::Prefork, 4);
    // 20 ms each way: the served clients are slow, their workers mostly
    // wait on their sockets, the others wait in the queue all the same.
    let run = sweep(&apache.url("/index.html"), "8", &["--client-net", "delay=20ms"]);
    assert_pool_named(&run, 8, 4);
}
