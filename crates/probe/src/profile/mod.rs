//! `--profile`: on-CPU and off-CPU call stacks of the server's whole process
//! tree over each step's window, taken with `perf` (docs/profiles.md).
//!
//! - On-CPU: `perf record -e cpu-clock -F 99 --call-graph dwarf` (frame
//!   pointers when DWARF fails, said so) over the window's first 5 s (it
//!   costs nginx and PostgreSQL 3 to 5 % of their throughput while it runs;
//!   a watch's windows whole).
//! - Off-CPU: `sched:sched_switch` samples with stacks, one switch in N
//!   (`--no-period -c N`: each sample carries an 8 KiB stack copy, too
//!   costly at every switch; N chosen per step from the server's switch
//!   rate in the warm-up, for about 200 stacks/s), and every switch-in time
//!   of the server's threads to end the sampled sleeps, over the window's
//!   first second (that costs PostgreSQL 3-8 % of its throughput while it
//!   runs, so not longer by default). When allowed, both are captured on every CPU
//!   with a kernel filter on the server's threads (`-a --filter
//!   'prev_pid==…'`, and `next_pid` for the switch-ins, a second capture
//!   without stacks): events attached to the threads themselves cost each
//!   of their context switches ~3.6 µs, the filtered ones ~1.6 µs (docs/profiles.md, Cost).
//! - Each capture is a `perf record` started disabled when the step begins
//!   and enabled through its control fifo when the window opens. perf reads
//!   its fifo only once started (0.15-0.25 CPU-s each, a second or more of
//!   wall time on a loaded machine): the sweep holds the step's warm-up
//!   until every capture has answered a ping ([`Profiler::ready`]), so
//!   perf's start is not paid inside the window, and a capture's length
//!   runs from perf's acknowledgement of `enable` to that of `disable`.
//! - Symbols: `perf script`'s own resolution (symbol tables, debug info and
//!   debug-link files, inlined frames); unresolved frames as `module+0xoffset`.
//!
//! The captures are folded after the sweep ([`Profiler::finish`]), when the
//! load is off, so folding does not compete with the measured server.
//!
//! [`check`] decides what can run; `config` holds the settings, `capture`
//! runs each `perf record`, `server` reads the server's tree from /proc;
//! [`fold`] reads `perf script` output.

mod capture;
pub mod check;
mod config;
pub mod fold;
mod server;

use capture::{stop, stop_within, Capture, StepCapture};
use check::may_sample_all_cpus;
pub use config::ProfileConfig;
use server::{switches, tids, tree};

use crate::collect::record::unix_ms;
use crate::collect::Record;
use scalelab_core::sample::ProfileSample;
use scalelab_core::{Sample, Source};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What profiling cost, for the run's summary.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overhead {
    /// CPU time of `perf record`, s: all of it (starting, capturing,
    /// writing its file), and the part spent while the windows ran.
    pub record_cpu_s: f64,
    pub window_cpu_s: f64,
    /// Windows profiled and their total length, s.
    pub windows: usize,
    pub window_s: f64,
    /// Time to fold the captures after the run, s.
    pub fold_s: f64,
    /// Size of the captures, bytes.
    pub bytes: u64,
    /// How long the steps' warm-ups were held past their planned end for
    /// perf to start, s, in all.
    pub warmup_held_s: f64,
}

impl Overhead {
    /// What `--profile` cost: perf's CPU time while the windows ran (the
    /// server's machine pays it), in all (its start in the warm-up, writing its
    /// files after the window), and the folding after the run.
    pub fn summary(&self) -> String {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let share = if self.window_s > 0.0 { 100.0 * self.window_cpu_s / (self.window_s * cpus) } else { 0.0 };
        format!(
            "profile: perf record used {:.2} CPU-s in {} window(s) of {:.1} s ({share:.1} % of {cpus} CPUs; {:.2} CPU-s with its start and stop){held}; {:.1} MB folded in {:.1} s after the run",
            self.window_cpu_s,
            self.windows,
            self.window_s,
            self.record_cpu_s,
            self.bytes as f64 / 1e6,
            self.fold_s,
            held = if self.warmup_held_s >= 0.05 {
                format!("; warm-ups held {:.1} s in all for perf to start", self.warmup_held_s)
            } else {
                String::new()
            }
        )
    }
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
    /// On-CPU samples every CPU (`-a`), the server's threads kept when folding.
    all_cpus: bool,
    /// Off-CPU captured on every CPU, filtered on the server's threads.
    off_cpu_all_cpus: bool,
    steps: Vec<StepCapture>,
    overhead: Overhead,
    notes: Vec<Record>,
}

