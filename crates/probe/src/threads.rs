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

use crate::read::{read_once, KeptFile};
use crate::syscalls::{classify_syscall, classify_wchan, native_table, parse_syscall, SyscallField, SyscallTable, ThreadState};
use crate::tasks::{default_fd_budget, TaskTable};
use crate::thread_report::{StateCounts, StateTimes, ThreadInterval, ThreadStats};
use crate::time::{monotonic_ns, user_hz, Timestamp};
use crate::unavailable::{Source, Unavailable, UnavailableLog};
use crate::Roots;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

struct Slot {
    schedstat: Option<KeptFile>,
    stat: Option<KeptFile>,
    syscall: Option<KeptFile>,
    comm: [u8; 16],
    comm_len: u8,
    primed: bool,
    dead: bool,
    runtime_ns: u64,
    delay_ns: u64,
    pcount: u64,
    cpu_ticks: u64,
    /// Consecutive reads without any scheduler activity.
    quiet_reads: u32,
    last_ns: u64,
    state: ThreadState,
    time: StateTimes,
    cpu_ns: u64,
}

impl Slot {
    fn new() -> Self {
        Slot {
            schedstat: None,
            stat: None,
            syscall: None,
            comm: [0; 16],
            comm_len: 0,
            primed: false,
            dead: false,
            runtime_ns: 0,
            delay_ns: 0,
            pcount: 0,
            cpu_ticks: 0,
            quiet_reads: 0,
            last_ns: 0,
            state: ThreadState::Other,
            time: StateTimes::default(),
            cpu_ns: 0,
        }
    }

    fn fds(&self) -> usize {
        self.schedstat.is_some() as usize + self.stat.is_some() as usize + self.syscall.is_some() as usize
    }

    fn stats(&self, tid: u32, exited: bool) -> ThreadStats {
        ThreadStats {
            tid,
            name: String::from_utf8_lossy(&self.comm[..self.comm_len as usize]).into_owned(),
            cpu_ns: self.cpu_ns,
            time: self.time,
            state: self.state,
            exited,
        }
    }
}

/// Quiet reads after which a sleeping thread is parked.
const PARK_AFTER: u32 = 10;
/// A parked thread is read once every this many ticks.
const PARKED_EVERY: u64 = 5;

/// Everything a tick needs besides the slot, split out for the borrow checker.
struct Ctx {
    dir: PathBuf,
    buf: Box<[u8; 4096]>,
    table: Option<SyscallTable>,
    fd_budget: usize,
    fds_kept: usize,
    /// `None` until known; false when the kernel has no usable `schedstat`.
    schedstat: Option<bool>,
    syscall_readable: bool,
    ns_per_tick: u64,
    time: StateTimes,
    samples: StateCounts,
    log: UnavailableLog,
    news: Vec<Unavailable>,
}

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
}

/// Reads a per-thread file, through a kept descriptor while the budget lasts.
fn read_task<'b>(
    file: &mut Option<KeptFile>,
    dir: &Path,
    tid: u32,
    name: &str,
    kept: &mut usize,
    budget: usize,
    buf: &'b mut [u8],
) -> io::Result<&'b [u8]> {
    if file.is_none() && *kept < budget {
        *file = Some(KeptFile::open(&dir.join(tid.to_string()).join(name))?);
        *kept += 1;
    }
    match file {
        Some(f) => f.read(buf),
        None => read_once(&dir.join(tid.to_string()).join(name), buf),
    }
}

/// `(runtime_ns, run_delay_ns, pcount)` from a `schedstat` text.
fn parse_schedstat(text: &[u8]) -> Option<(u64, u64, u64)> {
    let text = std::str::from_utf8(text).ok()?;
    if !text.ends_with('\n') {
        return None;
    }
    let mut it = text.split_ascii_whitespace().map(|t| t.parse::<u64>().ok());
    Some((it.next()??, it.next()??, it.next()??))
}

/// State letter, `utime + stime` ticks, and the name span of a task `stat`.
fn parse_task_stat(text: &[u8]) -> Option<(u8, u64, &[u8])> {
    if text.last() != Some(&b'\n') {
        return None;
    }
    let open = text.iter().position(|&b| b == b'(')?;
    let close = text.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(text.get(close + 2..)?).ok()?;
    let mut it = rest.split_ascii_whitespace();
    let state = *it.next()?.as_bytes().first()?;
    // After the state (field 3), utime and stime are fields 14 and 15.
    let utime: u64 = it.nth(10)?.parse().ok()?;
    let stime: u64 = it.next()?.parse().ok()?;
    Some((state, utime + stime, text.get(open + 1..close)?))
}

