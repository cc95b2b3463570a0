//! How a step offers its load: which clients (connections) exist, which
//! worker thread runs each, and when requests are sent.
//!
//! Closed loop: each client sends its next request when the reply to the
//! last has arrived. Open loop: requests are started at intended times
//! (a rate) whatever the replies, over a pool of connections.

use scalelab_core::{Arrival, StepPlan};
use std::time::Duration;

/// The load a step offers.
#[derive(Clone, Debug, PartialEq)]
pub enum Schedule {
    /// `concurrency` virtual clients, each with exactly one request in
    /// flight: a client sends its next request when the reply to the last
    /// one has arrived, after `think` (zero: at once).
    ClosedLoop { concurrency: u32, think: Duration },
    /// Requests started at `rate_per_s` (evenly or as a Poisson process)
    /// over `max_in_flight` connections; one scheduled while every
    /// connection has a request out waits up to `latency_budget` for one,
    /// then is dropped (docs/open-loop.md).
    OpenLoop { rate_per_s: f64, arrival: Arrival, max_in_flight: u32, latency_budget: Duration },
}

impl Schedule {
    /// The schedule a step's plan asks for.
    pub fn from_plan(plan: &StepPlan) -> Schedule {
        match plan.open_loop {
            Some(o) => Schedule::OpenLoop {
                rate_per_s: o.rate_per_s,
                arrival: o.arrival,
                max_in_flight: o.max_in_flight.max(1),
                latency_budget: o.latency_budget(),
            },
            None => Schedule::ClosedLoop { concurrency: plan.concurrency, think: Duration::from_secs_f64(plan.think_time_s) },
        }
    }

    /// How many virtual clients (connections) the step opens.
    pub fn clients(&self) -> u32 {
        match self {
            Schedule::ClosedLoop { concurrency, .. } => *concurrency,
            Schedule::OpenLoop { max_in_flight, .. } => *max_in_flight,
        }
    }

    /// Open loop: how long a request waits for a busy connection before it
    /// is dropped (zero: at once, and in a closed loop).
    pub(super) fn latency_budget(&self) -> Duration {
        match self {
            Schedule::ClosedLoop { .. } => Duration::ZERO,
            Schedule::OpenLoop { latency_budget, .. } => *latency_budget,
        }
    }

    /// The offered rate, requests per second (None: a closed loop).
    pub fn offered_rate_per_s(&self) -> Option<f64> {
        match self {
            Schedule::ClosedLoop { .. } => None,
            Schedule::OpenLoop { rate_per_s, .. } => Some(*rate_per_s),
        }
    }

    /// Worker threads to run: the threads asked for, at least one and no
    /// more than there are connections (`per_connection` clients share
    /// one, the last perhaps fewer).
    pub fn threads(&self, asked: u32, per_connection: u32) -> u32 {
        asked.clamp(1, self.clients().div_ceil(per_connection.max(1)).max(1))
    }

    /// The ids of the clients that worker `thread` of `threads` runs, with
    /// `per_connection` clients on each connection: connections round-robin
    /// (client c on connection c / per_connection, on thread connection %
    /// threads), so the clients of one connection share its thread.
    pub fn clients_of(&self, thread: u32, threads: u32, per_connection: u32) -> Vec<u32> {
        let per = per_connection.max(1);
        (0..self.clients()).filter(|c| (c / per) % threads == thread).collect()
    }

    /// How long a client waits after a successful request before sending
    /// the next one (closed loop).
    pub(super) fn pause_after_reply(&self) -> Duration {
        match self {
            Schedule::ClosedLoop { think, .. } => *think,
            Schedule::OpenLoop { .. } => Duration::ZERO,
        }
    }

    /// Open loop: the arrivals worker `thread` of `threads` starts. Each
    /// thread takes an equal share of the rate; evenly spaced arrivals are
    /// staggered so that the threads' arrivals interleave.
    pub(super) fn arrivals_of(&self, thread: u32, threads: u32) -> Option<Arrivals> {
        match *self {
            Schedule::ClosedLoop { .. } => None,
            Schedule::OpenLoop { rate_per_s, arrival, .. } => {
                let gap_s = f64::from(threads.max(1)) / rate_per_s;
                let phase = f64::from(thread) / f64::from(threads.max(1));
                Some(Arrivals { gap_s, arrival, k: 0, phase, at_s: 0.0, rng: 0x9E37_79B9_7F4A_7C15 ^ (u64::from(thread) << 32) })
            }
        }
    }
}

