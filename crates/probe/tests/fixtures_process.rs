//! Finding the server and sampling it, its threads included, on a captured
//! process (a helper server with threads parked in known places).

mod common;

use common::{host, server};
use scalelab_probe::{find_by_name, find_by_port, process_rates, FindError, ProcessSampler, ThreadSampler, ThreadState};

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
    assert_eq!(iv.samples.futex, 8);
    assert!(iv.runnable_measured);
}
