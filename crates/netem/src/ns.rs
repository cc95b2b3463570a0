//! The clients' namespace: its name (`scalelab-<pid>`, under /run/netns as
//! `ip netns` keeps them), the /30 it uses, and the removal of namespaces
//! whose owner is gone (killed before it could clean up): those whose lock
//! nobody holds (`lock`). A namespace with no lock file at all was made by
//! a scalelab older than the locks: it is kept while a process of its pid
//! exists (a reused pid keeps it a while longer; a live run's is never
//! taken).

use crate::error::Error;
use crate::lock::RunDir;
use crate::sys::ip;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where `ip netns` keeps named namespaces.
pub const NETNS_DIR: &str = "/run/netns";
/// The prefix of every namespace scalelab creates.
pub const PREFIX: &str = "scalelab-";

/// The namespace name of process `pid`.
pub fn name_of(pid: u32) -> String {
    format!("{PREFIX}{pid}")
}

/// The file that holds namespace `name` open.
pub fn path_of(name: &str) -> PathBuf {
    Path::new(NETNS_DIR).join(name)
}

/// The lock file, in the runtime directory, that the owner of namespace
/// `name` holds for the namespace's lifetime.
pub fn lock_name(name: &str) -> String {
    format!("{name}.lock")
}

/// The pid in a namespace name or lock file name of ours.
fn pid_in(file: &str) -> Option<u32> {
    file.strip_prefix(PREFIX)?.trim_end_matches(".lock").parse().ok()
}

/// Removes every `scalelab-<pid>` namespace whose lock nobody holds (and one
/// of our own pid, left by an earlier process: the caller holds that lock),
/// with their lock files; returns the names of the namespaces removed. Each
/// is removed while its lock is held here, so its pid's next owner waits.
/// One without a lock file (an older scalelab's) is removed only when no
/// process of its pid exists.
pub fn remove_stale(own_pid: u32, dir: &RunDir) -> Vec<String> {
    let mut pids: Vec<u32> = std::fs::read_dir(NETNS_DIR)
        .map(|d| d.flatten().filter_map(|e| pid_in(&e.file_name().to_string_lossy())).collect())
        .unwrap_or_default();
    pids.extend(dir.names().iter().filter(|n| n.ends_with(".lock")).filter_map(|n| pid_in(n)));
    pids.sort_unstable();
    pids.dedup();
    let mut removed = Vec::new();
    for pid in pids {
        let name = name_of(pid);
        // Ours is held by the caller; another's is free only when its owner is gone.
        let locked = dir.has(&lock_name(&name));
        let held = if pid == own_pid { Ok(None) } else { dir.lock(&lock_name(&name), Duration::ZERO) };
        let older_owner_lives = !locked && Path::new(&format!("/proc/{pid}")).exists();
        let stale = pid == own_pid || (matches!(held, Ok(Some(_))) && !older_owner_lives);
        // Another run may be removing the same one: only what we removed is reported.
        if stale && path_of(&name).exists() && ip(&["netns", "del", &name]).is_ok() {
            removed.push(name);
        }
    }
    removed
}

/// A /30 for the wire: host side `.1`, namespace side `.2`, chosen in
/// 10.253.0.0/16 from the pid and moved on past any address or route the
/// host already has there (another scalelab's, or the site's).
pub fn free_net(pid: u32) -> Result<(Ipv4Addr, Ipv4Addr), Error> {
    let used = format!("{}\n{}", ip(&["-4", "-o", "addr", "show"])?, ip(&["-4", "route", "show", "table", "all"])?);
    let taken = |net: Ipv4Addr| used.split_whitespace().any(|w| overlaps(w, net));
    for i in 0..16384u32 {
        let index = (pid + i) % 16384;
        let base = u32::from(Ipv4Addr::new(10, 253, 0, 0)) + index * 4;
        if !taken(Ipv4Addr::from(base)) {
            return Ok((Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2)));
        }
    }
    Err(Error::Setup("no free /30 in 10.253.0.0/16 for the client network".into()))
}

/// Whether the word `A.B.C.D[/len]` of `ip` output overlaps the /30 at `net`.
fn overlaps(word: &str, net: Ipv4Addr) -> bool {
    let (addr, len) = word.split_once('/').unwrap_or((word, "32"));
    let (Ok(addr), Ok(len)) = (addr.parse::<Ipv4Addr>(), len.parse::<u32>()) else { return false };
    if len == 0 || len > 32 {
        return false;
    }
    // Two prefixes overlap when they agree on the shorter one's bits.
    let len = len.min(30);
    let mask = u32::MAX << (32 - len);
    u32::from(addr) & mask == u32::from(net) & mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slash_30_overlaps_what_covers_it_and_nothing_else() {
        let net = Ipv4Addr::new(10, 253, 1, 4);
        assert!(overlaps("10.253.1.5", net));
        assert!(overlaps("10.253.1.6/32", net));
        assert!(overlaps("10.0.0.0/8", net));
        assert!(!overlaps("10.253.1.8/30", net));
        assert!(!overlaps("192.168.0.0/16", net));
        assert!(!overlaps("default", net));
        assert!(!overlaps("0.0.0.0/0", net), "a default route does not hold the /30");
    }
}
