//! The specimen's own account of a step, from its `/__stats` readings.

use scalelab_core::sample::SpecimenSample;
use scalelab_core::SpecimenTelemetry;

/// The specimen's figures over `[start_ms, end_ms]`, from the readings
/// nearest its edges (half a second of slack, as the other probes);
/// `None` with fewer than two readings or counters that went backwards.
pub fn summarize_specimen(samples: &[SpecimenSample], start_ms: i64, end_ms: i64) -> Option<SpecimenTelemetry> {
    let inside: Vec<&SpecimenSample> = samples.iter().filter(|s| s.unix_ms >= start_ms - 500 && s.unix_ms <= end_ms + 500).collect();
    let (a, b) = (inside.first()?, inside.last()?);
    let secs = (b.unix_ms - a.unix_ms) as f64 / 1000.0;
    if secs <= 0.0 {
        return None;
    }
    let d = |x: u64, y: u64| y.checked_sub(x);
    let requests = d(a.requests, b.requests)?;
    let lock_waits = d(a.lock_waits, b.lock_waits)?;
    let spin_rounds = d(a.spin_rounds, b.spin_rounds)?;
    let fsyncs = d(a.fsyncs, b.fsyncs)?;
    // `herd` mode only: the other modes (and older readings) count no wake-up.
    let connections = d(a.connections, b.connections)?;
    let wakeups = d(a.wakeups, b.wakeups)?;
    let empty_wakeups = d(a.empty_wakeups, b.empty_wakeups)?;
    let per_request = |x: u64| (requests > 0).then(|| x as f64 / requests as f64);
    Some(SpecimenTelemetry {
        requests_per_s: requests as f64 / secs,
        lock_waits_per_s: lock_waits as f64 / secs,
        lock_wait_share_pct: per_request(lock_waits).map(|x| 100.0 * x),
        spin_rounds_per_request: per_request(spin_rounds),
        fsyncs_per_s: fsyncs as f64 / secs,
        wakeups_per_connection: (wakeups > 0 && connections > 0).then(|| wakeups as f64 / connections as f64),
        empty_wakeup_share_pct: (wakeups > 0).then(|| 100.0 * empty_wakeups as f64 / wakeups as f64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64, requests: u64, lock_waits: u64) -> SpecimenSample {
        SpecimenSample { unix_ms: ms, requests, lock_waits, spin_rounds: 2 * lock_waits, fsyncs: 0, connections: 4, ..Default::default() }
    }

    #[test]
    fn window_rates_and_shares() {
        let samples = [at(0, 0, 0), at(1000, 1000, 100), at(2000, 3000, 1100), at(3000, 5000, 2100), at(9000, 9000, 9000)];
        let t = summarize_specimen(&samples, 1000, 3000).unwrap();
        assert_eq!(t.requests_per_s, 2000.0);
        assert_eq!(t.lock_waits_per_s, 1000.0);
        assert_eq!(t.lock_wait_share_pct, Some(50.0));
        assert_eq!(t.spin_rounds_per_request, Some(1.0));
        assert_eq!(t.fsyncs_per_s, 0.0);
        assert_eq!((t.wakeups_per_connection, t.empty_wakeup_share_pct), (None, None), "no wake-ups counted: not zero");
    }

    #[test]
    fn herd_wakeups_per_connection_and_the_share_that_found_nothing() {
        let herd = |ms: i64, connections: u64, wakeups: u64, empty_wakeups: u64| SpecimenSample {
            unix_ms: ms,
            requests: connections,
            connections,
            wakeups,
            empty_wakeups,
            ..Default::default()
        };
        // 100 connections in the window, 16 counted wake-ups each, 15 of them empty.
        let t = summarize_specimen(&[herd(1000, 10, 160, 150), herd(2000, 110, 1760, 1650)], 1000, 2000).unwrap();
        assert_eq!(t.wakeups_per_connection, Some(16.0));
        assert_eq!(t.empty_wakeup_share_pct, Some(93.75));
        // Wake-ups counted in the window but no connection at all: no ratio.
        let t = summarize_specimen(&[herd(1000, 10, 160, 150), herd(2000, 10, 164, 154)], 1000, 2000).unwrap();
        assert_eq!((t.wakeups_per_connection, t.empty_wakeup_share_pct), (None, Some(100.0)));
    }

    #[test]
    fn too_few_or_backwards_readings_are_missing_not_zero() {
        assert_eq!(summarize_specimen(&[at(1000, 10, 0)], 1000, 3000), None);
        assert_eq!(summarize_specimen(&[], 1000, 3000), None);
        assert_eq!(summarize_specimen(&[at(1000, 10, 5), at(2000, 5, 5)], 1000, 3000), None, "a restarted specimen");
        let idle = summarize_specimen(&[at(1000, 10, 5), at(2000, 10, 5)], 1000, 2000).unwrap();
        assert_eq!(idle.lock_wait_share_pct, None, "no request: no share");
    }
}
