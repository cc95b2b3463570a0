//! Verdicts sharpened by `--profile`'s stacks: lock contention (and a
//! database's own lock waits) names its call sites with their share of
//! thread time, CPU-bound verdicts the
//! hottest functions (and a spin loop when one burns the CPU), as evidence
//! figures; `next` points to the step's flame graph.

use super::{Evidence, Verdict, VerdictKind};
use crate::profile::{lock_sites, profile_at, spin_sites, top_own, top_self, LockSite};
use scalelab_core::sample::ProfileSample;
use scalelab_core::Run;

/// A lock site or function below this share is not named.
const NAMED_SHARE: f64 = 0.02;

fn flame_graph_hint(run: &Run, concurrency: u32, off_cpu: bool) -> String {
    format!(
        "the step's flame graph in `scalelab report {}`, and `scalelab profile {} --step {concurrency}{}`",
        run.id,
        run.id,
        if off_cpu { " --off-cpu" } else { "" }
    )
}

/// The top three lock sites of a step's off-CPU stacks that hold at least
/// [`NAMED_SHARE`] of the thread time (none without off-CPU stacks).
fn named_lock_sites(p: &ProfileSample) -> Vec<LockSite> {
    let Some(off) = &p.off_cpu else { return Vec::new() };
    lock_sites(off, 3).into_iter().filter(|s| s.thread_share >= NAMED_SHARE).collect()
}

/// The advice the rules give when a step has no stacks.
const RERUN: &str = "re-run with `--profile`";

/// `next` for a run that asked for `--profile` and got no stacks (`why`):
/// "re-run with `--profile`" would contradict the run, so it says what
/// stopped the profile first. `None` when `next` does not advise it.
fn without_the_profile(next: &str, why: &str) -> Option<String> {
    next.contains(RERUN)
        .then(|| next.replace(RERUN, &format!("make `--profile` work (it took no stacks in this run: {why}), then re-run with it")))
}

/// Adds the profile's figures to the verdicts whose step was profiled; in a
/// run whose `--profile` took no stacks, says why where a verdict would
/// advise profiling.
pub fn add_profile_evidence(run: &Run, verdicts: &mut [Verdict]) {
    if let Some((_, why)) = run.notes.iter().find(|(s, _)| s == scalelab_core::Source::Profile.name()) {
        for v in verdicts.iter_mut() {
            if let Some(next) = without_the_profile(&v.next, why) {
                v.next = next;
            }
        }
    }
    for v in verdicts.iter_mut() {
        let Some(p) = profile_at(run, v.concurrency) else { continue };
        match v.kind {
            VerdictKind::LockContention => {
                let sites = named_lock_sites(p);
                let Some(top) = sites.first() else { continue };
                v.headline.push_str(&format!("; the lock is taken in `{}` (via `{}`)", top.site, top.via));
                for s in &sites {
                    v.evidence.push(Evidence::new(
                        format!("futex wait at {} -> {}", s.site, s.via),
                        100.0 * s.thread_share,
                        "% of thread time",
                    ));
                    v.evidence.push(Evidence::new(format!("futex waits at {}", s.site), s.waits_per_s, "waits/s"));
                }
                v.next = format!(
                    "{}; then who holds it: `perf lock contention -b`, or for a database its own lock views",
                    flame_graph_hint(run, v.concurrency, true)
                );
            }
            VerdictKind::DbContention => {
                // The database's own wait figures say that it waits; the
                // stacks say where in its code (`heap_update ->
                // XactLockTableWait`, `_bt_relandgetbuf -> LWLockAcquire`).
                let sites = named_lock_sites(p);
                let Some(top) = sites.first() else { continue };
                v.headline.push_str(&format!("; its threads wait in `{}` (via `{}`)", top.site, top.via));
                for s in &sites {
                    v.evidence.push(Evidence::new(
                        format!("lock wait at {} -> {}", s.site, s.via),
                        100.0 * s.thread_share,
                        "% of thread time",
                    ));
                }
                let hint = flame_graph_hint(run, v.concurrency, true);
                v.next = if v.next.is_empty() { hint } else { format!("{hint}; then {}", v.next) };
            }
            VerdictKind::CpuBoundUser | VerdictKind::CpuBoundKernel | VerdictKind::CpuBoundMixed | VerdictKind::SingleHotThread => {
                let Some(on) = &p.on_cpu else { continue };
                let own: Vec<_> = top_own(on, 3).into_iter().filter(|f| f.share >= NAMED_SHARE).collect();
                if let Some(top) = own.first() {
                    v.headline.push_str(&format!("; hottest function `{}`", top.frame));
                }
                for f in &own {
                    v.evidence.push(Evidence::new(format!("on-CPU in {}", f.frame), 100.0 * f.share, "% of samples"));
                }
                let kernel = top_self(on, 20).into_iter().filter(|f| f.frame.ends_with("_[k]") && f.share >= NAMED_SHARE).take(2);
                for f in kernel {
                    v.evidence.push(Evidence::new(
                        format!("on-CPU in kernel {}", f.frame.trim_end_matches("_[k]")),
                        100.0 * f.share,
                        "% of samples",
                    ));
                }
                if let Some(spin) = spin_sites(on, 1).into_iter().find(|f| f.share >= NAMED_SHARE) {
                    v.headline.push_str(&format!("; `{}` spins, burning {:.0} % of the samples", spin.frame, 100.0 * spin.share));
                    v.evidence.push(Evidence::new(format!("busy-waiting in {}", spin.frame), 100.0 * spin.share, "% of samples"));
                }
                if !own.is_empty() {
                    v.next = flame_graph_hint(run, v.concurrency, false);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::without_the_profile;

    /// `--profile` given and perf missing: the advice names why, and does
    /// not tell the user to do what they did.
    #[test]
    fn a_run_whose_profile_failed_is_not_told_to_profile() {
        let next = "profile the server's code: re-run with `--profile` (the hottest functions named here; docs/profiles.md) or `perf record -g -p PID`";
        let got = without_the_profile(next, "perf not found: SCALELAB_PERF=/x").unwrap();
        assert_eq!(
            got,
            "profile the server's code: make `--profile` work (it took no stacks in this run: perf not found: SCALELAB_PERF=/x), then re-run with it (the hottest functions named here; docs/profiles.md) or `perf record -g -p PID`"
        );
        assert_eq!(without_the_profile("look at the disk", "perf not found"), None);
    }
}
