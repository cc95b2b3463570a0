//! The per-request CPU work and the locks that modes wrap around it.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// CPU time consumed by the calling thread so far.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Burns `us` microseconds of this thread's CPU time. Time the thread spends
/// preempted or waiting is not counted, so the work per request is the same
/// at 1 client and at 50.
pub fn burn(us: u64) -> u64 {
    if us == 0 {
        return 0;
    }
    let target = Duration::from_micros(us);
    let start = thread_cpu();
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    loop {
        // ~1-2 µs of integer work between clock reads keeps the clock's own
        // cost (a syscall for the thread CPU clock) a small share.
        for _ in 0..256 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        black_box(x);
        if thread_cpu() - start >= target {
            return x;
        }
    }
}

/// A spin-then-yield lock, the way some databases guard hot structures:
/// waiters spin (burning CPU) before yielding the CPU.
pub struct SpinLock {
    held: AtomicBool,
    /// Rounds of spinning spent waiting, for `/__stats`.
    pub spin_rounds: AtomicU64,
    /// Times a waiter gave up spinning and yielded.
    pub yields: AtomicU64,
}

impl Default for SpinLock {
    fn default() -> Self {
        Self::new()
    }
}

impl SpinLock {
    /// An unlocked lock.
    pub const fn new() -> Self {
        SpinLock { held: AtomicBool::new(false), spin_rounds: AtomicU64::new(0), yields: AtomicU64::new(0) }
    }

    /// Runs `f` while holding the lock; returns true if it had to wait.
    /// Never inlined: `--profile` names it as the spinning function.
    #[inline(never)]
    pub fn with<R>(&self, f: impl FnOnce() -> R) -> (R, bool) {
        let mut waited = false;
        let mut rounds = 0u64;
        while self.held.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            waited = true;
            for _ in 0..1000 {
                std::hint::spin_loop();
                rounds += 1;
                if !self.held.load(Ordering::Relaxed) {
                    break;
                }
            }
            if self.held.load(Ordering::Relaxed) {
                self.yields.fetch_add(1, Ordering::Relaxed);
                std::thread::yield_now();
            }
        }
        if rounds > 0 {
            self.spin_rounds.fetch_add(rounds, Ordering::Relaxed);
        }
        let r = f();
        self.held.store(false, Ordering::Release);
        (r, waited)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burn_uses_cpu_time() {
        let t0 = thread_cpu();
        burn(2000);
        let used = thread_cpu() - t0;
        assert!(used >= Duration::from_micros(2000), "{used:?}");
        assert!(used < Duration::from_millis(50), "{used:?}");
    }

    #[test]
    fn spin_lock_excludes() {
        let lock = std::sync::Arc::new(SpinLock::new());
        let counter = std::sync::Arc::new(AtomicU64::new(0));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let (l, c) = (lock.clone(), counter.clone());
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        l.with(|| {
                            let v = c.load(Ordering::Relaxed);
                            c.store(v + 1, Ordering::Relaxed);
                        });
                    }
                })
            })
            .collect();
        hs.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(counter.load(Ordering::Relaxed), 4000);
    }
}
