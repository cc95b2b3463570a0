//! [`ProfileSample`]: the on-CPU and off-CPU call stacks of the server over
//! one step's window, folded (`root;...;leaf` with a value), as `probe`'s
//! profiler takes them with `perf` and the store keeps them (kind `profile`).
//! Top frames, lock sites and differences are derived in `analyze::profile`.

use serde::{Deserialize, Serialize};

/// The profiles of one step's window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfileSample {
    /// The step (0-based) whose window this covers.
    pub step: usize,
    /// When the capture began, Unix milliseconds.
    pub unix_ms: i64,
    /// Where the threads ran: `cpu-clock` samples; None when not taken.
    pub on_cpu: Option<StackProfile>,
    /// Where and how long they slept (`sched:sched_switch` with switch-in
    /// times); None when not taken.
    pub off_cpu: Option<StackProfile>,
    /// CPU time `perf record` used over this window, s (its overhead).
    #[serde(default)]
    pub perf_cpu_s: f64,
}

/// Folded stacks of one kind over one capture.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StackProfile {
    /// Length of the capture, ns.
    pub duration_ns: u64,
    /// The server's threads (all its processes) when the capture began.
    pub threads: u32,
    /// How user stacks were unwound: `dwarf` or `fp` (frame pointers).
    pub unwind: String,
    /// Sampling rate per CPU (on-CPU), Hz; 0 for off-CPU (see `sampled_every`).
    pub rate_hz: u32,
    /// Events perf reported lost (its buffers overflowed).
    pub lost: u64,
    /// Off-CPU: one context switch in this many was taken with its stack,
    /// and the values and counts are scaled by it (0 or 1: every switch).
    #[serde(default)]
    pub sampled_every: u32,
    /// Stacks, highest value first.
    pub stacks: Vec<FoldedStack>,
}

/// One distinct call stack: frames root first, `;`-separated (a `;` inside
/// a name is written `:`), unresolved frames as `module+0xoffset`. Off-CPU
/// stacks end in the thread state they slept in: `[S]` sleep, `[D]` disk,
/// `[R]` preempted (waiting for a CPU).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoldedStack {
    pub stack: String,
    /// On-CPU: samples; off-CPU: ns asleep.
    pub value: u64,
    /// Events: samples, or times the threads went to sleep here.
    pub count: u64,
}

impl StackProfile {
    /// The sum of the stacks' values.
    pub fn total(&self) -> u64 {
        self.stacks.iter().map(|s| s.value).sum()
    }

    /// Thread time the capture covered, ns (threads × duration).
    pub fn thread_ns(&self) -> u64 {
        self.duration_ns.saturating_mul(u64::from(self.threads))
    }
}
