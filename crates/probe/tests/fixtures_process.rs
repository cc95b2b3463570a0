//! Finding the server and sampling it, its threads included, on a captured
//! process (a helper server with threads parked in known places).

mod common;

use common::{host, server};
use scalelab_analyze::telemetry::process_rates;
use scalelab_probe::{find_by_name, find_by_port, FindError, ProcessSampler, ThreadSampler, ThreadState};

#[test]
fn finds_the_server_by_port_and_name() {
    let srv = server();
    let found = find_by_port(&host("t0"), srv.port).unwrap();
    assert_eq!(found.pid, srv.pid);
    assert_eq!(found.all, [srv.pid]);
    let by_name = find_by_name(&host("t0"), "python3").unwrap();
    assert_eq!(by_name.pid, srv.pid);
    assert!(matches!(find_by_port(&host("t0"), 1), Err(FindError::NoListener(1))));
    assert!(matches!(find_by_name(&host("t0"), "no-such-server"), Err(FindError::NoProcess(_))));
}

#[test]
fn samples_the_captured_process() {
    let srv = server();
    let a = ProcessSampler::new(&host("t0"), srv.pid).sample();
    assert!(a.alive);
    assert_eq!(a.threads, Some(srv.roles.len() as u64 + 1));
    assert!(a.cpu_user_ticks.unwrap() > 0);
    assert!(a.rss_kib.unwrap() > 0);
    let fds = std::fs::read_dir(host("t0").proc.join(format!("{}/fd", srv.pid))).unwrap().count() as u64;
    assert_eq!(a.open_fds, Some(fds));
    assert!(a.io.is_some());
    // Sum of voluntary switches over the captured task/*/status files.
    let mut expect = 0;
    for t in std::fs::read_dir(host("t0").proc.join(format!("{}/task", srv.pid))).unwrap() {
        let status = std::fs::read_to_string(t.unwrap().path().join("status")).unwrap();
        let line = status.lines().find(|l| l.starts_with("voluntary_ctxt_switches:")).unwrap();
        expect += line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap();
    }
    assert_eq!(a.voluntary_ctxt_switches, Some(expect));
    assert!(a.newly_unavailable.is_empty(), "{:?}", a.newly_unavailable);

    let mut b = ProcessSampler::new(&host("t1"), srv.pid).sample();
    b.at.monotonic_ns = a.at.monotonic_ns + 1_000_000_000;
    let r = process_rates(&a, &b);
    // The busy thread spun through the second between snapshots.
    assert!(r.cpu_pct().unwrap() > 10.0, "{r:?}");
}

#[test]
fn a_missing_process_is_unavailable() {
    let mut sampler = ProcessSampler::new(&host("t0"), 999_999);
    let s = sampler.sample();
    assert!(!s.alive);
    assert_eq!(s.cpu_user_ticks, None);
    assert_eq!(s.voluntary_ctxt_switches, None);
    assert_eq!(s.newly_unavailable.len(), 1);
    assert!(sampler.sample().newly_unavailable.is_empty(), "reported once");
}

#[test]
fn classifies_the_captured_threads() {
    let srv = server();
    let mut sampler = ThreadSampler::new(&host("t0"), srv.pid);
    assert!(sampler.tick());
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert!(sampler.tick());
    let iv = sampler.take_interval();
    assert_eq!(iv.threads.len(), srv.roles.len() + 1);
    for (tid, role) in &srv.roles {
        let t = iv.thread(*tid).unwrap_or_else(|| panic!("thread {tid} ({role}) not seen"));
        let want = match role.as_str() {
            "futex" => ThreadState::Futex,
            "accept" | "select" | "epoll" => ThreadState::Idle,
            "sleep" | "recv" => ThreadState::Other,
            "busy" => ThreadState::Running,
            other => panic!("unknown role {other}"),
        };
        assert_eq!(t.state, want, "thread {tid} ({role}): {t:?}");
        assert_eq!(t.name, "python3");
    }
    // The second tick saw no change (static files): sleep time went to the
    // states seen, four of the eleven threads being futex waiters.
    let shares = iv.shares().unwrap();
    assert!(shares.futex_pct > 30.0 && shares.futex_pct < 50.0, "{shares:?}");
    assert_eq!(iv.samples.futex, 4 * iv.ticks as u64);
    assert!(iv.runnable_measured);
}

/// A hand-made task tree: exact accounting between two ticks.
#[test]
fn accounts_time_exactly_on_a_synthetic_tree() {
    use std::fs;
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path().join("proc/500/task");
    let write = |tid: u32, state: char, sched: &str, syscall: &str| {
        let t = task.join(tid.to_string());
        fs::create_dir_all(&t).unwrap();
        let stat = format!("{tid} (worker {tid}) {state} 1 500 500 0 -1 0 0 0 0 0 7 3 0 0 20 0 3 0 100 0 0\n");
        fs::write(t.join("stat"), stat).unwrap();
        fs::write(t.join("schedstat"), sched).unwrap();
        fs::write(t.join("syscall"), syscall).unwrap();
    };
    write(501, 'R', "1000000 0 10\n", "running\n");
    write(502, 'D', "5000 0 3\n", "0 0x3 0x7f 0x1000\n");
    write(503, 'S', "7000 0 4\n", "202 0x55 0x89 0x2\n");
    let roots = scalelab_probe::Roots::under(dir.path());
    let mut s = ThreadSampler::new(&roots, 500);
    assert!(s.tick());
    // 501 then runs 10 ms and waits 5 ms for a CPU; 502 and 503 do not move.
    write(501, 'R', "11000000 5000000 14\n", "running\n");
    std::thread::sleep(std::time::Duration::from_millis(30));
    assert!(s.tick());
    let iv = s.take_interval();
    let r = iv.thread(501).unwrap();
    assert_eq!((r.time.running_ns, r.time.runnable_ns, r.cpu_ns), (10_000_000, 5_000_000, 10_000_000));
    assert_eq!(r.name, "worker 501");
    let d = iv.thread(502).unwrap();
    assert_eq!(d.state, ThreadState::Io);
    assert!(d.time.io_ns >= 30_000_000 && d.time.total_ns() == d.time.io_ns, "{d:?}");
    let f = iv.thread(503).unwrap();
    assert_eq!(f.state, ThreadState::Futex);
    assert!(f.time.futex_ns >= 30_000_000);
    assert_eq!(iv.hottest(1)[0].tid, 501);
}
