//! Setting `stop` mid-suite returns promptly and leaves no child process
//! (running or zombie) and no extra thread behind.

use scalelab_micro::{run_suite, Group, SuiteOptions};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// PIDs of processes whose parent is this process, from /proc/*/stat.
fn children() -> Vec<i32> {
    let me = std::process::id() as i32;
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the parenthesised command: state, ppid, ...
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let ppid: i32 = rest.split_whitespace().nth(1).unwrap().parse().unwrap();
        if ppid == me {
            out.push(pid);
        }
    }
    out
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

fn opts(stop: &Arc<AtomicBool>) -> SuiteOptions {
    SuiteOptions {
        quick: true,
        only: Some(vec![Group::Procs, Group::Ctx, Group::Latency, Group::Bandwidth]),
        repeats: None,
        stop: stop.clone(),
    }
}

#[test]
fn stop_mid_suite_reaps_every_child_and_thread() {
    assert!(children().is_empty(), "children before: {:?}", children());
    let threads_before = threads();

    // Stop from another thread at several points, landing inside
    // benchmarks that have children alive (process creation, the ring of
    // 16 processes, echo servers, writers).
    for delay_ms in [40u64, 150, 700, 1500] {
        let stop = Arc::new(AtomicBool::new(false));
        let o = opts(&stop);
        let stop_at = Arc::new(std::sync::Mutex::new(None::<Instant>));
        let timer = {
            let (stop, stop_at) = (stop.clone(), stop_at.clone());
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(delay_ms));
                *stop_at.lock().unwrap() = Some(Instant::now());
                stop.store(true, Ordering::SeqCst);
            })
        };
        let run = run_suite(&o, &mut |_| {}).unwrap();
        let returned = Instant::now();
        timer.join().unwrap();
        assert!(run.stopped, "suite finished before {delay_ms} ms");
        let lag = returned - stop_at.lock().unwrap().expect("stop was set");
        assert!(lag < Duration::from_secs(2), "returned {lag:?} after stop");
        assert!(run.warnings.iter().any(|w| w.contains("stopped")));
        let left = children();
        assert!(left.is_empty(), "after stop at {delay_ms} ms: children {left:?}");
        assert_eq!(threads(), threads_before, "threads left after {delay_ms} ms");
    }

    // Stop from the progress callback: deterministic points between figures.
    for after in [1usize, 13, 30] {
        let stop = Arc::new(AtomicBool::new(false));
        let o = opts(&stop);
        let mut n = 0;
        let run = run_suite(&o, &mut |_| {
            n += 1;
            if n == after {
                stop.store(true, Ordering::SeqCst);
            }
        })
        .unwrap();
        assert!(run.stopped);
        assert_eq!(run.results.len(), after, "no figure after the stop");
        assert!(children().is_empty());
    }
}
