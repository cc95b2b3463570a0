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
    /// Time spent waiting for a CPU (runnable, from `schedstat`'s run
    /// delay) over wall time, in %; `None` when not measured (older runs,
    /// kernels without schedstat). With `cpu_pct` it is the thread's demand:
    /// a thread starved by a busy neighbour uses little CPU but still wants
    /// a whole core, which the neighbour cannot hide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runnable_pct: Option<f64>,
}

impl HotThread {
    /// Running plus waiting to run, in % of the wall time: how much of one
    /// core the thread wanted; `None` without the runnable figure.
    pub fn demand_pct(&self) -> Option<f64> {
        self.runnable_pct.map(|r| self.cpu_pct + r)
    }
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
    /// `herd` mode: epoll wake-ups of its workers per connection accepted
    /// (None when no connection was accepted through a wake-up: other modes).
    #[serde(default)]
    pub wakeups_per_connection: Option<f64>,
    /// `herd` mode: share of the wake-ups that found no connection left to
    /// accept (another worker took it), % (None without wake-ups).
    #[serde(default)]
    pub empty_wakeup_share_pct: Option<f64>,
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
    /// The most threads the server (all its processes) had in the window:
    /// a thread- or process-per-connection server grows with the clients.
    #[serde(default)]
    pub server_threads: Option<u64>,
    /// The most resident memory of the server (summed over its processes) in the window, MB.
    #[serde(default)]
    pub server_rss_mb: Option<f64>,
    /// Server context switches (voluntary + involuntary) per completed request.
    pub cs_per_request: Option<f64>,
    pub thread_states_pct: Option<ThreadStatesPct>,
    /// The server threads that used the most CPU.
    pub hottest_threads: Vec<HotThread>,
    /// Sockets in TIME_WAIT at the end of the window, machine-wide (both
    /// ends of loopback connections, every destination, earlier runs' too).
    pub tcp_time_wait: Option<u64>,
    /// Sockets in TIME_WAIT toward the server's listening addresses at the
    /// end of the window: the ones that pin this client's ephemeral ports
    /// (a port is reusable toward another destination). `None` when the
    /// server's addresses were not known (reason under `time_wait_to_target`).
    #[serde(default)]
    pub tcp_time_wait_to_target: Option<u64>,
    /// The target's own accept queue over the window's samples: the most
    /// and the mean connections waiting to be accepted (all its listening
    /// sockets together), and the queue's length (the largest backlog).
    /// `None` when its listeners were not known (reason under `target_listen`).
    #[serde(default)]
    pub listen_queue_max: Option<u64>,
    #[serde(default)]
    pub listen_queue_mean: Option<f64>,
    #[serde(default)]
    pub listen_backlog: Option<u64>,
    /// Machine-wide (the network namespace's) listen-queue overflows and
    /// drops: every listener's, not only the target's.
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
    /// The database's own figures (MySQL/MariaDB status counters, InnoDB
    /// semaphores, PostgreSQL activity and statistics views), when a database
    /// probe ran: the target is `mysql://`/`postgres://` or `--db-probe` was given.
    #[serde(default)]
    pub db: Option<DbTelemetry>,
    /// Why a figure is missing: figure name → reason.
    pub unavailable: BTreeMap<String, String>,
}

/// One entry of a PostgreSQL wait profile: a wait event (`Lock:transactionid`,
/// `LWLock:WALWrite`, `CPU` for active without a wait) or a wait-event type,
/// with its share of the sampled active client backends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DbWait {
    /// `TYPE:event`, a type alone (`Lock`), or `CPU`.
    pub wait: String,
    /// Share of active-backend samples, in %.
    pub pct: f64,
}

