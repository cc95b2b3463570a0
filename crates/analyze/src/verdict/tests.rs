use super::rules::port_range_size;
use super::*;
use scalelab_core::{Environment, ErrorClass, Failure, HotThread, RunKind, RunPlan, SoftirqCpu, StepTelemetry, ThreadStatesPct};

/// Telemetry of a healthy step: nothing in it should trigger any rule.
fn healthy() -> StepTelemetry {
    StepTelemetry {
        samples: 10,
        cpu_busy_pct: Some(50.0),
        cpu_user_pct: Some(35.0),
        cpu_sys_pct: Some(15.0),
        cpu_iowait_pct: Some(0.5),
        cpu_softirq_pct: Some(2.0),
        softirq_busiest_cpu: Some(SoftirqCpu {
            cpu: 0,
            softirq_pct: 3.0,
            others_softirq_pct: 2.0,
            net_rx_share_pct: Some(30.0),
            net_rx_per_s: Some(4000.0),
        }),
        cs_per_s: Some(2000.0),
        server_cpu_pct: Some(150.0),
        server_cs_per_s: Some(1000.0),
        server_threads: None,
        server_rss_mb: None,
        cs_per_request: Some(1.0),
        thread_states_pct: Some(ThreadStatesPct { running: 60.0, runnable: 5.0, futex: 5.0, io: 0.0, idle: 30.0, other: 0.0 }),
        hottest_threads: vec![HotThread { tid: 101, name: "worker-0".into(), cpu_pct: 40.0, runnable_pct: Some(2.0) }],
        tcp_time_wait: Some(100),
        tcp_time_wait_to_target: Some(100),
        listen_queue_max: Some(0),
        listen_queue_mean: Some(0.0),
        listen_backlog: Some(128),
        listen_overflows_per_s: Some(0.0),
        listen_drops_per_s: Some(0.0),
        retrans_per_s: Some(0.0),
        disk_iops: Some(5.0),
        net_mb_per_s: Some(10.0),
        specimen: None,
        db: None,
        unavailable: Default::default(),
    }
}

/// A 10 s step at `n` clients doing `x` req/s, its client at 20 % of 2 cores.
fn step(n: u32, x: f64, t: Option<StepTelemetry>) -> StepResult {
    StepResult {
        concurrency: n,
        window_s: 10.0,
        requests: (x * 10.0) as u64,
        queries: (x * 10.0) as u64,
        client_cpu_s: 4.0,
        client_cores: 2,
        telemetry: t,
        ..StepResult::default()
    }
}

fn run(steps: Vec<StepResult>) -> Run {
    Run {
        id: 1,
        kind: RunKind::Sweep,
        plan: RunPlan {
            label: "test".into(),
            target: "specimen:test".into(),
            workload: "GET /".into(),
            steps: vec![],
            client_threads: 2,
            options: Default::default(),
        },
        environment: Environment { logical_cores: Some(4), ip_local_port_range: Some("32768 60999".into()), ..Default::default() },
        started_unix_ms: 0,
        finished_unix_ms: None,
        complete: true,
        outcome: None,
        steps,
        samples: Default::default(),
        notes: vec![],
    }
}

/// A run climbing to its knee at 2 clients, then flat: the rule's telemetry
/// `at_knee` is given to the steps at 2, 4 and 8 clients.
fn run_with(at_knee: impl Fn(u32) -> StepTelemetry) -> Run {
    run(vec![
        step(1, 100.0, Some(healthy())),
        step(2, 190.0, Some(at_knee(2))),
        step(4, 200.0, Some(at_knee(4))),
        step(8, 195.0, Some(at_knee(8))),
    ])
}

fn kinds(vs: &[Verdict]) -> Vec<VerdictKind> {
    vs.iter().map(|v| v.kind).collect()
}

fn only(run: &Run, kind: VerdictKind) -> Verdict {
    let d = diagnose(run);
    let found: Vec<&Verdict> = d.verdicts.iter().filter(|v| v.kind == kind).collect();
    assert_eq!(found.len(), 1, "expected one {kind:?} in {:?}", kinds(&d.verdicts));
    found[0].clone()
}

fn ev(v: &Verdict, name: &str) -> f64 {
    v.evidence.iter().find(|e| e.name == name).unwrap_or_else(|| panic!("no evidence `{name}` in {:?}", v.evidence)).value
}

#[test]
fn healthy_run_has_no_verdict() {
    let d = diagnose(&run_with(|_| healthy()));
    assert_eq!(d.curve.as_ref().unwrap().knee_concurrency, 2);
    assert!(d.verdicts.is_empty(), "{:?}", d.verdicts);
}

fn locked(n: u32) -> StepTelemetry {
    let mut t = healthy();
    t.cpu_busy_pct = Some(30.0);
    t.cpu_user_pct = Some(10.0);
    t.cpu_sys_pct = Some(20.0);
    t.cs_per_request = Some(2.0 * f64::from(n));
    t.server_cs_per_s = Some(20_000.0);
    t.thread_states_pct = Some(ThreadStatesPct { running: 10.0, runnable: 2.0, futex: 70.0, io: 0.0, idle: 18.0, other: 0.0 });
    t
}

#[test]
fn lock_contention_with_all_signals_is_high() {
    let v = only(&run_with(locked), VerdictKind::LockContention);
    assert_eq!((v.confidence, v.concurrency), (Confidence::High, 8));
    assert_eq!(ev(&v, "cs per request growth"), 16.0);
    assert_eq!(ev(&v, "server threads blocked on futex"), 70.0);
    assert!(v.missing.is_empty());
    assert!(v.next.contains("perf lock contention -b"));
}

#[test]
fn lock_contention_without_cs_probe_is_medium_and_says_why() {
    let r = run_with(|n| {
        let mut t = locked(n);
        t.cs_per_request = None;
        t.server_cs_per_s = None;
        t.unavailable.insert("server".into(), "permission denied reading /proc/PID/status".into());
        t
    });
    let v = only(&r, VerdictKind::LockContention);
    assert_eq!(v.confidence, Confidence::Medium);
    assert_eq!(v.missing, vec!["context switches per request: permission denied reading /proc/PID/status".to_string()]);
    assert!(v.evidence.iter().all(|e| e.name != "server cs per request"), "missing is not zero");
}

#[test]
fn lock_contention_without_thread_states_needs_rising_cs_and_is_medium() {
    let r = run_with(|n| {
        let mut t = locked(n);
        t.thread_states_pct = None;
        t.hottest_threads.clear();
        t.unavailable.insert("thread_states".into(), "no thread-state samples in the window".into());
        t
    });
    let v = only(&r, VerdictKind::LockContention);
    assert_eq!(v.confidence, Confidence::Medium);
    assert_eq!(v.missing, vec!["server thread states: no thread-state samples in the window".to_string()]);
    // Without thread states and without rising context switches: nothing.
    let r = run_with(|_| {
        let mut t = locked(1);
        t.thread_states_pct = None;
        t.cs_per_request = Some(1.5); // x1.5 the first step's: not rising
        t
    });
    assert!(!kinds(&diagnose(&r).verdicts).contains(&VerdictKind::LockContention));
}

#[test]
fn futex_sleep_with_flat_context_switches_is_low() {
    let r = run_with(|_| {
        let mut t = locked(1);
        t.cs_per_request = Some(1.0); // same as the first step
        t
    });
    assert_eq!(only(&r, VerdictKind::LockContention).confidence, Confidence::Medium);
    let r = run_with(|_| {
        let mut t = locked(1);
        t.cs_per_request = Some(1.0);
        t.cpu_busy_pct = None;
        t.unavailable.insert("cpu".into(), "fewer than 2 system samples in the window".into());
        t
    });
    let v = only(&r, VerdictKind::LockContention);
    assert_eq!(v.confidence, Confidence::Low);
    assert_eq!(v.missing, vec!["CPU busy: fewer than 2 system samples in the window".to_string()]);
}

#[test]
fn no_lock_contention_on_a_cpu_the_server_saturates() {
    let r = run_with(|n| {
        let mut t = locked(n);
        t.cpu_busy_pct = Some(97.0);
        t.server_cpu_pct = Some(340.0);
        t
    });
    assert!(!kinds(&diagnose(&r).verdicts).contains(&VerdictKind::LockContention));
    // Server CPU not measured: the saturated machine may be the server's.
    let r = run_with(|n| {
        let mut t = locked(n);
        t.cpu_busy_pct = Some(97.0);
        t.server_cpu_pct = None;
        t
    });
    assert!(!kinds(&diagnose(&r).verdicts).contains(&VerdictKind::LockContention));
}

/// A neighbour's CPU hog fills the machine; the server's own figures (one
/// core of four, its threads on futexes) still show the lock, at a lowered
/// confidence, and the headline does not claim an idle CPU.
#[test]
fn lock_contention_beside_a_cpu_hog_is_judged_on_the_servers_own_figures() {
    let r = run_with(|n| {
        let mut t = locked(n);
        t.cpu_busy_pct = Some(100.0);
        t.server_cpu_pct = Some(100.0);
        t
    });
    let v = only(&r, VerdictKind::LockContention);
    assert_eq!(v.confidence, Confidence::Medium);
    assert_eq!(ev(&v, "server CPU"), 100.0);
    assert!(!v.headline.contains("idles"), "{}", v.headline);
}

