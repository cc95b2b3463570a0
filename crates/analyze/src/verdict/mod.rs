//! Bottleneck verdicts: named causes of where a run stopped scaling, each
//! with the figures that support it, a confidence and what to look at next.
//!
//! The rules (see `docs/verdicts.md` for the reasons behind each threshold)
//! run on every measured step at and beyond the knee
//! ([`Curve::knee_concurrency`]); a kind is reported once, at the step where
//! it is most certain (ties: the highest concurrency, where it is most
//! pronounced). Every rule has a trigger that must be measured and true, and
//! corroborating signals: each corroborating signal that was not measured
//! (listed in [`Verdict::missing`]) or measured but not met lowers the
//! confidence by one level, from [`Confidence::High`] down to
//! [`Confidence::Low`]. A verdict never claims more than its data.
//!
//! [`VerdictKind::DbContention`] needs the database probe's figures
//! ([`DbTelemetry`](scalelab_core::DbTelemetry): InnoDB row-lock and table-lock
//! waits, InnoDB semaphore OS waits, PostgreSQL wait profiles); without them
//! it is never produced. [`VerdictKind::SoftirqOneCpu`] needs per-CPU softirq
//! figures ([`SoftirqCpu`](scalelab_core::SoftirqCpu)).

mod diagnosis;
mod profiled;
mod rules;

pub use diagnosis::{diagnose, to_json, Diagnosis};

use crate::curve::Curve;
use scalelab_core::{Run, StepResult};
use serde::{Deserialize, Serialize};

