//! One `perf record` process per capture: started disabled, switched on and
//! off through its control fifo, each command's effect taken when perf
//! acknowledges it, stopped with its CPU time accounted.

use std::collections::{HashSet, VecDeque};
use std::io::Read;
use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

/// A command sent to perf and not yet acknowledged.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Cmd {
    Ping,
    Enable,
    Disable,
}

/// One `perf record`, started disabled (`-D -1`) before the window and
/// switched on and off through its control fifo (`--control fifo:ctl,ack`).
/// perf reads commands only once it has started (a second of CPU, more on
/// a loaded machine): a ping's acknowledgement says it is ready, and a
/// capture's length runs from the acknowledgement of `enable` to that of
/// `disable`, not from when they were sent.
pub(super) struct Capture {
    pub(super) file: PathBuf,
    pub(super) ctl: PathBuf,
    /// The read end of perf's acknowledgement fifo.
    pub(super) ack: Option<std::fs::File>,
    pub(super) child: Option<Child>,
    /// Sent, not yet acknowledged, oldest first.
    pub(super) pending: VecDeque<Cmd>,
    /// perf acknowledged a command: it is started and reading them.
    pub(super) ready: bool,
    /// `enable` could not be sent yet (perf had not opened its fifo): sent
    /// at the next poll.
    pub(super) enable_wanted: bool,
    /// When it was enabled, and for how long it has been, ns.
    pub(super) enabled_at: Option<Instant>,
    pub(super) duration_ns: u64,
    /// Done: disabled after its planned length.
    pub(super) done: bool,
    /// perf's CPU time when it was enabled, and used while it was, s.
    pub(super) cpu_at_enable: f64,
    pub(super) window_cpu_s: f64,
}

/// CPU time (user + system) of process `pid` so far, s; 0 when it is gone.
pub(super) fn cpu_time_s(pid: u32) -> f64 {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).unwrap_or_default();
    crate::process::parse_pid_stat(&stat).map_or(0.0, |st| (st.utime + st.stime) as f64 / f64::from(crate::time::user_hz()))
}

impl Capture {
    /// Sends a control command without waiting for it; false when perf is
    /// not there (never started, or not yet listening: it opens its fifo
    /// within milliseconds of starting, so the caller tries again later).
    fn send(&mut self, cmd: Cmd) -> bool {
        let text = match cmd {
            Cmd::Ping => "ping\n",
            Cmd::Enable => "enable\n",
            Cmd::Disable => "disable\n",
        };
        let sent = self.child.is_some() && self.write_ctl(text);
        if sent {
            self.pending.push_back(cmd);
        }
        sent
    }