/// The intended start times of one thread's requests, as offsets from the
/// start of the load.
#[derive(Clone, Debug)]
pub(super) struct Arrivals {
    /// Mean gap between two of this thread's arrivals, s.
    gap_s: f64,
    arrival: Arrival,
    /// Constant: arrivals given so far (offsets are computed, not summed,
    /// so rounding never drifts).
    k: u64,
    /// Constant: this thread's offset, in gaps.
    phase: f64,
    /// Poisson: the last arrival's offset, s.
    at_s: f64,
    rng: u64,
}

impl Arrivals {
    /// How many of the arrivals not yet given fall in `[from_s, to_s)`
    /// (offsets from the start of the load): exact for evenly spaced
    /// arrivals, the expected count for Poisson ones. Computed, not
    /// iterated: the window's end may be millions of arrivals away.
    pub(super) fn remaining_in(&self, from_s: f64, to_s: f64) -> u64 {
        if to_s <= from_s || self.gap_s <= 0.0 {
            return 0;
        }
        match self.arrival {
            Arrival::Constant => {
                let first = |t: f64| (t / self.gap_s - self.phase).ceil().max(0.0) as u64;
                first(to_s).saturating_sub(first(from_s).max(self.k))
            }
            Arrival::Poisson => ((to_s - from_s.max(self.at_s)).max(0.0) / self.gap_s).round() as u64,
        }
    }
}

impl Iterator for Arrivals {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        let s = match self.arrival {
            Arrival::Constant => {
                let s = (self.k as f64 + self.phase) * self.gap_s;
                self.k += 1;
                s
            }
            Arrival::Poisson => {
                // splitmix64, then an exponential gap of mean gap_s.
                self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = self.rng;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^= z >> 31;
                let u = ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
                self.at_s += -u.ln() * self.gap_s;
                self.at_s
            }
        };
        Some(Duration::from_secs_f64(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalelab_core::OpenLoopPlan;

    #[test]
    fn a_closed_loop_spreads_its_clients_round_robin_over_at_most_one_thread_each() {
        let plan = StepPlan { concurrency: 5, warmup_s: 0.0, window_s: 1.0, pause_s: 0.0, think_time_s: 0.25, open_loop: None };
        let s = Schedule::from_plan(&plan);
        assert_eq!(s, Schedule::ClosedLoop { concurrency: 5, think: Duration::from_millis(250) });
        assert_eq!((s.threads(2, 1), s.threads(8, 1), s.threads(0, 1)), (2, 5, 1));
        assert_eq!((s.clients_of(0, 2, 1), s.clients_of(1, 2, 1)), (vec![0, 2, 4], vec![1, 3]));
        // HTTP/2, two streams per connection: 3 connections (the last with one
        // client), each connection's clients on one thread.
        assert_eq!((s.threads(8, 2), s.threads(2, 2)), (3, 2));
        assert_eq!((s.clients_of(0, 2, 2), s.clients_of(1, 2, 2)), (vec![0, 1, 4], vec![2, 3]));
        assert_eq!(s.pause_after_reply(), Duration::from_millis(250));
        assert!(s.arrivals_of(0, 2).is_none() && s.offered_rate_per_s().is_none());
    }

    #[test]
    fn an_open_loop_splits_its_rate_over_the_threads_and_interleaves_their_arrivals() {
        let open = OpenLoopPlan { rate_per_s: 1000.0, arrival: Arrival::Constant, max_in_flight: 6, latency_budget_s: 0.5 };
        let plan = StepPlan { concurrency: 1, warmup_s: 0.0, window_s: 1.0, pause_s: 0.0, think_time_s: 0.0, open_loop: Some(open) };
        let s = Schedule::from_plan(&plan);
        assert_eq!((s.clients(), s.threads(8, 1), s.offered_rate_per_s()), (6, 6, Some(1000.0)));
        assert_eq!(s.latency_budget(), Duration::from_millis(500));
        let ms = |t| -> Vec<f64> { s.arrivals_of(t, 2).unwrap().take(3).map(|d| (d.as_secs_f64() * 1e4).round() / 10.0).collect() };
        assert_eq!((ms(0), ms(1)), (vec![0.0, 2.0, 4.0], vec![1.0, 3.0, 5.0]));
        // Poisson: exponential gaps whose mean is the rate's, different per thread.
        let poisson =
            Schedule::OpenLoop { rate_per_s: 1000.0, arrival: Arrival::Poisson, max_in_flight: 6, latency_budget: Duration::ZERO };
        let last = poisson.arrivals_of(0, 1).unwrap().nth(99_999).unwrap().as_secs_f64();
        assert!((last - 100.0).abs() < 1.5, "100,000 arrivals at 1000/s take about 100 s, not {last}");
        let (a, b) = (poisson.arrivals_of(0, 2).unwrap().next(), poisson.arrivals_of(1, 2).unwrap().next());
        assert_ne!(a, b);
    }
}
