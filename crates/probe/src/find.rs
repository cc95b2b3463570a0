//! Finding the server process: the owner of a listening TCP port, or a
//! process by name; [`server_pid`]: the server of a target.
//!
//! A listening socket's inode is in `/proc/net/tcp{,6}`; the process holding
//! it has a `/proc/PID/fd/N -> socket:[INODE]` link. Pre-forking servers
//! (nginx, Apache) share the socket between a master and its workers, so all
//! holders are returned and the one whose parent is not a holder is `pid`.

use crate::read::{read_into, ProbeError};
use crate::sockets::{listening_inodes, scan_tcp, TCP_LISTEN};
use crate::Roots;
use std::fs;
use std::io::ErrorKind;
use std::path::Path;

/// The server process found, and every process sharing what identified it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerProcess {
    /// The main process: the holder whose parent is not itself a holder
    /// (the master of a pre-forking server), lowest pid on ties.
    pub pid: u32,
    /// All matching processes, sorted.
    pub all: Vec<u32>,
}

/// Why no server process was found.
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    /// No socket listens on the port (in this network namespace).
    #[error("nothing listens on TCP port {0} (checked /proc/net/tcp and tcp6)")]
    NoListener(u16),
    /// A socket listens, but no readable `/proc/PID/fd` holds it.
    #[error(
        "port {port} is listening but no visible process holds its socket \
         ({skipped} processes' fd lists were unreadable: run as root or as the server's user)"
    )]
    NoOwner {
        /// The port asked for.
        port: u16,
        /// Processes whose descriptors could not be listed.
        skipped: usize,
    },
    /// No process has that `comm` or program name.
    #[error("no process named {0:?}")]
    NoProcess(String),
    /// `/proc` itself could not be read.
    #[error(transparent)]
    Read(#[from] ProbeError),
}

/// Numeric entries of the proc root: the pids.
fn pids(proc_root: &Path) -> Result<Vec<u32>, ProbeError> {
    let dir = fs::read_dir(proc_root).map_err(|source| ProbeError::Read { path: proc_root.to_path_buf(), source })?;
    let mut v: Vec<u32> = dir.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect();
    v.sort_unstable();
    Ok(v)
}

/// Parent pid from `/proc/PID/stat` (field 4, after the parenthesised name).
fn ppid(proc_root: &Path, pid: u32, buf: &mut String) -> Option<u32> {
    read_into(&proc_root.join(pid.to_string()).join("stat"), buf).ok()?;
    let after = &buf[buf.rfind(')')? + 1..];
    after.split_ascii_whitespace().nth(1)?.parse().ok()
}

fn pick_main(proc_root: &Path, all: Vec<u32>) -> ServerProcess {
    let mut buf = String::new();
    let pid =
        all.iter().copied().find(|&p| !matches!(ppid(proc_root, p, &mut buf), Some(parent) if all.contains(&parent))).unwrap_or(all[0]);
    ServerProcess { pid, all }
}

/// The process(es) holding the socket listening on `port` (IPv4 or IPv6).
pub fn find_by_port(roots: &Roots, port: u16) -> Result<ServerProcess, FindError> {
    let mut buf = String::new();
    let mut inodes = Vec::new();
    for file in ["net/tcp", "net/tcp6"] {
        let path = roots.proc.join(file);
        match read_into(&path, &mut buf) {
            Ok(()) => listening_inodes(&buf, port, &mut inodes).map_err(|w| ProbeError::parse(&path, w))?,
            Err(ProbeError::Read { source, .. }) if file == "net/tcp6" && source.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
    }
    if inodes.is_empty() {
        return Err(FindError::NoListener(port));
    }
    let mut all = Vec::new();
    let mut skipped = 0;
    for pid in pids(&roots.proc)? {
        let Ok(fds) = fs::read_dir(roots.proc.join(pid.to_string()).join("fd")) else {
            skipped += 1;
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            fs::read_link(fd.path()).ok().is_some_and(|target| {
                let t = target.to_string_lossy();
                t.strip_prefix("socket:[")
                    .and_then(|r| r.strip_suffix(']'))
                    .and_then(|n| n.parse::<u64>().ok())
                    .is_some_and(|n| inodes.contains(&n))
            })
        });
        if holds {
            all.push(pid);
        }
    }
    if all.is_empty() {
        return Err(FindError::NoOwner { port, skipped });
    }
    Ok(pick_main(&roots.proc, all))
}

