//! Progress while a step runs: one rewritten line on a terminal, plain lines
//! (one per second) otherwise, nothing with --quiet. Written to stderr so
//! stdout stays the table or the JSON.

use scalelab_core::{LiveTick, StepPlan, StepResult};
use scalelab_report::cli::{level_short, level_words};
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

    /// Names the step by its load level: its offered rate (`2,000/s`), or its clients.
    pub fn step_started(&mut self, index: usize, plan: &StepPlan) {
        if self.enabled && !self.tty {
            eprintln!(
                "step {}/{}: {}",
                index + 1,
                self.steps,
                level_words(plan.open_loop.as_ref().map(|o| o.rate_per_s), plan.concurrency)
            );
        }
        self.last_plain = None;
    }

    pub fn tick(&mut self, index: usize, plan: &StepPlan, t: &LiveTick) {
        if !self.enabled {
            return;
        }
        let level = level_short(plan.open_loop.as_ref().map(|o| o.rate_per_s), plan.concurrency);
        let line = scalelab_report::cli::tick_line(index, self.steps, &level, t);
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
        let line = scalelab_report::cli::step_done_line(self.done, self.steps, r, unit);
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