/// Client CPU share (of its own cores, %) above which the client is saturated;
/// the same threshold as [`StepResult::client_saturated`].
pub const CLIENT_SATURATED_PCT: f64 = 90.0;
/// Client event-loop lateness (ms) that marks a client falling behind: its
/// timers are due every 50 ms, so a whole timer period late means requests
/// waited in the client, not the server.
pub const CLIENT_LAG_MS: f64 = 50.0;
/// Share of the window (%) the client's threads spent waiting for a CPU from
/// which the client is taken as starved: a fifth of its time queued behind
/// other work means it could not send at the pace it measured.
pub const CLIENT_RUNQ_WAIT_PCT: f64 = 20.0;
/// Open loop: share of the requests sent late by the client's own doing
/// (more than `LATE_SEND_AFTER` behind schedule with a connection free), in
/// %, from which the client did not keep its schedule (the step's
/// `client_saturated` flag uses the same figure).
pub const CLIENT_LATE_SENDS_PCT: f64 = scalelab_core::result::CLIENT_LATE_SENDS_PCT;
/// Failed share of requests (errors / (completions + errors)) from which errors get a verdict.
pub const ERRORS_NOTABLE_SHARE: f64 = 0.01;
/// Failed share from which the errors verdict is of high confidence (below: medium).
pub const ERRORS_HIGH_SHARE: f64 = 0.05;
/// Machine CPU busy (% of all cores) from which the CPU counts as saturated.
pub const CPU_SATURATED_PCT: f64 = 90.0;
/// Either side's share (%) of user + system time up to which a CPU-bound
/// split counts as even: at 55/45 neither user space nor the kernel is
/// "mostly" the work, so naming one would send the reader to half the cost.
pub const CPU_SPLIT_EVEN_PCT: f64 = 55.0;
/// Share of the machine's cores (server CPU / (cores × 100 %)) from which the
/// server process is taken to be the CPU consumer of a CPU-bound verdict.
pub const SERVER_CPU_SHARE: f64 = 0.5;
/// Share of the busy CPU (server cores used / cores busy) under which the
/// server is not what keeps the machine busy: a CPU-bound verdict would blame
/// it for a neighbour's (or the client's) work, so `cpu-busy-elsewhere` is
/// said instead. A fifth: a server doing real work next to a loopback client
/// uses about half of the busy CPU; a hog beside an idle server leaves it ~1 %.
pub const SERVER_OF_BUSY_MIN: f64 = 0.2;
/// A CPU-bound verdict says the load generator shared the cores when it
/// used at least this % of the busy CPU (the default demo's loopback client
/// uses 10-20 % of it; the server then had the rest, not all of it).
pub const CLIENT_OF_BUSY_NOTE_PCT: f64 = 10.0;
/// A CPU-bound verdict names other processes (neither the server nor the
/// load generator) when they used at least this % of the busy CPU, and
/// its confidence drops: part of the limit was theirs (a build beside the
/// demo took a third of it and made a "collapse" at 50 clients).
pub const OTHERS_OF_BUSY_NOTE_PCT: f64 = 20.0;
/// Server CPU (% of one core) under which the server did nothing measurable.
pub const SERVER_IDLE_CPU_PCT: f64 = 1.0;
/// Server context switches per second under which its threads were not being
/// woken: the design's "under ~100/s is noise". A server whose threads sit on
/// futexes with CPU and switches both below these is frozen (SIGSTOP, a
/// debugger) or idle, not contending: threads on a contended lock sleep and
/// wake, which are context switches.
pub const SERVER_IDLE_CS_PER_S: f64 = 100.0;
/// Share of the server's thread-time blocked on futexes that points at a lock.
pub const FUTEX_BLOCKED_PCT: f64 = 30.0;
/// Growth of context switches per request vs the first step that counts as rising.
pub const CS_PER_REQUEST_GROWTH: f64 = 2.0;
/// A thread at this % of one core (or more) is taken as running flat out (85, not 100: a thread that never idles still loses a few % to preemption and to the sampler's own resolution).
pub const HOT_THREAD_PCT: f64 = 85.0;
/// CPU iowait (% of all cores) from which the disk is suspected.
pub const IOWAIT_PCT: f64 = 10.0;
/// Share of the server's thread-time in disk wait that corroborates a disk verdict.
pub const THREAD_IO_PCT: f64 = 20.0;
/// Listen-queue overflows or drops per second from which accept overflow is reported.
pub const LISTEN_OVERFLOW_PER_S: f64 = 1.0;
/// TIME_WAIT sockets as a share of the ephemeral port range that counts as exhaustion.
pub const TIME_WAIT_RANGE_SHARE: f64 = 0.7;
/// TIME_WAIT sockets that count as exhaustion when the port range is not
/// recorded: 70 % of Linux's default range 32768–60999 (28,232 ports) is 19,762.
pub const TIME_WAIT_FALLBACK: u64 = 20_000;
/// How long a socket stays in TIME_WAIT on Linux (`TCP_TIMEWAIT_LEN`), s:
/// a run opening R connections per second holds about 60·R of them.
pub const TIME_WAIT_S: f64 = 60.0;
/// TCP retransmissions per second from which the network is suspected.
pub const RETRANS_PER_S: f64 = 100.0;
/// Softirq time of one CPU (% of that CPU) from which receive processing on
/// one CPU is suspected.
pub const SOFTIRQ_ONE_CPU_PCT: f64 = 30.0;
/// How many times the other CPUs' mean softirq share the busiest CPU must
/// carry for the load to count as concentrated (not spread but heavy).
pub const SOFTIRQ_CONCENTRATION: f64 = 3.0;
/// Share of all NET_RX softirqs on that CPU that ties it to network receive.
pub const NET_RX_ONE_CPU_SHARE_PCT: f64 = 70.0;
/// InnoDB row-lock waits per second from which transactions are taken to queue on rows.
pub const ROW_LOCK_WAITS_PER_S: f64 = 10.0;
/// Share of the clients' time spent waiting for InnoDB row locks (row-lock
/// wait ms per second / (concurrency x 1000), %) from which the waits cost
/// throughput. Below it the rows are contended but the waits are short:
/// MariaDB 10.11 `hot-row` (8 clients, 10 rows, on 2 cores) measured 369
/// waits/s but 87 ms/s of waiting, 1 % of the clients' time, because InnoDB
/// releases row locks before the commit's log flush.
pub const ROW_LOCK_TIME_SHARE_PCT: f64 = 5.0;
/// Table-lock requests that waited, per second, from which a table lock is hot (MyISAM, LOCK TABLES).
pub const TABLE_LOCKS_WAITED_PER_S: f64 = 10.0;
/// InnoDB semaphore OS waits per second from which latches are contended: thousands
/// of mutex sleeps per second are the classic sign of one hot latch.
pub const INNODB_OS_WAITS_PER_S: f64 = 1000.0;
/// Share of sampled active PostgreSQL backends waiting on `Lock` or `LWLock`
/// (%) from which the database's own locks are the bottleneck.
pub const PG_LOCK_WAIT_PCT: f64 = 30.0;
/// A second Lock or LWLock wait is named beside the top one when its share
/// is at least this fraction of the top's: a near tie, where poll noise
/// decides the order.
pub const LOCK_WAIT_TIE_SHARE: f64 = 0.8;
/// Growth of a database wait figure vs the first step that counts as rising with clients.
pub const DB_WAIT_GROWTH: f64 = 2.0;

