//! The words and cells shared by the HTML and Markdown reports and by
//! `compare`: each run's curve and main verdict side by side, verdict lines
//! with their evidence, and the benchmark configuration of every run side by
//! side with the rows that differ flagged.

use crate::fmt::clients;
use crate::fmt::thousands;
use scalelab_analyze::{Diagnosis, Evidence, Verdict};
use scalelab_core::{escape_control, Run};

/// A figure for text (thousands separated, fewer decimals as it grows).
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        "?".into()
    } else if v.abs() >= 1000.0 {
        thousands(v)
    } else if v.abs() >= 10.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// One evidence figure: "CPU busy 38%", "context switches 31,200 cs/s".
pub fn evidence_text(e: &Evidence) -> String {
    let sep = if e.unit.starts_with('%') { "" } else { " " };
    format!("{} {}{sep}{}", e.name, num(e.value), e.unit)
}

/// "LOCK CONTENTION (high) at 50 clients".
pub fn verdict_title(v: &Verdict) -> String {
    format!("{} ({}) at {}", v.kind.title(), v.confidence.name(), clients(v.concurrency))
}

/// The verdict's headline followed by its figures.
pub fn verdict_detail(v: &Verdict) -> String {
    let figures: Vec<String> = v.evidence.iter().map(evidence_text).collect();
    if figures.is_empty() {
        v.headline.clone()
    } else {
        format!("{}: {}", v.headline, figures.join(", "))
    }
}

fn peak_cell(d: &Diagnosis) -> String {
    d.curve.as_ref().map_or("-".into(), |c| {
        let noise = crate::diagnosis::within_noise(c).map(|n| format!(" ({n})")).unwrap_or_default();
        format!("{} at {}{noise}", crate::diagnosis::peak_figure(c, &d.unit), clients(c.peak_concurrency))
    })
}

fn knee_cell(d: &Diagnosis) -> String {
    d.curve
        .as_ref()
        .map_or("-".into(), |c| if c.flat_within_noise { "none: flat within noise".into() } else { clients(c.knee_concurrency) })
}

fn collapse_cell(d: &Diagnosis) -> String {
    match d.curve.as_ref() {
        None => "-".into(),
        Some(c) => match &c.collapse {
            None if c.flat_within_noise => "none: flat within noise".into(),
            None => match &c.collapse_within_noise {
                Some(k) => format!("none: the drop to {}% of peak at {} is within noise", num(k.pct_of_peak), clients(k.concurrency)),
                None => "none".into(),
            },
            Some(k) => format!(
                "{} at {} = {}% of peak{}",
                crate::diagnosis::per_s(k.throughput, &d.unit),
                clients(k.concurrency),
                num(k.pct_of_peak),
                if k.retrograde { " (retrograde)" } else { "" }
            ),
        },
    }
}

fn main_verdict_cell(d: &Diagnosis) -> String {
    match d.verdicts.first() {
        Some(v) => verdict_title(v),
        None if d.curve.is_none() => "-".into(),
        None => "none (no rule fired, or no telemetry)".into(),
    }
}

/// Rows of each run's curve and main verdict side by side (first row: the
/// run names); `with_usl` adds the USL parameters (λ, σ, κ, R², N*) and the
/// main verdict's evidence.
pub fn side_by_side(runs: &[(&str, &Diagnosis)], with_usl: bool) -> Vec<Vec<String>> {
    let mut rows = vec![std::iter::once(String::new()).chain(runs.iter().map(|(n, _)| n.to_string())).collect::<Vec<_>>()];
    let mut row = |name: &str, f: &dyn Fn(&Diagnosis) -> String| {
        rows.push(std::iter::once(name.to_string()).chain(runs.iter().map(|(_, d)| f(d))).collect());
    };
    row("peak", &peak_cell);
    row("knee", &knee_cell);
    row("collapse", &collapse_cell);
    if runs.iter().any(|(_, d)| d.curve.as_ref().is_some_and(|c| c.superlinear_start.is_some())) {
        // Short here; `diagnose` explains it.
        row("super-linear start", &|d: &Diagnosis| {
            d.curve.as_ref().and_then(|c| c.superlinear_start.as_ref()).map_or("-".into(), |s| {
                format!("{}: {:.0}% of {}'s (linear {:.0}%)", clients(s.to), s.scaling_pct, clients(s.from), s.linear_pct)
            })
        });
    }
    if with_usl {
        fn usl(d: &Diagnosis, f: impl Fn(&scalelab_analyze::UslFit) -> String) -> String {
            d.usl.as_ref().map_or_else(|| "-".to_string(), f)
        }
        row("USL λ (per client)", &|d| usl(d, |u| crate::diagnosis::per_s(u.lambda, &d.unit)));
        row("USL σ (contention)", &|d| usl(d, |u| format!("{:.4}", u.sigma)));
        row("USL κ (coherency)", &|d| usl(d, |u| format!("{:.5}", u.kappa)));
        row("USL R²", &|d| usl(d, |u| u.r2.map_or("-".into(), |r| format!("{r:.3}"))));
        row("USL N* (optimum clients)", &|d| usl(d, |u| u.n_opt.map_or("none (κ = 0)".into(), num)));
        if runs.iter().any(|(_, d)| d.usl_from.is_some()) {
            row("USL fitted from", &|d: &Diagnosis| d.usl_from.map_or("the first step".into(), clients));
        }
        if runs.iter().any(|(_, d)| d.usl_error.is_some()) {
            row("USL note", &|d: &Diagnosis| d.usl_error.clone().unwrap_or_default());
        }
    }
    row("main verdict", &main_verdict_cell);
    if with_usl {
        row("evidence", &|d: &Diagnosis| d.verdicts.first().map(verdict_detail).unwrap_or_default());
    }
    rows
}

