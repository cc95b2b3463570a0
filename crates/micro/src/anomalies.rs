//! Figures that contradict the memory hierarchy or each other. A latency of
//! an outer level can only be larger than an inner one's (L1 < L2 < LLC <
//! main memory); creating a process and exec'ing a program costs at least
//! the fork alone; a 1-byte read is at least a null syscall. A run that says
//! otherwise measured something else than it names (a cache level larger
//! than the buffer assumed, a busy machine, a frequency change), so the
//! figures are flagged, never silently printed.

use crate::model::MicroRun;
use serde::{Deserialize, Serialize};

/// One contradiction: the figures involved and what is wrong.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Anomaly {
    /// The ids of the figures that disagree (catalog ids).
    pub ids: Vec<String>,
    pub message: String,
}

/// The memory hierarchy, innermost first: each latency must not exceed the next.
const HIERARCHY: [(&str, &str); 4] =
    [("mem_lat_l1", "L1"), ("mem_lat_l2", "L2"), ("mem_lat_llc", "last-level cache"), ("mem_lat_main", "main memory")];

/// (smaller, larger, why): `smaller` includes less work than `larger`, so it
/// must not be above it by more than [`NOISE`] (these are separate
/// measurements, each with its own spread).
const ORDERED: [(&str, &str, &str); 3] = [
    ("fork_exit", "fork_exec", "fork + exec includes the fork"),
    ("fork_exit", "fork_sh", "fork + /bin/sh includes the fork"),
    ("null_call", "null_io", "a 1-byte read or write includes a system call"),
];

/// Spread tolerated between two separately measured figures before one that
/// includes the other's work reading lower is called a contradiction.
pub const NOISE: f64 = 0.10;

/// Every contradiction among `run`'s medians.
pub fn check(run: &MicroRun) -> Vec<Anomaly> {
    let mut out = Vec::new();
    // Each measured level against every outer measured level, so a missing
    // middle level does not hide a contradiction.
    for (i, (inner, inner_name)) in HIERARCHY.iter().enumerate() {
        for (outer, outer_name) in &HIERARCHY[i + 1..] {
            if let (Some(a), Some(b)) = (run.median(inner), run.median(outer)) {
                if a > b {
                    out.push(Anomaly {
                        ids: vec![inner.to_string(), outer.to_string()],
                        message: format!(
                            "{inner_name} latency ({a:.1} ns) is above {outer_name} latency ({b:.1} ns): an inner level cannot be slower; \
                             the buffer sizes probed the same level, or the machine was busy"
                        ),
                    });
                }
            }
        }
    }
    for (small, large, why) in ORDERED {
        if let (Some(a), Some(b)) = (run.median(small), run.median(large)) {
            if a > b * (1.0 + NOISE) {
                out.push(Anomaly {
                    ids: vec![small.to_string(), large.to_string()],
                    message: format!(
                        "{small} ({a:.2} us) is above {large} ({b:.2} us), yet {why}: the machine was busy or the figures are wrong"
                    ),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::summarize;
    use crate::model::{Group, Unit};

    fn run(figures: &[(&str, f64)]) -> MicroRun {
        let results = figures.iter().map(|(id, v)| summarize(id, Group::Memory, id, Unit::Ns, &[*v])).collect();
        MicroRun { results, ..Default::default() }
    }

    #[test]
    fn llc_above_main_memory_is_flagged() {
        // `micro --quick` printed this on the development VM.
        let a = check(&run(&[("mem_lat_l1", 1.2), ("mem_lat_l2", 4.1), ("mem_lat_llc", 271.0), ("mem_lat_main", 267.0)]));
        assert_eq!(a.len(), 1, "{a:?}");
        assert_eq!(a[0].ids, ["mem_lat_llc", "mem_lat_main"]);
        assert!(
            a[0].message.starts_with("last-level cache latency (271.0 ns) is above main memory latency (267.0 ns)"),
            "{}",
            a[0].message
        );
    }

    #[test]
    fn a_sane_hierarchy_and_sane_processes_are_quiet() {
        let r = run(&[
            ("mem_lat_l1", 1.2),
            ("mem_lat_l2", 4.1),
            ("mem_lat_llc", 14.0),
            ("mem_lat_main", 90.0),
            ("fork_exit", 150.0),
            ("fork_exec", 600.0),
            ("null_call", 0.1),
            ("null_io", 0.105),
        ]);
        assert!(check(&r).is_empty());
    }

    #[test]
    fn l1_above_l2_with_llc_missing_and_processes_out_of_order() {
        let a =
            check(&run(&[("mem_lat_l1", 5.0), ("mem_lat_l2", 4.0), ("mem_lat_main", 90.0), ("fork_exit", 700.0), ("fork_exec", 600.0)]));
        let ids: Vec<_> = a.iter().map(|x| x.ids.join(">")).collect();
        assert_eq!(ids, ["mem_lat_l1>mem_lat_l2", "fork_exit>fork_exec"]);
        // Within the noise allowance: not flagged.
        assert!(check(&run(&[("fork_exit", 640.0), ("fork_exec", 600.0)])).is_empty());
    }
}
