//! The run table's rows by load level: a level measured several times
//! (`--repeats`, `--until-precision`, `--versus`) is one row, the mean of
//! its windows with its 95 % interval, `n` and CV; a level measured once is
//! its window with the interval from its seconds. Throughput prints as
//! `12,345 ± 1.8 %`; a figure without an interval prints `± —` and the
//! table says why once, never a false ±0.

use crate::fmt::{ms, pct, thousands};
use scalelab_analyze::series::{level, Point};
use scalelab_analyze::stats::{Ci95, Method};
use scalelab_core::{LatencySummary, Run, StepResult};

/// One row of the run table: the windows of one level, or a partial step
/// (cut short: shown on its own, never averaged in).
pub struct Entry<'a> {
    /// The level's windows in the order they ran (one for a partial step).
    pub steps: Vec<&'a StepResult>,
    /// The level's figures; `None` for a partial step or a level without a
    /// measured window.
    pub point: Option<Point>,
}

impl Entry<'_> {
    /// The row's first window: its concurrency, offered rate and partial flag.
    pub fn first(&self) -> &StepResult {
        self.steps[0]
    }

    /// True for a step cut short by a signal.
    pub fn partial(&self) -> bool {
        self.first().partial
    }

    /// True for an imported (published) figure, which has no interval to show.
    pub fn published(&self) -> bool {
        self.first().published_throughput_per_s.is_some()
    }

    /// The row's throughput: the level's mean, or the partial step's own.
    pub fn throughput(&self) -> f64 {
        self.point.as_ref().map_or_else(|| self.first().throughput_per_s(), |p| p.throughput)
    }

    /// The mean over the windows of a per-window figure; `None` when a window lacks it.
    pub fn mean(&self, f: impl Fn(&StepResult) -> Option<f64>) -> Option<f64> {
        let v: Option<Vec<f64>> = self.steps.iter().map(|s| f(s)).collect();
        v.filter(|v| !v.is_empty()).map(|v| v.iter().sum::<f64>() / v.len() as f64)
    }

    /// The windows' latency summaries combined: each figure the mean over
    /// the windows (a level measured once: its window's), the max the
    /// highest; `None` when no window recorded latency.
    pub fn latency(&self) -> Option<LatencySummary> {
        let all: Vec<LatencySummary> = self.steps.iter().filter_map(|s| s.latency.summary()).collect();
        let n = all.len() as f64;
        let mean = |f: fn(&LatencySummary) -> f64| all.iter().map(f).sum::<f64>() / n;
        (!all.is_empty()).then(|| LatencySummary {
            mean: mean(|s| s.mean),
            stddev: mean(|s| s.stddev),
            p50: mean(|s| s.p50),
            p90: mean(|s| s.p90),
            p99: mean(|s| s.p99),
            p999: mean(|s| s.p999),
            max: all.iter().map(|s| s.max).fold(f64::MIN, f64::max),
        })
    }
}

/// The run's rows: each level once (its windows together), partial steps on
/// their own, in the order each first ran; sorted by level when some level
/// was measured more than once (the order of repeated rounds is shuffled).
/// A capacity search keeps one row per trial: its confirmation re-measures
/// a rate to check it, not to average with the first try.
pub fn entries(run: &Run) -> Vec<Entry<'_>> {
    let mut out: Vec<Entry> = Vec::new();
    let trials = run.kind == scalelab_core::RunKind::Capacity;
    for s in &run.steps {
        let same_level = |e: &Entry| !e.partial() && level(e.first()) == level(s);
        match out.iter_mut().find(|e| !trials && !s.partial && same_level(e)) {
            Some(e) => e.steps.push(s),
            None => out.push(Entry { steps: vec![s], point: None }),
        }
    }
    for e in out.iter_mut().filter(|e| !e.partial()) {
        e.point = Point::from_repeats(&e.steps);
    }
    if out.iter().any(|e| e.steps.len() > 1) {
        out.sort_by_key(|e| level(e.first()));
    }
    out
}

/// True when some level of the run has several windows: the table then
/// shows `n` and `cv` columns and lists the windows under it.
pub fn repeated(entries: &[Entry]) -> bool {
    entries.iter().any(|e| e.steps.len() > 1)
}

/// A throughput with its interval: `12,345 ± 1.8 %`, or `12,345 ± —` when
/// it has none (the table's notes say why).
pub fn with_interval(x: f64, ci: Option<&Ci95>) -> String {
    match ci.and_then(|c| c.half_width_pct(x)) {
        Some(h) => format!("{} ± {h:.1} %", thousands(x)),
        None => format!("{} ± —", thousands(x)),
    }
}

/// The throughput cell of a row: with its interval for a measured level,
/// bare for a published figure or a partial step.
pub fn throughput_cell(e: &Entry) -> String {
    match &e.point {
        Some(p) if !e.published() => with_interval(p.throughput, p.throughput_ci.as_ref()),
        _ => thousands(e.throughput()),
    }
}

