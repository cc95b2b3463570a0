//! Spinlock vs sleeping mutex under contention at 2, 4 and 8 threads:
//! throughput and the CPU each acquisition costs. With more threads than
//! CPUs a spinner burns its time slice while the holder is descheduled;
//! this is how spinning locks make databases collapse.

use super::sync::{OnDrop, PMutex};
use crate::measure::{secs, Ctx, Out, Skip, Stopped};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub(crate) fn run(ctx: &Ctx, out: &mut Out) -> Result<(), Stopped> {
    for threads in [2usize, 4, 8] {
        for spin in [true, false] {
            let kind = if spin { "spin" } else { "mutex" };
            let (ops, cpu) = match contention(ctx, threads, spin) {
                Ok((a, b)) => (Ok(a), Ok(b)),
                Err(Skip::Stopped) => return Err(Stopped),
                Err(Skip::Unavailable(w)) => (Err(Skip::Unavailable(w.clone())), Err(Skip::Unavailable(w))),
            };
            out.put(ctx, &format!("lock_{kind}_{threads}t"), ops)?;
            out.put(ctx, &format!("lock_{kind}_{threads}t_cpu"), cpu)?;
        }
    }
    Ok(())
}

/// State shared by the workers of one window.
struct Shared {
    spin: AtomicBool,
    mutex: PMutex,
    /// Two cache lines the critical section updates.
    data: [AtomicU64; 16],
    ready: AtomicUsize,
    go: AtomicBool,
    done: AtomicBool,
}

/// Test-and-test-and-set spinlock with a pause hint and no yielding: the
/// classic spinlock. Gives up (false) once the window is over.
fn spin_lock(l: &AtomicBool, done: &AtomicBool) -> bool {
    loop {
        if !l.swap(true, Ordering::Acquire) {
            return true;
        }
        while l.load(Ordering::Relaxed) {
            if done.load(Ordering::Relaxed) {
                return false;
            }
            std::hint::spin_loop();
        }
    }
}

/// CPU time of the calling thread in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One worker: lock, update the two shared lines, unlock, then about as much
/// private work outside the lock; returns (acquisitions, CPU ns).
fn worker(sh: &Shared, spin: bool) -> (u64, u64) {
    sh.ready.fetch_add(1, Ordering::AcqRel);
    while !sh.go.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
    let cpu0 = thread_cpu_ns();
    let mut ops = 0u64;
    let mut seed = ops.wrapping_add(0x9e37_79b9_7f4a_7c15);
    while !sh.done.load(Ordering::Relaxed) {
        if spin {
            if !spin_lock(&sh.spin, &sh.done) {
                break;
            }
        } else {
            sh.mutex.lock();
        }
        for w in &sh.data {
            w.store(w.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
        }
        if spin {
            sh.spin.store(false, Ordering::Release);
        } else {
            sh.mutex.unlock();
        }
        ops += 1;
        for _ in 0..64 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        }
        black_box(seed);
    }
    (ops, thread_cpu_ns() - cpu0)
}

/// Samples of (Mops/s, CPU ns per acquisition), one per fixed window.
fn contention(ctx: &Ctx, threads: usize, spin: bool) -> Result<(Vec<f64>, Vec<f64>), Skip> {
    let base = Duration::from_millis(if ctx.quick { 10 } else { 20 });
    let mut mops = Vec::new();
    let mut cpu = Vec::new();
    // One warm-up window, then the measured ones. A window in which no
    // worker got a CPU (a busy neighbour) is measured again, twice as long,
    // up to 8 times the window, before the figure is called unavailable.
    let mut i = 0;
    let mut window = base;
    while i <= ctx.repeats {
        ctx.check()?;
        let sh = Shared {
            spin: AtomicBool::new(false),
            mutex: PMutex::new(),
            data: Default::default(),
            ready: AtomicUsize::new(0),
            go: AtomicBool::new(false),
            done: AtomicBool::new(false),
        };
        let (ops, cpu_ns, el) = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads).map(|_| s.spawn(|| worker(&sh, spin))).collect();
            // Whatever happens below, the workers end and are joined.
            let _end = OnDrop(|| {
                sh.go.store(true, Ordering::Release);
                sh.done.store(true, Ordering::Release);
            });
            while sh.ready.load(Ordering::Acquire) < threads {
                std::thread::yield_now();
            }
            let t = Instant::now();
            sh.go.store(true, Ordering::Release);
            std::thread::sleep(window);
            sh.done.store(true, Ordering::Release);
            let el = secs(t);
            let (mut ops, mut cpu_ns) = (0u64, 0u64);
            for h in handles {
                let (o, c) = h.join().unwrap_or((0, 0));
                ops += o;
                cpu_ns += c;
            }
            (ops, cpu_ns, el)
        });
        if ops == 0 {
            if window < base * 8 {
                window *= 2;
                continue;
            }
            return Err(Skip::Unavailable(format!("no lock acquisition completed in a {} ms window", window.as_millis())));
        }
        window = base;
        if i > 0 {
            mops.push(ops as f64 / el / 1e6);
            cpu.push(cpu_ns as f64 / ops as f64);
        }
        i += 1;
    }
    Ok((mops, cpu))
}