/// One row of the benchmark configuration: the field, each run's value, and
/// whether the recorded values differ between runs (a value not recorded,
/// "-", as for imported series, is not counted as a difference).
pub struct EnvRow {
    pub field: &'static str,
    pub values: Vec<String>,
    pub differs: bool,
}

fn schedule(run: &Run) -> String {
    let conc: Vec<String> = run.plan.steps.iter().map(|s| s.concurrency.to_string()).collect();
    let first = run.plan.steps.first();
    match first {
        Some(s) if run.kind != scalelab_core::RunKind::Imported => format!(
            "clients {}; warm-up {} s, window {} s, pause {} s, think {} s",
            conc.join(","),
            s.warmup_s,
            s.window_s,
            s.pause_s,
            s.think_time_s
        ),
        _ => format!("clients {}", conc.join(",")),
    }
}

/// A run's workload, without the free port a specimen started by scalelab
/// listened on (runs stored before the workload left it out carry it):
/// two specimen runs do not differ by it.
fn specimen_workload(run: &Run) -> String {
    let w = run.plan.workload.clone();
    if !run.plan.target.starts_with("specimen:") {
        return w;
    }
    let Some(at) = w.find("http://127.0.0.1:") else { return w };
    let rest = &w[at + "http://127.0.0.1:".len()..];
    let port_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    format!("{}{}", &w[..at], &rest[port_len..])
}

/// The environment of every run side by side ("benchmark configuration").
pub fn environment_rows(runs: &[&Run]) -> Vec<EnvRow> {
    let o = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    type Field = Box<dyn Fn(&Run) -> String>;
    let fields: Vec<(&'static str, Field)> = vec![
        ("kind", Box::new(|r: &Run| r.kind.name().to_string())),
        ("target", Box::new(|r: &Run| r.plan.target.clone())),
        ("server", Box::new(move |r: &Run| o(r.environment.server.clone()))),
        ("workload", Box::new(specimen_workload)),
        ("schedule", Box::new(schedule)),
        ("client threads", Box::new(|r: &Run| r.plan.client_threads_text())),
        ("client network", Box::new(|r: &Run| r.plan.client_net().unwrap_or("this machine (none added)").to_string())),
        ("host", Box::new(move |r: &Run| o(r.environment.hostname.clone()))),
        ("kernel", Box::new(move |r: &Run| o(r.environment.kernel.clone()))),
        ("distribution", Box::new(move |r: &Run| o(r.environment.distribution.clone()))),
        ("CPU", Box::new(move |r: &Run| o(r.environment.cpu_model.clone()))),
        ("logical cores", Box::new(move |r: &Run| o(r.environment.logical_cores.map(|v| v.to_string())))),
        ("physical cores", Box::new(move |r: &Run| o(r.environment.physical_cores.map(|v| v.to_string())))),
        ("SMT", Box::new(move |r: &Run| o(r.environment.smt.map(|v| if v { "on".into() } else { "off".into() })))),
        ("memory", Box::new(move |r: &Run| o(r.environment.memory_kib.map(|k| format!("{:.1} GiB", k as f64 / 1048576.0))))),
        ("governor", Box::new(move |r: &Run| o(r.environment.governor.clone()))),
        ("net.ipv4.ip_local_port_range", Box::new(move |r: &Run| o(r.environment.ip_local_port_range.clone()))),
        ("net.core.somaxconn", Box::new(move |r: &Run| o(r.environment.somaxconn.map(|v| v.to_string())))),
        ("open files limit", Box::new(move |r: &Run| o(r.environment.open_files_limit.map(|v| v.to_string())))),
        ("scalelab version", Box::new(|r: &Run| r.environment.scalelab_version.clone())),
        ("preflight", Box::new(|r: &Run| crate::preflight::summary(r.environment.preflight.as_deref()))),
        (
            "status",
            Box::new(
                |r: &Run| if r.complete { "complete".into() } else { format!("incomplete: {}", r.outcome.as_deref().unwrap_or("killed")) },
            ),
        ),
    ];
    // Runs recorded before the preflight existed keep their table as it was.
    let any_preflight = runs.iter().any(|r| r.environment.preflight.is_some());
    // Likewise runs whose clients all ran on this machine's own network.
    let any_client_net = runs.iter().any(|r| r.plan.client_net().is_some());
    fields
        .into_iter()
        .filter(|(field, _)| any_preflight || *field != "preflight")
        .filter(|(field, _)| any_client_net || *field != "client network")
        .map(|(field, f)| {
            let values: Vec<String> = runs.iter().map(|r| f(r)).collect();
            let known: Vec<&String> = values.iter().filter(|v| *v != "-").collect();
            let differs = known.iter().any(|v| *v != known[0]);
            EnvRow { field, values, differs }
        })
        .collect()
}

/// Under a comparison: each run's client network, one line per run, when
/// any of them ran behind one (`--client-net`); None otherwise.
pub fn client_net_lines(runs: &[(&str, &Run)]) -> Option<String> {
    if !runs.iter().any(|(_, r)| r.plan.client_net().is_some()) {
        return None;
    }
    let lines: Vec<String> = runs
        .iter()
        .map(|(label, r)| format!("client network {}: {}", escape_control(label), r.plan.client_net().unwrap_or("none (this machine)")))
        .collect();
    Some(lines.join("\n") + "\n")
}
