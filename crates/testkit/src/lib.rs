//! Test harness: starts real servers for integration tests, each in its own
//! temp dir on a free loopback port, stopped when dropped. Never relies on a
//! server that happens to run on the machine.
//!
//! - [`free_port`]: a port nothing listens on right now.
//! - [`netns`]: hosts made of network namespaces on a bridge, for agents.
//! - [`nginx`]: a private nginx with an access log that records the time of
//!   every request, so tests can count what the server really served.
//! - [`apache`]: a private Apache httpd, prefork or worker MPM.
//! - [`prometheus`]: a private Prometheus scraping given targets each
//!   second, its remote-write receiver on; PromQL queries read it back.
//! - [`redis`]: a private Redis (no persistence) whose command counts tests read.
//! - [`postgres`], [`mariadb`]: private database servers (initdb /
//!   mariadb-install-db into temp dirs) with a `bench` database.

pub mod apache;
pub mod mariadb;
pub mod netns;
pub mod nginx;
pub mod postgres;
pub mod prometheus;
pub mod redis;

pub use nginx::children_of;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// `GET path` of 127.0.0.1:`port` over HTTP/1.1 with `Connection: close`:
/// the whole response, head and body (None: nothing listens there).
pub fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").as_bytes()).ok()?;
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// A loopback port that was free a moment ago (bind :0, read it back, close).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("binding 127.0.0.1:0").local_addr().expect("local addr").port()
}

/// Waits until something accepts TCP connections on `127.0.0.1:port`.
pub fn wait_listening(port: u16, timeout: Duration) -> bool {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Waits until a socket listens on `port` in the network namespace of
/// process `pid` (its `/proc/PID/net/tcp`, state 0A).
pub fn wait_listening_in(pid: i32, port: u16, timeout: Duration) -> bool {
    let end = Instant::now() + timeout;
    let want = format!(":{port:04X} ");
    while Instant::now() < end {
        let table = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap_or_default();
        if table.lines().skip(1).any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && format!("{} ", f[1]).ends_with(&want) && f[3] == "0A"
        }) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Finds an executable in PATH or the usual sbin folders.
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    path.split(':')
        .map(PathBuf::from)
        .chain(["/usr/sbin", "/sbin", "/usr/local/sbin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// True when the process `pid` exists.
pub fn pid_alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && std::fs::read_to_string(format!("/proc/{pid}/stat")).map(|s| !s.contains(") Z ")).unwrap_or(false)
}

/// Sets a file's permission bits (servers running as another user must traverse temp dirs).
pub(crate) fn set_mode_bits(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode));
}

/// Writes `ca.crt`/`ca.key` (a throw-away CA) and `server.crt`/`server.key`
/// (for 127.0.0.1 and localhost, signed by that CA) into `dir` with openssl.
/// A self-signed leaf would do for "encrypt, don't check", but strict
/// verifiers reject a CA certificate used as the server's own.
pub(crate) fn make_test_certs(dir: &Path) {
    let openssl = find_program("openssl").expect("openssl is not installed");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(&openssl).current_dir(dir).args(args).output().expect("running openssl");
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    let key = ["-days", "2", "-nodes", "-newkey", "rsa:2048"];
    run(&[&["req", "-x509"][..], &key, &["-subj", "/CN=scalelab test CA", "-keyout", "ca.key", "-out", "ca.crt"]].concat());
    run(&[&["req", "-new"][..], &key, &["-subj", "/CN=localhost", "-keyout", "server.key", "-out", "server.csr"]].concat());
    std::fs::write(dir.join("server.ext"), "basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n").expect("server.ext");
    run(&[
        "x509",
        "-req",
        "-days",
        "2",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-extfile",
        "server.ext",
        "-out",
        "server.crt",
    ]);
    set_mode_bits(&dir.join("server.key"), 0o600);
}
