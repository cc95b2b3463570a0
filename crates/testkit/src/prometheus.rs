//! A private Prometheus: `prometheus` in a temp dir on a free loopback port,
//! scraping the given targets every second, with its remote-write receiver
//! on; killed when dropped. `query` runs PromQL over its HTTP API, so tests
//! read back what it stored.

use crate::{find_program, free_port, wait_listening};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Prometheus {
    pub port: u16,
    child: Child,
    dir: tempfile::TempDir,
}

impl Prometheus {
    /// Starts Prometheus scraping `targets` (`host:port`, path `/metrics`)
    /// every second; it accepts remote write at [`Prometheus::write_url`].
    pub fn start(targets: &[String]) -> Prometheus {
        let bin = find_program("prometheus").expect("prometheus is not installed: run ./scripts/test.sh, which installs it");
        let dir = tempfile::Builder::new().prefix("scalelab-prometheus-").tempdir().expect("temp dir");
        let list = targets.iter().map(|t| format!("'{t}'")).collect::<Vec<_>>().join(", ");
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: scalelab\n    static_configs:\n      - targets: [{list}]\n"
        );
        std::fs::write(dir.path().join("prometheus.yml"), config).expect("writing prometheus.yml");
        let port = free_port();
        let child = Command::new(bin)
            .arg(format!("--config.file={}", dir.path().join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--web.enable-remote-write-receiver")
            // Samples pushed with their own timestamps may be a little in the past.
            .arg("--storage.tsdb.retention.time=1h")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("prometheus.log")).map(Stdio::from).unwrap_or(Stdio::null()))
            .spawn()
            .expect("starting prometheus");
        let p = Prometheus { port, child, dir };
        assert!(wait_listening(port, Duration::from_secs(20)), "prometheus did not listen on {port}: {}", p.log());
        let ready = Instant::now() + Duration::from_secs(20);
        while !p.get("/-/ready").starts_with("HTTP/1.1 200") {
            assert!(Instant::now() < ready, "prometheus not ready in 20 s: {}", p.log());
            std::thread::sleep(Duration::from_millis(100));
        }
        p
    }

    /// The remote-write receiver's URL.
    pub fn write_url(&self) -> String {
        format!("http://127.0.0.1:{}/api/v1/write", self.port)
    }

    /// Its log so far (for assertion messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// The body of an instant PromQL query's answer (JSON), evaluated now.
    pub fn query(&self, promql: &str) -> String {
        let answer = self.get(&format!("/api/v1/query?query={}", encode(promql)));
        answer.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or(answer)
    }

    /// Waits (at most `limit`) until `promql` returns a non-empty result; the last answer.
    pub fn query_until(&self, promql: &str, limit: Duration) -> String {
        let end = Instant::now() + limit;
        loop {
            let body = self.query(promql);
            if !body.contains("\"result\":[]") || Instant::now() > end {
                return body;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn get(&self, path: &str) -> String {
        crate::http_get(self.port, path).unwrap_or_default()
    }
}

/// Percent-encodes a query parameter (everything but unreserved characters).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
