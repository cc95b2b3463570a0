//! Threads and locks: pthread create+join, uncontended mutex, mutex hand-off
//! between two threads, futex wake latency. Contention (spin vs mutex at
//! 2/4/8 threads) lives in `locks.rs`. Threads are scoped, so they are
//! always joined before a function returns, whatever happens.

use super::sync::{OnDrop, PMutex};
use crate::measure::{scale, secs, Ctx, Out, Skip, Stopped, Values};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Instant;

pub(crate) fn run(ctx: &Ctx, out: &mut Out) -> Result<(), Stopped> {
    out.put(ctx, "thread_create", thread_create(ctx))?;
    out.put(ctx, "mutex_uncontended", mutex_uncontended(ctx))?;
    out.put(ctx, "mutex_handoff", mutex_handoff(ctx))?;
    out.put(ctx, "futex_wake", futex_wake(ctx))
}

struct PCond(UnsafeCell<libc::pthread_cond_t>);

// SAFETY: a pthread condition variable is made to be shared between threads.
unsafe impl Sync for PCond {}

impl PCond {
    fn new() -> Self {
        PCond(UnsafeCell::new(libc::PTHREAD_COND_INITIALIZER))
    }
    fn wait(&self, m: &PMutex) {
        // SAFETY: both objects are initialized and live; the caller holds `m`, as pthread_cond_wait
        // requires.
        unsafe { libc::pthread_cond_wait(self.0.get(), m.as_ptr()) };
    }
    fn signal(&self) {
        // SAFETY: an initialized condition variable that lives in this struct.
        unsafe { libc::pthread_cond_signal(self.0.get()) };
    }
}

impl Drop for PCond {
    fn drop(&mut self) {
        // SAFETY: dropped: no thread waits on the condition variable any more.
        unsafe { libc::pthread_cond_destroy(self.0.get()) };
    }
}

extern "C" fn nothing(_: *mut libc::c_void) -> *mut libc::c_void {
    std::ptr::null_mut()
}

/// pthread_create of a thread that returns at once, then pthread_join.
fn thread_create(ctx: &Ctx) -> Values {
    let v = ctx.per_iter(|n| {
        let t = Instant::now();
        for _ in 0..n {
            let mut th: libc::pthread_t = 0;
            // SAFETY: `nothing` is an extern "C" fn that ignores its argument; `th` is a local the
            // call fills.
            let r = unsafe { libc::pthread_create(&mut th, std::ptr::null(), nothing, std::ptr::null_mut()) };
            if r != 0 {
                return Err(Skip::Unavailable(format!("pthread_create failed: {r}")));
            }
            // SAFETY: `th` is the thread just created and not joined or detached yet.
            unsafe { libc::pthread_join(th, std::ptr::null_mut()) };
        }
        Ok(secs(t))
    })?;
    Ok(scale(v, 1e6))
}

/// pthread_mutex_lock + unlock with no other thread around.
fn mutex_uncontended(ctx: &Ctx) -> Values {
    let m = PMutex::new();
    let v = ctx.per_iter(|n| {
        let t = Instant::now();
        for _ in 0..n {
            m.lock();
            m.unlock();
        }
        Ok(secs(t))
    })?;
    Ok(scale(v, 1e9))
}

/// Two threads take turns owning a mutex, each waiting for its turn on a
/// condition variable: one hand-off is unlock + wake-up + relock by the
/// other thread. Reported per hand-off (half a round trip).
fn mutex_handoff(ctx: &Ctx) -> Values {
    let m = PMutex::new();
    let c = PCond::new();
    let turn = AtomicU32::new(0);
    let quit = AtomicBool::new(false);
    let v = std::thread::scope(|s| {
        s.spawn(|| {
            m.lock();
            loop {
                while turn.load(Ordering::Relaxed) != 1 && !quit.load(Ordering::Relaxed) {
                    c.wait(&m);
                }
                if quit.load(Ordering::Relaxed) {
                    break;
                }
                turn.store(0, Ordering::Relaxed);
                c.signal();
            }
            m.unlock();
        });
        // Ends the partner on every exit path, so the scope can join it.
        let _end = OnDrop(|| {
            m.lock();
            quit.store(true, Ordering::Relaxed);
            c.signal();
            m.unlock();
        });
        ctx.per_iter(|n| {
            m.lock();
            let t = Instant::now();
            for _ in 0..n {
                turn.store(1, Ordering::Relaxed);
                c.signal();
                while turn.load(Ordering::Relaxed) != 0 {
                    c.wait(&m);
                }
            }
            let el = secs(t);
            m.unlock();
            Ok(el)
        })
    })?;
    Ok(scale(v, 1e6 / 2.0))
}

fn futex(word: &AtomicU32, op: libc::c_int, val: u32) {
    // The timeout only bounds a wait if a wake-up were ever lost.
    let ts = libc::timespec { tv_sec: 0, tv_nsec: 100_000_000 };
    // SAFETY: `word` is a live AtomicU32 (a valid futex word) and `ts` a live local timespec.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), op, val, &ts as *const libc::timespec) };
}

/// Two threads ping-pong on one futex word: store, FUTEX_WAKE, and the other
/// side returns from FUTEX_WAIT. Reported per one-way wake (half a round trip).
fn futex_wake(ctx: &Ctx) -> Values {
    const WAIT: libc::c_int = libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG;
    const WAKE: libc::c_int = libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG;
    let word = AtomicU32::new(0);
    let quit = AtomicBool::new(false);
    let v = std::thread::scope(|s| {
        s.spawn(|| loop {
            while word.load(Ordering::Acquire) != 1 {
                if quit.load(Ordering::Relaxed) {
                    return;
                }
                futex(&word, WAIT, 0);
            }
            word.store(0, Ordering::Release);
            futex(&word, WAKE, 1);
        });
        let _end = OnDrop(|| {
            quit.store(true, Ordering::Relaxed);
            word.store(2, Ordering::Release);
            futex(&word, WAKE, 1);
        });
        ctx.per_iter(|n| {
            let t = Instant::now();
            for _ in 0..n {
                word.store(1, Ordering::Release);
                futex(&word, WAKE, 1);
                while word.load(Ordering::Acquire) != 0 {
                    futex(&word, WAIT, 1);
                }
            }
            Ok(secs(t))
        })
    })?;
    Ok(scale(v, 1e6 / 2.0))
}