impl Profiler {
    /// Checks what can be profiled on the server; None when nothing can,
    /// with the reasons as records (`unavailable.profile`) and notices of
    /// what was done (tracefs mounted) to tell the user.
    pub fn start(config: ProfileConfig) -> (Option<Profiler>, Vec<Record>, Vec<String>) {
        // A private directory (mode 0700, unpredictable name): perf's files
        // and control fifos are made in it as root.
        let dir = match private_dir() {
            Ok(d) => d,
            Err(e) => {
                let why = format!(
                    "cannot create a directory for perf's captures in {}: {e}; fix: set TMPDIR to a writable directory",
                    std::env::temp_dir().display()
                );
                return (None, vec![Record::Unavailable(Source::Profile, why)], Vec::new());
            }
        };
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
        let off_cpu_all_cpus = avail.off_cpu_all_cpus && !config.off_cpu_per_thread;
        let p = Profiler {
            config,
            dir,
            unwind,
            off_cpu,
            all_cpus: may_sample_all_cpus(),
            off_cpu_all_cpus,
            steps: Vec::new(),
            overhead: Overhead::default(),
            notes,
        };
        (Some(p), Vec::new(), avail.notices)
    }

    /// `watch --profile`: how long each profiled window lasts.
    pub fn watch_window(&self) -> Duration {
        Duration::from_secs_f64(self.config.watch_window_s)
    }

    /// Whether off-CPU is captured on every CPU with a kernel filter on the
    /// server's threads (else on the threads themselves).
    pub fn off_cpu_all_cpus(&self) -> bool {
        self.off_cpu_all_cpus
    }

    /// A step's warm-up was held `s` seconds past its planned end for perf
    /// to start; said in the run's summary.
    pub fn held_warmup(&mut self, s: f64) {
        self.overhead.warmup_held_s += s;
    }

