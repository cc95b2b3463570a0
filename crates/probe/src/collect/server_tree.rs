//! The server as a process tree: the server pid and its descendants
//! (PostgreSQL backends, nginx workers), so its CPU, context switches and
//! thread states cover the processes doing the work, not only a master
//! that mostly sleeps. Descendants are rescanned once a second.

use crate::{ProcessSample, ProcessSampler, Roots, ThreadSampler, Unavailable};
use scalelab_core::sample::ThreadSecond;
use std::collections::BTreeMap;

/// CPU budget (share of one core) of each descendant's thread sampler: a
/// PostgreSQL cluster has one process per client, so each gets a small
/// share and the sampler raises its stride rather than its cost.
const MEMBER_THREAD_BUDGET: f64 = 0.005;

/// Per-thread files each of the server's own two samplers may keep open; 0:
/// their default (a quarter of the soft limit). `sweep` sets it from its
/// open-file check so the probes never take the clients' descriptors.
static ROOT_FD_BUDGET: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Sets `ROOT_FD_BUDGET` for the server trees made from now on.
pub fn set_root_fd_budget(fds: usize) {
    ROOT_FD_BUDGET.store(fds, std::sync::atomic::Ordering::Relaxed);
}

/// One descendant: its samplers and its counters at the last sample
/// (user ticks, system ticks, voluntary and involuntary context switches).
struct Member {
    process: ProcessSampler,
    threads: Option<ThreadSampler>,
    last: Option<[u64; 4]>,
}

/// Samples the server process and its descendants as one.
pub struct ServerTree {
    roots: Roots,
    pid: u32,
    process: ProcessSampler,
    threads: Option<ThreadSampler>,
    members: BTreeMap<u32, Member>,
    /// Counters accumulated from descendants (same order as `Member::last`):
    /// deltas of each while it lived, so exits never make totals go backwards.
    extra: [u64; 4],
    thread_states: bool,
}

impl ServerTree {
    /// The tree of `pid`; thread states sampled when `thread_states`.
    pub fn new(roots: &Roots, pid: u32, thread_states: bool) -> ServerTree {
        let mut t = ServerTree {
            roots: roots.clone(),
            pid,
            process: match ROOT_FD_BUDGET.load(std::sync::atomic::Ordering::Relaxed) {
                0 => ProcessSampler::new(roots, pid),
                fds => ProcessSampler::new(roots, pid).with_fd_budget(fds),
            },
            threads: thread_states.then(|| match ROOT_FD_BUDGET.load(std::sync::atomic::Ordering::Relaxed) {
                0 => ThreadSampler::new(roots, pid),
                fds => ThreadSampler::new(roots, pid).with_fd_budget(fds),
            }),
            members: BTreeMap::new(),
            extra: [0; 4],
            thread_states,
        };
        t.rescan();
        t
    }

    /// Adds new descendants and drops those that exited.
    fn rescan(&mut self) {
        let Ok(now) = crate::tree::descendants(&self.roots.proc, self.pid) else {
            return;
        };
        self.members.retain(|pid, _| now.binary_search(pid).is_ok());
        for pid in now {
            let (roots, states) = (&self.roots, self.thread_states);
            self.members.entry(pid).or_insert_with(|| Member {
                process: ProcessSampler::new(roots, pid).with_fd_budget(16),
                threads: states.then(|| ThreadSampler::new(roots, pid).with_fd_budget(16).with_cpu_budget(MEMBER_THREAD_BUDGET)),
                last: None,
            });
        }
    }

    /// One thread-state tick of every process; false once the server itself is gone.
    pub fn tick(&mut self) -> bool {
        for m in self.members.values_mut() {
            if m.threads.as_mut().is_some_and(|t| !t.tick()) {
                m.threads = None;
            }
        }
        match self.threads.as_mut() {
            Some(t) => t.tick(),
            None => true,
        }
    }

    /// Stops thread-state sampling (the server exited).
    pub fn stop_threads(&mut self) {
        self.threads = None;
        self.thread_states = false;
        for m in self.members.values_mut() {
            m.threads = None;
        }
    }

    /// Whether thread states are being sampled.
    pub fn samples_threads(&self) -> bool {
        self.threads.is_some()
    }

    /// The server's sample with CPU ticks, context switches, the thread
    /// count and the resident memory of its descendants added (pages shared
    /// between processes count once per process, as `ps` sums them);
    /// rescans descendants first.
    pub fn sample(&mut self) -> ProcessSample {
        self.rescan();
        let mut s = self.process.sample();
        let (mut threads, mut rss_kib) = (0, 0);
        for m in self.members.values_mut() {
            let ms = m.process.sample();
            let cur = [ms.cpu_user_ticks, ms.cpu_system_ticks, ms.voluntary_ctxt_switches, ms.nonvoluntary_ctxt_switches];
            if !ms.alive {
                continue;
            }
            threads += ms.threads.unwrap_or(0);
            rss_kib += ms.rss_kib.unwrap_or(0);
            let last = m.last.get_or_insert([0; 4]);
            for i in 0..4 {
                if let Some(v) = cur[i] {
                    // A member's first reading counts whole: it started since the last scan.
                    self.extra[i] += v.saturating_sub(last[i]);
                    last[i] = last[i].max(v);
                }
            }
        }
        if s.alive {
            let add = |x: &mut Option<u64>, v: u64| {
                if let Some(x) = x.as_mut() {
                    *x += v;
                }
            };
            add(&mut s.cpu_user_ticks, self.extra[0]);
            add(&mut s.cpu_system_ticks, self.extra[1]);
            add(&mut s.voluntary_ctxt_switches, self.extra[2]);
            add(&mut s.nonvoluntary_ctxt_switches, self.extra[3]);
            add(&mut s.threads, threads);
            add(&mut s.rss_kib, rss_kib);
        }
        s
    }

    /// The server process's unavailable sources (descendants come and go: not reported).
    pub fn unavailable(&self) -> Vec<Unavailable> {
        self.process.unavailable()
    }

    /// The thread states of the last interval over the whole tree, and the
    /// server's unavailable thread sources; `None` when not sampling.
    pub fn take_threads(&mut self, unix_ms: i64) -> Option<(ThreadSecond, Vec<Unavailable>)> {
        let t = self.threads.as_mut()?;
        let mut second = ThreadSecond::from_interval(unix_ms, &t.take_interval());
        let notes = t.unavailable();
        for m in self.members.values_mut() {
            if let Some(mt) = m.threads.as_mut() {
                second.merge(&ThreadSecond::from_interval(unix_ms, &mt.take_interval()));
            }
        }
        Some((second, notes))
    }
}
