//! The values the suite hands out: groups, units, results, runs, options, errors.

use scalelab_core::Environment;
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

/// The `--json` document (see `micro.schema.json`): a run with its label and
/// the environment it was measured in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MicroReport {
    pub label: String,
    pub wall_s: f64,
    /// The machine and software the run was measured on (the same
    /// description a sweep records).
    #[serde(with = "environment_json")]
    pub environment: Environment,
    pub results: Vec<MicroResult>,
    #[serde(default)]
    pub warnings: Vec<String>,
    #[serde(default)]
    pub stopped: bool,
    /// Figures that contradict the memory hierarchy or each other
    /// ([`crate::anomalies::check`]).
    #[serde(default)]
    pub anomalies: Vec<crate::anomalies::Anomaly>,
}

impl MicroReport {
    /// Builds the JSON document of `run`.
    pub fn new(label: &str, environment: Environment, run: &MicroRun) -> Self {
        MicroReport {
            label: label.to_string(),
            wall_s: run.wall_s,
            environment,
            results: run.results.clone(),
            warnings: run.warnings.clone(),
            stopped: run.stopped,
            anomalies: crate::anomalies::check(run),
        }
    }

    /// "Linux KERNEL (DISTRIBUTION)" from the environment (`kernel`,
    /// `distribution`), for the tables' OS column.
    pub fn os(&self) -> Option<String> {
        let field = |f: &Option<String>| f.as_deref().filter(|s| !s.is_empty()).map(str::to_string);
        match (field(&self.environment.kernel), field(&self.environment.distribution)) {
            (Some(k), Some(d)) => Some(format!("Linux {k} ({d})")),
            (Some(k), None) => Some(format!("Linux {k}")),
            (None, Some(d)) => Some(d.to_string()),
            (None, None) => None,
        }
    }

    /// The run part of the document, for tables and comparisons.
    pub fn to_labelled(&self) -> LabelledRun {
        LabelledRun {
            label: self.label.clone(),
            os: self.os(),
            mhz: None,
            run: MicroRun { results: self.results.clone(), wall_s: self.wall_s, warnings: self.warnings.clone(), stopped: self.stopped },
        }
    }
}

/// The `environment` object of the `--json` document. Written with its keys
/// in alphabetical order, as when it was a free JSON object, so the document
/// stays byte for byte what it was; read leniently, so documents that left
/// fields out (hand-written, or from the examples before `scalelab_version`)
/// still load: a field left out is missing, never a guess.
mod environment_json {
    use scalelab_core::Environment;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(env: &Environment, s: S) -> Result<S::Ok, S::Error> {
        // Without serde_json's `preserve_order`, an object's keys are sorted.
        let object = serde_json::to_value(env).map_err(serde::ser::Error::custom)?;
        object.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Environment, D::Error> {
        let mut object = serde_json::Value::deserialize(d)?;
        if let Some(fields) = object.as_object_mut() {
            fields.entry("scalelab_version").or_insert_with(|| String::new().into());
        }
        serde_json::from_value(object).map_err(serde::de::Error::custom)
    }
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

    /// The `--json` document is what it was when `environment` was a free
    /// JSON object built from `scalelab_core::Environment`: its keys sorted.
    #[test]
    fn json_document_is_unchanged_by_the_typed_environment() {
        let env = Environment {
            hostname: Some("h".into()),
            kernel: Some("6.1.0".into()),
            distribution: Some("Debian 12".into()),
            cpu_model: Some("cpu".into()),
            logical_cores: Some(4),
            physical_cores: Some(2),
            smt: Some(true),
            memory_kib: Some(1024),
            governor: None,
            ip_local_port_range: Some("32768 60999".into()),
            somaxconn: Some(4096),
            open_files_limit: Some(1024),
            scalelab_version: "0.1.0".into(),
            server: None,
        };
        let run = MicroRun { results: vec![], wall_s: 1.5, warnings: vec!["w".into()], stopped: false };
        let report = MicroReport::new("lab", env, &run);
        let text = serde_json::to_string_pretty(&report).unwrap();
        let expected = r#"{
  "label": "lab",
  "wall_s": 1.5,
  "environment": {
    "cpu_model": "cpu",
    "distribution": "Debian 12",
    "governor": null,
    "hostname": "h",
    "ip_local_port_range": "32768 60999",
    "kernel": "6.1.0",
    "logical_cores": 4,
    "memory_kib": 1024,
    "open_files_limit": 1024,
    "physical_cores": 2,
    "scalelab_version": "0.1.0",
    "server": null,
    "smt": true,
    "somaxconn": 4096
  },
  "results": [],
  "warnings": [
    "w"
  ],
  "stopped": false,
  "anomalies": []
}"#;
        assert_eq!(text, expected);
        let back: MicroReport = serde_json::from_str(&text).unwrap();
        assert_eq!(back, report);
        assert_eq!(back.os().as_deref(), Some("Linux 6.1.0 (Debian 12)"));
    }

    #[test]
    fn an_environment_with_fields_left_out_still_loads() {
        let doc = r#"{"label": "vm", "wall_s": 2.0, "environment": {"kernel": "6.18"}, "results": []}"#;
        let report: MicroReport = serde_json::from_str(doc).unwrap();
        assert_eq!(report.environment.kernel.as_deref(), Some("6.18"));
        assert_eq!(report.environment.hostname, None);
        assert_eq!(report.os().as_deref(), Some("Linux 6.18"));
        let bad = r#"{"label": "vm", "wall_s": 2.0, "environment": {"logical_cores": "four"}, "results": []}"#;
        assert!(serde_json::from_str::<MicroReport>(bad).is_err());
    }

    #[test]
    fn unit_serializes_snake_case() {
        assert_eq!(serde_json::to_string(&Unit::MbPerS).unwrap(), "\"mb_per_s\"");
        assert!(Unit::Mflops.higher_is_better());
        assert!(!Unit::Us.higher_is_better());
    }
}
