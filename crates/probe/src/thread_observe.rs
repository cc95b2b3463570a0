//! One thread at one tick: the per-thread state the [`ThreadSampler`]
//! keeps, and how a tick reads and classifies a thread (see the method in
//! [`crate::threads`]).
//!
//! [`ThreadSampler`]: crate::threads::ThreadSampler

use crate::read::{read_once, KeptFile};
use crate::syscalls::{classify_syscall, classify_wchan, parse_syscall, SyscallField, SyscallTable, ThreadState};
use crate::thread_report::{StateCounts, StateTimes, ThreadStats};
use crate::unavailable::{Source, Unavailable, UnavailableLog};
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

pub(crate) struct Slot {
    pub(crate) schedstat: Option<KeptFile>,
    pub(crate) stat: Option<KeptFile>,
    pub(crate) syscall: Option<KeptFile>,
    pub(crate) comm: [u8; 16],
    pub(crate) comm_len: u8,
    pub(crate) primed: bool,
    pub(crate) dead: bool,
    pub(crate) runtime_ns: u64,
    pub(crate) delay_ns: u64,
    pub(crate) pcount: u64,
    pub(crate) cpu_ticks: u64,
    /// Consecutive reads without any scheduler activity.
    pub(crate) quiet_reads: u32,
    /// Reads since `stat` (and so the name) was last read.
    pub(crate) reads_since_stat: u32,
    pub(crate) last_ns: u64,
    pub(crate) state: ThreadState,
    pub(crate) time: StateTimes,
    pub(crate) cpu_ns: u64,
}

