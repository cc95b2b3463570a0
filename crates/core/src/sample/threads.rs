//! Thread states: what the thread-state sampler reports for an interval (a
//! step, a second): thread-time per state, its shares, the hottest threads;
//! and the stored per-second form ([`ThreadSecond`]).

use super::{Timestamp, Unavailable};
use crate::HotThread;
use serde::{Deserialize, Serialize};

/// What a thread is doing at one instant (or for a share of an interval).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadState {
    /// On a CPU.
    Running,
    /// Ready to run but waiting for a CPU (run-queue delay).
    Runnable,
    /// Blocked in a futex: a lock or condition variable.
    Futex,
    /// Waiting for work: poll, epoll, select or accept.
    Idle,
    /// Uninterruptible sleep (state D), usually disk I/O.
    Io,
    /// Any other sleep: nanosleep, socket reads, pipes, stopped, unknown.
    Other,
}

impl ThreadState {
    /// All states, in report order.
    pub const ALL: [ThreadState; 6] =
        [ThreadState::Running, ThreadState::Runnable, ThreadState::Futex, ThreadState::Idle, ThreadState::Io, ThreadState::Other];

    /// Whether this is a kind of sleep (not running or runnable).
    pub fn is_sleep(self) -> bool {
        !matches!(self, ThreadState::Running | ThreadState::Runnable)
    }
}

/// Thread-time per state, nanoseconds summed over threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateTimes {
    pub running_ns: u64,
    pub runnable_ns: u64,
    pub futex_ns: u64,
    pub idle_ns: u64,
    pub io_ns: u64,
    pub other_ns: u64,
}

impl StateTimes {
    /// Adds `ns` to `state`.
    pub fn add(&mut self, state: ThreadState, ns: u64) {
        *self.slot(state) += ns;
    }

    /// The time in `state`.
    pub fn get(&self, state: ThreadState) -> u64 {
        match state {
            ThreadState::Running => self.running_ns,
            ThreadState::Runnable => self.runnable_ns,
            ThreadState::Futex => self.futex_ns,
            ThreadState::Idle => self.idle_ns,
            ThreadState::Io => self.io_ns,
            ThreadState::Other => self.other_ns,
        }
    }

    fn slot(&mut self, state: ThreadState) -> &mut u64 {
        match state {
            ThreadState::Running => &mut self.running_ns,
            ThreadState::Runnable => &mut self.runnable_ns,
            ThreadState::Futex => &mut self.futex_ns,
            ThreadState::Idle => &mut self.idle_ns,
            ThreadState::Io => &mut self.io_ns,
            ThreadState::Other => &mut self.other_ns,
        }
    }

    /// Adds another set of times.
    pub fn merge(&mut self, other: &StateTimes) {
        for s in ThreadState::ALL {
            *self.slot(s) += other.get(s);
        }
    }

    /// All thread-time.
    pub fn total_ns(&self) -> u64 {
        ThreadState::ALL.iter().map(|s| self.get(*s)).sum()
    }

    /// Percent of thread-time per state; `None` when nothing was measured.
    pub fn shares(&self) -> Option<StateShares> {
        let total = self.total_ns();
        if total == 0 {
            return None;
        }
        let pct = |s| self.get(s) as f64 * 100.0 / total as f64;
        Some(StateShares {
            running_pct: pct(ThreadState::Running),
            runnable_pct: pct(ThreadState::Runnable),
            futex_pct: pct(ThreadState::Futex),
            idle_pct: pct(ThreadState::Idle),
            io_pct: pct(ThreadState::Io),
            other_pct: pct(ThreadState::Other),
        })
    }
}

/// Thread-samples per state: how many (thread, tick) pairs were seen in each
/// state at the instant of the tick. Complements [`StateTimes`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateCounts {
    pub running: u64,
    pub runnable: u64,
    pub futex: u64,
    pub idle: u64,
    pub io: u64,
    pub other: u64,
}

impl StateCounts {
    /// Counts one thread seen in `state`.
    pub fn add(&mut self, state: ThreadState) {
        let slot = match state {
            ThreadState::Running => &mut self.running,
            ThreadState::Runnable => &mut self.runnable,
            ThreadState::Futex => &mut self.futex,
            ThreadState::Idle => &mut self.idle,
            ThreadState::Io => &mut self.io,
            ThreadState::Other => &mut self.other,
        };
        *slot += 1;
    }
}

/// Shares of thread-time, percent (they sum to 100).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StateShares {
    pub running_pct: f64,
    pub runnable_pct: f64,
    pub futex_pct: f64,
    pub idle_pct: f64,
    pub io_pct: f64,
    pub other_pct: f64,
}