fn busy(user: f64, sys: f64) -> impl Fn(u32) -> StepTelemetry {
    move |_| {
        let mut t = healthy();
        t.cpu_busy_pct = Some(user + sys);
        t.cpu_user_pct = Some(user);
        t.cpu_sys_pct = Some(sys);
        t.server_cpu_pct = Some(330.0);
        t
    }
}

#[test]
fn cpu_bound_split_user_and_kernel() {
    let v = only(&run_with(busy(70.0, 25.0)), VerdictKind::CpuBoundUser);
    assert_eq!(v.confidence, Confidence::High);
    assert_eq!(ev(&v, "CPU busy"), 95.0);
    let d = diagnose(&run_with(busy(30.0, 65.0)));
    assert_eq!(kinds(&d.verdicts), vec![VerdictKind::CpuBoundKernel]);
    // An even split names neither side; 60/40 is "mostly" one side again.
    let v = only(&run_with(busy(48.0, 47.0)), VerdictKind::CpuBoundMixed);
    assert_eq!((ev(&v, "CPU user"), ev(&v, "CPU sys")), (48.0, 47.0));
    assert!(v.headline.contains("evenly"), "{}", v.headline);
    only(&run_with(busy(52.0, 43.0)), VerdictKind::CpuBoundMixed);
    only(&run_with(busy(43.0, 52.0)), VerdictKind::CpuBoundMixed);
    only(&run_with(busy(57.0, 38.0)), VerdictKind::CpuBoundUser);
    only(&run_with(busy(38.0, 57.0)), VerdictKind::CpuBoundKernel);
    // 89 % busy is not saturated (and not lock contention: no futex sleep).
    assert!(diagnose(&run_with(busy(60.0, 29.0))).verdicts.is_empty());
}

#[test]
fn a_cpu_bound_server_is_told_apart_from_the_load_generator_sharing_its_cores() {
    // 4 cores 95 % busy (3.8 cores): the client at 0.4 of a core is 11 %.
    let v = only(&run_with(busy(70.0, 25.0)), VerdictKind::CpuBoundUser);
    assert!((ev(&v, "load generator CPU") - 40.0).abs() < 1e-9, "{:?}", v.evidence);
    assert!((ev(&v, "load generator share of the busy CPU") - 100.0 * 0.4 / 3.8).abs() < 1e-9);
    assert!(v.headline.contains("the load generator shares these cores and used 11 % of the busy CPU"), "{}", v.headline);
    // A client using a sliver is not worth the words.
    let mut r = run_with(busy(70.0, 25.0));
    r.steps.iter_mut().for_each(|s| s.client_cpu_s = 1.0);
    let v = only(&r, VerdictKind::CpuBoundUser);
    assert!(!v.headline.contains("load generator"), "{}", v.headline);
}

#[test]
fn other_processes_taking_a_share_of_the_busy_cpu_are_named_and_lower_the_confidence() {
    // 4 cores 95 % busy (3.8 cores): server 2.5, client 0.4, others 0.9 (24 %).
    let others = |_| StepTelemetry { server_cpu_pct: Some(250.0), ..busy(70.0, 25.0)(0) };
    let v = only(&run_with(others), VerdictKind::CpuBoundUser);
    assert!((ev(&v, "other processes' share of the busy CPU") - 100.0 * 0.9 / 3.8).abs() < 1e-9, "{:?}", v.evidence);
    assert!(
        v.headline.contains(
            "but the load generator 11 % and other processes 24 % of the busy CPU (the server had 66 %): part of this limit is theirs"
        ),
        "{}",
        v.headline
    );
    assert_eq!(v.confidence, Confidence::Medium);
    // At 330 % the others' 3 % is not worth the words, nor a doubt.
    let v = only(&run_with(busy(70.0, 25.0)), VerdictKind::CpuBoundUser);
    assert!(!v.headline.contains("other processes") && v.confidence == Confidence::High, "{}", v.headline);
}

#[test]
fn a_superlinear_start_is_named_and_left_out_of_the_usl_fit() {
    // The default demo's shape: 1 client does a third of what 2 do, then
    // the two cores are full.
    let r = run(vec![
        step(1, 5258.0, None),
        step(2, 15900.0, None),
        step(5, 17500.0, None),
        step(10, 17800.0, None),
        step(20, 17700.0, None),
        step(35, 17600.0, None),
    ]);
    let d = diagnose(&r);
    let s = d.curve.as_ref().unwrap().superlinear_start.clone().unwrap();
    assert_eq!((s.from, s.to), (1, 2));
    assert_eq!(d.usl_from, Some(2));
    let u = d.usl.as_ref().unwrap_or_else(|| panic!("{:?}", d.usl_error));
    assert_eq!(u.points, 5);
    let j = super::to_json(&d);
    assert_eq!(j["usl"]["fitted_from"], 2);
    assert_eq!(j["curve"]["superlinear_start"]["to"], 2);
    // Without the super-linear start the fit keeps every step.
    let r =
        run(vec![step(1, 8000.0, None), step(2, 15900.0, None), step(5, 16176.0, None), step(10, 15293.0, None), step(20, 14512.0, None)]);
    let d = diagnose(&r);
    assert_eq!((d.curve.unwrap().superlinear_start, d.usl_from), (None, None));
}

#[test]
fn cpu_bound_without_server_cpu_is_medium_and_without_split_absent() {
    let r = run_with(|n| {
        let mut t = busy(70.0, 25.0)(n);
        t.server_cpu_pct = None;
        t.unavailable.insert("server".into(), "no server process samples in the window".into());
        t
    });
    let v = only(&r, VerdictKind::CpuBoundUser);
    assert_eq!(v.confidence, Confidence::Medium);
    assert_eq!(v.missing, vec!["server CPU: no server process samples in the window".to_string()]);
    // The server using a small share of the machine lowers it too (one
    // core of the 3.8 busy: 26 %, above the 20 % under which it is not the server).
    let r = run_with(|n| {
        let mut t = busy(70.0, 25.0)(n);
        t.server_cpu_pct = Some(100.0);
        t
    });
    assert_eq!(only(&r, VerdictKind::CpuBoundUser).confidence, Confidence::Medium);
    let r = run_with(|n| {
        let mut t = busy(70.0, 25.0)(n);
        t.cpu_sys_pct = None;
        t
    });
    assert!(diagnose(&r).verdicts.is_empty(), "no split, no claim of user or kernel");
}

#[test]
fn a_cpu_hog_beside_an_idle_server_is_not_the_server_being_cpu_bound() {
    // 4 cores 98 % busy; the server at 1 % of one core, the client at 40 %.
    let r = run_with(|n| {
        let mut t = busy(70.0, 28.0)(n);
        t.server_cpu_pct = Some(1.0);
        t
    });
    let d = diagnose(&r);
    assert_eq!(kinds(&d.verdicts), vec![VerdictKind::CpuBusyElsewhere], "{:?}", d.verdicts);
    let v = &d.verdicts[0];
    assert_eq!(v.confidence, Confidence::High);
    assert!(v.headline.contains("not with the server") && v.headline.contains("other processes"), "{}", v.headline);
    assert_eq!(ev(v, "server CPU"), 1.0);
    assert!((ev(v, "load generator CPU") - 40.0).abs() < 1e-9);
    assert!((ev(v, "other processes CPU") - 351.0).abs() < 1e-9, "{:?}", v.evidence);
    assert!(v.next.contains("pidstat"));
    assert_eq!(VerdictKind::CpuBusyElsewhere.name(), "cpu-busy-elsewhere");
}

#[test]
fn a_busy_load_generator_is_named_when_it_uses_the_cpu() {
    let mut r = run_with(|n| {
        let mut t = busy(70.0, 28.0)(n);
        t.server_cpu_pct = Some(1.0);
        t
    });
    for s in &mut r.steps {
        s.client_cpu_s = 35.0; // 3.5 cores of the 3.9 busy
        s.client_cores = 4;
    }
    let v = only(&r, VerdictKind::CpuBusyElsewhere);
    assert!(v.headline.contains("the load generator used most of the CPU"), "{}", v.headline);
    assert!(!kinds(&diagnose(&r).verdicts).iter().any(|k| k.name().starts_with("cpu-bound")));
}

#[test]
fn a_frozen_server_on_futexes_is_not_lock_contention() {
    // SIGSTOP: its threads keep the interrupted futex call in /proc/TID/syscall,
    // but it uses no CPU and nothing sleeps and wakes.
    let frozen = |n: u32| {
        let mut t = locked(n);
        t.server_cpu_pct = Some(0.0);
        t.server_cs_per_s = Some(0.0);
        t.cs_per_request = None;
        t
    };
    assert!(!kinds(&diagnose(&run_with(frozen)).verdicts).contains(&VerdictKind::LockContention));
    // A real lock: a server using little CPU but switching a lot is still judged.
    let r = run_with(|n| {
        let mut t = locked(n);
        t.server_cpu_pct = Some(0.5);
        t
    });
    assert_eq!(only(&r, VerdictKind::LockContention).confidence, Confidence::High);
}

