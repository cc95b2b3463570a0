//! The values the suite hands out: groups, units, results, runs, options,
//! errors (the `--json` document is [`crate::document`]).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// A family of benchmarks, selectable with `--only`. The order of
/// [`Group::ALL`] is the order the suite runs them in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    /// Syscalls, signals, process creation (lmbench "Processor, Processes").
    Procs,
    /// Thread creation, mutexes, futexes, spinlock vs sleeping mutex under contention.
    Threads,
    /// Context switches between N processes passing a token (lmbench `lat_ctx`).
    Ctx,
    /// Local communication round trips: pipe, AF_UNIX, UDP, TCP, TCP connect.
    Latency,
    /// Local communication and memory bandwidth in MB/s.
    Bandwidth,
    /// Memory load latency by dependent pointer chase, L1 to main memory.
    Memory,
    /// flops-style double-precision FPU kernels.
    Fpu,
}

impl Group {
    /// Every group, in run order.
    pub const ALL: [Group; 7] = [Group::Procs, Group::Threads, Group::Ctx, Group::Latency, Group::Bandwidth, Group::Memory, Group::Fpu];

    /// The name used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Group::Procs => "procs",
            Group::Threads => "threads",
            Group::Ctx => "ctx",
            Group::Latency => "latency",
            Group::Bandwidth => "bandwidth",
            Group::Memory => "memory",
            Group::Fpu => "fpu",
        }
    }

    /// Parses one group name for `--only` (case-insensitive; a few aliases such
    /// as `proc`, `locks`, `lat`, `bw`, `mem`, `flops` are accepted). The error
    /// names every valid group so the user can fix the flag.
    pub fn parse(s: &str) -> Result<Group, MicroError> {
        let key = s.trim().to_ascii_lowercase();
        let g = match key.as_str() {
            "procs" | "proc" | "processes" => Group::Procs,
            "threads" | "thread" | "locks" => Group::Threads,
            "ctx" | "ctxsw" | "context" => Group::Ctx,
            "latency" | "lat" => Group::Latency,
            "bandwidth" | "bw" => Group::Bandwidth,
            "memory" | "mem" | "memlat" => Group::Memory,
            "fpu" | "flops" => Group::Fpu,
            _ => return Err(MicroError::UnknownGroup { given: s.trim().to_string(), valid: Group::ALL.map(Group::as_str).join(", ") }),
        };
        Ok(g)
    }

    /// Parses a comma-separated list (`procs,ctx`), dropping duplicates.
    pub fn parse_list(s: &str) -> Result<Vec<Group>, MicroError> {
        let mut out = Vec::new();
        for part in s.split(',').filter(|p| !p.trim().is_empty()) {
            let g = Group::parse(part)?;
            if !out.contains(&g) {
                out.push(g);
            }
        }
        if out.is_empty() {
            return Err(MicroError::UnknownGroup { given: s.to_string(), valid: Group::ALL.map(Group::as_str).join(", ") });
        }
        Ok(out)
    }
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Group {
    type Err = MicroError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Group::parse(s)
    }
}

/// The unit of a figure; part of every result so a reader never guesses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Microseconds per operation (lmbench's unit for latencies).
    Us,
    /// Nanoseconds per operation (memory latency, uncontended mutex, CPU per lock).
    Ns,
    /// Megabytes (10^6 bytes, as lmbench counts) per second.
    MbPerS,
    /// Millions of double-precision floating-point operations per second.
    Mflops,
    /// Millions of operations (lock acquisitions) per second.
    MopsPerS,
}

impl Unit {
    /// The short name used in JSON and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Us => "us",
            Unit::Ns => "ns",
            Unit::MbPerS => "mb_per_s",
            Unit::Mflops => "mflops",
            Unit::MopsPerS => "mops_per_s",
        }
    }

    /// True for throughputs (MB/s, MFLOPS, Mops/s), false for times.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Unit::MbPerS | Unit::Mflops | Unit::MopsPerS)
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One figure: the median of several calibrated measurements and their
/// spread. A figure that could not be measured has `median: None` and a
/// reason in `unavailable`; it is never reported as 0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MicroResult {
    /// Stable snake_case id (`null_call`, `ctx_2p_0k`, `tcp_latency_same_cpu`),
    /// documented in docs/micro.md; stores and comparisons key on it.
    pub id: String,
    pub group: Group,
    /// Human name, e.g. "null call (getppid)".
    pub name: String,
    pub median: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Coefficient of variation (standard deviation / mean) of the samples, as a fraction.
    pub cv: Option<f64>,
    pub unit: Unit,
    /// How many measurements the median is taken over (1 for a published figure).
    pub samples: u32,
    /// Why there is no figure (e.g. "/bin/sh missing"), when there is none.
    pub unavailable: Option<String>,
    /// A measurement-quality warning, e.g. a wide spread.
    pub warning: Option<String>,
}