/// The cells of a level's row, in [`crate::table::HEADER`]'s order;
/// `first` is the first level's throughput (the base of scaling).
pub fn level_row(e: &Entry, first: Option<f64>) -> Vec<String> {
    let s = e.latency();
    let step = e.first();
    let mut conc = step.concurrency.to_string();
    if e.partial() {
        conc.push_str(" (partial)");
    }
    let errors = (!e.published()).then(|| e.steps.iter().map(|s| s.errors.total()).sum::<u64>());
    let x = e.throughput();
    crate::fmt::run_row(
        conc,
        throughput_cell(e),
        first.filter(|b| *b > 0.0).map(|b| 100.0 * x / b),
        s,
        errors,
        e.steps.iter().any(|s| s.client_saturated()),
    )
}

/// The `n` and `cv` cells of a row: windows measured, and their
/// coefficient of variation ("-" for one window).
pub fn repeat_cells(e: &Entry) -> [String; 2] {
    let n = e.steps.len().to_string();
    let cv = e.point.as_ref().and_then(Point::cv_pct).map_or("-".to_string(), |c| format!("{c:.1}%"));
    [n, cv]
}

/// AVG and MAX over the measured levels: AVG the mean of the levels' means,
/// its interval from their standard errors propagated; MAX the peak level
/// with its interval. Latency columns aggregate each figure on its own (a
/// missing one left out, not counted as 0); `None` for fewer than 2 levels.
pub fn aggregate_rows(entries: &[Entry], first: Option<f64>) -> Option<[Vec<String>; 2]> {
    let measured: Vec<&Entry> = entries.iter().filter(|e| !e.partial() && e.point.is_some()).collect();
    if measured.len() < 2 {
        return None;
    }
    let published = measured.iter().all(|e| e.published());
    let points: Vec<&Point> = measured.iter().filter_map(|e| e.point.as_ref()).collect();
    let avg = scalelab_analyze::compare::mean_point(&points).expect("two levels");
    let peak = points.iter().fold(points[0], |m, p| if p.throughput > m.throughput { p } else { m });
    let cell = |p: &Point| if published { thousands(p.throughput) } else { with_interval(p.throughput, p.throughput_ci.as_ref()) };
    let row = |name: &str, p: &Point, agg: &dyn Fn(&[f64]) -> f64| {
        let lat = |f: fn(&LatencySummary) -> f64| -> Option<f64> {
            let v: Vec<f64> = measured.iter().filter_map(|e| e.latency()).map(|s| f(&s)).collect();
            (!v.is_empty()).then(|| agg(&v))
        };
        let errors: Vec<f64> =
            measured.iter().filter(|e| !e.published()).map(|e| e.steps.iter().map(|s| s.errors.total()).sum::<u64>() as f64).collect();
        vec![
            name.to_string(),
            cell(p),
            pct(first.filter(|b| *b > 0.0).map(|b| 100.0 * p.throughput / b)),
            ms(lat(|s| s.mean)),
            ms(lat(|s| s.stddev)),
            ms(lat(|s| s.p50)),
            ms(lat(|s| s.p90)),
            ms(lat(|s| s.p99)),
            ms(lat(|s| s.p999)),
            ms(lat(|s| s.max)),
            if errors.is_empty() { "-".into() } else { thousands(agg(&errors)) },
        ]
    };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let max = |v: &[f64]| v.iter().copied().fold(f64::MIN, f64::max);
    Some([row("AVG", &avg, &mean), row("MAX", peak, &max)])
}

/// The notes under the table about its intervals: what `±` is (within one
/// window, or over repeated windows), why a `± —` has none (each reason
/// once), and with repeats every level's windows in the order they ran.
pub fn notes(entries: &[Entry]) -> String {
    let measured: Vec<(&Entry, &Point)> =
        entries.iter().filter(|e| !e.partial() && !e.published()).filter_map(|e| e.point.as_ref().map(|p| (e, p))).collect();
    let mut out = String::new();
    let method = |m: Method| measured.iter().any(|(_, p)| p.throughput_ci.is_some_and(|c| c.method == m));
    let mut kinds = Vec::new();
    if method(Method::BatchMeans) {
        kinds.push("a level measured once: within one window (batch means over its seconds), so the drift between windows is not in it; --repeats 3 measures it");
    }
    if measured.iter().any(|(e, p)| e.steps.len() > 1 && p.throughput_ci.is_some()) {
        kinds.push("a level measured n times: over its windows (Student t); cv: their coefficient of variation");
    }
    if !kinds.is_empty() {
        out.push_str(&format!("±: the throughput's 95 % interval; {}.\n", kinds.join("; ")));
    }
    let mut reasons: Vec<&str> = Vec::new();
    for (_, p) in &measured {
        if let (None, Some(why)) = (p.throughput_ci, p.no_interval.as_deref()) {
            if !reasons.contains(&why) {
                reasons.push(why);
            }
        }
    }
    if measured.iter().any(|(_, p)| p.throughput_ci.is_none()) {
        let why = if reasons.is_empty() { "no interval could be estimated".to_string() } else { reasons.join("; ") };
        out.push_str(&format!("± —: no interval: {why}.\n"));
    }
    if repeated(entries) {
        out.push_str("windows (throughput/s of each, in the order they ran):\n");
        for (e, p) in measured.iter().filter(|(e, _)| e.steps.len() > 1) {
            let level = crate::fmt::level_words(e.first().offered_rate_per_s, e.first().concurrency);
            let xs: Vec<String> = p.repeats.iter().map(|x| thousands(*x)).collect();
            out.push_str(&format!("  {level}: {}\n", xs.join("  ")));
        }
    }
    out
}
