use super::*;

fn settings(slo: &str, max: f64) -> Settings {
    Settings { slos: vec![parse_slo(slo).unwrap()], start_per_s: 500.0, max_per_s: max, resolution: 0.05, min_per_s: 1.0 }
}

/// A server with a hard limit: p99 1 ms below it, 500 ms above.
fn server(limit: f64) -> impl Fn(f64) -> Observation {
    move |rate| {
        let over = rate > limit;
        let p = if over { 500.0 } else { 1.0 };
        Observation {
            offered_per_s: rate,
            achieved_per_s: rate.min(limit),
            p50_ms: Some(p / 2.0),
            p90_ms: Some(p),
            p99_ms: Some(p),
            p999_ms: Some(p),
            error_share: 0.0,
        }
    }
}

fn run(search: &mut Search, measure: impl Fn(f64, usize) -> Observation) {
    for i in 0..100 {
        match search.next() {
            Next::Done => return,
            Next::Try { rate, .. } => search.record(measure(rate, i)),
        }
    }
    panic!("the search did not end in 100 steps");
}

#[test]
fn ramp_brackets_then_bisection_lands_within_resolution_and_confirms() {
    let mut s = Search::new(settings("p99<=20ms", 1e9));
    let srv = server(5000.0);
    run(&mut s, |r, _| srv(r));
    let Some(Found::Capacity { rate, above }) = s.found().cloned() else { panic!("{:?}", s.found()) };
    assert!((4750.0..=5000.0).contains(&rate), "{rate}");
    let above = above.unwrap();
    assert!(above > 5000.0 && (above - rate) <= 0.05 * rate + 1.0, "{rate} {above}");
    let phases: Vec<Phase> = s.trials().iter().map(|t| t.phase).collect();
    assert_eq!(&phases[..6], &[Phase::Ramp, Phase::Ramp, Phase::Ramp, Phase::Ramp, Phase::Ramp, Phase::Recheck]);
    assert_eq!(s.trials()[4].observation.offered_per_s, 8000.0);
    assert_eq!(s.trials()[5].observation.offered_per_s, 8000.0, "a failure is tried again");
    assert_eq!(*phases.last().unwrap(), Phase::Confirm);
    assert!(phases[6..phases.len() - 1].iter().all(|p| matches!(p, Phase::Bisect | Phase::Recheck)));
    // Every failing rate was tried twice, every passing one once (but the answer).
    for t in s.trials().iter().filter(|t| t.phase == Phase::Recheck) {
        assert!(!t.passed() && t.observation.offered_per_s > 5000.0);
    }
    // The first failing rate is the lowest failing one, found during bisection.
    let first = s.first_failing().unwrap();
    assert_eq!(s.trials()[first].observation.offered_per_s, above);
}

#[test]
fn a_failed_confirmation_says_noisy() {
    let mut s = Search::new(settings("p99<=20ms", 1e9));
    let srv = server(3000.0);
    while let Next::Try { rate, phase } = s.next() {
        let mut o = srv(rate);
        if phase == Phase::Confirm {
            o.p99_ms = Some(100.0); // a stall during the confirmation window
        }
        s.record(o);
    }
    let Some(Found::Noisy { rate }) = s.found().cloned() else { panic!("{:?}", s.found()) };
    assert!((2850.0..=3000.0).contains(&rate), "{rate}");
}

#[test]
fn a_slow_server_ramps_down_and_one_that_never_holds_says_so() {
    let mut s = Search::new(settings("p99<=20ms", 1e9));
    let srv = server(120.0);
    run(&mut s, |r, _| srv(r));
    let Some(Found::Capacity { rate, .. }) = s.found().cloned() else { panic!("{:?}", s.found()) };
    assert!((114.0..=120.0).contains(&rate), "{rate}");
    assert_eq!(s.trials()[2].observation.offered_per_s, 250.0, "500 failed twice");

    let mut s = Search::new(settings("p99<=20ms", 1e9));
    run(&mut s, |r, _| Observation { p99_ms: Some(100.0), ..server(1e9)(r) });
    assert_eq!(s.found(), Some(&Found::NoneHeld { lowest: 1.0 }));
}

#[test]
fn a_single_stall_does_not_end_the_ramp() {
    let mut s = Search::new(settings("p99<=20ms", 1e9));
    let srv = server(5000.0);
    let mut n = 0;
    while let Next::Try { rate, .. } = s.next() {
        n += 1;
        let mut o = srv(rate);
        if n == 2 {
            o.p99_ms = Some(300.0); // 1000 req/s, once: a neighbour's burst
        }
        s.record(o);
    }
    let Some(Found::Capacity { rate, .. }) = s.found().cloned() else { panic!("{:?}", s.found()) };
    assert!((4750.0..=5000.0).contains(&rate), "{rate}");
    assert_eq!(s.trials()[2].phase, Phase::Recheck);
    assert!(s.trials()[2].passed());
}

#[test]
fn max_rate_caps_the_ramp_and_is_confirmed() {
    let mut s = Search::new(settings("p99<=20ms", 3000.0));
    let srv = server(1e9);
    run(&mut s, |r, _| srv(r));
    assert_eq!(s.found(), Some(&Found::Capacity { rate: 3000.0, above: None }));
    let rates: Vec<f64> = s.trials().iter().map(|t| t.observation.offered_per_s).collect();
    assert_eq!(rates, vec![500.0, 1000.0, 2000.0, 3000.0, 3000.0]);
}

#[test]
fn errors_and_an_unachieved_rate_fail_a_step() {
    let slos = vec![parse_slo("errors<=0.1%").unwrap()];
    let ok = server(1e9)(1000.0);
    assert!(ok.breaches(&slos).is_empty());
    let errs = Observation { error_share: 0.002, ..ok.clone() };
    assert_eq!(errs.breaches(&slos), vec!["errors 0.20 % > 0.10 %".to_string()]);
    let slow = Observation { achieved_per_s: 800.0, ..ok };
    assert_eq!(slow.breaches(&slos).len(), 1);
}

#[test]
fn giving_up_keeps_the_bracket() {
    let mut s = Search::new(settings("p99<=20ms", 1e9));
    let srv = server(5000.0);
    for _ in 0..8 {
        let Next::Try { rate, .. } = s.next() else { panic!() };
        s.record(srv(rate));
    }
    s.give_up();
    assert_eq!(s.next(), Next::Done);
    assert_eq!(s.found(), Some(&Found::Unfinished { passed: Some(4000.0), failed: Some(6000.0) }));
}

#[test]
fn slo_text() {
    assert_eq!(parse_slo("p99<=20ms").unwrap(), Slo { metric: SloMetric::Latency(99.0), limit: 20.0 });
    assert_eq!(parse_slo(" P99.9 <= 1s").unwrap(), Slo { metric: SloMetric::Latency(99.9), limit: 1000.0 });
    assert_eq!(parse_slo("p50<=500us").unwrap().limit, 0.5);
    assert_eq!(parse_slo("errors<=0.1%").unwrap(), Slo { metric: SloMetric::Errors, limit: 0.001 });
    for bad in ["p99<20ms", "p98<=20ms", "p99<=20", "p99<=-1ms", "errors<=0.1", "errors<=200%", "latency<=1ms", ""] {
        let e = parse_slo(bad).unwrap_err();
        assert!(e.starts_with("--slo") && !e.contains('\n'), "{bad}: {e}");
    }
    let o = server(1e9)(100.0);
    assert_eq!(parse_slo("p99<=20ms").unwrap().describe(&o), "p99 1.0 ms ≤ 20 ms");
}
