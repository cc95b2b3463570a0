//! The thread-state sampler: what each thread of the server is doing, at
//! about 50 Hz, accumulated into thread-time per state and CPU per thread.
//!
//! Method. Each tick reads every thread's `schedstat` (CPU time, run-queue
//! delay, times scheduled; ~0.5 us through a kept descriptor). Those counters
//! give exact running and runnable time between ticks. A thread whose
//! counters did not move has not run, so it is still in the same sleep; only
//! threads that ran (or were on a CPU) have their `stat` re-read, and their
//! `syscall` (or `wchan`) when sleeping, to learn the new state. Sleep time
//! of a tick window goes to the sleep observed at its end (or at its start
//! if the thread is running now). Kernels without `schedstat` fall back to
//! reading `stat` for every thread each tick; then running and runnable
//! cannot be told apart.
//!
//! Cost. Files are kept open and re-read with `pread`. A thread that ran is
//! classified from its `syscall` file alone when that decides it, `stat`
//! being read only to tell sleep from disk wait. A thread quiet for 10 reads
//! in a row is read every 5th tick only (its counters are cumulative, so the
//! next read still accounts the whole window), and `task/` is listed again
//! only when its link count (threads + 2) changes or a thread vanished.
//! Finally a CPU budget (2.5 % of one core by default) raises the stride at
//! which threads are read when a process has very many busy threads; times
//! stay exact, sleep reasons are sampled less often, and the interval says
//! so (`max_stride`). Measured by `bench/probe_overhead`: about 2 % of one
//! core for a 200-thread process at 50 Hz.

use crate::syscalls::native_table;
use crate::tasks::{default_fd_budget, TaskTable};
use crate::thread_observe::{Ctx, Slot};
use crate::thread_report::{StateCounts, StateTimes, ThreadInterval, ThreadStats};
use crate::time::{monotonic_ns, thread_cpu_ns, user_hz, Timestamp};
use crate::unavailable::{Source, Unavailable, UnavailableLog};
use crate::Roots;

/// Samples the threads of one process; call [`tick`](Self::tick) at about
/// 50 Hz and [`take_interval`](Self::take_interval) once per step or second.
pub struct ThreadSampler {
    pid: u32,
    tasks: TaskTable<Slot>,
    ctx: Ctx,
    rescan_every: u32,
    tick_no: u64,
    /// A thread vanished since the last listing: list again next tick.
    lost_thread: bool,
    start: Option<Timestamp>,
    ticks: u32,
    departed: Vec<ThreadStats>,
    alive: bool,
    /// Share of one core the sampler may use (default 2.5 %).
    cpu_budget: f64,
    /// Smoothed share of one core used by recent ticks.
    load: f64,
    last_tick_ns: u64,
    max_stride: u64,
}

/// Longest stride the budget may impose: each thread read at least once a second at 50 Hz.
const MAX_STRIDE: u64 = 50;

impl ThreadSampler {
    /// A sampler of the threads of `pid` under `roots.proc`.
    pub fn new(roots: &Roots, pid: u32) -> Self {
        let tasks = TaskTable::new(&roots.proc, pid);
        let ctx = Ctx {
            dir: tasks.dir().to_path_buf(),
            buf: Box::new([0; 4096]),
            table: native_table(),
            fd_budget: default_fd_budget(),
            fds_kept: 0,
            schedstat: None,
            syscall_readable: true,
            ns_per_tick: 1_000_000_000 / user_hz() as u64,
            stride: 1,
            reads: 0,
            read_all: false,
            time: StateTimes::default(),
            samples: StateCounts::default(),
            log: UnavailableLog::default(),
            news: Vec::new(),
        };
        ThreadSampler {
            pid,
            tasks,
            ctx,
            rescan_every: 50,
            tick_no: 0,
            lost_thread: false,
            start: None,
            ticks: 0,
            departed: Vec::new(),
            alive: true,
            cpu_budget: 0.025,
            load: 0.0,
            last_tick_ns: 0,
            max_stride: 1,
        }
    }

    /// Caps descriptors kept open for per-thread files (three per thread;
    /// default: a quarter of the soft open-files limit).
    pub fn with_fd_budget(mut self, fds: usize) -> Self {
        self.ctx.fd_budget = fds;
        self
    }

    /// Lists `task/` at least every `n` ticks (default 50). Between those,
    /// it is listed again only when its link count (threads + 2) changes or
    /// a thread vanished, so a steady pool costs one `fstat` per tick.
    pub fn with_rescan_every(mut self, n: u32) -> Self {
        self.rescan_every = n.max(1);
        self
    }

    /// The sampled pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Threads currently known.
    pub fn threads(&self) -> usize {
        self.tasks.len()
    }

    /// Descriptors currently kept open.
    pub fn fds_kept(&self) -> usize {
        self.ctx.fds_kept
    }

    /// Caps the sampler's CPU, as a share of one core (default 0.025 = 2.5 %).
    /// Over the cap, each thread is read every few ticks instead of every
    /// tick; times stay exact (cumulative counters), sleep reasons are
    /// sampled less often. The interval reports the stride used.
    pub fn with_cpu_budget(mut self, share_of_a_core: f64) -> Self {
        self.cpu_budget = share_of_a_core;
        self
    }