impl Slot {
    pub(crate) fn new() -> Self {
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
            reads_since_stat: 0,
            last_ns: 0,
            state: ThreadState::Other,
            time: StateTimes::default(),
            cpu_ns: 0,
        }
    }

    pub(crate) fn fds(&self) -> usize {
        self.schedstat.is_some() as usize + self.stat.is_some() as usize + self.syscall.is_some() as usize
    }

    pub(crate) fn stats(&self, tid: u32, exited: bool) -> ThreadStats {
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
/// `stat` (name, S or D) is re-read at least every this many reads.
const NAME_EVERY: u32 = 50;

/// What a thread's `syscall` file told.
enum SyscallSays {
    /// Its state, no `stat` needed.
    Decided(ThreadState),
    /// Blocked or sleeping; `stat` must say S or D. The sleep reason if known.
    Sleeping(Option<ThreadState>),
    /// The thread exited.
    Gone,
}
use SyscallSays::{Decided, Gone, Sleeping};

/// Everything a tick needs besides the slot, split out for the borrow checker.
pub(crate) struct Ctx {
    pub(crate) dir: PathBuf,
    pub(crate) buf: Box<[u8; 4096]>,
    pub(crate) table: Option<SyscallTable>,
    pub(crate) fd_budget: usize,
    pub(crate) fds_kept: usize,
    /// `None` until known; false when the kernel has no usable `schedstat`.
    pub(crate) schedstat: Option<bool>,
    pub(crate) syscall_readable: bool,
    pub(crate) ns_per_tick: u64,
    /// Read each thread every this many ticks (raised when over budget).
    pub(crate) stride: u64,
    /// Thread reads (schedstat or stat) made in the current interval.
    pub(crate) reads: u64,
    /// Read every thread this tick (closing an interval), stride or not.
    pub(crate) read_all: bool,
    pub(crate) time: StateTimes,
    pub(crate) samples: StateCounts,
    pub(crate) log: UnavailableLog,
    pub(crate) news: Vec<Unavailable>,
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
    /// After a thread ran: its state from the `syscall` file alone when that
    /// decides it (on a CPU, or blocked in a call that only sleeps
    /// interruptibly), saving the costlier `stat`; else from `stat` (S or D)
    /// with what the syscall said as the sleep reason. `stat` is read at
    /// least every `NAME_EVERY` reads anyway, to follow renamed threads.
    fn classify(&mut self, tid: u32, slot: &mut Slot, dr: u64, dd: u64) {
        slot.reads_since_stat += 1;
        let mut hint = None;
        if slot.reads_since_stat < NAME_EVERY {
            match self.syscall_state(tid, slot, dr, dd) {
                Decided(state) => return slot.state = state,
                Gone => return slot.dead = true,
                Sleeping(h) => hint = h,
            }
        }
        slot.reads_since_stat = 0;
        self.refresh(tid, slot, dr, dd, hint);
    }

    /// What the `syscall` file says, if it is readable.
    fn syscall_state(&mut self, tid: u32, slot: &mut Slot, dr: u64, dd: u64) -> SyscallSays {
        let Some(table) = self.table.filter(|_| self.syscall_readable) else { return Sleeping(None) };
        let read = read_task(&mut slot.syscall, &self.dir, tid, "syscall", &mut self.fds_kept, self.fd_budget, &mut self.buf[..]);
        match read {
            Ok(bytes) => match parse_syscall(bytes) {
                Some(SyscallField::Running) => Decided(if dd > dr { ThreadState::Runnable } else { ThreadState::Running }),
                Some(SyscallField::Nr(nr)) => match classify_syscall(&table, nr) {
                    ThreadState::Other if !table.interruptible.contains(&nr) => Sleeping(Some(ThreadState::Other)),
                    state => Decided(state),
                },
                Some(SyscallField::NotInSyscall) => Sleeping(Some(ThreadState::Other)),
                None => Sleeping(None),
            },
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) || e.kind() == ErrorKind::NotFound => Gone,
            Err(e) => {
                self.syscall_unreadable(&e);
                Sleeping(None)
            }
        }
    }

    fn syscall_unreadable(&mut self, e: &io::Error) {
        if e.kind() == ErrorKind::PermissionDenied {
            self.syscall_readable = false;
            let why = format!("cannot read {}/*/syscall: {e}; using wchan instead", self.dir.display());
            self.log.note_into(&mut self.news, Source::ThreadWaitReason, why);
        }
    }

    /// Re-reads `stat` (and the wait reason when sleeping, unless `hint`
    /// gives it); sets the slot's state and name, or marks it dead. Returns
    /// `utime + stime` ticks.
    fn refresh(&mut self, tid: u32, slot: &mut Slot, dr: u64, dd: u64, hint: Option<ThreadState>) -> Option<u64> {
        let Ok(bytes) = read_task(&mut slot.stat, &self.dir, tid, "stat", &mut self.fds_kept, self.fd_budget, &mut self.buf[..]) else {
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
            b'S' => match hint {
                Some(state) => state,
                None => self.wait_reason(tid, slot),
            },
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
            let read = read_task(&mut slot.syscall, &self.dir, tid, "syscall", &mut self.fds_kept, self.fd_budget, &mut self.buf[..]);
            match read {
                Ok(bytes) => match parse_syscall(bytes) {
                    Some(SyscallField::Nr(nr)) => return classify_syscall(&table, nr),
                    Some(SyscallField::Running) => return ThreadState::Running,
                    Some(SyscallField::NotInSyscall) => return ThreadState::Other,
                    None => {} // unreadable content: ask wchan
                },
                Err(e) if e.kind() == ErrorKind::PermissionDenied => self.syscall_unreadable(&e),
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
    pub(crate) fn observe(&mut self, tid: u32, slot: &mut Slot, now: u64, tick_no: u64) {
        // Each thread is read every `stride` ticks (1 unless the CPU budget
        // says otherwise), and one asleep for a while every PARKED_EVERY
        // times that, spread over ticks by tid. No time is lost: the
        // counters are cumulative, so the next read accounts the whole window.
        let every = if slot.quiet_reads >= PARK_AFTER { PARKED_EVERY * self.stride } else { self.stride };
        if slot.primed && !self.read_all && !(tick_no + tid as u64).is_multiple_of(every) {
            self.samples.add(slot.state);
            return;
        }
        self.reads += 1;
        if self.schedstat == Some(false) {
            return self.observe_without_schedstat(tid, slot, now);
        }
        let read = read_task(&mut slot.schedstat, &self.dir, tid, "schedstat", &mut self.fds_kept, self.fd_budget, &mut self.buf[..]);
        let (runtime, delay, pcount) = match read.map(parse_schedstat) {
            Ok(Some(v)) => v,
            Ok(None) => return slot.dead = true,
            Err(e) if e.kind() == ErrorKind::NotFound && self.schedstat.is_none() => {
                // The thread may have just exited: only its stat tells.
                if self.refresh(tid, slot, 0, 0, None).is_some() {
                    self.disable_schedstat(format!("{}/{tid}/schedstat: {e}", self.dir.display()));
                    return self.observe_without_schedstat(tid, slot, now);
                }
                return;
            }
            Err(_) => return slot.dead = true,
        };
        if !slot.primed {
            let ticks = self.refresh(tid, slot, 0, 0, None);
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
            self.classify(tid, slot, dr, dd);
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
        let Some(ticks) = self.refresh(tid, slot, 0, 0, None) else {
            return;
        };
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