#[test]
fn a_hot_redis_main_thread_is_named_with_the_ways_out_of_it() {
    let redis = |_| {
        let mut t = healthy();
        t.cpu_busy_pct = Some(60.0);
        t.hottest_threads = vec![HotThread { tid: 9, name: "redis-server".into(), cpu_pct: 98.0, runnable_pct: None }];
        let r = scalelab_core::RedisTelemetry { commands_per_s: Some(90_000.0), io_threads_active: Some(0), ..Default::default() };
        t.db = Some(scalelab_core::DbTelemetry { engine: "redis".into(), redis: Some(r), ..Default::default() });
        t
    };
    let v = only(&run_with(redis), VerdictKind::SingleHotThread);
    assert!(
        v.headline.ends_with("; Redis executes every command on its main thread; its I/O threads are off (`io-threads`), so the main thread also reads and writes every socket"),
        "{}",
        v.headline
    );
    assert!(v.next.starts_with("Redis scales out, not up"), "{}", v.next);
    assert_eq!(ev(&v, "Redis I/O threads active"), 0.0);
}

#[test]
fn single_hot_thread_only_when_the_machine_idles() {
    let hot = |_| {
        let mut t = healthy();
        t.cpu_busy_pct = Some(27.0);
        t.hottest_threads = vec![
            HotThread { tid: 7, name: "acceptor".into(), cpu_pct: 99.0, runnable_pct: None },
            HotThread { tid: 8, name: "worker".into(), cpu_pct: 3.0, runnable_pct: None },
        ];
        t
    };
    let v = only(&run_with(hot), VerdictKind::SingleHotThread);
    assert_eq!(v.confidence, Confidence::High);
    assert_eq!(ev(&v, "hottest thread"), 99.0);
    assert!(v.headline.contains("`acceptor` (tid 7)"), "{}", v.headline);
    let r = run_with(|n| {
        let mut t = hot(n);
        t.cpu_busy_pct = Some(99.0);
        t.cpu_user_pct = Some(90.0);
        t.cpu_sys_pct = Some(9.0);
        t.server_cpu_pct = Some(370.0);
        t
    });
    assert!(!kinds(&diagnose(&r).verdicts).contains(&VerdictKind::SingleHotThread));
    // The machine busy with others (a neighbour's hog), the server at one
    // core: the hot thread is still the server's serial stage.
    let r = run_with(|n| {
        let mut t = hot(n);
        t.cpu_busy_pct = Some(99.0);
        t.cpu_user_pct = Some(90.0);
        t.cpu_sys_pct = Some(9.0);
        t.server_cpu_pct = Some(102.0);
        t
    });
    assert_eq!(only(&r, VerdictKind::SingleHotThread).confidence, Confidence::Medium);
    let r = run_with(|n| {
        let mut t = hot(n);
        t.cpu_busy_pct = None;
        t
    });
    let v = only(&r, VerdictKind::SingleHotThread);
    assert_eq!(v.confidence, Confidence::Medium);
    assert_eq!(v.missing, vec!["CPU busy: not measured".to_string()]);
}

/// Starved by a neighbour's CPU hog, a single-threaded server's thread
/// gets a fraction of a core, yet it is on a CPU or waiting for one all the
/// time: its demand (its own schedstat figures) names the stage. Many
/// threads all waiting for a CPU are a busy machine, not one hot stage.
#[test]
fn a_starved_single_thread_is_found_by_its_demand() {
    let starved = |others: f64| {
        move |_| {
            let mut t = healthy();
            t.cpu_busy_pct = Some(100.0);
            t.cpu_user_pct = Some(80.0);
            t.cpu_sys_pct = Some(20.0);
            t.server_cpu_pct = Some(12.0);
            t.hottest_threads = vec![
                HotThread { tid: 7, name: "loop".into(), cpu_pct: 11.0, runnable_pct: Some(88.0) },
                HotThread { tid: 8, name: "worker".into(), cpu_pct: 1.0, runnable_pct: Some(others) },
            ];
            t
        }
    };
    let v = only(&run_with(starved(2.0)), VerdictKind::SingleHotThread);
    assert_eq!(v.confidence, Confidence::Medium, "the machine was busy: lowered");
    assert_eq!(ev(&v, "hottest thread waiting for a CPU"), 88.0);
    assert!(v.headline.contains("starved"), "{}", v.headline);
    assert!(!kinds(&diagnose(&run_with(starved(80.0))).verdicts).contains(&VerdictKind::SingleHotThread));
    // Without the runnable figure a starved thread is not claimed.
    let r = run_with(|n| {
        let mut t = starved(2.0)(n);
        t.hottest_threads[0].runnable_pct = None;
        t
    });
    assert!(!kinds(&diagnose(&r).verdicts).contains(&VerdictKind::SingleHotThread));
}

/// A CPU hog beside the server leaves no idle time, so no iowait; the
/// server's own threads in disk wait still show the disk, at a lowered confidence.
#[test]
fn disk_bound_beside_a_cpu_hog_by_the_servers_threads() {
    let r = run_with(|_| {
        let mut t = healthy();
        t.cpu_busy_pct = Some(100.0);
        t.cpu_user_pct = Some(90.0);
        t.cpu_sys_pct = Some(10.0);
        t.cpu_iowait_pct = Some(0.0);
        t.server_cpu_pct = Some(5.0);
        t.disk_iops = Some(500.0);
        t.thread_states_pct = Some(ThreadStatesPct { running: 1.0, runnable: 36.0, futex: 0.0, io: 37.0, idle: 13.0, other: 13.0 });
        t
    });
    let v = only(&r, VerdictKind::DiskBound);
    assert_eq!(v.confidence, Confidence::Medium);
    assert_eq!(ev(&v, "server threads in disk wait"), 37.0);
    assert!(v.headline.contains("hidden"), "{}", v.headline);
    // Queued for a CPU most of the time, the threads' disk wait is a small
    // share of all their time but most of the rest: 10 % of 100, 10 of 25.
    let queued = |io: f64| {
        run_with(move |_| {
            let mut t = healthy();
            t.cpu_busy_pct = Some(100.0);
            t.cpu_iowait_pct = Some(0.0);
            t.server_cpu_pct = Some(5.0);
            t.disk_iops = Some(500.0);
            t.thread_states_pct = Some(ThreadStatesPct { running: 5.0, runnable: 75.0, futex: 0.0, io, idle: 20.0 - io, other: 0.0 });
            t
        })
    };
    let v = only(&queued(10.0), VerdictKind::DiskBound);
    assert_eq!(ev(&v, "server threads in disk wait, of their time not queued for a CPU"), 40.0);
    assert!(!kinds(&diagnose(&queued(4.0)).verdicts).contains(&VerdictKind::DiskBound), "4 of 25 is 16 %: below the threshold");
    // With idle CPUs and no iowait, threads in disk wait alone do not fire.
    let r = run_with(|_| {
        let mut t = healthy();
        t.cpu_iowait_pct = Some(0.0);
        t.thread_states_pct = Some(ThreadStatesPct { running: 30.0, runnable: 5.0, futex: 0.0, io: 37.0, idle: 28.0, other: 0.0 });
        t
    });
    assert!(!kinds(&diagnose(&r).verdicts).contains(&VerdictKind::DiskBound));
}

#[test]
fn disk_bound_by_iowait_iops_and_io_blocked_threads() {
    let disk = |_| {
        let mut t = healthy();
        t.cpu_iowait_pct = Some(35.0);
        t.disk_iops = Some(4800.0);
        t.thread_states_pct = Some(ThreadStatesPct { running: 10.0, runnable: 0.0, futex: 5.0, io: 80.0, idle: 5.0, other: 0.0 });
        t
    };
    let v = only(&run_with(disk), VerdictKind::DiskBound);
    assert_eq!(v.confidence, Confidence::High);
    assert_eq!(ev(&v, "disk"), 4800.0);
    let r = run_with(|n| {
        let mut t = disk(n);
        t.disk_iops = None;
        t.thread_states_pct = None;
        t
    });
    let v = only(&r, VerdictKind::DiskBound);
    assert_eq!(v.confidence, Confidence::Low);
    assert_eq!(v.missing.len(), 2, "{:?}", v.missing);
    let r = run_with(|n| {
        let mut t = disk(n);
        t.cpu_iowait_pct = Some(5.0);
        t
    });
    assert!(diagnose(&r).verdicts.is_empty());
}

