//! The report's charts, built from [`ReportRun`]s: throughput and scaling
//! vs concurrency (all runs), latency per run (vs offered rate for an open
//! loop, with the capacity search's own charts: `rate`, `capacity`), each run's per-second
//! timeline and its thread states per step. A chart with nothing to draw is
//! an `Err` carrying the reason, shown as text in its place, never an empty
//! or zero-filled plot.

pub mod capacity;
pub mod rate;

use crate::model::{PhaseKind, Points, ReportRun, Timeline};
use crate::svg::{Band, ErrorBar, LineChart, LineSeries, Marker, Stack, StackedBars, PALETTE, PAUSE_FILL, WARMUP_FILL, WINDOW_FILL};
use scalelab_analyze::Point;
use scalelab_core::Source;

/// One chart of the report.
#[derive(Clone, Debug)]
pub struct Chart {
    /// File stem for `--svg DIR` and the HTML anchor ("throughput", "run-3-cpu").
    pub id: String,
    pub title: String,
    /// The SVG document, or why the chart cannot be drawn.
    pub svg: Result<String, String>,
    /// The chart was left out on purpose, not for missing data: it would
    /// only show zeros (a database that never waited). `svg` is then `Err`
    /// with the one line that says so.
    pub omitted: bool,
}

impl Chart {
    fn line(id: String, chart: LineChart, why_empty: &str) -> Chart {
        let title = chart.title.clone();
        let svg = if chart.is_empty() { Err(why_empty.to_string()) } else { Ok(chart.render()) };
        Chart { id, title, svg, omitted: false }
    }
}

/// The colour of the run at `i` (runs keep their colour in every chart).
pub fn run_color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

fn points_of(r: &ReportRun) -> Vec<Point> {
    let mut p: Vec<Point> = scalelab_analyze::Series::of_run("", &r.run).points;
    p.sort_by_key(|p| p.concurrency);
    p
}

/// How many times the largest run peak exceeds the smallest, above which
/// the throughput chart switches to a log axis: on a linear one a 2005
/// series at ~300 q/s beside a run at 50,000 req/s is a line on zero.
pub const LOG_AXIS_RATIO: f64 = 10.0;

/// The smallest and largest peak throughput of the runs, when the largest
/// is more than [`LOG_AXIS_RATIO`] times the smallest (use a log axis).
pub fn peaks_differ(runs: &[ReportRun]) -> Option<(f64, f64)> {
    let peaks: Vec<f64> = runs
        .iter()
        .filter_map(|r| points_of(r).iter().map(|p| p.throughput).fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x)))))
        .collect();
    let lo = peaks.iter().copied().filter(|p| *p > 0.0).fold(f64::INFINITY, f64::min);
    let hi = peaks.iter().copied().fold(0.0, f64::max);
    (lo.is_finite() && hi > LOG_AXIS_RATIO * lo).then_some((lo, hi))
}

