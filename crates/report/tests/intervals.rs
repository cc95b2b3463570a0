//! Every figure with its interval, on hand-made runs: the run table (a level
//! measured three times is one row; a 6-second window has its own interval;
//! a 2-second one says why it has none), the JSON keys, compare's verdict
//! words (paired for a `--versus` pair, independent otherwise), the curve's
//! "within noise" and the throughput chart's error bars.

use scalelab_core::{LatencyHistogram, Run, RunKind, RunPlan, SecondResult, StepResult};
use std::time::Duration;

/// One window at `clients`: each second completes `per_second[i]` requests
/// of 2 ms (and one of 5 ms, so percentiles differ from the median).
fn window(clients: u32, per_second: &[u64]) -> StepResult {
    let mut latency = LatencyHistogram::new();
    let seconds: Vec<SecondResult> = per_second
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut h = LatencyHistogram::new();
            for k in 0..20 {
                h.record(Duration::from_micros(if k == 0 { 5000 } else { 2000 + 10 * i as u64 }));
            }
            latency.merge(&h);
            SecondResult { second: i as u32, requests: *n, errors: 0, latency: h, service: LatencyHistogram::new() }
        })
        .collect();
    let requests: u64 = per_second.iter().sum();
    StepResult {
        concurrency: clients,
        window_s: per_second.len() as f64,
        requests,
        queries: requests,
        latency,
        seconds,
        ..StepResult::default()
    }
}

fn run(id: i64, label: &str, steps: Vec<StepResult>) -> Run {
    Run {
        id,
        kind: RunKind::Sweep,
        plan: RunPlan {
            label: label.into(),
            target: "specimen:test".into(),
            workload: "GET /".into(),
            steps: vec![],
            client_threads: 2,
            options: Default::default(),
        },
        environment: Default::default(),
        started_unix_ms: 0,
        finished_unix_ms: None,
        complete: true,
        outcome: None,
        steps,
        samples: Default::default(),
        notes: vec![],
    }
}

/// 2 levels × 3 windows of 6 s, in rounds (1, 4, 4, 1, 1, 4).
fn repeated() -> Run {
    let w = |c: u32, x: u64| window(c, &[x, x + 10, x - 10, x + 5, x - 5, x]);
    run(1, "repeated", vec![w(1, 1000), w(4, 3000), w(4, 3100), w(1, 1020), w(1, 990), w(4, 2950)])
}

#[test]
fn a_level_measured_three_times_is_one_row_with_n_cv_and_its_windows() {
    let text = scalelab_report::table::run_table(&repeated());
    let lines: Vec<&str> = text.lines().collect();
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(header[..4], ["concurrency", "throughput/s", "n", "cv"], "{text}");
    assert_eq!(lines.iter().filter(|l| l.starts_with("1 ")).count(), 1, "{text}");
    assert_eq!(lines.iter().filter(|l| l.starts_with("4 ")).count(), 1, "{text}");
    let row4 = lines.iter().find(|l| l.starts_with("4 ")).unwrap();
    // Mean of 3,000, 3,100 and 2,950 /s; Student t over the 3 windows.
    assert!(row4.contains("3,017 ± 6.3 %") && row4.contains("2.5%"), "{row4}");
    assert!(row4.split_whitespace().any(|c| c == "3"), "n = 3: {row4}");
    let avg = lines.iter().find(|l| l.starts_with("AVG")).unwrap();
    let max = lines.iter().find(|l| l.starts_with("MAX")).unwrap();
    assert!(avg.contains("2,010 ± 4.8 %") && max.contains("3,017 ± 6.3 %"), "{avg}\n{max}");
    assert!(text.contains("a level measured n times: over its windows (Student t)"), "{text}");
    assert!(
        text.contains(
            "windows (throughput/s of each, in the order they ran):\n  1 client: 1,000  1,020  990\n  4 clients: 3,000  3,100  2,950\n"
        ),
        "{text}"
    );
    assert!(!text.contains("± —"), "{text}");
}

