//! Live telemetry of real sweeps: the probes see what the specimen's modes do.

mod common;

use common::*;
use serde_json::Value;

fn sweep(mode: &str, work_us: &str, conc: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    sweep_specimen(&dir.path().join("s.db"), mode, work_us, conc)
}

fn tel(run: &Value, i: usize) -> &Value {
    &steps(run)[i]["telemetry"]
}

#[test]
fn global_lock_blocks_threads_on_futexes_and_scales_does_not() {
    let _cpu = cpu_exclusive();
    let locked = sweep("global-lock", "1000", "16");
    let scales = sweep("scales", "1000", "16");
    assert_matches_schema(&locked);
    let (l, s) = (tel(&locked, 0), tel(&scales, 0));
    let futex = |t: &Value| t["thread_states_pct"]["futex"].as_f64().unwrap();
    let cs_req = |t: &Value| t["cs_per_request"].as_f64().unwrap();
    // Quiet: over half the thread-time on the lock. Beside a CPU hog the
    // threads also wait to run and for their clients (38 % futex, 19 %
    // runnable, 34 % other, measured): still far above a lock-free server.
    assert!(futex(l) > 30.0, "global-lock: much thread-time blocked on the lock: {l}");
    assert!(futex(s) < 10.0, "scales: no lock to wait on: {s}");
    // Each request that finds the lock held sleeps on it and is woken: more
    // switches per request than scales' (measured 2.2-2.8 vs 1.8-2.0 on a
    // 2-core VM; std's mutex spins briefly before it parks, so the gap is
    // modest with 1 ms holds).
    // The switches counted are voluntary and involuntary: beside a CPU hog
    // the hog preempts scales' threads in the middle of their 1 ms of work
    // (8.1 per request against global-lock's 3.1, measured beside `stress-ng
    // --cpu 2`), so the comparison holds only when scales had more than one
    // CPU's worth; the lock's sleeps are then the difference.
    let scales_cpu = s["server_cpu_pct"].as_f64().unwrap_or(0.0);
    if scales_cpu > 130.0 {
        assert!(cs_req(l) > cs_req(s), "context switches per request: global-lock {} vs scales {}", cs_req(l), cs_req(s));
    } else {
        eprintln!("note: scales had {scales_cpu:.0} % of a core (a neighbour took the rest): switches per request not compared");
    }
    // The specimen's own account agrees: with 16 clients on one lock many requests wait; without a lock none do.
    let share = |t: &Value| t["specimen"]["lock_wait_share_pct"].as_f64().unwrap_or_else(|| panic!("specimen counters: {t}"));
    // (Beside a CPU hog fewer server threads run at once, so fewer find the
    // lock held: 35 % was measured then, against 0 without a lock.)
    assert!(share(l) > 20.0, "global-lock: many requests found the lock held: {l}");
    assert_eq!(share(s), 0.0, "scales has no lock: {s}");
    let served = l["specimen"]["requests_per_s"].as_f64().unwrap();
    let measured = steps(&locked)[0]["throughput_per_s"].as_f64().unwrap();
    assert!((served / measured - 1.0).abs() < 0.25, "the specimen served what the client measured: {served} vs {measured}");
    assert!(l["cpu_busy_pct"].as_f64().is_some() && l["cs_per_s"].as_f64().unwrap() > 0.0);
    assert!(l["client_cpu_pct"].as_f64().is_some());
}

#[test]
fn single_thread_shows_one_hot_thread() {
    let _cpu = cpu_exclusive();
    let run = sweep("single-thread", "500", "8");
    let t = tel(&run, 0);
    // What the thread wanted: its CPU plus its wait for a CPU (schedstat),
    // which a busy neighbour can delay but not hide.
    let h = &t["hottest_threads"][0];
    let hot = h["cpu_pct"].as_f64().unwrap() + h["runnable_pct"].as_f64().unwrap_or(0.0);
    assert!(hot > 70.0, "one thread wants a whole core: {t}");
    let second = t["hottest_threads"][1]["cpu_pct"].as_f64().unwrap_or(0.0);
    assert!(second < 20.0, "and no other thread busy: {t}");
}

#[test]
fn disk_mode_shows_io_wait_and_scales_does_not() {
    let _cpu = cpu_exclusive();
    let disk = sweep("disk", "10", "2");
    let scales = sweep("scales", "10", "2");
    let (d, s) = (tel(&disk, 0), tel(&scales, 0));
    let iowait = |t: &Value| t["cpu_iowait_pct"].as_f64().unwrap();
    let io = |t: &Value| t["thread_states_pct"]["io"].as_f64().unwrap();
    // Seen here: disk 26-35 % iowait and 12-15 % of thread-time in disk wait at 2 clients; scales 0 and 0.
    // The kernel counts iowait only on an idle CPU: a busy neighbour (another
    // build, a CPU hog) hides it, so the machine figure is checked only when the
    // machine had room; the server's own threads in disk wait are checked always.
    let busy = d["cpu_busy_pct"].as_f64().unwrap_or(100.0);
    if busy < 85.0 {
        assert!(iowait(d) >= 5.0 && iowait(d) > iowait(s) + 4.0, "iowait: disk {d} vs scales {s}");
    }
    assert!(io(d) >= 3.0 && io(s) < 1.0, "threads in disk wait: disk {d} vs scales {s}");
    assert!(d["specimen"]["fsyncs_per_s"].as_f64().unwrap() > 100.0, "{d}");
    assert!(d["disk_iops"].as_f64().unwrap() > 100.0, "{d}");
}

#[test]
fn missing_probes_are_null_with_a_reason_not_zero() {
    let _cpu = cpu_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let run = json(
        &dir.path().join("s.db"),
        &["sweep", "--work-us", "50", "-c", "2", "--warmup", "0.2s", "--duration", "1.5s", "--thread-sample-hz", "0", "--json", "-q"],
    );
    let t = tel(&run, 0);
    assert!(t["thread_states_pct"].is_null(), "thread sampling was off: {t}");
    assert!(t["unavailable"]["thread_states"].as_str().is_some(), "{t}");
    assert!(t["db"].is_null() && t["unavailable"]["db"].as_str().is_some());
}
