//! The method shared by every benchmark: calibrate the loop count so one
//! measurement lasts a few milliseconds, repeat, summarize (median, min, max,
//! coefficient of variation), and turn the outcome into a [`MicroResult`].

use crate::catalog;
use crate::helper::Forker;
use crate::model::{Group, MicroResult, Unit};
pub(crate) use crate::skip::{Skip, Stopped, Values};
use crate::sys::Machine;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// A coefficient of variation above this gets a warning on the result: the
/// issue's quality target for latencies on a quiet machine.
pub const WIDE_CV: f64 = 0.05;

/// Seconds elapsed since `t`.
pub(crate) fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// Everything a benchmark needs to know about how to measure.
pub(crate) struct Ctx<'a> {
    pub quick: bool,
    pub repeats: u32,
    /// Minimum duration of one calibrated measurement, in seconds.
    pub target_s: f64,
    pub machine: &'a Machine,
    stop: &'a AtomicBool,
}

impl<'a> Ctx<'a> {
    pub fn new(quick: bool, repeats: u32, machine: &'a Machine, stop: &'a AtomicBool) -> Self {
        Ctx {
            quick,
            repeats,
            // A few ms: long enough that clock reads and loop setup vanish,
            // short enough for 11 repeats of ~100 figures to fit in 60 s.
            target_s: if quick { 0.003 } else { 0.005 },
            machine,
            stop,
        }
    }

    /// True once the user asked to stop.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// `Err(Stopped)` once the user asked to stop.
    pub fn check(&self) -> Result<(), Skip> {
        if self.stopped() {
            Err(Skip::Stopped)
        } else {
            Ok(())
        }
    }

    /// Finds a loop count `n` for which `f(n)` (which runs n iterations and
    /// returns the seconds they took) lasts at least `target_s`.
    pub fn calibrate(&self, f: &mut dyn FnMut(u64) -> Result<f64, Skip>) -> Result<u64, Skip> {
        let mut n: u64 = 1;
        loop {
            self.check()?;
            let t = f(n)?;
            if t >= self.target_s || n >= 1 << 36 {
                return Ok(n);
            }
            let grow = if t <= 0.0 { 100.0 } else { (self.target_s * 1.15 / t).clamp(1.5, 100.0) };
            n = ((n as f64) * grow).ceil() as u64;
        }
    }

    /// Calibrates, then returns `repeats` samples of seconds per iteration.
    pub fn per_iter(&self, mut f: impl FnMut(u64) -> Result<f64, Skip>) -> Result<Vec<f64>, Skip> {
        let n = self.calibrate(&mut f)?;
        let mut out = Vec::with_capacity(self.repeats as usize);
        for _ in 0..self.repeats {
            self.check()?;
            out.push(f(n)? / n as f64);
        }
        Ok(out)
    }
}

/// Multiplies every sample (e.g. seconds → microseconds).
pub(crate) fn scale(v: Vec<f64>, k: f64) -> Vec<f64> {
    v.into_iter().map(|x| x * k).collect()
}

/// Median of the samples (mean of the middle two for an even count).
pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    Some(if s.len() % 2 == 1 { s[m] } else { (s[m - 1] + s[m]) / 2.0 })
}

/// Coefficient of variation: sample standard deviation over the mean.
pub fn cv(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return Some(0.0);
    }
    if mean.abs() < f64::MIN_POSITIVE {
        return None;
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some(var.sqrt() / mean.abs())
}

/// Builds the result of a measured figure: median, spread, and a warning when
/// the spread is wide. A non-positive or non-finite median is not a figure.
pub(crate) fn summarize(id: &str, group: Group, name: &str, unit: Unit, v: &[f64]) -> MicroResult {
    let med = median(v).filter(|m| m.is_finite());
    match med {
        Some(m) if m > 0.0 => {
            let min = v.iter().copied().fold(f64::INFINITY, f64::min);
            let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let cv = cv(v).filter(|c| c.is_finite());
            let warning = cv.filter(|&c| c > WIDE_CV).map(|c| {
                format!(
                    "wide spread: cv {:.1}% over {} samples (min {}, max {}); the machine may be busy",
                    c * 100.0,
                    v.len(),
                    fmt_num(min),
                    fmt_num(max)
                )
            });
            MicroResult {
                id: id.to_string(),
                group,
                name: name.to_string(),
                median: Some(m),
                min: Some(min),
                max: Some(max),
                cv,
                unit,
                samples: v.len() as u32,
                unavailable: None,
                warning,
            }
        }
        _ => MicroResult::unavailable(
            id,
            group,
            name,
            unit,
            format!(
                "no positive figure: median {} (the cost is below what this method resolves)",
                med.map(fmt_num).unwrap_or_else(|| "undefined".into())
            ),
        ),
    }
}