#[test]
fn accept_overflow_from_the_targets_own_queue() {
    // The target's queue full, and the kernel counting overflows: high.
    let v = only(
        &run_with(|_| {
            let mut t = healthy();
            t.listen_overflows_per_s = Some(120.0);
            t.listen_drops_per_s = Some(120.0);
            (t.listen_queue_max, t.listen_queue_mean, t.listen_backlog) = (Some(1), Some(1.0), Some(1));
            t
        }),
        VerdictKind::AcceptOverflow,
    );
    assert_eq!(v.confidence, Confidence::High);
    assert_eq!(ev(&v, "listen drops, machine-wide"), 120.0);
    assert!(v.headline.starts_with("the target's listen queue is full (1 of 1"), "{}", v.headline);
    // Another listener overflowing while the target's queue has room: no verdict.
    let r = run_with(|_| {
        let mut t = healthy();
        t.listen_overflows_per_s = Some(120.0);
        t.listen_drops_per_s = Some(120.0);
        t.listen_queue_max = Some(4);
        t
    });
    assert!(diagnose(&r).verdicts.is_empty(), "{:?}", diagnose(&r).verdicts);
    // The target's queue not measured: the machine-wide counters alone, low and said so.
    let v = only(
        &run_with(|_| {
            let mut t = healthy();
            t.listen_overflows_per_s = Some(120.0);
            (t.listen_queue_max, t.listen_queue_mean, t.listen_backlog) = (None, None, None);
            t
        }),
        VerdictKind::AcceptOverflow,
    );
    assert_eq!(v.confidence, Confidence::Low);
    assert!(v.headline.contains("machine-wide counters"), "{}", v.headline);
    let r = run_with(|_| {
        let mut t = healthy();
        t.listen_drops_per_s = Some(0.5);
        t
    });
    assert!(diagnose(&r).verdicts.is_empty());
}

/// Every step opening `per_s` new connections per second of its window.
fn churning(mut r: Run, per_s: f64) -> Run {
    for s in &mut r.steps {
        s.reconnects = (per_s * s.window_s) as u64;
    }
    r
}

#[test]
fn port_exhaustion_against_the_range_or_the_fallback() {
    let tw = |n: u64| {
        move |_| {
            let mut t = healthy();
            t.tcp_time_wait = Some(n + 500);
            t.tcp_time_wait_to_target = Some(n);
            t
        }
    };
    // 500 new connections/s leave 30,000 in TIME_WAIT over its 60 s.
    let v = only(&churning(run_with(tw(25_000)), 500.0), VerdictKind::PortExhaustion);
    assert_eq!(v.confidence, Confidence::High);
    assert_eq!(ev(&v, "ephemeral ports"), 28232.0);
    assert_eq!(ev(&v, "sockets in TIME_WAIT toward the server"), 25_000.0);
    assert_eq!(ev(&v, "new connections"), 500.0);
    // 15,000 of 28,232 is 53 %: not exhausted.
    assert!(diagnose(&churning(run_with(tw(15_000)), 500.0)).verdicts.is_empty());
    // A narrow range makes 15,000 exhaustion.
    let mut r = churning(run_with(tw(15_000)), 500.0);
    r.environment.ip_local_port_range = Some("50000 60999".into());
    assert_eq!(only(&r, VerdictKind::PortExhaustion).confidence, Confidence::High);
    // Range not recorded: judged against 20,000, medium, and said so.
    let mut r = churning(run_with(tw(25_000)), 500.0);
    r.environment.ip_local_port_range = None;
    let v = only(&r, VerdictKind::PortExhaustion);
    assert_eq!(v.confidence, Confidence::Medium);
    assert!(v.missing[0].starts_with("ephemeral port range"), "{:?}", v.missing);
    assert_eq!(port_range_size("32768\t60999"), Some(28232));
    assert_eq!(port_range_size("60999 32768"), None);
    assert_eq!(port_range_size("junk"), None);
}

#[test]
fn time_wait_toward_other_destinations_is_no_port_exhaustion() {
    // An earlier run's short connections to another port: 25,000 machine-wide,
    // 100 toward this server, and a keep-alive run opening no connections.
    let r = run_with(|_| {
        let mut t = healthy();
        t.tcp_time_wait = Some(25_000);
        t.tcp_time_wait_to_target = Some(100);
        t
    });
    assert!(diagnose(&r).verdicts.is_empty(), "{:?}", diagnose(&r).verdicts);
    // Toward this server, but left by an earlier run: this one keeps its connections.
    let r = run_with(|_| {
        let mut t = healthy();
        t.tcp_time_wait_to_target = Some(25_000);
        t
    });
    assert!(diagnose(&r).verdicts.is_empty());
    // The server's addresses unknown: machine-wide, believed only with the run's own churn, and lowered.
    let unknown = |_| {
        let mut t = healthy();
        t.tcp_time_wait = Some(25_000);
        t.tcp_time_wait_to_target = None;
        t.unavailable.insert("time_wait_to_target".into(), "the server's listening addresses were not known".into());
        t
    };
    assert!(diagnose(&run_with(unknown)).verdicts.is_empty());
    let v = only(&churning(run_with(unknown), 500.0), VerdictKind::PortExhaustion);
    assert_eq!(v.confidence, Confidence::Medium);
    assert_eq!(ev(&v, "sockets in TIME_WAIT (machine-wide)"), 25_000.0);
    assert!(v.missing[0].contains("counted machine-wide"), "{:?}", v.missing);
}

#[test]
fn connects_failing_with_eaddrnotavail_corroborate_port_exhaustion() {
    let mut r = run_with(|_| {
        let mut t = healthy();
        t.tcp_time_wait_to_target = Some(25_000);
        t
    });
    for s in &mut r.steps {
        with_errors(s, ErrorClass::Other, 30);
        s.errors.first_message.insert(ErrorClass::Other, "connect to 127.0.0.1:80: Cannot assign requested address (os error 99)".into());
    }
    let v = only(&r, VerdictKind::PortExhaustion);
    assert_eq!(ev(&v, "connects failed with EADDRNOTAVAIL"), 3.0);
}

fn retransmitting(_: u32) -> StepTelemetry {
    let mut t = healthy();
    t.retrans_per_s = Some(800.0);
    t
}

#[test]
fn network_bound_is_never_high_without_link_capacity() {
    let mut r = run_with(retransmitting);
    r.plan.target = "http://10.0.0.5:8080/".into();
    let v = only(&r, VerdictKind::NetworkBound);
    assert_eq!(v.confidence, Confidence::Medium);
    assert!(v.missing[0].starts_with("link capacity"));
}

#[test]
fn network_bound_on_loopback_is_low_and_says_there_is_no_link() {
    for target in ["specimen:scales", "http://127.0.0.1:8080/", "postgres://u@localhost:5432/db", "http://[::1]:80/"] {
        let mut r = run_with(retransmitting);
        r.plan.target = target.into();
        let v = only(&r, VerdictKind::NetworkBound);
        assert_eq!(v.confidence, Confidence::Low, "{target}");
        assert!(v.missing.iter().any(|m| m.contains("loopback")), "{target}: {:?}", v.missing);
    }
}

fn rx_on_cpu1(share: Option<f64>) -> impl Fn(u32) -> StepTelemetry {
    move |_| {
        let mut t = healthy();
        t.softirq_busiest_cpu =
            Some(SoftirqCpu { cpu: 1, softirq_pct: 62.0, others_softirq_pct: 4.0, net_rx_share_pct: share, net_rx_per_s: Some(90_000.0) });
        t
    }
}

#[test]
fn softirqs_on_one_cpu_name_the_cpu_and_its_net_rx_share() {
    let v = only(&run_with(rx_on_cpu1(Some(96.0))), VerdictKind::SoftirqOneCpu);
    assert_eq!(v.confidence, Confidence::High);
    assert!(v.headline.starts_with("CPU 1 does the softirq"), "{}", v.headline);
    assert_eq!(ev(&v, "softirq on CPU 1"), 62.0);
    assert_eq!(ev(&v, "NET_RX on CPU 1"), 96.0);
    assert!(v.next.contains("rps_cpus"));

    // Without the per-CPU NET_RX split the verdict says so and is less sure.
    let v = only(&run_with(rx_on_cpu1(None)), VerdictKind::SoftirqOneCpu);
    assert_eq!(v.confidence, Confidence::Medium);
    assert!(v.missing[0].starts_with("NET_RX per CPU"), "{:?}", v.missing);

    // NET_RX measured and spread (58 % on that CPU): the busy softirqs are
    // something else (seen: a virtio disk's BLOCK softirqs all on CPU 1).
    let d = diagnose(&run_with(rx_on_cpu1(Some(58.0))));
    assert!(!kinds(&d.verdicts).contains(&VerdictKind::SoftirqOneCpu), "{:?}", kinds(&d.verdicts));
}

#[test]
fn softirqs_spread_over_cpus_or_light_are_not_one_cpu() {
    for (busiest, others) in [(62.0, 40.0), (20.0, 1.0)] {
        let r = run_with(move |_| {
            let mut t = healthy();
            t.softirq_busiest_cpu = Some(SoftirqCpu {
                cpu: 0,
                softirq_pct: busiest,
                others_softirq_pct: others,
                net_rx_share_pct: Some(90.0),
                net_rx_per_s: None,
            });
            t
        });
        assert!(!kinds(&diagnose(&r).verdicts).contains(&VerdictKind::SoftirqOneCpu), "{busiest} vs {others}");
    }
}

fn with_errors(s: &mut StepResult, class: ErrorClass, n: u64) {
    for _ in 0..n {
        s.errors.add(&Failure::new(class, "connection reset by peer"));
    }
}

