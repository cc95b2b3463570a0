use super::*;
use crate::series::Point;

fn run() -> (Series, Curve) {
    let mut points: Vec<Point> =
        [(1, 1000.0), (2, 1900.0), (5, 4200.0), (10, 5200.0), (20, 5000.0)].iter().map(|&(n, x)| Point::new(n, x)).collect();
    for (i, p) in points.iter_mut().enumerate() {
        p.p50_ms = Some(1.0 + i as f64);
        p.p99_ms = Some(5.0 * (1.0 + i as f64));
        p.errors = Some(i as u64);
    }
    points[4].p50_ms = None;
    let s = Series::new("r", points);
    let c = Curve::of(&s).unwrap();
    (s, c)
}

fn check(text: &str) -> Outcome {
    let (s, c) = run();
    Assertion::parse(text).unwrap().evaluate(&s, &c, None)
}

#[test]
fn comparisons_pass_and_fail_with_the_measured_value() {
    let o = check("peak >= 5000");
    assert!(o.passed);
    assert_eq!(o.measured, Some(5200.0));
    assert_eq!(o.to_string(), "PASS  peak >= 5000  (measured 5200/s at 10 clients (no interval: point value))");
    let o = check("peak > 5200");
    assert!(!o.passed);
    assert_eq!(o.measured, Some(5200.0));

    assert!(check("scaling@10 >= 300%").passed);
    assert!(check("scaling@10 >= 5.2x").passed);
    assert!(!check("scaling@10 > 5.2x").passed);
    assert_eq!(check("scaling@5 >= 300%").measured, Some(420.0));
    assert!(check("throughput@20 == 5000").passed);
    assert!(check("x@2 < 2000").passed);
    assert!(check("p99_ms@10 <= 20ms").passed);
    assert!(!check("p99_ms@20 <= 20").passed);
    assert_eq!(check("p99 <= 100").measured, Some(25.0)); // worst step
    assert!(check("knee == 10").passed); // 4200 < 4680 = 90 % of 5200
    assert!(check("peak_concurrency != 20").passed);
    assert_eq!(check("last_pct_of_peak >= 95%").measured, Some(100.0 * 5000.0 / 5200.0));
    assert!(check("errors@1 == 0").passed);
    assert!(!check("errors == 0").passed);
    assert_eq!(check("errors <= 10").measured, Some(10.0));
    assert!(!check("no errors").passed);
}

#[test]
fn missing_data_fails_as_no_data() {
    let o = check("p99_ms@50 <= 20");
    assert!(!o.passed);
    assert_eq!(o.measured, None);
    assert_eq!(o.detail, "no data: no step at 50 clients");
    let o = check("p50_ms <= 1000");
    assert_eq!((o.passed, o.detail.as_str()), (false, "no data: p50 latency not recorded at 20 clients"));
    let o = check("sigma <= 0.1");
    assert_eq!(o.detail, "no data: no usable USL fit (it needs at least 4 steps, σ in [0, 1] and a curve that follows the data: `diagnose` says which failed)");

    // Imported series know no error counts: `errors == 0` must not pass.
    let s = Series::from_pairs("imported", &[(1, 10.0), (2, 20.0)]);
    let c = Curve::of(&s).unwrap();
    for text in ["errors == 0", "no errors", "errors@1 <= 0"] {
        let o = Assertion::parse(text).unwrap().evaluate(&s, &c, None);
        assert!(!o.passed, "{text}");
        assert!(o.detail.starts_with("no data: error counts not recorded"), "{}", o.detail);
    }
}

#[test]
fn collapse_flags() {
    let s = Series::from_pairs("tiger", &[(1, 192.0), (2, 274.0), (5, 113.0), (50, 47.0)]);
    let c = Curve::of(&s).unwrap();
    let o = Assertion::parse("no collapse").unwrap().evaluate(&s, &c, None);
    assert!(!o.passed);
    assert_eq!(o.detail, "47/s at 50 clients = 17% of peak, 24% of the first step: collapse (retrograde)");
    assert_eq!(o.measured, Some(100.0 * 47.0 / 274.0));
    let o = Assertion::parse("No  Retrograde").unwrap().evaluate(&s, &c, None);
    assert_eq!((o.passed, o.detail.as_str()), (false, "47/s at 50 clients = 24% of the first step: retrograde"));
    let o = check("no collapse");
    assert_eq!((o.passed, o.detail.as_str()), (true, "5000/s at 20 clients = 96% of peak, 500% of the first step"));
    assert!(check("no retrograde").passed);
    // Below 70 % of the peak but above the first step: a collapse, not retrograde.
    let s = Series::from_pairs("x", &[(1, 100.0), (2, 200.0), (4, 400.0), (8, 250.0)]);
    let c = Curve::of(&s).unwrap();
    assert!(!Assertion::parse("no collapse").unwrap().evaluate(&s, &c, None).passed);
    assert!(Assertion::parse("no retrograde").unwrap().evaluate(&s, &c, None).passed);
}