/// The addresses `pid` listens on (TCP, IPv4 and IPv6): its socket
/// descriptors matched against the listening rows of `net/tcp{,6}`. They
/// are where its clients connect, so the sockets a load generator leaves in
/// TIME_WAIT toward this server are those whose far end is one of them.
pub fn listening_addrs(roots: &Roots, pid: u32) -> Result<Vec<std::net::SocketAddr>, FindError> {
    let dir = roots.proc.join(pid.to_string()).join("fd");
    let fds = fs::read_dir(&dir).map_err(|source| ProbeError::Read { path: dir.clone(), source })?;
    let inodes: Vec<u64> = fds
        .flatten()
        .filter_map(|fd| {
            let target = fs::read_link(fd.path()).ok()?;
            target.to_str()?.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
        })
        .collect();
    let mut buf = String::new();
    let mut out = Vec::new();
    for file in ["net/tcp", "net/tcp6"] {
        let path = roots.proc.join(file);
        match read_into(&path, &mut buf) {
            Ok(()) => scan_tcp(&buf, |e| {
                if e.state == TCP_LISTEN && e.inode != 0 && inodes.contains(&e.inode) {
                    out.push(std::net::SocketAddr::new(e.local, e.local_port));
                }
            })
            .map(|_| ())
            .map_err(|w| ProbeError::parse(&path, w))?,
            Err(ProbeError::Read { source, .. }) if file == "net/tcp6" && source.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(out)
}

/// Processes whose `comm` is `name`, or whose first argument's file name is
/// `name` (`comm` is cut at 15 bytes).
pub fn find_by_name(roots: &Roots, name: &str) -> Result<ServerProcess, FindError> {
    let mut buf = String::new();
    let mut all = Vec::new();
    for pid in pids(&roots.proc)? {
        let dir = roots.proc.join(pid.to_string());
        let comm_matches = read_into(&dir.join("comm"), &mut buf).is_ok() && buf.trim_end() == name;
        let argv0_matches = || {
            fs::read(dir.join("cmdline")).ok().is_some_and(|c| {
                let argv0 = c.split(|&b| b == 0).next().unwrap_or_default();
                let base = argv0.rsplit(|&b| b == b'/').next().unwrap_or_default();
                base == name.as_bytes()
            })
        };
        if comm_matches || argv0_matches() {
            all.push(pid);
        }
    }
    if all.is_empty() {
        return Err(FindError::NoProcess(name.to_string()));
    }
    Ok(pick_main(&roots.proc, all))
}

/// The server process of a target on this machine: the specimen child, the
/// `--server-pid` given, or the owner of the target's listening port when
/// the target is on loopback. `Err` says why none was found.
pub fn server_pid(target: Option<&scalelab_core::Target>, specimen_pid: Option<u32>, given: Option<u32>) -> Result<u32, String> {
    if let Some(p) = given.or(specimen_pid) {
        return Ok(p);
    }
    let target = target.ok_or("the target is not a URL")?;
    let port = target.port().ok_or("no port in the target")?;
    if !target.is_loopback() {
        return Err(format!(
            "{} is not this machine, so the server was not observed: run a --server-agent on its host (docs/agents.md), or pass --server-pid for a local server",
            target.host()
        ));
    }
    find_by_port(&Roots::default(), port).map(|s| s.pid).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server of a parsed target: the given pid first, a remote host
    /// refused with the fix, a loopback port found through its listener.
    #[test]
    fn server_pid_from_a_parsed_target() {
        use scalelab_core::Target;
        let remote = Target::parse("http://u:pw@10.1.2.3:8080/").unwrap();
        assert_eq!(server_pid(Some(&remote), None, Some(7)), Ok(7));
        assert_eq!(server_pid(Some(&remote), Some(9), None), Ok(9));
        let e = server_pid(Some(&remote), None, None).unwrap_err();
        assert_eq!(
            e,
            "10.1.2.3 is not this machine, so the server was not observed: run a --server-agent on its host (docs/agents.md), or pass --server-pid for a local server"
        );
        assert_eq!(server_pid(None, None, None).unwrap_err(), "the target is not a URL");
        assert_eq!(server_pid(Some(&Target::specimen("scales")), None, None).unwrap_err(), "no port in the target");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        for url in [format!("http://127.0.0.1:{port}/"), format!("postgres://u:pw@localhost:{port}/db")] {
            let local = Target::parse(&url).unwrap();
            assert_eq!(server_pid(Some(&local), None, None), Ok(std::process::id()), "{url}");
        }
    }
}