/// A number with about three significant digits, the way lmbench prints.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// Collects results as benchmarks finish and hands each to the caller's
/// progress callback.
pub(crate) struct Out<'p> {
    pub results: Vec<MicroResult>,
    progress: &'p mut dyn FnMut(&MicroResult),
}

impl<'p> Out<'p> {
    pub fn new(progress: &'p mut dyn FnMut(&MicroResult)) -> Self {
        Out { results: Vec::new(), progress }
    }

    /// Records the figure `id` (a catalog id) from its samples, or its
    /// unavailability; returns `Err(Stopped)` if the suite must stop. A
    /// benchmark that failed while `stop` is set (e.g. its children died of
    /// the same Ctrl-C) counts as stopped, not unavailable.
    pub fn put(&mut self, ctx: &Ctx, id: &str, values: Values) -> Result<(), Stopped> {
        let info = catalog::info(id).unwrap_or_else(|| panic!("{id} is not in the catalog"));
        self.put_named(ctx, id, info.group, info.name, info.unit, values)
    }

    /// Like [`Out::put`] for a process-creation figure: when it was measured
    /// in this process (no helper), its warning says so and why.
    pub fn put_forked(&mut self, ctx: &Ctx, id: &str, values: Values, at: Forker) -> Result<(), Stopped> {
        self.put(ctx, id, values)?;
        if let (Forker::InProcess(why), Some(r)) = (at, self.results.last_mut()) {
            if r.median.is_some() {
                let note = format!("forked from scalelab's own process, not a small helper ({why}): includes its address space");
                r.warning = Some(match r.warning.take() {
                    Some(w) => format!("{w}; {note}"),
                    None => note,
                });
            }
        }
        Ok(())
    }

    /// Like [`Out::put`] for ids outside the catalog (memory-curve points).
    pub fn put_named(&mut self, ctx: &Ctx, id: &str, group: Group, name: &str, unit: Unit, values: Values) -> Result<(), Stopped> {
        let result = match values {
            Err(Skip::Stopped) => return Err(Stopped),
            Err(Skip::Unavailable(_)) if ctx.stopped() => return Err(Stopped),
            Err(Skip::Unavailable(why)) => MicroResult::unavailable(id, group, name, unit, why),
            Ok(v) => summarize(id, group, name, unit, &v),
        };
        (self.progress)(&result);
        self.results.push(result);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn cv_of_constant_is_zero_and_spread_warns() {
        assert_eq!(cv(&[2.0, 2.0, 2.0]), Some(0.0));
        let r = summarize("x", Group::Procs, "x", Unit::Us, &[1.0, 1.0, 1.0]);
        assert!(r.warning.is_none());
        let r = summarize("x", Group::Procs, "x", Unit::Us, &[1.0, 2.0, 3.0]);
        assert!((r.cv.unwrap() - 0.5).abs() < 1e-12);
        assert!(r.warning.unwrap().contains("wide spread"));
        assert_eq!((r.min, r.median, r.max), (Some(1.0), Some(2.0), Some(3.0)));
    }

    #[test]
    fn non_positive_median_is_unavailable_not_zero() {
        let r = summarize("x", Group::Ctx, "x", Unit::Us, &[-1.0, 0.0, -0.5]);
        assert_eq!(r.median, None);
        assert!(r.unavailable.is_some());
    }

    #[test]
    fn calibration_reaches_target() {
        let stop = AtomicBool::new(false);
        let m = Machine::default();
        let ctx = Ctx::new(true, 3, &m, &stop);
        // A fake clock: each iteration "takes" 1 µs.
        let mut f = |n: u64| Ok(n as f64 * 1e-6);
        let n = ctx.calibrate(&mut f).unwrap();
        assert!(n as f64 * 1e-6 >= ctx.target_s, "{n}");
        assert!((n as f64 * 1e-6) < ctx.target_s * 3.0, "{n}");
        let v = ctx.per_iter(|n| Ok(n as f64 * 2e-6)).unwrap();
        assert_eq!(v.len(), 3);
        assert!(v.iter().all(|x| (x - 2e-6).abs() < 1e-15));
    }

    #[test]
    fn stop_interrupts_calibration() {
        let stop = AtomicBool::new(true);
        let m = Machine::default();
        let ctx = Ctx::new(true, 3, &m, &stop);
        assert!(matches!(ctx.per_iter(|_| Ok(1.0)), Err(Skip::Stopped)));
    }
}
