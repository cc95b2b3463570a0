//! `--trigger` at run time: each second's figures (the probes' interval,
//! and a sweep's latest tick) go to [`Triggers`]; when one fires, a capture
//! is taken on its own thread (the server's threads by kernel stack, the
//! database's lock views) so that neither the probes nor the load wait for
//! it, and it comes back as a [`CaptureSample`] to store (docs/metrics.md).

use crate::telemetry::{Intervals, Record};
use scalelab_analyze::trigger::{Fired, LoadSecond, Trigger, Triggers};
use scalelab_core::sample::CaptureSample;
use scalelab_core::{LiveTick, Sample};
use std::path::Path;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a capture waits for the database's answer.
const DB_TIMEOUT: Duration = Duration::from_secs(5);
/// Snapshots of the threads per capture, and their spacing: a second's worth.
const LOOKS: u32 = 10;
const LOOK_EVERY: Duration = Duration::from_millis(100);
/// A sweep tick older than this is not "this second's" load.
const LOAD_FRESH: Duration = Duration::from_secs(2);

/// The triggers of a run and the captures they started.
pub struct Capturing {
    triggers: Triggers,
    intervals: Intervals,
    load: Option<(Instant, LoadSecond)>,
    server_pid: Option<u32>,
    db: Option<scalelab_wire::SqlUrl>,
    running: Vec<JoinHandle<CaptureSample>>,
    /// Captures started so far (the next one's index).
    pub started: usize,
}

/// `--trigger` and `--max-captures` as given, checked: what `watch` or a
/// sweep can watch (load figures need load; the server's need its process).
pub fn parse(texts: &[String], max_per_hour: u32, has_load: bool, has_server: bool) -> Result<Vec<Trigger>, String> {
    if max_per_hour == 0 {
        return Err("--max-captures must be at least 1".into());
    }
    texts
        .iter()
        .map(|t| {
            let trigger = Trigger::parse(t).map_err(|e| format!("--trigger '{}': {e}", scalelab_core::escape_control(t)))?;
            if trigger.figure.needs_load() && !has_load {
                return Err(format!(
                    "--trigger {trigger}: {} is a figure of scalelab's own load; watch generates none",
                    trigger.figure.name()
                ));
            }
            if trigger.figure.needs_server() && !has_server {
                return Err(format!("--trigger {trigger}: {} is the server's: give --pid, --port or its target", trigger.figure.name()));
            }
            Ok(trigger)
        })
        .collect()
}

impl Capturing {
    /// Watches `triggers` (at most `max_per_hour` captures an hour) over a
    /// run whose clock starts at `origin_ms`.
    pub fn new(
        triggers: Vec<Trigger>,
        max_per_hour: u32,
        origin_ms: i64,
        server_pid: Option<u32>,
        db: Option<scalelab_wire::SqlUrl>,
    ) -> Capturing {
        Capturing {
            triggers: Triggers::new(triggers, max_per_hour),
            intervals: Intervals::new(origin_ms),
            load: None,
            server_pid,
            db,
            running: Vec::new(),
            started: 0,
        }
    }

    /// The load's latest second (a sweep's tick, once its window records).
    pub fn tick(&mut self, tick: &LiveTick) {
        let second = LoadSecond { p50_ms: tick.p50_ms, p99_ms: tick.p99_ms, throughput_per_s: tick.throughput_per_s };
        self.load = (!tick.warming_up).then(|| (Instant::now(), second));
    }

    /// The server restarted: captures read the new process.
    pub fn follow(&mut self, pid: u32) {
        self.server_pid = Some(pid);
    }

    /// Takes the probes' records in; the trigger that fires with them, if any.
    pub fn see(&mut self, records: &[Record]) -> Option<Fired> {
        let (iv, _) = self.intervals.push(records);
        let load = self.load.filter(|(at, _)| at.elapsed() <= LOAD_FRESH).map(|(_, l)| l);
        self.triggers.second(&iv?, load.as_ref())
    }

