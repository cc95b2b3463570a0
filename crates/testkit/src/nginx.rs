//! A private nginx: one worker, 127.0.0.1 on a free port, everything (config,
//! pid, logs, temp paths, docroot) inside a temp dir; optionally HTTPS with a
//! self-signed certificate and HTTP/2 (h2c on a port of its own, h2 by ALPN
//! on the HTTPS port).

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
    /// HTTP/2 over cleartext (prior knowledge, `listen ... http2`), when
    /// started with [`NginxOptions::http2`].
    pub h2c_port: Option<u16>,
    dir: tempfile::TempDir,
    master_pid: i32,
}

/// One line of the access log: when the request finished, its status, URI
/// and protocol.
#[derive(Clone, Debug, PartialEq)]
pub struct LogLine {
    /// Unix time in milliseconds (nginx `$msec`, ms resolution).
    pub unix_ms: f64,
    pub status: u16,
    pub uri: String,
    /// `$server_protocol`: `HTTP/1.1`, `HTTP/2.0`.
    pub protocol: String,
}

/// What a private nginx serves beyond HTTP/1.1 on its `port`.
#[derive(Clone, Copy, Debug, Default)]
pub struct NginxOptions {
    /// HTTPS on `tls_port`, with a fresh self-signed certificate.
    pub tls: bool,
    /// HTTP/2: h2c (prior knowledge) on `h2c_port`, and with `tls` h2
    /// offered by ALPN on `tls_port` (beside http/1.1).
    pub http2: bool,
    /// nginx's `keepalive_requests` (default 1,000,000): after this many
    /// requests a connection is closed, an HTTP/2 one with GOAWAY.
    pub keepalive_requests: Option<u32>,
    /// nginx's `http2_max_concurrent_streams` (default 128), announced as
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub max_concurrent_streams: Option<u32>,
}

impl Nginx {
    /// Starts nginx; panics with a clear message when nginx is not installed
    /// (the README's test command installs it).
    pub fn start() -> Nginx {
        Self::start_with(false)
    }

    /// Starts nginx, also serving HTTPS with a fresh self-signed certificate when `tls`.
    pub fn start_with(tls: bool) -> Nginx {
        Self::launch(NginxOptions { tls, ..Default::default() }, None)
    }

    /// Starts nginx with these options (HTTPS, HTTP/2, a request limit per connection).
    pub fn start_opts(o: NginxOptions) -> Nginx {
        Self::launch(o, None)
    }

    /// Starts nginx inside the network namespace `ns`, listening on
    /// `addr:8080` there (the namespace has its own ports; its master and
    /// workers live in it, so only that namespace sees the socket).
    pub fn start_in_netns(ns: &str, addr: &str) -> Nginx {
        Self::launch(NginxOptions::default(), Some((ns, addr)))
    }

    fn launch(o: NginxOptions, netns: Option<(&str, &str)>) -> Nginx {
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
        let tls_port = o.tls.then(free_port);
        let h2c_port = o.http2.then(free_port);
        let h2 = if o.http2 { " http2" } else { "" };
        let h2c_listen = h2c_port.map(|p| format!("listen {host}:{p} http2;")).unwrap_or_default();
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
                    "server {{ listen 127.0.0.1:{p} ssl{h2}; ssl_certificate {d}/cert.pem; ssl_certificate_key {d}/key.pem; root {d}/www; location / {{ }} }}",
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
    log_format timed '$msec $status $request_uri $server_protocol';
    access_log {d}/logs/access.log timed;
    sendfile {sendfile};
    tcp_nodelay on;
    keepalive_timeout 65;
    keepalive_requests {keepalive_requests};
    http2_max_concurrent_streams {max_streams};
    default_type application/octet-stream;
    types {{ text/html html; }}
    client_body_temp_path {d}/tmp/body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    server {{
        listen {host}:{port} backlog=4096;
        {h2c_listen}
        root {d}/www;
        location = /fail {{ return 503; }}
        location / {{ }}
    }}
    {tls_server}
}}
"#,
            d = d.display(),
            keepalive_requests = o.keepalive_requests.unwrap_or(1_000_000),
            max_streams = o.max_concurrent_streams.unwrap_or(128),
            // With sendfile nginx 1.22 writes an HTTP/2 response's DATA apart
            // from its HEADERS, with Nagle on: the DATA waits for the client's
            // delayed ACK, 40 ms a response at one stream (h2load sees the same).
            sendfile = if o.http2 { "off" } else { "on" },
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
        for p in tls_port.into_iter().chain(h2c_port).filter(|_| netns.is_none()) {
            assert!(wait_listening(p, Duration::from_secs(10)), "nginx did not listen on {host}:{p}");
        }
        Nginx { port, host, tls_port, h2c_port, dir, master_pid }
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
                let protocol = it.next().unwrap_or("").to_string();
                Some(LogLine { unix_ms, status, uri, protocol })
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
