//! The built-in specimen's own counters (`GET /__stats`): requests answered,
//! requests that had to wait for its lock, spin rounds, fsyncs. Read once per
//! sample over a fresh loopback connection; summarized per step (in
//! `scalelab_analyze::telemetry`) so the diagnosis can quote the server's own account ("62 % of requests waited
//! for the lock") beside what /proc shows.

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
        // Counted by the `herd` mode; absent from an older specimen's answer.
        #[serde(default)]
        wakeups: u64,
        #[serde(default)]
        empty_wakeups: u64,
    }
    let s: Stats = serde_json::from_str(body.trim()).map_err(|e| format!("the /__stats body is not the specimen's counters: {e}"))?;
    Ok(SpecimenSample {
        unix_ms,
        requests: s.requests,
        lock_waits: s.lock_waits,
        spin_rounds: s.spin_rounds,
        fsyncs: s.fsyncs,
        connections: s.connections,
        wakeups: s.wakeups,
        empty_wakeups: s.empty_wakeups,
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

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nConnection: close\r\n\r\n{\"mode\":\"global-lock\",\"work_us\":100,\"requests\":1200,\"lock_waits\":900,\"spin_rounds\":0,\"fsyncs\":0,\"connections\":16}";

    #[test]
    fn parses_the_stats_answer_and_refuses_anything_else() {
        let s = parse_stats_response(5, OK.as_bytes()).unwrap();
        assert_eq!((s.unix_ms, s.requests, s.lock_waits, s.connections), (5, 1200, 900, 16));
        assert_eq!((s.wakeups, s.empty_wakeups), (0, 0), "an answer without the herd's counters");
        let herd = "HTTP/1.1 200 OK\r\n\r\n{\"requests\":10,\"lock_waits\":0,\"spin_rounds\":0,\"fsyncs\":0,\"connections\":10,\"wakeups\":160,\"empty_wakeups\":150}";
        let s = parse_stats_response(5, herd.as_bytes()).unwrap();
        assert_eq!((s.connections, s.wakeups, s.empty_wakeups), (10, 160, 150));
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
}
