//! [`Source`]: one telemetry source, the unit at which "unavailable: why" is
//! reported. It lives in `core` (not `probe`) because the probes report it,
//! the binary stores it, and `report`/`analyze` look figures' reasons up by
//! its key, and only `core` is below all of them.
//!
//! Two stable spellings, both pinned by a test:
//! - [`Source::name`]: as stored in a run's `probe_notes` rows (`PressureCpu`,
//!   `Db_semaphores`): stores written by earlier versions hold these.
//! - [`Source::key`]: the key under a step's or timeline's `unavailable` map
//!   (`pressurecpu`, `db_semaphores`): the name lowercased, as JSON output has it.

use serde::{Deserialize, Serialize};

/// One telemetry source, the unit at which unavailability is reported.
///
/// The serde form (snake_case) is the one inside stored samples' own
/// `newly_unavailable` lists; it is not [`Source::name`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `/proc/stat`: CPU ticks, context switches, interrupts, forks, tasks.
    Stat,
    /// `/proc/loadavg`.
    Loadavg,
    /// `/proc/pressure/cpu`.
    PressureCpu,
    /// `/proc/pressure/io`.
    PressureIo,
    /// `/proc/pressure/memory`.
    PressureMemory,
    /// `/proc/meminfo`.
    Meminfo,
    /// `/proc/softirqs`.
    Softirqs,
    /// `/proc/interrupts`.
    Interrupts,
    /// `/proc/diskstats`.
    Diskstats,
    /// `/proc/net/dev`.
    NetDev,
    /// `/proc/net/snmp` and `/proc/net/netstat` (TCP MIB counters).
    TcpMib,
    /// `/proc/net/tcp` and `/proc/net/tcp6` (sockets by state, ports in use).
    TcpSockets,
    /// `/proc/net/sockstat`.
    Sockstat,
    /// `net.ipv4.tcp_mem`.
    TcpMem,
    /// `net.ipv4.ip_local_port_range`.
    PortRange,
    /// `fs.file-nr`.
    FileHandles,
    /// RAPL powercap zones and hwmon power sensors.
    Power,
    /// `/proc/PID/{stat,status}` of the server process (or: no server process found).
    Process,
    /// `/proc/PID/io` (needs ptrace-level access to another user's process).
    ProcessIo,
    /// `/proc/PID/fd` (open descriptor count).
    ProcessFds,
    /// Per-thread context switches summed from `/proc/PID/task/*/status`.
    ProcessCtxSwitches,
    /// Per-thread `stat`/`schedstat` of the thread-state sampler.
    Threads,
    /// Per-thread `syscall`/`wchan`: why a sleeping thread sleeps.
    ThreadWaitReason,
    /// `schedstat` run delay: running vs waiting for a CPU.
    ThreadRunDelay,
    /// The specimen's own `/__stats` counters.
    Specimen,
    /// The database probe's connection.
    Db,
    /// MySQL/MariaDB: the SEMAPHORES section of `SHOW ENGINE INNODB STATUS`.
    DbSemaphores,
    /// MySQL/MariaDB: `performance_schema` wait summaries.
    DbPerfSchema,
    /// MySQL/MariaDB: wait instruments that are not enabled or not timed.
    DbPerfSchemaInstruments,
    /// PostgreSQL: `pg_stat_database`.
    DbStats,
    /// PostgreSQL: checkpoint counters.
    DbCheckpoints,
    /// `--profile`: on-CPU stacks (`perf record -e cpu-clock`).
    Profile,
    /// `--profile`: off-CPU stacks (`sched:sched_switch` tracepoint, tracefs).
    ProfileOffCpu,
}

impl Source {
    /// Every source, in declaration order.
    pub const ALL: [Source; 33] = [
        Source::Stat,
        Source::Loadavg,
        Source::PressureCpu,
        Source::PressureIo,
        Source::PressureMemory,
        Source::Meminfo,
        Source::Softirqs,
        Source::Interrupts,
        Source::Diskstats,
        Source::NetDev,
        Source::TcpMib,
        Source::TcpSockets,
        Source::Sockstat,
        Source::TcpMem,
        Source::PortRange,
        Source::FileHandles,
        Source::Power,
        Source::Process,
        Source::ProcessIo,
        Source::ProcessFds,
        Source::ProcessCtxSwitches,
        Source::Threads,
        Source::ThreadWaitReason,
        Source::ThreadRunDelay,
        Source::Specimen,
        Source::Db,
        Source::DbSemaphores,
        Source::DbPerfSchema,
        Source::DbPerfSchemaInstruments,
        Source::DbStats,
        Source::DbCheckpoints,
        Source::Profile,
        Source::ProfileOffCpu,
    ];

