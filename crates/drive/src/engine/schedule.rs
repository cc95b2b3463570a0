//! How a step offers its load: which clients exist, which worker thread
//! runs each, and when a client sends its next request.
//!
//! Today one schedule exists, the closed loop; an open-loop schedule (a
//! rate of arrivals) is another variant here, read by the same runner.

use scalelab_core::StepPlan;
use std::time::Duration;

/// The load a step offers.
#[derive(Clone, Debug, PartialEq)]
pub enum Schedule {
    /// `concurrency` virtual clients, each with exactly one request in
    /// flight: a client sends its next request when the reply to the last
    /// one has arrived, after `think` (zero: at once).
    ClosedLoop { concurrency: u32, think: Duration },
}

impl Schedule {
    /// The schedule a step's plan asks for.
    pub fn from_plan(plan: &StepPlan) -> Schedule {
        Schedule::ClosedLoop { concurrency: plan.concurrency, think: Duration::from_secs_f64(plan.think_time_s) }
    }

    /// How many virtual clients (connections) the step opens.
    pub fn clients(&self) -> u32 {
        match self {
            Schedule::ClosedLoop { concurrency, .. } => *concurrency,
        }
    }

    /// Worker threads to run: the threads asked for, at least one and no
    /// more than there are clients.
    pub fn threads(&self, asked: u32) -> u32 {
        asked.clamp(1, self.clients().max(1))
    }

    /// The ids of the clients that worker `thread` of `threads` runs:
    /// round-robin, client c on thread c % threads.
    pub fn clients_of(&self, thread: u32, threads: u32) -> Vec<u32> {
        (0..self.clients()).filter(|c| c % threads == thread).collect()
    }

    /// How long a client waits after a successful request before sending
    /// the next one.
    pub(super) fn pause_after_reply(&self) -> Duration {
        match self {
            Schedule::ClosedLoop { think, .. } => *think,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_loop_spreads_its_clients_round_robin_over_at_most_one_thread_each() {
        let plan = StepPlan { concurrency: 5, warmup_s: 0.0, window_s: 1.0, pause_s: 0.0, think_time_s: 0.25 };
        let s = Schedule::from_plan(&plan);
        assert_eq!(s, Schedule::ClosedLoop { concurrency: 5, think: Duration::from_millis(250) });
        assert_eq!((s.threads(2), s.threads(8), s.threads(0)), (2, 5, 1));
        assert_eq!((s.clients_of(0, 2), s.clients_of(1, 2)), (vec![0, 2, 4], vec![1, 3]));
        assert_eq!(s.pause_after_reply(), Duration::from_millis(250));
    }
}
