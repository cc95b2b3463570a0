//! Headless Chromium driven over the DevTools protocol through
//! `--remote-debugging-pipe` (JSON messages separated by NUL bytes on file
//! descriptors 3 and 4): no port, no websocket client, nothing else to
//! install. Used to load a report as a browser would and listen to what
//! it logs and requests.

use serde_json::{json, Value};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// The Chromium binary Debian installs (`scripts/test.sh` installs the package when missing).
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// A running headless Chromium and one page session.
pub struct Browser {
    child: Child,
    to: File,
    from: Receiver<Value>,
    next_id: u64,
    session: Option<String>,
    /// Every event received so far (method and params), in order.
    pub events: Vec<Value>,
}

fn pipe() -> (i32, i32) {
    let mut fds = [0i32; 2];
    // SAFETY: fds is a valid array of two ints for pipe2 to fill.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    (fds[0], fds[1])
}

impl Browser {
    /// Starts Chromium with the flags the report test needs and a fresh
    /// profile in `profile`, and opens a page session.
    pub fn start(profile: &Path) -> Browser {
        assert!(
            Path::new(CHROMIUM).exists(),
            "{CHROMIUM} is missing: install Debian's chromium package (scripts/test.sh does) — this test does not skip"
        );
        let (cmd_r, cmd_w) = pipe();
        let (out_r, out_w) = pipe();
        let mut command = Command::new(CHROMIUM);
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--disable-default-apps",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: only async-signal-safe calls (fcntl, dup2) between fork and
        // exec. The ends are first copied above 10, so that dup2 onto 3 and 4
        // never meets its own fd (which would keep close-on-exec set) nor
        // overwrites the other end before it is copied.
        unsafe {
            command.pre_exec(move || {
                let a = libc::fcntl(cmd_r, libc::F_DUPFD_CLOEXEC, 10);
                let b = libc::fcntl(out_w, libc::F_DUPFD_CLOEXEC, 10);
                if a < 0 || b < 0 || libc::dup2(a, 3) < 0 || libc::dup2(b, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("starting chromium");
        // SAFETY: these fds are ours; the child has its own copies.
        let (to, from_file) = unsafe {
            libc::close(cmd_r);
            libc::close(out_w);
            (File::from_raw_fd(cmd_w), File::from_raw_fd(out_r))
        };
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut from_file = from_file;
            let mut buf = Vec::new();
            let mut chunk = [0u8; 65536];
            loop {
                match from_file.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
                while let Some(end) = buf.iter().position(|&b| b == 0) {
                    let msg: Vec<u8> = buf.drain(..=end).collect();
                    if let Ok(v) = serde_json::from_slice::<Value>(&msg[..msg.len() - 1]) {
                        if tx.send(v).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let mut b = Browser { child, to, from: rx, next_id: 0, session: None, events: Vec::new() };
        let target = b.call("Target.createTarget", json!({"url": "about:blank"}));
        let target_id = target["targetId"].as_str().expect("targetId").to_string();
        let attached = b.call("Target.attachToTarget", json!({"targetId": target_id, "flatten": true}));
        b.session = Some(attached["sessionId"].as_str().expect("sessionId").to_string());
        b
    }

    fn send(&mut self, method: &str, params: Value) -> u64 {
        let id = self.try_send(method, params).unwrap_or_else(|e| panic!("writing {method} to chromium (did it exit?): {e}"));
        id
    }

    fn try_send(&mut self, method: &str, params: Value) -> std::io::Result<u64> {
        self.next_id += 1;
        let mut msg = json!({"id": self.next_id, "method": method, "params": params});
        if let (Some(s), false) = (&self.session, method.starts_with("Target.")) {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).expect("JSON");
        bytes.push(0);
        self.to.write_all(&bytes)?;
        Ok(self.next_id)
    }

    fn recv(&mut self, deadline: Instant) -> Option<Value> {
        let left = deadline.saturating_duration_since(Instant::now());
        self.from.recv_timeout(left).ok()
    }

    /// Sends a command and waits for its result (events arriving meanwhile are kept).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let msg = self.recv(deadline).unwrap_or_else(|| panic!("no answer from chromium to {method}"));
            if msg["id"].as_u64() == Some(id) {
                if let Some(e) = msg.get("error") {
                    panic!("{method} failed: {e}");
                }
                return msg["result"].clone();
            }
            if msg.get("method").is_some() {
                self.events.push(msg);
            }
        }
    }

    /// Waits for an event named `method` (or the timeout), keeping every event seen.
    pub fn wait_event(&mut self, method: &str, timeout: Duration) -> bool {
        if self.events.iter().any(|e| e["method"] == method) {
            return true;
        }
        let deadline = Instant::now() + timeout;
        while let Some(msg) = self.recv(deadline) {
            if msg.get("method").is_some() {
                let hit = msg["method"] == method;
                self.events.push(msg);
                if hit {
                    return true;
                }
            }
        }
        false
    }

    /// Collects the events that arrive during `d`.
    pub fn settle(&mut self, d: Duration) {
        let deadline = Instant::now() + d;
        while let Some(msg) = self.recv(deadline) {
            if msg.get("method").is_some() {
                self.events.push(msg);
            }
        }
    }

    /// Events named `method`.
    pub fn events_named(&self, method: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["method"] == method).collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.try_send("Browser.close", json!({}));
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
