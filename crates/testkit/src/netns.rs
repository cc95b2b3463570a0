//! Hosts made of network namespaces: one namespace per host, each with a
//! veth pair to a bridge that lives in a namespace of its own, addresses
//! from 10.231.X.0/24 that exist only inside these namespaces (the machine's
//! own namespace has neither the bridge nor the addresses). Everything is
//! removed on drop, also when a test panics: every process left in the
//! namespaces is killed, then the namespaces are deleted (their veths go
//! with them).

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A set of namespace hosts on one bridge, deleted on drop.
pub struct Hosts {
    prefix: String,
    hosts: Vec<String>,
    subnet: String,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).stdin(Stdio::null()).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

impl Hosts {
    /// Creates one namespace per name (and the bridge's). `Err` says why when
    /// namespaces cannot be made here (not root, no `ip`): the caller skips.
    pub fn create(names: &[&str]) -> Result<Hosts, String> {
        let prefix = format!("sl{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let bridge = format!("{prefix}-br");
        ip(&["netns", "add", &bridge])?;
        // From here on, drop cleans up whatever was made.
        let mut hosts = Hosts { prefix, hosts: Vec::new(), subnet: format!("10.231.{}", std::process::id() % 250) };
        let nsb = |args: &[&str]| ip(&[&["-n", bridge.as_str()][..], args].concat());
        nsb(&["link", "add", "br0", "type", "bridge"])?;
        nsb(&["link", "set", "br0", "up"])?;
        for (i, name) in names.iter().enumerate() {
            let ns = format!("{}-{name}", hosts.prefix);
            ip(&["netns", "add", &ns])?;
            hosts.hosts.push(name.to_string());
            let port = format!("v{i}");
            ip(&["link", "add", "eth0", "netns", &ns, "type", "veth", "peer", "name", &port, "netns", &bridge])?;
            nsb(&["link", "set", &port, "master", "br0", "up"])?;
            let addr = format!("{}/24", hosts.addr(name));
            for args in [&["addr", "add", &addr, "dev", "eth0"][..], &["link", "set", "eth0", "up"], &["link", "set", "lo", "up"]] {
                ip(&[&["-n", ns.as_str()][..], args].concat())?;
            }
        }
        Ok(hosts)
    }

    /// The namespace of host `name`.
    pub fn ns(&self, name: &str) -> String {
        assert!(self.hosts.iter().any(|h| h == name), "no host {name}");
        format!("{}-{name}", self.prefix)
    }

    /// Host `name`'s address (10.231.X.N, N its place in the list plus one).
    pub fn addr(&self, name: &str) -> String {
        let i = self.hosts.iter().position(|h| h == name).unwrap_or_else(|| panic!("no host {name}"));
        format!("{}.{}", self.subnet, i + 1)
    }

    /// `program` to run inside host `name`'s namespace (`ip netns exec`,
    /// which execs: the child's pid is the program's).
    pub fn command(&self, name: &str, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns(name)]).arg(program);
        c
    }

    /// Every namespace made (the hosts' and the bridge's).
    pub fn namespaces(&self) -> Vec<String> {
        let mut v: Vec<String> = self.hosts.iter().map(|h| format!("{}-{h}", self.prefix)).collect();
        v.push(format!("{}-br", self.prefix));
        v
    }
}

/// The namespaces `ip netns list` shows.
pub fn list() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().map(|o| o.stdout).unwrap_or_default();
    String::from_utf8_lossy(&out).lines().filter_map(|l| l.split_whitespace().next()).map(str::to_string).collect()
}

/// Pids of the processes in namespace `ns`.
pub fn pids(ns: &str) -> Vec<i32> {
    let out = Command::new("ip").args(["netns", "pids", ns]).output().map(|o| o.stdout).unwrap_or_default();
    String::from_utf8_lossy(&out).lines().filter_map(|l| l.trim().parse().ok()).collect()
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for ns in self.namespaces() {
            for pid in pids(&ns) {
                // SAFETY: a process inside a namespace this test made.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            let _ = ip(&["netns", "del", &ns]);
        }
    }
}
