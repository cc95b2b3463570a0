//! A private PostgreSQL cluster: initdb into a temp dir, 127.0.0.1 on a free
//! port, socket in the temp dir, trust authentication, a `bench` database;
//! plus two roles that must give a password over TCP, one by SCRAM-SHA-256
//! ([`SCRAM_USER`]) and one by md5 ([`MD5_USER`]).
//! Run as root, the server runs as the `postgres` OS user (it refuses root).

use crate::{find_program, free_port, wait_listening};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A role (name, password) that authenticates by SCRAM-SHA-256 over TCP.
pub const SCRAM_USER: (&str, &str) = ("scram_user", "scram-secret");
/// A role (name, password) that authenticates by md5 over TCP.
pub const MD5_USER: (&str, &str) = ("md5_user", "md5-secret");

/// A running PostgreSQL, stopped (and its dir removed) on drop.
pub struct Postgres {
    /// TCP port on 127.0.0.1.
    pub port: u16,
    dir: tempfile::TempDir,
    bin: PathBuf,
    pid: i32,
}

fn pg_bin() -> PathBuf {
    let mut dirs: Vec<PathBuf> =
        fs::read_dir("/usr/lib/postgresql").into_iter().flatten().flatten().map(|e| e.path().join("bin")).collect();
    dirs.sort();
    if let Some(d) = dirs.into_iter().rev().find(|d| d.join("initdb").exists()) {
        return d;
    }
    find_program("initdb")
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .expect("PostgreSQL is not installed: run ./scripts/test.sh, which installs it")
}

