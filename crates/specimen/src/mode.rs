//! The specimen's modes.

use std::fmt;
use std::str::FromStr;

/// How the specimen serves requests; each mode is a known cause of poor scaling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// No shared state: throughput rises until the CPUs are busy. One event
    /// loop per CPU (as nginx runs one worker per core): a thousand slow
    /// connections cost sockets, not threads.
    Scales,
    /// Every request holds one process-wide mutex for its whole work (a
    /// "funnel" lock): throughput stops at one CPU's worth, latency grows.
    GlobalLock,
    /// One thread serves every connection.
    SingleThread,
    /// Each request appends to a file and fsyncs it.
    Disk,
    /// A spin-then-yield lock around the work: CPU burnt while waiting.
    Spin,
    /// Scales, but stops answering for `stall_for` every `stall_every`
    /// (a GC pause, a checkpoint): the coordinated-omission demonstration.
    Stall,
    /// Each connection holds a thread for its whole life, up to
    /// [`THREAD_CAP`](crate::server::THREAD_CAP) threads (as Apache prefork
    /// or worker with MaxRequestWorkers): slow clients pin threads, and
    /// beyond the cap new connections wait in the listen queue.
    ThreadPerConnection,
    /// A fixed pool of `--workers` threads, each taking a connection from
    /// the listener and holding it until the client closes it (Apache
    /// prefork's shape): beyond the workers, clients wait in the listen
    /// queue, served nothing while keep-alive connections hold the pool.
    Pool,
    /// `--workers` threads each waiting in its own epoll on the one
    /// listener, without `EPOLLEXCLUSIVE`: every new connection wakes all
    /// of them, one accepts it and the rest go back to sleep (the
    /// thundering herd). `--fix` adds `EPOLLEXCLUSIVE`: one is woken.
    Herd,
}

impl Mode {
    /// Every mode, for help texts and tests.
    pub const ALL: [Mode; 9] = [
        Mode::Scales,
        Mode::GlobalLock,
        Mode::SingleThread,
        Mode::Disk,
        Mode::Spin,
        Mode::Stall,
        Mode::ThreadPerConnection,
        Mode::Pool,
        Mode::Herd,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Scales => "scales",
            Mode::GlobalLock => "global-lock",
            Mode::SingleThread => "single-thread",
            Mode::Disk => "disk",
            Mode::Spin => "spin",
            Mode::Stall => "stall",
            Mode::ThreadPerConnection => "thread-per-connection",
            Mode::Pool => "pool",
            Mode::Herd => "herd",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown mode name; the message lists the valid ones.
#[derive(Debug, thiserror::Error)]
#[error("unknown specimen mode '{0}': use one of scales, global-lock, single-thread, disk, spin, stall, thread-per-connection, pool, herd")]
pub struct UnknownMode(pub String);

impl FromStr for Mode {
    type Err = UnknownMode;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Mode::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| UnknownMode(s.to_string()))
    }
}