/// One thread over the interval.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadStats {
    pub tid: u32,
    /// `comm` of the thread (15 bytes at most).
    pub name: String,
    /// CPU time used in the interval.
    pub cpu_ns: u64,
    /// Its own time per state.
    pub time: StateTimes,
    /// Its state at the last tick.
    pub state: ThreadState,
    /// The thread exited during the interval.
    pub exited: bool,
}

/// What the thread sampler saw between two calls of `take_interval`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadInterval {
    pub pid: u32,
    pub start: Timestamp,
    pub end: Timestamp,
    /// Ticks taken in the interval.
    pub ticks: u32,
    /// Thread-time per state, all threads together.
    pub time: StateTimes,
    /// Instantaneous classifications per state, all threads and ticks.
    pub samples: StateCounts,
    /// Whether running and runnable were told apart (needs `schedstat`);
    /// when false, waiting for a CPU is counted as running.
    pub runnable_measured: bool,
    /// Per-thread reads made (each thread not read at every tick when
    /// parked or when the CPU budget raised the stride).
    pub thread_reads: u64,
    /// Largest stride used: 1 means every active thread was read at every
    /// tick; n means the CPU budget had each read every n ticks.
    pub max_stride: u64,
    /// Threads seen, hottest (most CPU) first.
    pub threads: Vec<ThreadStats>,
    /// Sources that became unavailable (or changed reason) in the interval.
    pub newly_unavailable: Vec<Unavailable>,
}

impl ThreadInterval {
    /// Percent of thread-time per state; `None` if nothing was measured.
    pub fn shares(&self) -> Option<StateShares> {
        self.time.shares()
    }

    /// The `n` threads that used the most CPU.
    pub fn hottest(&self, n: usize) -> &[ThreadStats] {
        &self.threads[..n.min(self.threads.len())]
    }

    /// Wall time of the interval, seconds.
    pub fn wall_s(&self) -> f64 {
        self.end.monotonic_ns.saturating_sub(self.start.monotonic_ns) as f64 / 1e9
    }

    /// A thread's CPU as percent of one core over the interval (100 = one
    /// core busy the whole time: a single-threaded stage).
    pub fn cpu_pct_of_core(&self, t: &ThreadStats) -> Option<f64> {
        let wall = self.wall_s();
        (wall > 0.0).then(|| t.cpu_ns as f64 / 1e9 / wall * 100.0)
    }

    /// A thread's time waiting for a CPU as percent of the interval's wall
    /// time; `None` when running and runnable were not told apart.
    pub fn runnable_pct_of_wall(&self, t: &ThreadStats) -> Option<f64> {
        let wall = self.wall_s();
        (self.runnable_measured && wall > 0.0).then(|| t.time.runnable_ns as f64 / 1e9 / wall * 100.0)
    }

    /// The thread with this tid, if it was seen.
    pub fn thread(&self, tid: u32) -> Option<&ThreadStats> {
        self.threads.iter().find(|t| t.tid == tid)
    }
}

/// One second of thread-state sampling, as stored: state times summed over
/// the server's threads, and its busiest threads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadSecond {
    pub unix_ms: i64,
    pub wall_ns: u64,
    pub time: StateTimes,
    pub hottest: Vec<HotThread>,
}

impl ThreadSecond {
    /// Condenses a sampler interval ending at `unix_ms`.
    pub fn from_interval(unix_ms: i64, iv: &ThreadInterval) -> Self {
        let hottest = iv
            .hottest(3)
            .iter()
            .filter_map(|t| {
                iv.cpu_pct_of_core(t).map(|pct| HotThread {
                    tid: t.tid,
                    name: t.name.clone(),
                    cpu_pct: pct,
                    runnable_pct: iv.runnable_pct_of_wall(t),
                })
            })
            .collect();
        ThreadSecond { unix_ms, wall_ns: (iv.wall_s() * 1e9) as u64, time: iv.time, hottest }
    }

    /// Adds another process's second (a server's descendants): state times
    /// summed, the three hottest threads of both kept.
    pub fn merge(&mut self, other: &ThreadSecond) {
        self.time.merge(&other.time);
        self.hottest.extend(other.hottest.iter().cloned());
        self.hottest.sort_by(|a, b| b.cpu_pct.total_cmp(&a.cpu_pct));
        self.hottest.truncate(3);
        self.wall_ns = self.wall_ns.max(other.wall_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_sum_to_100() {
        let mut t = StateTimes::default();
        t.add(ThreadState::Futex, 750);
        t.add(ThreadState::Running, 250);
        let s = t.shares().unwrap();
        assert_eq!((s.futex_pct, s.running_pct), (75.0, 25.0));
        assert_eq!(StateTimes::default().shares(), None);
    }
}
