//! A private nginx: one worker, 127.0.0.1 on a free port, everything (config,
//! pid, logs, temp paths, docroot) inside a temp dir.

use crate::{find_program, free_port, wait_listening};
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// A running nginx, stopped (and its dir removed) on drop.
pub struct Nginx {
    pub port: u16,
    /// The address it listens on (127.0.0.1, or a namespace's address).
    host: String,
    /// HTTPS port (self-signed certificate for `localhost`), when started with TLS.
    pub tls_port: Option<u16>,
    dir: tempfile::TempDir,
    master_pid: i32,
}

/// One line of the access log: when the request finished, its status and URI.
#[derive(Clone, Debug, PartialEq)]
pub struct LogLine {
    /// Unix time in milliseconds (nginx `$msec`, ms resolution).
    pub unix_ms: f64,
    pub status: u16,
    pub uri: String,
}

impl Nginx {
    /// Starts nginx; panics with a clear message when nginx is not installed
    /// (the README's test command installs it).
    pub fn start() -> Nginx {
        Self::start_with(false)
    }

    /// Starts nginx, also serving HTTPS with a fresh self-signed certificate when `tls`.
    pub fn start_with(tls: bool) -> Nginx {
        Self::launch(tls, None)
    }

    /// Starts nginx inside the network namespace `ns`, listening on
    /// `addr:8080` there (the namespace has its own ports; its master and
    /// workers live in it, so only that namespace sees the socket).
    pub fn start_in_netns(ns: &str, addr: &str) -> Nginx {
        Self::launch(false, Some((ns, addr)))
    }

    fn launch(tls: bool, netns: Option<(&str, &str)>) -> Nginx {
        let bin = find_program("nginx").expect("nginx is not installed: run ./scripts/test.sh, which installs it");
        let dir = tempfile::Builder::new().prefix("scalelab-nginx-").tempdir().expect("temp dir");
        let d = dir.path();
        for sub in ["www", "logs", "tmp"] {
            fs::create_dir_all(d.join(sub)).expect("nginx dirs");
        }
        // Workers run as nobody when the master is root: the docroot must be readable.
        set_mode(d, 0o755);
        set_mode(&d.join("www"), 0o755);
        let index = format!("<!doctype html><html><body><pre>{}</pre></body></html>\n", "x".repeat(1024 - 49));
        fs::write(d.join("www/index.html"), &index).expect("index.html");
        set_mode(&d.join("www/index.html"), 0o644);
        let (host, port) = match netns {
            Some((_, addr)) => (addr.to_string(), 8080),
            None => ("127.0.0.1".to_string(), free_port()),
        };
        let tls_port = tls.then(free_port);
        let tls_server = match tls_port {
            None => String::new(),
            Some(p) => {
                let ok = Command::new("openssl")
                    .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-days", "2"])
                    .arg("-keyout")
                    .arg(d.join("key.pem"))
                    .arg("-out")
                    .arg(d.join("cert.pem"))
                    .output()
                    .expect("openssl is not installed: run ./scripts/test.sh, which installs it");
                assert!(ok.status.success(), "openssl failed: {}", String::from_utf8_lossy(&ok.stderr));
                format!(
                    "server {{ listen 127.0.0.1:{p} ssl; ssl_certificate {d}/cert.pem; ssl_certificate_key {d}/key.pem; root {d}/www; location / {{ }} }}",
                    d = d.display()
                )
            }
        };
        let conf = format!(
            r#"worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/logs/error.log warn;
daemon on;
events {{ worker_connections 4096; }}
http {{
    log_format timed '$msec $status $request_uri';
    access_log {d}/logs/access.log timed;
    sendfile on;
    tcp_nodelay on;
    keepalive_timeout 65;
    keepalive_requests 1000000;
    default_type application/octet-stream;
    types {{ text/html html; }}
    client_body_temp_path {d}/tmp/body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    server {{
        listen {host}:{port} backlog=4096;
        root {d}/www;
        location = /fail {{ return 503; }}
        location / {{ }}
    }}
    {tls_server}
}}
"#,
            d = d.display()
        );
        fs::write(d.join("nginx.conf"), conf).expect("nginx.conf");
        let mut cmd = match netns {
            Some((ns, _)) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(&bin);
                c
            }
            None => Command::new(&bin),
        };
        let status = cmd
            .arg("-p")
            .arg(d)
            .arg("-e")
            .arg(d.join("logs/error.log"))
            .arg("-c")
            .arg(d.join("nginx.conf"))
            .status()
            .expect("running nginx");
        assert!(status.success(), "nginx failed to start: {}", fs::read_to_string(d.join("logs/error.log")).unwrap_or_default());
        let mut master_pid = 0;
        for _ in 0..100 {
            if let Some(pid) = fs::read_to_string(d.join("nginx.pid")).ok().and_then(|s| s.trim().parse().ok()) {
                master_pid = pid;
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(master_pid > 0, "nginx wrote no pid file");
        // In a namespace, its socket table is the master's (/proc/PID/net/tcp).
        let listening = match netns {
            None => wait_listening(port, Duration::from_secs(10)),
            Some(_) => crate::wait_listening_in(master_pid, port, Duration::from_secs(10)),
        };
        assert!(listening, "nginx did not listen on {host}:{port}");
        Nginx { port, host, tls_port, dir, master_pid }
    }

    /// `http://HOST:PORT{path}` (HOST 127.0.0.1, or the namespace's address).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}:{}{}", self.host, self.port, path)
    }

    /// The folder nginx lives in.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The master process id.
    pub fn pid(&self) -> i32 {
        self.master_pid
    }

    /// Every access-log line so far (nginx writes each line when the request ends).
    pub fn access_log(&self) -> Vec<LogLine> {
        let text = fs::read_to_string(self.dir.path().join("logs/access.log")).unwrap_or_default();
        text.lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                let unix_ms = it.next()?.parse::<f64>().ok()? * 1000.0;
                let status = it.next()?.parse().ok()?;
                let uri = it.next().unwrap_or("").to_string();
                Some(LogLine { unix_ms, status, uri })
            })
            .collect()
    }

    /// Kills nginx (master and workers) at once, as a crash would.
    pub fn kill(&self) {
        let workers = children_of(self.master_pid);
        // SAFETY: sending signals to processes this harness started.
        unsafe {
            libc_kill(self.master_pid, 9);
            for w in workers {
                libc_kill(w, 9);
            }
        }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        if crate::pid_alive(self.master_pid) {
            // SAFETY: signalling our own nginx master.
            unsafe { libc_kill(self.master_pid, 3) }; // SIGQUIT: graceful
            for _ in 0..100 {
                if !crate::pid_alive(self.master_pid) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if crate::pid_alive(self.master_pid) {
                self.kill();
            }
        }
    }
}

unsafe fn libc_kill(pid: i32, sig: i32) {
    libc::kill(pid, sig);
}

pub(crate) fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    let _ = fs::set_permissions(p, fs::Permissions::from_mode(mode));
}

/// Pids whose parent is `pid` (from /proc/*/stat).
pub fn children_of(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(child) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = fs::read_to_string(e.path().join("stat")) else { continue };
        if let Some(rest) = stat.rsplit_once(") ").map(|(_, r)| r) {
            if rest.split_whitespace().nth(1).and_then(|p| p.parse::<i32>().ok()) == Some(pid) {
                out.push(child);
            }
        }
    }
    out
}