/// What the database reported about itself during one step's window, from
/// the probe's own connection. Rates are per second of wall time between the
/// first and last database reading around the window; `None` means not
/// measured (the reason is under the step's `unavailable`, key `db` or `db_*`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DbTelemetry {
    /// `mysql` (MySQL or MariaDB) or `postgres`.
    pub engine: String,
    /// Per-second database readings around the window.
    pub samples: u32,
    /// MySQL: statements sent by clients (`Questions`), per second.
    pub questions_per_s: Option<f64>,
    pub com_select_per_s: Option<f64>,
    pub com_insert_per_s: Option<f64>,
    pub com_update_per_s: Option<f64>,
    pub com_delete_per_s: Option<f64>,
    /// MySQL: mean of the `Threads_running` gauge over the readings
    /// (includes the probe's own thread while it reads).
    pub threads_running_avg: Option<f64>,
    /// MySQL: mean of `Threads_connected`.
    pub threads_connected_avg: Option<f64>,
    /// InnoDB row-lock waits per second: rising with clients means
    /// transactions queue on the same rows.
    pub row_lock_waits_per_s: Option<f64>,
    /// InnoDB row-lock wait time per wall second, ms/s (1000 = one thread always waiting).
    pub row_lock_time_ms_per_s: Option<f64>,
    /// Table-lock requests that had to wait, per second (MyISAM, LOCK TABLES).
    pub table_locks_waited_per_s: Option<f64>,
    /// Share of table-lock requests that waited, %.
    pub table_locks_waited_pct: Option<f64>,
    /// Share of MyISAM key-cache reads that went to disk, %.
    pub key_cache_miss_pct: Option<f64>,
    /// Temporary tables created on disk per second.
    pub tmp_disk_tables_per_s: Option<f64>,
    /// Full-scan row reads (`Handler_read_rnd_next`) per second.
    pub handler_read_rnd_next_per_s: Option<f64>,
    /// InnoDB SEMAPHORES (all latch kinds): spin waits per second.
    pub spin_waits_per_s: Option<f64>,
    /// InnoDB spin-loop rounds per second: CPU burnt waiting for latches.
    pub spin_rounds_per_s: Option<f64>,
    /// InnoDB latch waits that gave up spinning and slept in the OS, per second.
    pub os_waits_per_s: Option<f64>,
    /// Spin rounds per OS wait (rising with clients: spinning burns CPU).
    pub rounds_per_os_wait: Option<f64>,
    /// PostgreSQL: committed transactions per second in the target database.
    pub xact_commit_per_s: Option<f64>,
    /// PostgreSQL: rolled-back transactions per second in the target database.
    pub xact_rollback_per_s: Option<f64>,
    /// PostgreSQL: deadlocks detected around the window (count).
    pub deadlocks: Option<u64>,
    /// PostgreSQL: share of block reads served from shared buffers, %.
    pub blks_hit_pct: Option<f64>,
    /// PostgreSQL: rows fetched by index scans plus rows returned by
    /// sequential scans, per second (`tup_fetched` + `tup_returned`).
    pub tup_read_per_s: Option<f64>,
    /// PostgreSQL: rows inserted + updated + deleted per second.
    pub tup_written_per_s: Option<f64>,
    /// PostgreSQL: temporary files written around the window (count).
    pub temp_files: Option<u64>,
    /// PostgreSQL: checkpoints (timed + requested) started around the window.
    pub checkpoints: Option<u64>,
    /// PostgreSQL: mean number of active client backends per activity poll.
    pub mean_active_backends: Option<f64>,
    /// PostgreSQL: `pg_stat_activity` polls that went into the wait profile.
    pub activity_polls: Option<u64>,
    /// PostgreSQL: the top wait events (and `CPU`), largest share first.
    pub waits: Vec<DbWait>,
    /// PostgreSQL: shares per wait-event type (`Lock`, `LWLock`, `IO`, `CPU`, ...).
    pub wait_types: Vec<DbWait>,
    /// MySQL/MariaDB `performance_schema`: the instruments that waited
    /// longest over the window (top 5, condition variables left out), so a
    /// hot mutex or table lock is named. `None` when performance_schema is
    /// off or unreadable (reason under `unavailable.db_perf_schema`); empty
    /// when it is on and nothing waited.
    #[serde(default)]
    pub perf_schema_top_waits: Option<Vec<PerfSchemaWait>>,
    /// Instrument classes (`wait/io/table`, `wait/synch/mutex`, ...) that were
    /// enabled and timed: a class not listed cannot show up in the top waits.
    #[serde(default)]
    pub perf_schema_instrumented: Option<Vec<String>>,
    /// Redis: the window's figures from `INFO`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redis: Option<RedisTelemetry>,
}

/// A Redis server over a step's window, from its `INFO` each second.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RedisTelemetry {
    /// Commands the server executed per second (`total_commands_processed`), every client's.
    pub commands_per_s: Option<f64>,
    /// Share of key lookups that found their key (`keyspace_hits`), %.
    pub hit_pct: Option<f64>,
    pub connected_clients_avg: Option<f64>,
    /// Clients blocked in `BLPOP` and the like, at most.
    pub blocked_clients_max: Option<u64>,
    pub used_memory_mb: Option<f64>,
    /// Keys evicted at `maxmemory` per second.
    pub evicted_per_s: Option<f64>,
    /// Connections refused at `maxclients` in the window.
    pub rejected_connections: Option<u64>,
    /// `io_threads_active` at the window's end: 0 while the main thread does all network I/O.
    pub io_threads_active: Option<u64>,
    /// Entries the slow log gained in the window.
    pub slowlog_added: Option<u64>,
    /// The commands that took the most server time in the window, most first (at most 5).
    pub top_commands: Vec<RedisCommandRate>,
    /// `latency-monitor-threshold`, ms: 0 while the latency monitor is off
    /// (then `latency_spikes` is always empty); None: not readable.
    #[serde(default)]
    pub latency_threshold_ms: Option<u64>,
    /// `LATENCY LATEST`'s events whose latest spike fell in the window
    /// (to the second), longest first; empty when none did or the monitor
    /// is off.
    #[serde(default)]
    pub latency_spikes: Vec<RedisLatencySpike>,
}

/// A latency event the server recorded in a step's window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RedisLatencySpike {
    /// Redis's name for it: `command`, `fast-command`, `fork`, `aof-fsync-always`, ...
    pub event: String,
    /// Its latest spike, ms.
    pub latest_ms: u64,
}

/// One command over a window: its rate and the server's time per call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RedisCommandRate {
    pub command: String,
    pub calls_per_s: f64,
    /// Microseconds of server time per call.
    pub usec_per_call: f64,
}

/// One `performance_schema` wait instrument over a step's window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PerfSchemaWait {
    /// Instrument name, e.g. `wait/synch/rwlock/innodb/lock_latch` or `wait/io/table/sql/handler`.
    pub event: String,
    /// Waits per second.
    pub waits_per_s: f64,
    /// Wait time per wall second, ms/s (1000 = one thread always waiting);
    /// `None` for an instrument that counts but is not timed.
    pub wait_ms_per_s: Option<f64>,
}

impl DbTelemetry {
    /// Share (%) of sampled active backends waiting on a wait-event type; `None` without a profile.
    pub fn wait_type_pct(&self, ty: &str) -> Option<f64> {
        if self.activity_polls.is_none() || !matches!(self.mean_active_backends, Some(m) if m > 0.0) {
            return None;
        }
        Some(self.wait_types.iter().find(|w| w.wait == ty).map_or(0.0, |w| w.pct))
    }
}