#[test]
fn usl_metrics_use_the_fit() {
    let pairs: Vec<(u32, f64)> = [1u32, 2, 4, 8, 16, 32].iter().map(|&n| (n, 100.0 * f64::from(n))).collect();
    let s = Series::from_pairs("linear", &pairs);
    let c = Curve::of(&s).unwrap();
    let fit = crate::usl::fit(&s).unwrap();
    let eval = |t: &str| Assertion::parse(t).unwrap().evaluate(&s, &c, Some(&fit));
    assert!(eval("sigma <= 0.01").passed);
    assert!(eval("kappa == 0").passed);
    assert!(eval("r2 >= 0.99").passed);
    let o = eval("n_opt >= 10");
    assert_eq!((o.passed, o.detail.as_str()), (true, "measured infinite (kappa = 0: throughput never falls)"));
    assert!(!eval("n_opt <= 1000").passed);
    assert!(eval("knee_marginal >= 1").detail.contains("still scaling"));
}

fn parse_err(text: &str) -> String {
    Assertion::parse(text).unwrap_err().to_string()
}

#[test]
fn parse_errors_say_what_was_expected() {
    assert_eq!(
        parse_err("p95_ms@50 <= 20"),
        "assertion `p95_ms@50 <= 20`: unknown metric `p95_ms`: expected one of peak, capacity, peak_concurrency, knee, \
         knee_marginal, last_pct_of_peak, throughput, scaling, p50_ms, p99_ms, p999_ms, errors, lambda, sigma, kappa, r2, n_opt, delta_pct"
    );
    assert_eq!(parse_err("peak = 5"), "assertion `peak = 5`: no comparison operator (`=` alone is not one: write `==`): expected `METRIC[@N] OP VALUE` with OP one of >= <= > < == !=, or one of `no collapse`, `no retrograde`, `no errors`");
    assert_eq!(parse_err("scaling >= 300%"), "assertion `scaling >= 300%`: `scaling` needs a step: write `scaling@N` (N = concurrency)");
    assert_eq!(parse_err("peak@10 >= 3"), "assertion `peak@10 >= 3`: `peak` is a figure of the whole run and takes no `@10`");
    assert_eq!(parse_err("p99_ms@0 <= 3"), "assertion `p99_ms@0 <= 3`: `@0`: expected @N with N a concurrency (an integer >= 1)");
    assert_eq!(parse_err("p99_ms@5 <= 3%"), "assertion `p99_ms@5 <= 3%`: `3%` is not a number (`p99_ms` takes unit ms)");
    assert_eq!(parse_err("knee >= many"), "assertion `knee >= many`: `many` is not a number (`knee` takes no unit)");
    assert_eq!(
        parse_err("no crashes"),
        "assertion `no crashes`: unknown flag `no crashes`: expected one of `no collapse`, `no retrograde`, `no errors`"
    );
    assert_eq!(parse_err("peak >== 4"), "assertion `peak >== 4`: unexpected `=` after `>=`");
    assert_eq!(parse_err(">= 4"), "assertion `>= 4`: no metric before `>=`: expected one of peak, capacity, peak_concurrency, knee, knee_marginal, last_pct_of_peak, throughput, scaling, p50_ms, p99_ms, p999_ms, errors, lambda, sigma, kappa, r2, n_opt, delta_pct");
}

#[test]
fn parses_spacing_case_units_and_separators() {
    let a = Assertion::parse("  PEAK>=5_000/s ").unwrap();
    assert_eq!(a.check, Check::Compare { metric: Metric::Peak, at: None, op: Op::Ge, value: 5000.0, point: false });
    assert_eq!(a.text, "PEAK>=5_000/s");
    let a = Assertion::parse("scaling @ 10 >= 3x").unwrap();
    assert_eq!(a.check, Check::Compare { metric: Metric::Scaling, at: Some(10), op: Op::Ge, value: 300.0, point: false });
    let texts = ["peak >= 1", "no collapse"];
    assert_eq!(parse_all(&texts).unwrap().len(), 2);
}

#[test]
fn delta_pct_is_for_compare_only() {
    let a = Assertion::parse("delta_pct@50 >= -5").unwrap();
    assert!(a.is_about_comparison());
    assert!(!Assertion::parse("peak >= 5").unwrap().is_about_comparison());
    assert!(Assertion::parse("delta >= -5%").unwrap().is_about_comparison());
}

/// A run whose peak is 5,210/s ± 4.1 %: its low bound is below 5000.
fn noisy_run() -> (Series, Curve) {
    use crate::stats::{Ci95, Method};
    let level = |n: u32, x: f64, h: f64| Point {
        throughput_ci: Some(Ci95 { low: x - h, high: x + h, method: Method::StudentT, n: 3 }),
        repeats: vec![x - h / 3.0, x, x + h / 3.0],
        ..Point::new(n, x)
    };
    let s = Series::new("r", vec![level(1, 1000.0, 20.0), level(8, 5210.0, 214.0), level(16, 5100.0, 150.0)]);
    let c = Curve::of(&s).unwrap();
    (s, c)
}

