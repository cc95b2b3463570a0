//! Server-process rates from two [`ProcessSample`]s.

use super::{counter_delta, opt_per_second};
use scalelab_core::sample::{ProcessIo, ProcessSample};
use serde::{Deserialize, Serialize};

/// The server process over one interval. CPU is percent of one core
/// (400 = four cores busy), the way `top` shows a process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessRates {
    pub interval_s: f64,
    pub cpu_user_pct: Option<f64>,
    pub cpu_system_pct: Option<f64>,
    pub voluntary_cs_per_s: Option<f64>,
    pub nonvoluntary_cs_per_s: Option<f64>,
    pub read_bytes_per_s: Option<f64>,
    pub write_bytes_per_s: Option<f64>,
    /// Bytes through read-like syscalls (sockets included).
    pub rchar_per_s: Option<f64>,
    pub wchar_per_s: Option<f64>,
}

impl ProcessRates {
    /// User plus system CPU, percent of one core.
    pub fn cpu_pct(&self) -> Option<f64> {
        Some(self.cpu_user_pct? + self.cpu_system_pct?)
    }

    /// Context switches (both kinds) per request, given requests per second:
    /// the "something serializes" figure.
    pub fn cs_per_request(&self, requests_per_s: f64) -> Option<f64> {
        let cs = self.voluntary_cs_per_s? + self.nonvoluntary_cs_per_s?;
        (requests_per_s > 0.0).then(|| cs / requests_per_s)
    }
}

/// Rates between two samples of the same process, `a` before `b`; all
/// `None` if the process differs, died, or no time passed.
pub fn process_rates(a: &ProcessSample, b: &ProcessSample) -> ProcessRates {
    let Some(secs) = b.at.seconds_since(&a.at) else {
        return ProcessRates::default();
    };
    if a.pid != b.pid || !a.alive || !b.alive {
        return ProcessRates { interval_s: secs, ..Default::default() };
    }
    let hz = b.user_hz.max(1) as f64;
    let cpu = |x: Option<u64>, y: Option<u64>| counter_delta(x?, y?).map(|t| t as f64 / hz / secs * 100.0);
    let io = |f: fn(&ProcessIo) -> u64| opt_per_second(a.io.as_ref().map(f), b.io.as_ref().map(f), secs);
    ProcessRates {
        interval_s: secs,
        cpu_user_pct: cpu(a.cpu_user_ticks, b.cpu_user_ticks),
        cpu_system_pct: cpu(a.cpu_system_ticks, b.cpu_system_ticks),
        voluntary_cs_per_s: opt_per_second(a.voluntary_ctxt_switches, b.voluntary_ctxt_switches, secs),
        nonvoluntary_cs_per_s: opt_per_second(a.nonvoluntary_ctxt_switches, b.nonvoluntary_ctxt_switches, secs),
        read_bytes_per_s: io(|i| i.read_bytes),
        write_bytes_per_s: io(|i| i.write_bytes),
        rchar_per_s: io(|i| i.rchar),
        wchar_per_s: io(|i| i.wchar),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalelab_core::sample::Timestamp;

    fn sample(ns: u64, user: u64, vol: u64) -> ProcessSample {
        ProcessSample {
            at: Timestamp { monotonic_ns: ns, unix_ms: 0 },
            pid: 1,
            user_hz: 100,
            alive: true,
            cpu_user_ticks: Some(user),
            cpu_system_ticks: Some(0),
            voluntary_ctxt_switches: Some(vol),
            nonvoluntary_ctxt_switches: Some(0),
            ..Default::default()
        }
    }

    #[test]
    fn cpu_and_switches() {
        let r = process_rates(&sample(0, 100, 1000), &sample(2_000_000_000, 300, 5000));
        assert_eq!(r.cpu_user_pct, Some(100.0));
        assert_eq!(r.voluntary_cs_per_s, Some(2000.0));
        assert_eq!(r.cs_per_request(100.0), Some(20.0));
        assert_eq!(r.read_bytes_per_s, None);
        let back = process_rates(&sample(0, 300, 1000), &sample(1_000_000_000, 100, 5000));
        assert_eq!(back.cpu_user_pct, None);
    }
}
