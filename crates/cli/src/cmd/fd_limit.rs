//! The open-file check before any load: every client holds a connection, so
//! a sweep whose clients outnumber the descriptors this process may open
//! would spin on EMFILE (300k+ errors/s, probes starved) and measure nothing.

use crate::error::bad;
use scalelab_drive::cpu;

/// Descriptors kept for everything but the clients and the server's
/// per-thread probe files: stdio, the store and its journal, the system
/// probe's /proc files, sock_diag, the database probe, the specimen's pipe,
/// files opened for one read.
pub const FIXED_FDS: u64 = 64;

/// The least the two per-thread probes (process and thread samplers of the
/// server) keep open each; past their budget they open files per read.
pub const MIN_PROBE_FDS: u64 = 16;

/// Raises the soft open-file limit to the hard one (as before), then checks
/// that `max_clients` connections on `threads` event loops, the probes and
/// the rest fit. Returns the per-thread file budget each of the server's two
/// root samplers may keep (what is left, split between them, at most a
/// quarter of the limit as they take by default); refuses (exit 2, nothing
/// stored) with the figures and the fix when they do not fit.
pub fn check(max_clients: u32, threads: u32) -> anyhow::Result<usize> {
    cpu::raise_open_files_limit();
    let Some(limit) = cpu::open_files_limit() else {
        return Ok(MIN_PROBE_FDS as usize);
    };
    let loops = u64::from(threads.min(max_clients.max(1)));
    // Each event loop holds an epoll descriptor and a waker.
    let clients = u64::from(max_clients) + 2 * loops;
    let need = clients + FIXED_FDS + 2 * MIN_PROBE_FDS;
    if need > limit {
        let hard = cpu::open_files_hard_limit().unwrap_or(limit);
        return Err(bad(format!(
            "{max_clients} clients need about {need} open files ({max_clients} connections, {} for {loops} client threads, {} for the probes and the store) but this process may open {limit} (hard limit, `ulimit -Hn`: {hard}): raise the hard limit (as root: `ulimit -n 65536` before the run, LimitNOFILE= for a service, nofile in /etc/security/limits.conf) or use fewer clients",
            2 * loops,
            FIXED_FDS + 2 * MIN_PROBE_FDS,
        )));
    }
    let left = (limit - clients - FIXED_FDS) / 2;
    Ok(left.min(limit / 4).max(MIN_PROBE_FDS) as usize)
}
