//! `show`, `compare` and `--assert` on runs with intervals, through the
//! binary, on a store built through the library (no load, no import): a
//! `--versus` pair whose arms were measured 4 times at each of 2 levels.

mod common;

use common::*;
use scalelab_core::{Environment, LatencyHistogram, RunKind, RunPlan, SecondResult, StepResult};
use std::path::Path;
use std::time::Duration;

/// One 6-second window at `clients` completing about `x` requests a second.
fn window(clients: u32, x: u64) -> StepResult {
    let per_second = [x, x + 3, x - 3, x + 2, x - 2, x];
    let mut latency = LatencyHistogram::new();
    let seconds: Vec<SecondResult> = per_second
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut h = LatencyHistogram::new();
            for _ in 0..10 {
                h.record(Duration::from_micros(1500 + 10 * i as u64));
            }
            latency.merge(&h);
            SecondResult { second: i as u32, requests: *n, errors: 0, latency: h, service: LatencyHistogram::new() }
        })
        .collect();
    let requests = per_second.iter().sum();
    StepResult { concurrency: clients, window_s: 6.0, requests, queries: requests, latency, seconds, ..StepResult::default() }
}

/// Runs 1 (A, ~5 % faster in every pair) and 2 (B), the arms of one
/// `--versus` sweep at 1 and 4 clients, 4 windows each, drifting ±10 %.
fn versus_store(path: &Path) {
    let mut store = scalelab_store::Store::open(path).unwrap();
    let drift = [1.0, 1.2, 0.9, 1.1];
    for (arm, speed) in [("A", 1.05), ("B", 1.0)] {
        let mut options = serde_json::Map::new();
        options.insert("versus".into(), serde_json::json!({"pair": [1, 2], "arm": arm, "blocks": 2, "seed": 7}));
        let plan = RunPlan {
            label: arm.into(),
            target: "specimen:test".into(),
            workload: "GET /".into(),
            steps: vec![],
            client_threads: 1,
            options,
        };
        let env = Environment { scalelab_version: scalelab_core::VERSION.into(), ..Default::default() };
        let id = store.begin_run(RunKind::Sweep, &plan, &env, None).unwrap();
        let mut i = 0;
        for (k, d) in drift.iter().enumerate() {
            for clients in [1u32, 4] {
                let x = (f64::from(clients) * 1000.0 * d * speed) as u64 + k as u64;
                store.add_step(id, i, &window(clients, x)).unwrap();
                i += 1;
            }
        }
        store.finish_run(id, true, "completed").unwrap();
    }
}

#[test]
fn show_and_compare_carry_the_intervals_of_a_versus_pair() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    versus_store(&store);

    let shown = String::from_utf8_lossy(&run(&store, &["show", "1"]).stdout).into_owned();
    let row4 = shown.lines().find(|l| l.starts_with("4 ")).unwrap_or_else(|| panic!("{shown}"));
    assert!(row4.contains(" ± ") && row4.contains("%"), "{shown}");
    assert!(shown.contains("windows (throughput/s of each, in the order they ran):"), "{shown}");

    let doc = json(&store, &["show", "1", "--json"]);
    assert_matches_schema(&doc);
    assert_eq!(doc["levels"][1]["windows"], 4);
    assert_eq!(doc["levels"][1]["throughput_ci95"]["method"], "student-t");

    let table = json(&store, &["compare", "1", "2", "--format", "json"]);
    for row in table["rows"].as_array().unwrap() {
        // The first named run is the baseline: B against A.
        let d = &row["delta"]["B vs A"];
        assert_eq!((d["method"].as_str(), d["verdict"].as_str()), (Some("paired-t"), Some("slower")), "{row}");
        assert!(d["ci95_low_pct"].as_f64().unwrap() > -10.0 && d["ci95_high_pct"].as_f64().unwrap() < 0.0, "{d}");
    }
    let text = run(&store, &["compare", "1", "2"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("B vs A: paired"), "{text}");
    assert!(text.lines().find(|l| l.starts_with("4 ")).unwrap().ends_with("slower"), "{text}");

    // A against B (--pair): the delta's low bound is above 3 % but not above 6 %.
    assert_eq!(run(&store, &["compare", "1", "2", "--pair", "A:B", "--assert", "delta_pct@4 >= 3"]).status.code(), Some(0));
    let failed = run(&store, &["compare", "1", "2", "--pair", "A:B", "--assert", "delta_pct@4 >= 6"]);
    assert_eq!(failed.status.code(), Some(1));
    assert!(stderr(&failed).contains("its low bound is below 6"), "{}", stderr(&failed));
}
