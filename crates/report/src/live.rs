//! The live view's state and drawing: what a running sweep shows (the
//! current step and its phase, throughput and latency of the last seconds,
//! the curve so far, the machine's CPU split, the server's thread states,
//! warnings), updated from the session's events and drawn into any ratatui
//! frame. The terminal itself (raw mode, keys) is the binary's.

use crate::cli::level_words;
use crate::fmt::thousands;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Bar, BarChart, BarGroup, Block, Borders, Gauge, Paragraph, Sparkline, Wrap};
use ratatui::Frame;
use scalelab_analyze::telemetry::{process_rates, system_rates};
use scalelab_core::sample::{ProcessSample, SystemSample, ThreadSecond};
use scalelab_core::{LiveTick, Sample, Source, StepPlan, StepResult};
use std::collections::VecDeque;
use std::time::Instant;

/// Bounded history lengths: ticks come at 4 Hz.
const RECENT_TICKS: usize = 240;

/// What the view shows, updated from the sweep's events; drawing reads only this.
#[derive(Default)]
pub struct ViewState {
    title: String,
    /// Per step: its load level in words (`2,000/s` or `4 clients`), warm-up seconds, window seconds.
    plan: Vec<(String, f64, f64)>,
    /// The steps are offered rates (an open loop), not clients.
    open_loop: bool,
    index: usize,
    elapsed_s: f64,
    warming_up: bool,
    recent: VecDeque<u64>,
    throughput: f64,
    p50_ms: Option<f64>,
    p99_ms: Option<f64>,
    errors: u64,
    /// Finished steps: the bar's label (clients, or the rate short: `2.0k`) and throughput.
    finished: Vec<(String, f64)>,
    last_system: Option<SystemSample>,
    cpu: Option<(f64, f64, f64, f64)>,
    cs_per_s: Option<f64>,
    process: (Option<ProcessSample>, Option<ProcessSample>),
    server_cpu_pct: Option<f64>,
    threads: Option<ThreadSecond>,
    warnings: Vec<String>,
    stopping: bool,
    /// When the last system sample arrived, and when the current step
    /// started: the machine panel's figures cover the second between the
    /// last two samples, which after a pause is mostly the pause.
    system_at: Option<Instant>,
    step_at: Option<Instant>,
    /// The machine panel's figures cover mostly the time before this step
    /// (the pause, or the preflight): its title says so until a sample of
    /// the step arrives.
    from_before_step: bool,
}

impl ViewState {
    pub fn new(title: String, steps: &[StepPlan]) -> Self {
        ViewState {
            title,
            plan: steps
                .iter()
                .map(|s| (level_words(s.open_loop.as_ref().map(|o| o.rate_per_s), s.concurrency), s.warmup_s, s.window_s))
                .collect(),
            open_loop: steps.iter().any(|s| s.open_loop.is_some()),
            warming_up: true,
            ..Default::default()
        }
    }

    pub fn warn(&mut self, w: String) {
        if !self.warnings.contains(&w) {
            self.warnings.push(w);
        }
    }

    pub fn step_started(&mut self, index: usize) {
        self.step_at = Some(Instant::now());
        self.from_before_step = self.cpu.is_some();
        self.index = index;
        self.elapsed_s = 0.0;
        self.warming_up = true;
        self.recent.clear();
        self.errors = 0;
        self.p50_ms = None;
        self.p99_ms = None;
    }

    pub fn tick(&mut self, index: usize, t: &LiveTick) {
        self.index = index;
        self.elapsed_s = t.elapsed_s;
        self.warming_up = t.warming_up;
        self.throughput = t.throughput_per_s;
        if self.recent.len() == RECENT_TICKS {
            self.recent.pop_front();
        }
        self.recent.push_back(t.throughput_per_s.max(0.0).round() as u64);
        self.p50_ms = t.p50_ms.or(self.p50_ms);
        self.p99_ms = t.p99_ms.or(self.p99_ms);
        self.errors = t.errors;
    }