/// The named bottlenecks, serialized as the documented strings
/// (`cpu-bound-user`, `lock-contention`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerdictKind {
    /// All cores busy, mostly in user space: the server's own code is the work.
    CpuBoundUser,
    /// All cores busy, mostly in the kernel (syscalls, network stack, kernel locks).
    CpuBoundKernel,
    /// All cores busy, split about evenly between user space and the kernel.
    CpuBoundMixed,
    /// All cores busy, but not with the server: another process or the client.
    CpuBusyElsewhere,
    /// CPU idle while threads sleep on futexes and context switches per request rise.
    LockContention,
    /// Database-internal waits: InnoDB row locks, MyISAM table locks, InnoDB
    /// semaphore OS waits, PostgreSQL backends waiting on Lock/LWLock.
    DbContention,
    /// CPUs in I/O wait, server threads blocked on disk.
    DiskBound,
    /// TCP retransmissions: loss or a full link.
    NetworkBound,
    /// One server thread at ~100 % of a core while the machine idles.
    SingleHotThread,
    /// Network softirqs concentrated on one CPU while the others have room.
    SoftirqOneCpu,
    /// The listen queue overflows: connections are dropped before `accept`.
    AcceptOverflow,
    /// TIME_WAIT sockets fill the ephemeral port range.
    PortExhaustion,
    /// The load generator was saturated: the result is the client's.
    ClientBound,
    /// A notable share of requests failed.
    Errors,
    /// The server stops answering now and then: some seconds' latency far
    /// above the others' while its service time stays low.
    PeriodicStalls,
    /// Some clients completed nothing in the window while others were served.
    StarvedClients,
    /// Every new connection wakes many waiting server threads; one gets it.
    ThunderingHerd,
    /// The requests in service sit at the server's number of workers while
    /// more clients wait: a fixed pool of processes or threads is the limit.
    WorkerPool,
}