/// Throughput vs concurrency, one line per run, its knee and peak marked,
/// each level's 95 % interval as an error bar (linear axis only: a bar
/// near zero has no place on a log one) and its USL fit dashed. When the runs' peaks differ by more than
/// [`LOG_AXIS_RATIO`], the y axis is logarithmic and the chart says so.
pub fn throughput(runs: &[ReportRun]) -> Chart {
    let unit = crate::model::common_unit(runs);
    let mut chart = LineChart {
        title: "Throughput vs concurrency".into(),
        x_label: "concurrency (clients)".into(),
        y_label: format!("throughput ({unit})"),
        ..Default::default()
    };
    if let Some((lo, hi)) = peaks_differ(runs) {
        chart.log_y = true;
        chart.y_label = format!("throughput ({unit}, log scale)");
        chart.remark = Some(format!(
            "log scale: the runs' peaks differ {:.0}× ({} to {} {unit})",
            hi / lo,
            crate::fmt::thousands(lo),
            crate::fmt::thousands(hi)
        ));
    }
    for (i, r) in runs.iter().enumerate() {
        let color = run_color(i);
        let pts = points_of(r);
        chart.series.push(LineSeries {
            name: r.name.clone(),
            color,
            dashed: false,
            dots: true,
            points: pts.iter().map(|p| (f64::from(p.concurrency), Some(p.throughput))).collect(),
        });
        for p in pts.iter().filter(|_| !chart.log_y) {
            if let Some(ci) = p.throughput_ci {
                let label = format!(
                    "{}: 95 % interval {} to {} at {}",
                    r.name,
                    crate::fmt::thousands(ci.low),
                    crate::fmt::thousands(ci.high),
                    p.concurrency
                );
                chart.error_bars.push(ErrorBar { x: f64::from(p.concurrency), low: ci.low.max(0.0), high: ci.high, color, label });
            }
        }
        if let Some(c) = &r.diagnosis.curve {
            let at = |n: u32| pts.iter().find(|p| p.concurrency == n).map(|p| p.throughput);
            let same = c.knee_concurrency == c.peak_concurrency;
            if let Some(y) = at(c.knee_concurrency).filter(|_| !same) {
                chart.markers.push(Marker { x: f64::from(c.knee_concurrency), y, label: "knee".into(), color });
            }
            let label = if same { "peak = knee" } else { "peak" };
            chart.markers.push(Marker { x: f64::from(c.peak_concurrency), y: c.peak, label: label.into(), color });
        }
        match (&r.diagnosis.usl, pts.first(), pts.last()) {
            (Some(u), Some(a), Some(b)) => {
                let (lo, hi) = (f64::from(a.concurrency), f64::from(b.concurrency));
                let points = (0..=60).map(|k| lo + (hi - lo) * f64::from(k) / 60.0).map(|n| (n, Some(u.predict(n)))).collect();
                chart.series.push(LineSeries { name: format!("{} USL fit", r.name), color, dashed: true, dots: false, points });
            }
            _ => chart.notes.push(format!(
                "{}: no usable USL fit ({})",
                r.name,
                r.diagnosis.usl_error.as_deref().unwrap_or("no measured step")
            )),
        }
    }
    Chart::line("throughput".into(), chart, "no run has a measured step")
}

/// Scaling (% of the first step's throughput) vs concurrency, one line per run.
pub fn scaling(runs: &[ReportRun]) -> Chart {
    let mut chart = LineChart {
        title: "Scaling vs concurrency".into(),
        x_label: "concurrency (clients)".into(),
        y_label: "scaling (% of first step)".into(),
        ..Default::default()
    };
    for (i, r) in runs.iter().enumerate() {
        let pts = points_of(r);
        let base = pts.first().map(|p| p.throughput).filter(|b| *b > 0.0);
        chart.series.push(LineSeries {
            name: r.name.clone(),
            color: run_color(i),
            dashed: false,
            dots: true,
            points: pts.iter().map(|p| (f64::from(p.concurrency), base.map(|b| 100.0 * p.throughput / b))).collect(),
        });
    }
    Chart::line("scaling".into(), chart, "no run has a first step with throughput")
}

/// The load charts of one run: latency vs concurrency for a closed loop;
/// for an open loop latency and achieved throughput vs offered rate, and a
/// capacity run's search path and SLO latency.
pub fn load_charts(r: &ReportRun) -> Vec<Chart> {
    if !rate::is_open_loop(&r.run) {
        return vec![latency(r)];
    }
    let mut out = vec![rate::hockey_stick(r), rate::achieved(r)];
    out.extend(capacity::charts(r));
    out
}