    /// A probe reading: the machine's CPU split and context switches (from
    /// two system samples), the server's CPU (two process samples), its
    /// thread states.
    pub fn sample(&mut self, sample: &Sample) {
        match sample {
            Sample::System(s) => {
                let now = Instant::now();
                if let Some(prev_at) = self.system_at.replace(now) {
                    // The rate covers (prev_at, now]: of the step when at
                    // least half of that lies after the step started.
                    let span = now.saturating_duration_since(prev_at);
                    let in_step = self.step_at.map_or(span, |at| now.saturating_duration_since(at.max(prev_at)));
                    self.from_before_step = in_step * 2 < span;
                }
                if let Some(prev) = self.last_system.replace((**s).clone()) {
                    let r = system_rates(&prev, self.last_system.as_ref().expect("just set"));
                    self.cpu = r.cpu.map(|c| (c.user + c.nice, c.system + c.irq + c.softirq, c.iowait, c.idle));
                    self.cs_per_s = r.ctxt_per_s;
                }
            }
            Sample::Process(p) => {
                self.process = (self.process.1.take(), Some(p.clone()));
                if let (Some(a), Some(b)) = &self.process {
                    self.server_cpu_pct = process_rates(a, b).cpu_pct();
                }
            }
            Sample::Threads(t) => self.threads = Some(t.clone()),
            Sample::Db(_) | Sample::Specimen(_) | Sample::Profile(_) | Sample::Capture(_) => {}
        }
    }

    /// A probe source that is unavailable, and why: a warning, listed once.
    pub fn unavailable(&mut self, source: Source, why: &str) {
        self.warn(format!("probe unavailable: {}: {why}", source.key()));
    }

    /// Whether the sweep is stopping (`q`, Ctrl-C): the step line says so.
    pub fn set_stopping(&mut self, stopping: bool) {
        self.stopping = stopping;
    }

    pub fn step_finished(&mut self, r: &StepResult) {
        let bar = match r.offered_rate_per_s {
            Some(rate) => short(rate),
            None => r.concurrency.to_string(),
        };
        self.finished.push((bar, r.throughput_per_s()));
        let level = level_words(r.offered_rate_per_s, r.concurrency);
        if r.client_saturated() {
            self.warn(format!("client saturated at {level}: the result may be the client's limit"));
        }
        if r.errors.total() > 0 {
            self.warn(format!("{} errors at {level}", thousands(r.errors.total() as f64)));
        }
        if r.partial {
            self.warn(format!("step at {level} cut short (partial)"));
        }
    }

