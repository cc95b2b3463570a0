use super::*;

#[test]
fn aligns_runs_with_different_steps() {
    let a = Series::from_pairs("a", &[(1, 100.0), (2, 150.0), (4, 300.0)]);
    let b = Series::from_pairs("b", &[(2, 100.0), (8, 400.0)]);
    let opts = CompareOptions { baseline: Some("b".into()), ..Default::default() };
    let c = compare(&[a, b], &opts).unwrap();
    let ns: Vec<u32> = c.rows.iter().map(|r| r.concurrency).collect();
    assert_eq!(ns, vec![1, 2, 4, 8]);
    assert_eq!(c.rows[0].cells.throughput["b"], None);
    assert_eq!(c.rows[0].cells.scaling_pct["b"], None);
    assert_eq!(c.rows[0].cells.delta_pct["a vs b"], None);
    assert_eq!(c.rows[1].cells.scaling_pct["b"], Some(100)); // b's first step is 2
    assert_eq!(c.rows[1].cells.delta_pct["a vs b"], Some(50));
    assert_eq!(c.rows[3].cells.throughput["a"], None);
    assert_eq!(c.avg.throughput["a"], Some(550.0 / 3.0));
    assert_eq!(c.avg.delta_pct["a vs b"], None, "means over different steps");
    assert_eq!(c.max.throughput["b"], Some(400.0));
    assert_eq!(c.max.scaling_pct["a"], Some(300));
    assert_eq!(c.max.delta_pct["a vs b"], Some(-25));
}

#[test]
fn avg_from_without_steps_in_range_is_missing() {
    let a = Series::from_pairs("a", &[(1, 100.0), (2, 150.0)]);
    let c = compare(&[a], &CompareOptions { avg_from: Some(5), ..Default::default() }).unwrap();
    assert_eq!(c.avg.throughput["a"], None);
    assert_eq!(c.avg.scaling_pct["a"], None);
}

#[test]
fn rejects_unknown_and_duplicate_runs() {
    let a = Series::from_pairs("a", &[(1, 1.0)]);
    let opts = CompareOptions { pairs: vec![("a".into(), "z".into())], ..Default::default() };
    let err = compare(std::slice::from_ref(&a), &opts).unwrap_err();
    assert_eq!(err.to_string(), "`z` is not one of the compared runs (a)");
    assert!(matches!(compare(&[a.clone(), a], &CompareOptions::default()), Err(CompareError::DuplicateLabel(_))));
    assert_eq!(compare(&[], &CompareOptions::default()), Err(CompareError::NoRuns));
}

#[test]
fn parses_pairs_with_colons_in_labels() {
    let labels = ["db:8.0", "db:5.7", "x"];
    assert_eq!(CompareOptions::parse_pair("db:8.0:db:5.7", &labels).unwrap(), ("db:8.0".into(), "db:5.7".into()));
    assert_eq!(CompareOptions::parse_pair("x : db:5.7", &labels).unwrap(), ("x".into(), "db:5.7".into()));
    assert!(CompareOptions::parse_pair("x-y", &labels).is_err());
}

#[test]
fn json_has_the_documented_shape() {
    let a = Series::from_pairs("A", &[(1, 10.0), (2, 15.0)]);
    let b = Series::from_pairs("B", &[(1, 8.0)]);
    let opts = CompareOptions { pairs: vec![("A".into(), "B".into())], ..Default::default() };
    let v = serde_json::to_value(compare(&[a, b], &opts).unwrap()).unwrap();
    assert_eq!(v["rows"][0]["concurrency"], 1);
    assert_eq!(v["rows"][0]["throughput"]["A"], 10.0);
    assert_eq!(v["rows"][1]["throughput"]["B"], serde_json::Value::Null);
    assert_eq!(v["rows"][1]["scaling_pct"]["A"], 150);
    assert_eq!(v["rows"][0]["delta_pct"]["A vs B"], 25);
    assert_eq!(v["avg"]["throughput"]["A"], 12.5);
    assert_eq!(v["max"]["delta_pct"]["A vs B"], 88);
    let back: Comparison = serde_json::from_value(v).unwrap();
    assert_eq!(back.rows.len(), 2);
}

/// A level measured by `windows` (throughput per window) with its Student-t
/// interval, as `Series::of_run` makes it.
fn repeated(n: u32, windows: &[f64]) -> Point {
    let mean = windows.iter().sum::<f64>() / windows.len() as f64;
    Point { throughput_ci: crate::stats::mean_of_repeats(windows).ok(), repeats: windows.to_vec(), ..Point::new(n, mean) }
}

/// One window with a batch-means interval of ±`h`.
fn single(n: u32, x: f64, h: f64) -> Point {
    let ci = crate::stats::Ci95 { low: x - h, high: x + h, method: crate::stats::Method::BatchMeans, n: 10 };
    Point { throughput_ci: Some(ci), ..Point::new(n, x) }
}

