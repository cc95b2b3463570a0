//! The per-request CPU work and the locks that modes wrap around it.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// CPU time consumed by the calling thread so far.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Rounds of [`spin`] per microsecond of this machine's CPU, measured once.
static ROUNDS_PER_US: OnceLock<f64> = OnceLock::new();

/// `rounds` steps of a xorshift generator: pure user-space integer work, no
/// memory traffic and no system call, so a profile of the specimen shows its
/// work as user CPU in this one function.
#[inline(never)]
fn spin(rounds: u64) -> u64 {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    black_box(x)
}

/// Measures how many [`spin`] rounds this machine does per microsecond of
/// thread CPU time, once per process (later calls return the first figure).
///
/// The work used to read the thread's CPU clock every couple of microseconds;
/// on a VM without a usable vDSO clock each read is a system call, and 56 % of
/// the specimen's samples were in `clock_gettime` (issue 40): the modes then
/// measured the kernel, not the work. Now the clock is read only here: the
/// block is grown to about 2 ms, and the fastest of ten runs is kept (a run
/// preempted or slowed by a neighbour on the same core only ever looks
/// slower), the runs spread over about 50 ms: a neighbour that shares the
/// core's pipeline (a hyperthread sibling on the host) slows every run of a
/// 10 ms burst alike, and a figure taken then made each request do less
/// than its `--work-us` on a calmer machine (a 500 µs request served at
/// more than 2,000/s by one client beside `stress-ng --cpu 2`). The figure
/// is the machine's fastest, so a request does at least its `--work-us`.
pub fn calibrate() -> f64 {
    *ROUNDS_PER_US.get_or_init(|| {
        let mut rounds = 1u64 << 12;
        loop {
            let t = time_of(rounds);
            if t >= Duration::from_millis(2) || rounds >= 1 << 40 {
                break;
            }
            rounds *= 2;
        }
        let fastest = (0..10)
            .map(|i| {
                if i > 0 {
                    std::thread::sleep(Duration::from_millis(3));
                }
                time_of(rounds)
            })
            .min()
            .unwrap_or_default();
        rounds as f64 / (fastest.as_secs_f64() * 1e6).max(1e-3)
    })
}

/// Sets this process's rounds per microsecond to a figure measured elsewhere,
/// unless [`calibrate`] already ran; returns whether it was taken.
///
/// Two specimens compared with `--versus` must do the same work per request:
/// each measuring its own figure put up to ±30 % between "identical" servers
/// on a busy machine (issue 34), so scalelab measures once and hands the
/// figure to every specimen it starts.
pub fn use_rounds_per_us(rounds_per_us: f64) -> bool {
    rounds_per_us.is_finite() && rounds_per_us > 0.0 && ROUNDS_PER_US.set(rounds_per_us).is_ok()
}

/// Thread CPU time that `rounds` rounds take.
fn time_of(rounds: u64) -> Duration {
    let t0 = thread_cpu();
    spin(rounds);
    thread_cpu().saturating_sub(t0)
}

/// Burns about `us` microseconds of CPU as a calibrated count of integer
/// rounds (see [`calibrate`]). The work is a count, not a time, so a request
/// does the same work at 1 client and at 50, whether or not it is preempted.
pub fn burn(us: u64) -> u64 {
    if us == 0 {
        return 0;
    }
    spin((us as f64 * calibrate()).round() as u64)
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
    fn burn_uses_about_the_cpu_time_asked_and_no_clock() {
        calibrate();
        // The fastest of a few: a busy machine only slows a run down.
        let used = (0..5)
            .map(|_| {
                let t0 = thread_cpu();
                burn(2000);
                thread_cpu() - t0
            })
            .min()
            .unwrap();
        assert!(used >= Duration::from_micros(1400), "{used:?}");
        assert!(used < Duration::from_millis(20), "{used:?}");
        assert_eq!(calibrate(), calibrate(), "measured once");
    }

    /// This thread's user and system CPU time so far.
    fn thread_user_sys() -> (Duration, Duration) {
        // SAFETY: rusage is plain old data, valid when zeroed.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: getrusage fills the struct we own.
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        (tv(u.ru_utime), tv(u.ru_stime))
    }

    #[test]
    fn the_work_is_user_space_cpu() {
        calibrate();
        let (u0, s0) = thread_user_sys();
        for _ in 0..100 {
            burn(1000);
        }
        let (u1, s1) = thread_user_sys();
        let (user, sys) = (u1 - u0, s1 - s0);
        // Reading the CPU clock every couple of microseconds put 56 % of the
        // work in the kernel on a VM without a vDSO clock; a tick of system
        // time (timer interrupts, page faults) may still land in the window.
        assert!(sys.as_secs_f64() <= 0.1 * (user + sys).as_secs_f64() + 0.004, "user {user:?} sys {sys:?}");
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