    /// How user stacks are unwound: `dwarf` or `fp`.
    pub fn unwind(&self) -> &'static str {
        self.unwind
    }

    /// Starts a disabled `perf record` of `events` on the server's tree (or
    /// on every CPU, `all_cpus`), stacks unwound as `call_graph` says (None: no stacks).
    fn record(&self, name: &str, events: &[&str], call_graph: Option<&str>, all_cpus: bool) -> Capture {
        let (pids, _) = tree(self.config.pid);
        let pids = pids.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        let file = self.dir.join(format!("{name}.data"));
        let ctl = self.dir.join(format!("{name}.ctl"));
        let ack_path = self.dir.join(format!("{name}.ack"));
        let fifo = |path: &Path| {
            let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("no NUL in a temp path");
            // SAFETY: c is a valid NUL-terminated path that lives across the call.
            unsafe { libc::mkfifo(c.as_ptr(), 0o600) == 0 }
        };
        let made = fifo(&ctl) && fifo(&ack_path);
        // Our read end, opened before perf opens its write end (a
        // non-blocking read open of a fifo does not wait for a writer).
        let ack = made
            .then(|| {
                use std::os::unix::fs::OpenOptionsExt;
                std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW).open(&ack_path).ok()
            })
            .flatten();
        let mut cmd = Command::new(&self.config.perf);
        cmd.arg("record").args(events);
        if let Some(graph) = call_graph {
            cmd.args(["--call-graph", graph]);
        }
        cmd.args(["--no-buildid", "--no-buildid-cache", "-q", "-D", "-1"]);
        cmd.arg("--control")
            .arg(format!("fifo:{},{}", ctl.display(), ack_path.display()))
            .args(if all_cpus { vec!["-a", "-o"] } else { vec!["-p", &pids, "-o"] })
            .arg(&file);
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            cmd.args(["-m", "1024"]);
        }
        let log = private_file(&self.dir.join(format!("{name}.log"))).map_or_else(|_| Stdio::null(), Stdio::from);
        let child = if ack.is_some() { cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log).spawn().ok() } else { None };
        if let (Some(c), true) = (&child, self.config.nice != 0) {
            // SAFETY: setpriority on our own child's pid; no memory is passed.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, c.id(), self.config.nice) };
        }
        Capture {
            file,
            ctl,
            ack,
            child,
            pending: Default::default(),
            ready: false,
            enable_wanted: false,
            enabled_at: None,
            duration_ns: 0,
            done: false,
            cpu_at_enable: 0.0,
            window_cpu_s: 0.0,
        }
    }

    /// Step `step` (0-based) begins (its clients connect, then warm up):
    /// starts its captures, disabled, so perf is ready when the window opens.
    pub fn prepare_step(&mut self, step: usize) {
        self.end_step();
        // On-CPU on every CPU when allowed: events attached to the server's
        // threads are switched in and out at each of their context switches,
        // which cost PostgreSQL at 10 clients ~20 % of its throughput; per-CPU
        // events cost nothing there. Only the server's threads are kept.
        let on = self.record(
            &format!("step{step}-on"),
            &["-e", "cpu-clock", "-F", &self.config.rate_hz.to_string()],
            Some(self.unwind),
            self.all_cpus,
        );
        let every = self.config.off_cpu_every;
        let switches_at = (self.off_cpu && every == 0).then(|| (Instant::now(), switches(self.config.pid)));
        self.steps.push(StepCapture {
            step,
            unix_ms: unix_ms(),
            threads: 0,
            on,
            off: None,
            off_in: None,
            every,
            switches_at,
            tids: Default::default(),
            perf_cpu_s: 0.0,
        });
        if self.off_cpu && every > 0 {
            self.start_off_cpu();
        }
    }

    /// Starts the last step's off-CPU capture (disabled), sampling one switch
    /// in the configured number, or in as many as keep it near
    /// `off_cpu_stacks_per_s` at the switch rate seen since the step began
    /// (measured over at least 200 ms).
    fn start_off_cpu(&mut self) {
        let Some(s) = self.steps.last() else { return };
        if s.off.is_some() {
            return;
        }
        let (step, mut every) = (s.step, s.every);
        if let Some((at, before)) = s.switches_at {
            std::thread::sleep(Duration::from_millis(200).saturating_sub(at.elapsed()));
            let rate = switches(self.config.pid).saturating_sub(before) as f64 / at.elapsed().as_secs_f64();
            every = (rate / f64::from(self.config.off_cpu_stacks_per_s)).ceil().max(1.0) as u32;
        }
        let (off_graph, _) = self.config.off_cpu_call_graph(self.unwind);
        let c = every.to_string();
        // On every CPU with the server's threads in a kernel filter when it
        // fits (a filter is at most a page), else on the threads themselves.
        let mut threads: Vec<u32> = tids(self.config.pid).collect();
        threads.sort_unstable();
        let filters = self.off_cpu_all_cpus.then(|| switch_filter("prev_pid", &threads).zip(switch_filter("next_pid", &threads))).flatten();
        let (off, off_in) = match filters {
            Some((out, back)) => {
                let off = self.record(
                    &format!("step{step}-off"),
                    &["-e", "sched:sched_switch", "--filter", &out, "--no-period", "-c", &c],
                    Some(&off_graph),
                    true,
                );
                let off_in = self.record(
                    &format!("step{step}-offin"),
                    &["-e", "sched:sched_switch", "--filter", &back, "--no-period", "-c", "1"],
                    None,
                    true,
                );
                (off, Some(off_in))
            }
            None => {
                let events = ["-e", "sched:sched_switch", "--no-period", "-c", &c, "--switch-events"];
                (self.record(&format!("step{step}-off"), &events, Some(&off_graph), false), None)
            }
        };
        let s = self.steps.last_mut().expect("checked above");
        (s.off, s.off_in, s.every, s.switches_at) = (Some(off), off_in, every, None);
    }

    /// Whether the prepared step's captures are started (perf acknowledged
    /// a ping), so its window may open: perf's start, a second of CPU or
    /// more on a loaded machine, is then paid in the warm-up, not in the
    /// window. A perf that is gone is not waited for.
    pub fn ready(&mut self) -> bool {
        let Some(s) = self.steps.last_mut() else { return true };
        if s.switches_at.is_some() {
            // The off-CPU capture waits for the server's switch rate.
            return false;
        }
        // Every capture is pinged, not only up to the first that is not ready.
        let mut ready = true;
        for c in s.all() {
            ready &= c.is_ready();
        }
        ready
    }

    /// The window of the prepared step opened: capturing starts, each
    /// capture from perf's acknowledgement (waited for when perf is ready;
    /// else taken as it comes, in [`tick`](Profiler::tick)).
    pub fn open_window(&mut self) {
        if self.steps.last().is_some_and(|s| s.switches_at.is_some()) {
            self.start_off_cpu();
        }
        let Some(s) = self.steps.last_mut() else { return };
        s.unix_ms = unix_ms();
        s.threads = tree(self.config.pid).1;
        s.tids.extend(tids(self.config.pid));
        s.all().for_each(Capture::enable);
        for c in s.all() {
            if c.ready {
                c.settle(Duration::from_secs(2));
            }
        }
    }

    /// Called as the window runs: takes perf's acknowledgements and ends
    /// the on- and off-CPU captures after their planned lengths.
    pub fn tick(&mut self) {
        if let Some(s) = self.steps.last_mut() {
            s.all().for_each(Capture::poll);
        }
        // In the warm-up, once the switch rate has been seen for 250 ms.
        if self.steps.last().and_then(|s| s.switches_at).is_some_and(|(at, _)| at.elapsed() >= Duration::from_millis(250)) {
            self.start_off_cpu();
        }
        let past = |c: &Capture, planned: f64| {
            planned.is_finite() && !c.done && c.enabled_at.is_some_and(|at| at.elapsed().as_secs_f64() >= planned)
        };
        let (off_planned, on_planned) = (self.config.off_cpu_planned_s(), self.config.on_cpu_planned_s());
        if let Some(s) = self.steps.last_mut() {
            if s.off.as_ref().is_some_and(|off| past(off, off_planned)) {
                for off in s.off_cpu() {
                    off.disable();
                    off.settle(Duration::from_millis(500));
                }
            }
            if past(&s.on, on_planned) {
                s.on.disable();
                s.on.settle(Duration::from_millis(500));
            }
        }
    }

    /// The window of the step being captured closed: stops its captures.
    pub fn end_step(&mut self) {
        let Some(s) = self.steps.last_mut() else { return };
        if s.on.child.is_none() {
            return;
        }
        s.all().for_each(Capture::disable);
        s.tids.extend(tids(self.config.pid));
        for c in s.all() {
            c.settle(Duration::from_secs(2));
            c.close_unanswered();
            c.stop_command();
        }
        let mut perf_cpu_s = 0.0;
        for off in s.off_cpu() {
            perf_cpu_s += stop_within(&mut off.child, Duration::from_secs(10));
            self.overhead.window_cpu_s += off.window_cpu_s;
        }
        s.perf_cpu_s += perf_cpu_s + stop_within(&mut s.on.child, Duration::from_secs(10));
        self.overhead.window_cpu_s += s.on.window_cpu_s;
        if s.on.duration_ns > 0 {
            self.overhead.windows += 1;
            self.overhead.window_s += s.on.duration_ns as f64 / 1e9;
        }
        self.overhead.record_cpu_s += s.perf_cpu_s;
    }

    /// Reads one capture with `perf script`, printing `fields`, through `read`.
    fn script<T>(
        &mut self,
        file: &Path,
        fields: &str,
        read: impl FnOnce(BufReader<std::process::ChildStdout>) -> std::io::Result<T>,
    ) -> Result<(T, std::process::ExitStatus), String> {
        self.overhead.bytes += std::fs::metadata(file).map_or(0, |m| m.len());
        let mut child = Command::new(&self.config.perf)
            .args(["script", "--no-inline", "--show-switch-events", "--show-lost-events", "-F", fields, "-i"])
            .arg(file)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("perf script cannot be run: {e}"))?;
        let read = read(BufReader::new(child.stdout.take().expect("piped")));
        let status = child.wait().map_err(|e| e.to_string())?;
        Ok((read.map_err(|e| format!("reading perf script's output: {e}"))?, status))
    }

    /// Folds one capture with `perf script`; sleeps end at `ends` when given.
    fn fold(
        &mut self,
        file: &Path,
        keep: Option<&std::collections::HashSet<u32>>,
        ends: Option<&fold::SwitchIns>,
    ) -> Result<fold::Folded, String> {
        let (folded, status) = self.script(file, "pid,tid,time,event,trace,ip,sym,dso", |r| fold::fold_sleeps(r, keep, ends))?;
        if !status.success() && folded.span_ns.is_none() {
            return Err(Self::unreadable(file, status));
        }
        Ok(folded)
    }

    /// Reads the switch-ins of a system-wide off-CPU capture with `perf script`.
    fn switch_ins(&mut self, file: &Path) -> Result<fold::SwitchIns, String> {
        let (ins, status) = self.script(file, "pid,tid,time,event,trace", fold::switch_ins)?;
        if !status.success() && ins.span_ns.is_none() {
            return Err(Self::unreadable(file, status));
        }
        Ok(ins)
    }

    /// Why `perf script` could not read a capture, with what perf record said.
    fn unreadable(file: &Path, status: std::process::ExitStatus) -> String {
        // What perf record said, when it said anything (it was stopped before it was ready, ...).
        let said = std::fs::read_to_string(file.with_extension("log")).unwrap_or_default();
        let said = said.lines().map(str::trim).rfind(|l| !l.is_empty()).map(|l| format!("; perf record said: {l}")).unwrap_or_default();
        format!("perf script could not read {} ({status}){said}", file.display())
    }

    /// Folds the captures of the steps that ended (their perf stopped) into
    /// one [`ProfileSample`] each and removes them; a watch calls it after
    /// each window, so captures do not pile up.
    pub fn fold_ended(&mut self) -> Vec<Record> {
        let started = Instant::now();
        let mut out = Vec::new();
        let (ended, running): (Vec<_>, Vec<_>) = std::mem::take(&mut self.steps).into_iter().partition(|s| s.on.child.is_none());
        self.steps = running;
        for mut s in ended.into_iter().filter(|s| s.on.duration_ns > 0) {
            let mut sample = ProfileSample { step: s.step, unix_ms: s.unix_ms, on_cpu: None, off_cpu: None, perf_cpu_s: s.perf_cpu_s };
            match self.fold(&s.on.file, self.all_cpus.then_some(&s.tids), None) {
                Ok(f) => sample.on_cpu = Some(f.on_cpu_profile(s.on.duration_ns, s.threads, self.unwind, self.config.rate_hz)),
                Err(why) => out.push(Record::Unavailable(Source::Profile, format!("step {}: {why}", s.step + 1))),
            }
            if let Some(off) = &s.off {
                let folded = match s.off_in.as_ref().map(|back| self.switch_ins(&back.file)).transpose() {
                    Ok(ends) => self.fold(&off.file, None, ends.as_ref()),
                    Err(why) => Err(format!("switch-ins: {why}")),
                };
                match folded {
                    Ok(f) => {
                        let unwind = self.config.off_cpu_call_graph(self.unwind).1;
                        sample.off_cpu = Some(f.off_cpu_profile(off.duration_ns, s.threads, unwind, s.every));
                    }
                    Err(why) => out.push(Record::Unavailable(Source::ProfileOffCpu, format!("step {}: {why}", s.step + 1))),
                }
            }
            for c in s.all() {
                let _ = std::fs::remove_file(&c.file);
            }
            out.push(Record::Sample(Sample::Profile(Box::new(sample))));
        }
        self.overhead.fold_s += started.elapsed().as_secs_f64();
        out
    }

    /// Folds every capture into one [`ProfileSample`] per step (after the
    /// sweep, load off) and removes the captures. Returns the records to
    /// store and what profiling cost.
    pub fn finish(mut self) -> (Vec<Record>, Overhead) {
        self.end_step();
        let mut out = std::mem::take(&mut self.notes);
        out.extend(self.fold_ended());
        let _ = std::fs::remove_dir_all(&self.dir);
        (out, self.overhead.clone())
    }
}

