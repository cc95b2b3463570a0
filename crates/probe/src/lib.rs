//! Telemetry: what the machine and the server are doing while load runs.
//!
//! Every OS reader takes its root paths ([`Roots`]: `/proc`, `/sys`, `/etc`
//! by default) so tests run it on captured files. Samples hold raw counters
//! and a timestamp (the types live in `scalelab_core::sample`, re-exported
//! here); `scalelab_analyze::telemetry` derives per-second figures from them.
//! A value that cannot be read is `None`, never 0, and the reason is
//! reported once per source ([`unavailable`]).
//!
//! Samplers (stateful, reuse their buffers between calls):
//! - [`system`]: [`SystemSampler`] → [`SystemSample`], every machine-wide probe (~1 Hz).
//! - [`process`]: [`ProcessSampler`] → [`ProcessSample`], the server process (~1 Hz).
//! - [`threads`]: [`ThreadSampler`], thread states of the server (~50 Hz), reported
//!   per interval as a [`ThreadInterval`] ([`thread_report`]); the per-thread
//!   reading and classification live in the private `thread_observe`.
//! - [`find`]: the server process by listening port or by name (or of a
//!   target: [`server_pid`]); [`tree`]: its descendants (PostgreSQL backends,
//!   nginx workers).
//! - [`collect`]: [`Collector`], the threads that run the samplers above, the
//!   server's process tree and the database poller, and send typed
//!   [`Record`]s on a channel.
//!
//! Readers and parsers, one kernel file each:
//! - [`stat`] (`/proc/stat`, `/proc/loadavg`), [`pressure`] (PSI), [`meminfo`],
//!   [`irq`] (softirqs, interrupts per CPU), [`disk`] (diskstats), [`netdev`],
//!   [`tcp_mib`] (snmp, netstat), [`sockets`] (`/proc/net/tcp{,6}`), [`sockdiag`] (the same
//!   through netlink), [`socket_scan`] (counting them within a CPU budget),
//!   [`limits`] (sockstat, tcp_mem, file-nr, port range), [`power`] (RAPL, hwmon).
//! - [`syscalls`]: why a thread sleeps (syscall numbers, wait channels).
//! - [`tasks`]: a process's thread list kept across scans.
//! - [`read`]: buffered and kept-descriptor file reads, shared helpers.
//!
//! - [`sample`]: [`Sample`], one typed reading of any probe (what travels on the
//!   channel), its stored kind and JSON form, and [`RunSamples`] (a run's, by kind).
//!
//! Database figures:
//! - [`db`]: InnoDB SEMAPHORES, `SHOW GLOBAL STATUS`, `pg_stat_activity` wait profiles.
//! - [`preflight`]: the facts the preflight judges (docs/preflight.md).
//! - [`env`](mod@env): the benchmark configuration (host, kernel, CPU, memory, sysctls).
//! - [`time`], [`unavailable`]: timestamps; "unavailable: why" bookkeeping.

pub mod capture;
pub mod collect;
pub mod db;
pub mod disk;
pub mod env;
pub mod find;
pub mod irq;
pub mod limits;
pub mod meminfo;
pub mod netdev;
pub mod power;
pub mod preflight;
pub mod pressure;
pub mod process;
pub mod profile;
pub mod read;
pub mod sample;
pub mod sockdiag;
pub mod socket_scan;
pub mod sockets;
pub mod specimen;
pub mod stat;
pub mod syscalls;
pub mod system;
pub mod tasks;
pub mod tcp_mib;
mod thread_observe;
pub mod thread_report;
pub mod threads;
pub mod time;
pub mod tree;
pub mod unavailable;

pub use collect::{Collector, CollectorConfig, Record};
pub use env::{capture_environment, Roots};
pub use find::{find_by_name, find_by_port, listening_addrs, server_pid, FindError, ServerProcess};
pub use process::{ProcessSample, ProcessSampler};
pub use sample::{RunSamples, Sample, SampleKind};
pub use syscalls::ThreadState;
pub use system::{SystemSample, SystemSampler};
pub use thread_report::{StateShares, StateTimes, ThreadInterval, ThreadStats};
pub use threads::ThreadSampler;
pub use time::Timestamp;
pub use unavailable::{Source, Unavailable};