impl Ctx {
    /// Re-reads `stat` (and the wait reason when sleeping); sets the slot's
    /// state and name, or marks it dead. Returns `utime + stime` ticks.
    fn refresh(&mut self, tid: u32, slot: &mut Slot, dr: u64, dd: u64) -> Option<u64> {
        let Ok(bytes) = read_task(&mut slot.stat, &self.dir, tid, "stat", &mut self.fds_kept, self.fd_budget, &mut self.buf[..])
        else {
            slot.dead = true;
            return None;
        };
        let Some((state, ticks, name)) = parse_task_stat(bytes) else {
            slot.dead = true;
            return None;
        };
        let n = name.len().min(16);
        slot.comm[..n].copy_from_slice(&name[..n]);
        slot.comm_len = n as u8;
        slot.state = match state {
            b'R' if dd > dr => ThreadState::Runnable,
            b'R' => ThreadState::Running,
            b'D' => ThreadState::Io,
            b'S' => self.wait_reason(tid, slot),
            b'Z' | b'X' => {
                slot.dead = true;
                return None;
            }
            _ => ThreadState::Other,
        };
        Some(ticks)
    }

    /// Why a sleeping thread sleeps: syscall number, else wait channel.
    fn wait_reason(&mut self, tid: u32, slot: &mut Slot) -> ThreadState {
        if let (true, Some(table)) = (self.syscall_readable, self.table) {
            let read =
                read_task(&mut slot.syscall, &self.dir, tid, "syscall", &mut self.fds_kept, self.fd_budget, &mut self.buf[..]);
            match read {
                Ok(bytes) => match parse_syscall(bytes) {
                    Some(SyscallField::Nr(nr)) => return classify_syscall(&table, nr),
                    Some(SyscallField::Running) => return ThreadState::Running,
                    Some(SyscallField::NotInSyscall) => return ThreadState::Other,
                    None => {} // unreadable content: ask wchan
                },
                Err(e) if matches!(e.kind(), ErrorKind::PermissionDenied) || e.raw_os_error() == Some(libc::EPERM) => {
                    self.syscall_readable = false;
                    let why = format!("cannot read {}/*/syscall: {e}; using wchan instead", self.dir.display());
                    self.log.note_into(&mut self.news, Source::ThreadWaitReason, why);
                }
                Err(_) => return ThreadState::Other,
            }
        }
        let path = self.dir.join(tid.to_string()).join("wchan");
        match read_once(&path, &mut self.buf[..]).ok().and_then(classify_wchan) {
            Some(state) => state,
            None => {
                let why = "neither syscall nor wchan readable: sleeping threads counted as other sleep";
                self.log.note_into(&mut self.news, Source::ThreadWaitReason, why);
                ThreadState::Other
            }
        }
    }

