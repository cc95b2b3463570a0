//! The server process's reading, and the specimen's own counters.

use super::{Timestamp, Unavailable};
use serde::{Deserialize, Serialize};

/// `/proc/PID/io`: bytes through syscalls (`rchar`/`wchar`) and bytes that
/// reached the block layer (`read_bytes`/`write_bytes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessIo {
    pub rchar: u64,
    pub wchar: u64,
    pub syscr: u64,
    pub syscw: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// One reading of the server process. Counters are raw; see
/// `analyze`'s `process_rates`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessSample {
    pub at: Timestamp,
    pub pid: u32,
    /// Unit of the tick counters (`USER_HZ`).
    pub user_hz: u32,
    /// False once the process has exited (or its pid was reused).
    pub alive: bool,
    /// User CPU ticks of the whole process, exited threads included.
    pub cpu_user_ticks: Option<u64>,
    /// System CPU ticks of the whole process, exited threads included.
    pub cpu_system_ticks: Option<u64>,
    /// Threads of the process (the server tree's sample: of all its processes).
    pub threads: Option<u64>,
    /// Voluntary context switches (blocking: locks, I/O, waits) of every
    /// thread seen since the sampler started, each counted from its creation.
    /// The kernel keeps no per-process total readable from `/proc`, and a
    /// plain sum over live threads would drop when threads exit; this
    /// accumulated sum never goes backwards.
    pub voluntary_ctxt_switches: Option<u64>,
    /// Involuntary context switches (preempted), accumulated the same way.
    pub nonvoluntary_ctxt_switches: Option<u64>,
    /// Resident memory (the server tree's sample: summed over its processes).
    pub rss_kib: Option<u64>,
    pub open_fds: Option<u64>,
    pub io: Option<ProcessIo>,
    /// Sources that became unavailable (or changed reason) at this sample.
    pub newly_unavailable: Vec<Unavailable>,
}

/// One reading of the specimen's counters, as stored (raw, cumulative).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SpecimenSample {
    pub unix_ms: i64,
    pub requests: u64,
    pub lock_waits: u64,
    pub spin_rounds: u64,
    pub fsyncs: u64,
    pub connections: u64,
    /// `herd` mode: times a worker woke from epoll, and of those the ones
    /// that found no connection to accept (0 in other modes, and in
    /// readings stored before these were counted).
    #[serde(default)]
    pub wakeups: u64,
    #[serde(default)]
    pub empty_wakeups: u64,
}
