//! Progress while a step runs: one rewritten line on a terminal, plain lines
//! (one per second) otherwise, nothing with --quiet. Written to stderr so
//! stdout stays the table or the JSON.

use scalelab_core::LiveTick;
use scalelab_core::StepResult;
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
        let line = scalelab_report::cli::tick_line(index, self.steps, concurrency, t);
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