/// Latency percentiles (p50, p99, p99.9) vs concurrency of one run.
pub fn latency(r: &ReportRun) -> Chart {
    let pts = points_of(r);
    let mut chart = LineChart {
        title: format!("Latency vs concurrency — {}", r.name),
        x_label: "concurrency (clients)".into(),
        y_label: "latency (ms)".into(),
        ..Default::default()
    };
    type Pick = fn(&Point) -> Option<f64>;
    let pick: [(&str, Pick); 3] = [("p50", |p| p.p50_ms), ("p99", |p| p.p99_ms), ("p99.9", |p| p.p999_ms)];
    for (k, (name, f)) in pick.iter().enumerate() {
        chart.series.push(LineSeries {
            name: (*name).into(),
            color: PALETTE[[0, 1, 3][k]],
            dashed: false,
            dots: true,
            points: pts.iter().map(|p| (f64::from(p.concurrency), f(p))).collect(),
        });
    }
    let why = if r.run.kind == scalelab_core::RunKind::Imported {
        "unavailable: an imported series has no latency figures"
    } else {
        "unavailable: no step recorded a latency"
    };
    Chart::line(format!("run-{}-latency", r.run.id), chart, why)
}

fn bands(t: &Timeline) -> Vec<Band> {
    t.phases
        .iter()
        .map(|p| Band {
            x0: p.start_s,
            x1: p.end_s,
            fill: match p.kind {
                PhaseKind::WarmUp => WARMUP_FILL,
                PhaseKind::Window => WINDOW_FILL,
                PhaseKind::Pause => PAUSE_FILL,
            },
            label: format!("{}: {} {:.1}–{:.1} s", p.concurrency, p.kind.name(), p.start_s, p.end_s),
        })
        .collect()
}

fn reason(t: &Timeline, keys: &[&str]) -> String {
    keys.iter()
        .find_map(|k| t.unavailable.get(*k).map(|why| format!("unavailable: {why}")))
        .unwrap_or_else(|| "unavailable: not recorded for this run".to_string())
}

/// The per-second timeline charts of one run: throughput, CPU split,
/// context switches, and power when measured. Steps are shaded
/// (warm-up, window, pause) behind every line.
pub fn timeline(r: &ReportRun) -> Vec<Chart> {
    let Some(t) = &r.timeline else { return Vec::new() };
    let id = r.run.id;
    let base = |title: &str, y: &str| LineChart {
        title: format!("{title} — {}", r.name),
        x_label: "time since the first warm-up (s); shaded: warm-up (orange), window (blue), pause (grey)".into(),
        y_label: y.into(),
        bands: bands(t),
        ..Default::default()
    };
    let one = |name: &str, color: &'static str, points: &Points| LineSeries {
        name: name.into(),
        color,
        dashed: false,
        dots: false,
        points: points.clone(),
    };
    let mut charts = Vec::new();
    let mut c = base("Throughput per second", &format!("throughput ({})", r.run.plan.throughput_unit()));
    c.series.push(one("throughput", PALETTE[0], &t.throughput_per_s));
    c.remark = Some("nothing is recorded in warm-ups and pauses: the line joins the windows across them".into());
    charts.push(Chart::line(format!("run-{id}-timeline-throughput"), c, "unavailable: no per-second results recorded"));

    let mut c = base("CPU per second", "CPU (% of all cores)");
    c.y_max = Some(100.0);
    for (name, color, pts, key) in [
        ("user", PALETTE[0], &t.cpu_user_pct, "cpu_user_pct"),
        ("system", PALETTE[3], &t.cpu_sys_pct, "cpu_sys_pct"),
        ("iowait", PALETTE[1], &t.cpu_iowait_pct, "cpu_iowait_pct"),
        ("idle", PALETTE[2], &t.cpu_idle_pct, "cpu_idle_pct"),
    ] {
        if pts.iter().any(|p| p.1.is_some()) {
            c.series.push(one(name, color, pts));
        } else {
            c.notes.push(format!("{name}: {}", reason(t, &[key, "cpu", "system"])));
        }
    }
    charts.push(Chart::line(format!("run-{id}-timeline-cpu"), c, &reason(t, &["cpu", "system"])));

    let mut c = base("Context switches per second", "context switches (1/s)");
    c.series.push(one("context switches", PALETTE[4], &t.cs_per_s));
    charts.push(Chart::line(format!("run-{id}-timeline-cs"), c, &reason(t, &["cs_per_s", "cpu", "system"])));

    if t.power_w.iter().any(|p| p.1.is_some()) {
        let mut c = base("Power", "power (W)");
        c.series.push(one("power", PALETTE[3], &t.power_w));
        charts.push(Chart::line(format!("run-{id}-timeline-power"), c, "unavailable"));
    }
    charts
}

