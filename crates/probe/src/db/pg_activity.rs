//! PostgreSQL `pg_stat_activity` rows aggregated into a wait-event profile:
//! what active backends were waiting on, sampled many times per step.

use serde::{Deserialize, Serialize};

/// The query the sampler should run: its own backend left out, so the
/// sampling session does not count as an active backend on CPU.
pub const PG_ACTIVITY_QUERY: &str = "SELECT backend_type, state, wait_event_type, wait_event \
     FROM pg_stat_activity WHERE pid <> pg_backend_pid()";

/// The name used for "active with no wait event": running on a CPU (or
/// waiting for one, which PostgreSQL cannot tell apart).
pub const CPU: &str = "CPU";

/// One row of `pg_stat_activity` (SQL NULL is `None`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ActivityRow<'a> {
    /// `client backend`, `autovacuum worker`, ...; `None` before PostgreSQL 10.
    pub backend_type: Option<&'a str>,
    pub state: Option<&'a str>,
    pub wait_event_type: Option<&'a str>,
    pub wait_event: Option<&'a str>,
}

impl ActivityRow<'_> {
    /// A client backend executing a statement.
    fn is_active_client(&self) -> bool {
        let client = !matches!(self.backend_type, Some(t) if t != "client backend");
        client && self.state == Some("active")
    }
}

/// Samples of one wait event (or CPU).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WaitShare {
    /// `Lock`, `LWLock`, `IO`, `Client`, ... or [`CPU`].
    pub wait_event_type: String,
    /// `transactionid`, `WALWrite`, ...; `None` for CPU.
    pub wait_event: Option<String>,
    /// Active-backend samples in this state.
    pub samples: u64,
    /// Share of all active-backend samples, percent.
    pub pct: f64,
}

/// Accumulates polls of `pg_stat_activity` (10 Hz or more) over a step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WaitProfile {
    polls: u64,
    active: u64,
    events: Vec<(String, Option<String>, u64)>,
}

impl WaitProfile {
    /// Adds one poll: all rows returned by one run of the query.
    pub fn add_poll<'a>(&mut self, rows: impl IntoIterator<Item = ActivityRow<'a>>) {
        self.polls += 1;
        for row in rows.into_iter().filter(ActivityRow::is_active_client) {
            self.active += 1;
            let (ty, ev) = match row.wait_event_type {
                Some(t) if !t.is_empty() => (t, row.wait_event),
                _ => (CPU, None),
            };
            match self.events.iter_mut().find(|(t, e, _)| t == ty && e.as_deref() == ev) {
                Some((_, _, n)) => *n += 1,
                None => self.events.push((ty.to_string(), ev.map(str::to_string), 1)),
            }
        }
    }

    /// Polls added.
    pub fn polls(&self) -> u64 {
        self.polls
    }

    /// Mean number of active client backends per poll.
    pub fn mean_active(&self) -> Option<f64> {
        (self.polls > 0).then(|| self.active as f64 / self.polls as f64)
    }

    /// Share per (type, event), largest first; empty if nothing was active.
    pub fn shares(&self) -> Vec<WaitShare> {
        let mut v: Vec<WaitShare> = self
            .events
            .iter()
            .map(|(t, e, n)| WaitShare {
                wait_event_type: t.clone(),
                wait_event: e.clone(),
                samples: *n,
                pct: *n as f64 * 100.0 / self.active as f64,
            })
            .collect();
        v.sort_by(|a, b| b.samples.cmp(&a.samples).then_with(|| a.wait_event_type.cmp(&b.wait_event_type)));
        v
    }

    /// Share per wait-event type (CPU included), largest first.
    pub fn shares_by_type(&self) -> Vec<(String, f64)> {
        let mut v: Vec<(String, u64)> = Vec::new();
        for (t, _, n) in &self.events {
            match v.iter_mut().find(|(x, _)| x == t) {
                Some((_, m)) => *m += n,
                None => v.push((t.clone(), *n)),
            }
        }
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v.into_iter().map(|(t, n)| (t, n as f64 * 100.0 / self.active as f64)).collect()
    }

    /// Adds another profile (e.g. several pollers, or seconds into a step).
    pub fn merge(&mut self, other: &WaitProfile) {
        self.polls += other.polls;
        self.active += other.active;
        for (t, e, n) in &other.events {
            match self.events.iter_mut().find(|(x, y, _)| x == t && y == e) {
                Some((_, _, m)) => *m += n,
                None => self.events.push((t.clone(), e.clone(), *n)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row<'a>(state: &'a str, ty: &'a str, ev: &'a str) -> ActivityRow<'a> {
        let opt = |s: &'a str| (!s.is_empty()).then_some(s);
        ActivityRow { backend_type: Some("client backend"), state: opt(state), wait_event_type: opt(ty), wait_event: opt(ev) }
    }

    #[test]
    fn profile() {
        let mut p = WaitProfile::default();
        p.add_poll([row("active", "Lock", "transactionid"), row("active", "", ""), row("idle", "Client", "ClientRead")]);
        p.add_poll([
            row("active", "Lock", "transactionid"),
            row("active", "Lock", "tuple"),
            ActivityRow { backend_type: Some("checkpointer"), wait_event_type: Some("Activity"), ..Default::default() },
        ]);
        assert_eq!(p.mean_active(), Some(2.0));
        let s = p.shares();
        assert_eq!((s[0].wait_event_type.as_str(), s[0].wait_event.as_deref(), s[0].pct), ("Lock", Some("transactionid"), 50.0));
        assert_eq!(p.shares_by_type()[0], ("Lock".to_string(), 75.0));
        assert!(s.iter().any(|w| w.wait_event_type == CPU && w.pct == 25.0));
        let mut q = WaitProfile::default();
        q.merge(&p);
        q.merge(&p);
        assert_eq!(q.polls(), 4);
        assert_eq!(q.shares_by_type(), p.shares_by_type());
    }

    #[test]
    fn nothing_active_is_empty_not_zero() {
        let mut p = WaitProfile::default();
        assert_eq!(p.mean_active(), None);
        p.add_poll([row("idle", "Client", "ClientRead")]);
        assert_eq!(p.mean_active(), Some(0.0));
        assert!(p.shares().is_empty());
    }
}
