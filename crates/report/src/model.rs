//! What a report is made from: runs with their diagnosis, each run's
//! per-second timeline, and micro-benchmark tables. The binary loads these
//! from the store; tests build them by hand, so every rendering is a pure
//! function of this input.

use scalelab_analyze::Diagnosis;
use scalelab_core::Run;
use std::collections::BTreeMap;

/// `(x, y)` points of one series; `None` is a missing value (a gap).
pub type Points = Vec<(f64, Option<f64>)>;

/// One run in a report.
#[derive(Clone, Debug)]
pub struct ReportRun {
    /// The name shown in tables and legends (the label, made unique with ` #id` when two runs share it).
    pub name: String,
    /// The run, with telemetry attached to its steps where recorded.
    pub run: Run,
    /// Curve, USL fit and verdicts of the run.
    pub diagnosis: Diagnosis,
    /// The per-second timeline; `None` for runs without a measured window (imported).
    pub timeline: Option<Timeline>,
}

impl ReportRun {
    /// A run with its diagnosis computed, and the timeline of its steps
    /// (throughput and phases; system figures are added by the caller).
    pub fn new(run: Run) -> Self {
        let diagnosis = scalelab_analyze::diagnose(&run);
        let timeline = Timeline::of_run(&run);
        ReportRun { name: run.plan.label.clone(), run, diagnosis, timeline }
    }
}

/// What a stretch of a run's time was for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhaseKind {
    /// Load on, nothing recorded.
    WarmUp,
    /// The recorded window.
    Window,
    /// No load between steps.
    Pause,
}

impl PhaseKind {
    /// The word used in labels.
    pub fn name(self) -> &'static str {
        match self {
            PhaseKind::WarmUp => "warm-up",
            PhaseKind::Window => "window",
            PhaseKind::Pause => "pause",
        }
    }
}

/// One warm-up, window or pause, in seconds since the timeline's origin.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    pub kind: PhaseKind,
    /// The step's concurrency.
    pub concurrency: u32,
    pub start_s: f64,
    pub end_s: f64,
}

/// A run second by second: throughput during each window, and the
/// machine's CPU split, context switches and power from the probes. Times
/// are seconds since [`Timeline::origin_unix_ms`] (the first warm-up).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    /// Wall-clock time of x = 0, Unix milliseconds.
    pub origin_unix_ms: i64,
    pub phases: Vec<Phase>,
    /// Successful completions per second, windows only, in time order.
    /// Nothing is recorded during warm-ups and pauses; the chart joins the
    /// windows across them (one line per run, the bands say what each
    /// stretch was), so no point stands for those stretches.
    pub throughput_per_s: Points,
    /// CPU user, system, iowait and idle in % of all cores.
    pub cpu_user_pct: Points,
    pub cpu_sys_pct: Points,
    pub cpu_iowait_pct: Points,
    pub cpu_idle_pct: Points,
    /// Machine-wide context switches per second.
    pub cs_per_s: Points,
    /// Power in watts (RAPL or hwmon) when measured.
    pub power_w: Points,
    /// Why a figure is missing: figure name → reason.
    pub unavailable: BTreeMap<String, String>,
}

impl Timeline {
    /// Phases and per-second throughput of a run's measured steps; `None`
    /// when no step has a window (imported series). The warm-up and pause of
    /// each step come from the plan (matched by concurrency).
    pub fn of_run(run: &Run) -> Option<Timeline> {
        let mut measured: Vec<_> = run.steps.iter().filter(|s| s.published_throughput_per_s.is_none() && s.window_s > 0.0).collect();
        measured.sort_by_key(|s| s.window_start_unix_ms);
        if measured.is_empty() {
            return None;
        }
        let plan_of = |c: u32| run.plan.steps.iter().find(|p| p.concurrency == c);
        let origin = measured
            .iter()
            .map(|s| s.window_start_unix_ms - plan_of(s.concurrency).map_or(0, |p| (p.warmup_s * 1000.0).round() as i64))
            .min()
            .unwrap_or(run.started_unix_ms);
        let t = |ms: i64| (ms - origin) as f64 / 1000.0;
        let mut phases = Vec::new();
        let mut throughput = Vec::new();
        for s in &measured {
            let (w0, w1) = (t(s.window_start_unix_ms), t(s.window_end_unix_ms));
            if let Some(p) = plan_of(s.concurrency) {
                if p.warmup_s > 0.0 {
                    phases.push(Phase { kind: PhaseKind::WarmUp, concurrency: s.concurrency, start_s: w0 - p.warmup_s, end_s: w0 });
                }
                phases.push(Phase { kind: PhaseKind::Window, concurrency: s.concurrency, start_s: w0, end_s: w1 });
                if p.pause_s > 0.0 && !s.partial {
                    phases.push(Phase { kind: PhaseKind::Pause, concurrency: s.concurrency, start_s: w1, end_s: w1 + p.pause_s });
                }
            } else {
                phases.push(Phase { kind: PhaseKind::Window, concurrency: s.concurrency, start_s: w0, end_s: w1 });
            }
            // A second at the end of a window shorter than 1 s is scaled to a rate.
            for sec in &s.seconds {
                let start = w0 + f64::from(sec.second);
                let len = (w1 - start).clamp(0.0, 1.0);
                if len > 0.05 {
                    throughput.push((start + len / 2.0, Some(sec.requests as f64 / len)));
                }
            }
        }
        close_gaps(&mut phases);
        Some(Timeline { origin_unix_ms: origin, phases, throughput_per_s: throughput, ..Default::default() })
    }

