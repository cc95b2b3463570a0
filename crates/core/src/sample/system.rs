//! The system sample (every machine-wide probe at once), its timestamp,
//! power readings and "unavailable: why" notes.

use super::kernel::{CpuStat, DiskStat, Interrupts, LoadAvg, Memory, NetDev, Pressure, Softirqs};
use super::net::{FileHandles, PortUsage, SockStat, TcpMemLimits, TcpMib, TcpStates};
use crate::Source;
use serde::{Deserialize, Serialize};

/// When a sample was taken. Rates use the monotonic clock (immune to NTP
/// steps); the wall clock aligns samples with steps, logs and other machines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timestamp {
    /// `CLOCK_MONOTONIC` in nanoseconds.
    pub monotonic_ns: u64,
    /// Wall clock, Unix milliseconds.
    pub unix_ms: i64,
}

impl Timestamp {
    /// Seconds from `earlier` to `self` on the monotonic clock; `None` if not
    /// strictly later (two samples at the same instant give no rate).
    pub fn seconds_since(&self, earlier: &Timestamp) -> Option<f64> {
        let ns = self.monotonic_ns.checked_sub(earlier.monotonic_ns)?;
        (ns > 0).then(|| ns as f64 / 1e9)
    }
}

/// A source that could not be read, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unavailable {
    pub source: Source,
    /// Human-readable cause, naming the path: "cannot read /proc/pressure/cpu: ...".
    pub why: String,
}

/// One power reading.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PowerReading {
    /// A RAPL zone's energy counter (wraps at `max_energy_range_uj`).
    Energy {
        /// Zone directory, e.g. `intel-rapl:0` or `intel-rapl:0:1`.
        zone: String,
        /// Zone name, e.g. `package-0`, `core`, `dram`, `psys`.
        name: String,
        /// Top-level zone (a package or platform): summing these gives the
        /// machine's figure; sub-zones are parts of their package.
        top_level: bool,
        energy_uj: u64,
        max_energy_range_uj: Option<u64>,
    },
    /// An hwmon sensor's instantaneous or averaged power.
    Power {
        /// `hwmonN/powerM_input` with the chip name, e.g. `hwmon2/power1_input (amdgpu)`.
        sensor: String,
        microwatts: u64,
    },
}

/// One reading of every machine-wide probe. Counters are raw (since boot);
/// `analyze`'s `system_rates` turns two samples into rates. A `None`
/// field could not be read; why is in `newly_unavailable` the first time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemSample {
    pub at: Timestamp,
    /// Unit of the CPU tick counters (`USER_HZ`).
    pub user_hz: u32,
    pub cpu: Option<CpuStat>,
    pub load: Option<LoadAvg>,
    pub pressure: Pressure,
    pub memory: Option<Memory>,
    pub softirqs: Option<Softirqs>,
    pub interrupts: Option<Interrupts>,
    /// Whole disks (partitions, loop and RAM disks left out).
    pub disks: Option<Vec<DiskStat>>,
    pub net: Option<Vec<NetDev>>,
    pub tcp: Option<TcpMib>,
    /// Sockets by state. `None` when unreadable, or when the scan was
    /// skipped to stay within its CPU budget (see `socket_scan_skipped`).
    pub tcp_states: Option<TcpStates>,
    pub ports: Option<PortUsage>,
    /// Sockets in TIME_WAIT whose far end is one of the targets
    /// (`probe`'s `SystemSampler::set_targets`): the ones that pin this run's
    /// ephemeral ports. `None` when no target is set or the scan did not run.
    #[serde(default)]
    pub time_wait_to_target: Option<u32>,
    /// The target's own listening sockets (those the load goes to): their
    /// accept queues. `None` when no target is set or netlink is not
    /// available (a captured tree).
    #[serde(default)]
    pub target_listen: Option<Vec<super::net::ListenQueue>>,
    /// The socket scan was skipped this sample: the last one was costly
    /// (very many sockets), so it runs less often; not an error.
    pub socket_scan_skipped: bool,
    pub sockstat: Option<SockStat>,
    pub tcp_mem: Option<TcpMemLimits>,
    pub files: Option<FileHandles>,
    pub power: Option<Vec<PowerReading>>,
    /// Sources that became unavailable (or changed reason) at this sample.
    pub newly_unavailable: Vec<Unavailable>,
}

impl SystemSample {
    /// TCP socket memory as percent of `tcp_mem`'s hard limit (`max`).
    pub fn tcp_mem_used_pct(&self) -> Option<f64> {
        let used = self.sockstat?.tcp_mem_pages?;
        let max = self.tcp_mem?.max_pages;
        (max > 0).then(|| used as f64 * 100.0 / max as f64)
    }

    /// Open file handles as percent of `fs.file-max`.
    pub fn file_handles_used_pct(&self) -> Option<f64> {
        let f = self.files?;
        (f.max > 0).then(|| f.allocated as f64 * 100.0 / f.max as f64)
    }

    /// Ephemeral ports in use as percent of the range.
    pub fn ports_used_pct(&self) -> Option<f64> {
        let p = self.ports?;
        (p.range_size() > 0).then(|| p.ports_in_use as f64 * 100.0 / p.range_size() as f64)
    }
}
