//! The typed sample vocabulary: [`Sample`], one typed reading of one probe,
//! as it travels inside the process (sampler → channel → live view, store
//! writer), [`SampleKind`], and [`RunSamples`] (a run's samples by kind);
//! with the reading types they carry. Pure data and its serde form: the
//! readers that fill them live in `probe`, the rates and summaries derived
//! from them in `analyze`.
//!
//! - [`kernel`]: `/proc` machine-wide readings (CPU ticks, load, PSI, memory, IRQs, disks, interfaces).
//! - [`net`]: TCP counters, sockets by state, ports, socket memory, file handles.
//! - [`system`]: [`SystemSample`] (all of the above at once), [`Timestamp`], [`PowerReading`], [`Unavailable`].
//! - [`process`]: [`ProcessSample`], and [`SpecimenSample`] (the specimen's own counters).
//! - [`threads`]: [`ThreadState`], [`ThreadInterval`] and its parts, [`ThreadSecond`] (as stored).
//! - [`db`]: [`DbSample`] and the database readings it carries.
//! - [`profile`]: [`ProfileSample`], a step's on-CPU and off-CPU folded stacks.
//! - [`capture`]: [`CaptureSample`], what a trigger captured when its condition held.
//!
//! JSON happens only at the store boundary: [`Sample::to_json`] writes the
//! reading alone (the stored row's `json`, byte for byte what earlier
//! versions stored) and [`SampleKind::name`] the row's `kind`;
//! [`Sample::from_json`] reads them back.

pub mod capture;
pub mod db;
pub mod kernel;
pub mod net;
pub mod process;
pub mod profile;
pub mod system;
pub mod threads;

pub use capture::{CaptureSample, DbLockRow, ThreadGroup};
pub use db::{
    ActivityRow, DbSample, GlobalStatus, HandlerCounters, InnodbSemaphores, PerfSchemaWaits, PgCheckpoints, PgDatabaseStats,
    RedisCommandStat, RedisInfo, RedisLatencyEvent, SemaphoreFormat, SpinCounters, WaitCounter, WaitProfile, WaitShare, COND_PREFIX, CPU,
    WAIT_CHUNK_MS,
};
pub use kernel::{CpuStat, CpuTicks, DiskStat, Interrupts, LoadAvg, Memory, NetDev, PerCpuTicks, Pressure, Psi, PsiLine, Softirqs};
pub use net::{FileHandles, ListenQueue, PortUsage, SockStat, TcpMemLimits, TcpMib, TcpStates};
pub use process::{ProcessIo, ProcessSample, SpecimenSample};
pub use profile::{FoldedStack, ProfileSample, StackProfile};
pub use system::{PowerReading, SystemSample, Timestamp, Unavailable};
pub use threads::{StateCounts, StateShares, StateTimes, ThreadInterval, ThreadSecond, ThreadState, ThreadStats};

/// Which probe a reading comes from; its [`name`](SampleKind::name) is the
/// stored `kind` of a sample row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SampleKind {
    System,
    Process,
    Threads,
    Db,
    Specimen,
    Profile,
    Capture,
}

impl SampleKind {
    /// Every kind.
    pub const ALL: [SampleKind; 7] = [
        SampleKind::System,
        SampleKind::Process,
        SampleKind::Threads,
        SampleKind::Db,
        SampleKind::Specimen,
        SampleKind::Profile,
        SampleKind::Capture,
    ];

