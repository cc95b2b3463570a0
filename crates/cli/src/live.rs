//! What a sweep shows while it runs. On a terminal: a full-screen live view
//! (ratatui) with the current step, throughput and latency of the last
//! seconds, the curve so far, the machine's CPU split, the server's thread
//! states and any warning; `q` or Ctrl-C stops the sweep and keeps the
//! finished steps. Not a terminal, `--no-tui` or `--quiet`: the plain
//! progress lines of [`Progress`].
//!
//! The view is drawn by the sweep's controller thread at its 4 Hz tick, never
//! by the client threads, and only the terminal-facing work (one frame diff
//! per tick) is added; `bench/http_vs_wrk` measures the cost.

use crate::progress::Progress;
use crate::session::Observer;
use crate::telemetry::Record;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::terminal::{disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::crossterm::{cursor, execute};
use ratatui::Terminal;
use scalelab_core::{LiveTick, StepPlan, StepResult};
use scalelab_report::live::ViewState;
use std::io::{IsTerminal, Stderr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The live output of a sweep: the full-screen view or plain lines.
pub enum LiveView {
    Lines(Progress),
    Screen(Box<Screen>),
}

/// The smallest terminal the full-screen view is drawn on (columns, rows).
const MIN_COLS: u16 = 40;
const MIN_ROWS: u16 = 12;

impl LiveView {
    /// The full-screen view when stderr is a terminal and neither `quiet` nor
    /// `no_tui` is set (and the terminal can be set up), plain lines otherwise.
    /// `stop` is the sweep's stop flag, which `q` and Ctrl-C raise.
    pub fn start(quiet: bool, no_tui: bool, title: String, steps: &[StepPlan], stop: Arc<AtomicBool>) -> LiveView {
        // A pty of no size (0x0, as some CI runners give) or too small for
        // the view would only draw blank frames: lines instead.
        let fits = ratatui::crossterm::terminal::size().is_ok_and(|(cols, rows)| cols >= MIN_COLS && rows >= MIN_ROWS);
        if !quiet && !no_tui && std::io::stderr().is_terminal() && fits {
            if let Ok(screen) = Screen::open(title, steps, stop) {
                return LiveView::Screen(Box::new(screen));
            }
        }
        LiveView::Lines(Progress::new(quiet, steps.len()))
    }

    /// Gives the terminal back (the screen is left as it was before the sweep).
    pub fn finish(self) {
        if let LiveView::Screen(s) = self {
            drop(s);
        }
    }
}

impl Observer for LiveView {
    fn step_started(&mut self, index: usize, plan: &StepPlan) {
        match self {
            LiveView::Lines(p) => p.step_started(index, plan),
            LiveView::Screen(s) => {
                s.state.step_started(index);
                s.draw();
            }
        }
    }

    fn tick(&mut self, index: usize, plan: &StepPlan, tick: &LiveTick) {
        match self {
            LiveView::Lines(p) => p.tick(index, plan, tick),
            LiveView::Screen(s) => {
                s.state.tick(index, tick);
                s.draw();
            }
        }
    }

    /// Telemetry records on their way to the store: the view reads the CPU,
    /// server and thread-state figures and the probe notes from them.
    fn telemetry(&mut self, records: &[Record]) {
        if let LiveView::Screen(s) = self {
            for r in records {
                match r {
                    Record::Sample(sample) => s.state.sample(sample),
                    Record::Unavailable(source, why) => s.state.unavailable(*source, why),
                }
            }
        }
    }

    /// A finished step: a line of its own in the plain view, a curve point
    /// and warnings in the live view.
    fn step_finished(&mut self, _index: usize, result: &StepResult, unit: &str) {
        match self {
            LiveView::Lines(p) => p.step_finished(result, unit),
            LiveView::Screen(s) => {
                s.state.step_finished(result);
                s.draw();
            }
        }
    }
}

/// The full-screen view: the terminal (alternate screen, raw mode) and the
/// thread that turns `q` and Ctrl-C into the sweep's stop flag.
pub struct Screen {
    terminal: Terminal<CrosstermBackend<Stderr>>,
    state: ViewState,
    stop: Arc<AtomicBool>,
    keys_done: Arc<AtomicBool>,
    keys: Option<JoinHandle<()>>,
}

impl Screen {
    fn open(title: String, steps: &[StepPlan], stop: Arc<AtomicBool>) -> std::io::Result<Screen> {
        enable_raw_mode()?;
        let mut err = std::io::stderr();
        if let Err(e) = execute!(err, EnterAlternateScreen, cursor::Hide) {
            let _ = disable_raw_mode();
            return Err(e);
        }
        let terminal = match Terminal::new(CrosstermBackend::new(std::io::stderr())) {
            Ok(t) => t,
            Err(e) => {
                restore();
                return Err(e);
            }
        };
        let keys_done = Arc::new(AtomicBool::new(false));
        let (done, flag) = (keys_done.clone(), stop.clone());
        let keys = std::thread::Builder::new().name("scalelab-keys".into()).spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if let Ok(true) = event::poll(std::time::Duration::from_millis(100)) {
                    if let Ok(Event::Key(k)) = event::read() {
                        let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                        if k.kind == KeyEventKind::Press && (ctrl_c || matches!(k.code, KeyCode::Char('q') | KeyCode::Char('Q'))) {
                            flag.store(true, Ordering::Relaxed);
                        }
                    }
                }
            }
        })?;
        let mut screen = Screen { terminal, state: ViewState::new(title, steps), stop, keys_done, keys: Some(keys) };
        screen.draw();
        Ok(screen)
    }

    fn draw(&mut self) {
        self.state.set_stopping(self.stop.load(Ordering::Relaxed));
        let state = &self.state;
        let _ = self.terminal.draw(|f| state.render(f));
    }
}

/// Leaves the alternate screen and raw mode, shows the cursor.
fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(std::io::stderr(), LeaveAlternateScreen, cursor::Show);
}

impl Drop for Screen {
    fn drop(&mut self) {
        self.keys_done.store(true, Ordering::Relaxed);
        if let Some(k) = self.keys.take() {
            let _ = k.join();
        }
        restore();
    }
}
