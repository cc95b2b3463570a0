//! One quick run of the whole suite; every figure must be there, positive and
//! plausible, and the figures must stand in the orders physics demands.

use scalelab_micro::catalog::CATALOG;
use scalelab_micro::{run_suite, MicroRun, SuiteOptions};
use std::sync::OnceLock;

/// The suite runs once per test binary; the tests below share it (and do
/// not run benchmarks concurrently, which would disturb the timings).
fn run() -> &'static MicroRun {
    static RUN: OnceLock<MicroRun> = OnceLock::new();
    RUN.get_or_init(|| {
        let opts = SuiteOptions { quick: true, ..SuiteOptions::default() };
        let mut seen = 0;
        let run = run_suite(&opts, &mut |_| seen += 1).expect("suite runs");
        assert_eq!(seen, run.results.len(), "progress saw every result");
        run
    })
}

fn min(id: &str) -> f64 {
    run().get(id).and_then(|r| r.min).unwrap_or_else(|| panic!("{id} has no min"))
}

/// The median of a figure that is a difference of two measurements, or
/// `None` when it says the difference was below what the method resolves
/// (any other reason for a missing figure fails).
fn med_or_unresolved(id: &str) -> Option<f64> {
    let r = run().get(id).unwrap_or_else(|| panic!("{id} missing"));
    if r.median.is_none() {
        assert!(r.unavailable.as_deref().is_some_and(|w| w.contains("below what this method resolves")), "{id}: {:?}", r.unavailable);
    }
    r.median
}

fn med(id: &str) -> f64 {
    let r = run().get(id).unwrap_or_else(|| panic!("{id} missing"));
    match r.median {
        Some(m) => m,
        None => panic!("{id} unavailable: {:?}", r.unavailable),
    }
}

#[test]
fn every_catalog_figure_is_reported_once() {
    let run = run();
    assert!(!run.stopped);
    for f in CATALOG {
        let n = run.results.iter().filter(|r| r.id == f.id).count();
        assert_eq!(n, 1, "{} reported {n} times", f.id);
    }
    // Quick mode leaves out the memory curve.
    assert_eq!(run.results.len(), CATALOG.len());
    assert!(run.wall_s > 0.0);
}

#[test]
fn every_figure_is_positive_or_says_why_not() {
    for r in &run().results {
        match r.median {
            Some(m) => {
                assert!(m.is_finite() && m > 0.0, "{}: {m}", r.id);
                let (lo, hi) = (r.min.unwrap(), r.max.unwrap());
                assert!(lo <= m && m <= hi, "{}: {lo} {m} {hi}", r.id);
                assert_eq!(r.samples, 3, "{}", r.id);
                assert!(r.unavailable.is_none());
            }
            None => assert!(r.unavailable.as_deref().is_some_and(|w| !w.is_empty()), "{} has neither a figure nor a reason", r.id),
        }
    }
}

#[test]
fn process_costs_are_ordered_and_plausible() {
    let null_call = med("null_call");
    assert!(null_call > 0.0 && null_call < 20.0, "null call {null_call} us");
    assert!(med("fork_exit") > null_call * 10.0);
    // Orderings compare the fastest repetitions: a median of 3 quick
    // repetitions can land on one that waited for a CPU on a busy machine.
    // Beside a CPU hog even all 3 of fork+exit's can (3,961 us against
    // fork+exec's 2,683): then the process group alone, 11 repetitions,
    // judges the order.
    if min("fork_exec") <= min("fork_exit") {
        let opts = SuiteOptions { only: Some(vec![scalelab_micro::Group::Procs]), repeats: Some(11), ..SuiteOptions::default() };
        let again = run_suite(&opts, &mut |_| {}).expect("the process group runs");
        let m = |id: &str| again.get(id).and_then(|r| r.min).unwrap_or_else(|| panic!("{id} has no min"));
        assert!(
            m("fork_exec") > m("fork_exit"),
            "fork_exec {} vs fork_exit {} (quick: {} vs {})",
            m("fork_exec"),
            m("fork_exit"),
            min("fork_exec"),
            min("fork_exit")
        );
    }
    if std::path::Path::new("/bin/sh").exists() {
        assert!(min("fork_sh") > min("fork_exit"));
    }
    for id in ["null_io", "stat", "open_close", "select_file_100", "select_tcp_100", "sig_install", "sig_catch"] {
        let v = med(id);
        assert!(v > 0.0 && v < 1000.0, "{id} = {v} us");
    }
    // prot_fault is a difference (a faulting access minus a plain one): on a
    // busy machine the noise can exceed it, and then it must say so rather
    // than print a figure.
    if let Some(v) = med_or_unresolved("prot_fault") {
        assert!(v > 0.0 && v < 1000.0, "prot_fault = {v} us");
    }
    assert!(med("open_close") > null_call);
}

#[test]
fn threads_and_locks_are_plausible() {
    assert!(med("thread_create") > med("mutex_uncontended") / 1000.0);
    let m = med("mutex_uncontended");
    assert!(m > 1.0 && m < 10_000.0, "mutex {m} ns");
    for id in ["mutex_handoff", "futex_wake"] {
        let v = med(id);
        assert!(v > 0.01 && v < 10_000.0, "{id} = {v} us");
    }
    for t in [2, 4, 8] {
        for k in ["spin", "mutex"] {
            assert!(med(&format!("lock_{k}_{t}t")) > 0.0);
            assert!(med(&format!("lock_{k}_{t}t_cpu")) > 0.0);
        }
    }
}

