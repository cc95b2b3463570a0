//! The order of a sweep's windows when its levels are measured more than
//! once: `--repeats` (rounds of every level, each round in its own shuffled
//! order), `--versus` (two targets interleaved in ABBA blocks at each
//! level) and `--until-precision` (rounds of the levels whose interval is
//! still too wide). The order is a pure function of the levels and a
//! recorded seed, so a run can say exactly how it was scheduled.
//!
//! Why shuffle: a machine drifts (thermal, a neighbour, page cache). With
//! levels always in ascending order, drift lines up with concurrency and
//! reads as scaling; shuffled per round, it spreads over every level as
//! noise, which the repeats' interval then shows. Why ABBA: of two
//! targets measured A B B A, a drift linear in time hits both alike.

use scalelab_core::StepPlan;
use serde::{Deserialize, Serialize};

/// A small deterministic generator (splitmix64): the order must be the
/// same for a seed on every build and platform, which a crate's RNG does
/// not promise across versions.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Fisher–Yates.
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

/// The order of the levels' indices in round `round` (0-based) for `seed`:
/// a permutation of `0..n`, different per round.
pub fn round_order(n: usize, round: u32, seed: u64) -> Vec<usize> {
    let mut rng = SplitMix(seed ^ u64::from(round).wrapping_mul(0xA076_1D64_78BD_642F));
    let mut order: Vec<usize> = (0..n).collect();
    rng.shuffle(&mut order);
    order
}

/// `--repeats N`: every level `rounds` times, in rounds; with more than
/// one round each round's order is shuffled (from `seed`), so no level is
/// always measured first, last or after the same neighbour. One round
/// keeps the levels as given.
pub fn rounds(levels: &[StepPlan], rounds: u32, seed: u64) -> Vec<StepPlan> {
    if rounds <= 1 {
        return levels.to_vec();
    }
    (0..rounds).flat_map(|r| round_order(levels.len(), r, seed).into_iter().map(|i| levels[i].clone())).collect()
}

/// One of the two targets of an interleaved comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Arm {
    A,
    B,
}

impl Arm {
    /// "A" or "B".
    pub fn name(self) -> &'static str {
        match self {
            Arm::A => "A",
            Arm::B => "B",
        }
    }
}

/// `--versus`: `blocks` ABBA blocks at every level. Block by block, the
/// levels in a shuffled order (from `seed`), and at each level four windows
/// A B B A: each arm gets two windows per level and block, and the k-th
/// window of A at a level pairs with the k-th of B (adjacent in time).
pub fn abba(levels: &[StepPlan], blocks: u32, seed: u64) -> Vec<(Arm, StepPlan)> {
    let mut out = Vec::new();
    for b in 0..blocks {
        for i in round_order(levels.len(), b, seed) {
            for arm in [Arm::A, Arm::B, Arm::B, Arm::A] {
                out.push((arm, levels[i].clone()));
            }
        }
    }
    out
}

/// ABBA blocks for `--versus` with `--repeats N`: each arm measured N
/// times per level (two windows per block), and at least two blocks.
pub fn versus_blocks(repeats: u32) -> u32 {
    repeats.div_ceil(2).max(2)
}

/// What ended the repeats of a level under `--until-precision`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LevelStop {
    /// Its interval reached the precision asked for.
    Precision,
    /// `--max-repeats` windows were measured, the interval still wider.
    MaxRepeats,
    /// `--max-time` would have been passed by another window.
    MaxTime,
    /// The sweep was stopped (SIGINT, a failed target) first.
    Interrupted,
}

impl LevelStop {
    /// The name stored and shown.
    pub fn name(self) -> &'static str {
        match self {
            LevelStop::Precision => "precision",
            LevelStop::MaxRepeats => "max-repeats",
            LevelStop::MaxTime => "max-time",
            LevelStop::Interrupted => "interrupted",
        }
    }
}

/// `--until-precision`: repeat each level until its throughput's 95 %
/// interval is within ±`target_pct` %, in rounds (each shuffled), never
/// fewer than `min_repeats` windows (an interval of 2 rests on one degree
/// of freedom) nor more than `max_repeats`.
#[derive(Clone, Debug)]
pub struct Precision {
    pub target_pct: f64,
    pub min_repeats: u32,
    pub max_repeats: u32,
    pub seed: u64,
    /// Throughput of each level's windows so far.
    measured: Vec<Vec<f64>>,
    /// Why each level stopped (None: still repeating).
    stops: Vec<Option<LevelStop>>,
    round: u32,
}

impl Precision {
    /// The schedule for `levels` levels.
    pub fn new(levels: usize, target_pct: f64, min_repeats: u32, max_repeats: u32, seed: u64) -> Self {
        Precision {
            target_pct,
            min_repeats: min_repeats.min(max_repeats),
            max_repeats,
            seed,
            measured: vec![Vec::new(); levels],
            stops: vec![None; levels],
            round: 0,
        }
    }

    /// Records a window of level `level`.
    pub fn record(&mut self, level: usize, throughput: f64) {
        self.measured[level].push(throughput);
    }

    /// The windows measured so far at each level.
    pub fn measured(&self) -> &[Vec<f64>] {
        &self.measured
    }

    /// Why each level stopped, once it has.
    pub fn stops(&self) -> &[Option<LevelStop>] {
        &self.stops
    }

