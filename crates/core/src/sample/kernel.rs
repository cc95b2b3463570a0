//! Machine-wide readings out of `/proc` files: CPU ticks, load, pressure,
//! memory, softirqs and interrupts, disks, network interfaces. Raw counters
//! as the kernel gives them; the readers live in `probe`, rates in `analyze`.

use serde::{Deserialize, Serialize};

/// CPU time by kind, in `USER_HZ` ticks since boot (raw counters; see
/// `analyze`'s rates for percentages). `user`/`nice` include guest time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTicks {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTicks {
    /// Sum of all kinds: the time base of percentages.
    pub fn total(&self) -> u64 {
        self.user + self.nice + self.system + self.idle + self.iowait + self.irq + self.softirq + self.steal
    }
}

/// One CPU's line of `/proc/stat` (offline CPUs have none, hence the id).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PerCpuTicks {
    pub cpu: u32,
    pub ticks: CpuTicks,
}

/// What `/proc/stat` says. Counters are since boot.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuStat {
    /// All CPUs together (`cpu` line).
    pub total: Option<CpuTicks>,
    pub per_cpu: Vec<PerCpuTicks>,
    /// Context switches since boot (`ctxt`).
    pub ctxt: Option<u64>,
    /// Interrupts serviced since boot (`intr`, first number).
    pub intr: Option<u64>,
    /// Forks since boot (`processes`).
    pub forks: Option<u64>,
    /// Tasks running or runnable now (`procs_running`), a gauge.
    pub procs_running: Option<u64>,
    /// Tasks blocked on I/O now (`procs_blocked`), a gauge.
    pub procs_blocked: Option<u64>,
}

impl CpuStat {
    /// Names of the fields that were not found, for the "unavailable" note.
    pub fn missing(&self) -> Vec<&'static str> {
        let mut m = Vec::new();
        let checks = [
            (self.total.is_none(), "cpu"),
            (self.ctxt.is_none(), "ctxt"),
            (self.intr.is_none(), "intr"),
            (self.forks.is_none(), "processes"),
            (self.procs_running.is_none(), "procs_running"),
            (self.procs_blocked.is_none(), "procs_blocked"),
        ];
        for (none, name) in checks {
            if none {
                m.push(name);
            }
        }
        m
    }
}

/// `/proc/loadavg`: run-queue averages and task counts.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadAvg {
    pub load1: f64,
    pub load5: f64,
    pub load15: f64,
    /// Tasks runnable now.
    pub runnable: u32,
    /// Tasks that exist now.
    pub tasks: u32,
}

/// One PSI line: share of wall time some (or all) non-idle tasks were stalled.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PsiLine {
    /// Kernel's own running averages, percent.
    pub avg10: f64,
    pub avg60: f64,
    pub avg300: f64,
    /// Total stall time since boot, microseconds (the raw counter rates use).
    pub total_us: u64,
}

/// PSI of one resource.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Psi {
    pub some: PsiLine,
    /// Absent for CPU before Linux 5.13.
    pub full: Option<PsiLine>,
}

/// PSI of the three resources; each `None` when unavailable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Pressure {
    pub cpu: Option<Psi>,
    pub io: Option<Psi>,
    pub memory: Option<Psi>,
}

/// Memory figures in KiB (gauges, not counters). Each is `None` when its
/// `/proc/meminfo` line is missing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memory {
    pub total_kib: Option<u64>,
    pub free_kib: Option<u64>,
    pub available_kib: Option<u64>,
    pub buffers_kib: Option<u64>,
    /// Page cache (`Cached`).
    pub cached_kib: Option<u64>,
    /// Waiting to be written back (`Dirty`): a disk-bound server shows it pile up.
    pub dirty_kib: Option<u64>,
    pub writeback_kib: Option<u64>,
    pub swap_total_kib: Option<u64>,
    pub swap_free_kib: Option<u64>,
}

impl Memory {
    /// Used memory as `free` reports it today: total minus available.
    pub fn used_kib(&self) -> Option<u64> {
        self.total_kib?.checked_sub(self.available_kib?)
    }

    /// Swap in use.
    pub fn swap_used_kib(&self) -> Option<u64> {
        self.swap_total_kib?.checked_sub(self.swap_free_kib?)
    }

    /// Names of the fields that were not found.
    pub fn missing(&self) -> Vec<&'static str> {
        [
            (self.total_kib, "MemTotal"),
            (self.free_kib, "MemFree"),
            (self.available_kib, "MemAvailable"),
            (self.buffers_kib, "Buffers"),
            (self.cached_kib, "Cached"),
            (self.dirty_kib, "Dirty"),
            (self.writeback_kib, "Writeback"),
            (self.swap_total_kib, "SwapTotal"),
            (self.swap_free_kib, "SwapFree"),
        ]
        .into_iter()
        .filter_map(|(v, name)| v.is_none().then_some(name))
        .collect()
    }
}

/// Softirq counters since boot, one value per CPU column (see `cpus`).
/// A row that is missing or cut is `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Softirqs {
    /// CPU ids of the columns, from the header (`CPU0 CPU1 ...`).
    pub cpus: Vec<u32>,
    pub net_rx: Option<Vec<u64>>,
    pub net_tx: Option<Vec<u64>>,
    pub timer: Option<Vec<u64>>,
    pub sched: Option<Vec<u64>>,
    pub block: Option<Vec<u64>>,
}

/// Interrupt counters since boot summed per CPU column.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interrupts {
    /// CPU ids of the columns.
    pub cpus: Vec<u32>,
    /// Every row with per-CPU counts (device IRQs, timer, IPIs, ...).
    pub total_per_cpu: Vec<u64>,
    /// Numbered (device) IRQ rows only: where NIC and disk interrupts land.
    pub device_per_cpu: Vec<u64>,
}

/// One device's counters since boot (see the kernel's
/// Documentation/admin-guide/iostats.rst).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskStat {
    pub name: String,
    pub reads_completed: u64,
    pub reads_merged: u64,
    /// 512-byte sectors, whatever the device's block size.
    pub sectors_read: u64,
    pub read_time_ms: u64,
    pub writes_completed: u64,
    pub writes_merged: u64,
    pub sectors_written: u64,
    pub write_time_ms: u64,
    /// I/Os in flight now (a gauge).
    pub in_flight: u64,
    /// Time the device had I/O in flight: utilisation comes from its rate.
    pub io_ticks_ms: u64,
    /// Weighted time in queue.
    pub time_in_queue_ms: u64,
}

/// One interface's counters since it came up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetDev {
    pub name: String,
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub rx_errors: u64,
    pub rx_drops: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errors: u64,
    pub tx_drops: u64,
}
