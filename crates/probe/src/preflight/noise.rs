//! The machine's noise before the load: a fixed user-space CPU loop timed
//! again and again on the calling thread, and the steal over those repeats
//! (`/proc/stat`, from the injectable root). `scalelab_analyze::preflight`
//! turns the times into a coefficient of variation and the `machine.noise`
//! estimate; the load and CPU pressure it also weighs are read with the
//! other machine facts.

use crate::Roots;
use scalelab_core::preflight::{NoiseSample, Reading};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// How long one repeat of the loop should take: long enough that the
/// clock's resolution and one timer interrupt are small beside it, short
/// enough for dozens of repeats in a fraction of a second.
pub const REPEAT_TARGET: Duration = Duration::from_millis(3);

/// How many repeats, and how long all of them may take together.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Repeats wanted (a coefficient of variation from 40 is good to a
    /// fraction of itself).
    pub repeats: usize,
    /// Repeats made however long they take (a CV needs a few).
    pub min_repeats: usize,
    /// The repeats stop once their times add up to this (a loaded machine
    /// stretches each repeat), so the preflight stays fast.
    pub max_total: Duration,
}

impl Default for Budget {
    /// 40 repeats of ~3 ms, at most 250 ms (about 130 ms on a quiet machine).
    fn default() -> Self {
        Budget { repeats: 40, min_repeats: 10, max_total: Duration::from_millis(250) }
    }
}

/// The fixed work: a floating-point chain through the C library's `sin`,
/// `iters` steps from the same start, so every repeat does the same work.
/// The time is spent in libm, optimized whatever this crate's build: a
/// loop of our own code was 2-4 times noisier in a debug build than in a
/// release one (its stack spills), which would make the tests' figures
/// unlike the users'. `black_box` on the count and the result keeps the
/// compiler from folding or dropping it; each step needs the last.
pub fn kernel(iters: u64) -> u64 {
    let mut x: f64 = 0.5;
    for _ in 0..black_box(iters) {
        x = (x * 1.7 + 0.3).sin();
    }
    black_box(x.to_bits())
}

fn timed(iters: u64) -> Duration {
    let t = Instant::now();
    kernel(iters);
    t.elapsed()
}

/// The loop's iteration count for about [`REPEAT_TARGET`] on this CPU:
/// doubled until one run takes 0.5 ms, then scaled by the fastest of three
/// runs of that size (a preempted run would shrink the loop) — a few ms.
pub fn calibrate() -> u64 {
    let mut iters: u64 = 1 << 12;
    let mut took = timed(iters);
    while took < Duration::from_micros(500) && iters < 1 << 40 {
        iters *= 2;
        took = timed(iters);
    }
    took = took.min(timed(iters)).min(timed(iters));
    let scale = REPEAT_TARGET.as_secs_f64() / took.as_secs_f64().max(1e-9);
    ((iters as f64 * scale) as u64).max(1)
}

/// Measures the live machine: calibrates the loop, runs it once to warm
/// caches and the clock, then times [`Budget::default`] repeats on the
/// calling thread (about 0.15 s when quiet, at most ~0.3 s in all).
pub fn measure(roots: &Roots) -> NoiseSample {
    let iters = calibrate();
    timed(iters);
    measure_with(roots, Budget::default(), || timed(iters))
}

/// Times `repeat` up to `budget.repeats` times (stopping early once the
/// times add up to `budget.max_total`, but not before `budget.min_repeats`),
/// reading `/proc/stat` before the first and after the last for the steal
/// in between. Tests pass a `repeat` that returns set times and moves the
/// fake `/proc/stat` on.
pub fn measure_with(roots: &Roots, budget: Budget, mut repeat: impl FnMut() -> Duration) -> NoiseSample {
    let before = ticks(roots);
    let mut loop_us = Vec::with_capacity(budget.repeats);
    let mut total = Duration::ZERO;
    while loop_us.len() < budget.repeats && (loop_us.len() < budget.min_repeats || total < budget.max_total) {
        let took = repeat();
        total += took;
        loop_us.push(took.as_secs_f64() * 1e6);
    }
    let after = ticks(roots);
    let steal_ticks = before.and_then(|(s0, t0)| {
        let (s1, t1) = after?;
        let path = roots.proc.join("stat");
        if s1 < s0 || t1 < t0 {
            return Err(format!("{}: the cpu line went backwards during the loop", path.display()));
        }
        if t1 == t0 {
            return Err(format!("{}: no CPU tick elapsed during the loop", path.display()));
        }
        Ok((s1 - s0, t1 - t0))
    });
    NoiseSample { loop_us, steal_ticks }
}

/// Steal ticks and all ticks of the `cpu` line of `/proc/stat`.
fn ticks(roots: &Roots) -> Reading<(u64, u64)> {
    super::machine::stat(roots).0
}
