//! Progress while a step runs: one rewritten line on a terminal, plain lines
//! (one per second) otherwise, nothing with --quiet. Written to stderr so
//! stdout stays the table or the JSON.

use scalelab_core::StepResult;
use scalelab_drive::LiveTick;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

pub struct Progress {
    enabled: bool,
    tty: bool,
    last_plain: Option<Instant>,
    steps: usize,
    done: usize,
}

impl Progress {
    pub fn new(quiet: bool, steps: usize) -> Self {
        Progress { enabled: !quiet, tty: std::io::stderr().is_terminal(), last_plain: None, steps, done: 0 }
    }

    pub fn step_started(&mut self, index: usize, concurrency: u32) {
        if self.enabled && !self.tty {
            eprintln!("step {}/{}: {} client{}", index + 1, self.steps, concurrency, if concurrency == 1 { "" } else { "s" });
        }
        self.last_plain = None;
    }

    pub fn tick(&mut self, index: usize, concurrency: u32, t: &LiveTick) {
        if !self.enabled {
            return;
        }
        let p99 = t.p99_ms.map_or("-".to_string(), |v| format!("{v:.2} ms"));
        let phase = if t.warming_up { "warm-up" } else { "window" };
        let line = format!(
            "step {}/{} c={} {} {:.1}s  {:.0}/s  p99 {}  errors {}",
            index + 1,
            self.steps,
            concurrency,
            phase,
            t.elapsed_s,
            t.throughput_per_s,
            p99,
            t.errors
        );
        if self.tty {
            let mut e = std::io::stderr();
            let _ = write!(e, "\r\x1b[2K{line}");
            let _ = e.flush();
        } else if self.last_plain.is_none_or(|l| l.elapsed() >= Duration::from_secs(1)) {
            self.last_plain = Some(Instant::now());
            esayln!("{line}");
        }
    }

    /// Replaces the live line with the finished step's line, which stays:
    /// the record of the sweep so far (the table itself is printed once,
    /// on stdout, at the end).
    pub fn step_finished(&mut self, r: &StepResult, unit: &str) {
        if !self.enabled {
            return;
        }
        let p99 = r.latency.summary().map_or("-".to_string(), |s| format!("{:.2} ms", s.p99));
        let level = match r.offered_rate_per_s {
            Some(rate) => format!("rate={}", scalelab_report::fmt::thousands(rate)),
            None => format!("c={}", r.concurrency),
        };
        let mut line = format!(
            "step {}/{} {level} done: {} {unit}  p99 {p99}  errors {}",
            self.done + 1,
            self.steps,
            scalelab_report::fmt::thousands(r.throughput_per_s()),
            r.errors.total()
        );
        if r.partial {
            line.push_str("  (partial)");
        }
        if r.client_saturated() {
            line.push_str("  client saturated");
        }
        self.done += 1;
        if self.tty {
            let mut e = std::io::stderr();
            let _ = writeln!(e, "\r\x1b[2K{line}");
            let _ = e.flush();
        } else {
            eprintln!("{line}");
        }
    }
}
