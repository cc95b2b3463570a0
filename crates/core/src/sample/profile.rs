//! [`ProfileSample`]: the on-CPU and off-CPU call stacks of the server over
//! one step's window, folded (`root;...;leaf` with a value), as `probe`'s
//! profiler takes them with `perf` and the store keeps them (kind `profile`).
//! Top frames, lock sites and differences are derived in `analyze::profile`.

use serde::{Deserialize, Serialize};

/// The profiles of one step's window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfileSample {
    /// The step (0-based) whose window this covers.
    pub step: usize,
    /// When the capture began, Unix milliseconds.
    pub unix_ms: i64,
    /// Where the threads ran: `cpu-clock` samples; None when not taken.
    pub on_cpu: Option<StackProfile>,
    /// Where and how long they slept (`sched:sched_switch` with switch-in
    /// times); None when not taken.
    pub off_cpu: Option<StackProfile>,
    /// CPU time `perf record` used over this window, s (its overhead).
    #[serde(default)]
    pub perf_cpu_s: f64,
}

/// Folded stacks of one kind over one capture.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StackProfile {
    /// Length of the capture, ns.
    pub duration_ns: u64,
    /// The server's threads (all its processes) when the capture began.
    pub threads: u32,
    /// How user stacks were unwound: `dwarf` or `fp` (frame pointers).
    pub unwind: String,
    /// Sampling rate per CPU (on-CPU), Hz; 0 for off-CPU (see `sampled_every`).
    pub rate_hz: u32,
    /// Events perf reported lost (its buffers overflowed).
    pub lost: u64,
    /// Off-CPU: one context switch in this many was taken with its stack,
    /// and the values and counts are scaled by it (0 or 1: every switch).
    #[serde(default)]
    pub sampled_every: u32,
    /// Stacks, highest value first.
    pub stacks: Vec<FoldedStack>,
}

/// One distinct call stack: frames root first, `;`-separated (a `;` inside
/// a name is written `:`), unresolved frames as `module+0xoffset`. Off-CPU
/// stacks end in the thread state they slept in: `[S]` sleep, `[D]` disk,
/// `[R]` preempted (waiting for a CPU).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoldedStack {
    pub stack: String,
    /// On-CPU: samples; off-CPU: ns asleep.
    pub value: u64,
    /// Events: samples, or times the threads went to sleep here.
    pub count: u64,
}

impl StackProfile {
    /// The sum of the stacks' values.
    pub fn total(&self) -> u64 {
        self.stacks.iter().map(|s| s.value).sum()
    }

    /// Thread time the capture covered, ns (threads × duration).
    pub fn thread_ns(&self) -> u64 {
        self.duration_ns.saturating_mul(u64::from(self.threads))
    }
}

impl StackProfile {
    /// Several captures as one (a watch's windows): values and counts of the
    /// same stack added, lengths added, the most threads any had. None for none.
    pub fn merged<'a>(parts: impl IntoIterator<Item = &'a StackProfile>) -> Option<StackProfile> {
        let mut parts = parts.into_iter();
        let mut out = parts.next()?.clone();
        let mut by_stack: std::collections::BTreeMap<String, (u64, u64)> =
            out.stacks.drain(..).map(|s| (s.stack, (s.value, s.count))).collect();
        for p in parts {
            out.duration_ns += p.duration_ns;
            out.threads = out.threads.max(p.threads);
            out.lost += p.lost;
            for s in &p.stacks {
                let e = by_stack.entry(s.stack.clone()).or_default();
                e.0 += s.value;
                e.1 += s.count;
            }
        }
        out.stacks = by_stack.into_iter().map(|(stack, (value, count))| FoldedStack { stack, value, count }).collect();
        out.stacks.sort_by(|a, b| b.value.cmp(&a.value).then_with(|| a.stack.cmp(&b.stack)));
        Some(out)
    }
}

impl ProfileSample {
    /// A watch's windows as one profile of the whole watch (step 0, from the first window).
    pub fn merged(samples: &[ProfileSample]) -> Option<ProfileSample> {
        let first = samples.iter().min_by_key(|p| p.step)?;
        Some(ProfileSample {
            step: 0,
            unix_ms: first.unix_ms,
            on_cpu: StackProfile::merged(samples.iter().filter_map(|p| p.on_cpu.as_ref())),
            off_cpu: StackProfile::merged(samples.iter().filter_map(|p| p.off_cpu.as_ref())),
            perf_cpu_s: samples.iter().map(|p| p.perf_cpu_s).sum(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_merge_into_one_profile() {
        let p = |d, stacks: &[(&str, u64)]| StackProfile {
            duration_ns: d,
            threads: 3,
            unwind: "dwarf".into(),
            rate_hz: 99,
            lost: 1,
            sampled_every: 0,
            stacks: stacks.iter().map(|(s, v)| FoldedStack { stack: s.to_string(), value: *v, count: *v }).collect(),
        };
        let m = StackProfile::merged([&p(10, &[("a;b", 5), ("a;c", 1)]), &p(20, &[("a;c", 7)])]).unwrap();
        assert_eq!((m.duration_ns, m.lost, m.total()), (30, 2, 13));
        assert_eq!(m.stacks[0], FoldedStack { stack: "a;c".into(), value: 8, count: 8 });
        assert!(StackProfile::merged([]).is_none());
    }
}
