//! The built-in specimen's own counters (`GET /__stats`): requests answered,
//! requests that had to wait for its lock, spin rounds, fsyncs. Read once per
//! sample over a fresh loopback connection; summarized per step so the
//! diagnosis can quote the server's own account ("62 % of requests waited
//! for the lock") beside what /proc shows.

use scalelab_core::SpecimenTelemetry;
use serde::Deserialize;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

pub use scalelab_core::sample::SpecimenSample;

/// Parses an HTTP response carrying the `/__stats` JSON body.
pub fn parse_stats_response(unix_ms: i64, response: &[u8]) -> Result<SpecimenSample, String> {
    let text = std::str::from_utf8(response).map_err(|_| "the /__stats answer is not text".to_string())?;
    let (head, body) = text.split_once("\r\n\r\n").ok_or("the /__stats answer has no body")?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(format!("/__stats answered `{}`", head.lines().next().unwrap_or("")));
    }
    #[derive(Deserialize)]
    struct Stats {
        requests: u64,
        lock_waits: u64,
        spin_rounds: u64,
        fsyncs: u64,
        connections: u64,
    }
    let s: Stats = serde_json::from_str(body.trim()).map_err(|e| format!("the /__stats body is not the specimen's counters: {e}"))?;
    Ok(SpecimenSample {
        unix_ms,
        requests: s.requests,
        lock_waits: s.lock_waits,
        spin_rounds: s.spin_rounds,
        fsyncs: s.fsyncs,
        connections: s.connections,
    })
}

/// Reads the counters of the specimen listening on `addr`, within `timeout`.
pub fn fetch_specimen_stats(addr: SocketAddr, unix_ms: i64, timeout: Duration) -> Result<SpecimenSample, String> {
    let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("connecting to the specimen at {addr}: {e}"))?;
    s.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    s.write_all(b"GET /__stats HTTP/1.1\r\nHost: specimen\r\nConnection: close\r\n\r\n")
        .map_err(|e| format!("asking the specimen for /__stats: {e}"))?;
    let mut buf = Vec::with_capacity(512);
    s.read_to_end(&mut buf).map_err(|e| format!("reading the specimen's /__stats: {e}"))?;
    parse_stats_response(unix_ms, &buf)
}

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
    let per_request = |x: u64| (requests > 0).then(|| x as f64 / requests as f64);
    Some(SpecimenTelemetry {
        requests_per_s: requests as f64 / secs,
        lock_waits_per_s: lock_waits as f64 / secs,
        lock_wait_share_pct: per_request(lock_waits).map(|x| 100.0 * x),
        spin_rounds_per_request: per_request(spin_rounds),
        fsyncs_per_s: fsyncs as f64 / secs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nConnection: close\r\n\r\n{\"mode\":\"global-lock\",\"work_us\":100,\"requests\":1200,\"lock_waits\":900,\"spin_rounds\":0,\"fsyncs\":0,\"connections\":16}";

    #[test]
    fn parses_the_stats_answer_and_refuses_anything_else() {
        let s = parse_stats_response(5, OK.as_bytes()).unwrap();
        assert_eq!((s.unix_ms, s.requests, s.lock_waits, s.connections), (5, 1200, 900, 16));
        for bad in [
            "",
            "HTTP/1.1 200 OK\r\n",
            "HTTP/1.1 404 Not Found\r\n\r\n{}",
            "HTTP/1.1 200 OK\r\n\r\n{\"requests\":",
            "HTTP/1.1 200 OK\r\n\r\nnot json",
        ] {
            assert!(parse_stats_response(0, bad.as_bytes()).is_err(), "{bad:?}");
        }
        assert!(parse_stats_response(0, &[0xff, 0xfe]).is_err());
    }

    fn at(ms: i64, requests: u64, lock_waits: u64) -> SpecimenSample {
        SpecimenSample { unix_ms: ms, requests, lock_waits, spin_rounds: 2 * lock_waits, fsyncs: 0, connections: 4 }
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
