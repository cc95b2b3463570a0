//! A private Redis: `redis-server` in a temp dir on a free loopback port,
//! no persistence, protected mode on (it listens on 127.0.0.1 only), killed
//! when dropped. `calls` reads `INFO commandstats`, so tests count what
//! the server really executed.

use crate::{find_program, free_port, wait_listening};
use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct Redis {
    pub port: u16,
    /// TLS only (`start_tls`): the port speaks TLS, and this PEM is the CA that signed its certificate.
    pub cert: Option<std::path::PathBuf>,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Redis {
    pub fn start() -> Redis {
        Self::launch(false)
    }

    /// A Redis that speaks only TLS, with a self-signed certificate for 127.0.0.1 ([`Redis::cert`]).
    pub fn start_tls() -> Redis {
        Self::launch(true)
    }

    fn launch(tls: bool) -> Redis {
        let bin = find_program("redis-server").expect("redis-server is not installed: run ./scripts/test.sh, which installs it");
        let dir = tempfile::Builder::new().prefix("scalelab-redis-").tempdir().expect("temp dir");
        let port = free_port();
        let mut cmd = Command::new(bin);
        let cert = tls.then(|| {
            // A CA of its own and a server certificate it signed for 127.0.0.1
            // (a self-signed CA certificate is refused as an end entity).
            let d = dir.path();
            let openssl = |args: &[&str]| {
                let out = Command::new("openssl")
                    .args(args)
                    .current_dir(d)
                    .output()
                    .expect("openssl is not installed: run ./scripts/test.sh, which installs it");
                assert!(out.status.success(), "openssl {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
            };
            openssl(&[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                "/CN=scalelab test CA",
                "-days",
                "2",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
            ]);
            openssl(&["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "key.pem", "-out", "server.csr"]);
            std::fs::write(d.join("ext.cnf"), "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n").unwrap();
            openssl(&[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                "ext.cnf",
                "-out",
                "cert.pem",
            ]);
            let (key, cert) = (d.join("key.pem"), d.join("cert.pem"));
            cmd.args(["--port", "0", "--tls-port", &port.to_string(), "--tls-auth-clients", "no"])
                .arg("--tls-cert-file")
                .arg(&cert)
                .arg("--tls-key-file")
                .arg(&key)
                .arg("--tls-ca-cert-file")
                .arg(d.join("ca.pem"));
            d.join("ca.pem")
        });
        if !tls {
            cmd.args(["--port", &port.to_string()]);
        }
        let child = cmd
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(dir.path())
            .arg("--logfile")
            .arg(dir.path().join("redis.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting redis-server");
        let r = Redis { port, cert, child, _dir: dir };
        assert!(wait_listening(port, Duration::from_secs(10)), "redis-server did not listen on {port}");
        r
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends one inline command and returns the raw reply (enough for INFO, CONFIG SET, DBSIZE).
    pub fn command(&self, line: &str) -> String {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).expect("connect to redis");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(format!("{line}\r\nQUIT\r\n").as_bytes()).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        // QUIT's own +OK closes the reply.
        out.strip_suffix("+OK\r\n").unwrap_or(&out).to_string()
    }

    /// Calls of `command` (lower case, e.g. `get`) so far: `INFO commandstats`.
    pub fn calls(&self, command: &str) -> u64 {
        let info = self.command("INFO commandstats");
        let key = format!("cmdstat_{command}:calls=");
        info.lines().find_map(|l| l.strip_prefix(&key)).map(|rest| rest.split(',').next().unwrap_or("0").parse().unwrap_or(0)).unwrap_or(0)
    }

    /// Kills the server (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}