    /// Samples the threads once. Returns false once the process is gone.
    pub fn tick(&mut self) -> bool {
        let (cpu0, wall0) = (thread_cpu_ns(), monotonic_ns());
        let alive = self.tick_inner();
        self.adapt(thread_cpu_ns().saturating_sub(cpu0), wall0);
        alive
    }

    /// Raises or lowers the stride so the smoothed cost stays in budget.
    fn adapt(&mut self, cost_ns: u64, wall0: u64) {
        let gap = wall0.saturating_sub(self.last_tick_ns);
        self.last_tick_ns = wall0;
        if gap == 0 || gap == wall0 {
            return;
        }
        self.load = 0.8 * self.load + 0.2 * (cost_ns as f64 / gap as f64);
        let old = self.ctx.stride;
        let new = if self.load > self.cpu_budget {
            (old + (old / 4).max(1)).min(MAX_STRIDE)
        } else if self.load < self.cpu_budget / 2.0 {
            (old - 1).max(1)
        } else {
            old
        };
        if new != old {
            self.load *= old as f64 / new as f64;
            self.ctx.stride = new;
            self.max_stride = self.max_stride.max(new);
        }
    }

    fn tick_inner(&mut self) -> bool {
        if !self.alive {
            return false;
        }
        self.start.get_or_insert_with(crate::time::now);
        let (ctx, departed) = (&mut self.ctx, &mut self.departed);
        let count_changed = self.tasks.count_hint() != Some(self.tasks.len());
        if count_changed || self.lost_thread || self.tick_no.is_multiple_of(self.rescan_every as u64) || self.tasks.is_empty() {
            self.lost_thread = false;
            let kept = &mut ctx.fds_kept;
            let rescanned = self.tasks.rescan(
                |_| Slot::new(),
                |tid, slot| {
                    *kept -= slot.fds();
                    if slot.primed {
                        departed.push(slot.stats(tid, true));
                    }
                },
            );
            if let Err(e) = rescanned {
                let why = format!("process {} gone or unreadable: cannot list {}: {e}", self.pid, ctx.dir.display());
                ctx.log.note_into(&mut ctx.news, Source::Threads, why);
                self.alive = false;
                return false;
            }
        }
        self.tick_no += 1;
        self.ticks += 1;
        let now = monotonic_ns();
        let listed = self.tasks.len();
        let tick_no = self.tick_no;
        for (tid, slot) in self.tasks.iter_mut() {
            ctx.observe(tid, slot, now, tick_no);
        }
        let lost = &mut self.lost_thread;
        self.tasks.retain(
            |_, slot| !slot.dead,
            |tid, slot| {
                ctx.fds_kept -= slot.fds();
                *lost = true;
                if slot.primed {
                    departed.push(slot.stats(tid, true));
                }
            },
        );
        if listed > 0 && self.tasks.is_empty() {
            let why = format!("none of the {listed} threads under {} had readable stat/schedstat", ctx.dir.display());
            ctx.log.note_into(&mut ctx.news, Source::Threads, why);
        } else if !self.tasks.is_empty() {
            ctx.log.clear(Source::Threads);
        }
        true
    }

    /// Returns what was accumulated since the previous call (or the first
    /// tick) and starts a new interval. It first reads every thread once
    /// (one extra tick), so the interval is complete up to now.
    pub fn take_interval(&mut self) -> ThreadInterval {
        // Bring every thread up to now, so time of threads not read on the
        // last ticks (parked, or over budget) lands in this interval.
        // (Not fed to the budget controller: it follows a tick closely, and
        // the tiny gap would read as a huge load.)
        if self.ticks > 0 {
            self.ctx.read_all = true;
            self.tick_inner();
            self.ctx.read_all = false;
        }
        let end = crate::time::now();
        let mut threads = std::mem::take(&mut self.departed);
        for (tid, slot) in self.tasks.iter_mut().filter(|(_, s)| s.primed) {
            threads.push(slot.stats(tid, false));
            slot.time = StateTimes::default();
            slot.cpu_ns = 0;
        }
        threads.sort_by(|a, b| b.cpu_ns.cmp(&a.cpu_ns).then(a.tid.cmp(&b.tid)));
        let interval = ThreadInterval {
            pid: self.pid,
            start: self.start.unwrap_or(end),
            end,
            ticks: self.ticks,
            time: std::mem::take(&mut self.ctx.time),
            samples: std::mem::take(&mut self.ctx.samples),
            runnable_measured: self.ctx.schedstat == Some(true),
            thread_reads: std::mem::take(&mut self.ctx.reads),
            max_stride: std::mem::replace(&mut self.max_stride, self.ctx.stride),
            threads,
            newly_unavailable: std::mem::take(&mut self.ctx.news),
        };
        self.start = Some(end);
        self.ticks = 0;
        interval
    }

    /// Every source currently unavailable, with its reason.
    pub fn unavailable(&self) -> Vec<Unavailable> {
        self.ctx.log.current()
    }
}