    /// Starts the capture of `fired` on its own thread; `profile` is the
    /// profile window taken for it, or why there is none.
    pub fn start(&mut self, fired: Fired, profile: Result<Option<usize>, String>) {
        let trigger = &self.triggers.list[fired.trigger];
        let mut sample = CaptureSample {
            index: self.started,
            from_unix_ms: fired.from_unix_ms,
            unix_ms: fired.unix_ms,
            trigger: trigger.to_string(),
            value: fired.value,
            unit: trigger.figure.unit().to_string(),
            ..Default::default()
        };
        self.started += 1;
        match profile {
            Ok(window) => sample.profile_window = window,
            Err(why) => sample.unavailable.push(format!("profile: {why}")),
        }
        let (pid, db) = (self.server_pid, self.db.clone());
        let spawned = std::thread::Builder::new().name("scalelab-capture".into()).spawn(move || {
            if let Some(pid) = pid {
                match scalelab_probe::capture::thread_groups(Path::new("/proc"), pid, LOOKS, LOOK_EVERY) {
                    Ok((groups, no_stack)) => {
                        sample.threads = groups;
                        sample.looks = LOOKS;
                        sample.unavailable.extend(no_stack.map(|w| format!("thread stacks: {w}")));
                    }
                    Err(why) => sample.unavailable.push(format!("threads: {why}")),
                }
            }
            if let Some(url) = db {
                match scalelab_probe::capture::db_locks(&url, DB_TIMEOUT) {
                    Ok(rows) => sample.db_locks = Some(rows),
                    Err(why) => sample.unavailable.push(format!("database locks: {why}")),
                }
            }
            sample
        });
        match spawned {
            Ok(h) => self.running.push(h),
            Err(e) => eprintln!("warning: --trigger: could not start a capture thread: {e}"),
        }
    }

    /// Captures that have finished, as records to store (`wait`: all of
    /// them, at the run's end).
    pub fn finished(&mut self, wait: bool) -> Vec<Record> {
        let (done, running): (Vec<_>, Vec<_>) = self.running.drain(..).partition(|h| wait || h.is_finished());
        self.running = running;
        done.into_iter().filter_map(|h| h.join().ok()).map(|s| Record::Sample(Sample::Capture(Box::new(s)))).collect()
    }

    /// What the triggers did, for the end of the run (None: no trigger held).
    pub fn summary(&self) -> Option<String> {
        let (n, skipped) = (self.started, self.triggers.suppressed);
        if n == 0 && skipped == 0 {
            return None;
        }
        let mut line = format!("triggers: {n} capture(s)");
        if skipped > 0 {
            line.push_str(&format!("; {skipped} more time(s) a condition held past --max-captures an hour"));
        }
        Some(line)
    }
}

/// One line for a capture as it is stored (watch prints it).
pub fn line(c: &CaptureSample) -> String {
    let held = (c.unix_ms - c.from_unix_ms) as f64 / 1000.0;
    let mut out = format!("capture {}: {} held {held:.0}s (now {:.1}{})", c.index, c.trigger, c.value, c.unit);
    if let Some(g) = c.threads.first() {
        let at = if g.wchan.is_empty() { g.state.clone() } else { format!("{} in {}", g.state, g.wchan) };
        let all = c.threads.iter().map(|g| g.threads).sum::<u32>().max(1);
        out.push_str(&format!("; threads most often {at} ({:.0}% of {} looks)", 100.0 * g.threads as f64 / all as f64, c.looks));
    }
    if let Some(rows) = &c.db_locks {
        match rows.first() {
            Some(r) => out.push_str(&format!("; database: {} waiting on {}", r.waiting, r.wait)),
            None => out.push_str("; database: no lock waits"),
        }
    }
    if let Some(w) = c.profile_window {
        out.push_str(&format!("; profile window {} (`scalelab profile RUN --step {}`)", w + 1, w + 1));
    }
    scalelab_core::escape_control(&out).into_owned()
}
