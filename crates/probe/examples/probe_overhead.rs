//! Measures the probes' own CPU (run through `bench/probe_overhead`).
//!
//! Starts a target process with N threads (default 200) parked the way a
//! server's threads are: most blocked on a lock or condition variable, some
//! idle in poll(), some waking every 10 ms to do a little work, one busy 20 %
//! of the time. Then, in this process, measures the CPU time of the sampling
//! thread (`CLOCK_THREAD_CPUTIME_ID`, user + system) for:
//!   1. system + process probes at 1 Hz (target <= 0.5 % of one core);
//!   2. thread-state sampling of the target at 50 Hz, with one interval
//!      report per second (target <= 3 % of one core).
//!
//! Usage: probe_overhead [--seconds S] [--threads N] [--all-active] [--thread-budget SHARE]
//! or `probe_overhead tree CHILDREN THREADS`: only start a parked process tree
//! (for `bench/probe_overhead` to watch with the real `scalelab watch`).
//! `--thread-budget` sets the thread sampler's CPU cap (default 0.025 of a
//! core; 1 = uncapped, to see what reading every thread at 50 Hz costs).
//! `--all-active` makes every target thread wake every 10 ms (worst case:
//! every thread has to be re-read at every tick).
//! The target exits when this process exits (its stdin closes) or after 10 min.

use scalelab_probe::time::thread_cpu_ns;
use scalelab_probe::{ProcessSampler, Roots, SystemSampler, ThreadSampler};
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

type Gate = (Mutex<()>, Condvar);

/// Parks this thread for good on a condition variable nobody signals (a
/// server thread waiting for a lock or for work).
fn park_on_condvar(gate: &Gate) -> ! {
    let (m, cv) = gate;
    let mut g = m.lock().unwrap();
    loop {
        g = cv.wait(g).unwrap();
    }
}

/// Parks this thread for good in poll() on a pipe nobody writes (an idle
/// connection), waking once a second.
fn park_in_poll() -> ! {
    let mut fds = [0; 2];
    // SAFETY: pipe writes two descriptors into `fds`, an array of two we own;
    // poll reads and writes one pollfd, `p`, a live local; no other memory.
    unsafe {
        libc::pipe(fds.as_mut_ptr());
        let mut p = libc::pollfd { fd: fds[0], events: libc::POLLIN, revents: 0 };
        loop {
            libc::poll(&mut p, 1, 1000);
        }
    }
}

/// The target: `threads` threads parked like a server's, until stdin closes.
fn target(threads: usize, all_active: bool) {
    let stop = Arc::new(AtomicBool::new(false));
    let gate = Arc::new((Mutex::new(()), Condvar::new()));
    let (lockers, pollers, wakers) =
        if all_active { (0, 0, threads - 1) } else { (threads * 3 / 4, threads / 10, threads - threads * 3 / 4 - threads / 10 - 1) };
    for _ in 0..lockers {
        let gate = gate.clone();
        thread::spawn(move || park_on_condvar(&gate));
    }
    for _ in 0..pollers {
        thread::spawn(|| park_in_poll());
    }
    for _ in 0..wakers {
        thread::spawn(|| {
            let mut x = 0u64;
            loop {
                thread::sleep(Duration::from_millis(10));
                for i in 0..20_000u64 {
                    x = x.wrapping_mul(31).wrapping_add(i);
                }
                std::hint::black_box(x);
            }
        });
    }
    let busy_stop = stop.clone();
    thread::spawn(move || {
        while !busy_stop.load(Ordering::Relaxed) {
            let t = Instant::now();
            while t.elapsed() < Duration::from_millis(2) {
                std::hint::spin_loop();
            }
            thread::sleep(Duration::from_millis(8));
        }
    });
    println!("ready {}", threads);
    // Exit when the parent goes away, or after 10 minutes whatever happens.
    thread::spawn(|| {
        let _ = std::io::stdin().read(&mut [0u8; 1]);
        std::process::exit(0);
    });
    thread::sleep(Duration::from_secs(600));
}

/// A server-like process tree for `bench/probe_overhead` to watch: this
/// process plus `children` child processes (`member` mode) of `threads`
/// threads each, all parked (lock waiters and poll() idlers, like idle
/// database backends). Prints `ready PID` and exits when stdin closes; the
/// children exit when their stdin (a pipe from this process) closes.
fn tree(children: usize, threads: usize) {
    let exe = std::env::current_exe().expect("own path");
    let kids: Vec<_> = (0..children)
        .map(|_| Command::new(&exe).args(["member", &threads.to_string()]).stdin(Stdio::piped()).spawn().expect("start a tree member"))
        .collect();
    println!("ready {}", std::process::id());
    let _ = std::io::stdin().read(&mut [0u8; 1]);
    drop(kids);
}

/// One member of [`tree`]: `threads` threads in all, parked on a condition
/// variable or in poll(); exits when stdin closes.
fn member(threads: usize) {
    let gate = Arc::new((Mutex::new(()), Condvar::new()));
    for i in 1..threads {
        let gate = gate.clone();
        thread::spawn(move || if i % 2 == 0 { park_on_condvar(&gate) } else { park_in_poll() });
    }
    let _ = std::io::stdin().read(&mut [0u8; 1]);
}

struct Phase {
    cpu_ns: u64,
    wall_ns: u64,
    calls: u64,
    max_call_ns: u64,
}