#[test]
fn errors_by_share_of_requests() {
    let mut r = run_with(|_| healthy());
    // 8 clients: 1950 completions; 150 resets = 7.1 % of requests.
    with_errors(&mut r.steps[3], ErrorClass::Reset, 150);
    with_errors(&mut r.steps[3], ErrorClass::Http5xx, 10);
    let v = only(&r, VerdictKind::Errors);
    assert_eq!((v.confidence, v.concurrency), (Confidence::High, 8));
    assert!(v.headline.contains("mostly reset (connection reset by peer)"), "{}", v.headline);
    assert!((ev(&v, "failed") - 100.0 * 160.0 / 2110.0).abs() < 1e-9);
    assert_eq!(ev(&v, "reset"), 15.0);
    // 2 % is notable but medium; 0.5 % is not a verdict.
    let mut r = run_with(|_| healthy());
    with_errors(&mut r.steps[3], ErrorClass::Http5xx, 40);
    assert_eq!(only(&r, VerdictKind::Errors).confidence, Confidence::Medium);
    let mut r = run_with(|_| healthy());
    with_errors(&mut r.steps[3], ErrorClass::Http5xx, 10);
    assert!(diagnose(&r).verdicts.is_empty());
}

#[test]
fn client_bound_comes_first_and_lowers_the_server_verdicts() {
    let mut r = run_with(locked);
    for s in &mut r.steps[1..] {
        s.client_cpu_s = 19.0; // 95 % of 2 cores over 10 s
    }
    with_errors(&mut r.steps[3], ErrorClass::Reset, 150);
    let d = diagnose(&r);
    assert_eq!(kinds(&d.verdicts), vec![VerdictKind::ClientBound, VerdictKind::Errors, VerdictKind::LockContention]);
    assert_eq!(d.verdicts[0].confidence, Confidence::High);
    assert_eq!(ev(&d.verdicts[0], "client CPU"), 95.0);
    assert_eq!(d.verdicts[1].confidence, Confidence::High, "errors are counted, not inferred: not lowered");
    assert_eq!(d.verdicts[2].confidence, Confidence::Medium);
    assert!(d.verdicts[2].headline.contains("client was saturated"));
}

#[test]
fn a_busy_polling_client_is_judged_by_its_work_not_by_its_polls() {
    // 95 % of its 2 cores over 10 s, 15 s of it polls that found nothing:
    // 20 % did work. Not the client's result, and the lock keeps its level.
    let mut r = run_with(locked);
    for s in &mut r.steps[1..] {
        s.client_cpu_s = 19.0;
        s.client_poll_idle_s = Some(15.0);
    }
    let d = diagnose(&r);
    assert_eq!(kinds(&d.verdicts), vec![VerdictKind::LockContention], "{:?}", d.verdicts);
    assert_eq!(d.verdicts[0].confidence, Confidence::High);
    // Its work at 95 % is saturated, as a sleeping client's would be.
    for s in &mut r.steps[1..] {
        s.client_poll_idle_s = Some(0.5);
    }
    let d = diagnose(&r);
    assert_eq!(d.verdicts[0].kind, VerdictKind::ClientBound);
    assert_eq!(ev(&d.verdicts[0], "client CPU doing work (its idle busy polls left out)"), 92.5);
    // A machine whose busy CPU is mostly the client's idle polls is not busy:
    // no CPU verdict, neither the server's nor "busy elsewhere".
    let mut r = run_with(|n| {
        let mut t = busy(70.0, 28.0)(n);
        t.server_cpu_pct = Some(1.0);
        t
    });
    for s in &mut r.steps {
        s.client_cpu_s = 35.0; // 3.5 cores of the 3.9 busy, 3.4 of them polling
        s.client_cores = 4;
        s.client_poll_idle_s = Some(34.0);
    }
    let d = diagnose(&r);
    assert!(!kinds(&d.verdicts).iter().any(|k| k.name().starts_with("cpu-")), "{:?}", kinds(&d.verdicts));
}

#[test]
fn client_bound_at_a_later_step_still_comes_first() {
    // Lock contention judged at 4 clients, the client saturated only at 8:
    // listed by step, the client's verdict would come second.
    let mut r = run_with(|n| if n == 4 { locked(n) } else { healthy() });
    r.steps[3].client_cpu_s = 19.0;
    let d = diagnose(&r);
    assert_eq!(kinds(&d.verdicts), vec![VerdictKind::ClientBound, VerdictKind::LockContention]);
    assert_eq!((d.verdicts[0].concurrency, d.verdicts[1].concurrency), (8, 4));
}

#[test]
fn only_steps_at_and_beyond_the_knee_and_not_partial_ones() {
    // The lock signature only below the knee (at 1 client): no verdict.
    let mut r = run_with(|_| healthy());
    r.steps[0].telemetry = Some(locked(1));
    assert!(diagnose(&r).verdicts.is_empty());
    // A partial step past the knee is not judged.
    let mut r = run_with(|_| healthy());
    r.steps.push(step(16, 190.0, Some(locked(16))));
    r.steps[4].partial = true;
    assert!(diagnose(&r).verdicts.is_empty());
    r.steps[4].partial = false;
    assert_eq!(kinds(&diagnose(&r).verdicts), vec![VerdictKind::LockContention]);
}

#[test]
fn without_telemetry_only_client_and_errors_can_be_judged() {
    let mut r = run(vec![step(1, 100.0, None), step(2, 190.0, None), step(4, 200.0, None), step(8, 195.0, None)]);
    assert!(diagnose(&r).verdicts.is_empty());
    r.steps[3].client_cpu_s = 20.0;
    assert_eq!(kinds(&diagnose(&r).verdicts), vec![VerdictKind::ClientBound]);
}

#[test]
fn the_best_step_is_the_most_certain_then_the_highest() {
    let r = run_with(|n| if n == 4 { locked(n) } else { healthy() });
    assert_eq!(only(&r, VerdictKind::LockContention).concurrency, 4);
}

#[test]
fn kinds_serialize_as_documented() {
    let all = [
        (VerdictKind::CpuBoundUser, "cpu-bound-user"),
        (VerdictKind::CpuBoundKernel, "cpu-bound-kernel"),
        (VerdictKind::CpuBoundMixed, "cpu-bound-mixed"),
        (VerdictKind::CpuBusyElsewhere, "cpu-busy-elsewhere"),
        (VerdictKind::LockContention, "lock-contention"),
        (VerdictKind::DbContention, "db-contention"),
        (VerdictKind::DiskBound, "disk-bound"),
        (VerdictKind::NetworkBound, "network-bound"),
        (VerdictKind::SingleHotThread, "single-hot-thread"),
        (VerdictKind::SoftirqOneCpu, "softirq-one-cpu"),
        (VerdictKind::AcceptOverflow, "accept-overflow"),
        (VerdictKind::PortExhaustion, "port-exhaustion"),
        (VerdictKind::ClientBound, "client-bound"),
        (VerdictKind::Errors, "errors"),
    ];
    for (k, name) in all {
        assert_eq!(serde_json::to_value(k).unwrap(), serde_json::Value::String(name.into()));
        assert_eq!(k.name(), name);
        assert_eq!(serde_json::from_value::<VerdictKind>(name.into()).unwrap(), k);
    }
    assert_eq!(serde_json::to_value(Confidence::Medium).unwrap(), "medium");
}

#[test]
fn json_has_the_documented_shape() {
    let j = to_json(&diagnose(&run_with(locked)));
    let c = &j["curve"];
    assert_eq!((c["peak"].as_f64(), c["peak_concurrency"].as_u64(), c["knee_concurrency"].as_u64()), (Some(200.0), Some(4), Some(2)));
    assert!(c["collapse"].is_null());
    for k in ["lambda", "sigma", "kappa", "r2", "n_opt"] {
        assert!(j["usl"].get(k).is_some(), "usl.{k} in {}", j["usl"]);
    }
    let v = &j["verdicts"][0];
    assert_eq!(v["kind"], "lock-contention");
    assert_eq!(v["confidence"], "high");
    assert_eq!(v["concurrency"], 8);
    assert_eq!(v["evidence"][0]["name"], "CPU busy");
    assert_eq!(v["evidence"][0]["unit"], "%");
    assert!(v["next"].as_str().unwrap().contains("perf lock"));
    // Too few steps: no fit, and why.
    let j = to_json(&diagnose(&run(vec![step(1, 100.0, None)])));
    assert!(j["usl"].is_null());
    assert!(j["usl_error"].as_str().unwrap().contains("at least 4 steps"));
}

#[test]
fn an_unusable_usl_fit_is_not_in_the_json() {
    // Published Tiger: the least-squares optimum is σ 2.16, R² 0.50.
    // (Its text is pinned in scalelab_report::diagnosis's tests.)
    let tiger = [(1, 192.0), (2, 274.0), (5, 113.0), (10, 62.0), (20, 50.0), (35, 50.0), (50, 47.0)];
    let d = diagnose(&run(tiger.iter().map(|&(n, x)| step(n, x, None)).collect()));
    assert!(d.usl.is_none());
    let j = to_json(&d);
    assert!(j["usl"].is_null(), "{j}");
    assert!(j["usl_error"].as_str().unwrap().contains("σ 2.16 is outside [0, 1]"), "{j}");
}

