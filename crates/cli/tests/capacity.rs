//! `scalelab capacity` (issue 21) against the real specimen: bad input, and
//! a search that lands near the limit measured in the same test.

mod common;

use common::*;
use serde_json::Value;

#[test]
fn bad_capacity_input_is_one_line_exit_2_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    for (args, says) in [
        (&["--slo", "p99<20ms"][..], "--slo 'p99<20ms'"),
        (&["--slo", "p98<=20ms"][..], "--slo 'p98<=20ms'"),
        (&["--slo", "errors<=lots"][..], "--slo 'errors<=lots'"),
        (&["--slo", "p99<=20ms", "--max-rate", "0"][..], "--max-rate '0'"),
        (&["--slo", "p99<=20ms", "--resolution", "5"][..], "--resolution '5'"),
        (&["--slo", "p99<=20ms", "--max-time", "soon"][..], "--max-time"),
        (&["--slo", "p99<=20ms", "--rate", "1000"][..], "--rate does not apply to capacity"),
        (&["--slo", "p99<=20ms", "-c", "4"][..], "does not apply to capacity"),
        (&["--slo", "p99<=20ms", "--assert", "capacity >= fast"][..], "capacity"),
    ] {
        let mut all = vec!["capacity", "-q"];
        all.extend_from_slice(args);
        assert_bad_input(&store, &all, says);
    }
}

/// The specimen's physical limit here and now: the best closed-loop throughput.
fn measured_limit(store: &std::path::Path) -> f64 {
    let args = ["sweep", "--specimen", "global-lock", "--work-us", "200", "-c", "4,16", "--warmup", "0.3s", "-d", "1s"];
    let run = json(store, &[&args[..], &["--pause", "0.2s", "--json", "-q"]].concat());
    steps(&run).iter().map(|s| s["throughput_per_s"].as_f64().unwrap()).fold(0.0, f64::max)
}

fn capacity(store: &std::path::Path) -> (Option<i32>, Value, String) {
    let out = run(
        store,
        &[
            "capacity",
            "--specimen",
            "global-lock",
            "--work-us",
            "200",
            "--slo",
            "p99<=50ms",
            "--step",
            "1s",
            "--warmup",
            "0.3s",
            "--pause",
            "0.2s",
            "--start-rate",
            "1000",
            "--json",
            "-q",
        ],
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stderr(&out)));
    (out.status.code(), doc, stderr(&out))
}