#[test]
fn a_single_window_has_its_interval_from_its_seconds_and_says_so() {
    let r = run(2, "single", vec![window(1, &[1000, 1010, 990, 1005, 995, 1000]), window(8, &[5000, 5100, 4900, 5050, 4950, 5000])]);
    let text = scalelab_report::table::run_table(&r);
    assert!(!text.lines().next().unwrap().contains(" n "), "no repeats, no n column: {text}");
    let row = text.lines().find(|l| l.starts_with("8 ")).unwrap();
    assert!(row.contains("5,000 ± 1.5 %"), "{row}");
    assert!(text.contains("a level measured once: within one window (batch means over its seconds)"), "{text}");
    assert!(!text.contains("windows (throughput/s"), "{text}");
}

#[test]
fn a_short_window_prints_no_false_interval_and_says_why_once() {
    let r = run(3, "short", vec![window(1, &[1000, 1010]), window(2, &[1900, 1950])]);
    let text = scalelab_report::table::run_table(&r);
    assert!(text.lines().find(|l| l.starts_with("2 ")).unwrap().contains("1,925 ± —"), "{text}");
    assert!(!text.contains("± 0.0 %"), "{text}");
    assert_eq!(text.matches("± —: no interval: a 2 s window").count(), 1, "{text}");
    assert!(text.lines().find(|l| l.starts_with("AVG")).unwrap().contains("± —"), "{text}");
}

