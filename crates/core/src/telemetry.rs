//! What the machine and the server did during one step's window, derived
//! from the raw per-second samples at analysis time. Every figure is an
//! `Option`: `None` means not measured (the reason is in `unavailable`),
//! never zero.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Share of the server's thread-time in each state over the window, in %.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadStatesPct {
    pub running: f64,
    pub runnable: f64,
    pub futex: f64,
    pub io: f64,
    pub idle: f64,
    pub other: f64,
}

/// A server thread and how much of one core it used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HotThread {
    pub tid: u32,
    pub name: String,
    /// CPU time over wall time, in % of one core.
    pub cpu_pct: f64,
}

/// The CPU that spent the largest share of its time in softirqs, and how
/// much of the machine's network receive processing it did: a NIC whose
/// interrupts all land on one CPU caps throughput while the others idle.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoftirqCpu {
    pub cpu: u32,
    /// That CPU's time in softirq, in % of one CPU.
    pub softirq_pct: f64,
    /// Mean softirq time of the other CPUs, in % of one CPU.
    pub others_softirq_pct: f64,
    /// That CPU's share of all NET_RX softirqs, in %.
    pub net_rx_share_pct: Option<f64>,
    /// All CPUs: NET_RX softirqs per second.
    pub net_rx_per_s: Option<f64>,
}

/// The built-in specimen's own account of a step (its `/__stats` counters).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpecimenTelemetry {
    /// Requests it answered per second.
    pub requests_per_s: f64,
    /// Requests per second that found its lock held and waited.
    pub lock_waits_per_s: f64,
    /// Share of requests that waited for the lock, %.
    pub lock_wait_share_pct: Option<f64>,
    /// Spin rounds per request (`spin` mode).
    pub spin_rounds_per_request: Option<f64>,
    /// fdatasync calls per second (`disk` mode).
    pub fsyncs_per_s: f64,
}

/// The telemetry of one step's window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepTelemetry {
    /// Per-second samples that fell inside the window.
    pub samples: u32,
    /// All CPUs: everything but idle and iowait, in % of all cores.
    pub cpu_busy_pct: Option<f64>,
    pub cpu_user_pct: Option<f64>,
    pub cpu_sys_pct: Option<f64>,
    pub cpu_iowait_pct: Option<f64>,
    pub cpu_softirq_pct: Option<f64>,
    /// The CPU busiest with softirqs (machines with more than one CPU).
    #[serde(default)]
    pub softirq_busiest_cpu: Option<SoftirqCpu>,
    /// Machine-wide context switches per second.
    pub cs_per_s: Option<f64>,
    /// The server process: CPU in % of one core, and its context switches.
    pub server_cpu_pct: Option<f64>,
    pub server_cs_per_s: Option<f64>,
    /// Server context switches (voluntary + involuntary) per completed request.
    pub cs_per_request: Option<f64>,
    pub thread_states_pct: Option<ThreadStatesPct>,
    /// The server threads that used the most CPU.
    pub hottest_threads: Vec<HotThread>,
    /// Sockets in TIME_WAIT at the end of the window.
    pub tcp_time_wait: Option<u64>,
    pub listen_overflows_per_s: Option<f64>,
    pub listen_drops_per_s: Option<f64>,
    pub retrans_per_s: Option<f64>,
    /// All disks: read + write operations per second.
    pub disk_iops: Option<f64>,
    /// All interfaces: received + sent, MB/s.
    pub net_mb_per_s: Option<f64>,
    /// The specimen's own counters, when the target is the specimen.
    #[serde(default)]
    pub specimen: Option<SpecimenTelemetry>,
    /// Why a figure is missing: figure name → reason.
    pub unavailable: BTreeMap<String, String>,
}
