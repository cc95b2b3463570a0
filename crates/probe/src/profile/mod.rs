//! `--profile`: on-CPU and off-CPU call stacks of the server's whole process
//! tree over each step's window, taken with `perf` (docs/profiles.md).
//!
//! - On-CPU: `perf record -e cpu-clock -F 99 --call-graph dwarf` (frame
//!   pointers when DWARF fails, said so) for the whole window.
//! - Off-CPU: `sched:sched_switch` samples with stacks, and switch-in times
//!   (`--switch-events`), over the first `off_cpu_s` of the window (every
//!   switch carries an 8 KiB stack copy, so the capture is kept short).
//! - Each capture is a `perf record` started disabled when the step begins
//!   and enabled through its control fifo when the window opens, so perf's
//!   start-up falls in the warm-up and the capture matches the window.
//! - Symbols: `perf script`'s own resolution (symbol tables, debug info and
//!   debug-link files, inlined frames); unresolved frames as `module+0xoffset`.
//!
//! The captures are folded after the sweep ([`Profiler::finish`]), when the
//! load is off, so folding does not compete with the measured server.
//!
//! [`check`] decides what can run; [`fold`] reads `perf script` output.

pub mod check;
pub mod fold;

use crate::collect::record::unix_ms;
use crate::collect::Record;
use scalelab_core::sample::ProfileSample;
use scalelab_core::{Sample, Source};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What to profile.
#[derive(Clone, Debug)]
pub struct ProfileConfig {
    /// The server process; its descendants are profiled with it.
    pub pid: u32,
    /// On-CPU samples per second per CPU.
    pub rate_hz: u32,
    /// Off-CPU capture at the start of each window, at most this long (0: none).
    pub off_cpu_s: f64,
    /// The perf binary (`perf`, or `SCALELAB_PERF`).
    pub perf: PathBuf,
}

impl ProfileConfig {
    /// 99 Hz, 1 s of off-CPU capture per window, `perf` from `SCALELAB_PERF` or the PATH.
    pub fn new(pid: u32) -> ProfileConfig {
        let perf = std::env::var_os("SCALELAB_PERF").map_or_else(|| PathBuf::from("perf"), PathBuf::from);
        ProfileConfig { pid, rate_hz: 99, off_cpu_s: 1.0, perf }
    }
}

/// What profiling cost, for the run's summary.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overhead {
    /// CPU time of `perf record` during the windows, s.
    pub record_cpu_s: f64,
    /// Windows profiled and their total length, s.
    pub windows: usize,
    pub window_s: f64,
    /// Time to fold the captures after the run, s.
    pub fold_s: f64,
    /// Size of the captures, bytes.
    pub bytes: u64,
}

/// One `perf record`, started disabled (`-D -1`) before the window and
/// switched on and off through its control fifo (`--control fifo:`), so
/// perf's own start-up (seconds on a loaded machine) falls in the warm-up.
struct Capture {
    file: PathBuf,
    ctl: PathBuf,
    child: Option<Child>,
    /// When it was enabled, and for how long it has been, ns.
    enabled_at: Option<Instant>,
    duration_ns: u64,
    /// Done: disabled after its planned length.
    done: bool,
}

