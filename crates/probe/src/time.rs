//! Timestamps of samples and the kernel's tick unit.

use std::time::{SystemTime, UNIX_EPOCH};

pub use scalelab_core::sample::Timestamp;

/// Now, on both clocks (the type lives in `core`, which reads no clock).
pub fn now() -> Timestamp {
    Timestamp { monotonic_ns: monotonic_ns(), unix_ms: unix_ms() }
}

/// `CLOCK_MONOTONIC` in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own; CLOCK_MONOTONIC
    // is always supported on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time used by the calling thread (user + system), nanoseconds: what a
/// sampler costs, whatever else the machine is doing.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into `ts`, a live local we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn unix_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// `USER_HZ`, the unit of CPU times in `/proc/stat` and `/proc/PID/stat`
/// (100 on every mainstream Linux build, asked anyway).
pub fn user_hz() -> u32 {
    // SAFETY: sysconf takes no pointers and only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as u32
    } else {
        100
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_advances() {
        let a = now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = now();
        let s = b.seconds_since(&a).unwrap();
        assert!((0.002..1.0).contains(&s), "{s}");
        assert_eq!(a.seconds_since(&b), None);
        assert!(b.unix_ms > 1_600_000_000_000);
        assert!(user_hz() >= 100);
    }
}