    /// The stored `kind` (never change one: stores hold them).
    pub fn name(self) -> &'static str {
        match self {
            SampleKind::System => "system",
            SampleKind::Process => "process",
            SampleKind::Threads => "threads",
            SampleKind::Db => "db",
            SampleKind::Specimen => "specimen",
            SampleKind::Profile => "profile",
            SampleKind::Capture => "capture",
        }
    }

    /// The kind a stored `kind` stands for; `None` for one this version does not know.
    pub fn from_name(name: &str) -> Option<SampleKind> {
        SampleKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// One reading of one probe, typed.
#[derive(Clone, Debug, PartialEq)]
pub enum Sample {
    /// Machine-wide counters (~1 Hz). This and `Db` are boxed: each is
    /// several times the size of the others, and one allocation a second is nothing.
    System(Box<SystemSample>),
    /// The server process (and its descendants, summed).
    Process(ProcessSample),
    /// The server's thread states over the last interval.
    Threads(ThreadSecond),
    /// The database's own counters, or a PostgreSQL wait-profile chunk.
    Db(Box<DbSample>),
    /// The specimen's `/__stats` counters.
    Specimen(SpecimenSample),
    /// A step's on-CPU and off-CPU stacks (`--profile`).
    Profile(Box<ProfileSample>),
    /// What a trigger captured when its condition held (`watch --trigger`).
    Capture(Box<CaptureSample>),
}

impl Sample {
    /// Which probe it comes from.
    pub fn kind(&self) -> SampleKind {
        match self {
            Sample::System(_) => SampleKind::System,
            Sample::Process(_) => SampleKind::Process,
            Sample::Threads(_) => SampleKind::Threads,
            Sample::Db(_) => SampleKind::Db,
            Sample::Specimen(_) => SampleKind::Specimen,
            Sample::Profile(_) => SampleKind::Profile,
            Sample::Capture(_) => SampleKind::Capture,
        }
    }

    /// When it was read, Unix milliseconds (the stored row's `unix_ms`).
    pub fn unix_ms(&self) -> i64 {
        match self {
            Sample::System(s) => s.at.unix_ms,
            Sample::Process(s) => s.at.unix_ms,
            Sample::Threads(s) => s.unix_ms,
            Sample::Db(s) => s.unix_ms,
            Sample::Specimen(s) => s.unix_ms,
            Sample::Profile(s) => s.unix_ms,
            Sample::Capture(s) => s.unix_ms,
        }
    }

    /// Moves every wall-clock time of the reading by `offset_ms` back (a
    /// remote host's clock minus this one's), so that a server agent's
    /// readings line up with this machine's steps. Every kind's every time,
    /// a PostgreSQL wait chunk's start included: the steps take their wait
    /// chunks by it, so a chunk left on the agent's clock would land in the
    /// wrong step (or none) once the offset exceeds the chunk's slack.
    pub fn shift_clock(&mut self, offset_ms: i64) {
        let back = |t: &mut i64| *t = t.saturating_sub(offset_ms);
        match self {
            Sample::System(s) => back(&mut s.at.unix_ms),
            Sample::Process(s) => back(&mut s.at.unix_ms),
            Sample::Threads(s) => back(&mut s.unix_ms),
            Sample::Db(s) => {
                back(&mut s.unix_ms);
                if let Some(since) = s.since_unix_ms.as_mut() {
                    back(since);
                }
            }
            Sample::Specimen(s) => back(&mut s.unix_ms),
            Sample::Profile(s) => back(&mut s.unix_ms),
            Sample::Capture(s) => {
                back(&mut s.unix_ms);
                back(&mut s.from_unix_ms);
            }
        }
    }

    /// The stored form: the reading alone as JSON (no kind tag: that is the row's `kind`).
    pub fn to_json(&self) -> serde_json::Result<String> {
        match self {
            Sample::System(s) => serde_json::to_string(s),
            Sample::Process(s) => serde_json::to_string(s),
            Sample::Threads(s) => serde_json::to_string(s),
            Sample::Db(s) => serde_json::to_string(s),
            Sample::Specimen(s) => serde_json::to_string(s),
            Sample::Profile(s) => serde_json::to_string(s),
            Sample::Capture(s) => serde_json::to_string(s),
        }
    }

    /// A stored reading of `kind` read back.
    pub fn from_json(kind: SampleKind, json: &str) -> serde_json::Result<Sample> {
        Ok(match kind {
            SampleKind::System => Sample::System(Box::new(serde_json::from_str(json)?)),
            SampleKind::Process => Sample::Process(serde_json::from_str(json)?),
            SampleKind::Threads => Sample::Threads(serde_json::from_str(json)?),
            SampleKind::Db => Sample::Db(Box::new(serde_json::from_str(json)?)),
            SampleKind::Specimen => Sample::Specimen(serde_json::from_str(json)?),
            SampleKind::Profile => Sample::Profile(Box::new(serde_json::from_str(json)?)),
            SampleKind::Capture => Sample::Capture(Box::new(serde_json::from_str(json)?)),
        })
    }
}

/// The samples of one run by kind, each in the order pushed (time order
/// when loaded from a store).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunSamples {
    pub system: Vec<SystemSample>,
    pub process: Vec<ProcessSample>,
    pub threads: Vec<ThreadSecond>,
    pub db: Vec<DbSample>,
    pub specimen: Vec<SpecimenSample>,
    /// Per-step profiles (`--profile`).
    pub profile: Vec<ProfileSample>,
    /// What triggers captured (`watch --trigger`).
    pub captures: Vec<CaptureSample>,
}

