//! The server as a process tree: nginx's master only accepts and supervises,
//! its worker (a child process) serves; the server figures of a sweep must
//! be the worker's work, not the idle master's.

mod common;

use common::{json, steps};
use scalelab_testkit::nginx::{children_of, Nginx};

#[test]
fn nginx_worker_is_part_of_the_server() {
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let url = nginx.url("/index.html");
    let doc = json(&store, &["sweep", &url, "-c", "4", "--warmup", "0.3s", "-d", "3s", "--pause", "0", "--json", "-q", "--threads", "1"]);
    let t = &steps(&doc)[0]["telemetry"];
    eprintln!("{t}");
    let workers = children_of(nginx.pid());
    assert!(!workers.is_empty(), "nginx has a worker process");
    // The master sleeps in epoll/sigsuspend (0 ticks): all the CPU here is
    // the worker's. Beside a CPU hog and three other tests the worker may
    // get a few % of a core between two samples (2.0 % over 1 s, once, with
    // the thread sampler seeing it at 16 %): a 3 s window has 2 s between
    // its samples, and more than one tick of 10 ms a second is the worker.
    assert!(t["server_cpu_pct"].as_f64().unwrap() > 1.0, "{t}");
    assert!(t["server_cs_per_s"].as_f64().unwrap() > 10.0, "{t}");
    let hottest = t["hottest_threads"][0]["tid"].as_i64().unwrap() as i32;
    assert!(workers.contains(&hottest), "hottest thread {hottest} is a worker ({workers:?}): {t}");
}