    /// The next round: the levels (indices, in shuffled order) that need
    /// another window. `half_width_pct` gives a level's interval half-width
    /// in % from its windows (None: no interval yet). Levels that are done
    /// get their [`LevelStop`]; an empty round means every level is.
    pub fn next_round(&mut self, half_width_pct: &dyn Fn(&[f64]) -> Option<f64>) -> Vec<usize> {
        for (i, xs) in self.measured.iter().enumerate() {
            if self.stops[i].is_some() {
                continue;
            }
            let n = xs.len() as u32;
            let precise = n >= self.min_repeats && half_width_pct(xs).is_some_and(|h| h <= self.target_pct);
            if precise {
                self.stops[i] = Some(LevelStop::Precision);
            } else if n >= self.max_repeats {
                self.stops[i] = Some(LevelStop::MaxRepeats);
            }
        }
        let order = round_order(self.measured.len(), self.round, self.seed);
        self.round += 1;
        order.into_iter().filter(|i| self.stops[*i].is_none()).collect()
    }

    /// Every level still repeating stops for `why` (the time bound, an interruption).
    pub fn stop_all(&mut self, why: LevelStop) {
        for s in self.stops.iter_mut().filter(|s| s.is_none()) {
            *s = Some(why);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn levels(cs: &[u32]) -> Vec<StepPlan> {
        cs.iter()
            .map(|&c| StepPlan { concurrency: c, warmup_s: 0.0, window_s: 1.0, pause_s: 0.0, think_time_s: 0.0, open_loop: None })
            .collect()
    }

    fn conc(v: &[StepPlan]) -> Vec<u32> {
        v.iter().map(|s| s.concurrency).collect()
    }

    #[test]
    fn one_round_keeps_the_order_and_more_rounds_shuffle_each_from_the_seed() {
        let l = levels(&[1, 2, 5, 10, 20, 35, 50]);
        assert_eq!(conc(&rounds(&l, 1, 7)), vec![1, 2, 5, 10, 20, 35, 50]);
        let r = rounds(&l, 3, 7);
        assert_eq!(r.len(), 21);
        for chunk in r.chunks(7) {
            let mut c = conc(chunk);
            c.sort();
            assert_eq!(c, vec![1, 2, 5, 10, 20, 35, 50], "every round holds every level once");
        }
        assert_ne!(conc(&r[0..7]), conc(&r[7..14]), "rounds are ordered differently");
        assert_eq!(conc(&rounds(&l, 3, 7)), conc(&r), "the seed gives the order back");
        assert_ne!(conc(&rounds(&l, 3, 8)), conc(&r), "another seed, another order");
    }

    #[test]
    fn abba_gives_each_arm_two_adjacent_windows_per_level_and_block() {
        let l = levels(&[1, 4]);
        let s = abba(&l, 2, 1);
        assert_eq!(s.len(), 16);
        for block in s.chunks(4) {
            let arms: Vec<Arm> = block.iter().map(|(a, _)| *a).collect();
            assert_eq!(arms, vec![Arm::A, Arm::B, Arm::B, Arm::A]);
            assert!(block.iter().all(|(_, p)| p.concurrency == block[0].1.concurrency), "a block stays at one level");
        }
        for c in [1, 4] {
            assert_eq!(s.iter().filter(|(a, p)| *a == Arm::A && p.concurrency == c).count(), 4);
        }
        assert_eq!(versus_blocks(1), 2);
        assert_eq!(versus_blocks(5), 3);
        assert_eq!(versus_blocks(8), 4);
    }

    #[test]
    fn precision_repeats_only_the_wide_levels_and_says_why_each_stopped() {
        let mut p = Precision::new(3, 2.0, 3, 5, 9);
        // A crude width: the spread in % of the mean.
        let width = |xs: &[f64]| -> Option<f64> {
            (xs.len() >= 2).then(|| {
                let m = xs.iter().sum::<f64>() / xs.len() as f64;
                100.0 * (xs.iter().cloned().fold(f64::MIN, f64::max) - xs.iter().cloned().fold(f64::MAX, f64::min)) / m
            })
        };
        let mut windows = 0;
        loop {
            let round = p.next_round(&width);
            if round.is_empty() {
                break;
            }
            for i in round {
                windows += 1;
                // Level 0 is steady, level 1 noisy for ever, level 2 noisy then steady.
                let n = p.measured()[i].len();
                let x = match i {
                    0 => 100.0,
                    1 => 100.0 + 10.0 * (n % 2) as f64,
                    _ if n < 2 => 50.0 + 5.0 * n as f64,
                    _ => 55.0,
                };
                p.record(i, x);
            }
            assert!(windows < 50, "bounded");
        }
        assert_eq!(p.stops(), &[Some(LevelStop::Precision), Some(LevelStop::MaxRepeats), Some(LevelStop::MaxRepeats)]);
        assert_eq!(p.measured().iter().map(Vec::len).collect::<Vec<_>>(), vec![3, 5, 5]);
        let mut q = Precision::new(2, 2.0, 3, 10, 1);
        assert_eq!(q.next_round(&width).len(), 2);
        q.stop_all(LevelStop::MaxTime);
        assert!(q.next_round(&width).is_empty());
        assert_eq!(q.stops(), &[Some(LevelStop::MaxTime), Some(LevelStop::MaxTime)]);
    }
}