impl RunSamples {
    /// Files a sample under its kind.
    pub fn push(&mut self, s: Sample) {
        match s {
            Sample::System(s) => self.system.push(*s),
            Sample::Process(s) => self.process.push(s),
            Sample::Threads(s) => self.threads.push(s),
            Sample::Db(s) => self.db.push(*s),
            Sample::Specimen(s) => self.specimen.push(s),
            Sample::Profile(s) => self.profile.push(*s),
            Sample::Capture(s) => self.captures.push(*s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_are_the_stored_ones() {
        let names: Vec<&str> = SampleKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names, ["system", "process", "threads", "db", "specimen", "profile", "capture"]);
        assert!(SampleKind::ALL.iter().all(|k| SampleKind::from_name(k.name()) == Some(*k)));
        assert_eq!(SampleKind::from_name("System"), None);
    }

    #[test]
    fn stored_form_is_the_reading_alone_and_reads_back() {
        let at = Timestamp { monotonic_ns: 5, unix_ms: 1_700_000_000_123 };
        let samples = [
            Sample::System(Box::new(SystemSample { at, user_hz: 100, ..Default::default() })),
            Sample::Process(ProcessSample { at, pid: 42, alive: true, ..Default::default() }),
            Sample::Threads(ThreadSecond { unix_ms: 7, ..Default::default() }),
            Sample::Db(Box::new(DbSample { unix_ms: 8, engine: "postgres".into(), since_unix_ms: Some(3), ..Default::default() })),
            Sample::Specimen(SpecimenSample {
                unix_ms: 9,
                requests: 10,
                lock_waits: 2,
                spin_rounds: 0,
                fsyncs: 1,
                connections: 4,
                wakeups: 6,
                empty_wakeups: 2,
            }),
            Sample::Profile(Box::new(ProfileSample {
                step: 2,
                unix_ms: 10,
                on_cpu: Some(StackProfile {
                    duration_ns: 1_000,
                    threads: 3,
                    unwind: "dwarf".into(),
                    rate_hz: 99,
                    lost: 0,
                    sampled_every: 0,
                    stacks: vec![FoldedStack { stack: "main;work".into(), value: 5, count: 5 }],
                }),
                off_cpu: None,
                perf_cpu_s: 0.01,
            })),
            Sample::Capture(Box::new(CaptureSample {
                index: 1,
                from_unix_ms: 6,
                unix_ms: 11,
                trigger: "futex>=50% for 5s".into(),
                value: 62.5,
                unit: "%".into(),
                threads: vec![ThreadGroup {
                    threads: 4,
                    state: "S".into(),
                    wchan: "futex_wait_queue".into(),
                    stack: vec!["futex_wait_queue".into(), "futex_wait".into()],
                    names: vec!["worker".into()],
                }],
                looks: 10,
                db_locks: Some(vec![DbLockRow {
                    wait: "Lock:tuple".into(),
                    mode: "ExclusiveLock".into(),
                    waiting: 3,
                    blockers: 1,
                    longest_s: Some(0.5),
                }]),
                profile_window: Some(0),
                unavailable: vec![],
            })),
        ];
        for s in samples {
            let json = s.to_json().unwrap();
            // Byte for byte what the sampler stored before samples were typed.
            let old = match &s {
                Sample::System(x) => serde_json::to_string(&**x),
                Sample::Process(x) => serde_json::to_string(x),
                Sample::Threads(x) => serde_json::to_string(x),
                Sample::Db(x) => serde_json::to_string(&**x),
                Sample::Specimen(x) => serde_json::to_string(x),
                Sample::Profile(x) => serde_json::to_string(&**x),
                Sample::Capture(x) => serde_json::to_string(&**x),
            }
            .unwrap();
            assert_eq!(json, old);
            assert_eq!(Sample::from_json(s.kind(), &json).unwrap(), s);
            let mut all = RunSamples::default();
            all.push(s.clone());
            assert_eq!(
                [
                    all.system.len(),
                    all.process.len(),
                    all.threads.len(),
                    all.db.len(),
                    all.specimen.len(),
                    all.profile.len(),
                    all.captures.len()
                ]
                .iter()
                .sum::<usize>(),
                1
            );
        }
        assert!(Sample::from_json(SampleKind::System, "{\"not\": 1}").is_err());
    }
}

/// A typed reading, or a note that a source is unavailable and why: what a
/// collector sends, and what the store's typed write side
/// (`Store::add_records`) takes.
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    /// One reading of one probe.
    Sample(Sample),
    /// The source cannot be read, and why (sent once per source and reason).
    Unavailable(crate::Source, String),
}
