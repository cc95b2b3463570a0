//! The preflight: what skews a benchmark, checked before any load. `probe`
//! reads the [`PreflightFacts`] (each a [`Reading`]: a value, or why it
//! could not be read), `analyze` judges them against the [`PreflightPlan`]
//! into [`Check`]s, which are recorded with the run (in its `Environment`)
//! and shown by `report`. docs/preflight.md lists every check.

use crate::target::Target;
use serde::{Deserialize, Serialize};

/// A reading, or why it is unavailable (the reason is shown as is).
pub type Reading<T> = Result<T, String>;

/// The outcome of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    Ok,
    Warn,
    Unavailable,
}

impl CheckStatus {
    pub fn name(self) -> &'static str {
        match self {
            CheckStatus::Ok => "ok",
            CheckStatus::Warn => "warn",
            CheckStatus::Unavailable => "unavailable",
        }
    }
}

/// One judged check: a stable id (`cpu.governor`), its status, the measured
/// figure (or, when unavailable, why), why it matters and the fix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub id: String,
    pub status: CheckStatus,
    pub figure: String,
    pub why: String,
    pub fix: String,
}

/// The planned run the facts are judged against.
#[derive(Clone, Debug)]
pub struct PreflightPlan {
    pub target: Target,
    /// The most clients of any step (each holds a connection); in an open
    /// loop, the in-flight cap (the connections a step opens).
    pub max_concurrency: u32,
    /// Open loop: `max_concurrency` counts connections, not clients.
    pub open_loop: bool,
    /// HTTP keep-alive (false: a new connection per request).
    pub keepalive: bool,
    /// CPUs the client threads run on (empty: not known, all of them).
    pub client_cpus: Vec<usize>,
    /// The client threads are pinned, one per CPU of `client_cpus`.
    pub client_pinned: bool,
    /// The emulated client network the load goes through (`--client-net`), as given.
    pub client_net: Option<String>,
    /// `--busy-poll`: the client threads hold their CPUs while they wait.
    pub busy_poll: bool,
}

impl PreflightPlan {
    /// `2,000 connections (the open loop's in-flight cap)` or `50 clients`:
    /// what `max_concurrency` counts, for the checks' figures.
    pub fn connections_text(&self) -> String {
        let n = crate::thousands(f64::from(self.max_concurrency));
        if self.open_loop {
            format!("{n} connections (the open loop's in-flight cap)")
        } else {
            format!("{n} clients")
        }
    }
}

/// The interface the route to the target leaves by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub interface: String,
    pub mtu: u32,
}

/// A NIC's queues and where its interrupts landed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nic {
    pub interface: String,
    pub rx_queues: u32,
    pub tx_queues: u32,
    /// The NIC's interrupts since boot, per CPU column of `/proc/interrupts`.
    pub irqs_per_cpu: Vec<u64>,
    /// Some `rx-N/rps_cpus` mask is not zero.
    pub rps: bool,
    /// Some `tx-N/xps_cpus` mask is not zero.
    pub xps: bool,
}

/// A pre-forking web server's processes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workers {
    /// The master's program name (`nginx`, `apache2`, `httpd`).
    pub server: String,
    /// Worker processes (the master's children).
    pub workers: u32,
    /// Threads of those workers together: Apache serves a connection per
    /// thread (worker, event MPMs) or per process (prefork).
    pub threads: u32,
}

/// Database settings that change what a benchmark measures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DbSettings {
    Postgres {
        fsync: Option<bool>,
        synchronous_commit: Option<String>,
        shared_buffers_bytes: Option<u64>,
        /// `pg_database_size` of the target database.
        database_bytes: Option<u64>,
    },
    Mysql {
        flush_log_at_trx_commit: Option<u32>,
        buffer_pool_bytes: Option<u64>,
        /// InnoDB data and indexes of the target database.
        innodb_bytes: Option<u64>,
        /// `query_cache_type` and `query_cache_size`; `None`: no query cache (MySQL 8).
        query_cache: Option<(String, u64)>,
        /// `skip_external_locking` is OFF.
        external_locking: Option<bool>,
    },
}

/// The machine's run-to-run noise, measured just before the load: the same
/// fixed CPU loop timed again and again on the calling thread (whatever
/// else runs, preempts or steals its CPU shows as spread), and the steal
/// over those repeats. Raw times, so the judgement derives its figures.
#[derive(Clone, Debug, PartialEq)]
pub struct NoiseSample {
    /// Wall time of each repeat of the loop, microseconds, in order.
    pub loop_us: Vec<f64>,
    /// Steal ticks and all ticks (every CPU, `/proc/stat`) elapsed over the
    /// repeats: ticks are 10 ms per CPU, so over ~0.2 s the share is coarse.
    pub steal_ticks: Reading<(u64, u64)>,
}

/// Everything the preflight reads; each field is a value or why not.
#[derive(Clone, Debug)]
pub struct PreflightFacts {
    pub logical_cpus: Reading<u32>,
    /// `scaling_governor` of each CPU that has cpufreq.
    pub governors: Reading<Vec<String>>,
    /// Turbo / boost on.
    pub boost: Reading<bool>,
    /// SMT active.
    pub smt: Reading<bool>,
    /// Transparent huge pages: the selected mode (`always`, `madvise`, `never`).
    pub thp: Reading<String>,
    /// Swap in use and in all, KiB.
    pub swap_kib: Reading<(u64, u64)>,
    /// Steal ticks and all ticks since boot.
    pub steal_ticks: Reading<(u64, u64)>,
    /// 1-minute load average.
    pub load1: Reading<f64>,
    /// CPU pressure, `some avg10` (%).
    pub cpu_pressure: Reading<f64>,
    /// CPUs the server process may run on.
    pub server_cpus: Reading<Vec<u32>>,
    /// Soft open-file limit of the client (this process).
    pub client_nofile: Reading<u64>,
    /// Soft open-file limit of the server process.
    pub server_nofile: Reading<u64>,
    pub somaxconn: Reading<u64>,
    /// The server's listening socket's backlog (what `ss -lnt` shows as Send-Q).
    pub listen_backlog: Reading<u64>,
    pub port_range: Reading<(u16, u16)>,
    pub tcp_tw_reuse: Reading<u8>,
    /// Conntrack table count and max; `None`: conntrack not loaded.
    pub conntrack: Reading<Option<(u64, u64)>>,
    pub route: Reading<Route>,
    pub nic: Reading<Nic>,
    pub workers: Reading<Workers>,
    /// Only for database targets.
    pub db: Reading<DbSettings>,
    /// What the target says it is (HTTP `Server` header, SQL version).
    pub server_version: Reading<String>,
    /// The CPU loop and steal measured just before the load (`machine.noise`).
    pub noise: Reading<NoiseSample>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_open_loop_plan_counts_connections_not_clients() {
        let mut plan = PreflightPlan {
            target: Target::parse("http://127.0.0.1:8080/").unwrap(),
            max_concurrency: 2000,
            open_loop: true,
            keepalive: true,
            client_cpus: vec![],
            client_pinned: false,
            client_net: None,
            busy_poll: false,
        };
        assert_eq!(plan.connections_text(), "2,000 connections (the open loop's in-flight cap)");
        plan.open_loop = false;
        plan.max_concurrency = 50;
        assert_eq!(plan.connections_text(), "50 clients");
    }
}
