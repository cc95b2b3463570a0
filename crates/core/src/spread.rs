//! [`ClientSpread`]: how a step's completions spread over its clients,
//! kept as sums so that the spreads of threads and agents merge exactly.

use serde::{Deserialize, Serialize};

/// How a step's completions spread over its clients: a server that serves
/// only some of them (a worker pool smaller than the clients, a listen
/// queue holding the rest) can show a clean throughput and latency from
/// the served half; this says how many got nothing. Sums, not averages,
/// so that spreads of several threads or agents merge exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientSpread {
    /// Clients (connections) counted.
    pub clients: u32,
    /// Clients that completed nothing in the window.
    pub served_nothing: u32,
    /// The fewest and the most completions of one client.
    pub min: u64,
    pub max: u64,
    /// Sum of the completions and of their squares (for Jain's index).
    pub sum: u64,
    pub sum_sq: f64,
    /// Requests still waiting for their response when the window ended
    /// (whatever their age), and how long the oldest of them had waited, ms.
    pub outstanding_at_end: u32,
    pub oldest_outstanding_ms: Option<f64>,
}

impl ClientSpread {
    /// The spread of per-client completion counts `counts`, with the ages
    /// of the requests out at the window's end.
    pub fn of(counts: &[u64], outstanding_ms: &[f64]) -> ClientSpread {
        ClientSpread {
            clients: counts.len() as u32,
            served_nothing: counts.iter().filter(|n| **n == 0).count() as u32,
            min: counts.iter().copied().min().unwrap_or(0),
            max: counts.iter().copied().max().unwrap_or(0),
            sum: counts.iter().sum(),
            sum_sq: counts.iter().map(|n| (*n as f64).powi(2)).sum(),
            outstanding_at_end: outstanding_ms.len() as u32,
            oldest_outstanding_ms: outstanding_ms.iter().copied().reduce(f64::max),
        }
    }

    /// Adds another thread's (or agent's) clients.
    pub fn merge(&mut self, o: &ClientSpread) {
        if o.clients == 0 {
            return;
        }
        if self.clients == 0 {
            *self = *o;
            return;
        }
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.clients += o.clients;
        self.served_nothing += o.served_nothing;
        self.sum += o.sum;
        self.sum_sq += o.sum_sq;
        self.outstanding_at_end += o.outstanding_at_end;
        self.oldest_outstanding_ms = match (self.oldest_outstanding_ms, o.oldest_outstanding_ms) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }

    /// Jain's fairness index of the completions, 1/n (one client served
    /// everything) to 1 (all alike); None when nothing completed.
    pub fn jain(&self) -> Option<f64> {
        (self.clients > 0 && self.sum_sq > 0.0).then(|| (self.sum as f64).powi(2) / (f64::from(self.clients) * self.sum_sq))
    }
}

#[cfg(test)]
mod tests {
    use super::ClientSpread;

    #[test]
    fn a_spread_counts_the_clients_served_nothing_and_merges_exactly() {
        let a = ClientSpread::of(&[10, 0, 10, 0], &[1500.0, 1400.0]);
        assert_eq!((a.clients, a.served_nothing, a.min, a.max, a.outstanding_at_end), (4, 2, 0, 10, 2));
        // Half the clients served everything: Jain's index is 0.5.
        assert!((a.jain().unwrap() - 0.5).abs() < 1e-9);
        let mut m = ClientSpread::of(&[10, 10], &[]);
        assert_eq!(m.jain(), Some(1.0));
        m.merge(&ClientSpread::of(&[0, 0], &[900.0, 2000.0]));
        assert_eq!(m, ClientSpread::of(&[10, 10, 0, 0], &[900.0, 2000.0]));
        assert_eq!(m.oldest_outstanding_ms, Some(2000.0));
        assert_eq!(ClientSpread::of(&[0, 0], &[]).jain(), None);
    }
}
