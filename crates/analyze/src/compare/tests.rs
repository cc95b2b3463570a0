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