#[test]
fn capacity_of_global_lock_lands_near_its_measured_limit_and_is_stored() {
    let _cpu = cpu_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let limit = measured_limit(&store);
    // One retry when the search gave no number (its confirmation failed:
    // noisy, on a machine shared with builds); the result must then be one.
    let (mut code, mut doc, mut err) = capacity(&store);
    if code != Some(0) {
        (code, doc, err) = capacity(&store);
    }
    // The limit measured again after the search: a neighbour that starts or
    // stops meanwhile moves it (4,252/s before and a capacity of 1,750/s
    // beside a parallel build), so the search is judged against the range
    // the machine gave around it, as the A/B tests pool their halves.
    let after = measured_limit(&store);
    let (low, limit) = (limit.min(after), limit.max(after));
    let tried: Vec<String> = steps(&doc)
        .iter()
        .map(|s| format!("{}/s: p99 {} ms, {}/s", s["offered_rate_per_s"], s["latency_ms"]["p99"], s["throughput_per_s"]))
        .collect();
    let options = &doc["schedule"]["options"];
    if code == Some(1) && options["capacity_result"] == "noisy" {
        // Beside a busy neighbour the confirmation window can fail twice: the
        // run then says "noisy" instead of a number, which is the truth; the
        // search must still have bracketed the limit it could not confirm.
        let held = options["capacity_bracket"][0].as_f64().expect("a rate that held");
        // Noisy means the machine swung: a try may hold above the closed
        // loop's limit measured before and after (3,000/s held, served at
        // 2,990/s, against 2,298 to 2,399 measured beside a CPU hog and a
        // build). What must hold: the rate was served when it held (never
        // above what any try achieved), and it is not far below the limit.
        let served = steps(&doc).iter().filter_map(|s| s["throughput_per_s"].as_f64()).fold(0.0, f64::max);
        assert!(
            held <= 1.02 * served && held >= 0.70 * low,
            "noisy: held {held} req/s (best served {served}/s), limit measured {low} to {limit} req/s: {tried:?}"
        );
        eprintln!("note: both searches were noisy (held {held} req/s of a measured {limit}); the stored-run checks need a number");
        return;
    }
    if code == Some(1) && options["capacity_result"] == "client-bound" {
        // The load generator fell short at the first failing rate (starved
        // by a neighbour): no capacity is a result then, and none is stored.
        let held = options["capacity_bracket"][0].as_f64().expect("a rate that held");
        assert!(options.get("capacity_per_s").is_none(), "{options}");
        assert!(doc["outcome"].as_str().unwrap().contains("capacity not established"), "{}", doc["outcome"]);
        // As when noisy, the machine may swing between the closed-loop
        // measure and the search (3,000/s held and served at 3,030/s against
        // 2,818 to 2,894 measured, beside a build): the rate held must have
        // been served, and not far below the limit.
        let served = steps(&doc).iter().filter_map(|s| s["throughput_per_s"].as_f64()).fold(0.0, f64::max);
        assert!(
            held <= 1.02 * served && held >= 0.70 * low,
            "client-bound: held {held} req/s (best served {served}/s), limit measured {low} to {limit} req/s: {tried:?}"
        );
        let id = doc["id"].as_i64().unwrap().to_string();
        let runs = String::from_utf8_lossy(&run(&store, &["runs"]).stdout).into_owned();
        let line = runs.lines().find(|l| l.split_whitespace().next() == Some(id.as_str())).unwrap_or_default().to_string();
        assert!(line.contains(" - "), "a capacity run without a capacity has no peak: {line}");
        eprintln!(
            "note: the load generator was starved at the first failing rate (held {held} req/s of a measured {limit}); no number to check"
        );
        return;
    }
    assert_eq!(code, Some(0), "{}: {tried:?}\n{err}", doc["outcome"]);
    assert_eq!(doc["kind"], "capacity");
    assert_matches_schema(&doc);
    let found = doc["schedule"]["options"]["capacity_per_s"].as_f64().expect("capacity_per_s");
    // As in the branches above, the machine may swing between the closed
    // loop's measure and the search (4,625/s found and confirmed
    // against 4,147 to 4,253 measured, quiet): the answer may pass the
    // closed loop's limit only by what the search itself served.
    let served = steps(&doc).iter().filter_map(|s| s["throughput_per_s"].as_f64()).fold(0.0, f64::max);
    assert!(
        (0.70 * low..=1.02 * limit.max(served)).contains(&found),
        "capacity {found} req/s (best served {served}/s), limit measured {low} to {limit} req/s: {tried:?}"
    );
    // Every tried rate is a step, the last one the confirmation at the answer.
    let tried = steps(&doc);
    assert!(tried.len() >= 4, "{}", tried.len());
    assert_eq!(tried.last().unwrap()["offered_rate_per_s"].as_f64(), Some(found));
    // Stored: show and compare read it; `capacity` is an assertion on it.
    let id = doc["id"].as_i64().unwrap().to_string();
    let out = run(&store, &["show", &id]);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("offered/s"), "{}", stderr(&out));
    let out = run(&store, &["compare", "1", &id]);
    assert!(out.status.success(), "{}", stderr(&out));
    let holds = format!("capacity >= {}", (found * 0.99).floor());
    let breaks = format!("capacity >= {}", (found * 1.5).ceil());
    assert_eq!(run(&store, &["show", &id, "--assert", &holds]).status.code(), Some(0));
    let out = run(&store, &["show", &id, "--assert", &breaks]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // `runs` lists the capacity as the run's figure, not its busiest try.
    // The run's own line: a first search retried above is a capacity run too.
    let runs = String::from_utf8_lossy(&run(&store, &["runs"]).stdout).into_owned();
    let line = runs.lines().find(|l| l.split_whitespace().next() == Some(id.as_str())).unwrap_or_default().to_string();
    assert!(line.contains(&format!(" {} ", scalelab_core::thousands(found))), "runs shows the capacity {found}: {line}");
    // A sweep has no capacity: the assertion says so and fails.
    let out = run(&store, &["show", "1", "--assert", "capacity >= 1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("no capacity"), "{}", stderr(&out));
}

#[test]
fn a_capacity_report_draws_the_search_path_pass_and_fail_the_slo_line_and_the_capacity() {
    let _cpu = cpu_exclusive();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    // global-lock at 2 ms a request holds at most 500 req/s: on a quiet
    // machine the ramp 50, 100, 200, 400 holds, 800 fails, bisection tries
    // 600 and confirms 400; beside a CPU hog the lock's holder gets half a
    // CPU and the first failure comes sooner (400, or 200).
    let args = [
        "capacity",
        "--specimen",
        "global-lock",
        "--work-us",
        "2000",
        "--slo",
        "p99<=100ms",
        "--step",
        "0.5s",
        "--warmup",
        "0.2s",
        "--pause",
        "0.5s",
        "--start-rate",
        "50",
        "--max-rate",
        "800",
        "--resolution",
        "50%",
        "--json",
        "-q",
    ];
    let out = run(&store, &args);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stderr(&out)));
    let id = doc["id"].as_i64().unwrap();
    let html = dir.path().join("r.html");
    let svg_dir = dir.path().join("svg");
    let out = run(&store, &["report", &id.to_string(), "-o", html.to_str().unwrap(), "--svg", svg_dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let svg = |name: &str| std::fs::read_to_string(svg_dir.join(format!("run-{id}-{name}.svg"))).unwrap_or_else(|e| panic!("{name}: {e}"));
    let (path, latency) = (svg("capacity-search"), svg("capacity-latency"));
    let tried = steps(&doc).len();
    // The bracket: the highest rate that held and the lowest that failed.
    let bracket = &doc["schedule"]["options"]["capacity_bracket"];
    let (held, failed) = (bracket[0].as_f64(), bracket[1].as_f64());
    let failed = failed.unwrap_or_else(|| panic!("800 req/s is beyond the limit, some rate must fail: {:#}", doc["schedule"]));
    assert!(tried >= 2, "{tried} tries");
    let mut series = vec!["tried rate", "failed"];
    if held.is_some() {
        series.push("passed");
    }
    for name in series {
        assert!(path.contains(&format!(r#"<g class="series" data-name="{name}">"#)), "{name}: {path}");
    }
    // Every try is one dot on the path: passed and failed together.
    let dots = path.matches("data-tip=\"passed: ").count() + path.matches("data-tip=\"failed: ").count();
    assert_eq!(dots, tried, "{path}");
    assert!(path.contains(&format!("data-tip=\"failed: {failed:.0} at ")), "{path}");
    assert!(latency.contains(r#"data-name="SLO p99 ≤ 100 ms""#), "{latency}");
    match doc["schedule"]["options"]["capacity_per_s"].as_f64() {
        Some(c) => {
            let label = format!("capacity {c:.0} req/s");
            assert!(path.contains(r#"<g class="marker">"#) && path.contains(&label), "{label}: {path}");
            assert!(latency.contains(&label), "{label}: {latency}");
        }
        None => {
            let note = format!("no capacity marked: the search ended {}", doc["schedule"]["options"]["capacity_result"].as_str().unwrap());
            assert!(path.contains(&note) && latency.contains(&note), "{note}: {path}");
        }
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Capacity search path") && page.contains("Latency vs offered rate"));
}