impl VerdictKind {
    /// The documented name, as in JSON (`cpu-bound-user`, ...).
    pub fn name(self) -> &'static str {
        match self {
            VerdictKind::CpuBoundUser => "cpu-bound-user",
            VerdictKind::CpuBoundKernel => "cpu-bound-kernel",
            VerdictKind::CpuBoundMixed => "cpu-bound-mixed",
            VerdictKind::CpuBusyElsewhere => "cpu-busy-elsewhere",
            VerdictKind::LockContention => "lock-contention",
            VerdictKind::DbContention => "db-contention",
            VerdictKind::DiskBound => "disk-bound",
            VerdictKind::NetworkBound => "network-bound",
            VerdictKind::SingleHotThread => "single-hot-thread",
            VerdictKind::SoftirqOneCpu => "softirq-one-cpu",
            VerdictKind::AcceptOverflow => "accept-overflow",
            VerdictKind::PortExhaustion => "port-exhaustion",
            VerdictKind::ClientBound => "client-bound",
            VerdictKind::Errors => "errors",
            VerdictKind::PeriodicStalls => "periodic-stalls",
            VerdictKind::StarvedClients => "starved-clients",
            VerdictKind::ThunderingHerd => "thundering-herd",
            VerdictKind::WorkerPool => "worker-pool",
        }
    }

    /// The title shown in text output ("LOCK CONTENTION").
    pub fn title(self) -> &'static str {
        match self {
            VerdictKind::CpuBoundUser => "CPU-BOUND (USER)",
            VerdictKind::CpuBoundKernel => "CPU-BOUND (KERNEL)",
            VerdictKind::CpuBoundMixed => "CPU-BOUND (USER + KERNEL)",
            VerdictKind::CpuBusyElsewhere => "CPU BUSY ELSEWHERE",
            VerdictKind::LockContention => "LOCK CONTENTION",
            VerdictKind::DbContention => "DATABASE CONTENTION",
            VerdictKind::DiskBound => "DISK-BOUND",
            VerdictKind::NetworkBound => "NETWORK-BOUND",
            VerdictKind::SingleHotThread => "SINGLE HOT THREAD",
            VerdictKind::SoftirqOneCpu => "SOFTIRQS ON ONE CPU",
            VerdictKind::AcceptOverflow => "ACCEPT-QUEUE OVERFLOW",
            VerdictKind::PortExhaustion => "PORT EXHAUSTION",
            VerdictKind::ClientBound => "CLIENT-BOUND",
            VerdictKind::Errors => "ERRORS",
            VerdictKind::PeriodicStalls => "PERIODIC STALLS",
            VerdictKind::StarvedClients => "CLIENTS SERVED NOTHING",
            VerdictKind::ThunderingHerd => "THUNDERING HERD",
            VerdictKind::WorkerPool => "WORKER POOL LIMIT",
        }
    }

    /// Rank among verdicts of equal confidence (lower first): causes that
    /// invalidate or explain the others come first.
    fn priority(self) -> u8 {
        match self {
            VerdictKind::ClientBound => 0,
            VerdictKind::Errors => 1,
            VerdictKind::WorkerPool => 2,
            VerdictKind::StarvedClients => 3,
            VerdictKind::PeriodicStalls => 4,
            VerdictKind::ThunderingHerd => 5,
            VerdictKind::LockContention => 6,
            VerdictKind::DbContention => 7,
            VerdictKind::SingleHotThread => 8,
            VerdictKind::SoftirqOneCpu => 9,
            VerdictKind::AcceptOverflow => 10,
            VerdictKind::PortExhaustion => 11,
            VerdictKind::CpuBoundKernel => 12,
            VerdictKind::CpuBoundMixed => 13,
            VerdictKind::CpuBoundUser => 14,
            VerdictKind::CpuBusyElsewhere => 15,
            VerdictKind::DiskBound => 16,
            VerdictKind::NetworkBound => 17,
        }
    }
}

/// How sure a verdict is; lowered by each missing or unmet corroborating signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// One signal, others missing or against it.
    Low,
    /// The trigger plus part of the corroboration.
    Medium,
    /// The trigger and every corroborating signal measured and met.
    High,
}

impl Confidence {
    /// One level lower (Low stays Low).
    pub fn lower(self) -> Confidence {
        match self {
            Confidence::High => Confidence::Medium,
            _ => Confidence::Low,
        }
    }

    /// The lowercase name, as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        }
    }
}

/// One figure supporting a verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// What was measured ("CPU busy", "server threads blocked on futex").
    pub name: String,
    /// The measured value.
    pub value: f64,
    /// Its unit ("%", "cs/s", "x first step", ...).
    pub unit: String,
}

impl Evidence {
    /// A figure with its name and unit.
    pub fn new(name: impl Into<String>, value: f64, unit: impl Into<String>) -> Self {
        Evidence { name: name.into(), value, unit: unit.into() }
    }
}

/// A named bottleneck at one step, with its evidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Which bottleneck.
    pub kind: VerdictKind,
    /// How sure the rule is, given what was measured.
    pub confidence: Confidence,
    /// The step the evidence comes from: its concurrency, or its offered
    /// rate on a rate sweep ([`crate::series::level`]).
    pub concurrency: u32,
    /// One sentence saying what the figures mean.
    pub headline: String,
    /// The figures that support the verdict, so a reader can check it.
    pub evidence: Vec<Evidence>,
    /// Evidence the rule would have used but that was not measured, with why.
    pub missing: Vec<String>,
    /// What to look at next.
    pub next: String,
}

