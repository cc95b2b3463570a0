//! Servers that serve only some of their clients (issue 35), against the
//! specimen's `pool` and `herd` modes: every client is accounted for, a
//! step where some got nothing is never clean, and a thundering herd is
//! named (and its fix is not).

mod common;

use common::*;
use serde_json::Value;

#[test]
fn bad_pool_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    for (args, says) in [
        (&["--workers", "4"][..], "--workers applies to the specimen's pool and herd modes"),
        (&["--specimen", "pool", "--fix"][..], "--fix applies to the specimen's herd mode"),
        (&["--specimen", "pool", "--workers", "0"][..], "--workers: use a number of threads from 1 to 4096"),
        (&["http://127.0.0.1:9/", "--workers", "4"][..], "--workers"),
    ] {
        let mut all = vec!["sweep", "-q"];
        all.extend_from_slice(args);
        assert_bad_input(&store, &all, says);
    }
    let out = bin().args(["specimen", "--mode", "pool", "--workers", "0"]).output().unwrap();
    assert_eq!((out.status.code(), stderr(&out).lines().count()), (Some(2), 1), "{}", stderr(&out));
}

#[test]
fn a_pool_smaller_than_the_clients_leaves_clients_with_nothing_and_says_so() {
    let _cpu = cpu_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    // 4 workers, each holding a keep-alive connection for its life: at 8
    // clients, 4 wait in the listen queue for the whole window.
    let args = ["sweep", "--specimen", "pool", "--workers", "4", "-c", "2,8", "--warmup", "0.3s", "-d", "1.5s", "--pause", "0.2s"];
    let run = json(&store, &[&args[..], &["--json", "-q"]].concat());
    assert_matches_schema(&run);
    assert_eq!(run["schedule"]["options"]["specimen_workers"], 4);
    let (two, eight) = (&steps(&run)[0]["clients"], &steps(&run)[1]["clients"]);
    assert_eq!((two["counted"].as_u64(), two["served_nothing"].as_u64()), (Some(2), Some(0)), "{two}");
    assert_eq!((eight["counted"].as_u64(), eight["served_nothing"].as_u64()), (Some(8), Some(4)), "{eight}");
    assert!(eight["outstanding_at_end"].as_u64().unwrap() >= 4, "the starved clients' requests were still out: {eight}");
    assert!(eight["oldest_outstanding_ms"].as_f64().unwrap() >= 1500.0, "waiting since before the window: {eight}");
    // Half the clients served everything: Jain's index at most 0.5 (less
    // when the served ones were served unevenly, as on a busy machine).
    assert!(eight["jain_fairness"].as_f64().unwrap() <= 0.5 + 1e-9, "{eight}");
    assert!(verdict_kinds(&run).contains(&"starved-clients".to_string()), "{:?}", verdict_kinds(&run));
    let v = run["verdicts"].as_array().unwrap().iter().find(|v| v["kind"] == "starved-clients").unwrap();
    assert_eq!(v["concurrency"], 8);
    assert!(v["headline"].as_str().unwrap().starts_with("4 of 8 clients completed nothing"), "{v}");
    // The table says it under the step, never as a clean step.
    // The cause named: the pool of 4 workers (the specimen's 5 threads less its main one).
    // On 2 cores the pool's 4 busy workers fill 72-79 % of the CPU: the
    // verdict stands there (lowered), since clients were served nothing.
    let t = &steps(&run)[1]["telemetry"];
    assert!(verdict_kinds(&run).contains(&"worker-pool".to_string()), "{:?}: {t}", verdict_kinds(&run));
    let v = run["verdicts"].as_array().unwrap().iter().find(|v| v["kind"] == "worker-pool").unwrap();
    assert!(v["headline"].as_str().unwrap().contains("= about 4 workers"), "{v}");
    let shown = String::from_utf8(run_ok(&store, &["show", "last"])).unwrap();
    assert!(
        shown.contains("at 8 clients, 4 of 8 clients served nothing in the window: its throughput and latency percentiles cover only the answered requests"),
        "{shown}"
    );
    assert!(shown.contains("CLIENTS SERVED NOTHING"), "{shown}");

    // With workers to spare, every client is served: neither verdict.
    let enough =
        json(&store, &["sweep", "--specimen", "pool", "--workers", "16", "-c", "8", "--warmup", "0.3s", "-d", "1.5s", "--json", "-q"]);
    assert_eq!(steps(&enough)[0]["clients"]["served_nothing"], 0, "{}", steps(&enough)[0]["clients"]);
    for kind in ["starved-clients", "worker-pool"] {
        assert!(!verdict_kinds(&enough).contains(&kind.to_string()), "{kind}: {:?}", verdict_kinds(&enough));
    }
}

