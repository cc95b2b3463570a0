//! Open-loop sweeps (`--rate`, issue 21) against the real specimen: bad
//! input, the JSON of a rate step, and the figures that make open loop
//! worth having (dropped at overload with a bounded client, the offered
//! rate kept below the limit, a stall a closed loop hides).

mod common;

use common::*;
use serde_json::Value;

/// A short open-loop (or closed-loop) sweep of the specimen, as JSON.
fn sweep(mode: &str, extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let mut args = vec!["sweep", "--specimen", mode, "--warmup", "0.3s", "--pause", "0.2s", "--sample-interval", "200ms", "--json", "-q"];
    args.extend_from_slice(extra);
    json(&store, &args)
}

#[test]
fn bad_open_loop_input_is_one_line_exit_2_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    for (args, says) in [
        (&["--rate", "1000", "-c", "1,2"][..], "exclude each other"),
        (&["--rate", "0"][..], "invalid rate list '0'"),
        (&["--rate", "1000,,2000"][..], "invalid rate list"),
        (&["--rate", "fast"][..], "invalid rate list"),
        (&["--rate", "1000", "--arrival", "bursty"][..], "--arrival 'bursty': use constant or poisson"),
        (&["--rate", "1000", "--max-in-flight", "0"][..], "--max-in-flight '0'"),
        (&["--rate", "1000", "--max-in-flight", "many"][..], "--max-in-flight 'many'"),
        (&["--arrival", "poisson"][..], "give --rate too"),
        (&["-c", "1", "--max-in-flight", "10"][..], "give --rate too"),
        (&["--rate", "1000", "--think-time", "10ms"][..], "--think-time applies to closed-loop steps"),
    ] {
        let mut all = vec!["sweep", "-q"];
        all.extend_from_slice(args);
        let out = run(&store, &all);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line, not {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!store.exists(), "{args:?}: nothing created");
    }
    for args in [["--stall-for", "3s", "--stall-every", "2s"], ["--stall-for", "soon", "--stall-every", "2s"]] {
        let out = bin().args(["specimen", "--mode", "stall"]).args(args).output().unwrap();
        let err = stderr(&out);
        assert_eq!((out.status.code(), err.lines().count()), (Some(2), 1), "{args:?}: {err}");
        assert!(err.contains("--stall-"), "{err}");
    }
}

#[test]
fn a_rate_step_reports_offered_achieved_service_dropped_and_late_sends() {
    let _cpu = cpu_exclusive();
    let run = sweep("scales", &["--work-us", "50", "--rate", "300,600", "--arrival", "poisson", "-d", "1s"]);
    assert_matches_schema(&run);
    let plan = &run["schedule"]["steps"][1]["open_loop"];
    assert_eq!(
        (plan["rate_per_s"].as_f64(), plan["arrival"].as_str(), plan["max_in_flight"].as_u64()),
        (Some(600.0), Some("poisson"), Some(12))
    );
    for (s, rate) in steps(&run).iter().zip([300.0, 600.0]) {
        assert_eq!(s["offered_rate_per_s"].as_f64(), Some(rate));
        let achieved = s["throughput_per_s"].as_f64().unwrap();
        // Poisson arrivals over 1 s: the count varies by about sqrt(rate).
        assert!((0.8 * rate..=1.2 * rate).contains(&achieved), "{achieved} req/s of {rate} offered");
        assert!(s["latency_ms"]["p50"].as_f64().unwrap() >= s["service_ms"]["p50"].as_f64().unwrap() - 0.01, "{s}");
        assert_eq!(s["dropped"].as_u64(), Some(0), "far below the specimen's limit");
        assert!(s["late_sends"].is_u64());
    }
    // A closed-loop run keeps its shape: none of the open-loop keys.
    let closed = sweep("scales", &["--work-us", "50", "-c", "1", "-d", "0.3s"]);
    let s = &steps(&closed)[0];
    for key in ["offered_rate_per_s", "achieved_pct", "service_ms", "dropped", "late_sends"] {
        assert!(s.get(key).is_none(), "{key} in a closed-loop step");
    }
    assert!(closed["schedule"]["steps"][0].get("open_loop").is_none());
}