/// True when the target is on this machine's loopback (or the built-in
/// specimen): no link lies between client and server.
fn is_loopback(target: &str) -> bool {
    scalelab_core::Target::parse(target).is_ok_and(|t| t.is_loopback())
}

/// A busy-polling client's step as the rules judge it (`--busy-poll`): its
/// polls that found nothing taken out of the client's CPU and out of the
/// machine's busy CPU (user and system in proportion), as if it had slept
/// through them, which is what they stand for. Without that a client that
/// polls a core would read as a busy machine and a saturated client. The
/// copy keeps `client_poll_idle_s` at 0: it was busy-polling, nothing is
/// left to take out. Other steps are judged as they are.
fn as_if_asleep(step: &StepResult, cores: Option<u32>) -> std::borrow::Cow<'_, StepResult> {
    let Some(idle) = step.client_poll_idle_s.filter(|i| *i > 0.0) else { return std::borrow::Cow::Borrowed(step) };
    let mut s = step.clone();
    s.client_cpu_s = (s.client_cpu_s - idle).max(0.0);
    s.client_poll_idle_s = Some(0.0);
    let machine = cores.filter(|c| *c > 0).map(|c| 100.0 * idle / (s.window_s * f64::from(c)));
    if let (Some(t), Some(idle_pct)) = (s.telemetry.as_mut(), machine.filter(|p| p.is_finite())) {
        if let Some(busy) = t.cpu_busy_pct.filter(|b| *b > 0.0) {
            let kept = (busy - idle_pct).max(0.0) / busy;
            t.cpu_busy_pct = Some(busy * kept);
            t.cpu_user_pct = t.cpu_user_pct.map(|u| u * kept);
            t.cpu_sys_pct = t.cpu_sys_pct.map(|u| u * kept);
        }
    }
    std::borrow::Cow::Owned(s)
}

/// The verdicts of `run` for its steps at and beyond `curve`'s knee, most
/// important first: client-bound always first (the result is then the
/// client's), the others by confidence, then by kind (errors, lock
/// contention, single hot thread, ... before cpu-bound and disk-bound).
///
/// Partial steps and steps without a measured window (imported series) are
/// skipped. When the client was saturated, every other verdict except errors
/// is lowered one level, because the server figures may then describe the client.
pub fn verdicts(run: &Run, curve: &Curve) -> Vec<Verdict> {
    let measured: Vec<&StepResult> =
        run.steps.iter().filter(|s| !s.partial && s.window_s > 0.0 && s.published_throughput_per_s.is_none()).collect();
    let first = measured.iter().min_by_key(|s| crate::series::level(s)).copied();
    let mut best: Vec<Verdict> = Vec::new();
    for step in measured.iter().filter(|s| crate::series::level(s) >= curve.knee_concurrency) {
        let keepalive = run.plan.options.get("keepalive").and_then(|v| v.as_bool());
        let step = &*as_if_asleep(step, run.environment.logical_cores);
        let ctx = rules::Ctx { step, first, env: &run.environment, loopback: is_loopback(&run.plan.target), keepalive };
        for v in rules::all(&ctx) {
            match best.iter_mut().find(|b| b.kind == v.kind) {
                Some(b) => {
                    if (v.confidence, v.concurrency) > (b.confidence, b.concurrency) {
                        *b = v;
                    }
                }
                None => best.push(v),
            }
        }
    }
    if best.iter().any(|v| v.kind == VerdictKind::ClientBound) {
        for v in best.iter_mut().filter(|v| !matches!(v.kind, VerdictKind::ClientBound | VerdictKind::Errors)) {
            v.confidence = v.confidence.lower();
            v.headline.push_str(" (confidence lowered: the client was saturated)");
        }
    }
    profiled::add_profile_evidence(run, &mut best);
    best.sort_by(|a, b| {
        let client = |v: &Verdict| v.kind != VerdictKind::ClientBound;
        (client(a), std::cmp::Reverse(a.confidence), a.kind.priority(), a.concurrency).cmp(&(
            client(b),
            std::cmp::Reverse(b.confidence),
            b.kind.priority(),
            b.concurrency,
        ))
    });
    best
}

#[cfg(test)]
mod tests;
