//! A private Apache httpd: 127.0.0.1 on a free port, config, pid, logs,
//! mutexes and docroot inside a temp dir; prefork or worker MPM.

use crate::{find_program, free_port, wait_listening};
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// How Apache serves connections.
#[derive(Clone, Copy, Debug)]
pub enum Mpm {
    /// A process per connection.
    Prefork,
    /// Processes of `threads_per_child` threads, a thread per connection.
    Worker { threads_per_child: u32 },
}

/// A running Apache, stopped (and its dir removed) on drop.
pub struct Apache {
    pub port: u16,
    dir: tempfile::TempDir,
    master_pid: i32,
}

impl Apache {
    /// Starts Apache with `start_servers` child processes kept ready (and at
    /// most 256 connections); panics with a clear message when Apache is
    /// not installed (the README's test command installs it).
    pub fn start(mpm: Mpm, start_servers: u32) -> Apache {
        Self::start_limited(mpm, start_servers, 256)
    }

    /// Starts Apache serving at most `max_workers` connections at once
    /// (prefork: that many processes, all started; worker: processes of
    /// `threads_per_child` threads up to it), as a server whose pool is
    /// smaller than its clients: the rest wait in its listen queue.
    pub fn start_with_workers(mpm: Mpm, max_workers: u32) -> Apache {
        Self::start_limited(mpm, max_workers, max_workers)
    }

    fn start_limited(mpm: Mpm, start_servers: u32, max_workers: u32) -> Apache {
        let bin = find_program("apache2")
            .or_else(|| find_program("httpd"))
            .expect("Apache is not installed: run ./scripts/test.sh, which installs apache2-bin");
        let modules = ["/usr/lib/apache2/modules", "/usr/lib64/httpd/modules", "/usr/lib/httpd/modules"]
            .into_iter()
            .map(Path::new)
            .find(|p| p.join("mod_mpm_prefork.so").exists())
            .expect("Apache's modules (mod_mpm_prefork.so) not found");
        let dir = tempfile::Builder::new().prefix("scalelab-apache-").tempdir().expect("temp dir");
        let d = dir.path();
        for sub in ["www", "logs"] {
            fs::create_dir_all(d.join(sub)).expect("apache dirs");
        }
        // Children run as nobody when the parent is root: the docroot must be readable.
        crate::nginx::set_mode(d, 0o755);
        crate::nginx::set_mode(&d.join("www"), 0o755);
        fs::write(d.join("www/index.html"), "<!doctype html><p>scalelab</p>\n").expect("index.html");
        crate::nginx::set_mode(&d.join("www/index.html"), 0o644);
        let port = free_port();
        let mpm_conf = match mpm {
            Mpm::Prefork => format!(
                "LoadModule mpm_prefork_module {m}/mod_mpm_prefork.so\nStartServers {start_servers}\nMinSpareServers 1\nMaxSpareServers {max_workers}\nServerLimit {max_workers}\nMaxRequestWorkers {max_workers}\n",
                m = modules.display()
            ),
            Mpm::Worker { threads_per_child: t } => format!(
                "LoadModule mpm_worker_module {m}/mod_mpm_worker.so\nStartServers {start}\nThreadsPerChild {t}\nThreadLimit {t}\nMinSpareThreads 1\nMaxSpareThreads {max}\nServerLimit {servers}\nMaxRequestWorkers {max}\n",
                m = modules.display(),
                start = start_servers.min(max_workers / t.max(1)).max(1),
                servers = (max_workers / t.max(1)).max(1),
                max = (max_workers / t.max(1)).max(1) * t
            ),
        };
        // SAFETY: geteuid has no preconditions.
        let user = if unsafe { libc::geteuid() } == 0 { "User nobody\nGroup nogroup\n" } else { "" };
        let conf = format!(
            "ServerRoot {d}\n{mpm_conf}LoadModule authz_core_module {m}/mod_authz_core.so\nServerName localhost\nListen 127.0.0.1:{port}\nPidFile {d}/httpd.pid\nErrorLog {d}/logs/error.log\nMutex file:{d}\n{user}DocumentRoot {d}/www\n<Directory {d}/www>\n  Require all granted\n</Directory>\nKeepAliveTimeout 65\nMaxKeepAliveRequests 0\n",
            d = d.display(),
            m = modules.display()
        );
        fs::write(d.join("httpd.conf"), conf).expect("httpd.conf");
        let out = Command::new(&bin).arg("-f").arg(d.join("httpd.conf")).args(["-k", "start"]).output().expect("running apache2");
        assert!(
            out.status.success(),
            "apache failed to start: {}{}",
            String::from_utf8_lossy(&out.stderr),
            fs::read_to_string(d.join("logs/error.log")).unwrap_or_default()
        );
        assert!(wait_listening(port, Duration::from_secs(10)), "apache did not listen on {port}");
        let mut master_pid = 0;
        for _ in 0..100 {
            if let Some(pid) = fs::read_to_string(d.join("httpd.pid")).ok().and_then(|s| s.trim().parse().ok()) {
                master_pid = pid;
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(master_pid > 0, "apache wrote no pid file");
        Apache { port, dir, master_pid }
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{}", self.port, path)
    }

    /// The parent process id.
    pub fn pid(&self) -> i32 {
        self.master_pid
    }

    /// The folder Apache lives in.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Apache {
    fn drop(&mut self) {
        let children = crate::children_of(self.master_pid);
        // SAFETY: signalling the Apache this harness started, then its children.
        unsafe { libc::kill(self.master_pid, libc::SIGTERM) };
        for _ in 0..150 {
            if !crate::pid_alive(self.master_pid) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        for pid in std::iter::once(self.master_pid).chain(children) {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}