#[test]
fn context_switches_and_local_latencies_are_plausible() {
    // Context switch figures are differences (hop minus overhead). With no
    // data touched the overhead is two syscalls and every figure must be
    // there. With 16/64 KB touched the overhead is mostly the data sum, which
    // an unoptimized (debug) build makes ~50 µs of noisy work: there the
    // difference may drop below resolution, so only optimized builds must
    // produce most of them.
    // On a busy machine (other builds, a CPU hog) the noise can exceed the
    // difference; then the figure must say so instead of printing one.
    for p in [2, 4, 8, 16] {
        match med_or_unresolved(&format!("ctx_{p}p_0k")) {
            Some(v) => assert!(v > 0.0 && v < 1000.0, "ctx_{p}p_0k = {v} us"),
            None => eprintln!("note: ctx_{p}p_0k below resolution on this busy machine"),
        }
    }
    let with_data = run().results.iter().filter(|r| r.id.starts_with("ctx_") && !r.id.ends_with("_0k"));
    let present: Vec<f64> = with_data.filter_map(|r| r.median).collect();
    if !cfg!(debug_assertions) {
        assert!(present.len() >= 6, "only {} of 8 ctx figures with data", present.len());
    }
    assert!(present.iter().all(|&v| v > 0.0 && v < 10_000.0), "{present:?}");
    for base in ["pipe_latency", "unix_latency", "udp_latency", "tcp_latency", "tcp_connect"] {
        for id in [base.to_string(), format!("{base}_same_cpu")] {
            let v = med(&id);
            assert!(v > 0.1 && v < 100_000.0, "{id} = {v} us");
        }
    }
    // A TCP connect is more work than a round trip on the same connection.
    // As with the process costs, the fastest repetitions judge the order: one
    // of 3 quick round trips beside a CPU hog can wait out a whole time slice
    // (CI once saw the median round trip above twice the median connect).
    // When even the quick fastest disagree, the latency group alone, 11
    // repetitions, judges.
    if min("tcp_connect_same_cpu") <= min("tcp_latency_same_cpu") * 0.5 {
        let opts = SuiteOptions { only: Some(vec![scalelab_micro::Group::Latency]), repeats: Some(11), ..SuiteOptions::default() };
        let again = run_suite(&opts, &mut |_| {}).expect("the latency group runs");
        let m = |id: &str| again.get(id).and_then(|r| r.min).unwrap_or_else(|| panic!("{id} has no min"));
        assert!(
            m("tcp_connect_same_cpu") > m("tcp_latency_same_cpu") * 0.5,
            "tcp_connect_same_cpu {} vs tcp_latency_same_cpu {} (quick: {} vs {})",
            m("tcp_connect_same_cpu"),
            m("tcp_latency_same_cpu"),
            min("tcp_connect_same_cpu"),
            min("tcp_latency_same_cpu")
        );
    }
}

#[test]
fn bandwidth_memory_and_fpu_are_plausible() {
    // Plausible, not fast: beside a CPU hog and the test suite a debug
    // build's pipe moved 28.6 MB/s (quiet: hundreds to thousands).
    for id in ["bw_pipe", "bw_unix", "bw_tcp", "bw_file_reread", "bw_mmap_reread", "bw_mem_rd", "bw_mem_wr", "bw_mem_cp"] {
        let v = med(id);
        assert!(v > 5.0 && v < 1_000_000.0, "{id} = {v} MB/s");
    }
    // The fastest repetitions, as the process costs' orders: beside a CPU
    // hog and the suite a median of 3 can land on preempted chases (L1 at
    // 62 ns, and the main-memory vs L1 order, each failed once there and
    // passed when rerun).
    // Beside a parallel cargo build even the fastest of 3 L1 chases once
    // took 50.6 ns (every repetition preempted): when the quick ones are
    // out of range or out of order, the memory group alone, 11
    // repetitions, judges.
    let quick = (min("mem_lat_l1"), min("mem_lat_l2"), min("mem_lat_llc"), min("mem_lat_main"));
    let plausible = |(l1, l2, llc, main): (f64, f64, f64, f64)| l1 > 0.2 && l1 < 50.0 && main > l1 * 3.0 && main > l2 && llc > l1;
    let (l1, l2, llc, main) = if plausible(quick) {
        quick
    } else {
        let opts = SuiteOptions { only: Some(vec![scalelab_micro::Group::Memory]), repeats: Some(11), ..SuiteOptions::default() };
        let again = run_suite(&opts, &mut |_| {}).expect("the memory group runs");
        let m = |id: &str| again.get(id).and_then(|r| r.min).unwrap_or_else(|| panic!("{id} has no min"));
        (m("mem_lat_l1"), m("mem_lat_l2"), m("mem_lat_llc"), m("mem_lat_main"))
    };
    assert!(l1 > 0.2 && l1 < 50.0, "L1 {l1} ns (quick: {quick:?})");
    assert!(main > l1 * 3.0, "main {main} ns vs L1 {l1} ns (quick: {quick:?})");
    assert!(main > l2 && llc > l1, "{l1} {l2} {llc} {main} (quick: {quick:?})");
    let avg = med("flops_avg");
    assert!(avg > 10.0 && avg < 1_000_000.0, "{avg} MFLOPS");
    let kernels: Vec<f64> = (1..=8).map(|k| med(&format!("flops_{k}"))).collect();
    let lo = kernels.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = kernels.iter().copied().fold(0.0, f64::max);
    // The average of the kernels lies between the slowest and the fastest
    // (medians of different repeats, hence the margin).
    assert!(lo * 0.8 <= avg && avg <= hi * 1.25, "{lo} {avg} {hi}");
}