    /// Draws the whole view into `f`.
    pub fn render(&self, f: &mut Frame) {
        let area = f.area();
        let rows = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Length(3), Constraint::Min(8), Constraint::Length(9), Constraint::Length(4)])
            .split(area);
        self.render_step(f, rows[0]);
        let mid = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([Constraint::Percentage(55), Constraint::Percentage(45)])
            .split(rows[1]);
        self.render_recent(f, mid[0]);
        self.render_curve(f, mid[1]);
        let low = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
            .split(rows[2]);
        self.render_machine(f, low[0]);
        self.render_threads(f, low[1]);
        self.render_warnings(f, rows[3]);
    }

    fn render_step(&self, f: &mut Frame, area: Rect) {
        let (level, warmup_s, window_s) = self.plan.get(self.index).cloned().unwrap_or_default();
        // Each phase shows its own progress: the elapsed time counts from
        // the step's start, so the window's part starts after the warm-up.
        let (phase, done_s, phase_s) = if self.warming_up {
            ("warm-up", self.elapsed_s.min(warmup_s), warmup_s)
        } else {
            ("window", (self.elapsed_s - warmup_s).clamp(0.0, window_s), window_s)
        };
        let phase = if self.stopping { "stopping" } else { phase };
        let ratio = if phase_s > 0.0 { (done_s / phase_s).clamp(0.0, 1.0) } else { 0.0 };
        let label = format!(
            "step {}/{}: {level}, {phase} {done_s:.1}/{phase_s:.1}s",
            (self.index + 1).min(self.plan.len().max(1)),
            self.plan.len(),
        );
        let gauge = Gauge::default()
            .block(Block::default().borders(Borders::ALL).title(format!(" scalelab sweep: {} ", self.title)))
            .gauge_style(Style::default().fg(Color::Blue))
            .ratio(ratio)
            .label(label);
        f.render_widget(gauge, area);
    }

    fn render_recent(&self, f: &mut Frame, area: Rect) {
        let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2} ms"));
        // The figures go on a line of their own inside the box: a title
        // holding all of them is cut off at 80 columns.
        let block = Block::default().borders(Borders::ALL).title(format!(" throughput {}/s ", thousands(self.throughput)));
        let inner = block.inner(area);
        f.render_widget(block, area);
        let parts = Layout::default().direction(Direction::Vertical).constraints([Constraint::Length(1), Constraint::Min(0)]).split(inner);
        let figures = format!("p50 {}  p99 {}  errors {}", ms(self.p50_ms), ms(self.p99_ms), thousands(self.errors as f64));
        f.render_widget(Paragraph::new(figures), parts[0]);
        let width = inner.width as usize;
        let data: Vec<u64> = self.recent.iter().rev().take(width).rev().copied().collect();
        f.render_widget(Sparkline::default().data(&data).style(Style::default().fg(Color::Cyan)), parts[1]);
    }

    fn render_curve(&self, f: &mut Frame, area: Rect) {
        let per = if self.open_loop { "rate" } else { "clients" };
        let block = Block::default().borders(Borders::ALL).title(format!(" curve so far: throughput/s per {per} "));
        if self.finished.is_empty() {
            f.render_widget(Paragraph::new("no finished step yet").block(block), area);
            return;
        }
        let bars: Vec<Bar> = self
            .finished
            .iter()
            .map(|(c, x)| Bar::default().value(x.round() as u64).label(Line::from(c.clone())).text_value(short(*x)))
            .collect();
        let inner = area.width.saturating_sub(2) as usize;
        let n = self.finished.len().max(1);
        let width = ((inner.saturating_sub(n)) / n).clamp(3, 9) as u16;
        let chart = BarChart::default()
            .block(block)
            .data(BarGroup::default().bars(&bars))
            .bar_width(width)
            .bar_gap(1)
            .bar_style(Style::default().fg(Color::Green));
        f.render_widget(chart, area);
    }

    fn render_machine(&self, f: &mut Frame, area: Rect) {
        let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:5.1}%"));
        let mut lines = Vec::new();
        match self.cpu {
            Some((user, sys, iowait, idle)) => {
                lines.push(bar_line("user", user, Color::Green));
                lines.push(bar_line("sys", sys, Color::Red));
                lines.push(bar_line("iowait", iowait, Color::Yellow));
                lines.push(bar_line("idle", idle, Color::DarkGray));
            }
            None => lines.push(Line::from("CPU: waiting for two samples")),
        }
        lines.push(Line::from(format!("context switches/s {}", self.cs_per_s.map_or("-".into(), thousands))));
        lines.push(Line::from(format!("server CPU (of one core) {}", pct(self.server_cpu_pct))));
        // After a pause the last second shown is the pause's: said, not passed off as the step's.
        let title = if self.from_before_step { " machine: the second before this step " } else { " machine " };
        f.render_widget(Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)), area);
    }

    fn render_threads(&self, f: &mut Frame, area: Rect) {
        let block = Block::default().borders(Borders::ALL).title(" server threads ");
        let Some(s) = self.threads.as_ref().and_then(|t| t.time.shares()) else {
            f.render_widget(Paragraph::new("thread states: not sampled (yet)").block(block), area);
            return;
        };
        let mut lines = vec![
            bar_line("running", s.running_pct, Color::Green),
            bar_line("runnable", s.runnable_pct, Color::Magenta),
            bar_line("futex", s.futex_pct, Color::Red),
            bar_line("io", s.io_pct, Color::Yellow),
            bar_line("idle", s.idle_pct, Color::DarkGray),
        ];
        if let Some(h) = self.threads.as_ref().and_then(|t| t.hottest.first()) {
            lines.push(Line::from(format!("hottest: {} ({}) {:.0}% of a core", h.name, h.tid, h.cpu_pct)));
        }
        f.render_widget(Paragraph::new(lines).block(block), area);
    }

    fn render_warnings(&self, f: &mut Frame, area: Rect) {
        let mut spans =
            vec![Span::styled("q", Style::default().add_modifier(Modifier::BOLD)), Span::raw(" or Ctrl-C: stop, keeping finished steps")];
        if self.stopping {
            spans.push(Span::styled("  stopping at the next whole second…", Style::default().fg(Color::Yellow)));
        }
        let mut lines = vec![Line::from(spans)];
        for w in self.warnings.iter().rev().take(2) {
            lines.push(Line::from(Span::styled(format!("! {w}"), Style::default().fg(Color::Yellow))));
        }
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }).block(Block::default().borders(Borders::TOP)), area);
    }
}

