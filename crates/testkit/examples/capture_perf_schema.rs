//! Captures the `performance_schema` fixtures of the probe crate from a real
//! MariaDB started by this harness with performance_schema on
//! ([`MariaDb::start_perf_schema`]), under 8 clients updating 3 hot rows:
//! the instrument classes, and the wait summaries twice, one second apart.
//!
//! Usage: cargo run -p scalelab-testkit --example capture_perf_schema -- OUT_DIR

use scalelab_probe::db::perf_schema::{PERF_SCHEMA_INSTRUMENTS_QUERY as INSTRUMENTS, PERF_SCHEMA_WAITS_QUERY as WAITS};
use scalelab_testkit::find_program;
use scalelab_testkit::mariadb::MariaDb;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

fn main() {
    let out = std::path::PathBuf::from(std::env::args().nth(1).expect("usage: capture_perf_schema OUT_DIR"));
    let my = MariaDb::start_perf_schema();
    my.root_sql("CREATE TABLE bench.hot (id INT PRIMARY KEY, k INT) ENGINE=InnoDB; INSERT INTO bench.hot VALUES (1,0),(2,0),(3,0)");
    let client = find_program("mariadb").expect("the mariadb client");
    let mut load: Vec<_> = (0..8)
        .map(|_| {
            Command::new(&client)
                .arg("--no-defaults")
                .arg(format!("--socket={}", my.socket().display()))
                .args(["-uroot", "bench"])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("a load client")
        })
        .collect();
    for (n, c) in load.iter_mut().enumerate() {
        let mut stdin = c.stdin.take().expect("client stdin");
        std::thread::spawn(move || {
            // Autocommit updates of 3 rows, until the client is killed (then the write fails).
            for i in n.. {
                let line = format!("UPDATE hot SET k = k + 1 WHERE id = {};\n", 1 + i % 3);
                if stdin.write_all(line.as_bytes()).is_err() {
                    break;
                }
            }
        });
    }
    std::thread::sleep(Duration::from_secs(2));
    std::fs::write(out.join("mariadb-10.11-perf-schema-instruments.tsv"), my.root_sql(INSTRUMENTS) + "\n").unwrap();
    std::fs::write(out.join("mariadb-10.11-perf-schema-waits-t0.tsv"), my.root_sql(WAITS) + "\n").unwrap();
    std::thread::sleep(Duration::from_secs(1));
    std::fs::write(out.join("mariadb-10.11-perf-schema-waits-t1.tsv"), my.root_sql(WAITS) + "\n").unwrap();
    for c in &mut load {
        let _ = c.kill();
        let _ = c.wait();
    }
}
