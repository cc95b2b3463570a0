//! `--profile`: on-CPU and off-CPU call stacks of the server's whole process
//! tree over each step's window, taken with `perf` (docs/profiles.md).
//!
//! - On-CPU: `perf record -e cpu-clock -F 99 --call-graph dwarf` (frame
//!   pointers when DWARF fails, said so) for the whole window.
//! - Off-CPU: `sched:sched_switch` samples with stacks, and switch-in times
//!   (`--switch-events`), over the first `off_cpu_s` of the window (every
//!   switch carries an 8 KiB stack copy, so the capture is kept short).
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

struct Capture {
    file: PathBuf,
    child: Option<Child>,
    started: Instant,
    duration_ns: u64,
}

struct StepCapture {
    step: usize,
    unix_ms: i64,
    threads: u32,
    on: Capture,
    off: Option<Capture>,
    perf_cpu_s: f64,
}

/// Profiles the server step by step: [`begin_step`](Profiler::begin_step)
/// when a window opens, [`end_step`](Profiler::end_step) when it closes,
/// [`finish`](Profiler::finish) after the sweep.
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
    let Some(c) = child.take() else { return 0.0 };
    let pid = c.id() as libc::pid_t;
    // SAFETY: `pid` is our own child, not yet reaped (we own its Child), so the id names it.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own unreaped child; status and usage point to live locals.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
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

    fn record(&self, file: &Path, events: &[&str], seconds: Option<f64>) -> Option<Child> {
        let (pids, _) = tree(self.config.pid);
        let pids = pids.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        let mut cmd = Command::new(&self.config.perf);
        cmd.arg("record")
            .args(events)
            .args(["--call-graph", self.unwind, "--no-buildid", "--no-buildid-cache", "-q", "-p", &pids, "-o"])
            .arg(file);
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            cmd.args(["-m", "1024"]);
        }
        if let Some(s) = seconds {
            cmd.args(["--", "sleep", &format!("{s:.3}")]);
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().ok()
    }

    /// The window of step `step` (0-based) opened: starts capturing.
    pub fn begin_step(&mut self, step: usize) {
        let (_, threads) = tree(self.config.pid);
        let on_file = self.dir.join(format!("step{step}-on.data"));
        let rate = self.config.rate_hz.to_string();
        let on = Capture {
            child: self.record(&on_file, &["-e", "cpu-clock", "-F", &rate], None),
            file: on_file,
            started: Instant::now(),
            duration_ns: 0,
        };
        let off = self.off_cpu.then(|| {
            let file = self.dir.join(format!("step{step}-off.data"));
            let child = self.record(&file, &["-e", "sched:sched_switch", "--switch-events"], Some(self.config.off_cpu_s));
            Capture { child, file, started: Instant::now(), duration_ns: 0 }
        });
        self.steps.push(StepCapture { step, unix_ms: unix_ms(), threads, on, off, perf_cpu_s: 0.0 });
    }

    /// The window of the step being captured closed: stops its captures.
    pub fn end_step(&mut self) {
        let Some(s) = self.steps.last_mut() else { return };
        if s.on.child.is_none() {
            return;
        }
        let window = s.on.started.elapsed();
        s.on.duration_ns = window.as_nanos() as u64;
        s.perf_cpu_s += stop(&mut s.on.child);
        if let Some(off) = s.off.as_mut() {
            let planned = Duration::from_secs_f64(self.config.off_cpu_s);
            off.duration_ns = off.started.elapsed().min(planned).as_nanos() as u64;
            s.perf_cpu_s += stop(&mut off.child);
        }
        self.overhead.record_cpu_s += s.perf_cpu_s;
        self.overhead.windows += 1;
        self.overhead.window_s += window.as_secs_f64();
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
            return Err(format!("perf script could not read {} ({status})", file.display()));
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
        for s in steps {
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