/// `name  42.0% ██████░░░░`: a share as text and a 20-cell bar.
fn bar_line(name: &str, pct: f64, color: Color) -> Line<'static> {
    let cells = (pct.clamp(0.0, 100.0) / 5.0).round() as usize;
    Line::from(vec![
        Span::raw(format!("{name:<9}{pct:5.1}% ")),
        Span::styled("█".repeat(cells), Style::default().fg(color)),
        Span::styled("░".repeat(20 - cells), Style::default().fg(Color::DarkGray)),
    ])
}

/// A bar's value text: 52.3k, 1.2M.
fn short(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.1}M", x / 1e6)
    } else if x >= 1e4 {
        format!("{:.0}k", x / 1e3)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn plan() -> Vec<StepPlan> {
        [1u32, 2, 5]
            .iter()
            .map(|&c| StepPlan { concurrency: c, warmup_s: 1.0, window_s: 4.0, pause_s: 0.0, think_time_s: 0.0, open_loop: None })
            .collect()
    }

    fn screen_text(state: &ViewState) -> String {
        screen_text_at(state, 100, 30)
    }

    fn screen_text_at(state: &ViewState, width: u16, height: u16) -> String {
        let mut t = Terminal::new(TestBackend::new(width, height)).unwrap();
        t.draw(|f| state.render(f)).unwrap();
        let buf = t.backend().buffer().clone();
        let mut out = String::new();
        for y in 0..buf.area.height {
            for x in 0..buf.area.width {
                out.push_str(buf[(x, y)].symbol());
            }
            out.push('\n');
        }
        out
    }

    #[test]
    fn shows_the_step_the_curve_and_missing_figures_as_missing() {
        let mut s = ViewState::new("specimen".into(), &plan());
        s.step_started(1);
        s.tick(
            1,
            &LiveTick {
                elapsed_s: 2.5,
                warming_up: false,
                throughput_per_s: 12_345.0,
                errors: 0,
                p50_ms: Some(0.21),
                p99_ms: Some(1.5),
                completed: 30_000,
                window_completed: 18_000,
            },
        );
        s.finished.push(("1".into(), 8_000.0));
        let text = screen_text(&s);
        assert!(text.contains("step 2/3: 2 clients, window 1.5/4.0s"), "the window's own progress: {text}");
        assert!(text.contains("throughput 12,345/s"), "{text}");
        assert!(text.contains("p50 0.21 ms") && text.contains("p99 1.50 ms"), "{text}");
        assert!(text.contains("8.0k"), "the finished step's bar: {text}");
        assert!(text.contains("CPU: waiting for two samples"), "{text}");
        assert!(text.contains("thread states: not sampled"), "{text}");
        assert!(!text.contains(" 0.0%"), "nothing measured is drawn as zero: {text}");
    }

    /// `/proc/stat` at `ms`: a busy second is `busy` ticks of 100 in user space.
    fn system(ms: i64, user: u64, idle: u64) -> Sample {
        use scalelab_core::sample::{CpuStat, CpuTicks, Timestamp};
        let total = CpuTicks { user, idle, ..Default::default() };
        Sample::System(Box::new(SystemSample {
            at: Timestamp { monotonic_ns: ms as u64 * 1_000_000, unix_ms: ms },
            user_hz: 100,
            cpu: Some(CpuStat { total: Some(total), ctxt: Some(0), ..Default::default() }),
            ..Default::default()
        }))
    }

    #[test]
    fn after_a_pause_the_machine_panel_says_its_second_is_the_pause() {
        let mut s = ViewState::new("specimen".into(), &plan());
        s.step_started(0);
        s.sample(&system(0, 0, 0));
        std::thread::sleep(std::time::Duration::from_millis(30));
        s.sample(&system(1000, 90, 10));
        assert!(screen_text(&s).contains(" machine "), "the first step's own second");
        // The pause: an idle second; then the next step starts before the
        // next sample, and soon after it a sample that covers mostly the pause.
        std::thread::sleep(std::time::Duration::from_millis(30));
        s.sample(&system(2000, 90, 110));
        std::thread::sleep(std::time::Duration::from_millis(30));
        s.step_started(1);
        let text = screen_text(&s);
        assert!(text.contains("machine: the second before this step"), "{text}");
        assert!(text.contains("idle") && text.contains("100.0%"), "the pause's idle second, shown as such: {text}");
        s.sample(&system(2100, 90, 120));
        assert!(screen_text(&s).contains("machine: the second before this step"), "a sample mostly of the pause");
        // A whole interval inside the step: the step's own figures.
        std::thread::sleep(std::time::Duration::from_millis(30));
        s.sample(&system(3100, 180, 130));
        let text = screen_text(&s);
        assert!(!text.contains("before this step") && text.contains(" machine "), "{text}");
    }

    #[test]
    fn at_80_by_24_every_figure_is_whole() {
        let mut s = ViewState::new("nginx 1.22, 2 workers".into(), &plan());
        assert!(screen_text_at(&s, 80, 24).contains("step 1/3: 1 client, warm-up 0.0/1.0s"), "warm-up before the first tick");
        s.step_started(2);
        s.tick(
            2,
            &LiveTick {
                elapsed_s: 0.5,
                warming_up: true,
                throughput_per_s: 123_456.0,
                errors: 12_345,
                p50_ms: Some(0.21),
                p99_ms: Some(12.75),
                completed: 61_000,
                window_completed: 0,
            },
        );
        s.warn("client saturated at 50 clients: the result may be the client's limit".into());
        let text = screen_text_at(&s, 80, 24);
        assert!(text.contains("step 3/3: 5 clients, warm-up 0.5/1.0s"), "{text}");
        assert!(text.contains("throughput 123,456/s"), "{text}");
        assert!(text.contains("p50 0.21 ms  p99 12.75 ms  errors 12,345"), "p99 whole at 80 columns: {text}");
        assert!(text.contains("q or Ctrl-C: stop, keeping finished steps"), "{text}");
        assert!(text.contains("! client saturated at 50 clients"), "{text}");
    }

    #[test]
    fn open_loop_steps_are_named_by_their_offered_rate() {
        let open = |rate: f64| StepPlan {
            concurrency: 40,
            open_loop: Some(scalelab_core::OpenLoopPlan {
                rate_per_s: rate,
                max_in_flight: 40,
                arrival: scalelab_core::Arrival::Constant,
                latency_budget_s: 1.0,
            }),
            ..plan()[0].clone()
        };
        let mut s = ViewState::new("specimen".into(), &[open(2000.0), open(10_000.0)]);
        s.step_started(1);
        s.step_finished(&StepResult {
            concurrency: 40,
            offered_rate_per_s: Some(2000.0),
            window_s: 1.0,
            requests: 1990,
            partial: true,
            ..Default::default()
        });
        let text = screen_text(&s);
        assert!(text.contains("step 2/2: 10,000/s, warm-up"), "{text}");
        assert!(text.contains("curve so far: throughput/s per rate "), "{text}");
        assert!(text.contains("2.0k") && text.contains("! step at 2,000/s cut short"), "{text}");
        assert!(!text.contains("clients"), "a rate step is not named by its connections: {text}");
    }

    #[test]
    fn warnings_are_listed_once() {
        let mut s = ViewState::new("x".into(), &plan());
        s.unavailable(Source::Threads, "the server process exited");
        s.unavailable(Source::Threads, "the server process exited");
        assert_eq!(s.warnings, vec!["probe unavailable: threads: the server process exited".to_string()]);
        let text = screen_text(&s);
        assert!(text.contains("! probe unavailable: threads: the server process exited"), "{text}");
    }
}