#[test]
fn a_versus_pair_is_paired_window_by_window() {
    // The machine drifts a lot between blocks; A stays 5 % ahead in every pair.
    let drift = [1000.0, 1200.0, 900.0, 1100.0];
    let a = Series::new("A", vec![repeated(1, &[1050.0, 1262.0, 944.0, 1156.0])]);
    let b = Series::new("B", vec![repeated(1, &drift)]);
    let mut opts = CompareOptions { pairs: vec![("A".into(), "B".into())], ..Default::default() };
    let unpaired = compare(&[a.clone(), b.clone()], &opts).unwrap();
    let d = unpaired.rows[0].cells.delta["A vs B"].clone().unwrap();
    assert_eq!((d.verdict, d.method), (Some(crate::stats::Change::Same), Some(crate::stats::Method::Welch)), "drift swamps 5 % apart");
    assert!(d.words().starts_with("no detectable difference (±"), "{}", d.words());
    assert_eq!(unpaired.notes, vec!["separate runs: drift between them is not measured; --versus interleaves them".to_string()]);

    opts.paired = vec![("B".into(), "A".into())];
    let paired = compare(&[a, b], &opts).unwrap();
    let d = paired.rows[0].cells.delta["A vs B"].clone().unwrap();
    assert_eq!((d.verdict, d.method, d.n), (Some(crate::stats::Change::Faster), Some(crate::stats::Method::PairedT), Some(4)));
    assert!((d.delta_pct - 5.04).abs() < 0.01, "{}", d.delta_pct);
    assert!(d.ci95_low_pct.unwrap() > 4.8 && d.ci95_high_pct.unwrap() < 5.3, "{d:?}");
    assert_eq!(d.words(), "faster");
    assert!(paired.notes[0].starts_with("A vs B: paired"), "{:?}", paired.notes);
    // The AVG and MAX rows pair too (one level: the same windows).
    assert_eq!(paired.avg.delta["A vs B"].as_ref().unwrap().method, Some(crate::stats::Method::PairedT));
    assert_eq!(paired.max.delta["A vs B"].as_ref().unwrap().verdict, Some(crate::stats::Change::Faster));
}

#[test]
fn single_runs_compare_by_their_intervals_and_say_so() {
    let a = Series::new("A", vec![single(1, 1000.0, 10.0), single(4, 3000.0, 30.0)]);
    let b = Series::new("B", vec![single(1, 1100.0, 10.0), single(4, 3010.0, 30.0)]);
    let c = compare(&[a, b], &CompareOptions { pairs: vec![("A".into(), "B".into())], ..Default::default() }).unwrap();
    let at1 = c.rows[0].cells.delta["A vs B"].clone().unwrap();
    assert_eq!((at1.verdict, at1.words().as_str()), (Some(crate::stats::Change::Slower), "slower"));
    assert!(at1.ci95_high_pct.unwrap() < 0.0);
    let at4 = c.rows[1].cells.delta["A vs B"].clone().unwrap();
    assert_eq!(at4.verdict, Some(crate::stats::Change::Same));
    assert!(at4.ci95_low_pct.unwrap() < 0.0 && at4.ci95_high_pct.unwrap() > 0.0);
    assert_eq!(c.notes, vec!["single runs: the machine's drift between them is not measured; use --repeats or --versus".to_string()]);
    // AVG: the mean of the levels, its interval from their standard errors.
    let avg = c.avg.throughput_ci95["A"].unwrap();
    assert_eq!(c.avg.throughput["A"], Some(2000.0));
    let se = |h: f64| h / crate::stats::t975(9.0);
    let half = crate::stats::t975(9.0) * (se(10.0).powi(2) + se(30.0).powi(2)).sqrt() / 2.0;
    assert!((avg.high - 2000.0 - half).abs() < 1e-9, "{avg:?}");
    // MAX: the peak level's interval.
    assert_eq!(c.max.throughput_ci95["B"].unwrap().low, 2980.0);
    assert!(c.max.delta["A vs B"].as_ref().unwrap().verdict.is_some());
}

#[test]
fn a_delta_without_an_interval_is_bare_and_never_judged() {
    let a = Series::new("A", vec![single(1, 1000.0, 10.0)]);
    let b = Series::new(
        "B",
        vec![Point { no_interval: Some("a 2 s window: batch means need at least 5 seconds".into()), ..Point::new(1, 900.0) }],
    );
    let c = compare(&[a, b], &CompareOptions { pairs: vec![("A".into(), "B".into())], ..Default::default() }).unwrap();
    let d = c.rows[0].cells.delta["A vs B"].clone().unwrap();
    assert_eq!((d.verdict, d.ci95_low_pct, d.words().as_str()), (None, None, "no interval"));
    assert_eq!(d.no_interval.as_deref(), Some("a 2 s window: batch means need at least 5 seconds"));
    assert!((d.delta_pct - 100.0 / 9.0).abs() < 1e-9);
    let v = serde_json::to_value(&c).unwrap();
    assert!(v["rows"][0]["delta"]["A vs B"].get("verdict").is_none(), "absent when unjudgeable: {v}");
    assert_eq!(v["rows"][0]["delta_pct"]["A vs B"], 11, "the whole-% cell stays");
}

#[test]
fn json_carries_each_delta_with_its_interval() {
    let a = Series::new("A", vec![single(1, 1100.0, 10.0)]);
    let b = Series::new("B", vec![single(1, 1000.0, 10.0)]);
    let c = compare(&[a, b], &CompareOptions { pairs: vec![("A".into(), "B".into())], ..Default::default() }).unwrap();
    let v = serde_json::to_value(&c).unwrap();
    let d = &v["rows"][0]["delta"]["A vs B"];
    for key in ["delta_pct", "ci95_low_pct", "ci95_high_pct"] {
        assert!(d[key].is_f64(), "{key}: {d}");
    }
    assert_eq!((d["verdict"].as_str(), d["method"].as_str()), (Some("faster"), Some("welch")));
    assert_eq!(v["rows"][0]["throughput_ci95"]["A"]["method"], "batch-means");
    assert_eq!(v["max"]["delta"]["A vs B"]["verdict"], "faster");
    let back: Comparison = serde_json::from_value(v).unwrap();
    assert_eq!(back, c);
}