#[test]
fn figures_with_an_interval_are_checked_on_their_bounds() {
    let (s, c) = noisy_run();
    let eval = |t: &str| Assertion::parse(t).unwrap().evaluate(&s, &c, None);
    let o = eval("peak >= 5000");
    assert!(!o.passed, "the point passes, the low bound does not");
    assert_eq!(o.measured, Some(5210.0));
    assert_eq!(o.detail, "measured 5210/s at 8 clients ± 4.1 % (4996 to 5424): its low bound is below 5000");
    let o = eval("point(peak) >= 5000");
    assert!(o.passed);
    assert_eq!(o.detail, "measured 5210/s at 8 clients (point value; interval 4996 to 5424)");
    assert!(eval("peak >= 4990").passed);
    assert!(eval("peak <= 5500").passed);
    assert!(!eval("peak <= 5400").passed, "the high bound is above");
    assert!(eval("peak != 6000").passed);
    assert!(!eval("peak != 5000").passed, "the interval contains 5000");
    assert!(!eval("throughput@16 >= 5000").passed);
    assert!(eval("point(x@16) >= 5000").passed);
    assert!(eval("throughput@16 >= 4900").passed);
    // A figure without an interval is read on its point, and says so.
    let o = check("throughput@10 >= 5000");
    assert_eq!((o.passed, o.detail.as_str()), (true, "measured 5200/s at 10 clients (no interval: point value)"));
    // Latency and concurrencies have no bound to read.
    assert_eq!(eval("knee <= 8").detail, "measured 8 clients");
}

#[test]
fn a_capacity_is_read_on_its_point_and_says_why() {
    let (mut s, c) = run();
    s.capacity_per_s = Some(4400.0);
    let eval = |t: &str| Assertion::parse(t).unwrap().evaluate(&s, &c, None);
    let o = eval("capacity >= 4400");
    assert!(o.passed);
    assert_eq!(
        o.detail,
        "measured 4400/s (no interval: point value; a capacity is a rate that held; the bracket up to the lowest rate that failed is \
         the search's resolution, not an interval)"
    );
    assert!(!eval("capacity > 4400").passed);
    s.capacity_per_s = None;
    let o = Assertion::parse("capacity >= 1").unwrap().evaluate(&s, &c, None);
    assert!(!o.passed && o.measured.is_none() && o.detail.starts_with("no data: no capacity"), "{}", o.detail);
}

#[test]
fn point_applies_to_figures_with_an_interval() {
    let a = Assertion::parse("point(peak) >= 5_000").unwrap();
    assert!(a.is_on_point());
    assert!(matches!(a.check, Check::Compare { metric: Metric::Peak, point: true, .. }));
    assert!(Assertion::parse("point(delta_pct@50) >= -5").unwrap().is_about_comparison());
    assert_eq!(
        parse_err("point(knee) >= 4"),
        "assertion `point(knee) >= 4`: `point(knee)`: only peak, throughput and delta_pct have an interval; write `knee` alone"
    );
    assert_eq!(
        parse_err("point(capacity) >= 4"),
        "assertion `point(capacity) >= 4`: `point(capacity)`: only peak, throughput and delta_pct have an interval; write `capacity` alone"
    );
    assert_eq!(parse_err("point(peak >= 4"), "assertion `point(peak >= 4`: `point(` without its `)`: write `point(METRIC[@N]) OP VALUE`");
}

#[test]
fn a_delta_is_checked_on_its_interval() {
    use crate::stats::{Ci95, Method};
    let level = |n: u32, x: f64, h: f64| Point {
        throughput_ci: Some(Ci95 { low: x - h, high: x + h, method: Method::BatchMeans, n: 10 }),
        ..Point::new(n, x)
    };
    let a = Series::new("A", vec![level(50, 980.0, 30.0)]);
    let b = Series::new("B", vec![level(50, 1000.0, 30.0)]);
    let opts = crate::CompareOptions { pairs: vec![("A".into(), "B".into())], ..Default::default() };
    let table = crate::compare(&[a, b], &opts).unwrap();
    let o = Assertion::parse("delta_pct@50 >= -5").unwrap().evaluate_comparison(&table);
    assert!(!o.passed, "-2 % on its point, but the low bound is under -5 %: {}", o.detail);
    assert!(o.detail.starts_with("measured -2.0% at 50 clients (A vs B) ± "), "{}", o.detail);
    assert!(o.detail.ends_with(": its low bound is below -5"), "{}", o.detail);
    let o = Assertion::parse("point(delta_pct@50) >= -5").unwrap().evaluate_comparison(&table);
    assert!(o.passed, "{}", o.detail);
    assert!(Assertion::parse("delta_pct@50 >= -10").unwrap().evaluate_comparison(&table).passed);
}