#[test]
fn a_lagging_client_is_client_bound_even_below_90_pct_cpu() {
    // client_cpu_s 4.0 over 10 s on 2 cores = 20 %: not saturated by CPU.
    let r = run_with(|n| {
        let _ = n;
        healthy()
    });
    let mut r = r;
    for s in r.steps.iter_mut().skip(1) {
        s.client_lag_ms = Some(120.0);
    }
    let v = only(&r, VerdictKind::ClientBound);
    assert!(v.headline.contains("FELL BEHIND"), "{}", v.headline);
    assert_eq!(ev(&v, "client event-loop lag"), 120.0);
    assert_eq!(diagnose(&r).verdicts[0].kind, VerdictKind::ClientBound, "client-bound comes first");
}

#[test]
fn a_starved_client_is_client_bound_only_when_the_server_is_not_queued_too() {
    let mut r = run_with(|_| healthy());
    for s in r.steps.iter_mut().skip(1) {
        s.client_runq_wait_pct = Some(45.0);
        s.telemetry.as_mut().unwrap().server_cpu_pct = Some(60.0); // 15 % of 4 cores
    }
    let v = only(&r, VerdictKind::ClientBound);
    assert!(v.headline.contains("STARVED"), "{}", v.headline);
    assert_eq!(ev(&v, "client run-queue wait"), 45.0);
    // Both client and server waiting for CPUs: a CPU-bound machine, not a starved client.
    for s in r.steps.iter_mut().skip(1) {
        let t = s.telemetry.as_mut().unwrap();
        let mut ts = t.thread_states_pct.unwrap_or_default();
        ts.runnable = 40.0;
        t.thread_states_pct = Some(ts);
    }
    assert!(!kinds(&diagnose(&r).verdicts).contains(&VerdictKind::ClientBound));
    // A server filling most cores: the client queues because the machine is busy.
    for s in r.steps.iter_mut().skip(1) {
        let t = s.telemetry.as_mut().unwrap();
        t.thread_states_pct = Some(ThreadStatesPct { runnable: 5.0, ..t.thread_states_pct.unwrap() });
        t.server_cpu_pct = Some(350.0);
    }
    assert!(!kinds(&diagnose(&r).verdicts).contains(&VerdictKind::ClientBound));
}

fn with_db(mut t: StepTelemetry, db: scalelab_core::DbTelemetry) -> StepTelemetry {
    t.cpu_busy_pct = Some(35.0);
    t.db = Some(db);
    t
}

fn mysql_db(row_lock_waits: f64) -> scalelab_core::DbTelemetry {
    scalelab_core::DbTelemetry {
        engine: "mysql".into(),
        samples: 10,
        questions_per_s: Some(900.0),
        row_lock_waits_per_s: Some(row_lock_waits),
        row_lock_time_ms_per_s: Some(row_lock_waits * 3.0),
        table_locks_waited_per_s: Some(0.0),
        threads_running_avg: Some(4.0),
        ..Default::default()
    }
}

fn pg_db(lock_pct: f64) -> scalelab_core::DbTelemetry {
    let w = |wait: &str, pct: f64| scalelab_core::DbWait { wait: wait.into(), pct };
    scalelab_core::DbTelemetry {
        engine: "postgres".into(),
        samples: 10,
        xact_commit_per_s: Some(800.0),
        activity_polls: Some(100),
        mean_active_backends: Some(6.0),
        waits: vec![w("Lock:transactionid", lock_pct), w("CPU", 100.0 - lock_pct)],
        wait_types: vec![w("Lock", lock_pct), w("CPU", 100.0 - lock_pct)],
        ..Default::default()
    }
}

#[test]
fn db_contention_row_locks_rising_is_high() {
    let r = run(vec![
        step(1, 100.0, Some(with_db(healthy(), mysql_db(0.0)))),
        step(2, 190.0, Some(with_db(healthy(), mysql_db(40.0)))),
        step(4, 200.0, Some(with_db(healthy(), mysql_db(150.0)))),
        step(8, 195.0, Some(with_db(healthy(), mysql_db(400.0)))),
    ]);
    let v = only(&r, VerdictKind::DbContention);
    assert_eq!((v.confidence, v.concurrency), (Confidence::High, 8));
    assert_eq!(ev(&v, "InnoDB row-lock waits"), 400.0);
    assert_eq!(ev(&v, "InnoDB row-lock wait time"), 1200.0);
    assert_eq!(ev(&v, "InnoDB row-lock waits at the first step"), 0.0);
    assert!(v.headline.contains("row-lock waits: 400/s"), "{}", v.headline);
    assert!(v.next.contains("data_lock_waits"));
    assert!(v.missing.is_empty(), "{:?}", v.missing);
}

#[test]
fn db_contention_row_locks_with_short_waits_is_lowered_and_says_so() {
    // 369 waits/s but 87 ms/s of waiting across 8 clients: 1 % of their time
    // (measured on MariaDB 10.11 hot-row): the rows are contended, cheaply.
    let short = |n: f64, ms: f64| scalelab_core::DbTelemetry { row_lock_time_ms_per_s: Some(ms), ..mysql_db(n) };
    let r =
        run(vec![step(1, 100.0, Some(with_db(healthy(), short(0.0, 0.0)))), step(8, 190.0, Some(with_db(healthy(), short(369.0, 87.0))))]);
    let v = only(&r, VerdictKind::DbContention);
    assert_eq!(v.confidence, Confidence::Medium);
    assert!((ev(&v, "InnoDB row-lock wait share of the clients' time") - 1.0875).abs() < 1e-9);
    assert!(v.headline.contains("the waits are short (1.1% of the clients' time)"), "{}", v.headline);
    // Without the wait time the cost is unknown: said, and lowered.
    let r = run(vec![
        step(1, 100.0, Some(with_db(healthy(), mysql_db(0.0)))),
        step(8, 190.0, Some(with_db(healthy(), scalelab_core::DbTelemetry { row_lock_time_ms_per_s: None, ..mysql_db(369.0) }))),
    ]);
    let v = only(&r, VerdictKind::DbContention);
    assert_eq!(v.confidence, Confidence::Medium);
    assert!(v.missing.iter().any(|m| m.contains("row-lock wait time: not reported")), "{:?}", v.missing);
}

#[test]
fn db_contention_quotes_the_top_perf_schema_wait() {
    let ps = |n: f64| scalelab_core::DbTelemetry {
        perf_schema_top_waits: Some(vec![scalelab_core::PerfSchemaWait {
            event: "wait/io/table/sql/handler".into(),
            waits_per_s: 10.0 * n,
            wait_ms_per_s: Some(2.0 * n),
        }]),
        ..mysql_db(n)
    };
    let r = run(vec![step(1, 100.0, Some(with_db(healthy(), ps(0.0)))), step(8, 195.0, Some(with_db(healthy(), ps(400.0))))]);
    let v = only(&r, VerdictKind::DbContention);
    assert_eq!(ev(&v, "top performance_schema wait wait/io/table/sql/handler"), 800.0);
    // Without performance_schema the verdict is the same, with no such evidence.
    let r = run(vec![step(1, 100.0, Some(with_db(healthy(), mysql_db(0.0)))), step(8, 195.0, Some(with_db(healthy(), mysql_db(400.0))))]);
    let v = only(&r, VerdictKind::DbContention);
    assert!(v.evidence.iter().all(|e| !e.name.contains("performance_schema")), "{:?}", v.evidence);
}

#[test]
fn db_contention_pg_names_the_top_lock_wait() {
    let r = run(vec![
        step(1, 100.0, Some(with_db(healthy(), pg_db(0.0)))),
        step(2, 150.0, Some(with_db(healthy(), pg_db(40.0)))),
        step(4, 150.0, Some(with_db(healthy(), pg_db(64.0)))),
    ]);
    let v = only(&r, VerdictKind::DbContention);
    assert_eq!(v.confidence, Confidence::High);
    assert!(v.headline.contains("Lock:transactionid 64% of active backends"), "{}", v.headline);
    assert_eq!(ev(&v, "backends waiting on Lock + LWLock"), 64.0);
    assert_eq!(ev(&v, "mean active backends"), 6.0);
    assert!(v.next.contains("pg_locks"));
}

#[test]
fn db_contention_pg_names_both_lock_waits_in_a_near_tie_and_only_the_top_otherwise() {
    let w = |wait: &str, pct: f64| scalelab_core::DbWait { wait: wait.into(), pct };
    let hot_row = |tx: f64, wal: f64| {
        let mut d = pg_db(tx + wal);
        // Largest share first, as the probe stores them.
        d.waits = vec![w("Lock:transactionid", tx), w("LWLock:WALWrite", wal), w("IO:WALSync", 10.0)];
        d.waits.sort_by(|a, b| b.pct.total_cmp(&a.pct));
        d.wait_types = vec![w("Lock", tx), w("LWLock", wal), w("IO", 10.0)];
        d
    };
    let verdict = |tx: f64, wal: f64| {
        let r =
            run(vec![step(1, 100.0, Some(with_db(healthy(), pg_db(0.0)))), step(16, 150.0, Some(with_db(healthy(), hot_row(tx, wal))))]);
        only(&r, VerdictKind::DbContention)
    };
    // 36.4 % against 36.9 % (a CI run): both named, the larger first.
    let v = verdict(36.4, 36.9);
    assert!(v.headline.contains("LWLock:WALWrite 37% and Lock:transactionid 36% of active backends"), "{}", v.headline);
    assert_eq!(ev(&v, "top lock wait LWLock:WALWrite"), 36.9);
    assert_eq!(ev(&v, "second lock wait Lock:transactionid"), 36.4);
    // 42 % against 30 % (below 0.8 of the top): the top alone.
    let v = verdict(42.0, 30.0);
    assert!(v.headline.contains(": Lock:transactionid 42% of active backends (Lock + LWLock 72%)"), "{}", v.headline);
    assert!(v.evidence.iter().all(|e| !e.name.starts_with("second lock wait")), "{:?}", v.evidence);
}