    /// The name stored in a run's probe notes (never change one: stores hold them).
    pub fn name(self) -> &'static str {
        match self {
            Source::Stat => "Stat",
            Source::Loadavg => "Loadavg",
            Source::PressureCpu => "PressureCpu",
            Source::PressureIo => "PressureIo",
            Source::PressureMemory => "PressureMemory",
            Source::Meminfo => "Meminfo",
            Source::Softirqs => "Softirqs",
            Source::Interrupts => "Interrupts",
            Source::Diskstats => "Diskstats",
            Source::NetDev => "NetDev",
            Source::TcpMib => "TcpMib",
            Source::TcpSockets => "TcpSockets",
            Source::Sockstat => "Sockstat",
            Source::TcpMem => "TcpMem",
            Source::PortRange => "PortRange",
            Source::FileHandles => "FileHandles",
            Source::Power => "Power",
            Source::Process => "Process",
            Source::ProcessIo => "ProcessIo",
            Source::ProcessFds => "ProcessFds",
            Source::ProcessCtxSwitches => "ProcessCtxSwitches",
            Source::Threads => "Threads",
            Source::ThreadWaitReason => "ThreadWaitReason",
            Source::ThreadRunDelay => "ThreadRunDelay",
            Source::Specimen => "Specimen",
            Source::Db => "Db",
            Source::DbSemaphores => "Db_semaphores",
            Source::DbPerfSchema => "Db_perf_schema",
            Source::DbPerfSchemaInstruments => "Db_perf_schema_instruments",
            Source::DbStats => "Db_stats",
            Source::DbCheckpoints => "Db_checkpoints",
            Source::Profile => "Profile",
            Source::ProfileOffCpu => "ProfileOffCpu",
        }
    }

    /// The key under an `unavailable` map (JSON output, reports, verdicts).
    pub fn key(self) -> &'static str {
        match self {
            Source::Stat => "stat",
            Source::Loadavg => "loadavg",
            Source::PressureCpu => "pressurecpu",
            Source::PressureIo => "pressureio",
            Source::PressureMemory => "pressurememory",
            Source::Meminfo => "meminfo",
            Source::Softirqs => "softirqs",
            Source::Interrupts => "interrupts",
            Source::Diskstats => "diskstats",
            Source::NetDev => "netdev",
            Source::TcpMib => "tcpmib",
            Source::TcpSockets => "tcpsockets",
            Source::Sockstat => "sockstat",
            Source::TcpMem => "tcpmem",
            Source::PortRange => "portrange",
            Source::FileHandles => "filehandles",
            Source::Power => "power",
            Source::Process => "process",
            Source::ProcessIo => "processio",
            Source::ProcessFds => "processfds",
            Source::ProcessCtxSwitches => "processctxswitches",
            Source::Threads => "threads",
            Source::ThreadWaitReason => "threadwaitreason",
            Source::ThreadRunDelay => "threadrundelay",
            Source::Specimen => "specimen",
            Source::Db => "db",
            Source::DbSemaphores => "db_semaphores",
            Source::DbPerfSchema => "db_perf_schema",
            Source::DbPerfSchemaInstruments => "db_perf_schema_instruments",
            Source::DbStats => "db_stats",
            Source::DbCheckpoints => "db_checkpoints",
            Source::Profile => "profile",
            Source::ProfileOffCpu => "profileoffcpu",
        }
    }

    /// The source a stored name stands for; `None` for a name this version does not know.
    pub fn from_name(name: &str) -> Option<Source> {
        Source::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The `unavailable` key of a stored note's source name: a known source's
    /// [`key`](Source::key); an unknown name (a newer version's) lowercased,
    /// as earlier versions keyed every note.
    pub fn key_of_stored(name: &str) -> String {
        Source::from_name(name).map_or_else(|| name.to_lowercase(), |s| s.key().to_string())
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_what_earlier_stores_hold_and_keys_their_lowercase() {
        // Earlier versions stored `format!("{:?}", source)` for /proc sources.
        for s in &Source::ALL[..24] {
            assert_eq!(s.name(), format!("{s:?}"));
        }
        for s in Source::ALL {
            assert_eq!(s.key(), s.name().to_lowercase(), "{s:?}");
            assert_eq!(Source::from_name(s.name()), Some(s));
            assert_eq!(Source::key_of_stored(s.name()), s.key());
        }
        let mut names: Vec<&str> = Source::ALL.iter().map(|s| s.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Source::ALL.len(), "names are distinct");
        // The hand-written names earlier versions stored for the other sources.
        let stored = ["Specimen", "Db", "Db_semaphores", "Db_perf_schema", "Db_perf_schema_instruments", "Db_stats", "Db_checkpoints"];
        assert!(stored.iter().all(|n| Source::from_name(n).is_some()));
        assert_eq!(Source::key_of_stored("Some_future_probe"), "some_future_probe");
        assert_eq!(Source::from_name("threads"), None, "names are case-sensitive");
    }

    #[test]
    fn serde_form_is_unchanged() {
        assert_eq!(serde_json::to_string(&Source::PressureCpu).unwrap(), r#""pressure_cpu""#);
        assert_eq!(serde_json::to_string(&Source::ThreadRunDelay).unwrap(), r#""thread_run_delay""#);
        assert_eq!(serde_json::from_str::<Source>(r#""tcp_mib""#).unwrap(), Source::TcpMib);
    }
}