    /// Writes `text` to perf's control fifo without waiting for a reader.
    fn write_ctl(&self, text: &str) -> bool {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&self.ctl)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .is_ok()
    }

    /// Tells perf to stop (it writes its file and exits); not acknowledged.
    pub(super) fn stop_command(&self) {
        self.write_ctl("stop\n");
    }

    /// Takes the acknowledgements perf has written, each the effect of the
    /// oldest pending command, now: ready, enabled, disabled.
    pub(super) fn poll(&mut self) {
        if self.enable_wanted && !self.done && self.send(Cmd::Enable) {
            self.enable_wanted = false;
        }
        let Some(ack) = self.ack.as_mut() else { return };
        let mut buf = [0u8; 256];
        // perf writes "ack\n" and a NUL per command.
        let n = match ack.read(&mut buf) {
            Ok(n) => n,
            Err(_) => return,
        };
        let acks = buf[..n].windows(4).filter(|w| w == b"ack\n").count();
        for _ in 0..acks {
            self.ready = true;
            match self.pending.pop_front() {
                Some(Cmd::Enable) => {
                    self.enabled_at = Some(Instant::now());
                    self.cpu_at_enable = self.child.as_ref().map_or(0.0, |c| cpu_time_s(c.id()));
                }
                Some(Cmd::Disable) => self.closed(),
                Some(Cmd::Ping) | None => {}
            }
        }
    }

    /// Whether perf is started (a command acknowledged), pinging it first
    /// when nothing has been sent; a perf that is gone is not waited for.
    pub(super) fn is_ready(&mut self) -> bool {
        if self.ready || self.child.is_none() || self.exited() {
            return true;
        }
        if self.pending.is_empty() {
            self.send(Cmd::Ping);
        }
        self.poll();
        self.ready
    }

    /// Whether perf has exited (not reaped: its CPU time is read when it is).
    fn exited(&self) -> bool {
        let Some(c) = &self.child else { return true };
        // SAFETY: an all-zero siginfo_t is a valid value for waitid to fill.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: polls our own child without reaping it (WNOWAIT); info is a live local.
        let r = unsafe { libc::waitid(libc::P_PID, c.id(), &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT) };
        // SAFETY: si_pid is set by waitid when a child changed state, else left 0.
        r != 0 || unsafe { info.si_pid() } != 0
    }

    /// Waits up to `limit` for every pending command to be acknowledged.
    pub(super) fn settle(&mut self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            self.poll();
            if self.pending.is_empty() || self.exited() || Instant::now() >= deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Switches the capture on; it counts from perf's acknowledgement.
    pub(super) fn enable(&mut self) {
        if !self.done && self.enabled_at.is_none() && !self.pending.contains(&Cmd::Enable) {
            self.enable_wanted = !self.send(Cmd::Enable);
        }
    }

    /// Switches the capture off for good; its length ends at perf's
    /// acknowledgement (or now, when perf does not answer).
    pub(super) fn disable(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        self.enable_wanted = false;
        if self.enabled_at.is_some() || self.pending.contains(&Cmd::Enable) {
            self.send(Cmd::Disable);
        }
    }

    /// The capture was switched off: its length and perf's CPU time in it.
    fn closed(&mut self) {
        if let Some(at) = self.enabled_at.take() {
            self.duration_ns += at.elapsed().as_nanos() as u64;
            let now = self.child.as_ref().map_or(0.0, |c| cpu_time_s(c.id()));
            self.window_cpu_s += (now - self.cpu_at_enable).max(0.0);
        }
    }

    /// Before perf is stopped: a disable not acknowledged in time ends the
    /// capture now, and an enable never acknowledged leaves it empty.
    pub(super) fn close_unanswered(&mut self) {
        self.pending.clear();
        self.closed();
    }
}

pub(super) struct StepCapture {
    pub(super) step: usize,
    pub(super) unix_ms: i64,
    pub(super) threads: u32,
    pub(super) on: Capture,
    /// Off-CPU: the sampled switches with their stacks, and, when captured
    /// on every CPU, the server's switch-ins (no stacks) that end them.
    pub(super) off: Option<Capture>,
    pub(super) off_in: Option<Capture>,
    /// Off-CPU: one switch in this many sampled; the server's context
    /// switches counted when the step began, while its off-CPU capture
    /// waits for a rate to choose it from.
    pub(super) every: u32,
    pub(super) switches_at: Option<(Instant, u64)>,
    /// The server's threads seen when the window opened and closed: a
    /// system-wide on-CPU capture keeps their samples only.
    pub(super) tids: HashSet<u32>,
    pub(super) perf_cpu_s: f64,
}

impl StepCapture {
    /// Every capture of this step: on-CPU, then off-CPU.
    pub(super) fn all(&mut self) -> impl Iterator<Item = &mut Capture> {
        std::iter::once(&mut self.on).chain(self.off.iter_mut()).chain(self.off_in.iter_mut())
    }

    /// The off-CPU captures running for this step.
    pub(super) fn off_cpu(&mut self) -> impl Iterator<Item = &mut Capture> {
        self.off.iter_mut().chain(self.off_in.iter_mut())
    }
}

/// Sends SIGINT to a running perf (it then writes its file and exits) and
/// reaps it; its CPU time, s.
pub(super) fn stop(child: &mut Option<Child>) -> f64 {
    stop_within(child, Duration::ZERO)
}

/// Waits up to `grace` for a perf told to `stop` to exit by itself (it reads
/// the command once it is recording, so a slow start-up is waited out, not
/// cut: a perf interrupted while starting leaves an unreadable file), then
/// sends SIGINT (it then writes its file and exits) and reaps it; its CPU time, s.
pub(super) fn stop_within(child: &mut Option<Child>, grace: Duration) -> f64 {
    let Some(c) = child.take() else { return 0.0 };
    let pid = c.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let deadline = Instant::now() + grace;
    let mut r = 0;
    while Instant::now() < deadline {
        // SAFETY: polls our own unreaped child; status and usage point to live locals.
        r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r != 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if r == 0 {
        // SAFETY: `pid` is our own child, not yet reaped (we own its Child), so the id names it.
        unsafe { libc::kill(pid, libc::SIGINT) };
        // SAFETY: waits for our own unreaped child; status and usage point to live locals.
        r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    }
    if r != pid {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}