#[test]
fn db_contention_without_first_step_db_figures_is_lowered_and_says_why() {
    let mut first = healthy();
    first.unavailable.insert("db".into(), "cannot connect to mysql://bench@127.0.0.1:3306/bench: refused".into());
    let r = run(vec![
        step(1, 100.0, Some(first)),
        step(2, 190.0, Some(with_db(healthy(), mysql_db(50.0)))),
        step(4, 200.0, Some(with_db(healthy(), mysql_db(300.0)))),
    ]);
    let v = only(&r, VerdictKind::DbContention);
    assert_eq!(v.confidence, Confidence::Medium);
    assert_eq!(v.missing.len(), 1);
    assert!(v.missing[0].contains("database figures at 1 clients: cannot connect"), "{:?}", v.missing);
}

#[test]
fn no_db_contention_without_db_figures_or_below_thresholds() {
    // No database probe: nothing is claimed.
    assert!(!kinds(&diagnose(&run_with(|_| healthy())).verdicts).contains(&VerdictKind::DbContention));
    // Few row-lock waits, mostly-CPU backends: no verdict.
    let r = run(vec![
        step(1, 100.0, Some(with_db(healthy(), mysql_db(0.0)))),
        step(2, 190.0, Some(with_db(healthy(), mysql_db(2.0)))),
        step(4, 200.0, Some(with_db(healthy(), pg_db(10.0)))),
    ]);
    assert!(!kinds(&diagnose(&r).verdicts).contains(&VerdictKind::DbContention));
}

#[test]
fn db_contention_myisam_table_locks_and_innodb_os_waits() {
    let table = |n: f64| scalelab_core::DbTelemetry { table_locks_waited_per_s: Some(n), row_lock_waits_per_s: Some(0.0), ..mysql_db(0.0) };
    let r = run(vec![step(1, 100.0, Some(with_db(healthy(), table(1.0)))), step(4, 110.0, Some(with_db(healthy(), table(250.0))))]);
    let v = only(&r, VerdictKind::DbContention);
    assert!(v.headline.contains("table-lock requests wait: 250/s"), "{}", v.headline);
    assert_eq!(ev(&v, "table locks waited"), 250.0);
    let os = |n: f64| scalelab_core::DbTelemetry { os_waits_per_s: Some(n), rounds_per_os_wait: Some(30.0), ..mysql_db(0.0) };
    let r = run(vec![step(1, 100.0, Some(with_db(healthy(), os(100.0)))), step(4, 110.0, Some(with_db(healthy(), os(4000.0))))]);
    let v = only(&r, VerdictKind::DbContention);
    assert!(v.headline.contains("4000 OS waits/s"), "{}", v.headline);
    assert_eq!(ev(&v, "InnoDB spin rounds per OS wait"), 30.0);
}

#[test]
fn a_rate_sweep_is_judged_at_its_offered_rates_and_late_sends_make_it_client_bound() {
    // Open loop at 1,000, 2,000 and 4,000 req/s on 40 connections each; the
    // server keeps up to 2,000 and completes 2,100 of the 4,000 offered.
    let open = |rate: f64, x: f64, late: u64| {
        let mut s = step(40, x, Some(healthy()));
        s.offered_rate_per_s = Some(rate);
        s.dropped = Some(0);
        s.late_sends = Some(late);
        for _ in 0..100 {
            s.latency.record(std::time::Duration::from_micros(500));
        }
        s
    };
    let d = crate::diagnose(&run(vec![open(1000.0, 1000.0, 0), open(2000.0, 1995.0, 0), open(4000.0, 2100.0, 0)]));
    assert!(d.rate_sweep);
    let c = d.curve.as_ref().unwrap();
    assert_eq!((c.knee_concurrency, c.peak_concurrency), (2000, 4000), "the knee on the rate axis");
    assert!(d.usl.is_none() && d.usl_error.as_deref().unwrap().contains("rate sweep"));
    assert!(d.verdicts.iter().all(|v| v.kind != VerdictKind::ClientBound), "{:?}", d.verdicts);
    let json = super::to_json(&d);
    assert_eq!((json["curve"]["knee_rate_per_s"].as_u64(), json["curve"]["peak_rate_per_s"].as_u64()), (Some(2000), Some(4000)));

    // 10 % of the requests at 4,000 req/s sent late with connections free: the client's doing.
    let d = crate::diagnose(&run(vec![open(1000.0, 1000.0, 0), open(2000.0, 1995.0, 0), open(4000.0, 2100.0, 2100)]));
    let v = d.verdicts.iter().find(|v| v.kind == VerdictKind::ClientBound).expect("client-bound on late sends");
    assert_eq!(v.concurrency, 4000);
    assert!(v.headline.contains("SCHEDULE"), "{}", v.headline);
    assert!(v.evidence.iter().any(|e| e.name == "late sends" && e.value == 10.0), "{:?}", v.evidence);
}

/// `counts` completions per client at the 8-client step, every client
/// with a request out at the window's end (the starved ones since before it).
fn spread_at_8(mut r: Run, counts: &[u64]) -> Run {
    let s = r.steps.iter_mut().find(|s| s.concurrency == 8).unwrap();
    let out: Vec<f64> = counts.iter().map(|n| if *n == 0 { 11_000.0 } else { 2.0 }).collect();
    s.clients = Some(scalelab_core::ClientSpread::of(counts, &out));
    r
}

#[test]
fn starved_clients_when_some_clients_served_nothing_and_not_when_all_were_served() {
    let r = spread_at_8(run_with(|_| healthy()), &[487, 488, 487, 488, 0, 0, 0, 0]);
    let v = only(&r, VerdictKind::StarvedClients);
    assert_eq!((v.confidence, v.concurrency), (Confidence::High, 8));
    assert!(
        v.headline
            .starts_with("4 of 8 clients completed nothing in the window; requests were still waiting at its end, the oldest for 11.0 s"),
        "{}",
        v.headline
    );
    assert!(v.headline.ends_with("come from the 4 others only"), "{}", v.headline);
    assert_eq!(ev(&v, "clients served nothing"), 4.0);
    assert!((ev(&v, "Jain's fairness") - 0.5).abs() < 1e-3, "half the clients served: {}", ev(&v, "Jain's fairness"));
    // Every client served (unevenly): nothing to say.
    let r = spread_at_8(run_with(|_| healthy()), &[300, 200, 250, 250, 240, 260, 230, 220]);
    assert!(!kinds(&diagnose(&r).verdicts).contains(&VerdictKind::StarvedClients), "{:?}", diagnose(&r).verdicts);
    // No client served at all is a server that stopped, not a starved half.
    let r = spread_at_8(run_with(|_| healthy()), &[0; 8]);
    assert!(!kinds(&diagnose(&r).verdicts).contains(&VerdictKind::StarvedClients));
    // The starved clients had nothing out (idle, not waiting): lowered.
    let mut r = spread_at_8(run_with(|_| healthy()), &[487, 488, 487, 488, 0, 0, 0, 0]);
    r.steps[3].clients.as_mut().unwrap().outstanding_at_end = 2;
    assert_eq!(only(&r, VerdictKind::StarvedClients).confidence, Confidence::Medium);
    // The load generator waited for a CPU half the window (a neighbour on
    // its cores): the starved clients may be its own, lowered and said.
    let mut r = spread_at_8(run_with(|_| healthy()), &[487, 488, 487, 488, 0, 0, 0, 0]);
    r.steps[3].client_runq_wait_pct = Some(53.0);
    let v = only(&r, VerdictKind::StarvedClients);
    assert!(v.confidence < Confidence::High, "{:?}", v.confidence);
    assert!(v.headline.contains("the load generator itself waited for a CPU"), "{}", v.headline);
    assert_eq!(ev(&v, "load generator waiting for a CPU"), 53.0);
}

/// A pool of `threads` less one workers at 8 clients doing 195 req/s with
/// `in_service` requests in service (Little's law: the mean latency is
/// `in_service` / 195 s), `queue` connections in its listen queue.
fn pool_run(threads: u64, in_service: f64, queue: f64, served: &[u64]) -> Run {
    let mut r = run_with(|_| {
        let mut t = healthy();
        t.server_threads = Some(threads);
        t
    });
    for s in &mut r.steps {
        let mean_us = (in_service / s.throughput_per_s() * 1e6).round() as u64;
        s.latency.record_n(std::time::Duration::from_micros(mean_us), s.requests);
    }
    r.steps[3].telemetry.as_mut().unwrap().listen_queue_mean = Some(queue);
    spread_at_8(r, served)
}