impl MicroResult {
    /// A result that could not be measured, with the reason.
    pub fn unavailable(id: &str, group: Group, name: &str, unit: Unit, why: String) -> Self {
        MicroResult {
            id: id.to_string(),
            group,
            name: name.to_string(),
            median: None,
            min: None,
            max: None,
            cv: None,
            unit,
            samples: 0,
            unavailable: Some(why),
            warning: None,
        }
    }
}

/// What [`crate::run_suite`] returns: the figures in run order, the suite's
/// wall time and run-level warnings (oversubscribed CPUs, hypervisor, stop).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MicroRun {
    pub results: Vec<MicroResult>,
    pub wall_s: f64,
    pub warnings: Vec<String>,
    /// True when `stop` was set before the suite finished: `results` holds
    /// only the figures completed before that.
    #[serde(default)]
    pub stopped: bool,
}

impl MicroRun {
    /// The result with this id, if the run has it.
    pub fn get(&self, id: &str) -> Option<&MicroResult> {
        self.results.iter().find(|r| r.id == id)
    }

    /// The median of this id, if it was measured.
    pub fn median(&self, id: &str) -> Option<f64> {
        self.get(id).and_then(|r| r.median)
    }
}

/// A run with the label it is shown under (a host, an OS, a configuration):
/// one row of the lmbench-style tables. Published figures parse into the same
/// shape so they sit beside ours.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LabelledRun {
    pub label: String,
    /// Operating system, shown in the "OS" column ("Linux", "Darwin").
    pub os: Option<String>,
    /// Processor clock in MHz, shown in the "Mhz" column when known.
    pub mhz: Option<f64>,
    pub run: MicroRun,
}

/// How to run the suite.
#[derive(Clone, Debug, Default)]
pub struct SuiteOptions {
    /// 3 repeats instead of 11, shorter lock windows, no memory-latency curve.
    pub quick: bool,
    /// Run only these groups (in canonical order); `None` runs all.
    pub only: Option<Vec<Group>>,
    /// Override the number of measurements per figure.
    pub repeats: Option<u32>,
    /// Set (e.g. on Ctrl-C) to stop: every benchmark checks it between
    /// measurements and returns promptly, after reaping its children and
    /// joining its threads.
    pub stop: Arc<AtomicBool>,
}

/// What can go wrong in the library's own inputs. A benchmark that cannot run
/// is not an error: its result is marked unavailable.
#[derive(Debug, thiserror::Error)]
pub enum MicroError {
    #[error("unknown benchmark group `{given}`; valid groups: {valid}")]
    UnknownGroup { given: String, valid: String },
    #[error("repeats must be at least 1 (got {0})")]
    BadRepeats(u32),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_parse_accepts_names_and_aliases() {
        assert_eq!(Group::parse("procs").unwrap(), Group::Procs);
        assert_eq!(Group::parse(" BW ").unwrap(), Group::Bandwidth);
        assert_eq!(Group::parse_list("ctx,lat,ctx").unwrap(), vec![Group::Ctx, Group::Latency]);
    }

    #[test]
    fn group_parse_error_names_valid_groups() {
        let e = Group::parse("disk").unwrap_err().to_string();
        assert!(e.contains("`disk`"), "{e}");
        assert!(e.contains("procs, threads, ctx, latency, bandwidth, memory, fpu"), "{e}");
        assert!(Group::parse_list(",").is_err());
    }

    #[test]
    fn unit_serializes_snake_case() {
        assert_eq!(serde_json::to_string(&Unit::MbPerS).unwrap(), "\"mb_per_s\"");
        assert!(Unit::Mflops.higher_is_better());
        assert!(!Unit::Us.higher_is_better());
    }
}