impl Phase {
    fn pct(&self) -> f64 {
        self.cpu_ns as f64 * 100.0 / self.wall_ns as f64
    }
}

/// Calls `f` every `period` for `secs`; the CPU of this thread is measured
/// over the whole phase, sleeping included (which costs nothing).
fn run(period: Duration, secs: f64, mut f: impl FnMut(u64)) -> Phase {
    let start = Instant::now();
    let cpu0 = thread_cpu_ns();
    let mut calls = 0;
    let mut max_call_ns = 0;
    let mut next = start;
    while start.elapsed().as_secs_f64() < secs {
        let c0 = thread_cpu_ns();
        f(calls);
        max_call_ns = max_call_ns.max(thread_cpu_ns() - c0);
        calls += 1;
        next += period;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            thread::sleep(wait);
        }
    }
    Phase { cpu_ns: thread_cpu_ns() - cpu0, wall_ns: start.elapsed().as_nanos() as u64, calls, max_call_ns }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: f64| -> f64 {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
    };
    let num = |i: usize, default: usize| args.get(i).and_then(|n| n.parse().ok()).unwrap_or(default);
    match args.get(1).map(String::as_str) {
        Some("tree") => return tree(num(2, 20), num(3, 4)),
        Some("member") => return member(num(2, 4)),
        _ => {}
    }
    if args.get(1).map(String::as_str) == Some("target") {
        let all_active = args.get(3).map(String::as_str) == Some("all-active");
        return target(args.get(2).and_then(|n| n.parse().ok()).unwrap_or(200), all_active);
    }
    let secs = arg("--seconds", 10.0);
    let threads = arg("--threads", 200.0) as usize;
    let all_active = args.iter().any(|a| a == "--all-active");
    let budget = arg("--thread-budget", 0.025);

    let exe = std::env::current_exe().expect("own path");
    let mut child = Command::new(exe)
        .args(["target", &threads.to_string(), if all_active { "all-active" } else { "mixed" }])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start target");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).expect("target ready");
    let pid = child.id();
    thread::sleep(Duration::from_millis(300));

    let roots = Roots::default();
    let mut system = SystemSampler::new(&roots);
    let mut process = ProcessSampler::new(&roots, pid);
    let (mut sys_ns, mut proc_ns, mut skipped) = (0, 0, 0);
    let a = run(Duration::from_secs(1), secs, |_| {
        let t0 = thread_cpu_ns();
        let s = system.sample();
        let t1 = thread_cpu_ns();
        std::hint::black_box(process.sample());
        sys_ns += t1 - t0;
        proc_ns += thread_cpu_ns() - t1;
        skipped += s.socket_scan_skipped as u32;
    });

    let mut sampler = ThreadSampler::new(&roots, pid).with_cpu_budget(budget);
    let mut last = None;
    let b = run(Duration::from_millis(20), secs, |i| {
        sampler.tick();
        if i % 50 == 49 {
            last = Some(sampler.take_interval());
        }
    });

    let _ = child.kill();
    let _ = child.wait();

    let kind = if all_active { "all waking every 10 ms" } else { "mostly parked" };
    println!("probe overhead: target pid {pid} with {threads} threads + main ({kind}); {secs} s per phase;");
    println!("CPU of the sampling thread (user + system), as % of one core:");
    let verdict = |pct: f64, max: f64| if pct <= max { "ok" } else { "OVER TARGET" };
    println!(
        "  system + process probes @ 1 Hz : {:6.3} %  (target <= 0.5 %)  {:>4} calls, mean {:7.1} us, max {:7.1} us  {}",
        a.pct(),
        a.calls,
        a.cpu_ns as f64 / a.calls as f64 / 1e3,
        a.max_call_ns as f64 / 1e3,
        verdict(a.pct(), 0.5)
    );
    println!(
        "      of which system {:.1} us and process {:.1} us per sample; socket scan skipped in {} of {} samples",
        sys_ns as f64 / a.calls as f64 / 1e3,
        proc_ns as f64 / a.calls as f64 / 1e3,
        skipped,
        a.calls
    );
    println!(
        "  thread states @ 50 Hz          : {:6.3} %  (target <= 3 %)    {:>4} ticks, mean {:7.1} us, max {:7.1} us  {}",
        b.pct(),
        b.calls,
        b.cpu_ns as f64 / b.calls as f64 / 1e3,
        b.max_call_ns as f64 / 1e3,
        verdict(b.pct(), 3.0)
    );
    println!("  thread sampler: {} threads tracked, {} descriptors kept open", sampler.threads(), sampler.fds_kept());
    if let Some(iv) = &last {
        let per_thread_hz = iv.thread_reads as f64 / iv.threads.len().max(1) as f64 / iv.wall_s();
        println!(
            "  last second: {:.1} reads per thread per second (50 = every tick), largest stride {} (1 = within budget at full rate)",
            per_thread_hz, iv.max_stride
        );
    }
    if let Some(iv) = last {
        if let Some(s) = iv.shares() {
            println!(
                "  last second of the target: running {:.1} %, runnable {:.1} %, futex {:.1} %, idle {:.1} %, io {:.1} %, other {:.1} %",
                s.running_pct, s.runnable_pct, s.futex_pct, s.idle_pct, s.io_pct, s.other_pct
            );
        }
        if let Some(t) = iv.hottest(1).first() {
            println!("  hottest thread: tid {} at {:.1} % of a core", t.tid, iv.cpu_pct_of_core(t).unwrap_or(0.0));
        }
    }
}