/// The share of the server's thread-time in each state, one stacked bar per
/// step; a step without thread sampling shows "unavailable" in place of its bar.
/// `None` when the run has no measured step.
pub fn thread_states(r: &ReportRun) -> Option<Chart> {
    let steps: Vec<_> = r.run.steps.iter().filter(|s| s.published_throughput_per_s.is_none() && s.window_s > 0.0).collect();
    if steps.is_empty() {
        return None;
    }
    let title = format!("Server thread states per step — {}", r.name);
    let id = format!("run-{}-thread-states", r.run.id);
    let states: Vec<_> = steps.iter().map(|s| s.telemetry.as_ref().and_then(|t| t.thread_states_pct)).collect();
    if states.iter().all(Option::is_none) {
        let why = steps
            .iter()
            .find_map(|s| {
                // The summary's figure key first, then the thread sampler's own note.
                s.telemetry
                    .as_ref()
                    .and_then(|t| t.unavailable.get("thread_states").or_else(|| t.unavailable.get(Source::Threads.key())).cloned())
            })
            .unwrap_or_else(|| "no telemetry recorded for this run".into());
        return Some(Chart { id, title, svg: Err(format!("unavailable: {why}")), omitted: false });
    }
    let layer = |name: &str, color: &'static str, f: fn(&scalelab_core::ThreadStatesPct) -> f64| Stack {
        name: name.into(),
        color,
        values: states.iter().map(|s| s.map_or(0.0, |s| f(&s))).collect(),
    };
    let bars = StackedBars {
        title: title.clone(),
        x_label: "concurrency (clients)".into(),
        y_label: "share of thread-time (%)".into(),
        categories: steps.iter().map(|s| s.concurrency.to_string()).collect(),
        present: states.iter().map(Option::is_some).collect(),
        stacks: vec![
            layer("running", PALETTE[2], |s| s.running),
            layer("runnable", PALETTE[1], |s| s.runnable),
            layer("futex-blocked", PALETTE[3], |s| s.futex),
            layer("I/O", PALETTE[4], |s| s.io),
            layer("idle", PALETTE[5], |s| s.idle),
            layer("other", "#999999", |s| s.other),
        ],
        y_max: Some(100.0),
    };
    Some(Chart { id, title, svg: Ok(bars.render()), omitted: false })
}