const HALF_SERVED: [u64; 8] = [487, 488, 487, 488, 0, 0, 0, 0];

#[test]
fn worker_pool_names_the_workers_it_measured() {
    // Prefork-like: a parent and 4 workers, 4 requests in service, 4
    // clients waiting in the queue and served nothing.
    let v = only(&pool_run(5, 4.0, 4.0, &HALF_SERVED), VerdictKind::WorkerPool);
    assert_eq!((v.confidence, v.concurrency), (Confidence::High, 8));
    assert!(
        v.headline.contains(
            "4 clients served, each holding a worker with its connection (4.0 requests in service) = about 4 workers (of its 5 threads"
        ),
        "{}",
        v.headline
    );
    assert!(v.headline.contains("; 4 connections waiting in its listen queue; 4 of 8 clients served nothing"), "{}", v.headline);
    assert_eq!((ev(&v, "workers (as served)"), ev(&v, "server threads less one (the bound)")), (4.0, 4.0));
    // Apache's worker MPM: one child of 8 threads has 11 threads with the
    // parent, its main thread and its listener. The 8 it served are the
    // workers named, not the 10 the thread count gives.
    let served8 = [240, 250, 245, 244, 250, 246, 241, 244, 0, 0, 0, 0, 0, 0, 0, 0];
    let mut r = pool_run(11, 8.0, 8.0, &served8);
    r.steps[3].concurrency = 16;
    let v = only(&r, VerdictKind::WorkerPool);
    assert!(v.headline.contains("8 clients served") && v.headline.contains("= about 8 workers (of its 11 threads"), "{}", v.headline);
    assert_eq!((ev(&v, "workers (as served)"), ev(&v, "server threads less one (the bound)")), (8.0, 10.0));
    // No client starved, the queue holding the rest: the requests in service name the pool.
    let v = only(&pool_run(5, 3.9, 4.0, &[240; 8]), VerdictKind::WorkerPool);
    assert!(v.headline.contains("pool is the limit: 3.9 requests in service = about 4 workers"), "{}", v.headline);
}

#[test]
fn worker_pool_held_by_idle_keepalive_connections_says_so() {
    // Keep-alive: each of the 4 workers holds its client's connection, 1.2
    // requests in service (the clients think between requests), the
    // workers asleep 80 % of their time.
    let mut r = pool_run(5, 1.2, 4.0, &HALF_SERVED);
    r.plan.options.insert("keepalive".into(), true.into());
    r.steps[3].telemetry.as_mut().unwrap().thread_states_pct =
        Some(ThreadStatesPct { running: 15.0, runnable: 5.0, futex: 0.0, io: 0.0, idle: 80.0, other: 0.0 });
    let v = only(&r, VerdictKind::WorkerPool);
    assert!(
        v.headline.contains("4 clients served, each holding a worker with its connection (1.2 requests in service) = about 4 workers"),
        "{}",
        v.headline
    );
    assert!(v.headline.ends_with("its workers are 80 % asleep, mostly waiting on keep-alive connections: idle clients hold them (KeepAliveTimeout, MaxKeepAliveRequests)"), "{}", v.headline);
    // Without keep-alive a served client holds no worker between requests,
    // and 1.2 requests in service are not a pool of 4.
    r.plan.options.insert("keepalive".into(), false.into());
    let v = only(&r, VerdictKind::WorkerPool);
    assert!(v.headline.contains("4 clients served (1.2 requests in service) = about 4 workers"), "{}", v.headline);
    assert!(!v.headline.contains("keep-alive connections"), "{}", v.headline);
}

#[test]
fn no_worker_pool_on_a_cpu_the_server_fills_or_with_workers_to_spare() {
    // Every client served, 4 requests in service, 4 connections in the
    // queue, and the server itself fills the machine (340 % of 4 cores):
    // CPU-bound, more workers would not serve more.
    let saturate = |r: &mut Run, server_cpu: f64| {
        let t = r.steps[3].telemetry.as_mut().unwrap();
        (t.cpu_busy_pct, t.cpu_user_pct, t.cpu_sys_pct, t.server_cpu_pct) = (Some(97.0), Some(70.0), Some(27.0), Some(server_cpu));
    };
    let mut r = pool_run(5, 4.0, 4.0, &[240; 8]);
    assert_eq!(only(&r, VerdictKind::WorkerPool).confidence, Confidence::High, "the same step with CPU to spare");
    saturate(&mut r, 340.0);
    let d = diagnose(&r);
    assert!(!kinds(&d.verdicts).contains(&VerdictKind::WorkerPool), "{:?}", d.verdicts);
    assert!(kinds(&d.verdicts).contains(&VerdictKind::CpuBoundUser), "{:?}", kinds(&d.verdicts));
    // Saturated by others (the server at 50 % of a core): the pool is
    // still the limit, lowered for the CPU.
    saturate(&mut r, 50.0);
    assert_eq!(only(&r, VerdictKind::WorkerPool).confidence, Confidence::Medium);
    // Clients served nothing: the pool decides who is served even on a
    // CPU the server fills, so the verdict stands, lowered.
    let mut r = pool_run(5, 4.0, 4.0, &HALF_SERVED);
    saturate(&mut r, 340.0);
    assert_eq!(only(&r, VerdictKind::WorkerPool).confidence, Confidence::Medium);
    // 16 workers for 8 clients, all served, an empty queue: no pool verdict.
    let d = diagnose(&pool_run(17, 7.6, 0.0, &[240; 8]));
    assert!(
        !kinds(&d.verdicts).contains(&VerdictKind::WorkerPool) && !kinds(&d.verdicts).contains(&VerdictKind::StarvedClients),
        "{:?}",
        d.verdicts
    );
    // Clients starved, but 4 served by a server of 64 threads: not a pool of
    // its threads (a connection limit, say): the starved clients alone.
    let d = diagnose(&pool_run(64, 4.0, 4.0, &HALF_SERVED));
    assert!(!kinds(&d.verdicts).contains(&VerdictKind::WorkerPool), "{:?}", d.verdicts);
    assert!(kinds(&d.verdicts).contains(&VerdictKind::StarvedClients));
}

/// A connection per request at every step, the server making `per_conn`
/// context switches per new connection, its threads 85 % asleep.
fn herd_run(per_conn: f64) -> Run {
    let mut r = run(vec![step(1, 100.0, None), step(2, 190.0, None), step(4, 200.0, None), step(8, 195.0, None)]);
    for s in &mut r.steps {
        let mut t = healthy();
        t.server_cs_per_s = Some(per_conn * s.throughput_per_s());
        t.thread_states_pct = Some(ThreadStatesPct { running: 10.0, runnable: 5.0, futex: 5.0, io: 0.0, idle: 80.0, other: 0.0 });
        s.telemetry = Some(t);
        s.connect_latency.record_n(std::time::Duration::from_micros(80), s.requests);
    }
    r
}

#[test]
fn thundering_herd_from_five_context_switches_per_connection() {
    let v = only(&herd_run(17.0), VerdictKind::ThunderingHerd);
    assert_eq!((v.confidence, v.concurrency), (Confidence::High, 8));
    assert!(v.headline.starts_with("a thundering herd: the server made 17.0 context switches per new connection"), "{}", v.headline);
    assert_eq!((ev(&v, "new connections"), ev(&v, "server thread-time asleep")), (195.0, 85.0));
    assert!(v.evidence.iter().all(|e| !e.name.starts_with("specimen wake-ups")), "no specimen counters: none shown");
    // At the threshold it fires; just below, silent.
    assert_eq!(ev(&only(&herd_run(5.0), VerdictKind::ThunderingHerd), "server context switches"), 5.0);
    assert!(!kinds(&diagnose(&herd_run(4.9)).verdicts).contains(&VerdictKind::ThunderingHerd));
    // Keep-alive: 8 connections for the window's 1,950 requests. The same
    // switches per second are not a herd on accept.
    let mut r = herd_run(17.0);
    for s in &mut r.steps {
        s.connect_latency = Default::default();
        s.connect_latency.record_n(std::time::Duration::from_micros(80), u64::from(s.concurrency));
    }
    assert!(!kinds(&diagnose(&r).verdicts).contains(&VerdictKind::ThunderingHerd), "{:?}", diagnose(&r).verdicts);
}

#[test]
fn the_specimens_own_wakeups_are_shown_with_the_herd() {
    let mut r = herd_run(17.0);
    r.steps[3].telemetry.as_mut().unwrap().specimen = Some(scalelab_core::SpecimenTelemetry {
        requests_per_s: 195.0,
        lock_waits_per_s: 0.0,
        lock_wait_share_pct: Some(0.0),
        spin_rounds_per_request: Some(0.0),
        fsyncs_per_s: 0.0,
        wakeups_per_connection: Some(1.875),
        empty_wakeup_share_pct: Some(47.25),
    });
    let v = only(&r, VerdictKind::ThunderingHerd);
    assert!(
        v.headline.contains("; the specimen counted 1.9 wake-ups per connection reaching its workers, 47 % of them with nothing to accept"),
        "{}",
        v.headline
    );
    assert_eq!((ev(&v, "specimen wake-ups (returns from epoll_wait)"), ev(&v, "of them found nothing to accept")), (1.875, 47.25));
}
