//! Sub-millisecond wake-ups for the open loop's dispatcher. tokio's timers
//! tick in whole milliseconds and round a deadline up, so a request due at
//! 10.2 ms left at 11-12 ms: ~1 ms of the client's own lateness counted as
//! latency from the intended time (p50 1.1 ms against pgbench -R's 0.2 ms
//! on the same PostgreSQL at 2,000/s, bench/open_loop_vs_pgbench). A
//! timerfd fires at the microsecond and wakes the same event loop.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Instant;
use tokio::io::unix::AsyncFd;

/// A one-shot timer on a timerfd, awaited through the thread's event loop;
/// tokio's own timer where a timerfd cannot be had.
pub(super) struct PreciseTimer {
    fd: Option<AsyncFd<OwnedFd>>,
}

impl PreciseTimer {
    /// A timer for the current thread's runtime.
    pub(super) fn new() -> PreciseTimer {
        // SAFETY: timerfd_create takes no pointers; a negative return is an error, checked.
        let raw = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        let fd = (raw >= 0).then(|| {
            // SAFETY: `raw` is a new descriptor this process owns and nothing else holds.
            unsafe { OwnedFd::from_raw_fd(raw) }
        });
        let fd = fd.and_then(|fd| {
            // SAFETY: the OwnedFd keeps its descriptor open and the same for
            // as long as the AsyncFd owns it (it is never replaced or closed early).
            unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }.ok()
        });
        PreciseTimer { fd }
    }

    /// Returns at `at` (or at once when it has passed).
    pub(super) async fn sleep_until(&self, at: Instant) {
        let wait = at.saturating_duration_since(Instant::now());
        if wait.is_zero() {
            return;
        }
        let Some(fd) = &self.fd else { return tokio::time::sleep_until(at.into()).await };
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec { tv_sec: wait.as_secs() as libc::time_t, tv_nsec: libc::c_long::from(wait.subsec_nanos() as i32) },
        };
        // Re-arming resets the expirations not yet read, so a timer left
        // armed by a dispatcher that stopped waiting cannot wake this one early.
        // SAFETY: `spec` is a valid itimerspec; the old value is not asked for (null).
        if unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) } != 0 {
            return tokio::time::sleep_until(at.into()).await;
        }
        loop {
            let Ok(mut ready) = fd.readable().await else { return tokio::time::sleep_until(at.into()).await };
            let mut ticks = 0u64;
            let read = ready.try_io(|fd| {
                // SAFETY: reads 8 bytes into `ticks`, a valid u64 on this stack frame.
                let n = unsafe { libc::read(fd.as_raw_fd(), (&mut ticks as *mut u64).cast(), 8) };
                if n == 8 {
                    Ok(())
                } else {
                    Err(io::Error::last_os_error())
                }
            });
            match read {
                Ok(Ok(())) => {
                    // Read: the next wait starts from "not ready" (else its
                    // first read would find nothing and cost a syscall).
                    ready.clear_ready();
                    return;
                }
                // Readiness left over from an earlier expiration: wait again.
                Err(_would_block) => continue,
                Ok(Err(_)) => return tokio::time::sleep_until(at.into()).await,
            }
        }
    }
}
