//! A capacity search in words (`scalelab capacity`, docs/open-loop.md):
//! the answer with its SLOs, the bracket searched, every tried rate as a
//! row, and the verdict at the first failing rate.

use crate::fmt::{columns_fit_with, ms, thousands};
use scalelab_analyze::capacity::{Found, Search, Slo, SloMetric, Trial};
use scalelab_core::Run;

/// The stored name of a search's result (`capacity_result` in the plan's options).
pub fn found_name(found: Option<&Found>) -> &'static str {
    match found {
        Some(Found::Capacity { .. }) => "capacity",
        Some(Found::Noisy { .. }) => "noisy",
        Some(Found::NoneHeld { .. }) => "none held",
        Some(Found::Unfinished { .. }) => "out of time",
        None => "interrupted",
    }
}

/// The run's stored outcome.
pub fn outcome(found: Option<&Found>) -> String {
    match found {
        Some(Found::Capacity { rate, .. }) => format!("completed: capacity {} req/s", thousands(*rate)),
        Some(Found::Noisy { rate }) => format!("completed: noisy (the confirmation at {} req/s failed)", thousands(*rate)),
        Some(Found::NoneHeld { lowest }) => format!("completed: no rate held (down to {} req/s)", thousands(*lowest)),
        Some(Found::Unfinished { .. }) => "completed: out of time (--max-time)".into(),
        None => "interrupted".into(),
    }
}

/// `p99 14.2 ms ≤ 20 ms; errors 0.00 %`: each SLO, then errors when no SLO bounds them.
fn held(t: &Trial, slos: &[Slo]) -> String {
    let mut parts: Vec<String> = slos.iter().map(|s| s.describe(&t.observation)).collect();
    if !slos.iter().any(|s| s.metric == SloMetric::Errors) {
        parts.push(format!("errors {:.2} %", t.observation.error_share * 100.0));
    }
    parts.join("; ")
}

/// `held`, or `failed: ` and the breaches: one word for a try in the
/// progress lines and in the table.
fn verdict(t: &Trial) -> String {
    if t.passed() {
        "held".to_string()
    } else {
        format!("failed: {}", t.breaches.join(", "))
    }
}

/// One progress line per tried rate.
pub fn trial_line(index: usize, t: &Trial) -> String {
    let o = &t.observation;
    let verdict = verdict(t);
    format!(
        "  try {} ({}): {} req/s offered, {} achieved, p99 {} ms: {verdict}",
        index + 1,
        t.phase.name(),
        thousands(o.offered_per_s),
        thousands(o.achieved_per_s),
        ms(o.p99_ms)
    )
}

/// The verdicts at the first failing rate (the step tried at it, or the
/// nearest above), most severe first; empty when no rate failed.
fn at_first_failure(search: &Search, run: &Run) -> Vec<scalelab_analyze::Verdict> {
    let Some(i) = search.first_failing() else { return Vec::new() };
    let rate = search.trials()[i].observation.offered_per_s.round();
    let d = scalelab_analyze::diagnose(run);
    let Some(at) = d.verdicts.iter().filter(|v| f64::from(v.concurrency) >= rate).map(|v| v.concurrency).min() else { return Vec::new() };
    d.verdicts.into_iter().filter(|v| v.concurrency == at).collect()
}

/// Why a capacity found cannot be trusted, in words: the load generator,
/// not the server, fell short at the first failing rate, so the rate that
/// held is a lower bound of nothing in particular. `None` when no capacity
/// was found or nothing says so.
pub fn untrusted(search: &Search, run: &Run) -> Option<String> {
    if !matches!(search.found(), Some(Found::Capacity { .. })) {
        return None;
    }
    let i = search.first_failing()?;
    let rate = search.trials()[i].observation.offered_per_s;
    at_first_failure(search, run)
        .iter()
        .any(|v| v.kind == scalelab_analyze::VerdictKind::ClientBound)
        .then(|| format!("the load generator, not the server, fell short at {} req/s, the first failing rate", thousands(rate)))
}

/// The stored outcome of a capacity that cannot be trusted ([`untrusted`]).
pub fn untrusted_outcome(rate: f64, why: &str) -> String {
    format!("completed: capacity not established ({why}; {} req/s held)", thousands(rate))
}

/// The headline, the bracket, the table of tried rates and the verdict at the first failing rate.
pub fn summary(search: &Search, run: &Run, width: Option<usize>) -> String {
    let slos = &search.settings().slos;
    let trials = search.trials();
    let mut out = String::new();
    let confirm = trials.last();
    let distrust = untrusted(search, run);
    out.push_str(&match (search.found(), confirm) {
        (Some(Found::Capacity { rate, .. }), Some(_)) if distrust.is_some() => format!(
            "capacity: not established: {}; {} req/s held, but what the server holds beyond it was not measured\n",
            distrust.as_deref().unwrap_or_default(),
            thousands(*rate)
        ),
        (Some(Found::Capacity { rate, .. }), Some(t)) => format!("capacity: {} req/s ({})\n", thousands(*rate), held(t, slos)),
        (Some(Found::Noisy { rate }), Some(t)) => format!(
            "capacity: noisy: {} req/s held, then its confirmation window failed ({}); no number is given, try a longer --step\n",
            thousands(*rate),
            t.breaches.join(", ")
        ),
        (Some(Found::NoneHeld { lowest }), _) => format!("capacity: none: every rate tried failed, down to {} req/s\n", thousands(*lowest)),
        (Some(Found::Unfinished { passed, failed }), _) => format!(
            "capacity: unknown: --max-time ran out between {} (held) and {} (failed)\n",
            passed.map_or("-".into(), |r| format!("{} req/s", thousands(r))),
            failed.map_or("-".into(), |r| format!("{} req/s", thousands(r)))
        ),
        _ => "capacity: interrupted before the search ended\n".into(),
    });
    let (lo, hi) = search.bracket();
    let s = search.settings();
    out.push_str(&format!(
        "searched: {} to {} req/s, bracket {} (held) .. {} (failed), resolution {} %\n\n",
        thousands(s.start_per_s.min(lo.unwrap_or(s.start_per_s))),
        thousands(hi.unwrap_or(s.max_per_s)),
        lo.map_or("-".into(), thousands),
        hi.map_or("-".into(), thousands),
        s.resolution * 100.0
    ));
    let mut rows = vec![["#", "phase", "offered/s", "achieved/s", "p99 ms", "errors", "result"].map(String::from).to_vec()];
    for (i, t) in trials.iter().enumerate() {
        let o = &t.observation;
        rows.push(vec![
            (i + 1).to_string(),
            t.phase.name().into(),
            thousands(o.offered_per_s),
            thousands(o.achieved_per_s),
            ms(o.p99_ms),
            format!("{:.2}%", o.error_share * 100.0),
            verdict(t),
        ]);
    }
    out.push_str(&columns_fit_with(&rows, &[6], width));
    if let Some(i) = search.first_failing() {
        let rate = trials[i].observation.offered_per_s;
        let verdicts = at_first_failure(search, run);
        out.push_str(&format!("\nfirst failing rate {} req/s: ", thousands(rate)));
        match verdicts.first() {
            Some(v) => out.push_str(&format!("{}\n  next: {}\n", v.headline, v.next)),
            None => out.push_str("no verdict (`scalelab diagnose` shows the evidence)\n"),
        }
    }
    out
}