impl Capture {
    /// Sends a control command (`enable`, `disable`); waits up to 3 s for
    /// perf to open its control fifo. False when perf is not there.
    fn command(&self, cmd: &str) -> bool {
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

    fn enable(&mut self) {
        if self.child.is_some() && self.enabled_at.is_none() && !self.done && self.command("enable") {
            self.enabled_at = Some(Instant::now());
        }
    }

    fn disable(&mut self) {
        if let Some(at) = self.enabled_at.take() {
            self.command("disable");
            self.duration_ns += at.elapsed().as_nanos() as u64;
        }
        self.done = true;
    }
}

struct StepCapture {
    step: usize,
    unix_ms: i64,
    threads: u32,
    on: Capture,
    off: Option<Capture>,
    perf_cpu_s: f64,
}

/// Profiles the server step by step: [`prepare_step`](Profiler::prepare_step)
/// when a step begins, [`open_window`](Profiler::open_window) when its window
/// opens, [`tick`](Profiler::tick) as it runs, [`end_step`](Profiler::end_step)
/// when it closes, [`finish`](Profiler::finish) after the sweep.
pub struct Profiler {
    config: ProfileConfig,
    dir: PathBuf,
    unwind: &'static str,
    off_cpu: bool,
    steps: Vec<StepCapture>,
    overhead: Overhead,
    notes: Vec<Record>,
}

/// Every thread of `pid` and its descendants, and the process ids.
fn tree(pid: u32) -> (Vec<u32>, u32) {
    let proc_root = Path::new("/proc");
    let mut pids = vec![pid];
    pids.extend(crate::tree::descendants(proc_root, pid).unwrap_or_default());
    let threads = pids.iter().map(|p| std::fs::read_dir(proc_root.join(p.to_string()).join("task")).map_or(0, |d| d.count() as u32)).sum();
    (pids, threads)
}

/// Sends SIGINT to a running perf (it then writes its file and exits) and
/// reaps it; its CPU time, s.
fn stop(child: &mut Option<Child>) -> f64 {
    stop_within(child, Duration::ZERO)
}

/// Waits up to `grace` for a perf told to `stop` to exit by itself (it reads
/// the command once it is recording, so a slow start-up is waited out, not
/// cut: a perf interrupted while starting leaves an unreadable file), then
/// sends SIGINT (it then writes its file and exits) and reaps it; its CPU time, s.
fn stop_within(child: &mut Option<Child>, grace: Duration) -> f64 {
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

impl Profiler {
    /// Checks what can be profiled on the server; None when nothing can,
    /// with the reasons as records (`unavailable.profile`) and notices of
    /// what was done (tracefs mounted) to tell the user.
    pub fn start(config: ProfileConfig) -> (Option<Profiler>, Vec<Record>, Vec<String>) {
        let dir = std::env::temp_dir().join(format!("scalelab-profile-{}-{}", std::process::id(), unix_ms()));
        if let Err(e) = std::fs::create_dir_all(&dir) {
            let why = format!("cannot create {} for perf's captures: {e}; fix: set TMPDIR to a writable directory", dir.display());
            return (None, vec![Record::Unavailable(Source::Profile, why)], Vec::new());
        }
        let avail = check::check(&config.perf, config.pid, &dir, config.off_cpu_s > 0.0);
        let mut notes = Vec::new();
        if config.off_cpu_s > 0.0 {
            if let Err(why) = &avail.off_cpu {
                notes.push(Record::Unavailable(Source::ProfileOffCpu, why.clone()));
            }
        }
        let unwind = match avail.on_cpu {
            Ok(u) => u,
            Err(why) => {
                notes.push(Record::Unavailable(Source::Profile, why));
                let _ = std::fs::remove_dir_all(&dir);
                return (None, notes, avail.notices);
            }
        };
        let off_cpu = avail.off_cpu.is_ok();
        let p = Profiler { config, dir, unwind, off_cpu, steps: Vec::new(), overhead: Overhead::default(), notes };
        (Some(p), Vec::new(), avail.notices)
    }

    /// How user stacks are unwound: `dwarf` or `fp`.
    pub fn unwind(&self) -> &'static str {
        self.unwind
    }

    /// Starts a disabled `perf record` of `events` on the server's tree.
    fn record(&self, name: &str, events: &[&str]) -> Capture {
        let (pids, _) = tree(self.config.pid);
        let pids = pids.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        let file = self.dir.join(format!("{name}.data"));
        let ctl = self.dir.join(format!("{name}.ctl"));
        let c_ctl = std::ffi::CString::new(ctl.as_os_str().as_encoded_bytes()).expect("no NUL in a temp path");
        // SAFETY: c_ctl is a valid NUL-terminated path that lives across the call.
        let made = unsafe { libc::mkfifo(c_ctl.as_ptr(), 0o600) } == 0;
        let mut cmd = Command::new(&self.config.perf);
        cmd.arg("record").args(events).args(["--call-graph", self.unwind, "--no-buildid", "--no-buildid-cache", "-q", "-D", "-1"]);
        cmd.arg("--control").arg(format!("fifo:{}", ctl.display())).args(["-p", &pids, "-o"]).arg(&file);
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            cmd.args(["-m", "1024"]);
        }
        let log = std::fs::File::create(self.dir.join(format!("{name}.log"))).map_or_else(|_| Stdio::null(), Stdio::from);
        let child = if made { cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log).spawn().ok() } else { None };
        Capture { file, ctl, child, enabled_at: None, duration_ns: 0, done: false }
    }

    /// Step `step` (0-based) begins (its clients connect, then warm up):
    /// starts its captures, disabled, so perf is ready when the window opens.
    pub fn prepare_step(&mut self, step: usize) {
        self.end_step();
        let on = self.record(&format!("step{step}-on"), &["-e", "cpu-clock", "-F", &self.config.rate_hz.to_string()]);
        let off = self.off_cpu.then(|| self.record(&format!("step{step}-off"), &["-e", "sched:sched_switch", "--switch-events"]));
        self.steps.push(StepCapture { step, unix_ms: unix_ms(), threads: 0, on, off, perf_cpu_s: 0.0 });
    }

    /// The window of the prepared step opened: capturing starts.
    pub fn open_window(&mut self) {
        let Some(s) = self.steps.last_mut() else { return };
        s.unix_ms = unix_ms();
        s.threads = tree(self.config.pid).1;
        s.on.enable();
        if let Some(off) = s.off.as_mut() {
            off.enable();
        }
    }

    /// Called as the window runs: ends the off-CPU capture after its planned length.
    pub fn tick(&mut self) {
        let planned = Duration::from_secs_f64(self.config.off_cpu_s);
        if let Some(off) = self.steps.last_mut().and_then(|s| s.off.as_mut()) {
            if off.enabled_at.is_some_and(|at| at.elapsed() >= planned) {
                off.disable();
            }
        }
    }

    /// The window of the step being captured closed: stops its captures.
    pub fn end_step(&mut self) {
        let Some(s) = self.steps.last_mut() else { return };
        if s.on.child.is_none() {
            return;
        }
        s.on.disable();
        s.on.command("stop");
        if let Some(off) = s.off.as_mut() {
            off.disable();
            off.command("stop");
            s.perf_cpu_s += stop_within(&mut off.child, Duration::from_secs(10));
        }
        s.perf_cpu_s += stop_within(&mut s.on.child, Duration::from_secs(10));
        if s.on.duration_ns > 0 {
            self.overhead.windows += 1;
            self.overhead.window_s += s.on.duration_ns as f64 / 1e9;
        }
        self.overhead.record_cpu_s += s.perf_cpu_s;
    }

    /// Folds one capture with `perf script`.
    fn fold(&mut self, file: &Path) -> Result<fold::Folded, String> {
        self.overhead.bytes += std::fs::metadata(file).map_or(0, |m| m.len());
        let mut child = Command::new(&self.config.perf)
            .args([
                "script",
                "--no-inline",
                "--show-switch-events",
                "--show-lost-events",
                "-F",
                "pid,tid,time,event,trace,ip,sym,dso",
                "-i",
            ])
            .arg(file)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("perf script cannot be run: {e}"))?;
        let folded = fold::fold(BufReader::new(child.stdout.take().expect("piped")));
        let status = child.wait().map_err(|e| e.to_string())?;
        let folded = folded.map_err(|e| format!("reading perf script's output: {e}"))?;
        if !status.success() && folded.span_ns.is_none() {
            // What perf record said, when it said anything (it was stopped before it was ready, ...).
            let said = std::fs::read_to_string(file.with_extension("log")).unwrap_or_default();
            let said = said.lines().map(str::trim).rfind(|l| !l.is_empty()).map(|l| format!("; perf record said: {l}")).unwrap_or_default();
            return Err(format!("perf script could not read {} ({status}){said}", file.display()));
        }
        Ok(folded)
    }

    /// Folds every capture into one [`ProfileSample`] per step (after the
    /// sweep, load off) and removes the captures. Returns the records to
    /// store and what profiling cost.
    pub fn finish(mut self) -> (Vec<Record>, Overhead) {
        self.end_step();
        let started = Instant::now();
        let mut out = std::mem::take(&mut self.notes);
        let steps = std::mem::take(&mut self.steps);
        for s in steps.into_iter().filter(|s| s.on.duration_ns > 0) {
            let mut sample = ProfileSample { step: s.step, unix_ms: s.unix_ms, on_cpu: None, off_cpu: None, perf_cpu_s: s.perf_cpu_s };
            match self.fold(&s.on.file) {
                Ok(f) => sample.on_cpu = Some(f.on_cpu_profile(s.on.duration_ns, s.threads, self.unwind, self.config.rate_hz)),
                Err(why) => out.push(Record::Unavailable(Source::Profile, format!("step {}: {why}", s.step + 1))),
            }
            if let Some(off) = &s.off {
                match self.fold(&off.file) {
                    Ok(f) => sample.off_cpu = Some(f.off_cpu_profile(off.duration_ns, s.threads, self.unwind)),
                    Err(why) => out.push(Record::Unavailable(Source::ProfileOffCpu, format!("step {}: {why}", s.step + 1))),
                }
            }
            let _ = std::fs::remove_file(&s.on.file);
            if let Some(off) = &s.off {
                let _ = std::fs::remove_file(&off.file);
            }
            out.push(Record::Sample(Sample::Profile(Box::new(sample))));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        self.overhead.fold_s = started.elapsed().as_secs_f64();
        (out, self.overhead.clone())
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        for s in &mut self.steps {
            stop(&mut s.on.child);
            if let Some(off) = s.off.as_mut() {
                stop(&mut off.child);
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