fn run_ok(store: &std::path::Path, args: &[&str]) -> Vec<u8> {
    let out = run(store, args);
    assert!(out.status.success(), "{}", stderr(&out));
    out.stdout
}

#[test]
fn a_herd_of_16_is_named_and_its_fix_is_not() {
    let _cpu = cpu_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    // A connection per request, paced (think time) so the machine keeps
    // CPU to spare: without EPOLLEXCLUSIVE each connection wakes all 16
    // workers' epolls (17 switches per connection measured), with it one.
    let herd = |fix: bool| {
        let mut args = vec![
            "sweep",
            "--specimen",
            "herd",
            "--workers",
            "16",
            "--no-keepalive",
            "-c",
            "2",
            "--think-time",
            "2ms",
            "--warmup",
            "0.3s",
            "-d",
            "2s",
            "--sample-interval",
            "250ms",
            "--json",
            "-q",
        ];
        if fix {
            args.push("--fix");
        }
        json(&store, &args)
    };
    let (bad, fixed) = (herd(false), herd(true));
    let cs = |run: &Value| steps(run)[0]["telemetry"]["cs_per_request"].as_f64().unwrap_or(f64::NAN);
    assert!(verdict_kinds(&bad).contains(&"thundering-herd".to_string()), "{:?}, cs/request {}", verdict_kinds(&bad), cs(&bad));
    assert!(!verdict_kinds(&fixed).contains(&"thundering-herd".to_string()), "{:?}, cs/request {}", verdict_kinds(&fixed), cs(&fixed));
    assert!(cs(&bad) > 2.0 * cs(&fixed), "the herd switches more: {} vs {}", cs(&bad), cs(&fixed));
    // The specimen's own count: wake-ups that returned from epoll_wait and
    // found the connection taken. Only those reach it (the kernel puts most
    // woken waiters back to sleep before they return), so their share
    // moves with the machine's load: 6.6 to 47 % measured for the herd
    // (13 to 18 switches per connection), 0 to 0.7 % with --fix; beside
    // stress-ng and the suite the herd's fell to 1.6 % (fix: 0 %), and once
    // to 0.16 % with the machine saturated: a woken worker that gets a CPU
    // only after another accepted the connection is put back to sleep inside
    // epoll_wait and never counted. So under 1 % passes only on a machine
    // with no CPU to spare, and the herd must still count more than the fix.
    let empty = |run: &Value| steps(run)[0]["telemetry"]["specimen"]["empty_wakeup_share_pct"].as_f64();
    let busy = steps(&bad)[0]["telemetry"]["cpu_busy_pct"].as_f64().unwrap_or(0.0);
    let (herd_empty, fixed_empty) = (empty(&bad).unwrap(), empty(&fixed).unwrap());
    let said = format!("wake-ups that found nothing: {herd_empty} % (CPU {busy} % busy) vs {fixed_empty} % with --fix");
    eprintln!("{said}");
    let herd_counted = herd_empty >= 1.0 || (busy >= 90.0 && herd_empty > 0.0);
    assert!(herd_counted && herd_empty > 2.0 * fixed_empty && fixed_empty < 2.0, "{said}");
    let v = bad["verdicts"].as_array().unwrap().iter().find(|v| v["kind"] == "thundering-herd").unwrap();
    assert!(v["headline"].as_str().unwrap().contains("wake-ups per connection reaching its workers"), "{v}");
    assert!(v["evidence"].as_array().unwrap().iter().any(|e| e["name"] == "of them found nothing to accept"), "{v}");
    assert_eq!(fixed["schedule"]["options"]["specimen_fix"], true);
}
