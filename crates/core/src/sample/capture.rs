//! [`CaptureSample`]: what a trigger (`watch --trigger`) captured when its
//! condition held: the marked interval, the figure that held, the server's
//! threads grouped by kernel stack, and the database's own lock views. The
//! store keeps it as a sample of kind `capture`; `show` lists them.

use serde::{Deserialize, Serialize};

/// One capture: a marked interval of a recording.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CaptureSample {
    /// The capture's number in the run (0-based).
    pub index: usize,
    /// When the condition started to hold, Unix milliseconds.
    pub from_unix_ms: i64,
    /// When it had held for its duration and the capture started.
    pub unix_ms: i64,
    /// The trigger as given (`futex>=50% for 5s`).
    pub trigger: String,
    /// The figure's value in the second that fired it.
    pub value: f64,
    /// The figure's unit (`%`, `/s`, `ms`).
    pub unit: String,
    /// The server's threads grouped by state and kernel stack over
    /// `looks` snapshots, most thread-looks first; empty when there is no
    /// server process.
    pub threads: Vec<ThreadGroup>,
    /// How many snapshots of the threads were taken (100 ms apart).
    #[serde(default)]
    pub looks: u32,
    /// The database's lock views (`pg_locks`, InnoDB lock waits), one line
    /// per distinct wait; None when no database is probed.
    pub db_locks: Option<Vec<DbLockRow>>,
    /// The profile window taken for it (`--profile`): the `step` of its
    /// stored profile, 0-based (`scalelab profile RUN --step N+1` shows it).
    pub profile_window: Option<usize>,
    /// Parts that could not be taken, and why (`thread stacks: ...`).
    pub unavailable: Vec<String>,
}

/// Threads that were in the same state with the same kernel stack.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadGroup {
    /// Thread-looks that saw it: threads so, summed over the snapshots
    /// (one snapshot alone misleads: a thread just woken shows as running).
    pub threads: u32,
    /// Their state letter from `/proc/PID/task/TID/stat` (`R`, `S`, `D`, ...).
    pub state: String,
    /// The kernel function they wait in (`wchan`), empty when running.
    pub wchan: String,
    /// Kernel frames, innermost first, offsets dropped (`futex_wait_queue`,
    /// `futex_wait`, ...); empty when the kernel stack could not be read.
    pub stack: Vec<String>,
    /// A few of their thread names.
    pub names: Vec<String>,
}

/// One kind of wait in the database's own lock views at the capture.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DbLockRow {
    /// What is waited for: `Lock:transactionid`, `LWLock:WALWrite`,
    /// `RECORD lock on test.t (PRIMARY)`.
    pub wait: String,
    /// The mode or detail (`ShareLock`, `X`).
    pub mode: String,
    /// Sessions waiting so.
    pub waiting: u32,
    /// Distinct sessions blocking them (0 when not known).
    pub blockers: u32,
    /// The longest of those waits so far, s (None when not known).
    pub longest_s: Option<f64>,
}