/// A tracepoint filter that keeps the events whose `field` (`prev_pid`,
/// `next_pid`) is one of the sorted `tids`: runs of consecutive ids (a
/// thread pool) as one range. None when it would not fit the kernel's
/// limit (a page, PERF_EVENT_IOC_SET_FILTER).
pub(crate) fn switch_filter(field: &str, tids: &[u32]) -> Option<String> {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < tids.len() {
        let mut j = i;
        while j + 1 < tids.len() && tids[j + 1] == tids[j] + 1 {
            j += 1;
        }
        parts.push(if j == i { format!("{field}=={}", tids[i]) } else { format!("({field}>={}&&{field}<={})", tids[i], tids[j]) });
        i = j + 1;
    }
    let filter = parts.join("||");
    (!parts.is_empty() && filter.len() < 4000).then_some(filter)
}

impl Drop for Profiler {
    fn drop(&mut self) {
        for s in &mut self.steps {
            stop(&mut s.on.child);
            for off in s.off_cpu() {
                stop(&mut off.child);
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A private directory for perf's captures, logs and control fifos (made
/// in it as root): an unpredictable name, mode 0700 (tempfile's default
/// left it 0755, readable by every local user).
fn private_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let private = std::fs::Permissions::from_mode(0o700);
    tempfile::Builder::new().prefix("scalelab-profile-").permissions(private).tempdir().map(|d| d.keep())
}

/// A file only its owner may read (perf's logs name the server's
/// functions and paths): mode 0600, where File::create gave 0644.
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_capture_directory_and_logs_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = super::private_dir().unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        let log = dir.join("on-cpu.log");
        drop(super::private_file(&log).unwrap());
        let log_mode = std::fs::metadata(&log).unwrap().permissions().mode() & 0o777;
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(mode, 0o700, "the profile directory is {mode:o}");
        assert_eq!(log_mode, 0o600, "perf's log is {log_mode:o}");
    }

    use super::switch_filter;

    #[test]
    fn switch_filters_name_threads_and_runs_of_threads_within_a_page() {
        assert_eq!(switch_filter("prev_pid", &[5, 6, 7, 9]).unwrap(), "(prev_pid>=5&&prev_pid<=7)||prev_pid==9");
        assert_eq!(switch_filter("next_pid", &[42]).unwrap(), "next_pid==42");
        assert_eq!(switch_filter("next_pid", &[]), None);
        // A thousand threads in one pool fit as one range; a thousand scattered ones do not.
        let pool: Vec<u32> = (1000..2000).collect();
        assert_eq!(switch_filter("prev_pid", &pool).unwrap(), "(prev_pid>=1000&&prev_pid<=1999)");
        let scattered: Vec<u32> = (0..1000).map(|i| 100_000 + 2 * i).collect();
        assert_eq!(switch_filter("prev_pid", &scattered), None);
    }
}
