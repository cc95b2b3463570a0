//! Rates and percentages derived from two samples and the measured interval.
//!
//! Samples hold raw counters; these functions are where they become "per
//! second" and "percent". A counter that went backwards (reboot, wrap, a
//! restarted process, a reset statistic) gives `None`, never a negative or a
//! made-up rate; so does anything missing from either sample.
//!
//! - [`system`]: CPU split, context switches, PSI, softirqs, disks, network, TCP, power.
//! - [`process`]: the server process's CPU, context switches and I/O.

pub mod process;
pub mod system;

pub use process::{process_rates, ProcessRates};
pub use system::{cpu_pct, system_rates, CpuPct, SystemRates};

/// `cur - prev`, or `None` if the counter went backwards.
pub fn counter_delta(prev: u64, cur: u64) -> Option<u64> {
    cur.checked_sub(prev)
}

/// Per-second rate of a counter over `secs`; `None` if it went backwards or
/// the interval is not positive.
pub fn per_second(prev: u64, cur: u64, secs: f64) -> Option<f64> {
    (secs > 0.0).then_some(())?;
    counter_delta(prev, cur).map(|d| d as f64 / secs)
}

/// [`per_second`] of two optional readings.
pub fn opt_per_second(prev: Option<u64>, cur: Option<u64>, secs: f64) -> Option<f64> {
    per_second(prev?, cur?, secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backwards_is_none() {
        assert_eq!(per_second(10, 30, 2.0), Some(10.0));
        assert_eq!(per_second(30, 10, 2.0), None);
        assert_eq!(per_second(10, 30, 0.0), None);
        assert_eq!(opt_per_second(None, Some(3), 1.0), None);
        assert_eq!(counter_delta(5, 5), Some(0));
    }
}
