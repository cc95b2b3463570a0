//! A private MariaDB: mariadb-install-db into a temp dir (never reading
//! /etc/mysql), 127.0.0.1 on a free port, socket in the temp dir, a TCP user
//! `bench`/`bench` with all privileges and a `bench` database.

use crate::postgres::chown_to;
use crate::{find_program, free_port, wait_listening};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running MariaDB, stopped (and its dir removed) on drop.
pub struct MariaDb {
    /// TCP port on 127.0.0.1.
    pub port: u16,
    dir: tempfile::TempDir,
    child: Child,
}

impl MariaDb {
    /// Starts MariaDB with max_connections = 100.
    pub fn start() -> MariaDb {
        Self::start_with(100)
    }

    /// Starts MariaDB with the given `max_connections`.
    pub fn start_with(max_connections: u32) -> MariaDb {
        Self::start_opts(max_connections, false, false)
    }

    /// Starts MariaDB with `performance_schema` on and every `wait/synch`
    /// (mutex, rw-lock, condition) and `wait/lock` (table, metadata)
    /// instrument enabled and timed; by default MariaDB times only table I/O,
    /// table locks and file I/O. The global wait summaries need no consumer
    /// beyond the default `global_instrumentation`. Other tests keep it off.
    pub fn start_perf_schema() -> MariaDb {
        Self::start_opts(100, false, true)
    }

    /// Starts MariaDB with TLS (a certificate for 127.0.0.1 signed by a
    /// throw-away CA, see [`MariaDb::ca_path`]) and `require_secure_transport`,
    /// so a plain-text TCP client is refused.
    pub fn start_tls() -> MariaDb {
        Self::start_opts(100, true, false)
    }

    /// The CA certificate (PEM) of a [`MariaDb::start_tls`] server.
    pub fn ca_path(&self) -> PathBuf {
        self.dir.path().join("certs/ca.crt")
    }

    fn start_opts(max_connections: u32, tls: bool, perf_schema: bool) -> MariaDb {
        let install = find_program("mariadb-install-db").expect("MariaDB is not installed: run ./scripts/test.sh, which installs it");
        let server = find_program("mariadbd").expect("mariadbd is not installed: run ./scripts/test.sh, which installs it");
        let dir = tempfile::Builder::new().prefix("scalelab-mariadb-").tempdir().expect("temp dir");
        let d = dir.path();
        fs::create_dir_all(d.join("tmp")).expect("tmp dir");
        crate::set_mode_bits(d, 0o755);
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let user = if root { "mysql".to_string() } else { std::env::var("USER").unwrap_or_else(|_| "nobody".into()) };
        if root {
            chown_to("mysql", &d.join("tmp"));
        }
        // A private tmpdir: concurrent bootstraps sharing /tmp trip over each other's temp tables.
        let out = Command::new(&install)
            .arg("--no-defaults")
            .arg(format!("--datadir={}", d.join("data").display()))
            .arg(format!("--tmpdir={}", d.join("tmp").display()))
            .arg(format!("--user={user}"))
            .args(["--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve"])
            .output()
            .expect("running mariadb-install-db");
        assert!(
            out.status.success(),
            "mariadb-install-db failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let mut tls_args = Vec::new();
        if tls {
            let certs = d.join("certs");
            fs::create_dir_all(&certs).expect("certs dir");
            crate::make_test_certs(&certs);
            for (opt, file) in [("ssl-ca", "ca.crt"), ("ssl-cert", "server.crt"), ("ssl-key", "server.key")] {
                tls_args.push(format!("--{opt}={}", certs.join(file).display()));
            }
            tls_args.push("--require-secure-transport=ON".to_string());
        }
        let perf_schema_args: &[&str] = if perf_schema {
            &[
                "--performance-schema=ON",
                "--performance-schema-instrument=wait/synch/%=ON",
                "--performance-schema-instrument=wait/lock/%=ON",
            ]
        } else {
            &["--performance-schema=OFF"]
        };
        if root {
            chown_to("mysql", d);
        }
        let port = free_port();
        let child = Command::new(server)
            .arg("--no-defaults")
            .arg(format!("--user={user}"))
            .arg(format!("--datadir={}", d.join("data").display()))
            .arg(format!("--tmpdir={}", d.join("tmp").display()))
            .arg(format!("--socket={}", d.join("mysqld.sock").display()))
            .arg(format!("--pid-file={}", d.join("mysqld.pid").display()))
            .arg(format!("--log-error={}", d.join("error.log").display()))
            .arg(format!("--port={port}"))
            .args(["--bind-address=127.0.0.1", "--skip-name-resolve", "--skip-log-bin", "--innodb-buffer-pool-size=64M"])
            .args(["--innodb-flush-log-at-trx-commit=0", "--innodb-lock-wait-timeout=2"])
            .args(perf_schema_args)
            .arg(format!("--max-connections={max_connections}"))
            .args(&tls_args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting mariadbd");
        let mut my = MariaDb { port, dir, child };
        let listening = wait_listening(port, Duration::from_secs(60));
        assert!(
            listening,
            "mariadbd did not listen on {port}: {}",
            fs::read_to_string(my.dir.path().join("error.log")).unwrap_or_default()
        );
        for _ in 0..100 {
            if my.socket().exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        my.root_sql(
            "CREATE DATABASE IF NOT EXISTS bench; CREATE USER IF NOT EXISTS 'bench'@'127.0.0.1' IDENTIFIED BY 'bench'; \
             GRANT ALL ON *.* TO 'bench'@'127.0.0.1';",
        );
        let _ = my.child.try_wait();
        my
    }

    /// `mysql://bench:bench@127.0.0.1:PORT/bench`.
    pub fn url(&self) -> String {
        format!("mysql://bench:bench@127.0.0.1:{}/bench", self.port)
    }

    /// The server's unix socket.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("mysqld.sock")
    }

    /// The folder the server lives in.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The mariadbd process id.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Runs SQL as root over the socket; returns the tab-separated output, trimmed.
    pub fn root_sql(&self, sql: &str) -> String {
        let client = find_program("mariadb").or_else(|| find_program("mysql")).expect("the mariadb client is not installed");
        let out = Command::new(client)
            .arg("--no-defaults")
            .arg(format!("--socket={}", self.socket().display()))
            .args(["-uroot", "-N", "-B", "-e", sql])
            .output()
            .expect("running the mariadb client");
        assert!(out.status.success(), "mariadb {sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A global status counter (`SHOW GLOBAL STATUS LIKE name`).
    pub fn status(&self, name: &str) -> u64 {
        let out = self.root_sql(&format!("SHOW GLOBAL STATUS LIKE '{name}'"));
        out.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("no status {name}: {out}"))
    }

    /// Kills the server at once, as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: signalling the server this harness started.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
            for _ in 0..400 {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(25));
            }
            self.kill();
        }
    }
}