#[test]
fn json_carries_intervals_beside_the_figures() {
    let v = scalelab_report::json::run_json(&repeated());
    let levels = v["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 2);
    let l4 = levels.iter().find(|l| l["concurrency"] == 4).unwrap();
    assert_eq!(l4["windows"], 3);
    assert_eq!(l4["repeats"].as_array().unwrap().len(), 3);
    assert_eq!(l4["throughput_ci95"]["method"], "student-t");
    assert_eq!(l4["throughput_ci95"]["n"], 3);
    assert!(l4["throughput_ci95"]["low"].as_f64().unwrap() < l4["throughput_per_s"].as_f64().unwrap());
    assert!(l4["cv_pct"].as_f64().unwrap() > 0.0);
    assert!(l4["latency_ci95"]["p99"]["high"].is_f64(), "{l4}");
    assert!(l4.get("no_interval").is_none());
    // Each window keeps its own interval from its seconds.
    let step = &v["steps"][0];
    assert_eq!(step["throughput_ci95"]["method"], "batch-means");
    assert_eq!(step["throughput_ci95"]["n"], 6);
    assert!(step["latency_ci95"]["p50"].is_object(), "{step}");
    // A short window: null, and why.
    let short = scalelab_report::json::run_json(&run(3, "short", vec![window(1, &[1000, 1010])]));
    assert!(short["steps"][0]["throughput_ci95"].is_null());
    assert!(short["levels"][0]["no_interval"].as_str().unwrap().starts_with("a 2 s window"));
}

/// Two arms of one `--versus` sweep at one level, 4 windows each: A stays
/// ~5 % ahead of B in every pair while the machine drifts ±10 %.
fn versus() -> (Run, Run) {
    let secs = |x: u64| [x, x + 2, x - 2, x + 1, x - 1, x];
    let (a_x, b_x) = ([1050, 1262, 944, 1156], [1000, 1200, 900, 1100]);
    let mut a = run(10, "A", a_x.iter().map(|x| window(4, &secs(*x))).collect());
    let mut b = run(11, "B", b_x.iter().map(|x| window(4, &secs(*x))).collect());
    for (r, arm) in [(&mut a, "A"), (&mut b, "B")] {
        r.plan.options.insert("versus".into(), serde_json::json!({"pair": [10, 11], "arm": arm, "blocks": 2, "seed": 7}));
    }
    (a, b)
}

fn compared(a: &Run, b: &Run) -> scalelab_analyze::Comparison {
    let labelled = [("A", a), ("B", b)];
    let series: Vec<_> = labelled.iter().map(|(l, r)| scalelab_analyze::Series::of_run(*l, r)).collect();
    let paired = scalelab_analyze::compare::versus_arms(&labelled);
    let opts = scalelab_analyze::CompareOptions { pairs: vec![("A".into(), "B".into())], paired, ..Default::default() };
    let mut c = scalelab_analyze::compare(&series, &opts).unwrap();
    c.warnings = scalelab_analyze::compare::environment_differences(&labelled);
    c
}

#[test]
fn compare_pairs_the_arms_of_a_versus_sweep() {
    let (a, b) = versus();
    let text = scalelab_report::compare::to_text(&compared(&a, &b));
    let header = text.lines().next().unwrap();
    let at = |name: &str| header.find(name).unwrap_or_else(|| panic!("no {name}: {text}"));
    assert!(at("A vs B") < at("95% interval") && at("95% interval") < at("verdict"), "{text}");
    let row = text.lines().find(|l| l.starts_with("4 ")).unwrap();
    assert!(row.contains("+5.0%") && row.ends_with("faster"), "{row}");
    assert!(text.contains("A vs B: paired"), "{text}");
    assert!(!text.contains("drift between them is not measured"), "{text}");
    // The same windows as two separate runs: the drift swamps the 5 %.
    let (mut a, mut b) = versus();
    a.plan.options.clear();
    b.plan.options.clear();
    let text = scalelab_report::compare::to_text(&compared(&a, &b));
    let row = text.lines().find(|l| l.starts_with("4 ")).unwrap();
    assert!(row.contains("no detectable difference (±"), "{row}");
    assert!(text.contains("separate runs: drift between them is not measured; --versus interleaves them"), "{text}");
    let v = serde_json::to_value(compared(&a, &b)).unwrap();
    let d = &v["rows"][0]["delta"]["A vs B"];
    assert_eq!((d["verdict"].as_str(), d["method"].as_str()), (Some("same"), Some("welch")));
    assert!(d["ci95_low_pct"].as_f64().unwrap() < 0.0 && d["ci95_high_pct"].as_f64().unwrap() > 0.0);
}

#[test]
fn single_runs_say_their_drift_is_not_measured_and_unalike_machines_are_named() {
    let secs = |x: u64| [x, x + 5, x - 5, x + 2, x - 2, x];
    let wide = |x: u64| [x, x + 100, x - 100, x + 60, x - 60, x];
    let mut a = run(20, "A", vec![window(1, &secs(1000)), window(4, &wide(3000))]);
    let mut b = run(21, "B", vec![window(1, &secs(1100)), window(4, &wide(3005))]);
    a.environment.kernel = Some("6.1.0".into());
    b.environment.kernel = Some("6.5.0".into());
    let c = compared(&a, &b);
    let text = scalelab_report::compare::to_text(&c);
    assert!(text.lines().find(|l| l.starts_with("1 ")).unwrap().ends_with("slower"), "{text}");
    assert!(text.lines().find(|l| l.starts_with("4 ")).unwrap().contains("no detectable difference"), "{text}");
    assert!(text.contains("single runs: the machine's drift between them is not measured; use --repeats or --versus"), "{text}");
    assert!(text.contains("warning: kernel differs: 6.1.0 (A), 6.5.0 (B)"), "{text}");
    assert!(!text.contains("CPU model differs"), "{text}");
    let csv = scalelab_report::compare::to_csv(&c);
    assert!(csv.lines().next().unwrap().ends_with("A vs B delta %,A vs B ci95 low %,A vs B ci95 high %,A vs B verdict"), "{csv}");
}

#[test]
fn the_peak_names_the_levels_within_its_noise() {
    let secs = |x: u64| [x, x + 300, x - 300, x + 200, x - 200, x];
    let r =
        run(30, "noisy", vec![window(1, &secs(10_000)), window(5, &secs(29_800)), window(10, &secs(30_000)), window(20, &secs(29_900))]);
    let d = scalelab_analyze::diagnose(&r);
    let text = scalelab_report::diagnosis::render_text(&d, "noisy");
    assert!(text.contains("peak 30,000 ± 239 req/s at 10 clients (5 to 20 are within noise)"), "{text}");
    // The throughput chart draws each level's interval.
    let svg = scalelab_report::charts::throughput(&[scalelab_report::ReportRun::new(r)]).svg.unwrap();
    assert_eq!(svg.matches(r#"class="error-bar""#).count(), 4, "{svg}");
}
