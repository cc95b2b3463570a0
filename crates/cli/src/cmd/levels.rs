//! The load levels of a sweep from its options: closed-loop concurrencies
//! (`-c`) or open-loop rates (`--rate`, `--arrival`, `--max-in-flight`),
//! and which of its steps `--profile-steps` profiles. Checked before load.

use crate::args::SweepArgs;
use crate::error::bad;
use scalelab_core::{escape_control, parse_concurrency_list, parse_duration, parse_rate_list, Arrival, OpenLoopPlan};
use std::collections::BTreeSet;

/// `--profile-steps`: the steps to profile, 0-based (None: every step, as
/// --profile); a step past the sweep's `steps` is refused.
pub fn profile_steps(a: &SweepArgs, steps: usize) -> anyhow::Result<Option<BTreeSet<usize>>> {
    let Some(text) = &a.profile_steps else { return Ok(None) };
    let wrong = |part: &str| {
        bad(format!(
            "--profile-steps '{}': give step numbers counted from 1, or ranges of them (5, 4,6 or 3-5)",
            scalelab_core::escape_control(part)
        ))
    };
    let number = |t: &str| t.trim().parse::<usize>().ok().filter(|n| *n >= 1);
    let mut chosen = BTreeSet::new();
    for part in text.split(',') {
        let (from, to) = match part.split_once('-') {
            Some((x, y)) => (number(x).ok_or_else(|| wrong(part))?, number(y).ok_or_else(|| wrong(part))?),
            None => {
                let n = number(part).ok_or_else(|| wrong(part))?;
                (n, n)
            }
        };
        if from > to {
            return Err(wrong(part));
        }
        if to > steps {
            return Err(bad(format!("--profile-steps: step {to} is past the sweep's last (it has {steps} step(s))")));
        }
        chosen.extend(from - 1..to);
    }
    Ok(Some(chosen))
}

/// The steps' load levels: closed-loop concurrencies (`-c`), or offered
/// rates (`--rate`) with their connections (`max_in_flight`) and open-loop plan.
pub fn load_levels(a: &SweepArgs) -> anyhow::Result<Vec<(u32, Option<OpenLoopPlan>)>> {
    let Some(rates) = &a.rate else {
        if a.arrival.is_some() || a.max_in_flight.is_some() || a.latency_budget.is_some() {
            return Err(bad("--arrival, --max-in-flight and --latency-budget apply to open-loop steps: give --rate too"));
        }
        let c = parse_concurrency_list(a.concurrency.as_deref().unwrap_or("1,2,5,10,20,35,50"));
        return Ok(c.map_err(|e| bad(format!("--concurrency: {e}")))?.into_iter().map(|c| (c, None)).collect());
    };
    if a.concurrency.is_some() {
        return Err(bad(
            "--rate and -c/--concurrency exclude each other: a step offers a rate (open loop) or runs N clients (closed loop)",
        ));
    }
    if parse_duration(&a.think_time).is_ok_and(|t| !t.is_zero()) {
        return Err(bad("--think-time applies to closed-loop steps (-c): an open loop sends on its schedule"));
    }
    let rates = parse_rate_list(rates).map_err(|e| bad(format!("--rate: {e}")))?;
    let arrival = match a.arrival.as_deref().unwrap_or("constant") {
        "constant" => Arrival::Constant,
        "poisson" => Arrival::Poisson,
        other => return Err(bad(format!("--arrival '{}': use constant or poisson", escape_control(other)))),
    };
    let max_in_flight = match &a.max_in_flight {
        None => None,
        Some(t) => Some(
            t.trim()
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=100_000).contains(n))
                .ok_or_else(|| bad(format!("--max-in-flight '{}': use a number of requests from 1 to 100000", escape_control(t))))?,
        ),
    };
    let latency_budget_s = match &a.latency_budget {
        None => OpenLoopPlan::DEFAULT_LATENCY_BUDGET_S,
        Some(t) => parse_duration(t)
            .ok()
            .filter(|d| d.as_secs() <= 60)
            .ok_or_else(|| bad(format!("--latency-budget '{}': use a duration from 0 to 60s, such as 1s or 250ms", escape_control(t))))?
            .as_secs_f64(),
    };
    Ok(rates
        .into_iter()
        .map(|rate_per_s| {
            let m = max_in_flight.unwrap_or_else(|| OpenLoopPlan::default_max_in_flight(rate_per_s));
            (m, Some(OpenLoopPlan { rate_per_s, arrival, max_in_flight: m, latency_budget_s }))
        })
        .collect())
}
