//! A step split across agents, and what each agent did in it. Their
//! results are merged by [`StepResult::merge`] (core): counters and
//! histograms added, never percentiles averaged; client-bound judged per
//! agent, so one saturated agent makes the step client-bound.

use scalelab_core::result::StepResult;
use scalelab_core::StepPlan;
use serde::{Deserialize, Serialize};

/// Each agent's share of `plan` (None: nothing for that agent this step).
/// Concurrency is split in whole connections of `streams` clients (HTTP/2;
/// 1 otherwise) evenly, the remainder to the first agents (10 over 2 → 5 +
/// 5, 11 over 2 → 6 + 5; 16 clients as 4 connections of 4 → 8 + 8), so
/// the agents open as many connections as one client would; a short last
/// connection is the last agent's. An open loop's rate follows the clients.
pub fn split(plan: &StepPlan, agents: usize, streams: u32) -> Vec<Option<StepPlan>> {
    let n = agents.max(1) as u32;
    let streams = streams.max(1);
    let conns = plan.concurrency.div_ceil(streams);
    let (base, rem) = (conns / n, conns % n);
    let mut left = plan.concurrency;
    (0..n)
        .map(|i| {
            let c = ((base + u32::from(i < rem)) * streams).min(left);
            left -= c;
            if c == 0 {
                return None;
            }
            let mut p = plan.clone();
            p.concurrency = c;
            if let Some(ol) = &mut p.open_loop {
                ol.rate_per_s = plan.open_loop.as_ref().map_or(0.0, |o| o.rate_per_s) * f64::from(c) / f64::from(plan.concurrency);
                ol.max_in_flight = c;
            }
            Some(p)
        })
        .collect()
}

/// What one agent did in one step, as the run records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentShare {
    /// The agent as the user named it (`ssh://host`, `tcp://host:port`).
    pub agent: String,
    pub concurrency: u32,
    /// Open loop: the rate this agent offered (its part of the step's), requests per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_rate_per_s: Option<f64>,
    pub requests: u64,
    pub errors: u64,
    pub throughput_per_s: f64,
    pub p99_ms: Option<f64>,
    pub client_cpu_pct: Option<f64>,
    /// More than 90 % of the agent's cores busy: its share is the client's limit.
    pub client_bound: bool,
    /// The agent was lost during this step: its share is missing.
    pub lost: bool,
    /// Its window's start on the coordinator's clock (Unix ms; 0 when lost):
    /// the agents' starts differ by the clock offsets' error.
    pub window_start_unix_ms: i64,
}

impl AgentShare {
    /// The share of `agent` from its result.
    pub fn of(agent: &str, r: &StepResult) -> AgentShare {
        AgentShare {
            agent: agent.to_string(),
            concurrency: r.concurrency,
            offered_rate_per_s: r.offered_rate_per_s,
            requests: r.requests,
            errors: r.errors.total(),
            throughput_per_s: r.throughput_per_s(),
            p99_ms: r.latency.quantile_ms(0.99),
            client_cpu_pct: r.client_cpu_pct(),
            client_bound: r.client_saturated(),
            lost: false,
            window_start_unix_ms: r.window_start_unix_ms,
        }
    }

    /// An agent lost in a step, with the concurrency it had been given.
    pub fn lost(agent: &str, concurrency: u32) -> AgentShare {
        AgentShare {
            agent: agent.to_string(),
            concurrency,
            offered_rate_per_s: None,
            requests: 0,
            errors: 0,
            throughput_per_s: 0.0,
            p99_ms: None,
            client_cpu_pct: None,
            client_bound: false,
            lost: true,
            window_start_unix_ms: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalelab_core::result::SecondResult;
    use scalelab_core::LatencyHistogram;
    use std::time::Duration;

    fn part(seed: u64, n: u64, cpu_s: f64) -> StepResult {
        let mut r = StepResult { concurrency: 3, window_s: 2.0, client_cores: 2, client_cpu_s: cpu_s, ..Default::default() };
        for sec in 0..2u32 {
            let mut s = SecondResult { second: sec, ..Default::default() };
            for i in 0..n {
                // Different shapes per agent: one fast, one with a slow tail.
                let us = 100 + (i * seed * 37) % (1000 * seed);
                s.latency.record(Duration::from_micros(us));
            }
            s.requests = n;
            r.requests += n;
            r.latency.merge(&s.latency);
            r.seconds.push(s);
        }
        r
    }

    #[test]
    fn merged_counts_are_the_sum_and_percentiles_those_of_the_union() {
        let (a, b) = (part(1, 5000, 0.2), part(9, 300, 3.8));
        // Through the wire, as the coordinator gets them.
        let wire = |r: &StepResult| serde_json::from_str::<StepResult>(&serde_json::to_string(r).unwrap()).unwrap();
        let (a, b) = (wire(&a), wire(&b));
        let m = StepResult::merge(6, &[a.clone(), b.clone()], false);
        assert_eq!(m.requests, a.requests + b.requests);
        assert_eq!(m.latency.count(), a.latency.count() + b.latency.count());
        let mut union = LatencyHistogram::new();
        union.merge(&a.latency);
        union.merge(&b.latency);
        for q in [0.5, 0.9, 0.99, 0.999] {
            assert_eq!(m.latency.quantile_ms(q), union.quantile_ms(q), "q={q}");
        }
        // Averaging the agents' p99s would have been far from the union's.
        let avg = (a.latency.quantile_ms(0.99).unwrap() + b.latency.quantile_ms(0.99).unwrap()) / 2.0;
        assert!((avg - union.quantile_ms(0.99).unwrap()).abs() > 0.5, "the test tells merging from averaging");
        assert_eq!(m.seconds[1].requests, 5300);
        assert_eq!(m.throughput_per_s(), 10600.0 / 2.0);
        // Client-bound per agent: b used 95 % of its 2 cores.
        assert!(m.client_saturated() && AgentShare::of("b", &b).client_bound && !AgentShare::of("a", &a).client_bound);
        assert!(!m.partial && StepResult::merge(6, &[a], true).partial);
    }

    #[test]
    fn concurrency_split_gives_the_remainder_to_the_first() {
        let plan = StepPlan { concurrency: 11, warmup_s: 0.0, window_s: 1.0, pause_s: 0.0, think_time_s: 0.0, open_loop: None };
        let shares = |concurrency: u32, agents: usize, streams: u32| -> Vec<Option<u32>> {
            let p = StepPlan { concurrency, ..plan.clone() };
            split(&p, agents, streams).into_iter().map(|p| p.map(|p| p.concurrency)).collect()
        };
        assert_eq!(shares(11, 2, 1), vec![Some(6), Some(5)]);
        assert_eq!(shares(1, 3, 1), vec![Some(1), None, None]);
        // HTTP/2: whole connections of 4 streams; the short last one (2
        // clients) is one agent's, so 3 connections in all, as one client opens.
        assert_eq!(shares(16, 2, 4), vec![Some(8), Some(8)]);
        assert_eq!(shares(10, 2, 4), vec![Some(8), Some(2)]);
        assert_eq!(shares(5, 3, 4), vec![Some(4), Some(1), None]);
        assert_eq!(shares(3, 2, 4), vec![Some(3), None]);
    }
}