/// Runs a command as `user` when we are root (servers refuse to run as root).
pub(crate) fn as_user(user: &str, program: &Path) -> Command {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let mut c = Command::new("runuser");
        c.args(["-u", user, "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

pub(crate) fn chown_to(user: &str, dir: &Path) {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let ok = Command::new("chown").arg("-R").arg(format!("{user}:")).arg(dir).status().map(|s| s.success()).unwrap_or(false);
        assert!(ok, "chown {user} {}", dir.display());
    }
}

impl Postgres {
    /// Starts a cluster with max_connections = 100.
    pub fn start() -> Postgres {
        Self::start_with(100)
    }

    /// Starts a cluster with the given `max_connections`.
    pub fn start_with(max_connections: u32) -> Postgres {
        Self::start_opts(max_connections, false)
    }

    /// Starts a cluster that accepts TCP clients over TLS only (`ssl = on`
    /// with a certificate for 127.0.0.1 / localhost signed by a throw-away CA,
    /// both made with openssl in the temp dir, and `hostssl` as the only TCP rule of
    /// pg_hba.conf), so a plain-text client is refused.
    pub fn start_tls() -> Postgres {
        Self::start_opts(100, true)
    }

    /// The CA certificate (PEM) that signed a [`Postgres::start_tls`] cluster's certificate.
    pub fn cert_path(&self) -> PathBuf {
        self.dir.path().join("data/ca.crt")
    }

    fn start_opts(max_connections: u32, tls: bool) -> Postgres {
        let bin = pg_bin();
        let dir = tempfile::Builder::new().prefix("scalelab-pg-").tempdir().expect("temp dir");
        let d = dir.path();
        fs::create_dir_all(d.join("sock")).expect("sock dir");
        crate::set_mode_bits(d, 0o755);
        chown_to("postgres", d);
        let out = as_user("postgres", &bin.join("initdb"))
            .arg("-D")
            .arg(d.join("data"))
            .args(["-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"])
            .output()
            .expect("running initdb");
        assert!(out.status.success(), "initdb failed: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let port = free_port();
        let conf = format!(
            "listen_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = '{}'\nmax_connections = {max_connections}\n\
             shared_buffers = 64MB\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\nlogging_collector = off\n\
             deadlock_timeout = 100ms\nautovacuum = off\nwal_level = minimal\nmax_wal_senders = 0\n",
            d.join("sock").display()
        );
        let mut text = fs::read_to_string(d.join("data/postgresql.conf")).expect("postgresql.conf");
        text.push_str(&conf);
        if tls {
            let data = d.join("data");
            crate::make_test_certs(&data);
            chown_to("postgres", &data);
            text.push_str("ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n");
            fs::write(data.join("pg_hba.conf"), "local all all trust\nhostssl all all 127.0.0.1/32 trust\n").expect("pg_hba.conf");
        } else {
            // The password roles' lines come first: pg_hba.conf's first match wins.
            let hba = d.join("data/pg_hba.conf");
            let rest = fs::read_to_string(&hba).expect("pg_hba.conf");
            let lines = format!("host all {} 127.0.0.1/32 scram-sha-256\nhost all {} 127.0.0.1/32 md5\n{rest}", SCRAM_USER.0, MD5_USER.0);
            fs::write(&hba, lines).expect("pg_hba.conf");
        }
        fs::write(d.join("data/postgresql.conf"), text).expect("postgresql.conf");
        let out = as_user("postgres", &bin.join("pg_ctl"))
            .arg("-D")
            .arg(d.join("data"))
            .arg("-l")
            .arg(d.join("server.log"))
            .args(["-w", "-t", "60", "start"])
            .output()
            .expect("running pg_ctl");
        assert!(out.status.success(), "pg_ctl start failed: {}", fs::read_to_string(d.join("server.log")).unwrap_or_default());
        assert!(wait_listening(port, Duration::from_secs(30)), "postgres did not listen on {port}");
        let pid = fs::read_to_string(d.join("data/postmaster.pid"))
            .ok()
            .and_then(|s| s.lines().next().and_then(|l| l.trim().parse().ok()))
            .expect("postmaster.pid");
        let pg = Postgres { port, dir, bin, pid };
        pg.psql("postgres", "CREATE DATABASE bench");
        // md5 authentication needs the password stored as md5 (a SCRAM
        // verifier would make the server ask for SCRAM instead).
        pg.psql(
            "postgres",
            &format!(
                "CREATE ROLE {} LOGIN SUPERUSER PASSWORD '{}'; SET password_encryption = 'md5'; CREATE ROLE {} LOGIN SUPERUSER PASSWORD '{}'",
                SCRAM_USER.0, SCRAM_USER.1, MD5_USER.0, MD5_USER.1
            ),
        );
        pg
    }

    /// `postgres://USER:PASSWORD@127.0.0.1:PORT/bench`.
    pub fn url_as(&self, (user, password): (&str, &str)) -> String {
        format!("postgres://{user}:{password}@127.0.0.1:{}/bench", self.port)
    }

    /// The directory of the server's unix socket (for `?host=DIR`).
    pub fn socket_dir(&self) -> PathBuf {
        self.dir.path().join("sock")
    }

    /// `postgres://postgres@127.0.0.1:PORT/bench`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/bench", self.port)
    }

    /// The folder the cluster lives in.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The postmaster's process id.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Runs SQL with psql on database `db`; returns its unaligned output, trimmed.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let psql = self.bin.join("psql");
        let psql = if psql.exists() { psql } else { find_program("psql").expect("psql") };
        let out = Command::new(psql)
            .args([
                "-X",
                "-At",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                "-p",
                &self.port.to_string(),
                "-d",
                db,
                "-c",
                sql,
            ])
            .output()
            .expect("running psql");
        assert!(out.status.success(), "psql {sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Kills the postmaster and its backends at once, as a crash would.
    pub fn kill(&self) {
        let children = crate::children_of(self.pid);
        // SAFETY: signalling processes this harness started.
        unsafe {
            libc::kill(self.pid, 9);
            for c in children {
                libc::kill(c, 9);
            }
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if crate::pid_alive(self.pid) {
            let _ = as_user("postgres", &self.bin.join("pg_ctl"))
                .arg("-D")
                .arg(self.dir.path().join("data"))
                .args(["-m", "immediate", "-w", "-t", "20", "stop"])
                .output();
            if crate::pid_alive(self.pid) {
                self.kill();
            }
        }
    }
}