/// The database's own waits per step, when a database probe ran:
/// PostgreSQL's wait profile (share of active backends per wait-event type,
/// `CPU` = active with no wait) as stacked bars; MySQL/MariaDB's InnoDB
/// row-lock waits, table-lock waits and latch OS waits per second vs
/// concurrency. `None` when no step has database figures.
pub fn db_waits(r: &ReportRun) -> Option<Chart> {
    let steps: Vec<_> = r.run.steps.iter().filter(|s| s.published_throughput_per_s.is_none() && s.window_s > 0.0).collect();
    let dbs: Vec<_> = steps.iter().map(|s| s.telemetry.as_ref().and_then(|t| t.db.as_ref())).collect();
    let engine = dbs.iter().flatten().next()?.engine.clone();
    let id = format!("run-{}-db-waits", r.run.id);
    if engine == "postgres" {
        let title = format!("PostgreSQL wait profile per step — {}", r.name);
        // Wait types by their largest share over the steps; the rest is "other".
        let mut types: Vec<(String, f64)> = Vec::new();
        for w in dbs.iter().flatten().flat_map(|d| d.wait_types.iter()) {
            match types.iter_mut().find(|(n, _)| *n == w.wait) {
                Some(t) => t.1 = t.1.max(w.pct),
                None => types.push((w.wait.clone(), w.pct)),
            }
        }
        types.sort_by(|a, b| b.1.total_cmp(&a.1));
        types.truncate(5);
        if types.is_empty() {
            return Some(Chart {
                id,
                title,
                svg: Err("unavailable: no pg_stat_activity poll saw an active backend".into()),
                omitted: false,
            });
        }
        let present: Vec<bool> = dbs.iter().map(|d| d.is_some_and(|d| d.activity_polls.is_some() && !d.wait_types.is_empty())).collect();
        let share = |d: Option<&&scalelab_core::DbTelemetry>, ty: &str| {
            d.and_then(|d| d.wait_types.iter().find(|w| w.wait == ty)).map_or(0.0, |w| w.pct)
        };
        let mut stacks: Vec<Stack> = types
            .iter()
            .enumerate()
            .map(|(i, (ty, _))| Stack {
                name: ty.clone(),
                color: if ty == "CPU" { PALETTE[2] } else { PALETTE[[3, 1, 4, 0, 5][i % 5]] },
                values: dbs.iter().map(|d| share(d.as_ref(), ty)).collect(),
            })
            .collect();
        let other: Vec<f64> = stacks.iter().fold(vec![100.0; dbs.len()], |acc, s| acc.iter().zip(&s.values).map(|(a, v)| a - v).collect());
        stacks.push(Stack {
            name: "other".into(),
            color: "#999999",
            values: other.iter().zip(&present).map(|(o, p)| if *p { o.max(0.0) } else { 0.0 }).collect(),
        });
        let bars = StackedBars {
            title: title.clone(),
            x_label: "concurrency (clients)".into(),
            y_label: "share of active backends (%)".into(),
            categories: steps.iter().map(|s| s.concurrency.to_string()).collect(),
            present,
            stacks,
            y_max: Some(100.0),
        };
        return Some(Chart { id, title, svg: Ok(bars.render()), omitted: false });
    }
    let mut chart = LineChart {
        title: format!("Database waits per step — {}", r.name),
        x_label: "concurrency (clients)".into(),
        y_label: "waits per second".into(),
        ..Default::default()
    };
    type Pick = fn(&scalelab_core::DbTelemetry) -> Option<f64>;
    let picks: [(&str, Pick, usize); 3] = [
        ("InnoDB row-lock waits/s", |d| d.row_lock_waits_per_s, 3),
        ("table-lock waits/s", |d| d.table_locks_waited_per_s, 1),
        ("InnoDB latch OS waits/s", |d| d.os_waits_per_s, 4),
    ];
    for (name, f, color) in picks {
        let points: Vec<(f64, Option<f64>)> = steps.iter().zip(&dbs).map(|(s, d)| (f64::from(s.concurrency), d.and_then(f))).collect();
        if points.iter().all(|p| p.1.is_none()) {
            chart.notes.push(format!("{name}: unavailable (not reported by this server)"));
        } else {
            chart.series.push(LineSeries { name: name.into(), color: PALETTE[color], dashed: false, dots: true, points });
        }
    }
    // Counters read, all zero in every step: flat lines on zero say nothing
    // a sentence cannot, so the chart is one line instead.
    let all_zero = chart.series.iter().flat_map(|s| s.points.iter().filter_map(|p| p.1)).all(|v| v <= 0.0);
    if !chart.series.is_empty() && all_zero {
        let names: Vec<&str> = chart.series.iter().map(|s| s.name.as_str()).collect();
        let title = chart.title.clone();
        let why = format!("none sampled above 0 in any step ({}); chart omitted", names.join(", "));
        return Some(Chart { id, title, svg: Err(why), omitted: true });
    }
    Some(Chart::line(id, chart, "unavailable: the database probe recorded no wait counters"))
}

/// Every chart of the report, in the order the HTML shows them.
pub fn all(runs: &[ReportRun]) -> Vec<Chart> {
    let mut out = vec![scaling(runs), throughput(runs)];
    out.extend(runs.iter().flat_map(load_charts));
    for r in runs {
        out.extend(timeline(r));
        out.extend(thread_states(r));
        out.extend(db_waits(r));
    }
    out
}