    /// One thread at one tick.
    fn observe(&mut self, tid: u32, slot: &mut Slot, now: u64, tick_no: u64) {
        if self.schedstat == Some(false) {
            return self.observe_without_schedstat(tid, slot, now);
        }
        // A thread asleep for a while is read every PARKED_EVERY ticks only
        // (spread over ticks by tid). Nothing is lost: the counters are
        // cumulative, so the next read accounts the whole window.
        if slot.primed && slot.quiet_reads >= PARK_AFTER && (tick_no + tid as u64) % PARKED_EVERY != 0 {
            self.samples.add(slot.state);
            return;
        }
        let read =
            read_task(&mut slot.schedstat, &self.dir, tid, "schedstat", &mut self.fds_kept, self.fd_budget, &mut self.buf[..]);
        let (runtime, delay, pcount) = match read.map(parse_schedstat) {
            Ok(Some(v)) => v,
            Ok(None) => return slot.dead = true,
            Err(e) if e.kind() == ErrorKind::NotFound && self.schedstat.is_none() => {
                // The thread may have just exited: only its stat tells.
                if self.refresh(tid, slot, 0, 0).is_some() {
                    self.disable_schedstat(format!("{}/{tid}/schedstat: {e}", self.dir.display()));
                    return self.observe_without_schedstat(tid, slot, now);
                }
                return;
            }
            Err(_) => return slot.dead = true,
        };
        if !slot.primed {
            let ticks = self.refresh(tid, slot, 0, 0);
            if self.schedstat.is_none() && ticks.is_some_and(|t| t > 0) && runtime == 0 && pcount == 0 {
                self.disable_schedstat(format!("{}/{tid}/schedstat reads all zeros (scheduler statistics off)", self.dir.display()));
                return self.observe_without_schedstat(tid, slot, now);
            }
            self.schedstat = Some(true);
            (slot.runtime_ns, slot.delay_ns, slot.pcount, slot.last_ns, slot.primed) = (runtime, delay, pcount, now, true);
            self.samples.add(slot.state);
            return;
        }
        let dt = now.saturating_sub(slot.last_ns);
        let dr = runtime.saturating_sub(slot.runtime_ns);
        let dd = delay.saturating_sub(slot.delay_ns);
        let before = slot.state;
        let active = dr > 0 || dd > 0 || pcount != slot.pcount;
        slot.quiet_reads = if active || !before.is_sleep() { 0 } else { slot.quiet_reads.saturating_add(1) };
        if active || !before.is_sleep() {
            self.refresh(tid, slot, dr, dd);
            if slot.dead {
                return;
            }
        }
        // Running and runnable time are exact; the rest of the window was a
        // sleep, the one seen now or (if running now) the one seen before.
        // Run-queue waits are charged when the thread gets the CPU, so a
        // window of a thread running at both ends has no sleep part.
        slot.time.running_ns += dr;
        slot.time.runnable_ns += dd;
        self.time.running_ns += dr;
        self.time.runnable_ns += dd;
        let sleep = if slot.state.is_sleep() { Some(slot.state) } else { Some(before).filter(|s| s.is_sleep()) };
        if let Some(s) = sleep {
            let rest = dt.saturating_sub(dr + dd);
            slot.time.add(s, rest);
            self.time.add(s, rest);
        }
        slot.cpu_ns += dr;
        (slot.runtime_ns, slot.delay_ns, slot.pcount, slot.last_ns) = (runtime, delay, pcount, now);
        self.samples.add(slot.state);
    }

    fn disable_schedstat(&mut self, why: String) {
        self.schedstat = Some(false);
        let why = format!("{why}: running and runnable are not told apart");
        self.log.note_into(&mut self.news, Source::ThreadRunDelay, why);
    }

    /// Classic sampling: the whole window goes to the state seen now.
    fn observe_without_schedstat(&mut self, tid: u32, slot: &mut Slot, now: u64) {
        let Some(ticks) = self.refresh(tid, slot, 0, 0) else { return };
        if slot.primed {
            let dt = now.saturating_sub(slot.last_ns);
            let cpu = ticks.saturating_sub(slot.cpu_ticks) * self.ns_per_tick;
            slot.cpu_ns += cpu;
            slot.time.add(slot.state, dt);
            self.time.add(slot.state, dt);
        }
        (slot.cpu_ticks, slot.last_ns, slot.primed) = (ticks, now, true);
        self.samples.add(slot.state);
    }
}

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

    /// Samples every thread once. Returns false once the process is gone.
    pub fn tick(&mut self) -> bool {
        if !self.alive {
            return false;
        }
        self.start.get_or_insert_with(Timestamp::now);
        let (ctx, departed) = (&mut self.ctx, &mut self.departed);
        let count_changed = self.tasks.count_hint().map_or(true, |n| n != self.tasks.len());
        if count_changed || self.lost_thread || self.tick_no % self.rescan_every as u64 == 0 || self.tasks.is_empty() {
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
    /// tick) and starts a new interval.
    pub fn take_interval(&mut self) -> ThreadInterval {
        let end = Timestamp::now();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_stat_and_schedstat() {
        let s = b"16987 (python3 x) R 16913 16913 4733 0 -1 4194368 0 0 0 0 180 20 0 0 20 0 11 0 1 2 3\n";
        let (state, ticks, name) = parse_task_stat(s).unwrap();
        assert_eq!((state, ticks, name), (b'R', 200, &b"python3 x"[..]));
        assert!(parse_task_stat(b"16987 (python3) R 1 2").is_none());
        assert!(parse_task_stat(&s[..s.len() - 1]).is_none(), "cut: no newline");
        assert_eq!(parse_schedstat(b"135809 20 1\n"), Some((135809, 20, 1)));
        assert_eq!(parse_schedstat(b"135809 20"), None);
        assert_eq!(parse_schedstat(b"x y z\n"), None);
    }
}
