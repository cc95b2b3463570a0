//! One `perf record` process per capture: started disabled, switched on and
//! off through its control fifo, stopped with its CPU time accounted.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

/// One `perf record`, started disabled (`-D -1`) before the window and
/// switched on and off through its control fifo (`--control fifo:`), so
/// perf's own start-up (seconds on a loaded machine) falls in the warm-up.
pub(super) struct Capture {
    pub(super) file: PathBuf,
    pub(super) ctl: PathBuf,
    pub(super) child: Option<Child>,
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
    /// Sends a control command (`enable`, `disable`); waits up to 3 s for
    /// perf to open its control fifo. False when perf is not there.
    pub(super) fn command(&self, cmd: &str) -> bool {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            match std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(&self.ctl) {
                Ok(mut f) => return f.write_all(format!("{cmd}\n").as_bytes()).is_ok(),
                Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                Err(_) => return false,
            }
        }
    }

    pub(super) fn enable(&mut self) {
        if self.child.is_some() && self.enabled_at.is_none() && !self.done && self.command("enable") {
            self.enabled_at = Some(Instant::now());
            self.cpu_at_enable = self.child.as_ref().map_or(0.0, |c| cpu_time_s(c.id()));
        }
    }

    pub(super) fn disable(&mut self) {
        if let Some(at) = self.enabled_at.take() {
            self.command("disable");
            self.duration_ns += at.elapsed().as_nanos() as u64;
            let now = self.child.as_ref().map_or(0.0, |c| cpu_time_s(c.id()));
            self.window_cpu_s += (now - self.cpu_at_enable).max(0.0);
        }
        self.done = true;
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