    /// Seconds since the origin of a wall-clock time.
    pub fn at(&self, unix_ms: i64) -> f64 {
        (unix_ms - self.origin_unix_ms) as f64 / 1000.0
    }

    /// Per-second CPU split, context switches and power from the run's
    /// system samples: the timeline's intervals (`analyze`, the ones
    /// `watch` prints), each at its midpoint. A figure missing is a gap; so
    /// is a hole of more than [`GAP_MS`](scalelab_analyze::telemetry::interval::GAP_MS) between samples.
    pub fn add_system_series(&mut self, run: &Run) {
        // The probe notes say why a figure is missing.
        for (key, why) in &run.notes {
            self.unavailable.entry(key.clone()).or_insert_with(|| why.clone());
        }
        let intervals = scalelab_analyze::telemetry::intervals(&run.samples, run.started_unix_ms);
        if intervals.is_empty() {
            self.unavailable.entry("system".into()).or_insert_with(|| "no per-second system samples were recorded for this run".into());
            return;
        }
        for iv in &intervals {
            let x = self.at((iv.start_unix_ms + iv.unix_ms) / 2);
            let values = if iv.is_gap() {
                [None; 6]
            } else {
                [iv.cpu_user_pct, iv.cpu_sys_pct, iv.cpu_iowait_pct, iv.cpu_idle_pct, iv.cs_per_s, iv.power_w]
            };
            let series = [
                &mut self.cpu_user_pct,
                &mut self.cpu_sys_pct,
                &mut self.cpu_iowait_pct,
                &mut self.cpu_idle_pct,
                &mut self.cs_per_s,
                &mut self.power_w,
            ];
            for (s, v) in series.into_iter().zip(values) {
                s.push((x, v));
            }
        }
    }
}

/// Makes the phases tile the run: a stretch between one step's last phase
/// and the next step's first (the step took longer to set up than planned,
/// or had no pause) is time without load, shown as that step's pause band,
/// not as a blank that reads like missing data; a pause overlapping the
/// next step ends where that step starts.
fn close_gaps(phases: &mut Vec<Phase>) {
    let mut i = 0;
    while i + 1 < phases.len() {
        let (end, next) = (phases[i].end_s, phases[i + 1].start_s);
        if next < end && phases[i].kind == PhaseKind::Pause {
            // A planned pause cut short by the next step: it ended there.
            phases[i].end_s = next.max(phases[i].start_s);
        } else if next - end > 0.001 {
            if phases[i].kind == PhaseKind::Pause {
                phases[i].end_s = next;
            } else {
                let concurrency = phases[i].concurrency;
                phases.insert(i + 1, Phase { kind: PhaseKind::Pause, concurrency, start_s: end, end_s: next });
            }
        }
        i += 1;
    }
}

/// A table given as cells (micro-benchmark summaries).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TextTable {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Everything one report shows.
#[derive(Clone, Debug, Default)]
pub struct ReportInput {
    /// Sweep and imported runs, in the order asked for.
    pub runs: Vec<ReportRun>,
    /// Micro-benchmark summary tables (all micro runs side by side).
    pub micro: Vec<TextTable>,
    /// The micro runs those tables hold, as `(run id, label)`, in the order
    /// asked for: the page header lists them beside the sweeps.
    pub micro_runs: Vec<(i64, String)>,
    /// Where the chart images are, for Markdown links (`--svg DIR` or `--png DIR`); `None`: no links.
    pub images: Option<ImageLinks>,
}

/// Chart images written beside a report, as the Markdown links them.
#[derive(Clone, Debug, PartialEq)]
pub struct ImageLinks {
    /// The folder, relative to the report's own folder when possible.
    pub dir: String,
    /// File extension of the images: "svg" or "png".
    pub ext: &'static str,
}

impl ReportInput {
    /// Makes run names unique by the one rule of [`scalelab_core::display_names`], as `compare` does.
    pub fn dedup_names(&mut self) {
        let ids: Vec<(i64, &str)> = self.runs.iter().map(|r| (r.run.id, r.run.plan.label.as_str())).collect();
        let names = scalelab_core::display_names(&ids);
        for (r, name) in self.runs.iter_mut().zip(names) {
            r.name = name;
        }
    }
}

/// The throughput unit shared by `runs` (`req/s`, `tx/s`, `q/s`), or `/s`
/// when they differ, for an axis or a column that holds them all.
pub fn common_unit(runs: &[ReportRun]) -> String {
    let mut units = runs.iter().map(|r| r.run.plan.throughput_unit());
    match units.next() {
        Some(u) if units.all(|v| v == u) => u.to_string(),
        _ => "/s".to_string(),
    }
}
